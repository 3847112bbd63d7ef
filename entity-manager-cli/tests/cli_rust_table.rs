//! A table defined in Rust is first-class on the command line (issue 48): created from
//! `#[derive(Table)]` entities, its stamp carries the whole schema, and every command works
//! with `--table` alone, taking the schema and the key profile from the table. A `--config`
//! that differs from the table's schema is a finding (exit 3) naming what differs; a
//! `--key-profile` that disagrees with the stamp is refused (exit 2).
//!
//! The shop of the issue: `Customer` sharded with an email index; `Order` version-checked with
//! multi-attribute indexes, `byStatus` sharded by status and creation date; `OrderLine` in an
//! item collection with `Order` (the shared `byOrder` index).
//!
//! Runs when `DYNAMODB_ENDPOINT` is set (`.ci/run` starts DynamoDB Local) and skips with a
//! printed reason otherwise, except under `CI=true`.
#![allow(clippy::struct_field_names)] // fields are named after their attributes

use entity_manager::prelude::*;
use entity_manager::store::{DynamoStore, StreamView};
use serde::{Deserialize, Serialize};
use serde_json::json;

mod support;

use support::{
    BoxError, TestResult, arg, assert_code, client, connection, endpoint, run, stdout_json,
    stdout_lines, temp_json,
};

#[derive(Table)]
#[table(entities(Customer, Order, OrderLine))]
struct Shop;

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Shop, unique = customer_id, timestamp = created)]
#[shard_bumps(bumps = [bump(timestamp = 1_700_000_000_000, char_bits = 2, chars = 1)])]
#[index(name = "email", range = email)]
struct Customer {
    #[transcode("string")]
    customer_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    email: String,
}

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Shop, unique = order_id, timestamp = created, version = version)]
#[shard_bumps(bumps = [bump(timestamp = 1_700_000_000_000, char_bits = 1, chars = 1)])]
#[index(name = "byStatus", hash = [status], range = [created], sharded)]
#[index(name = "byCustomer", hash = [customer_id], range = [created])]
#[index(name = "byOrder", hash = [order_id], range = [line])]
struct Order {
    #[transcode("string")]
    order_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    customer_id: String,
    #[transcode("string")]
    status: String,
    #[transcode("int")]
    line: i64, // 0: the order sorts before its lines in the collection
    total: u64,
    version: u64,
}

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Shop, unique = line_id, timestamp = created)]
#[index(name = "byOrder", hash = [order_id], range = [line])]
struct OrderLine {
    #[transcode("string")]
    line_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    order_id: String,
    #[transcode("int")]
    line: i64,
    sku: String,
}

fn order(id: &str, created: u64, customer: &str, status: &str) -> Order {
    Order {
        order_id: id.into(),
        created,
        customer_id: customer.into(),
        status: status.into(),
        line: 0,
        total: 100,
        version: 0,
    }
}

/// The table of the shop on DynamoDB Local, created from the Rust entities (with a stream),
/// and its records written by the library.
fn shop_table(endpoint: &str, table: &str) -> Result<DynamoStore, BoxError> {
    let definition =
        TableDefinition::from_schema(Shop::schema()?)?.with_stream(StreamView::NewAndOldImages);
    let store = DynamoStore::new(client(endpoint), table, definition);
    let customers = [
        Customer {
            customer_id: "c1".into(),
            created: 1_600_000_000_000,
            email: "a@example.com".into(),
        },
        Customer {
            customer_id: "c2".into(),
            created: 1_700_000_000_001,
            email: "b@example.com".into(),
        },
    ];
    let orders = [
        order("o1", 1_700_000_000_010, "c1", "paid"),
        order("o2", 1_700_000_000_020, "c1", "open"),
        order("o3", 1_600_000_000_030, "c2", "paid"),
    ];
    let lines = [
        OrderLine {
            line_id: "l1".into(),
            created: 1_700_000_000_011,
            order_id: "o1".into(),
            line: 1,
            sku: "s1".into(),
        },
        OrderLine {
            line_id: "l2".into(),
            created: 1_700_000_000_012,
            order_id: "o1".into(),
            line: 2,
            sku: "s2".into(),
        },
    ];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        store.create_table().await?;
        let mut items = Vec::new();
        for c in &customers {
            items.push(c.to_item()?);
        }
        for o in &orders {
            items.push(o.to_item()?);
        }
        for l in &lines {
            items.push(l.to_item()?);
        }
        for item in items {
            store.put_item(item, Expect::Any).await?;
        }
        Ok::<(), BoxError>(())
    })?;
    Ok(store)
}

/// The command's arguments on `table` with only `--table` (and the connection).
fn on<'a>(command: &[&'a str], table: &'a str, endpoint: &'a str) -> Vec<&'a str> {
    let mut args = command.to_vec();
    args.extend(["--table", table]);
    args.extend(connection(endpoint));
    args
}

/// The values of `field` in each line of the command's stdout.
fn field(out: &std::process::Output, field: &str) -> Result<Vec<String>, BoxError> {
    Ok(stdout_lines(out)?
        .iter()
        .map(|l| l[field].as_str().unwrap_or_default().to_owned())
        .collect())
}

#[test]
#[allow(clippy::too_many_lines)] // one scenario, command by command
fn a_table_defined_in_rust_needs_only_its_name_on_the_command_line() -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let table = format!("cli-rust-shop-{}", std::process::id());
    let table = table.as_str();
    let endpoint = endpoint.as_str();
    let _store = shop_table(endpoint, table)?;

    // table describe: the stamp says native and carries the schema of the Rust entities
    let out = run(&on(&["table", "describe", "--json"], table, endpoint))?;
    assert_code(&out, 0);
    let described = stdout_json(&out)?;
    assert_eq!(described["stamp"]["profile"], "native");
    assert_eq!(described["stamp"]["schema"], Shop::schema()?.to_json()?);
    assert_eq!(
        described["stampState"]["state"], "as-configured",
        "{described}"
    );

    // get: the table's profile (native), no --key-profile, no warning
    let out = run(&on(
        &["get", "--entity", "customer", "--id", "c2"],
        table,
        endpoint,
    ))?;
    assert_code(&out, 0);
    let got = stdout_lines(&out)?;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        (&got[0]["customerId"], &got[0]["email"]),
        (&json!("c2"), &json!("b@example.com"))
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // import: one more paid order, keyed by the table's schema
    let file = std::env::temp_dir().join(format!("em-cli-rust-shop-{}.jsonl", std::process::id()));
    let o4 = serde_json::to_value(order("o4", 1_700_000_000_040, "c2", "paid"))?;
    std::fs::write(&file, format!("{o4}\n"))?;
    let out = run(&on(
        &["import", "--entity", "order", "--file", arg(&file)?],
        table,
        endpoint,
    ))?;
    assert_code(&out, 0);

    // query the sharded multi-attribute index: `status` is a partition attribute of its own
    let out = run(&on(
        &[
            "query",
            "--entity",
            "order",
            "--index",
            "byStatus",
            "--where",
            "status=paid",
            "--all",
        ],
        table,
        endpoint,
    ))?;
    assert_code(&out, 0);
    assert_eq!(
        field(&out, "orderId")?,
        ["o3", "o1", "o4"],
        "by creation time, every shard"
    );
    // the collection's index from the order's side: the order, then its lines
    let out = run(&on(
        &[
            "query",
            "--entity",
            "order",
            "--index",
            "byOrder",
            "--where",
            "orderId=o1",
            "--all",
        ],
        table,
        endpoint,
    ))?;
    assert_code(&out, 0);
    assert_eq!(field(&out, "orderId")?, ["o1"]);

    // scan: every record, the stamp left out
    let out = run(&on(&["scan", "--json"], table, endpoint))?;
    assert_code(&out, 0);
    assert_eq!(
        stdout_lines(&out)?.len(),
        2 + 4 + 2,
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // audit: every record where the table's shard schedule puts it
    let out = run(&on(&["audit", "--json"], table, endpoint))?;
    assert_code(&out, 0);

    // stream: every write, decoded by the table's schema
    let out = run(&on(&["stream", "--no-follow"], table, endpoint))?;
    assert_code(&out, 0);
    let changes = stdout_lines(&out)?;
    let entities: Vec<&str> = changes
        .iter()
        .map(|c| c["entity"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        entities,
        [
            "customer",
            "customer",
            "order",
            "order",
            "order",
            "orderLine",
            "orderLine",
            "order"
        ],
        "{changes:?}"
    );
    assert!(changes.iter().all(|c| c["kind"] == "INSERT"));

    // --config: the schema file of the same entities agrees with the table
    let schema_file = temp_json("rust-shop", "schema", &Shop::schema()?.to_json()?)?;
    let out = run(&[
        &on(&["get", "--entity", "order", "--id", "o1"], table, endpoint)[..],
        &["--config", arg(&schema_file)?],
    ]
    .concat())?;
    assert_code(&out, 0);

    // a configuration that differs is a finding naming each difference, and nothing is run
    let mut other = Shop::schema()?.to_json()?;
    other["entities"]["order"]["indexes"]["byStatus"]["sort"][0]["name"] = json!("updated");
    other["entities"]["order"]["propertyTranscodes"]["updated"] = json!("timestamp");
    let other_file = temp_json("rust-shop", "other", &other)?;
    let out = run(&[
        &on(&["get", "--entity", "order", "--id", "o1"], table, endpoint)[..],
        &["--config", arg(&other_file)?],
    ]
    .concat())?;
    assert_code(&out, 3);
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("in 2 place(s)")
            && stderr
                .contains(r#"entities.order.indexes.byStatus.sort.0.name: "created" ≠ "updated""#)
            && stderr
                .contains(r#"entities.order.propertyTranscodes.updated: (absent) ≠ "timestamp""#),
        "{stderr}"
    );
    // as JSON: the report on stdout
    let out = run(&[
        &on(&["scan", "--json"], table, endpoint)[..],
        &["--config", arg(&other_file)?],
    ]
    .concat())?;
    assert_code(&out, 3);
    let report = stdout_json(&out)?;
    assert_eq!(report["finding"], "schema");
    let paths: Vec<&str> = report["differences"]
        .as_array()
        .map(|d| d.iter().filter_map(|d| d["path"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        paths,
        [
            "entities.order.propertyTranscodes.updated",
            "entities.order.indexes.byStatus.sort.0.name"
        ]
    );

    // --key-profile that disagrees with the stamp: refused, never a warning
    let out = run(&[
        &on(
            &["get", "--entity", "customer", "--id", "c2"],
            table,
            endpoint,
        )[..],
        &["--key-profile", "npm-6.14"],
    ]
    .concat())?;
    assert_code(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("stamped with profile `native`")
            && stderr.contains("leave --key-profile out"),
        "{stderr}"
    );
    // and one that agrees is fine
    let out = run(&[
        &on(
            &["get", "--entity", "customer", "--id", "c2"],
            table,
            endpoint,
        )[..],
        &["--key-profile", "native"],
    ]
    .concat())?;
    assert_code(&out, 0);

    let out = run(&on(&["table", "delete"], table, endpoint))?;
    assert_code(&out, 0);
    Ok(())
}

/// A table whose stamp carries no schema (an older release's, or none) needs `--config`, and
/// says so.
#[test]
fn a_table_without_a_schema_in_its_stamp_asks_for_config() -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let table = format!("cli-rust-bare-{}", std::process::id());
    let definition = TableDefinition::from_schema(Shop::schema()?)?.with_stamp(None);
    let store = DynamoStore::new(client(&endpoint), table.as_str(), definition);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(store.create_table())?;
    let out = run(&on(&["scan"], &table, &endpoint))?;
    assert_code(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("does not describe itself: it has no stamp") && stderr.contains("--config"),
        "{stderr}"
    );
    // with the schema file, it works
    let schema_file = temp_json("rust-bare", "schema", &Shop::schema()?.to_json()?)?;
    let out = run(&[
        &on(&["scan"], &table, &endpoint)[..],
        &["--config", arg(&schema_file)?],
    ]
    .concat())?;
    assert_code(&out, 0);
    rt.block_on(store.delete_table())?;
    Ok(())
}
