//! The compatibility runner: replays the golden vectors recorded from the TypeScript Entity
//! Manager through our public API and compares.
//!
//! It loads every `*.json` in the directory named by `EM_COMPAT_DIR` (default: `../shared/compat`
//! beside the workspace root), builds a [`Schema`] from each file's `config` and `shardSpace`,
//! and runs every case. Expected errors must come back as errors of the matching kind
//! ([`expected_error_matches`] maps the reference's messages to our error kinds).
//!
//! The only differences allowed are PRODUCT.md §9 items 4, 5 and 6, applied as general
//! adjustments of the expected value (see [`adjust_hash_key_space`] and
//! [`adjust_primary_keys`]), never as per-case skips. JavaScript `undefined` (written `null` in
//! the vectors) inside an expected object counts as an absent key.
//!
//! Prints one line per file, then `N passed, M failed`; fails when anything fails or no case ran.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use entity_manager::__test_support::{PageKeyMap, TsPageKeys as _};
use entity_manager::model::ShardSpace;
use entity_manager::transcode::{self, Direction, TranscodeError};
use entity_manager::{AttributeValue, EntitySchema, Error, Item, PrimaryKey, Schema};
use serde_json::{Map, Value};

type Outcome = Result<(), String>;

fn main() -> ExitCode {
    let dir = std::env::var_os("EM_COMPAT_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/compat"),
        PathBuf::from,
    );
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect(),
        Err(e) => {
            println!("cannot read compat directory {}: {e}", dir.display());
            println!("0 passed, 0 failed");
            return ExitCode::FAILURE;
        }
    };
    files.sort();

    let (mut passed, mut failed) = (0usize, 0usize);
    for path in &files {
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let (p, f, report) = run_file(path);
        passed += p;
        failed += f;
        println!("{name}: {p} passed, {f} failed");
        if !report.is_empty() {
            print!("{report}");
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 || passed == 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// A vector file's config with our keys (the native profile: the vectors' expectations hold
/// our deviations, such as transcoded numbers in keys) in the file's shard space.
fn load(config: &Value, space: ShardSpace) -> Result<Schema, entity_manager::ConfigError> {
    let native = Schema::from_ts_config(config, entity_manager::model::Profile::Native)?;
    // the vectors were recorded from the TypeScript library: its shard hash
    Schema::new(
        native
            .table()
            .clone()
            .with_shard_space(space)
            .with_shard_hash(entity_manager::model::ShardHash::StringHash),
        native.entities().to_vec(),
    )
}

/// Runs one file: (passed, failed, failure report).
fn run_file(path: &Path) -> (usize, usize, String) {
    let mut report = String::new();
    let file: Value = match std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
    {
        Ok(v) => v,
        Err(e) => return (0, 1, format!("  cannot read: {e}\n")),
    };
    let cases = file["cases"].as_array().cloned().unwrap_or_default();
    let space = match file["shardSpace"].as_str() {
        Some("product") => ShardSpace::Product,
        Some("power") => ShardSpace::Power,
        other => {
            return (
                0,
                cases.len().max(1),
                format!("  unknown shardSpace {other:?}\n"),
            );
        }
    };
    let schema = match load(&file["config"], space) {
        Ok(schema) => schema,
        Err(e) => return (0, cases.len().max(1), format!("  config rejected: {e}\n")),
    };
    // Round trip: the schema exported as a TypeScript config and loaded again must be the same
    // model, and must pass every case of the file as well.
    let reloaded = match schema
        .to_ts_config()
        .map_err(|e| format!("export failed: {e}"))
        .and_then(|exported| load(&exported, space).map_err(|e| format!("reload failed: {e}")))
    {
        Ok(reloaded) => reloaded,
        Err(why) => return (0, cases.len().max(1), format!("  round trip: {why}\n")),
    };
    if reloaded.table() != schema.table() || reloaded.entities() != schema.entities() {
        return (
            0,
            cases.len().max(1),
            "  round trip: the reloaded export is a different model\n".to_owned(),
        );
    }
    let (mut passed, mut failed) = (0, 0);
    for (label, schema) in [("", &schema), (" (exported and reloaded)", &reloaded)] {
        let ctx = Ctx {
            schema,
            config: &file["config"],
            space,
        };
        for (i, case) in cases.iter().enumerate() {
            match ctx.run_case(case) {
                Ok(()) => passed += 1,
                Err(why) => {
                    failed += 1;
                    let op = case["op"].as_str().unwrap_or("?");
                    let _ = writeln!(report, "  case {i} ({op}){label} failed: {why}");
                }
            }
        }
    }
    (passed, failed, report)
}

struct Ctx<'a> {
    schema: &'a Schema,
    config: &'a Value,
    space: ShardSpace,
}

impl Ctx<'_> {
    fn entity(&self, case: &Value) -> Result<EntitySchema<'_>, Error> {
        self.schema
            .entity(case["entity"].as_str().unwrap_or_default())
    }

    /// Ops the reference runs without an entity (generated properties and indexes are global in
    /// TypeScript) use the first entity: a config loaded from TypeScript JSON gives every entity
    /// all of them.
    fn any_entity(&self) -> Result<EntitySchema<'_>, Error> {
        let token = self
            .schema
            .entities()
            .first()
            .map(|e| e.token.to_string())
            .unwrap_or_default();
        self.schema.entity(&token)
    }

    fn run_case(&self, case: &Value) -> Outcome {
        let op = case["op"].as_str().ok_or("case without op")?;
        if op == "transcode" {
            return run_transcode(case);
        }
        let mut expected = case["expected"].clone();
        match op {
            "primary_keys" => self.adjust_primary_keys(case, &mut expected),
            "hash_key_space" => self.adjust_hash_key_space(case, &mut expected),
            _ => {}
        }
        let actual: Result<Value, Error> = self.run_op(op, case);
        compare(&expected, actual)
    }

    fn run_op(&self, op: &str, case: &Value) -> Result<Value, Error> {
        let item = || to_item(&case["item"]);
        let str_field = |k: &str| case[k].as_str().unwrap_or_default().to_owned();
        Ok(match op {
            "add_keys" => item_json(&self.entity(case)?.add_keys(&item())?),
            "remove_keys" => item_json(&self.entity(case)?.remove_keys(&item())),
            "primary_keys" => keys_json(self, &self.entity(case)?.primary_keys(&item())?),
            "encode_generated" => self
                .any_entity()?
                .encode_generated(&str_field("property"), &item())?
                .map_or(Value::Null, Value::String),
            "decode_generated" => {
                item_json(&self.entity(case)?.decode_generated(&str_field("encoded"))?)
            }
            "hash_key_space" => Value::from(self.entity(case)?.hash_key_space(
                &str_field("hashKeyToken"),
                &item(),
                case["timestampFrom"].as_u64().unwrap_or_default(),
                case["timestampTo"].as_u64().unwrap_or_default(),
            )?),
            "index_components" => {
                Value::from(self.any_entity()?.index_components(&str_field("index"))?)
            }
            "unwrap_index" => {
                let omit: Vec<&str> = case["omit"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                Value::from(
                    self.entity(case)?
                        .unwrap_index(&str_field("index"), &omit)?,
                )
            }
            "dehydrate_index_item" => Value::String(
                self.entity(case)?
                    .dehydrate_index_item(&str_field("index"), &item())?,
            ),
            "rehydrate_index_item" => item_json(
                &self
                    .entity(case)?
                    .rehydrate_index_item(&str_field("index"), &str_field("dehydrated"))?,
            ),
            "dehydrate_page_key_map" => Value::from(
                self.entity(case)?
                    .dehydrate_page_key_map(&page_key_map(&case["pageKeyMap"]))?,
            ),
            other => {
                return Ok(Value::String(format!("<unknown op {other}>")));
            }
        })
    }

    /// PRODUCT.md §9 item 6: a primary-key lookup without a timestamp yields one candidate key
    /// per bump under both rules. The `product` reference runs `addKeys` first and throws
    /// `missing item timestamp property`; the expectation becomes the candidates, computed here
    /// from the raw config with this runner's own `string-hash` (independent of the library).
    fn adjust_primary_keys(&self, case: &Value, expected: &mut Value) {
        if self.space != ShardSpace::Product
            || expected["error"].as_str() != Some("missing item timestamp property")
        {
            return;
        }
        let entity = case["entity"].as_str().unwrap_or_default();
        let conf = &self.config["entities"][entity];
        let unique_property = conf["uniqueProperty"].as_str().unwrap_or_default();
        let Some(unique) = case["item"][unique_property]
            .as_str()
            .filter(|u| !u.is_empty())
        else {
            return;
        };
        let (hash_key, range_key) = self.key_names();
        let (gvd, skd) = self.delims_vs();
        let mut keys: Vec<Value> = Vec::new();
        for bump in oracle_bumps(conf) {
            let key = serde_json::json!({
                &hash_key: format!("{entity}{skd}{}", oracle_suffix(unique, bump)),
                &range_key: format!("{unique_property}{gvd}{unique}"),
            });
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        *expected = Value::Array(keys);
    }

    /// PRODUCT.md §9 items 4 and 5: under the `product` rule the hash-key space lists only the
    /// suffixes records can get (`< chars × radix`; TS 6.14 lists every `radix^chars` suffix),
    /// and a unique value in the item narrows each bump to the item's own shard.
    fn adjust_hash_key_space(&self, case: &Value, expected: &mut Value) {
        if self.space != ShardSpace::Product {
            return;
        }
        let Some(entries) = expected.as_array() else {
            return;
        };
        let entity = case["entity"].as_str().unwrap_or_default();
        let conf = &self.config["entities"][entity];
        let unique_property = conf["uniqueProperty"].as_str().unwrap_or_default();
        let unique = case["item"][unique_property]
            .as_str()
            .filter(|u| !u.is_empty());
        let bumps = oracle_bumps(conf);
        let gkd = self.config["generatedKeyDelimiter"].as_str().unwrap_or("|");
        let (_, skd) = self.delims_vs();
        let prefix = format!("{entity}{skd}");
        let kept: Vec<Value> = entries
            .iter()
            .filter(|entry| {
                let text = entry.as_str().unwrap_or_default();
                let hash_key = text.split(gkd).next().unwrap_or_default();
                let Some(suffix) = hash_key.strip_prefix(&prefix) else {
                    return true;
                };
                let Some(bump) = bumps
                    .iter()
                    .find(|b| usize::try_from(b.chars).is_ok_and(|c| c == suffix.chars().count()))
                else {
                    return true;
                };
                if bump.chars == 0 {
                    return true;
                }
                match unique {
                    Some(u) => suffix == oracle_suffix(u, *bump),
                    None => u64::from_str_radix(suffix, 1 << bump.char_bits)
                        .is_ok_and(|n| n < u64::from(bump.chars) << bump.char_bits),
                }
            })
            .cloned()
            .collect();
        *expected = Value::Array(kept);
    }

    fn key_names(&self) -> (String, String) {
        (
            self.config["hashKey"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            self.config["rangeKey"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        )
    }

    fn delims_vs(&self) -> (String, String) {
        (
            self.config["generatedValueDelimiter"]
                .as_str()
                .unwrap_or("#")
                .to_owned(),
            self.config["shardKeyDelimiter"]
                .as_str()
                .unwrap_or("!")
                .to_owned(),
        )
    }
}

// ---------------------------------------------------------------------------------------------
// An independent oracle of the `product` suffix, from the compat README ("The two shard spaces").

#[derive(Clone, Copy)]
struct OracleBump {
    timestamp: u64,
    char_bits: u32,
    chars: u32,
}

/// The entity's bumps as the reference parses them: sorted, with a zero bump in front if none.
fn oracle_bumps(conf: &Value) -> Vec<OracleBump> {
    let mut bumps: Vec<OracleBump> = conf["shardBumps"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|b| OracleBump {
                    timestamp: b["timestamp"].as_u64().unwrap_or_default(),
                    char_bits: u32::try_from(b["charBits"].as_u64().unwrap_or(1)).unwrap_or(1),
                    chars: u32::try_from(b["chars"].as_u64().unwrap_or(0)).unwrap_or(0),
                })
                .collect()
        })
        .unwrap_or_default();
    bumps.sort_by_key(|b| b.timestamp);
    if bumps.first().is_none_or(|b| b.timestamp != 0) {
        bumps.insert(
            0,
            OracleBump {
                timestamp: 0,
                char_bits: 1,
                chars: 0,
            },
        );
    }
    bumps
}

/// `string-hash` 1.1.3 and the `product` rule: `h % (chars × radix)` in base radix, padded.
fn oracle_suffix(unique: &str, bump: OracleBump) -> String {
    if bump.chars == 0 {
        return String::new();
    }
    let units: Vec<u16> = unique.encode_utf16().collect();
    let mut h: u32 = 5381;
    for unit in units.iter().rev() {
        h = h.wrapping_mul(33) ^ u32::from(*unit);
    }
    let radix = 1u32 << bump.char_bits;
    let mut n = h % (bump.chars * radix);
    let mut digits = Vec::new();
    while n > 0 {
        digits.push(char::from_digit(n % radix, radix).unwrap_or('?'));
        n /= radix;
    }
    while digits.len() < bump.chars as usize {
        digits.push('0');
    }
    digits.iter().rev().collect()
}

// ---------------------------------------------------------------------------------------------
// Conversions and comparison

fn to_item(value: &Value) -> Item {
    serde_dynamo::to_item(value).unwrap_or_default()
}

fn item_json(item: &Item) -> Value {
    serde_dynamo::from_item(item.clone()).unwrap_or(Value::Null)
}

fn keys_json(ctx: &Ctx<'_>, keys: &[PrimaryKey]) -> Value {
    let (hash_key, range_key) = ctx.key_names();
    Value::Array(
        keys.iter()
            .map(|k| serde_json::json!({ &hash_key: k.hash_key, &range_key: k.range_key }))
            .collect(),
    )
}

fn page_key_map(value: &Value) -> PageKeyMap {
    value
        .as_object()
        .map(|indexes| {
            indexes
                .iter()
                .map(|(index, shards)| {
                    let shards = shards
                        .as_object()
                        .map(|s| {
                            s.iter()
                                .map(|(hash_key, page_key)| {
                                    (
                                        hash_key.clone(),
                                        (!page_key.is_null()).then(|| to_item(page_key)),
                                    )
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    (index.clone(), shards)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Compares a result with the expectation: `{"error": message}` must be an error of the kind
/// that message maps to; values are compared structurally (objects as maps without their
/// `undefined` entries, numbers by value).
fn compare(expected: &Value, actual: Result<Value, Error>) -> Outcome {
    let expected_error = expected
        .as_object()
        .filter(|o| o.len() == 1)
        .and_then(|o| o.get("error"))
        .and_then(Value::as_str);
    match (expected_error, actual) {
        (Some(message), Err(e)) if expected_error_matches(message, &e) => Ok(()),
        (Some(message), Err(e)) => Err(format!("expected error {message:?}, got error: {e}")),
        (Some(message), Ok(v)) => Err(format!("expected error {message:?}, got {v}")),
        (None, Err(e)) => Err(format!("expected {expected}, got error: {e}")),
        (None, Ok(v)) if json_eq(expected, &v) => Ok(()),
        (None, Ok(v)) => Err(format!("expected {expected}\n      got      {v}")),
    }
}

/// The reference's error messages and the error kinds they correspond to.
fn expected_error_matches(message: &str, error: &Error) -> bool {
    match message {
        "missing item timestamp property" => matches!(error, Error::MissingTimestamp { .. }),
        "missing item unique property" => matches!(error, Error::MissingUnique { .. }),
        "invalid entity token" => matches!(error, Error::UnknownEntity { .. }),
        "invalid index token" => matches!(error, Error::UnknownIndex { .. }),
        "invalid generated property" => matches!(error, Error::UnknownGeneratedProperty { .. }),
        "generated property not sharded" => matches!(error, Error::NotSharded { .. }),
        "item does not support hash key space" => matches!(error, Error::MissingComponent { .. }),
        "invalid transcoded property" => matches!(error, Error::UnknownTranscodedProperty { .. }),
        "index rehydration key-value mismatch" => {
            matches!(error, Error::RehydrationMismatch { .. })
        }
        m if m.starts_with("invalid generated property value '") => {
            let segment = m
                .trim_start_matches("invalid generated property value '")
                .trim_end_matches('\'');
            matches!(error, Error::MalformedKey { segment: s, .. } if s == segment)
        }
        m => match error {
            Error::Transcode { source, .. } => transcode_error_matches(m, source),
            _ => false,
        },
    }
}

/// `invalid <name>` is an encode error of transcode `<name>`; `invalid encoded <name>` a decode
/// error.
fn transcode_error_matches(message: &str, error: &TranscodeError) -> bool {
    if let Some(name) = message.strip_prefix("invalid encoded ") {
        error.direction == Direction::Decode && error.transcode == name
    } else if let Some(name) = message.strip_prefix("invalid ") {
        error.direction == Direction::Encode && error.transcode == name
    } else {
        false
    }
}

fn run_transcode(case: &Value) -> Outcome {
    let name = case["transcode"].as_str().unwrap_or_default();
    let transcoder = transcode::builtin(name).ok_or_else(|| format!("unknown transcode {name}"))?;
    let value: AttributeValue = serde_dynamo::to_attribute_value(&case["value"])
        .map_err(|e| format!("cannot convert value: {e}"))?;
    let encoded = transcoder.encode(&value);
    let expected_error = case["encoded"]["error"].as_str();
    match (expected_error, encoded) {
        (Some(message), Err(e)) if transcode_error_matches(message, &e) => Ok(()),
        (Some(message), other) => Err(format!("expected error {message:?}, got {other:?}")),
        (None, Err(e)) => Err(format!("expected {}, got error: {e}", case["encoded"])),
        (None, Ok(encoded)) => {
            if Some(encoded.as_str()) != case["encoded"].as_str() {
                return Err(format!("encoded {encoded:?}, expected {}", case["encoded"]));
            }
            let decoded = transcoder
                .decode(&encoded)
                .map_err(|e| format!("decode of {encoded:?} failed: {e}"))?;
            let decoded: Value =
                serde_dynamo::from_attribute_value(decoded).map_err(|e| e.to_string())?;
            if json_eq(&case["decoded"], &decoded) {
                Ok(())
            } else {
                Err(format!("decoded {decoded}, expected {}", case["decoded"]))
            }
        }
    }
}

/// Structural equality: numbers by value, objects as maps ignoring `null` (JS `undefined`)
/// entries, arrays in order.
fn json_eq(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Object(a), Value::Object(b)) => {
            let (a, b) = (defined(a), defined(b));
            a.keys().eq(b.keys())
                && a.iter()
                    .all(|(k, v)| b.get(k).is_some_and(|w| json_eq(v, w)))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| json_eq(x, y))
        }
        (a, b) => a == b,
    }
}

fn defined(map: &Map<String, Value>) -> std::collections::BTreeMap<&String, &Value> {
    map.iter().filter(|(_, v)| !v.is_null()).collect()
}
