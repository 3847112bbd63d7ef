//! `entity-manager`: the command line of entity-manager, over the JSON configuration a
//! TypeScript Entity Manager service uses (or one exported from Rust entities with
//! `Schema::to_ts_config`).
//!
//! Exit codes: 0 success; 1 the operation failed (an invalid configuration, a store error, an
//! interrupted purge, whose message says how to resume); 2 bad usage or unreadable input
//! (clap's own code for usage errors).

use std::collections::BTreeMap;
use std::io::{self, BufRead, IsTerminal, Read, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use clap::{Args, Parser, Subcommand, ValueEnum};
use entity_manager::scan::{ParallelScan, ScanCheckpoint};
use entity_manager::store::{DynamoStore, TableDefinition};
use entity_manager::{ConfigError, Item, Schema, ShardSpace};
use serde_json::{Value, json};

/// Keys, validation and table operations for DynamoDB single-table design.
#[derive(Debug, Parser)]
#[command(name = "entity-manager", version, about)]
struct Cli {
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Checks a configuration and lists every problem (exit 1 when invalid).
    Validate {
        /// The JSON configuration file.
        config: PathBuf,
        #[command(flatten)]
        space: SpaceArg,
    },
    /// Adds or removes keys of items: JSON items on stdin (one per line, or one JSON array),
    /// the same shape on stdout.
    Keys {
        #[command(subcommand)]
        action: KeysAction,
    },
    /// Creates, deletes or describes the table of a configuration, or prints its
    /// CloudFormation resource.
    Table {
        #[command(subcommand)]
        action: TableAction,
    },
    /// Scans the table (or the records of one entity) in parallel segments and prints every
    /// item as one JSON line on stdout; the count per entity goes to stderr.
    Scan(ScanArgs),
    /// Deletes every record of an entity, or every item of the table, with batch deletes.
    /// Resumable: with `--checkpoint FILE` the position is saved after every page, and a
    /// rerun with the same file finishes the job.
    Purge(PurgeArgs),
}

#[derive(Debug, Args)]
struct ScanArgs {
    /// The JSON configuration file.
    config: PathBuf,
    #[command(flatten)]
    space: SpaceArg,
    /// The table name.
    #[arg(long)]
    table: String,
    /// Only the records of this entity (their hash key starts with its token).
    #[arg(long)]
    entity: Option<String>,
    #[command(flatten)]
    parallel: Parallel,
    #[command(flatten)]
    connection: Connection,
}

/// How a scan is split and paced.
#[derive(Debug, Args)]
struct Parallel {
    /// The number of segments the table is split into.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    segments: u32,
    /// The most segments read at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=1000))]
    throttle: u64,
    /// The most items evaluated per page (the checkpoint granularity of a purge).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    page_size: Option<u32>,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["entity", "all"])))]
struct PurgeArgs {
    /// The JSON configuration file.
    config: PathBuf,
    #[command(flatten)]
    space: SpaceArg,
    /// The table name.
    #[arg(long)]
    table: String,
    /// Delete every record of this entity.
    #[arg(long)]
    entity: Option<String>,
    /// Delete every item of the table.
    #[arg(long)]
    all: bool,
    /// Save the position here after every page, and resume from it when it exists. Removed
    /// when the purge completes.
    #[arg(long)]
    checkpoint: Option<PathBuf>,
    /// Do not ask for confirmation (required when stdin is not a terminal).
    #[arg(long)]
    yes: bool,
    #[command(flatten)]
    parallel: Parallel,
    /// Testing: stop after this many pages, as an interrupted run would.
    #[arg(long, hide = true)]
    stop_after: Option<u64>,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Debug, Subcommand)]
enum KeysAction {
    /// Adds the hash key, range key and generated properties (existing ones are kept).
    Add(KeysArgs),
    /// Removes the keys and generated properties.
    Remove(KeysArgs),
}

#[derive(Debug, Args)]
struct KeysArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// The entity token of the items.
    #[arg(long)]
    entity: String,
    /// Recompute keys that are already present (after a change of the configuration).
    #[arg(long)]
    refresh: bool,
}

#[derive(Debug, Subcommand)]
enum TableAction {
    /// Creates the table and its GSIs, and waits until it is active.
    Create(TableArgs),
    /// Deletes the table.
    Delete(TableArgs),
    /// Describes the live table: status, keys, indexes, item count.
    Describe(TableArgs),
    /// Prints the `AWS::DynamoDB::Table` CloudFormation resource (no network).
    Cloudformation {
        #[command(flatten)]
        config: ConfigArgs,
        /// The table name to put in the resource (none: CloudFormation names it).
        #[arg(long)]
        table: Option<String>,
    },
}

#[derive(Debug, Args)]
struct SpaceArg {
    /// The shard-space rule of the table: `product` (npm 6.14.0, the seed docs) or `power`
    /// (upstream v8).
    #[arg(long, value_enum, default_value_t = Space::Product)]
    shard_space: Space,
}

#[derive(Debug, Args)]
struct ConfigArgs {
    /// The JSON configuration file.
    #[arg(long)]
    config: PathBuf,
    #[command(flatten)]
    space: SpaceArg,
}

#[derive(Debug, Args)]
struct TableArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// The table name.
    #[arg(long)]
    table: String,
    #[command(flatten)]
    connection: Connection,
}

/// Where DynamoDB is. Credentials are static, from flags or the environment: the default AWS
/// credential chain (which probes instance metadata endpoints) is never used.
#[derive(Debug, Args)]
struct Connection {
    /// The endpoint URL (e.g. `http://127.0.0.1:8000` for DynamoDB Local).
    #[arg(long, env = "DYNAMODB_ENDPOINT")]
    endpoint: String,
    /// The region.
    #[arg(long, env = "AWS_REGION", default_value = "us-east-1")]
    region: String,
    /// The access key id.
    #[arg(long, env = "AWS_ACCESS_KEY_ID", default_value = "local")]
    access_key_id: String,
    /// The secret access key.
    #[arg(
        long,
        env = "AWS_SECRET_ACCESS_KEY",
        default_value = "local",
        hide_env_values = true
    )]
    secret_access_key: String,
    /// The longest a single DynamoDB call may take, in seconds.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Space {
    Product,
    Power,
}

impl From<Space> for ShardSpace {
    fn from(space: Space) -> Self {
        match space {
            Space::Product => Self::Product,
            Space::Power => Self::Power,
        }
    }
}

/// What went wrong, with the exit code it maps to.
#[derive(Debug)]
enum Failure {
    /// Bad input: exit 2.
    Input(String),
    /// The operation failed: exit 1.
    Operation(String),
    /// The configuration is invalid: exit 1, with every problem.
    Config(ConfigError),
}

impl Failure {
    fn code(&self) -> u8 {
        match self {
            Self::Input(_) => 2,
            Self::Operation(_) | Self::Config(_) => 1,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let json = cli.json;
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            report(&failure, json);
            ExitCode::from(failure.code())
        }
    }
}

fn report(failure: &Failure, json: bool) {
    let (kind, message, problems) = match failure {
        Failure::Input(m) => ("input", m.clone(), Vec::new()),
        Failure::Operation(m) => ("operation", m.clone(), Vec::new()),
        Failure::Config(e) => (
            "config",
            format!("the configuration has {} problem(s)", e.problems.len()),
            e.problems
                .iter()
                .map(|p| json!({ "path": p.path, "message": p.message }))
                .collect(),
        ),
    };
    if json {
        let out = json!({ "ok": false, "error": kind, "message": message, "problems": problems });
        println!("{out}");
    } else {
        eprintln!("error: {message}");
        if let Failure::Config(e) = failure {
            for p in &e.problems {
                eprintln!(
                    "  {}: {}",
                    if p.path.is_empty() { "(root)" } else { &p.path },
                    p.message
                );
            }
        }
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Validate { config, space } => {
            let schema = load(&config, space.shard_space)?;
            if cli.json {
                let entities: Vec<&str> = schema.entities().iter().map(|e| &*e.token).collect();
                println!("{}", json!({ "ok": true, "entities": entities }));
            } else {
                println!(
                    "{}: valid ({} entities)",
                    config.display(),
                    schema.entities().len()
                );
            }
            Ok(())
        }
        Command::Keys { action } => keys(action),
        Command::Table { action } => table(action, cli.json),
        Command::Scan(args) => scan(&args, cli.json),
        Command::Purge(args) => purge(&args, cli.json),
    }
}

fn load(path: &Path, space: Space) -> Result<Schema, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Input(format!("cannot read {}: {e}", path.display())))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| Failure::Input(format!("{} is not JSON: {e}", path.display())))?;
    Schema::from_ts_config(&value, space.into()).map_err(Failure::Config)
}

/// The items on stdin: one JSON array, or one JSON object per line. Returns them and whether
/// they came as an array.
fn read_items() -> Result<(Vec<Value>, bool), Failure> {
    let mut text = String::new();
    io::stdin()
        .lock()
        .read_to_string(&mut text)
        .map_err(|e| Failure::Input(format!("cannot read stdin: {e}")))?;
    if text.trim_start().starts_with('[') {
        let items: Vec<Value> = serde_json::from_str(&text)
            .map_err(|e| Failure::Input(format!("stdin is not a JSON array of items: {e}")))?;
        return Ok((items, true));
    }
    let mut items = Vec::new();
    for (n, line) in text.as_bytes().lines().enumerate() {
        let line = line.map_err(|e| Failure::Input(format!("cannot read stdin: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let item = serde_json::from_str(&line)
            .map_err(|e| Failure::Input(format!("line {}: not a JSON item: {e}", n + 1)))?;
        items.push(item);
    }
    Ok((items, false))
}

fn keys(action: KeysAction) -> Result<(), Failure> {
    let (args, add) = match action {
        KeysAction::Add(args) => (args, true),
        KeysAction::Remove(args) => (args, false),
    };
    let schema = load(&args.config.config, args.config.space.shard_space)?;
    let entity = schema
        .entity(&args.entity)
        .map_err(|e| Failure::Input(e.to_string()))?;
    let (items, as_array) = read_items()?;
    let mut out = Vec::with_capacity(items.len());
    for (n, value) in items.into_iter().enumerate() {
        let item: Item = serde_dynamo::to_item(value)
            .map_err(|e| Failure::Input(format!("item {}: {e}", n + 1)))?;
        let keyed = if !add {
            entity.remove_keys(&item)
        } else if args.refresh {
            entity
                .refresh_keys(&item)
                .map_err(|e| Failure::Operation(format!("item {}: {e}", n + 1)))?
        } else {
            entity
                .add_keys(&item)
                .map_err(|e| Failure::Operation(format!("item {}: {e}", n + 1)))?
        };
        let value: Value = serde_dynamo::from_item(keyed)
            .map_err(|e| Failure::Operation(format!("item {}: {e}", n + 1)))?;
        out.push(value);
    }
    let stdout = io::stdout();
    let mut stdout = stdout.lock();
    let written = if as_array {
        serde_json::to_writer(&mut stdout, &out)
            .map_err(io::Error::from)
            .and_then(|()| writeln!(stdout))
    } else {
        out.iter().try_for_each(|value| {
            serde_json::to_writer(&mut stdout, value).map_err(io::Error::from)?;
            writeln!(stdout)
        })
    };
    written.map_err(|e| Failure::Operation(format!("cannot write stdout: {e}")))
}

fn store(args: &TableArgs) -> Result<DynamoStore, Failure> {
    let schema = load(&args.config.config, args.config.space.shard_space)?;
    connect(&schema, &args.table, &args.connection)
}

/// The store of `table`, laid out as `schema`, at the connection's endpoint with its static
/// credentials.
fn connect(schema: &Schema, table: &str, c: &Connection) -> Result<DynamoStore, Failure> {
    let definition =
        TableDefinition::from_schema(schema).map_err(|e| Failure::Operation(e.to_string()))?;
    let timeout = Duration::from_secs(c.timeout.max(1));
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(&c.endpoint)
        .region(Region::new(c.region.clone()))
        .credentials_provider(Credentials::new(
            c.access_key_id.clone(),
            c.secret_access_key.clone(),
            None,
            None,
            "entity-manager-cli",
        ))
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(timeout)
                .operation_timeout(timeout)
                .build(),
        )
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    Ok(DynamoStore::new(client, table.to_owned(), definition))
}

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Operation(format!("cannot start the async runtime: {e}")))
}

fn table(action: TableAction, json: bool) -> Result<(), Failure> {
    match action {
        TableAction::Cloudformation { config, table } => {
            let schema = load(&config.config, config.space.shard_space)?;
            let definition = TableDefinition::from_schema(&schema)
                .map_err(|e| Failure::Operation(e.to_string()))?;
            let resource = definition
                .cloudformation(table.as_deref())
                .map_err(|e| Failure::Operation(e.to_string()))?;
            let text = serde_json::to_string_pretty(&resource)
                .map_err(|e| Failure::Operation(e.to_string()))?;
            println!("{text}");
            Ok(())
        }
        TableAction::Create(args) => {
            let store = store(&args)?;
            runtime()?
                .block_on(store.create_table())
                .map_err(|e| Failure::Operation(e.to_string()))?;
            done(json, "created", &args.table);
            Ok(())
        }
        TableAction::Delete(args) => {
            let store = store(&args)?;
            runtime()?
                .block_on(store.delete_table())
                .map_err(|e| Failure::Operation(e.to_string()))?;
            done(json, "deleted", &args.table);
            Ok(())
        }
        TableAction::Describe(args) => {
            let store = store(&args)?;
            let described = runtime()?.block_on(describe(&store))?;
            if json {
                println!("{described}");
            } else {
                let text = serde_json::to_string_pretty(&described)
                    .map_err(|e| Failure::Operation(e.to_string()))?;
                println!("{text}");
            }
            Ok(())
        }
    }
}

fn done(json: bool, what: &str, table: &str) {
    if json {
        println!("{}", json!({ "ok": true, "table": table, "action": what }));
    } else {
        println!("table {table} {what}");
    }
}

async fn describe(store: &DynamoStore) -> Result<Value, Failure> {
    let out = store
        .client()
        .describe_table()
        .table_name(store.table_name())
        .send()
        .await
        .map_err(|e| {
            Failure::Operation(format!(
                "DescribeTable {} failed: {}",
                store.table_name(),
                aws_sdk_dynamodb::error::DisplayErrorContext(&e)
            ))
        })?;
    let Some(table) = out.table() else {
        return Err(Failure::Operation("DescribeTable returned no table".into()));
    };
    let keys = |schema: &[aws_sdk_dynamodb::types::KeySchemaElement]| -> Vec<Value> {
        schema
            .iter()
            .map(|k| json!({ "attribute": k.attribute_name(), "type": k.key_type().as_str() }))
            .collect()
    };
    let indexes: Vec<Value> = table
        .global_secondary_indexes()
        .iter()
        .map(|g| {
            json!({
                "name": g.index_name(),
                "keys": keys(g.key_schema()),
                "projection": g.projection().and_then(|p| p.projection_type()).map(aws_sdk_dynamodb::types::ProjectionType::as_str),
                "status": g.index_status().map(aws_sdk_dynamodb::types::IndexStatus::as_str),
            })
        })
        .collect();
    Ok(json!({
        "table": table.table_name(),
        "status": table.table_status().map(aws_sdk_dynamodb::types::TableStatus::as_str),
        "keys": keys(table.key_schema()),
        "indexes": indexes,
        "itemCount": table.item_count(),
    }))
}

/// The entity an item belongs to, by its hash key: the token before the shard key delimiter
/// when the schema has that entity, `(other)` otherwise.
fn entity_of(schema: &Schema, item: &Item) -> String {
    let table = schema.table();
    let Some(entity_manager::AttributeValue::S(hash_key)) = item.get(&*table.hash_key) else {
        return "(other)".to_owned();
    };
    let token = hash_key
        .split_once(&*table.delimiters.shard_key)
        .map_or("", |(token, _)| token);
    if schema.entities().iter().any(|e| e.token == token) {
        token.to_owned()
    } else {
        "(other)".to_owned()
    }
}

/// A parallel scan of `store` with the flags' segments, throttle, page size and entity.
fn parallel_scan<'s>(
    store: &'s DynamoStore,
    schema: &Schema,
    entity: Option<&str>,
    parallel: &Parallel,
) -> Result<ParallelScan<'s, DynamoStore>, Failure> {
    let mut scan = ParallelScan::new(store)
        .segments(parallel.segments)
        .throttle(usize::try_from(parallel.throttle).unwrap_or(1));
    if let Some(size) = parallel.page_size {
        scan = scan.page_size(size);
    }
    if let Some(entity) = entity {
        let entity = schema
            .entity(entity)
            .map_err(|e| Failure::Input(e.to_string()))?;
        scan = scan.entity(&entity);
    }
    Ok(scan)
}

fn counts_json(counts: &BTreeMap<String, u64>) -> Value {
    Value::Object(counts.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
}

fn counts_text(counts: &BTreeMap<String, u64>) -> String {
    counts
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn scan(args: &ScanArgs, json: bool) -> Result<(), Failure> {
    use futures::TryStreamExt;

    let schema = load(&args.config, args.space.shard_space)?;
    let store = connect(&schema, &args.table, &args.connection)?;
    let scan = parallel_scan(&store, &schema, args.entity.as_deref(), &args.parallel)?;
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut total = 0u64;
    let stdout = io::stdout();
    let mut out = stdout.lock();
    runtime()?.block_on(async {
        let mut items = std::pin::pin!(scan.items());
        while let Some(item) = items
            .try_next()
            .await
            .map_err(|e| Failure::Operation(format!("table {}: {e}", args.table)))?
        {
            *counts.entry(entity_of(&schema, &item)).or_default() += 1;
            total += 1;
            let value: Value = serde_dynamo::from_item(item)
                .map_err(|e| Failure::Operation(format!("cannot print an item: {e}")))?;
            serde_json::to_writer(&mut out, &value)
                .map_err(io::Error::from)
                .and_then(|()| writeln!(out))
                .map_err(|e| Failure::Operation(format!("cannot write stdout: {e}")))?;
        }
        Ok::<(), Failure>(())
    })?;
    out.flush()
        .map_err(|e| Failure::Operation(format!("cannot write stdout: {e}")))?;
    if json {
        eprintln!(
            "{}",
            json!({ "ok": true, "table": args.table, "scanned": total, "counts": counts_json(&counts) })
        );
    } else {
        eprintln!("scanned {total} items ({})", counts_text(&counts));
    }
    Ok(())
}

/// What a purge checkpoint file holds: the table and target it belongs to, the scan position
/// and the counts deleted so far.
struct PurgeState {
    table: String,
    target: String,
    scan: ScanCheckpoint,
    counts: BTreeMap<String, u64>,
}

impl PurgeState {
    fn to_json(&self) -> Result<Value, Failure> {
        let scan = serde_json::to_value(&self.scan)
            .map_err(|e| Failure::Operation(format!("cannot serialize the checkpoint: {e}")))?;
        Ok(json!({
            "table": self.table,
            "target": self.target,
            "scan": scan,
            "counts": counts_json(&self.counts),
        }))
    }

    fn load(path: &Path) -> Result<Option<Self>, Failure> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(Failure::Input(format!(
                    "cannot read the checkpoint {}: {e}",
                    path.display()
                )));
            }
        };
        let bad = |why: String| {
            Failure::Input(format!(
                "{} is not a purge checkpoint ({why}); remove it to start over",
                path.display()
            ))
        };
        let value: Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        let field = |name: &str| {
            value[name]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| bad(format!("no `{name}`")))
        };
        let scan: ScanCheckpoint =
            serde_json::from_value(value["scan"].clone()).map_err(|e| bad(e.to_string()))?;
        let counts = value["counts"]
            .as_object()
            .map(|o| {
                o.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_u64()?)))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Some(Self {
            table: field("table")?,
            target: field("target")?,
            scan,
            counts,
        }))
    }

    /// Writes the file atomically (a temporary file renamed over it).
    fn save(&self, path: &Path) -> Result<(), Failure> {
        let text = serde_json::to_vec_pretty(&self.to_json()?)
            .map_err(|e| Failure::Operation(format!("cannot serialize the checkpoint: {e}")))?;
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, path))
            .map_err(|e| {
                Failure::Operation(format!(
                    "cannot write the checkpoint {}: {e}",
                    path.display()
                ))
            })
    }
}

/// Asks on the terminal; without one, `--yes` is required.
fn confirm(args: &PurgeArgs, what: &str) -> Result<(), Failure> {
    if args.yes {
        return Ok(());
    }
    if !io::stdin().is_terminal() {
        return Err(Failure::Input(format!(
            "refusing to delete {what} without confirmation: stdin is not a terminal; pass --yes"
        )));
    }
    eprint!("Delete {what}? [y/N] ");
    let mut answer = String::new();
    io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| Failure::Input(format!("cannot read the answer: {e}")))?;
    if matches!(answer.trim(), "y" | "Y" | "yes") {
        Ok(())
    } else {
        Err(Failure::Input("not confirmed: nothing deleted".to_owned()))
    }
}

#[allow(clippy::too_many_lines)] // one command, start to end
fn purge(args: &PurgeArgs, json: bool) -> Result<(), Failure> {
    let schema = load(&args.config, args.space.shard_space)?;
    let target = match &args.entity {
        Some(entity) => format!("entity:{entity}"),
        None => "all".to_owned(),
    };
    let what = match &args.entity {
        Some(entity) => format!("every record of entity `{entity}` in table {}", args.table),
        None => format!("every item of table {}", args.table),
    };
    let store = connect(&schema, &args.table, &args.connection)?;
    let mut scan = parallel_scan(&store, &schema, args.entity.as_deref(), &args.parallel)?;
    // pages of 100 by default: a checkpoint every four batch deletes
    if args.parallel.page_size.is_none() {
        scan = scan.page_size(100);
    }
    let mut state = PurgeState {
        table: args.table.clone(),
        target: target.clone(),
        scan: scan.checkpoint().clone(),
        counts: BTreeMap::new(),
    };
    if let Some(path) = &args.checkpoint
        && let Some(saved) = PurgeState::load(path)?
    {
        if saved.table != args.table || saved.target != target {
            return Err(Failure::Input(format!(
                "the checkpoint {} belongs to a purge of {} in table {}, not {target} in table {}; use another file",
                path.display(),
                saved.target,
                saved.table,
                args.table
            )));
        }
        scan = scan
            .resume(saved.scan.clone())
            .map_err(|e| Failure::Input(format!("{}: {e}", path.display())))?;
        state = saved;
    }
    confirm(args, &what)?;
    // where the position goes if the purge does not finish
    let resume_path = args.checkpoint.clone().unwrap_or_else(|| {
        PathBuf::from(format!(
            "entity-manager-purge-{}.checkpoint.json",
            args.table
        ))
    });
    if let Some(path) = &args.checkpoint {
        state.save(path)?;
    }

    let bar = io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_message(format!("purging {what}"));
        bar
    });
    let mut pages = 0u64;
    let mut save_error = None;
    let outcome = runtime()?.block_on(scan.purge(|progress| {
        for key in progress.keys {
            *state.counts.entry(entity_of(&schema, key)).or_default() += 1;
        }
        state.scan = progress.checkpoint.clone();
        pages += 1;
        if let Some(path) = &args.checkpoint
            && let Err(e) = state.save(path)
        {
            save_error = Some(e);
            return ControlFlow::Break(());
        }
        if let Some(bar) = &bar {
            bar.set_message(format!(
                "deleted {} items ({})",
                state.counts.values().sum::<u64>(),
                counts_text(&state.counts)
            ));
            bar.tick();
        }
        if args.stop_after.is_some_and(|n| pages >= n) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }));
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    if let Some(e) = save_error {
        return Err(e);
    }
    let deleted: u64 = state.counts.values().sum();
    let stopped = |state: &mut PurgeState, why: String| -> Failure {
        if args.checkpoint.is_none()
            && let Err(e) = state.save(&resume_path)
        {
            return Failure::Operation(format!("{why}; the position could not be saved ({e:?})"));
        }
        Failure::Operation(format!(
            "{why}; {deleted} items deleted so far; to resume, run the same command with --checkpoint {}",
            resume_path.display()
        ))
    };
    match outcome {
        Ok(report) if report.complete => {
            if let Some(path) = &args.checkpoint {
                std::fs::remove_file(path).map_err(|e| {
                    Failure::Operation(format!(
                        "purge complete, but the checkpoint {} could not be removed: {e}",
                        path.display()
                    ))
                })?;
            }
            if json {
                println!(
                    "{}",
                    json!({ "ok": true, "table": args.table, "target": target, "deleted": deleted, "counts": counts_json(&state.counts) })
                );
            } else {
                println!(
                    "purged {what}: {deleted} items deleted ({})",
                    counts_text(&state.counts)
                );
            }
            Ok(())
        }
        Ok(_) => Err(stopped(
            &mut state,
            format!("purge stopped after {pages} pages (--stop-after)"),
        )),
        Err(e) => {
            state.scan = e.checkpoint.clone();
            Err(stopped(&mut state, format!("purge of {what} failed: {e}")))
        }
    }
}
