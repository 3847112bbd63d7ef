//! Reads by id: [`get`] and [`get_many`] read every candidate key of a record in one round trip
//! and prove the absence of a record they did not find with a transactional read.

use std::collections::HashMap;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_dynamo::{AttributeValue, Item};

use crate::entity::{Entity, from_item, from_owned_item, schema_of};
use crate::error::{Error, Result};
use crate::keys::PrimaryKey;
use crate::schema::EntitySchema;
use crate::store::Store;

use super::condition::store_error;
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
/// with its own timestamp (a copy left in another shard by an earlier move loses). With a
/// version field, the highest version wins first: a read that is not isolated from a move can
/// see the record on both sides of it, and the side after the move is the newer one.
pub(super) fn pick_versioned(
    schema: EntitySchema<'_>,
    version: Option<&str>,
    mut found: Vec<Item>,
) -> Option<Item> {
    if let (Some(name), true) = (version, found.len() > 1) {
        let of = |item: &Item| match item.get(name) {
            Some(AttributeValue::N(n)) => n.parse::<u64>().unwrap_or(0),
            _ => 0,
        };
        if let Some(top) = found.iter().map(of).max() {
            found.retain(|item| of(item) == top);
        }
    }
    pick(schema, found)
}

/// [`pick_versioned`] without a version field.
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

/// Reads the record with unique value `id`; see [`EntityExt::get`](crate::EntityExt::get).
pub(crate) async fn get<E, S, I>(store: &S, id: &I) -> Result<Option<E>>
where
    E: Entity + DeserializeOwned,
    S: Store,
    I: Serialize + ?Sized,
{
    let schema = schema_of::<E>()?;
    // the item read is the caller's alone: its keys come off in place, without a copy
    read_by_id::<E, S, I>(store, schema, id)
        .await?
        .map(from_owned_item::<E>)
        .transpose()
}

/// The stored item of the record with unique value `id`, read from every candidate key in one
/// round trip.
pub(super) async fn read_by_id<E, S, I>(
    store: &S,
    schema: EntitySchema<'_>,
    id: &I,
) -> Result<Option<Item>>
where
    E: Entity,
    S: Store,
    I: Serialize + ?Sized,
{
    let keys: Vec<Item> = candidates::<E, I>(schema, id)?
        .iter()
        .map(|key| key_item(schema, key))
        .collect();
    let found = pick_versioned(
        schema,
        E::VERSION,
        read_keys(store, schema, keys.clone()).await?,
    );
    if found.is_some() || keys.is_empty() {
        return Ok(found);
    }
    Ok(pick_versioned(
        schema,
        E::VERSION,
        confirm_absent(store, schema, keys).await?,
    ))
}

/// Reads `keys` again in transactions (`TransactGetItems`, 100 keys each), to prove that
/// records a read did not find are absent.
///
/// A batch read of several candidate keys is not isolated from a move (a transaction that
/// deletes one candidate and puts another): it can read the new key before the put and the
/// old one after the delete, and find neither. And a read that is not strongly consistent can
/// miss a record written a moment ago. A transactional read is strongly consistent and sees a
/// move whole or not at all, so a record found by neither read is absent. It costs one more
/// round trip and twice the read units of the keys, and only when a record is not found.
async fn confirm_absent<S: Store>(
    store: &S,
    schema: EntitySchema<'_>,
    keys: Vec<Item>,
) -> Result<Vec<Item>> {
    let mut found = Vec::new();
    let mut keys = keys;
    while !keys.is_empty() {
        let rest = keys.split_off(keys.len().min(TRANSACT_GET_MAX));
        let read = store
            .transact_get(keys)
            .await
            .map_err(|e| store_error(schema.model().token.to_string(), "TransactGetItems", e))?;
        found.extend(read.into_iter().flatten());
        keys = rest;
    }
    Ok(found)
}

/// The most keys of one `TransactGetItems`.
const TRANSACT_GET_MAX: usize = 100;

/// Reads the records with these unique values; see [`EntityExt::get_many`](crate::EntityExt::get_many).
pub(crate) async fn get_many<E, S, I>(store: &S, ids: &[I]) -> Result<Vec<Option<E>>>
where
    E: Entity + DeserializeOwned,
    S: Store,
    I: Serialize,
{
    let schema = schema_of::<E>()?;
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
    let keys: Vec<Item> = keys.iter().map(|key| key_item(schema, key)).collect();
    let mut by_range: HashMap<String, Vec<Item>> = HashMap::new();
    for item in read_keys(store, schema, keys.clone()).await? {
        if let Some(range) = key_text(&item, range_key) {
            by_range.entry(range.to_owned()).or_default().push(item);
        }
    }
    // ids not found: proved absent by a transactional read
    let unsure: Vec<Item> = keys
        .into_iter()
        .filter(|key| key_text(key, range_key).is_some_and(|range| !by_range.contains_key(range)))
        .collect();
    if !unsure.is_empty() {
        for item in confirm_absent(store, schema, unsure).await? {
            if let Some(range) = key_text(&item, range_key) {
                by_range.entry(range.to_owned()).or_default().push(item);
            }
        }
    }
    let mut out: Vec<Option<E>> = std::iter::repeat_with(|| None).take(ids.len()).collect();
    for (range, found) in by_range {
        let (Some(item), Some(positions)) =
            (pick_versioned(schema, E::VERSION, found), slots.get(&range))
        else {
            continue;
        };
        for &slot in positions {
            if let Some(place) = out.get_mut(slot) {
                *place = Some(from_item::<E>(&item)?);
            }
        }
    }
    Ok(out)
}

/// The table key of a stored item.
pub(super) fn key_of(schema: EntitySchema<'_>, item: &Item) -> Item {
    let table = schema.table();
    [&*table.hash_key, &*table.range_key]
        .into_iter()
        .filter_map(|name| item.get(name).map(|v| (name.to_owned(), v.clone())))
        .collect::<HashMap<_, _>>()
        .into()
}
