//! Item collections: several entities that share a multi-attribute index, queried together and
//! returned as one typed enum.

use serde_dynamo::{AttributeValue, Item};

use super::{QueryOutput, QueryStart};
use crate::error::{Error, Result};
use crate::schema::EntitySchema;
use crate::store::Store;

/// A typed item collection: an enum with one variant per member entity, usually derived with
/// `#[derive(Collection)]` (each variant holds one entity: `User(User)`).
///
/// Items are told apart by the entity token that begins their table hash key
/// (`<token><shardKeyDelimiter><suffix>`).
pub trait Collection: Sized {
    /// The member entities, in variant order.
    fn members() -> Result<Vec<EntitySchema<'static>>>;

    /// The record of an item of member `member` (a position in [`members`](Self::members)).
    fn from_member(member: usize, item: &Item) -> Result<Self>;

    /// The record of an item, by its entity token.
    fn from_item(item: &Item) -> Result<Self> {
        Self::from_member(member_of(&Self::members()?, item)?, item)
    }

    /// A query of the collection on `store`: name the multi-attribute index its members share
    /// with [`QueryStart::index`], by the index token of any member
    /// (`Roster::query(&store)?.index(PlayerIndex::ByTeam)`): every member must declare it,
    /// with the same key. Its partition values and sort conditions come from the members'
    /// fields ([`TypedMultiQuery::hash`](super::TypedMultiQuery::hash),
    /// [`TypedMultiQuery::range`](super::TypedMultiQuery::range)), and records come back as
    /// the collection's enum.
    fn query<S: Store>(store: &S) -> Result<QueryStart<'_, S, Self>>
    where
        Self: QueryOutput,
    {
        QueryStart::new(store)
    }
}

/// The member an item belongs to (a position in `members`), by the entity token that begins its
/// table hash key; an item of none of them is [`Error::OtherEntity`], naming them all.
pub(crate) fn member_of(members: &[EntitySchema<'_>], item: &Item) -> Result<usize> {
    let member = members.iter().position(|m| {
        matches!(item.get(&*m.table().hash_key), Some(AttributeValue::S(_)))
            && m.check_entity_token(item).is_ok()
    });
    match (member, members.first()) {
        (Some(i), _) => Ok(i),
        (None, Some(first)) => {
            let hash_key = match item.get(&*first.table().hash_key) {
                Some(AttributeValue::S(h)) => h.clone(),
                other => format!("{other:?}"),
            };
            Err(Error::OtherEntity {
                entity: members
                    .iter()
                    .map(|m| m.model().token.to_string())
                    .collect::<Vec<_>>()
                    .join(" or "),
                delimiter: first.table().delimiters.shard_key.to_string(),
                hash_key,
            })
        }
        (None, None) => Err(Error::InvalidQuery {
            entity: String::new(),
            reason: "a collection needs at least one member entity".into(),
        }),
    }
}
