//! The write path against the TypeScript Entity Manager, side by side in one run: keys added to
//! the same items under the same configuration (the seed's User service, shards 1 + 4 + 16).
//!
//! ```text
//! export EM_TS_NODE_PATH=$(bash tests/ts-bench/install.sh)   # npm 6.14.0, outside the repo
//! cargo bench -p entity-manager-tests --bench write_path
//! ```
//!
//! Criterion measures `EntitySchema::add_keys` (a keyed copy, as TypeScript's `addKeys` returns)
//! on the prepared items. Then both libraries run the same loop the same way: every item keyed
//! once per round, 15 rounds after a warm-up, wall time per round divided by the items; the
//! medians and their ratio are printed as a Markdown table (see BENCHMARKS.md). Before that, the
//! keyed items of both are compared: they must be identical. Without `EM_TS_NODE_PATH` only the
//! Rust side runs.

use std::hint::black_box;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use criterion::{BatchSize, Criterion, Throughput};
use entity_manager::{Item, Schema, ShardSpace};
use serde_json::{Value, json};

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

#[allow(clippy::too_many_lines)] // one straight sequence: set up, criterion, side by side
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config: Value = serde_json::from_str(&std::fs::read_to_string(config_path())?)?;
    let schema = Schema::from_ts_config(&config, ShardSpace::Product)?;
    let user = schema.entity("user")?;
    let values = items();
    let prepared: Vec<Item> = values
        .iter()
        .map(|v| serde_dynamo::to_item(v.clone()))
        .collect::<Result<_, _>>()?;

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
    group.finish();
    criterion.final_summary();

    // The side-by-side loop, measured the same way on both sides.
    for _ in 0..3 {
        for item in &prepared {
            black_box(user.add_keys(item).ok());
        }
    }
    let ours: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            for item in &prepared {
                black_box(user.add_keys(black_box(item)).ok());
            }
            start.elapsed().as_secs_f64() * 1e9 / ITEMS_F64
        })
        .collect();
    let ours = median(ours);
    let in_place: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let mut items = prepared.clone();
            let start = Instant::now();
            for item in &mut items {
                black_box(user.add_keys_mut(black_box(item)).ok());
            }
            let took = start.elapsed().as_secs_f64() * 1e9 / ITEMS_F64;
            drop(black_box(items));
            took
        })
        .collect();
    let in_place = median(in_place);

    let Some(node_path) = std::env::var_os("EM_TS_NODE_PATH") else {
        println!(
            "\nwrite_path: add_keys {:.3} µs/item, add_keys_mut {:.3} µs/item (set EM_TS_NODE_PATH=$(bash tests/ts-bench/install.sh) to compare with TypeScript)",
            ours / 1e3,
            in_place / 1e3
        );
        return Ok(());
    };
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
    let ts = median(ts);

    // Both wrote the same keys.
    let keyed_ts = std::fs::read_to_string(&keyed_path)?;
    for (line, item) in keyed_ts.lines().zip(&prepared) {
        let theirs: Item = serde_dynamo::to_item(serde_json::from_str::<Value>(line)?)?;
        if user.add_keys(item)? != theirs {
            return Err(format!("the two libraries keyed {line} differently").into());
        }
    }

    println!("\n| {ITEMS} items, median of {ROUNDS} rounds | µs per item | TypeScript ÷ ours |");
    println!("|---|---|---|");
    println!("| TypeScript 6.14.0 `addKeys` | {:.3} | |", ts / 1e3);
    println!(
        "| ours `add_keys` (keyed copy) | {:.3} | **{:.1}×** |",
        ours / 1e3,
        ts / ours
    );
    println!(
        "| ours `add_keys_mut` (in place) | {:.3} | **{:.1}×** |",
        in_place / 1e3,
        ts / in_place
    );
    Ok(())
}
