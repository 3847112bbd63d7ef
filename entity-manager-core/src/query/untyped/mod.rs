//! The untyped queries, for schemas with no Rust types (a TypeScript configuration read with
//! [`Schema::from_ts_config`](crate::Schema::from_ts_config)): indexes named by string,
//! conditions as [`RangeCondition`](crate::store::RangeCondition)s and
//! [`Filter`](crate::store::Filter)s, items as attribute maps.
//!
//! - [`Query`]: one entity over its classic indexes and the table.
//! - [`MultiQuery`]: one entity, or an item collection, over a multi-attribute index.
//! - [`CollectionQuery`](crate::query::CollectionQuery): an item collection's query whose items are tagged with their member
//!   entity ([`MemberItem`](crate::query::MemberItem)), from [`MultiQuery::tagged`].
//!
//! With `#[derive(Entity)]`, use the typed door instead, `User::query(&store)?.index(..)`
//! ([`QueryStart`](super::QueryStart)): it checks at compile time what the index accepts and
//! returns records. Both run on the same plan, the same engine and the same page token: a
//! typed query's [`untyped`](super::TypedQuery::untyped) view pages exactly as it does.

mod classic;
mod multi;

pub use self::classic::{Indexed, Query, Unindexed};
pub use self::multi::MultiQuery;
