//! Purge: delete every item a [`ParallelScan`] finds (every record of an entity, or the whole
//! table) with batch deletes, resumably.
//!
//! Each item a page holds is deleted with its own `DeleteItem` (16 at once), **conditioned on
//! the item being unchanged since the scan read it** (every attribute as read) and on the
//! scan's filter still holding (or, for a table no one else writes, in unconditioned batches:
//! [`BulkWrites::Exclusive`]): a write another client made between the scan and the delete is
//! never deleted unseen (an item with too many attributes to compare in one condition
//! expression is deleted on the filter alone). When the condition fails, the item as it is now is checked against
//! the filter again: if it still matches it is deleted under a new condition, if not it is kept;
//! either way the conflict is counted ([`PurgeReport::conflicts`]). The segment's position
//! advances only once its page is deleted. So the checkpoint never gets ahead of the deletes: after an error, a
//! crash or a deliberate stop, running the purge again from the last checkpoint finishes the
//! job, and running it twice deletes nothing more (deleting a missing item succeeds).
//!
//! ```
//! use std::ops::ControlFlow;
//!
//! use entity_manager_core::scan::ParallelScan;
//! use entity_manager_core::store::{Expect, KeyType, MemoryStore, Store, TableDefinition};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = MemoryStore::new(TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::S)));
//! for i in 0..60 {
//!     let item = serde_dynamo::to_item(serde_json::json!({ "pk": format!("p{}", i % 7), "sk": i.to_string() }))?;
//!     store.put_item(item, Expect::Any).await?;
//! }
//! // stop after the first batch, as a crash would, keeping the last checkpoint
//! let report = ParallelScan::new(&store).page_size(10).purge(|_| ControlFlow::Break(())).await?;
//! assert!(!report.complete && report.deleted <= 10);
//! // resume from it: everything else goes
//! let scan = ParallelScan::new(&store).page_size(10).resume(report.checkpoint)?;
//! let rest = scan.purge(|_| ControlFlow::Continue(())).await?;
//! assert!(rest.complete);
//! assert_eq!(report.deleted + rest.deleted, 60);
//! assert!(store.is_empty());
//! # Ok(())
//! # }
//! ```

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use serde_dynamo::Item;

use crate::guarded::{self, PARALLEL_WRITES};
use crate::job::{Entry, Journal, JournalError, Planned, StoredKey, Tally};
use crate::scan::{BulkWrites, ParallelScan, ScanCheckpoint, Step, StepError};
use crate::store::expression::Request;
use crate::store::value::matches;
use crate::store::{BatchWriteError, Expect, Filter, Store, StoreError, WriteRequest};

/// What a purge reports after each deleted page, to the progress callback.
#[derive(Debug)]
pub struct PurgeProgress<'a> {
    /// The keys just deleted (possibly none: a page whose items all failed the filter).
    pub keys: &'a [Item],
    /// How many items this run has deleted so far.
    pub deleted: u64,
    /// The position to resume from if the purge stops now: save it.
    pub checkpoint: &'a ScanCheckpoint,
}

/// How a purge ended.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PurgeReport {
    /// How many items this run deleted.
    pub deleted: u64,
    /// How many deletes found the item changed since the scan read it (and read it again: it
    /// was deleted if it still matched the filter, kept if not).
    pub conflicts: u64,
    /// Whether every segment is done; `false` when the progress callback stopped the purge.
    pub complete: bool,
    /// Where the purge stands (every segment done when `complete`).
    pub checkpoint: ScanCheckpoint,
}

/// What stopped a purge.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PurgeFailure {
    /// A page could not be read.
    #[error("scan failed: {0}")]
    Scan(#[source] Box<StoreError>),
    /// A batch delete did not delete every item of a page.
    #[error("batch delete failed: {0}")]
    Delete(#[source] Box<BatchWriteError>),
    /// The journal could not be written ([`ParallelScan::purge_job`]).
    #[error("{0}")]
    Journal(#[source] Box<JournalError>),
}

/// A purge that stopped on an error. Nothing is lost: every item not yet deleted is either
/// listed in [`unprocessed`](Self::unprocessed) or after the [`checkpoint`](Self::checkpoint);
/// resume from the checkpoint ([`ParallelScan::resume`]) to finish.
#[derive(Debug, thiserror::Error)]
#[error(
    "purge stopped after deleting {deleted} items, with {remaining} of {total} segments unfinished: {source}; run it again from the checkpoint to finish",
    remaining = checkpoint.remaining(),
    total = checkpoint.total_segments()
)]
pub struct PurgeError {
    /// How many items this run deleted before it stopped.
    pub deleted: u64,
    /// The position to resume from: the pages before it are deleted.
    pub checkpoint: ScanCheckpoint,
    /// The keys of the failed page that were not deleted (they are also after the
    /// checkpoint, so a resumed purge deletes them).
    pub unprocessed: Vec<Item>,
    /// What failed.
    #[source]
    pub source: PurgeFailure,
}

impl<S: Store> ParallelScan<'_, S> {
    /// Deletes every item this scan finds, page by page, with batch deletes; up to
    /// `throttle` segments at once.
    ///
    /// After each page is deleted, `progress` gets the new checkpoint; returning
    /// [`ControlFlow::Break`] stops the purge: no new page starts, the pages in flight are
    /// finished and reported, and the report says whether anything is left. The first error
    /// stops the purge the same way and carries the checkpoint to resume from.
    ///
    /// The counts are of the items this run deleted and recorded. A run that is killed (not
    /// stopped) may have deleted items after its last checkpoint without recording them: the
    /// run that resumes finds them gone, so the final state is the same, but the two counts
    /// add up to less. [`purge_job`](Self::purge_job) keeps a journal that makes them exact.
    pub async fn purge<P>(self, progress: P) -> Result<PurgeReport, PurgeError>
    where
        P: FnMut(&PurgeProgress<'_>) -> ControlFlow<()>,
    {
        self.run_purge(None::<(&Journal, &fn(&Item) -> String)>, progress)
            .await
    }
}

impl<S: Store> ParallelScan<'_, S> {
    /// [`purge`](Self::purge) as one worker of a job ([`job`](crate::job)): resumes from
    /// `journal` (this scan's position and share are replaced by the journal's), settles the
    /// page that was in flight when the worker last stopped (each key it was deleting is read
    /// back: gone means deleted, still there is deleted now), records every page before and after its deletes, and counts
    /// the deleted items per `classify(key)` (the entity, say) in the journal, each item once
    /// however often the worker was stopped: [`Journal::report`] and
    /// [`merge`](crate::job::merge) give the exact totals.
    ///
    /// `progress` is called after each page, as for [`purge`](Self::purge).
    pub async fn purge_job<C, P>(
        self,
        journal: &Journal,
        classify: C,
        progress: P,
    ) -> Result<PurgeReport, PurgeError>
    where
        C: Fn(&Item) -> String + Send + Sync,
        P: FnMut(&PurgeProgress<'_>) -> ControlFlow<()>,
    {
        let state = journal.state();
        let store = self.store;
        let fail = |checkpoint: &ScanCheckpoint, source| PurgeError {
            deleted: 0,
            checkpoint: checkpoint.clone(),
            unprocessed: Vec::new(),
            source,
        };
        let mut scan = self;
        scan.checkpoint = state.checkpoint.clone();
        settle(store, journal, &state.in_flight, scan.filter.as_ref())
            .await
            .map_err(|source| fail(&state.checkpoint, source))?;
        scan.run_purge(Some((journal, &classify)), progress).await
    }

    /// The loop of [`purge`](Self::purge) and [`purge_job`](Self::purge_job): with a journal,
    /// each page's keys are recorded before its deletes, and its position and counts after.
    async fn run_purge<C, P>(
        self,
        job: Option<(&Journal, &C)>,
        mut progress: P,
    ) -> Result<PurgeReport, PurgeError>
    where
        C: Fn(&Item) -> String + Send + Sync,
        P: FnMut(&PurgeProgress<'_>) -> ControlFlow<()>,
    {
        let scan = self;
        let store = scan.store;
        let definition = store.definition();
        let hash = definition.hash_key.name.clone();
        let range = definition.range_key.name.clone();
        let filter = scan.filter.clone();
        let writes = scan.writes;
        let mut checkpoint = scan.checkpoint().clone();
        let mut deleted = 0u64;
        let mut conflicts = 0u64;
        let halt = Arc::new(AtomicBool::new(false));
        let mut steps = scan.drive(Some(&halt), move |segment, items: Vec<Item>| {
            let (hash, range, filter) = (hash.clone(), range.clone(), filter.clone());
            let page_span =
                crate::trace::op_span!("entity_manager.purge_page", items = items.len());
            let page = async move {
                if let Some((journal, classify)) = job
                    && !items.is_empty()
                {
                    let planned = items
                        .iter()
                        .map(|item| Planned {
                            entity: classify(item),
                            key: StoredKey::of(item, definition),
                            to: None,
                        })
                        .collect();
                    journal
                        .append(Entry::Begin { segment, planned })
                        .await
                        .map_err(|e| PurgeFailure::Journal(Box::new(e)))?;
                }
                delete_page(store, items, (&hash, &range), filter.as_ref(), writes)
                    .await
                    .map_err(|e| PurgeFailure::Delete(Box::new(e)))
            };
            async move { crate::trace::operation(page_span, page).await }
        });
        let mut failure: Option<(Vec<Item>, PurgeFailure)> = None;
        while let Some(step) = steps.next().await {
            match step {
                Ok(step) => {
                    if let Some((journal, classify)) = job
                        && let Err(e) = journal.append(done(&step, classify)).await
                    {
                        halt.store(true, Ordering::SeqCst);
                        failure.get_or_insert((Vec::new(), PurgeFailure::Journal(Box::new(e))));
                        continue;
                    }
                    deleted += step.output.keys.len() as u64;
                    conflicts += step.output.conflicts;
                    checkpoint.set(step.segment, step.next);
                    let flow = progress(&PurgeProgress {
                        keys: &step.output.keys,
                        deleted,
                        checkpoint: &checkpoint,
                    });
                    if flow.is_break() {
                        halt.store(true, Ordering::SeqCst);
                    }
                }
                Err(StepError::Scan { source, .. }) => {
                    halt.store(true, Ordering::SeqCst);
                    failure.get_or_insert((Vec::new(), PurgeFailure::Scan(Box::new(source))));
                }
                Err(StepError::Action { source }) => {
                    halt.store(true, Ordering::SeqCst);
                    let unprocessed = match &source {
                        PurgeFailure::Delete(e) => e
                            .unwritten
                            .iter()
                            .filter_map(|w| match w {
                                WriteRequest::Delete(key) => Some(key.clone()),
                                WriteRequest::Put(_) => None,
                            })
                            .collect(),
                        _ => Vec::new(),
                    };
                    failure.get_or_insert((unprocessed, source));
                }
            }
        }
        if let Some((unprocessed, source)) = failure {
            return Err(PurgeError {
                deleted,
                checkpoint,
                unprocessed,
                source,
            });
        }
        Ok(PurgeReport {
            deleted,
            conflicts,
            complete: checkpoint.is_done(),
            checkpoint,
        })
    }
}

/// The journal entry of a page deleted: its position and its deletes per `classify(key)`.
fn done(step: &Step<PageDeleted>, classify: &impl Fn(&Item) -> String) -> Entry {
    let mut tally = Tally {
        conflicts: step.output.conflicts,
        ..Tally::default()
    };
    for key in &step.output.keys {
        *tally.deleted.entry(classify(key)).or_default() += 1;
    }
    Entry::Done {
        segment: step.segment,
        next: step.next.clone(),
        tally,
    }
}

/// Settles the pages in flight when the worker stopped: each key read back; gone means
/// deleted, still there is deleted now (under the usual condition).
async fn settle<S: Store>(
    store: &S,
    journal: &Journal,
    in_flight: &std::collections::BTreeMap<u32, Vec<Planned>>,
    filter: Option<&Filter>,
) -> Result<(), PurgeFailure> {
    let hash = &store.definition().hash_key.name;
    let range = &store.definition().range_key.name;
    for (segment, planned) in in_flight {
        let mut tally = Tally::default();
        for p in planned {
            let Some(key) = p.key.to_item(store.definition()) else {
                continue;
            };
            let now = store
                .get_item(&key, None)
                .await
                .map_err(|e| PurgeFailure::Scan(Box::new(e)))?;
            // still there (its delete not sent, or on its way): deleted now, as the page would
            let outcome = match now {
                None => Outcome::Deleted(key),
                Some(item) => {
                    let (outcome, conflicts) = delete_one(store, item, hash, range, filter).await;
                    tally.conflicts += conflicts;
                    outcome.map_err(|(key, e)| {
                        PurgeFailure::Delete(Box::new(BatchWriteError::new(
                            vec![WriteRequest::Delete(key)],
                            1,
                            e,
                        )))
                    })?
                }
            };
            if matches!(outcome, Outcome::Deleted(_)) {
                *tally.deleted.entry(p.entity.clone()).or_default() += 1;
            }
        }
        journal
            .append(Entry::Settled {
                segment: *segment,
                tally,
            })
            .await
            .map_err(|e| PurgeFailure::Journal(Box::new(e)))?;
    }
    Ok(())
}

/// What deleting one page came to.
struct PageDeleted {
    /// The keys deleted.
    keys: Vec<Item>,
    /// How many deletes found their item changed.
    conflicts: u64,
}

/// What became of one item.
enum Outcome {
    /// Deleted (its key).
    Deleted(Item),
    /// Changed so that it no longer matches the filter: left.
    Left,
}

/// What became of one item (or the key that failed, and why), and after how many conflicts.
type Deleted = (Result<Outcome, (Item, StoreError)>, u64);

/// Deletes the items of one page: each conditioned on being unchanged since it was read, or,
/// [`BulkWrites::Exclusive`], in unconditioned batches.
async fn delete_page<S: Store>(
    store: &S,
    items: Vec<Item>,
    (hash, range): (&str, &str),
    filter: Option<&Filter>,
    writes: BulkWrites,
) -> Result<PageDeleted, BatchWriteError> {
    let total = items.len();
    let mut page = PageDeleted {
        keys: Vec::new(),
        conflicts: 0,
    };
    if writes == BulkWrites::Exclusive {
        let keys: Vec<Item> = items.iter().map(|i| key_of(i, hash, range)).collect();
        store
            .batch_write(keys.iter().cloned().map(WriteRequest::Delete).collect())
            .await?;
        page.keys = keys;
        return Ok(page);
    }
    let results: Vec<Deleted> = futures::stream::iter(items)
        .map(|item| delete_one(store, item, hash, range, filter))
        .buffer_unordered(PARALLEL_WRITES)
        .collect()
        .await;
    let mut failed = Vec::new();
    let mut cause = None;
    for (result, conflicts) in results {
        page.conflicts += conflicts;
        match result {
            Ok(Outcome::Deleted(key)) => page.keys.push(key),
            Ok(Outcome::Left) => {}
            Err((key, e)) => {
                failed.push(WriteRequest::Delete(key));
                cause.get_or_insert(e);
            }
        }
    }
    match cause {
        None => Ok(page),
        Some(cause) => Err(BatchWriteError::new(failed, total, cause)),
    }
}

/// The table key of an item.
fn key_of(item: &Item, hash: &str, range: &str) -> Item {
    item.iter()
        .filter(|(name, _)| *name == hash || *name == range)
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect::<std::collections::HashMap<_, _>>()
        .into()
}

/// The condition of the delete of `item`: unchanged since it was read, and `filter` still
/// holding (the filter alone when the item has too many attributes to compare one by one).
fn delete_expect(item: &Item, hash: &str, range: &str, filter: Option<&Filter>) -> Expect {
    let mut condition = vec![guarded::unchanged(item, hash, range, None, &[])];
    condition.extend(filter.cloned());
    let expect = Expect::Matches(Filter::And(condition));
    if Request::write("DeleteItem", hash, None, &expect)
        .is_err_and(|e| e.expression_too_large().is_some())
    {
        // too many attributes to compare one by one: the filter alone must still hold
        let mut condition = vec![Filter::Exists(hash.to_owned())];
        condition.extend(filter.cloned());
        return Expect::Matches(Filter::And(condition));
    }
    expect
}

/// Deletes one item if it is unchanged since it was read (and still matches `filter`), reading
/// it again (from the failed condition) and retrying while it changes; returns what became of
/// it and how many conflicts that took.
async fn delete_one<S: Store>(
    store: &S,
    mut item: Item,
    hash: &str,
    range: &str,
    filter: Option<&Filter>,
) -> Deleted {
    let key = key_of(&item, hash, range);
    let mut conflicts = 0;
    loop {
        let expect = delete_expect(&item, hash, range, filter);
        match store.delete_item(&key, expect).await {
            Ok(()) => return (Ok(Outcome::Deleted(key)), conflicts),
            Err(e) if guarded::refused(&e) && conflicts < guarded::MAX_REDO => {
                conflicts += 1;
                match e.current_item() {
                    Some(now) if filter.is_none_or(|f| matches(f, now)) => item = now.clone(),
                    // changed out of the filter: left
                    Some(_) => return (Ok(Outcome::Left), conflicts),
                    // gone meanwhile (another client, or a delete this job sent before a
                    // stop and DynamoDB finished after it): found and gone, counted once here
                    None => return (Ok(Outcome::Deleted(key)), conflicts),
                }
            }
            Err(e) => return (Err((key, e)), conflicts),
        }
    }
}
