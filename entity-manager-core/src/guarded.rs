//! The writes of bulk work ([`migrate`](crate::migrate), [`purge`](crate::purge)), each
//! conditioned on the record being unchanged since it was read, so that no write acknowledged
//! to another client in between is overwritten or deleted.
//!
//! `BatchWriteItem` takes no condition, so bulk work writes item by item (`PutItem`,
//! `DeleteItem`, or `TransactWriteItems` for a move), [`PARALLEL_WRITES`] at once: the same
//! write units as a batch, in more requests. (`TransactWriteItems` of up to 100 conditioned
//! writes were measured too: no faster on `DynamoDB` Local, and twice the write units.)
//! [`BulkWrites::Exclusive`](crate::scan::BulkWrites::Exclusive) gives up the conditions for
//! batches, on a table no one else writes. A write whose condition fails gets the item as it
//! is now (`ReturnValuesOnConditionCheckFailure`), and the caller plans that item again and
//! writes it under a new condition: a conflict costs one more write, no read.

use serde_dynamo::{AttributeValue, Item};

use crate::store::{Filter, StoreError};

/// How many conditioned writes one page of bulk work has in flight.
pub(crate) const PARALLEL_WRITES: usize = 16;

/// How many times one record is planned and written again after its condition failed before
/// the bulk work gives up on it (with a typed error naming it).
pub(crate) const MAX_REDO: u64 = 32;

/// The condition that the item stored under `item`'s key is still `item`: it exists and, with a
/// version attribute, holds the version read (every typed write increments it); without one,
/// every attribute read still has the value read and each of `known` (the attributes the
/// entity may have) that was absent is still absent.
pub(crate) fn unchanged(
    item: &Item,
    hash_key: &str,
    range_key: &str,
    version: Option<&str>,
    known: &[&str],
) -> Filter {
    let mut all = vec![Filter::Exists(hash_key.to_owned())];
    if let Some(name) = version {
        all.push(match item.get(name) {
            Some(read) => Filter::eq(name, read.clone()),
            None => Filter::NotExists(name.to_owned()),
        });
        return Filter::And(all);
    }
    let mut names: Vec<(&String, &AttributeValue)> = item
        .iter()
        .filter(|(name, _)| **name != hash_key && **name != range_key)
        .collect();
    names.sort_by(|a, b| a.0.cmp(b.0));
    all.extend(
        names
            .into_iter()
            .map(|(name, value)| Filter::eq(name.clone(), value.clone())),
    );
    let mut absent: Vec<&str> = known
        .iter()
        .copied()
        .filter(|name| !item.contains_key(*name) && *name != hash_key && *name != range_key)
        .collect();
    absent.sort_unstable();
    absent.dedup();
    all.extend(absent.into_iter().map(|n| Filter::NotExists(n.to_owned())));
    Filter::And(all)
}

/// Whether a guarded write's condition refused it: plainly, or on an attempt sent again after
/// an earlier one may have been applied ([`StoreError::is_refused_after_lost_answer`]). Either
/// way the current item says what the record is, and a job whose write is a function of the
/// record (a migration, a purge) judges or redoes from it: redone on its own result, it finds
/// nothing left to do.
pub(crate) fn refused(e: &StoreError) -> bool {
    e.is_conditional_check_failed() || e.is_refused_after_lost_answer()
}

/// The advice attached to a guard too wide for one condition expression.
pub(crate) fn too_wide(e: StoreError) -> StoreError {
    if e.expression_too_large().is_some() {
        e.advise(
            "the record has too many attributes to check, attribute by attribute, that it is unchanged since it was read; give the entity a version field (`#[entity(version = field)]`) and migrate it with `Migration::records`: the write is then conditioned on the version alone",
        )
    } else {
        e
    }
}

/// `item` with its version attribute `name` (a number; 0 when absent) incremented.
pub(crate) fn bumped(mut item: Item, name: &str) -> Item {
    let next = match item.get(name) {
        Some(AttributeValue::N(n)) => n
            .parse::<u64>()
            .map_or_else(|_| n.clone(), |v| v.saturating_add(1).to_string()),
        _ => "1".to_owned(),
    };
    item.insert(name.to_owned(), AttributeValue::N(next));
    item
}
