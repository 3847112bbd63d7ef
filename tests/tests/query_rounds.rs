//! Rounds of shard queries counted exactly (issue 49, point 2): the TypeScript comparison's
//! dataset (the 20,000 users of `tests/benches/support/users.rs`, 20 shards, index `created`,
//! page size 100, throttle 10) behind a store whose every shard query waits 5 ms on tokio's
//! paused clock. No CPU time passes on that clock, and every read that starts at one instant
//! ends at one instant, so a page's time on it is a whole number of rounds: what the wall clock
//! measures with the CPU noise taken off.
//!
//! Paged to the end by `page(token)` (each page from the previous page's token alone) at
//! limits 100 and 10, every page is compared with its ideal: `ceil(needed ÷ throttle)` rounds,
//! where `needed` is every live lane (a token keeps no lane's next position, so each must be
//! read at least once). A page that takes more is classified:
//!
//! - `first`: the first page (no token: no span to predict its end from);
//! - `after the last item`: the page after the last item, which finds every lane empty through
//!   its bounds before reading each without one (only an unbounded read shows a lane has
//!   nothing left);
//! - `short bounds`: more shard queries than the ideal rounds hold (a lane read again because
//!   its first bounded read stopped short of the page's end);
//! - `waiting`: no more queries than the ideal rounds hold, but rounds not full (reads that
//!   waited on others' answers).
//!
//! `cargo test -p entity-manager-tests --test query_rounds -- --nocapture` prints the table
//! (BENCHMARKS.md, "Issue 49, point 2").

#[path = "../benches/support/users.rs"]
mod users;

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use entity_manager::Schema;
use entity_manager::model::ShardSpace;
use entity_manager::query::untyped::Query;
use entity_manager::store::{MemoryStore, Store, TableDefinition, WriteRequest};
use entity_manager_tests::{Hooked, QueryHook};
use serde_json::json;
use tokio::time::Instant;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The latency of every shard query.
const DELAY: Duration = Duration::from_millis(5);
const THROTTLE: usize = 10;
const SHARDS: usize = 20;
const ITEMS: usize = 20_000;

/// Waits [`DELAY`] on tokio's clock before every shard query and records when each started.
#[derive(Default)]
struct Rounds {
    starts: Mutex<Vec<Instant>>,
}

impl QueryHook for Rounds {
    async fn around<T: Send>(&self, query: impl Future<Output = T> + Send) -> T {
        if let Ok(mut starts) = self.starts.lock() {
            starts.push(Instant::now());
        }
        tokio::time::sleep(DELAY).await;
        query.await
    }
}

/// The users of the query benches under 20 shards (5 chars of 2 bits, product rule), keyed.
fn dataset() -> Result<(Schema, MemoryStore), Box<dyn std::error::Error>> {
    let config = users::config(&json!([{ "timestamp": 0, "charBits": 2, "chars": 5 }]));
    let schema = Schema::from_ts_config(&config, ShardSpace::Product)?;
    let store = MemoryStore::new(TableDefinition::from_schema(&schema)?);
    let user = schema.entity("user")?;
    let keyed: Vec<WriteRequest> = users::records(ITEMS)
        .into_iter()
        .map(|r| {
            Ok(WriteRequest::Put(
                user.add_keys(&serde_dynamo::to_item(r)?)?,
            ))
        })
        .collect::<Result<_, Box<dyn std::error::Error>>>()?;
    entity_manager_tests::block_on(store.batch_write(keyed))?;
    Ok((schema, store))
}

/// Why a page took more rounds than its ideal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Extra {
    First,
    AfterLast,
    ShortBounds,
    Waiting,
}

/// One page as the paused clock saw it.
struct PageRounds {
    rounds: usize,
    ideal: usize,
    queries: usize,
    /// Shard queries started in each round of the page.
    per_round: Vec<usize>,
    items: usize,
    read: usize,
}

impl PageRounds {
    fn extra(&self, k: usize) -> Option<Extra> {
        (self.rounds > self.ideal).then(|| {
            if k == 0 {
                Extra::First
            } else if self.items == 0 {
                Extra::AfterLast
            } else if self.queries > self.ideal * THROTTLE {
                Extra::ShortBounds
            } else {
                Extra::Waiting
            }
        })
    }
}

/// What paging to the end at one limit counted.
struct Paged {
    pages: Vec<PageRounds>,
    largest_token: usize,
}

impl Paged {
    fn rounds(&self) -> usize {
        self.pages.iter().map(|p| p.rounds).sum()
    }

    fn ideal(&self) -> usize {
        self.pages.iter().map(|p| p.ideal).sum()
    }

    /// Extra rounds and the pages that took them, by cause.
    fn extra(&self, cause: Extra) -> (usize, usize) {
        self.pages
            .iter()
            .enumerate()
            .filter(|(k, p)| p.extra(*k) == Some(cause))
            .fold((0, 0), |(r, n), (_, p)| (r + p.rounds - p.ideal, n + 1))
    }

    fn read_per_returned(&self) -> f64 {
        let read: usize = self.pages.iter().map(|p| p.read).sum();
        let items: usize = self.pages.iter().map(|p| p.items).sum();
        #[allow(clippy::cast_precision_loss)]
        let ratio = read as f64 / items.max(1) as f64;
        ratio
    }

    fn items_read(&self) -> usize {
        self.pages.iter().map(|p| p.read).sum()
    }
}

/// Pages the `created` query to the end by tokens at `limit`, each page timed in rounds.
async fn by_tokens(
    store: &Hooked<MemoryStore, Rounds>,
    schema: &Schema,
    limit: usize,
) -> Result<Paged, Box<dyn std::error::Error>> {
    let query = Query::new(store, schema.entity("user")?)
        .index("created")
        .shards_between(0, 20_000_000)
        .limit(limit)
        .page_size(100)
        .throttle(THROTTLE);
    let mut paged = Paged {
        pages: Vec::new(),
        largest_token: 0,
    };
    let mut token: Option<String> = None;
    let mut returned = 0;
    loop {
        if std::env::var_os("EM_TRACE").is_some() {
            eprintln!(
                "TRACE page {} limit {limit} at {:?}",
                paged.pages.len(),
                token
            );
        }
        let started = Instant::now();
        let before = store.hook.starts.lock().map_or(0, |s| s.len());
        let page = query.page(token.as_deref()).await?;
        let elapsed = started.elapsed();
        let starts: Vec<Instant> = store
            .hook
            .starts
            .lock()
            .map(|s| s.get(before..).map(<[Instant]>::to_vec).unwrap_or_default())
            .unwrap_or_default();
        let rounds = usize::try_from(elapsed.as_micros() / DELAY.as_micros())?;
        assert_eq!(
            elapsed,
            DELAY * u32::try_from(rounds)?,
            "a page's time on the paused clock is a whole number of rounds"
        );
        let mut per_round = vec![0; rounds];
        for start in &starts {
            let r = usize::try_from((*start - started).as_micros() / DELAY.as_micros())?;
            if let Some(count) = per_round.get_mut(r) {
                *count += 1;
            }
        }
        assert_eq!(page.stats.shard_queries, starts.len());
        returned += page.items.len();
        paged.pages.push(PageRounds {
            rounds,
            ideal: SHARDS.div_ceil(THROTTLE),
            queries: starts.len(),
            per_round,
            items: page.items.len(),
            read: page.stats.items_read,
        });
        token = page.next;
        paged.largest_token = paged
            .largest_token
            .max(token.as_ref().map_or(0, String::len));
        if token.is_none() {
            break;
        }
    }
    assert_eq!(returned, ITEMS, "every item paged once");
    Ok(paged)
}

/// The pages at `limit`, printed: totals, extra rounds by cause, and every page that took more
/// than its ideal with its queries round by round.
fn report(limit: usize, paged: &Paged) {
    println!(
        "\nlimit {limit}: {} pages, {} rounds against {} ideal ({:.4}×), {} shard queries, {} items read ({:.4} per item returned), largest token {} bytes",
        paged.pages.len(),
        paged.rounds(),
        paged.ideal(),
        ratio(paged.rounds(), paged.ideal()),
        paged.pages.iter().map(|p| p.queries).sum::<usize>(),
        paged.items_read(),
        paged.read_per_returned(),
        paged.largest_token,
    );
    for cause in [
        Extra::First,
        Extra::AfterLast,
        Extra::ShortBounds,
        Extra::Waiting,
    ] {
        let (rounds, count) = paged.extra(cause);
        println!("  {cause:?}: {rounds} extra rounds on {count} pages");
    }
    for (k, p) in paged.pages.iter().enumerate() {
        if let Some(cause) = p.extra(k) {
            println!(
                "  page {k}: {} rounds, {} queries {:?}, {} items, {} read: {cause:?}",
                p.rounds, p.queries, p.per_round, p.items, p.read
            );
        }
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let r = a as f64 / b.max(1) as f64;
    r
}

/// `page(token)` to the end at limits 100 and 10: rounds against the ideal, counted exactly.
///
/// The counts are deterministic (the same data, the same schedule, no time measured), so the
/// bounds are this run's counts with a small margin: 415 rounds (402 ideal) at limit 100 and
/// 4,206 (4,002 ideal) at limit 10, bounded at 417 and 4,210, below the engine before issue 49's
/// point 2 (419 and 4,473; 4,466 before small pages' first bounds aimed at 0.95, see
/// `estimate::FIRST_QUANTILE`): a change that adds rounds fails here, one that removes them
/// shows in the printed table (then lower the bounds). The page after the last item takes one round
/// more than its ideal at limit 100 and two at limit 10 (it took three and nine: bounded
/// reads, then further ones, before the unbounded reads that show every lane done).
#[tokio::test(start_paused = true)]
async fn tokens_paged_to_the_end_take_few_rounds_more_than_the_ideal() -> TestResult {
    let (schema, inner) = dataset()?;
    let store = Hooked {
        inner,
        hook: Rounds::default(),
    };
    for (limit, most, after_last, read_most) in [(100, 417, 1, 23_551), (10, 4_210, 2, 30_686)] {
        let paged = by_tokens(&store, &schema, limit).await?;
        report(limit, &paged);
        assert!(
            paged.rounds() <= most,
            "limit {limit}: {} rounds ({} ideal), bound {most}",
            paged.rounds(),
            paged.ideal()
        );
        // nor items read (this run's counts): rounds are not bought with reads unseen (a page
        // of fewer items than lanes that predicts its end again no more, at limit 10: 27
        // rounds fewer for 905 items more)
        assert!(
            paged.items_read() <= read_most,
            "limit {limit}: {} items read, bound {read_most}",
            paged.items_read()
        );
        let (extra, _) = paged.extra(Extra::AfterLast);
        assert!(
            extra <= after_last,
            "limit {limit}: the page after the last item took {extra} rounds more than its ideal"
        );
    }
    Ok(())
}
