//! The cross-shard query on a `MemoryStore` with a fault plan (`MemoryStore::with_faults`):
//! indexes that lag behind the table by a number of calls, while records are written between
//! pages, and shard queries throttled or failing transiently. The contract (the paging guide's
//! "Under lag"): pages are exact **with respect to what the index returned**:
//!
//! - the pages are in the query's order, with no record twice, and every page but the last is
//!   full (`limit` items);
//! - a record is returned if and only if some shard query of the paging returned it at a
//!   position after the last record returned before that page (the index showed it ahead of
//!   the cursor); a record the index showed only behind the cursor, or never, is not;
//! - once the lag has passed, a new paging returns every record, in order.
//!
//! "What the index returned" is observed by a pass-through store that records each shard
//! query's items and the page it belonged to; every fault comes from the fault plan. Exact mode
//! (one index, or the table, ascending and descending) and union mode (two indexes with
//! different range keys, sorted by name then id). Each case prints nothing unless it fails;
//! proptest prints the seed and the case.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;

use entity_manager::model::ShardSpace;
use entity_manager::query::untyped::Query;
use entity_manager::store::{Expect, FaultPlan, MemoryStore, Operation, Store, TableDefinition};
use entity_manager::{Error, Item, Schema};
use entity_manager_tests::{Observed, block_on, page_retrying};
use proptest::prelude::*;

mod query_support;
mod store_support;

use query_support::{Record, dataset, in_store_order, schema, text, writes_of};

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// One index (`created`, `name`) or the table: one merged stream.
    Exact(Option<&'static str>),
    /// `created` and `name` together, sorted by name then id descending.
    Union,
}

#[derive(Clone, Debug)]
struct Ask {
    mode: Mode,
    limit: usize,
    page_size: usize,
    throttle: usize,
    descending: bool,
}

fn ask() -> impl Strategy<Value = Ask> {
    (
        prop_oneof![
            3 => Just(Mode::Exact(Some("created"))),
            2 => Just(Mode::Exact(Some("name"))),
            1 => Just(Mode::Exact(None)),
            2 => Just(Mode::Union),
        ],
        prop_oneof![Just(1usize), 2usize..8, 8usize..40],
        prop_oneof![Just(1usize), 2usize..6, Just(10usize)],
        prop_oneof![Just(1usize), 2usize..4, Just(10usize)],
        any::<bool>(),
    )
        .prop_map(|(mode, limit, page_size, throttle, descending)| Ask {
            mode,
            limit,
            page_size,
            throttle,
            descending: descending && mode != Mode::Union,
        })
}

fn query<'s, S: Store>(store: &'s S, schema: &'s Schema, ask: &Ask) -> Result<Query<'s, S>, Error> {
    let user = schema.entity("user")?;
    let start = Query::new(store, user);
    let query = match ask.mode {
        Mode::Exact(Some(index)) => start.index(index),
        Mode::Exact(None) => start.table(),
        Mode::Union => start
            .index("created")
            .index("name")
            .sort_by("name", false)
            .sort_by("userId", true),
    };
    Ok(query
        .shards_between(0, 3_000)
        .limit(ask.limit)
        .page_size(ask.page_size)
        .throttle(ask.throttle)
        .descending(ask.descending))
}

/// Every record in the query's order (on a store without faults holding them all).
async fn full_order(
    schema: &Schema,
    records: &[Record],
    ask: &Ask,
) -> Result<Vec<Item>, Box<dyn std::error::Error>> {
    let user = schema.entity("user")?;
    let mut keyed = Vec::new();
    for r in records {
        keyed.push(user.add_keys(&r.item()?)?);
    }
    Ok(match ask.mode {
        Mode::Union => {
            keyed.sort_by(|a, b| {
                text(a, "name")
                    .cmp(text(b, "name"))
                    .then_with(|| text(b, "userId").cmp(text(a, "userId")))
            });
            keyed
        }
        Mode::Exact(index) => {
            let clean = MemoryStore::new(TableDefinition::from_schema(schema)?);
            clean.batch_write(writes_of(schema, records)?).await?;
            let range_attr = match index {
                Some("created") => "created",
                Some(_) => "nameRK",
                None => "rangeKey",
            };
            in_store_order(&clean, index, range_attr, keyed, ask.descending).await?
        }
    })
}

/// Pages `query` to the end, retrying a page that failed with a throttled or transient shard
/// query (with the same token), and writing one more of `later` after each page.
async fn page_to_the_end<S: Store>(
    observed: &Observed<S>,
    query: &Query<'_, Observed<S>>,
    schema: &Schema,
    later: &mut Vec<Record>,
) -> Result<Vec<Vec<Item>>, Box<dyn std::error::Error>> {
    let user = schema.entity("user")?;
    let mut pages = Vec::new();
    let mut token: Option<String> = None;
    loop {
        observed.page.store(pages.len(), Ordering::SeqCst);
        let page = page_retrying(|| query.page(token.as_deref())).await?;
        pages.push(page.items);
        if let Some(record) = later.pop() {
            observed
                .inner
                .put_item(user.add_keys(&record.item()?)?, Expect::Any)
                .await?;
        }
        token = page.next;
        if token.is_none() {
            return Ok(pages);
        }
        if pages.len() > 10_000 {
            return Err("the paging did not end".into());
        }
    }
}

/// Reads `query` as one stream to the end, writing one more of `later` after every `limit`
/// items taken. Each item comes back as a page of its own, the observed store numbering shard
/// queries by the items taken before them: a stream reads when the items it gave are taken, so
/// "returned before that page" is "taken before that shard query".
async fn stream_to_the_end<S: Store>(
    observed: &Observed<S>,
    query: &Query<'_, Observed<S>>,
    schema: &Schema,
    later: &mut Vec<Record>,
    limit: usize,
) -> Result<Vec<Vec<Item>>, Box<dyn std::error::Error>> {
    use entity_manager::query::StreamExt as _;
    let user = schema.entity("user")?;
    let mut stream = std::pin::pin!(query.stream());
    let mut items: Vec<Vec<Item>> = Vec::new();
    loop {
        observed.page.store(items.len(), Ordering::SeqCst);
        let Some(item) = stream.next().await else {
            return Ok(items);
        };
        items.push(vec![item?]);
        if items.len().is_multiple_of(limit)
            && let Some(record) = later.pop()
        {
            observed
                .inner
                .put_item(user.add_keys(&record.item()?)?, Expect::Any)
                .await?;
        }
        if items.len() > 100_000 {
            return Err("the stream did not end".into());
        }
    }
}

/// One case: half the records stored before the paging, the other half written one after each
/// page, under `plan`; then the contract above.
///
/// `streamed` (exact mode): the paging is one stream instead, and its items are checked as
/// pages of one item each, shard queries placed by the items taken before them: in order, none
/// twice, only records the index showed (see `check_exact`), and every record, in order, once
/// the lag has passed.
async fn check(
    schema: &Schema,
    records: &[Record],
    plan: FaultPlan,
    lag: u64,
    ask: &Ask,
    streamed: bool,
) -> TestResult {
    let store = MemoryStore::new(TableDefinition::from_schema(schema)?).with_faults(plan);
    let (first, second) = records.split_at(records.len() / 2);
    store.batch_write(writes_of(schema, first)?).await?;
    let observed = Observed::new(store);
    let mut later: Vec<Record> = second.iter().rev().cloned().collect();
    let q = query(&observed, schema, ask)?;
    let (pages, shape) = if streamed {
        let pages = stream_to_the_end(&observed, &q, schema, &mut later, ask.limit).await?;
        (
            pages,
            Ask {
                limit: 1,
                ..ask.clone()
            },
        )
    } else {
        let pages = page_to_the_end(&observed, &q, schema, &mut later).await?;
        (pages, ask.clone())
    };
    let written: Vec<Record> = records[..records.len() - later.len()].to_vec();

    let order = full_order(schema, &written, ask).await?;
    let pos: HashMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, item)| (text(item, "userId"), i))
        .collect();
    let at = |item: &Item| pos.get(text(item, "userId")).copied();

    let seen = observed.seen();
    if ask.mode == Mode::Union {
        check_union(&pages, &seen, &at, ask)?;
    } else {
        check_exact(&pages, &seen, &at, lag, (&shape, streamed))?;
    }

    // once the lag has passed, every record, in order
    let user = schema.entity("user")?;
    for record in later.drain(..).rev() {
        observed
            .inner
            .put_item(user.add_keys(&record.item()?)?, Expect::Any)
            .await?;
    }
    for _ in 0..=lag {
        let _ = observed
            .inner
            .get_item(&store_support::key("none", "none"), None)
            .await?;
    }
    let everything = full_order(schema, records, ask).await?;
    let again = if streamed {
        stream_to_the_end(&observed, &q, schema, &mut Vec::new(), ask.limit).await?
    } else {
        page_to_the_end(&observed, &q, schema, &mut Vec::new()).await?
    };
    let want: Vec<&str> = everything.iter().map(|i| text(i, "userId")).collect();
    if ask.mode == Mode::Union {
        // every record at least once, at most once per index (two)
        let mut times: HashMap<&str, usize> = HashMap::new();
        for item in again.iter().flatten() {
            *times.entry(text(item, "userId")).or_default() += 1;
        }
        let all: HashSet<&str> = want.iter().copied().collect();
        let got: HashSet<&str> = times.keys().copied().collect();
        if got != all || times.values().any(|t| *t > 2) {
            return Err(
                format!("after the lag: {times:?}, want each of {want:?} once or twice").into(),
            );
        }
        return Ok(());
    }
    let got: Vec<&str> = again.iter().flatten().map(|i| text(i, "userId")).collect();
    if got != want {
        return Err(format!("after the lag: got {got:?}\nwant {want:?} ({ask:?})").into());
    }
    Ok(())
}

/// Exact mode: full pages in order, no record twice, and a record returned if and only if the
/// index showed it ahead of the cursor.
///
/// `read_ahead` (a stream's items as pages of one): a stream reads its shards ahead of what it
/// has given, so a record the index shows only behind where a shard was read (written, or shown
/// late, meanwhile) may not come back: only "returned ⇒ the index showed it" is checked.
fn check_exact(
    pages: &[Vec<Item>],
    seen: &[(usize, Item)],
    at: &dyn Fn(&Item) -> Option<usize>,
    lag: u64,
    (ask, read_ahead): (&Ask, bool),
) -> TestResult {
    // full pages, in order, no record twice, only records
    for (i, page) in pages.iter().enumerate() {
        let last = i + 1 == pages.len();
        if page.len() > ask.limit || (!last && page.len() != ask.limit) {
            return Err(format!(
                "page {i} of {} holds {} items ({ask:?})",
                pages.len(),
                page.len()
            )
            .into());
        }
    }
    let returned: Vec<&Item> = pages.iter().flatten().collect();
    let mut previous: Option<usize> = None;
    for item in &returned {
        let p = at(item).ok_or_else(|| format!("{} is no record", text(item, "userId")))?;
        if previous.is_some_and(|q| p <= q) {
            return Err(format!("{} out of order or twice ({ask:?})", text(item, "userId")).into());
        }
        previous = Some(p);
    }

    // returned exactly when the index showed it ahead of the cursor
    let mut cursor: Vec<Option<usize>> = Vec::new(); // the position before each page
    let mut last: Option<usize> = None;
    for page in pages {
        cursor.push(last);
        if let Some(item) = page.last() {
            last = at(item);
        }
    }
    let mut must: HashSet<&str> = HashSet::new();
    for (k, item) in seen {
        let Some(p) = at(item) else {
            return Err(format!(
                "the index returned {} that is no record",
                text(item, "userId")
            )
            .into());
        };
        let before = cursor.get(*k).copied().flatten();
        if before.is_none_or(|c| p > c) {
            must.insert(text(item, "userId"));
        }
    }
    let got: HashSet<&str> = returned.iter().map(|i| text(i, "userId")).collect();
    if read_ahead {
        let shown: HashSet<&str> = seen.iter().map(|(_, i)| text(i, "userId")).collect();
        if let Some(id) = got.difference(&shown).next() {
            return Err(format!("{id} returned but never shown by the index ({ask:?})").into());
        }
        return Ok(());
    }
    if got != must {
        let missed: Vec<_> = must.difference(&got).collect();
        let extra: Vec<_> = got.difference(&must).collect();
        return Err(format!(
            "returned ≠ what the index showed ahead of the cursor: missed {missed:?}, extra {extra:?} (lag {lag}, {ask:?})"
        )
        .into());
    }

    Ok(())
}

/// Union mode (the paging guide's contract): pages of at most `limit` items, sorted, none twice
/// on a page, no record more than once per index (two here), only records the indexes
/// returned.
fn check_union(
    pages: &[Vec<Item>],
    seen: &[(usize, Item)],
    at: &dyn Fn(&Item) -> Option<usize>,
    ask: &Ask,
) -> TestResult {
    let shown: HashSet<&str> = seen.iter().map(|(_, i)| text(i, "userId")).collect();
    let mut times: HashMap<&str, usize> = HashMap::new();
    for (i, page) in pages.iter().enumerate() {
        if page.len() > ask.limit {
            return Err(format!("page {i} holds {} items ({ask:?})", page.len()).into());
        }
        let mut previous: Option<usize> = None;
        for item in page {
            let id = text(item, "userId");
            let p = at(item).ok_or_else(|| format!("{id} is no record"))?;
            if previous.is_some_and(|q| p <= q) {
                return Err(format!("page {i}: {id} out of order or twice ({ask:?})").into());
            }
            previous = Some(p);
            if !shown.contains(id) {
                return Err(format!("{id} returned but never shown by an index").into());
            }
            *times.entry(id).or_default() += 1;
        }
    }
    if let Some((id, t)) = times.iter().find(|(_, t)| **t > 2) {
        return Err(format!("{id} returned {t} times from two indexes ({ask:?})").into());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Pages exact with respect to what the index returned, under index lag, writes between
    /// pages, and throttled or failing shard queries from the fault plan.
    #[test]
    fn pages_are_exact_with_respect_to_what_the_lagging_index_returned(
        two_bumps in any::<bool>(),
        count in 0usize..160,
        spread in prop_oneof![Just(3u64), Just(40), Just(3_000)],
        lag in prop_oneof![Just(0u64), Just(3), Just(30), Just(300)],
        throttle in prop_oneof![Just(0.0f64), Just(0.1)],
        transient in prop_oneof![Just(0.0f64), Just(0.05)],
        seed in any::<u64>(),
        ask in ask(),
        streamed in any::<bool>(),
    ) {
        let check_one = || -> TestResult {
            let bumps: &[(u64, u8, u8)] = if two_bumps { &[(0, 2, 1), (1_500, 2, 2)] } else { &[(0, 3, 1)] };
            let schema = schema(bumps, ShardSpace::Product)?;
            let records = dataset(count, spread, seed);
            // a stream (exact mode) cannot retry a failed page: lag alone
            let streamed = streamed && ask.mode != Mode::Union;
            let (throttle, transient) = if streamed { (0.0, 0.0) } else { (throttle, transient) };
            let plan = FaultPlan::new(seed)
                .lag(lag)
                .throttle(throttle)
                .transient(transient)
                .attempts(2)
                .only(&[Operation::Query]);
            block_on(check(&schema, &records, plan, lag, &ask, streamed))
        };
        check_one().map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
}
