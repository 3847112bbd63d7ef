//! Typed entity operations over any [`Store`](crate::store::Store): read by id, create once,
//! put, delete, batches and transactions, with keys always derived from the record.
//!
//! A record's primary key depends on its timestamp (which picks the shard bump). Reading or
//! deleting by id alone therefore considers one candidate key per bump
//! ([`EntitySchema::primary_keys`](crate::EntitySchema::primary_keys)), all in one round trip;
//! creating checks every candidate so that a unique value exists at most once in the whole table.
//!
//! One file per kind of operation: `read` (by id, with the proof of absence), `write`
//! (create, put, delete, move), `update` (typed changes and closures), `batch` and
//! `transaction` (the write and the read transaction), over the conditions and typed errors
//! they share (`condition`).

mod batch;
mod condition;
mod read;
mod transaction;
mod update;
mod write;

pub(crate) use batch::{delete_many, put_many};
pub(crate) use read::{get, get_many};
pub use transaction::{ReadHandle, ReadResults, ReadTransaction, Transaction};
pub(crate) use update::{modify, update};
pub(crate) use write::{create, delete, move_record, put};
