//! Production conditions: the `MemoryStore` fault plan (throttling, transient errors,
//! transaction conflicts, unprocessed batch requests, eventually consistent reads), and every
//! guarantee re-proven under it; `DynamoStore`'s one time bound for a whole batch call against a
//! server that stopped answering.
//!
//! Each test prints its seed; `FAULT_SEED=<n>` replays one.
#![allow(clippy::struct_field_names)] // fields are named after their attributes

mod entity_support;
mod store_support;

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use entity_manager::scan::ParallelScan;
use entity_manager::store::{
    Expect, FaultPlan, KeyType, MemoryStore, QueryPage, Store, StoreError, TableDefinition,
    WriteRequest,
};
use entity_manager::{AttributeValue, EntityExt, Error, Item};
use entity_support::{Counter, Member, TestResult, definition, member};
use futures::TryStreamExt;
use store_support::{item, s};

fn seed() -> u64 {
    store_support::seed("FAULT_SEED")
}

fn table() -> TableDefinition {
    store_support::definition()
}

/// What a fixed sequence of calls came to: one letter per call.
async fn run(store: &MemoryStore) -> Result<String, Box<dyn std::error::Error>> {
    let mut outcomes = String::new();
    for i in 0..200 {
        let it = item(serde_json::json!({ "hashKey": "h", "rangeKey": format!("r{i}") }))?;
        let outcome = match store.put_item(it, Expect::Any).await {
            Ok(()) => 'o',
            Err(e) if e.is_throttled() => 't',
            Err(e) if e.is_retryable() => 'x',
            Err(e) => return Err(e.into()),
        };
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

/// The same seed gives the same run; another seed another one.
#[tokio::test]
async fn the_same_seed_gives_the_same_run() -> TestResult {
    let seed = seed();
    let plan = |seed| {
        FaultPlan::new(seed)
            .throttle(0.2)
            .transient(0.1)
            .attempts(1)
    };
    let a = MemoryStore::new(table()).with_faults(plan(seed));
    let b = MemoryStore::new(table()).with_faults(plan(seed));
    let c = MemoryStore::new(table()).with_faults(plan(seed ^ 0xDEAD_BEEF));
    let (ra, rb, rc) = (run(&a).await?, run(&b).await?, run(&c).await?);
    assert_eq!(ra, rb);
    assert_eq!(a.fault_counts(), b.fault_counts());
    assert_ne!(ra, rc, "two seeds, 200 calls, the same faults");
    // the rates hold roughly, and a failed call wrote nothing
    let throttled = ra.matches('t').count();
    assert!(
        (20..=60).contains(&throttled),
        "{throttled} of 200 throttled at 20 %"
    );
    assert_eq!(a.len(), ra.matches('o').count());
    Ok(())
}

/// With a lag, an eventually consistent read misses a new record, still sees a deleted one and
/// sees the old version of an updated one, until `lag` more calls; a strongly consistent scan
/// and conditions see the latest state at once.
#[tokio::test]
async fn eventually_consistent_reads_lag_by_calls() -> TestResult {
    let store = MemoryStore::new(table()).with_faults(FaultPlan::new(seed()).lag(3));
    let one = item(serde_json::json!({
        "hashKey": "h", "rangeKey": "1", "group": "g", "score": 1, "name": "a", "v": 1
    }))?;
    let key = store_support::key("h", "1");
    store.put_item(one.clone(), Expect::Any).await?;
    // the next three calls (this get, the GSI query, the consistent scan) do not see it yet
    assert_eq!(
        store.get_item(&key, None).await?,
        None,
        "a new record is missed"
    );
    let gsi = QueryPage::new(s("g")).index("byScore");
    assert!(store.query_page(&gsi).await?.items.is_empty());
    let consistent = entity_manager::store::ScanPage::new().consistent(true);
    assert_eq!(
        store.scan_page(&consistent).await?.items.len(),
        1,
        "consistent: seen"
    );
    // from the fourth call on, everyone sees it
    assert_eq!(store.get_item(&key, None).await?, Some(one.clone()));
    assert_eq!(store.query_page(&gsi).await?.items.len(), 1);
    // an update: the old version for three calls; a condition sees the new one at once
    let mut two = one.clone();
    two.insert("v".into(), AttributeValue::N("2".into()));
    store.put_item(two.clone(), Expect::Any).await?;
    assert_eq!(
        store.get_item(&key, None).await?,
        Some(one.clone()),
        "an old version"
    );
    let stale = store
        .put_item(
            one.clone(),
            Expect::Matches(entity_manager::store::Filter::eq(
                "v",
                AttributeValue::N("1".into()),
            )),
        )
        .await
        .err()
        .ok_or("a condition saw the stale version")?;
    assert!(stale.is_conditional_check_failed());
    store.get_item(&key, None).await?;
    assert_eq!(store.get_item(&key, None).await?, Some(two));
    // a delete: still seen for three calls
    store.delete_item(&key, Expect::Any).await?;
    assert!(
        store.get_item(&key, None).await?.is_some(),
        "a deleted record is still seen"
    );
    store.get_item(&key, None).await?;
    store.get_item(&key, None).await?;
    assert_eq!(store.get_item(&key, None).await?, None);
    Ok(())
}

/// A batch write of 20,000 records with 20 % of requests unprocessed and 5 % of calls
/// throttled: exactly the 20,000 records are stored, each as written; a batch get reads them
/// all back.
#[tokio::test]
async fn a_batch_of_20000_under_unprocessed_and_throttling_stores_each_once() -> TestResult {
    let store = MemoryStore::new(table())
        .with_faults(FaultPlan::new(seed()).unprocessed(0.2).throttle(0.05));
    let records: Vec<Item> = (0..20_000)
        .map(|i| item(serde_json::json!({ "hashKey": format!("h{}", i % 97), "rangeKey": format!("r{i}"), "n": i })))
        .collect::<Result<_, _>>()?;
    // a batch whose retries run out says what it did not write, and is sent again as a caller
    // would: at these rates one request in about a million fails all its 10 attempts (about one
    // run in fifty, seed 1795693733)
    let mut pending: Vec<WriteRequest> = records.iter().cloned().map(WriteRequest::Put).collect();
    for _ in 0..3 {
        match store.batch_write(pending).await {
            Ok(()) => {
                pending = Vec::new();
                break;
            }
            Err(e) if e.cause.is_incomplete() => pending = e.unwritten,
            Err(e) => return Err(e.into()),
        }
    }
    assert!(pending.is_empty(), "{} requests unwritten", pending.len());
    let counts = store.fault_counts();
    assert!(
        counts.unprocessed > 3_000 && counts.throttled > 0,
        "{counts:?}"
    );
    let mut stored = store.items();
    let mut want = records.clone();
    let order = |i: &Item| store_support::text(i, "rangeKey");
    stored.sort_by_key(order);
    want.sort_by_key(order);
    assert_eq!(stored, want, "exactly the records written, each once");
    let keys: Vec<Item> = records
        .iter()
        .take(2_000)
        .map(|r| {
            store_support::key(
                &store_support::text(r, "hashKey"),
                &store_support::text(r, "rangeKey"),
            )
        })
        .collect();
    assert_eq!(store.batch_get(keys, None).await?.len(), 2_000);
    Ok(())
}

/// 32 tasks × 50 version-locked increments, half by `modify` and half by transactions
/// (`Transaction::update` under the version read), with 10 % of calls throttled and 20 % of
/// transactions canceled by conflicts: exactly 1,600.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn version_locked_increments_under_throttling_and_conflicts_add_up() -> TestResult {
    let store = Arc::new(
        MemoryStore::new(definition()?).with_faults(
            FaultPlan::new(seed())
                .throttle(0.1)
                .transaction_conflicts(0.2),
        ),
    );
    Counter {
        counter_id: "c".into(),
        created: 1_000,
        value: 0,
        version: 0,
    }
    .create(&*store)
    .await?;
    let mut tasks: Vec<tokio::task::JoinHandle<Result<(), String>>> = Vec::new();
    for t in 0..32 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut done = 0;
            while done < 50 {
                if entity_support::increment_once(&*store, t).await? {
                    done += 1;
                }
                tokio::task::yield_now().await;
            }
            Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    let c = Counter::get(&*store, "c")
        .await?
        .ok_or("the counter is gone")?;
    assert_eq!(c.value, 1_600);
    let counts = store.fault_counts();
    assert!(
        counts.throttled > 0 && counts.transaction_conflicts > 0,
        "{counts:?}"
    );
    Ok(())
}

/// `create` of one id from 32 tasks with different timestamps (different shards) under
/// throttling and transaction conflicts: exactly one wins, and one item holds the id.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_create_of_an_id_wins_under_faults() -> TestResult {
    let store = Arc::new(
        MemoryStore::new(definition()?).with_faults(
            FaultPlan::new(seed())
                .throttle(0.1)
                .transaction_conflicts(0.2),
        ),
    );
    let mut tasks = Vec::new();
    for t in 0..32u64 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                match member("solo", 500 + t * 100).create(&*store).await {
                    Ok(()) => return Ok(true),
                    Err(Error::AlreadyExists { .. }) => return Ok(false),
                    Err(Error::Store { source, .. }) if source.is_retryable() => {}
                    Err(e) => return Err(e.to_string()),
                }
            }
        }));
    }
    let mut wins = 0;
    for t in tasks {
        if t.await?? {
            wins += 1;
        }
    }
    assert_eq!(wins, 1);
    let holding = store
        .items()
        .iter()
        .filter(|i| i.get("memberId") == Some(&s("solo")))
        .count();
    assert_eq!(holding, 1);
    Ok(())
}

/// A scan, a purge and a migration run to their end under throttling, transient errors,
/// unprocessed batches and lag: the scan finds every record once, the purge leaves exactly
/// the others, the migration leaves exactly the migrated records.
#[tokio::test]
async fn scan_purge_and_migrate_finish_under_faults() -> TestResult {
    let plan = FaultPlan::new(seed())
        .throttle(0.1)
        .transient(0.05)
        .transaction_conflicts(0.2)
        .unprocessed(0.2)
        .lag(4);
    let store = MemoryStore::new(definition()?).with_faults(plan);
    let members: Vec<Member> = (0..600)
        .map(|i| member(&format!("m{i:03}"), 500 + i * 5))
        .collect();
    // the setup's batch may give up under these faults (its attempts are bounded, as
    // documented: seed 1795920718 left one request unprocessed after 10), and is then sent
    // again, which its error says is safe; the scan, purge and migration below are the test
    let mut sent = 1;
    while let Err(e) = Member::put_many(&store, &members).await {
        if sent == 5 {
            return Err(e.into());
        }
        sent += 1;
    }
    let oracle = store.items();
    assert_eq!(oracle.len(), 600);
    // scan: every record once (consistent: the lag does not apply)
    let mut scanned: Vec<Item> = ParallelScan::new(&store)
        .segments(4)
        .page_size(50)
        .consistent(true)
        .items()
        .try_collect()
        .await?;
    let order = |i: &Item| store_support::text(i, "memberId");
    scanned.sort_by_key(order);
    let mut want = oracle.clone();
    want.sort_by_key(order);
    assert_eq!(scanned, want);
    // migrate: every first name in capitals, the generated key with it
    let migration = entity_manager::migrate::Migration::new().records::<Member, Member, _>(
        |mut m: Member| {
            m.first_name = m.first_name.to_uppercase();
            m
        },
    )?;
    let report = migration
        .run(
            ParallelScan::new(&store).page_size(50).consistent(true),
            |_| ControlFlow::Continue(()),
        )
        .await?;
    assert!(report.complete);
    let schema = Member::schema()?;
    let mut migrated = store.items();
    migrated.sort_by_key(order);
    for (m, item) in members.iter().zip(&migrated) {
        let stored = Member::from_item(item)?;
        assert_eq!(stored.first_name, m.first_name.to_uppercase());
        assert_eq!(&schema.refresh_keys(item)?, item);
    }
    // purge: the records of even number go
    let even = entity_manager::store::Filter::In {
        attribute: "memberId".into(),
        values: (0..600)
            .step_by(2)
            .take(100)
            .map(|i| s(&format!("m{i:03}")))
            .collect(),
    };
    let purged = ParallelScan::new(&store)
        .page_size(50)
        .consistent(true)
        .filter(even)
        .purge(|_| ControlFlow::Continue(()))
        .await?;
    assert!(purged.complete);
    let left: Vec<String> = store.items().iter().map(order).collect();
    let gone: Vec<String> = (0..600)
        .step_by(2)
        .take(100)
        .map(|i| format!("m{i:03}"))
        .collect();
    assert_eq!(left.len(), 500);
    assert!(gone.iter().all(|g| !left.contains(g)));
    let counts = store.fault_counts();
    assert!(
        counts.throttled > 0 && counts.transient > 0 && counts.unprocessed > 0,
        "{counts:?}"
    );
    Ok(())
}

/// A server that accepts connections and never answers: a batch write of 100 records ends
/// with a typed timeout naming all 100 within its one bound (the operation timeout), instead
/// of retrying each chunk's timeouts.
#[tokio::test]
async fn a_stopped_server_ends_a_batch_within_its_bound() -> TestResult {
    use entity_manager::store::DynamoStore;

    let (endpoint, held) = store_support::silent_server().await?;
    let bound = Duration::from_secs(2);
    let store = DynamoStore::new(
        store_support::client_at(&endpoint),
        "stopped",
        TableDefinition::new(("hashKey", KeyType::S), ("rangeKey", KeyType::S)),
    )
    .with_timeouts(bound, Duration::from_millis(500));
    let records: Vec<WriteRequest> = (0..100)
        .map(|i| {
            item(serde_json::json!({ "hashKey": "h", "rangeKey": format!("r{i}") }))
                .map(WriteRequest::Put)
        })
        .collect::<Result<_, _>>()?;
    // the guard is three bounds: the old loop (10 attempts per chunk) took far longer
    let outcome = tokio::time::timeout(bound * 3, store.batch_write(records)).await;
    held.abort();
    let error = match outcome {
        Err(_) => return Err("batch_write ran past three times its bound".into()),
        Ok(Ok(())) => return Err("batch_write succeeded against a stopped server".into()),
        Ok(Err(e)) => e,
    };
    let cause: &StoreError = &error.cause;
    assert!(cause.is_timeout(), "{error}");
    assert_eq!(
        error.unwritten.len(),
        100,
        "every request is reported not done"
    );
    assert!(error.is_retryable());
    Ok(())
}

/// DynamoDB Local's answer to a transaction that waited too long for a lock (under a
/// migration's load): a `500` that "will succeed in actual DynamoDB".
const LOCK_TIMEOUT: &str = r#"{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"This action timed out because it too long waiting for a lock. This request will succeed in actual DynamoDB API"}"#;

/// A loopback server that answers the first `failures` requests with [`LOCK_TIMEOUT`] and
/// every later one with an empty success; it records each request's `ClientRequestToken`.
async fn failing_server(
    failures: usize,
) -> std::io::Result<(
    String,
    Arc<std::sync::Mutex<Vec<String>>>,
    tokio::task::JoinHandle<()>,
)> {
    use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let endpoint = format!("http://{}", listener.local_addr()?);
    let tokens = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&tokens);
    let served = tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                let mut socket = tokio::io::BufReader::new(socket);
                loop {
                    // one request: its headers, then the body its Content-Length says
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        if socket.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(n) = lower.strip_prefix("content-length:") {
                            length = n.trim().parse().unwrap_or(0);
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0; length];
                    if socket.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    let token = serde_json::from_slice::<serde_json::Value>(&body)
                        .ok()
                        .and_then(|b| b["ClientRequestToken"].as_str().map(str::to_owned))
                        .unwrap_or_default();
                    let n = {
                        let mut seen = seen
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                        seen.push(token);
                        seen.len()
                    };
                    let (status, answer) = if n <= failures {
                        ("500 Internal Server Error", LOCK_TIMEOUT)
                    } else {
                        ("200 OK", "{}")
                    };
                    let response = format!(
                        "HTTP/1.1 {status}\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: {}\r\n\r\n{answer}",
                        answer.len()
                    );
                    if socket
                        .get_mut()
                        .write_all(response.as_bytes())
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    Ok((endpoint, tokens, served))
}

/// The `ClientRequestToken` of every request [`failing_server`] received, in order.
fn received(tokens: &std::sync::Mutex<Vec<String>>) -> Vec<String> {
    tokens
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// A store of table `locked` at `endpoint` whose SDK makes `sdk_attempts` attempts a call, a
/// millisecond apart, under a retry policy of `attempts` calls.
fn store_at(
    endpoint: &str,
    sdk_attempts: u32,
    attempts: u32,
) -> entity_manager::store::DynamoStore {
    use aws_sdk_dynamodb::config::retry::RetryConfig;
    use entity_manager::store::{DynamoStore, RetryPolicy};

    let config = store_support::client_at(endpoint)
        .config()
        .to_builder()
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(sdk_attempts)
                .with_initial_backoff(Duration::from_millis(1)),
        )
        .build();
    DynamoStore::new(
        aws_sdk_dynamodb::Client::from_conf(config),
        "locked",
        TableDefinition::new(("hashKey", KeyType::S), ("rangeKey", KeyType::S)),
    )
    .with_retry_policy(RetryPolicy {
        max_attempts: attempts,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(10),
    })
}

/// A transaction that DynamoDB Local answers with its lock timeout (`500
/// InternalServerError`) more times than the SDK retries is sent again by the store, with its
/// bounded backoff, under the same idempotency token, until it goes through (it stopped a
/// guarded migration before: "gave up after 3 attempts"). The SDK here makes 3 attempts a
/// call, quickly; the server fails the first 5.
#[tokio::test]
async fn a_transaction_failed_by_a_server_error_is_sent_again_under_its_token() -> TestResult {
    use entity_manager::store::TransactWrite;

    let (endpoint, tokens, served) = failing_server(5).await?;
    let store = store_at(&endpoint, 3, 10);
    let moved = item(serde_json::json!({ "hashKey": "b", "rangeKey": "1" }))?;
    let outcome = store
        .transact_write(vec![
            TransactWrite::Put {
                item: moved,
                expect: Expect::Absent,
            },
            TransactWrite::Delete {
                key: item(serde_json::json!({ "hashKey": "a", "rangeKey": "1" }))?,
                expect: Expect::Present,
            },
        ])
        .await;
    served.abort();
    let tokens = received(&tokens);
    outcome.map_err(|e| format!("{e} (after {} requests)", tokens.len()))?;
    assert_eq!(tokens.len(), 6, "5 refused, the 6th carried out");
    assert!(!tokens[0].is_empty(), "the transaction has a token");
    assert!(
        tokens.iter().all(|t| *t == tokens[0]),
        "every attempt under the same token (a replay of a carried-out one is answered as done): {tokens:?}"
    );
    Ok(())
}

/// The same server, failing every attempt: the store gives up within its retry policy, with
/// the server's error, which says the transaction may have been carried out and that sending
/// it again is safe.
#[tokio::test]
async fn a_transaction_that_keeps_failing_gives_up_within_the_retry_policy() -> TestResult {
    use entity_manager::store::TransactWrite;

    let (endpoint, tokens, served) = failing_server(usize::MAX).await?;
    let store = store_at(&endpoint, 2, 3);
    let outcome = store
        .transact_write(vec![TransactWrite::Delete {
            key: item(serde_json::json!({ "hashKey": "a", "rangeKey": "1" }))?,
            expect: Expect::Present,
        }])
        .await;
    served.abort();
    let sent = received(&tokens).len();
    let Err(e) = outcome else {
        return Err("a transaction succeeded against a server that fails every request".into());
    };
    assert_eq!(sent, 6, "3 calls of the policy, 2 SDK attempts each");
    assert_eq!(e.code(), Some("InternalServerError"), "{e}");
    assert!(e.may_have_applied() && e.is_retryable(), "{e}");
    assert!(e.to_string().contains("6 attempts"), "{e}");
    Ok(())
}

/// On `DynamoStore`, an increment answered with a server error (which may come after the
/// write) is sent once and fails, saying it may have been applied and is not safe to repeat;
/// a plain `SET` answered the same way is sent again by the SDK and goes through. The SDK
/// makes up to 3 attempts a call here; the server fails the first request only.
#[tokio::test]
async fn on_dynamodb_an_increment_answered_with_a_server_error_is_sent_once() -> TestResult {
    use entity_manager::store::{ReturnValues, Update};
    let n = |v: &str| entity_manager::AttributeValue::N(v.into());
    for (update, requests, done) in [
        (Update::new().add("n", n("1")), 1, false),
        (Update::new().set("n", n("7")), 2, true),
    ] {
        let (endpoint, tokens, served) = failing_server(1).await?;
        let store = store_at(&endpoint, 3, 10);
        let outcome = store
            .update_item(
                &item(serde_json::json!({ "hashKey": "a", "rangeKey": "1" }))?,
                &update,
                Expect::Any,
                ReturnValues::None,
            )
            .await;
        served.abort();
        let sent = received(&tokens).len();
        let case = format!("{update:?}: {outcome:?}");
        assert_eq!(sent, requests, "{case}");
        assert_eq!(outcome.is_ok(), done, "{case}");
        if let Err(e) = outcome {
            assert!(e.may_have_applied() && !e.is_retryable(), "{case}");
        }
    }
    Ok(())
}

/// The same verdicts on `MemoryStore` under a fault plan: an increment that failed with a
/// transient error (which on DynamoDB may come after the write) is not sent again and is not
/// safe to repeat; a plain `SET` is retried up to the plan's attempts and is; a throttled
/// increment is retried, and is safe to repeat.
#[tokio::test]
async fn an_increment_is_never_retried_after_a_failure_that_may_have_applied_it() -> TestResult {
    use entity_manager::store::{Expect, ReturnValues, Update};
    let n = |v: &str| entity_manager::AttributeValue::N(v.into());
    let increment = Update::new().add("n", n("1"));
    let set = Update::new().set("n", n("7"));
    for (transient, update, attempts, safe) in [
        (true, increment.clone(), 1, false),
        (true, set, 4, true),
        (false, increment, 4, true),
    ] {
        let plan = FaultPlan::new(seed()).attempts(4);
        let plan = if transient {
            plan.transient(1.0)
        } else {
            plan.throttle(1.0)
        };
        let store = MemoryStore::new(table()).with_faults(plan);
        let e = store
            .update_item(
                &store_support::key("h", "r"),
                &update,
                Expect::Any,
                ReturnValues::None,
            )
            .await
            .err()
            .ok_or("an update succeeded under a plan that fails them all")?;
        let case = format!("{update:?}: {e}");
        assert_eq!(e.attempts(), Some(attempts), "{case}");
        assert_eq!(e.may_have_applied(), transient, "{case}");
        assert_eq!(e.is_retryable(), safe, "{case}");
        assert_eq!(
            store.fault_counts().throttled + store.fault_counts().transient,
            u64::from(attempts),
            "{case}"
        );
    }
    Ok(())
}

/// Lost acknowledgements: a write applied and then failed with a timeout or an internal error
/// that may have applied it; the write is stored all the same, and the store does not send it
/// again. Reads never lose one.
#[tokio::test]
async fn a_lost_acknowledgement_fails_a_write_that_was_applied() -> TestResult {
    let store = MemoryStore::new(table()).with_faults(FaultPlan::new(seed()).lost_acks(0.3));
    let mut lost = 0;
    for i in 0..200 {
        let it = item(serde_json::json!({ "hashKey": "h", "rangeKey": format!("r{i}") }))?;
        match store.put_item(it, Expect::Absent).await {
            Ok(()) => {}
            Err(e) if e.may_have_applied() => {
                assert!(
                    e.is_timeout() || e.code() == Some("InternalServerError"),
                    "{e}"
                );
                assert_eq!(e.attempts(), Some(1), "sent once: {e}");
                lost += 1;
            }
            Err(e) => return Err(e.into()),
        }
    }
    let counts = store.fault_counts();
    assert_eq!(counts.lost_acks, lost);
    assert!(lost > 20 && lost < 100, "about 30 % of 200: {lost}");
    // every write is stored, those whose answer was lost too
    assert_eq!(store.len(), 200);
    for i in 0..200 {
        let key = store_support::key("h", &format!("r{i}"));
        assert!(store.get_item(&key, None).await?.is_some());
    }
    assert_eq!(store.fault_counts().lost_acks, lost, "a read loses nothing");
    Ok(())
}

/// Latency on the tokio clock: in paused time a call takes exactly its delay, without waiting;
/// with jitter, calls started together take effect in the order of their delays.
#[tokio::test(start_paused = true)]
async fn latency_runs_on_the_tokio_clock() -> TestResult {
    let fixed = MemoryStore::new(table())
        .with_faults(FaultPlan::new(seed()).latency(Duration::from_millis(40), Duration::ZERO));
    let started = tokio::time::Instant::now();
    fixed
        .put_item(
            item(serde_json::json!({ "hashKey": "h", "rangeKey": "a" }))?,
            Expect::Any,
        )
        .await?;
    assert_eq!(started.elapsed(), Duration::from_millis(40));

    let jittered = Arc::new(MemoryStore::new(table()).with_faults(
        FaultPlan::new(seed()).latency(Duration::from_millis(10), Duration::from_millis(100)),
    ));
    let mut tasks = Vec::new();
    for i in 0..20 {
        let store = jittered.clone();
        tasks.push(tokio::spawn(async move {
            let it = item(serde_json::json!({ "hashKey": "h", "rangeKey": "same", "n": i }))
                .map_err(|e| e.to_string())?;
            store
                .put_item(it, Expect::Any)
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>(tokio::time::Instant::now())
        }));
    }
    let mut done = Vec::new();
    for (i, t) in tasks.into_iter().enumerate() {
        done.push((t.await??, i));
    }
    let last = done.iter().max().map(|&(_, i)| i).ok_or("no task")?;
    let stored = jittered
        .get_item(&store_support::key("h", "same"), None)
        .await?
        .ok_or("missing")?;
    // the write that finished last is the one stored
    assert_eq!(stored["n"], AttributeValue::N(last.to_string()));
    assert_eq!(jittered.fault_counts().delayed, 21);
    Ok(())
}

/// A call that hangs fails with a timeout after the operation timeout (in paused time, at
/// once); half of the hanging writes were applied.
#[tokio::test(start_paused = true)]
async fn a_hanging_call_times_out_after_the_operation_timeout() -> TestResult {
    let store = MemoryStore::new(table()).with_faults(
        FaultPlan::new(seed())
            .hangs(1.0)
            .operation_timeout(Duration::from_secs(5))
            .only(&[entity_manager::store::Operation::PutItem]),
    );
    let mut applied = 0;
    for i in 0..40 {
        let started = tokio::time::Instant::now();
        let it = item(serde_json::json!({ "hashKey": "h", "rangeKey": format!("r{i}") }))?;
        let Err(e) = store.put_item(it, Expect::Any).await else {
            return Err("a hanging call answered".into());
        };
        assert!(e.is_timeout() && e.may_have_applied(), "{e}");
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        let key = store_support::key("h", &format!("r{i}"));
        if store.get_item(&key, None).await?.is_some() {
            applied += 1;
        }
    }
    assert!(applied > 5 && applied < 35, "about half of 40: {applied}");
    assert_eq!(store.fault_counts().hangs, 40);
    Ok(())
}

/// A table that records whether each scan page asked for the capacity it consumed, and
/// answers without it when not asked (as `DynamoDB` does).
struct Asked {
    inner: MemoryStore,
    asked: std::sync::Mutex<Vec<bool>>,
}

impl Store for Asked {
    entity_manager_tests::forward_store!(inner: definition, name, put_item, get_item, delete_item, batch_write, batch_get, transact_write, update_item, transact_get, query_page);

    async fn scan_page(
        &self,
        request: &entity_manager::store::ScanPage,
    ) -> Result<entity_manager::store::Page, StoreError> {
        self.asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(request.capacity);
        let mut page = self.inner.scan_page(request).await?;
        if !request.capacity {
            page.consumed_capacity = None;
        }
        Ok(page)
    }
}

/// `store` after a parallel scan of all of it, in pages of 25.
async fn scanned<S: Store>(store: S) -> Result<S, Box<dyn std::error::Error>> {
    ParallelScan::new(&store)
        .page_size(25)
        .items()
        .try_collect::<Vec<_>>()
        .await?;
    Ok(store)
}

/// A parallel scan asks for the read capacity its pages consumed only when something reads
/// it: not through a `RateLimited` store without a limit in capacity units, which then
/// computes the units from the items (the same figure the memory store reports); yes under a
/// limit in capacity units.
#[tokio::test]
async fn a_scan_asks_for_its_consumed_capacity_only_when_it_is_read() -> TestResult {
    use entity_manager::store::{RateLimit, RateLimited, RateUnit};

    let filled = || async {
        let table = MemoryStore::new(table());
        let items: Vec<WriteRequest> = (0..300)
            .map(|i| {
                item(serde_json::json!({ "hashKey": format!("h{}", i % 17), "rangeKey": format!("r{i}"), "text": "x".repeat(i * 7) }))
                    .map(WriteRequest::Put)
            })
            .collect::<Result<_, _>>()?;
        table.batch_write(items).await?;
        Ok::<_, Box<dyn std::error::Error>>(table)
    };
    // reported by the memory store: the reference figure
    let reported = scanned(RateLimited::new(filled().await?, RateLimit::none())).await?;
    let reference = reported.usage().read_units;
    assert!(reference > 6.0, "{reference}");

    let computed = scanned(RateLimited::new(
        Asked {
            inner: filled().await?,
            asked: std::sync::Mutex::default(),
        },
        RateLimit::none(),
    ))
    .await?;
    let asked = computed
        .inner()
        .asked
        .lock()
        .map_err(|e| e.to_string())?
        .clone();
    assert!(!asked.is_empty() && asked.iter().all(|a| !a), "{asked:?}");
    assert!(
        (computed.usage().read_units - reference).abs() < 1e-9,
        "{} computed, {reference} reported",
        computed.usage().read_units
    );

    let limited = scanned(RateLimited::new(
        Asked {
            inner: filled().await?,
            asked: std::sync::Mutex::default(),
        },
        RateLimit::none().reads(1e9).unit(RateUnit::CapacityUnits),
    ))
    .await?;
    let asked = limited
        .inner()
        .asked
        .lock()
        .map_err(|e| e.to_string())?
        .clone();
    assert!(!asked.is_empty() && asked.iter().all(|a| *a), "{asked:?}");
    Ok(())
}
