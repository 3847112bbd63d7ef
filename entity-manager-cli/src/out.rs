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

/// JSON text read as a value, refused when a number in it cannot be read exactly: plain JSON
/// numbers are read as 64-bit integers or floats, and DynamoDB keeps 38 digits, so a longer
/// number (or a decimal a float cannot hold) would otherwise be stored rounded, silently.
pub(crate) fn parse_json(text: &str) -> Result<Value, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let read = serde_json::to_string(&value).map_err(|e| format!("not JSON: {e}"))?;
    for (given, kept) in numbers(text).zip(numbers(&read)) {
        if decimal(given) != decimal(kept) {
            return Err(format!(
                "the number {given} cannot be read exactly from plain JSON (it would be stored as {kept}); give the item in DynamoDB JSON (--format dynamodb), the number as {{\"N\": \"{given}\"}}"
            ));
        }
    }
    Ok(value)
}

/// The number literals of JSON text, in order (outside its strings).
fn numbers(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut at = 0;
    let mut in_string = false;
    std::iter::from_fn(move || {
        while at < bytes.len() {
            let b = bytes[at];
            if in_string {
                match b {
                    b'\\' => at += 2,
                    b'"' => {
                        in_string = false;
                        at += 1;
                    }
                    _ => at += 1,
                }
            } else if b == b'"' {
                in_string = true;
                at += 1;
            } else if b == b'-' || b.is_ascii_digit() {
                let start = at;
                while at < bytes.len()
                    && matches!(bytes[at], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                {
                    at += 1;
                }
                return text.get(start..at);
            } else {
                at += 1;
            }
        }
        None
    })
}

/// A JSON number's decimal value, normalised: its sign, its significant digits and the power
/// of ten of the last one (`1e3`, `1000` and `1000.0` are one value).
fn decimal(literal: &str) -> (bool, String, i64) {
    let (negative, rest) = literal
        .strip_prefix('-')
        .map_or((false, literal), |r| (true, r));
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().unwrap_or(0)),
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: String = int.chars().chain(frac.chars()).collect();
    let mut power = exponent - i64::try_from(frac.len()).unwrap_or(0);
    let trimmed = digits.trim_start_matches('0');
    let significant = trimmed.trim_end_matches('0');
    power += i64::try_from(trimmed.len() - significant.len()).unwrap_or(0);
    if significant.is_empty() {
        return (false, String::new(), 0);
    }
    (negative, significant.to_owned(), power)
}

/// An item from a JSON object of `format`.
pub(crate) fn parse_item(value: Value, format: Format) -> Result<Item, String> {
    let kind = match &value {
        Value::Object(_) => None,
        Value::Array(_) => Some("an array"),
        Value::String(_) => Some("a string"),
        Value::Number(_) => Some("a number"),
        Value::Bool(_) => Some("a boolean"),
        Value::Null => Some("null"),
    };
    if let Some(kind) = kind {
        return Err(format!(
            "an item is one JSON object of attributes, not {kind} (in a file, one object a line)"
        ));
    }
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

    #[test]
    fn an_item_is_an_object() {
        for (text, kind) in [
            ("[1,2]", "an array"),
            ("\"x\"", "a string"),
            ("null", "null"),
        ] {
            for format in [Format::Json, Format::Dynamodb] {
                let refused = parse_json(text)
                    .and_then(|v| parse_item(v, format))
                    .err()
                    .unwrap_or_default();
                assert!(
                    refused.contains(kind) && refused.contains("one JSON object"),
                    "{refused}"
                );
            }
        }
        assert!(parse_item(serde_json::json!({ "a": 1 }), Format::Json).is_ok());
    }

    #[test]
    fn numbers_plain_json_cannot_hold_are_refused_not_rounded() {
        for exact in [
            r#"{"a":1,"b":-12.5,"c":1e3,"d":0.1,"e":18446744073709551615,"f":-9223372036854775808}"#,
            r#"{"s":"123456789012345678901234567890","n":[0,-0.0,2.50,"1e999"],"m":{"x":1.0E-7}}"#,
            r#"{"escaped":"a\"1234567890123456789012345\\","n":7}"#,
        ] {
            assert!(
                parse_json(exact).is_ok(),
                "{exact}: {:?}",
                parse_json(exact)
            );
        }
        for (lossy, number) in [
            (
                r#"{"big":123456789012345678901234567890}"#,
                "123456789012345678901234567890",
            ),
            (r#"{"u":18446744073709551617}"#, "18446744073709551617"),
            (
                r#"{"d":0.1000000000000000055511151231257827}"#,
                "0.1000000000000000055511151231257827",
            ),
            (
                r#"{"l":[1,{"x":12345678901234567890123}]}"#,
                "12345678901234567890123",
            ),
        ] {
            let refused = parse_json(lossy).err().unwrap_or_default();
            assert!(
                refused.contains(number) && refused.contains("--format dynamodb"),
                "{refused}"
            );
        }
    }

    /// A float that lies exactly halfway between two 17-digit decimals: Rust writes it with
    /// the upper one, `serde_json` (ryu) with the lower, the one it stores. The upper one is not
    /// the value that would be stored, so it is refused (naming both), not silently rounded.
    #[test]
    fn a_decimal_halfway_to_a_float_is_refused() {
        // the float is exactly …469.125 (48 integer bits and 3 fraction bits fit in 53)
        let f = 260_596_751_451_469.13_f64;
        assert_eq!(f.fract().to_bits(), 0.125_f64.to_bits());
        assert_eq!(
            format!("{:?}", 260_596_751_451_469.13_f64),
            "260596751451469.13"
        );
        let refused = parse_json(r#"{"f":260596751451469.13}"#);
        let why = refused.err().unwrap_or_default();
        assert!(
            why.contains("260596751451469.13") && why.contains("260596751451469.12"),
            "{why}"
        );
        assert!(parse_json(r#"{"f":260596751451469.12}"#).is_ok());
    }

    proptest! {
        /// Any integer of 64 bits and any float is read exactly, written as a JSON writer
        /// (`serde_json`) writes it. Written as Rust writes it, it is read too, but at a float
        /// that lies halfway between two shortest decimals, where Rust writes the other one
        /// (`a_decimal_halfway_to_a_float_is_refused`).
        #[test]
        fn machine_numbers_are_read_exactly(i in any::<i64>(), u in any::<u64>(), f in any::<f64>().prop_filter("finite", |f| f.is_finite())) {
            let written = serde_json::to_string(&f).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let text = format!(r#"{{"i":{i},"u":{u},"f":{written}}}"#);
            prop_assert!(parse_json(&text).is_ok(), "{}", text);
            for rust in [format!("{f:?}"), format!("{f:e}")] {
                let text = format!(r#"{{"f":{rust}}}"#);
                // Rust's digits read back to the same float; refused only where they are not
                // serde_json's (a tie), and then the message names both
                if let Err(why) = parse_json(&text) {
                    prop_assert!(rust.parse::<f64>() == Ok(f), "{}", rust);
                    prop_assert!(why.contains(&rust) && why.contains(&written), "{}: {}", text, why);
                }
            }
        }
    }

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
