//! The untyped item collection: a [`MultiQuery`] of several entities whose items come back
//! tagged with the member entity each belongs to, as `#[derive(Collection)]`'s enum tells
//! them apart (by the entity token that begins the table hash key).

use futures::{Stream, StreamExt as _};
use serde_dynamo::Item;

use super::untyped::MultiQuery;
use crate::error::Result;
use crate::query::collection::member_of;
use crate::query::typed::{TypedPage, read_items};
use crate::schema::EntitySchema;
use crate::store::Store;

/// An item of an item collection, tagged with the member entity it is a record of.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct MemberItem {
    /// The member's position among the query's entities (the order given to
    /// [`MultiQuery::collection`]).
    pub member: usize,
    /// The member's entity token.
    pub entity: String,
    /// The item, as stored (keys included).
    pub item: Item,
}

/// An untyped query of an item collection: the pages, tokens and order of the
/// [`MultiQuery`] it is made from ([`MultiQuery::tagged`]), each item tagged with its member
/// entity. It is what a typed collection query (`Roster::query(&store)?.index(..)`) reads, for
/// a schema with no Rust types.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use entity_manager_core::query::untyped::MultiQuery;
/// use entity_manager_core::store::{KeyType, MemoryStore, Store, TableDefinition};
/// use entity_manager_core::{AttributeValue, Schema, transcode};
/// use entity_manager_core::model::{EntityModel, Index, IndexAttribute, Projection, Property, TableModel};
///
/// const HASH: &[IndexAttribute] = &[IndexAttribute::new("team", KeyType::S)];
/// const RANGE: &[IndexAttribute] = &[IndexAttribute::new("score", KeyType::N)];
/// const INDEXES: &[Index] = &[Index::multi("byTeam", HASH, RANGE, false, Projection::All)];
/// const PLAYER: &[Property] =
///     &[Property::new("playerId", transcode::STRING), Property::new("created", transcode::TIMESTAMP)];
/// const COACH: &[Property] =
///     &[Property::new("coachId", transcode::STRING), Property::new("created", transcode::TIMESTAMP)];
/// let player = EntityModel::new("player", "playerId", "created")
///     .with_properties(PLAYER)
///     .with_indexes(INDEXES);
/// let coach = EntityModel::new("coach", "coachId", "created")
///     .with_properties(COACH)
///     .with_indexes(INDEXES);
/// let schema = Schema::new(TableModel::DEFAULT, vec![player, coach])?;
/// let store = MemoryStore::new(TableDefinition::from_schema(&schema)?);
/// let (players, coaches) = (schema.entity("player")?, schema.entity("coach")?);
/// for (entity, id, score) in [(&players, "p1", 7), (&coaches, "c1", 5), (&players, "p2", 3)] {
///     let unique = &*entity.model().unique_property;
///     let item = serde_dynamo::to_item(serde_json::json!({
///         unique: id, "created": 1, "team": "red", "score": score
///     }))?;
///     store.put_item(entity.add_keys(&item)?, Default::default()).await?;
/// }
/// let roster = MultiQuery::collection(&store, vec![players, coaches], "byTeam")
///     .hash([AttributeValue::S("red".into())])
///     .limit(2)
///     .tagged();
/// let first = roster.page(None).await?;
/// let tags: Vec<&str> = first.items.iter().map(|m| m.entity.as_str()).collect();
/// assert_eq!(tags, ["player", "coach"]); // scores 3 and 5, one order over both entities
/// assert_eq!(first.items[1].item["coachId"], AttributeValue::S("c1".into()));
/// let second = roster.page(first.next.as_deref()).await?;
/// assert_eq!((second.items[0].member, second.next), (0, None));
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct CollectionQuery<'a, S> {
    query: MultiQuery<'a, S>,
}

impl<'a, S: Store> CollectionQuery<'a, S> {
    fn new(query: MultiQuery<'a, S>) -> Self {
        Self { query }
    }

    /// The untyped query it tags the items of.
    pub fn query(&self) -> &MultiQuery<'a, S> {
        &self.query
    }

    /// The member entities, in the order items are tagged with.
    pub fn members(&self) -> &[EntitySchema<'a>] {
        self.query.entities()
    }

    /// An item of the collection, tagged with its member; an item of no member is
    /// [`Error::OtherEntity`](crate::Error::OtherEntity), naming the members.
    pub fn tag(&self, item: Item) -> Result<MemberItem> {
        let members = self.members();
        let member = member_of(members, &item)?;
        let entity = members
            .get(member)
            .map(|m| m.model().token.to_string())
            .unwrap_or_default();
        Ok(MemberItem {
            member,
            entity,
            item,
        })
    }

    /// One page: the first (`token: None`) or the one after the page that returned `token`,
    /// as [`MultiQuery::page`] gives it (the same items, token and statistics), tagged.
    pub async fn page(&self, token: Option<&str>) -> Result<TypedPage<MemberItem>> {
        read_items(self.query.page(token).await?, |item| self.tag(item))
    }

    /// The pages from the first (`token: None`) or from the one after the page that returned
    /// `token`, as [`MultiQuery::pages`] gives them, tagged.
    pub fn pages(
        &self,
        token: Option<&str>,
    ) -> impl Stream<Item = Result<TypedPage<MemberItem>>> + use<'_, 'a, S> {
        self.query
            .pages(token)
            .map(move |page| page.and_then(|page| read_items(page, |item| self.tag(item))))
    }

    /// Every matching item, as [`MultiQuery::stream`] gives them, tagged.
    pub fn stream(&self) -> impl Stream<Item = Result<MemberItem>> + '_ {
        self.query
            .stream()
            .map(move |item| item.and_then(|item| self.tag(item)))
    }
}

impl<'a, S: Store> MultiQuery<'a, S> {
    /// This query with each item tagged with the member entity it is a record of (an item
    /// collection's untyped query; see [`CollectionQuery`]).
    #[must_use]
    pub fn tagged(self) -> CollectionQuery<'a, S> {
        CollectionQuery::new(self)
    }
}
