//! The re-shard audit, and the dry run of a new shard bump.
//!
//! A record keeps its shard for life: its hash key is computed once, from its unique value and
//! the bump in force at its creation time. When that time is edited, or a bump of the schedule
//! is edited after records were written under it, stored hash keys no longer agree with the
//! schedule, and queries (which visit the shards the schedule lists) miss those records.
//! [`audit`] scans the table and lists every such record ([`Misplaced`]): the
//! [`migrate`](crate::migrate) module moves them back.
//!
//! [`bump_dry_run`] shows, before a bump is added, the shards each time window gets and what a
//! query over a window costs (the shard queries it fans out to), under the current schedule
//! and the candidate one, and whether the candidate changes the shard of records already
//! written.
//!
//! ```
//! use entity_manager_core::audit::{audit, bump_dry_run};
//! use entity_manager_core::scan::ParallelScan;
//! use entity_manager_core::store::{Expect, MemoryStore, Store, TableDefinition};
//! use entity_manager_core::{AttributeValue, Item, Schema};
//! use entity_manager_core::model::{ShardBump, ShardSpace};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let schema = Schema::from_ts_config(
//!     &json!({
//!         "hashKey": "hashKey",
//!         "rangeKey": "rangeKey",
//!         "entities": { "user": {
//!             "uniqueProperty": "userId", "timestampProperty": "created",
//!             "shardBumps": [{ "timestamp": 1000, "charBits": 2, "chars": 1 }]
//!         } },
//!         "propertyTranscodes": { "userId": "string", "created": "timestamp" }
//!     }),
//!     ShardSpace::Power,
//! )?;
//! let user = schema.entity("user")?;
//! let store = MemoryStore::new(TableDefinition::from_schema(&schema)?);
//! let item: Item = serde_dynamo::to_item(json!({ "userId": "u1", "created": 5000 }))?;
//! let mut keyed = user.add_keys(&item)?;
//! // the record claims an older creation time than its shard says
//! keyed.insert("created".into(), AttributeValue::N("10".into()));
//! store.put_item(keyed, Expect::Any).await?;
//!
//! let report = audit(ParallelScan::new(&store), &[user]).await?;
//! assert_eq!(report.misplaced.len(), 1);
//! assert_eq!(report.misplaced[0].expected, "user!");
//!
//! // a bump of 16 shards from t = 10_000 on: a query over all time visits 1 + 4 + 16 shards
//! let plan = bump_dry_run(&user, &[ShardBump::new(1000, 2, 1), ShardBump::new(10_000, 2, 2)], 0, 20_000)?;
//! assert_eq!(plan.current.fan_out, 5);
//! assert_eq!(plan.candidate.fan_out, 21);
//! // records created from t = 10_000 on change shard: none is written yet if that is the future
//! assert_eq!(plan.reshards_from, Some(10_000));
//! # Ok(())
//! # }
//! ```

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_dynamo::{AttributeValue, Item};

pub use crate::counts::{Misplaced, Unreadable};
use crate::error::{ConfigError, Error};
use crate::job::{Entry, Journal, JournalError, Tally};
use crate::model::{ShardBump, ShardSpace};
use crate::scan::{ParallelScan, ScanCheckpoint, ScanError, entity_filter};
use crate::schema::{EntitySchema, Schema};
use crate::shard;
use crate::store::{Filter, Store};

/// What an audit found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AuditReport {
    /// Records scanned, per entity.
    pub scanned: BTreeMap<String, u64>,
    /// The records whose hash key disagrees with the schedule, sorted by entity and stored key.
    pub misplaced: Vec<Misplaced>,
    /// The records whose hash key cannot be computed, sorted the same way.
    pub unreadable: Vec<Unreadable>,
}

impl AuditReport {
    /// Whether every record's hash key agrees with the schedule.
    pub fn is_clean(&self) -> bool {
        self.misplaced.is_empty() && self.unreadable.is_empty()
    }
}

/// Scans the records of `entities` (the scan's filter is replaced by one that keeps them) and
/// lists every record whose stored hash key is not the one the entity's current schedule gives
/// it. Only the hash key is compared: that is what decides which shard query finds a record.
pub async fn audit<S: Store>(
    scan: ParallelScan<'_, S>,
    entities: &[EntitySchema<'_>],
) -> Result<AuditReport, ScanError> {
    let mut scan = scan;
    scan.filter = filter_of(entities);
    let mut report = AuditReport::default();
    let mut pages = std::pin::pin!(scan.pages());
    while let Some(batch) = pages.next().await {
        for item in batch?.items {
            let Some(entity) = entities
                .iter()
                .find(|e| e.check_entity_token(&item).is_ok())
            else {
                continue;
            };
            check(entity, &item, &mut report);
        }
    }
    sort(&mut report);
    Ok(report)
}

/// Why an audit job stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditJobError {
    /// A page could not be read: run the job again, it resumes from its journal.
    #[error(transparent)]
    Scan(#[from] ScanError),
    /// The journal could not be written.
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// [`audit`] as one worker of a job ([`job`](crate::job)): resumes from `journal` (this
/// scan's position and share are replaced by the journal's) and records every page's findings
/// with its position, so a page read again after a stop is counted once. `progress` gets the
/// checkpoint after each page; [`ControlFlow::Break`] stops the audit there. The report is of
/// this run; [`Journal::report`] and [`merge`](crate::job::merge) give the job's totals.
pub async fn audit_job<S: Store, P>(
    scan: ParallelScan<'_, S>,
    entities: &[EntitySchema<'_>],
    journal: &Journal,
    mut progress: P,
) -> Result<AuditReport, AuditJobError>
where
    P: FnMut(&ScanCheckpoint) -> ControlFlow<()>,
{
    let mut scan = scan;
    scan.checkpoint = journal.state().checkpoint;
    scan.filter = filter_of(entities);
    let mut checkpoint = scan.checkpoint.clone();
    let mut report = AuditReport::default();
    let mut pages = std::pin::pin!(scan.pages());
    while let Some(batch) = pages.next().await {
        let batch = batch?;
        let mut page = AuditReport::default();
        for item in &batch.items {
            if let Some(entity) = entities.iter().find(|e| e.check_entity_token(item).is_ok()) {
                check(entity, item, &mut page);
            }
        }
        journal
            .append(Entry::Done {
                segment: batch.segment,
                next: batch.next.clone(),
                tally: Tally {
                    scanned: page.scanned.clone(),
                    misplaced: page.misplaced.clone(),
                    unreadable: page.unreadable.clone(),
                    ..Tally::default()
                },
            })
            .await?;
        for (entity, n) in page.scanned {
            *report.scanned.entry(entity).or_default() += n;
        }
        report.misplaced.extend(page.misplaced);
        report.unreadable.extend(page.unreadable);
        checkpoint.set(batch.segment, batch.next);
        if progress(&checkpoint).is_break() {
            break;
        }
    }
    sort(&mut report);
    Ok(report)
}

fn filter_of(entities: &[EntitySchema<'_>]) -> Option<Filter> {
    let mut filters: Vec<Filter> = entities.iter().map(entity_filter).collect();
    if filters.len() == 1 {
        filters.pop()
    } else {
        Some(Filter::Or(filters))
    }
}

fn sort(report: &mut AuditReport) {
    report.misplaced.sort_by(|a, b| {
        (&a.entity, &a.stored, &a.range_key).cmp(&(&b.entity, &b.stored, &b.range_key))
    });
    report.unreadable.sort_by(|a, b| {
        (&a.entity, &a.hash_key, &a.range_key).cmp(&(&b.entity, &b.hash_key, &b.range_key))
    });
}

/// Audits one record.
fn check(entity: &EntitySchema<'_>, item: &Item, report: &mut AuditReport) {
    let table = entity.table();
    let model = entity.model();
    let text = |name: &str| match item.get(name) {
        Some(AttributeValue::S(s)) => s.clone(),
        _ => String::new(),
    };
    *report.scanned.entry(model.token.to_string()).or_default() += 1;
    let stored = text(&table.hash_key);
    match entity.hash_key(item) {
        Ok(expected) if expected == stored => {}
        Ok(expected) => report.misplaced.push(Misplaced {
            entity: model.token.to_string(),
            unique: item
                .get(&*model.unique_property)
                .and_then(shard::hash_text)
                .map(std::borrow::Cow::into_owned)
                .unwrap_or_default(),
            range_key: text(&table.range_key),
            stored,
            expected,
        }),
        Err(e) => report.unreadable.push(Unreadable {
            entity: model.token.to_string(),
            hash_key: stored,
            range_key: text(&table.range_key),
            reason: e.to_string(),
        }),
    }
}

/// The shards of one time window: records created in `from..to` (`to` `None`: from `from` on)
/// get one of `shards` suffixes under `bump`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShardWindow {
    /// The first creation time of the window (ms).
    pub from: u64,
    /// The first creation time after the window, or `None` for the last, open window.
    pub to: Option<u64>,
    /// The bump in force.
    pub bump: ShardBump,
    /// How many shards (hash keys) records of the window spread over.
    pub shards: u128,
}

/// A schedule, as the dry run describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScheduleCost {
    /// The windows of the schedule, in time order.
    pub windows: Vec<ShardWindow>,
    /// The shard queries a query over the window asked for fans out to, per index (and for
    /// the table's own key): the hash keys it must visit.
    pub fan_out: u128,
}

/// What a candidate shard schedule would change.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BumpDryRun {
    /// The entity.
    pub entity: String,
    /// The shard-space rule of the table.
    pub shard_space: ShardSpace,
    /// The query window the fan-out is computed for (creation times, ms, inclusive).
    pub window: (u64, u64),
    /// The schedule now.
    pub current: ScheduleCost,
    /// The candidate schedule (normalised: sorted, with the implied bump at 0).
    pub candidate: ScheduleCost,
    /// The earliest creation time from which the candidate gives records another bump than
    /// the current schedule, if any. Records created from then on and already written would
    /// have to be moved (audit, then migrate): a bump added with a future timestamp leaves
    /// this after every existing record.
    pub reshards_from: Option<u64>,
}

/// Why a bump dry run cannot be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BumpDryRunError {
    /// The candidate schedule breaks a rule of shard bumps.
    #[error("the candidate shard schedule for entity `{entity}` is invalid: {source}")]
    InvalidSchedule {
        /// The entity.
        entity: String,
        /// Every problem found.
        #[source]
        source: ConfigError,
    },
    /// The fan-out cannot be computed (too many shards to list, for example).
    #[error(transparent)]
    Keys(#[from] Error),
}

/// Describes the current schedule of `entity` and the `candidate` one (a whole schedule, as
/// the entity would declare it): the shards per time window, the fan-out of a query over
/// creation times `from..=to`, and from when existing records would change shard.
pub fn bump_dry_run(
    entity: &EntitySchema<'_>,
    candidate: &[ShardBump],
    from: u64,
    to: u64,
) -> Result<BumpDryRun, BumpDryRunError> {
    let mut model = entity.model().clone();
    model.shard_bumps = candidate.to_vec().into();
    let schema = Schema::new(entity.table().clone(), vec![model]).map_err(|source| {
        BumpDryRunError::InvalidSchedule {
            entity: entity.model().token.to_string(),
            source,
        }
    })?;
    let candidate_entity = schema.entity(&entity.model().token)?;
    let current = cost(entity, from, to);
    let candidate = cost(&candidate_entity, from, to);
    Ok(BumpDryRun {
        entity: entity.model().token.to_string(),
        shard_space: entity.table().shard_space,
        window: (from, to),
        reshards_from: first_difference(
            &entity.model().shard_bumps,
            &candidate_entity.model().shard_bumps,
        ),
        current,
        candidate,
    })
}

/// The windows and fan-out of one (validated) schedule.
fn cost(entity: &EntitySchema<'_>, from: u64, to: u64) -> ScheduleCost {
    let bumps = &entity.model().shard_bumps;
    let space = entity.table().shard_space;
    let windows = bumps
        .iter()
        .enumerate()
        .map(|(i, bump)| ShardWindow {
            from: bump.timestamp,
            to: bumps.get(i + 1).map(|next| next.timestamp),
            bump: *bump,
            shards: shard::shard_count(*bump, space),
        })
        .collect();
    let fan_out = if from > to {
        0
    } else {
        shard::bumps_in_window(bumps, from, to)
            .map(|b| shard::shard_count(b, space))
            .fold(0u128, u128::saturating_add)
    };
    ScheduleCost { windows, fan_out }
}

/// The earliest time from which two schedules put records under different bumps.
fn first_difference(a: &[ShardBump], b: &[ShardBump]) -> Option<u64> {
    let in_force = |bumps: &[ShardBump], t: u64| {
        bumps
            .iter()
            .rev()
            .find(|x| x.timestamp <= t)
            .map(|x| (x.char_bits, x.chars))
    };
    let mut times: Vec<u64> = a.iter().chain(b).map(|x| x.timestamp).collect();
    times.push(0);
    times.sort_unstable();
    times.dedup();
    times
        .into_iter()
        .find(|&t| in_force(a, t) != in_force(b, t))
}
