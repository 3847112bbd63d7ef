//! The schema file (`Schema::to_json` / `Schema::from_json`) is lossless, and the TypeScript
//! export (`Schema::to_ts_config`) either keeps every key attribute or refuses (issue 48).
//!
//! Random schemas of every kind the derive can express: any key profile (and settings no
//! profile pins), delimiters, throttle and query defaults; shard bumps; built-in transcodes;
//! sharded and unsharded generated properties (atomic or not); classic indexes on the table
//! keys, a sharded generated hash key, an unsharded generated or transcoded range key;
//! multi-attribute indexes sharded or not, of string, number and binary attributes; every
//! projection; and indexes shared by several entities (item collections).

use std::borrow::Cow;

use entity_manager::model::{
    Delimiters, EntityModel, GeneratedProperty, Index, IndexAttribute, KeyMode, NumericHash,
    Profile, Projection, Property, ShardBump, ShardHash, ShardSpace, TableModel,
};
use entity_manager::store::{KeyType, TableDefinition};
use entity_manager::{Schema, transcode};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

const TOKENS: [&str; 3] = ["user", "order", "line"];
const PROPERTIES: [&str; 5] = ["p0", "p1", "p2", "p3", "p4"];
/// Stored attributes of multi-attribute keys: the first three partition, the others sort.
const ATTRIBUTES: [&str; 6] = ["a0", "a1", "a2", "a3", "a4", "a5"];
const INDEXES: [&str; 4] = ["byA", "byB", "byC", "byD"];
const DELIMITERS: [(&str, &str, &str); 3] = [("|", "#", "!"), ("~", "=", "!"), ("::", "#", "$")];
const KEY_TYPES: [KeyType; 3] = [KeyType::S, KeyType::N, KeyType::B];

#[derive(Clone, Debug)]
struct Shape {
    keys: (bool, bool),
    delimiters: usize,
    /// key mode, shard space and numeric hashing, in any combination
    settings: (bool, bool, bool, bool),
    throttle: usize,
    entities: Vec<EntityShape>,
    /// a multi-attribute index every entity has (an item collection): sharded, partition and
    /// sort key types
    collection: Option<(bool, Vec<usize>, Vec<usize>)>,
}

#[derive(Clone, Debug)]
struct EntityShape {
    bumps: Vec<(u8, u8)>,
    defaults: (usize, usize),
    /// transcode per pool property (`None`: not a property of this entity)
    properties: Vec<Option<usize>>,
    generated: Vec<(bool, bool, Vec<usize>)>,
    index_offset: usize,
    indexes: Vec<IndexShape>,
}

#[derive(Clone, Debug)]
enum IndexShape {
    Classic {
        hash: usize,
        range: usize,
        projection: usize,
    },
    Multi {
        sharded: bool,
        hash: Vec<usize>,
        range: Vec<usize>,
        projection: usize,
    },
}

fn index_shape() -> impl Strategy<Value = IndexShape> {
    prop_oneof![
        (0_usize..4, 0_usize..8, 0_usize..3).prop_map(|(hash, range, projection)| {
            IndexShape::Classic {
                hash,
                range,
                projection,
            }
        }),
        (
            any::<bool>(),
            proptest::collection::vec(0_usize..3, 1..=3),
            proptest::collection::vec(0_usize..3, 1..=3),
            0_usize..3
        )
            .prop_map(|(sharded, hash, range, projection)| IndexShape::Multi {
                sharded,
                hash,
                range,
                projection,
            }),
    ]
}

fn entity_shape() -> impl Strategy<Value = EntityShape> {
    (
        proptest::collection::vec((1_u8..=5, 1_u8..=2), 0..=3),
        (1_usize..50, 1_usize..50),
        proptest::collection::vec(proptest::option::of(0_usize..6), 5),
        proptest::collection::vec(
            (
                any::<bool>(),
                any::<bool>(),
                proptest::collection::vec(0_usize..5, 1..=3),
            ),
            0..=3,
        ),
        0_usize..4,
        proptest::collection::vec(index_shape(), 0..=3),
    )
        .prop_map(
            |(bumps, defaults, properties, generated, index_offset, indexes)| EntityShape {
                bumps,
                defaults,
                properties,
                generated,
                index_offset,
                indexes,
            },
        )
}

fn shape() -> impl Strategy<Value = Shape> {
    (
        (any::<bool>(), any::<bool>()),
        0..DELIMITERS.len(),
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
        1_usize..20,
        proptest::collection::vec(entity_shape(), 1..=3),
        proptest::option::of((
            any::<bool>(),
            proptest::collection::vec(0_usize..3, 1..=3),
            proptest::collection::vec(0_usize..3, 1..=3),
        )),
    )
        .prop_map(
            |(keys, delimiters, settings, throttle, entities, collection)| Shape {
                keys,
                delimiters,
                settings,
                throttle,
                entities,
                collection,
            },
        )
}

fn owned(s: &str) -> Cow<'static, str> {
    Cow::Owned(s.to_owned())
}

impl Shape {
    fn table(&self) -> TableModel {
        let (g, v, s) = DELIMITERS[self.delimiters];
        let (mode, space, hash, shard_hash) = self.settings;
        TableModel::DEFAULT
            .with_keys(
                if self.keys.0 { "pk" } else { "hashKey" },
                if self.keys.1 { "sk" } else { "rangeKey" },
            )
            .with_delimiters(Delimiters::new(g, v, s))
            .with_throttle(self.throttle)
            .with_key_mode(if mode {
                KeyMode::TypeScript
            } else {
                KeyMode::Transcoded
            })
            .with_shard_space(if space {
                ShardSpace::Power
            } else {
                ShardSpace::Product
            })
            .with_numeric_hash(if hash {
                NumericHash::Constant
            } else {
                NumericHash::Decimal
            })
            .with_shard_hash(if shard_hash {
                ShardHash::StringHash
            } else {
                ShardHash::Sha256
            })
    }

    /// The schema of this shape, or `None` when it breaks a rule of `Schema::new`.
    fn schema(&self) -> Option<Schema> {
        let table = self.table();
        let entities = self
            .entities
            .iter()
            .zip(TOKENS)
            .map(|(e, token)| {
                let mut model = e.model(token, &table);
                if let Some((sharded, hash, range)) = &self.collection {
                    let shared = IndexShape::Multi {
                        sharded: *sharded,
                        hash: hash.clone(),
                        range: range.clone(),
                        projection: 0,
                    };
                    let mut indexes = model.indexes.to_vec();
                    indexes.push(multi_index("byCollection", &shared, &table, |_, _| {
                        Projection::All
                    }));
                    model.indexes = Cow::Owned(indexes);
                }
                model
            })
            .collect();
        Schema::new(table, entities).ok()
    }
}

impl EntityShape {
    /// The generated properties `g0`…: distinct components, of the pool properties present,
    /// else of `id` and `created`.
    fn generated(&self, present: &[&str]) -> Vec<GeneratedProperty> {
        let mut generated = Vec::new();
        for (i, (sharded, atomic, components_at)) in self.generated.iter().enumerate() {
            // distinct components, of the pool properties present, else of `id` and `created`
            let pool: &[&str] = if present.is_empty() {
                &["id", "created"]
            } else {
                present
            };
            let mut components: Vec<Cow<'static, str>> = Vec::new();
            for c in components_at {
                let name = owned(pool[c % pool.len()]);
                if !components.contains(&name) {
                    components.push(name);
                }
            }
            let name: &'static str = ["g0", "g1", "g2"][i];
            let mut g = if *sharded {
                GeneratedProperty::sharded(name, &[])
            } else {
                GeneratedProperty::unsharded(name, &[], *atomic)
            };
            g.components = Cow::Owned(components);
            generated.push(g);
        }
        generated
    }

    fn model(&self, token: &'static str, table: &TableModel) -> EntityModel {
        let mut model = EntityModel::new(token, "id", "created")
            .with_defaults(self.defaults.0, self.defaults.1);
        let mut properties = vec![
            Property::new("id", transcode::STRING),
            Property::new("created", transcode::TIMESTAMP),
        ];
        for (name, t) in PROPERTIES.iter().zip(&self.properties) {
            if let Some(t) = t {
                let mut p = Property::new("", transcode::STRING);
                p.name = owned(name);
                p.transcode =
                    transcode::builtin(transcode::BUILTIN_NAMES[*t]).unwrap_or(transcode::STRING);
                properties.push(p);
            }
        }
        let present: Vec<&str> = properties.iter().skip(2).map(|p| &*p.name).collect();
        let mut chars = 0;
        model.shard_bumps = Cow::Owned(
            self.bumps
                .iter()
                .enumerate()
                .map(|(i, &(bits, more))| {
                    chars += more;
                    ShardBump::new(1_000 * (i as u64 + 1), bits, chars)
                })
                .collect(),
        );
        let generated = self.generated(&present);
        let sharded: Vec<&str> = generated
            .iter()
            .filter(|g| g.is_sharded())
            .map(|g| &*g.name)
            .collect();
        let ranged: Vec<&str> = generated
            .iter()
            .filter(|g| !g.is_sharded())
            .map(|g| &*g.name)
            .chain(present.iter().copied())
            .collect();
        // an empty list of projected attributes is keys only, as the derive makes it
        let projection = |p: usize, keys: &[&str]| {
            let names: Vec<Cow<'static, str>> = present
                .iter()
                .filter(|n| !keys.contains(n))
                .take(2)
                .map(|n| owned(n))
                .collect();
            match p {
                0 => Projection::All,
                _ if p == 1 || names.is_empty() => Projection::KeysOnly,
                _ => Projection::Include(Cow::Owned(names)),
            }
        };
        let mut indexes = Vec::new();
        for (i, shape) in self.indexes.iter().enumerate() {
            let name = INDEXES[(self.index_offset + i) % INDEXES.len()];
            let index = match shape {
                IndexShape::Classic {
                    hash,
                    range,
                    projection: p,
                } => {
                    let hash = sharded
                        .get(hash.wrapping_sub(1))
                        .copied()
                        .unwrap_or(&table.hash_key);
                    let range = match range {
                        0 => &*table.range_key,
                        r => ranged.get(r - 1).copied().unwrap_or(&table.range_key),
                    };
                    let mut index = Index::new(name, owned(hash), owned(range), Projection::All);
                    index.projection = projection(*p, &[hash, range]);
                    index
                }
                IndexShape::Multi { projection: p, .. } => {
                    multi_index(name, shape, table, |_, keys| projection(*p, keys))
                }
            };
            indexes.push(index);
        }
        model.properties = Cow::Owned(properties);
        model.generated = Cow::Owned(generated);
        model.indexes = Cow::Owned(indexes);
        model
    }
}

/// The multi-attribute index of `shape` (an `IndexShape::Multi`): partition attributes `a0`…
/// (after the table hash key when sharded), sort attributes `a3`…, its projection made of its
/// key attribute names.
fn multi_index(
    name: &'static str,
    shape: &IndexShape,
    table: &TableModel,
    projection: impl Fn(usize, &[&str]) -> Projection,
) -> Index {
    let IndexShape::Multi {
        sharded,
        hash,
        range,
        projection: p,
    } = shape
    else {
        return Index::new(
            name,
            owned(&table.hash_key),
            owned(&table.range_key),
            Projection::All,
        );
    };
    let mut h = Vec::new();
    if *sharded {
        h.push(IndexAttribute::named(owned(&table.hash_key), KeyType::S));
    }
    h.extend(
        hash.iter()
            .enumerate()
            .map(|(i, t)| IndexAttribute::named(owned(ATTRIBUTES[i]), KEY_TYPES[*t])),
    );
    let r: Vec<IndexAttribute> = range
        .iter()
        .enumerate()
        .map(|(i, t)| IndexAttribute::named(owned(ATTRIBUTES[3 + i]), KEY_TYPES[*t]))
        .collect();
    let mut index = Index::multi(name, &[], &[], *sharded, Projection::All);
    index.hash_key.clone_from(&h[0].name);
    index.range_key.clone_from(&r[0].name);
    let keys: Vec<&str> = h.iter().chain(&r).map(|a| &*a.name).collect();
    index.projection = projection(*p, &keys);
    if let Some(multi) = index.multi.as_mut() {
        multi.hash = Cow::Owned(h);
        multi.range = Cow::Owned(r);
    }
    index
}

fn fail(e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

/// The TypeScript export keeps every key attribute, or refuses naming what it cannot express.
fn check_ts_export(schema: &Schema) -> Result<(), TestCaseError> {
    let multi: Vec<&Index> = schema
        .entities()
        .iter()
        .flat_map(|e| e.indexes.iter())
        .filter(|i| i.multi.is_some())
        .collect();
    let ts = match schema.to_ts_config() {
        Err(refused) => {
            prop_assert!(!refused.problems.is_empty());
            for index in multi {
                let path = format!("indexes.{}", index.name);
                prop_assert!(
                    refused
                        .problems
                        .iter()
                        .any(|p| p.path == path && p.message.contains("multi-attribute")),
                    "the refusal does not name the multi-attribute index {}: {refused}",
                    index.name
                );
            }
            return Ok(());
        }
        Ok(ts) => ts,
    };
    prop_assert!(
        multi.is_empty(),
        "a multi-attribute index was exported: {ts}"
    );
    let table = schema.table();
    let profile = Profile::matching(
        table.key_mode,
        table.shard_space,
        table.numeric_hash,
        table.shard_hash,
    );
    let back = Schema::from_ts_config(&ts, profile.unwrap_or(Profile::Native)).map_err(fail)?;
    let again = back.table();
    prop_assert_eq!(
        (&again.hash_key, &again.range_key),
        (&table.hash_key, &table.range_key)
    );
    prop_assert_eq!(&again.delimiters, &table.delimiters);
    if profile.is_some() {
        prop_assert_eq!(again, table);
    }
    for entity in schema.entities() {
        let there = back.entity(&entity.token).map_err(fail)?.model();
        prop_assert_eq!(&there.unique_property, &entity.unique_property);
        prop_assert_eq!(&there.timestamp_property, &entity.timestamp_property);
        prop_assert_eq!(&there.shard_bumps, &entity.shard_bumps);
        for property in entity.properties.iter() {
            prop_assert_eq!(there.property(&property.name), Some(property));
        }
        for generated in entity.generated.iter() {
            prop_assert_eq!(there.generated_property(&generated.name), Some(generated));
        }
        for index in entity.indexes.iter() {
            let Some(exported) = there.index(&index.name) else {
                return Err(fail(format!(
                    "index {} of {} lost",
                    index.name, entity.token
                )));
            };
            // every key attribute survives, in order
            prop_assert_eq!(exported.hash_names(), index.hash_names());
            prop_assert_eq!(exported.range_names(), index.range_names());
            prop_assert_eq!(&exported.projection, &index.projection);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, max_global_rejects: 20_000, ..ProptestConfig::default() })]

    #[test]
    fn the_schema_file_is_lossless_and_the_ts_export_keeps_every_key_or_refuses(shape in shape()) {
        let schema = shape.schema();
        prop_assume!(schema.is_some());
        let Some(schema) = schema else { return Ok(()) };

        let file = schema.to_json().map_err(fail)?;
        let back = Schema::from_json(&file).map_err(fail)?;
        prop_assert_eq!(&back, &schema);
        prop_assert_eq!(back.differences(&schema), vec![]);
        // as the text of a file, too
        let text = schema.to_json_string().map_err(fail)?;
        let read: serde_json::Value = serde_json::from_str(&text).map_err(fail)?;
        prop_assert_eq!(&Schema::from_json(&read).map_err(fail)?, &schema);
        // and as the stamp carries it
        // (of a schema that makes a table: one whose key attributes have one type each)
        if let Ok(definition) = TableDefinition::from_schema(&schema) {
            let stamp = definition.stamp.ok_or_else(|| fail("no stamp"))?;
            prop_assert_eq!(stamp.schema().transpose().map_err(fail)?, Some(schema.clone()));
        }

        check_ts_export(&schema)?;
    }
}

/// The shop of issue 48: `byStatus` (partition `status`, sort `created`, sharded) was exported
/// as `{hashKey: "hashKey", rangeKey: "created"}`, `status` dropped; it is now refused by name,
/// and the schema file keeps it.
#[test]
fn a_multi_attribute_index_is_refused_by_the_ts_export_and_kept_by_the_schema_file()
-> Result<(), Box<dyn std::error::Error>> {
    const HASH: &[IndexAttribute] = &[
        IndexAttribute::new("hashKey", KeyType::S),
        IndexAttribute::new("status", KeyType::S),
    ];
    const RANGE: &[IndexAttribute] = &[IndexAttribute::new("created", KeyType::N)];
    const INDEXES: &[Index] = &[Index::multi("byStatus", HASH, RANGE, true, Projection::All)];
    const PROPERTIES: &[Property] = &[
        Property::new("orderId", transcode::STRING),
        Property::new("created", transcode::TIMESTAMP),
    ];
    let order = EntityModel::new("order", "orderId", "created")
        .with_properties(PROPERTIES)
        .with_indexes(INDEXES);
    let schema = Schema::new(TableModel::DEFAULT, vec![order])?;

    let Err(refused) = schema.to_ts_config() else {
        return Err("the multi-attribute index was exported".into());
    };
    assert_eq!(refused.problems.len(), 1, "{refused}");
    assert_eq!(refused.problems[0].path, "indexes.byStatus");
    assert!(
        refused.problems[0]
            .message
            .contains("(partition `hashKey`, `status`, sharded, sort `created`)"),
        "{refused}"
    );

    let file = schema.to_json()?;
    assert_eq!(
        file["entities"]["order"]["indexes"]["byStatus"],
        serde_json::json!({
            "partition": [{ "name": "hashKey", "type": "S" }, { "name": "status", "type": "S" }],
            "sort": [{ "name": "created", "type": "N" }],
            "sharded": true
        })
    );
    assert_eq!(Schema::from_json(&file)?, schema);
    Ok(())
}

/// The native profile's shard hash is part of the file: a native table kept on `string-hash`
/// (the escape hatch of issue 49) is no profile and writes its settings with `shardHash`; a
/// settings file without `shardHash` was written before the native profile left `string-hash`
/// and reads as it, as a stamp without it does.
#[test]
fn the_schema_file_records_the_shard_hash() -> Result<(), Box<dyn std::error::Error>> {
    let config = serde_json::json!({
        "hashKey": "hashKey",
        "rangeKey": "rangeKey",
        "entities": { "user": { "uniqueProperty": "userId", "timestampProperty": "created" } },
        "propertyTranscodes": { "userId": "string", "created": "timestamp" }
    });
    let native = Schema::from_ts_config(&config, Profile::Native)?;
    let file = native.to_json()?;
    assert_eq!(file["keyProfile"], serde_json::json!("native"));
    assert_eq!(
        Schema::from_json(&file)?.table().shard_hash,
        ShardHash::Sha256
    );

    let entities = native.entities().to_vec();
    let kept = Schema::new(
        native
            .table()
            .clone()
            .with_shard_hash(ShardHash::StringHash),
        entities,
    )?;
    let mut file = kept.to_json()?;
    assert_eq!(file.get("keyProfile"), None);
    assert_eq!(file["shardHash"], serde_json::json!("string-hash"));
    assert_eq!(Schema::from_json(&file)?, kept);

    let settings = file.as_object_mut().ok_or("not an object")?;
    settings.remove("shardHash");
    assert_eq!(Schema::from_json(&file)?, kept, "absent: `string-hash`");

    file["shardHash"] = serde_json::json!("md5");
    let Err(e) = Schema::from_json(&file) else {
        return Err("an unknown shard hash loaded".into());
    };
    assert_eq!(e.problems[0].path, "shardHash", "{e}");
    assert!(e.problems[0].message.contains("`sha256`"), "{e}");
    Ok(())
}

/// A TypeScript configuration loads through `from_json` (under npm 6.14, as the CLI reads it);
/// a schema file's mistakes are named by path.
#[test]
fn a_ts_configuration_loads_through_from_json_and_mistakes_are_named()
-> Result<(), Box<dyn std::error::Error>> {
    let config = serde_json::json!({
        "hashKey": "hashKey",
        "rangeKey": "rangeKey",
        "entities": { "user": { "uniqueProperty": "userId", "timestampProperty": "created" } },
        "propertyTranscodes": { "userId": "string", "created": "timestamp" }
    });
    assert_eq!(
        Schema::from_json(&config)?,
        Schema::from_ts_config(&config, Profile::Npm6_14)?
    );

    let mut file = Schema::from_ts_config(&config, Profile::Native)?.to_json()?;
    file["entities"]["user"]["propertyTranscode"] = serde_json::json!({});
    file["entities"]["user"]["indexes"] = serde_json::json!({
        "byX": { "partition": [{ "name": "x", "type": "Q" }], "sort": [{ "name": "y", "type": "S" }] }
    });
    file["entityManagerSchema"] = serde_json::json!(2);
    let Err(e) = Schema::from_json(&file) else {
        return Err("a broken schema file loaded".into());
    };
    let paths: Vec<&str> = e.problems.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "entityManagerSchema",
            "entities.user.propertyTranscode",
            "entities.user.indexes.byX.partition.0.type",
        ],
        "{e}"
    );
    assert!(
        e.problems[1]
            .message
            .contains("did you mean `propertyTranscodes`?"),
        "{e}"
    );
    Ok(())
}

/// The generator is not vacuous: among 400 shapes, most are valid schemas, and the valid ones
/// hold every kind the property test claims (so that a generator broken into making only
/// trivial or only invalid schemas fails here).
#[test]
fn the_generator_makes_valid_schemas_of_every_kind() -> Result<(), Box<dyn std::error::Error>> {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, TestRng, TestRunner};

    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(Config::default().rng_algorithm),
    );
    let strategy = shape();
    let (mut valid, mut counts) = (0, [0_usize; 7]);
    for _ in 0..400 {
        let tree = strategy.new_tree(&mut runner).map_err(|e| e.to_string())?;
        let Some(schema) = tree.current().schema() else {
            continue;
        };
        valid += 1;
        let indexes: Vec<&Index> = schema
            .entities()
            .iter()
            .flat_map(|e| e.indexes.iter())
            .collect();
        let sharded_multi = indexes
            .iter()
            .any(|i| i.multi.as_ref().is_some_and(|m| m.sharded));
        let plain_multi = indexes
            .iter()
            .any(|i| i.multi.as_ref().is_some_and(|m| !m.sharded));
        let sharded_generated_hash = schema.entities().iter().any(|e| {
            e.indexes.iter().any(|i| {
                e.generated_property(&i.hash_key)
                    .is_some_and(GeneratedProperty::is_sharded)
            })
        });
        let shared = indexes
            .iter()
            .enumerate()
            .any(|(n, i)| indexes[..n].iter().any(|j| j.name == i.name));
        let included = indexes
            .iter()
            .any(|i| matches!(i.projection, Projection::Include(_)));
        let exported = schema.to_ts_config().is_ok();
        let no_profile = Profile::matching(
            schema.table().key_mode,
            schema.table().shard_space,
            schema.table().numeric_hash,
            schema.table().shard_hash,
        )
        .is_none();
        for (count, kind) in counts.iter_mut().zip([
            sharded_multi,
            plain_multi,
            sharded_generated_hash,
            shared,
            included,
            exported,
            no_profile,
        ]) {
            *count += usize::from(kind);
        }
    }
    assert!(valid >= 100, "only {valid} of 400 shapes are valid schemas");
    assert!(
        counts.iter().all(|c| *c >= 5),
        "valid {valid}; sharded multi, multi, sharded generated hash, shared index, included projection, exported to TypeScript, no profile: {counts:?}"
    );
    Ok(())
}
