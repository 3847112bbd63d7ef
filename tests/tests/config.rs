//! Configuration loading and validation: the TypeScript JSON loader
//! ([`Schema::from_ts_config`]) and static models ([`Schema::new`]).
//!
//! Every compatibility config loads and normalises as the compat README says; every rule has a
//! test that asserts the exact set of problem paths and a key phrase of each message; a broken
//! config reports all its problems at once.

use std::borrow::Cow;
use std::error::Error;
use std::path::{Path, PathBuf};

use entity_manager::model::Name;
use entity_manager::model::{
    EntityModel, GeneratedKind, GeneratedProperty, Index, Projection, Property, ShardBump,
    ShardSpace, TableModel,
};
use entity_manager::transcode;
use entity_manager::{ConfigProblem, Schema};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn Error>>;

// =============================================================================================
// helpers

fn load(config: &Value) -> Result<Schema, entity_manager::ConfigError> {
    Schema::from_ts_config(config, ShardSpace::Power)
}

/// The problems of a config that must fail to load.
fn problems_of(config: &Value) -> Result<Vec<ConfigProblem>, Box<dyn Error>> {
    match load(config) {
        Ok(_) => Err("the config loaded, but problems were expected".into()),
        Err(error) => Ok(error.problems),
    }
}

/// Asserts that `problems` are exactly at `expected` paths (in any order), and that the problem
/// at each path mentions its phrase.
fn assert_exactly(problems: &[ConfigProblem], expected: &[(&str, &str)]) {
    let mut paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
    let mut wanted: Vec<&str> = expected.iter().map(|(path, _)| *path).collect();
    paths.sort_unstable();
    wanted.sort_unstable();
    assert_eq!(paths, wanted, "problems: {problems:#?}");
    for (path, phrase) in expected {
        assert!(
            problems
                .iter()
                .any(|p| p.path == *path && p.message.contains(phrase)),
            "no problem at `{path}` mentions {phrase:?}: {problems:#?}"
        );
    }
}

/// Asserts that loading `config` reports exactly these problems.
fn assert_problems(config: &Value, expected: &[(&str, &str)]) -> TestResult {
    assert_exactly(&problems_of(config)?, expected);
    Ok(())
}

/// `config` with the value at `path` (keys separated by `/`) set, creating objects on the way.
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

/// `config` without the key at `path`.
fn without(mut config: Value, path: &str) -> Value {
    let (parent, key) = path.rsplit_once('/').unwrap_or(("", path));
    let target = if parent.is_empty() {
        Some(&mut config)
    } else {
        config.pointer_mut(&format!("/{parent}"))
    };
    if let Some(Value::Object(map)) = target {
        map.shift_remove(key);
    }
    config
}

/// A small valid config: one entity, no generated properties, no indexes.
fn minimal() -> Value {
    json!({
        "hashKey": "hashKey",
        "rangeKey": "rangeKey",
        "entities": {
            "user": { "uniqueProperty": "userId", "timestampProperty": "created" }
        },
        "propertyTranscodes": { "userId": "string", "created": "timestamp" }
    })
}

/// A valid config with generated properties and indexes of every kind.
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
            "userId": "string",
            "created": "timestamp",
            "firstName": "string",
            "lastName": "string",
            "age": "int",
            "active": "boolean"
        },
        "indexes": {
            "created": { "hashKey": "hashKey", "rangeKey": "created" },
            "name": { "hashKey": "hashKey", "rangeKey": "nameRK", "projections": ["age"] },
            "userCreated": { "hashKey": "userHashKey", "rangeKey": "created" }
        }
    })
}

fn bump(timestamp: i64, char_bits: i64, chars: i64) -> Value {
    json!({ "timestamp": timestamp, "charBits": char_bits, "chars": chars })
}

/// The normalised shard bumps of entity `token`.
fn bumps_of(schema: &Schema, token: &str) -> Result<Vec<ShardBump>, Box<dyn Error>> {
    Ok(schema.entity(token)?.model().shard_bumps.to_vec())
}

#[test]
fn the_test_configs_are_valid() -> TestResult {
    load(&minimal())?;
    load(&base())?;
    Ok(())
}

// =============================================================================================
// the compatibility configs

fn compat_dir() -> PathBuf {
    std::env::var_os("EM_COMPAT_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/compat"),
        PathBuf::from,
    )
}

/// A compat file's name, shard space and config.
type CompatConfig = (String, ShardSpace, Value);

/// Every compat file, by name.
fn compat_configs() -> Result<Vec<CompatConfig>, Box<dyn Error>> {
    let mut configs = Vec::new();
    for entry in std::fs::read_dir(compat_dir())? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut file: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
        let space = match file["shardSpace"].as_str() {
            Some("product") => ShardSpace::Product,
            Some("power") => ShardSpace::Power,
            other => return Err(format!("{name}: unknown shardSpace {other:?}").into()),
        };
        configs.push((name, space, file["config"].take()));
    }
    configs.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(configs)
}

fn compat_config(name: &str) -> Result<Schema, Box<dyn Error>> {
    let (_, space, config) = compat_configs()?
        .into_iter()
        .find(|(file, _, _)| file == name)
        .ok_or_else(|| format!("no compat file {name}"))?;
    Ok(Schema::from_ts_config(&config, space)?)
}

#[test]
fn every_compat_config_loads_with_normalised_bumps() -> TestResult {
    let configs = compat_configs()?;
    assert_eq!(configs.len(), 8, "expected the eight compat files");
    for (name, space, config) in &configs {
        let schema = Schema::from_ts_config(config, *space)
            .map_err(|e| format!("{name} does not load: {e}"))?;
        assert_eq!(schema.table().shard_space, *space, "{name}");
        let declared = config["entities"]
            .as_object()
            .map_or(0, serde_json::Map::len);
        assert_eq!(schema.entities().len(), declared, "{name}");
        for entity in schema.entities() {
            let bumps = &entity.shard_bumps;
            assert_eq!(
                bumps.first().map(|b| b.timestamp),
                Some(0),
                "{name} {}",
                entity.token
            );
            for pair in bumps.windows(2) {
                assert!(pair[0].timestamp < pair[1].timestamp, "{name}: {bumps:?}");
                assert!(pair[0].chars < pair[1].chars, "{name}: {bumps:?}");
            }
        }
    }
    Ok(())
}

#[test]
fn compat_orders_bumps_are_sorted_and_an_explicit_zero_bump_is_kept() -> TestResult {
    for file in ["product-orders.json", "power-orders.json"] {
        let schema = compat_config(file)?;
        // listed out of order in the file; the zero bump is prepended
        assert_eq!(
            bumps_of(&schema, "order")?,
            [
                ShardBump::UNSHARDED,
                ShardBump::new(1_600_000_000_000, 1, 1),
                ShardBump::new(1_650_000_000_000, 2, 2),
                ShardBump::new(1_700_000_000_000, 5, 3),
                ShardBump::new(1_750_000_000_000, 5, 4),
            ]
        );
        // an explicit timestamp-0 bump with chars 1 is kept as given
        assert_eq!(
            bumps_of(&schema, "customer")?,
            [
                ShardBump::new(0, 3, 1),
                ShardBump::new(1_680_000_000_000, 4, 2)
            ]
        );
        // no shardBumps: the default schedule
        assert_eq!(bumps_of(&schema, "note")?, [ShardBump::UNSHARDED]);
    }
    let schema = compat_config("product-user-service.json")?;
    assert_eq!(
        bumps_of(&schema, "user")?,
        [
            ShardBump::UNSHARDED,
            ShardBump::new(1_726_880_933_000, 2, 1),
            ShardBump::new(1_735_689_600_000, 3, 2),
        ]
    );
    Ok(())
}

#[test]
fn compat_globals_go_to_every_entity_in_config_order() -> TestResult {
    let schema = compat_config("power-user-service.json")?;
    // `email` is first in the file, `user` second
    let tokens: Vec<&str> = schema.entities().iter().map(|e| &*e.token).collect();
    assert_eq!(tokens, ["email", "user"]);
    for entity in schema.entities() {
        let generated: Vec<(&str, GeneratedKind, bool)> = entity
            .generated
            .iter()
            .map(|g| (&*g.name, g.kind, g.atomic))
            .collect();
        assert_eq!(
            generated,
            [
                ("userBeneficiaryHashKey", GeneratedKind::Sharded, true),
                ("userHashKey", GeneratedKind::Sharded, true),
                ("firstNameRangeKey", GeneratedKind::Unsharded, false),
                ("lastNameRangeKey", GeneratedKind::Unsharded, false),
            ]
        );
        assert_eq!(entity.properties.len(), 8);
        let indexes: Vec<&str> = entity.indexes.iter().map(|i| &*i.name).collect();
        assert_eq!(indexes[..3], ["created", "firstName", "lastName"]);
        assert_eq!(indexes.len(), 11);
        let projection = |name: &str| entity.index(name).map(|i| i.projection.clone());
        assert_eq!(projection("created"), Some(Projection::All));
        assert_eq!(
            projection("userBeneficiaryFirstName"),
            Some(Projection::KeysOnly)
        );
        assert_eq!(
            projection("userBeneficiaryCreated"),
            Some(Projection::Include(Cow::Owned(vec![
                "someProperty".into(),
                "someOtherProperty".into()
            ])))
        );
    }
    let table = schema.table();
    assert_eq!(
        (&*table.hash_key, &*table.range_key, table.throttle),
        ("hashKey", "rangeKey", 10)
    );
    assert_eq!(table.delimiters, entity_manager::model::Delimiters::DEFAULT);
    Ok(())
}

#[test]
fn compat_table_settings_and_entity_defaults() -> TestResult {
    let schema = compat_config("product-custom-delims.json")?;
    let table = schema.table();
    assert_eq!(
        (&*table.hash_key, &*table.range_key, table.throttle),
        ("hk", "rk", 4)
    );
    let d = &table.delimiters;
    assert_eq!(
        (&*d.generated_key, &*d.generated_value, &*d.shard_key),
        ("~", ":", "$")
    );

    let schema = compat_config("product-orders.json")?;
    let order = schema.entity("order")?.model();
    assert_eq!((order.default_limit, order.default_page_size), (25, 5));
    let note = schema.entity("note")?.model();
    assert_eq!((note.default_limit, note.default_page_size), (10, 10));
    // the table range key is a valid index range key
    assert_eq!(
        note.index("customerBySk").map(|i| &*i.range_key),
        Some("sk")
    );
    Ok(())
}

// =============================================================================================
// every problem at once

#[test]
fn a_broken_config_reports_every_problem_at_once() -> TestResult {
    let config = json!({
        "hashKey": "hashKey",
        "rangeKey": "rangeKey",
        "generatedKeyDelimiter": "",
        "throttle": 0,
        "entities": {
            "user": {
                "uniqueProperty": "userId",
                "timestampProperty": "name",
                "defaultLimit": 0,
                "shardBumps": [bump(1, 6, 1), bump(2, 1, 1)]
            }
        },
        "propertyTranscodes": { "userId": "string", "name": "string", "age": "number" },
        "indexes": {
            "byName": { "hashKey": "hashKey", "rangeKey": "missing", "projection": [] }
        }
    });
    let problems = problems_of(&config)?;
    assert!(problems.len() >= 5);
    assert_exactly(
        &problems,
        &[
            ("propertyTranscodes.age", "unknown transcode `number`"),
            ("indexes.byName.projection", "did you mean `projections`?"),
            ("generatedKeyDelimiter", "is empty"),
            ("throttle", "greater than 0"),
            ("entities.user.shardBumps.0.charBits", "must be in 1..=5"),
            (
                "entities.user.shardBumps.2",
                "do not strictly increase at timestamp 2",
            ),
            (
                "entities.user.timestampProperty",
                "use the `timestamp` transcode",
            ),
            ("entities.user.defaultLimit", "greater than 0"),
            ("indexes.byName.rangeKey", "no such attribute"),
        ],
    );
    Ok(())
}

// =============================================================================================
// delimiters

#[test]
fn an_empty_delimiter_is_a_problem() -> TestResult {
    let config = with(minimal(), "generatedValueDelimiter", json!(""));
    assert_problems(&config, &[("generatedValueDelimiter", "is empty")])
}

#[test]
fn a_delimiter_with_a_word_character_is_a_problem() -> TestResult {
    // TypeScript accepts `!x` (its regex is unanchored); we do not
    let config = with(minimal(), "shardKeyDelimiter", json!("!x"));
    assert_problems(&config, &[("shardKeyDelimiter", "word character `x`")])?;
    let config = with(minimal(), "generatedKeyDelimiter", json!("_"));
    assert_problems(&config, &[("generatedKeyDelimiter", "word character `_`")])
}

#[test]
fn a_delimiter_containing_another_is_a_problem() -> TestResult {
    // the TypeScript example: only "generatedKeyDelimiter contains shardKeyDelimiter"
    let config = with(minimal(), "generatedKeyDelimiter", json!("|!"));
    assert_problems(
        &config,
        &[("generatedKeyDelimiter", "contains `shardKeyDelimiter`")],
    )?;
    // equal delimiters: both directions, as in TypeScript
    let config = with(minimal(), "generatedValueDelimiter", json!("|"));
    assert_problems(
        &config,
        &[
            (
                "generatedKeyDelimiter",
                "contains `generatedValueDelimiter`",
            ),
            (
                "generatedValueDelimiter",
                "contains `generatedKeyDelimiter`",
            ),
        ],
    )
}

// =============================================================================================
// table keys and attribute names

#[test]
fn an_empty_table_key_is_a_problem() -> TestResult {
    let config = with(minimal(), "hashKey", json!(""));
    assert_problems(&config, &[("hashKey", "`hashKey` is empty")])?;
    let config = with(minimal(), "rangeKey", json!(""));
    assert_problems(&config, &[("rangeKey", "`rangeKey` is empty")])
}

#[test]
fn equal_table_keys_are_a_problem() -> TestResult {
    let config = with(minimal(), "rangeKey", json!("hashKey"));
    assert_problems(
        &config,
        &[("rangeKey", "same attribute as the table hash key")],
    )
}

#[test]
fn an_attribute_name_has_one_role() -> TestResult {
    let config = with(minimal(), "propertyTranscodes/hashKey", json!("string"));
    assert_problems(
        &config,
        &[("propertyTranscodes.hashKey", "already the table hash key")],
    )?;
    let config = with(
        base(),
        "generatedProperties/unsharded/userHashKey",
        json!(["firstName"]),
    );
    assert_problems(
        &config,
        &[(
            "generatedProperties.unsharded.userHashKey",
            "already a sharded generated property, so it cannot also be an unsharded",
        )],
    )?;
    let config = with(
        base(),
        "generatedProperties/sharded/rangeKey",
        json!(["userId"]),
    );
    assert_problems(
        &config,
        &[(
            "generatedProperties.sharded.rangeKey",
            "already the table range key",
        )],
    )?;
    // a generated property named like a transcoded property; `nameRK` now has a generated
    // component too
    let config = with(
        base(),
        "generatedProperties/sharded/firstName",
        json!(["userId"]),
    );
    assert_problems(
        &config,
        &[
            (
                "propertyTranscodes.firstName",
                "already a sharded generated property",
            ),
            (
                "generatedProperties.unsharded.nameRK.1",
                "itself a generated property",
            ),
        ],
    )
}

#[test]
fn a_name_containing_a_delimiter_is_a_problem() -> TestResult {
    let config = with(
        without(minimal(), "entities/user"),
        "entities/us|er",
        json!({ "uniqueProperty": "userId", "timestampProperty": "created" }),
    );
    assert_problems(&config, &[("entities.us|er", "contains the delimiter `|`")])?;
    let config = with(minimal(), "propertyTranscodes/first#name", json!("string"));
    assert_problems(
        &config,
        &[(
            "propertyTranscodes.first#name",
            "contains the delimiter `#`",
        )],
    )?;
    let config = with(
        base(),
        "generatedProperties/sharded/user!PK",
        json!(["userId"]),
    );
    assert_problems(
        &config,
        &[(
            "generatedProperties.sharded.user!PK",
            "contains the delimiter `!`",
        )],
    )?;
    let config = with(
        base(),
        "indexes/by|age",
        json!({ "hashKey": "hashKey", "rangeKey": "age" }),
    );
    assert_problems(&config, &[("indexes.by|age", "contains the delimiter `|`")])
}

#[test]
fn an_empty_name_is_a_problem() -> TestResult {
    let config = with(
        without(minimal(), "entities/user"),
        "entities/",
        json!({ "uniqueProperty": "userId", "timestampProperty": "created" }),
    );
    assert_problems(&config, &[("entities.\"\"", "entity token is empty")])?;
    let config = with(minimal(), "propertyTranscodes/", json!("string"));
    assert_problems(&config, &[("propertyTranscodes.\"\"", "empty name")])?;
    let config = with(
        base(),
        "indexes/",
        json!({ "hashKey": "hashKey", "rangeKey": "age" }),
    );
    assert_problems(&config, &[("indexes.\"\"", "empty name")])?;
    let config = with(base(), "indexes/name/projections", json!(["age", ""]));
    assert_problems(&config, &[("indexes.name.projections.1", "is empty")])
}

// =============================================================================================
// shard bumps

fn with_bumps(bumps: &Value) -> Value {
    with(minimal(), "entities/user/shardBumps", bumps.clone())
}

#[test]
fn chars_must_be_in_0_to_40() -> TestResult {
    let config = with_bumps(&json!([bump(1, 1, 41)]));
    assert_problems(
        &config,
        &[("entities.user.shardBumps.0.chars", "must be in 0..=40")],
    )?;
    // -1 is a TypeScript range error too; the model cannot even hold it
    let config = with_bumps(&json!([bump(1, 1, 1), bump(2, 1, -1), bump(3, 1, 41)]));
    assert_problems(
        &config,
        &[
            (
                "entities.user.shardBumps.1.chars",
                "`chars` is -1; it must be in 0..=40",
            ),
            (
                "entities.user.shardBumps.2.chars",
                "`chars` is 41; it must be in 0..=40",
            ),
        ],
    )
}

#[test]
fn char_bits_must_be_in_1_to_5() -> TestResult {
    let config = with_bumps(&json!([bump(1, 0, 1), bump(2, 6, 2), bump(3, -1, 3)]));
    assert_problems(
        &config,
        &[
            (
                "entities.user.shardBumps.0.charBits",
                "`charBits` is 0; it must be in 1..=5",
            ),
            ("entities.user.shardBumps.1.charBits", "`charBits` is 6"),
            ("entities.user.shardBumps.2.charBits", "`charBits` is -1"),
        ],
    )
}

#[test]
fn duplicate_bump_timestamps_are_a_problem() -> TestResult {
    let config = with_bumps(&json!([bump(5, 1, 1), bump(9, 1, 3), bump(5, 2, 2)]));
    assert_problems(
        &config,
        &[(
            "entities.user.shardBumps.2.timestamp",
            "shard bumps 0 and 2 both start at timestamp 5",
        )],
    )
}

#[test]
fn chars_must_strictly_increase_at_the_normalised_position() -> TestResult {
    // TypeScript's verified example reports `[entities, foo, shardBumps, 2]`: the position in
    // the normalised list, after the implied zero bump
    let config = with_bumps(&json!([bump(2, 1, 1), bump(1, 1, 2)]));
    assert_problems(
        &config,
        &[(
            "entities.user.shardBumps.2",
            "shard bump chars do not strictly increase at timestamp 2",
        )],
    )?;
    // a user bump with chars 0 compares against the implied zero bump
    let config = with_bumps(&json!([bump(7, 1, 0)]));
    assert_problems(
        &config,
        &[(
            "entities.user.shardBumps.1",
            "follows the implied first bump",
        )],
    )?;
    // equal chars are not an increase
    let config = with_bumps(&json!([bump(0, 2, 1), bump(3, 3, 1)]));
    assert_problems(
        &config,
        &[(
            "entities.user.shardBumps.1",
            "do not strictly increase at timestamp 3",
        )],
    )
}

#[test]
fn an_explicit_zero_bump_is_kept_as_given() -> TestResult {
    let schema = load(&with_bumps(&json!([bump(10, 4, 2), bump(0, 3, 1)])))?;
    assert_eq!(
        bumps_of(&schema, "user")?,
        [ShardBump::new(0, 3, 1), ShardBump::new(10, 4, 2)]
    );
    Ok(())
}

#[test]
fn empty_shard_bumps_mean_the_default_schedule() -> TestResult {
    // TypeScript throws a TypeError here (PRODUCT.md §9 item 9)
    let schema = load(&with_bumps(&json!([])))?;
    assert_eq!(bumps_of(&schema, "user")?, [ShardBump::UNSHARDED]);
    let schema = load(&minimal())?;
    assert_eq!(bumps_of(&schema, "user")?, [ShardBump::UNSHARDED]);
    Ok(())
}

#[test]
fn bump_timestamps_must_be_non_negative_safe_integers() -> TestResult {
    let config = with_bumps(&json!([bump(1, 1, 1), bump(-5, 1, 2)]));
    assert_problems(
        &config,
        &[(
            "entities.user.shardBumps.1.timestamp",
            "`timestamp` is -5; it must be a non-negative",
        )],
    )?;
    let config = with_bumps(&json!([{ "timestamp": 1.5, "charBits": 1, "chars": 1 }]));
    assert_problems(
        &config,
        &[(
            "entities.user.shardBumps.0.timestamp",
            "expected an integer, found 1.5",
        )],
    )?;
    let config = with_bumps(&json!([{ "timestamp": 1u64 << 60, "charBits": 1, "chars": 1 }]));
    assert_problems(
        &config,
        &[("entities.user.shardBumps.0.timestamp", "not a safe integer")],
    )?;
    // an integral float is an integer, as in JavaScript
    let schema = load(&with_bumps(
        &json!([{ "timestamp": 10.0, "charBits": 1, "chars": 1 }]),
    ))?;
    assert_eq!(
        bumps_of(&schema, "user")?,
        [ShardBump::UNSHARDED, ShardBump::new(10, 1, 1)]
    );
    Ok(())
}

#[test]
fn an_unreadable_bump_adds_no_follow_on_problems() -> TestResult {
    // the placeholders of the unreadable values do not produce order or range problems
    let config = with_bumps(&json!([
        bump(1, 1, 1),
        { "timestamp": "soon", "charBits": 1, "chars": 2 },
        { "timestamp": 3, "charBits": "wide", "chars": 0 },
        "bump"
    ]));
    assert_problems(
        &config,
        &[
            (
                "entities.user.shardBumps.1.timestamp",
                "expected an integer, found a string",
            ),
            (
                "entities.user.shardBumps.2.charBits",
                "expected an integer, found a string",
            ),
            (
                "entities.user.shardBumps.3",
                "expected an object, found a string",
            ),
        ],
    )
}

// =============================================================================================
// unique and timestamp properties

#[test]
fn the_unique_property_must_be_transcoded() -> TestResult {
    let config = with(minimal(), "entities/user/uniqueProperty", json!("id"));
    assert_problems(
        &config,
        &[(
            "entities.user.uniqueProperty",
            "unique property `id` is not a transcoded property; give it a transcode (transcoded properties: `userId`, `created`)",
        )],
    )
}

#[test]
fn the_timestamp_property_must_be_a_transcoded_integer() -> TestResult {
    let config = with(
        minimal(),
        "entities/user/timestampProperty",
        json!("createdAt"),
    );
    assert_problems(
        &config,
        &[(
            "entities.user.timestampProperty",
            "`createdAt` is not a transcoded property",
        )],
    )?;
    let config = with(minimal(), "propertyTranscodes/created", json!("string"));
    assert_problems(
        &config,
        &[(
            "entities.user.timestampProperty",
            "has transcode `string`, but it holds the creation time in whole milliseconds",
        )],
    )?;
    // `int` would write `created#p0001700000000000` into keys: TypeScript writes 13 digits
    let config = with(minimal(), "propertyTranscodes/created", json!("int"));
    assert_problems(
        &config,
        &[(
            "entities.user.timestampProperty",
            "has transcode `int`, but it holds the creation time in whole milliseconds",
        )],
    )?;
    Ok(())
}

// =============================================================================================
// generated properties

#[test]
fn a_generated_component_must_be_a_transcoded_property() -> TestResult {
    let config = with(
        base(),
        "generatedProperties/sharded/userHashKey",
        json!(["userID"]),
    );
    assert_problems(
        &config,
        &[(
            "generatedProperties.sharded.userHashKey.0",
            "component `userID` of generated property `userHashKey` is not a transcoded property",
        )],
    )
}

#[test]
fn a_generated_component_must_not_be_generated() -> TestResult {
    let config = with(
        base(),
        "generatedProperties/unsharded/nameRK",
        json!(["lastName", "userHashKey"]),
    );
    assert_problems(
        &config,
        &[(
            "generatedProperties.unsharded.nameRK.1",
            "itself a generated property",
        )],
    )
}

#[test]
fn a_generated_property_needs_components() -> TestResult {
    let config = with(base(), "generatedProperties/unsharded/nameRK", json!([]));
    assert_problems(
        &config,
        &[("generatedProperties.unsharded.nameRK", "has no components")],
    )
}

#[test]
fn a_generated_component_is_listed_once() -> TestResult {
    let config = with(
        base(),
        "generatedProperties/unsharded/nameRK",
        json!(["lastName", "lastName"]),
    );
    assert_problems(
        &config,
        &[(
            "generatedProperties.unsharded.nameRK.1",
            "`lastName` is listed twice",
        )],
    )
}

// =============================================================================================
// indexes

#[test]
fn an_index_hash_key_is_the_table_hash_key_or_sharded() -> TestResult {
    let config = with(base(), "indexes/created/hashKey", json!("nameRK"));
    assert_problems(
        &config,
        &[(
            "indexes.created.hashKey",
            "index `created` hash key `nameRK` is neither the table hash key `hashKey` nor a sharded generated property (it is an unsharded generated property",
        )],
    )?;
    let config = with(base(), "indexes/created/hashKey", json!("userId"));
    assert_problems(
        &config,
        &[("indexes.created.hashKey", "it is a transcoded property")],
    )
}

#[test]
fn an_index_range_key_is_the_table_range_key_unsharded_or_transcoded() -> TestResult {
    let config = with(base(), "indexes/created/rangeKey", json!("userHashKey"));
    assert_problems(
        &config,
        &[(
            "indexes.created.rangeKey",
            "a sharded generated property, which can only be a hash key",
        )],
    )?;
    let config = with(base(), "indexes/created/rangeKey", json!("updated"));
    assert_problems(
        &config,
        &[("indexes.created.rangeKey", "no such attribute is declared")],
    )?;
    // the table range key is allowed
    load(&with(base(), "indexes/created/rangeKey", json!("rangeKey")))?;
    Ok(())
}

#[test]
fn a_boolean_cannot_be_an_index_range_key() -> TestResult {
    let config = with(base(), "indexes/created/rangeKey", json!("active"));
    assert_problems(
        &config,
        &[(
            "indexes.created.rangeKey",
            "has transcode `boolean`, which DynamoDB cannot use",
        )],
    )
}

#[test]
fn index_key_pairs_are_unique() -> TestResult {
    let config = with(
        base(),
        "indexes/created2",
        json!({ "hashKey": "hashKey", "rangeKey": "created" }),
    );
    assert_problems(
        &config,
        &[(
            "indexes.created2",
            "same hash key `hashKey` and range key `created` as index `created`",
        )],
    )
}

#[test]
fn a_projection_must_not_be_a_key() -> TestResult {
    let config = with(
        base(),
        "indexes/name/projections",
        json!([
            "hashKey",
            "rangeKey",
            "nameRK",
            "userHashKey",
            "age",
            "created"
        ]),
    );
    // a transcoded property is allowed unless it is this index's own range key (TypeScript
    // rule 5): `age` and `created` are fine here
    assert_problems(
        &config,
        &[
            ("indexes.name.projections.0", "is the table hash key"),
            ("indexes.name.projections.1", "is the table range key"),
            ("indexes.name.projections.2", "is the index range key"),
            ("indexes.name.projections.3", "is a generated property"),
        ],
    )?;
    let config = with(base(), "indexes/created/projections", json!(["created"]));
    assert_problems(
        &config,
        &[("indexes.created.projections.0", "is the index range key")],
    )
}

#[test]
fn a_projection_is_listed_once() -> TestResult {
    let config = with(
        base(),
        "indexes/name/projections",
        json!(["age", "firstName", "age"]),
    );
    assert_problems(
        &config,
        &[("indexes.name.projections.2", "`age` is listed twice")],
    )
}

#[test]
fn empty_projections_mean_keys_only() -> TestResult {
    let schema = load(&with(base(), "indexes/name/projections", json!([])))?;
    let user = schema.entity("user")?.model();
    assert_eq!(
        user.index("name").map(|i| &i.projection),
        Some(&Projection::KeysOnly)
    );
    assert_eq!(
        user.index("created").map(|i| &i.projection),
        Some(&Projection::All)
    );
    Ok(())
}

#[test]
fn at_most_20_indexes() -> TestResult {
    let mut config = minimal();
    for i in 0..21 {
        config = with(
            config,
            &format!("propertyTranscodes/p{i:02}"),
            json!("string"),
        );
        config = with(
            config,
            &format!("indexes/i{i:02}"),
            json!({ "hashKey": "hashKey", "rangeKey": format!("p{i:02}") }),
        );
    }
    assert_problems(
        &config,
        &[(
            "indexes.i20",
            "21st distinct index of the table, which declares 21",
        )],
    )?;
    load(&without(config, "indexes/i20"))?;
    Ok(())
}

// =============================================================================================
// counts

#[test]
fn counts_must_be_greater_than_0() -> TestResult {
    let config = with(minimal(), "throttle", json!(0));
    assert_problems(
        &config,
        &[("throttle", "`throttle` must be greater than 0")],
    )?;
    let config = with(minimal(), "entities/user/defaultLimit", json!(0));
    assert_problems(
        &config,
        &[("entities.user.defaultLimit", "must be greater than 0")],
    )?;
    let config = with(minimal(), "entities/user/defaultPageSize", json!(-3));
    assert_problems(
        &config,
        &[("entities.user.defaultPageSize", "must be greater than 0")],
    )?;
    let config = with(minimal(), "throttle", json!(2.5));
    assert_problems(&config, &[("throttle", "expected an integer, found 2.5")])
}

// =============================================================================================
// shapes

#[test]
fn unknown_keys_are_reported_everywhere_with_a_suggestion() -> TestResult {
    let config = with(minimal(), "throtle", json!(4));
    assert_problems(
        &config,
        &[("throtle", "unknown key `throtle`; did you mean `throttle`?")],
    )?;
    let config = with(minimal(), "entities/user/shardbumps", json!([]));
    assert_problems(
        &config,
        &[("entities.user.shardbumps", "did you mean `shardBumps`?")],
    )?;
    // stricter than TypeScript, which drops unknown keys inside an index
    let config = with(base(), "indexes/name/projection", json!(["age"]));
    assert_problems(
        &config,
        &[("indexes.name.projection", "did you mean `projections`?")],
    )?;
    let config = with(base(), "generatedProperties/atomic", json!({}));
    assert_problems(
        &config,
        &[(
            "generatedProperties.atomic",
            "the known keys here are `sharded`, `unsharded`",
        )],
    )?;
    let config = with_bumps(&json!([{ "timestamp": 1, "charBits": 1, "chars": 1, "size": 3 }]));
    assert_problems(
        &config,
        &[("entities.user.shardBumps.0.size", "unknown key `size`")],
    )
}

#[test]
fn missing_required_fields_are_reported_once() -> TestResult {
    // no follow-on "not a transcoded property" for the missing values
    let config = without(
        without(minimal(), "rangeKey"),
        "entities/user/timestampProperty",
    );
    assert_problems(
        &config,
        &[
            ("rangeKey", "missing required `rangeKey`"),
            (
                "entities.user.timestampProperty",
                "missing required `timestampProperty`",
            ),
        ],
    )?;
    let config = without(base(), "indexes/created/hashKey");
    assert_problems(
        &config,
        &[("indexes.created.hashKey", "missing required `hashKey`")],
    )?;
    let config = with_bumps(&json!([{ "timestamp": 1, "charBits": 1 }]));
    assert_problems(
        &config,
        &[(
            "entities.user.shardBumps.0.chars",
            "missing required `chars`",
        )],
    )
}

#[test]
fn wrong_json_types_are_reported() -> TestResult {
    assert_problems(&json!([]), &[("", "must be a JSON object, not an array")])?;
    let config = with(minimal(), "hashKey", json!(5));
    assert_problems(&config, &[("hashKey", "expected a string, found a number")])?;
    let config = with(minimal(), "entities", json!(["user"]));
    assert_problems(
        &config,
        &[("entities", "expected an object, found an array")],
    )?;
    let config = with(minimal(), "entities/user/shardBumps", json!({}));
    assert_problems(
        &config,
        &[(
            "entities.user.shardBumps",
            "expected an array of shard bumps",
        )],
    )?;
    let config = with(
        base(),
        "generatedProperties/sharded/userHashKey",
        json!("userId"),
    );
    assert_problems(
        &config,
        &[(
            "generatedProperties.sharded.userHashKey",
            "expected an array",
        )],
    )?;
    let config = with(
        base(),
        "generatedProperties/unsharded/nameRK",
        json!(["lastName", 7]),
    );
    assert_problems(
        &config,
        &[(
            "generatedProperties.unsharded.nameRK.1",
            "expected a string, found a number",
        )],
    )?;
    let config = with(
        base(),
        "indexes/name/projections",
        json!(["age", null, "age"]),
    );
    assert_problems(
        &config,
        &[
            (
                "indexes.name.projections.1",
                "expected a string, found null",
            ),
            ("indexes.name.projections.2", "listed twice"),
        ],
    )
}

#[test]
fn unknown_transcode_names_are_reported() -> TestResult {
    let config = with(minimal(), "propertyTranscodes/userId", json!("uuid"));
    assert_problems(
        &config,
        &[(
            "propertyTranscodes.userId",
            "unknown transcode `uuid`; the built-in transcodes are `string`",
        )],
    )
}

#[test]
fn custom_transcodes_cannot_be_loaded_from_json() -> TestResult {
    // properties naming the custom transcodes are not reported a second time
    let config = with(
        with(minimal(), "transcodes", json!({ "uuid": {} })),
        "propertyTranscodes/userId",
        json!("uuid"),
    );
    assert_problems(&config, &[("transcodes", "build the model in Rust")])
}

// =============================================================================================
// static models

const USER_PROPERTIES: &[Property] = &[
    Property::new("userId", transcode::STRING),
    Property::new("created", transcode::TIMESTAMP),
    Property::new("name", transcode::STRING),
];

const USER_PK: &[Name] = &[Cow::Borrowed("userId")];
const USER_GENERATED: &[GeneratedProperty] = &[GeneratedProperty::sharded("userPK", USER_PK)];

const fn index(name: &'static str, hash_key: &'static str, range_key: &'static str) -> Index {
    Index::new(
        name,
        Cow::Borrowed(hash_key),
        Cow::Borrowed(range_key),
        Projection::All,
    )
}

/// Declared out of order, to be sorted by validation.
const UNSORTED_BUMPS: &[ShardBump] = &[
    ShardBump::new(1_800_000_000_000, 3, 2),
    ShardBump::new(1_700_000_000_000, 2, 1),
];

const fn entity(token: &'static str, indexes: &'static [Index]) -> EntityModel {
    EntityModel::new(token, "userId", "created")
        .with_shard_bumps(UNSORTED_BUMPS)
        .with_properties(USER_PROPERTIES)
        .with_generated(USER_GENERATED)
        .with_indexes(indexes)
}

const BY_NAME: &[Index] = &[index("byName", "hashKey", "name")];
const USER: EntityModel = entity("user", BY_NAME);
const ADMIN: EntityModel = entity("admin", BY_NAME);

fn static_problems(entities: Vec<EntityModel>) -> Result<Vec<ConfigProblem>, Box<dyn Error>> {
    match Schema::new(TableModel::DEFAULT, entities) {
        Ok(_) => Err("the model validated, but problems were expected".into()),
        Err(error) => Ok(error.problems),
    }
}

#[test]
fn a_static_model_validates_and_normalises() -> TestResult {
    let schema = Schema::new(TableModel::DEFAULT, vec![USER, ADMIN])?;
    assert_eq!(
        bumps_of(&schema, "admin")?,
        [
            ShardBump::UNSHARDED,
            ShardBump::new(1_700_000_000_000, 2, 1),
            ShardBump::new(1_800_000_000_000, 3, 2),
        ]
    );
    Ok(())
}

#[test]
fn static_entity_tokens_are_unique() -> TestResult {
    let problems = static_problems(vec![USER, ADMIN, USER])?;
    assert_exactly(&problems, &[("entities.user", "used by two entities")]);
    Ok(())
}

#[test]
fn a_static_index_name_means_one_key_schema() -> TestResult {
    const BY_NAME_SHARDED: &[Index] = &[index("byName", "userPK", "name")];
    const OTHER: EntityModel = entity("other", BY_NAME_SHARDED);
    let problems = static_problems(vec![USER, OTHER])?;
    assert_exactly(
        &problems,
        &[(
            "entities.other.indexes.byName",
            "has hash key `userPK` and range key `name` in entity `other`, but entity `user` declares it with hash key `hashKey`",
        )],
    );
    let mut projected = ADMIN;
    let mut keys_only = index("byName", "hashKey", "name");
    keys_only.projection = Projection::KeysOnly;
    projected.indexes = Cow::Owned(vec![keys_only]);
    let problems = static_problems(vec![USER, projected])?;
    assert_exactly(
        &problems,
        &[(
            "entities.admin.indexes.byName",
            "projects keys only in entity `admin`, but entity `user` declares it projecting all attributes",
        )],
    );
    Ok(())
}

#[test]
fn a_static_table_has_at_most_20_indexes() -> TestResult {
    let entities: Vec<EntityModel> = (0..21)
        .map(|i| {
            let mut model = entity("placeholder", &[]);
            model.token = Cow::Owned(format!("e{i:02}"));
            let mut index = index("", "hashKey", "created");
            index.name = Cow::Owned(format!("i{i:02}"));
            model.indexes = Cow::Owned(vec![index]);
            model
        })
        .collect();
    let problems = static_problems(entities.clone())?;
    assert_exactly(
        &problems,
        &[("entities.e20.indexes.i20", "21st distinct index")],
    );
    // the same 20 names shared by several entities are 20 GSIs
    let mut shared = entities;
    shared[20].indexes = shared[0].indexes.clone();
    Schema::new(TableModel::DEFAULT, shared)?;
    Ok(())
}

const REPEATED_INDEX: &[Index] = &[
    index("byName", "hashKey", "name"),
    index("byName", "hashKey", "created"),
    index("byPK", "userPK", "rangeKey"),
];

#[test]
fn static_paths_follow_the_model() -> TestResult {
    let mut user = USER;
    user.properties = Cow::Owned(
        USER_PROPERTIES
            .iter()
            .cloned()
            .chain([Property::new("name", transcode::INT)])
            .collect(),
    );
    let mut nope = USER_GENERATED[0].clone();
    nope.components = Cow::Borrowed(&[Cow::Borrowed("nope")]);
    user.generated = Cow::Owned(vec![nope, USER_GENERATED[0].clone()]);
    user.indexes = Cow::Borrowed(REPEATED_INDEX);
    let problems = static_problems(vec![user])?;
    assert_exactly(
        &problems,
        &[
            (
                "entities.user.properties.name",
                "declared twice as a transcoded property",
            ),
            (
                "entities.user.generated.userPK",
                "declared twice as a sharded generated property",
            ),
            ("entities.user.generated.userPK.components.0", "`nope`"),
            ("entities.user.indexes.byName", "declared twice"),
        ],
    );
    Ok(())
}

// =============================================================================================
// the per-entity shape of seed 001

/// The example `Config` of seed 001 ("Entity Manager Configuration",
/// `shared/seeds/001_b276935b7e31e307.txt`, section "The Config Type"), transcribed from its
/// TypeScript literal: per-entity `elementTranscodes`, `generated` (with `atomic`, `sharded` and
/// `elements` or `components`, both spellings appear in the seed) and `indexes` as component
/// lists; `transcodes: defaultTranscodes` is the default and left out.
fn seed_001_config() -> Value {
    json!({
        "entities": {
            "email": {
                "defaultLimit": 10,
                "defaultPageSize": 10,
                "elementTranscodes": { "created": "timestamp", "email": "string", "userId": "string" },
                "generated": {
                    "userHashKey": { "atomic": true, "components": ["userId"], "sharded": true }
                },
                "indexes": {
                    "created": ["created", "hashKey", "rangeKey"],
                    "userCreated": ["created", "hashKey", "rangeKey", "userHashKey"]
                },
                "shardBumps": [{ "charBits": 1, "chars": 0, "timestamp": 0 }],
                "timestampProperty": "created",
                "uniqueProperty": "email"
            },
            "user": {
                "defaultLimit": 10,
                "defaultPageSize": 10,
                "elementTranscodes": {
                    "beneficiaryId": "string",
                    "created": "timestamp",
                    "firstName": "string",
                    "firstNameCanonical": "string",
                    "lastName": "string",
                    "lastNameCanonical": "string",
                    "phone": "string",
                    "updated": "timestamp",
                    "userId": "string"
                },
                "indexes": {
                    "created": ["created", "hashKey", "rangeKey"],
                    "firstName": ["firstNameRangeKey", "hashKey", "rangeKey"],
                    "lastName": ["hashKey", "lastNameRangeKey", "rangeKey"],
                    "phone": ["hashKey", "phone", "rangeKey"],
                    "updated": ["hashKey", "rangeKey", "updated"],
                    "userBeneficiaryCreated": ["created", "hashKey", "rangeKey", "userBeneficiaryHashKey"],
                    "userBeneficiaryFirstName": ["firstNameRangeKey", "hashKey", "rangeKey", "userBeneficiaryHashKey"],
                    "userBeneficiaryLastName": ["hashKey", "lastNameRangeKey", "rangeKey", "userBeneficiaryHashKey"],
                    "userBeneficiaryPhone": ["hashKey", "phone", "rangeKey", "userBeneficiaryHashKey"],
                    "userBeneficiaryUpdated": ["hashKey", "rangeKey", "updated", "userBeneficiaryHashKey"],
                    "userCreated": ["created", "hashKey", "rangeKey", "userHashKey"],
                    "userUpdated": ["hashKey", "rangeKey", "updated", "userHashKey"]
                },
                "generated": {
                    "firstNameRangeKey": {
                        "atomic": true,
                        "elements": ["firstNameCanonical", "lastNameCanonical", "created"],
                        "sharded": false
                    },
                    "lastNameRangeKey": {
                        "atomic": true,
                        "elements": ["lastNameCanonical", "firstNameCanonical", "created"],
                        "sharded": false
                    },
                    "userBeneficiaryHashKey": { "atomic": true, "components": ["beneficiaryId"], "sharded": true },
                    "userHashKey": { "atomic": true, "components": ["userId"], "sharded": true }
                },
                "timestampProperty": "created",
                "uniqueProperty": "userId"
            }
        },
        "generatedKeyDelimiter": "|",
        "generatedValueDelimiter": "#",
        "hashKey": "hashKey",
        "rangeKey": "rangeKey",
        "shardKeyDelimiter": "!",
        "throttle": 10
    })
}

fn item_of(value: Value) -> Result<entity_manager::Item, Box<dyn Error>> {
    Ok(serde_dynamo::to_item(value)?)
}

fn s(value: &str) -> entity_manager::AttributeValue {
    entity_manager::AttributeValue::S(value.to_owned())
}

#[test]
fn the_seed_001_config_loads_with_per_entity_lists() -> TestResult {
    let schema = Schema::from_ts_config(&seed_001_config(), ShardSpace::Product)?;
    let user = schema.entity("user")?.model();
    let email = schema.entity("email")?.model();
    assert_eq!(user.properties.len(), 9);
    assert_eq!(email.properties.len(), 3);
    // each entity has its own generated properties and indexes, not the union
    assert_eq!(
        user.generated.iter().map(|g| &*g.name).collect::<Vec<_>>(),
        [
            "firstNameRangeKey",
            "lastNameRangeKey",
            "userBeneficiaryHashKey",
            "userHashKey"
        ]
    );
    assert_eq!(
        email.generated.iter().map(|g| &*g.name).collect::<Vec<_>>(),
        ["userHashKey"]
    );
    assert_eq!(user.indexes.len(), 12);
    assert_eq!(email.indexes.len(), 2);
    let first_name = user.generated_property("firstNameRangeKey");
    assert_eq!(
        first_name.map(|g| (g.kind, g.atomic)),
        Some((GeneratedKind::Unsharded, true))
    );
    // index component lists: the sharded generated property is the hash key, the other
    // non-table-key component the range key; table keys fill in for a missing side
    let pair = |token: &str, index: &str| -> Result<(String, String), Box<dyn Error>> {
        let index = schema
            .entity(token)?
            .index(index)
            .map_err(|e| e.to_string())?;
        Ok((index.hash_key.to_string(), index.range_key.to_string()))
    };
    assert_eq!(
        pair("user", "created")?,
        ("hashKey".into(), "created".into())
    );
    assert_eq!(
        pair("user", "lastName")?,
        ("hashKey".into(), "lastNameRangeKey".into())
    );
    assert_eq!(
        pair("user", "userBeneficiaryFirstName")?,
        ("userBeneficiaryHashKey".into(), "firstNameRangeKey".into())
    );
    assert_eq!(
        pair("email", "userCreated")?,
        ("userHashKey".into(), "created".into())
    );
    assert!(email.index("firstName").is_none());
    Ok(())
}

/// Keys derived by hand from the seeds' rules: hash key `<token>!<suffix>` with an empty suffix
/// (both entities keep the default `chars: 0` schedule), range key `<unique>#<value>`, a sharded
/// generated property `<hash key>|<component>#<value>…`, an unsharded one
/// `<component>#<value>|…`, `timestamp` writing 13 digits.
#[test]
fn the_seed_001_config_gives_the_keys_of_the_seed_rules() -> TestResult {
    let schema = Schema::from_ts_config(&seed_001_config(), ShardSpace::Product)?;
    let user = schema.entity("user")?;
    let keyed = user.add_keys(&item_of(json!({
        "userId": "u1",
        "created": 1_700_000_000_000u64,
        "beneficiaryId": "b7",
        "firstNameCanonical": "jane",
        "lastNameCanonical": "doe"
    }))?)?;
    assert_eq!(keyed["hashKey"], s("user!"));
    assert_eq!(keyed["rangeKey"], s("userId#u1"));
    assert_eq!(keyed["userHashKey"], s("user!|userId#u1"));
    assert_eq!(keyed["userBeneficiaryHashKey"], s("user!|beneficiaryId#b7"));
    assert_eq!(
        keyed["firstNameRangeKey"],
        s("firstNameCanonical#jane|lastNameCanonical#doe|created#1700000000000")
    );
    assert_eq!(
        keyed["lastNameRangeKey"],
        s("lastNameCanonical#doe|firstNameCanonical#jane|created#1700000000000")
    );
    // atomic: a missing component gives no value (seed 001, "Generated Properties")
    let partial = user.add_keys(&item_of(json!({
        "userId": "u1",
        "created": 1_700_000_000_000u64,
        "firstNameCanonical": "jane"
    }))?)?;
    assert!(!partial.contains_key("firstNameRangeKey"));
    assert!(!partial.contains_key("userBeneficiaryHashKey"));

    let email = schema.entity("email")?;
    let keyed = email.add_keys(&item_of(json!({
        "email": "me@example.com",
        "userId": "u1",
        "created": 1_700_000_000_000u64
    }))?)?;
    assert_eq!(keyed["hashKey"], s("email!"));
    assert_eq!(keyed["rangeKey"], s("email#me@example.com"));
    assert_eq!(keyed["userHashKey"], s("email!|userId#u1"));
    // the user's generated properties are not the email's
    assert!(!keyed.contains_key("firstNameRangeKey"));
    Ok(())
}

#[test]
fn seed_001_shard_bumps_shard_the_per_entity_shape() -> TestResult {
    // one bump of 1 character in radix 4: suffix = string-hash("u1") % (1 × 4) under `product`
    let config = with(
        seed_001_config(),
        "entities/user/shardBumps",
        json!([{ "timestamp": 0, "charBits": 2, "chars": 1 }]),
    );
    let schema = Schema::from_ts_config(&config, ShardSpace::Product)?;
    // string-hash("u1"), by hand, last unit first: (5381·33) ^ '1'(49) = 177573 ^ 49 = 177556;
    // (177556·33) ^ 'u'(117) = 5859348 ^ 117 = 5859425; 5859425 % 4 = 1
    assert_eq!(
        entity_manager::shard::string_hash("u1"),
        5_859_425,
        "hand computation"
    );
    let keyed = schema.entity("user")?.add_keys(&item_of(json!({
        "userId": "u1",
        "created": 1_700_000_000_000u64
    }))?)?;
    assert_eq!(keyed["hashKey"], s("user!1"));
    assert_eq!(keyed["userHashKey"], s("user!1|userId#u1"));
    Ok(())
}

#[test]
fn mixing_the_two_shapes_is_a_problem_at_every_per_entity_key() -> TestResult {
    let config = with(
        with(
            base(),
            "entities/user/generated",
            json!({ "x": { "elements": ["userId"] } }),
        ),
        "entities/user/elementTranscodes",
        json!({ "userId": "string" }),
    );
    assert_problems(
        &config,
        &[
            ("entities.user.generated", "per-entity config shape"),
            ("entities.user.elementTranscodes", "per-entity config shape"),
        ],
    )
}

#[test]
fn a_broken_per_entity_config_reports_every_problem_at_once() -> TestResult {
    let mut config = seed_001_config();
    config = with(
        config,
        "entities/user/generated/userHashKey",
        json!({ "atomic": false, "elements": ["userId"], "components": ["userId"], "sharded": true }),
    );
    config = with(
        config,
        "entities/user/generated/firstNameRangeKey/shraded",
        json!(true),
    );
    config = with(
        config,
        "entities/user/indexes/both",
        json!(["hashKey", "phone", "updated"]),
    );
    config = with(config, "entities/user/indexes/empty", json!([]));
    config = with(
        config,
        "entities/email/elementTranscodes/email",
        json!("strnig"),
    );
    config = with(
        config,
        "entities/user/generated/lastNameRangeKey/atomic",
        json!("yes"),
    );
    config = without(config, "entities/user/elementTranscodes/userId");
    let problems = problems_of(&config)?;
    assert_exactly(
        &problems,
        &[
            ("entities.user.generated.userHashKey.components", "not both"),
            (
                "entities.user.generated.userHashKey.atomic",
                "always atomic",
            ),
            (
                "entities.user.generated.firstNameRangeKey.shraded",
                "`sharded`",
            ),
            ("entities.user.indexes.both", "one range key"),
            ("entities.user.indexes.empty", "needs its key components"),
            (
                "entities.email.elementTranscodes.email",
                "unknown transcode",
            ),
            (
                "entities.user.generated.lastNameRangeKey.atomic",
                "expected true or false",
            ),
            ("entities.user.uniqueProperty", "userId"),
            ("entities.user.generated.userHashKey.components.0", "userId"),
        ],
    );
    Ok(())
}

// =============================================================================================
// export

#[macro_use]
mod user_service;

mod derived {
    //! The seed docs' User service, declared with the derives.
    use entity_manager::{Entity, Table};
    use serde::{Deserialize, Serialize};

    /// The User service table.
    #[derive(Table, Debug)]
    #[table(entities(User, Email))]
    pub(crate) struct UserService;

    user_service!(User, Email, UserService);
}

/// A key attribute and its value, if written.
type KeyValue = (String, Option<entity_manager::AttributeValue>);

/// The keys (hash key, range key, generated properties) the entity `token` of `schema` writes
/// for `item`: only the ones the entity declares.
fn declared_keys(
    schema: &Schema,
    declared: &EntityModel,
    item: &entity_manager::Item,
) -> Result<Vec<KeyValue>, Box<dyn Error>> {
    let keyed = schema.entity(&declared.token)?.add_keys(item)?;
    let table = schema.table();
    Ok([&*table.hash_key, &*table.range_key]
        .into_iter()
        .chain(declared.generated.iter().map(|g| &*g.name))
        .map(|name| (name.to_owned(), keyed.get(name).cloned()))
        .collect())
}

#[test]
fn the_derived_user_service_exports_a_config_that_gives_the_same_keys() -> TestResult {
    use entity_manager::Table as _;
    let schema = derived::UserService::schema()?;
    let exported = schema.to_ts_config()?;
    // the shape the TypeScript library reads
    assert_eq!(
        exported["generatedProperties"]["sharded"]["userHashKey"],
        json!(["userId"])
    );
    assert_eq!(
        exported["generatedProperties"]["unsharded"]["firstNameRangeKey"],
        json!(["firstNameCanonical", "lastNameCanonical", "created"])
    );
    assert_eq!(
        exported["indexes"]["userBeneficiaryFirstName"],
        json!({ "hashKey": "userBeneficiaryHashKey", "rangeKey": "firstNameRangeKey", "projections": [] })
    );
    assert_eq!(
        exported["indexes"]["userBeneficiaryCreated"]["projections"],
        json!(["someProperty", "someOtherProperty"])
    );
    assert_eq!(
        exported["entities"]["user"]["shardBumps"],
        json!([
            { "timestamp": 0, "charBits": 1, "chars": 0 },
            { "timestamp": 1_726_880_933_000u64, "charBits": 2, "chars": 1 },
            { "timestamp": 1_735_689_600_000u64, "charBits": 3, "chars": 2 }
        ])
    );
    assert_eq!(exported["propertyTranscodes"]["created"], "timestamp");
    // the derived table has the native profile; a TypeScript config names it
    let reloaded = Schema::from_ts_config(&exported, entity_manager::model::Profile::Native)?;
    assert_eq!(reloaded.table(), schema.table());
    let records = [
        (
            "user",
            json!({ "userId": "wf5yU_5f63gqauSOLpP5O", "created": 1_726_880_933_000u64,
                    "updated": 1_726_880_933_000u64, "beneficiaryId": "b1", "firstName": "Jason",
                    "firstNameCanonical": "jason", "lastName": "Williscroft",
                    "lastNameCanonical": "williscroft", "phone": "+15555555555" }),
        ),
        (
            "user",
            json!({ "userId": "u-2", "created": 1_740_000_000_000u64, "updated": 1u64,
                    "firstName": "A", "firstNameCanonical": "a", "lastName": "B",
                    "lastNameCanonical": "b" }),
        ),
        (
            "email",
            json!({ "email": "me@karmanivero.us", "created": 1_731_000_000_000u64,
                    "userId": "wf5yU_5f63gqauSOLpP5O" }),
        ),
    ];
    for (token, record) in records {
        let item = item_of(record)?;
        let declared = schema.entity(token)?.model();
        let before = declared_keys(schema, declared, &item)?;
        assert!(
            before[0].1.is_some() && before[1].1.is_some(),
            "{token}: {before:?}"
        );
        assert_eq!(
            declared_keys(&reloaded, declared, &item)?,
            before,
            "{token}"
        );
    }
    Ok(())
}

fn export_entity(token: &'static str, generated: Vec<GeneratedProperty>) -> EntityModel {
    let mut entity = EntityModel::new(token, "id", "created");
    entity.properties = Cow::Owned(vec![
        Property::new("id", transcode::STRING),
        Property::new("created", transcode::TIMESTAMP),
        Property::new("name", transcode::STRING),
    ]);
    entity.generated = Cow::Owned(generated);
    entity
}

fn generated(name: &'static str, kind: GeneratedKind, atomic: bool) -> GeneratedProperty {
    const NAME: &[Name] = &[Cow::Borrowed("name")];
    let mut property = match kind {
        GeneratedKind::Sharded => GeneratedProperty::sharded(name, NAME),
        GeneratedKind::Unsharded => GeneratedProperty::unsharded(name, NAME, atomic),
    };
    // a sharded property declared non-atomic: a mistake only a hand-built model can make
    property.atomic = atomic;
    property
}

#[test]
fn what_typescript_cannot_express_is_reported_at_once() -> TestResult {
    let mut other = export_entity(
        "b",
        vec![generated("nameKey", GeneratedKind::Unsharded, false)],
    );
    other.properties = Cow::Owned(vec![
        Property::new("id", transcode::STRING),
        Property::new("created", transcode::TIMESTAMP),
        Property::new("name", transcode::INT),
    ]);
    let schema = Schema::new(
        TableModel::DEFAULT,
        vec![
            export_entity(
                "a",
                vec![
                    generated("nameKey", GeneratedKind::Unsharded, true),
                    generated("nameHash", GeneratedKind::Sharded, true),
                ],
            ),
            other,
        ],
    )?;
    let Err(error) = schema.to_ts_config() else {
        return Err("the export should fail".into());
    };
    assert_exactly(
        &error.problems,
        &[
            ("generatedProperties.unsharded.nameKey", "cannot express"),
            ("propertyTranscodes.name", "different names"),
        ],
    );
    Ok(())
}

#[test]
fn generated_properties_of_one_entity_go_to_every_entity_on_export() -> TestResult {
    // PRODUCT.md §9 item 7: TypeScript gives every entity every generated property.
    let schema = Schema::new(
        TableModel::DEFAULT,
        vec![
            export_entity(
                "a",
                vec![generated("nameHash", GeneratedKind::Sharded, true)],
            ),
            export_entity("b", Vec::new()),
        ],
    )?;
    let reloaded = Schema::from_ts_config(&schema.to_ts_config()?, ShardSpace::Product)?;
    let b = reloaded.entity("b")?.model();
    assert!(b.generated_property("nameHash").is_some());
    let item = item_of(json!({ "id": "x", "created": 5u64, "name": "n" }))?;
    let a = schema.entity("a")?.model();
    assert_eq!(
        declared_keys(&reloaded, a, &item)?,
        declared_keys(&schema, a, &item)?
    );
    Ok(())
}

mod round_trip {
    use super::*;
    use proptest::prelude::*;

    const NAMES: [&str; 5] = ["p0", "p1", "p2", "p3", "p4"];
    const TRANSCODES: [&str; 6] = ["string", "int", "fix6", "timestamp", "boolean", "bigint20"];

    /// A random valid config in the table-wide shape.
    fn config() -> impl Strategy<Value = Value> {
        let bumps = prop::collection::btree_map(1u64..10_000_000_000_000, (1u8..=5, 1u8..=4), 0..4);
        let entity = (bumps, 1usize..50, 1usize..50);
        (
            prop::collection::vec(entity, 1..4),
            prop::collection::vec(0usize..4, 5),
            prop::collection::vec(prop::sample::subsequence(NAMES.to_vec(), 1..3), 0..3),
            prop::collection::vec(prop::sample::subsequence(NAMES.to_vec(), 1..3), 0..3),
            prop::sample::select(vec![("|", "#", "!"), ("~", ":", "$")]),
            1usize..20,
        )
            .prop_map(
                |(entities, transcodes, sharded, unsharded, delims, throttle)| {
                    let mut property_transcodes = serde_json::Map::new();
                    property_transcodes.insert("id".into(), json!("string"));
                    property_transcodes.insert("created".into(), json!("timestamp"));
                    for (name, t) in NAMES.iter().zip(&transcodes) {
                        property_transcodes.insert((*name).into(), json!(TRANSCODES[*t]));
                    }
                    let mut entity_map = serde_json::Map::new();
                    for (i, (bumps, limit, page)) in entities.into_iter().enumerate() {
                        let mut chars = 0u8;
                        let bumps: Vec<Value> = bumps
                            .into_iter()
                            .map(|(timestamp, (char_bits, step))| {
                                chars += step;
                                json!({ "timestamp": timestamp, "charBits": char_bits, "chars": chars })
                            })
                            .collect();
                        entity_map.insert(
                            format!("e{i}"),
                            json!({ "uniqueProperty": "id", "timestampProperty": "created",
                                    "shardBumps": bumps, "defaultLimit": limit,
                                    "defaultPageSize": page }),
                        );
                    }
                    let named = |lists: Vec<Vec<&str>>, prefix: &str| -> serde_json::Map<String, Value> {
                        lists
                            .into_iter()
                            .enumerate()
                            .map(|(i, c)| (format!("{prefix}{i}"), json!(c)))
                            .collect()
                    };
                    let sharded = named(sharded, "hk");
                    let unsharded = named(unsharded, "rk");
                    let mut indexes = serde_json::Map::new();
                    for hash in sharded.keys().map(String::as_str).chain(["pk"]) {
                        for range in unsharded.keys().map(String::as_str).chain(["created"]) {
                            indexes.insert(
                                format!("{hash}_{range}"),
                                json!({ "hashKey": hash, "rangeKey": range }),
                            );
                        }
                    }
                    json!({
                        "hashKey": "pk", "rangeKey": "sk",
                        "generatedKeyDelimiter": delims.0, "generatedValueDelimiter": delims.1,
                        "shardKeyDelimiter": delims.2, "throttle": throttle,
                        "entities": entity_map, "propertyTranscodes": property_transcodes,
                        "generatedProperties": { "sharded": sharded, "unsharded": unsharded },
                        "indexes": indexes
                    })
                },
            )
    }

    proptest! {
        #[test]
        fn load_export_load_gives_the_same_model(config in config(), power in any::<bool>()) {
            let space = if power { ShardSpace::Power } else { ShardSpace::Product };
            let schema = Schema::from_ts_config(&config, space)
                .map_err(|e| TestCaseError::fail(format!("{e}\n{config:#}")))?;
            let exported = schema.to_ts_config().map_err(|e| TestCaseError::fail(e.to_string()))?;
            let reloaded = Schema::from_ts_config(&exported, space)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(reloaded.table(), schema.table());
            prop_assert_eq!(reloaded.entities(), schema.entities());
            // and exporting again is a fixed point
            let again = reloaded.to_ts_config().map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(again, exported);
        }
    }
}

/// A transcode of a user's own: upper-cased strings.
struct Upper;

impl transcode::Transcoder for Upper {
    fn name(&self) -> &'static str {
        "upper"
    }
    fn key_type(&self) -> Option<entity_manager::store::KeyType> {
        Some(entity_manager::store::KeyType::S)
    }
    fn encode(
        &self,
        value: &entity_manager::AttributeValue,
    ) -> Result<String, transcode::TranscodeError> {
        transcode::STRING.encode(value).map(|s| s.to_uppercase())
    }
    fn decode(
        &self,
        encoded: &str,
    ) -> Result<entity_manager::AttributeValue, transcode::TranscodeError> {
        transcode::STRING.decode(encoded)
    }
}

#[test]
fn a_transcode_of_your_own_cannot_be_exported() -> TestResult {
    let mut model = export_entity("a", Vec::new());
    model.properties = Cow::Owned(vec![
        Property::new("id", &Upper),
        Property::new("created", transcode::TIMESTAMP),
    ]);
    let schema = Schema::new(TableModel::DEFAULT, vec![model])?;
    let Err(error) = schema.to_ts_config() else {
        return Err("the export should fail".into());
    };
    assert_exactly(
        &error.problems,
        &[("propertyTranscodes.id", "`upper`, which is not built in")],
    );
    Ok(())
}
