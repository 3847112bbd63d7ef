//! The write path against the TypeScript Entity Manager, side by side in one run: keys added to
//! the same items under the same configuration (the seed's User service, shards 1 + 4 + 16).
//!
//! ```text
//! export EM_TS_NODE_PATH=$(bash tests/ts-bench/install.sh)   # npm 6.14.0, outside the repo
//! cargo bench -p entity-manager-tests --bench write_path
//! ```
//!
//! Our three write paths, each on the same 2,000 users:
//!
//! - `add_keys`: a keyed copy of a prepared item, as TypeScript's `addKeys` returns;
//! - `add_keys_mut`: the keys added to the item itself (the item copies are made before the
//!   clock starts);
//! - `to_item`: a `User` struct (`#[derive(Entity)]` with the same configuration) to its keyed
//!   item, `EntityExt::to_item`.
//!
//! Two floors are measured the same way, to show what no implementation over
//! `serde_dynamo::Item` (a `HashMap<String, AttributeValue>` with the standard `SipHash` hasher)
//! can avoid: `floor_insert_keys` inserts the six finished key values (precomputed, cloned) into
//! the item, which is the allocation and hashing of the keys alone, without computing them;
//! `floor_clone_keyed` clones a finished keyed item, which is the allocation of every attribute
//! `to_item` must produce, without any hashing. `serde_dynamo_to_item` is the struct to an item
//! without keys, as `serde_dynamo` alone does it.
//!
//! Criterion measures each of them. Then every one, and the TypeScript `addKeys`, runs the same
//! loop the same way: every item once per round, 15 rounds after a warm-up, wall time per round
//! divided by the items; the medians, the best rounds and the ratios to TypeScript are printed
//! as a Markdown table (see BENCHMARKS.md). Before anything is timed, the keyed items of every path and of
//! TypeScript are compared: they must be identical. Without `EM_TS_NODE_PATH` only the Rust side
//! runs.

use std::hint::black_box;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use criterion::{BatchSize, Criterion, Throughput};
use entity_manager::model::ShardSpace;
use entity_manager::{AttributeValue, Entity, EntityExt, Item, Schema, Table};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The User service table of `tests/ts-bench/user-service.json`.
#[derive(Table, Debug)]
#[table(entities(User))]
struct UserService;

/// A user, configured as `tests/ts-bench/user-service.json` configures the `user` entity.
#[allow(clippy::struct_field_names)] // `user_id`
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = UserService, token = "user", unique = user_id, timestamp = created)]
#[shard_bumps(bumps = [
    bump(timestamp = 1_726_880_933_000, char_bits = 2, chars = 1),
    bump(timestamp = 1_735_689_600_000, char_bits = 3, chars = 2),
])]
#[generated(name = user_hash_key, components = [user_id], sharded)]
#[generated(name = user_beneficiary_hash_key, components = [beneficiary_id], sharded)]
#[generated(name = first_name_range_key, components = [first_name_canonical, last_name_canonical, created])]
#[generated(name = last_name_range_key, components = [last_name_canonical, first_name_canonical, created])]
#[index(name = "created", range = created)]
#[index(name = "firstName", range = first_name_range_key)]
#[index(name = "lastName", range = last_name_range_key)]
#[index(name = "phone", range = phone)]
#[index(name = "updated", range = updated)]
#[index(name = "userBeneficiaryCreated", hash = user_beneficiary_hash_key, range = created)]
#[index(name = "userBeneficiaryFirstName", hash = user_beneficiary_hash_key, range = first_name_range_key)]
#[index(name = "userBeneficiaryLastName", hash = user_beneficiary_hash_key, range = last_name_range_key)]
#[index(name = "userBeneficiaryPhone", hash = user_beneficiary_hash_key, range = phone)]
#[index(name = "userBeneficiaryUpdated", hash = user_beneficiary_hash_key, range = updated)]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("timestamp")]
    updated: u64,
    #[transcode("string")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    beneficiary_id: Option<String>,
    first_name: String,
    #[transcode("string")]
    first_name_canonical: String,
    last_name: String,
    #[transcode("string")]
    last_name_canonical: String,
    #[transcode("string")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    phone: Option<String>,
}

const ITEMS: usize = 2_000;
/// `ITEMS` as a float, for per-item figures.
const ITEMS_F64: f64 = 2_000.0;
const ROUNDS: usize = 15;

fn config_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ts-bench/user-service.json")
}

fn out_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"),
        PathBuf::from,
    );
    target.join("ts-bench")
}

/// Deterministic users: ids, names, timestamps across the three bumps, half with a beneficiary,
/// a third with a phone.
fn items() -> Vec<Value> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let names = [
        "ada", "alan", "grace", "edsger", "barbara", "donald", "ken", "dennis",
    ];
    (0..ITEMS)
        .map(|n| {
            let created = 1_700_000_000_000 + next() % 70_000_000_000;
            let first = names[usize::try_from(next() % 8).unwrap_or(0)];
            let last = names[usize::try_from(next() % 8).unwrap_or(0)];
            let mut user = json!({
                "userId": format!("u{:019}", next() % 10_000_000_000_000_000_000),
                "created": created,
                "updated": created + next() % 1_000_000,
                "firstName": first.to_uppercase(),
                "firstNameCanonical": first,
                "lastName": last.to_uppercase(),
                "lastNameCanonical": last,
            });
            if n % 2 == 0 {
                user["beneficiaryId"] = json!(format!("b{}", next() % 1_000));
            }
            if n % 3 == 0 {
                user["phone"] = json!(format!("+1{:010}", next() % 10_000_000_000));
            }
            user
        })
        .collect()
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// The median and the best (least) of per-round figures. On a loaded machine the best round is
/// the least disturbed one, on both sides alike.
#[derive(Clone, Copy)]
struct Rounds {
    median: f64,
    best: f64,
}

impl Rounds {
    fn of(rounds: Vec<f64>) -> Self {
        let best = rounds.iter().copied().fold(f64::INFINITY, f64::min);
        Self {
            median: median(rounds),
            best,
        }
    }
}

/// Nanoseconds per item of `ROUNDS` rounds of `round` (after three warm-up rounds), each on a
/// fresh `input()` made before the clock starts and dropped after it stops.
fn per_item<I>(mut input: impl FnMut() -> I, mut round: impl FnMut(&mut I)) -> Rounds {
    for _ in 0..3 {
        round(&mut input());
    }
    let rounds = (0..ROUNDS)
        .map(|_| {
            let mut data = input();
            let start = Instant::now();
            round(&mut data);
            let took = start.elapsed().as_secs_f64() * 1e9 / ITEMS_F64;
            drop(black_box(data));
            took
        })
        .collect();
    Rounds::of(rounds)
}

/// The key attributes `add_keys` writes, finished: what the insert floor inserts.
fn key_values(keyed: &Item, item: &Item) -> Vec<(String, String)> {
    keyed
        .iter()
        .filter(|(name, _)| !item.contains_key(*name))
        .filter_map(|(name, value)| match value {
            AttributeValue::S(s) => Some((name.clone(), s.clone())),
            _ => None,
        })
        .collect()
}

/// One row of the table: the path, µs per item (median, best round), and TypeScript ÷ it.
fn row(label: &str, ns: Rounds, ts: Option<Rounds>) {
    let (median, best) = ts.map_or_else(Default::default, |ts| {
        (
            format!("**{:.1}×**", ts.median / ns.median),
            format!("{:.1}×", ts.best / ns.best),
        )
    });
    println!(
        "| {label} | {:.3} | {:.3} | {median} | {best} |",
        ns.median / 1e3,
        ns.best / 1e3
    );
}

#[allow(clippy::too_many_lines)] // one straight sequence: set up, check, criterion, side by side
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config: Value = serde_json::from_str(&std::fs::read_to_string(config_path())?)?;
    let schema = Schema::from_ts_config(&config, ShardSpace::Product)?;
    let user = schema.entity("user")?;
    let values = items();
    let prepared: Vec<Item> = values
        .iter()
        .map(|v| serde_dynamo::to_item(v.clone()))
        .collect::<Result<_, _>>()?;
    let users: Vec<User> = values
        .iter()
        .map(|v| serde_json::from_value(v.clone()))
        .collect::<Result<_, _>>()?;

    // Every path gives the same keyed items (TypeScript's are compared below).
    let keyed: Vec<Item> = prepared
        .iter()
        .map(|item| user.add_keys(item))
        .collect::<Result<_, _>>()?;
    for ((item, record), expected) in prepared.iter().zip(&users).zip(&keyed) {
        let mut in_place = item.clone();
        user.add_keys_mut(&mut in_place)?;
        if &in_place != expected || &record.to_item()? != expected {
            return Err(format!("the write paths keyed {item:?} differently").into());
        }
    }
    let keys: Vec<Vec<(String, String)>> = keyed
        .iter()
        .zip(&prepared)
        .map(|(keyed, item)| key_values(keyed, item))
        .collect();
    let insert_keys = |items: &mut Vec<Item>| {
        for (item, keys) in items.iter_mut().zip(&keys) {
            for (name, value) in keys {
                item.insert(name.clone(), AttributeValue::S(value.clone()));
            }
            black_box(item);
        }
    };

    if let Some(path) = std::env::var_os("WRITE_PATH_PROFILE") {
        return profile(&path.to_string_lossy(), &prepared, &users, &keys, &user);
    }

    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("write_path");
    group.throughput(Throughput::Elements(ITEMS as u64));
    group.bench_function("add_keys", |b| {
        b.iter(|| {
            for item in &prepared {
                black_box(user.add_keys(black_box(item)).ok());
            }
        });
    });
    group.bench_function("add_keys_mut", |b| {
        b.iter_batched_ref(
            || prepared.clone(),
            |items| {
                for item in items.iter_mut() {
                    black_box(user.add_keys_mut(black_box(item)).ok());
                }
            },
            BatchSize::LargeInput,
        );
    });
    group.bench_function("to_item", |b| {
        b.iter(|| {
            for record in &users {
                black_box(black_box(record).to_item().ok());
            }
        });
    });
    group.bench_function("floor_insert_keys", |b| {
        b.iter_batched_ref(|| prepared.clone(), insert_keys, BatchSize::LargeInput);
    });
    group.bench_function("floor_clone_keyed", |b| {
        b.iter(|| {
            for item in &keyed {
                black_box(black_box(item).clone());
            }
        });
    });
    group.finish();
    criterion.final_summary();

    // The side-by-side loop, measured the same way for every path.
    let copy = per_item(
        || (),
        |()| {
            for item in &prepared {
                black_box(user.add_keys(black_box(item)).ok());
            }
        },
    );
    let in_place = per_item(
        || prepared.clone(),
        |items| {
            for item in items.iter_mut() {
                black_box(user.add_keys_mut(black_box(item)).ok());
            }
        },
    );
    let to_item = per_item(
        || (),
        |()| {
            for record in &users {
                black_box(black_box(record).to_item().ok());
            }
        },
    );
    let serde_only = per_item(
        || (),
        |()| {
            for record in &users {
                black_box(serde_dynamo::to_item::<_, Item>(black_box(record)).ok());
            }
        },
    );
    let floor_insert = per_item(|| prepared.clone(), insert_keys);
    let floor_clone = per_item(
        || (),
        |()| {
            for item in &keyed {
                black_box(black_box(item).clone());
            }
        },
    );

    let ts = if let Some(node_path) = std::env::var_os("EM_TS_NODE_PATH") {
        Some(typescript(&node_path, &values, &prepared, &user)?)
    } else {
        println!(
            "\n(set EM_TS_NODE_PATH=$(bash tests/ts-bench/install.sh) to compare with TypeScript)"
        );
        None
    };

    println!(
        "\n| {ITEMS} items, {ROUNDS} rounds | µs per item (median) | µs (best round) | TypeScript ÷ ours (median) | (best round) |"
    );
    println!("|---|---:|---:|---:|---:|");
    if let Some(ts) = ts {
        println!(
            "| TypeScript 6.14.0 `addKeys` (keyed shallow copy) | {:.3} | {:.3} | | |",
            ts.median / 1e3,
            ts.best / 1e3
        );
    }
    row("ours `add_keys` (keyed copy)", copy, ts);
    row("ours `add_keys_mut` (in place)", in_place, ts);
    row("ours `to_item` (struct → keyed item)", to_item, ts);
    row("floor: insert the six finished keys", floor_insert, ts);
    row("floor: clone a keyed item", floor_clone, ts);
    row(
        "`serde_dynamo::to_item` (struct → item, no keys)",
        serde_only,
        ts,
    );
    Ok(())
}

/// With `WRITE_PATH_PROFILE=<path>`, runs one path over every item `WRITE_PATH_ROUNDS` times
/// (default 200) and nothing else, for a profiler (`perf record`, `valgrind --tool=callgrind`):
/// `add_keys`, `add_keys_mut`, `to_item`, `floor_insert_keys`, `clone` (the item copies
/// `add_keys_mut` and `floor_insert_keys` start from, to subtract) or `setup` (nothing: the
/// set-up every run shares, to subtract).
fn profile(
    path: &str,
    prepared: &[Item],
    users: &[User],
    keys: &[Vec<(String, String)>],
    user: &entity_manager::EntitySchema<'_>,
) -> Result<(), Box<dyn std::error::Error>> {
    let rounds: usize = std::env::var("WRITE_PATH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(200);
    for _ in 0..rounds {
        match path {
            "setup" => {}
            "add_keys" => {
                for item in prepared {
                    black_box(user.add_keys(black_box(item)).ok());
                }
            }
            "to_item" => {
                for record in users {
                    black_box(black_box(record).to_item().ok());
                }
            }
            "add_keys_mut" | "floor_insert_keys" | "clone" => {
                let mut items = prepared.to_vec();
                for (item, keys) in items.iter_mut().zip(keys) {
                    match path {
                        "add_keys_mut" => drop(black_box(user.add_keys_mut(black_box(item)))),
                        "floor_insert_keys" => {
                            for (name, value) in keys {
                                item.insert(name.clone(), AttributeValue::S(value.clone()));
                            }
                        }
                        _ => {}
                    }
                    black_box(item);
                }
            }
            other => return Err(format!("WRITE_PATH_PROFILE={other}: unknown path").into()),
        }
    }
    Ok(())
}

/// Runs the TypeScript side on the same items, checks that it keyed them as we do, and returns
/// its nanoseconds per item.
fn typescript(
    node_path: &std::ffi::OsStr,
    values: &[Value],
    prepared: &[Item],
    user: &entity_manager::EntitySchema<'_>,
) -> Result<Rounds, Box<dyn std::error::Error>> {
    let dir = out_dir();
    std::fs::create_dir_all(&dir)?;
    let items_path = dir.join("items.jsonl");
    let keyed_path = dir.join("keyed-ts.jsonl");
    let lines: String = values.iter().map(|v| v.to_string() + "\n").collect();
    std::fs::write(&items_path, lines)?;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ts-bench/addkeys.mjs");
    let output = Command::new("node")
        .env("NODE_PATH", node_path)
        .arg(script)
        .arg(config_path())
        .arg(&items_path)
        .arg(&keyed_path)
        .arg(ROUNDS.to_string())
        .output()?;
    if !output.status.success() {
        return Err(format!("node failed: {}", String::from_utf8_lossy(&output.stderr)).into());
    }
    let report: Value = serde_json::from_slice(&output.stdout)?;
    let ts: Vec<f64> = report["nsPerItem"]
        .as_array()
        .ok_or("node printed no nsPerItem")?
        .iter()
        .filter_map(Value::as_f64)
        .collect();

    // Both wrote the same keys.
    let keyed_ts = std::fs::read_to_string(&keyed_path)?;
    let mut compared = 0;
    for (line, item) in keyed_ts.lines().zip(prepared) {
        let theirs: Item = serde_dynamo::to_item(serde_json::from_str::<Value>(line)?)?;
        if user.add_keys(item)? != theirs {
            return Err(format!("the two libraries keyed {line} differently").into());
        }
        compared += 1;
    }
    if compared != prepared.len() {
        return Err(format!("TypeScript keyed {compared} of {} items", prepared.len()).into());
    }
    Ok(Rounds::of(ts))
}
