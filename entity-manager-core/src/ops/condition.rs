//! The conditions a write carries (the version it expects, the record as it was read) and the
//! typed errors of a write whose condition failed, shared by every operation.

use serde::Serialize;
use serde_dynamo::{AttributeValue, Item};

use crate::entity::Entity;
use crate::error::{Error, Result};
use crate::field::Invalid;
use crate::schema::EntitySchema;
use crate::store::value::{Number, equal};
use crate::store::{Comparison, Filter, StoreError};
pub(super) fn store_error(entity: String, operation: &'static str, source: StoreError) -> Error {
    Error::Store {
        entity,
        operation,
        source: Box::new(source),
    }
}

/// The unique value of a record, as text for errors.
pub(super) fn unique_text(schema: EntitySchema<'_>, item: &Item) -> String {
    item.get(&*schema.model().unique_property)
        .map(value_text)
        .unwrap_or_default()
}

/// An id as text for errors.
pub(super) fn id_text<I: Serialize + ?Sized>(id: &I) -> String {
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

pub(super) fn invalid_operand(entity: &str, invalid: Invalid) -> Error {
    Error::InvalidOperand {
        entity: entity.to_owned(),
        property: invalid.property.to_owned(),
        source: invalid.source,
    }
}

/// All of `filters` (none: `None`).
pub(super) fn all_of(mut filters: Vec<Filter>) -> Option<Filter> {
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
pub(super) fn bump_version<E: Entity>(item: &mut Item) -> Result<Option<AttributeValue>> {
    let Some(name) = E::VERSION else {
        return Ok(None);
    };
    let expected = item
        .get(name)
        .cloned()
        .unwrap_or_else(|| AttributeValue::N("0".to_owned()));
    if let AttributeValue::N(n) = &expected
        && let Some((next, over)) = increment_plain(n, E::VERSION_MAX)
    {
        if over {
            return Err(version_exhausted::<E>(String::new(), name));
        }
        item.insert(name.to_owned(), AttributeValue::N(next));
        return Ok(Some(expected));
    }
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
    if let Some(max) = E::VERSION_MAX.and_then(Number::parse)
        && next > max
    {
        return Err(version_exhausted::<E>(String::new(), name));
    }
    item.insert(name.to_owned(), AttributeValue::N(next.canonical()));
    Ok(Some(expected))
}

/// Whether `text` is a decimal integer as `DynamoDB` and this crate write one: digits only,
/// without a leading zero (unless it is `0`), at most `max_len` of them.
fn plain_digits(text: &str, max_len: usize) -> bool {
    !text.is_empty()
        && text.len() <= max_len
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'))
}

/// `n + 1`, canonical, and whether it exceeds `max`, for a version written as a plain integer
/// of at most 19 digits (every version a typed write stores); `None` for any other text, which
/// the general decimal arithmetic ([`Number`]) handles. The same answer as that arithmetic,
/// without its parsing and allocations on every write (`increment_plain_is_the_general_path`).
fn increment_plain(n: &str, max: Option<&str>) -> Option<(String, bool)> {
    if !plain_digits(n, 19) {
        return None;
    }
    // below 10^19: one more still fits a u64
    let next = n.parse::<u64>().ok()?.checked_add(1)?;
    let over = match max {
        None => false,
        Some(max) if plain_digits(max, 38) => u128::from(next) > max.parse::<u128>().ok()?,
        Some(_) => return None,
    };
    Some((next.to_string(), over))
}

/// [`Error::InvalidUpdate`] of a write that would increment the version field past its type's
/// largest value.
pub(super) fn version_exhausted<E: Entity>(unique: String, name: &str) -> Error {
    Error::InvalidUpdate {
        entity: E::model().token.to_string(),
        unique,
        reason: format!(
            "the version field `{name}` is at the largest value its type holds ({}): another write would store a version the record cannot be read back with; give the field a wider type (`u64`)",
            E::VERSION_MAX.unwrap_or("?")
        ),
    }
}

/// The condition, for a write that adds one to the stored version, that the version is below
/// its type's largest value (or absent): past it, the record could not be read back.
pub(super) fn below_version_max<E: Entity>() -> Option<Filter> {
    let (name, max) = (E::VERSION?, E::VERSION_MAX?);
    Some(Filter::Or(vec![
        Filter::NotExists(name.to_owned()),
        Filter::compare(name, Comparison::Lt, AttributeValue::N(max.to_owned())),
    ]))
}

/// Whether the stored item's version is at (or past) its type's largest value.
fn version_at_max<E: Entity>(current: Option<&Item>) -> bool {
    let (Some(name), Some(max)) = (E::VERSION, E::VERSION_MAX.and_then(Number::parse)) else {
        return false;
    };
    current
        .and_then(|item| item.get(name))
        .and_then(|v| match v {
            AttributeValue::N(n) => Number::parse(n),
            _ => None,
        })
        .is_some_and(|stored| stored >= max)
}

/// The condition that the stored version is `expected` (a stored record without the field
/// counts as version 0); with `absent_ok`, a missing record passes too when `expected` is 0.
pub(super) fn version_filter(
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
pub(super) fn version_conflict(
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
pub(super) fn conflict_error(
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
pub(super) fn condition_failure<E: Entity>(
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
    if let Some(name) = E::VERSION
        && version_at_max::<E>(current.as_ref())
    {
        return version_exhausted::<E>(unique, name);
    }
    Error::ConditionFailed {
        entity,
        unique,
        current: current.map(Box::new),
    }
}

/// The condition that the stored record is still the one read as `old` (and about to become
/// `new`). With a version field, the version read: every typed write increments it, so it
/// witnesses every change in one comparison, however wide the record. Without one, every
/// attribute of the record as read still has the value read and every attribute only `new`
/// has is still absent.
pub(super) fn read_guard<E: Entity>(schema: EntitySchema<'_>, old: &Item, new: &Item) -> Filter {
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::increment_plain;
    use crate::store::value::Number;

    /// The general decimal arithmetic's answer: `n + 1` canonical, and whether it exceeds `max`.
    fn general(n: &str, max: Option<&str>) -> Option<(String, bool)> {
        let next = Number::parse(n)?.add(&Number::parse("1")?)?;
        let over = match max {
            Some(max) => next > Number::parse(max)?,
            None => false,
        };
        Some((next.canonical(), over))
    }

    fn maxima() -> impl Strategy<Value = Option<String>> {
        prop_oneof![
            Just(None),
            prop::sample::select(vec!["255", "65535", "4294967295", "18446744073709551615"])
                .prop_map(|m| Some(m.to_owned())),
            "[0-9]{1,22}".prop_map(Some),
            "[0-9.eE+-]{1,8}".prop_map(Some),
        ]
    }

    proptest! {
        #[test]
        fn increment_plain_is_the_general_path(
            n in prop_oneof![
                any::<u64>().prop_map(|v| v.to_string()),
                "[0-9]{0,21}",
                "-?[0-9]{0,3}(\\.[0-9]{0,2})?(e[0-9])?",
            ],
            max in maxima(),
        ) {
            if let Some(fast) = increment_plain(&n, max.as_deref()) {
                prop_assert_eq!(Some(fast), general(&n, max.as_deref()));
            }
        }

        #[test]
        fn every_version_a_write_stores_takes_the_plain_path(
            v in 0..10_000_000_000_000_000_000_u64,
            max in prop::sample::select(vec!["255", "4294967295", "18446744073709551615"]),
        ) {
            let n = v.to_string();
            prop_assert!(increment_plain(&n, Some(max)).is_some());
            prop_assert!(increment_plain(&n, None).is_some());
        }
    }
}
