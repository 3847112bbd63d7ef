//! The storage seam: one async trait, implemented by the in-memory store and the `DynamoDB` store.
//!
//! [`Store`] is the only way the rest of the crate reaches stored items. It has two
//! implementations that pass one conformance suite:
//!
//! - [`MemoryStore`]: the embedded default, with `DynamoDB` semantics where they matter (byte
//!   order for strings and binary, numeric order for numbers, `Limit` counted before the
//!   filter, `LastEvaluatedKey` = table keys + index keys, sparse and projected GSIs);
//! - `DynamoStore` (feature `dynamodb`): the same calls over `aws-sdk-dynamodb`.
//!
//! Both are built from a [`TableDefinition`], which is derived from the entities
//! ([`TableDefinition::from_schema`]) and also renders the `CreateTable` request and the
//! `CloudFormation` resource.
//!
//! Items are [`Item`]s (`serde_dynamo`'s attribute maps). Every error is a [`StoreError`], an
//! opaque type with predicates, except the batch calls, whose typed errors
//! ([`BatchWriteError`], [`BatchGetError`]) list exactly the requests that were not carried out.
//!
//! ```
//! use entity_manager_core::store::{
//!     Expect, KeyType, MemoryStore, QueryPage, RangeCondition, Store, TableDefinition,
//! };
//! use entity_manager_core::{AttributeValue, Item};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = MemoryStore::new(TableDefinition::new(("hashKey", KeyType::S), ("rangeKey", KeyType::S)));
//! for (range, n) in [("b", "2"), ("a", "1"), ("c", "3")] {
//!     let item: Item = [
//!         ("hashKey".to_owned(), AttributeValue::S("user!1".into())),
//!         ("rangeKey".to_owned(), AttributeValue::S(range.into())),
//!         ("n".to_owned(), AttributeValue::N(n.into())),
//!     ]
//!     .into_iter()
//!     .collect::<std::collections::HashMap<_, _>>()
//!     .into();
//!     store.put_item(item, Expect::Any).await?;
//! }
//! let page = store
//!     .query_page(
//!         &QueryPage::new(AttributeValue::S("user!1".into()))
//!             .range(RangeCondition::Ge(AttributeValue::S("b".into())))
//!             .limit(1),
//!     )
//!     .await?;
//! assert_eq!(page.items.len(), 1);
//! assert_eq!(page.items[0]["n"], AttributeValue::N("2".into()));
//! assert!(page.last_evaluated_key.is_some()); // the limit was reached: there may be more
//! # Ok(())
//! # }
//! ```

use std::future::Future;

use serde_dynamo::Item;

mod batch;
#[cfg(feature = "dynamodb")]
mod dynamo;
mod error;
pub(crate) mod expression;
mod faults;
mod memory;
mod rate;
mod request;
mod shape;
mod stamp;
pub(crate) mod verdict;
pub use stamp::STAMP_RECHECK;
pub(crate) mod update;
pub(crate) mod value;

pub use crate::key_type::KeyType;
pub use batch::{MAX_BATCH_GET, MAX_BATCH_WRITE, RetryPolicy};

/// The size `DynamoDB` counts for an item against its 400 KB limit
/// ([`MAX_ITEM_BYTES`](crate::limits::MAX_ITEM_BYTES)): every attribute's name plus its value
/// (strings and binaries their bytes, numbers their digits, sets, lists and maps their members).
/// Both stores refuse a write of a larger item; check it first to refuse one record of many.
///
/// ```
/// use entity_manager_core::limits::MAX_ITEM_BYTES;
/// use entity_manager_core::store::item_size;
/// use entity_manager_core::{AttributeValue, Item};
///
/// let mut item = Item::default();
/// item.insert("id".into(), AttributeValue::S("u1".into()));
/// assert_eq!(item_size(&item), 4); // "id" and "u1"
/// item.insert("blob".into(), AttributeValue::B(vec![0; MAX_ITEM_BYTES]));
/// assert!(item_size(&item) > MAX_ITEM_BYTES);
/// ```
#[must_use]
pub fn item_size(item: &crate::Item) -> usize {
    value::item_bytes(item)
}
// The batch loops `DynamoStore` runs, exposed for the fault-injection tests only.
/// The AWS SDK for `DynamoDB` this crate is built on, at the version [`DynamoStore`] takes: build
/// the client of [`DynamoStore::new`] or make raw calls with it, with no second
/// `aws-sdk-dynamodb` to keep in step. Its `types::AttributeValue` is the SDK's, not
/// [`AttributeValue`](crate::AttributeValue) (`serde_dynamo`'s); `.into()` converts either way.
#[cfg(feature = "dynamodb")]
#[cfg_attr(docsrs, doc(cfg(feature = "dynamodb")))]
pub use aws_sdk_dynamodb;
/// The shared AWS configuration `aws_config::load_defaults` returns (credentials chain, profile,
/// region, endpoint, retry and timeouts), for [`DynamoStore::from_sdk_config`]. It is
/// `aws_types::SdkConfig`, the type `aws-config` 1.x re-exports.
#[cfg(feature = "dynamodb")]
#[cfg_attr(docsrs, doc(cfg(feature = "dynamodb")))]
pub use aws_types::SdkConfig;
#[doc(hidden)]
pub use batch::{BatchSender, GetBatch, get_batches, write_batches};
#[cfg(feature = "dynamodb")]
pub use dynamo::{DynamoStore, SdkRetryMode};
// SDK errors as `StoreError`s, for the stream reader (`stream::StreamReader`)
#[cfg(feature = "streams")]
pub(crate) use dynamo::convert::sdk_error;
pub use error::{
    BatchGetError, BatchWriteError, CancellationReason, ExpressionTooLarge, StoreError,
    StoreErrorKind,
};
pub use faults::{FaultCounts, FaultPlan, Operation};
pub use memory::MemoryStore;
pub use rate::Bucket;
#[cfg(feature = "dynamodb")]
pub use rate::{RateLimit, RateLimited, RateUnit, Usage};
pub use request::{
    AttributeType, Comparison, Expect, Filter, MAX_SCAN_SEGMENTS, Page, QueryPage, RangeCondition,
    ReturnValues, ScanPage, TransactWrite, Update, UpdateAction, WriteRequest,
};
// the table's definition, drift check and stamp (`crate::table`), at the paths the stores take
pub use crate::table::{
    Billing, Capacity, Drift, DriftReport, GlobalIndex, IndexKind, Inference, KeyAttribute,
    KeySchemaNames, LiveTable, LocalIndex, MAX_STAMP_SCHEMA_BYTES, SAMPLE_MAX, SAMPLE_PER_ENTITY,
    STAMP_ATTRIBUTE, STAMP_HASH_KEY, STAMP_MISMATCH_CODE, STAMP_RANGE_KEY, Setting, StreamView,
    TableDefinition, TableDefinitionError, TableStamp, is_stamp, stamp_key,
};

/// The storage trait: the calls the entity manager makes on one table.
///
/// Methods return `Send` futures, so callers may drive many at once (the cross-shard query
/// keeps up to `throttle` `query_page` calls in flight). All stores behave alike on every
/// input the conformance suite covers, including their validation errors.
pub trait Store: Send + Sync {
    /// The table this store reads and writes.
    fn definition(&self) -> &TableDefinition;

    /// The table's name, when the store has one (a `DynamoStore`: its table name; a
    /// `MemoryStore`: none). Page tokens of cross-shard queries are bound to it, so that a token
    /// of one table does not continue a query on another. Stores that wrap another forward it.
    fn name(&self) -> Option<&str> {
        None
    }

    /// Puts (creates or replaces) an item, if `expect` holds for the current item with its key;
    /// otherwise fails with [`StoreError::is_conditional_check_failed`].
    fn put_item(
        &self,
        item: Item,
        expect: Expect,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Reads the item with this key (the table's hash and range key attributes), or only the
    /// `projection` attributes of it.
    fn get_item(
        &self,
        key: &Item,
        projection: Option<&[String]>,
    ) -> impl Future<Output = Result<Option<Item>, StoreError>> + Send;

    /// Deletes the item with this key, if `expect` holds (deleting a missing item with
    /// [`Expect::Any`] succeeds).
    fn delete_item(
        &self,
        key: &Item,
        expect: Expect,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Puts and deletes many items, in chunks of [`MAX_BATCH_WRITE`], retrying unprocessed
    /// requests with backoff. The requests of one chunk must name distinct keys. Not atomic: the
    /// error lists exactly the requests that were not carried out.
    fn batch_write(
        &self,
        writes: Vec<WriteRequest>,
    ) -> impl Future<Output = Result<(), BatchWriteError>> + Send;

    /// Reads many items by key, in chunks of [`MAX_BATCH_GET`], retrying unprocessed keys with
    /// backoff. The keys of one chunk must be distinct. Items come back in no particular order;
    /// missing items are simply absent. The error lists exactly the keys that were not read.
    fn batch_get(
        &self,
        keys: Vec<Item>,
        projection: Option<&[String]>,
    ) -> impl Future<Output = Result<Vec<Item>, BatchGetError>> + Send;

    /// Carries out every operation or none (at most 100, on distinct items). When a condition
    /// fails, the error is [`StoreError::is_transaction_canceled`] with one
    /// [`CancellationReason`] per operation.
    fn transact_write(
        &self,
        writes: Vec<TransactWrite>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Updates the item with this key if `expect` holds, creating it (with its key and the
    /// set attributes) when it is missing, like `UpdateItem`. Returns what `returns` asks for
    /// (`None` for [`ReturnValues::None`], and for [`ReturnValues::AllOld`] when there was no
    /// item). The updated item obeys the same rules as a put: key types, index key types,
    /// key and item sizes.
    fn update_item(
        &self,
        key: &Item,
        update: &Update,
        expect: Expect,
        returns: ReturnValues,
    ) -> impl Future<Output = Result<Option<Item>, StoreError>> + Send;

    /// Reads up to 100 distinct items by key in one consistent snapshot; the result has one
    /// entry per key, in order (`None` for a missing item).
    fn transact_get(
        &self,
        keys: Vec<Item>,
    ) -> impl Future<Output = Result<Vec<Option<Item>>, StoreError>> + Send;

    /// Queries one page of one partition of the table or of a GSI.
    fn query_page(
        &self,
        request: &QueryPage,
    ) -> impl Future<Output = Result<Page, StoreError>> + Send;

    /// Scans one page of one segment of the table (`DynamoDB` `Scan` with `Segment` and
    /// `TotalSegments`): see [`ScanPage`]. The segments of one `total_segments` are disjoint
    /// and together hold every item; a segment's pages, followed with `last_evaluated_key`,
    /// return each of its items once.
    ///
    /// [`MemoryStore`] and `DynamoStore` implement it. The provided implementation fails with
    /// a [`StoreErrorKind::Other`] error saying that the store cannot scan, so that stores
    /// written before this method existed (test doubles, wrappers) keep compiling; a wrapper
    /// should forward it.
    fn scan_page(
        &self,
        request: &ScanPage,
    ) -> impl Future<Output = Result<Page, StoreError>> + Send {
        let _ = request;
        std::future::ready(Err(StoreError::new(
            StoreErrorKind::Other,
            "Scan",
            "this store does not implement `Store::scan_page`; implement it (a wrapper forwards it to the store it wraps)",
        )))
    }
}
