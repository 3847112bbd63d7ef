//! What a page costs in requests where only one lane can hold its items, and what ties cost: items read per item returned and shard queries per page when many records
//! share one range-key value, paged to the end (deterministic counts on `MemoryStore`; the
//! figures are in BENCHMARKS.md, "Ties"). Bounds from the issue: at most 3 items read per item
//! returned at every limit, at most 2 × the live lanes' shard queries on any page.
//!
//! `cargo test -p entity-manager-tests --test query_ties -- --nocapture` prints the figures.

use std::sync::Mutex;

use entity_manager::model::ShardSpace;
use entity_manager::query::QueryPageResult;
use entity_manager::query::untyped::{MultiQuery, Query};
use entity_manager::store::{
    MemoryStore, Page, QueryPage, Store, StoreError, TableDefinition, WriteRequest,
};
use entity_manager::{EntityExt as _, Schema, Table as _};
use entity_manager_tests::{block_on, forward_store};
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A `user` entity on `bumps`, with an index on `score` (a number): records tie on it.
fn schema(bumps: &[(u64, u8, u8)]) -> Result<Schema, Box<dyn std::error::Error>> {
    let bumps: Vec<_> = bumps
        .iter()
        .map(|(t, b, c)| json!({ "timestamp": t, "charBits": b, "chars": c }))
        .collect();
    Ok(Schema::from_ts_config(
        &json!({
            "hashKey": "hashKey",
            "rangeKey": "rangeKey",
            "entities": { "user": {
                "uniqueProperty": "userId", "timestampProperty": "created", "shardBumps": bumps
            } },
            "indexes": { "score": { "hashKey": "hashKey", "rangeKey": "score" } },
            "propertyTranscodes": { "userId": "string", "created": "timestamp", "score": "int" }
        }),
        ShardSpace::Product,
    )?)
}

/// `count` records, created over `0..created` (so over every bump before it), with `values`
/// distinct scores.
fn loaded(
    schema: &Schema,
    count: u64,
    created: u64,
    values: u64,
) -> Result<MemoryStore, Box<dyn std::error::Error>> {
    let store = MemoryStore::new(TableDefinition::from_schema(schema)?);
    let user = schema.entity("user")?;
    let writes = (0..count)
        .map(|i| {
            let item = serde_dynamo::to_item(json!({
                "userId": format!("u{i:05}"),
                "created": (i * 7_919) % created,
                "score": i % values,
            }))?;
            Ok(WriteRequest::Put(user.add_keys(&item)?))
        })
        .collect::<Result<Vec<_>, Box<dyn std::error::Error>>>()?;
    block_on(store.batch_write(writes))?;
    Ok(store)
}

/// What a paging to the end cost: items read per item returned, the most shard queries of one
/// page, the mean per page, the lanes, and the items returned.
type Cost = (f64, usize, f64, usize, usize);

/// One page of a query, from the token of the page before.
type Pager<'s> = Box<dyn Fn(Option<&str>) -> entity_manager::Result<QueryPageResult> + 's>;

/// The classic query of the `score` index.
fn classic<'s>(
    store: &'s MemoryStore,
    schema: &'s Schema,
) -> impl Fn(usize, bool) -> Pager<'s> + Copy + 's {
    move |limit, descending| {
        Box::new(move |token: Option<&str>| {
            let user = schema.entity("user")?;
            block_on(
                Query::new(store, user)
                    .index("score")
                    .shards_between(0, 10_000)
                    .limit(limit)
                    .descending(descending)
                    .page(token),
            )
        })
    }
}

/// Pages `query` (limit `limit`, direction `descending`) to the end, and what it cost.
fn paged<F>(
    query: impl Fn(usize, bool) -> F,
    limit: usize,
    descending: bool,
) -> Result<Cost, Box<dyn std::error::Error>>
where
    F: Fn(Option<&str>) -> entity_manager::Result<QueryPageResult>,
{
    let page_of = query(limit, descending);
    let (mut read, mut returned, mut pages, mut queries, mut most) =
        (0usize, 0usize, 0usize, 0usize, 0usize);
    let mut lanes;
    let mut token: Option<String> = None;
    loop {
        let page = page_of(token.as_deref())?;
        read += page.stats.items_read;
        returned += page.items.len();
        queries += page.stats.shard_queries;
        most = most.max(page.stats.shard_queries);
        lanes = page.stats.shards;
        pages += 1;
        token = page.next;
        if token.is_none() {
            break;
        }
    }
    // counts of one paging, far below 2^52
    #[allow(clippy::cast_precision_loss)]
    Ok((
        read as f64 / returned.max(1) as f64,
        most,
        queries as f64 / pages as f64,
        lanes,
        returned,
    ))
}

fn check<F>(
    name: &str,
    query: impl Fn(usize, bool) -> F + Copy,
    count: usize,
    limits: &[usize],
) -> TestResult
where
    F: Fn(Option<&str>) -> entity_manager::Result<QueryPageResult>,
{
    for &limit in limits {
        for descending in [false, true] {
            let (per_item, most, mean, lanes, returned) = paged(query, limit, descending)?;
            println!(
                "{name}, limit {limit}{}: {per_item:.2} items read per item returned, {mean:.2} shard queries a page (most {most}) over {lanes} lanes",
                if descending { ", descending" } else { "" }
            );
            assert_eq!(returned, count, "{name}, limit {limit}: every record once");
            assert!(
                per_item <= 3.0,
                "{name}, limit {limit}: {per_item:.2} items read per item returned"
            );
            assert!(
                most <= 2 * lanes,
                "{name}, limit {limit}: {most} shard queries on one page over {lanes} lanes"
            );
        }
    }
    Ok(())
}

/// 300 records over 68 lanes (4 shards, then 64), all with one score.
#[test]
fn one_value_over_68_lanes() -> TestResult {
    let schema = schema(&[(0, 2, 1), (1_000, 5, 2)])?;
    let store = loaded(&schema, 300, 2_000, 1)?;
    check(
        "300 records, 1 value, 68 lanes",
        classic(&store, &schema),
        300,
        &[1, 7, 100],
    )
}

/// 10,000 records over 64 lanes with 3 scores.
#[test]
fn three_values_over_64_lanes() -> TestResult {
    let schema = schema(&[(0, 5, 2)])?;
    let store = loaded(&schema, 10_000, 2_000, 3)?;
    check(
        "10,000 records, 3 values, 64 lanes",
        classic(&store, &schema),
        10_000,
        &[1, 7, 100],
    )
}

/// A request as [`Counting`] records it: the partition read and the limit.
type Request = (String, Option<u32>);

/// A store that records the `Limit` (and the partition) of every query it serves.
struct Counting {
    inner: MemoryStore,
    limits: Mutex<Vec<Option<u32>>>,
    partitions: Mutex<Vec<String>>,
}

impl Counting {
    fn new(inner: MemoryStore) -> Self {
        Self {
            inner,
            limits: Mutex::new(Vec::new()),
            partitions: Mutex::new(Vec::new()),
        }
    }

    /// The requests served since the last call: the partition read and the limit of each.
    fn take(&self) -> Result<Vec<Request>, Box<dyn std::error::Error>> {
        let limits = std::mem::take(&mut *self.limits.lock().map_err(|_| "poisoned")?);
        let partitions = std::mem::take(&mut *self.partitions.lock().map_err(|_| "poisoned")?);
        Ok(partitions.into_iter().zip(limits).collect())
    }
}

impl Store for Counting {
    forward_store!(inner: definition, name, put_item, get_item, delete_item, batch_write);
    forward_store!(inner: batch_get, transact_write, update_item, transact_get, scan_page);

    fn query_page(
        &self,
        request: &QueryPage,
    ) -> impl Future<Output = Result<Page, StoreError>> + Send {
        if let Ok(mut limits) = self.limits.lock() {
            limits.push(request.limit);
        }
        if let (Ok(mut partitions), entity_manager::AttributeValue::S(hash)) =
            (self.partitions.lock(), &request.hash_key)
        {
            partitions.push(hash.clone());
        }
        self.inner.query_page(request)
    }
}

/// A window that holds one lane (the unsharded bump before the first sharded one): every page
/// is one request asking for the page's limit, as a hand-written `Query` would be, although
/// the page size (10) is smaller than the page.
#[test]
fn a_window_of_one_lane_reads_each_page_in_one_request() -> TestResult {
    let schema = schema(&[(0, 1, 0), (1_000, 2, 1)])?;
    let store = loaded(&schema, 200, 2_000, 50)?;
    let counting = Counting::new(store);
    let user = schema.entity("user")?;
    let query = Query::new(&counting, user)
        .index("score")
        .shards_between(0, 999)
        .limit(25);
    let mut token: Option<String> = None;
    let mut returned = 0;
    loop {
        let page = block_on(query.page(token.as_deref()))?;
        let limits: Vec<_> = counting.take()?.into_iter().map(|(_, l)| l).collect();
        assert_eq!(limits, [Some(25)], "one request of the page's limit");
        assert_eq!(page.stats.shards, 1);
        returned += page.items.len();
        token = page.next;
        if token.is_none() {
            break;
        }
    }
    // the records created before the first sharded bump: (i * 7,919) % 2,000 < 1,000
    let expected = (0..200u64).filter(|i| (i * 7_919) % 2_000 < 1_000).count();
    assert_eq!(returned, expected);
    Ok(())
}

/// The multi-attribute side: members of a club, indexed by group (sharded) on (score, rank).
#[derive(entity_manager::Table)]
#[table(entities(Member, Solo))]
struct Club;

/// 68 lanes: 4 shards, then 64.
#[derive(entity_manager::Entity, serde::Serialize, serde::Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
#[entity(table = Club, unique = member_id, timestamp = created)]
#[shard_bumps(bumps = [
    bump(timestamp = 0, char_bits = 2, chars = 1),
    bump(timestamp = 1_000, char_bits = 5, chars = 2)
])]
#[index(name = "byGroup", hash = [group], range = [score, rank], sharded)]
#[allow(clippy::struct_field_names)] // fields are named after their attributes
struct Member {
    #[transcode("string")]
    member_id: String,
    #[transcode("timestamp")]
    created: u64,
    group: String,
    score: i64,
    rank: i64,
}

/// One lane before time 1,000 (unsharded), 4 after.
#[derive(entity_manager::Entity, serde::Serialize, serde::Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
#[entity(table = Club, unique = solo_id, timestamp = created)]
#[shard_bumps(bumps = [
    bump(timestamp = 0, char_bits = 1, chars = 0),
    bump(timestamp = 1_000, char_bits = 2, chars = 1)
])]
#[index(name = "byGroup", hash = [group], range = [score, rank], sharded)]
#[allow(clippy::struct_field_names)] // fields are named after their attributes
struct Solo {
    #[transcode("string")]
    solo_id: String,
    #[transcode("timestamp")]
    created: u64,
    group: String,
    score: i64,
    rank: i64,
}

/// A club of `count` members and as many solos, created over `0..2,000`, with `values`
/// distinct sort tuples.
fn club(count: u64, values: u64) -> Result<MemoryStore, Box<dyn std::error::Error>> {
    let club = MemoryStore::new(TableDefinition::from_schema(Club::schema()?)?);
    let mut writes = Vec::new();
    for i in 0..count {
        let (created, score, rank) = ((i * 7_919) % 2_000, i64::try_from(i % values)?, 7);
        let member = Member {
            member_id: format!("m{i:05}"),
            created,
            group: "g".into(),
            score,
            rank,
        };
        let solo = Solo {
            solo_id: format!("s{i:05}"),
            created,
            group: "g".into(),
            score,
            rank,
        };
        writes.push(WriteRequest::Put(member.to_item()?));
        writes.push(WriteRequest::Put(solo.to_item()?));
    }
    block_on(club.batch_write(writes))?;
    Ok(club)
}

/// The multi-attribute query of the club's `byGroup` index over `E`'s shards.
fn multi<'s, E: entity_manager::EntityExt>(
    store: &'s MemoryStore,
    window: (u64, u64),
) -> impl Fn(usize, bool) -> Pager<'s> + Copy + 's {
    move |limit, descending| {
        Box::new(move |token: Option<&str>| {
            block_on(
                MultiQuery::new(store, E::schema()?, "byGroup")
                    .hash([entity_manager::AttributeValue::S("g".into())])
                    .shards_between(window.0, window.1)
                    .limit(limit)
                    .descending(descending)
                    .page(token),
            )
        })
    }
}

/// 300 members over 68 lanes sharing one sort tuple: `MultiQuery` runs on the same engine, at
/// the same bounds.
#[test]
fn one_tuple_over_68_lanes() -> TestResult {
    let store = club(300, 1)?;
    check(
        "MultiQuery: 300 records, 1 tuple, 68 lanes",
        multi::<Member>(&store, (0, 10_000)),
        300,
        &[1, 7, 100],
    )
}

/// 3,000 members over 68 lanes with 3 sort tuples.
#[test]
fn three_tuples_over_68_lanes() -> TestResult {
    let store = club(3_000, 3)?;
    check(
        "MultiQuery: 3,000 records, 3 tuples, 68 lanes",
        multi::<Member>(&store, (0, 10_000)),
        3_000,
        &[1, 7, 100],
    )
}

/// A `MultiQuery` whose window holds one lane sends one request of the page's limit a page.
#[test]
fn a_multi_query_of_one_lane_reads_each_page_in_one_request() -> TestResult {
    let counting = Counting::new(club(200, 50)?);
    let mut token: Option<String> = None;
    let mut returned = 0;
    loop {
        let page = block_on(
            MultiQuery::new(&counting, Solo::schema()?, "byGroup")
                .hash([entity_manager::AttributeValue::S("g".into())])
                .shards_between(0, 999)
                .limit(25)
                .page_size(10)
                .page(token.as_deref()),
        )?;
        let limits: Vec<_> = counting.take()?.into_iter().map(|(_, l)| l).collect();
        assert_eq!(limits, [Some(25)], "one request of the page's limit");
        assert_eq!(page.stats.shards, 1);
        returned += page.items.len();
        token = page.next;
        if token.is_none() {
            break;
        }
    }
    let expected = (0..200u64).filter(|i| (i * 7_919) % 2_000 < 1_000).count();
    assert_eq!(returned, expected);
    Ok(())
}

// --- how a page schedules its reads over two lanes (the merge's counts, not only its results) --

/// Two lanes (one bump of two shards), each with its records' scores: the store (counting its
/// requests) and the two partitions, in the order of `scores`.
fn two_lanes(
    scores: [&[i64]; 2],
) -> Result<(Schema, Counting, [String; 2]), Box<dyn std::error::Error>> {
    let schema = schema(&[(0, 1, 1)])?;
    let store = MemoryStore::new(TableDefinition::from_schema(&schema)?);
    let user = schema.entity("user")?;
    let mut partitions: Vec<String> = Vec::new();
    let mut left = [scores[0].iter(), scores[1].iter()];
    let mut writes = Vec::new();
    for i in 0..1_000 {
        let record = |score: i64| {
            serde_dynamo::to_item(
                json!({ "userId": format!("u{i:05}"), "created": 5, "score": score }),
            )
        };
        let keyed = user.add_keys(&record(0)?)?;
        let Some(entity_manager::AttributeValue::S(hash)) = keyed.get("hashKey") else {
            return Err("no hash key".into());
        };
        if !partitions.contains(hash) {
            partitions.push(hash.clone());
        }
        let lane = partitions
            .iter()
            .position(|p| p == hash)
            .unwrap_or_default();
        if let Some(&score) = left[lane].next() {
            writes.push(WriteRequest::Put(user.add_keys(&record(score)?)?));
        }
    }
    block_on(store.batch_write(writes))?;
    let [a, b] = <[String; 2]>::try_from(partitions).map_err(|_| "not two partitions")?;
    Ok((schema, Counting::new(store), [a, b]))
}

/// The first page of 40 of the `score` index over the two lanes.
fn first_page(
    schema: &Schema,
    counting: &Counting,
) -> Result<QueryPageResult, Box<dyn std::error::Error>> {
    let user = schema.entity("user")?;
    Ok(block_on(
        Query::new(counting, user)
            .index("score")
            .shards_between(0, 10)
            .limit(40)
            .page(None),
    )?)
}

/// A lane that runs out with its last item still buffered is dead once that item is emitted:
/// the one lane left then reads what the page still wants in one request. (Mutation testing:
/// the count of dead lanes in `Merge::pop`, `+=` → `*=`, survived the oracles, which check
/// results only; with it, the live lane reads shares of a page size, one request after another.)
#[test]
fn the_last_live_lane_reads_the_rest_of_the_page_in_one_request() -> TestResult {
    let many: Vec<i64> = (1..=60).collect();
    let (schema, counting, [one, other]) = two_lanes([&[0], &many])?;
    let page = first_page(&schema, &counting)?;
    let scores: Vec<i64> = page
        .items
        .iter()
        .filter_map(|item| match item.get("score") {
            Some(entity_manager::AttributeValue::N(n)) => n.parse().ok(),
            _ => None,
        })
        .collect();
    assert_eq!(scores, (0..40).collect::<Vec<i64>>());
    let requests = counting.take()?;
    println!("{requests:?}");
    assert_eq!(
        requests.iter().filter(|(p, _)| *p == one).count(),
        1,
        "{requests:?}"
    );
    let rest: Vec<_> = requests.iter().filter(|(p, _)| *p == other).collect();
    assert!(rest.len() <= 2, "{requests:?}");
    Ok(())
}

/// A lane read past the next item to emit is not read again before the lanes short of it:
/// the head of the merge bounds which lanes a round reads. (Mutation testing:
/// `Merge::head_threshold` → `None` survived the oracles; with it, every lane not in flight
/// is read each round, the one already far ahead too.)
#[test]
fn a_lane_read_past_the_head_waits_for_the_others() -> TestResult {
    let early: Vec<i64> = (0..60).collect();
    let late: Vec<i64> = (1_000..1_020).collect();
    let (schema, counting, [first, ahead]) = two_lanes([&early, &late])?;
    let page = first_page(&schema, &counting)?;
    assert_eq!(page.items.len(), 40);
    let requests = counting.take()?;
    println!("{requests:?}");
    assert!(requests.iter().any(|(p, _)| *p == first), "{requests:?}");
    assert_eq!(
        requests.iter().filter(|(p, _)| *p == ahead).count(),
        1,
        "{requests:?}"
    );
    Ok(())
}
