//! [`DynamoStore`]: the store over `aws-sdk-dynamodb` (feature `dynamodb`).

pub(crate) mod convert;
mod describe;
mod provision;
mod trace;

use std::future::Future;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::AsyncSleep;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    self as aws, ConditionCheck, Delete, DeleteRequest, Get, KeysAndAttributes, Put, PutRequest,
    ReturnValue, ReturnValuesOnConditionCheckFailure, TransactGetItem, TransactWriteItem,
};
use serde_dynamo::Item;

use self::convert::{
    build_error, from_aws, from_aws_all, sdk_error, substitutions_to_aws, to_aws, values_to_aws,
};
use self::trace::{Counted as _, Counting, consumed};
use super::batch::{BatchSender, GetBatch, RetryPolicy, get_batches, write_batches};
use super::expression::Request;
use super::shape::check_transaction_shape;
use super::stamp::{StampGuard, StampIo};

use super::{
    BatchGetError, BatchWriteError, CancellationReason, Expect, Page, QueryPage, ReturnValues,
    ScanPage, Store, StoreError, TableDefinition, TransactWrite, Update, WriteRequest,
};

/// A `DynamoDB` table, through a client you configure.
///
/// **Available with the `dynamodb` feature** (on by default in the `entity-manager` facade),
/// which brings `aws-sdk-dynamodb` and its HTTP stack.
///
/// The client is yours: build it with `aws-config` (credentials, region, retries) or, for
/// `DynamoDB` Local and other endpoints, with an explicit `endpoint_url`, region and
/// credentials. The store adds what the entity manager needs on top: conditional writes, batch
/// calls chunked and retried under a [`RetryPolicy`], transactions, one-page queries, and table
/// creation from a [`TableDefinition`].
///
/// **A lost answer.** The SDK sends an attempt again after a timeout, a `5xx` or a dropped
/// connection, each of which may follow a write that was carried out. A conditional write (a
/// `create`, a versioned `put` or `modify`, `put_if`, a guarded delete, a transaction) sent
/// again is refused by its own condition or, a transaction under the same `ClientRequestToken`,
/// answered as done; either way the caller of a write that may have been carried out is never
/// told "refused" nor "nothing written" ([`StoreError::is_refused_after_lost_answer`],
/// [`StoreError::may_have_applied`]). An `UpdateItem` with an increment or an append is never
/// sent again after such an attempt. An **unconditional** put or delete ([`Expect::Any`]: an entity without a version
/// field, a batch) is sent again, and may be carried out twice: when another client's write
/// lands between the two attempts, the second one overwrites it, and a reader can see the
/// record go `X`, `Y`, `X` within the one call that wrote `X`. That is not linearizable, and
/// it is left so: the record still ends as one writer's, `X`'s, as if `X`, which overlapped
/// `Y`, had been written after it (last writer wins), and refusing the re-send would make every
/// unconditional write fail on a transient error. Where the order matters, give the entity a
/// version field or write under a condition; or turn the SDK's retries off
/// ([`with_sdk_retries`](Self::with_sdk_retries) with 1 attempt) and decide after a failure
/// that may have applied. (`tests/tests/histories.rs` shows both: the histories of
/// conditional writes are linearizable under lost answers, the `X`, `Y`, `X` one is not.)
///
/// ```no_run
/// use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
/// use entity_manager_core::store::{DynamoStore, KeyType, TableDefinition};
///
/// # async fn run() -> Result<(), entity_manager_core::store::StoreError> {
/// let config = aws_sdk_dynamodb::Config::builder()
///     .behavior_version(BehaviorVersion::latest())
///     .endpoint_url("http://127.0.0.1:8000")
///     .region(Region::new("us-east-1"))
///     .credentials_provider(Credentials::new("local", "local", None, None, "static"))
///     .build();
/// let table = TableDefinition::new(("hashKey", KeyType::S), ("rangeKey", KeyType::S));
/// let store = DynamoStore::new(aws_sdk_dynamodb::Client::from_conf(config), "Users", table);
/// store.create_table().await?;
/// # Ok(()) }
/// # let _compiles = run();
/// ```
#[derive(Clone, Debug)]
#[cfg_attr(docsrs, doc(cfg(feature = "dynamodb")))]
pub struct DynamoStore {
    client: Client,
    /// `client` with the SDK's retries off, for the writes that must never be sent twice (an
    /// increment after a failure that may have applied it): made once with the client (it
    /// shares its connections), not configured again on every such call.
    unretried: Client,
    table_name: String,
    definition: TableDefinition,
    retry: RetryPolicy,
    /// The bound of a batch call without progress (and of a transaction's conflict retries):
    /// the operation timeout.
    batch_limit: Duration,
    consistent_read: bool,
    table_wait: Duration,
    /// The stamp check (read again once older than its interval), shared by clones.
    stamp_guard: std::sync::Arc<StampGuard>,
}

/// How the AWS SDK retries each single call of a [`DynamoStore`] (`GetItem`, `PutItem`,
/// `UpdateItem`, `DeleteItem`, `Query`, `Scan`, the transactions, each batch chunk): throttling
/// and transient errors only, with exponential backoff and jitter. Set with
/// [`DynamoStore::with_sdk_retries`]; by default the client's own retry configuration is kept,
/// which for a client without one is the SDK's *standard* mode with 3 attempts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(docsrs, doc(cfg(feature = "dynamodb")))]
pub enum SdkRetryMode {
    /// Exponential backoff with jitter and a retry quota (the SDK's default).
    Standard,
    /// Standard, plus client-side rate limiting that slows the client down under sustained
    /// throttling: for a service that keeps hitting one hot partition.
    Adaptive,
}

/// `client` with the [`Tracing`](trace::Tracing) interceptor (once: a client that has it keeps
/// its configuration).
fn with_tracing(client: Client) -> Client {
    use aws_sdk_dynamodb::config::Intercept as _;
    if client
        .config()
        .interceptors()
        .any(|i| i.name() == trace::TRACING)
    {
        return client;
    }
    // permanent: never disabled (the type is private), so the SDK skips the per-hook lookup
    // of a `DisableInterceptor<Tracing>` in every call's configuration
    let mut config = client.config().to_builder();
    config.push_interceptor(aws_sdk_dynamodb::config::SharedInterceptor::permanent(
        trace::Tracing,
    ));
    Client::from_conf(config.build())
}

/// `client` with the SDK's retries off (the same connections, interceptors and timeouts).
fn unretried(client: &Client) -> Client {
    use aws_sdk_dynamodb::config::retry::RetryConfig;
    Client::from_conf(
        client
            .config()
            .to_builder()
            .retry_config(RetryConfig::disabled())
            .build(),
    )
}

/// `client` with these limits (and the default connect timeout unless it has one).
fn with_timeouts(client: &Client, operation: Duration, attempt: Duration) -> Client {
    let config = client.config();
    let connect = config
        .timeout_config()
        .and_then(aws_sdk_dynamodb::config::timeout::TimeoutConfig::connect_timeout)
        .unwrap_or(DynamoStore::DEFAULT_CONNECT_TIMEOUT);
    let timeouts = aws_sdk_dynamodb::config::timeout::TimeoutConfig::builder()
        .connect_timeout(connect)
        .operation_timeout(operation)
        .operation_attempt_timeout(attempt.min(operation))
        .build();
    Client::from_conf(config.to_builder().timeout_config(timeouts).build())
}

impl DynamoStore {
    /// The default limit of one call, retries included: [`with_timeouts`](Self::with_timeouts).
    pub const DEFAULT_OPERATION_TIMEOUT: Duration = Duration::from_secs(30);
    /// The default limit of one attempt of a call.
    pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
    /// The default limit for opening a connection.
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

    /// The table `table_name`, laid out as `definition`, through `client`.
    ///
    /// Nothing hangs: unless the client's configuration sets an operation timeout, every call
    /// is given [`DEFAULT_OPERATION_TIMEOUT`](Self::DEFAULT_OPERATION_TIMEOUT) (30 s, retries
    /// included), [`DEFAULT_ATTEMPT_TIMEOUT`](Self::DEFAULT_ATTEMPT_TIMEOUT) per attempt and
    /// [`DEFAULT_CONNECT_TIMEOUT`](Self::DEFAULT_CONNECT_TIMEOUT) to connect; a call that runs
    /// out of time fails with [`StoreError::is_timeout`]. Set other limits with
    /// [`with_timeouts`](Self::with_timeouts).
    pub fn new(client: Client, table_name: impl Into<String>, definition: TableDefinition) -> Self {
        let operation_limit = |client: &Client| {
            client
                .config()
                .timeout_config()
                .and_then(aws_sdk_dynamodb::config::timeout::TimeoutConfig::operation_timeout)
                .unwrap_or(Self::DEFAULT_OPERATION_TIMEOUT)
        };
        let bounded = client
            .config()
            .timeout_config()
            .is_some_and(|t| t.operation_timeout().is_some());
        let client = with_tracing(client);
        let client = if bounded {
            client
        } else {
            with_timeouts(
                &client,
                Self::DEFAULT_OPERATION_TIMEOUT,
                Self::DEFAULT_ATTEMPT_TIMEOUT,
            )
        };
        let batch_limit = operation_limit(&client);
        Self {
            unretried: unretried(&client),
            client,
            batch_limit,
            table_name: table_name.into(),
            definition,
            retry: RetryPolicy::default(),
            consistent_read: false,
            table_wait: Duration::from_mins(10),
            stamp_guard: std::sync::Arc::default(),
        }
    }

    /// The table `table_name`, laid out as `definition`, through a client built from the shared
    /// AWS configuration: what `aws_config::load_defaults(BehaviorVersion::latest())` returns
    /// (the default credential chain, `AWS_PROFILE`, SSO, web identity, container and instance
    /// roles, `AWS_REGION`, `AWS_ENDPOINT_URL_DYNAMODB`), as every AWS tool reaches an account.
    ///
    /// The configuration's retry and timeout settings are kept; where it has no operation
    /// timeout, [`new`](Self::new)'s defaults apply. It does not panic: the features this crate
    /// enables give the client an HTTP client, a sleep and a behavior version when the
    /// configuration has none.
    ///
    /// ```
    /// use entity_manager_core::store::{DynamoStore, KeyType, SdkConfig, TableDefinition};
    ///
    /// // in a service: let sdk_config = aws_config::load_defaults(BehaviorVersion::latest()).await;
    /// let sdk_config = SdkConfig::builder().build();
    /// let table = TableDefinition::new(("hashKey", KeyType::S), ("rangeKey", KeyType::S));
    /// let store = DynamoStore::from_sdk_config(&sdk_config, "Users", table);
    /// assert_eq!(store.table_name(), "Users");
    /// ```
    pub fn from_sdk_config(
        config: &aws_types::SdkConfig,
        table_name: impl Into<String>,
        definition: TableDefinition,
    ) -> Self {
        Self::new(Client::new(config), table_name, definition)
    }

    /// Sets the time limits of every call: `operation` for a whole call (its retries included)
    /// and `attempt` for each attempt. A call that runs out of time fails with
    /// [`StoreError::is_timeout`].
    ///
    /// `operation` is also the one bound of a whole `batch_write` or `batch_get`, on time
    /// **without progress**: the call ends with a timeout error listing every request not
    /// confirmed done once `operation` passes with no request confirmed (the clock restarts
    /// at each answer that confirms one). Against a server that stopped answering a batch call
    /// so ends within `operation` of its last answer, whatever its size, while a healthy batch
    /// of any size is never cut. A bound on the whole duration could not do both: it would
    /// have to grow with the batch and the server's pace, and then leave a stopped server
    /// unnoticed for as long.
    #[must_use]
    pub fn with_timeouts(mut self, operation: Duration, attempt: Duration) -> Self {
        self.client = with_timeouts(&self.client, operation, attempt);
        self.unretried = unretried(&self.client);
        self.batch_limit = operation;
        self
    }

    /// Sets how the AWS SDK retries each single call: `mode` and the most attempts of one
    /// call (at least 1; 1 turns the SDK's retries off). Without it the client's configuration
    /// is kept ([`SdkRetryMode`] says the default). Batch leftovers and transaction conflicts
    /// are retried by the [`RetryPolicy`] on top ([`with_retry_policy`](Self::with_retry_policy)).
    #[must_use]
    pub fn with_sdk_retries(mut self, mode: SdkRetryMode, max_attempts: u32) -> Self {
        use aws_sdk_dynamodb::config::retry::RetryConfig;
        let retry = match mode {
            SdkRetryMode::Standard => RetryConfig::standard(),
            SdkRetryMode::Adaptive => RetryConfig::adaptive(),
        }
        .with_max_attempts(max_attempts.max(1));
        let config = self
            .client
            .config()
            .to_builder()
            .retry_config(retry)
            .build();
        self.client = Client::from_conf(config);
        self.unretried = unretried(&self.client);
        self
    }

    /// Sets how batch calls retry unprocessed requests.
    #[must_use]
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// Makes gets, batch gets and table queries strongly consistent (GSI queries cannot be).
    /// Off by default, as in `DynamoDB`.
    #[must_use]
    pub fn with_consistent_reads(mut self, consistent: bool) -> Self {
        self.consistent_read = consistent;
        self
    }

    /// Sets how long [`create_table`](Self::create_table) waits for the table and its indexes
    /// to become `ACTIVE` (10 minutes by default).
    #[must_use]
    pub fn with_table_wait(mut self, wait: Duration) -> Self {
        self.table_wait = wait;
        self
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The table name.
    pub fn table_name(&self) -> &str {
        &self.table_name
    }

    /// The retry policy of batch calls.
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.retry
    }

    /// The stamp item, read consistently.
    async fn read_stamp_item(&self) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table_name)
            .set_key(Some(to_aws(crate::table::stamp_key(&self.definition))))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| sdk_error("GetItem", e))?;
        out.item.map(|i| from_aws(i, "GetItem")).transpose()
    }

    /// The stamp check before `operation`: a write is refused when the table is stamped with
    /// other settings, or has no stamp and records whose keys are not this store's.
    async fn check_stamp(&self, operation: &'static str, write: bool) -> Result<(), StoreError> {
        self.stamp_guard
            .check(&self.definition, &self.table_name, operation, write, self)
            .await
    }

    /// How long this store trusts what it found about the table's stamp before reading it
    /// again (the stamp, and for a table without one a sample of its records): by default
    /// [`STAMP_RECHECK`](crate::store::STAMP_RECHECK), 60 s. A write refused by a condition
    /// reads it again at once. Clones share the check.
    ///
    /// ```
    /// # use entity_manager_core::store::{DynamoStore, TableDefinition, KeyType};
    /// # use std::time::Duration;
    /// # fn demo(client: entity_manager_core::store::aws_sdk_dynamodb::Client) {
    /// let store = DynamoStore::new(client, "Users", TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::S)))
    ///     .with_stamp_recheck(Duration::from_secs(10));
    /// assert_eq!(store.stamp_recheck(), Duration::from_secs(10));
    /// # }
    /// # let _ = demo;
    /// ```
    #[must_use]
    pub fn with_stamp_recheck(mut self, interval: Duration) -> Self {
        self.stamp_guard = std::sync::Arc::new(StampGuard::new(interval));
        self
    }

    /// The stamp re-check interval ([`with_stamp_recheck`](Self::with_stamp_recheck)).
    pub fn stamp_recheck(&self) -> Duration {
        self.stamp_guard.interval()
    }

    /// The most attempts the SDK makes of one call (its retry configuration; 3 by default).
    fn sdk_attempts(&self) -> u32 {
        self.client.config().retry_config().map_or(
            3,
            aws_sdk_dynamodb::config::retry::RetryConfig::max_attempts,
        )
    }

    async fn sleep(&self, delay: Duration) {
        // The client's sleep if it has one; else tokio's, the runtime the SDK runs on (a
        // client built from `Config::builder()` lists none, though the SDK sleeps with tokio's)
        match self.client.config().sleep_impl() {
            Some(sleep) => sleep.sleep(delay).await,
            None => tokio::time::sleep(delay).await,
        }
    }

    /// The expressions of a write to this table, rendered and checked.
    fn write_request(
        &self,
        operation: &'static str,
        update: Option<&Update>,
        expect: &Expect,
    ) -> Result<Request, StoreError> {
        Request::write(operation, &self.definition.hash_key.name, update, expect)
    }

    /// A `PutItem`. A condition that refuses an attempt sent again after one that may have
    /// applied is reported as such ([`settle`]) for the caller's own writes (`own`); the stamp's
    /// write reads the stamp again after any refusal.
    async fn put(&self, item: Item, expect: Expect, own: bool) -> Result<(), StoreError> {
        let r = self.write_request("PutItem", None, &expect)?;
        let (names, values) = substitutions_to_aws(r.expr);
        let calls = Counting::default();
        let out = self
            .client
            .put_item()
            .table_name(&self.table_name)
            .set_item(Some(to_aws(item)))
            .set_condition_expression(r.condition)
            .set_expression_attribute_names(names)
            .set_expression_attribute_values(values)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .return_consumed_capacity(written_capacity())
            .send()
            .counted(&calls)
            .await
            .map_err(|e| {
                let item = match e.as_service_error() {
                    Some(PutItemError::ConditionalCheckFailedException(c)) => c.item.clone(),
                    _ => None,
                };
                with_current(sdk_error("PutItem", e), item)
            })
            .map_err(|e| {
                if own {
                    settle(e, &calls, true)
                } else {
                    e.gave_up(calls.attempts(), true)
                }
            })?;
        consumed(out.consumed_capacity.as_ref());
        Ok(())
    }

    async fn update(
        &self,
        key: &Item,
        update: &Update,
        expect: Expect,
        returns: ReturnValues,
    ) -> Result<Option<Item>, StoreError> {
        const OP: &str = "UpdateItem";
        // rendered and checked before anything is sent; the first attempt sends it as it is,
        // an attempt sent again after throttling renders it again (no copy kept for a retry
        // that seldom comes)
        let mut rendered = Some(self.write_request(OP, Some(update), &expect)?);
        // An update that would change the record again if applied twice (an increment, an
        // append) is never sent again after a failure that may have applied it: the SDK's
        // retries are off for it, and only throttled attempts (refused before anything was
        // done) are sent again, by this loop, up to the SDK's attempts.
        let repeatable = update.is_repeatable();
        let mut attempts = 0;
        let out = loop {
            let r = match rendered.take() {
                Some(r) => r,
                None => self.write_request(OP, Some(update), &expect)?,
            };
            let (names, values) = substitutions_to_aws(r.expr);
            let client = if repeatable {
                &self.client
            } else {
                &self.unretried
            };
            let request = client
                .update_item()
                .table_name(&self.table_name)
                .set_key(Some(to_aws(key.clone())))
                .set_update_expression(r.update)
                .set_condition_expression(r.condition)
                .set_expression_attribute_names(names)
                .set_expression_attribute_values(values)
                .return_values(match returns {
                    ReturnValues::None => ReturnValue::None,
                    ReturnValues::AllOld => ReturnValue::AllOld,
                    ReturnValues::AllNew => ReturnValue::AllNew,
                    ReturnValues::UpdatedOld => ReturnValue::UpdatedOld,
                    ReturnValues::UpdatedNew => ReturnValue::UpdatedNew,
                })
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .return_consumed_capacity(written_capacity());
            let calls = Counting::default();
            let sent = request.send().counted(&calls).await;
            let e = match sent {
                Ok(out) => break out,
                Err(e) => e,
            };
            attempts += calls.attempts();
            let item = match e.as_service_error() {
                Some(UpdateItemError::ConditionalCheckFailedException(c)) => c.item.clone(),
                _ => None,
            };
            let e = with_current(sdk_error(OP, e), item);
            // after an attempt that may have applied, the outcome is not known: see `settle`
            if calls.may_have_applied_before() {
                return Err(e.after_unanswered_attempt(attempts, repeatable));
            }
            if !repeatable && e.is_throttled() && attempts < self.sdk_attempts() {
                crate::trace::retry();
                let pause = self
                    .retry
                    .backoff(attempts, super::batch::entropy(attempts));
                self.sleep(pause).await;
                continue;
            }
            return Err(e.gave_up(attempts, repeatable));
        };
        consumed(out.consumed_capacity.as_ref());
        out.attributes
            .filter(|a| !a.is_empty())
            .map(|a| from_aws(a, OP))
            .transpose()
    }

    async fn transact_read(&self, keys: Vec<Item>) -> Result<Vec<Option<Item>>, StoreError> {
        const OP: &str = "TransactGetItems";
        let gets = keys
            .into_iter()
            .map(|key| {
                Get::builder()
                    .table_name(&self.table_name)
                    .set_key(Some(to_aws(key)))
                    .build()
                    .map(|get| TransactGetItem::builder().get(get).build())
                    .map_err(|e| build_error(OP, e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let calls = Counting::default();
        let out = self
            .client
            .transact_get_items()
            .set_transact_items(Some(gets))
            .return_consumed_capacity(aws::ReturnConsumedCapacity::Total)
            .send()
            .counted(&calls)
            .await
            .map_err(|e| sdk_error(OP, e))
            .map_err(|e| e.gave_up(calls.attempts(), true))?;
        out.consumed_capacity()
            .iter()
            .for_each(|c| consumed(Some(c)));
        out.responses
            .unwrap_or_default()
            .into_iter()
            .map(|r| r.item.map(|i| from_aws(i, OP)).transpose())
            .collect()
    }

    async fn get(
        &self,
        key: &Item,
        projection: Option<&[String]>,
    ) -> Result<Option<Item>, StoreError> {
        let r = Request::read("GetItem", None, projection)?;
        let calls = Counting::default();
        let out = self
            .client
            .get_item()
            .table_name(&self.table_name)
            .set_key(Some(to_aws(key.clone())))
            .consistent_read(self.consistent_read)
            .set_projection_expression(r.projection)
            .set_expression_attribute_names(r.expr.names())
            .return_consumed_capacity(aws::ReturnConsumedCapacity::Total)
            .send()
            .counted(&calls)
            .await
            .map_err(|e| sdk_error("GetItem", e))
            .map_err(|e| e.gave_up(calls.attempts(), true))?;
        consumed(out.consumed_capacity.as_ref());
        out.item.map(|i| from_aws(i, "GetItem")).transpose()
    }

    async fn delete(&self, key: &Item, expect: Expect) -> Result<(), StoreError> {
        let r = self.write_request("DeleteItem", None, &expect)?;
        let (names, values) = substitutions_to_aws(r.expr);
        let calls = Counting::default();
        let out = self
            .client
            .delete_item()
            .table_name(&self.table_name)
            .set_key(Some(to_aws(key.clone())))
            .set_condition_expression(r.condition)
            .set_expression_attribute_names(names)
            .set_expression_attribute_values(values)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .return_consumed_capacity(written_capacity())
            .send()
            .counted(&calls)
            .await
            .map_err(|e| {
                let item = match e.as_service_error() {
                    Some(DeleteItemError::ConditionalCheckFailedException(c)) => c.item.clone(),
                    _ => None,
                };
                with_current(sdk_error("DeleteItem", e), item)
            })
            .map_err(|e| settle(e, &calls, true))?;
        consumed(out.consumed_capacity.as_ref());
        Ok(())
    }

    /// One `TransactWriteItems` call under the idempotency token `token`, its attempts
    /// counted into `calls` (shared by the calls of one [`Store::transact_write`]). A
    /// cancellation by a conflict alone is returned as it is (the caller decides whether to
    /// send it again); any other failure is settled ([`settle`]) over every attempt in `calls`.
    #[allow(clippy::too_many_lines)] // one builder per kind of operation
    async fn transact(
        &self,
        writes: Vec<TransactWrite>,
        token: &str,
        calls: &Counting,
    ) -> Result<(), StoreError> {
        const OP: &str = "TransactWriteItems";
        check_transaction_shape(&writes)?;
        let mut items = Vec::with_capacity(writes.len());
        for write in writes {
            let item = match write {
                TransactWrite::Put { item, expect } => {
                    let r = self.write_request(OP, None, &expect)?;
                    TransactWriteItem::builder().put(
                        Put::builder()
                            .table_name(&self.table_name)
                            .set_item(Some(to_aws(item)))
                            .set_condition_expression(r.condition)
                            .set_expression_attribute_names(r.expr.names())
                            .set_expression_attribute_values(values_to_aws(&r.expr))
                            .return_values_on_condition_check_failure(ALL_OLD)
                            .build()
                            .map_err(|e| build_error(OP, e))?,
                    )
                }
                TransactWrite::Delete { key, expect } => {
                    let r = self.write_request(OP, None, &expect)?;
                    TransactWriteItem::builder().delete(
                        Delete::builder()
                            .table_name(&self.table_name)
                            .set_key(Some(to_aws(key)))
                            .set_condition_expression(r.condition)
                            .set_expression_attribute_names(r.expr.names())
                            .set_expression_attribute_values(values_to_aws(&r.expr))
                            .return_values_on_condition_check_failure(ALL_OLD)
                            .build()
                            .map_err(|e| build_error(OP, e))?,
                    )
                }
                TransactWrite::Update {
                    key,
                    update,
                    expect,
                } => {
                    let r = self.write_request(OP, Some(&update), &expect)?;
                    TransactWriteItem::builder().update(
                        aws::Update::builder()
                            .table_name(&self.table_name)
                            .set_key(Some(to_aws(key)))
                            .set_update_expression(r.update)
                            .set_condition_expression(r.condition)
                            .set_expression_attribute_names(r.expr.names())
                            .set_expression_attribute_values(values_to_aws(&r.expr))
                            .return_values_on_condition_check_failure(ALL_OLD)
                            .build()
                            .map_err(|e| build_error(OP, e))?,
                    )
                }
                TransactWrite::Check { key, expect } => {
                    let r = self.write_request(OP, None, &expect)?;
                    TransactWriteItem::builder().condition_check(
                        ConditionCheck::builder()
                            .table_name(&self.table_name)
                            .set_key(Some(to_aws(key)))
                            .set_condition_expression(r.condition)
                            .set_expression_attribute_names(r.expr.names())
                            .set_expression_attribute_values(values_to_aws(&r.expr))
                            .return_values_on_condition_check_failure(ALL_OLD)
                            .build()
                            .map_err(|e| build_error(OP, e))?,
                    )
                }
            };
            items.push(item.build());
        }
        let result = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .client_request_token(token)
            .return_consumed_capacity(written_capacity())
            .send()
            .counted(calls)
            .await;
        match result {
            Ok(out) => {
                out.consumed_capacity()
                    .iter()
                    .for_each(|c| consumed(Some(c)));
                Ok(())
            }
            Err(err) => {
                if let Some(TransactWriteItemsError::TransactionCanceledException(e)) =
                    err.as_service_error()
                {
                    let reasons = e
                        .cancellation_reasons()
                        .iter()
                        .map(|r| CancellationReason {
                            code: r.code().filter(|c| *c != "None").map(str::to_owned),
                            message: r.message().map(str::to_owned),
                            item: r
                                .item
                                .clone()
                                .and_then(|i| from_aws(i, OP).ok())
                                .filter(|i| !i.is_empty()),
                        })
                        .collect();
                    let e = StoreError::transaction_canceled(OP, reasons)
                        .with_code("TransactionCanceledException")
                        .with_source(err);
                    if e.is_transaction_conflict() {
                        return Err(e);
                    }
                    // a replay under the idempotency token of a transaction that was carried
                    // out succeeds on DynamoDB; a server that does not keep tokens refuses it
                    return Err(settle(e, calls, true));
                }
                // sent again by the SDK under its idempotency token (ClientRequestToken); a
                // server error the SDK gave up on is the caller's to send again
                let e = sdk_error(OP, err);
                if server_error(&e) {
                    return Err(e);
                }
                Err(settle(e, calls, true))
            }
        }
    }

    async fn query(&self, request: &QueryPage) -> Result<Page, StoreError> {
        const OP: &str = "Query";
        let table = (
            vec![&self.definition.hash_key],
            vec![&self.definition.range_key],
        );
        let (hash, range) = match &request.index {
            None => table,
            Some(name) => match self.definition.index_key_lists(name) {
                Some(keys) => keys,
                // Let DynamoDB report the unknown index (the table may have more indexes than
                // this definition lists); key names are then guessed as the table's.
                None => table,
            },
        };
        super::shape::check_key_condition(request, &hash, &range)?;
        let hash: Vec<&str> = hash.iter().map(|a| a.name.as_str()).collect();
        let range: Vec<&str> = range.iter().map(|a| a.name.as_str()).collect();
        let r = Request::query(OP, request, &hash, &range)?;
        let limit = request.limit.map(|l| wire_limit(OP, l)).transpose()?;
        let calls = Counting::default();
        let out = self
            .client
            .query()
            .table_name(&self.table_name)
            .set_index_name(request.index.clone())
            .set_key_condition_expression(r.key_condition)
            .set_filter_expression(r.filter)
            .set_projection_expression(r.projection)
            .set_expression_attribute_names(r.expr.names())
            .set_expression_attribute_values(values_to_aws(&r.expr))
            .set_limit(limit)
            .set_exclusive_start_key(request.exclusive_start_key.clone().map(to_aws))
            .scan_index_forward(!request.descending)
            .set_consistent_read((self.consistent_read && request.index.is_none()).then_some(true))
            .return_consumed_capacity(aws::ReturnConsumedCapacity::Total)
            .send()
            .counted(&calls)
            .await
            .map_err(|e| sdk_error(OP, e))
            .map_err(|e| e.gave_up(calls.attempts(), true))?;
        consumed(out.consumed_capacity.as_ref());
        Ok(Page {
            consumed_capacity: out
                .consumed_capacity
                .as_ref()
                .and_then(|c| c.capacity_units),
            items: from_aws_all(out.items.unwrap_or_default(), OP)?,
            last_evaluated_key: out
                .last_evaluated_key
                .map(|k| from_aws(k, OP))
                .transpose()?,
        })
    }
}

/// A page limit as the SDK takes it (`i32`).
fn wire_limit<N: Copy + std::fmt::Display>(
    operation: &'static str,
    limit: N,
) -> Result<i32, StoreError>
where
    i32: TryFrom<N>,
{
    i32::try_from(limit).map_err(|_| {
        StoreError::validation(
            operation,
            format!(
                "limit {limit} is above the largest DynamoDB accepts ({})",
                i32::MAX
            ),
        )
    })
}

impl DynamoStore {
    async fn scan(&self, request: &ScanPage) -> Result<Page, StoreError> {
        const OP: &str = "Scan";
        request.check()?;
        let r = Request::read(OP, request.filter.as_ref(), None)?;
        let limit = request.limit.map(|l| wire_limit(OP, l)).transpose()?;
        // one segment is the whole table: sent without Segment/TotalSegments
        let (segment, total) = if request.total_segments > 1 {
            let as_i32 = |n: u32| {
                i32::try_from(n).map_err(|_| {
                    StoreError::validation(OP, format!("segment number {n} is out of range"))
                })
            };
            (
                Some(as_i32(request.segment)?),
                Some(as_i32(request.total_segments)?),
            )
        } else {
            (None, None)
        };
        let calls = Counting::default();
        let out = self
            .client
            .scan()
            .table_name(&self.table_name)
            .set_segment(segment)
            .set_total_segments(total)
            .set_filter_expression(r.filter)
            .set_expression_attribute_names(r.expr.names())
            .set_expression_attribute_values(values_to_aws(&r.expr))
            .set_limit(limit)
            .set_exclusive_start_key(request.exclusive_start_key.clone().map(to_aws))
            .set_consistent_read((request.consistent || self.consistent_read).then_some(true))
            .return_consumed_capacity(if request.capacity {
                aws::ReturnConsumedCapacity::Total
            } else {
                written_capacity()
            })
            .send()
            .counted(&calls)
            .await
            .map_err(|e| sdk_error(OP, e))
            .map_err(|e| e.gave_up(calls.attempts(), true))?;
        consumed(out.consumed_capacity.as_ref());
        let mut items = from_aws_all(out.items.unwrap_or_default(), OP)?;
        // the table stamp is no record
        items.retain(|item| !crate::table::is_stamp(item, &self.definition));
        Ok(Page {
            consumed_capacity: out
                .consumed_capacity
                .as_ref()
                .and_then(|c| c.capacity_units),
            items,
            last_evaluated_key: out
                .last_evaluated_key
                .map(|k| from_aws(k, OP))
                .transpose()?,
        })
    }
}

const ALL_OLD: ReturnValuesOnConditionCheckFailure = ReturnValuesOnConditionCheckFailure::AllOld;

/// A new `ClientRequestToken` for `TransactWriteItems` (at most 36 characters): 32 hex digits
/// from the process's random hasher keys, the clock and a counter, so that no two transactions
/// of any process share one within `DynamoDB`'s 10 minutes.
fn idempotency_token() -> String {
    use std::hash::BuildHasher as _;
    use std::sync::atomic::{AtomicU64, Ordering};
    static SENT: AtomicU64 = AtomicU64::new(0);
    let n = SENT.fetch_add(1, Ordering::Relaxed);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let state = std::collections::hash_map::RandomState::new();
    format!(
        "{:016x}{:016x}",
        state.hash_one((n, now)),
        state.hash_one((now, n, 1u8))
    )
}

/// A failure of the server that the SDK's retries did not get past and that sending the
/// call again may: a `5xx` or a transient error code (`InternalServerError`,
/// `TransactionInProgressException`…), not a timeout (the call's time is spent) nor a
/// throttle (a [`RateLimited`](super::RateLimited) store's backoff is for those).
fn server_error(e: &StoreError) -> bool {
    e.kind() == super::StoreErrorKind::Transient && e.code().is_some()
}

/// The error a single write call ends with, from what its attempts did. After an attempt that
/// ended without an answer (and so may have been applied), the call's outcome is not known,
/// whatever the last attempt met ([`StoreError::after_unanswered_attempt`]): a condition that
/// refused the attempt sent again may have refused it because of that very write
/// ([`StoreError::is_refused_after_lost_answer`]; not a `create` that reports `AlreadyExists`
/// for its own record, nor a `modify` that reads its own change back and applies it again),
/// and an attempt throttled or canceled by a conflict says nothing of the earlier one (not a
/// failure that "wrote nothing", nor a transaction sent again under a new idempotency token).
/// Otherwise the error says how the call gave up ([`StoreError::gave_up`]).
fn settle(error: StoreError, calls: &Counting, repeatable: bool) -> StoreError {
    if calls.may_have_applied_before() {
        error.after_unanswered_attempt(calls.attempts(), repeatable)
    } else {
        error.gave_up(calls.attempts(), repeatable)
    }
}

/// Attaches the current item a failed condition returned.
fn with_current(
    error: StoreError,
    item: Option<std::collections::HashMap<String, aws::AttributeValue>>,
) -> StoreError {
    let item = item
        .filter(|i| !i.is_empty())
        .and_then(|i| from_aws(i, error.operation()).ok());
    error.with_item(item)
}

impl BatchSender for DynamoStore {
    async fn send_write_batch(
        &self,
        batch: Vec<WriteRequest>,
    ) -> Result<Vec<WriteRequest>, StoreError> {
        {
            const OP: &str = "BatchWriteItem";
            let requests = batch
                .into_iter()
                .map(|w| match w {
                    WriteRequest::Put(item) => PutRequest::builder()
                        .set_item(Some(to_aws(item)))
                        .build()
                        .map(|p| aws::WriteRequest::builder().put_request(p).build()),
                    WriteRequest::Delete(key) => DeleteRequest::builder()
                        .set_key(Some(to_aws(key)))
                        .build()
                        .map(|d| aws::WriteRequest::builder().delete_request(d).build()),
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| build_error(OP, e))?;
            let calls = Counting::default();
            let out = self
                .client
                .batch_write_item()
                .request_items(&self.table_name, requests)
                .return_consumed_capacity(written_capacity())
                .send()
                .counted(&calls)
                .await
                .map_err(|e| {
                    // a last attempt throttled says nothing of an earlier one whose answer
                    // was lost: the chunk may have been written
                    let e = sdk_error(OP, e);
                    if calls.may_have_applied_before() {
                        e.after_unanswered_attempt(calls.attempts(), true)
                    } else {
                        e
                    }
                })?;
            out.consumed_capacity()
                .iter()
                .for_each(|c| consumed(Some(c)));
            let unprocessed = out
                .unprocessed_items
                .and_then(|mut m| m.remove(&self.table_name))
                .unwrap_or_default();
            unprocessed
                .into_iter()
                .filter_map(|w| match (w.put_request, w.delete_request) {
                    (Some(p), _) => Some(from_aws(p.item, OP).map(WriteRequest::Put)),
                    (None, Some(d)) => Some(from_aws(d.key, OP).map(WriteRequest::Delete)),
                    (None, None) => None,
                })
                .collect()
        }
    }

    async fn send_get_batch(
        &self,
        keys: Vec<Item>,
        projection: Option<&[String]>,
    ) -> Result<GetBatch, StoreError> {
        {
            const OP: &str = "BatchGetItem";
            let r = Request::read(OP, None, projection)?;
            let request = KeysAndAttributes::builder()
                .set_keys(Some(keys.into_iter().map(to_aws).collect()))
                .set_projection_expression(r.projection)
                .set_expression_attribute_names(r.expr.names())
                .set_consistent_read(self.consistent_read.then_some(true))
                .build()
                .map_err(|e| build_error(OP, e))?;
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table_name, request)
                .return_consumed_capacity(aws::ReturnConsumedCapacity::Total)
                .send()
                .await
                .map_err(|e| sdk_error(OP, e))?;
            out.consumed_capacity()
                .iter()
                .for_each(|c| consumed(Some(c)));
            let items = out
                .responses
                .and_then(|mut m| m.remove(&self.table_name))
                .unwrap_or_default();
            let unprocessed = out
                .unprocessed_keys
                .and_then(|mut m| m.remove(&self.table_name))
                .map(|k| k.keys)
                .unwrap_or_default();
            Ok(GetBatch {
                items: from_aws_all(items, OP)?,
                unprocessed: from_aws_all(unprocessed, OP)?,
            })
        }
    }

    fn pause(&self, delay: Duration) -> impl Future<Output = ()> + Send {
        self.sleep(delay)
    }

    fn time_limit(&self) -> Option<Duration> {
        Some(self.batch_limit)
    }
}

/// What a write asks `DynamoDB` to report of the capacity it consumed: `TOTAL` when an
/// operation span records it (a `tracing` subscriber listens to target `entity_manager` at
/// level `INFO`), else `NONE`. Nothing else reads a write's consumed capacity (the rate limit
/// counts write units itself), and `DynamoDB` Local spends about a quarter of a bulk job's time
/// computing it (BENCHMARKS.md, bulk jobs); reads ask, for the rate limit and query
/// statistics, but for a scan page that says it does not need it
/// ([`ScanPage::capacity`](super::ScanPage::capacity)), which asks as a write does.
fn written_capacity() -> aws::ReturnConsumedCapacity {
    if tracing::enabled!(target: "entity_manager", tracing::Level::INFO) {
        aws::ReturnConsumedCapacity::Total
    } else {
        aws::ReturnConsumedCapacity::None
    }
}

impl StampIo for DynamoStore {
    fn read_stamp(&self) -> impl Future<Output = Result<Option<Item>, StoreError>> + Send {
        self.read_stamp_item()
    }

    async fn sample(&self, limit: usize) -> Result<Vec<Item>, StoreError> {
        let limit = u32::try_from(limit).unwrap_or(u32::MAX);
        Ok(self.scan(&ScanPage::new().limit(limit)).await?.items)
    }

    fn write_stamp(&self, item: Item) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.put(item, Expect::Absent, false)
    }
}

impl Store for DynamoStore {
    fn definition(&self) -> &TableDefinition {
        &self.definition
    }

    fn name(&self) -> Option<&str> {
        Some(&self.table_name)
    }

    async fn put_item(&self, item: Item, expect: Expect) -> Result<(), StoreError> {
        self.check_stamp("PutItem", true).await?;
        self.stamp_guard.note(self.put(item, expect, true).await)
    }

    async fn get_item(
        &self,
        key: &Item,
        projection: Option<&[String]>,
    ) -> Result<Option<Item>, StoreError> {
        self.check_stamp("GetItem", false).await?;
        self.get(key, projection).await
    }

    async fn delete_item(&self, key: &Item, expect: Expect) -> Result<(), StoreError> {
        self.check_stamp("DeleteItem", true).await?;
        self.stamp_guard.note(self.delete(key, expect).await)
    }

    async fn batch_write(&self, writes: Vec<WriteRequest>) -> Result<(), BatchWriteError> {
        if let Err(e) = self.check_stamp("BatchWriteItem", true).await {
            let total = writes.len();
            return Err(BatchWriteError::new(writes, total, e));
        }
        write_batches(self, writes, &self.retry).await
    }

    async fn batch_get(
        &self,
        keys: Vec<Item>,
        projection: Option<&[String]>,
    ) -> Result<Vec<Item>, BatchGetError> {
        // a read: the check only warns, and never fails
        let _ = self.check_stamp("BatchGetItem", false).await;
        get_batches(self, keys, projection, &self.retry).await
    }

    async fn transact_write(&self, writes: Vec<TransactWrite>) -> Result<(), StoreError> {
        self.check_stamp("TransactWriteItems", true).await?;
        // A transaction canceled by a conflict wrote nothing: it is sent again under the retry
        // policy, within the batch time limit, under a new idempotency token. One that failed
        // with a server error after the SDK's own attempts (a `500 InternalServerError`, such
        // as DynamoDB Local's lock timeout; `TransactionInProgressException`) is sent again
        // the same way, under the same token. After an attempt whose answer was lost (it may
        // have been carried out: a `5xx` included), it is sent again under the same token, as
        // the SDK's own retries are: DynamoDB (and DynamoDB Local) then answers a transaction
        // it carried out as done, without carrying it out again (an increment included); a
        // refusal by its own condition is settled as a write that may have applied (`settle`,
        // over the attempts of every call of this loop).
        let calls = Counting::default();
        let mut token = idempotency_token();
        let started = std::time::Instant::now();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let e = match self
                .stamp_guard
                .note(self.transact(writes.clone(), &token, &calls).await)
            {
                Err(e) if e.is_transaction_conflict() || server_error(&e) => e,
                other => return other,
            };
            let lost = calls.may_have_applied_before();
            let pause = self.retry.backoff(attempt, super::batch::entropy(attempt));
            if attempt >= self.retry.max_attempts.max(1)
                || started.elapsed() + pause >= self.batch_limit
            {
                return Err(settle(e, &calls, true));
            }
            if !lost {
                token = idempotency_token();
            }
            crate::trace::retry();
            self.sleep(pause).await;
        }
    }

    async fn update_item(
        &self,
        key: &Item,
        update: &Update,
        expect: Expect,
        returns: ReturnValues,
    ) -> Result<Option<Item>, StoreError> {
        self.check_stamp("UpdateItem", true).await?;
        self.stamp_guard
            .note(self.update(key, update, expect, returns).await)
    }

    async fn transact_get(&self, keys: Vec<Item>) -> Result<Vec<Option<Item>>, StoreError> {
        self.check_stamp("TransactGetItems", false).await?;
        self.transact_read(keys).await
    }

    async fn query_page(&self, request: &QueryPage) -> Result<Page, StoreError> {
        self.check_stamp("Query", false).await?;
        self.query(request).await
    }

    fn scan_page(
        &self,
        request: &ScanPage,
    ) -> impl Future<Output = Result<Page, StoreError>> + Send {
        self.scan(request)
    }
}
