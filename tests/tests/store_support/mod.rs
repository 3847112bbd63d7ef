//! Shared by the store tests: the fixture table, item helpers and the `DynamoDB` Local client.
//!
//! `DynamoDB` tests run when `DYNAMODB_ENDPOINT` is set (`.ci/dynamodb-local.sh` sets it). When
//! it is not set they skip with a printed reason, except under `CI=true`, where they fail.

#![allow(dead_code, unreachable_pub)]

use std::error::Error;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use entity_manager::model::Projection;
use entity_manager::store::{DynamoStore, GlobalIndex, KeyType, Store, TableDefinition};
use entity_manager::{AttributeValue, Item};

/// The result of a test.
pub type TestResult = Result<(), Box<dyn Error>>;

/// The table most store tests use: string table keys and three GSIs with the three
/// projections, one keyed by a number, one sparse.
pub fn definition() -> TableDefinition {
    TableDefinition::new(("hashKey", KeyType::S), ("rangeKey", KeyType::S))
        .with_index(
            GlobalIndex::new("byScore", ("group", KeyType::S), ("score", KeyType::N))
                .projection(Projection::Include(vec!["name".into()].into())),
        )
        .with_index(
            GlobalIndex::new("byName", ("group", KeyType::S), ("name", KeyType::S))
                .projection(Projection::KeysOnly),
        )
        .with_index(GlobalIndex::new(
            "byCreated",
            ("hashKey", KeyType::S),
            ("created", KeyType::N),
        ))
}

/// An item from JSON (numbers become `N`, strings `S`).
pub fn item(value: serde_json::Value) -> Result<Item, Box<dyn Error>> {
    Ok(serde_dynamo::to_item(value)?)
}

/// A string value.
pub fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

/// A number value.
#[allow(clippy::needless_pass_by_value)] // called with literals
pub fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// The table key of an item.
pub fn key(hash: &str, range: &str) -> Item {
    [
        ("hashKey".to_owned(), s(hash)),
        ("rangeKey".to_owned(), s(range)),
    ]
    .into_iter()
    .collect::<std::collections::HashMap<_, _>>()
    .into()
}

/// A table name no other test (or earlier run against the same server) uses.
pub fn unique_table(test: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "{test}-{}-{nanos}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Whether the endpoint is on this machine (tests never talk to anything else).
fn is_loopback(endpoint: &str) -> bool {
    let rest = endpoint
        .strip_prefix("http://")
        .or_else(|| endpoint.strip_prefix("https://"))
        .unwrap_or(endpoint);
    rest.starts_with("127.") || rest.starts_with("localhost") || rest.starts_with("[::1]")
}

/// A client for `DynamoDB` Local, or `None` (with the reason printed) when no endpoint is set
/// outside CI. Panics when `CI=true` and no endpoint is set, so CI cannot skip these tests.
pub fn dynamo_client() -> Option<aws_sdk_dynamodb::Client> {
    let Ok(endpoint) = std::env::var("DYNAMODB_ENDPOINT") else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but DYNAMODB_ENDPOINT is not set: the DynamoDB tests must run in CI; start DynamoDB Local with `source .ci/dynamodb-local.sh`"
        );
        eprintln!(
            "skipping the DynamoDB part of this test: DYNAMODB_ENDPOINT is not set (run `bash .ci/dynamodb-local.sh cargo test` to include it)"
        );
        return None;
    };
    assert!(
        is_loopback(&endpoint),
        "DYNAMODB_ENDPOINT={endpoint} is not a loopback address; tests only talk to DynamoDB Local on this machine"
    );
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("local", "local", None, None, "static"))
        .build();
    Some(aws_sdk_dynamodb::Client::from_conf(config))
}

/// The seed of a randomized test: `$var` if set (to replay a failure), else the clock;
/// printed, so that a failing run can be replayed.
pub fn seed(var: &str) -> u64 {
    let seed = std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(17, |d| d.as_secs())
        });
    eprintln!("seed {seed} (replay with {var}={seed})");
    seed
}

/// A client of the loopback endpoint `endpoint` (explicit region, dummy credentials).
pub fn client_at(endpoint: &str) -> aws_sdk_dynamodb::Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("local", "local", None, None, "static"))
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

/// A server on 127.0.0.1 that accepts connections, holds them open and never answers: its
/// endpoint, and the task to abort when done.
pub async fn silent_server() -> std::io::Result<(String, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let endpoint = format!("http://{}", listener.local_addr()?);
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    Ok((endpoint, held))
}

/// Runs `test` on a fresh `DynamoDB` Local table (deleted afterwards, whatever the outcome), or
/// does nothing when the `DynamoDB` tests are skipped.
pub async fn on_dynamodb<F, Fut>(
    name: &str,
    definition: TableDefinition,
    test: F,
) -> Result<(), Box<dyn Error>>
where
    F: FnOnce(DynamoStore) -> Fut,
    Fut: std::future::Future<Output = Result<(), Box<dyn Error>>>,
{
    let Some(store) = dynamo_store(name, definition).await? else {
        return Ok(());
    };
    let result = test(store.clone()).await;
    store.delete_table().await?;
    result
}

/// A fresh table on `DynamoDB` Local, or `None` when the `DynamoDB` tests are skipped.
pub async fn dynamo_store(
    test: &str,
    definition: TableDefinition,
) -> Result<Option<DynamoStore>, Box<dyn Error>> {
    let Some(client) = dynamo_client() else {
        return Ok(None);
    };
    let store = DynamoStore::new(client, unique_table(test), definition);
    store.create_table().await?;
    Ok(Some(store))
}

/// Every page of a query, following `last_evaluated_key` to the end.
pub async fn all_pages<S: Store>(
    store: &S,
    request: &entity_manager::store::QueryPage,
) -> Result<Vec<entity_manager::store::Page>, Box<dyn Error>> {
    let mut pages = Vec::new();
    let mut request = request.clone();
    loop {
        let page = store.query_page(&request).await?;
        let next = page.last_evaluated_key.clone();
        pages.push(page);
        match next {
            Some(k) => request = request.start_after(Some(k)),
            None => return Ok(pages),
        }
        if pages.len() > 10_000 {
            return Err("more than 10000 pages: pagination does not terminate".into());
        }
    }
}

/// A string attribute of an item, for messages and sorting.
pub fn text(item: &Item, attribute: &str) -> String {
    match item.get(attribute) {
        Some(AttributeValue::S(v) | AttributeValue::N(v)) => v.clone(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

/// Items in a canonical order (by table key), with sets sorted, for comparing unordered
/// results.
pub fn canonical(mut items: Vec<Item>) -> Vec<Item> {
    for item in &mut items {
        for v in item.values_mut() {
            sort_sets(v);
        }
    }
    items.sort_by_key(|i| (text(i, "hashKey"), text(i, "rangeKey")));
    items
}

fn sort_sets(v: &mut AttributeValue) {
    match v {
        AttributeValue::Ss(x) | AttributeValue::Ns(x) => x.sort(),
        AttributeValue::Bs(x) => x.sort(),
        AttributeValue::L(l) => l.iter_mut().for_each(sort_sets),
        AttributeValue::M(m) => m.values_mut().for_each(sort_sets),
        _ => {}
    }
}
