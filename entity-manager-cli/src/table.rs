//! `table create|delete|describe|drift|stamp|cloudformation`.
//!
//! The operational settings of the table (billing and capacities, LSIs, TTL, stream,
//! point-in-time recovery, deletion protection, tags) come from a small JSON settings file,
//! `--settings FILE`, which `create`, `drift` and `cloudformation` all read: one file checked
//! in beside the configuration is the one definition every command agrees on, where a dozen
//! flags would have to be repeated identically on each.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use entity_manager::model::{Profile, Projection};
use entity_manager::store::{
    Billing, Capacity, DriftReport, DynamoStore, KeyType, LiveTable, LocalIndex, StreamView,
    TableDefinition, TableStamp,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::connection::explain;
use crate::{ConfigArgs, Failure, TableArgs, runtime, store};
use entity_manager::Schema;

#[derive(Debug, Subcommand)]
pub(crate) enum TableAction {
    /// Creates the table, its GSIs and the settings of `--settings`, and waits until it is
    /// active.
    Create(SettingsArgs),
    /// Deletes the table.
    Delete(TableArgs),
    /// Describes the live table: status, keys, indexes, billing, TTL, stream, point-in-time
    /// recovery, deletion protection, tags (`"unreported"` where the endpoint cannot say).
    Describe(TableArgs),
    /// Compares the live table with the configuration and `--settings`: exit 0 when they
    /// match, 1 with the list of differences.
    Drift(SettingsArgs),
    /// Records how the table's keys are made (a key profile and a fingerprint of the
    /// configuration) in the table, for a table created without it (by a TypeScript service,
    /// or before stamps): from then on a service with another profile cannot write to it.
    /// Without `--key-profile` (or `--shard-space`) the profile is the one the table shows:
    /// for a table without a stamp, the one its records' keys were made with (refused when
    /// they cannot tell); with one, refused when the records show another (unless `--force`).
    /// `table create` stamps the tables it creates.
    Stamp {
        #[command(flatten)]
        table: TableArgs,
        /// Replace a stamp with other settings (only after migrating every record to them).
        #[arg(long)]
        force: bool,
    },
    /// Prints the `AWS::DynamoDB::Table` CloudFormation resource (no network).
    Cloudformation {
        #[command(flatten)]
        config: ConfigArgs,
        /// The table name to put in the resource (none: CloudFormation names it).
        #[arg(long)]
        table: Option<String>,
        /// The table-settings JSON file (see `table create --help`).
        #[arg(long)]
        settings: Option<PathBuf>,
    },
}

/// The store `table stamp` stamps with: of the profile named (`--key-profile`,
/// `--shard-space`), else of the one the table shows: its stamp's, or for a table without one
/// the profile its records show. Without a profile named, a table whose records cannot tell is
/// refused (exit 2), saying what they show.
fn stamp_store(args: &TableArgs) -> Result<entity_manager::store::DynamoStore, Failure> {
    if args.config.given().is_none() {
        // stamped again with the schema its stamp carries
        return store(args);
    }
    // not `store`: a profile other than the stamp's is how a migrated table is stamped anew
    let schema = args.config.load()?;
    let definition =
        TableDefinition::from_schema(&schema).map_err(|e| Failure::Operation(e.to_string()))?;
    let named = args.connection.store(definition, &args.table)?;
    if args.config.profile_named() {
        return Ok(named);
    }
    let what = "table stamp";
    let rt = runtime()?;
    let found = rt
        .block_on(named.table_stamp())
        .map_err(|e| explain(what, &args.table, &e))?;
    let shown = if let Some(stamp) = found {
        stamp.profile().ok_or_else(|| {
            Failure::Input(format!(
                "table {} is stamped with {}, which no --key-profile names; stamp it with --key-profile and --force",
                args.table,
                stamp.describe()
            ))
        })?
    } else {
        let inference = rt
            .block_on(named.infer_profile())
            .map_err(|e| explain(what, &args.table, &e))?;
        inference.shown().ok_or_else(|| {
            Failure::Input(format!(
                "{what}: table {} has no stamp, and {inference}; name the profile of the services that wrote it with --key-profile",
                args.table
            ))
        })?
    };
    let schema = args.config.load_with(shown)?;
    let definition =
        TableDefinition::from_schema(&schema).map_err(|e| Failure::Operation(e.to_string()))?;
    args.connection.store(definition, &args.table)
}

#[derive(Debug, Args)]
pub(crate) struct SettingsArgs {
    #[command(flatten)]
    table: TableArgs,
    /// A JSON table-settings file: `{"billing": {"mode": "PROVISIONED", "read": 5, "write": 5,
    /// "indexes": {"<gsi>": {"read": 1, "write": 1}}}, "localIndexes": [{"name": "byScore",
    /// "rangeKey": "score", "type": "N", "projection": "ALL" | "KEYS_ONLY" | ["attr", …]}],
    /// "ttlAttribute": "expiresAt", "stream": "NEW_AND_OLD_IMAGES", "pointInTimeRecovery":
    /// true, "deletionProtection": true, "tags": {"team": "core"}}`; every key optional.
    #[arg(long)]
    settings: Option<PathBuf>,
}

/// The table-settings file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Settings {
    billing: Option<BillingSettings>,
    #[serde(default)]
    local_indexes: Vec<LocalIndexSettings>,
    ttl_attribute: Option<String>,
    stream: Option<String>,
    #[serde(default)]
    point_in_time_recovery: bool,
    #[serde(default)]
    deletion_protection: bool,
    #[serde(default)]
    tags: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "mode", deny_unknown_fields)]
enum BillingSettings {
    #[serde(rename = "PAY_PER_REQUEST")]
    PayPerRequest,
    #[serde(rename = "PROVISIONED")]
    Provisioned {
        read: i64,
        write: i64,
        #[serde(default)]
        indexes: BTreeMap<String, CapacitySettings>,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CapacitySettings {
    read: i64,
    write: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct LocalIndexSettings {
    name: String,
    range_key: String,
    #[serde(rename = "type")]
    key_type: KeyTypeSettings,
    #[serde(default)]
    projection: ProjectionSettings,
}

#[derive(Clone, Copy, Debug, Deserialize)]
enum KeyTypeSettings {
    S,
    N,
    B,
}

#[derive(Debug, Default, Deserialize)]
#[serde(untagged)]
enum ProjectionSettings {
    #[default]
    #[serde(skip)]
    All,
    Named(String),
    Include(Vec<String>),
}

/// The table definition of a schema with a settings file's settings applied.
fn definition(schema: &Schema, settings: Option<&Path>) -> Result<TableDefinition, Failure> {
    let definition =
        TableDefinition::from_schema(schema).map_err(|e| Failure::Operation(e.to_string()))?;
    let Some(path) = settings else {
        return Ok(definition);
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Input(format!("cannot read {}: {e}", path.display())))?;
    let settings: Settings = serde_json::from_str(&text).map_err(|e| {
        Failure::Input(format!(
            "{} is not a table-settings file: {e}",
            path.display()
        ))
    })?;
    let definition = apply(definition, settings)
        .map_err(|m| Failure::Input(format!("{}: {m}", path.display())))?;
    definition
        .validate()
        .map_err(|e| Failure::Operation(e.to_string()))?;
    Ok(definition)
}

fn apply(mut def: TableDefinition, settings: Settings) -> Result<TableDefinition, String> {
    match settings.billing {
        None | Some(BillingSettings::PayPerRequest) => {}
        Some(BillingSettings::Provisioned {
            read,
            write,
            indexes,
        }) => {
            def = def.with_billing(Billing::Provisioned { read, write });
            for (name, c) in indexes {
                let Some(gsi) = def.indexes.iter_mut().find(|g| g.name == name) else {
                    return Err(format!(
                        "`billing.indexes` names GSI `{name}`, which the configuration does not define"
                    ));
                };
                *gsi = gsi.clone().capacity(Capacity::new(c.read, c.write));
            }
        }
    }
    for lsi in settings.local_indexes {
        let key_type = match lsi.key_type {
            KeyTypeSettings::S => KeyType::S,
            KeyTypeSettings::N => KeyType::N,
            KeyTypeSettings::B => KeyType::B,
        };
        let projection = match lsi.projection {
            ProjectionSettings::All => Projection::All,
            ProjectionSettings::Named(name) => match name.as_str() {
                "ALL" => Projection::All,
                "KEYS_ONLY" => Projection::KeysOnly,
                other => {
                    return Err(format!(
                        "local index `{}`: projection `{other}` is not `ALL`, `KEYS_ONLY` or a list of attributes",
                        lsi.name
                    ));
                }
            },
            ProjectionSettings::Include(names) => Projection::Include(
                names
                    .into_iter()
                    .map(std::borrow::Cow::Owned)
                    .collect::<Vec<_>>()
                    .into(),
            ),
        };
        let hash = def.hash_key.clone();
        def = def.with_local_index(
            LocalIndex::new(lsi.name, hash, (lsi.range_key, key_type)).projection(projection),
        );
    }
    if let Some(ttl) = settings.ttl_attribute {
        def = def.with_ttl(ttl);
    }
    if let Some(stream) = settings.stream {
        let view = StreamView::from_name(&stream).ok_or_else(|| {
            format!(
                "stream `{stream}` is not one of {}",
                StreamView::ALL.map(StreamView::as_str).join(", ")
            )
        })?;
        def = def.with_stream(view);
    }
    def = def
        .with_point_in_time_recovery(settings.point_in_time_recovery)
        .with_deletion_protection(settings.deletion_protection);
    for (k, v) in settings.tags {
        def = def.with_tag(k, v);
    }
    Ok(def)
}

/// The store of the table, laid out as the schema plus the settings: `--config`'s for a table
/// to create, else the table's own ([`ConfigArgs::resolve`](crate::ConfigArgs::resolve)).
fn settings_store(args: &SettingsArgs, create: bool) -> Result<DynamoStore, Failure> {
    let table = &args.table;
    let schema = if create {
        table.config.load()?
    } else {
        table.config.resolve(&table.table, &table.connection)?
    };
    let definition = definition(&schema, args.settings.as_deref())?;
    table.connection.store(definition, &table.table)
}

fn text(e: &impl ToString) -> Failure {
    Failure::Operation(e.to_string())
}

pub(crate) fn table(action: TableAction, json: bool) -> Result<(), Failure> {
    match action {
        TableAction::Cloudformation {
            config,
            table,
            settings,
        } => {
            let definition = definition(&config.load()?, settings.as_deref())?;
            let resource = definition
                .cloudformation(table.as_deref())
                .map_err(|e| text(&e))?;
            let text = serde_json::to_string_pretty(&resource).map_err(|e| text(&e))?;
            outln!("{text}");
            Ok(())
        }
        TableAction::Create(args) => {
            let store = settings_store(&args, true)?;
            runtime()?
                .block_on(store.create_table())
                .map_err(|e| explain("table create", &args.table.table, &e))?;
            done(json, "created", &args.table.table)
        }
        TableAction::Stamp { table, force } => {
            let store = stamp_store(&table)?;
            let stamp = runtime()?
                .block_on(store.stamp_table(force))
                .map_err(|e| explain("table stamp", &table.table, &e))?;
            if json {
                outln!(
                    "{}",
                    json!({ "ok": true, "table": table.table, "action": "stamped", "stamp": stamp_json(&stamp) })
                );
            } else {
                outln!(
                    "table {} stamped with {}, fingerprint {}",
                    table.table,
                    stamp.describe(),
                    stamp.fingerprint
                );
            }
            Ok(())
        }
        TableAction::Delete(args) => {
            // deleting needs no schema: a `--config` is not checked against the table's
            let store = if args.config.given().is_some() {
                let schema = args.config.load()?;
                let definition = TableDefinition::from_schema(&schema)
                    .map_err(|e| Failure::Operation(e.to_string()))?;
                args.connection.store(definition, &args.table)?
            } else {
                store(&args)?
            };
            runtime()?
                .block_on(store.delete_table())
                .map_err(|e| explain("table delete", &args.table, &e))?;
            done(json, "deleted", &args.table)
        }
        TableAction::Describe(args) => {
            let store = store(&args)?;
            let described = runtime()?.block_on(describe(&store))?;
            if json {
                outln!("{described}");
            } else {
                let text = serde_json::to_string_pretty(&described).map_err(|e| text(&e))?;
                outln!("{text}");
            }
            Ok(())
        }
        TableAction::Drift(args) => {
            let store = settings_store(&args, false)?;
            let report = runtime()?
                .block_on(store.drift())
                .map_err(|e| explain("table drift", &args.table.table, &e))?;
            let found = runtime()?
                .block_on(store.table_stamp())
                .map_err(|e| explain("table drift", &args.table.table, &e))?;
            let (state, message) = runtime()?.block_on(stamp_state(&store, found.as_ref()));
            let stamp = (state != "as-configured").then_some((state, message.as_str()));
            print_drift(&report, stamp, &args.table.table, json)?;
            if report.is_clean() && stamp.is_none() {
                Ok(())
            } else {
                // exit 3: a finding (the differences are the output), not a failure to check
                Err(Failure::Findings(format!(
                    "table {} differs from its definition",
                    args.table.table
                )))
            }
        }
    }
}

/// The drift report, and the stamp's state when it is not as configured (`stamp`: the state
/// and its message), as one more difference of kind `stamp`.
fn print_drift(
    report: &DriftReport,
    stamp: Option<(&str, &str)>,
    table: &str,
    json: bool,
) -> Result<(), Failure> {
    let unchecked: Vec<&str> = report.unchecked.iter().map(|s| s.name()).collect();
    let clean = report.is_clean() && stamp.is_none();
    if json {
        let mut drifts: Vec<Value> = report
            .drifts
            .iter()
            .map(|d| json!({ "kind": d.kind(), "message": d.to_string() }))
            .collect();
        if let Some((state, message)) = stamp {
            drifts.push(json!({ "kind": "stamp", "state": state, "message": message }));
        }
        outln!(
            "{}",
            json!({ "ok": clean, "table": table, "drift": drifts, "unchecked": unchecked })
        );
        return Ok(());
    }
    if clean {
        outln!("table {table} matches its definition");
    } else {
        outln!(
            "table {table} differs from its definition in {} way(s):",
            report.drifts.len() + usize::from(stamp.is_some())
        );
        for d in &report.drifts {
            outln!("  {}: {d}", d.kind());
        }
        if let Some((state, message)) = stamp {
            outln!("  stamp ({state}): {message}");
        }
    }
    for s in &report.unchecked {
        outln!("  not checked: {s} (the endpoint cannot report it)");
    }
    Ok(())
}

fn stamp_json(stamp: &TableStamp) -> Value {
    json!({
        "profile": stamp.profile().map(Profile::as_str),
        "keyMode": stamp.key_mode.as_str(),
        "shardSpace": stamp.shard_space.as_str(),
        "numericHash": stamp.numeric_hash.as_str(),
        "shardHash": stamp.shard_hash.as_str(),
        "fingerprint": stamp.fingerprint,
        "entities": stamp.entities,
        // the schema file the table carries (`null`: none; `--config` is then needed)
        "schema": stamp
            .schema_json
            .as_deref()
            .and_then(|text| serde_json::from_str::<Value>(text).ok()),
    })
}

pub(crate) fn done(json: bool, what: &str, table: &str) -> Result<(), Failure> {
    if json {
        outln!("{}", json!({ "ok": true, "table": table, "action": what }));
    } else {
        outln!("table {table} {what}");
    }
    Ok(())
}

fn projection_json(p: &Projection) -> Value {
    match p {
        Projection::All => json!("ALL"),
        Projection::KeysOnly => json!("KEYS_ONLY"),
        Projection::Include(names) => json!({ "INCLUDE": names }),
    }
}

fn capacity_json(c: Option<Capacity>) -> Value {
    c.map_or(Value::Null, |c| json!({ "read": c.read, "write": c.write }))
}

/// The settings of a live table; `"unreported"` for what the endpoint could not say.
fn settings_json(live: &LiveTable) -> Value {
    use entity_manager::store::Setting;
    let def = &live.definition;
    let unreported = |s: Setting, v: Value| {
        if live.unreported.contains(&s) {
            json!("unreported")
        } else {
            v
        }
    };
    let local: Vec<Value> = def
        .local_indexes
        .iter()
        .map(|l| {
            json!({
                "name": l.name,
                "keys": [
                    { "attribute": l.hash_key.name, "type": "HASH" },
                    { "attribute": l.range_key.name, "type": "RANGE" },
                ],
                "projection": projection_json(&l.projection),
            })
        })
        .collect();
    json!({
        "billing": { "mode": def.billing.mode(), "capacity": capacity_json(def.billing.capacity()) },
        "localIndexes": local,
        "ttlAttribute": unreported(Setting::TimeToLive, json!(def.ttl_attribute)),
        "stream": def.stream.map(StreamView::as_str),
        "pointInTimeRecovery": unreported(Setting::PointInTimeRecovery, json!(def.point_in_time_recovery)),
        "deletionProtection": def.deletion_protection,
        "tags": unreported(Setting::Tags, json!(def.tags)),
    })
}

pub(crate) async fn describe(store: &DynamoStore) -> Result<Value, Failure> {
    let out = store
        .client()
        .describe_table()
        .table_name(store.table_name())
        .send()
        .await
        .map_err(|e| explain("table describe", store.table_name(), &e))?;
    let Some(table) = out.table() else {
        return Err(Failure::Operation("DescribeTable returned no table".into()));
    };
    let live = store
        .describe_table()
        .await
        .map_err(|e| explain("table describe", store.table_name(), &e))?;
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
            let capacity = g.index_name().and_then(|n| live.definition.index(n)).and_then(|i| live.definition.index_capacity(i));
            json!({
                "name": g.index_name(),
                "keys": keys(g.key_schema()),
                "projection": g.projection().and_then(|p| p.projection_type()).map(aws_sdk_dynamodb::types::ProjectionType::as_str),
                "status": g.index_status().map(aws_sdk_dynamodb::types::IndexStatus::as_str),
                "capacity": capacity_json(capacity),
            })
        })
        .collect();
    let mut described = json!({
        "table": table.table_name(),
        "status": table.table_status().map(aws_sdk_dynamodb::types::TableStatus::as_str),
        "keys": keys(table.key_schema()),
        "indexes": indexes,
        "itemCount": table.item_count(),
    });
    if let (Value::Object(out), Value::Object(settings)) = (&mut described, settings_json(&live)) {
        out.extend(settings);
    }
    let stamp = store
        .table_stamp()
        .await
        .map_err(|e| explain("table describe", store.table_name(), &e))?;
    described["stamp"] = stamp.as_ref().map_or(Value::Null, stamp_json);
    let (state, message) = stamp_state(store, stamp.as_ref()).await;
    described["stampState"] = json!({ "state": state, "message": message });
    Ok(described)
}

/// How the table's stamp stands against the configuration: `as-configured`, `missing` (with
/// what the records show), `other-profile` or `changed-configuration`, and in words.
async fn stamp_state(
    store: &entity_manager::store::DynamoStore,
    found: Option<&TableStamp>,
) -> (&'static str, String) {
    let table = store.table_name();
    let Some(ours) = entity_manager::store::Store::definition(store)
        .stamp
        .as_ref()
    else {
        return ("as-configured", String::new());
    };
    let Some(stamp) = found else {
        let shows = match store.infer_profile().await {
            Ok(inference) => inference.to_string(),
            Err(e) => format!("its records could not be read ({e})"),
        };
        return (
            "missing",
            format!(
                "table {table} has no stamp, and {shows}; writes are judged by the records until it is stamped (`entity-manager table stamp --table {table} --config <config.json>` infers the profile from them)"
            ),
        );
    };
    if let Some(why) = stamp.refuses(ours) {
        return ("other-profile", why);
    }
    let changed = stamp.changed_entities(ours);
    if changed.is_empty() {
        ("as-configured", String::new())
    } else {
        (
            "changed-configuration",
            format!(
                "the key configuration of entities [{}] differs from the one the table was stamped with; if the change is deliberate, stamp the table again (`entity-manager table stamp --force`)",
                changed.join(", ")
            ),
        )
    }
}
