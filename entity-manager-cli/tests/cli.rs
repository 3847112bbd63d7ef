//! The `entity-manager` binary, driven as a process: outputs and exit codes.
//!
//! The table commands run against DynamoDB Local when `DYNAMODB_ENDPOINT` is set (`.ci/run`
//! starts it); they skip with a printed reason otherwise, except under `CI=true`.

use std::path::PathBuf;
use std::process::{Output, Stdio};

use serde_json::{Value, json};

mod support;

use support::{
    TestResult, assert_code, bin, compat, endpoint, kill_when_checkpointed, run, run_with_stdin,
    stdout_json, temp_json,
};

fn config_file(test: &str, config: &Value) -> Result<PathBuf, support::BoxError> {
    temp_json(test, "config", config)
}

fn code(output: &Output) -> Option<i32> {
    output.status.code()
}

fn assert_success(output: &Output) {
    assert_code(output, 0);
}

#[test]
fn validate_reports_validity_with_exit_codes() -> TestResult {
    let vectors = compat("product-user-service")?;
    let good = config_file("validate-good", &vectors["config"])?;
    let out = run(&["validate", good.to_str().ok_or("path")?, "--json"])?;
    assert_success(&out);
    let body = stdout_json(&out)?;
    assert_eq!(body["ok"], json!(true));
    let mut entities: Vec<&str> = body["entities"]
        .as_array()
        .ok_or("entities")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    entities.sort_unstable();
    assert_eq!(entities, ["email", "user"]);

    // Two independent problems: both are listed, exit 1.
    let mut config = vectors["config"].clone();
    config["entities"]["user"]["shardBumps"] =
        json!([{ "timestamp": 0, "charBits": 9, "chars": 1 }]);
    config["generatedKeyDelimiter"] = json!("");
    let bad = config_file("validate-bad", &config)?;
    let out = run(&["validate", bad.to_str().ok_or("path")?, "--json"])?;
    assert_eq!(code(&out), Some(1));
    let body = stdout_json(&out)?;
    assert_eq!(body["ok"], json!(false));
    assert_eq!(body["error"], json!("config"));
    let paths: Vec<&str> = body["problems"]
        .as_array()
        .ok_or("problems")?
        .iter()
        .filter_map(|p| p["path"].as_str())
        .collect();
    assert!(paths.iter().any(|p| p.contains("charBits")), "{paths:?}");
    assert!(paths.contains(&"generatedKeyDelimiter"), "{paths:?}");
    // Text output names them too, on stderr.
    let out = run(&["validate", bad.to_str().ok_or("path")?])?;
    assert_eq!(code(&out), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("generatedKeyDelimiter"));

    // Unreadable input and bad usage: exit 2.
    let out = run(&["validate", "/nonexistent/config.json"])?;
    assert_eq!(code(&out), Some(2));
    let out = run(&["validate"])?;
    assert_eq!(code(&out), Some(2));
    let out = run(&["frobnicate"])?;
    assert_eq!(code(&out), Some(2));
    Ok(())
}

/// `keys add` writes exactly the keys the TypeScript reference recorded, for every `add_keys`
/// case of the golden vectors that has a result.
#[test]
fn keys_add_matches_the_golden_vectors() -> TestResult {
    for file in [
        "product-user-service",
        "power-user-service",
        "product-custom-delims",
    ] {
        let vectors = compat(file)?;
        let space = vectors["shardSpace"].as_str().ok_or("shardSpace")?;
        let config = config_file(&format!("keys-{file}"), &vectors["config"])?;
        let cases: Vec<&Value> = vectors["cases"]
            .as_array()
            .ok_or("cases")?
            .iter()
            .filter(|c| c["op"] == "add_keys" && c["expected"].get("error").is_none())
            // `null` in an expected value stands for `undefined` (see the compat README)
            .filter(|c| {
                c["expected"]
                    .as_object()
                    .is_some_and(|o| o.values().all(|v| !v.is_null()))
            })
            .collect();
        assert!(!cases.is_empty(), "{file}");
        for case in cases {
            let entity = case["entity"].as_str().ok_or("entity")?;
            let line = format!("{}\n", case["item"]);
            let out = run_with_stdin(
                &[
                    "keys",
                    "add",
                    "--config",
                    config.to_str().ok_or("path")?,
                    "--entity",
                    entity,
                    "--shard-space",
                    space,
                ],
                &line,
            )?;
            assert_eq!(
                code(&out),
                Some(0),
                "{file}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let got = stdout_json(&out)?;
            assert_eq!(got, case["expected"], "{file}, item {}", case["item"]);
        }
    }
    Ok(())
}

#[test]
fn keys_remove_undoes_keys_add_for_arrays_and_lines() -> TestResult {
    let vectors = compat("product-user-service")?;
    let config = config_file("keys-roundtrip", &vectors["config"])?;
    let config = config.to_str().ok_or("path")?;
    let items = json!([
        { "userId": "u1", "created": 1_726_880_933_000u64, "firstNameCanonical": "ann", "lastNameCanonical": "lee" },
        { "userId": "u2", "created": 1_700_000_000_000u64, "phone": "+1" }
    ]);
    let out = run_with_stdin(
        &["keys", "add", "--config", config, "--entity", "user"],
        &items.to_string(),
    )?;
    assert_success(&out);
    let keyed = stdout_json(&out)?;
    assert!(keyed[0]["hashKey"].is_string() && keyed[1]["rangeKey"] == json!("userId#u2"));
    let out = run_with_stdin(
        &["keys", "remove", "--config", config, "--entity", "user"],
        &keyed.to_string(),
    )?;
    assert_eq!(code(&out), Some(0));
    assert_eq!(stdout_json(&out)?, items);

    // One item per line in, one per line out.
    let lines: String = items
        .as_array()
        .ok_or("items")?
        .iter()
        .map(|i| i.to_string() + "\n")
        .collect();
    let out = run_with_stdin(
        &["keys", "add", "--config", config, "--entity", "user"],
        &lines,
    )?;
    let text = String::from_utf8(out.stdout)?;
    let back: Vec<Value> = text
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    assert_eq!(back, keyed.as_array().ok_or("keyed")?.clone());

    // A value with a delimiter is an operation error naming the item; bad JSON is an input error.
    let out = run_with_stdin(
        &["keys", "add", "--config", config, "--entity", "user"],
        r#"{"userId":"a|b","created":1}"#,
    )?;
    assert_eq!(code(&out), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("item 1"));
    let out = run_with_stdin(
        &["keys", "add", "--config", config, "--entity", "user"],
        "{not json\n",
    )?;
    assert_eq!(code(&out), Some(2));
    let out = run(&["keys", "add", "--config", config, "--entity", "nobody"])?;
    assert_eq!(code(&out), Some(2));
    Ok(())
}

#[test]
fn table_cloudformation_prints_the_resource() -> TestResult {
    let vectors = compat("product-user-service")?;
    let config = config_file("cfn", &vectors["config"])?;
    let out = run(&[
        "table",
        "cloudformation",
        "--config",
        config.to_str().ok_or("path")?,
        "--table",
        "Users",
    ])?;
    assert_success(&out);
    let resource = stdout_json(&out)?;
    assert_eq!(resource["Type"], json!("AWS::DynamoDB::Table"));
    assert_eq!(resource["Properties"]["TableName"], json!("Users"));
    let indexes = resource["Properties"]["GlobalSecondaryIndexes"]
        .as_array()
        .ok_or("indexes")?;
    assert_eq!(
        indexes.len(),
        vectors["config"]["indexes"]
            .as_object()
            .ok_or("config indexes")?
            .len()
    );
    Ok(())
}

#[test]
fn table_create_describe_delete_on_dynamodb_local() -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let vectors = compat("product-user-service")?;
    let config = config_file("table", &vectors["config"])?;
    let config = config.to_str().ok_or("path")?;
    let table = format!("cli-table-{}", std::process::id());
    let common = [
        "--config",
        config,
        "--table",
        &table,
        "--endpoint",
        &endpoint,
    ];

    let out = run(&[&["table", "create", "--json"][..], &common].concat())?;
    assert_success(&out);
    assert_eq!(stdout_json(&out)?["action"], json!("created"));

    let out = run(&[&["table", "describe", "--json"][..], &common].concat())?;
    assert_success(&out);
    let described = stdout_json(&out)?;
    assert_eq!(described["table"], json!(table));
    assert_eq!(described["status"], json!("ACTIVE"));
    assert_eq!(
        described["indexes"].as_array().ok_or("indexes")?.len(),
        vectors["config"]["indexes"]
            .as_object()
            .ok_or("config indexes")?
            .len()
    );

    // Creating it again fails (it exists): exit 1 with the store's reason.
    let out = run(&[&["table", "create"][..], &common].concat())?;
    assert_eq!(code(&out), Some(1));

    let out = run(&[&["table", "delete", "--json"][..], &common].concat())?;
    assert_success(&out);
    let out = run(&[&["table", "describe"][..], &common].concat())?;
    assert_eq!(code(&out), Some(1), "a deleted table cannot be described");
    Ok(())
}

/// A silent endpoint (accepts connections, never answers) fails within the timeout instead of
/// hanging.
#[test]
fn a_silent_endpoint_times_out() -> TestResult {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let endpoint = format!("http://{}", listener.local_addr()?);
    let vectors = compat("product-user-service")?;
    let config = config_file("silent", &vectors["config"])?;
    let started = std::time::Instant::now();
    let out = run(&[
        "table",
        "describe",
        "--config",
        config.to_str().ok_or("path")?,
        "--table",
        "t",
        "--endpoint",
        &endpoint,
        "--timeout",
        "1",
    ])?;
    assert_eq!(
        code(&out),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    drop(listener);
    Ok(())
}

/// Seeds a table created by `table create` with users and emails (keys added by the schema),
/// through the library; returns the hash and range key of every item written.
fn seed(
    endpoint: &str,
    table: &str,
    config: &Value,
    users: u32,
    emails: u32,
) -> Result<Vec<(String, String)>, Box<dyn std::error::Error>> {
    use entity_manager::model::ShardSpace;
    use entity_manager::store::{Store, WriteRequest};
    use entity_manager::{Item, Schema};

    let schema = Schema::from_ts_config(config, ShardSpace::Product)?;
    let store = support::store(endpoint, table, &schema)?;
    let mut items: Vec<Item> = Vec::new();
    for i in 0..users {
        let raw: Item = serde_dynamo::to_item(
            json!({ "userId": format!("u{i:03}"), "created": 1_726_000_000_000u64 + u64::from(i) * 86_400_000 }),
        )?;
        items.push(schema.entity("user")?.add_keys(&raw)?);
    }
    for i in 0..emails {
        let raw: Item = serde_dynamo::to_item(
            json!({ "email": format!("e{i:03}@example.com"), "userId": format!("u{i:03}"), "created": 1_729_000_000_000u64 + u64::from(i) * 86_400_000 }),
        )?;
        items.push(schema.entity("email")?.add_keys(&raw)?);
    }
    let keys = items.iter().map(item_key).collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(store.batch_write(items.into_iter().map(WriteRequest::Put).collect()))?;
    Ok(keys)
}

/// An item's table key: hash key, range key.
type Key = (String, String);

/// A table named after `test`, created by the CLI from the User service config, holding
/// `users` users and `emails` emails: the config file, the table name and the seeded keys.
fn seeded_table(
    test: &str,
    endpoint: &str,
    users: u32,
    emails: u32,
) -> Result<(PathBuf, String, Vec<Key>), Box<dyn std::error::Error>> {
    let vectors = compat("product-user-service")?;
    let config_path = config_file(test, &vectors["config"])?;
    let config = config_path.to_str().ok_or("path")?;
    let table = format!("cli-{test}-{}", std::process::id());
    let out = run(&[
        "table",
        "create",
        "--config",
        config,
        "--table",
        &table,
        "--endpoint",
        endpoint,
    ])?;
    assert_success(&out);
    let seeded = seed(endpoint, &table, &vectors["config"], users, emails)?;
    Ok((config_path, table, seeded))
}

fn item_key(item: &entity_manager::Item) -> (String, String) {
    let text = |name: &str| match item.get(name) {
        Some(entity_manager::AttributeValue::S(s)) => s.clone(),
        _ => String::new(),
    };
    (text("hashKey"), text("rangeKey"))
}

/// The items a `scan` printed (one JSON object per line), as sorted keys.
fn scanned_keys(output: &Output) -> Result<Vec<(String, String)>, Box<dyn std::error::Error>> {
    let mut keys = Vec::new();
    for line in String::from_utf8(output.stdout.clone())?.lines() {
        let item: Value = serde_json::from_str(line)?;
        keys.push((
            item["hashKey"].as_str().ok_or("hashKey")?.to_owned(),
            item["rangeKey"].as_str().ok_or("rangeKey")?.to_owned(),
        ));
    }
    keys.sort();
    Ok(keys)
}

/// `scan` prints every item (or one entity's) as JSON lines with counts on stderr; `purge`
/// refuses without confirmation, stops partway (as an interrupted run would) with exit 1 and
/// a message saying how to resume, resumes from `--checkpoint` to an empty entity with the
/// counts of both runs, then purges the rest of the table.
#[test]
#[allow(clippy::too_many_lines)] // one end-to-end story
fn scan_and_purge_on_dynamodb_local() -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let (config_path, table, mut seeded) = seeded_table("scan", &endpoint, 70, 30)?;
    let config = config_path.to_str().ok_or("path")?;
    let connection = ["--table", &table, "--endpoint", &endpoint];
    seeded.sort();
    let users: Vec<(String, String)> = seeded
        .iter()
        .filter(|(h, _)| h.starts_with("user!"))
        .cloned()
        .collect();
    let emails: Vec<(String, String)> = seeded
        .iter()
        .filter(|(h, _)| h.starts_with("email!"))
        .cloned()
        .collect();
    assert_eq!((users.len(), emails.len()), (70, 30));

    let result = (|| -> TestResult {
        // the whole table, then one entity in 3 segments with a JSON summary
        let out = run(&[&["scan", config][..], &connection[..]].concat())?;
        assert_success(&out);
        assert_eq!(scanned_keys(&out)?, seeded);
        assert!(String::from_utf8_lossy(&out.stderr).contains("scanned 100 items"));
        let out = run(&[
            &[
                "scan",
                config,
                "--entity",
                "user",
                "--segments",
                "3",
                "--json",
            ][..],
            &connection[..],
        ]
        .concat())?;
        assert_eq!(code(&out), Some(0));
        assert_eq!(scanned_keys(&out)?, users);
        let summary: Value = serde_json::from_slice(&out.stderr)?;
        assert_eq!(summary["counts"], json!({ "user": 70 }));
        // an unknown entity is a usage error
        let out = run(&[&["scan", config, "--entity", "nobody"][..], &connection[..]].concat())?;
        assert_eq!(code(&out), Some(2));

        // usage: no target, two targets, no confirmation (stdin is not a terminal)
        for args in [
            &["purge", config][..],
            &["purge", config, "--entity", "user", "--all", "--yes"][..],
            &["purge", config, "--entity", "user"][..],
        ] {
            let out = run(&[args, &connection[..]].concat())?;
            assert_eq!(code(&out), Some(2), "{args:?}");
        }
        let out = run(&[&["scan", config][..], &connection[..]].concat())?;
        assert_eq!(
            scanned_keys(&out)?,
            seeded,
            "a refused purge deleted something"
        );

        // interrupted after 2 pages of 10: exit 1, told how to resume, the checkpoint saved
        let checkpoint = std::env::temp_dir().join(format!(
            "em-cli-purge-{}.checkpoint.json",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&checkpoint);
        let checkpoint_arg = checkpoint.to_str().ok_or("path")?;
        let purge_user = [
            "purge",
            config,
            "--entity",
            "user",
            "--yes",
            "--segments",
            "2",
            "--page-size",
            "10",
            "--checkpoint",
            checkpoint_arg,
        ];
        let out = run(&[&purge_user[..], &["--stop-after", "2"], &connection[..]].concat())?;
        assert_eq!(code(&out), Some(1));
        let message = String::from_utf8_lossy(&out.stderr);
        assert!(
            message.contains(&format!("--checkpoint {checkpoint_arg}")),
            "{message}"
        );
        assert!(checkpoint.exists());
        let out = run(&[&["scan", config, "--entity", "user"][..], &connection[..]].concat())?;
        let left = scanned_keys(&out)?.len();
        assert!(left > 0 && left < 70, "{left} users left after 2 pages");
        // a checkpoint of another target is refused
        let out = run(&[
            &[
                "purge",
                config,
                "--all",
                "--yes",
                "--checkpoint",
                checkpoint_arg,
            ][..],
            &connection[..],
        ]
        .concat())?;
        assert_eq!(code(&out), Some(2));

        // resumed: every user gone, the counts of both runs, the checkpoint removed
        let out = run(&[&purge_user[..], &["--json"], &connection[..]].concat())?;
        assert_success(&out);
        let summary = stdout_json(&out)?;
        assert_eq!(summary["ok"], json!(true));
        assert_eq!(summary["counts"], json!({ "user": 70 }));
        assert!(!checkpoint.exists());
        let out = run(&[&["scan", config][..], &connection[..]].concat())?;
        assert_eq!(scanned_keys(&out)?, emails);

        // the rest of the table, stopped once without --checkpoint: the position goes to a
        // file in the working directory, which the message names
        let dir = std::env::temp_dir().join(format!("em-cli-purge-dir-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let out = bin()
            .args(
                [
                    &["purge", config, "--all", "--yes", "--page-size", "5"][..],
                    &["--stop-after", "1"],
                    &connection[..],
                ]
                .concat(),
            )
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()?;
        assert_eq!(code(&out), Some(1));
        let saved = format!("entity-manager-purge-{table}.checkpoint.json");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&format!("--checkpoint {saved}")),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let saved = dir.join(saved);
        assert!(saved.exists());
        let out = run(&[
            &["purge", config, "--all", "--yes", "--json", "--checkpoint"][..],
            &[saved.to_str().ok_or("path")?],
            &connection[..],
        ]
        .concat())?;
        assert_success(&out);
        // the counts of both runs: a stop finishes the pages in flight and records them
        assert_eq!(stdout_json(&out)?["counts"], json!({ "email": 30 }));
        assert!(!saved.exists());
        let _ = std::fs::remove_dir(&dir);
        let out = run(&[&["scan", config][..], &connection[..]].concat())?;
        assert_eq!(code(&out), Some(0));
        assert!(out.stdout.is_empty());
        Ok(())
    })();
    let out = run(&[
        &["table", "delete", "--config", config][..],
        &connection[..],
    ]
    .concat())?;
    assert_eq!(code(&out), Some(0));
    result
}

/// A purge killed (SIGKILL) partway, after its checkpoint shows progress, is finished by the
/// same command with the same `--checkpoint`: every record of the entity gone, the other
/// entity intact.
#[test]
fn purge_killed_partway_resumes_from_its_checkpoint() -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let (config_path, table, mut seeded) = seeded_table("kill", &endpoint, 120, 10)?;
    let config = config_path.to_str().ok_or("path")?;
    let connection = ["--table", &table, "--endpoint", &endpoint];
    seeded.retain(|(h, _)| h.starts_with("email!"));
    seeded.sort();

    let result = (|| -> TestResult {
        let checkpoint = std::env::temp_dir().join(format!(
            "em-cli-kill-{}.checkpoint.json",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&checkpoint);
        let checkpoint_arg = checkpoint.to_str().ok_or("path")?;
        // one page of one item at a time: about 240 round trips, time enough to kill it
        let purge = [
            "purge",
            config,
            "--entity",
            "user",
            "--yes",
            "--segments",
            "1",
            "--page-size",
            "1",
            "--checkpoint",
            checkpoint_arg,
        ];
        // kill it once the checkpoint records a position inside the segment
        kill_when_checkpointed(&[&purge[..], &connection[..]].concat(), &checkpoint)?;
        let out = run(&[&["scan", config, "--entity", "user"][..], &connection[..]].concat())?;
        let left = scanned_keys(&out)?.len();
        assert!(left > 0 && left < 120, "{left} users left when killed");

        let out = run(&[&purge[..], &connection[..]].concat())?;
        assert_success(&out);
        assert!(!checkpoint.exists());
        let out = run(&[&["scan", config][..], &connection[..]].concat())?;
        assert_eq!(scanned_keys(&out)?, seeded);
        Ok(())
    })();
    let out = run(&[
        &["table", "delete", "--config", config][..],
        &connection[..],
    ]
    .concat())?;
    assert_eq!(code(&out), Some(0));
    result
}
