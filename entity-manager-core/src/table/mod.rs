//! The table itself, apart from the data plane: its definition (key schema, indexes, billing,
//! TTL, Streams, recovery, protection, tags; derived from the entities and rendered as a
//! `CreateTable` request or a `CloudFormation` resource), the drift check between a definition
//! and a live table, and the stamp that records how the table's keys are made.
//!
//! The stores are built from a [`TableDefinition`] and the store seam re-exports every public
//! item here (`entity_manager_core::store::TableDefinition` and so on): this module imports
//! nothing of `store`, which stands above it.

mod definition;
mod drift;
mod infer;
mod stamp;

pub use definition::{
    Billing, Capacity, GlobalIndex, KeyAttribute, LocalIndex, StreamView, TableDefinition,
    TableDefinitionError, is_stamp, stamp_key,
};
pub(crate) use definition::{key_type_name, stampable};
pub use drift::{Drift, DriftReport, IndexKind, KeySchemaNames, LiveTable, Setting};
pub(crate) use infer::KeyModels;
pub use infer::{Inference, SAMPLE_MAX, SAMPLE_PER_ENTITY};
pub(crate) use stamp::fnv1a;
pub use stamp::{
    MAX_STAMP_SCHEMA_BYTES, STAMP_ATTRIBUTE, STAMP_HASH_KEY, STAMP_MISMATCH_CODE, STAMP_RANGE_KEY,
    TableStamp,
};
