//! Batch writes and gets: chunking, and retrying what a store leaves unprocessed.
//!
//! The loop is generic over a [`BatchSender`] (send one chunk, pause), so the same code drives
//! `DynamoStore`, [`MemoryStore`](super::MemoryStore) and test doubles that inject faults.

use std::collections::VecDeque;
use std::future::Future;
use std::hash::{BuildHasher, RandomState};
use std::time::{Duration, Instant};

use serde_dynamo::Item;

use super::{BatchGetError, BatchWriteError, StoreError, StoreErrorKind, WriteRequest};
use crate::trace::{self, op_span};

/// The most requests `DynamoDB` accepts in one `BatchWriteItem` call.
pub const MAX_BATCH_WRITE: usize = 25;
/// The most keys `DynamoDB` accepts in one `BatchGetItem` call.
pub const MAX_BATCH_GET: usize = 100;

/// How batch calls retry unprocessed requests and retryable errors: exponential backoff with
/// jitter, bounded.
///
/// Before the `n`-th retry of a chunk (`n` = 1, 2, …) the loop pauses for a random duration in
/// `[d/2, d]`, where `d = min(base_delay × 2^(n-1), max_delay)`. A chunk is sent at most
/// `max_attempts` times; what is still unprocessed then ends the batch with a typed error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The most times one chunk is sent (at least 1).
    pub max_attempts: u32,
    /// The backoff before the first retry.
    pub base_delay: Duration,
    /// The longest backoff.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    /// 10 attempts, 50 ms doubling up to 5 s (about 20 s in the worst case).
    fn default() -> Self {
        Self {
            max_attempts: 10,
            base_delay: Duration::from_millis(50),
            max_delay: Duration::from_secs(5),
        }
    }
}

impl RetryPolicy {
    /// The upper bound `d` of the pause before retry number `retry` (1-based).
    pub fn max_backoff(&self, retry: u32) -> Duration {
        let factor = 1u32
            .checked_shl(retry.saturating_sub(1))
            .unwrap_or(u32::MAX);
        self.base_delay
            .checked_mul(factor)
            .unwrap_or(self.max_delay)
            .min(self.max_delay)
    }

    /// The pause before retry number `retry`, jittered in `[d/2, d]` by `entropy`.
    pub fn backoff(&self, retry: u32, entropy: u64) -> Duration {
        let d = self.max_backoff(retry);
        let half = d / 2;
        let span = u64::try_from(d.saturating_sub(half).as_nanos()).unwrap_or(u64::MAX);
        half + Duration::from_nanos(if span == 0 { 0 } else { entropy % (span + 1) })
    }

    fn attempts(&self) -> u32 {
        self.max_attempts.max(1)
    }
}

pub(super) fn entropy(retry: u32) -> u64 {
    RandomState::new().hash_one(retry)
}

/// What one `BatchGetItem` call returned.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GetBatch {
    /// The items found.
    pub items: Vec<Item>,
    /// The keys the store did not process (to be sent again).
    pub unprocessed: Vec<Item>,
}

/// Sends one chunk of a batch: what [`write_batches`] and [`get_batches`] drive.
pub trait BatchSender: Send + Sync {
    /// Sends one `BatchWriteItem` chunk (at most [`MAX_BATCH_WRITE`] requests); returns the
    /// requests the store did not process.
    fn send_write_batch(
        &self,
        batch: Vec<WriteRequest>,
    ) -> impl Future<Output = Result<Vec<WriteRequest>, StoreError>> + Send;

    /// Sends one `BatchGetItem` chunk (at most [`MAX_BATCH_GET`] keys).
    fn send_get_batch(
        &self,
        keys: Vec<Item>,
        projection: Option<&[String]>,
    ) -> impl Future<Output = Result<GetBatch, StoreError>> + Send;

    /// Waits before a retry.
    fn pause(&self, delay: Duration) -> impl Future<Output = ()> + Send;

    /// The bound of a whole batch call: the longest it may go **without progress**, i.e.
    /// without any request confirmed done (`None`: no bound but the attempts). The clock
    /// starts with the call and restarts whenever an answer confirms at least one request (a
    /// chunk done, or part of one processed); when it runs out the whole call stops with a
    /// [`StoreError::is_timeout`] cause listing every request not confirmed done (a request in
    /// flight then may or may not have been applied; batch puts and deletes are idempotent, so
    /// sending them again is safe).
    ///
    /// So a call against a server that stopped answering ends within one bound of its last
    /// answer, whatever its size, and a healthy batch of any size, which confirms requests all
    /// along, is never cut. (A bound on the whole duration would have to grow with the number
    /// of requests and the server's pace to spare a healthy large batch, and would then leave
    /// a stopped server minutes to be noticed: progress is what tells the two apart.)
    fn time_limit(&self) -> Option<Duration> {
        None
    }
}

/// Sends one chunk through `send`, within what is left of the sender's bound since the last
/// progress.
async fn within<B, T, F>(
    sender: &B,
    progress: Instant,
    operation: &'static str,
    send: F,
) -> Result<T, StoreError>
where
    B: BatchSender + ?Sized,
    F: Future<Output = Result<T, StoreError>>,
{
    let Some(limit) = sender.time_limit() else {
        return send.await;
    };
    let left = limit.saturating_sub(progress.elapsed());
    let out_of_time = || {
        StoreError::new(
            StoreErrorKind::Timeout,
            operation,
            format!(
                "no request confirmed done for {limit:?} (the bound of a batch call without progress, retries included); the requests not confirmed are listed, and sending them again is safe"
            ),
        )
    };
    if left.is_zero() {
        return Err(out_of_time());
    }
    let send = std::pin::pin!(send);
    let timer = std::pin::pin!(sender.pause(left));
    match futures::future::select(send, timer).await {
        futures::future::Either::Left((result, _)) => result,
        futures::future::Either::Right(((), _)) => Err(out_of_time()),
    }
}

/// Whether a retry after `pause` still fits the sender's bound since the last progress.
fn fits<B: BatchSender + ?Sized>(sender: &B, progress: Instant, pause: Duration) -> bool {
    sender
        .time_limit()
        .is_none_or(|limit| progress.elapsed() + pause < limit)
}

/// Writes every request in chunks of [`MAX_BATCH_WRITE`], one chunk after the other, retrying
/// unprocessed requests and retryable errors under `policy`.
///
/// On the first chunk that cannot be completed it stops, and the error lists that chunk's
/// remaining requests and every later request: exactly what was not written.
pub async fn write_batches<B: BatchSender + ?Sized>(
    sender: &B,
    writes: Vec<WriteRequest>,
    policy: &RetryPolicy,
) -> Result<(), BatchWriteError> {
    let span = op_span!("entity_manager.batch_write", requests = writes.len());
    trace::operation(span, write_all(sender, writes, policy)).await
}

async fn write_all<B: BatchSender + ?Sized>(
    sender: &B,
    writes: Vec<WriteRequest>,
    policy: &RetryPolicy,
) -> Result<(), BatchWriteError> {
    let total = writes.len();
    let mut rest: VecDeque<WriteRequest> = writes.into();
    // one clock for the whole call, restarted by each answer that confirms a request
    let mut progress = Instant::now();
    while !rest.is_empty() {
        let take = rest.len().min(MAX_BATCH_WRITE);
        let mut pending: Vec<WriteRequest> = rest.drain(..take).collect();
        let mut attempt = 0;
        // whether a send of this chunk failed in a way that may have written its requests
        let mut uncertain = false;
        loop {
            attempt += 1;
            let sent = within(
                sender,
                progress,
                "BatchWriteItem",
                sender.send_write_batch(pending.clone()),
            )
            .await;
            if let Ok(unprocessed) = &sent
                && unprocessed.len() < pending.len()
            {
                progress = Instant::now();
            }
            let failure = match sent {
                Ok(unprocessed) if unprocessed.is_empty() => break,
                Ok(unprocessed) => {
                    trace::unprocessed(unprocessed.len());
                    pending = unprocessed;
                    StoreError::new(
                        StoreErrorKind::Incomplete,
                        "BatchWriteItem",
                        format!(
                            "{} requests still unprocessed after {attempt} attempts",
                            pending.len()
                        ),
                    )
                }
                Err(e) => e,
            };
            uncertain |= failure.may_have_applied();
            let pause = policy.backoff(attempt, entropy(attempt));
            if !failure.is_retryable()
                || failure.is_timeout()
                || attempt >= policy.attempts()
                || !fits(sender, progress, pause)
            {
                // a last send throttled or left unprocessed says nothing of an earlier one
                // that may have written the chunk: the requests listed may have been written
                let failure = if uncertain {
                    failure.after_unanswered_attempt(attempt, true)
                } else {
                    failure
                };
                pending.extend(rest);
                return Err(BatchWriteError::new(pending, total, failure));
            }
            trace::retry();
            sender.pause(pause).await;
        }
    }
    Ok(())
}

/// Reads every key in chunks of [`MAX_BATCH_GET`], one chunk after the other, retrying
/// unprocessed keys and retryable errors under `policy`.
///
/// On the first chunk that cannot be completed it stops; the error holds what was read and
/// lists exactly the keys that were not.
pub async fn get_batches<B: BatchSender + ?Sized>(
    sender: &B,
    keys: Vec<Item>,
    projection: Option<&[String]>,
    policy: &RetryPolicy,
) -> Result<Vec<Item>, BatchGetError> {
    let span = op_span!("entity_manager.batch_get", keys = keys.len());
    trace::operation(span, get_all(sender, keys, projection, policy)).await
}

async fn get_all<B: BatchSender + ?Sized>(
    sender: &B,
    keys: Vec<Item>,
    projection: Option<&[String]>,
    policy: &RetryPolicy,
) -> Result<Vec<Item>, BatchGetError> {
    let total = keys.len();
    let mut items = Vec::new();
    let mut rest: VecDeque<Item> = keys.into();
    // one clock for the whole call, restarted by each answer that confirms a key
    let mut progress = Instant::now();
    while !rest.is_empty() {
        let take = rest.len().min(MAX_BATCH_GET);
        let mut pending: Vec<Item> = rest.drain(..take).collect();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let sent = within(
                sender,
                progress,
                "BatchGetItem",
                sender.send_get_batch(pending.clone(), projection),
            )
            .await;
            if let Ok(batch) = &sent
                && batch.unprocessed.len() < pending.len()
            {
                progress = Instant::now();
            }
            let failure = match sent {
                Ok(batch) => {
                    items.extend(batch.items);
                    if batch.unprocessed.is_empty() {
                        break;
                    }
                    trace::unprocessed(batch.unprocessed.len());
                    pending = batch.unprocessed;
                    StoreError::new(
                        StoreErrorKind::Incomplete,
                        "BatchGetItem",
                        format!(
                            "{} keys still unprocessed after {attempt} attempts",
                            pending.len()
                        ),
                    )
                }
                Err(e) => e,
            };
            let pause = policy.backoff(attempt, entropy(attempt));
            if !failure.is_retryable()
                || failure.is_timeout()
                || attempt >= policy.attempts()
                || !fits(sender, progress, pause)
            {
                pending.extend(rest);
                return Err(BatchGetError::new(items, pending, total, failure));
            }
            trace::retry();
            sender.pause(pause).await;
        }
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_within_jitter_and_caps() {
        let p = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
        };
        assert_eq!(p.max_backoff(1), Duration::from_millis(100));
        assert_eq!(p.max_backoff(2), Duration::from_millis(200));
        assert_eq!(p.max_backoff(4), Duration::from_millis(800));
        assert_eq!(p.max_backoff(5), Duration::from_secs(1));
        assert_eq!(p.max_backoff(200), Duration::from_secs(1));
        for retry in 1..20 {
            for e in [0, 1, 12_345, u64::MAX] {
                let d = p.backoff(retry, e);
                assert!(d >= p.max_backoff(retry) / 2 && d <= p.max_backoff(retry));
            }
        }
        assert_eq!(p.backoff(1, 0), Duration::from_millis(50));
    }

    /// A sender that answers each chunk after `pace`, until `answers` chunks are answered;
    /// after that it never answers (a server that stopped).
    struct Paced {
        pace: Duration,
        answers: std::sync::atomic::AtomicUsize,
        bound: Duration,
    }

    impl BatchSender for Paced {
        async fn send_write_batch(
            &self,
            _batch: Vec<WriteRequest>,
        ) -> Result<Vec<WriteRequest>, StoreError> {
            let left = self.answers.load(std::sync::atomic::Ordering::SeqCst);
            if left == 0 {
                std::future::pending::<()>().await;
            }
            self.answers
                .store(left - 1, std::sync::atomic::Ordering::SeqCst);
            tokio::time::sleep(self.pace).await;
            Ok(Vec::new())
        }
        async fn send_get_batch(
            &self,
            _keys: Vec<Item>,
            _projection: Option<&[String]>,
        ) -> Result<GetBatch, StoreError> {
            Ok(GetBatch::default())
        }
        fn pause(&self, delay: Duration) -> impl Future<Output = ()> + Send {
            tokio::time::sleep(delay)
        }
        fn time_limit(&self) -> Option<Duration> {
            Some(self.bound)
        }
    }

    fn puts(n: usize) -> Vec<WriteRequest> {
        (0..n)
            .map(|i| {
                let item: Item = [(
                    "k".to_owned(),
                    serde_dynamo::AttributeValue::S(i.to_string()),
                )]
                .into_iter()
                .collect::<std::collections::HashMap<_, _>>()
                .into();
                WriteRequest::Put(item)
            })
            .collect()
    }

    /// A healthy batch that takes many bounds in all (40 chunks at a fifth of the bound each:
    /// 8 bounds) is never cut: the bound is on time without progress.
    #[tokio::test]
    async fn a_healthy_batch_longer_than_the_bound_is_not_cut() {
        let sender = Paced {
            pace: Duration::from_millis(20),
            answers: usize::MAX.into(),
            bound: Duration::from_millis(100),
        };
        let started = Instant::now();
        let out = write_batches(&sender, puts(40 * MAX_BATCH_WRITE), &RetryPolicy::default()).await;
        assert!(out.is_ok(), "{out:?}");
        assert!(
            started.elapsed() > sender.bound * 4,
            "the test ran as meant"
        );
    }

    /// A server that stops answering after 10 chunks: the call ends with a timeout (within
    /// about one bound of the last answer; the guard is generous), listing exactly the
    /// requests of the later chunks.
    #[tokio::test]
    async fn a_server_that_stops_ends_the_call_after_its_last_answer() {
        let sender = Paced {
            pace: Duration::from_millis(10),
            answers: 10.into(),
            bound: Duration::from_millis(300),
        };
        let writes = puts(30 * MAX_BATCH_WRITE);
        let want: Vec<WriteRequest> = writes[10 * MAX_BATCH_WRITE..].to_vec();
        let out = tokio::time::timeout(
            Duration::from_secs(10),
            write_batches(&sender, writes, &RetryPolicy::default()),
        )
        .await;
        let Ok(Err(e)) = out else {
            panic!("the call did not end with an error: {out:?}");
        };
        assert!(e.cause.is_timeout(), "{e}");
        assert_eq!(e.unwritten, want);
    }

    /// A sender whose first send fails in a way that may have written the chunk (a server
    /// error), and whose later sends are all throttled.
    struct LostThenThrottled {
        sends: std::sync::atomic::AtomicUsize,
    }

    impl BatchSender for LostThenThrottled {
        async fn send_write_batch(
            &self,
            _batch: Vec<WriteRequest>,
        ) -> Result<Vec<WriteRequest>, StoreError> {
            let kind = match self.sends.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
                0 => StoreErrorKind::Transient,
                _ => StoreErrorKind::Throttled,
            };
            Err(StoreError::new(kind, "BatchWriteItem", "chaos"))
        }
        async fn send_get_batch(
            &self,
            _keys: Vec<Item>,
            _projection: Option<&[String]>,
        ) -> Result<GetBatch, StoreError> {
            Ok(GetBatch::default())
        }
        async fn pause(&self, _delay: Duration) {}
    }

    /// A chunk whose last send was throttled after an earlier send that may have written it
    /// is not reported as "nothing written": its requests may have been (issue 50).
    #[tokio::test]
    async fn a_chunk_throttled_after_a_send_that_may_have_written_it_may_have_been_written() {
        let sender = LostThenThrottled { sends: 0.into() };
        let writes = puts(3);
        let Err(e) = write_batches(&sender, writes.clone(), &RetryPolicy::default()).await else {
            panic!("a batch succeeded through a sender that fails every send");
        };
        assert!(sender.sends.load(std::sync::atomic::Ordering::SeqCst) > 1);
        assert_eq!(e.unwritten, writes);
        assert!(e.cause.may_have_applied(), "{}", e.cause);
        assert!(
            e.cause.to_string().contains("answer was lost"),
            "{}",
            e.cause
        );
    }

    #[test]
    fn zero_delays_do_not_divide_by_zero() {
        let p = RetryPolicy {
            max_attempts: 0,
            base_delay: Duration::ZERO,
            max_delay: Duration::ZERO,
        };
        assert_eq!(p.backoff(3, u64::MAX), Duration::ZERO);
        assert_eq!(p.attempts(), 1);
    }
}
