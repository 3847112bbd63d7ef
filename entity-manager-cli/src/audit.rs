//! `audit`: the records whose hash key disagrees with the schedule; with `--bump`, the dry
//! run of a new shard bump (no table needed).

use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::Args;
use entity_manager::Schema;
use entity_manager::audit::{AuditReport, BumpDryRun, ScheduleCost, audit_job, bump_dry_run};
use entity_manager::job::{JobHeader, JobKind};
use entity_manager::model::ShardBump;
use serde_json::{Value, json};

use crate::job::Run;
use crate::progress::Total;
use crate::scan::{Parallel, parallel_scan, usage_json, usage_text};
use crate::workers::{JournalFile, worker_json};
use crate::{ConfigArgs, Connection, Failure, connect, item_count, runtime};

#[derive(Debug, Args)]
#[command(mut_arg("page_size", |a| a.help("The most items one scan request reads in a segment (DynamoDB's `Limit`; default: up to 1 MB): smaller pages spread the read capacity the audit uses")))]
pub(crate) struct AuditArgs {
    /// The configuration (the current schedule).
    #[command(flatten)]
    config: ConfigArgs,
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
    #[command(flatten)]
    connection: Connection,
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
    // the bump dry run needs no table; the audit takes the table's schema when it has one
    let schema = match args.table.as_deref() {
        Some(table) if args.bump.is_empty() => args.config.resolve(table, &args.connection)?,
        _ => args.config.load()?,
    };
    if !args.bump.is_empty() {
        return bump(args, &schema, json);
    }
    let table = args.table.as_deref().ok_or_else(|| {
        Failure::Input("the audit needs --table (or --bump for the bump dry run)".to_owned())
    })?;
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
    let store = args
        .parallel
        .limited(connect(&schema, table, &args.connection)?);
    let scan = parallel_scan(&store, &schema, None, &args.parallel)?;
    let range = args.parallel.range()?;
    let tokens: Vec<&str> = entities.iter().map(|e| &*e.model().token).collect();
    let header = JobHeader::new(
        JobKind::Audit,
        format!("audit {} of table {table}", tokens.join(",")),
        range,
    );
    let file = JournalFile::open(header, "audit", table, args.checkpoint.as_deref())?;
    let mut run = Run::new("audit", None, format!("auditing table {table}"))?;
    let audited =
        |report: &entity_manager::job::JobReport| -> u64 { report.tally.scanned.values().sum() };
    let before = audited(&file.journal.report());
    // the audit reads the whole table (one worker of all the segments): DynamoDB's item count
    // is the total
    let total = (range.len() == range.total)
        .then(|| item_count(&args.connection, table))
        .flatten()
        .map(|n| Total::Estimate(n.max(before)));
    run.progress(format!("audit of table {table}"), "scanned", total, before);
    let mut stopped = false;
    let outcome = runtime()?.block_on(audit_job(scan, &entities, &file.journal, |_| {
        // the items this run read (the journal's tally would be replayed at every page)
        let usage = store.usage();
        let flow = run.tick(before + usage.items_read, &usage_text(&usage));
        stopped |= flow.is_break();
        flow
    }));
    run.end();
    let done = format!("{} items audited", audited(&file.journal.report()));
    match outcome {
        Err(e) => {
            return Err(file.failed(&format!("audit of table {table}"), table, &e, &done));
        }
        Ok(_) if stopped => return Err(run.stopped_early(&file, &done)),
        Ok(_) => {}
    }
    let merged = file.journal.report();
    file.complete("audit")?;
    if range.len() != range.total && json {
        say!(
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
        outln!(
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
        outln!(
            "audited {scanned} records of table {table}: {} misplaced, {} unreadable",
            report.misplaced.len(),
            report.unreadable.len()
        );
        for m in &report.misplaced {
            outln!(
                "  {} {}: stored under {}, the schedule says {}",
                m.entity,
                m.unique,
                m.stored,
                m.expected
            );
        }
        for u in &report.unreadable {
            outln!(
                "  {} ({}, {}): {}",
                u.entity,
                u.hash_key,
                u.range_key,
                u.reason
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
    print_bump(&plan, json)
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

fn print_bump(plan: &BumpDryRun, json: bool) -> Result<(), Failure> {
    if json {
        outln!(
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
        return Ok(());
    }
    outln!(
        "entity {}: a query over creation times {}..={} visits {} shards now, {} with the candidate schedule",
        plan.entity,
        plan.window.0,
        plan.window.1,
        plan.current.fan_out,
        plan.candidate.fan_out
    );
    for (name, cost) in [("current", &plan.current), ("candidate", &plan.candidate)] {
        outln!("  {name} schedule:");
        for w in &cost.windows {
            let to = w.to.map_or_else(|| "on".to_owned(), |t| format!("to {t}"));
            outln!(
                "    from {} {to}: {} shards (char-bits {}, chars {})",
                w.from,
                w.shards,
                w.bump.char_bits,
                w.bump.chars
            );
        }
    }
    match plan.reshards_from {
        Some(t) => outln!(
            "  records created from {t} on change shard: any already written must be migrated"
        ),
        None => outln!("  no record changes shard"),
    }
    Ok(())
}
