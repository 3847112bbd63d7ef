//! `entity-manager`: the command line of entity-manager, on a table that describes itself (its
//! stamp carries its schema: `--table` alone), or over a configuration file: a schema file
//! written from Rust entities (`Schema::to_json`) or the JSON configuration a TypeScript Entity
//! Manager service uses.
//!
//! Exit codes (also in `--help`):
//! - 0: success (also when stdout closed early, as in `| head -1`);
//! - 1: the operation failed or could not check (an invalid configuration, a store or network
//!   error, a purge or migration stopped, whose message says how to resume);
//! - 2: bad usage or unreadable input (clap's own code for usage errors);
//! - 3: the command ran and found something: drift (`table drift`), misplaced records
//!   (`audit`), records that cannot be migrated (`migrate --dry-run`), stream records that do
//!   not decode (`stream`), records refused (`import`, `put`, `delete`), ids not found (`get`);
//! - 130: interrupted by Ctrl-C or SIGTERM (a purge, migrate or import saved its checkpoint and
//!   says how to resume).

use std::io::{self, BufRead, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::OnceLock;

/// `println!` that ends the command quietly when stdout is closed (`| head -1`) instead of
/// panicking: returns [`Failure::ClosedPipe`] from the enclosing function.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))?
    };
}

/// `eprintln!` that does not panic when stderr is closed (`2>&1 | head -1`): what could not be
/// written is dropped, and the command ends with its own exit code.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

use clap::{Args, Parser, Subcommand, ValueEnum};
use entity_manager::model::{Profile, ShardSpace};
use entity_manager::store::{DynamoStore, Store, StoreErrorKind, TableDefinition};
use entity_manager::store::{Inference, TableStamp};
use entity_manager::{ConfigError, Schema};
use serde_json::{Value, json};

mod audit;
mod connection;
mod console;
mod job;
mod keys;
mod migrate;
mod out;
mod progress;
mod records;
mod scan;
mod signal;
mod stream;
mod table;
mod workers;

use audit::{AuditArgs, run_audit};
pub(crate) use connection::Connection;
use keys::{KeysAction, keys};
use migrate::{MigrateArgs, migrate};
use records::{DeleteArgs, GetArgs, ImportArgs, PutArgs, QueryArgs};
use scan::{PurgeArgs, ScanArgs, purge, scan};
use stream::{StreamArgs, stream};
use table::{TableAction, table};
use workers::{ReportAction, report as job_report};

/// Keys, records, tables and bulk jobs of a DynamoDB single-table design, from the JSON
/// configuration of a TypeScript Entity Manager service.
#[derive(Debug, Parser)]
#[command(
    name = "entity-manager",
    version,
    about,
    after_help = AFTER_HELP
)]
struct Cli {
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    /// On failure, also print the whole error chain (the AWS SDK's detail).
    #[arg(short, long, global = true)]
    verbose: bool,
    /// No progress on stderr.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

const AFTER_HELP: &str = "\
Credentials, region and endpoint come as for every AWS tool: --profile, --region and
--endpoint-url, else the environment (AWS_PROFILE, AWS_REGION, AWS_ACCESS_KEY_ID,
AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, ...), the config and credentials files, SSO, web
identity, container and instance roles.

Examples (DynamoDB Local at http://127.0.0.1:8000):
  entity-manager table create --config users.json --table Users --endpoint-url http://127.0.0.1:8000
  entity-manager import --config users.json --table Users --entity user --file users.jsonl --endpoint-url ...
  entity-manager get --config users.json --table Users --entity user --id u1 --endpoint-url ...
  entity-manager get --table Users --entity user --id u1 --endpoint-url ...   (a table stamped with its schema)
  entity-manager query --config users.json --table Users --entity user --index created --range 'between 1726000000000 and 1736000000000' --all --endpoint-url ...
  entity-manager purge --config users.json --table Users --entity user --checkpoint purge.json --yes --endpoint-url ...
  entity-manager migrate --from v1.json --to v2.json --table Users --checkpoint migrate.json --yes --endpoint-url ...
  entity-manager console --table Users --endpoint-url http://127.0.0.1:8000   (then open the address it prints)

Exit codes: 0 success (also when stdout closes early, as in `| head -1`); 1 the operation
failed or could not check; 2 bad usage or unreadable input; 3 the command ran and found
something (drift, misplaced records, records that cannot be migrated or decoded, records
refused, ids not found); 130 interrupted by Ctrl-C or SIGTERM (the checkpoint is saved and the
message says how to resume). Progress goes to stderr: a live line on a terminal, else a plain
line every ENTITY_MANAGER_PROGRESS_SECONDS (5) seconds; --quiet turns it off.";

#[derive(Debug, Subcommand)]
enum Command {
    /// Checks a configuration and lists every problem (exit 1 when invalid).
    Validate {
        #[command(flatten)]
        config: ConfigArgs,
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
    /// Reads records by unique id (`--id`, repeatable), over every shard a record with that id
    /// may be in; one JSON line per record found (exit 3 when an id is not found).
    Get(GetArgs),
    /// Queries one or more indexes of an entity across all their shards, in order: JSON lines
    /// on stdout, the next page's token on stderr.
    Query(QueryArgs),
    /// Writes records from JSON lines (a file or stdin), keys added, with batch writes;
    /// `--create-only` refuses ids that exist. Resumable by line number.
    Import(ImportArgs),
    /// Writes one record (JSON on stdin or `--item`), keys added.
    Put(PutArgs),
    /// Deletes one record by unique id.
    Delete(DeleteArgs),
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
    /// Lists the records whose hash key disagrees with the shard schedule (exit 3 when there
    /// are any); with `--bump`, the dry run of a new shard bump.
    Audit(AuditArgs),
    /// Follows the table's DynamoDB stream and prints every change as one JSON line on stdout:
    /// kind, entity, key and the images decoded without keys (a record that does not decode
    /// is printed as an error line, and the exit code is then 3). Resumable with
    /// `--checkpoint FILE`; `--no-follow` stops once caught up.
    Stream(StreamArgs),
    /// Reports on bulk jobs split across workers: `report merge JOURNAL…` adds the workers'
    /// journals (their `--checkpoint` files) into the job's totals and lists the segments done,
    /// in progress and never started.
    Report {
        #[command(subcommand)]
        action: ReportAction,
    },
    /// Serves a local web page on the table: its design (entities, keys, indexes, shard
    /// schedule, stamp, a sample laid out by partition), queries across every shard with their
    /// cost, and records per shard. Prints its address as the first line; listens on
    /// 127.0.0.1 (a free port) unless `--listen` says otherwise; read-only.
    Console(console::ConsoleArgs),
}

/// How the table's keys are made: the profile of the services sharing it.
#[derive(Debug, Args)]
struct SpaceArg {
    /// How the table's keys are made: `npm-6.14` (shared with the npm release 6.14.0 of the
    /// TypeScript Entity Manager; the default), `upstream-8` (shared with TypeScript v8) or
    /// `native` (no TypeScript service: ordered, transcoded keys). A stamped table refuses
    /// writes under another key profile (`table stamp`). (`--profile` is the AWS profile.)
    #[arg(long, value_enum)]
    key_profile: Option<ProfileArg>,
    /// The shard-space rule alone: `product` means `--key-profile npm-6.14`, `power` means
    /// `--key-profile upstream-8`.
    #[arg(long, value_enum, conflicts_with = "key_profile")]
    shard_space: Option<Space>,
}

impl SpaceArg {
    /// The profile named, or the one of the TypeScript release of the shard space named, or
    /// `npm-6.14` (the published TypeScript release the JSON configuration comes from).
    fn profile(&self) -> Profile {
        match (self.key_profile, self.shard_space) {
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

/// The configuration: `--config FILE` (the positional form of `validate`, `scan`, `purge` and
/// `stream` is kept as a hidden alias). A command on a table takes the schema its stamp
/// carries when `--config` is left out.
#[derive(Debug, Args)]
pub(crate) struct ConfigArgs {
    /// The JSON configuration file: a schema file (`Schema::to_json`, written from Rust
    /// entities) or a TypeScript Entity Manager configuration. On a table whose stamp carries
    /// its schema, leave it out (the table's is used), or give it to check it against the
    /// table's: a difference is a finding (exit 3) naming what differs.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The configuration file, positionally (the older form of `--config`).
    #[arg(value_name = "CONFIG", hide = true, conflicts_with = "config")]
    config_file: Option<PathBuf>,
    #[command(flatten)]
    space: SpaceArg,
}

impl ConfigArgs {
    /// The configuration file named, if any.
    pub(crate) fn given(&self) -> Option<&Path> {
        self.config.as_deref().or(self.config_file.as_deref())
    }

    /// The configuration file named (`config.json` when none is, for messages).
    pub(crate) fn path(&self) -> &Path {
        self.given().unwrap_or_else(|| Path::new("config.json"))
    }

    /// The configuration, loaded and checked: required (`--config`) where no table is named.
    pub(crate) fn load(&self) -> Result<Schema, Failure> {
        let path = self.given().ok_or_else(|| {
            Failure::Input(
                "--config FILE is required here: a schema file (`Schema::to_json`) or a TypeScript Entity Manager configuration".to_owned(),
            )
        })?;
        load(path, &self.space, None)
    }

    /// The schema of a command on `table`: the one the table's stamp carries, or `--config`'s.
    ///
    /// - `--key-profile` (or `--shard-space`) that disagrees with the table's stamp is refused
    ///   (exit 2): the table says how its keys are made.
    /// - Without `--config`, the schema the stamp carries; a table whose stamp carries none
    ///   (stamped by an older release, or not stamped) needs `--config` (exit 2 saying so).
    /// - With `--config`, that configuration (a TypeScript one under the table's profile
    ///   unless one is named); when the stamp carries a schema too, they must make the same
    ///   keys and indexes: a difference is a finding (exit 3) naming each.
    pub(crate) fn resolve(&self, table: &str, c: &Connection) -> Result<Schema, Failure> {
        // the stamp read with the configuration's key names (one `GetItem`; its profile does
        // not change them), else with the table's
        let keys = self
            .given()
            .and_then(|path| load(path, &self.space, None).ok())
            .and_then(|schema| TableDefinition::from_schema(&schema).ok());
        let stamp = table_stamp(table, c, keys)?;
        let stamped = stamp.as_ref().and_then(TableStamp::profile);
        if let (Some(stamp), true) = (&stamp, self.profile_named()) {
            let named = self.space.profile();
            if stamped != Some(named) {
                return Err(Failure::Input(format!(
                    "table {table} is stamped with {}, but --key-profile names `{named}`: the table says how its keys are made, so leave --key-profile out (to change the table's profile, migrate its records and stamp it again with `table stamp --force`)",
                    stamp.describe()
                )));
            }
        }
        let carried = match stamp.as_ref().and_then(TableStamp::schema) {
            Some(Ok(schema)) => Some(schema),
            Some(Err(e)) => return Err(Failure::Config(e)),
            None => None,
        };
        let Some(path) = self.given() else {
            return carried.ok_or_else(|| {
                let why = if stamp.is_some() {
                    "its stamp carries no schema (it was stamped by an older release, or its schema has a transcode of its own)"
                } else {
                    "it has no stamp"
                };
                Failure::Input(format!(
                    "table {table} does not describe itself: {why}; pass --config FILE, and record the schema in the table with `entity-manager table stamp --table {table} --config FILE`"
                ))
            });
        };
        let loaded = load(path, &self.space, stamped)?;
        let Some(carried) = carried else {
            return Ok(loaded);
        };
        let differences = carried.differences(&loaded);
        if differences.is_empty() {
            return Ok(loaded);
        }
        if JSON.get().copied().unwrap_or(false) {
            let found: Vec<Value> = differences
                .iter()
                .map(|d| json!({ "path": d.path, "table": d.left, "config": d.right }))
                .collect();
            outln!(
                "{}",
                json!({ "ok": false, "finding": "schema", "table": table, "config": path.display().to_string(), "differences": found })
            );
        }
        let listed: Vec<String> = differences.iter().map(|d| format!("  {d}")).collect();
        Err(Failure::Findings(format!(
            "{} differs from the schema table {table} carries in its stamp in {} place(s) (table ≠ config):\n{}\nleave --config out to use the table's schema, or stamp the table with this configuration (`entity-manager table stamp --table {table} --config {}`) once its records are keyed by it",
            path.display(),
            differences.len(),
            listed.join("\n"),
            path.display()
        )))
    }

    /// Whether `--key-profile` or `--shard-space` was given.
    pub(crate) fn profile_named(&self) -> bool {
        self.space.key_profile.is_some() || self.space.shard_space.is_some()
    }

    /// The configuration, loaded with `profile` whatever the flags say (a schema file names
    /// its own).
    pub(crate) fn load_with(&self, profile: Profile) -> Result<Schema, Failure> {
        load(
            self.path(),
            &SpaceArg {
                key_profile: Some(match profile {
                    Profile::Native => ProfileArg::Native,
                    Profile::Npm6_14 => ProfileArg::Npm6_14,
                    Profile::Upstream8 => ProfileArg::Upstream8,
                }),
                shard_space: None,
            },
            None,
        )
    }
}

#[derive(Debug, Args)]
pub(crate) struct TableArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArgs,
    /// The table name.
    #[arg(long)]
    pub(crate) table: String,
    #[command(flatten)]
    pub(crate) connection: Connection,
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
pub(crate) enum Failure {
    /// Bad input: exit 2.
    Input(String),
    /// The operation failed: exit 1.
    Operation(String),
    /// The operation failed: exit 1; `detail` (the error chain) is shown with `-v`.
    Detailed { message: String, detail: String },
    /// The configuration is invalid: exit 1, with every problem.
    Config(ConfigError),
    /// The command printed its report, which found something: exit 3 (in text mode the
    /// message goes to stderr; `--json` output is the report alone).
    Findings(String),
    /// The command printed its report, which says the job is unfinished (`report merge`): exit
    /// 1, a failure to finish rather than a finding (in text mode the message goes to stderr;
    /// `--json` output is the report alone).
    Unfinished(String),
    /// Ctrl-C or SIGTERM: exit 130, with how to resume.
    Interrupted(String),
    /// Stdout was closed by its reader (`| head -1`): exit 0, quietly.
    ClosedPipe,
}

impl Failure {
    fn code(&self) -> u8 {
        match self {
            Self::ClosedPipe => 0,
            Self::Input(_) => 2,
            Self::Operation(_) | Self::Detailed { .. } | Self::Config(_) | Self::Unfinished(_) => 1,
            Self::Findings(_) => 3,
            Self::Interrupted(_) => 130,
        }
    }

    /// The one-line message.
    pub(crate) fn message(&self) -> String {
        match self {
            Self::Input(m)
            | Self::Operation(m)
            | Self::Findings(m)
            | Self::Unfinished(m)
            | Self::Interrupted(m)
            | Self::Detailed { message: m, .. } => m.clone(),
            Self::Config(e) => format!("the configuration has {} problem(s)", e.problems.len()),
            Self::ClosedPipe => "stdout closed".to_owned(),
        }
    }
}

/// `-v`: show the error chain with a failure.
static VERBOSE: OnceLock<bool> = OnceLock::new();
/// `--json`: machine-readable output (a finding found while loading the schema prints its
/// report as JSON).
static JSON: OnceLock<bool> = OnceLock::new();

fn main() -> ExitCode {
    let cli = Cli::parse();
    let json = cli.json;
    let _ = VERBOSE.set(cli.verbose);
    let _ = JSON.set(cli.json);
    progress::set_quiet(cli.quiet);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            report(&failure, json);
            ExitCode::from(failure.code())
        }
    }
}

fn report(failure: &Failure, json: bool) {
    match failure {
        Failure::ClosedPipe => return,
        Failure::Findings(message) | Failure::Unfinished(message) => {
            if !json {
                say!("error: {message}");
            }
            return;
        }
        _ => {}
    }
    let kind = match failure {
        Failure::Input(_) => "input",
        Failure::Config(_) => "config",
        Failure::Interrupted(_) => "interrupted",
        _ => "operation",
    };
    let problems: Vec<Value> = match failure {
        Failure::Config(e) => e
            .problems
            .iter()
            .map(|p| json!({ "path": p.path, "message": p.message }))
            .collect(),
        _ => Vec::new(),
    };
    let verbose = VERBOSE.get().copied().unwrap_or(false);
    let detail = match failure {
        Failure::Detailed { detail, .. } if verbose && !detail.is_empty() => Some(detail.as_str()),
        _ => None,
    };
    if json {
        let mut out = json!({ "ok": false, "error": kind, "message": failure.message(), "problems": problems });
        if let Some(detail) = detail {
            out["detail"] = json!(detail);
        }
        // a closed stdout: nothing more to say
        let _ = out::line(format_args!("{out}"));
    } else {
        say!("error: {}", failure.message());
        if let Failure::Config(e) = failure {
            for p in &e.problems {
                say!(
                    "  {}: {}",
                    if p.path.is_empty() { "(root)" } else { &p.path },
                    p.message
                );
            }
        }
        match detail {
            Some(detail) => say!("detail: {detail}"),
            None if matches!(failure, Failure::Detailed { .. }) => {
                say!("(run with -v for the AWS SDK's detail)");
            }
            None => {}
        }
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Validate { config } => {
            let schema = config.load()?;
            if cli.json {
                let entities: Vec<&str> = schema.entities().iter().map(|e| &*e.token).collect();
                outln!("{}", json!({ "ok": true, "entities": entities }));
            } else {
                outln!(
                    "{}: valid ({} entities)",
                    config.path().display(),
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
        Command::Get(args) => records::get(&args, cli.json),
        Command::Query(args) => records::query(&args, cli.json),
        Command::Import(args) => records::import(&args, cli.json),
        Command::Put(args) => records::put(&args, cli.json),
        Command::Delete(args) => records::delete(&args, cli.json),
        Command::Report { action } => job_report(&action, cli.json),
        Command::Console(args) => console::console(&args),
    }
}

/// The configuration file at `path`: a schema file (which names its key profile: a
/// disagreeing `--key-profile` is refused), or a TypeScript configuration loaded under the
/// profile named, else `fallback` (the table's), else `npm-6.14`.
fn load(path: &Path, space: &SpaceArg, fallback: Option<Profile>) -> Result<Schema, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Input(format!("cannot read {}: {e}", path.display())))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| Failure::Input(format!("{} is not JSON: {e}", path.display())))?;
    if !Schema::is_schema_file(&value) {
        let profile = match (space.key_profile, space.shard_space, fallback) {
            (None, None, Some(table)) => table,
            _ => space.profile(),
        };
        return Schema::from_ts_config(&value, profile).map_err(Failure::Config);
    }
    let schema = Schema::from_json(&value).map_err(Failure::Config)?;
    let t = schema.table();
    let own = Profile::matching(t.key_mode, t.shard_space, t.numeric_hash, t.shard_hash);
    let named = space.key_profile.is_some() || space.shard_space.is_some();
    if named && own != Some(space.profile()) {
        return Err(Failure::Input(format!(
            "{} is a schema file of key profile {}, but --key-profile names `{}`: a schema file says how its keys are made, so leave --key-profile out",
            path.display(),
            own.map_or_else(|| "(none named)".to_owned(), |p| format!("`{p}`")),
            space.profile()
        )));
    }
    Ok(schema)
}

/// The stamp of `table` as it stands, read with only its name (its key attribute names come
/// from `DescribeTable`): `None` for a table without one, or whose keys are not strings (no
/// stamp fits them).
///
/// Read once a run. With `keys` (the configuration's table layout), first with its key names:
/// one `GetItem`, no `DescribeTable` (which DynamoDB Local answers by counting the table's
/// items); when the table's keys are not those, with the names `DescribeTable` gives.
fn table_stamp(
    table: &str,
    c: &Connection,
    keys: Option<TableDefinition>,
) -> Result<Option<TableStamp>, Failure> {
    c.stamp(table, || {
        if let Some(keys) = keys {
            match runtime()?.block_on(c.store(keys, table)?.table_stamp()) {
                Ok(found) => return Ok(found),
                // keys of other names or types: read with the table's own, below
                Err(e) if e.kind() == StoreErrorKind::Validation => {}
                Err(e) => {
                    return Err(connection::explain("reading the table's stamp", table, &e));
                }
            }
        }
        read_table_stamp(table, c)
    })
}

/// [`table_stamp`], read with the key names of the table's `DescribeTable`.
fn read_table_stamp(table: &str, c: &Connection) -> Result<Option<TableStamp>, Failure> {
    use aws_sdk_dynamodb::types::{KeyType as Role, ScalarAttributeType};
    use entity_manager::store::KeyType;
    let Some(live) = c.describe(table)? else {
        return Ok(None);
    };
    let key = |role: Role| {
        let name = live
            .key_schema()
            .iter()
            .find(|k| *k.key_type() == role)?
            .attribute_name();
        let string = live
            .attribute_definitions()
            .iter()
            .any(|d| d.attribute_name() == name && *d.attribute_type() == ScalarAttributeType::S);
        string.then(|| name.to_owned())
    };
    let (Some(hash), Some(range)) = (key(Role::Hash), key(Role::Range)) else {
        return Ok(None);
    };
    let store = c.store(
        TableDefinition::new((hash, KeyType::S), (range, KeyType::S)),
        table,
    )?;
    runtime()?
        .block_on(store.table_stamp())
        .map_err(|e| connection::explain("reading the table's stamp", table, &e))
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
        let items: Vec<Value> = match out::parse_json(&text) {
            Ok(Value::Array(items)) => items,
            Ok(_) => {
                return Err(Failure::Input(
                    "stdin is not a JSON array of items".to_owned(),
                ));
            }
            Err(e) => return Err(Failure::Input(format!("stdin: {e}"))),
        };
        return Ok((items, true));
    }
    let mut items = Vec::new();
    for (n, line) in text.as_bytes().lines().enumerate() {
        let line = line.map_err(|e| Failure::Input(format!("cannot read stdin: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let item =
            out::parse_json(&line).map_err(|e| Failure::Input(format!("line {}: {e}", n + 1)))?;
        items.push(item);
    }
    Ok((items, false))
}

pub(crate) fn store(args: &TableArgs) -> Result<DynamoStore, Failure> {
    let schema = args.config.resolve(&args.table, &args.connection)?;
    let definition =
        TableDefinition::from_schema(&schema).map_err(|e| Failure::Operation(e.to_string()))?;
    args.connection.store(definition, &args.table)
}

/// The store of `table`, laid out as `schema`, where the connection says. The table must
/// exist (checked here, before any job starts). The store refuses writes when the table is
/// stamped with another profile; a table without a stamp, or stamped with another profile, is
/// reported on stderr here.
pub(crate) fn connect(
    schema: &Schema,
    table: &str,
    c: &Connection,
) -> Result<DynamoStore, Failure> {
    let definition =
        TableDefinition::from_schema(schema).map_err(|e| Failure::Operation(e.to_string()))?;
    let store = c.store(definition.clone(), table)?;
    // the table's stamp (read once a run: the schema's resolution may have read it), whose
    // read says that the table exists; when it cannot be read, `DescribeTable` says whether
    // the table exists (the stamp is then not judged, as before)
    let Ok(found) = table_stamp(table, c, Some(definition)) else {
        c.describe(table)?;
        return Ok(store);
    };
    if let Some(ours) = store.definition().stamp.as_ref() {
        match found {
            Some(stamp) => {
                if let Some(why) = stamp.refuses(ours) {
                    say!("warning: table {table}: {why}");
                }
            }
            // no stamp: what the records show (the store refuses writes they disagree with)
            None => {
                if let Ok(inference) = runtime()?.block_on(store.infer_profile()) {
                    warn_unstamped(table, ours, &inference);
                }
            }
        }
    }
    Ok(store)
}

/// DynamoDB's estimate of the table's item count (`DescribeTable`, refreshed about every six
/// hours; read once a run), for a progress total; `None` when it cannot say.
pub(crate) fn item_count(c: &Connection, table: &str) -> Option<u64> {
    c.describe(table)
        .ok()
        .flatten()?
        .item_count()
        .and_then(|n| u64::try_from(n).ok())
}

/// The warning of the data commands on a table without a stamp: what its records show, and
/// the profile they show as the fix (never this run's own by default).
fn warn_unstamped(table: &str, ours: &TableStamp, inference: &Inference) {
    let mine = ours.profile();
    let stamp = |profile: &str| {
        format!(
            "`entity-manager table stamp --table {table} --config <config.json> --key-profile {profile}`"
        )
    };
    match (inference, inference.shown()) {
        // an empty table: the first write stamps it
        (Inference::Empty { .. }, _) => {}
        (_, Some(shown)) if Some(shown) == mine => {}
        (_, Some(shown)) => say!(
            "warning: table {table} has no stamp, and {inference}; this run makes keys with {}, so its writes are refused: use --key-profile {shown}, and record it in the table with {}",
            ours.describe(),
            stamp(shown.as_str())
        ),
        (Inference::Reproduced { .. }, None) if mine.is_some_and(|m| inference.admits(m)) => say!(
            "warning: table {table} has no stamp, and {inference}; stamp it with the profile of the services that wrote it, {}",
            stamp("<profile>")
        ),
        _ => say!(
            "warning: table {table} has no stamp, and {inference}; writes of this run are refused until the table is stamped with the profile of the services that wrote it, {}",
            stamp("<profile>")
        ),
    }
}

/// The process's one runtime (a current-thread tokio runtime): every command's calls, and the
/// Ctrl-C listener, run on it.
pub(crate) fn runtime() -> Result<&'static tokio::runtime::Runtime, Failure> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Failure::Operation(format!("cannot start the async runtime: {e}")))
}
