//! `console`: a local web page on a table — its design, its queries, its shards — served from
//! the binary (HTML from `maud`, charts drawn as SVG here, one small script; nothing from the
//! network).
//!
//! Security: it listens on loopback unless `--listen` names another address (a warning is
//! printed), refuses a request whose `Host` is not the address it listens on (a page of another
//! site that resolves its own name to 127.0.0.1 — DNS rebinding — is refused), and is
//! read-only unless started with `--write`: then a record of the query view's results can be
//! deleted, after a confirmation page ([`write`]). Every form that is not a plain read
//! (starting and stopping a whole-table scan, deleting a record) carries a token of this run,
//! checked before anything else.
//!
//! Each view is a module: [`design`], [`query`], [`shards`], [`jobs`], [`changes`]; [`write`]
//! is the delete pages. What is not about the web — the
//! schema, the query engine, the scan, the table's description and the messages of failures —
//! is the library's and the other commands' code, called from here.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use clap::Args;
use entity_manager::Schema;
use entity_manager::store::DynamoStore;

use crate::{ConfigArgs, Connection, Failure, connect, runtime};

mod changes;
mod design;
mod jobs;
mod page;
mod query;
mod shards;
mod svg;
mod watch;
mod write;

/// `entity-manager console`.
#[derive(Debug, Args)]
pub(crate) struct ConsoleArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// The table name.
    #[arg(long)]
    table: String,
    #[command(flatten)]
    connection: Connection,
    /// The address to listen on (port 0: the system picks a free one). Another address than
    /// loopback makes the table readable by anyone who reaches it: a warning is printed.
    #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR")]
    listen: SocketAddr,
    /// Records read for the design view's sample (the first of a scan).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=10_000), value_name = "N")]
    sample: u32,
    /// The journals of a bulk job to follow in the jobs view: a directory its workers write
    /// their `--checkpoint` journals to, or the files (repeatable); merged as `report merge`.
    #[arg(long = "journals", value_name = "DIR|FILE")]
    journals: Vec<std::path::PathBuf>,
    /// Allow deleting records from the query view's results (each after a confirmation page).
    /// Off by default: the console is read-only.
    #[arg(long)]
    write: bool,
}

/// What every view reads: the table, its schema and store (or what failed while opening
/// them), the hosts a request may name, and the whole-table scan in progress.
pub(crate) struct State {
    table: String,
    opened: Result<Opened, String>,
    hosts: Vec<String>,
    /// The address listened on.
    listen: SocketAddr,
    sample: u32,
    /// `--journals`.
    journals: Vec<std::path::PathBuf>,
    /// The token of this run that a form that is not a plain read must carry.
    token: String,
    /// `--write`: records may be deleted.
    write: bool,
    scan: Mutex<shards::ScanJob>,
    tail: Mutex<changes::Tail>,
}

/// The table opened: its schema and store, and the client of its stream.
pub(crate) struct Opened {
    schema: Schema,
    store: DynamoStore,
    streams: aws_sdk_dynamodbstreams::Client,
    /// Where the stream is read, as a message names it.
    streams_at: String,
}

impl State {
    /// The schema and store, or the page that says what failed.
    fn opened(&self) -> Result<&Opened, Unavailable> {
        self.opened
            .as_ref()
            .map_err(|message| Unavailable(Box::new(page::unavailable(&self.table, message))))
    }
}

/// The page of a view when the table could not be opened ([`page::unavailable`]).
pub(super) struct Unavailable(Box<Response>);

impl IntoResponse for Unavailable {
    fn into_response(self) -> Response {
        *self.0
    }
}

/// The fields of a request's query string or form, in order.
#[derive(serde::Deserialize)]
#[serde(transparent)]
pub(super) struct Params(Vec<(String, String)>);

impl Params {
    /// The first value of field `name` (empty when absent).
    pub(super) fn get(&self, name: &str) -> &str {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// The hosts a request may name: the address listened on, and `localhost` for loopback.
fn allowed_hosts(address: SocketAddr) -> Vec<String> {
    let port = address.port();
    let mut hosts = vec![address.to_string()];
    if address.ip().is_loopback() || address.ip().is_unspecified() {
        hosts.push(format!("localhost:{port}"));
    }
    hosts
}

/// Whether a request naming `host` is one for this console: a host it answers for, or — when
/// it listens on every interface (`--listen 0.0.0.0:…`) — any IP address with its port (a
/// rebound DNS name is never an IP address).
fn host_allowed(state: &State, host: &str) -> bool {
    if state.hosts.iter().any(|h| h == host) {
        return true;
    }
    state.listen.ip().is_unspecified()
        && host
            .parse::<SocketAddr>()
            .is_ok_and(|a| a.port() == state.listen.port())
}

/// Refuses (421) a request whose `Host` is not one the console listens on.
async fn check_host(
    axum::extract::State(state): axum::extract::State<Arc<State>>,
    request: Request,
    next: Next,
) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if !host_allowed(&state, &host) {
        return (
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "refused: this console answers requests for {} only, not for host `{host}` (a page of another site may not read it)\n",
                state.hosts.join(" or ")
            ),
        )
            .into_response();
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'",
        ),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// A token for this run's forms: not guessable by another page (the standard library's
/// randomly keyed hasher, fed with the time and the process id).
fn run_token() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut token = String::new();
    for round in 0..2u64 {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(round);
        hasher.write_u32(std::process::id());
        if let Ok(now) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            hasher.write_u128(now.as_nanos());
        }
        let _ = write!(token, "{:016x}", hasher.finish());
    }
    token
}

fn router(state: Arc<State>) -> Router {
    Router::new()
        .route("/", get(design::view))
        .route("/query", get(query::view))
        .route("/shards", get(shards::view))
        .route("/shards", post(shards::act))
        .route("/delete", get(write::confirm))
        .route("/delete", post(write::delete))
        .route("/jobs", get(jobs::view))
        .route("/changes", get(changes::view))
        .route("/console.css", get(page::css))
        .route("/console.js", get(page::js))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            check_host,
        ))
        .with_state(state)
}

pub(crate) fn console(args: &ConsoleArgs) -> Result<(), Failure> {
    let rt = runtime()?;
    let listener = rt
        .block_on(tokio::net::TcpListener::bind(args.listen))
        .map_err(|e| Failure::Input(format!("cannot listen on {}: {e}", args.listen)))?;
    let address = listener
        .local_addr()
        .map_err(|e| Failure::Operation(format!("cannot read the address listened on: {e}")))?;
    if !address.ip().is_loopback() {
        say!(
            "warning: the console listens on {address}{}: anyone who reaches it can read table {} (listen on 127.0.0.1 unless you mean it)",
            if address.ip().is_unspecified() {
                " (every interface)"
            } else {
                ""
            },
            args.table
        );
    }
    // the first line: where to point the browser (tests read it)
    outln!("http://{address}/");
    let opened = args
        .config
        .resolve(&args.table, &args.connection)
        .and_then(|schema| {
            let store = connect(&schema, &args.table, &args.connection)?;
            let (streams, streams_at) = args.connection.resolve()?.streams_client(None);
            Ok(Opened {
                schema,
                store,
                streams,
                streams_at,
            })
        })
        .map_err(|failure| failure.message());
    if let Err(message) = &opened {
        say!("error: {message} (the console shows it on every page)");
    }
    let state = Arc::new(State {
        table: args.table.clone(),
        opened,
        hosts: allowed_hosts(address),
        listen: address,
        sample: args.sample,
        journals: args.journals.clone(),
        token: run_token(),
        write: args.write,
        scan: Mutex::new(shards::ScanJob::default()),
        tail: Mutex::new(changes::Tail::default()),
    });
    say!(
        "console of table {} on http://{address}/ (Ctrl-C stops it)",
        args.table
    );
    rt.block_on(async move { axum::serve(listener, router(state)).await })
        .map_err(|e| Failure::Operation(format!("the console's server stopped: {e}")))
}

#[cfg(test)]
mod tests {
    use super::allowed_hosts;

    #[test]
    fn loopback_answers_its_address_and_localhost_only() -> Result<(), std::net::AddrParseError> {
        let hosts = allowed_hosts("127.0.0.1:8123".parse()?);
        assert_eq!(hosts, ["127.0.0.1:8123", "localhost:8123"]);
        let hosts = allowed_hosts("10.1.2.3:80".parse()?);
        assert_eq!(hosts, ["10.1.2.3:80"]);
        Ok(())
    }
}
