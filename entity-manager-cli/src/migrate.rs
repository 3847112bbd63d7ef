//! `migrate --from A.json --to B.json`: the records of a table, from schema A to schema B;
//! resumable from a checkpoint file, with a dry run that writes nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use entity_manager::job::{JobHeader, JobKind};
use entity_manager::migrate::{Action, DryRunReport, MigrateCounts, Migration};
use entity_manager::{Item, Schema};
use serde_json::{Value, json};

use crate::job::{self, Run};
use crate::progress::Total;
use crate::scan::{Parallel, WritesArgs, parallel_scan, usage_json, usage_text};
use crate::workers::{JournalFile, worker_json};
use crate::{Connection, Failure, SpaceArg, connect, item_count, load, runtime};

#[derive(Debug, Args)]
#[command(mut_arg("page_size", |a| a.help("The most items one scan request reads in a segment, migrated before the next (default 100): the checkpoint is saved after every page, so this is how much work an interrupted migration repeats")))]
pub(crate) struct MigrateArgs {
    /// Schema A: the JSON configuration the records were written under.
    #[arg(long)]
    from: PathBuf,
    /// Schema B: the JSON configuration the records must follow.
    #[arg(long)]
    to: PathBuf,
    #[command(flatten)]
    space: SpaceArg,
    /// The table name.
    #[arg(long)]
    table: String,
    /// Only this entity (default: every entity the two configurations share).
    #[arg(long)]
    entity: Option<String>,
    /// Report what would change (counts per entity and shard, sample records before and
    /// after) without writing anything.
    #[arg(long)]
    dry_run: bool,
    /// How many sample records the dry run shows.
    #[arg(long, default_value_t = 3)]
    samples: usize,
    /// Save the position here after every page, and resume from it when it exists. Removed
    /// when the migration completes.
    #[arg(long)]
    checkpoint: Option<PathBuf>,
    /// Do not ask for confirmation (required when stdin is not a terminal).
    #[arg(long)]
    yes: bool,
    #[command(flatten)]
    parallel: Parallel,
    #[command(flatten)]
    writes: WritesArgs,
    /// Testing: stop after this many pages, as an interrupted run would.
    #[arg(long, hide = true)]
    stop_after: Option<u64>,
    #[command(flatten)]
    connection: Connection,
}

/// FNV-1a (64 bits) of the two configurations and the shard-space rule: a checkpoint belongs
/// to one migration.
fn fingerprint(parts: &[&[u8]]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn read(path: &Path) -> Result<Vec<u8>, Failure> {
    std::fs::read(path).map_err(|e| Failure::Input(format!("cannot read {}: {e}", path.display())))
}

/// The migration of `entity`, or of every entity the schemas share.
fn migration<'a>(
    a: &'a Schema,
    b: &'a Schema,
    entity: Option<&str>,
) -> Result<Migration<'a>, Failure> {
    let input = |e: &dyn std::fmt::Display| Failure::Input(e.to_string());
    match entity {
        Some(entity) => Migration::new()
            .entity(
                a.entity(entity)
                    .map_err(|e| Failure::Input(format!("schema A (--from): {e}")))?,
                b.entity(entity)
                    .map_err(|e| Failure::Input(format!("schema B (--to): {e}")))?,
            )
            .map_err(|e| input(&e)),
        None => Migration::between(a, b).map_err(|e| input(&e)),
    }
}

fn item_json(item: &Item) -> Value {
    serde_dynamo::from_item(item.clone()).unwrap_or(Value::Null)
}

fn counts_json(counts: &MigrateCounts) -> Value {
    serde_json::to_value(&counts.entities).unwrap_or(Value::Null)
}

fn counts_text(counts: &MigrateCounts) -> String {
    let mut parts: Vec<String> = counts
        .entities
        .iter()
        .map(|(entity, c)| {
            format!(
                "{entity}: {} scanned, {} moved, {} rewritten, {} unchanged, {} migrated before{}",
                c.scanned,
                c.moved,
                c.rewritten,
                c.unchanged,
                c.migrated_before,
                if c.failed > 0 {
                    format!(", {} cannot be migrated", c.failed)
                } else {
                    String::new()
                }
            )
        })
        .collect();
    if counts.other > 0 {
        parts.push(format!(
            "{} items of other entities left alone",
            counts.other
        ));
    }
    parts.join("; ")
}

#[allow(clippy::too_many_lines)] // one command, start to end (as purge)
pub(crate) fn migrate(args: &MigrateArgs, json: bool) -> Result<(), Failure> {
    let (text_a, text_b) = (read(&args.from)?, read(&args.to)?);
    let a = load(&args.from, &args.space, None)?;
    let b = load(&args.to, &args.space, None)?;
    let migration = migration(&a, &b, args.entity.as_deref())?;
    let store = args
        .parallel
        .limited(connect(&b, &args.table, &args.connection)?);
    let mut scan = parallel_scan(&store, &b, None, &args.parallel)?.writes(args.writes.mode());
    // pages of 100 by default, as purge: the checkpoint granularity
    if args.parallel.page_size.is_none() {
        scan = scan.page_size(100);
    }
    if args.dry_run {
        let report = runtime()?
            .block_on(migration.dry_run(scan, args.samples))
            .map_err(|e| crate::connection::explain("migrate --dry-run", &args.table, &e))?;
        return print_dry_run(args, &report, json);
    }

    let target = args
        .entity
        .as_ref()
        .map_or_else(|| "all".to_owned(), |entity| format!("entity:{entity}"));
    let space = format!("{:?}", args.space.profile());
    let schemas = fingerprint(&[&text_a, &text_b, space.as_bytes()]);
    let range = args.parallel.range()?;
    let header = JobHeader::new(
        JobKind::Migrate,
        format!(
            "migrate {target} of table {} with configurations {schemas}",
            args.table
        ),
        range,
    );
    let file = JournalFile::open(header, "migrate", &args.table, args.checkpoint.as_deref())?;
    let what = match &args.entity {
        Some(entity) => format!(
            "migrate every record of entity `{entity}` in table {}",
            args.table
        ),
        None => format!("migrate every record of table {}", args.table),
    };
    // one worker of the whole table: DynamoDB's item count is the total. `DescribeTable`
    // (which DynamoDB Local answers by counting the table) only for a confirmation or a total
    // to show.
    let whole = range.len() == range.total;
    let estimate = (whole || !args.yes)
        .then(|| item_count(&args.connection, &args.table))
        .flatten();
    if let Err(e) = job::confirm(
        args.yes,
        &format!("{what}{}", job::at(estimate)),
        " (or --dry-run)",
    ) {
        file.abandon();
        return Err(e);
    }
    let mut run = Run::new(
        "migrate",
        args.stop_after,
        format!("migrating table {}", args.table),
    )?;
    let scanned = |c: &MigrateCounts| c.total().scanned + c.other;
    let before = scanned(&file.journal.report().tally.migrate);
    let total = whole
        .then_some(estimate)
        .flatten()
        .map(|n| Total::Estimate(n.max(before)));
    run.progress(
        format!("migrate of table {}", args.table),
        "scanned",
        total,
        before,
    );
    let outcome = runtime()?.block_on(migration.run_job(scan, &file.journal, |progress| {
        let detail = format!(
            "{}; {}",
            counts_text(progress.counts),
            usage_text(&store.usage())
        );
        run.tick(before + scanned(progress.counts), &detail)
    }));
    run.end();
    let report = file.journal.report();
    let counts = &report.tally.migrate;
    let written = counts.total().written();
    let done = format!("{written} records written");
    match outcome {
        Ok(this) if this.complete => {
            file.complete("migrate")?;
            // the records are keyed by B: the table's stamp says so from now on (B's profile
            // and schema), so that every command takes B from the table. A worker of a split
            // job leaves it to `table stamp --config B --force` once every worker is done.
            if range.len() == range.total {
                let definition = entity_manager::store::TableDefinition::from_schema(&b)
                    .map_err(|e| Failure::Operation(e.to_string()))?;
                runtime()?
                    .block_on(
                        args.connection
                            .store(definition, &args.table)?
                            .stamp_table(true),
                    )
                    .map_err(|e| {
                        crate::connection::explain(
                            "migrate (stamping the table with schema B)",
                            &args.table,
                            &e,
                        )
                    })?;
            }
            if json {
                let scanned = this.counts.total().scanned + this.counts.other;
                outln!(
                    "{}",
                    json!({
                        "ok": true,
                        "table": args.table,
                        "target": target,
                        "written": written,
                        "counts": counts_json(counts),
                        "other": counts.other,
                        "itemsPerSecond": run.rate(scanned).round(),
                        "usage": usage_json(&store.usage()),
                        "worker": worker_json(&report, range),
                        "journal": file.path,
                    })
                );
            } else {
                outln!(
                    "migrated table {}: {written} records written ({})",
                    args.table,
                    counts_text(counts)
                );
            }
            Ok(())
        }
        Ok(_) => Err(run.stopped_early(&file, &done)),
        Err(e) => Err(file.failed(&what, &args.table, &e, &done)),
    }
}

fn print_dry_run(args: &MigrateArgs, report: &DryRunReport, json: bool) -> Result<(), Failure> {
    let shards: BTreeMap<&String, Value> = report
        .shards
        .iter()
        .map(|(entity, shards)| {
            let per: serde_json::Map<String, Value> = shards
                .iter()
                .map(|(hash_key, c)| {
                    (
                        hash_key.clone(),
                        json!({ "before": c.before, "after": c.after }),
                    )
                })
                .collect();
            (entity, Value::Object(per))
        })
        .collect();
    let action = |a: Action| match a {
        Action::Rewrite => "rewrite",
        Action::Move => "move",
    };
    let failed = report.counts.total().failed;
    if json {
        let samples: Vec<Value> = report
            .samples
            .iter()
            .map(|s| {
                json!({
                    "entity": s.entity,
                    "action": action(s.action),
                    "before": item_json(&s.before),
                    "after": item_json(&s.after),
                })
            })
            .collect();
        let failures: Vec<Value> = report
            .failures
            .iter()
            .map(|f| {
                json!({
                    "entity": f.entity,
                    "hashKey": f.key.0.hash_key,
                    "rangeKey": f.key.0.range_key,
                    "reason": f.reason,
                })
            })
            .collect();
        outln!(
            "{}",
            json!({
                "ok": failed == 0,
                "dryRun": true,
                "table": args.table,
                "toWrite": report.counts.total().written(),
                "counts": counts_json(&report.counts),
                "other": report.counts.other,
                "shards": shards,
                "samples": samples,
                "failures": failures,
            })
        );
    } else {
        outln!(
            "dry run on table {}: {} records to write, nothing written ({})",
            args.table,
            report.counts.total().written(),
            counts_text(&report.counts)
        );
        for (entity, per) in &report.shards {
            outln!("  {entity} by shard (before -> after):");
            for (hash_key, c) in per {
                outln!("    {hash_key}: {} -> {}", c.before, c.after);
            }
        }
        for s in &report.samples {
            outln!("  sample ({}, {}):", s.entity, action(s.action));
            outln!("    before: {}", item_json(&s.before));
            outln!("    after:  {}", item_json(&s.after));
        }
        for f in &report.failures {
            outln!("  cannot migrate {}: {}", f.entity, f.reason);
        }
    }
    if failed > 0 {
        return Err(Failure::Findings(format!(
            "{failed} records cannot be migrated (listed above)"
        )));
    }
    Ok(())
}
