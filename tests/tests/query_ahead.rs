//! The read-ahead of a query's streams (`pages` and `stream`): once a page has its items, the
//! next page's first shard queries go out, within the throttle, while the page's own last reads
//! come back and while the caller holds the page, so that the rounds of two pages overlap; a
//! stream dropped between pages cancels what it has in flight and starts nothing more.
//!
//! Recorded request by request on a store whose every shard query waits on tokio's paused
//! clock (so the order of events is deterministic and no time is measured), and checked against
//! paging by tokens on random data: the same items, page by page, and tokens that resume where
//! the stream went on.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use entity_manager::model::ShardSpace;
use entity_manager::query::untyped::Query;
use entity_manager::query::{QueryPageResult, StreamExt as _, TryStreamExt as _};
use entity_manager::store::{MemoryStore, RangeCondition, Store};
use entity_manager::{Item, Schema};
use entity_manager_tests::{Hooked, QueryHook, Tally, XorShift};
use proptest::prelude::*;

type TestResult = Result<(), Box<dyn std::error::Error>>;

mod query_support;
use query_support::*;

/// What the recording store saw, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    /// Shard query `n` (numbered in the order they started) started.
    Start(usize),
    /// It returned.
    End(usize),
    /// It was dropped before it returned: cancelled.
    Dropped(usize),
    /// The caller received page `k` (counted from 0) and holds it.
    Received(usize),
}

/// What waits `base` plus up to `jitter` milliseconds (seeded) on tokio's clock before every
/// shard query of a [`Recorded`] store, recording when each starts, returns or is dropped, and
/// how many are in flight at most.
struct Recorder {
    base: u64,
    jitter: u64,
    rng: Mutex<XorShift>,
    events: Mutex<Vec<Event>>,
    started: AtomicUsize,
    in_flight: AtomicUsize,
    most: AtomicUsize,
}

/// `MemoryStore` with its shard queries recorded (and the items they returned counted).
type Recorded = Hooked<Tally<MemoryStore>, Recorder>;

/// `inner` behind waits of `base..=base + jitter` milliseconds, drawn from `seed`.
fn recorded(inner: MemoryStore, (base, jitter): (u64, u64), seed: u64) -> Recorded {
    Hooked {
        inner: Tally::new(inner),
        hook: Recorder {
            base,
            jitter,
            rng: Mutex::new(XorShift::new(seed)),
            events: Mutex::new(Vec::new()),
            started: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
        },
    }
}

impl Recorder {
    fn record(&self, event: Event) {
        if let Ok(mut events) = self.events.lock() {
            events.push(event);
        }
    }

    fn events(&self) -> Vec<Event> {
        self.events.lock().map(|e| e.clone()).unwrap_or_default()
    }

    fn started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }

    fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    fn most(&self) -> usize {
        self.most.load(Ordering::SeqCst)
    }

    fn wait(&self) -> Duration {
        let extra = self.rng.lock().map_or(0, |mut r| r.below(self.jitter + 1));
        Duration::from_millis(self.base + extra)
    }
}

/// A shard query in flight, from its start until it returns or is dropped.
struct Flight<'r> {
    recorder: &'r Recorder,
    n: usize,
    returned: bool,
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        self.recorder.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.recorder.record(if self.returned {
            Event::End(self.n)
        } else {
            Event::Dropped(self.n)
        });
    }
}

impl QueryHook for Recorder {
    async fn around<T: Send>(&self, query: impl Future<Output = T> + Send) -> T {
        let n = self.started.fetch_add(1, Ordering::SeqCst);
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        self.record(Event::Start(n));
        let mut flight = Flight {
            recorder: self,
            n,
            returned: false,
        };
        tokio::time::sleep(self.wait()).await;
        let out = query.await;
        flight.returned = true;
        out
    }
}

/// Items the shard queries of `store` returned.
fn items_read(store: &Recorded) -> usize {
    store.inner.items.load(Ordering::SeqCst)
}

/// 20 shards (5 chars of 2 bits, the TypeScript comparison's layout).
fn twenty_shards() -> Result<Schema, entity_manager::Error> {
    schema(&[(0, 2, 5)], ShardSpace::Product)
}

/// The `created` query over every shard of `twenty_shards`.
fn created<'s, S: Store>(
    store: &'s S,
    schema: &'s Schema,
    (limit, throttle): (usize, usize),
) -> Result<Query<'s, S>, entity_manager::Error> {
    Ok(Query::new(store, schema.entity("user")?)
        .index("created")
        .shards_between(0, 20_000_000)
        .limit(limit)
        .page_size(100)
        .throttle(throttle))
}

/// The shard queries each page counted, as numbers of the recorder's starts: page `k`'s are
/// `bounds[k]..bounds[k + 1]` (a page counts the reads issued for it, ahead or not, and every
/// read for a page is issued before any read for the next).
fn bounds(pages: &[QueryPageResult]) -> Vec<usize> {
    let mut bounds = vec![0];
    for page in pages {
        let last = bounds.last().copied().unwrap_or(0);
        bounds.push(last + page.stats.shard_queries);
    }
    bounds
}

/// Where each event happened, by kind: the positions of `Start(n)` and of `End(n)` for every
/// read, and of each `Received(k)`.
struct Timeline {
    start: Vec<usize>,
    end: Vec<usize>,
    received: Vec<usize>,
}

impl Timeline {
    fn of(events: &[Event], reads: usize) -> Self {
        let mut line = Self {
            start: vec![usize::MAX; reads],
            end: vec![usize::MAX; reads],
            received: Vec::new(),
        };
        for (at, event) in events.iter().enumerate() {
            match *event {
                Event::Start(n) => line.start[n] = at,
                Event::End(n) | Event::Dropped(n) => line.end[n] = at,
                Event::Received(_) => line.received.push(at),
            }
        }
        line
    }
}

/// Paged to the end with `pages`, holding each page (a sleep on the paused clock) before asking
/// for the next: the next page's first shard queries start before the caller asks for it, some
/// while the page's own last reads are still in flight (the rounds overlap), never more than the
/// throttle in flight; every read counts on exactly one page, and the pages are those of paging
/// by tokens.
#[tokio::test(start_paused = true)]
async fn pages_read_the_next_page_ahead_while_the_caller_holds_one() -> TestResult {
    let schema = twenty_shards()?;
    let records = uniform(4_000, 7);
    // 5 to 8 ms a shard query: a page's last reads come back one after another
    let store = recorded(load(&schema, &records)?, (5, 3), 1);
    let query = created(&store, &schema, (100, 10))?;
    let mut stream = std::pin::pin!(query.pages(None));
    let mut pages = Vec::new();
    let mut started_when_received = Vec::new();
    while let Some(page) = stream.next().await {
        let page = page?;
        started_when_received.push(store.hook.started());
        store.hook.record(Event::Received(pages.len()));
        let last = page.next.is_none();
        pages.push(page);
        if last {
            break;
        }
        // the caller holds the page
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let bounds = bounds(&pages);
    assert_eq!(
        bounds.last().copied(),
        Some(store.hook.started()),
        "every shard query counts on one page"
    );
    let line = Timeline::of(&store.hook.events(), store.hook.started());
    // per page: the next page's reads started before the caller asked for it, still in flight
    // while it held the page, and started before the page's own last read came back
    let (mut ahead, mut held, mut tail) = (0, 0, 0);
    for k in 0..pages.len() - 1 {
        let early = started_when_received[k] - bounds[k + 1];
        assert!(early <= pages[k + 1].stats.shard_queries, "page {k}");
        ahead += usize::from(early > 0);
        let next = bounds[k + 1]..bounds[k + 2];
        held += usize::from(
            next.clone()
                .any(|n| line.start[n] < line.received[k] && line.end[n] > line.received[k]),
        );
        let last_end = (bounds[k]..bounds[k + 1]).map(|n| line.end[n]).max();
        let first_next = next.map(|n| line.start[n]).min();
        tail += usize::from(last_end.zip(first_next).is_some_and(|(e, s)| s < e));
    }
    println!(
        "{} pages: {ahead} started the next page's reads before the caller asked for it, {held} had them in flight while the caller held the page, {tail} before their own last read came back; at most {} shard queries in flight",
        pages.len(),
        store.hook.most()
    );
    assert!(
        started_when_received[0] > pages[0].stats.shard_queries,
        "the second page's first shard queries start before the caller asks for it"
    );
    assert_eq!(
        ahead,
        pages.len() - 1,
        "every page but the last reads ahead"
    );
    assert_eq!(
        held,
        pages.len() - 1,
        "the rounds of two pages do not overlap"
    );
    assert!(
        store.hook.most() <= 10,
        "{} shard queries in flight",
        store.hook.most()
    );
    // the pages of paging by tokens, item for item
    let plain = load(&schema, &records)?;
    let by_tokens = page_all(&created(&plain, &schema, (100, 10))?)?;
    assert_eq!(pages.len(), by_tokens.len(), "page count");
    for (k, (page, paged)) in pages.iter().zip(&by_tokens).enumerate() {
        assert!(
            page.items == paged.items,
            "page {k} differs from the page by tokens"
        );
    }
    Ok(())
}

/// A stream of pages dropped while the caller holds its first page: the reads it issued ahead
/// for the second are in flight until then, and are dropped with it; nothing starts afterwards.
/// The same for a stream of items dropped on its second page (its first reads nothing ahead).
#[tokio::test(start_paused = true)]
async fn dropping_a_stream_cancels_its_reads_ahead() -> TestResult {
    let schema = twenty_shards()?;
    let records = uniform(4_000, 11);
    for items in [false, true] {
        let store = recorded(load(&schema, &records)?, (5, 3), 2);
        let query = created(&store, &schema, (100, 10))?;
        let label = if items { "stream" } else { "pages" };
        // the stream, held after its first page (a stream of items: after one item of its
        // second, as its first reads nothing ahead), and the reads of that page
        let (stream, first_reads): (Box<dyn Unpin + '_>, usize) = if items {
            let mut stream = Box::pin(query.stream());
            let taken: Vec<Item> = stream.as_mut().take(101).try_collect().await?;
            assert_eq!(taken.len(), 101);
            (Box::new(stream), 0)
        } else {
            let mut stream = Box::pin(query.pages(None));
            let first = stream.next().await.ok_or("no first page")??;
            assert_eq!(first.items.len(), 100);
            (Box::new(stream), first.stats.shard_queries)
        };
        let (held, started) = (store.hook.in_flight(), store.hook.started());
        assert!(started > first_reads, "{label}: nothing was read ahead");
        drop(stream);
        assert!(
            held > 0,
            "{label}: no read in flight while the page is held"
        );
        assert!(held <= 10, "{label}: {held} reads in flight");
        assert_eq!(
            store.hook.in_flight(),
            0,
            "{label}: a read outlived the stream"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(
            store.hook.started(),
            started,
            "{label}: a read started after the drop"
        );
        let events = store.hook.events();
        let dropped = events
            .iter()
            .filter(|e| matches!(e, Event::Dropped(_)))
            .count();
        assert_eq!(dropped, held, "{label}: the reads in flight were cancelled");
        let ends = events.iter().filter(|e| matches!(e, Event::End(_))).count();
        assert_eq!(
            ends + dropped,
            started,
            "{label}: every read returned or was dropped"
        );
    }
    Ok(())
}

/// A stream of items whose first items only are taken reads nothing ahead (its first page reads
/// what `page(None)` reads); read on, it reads ahead from its second page.
#[tokio::test(start_paused = true)]
async fn a_stream_of_items_reads_ahead_from_its_second_page() -> TestResult {
    let schema = twenty_shards()?;
    let records = uniform(4_000, 13);
    let store = recorded(load(&schema, &records)?, (5, 0), 3);
    let query = created(&store, &schema, (100, 10))?;
    let first = query.page(None).await?;
    let page_reads = store.hook.started();
    assert_eq!(page_reads, first.stats.shard_queries);
    let mut stream = Box::pin(query.stream());
    let taken: Vec<Item> = stream.as_mut().take(100).try_collect().await?;
    assert_eq!(taken, first.items);
    assert_eq!(
        store.hook.started() - page_reads,
        page_reads,
        "the first page read ahead"
    );
    assert_eq!(store.hook.in_flight(), 0);
    // the second page (200 items) has its items: the third's first reads are in flight
    let more: Vec<Item> = stream.as_mut().take(1).try_collect().await?;
    assert_eq!(more.len(), 1);
    assert!(
        store.hook.in_flight() > 0,
        "the second page read nothing ahead"
    );
    Ok(())
}

/// A random query of the proptest: its limit, page size, throttle, order and condition.
#[derive(Clone, Debug)]
struct Ask {
    limit: usize,
    page_size: usize,
    throttle: usize,
    descending: bool,
    condition: Option<RangeCondition>,
}

impl Ask {
    fn query<'s, S: Store>(
        &self,
        store: &'s S,
        schema: &'s Schema,
    ) -> Result<Query<'s, S>, entity_manager::Error> {
        let query = Query::new(store, schema.entity("user")?)
            .index("created")
            .shards_between(0, 3_500)
            .limit(self.limit)
            .page_size(self.page_size)
            .throttle(self.throttle)
            .descending(self.descending);
        Ok(match self.condition.clone() {
            Some(c) => query.range(c),
            None => query,
        })
    }
}

/// `pages` without its last page when that one is empty and follows another: the pages that
/// hold items (or the one empty page of a query that matches nothing).
fn full(pages: &[QueryPageResult]) -> &[QueryPageResult] {
    match pages {
        [before @ .., last] if !before.is_empty() && last.items.is_empty() => before,
        all => all,
    }
}

fn ids(items: &[Item]) -> Vec<&str> {
    items.iter().map(|i| text(i, "userId")).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// On random data, shard layouts, conditions, limits, page sizes and throttles, with shard
    /// queries that come back out of order: `pages` and `stream` return exactly the items of
    /// paging by tokens, page for page; each token of `pages` resumes, on a new query, at the
    /// page `pages` gave next (and the last page has none); never more shard queries in flight
    /// than the throttle, and none once the streams are read to their end.
    #[test]
    fn read_ahead_returns_the_pages_of_tokens(
        (bumps, space) in bumps(),
        records in records(800),
        condition in condition_on_created(),
        limit in prop_oneof![3 => 1usize..20, 1 => 1usize..=150],
        page_size in 1usize..40,
        throttle in 1usize..8,
        descending in any::<bool>(),
        (base, jitter) in (0u64..4, 0u64..12),
        seed in any::<u64>(),
    ) {
        let ask = Ask { limit, page_size, throttle, descending, condition };
        let check = || -> TestResult {
            let schema = schema(&bumps, space)?;
            let plain = load(&schema, &records)?;
            let by_tokens = page_all(&ask.query(&plain, &schema)?)?;
            let store = recorded(load(&schema, &records)?, (base, jitter), seed);
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()?;
            // the pages, and the most items held between two pages (read, not yet returned)
            let (pages, held, items) = runtime.block_on(async {
                let query = ask.query(&store, &schema)?;
                let mut stream = std::pin::pin!(query.pages(None));
                let (mut pages, mut held, mut returned) = (Vec::new(), 0, 0);
                while let Some(page) = stream.next().await {
                    let page: QueryPageResult = page?;
                    returned += page.items.len();
                    held = held.max(items_read(&store) - returned);
                    pages.push(page);
                }
                let items: Vec<Item> = ask.query(&store, &schema)?.stream().try_collect().await?;
                Ok::<_, entity_manager::Error>((pages, held, items))
            })?;
            let lanes = pages.first().map_or(0, |p| p.stats.shards);
            let most = (lanes + throttle) * page_size.max(limit + 1);
            assert!(held <= most, "{held} items held between pages, bound {most}");
            assert!(store.hook.most() <= throttle, "{} in flight, throttle {throttle}", store.hook.most());
            assert_eq!(store.hook.in_flight(), 0, "reads left in flight");
            // the same pages, but where the stream's own reads found the end, its last page
            // has no token and paging by tokens gives one more, empty page (or the other way
            // round, when the page from a token found it and the stream did not)
            let (pages_full, tokens_full) = (full(&pages), full(&by_tokens));
            assert_eq!(pages_full.len(), tokens_full.len(), "page count (trailing empty page aside)");
            assert!(pages.len().abs_diff(by_tokens.len()) <= 1, "page count");
            for (k, (page, paged)) in pages_full.iter().zip(tokens_full).enumerate() {
                assert_eq!(ids(&page.items), ids(&paged.items), "page {k}");
                if k + 1 < pages_full.len() {
                    assert!(page.next.is_some() && paged.next.is_some(), "page {k}'s token");
                }
            }
            assert!(pages.last().is_some_and(|p| p.next.is_none()), "the last page has a token");
            let all: Vec<&str> = by_tokens.iter().flat_map(|p| ids(&p.items)).collect();
            assert_eq!(ids(&items), all, "the stream of items");
            let unique: BTreeSet<&str> = all.iter().copied().collect();
            assert_eq!(unique.len(), all.len(), "an item twice");
            // every token resumes where `pages` went on
            for (k, page) in pages.iter().enumerate() {
                let Some(token) = page.next.as_deref() else { continue };
                let next = entity_manager_tests::block_on(ask.query(&plain, &schema)?.page(Some(token)))?;
                assert_eq!(ids(&next.items), ids(&pages[k + 1].items), "after page {k}'s token");
            }
            Ok(())
        };
        if let Err(e) = check() {
            prop_assert!(false, "{e}");
        }
    }
}
