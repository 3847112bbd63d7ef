//! The typed face of [`Query`]: indexes named by the entity's index tokens, range conditions
//! from its fields and key builders, filters and projections on its fields, items read back as
//! the entity's type (or a projected struct).

use std::marker::PhantomData;

use futures::{Stream, StreamExt as _};
use serde::de::DeserializeOwned;
use serde_dynamo::{AttributeValue, Item};

use super::index::{ClassicIndexOf, ClassicIndexesHaveNoPartitionValues};
use super::page::QueryStats;
use super::untyped::{Indexed, Query};
use crate::entity::{Entity, from_owned_item, from_owned_item_as};
use crate::error::Result;
use crate::field::{Condition, Field};
use crate::store::{Comparison, Filter, RangeCondition, Store};

/// The hash key to give a typed key builder of a sharded property in a query
/// ([`TypedQuery::hash_key`]): the query puts each shard's in its place.
pub const EVERY_SHARD: &str = "";

/// A value of a generated property of entity `E`, from the typed key builder that
/// `#[derive(Entity)]` emits for it (`User::last_name_range_key().last_name_canonical("jo")?`):
/// a full key, or a prefix of its leading components. Range conditions and sharded hash keys
/// of a [`TypedQuery`] take these instead of attribute names and `AttributeValue`s.
pub trait KeyValue<E> {
    /// The generated property the value belongs to.
    const PROPERTY: &'static str;
    /// The value so far.
    fn key_text(&self) -> &str;
    /// Whether every component was given (a full key, not a prefix).
    fn is_complete(&self) -> bool;
}

/// A condition on the range key of an index of entity `E`: from a field
/// (`User::FIELDS.created.ge(from)`, `=`, `<`, `<=`, `>`, `>=`, `between` and `begins_with`
/// only), or from a typed key builder ([`KeyCondition::begins_with`] and the others). It names
/// its attribute; a page of a query whose index has another range key fails with
/// [`Error::InvalidQuery`](crate::Error::InvalidQuery).
#[derive(Clone, Debug)]
#[must_use]
pub struct KeyCondition<E> {
    attribute: Option<String>,
    condition: std::result::Result<RangeCondition, String>,
    entity: PhantomData<fn() -> E>,
}

impl<E> KeyCondition<E> {
    fn on(attribute: &str, condition: RangeCondition) -> Self {
        Self {
            attribute: Some(attribute.to_owned()),
            condition: Ok(condition),
            entity: PhantomData,
        }
    }

    fn key<K: KeyValue<E>>(key: &K, make: impl FnOnce(AttributeValue) -> RangeCondition) -> Self {
        Self::on(
            K::PROPERTY,
            make(AttributeValue::S(key.key_text().to_owned())),
        )
    }

    fn full<K: KeyValue<E>>(key: &K, make: impl FnOnce(AttributeValue) -> RangeCondition) -> Self {
        if key.is_complete() {
            Self::key(key, make)
        } else {
            Self {
                attribute: Some(K::PROPERTY.to_owned()),
                condition: Err(format!(
                    "the value {:?} of `{}` is a prefix, not a full key: give every component, or use begins_with",
                    key.key_text(),
                    K::PROPERTY
                )),
                entity: PhantomData,
            }
        }
    }

    /// Range keys that start with this value (a prefix of leading components, or a full key).
    pub fn begins_with<K: KeyValue<E>>(key: &K) -> Self {
        Self::key(key, RangeCondition::BeginsWith)
    }

    /// Range keys equal to this full key.
    pub fn eq<K: KeyValue<E>>(key: &K) -> Self {
        Self::full(key, RangeCondition::Eq)
    }

    /// Range keys below this full key.
    pub fn lt<K: KeyValue<E>>(key: &K) -> Self {
        Self::full(key, RangeCondition::Lt)
    }

    /// Range keys at or below this full key.
    pub fn le<K: KeyValue<E>>(key: &K) -> Self {
        Self::full(key, RangeCondition::Le)
    }

    /// Range keys above this full key.
    pub fn gt<K: KeyValue<E>>(key: &K) -> Self {
        Self::full(key, RangeCondition::Gt)
    }

    /// Range keys at or above this full key.
    pub fn ge<K: KeyValue<E>>(key: &K) -> Self {
        Self::full(key, RangeCondition::Ge)
    }

    /// Range keys from `low` to `high`, both included (full keys).
    pub fn between<K: KeyValue<E>>(low: &K, high: &K) -> Self {
        match (
            Self::full(low, RangeCondition::Eq),
            Self::full(high, RangeCondition::Eq),
        ) {
            (
                Self {
                    condition: Ok(RangeCondition::Eq(low)),
                    ..
                },
                Self {
                    condition: Ok(RangeCondition::Eq(high)),
                    ..
                },
            ) => Self::on(K::PROPERTY, RangeCondition::Between(low, high)),
            (
                Self {
                    condition: Err(e), ..
                },
                _,
            )
            | (
                _,
                Self {
                    condition: Err(e), ..
                },
            ) => Self {
                attribute: Some(K::PROPERTY.to_owned()),
                condition: Err(e),
                entity: PhantomData,
            },
            _ => unreachable_key(),
        }
    }
}

/// `full` with `Eq` gives `Eq` or an error: never reached.
fn unreachable_key<E>() -> KeyCondition<E> {
    KeyCondition {
        attribute: None,
        condition: Err("internal: a key condition of an unexpected form".to_owned()),
        entity: PhantomData,
    }
}

impl<E> From<Condition<E>> for KeyCondition<E> {
    fn from(condition: Condition<E>) -> Self {
        let filter = match condition.into_filter() {
            Ok(filter) => filter,
            Err(invalid) => {
                return Self {
                    attribute: None,
                    condition: Err(format!(
                        "a value of `{}` cannot be stored: {}",
                        invalid.property, invalid.source
                    )),
                    entity: PhantomData,
                };
            }
        };
        let op = |op: Comparison, v: AttributeValue| match op {
            Comparison::Eq => Some(RangeCondition::Eq(v)),
            Comparison::Lt => Some(RangeCondition::Lt(v)),
            Comparison::Le => Some(RangeCondition::Le(v)),
            Comparison::Gt => Some(RangeCondition::Gt(v)),
            Comparison::Ge => Some(RangeCondition::Ge(v)),
            Comparison::Ne => None,
        };
        let converted = match filter {
            Filter::Compare {
                attribute,
                op: o,
                value,
            } => op(o, value).map(|c| (attribute, c)),
            Filter::Between {
                attribute,
                low,
                high,
            } => Some((attribute, RangeCondition::Between(low, high))),
            Filter::BeginsWith { attribute, prefix } => {
                Some((attribute, RangeCondition::BeginsWith(prefix)))
            }
            _ => None,
        };
        match converted {
            Some((attribute, condition)) => Self::on(&attribute, condition),
            None => Self {
                attribute: None,
                condition: Err(
                    "a range condition is one comparison of the range key: =, <, <=, >, >=, between or begins_with (use filter() for anything else)"
                        .to_owned(),
                ),
                entity: PhantomData,
            },
        }
    }
}

/// A condition built outside the typed API (for example from a runtime schema): it is applied
/// to the range key of the index as it is, unchecked.
impl<E> From<RangeCondition> for KeyCondition<E> {
    fn from(condition: RangeCondition) -> Self {
        Self {
            attribute: None,
            condition: Ok(condition),
            entity: PhantomData,
        }
    }
}

/// A set of fields of entity `E` to read ([`TypedQuery::projection`]).
///
/// ```
/// use entity_manager_core::field::Field;
/// use entity_manager_core::query::FieldSet;
///
/// # struct User;
/// let first_name: Field<User, String> = Field::new("firstName");
/// let logins: Field<User, u32> = Field::new("logins");
/// let fields = FieldSet::new().with(first_name).with(logins);
/// assert_eq!(fields.names(), ["firstName", "logins"]);
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct FieldSet<E> {
    names: Vec<&'static str>,
    entity: PhantomData<fn() -> E>,
}

impl<E> Default for FieldSet<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> FieldSet<E> {
    /// No field (the keys the query needs are always read).
    pub fn new() -> Self {
        Self {
            names: Vec::new(),
            entity: PhantomData,
        }
    }

    /// Adds a field.
    pub fn with<V, K>(mut self, field: Field<E, V, K>) -> Self {
        if !self.names.contains(&field.name()) {
            self.names.push(field.name());
        }
        self
    }

    /// The stored names of the fields, in the order added.
    #[must_use]
    pub fn names(&self) -> &[&'static str] {
        &self.names
    }
}

/// A query of entity `E`, built from [`EntityExt::query`](crate::EntityExt::query): add an index
/// ([`index`](Self::index)) or the table ([`table`](Self::table)) first; conditions then apply
/// to it (before, they do not compile).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use entity_manager_core::store::{MemoryStore, Store, TableDefinition};
/// use entity_manager_core::{Entity, EntityExt, Table};
/// use entity_manager_core::field::Field;
/// # use entity_manager_core::transcode;
/// # use entity_manager_core::model::{EntityModel, TableModel, Index, Projection, Property, ShardBump};
/// # use entity_manager_core::query::{Classic, TypedIndex};
/// # use std::borrow::Cow;
/// # #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
/// # struct User { #[serde(rename = "userId")] user_id: String, created: u64 }
/// # struct Users;
/// # impl Table for Users {
/// #     const MODEL: TableModel = TableModel::DEFAULT;
/// #     fn model() -> &'static TableModel { static M: TableModel = Users::MODEL; &M }
/// #     fn entities() -> Vec<&'static EntityModel> { vec![User::model()] }
/// # }
/// # enum UserIndex {}
/// # #[allow(non_upper_case_globals)]
/// # impl UserIndex { const Created: TypedIndex<User, Classic> = TypedIndex::named("created"); }
/// # impl Entity for User {
/// #     type Table = Users;
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
/// // `User` derives `Entity`: its index tokens are `UserIndex`, its fields `User::FIELDS`
/// let created: Field<User, u64> = Field::new("created"); // `User::FIELDS.created`
/// let store = MemoryStore::new(TableDefinition::from_schema(Users::schema()?)?);
/// for n in 0..30u64 {
///     let user = User { user_id: format!("u{n}"), created: 1_000 + n };
///     store.put_item(user.to_item()?, Default::default()).await?;
/// }
/// let query = User::query(&store)?
///     .index(UserIndex::Created)
///     .range(created.ge(1_020))
///     .shards_between(0, 5_000);
/// let page = query.page(None).await?;
/// assert_eq!(page.items.len(), 10);
/// assert_eq!(page.items[0], User { user_id: "u20".into(), created: 1_020 });
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct TypedQuery<'a, S, E> {
    inner: Query<'a, S, Indexed>,
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
    /// The typed face of an untyped query of `E` (from [`QueryStart`](super::QueryStart)).
    pub(super) fn open(inner: Query<'a, S, Indexed>) -> Self {
        Self {
            inner,
            entity: PhantomData,
        }
    }

    /// Adds another classic index of `E` (union mode: see the [module docs](super)):
    /// [`range`](Self::range) and [`filter`](Self::filter) then apply to it.
    #[must_use]
    pub fn index<I: ClassicIndexOf<E>>(self, index: I) -> Self {
        self.map(|q| q.index(index.name()))
    }

    /// Not on a classic index: see [`ClassicIndexesHaveNoPartitionValues`].
    #[doc(hidden)]
    #[must_use]
    pub fn hash<T>(self, _condition: T) -> Self
    where
        Self: ClassicIndexesHaveNoPartitionValues,
    {
        self
    }

    /// Adds the table itself: every shard of the entity's hash key space, in unique-value order
    /// (the table range key); [`range`](Self::range) and [`filter`](Self::filter) then apply
    /// to it.
    #[must_use]
    pub fn table(self) -> Self {
        self.map(Query::table)
    }

    /// A condition on the range key of the last index (or table) added: from a field
    /// (`User::FIELDS.created.ge(from)`) or a key builder
    /// ([`KeyCondition::begins_with`]`(&User::last_name_range_key().last_name("jo")?)`).
    #[must_use]
    pub fn range(mut self, condition: impl Into<KeyCondition<E>>) -> Self {
        let condition = condition.into();
        if let Some(spec) = self.inner.last_spec() {
            if spec.range.is_some() {
                // an index takes one key condition: a second is not ANDed, and replacing the
                // first would read other records than asked
                spec.problem = Some(
                    "a second range condition on the same index: a query takes one (write the two bounds as one `between`, or filter on the field)"
                        .to_owned(),
                );
            }
            spec.range_on = condition.attribute;
            match condition.condition {
                Ok(c) => spec.range = Some(c),
                Err(problem) => spec.problem = Some(problem),
            }
        }
        self
    }

    /// A filter on the fields of the items of the last index (or table) added (applied after
    /// each shard query's limit, as `DynamoDB` does). Given more than once, every filter must
    /// hold, as with [`Condition::and`].
    #[must_use]
    pub fn filter(mut self, condition: Condition<E>) -> Self {
        if let Some(spec) = self.inner.last_spec() {
            match condition.into_filter() {
                Ok(filter) => spec.and_filter(filter),
                Err(invalid) => {
                    spec.problem = Some(format!(
                        "a value of `{}` in the filter cannot be stored: {}",
                        invalid.property, invalid.source
                    ));
                }
            }
        }
        self
    }

    /// One page of records: the first (`token: None`) or the one after `token`.
    pub async fn page(&self, token: Option<&str>) -> Result<TypedPage<E>>
    where
        E: DeserializeOwned,
    {
        read_page::<E, E>(self.inner.page(token).await?)
    }

    /// One page, each item read as a `P` (a struct of the [`projection`](Self::projection)'s
    /// fields, or any other view of the entity's items).
    pub async fn page_as<P: DeserializeOwned>(&self, token: Option<&str>) -> Result<TypedPage<P>> {
        read_page::<E, P>(self.inner.page(token).await?)
    }

    /// Every matching record, page after page (a [`Stream`]: bring
    /// [`StreamExt`](super::StreamExt) into scope to use `next`, `try_collect` and the rest).
    ///
    /// Each page of the stream goes on from what the previous one read, instead of reading it
    /// again from a token: each item is read once (see
    /// [`untyped::Query::stream`](super::untyped::Query::stream)).
    pub fn stream(&self) -> impl Stream<Item = Result<E>> + '_
    where
        E: DeserializeOwned,
    {
        self.inner
            .stream()
            .map(|item| item.and_then(from_owned_item::<E>))
    }

    /// Every matching item, page after page, each read as a `P`.
    pub fn stream_as<P: DeserializeOwned>(&self) -> impl Stream<Item = Result<P>> + '_ {
        self.inner
            .stream()
            .map(|item| item.and_then(from_owned_item_as::<E, P>))
    }

    /// The pages of records from the first (`token: None`) or from the one after the page that
    /// returned `token`, each as [`page`](Self::page) gives it (its records, its stats and the
    /// token of the page after it), until the last.
    ///
    /// Each page goes on from what the pages before it read, as [`stream`](Self::stream)
    /// does: a query paged to its end this way reads each item once. A failed page ends the
    /// stream with its error, and nothing is lost: the last page's token resumes it, here or in
    /// another process (see [`untyped::Query::pages`](super::untyped::Query::pages)).
    pub fn pages(
        &self,
        token: Option<&str>,
    ) -> impl Stream<Item = Result<TypedPage<E>>> + use<'_, 'a, S, E>
    where
        E: DeserializeOwned,
    {
        self.pages_as::<E>(token)
    }

    /// [`pages`](Self::pages), each item read as a `P`.
    pub fn pages_as<P: DeserializeOwned>(
        &self,
        token: Option<&str>,
    ) -> impl Stream<Item = Result<TypedPage<P>>> + use<'_, 'a, S, E, P> {
        self.inner
            .pages(token)
            .map(|page| page.and_then(read_page::<E, P>))
    }
}

/// A page's items read as records of `E`, each as a `P`.
fn read_page<E: Entity, P: DeserializeOwned>(page: super::QueryPageResult) -> Result<TypedPage<P>> {
    read_items(page, from_owned_item_as::<E, P>)
}

/// A page's items each read by `read`, with the page's token and statistics.
pub(super) fn read_items<T>(
    page: super::QueryPageResult,
    read: impl FnMut(serde_dynamo::Item) -> Result<T>,
) -> Result<TypedPage<T>> {
    Ok(TypedPage {
        items: page
            .items
            .into_iter()
            .map(read)
            .collect::<Result<Vec<T>>>()?,
        next: page.next,
        stats: page.stats,
    })
}

impl<'a, S: Store, E: Entity> TypedQuery<'a, S, E> {
    fn map(self, f: impl FnOnce(Query<'a, S, Indexed>) -> Query<'a, S, Indexed>) -> Self {
        Self::open(f(self.inner))
    }

    /// The sharded hash key of the indexes, from its typed key builder with every component
    /// given: `.hash_key(&User::user_beneficiary_hash_key(EVERY_SHARD).beneficiary_id("b1")?)`
    /// (the query puts each shard's hash key in place of [`super::EVERY_SHARD`]).
    /// A prefix (not every component given) makes every page fail with
    /// [`Error::InvalidQuery`](crate::Error::InvalidQuery).
    #[must_use]
    pub fn hash_key<K: KeyValue<E>>(mut self, key: &K) -> Self {
        let text = key.key_text();
        if self.inner.hash_suffix.is_some() {
            // one partition per query: a second hash key is not a union
            self.inner.problem = Some(format!(
                "a second hash key ({text:?} of `{}`): a query reads one; run one query per value",
                K::PROPERTY
            ));
        }
        if !key.is_complete() {
            self.inner.problem = Some(format!(
                "the hash key {text:?} of `{}` is a prefix: give every component",
                K::PROPERTY
            ));
        }
        // the builder's value starts with the hash key it was given: keep what follows
        let delimiter = &*<E::Table as crate::entity::Table>::model()
            .delimiters
            .generated_key;
        let suffix = text.find(delimiter).map_or("", |at| &text[at..]);
        self.inner.hash_suffix = Some((K::PROPERTY.to_owned(), suffix.to_owned()));
        self
    }

    /// Narrows the shards to the one each bump gives this record (its unique value).
    pub fn unique<V: serde::Serialize + ?Sized>(mut self, value: &V) -> Result<Self> {
        let value = serde_dynamo::to_attribute_value(value).map_err(|source| {
            crate::error::Error::Serde {
                entity: E::model().token.to_string(),
                source,
            }
        })?;
        let mut item: Item = self.inner.item.clone();
        item.insert(E::model().unique_property.to_string(), value);
        self.inner = self.inner.item(item);
        Ok(self)
    }

    /// Sets an attribute of the partial item that fills a sharded hash key or narrows the
    /// shards, by name. Prefer [`hash_key`](Self::hash_key) (typed); this is for names only
    /// known at run time.
    pub fn with<T: serde::Serialize + ?Sized>(
        mut self,
        attribute: &str,
        value: &T,
    ) -> Result<Self> {
        let value = serde_dynamo::to_attribute_value(value).map_err(|source| {
            crate::error::Error::Serde {
                entity: E::model().token.to_string(),
                source,
            }
        })?;
        let mut item: Item = self.inner.item.clone();
        item.insert(attribute.to_owned(), value);
        self.inner = self.inner.item(item);
        Ok(self)
    }

    /// The shards that can hold records created in `from..=to` (ms since the epoch); see
    /// [`Query::shards_between`]: it selects shards, not records. Default: `0..=now`.
    #[must_use]
    pub fn shards_between(self, from: u64, to: u64) -> Self {
        self.map(|q| q.shards_between(from, to))
    }

    /// Only records created in `from..=to`; see [`Query::created_between`].
    #[must_use]
    pub fn created_between(self, from: u64, to: u64) -> Self {
        self.map(|q| q.created_between(from, to))
    }

    /// Items per page (default: the entity's default limit).
    #[must_use]
    pub fn limit(self, limit: usize) -> Self {
        self.map(|q| q.limit(limit))
    }

    /// No limit: one page holds every matching item.
    #[must_use]
    pub fn unlimited(self) -> Self {
        self.map(Query::unlimited)
    }

    /// The largest `Limit` of one shard query.
    #[must_use]
    pub fn page_size(self, page_size: usize) -> Self {
        self.map(|q| q.page_size(page_size))
    }

    /// Descending range-key order.
    #[must_use]
    pub fn descending(self, descending: bool) -> Self {
        self.map(|q| q.descending(descending))
    }

    /// A sort key for union mode: a field of `E`.
    #[must_use]
    pub fn sort_by<V, K>(self, field: Field<E, V, K>, desc: bool) -> Self {
        self.map(|q| q.sort_by(field.name(), desc))
    }

    /// At most this many shard queries in flight.
    #[must_use]
    pub fn throttle(self, throttle: usize) -> Self {
        self.map(|q| q.throttle(throttle))
    }

    /// Reads only these fields (plus the keys the query needs, and the unique property,
    /// restored from the table range key when the index does not project it). Read the items
    /// with [`page_as`](TypedQuery::page_as) into a struct of those fields.
    #[must_use]
    pub fn projection(self, fields: &FieldSet<E>) -> Self {
        let names = fields.names().to_vec();
        self.map(|q| q.projection(names))
    }

    /// Signs page tokens with this key.
    #[must_use]
    pub fn signing_key(self, key: impl Into<Vec<u8>>) -> Self {
        self.map(|q| q.signing_key(key))
    }

    /// Binds page tokens to the table of this name (see [`Query::table_name`]).
    #[must_use]
    pub fn table_name(self, name: impl Into<String>) -> Self {
        self.map(|q| q.table_name(name))
    }

    /// The untyped query.
    pub fn untyped(&self) -> &Query<'a, S, Indexed> {
        &self.inner
    }
}
