//! Typed updates on both stores: `modify` rewrites every generated key whose components change
//! and removes the ones whose component becomes `None` (the record leaves that sparse index),
//! so the stored item always equals `to_item` of the record; a change of the primary key is
//! refused; concurrent read-modify-writes lose nothing; `move_record` moves a record to another
//! primary key in one transaction.
#![allow(clippy::struct_field_names)] // fields are named after their attributes

use std::sync::Arc;

use entity_manager::store::{MemoryStore, RangeCondition, Store, TableDefinition};
use entity_manager::{AttributeValue, Entity, EntityExt, Error, Table};
use serde::{Deserialize, Serialize};

mod entity_support;
mod store_support;

use entity_support::{TestResult, all_ids, assert_stored};

#[derive(Table)]
#[table(entities(Person))]
struct People;

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = People, unique = person_id, timestamp = created)]
#[shard_bumps(bumps = [
    bump(timestamp = 1_000, char_bits = 2, chars = 1),
    bump(timestamp = 2_000, char_bits = 2, chars = 2),
])]
#[generated(name = name_range_key, components = [last_name, first_name])]
#[index(name = "lastName", range = name_range_key)]
#[index(name = "phone", range = phone)]
struct Person {
    #[transcode("string")]
    person_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    first_name: String,
    #[transcode("string")]
    last_name: String,
    #[transcode("string")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    phone: Option<String>,
    logins: u64,
}

fn person(id: &str, created: u64) -> Person {
    Person {
        person_id: id.to_owned(),
        created,
        first_name: format!("first{id}"),
        last_name: format!("last{id}"),
        phone: Some(format!("555-{id}")),
        logins: 0,
    }
}

fn definition() -> Result<TableDefinition, Box<dyn std::error::Error>> {
    Ok(TableDefinition::from_schema(People::schema()?)?)
}

/// The ids the `lastName` index finds under a last-name prefix.
async fn by_last_name<S: Store>(
    store: &S,
    prefix: &str,
) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let query = Person::query(store)?
        .index(PersonIndex::LastName)
        .range(RangeCondition::BeginsWith(AttributeValue::S(
            Person::name_range_key().last_name(prefix)?.as_str().into(),
        )))
        .shards_between(0, 10_000);
    all_ids(&query, |p| p.person_id).await
}

/// The ids the sparse `phone` index holds.
async fn with_phone<S: Store>(store: &S) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let query = Person::query(store)?
        .index(PersonIndex::Phone)
        .shards_between(0, 10_000);
    all_ids(&query, |p| p.person_id).await
}

async fn rename_and_clear<S: Store>(store: &S) -> TestResult {
    for (id, created) in [("a", 500), ("b", 1_500), ("c", 2_500)] {
        person(id, created).create(store).await?;
    }
    assert_eq!(by_last_name(store, "lastb").await?, ["b"]);
    assert_eq!(with_phone(store).await?, ["a", "b", "c"]);

    // rename: the generated key is rewritten, the lastName index follows
    let renamed = Person::modify(store, "b", |p| p.last_name = "king".into())
        .await?
        .ok_or("b missing")?;
    assert_eq!(renamed.last_name, "king");
    assert_stored(store, &renamed).await?;
    assert!(by_last_name(store, "lastb").await?.is_empty());
    assert_eq!(by_last_name(store, "king").await?, ["b"]);

    // clear a phone: the record leaves the sparse phone index
    let cleared = Person::modify(store, "c", |p| p.phone = None)
        .await?
        .ok_or("c missing")?;
    assert_stored(store, &cleared).await?;
    assert_eq!(with_phone(store).await?, ["a", "b"]);
    // and back
    let back = Person::modify(store, "c", |p| p.phone = Some("555-0".into()))
        .await?
        .ok_or("c missing")?;
    assert_stored(store, &back).await?;
    assert_eq!(with_phone(store).await?, ["a", "b", "c"]);

    // a missing record is None; a change of the primary key is refused and writes nothing
    assert_eq!(Person::modify(store, "zz", |p| p.logins += 1).await?, None);
    for change in [
        (|p: &mut Person| p.created = 1_999) as fn(&mut Person),
        |p: &mut Person| p.person_id = "other".into(),
    ] {
        let e = Person::modify(store, "a", change)
            .await
            .err()
            .ok_or("a primary key change was accepted")?;
        assert!(matches!(e, Error::PrimaryKeyChange { .. }), "{e}");
    }
    assert_stored(store, &person("a", 500)).await?;

    // an explicit move: new timestamp (another bump, another shard) and new id
    let mut moved = person("a2", 2_100);
    moved.first_name = "moved".into();
    Person::move_record(store, "a", &moved).await?;
    assert_eq!(Person::get(store, "a").await?, None);
    assert_eq!(Person::get(store, "a2").await?, Some(moved.clone()));
    assert_stored(store, &moved).await?;
    // onto an existing unique value: refused, nothing written
    let e = Person::move_record(store, "a2", &person("b", 100))
        .await
        .err()
        .ok_or("a move onto an existing record was accepted")?;
    assert!(matches!(e, Error::AlreadyExists { .. }), "{e}");
    assert_eq!(Person::get(store, "a2").await?, Some(moved));
    // from a missing record
    let e = Person::move_record(store, "nobody", &person("n", 100))
        .await
        .err()
        .ok_or("a move of a missing record was accepted")?;
    assert!(matches!(e, Error::NotFound { .. }), "{e}");
    Ok(())
}

/// `tasks` tasks each add one `increments` times, retrying on `Error::Conflict` (at most
/// 200 times in a row, each after 8 attempts: a write that can never succeed fails the test
/// instead of hanging it).
async fn concurrent_increments<S: Store + 'static>(
    store: Arc<S>,
    tasks: u64,
    increments: u64,
) -> TestResult {
    person("counter", 1_500).create(&*store).await?;
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let store = Arc::clone(&store);
        handles.push(tokio::spawn(async move {
            for _ in 0..increments {
                let mut conflicts = 0;
                loop {
                    match Person::modify(&*store, "counter", |p| p.logins += 1).await {
                        Ok(_) => break,
                        Err(Error::Conflict { .. }) if conflicts < 200 => {
                            conflicts += 1;
                            tokio::task::yield_now().await;
                        }
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
    let counter = Person::get(&*store, "counter").await?.ok_or("gone")?;
    assert_eq!(counter.logins, tasks * increments);
    assert_stored(&*store, &counter).await?;
    Ok(())
}

#[tokio::test]
async fn modify_keeps_every_key_consistent_on_memory() -> TestResult {
    rename_and_clear(&MemoryStore::new(definition()?)).await
}

#[tokio::test]
async fn modify_keeps_every_key_consistent_on_dynamodb() -> TestResult {
    let Some(store) = store_support::dynamo_store("modify", definition()?).await? else {
        return Ok(());
    };
    let result = rename_and_clear(&store).await;
    store.delete_table().await?;
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_tasks_of_fifty_increments_leave_1600_on_memory() -> TestResult {
    concurrent_increments(Arc::new(MemoryStore::new(definition()?)), 32, 50).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_tasks_of_fifty_increments_leave_1600_on_dynamodb() -> TestResult {
    let Some(store) = store_support::dynamo_store("increments", definition()?).await? else {
        return Ok(());
    };
    let store = Arc::new(store);
    let result = concurrent_increments(Arc::clone(&store), 32, 50).await;
    store.delete_table().await?;
    result
}
