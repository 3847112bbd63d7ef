//! Issue 47: the profile a store infers from a table's records is the one that wrote their
//! keys, or "cannot tell"; never another. Random configurations (shard schedules, string or
//! numeric unique values, numeric and string key components) and random records, written in
//! every profile, inferred by a service loaded with any profile.

use entity_manager::model::Profile;
use entity_manager::store::Inference;
use entity_manager::{AttributeValue, Item, Schema};
use proptest::prelude::*;
use serde_json::{Value, json};

/// A configuration: one entity with the given shard schedule, unique value type and a
/// generated range key over a numeric and a string component; one more entity with a sharded
/// generated property.
fn config(bumps: &[(u64, u32, u32)], numeric_unique: bool) -> Value {
    let bumps: Vec<Value> = bumps
        .iter()
        .map(|(t, bits, chars)| json!({ "timestamp": t, "charBits": bits, "chars": chars }))
        .collect();
    json!({
        "hashKey": "hashKey",
        "rangeKey": "rangeKey",
        "entities": {
            "player": {
                "uniqueProperty": "playerId",
                "timestampProperty": "created",
                "shardBumps": bumps
            },
            "team": {
                "uniqueProperty": "teamId",
                "timestampProperty": "created",
                "shardBumps": [{ "timestamp": 0, "charBits": 1, "chars": 3 }]
            }
        },
        "generatedProperties": {
            "sharded": { "teamHashKey": ["teamId"] },
            "unsharded": { "scoreRangeKey": ["score", "name", "created"] }
        },
        "indexes": {
            "score": { "hashKey": "hashKey", "rangeKey": "scoreRangeKey" },
            "team": { "hashKey": "teamHashKey", "rangeKey": "created" }
        },
        "propertyTranscodes": {
            "playerId": if numeric_unique { "int" } else { "string" },
            "teamId": "string",
            "created": "timestamp",
            "score": "int",
            "name": "string"
        }
    })
}

fn profile() -> impl Strategy<Value = Profile> {
    prop_oneof![
        Just(Profile::Native),
        Just(Profile::Npm6_14),
        Just(Profile::Upstream8)
    ]
}

/// A record: its entity, unique value, timestamp, score (maybe absent) and name.
type Record = (bool, u32, u64, Option<i64>, String);

fn record() -> impl Strategy<Value = Record> {
    (
        any::<bool>(),
        any::<u32>(),
        0u64..3_000_000_000_000,
        proptest::option::of(-1_000_000i64..1_000_000),
        "[a-z]{0,4}",
    )
}

fn item(value: Value) -> Result<Item, TestCaseError> {
    serde_dynamo::to_item(value).map_err(|e| TestCaseError::fail(e.to_string()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Whatever the configuration, records and the inferring service's own profile: the
    /// records' writer is admitted, and the profile shown, if any, is the writer's.
    #[test]
    fn the_inferred_profile_is_the_writers_or_none(
        bumps in proptest::collection::vec((0u64..3_000_000_000_000, 1u32..=5, 0u32..=4), 0..3),
        numeric_unique in any::<bool>(),
        writer in profile(),
        reader in profile(),
        records in proptest::collection::vec(record(), 0..12),
    ) {
        let config = config(&bumps, numeric_unique);
        let Ok(writing) = Schema::from_ts_config(&config, writer) else {
            // a schedule the rules refuse (two bumps at one timestamp, a decreasing space)
            return Ok(());
        };
        let reading = Schema::from_ts_config(&config, reader)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut stored = Vec::new();
        for (is_team, id, created, score, name) in &records {
            let mut value = if *is_team {
                json!({ "teamId": format!("t{id}"), "created": created, "name": name })
            } else if numeric_unique {
                json!({ "playerId": id, "created": created, "name": name })
            } else {
                json!({ "playerId": format!("p{id}"), "created": created, "name": name })
            };
            if let Some(score) = score {
                value["score"] = json!(score);
            }
            let entity = writing
                .entity(if *is_team { "team" } else { "player" })
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            stored.push(entity.add_keys(&item(value)?).map_err(|e| TestCaseError::fail(e.to_string()))?);
        }
        // an item of no entity, and the keys of nothing known, tell nothing
        let mut foreign = Item::default();
        foreign.insert("hashKey".into(), AttributeValue::S("invoice!0".into()));
        foreign.insert("rangeKey".into(), AttributeValue::S("invoiceId#i1".into()));
        stored.push(foreign);

        let inference = reading.infer_profile(&stored);
        prop_assert!(inference.admits(writer), "{} not admitted: {}", writer, inference);
        prop_assert!(
            inference.shown().is_none_or(|shown| shown == writer),
            "{} shown for records of {}", inference, writer
        );
        prop_assert_eq!(inference.read(), stored.len());
        match &inference {
            Inference::Empty { .. } => prop_assert!(records.is_empty(), "{}", inference),
            Inference::Reproduced { records: telling, .. } => prop_assert_eq!(*telling, records.len()),
            Inference::Unexplained { .. } => prop_assert!(false, "{}", inference),
            _ => prop_assert!(false, "an inference this test does not know: {}", inference),
        }
    }
}

/// The inference tells each profile from the others when the records hold what differs
/// (numbers inside keys: native; shards of more than one character: product against power;
/// numeric unique values: their hashing).
#[test]
fn records_that_differ_by_profile_show_their_writer() -> Result<(), Box<dyn std::error::Error>> {
    let config = config(&[(0, 2, 2)], true);
    for writer in Profile::ALL {
        let writing = Schema::from_ts_config(&config, writer)?;
        let stored = (0i64..30)
            .map(|i| {
                let value = json!({ "playerId": 1000 + i, "created": 1_700_000_000_000i64 + i, "score": i - 5, "name": "ann" });
                Ok(writing.entity("player")?.add_keys(&serde_dynamo::to_item(value)?)?)
            })
            .collect::<Result<Vec<Item>, Box<dyn std::error::Error>>>()?;
        for reader in Profile::ALL {
            let inference = Schema::from_ts_config(&config, reader)?.infer_profile(&stored);
            assert_eq!(
                inference.shown(),
                Some(writer),
                "{reader} reading {writer}'s: {inference}"
            );
        }
        // half of them rewritten by another profile: no one profile reproduces them all
        let other = Profile::ALL
            .into_iter()
            .find(|p| *p != writer)
            .ok_or("one profile")?;
        let mut mixed = stored.clone();
        let rewriting = Schema::from_ts_config(&config, other)?;
        for item in mixed.iter_mut().step_by(2) {
            *item = rewriting.entity("player")?.refresh_keys(item)?;
        }
        let inference = writing.infer_profile(&mixed);
        assert!(
            matches!(inference, Inference::Unexplained { .. }),
            "{inference}"
        );
        assert!(!inference.admits(writer) && inference.shown().is_none());
    }
    Ok(())
}
