//! The stamp check: a store whose definition has a [`TableStamp`] reads the table's stamp
//! item on first use, again once its verdict is older than the re-check interval, and after
//! any write refused by a condition; it refuses writes when the table is stamped for another
//! profile. A table without a stamp is judged by its records: a sample of them is read and the
//! profile that made their keys inferred ([`Inference`]); a store whose keys are not those of
//! the data refuses to write. Stamping a table writes the item. The stamp itself (what it
//! records, its item) is `crate::table`'s.
//!
//! The policy on a table without a stamp (the README's "A table without a stamp"):
//!
//! - no record tells anything (an empty table): writes go ahead, and the first write stamps
//!   the table with this store's settings;
//! - the records' keys are this store's profile's and no other's: the same;
//! - they are alike under several profiles, this store's among them: writes go ahead, the
//!   table stays unstamped (an operator stamps it with the profile of the services that wrote
//!   it), and the sample is read again at every re-check;
//! - they are another profile's, or no profile's: writes are refused, naming what the data
//!   shows, until the configuration agrees or an operator stamps the table.

use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_dynamo::Item;

use super::{StoreError, StoreErrorKind};
use crate::model::Profile;
use crate::table::{
    Inference, SAMPLE_MAX, SAMPLE_PER_ENTITY, STAMP_MISMATCH_CODE, TableDefinition, TableStamp,
    stampable,
};

/// How long a store trusts what it found about the table's stamp before reading it again.
pub const STAMP_RECHECK: Duration = Duration::from_mins(1);

// ---------------------------------------------------------------------------------------------
// the check

/// What a store found about its table.
#[derive(Clone, Debug)]
enum Verdict {
    /// Writes go ahead.
    Clear,
    /// The table has no stamp and its records admit this store's keys: the first write stamps
    /// it.
    StampFirst,
    /// Writes are refused with this message.
    Refused(String),
}

/// What the stamp check reads and writes, through the store's own calls (not checked again).
pub(crate) trait StampIo: Sync {
    /// The stamp item, read consistently.
    fn read_stamp(&self) -> impl Future<Output = Result<Option<Item>, StoreError>> + Send;
    /// Up to `limit` items of the table (one scan page; the stamp left out).
    fn sample(&self, limit: usize) -> impl Future<Output = Result<Vec<Item>, StoreError>> + Send;
    /// Puts the stamp item if the table holds none (a conditional put).
    fn write_stamp(&self, item: Item) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// The stamp check of a store whose definition has a stamp: keeps its verdict for the
/// re-check interval (a failed read is tried again on the next call).
#[derive(Debug)]
pub(crate) struct StampGuard {
    state: Mutex<Option<(Verdict, Instant)>>,
    /// The last warning logged, so that each is logged once until it changes.
    warned: Mutex<Option<String>>,
    interval: Duration,
}

impl Default for StampGuard {
    fn default() -> Self {
        Self::new(STAMP_RECHECK)
    }
}

impl StampGuard {
    /// A guard that reads the stamp again once its verdict is `interval` old.
    pub(crate) fn new(interval: Duration) -> Self {
        Self {
            state: Mutex::new(None),
            warned: Mutex::new(None),
            interval,
        }
    }

    /// The re-check interval.
    pub(crate) fn interval(&self) -> Duration {
        self.interval
    }

    /// Forgets the verdict: the next call reads the stamp again (after a write refused by a
    /// condition, which may be another service's change of the table).
    pub(crate) fn expire(&self) {
        if let Ok(mut state) = self.state.lock() {
            *state = None;
        }
    }

    /// [`expire`](Self::expire) when `result` is a write refused by a condition; `result`
    /// unchanged.
    pub(crate) fn note<T>(&self, result: Result<T, StoreError>) -> Result<T, StoreError> {
        if let Err(e) = &result
            && e.is_conditional_check_failed()
        {
            self.expire();
        }
        result
    }

    fn fresh(&self) -> Option<Verdict> {
        let state = self.state.lock().ok()?;
        state
            .as_ref()
            .filter(|(_, at)| at.elapsed() < self.interval)
            .map(|(v, _)| v.clone())
    }

    fn keep(&self, verdict: &Verdict) {
        if let Ok(mut state) = self.state.lock() {
            *state = Some((verdict.clone(), Instant::now()));
        }
    }

    /// `Ok` when the call may go ahead: always for a read (a refusal is logged once); for a
    /// write when the table's stamp has this store's settings, or when the table has none and
    /// its records admit this store's keys (the first write on a table the policy stamps
    /// writes the stamp first).
    pub(crate) async fn check(
        &self,
        definition: &TableDefinition,
        table: &str,
        operation: &'static str,
        write: bool,
        io: &impl StampIo,
    ) -> Result<(), StoreError> {
        let Some(ours) = &definition.stamp else {
            return Ok(());
        };
        // twice at most: a stamp another service wrote between our read and our stamp is
        // judged once more
        for _ in 0..2 {
            let verdict = if let Some(v) = self.fresh() {
                v
            } else {
                match self.judge(definition, ours, table, io).await {
                    Ok(v) => {
                        self.keep(&v);
                        v
                    }
                    Err(e) if write => return Err(e),
                    Err(_) => return Ok(()),
                }
            };
            match verdict {
                // a read goes ahead whatever was found (a refusal is logged)
                Verdict::Clear => return Ok(()),
                _ if !write => return Ok(()),
                Verdict::Refused(message) => return Err(refusal(operation, table, &message)),
                // a definition that cannot be stamped (table keys that are not strings) writes
                // without: there is no stamp to write
                Verdict::StampFirst if !stampable(definition) => {
                    self.keep(&Verdict::Clear);
                    return Ok(());
                }
                Verdict::StampFirst => {
                    let (stamp, item) = stamp_to_write(definition, table, None, false)?;
                    match io.write_stamp(item).await {
                        Ok(()) => {
                            tracing::info!(
                                target: "entity_manager::stamp",
                                "table `{table}` had no stamp and its records (if any) are this service's profile's: stamped it with {}",
                                stamp.describe()
                            );
                            self.keep(&Verdict::Clear);
                            return Ok(());
                        }
                        Err(e) if e.is_conditional_check_failed() => self.expire(),
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Err(StoreError::new(
            StoreErrorKind::Other,
            operation,
            format!(
                "table `{table}`: its stamp changed while this service read it; nothing was written, try again"
            ),
        ))
    }

    /// Reads the stamp, and without one a sample of the records, and judges them.
    async fn judge(
        &self,
        definition: &TableDefinition,
        ours: &TableStamp,
        table: &str,
        io: &impl StampIo,
    ) -> Result<Verdict, StoreError> {
        if let Some(item) = io.read_stamp().await? {
            return Ok(self.judge_stamp(ours, table, &item));
        }
        let sample = io.sample(sample_limit(definition)).await?;
        let bytes: usize = sample.iter().map(super::item_size).sum();
        let inference = match &definition.models {
            Some(models) => (models.infer)(&sample),
            None if sample.is_empty() => Inference::Empty { read: 0 },
            // no configuration to make keys with: nothing can be told of records
            None => {
                let message = format!(
                    "the table has no stamp and holds records, and this store's definition was not made from a schema (`TableDefinition::from_schema`), so it cannot tell which profile made their keys; nothing was written. Build the store's definition with `TableDefinition::from_schema`, or have an operator stamp the table (`entity-manager table stamp --table {table} --config <config.json>`)"
                );
                self.warn(&format!("table `{table}`: {message}"));
                return Ok(Verdict::Refused(message));
            }
        };
        tracing::info!(
            target: "entity_manager::stamp",
            items = sample.len(),
            bytes,
            "table `{table}` has no stamp: read {} items ({bytes} bytes, one scan page) to infer its profile: {inference}",
            sample.len()
        );
        Ok(self.judge_inference(ours, table, &inference))
    }

    fn judge_stamp(&self, ours: &TableStamp, table: &str, item: &Item) -> Verdict {
        let stamp = match TableStamp::from_item(item) {
            Ok(stamp) => stamp,
            Err(why) => {
                let message = format!("its stamp cannot be read ({why}), so writes are refused");
                self.warn(&format!("table `{table}`: {message}"));
                return Verdict::Refused(message);
            }
        };
        if let Some(message) = stamp.refuses(ours) {
            self.warn(&format!(
                "table `{table}`: {message} (reads go ahead, but may miss records)"
            ));
            return Verdict::Refused(message);
        }
        let changed = stamp.changed_entities(ours);
        if !changed.is_empty() {
            self.warn(&format!(
                "table `{table}`: the key configuration of entities [{}] differs from the one the table was stamped with; if the change is deliberate, stamp the table again (`entity-manager table stamp --force`)",
                changed.join(", ")
            ));
        }
        Verdict::Clear
    }

    fn judge_inference(&self, ours: &TableStamp, table: &str, inference: &Inference) -> Verdict {
        let (verdict, message) = judge_inference(ours, table, inference);
        if let Some(message) = message {
            self.warn(&format!("table `{table}`: {message}"));
        }
        verdict
    }

    fn warn(&self, message: &str) {
        let Ok(mut warned) = self.warned.lock() else {
            return;
        };
        if warned.as_deref() != Some(message) {
            tracing::warn!(target: "entity_manager::stamp", "{message}");
            *warned = Some(message.to_owned());
        }
    }
}

/// The verdict on a table without a stamp whose sample shows `inference`, for a store whose
/// settings are `ours`, and what to log.
fn judge_inference(
    ours: &TableStamp,
    table: &str,
    inference: &Inference,
) -> (Verdict, Option<String>) {
    let mine = ours.profile();
    let stamp_command = |profile: &str| {
        format!(
            "`entity-manager table stamp --table {table} --config <config.json> --key-profile {profile}`"
        )
    };
    match inference {
        Inference::Empty { .. } => (Verdict::StampFirst, None),
        Inference::Reproduced { profiles, .. } if mine.is_some_and(|m| profiles == &[m]) => {
            (Verdict::StampFirst, None)
        }
        Inference::Reproduced { profiles, .. } if mine.is_some_and(|m| profiles.contains(&m)) => {
            let names = names(profiles);
            (
                Verdict::Clear,
                Some(format!(
                    "the table has no stamp, and {inference}; writes go ahead (this service's keys are those of the records read), but the table stays unstamped: stamp it with the profile of the services that wrote it ({names}), {}",
                    stamp_command("<profile>")
                )),
            )
        }
        Inference::Reproduced { profiles, .. } => {
            let fix = match profiles.as_slice() {
                [p] => format!(
                    "load the configuration with the profile the table's records show (`Profile::{p:?}`; CLI: `--key-profile {p}`); to record it in the table, {}",
                    stamp_command(p.as_str())
                ),
                _ => format!(
                    "load the configuration with the profile of the services that wrote the records, one of {} (CLI: `--key-profile <profile>`), and stamp the table with it, {}",
                    names(profiles),
                    stamp_command("<profile>")
                ),
            };
            let message = format!(
                "the table has no stamp, and {inference}, but this service makes keys with {}: its writes would make keys the services sharing the table do not find, so nothing was written. To fix it, {fix}",
                ours.describe()
            );
            (Verdict::Refused(message.clone()), Some(message))
        }
        Inference::Unexplained { .. } => {
            let message = format!(
                "the table has no stamp, and {inference}; this service (keys of {}) cannot tell which profile its writes must use, so nothing was written. Check the configuration against the services that wrote the records; once the profile is known, load the configuration with it and stamp the table, {}",
                ours.describe(),
                stamp_command("<profile>")
            );
            (Verdict::Refused(message.clone()), Some(message))
        }
    }
}

/// How many records a store of `definition` samples: [`SAMPLE_PER_ENTITY`] per entity, at
/// most [`SAMPLE_MAX`].
pub(crate) fn sample_limit(definition: &TableDefinition) -> usize {
    let entities = definition.models.as_ref().map_or(1, |m| m.entities.max(1));
    (SAMPLE_PER_ENTITY * entities).min(SAMPLE_MAX)
}

/// The inference of `sample` with the schema of `definition`.
pub(crate) fn infer(
    definition: &TableDefinition,
    sample: &[Item],
) -> Result<Inference, StoreError> {
    definition
        .models
        .as_ref()
        .map(|m| (m.infer)(sample))
        .ok_or_else(|| {
            StoreError::validation(
                "Scan",
                "this store's table definition was not made from a schema, so it cannot make the keys of records to compare: build it with `TableDefinition::from_schema`",
            )
        })
}

/// Stamping a table without a stamp with `definition`'s settings, refused when its records
/// (`inference`) show other settings (or cannot tell): the stamp would lock out the services
/// that wrote them.
pub(crate) fn refuse_stamp_against(
    definition: &TableDefinition,
    table: &str,
    inference: &Inference,
) -> Result<(), StoreError> {
    let Some(ours) = &definition.stamp else {
        return Ok(());
    };
    if ours.profile().is_some_and(|p| inference.admits(p))
        || matches!(inference, Inference::Empty { .. })
    {
        return Ok(());
    }
    let fix = match inference.shown() {
        Some(p) => format!(
            "stamp it with the profile its records show (`--key-profile {p}`; `Profile::{p:?}`)"
        ),
        None => match inference {
            Inference::Reproduced { profiles, .. } => format!(
                "stamp it with one of the profiles its records show ({}), the one of the services that wrote them",
                names(profiles)
            ),
            _ => "find the profile of the services that wrote the records and stamp the table with it".to_owned(),
        },
    };
    Err(StoreError::validation(
        "PutItem",
        format!(
            "table `{table}` has no stamp, and {inference}: stamping it with {} would lock out the services that wrote them, so it was not stamped. To fix it, {fix}; to stamp it so anyway (after migrating its records to these settings), use `--force` (`stamp_table(true)`)",
            ours.describe()
        ),
    )
    .with_code(STAMP_MISMATCH_CODE))
}

/// Profiles as `` `a` or `b` ``.
fn names(profiles: &[Profile]) -> String {
    profiles
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(" or ")
}

/// A write refused by the stamp check.
fn refusal(operation: &'static str, table: &str, message: &str) -> StoreError {
    StoreError::new(
        StoreErrorKind::Validation,
        operation,
        format!("table `{table}`: {message}"),
    )
    .with_code(STAMP_MISMATCH_CODE)
}

/// The stamp of a stamp item read from the table (`None`: no stamp); one this release cannot
/// read is an error saying why.
pub(crate) fn stamp_of(found: Option<Item>) -> Result<Option<TableStamp>, StoreError> {
    found
        .map(|item| {
            TableStamp::from_item(&item)
                .map_err(|why| StoreError::new(StoreErrorKind::Other, "GetItem", why))
        })
        .transpose()
}

/// The stamp of `definition` and its item, to be written over the table's current stamp item
/// `found`: refused when the definition has none, or when the table is stamped with other
/// settings and not `force`.
pub(crate) fn stamp_to_write(
    definition: &TableDefinition,
    table: &str,
    found: Option<&Item>,
    force: bool,
) -> Result<(TableStamp, Item), StoreError> {
    const OP: &str = "PutItem";
    let Some(stamp) = definition.stamp.as_ref().filter(|_| stampable(definition)) else {
        return Err(StoreError::validation(
            OP,
            "this store's table definition has no stamp: build it with `TableDefinition::from_schema` (string table keys)",
        ));
    };
    let current = found.map(TableStamp::from_item);
    let refused = match current {
        _ if force => None,
        None => None,
        Some(Ok(current)) => current.refuses(stamp).map(|_| {
            format!(
                "table `{table}` is already stamped with {}; stamping it with {} would not change its keys: migrate its records first, then stamp it with `--force`",
                current.describe(),
                stamp.describe()
            )
        }),
        Some(Err(why)) => Some(format!(
            "table `{table}` holds a stamp this release cannot read ({why}); stamp it with `--force` to replace it"
        )),
    };
    if let Some(why) = refused {
        return Err(StoreError::validation(OP, why).with_code(STAMP_MISMATCH_CODE));
    }
    Ok((stamp.clone(), stamp.to_item(definition)))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::Schema;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn block_on<F: Future>(f: F) -> F::Output {
        match tokio::runtime::Builder::new_current_thread().build() {
            Ok(rt) => rt.block_on(f),
            Err(e) => panic!("no runtime: {e}"),
        }
    }

    fn schema(profile: Profile) -> Result<Schema, Box<dyn std::error::Error>> {
        let config = serde_json::json!({
            "hashKey": "hashKey",
            "rangeKey": "rangeKey",
            "entities": { "player": {
                "uniqueProperty": "playerId", "timestampProperty": "created",
                "shardBumps": [{ "timestamp": 0, "charBits": 2, "chars": 2 }]
            } },
            "generatedProperties": { "unsharded": { "scoreRangeKey": ["score", "created"] } },
            "propertyTranscodes": { "playerId": "string", "created": "timestamp", "score": "int" }
        });
        Ok(Schema::from_ts_config(&config, profile)?)
    }

    /// Players keyed by `schema`.
    fn players(schema: &Schema, n: i64) -> Result<Vec<Item>, Box<dyn std::error::Error>> {
        (0..n)
            .map(|i| {
                let item: Item = serde_dynamo::to_item(serde_json::json!({
                    "playerId": format!("p{i}"), "created": 1000 + i, "score": i - 3
                }))?;
                Ok(schema.entity("player")?.add_keys(&item)?)
            })
            .collect()
    }

    /// A table: its stamp item and records, counting the calls.
    #[derive(Default)]
    struct Table {
        stamp: Mutex<Option<Item>>,
        records: Vec<Item>,
        stamp_reads: AtomicUsize,
        samples: AtomicUsize,
    }

    impl StampIo for Table {
        fn read_stamp(&self) -> impl Future<Output = Result<Option<Item>, StoreError>> + Send {
            self.stamp_reads.fetch_add(1, Ordering::Relaxed);
            let found = self.stamp.lock().map(|s| s.clone()).unwrap_or_default();
            std::future::ready(Ok(found))
        }

        fn sample(
            &self,
            limit: usize,
        ) -> impl Future<Output = Result<Vec<Item>, StoreError>> + Send {
            self.samples.fetch_add(1, Ordering::Relaxed);
            std::future::ready(Ok(self.records.iter().take(limit).cloned().collect()))
        }

        fn write_stamp(&self, item: Item) -> impl Future<Output = Result<(), StoreError>> + Send {
            let result = match self.stamp.lock() {
                Ok(mut stamp) if stamp.is_none() => {
                    *stamp = Some(item);
                    Ok(())
                }
                _ => Err(StoreError::new(
                    StoreErrorKind::ConditionalCheckFailed,
                    "PutItem",
                    "stamped already",
                )),
            };
            std::future::ready(result)
        }
    }

    fn stamp_item(schema: &Schema) -> Result<Item, Box<dyn std::error::Error>> {
        let def = TableDefinition::from_schema(schema)?;
        Ok(def.stamp.as_ref().ok_or("no stamp")?.to_item(&def))
    }

    fn put(guard: &StampGuard, def: &TableDefinition, table: &Table) -> Result<(), StoreError> {
        block_on(guard.check(def, "T", "PutItem", true, table))
    }

    /// The verdict on a stamped table: a write under other settings is refused (and stays
    /// refused until the re-check), a read goes ahead; the table's own settings write.
    #[test]
    fn the_guard_refuses_writes_under_other_settings_only() -> TestResult {
        let npm = schema(Profile::Npm6_14)?;
        let native = TableDefinition::from_schema(&schema(Profile::Native)?)?;
        let table = Table {
            stamp: Mutex::new(Some(stamp_item(&npm)?)),
            ..Table::default()
        };
        let guard = StampGuard::default();
        let e = put(&guard, &native, &table)
            .err()
            .ok_or("a write under another profile went ahead")?;
        assert_eq!(e.code(), Some(STAMP_MISMATCH_CODE));
        assert!(
            e.message().contains("profile `npm-6.14`") && e.message().contains("profile `native`")
        );
        // the verdict is kept: no second read, still refused; a read goes ahead
        assert!(put(&guard, &native, &table).is_err());
        block_on(guard.check(&native, "T", "GetItem", false, &table))?;
        assert_eq!(table.stamp_reads.load(Ordering::Relaxed), 1);
        // the table's own profile writes
        put(
            &StampGuard::default(),
            &TableDefinition::from_schema(&npm)?,
            &table,
        )?;
        // a store whose definition has no stamp never reads one
        put(
            &StampGuard::default(),
            &native.clone().with_stamp(None),
            &table,
        )?;
        assert_eq!(table.stamp_reads.load(Ordering::Relaxed), 2);
        Ok(())
    }

    /// Issue 47: on a table without a stamp, the records decide. Another profile's records:
    /// refused before the first write, naming the profile the data shows (never the writer's
    /// own as the fix); this profile's: the first write stamps the table; an empty table: the
    /// same; records of no profile: refused.
    #[test]
    fn an_unstamped_table_is_judged_by_its_records() -> TestResult {
        let npm = schema(Profile::Npm6_14)?;
        let records = players(&npm, 40)?;
        for (writer, expected) in [
            (Profile::Native, Some("npm-6.14")),
            (Profile::Upstream8, Some("npm-6.14")),
            (Profile::Npm6_14, None),
        ] {
            let table = Table {
                records: records.clone(),
                ..Table::default()
            };
            let def = TableDefinition::from_schema(&schema(writer)?)?;
            let guard = StampGuard::default();
            let result = put(&guard, &def, &table);
            if let Some(shown) = expected {
                let e = result
                    .err()
                    .ok_or("a write under another profile went ahead")?;
                assert_eq!(e.code(), Some(STAMP_MISMATCH_CODE), "{e}");
                let text = e.to_string();
                assert!(
                    text.contains(&format!("profile `{shown}` and no other")),
                    "{text}"
                );
                assert!(text.contains(&format!("--key-profile {shown}")), "{text}");
                assert!(!text.contains(&format!("--key-profile {writer}")), "{text}");
                assert!(text.contains("nothing was written"), "{text}");
                assert!(table.stamp.lock().map_err(|e| e.to_string())?.is_none());
                // refused again without reading again
                assert!(put(&guard, &def, &table).is_err());
                assert_eq!(table.samples.load(Ordering::Relaxed), 1);
            } else {
                result?;
                let stamp = table.stamp.lock().map_err(|e| e.to_string())?.clone();
                let stamp = TableStamp::from_item(&stamp.ok_or("not stamped")?)?;
                assert_eq!(stamp.profile(), Some(Profile::Npm6_14));
            }
        }
        // an empty table is stamped on the first write (a read stamps nothing)
        let table = Table::default();
        let def = TableDefinition::from_schema(&schema(Profile::Native)?)?;
        let guard = StampGuard::default();
        block_on(guard.check(&def, "T", "Query", false, &table))?;
        assert!(table.stamp.lock().map_err(|e| e.to_string())?.is_none());
        put(&guard, &def, &table)?;
        let stamp = table.stamp.lock().map_err(|e| e.to_string())?.clone();
        assert_eq!(
            TableStamp::from_item(&stamp.ok_or("not stamped")?)?.profile(),
            Some(Profile::Native)
        );
        // records no profile reproduces (keys of another shard schedule)
        let mut other = players(&npm, 5)?;
        for item in &mut other {
            item.insert(
                "hashKey".to_owned(),
                serde_dynamo::AttributeValue::S("player!zz".to_owned()),
            );
        }
        let table = Table {
            records: other,
            ..Table::default()
        };
        let e = put(
            &StampGuard::default(),
            &TableDefinition::from_schema(&npm)?,
            &table,
        )
        .err()
        .ok_or("a write to an unexplained table went ahead")?;
        assert!(e.to_string().contains("no profile reproduces"), "{e}");
        assert!(e.to_string().contains("--key-profile <profile>"), "{e}");
        Ok(())
    }

    /// The verdict is read again once it is older than the interval, and at once after a
    /// write refused by a condition.
    #[test]
    fn the_verdict_is_read_again_after_the_interval_and_a_refused_condition() -> TestResult {
        let npm = schema(Profile::Npm6_14)?;
        let def = TableDefinition::from_schema(&npm)?;
        let table = Table {
            stamp: Mutex::new(Some(stamp_item(&npm)?)),
            ..Table::default()
        };
        let guard = StampGuard::new(Duration::from_millis(30));
        put(&guard, &def, &table)?;
        put(&guard, &def, &table)?;
        assert_eq!(table.stamp_reads.load(Ordering::Relaxed), 1);
        // another service stamps the table for another profile
        *table.stamp.lock().map_err(|e| e.to_string())? =
            Some(stamp_item(&schema(Profile::Upstream8)?)?);
        std::thread::sleep(Duration::from_millis(40));
        let e = put(&guard, &def, &table)
            .err()
            .ok_or("not seen after the interval")?;
        assert!(
            e.to_string().contains("stamped with profile `upstream-8`"),
            "{e}"
        );
        // a refused condition forgets the verdict
        let guard = StampGuard::default();
        assert!(put(&guard, &def, &table).is_err());
        *table.stamp.lock().map_err(|e| e.to_string())? = Some(stamp_item(&npm)?);
        assert!(
            put(&guard, &def, &table).is_err(),
            "kept within the interval"
        );
        let refused: Result<(), StoreError> = Err(StoreError::new(
            StoreErrorKind::ConditionalCheckFailed,
            "PutItem",
            "changed",
        ));
        assert!(guard.note(refused).is_err());
        put(&guard, &def, &table)?;
        Ok(())
    }
}
