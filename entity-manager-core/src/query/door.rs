//! The one door of every typed query: [`EntityExt::query`](crate::EntityExt::query) (or
//! [`Collection::query`](super::Collection::query)) gives a [`QueryStart`], and the index token
//! given to [`QueryStart::index`] decides, by its type, which builder comes out:
//!
//! - an index with a classic key ([`TypedIndex`]`<E, `[`Classic`]`>`) gives a [`TypedQuery`]
//!   (range conditions from fields and key builders, more classic indexes for a union, the
//!   table);
//! - a multi-attribute index ([`TypedIndex`]`<E, `[`MultiAttribute`]`>`) gives a
//!   [`TypedMultiQuery`] (partition values and sort conditions from fields).
//!
//! The output type is the one the door was opened for: the entity, or the item collection's
//! enum, through an index of any of its members. A misuse (a range condition on a
//! multi-attribute index, a partition value on a classic one, a collection through a classic
//! index, a condition before the index) does not compile.

use std::fmt;

use serde::de::DeserializeOwned;

use super::index::{
    Classic, CollectionMember, ConditionsFollowTheIndex, MultiAttribute, QueryOutput, TypedIndex,
};
use super::multi_typed::TypedMultiQuery;
use super::typed::TypedQuery;
use super::untyped::Query;
use crate::entity::Entity;
use crate::error::Result;
use crate::schema::EntitySchema;
use crate::store::Store;

/// An index through which a query of `O` can go, and the builder it gives: implemented for a
/// [`TypedIndex`] of a classic index of entity `O` (a [`TypedQuery`]) and of a multi-attribute
/// index of `O` or of a member of the collection `O` (a [`TypedMultiQuery`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be queried for `{O}`",
    label = "an index token of another entity, or a classic index for an item collection",
    note = "give an index token of the entity queried (`UserIndex::Created` for `User::query`); a collection is queried through a multi-attribute index of one of its members"
)]
pub trait IndexFor<O: QueryOutput>: Copy {
    /// The builder the index gives.
    type Query<'a, S: Store + 'a>;

    /// The builder of a query of `O` on `store` through this index.
    fn open<'a, S: Store + 'a>(self, store: &'a S, members: O::Members) -> Self::Query<'a, S>;
}

// not listed as a candidate in errors: the trait's own message says what to do
#[diagnostic::do_not_recommend]
impl<E: Entity + DeserializeOwned> IndexFor<E> for TypedIndex<E, Classic> {
    type Query<'a, S: Store + 'a> = TypedQuery<'a, S, E>;

    fn open<'a, S: Store + 'a>(
        self,
        store: &'a S,
        [schema]: [EntitySchema<'static>; 1],
    ) -> TypedQuery<'a, S, E> {
        TypedQuery::open(Query::new(store, schema).index(self.name()))
    }
}

// not listed as a candidate in errors: the trait's own message says what to do
#[diagnostic::do_not_recommend]
impl<O: QueryOutput, M: CollectionMember<O>> IndexFor<O> for TypedIndex<M, MultiAttribute> {
    type Query<'a, S: Store + 'a> = TypedMultiQuery<'a, S, O>;

    fn open<'a, S: Store + 'a>(
        self,
        store: &'a S,
        members: O::Members,
    ) -> TypedMultiQuery<'a, S, O> {
        TypedMultiQuery::open(store, members.as_ref().to_vec(), self.name())
    }
}

/// A typed query with no index yet, from [`EntityExt::query`](crate::EntityExt::query) or
/// [`Collection::query`](super::Collection::query): name the index with
/// [`index`](Self::index) (or, for an entity, read the table with [`table`](Self::table)); the
/// index's kind decides which builder comes out. Conditions follow the index: before it they do
/// not compile.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use entity_manager_core::query::{Classic, MultiAttribute, TypedIndex};
/// use entity_manager_core::store::{KeyType, MemoryStore, TableDefinition};
/// use entity_manager_core::{Entity, EntityExt, Table};
/// # use entity_manager_core::field::Field;
/// # use entity_manager_core::transcode;
/// # use entity_manager_core::model::{EntityModel, TableModel, Index, IndexAttribute, Projection, Property, ShardBump};
/// # use std::borrow::Cow;
/// # #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
/// # #[serde(rename_all = "camelCase")]
/// # struct Player { player_id: String, created: u64, team: String, score: i64 }
/// # struct League;
/// # impl Table for League {
/// #     const MODEL: TableModel = TableModel::DEFAULT;
/// #     fn model() -> &'static TableModel { static M: TableModel = League::MODEL; &M }
/// #     fn entities() -> Vec<&'static EntityModel> { vec![Player::model()] }
/// # }
/// # impl Entity for Player {
/// #     type Table = League;
/// #     const MODEL: EntityModel = {
/// #         const PROPERTIES: &[Property] = &[Property::new("playerId", transcode::STRING), Property::new("created", transcode::TIMESTAMP)];
/// #         const HASH: &[IndexAttribute] = &[IndexAttribute::new("hashKey", KeyType::S), IndexAttribute::new("team", KeyType::S)];
/// #         const RANGE: &[IndexAttribute] = &[IndexAttribute::new("score", KeyType::N)];
/// #         const INDEXES: &[Index] = &[
/// #             Index::new("created", Cow::Borrowed("hashKey"), Cow::Borrowed("created"), Projection::All),
/// #             Index::multi("byTeam", HASH, RANGE, true, Projection::All),
/// #         ];
/// #         EntityModel::new("player", "playerId", "created")
/// #             .with_shard_bumps(&[ShardBump::new(0, 2, 1)])
/// #             .with_properties(PROPERTIES)
/// #             .with_indexes(INDEXES)
/// #     };
/// #     fn model() -> &'static EntityModel { static M: EntityModel = Player::MODEL; &M }
/// # }
/// # #[allow(non_upper_case_globals)]
/// # impl PlayerIndex {
/// #     const Created: TypedIndex<Player, Classic> = TypedIndex::named("created");
/// #     const ByTeam: TypedIndex<Player, MultiAttribute> = TypedIndex::named("byTeam");
/// # }
/// # enum PlayerIndex {}
/// // `Player` derives `Entity`: its index tokens are `PlayerIndex::…`, its fields `Player::FIELDS`
/// # let created: Field<Player, u64> = Field::new("created");
/// # let team: Field<Player, String> = Field::new("team");
/// # let score: Field<Player, i64> = Field::new("score");
/// let store = MemoryStore::new(TableDefinition::from_schema(League::schema()?)?);
/// for n in 0..30 {
///     let player = Player { player_id: format!("p{n}"), created: n, team: "red".into(), score: (n as i64 * 7) % 30 };
///     player.put(&store).await?;
/// }
/// // a classic index: a range condition on its range key
/// let early = Player::query(&store)?
///     .index(PlayerIndex::Created)
///     .range(created.lt(5)) // `Player::FIELDS.created`
///     .shards_between(0, 100)
///     .page(None)
///     .await?;
/// assert_eq!(early.items.len(), 5);
/// // a multi-attribute index: partition values and sort conditions, in any order
/// let top = Player::query(&store)?
///     .index(PlayerIndex::ByTeam)
///     .range(score.ge(25))
///     .hash(team.eq("red"))
///     .shards_between(0, 100)
///     .page(None)
///     .await?;
/// assert!(top.items.iter().all(|p| p.score >= 25));
/// # Ok(())
/// # }
/// ```
///
/// A condition before the index does not compile, and says why:
///
/// ```compile_fail,E0277
/// # use entity_manager_core::query::QueryStart;
/// # use entity_manager_core::store::MemoryStore;
/// # fn f<E: entity_manager_core::Entity>(start: QueryStart<'_, MemoryStore, E>, c: entity_manager_core::field::Condition<E>) {
/// let query = start.filter(c); // conditions follow the index: `.index(…)` first
/// # }
/// ```
pub struct QueryStart<'a, S, O: QueryOutput> {
    store: &'a S,
    members: O::Members,
}

impl<S, O: QueryOutput> fmt::Debug for QueryStart<'_, S, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueryStart")
            .field("output", &std::any::type_name::<O>())
            .finish_non_exhaustive()
    }
}

impl<'a, S: Store, O: QueryOutput> QueryStart<'a, S, O> {
    /// The door of a query of `O` on `store` (what [`EntityExt::query`](crate::EntityExt::query)
    /// and [`Collection::query`](super::Collection::query) call). Fails when the table's
    /// configuration is invalid.
    pub fn new(store: &'a S) -> Result<Self> {
        Ok(Self {
            store,
            members: O::members()?,
        })
    }

    /// The index to query, by its token (`UserIndex::Created`): a classic index gives a
    /// [`TypedQuery`], a multi-attribute one a [`TypedMultiQuery`]; for a collection, a
    /// multi-attribute index that every member declares, named by any member's token.
    #[must_use]
    pub fn index<I: IndexFor<O>>(self, index: I) -> I::Query<'a, S> {
        index.open(self.store, self.members)
    }

    /// Not before the index: see [`ConditionsFollowTheIndex`].
    #[doc(hidden)]
    #[must_use]
    pub fn filter<T>(self, _condition: T) -> Self
    where
        Self: ConditionsFollowTheIndex,
    {
        self
    }

    /// Not before the index: see [`ConditionsFollowTheIndex`].
    #[doc(hidden)]
    #[must_use]
    pub fn range<T>(self, _condition: T) -> Self
    where
        Self: ConditionsFollowTheIndex,
    {
        self
    }

    /// Not before the index: see [`ConditionsFollowTheIndex`].
    #[doc(hidden)]
    #[must_use]
    pub fn hash<T>(self, _condition: T) -> Self
    where
        Self: ConditionsFollowTheIndex,
    {
        self
    }
}

impl<'a, S: Store, E: Entity + DeserializeOwned> QueryStart<'a, S, E> {
    /// The table itself: every shard of the entity's hash key space, in unique-value order
    /// (the table range key); [`range`](TypedQuery::range) and
    /// [`filter`](TypedQuery::filter) then apply to it.
    #[must_use]
    pub fn table(self) -> TypedQuery<'a, S, E> {
        let [schema] = self.members;
        TypedQuery::open(Query::new(self.store, schema).table())
    }
}
