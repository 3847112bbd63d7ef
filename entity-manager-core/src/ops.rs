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

use crate::entity::{Entity, from_item, schema_of, to_item};
use crate::error::{Error, Result};
use crate::field::{Changes, Condition, Invalid};
use crate::keys::PrimaryKey;
use crate::schema::EntitySchema;
use crate::store::expression::Request;
use crate::store::value::{Number, equal, matches};
use crate::store::{
    CancellationReason, Comparison, Expect, Filter, ReturnValues, Store, StoreError, TransactWrite,
    Update, UpdateAction, WriteRequest,
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
/// with its own timestamp (a copy left in another shard by an earlier move loses). With a
/// version field, the highest version wins first: a read that is not isolated from a move can
/// see the record on both sides of it, and the side after the move is the newer one.
fn pick_versioned(
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

fn store_error(entity: String, operation: &'static str, source: StoreError) -> Error {
    Error::Store {
        entity,
        operation,
        source: Box::new(source),
    }
}

/// The unique value of a record, as text for errors.
fn unique_text(schema: EntitySchema<'_>, item: &Item) -> String {
    item.get(&*schema.model().unique_property)
        .map(value_text)
        .unwrap_or_default()
}

/// An id as text for errors.
fn id_text<I: Serialize + ?Sized>(id: &I) -> String {
    serde_dynamo::to_attribute_value::<_, AttributeValue>(id)
        .map(|value| value_text(&value))
        .unwrap_or_default()
}

/// A value as text for errors: a string or number as written, anything else as debugged.
fn value_text(value: &AttributeValue) -> String {
    match value {
        AttributeValue::S(s) | AttributeValue::N(s) => s.clone(),
        other => format!("{other:?}"),
    }
}

fn invalid_operand(entity: &str, invalid: Invalid) -> Error {
    Error::InvalidOperand {
        entity: entity.to_owned(),
        property: invalid.property.to_owned(),
        source: invalid.source,
    }
}

/// All of `filters` (none: `None`).
fn all_of(mut filters: Vec<Filter>) -> Option<Filter> {
    match filters.len() {
        0 => None,
        1 => filters.pop(),
        _ => Some(Filter::And(filters)),
    }
}

fn is_zero(value: &AttributeValue) -> bool {
    matches!(value, AttributeValue::N(n) if Number::parse(n).is_some_and(|n| n.canonical() == "0"))
}

/// Increments the version field of a record's item (an absent one counts as 0) and returns the
/// version the write expects to find stored: the record's own. `None` without a version field.
fn bump_version<E: Entity>(item: &mut Item) -> Result<Option<AttributeValue>> {
    let Some(name) = E::VERSION else {
        return Ok(None);
    };
    let expected = item
        .get(name)
        .cloned()
        .unwrap_or_else(|| AttributeValue::N("0".to_owned()));
    let next = match &expected {
        AttributeValue::N(n) => Number::parse(n).and_then(|n| n.add(&Number::parse("1")?)),
        _ => None,
    };
    let Some(next) = next else {
        return Err(Error::InvalidUpdate {
            entity: E::model().token.to_string(),
            unique: String::new(),
            reason: format!(
                "the version field `{name}` holds {expected:?}, which cannot be incremented; it must be an integer"
            ),
        });
    };
    item.insert(name.to_owned(), AttributeValue::N(next.canonical()));
    Ok(Some(expected))
}

/// The condition that the stored version is `expected` (a stored record without the field
/// counts as version 0); with `absent_ok`, a missing record passes too when `expected` is 0.
fn version_filter(
    name: &str,
    hash_key: &str,
    expected: &AttributeValue,
    absent_ok: bool,
) -> Filter {
    let mut any = vec![Filter::eq(name, expected.clone())];
    if is_zero(expected) {
        any.push(Filter::NotExists(name.to_owned()));
        if !absent_ok {
            return Filter::And(vec![Filter::Exists(hash_key.to_owned()), Filter::Or(any)]);
        }
    } else {
        return any.swap_remove(0);
    }
    Filter::Or(any)
}

/// Whether the stored item (or its absence) breaks the version a write expected.
fn version_conflict(
    name: &str,
    expected: &AttributeValue,
    current: Option<&Item>,
    absent_ok: bool,
) -> bool {
    match current {
        None => !(absent_ok && is_zero(expected)),
        Some(item) => match item.get(name) {
            Some(stored) => !equal(stored, expected),
            None => !is_zero(expected),
        },
    }
}

/// [`Error::VersionConflict`] of a write that expected `expected` and met `current`.
fn conflict_error(
    entity: String,
    unique: String,
    name: &str,
    expected: &AttributeValue,
    current: Option<Item>,
) -> Error {
    Error::VersionConflict {
        entity,
        unique,
        expected: value_text(expected),
        stored: current
            .as_ref()
            .map(|item| item.get(name).map_or_else(|| "0".to_owned(), value_text)),
        current: current.map(Box::new),
    }
}

/// The typed error of a write whose condition failed, from the stored item it met.
fn condition_failure<E: Entity>(
    unique: String,
    expected: Option<&AttributeValue>,
    absent_ok: bool,
    current: Option<Item>,
) -> Error {
    let entity = E::model().token.to_string();
    if let (Some(name), Some(expected)) = (E::VERSION, expected)
        && version_conflict(name, expected, current.as_ref(), absent_ok)
    {
        return conflict_error(entity, unique, name, expected, current);
    }
    Error::ConditionFailed {
        entity,
        unique,
        current: current.map(Box::new),
    }
}

/// Reads the record with unique value `id`; see [`EntityExt::get`](crate::EntityExt::get).
pub(crate) async fn get<E, S, I>(store: &S, id: &I) -> Result<Option<E>>
where
    E: Entity + DeserializeOwned,
    S: Store,
    I: Serialize + ?Sized,
{
    let schema = schema_of::<E>()?;
    read_by_id::<E, S, I>(store, schema, id)
        .await?
        .map(|item| from_item::<E>(&item))
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

/// The candidate keys of `item`'s unique value other than its own key.
fn other_candidates(schema: EntitySchema<'_>, item: &Item) -> Result<Vec<PrimaryKey>> {
    let own = schema.primary_keys(item)?;
    let mut probe = Item::default();
    if let Some(value) = item.get(&*schema.model().unique_property) {
        probe.insert(schema.model().unique_property.to_string(), value.clone());
    }
    Ok(schema
        .primary_keys(&probe)?
        .into_iter()
        .filter(|key| !own.contains(key))
        .collect())
}

/// The writes that create `item` once: a put on its own key if no item is there, plus a
/// check that each other candidate key of its unique value is free.
fn create_writes(schema: EntitySchema<'_>, item: Item) -> Result<Vec<TransactWrite>> {
    let others = other_candidates(schema, &item)?;
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

/// The item a create or put writes: the record's, with its version incremented; and the
/// version it expects stored.
fn write_item<E: Entity + Serialize>(record: &E) -> Result<(Item, Option<AttributeValue>)> {
    let mut item = to_item(record)?;
    let expected = bump_version::<E>(&mut item)?;
    Ok((item, expected))
}

/// Creates a record; see [`EntityExt::create`](crate::EntityExt::create).
pub(crate) async fn create<E, S>(store: &S, record: &E) -> Result<()>
where
    E: Entity + Serialize,
    S: Store,
{
    let schema = schema_of::<E>()?;
    let (item, _) = write_item(record)?;
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

/// The writes of a put: the put (under the version and the caller's condition) and a check
/// that no other candidate key holds a copy. Also the version the put expects.
fn put_writes<E: Entity + Serialize>(
    schema: EntitySchema<'_>,
    record: &E,
    condition: Option<Condition<E>>,
) -> Result<(Vec<TransactWrite>, Option<AttributeValue>)> {
    let (item, expected) = write_item(record)?;
    let mut conditions = Vec::new();
    if let (Some(name), Some(expected)) = (E::VERSION, &expected) {
        conditions.push(version_filter(
            name,
            &schema.table().hash_key,
            expected,
            true,
        ));
    }
    if let Some(condition) = condition {
        conditions.push(
            condition
                .into_filter()
                .map_err(|invalid| invalid_operand(&schema.model().token, invalid))?,
        );
    }
    let expect = all_of(conditions).map_or(Expect::Any, Expect::Matches);
    let others = other_candidates(schema, &item)?;
    let mut writes = vec![TransactWrite::Put { item, expect }];
    writes.extend(others.iter().map(|key| TransactWrite::Check {
        key: key_item(schema, key),
        expect: Expect::Absent,
    }));
    Ok((writes, expected))
}

/// Puts (creates or replaces) a record; see [`EntityExt::put`](crate::EntityExt::put) and [`EntityExt::put_if`](crate::EntityExt::put_if).
pub(crate) async fn put<E, S>(store: &S, record: &E, condition: Option<Condition<E>>) -> Result<()>
where
    E: Entity + Serialize,
    S: Store,
{
    let schema = schema_of::<E>()?;
    let entity = || schema.model().token.to_string();
    let (mut writes, expected) = put_writes(schema, record, condition)?;
    let unique = match writes.first() {
        Some(TransactWrite::Put { item, .. }) => unique_text(schema, item),
        _ => String::new(),
    };
    if writes.len() == 1 {
        let Some(TransactWrite::Put { item, expect }) = writes.pop() else {
            return Ok(());
        };
        return match store.put_item(item, expect).await {
            Ok(()) => Ok(()),
            Err(e) if e.is_conditional_check_failed() => Err(condition_failure::<E>(
                unique,
                expected.as_ref(),
                true,
                e.current_item().cloned(),
            )),
            Err(e) => Err(store_error(entity(), "PutItem", e)),
        };
    }
    match store.transact_write(writes).await {
        Ok(()) => Ok(()),
        Err(e) => {
            // a copy elsewhere explains a failed version check at the new key too
            let reasons = e.cancellation_reasons();
            match reasons.first() {
                _ if reasons
                    .iter()
                    .skip(1)
                    .any(CancellationReason::is_conditional_check_failed) =>
                {
                    Err(Error::StoredElsewhere {
                        entity: entity(),
                        unique,
                    })
                }
                Some(own) if own.is_conditional_check_failed() => Err(condition_failure::<E>(
                    unique,
                    expected.as_ref(),
                    true,
                    own.item.clone(),
                )),
                _ => Err(store_error(entity(), "TransactWriteItems", e)),
            }
        }
    }
}

/// Deletes the record with unique value `id` and returns it; see [`EntityExt::delete`](crate::EntityExt::delete) and
/// [`EntityExt::delete_if`](crate::EntityExt::delete_if).
pub(crate) async fn delete<E, S, I>(
    store: &S,
    id: &I,
    condition: Option<Condition<E>>,
) -> Result<Option<E>>
where
    E: Entity + DeserializeOwned,
    S: Store,
    I: Serialize + ?Sized,
{
    let schema = schema_of::<E>()?;
    let entity = || schema.model().token.to_string();
    let condition = condition
        .map(Condition::into_filter)
        .transpose()
        .map_err(|invalid| invalid_operand(&entity(), invalid))?;
    let present = Filter::Exists(schema.table().hash_key.to_string());
    let expect = match condition {
        Some(condition) => Expect::Matches(Filter::And(vec![present, condition])),
        None => Expect::Present,
    };
    // a record with several candidate keys may move between them (a migration, `move_record`)
    // between the read and the delete: the delete then finds nothing at the key read, and the
    // record is read again where it went, never reported deleted while it lives on
    let movable = candidates::<E, I>(schema, id)?.len() > 1;
    for _ in 0..MODIFY_ATTEMPTS {
        let Some(found) = read_by_id::<E, S, I>(store, schema, id).await? else {
            return Ok(None);
        };
        let record = from_item::<E>(&found)?;
        match store
            .delete_item(&key_of(schema, &found), expect.clone())
            .await
        {
            Ok(()) => return Ok(Some(record)),
            Err(e) if e.is_conditional_check_failed() => match e.current_item() {
                // gone from the key read: moved (the next read finds it) or deleted (the next
                // read proves it absent)
                None if movable => {}
                None => return Ok(None),
                Some(current) => {
                    return Err(condition_failure::<E>(
                        unique_text(schema, current),
                        None,
                        false,
                        Some(current.clone()),
                    ));
                }
            },
            Err(e) => return Err(store_error(entity(), "DeleteItem", e)),
        }
    }
    Err(Error::Conflict {
        entity: entity(),
        unique: id_text(id),
        attempts: MODIFY_ATTEMPTS,
    })
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
/// guard ([`read_guard`]) that makes the write fail on a concurrent change instead of
/// overwriting it.
fn diff<E: Entity>(schema: EntitySchema<'_>, old: &Item, new: &Item) -> (Update, Filter) {
    let table = schema.table();
    let is_key = |name: &str| name == &*table.hash_key || name == &*table.range_key;
    let mut update = Update::new();
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
    (update, read_guard::<E>(schema, old, new))
}

/// The condition that the stored record is still the one read as `old` (and about to become
/// `new`). With a version field, the version read: every typed write increments it, so it
/// witnesses every change in one comparison, however wide the record. Without one, every
/// attribute of the record as read still has the value read and every attribute only `new`
/// has is still absent.
fn read_guard<E: Entity>(schema: EntitySchema<'_>, old: &Item, new: &Item) -> Filter {
    let table = schema.table();
    if let Some(name) = E::VERSION {
        let read = old
            .get(name)
            .cloned()
            .unwrap_or_else(|| AttributeValue::N("0".to_owned()));
        return version_filter(name, &table.hash_key, &read, false);
    }
    let is_key = |name: &str| name == &*table.hash_key || name == &*table.range_key;
    let mut guard = Vec::new();
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
    Filter::And(guard)
}

/// The error of a write one of whose expressions exceeds a `DynamoDB` limit, or `None` when
/// every expression fits. Nothing is sent: the same check both stores make.
fn too_large(
    schema: EntitySchema<'_>,
    operation: &'static str,
    update: Option<&Update>,
    expect: &Expect,
) -> Option<StoreError> {
    match Request::write(operation, &schema.table().hash_key, update, expect) {
        Err(e) if e.expression_too_large().is_some() => Some(e),
        _ => None,
    }
}

/// What a write of a whole record (the fallback of an update too wide for one `UpdateItem`)
/// came to.
enum Whole<E> {
    /// Written: the record as stored.
    Done(E),
    /// The record changed since it was read: read it again.
    Changed,
    /// There is no record.
    Missing,
}

/// Puts `new` whole (every attribute of the record; the version field, if any, already
/// incremented) if the stored record is still `old` (by [`read_guard`]) and `extra` holds too.
/// The read-modify-write stays safe: a concurrent change fails the condition, and the caller
/// reads again. A guard too wide for `DynamoDB` (an unversioned record with too many
/// attributes to compare one by one) is refused before any write, with advice.
async fn put_whole<E, S>(
    store: &S,
    schema: EntitySchema<'_>,
    old: &Item,
    new: Item,
    extra: Vec<Filter>,
    expected: Option<&AttributeValue>,
) -> Result<Whole<E>>
where
    E: Entity + DeserializeOwned,
    S: Store,
{
    let entity = || schema.model().token.to_string();
    let guard = read_guard::<E>(schema, old, &new);
    let mut conditions = vec![guard.clone()];
    conditions.extend(extra);
    let expect = all_of(conditions).map_or(Expect::Any, Expect::Matches);
    if let Some(e) = too_large(schema, "PutItem", None, &expect) {
        return Err(store_error(
            entity(),
            "PutItem",
            e.advise(
                "the record has too many attributes to guard its read-modify-write attribute by attribute; give the entity a version field (`#[entity(version = field)]`): its writes are then guarded by the version alone",
            ),
        ));
    }
    match store.put_item(new.clone(), expect).await {
        Ok(()) => from_item::<E>(&new).map(Whole::Done),
        Err(e) if e.is_conditional_check_failed() => {
            let Some(current) = e.current_item() else {
                return Ok(Whole::Missing);
            };
            if matches(&guard, current) {
                // as read: the caller's own condition failed
                return Err(condition_failure::<E>(
                    unique_text(schema, old),
                    expected,
                    false,
                    Some(current.clone()),
                ));
            }
            Ok(Whole::Changed)
        }
        Err(e) => Err(store_error(entity(), "PutItem", e)),
    }
}

/// Updates the record with unique value `id` by a closure; see [`EntityExt::modify`](crate::EntityExt::modify).
pub(crate) async fn modify<E, S, I, F>(store: &S, id: &I, mut change: F) -> Result<Option<E>>
where
    E: Entity + Serialize + DeserializeOwned,
    S: Store,
    I: Serialize + ?Sized,
    F: FnMut(&mut E),
{
    let schema = schema_of::<E>()?;
    let entity = || schema.model().token.to_string();
    for _ in 0..MODIFY_ATTEMPTS {
        let Some(old) = read_by_id::<E, S, I>(store, schema, id).await? else {
            return Ok(None);
        };
        let mut record = from_item::<E>(&old)?;
        change(&mut record);
        let mut new = to_item(&record)?;
        if let Some(name) = E::VERSION {
            // the stored version, incremented, whatever the closure did to it
            let mut version: Item = old
                .get(name)
                .map(|v| (name.to_owned(), v.clone()))
                .into_iter()
                .collect::<HashMap<_, _>>()
                .into();
            bump_version::<E>(&mut version)?;
            if let Some(next) = version.get(name) {
                new.insert(name.to_owned(), next.clone());
            }
            record = from_item::<E>(&new)?;
        }
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
        let (update, guard) = diff::<E>(schema, &old, &new);
        if update.is_empty() {
            return Ok(Some(record));
        }
        let expect = Expect::Matches(guard);
        if too_large(schema, "UpdateItem", Some(&update), &expect).is_some() {
            // too wide for one UpdateItem: the whole record, under the same guard
            match put_whole::<E, S>(store, schema, &old, new, Vec::new(), None).await? {
                Whole::Done(record) => return Ok(Some(record)),
                // moved or deleted since it was read: the next read says which
                Whole::Missing | Whole::Changed => continue,
            }
        }
        match store
            .update_item(&key_of(schema, &old), &update, expect, ReturnValues::None)
            .await
        {
            Ok(_) => return Ok(Some(record)),
            // changed (or deleted) since it was read: read again
            Err(e) if e.is_conditional_check_failed() => {}
            Err(e) => return Err(store_error(entity(), "UpdateItem", e)),
        }
    }
    Err(Error::Conflict {
        entity: entity(),
        unique: id_text(id),
        attempts: MODIFY_ATTEMPTS,
    })
}

/// The store update of typed changes, checked: distinct fields, none of them a key, a
/// generated property or the version field. Returns the checked actions (as the store will
/// apply them) and the generated properties built from a changed field.
fn checked_update<'m>(
    schema: EntitySchema<'m>,
    version: Option<&str>,
    unique: &str,
    actions: &[UpdateAction],
    definition: &crate::store::TableDefinition,
) -> Result<(Vec<UpdateAction>, Vec<&'m crate::model::GeneratedProperty>)> {
    let model = schema.model();
    let invalid = |reason: String| Error::InvalidUpdate {
        entity: model.token.to_string(),
        unique: unique.to_owned(),
        reason,
    };
    for action in actions {
        let name = action.attribute();
        if name == &*model.unique_property || name == &*model.timestamp_property {
            return Err(Error::PrimaryKeyChange {
                entity: model.token.to_string(),
                unique: unique.to_owned(),
                property: name.to_owned(),
            });
        }
        if model.generated.iter().any(|g| &*g.name == name) {
            return Err(invalid(format!(
                "`{name}` is a generated property: it follows its components; change them instead"
            )));
        }
        if version == Some(name) {
            return Err(invalid(format!(
                "`{name}` is the version field: every write increments it; check it with `if_version`"
            )));
        }
    }
    let update = actions.iter().cloned().fold(Update::new(), Update::action);
    let checked = crate::store::update::check(&update, definition).map_err(invalid)?;
    let touched = |name: &str| actions.iter().any(|a| a.attribute() == name);
    let affected = model
        .generated
        .iter()
        .filter(|g| g.components.iter().any(|c| touched(c)))
        .collect();
    Ok((checked, affected))
}

/// Adds to `update` the rewrite of every generated property in `affected`, computed from `old`
/// (the stored item) with `actions` applied; returns the guard that keeps the result valid:
/// every component of those properties still as in `old`.
fn rewrite_keys<E: Entity + Serialize + DeserializeOwned>(
    old: &Item,
    actions: &[UpdateAction],
    affected: &[&crate::model::GeneratedProperty],
    unique: &str,
    update: &mut Update,
) -> Result<Vec<Filter>> {
    let mut guard: Vec<Filter> = Vec::new();
    if affected.is_empty() {
        return Ok(guard);
    }
    let mut applied = old.clone();
    crate::store::update::apply(&mut applied, actions).map_err(|reason| Error::InvalidUpdate {
        entity: E::model().token.to_string(),
        unique: unique.to_owned(),
        reason,
    })?;
    let new = to_item(&from_item::<E>(&applied)?)?;
    for g in affected {
        let change = match (old.get(&*g.name), new.get(&*g.name)) {
            (Some(a), Some(b)) if a == b => None,
            (_, Some(b)) => Some(UpdateAction::Set(g.name.to_string(), b.clone())),
            (Some(_), None) => Some(UpdateAction::Remove(g.name.to_string())),
            (None, None) => None,
        };
        if let Some(change) = change {
            *update = std::mem::take(update).action(change);
        }
        for component in g.components.iter() {
            let component = &**component;
            if guard.iter().any(|f| f.attributes() == [component]) {
                continue;
            }
            guard.push(match old.get(component) {
                Some(value) => Filter::eq(component, value.clone()),
                None => Filter::NotExists(component.to_owned()),
            });
        }
    }
    Ok(guard)
}

/// The update and condition of a write to an existing record: it must exist, the `guard`
/// must hold, the stored version must be `expected` (when given), and so must the caller's
/// `condition`; the version field, if any, goes up by one.
fn existing_record_write<E: Entity>(
    mut update: Update,
    hash_key: &str,
    guard: &[Filter],
    expected: Option<&AttributeValue>,
    condition: Option<Filter>,
) -> (Update, Expect) {
    let mut conditions = guard.to_vec();
    conditions.extend(existing_record_conditions::<E>(
        hash_key, expected, condition,
    ));
    if let Some(name) = E::VERSION {
        update = update.add(name, AttributeValue::N("1".to_owned()));
    }
    let expect = all_of(conditions).map_or(Expect::Any, Expect::Matches);
    (update, expect)
}

/// The conditions of a write to an existing record besides its guard: it exists, the stored
/// version is `expected` (when given), and the caller's `condition` holds.
fn existing_record_conditions<E: Entity>(
    hash_key: &str,
    expected: Option<&AttributeValue>,
    condition: Option<Filter>,
) -> Vec<Filter> {
    let mut conditions = vec![Filter::Exists(hash_key.to_owned())];
    if let (Some(name), Some(expected)) = (E::VERSION, expected) {
        conditions.push(version_filter(name, hash_key, expected, false));
    }
    conditions.extend(condition);
    conditions
}

/// The whole item of the record `old` (a stored item) with checked `actions` applied: its
/// generated properties recomputed, its version field (if any) incremented.
fn changed_whole<E: Entity + Serialize + DeserializeOwned>(
    old: &Item,
    actions: &[UpdateAction],
    unique: &str,
) -> Result<Item> {
    let mut applied = old.clone();
    crate::store::update::apply(&mut applied, actions).map_err(|reason| Error::InvalidUpdate {
        entity: E::model().token.to_string(),
        unique: unique.to_owned(),
        reason,
    })?;
    let mut new = to_item(&from_item::<E>(&applied)?)?;
    bump_version::<E>(&mut new)?;
    Ok(new)
}

/// Applies typed changes to the record with unique value `id`; see [`EntityExt::update`](crate::EntityExt::update).
#[allow(
    clippy::too_many_lines,
    reason = "one loop: locate, compute the keys, write, classify a failure"
)]
pub(crate) async fn update<E, S, I>(store: &S, id: &I, changes: Changes<E>) -> Result<Option<E>>
where
    E: Entity + Serialize + DeserializeOwned,
    S: Store,
    I: Serialize + ?Sized,
{
    let schema = schema_of::<E>()?;
    let entity = || schema.model().token.to_string();
    let unique = id_text(id);
    let crate::field::Parts {
        actions,
        condition,
        version: expected,
    } = changes
        .into_parts()
        .map_err(|invalid| invalid_operand(&entity(), invalid))?;
    let (actions, affected) =
        checked_update(schema, E::VERSION, &unique, &actions, store.definition())?;
    let hash_key = schema.table().hash_key.to_string();
    let candidates = candidates::<E, I>(schema, id)?;
    // one candidate and no key to recompute: a blind, atomic update; else the record is read
    // first (to find its shard, and the components of the keys to recompute)
    let read_first = candidates.len() != 1 || !affected.is_empty();
    for _ in 0..MODIFY_ATTEMPTS {
        let (key, old) = if read_first {
            match read_by_id::<E, S, I>(store, schema, id).await? {
                Some(old) => (key_of(schema, &old), Some(old)),
                None => return Ok(None),
            }
        } else {
            match candidates.first() {
                Some(key) => (key_item(schema, key), None),
                None => return Ok(None),
            }
        };
        let mut update = actions.iter().cloned().fold(Update::new(), Update::action);
        let guard = match &old {
            Some(old) => rewrite_keys::<E>(old, &actions, &affected, &unique, &mut update)?,
            None => Vec::new(),
        };
        schema.check_update_key_sizes(update.actions())?;
        let (update, expect) = existing_record_write::<E>(
            update,
            &hash_key,
            &guard,
            expected.as_ref(),
            condition.clone(),
        );
        if too_large(schema, "UpdateItem", Some(&update), &expect).is_some() {
            // too wide for one UpdateItem: the changes are applied to the record as read and
            // the whole record is put, guarded as a read-modify-write
            let old = match old {
                Some(old) => old,
                None => match read_by_id::<E, S, I>(store, schema, id).await? {
                    Some(old) => old,
                    None => return Ok(None),
                },
            };
            let new = changed_whole::<E>(&old, &actions, &unique)?;
            let extra =
                existing_record_conditions::<E>(&hash_key, expected.as_ref(), condition.clone());
            match put_whole::<E, S>(store, schema, &old, new, extra, expected.as_ref()).await? {
                Whole::Done(record) => return Ok(Some(record)),
                // gone from the key read: moved (read it again) or deleted (the read says so)
                Whole::Missing if candidates.len() > 1 => continue,
                Whole::Missing => return Ok(None),
                Whole::Changed => continue,
            }
        }
        match store
            .update_item(&key, &update, expect, ReturnValues::AllNew)
            .await
        {
            Ok(Some(item)) => return from_item::<E>(&item).map(Some),
            Ok(None) => return Ok(None),
            Err(e) if e.is_conditional_check_failed() => {
                let Some(current) = e.current_item() else {
                    if candidates.len() > 1 {
                        // moved to another candidate key since it was read, or deleted: the
                        // next read finds it, or proves it absent
                        continue;
                    }
                    return Ok(None);
                };
                if guard.iter().all(|g| matches(g, current)) {
                    return Err(condition_failure::<E>(
                        unique,
                        expected.as_ref(),
                        false,
                        Some(current.clone()),
                    ));
                }
                // a component changed since it was read: read again
            }
            Err(e) => return Err(store_error(entity(), "UpdateItem", e)),
        }
    }
    Err(Error::Conflict {
        entity: entity(),
        unique,
        attempts: MODIFY_ATTEMPTS,
    })
}

/// Moves a record to a new primary key; see [`EntityExt::move_record`](crate::EntityExt::move_record).
pub(crate) async fn move_record<E, S, I>(store: &S, from: &I, to: &E) -> Result<()>
where
    E: Entity + Serialize,
    S: Store,
    I: Serialize + ?Sized,
{
    let schema = schema_of::<E>()?;
    let entity = || schema.model().token.to_string();
    let unique = || id_text(from);
    let Some(old) = read_by_id::<E, S, I>(store, schema, from).await? else {
        return Err(Error::NotFound {
            entity: entity(),
            unique: unique(),
        });
    };
    // with a version field: the stored record must hold `to`'s version, which goes up by one
    let (item, expected) = write_item(to)?;
    let hash_key = schema.table().hash_key.to_string();
    // the record must still be the one read (or, with a version field, hold `to`'s version)
    let present = match (E::VERSION, &expected) {
        (Some(name), Some(expected)) => {
            Expect::Matches(version_filter(name, &hash_key, expected, false))
        }
        _ => Expect::Matches(read_guard::<E>(schema, &old, &item)),
    };
    let old_key = key_of(schema, &old);
    let new_unique = unique_text(schema, &item);
    let mut writes = vec![TransactWrite::Delete {
        key: old_key.clone(),
        expect: present.clone(),
    }];
    // the new record must not exist elsewhere, unless it is the record being moved
    for write in create_writes(schema, item)? {
        match write {
            TransactWrite::Check { key, .. } if key == old_key => {}
            TransactWrite::Put { item, .. } if key_of(schema, &item) == old_key => {
                // the same primary key: a plain replacement
                writes = vec![TransactWrite::Put {
                    item,
                    expect: present.clone(),
                }];
            }
            other => writes.push(other),
        }
    }
    let Err(e) = store.transact_write(writes).await else {
        return Ok(());
    };
    let reasons = e.cancellation_reasons();
    // the record changed or moved since it was read: that explains a failed check elsewhere too
    match reasons.first() {
        Some(own) if own.is_conditional_check_failed() && own.item.is_some() => {
            return Err(condition_failure::<E>(
                unique(),
                expected.as_ref(),
                false,
                own.item.clone(),
            ));
        }
        Some(own) if own.is_conditional_check_failed() => {
            // gone from the key read: moved elsewhere (a conflict) or deleted
            return Err(match read_by_id::<E, S, I>(store, schema, from).await? {
                Some(now) => condition_failure::<E>(unique(), expected.as_ref(), false, Some(now)),
                None => Error::NotFound {
                    entity: entity(),
                    unique: unique(),
                },
            });
        }
        _ => {}
    }
    if reasons
        .iter()
        .skip(1)
        .any(CancellationReason::is_conditional_check_failed)
    {
        return Err(Error::AlreadyExists {
            entity: entity(),
            unique: new_unique,
        });
    }
    Err(store_error(entity(), "TransactWriteItems", e))
}

/// Puts many records; see [`EntityExt::put_many`](crate::EntityExt::put_many).
pub(crate) async fn put_many<E, S>(store: &S, records: &[E]) -> Result<()>
where
    E: Entity + Serialize,
    S: Store,
{
    let writes = records
        .iter()
        .map(|record| to_item(record).map(WriteRequest::Put))
        .collect::<Result<Vec<_>>>()?;
    store
        .batch_write(writes)
        .await
        .map_err(|source| Error::BatchWrite {
            entity: E::model().token.to_string(),
            source: Box::new(source),
        })
}

/// Deletes the records with these unique values; see [`EntityExt::delete_many`](crate::EntityExt::delete_many).
pub(crate) async fn delete_many<E, S, I>(store: &S, ids: &[I]) -> Result<()>
where
    E: Entity,
    S: Store,
    I: Serialize,
{
    let schema = schema_of::<E>()?;
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
    kind: OriginKind,
    /// The version the operation expects stored, for an entity with a version field.
    version: Option<(&'static str, AttributeValue)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OriginKind {
    /// The put of a create, or a check that another candidate key of a create is free.
    Create,
    /// A put (a missing record passes).
    Put,
    /// A check that another candidate key of a put holds no copy.
    Elsewhere,
    /// An update, a condition check or a delete of a record that must exist.
    Existing,
    /// A delete by id of one candidate key (never fails).
    Delete,
}

/// A transaction over records of one or more entities: everything or nothing.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use entity_manager_core::store::{MemoryStore, TableDefinition};
/// use entity_manager_core::{EntityExt, Table, Transaction};
/// # use entity_manager_core::{Entity, transcode};
/// # use entity_manager_core::model::{EntityModel, Property, TableModel};
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
/// #     const MODEL: EntityModel = {
/// #         const PROPERTIES: &[Property] = &[Property::new("userId", transcode::STRING), Property::new("created", transcode::TIMESTAMP)];
/// #         EntityModel::new("user", "userId", "created").with_properties(PROPERTIES)
/// #     };
/// #     fn model() -> &'static EntityModel { static M: EntityModel = User::MODEL; &M }
/// # }
/// # #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
/// # #[serde(rename_all = "camelCase")]
/// # struct Email { email: String, created: u64, user_id: String }
/// # impl Entity for Email {
/// #     type Table = Users;
/// #     const MODEL: EntityModel = {
/// #         const PROPERTIES: &[Property] = &[Property::new("email", transcode::STRING), Property::new("created", transcode::TIMESTAMP)];
/// #         EntityModel::new("email", "email", "created").with_properties(PROPERTIES)
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
        let schema = schema_of::<E>()?;
        let (item, _) = write_item(record)?;
        let origin = Origin {
            entity: schema.model().token.to_string(),
            unique: unique_text(schema, &item),
            kind: OriginKind::Create,
            version: None,
        };
        for write in create_writes(schema, item)? {
            self.push(write, origin.clone());
        }
        Ok(self)
    }

    /// Puts (creates or replaces) `record`, as [`EntityExt::put`](crate::EntityExt::put) does: refused with
    /// [`Error::StoredElsewhere`] if a copy is stored under another shard, and with
    /// [`Error::VersionConflict`] if the stored version is not the record's.
    pub fn put<E: Entity + Serialize>(self, record: &E) -> Result<Self> {
        self.put_writes(record, None)
    }

    /// Puts `record` if `condition` holds for the stored one, else the transaction fails with
    /// [`Error::ConditionFailed`].
    pub fn put_if<E: Entity + Serialize>(
        self,
        record: &E,
        condition: Condition<E>,
    ) -> Result<Self> {
        self.put_writes(record, Some(condition))
    }

    fn put_writes<E: Entity + Serialize>(
        mut self,
        record: &E,
        condition: Option<Condition<E>>,
    ) -> Result<Self> {
        let schema = schema_of::<E>()?;
        let (writes, expected) = put_writes(schema, record, condition)?;
        let unique = match writes.first() {
            Some(TransactWrite::Put { item, .. }) => unique_text(schema, item),
            _ => String::new(),
        };
        let version = E::VERSION.zip(expected);
        for (n, write) in writes.into_iter().enumerate() {
            let origin = Origin {
                entity: schema.model().token.to_string(),
                unique: unique.clone(),
                kind: if n == 0 {
                    OriginKind::Put
                } else {
                    OriginKind::Elsewhere
                },
                version: version.clone(),
            };
            self.push(write, origin);
        }
        Ok(self)
    }

    /// Applies typed [`Changes`] to the stored `record` (as read earlier): every generated
    /// property built from a changed field is rewritten from the record's values, so the
    /// transaction fails with [`Error::ConditionFailed`] if the record changed since (with a
    /// version field: [`Error::VersionConflict`]); also if the record no longer exists.
    pub fn update<E: Entity + Serialize + DeserializeOwned>(
        mut self,
        record: &E,
        changes: Changes<E>,
    ) -> Result<Self> {
        let schema = schema_of::<E>()?;
        let entity = schema.model().token.to_string();
        let old = to_item(record)?;
        let unique = unique_text(schema, &old);
        let crate::field::Parts {
            actions,
            condition,
            version: expected,
        } = changes
            .into_parts()
            .map_err(|invalid| invalid_operand(&entity, invalid))?;
        let table = schema.table();
        // the table keys are all the check needs of the table
        let definition = crate::store::TableDefinition::new(
            (&*table.hash_key, crate::store::KeyType::S),
            (&*table.range_key, crate::store::KeyType::S),
        );
        let (actions, affected) =
            checked_update(schema, E::VERSION, &unique, &actions, &definition)?;
        let mut update = actions.iter().cloned().fold(Update::new(), Update::action);
        let guard = rewrite_keys::<E>(&old, &actions, &affected, &unique, &mut update)?;
        // the record's own version, unless the caller asked for another
        let version = E::VERSION.and_then(|name| {
            let expected = expected.or_else(|| old.get(name).cloned())?;
            Some((name, expected))
        });
        let (update, expect) = existing_record_write::<E>(
            update,
            &table.hash_key,
            &guard,
            version.as_ref().map(|(_, expected)| expected),
            condition,
        );
        let origin = Origin {
            entity,
            unique,
            kind: OriginKind::Existing,
            version,
        };
        self.push(
            TransactWrite::Update {
                key: key_of(schema, &old),
                update,
                expect,
            },
            origin,
        );
        Ok(self)
    }

    /// Checks that the stored `record` exists and `condition` holds for it, else the
    /// transaction fails with [`Error::ConditionFailed`]; writes nothing.
    pub fn check<E: Entity + Serialize>(
        mut self,
        record: &E,
        condition: Condition<E>,
    ) -> Result<Self> {
        let schema = schema_of::<E>()?;
        let entity = schema.model().token.to_string();
        let item = to_item(record)?;
        let condition = condition
            .into_filter()
            .map_err(|invalid| invalid_operand(&entity, invalid))?;
        let origin = Origin {
            entity,
            unique: unique_text(schema, &item),
            kind: OriginKind::Existing,
            version: None,
        };
        self.push(
            TransactWrite::Check {
                key: key_of(schema, &item),
                expect: Expect::Matches(Filter::And(vec![
                    Filter::Exists(schema.table().hash_key.to_string()),
                    condition,
                ])),
            },
            origin,
        );
        Ok(self)
    }

    /// Deletes the record with unique value `id`, wherever it is: one delete per candidate
    /// shard, so no read is needed (deleting a missing item is no error).
    pub fn delete<E: Entity, I: Serialize + ?Sized>(mut self, id: &I) -> Result<Self> {
        let schema = schema_of::<E>()?;
        for key in candidates::<E, I>(schema, id)? {
            let origin = Origin {
                entity: schema.model().token.to_string(),
                unique: id_text(id),
                kind: OriginKind::Delete,
                version: None,
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

    /// Deletes the stored `record` (as read earlier): it must still exist and, with a version
    /// field, still hold the record's version, else the transaction fails with
    /// [`Error::ConditionFailed`] or [`Error::VersionConflict`].
    pub fn delete_record<E: Entity + Serialize>(mut self, record: &E) -> Result<Self> {
        let schema = schema_of::<E>()?;
        let item = to_item(record)?;
        let hash_key = schema.table().hash_key.to_string();
        let version = E::VERSION.and_then(|name| Some((name, item.get(name)?.clone())));
        let mut conditions = vec![Filter::Exists(hash_key.clone())];
        if let Some((name, expected)) = &version {
            conditions.push(version_filter(name, &hash_key, expected, false));
        }
        let origin = Origin {
            entity: schema.model().token.to_string(),
            unique: unique_text(schema, &item),
            kind: OriginKind::Existing,
            version,
        };
        self.push(
            TransactWrite::Delete {
                key: key_of(schema, &item),
                expect: all_of(conditions).map_or(Expect::Any, Expect::Matches),
            },
            origin,
        );
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

    /// Carries out every operation or none. A failed operation is a typed error naming its
    /// entity and unique value: [`Error::AlreadyExists`] (create), [`Error::StoredElsewhere`]
    /// (put), [`Error::VersionConflict`], [`Error::ConditionFailed`] (with the stored item).
    pub async fn commit<S: Store>(self, store: &S) -> Result<()> {
        let span = crate::trace::op_span!("entity_manager.transaction", operations = self.len());
        crate::trace::operation(span, self.commit_inner(store)).await
    }

    async fn commit_inner<S: Store>(self, store: &S) -> Result<()> {
        let Self { writes, origins } = self;
        if writes.is_empty() {
            return Ok(());
        }
        let entities = || {
            let mut names: Vec<&str> = origins.iter().map(|o| &*o.entity).collect();
            names.dedup();
            names.join(", ")
        };
        let Err(e) = store.transact_write(writes).await else {
            return Ok(());
        };
        let failures = || {
            e.cancellation_reasons()
                .iter()
                .zip(&origins)
                .filter(|(reason, _)| reason.is_conditional_check_failed())
        };
        // a copy elsewhere explains a failed version check at a put's new key too
        let failed = failures()
            .find(|(_, origin)| origin.kind == OriginKind::Elsewhere)
            .or_else(|| failures().next());
        let Some((reason, origin)) = failed else {
            return Err(store_error(entities(), "TransactWriteItems", e));
        };
        let entity = origin.entity.clone();
        let unique = origin.unique.clone();
        let current = reason.item.clone();
        Err(match origin.kind {
            OriginKind::Create => Error::AlreadyExists { entity, unique },
            OriginKind::Elsewhere => Error::StoredElsewhere { entity, unique },
            OriginKind::Put | OriginKind::Existing | OriginKind::Delete => {
                let absent_ok = origin.kind == OriginKind::Put;
                match &origin.version {
                    Some((name, expected))
                        if version_conflict(name, expected, current.as_ref(), absent_ok) =>
                    {
                        conflict_error(entity, unique, name, expected, current)
                    }
                    _ => Error::ConditionFailed {
                        entity,
                        unique,
                        current: current.map(Box::new),
                    },
                }
            }
        })
    }
}

/// A consistent read of records of one or more entities by id, in one `TransactGetItems`: every
/// record as of the same instant.
///
/// Each [`get`](Self::get) returns a typed handle; after [`commit`](Self::commit), the
/// [`ReadResults`] give each record back by its handle.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use entity_manager_core::store::{MemoryStore, TableDefinition};
/// use entity_manager_core::{EntityExt, ReadTransaction, Table};
/// # use entity_manager_core::{Entity, transcode};
/// # use entity_manager_core::model::{EntityModel, Property, TableModel};
/// # struct Users;
/// # impl Table for Users {
/// #     const MODEL: TableModel = TableModel::DEFAULT;
/// #     fn model() -> &'static TableModel { static M: TableModel = Users::MODEL; &M }
/// #     fn entities() -> Vec<&'static EntityModel> { vec![User::model()] }
/// # }
/// # #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
/// # #[serde(rename_all = "camelCase")]
/// # struct User { user_id: String, created: u64 }
/// # impl Entity for User {
/// #     type Table = Users;
/// #     const MODEL: EntityModel = {
/// #         const PROPERTIES: &[Property] = &[Property::new("userId", transcode::STRING), Property::new("created", transcode::TIMESTAMP)];
/// #         EntityModel::new("user", "userId", "created").with_properties(PROPERTIES)
/// #     };
/// #     fn model() -> &'static EntityModel { static M: EntityModel = User::MODEL; &M }
/// # }
/// let store = MemoryStore::new(TableDefinition::from_schema(Users::schema()?)?);
/// User { user_id: "u1".into(), created: 1 }.create(&store).await?;
///
/// let mut read = ReadTransaction::new();
/// let ann = read.get::<User, _>("u1")?;
/// let bob = read.get::<User, _>("u2")?;
/// let results = read.commit(&store).await?;
/// assert_eq!(results.get(ann)?, Some(User { user_id: "u1".into(), created: 1 }));
/// assert_eq!(results.get(bob)?, None);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Default)]
#[must_use = "a read transaction reads nothing until it is committed"]
pub struct ReadTransaction {
    keys: Vec<Item>,
    /// Per `get`: the range of `keys` holding its candidate keys.
    slots: Vec<std::ops::Range<usize>>,
    entities: Vec<String>,
}

/// A record asked of a [`ReadTransaction`]: give it to [`ReadResults::get`].
#[derive(Debug)]
pub struct Handle<E> {
    slot: usize,
    entity: std::marker::PhantomData<fn() -> E>,
}

impl<E> Clone for Handle<E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for Handle<E> {}

impl ReadTransaction {
    /// An empty read transaction.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for the record of entity `E` with unique value `id` (every candidate shard is
    /// read; `TransactGetItems` allows 100 keys in all).
    pub fn get<E: Entity, I: Serialize + ?Sized>(&mut self, id: &I) -> Result<Handle<E>> {
        let schema = schema_of::<E>()?;
        let start = self.keys.len();
        for key in candidates::<E, I>(schema, id)? {
            self.keys.push(key_item(schema, &key));
        }
        self.slots.push(start..self.keys.len());
        self.entities.push(schema.model().token.to_string());
        Ok(Handle {
            slot: self.slots.len() - 1,
            entity: std::marker::PhantomData,
        })
    }

    /// Reads every record asked for, as of one instant.
    pub async fn commit<S: Store>(self, store: &S) -> Result<ReadResults> {
        let span =
            crate::trace::op_span!("entity_manager.read_transaction", keys = self.keys.len());
        crate::trace::operation(span, self.commit_inner(store)).await
    }

    async fn commit_inner<S: Store>(self, store: &S) -> Result<ReadResults> {
        let Self {
            keys,
            slots,
            entities,
        } = self;
        let items = if keys.is_empty() {
            Vec::new()
        } else {
            store.transact_get(keys).await.map_err(|e| {
                let mut names = entities.clone();
                names.dedup();
                store_error(names.join(", "), "TransactGetItems", e)
            })?
        };
        Ok(ReadResults { items, slots })
    }
}

/// What a [`ReadTransaction`] read.
#[derive(Debug)]
pub struct ReadResults {
    items: Vec<Option<Item>>,
    slots: Vec<std::ops::Range<usize>>,
}

impl ReadResults {
    /// The record a handle asked for, or `None` if there is none.
    ///
    /// # Errors
    ///
    /// When the stored item is not a record of `E` ([`EntityExt::from_item`](crate::EntityExt::from_item)).
    pub fn get<E: Entity + DeserializeOwned>(&self, handle: Handle<E>) -> Result<Option<E>> {
        let schema = schema_of::<E>()?;
        let found: Vec<Item> = self
            .slots
            .get(handle.slot)
            .and_then(|range| self.items.get(range.clone()))
            .unwrap_or_default()
            .iter()
            .flatten()
            .cloned()
            .collect();
        pick_versioned(schema, E::VERSION, found)
            .map(|item| from_item::<E>(&item))
            .transpose()
    }
}
