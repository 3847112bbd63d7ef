//! Migration from schema A to schema B, on `MemoryStore` and `DynamoDB` Local (when
//! `DYNAMODB_ENDPOINT` is set): a new shard bump that moves records, a changed generated
//! property and a new one with its index, a changed range-key encoding, an item transform, typed
//! records through a transform; the dry run (writes nothing, counts match an oracle),
//! idempotence, a migration stopped by a store failure and resumed, a move onto an occupied
//! key, a record the transform refuses; and a property test over random record sets.
//!
//! The oracle of every test is the record set itself: the table after a migration must hold
//! exactly `B.add_keys(record)` for every record written under A, and B's queries must return
//! exactly the records whose own values match.

mod store_support;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};

use entity_manager::migrate::{Action, MigrateFailure, Migration};
use entity_manager::model::ShardSpace;
use entity_manager::query::untyped::Query;
use entity_manager::scan::{BulkWrites, ParallelScan};
use entity_manager::store::{
    BatchWriteError, MemoryStore, RangeCondition, Store, StoreError, StoreErrorKind,
    TableDefinition, TransactWrite, WriteRequest,
};
use entity_manager::{AttributeValue, Entity, EntityExt, Item, Schema, Table};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use store_support::{TestResult, canonical, text};

type BoxError = Box<dyn std::error::Error>;

/// Schema A: the User service of the seed documents (as the TypeScript golden vectors record
/// it), on the `product` rule.
fn config_a() -> Result<Value, BoxError> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/compat/product-user-service.json"
    );
    let vectors: Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    Ok(vectors["config"].clone())
}

/// Schema B: the user's schedule gets a bump before the first one (records move from the
/// unsharded partition into 4 shards) and the second bump doubles its characters (records
/// move between shards); `firstNameRangeKey` loses a component; a new `cityRangeKey` with its
/// `city` index.
fn config_b() -> Result<Value, BoxError> {
    let mut b = config_a()?;
    b["entities"]["user"]["shardBumps"] = json!([
        { "timestamp": 1_700_000_000_000u64, "charBits": 2, "chars": 1 },
        { "timestamp": 1_726_880_933_000u64, "charBits": 2, "chars": 2 },
        { "timestamp": 1_735_689_600_000u64, "charBits": 3, "chars": 3 }
    ]);
    b["generatedProperties"]["unsharded"]["firstNameRangeKey"] =
        json!(["firstNameCanonical", "created"]);
    b["generatedProperties"]["unsharded"]["cityRangeKey"] = json!(["city", "created"]);
    b["propertyTranscodes"]["city"] = json!("string");
    b["indexes"]["city"] = json!({ "hashKey": "hashKey", "rangeKey": "cityRangeKey" });
    Ok(b)
}

fn schemas() -> Result<(Schema, Schema), BoxError> {
    Ok((
        Schema::from_ts_config(&config_a()?, ShardSpace::Product)?,
        Schema::from_ts_config(&config_b()?, ShardSpace::Product)?,
    ))
}

/// The table of both schemas: B's indexes (a superset of A's).
fn definition(b: &Schema) -> Result<TableDefinition, BoxError> {
    Ok(TableDefinition::from_schema(b)?)
}

const FIRST: [&str; 4] = ["ann", "bob", "cy", "dee"];
const CITIES: [&str; 3] = ["Lyon", "Oslo", "Paris"];
/// Creation times in every window of both schedules.
const TIMES: [u64; 5] = [
    1_690_000_000_000,
    1_710_000_000_000,
    1_727_000_000_000,
    1_736_000_000_000,
    1_740_000_000_000,
];

/// A record: (entity, item without keys).
type Record = (&'static str, Item);

/// `users` users and `emails` emails, their values spread by `seed`.
fn records(users: u32, emails: u32, seed: u64) -> Result<Vec<Record>, BoxError> {
    let mut out = Vec::new();
    for i in 0..users {
        let k = u64::from(i) + seed;
        let mut user = json!({
            "userId": format!("u{i:04}"),
            "created": TIMES[usize::try_from(k % 5)?] + k * 1_000,
        });
        if !k.is_multiple_of(3) {
            user["firstNameCanonical"] = json!(FIRST[usize::try_from(k % 4)?]);
            user["lastNameCanonical"] = json!(format!("l{}", k % 7));
        }
        if !k.is_multiple_of(4) {
            user["city"] = json!(CITIES[usize::try_from(k % 3)?]);
        }
        out.push(("user", serde_dynamo::to_item(user)?));
    }
    for i in 0..emails {
        let email = json!({
            "email": format!("e{i:03}@example.com"),
            "userId": format!("u{i:04}"),
            "created": 1_729_000_000_000u64 + u64::from(i) * 86_400_000,
        });
        out.push(("email", serde_dynamo::to_item(email)?));
    }
    Ok(out)
}

/// The items of `records` keyed by `schema`.
fn keyed(schema: &Schema, records: &[Record]) -> Result<Vec<Item>, BoxError> {
    records
        .iter()
        .map(|(entity, item)| Ok(schema.entity(entity)?.add_keys(item)?))
        .collect()
}

async fn write<S: Store>(store: &S, items: Vec<Item>) -> TestResult {
    store
        .batch_write(items.into_iter().map(WriteRequest::Put).collect())
        .await?;
    Ok(())
}

/// Everything in the table, canonical order.
async fn table<S: Store>(store: &S) -> Result<Vec<Item>, BoxError> {
    let items: Vec<Item> = ParallelScan::new(store).items().try_collect().await?;
    Ok(canonical(items))
}

fn key(item: &Item) -> (String, String) {
    (text(item, "hashKey"), text(item, "rangeKey"))
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

/// Every user a B query returns, as sorted user ids.
async fn user_ids<S: Store>(query: &Query<'_, S>) -> Result<Vec<String>, BoxError> {
    let items: Vec<Item> = query.stream().try_collect().await?;
    let mut ids: Vec<String> = items.iter().map(|i| text(i, "userId")).collect();
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "a query returned a record twice");
    Ok(ids)
}

/// The users whose own values pass `keep`, as sorted user ids.
fn oracle_ids(records: &[Record], keep: impl Fn(&Item) -> bool) -> Vec<String> {
    let mut ids: Vec<String> = records
        .iter()
        .filter(|(entity, item)| *entity == "user" && keep(item))
        .map(|(_, item)| text(item, "userId"))
        .collect();
    ids.sort();
    ids
}

fn number(item: &Item, name: &str) -> u64 {
    text(item, name).parse().unwrap_or(u64::MAX)
}

/// B's queries over the migrated table return exactly the records the oracle expects: by
/// creation time over windows that cross the bumps, by first name through the changed
/// generated property, by city through the new index.
async fn assert_b_queries<S: Store>(store: &S, b: &Schema, records: &[Record]) -> TestResult {
    let user = b.entity("user")?;
    for (from, to) in [
        (0, u64::MAX / 2),
        (1_700_000_000_000, 1_727_500_000_000),
        (1_735_000_000_000, 1_740_000_000_000),
    ] {
        let query = Query::new(store, user)
            .index("created")
            .range(RangeCondition::Between(
                AttributeValue::N(from.to_string()),
                AttributeValue::N(to.to_string()),
            ))
            .shards_between(from, to.min(4_000_000_000_000))
            .unlimited();
        let expected = oracle_ids(records, |i| (from..=to).contains(&number(i, "created")));
        assert!(!expected.is_empty());
        assert_eq!(
            user_ids(&query).await?,
            expected,
            "created in {from}..={to}"
        );
    }
    for first in FIRST {
        let query = Query::new(store, user)
            .index("firstName")
            .range(RangeCondition::BeginsWith(s(&format!(
                "firstNameCanonical#{first}|created#"
            ))))
            .unlimited();
        let expected = oracle_ids(records, |i| text(i, "firstNameCanonical") == first);
        assert_eq!(user_ids(&query).await?, expected, "first name {first}");
    }
    for city in CITIES {
        let query = Query::new(store, user)
            .index("city")
            .range(RangeCondition::BeginsWith(s(&format!("city#{city}|"))))
            .unlimited();
        let expected = oracle_ids(records, |i| text(i, "city") == city);
        assert!(!expected.is_empty());
        assert_eq!(user_ids(&query).await?, expected, "city {city}");
    }
    Ok(())
}

/// A store that fails every batch write and transaction after the first `ok` ones (a
/// crash partway through a migration).
#[derive(Debug)]
struct FailAfter<S> {
    inner: S,
    ok: usize,
    calls: AtomicUsize,
}

impl<S> FailAfter<S> {
    fn new(inner: S, ok: usize) -> Self {
        Self {
            inner,
            ok,
            calls: AtomicUsize::new(0),
        }
    }

    fn failing(&self) -> bool {
        self.calls.fetch_add(1, Ordering::SeqCst) >= self.ok
    }
}

impl<S: Store> Store for FailAfter<S> {
    entity_manager_tests::forward_store!(inner: definition, name, put_item, get_item, delete_item, batch_get, update_item, transact_get, query_page, scan_page);

    async fn batch_write(&self, writes: Vec<WriteRequest>) -> Result<(), BatchWriteError> {
        if self.failing() {
            let total = writes.len();
            return Err(BatchWriteError::new(
                writes,
                total,
                StoreError::new(StoreErrorKind::Other, "BatchWriteItem", "injected failure"),
            ));
        }
        self.inner.batch_write(writes).await
    }

    async fn transact_write(&self, writes: Vec<TransactWrite>) -> Result<(), StoreError> {
        if self.failing() {
            return Err(StoreError::new(
                StoreErrorKind::Other,
                "TransactWriteItems",
                "injected failure",
            ));
        }
        self.inner.transact_write(writes).await
    }
}

/// The tests, each a generic function over the store.
mod suite {
    use super::*;

    /// The dry run writes nothing and its counts (per entity and per shard) are the oracle's;
    /// the migration then leaves exactly B's items, B's queries find exactly the expected
    /// records, and a second run writes nothing.
    pub(crate) async fn migrates_a_to_b<S: Store>(store: S) -> TestResult {
        let store = &store;
        let (a, b) = schemas()?;
        let records = records(90, 25, 0)?;
        let before = keyed(&a, &records)?;
        let after = keyed(&b, &records)?;
        write(store, before.clone()).await?;
        let migration = Migration::between(&a, &b)?;

        let plan = migration
            .dry_run(ParallelScan::new(store).segments(3).page_size(10), 4)
            .await?;
        assert_eq!(
            table(store).await?,
            canonical(before.clone()),
            "the dry run wrote"
        );
        // the oracle: per entity, what changes between A's item and B's item of each record
        let mut moved: BTreeMap<&str, u64> = BTreeMap::new();
        let mut rewritten: BTreeMap<&str, u64> = BTreeMap::new();
        let mut unchanged: BTreeMap<&str, u64> = BTreeMap::new();
        let mut shards: BTreeMap<&str, BTreeMap<String, (u64, u64)>> = BTreeMap::new();
        for ((entity, _), (old, new)) in records.iter().zip(before.iter().zip(&after)) {
            let slot = if key(old) != key(new) {
                &mut moved
            } else if old != new {
                &mut rewritten
            } else {
                &mut unchanged
            };
            *slot.entry(entity).or_default() += 1;
            let per = shards.entry(entity).or_default();
            per.entry(text(old, "hashKey")).or_default().0 += 1;
            per.entry(text(new, "hashKey")).or_default().1 += 1;
        }
        assert!(
            moved["user"] > 0 && rewritten["user"] > 0,
            "{moved:?} {rewritten:?}"
        );
        for entity in ["user", "email"] {
            let got = plan.counts.entities[entity];
            let want = |m: &BTreeMap<&str, u64>| m.get(entity).copied().unwrap_or(0);
            assert_eq!(
                got.scanned,
                records.iter().filter(|r| r.0 == entity).count() as u64
            );
            assert_eq!(got.moved, want(&moved), "{entity} moved");
            assert_eq!(got.rewritten, want(&rewritten), "{entity} rewritten");
            assert_eq!(got.unchanged, want(&unchanged), "{entity} unchanged");
            assert_eq!((got.migrated_before, got.failed), (0, 0));
            let got: BTreeMap<String, (u64, u64)> = plan.shards[entity]
                .iter()
                .map(|(k, c)| (k.clone(), (c.before, c.after)))
                .collect();
            assert_eq!(got, shards[entity], "{entity} shards");
        }
        assert_eq!(plan.samples.len(), 4);
        for sample in &plan.samples {
            let i = before
                .iter()
                .position(|x| *x == sample.before)
                .ok_or("a sample is not a stored item")?;
            assert_eq!(sample.after, after[i]);
            let action = if key(&before[i]) == key(&after[i]) {
                Action::Rewrite
            } else {
                Action::Move
            };
            assert_eq!(sample.action, action);
        }

        let report = migration
            .run(
                ParallelScan::new(store)
                    .segments(4)
                    .throttle(2)
                    .page_size(7),
                |_| ControlFlow::Continue(()),
            )
            .await?;
        assert!(report.complete);
        assert_eq!(report.counts.entities["user"].moved, moved["user"]);
        assert_eq!(table(store).await?, canonical(after.clone()));
        assert_b_queries(store, &b, &records).await?;

        // idempotent: nothing to write, nothing changes, the dry run agrees
        let again = migration
            .run(ParallelScan::new(store), |_| ControlFlow::Continue(()))
            .await?;
        assert_eq!(again.counts.total().written(), 0);
        assert_eq!(table(store).await?, canonical(after));
        let plan = migration.dry_run(ParallelScan::new(store), 4).await?;
        assert_eq!(plan.counts.total().written(), 0);
        assert!(plan.samples.is_empty());
        assert_eq!(
            plan.counts.entities["user"].migrated_before + plan.counts.entities["user"].unchanged,
            90
        );
        Ok(())
    }

    /// A migration whose writes fail after a few succeeded stops with a typed error naming
    /// what failed and carrying the checkpoint; nothing is lost (every record is there, under
    /// A's keys or B's); resumed from the checkpoint it ends exactly as an uninterrupted one.
    pub(crate) async fn fails_then_resumes<S: Store>(inner: S) -> TestResult {
        fails_then_resumes_with(inner, BulkWrites::Guarded, 25).await
    }

    pub(crate) async fn fails_then_resumes_exclusive<S: Store>(inner: S) -> TestResult {
        // a page of 10 is two batches (puts, then deletes): the 5th call, the puts of the 3rd
        // page, fails
        fails_then_resumes_with(inner, BulkWrites::Exclusive, 4).await
    }

    async fn fails_then_resumes_with<S: Store>(
        inner: S,
        writes: BulkWrites,
        calls: usize,
    ) -> TestResult {
        let (a, b) = schemas()?;
        let records = records(120, 20, 3)?;
        write(&inner, keyed(&a, &records)?).await?;
        let store = FailAfter::new(inner, calls);
        let migration = Migration::between(&a, &b)?;
        let mut saved = None;
        let error = migration
            .run(
                ParallelScan::new(&store)
                    .segments(3)
                    .throttle(1)
                    .page_size(10)
                    .writes(writes),
                |p| {
                    saved = Some(p.checkpoint.clone());
                    ControlFlow::Continue(())
                },
            )
            .await
            .err()
            .ok_or("the injected failure did not stop the migration")?;
        assert!(
            matches!(
                error.source,
                MigrateFailure::Move { .. } | MigrateFailure::Rewrite { .. }
            ),
            "{error}"
        );
        assert!(
            error
                .to_string()
                .contains("run it again from the checkpoint")
        );
        assert!(!error.checkpoint.is_done());
        assert_eq!(saved.as_ref(), Some(&error.checkpoint));
        // nothing lost: every record is in the table once, in one of the two shapes
        let now = table(&store).await?;
        assert_eq!(now.len(), records.len());
        let a_items = keyed(&a, &records)?;
        let b_items = keyed(&b, &records)?;
        let migrated = now.iter().filter(|i| b_items.contains(i)).count();
        assert!(
            now.iter()
                .all(|i| a_items.contains(i) || b_items.contains(i))
        );
        assert!(migrated > 0, "nothing was migrated before the failure");

        let report = migration
            .run(
                ParallelScan::new(&store.inner)
                    .page_size(10)
                    .writes(writes)
                    .resume(error.checkpoint)?,
                |_| ControlFlow::Continue(()),
            )
            .await?;
        assert!(report.complete);
        assert_eq!(table(&store.inner).await?, canonical(b_items));
        assert_b_queries(&store.inner, &b, &records).await?;
        Ok(())
    }
}

macro_rules! both_stores {
    ($($name:ident),* $(,)?) => {
        mod memory {
            use super::*;
            $(
                #[tokio::test]
                async fn $name() -> TestResult {
                    let (_, b) = schemas()?;
                    suite::$name(MemoryStore::new(definition(&b)?)).await
                }
            )*
        }

        mod dynamodb {
            use super::*;
            $(
                #[tokio::test]
                async fn $name() -> TestResult {
                    let (_, b) = schemas()?;
                    let Some(store) = store_support::dynamo_store(stringify!($name), definition(&b)?).await? else {
                        return Ok(());
                    };
                    let result = suite::$name(store.clone()).await;
                    store.delete_table().await?;
                    result
                }
            )*
        }
    };
}

both_stores!(
    migrates_a_to_b,
    fails_then_resumes,
    fails_then_resumes_exclusive
);

/// The range key's encoding changes (a new generated value delimiter): every record moves, in
/// one transaction each; the old keys are gone.
#[tokio::test]
async fn a_changed_range_key_encoding_moves_every_record() -> TestResult {
    let a = Schema::from_ts_config(&config_a()?, ShardSpace::Product)?;
    let mut config = config_a()?;
    config["generatedValueDelimiter"] = json!("~");
    let b = Schema::from_ts_config(&config, ShardSpace::Product)?;
    let records = records(30, 10, 1)?;
    let store = MemoryStore::new(definition(&b)?);
    write(&store, keyed(&a, &records)?).await?;
    let report = Migration::between(&a, &b)?
        .run(ParallelScan::new(&store).page_size(4), |_| {
            ControlFlow::Continue(())
        })
        .await?;
    assert_eq!(report.counts.total().moved, 40);
    let now = table(&store).await?;
    assert_eq!(now, canonical(keyed(&b, &records)?));
    assert!(now.iter().all(|i| text(i, "rangeKey").contains('~')));
    Ok(())
}

/// Moving a record onto a key another item holds fails (the transaction is canceled: nothing
/// is written), names the record and both keys, and loses nothing.
#[tokio::test]
async fn a_move_onto_an_occupied_key_fails_without_writing() -> TestResult {
    let (a, b) = schemas()?;
    let records = records(1, 0, 2)?; // one user created in 1_710_…: it moves
    let store = MemoryStore::new(definition(&b)?);
    let old = keyed(&a, &records)?;
    let new = keyed(&b, &records)?;
    assert_ne!(key(&old[0]), key(&new[0]));
    // a service already writing under B wrote the record under its new key: the A copy
    // cannot move there
    let mut squatter = new[0].clone();
    squatter.insert("note".into(), s("written under B"));
    write(&store, vec![old[0].clone(), squatter.clone()]).await?;
    let error = Migration::between(&a, &b)?
        .run(ParallelScan::new(&store), |_| ControlFlow::Continue(()))
        .await
        .err()
        .ok_or("moved onto an occupied key")?;
    let MigrateFailure::Move {
        entity, from, to, ..
    } = &error.source
    else {
        return Err(format!("unexpected failure: {error}").into());
    };
    assert_eq!(entity, "user");
    assert_eq!(
        (from.0.hash_key.clone(), from.0.range_key.clone()),
        key(&old[0])
    );
    assert_eq!(
        (to.0.hash_key.clone(), to.0.range_key.clone()),
        key(&new[0])
    );
    assert_eq!(
        table(&store).await?,
        canonical(vec![old[0].clone(), squatter])
    );
    Ok(())
}

/// An item transform on one entity (schemas A to A: only the transform changes records):
/// every user gets its city upper-cased and a `plan` attribute, rewritten in place; a second
/// run finds nothing to write (the transform maps its own output to itself); a record the
/// transform refuses is listed by the dry run and stops a run with a typed error naming the
/// record.
#[tokio::test]
async fn an_item_transform_rewrites_in_place_and_names_what_it_refuses() -> TestResult {
    let a = Schema::from_ts_config(&config_a()?, ShardSpace::Product)?;
    let records = records(30, 5, 4)?;
    let store = MemoryStore::new(definition(&a)?);
    write(&store, keyed(&a, &records)?).await?;
    let upper = |mut item: Item| -> Result<Item, entity_manager::migrate::TransformError> {
        if text(&item, "userId") == "u0029" && item.contains_key("refuse") {
            return Err("u0029 is marked `refuse`".into());
        }
        if let Some(AttributeValue::S(city)) = item.get("city") {
            let city = city.to_uppercase();
            item.insert("city".into(), s(&city));
        }
        item.insert("plan".into(), s("basic"));
        Ok(item)
    };
    let migration = Migration::new().entity_with(a.entity("user")?, a.entity("user")?, upper)?;
    let report = migration
        .run(ParallelScan::new(&store).page_size(8), |_| {
            ControlFlow::Continue(())
        })
        .await?;
    let counts = report.counts.entities["user"];
    assert_eq!((counts.rewritten, counts.moved), (30, 0));
    // the scan keeps the users only: the emails are not even read (the table check below
    // shows them untouched)
    assert_eq!(report.counts.other, 0);
    let expected: Vec<Record> = records
        .iter()
        .map(|(entity, item)| {
            let mut item = item.clone();
            if *entity == "user" {
                if let Some(AttributeValue::S(city)) = item.get("city") {
                    let city = city.to_uppercase();
                    item.insert("city".into(), s(&city));
                }
                item.insert("plan".into(), s("basic"));
            }
            (*entity, item)
        })
        .collect();
    assert_eq!(table(&store).await?, canonical(keyed(&a, &expected)?));
    let again = migration
        .run(ParallelScan::new(&store), |_| ControlFlow::Continue(()))
        .await?;
    assert_eq!(again.counts.total().written(), 0);
    assert_eq!(again.counts.entities["user"].unchanged, 30);

    // one record the transform refuses
    let mut marked = table(&store)
        .await?
        .into_iter()
        .find(|i| text(i, "userId") == "u0029")
        .ok_or("u0029")?;
    marked.insert("refuse".into(), AttributeValue::Bool(true));
    marked.remove("plan");
    write(&store, vec![marked.clone()]).await?;
    let plan = migration.dry_run(ParallelScan::new(&store), 3).await?;
    assert_eq!(plan.counts.entities["user"].failed, 1);
    assert_eq!(plan.failures.len(), 1);
    assert_eq!(plan.failures[0].key.0.range_key, "userId#u0029");
    assert!(plan.failures[0].reason.contains("marked `refuse`"));
    let error = migration
        .run(ParallelScan::new(&store), |_| ControlFlow::Continue(()))
        .await
        .err()
        .ok_or("the refused record did not stop the run")?;
    let MigrateFailure::Transform { entity, key, .. } = &error.source else {
        return Err(format!("unexpected failure: {error}").into());
    };
    assert_eq!(
        (entity.as_str(), key.0.range_key.as_str()),
        ("user", "userId#u0029")
    );
    assert!(error.to_string().contains("userId#u0029"), "{error}");
    Ok(())
}

/// Two sets of Rust entities: records of `UserV1` become `UserV2` through a typed transform,
/// in a table whose schedule shards them; the typed scan of `UserV2` returns exactly the
/// transformed records, and no `UserV1` item remains.
mod typed {
    use super::*;

    #[derive(Table)]
    #[table(entities(UserV1))]
    struct TableV1;

    #[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
    #[serde(rename_all = "camelCase")]
    #[entity(table = TableV1, token = "user", unique = user_id, timestamp = created)]
    struct UserV1 {
        #[transcode("string")]
        user_id: String,
        #[transcode("timestamp")]
        created: u64,
        name: String,
    }

    #[derive(Table)]
    #[table(entities(UserV2))]
    struct TableV2;

    #[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
    #[serde(rename_all = "camelCase")]
    #[entity(table = TableV2, token = "user", unique = user_id, timestamp = created)]
    #[shard_bumps(bump(timestamp = 0, char_bits = 2, chars = 1))]
    #[generated(name = last_first, components = [last_name, first_name])]
    struct UserV2 {
        #[transcode("string")]
        user_id: String,
        #[transcode("timestamp")]
        created: u64,
        #[transcode("string")]
        first_name: String,
        #[transcode("string")]
        last_name: String,
    }

    fn upgrade(v1: UserV1) -> UserV2 {
        let (first_name, last_name) = match v1.name.split_once(' ') {
            Some((first, last)) => (first.to_owned(), last.to_owned()),
            None => (v1.name, String::new()),
        };
        UserV2 {
            user_id: v1.user_id,
            created: v1.created,
            first_name,
            last_name,
        }
    }

    #[tokio::test]
    async fn records_through_a_typed_transform() -> TestResult {
        let v1: Vec<UserV1> = (0..40u64)
            .map(|i| UserV1 {
                user_id: format!("u{i}"),
                created: 1_000 + i,
                name: format!("first{} last{}", i % 3, i % 5),
            })
            .collect();
        let store = MemoryStore::new(TableDefinition::from_schema(TableV2::schema()?)?);
        write(
            &store,
            v1.iter()
                .map(EntityExt::to_item)
                .collect::<Result<_, _>>()?,
        )
        .await?;
        let migration = Migration::new().records::<UserV1, UserV2, _>(upgrade)?;
        let report = migration
            .run(ParallelScan::new(&store).page_size(6), |_| {
                ControlFlow::Continue(())
            })
            .await?;
        // every record moved (V1 has one partition, V2 four shards); a record moved into a
        // segment not scanned yet is found again, in B's shape
        let counts = report.counts.entities["user"];
        assert_eq!(counts.moved, 40);
        assert_eq!(counts.scanned - counts.migrated_before, 40);
        let mut got: Vec<UserV2> = UserV2::scan(&store)?.records().try_collect().await?;
        got.sort_by(|a, b| a.user_id.cmp(&b.user_id));
        let mut want: Vec<UserV2> = v1.into_iter().map(upgrade).collect();
        want.sort_by(|a, b| a.user_id.cmp(&b.user_id));
        assert_eq!(got, want);
        let items = table(&store).await?;
        assert_eq!(items.len(), want.len());
        for item in &items {
            let w = want
                .iter()
                .find(|w| w.user_id == text(item, "userId"))
                .ok_or("an item of no record")?;
            assert_eq!(
                text(item, "lastFirst"),
                format!("lastName#{}|firstName#{}", w.last_name, w.first_name)
            );
        }
        let expected: Vec<Item> = want
            .iter()
            .map(EntityExt::to_item)
            .collect::<Result<_, _>>()?;
        assert_eq!(items, canonical(expected));
        // a second run: every item is in B's shape; the transform is not asked to read a V2
        let again = migration
            .run(ParallelScan::new(&store), |_| ControlFlow::Continue(()))
            .await?;
        assert_eq!(again.counts.total().written(), 0);
        assert_eq!(again.counts.entities["user"].migrated_before, 40);
        // and the dry run agrees: every record found migrated before, nothing to write
        let plan = migration.dry_run(ParallelScan::new(&store), 0).await?;
        assert_eq!(plan.counts.total().written(), 0);
        assert_eq!(plan.counts.entities["user"].migrated_before, 40);
        Ok(())
    }
}

/// Random record sets on the memory store: the migration leaves exactly B's items, whatever
/// the segments and page size, and a second run writes nothing.
mod properties {
    use super::*;
    use entity_manager_tests::block_on;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn migration_leaves_exactly_b(
            users in 0u32..60,
            emails in 0u32..15,
            seed in 0u64..1_000,
            segments in 1u32..6,
            page in 1u32..12,
        ) {
            let run = || -> Result<(), BoxError> {
                let (a, b) = schemas()?;
                let records = records(users, emails, seed)?;
                let store = MemoryStore::new(definition(&b)?);
                block_on(write(&store, keyed(&a, &records)?))?;
                let migration = Migration::between(&a, &b)?;
                let scan = ParallelScan::new(&store).segments(segments).throttle(2).page_size(page);
                let report = block_on(migration.run(scan, |_| ControlFlow::Continue(())))?;
                if !report.complete {
                    return Err("incomplete".into());
                }
                let expected = canonical(keyed(&b, &records)?);
                if block_on(table(&store))? != expected {
                    return Err("the table is not B's items".into());
                }
                let again = block_on(migration.run(ParallelScan::new(&store), |_| ControlFlow::Continue(())))?;
                if again.counts.total().written() != 0 || block_on(table(&store))? != expected {
                    return Err("a second run changed the table".into());
                }
                let keys: BTreeSet<_> = block_on(table(&store))?.iter().map(key).collect();
                if keys.len() != records.len() {
                    return Err("records lost or duplicated".into());
                }
                Ok(())
            };
            run().map_err(|e| TestCaseError::fail(e.to_string()))?;
        }
    }
}
