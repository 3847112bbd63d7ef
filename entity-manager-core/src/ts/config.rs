//! Loading a TypeScript Entity Manager config (JSON) into a [`Schema`].
//!
//! The loader reads the JSON in two passes. The first reads its shape, reporting wrong JSON
//! types, missing required fields, unknown keys and unusable numbers, and builds a model from
//! everything readable, with placeholders standing in for the rest. The second runs the rules
//! of [the validation module](crate::validate) on that model. Both lists go into one
//! [`ConfigError`]; a rule problem at (or under) the path of a placeholder only repeats a shape
//! problem, so it is left out.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::error::{ConfigError, ConfigProblem};
use crate::limits;
use crate::model::{
    Delimiters, EntityModel, GeneratedKind, GeneratedProperty, Index, Name, Profile, Projection,
    Property, ShardBump, TableModel,
};
use crate::schema::Schema;
use crate::transcode::{self, BUILTIN_NAMES, Transcoder};
use crate::validate::{self, Globals, Layout, Problems, join, list, unknown_key_message};

/// The keys of the root object.
const ROOT_KEYS: &[&str] = &[
    "hashKey",
    "rangeKey",
    "entities",
    "generatedProperties",
    "indexes",
    "propertyTranscodes",
    "transcodes",
    "generatedKeyDelimiter",
    "generatedValueDelimiter",
    "shardKeyDelimiter",
    "throttle",
];
/// The keys of an entity.
const ENTITY_KEYS: &[&str] = &[
    "uniqueProperty",
    "timestampProperty",
    "defaultLimit",
    "defaultPageSize",
    "shardBumps",
    "elementTranscodes",
    "generated",
    "indexes",
];
/// The root keys of the v8 shape that hold table-wide lists.
const GLOBAL_LIST_KEYS: &[&str] = &["generatedProperties", "indexes", "propertyTranscodes"];
/// The entity keys of the per-entity shape (seed 001, TypeScript v6.1–v6.4).
const PER_ENTITY_KEYS: &[&str] = &["elementTranscodes", "generated", "indexes"];
/// The keys of a generated property in the per-entity shape.
const ENTITY_GENERATED_KEYS: &[&str] = &["atomic", "elements", "components", "sharded"];
/// The keys of a shard bump.
const BUMP_KEYS: &[&str] = &["timestamp", "charBits", "chars"];
/// The keys of `generatedProperties`.
const GENERATED_KEYS: &[&str] = &["sharded", "unsharded"];
/// The keys of an index.
const INDEX_KEYS: &[&str] = &["hashKey", "rangeKey", "projections"];

/// JavaScript's `Number.MAX_SAFE_INTEGER`: Zod's `int()` accepts no integer beyond it.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;
/// [`MAX_SAFE_INTEGER`] as a float (exact).
const MAX_SAFE_INTEGER_F64: f64 = 9_007_199_254_740_991.0;

/// The transcode given to a property whose transcode cannot be read. Every rule that looks at
/// transcodes (timestamp property, index key type) accepts `int`, so the placeholder adds no
/// problem of its own; the model is discarded anyway, since a problem was reported.
const PLACEHOLDER_TRANSCODE: &dyn Transcoder = transcode::INT;

impl Schema {
    /// Loads the JSON `config` object of a TypeScript Entity Manager service under a
    /// compatibility [`Profile`]: its shard space, key mode and numeric hashing.
    ///
    /// The profile is named on every load, because a configuration of the TypeScript library
    /// most often means a table shared with a TypeScript service, and a wrong profile writes
    /// keys that service does not find:
    ///
    /// | the table is shared with | profile |
    /// |---|---|
    /// | `@karmaniverous/entity-manager` 6.14.0 (the published npm release) | [`Profile::Npm6_14`] |
    /// | upstream TypeScript v8 (6.14.1 and later) | [`Profile::Upstream8`] |
    /// | no TypeScript service (the JSON only describes the entities) | [`Profile::Native`] |
    ///
    /// A [`ShardSpace`](crate::model::ShardSpace) stands for the profile of the TypeScript release
    /// that writes it: `ShardSpace::Product` is [`Profile::Npm6_14`] and `ShardSpace::Power` is
    /// [`Profile::Upstream8`] (their keys hold the raw values TypeScript writes). A service that
    /// shares its table with no TypeScript service names [`Profile::Native`].
    ///
    /// A table created by this crate (`DynamoStore::create_table`, `MemoryStore::new`, the
    /// CLI's `table create`) records the profile in its [stamp](crate::store::TableStamp), and a
    /// store of another profile refuses to write to it.
    ///
    /// ```
    /// use entity_manager_core::{Item, Schema};
    /// use entity_manager_core::model::Profile;
    /// use serde_json::json;
    ///
    /// let config = json!({
    ///     "hashKey": "hashKey",
    ///     "rangeKey": "rangeKey",
    ///     "entities": { "player": { "uniqueProperty": "playerId", "timestampProperty": "created" } },
    ///     "generatedProperties": { "unsharded": { "scoreRK": ["score", "created"] } },
    ///     "propertyTranscodes": { "playerId": "string", "created": "timestamp", "score": "int" }
    /// });
    /// let item: Item = serde_dynamo::to_item(json!({ "playerId": "p1", "created": 5000, "score": -42 }))?;
    ///
    /// // TypeScript 6.14.0 writes raw values: `score#-42|created#5000`
    /// let npm = Schema::from_ts_config(&config, Profile::Npm6_14)?;
    /// assert_eq!(npm.entity("player")?.encode_generated("scoreRK", &item)?.as_deref(), Some("score#-42|created#5000"));
    ///
    /// // the native profile transcodes them, so that keys sort by value
    /// let native = Schema::from_ts_config(&config, Profile::Native)?;
    /// assert_eq!(
    ///     native.entity("player")?.encode_generated("scoreRK", &item)?.as_deref(),
    ///     Some("score#n9999999999999958|created#0000000005000")
    /// );
    ///
    /// // and a key written in the other mode is a typed error, never a wrong value
    /// let err = native.entity("player")?.decode_generated("score#-42|created#5000").err();
    /// assert!(matches!(err, Some(entity_manager_core::Error::KeyModeMismatch { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// The shape is that of v8 and the npm release 6.14: root `hashKey` and `rangeKey`
    /// (required), `entities`, `generatedProperties` (`sharded` and `unsharded`: name →
    /// components), `indexes` (token → `{hashKey, rangeKey, projections?}`),
    /// `propertyTranscodes` (property → name of a [built-in transcode](transcode::builtin)),
    /// `generatedKeyDelimiter`, `generatedValueDelimiter`, `shardKeyDelimiter` and `throttle`;
    /// per entity `uniqueProperty` and `timestampProperty` (required), `defaultLimit`,
    /// `defaultPageSize` and `shardBumps`. Omitted fields take the TypeScript defaults: `|`,
    /// `#`, `!`, a throttle of 10, a default limit and page size of 10, and the default shard
    /// schedule.
    ///
    /// The per-entity shape of the seed docs ("Entity Manager Configuration", TypeScript
    /// v6.1–v6.4) loads too: no root `generatedProperties`, `propertyTranscodes` or `indexes`;
    /// instead each entity has `elementTranscodes` (property → transcode), `generated` (name →
    /// `{elements, atomic = false, sharded = false}`, `components` accepted for `elements`) and
    /// `indexes` (token → component names in any order: the table keys may be listed, a sharded
    /// generated property is the index hash key, the one other component its range key, and the
    /// table keys stand in for a side left out; every index projects all attributes). Here
    /// `hashKey` and `rangeKey` default to `hashKey` and `rangeKey`, generated properties and
    /// indexes belong to their entity, an unsharded property may be atomic, and a sharded one
    /// always is (`atomic: false` on it is a problem). A config mixing the two shapes is a
    /// problem at each per-entity key.
    ///
    /// In the table-wide shape, TypeScript semantics are kept: generated properties, property transcodes and indexes are
    /// global, so every entity gets all of them, in config order (sharded generated properties,
    /// which are atomic, before unsharded ones, which are not). An index without `projections`
    /// projects all attributes, `[]` projects keys only, and a list projects the keys and those
    /// attributes. Entities and indexes keep the order of the JSON object. Shard bumps are
    /// normalised as by [`Schema::new`]; an empty `shardBumps` means the default schedule (the
    /// TypeScript throws a `TypeError`).
    ///
    /// Deliberately stricter than TypeScript:
    /// - unknown keys are rejected everywhere, including inside an index (where TypeScript
    ///   silently drops them), with a suggestion for a likely typo;
    /// - a delimiter may not contain any word character (`[A-Za-z0-9_]`); TypeScript's
    ///   unanchored `/\W+/` accepts `a|`;
    /// - the rules of [`Schema::new`] that TypeScript does not have: empty or
    ///   delimiter-containing names, boolean index range keys, an integer transcode for the
    ///   timestamp property, duplicate projections and generated components, at most 20 indexes.
    ///
    /// A `transcodes` key is rejected: a transcode is a pair of functions, which JSON cannot
    /// express. Build the model in Rust ([`Schema::new`]) to use transcodes of your own.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] listing every problem at once, each at its dotted path (such as
    /// `entities.user.shardBumps.2` or `indexes.firstName.rangeKey`): shape problems (wrong JSON
    /// types, missing required fields, unknown keys, numbers that are not safe integers,
    /// negative bump timestamps, `transcodes`, unknown transcode names), then every rule of
    /// [`Schema::new`]. A rule problem that only follows from an unreadable value is left out.
    ///
    /// # Example
    ///
    /// ```
    /// use entity_manager_core::Schema;
    /// use entity_manager_core::model::{Profile, Projection, ShardBump};
    /// use serde_json::json;
    ///
    /// let config = json!({
    ///     "hashKey": "hashKey",
    ///     "rangeKey": "rangeKey",
    ///     "entities": {
    ///         "user": {
    ///             "uniqueProperty": "userId",
    ///             "timestampProperty": "created",
    ///             "shardBumps": [{ "timestamp": 1_700_000_000_000u64, "charBits": 2, "chars": 1 }]
    ///         }
    ///     },
    ///     "generatedProperties": { "unsharded": { "nameRangeKey": ["name", "created"] } },
    ///     "propertyTranscodes": { "userId": "string", "name": "string", "created": "timestamp" },
    ///     "indexes": {
    ///         "name": { "hashKey": "hashKey", "rangeKey": "nameRangeKey", "projections": [] }
    ///     }
    /// });
    /// let schema = Schema::from_ts_config(&config, Profile::Upstream8)?;
    /// let user = schema.entity("user")?.model();
    /// // The implied unsharded bump is put in front.
    /// assert_eq!(
    ///     *user.shard_bumps,
    ///     [ShardBump::UNSHARDED, ShardBump::new(1_700_000_000_000, 2, 1)]
    /// );
    /// assert_eq!(user.index("name").map(|i| &i.projection), Some(&Projection::KeysOnly));
    ///
    /// // Every problem is reported at once, each at its path.
    /// let bad = json!({
    ///     "hashKey": "pk",
    ///     "rangeKey": "pk",
    ///     "throttle": 0,
    ///     "entities": { "user": { "uniqueProperty": "userId" } }
    /// });
    /// let error = Schema::from_ts_config(&bad, Profile::Upstream8).err();
    /// let paths: Vec<&str> = error.iter().flat_map(|e| &e.problems).map(|p| &*p.path).collect();
    /// assert_eq!(
    ///     paths,
    ///     [
    ///         "entities.user.timestampProperty", // missing
    ///         "rangeKey",                        // the same attribute as the hash key
    ///         "throttle",                        // must be greater than 0
    ///         "entities.user.uniqueProperty",    // not a transcoded property
    ///     ]
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_ts_config(
        config: &serde_json::Value,
        profile: impl Into<Profile>,
    ) -> Result<Self, ConfigError> {
        let profile = profile.into();
        let Some(root) = config.as_object() else {
            return Err(ConfigError {
                problems: vec![ConfigProblem {
                    path: String::new(),
                    message: format!("the config must be a JSON object, not {}", kind_of(config)),
                    rule: None,
                }],
            });
        };
        let mut loader = Loader::default();
        loader.unknown_keys(root, "", ROOT_KEYS);
        let custom_transcodes = loader.transcodes(root);
        if Loader::per_entity_shape(root) {
            return loader.load_per_entity(root, profile, &custom_transcodes);
        }
        let table = loader.table(root, profile, true);
        let properties = loader.property_transcodes(root, &custom_transcodes);
        let generated = loader.generated_properties(root);
        let indexes = loader.indexes(root);
        let mut entities = loader.entities(root, &properties, &generated, &indexes);
        loader.no_per_entity_keys(root);
        let globals = Globals {
            properties: &properties,
            generated: &generated,
            indexes: &indexes,
            unreadable_schedules: &loader.unreadable_schedules,
        };
        let rule_problems = validate::problems(&table, &mut entities, &Layout::Global(globals));
        let problems = loader.finish(rule_problems);
        if !problems.is_empty() {
            return Err(ConfigError { problems });
        }
        Schema::new(table, entities)
    }
}

/// Reads the JSON: records shape problems, and where the model holds a placeholder.
#[derive(Debug, Default)]
struct Loader {
    /// Shape problems, in config order.
    problems: Problems,
    /// Paths whose model value is a placeholder for something unreadable: a rule problem at or
    /// under one of them would only repeat the shape problem.
    placeholders: Vec<String>,
    /// Positions of entities with a shard bump whose timestamp could not be read.
    unreadable_schedules: Vec<usize>,
}

impl Loader {
    /// Reports a shape problem at `path`, whose value in the model becomes a placeholder.
    fn fail(&mut self, path: &str, message: impl Into<String>) {
        self.problems.push(path, message);
        self.placeholders.push(path.to_owned());
    }

    /// The shape problems, then the rule problems that do not repeat them.
    fn finish(self, rule_problems: Vec<ConfigProblem>) -> Vec<ConfigProblem> {
        let placeholders = self.placeholders;
        let mut problems = self.problems.into_vec();
        problems.extend(rule_problems.into_iter().filter(|problem| {
            !placeholders.iter().any(|p| {
                problem.path == *p
                    || (problem.path.starts_with(p.as_str())
                        && problem.path[p.len()..].starts_with('.'))
            })
        }));
        problems
    }

    // ---------------------------------------------------------------------------------------
    // shapes

    /// Reports every key of `map` that is not in `known`.
    fn unknown_keys(&mut self, map: &Map<String, Value>, path: &str, known: &[&str]) {
        for key in map.keys().filter(|k| !known.contains(&k.as_str())) {
            self.problems
                .push(join(path, key), unknown_key_message(key, known));
        }
    }

    /// `value` as an object.
    fn object<'v>(&mut self, value: &'v Value, path: &str) -> Option<&'v Map<String, Value>> {
        let object = value.as_object();
        if object.is_none() {
            self.fail(
                path,
                format!("expected an object, found {}", kind_of(value)),
            );
        }
        object
    }

    /// The optional object `map[key]`.
    fn object_field<'v>(
        &mut self,
        map: &'v Map<String, Value>,
        parent: &str,
        key: &str,
    ) -> Option<&'v Map<String, Value>> {
        self.object(map.get(key)?, &join(parent, key))
    }

    /// The entries of the object `map[key]` (absent: none) whose values are objects, each with
    /// its path, once the unknown keys of each (`allowed` lists the known ones) are reported.
    /// An entry that is not an object is reported and left out.
    fn object_entries<'v>(
        &mut self,
        map: &'v Map<String, Value>,
        parent: &str,
        key: &str,
        allowed: &[&str],
    ) -> Vec<(&'v String, String, &'v Map<String, Value>)> {
        let Some(entries) = self.object_field(map, parent, key) else {
            return Vec::new();
        };
        let parent = join(parent, key);
        let mut objects = Vec::with_capacity(entries.len());
        for (name, value) in entries {
            let path = join(&parent, name);
            if let Some(fields) = self.object(value, &path) {
                self.unknown_keys(fields, &path, allowed);
                objects.push((name, path, fields));
            }
        }
        objects
    }

    /// The required field `map[key]`; `what` says what it is for.
    fn required<'v>(
        &mut self,
        map: &'v Map<String, Value>,
        parent: &str,
        key: &str,
        what: &str,
    ) -> Option<&'v Value> {
        let value = map.get(key);
        if value.is_none() {
            self.fail(
                &join(parent, key),
                format!("missing required `{key}`: {what}"),
            );
        }
        value
    }

    /// `value` as a string.
    fn string(&mut self, value: &Value, path: &str) -> Option<String> {
        let string = value.as_str().map(str::to_owned);
        if string.is_none() {
            self.fail(path, format!("expected a string, found {}", kind_of(value)));
        }
        string
    }

    /// The required string `map[key]`, or `placeholder`.
    fn required_string(
        &mut self,
        map: &Map<String, Value>,
        parent: &str,
        key: &str,
        what: &str,
        placeholder: &str,
    ) -> Name {
        self.required(map, parent, key, what)
            .and_then(|value| self.string(value, &join(parent, key)))
            .map_or_else(|| Cow::Owned(placeholder.to_owned()), Cow::Owned)
    }

    /// The optional string `map[key]`, or `default`.
    fn optional_string(
        &mut self,
        map: &Map<String, Value>,
        parent: &str,
        key: &str,
        default: &Name,
    ) -> Name {
        map.get(key)
            .and_then(|value| self.string(value, &join(parent, key)))
            .map_or_else(|| default.clone(), Cow::Owned)
    }

    /// `value` as a list of strings, an unreadable element becoming the placeholder `""`;
    /// `None` (reported) when it is not an array.
    fn strings(&mut self, value: &Value, path: &str, what: &str) -> Option<Vec<Name>> {
        let Some(items) = value.as_array() else {
            self.fail(
                path,
                format!("expected an array of {what}, found {}", kind_of(value)),
            );
            return None;
        };
        let mut strings = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let string = self.string(item, &join(path, &i.to_string()));
            strings.push(string.map_or(Cow::Borrowed(""), Cow::Owned));
        }
        Some(strings)
    }

    /// `value` as a safe integer (|x| ≤ 2^53 − 1, as Zod's `int()` requires). Integral floats
    /// such as `1.0` are accepted, as in JavaScript.
    fn integer(&mut self, value: &Value, path: &str) -> Option<i64> {
        let Value::Number(number) = value else {
            self.fail(
                path,
                format!("expected an integer, found {}", kind_of(value)),
            );
            return None;
        };
        let integer = if let Some(i) = number.as_i64() {
            (i.unsigned_abs() <= MAX_SAFE_INTEGER).then_some(i)
        } else if let Some(f) = number.as_f64().filter(|_| number.is_f64()) {
            #[allow(clippy::float_cmp)] // exact on purpose: is `f` a whole number?
            let whole = f.trunc() == f;
            if !whole {
                self.fail(path, format!("expected an integer, found {number}"));
                return None;
            }
            // whole and within ±2^53, so the conversion is exact
            #[allow(clippy::cast_possible_truncation)]
            (f.abs() <= MAX_SAFE_INTEGER_F64).then_some(f as i64)
        } else {
            None // an unsigned integer beyond `i64::MAX`
        };
        if integer.is_none() {
            self.fail(
                path,
                format!(
                    "{number} is not a safe integer; integers must be at most {MAX_SAFE_INTEGER} in magnitude, as in JavaScript"
                ),
            );
        }
        integer
    }

    /// The optional count `map[key]` (a throttle, limit or page size), or `default`. A negative
    /// count becomes 0, which the rule "greater than 0" reports.
    fn count(
        &mut self,
        map: &Map<String, Value>,
        parent: &str,
        key: &str,
        default: usize,
    ) -> usize {
        let Some(value) = map.get(key) else {
            return default;
        };
        match self.integer(value, &join(parent, key)) {
            None => default,
            Some(n) if n < 0 => 0,
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        }
    }

    // ---------------------------------------------------------------------------------------
    // the config

    /// Rejects `transcodes`, returning the names it declares (so that properties naming them
    /// are not reported a second time).
    fn transcodes(&mut self, root: &Map<String, Value>) -> Vec<String> {
        let Some(value) = root.get("transcodes") else {
            return Vec::new();
        };
        self.problems.push(
            "transcodes",
            format!(
                "custom `transcodes` cannot be loaded from JSON, because a transcode is a pair of functions; build the model in Rust with your own `Transcoder` and `Schema::new`, or use the built-in transcodes: {}",
                list(BUILTIN_NAMES)
            ),
        );
        value
            .as_object()
            .map(|names| names.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The table settings.
    /// `hashKey` and `rangeKey` are required in the v8 shape and default to `hashKey` and
    /// `rangeKey` in the per-entity one.
    fn table(
        &mut self,
        root: &Map<String, Value>,
        profile: Profile,
        keys_required: bool,
    ) -> TableModel {
        let defaults = TableModel::DEFAULT;
        let delimiters = Delimiters {
            generated_key: self.optional_string(
                root,
                "",
                "generatedKeyDelimiter",
                &defaults.delimiters.generated_key,
            ),
            generated_value: self.optional_string(
                root,
                "",
                "generatedValueDelimiter",
                &defaults.delimiters.generated_value,
            ),
            shard_key: self.optional_string(
                root,
                "",
                "shardKeyDelimiter",
                &defaults.delimiters.shard_key,
            ),
        };
        let (hash_key, range_key) = if keys_required {
            (
                self.required_string(
                    root,
                    "",
                    "hashKey",
                    "the name of the table's partition key attribute",
                    &defaults.hash_key,
                ),
                self.required_string(
                    root,
                    "",
                    "rangeKey",
                    "the name of the table's sort key attribute",
                    &defaults.range_key,
                ),
            )
        } else {
            (
                self.optional_string(root, "", "hashKey", &defaults.hash_key),
                self.optional_string(root, "", "rangeKey", &defaults.range_key),
            )
        };
        TableModel {
            hash_key,
            range_key,
            delimiters,
            shard_space: profile.shard_space(),
            throttle: self.count(root, "", "throttle", defaults.throttle),
            key_mode: profile.key_mode(),
            numeric_hash: profile.numeric_hash(),
            shard_hash: profile.shard_hash(),
        }
    }

    /// `propertyTranscodes`, in config order.
    fn property_transcodes(
        &mut self,
        root: &Map<String, Value>,
        custom_transcodes: &[String],
    ) -> Vec<Property> {
        let Some(map) = self.object_field(root, "", "propertyTranscodes") else {
            return Vec::new();
        };
        let mut properties = Vec::with_capacity(map.len());
        for (name, value) in map {
            let path = join("propertyTranscodes", name);
            let transcode = self.transcode(value, &path, custom_transcodes);
            properties.push(Property {
                name: Cow::Owned(name.clone()),
                transcode,
            });
        }
        properties
    }

    /// The built-in transcode `value` names, or [`PLACEHOLDER_TRANSCODE`].
    fn transcode(
        &mut self,
        value: &Value,
        path: &str,
        custom_transcodes: &[String],
    ) -> &'static dyn Transcoder {
        let Some(name) = value.as_str() else {
            self.fail(
                path,
                format!("expected the name of a transcode, found {}", kind_of(value)),
            );
            return PLACEHOLDER_TRANSCODE;
        };
        if let Some(transcode) = transcode::builtin(name) {
            return transcode;
        }
        if custom_transcodes.iter().any(|c| c == name) {
            // `transcodes` is reported already
            self.placeholders.push(path.to_owned());
        } else {
            self.fail(
                path,
                format!(
                    "unknown transcode `{name}`; the built-in transcodes are {} (a transcode of your own needs a model built in Rust)",
                    list(BUILTIN_NAMES)
                ),
            );
        }
        PLACEHOLDER_TRANSCODE
    }

    /// `generatedProperties`: the sharded ones (atomic), then the unsharded ones (not atomic).
    fn generated_properties(&mut self, root: &Map<String, Value>) -> Vec<GeneratedProperty> {
        let mut generated = Vec::new();
        let Some(sides) = self.object_field(root, "", "generatedProperties") else {
            return generated;
        };
        self.unknown_keys(sides, "generatedProperties", GENERATED_KEYS);
        for (side, kind) in [
            ("sharded", GeneratedKind::Sharded),
            ("unsharded", GeneratedKind::Unsharded),
        ] {
            let Some(map) = self.object_field(sides, "generatedProperties", side) else {
                continue;
            };
            for (name, value) in map {
                let path = join(&join("generatedProperties", side), name);
                let components = self
                    .strings(value, &path, "component property names")
                    .unwrap_or_default();
                generated.push(GeneratedProperty {
                    name: Cow::Owned(name.clone()),
                    kind,
                    atomic: kind == GeneratedKind::Sharded,
                    components: Cow::Owned(components),
                });
            }
        }
        generated
    }

    /// `indexes`, in config order; an index that is not an object is left out.
    fn indexes(&mut self, root: &Map<String, Value>) -> Vec<Index> {
        let entries = self.object_entries(root, "", "indexes", INDEX_KEYS);
        let mut indexes = Vec::with_capacity(entries.len());
        for (name, path, fields) in entries {
            let hash_key = self.required_string(
                fields,
                &path,
                "hashKey",
                "the table hash key or a sharded generated property",
                "",
            );
            let range_key = self.required_string(
                fields,
                &path,
                "rangeKey",
                "the table range key, an unsharded generated property or a transcoded property",
                "",
            );
            let projection = match fields.get("projections") {
                None => Projection::All,
                Some(value) => {
                    match self.strings(value, &join(&path, "projections"), "attribute names") {
                        None => Projection::All,
                        Some(names) if names.is_empty() => Projection::KeysOnly,
                        Some(names) => Projection::Include(Cow::Owned(names)),
                    }
                }
            };
            indexes.push(Index {
                name: Cow::Owned(name.clone()),
                hash_key,
                range_key,
                projection,
                multi: None,
            });
        }
        indexes
    }

    /// `entities`, in config order, each carrying every global list; an entity that is not an
    /// object is left out.
    fn entities(
        &mut self,
        root: &Map<String, Value>,
        properties: &[Property],
        generated: &[GeneratedProperty],
        indexes: &[Index],
    ) -> Vec<EntityModel> {
        let entries = self.object_entries(root, "", "entities", ENTITY_KEYS);
        let mut entities = Vec::with_capacity(entries.len());
        for (token, path, fields) in entries {
            let position = entities.len();
            let parts = (properties.to_vec(), generated.to_vec(), indexes.to_vec());
            entities.push(self.entity(token, fields, &path, position, parts));
        }
        entities
    }

    /// One entity of either shape, from its settings and its `(properties, generated,
    /// indexes)`.
    fn entity(
        &mut self,
        token: &str,
        fields: &Map<String, Value>,
        path: &str,
        position: usize,
        (properties, generated, indexes): (Vec<Property>, Vec<GeneratedProperty>, Vec<Index>),
    ) -> EntityModel {
        EntityModel {
            token: Cow::Owned(token.to_owned()),
            unique_property: self.required_string(
                fields,
                path,
                "uniqueProperty",
                "the transcoded property that identifies a record",
                "",
            ),
            timestamp_property: self.required_string(
                fields,
                path,
                "timestampProperty",
                "the transcoded property holding the creation time in ms",
                "",
            ),
            shard_bumps: Cow::Owned(self.shard_bumps(fields, path, position)),
            default_limit: self.count(fields, path, "defaultLimit", limits::DEFAULT_LIMIT),
            default_page_size: self.count(
                fields,
                path,
                "defaultPageSize",
                limits::DEFAULT_PAGE_SIZE,
            ),
            properties: Cow::Owned(properties),
            generated: Cow::Owned(generated),
            indexes: Cow::Owned(indexes),
        }
    }

    /// The entity's `shardBumps` as declared (absent: empty, the default schedule).
    fn shard_bumps(
        &mut self,
        entity: &Map<String, Value>,
        entity_path: &str,
        position: usize,
    ) -> Vec<ShardBump> {
        let path = join(entity_path, "shardBumps");
        let Some(value) = entity.get("shardBumps") else {
            return Vec::new();
        };
        let Some(items) = value.as_array() else {
            self.fail(
                &path,
                format!("expected an array of shard bumps, found {}", kind_of(value)),
            );
            return Vec::new();
        };
        let mut bumps = Vec::with_capacity(items.len());
        let mut readable = true;
        for (i, item) in items.iter().enumerate() {
            let (bump, timestamp_read) = self.shard_bump(item, &join(&path, &i.to_string()));
            readable &= timestamp_read;
            bumps.push(bump);
        }
        if !readable {
            self.unreadable_schedules.push(position);
        }
        bumps
    }

    /// One shard bump, and whether its timestamp could be read. Unreadable `charBits` and
    /// `chars` become out-of-range placeholders, which the order rule skips.
    fn shard_bump(&mut self, item: &Value, path: &str) -> (ShardBump, bool) {
        let Some(fields) = self.object(item, path) else {
            return (ShardBump::new(0, 0, u8::MAX), false);
        };
        self.unknown_keys(fields, path, BUMP_KEYS);
        let timestamp = self.bump_timestamp(fields, path);
        let char_bits = self.bump_small(fields, path, "charBits", 0);
        let chars = self.bump_small(fields, path, "chars", u8::MAX);
        (
            ShardBump::new(timestamp.unwrap_or(0), char_bits, chars),
            timestamp.is_some(),
        )
    }

    /// A bump's `timestamp`: a non-negative safe integer.
    fn bump_timestamp(&mut self, fields: &Map<String, Value>, parent: &str) -> Option<u64> {
        let path = join(parent, "timestamp");
        let value = self.required(
            fields,
            parent,
            "timestamp",
            "when the bump starts, in ms since the epoch",
        )?;
        let integer = self.integer(value, &path)?;
        let timestamp = u64::try_from(integer).ok();
        if timestamp.is_none() {
            self.fail(
                &path,
                format!(
                    "shard bump `timestamp` is {integer}; it must be a non-negative number of ms since the epoch"
                ),
            );
        }
        timestamp
    }

    /// A bump's `charBits` or `chars`. A value the model cannot hold (beyond `u8`) is reported
    /// here with the range rule's message; it and an unreadable value become `placeholder`.
    fn bump_small(
        &mut self,
        fields: &Map<String, Value>,
        parent: &str,
        key: &str,
        placeholder: u8,
    ) -> u8 {
        let (what, out_of_range): (_, fn(i64) -> String) = if key == "charBits" {
            (
                "bits per suffix character, 1..=5",
                validate::char_bits_message,
            )
        } else {
            ("the suffix length, 0..=40", validate::chars_message)
        };
        let path = join(parent, key);
        let Some(value) = self.required(fields, parent, key, what) else {
            return placeholder;
        };
        let Some(integer) = self.integer(value, &path) else {
            return placeholder;
        };
        u8::try_from(integer).unwrap_or_else(|_| {
            self.fail(&path, out_of_range(integer));
            placeholder
        })
    }
}

/// What kind of JSON value this is, for messages.
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The per-entity shape of seed 001 (TypeScript v6.1–v6.4): each entity declares its own
/// `elementTranscodes`, `generated` properties and `indexes`.
impl Loader {
    /// Whether `root` is in the per-entity shape: some entity has a per-entity key and the root
    /// has none of the table-wide lists (a config mixing both is read as the table-wide shape,
    /// and each per-entity key is reported by [`Self::no_per_entity_keys`]).
    fn per_entity_shape(root: &Map<String, Value>) -> bool {
        let global = GLOBAL_LIST_KEYS.iter().any(|k| root.contains_key(*k));
        !global && !per_entity_keys(root).is_empty()
    }

    /// Reports every per-entity key of a config in the table-wide shape.
    fn no_per_entity_keys(&mut self, root: &Map<String, Value>) {
        for (token, key) in per_entity_keys(root) {
            self.problems.push(
                join(&join("entities", &token), key),
                format!(
                    "`{key}` belongs to the per-entity config shape, but this config has the table-wide lists ({}) at its root; use one shape: move `{key}` into the root lists, or the root lists into the entities",
                    list(GLOBAL_LIST_KEYS.iter().copied())
                ),
            );
        }
    }

    /// Loads a config in the per-entity shape.
    fn load_per_entity(
        mut self,
        root: &Map<String, Value>,
        profile: Profile,
        custom_transcodes: &[String],
    ) -> Result<Schema, ConfigError> {
        let table = self.table(root, profile, false);
        let mut entities = Vec::new();
        for (token, path, fields) in self.object_entries(root, "", "entities", ENTITY_KEYS) {
            let position = entities.len();
            let properties = self.element_transcodes(fields, &path, custom_transcodes);
            let generated = self.entity_generated(fields, &path);
            let indexes = self.entity_indexes(fields, &path, &table, &generated);
            let parts = (properties, generated, indexes);
            entities.push(self.entity(token, fields, &path, position, parts));
        }
        let rule_problems = validate::problems(&table, &mut entities, &Layout::PerEntity);
        // The rules name an entity's transcoded properties `properties`; this shape calls them
        // `elementTranscodes`.
        let rule_problems = rule_problems
            .into_iter()
            .map(|mut problem| {
                for entity in &entities {
                    let model_path = join(&join("entities", &entity.token), "properties");
                    if let Some(rest) = problem.path.strip_prefix(model_path.as_str())
                        && (rest.is_empty() || rest.starts_with('.'))
                    {
                        problem.path = format!(
                            "{}{rest}",
                            join(&join("entities", &entity.token), "elementTranscodes")
                        );
                        break;
                    }
                }
                problem
            })
            .collect();
        let problems = self.finish(rule_problems);
        if !problems.is_empty() {
            return Err(ConfigError { problems });
        }
        Schema::new(table, entities)
    }

    /// An entity's `elementTranscodes`, in config order.
    fn element_transcodes(
        &mut self,
        entity: &Map<String, Value>,
        entity_path: &str,
        custom_transcodes: &[String],
    ) -> Vec<Property> {
        let Some(map) = self.object_field(entity, entity_path, "elementTranscodes") else {
            return Vec::new();
        };
        let parent = join(entity_path, "elementTranscodes");
        let mut properties = Vec::with_capacity(map.len());
        for (name, value) in map {
            let transcode = self.transcode(value, &join(&parent, name), custom_transcodes);
            properties.push(Property {
                name: Cow::Owned(name.clone()),
                transcode,
            });
        }
        properties
    }

    /// An entity's `generated` properties, in config order: `{elements (or components), atomic
    /// = false, sharded = false}`. A sharded property is always atomic.
    fn entity_generated(
        &mut self,
        entity: &Map<String, Value>,
        entity_path: &str,
    ) -> Vec<GeneratedProperty> {
        let entries = self.object_entries(entity, entity_path, "generated", ENTITY_GENERATED_KEYS);
        let mut generated = Vec::with_capacity(entries.len());
        for (name, path, fields) in entries {
            let components = match (fields.get("elements"), fields.get("components")) {
                (Some(elements), Some(_)) => {
                    self.problems.push(
                        join(&path, "components"),
                        "give the component property names once, as `elements` or as `components`, not both",
                    );
                    self.strings(
                        elements,
                        &join(&path, "elements"),
                        "component property names",
                    )
                }
                (Some(v), None) => {
                    self.strings(v, &join(&path, "elements"), "component property names")
                }
                (None, Some(v)) => {
                    self.strings(v, &join(&path, "components"), "component property names")
                }
                (None, None) => {
                    self.fail(
                        &join(&path, "elements"),
                        "missing required `elements`: the component property names",
                    );
                    None
                }
            };
            let sharded = self.boolean(fields, &path, "sharded");
            let atomic = self.boolean(fields, &path, "atomic");
            if sharded && fields.get("atomic") == Some(&Value::Bool(false)) {
                self.problems.push(
                    join(&path, "atomic"),
                    "a sharded generated property is always atomic (it is part of a hash key, which needs every component); remove `atomic: false`",
                );
            }
            let kind = if sharded {
                GeneratedKind::Sharded
            } else {
                GeneratedKind::Unsharded
            };
            generated.push(GeneratedProperty {
                name: Cow::Owned(name.clone()),
                kind,
                atomic: atomic || sharded,
                components: Cow::Owned(components.unwrap_or_default()),
            });
        }
        generated
    }

    /// The optional boolean `map[key]` (default `false`).
    fn boolean(&mut self, map: &Map<String, Value>, parent: &str, key: &str) -> bool {
        match map.get(key) {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                self.fail(
                    &join(parent, key),
                    format!("expected true or false, found {}", kind_of(other)),
                );
                false
            }
        }
    }

    /// An entity's `indexes`: token → component names, in any order. The table hash and range
    /// keys may be listed (they are part of every page key); of the others, a sharded generated
    /// property is the index hash key (the table hash key when there is none) and the one left
    /// is the index range key (the table range key when there is none). Every index projects
    /// all attributes.
    fn entity_indexes(
        &mut self,
        entity: &Map<String, Value>,
        entity_path: &str,
        table: &TableModel,
        generated: &[GeneratedProperty],
    ) -> Vec<Index> {
        let Some(map) = self.object_field(entity, entity_path, "indexes") else {
            return Vec::new();
        };
        let parent = join(entity_path, "indexes");
        let mut indexes = Vec::with_capacity(map.len());
        for (name, value) in map {
            let path = join(&parent, name);
            let Some(components) = self.strings(value, &path, "index component names") else {
                continue;
            };
            if components.is_empty() {
                self.fail(
                    &path,
                    "an index needs its key components, e.g. [\"hashKey\", \"rangeKey\", \"created\"]",
                );
                continue;
            }
            let mut seen: Vec<&str> = Vec::new();
            let mut hash_keys: Vec<&Name> = Vec::new();
            let mut range_keys: Vec<&Name> = Vec::new();
            for component in &components {
                if seen.contains(&&**component) {
                    self.problems
                        .push(&path, format!("duplicate index component `{component}`"));
                    continue;
                }
                seen.push(component);
                if *component == table.hash_key || *component == table.range_key {
                    continue;
                }
                let sharded = generated
                    .iter()
                    .any(|g| g.name == *component && g.kind == GeneratedKind::Sharded);
                if sharded {
                    hash_keys.push(component);
                } else {
                    range_keys.push(component);
                }
            }
            let mut pick = |keys: Vec<&Name>, side: &str, default: &Name| -> Name {
                if keys.len() > 1 {
                    // a placeholder: rules about the index would only repeat this
                    self.fail(
                        &path,
                        format!(
                            "an index has one {side} key, but {} could each be it; keep one",
                            list(keys.iter().map(|k| &***k))
                        ),
                    );
                }
                keys.first()
                    .map_or_else(|| default.clone(), |k| (*k).clone())
            };
            let hash_key = pick(hash_keys, "hash", &table.hash_key);
            let range_key = pick(range_keys, "range", &table.range_key);
            indexes.push(Index {
                name: Cow::Owned(name.clone()),
                hash_key,
                range_key,
                projection: Projection::All,
                multi: None,
            });
        }
        indexes
    }
}

/// (entity token, per-entity key) for every per-entity key in `root.entities`.
fn per_entity_keys(root: &Map<String, Value>) -> Vec<(String, &'static str)> {
    let Some(entities) = root.get("entities").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for (token, entity) in entities {
        let Some(fields) = entity.as_object() else {
            continue;
        };
        for key in PER_ENTITY_KEYS {
            if fields.contains_key(*key) {
                found.push((token.clone(), *key));
            }
        }
    }
    found
}
