//! The index tokens and what a typed query reads, below every builder: the kind markers,
//! [`TypedIndex`], [`QueryOutput`], [`CollectionMember`], and the bounds whose messages explain a
//! misuse. The builders (`typed`, `multi_typed`) and the door (`door`) sit on this module.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde_dynamo::Item;

use crate::entity::{Entity, from_owned_item};
use crate::error::Result;
use crate::schema::EntitySchema;

/// The kind of an index whose key is a classic one: one hash key attribute (the table's or a
/// sharded generated property) and one range key attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Classic {}

/// The kind of a multi-attribute index: a partition key and a sort key of up to four
/// attributes each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MultiAttribute {}

mod sealed {
    pub trait Kind {}
    impl Kind for super::Classic {}
    impl Kind for super::MultiAttribute {}
}

/// [`Classic`] or [`MultiAttribute`]: what a [`TypedIndex`] knows of its key at compile time.
pub trait KeyKind: sealed::Kind + Copy + fmt::Debug + Send + Sync + 'static {
    /// `"classic"` or `"multi-attribute"`, for messages.
    const NAME: &'static str;
}

impl KeyKind for Classic {
    const NAME: &'static str = "classic";
}

impl KeyKind for MultiAttribute {
    const NAME: &'static str = "multi-attribute";
}

/// An index of entity `E` whose key is of kind `K`: the token a query is given
/// (`UserIndex::Created`). `#[derive(Entity)]` emits one constant per index on the entity's
/// index type (`<Struct>Index`), with its kind, so that only the builder of that kind comes out
/// of [`QueryStart::index`](super::QueryStart::index).
///
/// A hand-written [`Entity`] names its indexes with [`TypedIndex::named`]; a name the entity
/// does not declare, or declares with the other kind, fails the query's first page with
/// [`Error::InvalidQuery`](crate::Error::InvalidQuery).
pub struct TypedIndex<E, K> {
    name: &'static str,
    marker: PhantomData<fn() -> (E, K)>,
}

impl<E, K> TypedIndex<E, K> {
    /// The token of the index of this name (the GSI name).
    #[must_use]
    pub const fn named(name: &'static str) -> Self {
        Self {
            name,
            marker: PhantomData,
        }
    }

    /// The index name (the GSI name).
    #[must_use]
    pub const fn name(self) -> &'static str {
        self.name
    }
}

impl<E, K> Clone for TypedIndex<E, K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E, K> Copy for TypedIndex<E, K> {}

impl<E, K> PartialEq for TypedIndex<E, K> {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl<E, K> Eq for TypedIndex<E, K> {}

impl<E, K> Hash for TypedIndex<E, K> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl<E, K: KeyKind> fmt::Debug for TypedIndex<E, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TypedIndex<{}, {}>({:?})",
            std::any::type_name::<E>(),
            K::NAME,
            self.name
        )
    }
}

/// What a typed query returns: an entity (each item read as the entity), or an item
/// collection's enum (each item read as the variant of the member it belongs to).
///
/// Implemented for every [`Entity`] that can be deserialized, and by `#[derive(Collection)]`.
pub trait QueryOutput: Sized + 'static {
    /// The schemas of [`members`](Self::members): one for an entity, a list for a collection.
    type Members: AsRef<[EntitySchema<'static>]> + Send + Sync;

    /// The entities whose items the query reads: the entity itself, or the collection's
    /// members in variant order.
    fn members() -> Result<Self::Members>;

    /// The record of an item the query read.
    fn read(item: Item) -> Result<Self>;
}

impl<E: Entity + DeserializeOwned> QueryOutput for E {
    type Members = [EntitySchema<'static>; 1];

    fn members() -> Result<Self::Members> {
        Ok([crate::entity::schema_of::<E>()?])
    }

    fn read(item: Item) -> Result<Self> {
        from_owned_item::<E>(item)
    }
}

/// Never implemented: the bound of the condition methods of a [`QueryStart`](super::QueryStart), so that a
/// condition given before the index says what to do instead of "no method named `filter`".
#[diagnostic::on_unimplemented(
    message = "a condition before the index: conditions follow the index they apply to",
    label = "no index to apply this condition to yet",
    note = "name the index first: `User::query(&store)?.index(UserIndex::Created).range(…)` (or `.table()`); for a multi-attribute index, `.index(…).hash(…)`"
)]
pub trait ConditionsFollowTheIndex {}

/// A classic index of entity `E`: what [`TypedQuery::index`](super::TypedQuery::index) adds to a query (a union of
/// indexes reads classic indexes only).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a classic index of `{E}`",
    label = "a union of indexes takes classic indexes of the entity queried",
    note = "several indexes in one query must all have classic keys; query a multi-attribute index on its own: `{E}::query(&store)?.index(…)`"
)]
pub trait ClassicIndexOf<E>: Copy {
    /// The index name (the GSI name).
    fn name(self) -> &'static str;
}

impl<E> ClassicIndexOf<E> for TypedIndex<E, Classic> {
    fn name(self) -> &'static str {
        self.name
    }
}

/// Never implemented: the bound of [`TypedQuery`](super::TypedQuery)'s `hash`, so that a partition value given to
/// a classic index says what to do instead of "no method named `hash`".
#[diagnostic::on_unimplemented(
    message = "a partition value on a classic index: its hash key is the table's or a sharded generated property",
    label = "a classic index takes no partition values",
    note = "give a sharded hash key with `.hash_key(&Entity::some_hash_key(EVERY_SHARD).component(…)?)`, or query a multi-attribute index (`#[index(hash = [..], range = [..])]`) with `.hash(…)`"
)]
pub trait ClassicIndexesHaveNoPartitionValues {}

/// An entity whose fields may give conditions to a query of `C`: `C` itself (every entity), or
/// an item collection `C` of which it is a member. `#[derive(Collection)]` implements it for
/// the entity of each variant, so that a collection query takes conditions on the fields of its
/// members only: a field of another entity does not compile. (A hand-written [`Collection`](super::Collection)
/// implements it for each entity of its [`members`](super::Collection::members); the query still
/// checks, at run time, that the entity is one of them.)
#[diagnostic::on_unimplemented(
    message = "`{Self}` is neither `{C}` nor a member of the item collection `{C}`",
    label = "a condition on a field of `{Self}`",
    note = "a query takes conditions on the fields of the entity queried, or of the members of the collection queried (the entities of its variants)"
)]
pub trait CollectionMember<C>: Entity {}

impl<E: Entity> CollectionMember<E> for E {}
