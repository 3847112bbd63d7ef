//! No acknowledged write is lost or hidden by bulk work or moves, on `MemoryStore` and on
//! `DynamoDB` Local (when `DYNAMODB_ENDPOINT` is set).
//!
//! 8 writers increment records (version-locked read-modify-writes, `EntityExt::modify`) while a
//! migration rewrites the same records in place, or moves them to new shards, or a purge
//! deletes those still at zero; each writer counts the increments the store acknowledged, and
//! the final table must hold exactly those. Movers shuttle records between shards while readers
//! `get` them (never "no record") and updaters `update(add(..))` them (never `Ok(None)`).
//! Every run prints its seed; `LIVE_SEED=<n>` replays one. The `DynamoDB` tests run twice: on
//! `DynamoDB` Local directly, and through the chaos proxy (throttling, server errors, `503`s,
//! connection resets and transaction conflicts, all before the request reaches the table).
#![allow(clippy::struct_field_names)] // fields are named after their attributes

mod chaos_support;
mod entity_support;
mod store_support;

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use entity_manager::field::Changes;
use entity_manager::migrate::{MigrateReport, Migration};
use entity_manager::scan::{ParallelScan, entity_filter};
use entity_manager::store::{Expect, Filter, MemoryStore, Store, StoreError, TableDefinition};
use entity_manager::{AttributeValue, Entity, EntityExt, Error, Table};
use entity_support::{Club, Member, TestResult, member};
use serde::{Deserialize, Serialize};

/// How many writers run at once.
const WRITERS: usize = 8;

/// The same table as `Club` with one more bump at 1,500 (records of 1,500 to 2,000 move from
/// one character of shard suffix to two, records from 2,000 on from two to three). Every key
/// of `Member` is a candidate key of `Moved`, so a `Moved` reads records not migrated yet.
#[derive(Table)]
#[table(entities(Moved))]
struct ClubB;

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = ClubB, token = "member", unique = member_id, timestamp = created, version = version)]
#[shard_bumps(bumps = [
    bump(timestamp = 1_000, char_bits = 2, chars = 1),
    bump(timestamp = 1_500, char_bits = 2, chars = 2),
    bump(timestamp = 2_000, char_bits = 2, chars = 3),
])]
#[generated(name = name_range_key, components = [last_name, first_name])]
#[index(name = "lastName", range = name_range_key)]
#[index(name = "phone", range = phone)]
struct Moved {
    #[transcode("string")]
    member_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    first_name: String,
    #[transcode("string")]
    last_name: String,
    #[transcode("string")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    phone: Option<String>,
    logins: u64,
    tags: Vec<String>,
    version: u64,
}

impl From<Member> for Moved {
    fn from(m: Member) -> Self {
        Self {
            member_id: m.member_id,
            created: m.created,
            first_name: m.first_name,
            last_name: m.last_name,
            phone: m.phone,
            logins: m.logins,
            tags: m.tags,
            version: m.version,
        }
    }
}

/// A small deterministic generator (xorshift64*), one per task.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        usize::try_from(x % u64::try_from(n.max(1)).unwrap_or(1)).unwrap_or(0)
    }
}

fn seed() -> u64 {
    store_support::seed("LIVE_SEED")
}

fn id(i: usize) -> String {
    format!("m{i:04}")
}

/// `records` members created from 1,000 to 2,999 (every shard bump), logins 0.
async fn fill<S: Store>(store: &S, records: usize) -> TestResult {
    let all: Vec<Member> = (0..records)
        .map(|i| member(&id(i), 1_000 + (i as u64 * 7) % 2_000))
        .map(|mut m| {
            m.logins = 0;
            m
        })
        .collect();
    Member::put_many(store, &all).await?;
    Ok(())
}

/// The acknowledged increments of each record, counted by the writers, and those whose
/// outcome is not known (a resend refused after an attempt that ended without an answer: on a
/// slow `DynamoDB` Local an attempt can time out after it applied).
struct Acks(Vec<AtomicU64>, Vec<AtomicU64>);

impl Acks {
    fn new(records: usize) -> Arc<Self> {
        let zeros = || (0..records).map(|_| AtomicU64::new(0)).collect();
        Arc::new(Self(zeros(), zeros()))
    }
    fn get(&self, i: usize) -> u64 {
        self.0.get(i).map_or(0, |a| a.load(Ordering::SeqCst))
    }
    fn unknown(&self, i: usize) -> u64 {
        self.1.get(i).map_or(0, |a| a.load(Ordering::SeqCst))
    }
    /// Whether `stored` increments of record `i` are its acknowledged ones plus some of those
    /// of unknown outcome.
    fn explain(&self, i: usize, stored: u64) -> bool {
        stored >= self.get(i) && stored <= self.get(i) + self.unknown(i)
    }
    fn total(&self) -> u64 {
        (0..self.0.len()).map(|i| self.get(i)).sum()
    }
}

/// Spawns the writers: each increments random records with `modify` of `E` (a read-modify-write
/// guarded by the version) until `stop`, counting what the store acknowledged.
fn writers<S, E>(
    store: &Arc<S>,
    records: usize,
    acks: &Arc<Acks>,
    stop: &Arc<AtomicBool>,
    seed: u64,
    bump: fn(&mut E),
) -> Vec<tokio::task::JoinHandle<Result<(), String>>>
where
    S: Store + 'static,
    E: Entity + EntityExt + Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    (0..WRITERS)
        .map(|w| {
            let (store, acks, stop) = (store.clone(), acks.clone(), stop.clone());
            tokio::spawn(async move {
                let mut rng = Rng::new(seed ^ (w as u64 + 1));
                while !stop.load(Ordering::SeqCst) {
                    let i = rng.below(records);
                    match E::modify(&*store, &id(i), bump).await {
                        Ok(Some(_)) => {
                            if let Some(a) = acks.0.get(i) {
                                a.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                        // deleted (by a purge), or too many conflicts in a row: not acknowledged
                        Ok(None) | Err(Error::Conflict { .. }) => {}
                        // an outcome not known (`DynamoStore`: refused or throttled on a
                        // resend after an unanswered attempt, or no answer at all): it may
                        // have applied
                        Err(Error::Store { source, .. }) if source.may_have_applied() => {
                            if let Some(a) = acks.1.get(i) {
                                a.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                        Err(e) => return Err(format!("writer {w}: {e}")),
                    }
                    tokio::task::yield_now().await;
                }
                Ok(())
            })
        })
        .collect()
}

async fn join(handles: Vec<tokio::task::JoinHandle<Result<(), String>>>) -> TestResult {
    for h in handles {
        h.await??;
    }
    Ok(())
}

/// Lets the writers get going before the bulk work starts.
async fn warm_up(acks: &Acks) {
    for _ in 0..1_000 {
        if acks.total() >= 20 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// Fills the table with `records` members, runs the writers (incrementing through `E` with
/// `bump`) while `work` runs, stops them, and returns what `work` came to, the writers'
/// acknowledgements and the seed.
async fn with_writers<S, E, T, Fut>(
    store: &Arc<S>,
    records: usize,
    bump: fn(&mut E),
    work: impl FnOnce() -> Fut,
) -> Result<(T, Arc<Acks>, u64), Box<dyn std::error::Error>>
where
    S: Store + 'static,
    E: Entity + EntityExt + Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
    Fut: std::future::Future<Output = T>,
{
    let seed = seed();
    fill(&**store, records).await?;
    let acks = Acks::new(records);
    let stop = Arc::new(AtomicBool::new(false));
    let tasks = writers::<S, E>(store, records, &acks, &stop, seed, bump);
    warm_up(&acks).await;
    let out = work().await;
    stop.store(true, Ordering::SeqCst);
    join(tasks).await?;
    Ok((out, acks, seed))
}

fn report(name: &str, report: &MigrateReport, acks: &Acks) {
    let total = report.counts.total();
    eprintln!(
        "{name}: {} acknowledged increments; migration rewrote {}, moved {}, redid {} after a conflict",
        acks.total(),
        total.rewritten,
        total.moved,
        total.conflicts
    );
}

/// The migration rewrites every record in place (its first name in capitals: the generated
/// `nameRangeKey` changes) while the writers increment.
async fn rewrite_in_place<S: Store + 'static>(store: S, records: usize) -> TestResult {
    let store = Arc::new(store);
    let migration = Migration::new().records::<Member, Member, _>(|mut m: Member| {
        m.first_name = m.first_name.to_uppercase();
        m
    })?;
    let scan = ParallelScan::new(&*store)
        .segments(4)
        .throttle(4)
        .page_size(25);
    let (result, acks, seed) = with_writers::<S, Member, _, _>(
        &store,
        records,
        |m| m.logins += 1,
        || migration.run(scan, |_| ControlFlow::Continue(())),
    )
    .await?;
    let done = result?;
    report("in place", &done, &acks);
    assert!(done.complete);
    for i in 0..records {
        let m = Member::get(&*store, &id(i))
            .await?
            .ok_or("a record is gone")?;
        assert!(
            acks.explain(i, m.logins),
            "increments of {}: {} stored, {} acknowledged, {} unknown (seed {seed})",
            id(i),
            m.logins,
            acks.get(i),
            acks.unknown(i)
        );
        assert_eq!(
            m.first_name,
            m.first_name.to_uppercase(),
            "{} not migrated",
            id(i)
        );
    }
    Ok(())
}

/// The migration moves the records of 1,500 and later to new shards while the writers
/// increment them (through the new schema, which finds them on either side of the move).
async fn move_shards<S: Store + 'static>(store: S, records: usize) -> TestResult {
    let store = Arc::new(store);
    let migration = Migration::new().records::<Member, Moved, _>(Moved::from)?;
    let scan = ParallelScan::new(&*store)
        .segments(4)
        .throttle(4)
        .page_size(25);
    let (result, acks, seed) = with_writers::<S, Moved, _, _>(
        &store,
        records,
        |m| m.logins += 1,
        || migration.run(scan, |_| ControlFlow::Continue(())),
    )
    .await?;
    let done = result?;
    report("moves", &done, &acks);
    assert!(done.complete && done.counts.total().moved > 0);
    let schema = Moved::schema()?;
    let items: Vec<entity_manager::Item> = store_items(&*store).await?;
    assert_eq!(
        items.len(),
        records,
        "one item per record, none left behind"
    );
    for item in &items {
        assert_eq!(
            &schema.refresh_keys(item)?,
            item,
            "an item not in the new shape"
        );
    }
    for i in 0..records {
        let m = Moved::get(&*store, &id(i))
            .await?
            .ok_or("a record is gone")?;
        assert!(
            acks.explain(i, m.logins),
            "increments of {}: {} stored, {} acknowledged, {} unknown (seed {seed})",
            id(i),
            m.logins,
            acks.get(i),
            acks.unknown(i)
        );
    }
    Ok(())
}

/// Every item of the table.
async fn store_items<S: Store>(
    store: &S,
) -> Result<Vec<entity_manager::Item>, Box<dyn std::error::Error>> {
    use futures::TryStreamExt;
    Ok(ParallelScan::new(store)
        .consistent(true)
        .items()
        .try_collect()
        .await?)
}

/// A purge of the records whose `logins` is still 0 while the writers increment: a record
/// incremented (and acknowledged) is never deleted, and every record never incremented goes.
async fn purge_untouched<S: Store + 'static>(store: S, records: usize) -> TestResult {
    let store = Arc::new(store);
    let schema = Member::schema()?;
    let filter = Filter::And(vec![
        entity_filter(&schema),
        Filter::eq("logins", AttributeValue::N("0".into())),
    ]);
    let scan = ParallelScan::new(&*store)
        .segments(4)
        .throttle(4)
        .page_size(25)
        .filter(filter);
    let (result, acks, seed) = with_writers::<S, Member, _, _>(
        &store,
        records,
        |m| m.logins += 1,
        || scan.purge(|_| ControlFlow::Continue(())),
    )
    .await?;
    let done = result?;
    eprintln!(
        "purge: {} acknowledged increments; deleted {}, {} conflicts",
        acks.total(),
        done.deleted,
        done.conflicts
    );
    assert!(done.complete);
    for i in 0..records {
        let found = Member::get(&*store, &id(i)).await?;
        match (acks.get(i), found) {
            (0, found) if acks.unknown(i) == 0 => {
                assert_eq!(found, None, "{} was never incremented: purged", id(i));
            }
            (n, found) => assert!(
                found.as_ref().map_or(n == 0, |m| acks.explain(i, m.logins)),
                "{} was incremented {n} times, {} unknown (seed {seed})",
                id(i),
                acks.unknown(i)
            ),
        }
    }
    Ok(())
}

/// Movers shuttle records between two shards (`move_record` to another creation time, under
/// the version read) while readers `get` them and updaters add to them: no read finds "no
/// record", no update returns `Ok(None)`, and every acknowledged addition is stored.
#[allow(clippy::too_many_lines)] // readers, updaters and movers, then the count
async fn moves_are_never_absent<S: Store + 'static>(store: S) -> TestResult {
    const RECORDS: usize = 8;
    const ROUNDS: usize = 40;
    let seed = seed();
    let store = Arc::new(store);
    let f = Member::FIELDS;
    for i in 0..RECORDS {
        member(&id(i), 1_200).create(&*store).await?;
    }
    let acks = Acks::new(RECORDS);
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for r in 0..4u64 {
        let (store, stop) = (store.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut rng = Rng::new(seed ^ (r + 100));
            while !stop.load(Ordering::SeqCst) {
                let who = id(rng.below(RECORDS));
                match Member::get(&*store, &who).await {
                    Ok(Some(_)) => {}
                    Ok(None) => return Err(format!("get of {who} found no record while it moved")),
                    Err(e) => return Err(format!("reader: {e}")),
                }
                tokio::task::yield_now().await;
            }
            Ok(())
        }));
    }
    for u in 0..2u64 {
        let (store, stop, acks) = (store.clone(), stop.clone(), acks.clone());
        tasks.push(tokio::spawn(async move {
            let mut rng = Rng::new(seed ^ (u + 200));
            while !stop.load(Ordering::SeqCst) {
                let i = rng.below(RECORDS);
                match Member::update(&*store, &id(i), Changes::new().add(f.logins, 1)).await {
                    Ok(Some(_)) => {
                        if let Some(a) = acks.0.get(i) {
                            a.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    Ok(None) => {
                        return Err(format!(
                            "update of {} found no record while it moved",
                            id(i)
                        ));
                    }
                    Err(Error::Conflict { .. }) => {}
                    // an increment that may have been applied (a server error, a reset) is not
                    // sent again, and not acknowledged: through the chaos proxy it was not
                    // applied (its faults come before the table), so the count still holds
                    Err(Error::Store { source, .. })
                        if source.may_have_applied() && !source.is_retryable() => {}
                    Err(e) => return Err(format!("updater: {e}")),
                }
                tokio::task::yield_now().await;
            }
            Ok(())
        }));
    }
    // the movers: each record back and forth between created 1,200 (one character of shard
    // suffix) and 2,200 (two), the version read guarding the move
    let mut shuttles = Vec::new();
    for m in 0..2usize {
        let store = store.clone();
        shuttles.push(tokio::spawn(async move {
            let mut moves = 0;
            for round in 0..ROUNDS {
                let who = id((round + m) % RECORDS);
                let Some(now) = Member::get(&*store, &who)
                    .await
                    .map_err(|e| e.to_string())?
                else {
                    return Err(format!("mover: {who} is gone"));
                };
                let mut to = now.clone();
                to.created = if now.created == 1_200 { 2_200 } else { 1_200 };
                match Member::move_record(&*store, &who, &to).await {
                    Ok(()) => moves += 1,
                    // changed (an update, another mover) since it was read: next round
                    Err(Error::VersionConflict { .. }) => {}
                    // an outcome not known (refused or canceled on a resend after an
                    // unanswered attempt, or no answer at all): the next round reads what it is
                    Err(Error::Store { source, .. }) if source.may_have_applied() => {}
                    Err(e) => return Err(format!("mover: {e}")),
                }
                tokio::task::yield_now().await;
            }
            Ok::<_, String>(moves)
        }));
    }
    let mut moves = 0;
    for m in shuttles {
        moves += m.await??;
    }
    stop.store(true, Ordering::SeqCst);
    join(tasks).await?;
    eprintln!("{moves} moves, {} acknowledged additions", acks.total());
    assert!(moves > 0, "no move happened");
    for i in 0..RECORDS {
        let m = Member::get(&*store, &id(i))
            .await?
            .ok_or("a record is gone")?;
        assert_eq!(
            m.logins,
            acks.get(i),
            "additions to {} (seed {seed})",
            id(i)
        );
    }
    Ok(())
}

/// `update` setting a plain field that is an index's sort key past 1,024 bytes is a
/// `KeyTooLong` naming it, on both stores, before anything is sent.
async fn long_index_key_by_update<S: Store>(store: &S) -> TestResult {
    let f = Member::FIELDS;
    member("k", 1_500).create(store).await?;
    let long = "9".repeat(1_100);
    let e = Member::update(store, "k", Changes::new().set_option(f.phone, Some(long)))
        .await
        .err()
        .ok_or("a 1,100-byte index sort key was accepted")?;
    assert!(
        matches!(&e, Error::KeyTooLong { attribute, index: Some(index), bytes: 1_100, .. } if attribute == "phone" && index == "phone"),
        "{e:?}"
    );
    Ok(())
}

/// The writer's view of the table in the migration tests: a delete of a record that B's keys
/// would move (a record the migration has yet to move) waits until the migration moved it
/// (up to half a second) before it is sent, so that the delete's read (at A's key) and its
/// write straddle the move. The interleaving once left a record deleted by the writer alive
/// at its new key (`DynamoDB` Local, seed 1795639209; 1 run in 60 in memory): here it is
/// forced on every such delete. `held` counts the deletes it held until the move.
struct DeleteAfterMove<S> {
    inner: Arc<S>,
    held: AtomicU64,
    /// Set while a delete waits for the move.
    waiting: AtomicBool,
}

impl<S> DeleteAfterMove<S> {
    fn new(inner: Arc<S>) -> Self {
        Self {
            inner,
            held: AtomicU64::new(0),
            waiting: AtomicBool::new(false),
        }
    }
}

impl<S: Store> Store for DeleteAfterMove<S> {
    entity_manager_tests::forward_store!(inner: definition, name, put_item, get_item, batch_write, batch_get, transact_write, update_item, transact_get, query_page, scan_page);

    async fn delete_item(
        &self,
        key: &entity_manager::Item,
        expect: Expect,
    ) -> Result<(), StoreError> {
        let moves = |item: &entity_manager::Item| {
            Moved::schema().is_ok_and(|b| b.refresh_keys(item).is_ok_and(|keyed| keyed != *item))
        };
        if let Some(item) = self.inner.get_item(key, None).await?
            && moves(&item)
        {
            self.waiting.store(true, Ordering::SeqCst);
            for _ in 0..250 {
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                if self.inner.get_item(key, None).await?.is_none() {
                    self.held.fetch_add(1, Ordering::SeqCst);
                    break;
                }
            }
            self.waiting.store(false, Ordering::SeqCst);
        }
        self.inner.delete_item(key, expect).await
    }
}

/// A delete through B's entity reads the record at A's key; the migration moves it to B's key
/// before the delete is sent. The delete must find it again and delete it: before, it
/// reported "no record" (`Ok(None)`) and the record lived on at its new key.
async fn delete_while_moved<S: Store + 'static>(store: S) -> TestResult {
    let store = Arc::new(store);
    member(&id(0), 1_600).create(&*store).await?;
    let writer = DeleteAfterMove::new(Arc::clone(&store));
    let migration = Migration::new().records::<Member, Moved, _>(Moved::from)?;
    let migrate = async {
        while !writer.waiting.load(Ordering::SeqCst) {
            tokio::task::yield_now().await;
        }
        migration
            .run(ParallelScan::new(&*store), |_| ControlFlow::Continue(()))
            .await
    };
    let who = id(0);
    let (deleted, migrated) = tokio::join!(Moved::delete(&writer, &who), migrate);
    let migrated = migrated?;
    assert_eq!(migrated.counts.total().moved, 1, "the migration moved it");
    assert_eq!(writer.held.load(Ordering::SeqCst), 1, "the delete waited");
    let deleted = deleted?.map(|m| (m.member_id, m.created));
    assert_eq!(
        deleted,
        Some((id(0), 1_600)),
        "the delete deleted the record"
    );
    assert_eq!(
        Moved::get(&*store, &id(0)).await?,
        None,
        "the record is gone"
    );
    assert!(store_items(&*store).await?.is_empty(), "no item left");
    Ok(())
}

/// The last write of each record by the logged writer: `Some(logins)`, or `None` once deleted.
type WriteLog = std::collections::BTreeMap<String, Option<u64>>;

/// One writer creating, updating and deleting records through B's entity (`Moved`) until
/// `stop`, logging each acknowledged write; returns the log.
async fn logged_writer<S: Store>(
    store: &S,
    records: usize,
    seed: u64,
    stop: &AtomicBool,
) -> Result<WriteLog, String> {
    let mut rng = Rng::new(seed ^ 0xC0DE);
    let mut log = WriteLog::new();
    let mut created = 0;
    let mut writes = 0;
    while !stop.load(Ordering::SeqCst) || writes < 50 {
        writes += 1;
        let err = |e: Error| format!("writer: {e}");
        match rng.below(10) {
            0 => {
                let i = rng.below(records);
                Moved::delete(store, &id(i)).await.map_err(err)?;
                log.insert(id(i), None);
            }
            1 => {
                let i = records + created;
                created += 1;
                let mut m = member(&id(i), 1_000 + (i as u64 * 7) % 2_000);
                m.logins = 0;
                Moved::from(m).create(store).await.map_err(err)?;
                log.insert(id(i), Some(0));
            }
            _ => {
                let i = rng.below(records);
                match Moved::modify(store, &id(i), |m| m.logins += 1).await {
                    Ok(Some(m)) => {
                        log.insert(id(i), Some(m.logins));
                    }
                    Ok(None) | Err(Error::Conflict { .. }) => {}
                    Err(e) => return Err(err(e)),
                }
            }
        }
        tokio::task::yield_now().await;
    }
    Ok(log)
}

/// 4 workers (`run_job` over 64 segments, each with its own journal) move records while a writer
/// creates, updates and deletes them through B; worker 0 is killed (its future dropped, pages
/// in flight and all) after a few pages and restarted from its journal, and worker 3 also runs
/// worker 2's segments by mistake. Afterwards every record is the writer's last write: none
/// overwritten by the migration, none resurrected after its delete.
async fn workers_with_a_writer<S: Store + 'static>(
    store: S,
    records: usize,
    seed: u64,
) -> TestResult {
    use entity_manager::job::{JobHeader, JobKind, Journal, merge};
    use entity_manager::scan::SegmentRange;
    let store = Arc::new(store);
    fill(&*store, records).await?;
    // the records the writer never touches keep logins 0
    let migration = Migration::new().records::<Member, Moved, _>(Moved::from)?;
    let stop = Arc::new(AtomicBool::new(false));
    let through = Arc::new(DeleteAfterMove::new(Arc::clone(&store)));
    let writer = {
        let (through, stop) = (Arc::clone(&through), Arc::clone(&stop));
        tokio::spawn(async move { logged_writer(&*through, records, seed, &stop).await })
    };
    let header = |w: u32| -> Result<JobHeader, Box<dyn std::error::Error>> {
        Ok(JobHeader::new(
            JobKind::Migrate,
            "live",
            SegmentRange::worker(64, w, 4)?,
        ))
    };
    let run = |journal: Arc<Journal>, kill_after: Option<u64>| {
        let (store, migration) = (Arc::clone(&store), &migration);
        async move {
            let killed = tokio::sync::Notify::new();
            let mut pages = 0;
            let job = migration.run_job(ParallelScan::new(&*store).page_size(10), &journal, |_| {
                pages += 1;
                if kill_after.is_some_and(|k| pages >= k) {
                    killed.notify_one();
                }
                ControlFlow::Continue(())
            });
            tokio::select! {
                done = job => done.map(|_| ()).map_err(|e| e.to_string()),
                () = killed.notified() => Ok(()),
            }
        }
    };
    let mut rng = Rng::new(seed);
    let journals: Vec<Arc<Journal>> = (0..4)
        .map(|w| header(w).map(|h| Arc::new(Journal::in_memory(h))))
        .collect::<Result<_, _>>()?;
    let kill_after = 1 + rng.below(6) as u64;
    let first = journals
        .iter()
        .enumerate()
        .map(|(w, j)| run(Arc::clone(j), (w == 0).then_some(kill_after)));
    // worker 3 also runs worker 2's segments (another journal: an operator's mistake)
    let mistaken = Arc::new(Journal::in_memory(header(2)?));
    let results = futures::future::join_all(first.chain([run(Arc::clone(&mistaken), None)])).await;
    for r in results {
        r?;
    }
    // worker 0 restarts from its journal
    let restarted = Arc::new(Journal::resume_in_memory(
        header(0)?,
        journals.first().map(|j| j.entries()).unwrap_or_default(),
    ));
    run(Arc::clone(&restarted), None).await?;
    stop.store(true, Ordering::SeqCst);
    let log = writer.await??;
    let mut all: Vec<_> = journals.iter().skip(1).map(|j| j.entries()).collect();
    all.push(restarted.entries());
    let report = merge(&all)?;
    assert!(report.complete(), "{:?}", report.segments);
    eprintln!(
        "workers: {} writes logged, {} deletes held until the record moved, {:?} (seed {seed})",
        log.len(),
        through.held.load(Ordering::SeqCst),
        report.tally.migrate.total()
    );
    let schema = Moved::schema()?;
    let items = store_items(&*store).await?;
    for item in &items {
        assert_eq!(
            &schema.refresh_keys(item)?,
            item,
            "an item not in B's shape"
        );
    }
    let expected = (0..records)
        .filter(|i| !matches!(log.get(&id(*i)), Some(None)))
        .count()
        + log
            .keys()
            .filter(|k| k.as_str() >= id(records).as_str())
            .filter(|k| log[*k].is_some())
            .count();
    assert_eq!(
        items.len(),
        expected,
        "one item per live record (seed {seed})"
    );
    for (key, last) in &log {
        let now = Moved::get(&*store, key).await?.map(|m| m.logins);
        assert_eq!(
            &now, last,
            "record {key}: the writer's last write (seed {seed})"
        );
    }
    Ok(())
}

fn club() -> Result<TableDefinition, Box<dyn std::error::Error>> {
    Ok(TableDefinition::from_schema(Club::schema()?)?)
}

fn club_b() -> Result<TableDefinition, Box<dyn std::error::Error>> {
    Ok(TableDefinition::from_schema(ClubB::schema()?)?)
}

mod memory {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn rewrite_in_place_keeps_every_acknowledged_write() -> TestResult {
        rewrite_in_place(MemoryStore::new(club()?), 2_000).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn moves_keep_every_acknowledged_write() -> TestResult {
        move_shards(MemoryStore::new(club_b()?), 2_000).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn purge_keeps_every_acknowledged_write() -> TestResult {
        purge_untouched(MemoryStore::new(club()?), 2_000).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn moving_records_are_never_absent() -> TestResult {
        moves_are_never_absent(MemoryStore::new(club()?)).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn workers_keep_the_writers_last_write() -> TestResult {
        workers_with_a_writer(MemoryStore::new(club_b()?), 2_000, seed()).await
    }

    /// The seeds of the runs that left a deleted record alive (on `DynamoDB` Local and in
    /// memory) before a delete read a moved record again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn workers_keep_the_writers_last_write_of_past_failures() -> TestResult {
        for seed in [1_795_639_209, 1_795_641_523] {
            workers_with_a_writer(MemoryStore::new(club_b()?), 2_000, seed).await?;
        }
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_delete_finds_the_record_moved_after_its_read() -> TestResult {
        delete_while_moved(MemoryStore::new(club_b()?)).await
    }

    #[tokio::test]
    async fn update_of_a_long_index_key_is_key_too_long() -> TestResult {
        long_index_key_by_update(&MemoryStore::new(club()?)).await
    }
}

mod dynamodb {
    use super::*;
    use store_support::on_dynamodb;

    /// Records on `DynamoDB` Local: fewer than in memory, for the time of a debug build.
    const RECORDS: usize = 400;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn rewrite_in_place_keeps_every_acknowledged_write() -> TestResult {
        on_dynamodb("live-rewrite", club()?, |s| rewrite_in_place(s, RECORDS)).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn moves_keep_every_acknowledged_write() -> TestResult {
        on_dynamodb("live-moves", club_b()?, |s| move_shards(s, RECORDS)).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn purge_keeps_every_acknowledged_write() -> TestResult {
        on_dynamodb("live-purge", club()?, |s| purge_untouched(s, RECORDS)).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn moving_records_are_never_absent() -> TestResult {
        on_dynamodb("live-absent", club()?, moves_are_never_absent).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn workers_keep_the_writers_last_write() -> TestResult {
        on_dynamodb("live-workers", club_b()?, |s| {
            workers_with_a_writer(s, RECORDS, seed())
        })
        .await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn workers_keep_the_writers_last_write_of_the_failed_seed() -> TestResult {
        on_dynamodb("live-workers-seed", club_b()?, |s| {
            workers_with_a_writer(s, RECORDS, 1_795_639_209)
        })
        .await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_delete_finds_the_record_moved_after_its_read() -> TestResult {
        on_dynamodb("live-delete-moved", club_b()?, delete_while_moved).await
    }

    #[tokio::test]
    async fn update_of_a_long_index_key_is_key_too_long() -> TestResult {
        on_dynamodb("live-long", club()?, |s| async move {
            long_index_key_by_update(&s).await
        })
        .await
    }
}

/// The same on `DynamoDB` Local through the chaos proxy (`chaos_support`): 5 % throttled, 2 %
/// `InternalServerError`, 1 % `503`, 1 % connection resets and 10 % of transactions canceled
/// by a conflict, none of them applied. The client retries up to 10 times from 10 ms (the SDK's
/// standard mode), so a call fails only when ten attempts in a row are faulted.
mod dynamodb_chaos {
    use super::*;
    use chaos_support::{ChaosPlan, ChaosProxy};
    use entity_manager::store::DynamoStore;
    use std::time::Duration;

    const RECORDS: usize = 400;

    async fn on_chaos<F, Fut>(name: &str, definition: TableDefinition, test: F) -> TestResult
    where
        F: FnOnce(DynamoStore) -> Fut,
        Fut: std::future::Future<Output = TestResult>,
    {
        let Some(direct) = store_support::dynamo_store(name, definition.clone()).await? else {
            return Ok(());
        };
        let plan = ChaosPlan {
            seed: seed(),
            throttle: 0.05,
            server_error: 0.02,
            unavailable: 0.01,
            reset: 0.01,
            transaction_conflict: 0.10,
            ..ChaosPlan::default()
        };
        let upstream = std::env::var("DYNAMODB_ENDPOINT")?;
        let proxy = ChaosProxy::start(&upstream, plan).await?;
        let store = DynamoStore::new(
            proxy.client(10, Duration::from_millis(10)),
            direct.table_name(),
            definition,
        )
        .with_timeouts(Duration::from_secs(20), Duration::from_secs(2));
        let result = test(store).await;
        let faults = proxy.counts.faults();
        direct.delete_table().await?;
        result?;
        eprintln!("{faults} faults injected");
        assert!(faults > 0, "the proxy injected nothing");
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn rewrite_in_place_keeps_every_acknowledged_write() -> TestResult {
        on_chaos("chaos-rewrite", club()?, |s| rewrite_in_place(s, RECORDS)).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn moves_keep_every_acknowledged_write() -> TestResult {
        on_chaos("chaos-moves", club_b()?, |s| move_shards(s, RECORDS)).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn purge_keeps_every_acknowledged_write() -> TestResult {
        on_chaos("chaos-purge", club()?, |s| purge_untouched(s, RECORDS)).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn moving_records_are_never_absent() -> TestResult {
        on_chaos("chaos-absent", club()?, moves_are_never_absent).await
    }
}
