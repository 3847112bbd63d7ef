//! What the process-level tests of the `entity-manager` binary share: running it, reading its
//! exit code and JSON output, the test configurations as files, the DynamoDB Local endpoint and
//! client, and killing a long job once its checkpoint shows progress.
//!
//! Each test file includes this module (`mod support;`) and uses part of it.
#![allow(dead_code)] // each test crate uses a different part

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub(crate) type BoxError = Box<dyn std::error::Error>;
pub(crate) type TestResult = Result<(), BoxError>;

/// The binary, with none of the caller's AWS settings: static dummy credentials in the
/// environment, no config or credentials file, no region, no endpoint (each test names its
/// loopback endpoint), no instance metadata; progress lines off unless a test asks.
pub(crate) fn bin() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_entity-manager"));
    for var in [
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_DYNAMODB",
        "AWS_ROLE_ARN",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ] {
        command.env_remove(var);
    }
    let nowhere = std::env::temp_dir().join("em-cli-no-aws-files");
    command
        .env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .env("AWS_CONFIG_FILE", nowhere.join("config"))
        .env("AWS_SHARED_CREDENTIALS_FILE", nowhere.join("credentials"))
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("ENTITY_MANAGER_PROGRESS_SECONDS", "100000");
    command
}

/// Runs the binary with `args` and no stdin (not a terminal).
pub(crate) fn run(args: &[&str]) -> Result<Output, std::io::Error> {
    bin()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
}

/// Runs the binary with `args`, writing `stdin` to it.
pub(crate) fn run_with_stdin(args: &[&str], stdin: &str) -> Result<Output, std::io::Error> {
    use std::io::Write;
    let mut child = bin()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin.as_bytes())?;
    }
    child.wait_with_output()
}

/// The command exited with `expected` (else its stdout and stderr are shown).
pub(crate) fn assert_code(output: &Output, expected: i32) {
    assert_eq!(
        output.status.code(),
        Some(expected),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The command's stdout as JSON.
pub(crate) fn stdout_json(output: &Output) -> Result<Value, BoxError> {
    Ok(serde_json::from_slice(&output.stdout)?)
}

/// A golden-vector file of `../shared/compat`.
pub(crate) fn compat(name: &str) -> Result<Value, BoxError> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../shared/compat/{name}.json"));
    Ok(serde_json::from_str(&std::fs::read_to_string(path)?)?)
}

/// The User service configuration of the golden vectors (eleven GSIs).
pub(crate) fn user_service_config() -> Result<Value, BoxError> {
    Ok(compat("product-user-service")?["config"].clone())
}

/// `body` written to a file under the temporary directory, unique to this process, test and
/// name; returns its path.
pub(crate) fn temp_json(test: &str, name: &str, body: &Value) -> Result<PathBuf, BoxError> {
    let path =
        std::env::temp_dir().join(format!("em-cli-{test}-{name}-{}.json", std::process::id()));
    std::fs::write(&path, serde_json::to_vec(body)?)?;
    Ok(path)
}

/// A path as a command-line argument.
pub(crate) fn arg(path: &std::path::Path) -> Result<&str, BoxError> {
    Ok(path.to_str().ok_or("the temporary path is not UTF-8")?)
}

/// The DynamoDB Local endpoint, or `None` (skip) outside CI.
pub(crate) fn endpoint() -> Option<String> {
    if let Ok(endpoint) = std::env::var("DYNAMODB_ENDPOINT") {
        assert!(
            endpoint.starts_with("http://127.") || endpoint.starts_with("http://localhost"),
            "loopback only: {endpoint}"
        );
        Some(endpoint)
    } else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but DYNAMODB_ENDPOINT is not set"
        );
        eprintln!("skipping: DYNAMODB_ENDPOINT is not set");
        None
    }
}

/// The `--endpoint-url`/`--region` arguments the commands take for DynamoDB Local.
pub(crate) fn connection(endpoint: &str) -> [&str; 4] {
    ["--endpoint-url", endpoint, "--region", "us-east-1"]
}

/// A client of DynamoDB Local: explicit region, static dummy credentials, the endpoint.
pub(crate) fn client(endpoint: &str) -> aws_sdk_dynamodb::Client {
    use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    let conf = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("local", "local", None, None, "static"))
        .build();
    aws_sdk_dynamodb::Client::from_conf(conf)
}

/// A `DynamoStore` of `schema`'s table on DynamoDB Local.
pub(crate) fn store(
    endpoint: &str,
    table: &str,
    schema: &entity_manager::Schema,
) -> Result<entity_manager::store::DynamoStore, BoxError> {
    Ok(entity_manager::store::DynamoStore::new(
        client(endpoint),
        table,
        entity_manager::store::TableDefinition::from_schema(schema)?,
    ))
}

/// Starts the binary with `args` (output discarded) and SIGKILLs it as soon as the checkpoint
/// file records a position inside a segment (`"after"`); fails if it ends first or makes no
/// progress within a minute.
pub(crate) fn kill_when_checkpointed(args: &[&str], checkpoint: &std::path::Path) -> TestResult {
    let mut child: Child = bin()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(checkpoint).unwrap_or_default();
        if text.contains("\"after\"") {
            break;
        }
        if child.try_wait()?.is_some() {
            return Err(format!("`{}` ended before it could be killed", args.join(" ")).into());
        }
        if started.elapsed() > Duration::from_mins(1) {
            child.kill()?;
            return Err("no progress within 60 s".into());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill()?;
    let status = child.wait()?;
    assert!(!status.success(), "killed: {status:?}");
    Ok(())
}

/// Every line of the command's stdout as JSON.
pub(crate) fn stdout_lines(output: &Output) -> Result<Vec<Value>, BoxError> {
    String::from_utf8(output.stdout.clone())?
        .lines()
        .map(|l| Ok(serde_json::from_str(l)?))
        .collect()
}

/// A table named after `test`, created by the CLI from the User service configuration: the
/// configuration file and the table name.
pub(crate) fn user_table(test: &str, endpoint: &str) -> Result<(PathBuf, String), BoxError> {
    let config = temp_json(test, "config", &user_service_config()?)?;
    let table = format!("cli-{test}-{}", std::process::id());
    let out = run(&[
        "table",
        "create",
        "--config",
        arg(&config)?,
        "--table",
        &table,
        "--endpoint-url",
        endpoint,
    ])?;
    assert_code(&out, 0);
    Ok((config, table))
}

/// Deletes a table made by [`user_table`].
pub(crate) fn drop_table(config: &std::path::Path, table: &str, endpoint: &str) -> TestResult {
    let out = run(&[
        "table",
        "delete",
        "--config",
        arg(config)?,
        "--table",
        table,
        "--endpoint-url",
        endpoint,
    ])?;
    assert_code(&out, 0);
    Ok(())
}

/// The records (entity name, item) with their keys added by `schema`.
pub(crate) fn keyed(
    schema: &entity_manager::Schema,
    records: &[(&'static str, entity_manager::Item)],
) -> Result<Vec<entity_manager::Item>, BoxError> {
    records
        .iter()
        .map(|(entity, item)| Ok(schema.entity(entity)?.add_keys(item)?))
        .collect()
}

/// A string or number attribute as text (empty when absent).
pub(crate) fn text(item: &entity_manager::Item, name: &str) -> String {
    match item.get(name) {
        Some(entity_manager::AttributeValue::S(s) | entity_manager::AttributeValue::N(s)) => {
            s.clone()
        }
        _ => String::new(),
    }
}

/// Items sorted by table key.
pub(crate) fn sorted(mut items: Vec<entity_manager::Item>) -> Vec<entity_manager::Item> {
    items.sort_by_key(|i| (text(i, "hashKey"), text(i, "rangeKey")));
    items
}

/// The arguments of a record command on `table`.
pub(crate) fn on<'a>(
    command: &'a str,
    config: &'a std::path::Path,
    table: &'a str,
    endpoint: &'a str,
) -> Result<Vec<&'a str>, BoxError> {
    Ok(vec![
        command,
        "--config",
        arg(config)?,
        "--table",
        table,
        "--entity",
        "user",
        "--endpoint-url",
        endpoint,
    ])
}

/// Bytes the proxy saw from clients.
pub(crate) type Seen = std::sync::Arc<std::sync::Mutex<Vec<u8>>>;

/// A loopback TCP proxy to `upstream` that keeps a copy of every byte clients send.
pub(crate) async fn recording_proxy(
    upstream: std::net::SocketAddr,
) -> Result<(std::net::SocketAddr, Seen), BoxError> {
    holding_proxy(upstream, Hold::default()).await
}

/// Whether a [`holding_proxy`] holds back the requests whose bytes contain a marker.
#[derive(Clone, Default)]
pub(crate) struct Hold(std::sync::Arc<std::sync::Mutex<Option<&'static [u8]>>>);

impl Hold {
    /// From now on, requests containing `marker` wait (until [`release`](Self::release)).
    pub(crate) fn hold(&self, marker: &'static [u8]) {
        if let Ok(mut held) = self.0.lock() {
            *held = Some(marker);
        }
    }

    /// The requests held go on.
    pub(crate) fn release(&self) {
        if let Ok(mut held) = self.0.lock() {
            *held = None;
        }
    }

    /// Whether `bytes` are held back now.
    fn holds(&self, bytes: &[u8]) -> bool {
        let marker = self.0.lock().ok().and_then(|m| *m);
        marker.is_some_and(|m| bytes.windows(m.len()).any(|w| w == m))
    }
}

/// [`recording_proxy`] that also holds back the requests `hold` says, until it releases them.
pub(crate) async fn holding_proxy(
    upstream: std::net::SocketAddr,
    hold: Hold,
) -> Result<(std::net::SocketAddr, Seen), BoxError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let seen: Seen = std::sync::Arc::default();
    let log = std::sync::Arc::clone(&seen);
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut client, _)) = listener.accept().await {
            let log = std::sync::Arc::clone(&log);
            let hold = hold.clone();
            tokio::spawn(async move {
                let Ok(mut server) = tokio::net::TcpStream::connect(upstream).await else {
                    return;
                };
                let (mut client_read, mut client_write) = client.split();
                let (mut server_read, mut server_write) = server.split();
                let up = async {
                    let mut buffer = vec![0u8; 16 * 1024];
                    loop {
                        let n = match client_read.read(&mut buffer).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        if let Ok(mut seen) = log.lock() {
                            seen.extend_from_slice(&buffer[..n]);
                        }
                        while hold.holds(&buffer[..n]) {
                            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                        }
                        if server_write.write_all(&buffer[..n]).await.is_err() {
                            break;
                        }
                    }
                    let _ = server_write.shutdown().await;
                };
                let down = async {
                    let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                    let _ = client_write.shutdown().await;
                };
                tokio::join!(up, down);
            });
        }
    });
    Ok((address, seen))
}

/// A running `entity-manager console`: its address (the first line it printed) and its
/// process, killed when dropped; its stderr is kept in a file.
pub(crate) struct Console {
    pub(crate) url: String,
    pub(crate) address: std::net::SocketAddr,
    child: Child,
    stderr: PathBuf,
}

impl Console {
    /// Starts `console` with `args` and reads the address it prints first.
    pub(crate) fn start(test: &str, args: &[&str]) -> Result<Self, BoxError> {
        Self::start_with(test, args, |_| {})
    }

    /// [`Console::start`], with the command changed by `change` first (its environment).
    pub(crate) fn start_with(
        test: &str,
        args: &[&str],
        change: impl FnOnce(&mut Command),
    ) -> Result<Self, BoxError> {
        use std::io::BufRead;
        let stderr =
            std::env::temp_dir().join(format!("em-cli-{test}-console-{}.err", std::process::id()));
        let mut command = bin();
        change(&mut command);
        let mut child = command
            .arg("console")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr)?)
            .spawn()?;
        let mut line = String::new();
        if let Some(out) = child.stdout.take() {
            std::io::BufReader::new(out).read_line(&mut line)?;
        }
        let url = line.trim().to_owned();
        let Some(address) = url
            .strip_prefix("http://")
            .and_then(|rest| rest.strip_suffix('/'))
            .and_then(|a| a.parse().ok())
        else {
            let _ = child.kill();
            let _ = child.wait();
            let said = std::fs::read_to_string(&stderr).unwrap_or_default();
            return Err(format!(
                "the console printed `{url}` first, not its address; stderr: {said}"
            )
            .into());
        };
        Ok(Self {
            url,
            address,
            child,
            stderr,
        })
    }

    /// What the console wrote on stderr so far.
    pub(crate) fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.stderr);
    }
}

/// One HTTP/1.1 request to `address` with `Host: host` (none when `None`): the status code
/// and the body. A request that gets no answer within two minutes fails.
pub(crate) fn http(
    address: std::net::SocketAddr,
    method: &str,
    host: Option<&str>,
    path: &str,
    body: &str,
) -> Result<(u16, String), BoxError> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address)?;
    stream.set_read_timeout(Some(Duration::from_mins(2)))?;
    let host = host.map(|h| format!("Host: {h}\r\n")).unwrap_or_default();
    let kind = if body.is_empty() {
        String::new()
    } else {
        "Content-Type: application/x-www-form-urlencoded\r\n".to_owned()
    };
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\n{host}{kind}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("not an HTTP answer: {answer}"))?;
    let body = answer
        .split_once("\r\n\r\n")
        .map_or(String::new(), |(_, b)| b.to_owned());
    Ok((status, body))
}

/// A loopback port nothing listens on (bound, then released).
pub(crate) fn closed_port() -> Result<u16, BoxError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// A single-threaded runtime for the async calls of a test.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, BoxError> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// Every record of the table (the stamp item aside), sorted by table key.
pub(crate) fn table_items(
    store: &entity_manager::store::DynamoStore,
) -> Result<Vec<entity_manager::Item>, BoxError> {
    use entity_manager::store::Store;
    use futures::TryStreamExt;
    let items: Vec<entity_manager::Item> = runtime()?.block_on(
        entity_manager::scan::ParallelScan::new(store)
            .items()
            .try_collect(),
    )?;
    let definition = store.definition();
    Ok(sorted(
        items
            .into_iter()
            .filter(|i| !entity_manager::store::is_stamp(i, definition))
            .collect(),
    ))
}
