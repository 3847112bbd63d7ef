//! What `DynamoStore`'s calls tell the operation span ([`crate::trace`]): each attempt the SDK
//! sends (a retry when the SDK's `amz-sdk-request` header says `attempt=2` or later), each
//! attempt answered with throttling, and the capacity `DynamoDB` reports; and what the store
//! needs of a call's attempts: how many, and whether one may have been applied without the
//! store hearing of it.

use aws_sdk_dynamodb::config::interceptors::{
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_sdk_dynamodb::types::ConsumedCapacity;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::trace;

/// The attempts of one call (for [`StoreError::gave_up`](crate::store::StoreError::gave_up)),
/// and those of them that failed without a refusal (a timeout, a server error, a dropped
/// connection, a broken answer: `DynamoDB` may have applied them): the client's [`Tracing`]
/// interceptor counts into it while the call runs under [`Counted::counted`].
#[derive(Clone, Debug, Default)]
pub(super) struct Counting(Arc<Tally>);

#[derive(Debug, Default)]
struct Tally {
    attempts: AtomicU32,
    unanswered: AtomicU32,
}

impl Counting {
    /// The attempts this call sent (at least 1: a call that failed before sending counts as
    /// one).
    pub(super) fn attempts(&self) -> u32 {
        self.0.attempts.load(Ordering::Relaxed).max(1)
    }

    /// Whether an attempt of this call failed in a way that may have applied it (no answer, a
    /// broken one, or a `5xx`): a later attempt refused by the write's condition may then have
    /// been refused because of that very write.
    pub(super) fn may_have_applied_before(&self) -> bool {
        self.0.unanswered.load(Ordering::Relaxed) > 0
    }
}

tokio::task_local! {
    /// The counter of the call being polled, if it runs under [`Counted::counted`].
    static CALL: Counting;
}

/// A call (an SDK `send()` future) whose attempts count into a [`Counting`].
pub(super) trait Counted: Future + Sized {
    /// `self`, counting its attempts into `calls`. (A per-call interceptor would do the same
    /// through `customize()`, which rebuilds the call's configuration: measured, it made a
    /// query page 5 % more expensive in client CPU.)
    fn counted(self, calls: &Counting) -> impl Future<Output = Self::Output> {
        CALL.scope(calls.clone(), self)
    }
}

impl<F: Future> Counted for F {}

/// The name of [`Tracing`] among a client's interceptors.
pub(super) const TRACING: &str = "entity_manager::Counting";

/// Tells the current operation span of every attempt, retry and throttle of a call, and counts
/// its attempts into the call's [`Counting`]. Installed once on the store's client.
#[derive(Debug)]
pub(super) struct Tracing;

/// The error codes `DynamoDB` throttles with.
const THROTTLING: [&str; 3] = [
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
];

/// The attempt number of the SDK's `amz-sdk-request: attempt=N; max=M` header.
fn attempt_number(header: &str) -> Option<u32> {
    header
        .split(';')
        .find_map(|part| part.trim().strip_prefix("attempt="))
        .and_then(|n| n.trim().parse().ok())
}

// `dyn_dispatch_hint`: the SDK calls this interceptor at the two hooks it implements only,
// not at the twenty others of every attempt (each of which would also look the interceptor up
// in the call's configuration)
#[aws_smithy_runtime_api::client::interceptors::dyn_dispatch_hint]
impl Intercept for Tracing {
    fn name(&self) -> &'static str {
        TRACING
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        trace::attempt();
        // outside `counted` (a call whose attempts nobody asks for) there is no counter
        let _counted = CALL.try_with(|calls| calls.0.attempts.fetch_add(1, Ordering::Relaxed));
        let attempt = context
            .request()
            .headers()
            .get("amz-sdk-request")
            .and_then(attempt_number);
        if attempt.is_some_and(|n| n > 1) {
            trace::retry();
        }
        Ok(())
    }

    fn read_after_attempt(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        // an attempt that did not end with an answer (a success, or a `4xx` refusal: nothing
        // done) may have been applied
        let status = context.response().map(|r| r.status().as_u16());
        let answered = match context.output_or_error() {
            Some(Ok(_)) => true,
            Some(Err(_)) => status.is_some_and(|s| (400..500).contains(&s)),
            None => false,
        };
        if !answered {
            let _counted =
                CALL.try_with(|calls| calls.0.unanswered.fetch_add(1, Ordering::Relaxed));
        }
        if let Some(response) = context.response()
            && response.status().as_u16() == 400
            && let Some(body) = response.body().bytes()
        {
            let body = String::from_utf8_lossy(body);
            if THROTTLING.iter().any(|code| body.contains(code)) {
                trace::throttle();
            }
        }
        Ok(())
    }
}

/// Adds the capacity a call consumed to the operation span.
pub(super) fn consumed(capacity: Option<&ConsumedCapacity>) {
    if let Some(units) = capacity.and_then(ConsumedCapacity::capacity_units) {
        trace::capacity(units);
    }
}

#[cfg(test)]
mod tests {
    use super::attempt_number;

    #[test]
    fn the_attempt_number_is_read_from_the_sdk_header() {
        assert_eq!(attempt_number("attempt=1; max=3"), Some(1));
        assert_eq!(
            attempt_number("ttl=20260101T000000Z; attempt=3; max=3"),
            Some(3)
        );
        assert_eq!(attempt_number("max=3"), None);
        assert_eq!(attempt_number("attempt=x"), None);
    }
}
