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
//!
//! The rules have one home, `store::verdict`, which `MemoryStore` applies to every request it
//! serves: this module words its refusals for the query's author, with the fix.

use serde_dynamo::AttributeValue;

use crate::key_type::KeyType;
use crate::limits::MAX_SORT_KEY_BYTES;
use crate::store::value;
use crate::store::verdict::{self, KeyValue, Keys, Place, Refusal};
use crate::store::{GlobalIndex, KeyAttribute, QueryPage, RangeCondition, TableDefinition};

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

    /// Why the store would refuse `request` as invalid, with the fix; `Ok` when it would not:
    /// the store's own rules ([`verdict::check`]), worded for the query's author.
    pub(crate) fn check(&self, request: &QueryPage) -> Result<(), String> {
        let hash: Vec<&KeyAttribute> = self.hash.iter().collect();
        let range: Vec<&KeyAttribute> = self.range.iter().collect();
        let keys = Keys {
            hash: &hash,
            range: &range,
            projected: self.projected.as_deref(),
            local: self.local,
        };
        verdict::check(request, &keys).map_err(|refusal| self.reason(refusal))
    }

    /// A refusal, worded for the query's author: the source, the attribute, the value, the fix.
    fn reason(&self, refusal: Refusal<'_>) -> String {
        let source = &self.source;
        match refusal {
            Refusal::KeyType(key)
            | Refusal::NotANumber(key)
            | Refusal::EmptyKey(key)
            | Refusal::SortTooLong(key) => self.key_reason(&refusal_why(&refusal), key),
            Refusal::BetweenReversed(attr, low, high) => format!(
                "the range condition `between` on `{}` of {source} has its low bound {} above its high bound {} ({}): give the lower one first",
                attr.name,
                shown(low),
                shown(high),
                order_of(attr.key_type)
            ),
            Refusal::BeginsWithNumber(attr) => format!(
                "the range condition `begins_with` on `{}` of {source} cannot be: `begins_with` takes a string or binary sort key, and this one is a number; use `between` (or `ge` and `lt`) on the numbers instead",
                attr.name
            ),
            Refusal::FilterOnKey(name, true) => format!(
                "the filter of {source} names `{name}`, a partition key attribute of it; DynamoDB filters only non-key attributes, and the query already fixes it: drop it from the filter"
            ),
            Refusal::FilterOnKey(name, false) => format!(
                "the filter of {source} names `{name}`, a sort key attribute of it; DynamoDB filters only non-key attributes: give that condition as the range condition of the index instead (`range(…)`)"
            ),
            Refusal::FilterNotANumber(attribute, n) => format!(
                "the filter of {source} compares `{attribute}` with {n:?}, which is not a number DynamoDB stores (NaN and infinities are not, nor is text that is not a decimal number): give a finite number"
            ),
            Refusal::InSize(attribute, 0) => format!(
                "the filter of {source} has `is_in` on `{attribute}` with no value; DynamoDB takes 1 to 100 values: give at least one (an empty `is_in` matches nothing)"
            ),
            Refusal::InSize(attribute, count) => format!(
                "the filter of {source} has `is_in` on `{attribute}` with {count} values; DynamoDB takes 1 to 100: split them into `is_in`s of at most 100 joined with `or`"
            ),
            Refusal::FilterBetweenReversed(attribute, low, high) => format!(
                "the filter of {source} has `between` on `{attribute}` with its low bound {} above its high bound {} (DynamoDB orders numbers by value, strings and binaries by their bytes): give the lower one first",
                shown(low),
                shown(high)
            ),
            Refusal::Filter(why) => {
                format!("the filter of {source} is refused: {why}; fix that condition")
            }
            Refusal::FilterNotProjected(missing) => format!(
                "the filter of {source} names {missing:?}, which the index does not project (it holds {:?}): filter on those, or project the attributes",
                self.projected.as_deref().unwrap_or_default()
            ),
            Refusal::ProjectionNoName => {
                "the projection names no attribute: name at least one".to_owned()
            }
            Refusal::ProjectionEmptyName => {
                "the projection names an empty attribute: drop it".to_owned()
            }
            Refusal::ProjectionTwice(name) => {
                format!("the projection names `{name}` twice: name it once")
            }
            Refusal::NotProjected(missing) => format!(
                "the query reads `{missing}` of {source} (asked by the projection, or needed to sort or to check the items), which the index does not project (it holds {:?}): read only those, or project it",
                self.projected.as_deref().unwrap_or_default()
            ),
            Refusal::ZeroLimit => {
                "the query asks for 0 items: give a limit of at least 1".to_owned()
            }
            Refusal::Expression(e) => format!(
                "the request to {source} would be refused by DynamoDB: {}; make the filter (or the projection) shorter, or split the query",
                e.message()
            ),
        }
    }

    /// A refusal of one key value: "the … value of `x` for index `i` …" and `why`.
    fn key_reason(&self, why: &str, key: KeyValue<'_>) -> String {
        let source = &self.source;
        let name = &key.attr.name;
        match key.place {
            Place::Partition => format!("the partition value of `{name}` for {source} {why}"),
            Place::Prefix => {
                format!("the sort value of `{name}` for {source} (an equality of the prefix) {why}")
            }
            Place::Condition(condition, bound) => {
                let bound = match bound {
                    Some(true) => "(low bound) ",
                    Some(false) => "(high bound) ",
                    None => "",
                };
                format!(
                    "the range condition {} on `{name}` of {source} {bound}{why}",
                    operator(condition)
                )
            }
        }
    }
}

/// Why a key value is refused, with the fix: completes "the … value of `x` …".
fn refusal_why(refusal: &Refusal<'_>) -> String {
    match refusal {
        Refusal::KeyType(key) => format!(
            "is {} (type {}), and the attribute is {}: give {}",
            shown(key.value),
            value::type_name(key.value),
            type_words(key.attr.key_type),
            article_type(key.attr.key_type)
        ),
        Refusal::NotANumber(key) => format!(
            "is {:?}, which is not a number DynamoDB stores (NaN and infinities are not, nor is text that is not a decimal number): give a finite number",
            match key.value {
                AttributeValue::N(n) => n.as_str(),
                _ => "",
            }
        ),
        Refusal::EmptyKey(KeyValue {
            place: Place::Condition(condition, _),
            ..
        }) => empty_condition(condition),
        Refusal::EmptyKey(key) => format!(
            "is empty ({}), and {EMPTY_KEY}: give the value of the records to read",
            shown(key.value)
        ),
        Refusal::SortTooLong(key) => format!(
            "is {} bytes long, and DynamoDB takes sort key values of at most {MAX_SORT_KEY_BYTES} bytes (no stored value can be longer): give a shorter one",
            crate::limits::key_value_bytes(key.value).unwrap_or_default()
        ),
        _ => String::new(),
    }
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
