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
    /// Records how the table's keys are made (the key profile of `--key-profile` or
    /// `--shard-space`, and a fingerprint of the configuration) in the table, for a table created without it (by a TypeScript
    /// service, or before stamps): from then on a service with another profile cannot write to
    /// it. `table create` stamps the tables it creates.
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

/// The table definition of a configuration with a settings file's settings applied.
fn definition(config: &ConfigArgs, settings: Option<&Path>) -> Result<TableDefinition, Failure> {
    let schema = config.load()?;
    let definition =
        TableDefinition::from_schema(&schema).map_err(|e| Failure::Operation(e.to_string()))?;
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

/// The store of the table, laid out as the configuration plus the settings.
fn settings_store(args: &SettingsArgs) -> Result<DynamoStore, Failure> {
    let definition = definition(&args.table.config, args.settings.as_deref())?;
    let store = store(&args.table)?;
    // The connection (endpoint, credentials, timeouts) of `store`, with the fuller definition.
    Ok(DynamoStore::new(
        store.client().clone(),
        store.table_name().to_owned(),
        definition,
    ))
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
            let definition = definition(&config, settings.as_deref())?;
            let resource = definition
                .cloudformation(table.as_deref())
                .map_err(|e| text(&e))?;
            let text = serde_json::to_string_pretty(&resource).map_err(|e| text(&e))?;
            outln!("{text}");
            Ok(())
        }
        TableAction::Create(args) => {
            let store = settings_store(&args)?;
            runtime()?
                .block_on(store.create_table())
                .map_err(|e| explain("table create", &args.table.table, &e))?;
            done(json, "created", &args.table.table)
        }
        TableAction::Stamp { table, force } => {
            let store = store(&table)?;
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
            let store = store(&args)?;
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
            let store = settings_store(&args)?;
            let report = runtime()?
                .block_on(store.drift())
                .map_err(|e| explain("table drift", &args.table.table, &e))?;
            print_drift(&report, &args.table.table, json)?;
            if report.is_clean() {
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

fn print_drift(report: &DriftReport, table: &str, json: bool) -> Result<(), Failure> {
    let unchecked: Vec<&str> = report.unchecked.iter().map(|s| s.name()).collect();
    if json {
        let drifts: Vec<Value> = report
            .drifts
            .iter()
            .map(|d| json!({ "kind": d.kind(), "message": d.to_string() }))
            .collect();
        outln!(
            "{}",
            json!({ "ok": report.is_clean(), "table": table, "drift": drifts, "unchecked": unchecked })
        );
        return Ok(());
    }
    if report.is_clean() {
        outln!("table {table} matches its definition");
    } else {
        outln!(
            "table {table} differs from its definition in {} way(s):",
            report.drifts.len()
        );
        for d in &report.drifts {
            outln!("  {}: {d}", d.kind());
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
        "fingerprint": stamp.fingerprint,
        "entities": stamp.entities,
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
    Ok(described)
}
