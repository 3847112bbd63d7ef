//! The table stamp: a table records how its keys are made (profile and configuration
//! fingerprint), a store of another profile or shard space refuses to write to it before
//! anything is written, an unstamped table is judged by its records (issue 47) and the stamp
//! re-checked, and the stamp is never a record.
//!
//! The `MemoryStore` tests always run; the `DynamoStore` ones when `DYNAMODB_ENDPOINT` is set.

use entity_manager::model::{KeyMode, Profile, ShardHash, ShardSpace};
use entity_manager::store::{
    DynamoStore, Expect, MemoryStore, STAMP_MISMATCH_CODE, ScanPage, Store, StoreError,
    TableDefinition, TableStamp, WriteRequest,
};
use entity_manager::{AttributeValue, Item, Schema};
use serde_json::{Value, json};

mod store_support;

use store_support::TestResult;

fn config() -> Value {
    json!({
        "hashKey": "hashKey",
        "rangeKey": "rangeKey",
        "entities": {
            "player": {
                "uniqueProperty": "playerId",
                "timestampProperty": "created",
                "shardBumps": [{ "timestamp": 0, "charBits": 2, "chars": 1 }]
            }
        },
        "generatedProperties": { "unsharded": { "scoreRangeKey": ["score", "created"] } },
        "indexes": { "score": { "hashKey": "hashKey", "rangeKey": "scoreRangeKey" } },
        "propertyTranscodes": { "playerId": "string", "created": "timestamp", "score": "int" }
    })
}

fn block_on<F: std::future::Future>(f: F) -> Result<F::Output, std::io::Error> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .build()?
        .block_on(f))
}

fn schema(profile: Profile) -> Result<Schema, Box<dyn std::error::Error>> {
    Ok(Schema::from_ts_config(&config(), profile)?)
}

/// The npm 6.14 settings in the `power` shard space: no profile pins them.
fn npm_in_power() -> Result<Schema, Box<dyn std::error::Error>> {
    let npm = schema(Profile::Npm6_14)?;
    Ok(Schema::new(
        npm.table().clone().with_shard_space(ShardSpace::Power),
        npm.entities().to_vec(),
    )?)
}

/// A keyed player of `schema`.
fn player(schema: &Schema, id: &str, score: i64) -> Result<Item, Box<dyn std::error::Error>> {
    let item: Item =
        serde_dynamo::to_item(json!({ "playerId": id, "created": 1_000, "score": score }))?;
    Ok(schema.entity("player")?.add_keys(&item)?)
}

fn key_of(item: &Item) -> Item {
    item.iter()
        .filter(|(k, _)| *k == "hashKey" || *k == "rangeKey")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect::<std::collections::HashMap<_, _>>()
        .into()
}

/// A write refused by the stamp: its code, and a message naming both settings and the fix.
fn assert_refused(e: &StoreError, table_profile: &str, ours: &str) {
    assert_eq!(e.code(), Some(STAMP_MISMATCH_CODE), "{e}");
    assert!(e.is_validation(), "{e}");
    let message = e.to_string();
    for part in [
        format!("stamped with profile `{table_profile}`"),
        ours.to_owned(),
        format!("--key-profile {table_profile}"),
        "nothing was written".to_owned(),
        "entity-manager table stamp --force".to_owned(),
    ] {
        assert!(message.contains(&part), "`{part}` not in: {message}");
    }
}

#[test]
fn a_schema_table_is_stamped_with_its_profile_and_fingerprint() -> TestResult {
    let npm = schema(Profile::Npm6_14)?;
    let native = schema(Profile::Native)?;
    let npm_stamp = TableDefinition::from_schema(&npm)?
        .stamp
        .ok_or("no stamp")?;
    let native_stamp = TableDefinition::from_schema(&native)?
        .stamp
        .ok_or("no stamp")?;
    assert_eq!(npm_stamp.profile(), Some(Profile::Npm6_14));
    assert_eq!(npm_stamp.key_mode, KeyMode::TypeScript);
    assert_eq!(native_stamp.profile(), Some(Profile::Native));
    // one configuration, two profiles: one fingerprint, refused both ways
    assert_eq!(npm_stamp.fingerprint, native_stamp.fingerprint);
    assert!(npm_stamp.refuses(&native_stamp).is_some());
    assert!(native_stamp.refuses(&npm_stamp).is_some());
    assert!(npm_stamp.refuses(&npm_stamp).is_none());
    // a changed shard schedule changes the entity's fingerprint, not the profile
    let mut changed = config();
    changed["entities"]["player"]["shardBumps"] = json!([{ "timestamp": 0, "charBits": 2, "chars": 1 }, { "timestamp": 2_000_000_000_000u64, "charBits": 3, "chars": 2 }]);
    let later = TableStamp::of(
        Schema::from_ts_config(&changed, Profile::Npm6_14)?.table(),
        Schema::from_ts_config(&changed, Profile::Npm6_14)?.entities(),
    );
    assert!(npm_stamp.refuses(&later).is_none());
    assert_eq!(npm_stamp.changed_entities(&later), ["player"]);
    // the stamp item reads back as the stamp
    let def = TableDefinition::from_schema(&npm)?;
    assert_eq!(TableStamp::from_item(&npm_stamp.to_item(&def))?, npm_stamp);
    // a definition made by hand has none
    assert!(store_support::definition().stamp.is_none());
    Ok(())
}

#[test]
fn a_memory_table_records_its_stamp_which_is_no_record() -> TestResult {
    let npm = schema(Profile::Npm6_14)?;
    let def = TableDefinition::from_schema(&npm)?;
    let store = MemoryStore::new(def.clone());
    assert_eq!(store.table_stamp()?, def.stamp.clone());
    assert!(store.is_empty());
    block_on(async {
        let items = (0..5)
            .map(|n| player(&npm, &format!("p{n}"), n))
            .collect::<Result<Vec<_>, _>>()?;
        store
            .batch_write(items.into_iter().map(WriteRequest::Put).collect())
            .await?;
        // neither a scan, `len` nor `items` shows the stamp
        let page = store.scan_page(&ScanPage::new()).await?;
        assert_eq!(page.items.len(), 5);
        assert_eq!((store.len(), store.items().len()), (5, 5));
        Ok::<_, Box<dyn std::error::Error>>(())
    })??;
    // stamping again with the same settings is allowed; another profile's store keeps its own
    assert_eq!(store.stamp_table(false)?, def.stamp.ok_or("no stamp")?);
    Ok(())
}

/// A whole-table purge deletes every record and counts only them: the stamp stays.
#[test]
fn a_purge_of_the_whole_table_leaves_the_stamp() -> TestResult {
    let npm = schema(Profile::Npm6_14)?;
    let def = TableDefinition::from_schema(&npm)?;
    let store = MemoryStore::new(def.clone());
    let report = block_on(async {
        for n in 0..12 {
            store
                .put_item(player(&npm, &format!("p{n}"), n)?, Expect::Any)
                .await?;
        }
        let report = entity_manager::scan::ParallelScan::new(&store)
            .page_size(5)
            .purge(|_| std::ops::ControlFlow::Continue(()))
            .await?;
        Ok::<_, Box<dyn std::error::Error>>(report)
    })??;
    assert!(report.complete);
    assert_eq!(report.deleted, 12);
    assert!(store.is_empty());
    assert_eq!(store.table_stamp()?, def.stamp);
    Ok(())
}

#[test]
fn a_memory_table_without_a_stamp_keeps_working() -> TestResult {
    let npm = schema(Profile::Npm6_14)?;
    let def = TableDefinition::from_schema(&npm)?.with_stamp(None);
    let store = MemoryStore::new(def);
    assert_eq!(store.table_stamp()?, None);
    let item = player(&npm, "p1", 7)?;
    block_on(store.put_item(item.clone(), Expect::Any))??;
    assert_eq!(store.items(), [item]);
    Ok(())
}

async fn dynamo_scenario(client: aws_sdk_dynamodb::Client, table: &str) -> TestResult {
    let npm = schema(Profile::Npm6_14)?;
    let store = |s: &Schema| -> Result<DynamoStore, Box<dyn std::error::Error>> {
        Ok(DynamoStore::new(
            client.clone(),
            table,
            TableDefinition::from_schema(s)?,
        ))
    };
    let npm_store = store(&npm)?;
    npm_store.create_table().await?;
    let npm_def = TableDefinition::from_schema(&npm)?;
    assert_eq!(npm_store.table_stamp().await?, npm_def.stamp);

    // another key mode, another shard space (and numeric hashing), another shard space alone:
    // each refused before anything is written, by put, batch write, update and transaction
    let native = schema(Profile::Native)?;
    let upstream = schema(Profile::Upstream8)?;
    let power = npm_in_power()?;
    for (other, ours) in [
        (
            &native,
            "profile `native` (key mode `transcoded`, shard space `product`",
        ),
        (
            &upstream,
            "profile `upstream-8` (key mode `typescript`, shard space `power`",
        ),
        (
            &power,
            "no named profile (key mode `typescript`, shard space `power`",
        ),
    ] {
        let wrong = store(other)?;
        let item = player(other, "wrong", -5)?;
        let e = wrong
            .put_item(item.clone(), Expect::Any)
            .await
            .err()
            .ok_or("a put under another profile succeeded")?;
        assert_refused(&e, "npm-6.14", ours);
        let batch = wrong
            .batch_write(vec![WriteRequest::Put(item.clone())])
            .await
            .err()
            .ok_or("a batch under another profile succeeded")?;
        assert_eq!(batch.unwritten.len(), 1);
        assert_refused(&batch.cause, "npm-6.14", ours);
        let e = wrong
            .delete_item(&key_of(&item), Expect::Any)
            .await
            .err()
            .ok_or("a delete under another profile succeeded")?;
        assert_refused(&e, "npm-6.14", ours);
        // reads go ahead (with a warning), and nothing was written
        assert_eq!(wrong.get_item(&key_of(&item), None).await?, None);
        assert_eq!(npm_store.get_item(&key_of(&item), None).await?, None);
    }

    // the table's own profile writes, and its scan does not see the stamp
    let ok = player(&npm, "right", -5)?;
    npm_store.put_item(ok.clone(), Expect::Absent).await?;
    let page = npm_store.scan_page(&ScanPage::new()).await?;
    assert_eq!(page.items, std::slice::from_ref(&ok));
    // re-stamping with another profile is refused without `force`, then done with it
    let e = store(&native)?
        .stamp_table(false)
        .await
        .err()
        .ok_or("re-stamped without force")?;
    assert_eq!(e.code(), Some(STAMP_MISMATCH_CODE));
    assert!(e.to_string().contains("--force"), "{e}");
    let restamped = store(&native)?.stamp_table(true).await?;
    assert_eq!(restamped.profile(), Some(Profile::Native));
    // a store that judged the table before keeps its verdict; a new npm store is now refused
    let e = store(&npm)?
        .put_item(ok, Expect::Any)
        .await
        .err()
        .ok_or("npm write to a native table")?;
    assert_refused(&e, "native", "profile `npm-6.14`");
    npm_store.delete_table().await?;
    Ok(())
}

async fn dynamo_unstamped(client: aws_sdk_dynamodb::Client, table: &str) -> TestResult {
    let npm = schema(Profile::Npm6_14)?;
    let def = TableDefinition::from_schema(&npm)?;
    // a table created without a stamp (by a TypeScript service, or before stamps)
    let creator = DynamoStore::new(client.clone(), table, def.clone().with_stamp(None));
    creator.create_table().await?;
    let store = DynamoStore::new(client.clone(), table, def.clone());
    assert_eq!(store.table_stamp().await?, None);
    let item = player(&npm, "p1", 1)?;
    store.put_item(item.clone(), Expect::Any).await?; // works, with a warning
    assert_eq!(store.get_item(&key_of(&item), None).await?, Some(item));
    assert_eq!(
        store.stamp_table(false).await?,
        def.stamp.clone().ok_or("no stamp")?
    );
    assert_eq!(store.table_stamp().await?, def.stamp);
    creator.delete_table().await?;
    Ok(())
}

#[test]
fn dynamodb_local_refuses_writes_under_another_profile() -> TestResult {
    let Some(client) = store_support::dynamo_client() else {
        return Ok(());
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(dynamo_scenario(
        client.clone(),
        &store_support::unique_table("stamp"),
    ))?;
    rt.block_on(dynamo_unstamped(
        client,
        &store_support::unique_table("unstamped"),
    ))
}

#[test]
fn the_stamp_item_is_in_no_index_and_no_entity_partition() -> TestResult {
    let npm = schema(Profile::Npm6_14)?;
    let def = TableDefinition::from_schema(&npm)?;
    let item = def.stamp.as_ref().ok_or("no stamp")?.to_item(&def);
    let Some(AttributeValue::S(hash_key)) = item.get("hashKey") else {
        return Err("no hash key".into());
    };
    // every entity hash key holds the shard key delimiter; the stamp's holds no delimiter
    assert!(!hash_key.contains(['|', '#', '!']), "{hash_key}");
    for index in &def.indexes {
        for key in index.key_attributes() {
            assert!(
                key.name == "hashKey" || !item.contains_key(&key.name),
                "the stamp has index key {}",
                key.name
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// issue 47: a table without a stamp is judged by its records; the stamp is re-checked

/// The configuration with two shard characters: 8 shards in the `product` space (npm 6.14),
/// 16 in the `power` space (upstream 8). (With one character both spaces have 4 shards, and no
/// record tells npm 6.14 from upstream 8: their keys are alike.)
fn schema2(profile: Profile) -> Result<Schema, Box<dyn std::error::Error>> {
    let mut config = config();
    config["entities"]["player"]["shardBumps"] =
        json!([{ "timestamp": 0, "charBits": 2, "chars": 2 }]);
    Ok(Schema::from_ts_config(&config, profile)?)
}

/// Forty players keyed by `schema` (under [`schema2`], npm 6.14 and upstream 8 place about
/// half of them in other shards; native writes their scores transcoded).
fn players(schema: &Schema) -> Result<Vec<Item>, Box<dyn std::error::Error>> {
    (0..40)
        .map(|n| player(schema, &format!("p{n}"), n - 7))
        .collect()
}

/// A write refused because the table's records show another profile: the code, and a message
/// that names the profile the data shows as the fix, never the writer's own.
fn assert_refused_by_data(e: &StoreError, shown: &str, writer: &str) {
    assert_eq!(e.code(), Some(STAMP_MISMATCH_CODE), "{e}");
    let message = e.to_string();
    for part in [
        "has no stamp".to_owned(),
        format!("profile `{shown}` and no other"),
        format!("--key-profile {shown}"),
        "nothing was written".to_owned(),
    ] {
        assert!(message.contains(&part), "`{part}` not in: {message}");
    }
    assert!(
        !message.contains(&format!("--key-profile {writer}")),
        "advises the writer's own profile: {message}"
    );
}

/// A memory table whose stamp was deleted behind its store's back (as a TypeScript
/// `purgeItems` does): once the re-check interval is over, the store judges the table by its
/// records again, and a write of its own profile stamps it again.
#[test]
fn a_memory_table_whose_stamp_disappears_is_judged_by_its_records_again() -> TestResult {
    let npm = schema2(Profile::Npm6_14)?;
    let def = TableDefinition::from_schema(&npm)?;
    let store =
        MemoryStore::new(def.clone()).with_stamp_recheck(std::time::Duration::from_millis(50));
    let stamp_key = entity_manager::store::stamp_key(&def);
    block_on(async {
        for item in players(&npm)? {
            store.put_item(item, Expect::Any).await?;
        }
        // the stamp goes; the store's verdict is still fresh
        store.delete_item(&stamp_key, Expect::Any).await?;
        assert_eq!(store.table_stamp()?, None);
        std::thread::sleep(std::time::Duration::from_millis(60));
        // judged by the records (npm 6.14: this store's), and stamped again on this write
        store
            .put_item(player(&npm, "again", 1)?, Expect::Any)
            .await?;
        assert_eq!(store.table_stamp()?, def.stamp);
        // the inference the store made, as the API gives it
        let inference = store.infer_profile()?;
        assert_eq!(inference.shown(), Some(Profile::Npm6_14), "{inference}");
        Ok::<_, Box<dyn std::error::Error>>(())
    })??;
    Ok(())
}

/// An unstamped table a TypeScript service (npm 6.14) wrote: writers of another profile or
/// shard space are refused before their first write (0 records written), by put, batch write,
/// delete, update and transaction, each error naming the profile the data shows; the right
/// profile writes and the table ends stamped with it. `stamp_table` under another profile is
/// refused too.
async fn dynamo_unstamped_with_records(
    client: aws_sdk_dynamodb::Client,
    table: &str,
) -> TestResult {
    let npm = schema2(Profile::Npm6_14)?;
    let def = TableDefinition::from_schema(&npm)?;
    let creator = DynamoStore::new(client.clone(), table, def.clone().with_stamp(None));
    creator.create_table().await?;
    let written = players(&npm)?;
    creator
        .batch_write(written.iter().cloned().map(WriteRequest::Put).collect())
        .await?;
    let count = || async {
        Ok::<usize, StoreError>(creator.scan_page(&ScanPage::new()).await?.items.len())
    };
    assert_eq!(count().await?, written.len());
    for (other, writer) in [
        (schema2(Profile::Native)?, "native"),
        (schema2(Profile::Upstream8)?, "upstream-8"),
    ] {
        let wrong = DynamoStore::new(client.clone(), table, TableDefinition::from_schema(&other)?);
        let item = player(&other, "wrong", -5)?;
        let e = wrong
            .put_item(item.clone(), Expect::Any)
            .await
            .err()
            .ok_or("a put under another profile went ahead")?;
        assert_refused_by_data(&e, "npm-6.14", writer);
        let batch = wrong
            .batch_write(
                players(&other)?
                    .into_iter()
                    .map(WriteRequest::Put)
                    .collect(),
            )
            .await
            .err()
            .ok_or("a batch under another profile went ahead")?;
        assert_eq!(batch.unwritten.len(), 40);
        assert_refused_by_data(&batch.cause, "npm-6.14", writer);
        let e = wrong
            .delete_item(&key_of(&written[0]), Expect::Any)
            .await
            .err()
            .ok_or("a delete under another profile went ahead")?;
        assert_refused_by_data(&e, "npm-6.14", writer);
        let e = wrong
            .stamp_table(false)
            .await
            .err()
            .ok_or("stamped against the records")?;
        assert_eq!(e.code(), Some(STAMP_MISMATCH_CODE), "{e}");
        assert!(e.to_string().contains("--key-profile npm-6.14"), "{e}");
        // reads go ahead; nothing was written, nothing stamped
        assert_eq!(
            wrong.get_item(&key_of(&written[0]), None).await?,
            Some(written[0].clone())
        );
        assert_eq!(count().await?, written.len());
        assert_eq!(creator.table_stamp().await?, None);
        // the same records, one by one as stored: nothing was overwritten
        for item in &written {
            assert_eq!(
                creator.get_item(&key_of(item), None).await?.as_ref(),
                Some(item)
            );
        }
    }
    // the table's own profile writes, and the first write stamps the table
    let right = DynamoStore::new(client.clone(), table, def.clone());
    right
        .put_item(player(&npm, "right", 3)?, Expect::Absent)
        .await?;
    assert_eq!(right.table_stamp().await?, def.stamp);
    assert_eq!(count().await?, written.len() + 1);
    creator.delete_table().await?;
    Ok(())
}

/// Two long-lived stores on one table: another profile's operator re-stamps it; the npm store
/// keeps its verdict within the re-check interval and is refused after it. Then the stamp is
/// deleted behind both stores' backs: the native store, judging the records, is still refused
/// (now by the data), and the npm store's next write stamps the table again.
async fn dynamo_recheck(client: aws_sdk_dynamodb::Client, table: &str) -> TestResult {
    use std::time::Duration;
    let npm = schema2(Profile::Npm6_14)?;
    let native = schema2(Profile::Native)?;
    let interval = Duration::from_millis(800);
    let npm_store = DynamoStore::new(client.clone(), table, TableDefinition::from_schema(&npm)?)
        .with_stamp_recheck(interval);
    npm_store.create_table().await?;
    for item in players(&npm)? {
        npm_store.put_item(item, Expect::Any).await?;
    }
    let native_store = DynamoStore::new(
        client.clone(),
        table,
        TableDefinition::from_schema(&native)?,
    )
    .with_stamp_recheck(interval);
    assert!(
        native_store
            .put_item(player(&native, "n", 1)?, Expect::Any)
            .await
            .is_err()
    );
    // another operator stamps the table for the native profile
    native_store.stamp_table(true).await?;
    native_store
        .put_item(player(&native, "n", 1)?, Expect::Any)
        .await?;
    tokio::time::sleep(interval + Duration::from_millis(200)).await;
    let e = npm_store
        .put_item(player(&npm, "late", 1)?, Expect::Any)
        .await
        .err()
        .ok_or("the npm store wrote after the table was re-stamped")?;
    assert_refused(&e, "native", "profile `npm-6.14`");

    // the stamp deleted behind the stores' backs (a TypeScript purge), and the native record
    // with it: the records are npm 6.14's again
    let raw = DynamoStore::new(
        client.clone(),
        table,
        TableDefinition::from_schema(&npm)?.with_stamp(None),
    );
    raw.delete_item(
        &entity_manager::store::stamp_key(&TableDefinition::from_schema(&npm)?),
        Expect::Present,
    )
    .await?;
    raw.delete_item(&key_of(&player(&native, "n", 1)?), Expect::Present)
        .await?;
    tokio::time::sleep(interval + Duration::from_millis(200)).await;
    let e = native_store
        .put_item(player(&native, "n2", 1)?, Expect::Any)
        .await
        .err()
        .ok_or("the native store wrote over npm records once the stamp was gone")?;
    assert_refused_by_data(&e, "npm-6.14", "native");
    npm_store
        .put_item(player(&npm, "back", 1)?, Expect::Any)
        .await?;
    assert_eq!(
        npm_store.table_stamp().await?.and_then(|s| s.profile()),
        Some(Profile::Npm6_14)
    );
    npm_store.delete_table().await?;
    Ok(())
}

#[test]
fn dynamodb_local_an_unstamped_table_is_judged_by_its_records() -> TestResult {
    let Some(client) = store_support::dynamo_client() else {
        return Ok(());
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(dynamo_unstamped_with_records(
        client.clone(),
        &store_support::unique_table("unstamped-records"),
    ))?;
    rt.block_on(dynamo_recheck(
        client,
        &store_support::unique_table("recheck"),
    ))
}

/// The stamp item of `def` as a release before the native shard hash changed wrote it: no
/// `shardHash` attribute (every release before it hashed with `string-hash`).
fn stamp_without_shard_hash(def: &TableDefinition) -> Result<Item, Box<dyn std::error::Error>> {
    let mut item = def.stamp.as_ref().ok_or("no stamp")?.to_item(def);
    match item.get_mut(entity_manager::store::STAMP_ATTRIBUTE) {
        Some(AttributeValue::M(stamp)) => {
            stamp
                .remove("shardHash")
                .ok_or("the stamp does not record its shard hash")?;
        }
        _ => return Err("the stamp item holds no stamp map".into()),
    }
    Ok(item)
}

/// A write refused because the table's native keys were made with `string-hash`.
fn assert_refused_for_the_old_hash(e: &StoreError) {
    assert_eq!(e.code(), Some(STAMP_MISMATCH_CODE), "{e}");
    let message = e.to_string();
    for part in [
        "shard hash `string-hash`",
        "`sha256`",
        "nothing was written",
        "with_shard_hash(ShardHash::StringHash)",
    ] {
        assert!(message.contains(part), "`{part}` not in: {message}");
    }
}

/// Issue 49, point 5: the native profile's shard hash changed (SHA-256, not `string-hash`), so
/// a native table stamped by an earlier release (its stamp has no `shardHash`) is refused for
/// writes with a message that says why and what to do; a model that keeps the old hash writes.
#[test]
fn a_native_table_stamped_before_the_shard_hash_changed_is_refused_for_writes() -> TestResult {
    let native = schema(Profile::Native)?;
    let def = TableDefinition::from_schema(&native)?;
    let old = stamp_without_shard_hash(&def)?;
    let read = TableStamp::from_item(&old)?;
    assert_eq!(read.shard_hash, ShardHash::StringHash);
    assert_eq!(read.profile(), None);
    assert_eq!(
        def.stamp.as_ref().ok_or("no stamp")?.shard_hash,
        ShardHash::Sha256
    );
    let store =
        MemoryStore::new(def.clone()).with_stamp_recheck(std::time::Duration::from_millis(20));
    block_on(async {
        // the stamp as the earlier release wrote it, seen once the store checks again
        store.put_item(old.clone(), Expect::Any).await?;
        std::thread::sleep(std::time::Duration::from_millis(40));
        let before = store.len();
        let e = store
            .put_item(player(&native, "p1", 1)?, Expect::Any)
            .await
            .err()
            .ok_or("a native write to a table of the old hash succeeded")?;
        assert_refused_for_the_old_hash(&e);
        assert_eq!(store.len(), before, "the refused write wrote something");
        Ok::<_, Box<dyn std::error::Error>>(())
    })??;

    // DynamoDB Local: a fresh store reads the old stamp before its first write
    let Some(client) = store_support::dynamo_client() else {
        return Ok(());
    };
    let table = store_support::unique_table("oldhash");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let store = DynamoStore::new(client.clone(), &table, def.clone());
        store.create_table().await?;
        client
            .put_item()
            .table_name(&table)
            .set_item(Some(old.clone().into()))
            .send()
            .await?;
        let fresh = DynamoStore::new(client.clone(), &table, def.clone());
        let e = fresh
            .put_item(player(&native, "p1", 1)?, Expect::Any)
            .await
            .err()
            .ok_or("a native write to a DynamoDB table of the old hash succeeded")?;
        assert_refused_for_the_old_hash(&e);
        // the escape hatch the message names: the old hash, kept on purpose
        let kept = Schema::new(
            native
                .table()
                .clone()
                .with_shard_hash(ShardHash::StringHash),
            native.entities().to_vec(),
        )?;
        let keeps = DynamoStore::new(client, &table, TableDefinition::from_schema(&kept)?);
        keeps.put_item(player(&kept, "p1", 1)?, Expect::Any).await?;
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    Ok(())
}
