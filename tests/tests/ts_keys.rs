//! The TypeScript-compatible key mode against the npm release itself: both libraries key the same
//! items (ints, negatives, `fix6` decimals, booleans, timestamps that are not 13 digits, empty
//! strings) under the same JSON config, and the keys must be identical; each reads the other's.
//!
//! Runs when `EM_TS_NODE_PATH` is set (`.ci/run` sets it with `tests/ts-bench/install.sh`); skips
//! with a printed reason otherwise, except under `CI=true`, where it fails.

use std::process::Command;

use entity_manager::model::Profile;
use entity_manager::{AttributeValue, Error, Item, Schema};
use serde_json::{Value, json};

mod ts_support;

use ts_support::{Players, dir, node_path};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const KEYS: [&str; 5] = [
    "hashKey",
    "rangeKey",
    "teamHashKey",
    "scoreRangeKey",
    "ratingRangeKey",
];

/// Deterministic players covering the values whose key form differs between the modes.
fn players() -> Vec<Value> {
    let mut source = Players::new();
    (0..400)
        .map(|n| {
            let id = format!("p{}", source.next() % 100_000);
            source.player(n, &id).0
        })
        .collect()
}

/// TypeScript's `addKeys` of every player, from `tests/ts-bench/addkeys.mjs`.
fn typescript_keyed(
    node_path: &str,
    players: &[Value],
) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let scratch = std::env::temp_dir().join(format!("em-ts-keys-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let items = scratch.join("players.jsonl");
    let keyed = scratch.join("keyed.jsonl");
    std::fs::write(
        &items,
        players
            .iter()
            .map(|p| p.to_string() + "\n")
            .collect::<String>(),
    )?;
    let out = Command::new("node")
        .env("NODE_PATH", node_path)
        .arg(dir().join("addkeys.mjs"))
        .arg(dir().join("players.json"))
        .arg(&items)
        .arg(&keyed)
        .arg("0")
        .arg("player")
        .output()?;
    if !out.status.success() {
        return Err(format!("node failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    let text = std::fs::read_to_string(&keyed)?;
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(text
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?)
}

fn config() -> Result<Value, Box<dyn std::error::Error>> {
    Ok(serde_json::from_str(&std::fs::read_to_string(
        dir().join("players.json"),
    )?)?)
}

fn text(value: &Value) -> Option<String> {
    value.as_str().map(str::to_owned)
}

#[test]
fn npm_profile_writes_and_reads_the_keys_typescript_writes() -> TestResult {
    let Some(node_path) = node_path() else {
        return Ok(());
    };
    let players = players();
    let theirs = typescript_keyed(&node_path, &players)?;
    assert_eq!(theirs.len(), players.len());
    let npm = Schema::from_ts_config(&config()?, Profile::Npm6_14)?;
    let ours = npm.entity("player")?;
    let mut compared = 0;
    for (player, ts) in players.iter().zip(&theirs) {
        let item: Item = serde_dynamo::to_item(player.clone())?;
        let keyed = ours.add_keys(&item)?;
        for key in KEYS {
            let mine = match keyed.get(key) {
                Some(AttributeValue::S(s)) => Some(s.clone()),
                _ => None,
            };
            assert_eq!(mine, text(&ts[key]), "{key} of {player}");
            compared += 1;
        }
        // Ours reads theirs back: every component value of their generated keys.
        for key in ["scoreRangeKey", "ratingRangeKey"] {
            let Some(encoded) = ts[key].as_str() else {
                continue;
            };
            let decoded = ours.decode_generated(encoded)?;
            for (name, value) in decoded.iter() {
                let original: Item = serde_dynamo::to_item(player.clone())?;
                let want = original
                    .get(name)
                    .ok_or_else(|| format!("{name} decoded from {encoded} but not in {player}"))?;
                assert!(
                    same_value(value, want),
                    "{name}: {value:?} from {encoded}, want {want:?}"
                );
            }
        }
    }
    println!(
        "npm 6.14.0 and Profile::Npm6_14: {compared} keys of {} players identical",
        players.len()
    );
    Ok(())
}

/// Numbers compare by value (`5000` and `5000.0`, `1e-6` and `0.000001` are one number).
fn same_value(a: &AttributeValue, b: &AttributeValue) -> bool {
    match (a, b) {
        (AttributeValue::N(x), AttributeValue::N(y)) => {
            x.parse::<f64>().ok() == y.parse::<f64>().ok()
        }
        _ => a == b,
    }
}

/// In the default mode, a key TypeScript wrote with a number is a typed error naming both modes:
/// never a wrong value, never a silent miss.
#[test]
fn the_default_mode_reports_typescript_keys_as_a_mode_mismatch() -> TestResult {
    let Some(node_path) = node_path() else {
        return Ok(());
    };
    let players = players();
    let theirs = typescript_keyed(&node_path, &players)?;
    let native = Schema::from_ts_config(&config()?, Profile::Native)?;
    let ours = native.entity("player")?;
    let mut mismatches = 0;
    for (player, ts) in players.iter().zip(&theirs) {
        // a score other than a 13-digit-like timestamp never reads the same in both modes
        if player.get("score").is_none() {
            continue;
        }
        let Some(encoded) = ts["scoreRangeKey"].as_str() else {
            continue;
        };
        match ours.decode_generated(encoded) {
            Err(Error::KeyModeMismatch {
                property,
                table,
                written,
                ..
            }) => {
                assert_eq!(
                    (table.as_str(), written.as_str()),
                    ("transcoded", "typescript")
                );
                assert!(property == "score" || property == "created", "{property}");
                mismatches += 1;
            }
            other => panic!("{encoded}: expected a key mode mismatch, got {other:?}"),
        }
    }
    assert!(mismatches > 100, "{mismatches}");
    Ok(())
}

/// Upstream v8 hashes a numeric unique value as the constant 5381 (`string-hash` of a
/// non-string) and writes raw values; npm 6.14.0 hashes its decimal string.
#[test]
fn profiles_pin_the_numeric_hash() -> TestResult {
    let config = json!({
        "hashKey": "hashKey",
        "rangeKey": "rangeKey",
        "entities": { "order": {
            "uniqueProperty": "orderId",
            "timestampProperty": "created",
            "shardBumps": [{ "timestamp": 0, "charBits": 2, "chars": 2 }]
        } },
        "propertyTranscodes": { "orderId": "int", "created": "timestamp" }
    });
    let item: Item = serde_dynamo::to_item(json!({ "orderId": 12345, "created": 7 }))?;
    // `power`: 4^2 = 16 shards; 5381 % 16 = 5, two base-4 digits: `11`
    let upstream = Schema::from_ts_config(&config, Profile::Upstream8)?;
    let keyed = upstream.entity("order")?.add_keys(&item)?;
    assert_eq!(keyed["hashKey"], AttributeValue::S("order!11".into()));
    assert_eq!(keyed["rangeKey"], AttributeValue::S("orderId#12345".into()));
    // `product`: 2 × 4 = 8 shards over string-hash("12345"), computed here from its definition
    let mut h: u32 = 5381;
    for unit in "12345".encode_utf16().collect::<Vec<_>>().iter().rev() {
        h = h.wrapping_mul(33) ^ u32::from(*unit);
    }
    let shard = h % 8;
    let npm = Schema::from_ts_config(&config, Profile::Npm6_14)?;
    let keyed = npm.entity("order")?.add_keys(&item)?;
    assert_eq!(
        keyed["hashKey"],
        AttributeValue::S(format!("order!{}{}", shard / 4, shard % 4))
    );
    // and our default keeps transcoding the range key
    let native = Schema::from_ts_config(&config, Profile::Native)?;
    let keyed = native.entity("order")?.add_keys(&item)?;
    assert_eq!(
        keyed["rangeKey"],
        AttributeValue::S("orderId#p0000000000012345".into())
    );
    Ok(())
}

mod derived {
    use entity_manager::model::{KeyMode, NumericHash, ShardSpace, TableModel};
    use entity_manager::{Entity, EntityExt, Table};
    use serde::{Deserialize, Serialize};

    #[derive(Table)]
    #[table(entities(Score), profile = npm6_14)]
    struct Scores;

    #[derive(Entity, Serialize, Deserialize, Debug, PartialEq)]
    #[serde(rename_all = "camelCase")]
    #[entity(table = Scores, unique = player_id, timestamp = created)]
    #[generated(name = score_range_key, components = [points, created])]
    #[index(name = "score", range = score_range_key)]
    struct Score {
        #[transcode("string")]
        player_id: String,
        #[transcode("timestamp")]
        created: u64,
        #[transcode("int")]
        points: i64,
    }

    #[test]
    fn the_table_derive_takes_a_profile() -> Result<(), entity_manager::Error> {
        let model: &TableModel = Scores::model();
        assert_eq!(
            (model.shard_space, model.key_mode, model.numeric_hash),
            (
                ShardSpace::Product,
                KeyMode::TypeScript,
                NumericHash::Decimal
            )
        );
        let item = Score {
            player_id: "p".into(),
            created: 5_000,
            points: -42,
        }
        .to_item()?;
        assert_eq!(
            item["scoreRangeKey"],
            entity_manager::AttributeValue::S("points#-42|created#5000".into())
        );
        assert_eq!(
            Score::from_item(&item)?,
            Score {
                player_id: "p".into(),
                created: 5_000,
                points: -42
            }
        );
        Ok(())
    }
}
