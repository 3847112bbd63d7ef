//! The `migrate` and `audit` commands, driven as a process: outputs and exit codes.
//!
//! The table commands run against DynamoDB Local when `DYNAMODB_ENDPOINT` is set (`.ci/run`
//! starts it); they skip with a printed reason otherwise, except under `CI=true`. The bump dry
//! run needs no table and always runs.

use std::path::PathBuf;

use entity_manager::model::ShardSpace;
use entity_manager::scan::ParallelScan;
use entity_manager::store::{DynamoStore, Store, WriteRequest};
use entity_manager::{Item, Schema};
use futures::TryStreamExt;
use serde_json::{Value, json};

mod support;

use support::{keyed, sorted, text};

use support::{
    BoxError, TestResult, assert_code, endpoint, kill_when_checkpointed, run, stdout_json, store,
    temp_json,
};

/// Schema A: the User service of the golden vectors.
fn config_a() -> Result<Value, BoxError> {
    support::user_service_config()
}

/// Schema B: a bump before the user's first one (records move out of the unsharded
/// partition), `firstNameRangeKey` without the last name, a new `cityRangeKey` and its index.
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

fn config_file(test: &str, name: &str, config: &Value) -> Result<PathBuf, BoxError> {
    temp_json(&format!("migrate-{test}"), name, config)
}

/// The bump dry run needs no table: shards per window and fan-out, as JSON; a malformed
/// `--bump` is a usage error, an invalid schedule an input error.
#[test]
fn audit_bump_dry_run_reports_windows_and_fan_out() -> TestResult {
    let config = config_file("bump", "a", &config_a()?)?;
    let config = config.to_str().ok_or("path")?;
    let out = run(&[
        "audit",
        "--config",
        config,
        "--entity",
        "user",
        "--bump",
        "timestamp=1800000000000,char-bits=4,chars=3",
        "--window-to",
        "1900000000000",
        "--json",
    ])?;
    assert_code(&out, 0);
    let body = stdout_json(&out)?;
    assert_eq!(body["entity"], json!("user"));
    assert_eq!(body["shardSpace"], json!("product"));
    let shards = |which: &str| -> Vec<Value> {
        body[which]["windows"]
            .as_array()
            .map(|w| w.iter().map(|w| w["shards"].clone()).collect())
            .unwrap_or_default()
    };
    // product rule: chars × 2^charBits per window
    assert_eq!(shards("current"), [json!(1), json!(4), json!(16)]);
    assert_eq!(
        shards("candidate"),
        [json!(1), json!(4), json!(16), json!(48)]
    );
    assert_eq!(body["current"]["fanOut"], json!(1 + 4 + 16));
    assert_eq!(body["candidate"]["fanOut"], json!(1 + 4 + 16 + 48));
    assert_eq!(body["reshardsFrom"], json!(1_800_000_000_000u64));
    // text output
    let out = run(&[
        "audit",
        "--config",
        config,
        "--entity",
        "user",
        "--bump",
        "timestamp=1800000000000,char-bits=4,chars=3",
    ])?;
    assert_code(&out, 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("48 shards"));
    // malformed: clap's usage error; a decreasing schedule: exit 2 with the rule broken
    let out = run(&[
        "audit",
        "--config",
        config,
        "--entity",
        "user",
        "--bump",
        "timestamp=1",
    ])?;
    assert_code(&out, 2);
    let out = run(&[
        "audit",
        "--config",
        config,
        "--entity",
        "user",
        "--bump",
        "timestamp=1800000000000,char-bits=1,chars=1",
    ])?;
    assert_code(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("`user`"));
    Ok(())
}

/// The records: users across every window of both schedules, some with names and a city, and
/// emails.
fn records(users: u64, emails: u64) -> Result<Vec<(&'static str, Item)>, BoxError> {
    let times = [
        1_690_000_000_000u64,
        1_710_000_000_000,
        1_727_000_000_000,
        1_736_000_000_000,
    ];
    let mut out = Vec::new();
    for i in 0..users {
        let mut user = json!({
            "userId": format!("u{i:03}"),
            "created": times[usize::try_from(i % 4)?] + i * 1_000,
        });
        if i % 3 != 0 {
            user["firstNameCanonical"] = json!(format!("f{}", i % 5));
            user["lastNameCanonical"] = json!(format!("l{}", i % 7));
            user["city"] = json!(["Lyon", "Oslo"][usize::try_from(i % 2)?]);
        }
        out.push(("user", serde_dynamo::to_item(user)?));
    }
    for i in 0..emails {
        let email = json!({
            "email": format!("e{i:03}@example.com"),
            "userId": format!("u{i:03}"),
            "created": 1_729_000_000_000u64 + i * 86_400_000,
        });
        out.push(("email", serde_dynamo::to_item(email)?));
    }
    Ok(out)
}

/// Everything in the table, through the library.
fn table_items(store: &DynamoStore) -> Result<Vec<Item>, BoxError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let items: Vec<Item> = runtime.block_on(ParallelScan::new(store).items().try_collect())?;
    Ok(sorted(items))
}

/// On DynamoDB Local: the audit under B lists exactly the records B would move (exit 3); the
/// dry run writes nothing and counts what the oracle counts; a migration without `--yes` is
/// refused; one killed (SIGKILL) partway resumes from its checkpoint to exactly B's items;
/// then the audit is clean and a second migration writes nothing.
#[test]
#[allow(clippy::too_many_lines)] // one end-to-end story
fn migrate_and_audit_on_dynamodb_local() -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let a_path = config_file("e2e", "a", &config_a()?)?;
    let b_path = config_file("e2e", "b", &config_b()?)?;
    let (a_arg, b_arg) = (
        a_path.to_str().ok_or("path")?,
        b_path.to_str().ok_or("path")?,
    );
    let a = Schema::from_ts_config(&config_a()?, ShardSpace::Product)?;
    let b = Schema::from_ts_config(&config_b()?, ShardSpace::Product)?;
    let table = format!("cli-migrate-{}", std::process::id());
    let connection = ["--table", &table, "--endpoint", &endpoint];
    let out = run(&[&["table", "create", "--config", b_arg][..], &connection].concat())?;
    assert_code(&out, 0);
    let store = store(&endpoint, &table, &b)?;

    let result = (|| -> TestResult {
        let records = records(60, 12)?;
        let before = keyed(&a, &records)?;
        let after = keyed(&b, &records)?;
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(store.batch_write(before.iter().cloned().map(WriteRequest::Put).collect()))?;

        // the audit under B: exactly the users whose hash key B computes differently
        let out = run(&[&["audit", "--config", b_arg, "--json"][..], &connection].concat())?;
        assert_code(&out, 3); // misplaced records: a finding
        let body = stdout_json(&out)?;
        assert_eq!(body["ok"], json!(false));
        let mut found: Vec<String> = body["misplaced"]
            .as_array()
            .ok_or("misplaced")?
            .iter()
            .filter_map(|m| m["unique"].as_str().map(str::to_owned))
            .collect();
        found.sort();
        let mut expected: Vec<String> = before
            .iter()
            .zip(&after)
            .filter(|(old, new)| text(old, "hashKey") != text(new, "hashKey"))
            .map(|(old, _)| text(old, "userId"))
            .collect();
        expected.sort();
        assert!(!expected.is_empty());
        assert_eq!(found, expected);

        // the dry run: nothing written, the oracle's counts
        let out = run(&[
            &[
                "migrate",
                "--from",
                a_arg,
                "--to",
                b_arg,
                "--dry-run",
                "--json",
            ][..],
            &connection,
        ]
        .concat())?;
        assert_code(&out, 0);
        assert_eq!(table_items(&store)?, sorted(before.clone()));
        let body = stdout_json(&out)?;
        let key = |i: &Item| (text(i, "hashKey"), text(i, "rangeKey"));
        for entity in ["user", "email"] {
            let pairs: Vec<(&Item, &Item)> = records
                .iter()
                .zip(before.iter().zip(&after))
                .filter(|(r, _)| r.0 == entity)
                .map(|(_, p)| p)
                .collect();
            let moved = pairs.iter().filter(|(o, n)| key(o) != key(n)).count();
            let rewritten = pairs
                .iter()
                .filter(|(o, n)| key(o) == key(n) && o != n)
                .count();
            let counts = &body["counts"][entity];
            assert_eq!(counts["scanned"], json!(pairs.len()), "{entity}");
            assert_eq!(counts["moved"], json!(moved), "{entity}");
            assert_eq!(counts["rewritten"], json!(rewritten), "{entity}");
        }
        assert_eq!(body["samples"].as_array().map(Vec::len), Some(3));
        // per shard: the records under each hash key before and after, as the oracle counts
        let mut shards = serde_json::Map::new();
        for (items, side) in [(&before, "before"), (&after, "after")] {
            for item in items
                .iter()
                .filter(|i| text(i, "hashKey").starts_with("user!"))
            {
                let slot = shards
                    .entry(text(item, "hashKey"))
                    .or_insert_with(|| json!({ "before": 0, "after": 0 }));
                slot[side] = json!(slot[side].as_u64().unwrap_or(0) + 1);
            }
        }
        assert!(shards.len() > 4);
        assert_eq!(body["shards"]["user"], Value::Object(shards));

        // refused without confirmation (stdin is not a terminal): nothing written
        let migrate = [
            "migrate",
            "--from",
            a_arg,
            "--to",
            b_arg,
            "--segments",
            "1",
            "--page-size",
            "1",
        ];
        let out = run(&[&migrate[..], &connection].concat())?;
        assert_code(&out, 2);
        assert!(String::from_utf8_lossy(&out.stderr).contains("--yes"));
        assert_eq!(table_items(&store)?, sorted(before.clone()));

        // killed partway: one item per page, killed once the checkpoint is inside the segment
        let checkpoint = std::env::temp_dir().join(format!(
            "em-cli-migrate-kill-{}.checkpoint.json",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&checkpoint);
        let checkpoint_arg = checkpoint.to_str().ok_or("path")?;
        let resumable = [
            &migrate[..],
            &["--yes", "--checkpoint", checkpoint_arg, "--json"],
            &connection,
        ]
        .concat();
        kill_when_checkpointed(&resumable, &checkpoint)?;
        let partway = table_items(&store)?;
        assert_ne!(partway, sorted(after.clone()), "finished before the kill");
        // nothing lost: every record is there once, in A's shape or B's
        assert_eq!(partway.len(), records.len());
        assert!(
            partway
                .iter()
                .all(|i| before.contains(i) || after.contains(i))
        );

        let out = run(&resumable)?;
        assert_code(&out, 0);
        assert!(!checkpoint.exists());
        let body = stdout_json(&out)?;
        assert_eq!(body["ok"], json!(true));
        assert_eq!(table_items(&store)?, sorted(after.clone()));

        // clean audit; a second migration writes nothing
        let out = run(&[&["audit", "--config", b_arg, "--json"][..], &connection].concat())?;
        assert_code(&out, 0);
        assert_eq!(stdout_json(&out)?["ok"], json!(true));
        let out = run(&[&migrate[..], &["--yes", "--json"], &connection].concat())?;
        assert_code(&out, 0);
        assert_eq!(stdout_json(&out)?["written"], json!(0));
        assert_eq!(table_items(&store)?, sorted(after));
        // text output of a clean audit
        let out = run(&[&["audit", "--config", b_arg][..], &connection].concat())?;
        assert_code(&out, 0);
        assert!(String::from_utf8_lossy(&out.stdout).contains("0 misplaced"));
        Ok(())
    })();
    let out = run(&[&["table", "delete", "--config", b_arg][..], &connection].concat())?;
    assert_code(&out, 0);
    result
}
