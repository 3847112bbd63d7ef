//! Bulk jobs split across workers: each worker's journal, and the merge of the journals into
//! the job's exact totals.
//!
//! A job ([`migrate`](crate::migrate), [`purge`](crate::purge) or [`audit`](crate::audit)) splits
//! the table into `total` segments (`DynamoDB`'s parallel scan, up to 1,000,000); each worker
//! owns a [`SegmentRange`] of them and needs no coordination beyond the table. Every worker keeps
//! a [`Journal`]: an append-only list of [`Entry`]s (one JSON line each in a file), which is
//! both its checkpoint and its ledger:
//! - before the writes of a page: [`Entry::Begin`], the records it is about to write;
//! - once they are done: [`Entry::Done`], the segment's next position and what the page came to
//!   ([`Tally`]), in one line: the position and the count advance together or not at all;
//! - when a worker restarts after a kill: for the page that was in flight, [`Entry::Settled`],
//!   what its writes did before the kill (each planned record is read back by key), so that
//!   the page, read again, counts only what is left.
//!
//! So a record is counted once, whatever was in flight when a worker died. A record moved to a
//! key the scan reaches later (by this worker or another) is found again there, already
//! migrated: its key is in the journal of the worker that moved it, and [`merge`] leaves it
//! out. [`merge`] also says which segments are done, in progress or never started.
//!
//! **Where journals live**: in files, one per worker, not in the table. A journal costs no
//! write capacity, is never seen by scans, streams, backups or the TypeScript services that
//! share the table, and grows with the records moved (their new keys), which an item (400 KB)
//! could not hold. A worker on another machine resumes a journal from a shared volume (a
//! Kubernetes `PersistentVolumeClaim`, EFS) or one copied from object storage.
//!
//! ```
//! use std::ops::ControlFlow;
//!
//! use entity_manager_core::job::{Journal, JobHeader, JobKind, merge};
//! use entity_manager_core::scan::{ParallelScan, SegmentRange};
//! use entity_manager_core::store::{Expect, KeyType, MemoryStore, Store, TableDefinition};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = MemoryStore::new(TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::S)));
//! for i in 0..50 {
//!     let item = serde_dynamo::to_item(serde_json::json!({ "pk": format!("p{i}"), "sk": "a" }))?;
//!     store.put_item(item, Expect::Any).await?;
//! }
//! // two workers, each with half of 8 segments and its own journal
//! let mut journals = Vec::new();
//! for worker in 0..2 {
//!     let range = SegmentRange::worker(8, worker, 2)?;
//!     let journal = Journal::in_memory(JobHeader::new(JobKind::Purge, "demo", range));
//!     let scan = ParallelScan::new(&store).share(range).page_size(5);
//!     scan.purge_job(&journal, |_| "item".to_owned(), |_| ControlFlow::Continue(())).await?;
//!     journals.push(journal.entries());
//! }
//! let report = merge(&journals)?;
//! assert!(report.complete());
//! assert_eq!(report.tally.deleted["item"], 50);
//! assert!(store.is_empty());
//! # Ok(())
//! # }
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use serde_dynamo::{AttributeValue, Item};

use crate::counts::{MigrateCounts, Misplaced, Unreadable};
use crate::scan::{ScanCheckpoint, SegmentPosition, SegmentRange};
use crate::store::TableDefinition;

/// The kind of a bulk job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum JobKind {
    /// A migration from schema A to schema B.
    Migrate,
    /// A purge.
    Purge,
    /// A re-shard audit.
    Audit,
}

impl std::fmt::Display for JobKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Migrate => "migrate",
            Self::Purge => "purge",
            Self::Audit => "audit",
        })
    }
}

/// What a journal belongs to: the job (its kind and a fingerprint of what it does, e.g. the
/// table and both configurations) and the worker's segments.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct JobHeader {
    /// The kind of job.
    pub kind: JobKind,
    /// What identifies the job: every worker of one job has the same.
    pub job: String,
    /// The worker's segments.
    pub range: SegmentRange,
}

impl JobHeader {
    /// The header of a worker of job `job` (any text that names what the job does: workers
    /// of one job give the same) owning `range`.
    pub fn new(kind: JobKind, job: impl Into<String>, range: SegmentRange) -> Self {
        Self {
            kind,
            job: job.into(),
            range,
        }
    }
}

/// A table key, as text: `(hash key, range key)` (a non-string key attribute in its JSON form).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct StoredKey(pub String, pub String);

impl StoredKey {
    /// The key as an item of a table of this definition (`None` if a non-string part does
    /// not read back).
    pub fn to_item(&self, definition: &TableDefinition) -> Option<Item> {
        let part = |text: &str, key: &crate::store::KeyAttribute| match key.key_type {
            crate::store::KeyType::S => Some(AttributeValue::S(text.to_owned())),
            _ => serde_json::from_str(text).ok(),
        };
        let key: HashMap<String, AttributeValue> = [
            (
                definition.hash_key.name.clone(),
                part(&self.0, &definition.hash_key)?,
            ),
            (
                definition.range_key.name.clone(),
                part(&self.1, &definition.range_key)?,
            ),
        ]
        .into_iter()
        .collect();
        Some(key.into())
    }

    /// The key of `item` in a table of this definition.
    pub fn of(item: &Item, definition: &TableDefinition) -> Self {
        let text = |name: &str| match item.get(name) {
            Some(AttributeValue::S(s)) => s.clone(),
            Some(other) => serde_json::to_string(other).unwrap_or_default(),
            None => String::new(),
        };
        Self(
            text(&definition.hash_key.name),
            text(&definition.range_key.name),
        )
    }
}

/// A record a page is about to write.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Planned {
    /// The entity (A's token for a migration).
    pub entity: String,
    /// The record's key as read.
    pub key: StoredKey,
    /// The key it moves to (a migration's move), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<StoredKey>,
}

/// A record a migration found already migrated, whose count [`merge`] withdraws when the job
/// itself wrote it (its key is [`claimed`](Tally::claimed) by a worker of the job).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Found {
    /// The entity (A's token).
    pub entity: String,
    /// Where it was found.
    pub key: StoredKey,
    /// Whether it was counted unchanged (else migrated before).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unchanged: bool,
}

/// What pages of a job came to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Tally {
    /// A migration's counts.
    #[serde(default, skip_serializing_if = "MigrateCounts::is_empty")]
    pub migrate: MigrateCounts,
    /// A purge's deleted items, per entity.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub deleted: BTreeMap<String, u64>,
    /// An audit's records scanned, per entity.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scanned: BTreeMap<String, u64>,
    /// An audit's misplaced records.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub misplaced: Vec<Misplaced>,
    /// An audit's unreadable records.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<Unreadable>,
    /// A purge's deletes that found their item changed since the scan read it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub conflicts: u64,
    /// Keys the job wrote records to that a scan of the job may find again: the new keys of
    /// moved records, and records rewritten by a page killed in flight.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claimed: Vec<StoredKey>,
    /// Records found already migrated that the job may have written itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub found: Vec<Found>,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Tally {
    /// Adds `other` to this tally.
    pub fn add(&mut self, other: Self) {
        self.migrate.add(&other.migrate);
        for (entity, n) in other.deleted {
            *self.deleted.entry(entity).or_default() += n;
        }
        for (entity, n) in other.scanned {
            *self.scanned.entry(entity).or_default() += n;
        }
        self.misplaced.extend(other.misplaced);
        self.unreadable.extend(other.unreadable);
        self.conflicts += other.conflicts;
        self.claimed.extend(other.claimed);
        self.found.extend(other.found);
    }

    /// The tally with the records found again that the job wrote itself (their key is in
    /// `claimed`) taken out of the counts, the found and claimed lists emptied, and the audit's
    /// lists sorted.
    fn settle(mut self, claimed: &HashSet<StoredKey>) -> Self {
        for found in std::mem::take(&mut self.found) {
            if claimed.contains(&found.key)
                && let Some(c) = self.migrate.entities.get_mut(&found.entity)
            {
                c.scanned = c.scanned.saturating_sub(1);
                if found.unchanged {
                    c.unchanged = c.unchanged.saturating_sub(1);
                } else {
                    c.migrated_before = c.migrated_before.saturating_sub(1);
                }
            }
        }
        self.claimed.clear();
        self.misplaced.sort_by(|a, b| {
            (&a.entity, &a.stored, &a.range_key).cmp(&(&b.entity, &b.stored, &b.range_key))
        });
        self.unreadable.sort_by(|a, b| {
            (&a.entity, &a.hash_key, &a.range_key).cmp(&(&b.entity, &b.hash_key, &b.range_key))
        });
        self
    }
}

/// One line of a journal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "entry", rename_all = "camelCase")]
#[non_exhaustive]
pub enum Entry {
    /// The first line: what the journal belongs to.
    Start(JobHeader),
    /// A page of `segment` is about to write these records.
    Begin {
        /// The segment.
        segment: u32,
        /// The records.
        planned: Vec<Planned>,
    },
    /// A page of `segment` is done: the segment moves to `next`, and the page came to `tally`.
    Done {
        /// The segment.
        segment: u32,
        /// Where the segment stands now.
        next: SegmentPosition,
        /// What the page came to.
        tally: Tally,
    },
    /// The page of `segment` that was in flight when the worker stopped: what its writes did
    /// (read back after the restart). The page itself is read again from the segment's
    /// position.
    Settled {
        /// The segment.
        segment: u32,
        /// What the writes before the stop came to.
        tally: Tally,
    },
}

/// Why a journal cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// Reading or writing the file failed.
    #[error("journal {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// A line is not an entry (a torn last line is dropped, not an error).
    #[error(
        "journal {path}, line {line}: {reason}; the file is not a journal of entity-manager (move it away to start over)"
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The line number (from 1).
        line: usize,
        /// Why.
        reason: String,
    },
    /// The journal belongs to another job or another worker's segments.
    #[error(
        "journal {path} belongs to {found_kind} job `{found_job}` ({found_range}), not to {kind} job `{job}` ({range}); give each worker of each job its own journal"
    )]
    OtherJob {
        /// The file.
        path: PathBuf,
        /// Its job's kind.
        found_kind: JobKind,
        /// Its job.
        found_job: String,
        /// Its segments.
        found_range: SegmentRange,
        /// The kind asked for.
        kind: JobKind,
        /// The job asked for.
        job: String,
        /// The segments asked for.
        range: SegmentRange,
    },
}

enum Sink {
    File { file: std::fs::File, path: PathBuf },
    Memory,
}

/// A worker's journal: its checkpoint and ledger. See the [module documentation](self).
///
/// [`open`](Self::open) keeps it in a file (one JSON line per entry, appended and synced to
/// disk before the job goes on); [`in_memory`](Self::in_memory) keeps it in memory.
pub struct Journal {
    header: JobHeader,
    entries: Mutex<Vec<Entry>>,
    sink: Mutex<Sink>,
    /// Lines written to the file so far.
    written: AtomicU64,
    /// Lines known synced to disk: an append whose line a sync started after it covered
    /// needs no sync of its own. (No lock is held while a sync runs: a page's append waiting
    /// on one held by another page's append, in a stream its caller does not poll meanwhile,
    /// would wait for ever.)
    synced: AtomicU64,
    /// A second handle of the file, synced without holding `sink` (on a blocking thread, so
    /// that the calls of the other pages go on meanwhile).
    syncer: Option<(std::sync::Arc<std::fs::File>, PathBuf)>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

impl Journal {
    /// A journal kept in memory, empty but for its header.
    pub fn in_memory(header: JobHeader) -> Self {
        Self {
            entries: Mutex::new(vec![Entry::Start(header.clone())]),
            header,
            sink: Mutex::new(Sink::Memory),
            written: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            syncer: None,
        }
    }

    /// A journal kept in memory that continues `entries` (those of an earlier journal of
    /// this header, as [`entries`](Self::entries) gave them).
    pub fn resume_in_memory(header: JobHeader, entries: Vec<Entry>) -> Self {
        let journal = Self::in_memory(header);
        if let Ok(mut mine) = journal.entries.lock() {
            mine.extend(
                entries
                    .into_iter()
                    .filter(|e| !matches!(e, Entry::Start(_))),
            );
        }
        journal
    }

    /// The journal in file `path`: created with `header` when missing or empty, else read
    /// (a torn last line, from a process killed while writing it, is dropped) and checked to
    /// belong to `header`.
    pub fn open(path: &Path, header: JobHeader) -> Result<Self, JournalError> {
        let io = |source| JournalError::Io {
            path: path.to_path_buf(),
            source,
        };
        let (entries, good_len) = match std::fs::File::open(path) {
            Ok(file) => read_lines(path, file)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Vec::new(), 0),
            Err(e) => return Err(io(e)),
        };
        match entries.first() {
            Some(Entry::Start(found)) if *found == header => {}
            Some(Entry::Start(found)) => {
                return Err(JournalError::OtherJob {
                    path: path.to_path_buf(),
                    found_kind: found.kind,
                    found_job: found.job.clone(),
                    found_range: found.range,
                    kind: header.kind,
                    job: header.job,
                    range: header.range,
                });
            }
            Some(_) => {
                return Err(JournalError::Corrupt {
                    path: path.to_path_buf(),
                    line: 1,
                    reason: "the first line is not the job's header".to_owned(),
                });
            }
            None => {}
        }
        // appends after the whole lines (a torn last line is cut off first)
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        file.set_len(good_len).map_err(io)?;
        let syncer = file.try_clone().map_err(io)?;
        let journal = Self {
            header: header.clone(),
            entries: Mutex::new(entries),
            sink: Mutex::new(Sink::File {
                file,
                path: path.to_path_buf(),
            }),
            written: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            syncer: Some((std::sync::Arc::new(syncer), path.to_path_buf())),
        };
        if good_len == 0 {
            journal.write(Entry::Start(header))?;
            journal.sync()?;
        }
        Ok(journal)
    }

    /// What the journal belongs to.
    pub fn header(&self) -> &JobHeader {
        &self.header
    }

    /// Every entry, header first.
    pub fn entries(&self) -> Vec<Entry> {
        self.entries.lock().map(|e| e.clone()).unwrap_or_default()
    }

    /// Where the worker stands: its checkpoint, its page in flight per segment and its tally.
    pub fn state(&self) -> JobState {
        replay(self.header.range, &self.entries())
    }

    /// The worker's report: [`merge`] of this journal alone.
    pub fn report(&self) -> JobReport {
        let entries = self.entries();
        merge_checked(&[entries])
    }

    /// Appends `entry` (in a file: written in one call, and synced to disk before the
    /// future ends). The sync runs on a blocking thread, not the runtime's: the other pages'
    /// calls go on meanwhile, and an append whose line a sync started after it covered (a
    /// page that ended meanwhile) needs none of its own.
    pub(crate) async fn append(&self, entry: Entry) -> Result<(), JournalError> {
        let Some(line) = self.write(entry)? else {
            return Ok(());
        };
        if self.synced.load(Ordering::SeqCst) >= line {
            return Ok(());
        }
        // every line written so far is on disk once this sync ends
        let target = self.written.load(Ordering::SeqCst);
        self.sync_off_thread().await?;
        self.synced.fetch_max(target, Ordering::SeqCst);
        Ok(())
    }

    /// [`sync`](Self::sync), on the tokio runtime's blocking threads when there is a runtime:
    /// a sync takes milliseconds, during which a current-thread runtime would run nothing
    /// else, and the pages that end meanwhile could not share it.
    async fn sync_off_thread(&self) -> Result<(), JournalError> {
        let (Some((file, path)), Ok(runtime)) =
            (&self.syncer, tokio::runtime::Handle::try_current())
        else {
            return self.sync();
        };
        let file = std::sync::Arc::clone(file);
        runtime
            .spawn_blocking(move || file.sync_data())
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e)))
            .map_err(|source| JournalError::Io {
                path: path.clone(),
                source,
            })
    }

    /// Writes `entry` to the file (not synced yet) and to the entries, in the same order;
    /// returns its line number in the file (`None` for a journal in memory).
    fn write(&self, entry: Entry) -> Result<Option<u64>, JournalError> {
        let mut sink = self
            .sink
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut line = None;
        if let Sink::File { file, path } = &mut *sink {
            let mut text = serde_json::to_vec(&entry).map_err(|e| JournalError::Io {
                path: path.clone(),
                source: std::io::Error::other(e),
            })?;
            text.push(b'\n');
            file.write_all(&text).map_err(|source| JournalError::Io {
                path: path.clone(),
                source,
            })?;
            line = Some(self.written.fetch_add(1, Ordering::SeqCst) + 1);
        }
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(entry);
        Ok(line)
    }

    /// Syncs the file's data to disk.
    fn sync(&self) -> Result<(), JournalError> {
        match &self.syncer {
            Some((file, path)) => file.sync_data().map_err(|source| JournalError::Io {
                path: path.clone(),
                source,
            }),
            None => Ok(()),
        }
    }
}

/// Where one worker stands, replayed from its journal.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct JobState {
    /// The position of each of its segments.
    pub checkpoint: ScanCheckpoint,
    /// Per segment, the records of the page that was in flight when the worker stopped (its
    /// `Begin` has no `Done` or `Settled` after it).
    pub in_flight: BTreeMap<u32, Vec<Planned>>,
    /// Keys claimed by settled pages (records rewritten before a stop, which the page read
    /// again finds in their new shape).
    pub settled: HashSet<StoredKey>,
    /// What the recorded pages came to.
    pub tally: Tally,
}

fn replay(range: SegmentRange, entries: &[Entry]) -> JobState {
    let mut state = fresh_state(range);
    for entry in entries {
        apply(&mut state, entry.clone());
    }
    state
}

fn fresh_state(range: SegmentRange) -> JobState {
    JobState {
        checkpoint: ScanCheckpoint::of_range(range),
        in_flight: BTreeMap::new(),
        settled: HashSet::new(),
        tally: Tally::default(),
    }
}

/// One entry replayed onto a worker's state.
fn apply(state: &mut JobState, entry: Entry) {
    match entry {
        Entry::Start(_) => {}
        Entry::Begin { segment, planned } => {
            state.in_flight.insert(segment, planned);
        }
        Entry::Done {
            segment,
            next,
            tally,
        } => {
            state.in_flight.remove(&segment);
            state.checkpoint.set(segment, next);
            state.tally.add(tally);
        }
        Entry::Settled { segment, tally } => {
            state.in_flight.remove(&segment);
            state.settled.extend(tally.claimed.iter().cloned());
            state.tally.add(tally);
        }
    }
}

/// Where one segment of a job stands, in a [`JobReport`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SegmentState {
    /// Finished.
    Done,
    /// Started, not finished.
    InProgress,
    /// No worker has read any page of it (or no journal covers it).
    NotStarted,
}

/// Consecutive segments in one state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SegmentSpan {
    /// The first segment.
    pub first: u32,
    /// The segment after the last.
    pub end: u32,
    /// Their state.
    pub state: SegmentState,
}

/// The job's totals, merged from its workers' journals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct JobReport {
    /// The kind of job.
    pub kind: JobKind,
    /// The job.
    pub job: String,
    /// The number of segments the table is split into.
    pub total_segments: u32,
    /// Every segment, in spans of one state, in order.
    pub segments: Vec<SegmentSpan>,
    /// Segments two journals both cover: their records may be counted twice (the table is
    /// right: every write is conditioned on the record as read). Empty in a well-split job.
    pub overlaps: Vec<u32>,
    /// The job's counts: every record counted once.
    pub tally: Tally,
}

impl JobReport {
    /// Whether every segment is done.
    pub fn complete(&self) -> bool {
        self.segments.iter().all(|s| s.state == SegmentState::Done)
    }

    /// How many segments are in `state`.
    pub fn count(&self, state: SegmentState) -> u32 {
        self.segments
            .iter()
            .filter(|s| s.state == state)
            .map(|s| s.end - s.first)
            .sum()
    }

    /// The segments in `state`, as `first..end` spans.
    pub fn spans(&self, state: SegmentState) -> Vec<std::ops::Range<u32>> {
        self.segments
            .iter()
            .filter(|s| s.state == state)
            .map(|s| s.first..s.end)
            .collect()
    }
}

/// Why journals cannot be merged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// No journal was given.
    #[error("no journal to merge")]
    Empty,
    /// A journal has no header line.
    #[error("journal {index} has no header line: it is not a journal of entity-manager")]
    NoHeader {
        /// Its position in the list (from 0).
        index: usize,
    },
    /// Two journals belong to different jobs.
    #[error(
        "journal {index} belongs to {kind} job `{job}` split into {total} segments, the first to {first_kind} job `{first_job}` split into {first_total}: merge the journals of one job"
    )]
    OtherJob {
        /// Its position in the list.
        index: usize,
        /// Its kind.
        kind: JobKind,
        /// Its job.
        job: String,
        /// Its split.
        total: u32,
        /// The first journal's kind.
        first_kind: JobKind,
        /// The first journal's job.
        first_job: String,
        /// The first journal's split.
        first_total: u32,
    },
}

/// Merges the journals of a job's workers ([`Journal::entries`], or the lines of their files
/// read with [`read_journal`]) into the job's totals: each record counted once, and the state
/// of every segment (done, in progress, never started) so that an operator can see what is
/// left and run exactly that part again.
pub fn merge(journals: &[Vec<Entry>]) -> Result<JobReport, MergeError> {
    let headers: Vec<&JobHeader> = journals
        .iter()
        .enumerate()
        .map(|(index, entries)| match entries.first() {
            Some(Entry::Start(h)) => Ok(h),
            _ => Err(MergeError::NoHeader { index }),
        })
        .collect::<Result<_, _>>()?;
    check_headers(&headers)?;
    Ok(merge_checked(journals))
}

/// The headers of the journals of one job: same kind, job and split.
fn check_headers(headers: &[&JobHeader]) -> Result<(), MergeError> {
    let first = headers.first().ok_or(MergeError::Empty)?;
    for (index, h) in headers.iter().enumerate() {
        if h.kind != first.kind || h.job != first.job || h.range.total != first.range.total {
            return Err(MergeError::OtherJob {
                index,
                kind: h.kind,
                job: h.job.clone(),
                total: h.range.total,
                first_kind: first.kind,
                first_job: first.job.clone(),
                first_total: first.range.total,
            });
        }
    }
    Ok(())
}

/// [`merge`] of journals known to share one header kind, job and split.
fn merge_checked(journals: &[Vec<Entry>]) -> JobReport {
    let states: Vec<(JobHeader, JobState)> = journals
        .iter()
        .filter_map(|entries| match entries.first() {
            Some(Entry::Start(header)) => Some((header.clone(), replay(header.range, entries))),
            _ => None,
        })
        .collect();
    let claimed: HashSet<StoredKey> = states
        .iter()
        .flat_map(|(_, state)| state.tally.claimed.iter().cloned())
        .collect();
    let mut report = assemble(states);
    report.tally = report.tally.settle(&claimed);
    report
}

/// The report of the workers' states: segments, overlaps and the summed tally (not settled:
/// its `found` and `claimed` lists kept).
fn assemble(states: Vec<(JobHeader, JobState)>) -> JobReport {
    let mut kind = JobKind::Migrate;
    let mut job = String::new();
    let mut total = 1;
    let mut segment_states: HashMap<u32, SegmentState> = HashMap::new();
    let mut overlaps = BTreeSet::new();
    let mut tally = Tally::default();
    for (header, state) in states {
        kind = header.kind;
        job.clone_from(&header.job);
        total = header.range.total;
        for (segment, position) in
            (header.range.first..header.range.end).zip(state.checkpoint.segments())
        {
            let now = match position {
                SegmentPosition::Done => SegmentState::Done,
                SegmentPosition::After { .. } => SegmentState::InProgress,
                SegmentPosition::NotStarted if state.in_flight.contains_key(&segment) => {
                    SegmentState::InProgress
                }
                SegmentPosition::NotStarted => SegmentState::NotStarted,
            };
            if segment_states.insert(segment, now).is_some() {
                overlaps.insert(segment);
            }
        }
        tally.add(state.tally);
    }
    let mut segments: Vec<SegmentSpan> = Vec::new();
    for segment in 0..total {
        let state = segment_states
            .get(&segment)
            .copied()
            .unwrap_or(SegmentState::NotStarted);
        match segments.last_mut() {
            Some(span) if span.state == state && span.end == segment => span.end = segment + 1,
            _ => segments.push(SegmentSpan {
                first: segment,
                end: segment + 1,
                state,
            }),
        }
    }
    JobReport {
        kind,
        job,
        total_segments: total,
        segments,
        overlaps: overlaps.into_iter().collect(),
        tally,
    }
}

/// Why journal files cannot be merged ([`merge_files`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MergeFilesError {
    /// A journal cannot be read (or a spill file written).
    #[error("{0}")]
    Journal(#[from] JournalError),
    /// The journals cannot be merged.
    #[error("{0}")]
    Merge(#[from] MergeError),
}

/// [`merge`] of journal files without holding the records' keys in memory: each file is read
/// line by line, and the keys the job wrote (`claimed`) and the records it found migrated
/// (`found`), the bulk of a migration's journals, go to `partitions` spill files in `spill`
/// by a hash of the key; each partition is then settled on its own. Memory is about the
/// journals' keys divided by `partitions` (a migration of 10⁹ records: 60 GB of keys, 256
/// partitions of about 250 MB). The totals are [`merge`]'s. The spill files are removed.
pub fn merge_files(
    paths: &[PathBuf],
    spill: &Path,
    partitions: usize,
) -> Result<JobReport, MergeFilesError> {
    let partitions = partitions.max(1);
    let spill_io = |source| JournalError::Io {
        path: spill.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(spill).map_err(spill_io)?;
    let names: Vec<PathBuf> = (0..partitions)
        .map(|p| spill.join(format!("merge-{}-{p}.jsonl", std::process::id())))
        .collect();
    let result = merge_spilled(paths, &names);
    for name in &names {
        let _ = std::fs::remove_file(name);
    }
    result
}

/// A key or a found record of a journal, in a spill file.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Spilled {
    Claimed(StoredKey),
    Found(Found),
}

fn merge_spilled(paths: &[PathBuf], names: &[PathBuf]) -> Result<JobReport, MergeFilesError> {
    let open_io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| JournalError::Io { path, source }
    };
    let mut writers = names
        .iter()
        .map(|name| {
            std::fs::File::create(name)
                .map(std::io::BufWriter::new)
                .map_err(open_io(name))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut spill = |entry: &mut Entry| -> Result<(), JournalError> {
        let (Entry::Done { tally, .. } | Entry::Settled { tally, .. }) = entry else {
            return Ok(());
        };
        let claimed = std::mem::take(&mut tally.claimed)
            .into_iter()
            .map(Spilled::Claimed);
        let found = std::mem::take(&mut tally.found)
            .into_iter()
            .map(Spilled::Found);
        for item in claimed.chain(found) {
            let key = match &item {
                Spilled::Claimed(key) | Spilled::Found(Found { key, .. }) => key,
            };
            let mut hasher = std::hash::DefaultHasher::new();
            std::hash::Hash::hash(key, &mut hasher);
            let at = usize::try_from(std::hash::Hasher::finish(&hasher) % names.len() as u64)
                .unwrap_or(0);
            let (Some(writer), Some(name)) = (writers.get_mut(at), names.get(at)) else {
                continue;
            };
            let mut line = serde_json::to_vec(&item).map_err(|e| JournalError::Io {
                path: name.clone(),
                source: std::io::Error::other(e),
            })?;
            line.push(b'\n');
            writer.write_all(&line).map_err(open_io(name))?;
        }
        Ok(())
    };
    let mut states = Vec::new();
    for (index, path) in paths.iter().enumerate() {
        let file = std::fs::File::open(path).map_err(open_io(path))?;
        let mut state: Option<(JobHeader, JobState)> = None;
        for_each_line(path, file, |mut entry| {
            if state.is_none() {
                let Entry::Start(header) = &entry else {
                    return Err(MergeFilesError::Merge(MergeError::NoHeader { index }));
                };
                state = Some((header.clone(), fresh_state(header.range)));
            }
            spill(&mut entry)?;
            if let Some((_, s)) = state.as_mut() {
                apply(s, entry);
            }
            Ok(())
        })?;
        states.push(state.ok_or(MergeError::NoHeader { index })?);
    }
    for (writer, name) in writers.into_iter().zip(names) {
        writer
            .into_inner()
            .map_err(|e| JournalError::Io {
                path: name.clone(),
                source: e.into_error(),
            })?
            .sync_data()
            .map_err(open_io(name))?;
    }
    check_headers(&states.iter().map(|(h, _)| h).collect::<Vec<_>>())?;
    let mut report = assemble(states);
    for name in names {
        let file = std::fs::File::open(name).map_err(open_io(name))?;
        let mut claimed = HashSet::new();
        let mut found = Vec::new();
        for line in std::io::BufReader::new(file).lines() {
            let line = line.map_err(open_io(name))?;
            match serde_json::from_str::<Spilled>(&line) {
                Ok(Spilled::Claimed(key)) => {
                    claimed.insert(key);
                }
                Ok(Spilled::Found(f)) => found.push(f),
                Err(e) => {
                    return Err(JournalError::Corrupt {
                        path: name.clone(),
                        line: 0,
                        reason: e.to_string(),
                    }
                    .into());
                }
            }
        }
        report.tally.found = found;
        report.tally = std::mem::take(&mut report.tally).settle(&claimed);
    }
    Ok(report)
}

/// The entries of a journal file (a torn last line dropped), for [`merge`].
pub fn read_journal(path: &Path) -> Result<Vec<Entry>, JournalError> {
    let file = std::fs::File::open(path).map_err(|source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(read_lines(path, file)?.0)
}

/// The entries of a journal file, and the length of its whole lines: a last line without its
/// newline is torn (the process died while writing it) and dropped.
fn read_lines(path: &Path, file: std::fs::File) -> Result<(Vec<Entry>, u64), JournalError> {
    let mut entries = Vec::new();
    let good_len = for_each_line(path, file, |entry| {
        entries.push(entry);
        Ok::<_, JournalError>(())
    })?;
    Ok((entries, good_len))
}

/// Calls `each` on every entry of a journal file, in order (a torn last line dropped); returns
/// the length of its whole lines.
fn for_each_line<E: From<JournalError>>(
    path: &Path,
    file: std::fs::File,
    mut each: impl FnMut(Entry) -> Result<(), E>,
) -> Result<u64, E> {
    let mut reader = std::io::BufReader::new(file);
    let mut good_len = 0u64;
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|source| JournalError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        if n == 0 || line.last() != Some(&b'\n') {
            break;
        }
        number += 1;
        let entry: Entry = serde_json::from_slice(&line).map_err(|e| JournalError::Corrupt {
            path: path.to_path_buf(),
            line: number,
            reason: e.to_string(),
        })?;
        each(entry)?;
        good_len += n as u64;
    }
    Ok(good_len)
}
