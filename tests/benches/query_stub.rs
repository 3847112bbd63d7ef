//! Client CPU of one page of a single-lane typed query on `DynamoStore`, against a hand-written
//! `aws-sdk-dynamodb` `Query` + `serde_dynamo` decode of the same page (issue 27, point 4).
//!
//! ```text
//! cargo bench -p entity-manager-tests --bench query_stub
//! ```
//!
//! - The store: a loopback HTTP stub (hyper 1, on its own thread and runtime) that answers every
//!   request at once with the same recorded `Query` response: the first 25 users of the
//!   README's `User` entity on its `created` index, all created before the shard bump (hash key
//!   `user!`, one shard), with a `LastEvaluatedKey` as `DynamoDB` sends when more items follow.
//! - Ours: `User::query(&store)?.index(UserIndex::Created).created_between(0,
//!   1_699_999_999_999).limit(25).page(None)` on a `DynamoStore` at the stub: the window holds
//!   one lane, so the page must be one request (checked: the stub counts the requests).
//! - Baseline: `client.query()` with the same table, index, key condition and `Limit`, then
//!   `serde_dynamo::from_items::<User>`: what a user writes by hand for the same page.
//! - Both run on the bench's thread (a current-thread tokio runtime: the SDK's connection work
//!   runs there too), in alternating rounds; the CPU of the thread is read from
//!   `/proc/thread-self/schedstat` (nanoseconds on the CPU) before and after each round, so the
//!   stub's own work is not counted. The figures are the median round's CPU per page, the
//!   least disturbed round's, and the median of each round's ratio to the hand-written round
//!   run beside it (the machine may be shared).
//!
//! Under `cargo test --benches` (no `--bench` argument) one short round of each runs, with the
//! checks (decoded pages equal, one request per page). `STUB_ONLY=ours|alone|hand` runs one
//! client only, for a profiler (`perf record`); `STUB_PAGES=n` makes its rounds n pages long.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use aws_sdk_dynamodb::types::AttributeValue as Wire;
use bytes::Bytes;
use entity_manager::store::{DynamoStore, TableDefinition};
use entity_manager::{AttributeValue, Entity, EntityExt, Table};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

#[path = "support/stub.rs"]
mod stub_support;
use stub_support::{client, item_json, median};

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Items of the page (the README's example page size).
const PAGE: usize = 25;
/// Pages per round, and rounds (alternating ours and the baseline).
const PAGES: usize = 100;
const ROUNDS: usize = 25;
/// The table's name.
const TABLE: &str = "Users";
/// The end of the window: the last millisecond before the README's shard bump.
const BEFORE_BUMP: u64 = 1_699_999_999_999;

#[derive(Table)]
#[table(entities(User))]
struct Users;

/// The README's `User`.
#[allow(clippy::struct_field_names)] // the README's fields
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Users, unique = user_id, timestamp = created, version = version)]
#[shard_bumps(bumps = [bump(timestamp = 1_700_000_000_000, char_bits = 2, chars = 1)])]
#[generated(name = name_range_key, components = [last_name, first_name])]
#[index(name = "created", range = created)]
#[index(name = "lastName", range = name_range_key)]
#[index(name = "phone", range = phone)]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    first_name: String,
    #[transcode("string")]
    last_name: String,
    #[transcode("string")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    phone: Option<String>,
    logins: u64,
    version: u64,
}

/// Users of the recorded index (more than a page).
const USERS: usize = 4 * PAGE;

/// The first `USERS` users of the `created` index, in its order.
fn users() -> Vec<User> {
    (0..USERS as u64)
        .map(|i| User {
            user_id: format!("user-{i:04}"),
            created: 1_600_000_000_000 + i * 60_000,
            first_name: ["ann", "bob", "cy", "di", "ed"][(i % 5) as usize].to_owned(),
            last_name: format!("lee{}", i % 7),
            phone: (i % 3 == 0).then(|| format!("555-{i:04}")),
            logins: i * 3,
            version: 1,
        })
        .collect()
}

/// The recorded responses: for a request's `Limit` n, the first n items of the index and, when
/// more follow, the last one's table and index keys as the `LastEvaluatedKey`, as `DynamoDB`
/// answers. Index i holds the answer to `Limit` i (0: no limit).
fn responses(users: &[User]) -> BenchResult<Vec<Bytes>> {
    let items: Vec<Value> = users
        .iter()
        .map(|u| Ok(item_json(&u.to_item()?)?))
        .collect::<BenchResult<_>>()?;
    (0..=items.len())
        .map(|limit| {
            let n = if limit == 0 { items.len() } else { limit };
            let mut body = json!({ "Items": items[..n], "Count": n, "ScannedCount": n });
            if n < items.len() {
                let last = &items[n - 1];
                let key: Map<String, Value> = ["hashKey", "rangeKey", "created"]
                    .iter()
                    .filter_map(|name| Some(((*name).to_owned(), last.get(*name)?.clone())))
                    .collect();
                body["LastEvaluatedKey"] = Value::Object(key);
            }
            Ok(Bytes::from(serde_json::to_vec(&body)?))
        })
        .collect()
}

/// Whether a request's JSON body is a `Query`'s.
fn is_query(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body).is_ok_and(|v| v.get("KeyConditionExpression").is_some())
}

/// The `Limit` of a `Query` request's JSON body (0 when it has none or cannot be read).
fn limit_of(body: &[u8]) -> usize {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("Limit")?.as_u64())
        .and_then(|l| usize::try_from(l).ok())
        .unwrap_or(0)
}

/// Starts the stub on its own thread: its endpoint and its request counter.
fn stub(responses: Vec<Bytes>) -> BenchResult<(String, Arc<AtomicUsize>, Arc<AtomicUsize>)> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let endpoint = format!("http://{}", listener.local_addr()?);
    let requests = Arc::new(AtomicUsize::new(0));
    let limit = Arc::new(AtomicUsize::new(0));
    let (counted, last_limit) = (requests.clone(), limit.clone());
    let responses = Arc::new(responses);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    std::thread::spawn(move || {
        runtime.block_on(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            while let Ok((stream, _)) = listener.accept().await {
                let (responses, counted) = (responses.clone(), counted.clone());
                let last_limit = last_limit.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                        let (responses, last_limit) = (responses.clone(), last_limit.clone());
                        let counted = counted.clone();
                        async move {
                            let body = request.into_body().collect().await?.to_bytes();
                            let limit = limit_of(&body);
                            if is_query(&body) {
                                counted.fetch_add(1, Ordering::Relaxed);
                            }
                            last_limit.store(limit, Ordering::Relaxed);
                            // the table stamp's `GetItem` (once per store): no stamp
                            let body = if is_query(&body) {
                                responses.get(limit).or(responses.first()).cloned()
                            } else {
                                Some(Bytes::from_static(b"{}"))
                            };
                            let response = Response::builder()
                                .header("content-type", "application/x-amz-json-1.0")
                                .body(Full::new(body.unwrap_or_default()));
                            Ok::<_, hyper::Error>(response.unwrap_or_else(|_| {
                                Response::new(Full::new(Bytes::from_static(b"{}")))
                            }))
                        }
                    });
                    let _closed = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
    });
    Ok((endpoint, requests, limit))
}

/// One page through the library.
async fn ours(store: &DynamoStore) -> BenchResult<Vec<User>> {
    let page = User::query(store)?
        .index(UserIndex::Created)
        .created_between(0, BEFORE_BUMP)
        .limit(PAGE)
        .page(None)
        .await?;
    Ok(page.items)
}

/// The same request through the store alone, decoded as by hand.
async fn store_alone(store: &DynamoStore) -> BenchResult<Vec<User>> {
    use entity_manager::store::{QueryPage, RangeCondition, Store as _};
    let request = QueryPage::new(AttributeValue::S("user!".into()))
        .index("created")
        .range(RangeCondition::Between(
            AttributeValue::N("0".into()),
            AttributeValue::N(BEFORE_BUMP.to_string()),
        ))
        .limit(u32::try_from(PAGE)?);
    let page = store.query_page(&request).await?;
    page.items
        .into_iter()
        .map(|i| Ok(serde_dynamo::from_item(i)?))
        .collect()
}

/// The same page by hand.
async fn by_hand(client: &aws_sdk_dynamodb::Client) -> BenchResult<Vec<User>> {
    let output = client
        .query()
        .table_name(TABLE)
        .index_name("created")
        .key_condition_expression("#h = :h AND #r BETWEEN :from AND :to")
        .expression_attribute_names("#h", "hashKey")
        .expression_attribute_names("#r", "created")
        .expression_attribute_values(":h", Wire::S("user!".into()))
        .expression_attribute_values(":from", Wire::N("0".into()))
        .expression_attribute_values(":to", Wire::N(BEFORE_BUMP.to_string()))
        .limit(i32::try_from(PAGE)?)
        .send()
        .await?;
    Ok(serde_dynamo::from_items(output.items.unwrap_or_default())?)
}

/// Nanoseconds this thread has run on a CPU, or `None` where the kernel does not say.
fn thread_cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// CPU ns of `pages` pages through `page` (wall time where the thread's CPU is not known).
async fn round<F, P>(pages: usize, mut page: F) -> BenchResult<f64>
where
    F: FnMut() -> P,
    P: Future<Output = BenchResult<Vec<User>>>,
{
    let (cpu, wall) = (thread_cpu_ns(), Instant::now());
    for _ in 0..pages {
        std::hint::black_box(page().await?);
    }
    #[allow(clippy::cast_precision_loss)] // nanoseconds of a round, far below 2^52
    let spent = match (cpu, thread_cpu_ns()) {
        (Some(a), Some(b)) => b.saturating_sub(a) as f64,
        _ => wall.elapsed().as_nanos() as f64,
    };
    #[allow(clippy::cast_precision_loss)]
    Ok(spent / pages as f64)
}

/// `STUB_PAGES=n`: rounds of n pages instead of `pages` (a diagnostic: fewer pages under
/// `valgrind`).
fn stub_pages(pages: usize) -> usize {
    std::env::var("STUB_PAGES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(pages)
}

/// The table of `rounds` (CPU per page of each round: ours, the hand-written query, the store
/// alone, the hand-written query on the store's client), `limit` the `Limit` our page sent.
fn report(rounds: [Vec<f64>; 4], limit: usize) {
    let [lib, base, alone, timed] = rounds;
    let best = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let (lib_best, base_best, alone_best) = (best(&lib), best(&base), best(&alone));
    let timed_best = best(&timed);
    // each round's ratio to the hand-written round run beside it: the drift of a shared
    // machine between rounds cancels out
    let paired = |v: &[f64]| median(v.iter().zip(&base).map(|(x, b)| x / b).collect());
    let (lib_paired, alone_paired, timed_paired) = (paired(&lib), paired(&alone), paired(&timed));
    let (lib, base, alone, timed) = (median(lib), median(base), median(alone), median(timed));
    println!(
        "\nOne page of {PAGE} users, one lane, a loopback stub answering at once ({ROUNDS} rounds of {PAGES} pages, median round, CPU of the client thread):\n"
    );
    println!(
        "| client | µs CPU / page, median round | ÷ hand-written | µs, least disturbed round | ÷ hand-written | ÷ the hand-written round beside it (median) |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (label, median, best, paired) in [
        (
            "hand-written aws-sdk Query + serde_dynamo".to_owned(),
            base,
            base_best,
            1.0,
        ),
        (
            "the same, on the store's client (its 30 s / 10 s time limits)".to_owned(),
            timed,
            timed_best,
            timed_paired,
        ),
        (
            "`DynamoStore::query_page` + `serde_dynamo` decode (the store alone)".to_owned(),
            alone,
            alone_best,
            alone_paired,
        ),
        (
            format!("`User::query` … `.page(None)` (`Limit` {limit})"),
            lib,
            lib_best,
            lib_paired,
        ),
    ] {
        println!(
            "| {label} | {:.1} | {:.2}× | {:.1} | {:.2}× | {paired:.2}× |",
            median / 1e3,
            median / base,
            best / 1e3,
            best / base_best
        );
    }
}

fn main() -> BenchResult<()> {
    let measuring = std::env::args().any(|a| a == "--bench");
    let users = users();
    let expected = &users[..PAGE];
    let (endpoint, requests, limit) = stub(responses(&users)?)?;
    let client = client(&endpoint);
    let store = DynamoStore::new(
        client.clone(),
        TABLE,
        TableDefinition::from_schema(Users::schema()?)?,
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        // the checks: the same records, and one `Query` request for our page (the store reads
        // the table's stamp once, before its first query)
        let before = requests.load(Ordering::Relaxed);
        let page = ours(&store).await?;
        let sent = requests.load(Ordering::Relaxed) - before;
        if page != expected {
            return Err("our page differs from the recorded one".into());
        }
        let ours_limit = limit.load(Ordering::Relaxed);
        if sent != 1 {
            return Err(
                format!("our page took {sent} requests, not 1 (last Limit {ours_limit})").into(),
            );
        }
        if by_hand(&client).await? != expected {
            return Err("the baseline's page differs from the recorded one".into());
        }
        let (pages, rounds) = if measuring { (PAGES, ROUNDS) } else { (5, 1) };
        let pages = stub_pages(pages);
        let (mut lib, mut base, mut alone) = (Vec::new(), Vec::new(), Vec::new());
        // the hand-written query on the store's own client: the same SDK configuration, with
        // the time limits `DynamoStore::new` gives every call (nothing hangs)
        let bounded = store.client().clone();
        let mut timed = Vec::new();
        if let Ok(only) = std::env::var("STUB_ONLY") {
            // diagnostic: one client only, for a profiler
            for _ in 0..rounds * 4 {
                match only.as_str() {
                    "ours" => round(pages, || ours(&store)).await?,
                    "alone" => round(pages, || store_alone(&store)).await?,
                    _ => round(pages, || by_hand(&client)).await?,
                };
            }
            return Ok(());
        }
        for _ in 0..rounds {
            let before = requests.load(Ordering::Relaxed);
            lib.push(round(pages, || ours(&store)).await?);
            let sent = requests.load(Ordering::Relaxed) - before;
            if sent != pages {
                return Err(format!("{pages} of our pages took {sent} requests").into());
            }
            base.push(round(pages, || by_hand(&client)).await?);
            alone.push(round(pages, || store_alone(&store)).await?);
            timed.push(round(pages, || by_hand(&bounded)).await?);
        }
        if measuring {
            report([lib, base, alone, timed], ours_limit);
        }
        Ok(())
    })
}
