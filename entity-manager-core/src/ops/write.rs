//! Writes of whole records: create once, put, delete by id and move to a new primary key.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_dynamo::{AttributeValue, Item};

use crate::entity::{Entity, from_item, schema_of, to_item};
use crate::error::{Error, Result};
use crate::field::Condition;
use crate::keys::PrimaryKey;
use crate::schema::EntitySchema;
use crate::store::{CancellationReason, Expect, Filter, Store, TransactWrite};

use super::condition::{
    all_of, bump_version, condition_failure, id_text, invalid_operand, read_guard, store_error,
    unique_text, version_filter,
};
use super::read::{candidates, key_item, key_of, read_by_id};
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
pub(super) fn create_writes(schema: EntitySchema<'_>, item: Item) -> Result<Vec<TransactWrite>> {
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
pub(super) fn write_item<E: Entity + Serialize>(
    record: &E,
) -> Result<(Item, Option<AttributeValue>)> {
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
pub(super) fn put_writes<E: Entity + Serialize>(
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

/// How many times [`modify`](super::update::modify) (and a delete or an update that meets a
/// moved record) reads and writes again after a concurrent change.
pub(super) const MODIFY_ATTEMPTS: usize = 8;

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
