//! The typed face of [`Query`]: indexes named by the entity's index tokens, items read back as
//! the entity's type.

use std::marker::PhantomData;

use futures::{Stream, StreamExt as _};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_dynamo::Item;

use super::{Query, QueryStats};
use crate::entity::{Entity, IndexToken, from_item, schema_of};
use crate::error::{Error, Result};
use crate::store::{Filter, RangeCondition, Store};

/// A query of entity `E`, built from [`EntityExt::query`](crate::EntityExt::query).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use entity_manager_core::query::key_value;
/// use entity_manager_core::store::{MemoryStore, RangeCondition, Store, TableDefinition};
/// use entity_manager_core::{Entity, EntityExt, Table};
/// # use entity_manager_core::{EntityModel, TableModel, IndexToken, Index, Projection, Property, ShardBump, transcode};
/// # use std::borrow::Cow;
/// # #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
/// # struct User { #[serde(rename = "userId")] user_id: String, created: u64 }
/// # struct Users;
/// # impl Table for Users {
/// #     const MODEL: TableModel = TableModel::DEFAULT;
/// #     fn model() -> &'static TableModel { static M: TableModel = Users::MODEL; &M }
/// #     fn entities() -> Vec<&'static EntityModel> { vec![User::model()] }
/// # }
/// # #[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// # enum UserIndex { Created }
/// # impl IndexToken for UserIndex {
/// #     const ALL: &'static [Self] = &[Self::Created];
/// #     fn name(self) -> &'static str { "created" }
/// # }
/// # impl Entity for User {
/// #     type Table = Users;
/// #     type Index = UserIndex;
/// #     const MODEL: EntityModel = {
/// #         const PROPERTIES: &[Property] = &[Property::new("userId", transcode::STRING), Property::new("created", transcode::TIMESTAMP)];
/// #         const INDEXES: &[Index] = &[Index::new("created", Cow::Borrowed("hashKey"), Cow::Borrowed("created"), Projection::All)];
/// #         EntityModel::new("user", "userId", "created")
/// #             .with_shard_bumps(&[ShardBump::new(0, 2, 1)])
/// #             .with_properties(PROPERTIES)
/// #             .with_indexes(INDEXES)
/// #     };
/// #     fn model() -> &'static EntityModel { static M: EntityModel = User::MODEL; &M }
/// # }
/// // `User` derives `Entity` (its index tokens are `UserIndex`)
/// let store = MemoryStore::new(TableDefinition::from_schema(Users::schema()?)?);
/// for n in 0..30u64 {
///     let user = User { user_id: format!("u{n}"), created: 1_000 + n };
///     store.put_item(user.to_item()?, Default::default()).await?;
/// }
/// let query = User::query(&store)?
///     .index(UserIndex::Created)
///     .range(RangeCondition::Ge(key_value(&1_020u64)?))
///     .window(0, 5_000);
/// let page = query.page(None).await?;
/// assert_eq!(page.items.len(), 10);
/// assert_eq!(page.items[0], User { user_id: "u20".into(), created: 1_020 });
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct TypedQuery<'a, S, E> {
    inner: Query<'a, S>,
    entity: PhantomData<fn() -> E>,
}

/// One page of records.
#[derive(Clone, Debug, PartialEq)]
pub struct TypedPage<E> {
    /// The records, in the query's order.
    pub items: Vec<E>,
    /// The token of the next page; `None` at the end.
    pub next: Option<String>,
    /// What the page cost.
    pub stats: QueryStats,
}

impl<'a, S: Store, E: Entity> TypedQuery<'a, S, E> {
    pub(crate) fn new(store: &'a S) -> Result<Self> {
        Ok(Self {
            inner: Query::new(store, schema_of::<E>()?),
            entity: PhantomData,
        })
    }

    /// Adds an index; [`range`](Self::range) and [`filter`](Self::filter) then apply to it.
    #[must_use]
    pub fn index(mut self, index: E::Index) -> Self {
        self.inner = self.inner.index(index.name());
        self
    }

    /// A condition on the range key of the last index added; before any index, every page fails
    /// with [`Error::InvalidQuery`](crate::Error::InvalidQuery) (never dropped).
    #[must_use]
    pub fn range(mut self, condition: RangeCondition) -> Self {
        self.inner = self.inner.range(condition);
        self
    }

    /// A filter on the items of the last index added.
    #[must_use]
    pub fn filter(mut self, filter: Filter) -> Self {
        self.inner = self.inner.filter(filter);
        self
    }

    /// Sets an attribute of the partial item that fills a sharded hash key (for example the
    /// `beneficiaryId` of a `userBeneficiaryHashKey` index) or narrows the shards (the unique
    /// property).
    pub fn with<T: Serialize + ?Sized>(mut self, attribute: &str, value: &T) -> Result<Self> {
        let value = serde_dynamo::to_attribute_value(value).map_err(|source| Error::Serde {
            entity: E::model().token.to_string(),
            source,
        })?;
        let mut item: Item = self.inner.item.clone();
        item.insert(attribute.to_owned(), value);
        self.inner = self.inner.item(item);
        Ok(self)
    }

    /// Records created in `from..=to` (ms since the epoch). Default: `0..=now`.
    #[must_use]
    pub fn window(mut self, from: u64, to: u64) -> Self {
        self.inner = self.inner.window(from, to);
        self
    }

    /// Items per page (default: the entity's default limit).
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.inner = self.inner.limit(limit);
        self
    }

    /// No limit: one page holds every matching item.
    #[must_use]
    pub fn unlimited(mut self) -> Self {
        self.inner = self.inner.unlimited();
        self
    }

    /// The largest `Limit` of one shard query.
    #[must_use]
    pub fn page_size(mut self, page_size: usize) -> Self {
        self.inner = self.inner.page_size(page_size);
        self
    }

    /// Descending range-key order.
    #[must_use]
    pub fn descending(mut self, descending: bool) -> Self {
        self.inner = self.inner.descending(descending);
        self
    }

    /// A sort key for union mode.
    #[must_use]
    pub fn sort_by(mut self, attribute: impl Into<String>, desc: bool) -> Self {
        self.inner = self.inner.sort_by(attribute, desc);
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

    /// Binds page tokens to the table of this name (see [`Query::table_name`]).
    #[must_use]
    pub fn table_name(mut self, name: impl Into<String>) -> Self {
        self.inner = self.inner.table_name(name);
        self
    }

    /// The untyped query.
    pub fn untyped(&self) -> &Query<'a, S> {
        &self.inner
    }

    /// One page of records: the first (`token: None`) or the one after `token`.
    pub async fn page(&self, token: Option<&str>) -> Result<TypedPage<E>>
    where
        E: DeserializeOwned,
    {
        let page = self.inner.page(token).await?;
        let items = page
            .items
            .iter()
            .map(from_item::<E>)
            .collect::<Result<Vec<E>>>()?;
        Ok(TypedPage {
            items,
            next: page.next,
            stats: page.stats,
        })
    }

    /// Every matching record, page after page.
    pub fn stream(&self) -> impl Stream<Item = Result<E>> + '_
    where
        E: DeserializeOwned,
    {
        self.inner
            .stream()
            .map(|item| item.and_then(|item| from_item::<E>(&item)))
    }
}
