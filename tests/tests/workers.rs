//! Bulk jobs split across workers (issue 32), on `MemoryStore`: 4 workers over 64 segments at
//! once, each with its own journal, some killed at random points (their future dropped with
//! writes of a page done and others not, as a SIGKILL leaves them) and restarted from their
//! journal. Afterwards the table equals the oracle and the merged report counts every record
//! exactly once. Every run prints its seed; `WORKERS_SEED=<n>` replays one.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use entity_manager::audit::audit_job;
use entity_manager::job::{
    JobHeader, JobKind, JobReport, Journal, SegmentState, merge, merge_files,
};
use entity_manager::migrate::Migration;
use entity_manager::model::ShardSpace;
use entity_manager::scan::{BulkWrites, ParallelScan, SegmentRange};
use entity_manager::store::{
    BatchWriteError, Expect, MemoryStore, Store, StoreError, TableDefinition, TransactWrite,
    WriteRequest,
};
use entity_manager::{AttributeValue, Item, Schema};
use futures::TryStreamExt;
use serde_json::json;

type BoxError = Box<dyn std::error::Error>;
type TestResult = Result<(), BoxError>;

const SEGMENTS: u32 = 64;
const WORKERS: u32 = 4;

/// A: users sharded from t = 1,000 on (4 shards); B adds a bump at t = 5,000 (64 shards), so
/// users created from then on move. Emails have the same schedule in both: unchanged.
fn config(b: bool) -> serde_json::Value {
    let mut user_bumps = vec![json!({ "timestamp": 1000, "charBits": 2, "chars": 1 })];
    if b {
        user_bumps.push(json!({ "timestamp": 5000, "charBits": 3, "chars": 2 }));
    }
    json!({
        "hashKey": "hashKey",
        "rangeKey": "rangeKey",
        "entities": {
            "user": { "uniqueProperty": "userId", "timestampProperty": "created", "shardBumps": user_bumps },
            "email": {
                "uniqueProperty": "email", "timestampProperty": "created",
                "shardBumps": [{ "timestamp": 1000, "charBits": 2, "chars": 1 }]
            }
        },
        "propertyTranscodes": { "userId": "string", "email": "string", "created": "timestamp" }
    })
}

fn schemas() -> Result<(Schema, Schema), BoxError> {
    Ok((
        Schema::from_ts_config(&config(false), ShardSpace::Power)?,
        Schema::from_ts_config(&config(true), ShardSpace::Power)?,
    ))
}

/// `users` users and `emails` emails, created between 1,000 and 9,000.
fn records(users: u64, emails: u64) -> Result<Vec<(&'static str, Item)>, BoxError> {
    let mut out = Vec::new();
    for i in 0..users {
        let created = 1000 + (i * 7919) % 8000;
        out.push((
            "user",
            serde_dynamo::to_item(
                json!({ "userId": format!("u{i}"), "created": created, "n": i }),
            )?,
        ));
    }
    for i in 0..emails {
        out.push((
            "email",
            serde_dynamo::to_item(json!({ "email": format!("e{i}@x"), "created": 1000 + i }))?,
        ));
    }
    Ok(out)
}

fn keyed(schema: &Schema, records: &[(&str, Item)]) -> Result<Vec<Item>, BoxError> {
    records
        .iter()
        .map(|(entity, item)| Ok(schema.entity(entity)?.add_keys(item)?))
        .collect()
}

fn text(item: &Item, name: &str) -> String {
    match item.get(name) {
        Some(AttributeValue::S(s)) => s.clone(),
        _ => String::new(),
    }
}

fn sorted(mut items: Vec<Item>) -> Vec<Item> {
    items.sort_by_key(|i| (text(i, "hashKey"), text(i, "rangeKey")));
    items
}

/// A table of `schema` holding `records`, keyed by it.
async fn filled(schema: &Schema, records: &[(&str, Item)]) -> Result<MemoryStore, BoxError> {
    let table = MemoryStore::new(TableDefinition::from_schema(schema)?);
    table
        .batch_write(
            keyed(schema, records)?
                .into_iter()
                .map(WriteRequest::Put)
                .collect(),
        )
        .await?;
    Ok(table)
}

async fn contents<S: Store>(store: &S) -> Result<Vec<Item>, BoxError> {
    Ok(sorted(
        ParallelScan::new(store).items().try_collect().await?,
    ))
}

/// A seeded generator (splitmix64), so that a failing run can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % below.max(1)
    }
}

fn seed() -> u64 {
    let seed = std::env::var("WORKERS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(7, |d| d.as_secs())
        });
    eprintln!("WORKERS_SEED={seed}");
    seed
}

/// A worker process on the shared table: its writes stop for good (never answered, as those
/// of a killed process) once `budget` of them have been sent; `dead` is then set.
struct Process {
    table: Arc<MemoryStore>,
    budget: AtomicI64,
    dead: AtomicBool,
}

impl Process {
    fn new(table: Arc<MemoryStore>, budget: Option<u64>) -> Self {
        Self {
            table,
            budget: AtomicI64::new(budget.map_or(i64::MAX, |b| i64::try_from(b).unwrap_or(0))),
            dead: AtomicBool::new(false),
        }
    }

    /// Whether this write may go (else the process is dead).
    fn alive(&self) -> bool {
        if self.budget.fetch_sub(1, Ordering::SeqCst) <= 0 {
            self.dead.store(true, Ordering::SeqCst);
        }
        !self.dead.load(Ordering::SeqCst)
    }
}

impl Store for Process {
    entity_manager_tests::forward_store!(table: definition, name, get_item, batch_get, update_item, transact_get, query_page, scan_page);

    async fn put_item(&self, item: Item, expect: Expect) -> Result<(), StoreError> {
        if !self.alive() {
            std::future::pending::<()>().await;
        }
        self.table.put_item(item, expect).await
    }

    async fn delete_item(&self, key: &Item, expect: Expect) -> Result<(), StoreError> {
        if !self.alive() {
            std::future::pending::<()>().await;
        }
        self.table.delete_item(key, expect).await
    }

    async fn batch_write(&self, writes: Vec<WriteRequest>) -> Result<(), BatchWriteError> {
        if !self.alive() {
            std::future::pending::<()>().await;
        }
        self.table.batch_write(writes).await
    }

    async fn transact_write(&self, writes: Vec<TransactWrite>) -> Result<(), StoreError> {
        if !self.alive() {
            std::future::pending::<()>().await;
        }
        self.table.transact_write(writes).await
    }
}

/// Runs `job` until it ends or `process` dies (then drops it, writes in flight and all).
/// Returns whether it ended.
async fn until_dead<F: Future>(process: &Process, job: F) -> bool {
    let dead = async {
        while !process.dead.load(Ordering::SeqCst) {
            tokio::task::yield_now().await;
        }
    };
    tokio::select! {
        _ = job => true,
        () = dead => false,
    }
}

/// Runs one worker of a job: killed after a random number of writes `kills` times, each time
/// restarted from what its journal holds (a fresh journal over the same lines, as a new
/// process opening the file), then run to the end. Returns its journal's entries.
async fn worker<J, Fut>(
    table: &Arc<MemoryStore>,
    header: JobHeader,
    (kills, budget): (u32, u64),
    seed: u64,
    job: J,
) -> Result<Vec<entity_manager::job::Entry>, BoxError>
where
    J: Fn(Arc<Process>, Arc<Journal>) -> Fut,
    Fut: Future<Output = Result<(), BoxError>>,
{
    let mut rng = Rng(seed);
    let mut entries = Journal::in_memory(header.clone()).entries();
    for attempt in 0..=kills {
        let budget = (attempt < kills).then(|| 1 + rng.next(budget));
        let process = Arc::new(Process::new(Arc::clone(table), budget));
        let journal = Arc::new(Journal::resume_in_memory(header.clone(), entries));
        let ended = until_dead(&process, job(Arc::clone(&process), Arc::clone(&journal))).await;
        entries = journal.entries();
        if ended && attempt < kills {
            // finished before the kill point: nothing left to kill
            break;
        }
    }
    Ok(entries)
}

fn header(kind: JobKind, worker: u32) -> Result<JobHeader, BoxError> {
    Ok(JobHeader::new(
        kind,
        "workers-test",
        SegmentRange::worker(SEGMENTS, worker, WORKERS)?,
    ))
}

/// Workers 0 and 2 are killed twice each, after up to `budget` write requests; all four run at
/// once.
async fn run_workers<J, Fut>(
    table: &Arc<MemoryStore>,
    (kind, budget): (JobKind, u64),
    seed: u64,
    job: J,
) -> Result<JobReport, BoxError>
where
    J: Fn(Arc<Process>, Arc<Journal>) -> Fut + Clone,
    Fut: Future<Output = Result<(), BoxError>>,
{
    let runs = (0..WORKERS).map(|w| {
        let kills = if w % 2 == 0 { 2 } else { 0 };
        let job = job.clone();
        async move {
            let header = header(kind, w)?;
            worker(table, header, (kills, budget), seed ^ u64::from(w), job).await
        }
    });
    let journals = futures::future::try_join_all(runs).await?;
    let report = merge(&journals)?;
    assert_eq!(
        merged_from_files(&journals, kind)?,
        report,
        "the merge of the files, spilled by key hash, is the merge in memory"
    );
    Ok(report)
}

/// `merge_files` of the journals written to files (as workers' `--checkpoint` files), the keys
/// spilled to 7 partitions.
fn merged_from_files(
    journals: &[Vec<entity_manager::job::Entry>],
    kind: JobKind,
) -> Result<JobReport, BoxError> {
    // one directory per call: tests of one kind run at once, in one process, and may draw
    // the same seed (the clock's second)
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "em-workers-merge-{kind:?}-{}-{call}",
        std::process::id(),
    ));
    std::fs::create_dir_all(&dir)?;
    let mut paths = Vec::new();
    for (w, entries) in journals.iter().enumerate() {
        let path = dir.join(format!("w-{w}.jsonl"));
        let mut text = String::new();
        for entry in entries {
            text.push_str(&serde_json::to_string(entry)?);
            text.push('\n');
        }
        std::fs::write(&path, text)?;
        paths.push(path);
    }
    let report = merge_files(&paths, &dir.join("spill"), 7);
    std::fs::remove_dir_all(&dir)?;
    Ok(report?)
}

/// The write requests after which a worker may be killed, per mode: a page of 10 records is
/// 10 requests one by one, or 2 batches (puts, then deletes).
fn budget(writes: BulkWrites) -> u64 {
    match writes {
        BulkWrites::Exclusive => 80,
        _ => 400,
    }
}

#[tokio::test(flavor = "current_thread")]
async fn migrate_split_across_killed_workers_counts_every_record_once() -> TestResult {
    migrate_across_killed_workers(BulkWrites::Guarded).await
}

/// Exclusive: a kill between a page's puts and its deletes leaves both copies of a record,
/// which the restarted worker settles (and counts once).
#[tokio::test(flavor = "current_thread")]
async fn migrate_exclusive_across_killed_workers() -> TestResult {
    migrate_across_killed_workers(BulkWrites::Exclusive).await
}

async fn migrate_across_killed_workers(writes: BulkWrites) -> TestResult {
    let seed = seed();
    let (a, b) = schemas()?;
    let records = records(1800, 200)?;
    let before = keyed(&a, &records)?;
    let after = keyed(&b, &records)?;
    let moved = before
        .iter()
        .zip(&after)
        .filter(|(x, y)| text(x, "hashKey") != text(y, "hashKey"))
        .count() as u64;
    assert!(
        moved > 500 && moved < 1800,
        "the oracle moves {moved} users"
    );
    let table = Arc::new(MemoryStore::new(TableDefinition::from_schema(&b)?));
    table
        .batch_write(before.into_iter().map(WriteRequest::Put).collect())
        .await?;
    let migration = Migration::between(&a, &b)?;
    let migration = &migration;
    let report = run_workers(
        &table,
        (JobKind::Migrate, budget(writes)),
        seed,
        |process, journal| async move {
            let scan = ParallelScan::new(&*process).page_size(10).writes(writes);
            migration
                .run_job(scan, &journal, |_| std::ops::ControlFlow::Continue(()))
                .await?;
            Ok(())
        },
    )
    .await?;
    assert_eq!(
        contents(&*table).await?,
        sorted(after),
        "the table is not B's"
    );
    assert!(report.complete(), "{:?}", report.segments);
    assert!(report.overlaps.is_empty());
    let users = report.tally.migrate.entities["user"];
    assert_eq!(
        (
            users.scanned,
            users.moved,
            users.unchanged + users.rewritten
        ),
        (1800, moved, 1800 - moved),
        "{users:?}"
    );
    assert_eq!((users.migrated_before, users.vanished), (0, 0), "{users:?}");
    let emails = report.tally.migrate.entities["email"];
    assert_eq!((emails.scanned, emails.unchanged), (200, 200), "{emails:?}");

    // a second job finds every record migrated: counted once each, nothing written
    let again = run_workers(
        &table,
        (JobKind::Migrate, budget(writes)),
        seed,
        |process, journal| async move {
            let scan = ParallelScan::new(&*process).page_size(10).writes(writes);
            migration
                .run_job(scan, &journal, |_| std::ops::ControlFlow::Continue(()))
                .await?;
            Ok(())
        },
    );
    // (its journals are new: another job name would be used in practice; here a new run)
    let again = again.await?;
    let users = again.tally.migrate.entities["user"];
    assert_eq!(users.written(), 0, "{users:?}");
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn purge_split_across_killed_workers_counts_every_item_once() -> TestResult {
    purge_across_killed_workers(BulkWrites::Guarded).await
}

#[tokio::test(flavor = "current_thread")]
async fn purge_exclusive_across_killed_workers() -> TestResult {
    purge_across_killed_workers(BulkWrites::Exclusive).await
}

async fn purge_across_killed_workers(writes: BulkWrites) -> TestResult {
    let seed = seed();
    let (a, _) = schemas()?;
    let records = records(1500, 300)?;
    let table = Arc::new(filled(&a, &records).await?);
    let entity = |item: &Item| {
        text(item, "hashKey")
            .split('!')
            .next()
            .unwrap_or_default()
            .to_owned()
    };
    let report = run_workers(
        &table,
        (JobKind::Purge, budget(writes) / 2),
        seed,
        |process, journal| async move {
            let scan = ParallelScan::new(&*process).page_size(10).writes(writes);
            scan.purge_job(&journal, entity, |_| std::ops::ControlFlow::Continue(()))
                .await?;
            Ok(())
        },
    )
    .await?;
    assert!(table.is_empty(), "items left");
    assert!(report.complete());
    assert_eq!(report.tally.deleted["user"], 1500, "{:?}", report.tally);
    assert_eq!(report.tally.deleted["email"], 300, "{:?}", report.tally);
    Ok(())
}

/// A purge and a migration with their journals in files, on a current-thread runtime as the
/// CLI runs them, 4 segments in flight and pages of 10: each append waits for its sync (run on
/// a blocking thread, so that the other pages go on meanwhile), and the jobs end. (An append
/// that held a lock across its sync hung there: a page's append held it while the job's loop,
/// which polls the pages, waited on it for the page before.)
#[tokio::test(flavor = "current_thread")]
async fn jobs_with_journal_files_end() -> TestResult {
    let (a, b) = schemas()?;
    let records = records(600, 100)?;
    let dir = std::env::temp_dir().join(format!("em-workers-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let bound = std::time::Duration::from_mins(2);
    let range = SegmentRange::all(16)?;
    let header = |kind| JobHeader::new(kind, "files", range);
    for writes in [BulkWrites::Guarded, BulkWrites::Exclusive] {
        let table = filled(&a, &records).await?;
        let path = dir.join(format!("migrate-{writes:?}.jsonl"));
        let journal = Journal::open(&path, header(JobKind::Migrate))?;
        let scan = ParallelScan::new(&table)
            .share(range)
            .throttle(4)
            .page_size(10)
            .writes(writes);
        let migration = Migration::between(&a, &b)?;
        let report = tokio::time::timeout(
            bound,
            migration.run_job(scan, &journal, |_| std::ops::ControlFlow::Continue(())),
        )
        .await
        .map_err(|_| format!("the migration ({writes:?}) did not end within {bound:?}"))??;
        assert!(report.complete);
        assert_eq!(contents(&table).await?, sorted(keyed(&b, &records)?));

        let path = dir.join(format!("purge-{writes:?}.jsonl"));
        let journal = Journal::open(&path, header(JobKind::Purge))?;
        let scan = ParallelScan::new(&table)
            .share(range)
            .throttle(4)
            .page_size(10)
            .writes(writes);
        let report = tokio::time::timeout(
            bound,
            scan.purge_job(
                &journal,
                |_| "any".to_owned(),
                |_| std::ops::ControlFlow::Continue(()),
            ),
        )
        .await
        .map_err(|_| format!("the purge ({writes:?}) did not end within {bound:?}"))??;
        assert!(report.complete && table.is_empty());
        assert_eq!(journal.report().tally.deleted["any"], 700);
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn audit_split_across_killed_workers_lists_every_record_once() -> TestResult {
    let seed = seed();
    let (a, b) = schemas()?;
    let records = records(1800, 200)?;
    let table = MemoryStore::new(TableDefinition::from_schema(&b)?);
    let items = keyed(&a, &records)?;
    let misplaced = items
        .iter()
        .zip(keyed(&b, &records)?)
        .filter(|(x, y)| text(x, "hashKey") != text(y, "hashKey"))
        .count();
    table
        .batch_write(items.into_iter().map(WriteRequest::Put).collect())
        .await?;
    let entities = [b.entity("user")?, b.entity("email")?];
    let entities = &entities;
    let table = &table;
    // an audit writes nothing: the "kill" is a worker stopped after a random number of pages
    let journals = futures::future::try_join_all((0..WORKERS).map(|w| async move {
        let header = header(JobKind::Audit, w)?;
        let mut entries = Journal::in_memory(header.clone()).entries();
        let mut rng = Rng(seed ^ u64::from(w));
        for attempt in 0..3 {
            let journal = Journal::resume_in_memory(header.clone(), entries);
            let stop = 1 + rng.next(20);
            let mut pages = 0;
            audit_job(
                ParallelScan::new(table).page_size(10),
                entities,
                &journal,
                |_| {
                    pages += 1;
                    if w % 2 == 0 && attempt < 2 && pages >= stop {
                        std::ops::ControlFlow::Break(())
                    } else {
                        std::ops::ControlFlow::Continue(())
                    }
                },
            )
            .await?;
            entries = journal.entries();
        }
        Ok::<_, BoxError>(entries)
    }))
    .await?;
    let report = merge(&journals)?;
    assert!(report.complete());
    assert_eq!(report.tally.scanned["user"], 1800);
    assert_eq!(report.tally.scanned["email"], 200);
    assert_eq!(report.tally.misplaced.len(), misplaced);
    Ok(())
}

/// The merge says which segments are done, in progress and never started, so that the
/// missing part can be run again exactly.
#[tokio::test(flavor = "current_thread")]
async fn merge_reports_done_in_progress_and_missing_segments() -> TestResult {
    use entity_manager::store::KeyType;
    let table = MemoryStore::new(TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::S)));
    let items = (0..400)
        .map(|i| serde_dynamo::to_item(json!({ "pk": format!("p{i}"), "sk": "a" })))
        .map(|item| item.map(WriteRequest::Put))
        .collect::<Result<Vec<_>, _>>()?;
    table.batch_write(items).await?;
    // worker 0 finishes, worker 1 stops after 3 pages, workers 2 and 3 never run
    let mut journals = Vec::new();
    for (w, stop) in [(0, None), (1, Some(3))] {
        let journal = Journal::in_memory(header(JobKind::Purge, w)?);
        let mut pages = 0;
        ParallelScan::new(&table)
            .page_size(2)
            .throttle(1)
            .purge_job(
                &journal,
                |_| "user".to_owned(),
                |_| {
                    pages += 1;
                    if stop.is_some_and(|s| pages >= s) {
                        std::ops::ControlFlow::Break(())
                    } else {
                        std::ops::ControlFlow::Continue(())
                    }
                },
            )
            .await?;
        journals.push(journal.entries());
    }
    let report = merge(&journals)?;
    assert!(!report.complete());
    let done = report.spans(SegmentState::Done);
    assert!(
        done.first()
            .is_some_and(|d| d.start == 0 && d.end >= 16 && d.end < 32),
        "{done:?}"
    );
    let missing = report.spans(SegmentState::NotStarted);
    assert!(
        missing.last().is_some_and(|m| m.start <= 32 && m.end == 64),
        "{missing:?}"
    );
    assert!(
        report.count(SegmentState::InProgress) >= 1,
        "{:?}",
        report.segments
    );
    assert_eq!(
        report.count(SegmentState::Done)
            + report.count(SegmentState::InProgress)
            + report.count(SegmentState::NotStarted),
        64
    );
    // what the table lost is what the report counts
    let left = contents(&table).await?.len() as u64;
    assert_eq!(report.tally.deleted["user"], 400 - left);
    // two workers covering the same segments are flagged
    let twice = merge(&[journals[0].clone(), journals[0].clone()])?;
    assert_eq!(twice.overlaps.len(), 16);
    Ok(())
}
