//! Scan and purge, written once over `Store` and run against `MemoryStore` and `DynamoDB` Local
//! (when `DYNAMODB_ENDPOINT` is set; required when `CI=true`): segments partition the table,
//! paging by limit (counted before the filter), filters on any attribute, the parallel scan and
//! its checkpoint, the typed scan of one entity, and purges that stop (an error, an abort, a
//! deliberate stop) and resume to the same final state.
#![allow(clippy::struct_field_names)] // fields are named after their attributes

mod store_support;

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use entity_manager::purge::PurgeFailure;
use entity_manager::scan::{ParallelScan, ScanCheckpoint, SegmentPosition, entity_filter};
use entity_manager::store::{
    BatchWriteError, Expect, Filter, MemoryStore, Page, ScanPage, Store, StoreError,
    StoreErrorKind, TableDefinition, WriteRequest,
};
use entity_manager::{AttributeValue, Entity, EntityExt, Item, Table};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};
use store_support::{TestResult, text};

#[derive(Table)]
#[table(entities(Account, Login))]
struct Accounts;

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Accounts, unique = account_id, timestamp = created)]
#[shard_bumps(bump(timestamp = 1_000, char_bits = 2, chars = 2))]
struct Account {
    #[transcode("string")]
    account_id: String,
    #[transcode("timestamp")]
    created: u64,
    score: u32,
}

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Accounts, unique = login, timestamp = created)]
#[shard_bumps(bump(timestamp = 1_000, char_bits = 1, chars = 1))]
struct Login {
    #[transcode("string")]
    login: String,
    #[transcode("timestamp")]
    created: u64,
}

fn definition() -> Result<TableDefinition, Box<dyn std::error::Error>> {
    // without the table stamp, so that pages count items exactly as a raw DynamoDB scan does
    // (the stamp item, left out of every scan, would make one page short; see store_stamp.rs)
    Ok(TableDefinition::from_schema(Accounts::schema()?)?.with_stamp(None))
}

fn accounts(n: u32) -> Vec<Account> {
    (0..n)
        .map(|i| Account {
            account_id: format!("a{i:03}"),
            created: 500 + u64::from(i) * 7,
            score: i % 10,
        })
        .collect()
}

fn logins(n: u32) -> Vec<Login> {
    (0..n)
        .map(|i| Login {
            login: format!("l{i:03}"),
            created: 900 + u64::from(i) * 3,
        })
        .collect()
}

/// Writes `accounts` accounts and `logins` logins; returns every item written.
async fn fill<S: Store>(
    store: &S,
    accounts_n: u32,
    logins_n: u32,
) -> Result<Vec<Item>, Box<dyn std::error::Error>> {
    let mut items = Vec::new();
    for a in accounts(accounts_n) {
        items.push(a.to_item()?);
    }
    for l in logins(logins_n) {
        items.push(l.to_item()?);
    }
    store
        .batch_write(items.iter().cloned().map(WriteRequest::Put).collect())
        .await?;
    Ok(items)
}

/// An item's table key, as a sortable pair.
fn key_of(item: &Item) -> (String, String) {
    (text(item, "hashKey"), text(item, "rangeKey"))
}

/// The keys of items, sorted (repeats kept: a duplicate shows).
fn keys(items: &[Item]) -> Vec<(String, String)> {
    let mut k: Vec<_> = items.iter().map(key_of).collect();
    k.sort();
    k
}

/// Every item of one segment, page by page; returns the pages.
async fn segment_pages<S: Store>(
    store: &S,
    request: &ScanPage,
) -> Result<Vec<Page>, Box<dyn std::error::Error>> {
    let mut pages = Vec::new();
    let mut request = request.clone();
    loop {
        let page = store.scan_page(&request).await?;
        let next = page.last_evaluated_key.clone();
        pages.push(page);
        match next {
            Some(k) => request = request.start_after(Some(k)),
            None => return Ok(pages),
        }
        if pages.len() > 10_000 {
            return Err("pagination does not terminate".into());
        }
    }
}

/// Everything still in the table (one plain scan).
async fn everything<S: Store>(store: &S) -> Result<Vec<Item>, Box<dyn std::error::Error>> {
    let pages = segment_pages(store, &ScanPage::new()).await?;
    Ok(pages.into_iter().flat_map(|p| p.items).collect())
}

fn starts_with(item: &Item, prefix: &str) -> bool {
    text(item, "hashKey").starts_with(prefix)
}

/// A store that fails every batch write after the first `ok` ones: the failing call deletes
/// the first half of its requests and reports the rest as not written (a crash mid-batch).
/// With a gate, each scan page first takes a permit from it (the test hands them out).
#[derive(Debug)]
struct FailAfter<S> {
    inner: S,
    ok: usize,
    calls: AtomicUsize,
    gate: Option<Arc<tokio::sync::Semaphore>>,
}

impl<S> FailAfter<S> {
    fn new(inner: S, ok: usize) -> Self {
        Self {
            inner,
            ok,
            calls: AtomicUsize::new(0),
            gate: None,
        }
    }
}

impl<S: Store> Store for FailAfter<S> {
    entity_manager_tests::forward_store!(inner: definition, name, put_item, get_item, batch_get, transact_write, update_item, transact_get, query_page);

    /// A purge deletes item by item: the first `ok` pages of 10 and half of the next go, then
    /// every delete fails.
    async fn delete_item(&self, key: &Item, expect: Expect) -> Result<(), StoreError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) < self.ok.saturating_mul(10).saturating_add(5)
        {
            return self.inner.delete_item(key, expect).await;
        }
        Err(StoreError::new(
            StoreErrorKind::Other,
            "DeleteItem",
            "injected failure",
        ))
    }

    async fn batch_write(&self, mut writes: Vec<WriteRequest>) -> Result<(), BatchWriteError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) < self.ok {
            return self.inner.batch_write(writes).await;
        }
        let total = writes.len();
        let rest = writes.split_off(total / 2);
        self.inner.batch_write(writes).await?;
        Err(BatchWriteError::new(
            rest,
            total,
            StoreError::new(StoreErrorKind::Other, "BatchWriteItem", "injected failure"),
        ))
    }

    async fn scan_page(&self, request: &ScanPage) -> Result<Page, StoreError> {
        if let Some(gate) = &self.gate {
            gate.acquire()
                .await
                .map_err(|e| StoreError::new(StoreErrorKind::Other, "Scan", e.to_string()))?
                .forget();
        }
        self.inner.scan_page(request).await
    }
}

/// The tests, each a generic function over the store.
mod suite {
    use super::*;

    /// For several segment counts, the segments' pages together hold every item exactly once,
    /// and every item of a partition (one hash key) is in the same segment.
    pub(crate) async fn segments_partition_the_table<S: Store>(store: &S) -> TestResult {
        let all = fill(store, 90, 40).await?;
        for total in [1, 2, 3, 7, 16] {
            let mut seen = Vec::new();
            let mut segment_of: BTreeMap<String, u32> = BTreeMap::new();
            for segment in 0..total {
                let request = ScanPage::new().segment(segment, total).limit(9);
                for page in segment_pages(store, &request).await? {
                    for item in &page.items {
                        let hash = text(item, "hashKey");
                        let first = *segment_of.entry(hash.clone()).or_insert(segment);
                        assert_eq!(first, segment, "partition {hash} is in two segments");
                    }
                    seen.extend(page.items);
                }
            }
            assert_eq!(keys(&seen), keys(&all), "{total} segments");
        }
        Ok(())
    }

    /// `limit` counts the items evaluated: without a filter every page but the last has exactly
    /// `limit` items; with a filter, pages have at most `limit` and together exactly the items
    /// that pass it. The filter may name the hash key (unlike a query's).
    pub(crate) async fn limit_and_filter<S: Store>(store: &S) -> TestResult {
        let all = fill(store, 30, 25).await?;
        let pages = segment_pages(store, &ScanPage::new().limit(7)).await?;
        let (last, rest) = pages.split_last().ok_or("no page")?;
        assert!(rest.iter().all(|p| p.items.len() == 7));
        assert!(last.items.len() <= 7 && last.last_evaluated_key.is_none());
        let flat: Vec<Item> = pages.iter().flat_map(|p| p.items.clone()).collect();
        assert_eq!(keys(&flat), keys(&all));

        let filter = Filter::BeginsWith {
            attribute: "hashKey".into(),
            prefix: AttributeValue::S("login!".into()),
        };
        let pages = segment_pages(store, &ScanPage::new().limit(7).filter(filter)).await?;
        assert!(pages.iter().all(|p| p.items.len() <= 7));
        // more pages than the 25 logins alone would need: the accounts were evaluated too
        assert!(pages.len() > 25usize.div_ceil(7), "{} pages", pages.len());
        let logins: Vec<Item> = all
            .iter()
            .filter(|i| starts_with(i, "login!"))
            .cloned()
            .collect();
        let flat: Vec<Item> = pages.into_iter().flat_map(|p| p.items).collect();
        assert_eq!(keys(&flat), keys(&logins));

        // a filter on an ordinary attribute, in segments
        let filter = Filter::compare(
            "score",
            entity_manager::store::Comparison::Ge,
            AttributeValue::N("5".into()),
        );
        let mut got = Vec::new();
        for segment in 0..3 {
            let request = ScanPage::new()
                .segment(segment, 3)
                .limit(4)
                .filter(filter.clone());
            got.extend(
                segment_pages(store, &request)
                    .await?
                    .into_iter()
                    .flat_map(|p| p.items),
            );
        }
        let expected: Vec<Item> = all
            .iter()
            .filter(|i| matches!(i.get("score"), Some(AttributeValue::N(n)) if n.parse::<u32>().is_ok_and(|n| n >= 5)))
            .cloned()
            .collect();
        assert!(!expected.is_empty());
        assert_eq!(keys(&got), keys(&expected));
        Ok(())
    }

    /// What no store accepts: a segment outside the count, no segments, limit 0.
    pub(crate) async fn scan_validation<S: Store>(store: &S) -> TestResult {
        for bad in [
            ScanPage::new().segment(3, 3),
            ScanPage::new().segment(0, 0),
            ScanPage::new().limit(0),
        ] {
            let e = store
                .scan_page(&bad)
                .await
                .err()
                .ok_or(format!("accepted {bad:?}"))?;
            assert!(e.is_validation(), "{bad:?}: {e:?}");
        }
        Ok(())
    }

    /// The parallel scan yields every item once, whatever the segments, throttle and page
    /// size; a scan stopped after some pages resumes from its (serialized) checkpoint without
    /// repeating or skipping an item.
    pub(crate) async fn parallel_scan_and_resume<S: Store>(store: &S) -> TestResult {
        let all = fill(store, 70, 30).await?;
        for (segments, throttle, page) in [(1, 1, 1000), (5, 2, 3), (8, 8, 10)] {
            let items: Vec<Item> = ParallelScan::new(store)
                .segments(segments)
                .throttle(throttle)
                .page_size(page)
                .items()
                .try_collect()
                .await?;
            assert_eq!(keys(&items), keys(&all), "{segments} segments");
        }

        let scan = ParallelScan::new(store)
            .segments(4)
            .throttle(3)
            .page_size(6);
        let mut checkpoint = scan.checkpoint().clone();
        let mut handled = Vec::new();
        let mut pages = scan.pages();
        for _ in 0..5 {
            let batch = pages.try_next().await?.ok_or("ended early")?;
            handled.extend(batch.items.clone());
            checkpoint.advance(&batch);
        }
        drop(pages); // stopped: pages in flight are not handled
        assert!(!checkpoint.is_done());
        assert!(
            checkpoint
                .segments()
                .iter()
                .any(|s| matches!(s, SegmentPosition::After { .. }))
        );
        let saved = serde_json::to_string(&checkpoint)?;
        let loaded: ScanCheckpoint = serde_json::from_str(&saved)?;
        assert_eq!(loaded, checkpoint);
        let rest: Vec<Item> = ParallelScan::new(store)
            .page_size(6)
            .resume(loaded)?
            .items()
            .try_collect()
            .await?;
        handled.extend(rest);
        assert_eq!(keys(&handled), keys(&all));
        Ok(())
    }

    /// The typed scan of one entity returns exactly its records, as records.
    pub(crate) async fn typed_entity_scan<S: Store>(store: &S) -> TestResult {
        fill(store, 45, 20).await?;
        let mut got: Vec<Account> = Account::scan(store)?
            .segments(3)
            .page_size(8)
            .records()
            .try_collect()
            .await?;
        got.sort_by(|a, b| a.account_id.cmp(&b.account_id));
        assert_eq!(got, accounts(45));
        let mut got: Vec<Login> = Login::scan(store)?.records().try_collect().await?;
        got.sort_by(|a, b| a.login.cmp(&b.login));
        assert_eq!(got, logins(20));
        Ok(())
    }

    /// Purging one entity deletes all of its records and nothing else, across a deliberate
    /// stop; a second purge deletes nothing.
    pub(crate) async fn purge_one_entity<S: Store>(store: &S) -> TestResult {
        let all = fill(store, 80, 35).await?;
        let schema = Account::schema()?;
        // stopped at the first page: the pages in flight in other segments are finished and
        // counted, so the two runs count every record exactly once
        let first = ParallelScan::new(store)
            .entity(&schema)
            .segments(4)
            .throttle(4)
            .page_size(9)
            .purge(|_| ControlFlow::Break(()))
            .await?;
        assert!(!first.complete && first.deleted > 0);
        let report = ParallelScan::new(store)
            .entity(&schema)
            .page_size(30)
            .resume(first.checkpoint)?
            .purge(|_| ControlFlow::Continue(()))
            .await?;
        assert!(report.complete && report.checkpoint.is_done());
        assert_eq!(first.deleted + report.deleted, 80);
        let left = everything(store).await?;
        let expected: Vec<Item> = all
            .iter()
            .filter(|i| !starts_with(i, "account!"))
            .cloned()
            .collect();
        assert_eq!(keys(&left), keys(&expected));
        let again = ParallelScan::new(store)
            .filter(entity_filter(&schema))
            .purge(|_| ControlFlow::Continue(()))
            .await?;
        assert_eq!(again.deleted, 0);
        // the whole table
        let report = ParallelScan::new(store)
            .purge(|_| ControlFlow::Continue(()))
            .await?;
        assert_eq!(report.deleted, 35);
        assert!(everything(store).await?.is_empty());
        Ok(())
    }

    /// A purge whose batch delete fails partway stops with the checkpoint and the keys not
    /// deleted; resumed from that checkpoint it ends with exactly the other entity's records.
    pub(crate) async fn purge_fails_then_resumes<S: Store>(inner: S) -> TestResult {
        let all = fill(&inner, 120, 30).await?;
        let store = FailAfter::new(inner, 2);
        let schema = Account::schema()?;
        let mut reported = Vec::new();
        let error = ParallelScan::new(&store)
            .entity(&schema)
            .segments(3)
            .throttle(1)
            .page_size(10)
            .purge(|p| {
                reported.push(p.checkpoint.clone());
                ControlFlow::Continue(())
            })
            .await
            .err()
            .ok_or("the injected failure did not stop the purge")?;
        assert!(matches!(error.source, PurgeFailure::Delete(_)), "{error}");
        assert!(!error.unprocessed.is_empty());
        assert!(error.unprocessed.iter().all(|k| starts_with(k, "account!")));
        assert_eq!(reported.last(), Some(&error.checkpoint));
        assert!(
            error
                .to_string()
                .contains("run it again from the checkpoint")
        );
        // some accounts went, some remain (among them the unprocessed keys)
        let left = everything(&store).await?;
        let accounts_left = left.iter().filter(|i| starts_with(i, "account!")).count();
        assert!(accounts_left > 0 && accounts_left < 120, "{accounts_left}");
        for key in &error.unprocessed {
            assert!(left.iter().any(|i| key_of(i) == key_of(key)));
        }

        let report = ParallelScan::new(&store.inner)
            .entity(&schema)
            .page_size(10)
            .resume(error.checkpoint)?
            .purge(|_| ControlFlow::Continue(()))
            .await?;
        assert!(report.complete);
        let left = everything(&store.inner).await?;
        let expected: Vec<Item> = all
            .iter()
            .filter(|i| starts_with(i, "login!"))
            .cloned()
            .collect();
        assert_eq!(keys(&left), keys(&expected));
        Ok(())
    }

    /// A purge task aborted partway (as a killed process would be) resumes from the last
    /// checkpoint its progress callback saved, and ends in the same state as an uninterrupted
    /// purge. A purge stopped by its callback reports itself incomplete and resumes too.
    pub(crate) async fn purge_aborted_then_resumed<S: Store + 'static>(store: S) -> TestResult {
        let all = fill(&store, 150, 20).await?;
        // at most 4 pages can be read before the abort: the purge cannot finish by itself
        let gate = Arc::new(tokio::sync::Semaphore::new(4));
        let store = Arc::new(FailAfter {
            gate: Some(Arc::clone(&gate)),
            ..FailAfter::new(store, usize::MAX)
        });
        let saved: Arc<Mutex<Option<ScanCheckpoint>>> = Arc::new(Mutex::new(None));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let task = {
            let store = Arc::clone(&store);
            let saved = Arc::clone(&saved);
            tokio::spawn(async move {
                let schema = Account::schema().map_err(|e| e.to_string())?;
                ParallelScan::new(&*store)
                    .entity(&schema)
                    .segments(4)
                    .throttle(2)
                    .page_size(7)
                    .purge(|p| {
                        if let Ok(mut slot) = saved.lock() {
                            *slot = Some(p.checkpoint.clone());
                        }
                        let _ = tx.send(p.deleted);
                        ControlFlow::Continue(())
                    })
                    .await
                    .map_err(|e| e.to_string())
            })
        };
        for _ in 0..3 {
            rx.recv().await.ok_or("the purge ended before 3 pages")?;
        }
        task.abort();
        let _ = task.await;
        gate.add_permits(1_000_000);
        let checkpoint = saved
            .lock()
            .map_err(|_| "poisoned")?
            .clone()
            .ok_or("no checkpoint saved")?;
        assert!(!checkpoint.is_done());
        let left = everything(&*store).await?;
        assert!(left.iter().any(|i| starts_with(i, "account!")));

        // stop deliberately after one more page, then finish
        let schema = Account::schema()?;
        let stopped = ParallelScan::new(&*store)
            .entity(&schema)
            .page_size(7)
            .resume(checkpoint)?
            .purge(|_| ControlFlow::Break(()))
            .await?;
        assert!(!stopped.complete);
        let done = ParallelScan::new(&*store)
            .entity(&schema)
            .page_size(7)
            .resume(stopped.checkpoint)?
            .purge(|_| ControlFlow::Continue(()))
            .await?;
        assert!(done.complete);
        let left = everything(&*store).await?;
        let expected: Vec<Item> = all
            .iter()
            .filter(|i| starts_with(i, "login!"))
            .cloned()
            .collect();
        assert_eq!(keys(&left), keys(&expected));
        Ok(())
    }
}

macro_rules! both_stores {
    ($($name:ident),* $(,)?) => {
        /// The tests on the in-memory store.
        mod memory {
            use super::*;
            $(
                #[tokio::test]
                async fn $name() -> TestResult {
                    let store = MemoryStore::new(definition()?);
                    suite::$name(&store).await
                }
            )*
        }

        /// The tests on `DynamoDB` Local.
        mod dynamodb {
            use super::*;
            $(
                #[tokio::test]
                async fn $name() -> TestResult {
                    let Some(store) = store_support::dynamo_store(stringify!($name), definition()?).await? else {
                        return Ok(());
                    };
                    let result = suite::$name(&store).await;
                    store.delete_table().await?;
                    result
                }
            )*
        }
    };
}

both_stores!(
    segments_partition_the_table,
    limit_and_filter,
    scan_validation,
    parallel_scan_and_resume,
    typed_entity_scan,
    purge_one_entity,
);

/// The purge tests that own their store (a wrapper, a spawned task).
mod purge_resume {
    use super::*;

    #[tokio::test]
    async fn memory_fails_then_resumes() -> TestResult {
        suite::purge_fails_then_resumes(MemoryStore::new(definition()?)).await
    }

    #[tokio::test]
    async fn dynamodb_fails_then_resumes() -> TestResult {
        let Some(store) = store_support::dynamo_store("purge-fails", definition()?).await? else {
            return Ok(());
        };
        let result = suite::purge_fails_then_resumes(store.clone()).await;
        store.delete_table().await?;
        result
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn memory_aborted_then_resumed() -> TestResult {
        suite::purge_aborted_then_resumed(MemoryStore::new(definition()?)).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dynamodb_aborted_then_resumed() -> TestResult {
        let Some(store) = store_support::dynamo_store("purge-abort", definition()?).await? else {
            return Ok(());
        };
        let result = suite::purge_aborted_then_resumed(store.clone()).await;
        store.delete_table().await?;
        result
    }
}

/// Memory store invariants over random tables: for any segment count and page size, the
/// segments' pages hold every item exactly once, and the parallel scan agrees.
mod properties {
    use super::*;
    use entity_manager::store::KeyType;
    use entity_manager_tests::block_on;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn segments_hold_every_item_once(
            rows in proptest::collection::btree_set((0u8..40, 0u8..6), 0..120),
            total in 1u32..12,
            limit in 1u32..20,
        ) {
            let store = MemoryStore::new(TableDefinition::new(("hashKey", KeyType::S), ("rangeKey", KeyType::S)));
            for (h, r) in &rows {
                let item = store_support::key(&format!("h{h}"), &format!("r{r}"));
                block_on(store.put_item(item, Expect::Any)).map_err(|e| TestCaseError::fail(e.to_string()))?;
            }
            let expected: Vec<(String, String)> = rows.iter().map(|(h, r)| (format!("h{h}"), format!("r{r}"))).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
            let mut seen = Vec::new();
            for segment in 0..total {
                let pages = block_on(segment_pages(&store, &ScanPage::new().segment(segment, total).limit(limit)))
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                for p in &pages {
                    prop_assert!(p.items.len() <= limit as usize);
                }
                seen.extend(pages.into_iter().flat_map(|p| p.items));
            }
            prop_assert_eq!(keys(&seen), expected.clone());
            let parallel: Vec<Item> = block_on(
                ParallelScan::new(&store).segments(total).throttle(3).page_size(limit).items().try_collect(),
            ).map_err(|e: entity_manager::scan::ScanError| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(keys(&parallel), expected);
        }
    }
}
