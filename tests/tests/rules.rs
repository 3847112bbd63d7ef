//! Every configuration rule has a run-time test and a compile-time (trybuild) case.
//!
//! For each `ConfigRule`, a configuration that breaks exactly that rule is loaded, and the
//! problems must include one tagged with the rule (not matched by message). Each rule's trybuild
//! case under `tests/ui/` is the one whose file says `// rule: <id>`. A rule added to
//! `ConfigRule::ALL` without both fails this test.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use entity_manager::model::{
    EntityModel, Index, IndexAttribute, Projection, Property, ShardSpace, TableModel,
};
use entity_manager::store::KeyType;
use entity_manager::{ConfigError, ConfigRule, Schema, transcode};
use serde_json::{Value, json};

/// A valid config with a generated property of each kind and two indexes.
fn base() -> Value {
    json!({
        "hashKey": "hashKey",
        "rangeKey": "rangeKey",
        "entities": {
            "user": {
                "uniqueProperty": "userId",
                "timestampProperty": "created",
                "shardBumps": [{ "timestamp": 1_700_000_000_000u64, "charBits": 2, "chars": 1 }]
            }
        },
        "generatedProperties": {
            "sharded": { "userHashKey": ["userId"] },
            "unsharded": { "nameRK": ["lastName", "firstName"] }
        },
        "propertyTranscodes": {
            "userId": "string", "created": "timestamp", "firstName": "string",
            "lastName": "string", "active": "boolean"
        },
        "indexes": {
            "created": { "hashKey": "hashKey", "rangeKey": "created" },
            "name": { "hashKey": "userHashKey", "rangeKey": "nameRK", "projections": ["active"] }
        }
    })
}

/// `config` with `value` at the `/`-separated `path`.
fn with(mut config: Value, path: &str, value: Value) -> Value {
    let mut target = &mut config;
    for key in path.split('/') {
        target = match key.parse::<usize>() {
            Ok(i) if target.is_array() => &mut target[i],
            _ => &mut target[key],
        };
    }
    *target = value;
    config
}

fn load(config: &Value) -> Result<Schema, ConfigError> {
    Schema::from_ts_config(config, ShardSpace::Product)
}

/// Two static entities declaring one index name with different keys (a rule only static
/// models can break: a TypeScript config has one global index list).
fn disagreeing_indexes() -> Result<Schema, ConfigError> {
    const PROPERTIES: &[Property] = &[
        Property::new("id", transcode::STRING),
        Property::new("created", transcode::TIMESTAMP),
        Property::new("name", transcode::STRING),
    ];
    let entity = |token: &'static str, range: &'static str| {
        let mut entity = EntityModel::new(token, "id", "created").with_properties(PROPERTIES);
        entity.indexes = Cow::Owned(vec![Index::new(
            "byX",
            Cow::Borrowed("hashKey"),
            Cow::Borrowed(range),
            Projection::All,
        )]);
        entity
    };
    Schema::new(
        TableModel::DEFAULT,
        vec![entity("a", "created"), entity("b", "name")],
    )
}

/// A configuration that breaks `rule` (and, as far as can be, nothing else).
#[allow(clippy::too_many_lines)] // one arm per rule
fn violation(rule: ConfigRule) -> Option<Result<Schema, ConfigError>> {
    let b = base;
    Some(match rule {
        ConfigRule::DelimitersNotEmpty => load(&with(b(), "shardKeyDelimiter", json!(""))),
        ConfigRule::DelimitersWithoutWordCharacters => {
            load(&with(b(), "generatedKeyDelimiter", json!("x")))
        }
        ConfigRule::DelimitersDisjoint => load(&with(b(), "generatedKeyDelimiter", json!("##"))),
        ConfigRule::TableKeysNotEmpty => load(&with(b(), "rangeKey", json!(""))),
        ConfigRule::TableKeysDistinct => load(&with(b(), "rangeKey", json!("hashKey"))),
        ConfigRule::ThrottlePositive => load(&with(b(), "throttle", json!(0))),
        ConfigRule::EntityToken => {
            let user = b()["entities"]["user"].clone();
            load(&with(b(), "entities", json!({ "us|er": user })))
        }
        ConfigRule::BumpRanges => load(&with(b(), "entities/user/shardBumps/0/charBits", json!(6))),
        ConfigRule::BumpTimestampsUnique => load(&with(
            b(),
            "entities/user/shardBumps",
            json!([
                { "timestamp": 5, "charBits": 1, "chars": 1 },
                { "timestamp": 5, "charBits": 1, "chars": 2 }
            ]),
        )),
        ConfigRule::BumpCharsIncrease => load(&with(
            b(),
            "entities/user/shardBumps",
            json!([
                { "timestamp": 5, "charBits": 1, "chars": 2 },
                { "timestamp": 9, "charBits": 1, "chars": 1 }
            ]),
        )),
        ConfigRule::UniqueProperty => {
            load(&with(b(), "entities/user/uniqueProperty", json!("nope")))
        }
        ConfigRule::TimestampProperty => {
            load(&with(b(), "propertyTranscodes/created", json!("int")))
        }
        ConfigRule::EntityDefaultsPositive => {
            load(&with(b(), "entities/user/defaultLimit", json!(0)))
        }
        ConfigRule::NamesNotEmpty => load(&with(
            b(),
            "generatedProperties/unsharded/",
            json!(["firstName"]),
        )),
        ConfigRule::NamesFreeOfDelimiters => {
            load(&with(b(), "propertyTranscodes/first|name", json!("string")))
        }
        ConfigRule::AttributeNamesDistinct => load(&with(
            b(),
            "generatedProperties/unsharded/firstName",
            json!(["lastName"]),
        )),
        ConfigRule::ComponentsTranscoded => load(&with(
            b(),
            "generatedProperties/unsharded/nameRK",
            json!(["lastName", "nickname"]),
        )),
        ConfigRule::ComponentsNotEmpty => load(&with(
            b(),
            "generatedProperties/unsharded/nameRK",
            json!([]),
        )),
        ConfigRule::ComponentsUnique => load(&with(
            b(),
            "generatedProperties/unsharded/nameRK",
            json!(["lastName", "lastName"]),
        )),
        ConfigRule::IndexNamesValid => load(&with(
            b(),
            "indexes/by",
            json!({ "hashKey": "userHashKey", "rangeKey": "created" }),
        )),
        ConfigRule::IndexHashKeys => load(&with(b(), "indexes/created/hashKey", json!("nameRK"))),
        ConfigRule::IndexRangeKeys => {
            load(&with(b(), "indexes/created/rangeKey", json!("userHashKey")))
        }
        ConfigRule::IndexRangeKeyTypes => {
            load(&with(b(), "indexes/created/rangeKey", json!("active")))
        }
        ConfigRule::IndexKeyPairsUnique => load(&with(
            b(),
            "indexes/again",
            json!({ "hashKey": "hashKey", "rangeKey": "created" }),
        )),
        ConfigRule::ProjectionsNotKeys => {
            load(&with(b(), "indexes/name/projections", json!(["nameRK"])))
        }
        ConfigRule::ProjectionsUnique => load(&with(
            b(),
            "indexes/name/projections",
            json!(["active", "active"]),
        )),
        ConfigRule::IndexDeclarationsAgree => disagreeing_indexes(),
        ConfigRule::IndexCount => {
            let mut config = b();
            for i in 0..21 {
                config = with(
                    config,
                    &format!("indexes/i{i}"),
                    json!({ "hashKey": "hashKey", "rangeKey": if i % 2 == 0 { "created" } else { "nameRK" }, "projections": [format!("p{i}")] }),
                );
                config = with(config, &format!("propertyTranscodes/p{i}"), json!("string"));
            }
            load(&config)
        }
        // `IndexNamesUnique`, `EntityTokensUnique`: a JSON object cannot repeat a key; see
        // `static_violation`
        _ => return None,
    })
}

/// Rules a JSON config cannot break, checked on static models built in Rust.
fn static_violation(rule: ConfigRule) -> Option<Result<Schema, ConfigError>> {
    const PROPERTIES: &[Property] = &[
        Property::new("id", transcode::STRING),
        Property::new("created", transcode::TIMESTAMP),
    ];
    let entity = |token: &'static str, indexes: Vec<Index>| {
        let mut entity = EntityModel::new(token, "id", "created").with_properties(PROPERTIES);
        entity.indexes = Cow::Owned(indexes);
        entity
    };
    let index = |name: &'static str, range: &'static str| {
        Index::new(
            name,
            Cow::Borrowed("hashKey"),
            Cow::Borrowed(range),
            Projection::All,
        )
    };
    Some(match rule {
        ConfigRule::IndexNamesUnique => Schema::new(
            TableModel::DEFAULT,
            vec![entity(
                "a",
                vec![index("x", "created"), index("x", "rangeKey")],
            )],
        ),
        ConfigRule::EntityTokensUnique => Schema::new(
            TableModel::DEFAULT,
            vec![entity("a", Vec::new()), entity("a", Vec::new())],
        ),
        ConfigRule::MultiKeyArity => {
            const HASH: &[IndexAttribute] = &[
                IndexAttribute::new("hashKey", KeyType::S),
                IndexAttribute::new("p1", KeyType::S),
                IndexAttribute::new("p2", KeyType::S),
                IndexAttribute::new("p3", KeyType::N),
                IndexAttribute::new("p4", KeyType::N),
            ];
            const RANGE: &[IndexAttribute] = &[IndexAttribute::new("s1", KeyType::N)];
            Schema::new(
                TableModel::DEFAULT,
                vec![entity(
                    "a",
                    vec![Index::multi("multi", HASH, RANGE, true, Projection::All)],
                )],
            )
        }
        ConfigRule::MultiKeyAttributesUnique => {
            const HASH: &[IndexAttribute] = &[IndexAttribute::new("p1", KeyType::S)];
            const RANGE: &[IndexAttribute] = &[
                IndexAttribute::new("s1", KeyType::N),
                IndexAttribute::new("p1", KeyType::S),
            ];
            Schema::new(
                TableModel::DEFAULT,
                vec![entity(
                    "a",
                    vec![Index::multi("multi", HASH, RANGE, false, Projection::All)],
                )],
            )
        }
        ConfigRule::MultiKeyAttributeRoles => {
            // the table range key as a sort attribute
            const HASH: &[IndexAttribute] = &[IndexAttribute::new("p1", KeyType::S)];
            const RANGE: &[IndexAttribute] = &[IndexAttribute::new("rangeKey", KeyType::S)];
            Schema::new(
                TableModel::DEFAULT,
                vec![entity(
                    "a",
                    vec![Index::multi("multi", HASH, RANGE, false, Projection::All)],
                )],
            )
        }
        _ => return None,
    })
}

#[test]
fn every_rule_has_a_run_time_test() {
    assert!(load(&base()).is_ok(), "the base config is valid");
    let mut missing = Vec::new();
    for &rule in ConfigRule::ALL {
        let Some(result) = violation(rule).or_else(|| static_violation(rule)) else {
            missing.push(rule.id());
            continue;
        };
        match result {
            Ok(_) => panic!("the violation of `{rule}` was accepted"),
            Err(error) => assert!(
                error.problems.iter().any(|p| p.rule == Some(rule)),
                "no problem of rule `{rule}` in: {error}"
            ),
        }
    }
    assert!(
        missing.is_empty(),
        "rules without a run-time test: {missing:?}"
    );
}

fn ui_cases(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            ui_cases(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && let Ok(text) = std::fs::read_to_string(&path)
        {
            out.push((path, text));
        }
    }
}

#[test]
fn every_rule_has_a_compile_time_case() {
    let mut cases = Vec::new();
    ui_cases(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ui"),
        &mut cases,
    );
    assert!(cases.len() > 50, "found only {} UI cases", cases.len());
    let mut missing = Vec::new();
    for &rule in ConfigRule::ALL {
        let marker = format!("// rule: {}", rule.id());
        let found: Vec<&PathBuf> = cases
            .iter()
            .filter(|(_, text)| text.lines().any(|l| l.trim() == marker))
            .map(|(path, _)| path)
            .collect();
        match found.first() {
            None => missing.push(rule.id()),
            // the case must have its expected errors: it is a compile-fail case
            Some(path) => {
                let stderr =
                    std::fs::read_to_string(path.with_extension("stderr")).unwrap_or_default();
                assert!(
                    stderr.lines().any(|l| l.starts_with("error")),
                    "{} has no .stderr with an error",
                    path.display()
                );
            }
        }
    }
    assert!(
        missing.is_empty(),
        "rules without a trybuild case: {missing:?}"
    );
}

/// Rule identifiers are distinct and every rule is listed once.
#[test]
fn rule_ids_are_distinct() {
    let mut ids: Vec<&str> = ConfigRule::ALL.iter().map(|r| r.id()).collect();
    ids.sort_unstable();
    let count = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), count);
}
