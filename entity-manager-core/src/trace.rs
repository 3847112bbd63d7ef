//! Operation spans: every entity operation, batch, transaction and scan, purge and migrate page
//! runs in a `tracing` span that records what it cost once it ends.
//!
//! The span's fields, filled when the operation ends:
//!
//! - `attempts`: requests sent to the store (each retry of the SDK or of ours counts);
//! - `throttles`: attempts answered with throttling;
//! - `retries`: attempts that repeated an earlier one (the SDK's retries of single calls, ours
//!   of batch leftovers and transaction conflicts);
//! - `unprocessed`: batch requests the store left unprocessed (sent again);
//! - `consumed_capacity`: capacity units `DynamoDB` reported (summed);
//! - `outcome`: `ok` or `error`.
//!
//! The store's requests run inside the span, so the AWS SDK's own spans and events (`invoke`,
//! `try_op`, `try_attempt`, …) are its children: a `tracing-opentelemetry` exporter shows each
//! `DynamoDB` call under the operation that made it. Operations nest (a `put_many` holds its
//! `batch_write`): a count goes to every enclosing span.
//!
//! The counts travel with the operation's future (a thread-local set while it is polled, as
//! `tokio::task_local!` does), so they need no runtime and no change to the [`Store`] trait.
//!
//! [`Store`]: crate::store::Store

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

/// A span for an operation, with the fields [`operation`] fills: `op_span!("name", extra = …)`.
macro_rules! op_span {
    ($name:literal $(, $($field:tt)+)?) => {
        ::tracing::info_span!(
            target: "entity_manager",
            $name,
            $($($field)+,)?
            attempts = ::tracing::field::Empty,
            throttles = ::tracing::field::Empty,
            retries = ::tracing::field::Empty,
            unprocessed = ::tracing::field::Empty,
            consumed_capacity = ::tracing::field::Empty,
            outcome = ::tracing::field::Empty,
        )
    };
}
pub(crate) use op_span;

/// The counts of one operation.
#[derive(Debug, Default)]
struct Stats {
    attempts: AtomicU64,
    throttles: AtomicU64,
    retries: AtomicU64,
    unprocessed: AtomicU64,
    /// Capacity units × 1,000 (atomics hold integers).
    capacity_milli: AtomicU64,
    /// The enclosing operation's counts, which every count also goes to.
    parent: Option<Arc<Stats>>,
}

thread_local! {
    /// The counts of the operation being polled on this thread.
    static CURRENT: RefCell<Option<Arc<Stats>>> = const { RefCell::new(None) };
}

/// Adds to the counts of the current operation and every enclosing one (no-op outside one).
fn count(f: impl Fn(&Stats)) {
    let mut at = CURRENT.with(|c| c.borrow().clone());
    while let Some(stats) = at.take() {
        f(&stats);
        at.clone_from(&stats.parent);
    }
}

/// One request sent to the store.
pub(crate) fn attempt() {
    count(|s| {
        s.attempts.fetch_add(1, Ordering::Relaxed);
    });
}

/// One attempt answered with throttling.
pub(crate) fn throttle() {
    count(|s| {
        s.throttles.fetch_add(1, Ordering::Relaxed);
    });
}

/// One attempt that repeats an earlier one.
pub(crate) fn retry() {
    count(|s| {
        s.retries.fetch_add(1, Ordering::Relaxed);
    });
}

/// `n` batch requests left unprocessed.
pub(crate) fn unprocessed(n: usize) {
    let n = u64::try_from(n).unwrap_or(u64::MAX);
    count(|s| {
        s.unprocessed.fetch_add(n, Ordering::Relaxed);
    });
}

/// Capacity units the store reported for a request.
pub(crate) fn capacity(units: f64) {
    if !units.is_finite() || units <= 0.0 {
        return;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // finite, positive
    let milli = (units * 1_000.0).round() as u64;
    count(|s| {
        s.capacity_milli.fetch_add(milli, Ordering::Relaxed);
    });
}

/// Puts its counts in place while the inner future is polled.
struct Scoped<F> {
    stats: Arc<Stats>,
    inner: F,
}

/// Restores the previous counts when a poll ends, even by a panic.
struct Restore(Option<Arc<Stats>>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

impl<F: Future + Unpin> Future for Scoped<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let previous = CURRENT.with(|c| c.borrow_mut().replace(self.stats.clone()));
        let _restore = Restore(previous);
        Pin::new(&mut self.inner).poll(cx)
    }
}

/// Runs `operation` inside `span` (made by [`op_span!`]), counting its requests, and records
/// the counts and the outcome on the span when it ends.
///
/// `operation` is boxed at once: its state (kilobytes for a single-record operation on
/// `DynamoStore`, which holds the SDK's call) is moved once, into the heap, instead of by value
/// into each future that awaits this one; the future returned is small.
pub(crate) fn operation<T, E, F>(
    span: tracing::Span,
    operation: F,
) -> impl Future<Output = Result<T, E>>
where
    F: Future<Output = Result<T, E>>,
{
    let inner = Box::pin(operation);
    async move {
        let stats = Arc::new(Stats {
            parent: CURRENT.with(|c| c.borrow().clone()),
            ..Stats::default()
        });
        let out = Scoped {
            stats: stats.clone(),
            inner: tracing::Instrument::instrument(inner, span.clone()),
        }
        .await;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        span.record("attempts", load(&stats.attempts));
        span.record("throttles", load(&stats.throttles));
        span.record("retries", load(&stats.retries));
        span.record("unprocessed", load(&stats.unprocessed));
        #[allow(clippy::cast_precision_loss)] // capacity units, far below 2^52
        span.record(
            "consumed_capacity",
            load(&stats.capacity_milli) as f64 / 1_000.0,
        );
        span.record("outcome", if out.is_ok() { "ok" } else { "error" });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts() -> Option<(u64, u64, u64, u64, u64)> {
        CURRENT.with(|c| {
            c.borrow().as_ref().map(|s| {
                let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
                (
                    load(&s.attempts),
                    load(&s.throttles),
                    load(&s.retries),
                    load(&s.unprocessed),
                    load(&s.capacity_milli),
                )
            })
        })
    }

    #[tokio::test]
    async fn counts_go_to_the_operation_and_every_enclosing_one_and_no_further() {
        let outer = operation(tracing::Span::none(), async {
            attempt();
            let inner = operation(tracing::Span::none(), async {
                attempt();
                throttle();
                retry();
                unprocessed(3);
                capacity(1.5);
                tokio::task::yield_now().await;
                Ok::<_, ()>(counts())
            })
            .await;
            Ok::<_, ()>((inner, counts()))
        })
        .await;
        let (inner, outer) = outer.unwrap_or((Ok(None), None));
        let inner = inner.unwrap_or(None);
        assert_eq!(inner, Some((1, 1, 1, 3, 1_500)));
        assert_eq!(outer, Some((2, 1, 1, 3, 1_500)));
        assert_eq!(
            counts(),
            None,
            "nothing is left in place after the operation"
        );
        attempt(); // outside any operation: no-op
        assert_eq!(counts(), None);
    }
}
