//! `entity-manager`: the command line of entity-manager, over the JSON configuration a
//! TypeScript Entity Manager service uses (or one exported from Rust entities with
//! `Schema::to_ts_config`).
//!
//! Exit codes: 0 success; 1 the operation failed (an invalid configuration, a store error, an
//! interrupted purge or migration, whose message says how to resume; an audit that found
//! misplaced records); 2 bad usage or unreadable input (clap's own code for usage errors).

use std::io::{self, BufRead, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use clap::{Args, Parser, Subcommand, ValueEnum};
use entity_manager::store::TableStamp;
use entity_manager::store::{DynamoStore, Store, TableDefinition};
use entity_manager::{ConfigError, Profile, Schema, ShardSpace};
use serde_json::{Value, json};

mod audit;
mod job;
mod keys;
mod migrate;
mod scan;
mod stream;
mod table;
mod workers;

use audit::{AuditArgs, run_audit};
use keys::{KeysAction, keys};
use migrate::{MigrateArgs, migrate};
use scan::{PurgeArgs, ScanArgs, purge, scan};
use stream::{StreamArgs, stream};
use table::{TableAction, table};
use workers::{ReportAction, report as job_report};

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
    /// Creates, deletes, describes or drift-checks the table of a configuration, or prints its
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
    /// Migrates the records of a table from schema A (`--from`) to schema B (`--to`):
    /// keys rebuilt, moves done in one transaction each. Idempotent and resumable with
    /// `--checkpoint FILE`; `--dry-run` reports counts per entity and shard and samples.
    Migrate(MigrateArgs),
    /// Lists the records whose hash key disagrees with the shard schedule (exit 1 when there
    /// are any); with `--bump`, the dry run of a new shard bump.
    Audit(AuditArgs),
    /// Follows the table's DynamoDB stream and prints every change as one JSON line on stdout:
    /// kind, entity, key and the images decoded without keys (a record that does not decode
    /// is printed as an error line, and the exit code is then 1). Resumable with
    /// `--checkpoint FILE`; `--no-follow` stops once caught up.
    Stream(StreamArgs),
    /// Reports on bulk jobs split across workers: `report merge JOURNAL…` adds the workers'
    /// journals (their `--checkpoint` files) into the job's totals and lists the segments done,
    /// in progress and never started.
    Report {
        #[command(subcommand)]
        action: ReportAction,
    },
}

/// How the table's keys are made: the profile of the services sharing it.
#[derive(Debug, Args)]
struct SpaceArg {
    /// The profile of the table: `npm-6.14` (shared with the npm release 6.14.0 of the
    /// TypeScript Entity Manager; the default), `upstream-8` (shared with TypeScript v8) or
    /// `native` (no TypeScript service: ordered, transcoded keys). A stamped table refuses
    /// writes under another profile (`table stamp`).
    #[arg(long, value_enum)]
    profile: Option<ProfileArg>,
    /// The shard-space rule alone: `product` means `--profile npm-6.14`, `power` means
    /// `--profile upstream-8`.
    #[arg(long, value_enum, conflicts_with = "profile")]
    shard_space: Option<Space>,
}

impl SpaceArg {
    /// The profile named, or the one of the TypeScript release of the shard space named, or
    /// `npm-6.14` (the published TypeScript release the JSON configuration comes from).
    fn profile(&self) -> Profile {
        match (self.profile, self.shard_space) {
            (Some(p), _) => p.into(),
            (None, Some(space)) => ShardSpace::from(space).into(),
            (None, None) => Profile::Npm6_14,
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ProfileArg {
    #[value(name = "npm-6.14")]
    Npm6_14,
    #[value(name = "upstream-8")]
    Upstream8,
    Native,
}

impl From<ProfileArg> for Profile {
    fn from(p: ProfileArg) -> Self {
        match p {
            ProfileArg::Npm6_14 => Self::Npm6_14,
            ProfileArg::Upstream8 => Self::Upstream8,
            ProfileArg::Native => Self::Native,
        }
    }
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
    /// The command printed its report, which found problems: exit 1 (in text mode the
    /// message goes to stderr; `--json` output is the report alone).
    Findings(String),
}

impl Failure {
    fn code(&self) -> u8 {
        match self {
            Self::Input(_) => 2,
            Self::Operation(_) | Self::Config(_) | Self::Findings(_) => 1,
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
    if let Failure::Findings(message) = failure {
        if !json {
            eprintln!("error: {message}");
        }
        return;
    }
    let (kind, message, problems) = match failure {
        Failure::Input(m) => ("input", m.clone(), Vec::new()),
        Failure::Operation(m) | Failure::Findings(m) => ("operation", m.clone(), Vec::new()),
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
            let schema = load(&config, &space)?;
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
        Command::Migrate(args) => migrate(&args, cli.json),
        Command::Audit(args) => run_audit(&args, cli.json),
        Command::Stream(args) => stream(&args, cli.json),
        Command::Report { action } => job_report(&action, cli.json),
    }
}

fn load(path: &Path, space: &SpaceArg) -> Result<Schema, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Input(format!("cannot read {}: {e}", path.display())))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| Failure::Input(format!("{} is not JSON: {e}", path.display())))?;
    Schema::from_ts_config(&value, space.profile()).map_err(Failure::Config)
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

fn store(args: &TableArgs) -> Result<DynamoStore, Failure> {
    let schema = load(&args.config.config, &args.config.space)?;
    let definition =
        TableDefinition::from_schema(&schema).map_err(|e| Failure::Operation(e.to_string()))?;
    Ok(open(definition, &args.table, &args.connection))
}

/// The store of `table`, laid out as `schema`, at the connection's endpoint with its static
/// credentials. The store refuses writes when the table is stamped with another profile; a
/// table without a stamp, or stamped with another profile, is reported on stderr here.
fn connect(schema: &Schema, table: &str, c: &Connection) -> Result<DynamoStore, Failure> {
    let definition =
        TableDefinition::from_schema(schema).map_err(|e| Failure::Operation(e.to_string()))?;
    let store = open(definition, table, c);
    if let (Some(ours), Ok(found)) = (
        store.definition().stamp.as_ref(),
        runtime()?.block_on(store.table_stamp()),
    ) {
        warn_stamp(table, ours, found.as_ref());
    }
    Ok(store)
}

/// The stamp warning of the data commands: a table without a stamp, or with another profile's.
fn warn_stamp(table: &str, ours: &TableStamp, found: Option<&TableStamp>) {
    match found {
        None => eprintln!(
            "warning: table {table} has no stamp recording how its keys are made; stamp it once with `entity-manager table stamp --table {table} --config <config.json> --profile {}`",
            ours.profile().map_or("<profile>", Profile::as_str)
        ),
        Some(stamp) => {
            if let Some(why) = stamp.refuses(ours) {
                eprintln!("warning: table {table}: {why}");
            }
        }
    }
}

/// The store of `table` with `definition`, at the connection's endpoint with its static
/// credentials.
fn open(definition: TableDefinition, table: &str, c: &Connection) -> DynamoStore {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(&c.endpoint)
        .region(Region::new(c.region.clone()))
        .credentials_provider(c.credentials())
        .timeout_config(c.timeouts())
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    DynamoStore::new(client, table.to_owned(), definition)
}

/// A DynamoDB Streams client for the connection: the same region, static credentials and
/// timeouts as [`connect`]'s store, at `endpoint` (DynamoDB Local serves both APIs at one URL;
/// on AWS the Streams endpoint is `https://streams.dynamodb.<region>.amazonaws.com`).
fn streams_client(c: &Connection, endpoint: &str) -> aws_sdk_dynamodbstreams::Client {
    // the two SDKs share their credential, region and timeout types
    let config = aws_sdk_dynamodbstreams::Config::builder()
        .behavior_version(aws_sdk_dynamodbstreams::config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new(c.region.clone()))
        .credentials_provider(c.credentials())
        .timeout_config(c.timeouts())
        .build();
    aws_sdk_dynamodbstreams::Client::from_conf(config)
}

impl Connection {
    /// The static credentials of the flags (never the default chain).
    fn credentials(&self) -> Credentials {
        Credentials::new(
            self.access_key_id.clone(),
            self.secret_access_key.clone(),
            None,
            None,
            "entity-manager-cli",
        )
    }

    /// `--timeout` for connecting and for each whole call.
    fn timeouts(&self) -> TimeoutConfig {
        let timeout = Duration::from_secs(self.timeout.max(1));
        TimeoutConfig::builder()
            .connect_timeout(timeout)
            .operation_timeout(timeout)
            .build()
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Operation(format!("cannot start the async runtime: {e}")))
}
