//! Typed entity operations on both stores: get by id in one round trip over every shard bump,
//! create refused when the unique value exists in any shard, put, delete, batches and
//! transactions across entities.
#![allow(clippy::struct_field_names)] // fields are named after their attributes

use std::sync::atomic::{AtomicUsize, Ordering};

use entity_manager::store::{MemoryStore, Store, TableDefinition};
use entity_manager::{Entity, EntityExt, Error, Item, Table, Transaction};
use serde::{Deserialize, Serialize};

mod store_support;

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[derive(Table)]
#[table(entities(Account, Login))]
struct Accounts;

/// Three shard bumps after the implied unsharded one: a record's key depends on its timestamp.
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Accounts, unique = account_id, timestamp = created)]
#[shard_bumps(bumps = [
    bump(timestamp = 1_000, char_bits = 2, chars = 1),
    bump(timestamp = 2_000, char_bits = 2, chars = 2),
    bump(timestamp = 3_000, char_bits = 3, chars = 3),
])]
struct Account {
    #[transcode("string")]
    account_id: String,
    #[transcode("timestamp")]
    created: u64,
    name: String,
}

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Accounts, unique = login, timestamp = created)]
#[shard_bumps(bump(timestamp = 1_000, char_bits = 2, chars = 1))]
struct Login {
    #[transcode("string")]
    login: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    account_id: String,
}

fn account(id: &str, created: u64) -> Account {
    Account {
        account_id: id.to_owned(),
        created,
        name: format!("name of {id}"),
    }
}

/// A store that counts the calls made on the store it wraps.
#[derive(Debug, Default)]
struct Counting<S> {
    inner: S,
    calls: AtomicUsize,
}

impl<S> Counting<S> {
    fn new(inner: S) -> Self {
        Self {
            inner,
            calls: AtomicUsize::new(0),
        }
    }
    fn take(&self) -> usize {
        self.calls.swap(0, Ordering::SeqCst)
    }
    fn count(&self) {
        self.calls.fetch_add(1, Ordering::SeqCst);
    }
}

impl<S: Store> Store for Counting<S> {
    entity_manager_tests::forward_store!(inner: definition, name);
    entity_manager_tests::forward_store!(inner, then count: put_item, get_item, delete_item, batch_write, batch_get, transact_write, update_item, transact_get, query_page, scan_page);
}

fn definition() -> Result<TableDefinition, Box<dyn std::error::Error>> {
    Ok(TableDefinition::from_schema(Accounts::schema()?)?)
}

async fn get_scenario<S: Store>(store: &Counting<S>) -> TestResult {
    // One record per bump period; the candidate keys of an id span every bump.
    let records = [
        account("a0", 500),
        account("a1", 1_500),
        account("a2", 2_500),
        account("a3", 3_500),
    ];
    for record in &records {
        record.put(store).await?;
    }
    let candidates = Account::schema()?.primary_keys(&serde_dynamo::to_item(
        serde_json::json!({ "accountId": "a3" }),
    )?)?;
    assert!(candidates.len() >= 3, "{candidates:?}");
    store.take();
    for record in &records {
        assert_eq!(
            Account::get(store, &record.account_id).await?.as_ref(),
            Some(record)
        );
        assert_eq!(store.take(), 1, "one round trip for {}", record.account_id);
    }
    // a miss over several candidate keys is proved by a transactional read: one more round trip
    assert_eq!(Account::get(store, "nobody").await?, None);
    assert_eq!(store.take(), 2);

    // Many ids in one batch read, aligned with the ids (a missing one and a repeat included).
    let ids = ["a2", "nobody", "a0", "a2"];
    let got = Account::get_many(store, &ids).await?;
    assert_eq!(
        store.take(),
        2,
        "the batch read, and the transactional read of the miss"
    );
    assert_eq!(
        got,
        vec![
            Some(records[2].clone()),
            None,
            Some(records[0].clone()),
            Some(records[2].clone())
        ]
    );
    Ok(())
}

async fn create_scenario<S: Store>(store: &Counting<S>) -> TestResult {
    let first = account("dup", 1_500);
    first.create(store).await?;
    // The same unique value, created later: another bump, so another shard and another key.
    let again = Account {
        name: "other".into(),
        ..account("dup", 3_500)
    };
    assert_ne!(first.primary_key()?, again.primary_key()?);
    match again.create(store).await {
        Err(Error::AlreadyExists { entity, unique }) => {
            assert_eq!(entity, "account");
            assert_eq!(unique, "dup");
        }
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    // Nothing was written: the new key is free and the old record unchanged.
    let key = again.primary_key()?;
    let key_item: Item = serde_dynamo::to_item(
        serde_json::json!({ "hashKey": key.hash_key, "rangeKey": key.range_key }),
    )?;
    assert_eq!(store.inner.get_item(&key_item, None).await?, None);
    assert_eq!(Account::get(store, "dup").await?, Some(first.clone()));
    // The same key again is refused too.
    assert!(matches!(
        first.create(store).await,
        Err(Error::AlreadyExists { .. })
    ));
    // A fresh unique value is created.
    account("fresh", 3_500).create(store).await?;
    assert_eq!(
        Account::get(store, "fresh").await?,
        Some(account("fresh", 3_500))
    );
    Ok(())
}

async fn delete_scenario<S: Store>(store: &Counting<S>) -> TestResult {
    let records: Vec<Account> = (0..30)
        .map(|n| account(&format!("d{n}"), 100 * n))
        .collect();
    Account::put_many(store, &records).await?;
    assert_eq!(
        Account::delete(store, "d7").await?,
        Some(records[7].clone())
    );
    assert_eq!(Account::get(store, "d7").await?, None);
    assert_eq!(Account::delete(store, "d7").await?, None);
    let gone: Vec<String> = (10..30).map(|n| format!("d{n}")).collect();
    Account::delete_many(store, &gone).await?;
    let got =
        Account::get_many(store, &(0..30).map(|n| format!("d{n}")).collect::<Vec<_>>()).await?;
    for (n, record) in got.iter().enumerate() {
        assert_eq!(record.is_some(), n < 10 && n != 7, "d{n}");
    }
    // an id given twice is one delete (one batch may not name a key twice: both stores refuse
    // it), and ids of missing records are no error
    Account::delete_many(store, &["d8", "d9", "d8", "d40", "d9"]).await?;
    let left = Account::get_many(store, &["d6", "d8", "d9"]).await?;
    assert_eq!(
        left.iter().map(Option::is_some).collect::<Vec<_>>(),
        [true, false, false]
    );
    Ok(())
}

async fn transaction_scenario<S: Store>(store: &Counting<S>) -> TestResult {
    let ann = account("ann", 2_500);
    let login = Login {
        login: "ann@x".into(),
        created: 2_600,
        account_id: "ann".into(),
    };
    Transaction::new()
        .create(&ann)?
        .create(&login)?
        .commit(store)
        .await?;
    assert_eq!(Account::get(store, "ann").await?, Some(ann.clone()));
    assert_eq!(Login::get(store, "ann@x").await?, Some(login.clone()));

    // A transaction whose create collides writes nothing at all.
    let bob = account("bob", 2_500);
    let twin = Login {
        created: 500,
        ..login.clone()
    };
    match Transaction::new()
        .create(&bob)?
        .create(&twin)?
        .commit(store)
        .await
    {
        Err(Error::AlreadyExists { entity, unique }) => {
            assert_eq!((&*entity, &*unique), ("login", "ann@x"));
        }
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    assert_eq!(Account::get(store, "bob").await?, None);

    // Delete a user with their login in one transaction.
    Transaction::new()
        .delete::<Account, _>("ann")?
        .delete::<Login, _>("ann@x")?
        .commit(store)
        .await?;
    assert_eq!(Account::get(store, "ann").await?, None);
    assert_eq!(Login::get(store, "ann@x").await?, None);
    Ok(())
}

macro_rules! both_stores {
    ($name:ident, $scenario:ident) => {
        #[tokio::test]
        async fn $name() -> TestResult {
            let memory = Counting::new(MemoryStore::new(definition()?));
            $scenario(&memory).await?;
            if let Some(dynamo) =
                store_support::dynamo_store(stringify!($name), definition()?).await?
            {
                $scenario(&Counting::new(dynamo)).await?;
            }
            Ok(())
        }
    };
}

both_stores!(get_by_id_is_one_round_trip_over_every_bump, get_scenario);
both_stores!(create_refuses_a_unique_value_of_any_shard, create_scenario);
both_stores!(
    delete_returns_the_record_and_batches_delete_every_candidate,
    delete_scenario
);
both_stores!(
    transactions_mix_entities_all_or_nothing,
    transaction_scenario
);
