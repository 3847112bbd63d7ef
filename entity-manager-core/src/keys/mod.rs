//! Building and reading keys, by job: [`write`] builds and reads the keys of one item,
//! [`space`] lists the hash keys a query visits.
//!
//! Every operation is a method of [`EntitySchema`](crate::EntitySchema); all are pure.

mod space;
mod write;

pub use space::MAX_HASH_KEY_SPACE;
pub use write::PrimaryKey;
pub(crate) use write::present;
