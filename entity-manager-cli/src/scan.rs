//! `scan` and `purge`: parallel segments over the live table, resumable from a checkpoint.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;

use clap::Args;
use entity_manager::job::JobKind;
use entity_manager::scan::{BulkWrites, ParallelScan, SegmentRange};
use entity_manager::store::{RateLimit, RateLimited, RateUnit, Store, Usage};
use entity_manager::{Item, Schema};
use serde_json::{Value, json};

use crate::job::{self, Run};
use crate::out::{self, Order};
use crate::progress::Total;
use crate::workers::{JournalFile, ShareArgs, worker_json};
use crate::{ConfigArgs, Connection, Failure, connect, item_count, runtime};

#[derive(Debug, Args)]
#[command(mut_arg("page_size", |a| a.help("The most items one scan request reads in a segment (DynamoDB's `Limit`; default: up to 1 MB); smaller pages print sooner, larger ones need fewer requests")))]
pub(crate) struct ScanArgs {
    #[command(flatten)]
    config: ConfigArgs,
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
pub(crate) struct Parallel {
    /// The number of segments the table is split into.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    segments: u32,
    /// The most segments read at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=1000))]
    throttle: u64,
    /// The most items one scan request reads in a segment (DynamoDB's `Limit`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) page_size: Option<u32>,
    #[command(flatten)]
    pub(crate) share: ShareArgs,
    /// The most reads per second of this worker (items read, or read capacity units with
    /// `--rate-unit capacity`): keep a job under a table's provisioned capacity or a share of
    /// on-demand. Throttled calls are retried after a growing pause in any case.
    #[arg(long, value_parser = positive)]
    max_reads: Option<f64>,
    /// The most writes per second of this worker (items written, or write capacity units).
    #[arg(long, value_parser = positive)]
    max_writes: Option<f64>,
    /// What `--max-reads` and `--max-writes` count: `items`, or `capacity` units by
    /// DynamoDB's rules.
    #[arg(long, value_enum, default_value = "items")]
    rate_unit: RateUnitArg,
}

fn positive(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 => Ok(n),
        _ => Err(format!("`{text}` is not a positive number")),
    }
}

/// How a purge or a migration sends its writes.
#[derive(Debug, Args)]
pub(crate) struct WritesArgs {
    /// Write with `BatchWriteItem` of 25 and no condition, instead of one conditioned request
    /// per record: 4 to 8 requests per 100 records instead of 100. ONLY for a table no one
    /// else writes while the job runs (a write made meanwhile is overwritten, a record deleted
    /// meanwhile comes back) and segments no two workers share. Counts stay exact across
    /// kills.
    #[arg(long)]
    exclusive: bool,
}

impl WritesArgs {
    /// The mode the flags ask for.
    pub(crate) fn mode(&self) -> BulkWrites {
        if self.exclusive {
            BulkWrites::Exclusive
        } else {
            BulkWrites::Guarded
        }
    }
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum RateUnitArg {
    Items,
    Capacity,
}

impl Parallel {
    /// The segments this worker owns.
    pub(crate) fn range(&self) -> Result<SegmentRange, Failure> {
        self.share.range(self.segments)
    }

    /// `store` under the flags' rate limit.
    pub(crate) fn limited<S: Store>(&self, store: S) -> RateLimited<S> {
        let mut limit = RateLimit::none().unit(match self.rate_unit {
            RateUnitArg::Items => RateUnit::Items,
            RateUnitArg::Capacity => RateUnit::CapacityUnits,
        });
        if let Some(r) = self.max_reads {
            limit = limit.reads(r);
        }
        if let Some(w) = self.max_writes {
            limit = limit.writes(w);
        }
        RateLimited::new(store, limit)
    }
}

/// What a worker used, for its JSON report.
pub(crate) fn usage_json(usage: &Usage) -> Value {
    json!({
        "itemsRead": usage.items_read,
        "itemsWritten": usage.items_written,
        "readUnits": usage.read_units,
        "writeUnits": usage.write_units,
        "throttled": usage.throttled,
        "seconds": usage.elapsed.as_secs_f64(),
        "itemsPerSecond": usage.items_per_second().round(),
    })
}

/// The progress line's usage part.
pub(crate) fn usage_text(usage: &Usage) -> String {
    format!(
        "{:.0} items/s, {:.1} RCU, {:.1} WCU, {} throttled",
        usage.items_per_second(),
        usage.read_units,
        usage.write_units,
        usage.throttled
    )
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["entity", "all"])))]
#[command(mut_arg("page_size", |a| a.help("The most items one scan request reads in a segment, deleted before the next (default 100): the checkpoint is saved after every page, so this is how much work an interrupted purge repeats")))]
pub(crate) struct PurgeArgs {
    #[command(flatten)]
    config: ConfigArgs,
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
    #[command(flatten)]
    writes: WritesArgs,
    /// Testing: stop after this many pages, as an interrupted run would.
    #[arg(long, hide = true)]
    stop_after: Option<u64>,
    #[command(flatten)]
    connection: Connection,
}

/// The entity an item belongs to, by its hash key: the token before the shard key delimiter
/// when the schema has that entity, `(other)` otherwise.
pub(crate) fn entity_of(schema: &Schema, item: &Item) -> String {
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
pub(crate) fn parallel_scan<'s, S: Store>(
    store: &'s S,
    schema: &Schema,
    entity: Option<&str>,
    parallel: &Parallel,
) -> Result<ParallelScan<'s, S>, Failure> {
    let mut scan = ParallelScan::new(store)
        .share(parallel.range()?)
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

pub(crate) fn counts_json(counts: &BTreeMap<String, u64>) -> Value {
    Value::Object(counts.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
}

pub(crate) fn counts_text(counts: &BTreeMap<String, u64>) -> String {
    counts
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn scan(args: &ScanArgs, json: bool) -> Result<(), Failure> {
    use futures::TryStreamExt;

    let schema = args.config.resolve(&args.table, &args.connection)?;
    let store = args
        .parallel
        .limited(connect(&schema, &args.table, &args.connection)?);
    let scan = parallel_scan(&store, &schema, args.entity.as_deref(), &args.parallel)?;
    let range = args.parallel.range()?;
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let orders: BTreeMap<String, Order> = schema
        .entities()
        .iter()
        .map(|e| {
            (
                e.token.to_string(),
                Order::keys_last(out::key_names(&schema, Some(&e.token))),
            )
        })
        .collect();
    let other = Order::keys_last(out::key_names(&schema, None));
    let mut total = 0u64;
    let label = match &args.entity {
        Some(entity) => format!("scan of entity {entity} in table {}", args.table),
        None => format!("scan of table {}", args.table),
    };
    // the whole table's count: the total of a scan of every item by one worker
    let estimate = if args.entity.is_none() && range.len() == range.total {
        item_count(&args.connection, &args.table).map(Total::Estimate)
    } else {
        None
    };
    let mut progress = crate::progress::Progress::new(label, "items", estimate, 0);
    let stdout = io::stdout();
    let mut lock = stdout.lock();
    runtime()?.block_on(async {
        let mut items = std::pin::pin!(scan.items());
        while let Some(item) = items
            .try_next()
            .await
            .map_err(|e| crate::connection::explain("scan", &args.table, &e))?
        {
            let entity = entity_of(&schema, &item);
            let value = out::item(
                &item,
                orders.get(&entity).unwrap_or(&other),
                out::Format::Json,
            );
            *counts.entry(entity).or_default() += 1;
            total += 1;
            out::json_line(&mut lock, &value)?;
            progress.update(total, "");
        }
        Ok::<(), Failure>(())
    })?;
    lock.flush().map_err(|e| out::write_failure(&e))?;
    progress.finish();
    if json {
        say!(
            "{}",
            json!({ "ok": true, "table": args.table, "scanned": total, "counts": counts_json(&counts) })
        );
    } else {
        say!("scanned {total} items ({})", counts_text(&counts));
    }
    Ok(())
}

#[allow(clippy::too_many_lines)] // one command, start to end
pub(crate) fn purge(args: &PurgeArgs, json: bool) -> Result<(), Failure> {
    let schema = args.config.resolve(&args.table, &args.connection)?;
    let target = match &args.entity {
        Some(entity) => format!("entity:{entity}"),
        None => "all".to_owned(),
    };
    let what = match &args.entity {
        Some(entity) => format!("every record of entity `{entity}` in table {}", args.table),
        None => format!("every item of table {}", args.table),
    };
    let store = args
        .parallel
        .limited(connect(&schema, &args.table, &args.connection)?);
    let mut scan = parallel_scan(&store, &schema, args.entity.as_deref(), &args.parallel)?
        .writes(args.writes.mode());
    // pages of 100 by default: a checkpoint every four batch deletes
    if args.parallel.page_size.is_none() {
        scan = scan.page_size(100);
    }
    let range = args.parallel.range()?;
    let header = entity_manager::job::JobHeader::new(
        JobKind::Purge,
        format!("purge {target} of table {}", args.table),
        range,
    );
    let file = JournalFile::open(header, "purge", &args.table, args.checkpoint.as_deref())?;
    // every item of the table (this worker's share of it): DynamoDB's item count is the total;
    // one entity's: unknown. `DescribeTable` (which DynamoDB Local answers by counting the
    // table) only for a confirmation or a total to show.
    let whole = args.entity.is_none() && range.len() == range.total;
    let estimate = (whole || !args.yes)
        .then(|| item_count(&args.connection, &args.table))
        .flatten();
    if let Err(e) = job::confirm(args.yes, &format!("delete {what}{}", job::at(estimate)), "") {
        file.abandon();
        return Err(e);
    }
    let mut run = Run::new("purge", args.stop_after, format!("purging {what}"))?;
    let before: u64 = file.journal.report().tally.deleted.values().sum();
    let total = if whole {
        estimate.map(|n| Total::Estimate(n + before))
    } else {
        None
    };
    run.progress(format!("purge of {what}"), "deleted", total, before);
    let outcome = runtime()?.block_on(scan.purge_job(
        &file.journal,
        |key| entity_of(&schema, key),
        |progress| {
            let detail = usage_text(&store.usage());
            run.tick(before + progress.deleted, &detail)
        },
    ));
    run.end();
    let report = file.journal.report();
    let counts = &report.tally.deleted;
    let deleted: u64 = counts.values().sum();
    let done = format!("{deleted} items deleted");
    match outcome {
        Ok(this) if this.complete => {
            file.complete("purge")?;
            if json {
                outln!(
                    "{}",
                    json!({
                        "ok": true,
                        "table": args.table,
                        "target": target,
                        "deleted": deleted,
                        "counts": counts_json(counts),
                        "conflicts": report.tally.conflicts,
                        "itemsPerSecond": run.rate(this.deleted).round(),
                        "usage": usage_json(&store.usage()),
                        "worker": worker_json(&report, range),
                        "journal": file.path,
                    })
                );
            } else {
                outln!(
                    "purged {what}: {deleted} items deleted ({})",
                    counts_text(counts)
                );
            }
            Ok(())
        }
        Ok(_) => Err(run.stopped_early(&file, &done)),
        Err(e) => Err(file.failed(&format!("purge of {what}"), &args.table, &e, &done)),
    }
}
