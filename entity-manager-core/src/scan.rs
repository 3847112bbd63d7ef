//! Parallel, throttled, resumable scans of a whole table, and the typed scan of one entity.
//!
//! [`ParallelScan`] splits the table into segments ([`Store::scan_page`]), reads up to
//! `throttle` of them at once, one page after the other, and yields each page as a
//! [`ScanBatch`]. Its position is a [`ScanCheckpoint`]: plain serializable data (per segment:
//! not started, after a key, or done), so a scan stopped by an error, a crash or a deliberate
//! stop resumes where it was. The consumer decides when a page counts as done: it applies the
//! batch to its checkpoint ([`ScanCheckpoint::advance`]) after it has handled the items, so a
//! resumed scan never skips an item it did not finish with.
//!
//! At entity level, [`EntityExt::scan`](crate::EntityExt::scan) streams the typed records of
//! one entity: the scan keeps the items whose hash key starts with the entity token and the
//! shard key delimiter ([`entity_filter`]).
//!
//! ```
//! use entity_manager_core::scan::{ParallelScan, ScanCheckpoint};
//! use entity_manager_core::store::{Expect, KeyType, MemoryStore, Store, TableDefinition};
//! use futures::TryStreamExt;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = MemoryStore::new(TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::S)));
//! for i in 0..10 {
//!     let item = serde_dynamo::to_item(serde_json::json!({ "pk": format!("p{i}"), "sk": "a" }))?;
//!     store.put_item(item, Expect::Any).await?;
//! }
//! // four segments, two in flight, pages of three items
//! let scan = ParallelScan::new(&store).segments(4).throttle(2).page_size(3);
//! let mut checkpoint: ScanCheckpoint = scan.checkpoint().clone();
//! let mut seen = 0;
//! let mut pages = scan.pages();
//! while let Some(batch) = pages.try_next().await? {
//!     seen += batch.items.len(); // handle the items, then record the progress
//!     checkpoint.advance(&batch);
//! }
//! assert_eq!(seen, 10);
//! assert!(checkpoint.is_done());
//! // the checkpoint is plain data: save it as JSON, load it, resume from it
//! let saved = serde_json::to_string(&checkpoint)?;
//! let loaded: ScanCheckpoint = serde_json::from_str(&saved)?;
//! let rest: Vec<_> = ParallelScan::new(&store).resume(loaded)?.items().try_collect().await?;
//! assert!(rest.is_empty());
//! # Ok(())
//! # }
//! ```

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::stream::{self, BoxStream, Stream, StreamExt};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_dynamo::{AttributeValue, Item};

use crate::entity::{Entity, from_item, schema_of};
use crate::error::{Error, Result};
use crate::schema::EntitySchema;
use crate::store::{Filter, MAX_SCAN_SEGMENTS, ScanPage, Store, StoreError};

/// Where one segment of a scan stands.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum SegmentPosition {
    /// Nothing of the segment has been read yet.
    #[default]
    NotStarted,
    /// Read up to this key (a page's `last_evaluated_key`); the next page starts after it.
    After {
        /// The last key evaluated, in `DynamoDB`'s attribute-value JSON.
        key: Item,
    },
    /// The segment is finished.
    Done,
}

/// The position of a [`ParallelScan`]: one [`SegmentPosition`] per segment.
///
/// It is plain data (serde), meant to be saved (as JSON, for example) after each batch and
/// given back to [`ParallelScan::resume`].
///
/// A checkpoint covers either every segment of the split, or the part one worker owns
/// ([`SegmentRange`]): `segments()[i]` is then the position of segment `first + i`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScanCheckpoint {
    /// The number of segments of the whole split, when this checkpoint covers only a part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    total: Option<u32>,
    /// The first segment covered.
    #[serde(default, skip_serializing_if = "is_zero")]
    first: u32,
    segments: Vec<SegmentPosition>,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl ScanCheckpoint {
    /// A scan of `total_segments` segments (at least 1) that has not started.
    pub fn new(total_segments: u32) -> Self {
        let n = usize::try_from(total_segments.clamp(1, MAX_SCAN_SEGMENTS)).unwrap_or(1);
        Self {
            total: None,
            first: 0,
            segments: vec![SegmentPosition::NotStarted; n],
        }
    }

    /// A scan of the segments of `range` only (one worker's share), not started.
    pub fn of_range(range: SegmentRange) -> Self {
        let n = usize::try_from(range.len()).unwrap_or(0);
        Self {
            total: (range.first != 0 || range.end != range.total).then_some(range.total),
            first: range.first,
            segments: vec![SegmentPosition::NotStarted; n],
        }
    }

    /// The number of segments of the whole split (including those of other workers).
    pub fn total_segments(&self) -> u32 {
        self.total
            .unwrap_or_else(|| u32::try_from(self.segments.len()).unwrap_or(u32::MAX))
    }

    /// The segments this checkpoint covers.
    pub fn range(&self) -> SegmentRange {
        let end = self
            .first
            .saturating_add(u32::try_from(self.segments.len()).unwrap_or(u32::MAX));
        SegmentRange {
            total: self.total_segments(),
            first: self.first,
            end,
        }
    }

    /// The position of every segment covered, in segment order (from
    /// [`range`](Self::range)`().first` on).
    pub fn segments(&self) -> &[SegmentPosition] {
        &self.segments
    }

    /// The position of `segment`, if this checkpoint covers it.
    pub fn position(&self, segment: u32) -> Option<&SegmentPosition> {
        segment
            .checked_sub(self.first)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| self.segments.get(i))
    }

    /// Whether every segment is done.
    pub fn is_done(&self) -> bool {
        self.segments
            .iter()
            .all(|s| matches!(s, SegmentPosition::Done))
    }

    /// How many segments are not done yet.
    pub fn remaining(&self) -> usize {
        self.segments
            .iter()
            .filter(|s| !matches!(s, SegmentPosition::Done))
            .count()
    }

    /// Records that `batch` has been handled: its segment moves to `batch.next`.
    pub fn advance(&mut self, batch: &ScanBatch) {
        self.set(batch.segment, batch.next.clone());
    }

    /// Moves `segment` to `position` (a segment outside the checkpoint is ignored).
    pub fn set(&mut self, segment: u32, position: SegmentPosition) {
        if let Some(slot) = segment
            .checked_sub(self.first)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| self.segments.get_mut(i))
        {
            *slot = position;
        }
    }

    fn check(&self) -> Result<(), ScanError> {
        let n = self.segments.len();
        if n == 0 || n > usize::try_from(MAX_SCAN_SEGMENTS).unwrap_or(usize::MAX) {
            return Err(ScanError::InvalidCheckpoint {
                reason: format!("it has {n} segments; a scan has 1 to {MAX_SCAN_SEGMENTS}"),
            });
        }
        let range = self.range();
        if range.end > range.total || range.total > MAX_SCAN_SEGMENTS {
            return Err(ScanError::InvalidCheckpoint {
                reason: format!(
                    "it covers segments {}..{} of a split into {}",
                    range.first, range.end, range.total
                ),
            });
        }
        Ok(())
    }
}

/// One page of one segment, as a [`ParallelScan`] yields it.
#[derive(Clone, Debug, PartialEq)]
pub struct ScanBatch {
    /// The segment the page belongs to.
    pub segment: u32,
    /// The items of the page that passed the filter (possibly none).
    pub items: Vec<Item>,
    /// Where the segment stands once this page is handled.
    pub next: SegmentPosition,
}

/// The segments one worker owns: `first..end` of a split of the table into `total` segments.
///
/// Workers of one job split the same `total` and take disjoint ranges; together they cover
/// `0..total`. [`worker`](Self::worker) gives worker `index` of `workers` its even share;
/// [`parse`](Self::parse) reads `--worker 3/16` or a range `100..200`; [`from_env`](Self::from_env)
/// takes the worker index from the job engine's environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SegmentRange {
    /// The number of segments the table is split into (`TotalSegments`).
    pub total: u32,
    /// The first segment owned.
    pub first: u32,
    /// The segment after the last one owned.
    pub end: u32,
}

/// The environment variables a worker index is read from, in this order: Kubernetes Indexed
/// Jobs set `JOB_COMPLETION_INDEX`, AWS Batch array jobs set `AWS_BATCH_JOB_ARRAY_INDEX` (both
/// count from 0).
pub const WORKER_INDEX_VARIABLES: [&str; 2] = ["JOB_COMPLETION_INDEX", "AWS_BATCH_JOB_ARRAY_INDEX"];

/// Why a share of segments cannot be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SegmentRangeError {
    /// The total is 0 or above `DynamoDB`'s limit.
    #[error("a table is split into 1 to {MAX_SCAN_SEGMENTS} segments, not {total}")]
    Total {
        /// The total asked for.
        total: u32,
    },
    /// The worker index or count is impossible.
    #[error(
        "worker {index} of {workers} does not exist: workers count from 0 to (workers - 1), and there are at most as many workers ({workers}) as segments ({total})"
    )]
    Worker {
        /// The index.
        index: u32,
        /// The number of workers.
        workers: u32,
        /// The number of segments.
        total: u32,
    },
    /// The range is empty or outside the split.
    #[error("segments {first}..{end} are not a non-empty part of 0..{total}")]
    Range {
        /// The first segment.
        first: u32,
        /// The segment after the last.
        end: u32,
        /// The number of segments.
        total: u32,
    },
    /// The text is neither `INDEX/WORKERS` nor `FIRST..END`.
    #[error(
        "`{text}` is neither a worker `INDEX/WORKERS` (e.g. `3/16`) nor a segment range `FIRST..END` (e.g. `100..200`)"
    )]
    Syntax {
        /// The text.
        text: String,
    },
    /// An environment variable holds no worker index.
    #[error("the environment variable {variable}={value} is not a worker index (a number from 0)")]
    Environment {
        /// The variable.
        variable: &'static str,
        /// Its value.
        value: String,
    },
}

impl SegmentRange {
    /// Every segment of a split into `total`.
    pub fn all(total: u32) -> Result<Self, SegmentRangeError> {
        Self::new(total, 0, total)
    }

    /// Segments `first..end` of a split into `total`.
    pub fn new(total: u32, first: u32, end: u32) -> Result<Self, SegmentRangeError> {
        if total == 0 || total > MAX_SCAN_SEGMENTS {
            return Err(SegmentRangeError::Total { total });
        }
        if first >= end || end > total {
            return Err(SegmentRangeError::Range { first, end, total });
        }
        Ok(Self { total, first, end })
    }

    /// Worker `index` (from 0) of `workers`: the `index`-th of `workers` contiguous, even
    /// shares of `0..total` (sizes differ by one at most).
    pub fn worker(total: u32, index: u32, workers: u32) -> Result<Self, SegmentRangeError> {
        if workers == 0 || index >= workers || workers > total {
            return Err(SegmentRangeError::Worker {
                index,
                workers,
                total,
            });
        }
        let cut = |i: u32| u32::try_from(u64::from(i) * u64::from(total) / u64::from(workers));
        match (cut(index), cut(index + 1)) {
            (Ok(first), Ok(end)) => Self::new(total, first, end),
            _ => Err(SegmentRangeError::Total { total }),
        }
    }

    /// Reads `INDEX/WORKERS` (a worker's even share, [`worker`](Self::worker)) or
    /// `FIRST..END` (segments, end excluded) for a split into `total`.
    pub fn parse(total: u32, text: &str) -> Result<Self, SegmentRangeError> {
        let syntax = || SegmentRangeError::Syntax {
            text: text.to_owned(),
        };
        let number = |s: &str| s.trim().parse::<u32>().map_err(|_| syntax());
        if let Some((index, workers)) = text.split_once('/') {
            Self::worker(total, number(index)?, number(workers)?)
        } else if let Some((first, end)) = text.split_once("..") {
            Self::new(total, number(first)?, number(end)?)
        } else {
            Err(syntax())
        }
    }

    /// The share of the worker whose index the job engine put in the environment
    /// ([`WORKER_INDEX_VARIABLES`]), among `workers`; `None` when no such variable is set.
    pub fn from_env(total: u32, workers: u32) -> Result<Option<Self>, SegmentRangeError> {
        Self::from_lookup(total, workers, |name| std::env::var(name).ok())
    }

    /// [`from_env`](Self::from_env) over any lookup of variables (for tests).
    pub fn from_lookup(
        total: u32,
        workers: u32,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, SegmentRangeError> {
        for variable in WORKER_INDEX_VARIABLES {
            if let Some(value) = lookup(variable) {
                let index =
                    value
                        .trim()
                        .parse::<u32>()
                        .map_err(|_| SegmentRangeError::Environment {
                            variable,
                            value: value.clone(),
                        })?;
                return Self::worker(total, index, workers).map(Some);
            }
        }
        Ok(None)
    }

    /// How many segments are owned.
    pub fn len(&self) -> u32 {
        self.end.saturating_sub(self.first)
    }

    /// Whether no segment is owned (never, for a range made by this type's constructors).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `segment` is owned.
    pub fn contains(&self, segment: u32) -> bool {
        (self.first..self.end).contains(&segment)
    }
}

impl std::fmt::Display for SegmentRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "segments {}..{} of {}", self.first, self.end, self.total)
    }
}

/// Why a scan stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScanError {
    /// A page of a segment could not be read. The pages handled before it stay handled:
    /// resume from the last checkpoint.
    #[error(
        "scan of segment {segment} of {total_segments} failed: {source}; resume from the last checkpoint"
    )]
    Segment {
        /// The segment.
        segment: u32,
        /// The number of segments.
        total_segments: u32,
        /// What the store reported.
        #[source]
        source: Box<StoreError>,
    },
    /// The checkpoint given to [`ParallelScan::resume`] cannot be used.
    #[error("the scan checkpoint is invalid: {reason}; start the scan again without it")]
    InvalidCheckpoint {
        /// What is wrong with it.
        reason: String,
    },
}

/// The filter that keeps the records of one entity: `begins_with(hashKey, "<token><shard
/// key delimiter>")`.
pub fn entity_filter(entity: &EntitySchema<'_>) -> Filter {
    let table = entity.table();
    Filter::BeginsWith {
        attribute: table.hash_key.to_string(),
        prefix: AttributeValue::S(format!(
            "{}{}",
            entity.model().token,
            table.delimiters.shard_key
        )),
    }
}

/// How bulk work on a scan ([`purge`](ParallelScan::purge),
/// [`Migration::run`](crate::migrate::Migration::run)) sends its writes. Whatever the mode, a
/// job's journal counts each record once across kills and resumes.
///
/// ```
/// use std::ops::ControlFlow;
///
/// use entity_manager_core::scan::{BulkWrites, ParallelScan};
/// use entity_manager_core::store::{KeyType, MemoryStore, Store, TableDefinition, WriteRequest};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = MemoryStore::new(TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::S)));
/// let items = (0..60)
///     .map(|i| serde_dynamo::to_item(serde_json::json!({ "pk": format!("p{i}"), "sk": "a" })))
///     .map(|item| item.map(WriteRequest::Put))
///     .collect::<Result<Vec<_>, _>>()?;
/// store.batch_write(items).await?;
/// // a maintenance window: no one else writes the table, so batches without conditions
/// let report = ParallelScan::new(&store)
///     .writes(BulkWrites::Exclusive)
///     .purge(|_| ControlFlow::Continue(()))
///     .await?;
/// assert_eq!(report.deleted, 60);
/// assert!(store.is_empty());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BulkWrites {
    /// Every write conditioned on the record being unchanged since the scan read it, one
    /// request per record (`PutItem`, `DeleteItem`, or one `TransactWriteItems` for a move),
    /// 16 at once per page: a write another client made meanwhile is never overwritten, a
    /// record it deleted never comes back. One write unit per record (a move: four, as a
    /// transaction of two items).
    #[default]
    Guarded,
    /// `BatchWriteItem` of 25, **no condition**: only for a table no one else writes while
    /// the job runs (a maintenance window), and segments no two workers share. A write
    /// another client makes between the scan and the batch is overwritten, a record it
    /// deletes meanwhile comes back, and a move is a put then a delete that a kill can
    /// separate (the worker that resumes finishes it). The fewest requests: 4 to 8 per 100
    /// records instead of 100; one write unit per item written (a move: two).
    Exclusive,
}

/// A parallel scan of a table: segments read `throttle` at a time, each page by page,
/// resumable from a [`ScanCheckpoint`]. See the [module documentation](self).
#[derive(Debug)]
#[must_use = "a scan does nothing until its stream is polled"]
pub struct ParallelScan<'s, S> {
    pub(crate) store: &'s S,
    pub(crate) throttle: usize,
    pub(crate) page_size: Option<u32>,
    pub(crate) filter: Option<Filter>,
    pub(crate) consistent: bool,
    pub(crate) checkpoint: ScanCheckpoint,
    pub(crate) writes: BulkWrites,
}

/// What one step of a segment produced: the action's output for one page.
pub(crate) struct Step<T> {
    pub(crate) segment: u32,
    pub(crate) next: SegmentPosition,
    pub(crate) output: T,
}

/// Why a segment stopped: its page could not be read, or the action on it failed.
pub(crate) enum StepError<E> {
    Scan { segment: u32, source: StoreError },
    Action { source: E },
}

impl<'s, S: Store> ParallelScan<'s, S> {
    /// The default number of segments.
    pub const DEFAULT_SEGMENTS: u32 = 4;
    /// The default number of segments read at once.
    pub const DEFAULT_THROTTLE: usize = 4;

    /// A scan of the whole table in [`DEFAULT_SEGMENTS`](Self::DEFAULT_SEGMENTS) segments,
    /// [`DEFAULT_THROTTLE`](Self::DEFAULT_THROTTLE) at a time, with the store's page size
    /// (1 MB of data read, on both stores).
    pub fn new(store: &'s S) -> Self {
        Self {
            store,
            throttle: Self::DEFAULT_THROTTLE,
            page_size: None,
            filter: None,
            consistent: false,
            checkpoint: ScanCheckpoint::new(Self::DEFAULT_SEGMENTS),
            writes: BulkWrites::default(),
        }
    }

    /// Splits the table into `segments` segments (1 to 1,000,000) and starts from the
    /// beginning.
    pub fn segments(mut self, segments: u32) -> Self {
        self.checkpoint = ScanCheckpoint::new(segments);
        self
    }

    /// Reads only the segments of `range` (this worker's share of a split of the table into
    /// `range.total` segments), from the beginning. Other workers, anywhere, read the other
    /// ranges; they need no coordination beyond the table.
    pub fn share(mut self, range: SegmentRange) -> Self {
        self.checkpoint = ScanCheckpoint::of_range(range);
        self
    }

    /// Reads at most `throttle` segments at once (at least 1).
    pub fn throttle(mut self, throttle: usize) -> Self {
        self.throttle = throttle.max(1);
        self
    }

    /// Evaluates at most `page_size` items per page (at least 1): the granularity of the
    /// checkpoint.
    pub fn page_size(mut self, page_size: u32) -> Self {
        self.page_size = Some(page_size.max(1));
        self
    }

    /// How a purge or a migration on this scan writes (default
    /// [`BulkWrites::Guarded`]).
    pub fn writes(mut self, writes: BulkWrites) -> Self {
        self.writes = writes;
        self
    }

    /// Keeps only the items that pass `filter` (applied after the page size, as `DynamoDB`
    /// does).
    pub fn filter(mut self, filter: Filter) -> Self {
        self.filter = Some(filter);
        self
    }

    /// Keeps only the records of `entity` ([`entity_filter`]).
    pub fn entity(self, entity: &EntitySchema<'_>) -> Self {
        self.filter(entity_filter(entity))
    }

    /// Asks for strongly consistent reads.
    pub fn consistent(mut self, consistent: bool) -> Self {
        self.consistent = consistent;
        self
    }

    /// Resumes from a checkpoint (its segment count replaces [`segments`](Self::segments)).
    /// Give it the same filter as the scan that saved it.
    pub fn resume(mut self, checkpoint: ScanCheckpoint) -> Result<Self, ScanError> {
        checkpoint.check()?;
        self.checkpoint = checkpoint;
        Ok(self)
    }

    /// Where the scan starts.
    pub fn checkpoint(&self) -> &ScanCheckpoint {
        &self.checkpoint
    }

    /// The store scanned.
    pub fn store(&self) -> &'s S {
        self.store
    }

    /// The pages, as they come (segments interleave; the pages of one segment come in order).
    /// After an error the stream ends with that error; the other segments stop.
    pub fn pages(self) -> impl Stream<Item = Result<ScanBatch, ScanError>> + Send + 's {
        let total_segments = self.checkpoint.total_segments();
        let mut failed = false;
        self.drive(None, |_, items| {
            std::future::ready(Ok::<_, std::convert::Infallible>(items))
        })
        .map(move |step| match step {
            Ok(step) => Ok(ScanBatch {
                segment: step.segment,
                items: step.output,
                next: step.next,
            }),
            Err(StepError::Scan { segment, source }) => Err(ScanError::Segment {
                segment,
                total_segments,
                source: Box::new(source),
            }),
            Err(StepError::Action { source, .. }) => match source {},
        })
        .take_while(move |r| {
            let go = !failed;
            failed |= r.is_err();
            std::future::ready(go)
        })
    }

    /// The items, as they come. After an error the stream ends with that error.
    pub fn items(self) -> impl Stream<Item = Result<Item, ScanError>> + Send + 's {
        self.pages().flat_map(|page| match page {
            Ok(batch) => stream::iter(batch.items.into_iter().map(Ok).collect::<Vec<_>>()),
            Err(e) => stream::iter(vec![Err(e)]),
        })
    }

    /// Runs `action` on the items of every page (with its segment), segment by segment (at most `throttle`
    /// segments at once), and yields a step once the action on a page has finished. A
    /// segment stops after its first failure. Once `stop` is set, no segment starts another
    /// page: the stream ends when the pages in flight are done.
    pub(crate) fn drive<T, E, F, Fut>(
        self,
        stop: Option<&Arc<AtomicBool>>,
        action: F,
    ) -> BoxStream<'s, Result<Step<T>, StepError<E>>>
    where
        T: Send + 's,
        E: Send + 's,
        F: Fn(u32, Vec<Item>) -> Fut + Clone + Send + Sync + 's,
        Fut: Future<Output = Result<T, E>> + Send + 's,
    {
        let Self {
            store,
            throttle,
            page_size,
            filter,
            consistent,
            checkpoint,
            writes: _,
        } = self;
        let total = checkpoint.total_segments();
        let first = checkpoint.first;
        // nothing here reads what a page consumed: a store that does (a rate limit in
        // capacity units) asks for it again
        let mut template = ScanPage::new().consistent(consistent).with_capacity(false);
        template.limit = page_size;
        template.filter = filter;
        let segments: Vec<BoxStream<'s, Result<Step<T>, StepError<E>>>> = checkpoint
            .segments
            .into_iter()
            .zip(first..total)
            .map(|(position, segment)| {
                segment_steps(
                    store,
                    template.clone().segment(segment, total),
                    position,
                    stop.cloned(),
                    action.clone(),
                )
            })
            .collect();
        stream::iter(segments).flatten_unordered(throttle).boxed()
    }
}

/// The steps of one segment, from `position` on: read a page, run the action, yield.
fn segment_steps<'s, S, T, E, F, Fut>(
    store: &'s S,
    request: ScanPage,
    position: SegmentPosition,
    stop: Option<Arc<AtomicBool>>,
    action: F,
) -> BoxStream<'s, Result<Step<T>, StepError<E>>>
where
    S: Store,
    T: Send + 's,
    E: Send + 's,
    F: Fn(u32, Vec<Item>) -> Fut + Clone + Send + Sync + 's,
    Fut: Future<Output = Result<T, E>> + Send + 's,
{
    let segment = request.segment;
    stream::unfold(Some(position), move |position| {
        let request = request.clone();
        let action = action.clone();
        let stopped = stop
            .as_ref()
            .is_some_and(|stop| stop.load(Ordering::SeqCst));
        async move {
            if stopped {
                return None;
            }
            let start = match position? {
                SegmentPosition::Done => return None,
                SegmentPosition::NotStarted => None,
                SegmentPosition::After { key } => Some(key),
            };
            let span = crate::trace::op_span!("entity_manager.scan_page", segment);
            let request = request.start_after(start);
            let page = match crate::trace::operation(span, store.scan_page(&request)).await {
                Ok(page) => page,
                Err(source) => return Some((Err(StepError::Scan { segment, source }), None)),
            };
            let next = match page.last_evaluated_key {
                Some(key) => SegmentPosition::After { key },
                None => SegmentPosition::Done,
            };
            match action(segment, page.items).await {
                Ok(output) => {
                    let then = (next != SegmentPosition::Done).then(|| next.clone());
                    Some((
                        Ok(Step {
                            segment,
                            next,
                            output,
                        }),
                        then,
                    ))
                }
                Err(source) => Some((Err(StepError::Action { source }), None)),
            }
        }
    })
    .boxed()
}

/// The typed scan of one entity: [`EntityExt::scan`](crate::EntityExt::scan).
#[derive(Debug)]
#[must_use = "a scan does nothing until its stream is polled"]
pub struct RecordScan<'s, S, E> {
    scan: ParallelScan<'s, S>,
    entity: PhantomData<fn() -> E>,
}

impl<'s, S: Store, E: Entity> RecordScan<'s, S, E> {
    /// The scan of `E`'s records on `store`. Fails when the entity's table configuration is
    /// invalid ([`EntityExt::schema`](crate::EntityExt::schema)).
    pub fn new(store: &'s S) -> Result<Self> {
        let schema = schema_of::<E>()?;
        Ok(Self {
            scan: ParallelScan::new(store).entity(&schema),
            entity: PhantomData,
        })
    }

    /// Splits the table into `segments` segments.
    pub fn segments(mut self, segments: u32) -> Self {
        self.scan = self.scan.segments(segments);
        self
    }

    /// Reads at most `throttle` segments at once.
    pub fn throttle(mut self, throttle: usize) -> Self {
        self.scan = self.scan.throttle(throttle);
        self
    }

    /// Evaluates at most `page_size` items per page.
    pub fn page_size(mut self, page_size: u32) -> Self {
        self.scan = self.scan.page_size(page_size);
        self
    }

    /// The untyped scan underneath (with the entity filter), for resumable work on items.
    pub fn into_items(self) -> ParallelScan<'s, S> {
        self.scan
    }

    /// The records, as they come (in no particular order). A store failure ends the stream
    /// with [`Error::Store`]; an item that does not convert is an error for that item only.
    pub fn records(self) -> impl Stream<Item = Result<E>> + Send + 's
    where
        E: DeserializeOwned + Send,
    {
        self.scan.items().map(|item| match item {
            Ok(item) => from_item::<E>(&item),
            Err(ScanError::Segment { source, .. }) => Err(Error::Store {
                entity: E::model().token.to_string(),
                operation: "Scan",
                source,
            }),
            Err(e @ ScanError::InvalidCheckpoint { .. }) => Err(Error::InvalidQuery {
                entity: E::model().token.to_string(),
                reason: e.to_string(),
            }),
        })
    }
}
