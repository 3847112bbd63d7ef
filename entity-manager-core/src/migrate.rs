//! Migration of a table's records from one schema to another: new shard bumps, changed
//! generated properties and indexes, a changed unique encoding, or changed records.
//!
//! A [`Migration`] pairs, per entity, the schema the records were written under (A) with the
//! schema they must follow (B), and optionally a transform. Each item a [`ParallelScan`] finds
//! goes through these steps: A's keys are removed, the transform runs, B's keys are added, and
//! the result is written back:
//! - when its primary key is unchanged, with a put;
//! - when its primary key changes (a new shard, a new range key encoding), the old item is
//!   deleted and the new one put **in one transaction** (`TransactWriteItems`), the put
//!   conditioned on no record holding the new key. A migration never leaves both, or neither
//!   (but in [`BulkWrites::Exclusive`], where a kill can separate them until the worker
//!   resumes).
//!
//! **Live: no acknowledged write is lost.** Every write (the put, and the delete of a move) is
//! conditioned on the record being unchanged since the scan read it: on its version when the
//! entity types have a version field ([`Migration::records`]; the write then increments it),
//! else on every attribute read and every attribute A or B may have that was absent still
//! absent: the fields of both Rust types with [`Migration::records`] (as their `Deserialize`
//! names them), the transcoded and generated properties of the two schemas otherwise. An
//! attribute neither names, set by another client between the scan and the write of a record
//! without a version, is not seen by the condition and is lost: give such entities a version.
//! A write that another client made between the scan and the migration's write fails the
//! condition instead of being overwritten; the migration gets the record as it is now from the
//! failed condition, migrates that, and counts the conflict
//! ([`conflicts`](EntityCounts::conflicts)); a record deleted meanwhile is counted as
//! [`vanished`](EntityCounts::vanished). Writes go 16 at a time per page (`BatchWriteItem`
//! takes no condition): the same write units as a batch, in more requests. For a table no one
//! else writes while the migration runs, [`BulkWrites::Exclusive`] writes in unconditioned
//! batches instead.
//!
//! **Rolling out a live migration**, with services reading and writing the table throughout:
//! 1. Deploy services that read and write with schema B's *candidate keys* covering A's: a
//!    record's reads try every candidate key of its id (one per shard bump), so B must keep
//!    A's bumps (add new ones, never remove or change one), and B's indexes must be a superset
//!    of A's (new GSIs created and `ACTIVE` first, [`TableDefinition::drift`](crate::store::TableDefinition::drift)).
//!    Writes of typed entities go to the key where the record is found, so records not yet
//!    moved keep being updated in place.
//! 2. [`dry_run`](Migration::dry_run) and check the counts per shard.
//! 3. [`run`](Migration::run), saving the checkpoint from the progress callback; resume from it
//!    after any stop. Give the entities a version field: conflicts are then detected by one
//!    comparison however wide the records.
//! 4. Run it again: it must report nothing written (every record
//!    [`migrated_before`](EntityCounts::migrated_before) or unchanged).
//! 5. Only then deploy services that rely on B alone (queries of new indexes, no more reads of
//!    A's keys).
//!
//! **Idempotent.** An item already in B's shape (its keys are exactly those B computes from it,
//! it carries none of A's own generated properties, and it is not in A's shape as well) is
//! counted as [`migrated_before`](EntityCounts::migrated_before) and left alone; an item whose
//! migrated form is the item itself is [`unchanged`](EntityCounts::unchanged). So running a
//! finished migration again writes nothing. When A and B give an item the same keys, only the
//! transform can change it: it then runs again on every run, so it must map its own output to
//! itself (most transforms do: they set a field, rename one when present, …). A record moved
//! into a part of the table the scan has not reached yet is found again there, in B's shape,
//! and counted once more, as migrated before.
//!
//! **Resumable and throttled.** The scan's segments run `throttle` at a time, each one page
//! after the other, and a page's position is recorded ([`ScanCheckpoint`]) only once its
//! writes are done: the checkpoint never gets ahead of the writes. After an error
//! ([`MigrateError`], which names what failed and carries the checkpoint), a crash or a
//! deliberate stop, the migration resumes from the last checkpoint; items of an interrupted
//! page that were already written are recognized as migrated.
//!
//! **Split across workers.** [`run_job`](Migration::run_job) runs one worker's share of the
//! segments with its [`Journal`]: counts exact across kills and workers,
//! merged with [`merge`](crate::job::merge). The guide `guide::bulk` of the `entity-manager`
//! crate covers workers, rate limits and the capacity and hours of a migration of 10⁹ records.
//!
//! **Dry run.** [`Migration::dry_run`] plans every item without writing anything and reports
//! counts per entity and per shard (hash key) before and after, and a few sample records
//! before and after ([`DryRunReport`]).
//!
//! ```
//! use std::ops::ControlFlow;
//!
//! use entity_manager_core::migrate::Migration;
//! use entity_manager_core::scan::ParallelScan;
//! use entity_manager_core::store::{MemoryStore, Store, TableDefinition, WriteRequest};
//! use entity_manager_core::{Item, Schema};
//! use entity_manager_core::model::ShardSpace;
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = |bumps: serde_json::Value| json!({
//!     "hashKey": "hashKey",
//!     "rangeKey": "rangeKey",
//!     "entities": { "user": {
//!         "uniqueProperty": "userId", "timestampProperty": "created", "shardBumps": bumps
//!     } },
//!     "propertyTranscodes": { "userId": "string", "created": "timestamp" }
//! });
//! // A: one partition. B: four shards from the start, so every record moves.
//! let a = Schema::from_ts_config(&config(json!([])), ShardSpace::Power)?;
//! let b = Schema::from_ts_config(
//!     &config(json!([{ "timestamp": 0, "charBits": 2, "chars": 1 }])),
//!     ShardSpace::Power,
//! )?;
//! let store = MemoryStore::new(TableDefinition::from_schema(&b)?);
//! let mut writes = Vec::new();
//! for i in 0..20 {
//!     let item: Item = serde_dynamo::to_item(json!({ "userId": format!("u{i}"), "created": 1000 + i }))?;
//!     writes.push(WriteRequest::Put(a.entity("user")?.add_keys(&item)?));
//! }
//! store.batch_write(writes).await?;
//!
//! let migration = Migration::between(&a, &b)?;
//! // the dry run writes nothing
//! let plan = migration.dry_run(ParallelScan::new(&store), 2).await?;
//! assert_eq!(plan.counts.entities["user"].scanned, 20);
//! assert_eq!(plan.samples.len(), 2);
//!
//! let report = migration.run(ParallelScan::new(&store), |_| ControlFlow::Continue(())).await?;
//! assert!(report.complete);
//! // every record leaves the one partition `user!` for its shard `user!0` to `user!3`
//! assert_eq!(report.counts.entities["user"].moved, 20);
//!
//! // every record now has B's keys; a second run changes nothing
//! let again = migration.run(ParallelScan::new(&store), |_| ControlFlow::Continue(())).await?;
//! assert_eq!(again.counts.entities["user"].written(), 0);
//! # Ok(())
//! # }
//! ```

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_dynamo::{AttributeValue, Item};

pub use crate::counts::{EntityCounts, MigrateCounts};
use crate::entity::{Entity, schema_of};
use crate::error::Error;
use crate::guarded::{self, PARALLEL_WRITES};
use crate::job::{Entry, Found, Journal, JournalError, Planned, StoredKey, Tally};
use crate::keys::PrimaryKey;
use crate::scan::{BulkWrites, ParallelScan, ScanCheckpoint, StepError, entity_filter};
use crate::schema::{EntitySchema, Schema};
use crate::store::{
    BatchWriteError, CancellationReason, Expect, Filter, Store, StoreError, TransactWrite,
    WriteRequest,
};

/// The error a transform returns: anything that explains why a record cannot be migrated.
pub type TransformError = Box<dyn std::error::Error + Send + Sync>;

/// A transform: the item without A's keys in, the item to give B's keys out.
type TransformFn = Arc<dyn Fn(Item) -> Result<Item, TransformError> + Send + Sync>;

/// Why two schemas cannot be migrated into one another on one table.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IncompatibleSchemas {
    /// The two schemas name the table's key attributes differently: a table's key schema
    /// cannot change.
    #[error(
        "entity `{entity}`: schema A keys the table by ({from_hash}, {from_range}) and schema B by ({to_hash}, {to_range}); a DynamoDB table's key attributes cannot change, so migrate into a new table instead"
    )]
    TableKeys {
        /// The entity (A's token).
        entity: String,
        /// A's hash key attribute.
        from_hash: String,
        /// A's range key attribute.
        from_range: String,
        /// B's hash key attribute.
        to_hash: String,
        /// B's range key attribute.
        to_range: String,
    },
    /// The entity is migrated twice.
    #[error("entity `{entity}` is already part of this migration; give each entity once")]
    DuplicateEntity {
        /// The entity (A's token).
        entity: String,
    },
    /// The two schemas have no entity in common.
    #[error(
        "schemas A ({from}) and B ({to}) have no entity token in common: nothing to migrate; pair the entities with `Migration::entity`"
    )]
    NothingInCommon {
        /// A's entity tokens.
        from: String,
        /// B's entity tokens.
        to: String,
    },
    /// A typed migration whose entity types are not part of their tables.
    #[error("{0}")]
    InvalidEntity(#[source] Box<Error>),
}

/// One entity's migration: its schema under A and B, and the transform between them.
#[derive(Clone)]
struct EntityMigration<'a> {
    from: EntitySchema<'a>,
    to: EntitySchema<'a>,
    transform: Option<TransformFn>,
    /// The version attribute of A's records and of B's, when the entity types have one
    /// ([`Migration::records`]): the read guard then compares the version alone, and every
    /// write increments it.
    versions: (Option<&'static str>, Option<&'static str>),
    /// The names under which A's and B's records store their fields, beyond the transcoded
    /// properties the models list ([`Migration::records`]): without a version, the read guard
    /// requires each one the record lacked to be still absent, so that a property another
    /// client set in between is not overwritten.
    fields: Vec<&'static str>,
}

impl std::fmt::Debug for EntityMigration<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntityMigration")
            .field("from", &self.from.model().token)
            .field("to", &self.to.model().token)
            .field("transform", &self.transform.is_some())
            .field("versions", &self.versions)
            .finish()
    }
}

/// A migration of one or more entities from schema A to schema B. See the
/// [module documentation](self).
#[derive(Clone, Debug, Default)]
pub struct Migration<'a> {
    entities: Vec<EntityMigration<'a>>,
}

/// What a migration reports after each page, to the progress callback.
#[derive(Debug)]
#[non_exhaustive]
pub struct MigrateProgress<'a> {
    /// The counts of the page just handled.
    pub page: &'a MigrateCounts,
    /// The counts of this run so far.
    pub counts: &'a MigrateCounts,
    /// The position to resume from if the migration stops now: save it.
    pub checkpoint: &'a ScanCheckpoint,
}

/// How a migration run ended.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct MigrateReport {
    /// The counts of this run (of the pages it recorded).
    pub counts: MigrateCounts,
    /// Whether every segment is done; `false` when the progress callback stopped the run.
    pub complete: bool,
    /// Where the migration stands (every segment done when `complete`).
    pub checkpoint: ScanCheckpoint,
}

/// What stopped a migration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MigrateFailure {
    /// A page could not be read.
    #[error("scan failed: {0}")]
    Scan(#[source] Box<StoreError>),
    /// The transform refused a record.
    #[error(
        "the transform failed on record {key} of entity `{entity}`: {source}; fix the transform (or the record)"
    )]
    Transform {
        /// The entity (A's token).
        entity: String,
        /// The record's stored key.
        key: KeyText,
        /// What the transform said.
        #[source]
        source: TransformError,
    },
    /// B's keys cannot be built for a record (a missing component, a value holding a
    /// delimiter, a key too long…).
    #[error("B's keys cannot be built for record {key} of entity `{entity}`: {source}")]
    Keys {
        /// The entity (A's token).
        entity: String,
        /// The record's stored key.
        key: KeyText,
        /// Why.
        #[source]
        source: Box<Error>,
    },
    /// A batch of in-place rewrites was not fully written.
    #[error("rewriting records in place failed: {source}")]
    Rewrite {
        /// The keys of the records not rewritten (they are after the checkpoint).
        unwritten: Vec<Item>,
        /// What the store reported.
        #[source]
        source: Box<BatchWriteError>,
    },
    /// Moving a record to its new primary key failed: neither the delete nor the put
    /// happened. A canceled transaction usually means another item already holds the new key
    /// (or the old one was deleted meanwhile).
    #[error("moving record {from} of entity `{entity}` to {to} failed (nothing written): {source}")]
    Move {
        /// The entity (A's token).
        entity: String,
        /// The record's old key.
        from: KeyText,
        /// Its new key.
        to: KeyText,
        /// What the store reported.
        #[source]
        source: Box<StoreError>,
    },
    /// The journal could not be written or read back ([`Migration::run_job`]).
    #[error("{0}")]
    Journal(#[source] Box<JournalError>),
    /// A record of the page in flight when the worker stopped could not be read back.
    #[error("reading back record {key} after a stop failed: {source}; run the job again")]
    Settle {
        /// The record's key.
        key: String,
        /// What the store reported.
        #[source]
        source: Box<StoreError>,
    },
}

/// A primary key, for messages: `(hash key, range key)`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct KeyText(pub PrimaryKey);

impl std::fmt::Display for KeyText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "({}, {})", self.0.hash_key, self.0.range_key)
    }
}

/// A migration that stopped on an error. Nothing is lost: every record not yet migrated is
/// after the [`checkpoint`](Self::checkpoint) (records of the failed page that were written
/// are recognized as migrated when the page is read again); resume from the checkpoint
/// ([`ParallelScan::resume`]) once the cause is fixed.
#[derive(Debug, thiserror::Error)]
#[error(
    "migration stopped after writing {written} records, with {remaining} of {total} segments unfinished: {source}; run it again from the checkpoint to finish",
    written = counts.total().written(),
    remaining = checkpoint.remaining(),
    total = checkpoint.total_segments()
)]
pub struct MigrateError {
    /// The counts of the pages this run recorded before it stopped.
    pub counts: MigrateCounts,
    /// The position to resume from: the pages before it are migrated.
    pub checkpoint: ScanCheckpoint,
    /// What failed.
    #[source]
    pub source: MigrateFailure,
}

/// What the dry run would do to one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    /// Rewritten in place.
    Rewrite,
    /// Moved to a new primary key.
    Move,
}

/// A record before and after, as the dry run plans it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Sample {
    /// The entity (A's token).
    pub entity: String,
    /// What would be done.
    pub action: Action,
    /// The stored item.
    pub before: Item,
    /// The item that would be written.
    pub after: Item,
}

/// A record the dry run found it cannot migrate.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlannedFailure {
    /// The entity (A's token).
    pub entity: String,
    /// The record's stored key.
    pub key: KeyText,
    /// Why (the message of the [`MigrateFailure`] a run would stop with).
    pub reason: String,
}

/// How many records of an entity a hash key holds before and after the migration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ShardCounts {
    /// Records under this hash key now.
    pub before: u64,
    /// Records under this hash key once migrated.
    pub after: u64,
}

/// What a migration would do, found without writing anything.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct DryRunReport {
    /// What would happen, per entity.
    pub counts: MigrateCounts,
    /// Per entity (A's token), per hash key (shard): records there before and after.
    pub shards: BTreeMap<String, BTreeMap<String, ShardCounts>>,
    /// Up to the number of samples asked for, records that would be written, before and
    /// after.
    pub samples: Vec<Sample>,
    /// Records that cannot be migrated (at most 100 listed; `counts` has them all).
    pub failures: Vec<PlannedFailure>,
}

/// The most failures a dry run lists.
const LISTED_FAILURES: usize = 100;

/// What to do with one item.
#[derive(Debug)]
enum Plan {
    /// Nothing: the migrated item is the item.
    Unchanged,
    /// Nothing: the item is in B's shape already.
    MigratedBefore,
    /// Put this item (same primary key).
    Rewrite(Item),
    /// Delete the item of key `old` and put this one.
    Move { old: Item, item: Item },
}

/// The outcome of one page in a run.
struct PageDone {
    counts: MigrateCounts,
    /// The new keys of the records moved.
    claimed: Vec<StoredKey>,
    /// The records found already migrated that the job may have written itself.
    found: Vec<Found>,
}

/// What became of one record in a run.
enum Outcome {
    Unchanged,
    MigratedBefore,
    Rewritten,
    Moved,
    Vanished,
}

/// What became of one record, and after how many conflicts.
struct Written {
    outcome: Outcome,
    conflicts: u64,
    /// A move's new key.
    to: Option<Item>,
    /// For a record found migrated (or unchanged): its key, when the job may have written
    /// it itself (a moved record, or one a stopped page rewrote).
    found: Option<Item>,
}

impl Written {
    fn new(outcome: Outcome, conflicts: u64) -> Self {
        Self {
            outcome,
            conflicts,
            to: None,
            found: None,
        }
    }
}

/// What a page of a job records in its journal, and the keys settled after a stop.
#[derive(Clone, Copy)]
struct JobContext<'j> {
    journal: &'j Journal,
    settled: &'j HashSet<StoredKey>,
}

/// Why one record could not be migrated: its rewrite (the item to put) failed, or anything
/// else.
enum Failed {
    Rewrite(Item, StoreError),
    Other(Box<MigrateFailure>),
}

impl EntityMigration<'_> {
    /// The condition that the record read as `item` is unchanged: its version, when the entity
    /// type has one, else every attribute it had (and every property of A or B it lacked
    /// still absent).
    fn unchanged(&self, item: &Item) -> Expect {
        let table = self.from.table();
        let known: Vec<&str> = [self.from.model(), self.to.model()]
            .into_iter()
            .flat_map(|m| {
                m.properties
                    .iter()
                    .map(|p| &*p.name)
                    .chain(m.generated.iter().map(|g| &*g.name))
            })
            .chain(self.fields.iter().copied())
            .collect();
        Expect::Matches(guarded::unchanged(
            item,
            &table.hash_key,
            &table.range_key,
            self.versions.0,
            &known,
        ))
    }

    /// `target` with B's version attribute incremented, when B's entity type has one.
    fn bump(&self, target: Item) -> Item {
        match self.versions.1 {
            Some(name) => guarded::bumped(target, name),
            None => target,
        }
    }
}

/// The outcome of one page in a dry run.
#[derive(Default)]
struct PagePlan {
    counts: MigrateCounts,
    shards: BTreeMap<String, BTreeMap<String, ShardCounts>>,
    samples: Vec<Sample>,
    failures: Vec<PlannedFailure>,
}

impl<'a> Migration<'a> {
    /// A migration of no entity yet: add them with [`entity`](Self::entity),
    /// [`entity_with`](Self::entity_with) or [`records`](Self::records).
    pub fn new() -> Self {
        Self::default()
    }

    /// Every entity the two schemas have in common (by token), with no transform. Entities
    /// only in A are not touched; entities only in B have no records yet.
    pub fn between(from: &'a Schema, to: &'a Schema) -> Result<Self, IncompatibleSchemas> {
        let mut migration = Self::new();
        for model in from.entities() {
            if let (Ok(a), Ok(b)) = (from.entity(&model.token), to.entity(&model.token)) {
                migration = migration.entity(a, b)?;
            }
        }
        if migration.entities.is_empty() {
            let tokens = |s: &Schema| {
                s.entities()
                    .iter()
                    .map(|e| e.token.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(IncompatibleSchemas::NothingInCommon {
                from: tokens(from),
                to: tokens(to),
            });
        }
        Ok(migration)
    }

    /// Migrates the records of `from` (schema A) to `to` (schema B), unchanged but for their
    /// keys.
    pub fn entity(
        self,
        from: EntitySchema<'a>,
        to: EntitySchema<'a>,
    ) -> Result<Self, IncompatibleSchemas> {
        self.push(from, to, None)
    }

    /// Migrates the records of `from` to `to` through `transform`, which gets each item
    /// without A's keys and returns the item B's keys are added to. See the
    /// [module documentation](self) on idempotence.
    pub fn entity_with<F>(
        self,
        from: EntitySchema<'a>,
        to: EntitySchema<'a>,
        transform: F,
    ) -> Result<Self, IncompatibleSchemas>
    where
        F: Fn(Item) -> Result<Item, TransformError> + Send + Sync + 'static,
    {
        self.push(from, to, Some(Arc::new(transform)))
    }

    /// Migrates the records of entity type `A` to entity type `B` (two sets of Rust entities,
    /// in their tables' schemas) through `transform`, record to record.
    ///
    /// An item that does not read as an `A` is a [`MigrateFailure::Transform`] error.
    ///
    /// Each write is conditioned on the record being unchanged since the scan read it. With a
    /// version (`#[entity(version = ..)]`) that is the version read; without one, every
    /// attribute read must still have its value and every field of `A` and of `B` the record
    /// lacked must still be absent (the fields as their `Deserialize` names them: a property
    /// another client set in between is never overwritten). A struct with a
    /// `#[serde(flatten)]` field does not name its fields: give such an entity a version.
    pub fn records<A, B, F>(self, transform: F) -> Result<Self, IncompatibleSchemas>
    where
        A: Entity + DeserializeOwned,
        B: Entity + Serialize + DeserializeOwned,
        F: Fn(A) -> B + Send + Sync + 'static,
    {
        let from = schema_of::<A>().map_err(|e| IncompatibleSchemas::InvalidEntity(Box::new(e)))?;
        let to = schema_of::<B>().map_err(|e| IncompatibleSchemas::InvalidEntity(Box::new(e)))?;
        let keys = 2 + to.model().generated.len();
        let transform = move |item: Item| -> Result<Item, TransformError> {
            let record: A = serde_dynamo::from_item(item)?;
            Ok(crate::keys::record_item(&transform(record), keys)?)
        };
        let mut migration = self.push(from, to, Some(Arc::new(transform)))?;
        if let Some(e) = migration.entities.last_mut() {
            e.versions = (A::VERSION, B::VERSION);
            e.fields = [
                crate::entity::stored_field_names::<A>(),
                crate::entity::stored_field_names::<B>(),
            ]
            .concat();
        }
        Ok(migration)
    }

    fn push(
        mut self,
        from: EntitySchema<'a>,
        to: EntitySchema<'a>,
        transform: Option<TransformFn>,
    ) -> Result<Self, IncompatibleSchemas> {
        let (a, b) = (from.table(), to.table());
        if a.hash_key != b.hash_key || a.range_key != b.range_key {
            return Err(IncompatibleSchemas::TableKeys {
                entity: from.model().token.to_string(),
                from_hash: a.hash_key.to_string(),
                from_range: a.range_key.to_string(),
                to_hash: b.hash_key.to_string(),
                to_range: b.range_key.to_string(),
            });
        }
        if self
            .entities
            .iter()
            .any(|e| e.from.model().token == from.model().token)
        {
            return Err(IncompatibleSchemas::DuplicateEntity {
                entity: from.model().token.to_string(),
            });
        }
        self.entities.push(EntityMigration {
            from,
            to,
            transform,
            versions: (None, None),
            fields: Vec::new(),
        });
        Ok(self)
    }

    /// The scan filter that keeps the records of the migrated entities (by A's token).
    pub fn filter(&self) -> Option<Filter> {
        let mut filters: Vec<Filter> = self
            .entities
            .iter()
            .map(|e| entity_filter(&e.from))
            .collect();
        match filters.len() {
            0 => None,
            1 => filters.pop(),
            _ => Some(Filter::Or(filters)),
        }
    }

    /// The migrated entity an item belongs to, by the token of its hash key.
    fn route(&self, item: &Item) -> Option<&EntityMigration<'a>> {
        self.route_index(item).and_then(|at| self.entities.get(at))
    }

    /// The position in `entities` of the migrated entity an item belongs to.
    fn route_index(&self, item: &Item) -> Option<usize> {
        let first = self.entities.first()?;
        let table = first.from.table();
        let Some(AttributeValue::S(hash_key)) = item.get(&*table.hash_key) else {
            return None;
        };
        self.entities.iter().position(|e| {
            let d = &*e.from.table().delimiters.shard_key;
            hash_key
                .strip_prefix(&*e.from.model().token)
                .is_some_and(|rest| rest.starts_with(d))
        })
    }

    /// Runs the migration over what `scan` finds (its filter is replaced by
    /// [`filter`](Self::filter)), up to `throttle` segments at once.
    ///
    /// After each page is written, `progress` gets the page's counts, this run's counts and
    /// the new checkpoint; returning [`ControlFlow::Break`] stops the migration: no new page
    /// starts, the pages in flight are finished and reported, and the report says whether
    /// anything is left. The first error stops it the same way and carries the checkpoint.
    pub async fn run<S, P>(
        &self,
        scan: ParallelScan<'_, S>,
        progress: P,
    ) -> Result<MigrateReport, MigrateError>
    where
        S: Store,
        P: FnMut(&MigrateProgress<'_>) -> ControlFlow<()>,
    {
        self.run_inner(scan, None, progress).await
    }

    /// [`run`](Self::run) as one worker of a job ([`job`](crate::job)): resumes from
    /// `journal` (this scan's position and share are replaced by the journal's), settles the
    /// page that was in flight when the worker last stopped (each record it was writing is
    /// read back by key: a record gone from its old key and present at its new one was moved),
    /// and records every page before and after its writes. The report is of this run;
    /// [`Journal::report`] and [`merge`](crate::job::merge) give the job's exact totals, each
    /// record counted once however often its worker was stopped, and a record found again
    /// after this job moved it not counted again.
    pub async fn run_job<S, P>(
        &self,
        scan: ParallelScan<'_, S>,
        journal: &Journal,
        progress: P,
    ) -> Result<MigrateReport, MigrateError>
    where
        S: Store,
        P: FnMut(&MigrateProgress<'_>) -> ControlFlow<()>,
    {
        let state = journal.state();
        let mut scan = scan;
        scan.checkpoint = state.checkpoint.clone();
        let fail = |source| MigrateError {
            counts: MigrateCounts::default(),
            checkpoint: state.checkpoint.clone(),
            source,
        };
        let mut settled = state.settled.clone();
        for (segment, planned) in &state.in_flight {
            let tally = self
                .settle(scan.store, planned)
                .await
                .map_err(|e| fail(*e))?;
            settled.extend(tally.claimed.iter().cloned());
            journal
                .append(Entry::Settled {
                    segment: *segment,
                    tally,
                })
                .await
                .map_err(|e| fail(MigrateFailure::Journal(Box::new(e))))?;
        }
        let context = JobContext {
            journal,
            settled: &settled,
        };
        self.run_inner(scan, Some(context), progress).await
    }

    /// Settles a page stopped in flight: each record it was writing is read back by key; one
    /// written is counted as such, one not written (or whose write is still on its way) is
    /// written now, under the usual condition, and counted by its outcome.
    async fn settle<S: Store>(
        &self,
        store: &S,
        planned: &[Planned],
    ) -> Result<Tally, Box<MigrateFailure>> {
        let definition = store.definition();
        let mut tally = Tally::default();
        let get = |key: &StoredKey| {
            let key = key.to_item(definition);
            async move {
                match key {
                    Some(key) => store.get_item(&key, None).await.map_err(|source| {
                        Box::new(MigrateFailure::Settle {
                            key: format!("{key:?}"),
                            source: Box::new(source),
                        })
                    }),
                    None => Ok(None),
                }
            }
        };
        for p in planned {
            let Some(at) = self
                .entities
                .iter()
                .position(|e| *e.from.model().token == *p.entity)
            else {
                continue;
            };
            let Some(e) = self.entities.get(at) else {
                continue;
            };
            let counted = match (get(&p.key).await?, &p.to) {
                // not written yet (or its write is still on its way): written now, under
                // the usual condition, so that the page read again does not depend on it
                (Some(now), _) => match Self::plan(e, &now)? {
                    // already what the write makes: the rewrite was done
                    Plan::MigratedBefore | Plan::Unchanged if p.to.is_none() => {
                        Written::new(Outcome::Rewritten, 0)
                    }
                    plan => match self.write(store, at, now, plan, None).await {
                        Ok((_, written)) => written,
                        Err(Failed::Other(failure)) => return Err(failure),
                        Err(Failed::Rewrite(_, source)) => {
                            return Err(Box::new(MigrateFailure::Settle {
                                key: format!("{:?}", p.key),
                                source: Box::new(source),
                            }));
                        }
                    },
                },
                (None, Some(to)) => {
                    let mut written = Written::new(Outcome::Vanished, 0);
                    if get(to).await?.is_some() {
                        written = Written::new(Outcome::Moved, 0);
                        written.to = to.to_item(definition);
                    }
                    written
                }
                (None, None) => Written::new(Outcome::Vanished, 0),
            };
            let c = tally.migrate.entities.entry(p.entity.clone()).or_default();
            c.scanned += 1;
            c.conflicts += counted.conflicts;
            match counted.outcome {
                Outcome::Rewritten => {
                    c.rewritten += 1;
                    tally.claimed.push(p.key.clone());
                }
                Outcome::Moved => {
                    c.moved += 1;
                    if let Some(to) = &counted.to {
                        tally.claimed.push(StoredKey::of(to, definition));
                    }
                }
                // counted here, so claimed: the page read again finds it where it is and
                // the merge withdraws that count (each record counted once)
                Outcome::Unchanged => {
                    c.unchanged += 1;
                    tally.claimed.push(p.key.clone());
                }
                Outcome::MigratedBefore => {
                    c.migrated_before += 1;
                    tally.claimed.push(p.key.clone());
                }
                Outcome::Vanished => c.vanished += 1,
            }
        }
        Ok(tally)
    }

    async fn run_inner<S, P>(
        &self,
        scan: ParallelScan<'_, S>,
        job: Option<JobContext<'_>>,
        mut progress: P,
    ) -> Result<MigrateReport, MigrateError>
    where
        S: Store,
        P: FnMut(&MigrateProgress<'_>) -> ControlFlow<()>,
    {
        let scan = self.prepare(scan);
        let store = scan.store();
        let writes = scan.writes;
        let mut checkpoint = scan.checkpoint().clone();
        let mut counts = MigrateCounts::default();
        let halt = Arc::new(AtomicBool::new(false));
        let mut steps = scan.drive(Some(&halt), move |segment, items: Vec<Item>| async move {
            let page_span =
                crate::trace::op_span!("entity_manager.migrate_page", items = items.len());
            let page = self.migrate_page(store, items, job.map(|c| (c, segment)), writes);
            crate::trace::operation(page_span, page).await
        });
        let mut failure = None;
        while let Some(step) = steps.next().await {
            match step {
                Ok(step) => {
                    if let Some(context) = job {
                        let entry = Entry::Done {
                            segment: step.segment,
                            next: step.next.clone(),
                            tally: Tally {
                                migrate: step.output.counts.clone(),
                                claimed: step.output.claimed,
                                found: step.output.found,
                                ..Tally::default()
                            },
                        };
                        if let Err(e) = context.journal.append(entry).await {
                            halt.store(true, Ordering::SeqCst);
                            failure.get_or_insert(MigrateFailure::Journal(Box::new(e)));
                            continue;
                        }
                    }
                    counts.add(&step.output.counts);
                    checkpoint.set(step.segment, step.next);
                    let flow = progress(&MigrateProgress {
                        page: &step.output.counts,
                        counts: &counts,
                        checkpoint: &checkpoint,
                    });
                    if flow.is_break() {
                        halt.store(true, Ordering::SeqCst);
                    }
                }
                Err(StepError::Scan { source, .. }) => {
                    halt.store(true, Ordering::SeqCst);
                    failure.get_or_insert(MigrateFailure::Scan(Box::new(source)));
                }
                Err(StepError::Action { source }) => {
                    halt.store(true, Ordering::SeqCst);
                    failure.get_or_insert(*source);
                }
            }
        }
        if let Some(source) = failure {
            return Err(MigrateError {
                counts,
                checkpoint,
                source,
            });
        }
        Ok(MigrateReport {
            complete: checkpoint.is_done(),
            counts,
            checkpoint,
        })
    }

    /// Plans the migration of everything `scan` finds (its filter is replaced by
    /// [`filter`](Self::filter)) without writing anything: counts per entity and per shard,
    /// up to `samples` records before and after, and the records that cannot be migrated.
    pub async fn dry_run<S: Store>(
        &self,
        scan: ParallelScan<'_, S>,
        samples: usize,
    ) -> Result<DryRunReport, MigrateError> {
        let scan = self.prepare(scan);
        let mut checkpoint = scan.checkpoint().clone();
        let mut report = DryRunReport {
            counts: MigrateCounts::default(),
            shards: BTreeMap::new(),
            samples: Vec::new(),
            failures: Vec::new(),
        };
        let mut steps = scan.drive(None, move |_, items: Vec<Item>| {
            std::future::ready(Ok::<_, std::convert::Infallible>(
                self.plan_page(&items, samples),
            ))
        });
        while let Some(step) = steps.next().await {
            match step {
                Ok(step) => {
                    checkpoint.set(step.segment, step.next);
                    let page = step.output;
                    report.counts.add(&page.counts);
                    for (entity, shards) in page.shards {
                        let mine = report.shards.entry(entity).or_default();
                        for (hash_key, c) in shards {
                            let slot = mine.entry(hash_key).or_default();
                            slot.before += c.before;
                            slot.after += c.after;
                        }
                    }
                    let room = samples.saturating_sub(report.samples.len());
                    report.samples.extend(page.samples.into_iter().take(room));
                    let room = LISTED_FAILURES.saturating_sub(report.failures.len());
                    report.failures.extend(page.failures.into_iter().take(room));
                }
                Err(StepError::Scan { source, .. }) => {
                    return Err(MigrateError {
                        counts: report.counts,
                        checkpoint,
                        source: MigrateFailure::Scan(Box::new(source)),
                    });
                }
                Err(StepError::Action { source }) => match source {},
            }
        }
        Ok(report)
    }

    fn prepare<'s, S: Store>(&self, mut scan: ParallelScan<'s, S>) -> ParallelScan<'s, S> {
        scan.filter = self.filter();
        scan
    }

    /// What to do with `item` of entity `e`.
    fn plan(e: &EntityMigration<'_>, item: &Item) -> Result<Plan, Box<MigrateFailure>> {
        if in_shape(&e.to, &e.from, item) && !in_shape(&e.from, &e.to, item) {
            return Ok(Plan::MigratedBefore);
        }
        let entity = || e.from.model().token.to_string();
        let stripped = e.from.remove_keys(item);
        let transformed = match &e.transform {
            Some(transform) => transform(stripped).map_err(|source| {
                Box::new(MigrateFailure::Transform {
                    entity: entity(),
                    key: key_text(e, item),
                    source,
                })
            })?,
            None => stripped,
        };
        let target =
            e.to.refresh_keys(&transformed)
                .map_err(|source| MigrateFailure::Keys {
                    entity: entity(),
                    key: key_text(e, item),
                    source: Box::new(source),
                })?;
        if target == *item {
            return Ok(Plan::Unchanged);
        }
        let table = e.from.table();
        let same_key = [&table.hash_key, &table.range_key]
            .iter()
            .all(|name| target.get(&***name) == item.get(&***name));
        if same_key {
            Ok(Plan::Rewrite(target))
        } else {
            Ok(Plan::Move {
                old: table_key(e, item),
                item: target,
            })
        }
    }

    /// Records in the journal the writes a page is about to make.
    async fn begin(
        &self,
        journal: &Journal,
        segment: u32,
        work: &[(usize, Item, Plan)],
        definition: &crate::store::TableDefinition,
    ) -> Result<(), Box<MigrateFailure>> {
        let planned: Vec<Planned> = work
            .iter()
            .filter_map(|(at, item, plan)| {
                let to = match plan {
                    Plan::Rewrite(_) => None,
                    Plan::Move { item: target, .. } => Some(StoredKey::of(target, definition)),
                    Plan::Unchanged | Plan::MigratedBefore => return None,
                };
                Some(Planned {
                    entity: self.entities.get(*at)?.from.model().token.to_string(),
                    key: StoredKey::of(item, definition),
                    to,
                })
            })
            .collect();
        if planned.is_empty() {
            return Ok(());
        }
        journal
            .append(Entry::Begin { segment, planned })
            .await
            .map_err(|e| Box::new(MigrateFailure::Journal(Box::new(e))))
    }

    /// Plans and writes one page: each rewrite a conditioned put, each move a transaction
    /// (the delete conditioned on the record as read), [`PARALLEL_WRITES`] at once; a write
    /// whose record changed meanwhile is planned again from the record as it is now.
    #[allow(clippy::too_many_lines)] // plan, journal, write and count one page
    async fn migrate_page<S: Store>(
        &self,
        store: &S,
        items: Vec<Item>,
        job: Option<(JobContext<'_>, u32)>,
        writes: BulkWrites,
    ) -> Result<PageDone, Box<MigrateFailure>> {
        let definition = store.definition();
        let mut counts = MigrateCounts::default();
        let mut work = Vec::new();
        for item in items {
            let Some(at) = self.route_index(&item) else {
                counts.other += 1;
                continue;
            };
            let Some(e) = self.entities.get(at) else {
                continue;
            };
            let plan = Self::plan(e, &item)?;
            work.push((at, item, plan));
        }
        let rewrites = work
            .iter()
            .filter(|(_, _, plan)| matches!(plan, Plan::Rewrite(_)))
            .count();
        if let Some((context, segment)) = job {
            self.begin(context.journal, segment, &work, definition)
                .await?;
        }
        let settled = job.map(|(context, _)| context.settled);
        let (mut done, work) = match writes {
            BulkWrites::Exclusive => self.write_exclusive(store, work).await?,
            _ => (Vec::new(), work),
        };
        done.extend(
            futures::stream::iter(work)
                .map(|(at, item, plan)| self.write(store, at, item, plan, settled))
                .buffer_unordered(PARALLEL_WRITES)
                .collect::<Vec<_>>()
                .await,
        );
        let mut unwritten = Vec::new();
        let (mut claimed, mut found) = (Vec::new(), Vec::new());
        let mut first: Option<Failed> = None;
        for result in done {
            match result {
                Ok((at, written)) => {
                    let token = self
                        .entities
                        .get(at)
                        .map(|e| e.from.model().token.to_string());
                    let c = counts
                        .entities
                        .entry(token.unwrap_or_default())
                        .or_default();
                    c.scanned += 1;
                    c.conflicts += written.conflicts;
                    if let Some(to) = &written.to {
                        claimed.push(StoredKey::of(to, definition));
                    }
                    if let (Some(key), Some(e)) = (&written.found, self.entities.get(at)) {
                        found.push(Found {
                            entity: e.from.model().token.to_string(),
                            key: StoredKey::of(key, definition),
                            unchanged: matches!(written.outcome, Outcome::Unchanged),
                        });
                    }
                    match written.outcome {
                        Outcome::Unchanged => c.unchanged += 1,
                        Outcome::MigratedBefore => c.migrated_before += 1,
                        Outcome::Rewritten => c.rewritten += 1,
                        Outcome::Moved => c.moved += 1,
                        Outcome::Vanished => c.vanished += 1,
                    }
                }
                Err(Failed::Rewrite(target, source)) => {
                    unwritten.push(WriteRequest::Put(target));
                    if first.is_none() {
                        first = Some(Failed::Rewrite(Item::default(), source));
                    }
                }
                Err(other) => {
                    if !matches!(first, Some(Failed::Other(_))) {
                        first = Some(other);
                    }
                }
            }
        }
        match first {
            None => Ok(PageDone {
                counts,
                claimed,
                found,
            }),
            Some(Failed::Other(failure)) => Err(failure),
            Some(Failed::Rewrite(_, source)) => {
                let keys = unwritten
                    .iter()
                    .filter_map(|w| match w {
                        WriteRequest::Put(item) => self.route(item).map(|e| table_key(e, item)),
                        WriteRequest::Delete(key) => Some(key.clone()),
                    })
                    .collect();
                Err(Box::new(MigrateFailure::Rewrite {
                    unwritten: keys,
                    source: Box::new(BatchWriteError::new(unwritten, rewrites, source)),
                }))
            }
        }
    }

    /// The writes of a page's records in unconditioned batches ([`BulkWrites::Exclusive`]):
    /// every new item put, then every old key of a move deleted (a kill between the two
    /// leaves both, which the worker that resumes settles). Returns the records written and
    /// the work left (the records with nothing to write).
    #[allow(clippy::type_complexity)] // the records written, and the work left
    async fn write_exclusive<S: Store>(
        &self,
        store: &S,
        work: Vec<(usize, Item, Plan)>,
    ) -> Result<
        (
            Vec<Result<(usize, Written), Failed>>,
            Vec<(usize, Item, Plan)>,
        ),
        Box<MigrateFailure>,
    > {
        let (mut puts, mut deletes, mut done, mut rest) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (at, item, plan) in work {
            let Some(e) = self.entities.get(at) else {
                continue;
            };
            match plan {
                Plan::Rewrite(target) => {
                    puts.push(WriteRequest::Put(e.bump(target)));
                    done.push(Ok((at, Written::new(Outcome::Rewritten, 0))));
                }
                Plan::Move { old, item: target } => {
                    let target = e.bump(target);
                    let mut written = Written::new(Outcome::Moved, 0);
                    written.to = Some(table_key(e, &target));
                    puts.push(WriteRequest::Put(target));
                    deletes.push(WriteRequest::Delete(old));
                    done.push(Ok((at, written)));
                }
                plan => rest.push((at, item, plan)),
            }
        }
        for batch in [puts, deletes] {
            if batch.is_empty() {
                continue;
            }
            store.batch_write(batch).await.map_err(|source| {
                let keys = source
                    .unwritten
                    .iter()
                    .filter_map(|w| match w {
                        WriteRequest::Put(item) => self.route(item).map(|e| table_key(e, item)),
                        WriteRequest::Delete(key) => Some(key.clone()),
                    })
                    .collect();
                Box::new(MigrateFailure::Rewrite {
                    unwritten: keys,
                    source: Box::new(source),
                })
            })?;
        }
        Ok((done, rest))
    }

    /// Carries out the plan of one record read as `item`: a put or a move conditioned on the
    /// record being unchanged; when it changed, the record as it is now is planned again, up to
    /// [`MAX_REDO`](guarded::MAX_REDO) times.
    #[allow(clippy::too_many_lines)] // one record: each way its write can end, in one loop
    async fn write<S: Store>(
        &self,
        store: &S,
        at: usize,
        mut item: Item,
        mut plan: Plan,
        settled: Option<&HashSet<StoredKey>>,
    ) -> Result<(usize, Written), Failed> {
        let Some(e) = self.entities.get(at) else {
            return Ok((at, Written::new(Outcome::Unchanged, 0)));
        };
        let mut conflicts = 0u64;
        // the item a move is writing, while it is being written
        let mut moving: Option<Item>;
        loop {
            let now = match plan {
                Plan::Unchanged | Plan::MigratedBefore => {
                    let outcome = if matches!(plan, Plan::Unchanged) {
                        Outcome::Unchanged
                    } else {
                        Outcome::MigratedBefore
                    };
                    let mut written = Written::new(outcome, conflicts);
                    written.found =
                        settled.and_then(|s| found(e, &item, &plan, s, store.definition()));
                    return Ok((at, written));
                }
                Plan::Rewrite(target) => {
                    let target = e.bump(target);
                    moving = None;
                    match store.put_item(target.clone(), e.unchanged(&item)).await {
                        Ok(()) => return Ok((at, Written::new(Outcome::Rewritten, conflicts))),
                        // the record is already what this write makes: a write sent before a
                        // stop, finished after it
                        Err(err)
                            if guarded::refused(&err) && err.current_item() == Some(&target) =>
                        {
                            return Ok((at, Written::new(Outcome::Rewritten, conflicts + 1)));
                        }
                        Err(err) if guarded::refused(&err) && conflicts < guarded::MAX_REDO => {
                            err.current_item().cloned()
                        }
                        Err(err) => return Err(Failed::Rewrite(target, guarded::too_wide(err))),
                    }
                }
                Plan::Move { old, item: target } => {
                    let target = e.bump(target);
                    moving = Some(target.clone());
                    let writes = vec![
                        TransactWrite::Delete {
                            key: old.clone(),
                            expect: e.unchanged(&item),
                        },
                        TransactWrite::Put {
                            item: target.clone(),
                            expect: Expect::Absent,
                        },
                    ];
                    match store.transact_write(writes).await {
                        Ok(()) => {
                            let mut written = Written::new(Outcome::Moved, conflicts);
                            written.to = Some(table_key(e, &target));
                            return Ok((at, written));
                        }
                        Err(err)
                            if conflicts < guarded::MAX_REDO
                                && err.cancellation_reasons().first().is_some_and(
                                    CancellationReason::is_conditional_check_failed,
                                ) =>
                        {
                            err.cancellation_reasons()
                                .first()
                                .and_then(|r| r.item.clone())
                        }
                        // refused on a resend after an unanswered attempt (its reasons are
                        // not kept): what the old key holds now says what is left to do (gone:
                        // the move may be this one's, which is checked below)
                        Err(err)
                            if conflicts < guarded::MAX_REDO
                                && err.is_refused_after_lost_answer() =>
                        {
                            match store.get_item(&old, None).await {
                                Ok(now) => now,
                                Err(_) => {
                                    return Err(Failed::Other(Box::new(MigrateFailure::Move {
                                        entity: e.from.model().token.to_string(),
                                        from: key_text(e, &old),
                                        to: key_text(e, &target),
                                        source: Box::new(guarded::too_wide(err)),
                                    })));
                                }
                            }
                        }
                        // the new item is there already, the old one unchanged: a move of an
                        // exclusive job stopped between its put and its delete
                        Err(err)
                            if conflicts < guarded::MAX_REDO
                                && err.cancellation_reasons().get(1).is_some_and(|r| {
                                    r.is_conditional_check_failed()
                                        && r.item.as_ref() == Some(&target)
                                }) =>
                        {
                            match finish_move(store, e, (&old, &item), &target).await {
                                Ok(()) => {
                                    let mut written = Written::new(Outcome::Moved, conflicts);
                                    written.to = Some(table_key(e, &target));
                                    return Ok((at, written));
                                }
                                Err(Ok(now)) => now,
                                Err(Err(failure)) => return Err(Failed::Other(failure)),
                            }
                        }
                        Err(err) => {
                            return Err(Failed::Other(Box::new(MigrateFailure::Move {
                                entity: e.from.model().token.to_string(),
                                from: key_text(e, &old),
                                to: key_text(e, &target),
                                source: Box::new(guarded::too_wide(err)),
                            })));
                        }
                    }
                }
            };
            conflicts += 1;
            let Some(now) = now else {
                if let Some(target) = moving.take()
                    && let Ok(Some(there)) = store.get_item(&table_key(e, &target), None).await
                    && there == target
                {
                    // moved already, by a move sent before a stop and finished after it
                    let mut written = Written::new(Outcome::Moved, conflicts);
                    written.to = Some(table_key(e, &target));
                    return Ok((at, written));
                }
                return Ok((at, Written::new(Outcome::Vanished, conflicts)));
            };
            plan = Self::plan(e, &now).map_err(Failed::Other)?;
            item = now;
        }
    }

    /// Plans one page without writing.
    fn plan_page(&self, items: &[Item], samples: usize) -> PagePlan {
        let mut page = PagePlan::default();
        for item in items {
            let Some(e) = self.route(item) else {
                page.counts.other += 1;
                continue;
            };
            let entity = e.from.model().token.to_string();
            let table = e.from.table();
            let hash_of = |item: &Item| match item.get(&*table.hash_key) {
                Some(AttributeValue::S(s)) => s.clone(),
                _ => String::new(),
            };
            let c = page.counts.entities.entry(entity.clone()).or_default();
            c.scanned += 1;
            let shards = page.shards.entry(entity.clone()).or_default();
            shards.entry(hash_of(item)).or_default().before += 1;
            let (after, sample) = match Self::plan(e, item) {
                Ok(Plan::Unchanged) => {
                    c.unchanged += 1;
                    (Some(item.clone()), None)
                }
                Ok(Plan::MigratedBefore) => {
                    c.migrated_before += 1;
                    (Some(item.clone()), None)
                }
                Ok(Plan::Rewrite(target)) => {
                    c.rewritten += 1;
                    (Some(target), Some(Action::Rewrite))
                }
                Ok(Plan::Move { item: target, .. }) => {
                    c.moved += 1;
                    (Some(target), Some(Action::Move))
                }
                Err(failure) => {
                    c.failed += 1;
                    page.failures.push(PlannedFailure {
                        entity: entity.clone(),
                        key: key_text(e, item),
                        reason: failure.to_string(),
                    });
                    (None, None)
                }
            };
            if let Some(after) = after {
                shards.entry(hash_of(&after)).or_default().after += 1;
                if let Some(action) = sample
                    && page.samples.len() < samples
                {
                    page.samples.push(Sample {
                        entity,
                        action,
                        before: item.clone(),
                        after,
                    });
                }
            }
        }
        page
    }
}

/// Deletes the old item of a move whose new item is already there (an exclusive move stopped
/// between its put and its delete), conditioned on the old one being unchanged since read as
/// `item`. `Err(Ok(now))`: the old item changed (or went); `now` is what it is now.
async fn finish_move<S: Store>(
    store: &S,
    e: &EntityMigration<'_>,
    (old, item): (&Item, &Item),
    target: &Item,
) -> Result<(), Result<Option<Item>, Box<MigrateFailure>>> {
    match store.delete_item(old, e.unchanged(item)).await {
        Ok(()) => Ok(()),
        Err(err) if guarded::refused(&err) => Err(Ok(err.current_item().cloned())),
        Err(err) => Err(Err(Box::new(MigrateFailure::Move {
            entity: e.from.model().token.to_string(),
            from: key_text(e, old),
            to: key_text(e, target),
            source: Box::new(guarded::too_wide(err)),
        }))),
    }
}

/// The key of a record a job found migrated (or unchanged), when the job may have written it
/// itself: a record away from the key A gives it (moved), or one a stopped page rewrote
/// (`settled`).
fn found(
    e: &EntityMigration<'_>,
    item: &Item,
    plan: &Plan,
    settled: &HashSet<StoredKey>,
    definition: &crate::store::TableDefinition,
) -> Option<Item> {
    let here = StoredKey::of(item, definition);
    let moved_here = matches!(plan, Plan::MigratedBefore)
        && !e
            .from
            .refresh_keys(item)
            .is_ok_and(|a| StoredKey::of(&a, definition) == here);
    (moved_here || settled.contains(&here)).then(|| table_key(e, item))
}

/// Whether `item` is in the shape of `this` schema: its keys are exactly those `this` computes
/// from it, and it carries no generated property of `other` that `this` does not declare
/// (a leftover of the other schema), unless `this` has a transcoded property of that name.
fn in_shape(this: &EntitySchema<'_>, other: &EntitySchema<'_>, item: &Item) -> bool {
    let leftover = other.model().generated.iter().any(|g| {
        this.model().generated_property(&g.name).is_none()
            && this.model().property(&g.name).is_none()
            && item.contains_key(&*g.name)
    });
    !leftover && this.refresh_keys(item).is_ok_and(|keyed| keyed == *item)
}

/// The table key of an item (its hash and range key attributes).
fn table_key(e: &EntityMigration<'_>, item: &Item) -> Item {
    let table = e.from.table();
    let key: HashMap<String, AttributeValue> = [&table.hash_key, &table.range_key]
        .into_iter()
        .filter_map(|name| Some((name.to_string(), item.get(&**name)?.clone())))
        .collect();
    key.into()
}

/// The stored key of an item, for messages.
fn key_text(e: &EntityMigration<'_>, item: &Item) -> KeyText {
    let table = e.from.table();
    let text = |name: &str| match item.get(name) {
        Some(AttributeValue::S(s)) => s.clone(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    };
    KeyText(PrimaryKey {
        hash_key: text(&table.hash_key),
        range_key: text(&table.range_key),
    })
}
