//! Purge: delete every item a [`ParallelScan`] finds (every record of an entity, or the whole
//! table) with batch deletes, resumably.
//!
//! Each page of each segment is deleted with [`Store::batch_write`] (chunks of 25 requests,
//! unprocessed requests retried with backoff); the segment's position advances only once its
//! page is deleted. So the checkpoint never gets ahead of the deletes: after an error, a
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

use crate::scan::{ParallelScan, ScanCheckpoint, StepError};
use crate::store::{BatchWriteError, Store, StoreError, WriteRequest};

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
    /// add up to less.
    pub async fn purge<P>(self, mut progress: P) -> Result<PurgeReport, PurgeError>
    where
        P: FnMut(&PurgeProgress<'_>) -> ControlFlow<()>,
    {
        let store = self.store();
        let definition = store.definition();
        let (hash, range) = (
            definition.hash_key.name.clone(),
            definition.range_key.name.clone(),
        );
        let mut checkpoint = self.checkpoint().clone();
        let mut deleted = 0u64;
        let halt = Arc::new(AtomicBool::new(false));
        let mut steps = self.drive(Some(&halt), move |items: Vec<Item>| {
            let keys: Vec<Item> = items
                .iter()
                .map(|item| {
                    item.iter()
                        .filter(|(name, _)| **name == hash || **name == range)
                        .map(|(name, value)| (name.clone(), value.clone()))
                        .collect::<std::collections::HashMap<_, _>>()
                        .into()
                })
                .collect();
            async move {
                let writes = keys.iter().cloned().map(WriteRequest::Delete).collect();
                store.batch_write(writes).await.map(|()| keys)
            }
        });
        // After a stop or the first failure no new page starts, but the pages in flight are
        // finished and recorded: the checkpoint and the count cover everything deleted.
        let mut failure: Option<(Vec<Item>, PurgeFailure)> = None;
        while let Some(step) = steps.next().await {
            match step {
                Ok(step) => {
                    deleted += step.output.len() as u64;
                    checkpoint.set(step.segment, step.next);
                    let flow = progress(&PurgeProgress {
                        keys: &step.output,
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
                    let unprocessed = source
                        .unwritten
                        .iter()
                        .filter_map(|w| match w {
                            WriteRequest::Delete(key) => Some(key.clone()),
                            WriteRequest::Put(_) => None,
                        })
                        .collect();
                    failure.get_or_insert((unprocessed, PurgeFailure::Delete(Box::new(source))));
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
            complete: checkpoint.is_done(),
            checkpoint,
        })
    }
}
