//! The schema file: a lossless, versioned JSON form of a [`Schema`].
//!
//! The TypeScript configuration ([`Schema::to_ts_config`]) cannot hold everything a Rust
//! schema says: multi-attribute indexes, generated properties and indexes that belong to one
//! entity, atomic unsharded generated properties, the key profile. The schema file holds all of
//! it, so that `Schema::from_json(&schema.to_json()?)? == schema`, and it is what a table's
//! [stamp](crate::store::TableStamp) carries so that the table describes itself.
//!
//! Its root keys are those of the TypeScript configuration (`hashKey`, `rangeKey`, the three
//! delimiters, `throttle`, `entities`) plus the version key `entityManagerSchema` and the key
//! profile; each entity holds its own `propertyTranscodes`, `generated` properties and
//! `indexes`. A JSON object without the version key is a TypeScript configuration and loads as
//! one ([`Schema::from_json`]).

use std::borrow::Cow;
use std::fmt;

use serde_json::{Map, Value, json};

use crate::error::{ConfigError, ConfigProblem};
use crate::model::{
    Delimiters, EntityModel, GeneratedKind, GeneratedProperty, Index, IndexAttribute, KeyMode,
    MultiKey, Name, NumericHash, Profile, Projection, Property, ShardBump, ShardHash, ShardSpace,
    TableModel,
};
use crate::schema::Schema;
use crate::store::{MAX_STAMP_SCHEMA_BYTES, TableStamp};
use crate::transcode::{self, KeyType};
use crate::validate::{join, unknown_key_message};

/// The key of the schema file's root that holds its layout version; a JSON object without it
/// is read as a TypeScript configuration.
pub const SCHEMA_VERSION_KEY: &str = "entityManagerSchema";
/// The layout version this release writes and reads.
pub const SCHEMA_VERSION: u64 = 1;

const ROOT_KEYS: &[&str] = &[
    SCHEMA_VERSION_KEY,
    "hashKey",
    "rangeKey",
    "generatedKeyDelimiter",
    "generatedValueDelimiter",
    "shardKeyDelimiter",
    "throttle",
    "keyProfile",
    "keyMode",
    "shardSpace",
    "numericHash",
    "shardHash",
    "entities",
];
const ENTITY_KEYS: &[&str] = &[
    "uniqueProperty",
    "timestampProperty",
    "defaultLimit",
    "defaultPageSize",
    "shardBumps",
    "propertyTranscodes",
    "generated",
    "indexes",
];
const BUMP_KEYS: &[&str] = &["timestamp", "charBits", "chars"];
const GENERATED_KEYS: &[&str] = &["name", "sharded", "atomic", "components"];
const CLASSIC_INDEX_KEYS: &[&str] = &["hashKey", "rangeKey", "projections"];
const MULTI_INDEX_KEYS: &[&str] = &["partition", "sort", "sharded", "projections"];
const ATTRIBUTE_KEYS: &[&str] = &["name", "type"];

impl Schema {
    /// The schema file of this schema: a versioned JSON object that holds everything the schema
    /// says (the key profile, every entity's transcodes, generated properties, classic and
    /// multi-attribute indexes, projections and shard bumps), read back by
    /// [`Schema::from_json`] to an equal schema.
    ///
    /// ```
    /// use entity_manager_core::Schema;
    /// use entity_manager_core::model::Profile;
    /// use serde_json::json;
    ///
    /// let config = json!({
    ///     "hashKey": "hashKey",
    ///     "rangeKey": "rangeKey",
    ///     "entities": { "user": { "uniqueProperty": "userId", "timestampProperty": "created" } },
    ///     "propertyTranscodes": { "userId": "string", "created": "timestamp" }
    /// });
    /// let schema = Schema::from_ts_config(&config, Profile::Native)?;
    /// let file = schema.to_json()?;
    /// assert_eq!(file["entityManagerSchema"], 1);
    /// assert_eq!(file["keyProfile"], "native");
    /// assert_eq!(Schema::from_json(&file)?, schema);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming each property whose transcode is not built in: JSON holds a
    /// transcode's name, not its code.
    pub fn to_json(&self) -> Result<Value, ConfigError> {
        let (file, problems) = document(self.table(), self.entities());
        if problems.is_empty() {
            Ok(file)
        } else {
            Err(ConfigError { problems })
        }
    }

    /// [`to_json`](Self::to_json) as the text of a file: pretty-printed, two-space indented,
    /// with a final newline, so that a committed file diffs line by line.
    pub fn to_json_string(&self) -> Result<String, ConfigError> {
        let file = self.to_json()?;
        // a `Value` always serialises
        let mut text = serde_json::to_string_pretty(&file).unwrap_or_default();
        text.push('\n');
        Ok(text)
    }

    /// Whether `json` is a schema file ([`to_json`](Self::to_json)) rather than a TypeScript
    /// configuration: an object with the key [`SCHEMA_VERSION_KEY`].
    pub fn is_schema_file(json: &Value) -> bool {
        json.get(SCHEMA_VERSION_KEY).is_some()
    }

    /// Reads a schema file ([`to_json`](Self::to_json)); a JSON object without the version key
    /// [`SCHEMA_VERSION_KEY`] is a TypeScript configuration and loads as
    /// [`Schema::from_ts_config`] under [`Profile::Npm6_14`] (the release whose configurations
    /// these are; call `from_ts_config` for another profile).
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] listing every problem at once, each at its dotted path: unknown keys
    /// (with a suggestion for a likely typo), wrong JSON types, missing required fields, an
    /// unknown version, transcode, key type or profile, then every rule of [`Schema::new`].
    pub fn from_json(json: &Value) -> Result<Self, ConfigError> {
        if !Self::is_schema_file(json) {
            return Self::from_ts_config(json, Profile::Npm6_14);
        }
        let mut reader = Reader::default();
        let read = reader.root(json);
        match read {
            Some((table, entities)) if reader.problems.is_empty() => Self::new(table, entities),
            _ => Err(ConfigError {
                problems: reader.problems,
            }),
        }
    }

    /// What differs between this schema and `other`, by path in their schema files
    /// ([`to_json`](Self::to_json)): empty when both make the same keys and indexes. The order
    /// of entities and of indexes does not count; every other list (shard bumps, generated
    /// properties and their components, key attributes) does.
    ///
    /// ```
    /// use entity_manager_core::Schema;
    /// use entity_manager_core::model::Profile;
    /// use serde_json::json;
    ///
    /// let config = |score: &str| json!({
    ///     "hashKey": "hashKey",
    ///     "rangeKey": "rangeKey",
    ///     "entities": { "user": { "uniqueProperty": "userId", "timestampProperty": "created" } },
    ///     "propertyTranscodes": { "userId": "string", "created": "timestamp", "score": score }
    /// });
    /// let a = Schema::from_ts_config(&config("int"), Profile::Native)?;
    /// let b = Schema::from_ts_config(&config("fix6"), Profile::Native)?;
    /// let found = a.differences(&b);
    /// assert_eq!(found.len(), 1);
    /// assert_eq!(found[0].path, "entities.user.propertyTranscodes.score");
    /// assert_eq!(found[0].to_string(), r#"entities.user.propertyTranscodes.score: "int" ≠ "fix6""#);
    /// assert!(a.differences(&a).is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn differences(&self, other: &Self) -> Vec<SchemaDifference> {
        let (left, _) = document(self.table(), self.entities());
        let (right, _) = document(other.table(), other.entities());
        let mut found = Vec::new();
        diff("", Some(&left), Some(&right), &mut found);
        found
    }
}

impl TableStamp {
    /// The schema the stamp carries ([`schema_json`](Self::schema_json)), read back: `None`
    /// when it carries none.
    ///
    /// ```
    /// use entity_manager_core::store::TableDefinition;
    /// use entity_manager_core::Schema;
    /// use entity_manager_core::model::Profile;
    /// use serde_json::json;
    ///
    /// let config = json!({
    ///     "hashKey": "hashKey",
    ///     "rangeKey": "rangeKey",
    ///     "entities": { "user": { "uniqueProperty": "userId", "timestampProperty": "created" } },
    ///     "propertyTranscodes": { "userId": "string", "created": "timestamp" }
    /// });
    /// let schema = Schema::from_ts_config(&config, Profile::Native)?;
    /// let stamp = TableDefinition::from_schema(&schema)?.stamp.ok_or("no stamp")?;
    /// assert_eq!(stamp.schema().transpose()?, Some(schema));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Inside the `Some`: the stamp's schema file is not JSON or not a valid schema (a stamp
    /// written by hand, or by a later release).
    pub fn schema(&self) -> Option<Result<Schema, ConfigError>> {
        let text = self.schema_json.as_deref()?;
        Some(match serde_json::from_str::<serde_json::Value>(text) {
            Ok(file) => Schema::from_json(&file),
            Err(e) => Err(ConfigError {
                problems: vec![ConfigProblem {
                    path: String::new(),
                    message: format!("the stamp's schema is not JSON: {e}"),
                    rule: None,
                }],
            }),
        })
    }
}

impl Schema {
    /// The schema file a stamp of this schema carries: `None` when the schema has none (a
    /// transcode of your own) or it would pass [`MAX_STAMP_SCHEMA_BYTES`].
    pub(crate) fn stamp_schema(&self) -> Option<String> {
        let file = self.to_json().ok()?;
        Some(file.to_string()).filter(|text| text.len() <= MAX_STAMP_SCHEMA_BYTES)
    }
}

/// Two schemas are equal when they have the same table settings and the same entities in the
/// same order (transcodes compared by name).
impl PartialEq for Schema {
    fn eq(&self, other: &Self) -> bool {
        self.table() == other.table() && self.entities() == other.entities()
    }
}

/// One difference between two schemas ([`Schema::differences`]): the path in their schema
/// files and the value on each side (`None`: absent on that side).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SchemaDifference {
    /// The dotted path, such as `entities.order.indexes.byStatus.partition.1.name`.
    pub path: String,
    /// The value in the schema `differences` was called on.
    pub left: Option<Value>,
    /// The value in the other schema.
    pub right: Option<Value>,
}

impl fmt::Display for SchemaDifference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = |v: &Option<Value>| {
            v.as_ref()
                .map_or_else(|| "(absent)".to_owned(), Value::to_string)
        };
        let path = if self.path.is_empty() {
            "(root)"
        } else {
            &self.path
        };
        write!(f, "{path}: {} ≠ {}", side(&self.left), side(&self.right))
    }
}

/// Walks two JSON values, reporting every path where they differ (objects by key, in any
/// order; arrays by position).
fn diff(
    path: &str,
    left: Option<&Value>,
    right: Option<&Value>,
    found: &mut Vec<SchemaDifference>,
) {
    match (left, right) {
        (Some(Value::Object(l)), Some(Value::Object(r))) => {
            for (key, lv) in l {
                diff(&join(path, key), Some(lv), r.get(key), found);
            }
            for (key, rv) in r.iter().filter(|(k, _)| !l.contains_key(*k)) {
                diff(&join(path, key), None, Some(rv), found);
            }
        }
        (Some(Value::Array(l)), Some(Value::Array(r))) => {
            for i in 0..l.len().max(r.len()) {
                diff(&join(path, &i.to_string()), l.get(i), r.get(i), found);
            }
        }
        (l, r) if l == r => {}
        (l, r) => found.push(SchemaDifference {
            path: path.to_owned(),
            left: l.cloned(),
            right: r.cloned(),
        }),
    }
}

// ---------------------------------------------------------------------------------------------
// writing

/// The schema file of a table and its entities, and the problems (transcodes that are not
/// built in, written by name all the same).
pub(crate) fn document<'e>(
    table: &TableModel,
    entities: impl IntoIterator<Item = &'e EntityModel>,
) -> (Value, Vec<ConfigProblem>) {
    let mut problems = Vec::new();
    let mut root = Map::new();
    root.insert(SCHEMA_VERSION_KEY.into(), json!(SCHEMA_VERSION));
    root.insert("hashKey".into(), json!(table.hash_key));
    root.insert("rangeKey".into(), json!(table.range_key));
    for (name, value) in table.delimiters.named() {
        root.insert(name.into(), json!(value));
    }
    root.insert("throttle".into(), json!(table.throttle));
    if let Some(profile) = Profile::matching(
        table.key_mode,
        table.shard_space,
        table.numeric_hash,
        table.shard_hash,
    ) {
        root.insert("keyProfile".into(), json!(profile.as_str()));
    } else {
        root.insert("keyMode".into(), json!(table.key_mode.as_str()));
        root.insert("shardSpace".into(), json!(table.shard_space.as_str()));
        root.insert("numericHash".into(), json!(table.numeric_hash.as_str()));
        root.insert("shardHash".into(), json!(table.shard_hash.as_str()));
    }
    let mut out = Map::new();
    for entity in entities {
        let path = join("entities", &entity.token);
        let mut transcodes = Map::new();
        for property in entity.properties.iter() {
            let name = property.transcode.name();
            if transcode::builtin(name).is_none() {
                problems.push(ConfigProblem {
                    path: join(&join(&path, "propertyTranscodes"), &property.name),
                    message: format!(
                        "entity `{}` gives `{}` the transcode `{name}`, which is not built in; a schema file names a transcode and cannot carry its code, so use a built-in transcode",
                        entity.token, property.name
                    ),
                    rule: None,
                });
            }
            transcodes.insert(property.name.to_string(), json!(name));
        }
        let generated: Vec<Value> = entity
            .generated
            .iter()
            .map(|g| {
                json!({
                    "name": g.name,
                    "sharded": g.kind == GeneratedKind::Sharded,
                    "atomic": g.atomic,
                    "components": g.components,
                })
            })
            .collect();
        let indexes: Map<String, Value> = entity
            .indexes
            .iter()
            .map(|index| (index.name.to_string(), index_json(index)))
            .collect();
        let mut fields = entity_json(entity);
        fields.insert("propertyTranscodes".into(), Value::Object(transcodes));
        fields.insert("generated".into(), json!(generated));
        fields.insert("indexes".into(), Value::Object(indexes));
        out.insert(entity.token.to_string(), Value::Object(fields));
    }
    root.insert("entities".into(), Value::Object(out));
    (Value::Object(root), problems)
}

/// The fields of an entity that the TypeScript configuration has too: its unique and
/// timestamp properties, query defaults and shard bumps.
pub(crate) fn entity_json(entity: &EntityModel) -> Map<String, Value> {
    let bumps: Vec<Value> = entity
        .shard_bumps
        .iter()
        .map(|b| json!({ "timestamp": b.timestamp, "charBits": b.char_bits, "chars": b.chars }))
        .collect();
    let mut fields = Map::new();
    fields.insert("uniqueProperty".into(), json!(entity.unique_property));
    fields.insert("timestampProperty".into(), json!(entity.timestamp_property));
    fields.insert("defaultLimit".into(), json!(entity.default_limit));
    fields.insert("defaultPageSize".into(), json!(entity.default_page_size));
    fields.insert("shardBumps".into(), json!(bumps));
    fields
}

/// An index: a classic one as the TypeScript configuration writes it (`hashKey`, `rangeKey`,
/// `projections`), a multi-attribute one with its `partition` and `sort` attributes.
pub(crate) fn index_json(index: &Index) -> Value {
    let mut fields = Map::new();
    match &index.multi {
        None => {
            fields.insert("hashKey".into(), json!(index.hash_key));
            fields.insert("rangeKey".into(), json!(index.range_key));
        }
        Some(multi) => {
            let attributes = |list: &[IndexAttribute]| -> Vec<Value> {
                list.iter()
                    .map(|a| json!({ "name": a.name, "type": key_type_name(a.key_type) }))
                    .collect()
            };
            fields.insert("partition".into(), json!(attributes(&multi.hash)));
            fields.insert("sort".into(), json!(attributes(&multi.range)));
            fields.insert("sharded".into(), json!(multi.sharded));
        }
    }
    match &index.projection {
        Projection::All => {}
        Projection::KeysOnly => {
            fields.insert("projections".into(), json!([]));
        }
        Projection::Include(names) => {
            fields.insert("projections".into(), json!(names));
        }
    }
    Value::Object(fields)
}

fn key_type_name(key_type: KeyType) -> &'static str {
    match key_type {
        KeyType::S => "S",
        KeyType::N => "N",
        KeyType::B => "B",
    }
}

// ---------------------------------------------------------------------------------------------
// reading

/// Reads a schema file, collecting every shape problem.
#[derive(Default)]
struct Reader {
    problems: Vec<ConfigProblem>,
}

impl Reader {
    fn problem(&mut self, path: &str, message: String) {
        self.problems.push(ConfigProblem {
            path: path.to_owned(),
            message,
            rule: None,
        });
    }

    /// The object at `path`, its unknown keys reported.
    fn object<'v>(
        &mut self,
        value: &'v Value,
        path: &str,
        known: &[&str],
    ) -> Option<&'v Map<String, Value>> {
        let Value::Object(map) = value else {
            self.problem(path, format!("expected an object, found {value}"));
            return None;
        };
        for key in map.keys().filter(|k| !known.contains(&k.as_str())) {
            self.problem(&join(path, key), unknown_key_message(key, known));
        }
        Some(map)
    }

    /// The value of `key`, or `None` with a problem at `path` (the object's).
    fn required<'v>(
        &mut self,
        map: &'v Map<String, Value>,
        path: &str,
        key: &str,
    ) -> Option<&'v Value> {
        let found = map.get(key);
        if found.is_none() {
            self.problem(path, format!("missing the required key `{key}`"));
        }
        found
    }

    /// A required string.
    fn string(&mut self, map: &Map<String, Value>, path: &str, key: &str) -> Option<Name> {
        self.required(map, path, key)?;
        self.text(map, path, key).map(|s| Cow::Owned(s.to_owned()))
    }

    /// An optional string (`None` when absent).
    fn text<'v>(&mut self, map: &'v Map<String, Value>, path: &str, key: &str) -> Option<&'v str> {
        match map.get(key) {
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                self.problem(
                    &join(path, key),
                    format!("expected a string, found {other}"),
                );
                None
            }
            None => None,
        }
    }

    fn number(&mut self, value: &Value, path: &str) -> Option<u64> {
        let n = value.as_u64();
        if n.is_none() {
            self.problem(
                path,
                format!("expected a non-negative integer, found {value}"),
            );
        }
        n
    }

    fn boolean(&mut self, map: &Map<String, Value>, path: &str, key: &str) -> Option<bool> {
        match map.get(key) {
            Some(Value::Bool(b)) => Some(*b),
            None => Some(false),
            Some(other) => {
                self.problem(
                    &join(path, key),
                    format!("expected true or false, found {other}"),
                );
                None
            }
        }
    }

    fn names(&mut self, value: &Value, path: &str) -> Vec<Name> {
        let Value::Array(items) = value else {
            self.problem(path, format!("expected an array of names, found {value}"));
            return Vec::new();
        };
        items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| match item {
                Value::String(s) => Some(Cow::Owned(s.clone())),
                other => {
                    self.problem(
                        &join(path, &i.to_string()),
                        format!("expected a string, found {other}"),
                    );
                    None
                }
            })
            .collect()
    }

    fn root(&mut self, json: &Value) -> Option<(TableModel, Vec<EntityModel>)> {
        let root = self.object(json, "", ROOT_KEYS)?;
        let version = root.get(SCHEMA_VERSION_KEY);
        if version.and_then(Value::as_u64) != Some(SCHEMA_VERSION) {
            let found = version.cloned().unwrap_or_default();
            self.problem(
                SCHEMA_VERSION_KEY,
                format!(
                    "this release reads schema files of version {SCHEMA_VERSION}, not {found}: write the file again with this release (`Schema::to_json`), or upgrade entity-manager"
                ),
            );
        }
        let mut table = TableModel::DEFAULT;
        if let Some(k) = self.string(root, "", "hashKey") {
            table.hash_key = k;
        }
        if let Some(k) = self.string(root, "", "rangeKey") {
            table.range_key = k;
        }
        let defaults = Delimiters::DEFAULT;
        let delimiter = |reader: &mut Self, key: &str, default: &Name| {
            reader
                .text(root, "", key)
                .map_or_else(|| default.clone(), |s| Cow::Owned(s.to_owned()))
        };
        table.delimiters = Delimiters {
            generated_key: delimiter(self, "generatedKeyDelimiter", &defaults.generated_key),
            generated_value: delimiter(self, "generatedValueDelimiter", &defaults.generated_value),
            shard_key: delimiter(self, "shardKeyDelimiter", &defaults.shard_key),
        };
        if let Some(n) = root
            .get("throttle")
            .and_then(|v| self.number(v, "throttle"))
        {
            table.throttle = usize::try_from(n).unwrap_or(usize::MAX);
        }
        self.settings(root, &mut table);
        let entities = self
            .required(root, "", "entities")
            .map_or_else(Vec::new, |value| self.entities(value));
        Some((table, entities))
    }

    /// The key profile, or the settings of a table no profile pins (`shardHash` may be left
    /// out: such a file was written before the native profile left `string-hash`, so its keys
    /// were made with it, as a stamp without it reads).
    fn settings(&mut self, root: &Map<String, Value>, table: &mut TableModel) {
        let settings = ["keyMode", "shardSpace", "numericHash", "shardHash"];
        if let Some(name) = self.text(root, "", "keyProfile") {
            match Profile::from_name(name) {
                Some(profile) => *table = table.clone().with_profile(profile),
                None => self.problem(
                    "keyProfile",
                    format!("unknown key profile `{name}`: `native`, `npm-6.14` or `upstream-8`"),
                ),
            }
            for key in settings.iter().filter(|k| root.contains_key(**k)) {
                self.problem(
                    key,
                    format!("`{key}` is part of `keyProfile`: give one or the other"),
                );
            }
            return;
        }
        if settings.iter().all(|k| !root.contains_key(*k)) {
            self.problem(
                "",
                "missing the key profile: `keyProfile` (`native`, `npm-6.14` or `upstream-8`), or `keyMode`, `shardSpace`, `numericHash` and `shardHash`".to_owned(),
            );
            return;
        }
        let pick = |reader: &mut Self, key: &str, names: &[&str]| -> Option<usize> {
            let found = reader.text(root, "", key);
            let index = found.and_then(|f| names.iter().position(|n| *n == f));
            if index.is_none() {
                reader.problem(
                    key,
                    format!(
                        "expected one of {}, found {}",
                        crate::validate::list(names.iter().copied()),
                        found.map_or_else(|| "nothing".to_owned(), |f| format!("`{f}`"))
                    ),
                );
            }
            index
        };
        let modes = [KeyMode::Transcoded, KeyMode::TypeScript];
        let spaces = [ShardSpace::Product, ShardSpace::Power];
        let hashes = [NumericHash::Decimal, NumericHash::Constant];
        if let Some(i) = pick(self, "keyMode", &modes.map(KeyMode::as_str)) {
            table.key_mode = modes[i];
        }
        if let Some(i) = pick(self, "shardSpace", &spaces.map(ShardSpace::as_str)) {
            table.shard_space = spaces[i];
        }
        if let Some(i) = pick(self, "numericHash", &hashes.map(NumericHash::as_str)) {
            table.numeric_hash = hashes[i];
        }
        let shard_hashes = [ShardHash::Sha256, ShardHash::StringHash];
        table.shard_hash = ShardHash::StringHash;
        if root.contains_key("shardHash")
            && let Some(i) = pick(self, "shardHash", &shard_hashes.map(ShardHash::as_str))
        {
            table.shard_hash = shard_hashes[i];
        }
    }

    fn entities(&mut self, value: &Value) -> Vec<EntityModel> {
        let Value::Object(map) = value else {
            self.problem("entities", format!("expected an object, found {value}"));
            return Vec::new();
        };
        map.iter()
            .filter_map(|(token, entity)| self.entity(token, entity, &join("entities", token)))
            .collect()
    }

    fn entity(&mut self, token: &str, value: &Value, path: &str) -> Option<EntityModel> {
        let map = self.object(value, path, ENTITY_KEYS)?;
        let unique_property = self.string(map, path, "uniqueProperty");
        let timestamp_property = self.string(map, path, "timestampProperty");
        let mut model = EntityModel::new("", "", "");
        model.token = Cow::Owned(token.to_owned());
        let count = |reader: &mut Self, key: &str| {
            map.get(key)
                .and_then(|v| reader.number(v, &join(path, key)))
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
        };
        if let Some(n) = count(self, "defaultLimit") {
            model.default_limit = n;
        }
        if let Some(n) = count(self, "defaultPageSize") {
            model.default_page_size = n;
        }
        if let Some(bumps) = map.get("shardBumps") {
            model.shard_bumps = Cow::Owned(self.bumps(bumps, &join(path, "shardBumps")));
        }
        if let Some(transcodes) = map.get("propertyTranscodes") {
            model.properties =
                Cow::Owned(self.properties(transcodes, &join(path, "propertyTranscodes")));
        }
        if let Some(generated) = map.get("generated") {
            model.generated = Cow::Owned(self.generated(generated, &join(path, "generated")));
        }
        if let Some(indexes) = map.get("indexes") {
            model.indexes = Cow::Owned(self.indexes(indexes, &join(path, "indexes")));
        }
        model.unique_property = unique_property?;
        model.timestamp_property = timestamp_property?;
        Some(model)
    }

    fn bumps(&mut self, value: &Value, path: &str) -> Vec<ShardBump> {
        let Value::Array(items) = value else {
            self.problem(
                path,
                format!("expected an array of shard bumps, found {value}"),
            );
            return Vec::new();
        };
        let mut bumps = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let path = join(path, &i.to_string());
            let Some(map) = self.object(item, &path, BUMP_KEYS) else {
                continue;
            };
            let field = |reader: &mut Self, key: &str| {
                let value = reader.required(map, &path, key)?;
                reader.number(value, &join(&path, key))
            };
            let timestamp = field(self, "timestamp");
            let char_bits = field(self, "charBits").map(|n| u8::try_from(n).unwrap_or(u8::MAX));
            let chars = field(self, "chars").map(|n| u8::try_from(n).unwrap_or(u8::MAX));
            if let (Some(t), Some(b), Some(c)) = (timestamp, char_bits, chars) {
                bumps.push(ShardBump::new(t, b, c));
            }
        }
        bumps
    }

    fn properties(&mut self, value: &Value, path: &str) -> Vec<Property> {
        let Value::Object(map) = value else {
            self.problem(
                path,
                format!("expected an object of property transcodes, found {value}"),
            );
            return Vec::new();
        };
        let mut properties = Vec::new();
        for (name, transcode) in map {
            let at = join(path, name);
            let found = transcode.as_str().and_then(transcode::builtin);
            match found {
                Some(t) => properties.push(Property {
                    name: Cow::Owned(name.clone()),
                    transcode: t,
                }),
                None => self.problem(
                    &at,
                    format!(
                        "unknown transcode {transcode}: a schema file names a built-in transcode ({})",
                        crate::validate::list(transcode::BUILTIN_NAMES)
                    ),
                ),
            }
        }
        properties
    }

    fn generated(&mut self, value: &Value, path: &str) -> Vec<GeneratedProperty> {
        let Value::Array(items) = value else {
            self.problem(
                path,
                format!("expected an array of generated properties, found {value}"),
            );
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let path = join(path, &i.to_string());
            let Some(map) = self.object(item, &path, GENERATED_KEYS) else {
                continue;
            };
            let name = self.string(map, &path, "name");
            let sharded = self.boolean(map, &path, "sharded");
            let atomic = self.boolean(map, &path, "atomic");
            let components = self
                .required(map, &path, "components")
                .map_or_else(Vec::new, |v| self.names(v, &join(&path, "components")));
            if let (Some(name), Some(sharded), Some(atomic)) = (name, sharded, atomic) {
                out.push(GeneratedProperty {
                    name,
                    kind: if sharded {
                        GeneratedKind::Sharded
                    } else {
                        GeneratedKind::Unsharded
                    },
                    atomic,
                    components: Cow::Owned(components),
                });
            }
        }
        out
    }

    fn indexes(&mut self, value: &Value, path: &str) -> Vec<Index> {
        let Value::Object(map) = value else {
            self.problem(
                path,
                format!("expected an object of indexes, found {value}"),
            );
            return Vec::new();
        };
        map.iter()
            .filter_map(|(name, index)| self.index(name, index, &join(path, name)))
            .collect()
    }

    fn index(&mut self, name: &str, value: &Value, path: &str) -> Option<Index> {
        let multi = value.get("partition").is_some() || value.get("sort").is_some();
        let known = if multi {
            MULTI_INDEX_KEYS
        } else {
            CLASSIC_INDEX_KEYS
        };
        let map = self.object(value, path, known)?;
        let projection = match map.get("projections") {
            None => Projection::All,
            Some(v) => match self.names(v, &join(path, "projections")) {
                names if names.is_empty() => Projection::KeysOnly,
                names => Projection::Include(Cow::Owned(names)),
            },
        };
        let mut index = Index::new("", Cow::Borrowed(""), Cow::Borrowed(""), projection);
        index.name = Cow::Owned(name.to_owned());
        if !multi {
            index.hash_key = self.string(map, path, "hashKey")?;
            index.range_key = self.string(map, path, "rangeKey")?;
            return Some(index);
        }
        let attributes = |reader: &mut Self, key: &str| -> Vec<IndexAttribute> {
            let at = join(path, key);
            match map.get(key) {
                Some(Value::Array(items)) => items
                    .iter()
                    .enumerate()
                    .filter_map(|(i, item)| reader.attribute(item, &join(&at, &i.to_string())))
                    .collect(),
                Some(other) => {
                    reader.problem(
                        &at,
                        format!("expected an array of key attributes, found {other}"),
                    );
                    Vec::new()
                }
                None => {
                    reader.problem(path, format!("missing the required key `{key}`"));
                    Vec::new()
                }
            }
        };
        let hash = attributes(self, "partition");
        let range = attributes(self, "sort");
        let sharded = self.boolean(map, path, "sharded")?;
        index.hash_key = hash.first().map_or(Cow::Borrowed(""), |a| a.name.clone());
        index.range_key = range.first().map_or(Cow::Borrowed(""), |a| a.name.clone());
        index.multi = Some(MultiKey {
            hash: Cow::Owned(hash),
            range: Cow::Owned(range),
            sharded,
        });
        Some(index)
    }

    fn attribute(&mut self, value: &Value, path: &str) -> Option<IndexAttribute> {
        let map = self.object(value, path, ATTRIBUTE_KEYS)?;
        let name = self.string(map, path, "name");
        let key_type = match map.get("type").and_then(Value::as_str) {
            Some("S") => Some(KeyType::S),
            Some("N") => Some(KeyType::N),
            Some("B") => Some(KeyType::B),
            _ => {
                self.problem(
                    &join(path, "type"),
                    format!(
                        "expected the key type `S`, `N` or `B`, found {}",
                        map.get("type").cloned().unwrap_or_default()
                    ),
                );
                None
            }
        };
        Some(IndexAttribute::named(name?, key_type?))
    }
}
