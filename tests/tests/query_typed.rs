//! The typed query inputs on the in-memory store: sharded hash keys and range conditions from
//! the derive's key builders, range conditions and filters on fields, field-set projections
//! read into projected structs, the table as a source, `created_between`, and the re-exported
//! stream traits. Every result is checked against the records themselves.

use std::collections::BTreeSet;

use entity_manager::query::{
    EVERY_SHARD, FieldSet, KeyCondition, StreamExt as _, TryStreamExt as _, TypedPage,
};
use entity_manager::store::{Expect, MemoryStore, Store as _, TableDefinition};
use entity_manager::{Entity, EntityExt, Error, Table};
use serde::{Deserialize, Serialize};

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[derive(Table)]
#[table(entities(Member))]
struct Club;

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Club, unique = member_id, timestamp = joined)]
#[shard_bumps(bumps = [bump(timestamp = 0, char_bits = 2, chars = 1)])]
#[generated(name = team_hash_key, components = [team], sharded)]
#[generated(name = name_range_key, components = [last_name, first_name])]
#[index(name = "byJoined", range = joined, project = keys_only)]
#[index(name = "byName", range = name_range_key, project = [score])]
#[index(name = "teamJoined", hash = team_hash_key, range = joined)]
#[index(name = "teamName", hash = team_hash_key, range = name_range_key)]
#[allow(clippy::struct_field_names)] // `memberId` is the unique property's attribute name
struct Member {
    #[transcode("string")]
    member_id: String,
    #[transcode("timestamp")]
    joined: u64,
    #[transcode("string")]
    team: String,
    #[transcode("string")]
    first_name: String,
    #[transcode("string")]
    last_name: String,
    score: i64,
}

/// A projection of `Member`: what the `byName` index (INCLUDE `score`) holds besides keys.
#[derive(Deserialize, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
struct Scored {
    member_id: String,
    score: i64,
}

const LAST: [&str; 4] = ["lee", "li", "long", "ma"];

fn members() -> Vec<Member> {
    (0..120u64)
        .map(|n| Member {
            member_id: format!("m{n:03}"),
            joined: 1_000 + (n * 37) % 500,
            team: ["red", "blue", "green"][usize::try_from(n % 3).unwrap_or(0)].to_owned(),
            first_name: format!("f{}", n % 7),
            last_name: LAST[usize::try_from(n % 4).unwrap_or(0)].to_owned(),
            score: i64::try_from(n % 11).unwrap_or(0) - 5,
        })
        .collect()
}

async fn store() -> Result<MemoryStore, Box<dyn std::error::Error>> {
    let store = MemoryStore::new(TableDefinition::from_schema(Club::schema()?)?);
    for m in members() {
        store.put_item(m.to_item()?, Expect::Any).await?;
    }
    Ok(store)
}

fn ids<'m>(members: impl IntoIterator<Item = &'m Member>) -> Vec<String> {
    members.into_iter().map(|m| m.member_id.clone()).collect()
}

#[tokio::test]
async fn typed_inputs_select_what_the_records_say() -> TestResult {
    let store = store().await?;
    let all = members();

    // a sharded hash key from its key builder, every shard filled in by the query
    let red: Vec<Member> = Member::query(&store)?
        .index(MemberIndex::TeamJoined)
        .hash_key(&Member::team_hash_key(EVERY_SHARD).team("red")?)
        .shards_between(0, 10_000)
        .limit(7)
        .stream()
        .try_collect()
        .await?;
    let mut want: Vec<&Member> = all.iter().filter(|m| m.team == "red").collect();
    want.sort_by_key(|m| (m.joined, m.member_id.clone()));
    assert_eq!(ids(&red), ids(want));

    // a range prefix from the unsharded key builder, with a typed filter on a field
    let prefix = Member::name_range_key().last_name("l")?;
    let got: Vec<Member> = Member::query(&store)?
        .index(MemberIndex::TeamName)
        .hash_key(&Member::team_hash_key(EVERY_SHARD).team("blue")?)
        .range(KeyCondition::begins_with(&prefix))
        .filter(Member::FIELDS.score.ge(0))
        .shards_between(0, 10_000)
        .limit(5)
        .stream()
        .try_collect()
        .await?;
    let mut want: Vec<&Member> = all
        .iter()
        .filter(|m| m.team == "blue" && m.last_name.starts_with('l') && m.score >= 0)
        .collect();
    want.sort_by_key(|m| {
        (
            m.last_name.clone(),
            m.first_name.clone(),
            m.member_id.clone(),
        )
    });
    assert_eq!(ids(&got), ids(want));

    // filters given one after the other: every one must hold (the later does not replace
    // the earlier), in both orders
    let f = Member::FIELDS;
    for (first, second) in [
        (f.score.ge(0), f.first_name.begins_with("f3")),
        (f.first_name.begins_with("f3"), f.score.ge(0)),
    ] {
        let got: Vec<Member> = Member::query(&store)?
            .index(MemberIndex::TeamJoined)
            .hash_key(&Member::team_hash_key(EVERY_SHARD).team("red")?)
            .filter(first)
            .filter(second)
            .shards_between(0, 10_000)
            .limit(4)
            .stream()
            .try_collect()
            .await?;
        let mut want: Vec<&Member> = all
            .iter()
            .filter(|m| m.team == "red" && m.score >= 0 && m.first_name.starts_with("f3"))
            .collect();
        want.sort_by_key(|m| (m.joined, m.member_id.clone()));
        assert!(
            !want.is_empty() && want.len() < 30,
            "{} of the red",
            want.len()
        );
        assert_eq!(ids(&got), ids(want));
    }

    // a range condition on a field: the `byJoined` index is KEYS_ONLY, so read a projection
    let got: Vec<Member> = Member::query(&store)?
        .table()
        .created_between(1_100, 1_200)
        .limit(9)
        .stream()
        .try_collect()
        .await?;
    let want: BTreeSet<String> = all
        .iter()
        .filter(|m| (1_100..=1_200).contains(&m.joined))
        .map(|m| m.member_id.clone())
        .collect();
    assert_eq!(
        ids(&got),
        want.into_iter().collect::<Vec<_>>(),
        "table order is the unique value"
    );
    Ok(())
}

#[tokio::test]
async fn projections_of_keys_only_and_include_indexes_read_into_structs() -> TestResult {
    // KEYS_ONLY: the unique value comes back from the table range key
    #[derive(Deserialize, Debug)]
    #[serde(rename_all = "camelCase")]
    struct Id {
        member_id: String,
        joined: u64,
    }
    let store = store().await?;
    let all = members();
    let query = Member::query(&store)?
        .index(MemberIndex::ByJoined)
        .range(Member::FIELDS.joined.ge(1_400))
        .projection(&FieldSet::new().with(Member::FIELDS.member_id))
        .shards_between(0, 10_000)
        .limit(4);
    let mut token = None;
    let mut got: Vec<Id> = Vec::new();
    loop {
        let page = query.page_as::<Id>(token.as_deref()).await?;
        got.extend(page.items);
        token = page.next;
        if token.is_none() {
            break;
        }
    }
    let mut want: Vec<&Member> = all.iter().filter(|m| m.joined >= 1_400).collect();
    want.sort_by_key(|m| (m.joined, m.member_id.clone()));
    assert_eq!(
        got.iter()
            .map(|i| (i.member_id.clone(), i.joined))
            .collect::<Vec<_>>(),
        want.iter()
            .map(|m| (m.member_id.clone(), m.joined))
            .collect::<Vec<_>>()
    );
    // the same, as one stream of pages read into the projected struct
    let pages: Vec<TypedPage<Id>> = query.pages_as::<Id>(None).try_collect().await?;
    let by_pages: Vec<(String, u64)> = pages
        .into_iter()
        .flat_map(|p| p.items)
        .map(|i| (i.member_id, i.joined))
        .collect();
    assert_eq!(
        by_pages,
        got.iter()
            .map(|i| (i.member_id.clone(), i.joined))
            .collect::<Vec<_>>()
    );
    // INCLUDE `score`: a field set read into a projected struct
    let query = Member::query(&store)?
        .index(MemberIndex::ByName)
        .projection(&FieldSet::new().with(Member::FIELDS.score))
        .shards_between(0, 10_000)
        .unlimited();
    let mut got = query.page_as::<Scored>(None).await?.items;
    got.sort();
    let mut want: Vec<Scored> = all
        .iter()
        .map(|m| Scored {
            member_id: m.member_id.clone(),
            score: m.score,
        })
        .collect();
    want.sort();
    assert_eq!(got, want);
    // asking an index for a field it does not project is refused before any read
    let refused = Member::query(&store)?
        .index(MemberIndex::ByName)
        .projection(&FieldSet::new().with(Member::FIELDS.team))
        .shards_between(0, 10_000)
        .page_as::<Scored>(None)
        .await;
    assert!(matches!(refused, Err(Error::InvalidQuery { reason, .. }) if reason.contains("team")));
    Ok(())
}

#[tokio::test]
async fn typed_inputs_that_do_not_fit_the_index_are_refused() -> TestResult {
    let store = store().await?;
    let invalid = |result: Result<entity_manager::query::TypedPage<Member>, Error>, what: &str| {
        match result {
            Err(Error::InvalidQuery { reason, .. }) => assert!(reason.contains(what), "{reason}"),
            other => panic!("expected InvalidQuery about {what}, got {other:?}"),
        }
    };
    // a condition on another attribute than the index's range key
    invalid(
        Member::query(&store)?
            .index(MemberIndex::ByJoined)
            .range(Member::FIELDS.score.ge(1))
            .shards_between(0, 10_000)
            .page(None)
            .await,
        "score",
    );
    // a key builder of another property than the range key
    let prefix = Member::name_range_key().last_name("l")?;
    invalid(
        Member::query(&store)?
            .index(MemberIndex::ByJoined)
            .range(KeyCondition::begins_with(&prefix))
            .shards_between(0, 10_000)
            .page(None)
            .await,
        "nameRangeKey",
    );
    // a prefix where a full key is needed
    invalid(
        Member::query(&store)?
            .index(MemberIndex::ByName)
            .range(KeyCondition::ge(&prefix))
            .shards_between(0, 10_000)
            .page(None)
            .await,
        "prefix",
    );
    // not a key condition
    invalid(
        Member::query(&store)?
            .index(MemberIndex::ByJoined)
            .range(Member::FIELDS.joined.ne(3))
            .shards_between(0, 10_000)
            .page(None)
            .await,
        "begins_with",
    );
    // a second range condition is not passed over (nor ANDed): refused
    invalid(
        Member::query(&store)?
            .index(MemberIndex::ByJoined)
            .range(Member::FIELDS.joined.ge(1_100))
            .range(Member::FIELDS.joined.le(1_200))
            .shards_between(0, 10_000)
            .page(None)
            .await,
        "second range condition",
    );
    // a hash key on indexes keyed by the table's hash key: refused, not ignored (the query
    // would read every team)
    let red = Member::team_hash_key(EVERY_SHARD).team("red")?;
    invalid(
        Member::query(&store)?
            .index(MemberIndex::ByJoined)
            .hash_key(&red)
            .shards_between(0, 10_000)
            .page(None)
            .await,
        "drop `.hash_key",
    );
    // no hash key where the index needs one: the error says which and how to give it
    invalid(
        Member::query(&store)?
            .index(MemberIndex::TeamJoined)
            .shards_between(0, 10_000)
            .page(None)
            .await,
        "give one with `.hash_key(",
    );
    // two hash keys: one partition a query
    let blue = Member::team_hash_key(EVERY_SHARD).team("blue")?;
    invalid(
        Member::query(&store)?
            .index(MemberIndex::TeamJoined)
            .hash_key(&red)
            .hash_key(&blue)
            .shards_between(0, 10_000)
            .page(None)
            .await,
        "second hash key",
    );
    Ok(())
}

/// An index token shows, debugged, its entity, its key kind and its index name.
#[test]
fn an_index_token_debugs_as_its_entity_kind_and_name() {
    let shown = format!("{:?}", MemberIndex::ByJoined);
    for part in ["TypedIndex<", "Member", "\"byJoined\""] {
        assert!(shown.contains(part), "{shown}");
    }
}

/// A `between` of prefixes (where both ends must be full keys) is refused before any read,
/// naming the key and what to do, not with an internal message.
#[tokio::test]
async fn a_between_of_prefixes_names_the_key_and_the_fix() -> TestResult {
    let store = entity_manager_tests::Tally::new(store().await?);
    let low = Member::name_range_key().last_name("l")?;
    let high = Member::name_range_key().last_name("m")?;
    for condition in [
        KeyCondition::between(&low, &high),
        KeyCondition::between(&high, &low),
    ] {
        let result = Member::query(&store)?
            .index(MemberIndex::ByName)
            .range(condition)
            .shards_between(0, 10_000)
            .page(None)
            .await;
        match result {
            Err(Error::InvalidQuery { reason, .. }) => assert!(
                reason.contains("is a prefix, not a full key") && reason.contains("nameRangeKey"),
                "{reason}"
            ),
            other => panic!("expected InvalidQuery about the prefix, got {other:?}"),
        }
        assert_eq!(store.take(), (0, 0), "a refused query read nothing");
    }
    Ok(())
}

/// An item of the entity that cannot be read as its struct (written by hand, without a field
/// the struct needs) fails a typed read with `Error::Decode`, which names the item by its table
/// keys and the field at fault, and says what to do; the untyped query still returns it.
#[tokio::test]
async fn an_item_that_is_not_a_record_is_named_by_its_keys() -> TestResult {
    let store = store().await?;
    let mut item = members()[0].to_item()?;
    item.remove("score");
    item.insert(
        "memberId".into(),
        entity_manager::AttributeValue::S("m-odd".into()),
    );
    let item = Member::schema()?.refresh_keys(&item)?;
    let (hash, range) = match (item.get("hashKey"), item.get("rangeKey")) {
        (
            Some(entity_manager::AttributeValue::S(h)),
            Some(entity_manager::AttributeValue::S(r)),
        ) => (h.clone(), r.clone()),
        other => return Err(format!("no keys: {other:?}").into()),
    };
    store.put_item(item, Expect::Any).await?;
    let check = |error: Error| -> TestResult {
        let text = error.to_string();
        match error {
            Error::Decode {
                entity,
                hash_key,
                range_key,
                ..
            } => {
                assert_eq!(entity, "member");
                assert_eq!(hash_key.as_deref(), Some(hash.as_str()));
                assert_eq!(range_key.as_deref(), Some(range.as_str()));
                for part in [hash.as_str(), range.as_str(), "score", "mend or delete"] {
                    assert!(text.contains(part), "{text:?} lacks {part:?}");
                }
                Ok(())
            }
            other => Err(format!("expected Error::Decode, got {other:?}").into()),
        }
    };
    // a typed query over the table
    match Member::query(&store)?
        .table()
        .created_between(0, 10_000)
        .limit(500)
        .page(None)
        .await
    {
        Err(error) => check(error)?,
        Ok(page) => return Err(format!("read {} records", page.items.len()).into()),
    }
    // a typed get
    match Member::get(&store, "m-odd").await {
        Err(error) => check(error)?,
        Ok(record) => return Err(format!("read {record:?}").into()),
    }
    // the untyped query returns the item as it is
    let page = entity_manager::query::untyped::Query::new(&store, Member::schema()?)
        .table()
        .shards_between(0, 10_000)
        .limit(500)
        .page(None)
        .await?;
    assert!(
        page.items
            .iter()
            .any(|i| i.get("memberId") == Some(&entity_manager::AttributeValue::S("m-odd".into())))
    );
    Ok(())
}

/// `pages` gives the typed pages `page` gives by tokens, the limit each; a failed stream is
/// resumed from the last page's token, by a new stream of pages or by `page`.
#[tokio::test]
async fn typed_pages_are_the_pages_by_tokens_and_resume_from_any_token() -> TestResult {
    let store = store().await?;
    let query = Member::query(&store)?
        .table()
        .shards_between(0, 10_000)
        .limit(7);
    let mut by_tokens: Vec<Vec<Member>> = Vec::new();
    let mut token = None;
    loop {
        let page = query.page(token.as_deref()).await?;
        by_tokens.push(page.items);
        token = page.next;
        if token.is_none() {
            break;
        }
    }
    let pages: Vec<TypedPage<Member>> = query.pages(None).try_collect().await?;
    let items: Vec<Vec<Member>> = pages.iter().map(|p| p.items.clone()).collect();
    assert_eq!(items, by_tokens);
    // 120 members, 7 a page: 17 full pages and one of 1
    assert_eq!(pages.len(), 18);
    assert!(pages[..17].iter().all(|p| p.items.len() == 7));
    // a stream of pages stopped after its fifth page goes on, from that page's token, in a
    // new stream and with `page`
    let mut stream = std::pin::pin!(query.pages(None));
    let mut fifth = None;
    for _ in 0..5 {
        fifth = stream.next().await.transpose()?;
    }
    let token = fifth
        .and_then(|p| p.next)
        .ok_or("a token after the fifth page")?;
    let rest: Vec<TypedPage<Member>> = query.pages(Some(&token)).try_collect().await?;
    let rest: Vec<Vec<Member>> = rest.into_iter().map(|p| p.items).collect();
    assert_eq!(rest, by_tokens[5..]);
    assert_eq!(query.page(Some(&token)).await?.items, by_tokens[5]);
    // a token of another query is refused by the stream's first page
    let other = Member::query(&store)?
        .index(MemberIndex::ByJoined)
        .shards_between(0, 10_000)
        .limit(7);
    let refused: Vec<Result<TypedPage<Member>, Error>> = other.pages(Some(&token)).collect().await;
    assert!(
        matches!(refused.as_slice(), [Err(Error::Token(_))]),
        "{refused:?}"
    );
    Ok(())
}

/// A typed union of two classic indexes with different range keys (`teamJoined` under a
/// condition on `joined`, then `teamName` under a prefix of the name key, one team's sharded
/// partition), each index given by its token and its condition typed: paged to the end by tokens, each page at most `limit`
/// members, none twice, sorted by the sort field; every member either index selects comes, and
/// none more often than the indexes that select it (the union-mode contract, module docs).
#[tokio::test]
async fn a_typed_union_of_two_classic_indexes_keeps_the_union_contract() -> TestResult {
    #[derive(Deserialize, Debug)]
    #[serde(rename_all = "camelCase")]
    struct Id {
        member_id: String,
    }
    let store = store().await?;
    let all = members();
    let prefix = Member::name_range_key().last_name("l")?;
    let query = Member::query(&store)?
        .index(MemberIndex::TeamJoined)
        .hash_key(&Member::team_hash_key(EVERY_SHARD).team("red")?)
        .range(Member::FIELDS.joined.ge(1_400))
        .index(MemberIndex::TeamName)
        .range(KeyCondition::begins_with(&prefix))
        .projection(&FieldSet::new().with(Member::FIELDS.member_id))
        .sort_by(Member::FIELDS.member_id, false)
        .shards_between(0, 10_000)
        .limit(9);
    let by_joined: BTreeSet<String> = all
        .iter()
        .filter(|m| m.team == "red" && m.joined >= 1_400)
        .map(|m| m.member_id.clone())
        .collect();
    let by_name: BTreeSet<String> = all
        .iter()
        .filter(|m| m.team == "red" && m.last_name.starts_with('l'))
        .map(|m| m.member_id.clone())
        .collect();
    let mut count: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    let mut token = None;
    let mut pages = 0;
    loop {
        let page = query.page_as::<Id>(token.as_deref()).await?;
        pages += 1;
        assert!(pages < 1_000, "the union paging does not end");
        assert!(page.items.len() <= 9, "a page holds {}", page.items.len());
        let ids: Vec<&str> = page.items.iter().map(|i| i.member_id.as_str()).collect();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "a page not sorted by member id, or repeating one: {ids:?}"
        );
        for id in ids {
            *count.entry(id.to_owned()).or_default() += 1;
        }
        token = page.next;
        if token.is_none() {
            break;
        }
    }
    let selected: BTreeSet<String> = by_joined.union(&by_name).cloned().collect();
    assert_eq!(
        count.keys().cloned().collect::<BTreeSet<_>>(),
        selected,
        "missed or extra members"
    );
    for (id, times) in &count {
        let bound = usize::from(by_joined.contains(id)) + usize::from(by_name.contains(id));
        assert!(
            *times <= bound,
            "{id} came {times} times, selected by {bound}"
        );
    }
    Ok(())
}
