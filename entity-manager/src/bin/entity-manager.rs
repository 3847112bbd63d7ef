//! `entity-manager`: the command line of entity-manager, over the JSON configuration a
//! TypeScript Entity Manager service uses (or one exported from Rust entities with
//! `Schema::to_ts_config`).
//!
//! Exit codes: 0 success; 1 the operation failed (an invalid configuration, a store error);
//! 2 bad usage or unreadable input (clap's own code for usage errors).

use std::io::{self, BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use clap::{Args, Parser, Subcommand, ValueEnum};
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
    let definition =
        TableDefinition::from_schema(&schema).map_err(|e| Failure::Operation(e.to_string()))?;
    let c = &args.connection;
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
    Ok(DynamoStore::new(client, args.table.clone(), definition))
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
