//! `entity-manager table create|describe|drift|cloudformation|delete` with a table-settings
//! file, driven as a process against DynamoDB Local: outputs and exit codes.
//!
//! The DynamoDB part runs when `DYNAMODB_ENDPOINT` is set (`.ci/run` starts DynamoDB Local);
//! it skips with a printed reason otherwise, except under `CI=true`. DynamoDB Local reports
//! neither point-in-time recovery nor tags: `describe` says `"unreported"` and `drift` lists
//! them as unchecked.

use std::process::Output;

use serde_json::{Value, json};

mod support;

use support::{BoxError, TestResult, arg, assert_code, endpoint, run, stdout_json, temp_json};

/// A file under the temporary directory, unique to this process and test.
fn temp_file(test: &str, name: &str, body: &Value) -> Result<String, BoxError> {
    Ok(arg(&temp_json(&format!("table-{test}"), name, body)?)?.to_owned())
}

/// The User service configuration (eleven GSIs) as a file.
fn config(test: &str) -> Result<String, BoxError> {
    temp_file(test, "config", &support::user_service_config()?)
}

/// Settings for every setting DynamoDB Local can create (not point-in-time recovery).
fn settings() -> Value {
    json!({
        "billing": { "mode": "PROVISIONED", "read": 4, "write": 3, "indexes": { "created": { "read": 2, "write": 1 } } },
        "localIndexes": [
            { "name": "bySequence", "rangeKey": "sequence", "type": "N", "projection": "KEYS_ONLY" },
            { "name": "byNickname", "rangeKey": "nickname", "type": "S", "projection": ["firstName"] },
        ],
        "ttlAttribute": "expiresAt",
        "stream": "NEW_AND_OLD_IMAGES",
        "tags": { "team": "accounts" },
    })
}

#[test]
fn cloudformation_emits_the_settings_file() -> TestResult {
    let config = config("cfn")?;
    let mut all = settings_object()?;
    all.insert("pointInTimeRecovery".into(), json!(true));
    all.insert("deletionProtection".into(), json!(true));
    let settings = temp_file("cfn", "settings", &Value::Object(all))?;
    let out = run(&[
        "table",
        "cloudformation",
        "--config",
        &config,
        "--settings",
        &settings,
    ])?;
    assert_code(&out, 0);
    let props = stdout_json(&out)?["Properties"].clone();
    assert_eq!(props["BillingMode"], "PROVISIONED");
    assert_eq!(
        props["ProvisionedThroughput"],
        json!({ "ReadCapacityUnits": 4, "WriteCapacityUnits": 3 })
    );
    let created = props["GlobalSecondaryIndexes"]
        .as_array()
        .ok_or("GSIs")?
        .iter()
        .find(|g| g["IndexName"] == "created")
        .ok_or("GSI created")?;
    assert_eq!(
        created["ProvisionedThroughput"],
        json!({ "ReadCapacityUnits": 2, "WriteCapacityUnits": 1 })
    );
    assert_eq!(
        props["LocalSecondaryIndexes"][0],
        json!({
            "IndexName": "bySequence",
            "KeySchema": [
                { "AttributeName": "hashKey", "KeyType": "HASH" },
                { "AttributeName": "sequence", "KeyType": "RANGE" },
            ],
            "Projection": { "ProjectionType": "KEYS_ONLY" },
        })
    );
    assert_eq!(
        props["LocalSecondaryIndexes"][1]["Projection"],
        json!({ "ProjectionType": "INCLUDE", "NonKeyAttributes": ["firstName"] })
    );
    assert_eq!(
        props["TimeToLiveSpecification"],
        json!({ "AttributeName": "expiresAt", "Enabled": true })
    );
    assert_eq!(
        props["StreamSpecification"],
        json!({ "StreamViewType": "NEW_AND_OLD_IMAGES" })
    );
    assert_eq!(
        props["PointInTimeRecoverySpecification"],
        json!({ "PointInTimeRecoveryEnabled": true })
    );
    assert_eq!(props["DeletionProtectionEnabled"], json!(true));
    assert_eq!(
        props["Tags"],
        json!([{ "Key": "team", "Value": "accounts" }])
    );
    Ok(())
}

/// `settings()` as a JSON object, for `json!` spreads.
fn settings_object() -> Result<serde_json::Map<String, Value>, BoxError> {
    Ok(settings().as_object().ok_or("settings")?.clone())
}

#[test]
fn bad_settings_files_exit_2_and_invalid_definitions_exit_1() -> TestResult {
    let config = config("bad")?;
    let cfn = |settings: &str| {
        run(&[
            "table",
            "cloudformation",
            "--config",
            &config,
            "--settings",
            settings,
        ])
    };
    // An unknown key is a typo, not ignored.
    let typo = temp_file("bad", "typo", &json!({ "ttlAtribute": "expiresAt" }))?;
    let out = cfn(&typo)?;
    assert_code(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("ttlAtribute"));
    let stream = temp_file("bad", "stream", &json!({ "stream": "EVERYTHING" }))?;
    let out = cfn(&stream)?;
    assert_code(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("NEW_AND_OLD_IMAGES"));
    let gsi = temp_file(
        "bad",
        "gsi",
        &json!({ "billing": { "mode": "PROVISIONED", "read": 1, "write": 1, "indexes": { "nope": { "read": 1, "write": 1 } } } }),
    )?;
    let out = cfn(&gsi)?;
    assert_code(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("`nope`"));
    // Well-formed but invalid for DynamoDB: the TTL attribute is a key.
    let ttl = temp_file("bad", "ttl", &json!({ "ttlAttribute": "rangeKey" }))?;
    let out = cfn(&ttl)?;
    assert_code(&out, 1);
    assert!(String::from_utf8_lossy(&out.stderr).contains("TTL attribute `rangeKey`"));
    Ok(())
}

/// Alters the table behind the CLI's back: deletes GSI `phone`, turns TTL off.
async fn alter(endpoint: &str, table: &str) -> TestResult {
    use aws_sdk_dynamodb::types::{
        DeleteGlobalSecondaryIndexAction, GlobalSecondaryIndexUpdate, TimeToLiveSpecification,
    };
    let client = support::client(endpoint);
    client
        .update_table()
        .table_name(table)
        .global_secondary_index_updates(
            GlobalSecondaryIndexUpdate::builder()
                .delete(
                    DeleteGlobalSecondaryIndexAction::builder()
                        .index_name("phone")
                        .build()?,
                )
                .build(),
        )
        .send()
        .await?;
    client
        .update_time_to_live()
        .table_name(table)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .enabled(false)
                .attribute_name("expiresAt")
                .build()?,
        )
        .send()
        .await?;
    Ok(())
}

/// `describe --json` of the table created with `settings()`.
fn assert_described(described: &Value) -> TestResult {
    assert_eq!(
        described["billing"],
        json!({ "mode": "PROVISIONED", "capacity": { "read": 4, "write": 3 } })
    );
    let created = described["indexes"]
        .as_array()
        .ok_or("indexes")?
        .iter()
        .find(|g| g["name"] == "created")
        .ok_or("GSI created")?;
    assert_eq!(created["capacity"], json!({ "read": 2, "write": 1 }));
    // In DynamoDB's order, which is not the definition's.
    let mut lsis: Vec<&str> = described["localIndexes"]
        .as_array()
        .ok_or("localIndexes")?
        .iter()
        .filter_map(|l| l["name"].as_str())
        .collect();
    lsis.sort_unstable();
    assert_eq!(lsis, ["byNickname", "bySequence"]);
    assert_eq!(described["ttlAttribute"], json!("expiresAt"));
    assert_eq!(described["stream"], json!("NEW_AND_OLD_IMAGES"));
    assert_eq!(described["deletionProtection"], json!(false));
    assert_eq!(described["pointInTimeRecovery"], json!("unreported"));
    assert_eq!(described["tags"], json!("unreported"));
    Ok(())
}

#[test]
fn create_describe_drift_and_delete_with_settings_on_dynamodb_local() -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let config = config("e2e")?;
    let settings = temp_file("e2e", "settings", &settings())?;
    let table = format!("cli-table-settings-{}", std::process::id());
    let common = [
        "--config",
        config.as_str(),
        "--table",
        &table,
        "--endpoint",
        &endpoint,
    ];
    let with = |args: &[&str], settings: Option<&str>| -> Result<Output, std::io::Error> {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(common);
        if let Some(s) = settings {
            all.extend(["--settings", s]);
        }
        run(&all)
    };

    let out = with(&["table", "create", "--json"], Some(&settings))?;
    assert_code(&out, 0);
    assert_eq!(stdout_json(&out)?["action"], json!("created"));

    // describe shows the settings; what Local cannot report says so.
    let out = with(&["table", "describe", "--json"], None)?;
    assert_code(&out, 0);
    assert_described(&stdout_json(&out)?)?;

    // A clean table: exit 0, no drift, the unchecked settings named.
    let out = with(&["table", "drift", "--json"], Some(&settings))?;
    assert_code(&out, 0);
    let report = stdout_json(&out)?;
    assert_eq!(report["ok"], json!(true));
    assert_eq!(report["drift"], json!([]));
    assert_eq!(
        report["unchecked"],
        json!(["point-in-time-recovery", "tags"])
    );
    let out = with(&["table", "drift"], Some(&settings))?;
    assert_code(&out, 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("matches its definition"));

    // Checked against other settings (no stream): exit 3 (a finding), that one difference.
    let mut other = settings_object()?;
    other.remove("stream");
    let no_stream = temp_file("e2e", "no-stream", &Value::Object(other))?;
    let out = with(&["table", "drift", "--json"], Some(&no_stream))?;
    assert_code(&out, 3);
    let kinds: Vec<Value> = stdout_json(&out)?["drift"]
        .as_array()
        .ok_or("drift")?
        .iter()
        .map(|d| d["kind"].clone())
        .collect();
    assert_eq!(kinds, [json!("stream")]);

    // Altered behind its back: GSI `phone` deleted, TTL off; exactly those two, exit 3.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(alter(&endpoint, &table))?;
    let out = with(&["table", "drift", "--json"], Some(&settings))?;
    assert_code(&out, 3); // a finding, not a failure
    let report = stdout_json(&out)?;
    assert_eq!(report["ok"], json!(false));
    let drift = report["drift"].as_array().ok_or("drift")?;
    let kinds: Vec<&str> = drift.iter().filter_map(|d| d["kind"].as_str()).collect();
    assert_eq!(kinds, ["missing-index", "ttl"]);
    assert!(
        drift[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("`phone`")),
        "{drift:?}"
    );
    let out = with(&["table", "drift"], Some(&settings))?;
    assert_code(&out, 3);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("differs from its definition in 2 way(s)"),
        "{text}"
    );
    assert!(text.contains("missing-index: GSI `phone`"), "{text}");

    let out = with(&["table", "delete", "--json"], None)?;
    assert_code(&out, 0);
    // Drift of a table that is gone is an error, not "no drift".
    let out = with(&["table", "drift"], Some(&settings))?;
    assert_code(&out, 1);
    Ok(())
}

/// `table create` records the profile of `--key-profile` in the table's stamp and `describe` shows
/// it; `table stamp` under another profile is refused without `--force` (its keys would not
/// change), done with it; a data command under another profile warns on stderr before it
/// starts.
#[test]
fn table_create_stamps_and_table_stamp_restamps_on_dynamodb_local() -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let config = config("stamp")?;
    let table = format!("cli-table-stamp-{}", std::process::id());
    let with = |args: &[&str], profile: &str| -> Result<Output, std::io::Error> {
        let mut all: Vec<&str> = args.to_vec();
        all.extend([
            "--config",
            config.as_str(),
            "--table",
            &table,
            "--endpoint",
            &endpoint,
            "--key-profile",
            profile,
        ]);
        run(&all)
    };
    let stderr = |out: &Output| String::from_utf8_lossy(&out.stderr).into_owned();

    let out = with(&["table", "create"], "npm-6.14")?;
    assert_code(&out, 0);
    let result = (|| -> TestResult {
        let out = with(&["table", "describe", "--json"], "npm-6.14")?;
        assert_code(&out, 0);
        let stamp = stdout_json(&out)?["stamp"].clone();
        assert_eq!(stamp["profile"], json!("npm-6.14"));
        assert_eq!(stamp["keyMode"], json!("typescript"));
        assert_eq!(stamp["shardSpace"], json!("product"));
        assert!(stamp["entities"]["user"].is_string(), "{stamp}");

        // a data command under another profile is refused before it starts (issue 48: never
        // a warning)
        let out = run(&[
            "scan",
            config.as_str(),
            "--table",
            &table,
            "--endpoint",
            &endpoint,
            "--key-profile",
            "native",
        ])?;
        assert_code(&out, 2);
        let text = stderr(&out);
        assert!(
            text.contains(&format!("table {table} is stamped with profile `npm-6.14`"))
                && text.contains("leave --key-profile out"),
            "{text}"
        );

        // re-stamping with another profile: refused, then forced
        let out = with(&["table", "stamp"], "native")?;
        assert_code(&out, 1);
        let text = stderr(&out);
        assert!(
            text.contains("already stamped with profile `npm-6.14`") && text.contains("--force"),
            "{text}"
        );
        let out = with(&["table", "stamp", "--force", "--json"], "native")?;
        assert_code(&out, 0);
        assert_eq!(stdout_json(&out)?["stamp"]["profile"], json!("native"));
        let out = with(&["table", "describe", "--json"], "native")?;
        assert_eq!(stdout_json(&out)?["stamp"]["keyMode"], json!("transcoded"));
        Ok(())
    })();
    let out = with(&["table", "delete"], "native")?;
    assert_code(&out, 0);
    result
}

/// Issue 47: a table a TypeScript service (npm 6.14) created and wrote, without a stamp.
/// `table describe` and `drift` report the missing stamp and what the records show; `table
/// stamp --key-profile native` is refused (it would lock out the services that wrote them),
/// naming the profile the records show; `table stamp` without a profile infers it and stamps
/// the table with it; on an empty table without a profile it is refused, asking for one.
#[test]
#[allow(clippy::too_many_lines)] // one scenario, step by step
fn table_stamp_infers_the_profile_of_an_unstamped_table_on_dynamodb_local() -> TestResult {
    use entity_manager::Schema;
    use entity_manager::model::Profile;
    use entity_manager::store::{DynamoStore, Store, TableDefinition, WriteRequest};

    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let config_value = json!({
        "hashKey": "hashKey",
        "rangeKey": "rangeKey",
        "entities": { "player": {
            "uniqueProperty": "playerId", "timestampProperty": "created",
            "shardBumps": [{ "timestamp": 0, "charBits": 2, "chars": 2 }]
        } },
        "generatedProperties": { "unsharded": { "scoreRangeKey": ["score", "created"] } },
        "indexes": { "score": { "hashKey": "hashKey", "rangeKey": "scoreRangeKey" } },
        "propertyTranscodes": { "playerId": "string", "created": "timestamp", "score": "int" }
    });
    let config = temp_file("infer", "config", &config_value)?;
    let table = format!("cli-table-infer-{}", std::process::id());
    let empty = format!("cli-table-infer-empty-{}", std::process::id());
    let npm = Schema::from_ts_config(&config_value, Profile::Npm6_14)?;
    let unstamped = TableDefinition::from_schema(&npm)?.with_stamp(None);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let creator = DynamoStore::new(support::client(&endpoint), table.clone(), unstamped.clone());
    let creator_empty = DynamoStore::new(support::client(&endpoint), empty.clone(), unstamped);
    rt.block_on(async {
        creator.create_table().await?;
        creator_empty.create_table().await?;
        let players = (0..40)
            .map(|i| {
                let value = json!({ "playerId": format!("p{i}"), "created": 1_700_000_000_000u64, "score": i });
                Ok(WriteRequest::Put(npm.entity("player")?.add_keys(&serde_dynamo::to_item(value)?)?))
            })
            .collect::<Result<Vec<_>, BoxError>>()?;
        creator.batch_write(players).await?;
        Ok::<(), BoxError>(())
    })?;
    let with = |args: &[&str], table: &str, profile: Option<&str>| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend([
            "--config",
            config.as_str(),
            "--table",
            table,
            "--endpoint",
            &endpoint,
        ]);
        if let Some(profile) = profile {
            all.extend(["--key-profile", profile]);
        }
        run(&all)
    };
    let stderr = |out: &Output| String::from_utf8_lossy(&out.stderr).into_owned();
    let result = (|| -> TestResult {
        // describe and drift report the missing stamp, and what the records show
        let out = with(&["table", "describe", "--json"], &table, Some("native"))?;
        assert_code(&out, 0);
        let described = stdout_json(&out)?;
        assert_eq!(described["stamp"], Value::Null);
        assert_eq!(described["stampState"]["state"], json!("missing"));
        let message = described["stampState"]["message"]
            .as_str()
            .unwrap_or_default();
        assert!(
            message.contains("profile `npm-6.14` and no other"),
            "{message}"
        );
        let out = with(&["table", "drift", "--json"], &table, None)?;
        assert_code(&out, 3);
        let drift = stdout_json(&out)?["drift"].clone();
        assert_eq!(drift[0]["kind"], json!("stamp"), "{drift}");
        assert_eq!(drift[0]["state"], json!("missing"), "{drift}");

        // stamping with a profile the records disagree with: refused, naming theirs
        let out = with(&["table", "stamp"], &table, Some("native"))?;
        assert_code(&out, 1);
        let text = stderr(&out);
        assert!(
            text.contains("--key-profile npm-6.14") && text.contains("lock out"),
            "{text}"
        );
        assert!(!text.contains("--key-profile native`"), "{text}");

        // without a profile: the one the records show
        let out = with(&["table", "stamp", "--json"], &table, None)?;
        assert_code(&out, 0);
        assert_eq!(stdout_json(&out)?["stamp"]["profile"], json!("npm-6.14"));
        let out = with(&["table", "describe", "--json"], &table, None)?;
        assert_eq!(
            stdout_json(&out)?["stampState"]["state"],
            json!("as-configured")
        );
        // and now a command under another profile is refused (issue 48)
        let out = with(&["table", "describe", "--json"], &table, Some("upstream-8"))?;
        assert_code(&out, 2);
        // (`--json`: the error is a JSON line on stdout)
        assert!(String::from_utf8_lossy(&out.stdout).contains("stamped with profile `npm-6.14`"));

        // an empty table has nothing to infer from: a profile must be named
        let out = with(&["table", "stamp"], &empty, None)?;
        assert_code(&out, 2);
        assert!(stderr(&out).contains("--key-profile"), "{}", stderr(&out));
        Ok(())
    })();
    rt.block_on(async {
        creator.delete_table().await?;
        creator_empty.delete_table().await?;
        Ok::<(), BoxError>(())
    })?;
    result
}
