//! The concurrency guarantees checked as histories (issue 50): every call of the concurrent
//! tests recorded (`entity_manager::testing::Recorder`) and the whole history checked for
//! linearizability against the library's models, on `MemoryStore` under lost
//! acknowledgements, latency (jittered, in paused time), throttling and transaction conflicts.
//!
//! Each test prints its seed; `FAULT_SEED=<n>` replays one. A refused history prints the
//! smallest sub-history that no order explains.
#![allow(clippy::struct_field_names)] // fields are named after their attributes

mod entity_support;
mod store_support;

use std::sync::Arc;
use std::time::Duration;

use entity_manager::field::Changes;
use entity_manager::store::{FaultPlan, MemoryStore};
use entity_manager::testing::{
    Recorder, Register, RegisterOp, RegisterOut, Require, Versioned, may_have_applied,
};
use entity_manager::{Error, Transaction};
use entity_support::{Counter, Member, TestResult, definition, member};

fn seed() -> u64 {
    store_support::seed("FAULT_SEED")
}

/// Production's faults, after the fact included: 5 % of writes lose their acknowledgement
/// after they applied, every call waits 0 to 5 ms (so calls interleave), 5 % are throttled and
/// 20 % of transactions are canceled by conflicts.
fn faults() -> FaultPlan {
    FaultPlan::new(seed())
        .lost_acks(0.05)
        .latency(Duration::ZERO, Duration::from_millis(5))
        .throttle(0.05)
        .transaction_conflicts(0.2)
}

fn store() -> Result<Arc<MemoryStore>, Box<dyn std::error::Error>> {
    Ok(Arc::new(
        MemoryStore::new(definition()?).with_faults(faults()),
    ))
}

/// Fails with the checker's report when the history is not linearizable.
fn check(recorder: &Recorder<Register>) -> TestResult {
    match recorder.check(&Register::new()) {
        Ok(checked) => {
            println!("linearizable: {checked:?}");
            Ok(())
        }
        Err(refused) => {
            eprintln!("{refused}");
            Err("the history is not linearizable (the refused sub-history is above)".into())
        }
    }
}

/// One increment of counter `c` by way `way` (0: an atomic `add`; 1: `modify`; 2: a read, then
/// `update` under the version read; 3: a read, then a transaction under the version read),
/// recorded. `Ok(true)` when it was acknowledged.
async fn increment(
    recorder: &Recorder<Register>,
    store: &MemoryStore,
    task: usize,
    way: usize,
) -> Result<bool, String> {
    let f = Counter::FIELDS;
    let result = match way {
        0 => recorder
            .update(task, store, "c", Changes::new().add(f.value, 1))
            .await
            .map(|c| c.is_some()),
        1 => recorder
            .modify(task, store, "c", |c: &mut Counter| c.value += 1)
            .await
            .map(|c| c.is_some()),
        _ => match recorder.get::<Counter, _, _>(task, store, "c").await {
            Ok(Some(now)) if way == 2 => recorder
                .update(
                    task,
                    store,
                    "c",
                    Changes::new()
                        .set(f.value, now.value + 1)
                        .if_version(now.version),
                )
                .await
                .map(|c| c.is_some()),
            Ok(Some(now)) => {
                let next = Counter {
                    value: now.value + 1,
                    ..now.clone()
                };
                let call = recorder.invoke(
                    task,
                    RegisterOp::write(
                        "c",
                        Require::Version(now.version),
                        Some(Versioned::stored(&next)),
                    ),
                );
                let tx = Transaction::new()
                    .update(
                        &now,
                        Changes::new()
                            .set(f.value, now.value + 1)
                            .if_version(now.version),
                    )
                    .map_err(|e| e.to_string())?;
                let result = tx.commit(store).await;
                match &result {
                    Ok(()) => call.ok(RegisterOut::Applied),
                    Err(Error::VersionConflict { .. }) => call.ok(RegisterOut::Refused),
                    Err(e) => call.error(e),
                }
                result.map(|()| true)
            }
            Ok(None) => Ok(false),
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(done) => Ok(done),
        Err(Error::VersionConflict { .. } | Error::Conflict { .. }) => Ok(false),
        Err(e @ Error::Store { .. }) if may_have_applied(&e) => Ok(false),
        Err(Error::Store { source, .. }) if source.is_retryable() => Ok(false),
        Err(e) => Err(e.to_string()),
    }
}

/// The four ways to increment, 16 tasks × 20 acknowledged increments, under lost
/// acknowledgements, latency, throttling and conflicts: the history of every call (reads,
/// refused and unknown writes included) is linearizable, and the final count is the
/// acknowledged increments plus some of those whose answer was lost.
#[tokio::test(start_paused = true)]
async fn the_four_increment_ways_are_linearizable_under_lost_acks_and_latency() -> TestResult {
    let store = store()?;
    let recorder = Recorder::<Register>::new();
    let counter = Counter {
        counter_id: "c".into(),
        created: 1_000,
        value: 0,
        version: 0,
    };
    loop {
        match recorder.create(0, &*store, &counter).await {
            // done, or an earlier try whose answer was lost did it
            Ok(()) | Err(Error::AlreadyExists { .. }) => break,
            Err(Error::Store { source, .. }) if source.is_retryable() => {}
            Err(e) => return Err(e.into()),
        }
    }
    let mut tasks = Vec::new();
    for t in 0..16 {
        let (store, recorder) = (store.clone(), recorder.clone());
        tasks.push(tokio::spawn(async move {
            let (mut done, mut tries) = (0, 0);
            while done < 20 && tries < 2_000 {
                tries += 1;
                if increment(&recorder, &store, t + 1, t % 4).await? {
                    done += 1;
                }
            }
            Ok::<_, String>(done)
        }));
    }
    let mut acknowledged = 0;
    for t in tasks {
        acknowledged += t.await??;
    }
    let last = recorder
        .get::<Counter, _, _>(99, &*store, "c")
        .await?
        .ok_or("the counter is gone")?;
    let counts = store.fault_counts();
    println!(
        "acknowledged {acknowledged}, final {}, faults {counts:?}",
        last.value
    );
    // the history first: it says what went wrong, where a count only says that something did
    check(&recorder)?;
    assert!(counts.lost_acks > 0 && counts.delayed > 0 && counts.throttled > 0);
    assert!(last.value >= acknowledged && last.value <= acknowledged + counts.lost_acks);
    Ok(())
}

/// Racing moves (a new timestamp, so another shard) and `modify`s of one versioned record,
/// with reads: every call is linearizable, the record never seen absent nor at an old version
/// after a newer one.
#[tokio::test(start_paused = true)]
async fn racing_moves_and_updates_are_linearizable() -> TestResult {
    let store = store()?;
    let recorder = Recorder::<Register>::new();
    loop {
        match recorder.create(0, &*store, &member("m", 500)).await {
            Ok(()) | Err(Error::AlreadyExists { .. }) => break,
            Err(Error::Store { source, .. }) if source.is_retryable() => {}
            Err(e) => return Err(e.into()),
        }
    }
    let mut tasks = Vec::new();
    for t in 1..=8usize {
        let (store, recorder) = (store.clone(), recorder.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..30u64 {
                let result = match t % 3 {
                    0 => match recorder.get::<Member, _, _>(t, &*store, "m").await {
                        Ok(Some(now)) => {
                            // another shard bump, back and forth
                            let created = if now.created < 1_500 {
                                2_500 + i
                            } else {
                                500 + i
                            };
                            let to = Member { created, ..now };
                            recorder.move_record(t, &*store, "m", &to).await
                        }
                        Ok(None) => return Err("the record was seen absent".to_owned()),
                        Err(e) => Err(e),
                    },
                    1 => recorder
                        .modify(t, &*store, "m", |m: &mut Member| m.logins += 1)
                        .await
                        .map(|_| ()),
                    _ => recorder
                        .get::<Member, _, _>(t, &*store, "m")
                        .await
                        .map(|_| ()),
                };
                match result {
                    Ok(())
                    | Err(
                        Error::VersionConflict { .. }
                        | Error::Conflict { .. }
                        | Error::AlreadyExists { .. }
                        | Error::Store { .. },
                    ) => {}
                    Err(e) => return Err(e.to_string()),
                }
            }
            Ok::<_, String>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    assert!(store.fault_counts().lost_acks > 0);
    check(&recorder)
}

/// `create` of one id from 32 tasks with different timestamps (different shards): the history
/// allows one winner, whatever acknowledgements were lost.
#[tokio::test(start_paused = true)]
async fn thirty_two_creates_of_one_id_are_linearizable() -> TestResult {
    let store = store()?;
    let recorder = Recorder::<Register>::new();
    let mut tasks = Vec::new();
    for t in 0..32u64 {
        let (store, recorder) = (store.clone(), recorder.clone());
        tasks.push(tokio::spawn(async move {
            let task = usize::try_from(t).unwrap_or(0);
            for _ in 0..20 {
                match recorder
                    .create(task, &*store, &member("solo", 500 + t * 100))
                    .await
                {
                    Ok(()) => return Ok(true),
                    Err(Error::AlreadyExists { .. }) => return Ok(false),
                    // the answer was lost: it may have won; sending it again would be refused
                    Err(e) if may_have_applied(&e) => return Ok(false),
                    Err(Error::Store { source, .. }) if source.is_retryable() => {}
                    Err(e) => return Err(e.to_string()),
                }
            }
            Ok(false)
        }));
    }
    let mut wins = 0;
    for t in tasks {
        if t.await?? {
            wins += 1;
        }
    }
    assert!(wins <= 1);
    recorder.get::<Member, _, _>(99, &*store, "solo").await?;
    check(&recorder)
}
