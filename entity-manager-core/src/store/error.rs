//! The errors of every store: one opaque [`StoreError`] with predicates, and the typed batch
//! errors that list exactly what was not carried out.

use std::error::Error as StdError;
use std::fmt;

use serde_dynamo::Item;

use super::WriteRequest;
use crate::limits::{ExpressionKind, ExpressionLimit};

/// What kind of failure a [`StoreError`] is.
///
/// Prefer the predicates of [`StoreError`]; this enum exists so that store implementations
/// (and test doubles) outside this crate can build errors with [`StoreError::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// A write's condition ([`Expect`](super::Expect)) did not hold.
    ConditionalCheckFailed,
    /// A transaction was canceled; see [`StoreError::cancellation_reasons`].
    TransactionCanceled,
    /// The store refused the request for now (throughput exceeded, request limit, throttling).
    Throttled,
    /// The request is invalid for this table (wrong key, wrong type, bad expression, …).
    Validation,
    /// The table (or index) does not exist.
    ResourceNotFound,
    /// The table already exists, or is being created or deleted.
    ResourceInUse,
    /// A transient failure (connection, server error, transaction conflict): retrying may
    /// succeed.
    Transient,
    /// The store did not answer within the operation's time limit (see
    /// `DynamoStore::with_timeouts`); retrying may succeed.
    Timeout,
    /// A batch left requests unprocessed after every attempt the retry policy allows.
    Incomplete,
    /// An item could not be converted between the store's format and [`Item`].
    Conversion,
    /// Anything else.
    Other,
}

/// Why one operation of a canceled transaction failed, in the order of the operations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CancellationReason {
    /// The failure code (e.g. `ConditionalCheckFailed`), or `None` when this operation did not
    /// fail.
    pub code: Option<String>,
    /// The store's message, if any.
    pub message: Option<String>,
    /// The current item, when this operation's condition failed and the item exists.
    pub item: Option<Item>,
}

impl CancellationReason {
    /// The reason of an operation that did not fail.
    pub const NONE: Self = Self {
        code: None,
        message: None,
        item: None,
    };

    /// A failed condition.
    pub fn conditional_check_failed() -> Self {
        Self {
            code: Some("ConditionalCheckFailed".to_owned()),
            message: Some("The conditional request failed".to_owned()),
            item: None,
        }
    }

    /// Whether this operation's condition failed.
    pub fn is_conditional_check_failed(&self) -> bool {
        self.code.as_deref() == Some("ConditionalCheckFailed")
    }
}

/// An error from a store: opaque, with predicates for the cases callers handle.
///
/// ```
/// use entity_manager_core::store::{StoreError, StoreErrorKind};
///
/// let e = StoreError::new(StoreErrorKind::Throttled, "PutItem", "rate exceeded");
/// assert!(e.is_throttled() && e.is_retryable());
/// assert_eq!(e.to_string(), "PutItem failed: rate exceeded (throttled; retry later, or raise the table's capacity)");
/// ```
pub struct StoreError(Box<Inner>);

struct Inner {
    kind: StoreErrorKind,
    operation: &'static str,
    message: String,
    code: Option<String>,
    reasons: Vec<CancellationReason>,
    item: Option<Item>,
    expression: Option<ExpressionTooLarge>,
    gave_up: Option<GaveUp>,
    /// See [`StoreError::is_refused_after_lost_answer`].
    refused_on_resend: bool,
    source: Option<Box<dyn StdError + Send + Sync + 'static>>,
}

/// What a single call had done when it gave up: its attempts, and whether sending it again
/// is safe.
#[derive(Clone, Copy, Debug)]
struct GaveUp {
    attempts: u32,
    /// Carrying the request out twice changes nothing (reads, puts, deletes, updates without
    /// increments or appends, transactions under their idempotency token).
    repeatable: bool,
}

/// Which expression of a request exceeded which `DynamoDB` limit, and by how much: the detail
/// of a [`StoreError`] that [`StoreError::expression_too_large`] returns.
///
/// Both stores render every expression of a request before sending or applying it and refuse
/// it the same way, so `MemoryStore` gives the verdict `DynamoDB` would.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ExpressionTooLarge {
    /// The expression.
    pub expression: ExpressionKind,
    /// The limit it exceeded.
    pub limit: ExpressionLimit,
    /// Its size, in the limit's unit (bytes, or operators and functions).
    pub size: usize,
}

impl ExpressionTooLarge {
    /// The largest size the limit allows.
    pub const fn max(&self) -> usize {
        self.limit.max()
    }
}

impl fmt::Display for ExpressionTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.limit {
            ExpressionLimit::Length => write!(
                f,
                "Invalid {}: Expression size has exceeded the maximum allowed size; expression size: {} bytes, at most {}",
                self.expression,
                self.size,
                self.max()
            ),
            ExpressionLimit::Operators => write!(
                f,
                "Invalid {}: The expression contains too many operators; operator count: {}, at most {}",
                self.expression,
                self.size,
                self.max()
            ),
            ExpressionLimit::SubstitutionBytes => write!(
                f,
                "{} exceed the maximum size: {} bytes, at most {}",
                self.expression,
                self.size,
                self.max()
            ),
        }
    }
}

impl StoreError {
    /// An error of `kind` from `operation` (e.g. `"PutItem"`), with a message saying what is
    /// wrong.
    pub fn new(kind: StoreErrorKind, operation: &'static str, message: impl Into<String>) -> Self {
        Self(Box::new(Inner {
            kind,
            operation,
            message: message.into(),
            code: None,
            reasons: Vec::new(),
            item: None,
            expression: None,
            gave_up: None,
            refused_on_resend: false,
            source: None,
        }))
    }

    /// Records that a single call gave up after `attempts` attempts (its retries included)
    /// with this error, and whether the request is `repeatable` (applying it twice changes
    /// nothing); the message then says what was done, what was not and whether a retry is
    /// safe. Only a throttled, transient or timed-out failure gives up: other errors are
    /// returned unchanged.
    #[must_use]
    pub fn gave_up(mut self, attempts: u32, repeatable: bool) -> Self {
        if !matches!(
            self.0.kind,
            StoreErrorKind::Throttled | StoreErrorKind::Transient | StoreErrorKind::Timeout
        ) {
            return self;
        }
        self.0.gave_up = Some(GaveUp {
            attempts,
            repeatable,
        });
        let plural = if attempts == 1 { "" } else { "s" };
        let verdict = if !self.may_have_applied() {
            "it was not carried out, and sending it again is safe"
        } else if repeatable {
            "it may have been carried out; sending it again is safe (carrying it out twice changes nothing)"
        } else {
            "it may have been carried out, so it was not sent again (an increment or an append would apply twice): read the record before deciding to send it again"
        };
        self.advise(&format!(
            "gave up after {attempts} attempt{plural}: {verdict}"
        ))
    }

    /// This write's condition refused an attempt sent again after an earlier attempt of the
    /// same call may have been applied (its answer was lost: a timeout, a server error, a
    /// dropped connection): the condition may have refused it because of that very write, so
    /// neither "refused" nor "done" is known. Returned as a failure that
    /// [`may_have_applied`](Self::may_have_applied) and is not to be sent again
    /// ([`is_retryable`](Self::is_retryable) is false), the current item attached (a
    /// transaction's cancellation reasons are dropped: they would read as a refusal). Any
    /// other error is returned unchanged.
    ///
    /// A [`Store`](super::Store) of your own that sends a conditioned write again after an
    /// attempt without an answer reports the refusal of the attempt sent again this way, as
    /// `DynamoStore` does: a guarded job then reads the record to learn what is left to do
    /// instead of counting a conflict.
    ///
    /// ```
    /// use entity_manager_core::store::{StoreError, StoreErrorKind};
    ///
    /// let refused = StoreError::new(
    ///     StoreErrorKind::ConditionalCheckFailed,
    ///     "PutItem",
    ///     "The conditional request failed",
    /// );
    /// let error = refused.after_lost_answer(2);
    /// assert!(error.is_refused_after_lost_answer() && error.may_have_applied());
    /// assert!(!error.is_retryable() && !error.is_conditional_check_failed());
    /// ```
    #[must_use]
    pub fn after_lost_answer(self, attempts: u32) -> Self {
        if !self.is_conditional_check_failed() {
            return self;
        }
        let mut inner = *self.0;
        inner.kind = StoreErrorKind::Transient;
        inner.message = format!(
            "{} on attempt {attempts}, sent again after an earlier attempt whose answer was lost (a timeout, a server error or a dropped connection): that attempt may have carried the write out, and then its own condition refused the attempt sent again; gave up: it may have been carried out, read the record before deciding to send it again",
            inner.message
        );
        inner.gave_up = Some(GaveUp {
            attempts,
            repeatable: false,
        });
        // a transaction's reasons would read as a refusal (a version conflict) wherever they
        // are looked at: the outcome is not known, so none is kept
        inner.reasons.clear();
        inner.refused_on_resend = true;
        Self(Box::new(inner))
    }

    /// This error ended a write call one of whose earlier attempts ended without an answer (a
    /// timeout, a server error, a dropped connection) and so may have carried the write out.
    /// Whatever the last attempt met, the call's outcome is then not known: a refusal by the
    /// write's own condition becomes [`after_lost_answer`](Self::after_lost_answer); an
    /// attempt refused before anything was done (throttled, a transaction canceled by a
    /// conflict) says nothing of the earlier one, so it becomes a failure that
    /// [`may_have_applied`](Self::may_have_applied) (transient, the reasons of a canceled
    /// transaction dropped, so that neither a caller nor a retry loop reads it as "nothing
    /// written"); a failure that may have applied already only records how the call gave up
    /// ([`gave_up`](Self::gave_up), with `repeatable`).
    #[must_use]
    pub(crate) fn after_unanswered_attempt(self, attempts: u32, repeatable: bool) -> Self {
        if self.is_conditional_check_failed() {
            return self.after_lost_answer(attempts);
        }
        if self.may_have_applied() {
            return self.gave_up(attempts, repeatable);
        }
        let mut inner = *self.0;
        inner.kind = StoreErrorKind::Transient;
        inner.message = format!(
            "{} on attempt {attempts}, after an earlier attempt whose answer was lost (a timeout, a server error or a dropped connection) and that may have carried the write out",
            inner.message
        );
        inner.reasons.clear();
        Self(Box::new(inner)).gave_up(attempts, repeatable)
    }

    /// A write's condition refused an attempt sent again after an earlier attempt of the same
    /// call may have been applied (`DynamoStore`: its answer was lost and the SDK sent it
    /// again): [`may_have_applied`](Self::may_have_applied) is true,
    /// [`current_item`](Self::current_item) is the record the condition met (`None`: no
    /// record, or a transaction), and whether the write was carried out is not known. A job whose write makes
    /// the record what it should be whoever writes it (a migration, a purge) can judge from the
    /// current item; a change relative to the record read (an increment) cannot, and must not
    /// be redone.
    pub fn is_refused_after_lost_answer(&self) -> bool {
        self.0.refused_on_resend
    }

    /// How many attempts a single call made before it gave up with this error (its retries
    /// included; see [`gave_up`](Self::gave_up)), or `None` when the error did not end a
    /// retried call (a failed condition, an invalid request, a batch, whose typed error lists
    /// what was not done).
    pub fn attempts(&self) -> Option<u32> {
        self.0.gave_up.map(|g| g.attempts)
    }

    /// Whether the failed request may have been carried out anyway: after a timeout, a server
    /// error or a broken answer the store may have applied it before failing. A throttled
    /// request, a failed condition, a canceled transaction or an invalid request was not.
    pub fn may_have_applied(&self) -> bool {
        matches!(
            self.0.kind,
            StoreErrorKind::Transient | StoreErrorKind::Timeout
        ) && !self.is_transaction_conflict()
    }

    /// A request refused because one of its expressions exceeds a `DynamoDB` limit: a
    /// validation error ([`is_validation`](Self::is_validation)) whose
    /// [`expression_too_large`](Self::expression_too_large) says which expression and by how
    /// much.
    pub fn expression(operation: &'static str, detail: ExpressionTooLarge) -> Self {
        let mut e = Self::validation(
            operation,
            format!(
                "{detail}; write fewer attributes or conditions in one request (split it, or replace the whole item with a put)"
            ),
        )
        .with_code("ValidationException");
        e.0.expression = Some(detail);
        e
    }

    /// Adds what to do to the message.
    #[must_use]
    pub(crate) fn advise(mut self, advice: &str) -> Self {
        self.0.message.push_str("; ");
        self.0.message.push_str(advice);
        self
    }

    /// Which expression exceeded which limit, when the request was refused for that.
    pub fn expression_too_large(&self) -> Option<&ExpressionTooLarge> {
        self.0.expression.as_ref()
    }

    /// A validation error.
    pub fn validation(operation: &'static str, message: impl Into<String>) -> Self {
        Self::new(StoreErrorKind::Validation, operation, message)
    }

    /// Attaches the store's error code (e.g. `ValidationException`).
    #[must_use]
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.0.code = Some(code.into());
        self
    }

    /// Attaches the underlying error.
    #[must_use]
    pub fn with_source(mut self, source: impl StdError + Send + Sync + 'static) -> Self {
        self.0.source = Some(Box::new(source));
        self
    }

    /// Attaches the current item of a failed condition.
    #[must_use]
    pub fn with_item(mut self, item: Option<Item>) -> Self {
        self.0.item = item;
        self
    }

    /// The item as it was when a write's condition failed (`None` when there was no item, or
    /// for other errors). Transactions carry it per operation in
    /// [`cancellation_reasons`](Self::cancellation_reasons).
    pub fn current_item(&self) -> Option<&Item> {
        self.0.item.as_ref()
    }

    /// A canceled transaction, with one reason per operation.
    pub fn transaction_canceled(operation: &'static str, reasons: Vec<CancellationReason>) -> Self {
        let failed: Vec<String> = reasons
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.code.as_ref().map(|c| format!("operation {i}: {c}")))
            .collect();
        let mut e = Self::new(
            StoreErrorKind::TransactionCanceled,
            operation,
            format!("transaction canceled ({})", failed.join(", ")),
        );
        e.0.reasons = reasons;
        e
    }

    /// The kind of failure.
    pub fn kind(&self) -> StoreErrorKind {
        self.0.kind
    }

    /// The operation that failed (`PutItem`, `Query`, …).
    pub fn operation(&self) -> &'static str {
        self.0.operation
    }

    /// The message, without the operation.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// The store's own error code, if it gave one (e.g. `ValidationException`).
    pub fn code(&self) -> Option<&str> {
        self.0.code.as_deref()
    }

    /// A write's condition did not hold, alone or inside a canceled transaction.
    pub fn is_conditional_check_failed(&self) -> bool {
        self.0.kind == StoreErrorKind::ConditionalCheckFailed
            || (self.0.kind == StoreErrorKind::TransactionCanceled
                && self
                    .0
                    .reasons
                    .iter()
                    .any(CancellationReason::is_conditional_check_failed))
    }

    /// A transaction was canceled; see [`cancellation_reasons`](Self::cancellation_reasons).
    pub fn is_transaction_canceled(&self) -> bool {
        self.0.kind == StoreErrorKind::TransactionCanceled
    }

    /// The reasons of a canceled transaction, one per operation; empty otherwise.
    pub fn cancellation_reasons(&self) -> &[CancellationReason] {
        &self.0.reasons
    }

    /// The store throttled the request.
    pub fn is_throttled(&self) -> bool {
        self.0.kind == StoreErrorKind::Throttled
    }

    /// The request is invalid.
    pub fn is_validation(&self) -> bool {
        self.0.kind == StoreErrorKind::Validation
    }

    /// The table or index does not exist.
    pub fn is_resource_not_found(&self) -> bool {
        self.0.kind == StoreErrorKind::ResourceNotFound
    }

    /// The table already exists or is changing state.
    pub fn is_resource_in_use(&self) -> bool {
        self.0.kind == StoreErrorKind::ResourceInUse
    }

    /// A batch left requests unprocessed after every allowed attempt.
    pub fn is_incomplete(&self) -> bool {
        self.0.kind == StoreErrorKind::Incomplete
    }

    /// Retrying the same request later may succeed and cannot apply it twice (throttled,
    /// transient, timed out, incomplete, or a transaction canceled by a conflict), except a
    /// request that may have been carried out and would change the record again if repeated
    /// (an `UpdateItem` with an increment or an append that timed out): that one is not
    /// retryable, and its message says so.
    pub fn is_retryable(&self) -> bool {
        let kind = matches!(
            self.0.kind,
            StoreErrorKind::Throttled
                | StoreErrorKind::Transient
                | StoreErrorKind::Timeout
                | StoreErrorKind::Incomplete
        ) || self.is_transaction_conflict();
        kind && !(self.may_have_applied() && self.0.gave_up.is_some_and(|g| !g.repeatable))
    }

    /// A transaction canceled only because another transaction or write touched one of its
    /// items at the same time (reason `TransactionConflict`, no failed condition): it wrote
    /// nothing, and sending it again is safe.
    pub fn is_transaction_conflict(&self) -> bool {
        self.0.kind == StoreErrorKind::TransactionCanceled
            && self
                .0
                .reasons
                .iter()
                .any(|r| r.code.as_deref() == Some("TransactionConflict"))
            && !self
                .0
                .reasons
                .iter()
                .any(CancellationReason::is_conditional_check_failed)
    }

    /// The store did not answer in time: the call was abandoned after its time limit.
    pub fn is_timeout(&self) -> bool {
        self.0.kind == StoreErrorKind::Timeout
    }

    fn hint(&self) -> &'static str {
        if self.may_have_applied() && !self.is_retryable() {
            // the message says why it is not sent again
            return "";
        }
        match self.0.kind {
            StoreErrorKind::Throttled => " (throttled; retry later, or raise the table's capacity)",
            StoreErrorKind::Transient => " (transient; retrying may succeed)",
            StoreErrorKind::Timeout => {
                " (no answer within the time limit; retrying may succeed, or raise the limit with `DynamoStore::with_timeouts`)"
            }
            StoreErrorKind::ResourceNotFound => {
                " (create the table first, e.g. with `DynamoStore::create_table`)"
            }
            StoreErrorKind::Incomplete => {
                " (the store kept the requests unprocessed; retry them later)"
            }
            _ => "",
        }
    }
}

impl fmt::Debug for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("StoreError");
        d.field("kind", &self.0.kind)
            .field("operation", &self.0.operation)
            .field("message", &self.0.message);
        if let Some(code) = &self.0.code {
            d.field("code", code);
        }
        if !self.0.reasons.is_empty() {
            d.field("reasons", &self.0.reasons);
        }
        if let Some(gave_up) = &self.0.gave_up {
            d.field("attempts", &gave_up.attempts)
                .field("repeatable", &gave_up.repeatable);
        }
        if let Some(source) = &self.0.source {
            d.field("source", source);
        }
        d.finish()
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} failed: {}{}",
            self.0.operation,
            self.0.message,
            self.hint()
        )
    }
}

impl StdError for StoreError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.0
            .source
            .as_deref()
            .map(|s| s as &(dyn StdError + 'static))
    }
}

/// A batch write that did not carry out every request.
///
/// `unwritten` lists exactly the requests that were not carried out, in request order; every
/// other request was. (When the store failed without answering, e.g. on a timeout, the requests
/// of that chunk are listed although the store may have applied them: puts and deletes are
/// idempotent, so writing them again is safe.)
///
/// Its `Debug` output stays short (the requests are counted, not printed): a batch holds up to
/// thousands of items.
#[derive(thiserror::Error)]
#[error("batch write left {} of {total} requests unwritten: {cause}; they are listed in `unwritten`{}", unwritten.len(), advice(cause))]
#[non_exhaustive]
pub struct BatchWriteError {
    /// The requests that were not carried out.
    pub unwritten: Vec<WriteRequest>,
    /// How many requests the batch had.
    pub total: usize,
    /// Why the batch stopped: the last error, or an [`is_incomplete`](StoreError::is_incomplete)
    /// error when the retries ran out.
    #[source]
    pub cause: StoreError,
}

impl BatchWriteError {
    /// A batch write error.
    pub fn new(unwritten: Vec<WriteRequest>, total: usize, cause: StoreError) -> Self {
        Self {
            unwritten,
            total,
            cause,
        }
    }

    /// Whether writing the unwritten requests again later may succeed (throttling, a
    /// transient failure, a timeout, retries run out); `false` when the requests themselves
    /// are refused (validation, a missing table…) and must be fixed first.
    pub fn is_retryable(&self) -> bool {
        self.cause.is_retryable()
    }
}

impl fmt::Debug for BatchWriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchWriteError")
            .field(
                "unwritten",
                &format_args!("[{} requests]", self.unwritten.len()),
            )
            .field("total", &self.total)
            .field("cause", &self.cause)
            .finish()
    }
}

/// What to do about the requests a batch left, by the kind of its cause.
fn advice(cause: &StoreError) -> &'static str {
    if cause.is_retryable() {
        ": retry them"
    } else {
        ": retrying them unchanged will fail the same way; fix the cause first"
    }
}

/// A batch get that did not read every key.
///
/// `unread` lists exactly the keys that were not read; `items` holds what was read.
///
/// Its `Debug` output stays short (items and keys are counted, not printed).
#[derive(thiserror::Error)]
#[error("batch get left {} of {total} keys unread: {cause}; they are listed in `unread`{}", unread.len(), advice(cause))]
#[non_exhaustive]
pub struct BatchGetError {
    /// The items that were read.
    pub items: Vec<Item>,
    /// The keys that were not read.
    pub unread: Vec<Item>,
    /// How many keys the batch had.
    pub total: usize,
    /// Why the batch stopped.
    #[source]
    pub cause: StoreError,
}

impl BatchGetError {
    /// A batch get error.
    pub fn new(items: Vec<Item>, unread: Vec<Item>, total: usize, cause: StoreError) -> Self {
        Self {
            items,
            unread,
            total,
            cause,
        }
    }

    /// Whether reading the unread keys again later may succeed; `false` when the keys
    /// themselves are refused and must be fixed first.
    pub fn is_retryable(&self) -> bool {
        self.cause.is_retryable()
    }
}

impl fmt::Debug for BatchGetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchGetError")
            .field("items", &format_args!("[{} items]", self.items.len()))
            .field("unread", &format_args!("[{} keys]", self.unread.len()))
            .field("total", &self.total)
            .field("cause", &self.cause)
            .finish()
    }
}
