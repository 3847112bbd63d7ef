//! The `stream` command, driven as a process on DynamoDB Local: it prints every change of the
//! table's stream as a JSON line (kind, entity, key, images without keys, what changed), resumes
//! from its checkpoint file, filters by entity, starts at `latest`, and reports a record that
//! does not decode as an error line with exit code 3. Skips without `DYNAMODB_ENDPOINT`
//! (fails under `CI=true`).

use std::path::Path;

use entity_manager::model::ShardSpace;
use entity_manager::store::{DynamoStore, Expect, Store, StreamView, TableDefinition};
use entity_manager::{Item, Schema};
use serde_json::{Value, json};

mod support;

use support::{
    BoxError, TestResult, arg, assert_code, client, connection, endpoint, run, temp_json,
};

/// The JSON lines of stdout.
fn lines(out: &std::process::Output) -> Result<Vec<Value>, BoxError> {
    String::from_utf8(out.stdout.clone())?
        .lines()
        .map(|l| Ok(serde_json::from_str(l)?))
        .collect()
}

fn item(value: &Value) -> Result<Item, BoxError> {
    Ok(serde_dynamo::to_item(value)?)
}

/// Puts the record `value` of `entity`, keyed by the schema.
async fn put(store: &DynamoStore, schema: &Schema, entity: &str, value: &Value) -> TestResult {
    let keyed = schema.entity(entity)?.add_keys(&item(value)?)?;
    store.put_item(keyed, Expect::Any).await?;
    Ok(())
}

async fn delete(store: &DynamoStore, schema: &Schema, entity: &str, value: &Value) -> TestResult {
    let keyed = schema.entity(entity)?.add_keys(&item(value)?)?;
    let mut key = Item::default();
    for k in ["hashKey", "rangeKey"] {
        key.insert(k.to_owned(), keyed[k].clone());
    }
    store.delete_item(&key, Expect::Present).await?;
    Ok(())
}

fn stream_args<'a>(
    config: &'a str,
    table: &'a str,
    endpoint: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec!["stream", config, "--table", table, "--no-follow"];
    args.extend_from_slice(extra);
    args.extend(connection(endpoint));
    args
}

#[test]
#[allow(clippy::too_many_lines)] // one scenario, step by step
fn stream_prints_resumes_filters_and_reports_bad_records_on_dynamodb_local() -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let config_value = support::user_service_config()?;
    let schema = Schema::from_ts_config(&config_value, ShardSpace::Product)?;
    let config_path = temp_json("stream", "config", &config_value)?;
    let config = arg(&config_path)?;
    let table = format!("cli-stream-{}", std::process::id());
    let checkpoint = std::env::temp_dir().join(format!(
        "em-cli-stream-{}.checkpoint.json",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&checkpoint);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let store = DynamoStore::new(
        client(&endpoint),
        table.clone(),
        TableDefinition::from_schema(&schema)?.with_stream(StreamView::NewAndOldImages),
    );
    let ann = json!({ "userId": "u1", "created": 1_730_000_000_000u64, "firstNameCanonical": "ann", "lastNameCanonical": "lee" });
    let ann2 = json!({ "userId": "u1", "created": 1_730_000_000_000u64, "firstNameCanonical": "anne", "lastNameCanonical": "lee" });
    let mail = json!({ "email": "a@example.com", "userId": "u1", "created": 1_731_000_000_000u64 });
    rt.block_on(async {
        store.create_table().await?;
        put(&store, &schema, "user", &ann).await?;
        put(&store, &schema, "email", &mail).await?;
        put(&store, &schema, "user", &ann2).await?;
        Ok::<(), BoxError>(())
    })?;

    let stream = |extra: &[&str]| run(&stream_args(config, &table, &endpoint, extra));

    // everything so far, as JSON lines, in order
    let out = stream(&["--checkpoint", arg(&checkpoint)?])?;
    assert_code(&out, 0);
    let printed = lines(&out)?;
    assert_eq!(printed.len(), 3, "{printed:?}");
    let kinds: Vec<&Value> = printed.iter().map(|l| &l["kind"]).collect();
    assert_eq!(
        kinds,
        [&json!("INSERT"), &json!("INSERT"), &json!("MODIFY")]
    );
    assert_eq!(printed[0]["entity"], json!("user"));
    assert_eq!(printed[0]["new"], ann, "the image without its keys");
    assert_eq!(printed[1]["new"], mail);
    assert_eq!(printed[2]["old"], ann);
    assert_eq!(printed[2]["new"], ann2);
    assert_eq!(printed[2]["changedFields"], json!(["firstNameCanonical"]));
    assert_eq!(
        printed[2]["changedKeys"],
        json!(["firstNameRangeKey", "lastNameRangeKey"])
    );
    let keyed = schema.entity("user")?.add_keys(&item(&ann)?)?;
    assert_eq!(
        printed[0]["key"]["hashKey"],
        json!(support_text(&keyed, "hashKey"))
    );
    assert!(Path::new(&checkpoint).exists(), "the checkpoint is saved");

    // resumed from the checkpoint: only what came after
    rt.block_on(async {
        delete(&store, &schema, "email", &mail).await?;
        // an item of an entity the configuration does not know
        let mut foreign = Item::default();
        foreign.insert(
            "hashKey".into(),
            entity_manager::AttributeValue::S("invoice!0".into()),
        );
        foreign.insert(
            "rangeKey".into(),
            entity_manager::AttributeValue::S("invoiceId#i1".into()),
        );
        store.put_item(foreign, Expect::Any).await?;
        Ok::<(), BoxError>(())
    })?;
    let out = stream(&["--checkpoint", arg(&checkpoint)?, "--json"])?;
    assert_code(&out, 3);
    let printed = lines(&out)?;
    assert_eq!(printed.len(), 2, "{printed:?}");
    assert_eq!(printed[0]["kind"], json!("REMOVE"));
    assert_eq!(printed[0]["old"], mail);
    assert!(
        printed[1]["error"]
            .as_str()
            .is_some_and(|e| e.contains("invoice")),
        "{printed:?}"
    );
    assert_eq!(printed[1]["keys"]["hashKey"], json!("invoice!0"));
    let summary: Value = serde_json::from_slice(out.stderr.trim_ascii())?;
    assert_eq!(summary["errors"], json!(1));
    // and nothing more after that
    let out = stream(&["--checkpoint", arg(&checkpoint)?])?;
    assert_code(&out, 0);
    assert!(lines(&out)?.is_empty());

    // the whole stream again, only the emails
    let out = stream(&["--entity", "email"])?;
    assert_code(&out, 3); // the foreign record is still in the stream
    let printed = lines(&out)?;
    let entities: Vec<&Value> = printed
        .iter()
        .filter(|l| l.get("error").is_none())
        .map(|l| &l["entity"])
        .collect();
    assert_eq!(entities, [&json!("email"), &json!("email")]);

    // `latest`: nothing of the past
    let out = stream(&["--from", "latest"])?;
    assert_code(&out, 0);
    assert!(lines(&out)?.is_empty());

    // an unknown entity for `--entity` is an input error
    let out = stream(&["--entity", "nope"])?;
    assert_code(&out, 2);

    rt.block_on(store.delete_table())?;
    let _ = std::fs::remove_file(&checkpoint);
    Ok(())
}

fn support_text(item: &Item, name: &str) -> String {
    match item.get(name) {
        Some(entity_manager::AttributeValue::S(s)) => s.clone(),
        other => format!("{other:?}"),
    }
}

/// Issue 47: `stream` finds DynamoDB Local as every other command does, from
/// `AWS_ENDPOINT_URL_DYNAMODB` alone (no `--endpoint-url`, no region: DynamoDB Local serves
/// both APIs at one URL); `AWS_ENDPOINT_URL_DYNAMODB_STREAMS` wins for the Streams calls, and a
/// Streams endpoint that cannot be reached is named, not the DynamoDB one (the Streams client
/// went to the AWS Streams host, and the message named `127.0.0.1`).
#[test]
fn stream_takes_its_endpoint_from_the_environment_and_names_the_streams_host_that_failed()
-> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let config_value = support::user_service_config()?;
    let schema = Schema::from_ts_config(&config_value, ShardSpace::Product)?;
    let config_path = temp_json("stream-env", "config", &config_value)?;
    let config = arg(&config_path)?;
    let table = format!("cli-stream-env-{}", std::process::id());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let store = DynamoStore::new(
        client(&endpoint),
        table.clone(),
        TableDefinition::from_schema(&schema)?.with_stream(StreamView::NewAndOldImages),
    );
    let ann = json!({ "userId": "u1", "created": 1_730_000_000_000u64, "firstNameCanonical": "ann", "lastNameCanonical": "lee" });
    rt.block_on(async {
        store.create_table().await?;
        put(&store, &schema, "user", &ann).await?;
        Ok::<(), BoxError>(())
    })?;
    let args = [
        "stream",
        "--config",
        config,
        "--table",
        &table,
        "--no-follow",
        "--timeout",
        "5",
    ];

    // only the DynamoDB endpoint variable: both APIs at DynamoDB Local
    let out = support::bin()
        .args(args)
        .env("AWS_ENDPOINT_URL_DYNAMODB", &endpoint)
        .stdin(std::process::Stdio::null())
        .output()?;
    assert_code(&out, 0);
    let printed = lines(&out)?;
    assert_eq!(printed.len(), 1, "{printed:?}");
    assert_eq!(printed[0]["kind"], json!("INSERT"));
    assert_eq!(printed[0]["new"], ann);

    // the Streams variable wins for the Streams calls: a port nobody listens on is named
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        format!("http://127.0.0.1:{}", listener.local_addr()?.port())
    };
    let out = support::bin()
        .args(args)
        .env("AWS_ENDPOINT_URL_DYNAMODB", &endpoint)
        .env("AWS_ENDPOINT_URL_DYNAMODB_STREAMS", &closed)
        .stdin(std::process::Stdio::null())
        .output()?;
    assert_code(&out, 1);
    let stderr = String::from_utf8(out.stderr.clone())?;
    assert!(
        stderr.contains(&format!("cannot reach DynamoDB Streams at {closed}")),
        "{stderr}"
    );
    assert!(
        stderr.contains("AWS_ENDPOINT_URL_DYNAMODB_STREAMS"),
        "the advice names the variable: {stderr}"
    );
    assert!(lines(&out)?.is_empty());

    rt.block_on(store.delete_table())?;
    Ok(())
}
