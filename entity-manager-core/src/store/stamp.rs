//! The stamp check on first use: a store whose definition has a [`TableStamp`] reads the
//! table's stamp item once and refuses writes when the table is stamped for another profile;
//! stamping a table writes the item. The stamp itself (what it records, its item) is
//! `crate::table`'s.

use std::future::Future;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_dynamo::Item;

use super::{StoreError, StoreErrorKind};
use crate::model::Profile;
use crate::table::{STAMP_MISMATCH_CODE, TableDefinition, TableStamp, stampable};

// ---------------------------------------------------------------------------------------------
// the check on first use

/// What a store found on first use of its table.
#[derive(Debug)]
enum Verdict {
    /// Writes go ahead.
    Clear,
    /// Writes are refused with this message.
    Refused(String),
}

/// The first-use check of a store whose definition has a stamp: reads the table's stamp once
/// and remembers the verdict (a failed read is tried again on the next call).
#[derive(Debug, Default)]
pub(crate) struct StampGuard {
    verdict: OnceLock<Verdict>,
    warned: AtomicBool,
}

impl StampGuard {
    /// `Ok` when the call may go ahead: always for a read (a mismatch is logged once), for a
    /// write when the table's stamp has this store's settings or there is no stamp (logged
    /// once). `read_stamp` reads the stamp item.
    pub(crate) async fn check<F, Fut>(
        &self,
        definition: &TableDefinition,
        table: &str,
        operation: &'static str,
        write: bool,
        read_stamp: F,
    ) -> Result<(), StoreError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Option<Item>, StoreError>>,
    {
        let Some(ours) = &definition.stamp else {
            return Ok(());
        };
        let verdict = if let Some(v) = self.verdict.get() {
            v
        } else {
            let found = match read_stamp().await {
                Ok(found) => found,
                Err(e) if write => return Err(e),
                Err(_) => return Ok(()),
            };
            let verdict = self.judge(ours, table, found.as_ref());
            self.verdict.get_or_init(|| verdict)
        };
        match verdict {
            Verdict::Refused(message) if write => Err(StoreError::new(
                StoreErrorKind::Validation,
                operation,
                format!("table `{table}`: {message}"),
            )
            .with_code(STAMP_MISMATCH_CODE)),
            _ => Ok(()),
        }
    }

    fn judge(&self, ours: &TableStamp, table: &str, found: Option<&Item>) -> Verdict {
        let Some(item) = found else {
            self.warn(&format!(
                "table `{table}` has no stamp recording how its keys are made, so a service configured with another profile could write keys the others do not find; stamp it once with `entity-manager table stamp --table {table} --config <config.json> --key-profile {}` (or `DynamoStore::stamp_table`)",
                ours.profile().map_or("<profile>", Profile::as_str)
            ));
            return Verdict::Clear;
        };
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

    fn warn(&self, message: &str) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(target: "entity_manager::stamp", "{message}");
        }
    }
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
    use super::*;
    use crate::key_type::KeyType;
    use crate::model::{EntityModel, TableModel};

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn definition(table: &TableModel) -> TableDefinition {
        TableDefinition::new(("hashKey", KeyType::S), ("rangeKey", KeyType::S))
            .with_stamp(Some(TableStamp::of(table, &[] as &[EntityModel])))
    }

    fn block_on<F: Future>(f: F) -> F::Output {
        match tokio::runtime::Builder::new_current_thread().build() {
            Ok(rt) => rt.block_on(f),
            Err(e) => panic!("no runtime: {e}"),
        }
    }

    /// The verdict on first use: a write under other settings is refused (and stays refused),
    /// a read goes ahead; a table without a stamp, or with the store's settings, takes writes.
    #[test]
    fn the_guard_refuses_writes_under_other_settings_only() -> TestResult {
        let npm = TableModel::DEFAULT.with_profile(Profile::Npm6_14);
        let native = TableModel::DEFAULT.with_profile(Profile::Native);
        let table_item = |t: &TableModel| {
            let def = definition(t);
            def.stamp.as_ref().map(|s| s.to_item(&def))
        };
        let guard = StampGuard::default();
        let ours = definition(&native);
        let found = table_item(&npm);
        let write =
            block_on(guard.check(&ours, "T", "PutItem", true, || async { Ok(found.clone()) }));
        let e = write
            .err()
            .ok_or("a write under another profile went ahead")?;
        assert_eq!(e.code(), Some(STAMP_MISMATCH_CODE));
        assert!(
            e.message().contains("profile `npm-6.14`") && e.message().contains("profile `native`")
        );
        // the verdict is kept: no second read, still refused; a read goes ahead
        let again = block_on(guard.check(&ours, "T", "PutItem", true, || async {
            Err(StoreError::new(
                StoreErrorKind::Other,
                "GetItem",
                "read twice",
            ))
        }));
        assert_eq!(
            again.err().map(|e| e.code().map(str::to_owned)),
            Some(Some(STAMP_MISMATCH_CODE.to_owned()))
        );
        block_on(guard.check(&ours, "T", "GetItem", false, || async { Ok(None) }))?;

        for found in [None, table_item(&native)] {
            let guard = StampGuard::default();
            block_on(guard.check(&ours, "T", "PutItem", true, || async { Ok(found) }))?;
        }
        // a store whose definition has no stamp never reads one
        block_on(StampGuard::default().check(
            &definition(&native).with_stamp(None),
            "T",
            "PutItem",
            true,
            || async {
                Err(StoreError::new(
                    StoreErrorKind::Other,
                    "GetItem",
                    "no read expected",
                ))
            },
        ))?;
        Ok(())
    }
}
