//! What goes to stdout: lines that end the command quietly when the reader went away
//! (`| head -1`), and items as JSON in a stable attribute order, plain or as DynamoDB JSON.

use std::fmt;
use std::io::{self, Write};

use clap::ValueEnum;
use entity_manager::{AttributeValue, Item, Schema};
use serde_json::{Map, Value};

use crate::Failure;

/// Writes one line to stdout; a closed stdout ends the command quietly.
pub(crate) fn line(args: fmt::Arguments<'_>) -> Result<(), Failure> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    out.write_fmt(args)
        .and_then(|()| out.write_all(b"\n"))
        .map_err(|e| write_failure(&e))
}

/// The failure of a write to stdout: [`Failure::ClosedPipe`] when the reader went away.
pub(crate) fn write_failure(e: &io::Error) -> Failure {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Failure::ClosedPipe
    } else {
        Failure::Operation(format!("cannot write stdout: {e}"))
    }
}

/// Writes `value` as one JSON line to `out`.
pub(crate) fn json_line(out: &mut impl Write, value: &Value) -> Result<(), Failure> {
    serde_json::to_writer(&mut *out, value)
        .map_err(io::Error::from)
        .and_then(|()| out.write_all(b"\n"))
        .map_err(|e| write_failure(&e))
}

/// How items are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// Plain JSON: `{"userId": "u1", "created": 1726880933000}`.
    #[default]
    Json,
    /// DynamoDB JSON, the shape `aws dynamodb` takes and prints:
    /// `{"userId": {"S": "u1"}, "created": {"N": "1726880933000"}}`.
    Dynamodb,
}

/// The order of an item's attributes in output: `first` (in this order, those present), then
/// every other attribute by name, then `last` (the keys, in this order).
#[derive(Debug, Default)]
pub(crate) struct Order {
    first: Vec<String>,
    last: Vec<String>,
}

impl Order {
    /// The input's attribute order, keys appended.
    pub(crate) fn input(value: &Value, keys: Vec<String>) -> Self {
        let first = value
            .as_object()
            .map(|o| o.keys().filter(|k| !keys.contains(k)).cloned().collect())
            .unwrap_or_default();
        Self { first, last: keys }
    }

    /// Attributes by name, keys appended.
    pub(crate) fn keys_last(keys: Vec<String>) -> Self {
        Self {
            first: Vec::new(),
            last: keys,
        }
    }
}

/// The key attributes of `entity` (or of every entity), in the configuration's order: the
/// table's hash and range key, then its generated properties.
pub(crate) fn key_names(schema: &Schema, entity: Option<&str>) -> Vec<String> {
    let table = schema.table();
    let mut names = vec![table.hash_key.to_string(), table.range_key.to_string()];
    for model in schema.entities() {
        if entity.is_none_or(|e| e == &*model.token) {
            for generated in model.generated.iter() {
                if !names.iter().any(|n| *n == *generated.name) {
                    names.push(generated.name.to_string());
                }
            }
        }
    }
    names
}

/// `item` as JSON in `format`, its attributes in `order` (nested maps by name).
pub(crate) fn item(item: &Item, order: &Order, format: Format) -> Value {
    let mut out = Map::new();
    let mut push = |name: &str| {
        if let Some(value) = item.get(name)
            && !out.contains_key(name)
        {
            out.insert(name.to_owned(), attribute(value, format));
        }
    };
    for name in &order.first {
        push(name);
    }
    let mut middle: Vec<&String> = item
        .keys()
        .filter(|k| !order.first.contains(k) && !order.last.contains(k))
        .collect();
    middle.sort();
    for name in middle {
        push(name);
    }
    for name in &order.last {
        push(name);
    }
    Value::Object(out)
}

/// One attribute value as JSON.
fn attribute(value: &AttributeValue, format: Format) -> Value {
    let typed = |tag: &str, inner: Value| -> Value {
        let mut m = Map::new();
        m.insert(tag.to_owned(), inner);
        Value::Object(m)
    };
    let sorted = |map: &std::collections::HashMap<String, AttributeValue>| -> Value {
        let mut names: Vec<&String> = map.keys().collect();
        names.sort();
        Value::Object(
            names
                .into_iter()
                .map(|k| (k.clone(), attribute(&map[k], format)))
                .collect(),
        )
    };
    match (value, format) {
        (AttributeValue::M(map), Format::Json) => sorted(map),
        (AttributeValue::M(map), Format::Dynamodb) => typed("M", sorted(map)),
        (AttributeValue::L(list), Format::Json) => {
            Value::Array(list.iter().map(|v| attribute(v, format)).collect())
        }
        (AttributeValue::L(list), Format::Dynamodb) => typed(
            "L",
            Value::Array(list.iter().map(|v| attribute(v, format)).collect()),
        ),
        (AttributeValue::S(s), Format::Json) => Value::String(s.clone()),
        (AttributeValue::N(n), Format::Json) => number(n),
        (AttributeValue::Bool(b), Format::Json) => Value::Bool(*b),
        (AttributeValue::Null(_), Format::Json) => Value::Null,
        (AttributeValue::Ns(ns), Format::Json) => {
            Value::Array(ns.iter().map(|n| number(n)).collect())
        }
        (AttributeValue::Ss(ss), Format::Json) => {
            Value::Array(ss.iter().cloned().map(Value::String).collect())
        }
        // binary (and binary sets, and every scalar in DynamoDB JSON): serde_dynamo's
        // DynamoDB JSON, binary as base64
        (other, Format::Json) => {
            let tagged = serde_json::to_value(other).unwrap_or(Value::Null);
            tagged
                .as_object()
                .and_then(|o| o.values().next().cloned())
                .unwrap_or(Value::Null)
        }
        (other, Format::Dynamodb) => serde_json::to_value(other).unwrap_or(Value::Null),
    }
}

/// A DynamoDB number as a JSON number when JSON can hold it exactly, else as its text.
fn number(n: &str) -> Value {
    match serde_json::from_str::<serde_json::Number>(n) {
        Ok(number) if number.to_string() == n => Value::Number(number),
        _ => Value::String(n.to_owned()),
    }
}

/// An item from a JSON object of `format`.
pub(crate) fn parse_item(value: Value, format: Format) -> Result<Item, String> {
    match format {
        Format::Json => serde_dynamo::to_item(value).map_err(|e| e.to_string()),
        Format::Dynamodb => serde_json::from_value(value).map_err(|e| e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashMap};

    use proptest::prelude::*;

    use super::*;

    /// Any attribute value (nested up to two levels).
    fn value() -> impl Strategy<Value = AttributeValue> {
        let leaf = prop_oneof![
            "[a-z#|!]{0,8}".prop_map(AttributeValue::S),
            any::<i64>().prop_map(|n| AttributeValue::N(n.to_string())),
            any::<bool>().prop_map(AttributeValue::Bool),
            Just(AttributeValue::Null(true)),
            proptest::collection::vec(any::<u8>(), 0..6).prop_map(AttributeValue::B),
        ];
        leaf.prop_recursive(2, 12, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(AttributeValue::L),
                proptest::collection::hash_map("[a-z]{1,4}", inner, 0..4)
                    .prop_map(AttributeValue::M),
            ]
        })
    }

    fn item() -> impl Strategy<Value = Item> {
        proptest::collection::hash_map("[a-zA-Z]{1,6}", value(), 0..8).prop_map(Item::from)
    }

    /// `value` rebuilt with new maps, filled in reverse (another iteration order).
    fn rebuilt(value: &AttributeValue) -> AttributeValue {
        match value {
            AttributeValue::M(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                entries.reverse();
                let mut fresh = HashMap::new();
                for (k, v) in entries {
                    fresh.insert(k.clone(), rebuilt(v));
                }
                AttributeValue::M(fresh)
            }
            AttributeValue::L(list) => AttributeValue::L(list.iter().map(rebuilt).collect()),
            other => other.clone(),
        }
    }

    proptest! {
        /// DynamoDB JSON keeps every attribute and reads back as the same item; the same item
        /// gives the same text whatever its maps' iteration order.
        #[test]
        fn dynamodb_json_round_trips(
            item in item(),
            keys in proptest::collection::vec("[a-zA-Z]{1,6}", 0..4),
        ) {
            let order = Order::keys_last(keys);
            let shown = super::item(&item, &order, Format::Dynamodb);
            prop_assert_eq!(parse_item(shown.clone(), Format::Dynamodb), Ok(item.clone()));
            let copy: Item = item
                .iter()
                .map(|(k, v)| (k.clone(), rebuilt(v)))
                .collect::<HashMap<_, _>>()
                .into();
            prop_assert_eq!(
                shown.to_string(),
                super::item(&copy, &order, Format::Dynamodb).to_string()
            );
        }

        /// Plain JSON: the input's names first, then the rest by name, then the keys; nothing
        /// lost, nothing twice.
        #[test]
        fn plain_json_order(
            item in item(),
            first in proptest::collection::vec("[a-zA-Z]{1,6}", 0..3),
            keys in proptest::collection::vec("[A-Z]{1,3}", 0..3),
        ) {
            let order = Order { first: first.clone(), last: keys.clone() };
            let shown = super::item(&item, &order, Format::Json);
            let names: Vec<&String> =
                shown.as_object().map(|o| o.keys().collect()).unwrap_or_default();
            prop_assert_eq!(names.len(), item.len());
            let rest: BTreeSet<&String> = item
                .keys()
                .filter(|k| !first.contains(k) && !keys.contains(k))
                .collect();
            let mut expected: Vec<&String> = Vec::new();
            for name in first.iter().chain(rest).chain(keys.iter()) {
                if item.contains_key(name) && !expected.contains(&name) {
                    expected.push(name);
                }
            }
            prop_assert_eq!(names, expected);
        }
    }

    #[test]
    fn numbers_stay_exact() {
        assert_eq!(number("42"), Value::from(42));
        assert_eq!(number("-1.5"), serde_json::json!(-1.5));
        // more digits than a JSON number holds exactly here: kept as text
        assert_eq!(
            number("123456789012345678901234567890"),
            Value::from("123456789012345678901234567890")
        );
    }
}
