//! Item collections: several entities that share a multi-attribute index, queried together and
//! returned as one typed enum.

use std::marker::PhantomData;

use serde_dynamo::{AttributeValue, Item};

use super::{MultiQuery, TypedPage};
use crate::error::{Error, Result};
use crate::schema::EntitySchema;
use crate::store::{RangeCondition, Store};

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
        let members = Self::members()?;
        let member = members.iter().position(|m| {
            matches!(item.get(&*m.table().hash_key), Some(AttributeValue::S(_)))
                && m.check_entity_token(item).is_ok()
        });
        match (member, members.first()) {
            (Some(i), _) => Self::from_member(i, item),
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

    /// A query of the collection through the multi-attribute index `index` its members share.
    fn query<S: Store>(
        store: &S,
        index: impl Into<String>,
    ) -> Result<CollectionQuery<'_, S, Self>> {
        Ok(CollectionQuery {
            inner: MultiQuery::collection(store, Self::members()?, index),
            collection: PhantomData,
        })
    }
}

/// A query of an item collection: the records of every member, in one exact order across
/// shards, as the collection's enum. See [`MultiQuery`] for the order and the paging.
#[derive(Debug)]
pub struct CollectionQuery<'a, S, C> {
    inner: MultiQuery<'a, S>,
    collection: PhantomData<fn() -> C>,
}

impl<S: Store, C: Collection> CollectionQuery<'_, S, C> {
    /// The values of the partition attributes, in key order (without the shard attribute).
    #[must_use]
    pub fn hash(mut self, values: impl IntoIterator<Item = AttributeValue>) -> Self {
        self.inner = self.inner.hash(values);
        self
    }

    /// Equality on the first sort attributes, in key order.
    #[must_use]
    pub fn range_prefix(mut self, values: impl IntoIterator<Item = AttributeValue>) -> Self {
        self.inner = self.inner.range_prefix(values);
        self
    }

    /// A condition on the sort attribute after the prefix.
    #[must_use]
    pub fn range(mut self, condition: RangeCondition) -> Self {
        self.inner = self.inner.range(condition);
        self
    }

    /// Records created in `from..=to` (ms since the epoch).
    #[must_use]
    pub fn window(mut self, from: u64, to: u64) -> Self {
        self.inner = self.inner.window(from, to);
        self
    }

    /// Records per page.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.inner = self.inner.limit(limit);
        self
    }

    /// The largest `Limit` of one shard query.
    #[must_use]
    pub fn page_size(mut self, page_size: usize) -> Self {
        self.inner = self.inner.page_size(page_size);
        self
    }

    /// Descending order.
    #[must_use]
    pub fn descending(mut self, descending: bool) -> Self {
        self.inner = self.inner.descending(descending);
        self
    }

    /// At most this many shard queries in flight.
    #[must_use]
    pub fn throttle(mut self, throttle: usize) -> Self {
        self.inner = self.inner.throttle(throttle);
        self
    }

    /// Signs page tokens with this key.
    #[must_use]
    pub fn signing_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.inner = self.inner.signing_key(key);
        self
    }

    /// One page of records: the first (`token: None`) or the one after the page that returned
    /// `token`.
    pub async fn page(&self, token: Option<&str>) -> Result<TypedPage<C>> {
        let page = self.inner.page(token).await?;
        Ok(TypedPage {
            items: page
                .items
                .iter()
                .map(C::from_item)
                .collect::<Result<Vec<_>>>()?,
            next: page.next,
            stats: page.stats,
        })
    }
}
