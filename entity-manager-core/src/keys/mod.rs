//! Building and reading keys, by job: [`write`](mod@write) builds and reads the keys of one
//! item, [`space`] lists the hash keys a query visits.
//!
//! Every operation is a method of [`EntitySchema`](crate::EntitySchema); all are pure.

mod record;
mod space;
mod write;

pub(crate) use record::record_item;
pub use space::MAX_HASH_KEY_SPACE;
pub use write::PrimaryKey;
pub(crate) use write::present;
