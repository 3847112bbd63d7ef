//! Client CPU of the typed single-record operations on `DynamoStore` (`create`, `get`,
//! `update`) against hand-written `aws-sdk-dynamodb` calls that send the same request bodies,
//! at 1 and at 16 concurrent tasks (issue 49, point 3).
//!
//! ```text
//! cargo bench -p entity-manager-tests --bench ops_stub
//! ```
//!
//! - The store: a loopback HTTP stub (hyper 1, on its own thread and its own current-thread
//!   runtime) that answers every request at once: `GetItem` with the recorded account,
//!   `UpdateItem` with it as the new image, `PutItem` with nothing. It keeps the last body it
//!   received for each operation, so that the checks can compare what the two clients send.
//! - The entity: an account with one shard bump from 0 (4 shards), so that every id has one
//!   candidate key: `create` is one conditioned `PutItem`, `get` one `GetItem`, `update` one
//!   conditioned `UpdateItem` (a blind, atomic update: nothing read first).
//! - Ours: `Account::create`, `Account::get`, `Account::update` (add 1 to `logins`).
//! - Baseline: the same requests written with the SDK's builders by hand (expressions, names,
//!   values, conditions, `ReturnValues`), the records encoded and decoded with `serde_dynamo`.
//!   Before anything is timed the two request bodies of each operation are compared as JSON:
//!   they must be equal.
//! - Both run on one multi-threaded tokio runtime (2 workers), N tasks at once each doing its
//!   share of the round's calls. A round's CPU is the sum over the process's threads
//!   (`/proc/self/task/*/schedstat`, nanoseconds on a CPU) less the stub thread's, so the stub's
//!   own work is not counted. Rounds alternate ours and the baseline; the figure is the median
//!   of each round's ratio to the baseline round run beside it (a shared machine's drift
//!   between rounds cancels out), with the spread of those ratios.
//!
//! Under `cargo test --benches` (no `--bench` argument) one short round of each runs, with the
//! checks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use aws_sdk_dynamodb::types::{
    AttributeValue as Wire, ReturnConsumedCapacity, ReturnValue,
    ReturnValuesOnConditionCheckFailure,
};
use bytes::Bytes;
use entity_manager::field::Changes;
use entity_manager::store::{DynamoStore, TableDefinition};
use entity_manager::{Entity, EntityExt, Item, Table};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[path = "support/stub.rs"]
mod stub_support;
use stub_support::{client, item_json, median};

type BenchResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The table's name.
const TABLE: &str = "Accounts";
/// Calls per round (shared between the tasks), and rounds.
const CALLS: usize = 1_600;
const ROUNDS: usize = 15;
/// The concurrencies measured.
const TASKS: [usize; 2] = [1, 16];

#[derive(Table)]
#[table(entities(Account))]
struct Accounts;

/// An account: one shard bump from 0, so one candidate key per id.
#[allow(clippy::struct_field_names)]
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Accounts, unique = account_id, timestamp = created, version = version)]
#[shard_bumps(bumps = [bump(timestamp = 0, char_bits = 2, chars = 1)])]
struct Account {
    #[transcode("string")]
    account_id: String,
    #[transcode("timestamp")]
    created: u64,
    name: String,
    logins: u64,
    version: u64,
}

fn account(i: usize) -> Account {
    Account {
        account_id: format!("account-{i:05}"),
        created: 1_700_000_000_000 + i as u64 * 1_000,
        name: format!("Account number {i}"),
        logins: 3,
        version: 1,
    }
}

/// What the stub saw last, per operation (`X-Amz-Target`'s suffix).
type Seen = Arc<Mutex<HashMap<String, Bytes>>>;

/// Starts the stub on its own thread: its endpoint, the bodies it saw and its thread's
/// `/proc` directory (for its CPU).
fn stub(record: &Item) -> BenchResult<(String, Seen, String)> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let endpoint = format!("http://{}", listener.local_addr()?);
    let get = Bytes::from(serde_json::to_vec(&json!({ "Item": item_json(record)? }))?);
    let updated = Bytes::from(serde_json::to_vec(
        &json!({ "Attributes": item_json(record)? }),
    )?);
    let seen: Seen = Arc::default();
    let (kept, (tx, rx)) = (seen.clone(), std::sync::mpsc::channel());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    std::thread::spawn(move || {
        let me = std::fs::read_link("/proc/thread-self")
            .map(|p| format!("/proc/{}", p.display()))
            .unwrap_or_default();
        let _sent = tx.send(me);
        runtime.block_on(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            while let Ok((stream, _)) = listener.accept().await {
                let (get, updated, kept) = (get.clone(), updated.clone(), kept.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                        let (get, updated, kept) = (get.clone(), updated.clone(), kept.clone());
                        async move {
                            let target = request
                                .headers()
                                .get("x-amz-target")
                                .and_then(|t| t.to_str().ok())
                                .and_then(|t| t.rsplit('.').next())
                                .unwrap_or_default()
                                .to_owned();
                            let body = request.into_body().collect().await?.to_bytes();
                            // the table stamp's `GetItem` (once per store): no stamp
                            let is_stamp = target == "GetItem" && !contains(&body, b"account!");
                            let answer = match target.as_str() {
                                "GetItem" if !is_stamp => get,
                                "UpdateItem" => updated,
                                _ => Bytes::from_static(b"{}"),
                            };
                            if !is_stamp {
                                kept.lock()
                                    .unwrap_or_else(PoisonError::into_inner)
                                    .insert(target, body);
                            }
                            let response = Response::builder()
                                .header("content-type", "application/x-amz-json-1.0")
                                .body(Full::new(answer));
                            Ok::<_, hyper::Error>(response.unwrap_or_else(|_| {
                                Response::new(Full::new(Bytes::from_static(b"{}")))
                            }))
                        }
                    });
                    let _closed = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
    });
    let stub_thread = rx.recv()?;
    Ok((endpoint, seen, stub_thread))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The three operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Create,
    Get,
    Update,
}

impl Op {
    const ALL: [Self; 3] = [Self::Create, Self::Get, Self::Update];

    fn target(self) -> &'static str {
        match self {
            Self::Create => "PutItem",
            Self::Get => "GetItem",
            Self::Update => "UpdateItem",
        }
    }
}

/// One call through the library.
async fn ours(store: &DynamoStore, op: Op, record: &Account) -> BenchResult<()> {
    match op {
        Op::Create => record.create(store).await?,
        Op::Get => {
            std::hint::black_box(Account::get(store, &record.account_id).await?);
        }
        Op::Update => {
            let f = Account::FIELDS;
            let changes = Changes::new().add(f.logins, 1);
            std::hint::black_box(Account::update(store, &record.account_id, changes).await?);
        }
    }
    Ok(())
}

/// The primary key of a record, as the library computes it.
fn key(record: &Account) -> BenchResult<(String, String)> {
    let item = record.to_item()?;
    let text = |name: &str| match item.get(name) {
        Some(entity_manager::AttributeValue::S(s)) => Ok(s.clone()),
        _ => Err(format!("no {name} in the keyed item")),
    };
    Ok((text("hashKey")?, text("rangeKey")?))
}

/// The same call by hand, with the same request body.
async fn by_hand(
    client: &aws_sdk_dynamodb::Client,
    op: Op,
    record: &Account,
    (hash, range): &(String, String),
) -> BenchResult<()> {
    match op {
        Op::Create => {
            let mut item: std::collections::HashMap<String, Wire> = serde_dynamo::to_item(record)?;
            item.insert("hashKey".into(), Wire::S(hash.clone()));
            item.insert("rangeKey".into(), Wire::S(range.clone()));
            // a typed write increments the version
            item.insert("version".into(), Wire::N((record.version + 1).to_string()));
            client
                .put_item()
                .table_name(TABLE)
                .set_item(Some(item))
                .condition_expression("attribute_not_exists(#n0)")
                .expression_attribute_names("#n0", "hashKey")
                .return_consumed_capacity(ReturnConsumedCapacity::None)
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .send()
                .await?;
        }
        Op::Get => {
            let output = client
                .get_item()
                .table_name(TABLE)
                .key("hashKey", Wire::S(hash.clone()))
                .key("rangeKey", Wire::S(range.clone()))
                .consistent_read(false)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await?;
            let item = output.item.ok_or("no item")?;
            std::hint::black_box(serde_dynamo::from_item::<_, Account>(item)?);
        }
        Op::Update => {
            let output = client
                .update_item()
                .table_name(TABLE)
                .key("hashKey", Wire::S(hash.clone()))
                .key("rangeKey", Wire::S(range.clone()))
                .update_expression("ADD #n0 :v0, #n1 :v1")
                // the record exists, and its version can still be incremented
                .condition_expression(
                    "(attribute_exists(#n2)) AND ((attribute_not_exists(#n1)) OR (#n1 < :v2))",
                )
                .expression_attribute_names("#n0", "logins")
                .expression_attribute_names("#n1", "version")
                .expression_attribute_names("#n2", "hashKey")
                .expression_attribute_values(":v0", Wire::N("1".into()))
                .expression_attribute_values(":v1", Wire::N("1".into()))
                .expression_attribute_values(":v2", Wire::N(u64::MAX.to_string()))
                .return_consumed_capacity(ReturnConsumedCapacity::None)
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .return_values(ReturnValue::AllNew)
                .send()
                .await?;
            let item = output.attributes.ok_or("no attributes")?;
            std::hint::black_box(serde_dynamo::from_item::<_, Account>(item)?);
        }
    }
    Ok(())
}

/// Nanoseconds the process's threads have run on a CPU, less the stub thread's.
fn client_cpu_ns(stub_thread: &str) -> BenchResult<u64> {
    let read = |dir: &str| -> Option<u64> {
        let stat = std::fs::read_to_string(format!("{dir}/schedstat")).ok()?;
        stat.split_whitespace().next()?.parse().ok()
    };
    let mut total = 0;
    for entry in std::fs::read_dir("/proc/self/task")? {
        total += read(&entry?.path().display().to_string()).unwrap_or(0);
    }
    let stub = read(stub_thread).ok_or("the stub thread's CPU is unknown")?;
    Ok(total.saturating_sub(stub))
}

/// The records of a round's calls and their keys (the baseline's: computing them by hand is
/// not what is compared here).
struct Calls {
    records: Vec<Account>,
    keys: Vec<(String, String)>,
}

fn calls() -> BenchResult<Arc<Calls>> {
    let records: Vec<Account> = (0..CALLS).map(account).collect();
    let keys = records.iter().map(key).collect::<BenchResult<_>>()?;
    Ok(Arc::new(Calls { records, keys }))
}

/// CPU ns per call of one round: `tasks` tasks at once, each doing every `tasks`-th call.
async fn round(
    tasks: usize,
    op: Op,
    calls: &Arc<Calls>,
    lib: Option<&DynamoStore>,
    client: &aws_sdk_dynamodb::Client,
    stub_thread: &str,
    n: usize,
) -> BenchResult<f64> {
    let before = client_cpu_ns(stub_thread)?;
    let mut handles = Vec::new();
    for t in 0..tasks {
        let (calls, client, store) = (calls.clone(), client.clone(), lib.cloned());
        handles.push(tokio::spawn(async move {
            for i in (t..n).step_by(tasks) {
                let record = &calls.records[i];
                match &store {
                    Some(store) => ours(store, op, record).await?,
                    None => by_hand(&client, op, record, &calls.keys[i]).await?,
                }
            }
            BenchResult::Ok(())
        }));
    }
    for handle in handles {
        handle.await??;
    }
    let spent = client_cpu_ns(stub_thread)?.saturating_sub(before);
    #[allow(clippy::cast_precision_loss)] // nanoseconds of a round, far below 2^52
    Ok(spent as f64 / n as f64)
}

/// The two bodies of `op` (ours, then the baseline's) as JSON: equal, or an error showing both.
fn same_bodies(op: Op, ours: &Bytes, hand: &Bytes) -> BenchResult<()> {
    let (a, b): (Value, Value) = (serde_json::from_slice(ours)?, serde_json::from_slice(hand)?);
    if a == b {
        Ok(())
    } else {
        Err(format!("{op:?}: the bodies differ\n  ours: {a}\n  hand: {b}").into())
    }
}

/// `OPS_STUB_PROFILE=OP,TASKS,SIDE,CALLS` (`create|get|update`, a task count, `ours|hand`, at
/// most 1,600 calls): after the checks, one round of that side alone, for a profiler
/// (`valgrind --tool=callgrind`, `perf record`) to attribute its CPU.
fn profile_mode() -> BenchResult<Option<(Op, usize, bool, usize)>> {
    let Ok(spec) = std::env::var("OPS_STUB_PROFILE") else {
        return Ok(None);
    };
    let parts: Vec<&str> = spec.split(',').collect();
    let [op, tasks, side, n] = parts.as_slice() else {
        return Err(format!("OPS_STUB_PROFILE={spec}: expected OP,TASKS,SIDE,CALLS").into());
    };
    let op = Op::ALL
        .into_iter()
        .find(|o| format!("{o:?}").eq_ignore_ascii_case(op))
        .ok_or_else(|| format!("OPS_STUB_PROFILE: no operation `{op}` (create, get, update)"))?;
    let ours = match *side {
        "ours" => true,
        "hand" => false,
        other => return Err(format!("OPS_STUB_PROFILE: side `{other}` is ours or hand").into()),
    };
    Ok(Some((
        op,
        tasks.parse()?,
        ours,
        n.parse::<usize>()?.min(CALLS),
    )))
}

fn main() -> BenchResult<()> {
    let measuring = std::env::args().any(|a| a == "--bench");
    let calls = calls()?;
    let first = calls.records.first().ok_or("no calls")?.clone();
    let (endpoint, seen, stub_thread) = stub(&first.to_item()?)?;
    let client = client(&endpoint);
    let store = DynamoStore::new(
        client.clone(),
        TABLE,
        TableDefinition::from_schema(Accounts::schema()?)?,
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        // the checks: for each operation, the same request body from both clients
        let last = |target: &str| {
            seen.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(target)
                .cloned()
                .ok_or_else(|| format!("the stub saw no {target}"))
        };
        for op in Op::ALL {
            ours(&store, op, &first).await?;
            let mine = last(op.target())?;
            by_hand(&client, op, &first, &calls.keys[0]).await?;
            same_bodies(op, &mine, &last(op.target())?)?;
        }
        if let Some(profile) = profile_mode()? {
            // one round of one side, for a profiler (callgrind, perf) to attribute
            let (op, tasks, lib, n) = profile;
            let store0 = &store;
            let store = lib.then_some(&store);
            let record = &calls.records[0];
            println!(
                "future sizes (bytes): ours {}, by hand {}, create {}, get {}, update {}",
                std::mem::size_of_val(&ours(store0, op, record)),
                std::mem::size_of_val(&by_hand(&client, op, record, &calls.keys[0])),
                std::mem::size_of_val(&record.create(store0)),
                std::mem::size_of_val(&Account::get(store0, &record.account_id)),
                std::mem::size_of_val(&Account::update(store0, &record.account_id, Changes::new())),
            );
            let ns = round(tasks, op, &calls, store, &client, &stub_thread, n).await?;
            println!("{op:?} at {tasks} tasks, {n} calls: {:.1} µs / call", ns / 1e3);
            return Ok(());
        }
        let (calls_per_round, rounds) = if measuring {
            (CALLS, ROUNDS)
        } else {
            (32, 1)
        };
        let mut table = Vec::new();
        for tasks in TASKS {
            for op in Op::ALL {
                let (mut lib, mut base, mut paired) = (Vec::new(), Vec::new(), Vec::new());
                for r in 0..rounds {
                    // alternate which goes first
                    let mut pair = [0.0; 2];
                    for side in [r % 2, 1 - r % 2] {
                        let store = (side == 0).then_some(&store);
                        pair[side] = round(
                            tasks,
                            op,
                            &calls,
                            store,
                            &client,
                            &stub_thread,
                            calls_per_round,
                        )
                        .await?;
                    }
                    lib.push(pair[0]);
                    base.push(pair[1]);
                    paired.push(pair[0] / pair[1]);
                }
                table.push((tasks, op, lib, base, paired));
            }
        }
        if measuring {
            println!(
                "\nClient CPU per call, a loopback stub answering at once ({ROUNDS} paired rounds of {CALLS} calls; CPU of every thread but the stub's):\n"
            );
            println!(
                "| operation | tasks | ours µs / call (median round) | hand-written µs / call | ours ÷ hand-written (median of paired rounds) | spread of the paired ratios |"
            );
            println!("|---|---:|---:|---:|---:|---|");
            for (tasks, op, lib, base, paired) in table {
                let lo = paired.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = paired.iter().copied().fold(0.0, f64::max);
                println!(
                    "| {op:?} | {tasks} | {:.1} | {:.1} | **{:.2}** | {lo:.2}–{hi:.2} |",
                    median(lib) / 1e3,
                    median(base) / 1e3,
                    median(paired)
                );
            }
        }
        BenchResult::Ok(())
    })
}
