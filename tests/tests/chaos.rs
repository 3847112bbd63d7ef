//! The guarantees of `DynamoStore` on `DynamoDB` Local behind the chaos proxy
//! (`chaos_support`): throttling, server errors, `503`s, connection resets, transaction
//! conflicts, unprocessed batches and delays past the timeout, seeded. Skipped without
//! `DYNAMODB_ENDPOINT` (required under `CI=true`). Each test prints its seed;
//! `CHAOS_SEED=<n>` replays one.
#![allow(clippy::struct_field_names)]

mod chaos_support;
mod entity_support;
mod store_support;

use std::sync::Arc;
use std::time::Duration;

use chaos_support::{ChaosPlan, ChaosProxy};
use entity_manager::store::{DynamoStore, Expect, Store, WriteRequest};
use entity_manager::{EntityExt, Error, Item};
use entity_support::{Counter, TestResult, definition, member};
use futures::TryStreamExt;

fn seed() -> u64 {
    store_support::seed("CHAOS_SEED")
}

/// A fresh table (created directly), the store that reaches it through a chaos proxy with
/// `plan`, and the direct store (to check the outcome), or `None` when the `DynamoDB` tests
/// are skipped.
async fn chaos_store(
    test: &str,
    plan: ChaosPlan,
    timeouts: (Duration, Duration),
) -> Result<Option<(DynamoStore, DynamoStore, ChaosProxy)>, Box<dyn std::error::Error>> {
    let Some(direct) = store_support::dynamo_store(test, definition()?).await? else {
        return Ok(None);
    };
    let upstream = std::env::var("DYNAMODB_ENDPOINT")?;
    let proxy = ChaosProxy::start(&upstream, plan).await?;
    let store = DynamoStore::new(
        store_support::client_at(&proxy.endpoint),
        direct.table_name(),
        definition()?,
    )
    .with_timeouts(timeouts.0, timeouts.1);
    Ok(Some((store, direct, proxy)))
}

const TIMEOUTS: (Duration, Duration) = (Duration::from_secs(10), Duration::from_secs(2));

/// 32 tasks × 50 version-locked increments (half `modify`, half transactions under the version
/// read) through 10 % throttling, server errors, `503`s, resets and 20 % transaction
/// conflicts: exactly 1,600.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn version_locked_increments_add_up_through_chaos() -> TestResult {
    let plan = ChaosPlan {
        seed: seed(),
        throttle: 0.10,
        server_error: 0.03,
        unavailable: 0.02,
        reset: 0.02,
        transaction_conflict: 0.20,
        ..ChaosPlan::default()
    };
    let Some((store, direct, proxy)) = chaos_store("chaos-increments", plan, TIMEOUTS).await?
    else {
        return Ok(());
    };
    Counter {
        counter_id: "c".into(),
        created: 1_000,
        value: 0,
        version: 0,
    }
    .create(&direct)
    .await?;
    let store = Arc::new(store);
    let mut tasks = Vec::new();
    for t in 0..32 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut done = 0;
            while done < 50 {
                if entity_support::increment_once(&*store, t).await? {
                    done += 1;
                }
            }
            Ok(())
        }));
    }
    let mut outcome: Result<(), String> = Ok(());
    for t in tasks {
        if let Err(e) = t.await? {
            outcome = Err(e);
        }
    }
    let value = Counter::get(&direct, "c").await?.map(|c| c.value);
    let faults = proxy.counts.faults();
    direct.delete_table().await?;
    outcome?;
    eprintln!("{faults} faults injected");
    assert_eq!(value, Some(1_600));
    assert!(faults > 0);
    Ok(())
}

/// `create` of one id from 32 tasks with different timestamps through the chaos: exactly one
/// wins.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_create_wins_through_chaos() -> TestResult {
    let plan = ChaosPlan {
        seed: seed(),
        throttle: 0.10,
        server_error: 0.05,
        reset: 0.05,
        transaction_conflict: 0.20,
        ..ChaosPlan::default()
    };
    let Some((store, direct, _proxy)) = chaos_store("chaos-create", plan, TIMEOUTS).await? else {
        return Ok(());
    };
    let store = Arc::new(store);
    let mut tasks = Vec::new();
    for t in 0..32u64 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                match member("solo", 500 + t * 100).create(&*store).await {
                    Ok(()) => return Ok(true),
                    Err(Error::AlreadyExists { .. }) => return Ok(false),
                    Err(Error::Store { source, .. }) if source.is_retryable() => {}
                    // refused on a resend after an unanswered attempt: every fault here comes
                    // before the request reaches the table, so another create won
                    Err(Error::Store { source, .. }) if source.is_refused_after_lost_answer() => {
                        return Ok(false);
                    }
                    Err(e) => return Err(e.to_string()),
                }
            }
        }));
    }
    let mut wins = 0;
    let mut outcome = Ok(());
    for t in tasks {
        match t.await? {
            Ok(true) => wins += 1,
            Ok(false) => {}
            Err(e) => outcome = Err(e),
        }
    }
    let items: Vec<Item> = entity_manager::scan::ParallelScan::new(&direct)
        .consistent(true)
        .items()
        .try_collect()
        .await?;
    direct.delete_table().await?;
    outcome?;
    assert_eq!(wins, 1);
    assert_eq!(items.len(), 1, "one item holds the id");
    Ok(())
}

/// A batch write of 20,000 records with 20 % of `BatchWriteItem` calls answered "all
/// unprocessed" and 5 % throttled: exactly the 20,000 records are stored, each once (the table
/// is keyed by the record, so a record written twice would still be one item: the count of
/// items and their equality with the records prove none is missing or altered).
#[tokio::test]
async fn a_batch_stores_each_record_once_through_chaos() -> TestResult {
    const RECORDS: usize = 20_000;
    let plan = ChaosPlan {
        seed: seed(),
        throttle: 0.05,
        unprocessed: 0.20,
        ..ChaosPlan::default()
    };
    let Some((store, direct, proxy)) = chaos_store("chaos-batch", plan, TIMEOUTS).await? else {
        return Ok(());
    };
    let records: Vec<Item> = (0..RECORDS)
        .map(|i| {
            store_support::item(serde_json::json!({
                "hashKey": format!("h{}", i % 41), "rangeKey": format!("r{i}"), "n": i
            }))
        })
        .collect::<Result<_, _>>()?;
    let started = std::time::Instant::now();
    let written = store
        .batch_write(records.iter().cloned().map(WriteRequest::Put).collect())
        .await;
    eprintln!("{RECORDS} records written in {:?}", started.elapsed());
    let mut stored: Vec<Item> = entity_manager::scan::ParallelScan::new(&direct)
        .consistent(true)
        .items()
        .try_collect()
        .await?;
    direct.delete_table().await?;
    written?;
    let order = |i: &Item| store_support::text(i, "rangeKey");
    stored.sort_by_key(order);
    let mut want = records;
    want.sort_by_key(order);
    assert_eq!(stored, want);
    assert!(
        proxy
            .counts
            .unprocessed
            .load(std::sync::atomic::Ordering::SeqCst)
            > 0
    );
    Ok(())
}

/// Every answer delayed past the attempt timeout: every call ends with a typed timeout within
/// its bound; nothing hangs.
#[tokio::test]
async fn delays_past_the_timeout_end_every_call_with_a_typed_timeout() -> TestResult {
    let bound = Duration::from_secs(2);
    let plan = ChaosPlan {
        seed: seed(),
        delay: 1.0,
        delay_by: Duration::from_secs(30),
        ..ChaosPlan::default()
    };
    let Some((store, direct, _proxy)) =
        chaos_store("chaos-delay", plan, (bound, Duration::from_millis(500))).await?
    else {
        return Ok(());
    };
    let item = store_support::key("h", "r");
    let guard = bound * 3;
    let put = tokio::time::timeout(guard, store.put_item(item.clone(), Expect::Any)).await;
    let get = tokio::time::timeout(guard, store.get_item(&item, None)).await;
    let batch = tokio::time::timeout(
        guard,
        store.batch_write(vec![WriteRequest::Put(item.clone()); 1]),
    )
    .await;
    let member_get = tokio::time::timeout(guard, entity_support::Member::get(&store, "x")).await;
    direct.delete_table().await?;
    assert!(put.map_err(|_| "put hung")?.is_err_and(|e| e.is_timeout()));
    assert!(get.map_err(|_| "get hung")?.is_err_and(|e| e.is_timeout()));
    assert!(
        batch
            .map_err(|_| "batch hung")?
            .is_err_and(|e| e.cause.is_timeout())
    );
    match member_get.map_err(|_| "typed get hung")? {
        Err(Error::BatchGet { source, .. }) => assert!(source.cause.is_timeout()),
        Err(Error::Store { source, .. }) => assert!(source.is_timeout()),
        other => return Err(format!("typed get: {other:?}").into()),
    }
    Ok(())
}

/// The proxy without faults passes a batch through unchanged.
#[tokio::test]
async fn a_clean_proxy_passes_a_batch_through() -> TestResult {
    let plan = ChaosPlan {
        seed: seed(),
        ..ChaosPlan::default()
    };
    let Some((store, direct, _proxy)) = chaos_store("chaos-clean", plan, TIMEOUTS).await? else {
        return Ok(());
    };
    let records: Vec<WriteRequest> = (0..100)
        .map(|i| {
            store_support::item(serde_json::json!({ "hashKey": "h", "rangeKey": format!("r{i}") }))
                .map(WriteRequest::Put)
        })
        .collect::<Result<_, _>>()?;
    let started = std::time::Instant::now();
    let written = store.batch_write(records).await;
    eprintln!(
        "clean batch: {:?} in {:?}",
        written.as_ref().err(),
        started.elapsed()
    );
    direct.delete_table().await?;
    written?;
    Ok(())
}

/// `with_sdk_retries` reaches the wire: with every request throttled, a call in standard mode
/// is sent exactly the configured number of times and fails as throttled; adaptive mode is set
/// on the client and sends no more than that (its rate limiter may hold the last attempts past
/// the operation timeout).
#[tokio::test]
async fn the_sdk_retry_mode_and_attempts_are_what_the_store_sends() -> TestResult {
    use entity_manager::store::SdkRetryMode;
    use entity_manager::store::aws_sdk_dynamodb::config::retry::RetryMode;
    for (mode, attempts) in [(SdkRetryMode::Standard, 4), (SdkRetryMode::Adaptive, 3)] {
        let plan = ChaosPlan {
            seed: seed(),
            throttle: 1.0,
            ..ChaosPlan::default()
        };
        let Some((store, direct, proxy)) = chaos_store("chaos-sdk-retry", plan, TIMEOUTS).await?
        else {
            return Ok(());
        };
        let store = store.with_sdk_retries(mode, attempts);
        let config = store.client().config().retry_config().cloned();
        let put = store
            .put_item(store_support::key("h", "r"), Expect::Any)
            .await;
        let sent = proxy
            .counts
            .requests
            .load(std::sync::atomic::Ordering::SeqCst);
        direct.delete_table().await?;
        let config = config.ok_or("no retry configuration")?;
        assert_eq!(config.max_attempts(), attempts, "{mode:?}");
        // one call is sent (the first-use stamp check's read, which fails the put when it
        // cannot be made)
        if mode == SdkRetryMode::Standard {
            assert_eq!(config.mode(), RetryMode::Standard);
            assert!(put.is_err_and(|e| e.is_throttled()), "{mode:?}");
            assert_eq!(sent, u64::from(attempts), "{mode:?}");
        } else {
            assert_eq!(config.mode(), RetryMode::Adaptive);
            assert!(put.is_err(), "{mode:?}");
            assert!(sent >= 1 && sent <= u64::from(attempts), "{mode:?}: {sent}");
        }
    }
    Ok(())
}

/// Nothing that could apply twice is sent twice: with every `UpdateItem` answered
/// `InternalServerError` (which on DynamoDB may come after the write), an update with an
/// increment is sent once and gives up saying it may have been applied and is not safe to
/// repeat, while a plain `SET` is sent as many times as the SDK allows and is safe to repeat;
/// with every `UpdateItem` throttled (refused before anything is done), the increment too is
/// sent again up to the SDK's attempts and is safe to repeat.
#[tokio::test]
async fn an_increment_is_never_sent_twice_after_a_failure_that_may_have_applied_it() -> TestResult {
    use entity_manager::store::{ReturnValues, SdkRetryMode, Update};
    let n = |v: &str| entity_manager::AttributeValue::N(v.into());
    let increment = Update::new().add("n", n("1"));
    let set = Update::new().set("n", n("7"));
    let cases = [
        // (fault, update, requests sent, repeatable verdict)
        ("500", increment.clone(), 1, false),
        ("500", set.clone(), 3, true),
        ("throttle", increment.clone(), 3, true),
    ];
    for (fault, update, sent, safe) in cases {
        let plan = ChaosPlan {
            seed: seed(),
            only: &["UpdateItem"],
            server_error: if fault == "500" { 1.0 } else { 0.0 },
            throttle: if fault == "throttle" { 1.0 } else { 0.0 },
            ..ChaosPlan::default()
        };
        let Some((store, direct, proxy)) = chaos_store("chaos-once", plan, TIMEOUTS).await? else {
            return Ok(());
        };
        let store = store.with_sdk_retries(SdkRetryMode::Standard, 3);
        let key = store_support::key("h", "r");
        let outcome = store
            .update_item(&key, &update, Expect::Any, ReturnValues::None)
            .await;
        let requests = proxy
            .counts
            .targeted
            .load(std::sync::atomic::Ordering::SeqCst);
        direct.delete_table().await?;
        let e = outcome
            .err()
            .ok_or("an update succeeded through a proxy that fails them all")?;
        let case = format!("{fault} {update:?}: {e}");
        assert_eq!(requests, sent, "{case}");
        assert_eq!(e.attempts(), Some(u32::try_from(sent)?), "{case}");
        assert_eq!(e.may_have_applied(), fault == "500", "{case}");
        assert_eq!(e.is_retryable(), safe, "{case}");
        let says = if safe {
            "sending it again is safe"
        } else {
            "not sent again"
        };
        assert!(e.to_string().contains(says), "{case}");
    }
    Ok(())
}

/// A conditional write (a `create`, a version-locked `modify`) whose first attempt was applied
/// and its answer lost (a `500`, a dropped connection, silence past the attempt timeout) is
/// sent again by the SDK, and that attempt fails its own condition. The caller must not be
/// told that someone else won (`AlreadyExists`) nor, for `modify`, have its change applied a
/// second time: it is acknowledged or reported as a failure that may have applied, and the
/// record holds the change once.
#[tokio::test]
async fn a_conditional_write_whose_answer_was_lost_is_never_refused_for_its_own_success()
-> TestResult {
    use chaos_support::LostAnswer;
    for how in [
        LostAnswer::ServerError,
        LostAnswer::Dropped,
        LostAnswer::Silence,
    ] {
        for call in ["PutItem", "UpdateItem", "TransactWriteItems"] {
            let plan = ChaosPlan {
                seed: seed(),
                only: match call {
                    "PutItem" => &["PutItem"],
                    "UpdateItem" => &["UpdateItem"],
                    _ => &["TransactWriteItems"],
                },
                lost_ack: 1.0,
                lost_as: Some(how),
                delay_by: Duration::from_secs(2),
                max_faults: Some(1),
                ..ChaosPlan::default()
            };
            let timeouts = (Duration::from_secs(5), Duration::from_millis(500));
            let Some((store, direct, proxy)) = chaos_store("chaos-own", plan, timeouts).await?
            else {
                return Ok(());
            };
            let case = format!("{call} answered by {how:?}");
            let counter = Counter {
                counter_id: "c".into(),
                created: 1_000,
                value: 0,
                version: 0,
            };
            let outcome = match call {
                // a create of a one-bump counter is one conditional PutItem
                "PutItem" => counter.create(&store).await,
                // a modify is a read, then an UpdateItem under the version read
                "UpdateItem" => {
                    counter.create(&direct).await?;
                    Counter::modify(&store, "c", |c| c.value += 1)
                        .await
                        .map(|_| ())
                }
                // a create of a sharded member checks its other shards: a transaction
                _ => member("m", 500).create(&store).await,
            };
            let (stored_counter, stored_member) = stored_once_lost(&direct, &proxy, &case).await?;
            match &outcome {
                Ok(()) => {}
                Err(e) if entity_manager::testing::may_have_applied(e) => {
                    assert!(e.to_string().contains("read the record"), "{case}: {e}");
                }
                Err(e) => panic!("{case}: the write applied, yet failed with {e}"),
            }
            match call {
                // stored at the next version
                "PutItem" => assert_eq!(
                    stored_counter,
                    Some(Counter {
                        version: 1,
                        ..counter
                    }),
                    "{case}"
                ),
                "UpdateItem" => assert_eq!(
                    stored_counter.map(|c| (c.value, c.version)),
                    Some((1, 2)),
                    "{case}: the increment applied once"
                ),
                _ => assert!(stored_member.is_some(), "{case}"),
            }
        }
    }
    Ok(())
}

/// A write whose first attempt was applied and its answer lost (a `500`), and whose attempts
/// sent again were then refused before they reached the table (throttled, or, a transaction,
/// canceled by a conflict), has an unknown outcome: the caller is told that it may have
/// applied (or that it was done), never that it was refused nor that nothing was written, and
/// the record holds the write once. (Issue 50, `FAULT_SEED=13`: the move's re-send canceled by
/// a conflict was sent again by the store's conflict loop under a new idempotency token and
/// refused by its own condition, so a move that applied was answered `VersionConflict`; a
/// write throttled on every re-send ended as "throttled: nothing written".)
#[tokio::test]
async fn a_write_whose_resends_were_refused_before_the_table_is_never_reported_undone() -> TestResult
{
    use chaos_support::{Fault, LostAnswer};
    const LOST: Fault = Fault::LostAck(LostAnswer::ServerError);
    const THROTTLED: &[Fault] = &[LOST, Fault::Throttle, Fault::Throttle];
    let cases: [(&str, &'static [&'static str], &'static [Fault]); 5] = [
        (
            "move, then a conflict",
            &["TransactWriteItems"],
            &[LOST, Fault::Conflict],
        ),
        ("move, then throttled", &["TransactWriteItems"], THROTTLED),
        ("modify, then throttled", &["UpdateItem"], THROTTLED),
        ("create, then throttled", &["PutItem"], THROTTLED),
        ("delete, then throttled", &["DeleteItem"], THROTTLED),
    ];
    // every case is tried, and every one that fails is named
    let mut failures = Vec::new();
    for (case, only, script) in cases {
        let plan = ChaosPlan {
            seed: seed(),
            only,
            script,
            ..ChaosPlan::default()
        };
        match resend_case(case, plan).await? {
            None => return Ok(()),
            Some(found) => failures.extend(found),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    Ok(())
}

/// One case of [`a_write_whose_resends_were_refused_before_the_table_is_never_reported_undone`]
/// through a proxy with `plan`: what went wrong (`None` when the `DynamoDB` tests are skipped).
async fn resend_case(
    case: &str,
    plan: ChaosPlan,
) -> Result<Option<Vec<String>>, Box<dyn std::error::Error>> {
    use entity_support::Member;
    let Some(direct) = store_support::dynamo_store("chaos-resend", definition()?).await? else {
        return Ok(None);
    };
    let upstream = std::env::var("DYNAMODB_ENDPOINT")?;
    let proxy = ChaosProxy::start(&upstream, plan).await?;
    let store = proxy
        .store_of(&direct)
        .with_timeouts(Duration::from_secs(10), Duration::from_secs(2));
    let counter = Counter {
        counter_id: "c".into(),
        created: 1_000,
        value: 0,
        version: 0,
    };
    member("m", 500).create(&direct).await?;
    let now = Member::get(&direct, "m").await?.ok_or("no member")?;
    let moved = Member {
        created: 2_500,
        ..now.clone()
    };
    if case != "create, then throttled" {
        counter.create(&direct).await?;
    }
    let outcome = match case {
        "modify, then throttled" => Counter::modify(&store, "c", |c| c.value += 1)
            .await
            .map(|_| ()),
        "create, then throttled" => counter.create(&store).await,
        "delete, then throttled" => Counter::delete(&store, "c").await.map(|_| ()),
        _ => Member::move_record(&store, "m", &moved).await,
    };
    let (stored_counter, stored_member) = stored_once_lost(&direct, &proxy, case).await?;
    match &outcome {
        Ok(()) => println!("{case}: done"),
        Err(e) => println!("{case}: {e}"),
    }
    let mut failures = Vec::new();
    match &outcome {
        Ok(()) => {}
        // sent again by the store under the same idempotency token, which DynamoDB (Local
        // too) answers for a transaction it carried out as done
        Err(e) if case == "move, then a conflict" => {
            failures.push(format!(
                "{case}: the move applied, and its token was not kept: {e}"
            ));
        }
        Err(e)
            if entity_manager::testing::may_have_applied(e)
                && e.to_string().contains("answer was lost") => {}
        Err(e) => failures.push(format!("{case}: the write applied, yet failed with {e}")),
    }
    let applied_once = match case {
        "modify, then throttled" => stored_counter.map(|c| (c.value, c.version)) == Some((1, 2)),
        "create, then throttled" => {
            stored_counter
                == Some(Counter {
                    version: 1,
                    ..counter
                })
        }
        "delete, then throttled" => stored_counter.is_none(),
        _ => {
            stored_member
                == Some(Member {
                    version: now.version + 1,
                    ..moved
                })
        }
    };
    if !applied_once {
        failures.push(format!("{case}: the write did not apply exactly once"));
    }
    Ok(Some(failures))
}

/// The counter `c` and the member `m` as stored in `direct`'s table (deleted then), once the
/// proxy lost exactly one answer (it fails `case` otherwise).
async fn stored_once_lost(
    direct: &DynamoStore,
    proxy: &ChaosProxy,
    case: &str,
) -> Result<(Option<Counter>, Option<entity_support::Member>), Box<dyn std::error::Error>> {
    let stored_counter = Counter::get(direct, "c").await?;
    let stored_member = entity_support::Member::get(direct, "m").await?;
    let lost = proxy
        .counts
        .lost_acks
        .load(std::sync::atomic::Ordering::SeqCst);
    direct.delete_table().await?;
    assert_eq!(lost, 1, "{case}: the proxy lost no answer");
    Ok((stored_counter, stored_member))
}
