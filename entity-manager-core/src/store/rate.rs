//! Rate limits for bulk work: a [`Bucket`] of tokens (pure, clock-free: the caller says what
//! time it is), and [`RateLimited`], a store that keeps the reads and writes of whatever runs on
//! it under a [`RateLimit`], backs off when `DynamoDB` throttles, and counts what it used
//! ([`Usage`]).
//!
//! Costs are counted in items or in capacity units ([`RateUnit`]): a scan or query page costs
//! the read units `DynamoDB` reports for it; a put, update or delete costs one write unit per KB
//! of the item written (at least 1; a delete, whose item is not sent, 1); a transaction's
//! writes cost twice that, as `DynamoDB` charges them.

/// A token bucket: `rate` tokens a second, at most `burst` saved up. Taking more tokens than
/// there are leaves a debt that the taker pays by waiting: [`take`](Self::take) says how
/// long. So however many takers share it, what they take by time `t` is at most
/// `burst + rate × t`.
///
/// ```
/// use std::time::Duration;
/// use entity_manager_core::store::Bucket;
///
/// let mut bucket = Bucket::new(100.0, 100.0);
/// // the first second's worth goes at once
/// assert_eq!(bucket.take(Duration::ZERO, 100.0), Duration::ZERO);
/// // 50 more: half a second of debt to wait
/// assert_eq!(bucket.take(Duration::ZERO, 50.0), Duration::from_millis(500));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    at: std::time::Duration,
}

impl Bucket {
    /// A full bucket of `rate` tokens a second (above 0), holding at most `burst`.
    pub fn new(rate: f64, burst: f64) -> Self {
        let rate = if rate.is_finite() && rate > 0.0 {
            rate
        } else {
            f64::MIN_POSITIVE
        };
        let burst = burst.max(0.0);
        Self {
            rate,
            burst,
            tokens: burst,
            at: std::time::Duration::ZERO,
        }
    }

    /// Takes `n` tokens at time `now` (any monotonic clock, from the same origin at every
    /// call): how long the taker must wait before going on so that the rate holds.
    pub fn take(&mut self, now: std::time::Duration, n: f64) -> std::time::Duration {
        if let Some(gap) = now.checked_sub(self.at) {
            let earned = gap.as_secs_f64() * self.rate;
            self.tokens = (self.tokens + earned).min(self.burst);
            self.at = now;
        }
        self.tokens -= n.max(0.0);
        if self.tokens >= 0.0 {
            std::time::Duration::ZERO
        } else {
            std::time::Duration::from_secs_f64(-self.tokens / self.rate)
        }
    }
}

#[cfg(feature = "dynamodb")]
pub use limited::{RateLimit, RateLimited, RateUnit, Usage};

#[cfg(feature = "dynamodb")]
mod limited {
    use std::future::Future;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    use serde_dynamo::Item;

    use super::Bucket;
    use crate::store::value::item_bytes;
    use crate::store::{
        BatchGetError, BatchWriteError, Expect, Page, QueryPage, ReturnValues, ScanPage, Store,
        StoreError, TableDefinition, TransactWrite, Update, WriteRequest,
    };

    /// What a [`RateLimit`] counts.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[non_exhaustive]
    pub enum RateUnit {
        /// Items read (returned by a scan or query, or got) and items written.
        #[default]
        Items,
        /// Read and write capacity units, by `DynamoDB`'s rules (reported for scans and
        /// queries, computed from the item size for writes).
        CapacityUnits,
    }

    /// The most a [`RateLimited`] store reads and writes per second.
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    #[non_exhaustive]
    pub struct RateLimit {
        /// Reads per second (`None`: no limit).
        pub reads: Option<f64>,
        /// Writes per second (`None`: no limit).
        pub writes: Option<f64>,
        /// What is counted.
        pub unit: RateUnit,
    }

    impl RateLimit {
        /// No limit.
        pub fn none() -> Self {
            Self::default()
        }

        /// At most `per_second` reads a second.
        #[must_use]
        pub fn reads(mut self, per_second: f64) -> Self {
            self.reads = Some(per_second);
            self
        }

        /// At most `per_second` writes a second.
        #[must_use]
        pub fn writes(mut self, per_second: f64) -> Self {
            self.writes = Some(per_second);
            self
        }

        /// Counts in `unit`.
        #[must_use]
        pub fn unit(mut self, unit: RateUnit) -> Self {
            self.unit = unit;
            self
        }
    }

    /// What a [`RateLimited`] store used since it was made.
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    #[non_exhaustive]
    pub struct Usage {
        /// Items read.
        pub items_read: u64,
        /// Items written (deleted items included).
        pub items_written: u64,
        /// Read capacity units consumed (as reported, or computed).
        pub read_units: f64,
        /// Write capacity units consumed (computed).
        pub write_units: f64,
        /// Calls `DynamoDB` throttled (each retried after a pause).
        pub throttled: u64,
        /// Time since the store was made.
        pub elapsed: Duration,
    }

    impl Usage {
        /// Items read and written per second.
        pub fn items_per_second(&self) -> f64 {
            #[allow(clippy::cast_precision_loss)] // a rate
            let items = (self.items_read + self.items_written) as f64;
            items / self.elapsed.as_secs_f64().max(1e-3)
        }
    }

    /// The most times a throttled call is retried.
    const THROTTLE_RETRIES: u32 = 10;

    /// A store that keeps the calls made on it under a [`RateLimit`], retries throttled calls
    /// after a growing pause (100 ms doubling up to 5 s, 10 times), and counts its [`Usage`].
    /// Give it to a job ([`ParallelScan::new`](crate::scan::ParallelScan::new)) in place of the
    /// store.
    #[derive(Debug)]
    pub struct RateLimited<S> {
        inner: S,
        unit: RateUnit,
        reads: Option<Mutex<Bucket>>,
        writes: Option<Mutex<Bucket>>,
        start: Instant,
        items_read: AtomicU64,
        items_written: AtomicU64,
        /// Capacity units, in thousandths.
        read_milli: AtomicU64,
        write_milli: AtomicU64,
        throttled: AtomicU64,
    }

    fn milli(units: f64) -> u64 {
        // units are small and positive: rounding to thousandths is the point
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let m = (units * 1000.0).round().max(0.0) as u64;
        m
    }

    /// Write units of an item: one per KB, at least 1.
    fn write_units(item: &Item) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let kb = item_bytes(item).div_ceil(1024).max(1) as f64;
        kb
    }

    /// The read units of a scan page that returned `items` (and read no other), by
    /// `DynamoDB`'s rule: their size rounded up to 4 KB, half a unit per 4 KB for eventually
    /// consistent reads, a unit for strongly consistent ones.
    fn scanned_units(items: &[Item], consistent: bool) -> f64 {
        let units = crate::store::memory::read_units(items.iter().map(item_bytes).sum());
        if consistent { 2.0 * units } else { units }
    }

    impl<S: Store> RateLimited<S> {
        /// `inner` under `limit` (a second's worth may go at once).
        pub fn new(inner: S, limit: RateLimit) -> Self {
            let bucket = |rate: Option<f64>| rate.map(|r| Mutex::new(Bucket::new(r, r)));
            Self {
                inner,
                unit: limit.unit,
                reads: bucket(limit.reads),
                writes: bucket(limit.writes),
                start: Instant::now(),
                items_read: AtomicU64::new(0),
                items_written: AtomicU64::new(0),
                read_milli: AtomicU64::new(0),
                write_milli: AtomicU64::new(0),
                throttled: AtomicU64::new(0),
            }
        }

        /// The store underneath.
        pub fn inner(&self) -> &S {
            &self.inner
        }

        /// What was used so far.
        pub fn usage(&self) -> Usage {
            #[allow(clippy::cast_precision_loss)]
            let units = |m: &AtomicU64| m.load(Ordering::Relaxed) as f64 / 1000.0;
            Usage {
                items_read: self.items_read.load(Ordering::Relaxed),
                items_written: self.items_written.load(Ordering::Relaxed),
                read_units: units(&self.read_milli),
                write_units: units(&self.write_milli),
                throttled: self.throttled.load(Ordering::Relaxed),
                elapsed: self.start.elapsed(),
            }
        }

        async fn pay(&self, bucket: Option<&Mutex<Bucket>>, cost: f64) {
            let Some(bucket) = bucket else {
                return;
            };
            let wait = {
                let mut b = bucket
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                b.take(self.start.elapsed(), cost)
            };
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
        }

        /// Before writes of `items` items and `units` capacity units.
        async fn write(&self, items: u64, units: f64) {
            self.items_written.fetch_add(items, Ordering::Relaxed);
            self.write_milli.fetch_add(milli(units), Ordering::Relaxed);
            #[allow(clippy::cast_precision_loss)]
            let cost = match self.unit {
                RateUnit::Items => items as f64,
                RateUnit::CapacityUnits => units,
            };
            self.pay(self.writes.as_ref(), cost).await;
        }

        /// After reads of `items` items and `units` capacity units.
        async fn read(&self, items: usize, units: f64) {
            let items = u64::try_from(items).unwrap_or(u64::MAX);
            self.items_read.fetch_add(items, Ordering::Relaxed);
            self.read_milli.fetch_add(milli(units), Ordering::Relaxed);
            #[allow(clippy::cast_precision_loss)]
            let cost = match self.unit {
                RateUnit::Items => items as f64,
                RateUnit::CapacityUnits => units,
            };
            self.pay(self.reads.as_ref(), cost).await;
        }

        /// Runs `call` again after a pause while `DynamoDB` throttles it.
        async fn retry<T, F, Fut>(&self, mut call: F) -> Result<T, StoreError>
        where
            F: FnMut() -> Fut,
            Fut: Future<Output = Result<T, StoreError>>,
        {
            let mut pause = Duration::from_millis(100);
            let mut attempt = 0;
            loop {
                match call().await {
                    Err(e) if e.is_throttled() && attempt < THROTTLE_RETRIES => {
                        attempt += 1;
                        self.throttled.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(Duration::from_secs(5));
                    }
                    other => return other,
                }
            }
        }
    }

    impl<S: Store> Store for RateLimited<S> {
        fn definition(&self) -> &TableDefinition {
            self.inner.definition()
        }

        fn name(&self) -> Option<&str> {
            self.inner.name()
        }

        async fn put_item(&self, item: Item, expect: Expect) -> Result<(), StoreError> {
            self.write(1, write_units(&item)).await;
            self.retry(|| self.inner.put_item(item.clone(), expect.clone()))
                .await
        }

        async fn get_item(
            &self,
            key: &Item,
            projection: Option<&[String]>,
        ) -> Result<Option<Item>, StoreError> {
            let got = self.retry(|| self.inner.get_item(key, projection)).await?;
            self.read(usize::from(got.is_some()), 1.0).await;
            Ok(got)
        }

        async fn delete_item(&self, key: &Item, expect: Expect) -> Result<(), StoreError> {
            self.write(1, 1.0).await;
            self.retry(|| self.inner.delete_item(key, expect.clone()))
                .await
        }

        async fn batch_write(&self, writes: Vec<WriteRequest>) -> Result<(), BatchWriteError> {
            let units: f64 = writes
                .iter()
                .map(|w| match w {
                    WriteRequest::Put(item) => write_units(item),
                    WriteRequest::Delete(_) => 1.0,
                })
                .sum();
            self.write(u64::try_from(writes.len()).unwrap_or(u64::MAX), units)
                .await;
            self.inner.batch_write(writes).await
        }

        async fn batch_get(
            &self,
            keys: Vec<Item>,
            projection: Option<&[String]>,
        ) -> Result<Vec<Item>, BatchGetError> {
            let got = self.inner.batch_get(keys, projection).await?;
            #[allow(clippy::cast_precision_loss)]
            let units = got.len() as f64;
            self.read(got.len(), units).await;
            Ok(got)
        }

        async fn transact_write(&self, writes: Vec<TransactWrite>) -> Result<(), StoreError> {
            let units: f64 = writes
                .iter()
                .map(|w| match w {
                    TransactWrite::Put { item, .. } => 2.0 * write_units(item),
                    _ => 2.0,
                })
                .sum();
            self.write(u64::try_from(writes.len()).unwrap_or(u64::MAX), units)
                .await;
            self.retry(|| self.inner.transact_write(writes.clone()))
                .await
        }

        async fn update_item(
            &self,
            key: &Item,
            update: &Update,
            expect: Expect,
            returns: ReturnValues,
        ) -> Result<Option<Item>, StoreError> {
            self.write(1, 1.0).await;
            self.retry(|| self.inner.update_item(key, update, expect.clone(), returns))
                .await
        }

        async fn transact_get(&self, keys: Vec<Item>) -> Result<Vec<Option<Item>>, StoreError> {
            let got = self.retry(|| self.inner.transact_get(keys.clone())).await?;
            #[allow(clippy::cast_precision_loss)]
            let units = 2.0 * got.len() as f64;
            self.read(got.iter().flatten().count(), units).await;
            Ok(got)
        }

        async fn query_page(&self, request: &QueryPage) -> Result<Page, StoreError> {
            let page = self.retry(|| self.inner.query_page(request)).await?;
            self.read(page.items.len(), page.consumed_capacity.unwrap_or(0.5))
                .await;
            Ok(page)
        }

        async fn scan_page(&self, request: &ScanPage) -> Result<Page, StoreError> {
            // the page's units as reported when the limit counts them, or when a filter
            // leaves out items it read (and paid for); else computed from the items
            let reported = request.capacity
                || request.filter.is_some()
                || (self.unit == RateUnit::CapacityUnits && self.reads.is_some());
            let page = if reported == request.capacity {
                self.retry(|| self.inner.scan_page(request)).await?
            } else {
                let request = request.clone().with_capacity(true);
                self.retry(|| self.inner.scan_page(&request)).await?
            };
            let units = page
                .consumed_capacity
                .unwrap_or_else(|| scanned_units(&page.items, request.consistent));
            self.read(page.items.len(), units).await;
            Ok(page)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use proptest::prelude::*;

    use super::Bucket;

    proptest! {
        /// Whatever the takers take and however they idle, what they take in any window of
        /// time, once they have waited as told, is at most a burst plus the rate times the
        /// window (a fake clock).
        #[test]
        fn never_ahead_of_the_rate(
            rate in 1.0f64..10_000.0,
            costs in proptest::collection::vec(0.0f64..200.0, 1..200),
            idle in proptest::collection::vec(0u64..3_000, 1..200),
        ) {
            let mut bucket = Bucket::new(rate, rate);
            let mut now = Duration::ZERO;
            let mut taken = 0.0;
            // (time, taken so far) before each take: the starts of the windows
            let mut starts: Vec<(Duration, f64)> = Vec::new();
            for (i, cost) in costs.iter().enumerate() {
                starts.push((now, taken));
                now += bucket.take(now, *cost);
                taken += cost;
                for (at, before) in &starts {
                    let allowed = rate + rate * now.saturating_sub(*at).as_secs_f64();
                    let got = taken - before;
                    prop_assert!(got <= allowed * (1.0 + 1e-9) + 1e-6, "{got} taken from {at:?} to {now:?}, {allowed} allowed");
                }
                now += Duration::from_millis(idle[i % idle.len()]);
            }
        }

        /// Takers that never idle get the rate: within 10 % of it once they have taken ten
        /// seconds' worth (the first second's burst aside).
        #[test]
        fn saturated_takers_get_the_rate(
            rate in 1.0f64..10_000.0,
            costs in proptest::collection::vec(0.1f64..1.0, 1..50),
        ) {
            let mut bucket = Bucket::new(rate, rate);
            let mut now = Duration::ZERO;
            let mut taken = 0.0;
            let mut i = 0;
            while taken < 11.0 * rate {
                let cost = costs[i % costs.len()] * rate / 10.0;
                now += bucket.take(now, cost);
                taken += cost;
                i += 1;
            }
            let achieved = (taken - rate) / now.as_secs_f64();
            prop_assert!((achieved - rate).abs() <= 0.1 * rate, "{achieved} per second for {rate}");
        }
    }
}
