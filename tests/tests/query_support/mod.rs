//! Shared by the query tests: the fixture entity, random datasets and queries, and the
//! brute-force oracle.

#![allow(dead_code, unreachable_pub)]

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap, HashSet};

use entity_manager::model::ShardSpace;
use entity_manager::query::QueryPageResult;
use entity_manager::query::untyped::Query;
use entity_manager::store::{
    Comparison, Filter, MemoryStore, QueryPage, RangeCondition, Store, TableDefinition,
    WriteRequest,
};
use entity_manager::{AttributeValue, EntitySchema, Error, Item, Schema};
use entity_manager_tests::block_on;
use proptest::prelude::*;
use serde_json::json;

// ---------------------------------------------------------------------------------------------
// fixture: a `user` entity with a numeric and a string range key index, on a configurable
// shard schedule

pub fn schema(bumps: &[(u64, u8, u8)], space: ShardSpace) -> Result<Schema, Error> {
    let bumps: Vec<_> = bumps
        .iter()
        .map(|(t, b, c)| json!({ "timestamp": t, "charBits": b, "chars": c }))
        .collect();
    let config = json!({
        "hashKey": "hashKey",
        "rangeKey": "rangeKey",
        "entities": {
            "user": { "uniqueProperty": "userId", "timestampProperty": "created", "shardBumps": bumps },
            "other": { "uniqueProperty": "userId", "timestampProperty": "created" }
        },
        "generatedProperties": {
            "unsharded": { "nameRK": ["name", "userId"] },
            "sharded": { "groupPK": ["group"] }
        },
        "indexes": {
            "created": { "hashKey": "hashKey", "rangeKey": "created" },
            "name": { "hashKey": "hashKey", "rangeKey": "nameRK" },
            "groupCreated": { "hashKey": "groupPK", "rangeKey": "created" }
        },
        "propertyTranscodes": {
            "userId": "string", "created": "timestamp", "name": "string", "group": "string", "score": "int"
        }
    });
    Ok(Schema::from_ts_config(&config, space)?)
}

#[derive(Clone, Debug)]
pub struct Record {
    pub id: String,
    pub created: u64,
    pub name: String,
    pub group: String,
    pub score: i64,
}

impl Record {
    pub fn item(&self) -> Result<Item, serde_dynamo::Error> {
        serde_dynamo::to_item(json!({
            "userId": self.id, "created": self.created, "name": self.name,
            "group": self.group, "score": self.score
        }))
    }
}

pub fn load(
    schema: &Schema,
    records: &[Record],
) -> Result<MemoryStore, Box<dyn std::error::Error>> {
    let store = MemoryStore::new(TableDefinition::from_schema(schema)?);
    let user = schema.entity("user")?;
    let writes: Result<Vec<WriteRequest>, Box<dyn std::error::Error>> = records
        .iter()
        .map(|r| Ok(WriteRequest::Put(user.add_keys(&r.item()?)?)))
        .collect();
    block_on(store.batch_write(writes?))?;
    Ok(store)
}

pub fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

pub fn n(v: u64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

pub fn text<'i>(item: &'i Item, attr: &str) -> &'i str {
    match item.get(attr) {
        Some(AttributeValue::S(v) | AttributeValue::N(v)) => v,
        _ => "",
    }
}

// ---------------------------------------------------------------------------------------------
// the oracle

/// Orders range keys as DynamoDB does: numbers numerically, strings by bytes.
pub fn order(a: &AttributeValue, b: &AttributeValue) -> Ordering {
    match (a, b) {
        (AttributeValue::N(x), AttributeValue::N(y)) => x
            .parse::<i128>()
            .unwrap_or(0)
            .cmp(&y.parse::<i128>().unwrap_or(0)),
        (AttributeValue::S(x), AttributeValue::S(y)) => x.as_bytes().cmp(y.as_bytes()),
        _ => Ordering::Equal,
    }
}

pub fn holds(condition: Option<&RangeCondition>, v: &AttributeValue) -> bool {
    use RangeCondition as R;
    match condition {
        None => true,
        Some(R::Eq(x)) => order(v, x) == Ordering::Equal,
        Some(R::Lt(x)) => order(v, x) == Ordering::Less,
        Some(R::Le(x)) => order(v, x) != Ordering::Greater,
        Some(R::Gt(x)) => order(v, x) == Ordering::Greater,
        Some(R::Ge(x)) => order(v, x) != Ordering::Less,
        Some(R::Between(a, b)) => order(v, a) != Ordering::Less && order(v, b) != Ordering::Greater,
        Some(R::BeginsWith(AttributeValue::S(p))) => {
            matches!(v, AttributeValue::S(x) if x.starts_with(p.as_str()))
        }
        Some(R::BeginsWith(_)) => false,
    }
}

/// Every item of `index` in the query's shards that meets the condition and the filter (score
/// at least `min_score`), in range-key order.
#[allow(clippy::too_many_arguments)]
pub fn oracle(
    user: EntitySchema<'_>,
    records: &[Record],
    index: &str,
    window: (u64, u64),
    condition: Option<&RangeCondition>,
    min_score: Option<i64>,
    descending: bool,
    item: &Item,
) -> Result<Vec<Item>, Box<dyn std::error::Error>> {
    let idx = user.index(index)?;
    let space: HashSet<String> = user
        .hash_key_space(&idx.hash_key, item, window.0, window.1)?
        .into_iter()
        .collect();
    let range_attr = idx.range_key.to_string();
    let mut out = Vec::new();
    for r in records {
        let keyed = user.add_keys(&r.item()?)?;
        let (Some(AttributeValue::S(hash)), Some(rk)) =
            (keyed.get(&*idx.hash_key), keyed.get(&range_attr))
        else {
            continue;
        };
        if space.contains(hash) && holds(condition, rk) && min_score.is_none_or(|m| r.score >= m) {
            out.push(keyed);
        }
    }
    out.sort_by(|a, b| {
        let o = order(&a[range_attr.as_str()], &b[range_attr.as_str()]);
        if descending { o.reverse() } else { o }
    });
    Ok(out)
}

/// Pages to the end; returns the pages.
pub fn page_all<S: Store>(query: &Query<'_, S>) -> Result<Vec<QueryPageResult>, Error> {
    let mut pages = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = block_on(query.page(token.as_deref()))?;
        token.clone_from(&page.next);
        pages.push(page);
        if token.is_none() {
            return Ok(pages);
        }
        if pages.len() > 100_000 {
            return Err(Error::InvalidQuery {
                entity: "user".into(),
                reason: "did not terminate".into(),
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// random datasets and queries

/// The records of one paging: `count` records, `created` drawn from `spread` values (few: long
/// runs of ties), on one or two shard bumps.
pub fn dataset(count: usize, spread: u64, seed: u64) -> Vec<Record> {
    let mut rng = entity_manager_tests::XorShift::new(seed);
    let mut next = move |m: u64| rng.below(m);
    (0..count)
        .map(|i| Record {
            id: format!("u{i}-{}", next(1_000)),
            created: next(spread),
            name: ["ann", "bob", "cy"][usize::try_from(next(3)).unwrap_or(0)].to_owned(),
            group: "g1".to_owned(),
            score: 0,
        })
        .collect()
}

/// The puts that store `records` (with their keys) in a table of `schema`.
pub fn writes_of(
    schema: &Schema,
    records: &[Record],
) -> Result<Vec<WriteRequest>, Box<dyn std::error::Error>> {
    let user = schema.entity("user")?;
    records
        .iter()
        .map(|r| Ok(WriteRequest::Put(user.add_keys(&r.item()?)?)))
        .collect()
}

prop_compose! {
    pub fn records(max: usize)(
        count in prop_oneof![4 => 0usize..120, 2 => 0usize..600, 1 => 0..=max],
        seed in any::<u64>(),
        clustered in proptest::bool::weighted(0.3),
    ) -> Vec<Record> {
        // a small deterministic generator keeps shrinking cheap
        let mut state = seed | 1;
        let mut next = move |m: u64| { state ^= state << 13; state ^= state >> 7; state ^= state << 17; state % m };
        (0..count)
            .map(|i| Record {
                id: format!("u{i}-{}", next(1_000_000)),
                // uniform, or dense clusters in a sparse range: a page's span then says little
                // about the next one's
                created: if clustered && next(4) != 0 { 700 * next(4) + next(20) } else { next(3_000) },
                name: ["ann", "bob", "cy", "dee", "eve"][usize::try_from(next(5)).unwrap_or(0)].to_owned(),
                group: ["g1", "g2"][usize::try_from(next(2)).unwrap_or(0)].to_owned(),
                score: i64::try_from(next(100)).unwrap_or(0) - 50,
            })
            .collect()
    }
}

/// 1–3 bumps with at most 64 shards each under either rule.
pub fn bumps() -> impl Strategy<Value = (Vec<(u64, u8, u8)>, ShardSpace)> {
    prop_oneof![Just(ShardSpace::Product), Just(ShardSpace::Power)].prop_flat_map(|space| {
        proptest::collection::vec((0u64..3_000, 1u8..=5, 1u8..=3), 1..=3).prop_map(move |raw| {
            let mut raw = raw;
            raw.sort_by_key(|b| b.0);
            raw.dedup_by_key(|b| b.0);
            let mut chars = 0u8;
            let bumps = raw
                .into_iter()
                .filter_map(|(t, bits, extra)| {
                    let c = chars + extra;
                    let shards = match space {
                        ShardSpace::Product => u32::from(c) << bits,
                        ShardSpace::Power => 1u32 << (u32::from(bits) * u32::from(c)).min(31),
                    };
                    (shards <= 64).then(|| {
                        chars = c;
                        (t, bits, c)
                    })
                })
                .collect();
            (bumps, space)
        })
    })
}

pub fn window() -> impl Strategy<Value = (u64, u64)> {
    (0u64..3_500, 0u64..3_500).prop_map(|(a, b)| (a.min(b), a.max(b)))
}

pub fn condition_on_created() -> impl Strategy<Value = Option<RangeCondition>> {
    prop_oneof![
        3 => Just(None),
        1 => (0u64..3_000).prop_map(|v| Some(RangeCondition::Ge(n(v)))),
        1 => (0u64..3_000).prop_map(|v| Some(RangeCondition::Lt(n(v)))),
        1 => (0u64..3_000, 0u64..3_000).prop_map(|(a, b)| Some(RangeCondition::Between(n(a.min(b)), n(a.max(b))))),
        1 => (0u64..3_000).prop_map(|v| Some(RangeCondition::Eq(n(v)))),
    ]
}

pub fn condition_on_name() -> impl Strategy<Value = Option<RangeCondition>> {
    prop_oneof![
        2 => Just(None),
        1 => Just(Some(RangeCondition::BeginsWith(s("name#b")))),
        1 => Just(Some(RangeCondition::Gt(s("name#cy")))),
        1 => Just(Some(RangeCondition::Le(s("name#dee|")))),
    ]
}

pub fn score_filter(min: Option<i64>) -> Option<Filter> {
    min.map(|m| Filter::compare("score", Comparison::Ge, AttributeValue::N(m.to_string())))
}

pub fn uniform(count: usize, seed: u64) -> Vec<Record> {
    let mut rng = entity_manager_tests::XorShift::new(seed);
    let mut next = move |m: u64| rng.below(m);
    (0..count)
        .map(|i| Record {
            id: format!("user-{i:05}-{}", next(1 << 30)),
            created: 1_000 + next(10_000_000),
            name: "x".into(),
            group: "g1".into(),
            score: 0,
        })
        .collect()
}

/// `uniform(count, seed)` with every `created` folded into `0..span` (many equal or close keys).
pub fn uniform_within(count: usize, seed: u64, span: u64) -> Vec<Record> {
    uniform(count, seed)
        .into_iter()
        .map(|mut r| {
            r.created %= span;
            r
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// query v2: projected indexes, the table as a source, `created_between`

/// The fixture with projected indexes: `created` `KEYS_ONLY`, `name` `INCLUDE` `score`, and
/// `keys`, `KEYS_ONLY` on the table's own keys (the one index a query can share both keys with: the
/// table itself).
pub fn schema_v2(bumps: &[(u64, u8, u8)], space: ShardSpace) -> Result<Schema, Error> {
    let bumps: Vec<_> = bumps
        .iter()
        .map(|(t, b, c)| json!({ "timestamp": t, "charBits": b, "chars": c }))
        .collect();
    let config = json!({
        "hashKey": "hashKey",
        "rangeKey": "rangeKey",
        "entities": {
            "user": { "uniqueProperty": "userId", "timestampProperty": "created", "shardBumps": bumps }
        },
        "generatedProperties": {
            "unsharded": { "nameRK": ["name", "userId"] },
            "sharded": { "groupPK": ["group"] }
        },
        "indexes": {
            "created": { "hashKey": "hashKey", "rangeKey": "created", "projections": [] },
            "name": { "hashKey": "hashKey", "rangeKey": "nameRK", "projections": ["score"] },
            "keys": { "hashKey": "hashKey", "rangeKey": "rangeKey", "projections": [] }
        },
        "propertyTranscodes": {
            "userId": "string", "created": "timestamp", "name": "string", "group": "string", "score": "int"
        }
    });
    Ok(Schema::from_ts_config(&config, space)?)
}

/// What a v2 case reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// One GSI of [`schema_v2`].
    Index(&'static str),
    /// The table.
    Table,
    /// The table and the `keys` index (same hash and range key: exact mode, every record in
    /// both).
    TableAndKeys,
}

/// One v2 case: a source, a window (of shards, or of records with `created`), paging, and
/// an optional projection.
#[derive(Clone, Debug)]
pub struct Case {
    pub source: Source,
    pub window: (u64, u64),
    pub created: bool,
    pub limit: usize,
    pub descending: bool,
    pub projection: Option<Vec<&'static str>>,
}

pub fn source() -> impl Strategy<Value = Source> {
    prop_oneof![
        Just(Source::Index("created")),
        Just(Source::Index("name")),
        Just(Source::Index("keys")),
        Just(Source::Table),
        Just(Source::TableAndKeys),
    ]
}

pub fn case() -> impl Strategy<Value = Case> {
    (
        source(),
        window(),
        any::<bool>(),
        prop_oneof![3 => 1usize..12, 1 => 1usize..=120],
        any::<bool>(),
        prop_oneof![
            Just(None),
            Just(Some(vec![])),
            Just(Some(vec!["score"])),
            Just(Some(vec!["userId"])),
        ],
    )
        .prop_map(
            |(source, window, created, limit, descending, projection)| Case {
                source,
                window,
                created,
                limit,
                descending,
                projection,
            },
        )
}

/// The oracle of a v2 case: every record of the window's shards (created in the window, with
/// `created_between`), in the query's order on `MemoryStore`: range key, then table hash key
/// (the lane), then table range key (the order `MemoryStore` keeps equal keys in, in a lane).
pub fn expected_records(
    user: EntitySchema<'_>,
    records: &[Record],
    case: &Case,
) -> Result<Vec<Item>, Box<dyn std::error::Error>> {
    let range_attr = match case.source {
        Source::Index(name) => range_attr_of(name),
        _ => "rangeKey",
    };
    let space: HashSet<String> = user
        .hash_key_space("hashKey", &Item::default(), case.window.0, case.window.1)?
        .into_iter()
        .collect();
    let mut expected: Vec<Item> = Vec::new();
    for r in records {
        let keyed = user.add_keys(&r.item()?)?;
        let in_space =
            matches!(keyed.get("hashKey"), Some(AttributeValue::S(h)) if space.contains(h));
        let in_window = !case.created || (case.window.0..=case.window.1).contains(&r.created);
        if in_space && in_window {
            expected.push(keyed);
        }
    }
    expected.sort_by(|a, b| {
        let o = order(&a[range_attr], &b[range_attr])
            .then_with(|| order(&a["hashKey"], &b["hashKey"]))
            .then_with(|| order(&a["rangeKey"], &b["rangeKey"]));
        if case.descending { o.reverse() } else { o }
    });
    Ok(expected)
}

/// The range key attribute of an index of [`schema_v2`].
fn range_attr_of(index: &str) -> &'static str {
    match index {
        "created" => "created",
        "name" => "nameRK",
        _ => "rangeKey",
    }
}

/// `items` (records of one index of `store`, keyed) in a query's order on that store: range
/// key, then table hash key (the lane), then the order the store itself keeps equal range keys
/// in within a partition (`MemoryStore`: table range key; `DynamoDB` Local: a hash of the table
/// key), read from the store partition by partition with plain `Query` paging; reversed when
/// descending.
pub async fn in_store_order<S: Store>(
    store: &S,
    index: Option<&str>,
    range_attr: &str,
    mut items: Vec<Item>,
    descending: bool,
) -> Result<Vec<Item>, Box<dyn std::error::Error>> {
    let key = |item: &Item| {
        (
            text(item, "hashKey").to_owned(),
            text(item, "rangeKey").to_owned(),
        )
    };
    let lanes: BTreeSet<String> = items
        .iter()
        .map(|i| text(i, "hashKey").to_owned())
        .collect();
    let mut seq: HashMap<(String, String), usize> = HashMap::new();
    for lane in lanes {
        let mut start: Option<Item> = None;
        loop {
            let mut request =
                QueryPage::new(AttributeValue::S(lane.clone())).start_after(start.take());
            if let Some(index) = index {
                request = request.index(index);
            }
            let page = store.query_page(&request).await?;
            for item in &page.items {
                let next = seq.len();
                seq.insert(key(item), next);
            }
            match page.last_evaluated_key {
                Some(lek) => start = Some(lek),
                None => break,
            }
        }
    }
    items.sort_by(|a, b| {
        order(&a[range_attr], &b[range_attr])
            .then_with(|| {
                text(a, "hashKey")
                    .as_bytes()
                    .cmp(text(b, "hashKey").as_bytes())
            })
            .then_with(|| seq.get(&key(a)).cmp(&seq.get(&key(b))))
    });
    if descending {
        items.reverse();
    }
    Ok(items)
}

/// The records of a v2 case in the query's order on `store` (see [`in_store_order`]).
async fn expected_in_store_order<S: Store>(
    store: &S,
    user: EntitySchema<'_>,
    records: &[Record],
    case: &Case,
) -> Result<Vec<Item>, Box<dyn std::error::Error>> {
    let (index, range_attr) = match case.source {
        Source::Index(name) => (Some(name), range_attr_of(name)),
        Source::Table | Source::TableAndKeys => (None, "rangeKey"),
    };
    in_store_order(
        store,
        index,
        range_attr,
        expected_records(user, records, case)?,
        case.descending,
    )
    .await
}

/// The query of a v2 case.
pub fn v2_query<'s, S: Store>(store: &'s S, user: EntitySchema<'s>, case: &Case) -> Query<'s, S> {
    let start = Query::new(store, user);
    let mut query = match case.source {
        Source::Index(name) => start.index(name),
        Source::Table => start.table(),
        Source::TableAndKeys => start.table().index("keys"),
    };
    query = if case.created {
        query.created_between(case.window.0, case.window.1)
    } else {
        query.shards_between(case.window.0, case.window.1)
    };
    query = query.limit(case.limit).descending(case.descending);
    if let Some(projection) = &case.projection {
        query = query.projection(projection.iter().copied());
    }
    query
}

/// Runs a v2 case on `store` (loaded with `records` under [`schema_v2`]) and checks it against
/// the records themselves: the same records in (range key, unique value) order, each once,
/// full pages, every attribute read equal to the stored one, the unique value always there.
pub async fn check_case<S: Store>(
    store: &S,
    user: EntitySchema<'_>,
    records: &[Record],
    case: &Case,
) -> Result<(), Box<dyn std::error::Error>> {
    let query = v2_query(store, user, case);
    let projects = |attr: &str| match case.source {
        Source::Index("created" | "keys") | Source::TableAndKeys => false,
        Source::Index(_) => attr == "score",
        Source::Table => true,
    };
    let projects_created = matches!(case.source, Source::Index("created") | Source::Table);
    let asks_score = case
        .projection
        .as_ref()
        .is_some_and(|p| p.contains(&"score"));
    // `created_between` over an index that does not project the timestamp (INCLUDE `score`,
    // KEYS_ONLY on the table keys), or a projection asking an index for what it does not
    // project: refused before any read, saying which attribute
    let refused = match (
        case.created && !projects_created,
        asks_score && !projects("score") && case.source != Source::Table,
    ) {
        (true, _) => Some("created"),
        (false, true) => Some("score"),
        (false, false) => None,
    };
    if let Some(attr) = refused {
        return match query.page(None).await {
            Err(Error::InvalidQuery { reason, .. })
                if reason.contains(attr) || reason.contains("score") =>
            {
                Ok(())
            }
            other => Err(format!("expected InvalidQuery about `{attr}`, got {other:?}").into()),
        };
    }
    let mut pages = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = query.page(token.as_deref()).await?;
        // every shard query asks for its consumed capacity: a page that read items consumed
        // some, on either store (DynamoDB Local reports 0 for some empty reads, where
        // MemoryStore and DynamoDB count half a unit)
        if page.stats.items_read > 0 && page.stats.consumed_capacity <= 0.0 {
            return Err(format!("no consumed capacity reported: {:?}", page.stats).into());
        }
        token = page.next;
        pages.push(page.items);
        if token.is_none() {
            break;
        }
        if pages.len() > 10_000 {
            return Err("did not terminate".into());
        }
    }
    let expected = expected_in_store_order(store, user, records, case).await?;
    let mut remaining = expected.len();
    for page in &pages {
        if page.len() != case.limit.min(remaining) {
            return Err(format!(
                "a page of {} items, {} remaining, limit {}",
                page.len(),
                remaining,
                case.limit
            )
            .into());
        }
        remaining -= page.len();
    }
    let got: Vec<&Item> = pages.iter().flatten().collect();
    let got_ids: Vec<&str> = got.iter().map(|i| text(i, "userId")).collect();
    let want_ids: Vec<&str> = expected.iter().map(|i| text(i, "userId")).collect();
    if got_ids != want_ids {
        return Err(format!("got {got_ids:?}\nwant {want_ids:?}").into());
    }
    for (item, want) in got.iter().zip(&expected) {
        for (attr, value) in item.iter() {
            if want.get(attr) != Some(value) {
                return Err(
                    format!("attribute {attr} = {value:?}, stored {:?}", want.get(attr)).into(),
                );
            }
        }
        let asked = |attr: &str| case.projection.as_ref().is_none_or(|p| p.contains(&attr));
        // over the table and the `keys` index, an item comes from either (all attributes, or
        // the keys): only the values are checked
        let sources_agree = case.source != Source::TableAndKeys;
        for attr in ["score", "name", "group"]
            .into_iter()
            .filter(|_| sources_agree)
        {
            let should = asked(attr) && projects(attr);
            if item.contains_key(attr) != should {
                return Err(format!(
                    "attribute {attr} present: {}, expected {should} ({case:?})",
                    item.contains_key(attr)
                )
                .into());
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// items of another key form

/// Pages a query to the end on any store (at most 10,000 pages: a paging that repeats itself
/// fails).
pub async fn page_all_on<S: Store>(query: &Query<'_, S>) -> Result<Vec<Vec<Item>>, Error> {
    let mut items = Vec::new();
    let mut token: Option<String> = None;
    for _ in 0..10_000 {
        let page = query.page(token.as_deref()).await?;
        items.push(page.items);
        token = page.next;
        if token.is_none() {
            return Ok(items);
        }
    }
    Err(Error::InvalidQuery {
        entity: "user".into(),
        reason: "did not terminate".into(),
    })
}

/// Items written by hand into `user`'s partitions, with a table range key that is not of the
/// entity's `userId#value` form (or with a unique value that begins with the token's marker
/// `\0`), are records like any other to the query: paged one by one and three by three, on the
/// table, on an index and on both (union mode: at most once per source, never twice on a
/// page), both directions, each comes back exactly once (in order, on the index), and the
/// paging ends. Before, a page that ended on such an item kept the previous page's boundary, so
/// the next page repeated it forever; and every such item of a page after the first was taken
/// for a duplicate of the first and dropped. `store` is an empty table of `schema`.
pub async fn check_foreign_items<S: Store>(
    store: &S,
    schema: &Schema,
) -> Result<(), Box<dyn std::error::Error>> {
    let records = uniform(12, 3);
    let user = schema.entity("user")?;
    let mut writes = records
        .iter()
        .map(|r| Ok(WriteRequest::Put(user.add_keys(&r.item()?)?)))
        .collect::<Result<Vec<_>, Box<dyn std::error::Error>>>()?;
    let odd = [
        "by-hand-a",
        "by-hand-b",
        "\0by-hand",
        "userId#\0x",
        "userId",
    ];
    for (i, range) in odd.iter().enumerate() {
        // a keyed record, its range key replaced: in a shard of `user`, in every index
        let mut item = user.add_keys(&records[i].item()?)?;
        item.insert("rangeKey".into(), s(range));
        item.insert("userId".into(), s(&format!("hand-{i}")));
        writes.push(WriteRequest::Put(item));
    }
    store.batch_write(writes).await?;
    let expected = records.len() + odd.len();
    for (index, limit, descending) in [
        (None, 1, false),
        (None, 3, true),
        (Some("created"), 1, false),
        (Some("created"), 1, true),
        (Some("created"), 3, false),
        (Some("union"), 1, false),
        (Some("union"), 4, true),
    ] {
        let base = Query::new(store, user)
            .shards_between(0, u64::from(u32::MAX))
            .limit(limit)
            .page_size(limit)
            .descending(descending);
        let query = match index {
            None => base.table(),
            // two sources, merged: a record read from both is returned once
            Some("union") => base.index("created").table(),
            Some(index) => base.index(index),
        };
        let pages = page_all_on(&query).await?;
        let key = |i: &Item| {
            (
                text(i, "hashKey").to_owned(),
                text(i, "rangeKey").to_owned(),
            )
        };
        let mut times: HashMap<(String, String), usize> = HashMap::new();
        for page in &pages {
            let on_page: HashSet<(String, String)> = page.iter().map(key).collect();
            assert_eq!(
                on_page.len(),
                page.len(),
                "{index:?}: an item twice on one page"
            );
            for k in on_page {
                *times.entry(k).or_default() += 1;
            }
        }
        // union mode: each source gives every item once, so at most once per source
        let most = if index == Some("union") { 2 } else { 1 };
        assert_eq!(
            times.len(),
            expected,
            "{index:?}, limit {limit}, descending {descending}: every item"
        );
        assert!(
            times.values().all(|&n| (1..=most).contains(&n)),
            "{index:?}, limit {limit}, descending {descending}: {times:?}"
        );
        let items: Vec<&Item> = pages.iter().flatten().collect();
        if index == Some("created") {
            let created: Vec<u64> = items
                .iter()
                .map(|i| text(i, "created").parse())
                .collect::<Result<_, _>>()?;
            let mut sorted = created.clone();
            sorted.sort_unstable();
            if descending {
                sorted.reverse();
            }
            assert_eq!(created, sorted, "{index:?}, limit {limit}: in order");
        }
    }
    Ok(())
}
