//! The re-shard audit on `MemoryStore` and `DynamoDB` Local (when `DYNAMODB_ENDPOINT` is set):
//! it finds exactly the records planted with a hash key the schedule does not give them (a
//! changed creation time, a bump whose timestamp was edited after records were written), and
//! the dry run of a new bump, against shard counts and hash-key spaces computed apart. A
//! migration from the schema to itself puts the misplaced records back.

mod store_support;

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use entity_manager::audit::{BumpDryRunError, audit, bump_dry_run};
use entity_manager::migrate::Migration;
use entity_manager::model::{ShardBump, ShardSpace};
use entity_manager::scan::ParallelScan;
use entity_manager::shard::{string_hash, suffix};
use entity_manager::store::{MemoryStore, Store, TableDefinition, WriteRequest};
use entity_manager::{AttributeValue, Item, Schema};
use serde_json::{Value, json};
use store_support::{TestResult, text};

type BoxError = Box<dyn std::error::Error>;

fn config() -> Result<Value, BoxError> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/compat/product-user-service.json"
    );
    let vectors: Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    Ok(vectors["config"].clone())
}

fn schema(config: &Value) -> Result<Schema, BoxError> {
    Ok(Schema::from_ts_config(config, ShardSpace::Product)?)
}

/// The hash key the configuration's schedule gives a record, from the JSON schedule itself:
/// the last bump not after `created` (none: one unsharded partition), the `product` rule.
fn expected_hash_key(config: &Value, entity: &str, unique: &str, created: u64) -> String {
    let bumps = config["entities"][entity]["shardBumps"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let bump = bumps
        .iter()
        .filter(|b| b["timestamp"].as_u64().is_some_and(|t| t <= created))
        .max_by_key(|b| b["timestamp"].as_u64());
    let text = bump.map_or_else(String::new, |b| {
        let bits = u8::try_from(b["charBits"].as_u64().unwrap_or(1)).unwrap_or(1);
        let chars = u8::try_from(b["chars"].as_u64().unwrap_or(0)).unwrap_or(0);
        suffix(
            u64::from(string_hash(unique)),
            ShardBump::new(0, bits, chars),
            ShardSpace::Product,
        )
    });
    format!("{entity}!{text}")
}

fn item(value: Value) -> Result<Item, BoxError> {
    Ok(serde_dynamo::to_item(value)?)
}

/// Plants 60 users and 30 emails, some misplaced; returns the (entity, unique) of every
/// misplaced record.
async fn plant<S: Store>(store: &S) -> Result<BTreeSet<(String, String)>, BoxError> {
    let current = config()?;
    let now = schema(&current)?;
    // the email bump was first written with an earlier timestamp, then edited
    let mut before_edit = current.clone();
    before_edit["entities"]["email"]["shardBumps"][0]["timestamp"] = json!(1_728_000_000_000u64);
    let old = schema(&before_edit)?;
    let mut misplaced = BTreeSet::new();
    let mut items = Vec::new();
    for i in 0..60u64 {
        let id = format!("u{i:03}");
        let created = 1_720_000_000_000 + i * 500_000_000; // across both user bumps
        let mut keyed = now
            .entity("user")?
            .add_keys(&item(json!({ "userId": id, "created": created }))?)?;
        if i % 7 == 3 {
            // the creation time was edited afterwards, the keys were not
            let edited = created + 10_000_000_000;
            keyed.insert("created".into(), AttributeValue::N(edited.to_string()));
            if expected_hash_key(&current, "user", &id, edited)
                != expected_hash_key(&current, "user", &id, created)
            {
                misplaced.insert(("user".to_owned(), id.clone()));
            }
        }
        items.push(keyed);
    }
    for i in 0..30u64 {
        let email = format!("e{i:03}@example.com");
        let created = 1_727_000_000_000 + i * 150_000_000; // around both bump timestamps
        let raw = item(json!({ "email": email, "userId": "u000", "created": created }))?;
        let keyed = old.entity("email")?.add_keys(&raw)?;
        if text(&keyed, "hashKey") != expected_hash_key(&current, "email", &email, created) {
            misplaced.insert(("email".to_owned(), email));
        }
        items.push(keyed);
    }
    assert!(misplaced.iter().filter(|m| m.0 == "user").count() >= 3);
    assert!(misplaced.iter().filter(|m| m.0 == "email").count() >= 3);
    store
        .batch_write(items.into_iter().map(WriteRequest::Put).collect())
        .await?;
    Ok(misplaced)
}

/// The audit lists exactly the planted records, each with its stored and expected hash key.
async fn finds_exactly_the_planted_records<S: Store>(store: &S) -> TestResult {
    let planted = plant(store).await?;
    let current = config()?;
    let now = schema(&current)?;
    let entities = [now.entity("user")?, now.entity("email")?];
    let report = audit(
        ParallelScan::new(store).segments(3).page_size(11),
        &entities,
    )
    .await?;
    assert_eq!(report.scanned["user"], 60);
    assert_eq!(report.scanned["email"], 30);
    let found: BTreeSet<(String, String)> = report
        .misplaced
        .iter()
        .map(|m| (m.entity.clone(), m.unique.clone()))
        .collect();
    assert_eq!(found, planted);
    assert!(report.unreadable.is_empty());
    let items: Vec<Item> = {
        use futures::TryStreamExt;
        ParallelScan::new(store).items().try_collect().await?
    };
    for m in &report.misplaced {
        let unique = if m.entity == "user" {
            "userId"
        } else {
            "email"
        };
        let stored = items
            .iter()
            .find(|i| text(i, unique) == m.unique && text(i, "hashKey").starts_with(&m.entity))
            .ok_or("a misplaced record that is not stored")?;
        assert_eq!(m.stored, text(stored, "hashKey"));
        assert_eq!(m.range_key, text(stored, "rangeKey"));
        let created = text(stored, "created").parse()?;
        assert_eq!(
            m.expected,
            expected_hash_key(&current, &m.entity, &m.unique, created)
        );
        assert_ne!(m.stored, m.expected);
    }
    // a migration from the schema to itself moves exactly those records back: audit clean
    let fixed = Migration::between(&now, &now)?
        .run(ParallelScan::new(store).page_size(9), |_| {
            ControlFlow::Continue(())
        })
        .await?;
    assert_eq!(fixed.counts.total().moved, planted.len() as u64);
    let report = audit(ParallelScan::new(store), &entities).await?;
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.scanned["user"] + report.scanned["email"], 90);

    // one entity only: its records, and a record without its creation time is unreadable
    let mut broken = now
        .entity("user")?
        .add_keys(&item(json!({ "userId": "zz", "created": 5 }))?)?;
    broken.remove("created");
    store.batch_write(vec![WriteRequest::Put(broken)]).await?;
    let report = audit(ParallelScan::new(store), &entities[..1]).await?;
    assert_eq!(report.scanned.keys().collect::<Vec<_>>(), ["user"]);
    assert_eq!(report.scanned["user"], 61);
    assert!(report.misplaced.is_empty());
    assert_eq!(report.unreadable.len(), 1);
    assert_eq!(report.unreadable[0].range_key, "userId#zz");
    assert!(!report.is_clean());
    Ok(())
}

#[tokio::test]
async fn memory_audit_finds_exactly_the_planted_records() -> TestResult {
    let store = MemoryStore::new(TableDefinition::from_schema(&schema(&config()?)?)?);
    finds_exactly_the_planted_records(&store).await
}

#[tokio::test]
async fn dynamodb_audit_finds_exactly_the_planted_records() -> TestResult {
    let definition = TableDefinition::from_schema(&schema(&config()?)?)?;
    let Some(store) = store_support::dynamo_store("audit", definition).await? else {
        return Ok(());
    };
    let result = finds_exactly_the_planted_records(&store).await;
    store.delete_table().await?;
    result
}

/// A clean table audits clean.
#[tokio::test]
async fn a_table_keyed_by_its_schedule_is_clean() -> TestResult {
    let now = schema(&config()?)?;
    let store = MemoryStore::new(TableDefinition::from_schema(&now)?);
    let user = now.entity("user")?;
    let mut writes = Vec::new();
    for i in 0..40u64 {
        let raw = item(
            json!({ "userId": format!("u{i}"), "created": 1_700_000_000_000u64 + i * 1_000_000_000 }),
        )?;
        writes.push(WriteRequest::Put(user.add_keys(&raw)?));
    }
    store.batch_write(writes).await?;
    let report = audit(ParallelScan::new(&store), &[user]).await?;
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.scanned["user"], 40);
    Ok(())
}

/// The dry run of a new bump: shards per window as the `product` rule counts them
/// (chars × 2^charBits), the fan-out of a query over a window equal to the hash-key space the
/// candidate schema lists for it, and from when existing records would change shard.
#[test]
fn bump_dry_run_counts_shards_and_fan_out() -> TestResult {
    let current = config()?;
    let now = schema(&current)?;
    let user = now.entity("user")?;
    // the current schedule: {0: unsharded}, {1726880933000: 2 bits, 1 char}, {1735689600000: 3 bits, 2 chars}
    let mut candidate: Vec<ShardBump> = vec![
        ShardBump::new(1_726_880_933_000, 2, 1),
        ShardBump::new(1_735_689_600_000, 3, 2),
        ShardBump::new(1_800_000_000_000, 4, 3),
    ];
    let plan = bump_dry_run(&user, &candidate, 0, 1_900_000_000_000)?;
    let shards = |c: &entity_manager::audit::ScheduleCost| -> Vec<u128> {
        c.windows.iter().map(|w| w.shards).collect()
    };
    assert_eq!(shards(&plan.current), [1, 4, 2 * 8]);
    assert_eq!(shards(&plan.candidate), [1, 4, 2 * 8, 3 * 16]);
    assert_eq!(plan.candidate.windows[2].to, Some(1_800_000_000_000));
    assert_eq!(plan.candidate.windows[3].to, None);
    assert_eq!(plan.reshards_from, Some(1_800_000_000_000));

    // the fan-out is the hash-key space of the same window, listed by the schema itself
    let mut config_with_bump = current.clone();
    config_with_bump["entities"]["user"]["shardBumps"] = json!([
        { "timestamp": 1_726_880_933_000u64, "charBits": 2, "chars": 1 },
        { "timestamp": 1_735_689_600_000u64, "charBits": 3, "chars": 2 },
        { "timestamp": 1_800_000_000_000u64, "charBits": 4, "chars": 3 }
    ]);
    let with_bump = schema(&config_with_bump)?;
    for (from, to) in [
        (0, 1_900_000_000_000),
        (1_730_000_000_000, 1_740_000_000_000),
        (1_850_000_000_000, 1_860_000_000_000),
    ] {
        let plan = bump_dry_run(&user, &candidate, from, to)?;
        let space = |s: &Schema| -> Result<u128, BoxError> {
            Ok(s.entity("user")?
                .hash_key_space("hashKey", &Item::default(), from, to)?
                .len() as u128)
        };
        assert_eq!(plan.current.fan_out, space(&now)?, "{from}..{to}");
        assert_eq!(plan.candidate.fan_out, space(&with_bump)?, "{from}..{to}");
    }

    // an edited bump timestamp reshards from the earlier of the two times
    candidate[0] = ShardBump::new(1_720_000_000_000, 2, 1);
    let plan = bump_dry_run(&user, &candidate, 0, 1)?;
    assert_eq!(plan.reshards_from, Some(1_720_000_000_000));
    // the same schedule changes nothing
    let plan = bump_dry_run(&user, &user.model().shard_bumps, 0, 1)?;
    assert_eq!(plan.reshards_from, None);
    assert_eq!(plan.current, plan.candidate);

    // a schedule that breaks the rules is refused, naming the entity
    let bad = [ShardBump::new(10, 2, 3), ShardBump::new(20, 2, 1)];
    let error = bump_dry_run(&user, &bad, 0, 1)
        .err()
        .ok_or("a decreasing schedule was accepted")?;
    assert!(matches!(error, BumpDryRunError::InvalidSchedule { .. }));
    assert!(error.to_string().contains("`user`"), "{error}");
    Ok(())
}
