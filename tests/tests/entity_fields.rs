//! Typed fields on both stores: partial updates (`EntityExt::update` with `Changes`) that
//! rewrite every affected generated key, typed conditions on every write (`put_if`,
//! `delete_if`, `Changes::when`, transaction checks), optimistic locking with a version field,
//! a put that never orphans a copy in another shard, and transactions that mix entities,
//! update, check and read.
#![allow(clippy::struct_field_names)] // fields are named after their attributes

use std::sync::Arc;

use entity_manager::field::{Changes, Condition};
use entity_manager::store::{AttributeType, MemoryStore, Store};
use entity_manager::{EntityExt, Error, ReadTransaction, Transaction};

mod entity_support;
mod store_support;

use entity_support::{
    Counter, Member, TestResult, assert_stored, by_last_name, definition, member, with_phone,
};

async fn typed_updates<S: Store>(store: &S) -> TestResult {
    let f = Member::FIELDS;
    for (id, created) in [("a", 500), ("b", 1_500), ("c", 2_500)] {
        member(id, created).create(store).await?;
    }
    // a create stores the record's version plus one
    let a = Member::get(store, "a").await?.ok_or("a missing")?;
    assert_eq!(a.version, 1);

    // rename: the generated key is rewritten in the same write; the index follows
    let b = Member::update(store, "b", Changes::new().set(f.last_name, "king"))
        .await?
        .ok_or("b missing")?;
    assert_eq!((b.last_name.as_str(), b.version), ("king", 2));
    assert_stored(store, &b).await?;
    assert!(by_last_name(store, "lastb").await?.is_empty());
    assert_eq!(by_last_name(store, "king").await?, ["b"]);

    // clear a phone: the record leaves the sparse index; and back
    let c = Member::update(store, "c", Changes::new().remove(f.phone))
        .await?
        .ok_or("c missing")?;
    assert_eq!(c.phone, None);
    assert_stored(store, &c).await?;
    assert_eq!(with_phone(store).await?, ["a", "b"]);
    let c = Member::update(
        store,
        "c",
        Changes::new().set_option(f.phone, Some("555-9".to_owned())),
    )
    .await?
    .ok_or("c missing")?;
    assert_stored(store, &c).await?;
    assert_eq!(with_phone(store).await?, ["a", "b", "c"]);

    // atomic changes of fields outside every key
    let c = Member::update(
        store,
        "c",
        Changes::new()
            .add(f.logins, 5)
            .append(f.tags, ["x", "y"])
            .prepend(f.tags, ["first"]),
    )
    .await;
    // two changes of one field are refused before any store call
    assert!(matches!(c, Err(Error::InvalidUpdate { .. })), "{c:?}");
    let c = Member::update(
        store,
        "c",
        Changes::new().add(f.logins, 5).append(f.tags, ["x", "y"]),
    )
    .await?
    .ok_or("c missing")?;
    assert_eq!(c.logins, 5);
    assert_eq!(c.tags, ["new", "x", "y"]);
    assert_stored(store, &c).await?;

    // a condition that fails: typed, with the stored record, nothing written
    let refused = Member::update(
        store,
        "c",
        Changes::new().add(f.logins, 1).when(f.logins.gt(5)),
    )
    .await;
    let Err(Error::ConditionFailed { current, .. }) = refused else {
        return Err(format!("expected ConditionFailed, got {refused:?}").into());
    };
    let current = current.ok_or("no current item")?;
    assert_eq!(Member::from_item(&current)?, c);
    assert_stored(store, &c).await?;

    // a stale version: typed conflict naming both versions
    let stale = Member::update(
        store,
        "c",
        Changes::new().add(f.logins, 1).if_version(c.version - 1),
    )
    .await;
    match stale {
        Err(Error::VersionConflict {
            expected, stored, ..
        }) => {
            assert_eq!(expected, (c.version - 1).to_string());
            assert_eq!(stored, Some(c.version.to_string()));
        }
        other => return Err(format!("expected VersionConflict, got {other:?}").into()),
    }
    let c2 = Member::update(
        store,
        "c",
        Changes::new().add(f.logins, 1).if_version(c.version),
    )
    .await?
    .ok_or("c missing")?;
    assert_eq!((c2.logins, c2.version), (6, c.version + 1));

    // a missing record: None, nothing created
    assert_eq!(
        Member::update(store, "zz", Changes::new().add(f.logins, 1)).await?,
        None
    );
    assert_eq!(Member::get(store, "zz").await?, None);
    Ok(())
}

/// Every kind of typed condition gives the verdict the record's own values give.
async fn conditions_agree_with_the_record<S: Store>(store: &S) -> TestResult {
    let f = Member::FIELDS;
    let mut m = member("m", 1_500);
    m.logins = 7;
    m.phone = None;
    m.create(store).await?;
    let m = Member::get(store, "m").await?.ok_or("m missing")?;
    let cases: Vec<(&str, Condition<Member>, bool)> = vec![
        ("phone exists", f.phone.exists(), m.phone.is_some()),
        ("phone not exists", f.phone.not_exists(), m.phone.is_none()),
        ("logins = 7", f.logins.eq(7), m.logins == 7),
        ("logins <> 7", f.logins.ne(7), m.logins != 7),
        ("logins < 7", f.logins.lt(7), m.logins < 7),
        ("logins <= 7", f.logins.le(7), m.logins <= 7),
        ("logins > 6", f.logins.gt(6), m.logins > 6),
        ("logins >= 8", f.logins.ge(8), m.logins >= 8),
        (
            "between 1 6",
            f.logins.between(1, 6),
            (1..=6).contains(&m.logins),
        ),
        (
            "between 7 9",
            f.logins.between(7, 9),
            (7..=9).contains(&m.logins),
        ),
        (
            "in",
            f.logins.is_in([1, 7, 9]),
            [1, 7, 9].contains(&m.logins),
        ),
        (
            "begins_with",
            f.first_name.begins_with("fir"),
            m.first_name.starts_with("fir"),
        ),
        (
            "begins_with no",
            f.first_name.begins_with("x"),
            m.first_name.starts_with('x'),
        ),
        (
            "contains substring",
            f.last_name.contains("stm"),
            m.last_name.contains("stm"),
        ),
        (
            "contains element",
            f.tags.contains("new"),
            m.tags.iter().any(|t| t == "new"),
        ),
        ("size", f.first_name.size().eq(6), m.first_name.len() == 6),
        ("size lt", f.tags.size().lt(1), m.tags.is_empty()),
        ("type N", f.logins.is_type(AttributeType::N), true),
        ("type S", f.logins.is_type(AttributeType::S), false),
        (
            "and",
            f.logins.eq(7) & f.phone.not_exists(),
            m.logins == 7 && m.phone.is_none(),
        ),
        (
            "or",
            f.logins.eq(1) | f.phone.exists(),
            m.logins == 1 || m.phone.is_some(),
        ),
        ("not", !f.logins.eq(7), m.logins != 7),
        (
            "nested",
            !(f.logins.lt(3) | f.first_name.begins_with("x")) & f.tags.size().ge(1),
            !(m.logins < 3 || m.first_name.starts_with('x') || m.tags.is_empty()),
        ),
        // a condition on the unique property (a KeyPart can be compared)
        ("unique", f.member_id.eq("m"), m.member_id == "m"),
    ];
    for (name, condition, expected) in cases {
        // a condition check in a transaction writes nothing
        let checked = Transaction::new()
            .check(&m, condition.clone())?
            .commit(store)
            .await;
        assert_eq!(checked.is_ok(), expected, "{name}: {checked:?}");
        if let Err(e) = checked {
            assert!(matches!(e, Error::ConditionFailed { .. }), "{name}: {e}");
        }
        // and on a delete, which a failed condition leaves undone
        let deleted = Member::delete_if(store, "m", condition).await;
        assert_eq!(deleted.is_ok(), expected, "{name}: {deleted:?}");
        if expected {
            Member::get(store, "m")
                .await?
                .map_or(Ok(()), |_| Err("not deleted"))?;
            // put it back as it was (version 0 creates; the stored version is then 1)
            let mut again = m.clone();
            again.version = 0;
            again.put(store).await?;
            let back = Member::get(store, "m").await?.ok_or("m missing")?;
            assert_eq!(back.version, 1);
        } else {
            assert_eq!(Member::get(store, "m").await?.map(|r| r.logins), Some(7));
        }
    }
    Ok(())
}

async fn puts_deletes_and_versions<S: Store>(store: &S) -> TestResult {
    let f = Member::FIELDS;
    member("p", 1_500).create(store).await?;
    let p = Member::get(store, "p").await?.ok_or("p missing")?;
    // a put of the stored version replaces it and increments the version
    let mut next = p.clone();
    next.logins = 3;
    next.put(store).await?;
    let stored = Member::get(store, "p").await?.ok_or("p missing")?;
    assert_eq!((stored.logins, stored.version), (3, p.version + 1));
    // a put of a stale version is a conflict, nothing written
    let e = p.put(store).await.err().ok_or("stale put accepted")?;
    assert!(matches!(e, Error::VersionConflict { .. }), "{e}");
    assert_eq!(Member::get(store, "p").await?, Some(stored.clone()));
    // a put under another timestamp (another shard) would orphan the stored copy: refused
    let mut elsewhere = stored.clone();
    elsewhere.created = 2_500;
    let e = elsewhere
        .put(store)
        .await
        .err()
        .ok_or("orphaning put accepted")?;
    assert!(matches!(e, Error::StoredElsewhere { .. }), "{e}");
    assert_eq!(Member::get(store, "p").await?, Some(stored.clone()));
    // put_if: the condition decides
    let e = stored
        .put_if(store, f.logins.eq(99))
        .await
        .err()
        .ok_or("put_if accepted")?;
    assert!(matches!(e, Error::ConditionFailed { .. }), "{e}");
    stored.put_if(store, f.logins.eq(3)).await?;
    // delete_if: refused, then done
    let e = Member::delete_if(store, "p", f.logins.gt(3))
        .await
        .err()
        .ok_or("delete_if accepted")?;
    assert!(matches!(e, Error::ConditionFailed { .. }), "{e}");
    let deleted = Member::delete_if(store, "p", f.logins.le(3)).await?;
    assert_eq!(deleted.map(|d| d.member_id), Some("p".to_owned()));
    assert_eq!(Member::get(store, "p").await?, None);
    Ok(())
}

async fn transactions<S: Store>(store: &S) -> TestResult {
    let f = Member::FIELDS;
    member("t1", 500).create(store).await?;
    member("t2", 2_500).create(store).await?;
    let t1 = Member::get(store, "t1").await?.ok_or("t1")?;
    let t2 = Member::get(store, "t2").await?.ok_or("t2")?;
    let counter = Counter {
        counter_id: "members".into(),
        created: 1,
        value: 2,
        version: 0,
    };
    // a rename, a check, a create of another entity: all or nothing
    Transaction::new()
        .update(&t1, Changes::new().set(f.last_name, "renamed"))?
        .check(&t2, f.logins.eq(0))?
        .create(&counter)?
        .commit(store)
        .await?;
    let t1 = Member::get(store, "t1").await?.ok_or("t1")?;
    assert_eq!(t1.last_name, "renamed");
    assert_stored(store, &t1).await?;
    assert_eq!(by_last_name(store, "renamed").await?, ["t1"]);

    // one stale record fails the whole transaction, with a typed error
    let stale_t1 = member("t1", 500);
    let e = Transaction::new()
        .update(&t2, Changes::new().add(f.logins, 1))?
        .update(&stale_t1, Changes::new().add(f.logins, 1))?
        .commit(store)
        .await
        .err()
        .ok_or("stale transaction accepted")?;
    assert!(matches!(e, Error::VersionConflict { .. }), "{e}");
    assert_eq!(Member::get(store, "t2").await?, Some(t2.clone()));

    // a consistent read of several entities
    let mut read = ReadTransaction::new();
    let h1 = read.get::<Member, _>("t1")?;
    let h2 = read.get::<Member, _>("t2")?;
    let hc = read.get::<Counter, _>("members")?;
    let hn = read.get::<Member, _>("nobody")?;
    let results = read.commit(store).await?;
    assert_eq!(results.get(h1)?, Some(t1.clone()));
    assert_eq!(results.get(h2)?, Some(t2.clone()));
    assert_eq!(results.get(hc)?.map(|c| c.value), Some(2));
    assert_eq!(results.get(hn)?, None);

    // delete a record as read: refused once it changed, done when current
    let e = Transaction::new()
        .delete_record(&member("t2", 2_500))?
        .commit(store)
        .await
        .err()
        .ok_or("stale delete accepted")?;
    assert!(matches!(e, Error::VersionConflict { .. }), "{e}");
    Transaction::new()
        .delete_record(&t2)?
        .delete_record(&t1)?
        .commit(store)
        .await?;
    assert_eq!(Member::get(store, "t1").await?, None);
    assert_eq!(Member::get(store, "t2").await?, None);
    Ok(())
}

/// `tasks` tasks each add one to a counter `increments` times by get, change and a
/// version-checked put, retrying on a version conflict.
async fn version_locked_increments<S: Store + 'static>(
    store: Arc<S>,
    tasks: u64,
    increments: u64,
) -> TestResult {
    Counter {
        counter_id: "c".into(),
        created: 1,
        value: 0,
        version: 0,
    }
    .create(&*store)
    .await?;
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let store = Arc::clone(&store);
        handles.push(tokio::spawn(async move {
            let mut conflicts = 0_u64;
            for _ in 0..increments {
                loop {
                    let mut counter = Counter::get(&*store, "c")
                        .await
                        .map_err(|e| e.to_string())?
                        .ok_or("counter gone")?;
                    counter.value += 1;
                    match counter.put(&*store).await {
                        Ok(()) => break,
                        Err(Error::VersionConflict { .. }) => {
                            conflicts += 1;
                            tokio::task::yield_now().await;
                        }
                        Err(e) => return Err(e.to_string()),
                    }
                }
            }
            Ok::<u64, String>(conflicts)
        }));
    }
    let mut conflicts = 0;
    for handle in handles {
        conflicts += handle.await??;
    }
    let counter = Counter::get(&*store, "c").await?.ok_or("gone")?;
    assert_eq!(counter.value, tasks * increments);
    // the create wrote version 1; every successful put added one
    assert_eq!(counter.version, 1 + tasks * increments);
    assert_stored(&*store, &counter).await?;
    println!(
        "{} version-locked increments, {conflicts} conflicts retried",
        tasks * increments
    );
    Ok(())
}

/// Atomic adds (no read-modify-write) from many tasks lose nothing.
async fn atomic_adds<S: Store + 'static>(store: Arc<S>, tasks: u64, adds: u64) -> TestResult {
    member("adder", 1_500).create(&*store).await?;
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let store = Arc::clone(&store);
        handles.push(tokio::spawn(async move {
            for _ in 0..adds {
                Member::update(
                    &*store,
                    "adder",
                    Changes::new().add(Member::FIELDS.logins, 1),
                )
                .await
                .map_err(|e| e.to_string())?;
            }
            Ok::<(), String>(())
        }));
    }
    for handle in handles {
        handle.await??;
    }
    let adder = Member::get(&*store, "adder").await?.ok_or("gone")?;
    assert_eq!(adder.logins, tasks * adds);
    assert_eq!(adder.version, 1 + tasks * adds);
    assert_stored(&*store, &adder).await?;
    Ok(())
}

/// `modify` (read, change by closure, guarded write) on a record with a list field: the guard
/// compares the list as read, the version goes up by one whatever the closure does to it.
async fn modify_with_lists_and_versions<S: Store>(store: &S) -> TestResult {
    member("l", 2_500).create(store).await?;
    let changed = Member::modify(store, "l", |m| {
        m.tags.push("second".into());
        m.last_name = "lister".into();
        m.version = 100; // ignored: the stored version decides
    })
    .await?
    .ok_or("l missing")?;
    assert_eq!(changed.tags, ["new", "second"]);
    assert_eq!(changed.version, 2);
    assert_stored(store, &changed).await?;
    assert_eq!(by_last_name(store, "lister").await?, ["l"]);
    Member::delete(store, "l").await?;
    Ok(())
}

/// Concurrent `modify`s that each append to a list lose nothing: the guard compares the list
/// as read, so a write over a list changed meanwhile fails and is retried.
async fn concurrent_list_appends<S: Store + 'static>(
    store: Arc<S>,
    tasks: usize,
    appends: usize,
) -> TestResult {
    member("lists", 1_500).create(&*store).await?;
    let mut handles = Vec::new();
    for task in 0..tasks {
        let store = Arc::clone(&store);
        handles.push(tokio::spawn(async move {
            for n in 0..appends {
                loop {
                    match Member::modify(&*store, "lists", |m| m.tags.push(format!("{task}-{n}")))
                        .await
                    {
                        Ok(_) => break,
                        Err(Error::Conflict { .. }) => tokio::task::yield_now().await,
                        Err(e) => return Err(e.to_string()),
                    }
                }
            }
            Ok(())
        }));
    }
    for handle in handles {
        handle.await??;
    }
    let lists = Member::get(&*store, "lists").await?.ok_or("gone")?;
    let mut tags = lists.tags.clone();
    tags.sort();
    tags.dedup();
    assert_eq!(tags.len(), 1 + tasks * appends, "every append kept once");
    assert_eq!(lists.tags.len(), 1 + tasks * appends);
    assert_stored(&*store, &lists).await?;
    Ok(())
}

async fn all<S: Store>(store: &S) -> TestResult {
    modify_with_lists_and_versions(store).await?;
    typed_updates(store).await?;
    conditions_agree_with_the_record(store).await?;
    puts_deletes_and_versions(store).await?;
    transactions(store).await
}

#[tokio::test]
async fn typed_fields_on_memory() -> TestResult {
    all(&MemoryStore::new(definition()?)).await
}

#[tokio::test]
async fn typed_fields_on_dynamodb() -> TestResult {
    let Some(store) = store_support::dynamo_store("fields", definition()?).await? else {
        return Ok(());
    };
    let result = all(&store).await;
    store.delete_table().await?;
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_tasks_of_fifty_version_locked_increments_on_memory() -> TestResult {
    let store = Arc::new(MemoryStore::new(definition()?));
    version_locked_increments(Arc::clone(&store), 32, 50).await?;
    concurrent_list_appends(Arc::clone(&store), 8, 10).await?;
    atomic_adds(store, 32, 50).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_tasks_of_fifty_version_locked_increments_on_dynamodb() -> TestResult {
    let Some(store) = store_support::dynamo_store("versions", definition()?).await? else {
        return Ok(());
    };
    let store = Arc::new(store);
    let result = async {
        version_locked_increments(Arc::clone(&store), 32, 50).await?;
        concurrent_list_appends(Arc::clone(&store), 8, 10).await?;
        atomic_adds(Arc::clone(&store), 8, 25).await
    }
    .await;
    store.delete_table().await?;
    result
}
