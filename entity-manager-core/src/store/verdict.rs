//! The rules of a query request that do not depend on the stored items, in one home: what
//! `DynamoDB` refuses of a `Query` as invalid (its key condition's values, its filter, its
//! projection, its limit, its expressions' sizes). Both sides call [`check`]: `MemoryStore` on
//! every request it serves, giving `DynamoDB`'s message for a [`Refusal`]
//! ([`Refusal::store_error`]), and the query builders (`query::check`) on the first request of
//! each source before the first read, giving the fix. So a query the builders accept is never
//! refused by `MemoryStore` as invalid, and the two cannot drift apart.
//!
//! The shape of the key condition (one value per partition attribute, the sort attributes
//! conditioned left to right) is checked before, by `shape::check_key_condition`; [`check`]
//! takes it as given.

use serde_dynamo::AttributeValue;

use super::expression::Request;
use super::value::{self, Number, Scalar};
use super::{Filter, KeyAttribute, QueryPage, RangeCondition, StoreError};
use crate::key_type::KeyType;

/// What a query reads, as the table definition declares it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Keys<'d> {
    /// The partition attributes, in key order.
    pub(crate) hash: &'d [&'d KeyAttribute],
    /// The sort attributes, in key order.
    pub(crate) range: &'d [&'d KeyAttribute],
    /// The attributes its items carry (`None`: every attribute).
    pub(crate) projected: Option<&'d [String]>,
    /// Whether it is a local index (which reads what it does not project from the table).
    pub(crate) local: bool,
}

/// Where a key value of a key condition stands.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Place<'r> {
    /// A partition value.
    Partition,
    /// An equality of the sort prefix.
    Prefix,
    /// The value of the range condition (for `BETWEEN`, `low` says which bound).
    Condition(&'r RangeCondition, Option<bool>),
}

/// A key value of a key condition: its attribute, the value and where it stands.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyValue<'r> {
    pub(crate) attr: &'r KeyAttribute,
    pub(crate) value: &'r AttributeValue,
    pub(crate) place: Place<'r>,
}

/// Why a query request is refused as invalid: the facts, for each side to word.
#[derive(Debug)]
pub(crate) enum Refusal<'r> {
    /// A key value of another type than its attribute's.
    KeyType(KeyValue<'r>),
    /// A number key value that is no number `DynamoDB` stores (`NaN`, an infinity, text).
    NotANumber(KeyValue<'r>),
    /// An empty string or binary key value ([`crate::limits::empty_key_value`]).
    EmptyKey(KeyValue<'r>),
    /// A sort value over [`crate::limits::MAX_SORT_KEY_BYTES`] ([`crate::limits::sort_value_fits`]).
    SortTooLong(KeyValue<'r>),
    /// A range `BETWEEN` whose low bound is above its high bound.
    BetweenReversed(&'r KeyAttribute, &'r AttributeValue, &'r AttributeValue),
    /// `begins_with` on a number sort key.
    BeginsWithNumber(&'r KeyAttribute),
    /// A filter naming a key attribute of the index (`true`: a partition attribute).
    FilterOnKey(&'r str, bool),
    /// A filter comparing an attribute with a number that is no number.
    FilterNotANumber(&'r str, &'r str),
    /// A filter's `IN` with no value, or more than 100.
    InSize(&'r str, usize),
    /// A filter's `BETWEEN` whose low bound is above its high bound.
    FilterBetweenReversed(&'r str, &'r AttributeValue, &'r AttributeValue),
    /// Anything else `DynamoDB` refuses of a filter's operands (its message).
    Filter(String),
    /// A filter naming attributes the index does not project.
    FilterNotProjected(Vec<&'r str>),
    /// A projection naming no attribute.
    ProjectionNoName,
    /// A projection naming an empty attribute.
    ProjectionEmptyName,
    /// A projection naming an attribute twice.
    ProjectionTwice(&'r str),
    /// A projection asking a global index for an attribute it does not project.
    NotProjected(&'r str),
    /// A limit of 0.
    ZeroLimit,
    /// An expression over `DynamoDB`'s limits (the store's error).
    Expression(StoreError),
}

/// Every rule of a query request, in the order `MemoryStore` applies them.
pub(crate) fn check<'r>(request: &'r QueryPage, keys: &Keys<'r>) -> Result<(), Refusal<'r>> {
    let partition = std::iter::once(&request.hash_key).chain(&request.more_hash_keys);
    for (attr, value) in keys.hash.iter().zip(partition) {
        key_value(KeyValue {
            attr,
            value,
            place: Place::Partition,
        })?;
    }
    for (attr, value) in keys.range.iter().zip(&request.range_prefix) {
        key_value(KeyValue {
            attr,
            value,
            place: Place::Prefix,
        })?;
    }
    if let (Some(condition), Some(attr)) =
        (&request.range, keys.range.get(request.range_prefix.len()))
    {
        range_condition(attr, condition)?;
    }
    if let Some(filter) = &request.filter {
        filter_parts(keys, filter)?;
        let names: Vec<&str> = keys
            .hash
            .iter()
            .chain(keys.range)
            .map(|a| a.name.as_str())
            .collect();
        value::check_filter(filter, &names).map_err(Refusal::Filter)?;
        if let Some(projected) = keys.projected {
            let mut missing: Vec<&str> = filter
                .attributes()
                .into_iter()
                .filter(|a| !projected.iter().any(|p| p == a))
                .collect();
            missing.dedup();
            if !missing.is_empty() {
                return Err(Refusal::FilterNotProjected(missing));
            }
        }
    }
    if let Some(names) = &request.projection {
        projection(names)?;
        // an LSI reads the attributes it does not project from the table; a GSI refuses them
        if let (Some(projected), false) = (keys.projected, keys.local)
            && let Some(missing) = names.iter().find(|a| !projected.contains(a))
        {
            return Err(Refusal::NotProjected(missing));
        }
    }
    if request.limit == Some(0) {
        return Err(Refusal::ZeroLimit);
    }
    let hash: Vec<&str> = keys.hash.iter().map(|a| a.name.as_str()).collect();
    let range: Vec<&str> = keys.range.iter().map(|a| a.name.as_str()).collect();
    Request::check_query("Query", request, &hash, &range).map_err(Refusal::Expression)
}

/// A projection (of a query, a `GetItem`, a batch read): it names at least one attribute,
/// none empty, each once.
pub(crate) fn projection(names: &[String]) -> Result<(), Refusal<'_>> {
    if names.is_empty() {
        return Err(Refusal::ProjectionNoName);
    }
    for (i, name) in names.iter().enumerate() {
        if name.is_empty() {
            return Err(Refusal::ProjectionEmptyName);
        }
        if names[..i].contains(name) {
            return Err(Refusal::ProjectionTwice(name));
        }
    }
    Ok(())
}

/// A key value: of its attribute's type, a finite number, not empty, a sort value within
/// 1,024 bytes.
fn key_value(key: KeyValue<'_>) -> Result<(), Refusal<'_>> {
    let fits = matches!(
        (key.attr.key_type, key.value),
        (KeyType::S, AttributeValue::S(_))
            | (KeyType::N, AttributeValue::N(_))
            | (KeyType::B, AttributeValue::B(_))
    );
    if !fits {
        return Err(Refusal::KeyType(key));
    }
    if let AttributeValue::N(n) = key.value
        && Number::parse(n).is_none()
    {
        return Err(Refusal::NotANumber(key));
    }
    if crate::limits::empty_key_value(key.value) {
        return Err(Refusal::EmptyKey(key));
    }
    if !matches!(key.place, Place::Partition) && !crate::limits::sort_value_fits(key.value) {
        return Err(Refusal::SortTooLong(key));
    }
    Ok(())
}

/// A range condition on the sort attribute `attr`.
fn range_condition<'r>(
    attr: &'r KeyAttribute,
    condition: &'r RangeCondition,
) -> Result<(), Refusal<'r>> {
    let at = |value, low| KeyValue {
        attr,
        value,
        place: Place::Condition(condition, low),
    };
    if let Some(empty) = condition
        .values()
        .find(|v| crate::limits::empty_key_value(v))
    {
        return Err(Refusal::EmptyKey(at(empty, None)));
    }
    match condition {
        RangeCondition::Between(low, high) => {
            key_value(at(low, Some(true)))?;
            key_value(at(high, Some(false)))?;
            if let (Some(l), Some(h)) = (
                Scalar::of(low, attr.key_type),
                Scalar::of(high, attr.key_type),
            ) && l > h
            {
                return Err(Refusal::BetweenReversed(attr, low, high));
            }
            Ok(())
        }
        RangeCondition::BeginsWith(_) if attr.key_type == KeyType::N => {
            Err(Refusal::BeginsWithNumber(attr))
        }
        RangeCondition::BeginsWith(v)
        | RangeCondition::Eq(v)
        | RangeCondition::Lt(v)
        | RangeCondition::Le(v)
        | RangeCondition::Gt(v)
        | RangeCondition::Ge(v) => key_value(at(v, None)),
    }
}

/// The conditions of a filter, one by one: no key attribute, numbers that are numbers, `IN`
/// of 1 to 100 values, `BETWEEN` in order.
fn filter_parts<'r>(keys: &Keys<'r>, filter: &'r Filter) -> Result<(), Refusal<'r>> {
    match filter {
        Filter::And(all) | Filter::Or(all) => {
            return all.iter().try_for_each(|f| filter_parts(keys, f));
        }
        Filter::Not(inner) => return filter_parts(keys, inner),
        _ => {}
    }
    for attribute in filter.attributes() {
        if let Some(key) = keys.hash.iter().find(|a| a.name == attribute) {
            return Err(Refusal::FilterOnKey(&key.name, true));
        }
        if let Some(key) = keys.range.iter().find(|a| a.name == attribute) {
            return Err(Refusal::FilterOnKey(&key.name, false));
        }
    }
    let operands: Vec<(&str, &AttributeValue)> = match filter {
        Filter::Compare {
            attribute, value, ..
        }
        | Filter::Contains { attribute, value } => vec![(attribute, value)],
        Filter::BeginsWith { attribute, prefix } => vec![(attribute, prefix)],
        Filter::Between {
            attribute,
            low,
            high,
        } => vec![(attribute, low), (attribute, high)],
        Filter::In { attribute, values } => values.iter().map(|v| (&**attribute, v)).collect(),
        _ => Vec::new(),
    };
    for (attribute, value) in operands {
        if let AttributeValue::N(n) = value
            && Number::parse(n).is_none()
        {
            return Err(Refusal::FilterNotANumber(attribute, n));
        }
    }
    match filter {
        Filter::In { attribute, values } if values.is_empty() || values.len() > 100 => {
            Err(Refusal::InSize(attribute, values.len()))
        }
        Filter::Between {
            attribute,
            low,
            high,
        } => match (Scalar::any(low), Scalar::any(high)) {
            (Some(l), Some(h))
                if std::mem::discriminant(&l) == std::mem::discriminant(&h) && l > h =>
            {
                Err(Refusal::FilterBetweenReversed(attribute, low, high))
            }
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

impl Refusal<'_> {
    /// The refusal as `DynamoDB` words it (a validation error of `Query`), for the index
    /// `index` (`None`: the table).
    pub(crate) fn store_error(self, operation: &'static str, index: Option<&str>) -> StoreError {
        let invalid = |m: String| {
            validation(
                operation,
                format!("One or more parameter values were invalid: {m}"),
            )
        };
        match self {
            Self::KeyType(key) | Self::NotANumber(key) => invalid(format!(
                "Condition parameter type does not match schema type: {} key `{}` is {}, got {}",
                if matches!(key.place, Place::Partition) {
                    "hash"
                } else {
                    "range"
                },
                key.attr.name,
                crate::table::key_type_name(key.attr.key_type),
                value::type_name(key.value)
            )),
            Self::EmptyKey(key) => empty_key(operation, key.attr, key.value, index),
            Self::SortTooLong(_) => invalid(
                "Aggregated size of all range keys has exceeded the size limit of 1024 bytes"
                    .to_owned(),
            ),
            Self::BetweenReversed(..) => validation(
                operation,
                "Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound",
            ),
            Self::BeginsWithNumber(attr) => validation(
                operation,
                format!(
                    "Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N (range key `{}` is a number)",
                    attr.name
                ),
            ),
            Self::FilterOnKey(attribute, _) => validation(
                operation,
                format!(
                    "Filter Expression can only contain non-primary key attributes: Primary key attribute: {attribute}"
                ),
            ),
            Self::FilterNotANumber(_, n) => invalid(format!("the number {n:?} is not a number")),
            Self::InSize(_, count) => validation(
                operation,
                format!("Invalid FilterExpression: IN takes 1 to 100 values, not {count}"),
            ),
            Self::FilterBetweenReversed(..) => validation(
                operation,
                "Invalid FilterExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound",
            ),
            Self::Filter(message) => validation(operation, message),
            Self::FilterNotProjected(missing) => invalid(format!(
                "Secondary index {} does not project one or more filter attributes: [{}]",
                index.unwrap_or_default(),
                missing.join(", ")
            )),
            Self::ProjectionNoName => validation(
                operation,
                "Invalid ProjectionExpression: the projection must name at least one attribute",
            ),
            Self::ProjectionEmptyName => validation(
                operation,
                "Invalid ProjectionExpression: an attribute name is empty",
            ),
            Self::ProjectionTwice(name) => validation(
                operation,
                format!(
                    "Invalid ProjectionExpression: Two document paths overlap with each other: {name}"
                ),
            ),
            Self::NotProjected(missing) => invalid(format!(
                "Global secondary index {} does not project attribute `{missing}`; ask only for projected attributes, or project it",
                index.unwrap_or_default()
            )),
            Self::ZeroLimit => validation(operation, "Limit must be greater than or equal to 1"),
            Self::Expression(error) => error,
        }
    }
}

/// A validation error of `operation`, with `DynamoDB`'s code.
pub(crate) fn validation(operation: &'static str, message: impl Into<String>) -> StoreError {
    StoreError::validation(operation, message).with_code("ValidationException")
}

/// `DynamoDB`'s refusal of an empty key value (in an item or a key condition) of `operation`.
pub(crate) fn empty_key(
    operation: &'static str,
    attr: &KeyAttribute,
    value: &AttributeValue,
    index: Option<&str>,
) -> StoreError {
    let kind = if matches!(value, AttributeValue::B(_)) {
        "binary"
    } else {
        "string"
    };
    validation(
        operation,
        match index {
            None => format!(
                "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty {kind} value. Key: {}",
                attr.name
            ),
            Some(index) => format!(
                "One or more parameter values are not valid. A value specified for a secondary index key is not supported. The AttributeValue for a key attribute cannot contain an empty {kind} value. IndexName: {index}, IndexKey: {}",
                attr.name
            ),
        },
    )
}
