//! `audit`: the records whose hash key disagrees with the schedule; with `--bump`, the dry
//! run of a new shard bump (no table needed).

use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::Args;
use entity_manager::audit::{AuditReport, BumpDryRun, ScheduleCost, audit_job, bump_dry_run};
use entity_manager::job::{JobHeader, JobKind};
use entity_manager::{Schema, ShardBump};
use serde_json::{Value, json};

use crate::job::Run;
use crate::scan::{Parallel, parallel_scan, usage_json, usage_text};
use crate::workers::{JournalFile, worker_json};
use crate::{Connection, Failure, SpaceArg, connect, load, runtime};

#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// The JSON configuration (the current schedule).
    #[arg(long)]
    config: std::path::PathBuf,
    #[command(flatten)]
    space: SpaceArg,
    /// The table name (required for the audit; not for `--bump`).
    #[arg(long)]
    table: Option<String>,
    /// Only this entity (required with `--bump`).
    #[arg(long)]
    entity: Option<String>,
    /// A candidate bump, `timestamp=MS,char-bits=N,chars=N` (repeatable): instead of the
    /// audit, shows the shards per time window and the fan-out of a query under the current
    /// schedule and under the schedule with these bumps (a bump with the timestamp of an
    /// existing one replaces it).
    #[arg(long)]
    bump: Vec<BumpArg>,
    /// With `--bump`: the start of the query window (creation time, ms).
    #[arg(long, default_value_t = 0)]
    window_from: u64,
    /// With `--bump`: the end of the query window (creation time, ms; default: now).
    #[arg(long)]
    window_to: Option<u64>,
    #[command(flatten)]
    parallel: Parallel,
    /// The worker's journal: the position and findings are saved here after every page, and
    /// the audit resumes from it when it exists (kept when the worker owns part of the
    /// segments, for `report merge`; else removed when the audit completes).
    #[arg(long)]
    checkpoint: Option<std::path::PathBuf>,
    /// The endpoint URL (e.g. `http://127.0.0.1:8000` for DynamoDB Local); required for the
    /// audit.
    #[arg(long, env = "DYNAMODB_ENDPOINT")]
    endpoint: Option<String>,
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

/// A `--bump timestamp=…,char-bits=…,chars=…`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BumpArg(ShardBump);

impl FromStr for BumpArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (mut timestamp, mut char_bits, mut chars) = (None, None, None);
        for part in s.split(',') {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}` is not `key=value`"))?;
            let number = |what: &str| -> Result<u64, String> {
                value
                    .trim()
                    .parse()
                    .map_err(|e| format!("{what} `{value}`: {e}"))
            };
            match key.trim() {
                "timestamp" => timestamp = Some(number("timestamp")?),
                "char-bits" | "charBits" => char_bits = Some(number("char-bits")?),
                "chars" => chars = Some(number("chars")?),
                other => {
                    return Err(format!(
                        "unknown key `{other}`; expected timestamp, char-bits, chars"
                    ));
                }
            }
        }
        let small = |v: Option<u64>, what: &str| -> Result<u8, String> {
            let v = v.ok_or_else(|| format!("`{what}=` is missing"))?;
            u8::try_from(v).map_err(|_| format!("{what} {v} is out of range"))
        };
        Ok(Self(ShardBump::new(
            timestamp.ok_or("`timestamp=` is missing")?,
            small(char_bits, "char-bits")?,
            small(chars, "chars")?,
        )))
    }
}

fn u128_json(n: u128) -> Value {
    u64::try_from(n).map_or_else(|_| Value::String(n.to_string()), Value::from)
}

pub(crate) fn run_audit(args: &AuditArgs, json: bool) -> Result<(), Failure> {
    let schema = load(&args.config, &args.space)?;
    if !args.bump.is_empty() {
        return bump(args, &schema, json);
    }
    let table = args.table.as_deref().ok_or_else(|| {
        Failure::Input("the audit needs --table (or --bump for the bump dry run)".to_owned())
    })?;
    let endpoint = args.endpoint.clone().ok_or_else(|| {
        Failure::Input("the audit needs --endpoint (or DYNAMODB_ENDPOINT)".to_owned())
    })?;
    let connection = Connection {
        endpoint,
        region: args.region.clone(),
        access_key_id: args.access_key_id.clone(),
        secret_access_key: args.secret_access_key.clone(),
        timeout: args.timeout,
    };
    let entities = match &args.entity {
        Some(entity) => vec![
            schema
                .entity(entity)
                .map_err(|e| Failure::Input(e.to_string()))?,
        ],
        None => schema
            .entities()
            .iter()
            .map(|e| schema.entity(&e.token))
            .collect::<Result<_, _>>()
            .map_err(|e| Failure::Input(e.to_string()))?,
    };
    let store = args.parallel.limited(connect(&schema, table, &connection)?);
    let scan = parallel_scan(&store, &schema, None, &args.parallel)?;
    let range = args.parallel.range()?;
    let tokens: Vec<&str> = entities.iter().map(|e| &*e.model().token).collect();
    let header = JobHeader::new(
        JobKind::Audit,
        format!("audit {} of table {table}", tokens.join(",")),
        range,
    );
    let file = JournalFile::open(header, "audit", table, args.checkpoint.as_deref())?;
    let mut run = Run::new(None, format!("auditing table {table}"));
    let mut pages = 0u64;
    let outcome = runtime()?.block_on(audit_job(scan, &entities, &file.journal, |_| {
        pages += 1;
        run.tick(format!(
            "auditing table {table}: {pages} pages ({})",
            usage_text(&store.usage())
        ))
    }));
    run.end();
    outcome.map_err(|e| {
        file.stopped(
            &format!("the audit of table {table} failed: {e}"),
            "pages recorded",
        )
    })?;
    let merged = file.journal.report();
    file.complete("audit")?;
    if range.len() != range.total && json {
        eprintln!(
            "{}",
            json!({ "worker": worker_json(&merged, range), "journal": file.path, "usage": usage_json(&store.usage()) })
        );
    }
    let mut report = AuditReport::default();
    report.scanned = merged.tally.scanned;
    report.misplaced = merged.tally.misplaced;
    report.unreadable = merged.tally.unreadable;
    print_audit(table, &report, json)
}

fn print_audit(table: &str, report: &AuditReport, json: bool) -> Result<(), Failure> {
    let scanned: u64 = report.scanned.values().sum();
    if json {
        println!(
            "{}",
            json!({
                "ok": report.is_clean(),
                "table": table,
                "scanned": report.scanned,
                "misplaced": report.misplaced,
                "unreadable": report.unreadable,
            })
        );
    } else {
        println!(
            "audited {scanned} records of table {table}: {} misplaced, {} unreadable",
            report.misplaced.len(),
            report.unreadable.len()
        );
        for m in &report.misplaced {
            println!(
                "  {} {}: stored under {}, the schedule says {}",
                m.entity, m.unique, m.stored, m.expected
            );
        }
        for u in &report.unreadable {
            println!(
                "  {} ({}, {}): {}",
                u.entity, u.hash_key, u.range_key, u.reason
            );
        }
    }
    if report.is_clean() {
        Ok(())
    } else {
        Err(Failure::Findings(format!(
            "{} records have a hash key the schedule does not give them, {} cannot be checked; `migrate --from C.json --to C.json` moves them",
            report.misplaced.len(),
            report.unreadable.len()
        )))
    }
}

fn bump(args: &AuditArgs, schema: &Schema, json: bool) -> Result<(), Failure> {
    let entity = args
        .entity
        .as_deref()
        .ok_or_else(|| Failure::Input("--bump needs --entity".to_owned()))?;
    let entity = schema
        .entity(entity)
        .map_err(|e| Failure::Input(e.to_string()))?;
    let mut candidate: Vec<ShardBump> = entity.model().shard_bumps.to_vec();
    for BumpArg(bump) in &args.bump {
        candidate.retain(|b| b.timestamp != bump.timestamp);
        candidate.push(*bump);
    }
    candidate.sort_by_key(|b| b.timestamp);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let to = args.window_to.unwrap_or(now);
    let plan = bump_dry_run(&entity, &candidate, args.window_from, to)
        .map_err(|e| Failure::Input(e.to_string()))?;
    print_bump(&plan, json);
    Ok(())
}

fn cost_json(cost: &ScheduleCost) -> Value {
    let windows: Vec<Value> = cost
        .windows
        .iter()
        .map(|w| {
            json!({
                "from": w.from,
                "to": w.to,
                "charBits": w.bump.char_bits,
                "chars": w.bump.chars,
                "shards": u128_json(w.shards),
            })
        })
        .collect();
    json!({ "windows": windows, "fanOut": u128_json(cost.fan_out) })
}

fn print_bump(plan: &BumpDryRun, json: bool) {
    if json {
        println!(
            "{}",
            json!({
                "ok": true,
                "entity": plan.entity,
                "shardSpace": format!("{:?}", plan.shard_space).to_lowercase(),
                "window": { "from": plan.window.0, "to": plan.window.1 },
                "current": cost_json(&plan.current),
                "candidate": cost_json(&plan.candidate),
                "reshardsFrom": plan.reshards_from,
            })
        );
        return;
    }
    println!(
        "entity {}: a query over creation times {}..={} visits {} shards now, {} with the candidate schedule",
        plan.entity, plan.window.0, plan.window.1, plan.current.fan_out, plan.candidate.fan_out
    );
    for (name, cost) in [("current", &plan.current), ("candidate", &plan.candidate)] {
        println!("  {name} schedule:");
        for w in &cost.windows {
            let to = w.to.map_or_else(|| "on".to_owned(), |t| format!("to {t}"));
            println!(
                "    from {} {to}: {} shards (char-bits {}, chars {})",
                w.from, w.shards, w.bump.char_bits, w.bump.chars
            );
        }
    }
    match plan.reshards_from {
        Some(t) => println!(
            "  records created from {t} on change shard: any already written must be migrated"
        ),
        None => println!("  no record changes shard"),
    }
}
