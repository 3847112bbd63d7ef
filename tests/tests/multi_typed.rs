//! Typed multi-attribute queries (`EntityExt::query(..)?.index(multi-attribute token)`) and typed item collections
//! (`Collection::query` by index token, conditions from the members' fields).
//!
//! - The typed query returns exactly the pages of the untyped `MultiQuery` built by hand from
//!   the same inputs (`AttributeValue`s in key order): a property test over random records and
//!   queries, conditions given in a random order, of one entity and of the collection, on
//!   `MemoryStore` (256 cases) and `DynamoDB` Local (4 cases, when `DYNAMODB_ENDPOINT` is set).
//!   `multi_attribute.rs` checks the untyped query against a filter-and-sort oracle.
//! - The untyped collection query with tagged items (`MultiQuery::tagged`) gives the typed
//!   collection query's pages and tokens, each item tagged with the member of its variant (the
//!   same property test).
//! - Order independence: the conditions in every order give the same pages and tokens.
//! - Every misuse is `Error::InvalidQuery` naming the field, before any read.
//! - A collection query by index token returns the members' records as the enum, against an
//!   oracle, by pages and by stream.
#![allow(clippy::struct_field_names)] // fields are named after their attributes

mod league;
mod store_support;

use entity_manager::field::{Condition, Field};
use entity_manager::query::untyped::MultiQuery;
use entity_manager::query::{
    Collection as _, MultiAttribute, TryStreamExt as _, TypedIndex, TypedPage,
};
use entity_manager::store::{MemoryStore, RangeCondition, Store};
use entity_manager::{AttributeValue, Entity, EntityExt, EntitySchema, Error, Table};
use league::{Coach, CoachIndex, Player, PlayerIndex, Roster, league};
use proptest::prelude::*;
use proptest::strategy::ValueTree as _;
use serde::{Deserialize, Serialize};
use store_support::{TestResult, n, s};

type BoxError = Box<dyn std::error::Error>;

// =============================================================================================
// random records and queries

/// One record of either entity, its fields from small sets so that tuples tie.
#[derive(Clone, Debug)]
struct Rec {
    coach: bool,
    id: u8,
    created: u64,
    team: u8,
    region: u8,
    org: u8,
    score: i64,
    nickname: Option<u8>,
}

impl Rec {
    fn as_player(&self) -> Player {
        Player {
            player_id: format!("p{:02}", self.id),
            created: self.created,
            team_id: format!("t{}", self.team),
            region: format!("r{}", self.region),
            org_id: format!("o{}", self.org),
            score: self.score,
            nickname: self.nickname.map(|n| format!("n{n}")),
        }
    }

    fn as_coach(&self) -> Coach {
        Coach {
            coach_id: format!("c{:02}", self.id),
            created: self.created,
            team_id: format!("t{}", self.team),
            region: format!("r{}", self.region),
            org_id: format!("o{}", self.org),
            score: self.score,
            nickname: self.nickname.map(|n| format!("n{n}")),
        }
    }
}

fn rec() -> impl Strategy<Value = Rec> {
    (
        any::<bool>(),
        0_u8..30,
        0_u64..3_000,
        0_u8..2,
        0_u8..2,
        0_u8..2,
        -3_i64..4,
        proptest::option::weighted(0.8, 0_u8..3),
    )
        .prop_map(
            |(coach, id, created, team, region, org, score, nickname)| Rec {
                coach,
                id,
                created,
                team,
                region,
                org,
                score,
                nickname,
            },
        )
}

/// A key condition on one sort attribute: `op` 0..=4 a comparison, 5 `between`, 6
/// `begins_with` (on a string attribute only).
#[derive(Clone, Copy, Debug)]
struct Op {
    op: u8,
    value: i64,
    high: i64,
}

/// A query: by team and region (unsharded) or by organisation (sharded), of the players or of
/// the collection; an optional condition on the first sort attribute, or equality on it and an
/// optional condition on the second; the conditions given in the order of `order`, each from a
/// player's or a coach's field (`coach_fields`, for a collection).
#[derive(Clone, Debug)]
struct Ask {
    by_org: bool,
    collection: bool,
    team: u8,
    region: u8,
    prefix: Option<i64>,
    cond: Option<Op>,
    descending: bool,
    limit: usize,
    page_size: usize,
    throttle: usize,
    order: Vec<usize>,
    coach_fields: Vec<bool>,
}

fn op() -> impl Strategy<Value = Op> {
    (0_u8..7, -3_i64..4, -3_i64..4).prop_map(|(op, value, high)| Op { op, value, high })
}

fn ask() -> impl Strategy<Value = Ask> {
    (
        (any::<bool>(), any::<bool>(), 0_u8..2, 0_u8..2),
        proptest::option::weighted(0.4, -3_i64..4),
        proptest::option::of(op()),
        (any::<bool>(), 1_usize..8, 1_usize..5, 1_usize..4),
        Just((0..4).collect::<Vec<usize>>()).prop_shuffle(),
        proptest::collection::vec(any::<bool>(), 4),
    )
        .prop_map(
            |(
                (by_org, collection, team, region),
                prefix,
                cond,
                (descending, limit, page_size, throttle),
                order,
                coach_fields,
            )| Ask {
                by_org,
                collection,
                team,
                region,
                prefix,
                cond,
                descending,
                limit,
                page_size,
                throttle,
                order,
                coach_fields,
            },
        )
}

/// A nickname of a condition, from a drawn number (-3..4), in the numbers' order.
fn nick(v: i64) -> String {
    format!("n{}", (v + 3) / 3)
}

/// The values of a condition on the sort attribute `second` (or the first, `score`): numbers,
/// or nickname strings; `None` for a `begins_with` on a number.
fn operand(ask: &Ask, second: bool, v: i64) -> AttributeValue {
    if second && !ask.by_org {
        s(&nick(v))
    } else if second {
        n(v * 500)
    } else {
        n(v)
    }
}

/// The condition as the untyped layer takes it; `None` when it does not apply (a `begins_with`
/// on a number attribute).
fn untyped_condition(ask: &Ask, second: bool, op: Op) -> Option<RangeCondition> {
    let v = operand(ask, second, op.value);
    let string = second && !ask.by_org;
    Some(match op.op {
        0 => RangeCondition::Eq(v),
        1 => RangeCondition::Lt(v),
        2 => RangeCondition::Le(v),
        3 => RangeCondition::Gt(v),
        4 => RangeCondition::Ge(v),
        5 => {
            let (low, high) = (op.value.min(op.high), op.value.max(op.high));
            RangeCondition::Between(operand(ask, second, low), operand(ask, second, high))
        }
        _ if string => RangeCondition::BeginsWith(s(&nick(op.value))),
        _ => return None,
    })
}

/// The untyped query, by hand: partition values and the sort prefix in key order.
fn untyped<'a, S: Store>(
    store: &'a S,
    entities: Vec<EntitySchema<'a>>,
    ask: &Ask,
) -> MultiQuery<'a, S> {
    let (index, hash) = if ask.by_org {
        ("byOrg", vec![s(&format!("o{}", ask.team))])
    } else {
        (
            "byTeam",
            vec![s(&format!("t{}", ask.team)), s(&format!("r{}", ask.region))],
        )
    };
    let mut q = MultiQuery::collection(store, entities, index)
        .hash(hash)
        .shards_between(0, 3_000)
        .descending(ask.descending)
        .limit(ask.limit)
        .page_size(ask.page_size)
        .throttle(ask.throttle);
    match (ask.prefix, ask.cond) {
        (Some(p), Some(op)) => {
            q = q.range_prefix([n(p)]);
            if let Some(c) = untyped_condition(ask, true, op) {
                q = q.range(c);
            }
        }
        (Some(p), None) => q = q.range(RangeCondition::Eq(n(p))),
        (None, Some(op)) => {
            if let Some(c) = untyped_condition(ask, false, op) {
                q = q.range(c);
            }
        }
        (None, None) => {}
    }
    q
}

/// A typed condition of a player's or a coach's field, and whether it is a partition value.
enum Cond {
    Player(bool, Condition<Player>),
    Coach(bool, Condition<Coach>),
}

/// The typed conditions of an ask, from the fields of entity `$e`, in key order (at most 4:
/// partition values, then sort conditions).
macro_rules! typed_conditions {
    ($e:ty, $ask:expr, $wrap:path) => {{
        let ask: &Ask = $ask;
        let f = <$e>::FIELDS;
        let mut out = Vec::new();
        if ask.by_org {
            out.push($wrap(true, f.org_id.eq(format!("o{}", ask.team))));
        } else {
            out.push($wrap(true, f.team_id.eq(format!("t{}", ask.team))));
            out.push($wrap(true, f.region.eq(format!("r{}", ask.region))));
        }
        let number = |field: Field<$e, i64>, op: Op, scale: i64| {
            Some(match op.op {
                0 => field.eq(op.value * scale),
                1 => field.lt(op.value * scale),
                2 => field.le(op.value * scale),
                3 => field.gt(op.value * scale),
                4 => field.ge(op.value * scale),
                5 => field.between(op.value.min(op.high) * scale, op.value.max(op.high) * scale),
                _ => return None,
            })
        };
        let text = nick;
        let second = |op: Op| -> Option<Condition<$e>> {
            if ask.by_org {
                let created = f.created;
                let v = |x: i64| u64::try_from(x * 500).ok();
                // `created` is a u64: negative bounds make the untyped condition too, as numbers
                Some(match op.op {
                    0 => created.eq(v(op.value)?),
                    1 => created.lt(v(op.value)?),
                    2 => created.le(v(op.value)?),
                    3 => created.gt(v(op.value)?),
                    4 => created.ge(v(op.value)?),
                    5 => created.between(v(op.value.min(op.high))?, v(op.value.max(op.high))?),
                    _ => return None,
                })
            } else {
                let nick = f.nickname;
                Some(match op.op {
                    0 => nick.eq(text(op.value)),
                    1 => nick.lt(text(op.value)),
                    2 => nick.le(text(op.value)),
                    3 => nick.gt(text(op.value)),
                    4 => nick.ge(text(op.value)),
                    5 => nick.between(text(op.value.min(op.high)), text(op.value.max(op.high))),
                    _ => nick.begins_with(text(op.value)),
                })
            }
        };
        match (ask.prefix, ask.cond) {
            (Some(p), cond) => {
                out.push($wrap(false, f.score.eq(p)));
                if let Some(c) = cond.and_then(second) {
                    out.push($wrap(false, c));
                }
            }
            (None, Some(op)) => {
                if let Some(c) = number(f.score, op, 1) {
                    out.push($wrap(false, c));
                }
            }
            (None, None) => {}
        }
        out
    }};
}

/// Whether the typed side can express the ask exactly as the untyped side does (a negative
/// bound on the `u64` field `created` cannot be written typed).
fn expressible(ask: &Ask) -> bool {
    !(ask.by_org
        && ask.prefix.is_some()
        && ask
            .cond
            .is_some_and(|op| op.value < 0 || (op.op == 5 && op.high < 0)))
}

/// Every page of a typed query, with its token: `page` gives the page after a token.
async fn pages_of<T, F, Fut>(page: F) -> Result<Pages<T>, Error>
where
    F: Fn(Option<String>) -> Fut,
    Fut: Future<Output = Result<entity_manager::query::TypedPage<T>, Error>>,
{
    let mut pages = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = page(token.clone()).await?;
        let next = page.next.clone();
        pages.push((page.items, page.next));
        match next {
            Some(next) => token = Some(next),
            None => return Ok(pages),
        }
    }
}

/// The typed conditions of an ask in the ask's order (of a collection: each from a player's or
/// a coach's field, as the ask draws).
fn shuffled(ask: &Ask) -> Vec<Cond> {
    let player = typed_conditions!(Player, ask, Cond::Player);
    let coach = typed_conditions!(Coach, ask, Cond::Coach);
    let conditions: Vec<Cond> = if ask.collection {
        player
            .into_iter()
            .zip(coach)
            .zip(&ask.coach_fields)
            .map(|((p, c), &use_coach)| if use_coach { c } else { p })
            .collect()
    } else {
        player
    };
    let mut slots: Vec<Option<Cond>> = conditions.into_iter().map(Some).collect();
    ask.order
        .iter()
        .filter_map(|&i| slots.get_mut(i).and_then(Option::take))
        .collect()
}

/// The records of every page of the typed query of an ask.
async fn typed_records<S: Store>(store: &S, ask: &Ask) -> Result<Vec<Vec<Roster>>, BoxError> {
    Ok(typed_pages(store, ask)
        .await?
        .into_iter()
        .map(|(items, _)| items)
        .collect())
}

/// Every page of the typed query of an ask, with its token.
async fn typed_pages<S: Store>(store: &S, ask: &Ask) -> Result<Pages<Roster>, BoxError> {
    let index = if ask.by_org {
        PlayerIndex::ByOrg
    } else {
        PlayerIndex::ByTeam
    };
    let pages = if ask.collection {
        let mut q = Roster::query(store)?.index(index);
        for c in shuffled(ask) {
            q = match c {
                Cond::Player(true, c) => q.hash(c),
                Cond::Player(false, c) => q.range(c),
                Cond::Coach(true, c) => q.hash(c),
                Cond::Coach(false, c) => q.range(c),
            };
        }
        let q = &q
            .shards_between(0, 3_000)
            .descending(ask.descending)
            .limit(ask.limit)
            .page_size(ask.page_size)
            .throttle(ask.throttle);
        pages_of(|t| async move { q.page(t.as_deref()).await }).await?
    } else {
        let mut q = Player::query(store)?.index(index);
        for c in shuffled(ask) {
            q = match c {
                Cond::Player(true, c) => q.hash(c),
                Cond::Player(false, c) => q.range(c),
                Cond::Coach(..) => return Err("a coach's condition in a player query".into()),
            };
        }
        let q = &q
            .shards_between(0, 3_000)
            .descending(ask.descending)
            .limit(ask.limit)
            .page_size(ask.page_size)
            .throttle(ask.throttle);
        pages_of(|t| async move {
            let page = q.page(t.as_deref()).await?;
            Ok(entity_manager::query::TypedPage {
                items: page.items.into_iter().map(Roster::Player).collect(),
                next: page.next,
                stats: page.stats,
            })
        })
        .await?
    };
    Ok(pages)
}

/// Every page of the untyped collection query of an ask, its items tagged with their member
/// (`MultiQuery::tagged`), each read as the tag's variant, with its token.
async fn tagged_pages<S: Store>(store: &S, ask: &Ask) -> Result<Pages<Roster>, BoxError> {
    let q = &untyped(store, vec![Player::schema()?, Coach::schema()?], ask).tagged();
    Ok(pages_of(|t| async move {
        let page = q.page(t.as_deref()).await?;
        let mut items = Vec::new();
        for tagged in page.items {
            let member = &q.members()[tagged.member];
            assert_eq!(
                tagged.entity,
                *member.model().token,
                "the tag names the member"
            );
            items.push(Roster::from_member(tagged.member, &tagged.item)?);
        }
        Ok(TypedPage {
            items,
            next: page.next,
            stats: page.stats,
        })
    })
    .await?)
}

/// The records of every page of the untyped query of an ask.
async fn untyped_records<S: Store>(store: &S, ask: &Ask) -> Result<Vec<Vec<Roster>>, BoxError> {
    let mut entities = vec![Player::schema()?];
    if ask.collection {
        entities.push(Coach::schema()?);
    }
    let plain = untyped(store, entities, ask);
    let mut want = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = plain.page(token.as_deref()).await?;
        let records = page
            .items
            .iter()
            .map(Roster::from_item)
            .collect::<Result<Vec<_>, _>>()?;
        want.push(records);
        match page.next {
            Some(next) => token = Some(next),
            None => return Ok(want),
        }
    }
}

/// Pages a typed and the untyped query to the end: the same records on every page.
async fn check<S: Store>(store: &S, recs: &[Rec], asks: &[Ask]) -> TestResult {
    for r in recs {
        if r.coach {
            r.as_coach().put(store).await?;
        } else {
            r.as_player().put(store).await?;
        }
    }
    for ask in asks.iter().filter(|a| expressible(a)) {
        let want = untyped_records(store, ask).await?;
        if ask.collection {
            // with the tokens: the typed collection's pages are the tagged untyped query's
            let typed = typed_pages(store, ask).await?;
            assert_eq!(tagged_pages(store, ask).await?, typed, "{ask:?}");
            let got: Vec<Vec<Roster>> = typed.into_iter().map(|(items, _)| items).collect();
            assert_eq!(got, want, "{ask:?}");
        } else {
            let got = typed_records(store, ask).await?;
            assert_eq!(got, want, "{ask:?}");
        }
    }
    Ok(())
}

fn case() -> impl Strategy<Value = (Vec<Rec>, Vec<Ask>)> {
    (
        proptest::collection::vec(rec(), 0..40),
        proptest::collection::vec(ask(), 1..4),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: entity_manager_tests::cases(256), ..ProptestConfig::default() })]

    /// The typed query, of one entity and of the collection, gives the untyped query's pages on
    /// `MemoryStore`, whatever order its conditions are given in.
    #[test]
    fn typed_pages_are_the_untyped_pages_in_memory((recs, asks) in case()) {
        let runtime = tokio::runtime::Builder::new_current_thread().build()
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        runtime.block_on(async {
            let store = MemoryStore::new(league()?);
            check(&store, &recs, &asks).await
        }).map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
}

/// The same on `DynamoDB` Local: 4 cases, a table each.
#[tokio::test]
async fn typed_pages_are_the_untyped_pages_in_dynamodb() -> TestResult {
    if store_support::dynamo_client().is_none() {
        return Ok(());
    }
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for i in 0..4 {
        let (recs, asks) = case()
            .new_tree(&mut runner)
            .map_err(|e| e.to_string())?
            .current();
        let Some(store) = store_support::dynamo_store("multityped", league()?).await? else {
            return Ok(());
        };
        let result = check(&store, &recs, &asks).await;
        store.delete_table().await?;
        result.map_err(|e| format!("case {i} ({recs:?}, {asks:?}): {e}"))?;
    }
    Ok(())
}

// =============================================================================================
// order independence

fn players() -> Vec<Player> {
    (0..40_u32)
        .map(|i| Player {
            player_id: format!("p{i:02}"),
            created: 1_000 + u64::from(i) * 37 % 1_000,
            team_id: format!("t{}", i % 2),
            region: "eu".into(),
            org_id: "acme".into(),
            score: i64::from(i % 3),
            nickname: (!i.is_multiple_of(5)).then(|| format!("n{}", i % 4)),
        })
        .collect()
}

/// Every permutation of `0..n`.
fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for rest in permutations(n - 1) {
        for at in 0..=rest.len() {
            let mut p = rest.clone();
            p.insert(at, n - 1);
            out.push(p);
        }
    }
    out
}

/// Every page of a typed query, with its token.
type Pages<T> = Vec<(Vec<T>, Option<String>)>;

/// A store holding `players()` and six coaches of team `t1`.
async fn roster_store() -> Result<MemoryStore, BoxError> {
    let store = MemoryStore::new(league()?);
    for p in players() {
        p.put(&store).await?;
    }
    for i in 0..6_u32 {
        Coach {
            coach_id: format!("c{i}"),
            created: 1_500 + u64::from(i),
            team_id: "t1".into(),
            region: "eu".into(),
            org_id: "acme".into(),
            score: 1,
            nickname: Some(format!("n{}", i % 4)),
        }
        .put(&store)
        .await?;
    }
    Ok(store)
}

/// The partition values and sort conditions of an entity query in every order give the same
/// pages and the same tokens, and the records expected.
#[tokio::test]
async fn conditions_in_any_order_give_the_same_pages() -> TestResult {
    let store = roster_store().await?;
    let f = Player::FIELDS;
    // two partition values, equality on `score`, a range on `nickname`
    let mut first: Option<Pages<Player>> = None;
    for order in permutations(4) {
        let mut q = Player::query(&store)?.index(PlayerIndex::ByTeam);
        for i in order {
            q = match i {
                0 => q.hash(f.team_id.eq("t1")),
                1 => q.hash(f.region.eq("eu")),
                2 => q.range(f.score.eq(1)),
                _ => q.range(f.nickname.ge("n1")),
            };
        }
        let q = &q.shards_between(0, 3_000).limit(2).page_size(2);
        let pages = pages_of(|t| async move { q.page(t.as_deref()).await }).await?;
        match &first {
            None => first = Some(pages),
            Some(first) => assert_eq!(&pages, first),
        }
    }
    let first = first.ok_or("no permutation")?;
    // the expected records, independently: in nickname order
    let mut want: Vec<Player> = players()
        .into_iter()
        .filter(|p| {
            p.team_id == "t1" && p.score == 1 && p.nickname.as_deref().is_some_and(|n| n >= "n1")
        })
        .collect();
    want.sort_by(|a, b| a.nickname.cmp(&b.nickname));
    let mut got: Vec<Player> = first.iter().flat_map(|(items, _)| items.clone()).collect();
    assert!(!want.is_empty());
    assert_eq!(
        got.iter().map(|p| &p.nickname).collect::<Vec<_>>(),
        want.iter().map(|p| &p.nickname).collect::<Vec<_>>()
    );
    got.sort_by(|a, b| a.player_id.cmp(&b.player_id));
    want.sort_by(|a, b| a.player_id.cmp(&b.player_id));
    assert_eq!(got, want);
    Ok(())
}

/// The same for a collection, each condition from a player's or a coach's field.
#[tokio::test]
async fn collection_conditions_in_any_order_give_the_same_pages() -> TestResult {
    let store = roster_store().await?;
    let f = Player::FIELDS;
    let c = Coach::FIELDS;
    let mut first: Option<Pages<Roster>> = None;
    for order in permutations(4) {
        for coach_mask in 0..16_u8 {
            let by_coach = |i: usize| coach_mask & (1 << i) != 0;
            let mut q = Roster::query(&store)?.index(CoachIndex::ByTeam);
            for &i in &order {
                q = match (i, by_coach(i)) {
                    (0, false) => q.hash(f.team_id.eq("t1")),
                    (0, true) => q.hash(c.team_id.eq("t1")),
                    (1, false) => q.hash(f.region.eq("eu")),
                    (1, true) => q.hash(c.region.eq("eu")),
                    (2, false) => q.range(f.score.eq(1)),
                    (2, true) => q.range(c.score.eq(1)),
                    (_, false) => q.range(f.nickname.between("n1", "n2")),
                    (_, true) => q.range(c.nickname.between("n1", "n2")),
                };
            }
            let q = &q.shards_between(0, 3_000).limit(3).page_size(2);
            let pages = pages_of(|t| async move { q.page(t.as_deref()).await }).await?;
            match &first {
                None => first = Some(pages),
                Some(first) => assert_eq!(&pages, first, "{order:?} {coach_mask}"),
            }
        }
    }
    let records: Vec<Roster> = first
        .ok_or("no permutation")?
        .into_iter()
        .flat_map(|(items, _)| items)
        .collect();
    let coaches = records
        .iter()
        .filter(|r| matches!(r, Roster::Coach(_)))
        .count();
    let players = records.len() - coaches;
    // coaches c1, c2, c5 (n1, n2, n1); players of t1 with score 1 and nickname n1 or n2
    assert_eq!(coaches, 3);
    assert_eq!(
        players,
        self::players()
            .iter()
            .filter(|p| p.team_id == "t1"
                && p.score == 1
                && matches!(p.nickname.as_deref(), Some("n1" | "n2")))
            .count()
    );
    Ok(())
}

// =============================================================================================
// misuse

/// The error of the first page, which must be `InvalidQuery` naming `entity` and every one of
/// `names`; the store is never read.
async fn refused<T: std::fmt::Debug>(
    page: impl Future<Output = Result<T, Error>>,
    entity: &str,
    fields: &[&str],
) -> TestResult {
    match page.await {
        Err(e @ Error::InvalidQuery { .. }) => {
            let Error::InvalidQuery {
                entity: culprit,
                reason,
            } = &e
            else {
                return Err("unreachable".into());
            };
            assert!(culprit.contains(entity), "{e}");
            for name in fields {
                assert!(reason.contains(&format!("`{name}`")), "{name}: {e}");
            }
            Ok(())
        }
        other => Err(format!("expected InvalidQuery naming {fields:?}, got {other:?}").into()),
    }
}

/// Every misuse of the partition values is `Error::InvalidQuery`, naming the entity, the index
/// and the field, from the first page; no condition is dropped silently.
#[tokio::test]
async fn every_misuse_is_a_typed_error_naming_the_field() -> TestResult {
    let store = MemoryStore::new(league()?);
    let f = Player::FIELDS;
    let q = || Ok::<_, Error>(Player::query(&store)?.index(PlayerIndex::ByTeam));
    let with_key =
        || -> Result<_, Error> { Ok(q()?.hash(f.team_id.eq("t1")).hash(f.region.eq("eu"))) };

    // a non-equality condition on a partition attribute
    refused(
        q()?.hash(f.team_id.ge("t1"))
            .hash(f.region.eq("eu"))
            .page(None),
        "player",
        &["teamId", "byTeam"],
    )
    .await?;
    // a field that is not in the index, as a partition value or a sort condition
    refused(
        with_key()?.hash(f.org_id.eq("o1")).page(None),
        "player",
        &["orgId", "byTeam"],
    )
    .await?;
    refused(
        with_key()?.range(f.created.ge(5)).page(None),
        "player",
        &["created", "byTeam"],
    )
    .await?;
    // a sort attribute given as a partition value, and the other way round
    refused(
        with_key()?.hash(f.score.eq(1)).page(None),
        "player",
        &["score"],
    )
    .await?;
    refused(
        q()?.hash(f.team_id.eq("t1"))
            .range(f.region.eq("eu"))
            .page(None),
        "player",
        &["region"],
    )
    .await?;
    // a partition attribute missing, or given twice
    refused(
        q()?.hash(f.team_id.eq("t1")).page(None),
        "player",
        &["region", "byTeam"],
    )
    .await?;
    refused(
        with_key()?.hash(f.team_id.eq("t2")).page(None),
        "player",
        &["teamId"],
    )
    .await?;
    Ok(())
}

/// Every misuse of the sort conditions is `Error::InvalidQuery` naming the field.
#[tokio::test]
async fn every_sort_misuse_is_a_typed_error_naming_the_field() -> TestResult {
    let store = MemoryStore::new(league()?);
    let f = Player::FIELDS;
    let q = || Ok::<_, Error>(Player::query(&store)?.index(PlayerIndex::ByTeam));
    let with_key =
        || -> Result<_, Error> { Ok(q()?.hash(f.team_id.eq("t1")).hash(f.region.eq("eu"))) };
    // a gap in the sort prefix
    refused(
        with_key()?.range(f.nickname.eq("n1")).page(None),
        "player",
        &["nickname", "score"],
    )
    .await?;
    // two non-equality sort conditions, on two attributes or on one
    refused(
        with_key()?
            .range(f.score.gt(1))
            .range(f.nickname.lt("n2"))
            .page(None),
        "player",
        &["score", "nickname"],
    )
    .await?;
    refused(
        with_key()?
            .range(f.score.gt(1))
            .range(f.score.lt(3))
            .page(None),
        "player",
        &["score"],
    )
    .await?;
    // combined conditions
    refused(
        q()?.hash(f.team_id.eq("t1") & f.region.eq("eu")).page(None),
        "player",
        &["teamId", "region"],
    )
    .await?;
    refused(
        with_key()?.range(f.score.eq(1) | f.score.eq(2)).page(None),
        "player",
        &["score"],
    )
    .await?;
    refused(
        with_key()?.range(!f.score.eq(1)).page(None),
        "player",
        &["score"],
    )
    .await?;
    // conditions that are no key conditions
    refused(
        with_key()?.range(f.score.ne(1)).page(None),
        "player",
        &["score"],
    )
    .await?;
    refused(
        with_key()?.range(f.nickname.exists()).page(None),
        "player",
        &["nickname"],
    )
    .await?;
    // a value of another type than the key attribute's (a hand-written field)
    let wrong: Field<Player, String> = Field::new("score");
    refused(
        with_key()?.range(wrong.eq("high")).page(None),
        "player",
        &["score"],
    )
    .await?;
    // several mistakes are reported together
    refused(
        q()?.hash(f.team_id.ge("t1"))
            .range(f.nickname.eq("n1"))
            .page(None),
        "player",
        &["teamId", "region", "nickname"],
    )
    .await?;
    // the stream reports the error too
    let bad = q()?.hash(f.team_id.eq("t1"));
    refused(
        bad.stream().try_collect::<Vec<Player>>(),
        "player",
        &["region"],
    )
    .await?;

    Ok(())
}

/// A hand-written token of a classic index as a multi-attribute one, a collection index not
/// every member declares and a field of an entity outside the collection are typed errors too.
/// (The derived tokens carry their kind: a classic index's token gives the classic builder, and
/// does not compile as a collection's index: `tests/ui/query/`.)
#[tokio::test]
async fn index_and_member_misuse_is_a_typed_error() -> TestResult {
    let store = MemoryStore::new(league()?);
    let f = Player::FIELDS;
    // a hand-written token naming a classic index as a multi-attribute one
    let classic = TypedIndex::<Player, MultiAttribute>::named("byCreated");
    refused(
        Player::query(&store)?
            .index(classic)
            .hash(f.team_id.eq("t1"))
            .page(None),
        "player",
        &["byCreated"],
    )
    .await?;
    // a collection: an index not every member declares, a field of a non-member
    refused(
        Roster::query(&store)?.index(classic).page(None),
        "player",
        &["byCreated"],
    )
    .await?;
    refused(
        Roster::query(&store)?
            .index(TypedIndex::<Player, MultiAttribute>::named(
                "byTeamOnlyPlayers",
            ))
            .page(None),
        "coach",
        &["byTeamOnlyPlayers"],
    )
    .await?;
    refused(
        Roster::query(&store)?
            .index(PlayerIndex::ByTeam)
            .hash(f.team_id.eq("t1"))
            .hash(f.region.eq("eu"))
            .range(Field::<Other, i64>::new("score").eq(1))
            .page(None),
        "player",
        &["other"],
    )
    .await?;
    // a gap in the sort prefix, from the fields of two members
    refused(
        Roster::query(&store)?
            .index(CoachIndex::ByOrg)
            .hash(Coach::FIELDS.org_id.eq("o1"))
            .range(f.created.ge(5))
            .page(None),
        "coach",
        &["created", "score"],
    )
    .await?;
    Ok(())
}

/// An entity of another table, for the collection misuse above. A field of an entity outside a
/// derived collection does not compile (`CollectionMember` is implemented for the members only:
/// see the guide's `compile_fail` example); a hand-written membership that the collection's
/// members do not back is still refused at run time.
#[derive(Table)]
#[table(entities(Other))]
struct Elsewhere;

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Elsewhere, unique = other_id, timestamp = created)]
struct Other {
    #[transcode("string")]
    other_id: String,
    #[transcode("timestamp")]
    created: u64,
    score: i64,
}

impl entity_manager::query::CollectionMember<Roster> for Other {}

// =============================================================================================
// collections

/// A collection query by index token and typed key returns the players and coaches of an
/// organisation as the enum, in (score, created) order across both entities' shards, the same
/// by pages and by stream.
#[tokio::test]
async fn a_collection_query_returns_the_members_as_the_enum() -> TestResult {
    let store = MemoryStore::new(league()?);
    let players = players();
    let coaches: Vec<Coach> = (0_u8..5)
        .map(|i| Coach {
            coach_id: format!("c{i}"),
            created: 2_000 + u64::from(i),
            team_id: "t0".into(),
            region: "eu".into(),
            org_id: if i == 4 { "other" } else { "acme" }.into(),
            score: i64::from(i % 3),
            nickname: None,
        })
        .collect();
    for p in &players {
        p.put(&store).await?;
    }
    for c in &coaches {
        c.put(&store).await?;
    }
    let query = Roster::query(&store)?
        .index(CoachIndex::ByOrg)
        .range(Coach::FIELDS.score.ge(1))
        .hash(Player::FIELDS.org_id.eq("acme"))
        .shards_between(0, 3_000)
        .limit(4);
    let mut got = Vec::new();
    let mut token = None;
    loop {
        let page = query.page(token.as_deref()).await?;
        assert!(page.items.len() <= 4);
        got.extend(page.items);
        match page.next {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    let mut want: Vec<(i64, u64, Roster)> = players
        .iter()
        .filter(|p| p.org_id == "acme" && p.score >= 1)
        .map(|p| (p.score, p.created, Roster::Player(p.clone())))
        .chain(
            coaches
                .iter()
                .filter(|c| c.org_id == "acme" && c.score >= 1)
                .map(|c| (c.score, c.created, Roster::Coach(c.clone()))),
        )
        .collect();
    want.sort_by_key(|(score, created, _)| (*score, *created));
    let want: Vec<Roster> = want.into_iter().map(|(_, _, r)| r).collect();
    assert_eq!(got, want);
    assert!(got.iter().any(|r| matches!(r, Roster::Coach(_))));
    let streamed: Vec<Roster> = query.stream().try_collect().await?;
    assert_eq!(streamed, want);
    // as a stream of pages: the same pages, and from the first page's token the rest
    let pages: Vec<TypedPage<Roster>> = query.pages(None).try_collect().await?;
    assert!(pages.iter().all(|p| p.items.len() <= 4));
    assert!(pages.iter().rev().skip(1).all(|p| p.items.len() == 4));
    let by_pages: Vec<Roster> = pages.iter().flat_map(|p| p.items.clone()).collect();
    assert_eq!(by_pages, want);
    let token = pages
        .first()
        .and_then(|p| p.next.clone())
        .ok_or("a second page")?;
    let rest: Vec<TypedPage<Roster>> = query.pages(Some(&token)).try_collect().await?;
    let rest: Vec<Roster> = rest.into_iter().flat_map(|p| p.items).collect();
    assert_eq!(rest, want[4..]);
    Ok(())
}

/// The typed entity query streams what its pages hold.
#[tokio::test]
async fn the_typed_stream_is_the_pages() -> TestResult {
    let store = MemoryStore::new(league()?);
    for p in players() {
        p.put(&store).await?;
    }
    let f = Player::FIELDS;
    let query = Player::query(&store)?
        .index(PlayerIndex::ByOrg)
        .hash(f.org_id.eq("acme"))
        .range(f.score.eq(2))
        .range(f.created.between(1_100, 1_900))
        .shards_between(0, 3_000)
        .descending(true)
        .limit(3);
    let streamed: Vec<Player> = query.stream().try_collect().await?;
    let mut want: Vec<Player> = players()
        .into_iter()
        .filter(|p| p.score == 2 && (1_100..=1_900).contains(&p.created))
        .collect();
    want.sort_by_key(|p| std::cmp::Reverse(p.created));
    assert!(want.len() > 3);
    assert_eq!(streamed, want);
    let pages: Vec<TypedPage<Player>> = query.pages(None).try_collect().await?;
    assert!(pages.iter().rev().skip(1).all(|p| p.items.len() == 3));
    let by_pages: Vec<Player> = pages.into_iter().flat_map(|p| p.items).collect();
    assert_eq!(by_pages, want);
    Ok(())
}

/// A collection whose window holds one partition (an unsharded index both members share)
/// reads each page in one request of the page's limit, as a hand-written `Query` would,
/// although the page size (2) is smaller than the page.
#[tokio::test]
async fn a_collection_of_one_lane_reads_each_page_in_one_request() -> TestResult {
    let tally = entity_manager_tests::Tally::new(roster_store().await?);
    let f = Player::FIELDS;
    let query = Roster::query(&tally)?
        .index(CoachIndex::ByTeam)
        .hash(f.team_id.eq("t1"))
        .hash(f.region.eq("eu"))
        .limit(4)
        .page_size(2);
    let mut token = None;
    let mut got = Vec::new();
    loop {
        let page = query.page(token.as_deref()).await?;
        let (queries, read) = tally.take();
        assert_eq!(queries, 1, "one request for page {}", got.len() / 4);
        assert_eq!(
            read,
            page.items.len(),
            "no item read twice or past the page"
        );
        got.extend(page.items);
        match page.next {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    // the team's players that have a nickname (the index's last sort attribute: without it
    // a record is not in the index) and its six coaches, each once
    let players = self::players()
        .iter()
        .filter(|p| p.team_id == "t1" && p.nickname.is_some())
        .count();
    assert_eq!(got.len(), players + 6);
    let coaches = got.iter().filter(|r| matches!(r, Roster::Coach(_))).count();
    assert_eq!(coaches, 6);
    Ok(())
}

/// A condition whose value does not fit the key attribute's type (a field made by hand under a
/// key attribute's name, with another type) is refused before any read, naming the attribute
/// and its type.
#[tokio::test]
async fn a_condition_of_another_type_than_its_key_attribute_is_refused_before_any_read()
-> TestResult {
    let store = entity_manager_tests::Tally::new(MemoryStore::new(league()?));
    let score_as_text: Field<Player, String> = Field::new("score");
    let f = Player::FIELDS;
    let result = Player::query(&store)?
        .index(PlayerIndex::ByTeam)
        .hash(f.team_id.eq("t1"))
        .hash(f.region.eq("eu"))
        .range(score_as_text.ge("1"))
        .page(None)
        .await;
    match result {
        Err(Error::InvalidQuery { reason, .. }) => assert!(
            reason.contains("`score` is a key attribute of type N"),
            "{reason}"
        ),
        other => panic!("expected InvalidQuery naming `score` and its type, got {other:?}"),
    }
    assert_eq!(store.take(), (0, 0), "a refused query read nothing");
    Ok(())
}
