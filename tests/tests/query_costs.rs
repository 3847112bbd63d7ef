//! What paging costs where reads can be wasted, counted exactly (issue 46, point 3): runs of
//! ties in the first sort attribute of a sharded multi-attribute key, under each condition kind
//! on it, both directions, paged to the end by tokens (each page from the previous page's token
//! alone) and by a stream, on `MemoryStore` behind a counting store.
//!
//! The results are checked against a brute-force model (every player, filtered and sorted by
//! the test), and the counts (shard queries, items read) against this engine's counts: the
//! data and the schedule are deterministic (no clock, no randomness), so a change that makes
//! paging read more fails here, and one that makes it read less shows in the printed table
//! (then lower the bounds). They are what the mutants of the engine's read planning change
//! while the items stay right (BENCHMARKS.md, "Mutation testing"): a lane whose read through a
//! value is forgotten (97 scores: pages across values), a read one item short of what a lane
//! read again needs (small page sizes: the page size caps the read), a known end left unknown,
//! a wider read margin, a read narrowed to a predicted end that lies past the condition's own
//! end (the condition's bound is the tighter one: `le`, `lt` ascending, `ge`, `gt` descending).
//! The same on a classic index with runs of ties over 16 shards.
//!
//! ```text
//! cargo test -p entity-manager-tests --test query_costs -- --nocapture
//! ```
#![allow(clippy::struct_field_names)] // the league's fields are named after their attributes

mod league;

use std::cmp::Ordering;
use std::future::Future;

use entity_manager::Schema;
use entity_manager::model::ShardSpace;
use entity_manager::query::untyped::{MultiQuery, Query};
use entity_manager::query::{QueryPageResult, TryStreamExt as _};
use entity_manager::store::{MemoryStore, RangeCondition, Store, TableDefinition, WriteRequest};
use entity_manager::{AttributeValue, EntityExt, Item};
use entity_manager_tests::Tally;
use league::{Player, league};
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const PLAYERS: u32 = 600;

/// Player `i` of `scores` scores (centred on 0) in runs of ties across the shards, with
/// unique creation times, a few in another organisation.
fn player(i: u32, scores: u32) -> Player {
    Player {
        player_id: format!("p{i:04}"),
        created: 1_000 + u64::from(i * 7 % PLAYERS),
        team_id: format!("t{}", i % 3),
        region: "eu".to_owned(),
        org_id: if i % 10 == 9 { "other" } else { "acme" }.to_owned(),
        score: i64::from(i % scores) - i64::from(scores / 2),
        nickname: None,
    }
}

fn n(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// Whether the model admits `score` under `condition`.
fn admits(condition: Option<&RangeCondition>, score: i64) -> bool {
    let v = |a: &AttributeValue| match a {
        AttributeValue::N(t) => t.parse::<i64>().ok(),
        _ => None,
    };
    match condition {
        None => true,
        Some(RangeCondition::Eq(a)) => v(a) == Some(score),
        Some(RangeCondition::Lt(a)) => v(a).is_some_and(|a| score < a),
        Some(RangeCondition::Le(a)) => v(a).is_some_and(|a| score <= a),
        Some(RangeCondition::Gt(a)) => v(a).is_some_and(|a| score > a),
        Some(RangeCondition::Ge(a)) => v(a).is_some_and(|a| score >= a),
        Some(RangeCondition::Between(a, b)) => v(a)
            .zip(v(b))
            .is_some_and(|(a, b)| a <= score && score <= b),
        Some(RangeCondition::BeginsWith(_)) => false,
    }
}

/// The ids the model returns: `acme`'s players under the condition, by (score, created).
fn expected(condition: Option<&RangeCondition>, descending: bool, scores: u32) -> Vec<String> {
    let mut players: Vec<Player> = (0..PLAYERS)
        .map(|i| player(i, scores))
        .filter(|p| p.org_id == "acme" && admits(condition, p.score))
        .collect();
    players.sort_by(|a, b| match a.score.cmp(&b.score) {
        Ordering::Equal => a.created.cmp(&b.created),
        other => other,
    });
    if descending {
        players.reverse();
    }
    players.into_iter().map(|p| p.player_id).collect()
}

fn ids(items: &[Item]) -> Vec<String> {
    ids_of(items, "playerId")
}

fn ids_of(items: &[Item], attribute: &str) -> Vec<String> {
    items
        .iter()
        .map(|i| match i.get(attribute) {
            Some(AttributeValue::S(id)) => id.clone(),
            other => format!("{other:?}"),
        })
        .collect()
}

/// Every item of a query paged to the end by tokens, each page from the previous page's token
/// alone (`page` reads the page at a token).
async fn to_the_end<F, P>(mut page: F) -> Result<Vec<Item>, entity_manager::Error>
where
    F: FnMut(Option<String>) -> P,
    P: Future<Output = Result<QueryPageResult, entity_manager::Error>>,
{
    let mut items = Vec::new();
    let mut token = None;
    loop {
        let result = page(token).await?;
        items.extend(result.items);
        token = result.next;
        if token.is_none() {
            return Ok(items);
        }
    }
}

/// One query shape and the most it may cost paged by tokens and streamed (shard queries,
/// items read).
struct Case {
    /// Scores: 7 makes runs of about 20 ties a lane, 97 pages across several values.
    scores: u32,
    label: &'static str,
    condition: Option<RangeCondition>,
    descending: bool,
    limit: usize,
    by_tokens: (usize, usize),
    streamed: (usize, usize),
}

#[allow(clippy::too_many_lines)] // a table of cases, one a few lines
fn cases() -> Vec<Case> {
    let case = |scores, label, condition, descending, limit, by_tokens, streamed| Case {
        scores,
        label,
        condition,
        descending,
        limit,
        by_tokens,
        streamed,
    };
    vec![
        case(7, "all", None, false, 10, (245, 1774), (56, 540)),
        case(7, "all", None, true, 37, (96, 772), (62, 540)),
        case(
            7,
            "le(1)",
            Some(RangeCondition::Le(n(1))),
            false,
            10,
            (170, 1259),
            (39, 387),
        ),
        case(
            7,
            "le(1)",
            Some(RangeCondition::Le(n(1))),
            true,
            25,
            (89, 659),
            (41, 387),
        ),
        case(
            7,
            "lt(2)",
            Some(RangeCondition::Lt(n(2))),
            false,
            25,
            (105, 739),
            (47, 463),
        ),
        case(
            7,
            "ge(-1)",
            Some(RangeCondition::Ge(n(-1))),
            false,
            10,
            (173, 1277),
            (40, 385),
        ),
        case(
            7,
            "gt(-2)",
            Some(RangeCondition::Gt(n(-2))),
            true,
            10,
            (203, 1337),
            (66, 462),
        ),
        case(
            7,
            "between(-2, 1)",
            Some(RangeCondition::Between(n(-2), n(1))),
            false,
            10,
            (136, 1020),
            (31, 309),
        ),
        case(
            7,
            "between(-2, 1)",
            Some(RangeCondition::Between(n(-2), n(1))),
            true,
            37,
            (52, 420),
            (30, 309),
        ),
        case(
            7,
            "eq(0)",
            Some(RangeCondition::Eq(n(0))),
            false,
            10,
            (40, 102),
            (32, 78),
        ),
        case(97, "all", None, false, 10, (348, 738), (91, 540)),
        case(
            97,
            "le(20)",
            Some(RangeCondition::Le(n(20))),
            true,
            25,
            (114, 517),
            (61, 389),
        ),
        case(
            97,
            "between(-30, 30)",
            Some(RangeCondition::Between(n(-30), n(30))),
            false,
            10,
            (210, 436),
            (61, 329),
        ),
        case(
            97,
            "ge(-40)",
            Some(RangeCondition::Ge(n(-40))),
            false,
            37,
            (98, 552),
            (64, 489),
        ),
        case(
            7,
            "ge(-1)",
            Some(RangeCondition::Ge(n(-1))),
            true,
            10,
            (175, 1260),
            (40, 385),
        ),
        case(
            97,
            "ge(-40)",
            Some(RangeCondition::Ge(n(-40))),
            true,
            25,
            (130, 655),
            (66, 489),
        ),
        case(
            97,
            "le(20)",
            Some(RangeCondition::Le(n(20))),
            false,
            10,
            (248, 544),
            (67, 389),
        ),
        case(
            97,
            "lt(20)",
            Some(RangeCondition::Lt(n(20))),
            false,
            25,
            (112, 469),
            (58, 389),
        ),
        case(
            97,
            "gt(-20)",
            Some(RangeCondition::Gt(n(-20))),
            true,
            10,
            (238, 497),
            (74, 372),
        ),
        case(
            97,
            "gt(-20)",
            Some(RangeCondition::Gt(n(-20))),
            true,
            37,
            (61, 451),
            (42, 372),
        ),
        case(
            97,
            "le(20)",
            Some(RangeCondition::Le(n(20))),
            false,
            37,
            (76, 449),
            (45, 389),
        ),
    ]
}

/// Every case paged to the end by tokens and by a stream: the model's items, at no more than
/// the case's counts.
#[tokio::test]
async fn paging_runs_of_ties_reads_no_more_than_it_did() -> TestResult {
    let mut over = Vec::new();
    let mut loaded = None;
    for case in cases() {
        if loaded
            .as_ref()
            .is_none_or(|(scores, _)| *scores != case.scores)
        {
            let store = Tally::new(MemoryStore::new(league()?));
            for i in 0..PLAYERS {
                player(i, case.scores).put(&store.inner).await?;
            }
            loaded = Some((case.scores, store));
        }
        let Some((_, store)) = &loaded else {
            return Err("no store".into());
        };
        let mut q = MultiQuery::new(store, Player::schema()?, "byOrg")
            .hash([AttributeValue::S("acme".into())])
            .shards_between(0, 10_000)
            .limit(case.limit)
            .page_size(20)
            .throttle(2)
            .descending(case.descending);
        if let Some(condition) = case.condition.clone() {
            q = q.range(condition);
        }
        let want = expected(case.condition.as_ref(), case.descending, case.scores);
        let name = format!(
            "{} scores, {} {} limit {}",
            case.scores,
            case.label,
            if case.descending { "desc" } else { "asc" },
            case.limit
        );
        store.take();
        let paged = to_the_end(|token| {
            let q = &q;
            async move { q.page(token.as_deref()).await }
        })
        .await?;
        let by_tokens = store.take();
        assert_eq!(ids(&paged), want, "{name}: paged by tokens");
        let streamed: Vec<Item> = q.stream().try_collect().await?;
        let streaming = store.take();
        assert_eq!(ids(&streamed), want, "{name}: streamed");
        println!(
            "{name}: {} items; by tokens {by_tokens:?} (bound {:?}), streamed {streaming:?} (bound {:?})",
            want.len(),
            case.by_tokens,
            case.streamed
        );
        if by_tokens.0 > case.by_tokens.0
            || by_tokens.1 > case.by_tokens.1
            || streaming.0 > case.streamed.0
            || streaming.1 > case.streamed.1
        {
            over.push(format!(
                "{name}: by tokens {by_tokens:?} (bound {:?}), streamed {streaming:?} (bound {:?})",
                case.by_tokens, case.streamed
            ));
        }
    }
    assert!(
        over.is_empty(),
        "paging read more than it did (shard queries, items read):\n{}",
        over.join("\n")
    );
    Ok(())
}

/// A `user` entity over 16 shards with classic indexes on `score` (a number) and `label` (the
/// score as a string), `count` records with `values` distinct scores: runs of ties across every
/// shard.
fn tied_users(
    count: u64,
    values: u64,
) -> Result<(Schema, MemoryStore), Box<dyn std::error::Error>> {
    let schema = Schema::from_ts_config(
        &json!({
            "hashKey": "hashKey",
            "rangeKey": "rangeKey",
            "entities": { "user": {
                "uniqueProperty": "userId", "timestampProperty": "created",
                "shardBumps": [{ "timestamp": 0, "charBits": 2, "chars": 2 }]
            } },
            "indexes": {
                "score": { "hashKey": "hashKey", "rangeKey": "score" },
                "label": { "hashKey": "hashKey", "rangeKey": "label" }
            },
            "propertyTranscodes": {
                "userId": "string", "created": "timestamp", "score": "int", "label": "string"
            }
        }),
        ShardSpace::Product,
    )?;
    let store = MemoryStore::new(TableDefinition::from_schema(&schema)?);
    let user = schema.entity("user")?;
    let writes = (0..count)
        .map(|i| {
            let item = serde_dynamo::to_item(json!({
                "userId": format!("u{i:05}"),
                "created": (i * 7_919) % count,
                "score": i % values,
                "label": format!("l{:05}", i % values),
            }))?;
            Ok(WriteRequest::Put(user.add_keys(&item)?))
        })
        .collect::<Result<Vec<_>, Box<dyn std::error::Error>>>()?;
    entity_manager_tests::block_on(store.batch_write(writes))?;
    Ok((schema, store))
}

/// Runs of ties on a classic index over 16 shards (a number range key, and the same as a
/// string: its spans are not averaged, its margins differ), paged to the end by tokens at small
/// limits: every record once, in score order, at no more than these counts (shard queries,
/// items read). A lane ranked before the previous page's last record reads its range key again and
/// asks for the records it returned there besides the page's share.
#[tokio::test]
async fn paging_ties_on_a_classic_index_reads_no_more_than_it_did() -> TestResult {
    let mut over = Vec::new();
    for (index, values, limit, page_size, throttle, descending, bound) in [
        ("score", 16, 10, 20, 4, false, (552, 3169)),
        ("score", 16, 25, 20, 4, false, (364, 2490)),
        ("score", 16, 10, 20, 4, true, (519, 2798)),
        ("score", 16, 40, 20, 4, true, (331, 2603)),
        ("score", 400, 25, 20, 4, false, (524, 2298)),
        ("score", 400, 40, 20, 4, true, (332, 1924)),
        ("score", 100, 10, 20, 4, false, (1606, 5045)),
        ("score", 100, 50, 20, 4, true, (268, 2294)),
        ("score", 16, 100, 5, 4, false, (351, 2033)),
        ("score", 400, 60, 8, 4, true, (242, 1842)),
        ("score", 100, 80, 6, 4, false, (332, 1843)),
        ("score", 16, 40, 20, 16, true, (378, 2925)),
        ("label", 16, 10, 20, 4, false, (552, 3141)),
        ("label", 400, 40, 20, 4, true, (668, 2022)),
        ("label", 100, 50, 20, 16, false, (365, 3356)),
        ("label", 400, 25, 20, 4, false, (776, 4232)),
        ("label", 1600, 20, 20, 4, false, (1288, 5632)),
        ("label", 1600, 50, 20, 16, true, (504, 2754)),
    ] {
        let (schema, inner) = tied_users(1_600, values)?;
        let store = Tally::new(inner);
        let q = Query::new(&store, schema.entity("user")?)
            .index(index)
            .shards_between(0, 10_000)
            .limit(limit)
            .page_size(page_size)
            .throttle(throttle)
            .descending(descending);
        let paged = to_the_end(|token| {
            let q = &q;
            async move { q.page(token.as_deref()).await }
        })
        .await?;
        let counts = store.take();
        let name = format!(
            "{index}: {values} scores, limit {limit}, page size {page_size}, throttle {throttle}, descending {descending}"
        );
        let scores: Vec<i64> = paged
            .iter()
            .map(|i| match i.get("score") {
                Some(AttributeValue::N(v)) => v.parse().unwrap_or(i64::MIN),
                _ => i64::MIN,
            })
            .collect();
        let mut sorted = scores.clone();
        sorted.sort_unstable();
        if descending {
            sorted.reverse();
        }
        assert_eq!(scores, sorted, "{name}: in score order");
        let mut got = ids_of(&paged, "userId");
        got.sort();
        let want: Vec<String> = (0..1_600).map(|i| format!("u{i:05}")).collect();
        assert_eq!(got, want, "{name}: every record once");
        println!("classic ties {name}: {counts:?} (bound {bound:?})");
        if counts.0 > bound.0 || counts.1 > bound.1 {
            over.push(format!("{name}: {counts:?} (bound {bound:?})"));
        }
    }
    assert!(
        over.is_empty(),
        "paging read more than it did (shard queries, items read):\n{}",
        over.join("\n")
    );
    Ok(())
}
