//! A chaos proxy for `DynamoStore` tests: a loopback HTTP proxy (hyper 1, the SDK's own HTTP
//! stack) between the AWS SDK and `DynamoDB` Local that, by a seeded plan, answers
//! `400 ProvisionedThroughputExceededException`/`ThrottlingException`, `500
//! InternalServerError`, `503`, a `TransactionConflict` cancellation of a transaction, a whole
//! `BatchWriteItem` left unprocessed, resets the connection, delays past the client's timeout,
//! cuts a response short, or passes the request through.
//!
//! Most faults happen before the request reaches `DynamoDB` Local, so a failed call wrote
//! nothing. The faults *after the fact* (production's hardest: issue 50) forward the request,
//! which `DynamoDB` Local applies, and then lose its answer: a cut response, a lost
//! acknowledgement (a `500`, a dropped connection or silence past the client's timeout), and
//! half of the hangs. Latency (a fixed delay plus a seeded jitter) slows every forwarded
//! request, so concurrent calls interleave. It binds 127.0.0.1 on a free port and stops when
//! dropped.

#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};

/// The faults, each a rate (0.0 to 1.0) of requests.
#[derive(Clone, Debug, Default)]
pub struct ChaosPlan {
    /// The seed.
    pub seed: u64,
    /// 400 `ProvisionedThroughputExceededException` (half) or `ThrottlingException`.
    pub throttle: f64,
    /// 500 `InternalServerError`.
    pub server_error: f64,
    /// 503 with no body.
    pub unavailable: f64,
    /// `TransactWriteItems` only: 400 `TransactionCanceledException`, reason
    /// `TransactionConflict`.
    pub transaction_conflict: f64,
    /// `BatchWriteItem` only: 200 with every request of the call in `UnprocessedItems`.
    pub unprocessed: f64,
    /// The connection is closed without an answer.
    pub reset: f64,
    /// No answer for `delay_by` (past the client's attempt timeout), then the connection is
    /// closed; the request is not forwarded.
    pub delay: f64,
    /// How long a delayed request waits.
    pub delay_by: Duration,
    /// The request is forwarded and applied, and its response cut short.
    pub cut: f64,
    /// The request is forwarded and applied, and its answer lost: the client sees a `500
    /// InternalServerError`, a dropped connection or no answer for `delay_by`
    /// ([`lost_as`](Self::lost_as)).
    pub lost_ack: f64,
    /// How a lost acknowledgement shows; `None`: a seeded choice among the three.
    pub lost_as: Option<LostAnswer>,
    /// No answer for `delay_by` (set it past the client's attempt timeout), then the connection
    /// is closed; half of the hanging requests (seeded) were forwarded and applied first.
    pub hang: f64,
    /// Every forwarded request waits this long first ...
    pub latency: Duration,
    /// ... plus a seeded share of this.
    pub jitter: Duration,
    /// Faults only calls whose `X-Amz-Target` ends with one of these (e.g. `"UpdateItem"`);
    /// every call when empty. Latency slows every call.
    pub only: &'static [&'static str],
    /// Injects at most this many faults, then passes every request through (`None`: no
    /// bound): with a rate of 1.0, exactly the first requests are faulted.
    pub max_faults: Option<u64>,
    /// The faults of the first requests of the calls `only` names, in order (`Fault::Pass`
    /// for one passed through); the requests after them are drawn from the rates. A sequence
    /// such as "applied and its answer lost, then throttled" forces one interleaving of a
    /// call's attempts, whatever the seed.
    pub script: &'static [Fault],
    /// What a [`Fault::Held`] request waits for before it is forwarded (not set: it is not
    /// held).
    pub release: Option<Arc<tokio::sync::Notify>>,
}

/// How the answer of a request that was applied is lost ([`ChaosPlan::lost_ack`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LostAnswer {
    /// `500 InternalServerError`.
    ServerError,
    /// The connection is closed without an answer.
    Dropped,
    /// No answer for `ChaosPlan::delay_by`, then the connection is closed.
    Silence,
}

/// How many of each fault the proxy injected.
#[derive(Debug, Default)]
pub struct ChaosCounts {
    pub requests: AtomicU64,
    /// Requests of the call `ChaosPlan::only` names (all requests when it names none).
    pub targeted: AtomicU64,
    pub throttled: AtomicU64,
    pub server_errors: AtomicU64,
    pub unavailable: AtomicU64,
    pub conflicts: AtomicU64,
    pub unprocessed: AtomicU64,
    pub resets: AtomicU64,
    pub delayed: AtomicU64,
    pub cut: AtomicU64,
    /// Requests applied whose answer was lost.
    pub lost_acks: AtomicU64,
    /// Faults drawn (the bound of `max_faults` counts them).
    pub injected: AtomicU64,
    /// Requests that hung (applied or not).
    pub hangs: AtomicU64,
    /// Hanging requests that were applied first.
    pub hangs_applied: AtomicU64,
}

impl ChaosCounts {
    /// Faults injected in all.
    pub fn faults(&self) -> u64 {
        [
            &self.throttled,
            &self.server_errors,
            &self.unavailable,
            &self.conflicts,
            &self.unprocessed,
            &self.resets,
            &self.delayed,
            &self.cut,
            &self.lost_acks,
            &self.hangs,
        ]
        .iter()
        .map(|c| c.load(Ordering::SeqCst))
        .sum()
    }
}

/// A running proxy; stops when dropped.
pub struct ChaosProxy {
    /// `http://127.0.0.1:<port>`: the endpoint to give the SDK.
    pub endpoint: String,
    /// What it injected.
    pub counts: Arc<ChaosCounts>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ChaosProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// splitmix64.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// What the proxy does with one request ([`ChaosPlan::script`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Forwarded, and its answer passed on.
    Pass,
    Throttle,
    ServerError,
    Unavailable,
    Conflict,
    Unprocessed,
    Reset,
    Delay,
    Cut,
    LostAck(LostAnswer),
    /// Whether the request is forwarded (and applied) before it hangs.
    Hang(bool),
    /// Held until [`ChaosPlan::release`] is notified, then forwarded and answered: the test
    /// decides what happens before it reaches the table.
    Held,
}

/// A uniform draw in [0, 1) from `x`.
#[allow(clippy::cast_precision_loss)]
fn unit(x: u64) -> f64 {
    (mix(x) >> 11) as f64 / (1u64 << 53) as f64
}

impl ChaosPlan {
    /// Whether the plan faults call `target`.
    fn targets(&self, target: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|only| target.ends_with(only))
    }

    /// The fault of request `n`, counting it among the targeted requests and the faults (up to
    /// `max_faults`).
    fn fault_counted(&self, n: u64, target: &str, counts: &ChaosCounts) -> Fault {
        if self.targets(target) {
            let at = counts.targeted.fetch_add(1, Ordering::SeqCst);
            if let Some(scripted) = usize::try_from(at).ok().and_then(|i| self.script.get(i)) {
                return *scripted;
            }
        }
        let fault = self.fault(n, target);
        if fault != Fault::Pass
            && let Some(max) = self.max_faults
            && counts.injected.fetch_add(1, Ordering::SeqCst) >= max
        {
            return Fault::Pass;
        }
        fault
    }

    /// The latency of request `n`.
    fn latency(&self, n: u64) -> Duration {
        self.latency + self.jitter.mul_f64(unit(self.seed ^ mix(n ^ 0x1a7e)))
    }

    /// The fault of request number `n` of call `target` (the `X-Amz-Target` operation).
    fn fault(&self, n: u64, target: &str) -> Fault {
        if !self.targets(target) {
            return Fault::Pass;
        }
        let draw = unit(self.seed ^ mix(n));
        // a second draw, for how a fault shows
        let how = mix(self.seed ^ mix(n) ^ 0x5eed);
        let lost = self.lost_as.unwrap_or(match how % 3 {
            0 => LostAnswer::ServerError,
            1 => LostAnswer::Dropped,
            _ => LostAnswer::Silence,
        });
        let mut at = 0.0;
        let mut table = vec![
            (self.throttle, Fault::Throttle),
            (self.server_error, Fault::ServerError),
            (self.unavailable, Fault::Unavailable),
            (self.reset, Fault::Reset),
            (self.delay, Fault::Delay),
            (self.cut, Fault::Cut),
            (self.lost_ack, Fault::LostAck(lost)),
            (self.hang, Fault::Hang(how & 8 == 0)),
        ];
        if target.ends_with("TransactWriteItems") {
            table.push((self.transaction_conflict, Fault::Conflict));
        }
        if target.ends_with("BatchWriteItem") {
            table.push((self.unprocessed, Fault::Unprocessed));
        }
        for (rate, fault) in table {
            at += rate;
            if draw < at {
                return fault;
            }
        }
        Fault::Pass
    }
}

fn json_error(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static("application/x-amz-json-1.0"),
    );
    response
}

fn error_body(kind: &str, message: &str) -> String {
    serde_json::json!({ "__type": format!("com.amazonaws.dynamodb.v20120810#{kind}"), "message": message })
        .to_string()
}

/// A `TransactionConflict` cancellation of the transaction `body` (one reason per item).
fn conflict(body: &Bytes) -> Response<Full<Bytes>> {
    let requests: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let items = requests["TransactItems"].as_array().map_or(1, Vec::len);
    let reasons: Vec<serde_json::Value> = (0..items)
        .map(|i| {
            if i == 0 {
                serde_json::json!({ "Code": "TransactionConflict", "Message": "Transaction is ongoing for the item (chaos proxy)" })
            } else {
                serde_json::json!({ "Code": "None" })
            }
        })
        .collect();
    let body = serde_json::json!({
        "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
        "message": "Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict] (chaos proxy)",
        "CancellationReasons": reasons,
    });
    json_error(StatusCode::BAD_REQUEST, body.to_string())
}

struct Shared {
    plan: ChaosPlan,
    upstream: String,
    client: Client<HttpConnector, Full<Bytes>>,
    counts: Arc<ChaosCounts>,
}

type Reply = Result<Response<Full<Bytes>>, std::io::Error>;

fn broken(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

async fn handle(shared: Arc<Shared>, request: Request<Incoming>) -> Reply {
    let n = shared.counts.requests.fetch_add(1, Ordering::SeqCst);
    let target = request
        .headers()
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let counts = &shared.counts;
    let fault = shared.plan.fault_counted(n, &target, &shared.counts);
    let bump = |c: &AtomicU64| {
        c.fetch_add(1, Ordering::SeqCst);
    };
    let (parts, body) = request.into_parts();
    let body = body.collect().await.map_err(broken)?.to_bytes();
    match fault {
        Fault::Throttle => {
            bump(&counts.throttled);
            let kind = if n.is_multiple_of(2) {
                "ProvisionedThroughputExceededException"
            } else {
                "ThrottlingException"
            };
            return Ok(json_error(
                StatusCode::BAD_REQUEST,
                error_body(kind, "Rate exceeded (chaos proxy)"),
            ));
        }
        Fault::ServerError => {
            bump(&counts.server_errors);
            return Ok(json_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                error_body("InternalServerError", "Internal server error (chaos proxy)"),
            ));
        }
        Fault::Unavailable => {
            bump(&counts.unavailable);
            return Ok(json_error(StatusCode::SERVICE_UNAVAILABLE, String::new()));
        }
        Fault::Conflict => {
            bump(&counts.conflicts);
            return Ok(conflict(&body));
        }
        Fault::Unprocessed => {
            bump(&counts.unprocessed);
            let requests: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let body = serde_json::json!({ "UnprocessedItems": requests["RequestItems"] });
            return Ok(json_error(StatusCode::OK, body.to_string()));
        }
        Fault::Reset => {
            bump(&counts.resets);
            return Err(broken("connection reset by the chaos proxy"));
        }
        Fault::Delay => {
            bump(&counts.delayed);
            tokio::time::sleep(shared.plan.delay_by).await;
            return Err(broken("no answer from the chaos proxy"));
        }
        Fault::Hang(false) => {
            bump(&counts.hangs);
            tokio::time::sleep(shared.plan.delay_by).await;
            return Err(broken("no answer from the chaos proxy (hung)"));
        }
        Fault::Held => {
            if let Some(release) = &shared.plan.release {
                release.notified().await;
            }
        }
        Fault::Pass | Fault::Cut | Fault::LostAck(_) | Fault::Hang(true) => {}
    }
    let latency = shared.plan.latency(n);
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    // forward to DynamoDB Local
    let uri = format!(
        "{}{}",
        shared.upstream,
        parts.uri.path_and_query().map_or("/", |p| p.as_str())
    );
    let mut forward = Request::builder().method(parts.method).uri(uri);
    for (name, value) in &parts.headers {
        forward = forward.header(name, value);
    }
    let forward = forward.body(Full::new(body)).map_err(broken)?;
    let response = shared.client.request(forward).await.map_err(broken)?;
    let (parts, body) = response.into_parts();
    let body = body.collect().await.map_err(broken)?.to_bytes();
    answer(&shared, fault, parts, body).await
}

/// The answer to a request forwarded and applied (`parts`, `body` from `DynamoDB` Local) under
/// `fault`: passed on, cut short, or lost.
async fn answer(
    shared: &Shared,
    fault: Fault,
    parts: hyper::http::response::Parts,
    body: Bytes,
) -> Reply {
    let counts = &shared.counts;
    let bump = |c: &AtomicU64| {
        c.fetch_add(1, Ordering::SeqCst);
    };
    match fault {
        Fault::LostAck(how) => {
            bump(&counts.lost_acks);
            return match how {
                LostAnswer::ServerError => Ok(json_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    error_body(
                        "InternalServerError",
                        "Internal server error after the write (chaos proxy)",
                    ),
                )),
                LostAnswer::Dropped => Err(broken("connection dropped after the write")),
                LostAnswer::Silence => {
                    tokio::time::sleep(shared.plan.delay_by).await;
                    Err(broken("no answer after the write"))
                }
            };
        }
        Fault::Hang(true) => {
            bump(&counts.hangs);
            bump(&counts.hangs_applied);
            tokio::time::sleep(shared.plan.delay_by).await;
            return Err(broken(
                "no answer from the chaos proxy (hung after the write)",
            ));
        }
        _ => {}
    }
    if fault == Fault::Cut {
        bump(&counts.cut);
        // the full length announced, half the bytes sent: the client sees a broken answer
        let mut response = Response::from_parts(parts, Full::new(body.slice(..body.len() / 2)));
        response.headers_mut().insert(
            "content-length",
            hyper::header::HeaderValue::from(body.len()),
        );
        return Ok(response);
    }
    Ok(Response::from_parts(parts, Full::new(body)))
}

impl ChaosProxy {
    /// A client of the proxy (loopback, explicit region, dummy credentials) that the SDK
    /// retries in its standard mode, up to `attempts` attempts from `backoff`.
    pub fn client(
        &self,
        attempts: u32,
        backoff: Duration,
    ) -> entity_manager::store::aws_sdk_dynamodb::Client {
        use entity_manager::store::aws_sdk_dynamodb::config::retry::RetryConfig;
        let client = super::store_support::client_at(&self.endpoint);
        let config = client
            .config()
            .to_builder()
            .retry_config(
                RetryConfig::standard()
                    .with_max_attempts(attempts)
                    .with_initial_backoff(backoff),
            )
            .build();
        entity_manager::store::aws_sdk_dynamodb::Client::from_conf(config)
    }

    /// A store of `direct`'s table through the proxy, whose client the SDK retries in its
    /// standard mode, 3 attempts from a 10 ms backoff.
    pub fn store_of(
        &self,
        direct: &entity_manager::store::DynamoStore,
    ) -> entity_manager::store::DynamoStore {
        use entity_manager::store::Store as _;
        entity_manager::store::DynamoStore::new(
            self.client(3, Duration::from_millis(10)),
            direct.table_name(),
            direct.definition().clone(),
        )
    }

    /// Starts a proxy on 127.0.0.1 (a free port) in front of `upstream` (a loopback endpoint).
    pub async fn start(upstream: &str, plan: ChaosPlan) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let endpoint = format!("http://{}", listener.local_addr()?);
        let counts = Arc::new(ChaosCounts::default());
        let shared = Arc::new(Shared {
            plan,
            upstream: upstream.trim_end_matches('/').to_owned(),
            client: Client::builder(TokioExecutor::new()).build_http(),
            counts: counts.clone(),
        });
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let shared = shared.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let shared = shared.clone();
                        async move { handle(shared, request).await }
                    });
                    // a connection ends with an error when a fault resets it: expected
                    let _closed = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Self {
            endpoint,
            counts,
            task,
        })
    }
}
