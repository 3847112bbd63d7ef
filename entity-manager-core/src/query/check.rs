//! The store's rules on a query's request, checked before the first read: a query that the
//! builders accept is never refused by a store as invalid. Each mistake is an
//! [`Error::InvalidQuery`](crate::Error::InvalidQuery) whose reason names the source, the
//! attribute, the value and the fix.
//!
//! What is checked, on the request the first lane of each source sends (every lane of a source
//! sends the same conditions, filter and projection; the engine's later reads narrow them):
//! - each partition value, equality value of the sort prefix and condition value is of its key
//!   attribute's type, a number a finite `DynamoDB` number (not `NaN`, not an infinity), a
//!   string or binary not empty (`begins_with("")` and the bounds of `between` included), and a
//!   string or binary sort value at most 1,024 bytes;
//! - `between` bounds are in order (`DynamoDB`'s: numbers by value, strings and binaries by
//!   their bytes), and `begins_with` is not asked of a number;
//! - a filter names no key attribute of the index it reads (`DynamoDB` filters only the other
//!   attributes), gives `is_in` 1 to 100 values, `between` bounds in order, and names only
//!   attributes the index projects;
//! - a projection names each attribute once, none empty;
//! - the expressions fit `DynamoDB`'s limits (length, operators, substitutions).

use serde_dynamo::AttributeValue;

use crate::key_type::KeyType;
use crate::limits::MAX_SORT_KEY_BYTES;
use crate::store::expression::Request;
use crate::store::value::{self, Number, Scalar};
use crate::store::{Filter, GlobalIndex, KeyAttribute, QueryPage, RangeCondition, TableDefinition};

/// What a query reads, as the store's table definition declares it: its key attributes and
/// what it projects.
#[derive(Debug)]
pub(crate) struct Target {
    /// How messages name it: "index `byName`", "the table".
    source: String,
    hash: Vec<KeyAttribute>,
    range: Vec<KeyAttribute>,
    /// The attributes its items carry (`None`: every attribute).
    projected: Option<Vec<String>>,
    /// Whether it is a local index (which reads what it does not project from the table).
    local: bool,
}

impl Target {
    /// The index `name` (global or local) of `definition`, or the table (`None`); `None` when
    /// the definition has no such index (the store then says so itself).
    pub(crate) fn of(definition: &TableDefinition, name: Option<&str>) -> Option<Self> {
        let source = super::plan::source_name(name);
        let Some(name) = name else {
            return Some(Self {
                source,
                hash: vec![definition.hash_key.clone()],
                range: vec![definition.range_key.clone()],
                projected: None,
                local: false,
            });
        };
        if let Some(index) = definition.index(name) {
            return Some(Self {
                source,
                hash: index.hash_keys().into_iter().cloned().collect(),
                range: index.range_keys().into_iter().cloned().collect(),
                projected: definition.projected_attributes(index),
                local: false,
            });
        }
        let local = definition.local_index(name)?;
        let as_global = GlobalIndex::new(
            local.name.clone(),
            local.hash_key.clone(),
            local.range_key.clone(),
        )
        .projection(local.projection.clone());
        Some(Self {
            source,
            hash: vec![local.hash_key.clone()],
            range: vec![local.range_key.clone()],
            projected: definition.projected_attributes(&as_global),
            local: true,
        })
    }

    /// Why the store would refuse `request` as invalid, with the fix; `Ok` when it would not.
    pub(crate) fn check(&self, request: &QueryPage) -> Result<(), String> {
        let source = &self.source;
        let partition = std::iter::once(&request.hash_key).chain(&request.more_hash_keys);
        for (attr, value) in self.hash.iter().zip(partition) {
            key_value(attr, value, false).map_err(|why| {
                format!("the partition value of `{}` for {source} {why}", attr.name)
            })?;
        }
        for (attr, value) in self.range.iter().zip(&request.range_prefix) {
            key_value(attr, value, true).map_err(|why| {
                format!(
                    "the sort value of `{}` for {source} (an equality of the prefix) {why}",
                    attr.name
                )
            })?;
        }
        if let (Some(condition), Some(attr)) =
            (&request.range, self.range.get(request.range_prefix.len()))
        {
            self.condition(attr, condition)?;
        }
        if let Some(filter) = &request.filter {
            self.filter(filter)?;
        }
        if let Some(projection) = &request.projection {
            check_projection(projection).map_err(|why| format!("the projection {why}"))?;
            if let (Some(projected), false) = (&self.projected, self.local)
                && let Some(missing) = projection.iter().find(|a| !projected.contains(a))
            {
                return Err(format!(
                    "the query reads `{missing}` of {source} (asked by the projection, or needed to sort or to check the items), which the index does not project (it holds {projected:?}): read only those, or project it"
                ));
            }
        }
        let hash: Vec<&str> = self.hash.iter().map(|a| a.name.as_str()).collect();
        let range: Vec<&str> = self.range.iter().map(|a| a.name.as_str()).collect();
        Request::check_query("Query", request, &hash, &range).map_err(|e| {
            format!(
                "the request to {source} would be refused by DynamoDB: {}; make the filter (or the projection) shorter, or split the query",
                e.message()
            )
        })
    }

    /// A range condition on the sort attribute `attr`.
    fn condition(&self, attr: &KeyAttribute, condition: &RangeCondition) -> Result<(), String> {
        let source = &self.source;
        let named = |why: String| {
            format!(
                "the range condition {} on `{}` of {source} {why}",
                operator(condition),
                attr.name
            )
        };
        if condition.values().any(crate::limits::empty_key_value) {
            return Err(named(empty_condition(condition)));
        }
        match condition {
            RangeCondition::Between(low, high) => {
                key_value(attr, low, true).map_err(|why| named(format!("(low bound) {why}")))?;
                key_value(attr, high, true).map_err(|why| named(format!("(high bound) {why}")))?;
                if let (Some(l), Some(h)) = (
                    Scalar::of(low, attr.key_type),
                    Scalar::of(high, attr.key_type),
                ) && l > h
                {
                    return Err(named(format!(
                        "has its low bound {} above its high bound {} ({}): give the lower one first",
                        shown(low),
                        shown(high),
                        order_of(attr.key_type)
                    )));
                }
            }
            RangeCondition::BeginsWith(prefix) => {
                if attr.key_type == KeyType::N {
                    return Err(named(
                        "cannot be: `begins_with` takes a string or binary sort key, and this one is a number; use `between` (or `ge` and `lt`) on the numbers instead"
                            .to_owned(),
                    ));
                }
                key_value(attr, prefix, true).map_err(named)?;
            }
            RangeCondition::Eq(v)
            | RangeCondition::Lt(v)
            | RangeCondition::Le(v)
            | RangeCondition::Gt(v)
            | RangeCondition::Ge(v) => key_value(attr, v, true).map_err(named)?,
        }
        Ok(())
    }

    /// A filter on the items of this source.
    fn filter(&self, filter: &Filter) -> Result<(), String> {
        let source = &self.source;
        self.filter_parts(filter)?;
        // anything else the store checks of a filter's operands (sets, `and`/`or` of nothing…)
        value::check_filter(filter, &[]).map_err(|why| {
            format!("the filter of {source} is refused: {why}; fix that condition")
        })?;
        if let Some(projected) = &self.projected {
            let mut missing: Vec<&str> = filter
                .attributes()
                .into_iter()
                .filter(|a| !projected.iter().any(|p| p == a))
                .collect();
            missing.dedup();
            if !missing.is_empty() {
                return Err(format!(
                    "the filter of {source} names {missing:?}, which the index does not project (it holds {projected:?}): filter on those, or project the attributes"
                ));
            }
        }
        Ok(())
    }

    /// The conditions of a filter, one by one: no key attribute, `is_in` of 1 to 100 values,
    /// `between` in order.
    fn filter_parts(&self, filter: &Filter) -> Result<(), String> {
        let source = &self.source;
        match filter {
            Filter::And(all) | Filter::Or(all) => {
                return all.iter().try_for_each(|f| self.filter_parts(f));
            }
            Filter::Not(inner) => return self.filter_parts(inner),
            _ => {}
        }
        for attribute in filter.attributes() {
            if let Some(key) = self.hash.iter().find(|a| a.name == attribute) {
                return Err(format!(
                    "the filter of {source} names `{}`, a partition key attribute of it; DynamoDB filters only non-key attributes, and the query already fixes it: drop it from the filter",
                    key.name
                ));
            }
            if let Some(key) = self.range.iter().find(|a| a.name == attribute) {
                return Err(format!(
                    "the filter of {source} names `{}`, a sort key attribute of it; DynamoDB filters only non-key attributes: give that condition as the range condition of the index instead (`range(…)`)",
                    key.name
                ));
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
                return Err(format!(
                    "the filter of {source} compares `{attribute}` with {n:?}, which is not a number DynamoDB stores (NaN and infinities are not, nor is text that is not a decimal number): give a finite number"
                ));
            }
        }
        match filter {
            Filter::In { attribute, values } if values.is_empty() => Err(format!(
                "the filter of {source} has `is_in` on `{attribute}` with no value; DynamoDB takes 1 to 100 values: give at least one (an empty `is_in` matches nothing)"
            )),
            Filter::In { attribute, values } if values.len() > 100 => Err(format!(
                "the filter of {source} has `is_in` on `{attribute}` with {} values; DynamoDB takes 1 to 100: split them into `is_in`s of at most 100 joined with `or`",
                values.len()
            )),
            Filter::Between {
                attribute,
                low,
                high,
            } => match (Scalar::any(low), Scalar::any(high)) {
                (Some(l), Some(h))
                    if std::mem::discriminant(&l) == std::mem::discriminant(&h) && l > h =>
                {
                    Err(format!(
                        "the filter of {source} has `between` on `{attribute}` with its low bound {} above its high bound {} (DynamoDB orders numbers by value, strings and binaries by their bytes): give the lower one first",
                        shown(low),
                        shown(high)
                    ))
                }
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }
}

/// A value of key attribute `attr`: of its type, a finite number, a sort value within 1,024
/// bytes. The reason completes "the … value of `x` …".
fn key_value(attr: &KeyAttribute, value: &AttributeValue, sort: bool) -> Result<(), String> {
    let fits = matches!(
        (attr.key_type, value),
        (KeyType::S, AttributeValue::S(_))
            | (KeyType::N, AttributeValue::N(_))
            | (KeyType::B, AttributeValue::B(_))
    );
    if !fits {
        return Err(format!(
            "is {} (type {}), and the attribute is {}: give {}",
            shown(value),
            value::type_name(value),
            type_words(attr.key_type),
            article_type(attr.key_type)
        ));
    }
    if let AttributeValue::N(n) = value
        && Number::parse(n).is_none()
    {
        return Err(format!(
            "is {n:?}, which is not a number DynamoDB stores (NaN and infinities are not, nor is text that is not a decimal number): give a finite number"
        ));
    }
    if crate::limits::empty_key_value(value) {
        return Err(format!(
            "is empty ({}), and {EMPTY_KEY}: give the value of the records to read",
            shown(value)
        ));
    }
    if sort && !crate::limits::sort_value_fits(value) {
        let bytes = crate::limits::key_value_bytes(value).unwrap_or_default();
        return Err(format!(
            "is {bytes} bytes long, and DynamoDB takes sort key values of at most {MAX_SORT_KEY_BYTES} bytes (no stored value can be longer): give a shorter one"
        ));
    }
    Ok(())
}

/// Why `DynamoDB` refuses an empty key value in a query.
const EMPTY_KEY: &str = "DynamoDB refuses an empty string or binary as a key value in a query, as in an item (no stored key value is empty)";

/// Why a range condition with an empty value is refused, and what to write instead (what the
/// condition would have matched, given that no stored sort value is empty).
fn empty_condition(condition: &RangeCondition) -> String {
    let fix = match condition {
        RangeCondition::BeginsWith(_) => {
            "every value begins with the empty prefix: drop the range condition (or give a non-empty prefix)"
                .to_owned()
        }
        RangeCondition::Gt(_) | RangeCondition::Ge(_) => {
            "every stored value is above it: drop the range condition".to_owned()
        }
        RangeCondition::Eq(_) | RangeCondition::Lt(_) | RangeCondition::Le(_) => {
            "no stored value is at or below it, so it matches nothing: give a non-empty value (or skip the query)"
                .to_owned()
        }
        RangeCondition::Between(_, high) if !crate::limits::empty_key_value(high) => {
            format!(
                "no stored value is below the empty low bound: use `le({})` instead",
                shown(high)
            )
        }
        RangeCondition::Between(..) => {
            "no stored value is at or below the empty high bound, so it matches nothing: give non-empty bounds (or skip the query)"
                .to_owned()
        }
    };
    format!("has an empty value, and {EMPTY_KEY}; {fix}")
}

/// A projection: each attribute once, none empty.
fn check_projection(names: &[String]) -> Result<(), String> {
    for (i, name) in names.iter().enumerate() {
        if name.is_empty() {
            return Err("names an empty attribute: drop it".to_owned());
        }
        if names[..i].contains(name) {
            return Err(format!("names `{name}` twice: name it once"));
        }
    }
    Ok(())
}

/// The operator of a range condition, as the builders name it.
fn operator(condition: &RangeCondition) -> &'static str {
    match condition {
        RangeCondition::Eq(_) => "`eq`",
        RangeCondition::Lt(_) => "`lt`",
        RangeCondition::Le(_) => "`le`",
        RangeCondition::Gt(_) => "`gt`",
        RangeCondition::Ge(_) => "`ge`",
        RangeCondition::Between(..) => "`between`",
        RangeCondition::BeginsWith(_) => "`begins_with`",
    }
}

/// How `DynamoDB` orders values of a key type.
fn order_of(key_type: KeyType) -> &'static str {
    match key_type {
        KeyType::N => "DynamoDB orders numbers by value",
        KeyType::S => "DynamoDB orders strings by their UTF-8 bytes",
        KeyType::B => "DynamoDB orders binaries by their bytes",
    }
}

fn type_words(key_type: KeyType) -> &'static str {
    match key_type {
        KeyType::S => "a string (S)",
        KeyType::N => "a number (N)",
        KeyType::B => "a binary (B)",
    }
}

fn article_type(key_type: KeyType) -> &'static str {
    match key_type {
        KeyType::S => "a string",
        KeyType::N => "a number",
        KeyType::B => "a binary",
    }
}

/// A value as a message shows it: a string quoted (its first 40 characters), a number as
/// written, a binary by its length.
fn shown(value: &AttributeValue) -> String {
    match value {
        AttributeValue::S(s) if s.chars().count() > 40 => {
            format!("{:?}…", s.chars().take(40).collect::<String>())
        }
        AttributeValue::S(s) => format!("{s:?}"),
        AttributeValue::N(n) => n.clone(),
        AttributeValue::B(b) => format!("<{} bytes>", b.len()),
        other => format!("({})", value::type_name(other)),
    }
}
