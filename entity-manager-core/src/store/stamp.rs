//! The table stamp: how the keys of a table are made, recorded with the table, so that a
//! service configured another way cannot write keys the others do not find.
//!
//! The stamp is one reserved item (hash key [`STAMP_HASH_KEY`], range key [`STAMP_RANGE_KEY`])
//! rather than table tags: `DynamoDB` Local and other `DynamoDB`-API stores do not implement
//! tagging, tags need their own IAM permissions and are lost on a backup restore, and an item
//! is read with the one consistent `GetItem` every service may already make. The reserved hash
//! key holds no delimiter, so it is no entity's (every entity hash key holds the shard key
//! delimiter); the item has no index key attribute, so it is in no index; scans of both stores
//! leave it out, so scans, purges, audits and migrations never see it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::future::Future;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_dynamo::{AttributeValue, Item};

use crate::model::{EntityModel, KeyMode, NumericHash, Profile, ShardSpace, TableModel};

use super::{KeyType, StoreError, StoreErrorKind, TableDefinition};

/// The hash key value of the stamp item: no delimiter, so no entity's hash key.
pub const STAMP_HASH_KEY: &str = "__entityManager";
/// The range key value of the stamp item.
pub const STAMP_RANGE_KEY: &str = "tableStamp";
/// The attribute of the stamp item that holds the stamp (a map).
pub const STAMP_ATTRIBUTE: &str = "entityManagerTableStamp";
/// The error code of a write refused because the table is stamped for another profile
/// ([`StoreError::code`]).
pub const STAMP_MISMATCH_CODE: &str = "TableStampMismatch";
/// The version of the stamp layout.
const VERSION: &str = "1";

/// How the keys of a table are made: its key mode, shard space and numeric hashing (its
/// [`Profile`]), and a fingerprint of the key-relevant configuration (key attribute names,
/// delimiters and, per entity, its unique and timestamp properties, shard bumps and generated
/// properties with their components' transcodes).
///
/// [`TableDefinition::from_schema`] computes the stamp of a schema; a store built from such a
/// definition writes it when it creates the table (`MemoryStore::new`,
/// `DynamoStore::create_table`) and checks it on first use: a write under another profile or
/// shard space is refused before anything is written, a read of such a table logs a warning,
/// and a table without a stamp keeps working with a one-time warning. A differing
/// fingerprint (a configuration changed since the stamp) is a warning only.
///
/// ```
/// use entity_manager_core::store::{TableDefinition, TableStamp};
/// use entity_manager_core::Schema;
/// use entity_manager_core::model::{KeyMode, Profile};
/// use serde_json::json;
///
/// let config = json!({
///     "hashKey": "hashKey",
///     "rangeKey": "rangeKey",
///     "entities": { "user": { "uniqueProperty": "userId", "timestampProperty": "created" } },
///     "propertyTranscodes": { "userId": "string", "created": "timestamp" }
/// });
/// let npm = Schema::from_ts_config(&config, Profile::Npm6_14)?;
/// let stamp = TableDefinition::from_schema(&npm)?.stamp.ok_or("no stamp")?;
/// assert_eq!((stamp.profile(), stamp.key_mode), (Some(Profile::Npm6_14), KeyMode::TypeScript));
///
/// let native = TableStamp::of(Schema::from_ts_config(&config, Profile::Native)?.table(), npm.entities());
/// assert!(stamp.refuses(&native).is_some()); // another key mode: writes are refused
/// assert_eq!(stamp.fingerprint, native.fingerprint); // the same entities
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableStamp {
    /// How component values are written inside keys.
    pub key_mode: KeyMode,
    /// The shard-space rule.
    pub shard_space: ShardSpace,
    /// How numeric unique values are hashed.
    pub numeric_hash: NumericHash,
    /// A fingerprint (16 hex digits) of the key-relevant configuration of the whole table.
    pub fingerprint: String,
    /// The fingerprint of each entity's key-relevant configuration, by entity token.
    pub entities: BTreeMap<String, String>,
}

impl TableStamp {
    /// The stamp of a table with these settings and entities.
    pub fn of<'e>(table: &TableModel, entities: impl IntoIterator<Item = &'e EntityModel>) -> Self {
        let mut text = String::new();
        let d = &table.delimiters;
        let _ = write!(
            text,
            "{:?}|{:?}|{:?}|{:?}|{:?}",
            table.hash_key, table.range_key, d.generated_key, d.generated_value, d.shard_key
        );
        // each entity's fingerprint covers the table settings too, so that a changed delimiter
        // or key name shows on every entity
        let entities: BTreeMap<String, String> = entities
            .into_iter()
            .map(|e| {
                let print = hex(format!("{text}|{}", fingerprint_of(e)).as_bytes());
                (e.token.to_string(), print)
            })
            .collect();
        for (token, print) in &entities {
            let _ = write!(text, "|{token:?}={print}");
        }
        Self {
            key_mode: table.key_mode,
            shard_space: table.shard_space,
            numeric_hash: table.numeric_hash,
            fingerprint: hex(text.as_bytes()),
            entities,
        }
    }

    /// The profile whose settings these are, or `None` for a combination no profile pins.
    pub fn profile(&self) -> Option<Profile> {
        Profile::matching(self.key_mode, self.shard_space, self.numeric_hash)
    }

    /// The settings in words: `profile `npm-6.14` (key mode `typescript`, shard space
    /// `product`, numeric unique values hashed `decimal`)`.
    pub fn describe(&self) -> String {
        let settings = format!(
            "key mode `{}`, shard space `{}`, numeric unique values hashed `{}`",
            self.key_mode,
            self.shard_space,
            self.numeric_hash.as_str()
        );
        match self.profile() {
            Some(p) => format!("profile `{p}` ({settings})"),
            None => format!("no named profile ({settings})"),
        }
    }

    /// Why a service whose settings are `ours` may not write to a table stamped `self`, or
    /// `None` when it may (the same key mode, shard space and numeric hashing).
    pub fn refuses(&self, ours: &Self) -> Option<String> {
        if (self.key_mode, self.shard_space, self.numeric_hash)
            == (ours.key_mode, ours.shard_space, ours.numeric_hash)
        {
            return None;
        }
        let fix = match self.profile() {
            Some(p) => format!(
                "load the configuration with the table's profile (`Profile::{p:?}`; CLI: `--key-profile {p}`)"
            ),
            None => format!(
                "configure the table model with the table's settings (`TableModel::with_key_mode(KeyMode::{:?})`, `with_shard_space(ShardSpace::{:?})`, `with_numeric_hash(NumericHash::{:?})`)",
                self.key_mode, self.shard_space, self.numeric_hash
            ),
        };
        Some(format!(
            "the table is stamped with {}, but this service makes keys with {}: its writes would make keys the services sharing the table do not find, so nothing was written. To fix it, {fix}; to change the profile of the table itself, migrate its records and stamp it again (`entity-manager table stamp --force`)",
            self.describe(),
            ours.describe()
        ))
    }

    /// The entities whose configuration differs from the stamp's (or that it does not know):
    /// empty when every entity of `ours` is as stamped.
    pub fn changed_entities(&self, ours: &Self) -> Vec<String> {
        ours.entities
            .iter()
            .filter(|(token, print)| self.entities.get(*token) != Some(*print))
            .map(|(token, _)| token.clone())
            .collect()
    }

    /// The stamp item of a table with this definition: the reserved key and the stamp.
    pub fn to_item(&self, definition: &TableDefinition) -> Item {
        let s = |v: &str| AttributeValue::S(v.to_owned());
        let mut stamp = std::collections::HashMap::from([
            ("version".to_owned(), s(VERSION)),
            ("keyMode".to_owned(), s(self.key_mode.as_str())),
            ("shardSpace".to_owned(), s(self.shard_space.as_str())),
            ("numericHash".to_owned(), s(self.numeric_hash.as_str())),
            ("fingerprint".to_owned(), s(&self.fingerprint)),
            (
                "entities".to_owned(),
                AttributeValue::M(
                    self.entities
                        .iter()
                        .map(|(k, v)| (k.clone(), s(v)))
                        .collect(),
                ),
            ),
        ]);
        if let Some(p) = self.profile() {
            stamp.insert("profile".to_owned(), s(p.as_str()));
        }
        let mut item = stamp_key(definition);
        item.insert(STAMP_ATTRIBUTE.to_owned(), AttributeValue::M(stamp));
        item
    }

    /// The stamp an item holds, or why it holds none that this version can read.
    pub fn from_item(item: &Item) -> Result<Self, String> {
        let Some(AttributeValue::M(stamp)) = item.get(STAMP_ATTRIBUTE) else {
            return Err(format!(
                "the stamp item has no map attribute `{STAMP_ATTRIBUTE}`"
            ));
        };
        let text = |name: &str| match stamp.get(name) {
            Some(AttributeValue::S(s)) => Ok(s.as_str()),
            _ => Err(format!("the stamp has no string `{name}`")),
        };
        let version = text("version")?;
        if version != VERSION {
            return Err(format!(
                "the stamp has layout version {version}; this release reads version {VERSION}: upgrade entity-manager"
            ));
        }
        let key_mode = match text("keyMode")? {
            "transcoded" => KeyMode::Transcoded,
            "typescript" => KeyMode::TypeScript,
            other => return Err(format!("unknown key mode `{other}` in the stamp")),
        };
        let shard_space = match text("shardSpace")? {
            "product" => ShardSpace::Product,
            "power" => ShardSpace::Power,
            other => return Err(format!("unknown shard space `{other}` in the stamp")),
        };
        let numeric_hash = match text("numericHash")? {
            "decimal" => NumericHash::Decimal,
            "constant" => NumericHash::Constant,
            other => return Err(format!("unknown numeric hashing `{other}` in the stamp")),
        };
        let entities = match stamp.get("entities") {
            Some(AttributeValue::M(m)) => m
                .iter()
                .filter_map(|(k, v)| match v {
                    AttributeValue::S(s) => Some((k.clone(), s.clone())),
                    _ => None,
                })
                .collect(),
            _ => BTreeMap::new(),
        };
        Ok(Self {
            key_mode,
            shard_space,
            numeric_hash,
            fingerprint: text("fingerprint")?.to_owned(),
            entities,
        })
    }
}

/// The key of the stamp item of a table with this definition.
pub fn stamp_key(definition: &TableDefinition) -> Item {
    let mut key = Item::default();
    key.insert(
        definition.hash_key.name.clone(),
        AttributeValue::S(STAMP_HASH_KEY.to_owned()),
    );
    key.insert(
        definition.range_key.name.clone(),
        AttributeValue::S(STAMP_RANGE_KEY.to_owned()),
    );
    key
}

/// Whether `item` is the stamp item of a table with this definition.
pub fn is_stamp(item: &Item, definition: &TableDefinition) -> bool {
    matches!(item.get(&definition.hash_key.name), Some(AttributeValue::S(h)) if h == STAMP_HASH_KEY)
        && matches!(item.get(&definition.range_key.name), Some(AttributeValue::S(r)) if r == STAMP_RANGE_KEY)
}

/// Whether a table of this definition can hold the stamp (string table keys).
pub(crate) fn stampable(definition: &TableDefinition) -> bool {
    definition.hash_key.key_type == KeyType::S && definition.range_key.key_type == KeyType::S
}

/// The key-relevant configuration of an entity, as text.
fn fingerprint_of(e: &EntityModel) -> String {
    let transcode = |name: &str| e.property(name).map_or("-", |p| p.transcode.name());
    let mut text = format!(
        "{:?}|{:?}:{}|{:?}:{}",
        e.token,
        e.unique_property,
        transcode(&e.unique_property),
        e.timestamp_property,
        transcode(&e.timestamp_property)
    );
    for b in e.shard_bumps.iter() {
        let _ = write!(text, "|bump:{}:{}:{}", b.timestamp, b.char_bits, b.chars);
    }
    for g in e.generated.iter() {
        let _ = write!(text, "|{:?}:{:?}:{}", g.name, g.kind, g.atomic);
        for c in g.components.iter() {
            let _ = write!(text, ":{c:?}={}", transcode(c));
        }
    }
    text
}

/// FNV-1a (64 bits) of `bytes`, as 16 hex digits.
fn hex(bytes: &[u8]) -> String {
    format!("{:016x}", super::memory::fnv1a(bytes))
}

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
