//! [`FaultPlan`]: `DynamoDB`'s production conditions on the [`MemoryStore`](super::MemoryStore),
//! seeded, for tests of code that uses a store.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::{CancellationReason, StoreError, StoreErrorKind};

/// A store call, as a [`FaultPlan`] names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// `GetItem`.
    GetItem,
    /// `PutItem`.
    PutItem,
    /// `DeleteItem`.
    DeleteItem,
    /// `UpdateItem`.
    UpdateItem,
    /// `Query` (of the table or of an index).
    Query,
    /// `Scan`.
    Scan,
    /// One `BatchWriteItem` request (a chunk of up to 25).
    BatchWriteItem,
    /// One `BatchGetItem` request (a chunk of up to 100).
    BatchGetItem,
    /// `TransactWriteItems`.
    TransactWriteItems,
    /// `TransactGetItems`.
    TransactGetItems,
}

impl Operation {
    /// The `DynamoDB` name of the call.
    pub const fn as_str(self) -> &'static str {
        self.name()
    }

    /// Whether the call writes (an acknowledgement of it can be lost after it applied).
    pub const fn writes(self) -> bool {
        matches!(
            self,
            Self::PutItem
                | Self::DeleteItem
                | Self::UpdateItem
                | Self::BatchWriteItem
                | Self::TransactWriteItems
        )
    }

    const fn name(self) -> &'static str {
        match self {
            Self::GetItem => "GetItem",
            Self::PutItem => "PutItem",
            Self::DeleteItem => "DeleteItem",
            Self::UpdateItem => "UpdateItem",
            Self::Query => "Query",
            Self::Scan => "Scan",
            Self::BatchWriteItem => "BatchWriteItem",
            Self::BatchGetItem => "BatchGetItem",
            Self::TransactWriteItems => "TransactWriteItems",
            Self::TransactGetItems => "TransactGetItems",
        }
    }
}

/// The faults a [`MemoryStore`](super::MemoryStore) injects: what `DynamoDB` does under load,
/// each as a rate, seeded so that the same seed and the same sequence of calls give the same
/// faults.
///
/// - **Throttling** ([`throttle`](Self::throttle)): a call fails with a retryable
///   [`StoreError::is_throttled`] (code `ProvisionedThroughputExceededException`), the error
///   `DynamoStore` gives for `ProvisionedThroughputExceededException` and `ThrottlingException`.
/// - **Transient errors** ([`transient`](Self::transient)): `InternalServerError`, retryable.
/// - **Transaction conflicts** ([`transaction_conflicts`](Self::transaction_conflicts)): a
///   transaction is canceled with reason `TransactionConflict`, as when another transaction
///   touches one of its items ([`StoreError::is_transaction_conflict`]); nothing was written.
/// - **Partial batches** ([`unprocessed`](Self::unprocessed)): each request of a
///   `BatchWriteItem` or `BatchGetItem` chunk is left unprocessed at this rate
///   (`UnprocessedItems`, `UnprocessedKeys`).
/// - **Eventually consistent reads** ([`lag`](Self::lag)): a write becomes visible to
///   eventually consistent reads only after `lag` more calls to the store (the lag is counted
///   in calls, so a test is deterministic whatever the machine's speed). GSI queries are always
///   eventually consistent; gets, batch gets, table queries and scans are too unless
///   [`consistent_reads`](Self::consistent_reads) is set (as `DynamoStore::with_consistent_reads`)
///   or the scan asks for consistency. Such a read can miss a new record, still see a deleted
///   one, or see an old version. Conditions, updates and `TransactGetItems` always see the
///   latest state, as on `DynamoDB`.
///
/// Faults *after the fact*, production's hardest ones, are opt-in:
///
/// - **Lost acknowledgements** ([`lost_acks`](Self::lost_acks)): a write (put, delete, update,
///   transaction, batch chunk) is applied, then its answer is lost: the caller gets a timeout
///   or an `InternalServerError` whose [`StoreError::may_have_applied`] is true. It is not
///   retried by the store (as when the SDK's retries are spent, or the request is not
///   repeatable): what to do is the caller's decision.
/// - **Latency** ([`latency`](Self::latency)): every call waits a fixed delay plus a seeded
///   jitter before it is carried out, on the tokio clock, so that a test in paused time
///   (`#[tokio::test(start_paused = true)]`) runs at once and slow calls interleave.
/// - **Hangs** ([`hangs`](Self::hangs)): a call never answers; after the client's
///   [`operation_timeout`](Self::operation_timeout) (30 s by default, as `DynamoStore`'s) it
///   fails with a timeout ([`StoreError::is_timeout`]). Half of the hanging writes were
///   applied before the answer was lost, half were not (seeded), as on a real network.
///
/// Every other fault happens *before* the call does anything, so a call failed by it wrote
/// nothing. Like the
/// AWS SDK does for `DynamoStore`, the store retries a throttled or transient single call, up to
/// [`attempts`](Self::attempts) times (10 by default) without waiting; a batch leaves its
/// unprocessed requests and its failed chunks to the batch loop, which retries them under the
/// store's [`RetryPolicy`](super::RetryPolicy); a transaction canceled by a conflict is retried
/// the same way. Set `attempts(1)` to see every injected error yourself.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use entity_manager_core::store::{Expect, FaultPlan, KeyType, MemoryStore, Store, TableDefinition};
///
/// let plan = FaultPlan::new(42).throttle(0.5).attempts(1);
/// let store = MemoryStore::new(TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::S)))
///     .with_faults(plan);
/// let mut failed = 0;
/// for i in 0..100 {
///     let item = serde_dynamo::to_item(serde_json::json!({ "pk": "a", "sk": i.to_string() }))?;
///     match store.put_item(item, Expect::Any).await {
///         Ok(()) => {}
///         Err(e) if e.is_throttled() && e.is_retryable() => failed += 1,
///         Err(e) => return Err(e.into()),
///     }
/// }
/// // about half were throttled, and exactly those were not written
/// assert_eq!(failed, store.fault_counts().throttled);
/// assert_eq!(store.len() as u64, 100 - failed);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct FaultPlan {
    seed: u64,
    throttle: f64,
    transient: f64,
    conflicts: f64,
    unprocessed: f64,
    lag: u64,
    consistent_reads: bool,
    attempts: u32,
    only: Option<Vec<Operation>>,
    lost_acks: f64,
    latency: Duration,
    jitter: Duration,
    hangs: f64,
    operation_timeout: Duration,
}

impl FaultPlan {
    /// A plan with this seed and no fault yet.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            throttle: 0.0,
            transient: 0.0,
            conflicts: 0.0,
            unprocessed: 0.0,
            lag: 0,
            consistent_reads: false,
            attempts: 10,
            only: None,
            lost_acks: 0.0,
            latency: Duration::ZERO,
            jitter: Duration::ZERO,
            hangs: 0.0,
            operation_timeout: Duration::from_secs(30),
        }
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Throttles this fraction of calls (0.0 to 1.0).
    #[must_use]
    pub fn throttle(mut self, rate: f64) -> Self {
        self.throttle = rate;
        self
    }

    /// Fails this fraction of calls with `InternalServerError`.
    #[must_use]
    pub fn transient(mut self, rate: f64) -> Self {
        self.transient = rate;
        self
    }

    /// Cancels this fraction of transactions with `TransactionConflict`.
    #[must_use]
    pub fn transaction_conflicts(mut self, rate: f64) -> Self {
        self.conflicts = rate;
        self
    }

    /// Leaves this fraction of the requests of each batch chunk unprocessed.
    #[must_use]
    pub fn unprocessed(mut self, rate: f64) -> Self {
        self.unprocessed = rate;
        self
    }

    /// Makes a write visible to eventually consistent reads only after `calls` more calls.
    #[must_use]
    pub fn lag(mut self, calls: u64) -> Self {
        self.lag = calls;
        self
    }

    /// Makes gets, batch gets, table queries and scans strongly consistent (GSI queries stay
    /// eventually consistent).
    #[must_use]
    pub fn consistent_reads(mut self, consistent: bool) -> Self {
        self.consistent_reads = consistent;
        self
    }

    /// How many times the store tries a single call that is throttled or fails transiently
    /// (at least 1; 10 by default).
    #[must_use]
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts.max(1);
        self
    }

    /// Loses the acknowledgement of this fraction of writes after they applied: the caller
    /// gets a timeout or an `InternalServerError` with
    /// [`may_have_applied`](StoreError::may_have_applied) true, and the write is stored.
    #[must_use]
    pub fn lost_acks(mut self, rate: f64) -> Self {
        self.lost_acks = rate;
        self
    }

    /// Delays every call by `fixed` plus a seeded uniform share of `jitter`, on the tokio clock
    /// (`tokio::time::sleep`: a test in paused time does not wait). The delay comes before the
    /// call is carried out, so calls started together take effect in the order of their delays.
    #[must_use]
    pub fn latency(mut self, fixed: Duration, jitter: Duration) -> Self {
        self.latency = fixed;
        self.jitter = jitter;
        self
    }

    /// Makes this fraction of calls hang until the
    /// [`operation_timeout`](Self::operation_timeout), then fail with a timeout; half of the
    /// writes among them were applied (seeded).
    #[must_use]
    pub fn hangs(mut self, rate: f64) -> Self {
        self.hangs = rate;
        self
    }

    /// The client's operation timeout, after which a hanging call fails (30 s by default, as
    /// `DynamoStore`'s `DEFAULT_OPERATION_TIMEOUT`).
    #[must_use]
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout;
        self
    }

    /// Injects throttling, transient errors, transaction conflicts, lost acknowledgements,
    /// latency and hangs only into these calls (unprocessed batch requests and lag are not
    /// affected).
    #[must_use]
    pub fn only(mut self, operations: &[Operation]) -> Self {
        self.only = Some(operations.to_vec());
        self
    }

    pub(super) fn lag_calls(&self) -> u64 {
        self.lag
    }

    pub(super) fn attempts_allowed(&self) -> u32 {
        self.attempts
    }

    pub(super) fn reads_consistent(&self) -> bool {
        self.consistent_reads
    }
}

/// How many faults a [`MemoryStore`](super::MemoryStore) injected: what a test checks to know
/// its faults really happened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FaultCounts {
    /// Calls throttled.
    pub throttled: u64,
    /// Calls failed with `InternalServerError`.
    pub transient: u64,
    /// Transactions canceled with `TransactionConflict`.
    pub transaction_conflicts: u64,
    /// Batch requests left unprocessed.
    pub unprocessed: u64,
    /// Store calls made (the clock of the lag).
    pub calls: u64,
    /// Writes applied whose acknowledgement was lost.
    pub lost_acks: u64,
    /// Calls that hung until the operation timeout.
    pub hangs: u64,
    /// Calls delayed by latency.
    pub delayed: u64,
}

/// A plan in force: the plan, its call counter and its counts.
#[derive(Debug)]
pub(super) struct Faults {
    pub(super) plan: FaultPlan,
    calls: AtomicU64,
    throttled: AtomicU64,
    transient: AtomicU64,
    conflicts: AtomicU64,
    unprocessed: AtomicU64,
    lost_acks: AtomicU64,
    hangs: AtomicU64,
    delayed: AtomicU64,
}

/// What happens to a call after it was admitted (see [`Faults::after`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum After {
    /// It answers normally.
    Answers,
    /// It is applied and its answer lost.
    LosesAck,
    /// It hangs until the operation timeout, applied or not.
    Hangs {
        /// Whether it was applied before its answer was lost.
        applied: bool,
    },
}

/// splitmix64: a well-mixed 64-bit value of `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl Faults {
    pub(super) fn new(plan: FaultPlan) -> Self {
        Self {
            plan,
            calls: AtomicU64::new(0),
            throttled: AtomicU64::new(0),
            transient: AtomicU64::new(0),
            conflicts: AtomicU64::new(0),
            unprocessed: AtomicU64::new(0),
            lost_acks: AtomicU64::new(0),
            hangs: AtomicU64::new(0),
            delayed: AtomicU64::new(0),
        }
    }

    /// Whether the plan injects faults into `operation` (its [`FaultPlan::only`] list).
    fn targets(&self, operation: Operation) -> bool {
        self.plan
            .only
            .as_ref()
            .is_none_or(|only| only.contains(&operation))
    }

    /// The delay of call `call`: the plan's latency plus its share of the jitter.
    pub(super) fn delay(&self, call: u64, operation: Operation) -> Duration {
        if !self.targets(operation) || (self.plan.latency.is_zero() && self.plan.jitter.is_zero()) {
            return Duration::ZERO;
        }
        self.delayed.fetch_add(1, Ordering::SeqCst);
        self.plan.latency + self.plan.jitter.mul_f64(self.draw(call, 6))
    }

    /// What happens to call `call` after it was admitted: it answers, loses its answer after it
    /// applied (writes only), or hangs.
    pub(super) fn after(&self, call: u64, operation: Operation) -> After {
        if !self.targets(operation) {
            return After::Answers;
        }
        if self.draw(call, 7) < self.plan.hangs {
            self.hangs.fetch_add(1, Ordering::SeqCst);
            return After::Hangs {
                applied: operation.writes() && self.draw(call, 8) < 0.5,
            };
        }
        if operation.writes() && self.draw(call, 4) < self.plan.lost_acks {
            self.lost_acks.fetch_add(1, Ordering::SeqCst);
            return After::LosesAck;
        }
        After::Answers
    }

    /// The error of a call whose answer was lost after it applied: a timeout or an
    /// `InternalServerError` (seeded).
    pub(super) fn lost_ack_error(&self, call: u64, operation: Operation) -> StoreError {
        let op = operation.as_str();
        if self.draw(call, 5) < 0.5 {
            StoreError::new(
                StoreErrorKind::Timeout,
                op,
                "the request timed out; it was applied, and its answer was lost (injected by the fault plan)",
            )
        } else {
            StoreError::new(
                StoreErrorKind::Transient,
                op,
                "Internal server error after the request was applied (injected by the fault plan)",
            )
            .with_code("InternalServerError")
        }
    }

    /// The error of a call that hung until the operation timeout.
    pub(super) fn hang_error(&self, operation: Operation) -> StoreError {
        StoreError::new(
            StoreErrorKind::Timeout,
            operation.as_str(),
            format!(
                "no answer within the operation timeout of {:?} (a hang injected by the fault plan)",
                self.plan.operation_timeout
            ),
        )
    }

    pub(super) fn operation_timeout(&self) -> Duration {
        self.plan.operation_timeout
    }

    /// A uniform draw in `[0, 1)` for call `call` and purpose `salt`.
    fn draw(&self, call: u64, salt: u64) -> f64 {
        let bits = mix(self.plan.seed ^ mix(call ^ mix(salt))) >> 11;
        // 53 bits: exact in an f64
        #[allow(clippy::cast_precision_loss)]
        let unit = bits as f64 / (1u64 << 53) as f64;
        unit
    }

    /// Counts a call; returns its number (the clock of the lag).
    pub(super) fn tick(&self) -> u64 {
        self.calls.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// The error injected into call number `call` of `operation`, if any.
    pub(super) fn error(&self, call: u64, operation: Operation) -> Option<StoreError> {
        if !self.targets(operation) {
            return None;
        }
        let op = operation.as_str();
        if self.draw(call, 1) < self.plan.throttle {
            self.throttled.fetch_add(1, Ordering::SeqCst);
            return Some(
                StoreError::new(
                    StoreErrorKind::Throttled,
                    op,
                    "The level of configured provisioned throughput for the table was exceeded (injected by the fault plan)",
                )
                .with_code("ProvisionedThroughputExceededException"),
            );
        }
        if self.draw(call, 2) < self.plan.transient {
            self.transient.fetch_add(1, Ordering::SeqCst);
            return Some(
                StoreError::new(
                    StoreErrorKind::Transient,
                    op,
                    "Internal server error (injected by the fault plan)",
                )
                .with_code("InternalServerError"),
            );
        }
        if operation == Operation::TransactWriteItems && self.draw(call, 3) < self.plan.conflicts {
            self.conflicts.fetch_add(1, Ordering::SeqCst);
            let reason = CancellationReason {
                code: Some("TransactionConflict".to_owned()),
                message: Some(
                    "Transaction is ongoing for the item (injected by the fault plan)".to_owned(),
                ),
                item: None,
            };
            return Some(
                StoreError::transaction_canceled(op, vec![reason])
                    .with_code("TransactionCanceledException"),
            );
        }
        None
    }

    /// Whether request `index` of the batch chunk of call `call` is left unprocessed.
    pub(super) fn leaves(&self, call: u64, index: usize) -> bool {
        let unprocessed = self.draw(call, 1_000 + index as u64) < self.plan.unprocessed;
        if unprocessed {
            self.unprocessed.fetch_add(1, Ordering::SeqCst);
        }
        unprocessed
    }

    pub(super) fn counts(&self) -> FaultCounts {
        FaultCounts {
            throttled: self.throttled.load(Ordering::SeqCst),
            transient: self.transient.load(Ordering::SeqCst),
            transaction_conflicts: self.conflicts.load(Ordering::SeqCst),
            unprocessed: self.unprocessed.load(Ordering::SeqCst),
            calls: self.calls.load(Ordering::SeqCst),
            lost_acks: self.lost_acks.load(Ordering::SeqCst),
            hangs: self.hangs.load(Ordering::SeqCst),
            delayed: self.delayed.load(Ordering::SeqCst),
        }
    }
}
