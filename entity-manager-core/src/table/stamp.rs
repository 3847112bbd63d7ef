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

use serde_dynamo::{AttributeValue, Item};

use crate::model::{EntityModel, KeyMode, NumericHash, Profile, ShardHash, ShardSpace, TableModel};

/// The hash key value of the stamp item: no delimiter, so no entity's hash key.
pub const STAMP_HASH_KEY: &str = "__entityManager";
/// The range key value of the stamp item.
pub const STAMP_RANGE_KEY: &str = "tableStamp";
/// The attribute of the stamp item that holds the stamp (a map).
pub const STAMP_ATTRIBUTE: &str = "entityManagerTableStamp";
/// The error code of a write refused because the table is stamped for another profile
/// ([`StoreError::code`](crate::store::StoreError::code)).
pub const STAMP_MISMATCH_CODE: &str = "TableStampMismatch";
/// The version of the stamp layout.
const VERSION: &str = "1";

/// How the keys of a table are made: its key mode, shard space, numeric hashing and shard hash
/// (its [`Profile`]), and a fingerprint of the key-relevant configuration (key attribute names,
/// delimiters and, per entity, its unique and timestamp properties, shard bumps and generated
/// properties with their components' transcodes).
///
/// [`TableDefinition::from_schema`](super::TableDefinition::from_schema) computes the stamp of a schema; a store built from such a
/// definition writes it when it creates the table (`MemoryStore::new`,
/// `DynamoStore::create_table`) and checks it on first use and again once the check is older
/// than the re-check interval: a write under another profile or shard space is refused before
/// anything is written, a read of such a table logs a warning, and a table without a stamp is
/// judged by its records ([`Inference`](super::Inference)). A differing
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
    /// How unique values are hashed to pick shards. A stamp written before the stamp recorded
    /// it (the `shardHash` attribute) reads as [`ShardHash::StringHash`]: every release before
    /// it hashed so, the native profile included.
    pub shard_hash: ShardHash,
    /// A fingerprint (16 hex digits) of the key-relevant configuration of the whole table.
    pub fingerprint: String,
    /// The fingerprint of each entity's key-relevant configuration, by entity token.
    pub entities: BTreeMap<String, String>,
    /// The table's whole schema as its schema file ([`Schema::to_json`](crate::Schema::to_json),
    /// compact JSON), so that the table describes itself (the CLI needs only `--table`); read
    /// it back with [`TableStamp::schema`]. Set by
    /// [`TableDefinition::from_schema`](super::TableDefinition::from_schema) (not by
    /// [`TableStamp::of`], whose models are not yet validated); `None` for a stamp written
    /// before stamps carried it, or for a schema that has no schema file (a transcode of your
    /// own) or whose file would pass [`MAX_STAMP_SCHEMA_BYTES`].
    pub schema_json: Option<String>,
}

/// The largest schema file a stamp carries: a `DynamoDB` item holds at most 400 KB, and the
/// rest of the stamp is a few hundred bytes. A schema file is under 1 KB per entity with a few
/// indexes (the two entities and three indexes of `examples/schema.rs` take 1,685 bytes
/// pretty-printed, less as the stamp's compact JSON), so only a schema of hundreds of entities
/// passes it; its stamp then carries the profile and the
/// fingerprints alone, and the CLI asks for `--config`.
pub const MAX_STAMP_SCHEMA_BYTES: usize = 300 * 1024;

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
            shard_hash: table.shard_hash,
            fingerprint: hex(text.as_bytes()),
            entities,
            // a schema's own (`TableDefinition::from_schema`): the models alone may not be valid
            schema_json: None,
        }
    }

    /// The profile whose settings these are, or `None` for a combination no profile pins.
    pub fn profile(&self) -> Option<Profile> {
        Profile::matching(
            self.key_mode,
            self.shard_space,
            self.numeric_hash,
            self.shard_hash,
        )
    }

    /// The settings in words: `profile `npm-6.14` (key mode `typescript`, shard space
    /// `product`, numeric unique values hashed `decimal`, shard hash `string-hash`)`.
    pub fn describe(&self) -> String {
        let settings = format!(
            "key mode `{}`, shard space `{}`, numeric unique values hashed `{}`, shard hash `{}`",
            self.key_mode,
            self.shard_space,
            self.numeric_hash.as_str(),
            self.shard_hash
        );
        match self.profile() {
            Some(p) => format!("profile `{p}` ({settings})"),
            None => format!("no named profile ({settings})"),
        }
    }

    /// Why a service whose settings are `ours` may not write to a table stamped `self`, or
    /// `None` when it may (the same key mode, shard space, numeric hashing and shard hash).
    pub fn refuses(&self, ours: &Self) -> Option<String> {
        let settings = |s: &Self| (s.key_mode, s.shard_space, s.numeric_hash, s.shard_hash);
        if settings(self) == settings(ours) {
            return None;
        }
        let only_the_hash = (self.key_mode, self.shard_space, self.numeric_hash)
            == (ours.key_mode, ours.shard_space, ours.numeric_hash);
        if only_the_hash && self.key_mode == KeyMode::Transcoded {
            // a native table made by a release that hashed native shard suffixes with
            // `string-hash`: the one change of layout between releases
            return Some(format!(
                "the table's keys were made with shard hash `{}`, but this service picks shards with `{}` (the native profile hashes with SHA-256 since it stopped using `string-hash`, which crowds sequential ids into half the shards): its writes would put records in shards where the others do not look, so nothing was written. To fix it, recreate the table and load its records again (export them with `entity-manager scan`, import with `entity-manager import`), or keep the old layout with `TableModel::with_shard_hash(ShardHash::{:?})`",
                self.shard_hash, ours.shard_hash, self.shard_hash
            ));
        }
        let fix = match self.profile() {
            Some(p) => format!(
                "load the configuration with the table's profile (`Profile::{p:?}`; CLI: `--key-profile {p}`)"
            ),
            None => format!(
                "configure the table model with the table's settings (`TableModel::with_key_mode(KeyMode::{:?})`, `with_shard_space(ShardSpace::{:?})`, `with_numeric_hash(NumericHash::{:?})`, `with_shard_hash(ShardHash::{:?})`)",
                self.key_mode, self.shard_space, self.numeric_hash, self.shard_hash
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

    /// The stamp as the value of [`STAMP_ATTRIBUTE`] in the stamp item
    /// ([`TableStamp::to_item`], with the item's key).
    pub(super) fn attribute(&self) -> AttributeValue {
        let s = |v: &str| AttributeValue::S(v.to_owned());
        let mut stamp = std::collections::HashMap::from([
            ("version".to_owned(), s(VERSION)),
            ("keyMode".to_owned(), s(self.key_mode.as_str())),
            ("shardSpace".to_owned(), s(self.shard_space.as_str())),
            ("numericHash".to_owned(), s(self.numeric_hash.as_str())),
            ("shardHash".to_owned(), s(self.shard_hash.as_str())),
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
        if let Some(schema) = &self.schema_json {
            stamp.insert("schema".to_owned(), s(schema));
        }
        AttributeValue::M(stamp)
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
        // absent from the stamps of releases before it: they all hashed with `string-hash`
        let shard_hash = if stamp.contains_key("shardHash") {
            let name = text("shardHash")?;
            ShardHash::from_name(name)
                .ok_or_else(|| format!("unknown shard hash `{name}` in the stamp"))?
        } else {
            ShardHash::StringHash
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
            shard_hash,
            fingerprint: text("fingerprint")?.to_owned(),
            entities,
            schema_json: match stamp.get("schema") {
                Some(AttributeValue::S(schema)) => Some(schema.clone()),
                _ => None,
            },
        })
    }
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
    format!("{:016x}", fnv1a(bytes))
}

/// FNV-1a (64 bits): the stamp's fingerprint, and the hash that places items in scan segments
/// (`MemoryStore`).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |h, b| (h ^ u64::from(*b)).wrapping_mul(PRIME))
}
