//! Cross-shard, multi-index queries: throttled parallel reads over every shard of every index,
//! merged, deduplicated, sorted and resumable through one compact page token.
//!
//! # Modes and guarantees
//!
//! # Doors
//!
//! An entity with `#[derive(Entity)]` is queried through one typed door,
//! `User::query(&store)?.index(UserIndex::Created)` ([`QueryStart`]): the index token's kind
//! decides at compile time what the builder accepts, a [`TypedQuery`] for a classic index (range
//! conditions, a union of classic indexes, the table) or a [`TypedMultiQuery`] for a
//! multi-attribute index (partition and sort conditions from fields); a collection is the same
//! door with the collection as the output type ([`Collection::query`]). A schema with no Rust
//! types (a TypeScript configuration) is queried through the untyped builders of [`untyped`].
//! Every door runs on the same plan, the same engine and the same page token.
//!
//! # Sources
//!
//! A query reads one or more *sources* that share their hash key attribute: global secondary
//! indexes ([`QueryStart::index`], [`untyped::Query::index`]) and the table itself
//! ([`QueryStart::table`], [`untyped::Query::table`]: every shard of the entity's own hash key
//! space, in table range-key order, that is by unique value). A range condition or filter
//! applies to the source added last; given before any source it does not compile
//! ([`ConditionsFollowTheIndex`], [`untyped::Unindexed`]).
//!
//! **Exact mode** — one source, or sources that share their range key attribute as well.
//! Since the rule `index-key-pairs-unique` refuses two indexes with the same hash and range
//! key, the only such pair is the table and an index on the table's own keys (for example a
//! `KEYS_ONLY` copy): every record is then in both, at the same position, and is returned once.
//! Items come in range-key order (ascending, or descending), merged across every shard:
//! - every page holds exactly `min(limit, remaining)` items;
//! - paging to the end returns every matching item exactly once (no duplicate, no miss), in one
//!   global order across pages: by range key, items with equal range keys by shard (its table
//!   hash key), and within a shard as the store keeps them (`MemoryStore`: by table range key;
//!   `DynamoDB`: an order of its own), the exact reverse when descending;
//! - the last page may be empty (when the previous one ended exactly at the end);
//! - on a table written meanwhile, every page is in order, no record comes twice (unless moved
//!   ahead of the paging after it was returned: a token is a position), every record that
//!   exists unchanged throughout comes exactly once, and records written, moved or deleted
//!   meanwhile come at most once (the paging guide, "While the table is written").
//!
//! **Union mode** — indexes with different range keys (for example a name search over a
//! first-name and a last-name index). The page limit is shared between the indexes, each index
//! is paged exactly as above, and each page is deduplicated and sorted by the query's sort order
//! (the unique property by default). Across pages:
//! - each page holds at most `limit` items, none twice, sorted;
//! - every item of every index is taken from that index exactly once over the whole paging, so
//!   paging to the end returns every matching item at least once;
//! - an item that matches several indexes is returned at most once per index it matches, on
//!   different pages (never twice on one page);
//! - pages can be shorter than `limit` (duplicates removed, an index running out).
//!
//! **Windows** — [`TypedQuery::shards_between`] picks the shards (those of the shard bumps in force during
//! it) and nothing else: records of those shards created outside it are returned too.
//! [`TypedQuery::created_between`] picks the same shards and, of their records, those created in
//! the window (a key condition when the range key is the timestamp property, else a check of
//! each item read).
//!
//! **Projections** — [`TypedQuery::projection`] reads only the attributes named (and the keys the
//! query needs). The unique value is never asked of the index: it is restored from the table
//! range key, so projections work on `KEYS_ONLY` and `INCLUDE` indexes; asking an index for an
//! attribute it does not project is refused before any read ([`Error::InvalidQuery`](crate::Error::InvalidQuery)).
//!
//! **Cost** — every shard query asks the store for the read capacity it consumed; the page's
//! [`QueryStats`] and the `entity_manager.query` tracing span hold the sum.
//!
//! In both modes a shard that has given everything is never queried again, an unlimited query
//! terminates, any failed shard query fails the whole page, and reads stay proportional to
//! what is returned (each page reads every live shard up to about where the page ends, as
//! predicted from the previous page, and refills only the shards that can still contribute).
//!
//! The page token records where the previous page ended (its last item's range key, unique
//! value and lane, per index in union mode), one "exhausted" bit per (index, shard) lane, the time
//! window and a checksum of the query and of the table; its size does not depend on where each
//! shard stands (about 70 characters for one index up to 64 lanes, 1 character more per 6
//! lanes beyond). It is rejected, with a typed error, by any other query
//! ([`TokenError::OtherQuery`]) or table ([`TokenError::OtherTable`]: another table name or
//! definition), when truncated or altered, when longer than any token of the query can be
//! ([`TokenError::TooLong`], before it is decoded: about 11,000 characters per index), and —
//! with [`TypedQuery::signing_key`] — when signed with another key.

macro_rules! paging_setters {
    () => {
        /// Items per page (default: the entity's default limit; a collection's: its first
        /// entity's).
        #[must_use]
        pub fn limit(mut self, limit: usize) -> Self {
            self.paging.limit = Some(limit);
            self
        }

        /// The largest `Limit` of one shard query (default: the entity's default page size; a
        /// collection's: its first entity's).
        #[must_use]
        pub fn page_size(mut self, page_size: usize) -> Self {
            self.paging.page_size = Some(page_size);
            self
        }

        /// Descending order (of the range key, or of the sort attributes).
        #[must_use]
        pub fn descending(mut self, descending: bool) -> Self {
            self.paging.descending = descending;
            self
        }

        /// At most this many shard queries in flight (default: the table's throttle).
        #[must_use]
        pub fn throttle(mut self, throttle: usize) -> Self {
            self.paging.throttle = Some(throttle);
            self
        }

        /// Signs page tokens with this key (HMAC-SHA-256), so that they cannot be forged; the
        /// same key must be given for every page.
        #[must_use]
        pub fn signing_key(mut self, key: impl Into<Vec<u8>>) -> Self {
            self.paging.signing_key = Some(key.into());
            self
        }
    };
}

mod check;
mod collection;
mod door;
mod engine;
mod estimate;
mod index;
mod lanes;
mod multi_typed;
mod page;
mod paging;
mod plan;
mod tagged;
mod token;
mod typed;
pub mod untyped;

use serde_dynamo::AttributeValue;

use crate::error::Result;

pub use self::collection::Collection;
pub use self::door::{IndexFor, QueryStart};
pub use self::index::{
    Classic, ClassicIndexOf, ClassicIndexesHaveNoPartitionValues, CollectionMember,
    ConditionsFollowTheIndex, KeyKind, MultiAttribute, QueryOutput, TypedIndex,
};
pub use self::multi_typed::TypedMultiQuery;
pub use self::page::{QueryPageResult, QueryStats};
pub use self::tagged::{CollectionQuery, MemberItem};
pub use self::typed::{EVERY_SHARD, FieldSet, KeyCondition, KeyValue, TypedPage, TypedQuery};
pub use crate::error::TokenError;
/// The trait of what [`TypedQuery::stream`] and [`untyped::Query::stream`] return, and its
/// combinators (`next`, `try_collect`, `take`…): `use entity_manager::query::StreamExt as _;`.
pub use futures::{Stream, StreamExt, TryStreamExt};

/// A range-key condition value from anything serde can write (numbers become `N`, strings `S`).
pub fn key_value<T: serde::Serialize + ?Sized>(
    value: &T,
) -> Result<AttributeValue, serde_dynamo::Error> {
    serde_dynamo::to_attribute_value(value)
}
