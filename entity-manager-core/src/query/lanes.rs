//! The seam between the one engine ([`super::engine`]) and the kinds of query it runs: what a
//! plan says about its lanes, how one of them is read, and where an item stands in it.
//!
//! A classic index orders a lane by one range-key value; a multi-attribute index by a tuple of
//! sort attributes, the first ones fixed by equality, one *conditioned* (the only one a key
//! condition can bound), the rest free. Both are a [`Key`]: the engine compares keys, bounds
//! reads by values of the conditioned attribute (the range key itself, for a classic index),
//! and leaves everything else to the plan.

use serde_dynamo::{AttributeValue, Item};

use super::token::Boundary;
use crate::error::Error;
use crate::store::value::Scalar;
use crate::store::{QueryPage, RangeCondition, StoreError};

/// An item's key in a lane, ascending: one range-key value, or a sort tuple (`at`: the place of
/// the conditioned attribute in it, equal to its length when equality fixes every attribute).
/// A key that ends a range of the conditioned attribute fills the free attributes after it
/// with [`Scalar::Min`] or [`Scalar::Max`]. One plan uses one variant only.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Key {
    One(Scalar),
    Tuple { at: usize, parts: Box<[Scalar]> },
}

impl Key {
    /// The value of the conditioned attribute: what a key condition can bound.
    pub(crate) fn head(&self) -> Option<&Scalar> {
        match self {
            Self::One(scalar) => Some(scalar),
            Self::Tuple { at, parts } => parts.get(*at),
        }
    }
}

/// What the engine needs of a plan. Lanes are `(source, shard)` pairs: every source (an index,
/// or the table) is read in every shard.
pub(crate) trait Lanes {
    /// Whether the scan runs in descending key order.
    fn descending(&self) -> bool;

    /// The shards every source is read in.
    fn shards(&self) -> usize;

    /// The table hash key of a shard: lanes rank by it at equal keys.
    fn table_hash_key(&self, shard: usize) -> &str;

    /// The key of an item (or page key) of `source`; `None` when it has none (not indexed).
    fn key(&self, source: usize, item: &Item) -> Option<Key>;

    /// The item's value of the conditioned attribute.
    fn value<'i>(&self, source: usize, item: &'i Item) -> Option<&'i AttributeValue>;

    /// The key past every item whose conditioned attribute is `value`, in scan order.
    fn key_through(&self, value: &AttributeValue) -> Option<Key>;

    /// The user's condition on the conditioned attribute of `source`.
    fn condition(&self, source: usize) -> Option<&RangeCondition>;

    /// Whether an item read from a lane of `shard` is one the query returns (beyond the key
    /// condition, which the engine checks): in the created window, of one of its entities.
    fn admits(&self, shard: usize, item: &Item) -> bool;

    /// A read of a lane without its limit, range condition and start: the partition, the
    /// index, an equality prefix, the filter and projection, the direction.
    fn request(&self, source: usize, shard: usize) -> QueryPage;

    /// The read of a lane that resumes right after `key` (at it, when `inclusive`) among the
    /// items sharing its value of the conditioned attribute, and the key the lane is read
    /// through once that read runs out; `None` when no key condition can say so (a key is one
    /// value, or lies past every item of its value: the regular reads serve).
    ///
    /// A multi-attribute key narrows with an equality on its leading sort attributes and a
    /// condition on the last one given: after `(v, w)`, the items `(v, > w)`, and the lane is
    /// then read through `(v, MAX)`.
    fn request_within(
        &self,
        source: usize,
        shard: usize,
        key: &Key,
        inclusive: bool,
    ) -> Option<(QueryPage, Key)>;

    /// Whether a key of `source` is unique in its partition (the table's own keys): a lane
    /// that read an item at a key holds no other there.
    fn unique_keys(&self, source: usize) -> bool;

    /// The page key (`ExclusiveStartKey`) that resumes a lane right after `item`.
    fn page_key(&self, source: usize, shard: usize, item: &Item) -> Option<Item>;

    /// The page key that resumes a lane right after a boundary's item.
    fn resume_key(&self, source: usize, shard: usize, boundary: &Boundary) -> Option<Item>;

    /// What identifies a record across the sources of a stream (they may return it twice).
    fn identity(&self, item: &Item) -> Option<String>;

    /// A boundary's `unique`, for an item of lane `shard`: what [`resume_key`](Self::resume_key)
    /// needs of it beyond what the lane gives. Its [`identity`](Self::identity) unless the
    /// plan can say it shorter (it is in every page token).
    fn boundary_unique(&self, _shard: usize, item: &Item) -> Option<String> {
        self.identity(item)
    }

    /// A boundary's `last`, for an item of `source`.
    fn boundary_last(&self, source: usize, item: &Item) -> Option<AttributeValue>;

    /// The key of a boundary's item, read as a key of `source` (the stream's first source:
    /// the sources of one stream share their range key); `None` when the boundary is not a
    /// key of it (a forged token).
    fn boundary_key(&self, source: usize, boundary: &Boundary) -> Option<Key>;

    /// The value of the conditioned attribute of a boundary's item.
    fn boundary_value(&self, boundary: &Boundary) -> Option<AttributeValue>;

    /// A failed read of a lane, as the query's error.
    fn shard_error(&self, source: usize, shard: usize, error: StoreError) -> Error;
}
