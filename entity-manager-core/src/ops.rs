//! Typed entity operations over any [`Store`]: read by id, create once, put, delete, batches and
//! transactions, with keys always derived from the record.
//!
//! A record's primary key depends on its timestamp (which picks the shard bump). Reading or
//! deleting by id alone therefore considers one candidate key per bump
//! ([`EntitySchema::primary_keys`]), all in one round trip; creating checks every candidate
//! so that a unique value exists at most once in the whole table.

use std::collections::HashMap;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_dynamo::{AttributeValue, Item};

use crate::entity::{Entity, EntityExt};
use crate::error::{Error, Result};
use crate::keys::PrimaryKey;
use crate::schema::EntitySchema;
use crate::store::{
    Comparison, Expect, Filter, ReturnValues, Store, StoreError, TransactWrite, Update,
    WriteRequest,
};

/// The key item (table hash and range key attributes) of a primary key.
pub(crate) fn key_item(schema: EntitySchema<'_>, key: &PrimaryKey) -> Item {
    let table = schema.table();
    let mut item = Item::default();
    item.insert(
        table.hash_key.to_string(),
        AttributeValue::S(key.hash_key.clone()),
    );
    item.insert(
        table.range_key.to_string(),
        AttributeValue::S(key.range_key.clone()),
    );
    item
}

/// The candidate primary keys of the record with unique value `id`: one per shard bump.
pub(crate) fn candidates<E: Entity, I: Serialize + ?Sized>(
    schema: EntitySchema<'_>,
    id: &I,
) -> Result<Vec<PrimaryKey>> {
    let value = serde_dynamo::to_attribute_value(id).map_err(|source| Error::Serde {
        entity: E::model().token.to_string(),
        source,
    })?;
    let mut probe = Item::default();
    probe.insert(schema.model().unique_property.to_string(), value);
    schema.primary_keys(&probe)
}

/// The string value of a key attribute of `item`.
fn key_text<'i>(item: &'i Item, attribute: &str) -> Option<&'i str> {
    match item.get(attribute) {
        Some(AttributeValue::S(s)) => Some(s),
        _ => None,
    }
}

/// Of the items found under the candidate keys of one record, the one whose hash key agrees
/// with its own timestamp (a copy left in another shard by an earlier move loses).
fn pick(schema: EntitySchema<'_>, mut found: Vec<Item>) -> Option<Item> {
    if found.len() > 1 {
        let hash_key = &*schema.table().hash_key;
        if let Some(at) = found.iter().position(|item| {
            schema
                .hash_key(item)
                .is_ok_and(|expected| key_text(item, hash_key) == Some(&*expected))
        }) {
            return Some(found.swap_remove(at));
        }
    }
    found.into_iter().next()
}

/// Reads the items stored under `keys` in one round trip: `GetItem` for one key, `BatchGetItem`
/// for more.
async fn read_keys<S: Store>(
    store: &S,
    schema: EntitySchema<'_>,
    keys: Vec<Item>,
) -> Result<Vec<Item>> {
    let entity = || schema.model().token.to_string();
    if let [key] = keys.as_slice() {
        let found = store
            .get_item(key, None)
            .await
            .map_err(|e| store_error(entity(), "GetItem", e))?;
        return Ok(found.into_iter().collect());
    }
    store
        .batch_get(keys, None)
        .await
        .map_err(|source| Error::BatchGet {
            entity: entity(),
            source: Box::new(source),
        })
}

fn store_error(entity: String, operation: &'static str, source: StoreError) -> Error {
    Error::Store {
        entity,
        operation,
        source: Box::new(source),
    }
}

/// The unique value of a record, as text for errors.
fn unique_text(schema: EntitySchema<'_>, item: &Item) -> String {
    match item.get(&*schema.model().unique_property) {
        Some(AttributeValue::S(s)) => s.clone(),
        Some(AttributeValue::N(n)) => n.clone(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

/// Reads the record with unique value `id`; see [`EntityExt::get`].
pub(crate) async fn get<E, S, I>(store: &S, id: &I) -> Result<Option<E>>
where
    E: Entity + DeserializeOwned,
    S: Store,
    I: Serialize + ?Sized,
{
    let schema = E::schema()?;
    read_by_id::<E, S, I>(store, schema, id)
        .await?
        .map(|item| E::from_item(&item))
        .transpose()
}

/// The stored item of the record with unique value `id`, read from every candidate key in one
/// round trip.
async fn read_by_id<E, S, I>(store: &S, schema: EntitySchema<'_>, id: &I) -> Result<Option<Item>>
where
    E: Entity,
    S: Store,
    I: Serialize + ?Sized,
{
    let keys = candidates::<E, I>(schema, id)?
        .iter()
        .map(|key| key_item(schema, key))
        .collect();
    Ok(pick(schema, read_keys(store, schema, keys).await?))
}

/// Reads the records with these unique values; see [`EntityExt::get_many`].
pub(crate) async fn get_many<E, S, I>(store: &S, ids: &[I]) -> Result<Vec<Option<E>>>
where
    E: Entity + DeserializeOwned,
    S: Store,
    I: Serialize,
{
    let schema = E::schema()?;
    let range_key = &*schema.table().range_key;
    // Every candidate of one id has the same range key (it encodes the unique value).
    let mut slots: HashMap<String, Vec<usize>> = HashMap::new();
    let mut keys: Vec<PrimaryKey> = Vec::new();
    for (slot, id) in ids.iter().enumerate() {
        let candidates = candidates::<E, I>(schema, id)?;
        let Some(first) = candidates.first() else {
            continue;
        };
        let entry = slots.entry(first.range_key.clone()).or_default();
        if entry.is_empty() {
            keys.extend(candidates);
        }
        entry.push(slot);
    }
    let keys = keys.iter().map(|key| key_item(schema, key)).collect();
    let mut by_range: HashMap<String, Vec<Item>> = HashMap::new();
    for item in read_keys(store, schema, keys).await? {
        if let Some(range) = key_text(&item, range_key) {
            by_range.entry(range.to_owned()).or_default().push(item);
        }
    }
    let mut out: Vec<Option<E>> = std::iter::repeat_with(|| None).take(ids.len()).collect();
    for (range, found) in by_range {
        let (Some(item), Some(positions)) = (pick(schema, found), slots.get(&range)) else {
            continue;
        };
        for &slot in positions {
            if let Some(place) = out.get_mut(slot) {
                *place = Some(E::from_item(&item)?);
            }
        }
    }
    Ok(out)
}

/// The writes that create `item` once: a put on its own key if no item is there, plus a
/// check that each other candidate key of its unique value is free.
fn create_writes(schema: EntitySchema<'_>, item: Item) -> Result<Vec<TransactWrite>> {
    let own = schema.primary_keys(&item)?;
    let mut probe = Item::default();
    if let Some(value) = item.get(&*schema.model().unique_property) {
        probe.insert(schema.model().unique_property.to_string(), value.clone());
    }
    let others: Vec<PrimaryKey> = schema
        .primary_keys(&probe)?
        .into_iter()
        .filter(|key| !own.contains(key))
        .collect();
    let mut writes = vec![TransactWrite::Put {
        item,
        expect: Expect::Absent,
    }];
    writes.extend(others.iter().map(|key| TransactWrite::Check {
        key: key_item(schema, key),
        expect: Expect::Absent,
    }));
    Ok(writes)
}

/// Creates a record; see [`EntityExt::create`].
pub(crate) async fn create<E, S>(store: &S, record: &E) -> Result<()>
where
    E: Entity + Serialize,
    S: Store,
{
    let schema = E::schema()?;
    let item = record.to_item()?;
    let unique = unique_text(schema, &item);
    let mut writes = create_writes(schema, item)?;
    let entity = || schema.model().token.to_string();
    let result = if writes.len() == 1 {
        match writes.pop() {
            Some(TransactWrite::Put { item, expect }) => store
                .put_item(item, expect)
                .await
                .map_err(|e| (e, "PutItem")),
            _ => Ok(()),
        }
    } else {
        store
            .transact_write(writes)
            .await
            .map_err(|e| (e, "TransactWriteItems"))
    };
    result.map_err(|(e, operation)| {
        if e.is_conditional_check_failed() {
            Error::AlreadyExists {
                entity: entity(),
                unique,
            }
        } else {
            store_error(entity(), operation, e)
        }
    })
}

/// Puts (creates or replaces) a record; see [`EntityExt::put`].
pub(crate) async fn put<E, S>(store: &S, record: &E) -> Result<()>
where
    E: Entity + Serialize,
    S: Store,
{
    let item = record.to_item()?;
    store
        .put_item(item, Expect::Any)
        .await
        .map_err(|e| store_error(E::model().token.to_string(), "PutItem", e))
}

/// Deletes the record with unique value `id` and returns it; see [`EntityExt::delete`].
pub(crate) async fn delete<E, S, I>(store: &S, id: &I) -> Result<Option<E>>
where
    E: Entity + DeserializeOwned,
    S: Store,
    I: Serialize + ?Sized,
{
    let schema = E::schema()?;
    let Some(found) = read_by_id::<E, S, I>(store, schema, id).await? else {
        return Ok(None);
    };
    let record = E::from_item(&found)?;
    let table = schema.table();
    let key: Item = [&*table.hash_key, &*table.range_key]
        .into_iter()
        .filter_map(|name| found.get(name).map(|v| (name.to_owned(), v.clone())))
        .collect::<HashMap<_, _>>()
        .into();
    match store.delete_item(&key, Expect::Present).await {
        Ok(()) => Ok(Some(record)),
        // deleted by someone else since it was read
        Err(e) if e.is_conditional_check_failed() => Ok(None),
        Err(e) => Err(store_error(
            schema.model().token.to_string(),
            "DeleteItem",
            e,
        )),
    }
}

/// How many times [`modify`] reads and writes again after a concurrent change.
const MODIFY_ATTEMPTS: usize = 8;

/// The table key of a stored item.
fn key_of(schema: EntitySchema<'_>, item: &Item) -> Item {
    let table = schema.table();
    [&*table.hash_key, &*table.range_key]
        .into_iter()
        .filter_map(|name| item.get(name).map(|v| (name.to_owned(), v.clone())))
        .collect::<HashMap<_, _>>()
        .into()
}

/// The update that turns `old` into `new` (both full items with keys): `SET` what changed or
/// appeared, `REMOVE` what went; the table keys are equal in both and left out. Also the
/// guard: every attribute of the record as read still has the value read, and every attribute
/// the record did not have is still absent, so a concurrent change fails the write instead of
/// being overwritten.
fn diff(schema: EntitySchema<'_>, old: &Item, new: &Item) -> (Update, Filter) {
    let table = schema.table();
    let is_key = |name: &str| name == &*table.hash_key || name == &*table.range_key;
    let mut update = Update::new();
    let mut guard = Vec::new();
    let mut names: Vec<&String> = old.keys().chain(new.keys()).collect();
    names.sort();
    names.dedup();
    for name in names {
        if is_key(name) {
            continue;
        }
        match (old.get(name), new.get(name)) {
            (Some(a), Some(b)) if a == b => {}
            (_, Some(b)) => update = update.set(name.clone(), b.clone()),
            (Some(_), None) => update = update.remove(name.clone()),
            (None, None) => {}
        }
    }
    // the record's own attributes decide everything the closure computed
    let record = schema.remove_keys(old);
    for (name, value) in record.iter() {
        guard.push(Filter::compare(name.clone(), Comparison::Eq, value.clone()));
    }
    for name in new.keys() {
        if !old.contains_key(name) && !is_key(name) {
            guard.push(Filter::NotExists(name.clone()));
        }
    }
    guard.push(Filter::Exists(table.hash_key.to_string()));
    (update, Filter::And(guard))
}

/// Updates the record with unique value `id` by a closure; see [`EntityExt::modify`].
pub(crate) async fn modify<E, S, I, F>(store: &S, id: &I, mut change: F) -> Result<Option<E>>
where
    E: Entity + Serialize + DeserializeOwned,
    S: Store,
    I: Serialize + ?Sized,
    F: FnMut(&mut E),
{
    let schema = E::schema()?;
    let entity = || schema.model().token.to_string();
    for _ in 0..MODIFY_ATTEMPTS {
        let Some(old) = read_by_id::<E, S, I>(store, schema, id).await? else {
            return Ok(None);
        };
        let mut record = E::from_item(&old)?;
        change(&mut record);
        let new = record.to_item()?;
        let model = schema.model();
        for property in [&*model.unique_property, &*model.timestamp_property] {
            if old.get(property) != new.get(property) {
                return Err(Error::PrimaryKeyChange {
                    entity: entity(),
                    unique: unique_text(schema, &old),
                    property: property.to_owned(),
                });
            }
        }
        let (update, guard) = diff(schema, &old, &new);
        if update.is_empty() {
            return Ok(Some(record));
        }
        match store
            .update_item(
                &key_of(schema, &old),
                &update,
                Expect::Matches(guard),
                ReturnValues::None,
            )
            .await
        {
            Ok(_) => return Ok(Some(record)),
            // changed (or deleted) since it was read: read again
            Err(e) if e.is_conditional_check_failed() => {}
            Err(e) => return Err(store_error(entity(), "UpdateItem", e)),
        }
    }
    let unique = serde_dynamo::to_attribute_value::<_, AttributeValue>(id)
        .map(|v| match v {
            AttributeValue::S(s) | AttributeValue::N(s) => s,
            other => format!("{other:?}"),
        })
        .unwrap_or_default();
    Err(Error::Conflict {
        entity: entity(),
        unique,
        attempts: MODIFY_ATTEMPTS,
    })
}

/// Moves a record to a new primary key; see [`EntityExt::move_record`].
pub(crate) async fn move_record<E, S, I>(store: &S, from: &I, to: &E) -> Result<()>
where
    E: Entity + Serialize,
    S: Store,
    I: Serialize + ?Sized,
{
    let schema = E::schema()?;
    let entity = || schema.model().token.to_string();
    let unique = || {
        serde_dynamo::to_attribute_value::<_, AttributeValue>(from)
            .map(|v| match v {
                AttributeValue::S(s) | AttributeValue::N(s) => s,
                other => format!("{other:?}"),
            })
            .unwrap_or_default()
    };
    let Some(old) = read_by_id::<E, S, I>(store, schema, from).await? else {
        return Err(Error::NotFound {
            entity: entity(),
            unique: unique(),
        });
    };
    let item = to.to_item()?;
    let old_key = key_of(schema, &old);
    let new_unique = unique_text(schema, &item);
    let mut writes = vec![TransactWrite::Delete {
        key: old_key.clone(),
        expect: Expect::Present,
    }];
    // the new record must not exist elsewhere, unless it is the record being moved
    for write in create_writes(schema, item)? {
        match write {
            TransactWrite::Check { key, .. } if key == old_key => {}
            TransactWrite::Put { item, .. } if key_of(schema, &item) == old_key => {
                // the same primary key: a plain replacement
                writes = vec![TransactWrite::Put {
                    item,
                    expect: Expect::Present,
                }];
            }
            other => writes.push(other),
        }
    }
    match store.transact_write(writes).await {
        Ok(()) => Ok(()),
        Err(e)
            if e.cancellation_reasons()
                .iter()
                .skip(1)
                .any(crate::store::CancellationReason::is_conditional_check_failed) =>
        {
            Err(Error::AlreadyExists {
                entity: entity(),
                unique: new_unique,
            })
        }
        Err(e) if e.is_conditional_check_failed() || e.is_transaction_canceled() => {
            Err(Error::NotFound {
                entity: entity(),
                unique: unique(),
            })
        }
        Err(e) => Err(store_error(entity(), "TransactWriteItems", e)),
    }
}

/// Puts many records; see [`EntityExt::put_many`].
pub(crate) async fn put_many<E, S>(store: &S, records: &[E]) -> Result<()>
where
    E: Entity + Serialize,
    S: Store,
{
    let writes = records
        .iter()
        .map(|record| record.to_item().map(WriteRequest::Put))
        .collect::<Result<Vec<_>>>()?;
    store
        .batch_write(writes)
        .await
        .map_err(|source| Error::BatchWrite {
            entity: E::model().token.to_string(),
            source: Box::new(source),
        })
}

/// Deletes the records with these unique values; see [`EntityExt::delete_many`].
pub(crate) async fn delete_many<E, S, I>(store: &S, ids: &[I]) -> Result<()>
where
    E: Entity,
    S: Store,
    I: Serialize,
{
    let schema = E::schema()?;
    let mut keys: Vec<PrimaryKey> = Vec::new();
    for id in ids {
        for key in candidates::<E, I>(schema, id)? {
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    let writes = keys
        .iter()
        .map(|key| WriteRequest::Delete(key_item(schema, key)))
        .collect();
    store
        .batch_write(writes)
        .await
        .map_err(|source| Error::BatchWrite {
            entity: E::model().token.to_string(),
            source: Box::new(source),
        })
}

/// What one operation of a [`Transaction`] was, to turn a cancellation into a typed error.
#[derive(Clone, Debug)]
struct Origin {
    entity: String,
    unique: String,
    create: bool,
}

/// A transaction over records of one or more entities: everything or nothing.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use entity_manager_core::store::{MemoryStore, TableDefinition};
/// use entity_manager_core::{EntityExt, Table, Transaction};
/// # use entity_manager_core::{Entity, EntityModel, NoIndex, Property, TableModel, transcode};
/// # use std::borrow::Cow;
/// # struct Users;
/// # impl Table for Users {
/// #     const MODEL: TableModel = TableModel::DEFAULT;
/// #     fn model() -> &'static TableModel { static M: TableModel = Users::MODEL; &M }
/// #     fn entities() -> Vec<&'static EntityModel> { vec![User::model(), Email::model()] }
/// # }
/// # #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
/// # #[serde(rename_all = "camelCase")]
/// # struct User { user_id: String, created: u64 }
/// # impl Entity for User {
/// #     type Table = Users;
/// #     type Index = NoIndex;
/// #     const MODEL: EntityModel = EntityModel {
/// #         token: Cow::Borrowed("user"), unique_property: Cow::Borrowed("userId"),
/// #         timestamp_property: Cow::Borrowed("created"), shard_bumps: Cow::Borrowed(&[]),
/// #         default_limit: 10, default_page_size: 10,
/// #         properties: Cow::Borrowed(&[Property::new("userId", transcode::STRING), Property::new("created", transcode::TIMESTAMP)]),
/// #         generated: Cow::Borrowed(&[]), indexes: Cow::Borrowed(&[]),
/// #     };
/// #     fn model() -> &'static EntityModel { static M: EntityModel = User::MODEL; &M }
/// # }
/// # #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
/// # #[serde(rename_all = "camelCase")]
/// # struct Email { email: String, created: u64, user_id: String }
/// # impl Entity for Email {
/// #     type Table = Users;
/// #     type Index = NoIndex;
/// #     const MODEL: EntityModel = EntityModel {
/// #         token: Cow::Borrowed("email"), unique_property: Cow::Borrowed("email"),
/// #         timestamp_property: Cow::Borrowed("created"), shard_bumps: Cow::Borrowed(&[]),
/// #         default_limit: 10, default_page_size: 10,
/// #         properties: Cow::Borrowed(&[Property::new("email", transcode::STRING), Property::new("created", transcode::TIMESTAMP)]),
/// #         generated: Cow::Borrowed(&[]), indexes: Cow::Borrowed(&[]),
/// #     };
/// #     fn model() -> &'static EntityModel { static M: EntityModel = Email::MODEL; &M }
/// # }
/// let store = MemoryStore::new(TableDefinition::from_schema(Users::schema()?)?);
/// let ann = User { user_id: "u1".into(), created: 1 };
/// let email = Email { email: "ann@example.com".into(), created: 2, user_id: "u1".into() };
///
/// // a user and her email, created together or not at all
/// Transaction::new().create(&ann)?.create(&email)?.commit(&store).await?;
/// assert_eq!(User::get(&store, "u1").await?, Some(ann));
///
/// // deleting both in one transaction
/// Transaction::new().delete::<User, _>("u1")?.delete::<Email, _>("ann@example.com")?.commit(&store).await?;
/// assert_eq!(Email::get(&store, "ann@example.com").await?, None);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Default)]
#[must_use = "a transaction does nothing until it is committed"]
pub struct Transaction {
    writes: Vec<TransactWrite>,
    origins: Vec<Origin>,
}

impl Transaction {
    /// An empty transaction.
    pub fn new() -> Self {
        Self::default()
    }

    fn push(&mut self, write: TransactWrite, origin: Origin) {
        self.writes.push(write);
        self.origins.push(origin);
    }

    /// Creates `record`: fails the whole transaction with [`Error::AlreadyExists`] if a record
    /// with its unique value exists in any shard.
    pub fn create<E: Entity + Serialize>(mut self, record: &E) -> Result<Self> {
        let schema = E::schema()?;
        let item = record.to_item()?;
        let origin = Origin {
            entity: schema.model().token.to_string(),
            unique: unique_text(schema, &item),
            create: true,
        };
        for write in create_writes(schema, item)? {
            self.push(write, origin.clone());
        }
        Ok(self)
    }

    /// Puts (creates or replaces) `record`.
    pub fn put<E: Entity + Serialize>(mut self, record: &E) -> Result<Self> {
        let schema = E::schema()?;
        let item = record.to_item()?;
        let origin = Origin {
            entity: schema.model().token.to_string(),
            unique: unique_text(schema, &item),
            create: false,
        };
        self.push(
            TransactWrite::Put {
                item,
                expect: Expect::Any,
            },
            origin,
        );
        Ok(self)
    }

    /// Deletes the record with unique value `id`, wherever it is: one delete per candidate
    /// shard, so no read is needed (deleting a missing item is no error).
    pub fn delete<E: Entity, I: Serialize + ?Sized>(mut self, id: &I) -> Result<Self> {
        let schema = E::schema()?;
        for key in candidates::<E, I>(schema, id)? {
            let origin = Origin {
                entity: schema.model().token.to_string(),
                unique: key.range_key.clone(),
                create: false,
            };
            self.push(
                TransactWrite::Delete {
                    key: key_item(schema, &key),
                    expect: Expect::Any,
                },
                origin,
            );
        }
        Ok(self)
    }

    /// The number of store operations so far (DynamoDB allows 100 in one transaction).
    pub fn len(&self) -> usize {
        self.writes.len()
    }

    /// Whether the transaction holds no operation.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    /// Carries out every operation or none. A failed create is [`Error::AlreadyExists`] naming
    /// the entity and unique value.
    pub async fn commit<S: Store>(self, store: &S) -> Result<()> {
        let Self { writes, origins } = self;
        if writes.is_empty() {
            return Ok(());
        }
        let entities = || {
            let mut names: Vec<&str> = origins.iter().map(|o| &*o.entity).collect();
            names.dedup();
            names.join(", ")
        };
        match store.transact_write(writes).await {
            Ok(()) => Ok(()),
            Err(e) => {
                let failed = e
                    .cancellation_reasons()
                    .iter()
                    .zip(&origins)
                    .find(|(reason, _)| reason.is_conditional_check_failed())
                    .map(|(_, origin)| origin);
                match failed {
                    Some(origin) if origin.create => Err(Error::AlreadyExists {
                        entity: origin.entity.clone(),
                        unique: origin.unique.clone(),
                    }),
                    _ => Err(store_error(entities(), "TransactWriteItems", e)),
                }
            }
        }
    }
}
