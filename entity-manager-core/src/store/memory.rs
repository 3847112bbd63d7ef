//! [`MemoryStore`]: the embedded store, with `DynamoDB` semantics where they matter.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::ops::Bound;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use serde_dynamo::{AttributeValue, Item};

use super::batch::{BatchSender, GetBatch, RetryPolicy, get_batches, write_batches};
use super::expression::Request;
use super::faults::{After, Faults};
use super::shape::{MAX_TRANSACTION, check_transaction_shape};
use super::value::{self, Scalar, check_filter, normalize};
use super::{
    BatchGetError, BatchWriteError, CancellationReason, Expect, FaultCounts, FaultPlan,
    GlobalIndex, KeyAttribute, Operation, Page, QueryPage, RangeCondition, ReturnValues, ScanPage,
    Store, StoreError, StoreErrorKind, TableDefinition, TransactWrite, Update, WriteRequest,
    update,
};
use crate::limits::{
    KeyRole, MAX_ITEM_BYTES, MAX_PAGE_BYTES, MAX_PARTITION_KEY_BYTES, MAX_SORT_KEY_BYTES,
};
use crate::table::fnv1a;

/// A position in an index partition: (index sort attribute values in key order, table hash
/// key, table range key). A tuple of sort values orders lexicographically, each attribute by its
/// type's order: `DynamoDB`'s order of a multi-attribute sort key.
type SortKey = (Vec<Scalar>, PrimaryKey);
/// The primary key of an item.
type PrimaryKey = (Scalar, Scalar);
/// One index: partition attribute values (in key order) → the positions of its items, each
/// with the item (shared with the table's map: a query reads it without looking it up).
type IndexMap = BTreeMap<Vec<Scalar>, BTreeMap<SortKey, Arc<Stored>>>;

/// An in-memory table with `DynamoDB` semantics: the embedded default store.
///
/// - Strings and binary compare by bytes, numbers numerically (as exact decimals; numbers are
///   stored in the canonical form `DynamoDB` returns, so `1.50` reads back as `1.5`).
/// - A query's `limit` counts the items evaluated before the filter; the page's
///   `last_evaluated_key` holds the table keys plus the index keys of the last item evaluated,
///   and is set whenever the limit is reached, even if nothing remains.
/// - GSIs are sparse (an item lacking an index key attribute is not in the index) and
///   projected (`KEYS_ONLY`/`INCLUDE` indexes return only their attributes, and asking one for
///   another attribute is a validation error).
/// - Validation errors where `DynamoDB` gives them: missing or mistyped keys, empty key
///   strings, mistyped index keys, bad numbers, empty sets, duplicate keys in a batch chunk,
///   two operations on one item in a transaction, filters on key attributes, limit 0.
///
/// - `DynamoDB`'s size limits: partition key values (table and GSI) up to 2,048 bytes, sort key
///   values up to 1,024 bytes, items up to 400 KB, counted as `DynamoDB` counts them.
/// - `DynamoDB`'s 1 MB pages: a query or scan page stops after the item that brings the data
///   read to 1 MB ([`crate::limits::MAX_PAGE_BYTES`]) or past it, counted
///   before the filter (a secondary index counts the size of its entries, which hold what it
///   projects), with a `last_evaluated_key` when more items follow. Code that reads until
///   `last_evaluated_key` is absent, not until `limit` items came back, is correct on both
///   stores.
///
/// It differs from `DynamoDB` in what needs a network or a clock: reads are always consistent
/// and nothing is throttled. It is safe to share between
/// threads (a read-write lock over ordered maps) and deterministic: the same calls give the
/// same results.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use entity_manager_core::store::{Expect, KeyType, MemoryStore, Store, TableDefinition};
/// use entity_manager_core::{AttributeValue, Item};
///
/// let store = MemoryStore::new(TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::N)));
/// let item: Item = serde_dynamo::to_item(serde_json::json!({ "pk": "a", "sk": 1.50, "x": true }))?;
/// store.put_item(item.clone(), Expect::Absent).await?;
/// // A second put of the same key fails its condition.
/// let again = store.put_item(item, Expect::Absent).await;
/// assert!(again.is_err_and(|e| e.is_conditional_check_failed()));
/// let key: Item = serde_dynamo::to_item(serde_json::json!({ "pk": "a", "sk": 1.5 }))?;
/// let read = store.get_item(&key, None).await?.ok_or("missing")?;
/// assert_eq!(read["sk"], AttributeValue::N("1.5".into()));
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct MemoryStore {
    definition: TableDefinition,
    /// The secondary indexes it maintains: the GSIs, then the LSIs (in the GSI shape).
    indexes: Vec<GlobalIndex>,
    /// How many of `indexes` are GSIs (the rest are LSIs).
    globals: usize,
    projections: Vec<Option<Vec<String>>>,
    state: RwLock<State>,
    /// The stamp check (read again once older than its interval).
    stamp_guard: super::stamp::StampGuard,
    /// The fault plan in force, if any.
    faults: Option<Faults>,
}

#[derive(Clone, Debug, Default)]
struct State {
    items: BTreeMap<PrimaryKey, Arc<Stored>>,
    table: IndexMap,
    gsis: Vec<IndexMap>,
    /// Under a fault plan with a lag: what eventually consistent reads see, and the writes not
    /// yet applied to it (the call after which each becomes visible, the key, the new item or
    /// `None` for a delete).
    lagged: Option<Box<Lagged>>,
}

/// A stored item and the size `DynamoDB` counts for it ([`value::item_bytes`]), computed once
/// when it is written: every read of the item sums it into the read's capacity and 1 MB cut.
#[derive(Clone, Debug)]
struct Stored {
    item: Item,
    bytes: usize,
}

impl Stored {
    fn new(item: Item) -> Self {
        let bytes = value::item_bytes(&item);
        Self { item, bytes }
    }
}

#[derive(Clone, Debug, Default)]
struct Lagged {
    view: State,
    pending: std::collections::VecDeque<(u64, PrimaryKey, Option<Item>)>,
}

/// The partition and sort attribute values of an item in one index.
type IndexKey = (Vec<Scalar>, Vec<Scalar>);

/// The bounds of a key condition on an index partition, and the prefix of a `begins_with`.
type RangeBounds = (Bound<SortKey>, Bound<SortKey>, Option<Scalar>);

/// Which index a query reads.
struct View<'a> {
    name: Option<&'a str>,
    /// The partition attributes, in key order (one for the table and a classic index).
    hash: Vec<&'a KeyAttribute>,
    /// The sort attributes, in key order.
    range: Vec<&'a KeyAttribute>,
    /// The position of a secondary index in `MemoryStore::indexes`.
    gsi: Option<usize>,
    /// Whether the index is local: an LSI fetches attributes it does not project from the
    /// table, where a GSI refuses them.
    local: bool,
}

/// The table name in messages about the stamp of a memory store.
const NAME: &str = "(in memory)";

fn validation(operation: &'static str, message: impl Into<String>) -> StoreError {
    StoreError::validation(operation, message).with_code("ValidationException")
}

fn type_name(t: super::KeyType) -> &'static str {
    crate::table::key_type_name(t)
}

impl MemoryStore {
    /// An empty table with this definition.
    pub fn new(definition: TableDefinition) -> Self {
        let globals = definition.indexes.len();
        let indexes: Vec<GlobalIndex> = definition
            .indexes
            .iter()
            .cloned()
            .chain(definition.local_indexes.iter().map(|l| {
                GlobalIndex::new(l.name.clone(), l.hash_key.clone(), l.range_key.clone())
                    .projection(l.projection.clone())
            }))
            .collect();
        let projections = indexes
            .iter()
            .map(|i| definition.projected_attributes(i))
            .collect();
        let gsis = vec![IndexMap::new(); indexes.len()];
        let store = Self {
            definition,
            indexes,
            globals,
            projections,
            state: RwLock::new(State {
                gsis,
                ..State::default()
            }),
            stamp_guard: super::stamp::StampGuard::default(),
            faults: None,
        };
        // the table is created here: it records its stamp (string keys, so the put succeeds)
        if let Ok((_, item)) = super::stamp::stamp_to_write(&store.definition, NAME, None, false) {
            let _ = store.put_sync(item, &Expect::Any);
        }
        store
    }

    /// This store under a [`FaultPlan`]: throttling, transient errors, transaction conflicts,
    /// unprocessed batch requests and eventually consistent reads, seeded. See [`FaultPlan`].
    #[must_use]
    pub fn with_faults(mut self, plan: FaultPlan) -> Self {
        let mut state = self.write();
        state.lagged = (plan.lag_calls() > 0).then(|| {
            let mut view = state.clone();
            view.lagged = None;
            Box::new(Lagged {
                view,
                pending: std::collections::VecDeque::new(),
            })
        });
        drop(state);
        self.faults = Some(Faults::new(plan));
        self
    }

    /// How many faults the [`FaultPlan`] injected so far (all zero without one).
    pub fn fault_counts(&self) -> FaultCounts {
        self.faults.as_ref().map(Faults::counts).unwrap_or_default()
    }

    /// Counts a call under the fault plan: applies the writes whose lag is over, and returns
    /// the error injected into this call, if any.
    fn inject(&self, operation: Operation) -> Result<u64, StoreError> {
        crate::trace::attempt();
        let Some(faults) = &self.faults else {
            return Ok(0);
        };
        let call = faults.tick();
        if faults.plan.lag_calls() > 0 {
            let mut state = self.write();
            if let Some(mut lagged) = state.lagged.take() {
                while lagged
                    .pending
                    .front()
                    .is_some_and(|(due, _, _)| *due <= call)
                {
                    if let Some((_, pk, item)) = lagged.pending.pop_front() {
                        match item {
                            Some(item) => self.insert_in(&mut lagged.view, pk, item),
                            None => self.unindex_in(&mut lagged.view, &pk),
                        }
                    }
                }
                state.lagged = Some(lagged);
            }
        }
        match faults.error(call, operation) {
            Some(e) => {
                if e.is_throttled() {
                    crate::trace::throttle();
                }
                Err(e)
            }
            None => Ok(call),
        }
    }

    /// Admits a single call under the fault plan: an injected throttling or transient error
    /// (or, for a transaction, conflict) is retried up to the plan's attempts, as the SDK
    /// retries `DynamoStore`'s calls; an attempt that failed this way did nothing. A request
    /// that is not `repeatable` (an update with an increment or an append) is sent again only
    /// after throttling, as
    /// `DynamoStore` does, since a transient error or a timeout on `DynamoDB` may have applied
    /// it. The error that ends the call says how many attempts were made
    /// ([`StoreError::gave_up`]).
    /// Returns the number of the admitted call and of its attempts.
    fn admit_as(&self, operation: Operation, repeatable: bool) -> Result<(u64, u32), StoreError> {
        let Some(faults) = &self.faults else {
            return Ok((0, 1));
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.inject(operation) {
                Ok(call) => return Ok((call, attempt)),
                Err(e)
                    if e.is_retryable()
                        && (repeatable || e.is_throttled())
                        && attempt < faults.plan.attempts_allowed() =>
                {
                    crate::trace::retry();
                }
                Err(e) => return Err(e.gave_up(attempt, repeatable)),
            }
        }
    }

    /// Carries out a single call under the fault plan: admitted (throttling, transient errors
    /// and conflicts retried), delayed by the plan's latency, then `apply`ed, unless it hangs
    /// (then a timeout after the operation timeout, applied or not) or loses its answer after
    /// it applied (then a timeout or an internal error that may have applied it).
    async fn run<T>(
        &self,
        operation: Operation,
        repeatable: bool,
        apply: impl FnOnce() -> Result<T, StoreError> + Send,
    ) -> Result<T, StoreError> {
        let (call, attempts) = self.admit_as(operation, repeatable)?;
        let Some(faults) = &self.faults else {
            return apply();
        };
        match Self::after_admission(faults, call, operation).await {
            None => apply(),
            Some(after) => Self::finish(faults, call, operation, after, apply)
                .map_err(|e| e.gave_up(attempts, repeatable)),
        }
    }

    /// Waits the call's latency; `None` when it then answers normally, else what happens.
    async fn after_admission(faults: &Faults, call: u64, operation: Operation) -> Option<After> {
        let delay = faults.delay(call, operation);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        match faults.after(call, operation) {
            After::Answers => None,
            After::Hangs { applied } => {
                tokio::time::sleep(faults.operation_timeout()).await;
                Some(After::Hangs { applied })
            }
            After::LosesAck => Some(After::LosesAck),
        }
    }

    /// A call that hung or lost its answer: applied or not, it fails.
    fn finish<T>(
        faults: &Faults,
        call: u64,
        operation: Operation,
        after: After,
        apply: impl FnOnce() -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match after {
            After::Answers => apply(),
            After::LosesAck => {
                apply()?;
                Err(faults.lost_ack_error(call, operation))
            }
            After::Hangs { applied } => {
                if applied {
                    let _ = apply();
                }
                Err(faults.hang_error(operation))
            }
        }
    }

    /// What a read sees: the latest state, or under a fault plan with a lag the lagging view
    /// (GSI queries always; other reads unless strongly consistent).
    fn seen<'s>(&self, state: &'s State, gsi: bool, consistent: bool) -> &'s State {
        let lagging = self.faults.as_ref().is_some_and(|f| {
            f.plan.lag_calls() > 0 && (gsi || !(consistent || f.plan.reads_consistent()))
        });
        match (&state.lagged, lagging) {
            (Some(lagged), true) => &lagged.view,
            _ => state,
        }
    }

    /// The stamp the table holds ([`TableStamp`](super::TableStamp)), or `None`: as
    /// `DynamoStore::table_stamp`.
    pub fn table_stamp(&self) -> Result<Option<super::TableStamp>, StoreError> {
        super::stamp::stamp_of(self.read_stamp_item()?)
    }

    /// Writes the stamp of this store's definition (over a stamp with other settings only with
    /// `force`) and returns it: as `DynamoStore::stamp_table`.
    pub fn stamp_table(&self, force: bool) -> Result<super::TableStamp, StoreError> {
        let found = self.read_stamp_item()?;
        let (stamp, item) =
            super::stamp::stamp_to_write(&self.definition, NAME, found.as_ref(), force)?;
        if found.is_none() && !force {
            // a table without a stamp: its records decide, as for a write
            super::stamp::refuse_stamp_against(&self.definition, NAME, &self.infer_profile()?)?;
        }
        self.stamp_guard.expire();
        self.put_sync(item, &Expect::Any)?;
        Ok(stamp)
    }

    fn read_stamp_item(&self) -> Result<Option<Item>, StoreError> {
        self.get_sync(&crate::table::stamp_key(&self.definition), None)
    }

    /// The stamp check before `operation` (see `DynamoStore`).
    async fn check_stamp(&self, operation: &'static str, write: bool) -> Result<(), StoreError> {
        self.stamp_guard
            .check(&self.definition, NAME, operation, write, self)
            .await
    }

    /// How long this store trusts what it found about the table's stamp before reading it
    /// again: as `DynamoStore::with_stamp_recheck` (by default
    /// [`STAMP_RECHECK`](super::STAMP_RECHECK), 60 s).
    ///
    /// ```
    /// # use entity_manager_core::store::{MemoryStore, TableDefinition, KeyType};
    /// # use std::time::Duration;
    /// let store = MemoryStore::new(TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::S)))
    ///     .with_stamp_recheck(Duration::from_millis(50));
    /// assert_eq!(store.stamp_recheck(), Duration::from_millis(50));
    /// ```
    #[must_use]
    pub fn with_stamp_recheck(mut self, interval: Duration) -> Self {
        self.stamp_guard = super::stamp::StampGuard::new(interval);
        self
    }

    /// The stamp re-check interval ([`with_stamp_recheck`](Self::with_stamp_recheck)).
    pub fn stamp_recheck(&self) -> Duration {
        self.stamp_guard.interval()
    }

    /// Which profile made the keys of the table's records, from a sample of them: as
    /// `DynamoStore::infer_profile`.
    pub fn infer_profile(&self) -> Result<super::Inference, StoreError> {
        let limit = super::stamp::sample_limit(&self.definition);
        let sample = self.sample_sync(limit)?;
        super::stamp::infer(&self.definition, &sample)
    }

    /// Up to `limit` records, in one scan page.
    fn sample_sync(&self, limit: usize) -> Result<Vec<Item>, StoreError> {
        let limit = u32::try_from(limit).unwrap_or(u32::MAX);
        let mut page = self.scan_sync(&ScanPage::new().limit(limit))?;
        page.items
            .retain(|item| !crate::table::is_stamp(item, &self.definition));
        Ok(page.items)
    }

    /// The table as this store holds it: the definition it was built with, with every setting
    /// reported, so [`TableDefinition::drift`] against it compares everything (and agrees with
    /// a `DynamoStore` table created from the same definition).
    pub fn describe_table(&self) -> super::LiveTable {
        super::LiveTable::new(self.definition.clone())
    }

    /// How many items the table holds (its stamp is no item).
    pub fn len(&self) -> usize {
        let state = self.read();
        let stamped = self
            .primary_key(&crate::table::stamp_key(&self.definition), "Len", true)
            .is_ok_and(|key| state.items.contains_key(&key));
        state.items.len() - usize::from(stamped)
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every item, in primary key order (the table stamp left out).
    pub fn items(&self) -> Vec<Item> {
        let state = self.read();
        let items = state.items.values().map(|stored| &stored.item);
        items
            .filter(|i| !crate::table::is_stamp(i, &self.definition))
            .cloned()
            .collect()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        // Writers never panic while holding the lock, so a poisoned lock still holds a
        // consistent state.
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The primary key of an item or key. With `exact`, the map must hold the key attributes
    /// and nothing else (a key, as `GetItem` and `DeleteItem` take).
    fn primary_key(
        &self,
        item: &Item,
        operation: &'static str,
        exact: bool,
    ) -> Result<PrimaryKey, StoreError> {
        let mut key = Vec::with_capacity(2);
        for attr in [&self.definition.hash_key, &self.definition.range_key] {
            let Some(v) = item.get(&attr.name) else {
                return Err(validation(
                    operation,
                    if exact {
                        format!(
                            "The provided key element does not match the schema: missing key attribute `{}`",
                            attr.name
                        )
                    } else {
                        format!(
                            "One or more parameter values were invalid: Missing the key {} in the item",
                            attr.name
                        )
                    },
                ));
            };
            let scalar = key_scalar(v, attr, operation, None)?;
            let max = if key.is_empty() {
                MAX_PARTITION_KEY_BYTES
            } else {
                MAX_SORT_KEY_BYTES
            };
            if crate::limits::key_value_bytes(v).is_some_and(|n| n > max) {
                return Err(validation(
                    operation,
                    "One or more parameter values were invalid: Hash primary key values must be under 2048 bytes, and range primary key values must be under 1024 bytes",
                ));
            }
            key.push(scalar);
        }
        if exact && item.len() != 2 {
            return Err(validation(
                operation,
                "The provided key element does not match the schema: a key holds exactly the table's hash and range key attributes",
            ));
        }
        let range = key.pop();
        let hash = key.pop();
        match (hash, range) {
            (Some(h), Some(r)) => Ok((h, r)),
            _ => Err(validation(operation, "incomplete key")),
        }
    }

    /// The index keys of an item for GSI `i`; `None` when the item lacks one (sparse index).
    fn gsi_key(
        &self,
        i: usize,
        item: &Item,
        operation: &'static str,
    ) -> Result<Option<IndexKey>, StoreError> {
        let Some(index) = self.indexes.get(i) else {
            return Ok(None);
        };
        // A present key of the wrong type is an error, even if another key is absent; an item
        // lacking any key attribute is not in the index.
        let mut complete = true;
        let mut scalars = |attrs: Vec<&KeyAttribute>| -> Result<Vec<Scalar>, StoreError> {
            let mut out = Vec::with_capacity(attrs.len());
            for attr in attrs {
                match item.get(&attr.name) {
                    Some(v) => out.push(key_scalar(v, attr, operation, Some(&index.name))?),
                    None => complete = false,
                }
            }
            Ok(out)
        };
        let hash = scalars(index.hash_keys())?;
        let range = scalars(index.range_keys())?;
        Ok(complete.then_some((hash, range)))
    }

    /// Validates and normalises an item for writing; returns it with its primary key.
    fn prepare(
        &self,
        mut item: Item,
        operation: &'static str,
    ) -> Result<(PrimaryKey, Item), StoreError> {
        for (name, v) in item.iter_mut() {
            normalize(v, name).map_err(|m| {
                validation(
                    operation,
                    format!("One or more parameter values were invalid: {m}"),
                )
            })?;
        }
        let pk = self.primary_key(&item, operation, false)?;
        for (i, index) in self.indexes.iter().enumerate() {
            self.gsi_key(i, &item, operation)?;
            // the present values of each key together (`DynamoDB` checks an item lacking one
            // too, although the index leaves it out)
            for (attrs, role, kind) in [
                (index.hash_keys(), KeyRole::Partition, "HASH"),
                (index.range_keys(), KeyRole::Sort, "RANGE"),
            ] {
                let present: Vec<(&str, usize)> = attrs
                    .iter()
                    .filter_map(|a| Some((a.name.as_str(), value::value_bytes(item.get(&a.name)?))))
                    .collect();
                let Some(total) =
                    crate::limits::key_total_over(role, present.iter().map(|(_, n)| *n))
                else {
                    continue;
                };
                let names: Vec<&str> = present.iter().map(|(name, _)| *name).collect();
                return Err(validation(
                    operation,
                    if attrs.len() == 1 {
                        "One or more parameter values were invalid: Size limit exceeded".to_owned()
                    } else {
                        format!(
                            "Aggregate size for {kind} key attributes {} of index {} has exceeded limit {} bytes, with actual size {total} bytes",
                            names.join(", "),
                            index.name,
                            role.max_bytes()
                        )
                    },
                ));
            }
        }
        if value::item_bytes(&item) > MAX_ITEM_BYTES {
            return Err(validation(
                operation,
                "Item size has exceeded the maximum allowed size",
            ));
        }
        Ok((pk, item))
    }

    /// The primary keys of `keys`, checked and normalised; a key given twice is a validation
    /// error with DynamoDB's message for the operation.
    fn distinct_keys(
        &self,
        keys: &[Item],
        operation: &'static str,
        duplicate: &'static str,
    ) -> Result<Vec<PrimaryKey>, StoreError> {
        let mut pks = Vec::with_capacity(keys.len());
        for key in keys {
            let pk = self.prepare_key(key, operation)?;
            if pks.contains(&pk) {
                return Err(validation(operation, duplicate));
            }
            pks.push(pk);
        }
        Ok(pks)
    }

    fn prepare_key(&self, key: &Item, operation: &'static str) -> Result<PrimaryKey, StoreError> {
        let mut key = key.clone();
        for (name, v) in key.iter_mut() {
            normalize(v, name).map_err(|m| validation(operation, m))?;
        }
        self.primary_key(&key, operation, true)
    }

    /// Removes an item (a write: eventually consistent reads see it after the plan's lag).
    fn unindex(&self, state: &mut State, pk: &PrimaryKey) {
        self.unindex_in(state, pk);
        self.lag_write(state, pk.clone(), None);
    }

    /// Stores an item (a write: eventually consistent reads see it after the plan's lag).
    fn insert(&self, state: &mut State, pk: PrimaryKey, item: Item) {
        if state.lagged.is_some() {
            self.lag_write(state, pk.clone(), Some(item.clone()));
        }
        self.insert_in(state, pk, item);
    }

    /// Queues a write for the lagging view.
    fn lag_write(&self, state: &mut State, pk: PrimaryKey, item: Option<Item>) {
        let lag = self.faults.as_ref().map_or(0, |f| f.plan.lag_calls());
        let now = self.fault_counts().calls;
        if let Some(lagged) = state.lagged.as_mut() {
            lagged.pending.push_back((now + lag + 1, pk, item));
        }
    }

    fn unindex_in(&self, state: &mut State, pk: &PrimaryKey) {
        let Some(old) = state.items.remove(pk) else {
            return;
        };
        let hash = vec![pk.0.clone()];
        if let Some(set) = state.table.get_mut(&hash) {
            set.remove(&(vec![pk.1.clone()], pk.clone()));
            if set.is_empty() {
                state.table.remove(&hash);
            }
        }
        for i in 0..self.indexes.len() {
            if let Ok(Some((h, r))) = self.gsi_key(i, &old.item, "index")
                && let Some(map) = state.gsis.get_mut(i)
                && let Some(set) = map.get_mut(&h)
            {
                set.remove(&(r, pk.clone()));
                if set.is_empty() {
                    map.remove(&h);
                }
            }
        }
    }

    fn insert_in(&self, state: &mut State, pk: PrimaryKey, item: Item) {
        self.unindex_in(state, &pk);
        let stored = Arc::new(Stored::new(item));
        state
            .table
            .entry(vec![pk.0.clone()])
            .or_default()
            .insert((vec![pk.1.clone()], pk.clone()), Arc::clone(&stored));
        for i in 0..self.indexes.len() {
            if let Ok(Some((h, r))) = self.gsi_key(i, &stored.item, "index")
                && let Some(map) = state.gsis.get_mut(i)
            {
                map.entry(h)
                    .or_default()
                    .insert((r, pk.clone()), Arc::clone(&stored));
            }
        }
        state.items.insert(pk, stored);
    }

    /// Renders a write's expressions as `DynamoStore` sends them and checks their limits.
    fn check_write(
        &self,
        operation: &'static str,
        update: Option<&Update>,
        expect: &Expect,
    ) -> Result<(), StoreError> {
        Request::write(operation, &self.definition.hash_key.name, update, expect).map(drop)
    }

    fn put_sync(&self, item: Item, expect: &Expect) -> Result<(), StoreError> {
        check_condition(expect, "PutItem")?;
        self.check_write("PutItem", None, expect)?;
        let (pk, item) = self.prepare(item, "PutItem")?;
        let mut state = self.write();
        check_expect(&state, &pk, expect, "PutItem")?;
        self.insert(&mut state, pk, item);
        Ok(())
    }

    fn get_sync(
        &self,
        key: &Item,
        projection: Option<&[String]>,
    ) -> Result<Option<Item>, StoreError> {
        check_projection(projection, "GetItem")?;
        Request::read("GetItem", None, projection)?;
        let pk = self.prepare_key(key, "GetItem")?;
        let guard = self.read();
        let state = self.seen(&guard, false, false);
        Ok(state
            .items
            .get(&pk)
            .map(|stored| project(&stored.item, projection)))
    }

    fn delete_sync(&self, key: &Item, expect: &Expect) -> Result<(), StoreError> {
        check_condition(expect, "DeleteItem")?;
        self.check_write("DeleteItem", None, expect)?;
        let pk = self.prepare_key(key, "DeleteItem")?;
        let mut state = self.write();
        check_expect(&state, &pk, expect, "DeleteItem")?;
        self.unindex(&mut state, &pk);
        Ok(())
    }

    /// The item an update makes of the current one (or of the key alone), validated as a put.
    fn updated(
        &self,
        old: Option<&Item>,
        key: &Item,
        actions: &[super::UpdateAction],
        operation: &'static str,
    ) -> Result<(PrimaryKey, Item), StoreError> {
        let mut item = old.cloned().unwrap_or_else(|| key.clone());
        update::apply(&mut item, actions).map_err(|m| validation(operation, m))?;
        self.prepare(item, operation)
    }

    fn update_sync(
        &self,
        key: &Item,
        update: &Update,
        expect: &Expect,
        returns: ReturnValues,
    ) -> Result<Option<Item>, StoreError> {
        const OP: &str = "UpdateItem";
        check_condition(expect, OP)?;
        self.check_write(OP, Some(update), expect)?;
        let pk = self.prepare_key(key, OP)?;
        let actions = update::check(update, &self.definition).map_err(|m| validation(OP, m))?;
        let mut state = self.write();
        check_expect(&state, &pk, expect, OP)?;
        let old = state.items.get(&pk).map(|stored| stored.item.clone());
        let (_, new) = self.updated(old.as_ref(), key, &actions, OP)?;
        let out = update::returned(returns, &actions, old.as_ref(), &new);
        self.insert(&mut state, pk, new);
        Ok(out)
    }

    fn transact_get_sync(&self, keys: &[Item]) -> Result<Vec<Option<Item>>, StoreError> {
        const OP: &str = "TransactGetItems";
        if keys.is_empty() || keys.len() > MAX_TRANSACTION {
            return Err(validation(
                OP,
                format!(
                    "a transaction reads 1 to {MAX_TRANSACTION} items, not {}",
                    keys.len()
                ),
            ));
        }
        let pks = self.distinct_keys(
            keys,
            OP,
            "Transaction request cannot include multiple operations on one item",
        )?;
        let state = self.read();
        Ok(pks
            .iter()
            .map(|pk| state.items.get(pk).map(|stored| stored.item.clone()))
            .collect())
    }

    fn write_chunk(&self, batch: Vec<WriteRequest>) -> Result<(), StoreError> {
        const OP: &str = "BatchWriteItem";
        if batch.len() > super::MAX_BATCH_WRITE {
            return Err(validation(
                OP,
                format!(
                    "Too many items requested for the BatchWriteItem call: {} (at most 25)",
                    batch.len()
                ),
            ));
        }
        let mut prepared = Vec::with_capacity(batch.len());
        let mut seen = BTreeSet::new();
        for request in batch {
            let (pk, item) = match request {
                WriteRequest::Put(item) => {
                    let (pk, item) = self.prepare(item, OP)?;
                    (pk, Some(item))
                }
                WriteRequest::Delete(key) => (self.prepare_key(&key, OP)?, None),
            };
            if !seen.insert(pk.clone()) {
                return Err(validation(
                    OP,
                    "Provided list of item keys contains duplicates",
                ));
            }
            prepared.push((pk, item));
        }
        let mut state = self.write();
        for (pk, item) in prepared {
            match item {
                Some(item) => self.insert(&mut state, pk, item),
                None => self.unindex(&mut state, &pk),
            }
        }
        Ok(())
    }

    fn get_chunk(
        &self,
        keys: &[Item],
        projection: Option<&[String]>,
    ) -> Result<Vec<Item>, StoreError> {
        const OP: &str = "BatchGetItem";
        check_projection(projection, OP)?;
        Request::read(OP, None, projection)?;
        if keys.len() > super::MAX_BATCH_GET {
            return Err(validation(
                OP,
                format!(
                    "Too many items requested for the BatchGetItem call: {} (at most 100)",
                    keys.len()
                ),
            ));
        }
        let pks = self.distinct_keys(keys, OP, "Provided list of item keys contains duplicates")?;
        let guard = self.read();
        let state = self.seen(&guard, false, false);
        Ok(pks
            .iter()
            .filter_map(|pk| {
                state
                    .items
                    .get(pk)
                    .map(|stored| project(&stored.item, projection))
            })
            .collect())
    }

    fn transact_sync(&self, writes: Vec<TransactWrite>) -> Result<(), StoreError> {
        const OP: &str = "TransactWriteItems";
        check_transaction_shape(&writes)?;
        let mut ops = Vec::with_capacity(writes.len());
        let mut seen = BTreeSet::new();
        for write in writes {
            match &write {
                TransactWrite::Update { update, expect, .. } => {
                    self.check_write(OP, Some(update), expect)?;
                }
                TransactWrite::Put { expect, .. }
                | TransactWrite::Delete { expect, .. }
                | TransactWrite::Check { expect, .. } => self.check_write(OP, None, expect)?,
            }
            let (pk, expect, item) = match write {
                TransactWrite::Put { item, expect } => {
                    let (pk, item) = self.prepare(item, OP)?;
                    (pk, expect, Op::Put(item))
                }
                TransactWrite::Delete { key, expect } => {
                    (self.prepare_key(&key, OP)?, expect, Op::Delete)
                }
                TransactWrite::Update {
                    key,
                    update,
                    expect,
                } => {
                    let pk = self.prepare_key(&key, OP)?;
                    let actions =
                        update::check(&update, &self.definition).map_err(|m| validation(OP, m))?;
                    (pk, expect, Op::Update(key, actions))
                }
                TransactWrite::Check { key, expect } => {
                    (self.prepare_key(&key, OP)?, expect, Op::Check)
                }
            };
            check_condition(&expect, OP)?;
            if !seen.insert(pk.clone()) {
                return Err(validation(
                    OP,
                    "Transaction request cannot include multiple operations on one item",
                ));
            }
            ops.push((pk, expect, item));
        }
        let mut state = self.write();
        let reasons: Vec<CancellationReason> = ops
            .iter()
            .map(|(pk, expect, _)| {
                if holds(&state, pk, expect) {
                    CancellationReason::NONE
                } else {
                    CancellationReason {
                        item: state.items.get(pk).map(|stored| stored.item.clone()),
                        ..CancellationReason::conditional_check_failed()
                    }
                }
            })
            .collect();
        if reasons.iter().any(|r| r.code.is_some()) {
            return Err(StoreError::transaction_canceled(OP, reasons)
                .with_code("TransactionCanceledException"));
        }
        // every update is computed before anything is written: all or nothing
        let mut writes = Vec::with_capacity(ops.len());
        for (pk, _, op) in ops {
            writes.push(match op {
                Op::Update(key, actions) => {
                    let (_, item) = self.updated(
                        state.items.get(&pk).map(|stored| &stored.item),
                        &key,
                        &actions,
                        OP,
                    )?;
                    (pk, Op::Put(item))
                }
                op => (pk, op),
            });
        }
        for (pk, op) in writes {
            match op {
                Op::Put(item) => self.insert(&mut state, pk, item),
                Op::Delete => self.unindex(&mut state, &pk),
                Op::Update(..) | Op::Check => {}
            }
        }
        Ok(())
    }

    fn view(&self, index: Option<&str>) -> Result<View<'_>, StoreError> {
        match index {
            None => Ok(self.table_view()),
            Some(name) => {
                let (i, g): (usize, &GlobalIndex) = self
                    .indexes
                    .iter()
                    .enumerate()
                    .find(|(_, g)| g.name == name)
                    .ok_or_else(|| {
                        validation(
                            "Query",
                            format!("The table does not have the specified index: {name}"),
                        )
                    })?;
                Ok(View {
                    name: Some(&g.name),
                    hash: g.hash_keys(),
                    range: g.range_keys(),
                    gsi: Some(i),
                    local: i >= self.globals,
                })
            }
        }
    }

    fn table_view(&self) -> View<'_> {
        View {
            name: None,
            hash: vec![&self.definition.hash_key],
            range: vec![&self.definition.range_key],
            gsi: None,
            local: false,
        }
    }

    fn query_sync(&self, request: &QueryPage) -> Result<Page, StoreError> {
        let view = self.view(request.index.as_deref())?;
        let projected = view
            .gsi
            .and_then(|i| self.projections.get(i).cloned().flatten());
        check_request(request, &view, projected.as_deref())?;
        let hash = partition_values(request, &view)?;
        let (at, (mut lower, mut upper, prefix)) = condition_bounds(request, &view)?;
        if let Some(start) = &request.exclusive_start_key {
            let pos = self.start_position(&view, start)?;
            if request.descending {
                upper = min_upper(upper, Bound::Excluded(pos));
            } else {
                lower = max_lower(lower, Bound::Excluded(pos));
            }
        }

        let guard = self.read();
        let state = self.seen(&guard, view.gsi.is_some() && !view.local, false);
        let index = match view.gsi {
            None => &state.table,
            Some(i) => match state.gsis.get(i) {
                Some(map) => map,
                None => return Ok(Page::default()),
            },
        };
        let Some(partition) = index.get(&hash) else {
            return Ok(Page {
                consumed_capacity: Some(read_units(0)),
                ..Page::default()
            });
        };
        if range_is_empty(&lower, &upper) {
            return Ok(Page {
                consumed_capacity: Some(read_units(0)),
                ..Page::default()
            });
        }
        let in_prefix = |(k, _): &(&SortKey, &Arc<Stored>)| {
            prefix
                .as_ref()
                .is_none_or(|p| k.0.get(at).is_some_and(|v| v.begins_with(p)))
        };
        let range = partition.range((lower, upper));
        let keys: Box<dyn Iterator<Item = (&SortKey, &Arc<Stored>)>> = if request.descending {
            Box::new(
                range
                    .rev()
                    .skip_while(move |k| !in_prefix(k))
                    .take_while(in_prefix),
            )
        } else {
            Box::new(range.take_while(in_prefix))
        };

        let limit = request
            .limit
            .map(|l| usize::try_from(l).unwrap_or(usize::MAX));
        let mut page = Page::default();
        let mut evaluated = 0usize;
        let mut read_bytes = 0usize;
        let mut keys = keys.peekable();
        // the index holds the item with its position: no lookup by primary key
        while let Some((_, stored)) = keys.next() {
            let item = &stored.item;
            evaluated += 1;
            // what the index holds of the item (a GSI may project only some attributes)
            let index_item = match &projected {
                Some(attrs) if !view.local => Cow::Owned(project(item, Some(attrs))),
                // an LSI's filter names only what it projects (checked above)
                _ => Cow::Borrowed(item),
            };
            read_bytes += match &index_item {
                Cow::Owned(projected) => value::item_bytes(projected),
                Cow::Borrowed(_) => stored.bytes,
            };
            if request
                .filter
                .as_ref()
                .is_none_or(|f| value::matches(f, &index_item))
            {
                page.items
                    .push(match (index_item, request.projection.as_deref()) {
                        (Cow::Owned(item), None) => item,
                        // without a projection expression, an LSI returns what it projects
                        (Cow::Borrowed(item), None) if view.local => {
                            project(item, projected.as_deref())
                        }
                        (item, projection) => project(&item, projection),
                    });
            }
            if limit == Some(evaluated) {
                page.last_evaluated_key = Some(self.last_key(&view, item));
                break;
            }
            if read_bytes >= MAX_PAGE_BYTES {
                if keys.peek().is_some() {
                    page.last_evaluated_key = Some(self.last_key(&view, item));
                }
                break;
            }
        }
        page.consumed_capacity = Some(read_units(read_bytes));
        Ok(page)
    }

    /// One page of one segment of a scan: items in primary key order, those of other segments
    /// skipped (not evaluated), `limit` counted before the filter.
    fn scan_sync(&self, request: &ScanPage) -> Result<Page, StoreError> {
        const OP: &str = "Scan";
        request.check()?;
        if let Some(filter) = &request.filter {
            check_filter(filter, &[]).map_err(|m| validation(OP, m))?;
        }
        Request::read(OP, request.filter.as_ref(), None)?;
        let start = match &request.exclusive_start_key {
            None => Bound::Unbounded,
            Some(key) => {
                let pk = self.primary_key(key, OP, true).map_err(|e| {
                    validation(
                        OP,
                        format!("The provided starting key is invalid: {}", e.message()),
                    )
                })?;
                if segment_of(&pk.0, request.total_segments) != request.segment {
                    return Err(validation(
                        OP,
                        format!(
                            "The provided starting key is invalid: it belongs to another segment than {} of {}",
                            request.segment, request.total_segments
                        ),
                    ));
                }
                Bound::Excluded(pk)
            }
        };
        let limit = request
            .limit
            .map(|l| usize::try_from(l).unwrap_or(usize::MAX));
        let guard = self.read();
        let state = self.seen(&guard, false, request.consistent);
        let mut page = Page::default();
        let mut evaluated = 0usize;
        let mut read_bytes = 0usize;
        let mut items = state
            .items
            .range((start, Bound::Unbounded))
            .filter(|((hash, _), _)| segment_of(hash, request.total_segments) == request.segment)
            .peekable();
        while let Some((_, stored)) = items.next() {
            let item = &stored.item;
            evaluated += 1;
            read_bytes += stored.bytes;
            if request
                .filter
                .as_ref()
                .is_none_or(|f| value::matches(f, item))
            {
                page.items.push(item.clone());
            }
            if limit == Some(evaluated) {
                page.last_evaluated_key = Some(self.last_key(&self.table_view(), item));
                break;
            }
            if read_bytes >= MAX_PAGE_BYTES {
                if items.peek().is_some() {
                    page.last_evaluated_key = Some(self.last_key(&self.table_view(), item));
                }
                break;
            }
        }
        Ok(page)
    }

    /// The table keys plus the index keys of an item.
    fn last_key(&self, view: &View<'_>, item: &Item) -> Item {
        let mut names = vec![
            &self.definition.hash_key.name,
            &self.definition.range_key.name,
        ];
        if view.gsi.is_some() {
            names.extend(view.hash.iter().chain(&view.range).map(|a| &a.name));
        }
        let mut key = Item::from(std::collections::HashMap::<String, AttributeValue>::new());
        for name in names {
            if let Some(v) = item.get(name) {
                key.insert(name.clone(), v.clone());
            }
        }
        key
    }

    /// The position an exclusive start key names.
    fn start_position(&self, view: &View<'_>, start: &Item) -> Result<SortKey, StoreError> {
        const OP: &str = "Query";
        let invalid =
            |why: String| validation(OP, format!("The provided starting key is invalid: {why}"));
        let mut attrs = vec![&self.definition.hash_key, &self.definition.range_key];
        if view.gsi.is_some() {
            for &a in view.hash.iter().chain(&view.range) {
                if !attrs.iter().any(|b| b.name == a.name) {
                    attrs.push(a);
                }
            }
        }
        if start.len() != attrs.len() || attrs.iter().any(|a| !start.contains_key(&a.name)) {
            return Err(invalid(format!(
                "it must hold exactly the attributes {}",
                attrs
                    .iter()
                    .map(|a| format!("`{}`", a.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let scalar = |a: &KeyAttribute| {
            start
                .get(&a.name)
                .and_then(|v| Scalar::of(v, a.key_type))
                .ok_or_else(|| {
                    invalid(format!(
                        "`{}` is not of type {}",
                        a.name,
                        type_name(a.key_type)
                    ))
                })
        };
        Ok((
            view.range
                .iter()
                .map(|a| scalar(a))
                .collect::<Result<Vec<_>, _>>()?,
            (
                scalar(&self.definition.hash_key)?,
                scalar(&self.definition.range_key)?,
            ),
        ))
    }
}

/// The rules of a query request that do not depend on the stored items: the shape of its key
/// condition, then the rules the query builders check too (`verdict`, their one home).
fn check_request(
    request: &QueryPage,
    view: &View<'_>,
    projected: Option<&[String]>,
) -> Result<(), StoreError> {
    super::shape::check_key_condition(request, &view.hash, &view.range)?;
    let keys = super::verdict::Keys {
        hash: &view.hash,
        range: &view.range,
        projected,
        local: view.local,
    };
    super::verdict::check(request, &keys).map_err(|r| r.store_error("Query", view.name))
}

/// A key attribute's scalar, with `DynamoDB`'s messages for a wrong type or an empty value.
fn key_scalar(
    v: &AttributeValue,
    attr: &KeyAttribute,
    operation: &'static str,
    index: Option<&str>,
) -> Result<Scalar, StoreError> {
    let Some(s) = Scalar::of(v, attr.key_type) else {
        return Err(validation(
            operation,
            match index {
                None => format!(
                    "One or more parameter values were invalid: Type mismatch for key {} expected: {} actual: {}",
                    attr.name,
                    type_name(attr.key_type),
                    value::type_name(v)
                ),
                Some(index) => format!(
                    "One or more parameter values were invalid: Type mismatch for Index Key {} Expected: {} Actual: {} IndexName: {index}",
                    attr.name,
                    type_name(attr.key_type),
                    value::type_name(v)
                ),
            },
        ));
    };
    if crate::limits::empty_key_value(v) {
        return Err(super::verdict::empty_key(operation, attr, v, index));
    }
    Ok(s)
}

/// One write of a transaction, once validated.
enum Op {
    Put(Item),
    Delete,
    Update(Item, Vec<super::UpdateAction>),
    Check,
}

fn holds(state: &State, pk: &PrimaryKey, expect: &Expect) -> bool {
    match expect {
        Expect::Any => true,
        Expect::Absent => !state.items.contains_key(pk),
        Expect::Present => state.items.contains_key(pk),
        Expect::Matches(filter) => match state.items.get(pk) {
            Some(stored) => value::matches(filter, &stored.item),
            None => value::matches(filter, &Item::default()),
        },
    }
}

/// Validates a condition expression as `DynamoDB` does before running the request.
fn check_condition(expect: &Expect, operation: &'static str) -> Result<(), StoreError> {
    match expect {
        Expect::Matches(filter) => check_filter(filter, &[]).map_err(|m| {
            validation(
                operation,
                m.replace("FilterExpression", "ConditionExpression"),
            )
        }),
        _ => Ok(()),
    }
}

fn check_expect(
    state: &State,
    pk: &PrimaryKey,
    expect: &Expect,
    operation: &'static str,
) -> Result<(), StoreError> {
    if holds(state, pk, expect) {
        Ok(())
    } else {
        Err(StoreError::new(
            StoreErrorKind::ConditionalCheckFailed,
            operation,
            "The conditional request failed",
        )
        .with_code("ConditionalCheckFailedException")
        .with_item(state.items.get(pk).map(|stored| stored.item.clone())))
    }
}

fn check_projection(
    projection: Option<&[String]>,
    operation: &'static str,
) -> Result<(), StoreError> {
    projection.map_or(Ok(()), |names| {
        super::verdict::projection(names).map_err(|r| r.store_error(operation, None))
    })
}

/// The read capacity units of a query that evaluated items of `bytes` in all, by `DynamoDB`'s
/// rule for eventually consistent reads: the sum rounded up to 4 KB, half a unit per 4 KB, at
/// least one 4 KB block (an empty query costs half a unit too).
pub(crate) fn read_units(bytes: usize) -> f64 {
    let blocks = bytes.div_ceil(4_096).max(1);
    // block counts of one query page (1 MB at most) are far below 2^52
    #[allow(clippy::cast_precision_loss)]
    let units = blocks as f64 / 2.0;
    units
}

/// The attributes of `item` named in `projection` (all when `None`).
fn project(item: &Item, projection: Option<&[String]>) -> Item {
    match projection {
        None => item.clone(),
        Some(names) => item
            .iter()
            .filter(|(k, _)| names.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<std::collections::HashMap<_, _>>()
            .into(),
    }
}

/// The partition attribute values of a query, checked against the key: one per attribute, each
/// of its attribute's type.
fn partition_values(request: &QueryPage, view: &View<'_>) -> Result<Vec<Scalar>, StoreError> {
    const OP: &str = "Query";
    // the shape of the key condition: checked by `query_sync` before
    let values = std::iter::once(&request.hash_key).chain(&request.more_hash_keys);
    view.hash
        .iter()
        .zip(values)
        .map(|(attr, v)| {
            Scalar::of(v, attr.key_type).ok_or_else(|| {
                validation(OP, format!(
                    "One or more parameter values were invalid: Condition parameter type does not match schema type: hash key `{}` is {}, got {}",
                    attr.name, type_name(attr.key_type), value::type_name(v)
                ))
            })
        })
        .collect()
}

/// The equality prefix on the first sort attributes, checked against the key.
fn sort_prefix(request: &QueryPage, view: &View<'_>) -> Result<Vec<Scalar>, StoreError> {
    const OP: &str = "Query";
    view.range
        .iter()
        .zip(&request.range_prefix)
        .map(|(attr, v)| {
            Scalar::of(v, attr.key_type).ok_or_else(|| {
                validation(OP, format!(
                    "One or more parameter values were invalid: Condition parameter type does not match schema type: range key `{}` is {}, got {}",
                    attr.name, type_name(attr.key_type), value::type_name(v)
                ))
            })
        })
        .collect()
}

/// The bounds of a query's sort conditions (an equality prefix, then one condition), with the
/// position of the conditioned sort attribute.
fn condition_bounds(
    request: &QueryPage,
    view: &View<'_>,
) -> Result<(usize, RangeBounds), StoreError> {
    let sort_prefix = sort_prefix(request, view)?;
    let at = sort_prefix.len();
    // `sort_prefix` checked that a condition has a sort attribute to apply to
    let bounds = match (&request.range, view.range.get(at)) {
        (Some(cond), Some(attr)) => range_bounds(cond, attr, &sort_prefix)?,
        (_, _) if sort_prefix.is_empty() => (Bound::Unbounded, Bound::Unbounded, None),
        (_, _) => prefix_bounds(&sort_prefix),
    };
    Ok((at, bounds))
}

/// `prefix` extended by one value.
fn extend(prefix: &[Scalar], more: impl IntoIterator<Item = Scalar>) -> Vec<Scalar> {
    let mut out = prefix.to_vec();
    out.extend(more);
    out
}

/// The bounds of the positions whose sort values start with `prefix`: a shorter tuple sorts
/// before its extensions, and `Max` after any value.
fn prefix_bounds(prefix: &[Scalar]) -> RangeBounds {
    (
        Bound::Included((prefix.to_vec(), (Scalar::Min, Scalar::Min))),
        Bound::Included((extend(prefix, [Scalar::Max]), (Scalar::Max, Scalar::Max))),
        None,
    )
}

/// The bounds of a range condition on the sort attribute after `prefix` (the equality prefix of a
/// multi-attribute key; empty for a classic key), and the prefix of a `begins_with`.
fn range_bounds(
    cond: &RangeCondition,
    range: &KeyAttribute,
    prefix: &[Scalar],
) -> Result<RangeBounds, StoreError> {
    const OP: &str = "Query";
    let scalar = |v: &AttributeValue| {
        Scalar::of(v, range.key_type).ok_or_else(|| {
            validation(OP, format!(
                "One or more parameter values were invalid: Condition parameter type does not match schema type: range key `{}` is {}, got {}",
                range.name, type_name(range.key_type), value::type_name(v)
            ))
        })
    };
    // with a prefix, a condition reaches only the positions of that prefix
    let (floor, ceiling) = match prefix_bounds(prefix) {
        (lower, upper, _) if !prefix.is_empty() => (lower, upper),
        _ => (Bound::Unbounded, Bound::Unbounded),
    };
    let low = |s: Scalar| (extend(prefix, [s]), (Scalar::Min, Scalar::Min));
    let high = |s: Scalar| (extend(prefix, [s, Scalar::Max]), (Scalar::Max, Scalar::Max));
    let (lower, upper, begins) = match cond {
        RangeCondition::Eq(v) => {
            let s = scalar(v)?;
            (
                Bound::Included(low(s.clone())),
                Bound::Included(high(s)),
                None,
            )
        }
        RangeCondition::Lt(v) => (floor, Bound::Excluded(low(scalar(v)?)), None),
        RangeCondition::Le(v) => (floor, Bound::Included(high(scalar(v)?)), None),
        RangeCondition::Gt(v) => (Bound::Excluded(high(scalar(v)?)), ceiling, None),
        RangeCondition::Ge(v) => (Bound::Included(low(scalar(v)?)), ceiling, None),
        // in order, and `begins_with` of a string or binary: `verdict::check` saw to it
        RangeCondition::Between(a, b) => {
            let (a, b) = (scalar(a)?, scalar(b)?);
            (Bound::Included(low(a)), Bound::Included(high(b)), None)
        }
        RangeCondition::BeginsWith(v) => {
            let s = scalar(v)?;
            (Bound::Included(low(s.clone())), ceiling, Some(s))
        }
    };
    Ok((lower, upper, begins))
}

fn max_lower(a: Bound<SortKey>, b: Bound<SortKey>) -> Bound<SortKey> {
    match (&a, &b) {
        (Bound::Unbounded, _) => b,
        (_, Bound::Unbounded) => a,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            if x > y || (x == y && matches!(a, Bound::Excluded(_))) {
                a
            } else {
                b
            }
        }
    }
}

fn min_upper(a: Bound<SortKey>, b: Bound<SortKey>) -> Bound<SortKey> {
    match (&a, &b) {
        (Bound::Unbounded, _) => b,
        (_, Bound::Unbounded) => a,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            if x < y || (x == y && matches!(a, Bound::Excluded(_))) {
                a
            } else {
                b
            }
        }
    }
}

/// Whether no key lies within the bounds (`BTreeSet::range` panics on inverted bounds).
fn range_is_empty(lower: &Bound<SortKey>, upper: &Bound<SortKey>) -> bool {
    match (lower, upper) {
        (Bound::Included(x), Bound::Included(y)) => x > y,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            x >= y
        }
        _ => false,
    }
}

/// The scan segment of a hash key value: FNV-1a (64 bits) of its bytes (a number's canonical
/// decimal text), modulo the segment count. Deterministic across runs, platforms and Rust
/// versions.
fn segment_of(hash: &Scalar, total_segments: u32) -> u32 {
    let text;
    let bytes: &[u8] = match hash {
        Scalar::S(s) => s.as_bytes(),
        Scalar::B(b) => b,
        Scalar::N(n) => {
            text = n.canonical();
            text.as_bytes()
        }
        Scalar::Min | Scalar::Max => &[],
    };
    u32::try_from(fnv1a(bytes) % u64::from(total_segments.max(1))).unwrap_or(0)
}

impl BatchSender for MemoryStore {
    async fn send_write_batch(
        &self,
        batch: Vec<WriteRequest>,
    ) -> Result<Vec<WriteRequest>, StoreError> {
        let call = self.inject(Operation::BatchWriteItem)?;
        let (batch, unprocessed) = self.split(call, batch);
        let Some(faults) = &self.faults else {
            return self.write_chunk(batch).map(|()| unprocessed);
        };
        match Self::after_admission(faults, call, Operation::BatchWriteItem).await {
            None => self.write_chunk(batch).map(|()| unprocessed),
            Some(after) => Self::finish(faults, call, Operation::BatchWriteItem, after, || {
                self.write_chunk(batch).map(|()| unprocessed)
            }),
        }
    }

    async fn send_get_batch(
        &self,
        keys: Vec<Item>,
        projection: Option<&[String]>,
    ) -> Result<GetBatch, StoreError> {
        let call = self.inject(Operation::BatchGetItem)?;
        let (keys, unprocessed) = self.split(call, keys);
        let read = || {
            self.get_chunk(&keys, projection)
                .map(|items| GetBatch { items, unprocessed })
        };
        let Some(faults) = &self.faults else {
            return read();
        };
        match Self::after_admission(faults, call, Operation::BatchGetItem).await {
            None => read(),
            Some(after) => Self::finish(faults, call, Operation::BatchGetItem, after, read),
        }
    }

    fn pause(&self, _delay: Duration) -> impl Future<Output = ()> + Send {
        // The memory store does not wait: its retries are immediate (and deterministic).
        std::future::ready(())
    }
}

impl MemoryStore {
    /// The requests of a batch chunk the fault plan processes, and those it leaves.
    fn split<T>(&self, call: u64, requests: Vec<T>) -> (Vec<T>, Vec<T>) {
        let Some(faults) = &self.faults else {
            return (requests, Vec::new());
        };
        let mut done = Vec::with_capacity(requests.len());
        let mut left = Vec::new();
        for (i, request) in requests.into_iter().enumerate() {
            if faults.leaves(call, i) {
                left.push(request);
            } else {
                done.push(request);
            }
        }
        (done, left)
    }
}

impl super::stamp::StampIo for MemoryStore {
    fn read_stamp(&self) -> impl Future<Output = Result<Option<Item>, StoreError>> + Send {
        std::future::ready(self.read_stamp_item())
    }

    fn sample(&self, limit: usize) -> impl Future<Output = Result<Vec<Item>, StoreError>> + Send {
        std::future::ready(self.sample_sync(limit))
    }

    fn write_stamp(&self, item: Item) -> impl Future<Output = Result<(), StoreError>> + Send {
        std::future::ready(self.put_sync(item, &Expect::Absent))
    }
}

impl Store for MemoryStore {
    fn definition(&self) -> &TableDefinition {
        &self.definition
    }

    async fn put_item(&self, item: Item, expect: Expect) -> Result<(), StoreError> {
        self.check_stamp("PutItem", true).await?;
        self.run(Operation::PutItem, true, || {
            self.stamp_guard.note(self.put_sync(item, &expect))
        })
        .await
    }

    async fn get_item(
        &self,
        key: &Item,
        projection: Option<&[String]>,
    ) -> Result<Option<Item>, StoreError> {
        self.check_stamp("GetItem", false).await?;
        self.run(Operation::GetItem, true, || self.get_sync(key, projection))
            .await
    }

    async fn delete_item(&self, key: &Item, expect: Expect) -> Result<(), StoreError> {
        self.check_stamp("DeleteItem", true).await?;
        self.run(Operation::DeleteItem, true, || {
            self.stamp_guard.note(self.delete_sync(key, &expect))
        })
        .await
    }

    async fn update_item(
        &self,
        key: &Item,
        update: &Update,
        expect: Expect,
        returns: ReturnValues,
    ) -> Result<Option<Item>, StoreError> {
        self.check_stamp("UpdateItem", true).await?;
        self.run(Operation::UpdateItem, update.is_repeatable(), || {
            self.stamp_guard
                .note(self.update_sync(key, update, &expect, returns))
        })
        .await
    }

    async fn transact_get(&self, keys: Vec<Item>) -> Result<Vec<Option<Item>>, StoreError> {
        self.check_stamp("TransactGetItems", false).await?;
        self.run(Operation::TransactGetItems, true, || {
            self.transact_get_sync(&keys)
        })
        .await
    }

    async fn batch_write(&self, writes: Vec<WriteRequest>) -> Result<(), BatchWriteError> {
        if let Err(e) = self.check_stamp("BatchWriteItem", true).await {
            let total = writes.len();
            return Err(BatchWriteError::new(writes, total, e));
        }
        write_batches(self, writes, &RetryPolicy::default()).await
    }

    async fn batch_get(
        &self,
        keys: Vec<Item>,
        projection: Option<&[String]>,
    ) -> Result<Vec<Item>, BatchGetError> {
        // a read: the check only warns, and never fails
        let _ = self.check_stamp("BatchGetItem", false).await;
        get_batches(self, keys, projection, &RetryPolicy::default()).await
    }

    async fn transact_write(&self, writes: Vec<TransactWrite>) -> Result<(), StoreError> {
        self.check_stamp("TransactWriteItems", true).await?;
        self.run(Operation::TransactWriteItems, true, || {
            self.stamp_guard.note(self.transact_sync(writes))
        })
        .await
    }

    async fn query_page(&self, request: &QueryPage) -> Result<Page, StoreError> {
        self.check_stamp("Query", false).await?;
        let page = self
            .run(Operation::Query, true, || self.query_sync(request))
            .await?;
        crate::trace::capacity(page.consumed_capacity.unwrap_or(0.0));
        Ok(page)
    }

    async fn scan_page(&self, request: &ScanPage) -> Result<Page, StoreError> {
        self.check_stamp("Scan", false).await?;
        let mut page = self
            .run(Operation::Scan, true, || self.scan_sync(request))
            .await?;
        // the table stamp is no record
        page.items
            .retain(|item| !crate::table::is_stamp(item, &self.definition));
        Ok(page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference vectors of the FNV specification (draft-eastlake-fnv, FNV-1a 64).
    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    /// A hash key's segment depends only on its value and the segment count (stable across
    /// runs), and a number is hashed by its canonical text, so `1.50` and `1.5` agree.
    #[test]
    fn segments_depend_on_the_value_only() {
        let s = |v: &str| Scalar::S(v.to_owned());
        for total in [1, 2, 7, 1000] {
            assert!(segment_of(&s("user!1"), total) < total);
            assert_eq!(
                segment_of(&s("user!1"), total),
                u32::try_from(fnv1a(b"user!1") % u64::from(total)).unwrap_or(u32::MAX)
            );
        }
        let n = |v: &str| value::Number::parse(v).map(Scalar::N);
        assert_eq!(
            n("1.50").map(|x| segment_of(&x, 97)),
            n("1.5").map(|x| segment_of(&x, 97))
        );
    }
}
