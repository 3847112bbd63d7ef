//! The cross-shard query side by side with the TypeScript Entity Manager (npm 6.14.0): issue
//! 13's configuration, the same config and the same 20,000 items for both libraries.
//!
//! ```text
//! export EM_TS_NODE_PATH=$(bash tests/ts-bench/install.sh)   # npm 6.14.0, outside the repo
//! cargo bench -p entity-manager-tests --bench query_ts
//! ```
//!
//! - Items: the 20,000 users of `tests/benches/query.rs` (same generator, same seed), written
//!   once to `target/ts-bench/query-items.jsonl`; both libraries key them under the same config
//!   (`user`, indexes `created` and `name`, one shard bump at timestamp 0), and the hash key of
//!   every item is checked equal on both sides before anything is timed.
//! - Store: every shard query waits 5 ms, then answers from the items of its shard in index
//!   order, `Limit` = the page size, a last evaluated key whenever the limit was reached
//!   (`DynamoDB`'s rule). Ours: `MemoryStore` behind a precise timer thread (as
//!   `tests/benches/query.rs`). TypeScript (`tests/ts-bench/query.mjs`): sorted arrays per
//!   shard behind a worker thread that sleeps in `Atomics.wait` (`setTimeout` counts whole
//!   milliseconds); both measure the mean real wait.
//! - Query: index `created`, throttle 10, paged to the end or 40 pages; per page the wall time,
//!   shard queries, items read and returned, and the page token's length; passes without
//!   latency give the CPU per page and per returned item (the least of three).
//! - Runs: issue 13's 20 shards at limits 100 and 10 (page sizes 100 and 10), limit 1 over 64
//!   shards, and 32 shards, the one layout of these where 6.14.0's query spans only the shards
//!   its `addKeys` writes (see [`RUNS`]).
//! - Oracle: every returned id is checked against the brute-force order of all items (`created`,
//!   then the unique id): duplicates (returned again on a later page), misses (not returned,
//!   though a later item in the order was), inversions (returned after an item that sorts
//!   after it). Ours must be exact: the bench fails otherwise. TypeScript's misses are counted
//!   over a longer pass without latency, until every item has come back (or 400 pages).
//!
//! Without `EM_TS_NODE_PATH` only our side runs (with a message). Under `cargo test --benches`
//! (no `--bench` argument) only a short exactness check of ours runs, without latency.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

#[path = "support/latency.rs"]
mod latency;
#[path = "support/users.rs"]
mod users;

use entity_manager::model::ShardSpace;
use entity_manager::query::untyped::Query;
use entity_manager::store::{MemoryStore, Store, TableDefinition, WriteRequest};
use entity_manager::{AttributeValue, Error, Item, Schema};
use entity_manager_tests::Hooked;
use latency::{Clock, Latency, PreciseTimer};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::runtime::Runtime;

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Items of the dataset.
const ITEMS: usize = 20_000;
/// The latency of every shard query.
const DELAY: Duration = Duration::from_millis(5);
const THROTTLE: usize = 10;
/// Pages per run at most.
const MAX_PAGES: usize = 40;
/// Pages of TypeScript's check pass (no latency) at most: it stops once every item came back.
const CHECK_PAGES: usize = 400;
/// Passes without latency, for the CPU: the least disturbed one counts.
const CPU_PASSES: usize = 3;
/// The query's shard window: every item (created in `1_000..10_001_000`), pinned so that
/// TypeScript's default (`Date.now()`) does not move between pages.
const WINDOW: (u64, u64) = (0, 20_000_000);
const INDEX: &str = "created";

/// One configuration of the table.
struct Run {
    /// Populated shards.
    shards: usize,
    /// The one shard bump (timestamp 0): `(charBits, chars)`.
    bump: (u8, u8),
    limit: usize,
    page_size: usize,
}

/// Issue 13's runs, and two where 6.14.0 queries only the shards it writes. Shards are placed
/// by 6.14.0's rule, `hash % (chars × 2^charBits)` ([`ShardSpace::Product`] on our side): 5
/// chars of 2 bits = 20 shards, 2 chars of 5 bits = 64, 1 char of 5 bits = 32. 6.14.0's query
/// spans every suffix of `chars` digits, `2^(charBits × chars)` hash keys (1,024 for the first
/// two): the two agree only for one char (32).
const RUNS: [Run; 6] = [
    Run {
        shards: 20,
        bump: (2, 5),
        limit: 100,
        page_size: 100,
    },
    Run {
        shards: 20,
        bump: (2, 5),
        limit: 10,
        page_size: 100,
    },
    Run {
        shards: 20,
        bump: (2, 5),
        limit: 10,
        page_size: 10,
    },
    Run {
        shards: 64,
        bump: (5, 2),
        limit: 1,
        page_size: 100,
    },
    Run {
        shards: 32,
        bump: (5, 1),
        limit: 100,
        page_size: 100,
    },
    Run {
        shards: 32,
        bump: (5, 1),
        limit: 10,
        page_size: 10,
    },
];

/// The TypeScript config of a run (the fixture of `tests/benches/query.rs`).
fn config(bump: (u8, u8)) -> Value {
    users::config(&json!([{ "timestamp": 0, "charBits": bump.0, "chars": bump.1 }]))
}

fn out_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"),
        PathBuf::from,
    );
    target.join("ts-bench")
}

// ---------------------------------------------------------------------------------------------
// What one library did in one run

/// One page, as both sides record it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PageFigures {
    wall_ns: f64,
    shard_queries: usize,
    items_read: usize,
    items_returned: usize,
    token_len: usize,
    /// The unique ids returned, in order.
    ids: Vec<String>,
}

/// One run of one library: with latency, and the CPU of the same pages without.
struct Outcome {
    /// Hash keys the query spans.
    lanes: usize,
    mean_wait: Duration,
    /// Whether the last page said the query was over (before `MAX_PAGES`).
    complete: bool,
    pages: Vec<PageFigures>,
    /// Wall time of the pages without latency (the least of `CPU_PASSES` passes), and the items
    /// they returned.
    cpu: (Duration, usize),
    /// What went wrong over the pages of a longer pass, if one was made (TypeScript's: to the
    /// point where every item came back), its pages, and whether the query ended there.
    long_check: Option<(Wrong, usize, bool)>,
}

fn text(item: &Item, attribute: &str) -> Option<String> {
    match item.get(attribute) {
        Some(AttributeValue::S(s)) => Some(s.clone()),
        _ => None,
    }
}

/// Our store for a run: the items with their keys, and the hash key of every unique id.
fn load(
    runtime: &Runtime,
    schema: &Schema,
    records: &[Value],
) -> BenchResult<(MemoryStore, HashMap<String, String>)> {
    let store = MemoryStore::new(TableDefinition::from_schema(schema)?);
    let user = schema.entity("user")?;
    let keyed: Vec<Item> = records
        .iter()
        .map(|r| Ok(user.add_keys(&serde_dynamo::to_item(r)?)?))
        .collect::<BenchResult<_>>()?;
    let hash_keys = keyed
        .iter()
        .filter_map(|i| Some((text(i, "userId")?, text(i, "hashKey")?)))
        .collect();
    runtime.block_on(store.batch_write(keyed.into_iter().map(WriteRequest::Put).collect()))?;
    Ok((store, hash_keys))
}

fn query<'a, S: Store>(store: &'a S, schema: &'a Schema, run: &Run) -> BenchResult<Query<'a, S>> {
    Ok(Query::new(store, schema.entity("user")?)
        .index(INDEX)
        .shards_between(WINDOW.0, WINDOW.1)
        .limit(run.limit)
        .page_size(run.page_size)
        .throttle(THROTTLE))
}

/// Pages `query` to its end or `pages` pages, each timed.
async fn page_through<S: Store>(
    query: &Query<'_, S>,
    pages: usize,
) -> Result<(Vec<PageFigures>, bool), Error> {
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    for _ in 0..pages {
        let started = Instant::now();
        let page = query.page(token.as_deref()).await?;
        let wall = started.elapsed();
        token = page.next;
        out.push(PageFigures {
            wall_ns: wall.as_secs_f64() * 1e9,
            shard_queries: page.stats.shard_queries,
            items_read: page.stats.items_read,
            items_returned: page.items.len(),
            token_len: token.as_ref().map_or(0, String::len),
            ids: page
                .items
                .iter()
                .map(|i| text(i, "userId").unwrap_or_default())
                .collect(),
        });
        if token.is_none() {
            return Ok((out, true));
        }
    }
    Ok((out, false))
}

/// Our side of a run: the pages without latency (CPU), then with it.
fn ours(
    runtime: &Runtime,
    timer: &PreciseTimer,
    records: &[Value],
    run: &Run,
) -> BenchResult<(Outcome, HashMap<String, String>)> {
    let schema = Schema::from_ts_config(&config(run.bump), ShardSpace::Product)?;
    let (inner, hash_keys) = load(runtime, &schema, records)?;
    let populated: HashSet<&String> = hash_keys.values().collect();
    if populated.len() != run.shards {
        return Err(format!("{} populated shards, not {}", populated.len(), run.shards).into());
    }
    // warm-up, then the CPU passes
    runtime.block_on(page_through(&query(&inner, &schema, run)?, 1))?;
    let mut cpu = (Duration::MAX, 0);
    for _ in 0..CPU_PASSES {
        let started = Instant::now();
        let (bare, _) = runtime.block_on(page_through(&query(&inner, &schema, run)?, MAX_PAGES))?;
        let took = started.elapsed();
        if took < cpu.0 {
            cpu = (took, bare.iter().map(|p| p.items_returned).sum());
        }
    }
    let store = Hooked {
        inner,
        hook: Latency::new(DELAY, Clock::Precise, timer),
    };
    let (pages, complete) =
        runtime.block_on(page_through(&query(&store, &schema, run)?, MAX_PAGES))?;
    let lanes = runtime
        .block_on(query(&store.inner, &schema, run)?.page(None))?
        .stats
        .shards;
    Ok((
        Outcome {
            lanes,
            mean_wait: store.hook.mean_wait(),
            complete,
            pages,
            cpu,
            long_check: None,
        },
        hash_keys,
    ))
}

// ---------------------------------------------------------------------------------------------
// The TypeScript side

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TsRun {
    lanes: usize,
    hash_keys: HashMap<String, String>,
    mean_wait_ns: f64,
    complete: bool,
    pages: Vec<PageFigures>,
    /// Wall time of the first `cpuPages` pages of each pass.
    pass_ns: Vec<f64>,
}

#[derive(Deserialize)]
struct TsReport {
    node: String,
    runs: Vec<TsRun>,
}

/// Runs `tests/ts-bench/query.mjs` on every run, with latency and without.
fn typescript(node_path: &std::ffi::OsStr, records: &[Value]) -> BenchResult<(String, Vec<TsRun>)> {
    let dir = out_dir();
    std::fs::create_dir_all(&dir)?;
    let items = dir.join("query-items.jsonl");
    let lines: String = records.iter().map(|v| v.to_string() + "\n").collect();
    std::fs::write(&items, lines)?;
    let mut runs = Vec::new();
    for (n, run) in RUNS.iter().enumerate() {
        let path = dir.join(format!("query-config-{n}.json"));
        std::fs::write(&path, config(run.bump).to_string())?;
        // with latency, then the CPU and check passes without
        for (delay, pages, repeats) in [
            (DELAY.as_millis(), MAX_PAGES, 1),
            (0, CHECK_PAGES, CPU_PASSES),
        ] {
            runs.push(json!({
                "name": format!("{n}-{delay}"),
                "config": path,
                "index": INDEX,
                "limit": run.limit,
                "pageSize": run.page_size,
                "throttle": THROTTLE,
                "maxPages": pages,
                "delayMs": delay,
                "clock": "precise",
                "timestampFrom": WINDOW.0,
                "timestampTo": WINDOW.1,
                "untilCovered": delay == 0,
                "repeats": repeats,
                "cpuPages": MAX_PAGES,
            }));
        }
    }
    let spec = dir.join("query-spec.json");
    std::fs::write(
        &spec,
        json!({ "items": items, "entity": "user", "runs": runs }).to_string(),
    )?;
    let out = dir.join("query-ts.json");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ts-bench/query.mjs");
    let output = Command::new("node")
        .env("NODE_PATH", node_path)
        .arg(script)
        .arg(&spec)
        .arg(&out)
        .output()?;
    if !output.status.success() {
        return Err(format!("node failed: {}", String::from_utf8_lossy(&output.stderr)).into());
    }
    let report: TsReport = serde_json::from_slice(&std::fs::read(&out)?)?;
    if report.runs.len() != 2 * RUNS.len() {
        return Err(format!(
            "node reported {} runs, not {}",
            report.runs.len(),
            2 * RUNS.len()
        )
        .into());
    }
    Ok((report.node, report.runs))
}

// ---------------------------------------------------------------------------------------------
// The oracle

/// The rank of every unique id in the index's order: `created`, then the id (what the table's
/// range key `userId#<id>` breaks ties with).
fn ranks(records: &[Value]) -> BenchResult<HashMap<String, usize>> {
    let mut order: Vec<(u64, &str)> = records
        .iter()
        .map(|r| {
            Ok((
                r["created"].as_u64().ok_or("created is not a number")?,
                r["userId"].as_str().ok_or("userId is not a string")?,
            ))
        })
        .collect::<BenchResult<_>>()?;
    order.sort_unstable();
    Ok(order
        .into_iter()
        .enumerate()
        .map(|(rank, (_, id))| (id.to_owned(), rank))
        .collect())
}

/// What a run got wrong against the oracle.
#[derive(Debug, Default, PartialEq, Eq)]
struct Wrong {
    /// Items returned again (on a later page, or twice on one page).
    duplicates: usize,
    /// Items never returned, though an item after them in the order was (all of them when the
    /// query said it was over).
    misses: usize,
    /// Items returned after an item that sorts after them (on an earlier page, or earlier on
    /// the same page).
    inversions: usize,
    /// Ids that are not items at all.
    unknown: usize,
}

fn check(ranks: &HashMap<String, usize>, pages: &[PageFigures], complete: bool) -> Wrong {
    let mut wrong = Wrong::default();
    let mut seen = vec![false; ranks.len()];
    // the highest rank returned so far
    let mut high: Option<usize> = None;
    for page in pages {
        for id in &page.ids {
            let Some(&rank) = ranks.get(id) else {
                wrong.unknown += 1;
                continue;
            };
            if seen[rank] {
                wrong.duplicates += 1;
                continue;
            }
            seen[rank] = true;
            if high.is_some_and(|h| rank < h) {
                wrong.inversions += 1;
            }
            high = high.max(Some(rank));
        }
    }
    let frontier = if complete {
        ranks.len()
    } else {
        high.map_or(0, |h| h + 1)
    };
    wrong.misses = seen[..frontier].iter().filter(|s| !**s).count();
    wrong
}

/// The oracle on a hand-made sequence over five items `a`..`e` (ranks 0..4): pages `a c`, then
/// `c b e`, unfinished: `c` again (a duplicate), `b` after `c` (an inversion), `d` never (a
/// miss: `e` came), `z` no item.
fn check_the_oracle() -> BenchResult<()> {
    let ranks: HashMap<String, usize> = ["a", "b", "c", "d", "e"]
        .iter()
        .enumerate()
        .map(|(rank, id)| ((*id).to_owned(), rank))
        .collect();
    let page = |ids: &[&str]| PageFigures {
        wall_ns: 0.0,
        shard_queries: 0,
        items_read: 0,
        items_returned: ids.len(),
        token_len: 0,
        ids: ids.iter().map(|id| (*id).to_owned()).collect(),
    };
    let pages = [page(&["a", "c"]), page(&["c", "b", "e", "z"])];
    let expected = Wrong {
        duplicates: 1,
        misses: 1,
        inversions: 1,
        unknown: 1,
    };
    let got = check(&ranks, &pages, false);
    if got != expected {
        return Err(format!("the oracle counted {got:?}, not {expected:?}").into());
    }
    // the query said it was over: nothing after `e` is left, but `d` still is a miss; without
    // `e`, so is everything after `c`
    let short = [page(&["a", "c"]), page(&["b"])];
    let got = (
        check(&ranks, &pages, true),
        check(&ranks, &short, true),
        check(&ranks, &short, false),
    );
    let expected = (
        Wrong {
            duplicates: 1,
            misses: 1,
            inversions: 1,
            unknown: 1,
        },
        Wrong {
            duplicates: 0,
            misses: 2,
            inversions: 1,
            unknown: 0,
        },
        Wrong {
            duplicates: 0,
            misses: 0,
            inversions: 1,
            unknown: 0,
        },
    );
    if got != expected {
        return Err(format!("the oracle counted {got:?}, not {expected:?}").into());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The table

#[allow(clippy::cast_precision_loss)] // counts and durations far below 2^52, printed as ratios
fn row(out: &mut String, library: &str, run: &Run, o: &Outcome, wrong: &Wrong) {
    let pages = o.pages.len().max(1) as f64;
    let wall: f64 = o.pages.iter().map(|p| p.wall_ns).sum();
    let rounds: usize = o
        .pages
        .iter()
        .map(|p| p.shard_queries.div_ceil(THROTTLE))
        .sum();
    let sum = |f: fn(&PageFigures) -> usize| o.pages.iter().map(f).sum::<usize>();
    let (queries, read, returned) = (
        sum(|p| p.shard_queries),
        sum(|p| p.items_read),
        sum(|p| p.items_returned),
    );
    let token = o.pages.iter().map(|p| p.token_len).max().unwrap_or(0);
    let floor = |wait: f64| wall / (rounds.max(1) as f64 * wait);
    let wait_ns = o.mean_wait.as_secs_f64() * 1e9;
    let cpu_us = o.cpu.0.as_secs_f64() * 1e6;
    let misses = o
        .long_check
        .as_ref()
        .map_or(wrong.misses, |(long, _, _)| long.misses);
    let _ = writeln!(
        out,
        "| {library} | {} / {} | {} / {} | {}{} | {:.1} | {:.2}× | {:.2}× ({:.2} ms) | {:.1} | {:.0} / {:.0} ({:.2}) | {:.0} | {:.2} | {token} | {} / {misses} / {} |",
        run.shards,
        o.lanes,
        run.limit,
        run.page_size,
        o.pages.len(),
        if o.complete { " (end)" } else { "" },
        wall / pages / 1e6,
        floor(DELAY.as_secs_f64() * 1e9),
        floor(wait_ns),
        wait_ns / 1e6,
        queries as f64 / pages,
        read as f64 / pages,
        returned as f64 / pages,
        read as f64 / returned.max(1) as f64,
        cpu_us / pages,
        cpu_us / o.cpu.1.max(1) as f64,
        wrong.duplicates,
        wrong.inversions,
    );
}

/// Under `cargo test --benches`: ours on the first run's config, without latency, a few pages,
/// must be exact.
fn smoke(runtime: &Runtime, records: &[Value], ranks: &HashMap<String, usize>) -> BenchResult<()> {
    check_the_oracle()?;
    let run = &RUNS[0];
    let schema = Schema::from_ts_config(&config(run.bump), ShardSpace::Product)?;
    let (store, _) = load(runtime, &schema, records)?;
    let (pages, complete) = runtime.block_on(page_through(&query(&store, &schema, run)?, 5))?;
    let wrong = check(ranks, &pages, complete);
    if wrong != Wrong::default() || pages.iter().any(|p| p.items_returned != run.limit) {
        return Err(format!("our query is not exact: {wrong:?}").into());
    }
    println!(
        "query_ts: ours exact over 5 pages (run `cargo bench` with EM_TS_NODE_PATH for the table)"
    );
    Ok(())
}

/// TypeScript's row of a run, and a note on its longer check pass.
fn typescript_row(
    out: &mut String,
    notes: &mut String,
    ranks: &HashMap<String, usize>,
    run: &Run,
    timed: TsRun,
    bare: &TsRun,
) {
    let theirs = Outcome {
        lanes: timed.lanes,
        mean_wait: Duration::from_secs_f64(timed.mean_wait_ns / 1e9),
        complete: timed.complete,
        pages: timed.pages,
        cpu: (
            Duration::from_secs_f64(
                bare.pass_ns.iter().copied().fold(f64::INFINITY, f64::min) / 1e9,
            ),
            bare.pages
                .iter()
                .take(MAX_PAGES)
                .map(|p| p.items_returned)
                .sum(),
        ),
        long_check: Some((
            check(ranks, &bare.pages, bare.complete),
            bare.pages.len(),
            bare.complete,
        )),
    };
    let wrong = check(ranks, &theirs.pages, theirs.complete);
    row(out, "TypeScript 6.14.0", run, &theirs, &wrong);
    if let Some((long, pages, ended)) = &theirs.long_check {
        let reach = if *ended {
            format!("ended at page {pages}")
        } else if *pages < CHECK_PAGES {
            format!("had returned every item by page {pages}")
        } else {
            format!("had not returned every item in {pages} pages")
        };
        let _ = writeln!(
            notes,
            "- TypeScript, {} shards, limit {}, page size {}: the pass without latency \
             {reach}; over those pages {} duplicates, {} misses, {} inversions.",
            run.shards, run.limit, run.page_size, long.duplicates, long.misses, long.inversions
        );
    }
}

fn main() -> BenchResult<()> {
    let records = users::records(ITEMS);
    let ranks = ranks(&records)?;
    if ranks.len() != ITEMS {
        return Err("the generator repeated an id".into());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    if !std::env::args().any(|a| a == "--bench") {
        return smoke(&runtime, &records, &ranks);
    }

    let ts = if let Some(node_path) = std::env::var_os("EM_TS_NODE_PATH") {
        Some(typescript(&node_path, &records)?)
    } else {
        println!(
            "query_ts: EM_TS_NODE_PATH is unset, so the TypeScript side is skipped \
             (export EM_TS_NODE_PATH=$(bash tests/ts-bench/install.sh) to run it); ours only:"
        );
        None
    };

    let timer = PreciseTimer::start();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{ITEMS} items, index `{INDEX}`, {} ms per shard query, throttle {THROTTLE}, up to {MAX_PAGES} pages{}:\n",
        DELAY.as_millis(),
        ts.as_ref()
            .map_or(String::new(), |(node, _)| format!(", Node {node}")),
    );
    let _ = writeln!(
        out,
        "| library | shards / lanes | limit / page size | pages | wall ms / page | page ÷ floor (nominal 5 ms) | page ÷ floor (mean wait) | shard queries / page | items read / returned per page (read ÷ returned) | CPU µs / page (no latency) | CPU µs / returned item | largest token | duplicates / misses / inversions |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let mut ts_runs = ts.map(|(_, runs)| runs.into_iter());
    let mut notes = String::new();
    for run in &RUNS {
        let (mine, hash_keys) = ours(&runtime, &timer, &records, run)?;
        let wrong = check(&ranks, &mine.pages, mine.complete);
        // every page but the last holds exactly `limit` items
        let short = mine
            .pages
            .iter()
            .rev()
            .skip(usize::from(mine.complete))
            .any(|p| p.items_returned != run.limit);
        if wrong != Wrong::default() || short {
            return Err(format!(
                "our query is not exact at {} shards, limit {}: {wrong:?}{}",
                run.shards,
                run.limit,
                if short {
                    ", a page not of the limit"
                } else {
                    ""
                }
            )
            .into());
        }
        if let Some(node_runs) = ts_runs.as_mut() {
            let (Some(with_latency), Some(bare)) = (node_runs.next(), node_runs.next()) else {
                return Err("node reported fewer runs than asked".into());
            };
            if with_latency.hash_keys != hash_keys {
                return Err(format!(
                    "the two libraries placed the items in different shards ({} shards)",
                    run.shards
                )
                .into());
            }
            typescript_row(&mut out, &mut notes, &ranks, run, with_latency, &bare);
        }
        row(&mut out, "**ours**", run, &mine, &wrong);
    }
    print!("{out}");
    if !notes.is_empty() {
        println!("\n{notes}");
    }
    Ok(())
}
