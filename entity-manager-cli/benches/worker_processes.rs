//! Bulk jobs at the SDK's pace with worker PROCESSES (issue 49, point 4): `purge` and `migrate`
//! of 20,000 records on DynamoDB Local by 4 processes of the `entity-manager` binary (each
//! `--worker i/4` of 64 segments, 4 in flight, pages of 100, its own `--checkpoint` journal),
//! in `--exclusive` mode and in the default guarded mode, against a hand-written baseline of 4
//! processes of this bench's own binary that do the same reads and writes with aws-sdk-dynamodb
//! alone: the same share of the segments, as many in flight, pages of 100, every page written
//! with `BatchWriteItem` (25 a request, unprocessed items sent again; a move is a put and a
//! delete, a purge a delete).
//!
//! ```text
//! bash .ci/dynamodb-local.sh cargo bench -p entity-manager-cli --bench worker_processes
//! # size and rounds: EM_BENCH_RECORDS (default 20,000), EM_BENCH_ROUNDS (default 3); the
//! # guarded mode in the first EM_BENCH_GUARDED_ROUNDS rounds only (default: every round);
//! # EM_BENCH_COUNT=0: no counting pass; EM_BENCH_VERBOSE=1: each worker's report
//! ```
//!
//! Each round runs every variant once on a fresh table (created by `entity-manager table
//! create`, filled, then timed, checked and deleted), in an order that rotates between rounds.
//! **Timed**: from starting the first of the 4 processes to the exit of the last, for both
//! sides (both pay their processes' start-up; the table's creation and filling are not timed).
//! Each process also reports the seconds of its own job (the binary's `usage.seconds`, the
//! baseline's from its first request), printed beside. **Checked** afterwards: the table empty
//! after a purge; after a migration, every record at its new key and nothing else.
//!
//! Then a counting pass, untimed, once per job and way: requests and consumed capacity units
//! per record as DynamoDB Local reports them (`ReturnConsumedCapacity=TOTAL`, which the library
//! asks for only when a `tracing` subscriber records its spans: so the library's side runs in
//! this process, 4 tasks each with a worker's share and journal, under a subscriber that adds
//! up its operation spans; the baseline's side is its 4 processes, asking for the capacity).
//!
//! Under `cargo test --benches` (no `--bench` argument) it runs a smoke version, 200 records and
//! one round, that checks the results only; without `DYNAMODB_ENDPOINT` it says so and exits.

#[path = "../tests/support/mod.rs"]
mod support;

use std::cell::Cell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use aws_sdk_dynamodb::types::{
    DeleteRequest, PutRequest, ReturnConsumedCapacity, WriteRequest as AwsWrite,
};
use entity_manager::job::{JobHeader, JobKind, Journal};
use entity_manager::migrate::Migration;
use entity_manager::model::ShardSpace;
use entity_manager::scan::{BulkWrites, ParallelScan, SegmentRange};
use entity_manager::store::{DynamoStore, Store, WriteRequest};
use entity_manager::{Item, Schema};
use futures::{StreamExt, TryStreamExt};
use serde_json::{Value, json};

use support::{BoxError, assert_code, bin, runtime, sorted, table_items, text};

const WORKERS: u32 = 4;
const SEGMENTS: u32 = 64;
/// Segments each worker reads at once (the binary's default `--throttle`).
const THROTTLE: usize = 4;
const PAGE: i32 = 100;
/// The variable that makes this binary a baseline worker: its share, `INDEX/WORKERS`.
const BASELINE_WORKER: &str = "EM_BASELINE_WORKER";
/// DynamoDB on-demand, us-east-1 (aws.amazon.com/dynamodb/pricing/on-demand, since
/// 2024-11-01): dollars per million write request units, and per million read request units.
const WRITE_PRICE: f64 = 0.625;
const READ_PRICE: f64 = 0.125;

/// Schema B: the User service with a new bump (3 bits, 3 characters) from 1,740,000,000,000 on;
/// every record of the bench is created after it, so every record moves.
fn config_b() -> Result<Value, BoxError> {
    let mut b = support::user_service_config()?;
    b["entities"]["user"]["shardBumps"]
        .as_array_mut()
        .ok_or("no shardBumps")?
        .push(json!({ "timestamp": 1_740_000_000_000u64, "charBits": 3, "chars": 3 }));
    Ok(b)
}

fn schemas() -> Result<(Schema, Schema), BoxError> {
    Ok((
        Schema::from_ts_config(&support::user_service_config()?, ShardSpace::Product)?,
        Schema::from_ts_config(&config_b()?, ShardSpace::Product)?,
    ))
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// `n` users, all created after B's bump (every one moves).
fn users(n: usize) -> Result<Vec<Item>, BoxError> {
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Job {
    Migrate,
    Purge,
}

impl Job {
    fn name(self) -> &'static str {
        match self {
            Self::Migrate => "migrate",
            Self::Purge => "purge",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Way {
    /// The `entity-manager` binary, writing as this mode says.
    Library(BulkWrites),
    /// This binary as a hand-written aws-sdk-dynamodb worker.
    Baseline,
}

impl Way {
    fn name(self) -> &'static str {
        match self {
            Self::Library(BulkWrites::Exclusive) => "exclusive",
            Self::Library(_) => "guarded",
            Self::Baseline => "baseline",
        }
    }
}

struct Setup {
    endpoint: String,
    /// Schema A's and B's configuration files.
    a_path: PathBuf,
    b_path: PathBuf,
    a: Schema,
    b: Schema,
    /// The records under A's keys, as the table holds them before a job.
    before: Vec<Item>,
    /// The records under B's keys, sorted: the table after a migration.
    after: Vec<Item>,
}

/// A fresh table of B's layout (created and stamped by the binary), filled with `before`.
fn fresh_table(setup: &Setup, name: &str) -> Result<DynamoStore, BoxError> {
    let out = bin()
        .args(["table", "create", "--config"])
        .arg(&setup.b_path)
        .args(["--table", name, "--endpoint", &setup.endpoint])
        .args(["--region", "us-east-1"])
        .stdin(Stdio::null())
        .output()?;
    assert_code(&out, 0);
    let store = support::store(&setup.endpoint, name, &setup.b)?;
    runtime()?.block_on(async {
        futures::stream::iter(setup.before.chunks(500))
            .map(|chunk| store.batch_write(chunk.iter().cloned().map(WriteRequest::Put).collect()))
            .buffer_unordered(8)
            .try_collect::<Vec<()>>()
            .await
    })?;
    Ok(store)
}

/// The journal of worker `w`, removed if an earlier run left it.
fn journal(table: &str, w: u32) -> PathBuf {
    let path = std::env::temp_dir().join(format!("em-bench-{table}-{w}.jsonl"));
    let _ = std::fs::remove_file(&path);
    path
}

/// The command of worker `w` of `job` done `way` on `table`.
fn worker(setup: &Setup, table: &str, (job, way): (Job, Way), w: u32) -> Command {
    let mut command = match way {
        Way::Baseline => {
            let mut command = Command::new(std::env::current_exe().unwrap_or_default());
            command
                .env(BASELINE_WORKER, format!("{w}/{WORKERS}"))
                .env("EM_BASELINE_TABLE", table)
                .env("EM_BASELINE_JOB", job.name())
                .env("DYNAMODB_ENDPOINT", &setup.endpoint);
            return command;
        }
        Way::Library(writes) => {
            let mut command = bin();
            match job {
                Job::Purge => {
                    command.args(["purge", "--all", "--config"]);
                    command.arg(&setup.b_path);
                }
                Job::Migrate => {
                    command.args(["migrate", "--from"]).arg(&setup.a_path);
                    command.arg("--to").arg(&setup.b_path);
                }
            }
            if writes == BulkWrites::Exclusive {
                command.arg("--exclusive");
            }
            command
        }
    };
    command
        .args(["--table", table, "--yes", "--json"])
        .args(["--segments", &SEGMENTS.to_string()])
        .args(["--throttle", &THROTTLE.to_string()])
        .args(["--page-size", &PAGE.to_string()])
        .args(["--worker", &format!("{w}/{WORKERS}"), "--checkpoint"])
        .arg(journal(table, w))
        .args(["--endpoint", &setup.endpoint, "--region", "us-east-1"]);
    command
}

/// What the 4 processes of one run reported.
#[derive(Debug, Default)]
struct Reported {
    /// The longest job of a process, by its own clock.
    job_seconds: f64,
    /// Write capacity units, as the binary computes them by DynamoDB's rules (its `usage`).
    write_units: f64,
}

/// Starts the 4 processes of `job` done `way` on `table` at once and waits for them; returns
/// the seconds from the first start to the last exit, and what they reported.
fn run_processes(
    setup: &Setup,
    table: &str,
    (job, way): (Job, Way),
    extra: &[(&str, &str)],
) -> Result<(f64, Reported, Vec<Value>), BoxError> {
    let mut commands: Vec<Command> = (0..WORKERS)
        .map(|w| worker(setup, table, (job, way), w))
        .collect();
    for command in &mut commands {
        command.envs(extra.iter().copied());
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
    }
    let started = Instant::now();
    let children: Vec<Child> = commands
        .iter_mut()
        .map(Command::spawn)
        .collect::<Result<_, _>>()?;
    let outputs: Vec<_> = children
        .into_iter()
        .map(Child::wait_with_output)
        .collect::<Result<_, _>>()?;
    let seconds = started.elapsed().as_secs_f64();
    let mut reported = Reported::default();
    let mut bodies = Vec::new();
    for (w, out) in outputs.iter().enumerate() {
        if !out.status.success() {
            return Err(format!(
                "{} {} worker {w}: {:?}\n{}\n{}",
                job.name(),
                way.name(),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
            .into());
        }
        let body: Value = serde_json::from_slice(&out.stdout)?;
        if std::env::var("EM_BENCH_VERBOSE").is_ok() {
            eprintln!(
                "{} {} worker {w}: {body}\n{}",
                job.name(),
                way.name(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let usage = if way == Way::Baseline {
            &body
        } else {
            &body["usage"]
        };
        reported.job_seconds = reported
            .job_seconds
            .max(usage["seconds"].as_f64().unwrap_or(f64::NAN));
        reported.write_units += usage["writeUnits"].as_f64().unwrap_or(0.0);
        bodies.push(body);
    }
    for w in 0..WORKERS {
        let _ = std::fs::remove_file(journal(table, w));
    }
    Ok((seconds, reported, bodies))
}

/// The table is what `job` leaves: empty, or every record at B's key and nothing else.
fn check(setup: &Setup, store: &DynamoStore, (job, way): (Job, Way)) -> Result<(), BoxError> {
    let left = table_items(store)?;
    let ok = match job {
        Job::Purge => left.is_empty(),
        Job::Migrate => left == setup.after,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{} {}: {} items left, not what the job leaves (expected {})",
            job.name(),
            way.name(),
            left.len(),
            if job == Job::Purge {
                0
            } else {
                setup.after.len()
            }
        )
        .into())
    }
}

/// One timed run on a fresh table, checked; returns the seconds and what the workers reported.
fn timed(setup: &Setup, (job, way): (Job, Way), round: usize) -> Result<(f64, Reported), BoxError> {
    let table = format!(
        "bench-procs-{}-{round}-{}-{}",
        std::process::id(),
        job.name(),
        way.name()
    );
    let store = fresh_table(setup, &table)?;
    let (seconds, reported, _) = run_processes(setup, &table, (job, way), &[])?;
    let checked = check(setup, &store, (job, way));
    runtime()?.block_on(store.delete_table())?;
    checked?;
    Ok((seconds, reported))
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() -> Result<(), BoxError> {
    if let Ok(share) = std::env::var(BASELINE_WORKER) {
        return baseline_worker(&share);
    }
    let Ok(endpoint) = std::env::var("DYNAMODB_ENDPOINT") else {
        eprintln!(
            "worker_processes bench: DYNAMODB_ENDPOINT is not set (run it under .ci/dynamodb-local.sh); skipped"
        );
        return Ok(());
    };
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` does not: a smoke run there
    let full = std::env::args().any(|a| a == "--bench");
    let (n, rounds) = if full {
        (
            env_number("EM_BENCH_RECORDS", 20_000),
            env_number("EM_BENCH_ROUNDS", 3),
        )
    } else {
        (200, 1)
    };
    let (a, b) = schemas()?;
    let records = users(n)?;
    let user_a = a.entity("user")?;
    let user_b = b.entity("user")?;
    let before: Vec<Item> = records
        .iter()
        .map(|r| user_a.add_keys(r))
        .collect::<Result<_, _>>()?;
    let after: Vec<Item> = records
        .iter()
        .map(|r| user_b.add_keys(r))
        .collect::<Result<_, _>>()?;
    if before
        .iter()
        .zip(&after)
        .any(|(x, y)| text(x, "hashKey") == text(y, "hashKey"))
    {
        return Err("a record does not move".into());
    }
    let setup = Setup {
        a_path: support::temp_json("bench-procs", "a", &support::user_service_config()?)?,
        b_path: support::temp_json("bench-procs", "b", &config_b()?)?,
        endpoint,
        a,
        b,
        before,
        after: sorted(after),
    };
    let ways = [
        Way::Library(BulkWrites::Exclusive),
        Way::Library(BulkWrites::Guarded),
        Way::Baseline,
    ];
    let variants: Vec<(Job, Way)> = [Job::Purge, Job::Migrate]
        .into_iter()
        .flat_map(|job| ways.map(|way| (job, way)))
        .collect();
    let mut times: HashMap<(Job, Way), Vec<(f64, Reported)>> = HashMap::new();
    // the guarded runs take longest: EM_BENCH_GUARDED_ROUNDS runs them in the first rounds only
    let guarded_rounds = env_number("EM_BENCH_GUARDED_ROUNDS", rounds);
    for round in 0..rounds {
        for i in 0..variants.len() {
            let (job, way) = variants[(i + round) % variants.len()];
            if way == Way::Library(BulkWrites::Guarded) && round >= guarded_rounds {
                continue;
            }
            // a guarded run may fail on DynamoDB Local (a transaction's lock timeout, a `500`
            // that "will succeed in actual DynamoDB"): said, and the bench goes on
            let (s, reported) = match timed(&setup, (job, way), round) {
                Ok(run) => run,
                Err(e) if way == Way::Library(BulkWrites::Guarded) => {
                    eprintln!("round {round}: {} guarded: failed: {e}", job.name());
                    continue;
                }
                Err(e) => return Err(e),
            };
            eprintln!(
                "round {round}: {} {}: {s:.2} s (longest process's own job {:.2} s)",
                job.name(),
                way.name(),
                reported.job_seconds
            );
            times.entry((job, way)).or_default().push((s, reported));
        }
    }
    print_times(n, rounds, &times);
    // EM_BENCH_COUNT=0: no counting pass
    if std::env::var("EM_BENCH_COUNT").is_ok_and(|c| c == "0") {
        return Ok(());
    }
    counting_pass(&setup, &times)
}

/// The medians of the timed runs and their ratios, as a Markdown table.
fn print_times(n: usize, rounds: usize, times: &HashMap<(Job, Way), Vec<(f64, Reported)>>) {
    #[allow(clippy::cast_precision_loss)]
    let items = n as f64;
    println!(
        "\n{n} records, {WORKERS} worker processes, {rounds} rounds, medians (timed: first start to last exit):\n"
    );
    println!(
        "| job | writes | library items/s | baseline items/s | library ÷ baseline | runs (s), library | runs (s), baseline | longest process's own job (s), library / baseline |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let runs = |v: &[(f64, Reported)]| {
        v.iter()
            .map(|(s, _)| format!("{s:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for job in [Job::Purge, Job::Migrate] {
        let Some(base) = times.get(&(job, Way::Baseline)) else {
            continue;
        };
        let base_s = median(base.iter().map(|(s, _)| *s).collect());
        let base_job = median(base.iter().map(|(_, r)| r.job_seconds).collect());
        for mode in [BulkWrites::Exclusive, BulkWrites::Guarded] {
            let Some(lib) = times.get(&(job, Way::Library(mode))) else {
                continue;
            };
            let lib_s = median(lib.iter().map(|(s, _)| *s).collect());
            let lib_job = median(lib.iter().map(|(_, r)| r.job_seconds).collect());
            println!(
                "| {} | {} | {:.0} | {:.0} | **{:.2}** | {} | {} | {lib_job:.1} / {base_job:.1} |",
                job.name(),
                Way::Library(mode).name(),
                items / lib_s,
                items / base_s,
                base_s / lib_s,
                runs(lib),
                runs(base),
            );
        }
    }
}

/// Requests and capacity units per record of each job and way, as DynamoDB Local reports them
/// when asked, and what the writes would cost on on-demand DynamoDB.
fn counting_pass(
    setup: &Setup,
    times: &HashMap<(Job, Way), Vec<(f64, Reported)>>,
) -> Result<(), BoxError> {
    #[allow(clippy::cast_precision_loss)]
    let n = setup.before.len() as f64;
    println!(
        "\nCounting pass (untimed; ReturnConsumedCapacity=TOTAL), per record; on-demand at ${WRITE_PRICE} per million write and ${READ_PRICE} per million read request units:\n"
    );
    println!(
        "| job | writes | scan requests | write requests | WCU (DynamoDB Local) | WCU by DynamoDB's rules (the binary's usage) | RCU | $ per million records, writes | $ per million records, reads |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for job in [Job::Purge, Job::Migrate] {
        for way in [
            Way::Library(BulkWrites::Guarded),
            Way::Library(BulkWrites::Exclusive),
            Way::Baseline,
        ] {
            let table = format!(
                "bench-procs-{}-count-{}-{}",
                std::process::id(),
                job.name(),
                way.name()
            );
            let store = fresh_table(setup, &table)?;
            let counts = match way {
                Way::Library(writes) => library_counted(setup, &store, (job, writes)),
                Way::Baseline => {
                    run_processes(setup, &table, (job, way), &[("EM_BASELINE_CAPACITY", "1")]).map(
                        |(_, _, bodies)| {
                            let mut counts = Counts::default();
                            for body in bodies {
                                let number = |k: &str| body[k].as_f64().unwrap_or(0.0);
                                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                                {
                                    counts.scans += number("scans") as u64;
                                    counts.writes += number("writeRequests") as u64;
                                }
                                counts.read_units += number("readUnits");
                                counts.write_units += number("writeUnitsReported");
                            }
                            counts
                        },
                    )
                }
            };
            let checked = counts.and_then(|c| check(setup, &store, (job, way)).map(|()| c));
            runtime()?.block_on(store.delete_table())?;
            let counts = match checked {
                Ok(counts) => counts,
                Err(e) if way == Way::Library(BulkWrites::Guarded) => {
                    println!("| {} | {} | failed: {e} |", job.name(), way.name());
                    continue;
                }
                Err(e) => return Err(e),
            };
            // the timed runs' own computation of the units (the baseline's are DynamoDB's)
            let rules = match way {
                Way::Baseline => "—".to_owned(),
                Way::Library(_) => times.get(&(job, way)).map_or("—".to_owned(), |runs| {
                    let units = median(runs.iter().map(|(_, r)| r.write_units).collect());
                    format!("{:.2}", units / n)
                }),
            };
            #[allow(clippy::cast_precision_loss)]
            let per = |x: u64| x as f64 / n;
            println!(
                "| {} | {} | {:.3} | {:.3} | {:.2} | {rules} | {:.2} | {:.2} | {:.2} |",
                job.name(),
                way.name(),
                per(counts.scans),
                per(counts.writes),
                counts.write_units / n,
                counts.read_units / n,
                counts.write_units / n * WRITE_PRICE,
                counts.read_units / n * READ_PRICE,
            );
        }
    }
    Ok(())
}

/// Requests and capacity units.
#[derive(Debug, Default)]
struct Counts {
    scans: u64,
    writes: u64,
    read_units: f64,
    write_units: f64,
}

/// The library's side of the counting pass: 4 tasks in this process, each a worker's share with
/// its journal file (as the binary runs it), under a subscriber that adds up the operation spans.
fn library_counted(
    setup: &Setup,
    store: &DynamoStore,
    (job, writes): (Job, BulkWrites),
) -> Result<Counts, BoxError> {
    let migration = Migration::between(&setup.a, &setup.b)?;
    let table = store.table_name().to_owned();
    let runs = (0..WORKERS).map(|w| {
        let (migration, table) = (&migration, &table);
        async move {
            let range = SegmentRange::worker(SEGMENTS, w, WORKERS)?;
            let kind = match job {
                Job::Migrate => JobKind::Migrate,
                Job::Purge => JobKind::Purge,
            };
            let path = journal(table, w);
            let journal = Journal::open(&path, JobHeader::new(kind, "bench", range))?;
            let scan = ParallelScan::new(store)
                .share(range)
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
            Ok::<_, BoxError>(())
        }
    });
    let counter = SpanCounter::default();
    let runtime = runtime()?;
    tracing::subscriber::with_default(counter.clone(), || {
        runtime.block_on(futures::future::try_join_all(runs))
    })?;
    let totals = counter.lock();
    Ok(Counts {
        scans: totals.scans,
        writes: totals.writes,
        read_units: totals.read_units,
        write_units: totals.write_units,
    })
}

/// A `tracing` subscriber that adds up the library's outermost operation spans: the attempts
/// (requests sent) and consumed capacity of scan pages apart from those of the rest (writes).
#[derive(Clone, Debug, Default)]
struct SpanCounter(Arc<Mutex<SpanTotals>>);

#[derive(Debug, Default)]
struct SpanTotals {
    next: u64,
    /// Per span: whether it is outermost, and whether it reads a scan page.
    spans: HashMap<u64, (bool, bool)>,
    stack: Vec<u64>,
    scans: u64,
    writes: u64,
    read_units: f64,
    write_units: f64,
}

impl SpanCounter {
    fn lock(&self) -> std::sync::MutexGuard<'_, SpanTotals> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The counts of one span's record, added to the totals of its kind.
struct Adder<'a> {
    totals: &'a mut SpanTotals,
    scan: bool,
}

impl tracing::field::Visit for Adder<'_> {
    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        if field.name() == "attempts" {
            if self.scan {
                self.totals.scans += value;
            } else {
                self.totals.writes += value;
            }
        }
    }
    fn record_f64(&mut self, field: &tracing::field::Field, value: f64) {
        if field.name() == "consumed_capacity" {
            if self.scan {
                self.totals.read_units += value;
            } else {
                self.totals.write_units += value;
            }
        }
    }
    fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
}

impl tracing::Subscriber for SpanCounter {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        metadata.target().starts_with("entity_manager")
    }
    fn new_span(&self, attrs: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut t = self.lock();
        t.next += 1;
        let id = t.next;
        let outermost = attrs.parent().is_none() && (!attrs.is_contextual() || t.stack.is_empty());
        let scan = attrs.metadata().name().ends_with("scan_page");
        t.spans.insert(id, (outermost, scan));
        tracing::span::Id::from_u64(id)
    }
    fn record(&self, span: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        let mut t = self.lock();
        if let Some(&(true, scan)) = t.spans.get(&span.into_u64()) {
            values.record(&mut Adder {
                totals: &mut t,
                scan,
            });
        }
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, span: &tracing::span::Id) {
        self.lock().stack.push(span.into_u64());
    }
    fn exit(&self, span: &tracing::span::Id) {
        let mut t = self.lock();
        if let Some(at) = t.stack.iter().rposition(|s| *s == span.into_u64()) {
            t.stack.remove(at);
        }
    }
}

/// A baseline worker process: its share of the segments read with `Scan` and written with
/// `BatchWriteItem`, aws-sdk-dynamodb alone; prints its seconds and counts as JSON.
fn baseline_worker(share: &str) -> Result<(), BoxError> {
    let var = |name: &str| std::env::var(name).map_err(|_| format!("{name} is not set"));
    let endpoint = var("DYNAMODB_ENDPOINT")?;
    let table = var("EM_BASELINE_TABLE")?;
    let migrate = var("EM_BASELINE_JOB")? == "migrate";
    let capacity = std::env::var("EM_BASELINE_CAPACITY").is_ok_and(|c| c == "1");
    let range = SegmentRange::parse(SEGMENTS, share)?;
    // a move's new item: B's keys on the record as read (A's taken off)
    let schemas = if migrate { Some(schemas()?) } else { None };
    let entities = match &schemas {
        Some((a, b)) => Some((a.entity("user")?, b.entity("user")?)),
        None => None,
    };
    let client = support::client(&endpoint);
    let capacity = capacity.then_some(ReturnConsumedCapacity::Total);
    let counts = (
        Cell::new(0u64),
        Cell::new(0u64),
        Cell::new(0.0f64),
        Cell::new(0.0f64),
    );
    let started = Instant::now();
    runtime()?.block_on(async {
        futures::stream::iter(range.first..range.end)
            .map(|segment| {
                baseline_segment(
                    &client,
                    &table,
                    segment,
                    (entities.as_ref(), capacity.as_ref()),
                    &counts,
                )
            })
            .buffer_unordered(THROTTLE)
            .try_collect::<Vec<()>>()
            .await
    })?;
    let (scans, writes, read_units, write_units) = counts;
    println!(
        "{}",
        json!({
            "seconds": started.elapsed().as_secs_f64(),
            "scans": scans.get(),
            "writeRequests": writes.get(),
            "readUnits": read_units.get(),
            "writeUnitsReported": write_units.get(),
        })
    );
    Ok(())
}

/// Scans, requests written, read and write units reported.
type Tally = (Cell<u64>, Cell<u64>, Cell<f64>, Cell<f64>);

/// One segment of a baseline worker: page by page, each page's writes in batches of 25.
async fn baseline_segment(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    segment: u32,
    (entities, capacity): (
        Option<&(
            entity_manager::EntitySchema<'_>,
            entity_manager::EntitySchema<'_>,
        )>,
        Option<&ReturnConsumedCapacity>,
    ),
    (scans, writes, read_units, write_units): &Tally,
) -> Result<(), BoxError> {
    let mut start = None;
    loop {
        let page = client
            .scan()
            .table_name(table)
            .segment(i32::try_from(segment)?)
            .total_segments(i32::try_from(SEGMENTS)?)
            .limit(PAGE)
            .set_exclusive_start_key(start.take())
            .set_return_consumed_capacity(capacity.cloned())
            .send()
            .await?;
        scans.set(scans.get() + 1);
        read_units.set(
            read_units.get()
                + page
                    .consumed_capacity()
                    .and_then(aws_sdk_dynamodb::types::ConsumedCapacity::capacity_units)
                    .unwrap_or(0.0),
        );
        let mut requests = Vec::new();
        for raw in page.items() {
            let hash = raw
                .get("hashKey")
                .cloned()
                .ok_or("an item without hashKey")?;
            if matches!(&hash, aws_sdk_dynamodb::types::AttributeValue::S(s) if s == "__entityManager")
            {
                continue; // the table's stamp
            }
            let range_key = raw
                .get("rangeKey")
                .cloned()
                .ok_or("an item without rangeKey")?;
            if let Some((a, b)) = entities {
                let item: Item = raw.clone().into();
                let moved = b.add_keys(&a.remove_keys(&item))?;
                if text(&moved, "hashKey") == text(&item, "hashKey") {
                    continue; // moved here already (by a page of this job)
                }
                let moved: HashMap<String, aws_sdk_dynamodb::types::AttributeValue> = moved.into();
                requests.push(
                    AwsWrite::builder()
                        .put_request(PutRequest::builder().set_item(Some(moved)).build()?)
                        .build(),
                );
            }
            let key = HashMap::from([
                ("hashKey".to_owned(), hash),
                ("rangeKey".to_owned(), range_key),
            ]);
            requests.push(
                AwsWrite::builder()
                    .delete_request(DeleteRequest::builder().set_key(Some(key)).build()?)
                    .build(),
            );
        }
        for chunk in requests.chunks(25) {
            let mut pending = chunk.to_vec();
            while !pending.is_empty() {
                let out = client
                    .batch_write_item()
                    .request_items(table, pending)
                    .set_return_consumed_capacity(capacity.cloned())
                    .send()
                    .await?;
                writes.set(writes.get() + 1);
                write_units.set(
                    write_units.get()
                        + out
                            .consumed_capacity()
                            .iter()
                            .filter_map(aws_sdk_dynamodb::types::ConsumedCapacity::capacity_units)
                            .sum::<f64>(),
                );
                pending = out
                    .unprocessed_items
                    .and_then(|mut u| u.remove(table))
                    .unwrap_or_default();
            }
        }
        match page.last_evaluated_key {
            Some(k) => start = Some(k),
            None => return Ok(()),
        }
    }
}
