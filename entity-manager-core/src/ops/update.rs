//! Updates of a stored record: typed changes ([`update`]) and a closure over the record as read
//! ([`modify`]), with the whole record put when one `UpdateItem` cannot hold the change.

use std::collections::HashMap;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_dynamo::{AttributeValue, Item};

use crate::entity::{Entity, from_item, from_owned_item, schema_of, to_item};
use crate::error::{Error, Result};
use crate::field::Changes;
use crate::schema::EntitySchema;
use crate::store::expression::Request;
use crate::store::value::matches;
use crate::store::{Expect, Filter, ReturnValues, Store, StoreError, Update, UpdateAction};

use super::condition::{
    all_of, below_version_max, bump_version, condition_failure, id_text, invalid_operand,
    read_guard, store_error, unique_text, version_filter,
};
use super::read::{candidates, key_item, key_of, read_by_id};
use super::write::MODIFY_ATTEMPTS;
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

/// The error of a write one of whose expressions exceeds a `DynamoDB` limit, or `None` when
/// every expression fits. Nothing is sent: the same check both stores make.
fn too_large(
    schema: EntitySchema<'_>,
    operation: &'static str,
    update: Option<&Update>,
    expect: &Expect,
) -> Option<StoreError> {
    match Request::check_write(operation, &schema.table().hash_key, update, expect) {
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
pub(super) fn checked_update<'m>(
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
pub(super) fn rewrite_keys<E: Entity + Serialize + DeserializeOwned>(
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
pub(super) fn existing_record_write<E: Entity>(
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
    // the version is incremented in place: refused at its type's largest value
    conditions.extend(below_version_max::<E>());
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
            Ok(Some(item)) => return from_owned_item::<E>(item).map(Some),
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
