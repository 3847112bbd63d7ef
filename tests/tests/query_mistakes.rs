//! Every query mistake is refused before the first read (issue 46, point 4): a typed error
//! naming the fix, and no request reaches the store. On `MemoryStore` and, where
//! `DYNAMODB_ENDPOINT` is set, on DynamoDB Local (the request would have been refused there as
//! well). And the property behind it: no query that the typed or untyped builders accept is
//! refused by `MemoryStore`'s validation as invalid.
#![allow(clippy::struct_field_names)] // fields are named after their attributes

use std::sync::atomic::{AtomicUsize, Ordering};

use entity_manager::field::Changes;
use entity_manager::query::untyped::{MultiQuery, Query};
use entity_manager::store::{
    Comparison, Filter, MemoryStore, QueryPage, RangeCondition, Store, StoreError, TableDefinition,
};
use entity_manager::{
    AttributeValue, Entity, EntityExt, Error, ReadTransaction, Table, Transaction,
};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

mod league;
mod store_support;

use store_support::{TestResult, n, on_dynamodb, s};

#[derive(Table)]
#[table(entities(Gamer))]
struct Arena;

/// Three shard bumps (a unique value has three candidate shards), a number index, a sparse
/// string index on an optional field, a `KEYS_ONLY` index.
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Arena, unique = gamer_id, timestamp = joined)]
#[shard_bumps(bumps = [
    bump(timestamp = 0, char_bits = 1, chars = 1),
    bump(timestamp = 1_000, char_bits = 1, chars = 2),
    bump(timestamp = 2_000, char_bits = 1, chars = 3),
])]
#[index(name = "byRating", range = rating)]
#[index(name = "byNick", range = nick)]
#[index(name = "byLevel", range = level, project = keys_only)]
struct Gamer {
    #[transcode("string")]
    gamer_id: String,
    #[transcode("timestamp")]
    joined: u64,
    #[transcode("fix6")]
    rating: f64,
    #[transcode("string")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    nick: Option<String>,
    #[transcode("int")]
    level: i64,
    team: String,
}

fn gamer(n: u64) -> Gamer {
    Gamer {
        gamer_id: format!("g{n:02}"),
        joined: 100 + n * 97 % 2_900,
        rating: f64::from(u32::try_from(n % 9).unwrap_or(0)) / 2.0,
        nick: (!n.is_multiple_of(3)).then(|| format!("nick{}", n % 5)),
        level: i64::try_from(n % 4).unwrap_or(0),
        team: ["red", "blue"][usize::try_from(n % 2).unwrap_or(0)].to_owned(),
    }
}

fn arena() -> Result<TableDefinition, Box<dyn std::error::Error>> {
    Ok(TableDefinition::from_schema(Arena::schema()?)?)
}

/// A store that counts every call that would reach the table (all but its definition and
/// name).
#[derive(Debug)]
struct Counting<S> {
    inner: S,
    calls: AtomicUsize,
}

impl<S> Counting<S> {
    fn new(inner: S) -> Self {
        Self {
            inner,
            calls: AtomicUsize::new(0),
        }
    }

    fn take(&self) -> usize {
        self.calls.swap(0, Ordering::SeqCst)
    }

    fn count(&self) {
        self.calls.fetch_add(1, Ordering::SeqCst);
    }
}

impl<S: Store> Store for Counting<S> {
    entity_manager_tests::forward_store!(inner: definition, name);
    entity_manager_tests::forward_store!(inner, then count: put_item, get_item, delete_item, batch_write, batch_get, transact_write, update_item, transact_get, query_page, scan_page);
}

/// Asserts `result` is `InvalidQuery` whose reason holds every one of `words`, and that no
/// request reached the store.
fn refused<T: std::fmt::Debug, S>(
    what: &str,
    result: Result<T, Error>,
    store: &Counting<S>,
    words: &[&str],
) {
    match result {
        Err(Error::InvalidQuery { reason, .. }) => {
            for word in words {
                assert!(reason.contains(word), "{what}: {word:?} not in {reason:?}");
            }
        }
        other => panic!("{what}: expected InvalidQuery, got {other:?}"),
    }
    assert_eq!(store.take(), 0, "{what}: a request reached the store");
}

/// Asserts `result` is `Ok` (the query as it should be written is accepted and read).
#[allow(clippy::needless_pass_by_value)] // called on the result of a call
fn accepted<T: std::fmt::Debug, S>(what: &str, result: Result<T, Error>, store: &Counting<S>) {
    assert!(result.is_ok(), "{what}: {result:?}");
    assert!(store.take() > 0, "{what}: nothing was read");
}

async fn load<S: Store>(store: &Counting<S>) -> TestResult {
    for i in 0..24 {
        gamer(i).create(store).await?;
    }
    store.take();
    Ok(())
}

// --- a filter on the index's own key attribute ---------------------------------------------

async fn filter_on_a_key_attribute<S: Store>(store: &Counting<S>) -> TestResult {
    load(store).await?;
    let f = Gamer::FIELDS;
    let q = || Gamer::query(store).map(|q| q.index(GamerIndex::ByRating).shards_between(0, 3_000));
    refused(
        "typed filter on the range key",
        q()?.filter(f.rating.gt(1.0)).page(None).await,
        store,
        &["`rating`", "sort key", "range condition"],
    );
    // inside a combined condition too
    refused(
        "typed filter on the range key, in an or",
        q()?.filter(f.level.eq(1).or(f.rating.lt(2.0).not()))
            .page(None)
            .await,
        store,
        &["`rating`"],
    );
    let user = Arena::schema()?.entity("gamer")?;
    let untyped = || {
        Query::new(store, user)
            .index("byRating")
            .shards_between(0, 3_000)
    };
    refused(
        "untyped filter on the range key",
        untyped()
            .filter(Filter::compare("rating", Comparison::Gt, n(1)))
            .page(None)
            .await,
        store,
        &["`rating`", "sort key"],
    );
    refused(
        "untyped filter on the index's partition key",
        untyped()
            .filter(Filter::Exists("hashKey".into()))
            .page(None)
            .await,
        store,
        &["`hashKey`", "partition key", "drop it"],
    );
    // the table's range key filtered on the table
    refused(
        "filter on the table's range key, querying the table",
        Query::new(store, user)
            .table()
            .filter(Filter::Exists("rangeKey".into()))
            .shards_between(0, 3_000)
            .page(None)
            .await,
        store,
        &["`rangeKey`", "the table"],
    );
    // as it should be: the condition on the range key, the filter on another field
    accepted(
        "range condition and filter",
        q()?.range(f.rating.gt(1.0))
            .filter(f.level.ge(1))
            .page(None)
            .await,
        store,
    );
    Ok(())
}

#[tokio::test]
async fn a_filter_on_a_key_attribute_of_the_index_is_refused_before_any_read() -> TestResult {
    filter_on_a_key_attribute(&Counting::new(MemoryStore::new(arena()?))).await?;
    on_dynamodb("mistake-key-filter", arena()?, |store| async move {
        filter_on_a_key_attribute(&Counting::new(store)).await
    })
    .await
}

// --- is_in with 0 or more than 100 values ---------------------------------------------------

async fn is_in_sizes<S: Store>(store: &Counting<S>) -> TestResult {
    load(store).await?;
    let f = Gamer::FIELDS;
    let q = || Gamer::query(store).map(|q| q.index(GamerIndex::ByRating).shards_between(0, 3_000));
    refused(
        "is_in of nothing",
        q()?.filter(f.level.is_in(Vec::<i64>::new()))
            .page(None)
            .await,
        store,
        &["`is_in`", "`level`", "no value", "at least one"],
    );
    refused(
        "is_in of 101 values",
        q()?.filter(f.level.is_in(0..101)).page(None).await,
        store,
        &["`is_in`", "`level`", "101 values", "at most 100"],
    );
    let user = Arena::schema()?.entity("gamer")?;
    refused(
        "untyped is_in of 150 values, under a not",
        Query::new(store, user)
            .index("byNick")
            .filter(Filter::Not(Box::new(Filter::In {
                attribute: "team".into(),
                values: (0..150).map(|i| s(&format!("t{i}"))).collect(),
            })))
            .shards_between(0, 3_000)
            .page(None)
            .await,
        store,
        &["`team`", "150 values"],
    );
    accepted(
        "is_in of 100 values",
        q()?.filter(f.level.is_in(0..100)).page(None).await,
        store,
    );
    accepted(
        "is_in of 1 value",
        q()?.filter(f.level.is_in([1])).page(None).await,
        store,
    );
    Ok(())
}

#[tokio::test]
async fn is_in_of_no_value_or_more_than_100_is_refused_before_any_read() -> TestResult {
    is_in_sizes(&Counting::new(MemoryStore::new(arena()?))).await?;
    on_dynamodb("mistake-is-in", arena()?, |store| async move {
        is_in_sizes(&Counting::new(store)).await
    })
    .await
}

// --- a reversed between ---------------------------------------------------------------------

#[allow(clippy::too_many_lines)] // one case after another
async fn reversed_between<S: Store>(store: &Counting<S>) -> TestResult {
    load(store).await?;
    let f = Gamer::FIELDS;
    let user = Arena::schema()?.entity("gamer")?;
    refused(
        "typed between of numbers, reversed",
        Gamer::query(store)?
            .index(GamerIndex::ByRating)
            .range(f.rating.between(3.0, 1.5))
            .shards_between(0, 3_000)
            .page(None)
            .await,
        store,
        &[
            "`between`",
            "`rating`",
            "3",
            "1.5",
            "give the lower one first",
        ],
    );
    // numbers by value, not by their text: 10 is above 9
    refused(
        "untyped between 10 and 9",
        Query::new(store, user)
            .index("byLevel")
            .range(RangeCondition::Between(n(10), n(9)))
            .shards_between(0, 3_000)
            .page(None)
            .await,
        store,
        &["`between`", "`level`", "by value"],
    );
    accepted(
        "untyped between 9 and 10 (in order by value, reversed as text)",
        Query::new(store, user)
            .index("byLevel")
            .range(RangeCondition::Between(n(9), n(10)))
            .shards_between(0, 3_000)
            .page(None)
            .await,
        store,
    );
    // strings by their bytes: "Z" (0x5A) sorts before "a" (0x61)
    refused(
        "untyped between of strings, reversed in bytes",
        Query::new(store, user)
            .index("byNick")
            .range(RangeCondition::Between(s("a"), s("Z")))
            .shards_between(0, 3_000)
            .page(None)
            .await,
        store,
        &["`between`", "`nick`", "bytes"],
    );
    accepted(
        "untyped between of strings, in byte order",
        Query::new(store, user)
            .index("byNick")
            .range(RangeCondition::Between(s("Z"), s("a")))
            .shards_between(0, 3_000)
            .page(None)
            .await,
        store,
    );
    // a reversed between in a filter too
    refused(
        "typed filter between, reversed",
        Gamer::query(store)?
            .index(GamerIndex::ByRating)
            .filter(f.level.between(3, 1))
            .shards_between(0, 3_000)
            .page(None)
            .await,
        store,
        &["`between`", "`level`"],
    );
    // and one in order passes the check (the mutation sample found no target sending one)
    accepted(
        "typed filter between, in order",
        Gamer::query(store)?
            .index(GamerIndex::ByRating)
            .filter(f.level.between(1, 3))
            .shards_between(0, 3_000)
            .page(None)
            .await,
        store,
    );
    // on a multi-attribute index, untyped and typed
    let league = league::League::schema()?;
    let player = league.entity("player")?;
    refused(
        "untyped multi-attribute between, reversed",
        MultiQuery::new(store, player, "byTeam")
            .hash([s("t1"), s("eu")])
            .range(RangeCondition::Between(n(5), n(-5)))
            .shards_between(0, 3_000)
            .page(None)
            .await,
        store,
        &["`between`", "`score`"],
    );
    let p = league::Player::FIELDS;
    refused(
        "typed multi-attribute between, reversed",
        league::Player::query(store)?
            .index(league::PlayerIndex::ByTeam)
            .hash(p.team_id.eq("t1"))
            .hash(p.region.eq("eu"))
            .range(p.score.eq(1))
            .range(p.nickname.between("n9", "n1"))
            .shards_between(0, 3_000)
            .page(None)
            .await,
        store,
        &["`between`", "`nickname`"],
    );
    Ok(())
}

#[tokio::test]
async fn a_reversed_between_is_refused_before_any_read() -> TestResult {
    reversed_between(&Counting::new(MemoryStore::new(both()?))).await?;
    on_dynamodb("mistake-between", both()?, |store| async move {
        reversed_between(&Counting::new(store)).await
    })
    .await
}

/// One table for the arena and the league (the DynamoDB Local variant creates one table).
fn both() -> Result<TableDefinition, Box<dyn std::error::Error>> {
    let mut definition = arena()?;
    for index in league::league()?.indexes {
        if definition.index(&index.name).is_none() {
            definition = definition.with_index(index);
        }
    }
    Ok(definition)
}

// --- NaN and infinite bounds ----------------------------------------------------------------

async fn non_finite_bounds<S: Store>(store: &Counting<S>) -> TestResult {
    load(store).await?;
    let f = Gamer::FIELDS;
    let q = || Gamer::query(store).map(|q| q.index(GamerIndex::ByRating).shards_between(0, 3_000));
    for (what, bound) in [
        ("NaN", f64::NAN),
        ("infinity", f64::INFINITY),
        ("-infinity", f64::NEG_INFINITY),
    ] {
        refused(
            &format!("typed le({what})"),
            q()?.range(f.rating.le(bound)).page(None).await,
            store,
            &["`rating`"],
        );
        refused(
            &format!("typed between(0, {what})"),
            q()?.range(f.rating.between(0.0, bound)).page(None).await,
            store,
            &["`rating`"],
        );
        refused(
            &format!("typed filter gt({what})"),
            Gamer::query(store)?
                .index(GamerIndex::ByNick)
                .filter(f.rating.gt(bound))
                .shards_between(0, 3_000)
                .page(None)
                .await,
            store,
            &["`rating`"],
        );
    }
    let user = Arena::schema()?.entity("gamer")?;
    for text in ["NaN", "Infinity", "-inf", "1e", "one"] {
        refused(
            &format!("untyped ge({text})"),
            Query::new(store, user)
                .index("byLevel")
                .range(RangeCondition::Ge(AttributeValue::N(text.into())))
                .shards_between(0, 3_000)
                .page(None)
                .await,
            store,
            &["`level`", "give a finite number"],
        );
    }
    let player = league::League::schema()?.entity("player")?;
    refused(
        "untyped multi-attribute lt(NaN)",
        MultiQuery::new(store, player, "byTeam")
            .hash([s("t1"), s("eu")])
            .range(RangeCondition::Lt(AttributeValue::N("NaN".into())))
            .shards_between(0, 3_000)
            .page(None)
            .await,
        store,
        &["`score`", "give a finite number"],
    );
    let p = league::Player::FIELDS;
    refused(
        "untyped multi-attribute partition value of another type",
        MultiQuery::new(store, player, "byTeam")
            .hash([s("t1"), n(3)])
            .shards_between(0, 3_000)
            .page(None)
            .await,
        store,
        &["`region`", "give a string"],
    );
    accepted(
        "typed multi-attribute query as it should be",
        league::Player::query(store)?
            .index(league::PlayerIndex::ByTeam)
            .hash(p.team_id.eq("t1"))
            .hash(p.region.eq("eu"))
            .range(p.score.le(3))
            .shards_between(0, 3_000)
            .page(None)
            .await,
        store,
    );
    Ok(())
}

#[tokio::test]
async fn a_nan_or_infinite_bound_is_refused_before_any_read() -> TestResult {
    non_finite_bounds(&Counting::new(MemoryStore::new(both()?))).await?;
    on_dynamodb("mistake-nan", both()?, |store| async move {
        non_finite_bounds(&Counting::new(store)).await
    })
    .await
}

// --- other mistakes the store would refuse ---------------------------------------------------

async fn other_mistakes<S: Store>(store: &Counting<S>) -> TestResult {
    load(store).await?;
    let user = Arena::schema()?.entity("gamer")?;
    let q = |index: &str| {
        Query::new(store, user)
            .index(index)
            .shards_between(0, 3_000)
    };
    refused(
        "begins_with on a number range key",
        q("byLevel")
            .range(RangeCondition::BeginsWith(n(1)))
            .page(None)
            .await,
        store,
        &["`begins_with`", "`level`", "number", "between"],
    );
    refused(
        "a string bound on a number range key",
        q("byRating")
            .range(RangeCondition::Gt(s("1")))
            .page(None)
            .await,
        store,
        &[
            "`rating`",
            "type S",
            "the attribute is a number (N)",
            "give a number",
        ],
    );
    refused(
        "a sort value over 1,024 bytes",
        q("byNick")
            .range(RangeCondition::Lt(s(&"x".repeat(1_025))))
            .page(None)
            .await,
        store,
        &["`nick`", "1025 bytes", "1024"],
    );
    refused(
        "a filter on an attribute the KEYS_ONLY index does not project",
        q("byLevel")
            .filter(Filter::compare("team", Comparison::Eq, s("red")))
            .page(None)
            .await,
        store,
        &["team", "does not project"],
    );
    refused(
        "a sort on an attribute the KEYS_ONLY index does not project, with a projection",
        q("byLevel")
            .sort_by("team", false)
            .projection(["level"])
            .page(None)
            .await,
        store,
        &["`team`", "does not project"],
    );
    refused(
        "a projection asking the KEYS_ONLY index for an attribute it does not project",
        q("byLevel").projection(["team"]).page(None).await,
        store,
        &["`team`", "does not project"],
    );
    refused(
        "a projection naming an attribute twice",
        q("byNick").projection(["team", "team"]).page(None).await,
        store,
        &["`team` twice"],
    );
    refused(
        "a filter of an empty and",
        q("byNick").filter(Filter::And(vec![])).page(None).await,
        store,
        &["filter"],
    );
    shown_values(store).await
}

/// A value a refusal names is shown by its first 40 characters, and whole up to 40.
async fn shown_values<S: Store>(store: &Counting<S>) -> TestResult {
    let user = Arena::schema()?.entity("gamer")?;
    let q = |index: &str| {
        Query::new(store, user)
            .index(index)
            .shards_between(0, 3_000)
    };
    // a long value by its first 40 characters (not whole), one of exactly 40 whole
    let (long, forty) = (
        format!("{}{}", "a".repeat(40), "b".repeat(200)),
        "c".repeat(40),
    );
    for (value, shown, not_shown) in [
        (&long, format!("\"{}\"…", "a".repeat(40)), "ab"),
        (&forty, format!("\"{forty}\""), "…"),
    ] {
        let refusal = q("byRating")
            .range(RangeCondition::Gt(s(value)))
            .page(None)
            .await;
        if let Err(Error::InvalidQuery { reason, .. }) = &refusal {
            assert!(!reason.contains(not_shown), "{not_shown:?} in {reason}");
        }
        refused(
            "a string bound on a number range key, shown",
            refusal,
            store,
            &["`rating`", &shown],
        );
    }
    Ok(())
}

#[tokio::test]
async fn other_mistakes_the_store_would_refuse_are_refused_before_any_read() -> TestResult {
    other_mistakes(&Counting::new(MemoryStore::new(arena()?))).await?;
    on_dynamodb("mistake-other", arena()?, |store| async move {
        other_mistakes(&Counting::new(store)).await
    })
    .await
}

// --- Some("") in a plain index key ---------------------------------------------------------

async fn empty_index_key<S: Store>(store: &Counting<S>) -> TestResult {
    store.take(); // what an earlier case on the same store sent
    let empty = Gamer {
        nick: Some(String::new()),
        ..gamer(1)
    };
    let is_empty_key = |what: &str, result: Result<(), Error>| match result {
        Err(Error::EmptyKey {
            entity,
            property,
            index,
            ..
        }) => {
            assert_eq!(
                (entity.as_str(), property.as_str(), index.as_str()),
                ("gamer", "nick", "byNick"),
                "{what}"
            );
        }
        other => panic!("{what}: expected EmptyKey, got {other:?}"),
    };
    is_empty_key("to_item", empty.to_item().map(drop));
    is_empty_key("create", empty.create(store).await);
    is_empty_key("put", empty.put(store).await);
    is_empty_key(
        "transaction create",
        Transaction::new().create(&empty).map(drop),
    );
    assert_eq!(store.take(), 0, "a request reached the store");

    // None stays absent: the record is in the table, not in the sparse index
    let none = Gamer {
        nick: None,
        ..gamer(2)
    };
    let item = none.to_item()?;
    assert!(!item.contains_key("nick"));
    none.create(store).await?;
    let with_nick: Vec<Gamer> = Gamer::query(store)?
        .index(GamerIndex::ByNick)
        .shards_between(0, 3_000)
        .page(None)
        .await?
        .items;
    assert!(with_nick.is_empty(), "{with_nick:?}");
    let by_rating = Gamer::query(store)?
        .index(GamerIndex::ByRating)
        .shards_between(0, 3_000)
        .page(None)
        .await?
        .items;
    assert_eq!(by_rating, [none]);

    // an update that would set it empty is refused too, before any write
    store.take();
    let updated = Gamer::update(
        store,
        "g02",
        Changes::new().set_option(Gamer::FIELDS.nick, Some(String::new())),
    )
    .await;
    assert!(
        matches!(&updated, Err(Error::EmptyKey { property, .. }) if property == "nick"),
        "{updated:?}"
    );
    Ok(())
}

/// A later sort attribute of a multi-attribute index is a key attribute too.
async fn empty_multi_attribute_key<S: Store>(store: &Counting<S>) -> TestResult {
    store.take(); // what an earlier case on the same store sent
    let player = |nickname: Option<&str>| league::Player {
        player_id: "p1".into(),
        created: 10,
        team_id: "t1".into(),
        region: "eu".into(),
        org_id: "o1".into(),
        score: 3,
        nickname: nickname.map(str::to_owned),
    };
    let empty = player(Some(""));
    for (what, result) in [
        ("to_item", empty.to_item().map(drop)),
        ("create", empty.create(store).await),
    ] {
        match result {
            Err(Error::EmptyKey {
                entity,
                property,
                index,
                ..
            }) => assert_eq!(
                (entity.as_str(), property.as_str(), index.as_str()),
                ("player", "nickname", "byTeam"),
                "{what}"
            ),
            other => panic!("{what}: expected EmptyKey, got {other:?}"),
        }
    }
    assert_eq!(store.take(), 0, "a request reached the store");
    // absent, it is not in that index
    player(None).create(store).await?;
    Ok(())
}

#[tokio::test]
async fn an_empty_string_in_a_plain_index_key_is_refused_by_to_item() -> TestResult {
    empty_multi_attribute_key(&Counting::new(MemoryStore::new(both()?))).await?;
    empty_index_key(&Counting::new(MemoryStore::new(arena()?))).await?;
    on_dynamodb("mistake-empty-key", both()?, |store| async move {
        let store = Counting::new(store);
        empty_multi_attribute_key(&store).await?;
        empty_index_key(&store).await
    })
    .await
}

// --- a transaction over 100 actions -------------------------------------------------------

async fn large_transactions<S: Store>(store: &Counting<S>) -> TestResult {
    // 40 creates, each a put and a check of the two other candidate shards (one per bump)
    let mut forty = Transaction::new();
    for i in 0..40 {
        forty = forty.create(&gamer(i))?;
    }
    assert_eq!(forty.len(), 120);
    match forty.commit(store).await {
        Err(Error::TransactionTooLarge {
            actions,
            limit,
            parts,
        }) => {
            assert_eq!((actions, limit), (120, 100));
            assert!(
                parts.contains("40 `create` of `gamer`: 120 actions, about 3 each"),
                "{parts}"
            );
            assert!(parts.contains("shard bump"), "{parts}");
        }
        other => panic!("expected TransactionTooLarge, got {other:?}"),
    }
    assert_eq!(store.take(), 0, "a request reached the store");
    // nothing was written
    assert_eq!(Gamer::get(store, "g00").await?, None);
    store.take();

    // 33 creates (99 actions) go in one transaction
    let mut fits = Transaction::new();
    for i in 0..33 {
        fits = fits.create(&gamer(i))?;
    }
    fits.commit(store).await?;
    assert_eq!(store.take(), 1);

    // mixed: where each action came from
    let mut mixed = Transaction::new();
    for i in 33..60 {
        mixed = mixed.create(&gamer(i))?;
    }
    for i in 0..20 {
        mixed = mixed.delete::<Gamer, _>(&format!("g{i:02}"))?;
    }
    match mixed.commit(store).await {
        Err(Error::TransactionTooLarge { actions, parts, .. }) => {
            assert_eq!(actions, 27 * 3 + 20 * 3);
            assert!(
                parts.contains("27 `create` of `gamer`: 81 actions"),
                "{parts}"
            );
            assert!(
                parts.contains("20 `delete` of `gamer`: 60 actions"),
                "{parts}"
            );
        }
        other => panic!("expected TransactionTooLarge, got {other:?}"),
    }
    assert_eq!(store.take(), 0, "a request reached the store");

    // a read transaction of more than 100 keys
    let mut read = ReadTransaction::new();
    for i in 0..34 {
        read.get::<Gamer, _>(&format!("g{i:02}"))?;
    }
    match read.commit(store).await {
        Err(Error::TransactionTooLarge { actions, parts, .. }) => {
            assert_eq!(actions, 102);
            assert!(
                parts.contains("34 `get` of `gamer`: 102 actions"),
                "{parts}"
            );
        }
        other => panic!("expected TransactionTooLarge, got {other:?}"),
    }
    assert_eq!(store.take(), 0, "a request reached the store");
    Ok(())
}

#[tokio::test]
async fn a_transaction_over_100_actions_says_so_before_sending() -> TestResult {
    large_transactions(&Counting::new(MemoryStore::new(arena()?))).await?;
    on_dynamodb("mistake-transaction", arena()?, |store| async move {
        large_transactions(&Counting::new(store)).await
    })
    .await
}

// --- empty key values in a key condition (issue 46, the stores' divergences) ----------------

/// `DynamoDB` refuses an empty string or binary as any value of a key condition (checked on
/// DynamoDB Local: the partition values, the equality prefix, every operator's value,
/// `begins_with("")` and either end of `between`): so does `MemoryStore`, and the builders
/// refuse it before the first read, naming the fix.
async fn empty_key_values<S: Store>(store: &Counting<S>) -> TestResult {
    store.take(); // what an earlier case on the same store sent
    let user = Arena::schema()?.entity("gamer")?;
    let q = |index: &str| {
        Query::new(store, user)
            .index(index)
            .shards_between(0, 3_000)
    };
    for (what, condition, words) in [
        (
            "begins_with(\"\")",
            RangeCondition::BeginsWith(s("")),
            &[
                "`begins_with`",
                "`nick`",
                "empty",
                "drop the range condition",
            ][..],
        ),
        (
            "eq(\"\")",
            RangeCondition::Eq(s("")),
            &["`eq`", "`nick`", "empty", "matches nothing"][..],
        ),
        (
            "ge(\"\")",
            RangeCondition::Ge(s("")),
            &["`ge`", "empty", "drop the range condition"][..],
        ),
        (
            "between(\"\", \"n\")",
            RangeCondition::Between(s(""), s("n")),
            &["`between`", "empty", "`le(\"n\")`"][..],
        ),
        (
            "between(\"a\", \"\")",
            RangeCondition::Between(s("a"), s("")),
            &["`between`", "empty", "matches nothing"][..],
        ),
    ] {
        refused(
            what,
            q("byNick").range(condition).page(None).await,
            store,
            words,
        );
    }
    let league = league::League::schema()?;
    let player = league.entity("player")?;
    refused(
        "an empty partition value of a multi-attribute key",
        MultiQuery::new(store, player, "byTeam")
            .hash([s("t1"), s("")])
            .shards_between(0, 3_000)
            .page(None)
            .await,
        store,
        &["partition value", "`region`", "empty"],
    );
    let p = league::Player::FIELDS;
    refused(
        "typed begins_with(\"\") after an equality prefix",
        league::Player::query(store)?
            .index(league::PlayerIndex::ByTeam)
            .hash(p.team_id.eq("t1"))
            .hash(p.region.eq("eu"))
            .range(p.score.eq(1))
            .range(p.nickname.begins_with(""))
            .shards_between(0, 3_000)
            .page(None)
            .await,
        store,
        &["`begins_with`", "`nickname`", "empty"],
    );
    accepted(
        "begins_with(\"n\")",
        q("byNick")
            .range(RangeCondition::BeginsWith(s("n")))
            .page(None)
            .await,
        store,
    );

    raw_empty_key_values(store).await
}

/// The store's own verdict on empty key values, request by request: a validation error on
/// both stores.
async fn raw_empty_key_values<S: Store>(store: &Counting<S>) -> TestResult {
    let raw = [
        QueryPage::new(s("")),
        QueryPage::new(s("gamer!0")).range(RangeCondition::BeginsWith(s(""))),
        QueryPage::new(s("gamer!0"))
            .index("byNick")
            .range(RangeCondition::Lt(s(""))),
        QueryPage::new(s("t1")).and_hash_key(s("")).index("byTeam"),
        QueryPage::new(s("t1"))
            .and_hash_key(s("eu"))
            .index("byTeam")
            .range_prefix([n(1)])
            .range(RangeCondition::Ge(s(""))),
    ];
    for request in &raw {
        let verdict = store.inner.query_page(request).await;
        assert!(
            verdict.as_ref().is_err_and(StoreError::is_validation),
            "{request:?}: {verdict:?}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn an_empty_key_value_in_a_key_condition_is_refused_before_any_read() -> TestResult {
    empty_key_values(&Counting::new(MemoryStore::new(both()?))).await?;
    on_dynamodb("mistake-empty-condition", both()?, |store| async move {
        empty_key_values(&Counting::new(store)).await
    })
    .await
}

// --- the aggregate size of a multi-attribute key --------------------------------------------

/// `DynamoDB` limits the sort attributes of a multi-attribute key to 1,024 bytes together and
/// its partition attributes to 2,048 (a number counting its stored size; checked on DynamoDB
/// Local): `to_item` and every write refuse a record over it with `KeyTooLong`, before any
/// request; `MemoryStore` refuses such an item as `DynamoDB` does; a record at the limit is
/// written on both.
async fn aggregate_key_sizes<S: Store>(store: &Counting<S>) -> TestResult {
    store.take();
    let player = |team: usize, region: usize, nickname: usize, org: usize| league::Player {
        player_id: format!("p{team}-{region}-{nickname}-{org}"),
        created: 10,
        team_id: "t".repeat(team),
        region: "r".repeat(region),
        org_id: "o".repeat(org),
        score: 3,
        nickname: Some("n".repeat(nickname)),
    };
    // the score 3 counts 2 bytes: 1,022 + 2 fit, 1,023 + 2 do not
    let too_long =
        |what: &str, result: Result<(), Error>, attribute: &str, bytes: usize| match result {
            Err(Error::KeyTooLong {
                attribute: a,
                index,
                bytes: b,
                ..
            }) => assert_eq!((a.as_str(), b), (attribute, bytes), "{what} ({index:?})"),
            other => panic!("{what}: expected KeyTooLong, got {other:?}"),
        };
    let sort_over = player(5, 2, 1_023, 5);
    too_long(
        "to_item, sort attributes",
        sort_over.to_item().map(drop),
        "score + nickname",
        1_025,
    );
    too_long(
        "create, sort attributes",
        sort_over.create(store).await,
        "score + nickname",
        1_025,
    );
    let partition_over = player(1_500, 549, 5, 5);
    too_long(
        "put, partition attributes",
        partition_over.put(store).await,
        "teamId + region",
        2_049,
    );
    // the table's hash key leads the partition attributes of a sharded index: "player!" and
    // one shard character (8 bytes) with an organisation of 2,041 bytes is 2,049
    too_long(
        "create, a sharded index's partition attributes",
        player(5, 2, 5, 2_041).create(store).await,
        "hashKey + orgId",
        2_049,
    );
    assert_eq!(store.take(), 0, "a request reached the store");
    // at the limits, written on both stores
    for fits in [
        player(5, 2, 1_022, 5),
        player(1_500, 548, 5, 5),
        player(5, 2, 5, 2_040),
    ] {
        fits.create(store).await?;
    }
    assert_eq!(store.take(), 3);
    // a key condition is not held to the aggregate limit (DynamoDB Local answers partition
    // values of 1,500 bytes each): the builders and both stores accept it
    let league = league::League::schema()?;
    accepted(
        "partition values over 2,048 bytes together, in a query",
        MultiQuery::new(store, league.entity("player")?, "byTeam")
            .hash([s(&"t".repeat(1_500)), s(&"r".repeat(1_500))])
            .shards_between(0, 3_000)
            .page(None)
            .await,
        store,
    );
    // the store's own verdict on items over the limits, written past the entity layer: a
    // record at the limit, keyed, with one attribute one byte longer
    let keyed = league.entity("player")?;
    for (attribute, value) in [("nickname", "n".repeat(1_023)), ("region", "r".repeat(549))] {
        let mut item = keyed.add_keys(&serde_dynamo::to_item(player(1_500, 548, 1_022, 5))?)?;
        item.insert(attribute.to_owned(), s(&value));
        let verdict = store
            .inner
            .put_item(item, entity_manager::store::Expect::Any)
            .await;
        assert!(
            verdict.as_ref().is_err_and(StoreError::is_validation),
            "{attribute}: {verdict:?}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_multi_attribute_key_over_its_aggregate_limit_is_refused_before_any_write() -> TestResult
{
    aggregate_key_sizes(&Counting::new(MemoryStore::new(both()?))).await?;
    on_dynamodb("mistake-aggregate-key", both()?, |store| async move {
        aggregate_key_sizes(&Counting::new(store)).await
    })
    .await
}

// --- the most candidate shards a single create or put checks ---------------------------------

#[derive(Table)]
#[table(entities(Crowd))]
struct Crowded;

/// The most shard bumps an entity can have: `chars` strictly increases within 0..=40, so 40
/// declared bumps after the implied one (0 characters). A record's unique value has one
/// candidate shard per bump: 41.
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Crowded, unique = crowd_id, timestamp = joined)]
#[shard_bumps(bumps = [
    bump(timestamp = 1, char_bits = 1, chars = 1),
    bump(timestamp = 2, char_bits = 1, chars = 2),
    bump(timestamp = 3, char_bits = 1, chars = 3),
    bump(timestamp = 4, char_bits = 1, chars = 4),
    bump(timestamp = 5, char_bits = 1, chars = 5),
    bump(timestamp = 6, char_bits = 1, chars = 6),
    bump(timestamp = 7, char_bits = 1, chars = 7),
    bump(timestamp = 8, char_bits = 1, chars = 8),
    bump(timestamp = 9, char_bits = 1, chars = 9),
    bump(timestamp = 10, char_bits = 1, chars = 10),
    bump(timestamp = 11, char_bits = 1, chars = 11),
    bump(timestamp = 12, char_bits = 1, chars = 12),
    bump(timestamp = 13, char_bits = 1, chars = 13),
    bump(timestamp = 14, char_bits = 1, chars = 14),
    bump(timestamp = 15, char_bits = 1, chars = 15),
    bump(timestamp = 16, char_bits = 1, chars = 16),
    bump(timestamp = 17, char_bits = 1, chars = 17),
    bump(timestamp = 18, char_bits = 1, chars = 18),
    bump(timestamp = 19, char_bits = 1, chars = 19),
    bump(timestamp = 20, char_bits = 1, chars = 20),
    bump(timestamp = 21, char_bits = 1, chars = 21),
    bump(timestamp = 22, char_bits = 1, chars = 22),
    bump(timestamp = 23, char_bits = 1, chars = 23),
    bump(timestamp = 24, char_bits = 1, chars = 24),
    bump(timestamp = 25, char_bits = 1, chars = 25),
    bump(timestamp = 26, char_bits = 1, chars = 26),
    bump(timestamp = 27, char_bits = 1, chars = 27),
    bump(timestamp = 28, char_bits = 1, chars = 28),
    bump(timestamp = 29, char_bits = 1, chars = 29),
    bump(timestamp = 30, char_bits = 1, chars = 30),
    bump(timestamp = 31, char_bits = 1, chars = 31),
    bump(timestamp = 32, char_bits = 1, chars = 32),
    bump(timestamp = 33, char_bits = 1, chars = 33),
    bump(timestamp = 34, char_bits = 1, chars = 34),
    bump(timestamp = 35, char_bits = 1, chars = 35),
    bump(timestamp = 36, char_bits = 1, chars = 36),
    bump(timestamp = 37, char_bits = 1, chars = 37),
    bump(timestamp = 38, char_bits = 1, chars = 38),
    bump(timestamp = 39, char_bits = 1, chars = 39),
    bump(timestamp = 40, char_bits = 1, chars = 40)
])]
struct Crowd {
    #[transcode("string")]
    crowd_id: String,
    #[transcode("timestamp")]
    joined: u64,
}

/// A create or a put checks every other candidate shard of its unique value in the same
/// transaction: one action per shard bump. The shard schedule bounds that below DynamoDB's 100
/// actions (at most 41 bumps), so a single create or put never needs more; at the bound it is
/// one transaction of 41 actions, written on both stores, and its uniqueness holds across
/// every candidate.
async fn most_candidates<S: Store>(store: &Counting<S>) -> TestResult {
    store.take();
    let schema = Crowded::schema()?;
    let crowd = schema.entity("crowd")?;
    assert_eq!(crowd.model().shard_bumps.len(), 41);
    let first = Crowd {
        crowd_id: "c1".into(),
        joined: 40,
    };
    first.create(store).await?;
    assert_eq!(store.take(), 1, "one transaction");
    // the same unique value created under another bump: refused by the check of its shard
    let again = Crowd {
        crowd_id: "c1".into(),
        joined: 3,
    };
    assert!(
        matches!(again.create(store).await, Err(Error::AlreadyExists { .. })),
        "a second create of c1"
    );
    assert!(
        matches!(again.put(store).await, Err(Error::StoredElsewhere { .. })),
        "a put of c1 under another bump"
    );
    assert_eq!(Crowd::get(store, "c1").await?, Some(first));
    assert!(Crowd::delete(store, "c1").await?.is_some());
    assert_eq!(Crowd::get(store, "c1").await?, None);
    Ok(())
}

#[tokio::test]
async fn a_create_checks_at_most_41_candidate_shards_in_one_transaction() -> TestResult {
    let definition = || -> Result<TableDefinition, Box<dyn std::error::Error>> {
        Ok(TableDefinition::from_schema(Crowded::schema()?)?)
    };
    most_candidates(&Counting::new(MemoryStore::new(definition()?))).await?;
    on_dynamodb("mistake-candidates", definition()?, |store| async move {
        most_candidates(&Counting::new(store)).await
    })
    .await
}

// --- the property ---------------------------------------------------------------------------

/// A value of any key type, or one no key holds: numbers finite or not, strings empty, short
/// and over the sort key limit, binaries, booleans.
fn value() -> impl Strategy<Value = AttributeValue> {
    prop_oneof![
        3 => (-3_i64..12).prop_map(n),
        1 => prop_oneof![Just("NaN"), Just("Infinity"), Just("-inf"), Just("1.5"), Just("x")]
            .prop_map(|t| AttributeValue::N(t.to_owned())),
        3 => "[a-zA-Z0-9 ]{0,6}".prop_map(AttributeValue::S),
        1 => (1_020_usize..1_030).prop_map(|len| AttributeValue::S("y".repeat(len))),
        1 => proptest::collection::vec(any::<u8>(), 0..3).prop_map(AttributeValue::B),
        1 => any::<bool>().prop_map(AttributeValue::Bool),
    ]
}

fn condition() -> impl Strategy<Value = RangeCondition> {
    prop_oneof![
        value().prop_map(RangeCondition::Eq),
        value().prop_map(RangeCondition::Lt),
        value().prop_map(RangeCondition::Le),
        value().prop_map(RangeCondition::Gt),
        value().prop_map(RangeCondition::Ge),
        (value(), value()).prop_map(|(a, b)| RangeCondition::Between(a, b)),
        value().prop_map(RangeCondition::BeginsWith),
    ]
}

/// Attributes of the arena: key attributes of the table and of each index, projected and not.
fn attribute() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("hashKey"),
        Just("rangeKey"),
        Just("rating"),
        Just("nick"),
        Just("level"),
        Just("team"),
        Just("joined"),
        Just("gamerId"),
        Just("other"),
    ]
    .prop_map(str::to_owned)
}

fn leaf() -> impl Strategy<Value = Filter> {
    let comparison = prop_oneof![
        Just(Comparison::Eq),
        Just(Comparison::Ne),
        Just(Comparison::Lt),
        Just(Comparison::Le),
        Just(Comparison::Gt),
        Just(Comparison::Ge),
    ];
    prop_oneof![
        (attribute(), comparison, value()).prop_map(|(a, op, v)| Filter::compare(a, op, v)),
        (attribute(), value(), value()).prop_map(|(attribute, low, high)| Filter::Between {
            attribute,
            low,
            high
        }),
        (attribute(), value())
            .prop_map(|(attribute, prefix)| Filter::BeginsWith { attribute, prefix }),
        (attribute(), value()).prop_map(|(attribute, value)| Filter::Contains { attribute, value }),
        attribute().prop_map(Filter::Exists),
        attribute().prop_map(Filter::NotExists),
        (
            attribute(),
            prop_oneof![
                Just(0_usize),
                Just(1),
                Just(3),
                Just(100),
                Just(101),
                Just(130)
            ]
        )
            .prop_map(|(attribute, len)| Filter::In {
                attribute,
                values: (0..len).map(|i| n(i % 7)).collect(),
            }),
    ]
}

fn filter() -> impl Strategy<Value = Filter> {
    leaf().prop_recursive(2, 6, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Filter::And),
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Filter::Or),
            inner.prop_map(|f| Filter::Not(Box::new(f))),
        ]
    })
}

/// One source of a classic query: an index or the table, a condition, filters.
#[derive(Clone, Debug)]
struct Source {
    index: Option<&'static str>,
    range: Option<RangeCondition>,
    filters: Vec<Filter>,
}

fn source() -> impl Strategy<Value = Source> {
    (
        prop_oneof![
            Just(None),
            Just(Some("byRating")),
            Just(Some("byNick")),
            Just(Some("byLevel")),
        ],
        proptest::option::of(condition()),
        proptest::collection::vec(filter(), 0..3),
    )
        .prop_map(|(index, range, filters)| Source {
            index,
            range,
            filters,
        })
}

/// `q` with the condition and filters of `source` on its last source.
fn add_source<'a, S: Store>(
    mut q: Query<'a, S, entity_manager::query::untyped::Indexed>,
    source: &Source,
) -> Query<'a, S, entity_manager::query::untyped::Indexed> {
    if let Some(range) = &source.range {
        q = q.range(range.clone());
    }
    for filter in &source.filters {
        q = q.filter(filter.clone());
    }
    q
}

/// What the untyped classic builder is given.
#[derive(Clone, Debug)]
struct Classic {
    sources: Vec<Source>,
    projection: Option<Vec<String>>,
    sort: Vec<String>,
    created: Option<(u64, u64)>,
    descending: bool,
}

fn classic() -> impl Strategy<Value = Classic> {
    (
        proptest::collection::vec(source(), 1..3),
        proptest::option::of(proptest::collection::vec(
            prop_oneof![attribute(), Just(String::new())],
            0..4,
        )),
        proptest::collection::vec(attribute(), 0..2),
        proptest::option::of((0_u64..3_000, 0_u64..3_000)),
        any::<bool>(),
    )
        .prop_map(|(sources, projection, sort, created, descending)| Classic {
            sources,
            projection,
            sort,
            created,
            descending,
        })
}

/// What the untyped multi-attribute builder is given (the league's `byTeam` and `byOrg`).
#[derive(Clone, Debug)]
struct Multi {
    index: &'static str,
    hash: Vec<AttributeValue>,
    prefix: Vec<AttributeValue>,
    range: Option<RangeCondition>,
    descending: bool,
}

fn multi() -> impl Strategy<Value = Multi> {
    (
        prop_oneof![Just("byTeam"), Just("byOrg")],
        proptest::collection::vec(value(), 0..3),
        proptest::collection::vec(value(), 0..2),
        proptest::option::of(condition()),
        any::<bool>(),
    )
        .prop_map(|(index, hash, prefix, range, descending)| Multi {
            index,
            hash,
            prefix,
            range,
            descending,
        })
}

/// A store holding arena gamers and league players, counted.
fn loaded() -> Result<Counting<MemoryStore>, Box<dyn std::error::Error>> {
    let store = Counting::new(MemoryStore::new(both()?));
    entity_manager_tests::block_on(async {
        for i in 0..12 {
            gamer(i).create(&store).await?;
        }
        for i in 0..12_i64 {
            league::Player {
                player_id: format!("p{i}"),
                created: 10 * u64::try_from(i).unwrap_or(0),
                team_id: format!("t{}", i % 2),
                region: "eu".into(),
                org_id: "o1".into(),
                score: i % 5 - 2,
                nickname: (i % 3 != 0).then(|| format!("n{}", i % 4)),
            }
            .create(&store)
            .await?;
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    store.take();
    Ok(store)
}

/// The verdict on one query: refused by the builder (a typed error, nothing read), or read
/// with no validation error from the store.
fn verdict(
    what: &dyn std::fmt::Debug,
    result: Result<entity_manager::query::QueryPageResult, Error>,
    calls: usize,
) -> Result<bool, TestCaseError> {
    match result {
        Err(Error::InvalidQuery { .. } | Error::EmptyKey { .. }) => {
            prop_assert_eq!(calls, 0, "a refused query read: {:?}", what);
            Ok(false)
        }
        Err(Error::ShardQuery { source, .. }) => Err(TestCaseError::fail(format!(
            "the builder accepted {what:?}, and the store refused it: {source}"
        ))),
        Err(other) => Err(TestCaseError::fail(format!("{what:?}: {other}"))),
        Ok(_) => Ok(true),
    }
}

/// The number of cases of the property, each over the classic and the multi-attribute
/// builder (`QUERY_MISTAKES_CASES` to run more).
fn cases() -> u32 {
    std::env::var("QUERY_MISTAKES_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(1_500)
}

/// No query the untyped builders accept (classic and multi-attribute, every condition kind on
/// values of every type, filters on every attribute, projections, sorts, windows) is refused by
/// `MemoryStore`'s validation as invalid; a query they refuse reads nothing.
#[test]
fn no_query_the_builders_accept_is_refused_by_the_store() -> TestResult {
    property(
        || (classic(), multi(), 1_usize..6),
        |(classic, multi, limit)| untyped_case(&classic, &multi, limit),
    )
}

/// The same of the typed builders, over what their fields allow: any `f64` bound (NaN and
/// infinities included), bounds in any order, `is_in` of any size, filters on the index's own
/// range key.
#[test]
fn no_query_the_typed_builders_accept_is_refused_by_the_store() -> TestResult {
    let strategy = || {
        (
            0_usize..3,
            prop_oneof![any::<f64>(), -3.0_f64..6.0],
            prop_oneof![any::<f64>(), -3.0_f64..6.0],
            0_usize..5,
            prop_oneof![Just(0_usize), 1_usize..4, 99_usize..103],
            any::<bool>(),
            "[a-z]{0,3}",
        )
    };
    property(
        strategy,
        |(index, low, high, kind, levels, on_range, nick)| {
            typed_case(index, low, high, kind, levels, on_range, &nick)
        },
    )
}

/// Runs `case` on `cases()` values of `strategy`, on a thread with a stack of 64 MB (the
/// strategies and a query page's future, unoptimised, are deep), shrinking a failure.
fn property<T: Strategy>(
    strategy: impl Fn() -> T + Send,
    case: impl Fn(T::Value) -> Result<(), TestCaseError> + Send,
) -> TestResult
where
    T::Value: std::fmt::Debug,
{
    let outcome = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn_scoped(scope, move || {
                let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
                    cases: cases(),
                    ..ProptestConfig::default()
                });
                runner.run(&strategy(), case).map_err(|e| e.to_string())
            })
            .map_err(|e| e.to_string())?
            .join()
            .map_err(|_| "the property panicked".to_owned())?
    });
    println!("{} cases", cases());
    Ok(outcome?)
}

/// One case of the untyped property.
fn untyped_case(classic: &Classic, multi: &Multi, limit: usize) -> Result<(), TestCaseError> {
    let store = loaded().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let schema = Arena::schema().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let user = schema
        .entity("gamer")
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut sources = classic.sources.iter();
    let Some(first) = sources.next() else {
        return Ok(());
    };
    let start = Query::new(&store, user);
    let mut query = match first.index {
        Some(index) => start.index(index),
        None => start.table(),
    };
    query = add_source(query, first);
    for source in sources {
        query = match source.index {
            Some(index) => query.index(index),
            None => query.table(),
        };
        query = add_source(query, source);
    }
    if let Some(projection) = &classic.projection {
        query = query.projection(projection.clone());
    }
    for attribute in &classic.sort {
        query = query.sort_by(attribute.clone(), false);
    }
    query = match classic.created {
        Some((from, to)) => query.created_between(from, to),
        None => query.shards_between(0, 3_000),
    };
    let query = query.limit(limit).descending(classic.descending);
    let result = entity_manager_tests::block_on(Box::pin(query.page(None)));
    verdict(&classic, result, store.take())?;

    let league = league::League::schema().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let player = league
        .entity("player")
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut query = MultiQuery::new(&store, player, multi.index)
        .hash(multi.hash.clone())
        .range_prefix(multi.prefix.clone());
    if let Some(range) = &multi.range {
        query = query.range(range.clone());
    }
    let query = query
        .shards_between(0, 3_000)
        .limit(limit)
        .descending(multi.descending);
    let result = entity_manager_tests::block_on(Box::pin(query.page(None)));
    verdict(&multi, result, store.take())?;
    Ok(())
}

/// One case of the typed property.
#[allow(clippy::too_many_arguments)]
fn typed_case(
    index: usize,
    low: f64,
    high: f64,
    kind: usize,
    levels: usize,
    on_range: bool,
    nick: &str,
) -> Result<(), TestCaseError> {
    let store = loaded().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let f = Gamer::FIELDS;
    let query = Gamer::query(&store).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut query = match index {
        0 => query.index(GamerIndex::ByRating),
        1 => query.index(GamerIndex::ByNick),
        _ => query.index(GamerIndex::ByLevel),
    };
    query = match (index, kind) {
        (0, 0) => query.range(f.rating.between(low, high)),
        (0, 1) => query.range(f.rating.le(low)),
        (0, 2) => query.range(f.rating.gt(high)),
        (1, 0) => query.range(f.nick.between(nick.to_owned(), "m".to_owned())),
        (1, 1) => query.range(f.nick.begins_with(nick)),
        (2, 0) => query.range(f.level.between(i64::try_from(levels).unwrap_or(0), 3)),
        _ => query,
    };
    if on_range {
        query = query.filter(f.rating.ge(low));
    }
    if kind == 3 {
        query = query.filter(f.level.is_in(0..i64::try_from(levels).unwrap_or(0)));
    }
    if kind == 4 {
        query = query.filter(f.rating.between(low, high));
    }
    let query = query.shards_between(0, 3_000).limit(3);
    let result = entity_manager_tests::block_on(Box::pin(query.untyped().page(None)));
    let what = (index, low, high, kind, levels, on_range, nick);
    verdict(&what, result, store.take())?;
    Ok(())
}
