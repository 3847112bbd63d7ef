//! Throughput of bulk jobs split across workers on DynamoDB Local (issue 32): items per second of
//! `migrate` and `purge`, 1 worker and 4 workers (tasks with their own share of 64 segments and
//! their own journal file), against a baseline in the same run that does the same reads and
//! writes with aws-sdk-dynamodb alone: a parallel scan (the same segments, as many in flight)
//! and `BatchWriteItem` (a move is a delete and a put; a purge, deletes). Then the rate limit:
//! a purge under `--max-writes`, whose achieved rate is compared with its setting.
//!
//! ```text
//! bash .ci/dynamodb-local.sh cargo bench -p entity-manager-tests --bench workers
//! # size and rounds: EM_BENCH_RECORDS (default 2,000), EM_BENCH_ROUNDS (default 3)
//! ```
//!
//! Each round runs every variant once on a fresh table (created, filled, then timed, checked
//! and deleted), in an order that rotates between rounds; the medians of the rounds and the
//! ratios to the baseline of the same number of workers are printed as a Markdown table
//! (BENCHMARKS.md). Without `DYNAMODB_ENDPOINT` the bench says so and exits.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use aws_sdk_dynamodb::types::{DeleteRequest, PutRequest, WriteRequest as AwsWrite};
use entity_manager::job::{JobHeader, JobKind, Journal};
use entity_manager::migrate::Migration;
use entity_manager::model::ShardSpace;
use entity_manager::scan::{BulkWrites, ParallelScan, SegmentRange};
use entity_manager::store::{
    DynamoStore, RateLimit, RateLimited, Store, TableDefinition, WriteRequest,
};
use entity_manager::{AttributeValue, Item, Schema};
use futures::StreamExt;
use serde_json::{Value, json};

type BenchResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const SEGMENTS: u32 = 64;
/// Segments each worker reads at once (the library's default throttle).
const THROTTLE: usize = 4;
const PAGE: i32 = 100;

fn config_a() -> BenchResult<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/compat/product-user-service.json");
    let all: Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    Ok(all["config"].clone())
}

/// B: a new bump (3 bits, 3 characters) from 1,740,000,000,000 on; every record is created
/// after it, so every record moves.
fn config_b() -> BenchResult<Value> {
    let mut b = config_a()?;
    b["entities"]["user"]["shardBumps"]
        .as_array_mut()
        .ok_or("no shardBumps")?
        .push(json!({ "timestamp": 1_740_000_000_000u64, "charBits": 3, "chars": 3 }));
    Ok(b)
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn users(n: usize) -> BenchResult<Vec<Item>> {
    (0..n)
        .map(|i| {
            let created = 1_741_000_000_000u64 + (i as u64 * 7_919 % n as u64) * 1_000_000;
            Ok(serde_dynamo::to_item(json!({
                "userId": format!("u{i:06}"),
                "created": created,
                "firstNameCanonical": format!("f{}", i % 5),
                "lastNameCanonical": format!("l{}", i % 7),
                "phone": format!("+4670{i:07}"),
            }))?)
        })
        .collect()
}

fn client(endpoint: &str) -> aws_sdk_dynamodb::Client {
    use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    let conf = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("local", "local", None, None, "static"))
        .build();
    aws_sdk_dynamodb::Client::from_conf(conf)
}

fn text(item: &Item, name: &str) -> String {
    match item.get(name) {
        Some(AttributeValue::S(s)) => s.clone(),
        _ => String::new(),
    }
}

fn key_of(item: &Item) -> (String, String) {
    (text(item, "hashKey"), text(item, "rangeKey"))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Job {
    Migrate,
    Purge,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Way {
    /// The library, writing as this mode says.
    Library(BulkWrites),
    Baseline,
    /// The baseline asking for the consumed capacity of each request, as the library does
    /// (`ReturnConsumedCapacity=TOTAL`, for its spans and reports).
    BaselineCapacity,
}

struct Setup {
    endpoint: String,
    a: Schema,
    b: Schema,
    before: Vec<Item>,
    /// B's item of each record, by A's key.
    after: HashMap<(String, String), Item>,
}

async fn fresh_table(setup: &Setup, name: &str) -> BenchResult<DynamoStore> {
    let store = DynamoStore::new(
        client(&setup.endpoint),
        name,
        TableDefinition::from_schema(&setup.b)?,
    );
    store.create_table().await?;
    for chunk in setup.before.chunks(500) {
        store
            .batch_write(chunk.iter().cloned().map(WriteRequest::Put).collect())
            .await?;
    }
    Ok(store)
}

/// The library: `workers` tasks, each a share of the segments with its journal file.
async fn library(
    setup: &Setup,
    store: &DynamoStore,
    (job, writes): (Job, BulkWrites),
    workers: u32,
) -> BenchResult<()> {
    let migration = Migration::between(&setup.a, &setup.b)?;
    let dir = std::env::temp_dir();
    let runs = (0..workers).map(|w| {
        let migration = &migration;
        let dir = dir.clone();
        async move {
            let range = SegmentRange::worker(SEGMENTS, w, workers)?;
            let kind = if job == Job::Migrate {
                JobKind::Migrate
            } else {
                JobKind::Purge
            };
            let path = dir.join(format!("em-bench-{}-{w}.jsonl", std::process::id()));
            let _ = std::fs::remove_file(&path);
            let header = JobHeader::new(kind, "bench", range);
            // EM_BENCH_JOURNAL=memory: the journal in memory, to see what its file costs
            let journal = if std::env::var("EM_BENCH_JOURNAL").is_ok_and(|j| j == "memory") {
                Journal::in_memory(header)
            } else {
                Journal::open(&path, header)?
            };
            let scan = ParallelScan::new(store)
                .page_size(PAGE.unsigned_abs())
                .throttle(THROTTLE)
                .writes(writes);
            match job {
                Job::Migrate => {
                    migration
                        .run_job(scan, &journal, |_| std::ops::ControlFlow::Continue(()))
                        .await?;
                }
                Job::Purge => {
                    scan.purge_job(
                        &journal,
                        |_| "user".to_owned(),
                        |_| std::ops::ControlFlow::Continue(()),
                    )
                    .await?;
                }
            }
            let _ = std::fs::remove_file(&path);
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        }
    });
    futures::future::try_join_all(runs).await?;
    Ok(())
}

/// The baseline: `workers × THROTTLE` segments read at once, page by page, each page written
/// with `BatchWriteItem` (25 a request, unprocessed items sent again).
async fn baseline(
    setup: &Setup,
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    (job, capacity): (Job, bool),
    workers: u32,
) -> BenchResult<()> {
    let capacity = capacity.then_some(aws_sdk_dynamodb::types::ReturnConsumedCapacity::Total);
    let in_flight = usize::try_from(workers)? * THROTTLE;
    let capacity = &capacity;
    let segments = futures::stream::iter(0..SEGMENTS)
        .map(|segment| async move {
            let mut start = None;
            loop {
                let page = client
                    .scan()
                    .table_name(table)
                    .segment(i32::try_from(segment)?)
                    .total_segments(i32::try_from(SEGMENTS)?)
                    .limit(PAGE)
                    .set_exclusive_start_key(start.take())
                    .set_return_consumed_capacity(capacity.clone())
                    .send()
                    .await?;
                let mut writes = Vec::new();
                for raw in page.items.unwrap_or_default() {
                    let item: Item = raw.clone().into();
                    let (hash, range) = key_of(&item);
                    if hash == "__entityManager" {
                        continue;
                    }
                    let key: HashMap<_, _> = [
                        ("hashKey".to_owned(), raw["hashKey"].clone()),
                        ("rangeKey".to_owned(), raw["rangeKey"].clone()),
                    ]
                    .into_iter()
                    .collect();
                    if job == Job::Migrate {
                        let Some(target) = setup.after.get(&(hash, range)) else {
                            continue; // moved here already
                        };
                        let target: HashMap<String, aws_sdk_dynamodb::types::AttributeValue> =
                            target.clone().into();
                        writes.push(
                            AwsWrite::builder()
                                .put_request(PutRequest::builder().set_item(Some(target)).build()?)
                                .build(),
                        );
                    }
                    writes.push(
                        AwsWrite::builder()
                            .delete_request(DeleteRequest::builder().set_key(Some(key)).build()?)
                            .build(),
                    );
                }
                for chunk in writes.chunks(25) {
                    let mut pending = chunk.to_vec();
                    while !pending.is_empty() {
                        let out = client
                            .batch_write_item()
                            .request_items(table, pending)
                            .set_return_consumed_capacity(capacity.clone())
                            .send()
                            .await?;
                        pending = out
                            .unprocessed_items
                            .and_then(|mut u| u.remove(table))
                            .unwrap_or_default();
                    }
                }
                match page.last_evaluated_key {
                    Some(k) => start = Some(k),
                    None => return Ok::<_, Box<dyn std::error::Error + Send + Sync>>(()),
                }
            }
        })
        .buffer_unordered(in_flight);
    let results: Vec<_> = segments.collect().await;
    for r in results {
        r?;
    }
    Ok(())
}

/// One timed run on a fresh table; checks the result. Returns the seconds.
async fn run(setup: &Setup, job: Job, way: Way, workers: u32, round: usize) -> BenchResult<f64> {
    let way_name = match way {
        Way::Library(mode) => format!("{mode:?}"),
        other => format!("{other:?}"),
    };
    let name = format!(
        "bench-workers-{}-{round}-{job:?}-{way_name}-{workers}",
        std::process::id()
    );
    let store = fresh_table(setup, &name).await?;
    let client = client(&setup.endpoint);
    let started = Instant::now();
    match way {
        Way::Library(writes) => library(setup, &store, (job, writes), workers).await?,
        Way::Baseline => baseline(setup, &client, &name, (job, false), workers).await?,
        Way::BaselineCapacity => baseline(setup, &client, &name, (job, true), workers).await?,
    }
    let seconds = started.elapsed().as_secs_f64();
    let mut left: Vec<Item> = Vec::new();
    let mut items = std::pin::pin!(ParallelScan::new(&store).items());
    while let Some(item) = items.next().await {
        left.push(item?);
    }
    let expected = match job {
        Job::Migrate => setup.before.len(),
        Job::Purge => 0,
    };
    if left.len() != expected
        || (job == Job::Migrate && left.iter().any(|i| setup.after.contains_key(&key_of(i))))
    {
        return Err(format!(
            "{job:?} {way:?} {workers}: {} items left, some not moved",
            left.len()
        )
        .into());
    }
    store.delete_table().await?;
    Ok(seconds)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(f64::NAN)
}

#[tokio::main]
async fn main() -> BenchResult<()> {
    let Ok(endpoint) = std::env::var("DYNAMODB_ENDPOINT") else {
        eprintln!(
            "workers bench: DYNAMODB_ENDPOINT is not set (run it under .ci/dynamodb-local.sh); skipped"
        );
        return Ok(());
    };
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let n = env_number("EM_BENCH_RECORDS", 2_000);
    let rounds = env_number("EM_BENCH_ROUNDS", 3);
    let a = Schema::from_ts_config(&config_a()?, ShardSpace::Product)?;
    let b = Schema::from_ts_config(&config_b()?, ShardSpace::Product)?;
    let records = users(n)?;
    let before: Vec<Item> = records
        .iter()
        .map(|r| a.entity("user").and_then(|e| e.add_keys(r)))
        .collect::<Result<_, _>>()?;
    let after = records
        .iter()
        .zip(&before)
        .map(|(r, old)| Ok((key_of(old), b.entity("user")?.add_keys(r)?)))
        .collect::<BenchResult<HashMap<_, _>>>()?;
    if after.iter().any(|(k, v)| *k == key_of(v)) {
        return Err("a record does not move".into());
    }
    let setup = Setup {
        endpoint,
        a,
        b,
        before,
        after,
    };
    let modes = [BulkWrites::Guarded, BulkWrites::Exclusive];
    let ways: Vec<Way> = modes
        .iter()
        .map(|m| Way::Library(*m))
        .chain([Way::Baseline, Way::BaselineCapacity])
        .collect();
    let variants: Vec<(Job, Way, u32)> = [Job::Migrate, Job::Purge]
        .into_iter()
        .flat_map(|job| {
            ways.iter()
                .flat_map(move |way| [1, 4].map(|w| (job, *way, w)))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut times: HashMap<(Job, Way, u32), Vec<f64>> = HashMap::new();
    for round in 0..rounds {
        for i in 0..variants.len() {
            let (job, way, workers) = variants[(i + round) % variants.len()];
            let s = run(&setup, job, way, workers, round).await?;
            eprintln!("round {round}: {job:?} {way:?} {workers} worker(s): {s:.2} s");
            times.entry((job, way, workers)).or_default().push(s);
        }
    }
    println!("\n{n} records, {rounds} rounds, medians:\n");
    println!(
        "| job | workers | writes | library items/s | baseline items/s | library / baseline | baseline with capacity items/s | library / it |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    #[allow(clippy::cast_precision_loss)]
    let items = n as f64;
    for job in [Job::Migrate, Job::Purge] {
        for workers in [1, 4] {
            let base = median(times[&(job, Way::Baseline, workers)].clone());
            let capacity = median(times[&(job, Way::BaselineCapacity, workers)].clone());
            for mode in modes {
                let lib = median(times[&(job, Way::Library(mode), workers)].clone());
                println!(
                    "| {job:?} | {workers} | {mode:?} | {:.0} | {:.0} | {:.2} | {:.0} | {:.2} |",
                    items / lib,
                    items / base,
                    base / lib,
                    items / capacity,
                    capacity / lib
                );
            }
        }
    }

    rate_limit(&setup).await
}

/// The rate limit: a purge by one worker at most `limit` writes a second, achieved rate printed.
async fn rate_limit(setup: &Setup) -> BenchResult<()> {
    // the rate limit: a purge by one worker at most `limit` writes a second
    for limit in [100.0, 400.0] {
        let name = format!("bench-workers-{}-rate-{limit}", std::process::id());
        let store = RateLimited::new(
            fresh_table(setup, &name).await?,
            RateLimit::none().writes(limit),
        );
        let journal = Journal::in_memory(JobHeader::new(
            JobKind::Purge,
            "rate",
            SegmentRange::all(SEGMENTS)?,
        ));
        let started = Instant::now();
        ParallelScan::new(&store)
            .page_size(PAGE.unsigned_abs())
            .purge_job(
                &journal,
                |_| "user".to_owned(),
                |_| std::ops::ControlFlow::Continue(()),
            )
            .await?;
        let elapsed = started.elapsed();
        let usage = store.usage();
        // the first second's burst is allowed on top of the rate
        #[allow(clippy::cast_precision_loss)]
        let achieved = (usage.items_written as f64 - limit) / elapsed.as_secs_f64();
        println!(
            "rate limit {limit} writes/s: {} items deleted in {:.2} s, {achieved:.1} writes/s after the first second's burst ({:+.1} %)",
            usage.items_written,
            elapsed.as_secs_f64(),
            (achieved / limit - 1.0) * 100.0
        );
        store.inner().delete_table().await?;
    }
    Ok(())
}
