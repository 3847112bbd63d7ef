//! A version field at the largest value of its type: a write that would increment it past that
//! is refused with `Error::InvalidUpdate` before anything is stored, on both stores, and the
//! record stays readable (it used to be written with a version its type cannot hold, and then
//! every read of it failed).

use entity_manager::field::Changes;
use entity_manager::store::{MemoryStore, Store, TableDefinition};
use entity_manager::{Entity, EntityExt, Error, Table};
use serde::{Deserialize, Serialize};

mod store_support;

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[derive(Table)]
#[table(entities(Counter, Tally))]
struct Counters;

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Counters, unique = id, timestamp = created, version = version)]
struct Counter {
    #[transcode("string")]
    id: String,
    #[transcode("timestamp")]
    created: u64,
    hits: u64,
    version: u8,
}

/// A `u64` version: its largest value (20 digits) is past the 19-digit integers a write
/// increments without the general decimal arithmetic.
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Counters, unique = id, timestamp = created, version = version)]
struct Tally {
    #[transcode("string")]
    id: String,
    #[transcode("timestamp")]
    created: u64,
    version: u64,
}

async fn at_the_largest_version<S: Store>(store: &S) -> TestResult {
    let f = Counter::FIELDS;
    Counter {
        id: "c".into(),
        created: 1,
        hits: 0,
        version: 0,
    }
    .create(store)
    .await?;
    // 254 updates: version 255, the largest a u8 holds
    for _ in 0..254 {
        Counter::update(store, "c", Changes::new().add(f.hits, 1)).await?;
    }
    let read = Counter::get(store, "c").await?.ok_or("gone")?;
    assert_eq!((read.version, read.hits), (255, 254));
    // an update, a read-modify-write and a replace would each make it 256: refused
    let refused = [
        Counter::update(store, "c", Changes::new().add(f.hits, 1))
            .await
            .err(),
        Counter::modify(store, "c", |c| c.hits += 1).await.err(),
        read.put(store).await.err(),
    ];
    for error in refused {
        match error {
            Some(Error::InvalidUpdate { reason, .. }) => {
                assert!(
                    reason.contains("255") && reason.contains("version"),
                    "{reason}"
                );
            }
            other => return Err(format!("expected InvalidUpdate, got {other:?}").into()),
        }
    }
    // nothing was written: the record reads back as it was
    assert_eq!(Counter::get(store, "c").await?, Some(read));
    // a new record given the largest version is refused too
    let full = Counter {
        id: "d".into(),
        created: 1,
        hits: 0,
        version: 255,
    };
    assert!(matches!(
        full.create(store).await,
        Err(Error::InvalidUpdate { .. })
    ));
    assert_eq!(Counter::get(store, "d").await?, None);
    Ok(())
}

/// The largest version itself is reachable: a create, a replace and a read-modify-write may
/// each write 255 (a bound off by one refused these).
async fn up_to_the_largest_version<S: Store>(store: &S) -> TestResult {
    let counter = |id: &str, version: u8| Counter {
        id: id.into(),
        created: 1,
        hits: 0,
        version,
    };
    let version = |id: &'static str| async move {
        Counter::get(store, id).await.map(|c| c.map(|c| c.version))
    };
    counter("a", 254).create(store).await?;
    assert_eq!(version("a").await?, Some(255), "a create wrote 255");
    counter("b", 253).create(store).await?;
    let read = Counter::get(store, "b").await?.ok_or("gone")?;
    assert_eq!(read.version, 254);
    read.put(store).await?;
    assert_eq!(version("b").await?, Some(255), "a replace wrote 255");
    counter("c", 253).create(store).await?;
    Counter::modify(store, "c", |c| c.hits += 1).await?;
    assert_eq!(
        version("c").await?,
        Some(255),
        "a read-modify-write wrote 255"
    );
    Ok(())
}

/// The same bound for a `u64` version, whose largest value has 20 digits: a create at
/// `u64::MAX - 1` stores `u64::MAX`; one at `u64::MAX` is refused, nothing stored.
#[tokio::test]
async fn the_largest_u64_version_is_reachable_and_not_passed() -> TestResult {
    let store = MemoryStore::new(TableDefinition::from_schema(Counters::schema()?)?);
    let tally = |id: &str, version: u64| Tally {
        id: id.into(),
        created: 1,
        version,
    };
    tally("a", u64::MAX - 1).create(&store).await?;
    assert_eq!(Tally::get(&store, "a").await?, Some(tally("a", u64::MAX)));
    let refused = tally("b", u64::MAX).create(&store).await;
    assert!(
        matches!(&refused, Err(Error::InvalidUpdate { reason, .. }) if reason.contains("largest value")),
        "{refused:?}"
    );
    assert_eq!(Tally::get(&store, "b").await?, None, "nothing stored");
    Ok(())
}

#[tokio::test]
async fn the_largest_version_is_reachable_on_memory() -> TestResult {
    let store = MemoryStore::new(TableDefinition::from_schema(Counters::schema()?)?);
    up_to_the_largest_version(&store).await
}

#[tokio::test]
async fn the_largest_version_is_reachable_on_dynamodb() -> TestResult {
    let definition = TableDefinition::from_schema(Counters::schema()?)?;
    store_support::on_dynamodb("version_reach", definition, |store| async move {
        up_to_the_largest_version(&store).await
    })
    .await
}

#[tokio::test]
async fn a_version_at_its_largest_value_is_refused_on_memory() -> TestResult {
    let store = MemoryStore::new(TableDefinition::from_schema(Counters::schema()?)?);
    at_the_largest_version(&store).await
}

#[tokio::test]
async fn a_version_at_its_largest_value_is_refused_on_dynamodb() -> TestResult {
    let definition = TableDefinition::from_schema(Counters::schema()?)?;
    store_support::on_dynamodb("version_max", definition, |store| async move {
        at_the_largest_version(&store).await
    })
    .await
}
