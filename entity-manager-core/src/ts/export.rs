//! Exporting a [`Schema`] as a TypeScript Entity Manager config (JSON).
//!
//! The TypeScript config keeps transcodes, generated properties and indexes in table-wide maps,
//! so the export merges the entities' lists by name. What the TypeScript shape cannot express is
//! reported, every problem at once, in a [`ConfigError`]:
//! - a transcode of your own (TypeScript would need its code, which JSON cannot carry);
//! - one name with different definitions in different entities (a property with two
//!   transcodes, a generated property or index declared two ways);
//! - an unsharded generated property declared atomic (TypeScript's unsharded properties are
//!   never atomic);
//! - a multi-attribute index (one hash and one range attribute per index in TypeScript).
//!
//! The schema file ([`Schema::to_json`]) holds all of them.
//!
//! Generated properties and indexes belong to the entity that declares them in Rust; the
//! TypeScript library adds every generated property and index to every entity (PRODUCT.md §9,
//! item 7). The export writes the union, so a TypeScript service (or
//! [`Schema::from_ts_config`]) computes every declared key exactly as the Rust entity does, and
//! may in addition write the other entities' generated properties where their components are
//! present.

use serde_json::{Map, Value, json};

use crate::error::{ConfigError, ConfigProblem};
use crate::model::{GeneratedKind, Index, Profile};
use crate::schema::Schema;
use crate::schema_json::{entity_json, index_json};
use crate::transcode;
use crate::validate::{join, list};

impl Schema {
    /// The TypeScript Entity Manager config of this schema, in the shape
    /// [`Schema::from_ts_config`] and the TypeScript library read.
    ///
    /// Loading the export gives the same keys for every entity. The shard-space rule is not part
    /// of the TypeScript config: pass [`TableModel::shard_space`](crate::model::TableModel) to
    /// [`Schema::from_ts_config`] again.
    ///
    /// Generated properties and indexes belong to the entity that declares them in Rust; the
    /// TypeScript library adds every generated property and index to every entity (PRODUCT.md
    /// §9, item 7). The export writes their union, so TypeScript (and [`Schema::from_ts_config`])
    /// computes every declared key exactly as the Rust entity does, and may in addition write
    /// another entity's generated property where its components are present. Transcodes are
    /// recognised by name.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] listing everything the TypeScript shape cannot express, each problem at
    /// the path of the index or property at fault: multi-attribute indexes (TypeScript has one
    /// hash and one range attribute per index; a key attribute is never dropped), transcodes
    /// of your own, a name defined differently by two entities, and atomic unsharded generated
    /// properties. [`Schema::to_json`] writes the schema file, which holds all of them. Generated properties and indexes are merged into the table-wide lists; see
    /// the notes below for what that means on the TypeScript side.
    ///
    /// ```
    /// use entity_manager_core::Schema;
    /// use entity_manager_core::model::ShardSpace;
    /// use serde_json::json;
    ///
    /// let config = json!({
    ///     "hashKey": "hashKey",
    ///     "rangeKey": "rangeKey",
    ///     "entities": { "user": { "uniqueProperty": "userId", "timestampProperty": "created" } },
    ///     "propertyTranscodes": { "userId": "string", "created": "timestamp" }
    /// });
    /// let schema = Schema::from_ts_config(&config, ShardSpace::Product)?;
    /// let exported = schema.to_ts_config()?;
    /// assert_eq!(exported["propertyTranscodes"]["created"], "timestamp");
    /// let again = Schema::from_ts_config(&exported, ShardSpace::Product)?;
    /// assert_eq!(again.entities()[0].shard_bumps, schema.entities()[0].shard_bumps);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_ts_config(&self) -> Result<Value, ConfigError> {
        let table = self.table();
        let mut problems = Vec::new();
        let mut transcodes = Map::new();
        let mut sharded = Map::new();
        let mut unsharded = Map::new();
        let mut indexes = Map::new();
        let mut entities = Map::new();
        for entity in self.entities() {
            for property in entity.properties.iter() {
                let name = property.transcode.name();
                let path = join("propertyTranscodes", &property.name);
                // by name: the derive gives built-in transcodes typed variants of one name
                if transcode::builtin(name).is_none() {
                    problems.push(problem(
                        &path,
                        format!(
                            "entity `{}` gives `{}` the transcode `{name}`, which is not built in; TypeScript needs the transcode's code, so use a built-in transcode or keep this entity out of the TypeScript config",
                            entity.token, property.name
                        ),
                    ));
                }
                merge(
                    &mut transcodes,
                    &property.name,
                    json!(name),
                    &path,
                    &mut problems,
                );
            }
            for generated in entity.generated.iter() {
                let (side, map) = match generated.kind {
                    GeneratedKind::Sharded => ("sharded", &mut sharded),
                    GeneratedKind::Unsharded => ("unsharded", &mut unsharded),
                };
                let path = join(&join("generatedProperties", side), &generated.name);
                if generated.kind == GeneratedKind::Unsharded && generated.atomic {
                    problems.push(problem(
                        &path,
                        format!(
                            "entity `{}` declares the unsharded generated property `{}` atomic, which TypeScript cannot express (its unsharded properties are never atomic); drop `atomic` to export it",
                            entity.token, generated.name
                        ),
                    ));
                }
                let components: Vec<&str> = generated.components.iter().map(|c| &**c).collect();
                merge(
                    map,
                    &generated.name,
                    json!(components),
                    &path,
                    &mut problems,
                );
            }
            for index in entity.indexes.iter() {
                let path = join("indexes", &index.name);
                // one hash and one range attribute per index in TypeScript: exporting the first
                // of each would drop key attributes, so a multi-attribute index is refused
                if index.multi.is_some() {
                    problems.push(multi_index_problem(&entity.token, index, &path));
                    continue;
                }
                merge(
                    &mut indexes,
                    &index.name,
                    index_json(index),
                    &path,
                    &mut problems,
                );
            }
            entities.insert(entity.token.to_string(), Value::Object(entity_json(entity)));
        }
        // one name, two roles across entities: TypeScript's table-wide lists cannot hold both
        for name in sharded.keys().filter(|n| unsharded.contains_key(*n)) {
            problems.push(problem(
                &join("generatedProperties.unsharded", name),
                format!(
                    "`{name}` is a sharded generated property in one entity and an unsharded one in another; the TypeScript config has one table-wide definition per name, so give them different names"
                ),
            ));
        }
        if !problems.is_empty() {
            return Err(ConfigError { problems });
        }
        let config = json!({
            "hashKey": table.hash_key,
            "rangeKey": table.range_key,
            "generatedKeyDelimiter": table.delimiters.generated_key,
            "generatedValueDelimiter": table.delimiters.generated_value,
            "shardKeyDelimiter": table.delimiters.shard_key,
            "throttle": table.throttle,
            "entities": entities,
            "generatedProperties": { "sharded": sharded, "unsharded": unsharded },
            "indexes": indexes,
            "propertyTranscodes": transcodes,
        });
        // the merged lists give every entity every name: whatever rule that breaks (a name that
        // is a property of one entity and a generated property of another, …) is a refusal,
        // never a configuration that does not load
        Self::from_ts_config(&config, Profile::Native)?;
        Ok(config)
    }
}

/// The refusal of a multi-attribute index: TypeScript has one hash and one range attribute per
/// index, and exporting the first of each would drop key attributes.
fn multi_index_problem(entity: &str, index: &Index, path: &str) -> ConfigProblem {
    let sharded = index.multi.as_ref().is_some_and(|m| m.sharded);
    problem(
        path,
        format!(
            "entity `{entity}` has the multi-attribute index `{}` (partition {}{}, sort {}), which the TypeScript configuration cannot express (one hash and one range attribute per index); write the schema file instead (`Schema::to_json`), which the command line reads",
            index.name,
            list(index.hash_names()),
            if sharded { ", sharded" } else { "" },
            list(index.range_names()),
        ),
    )
}

fn problem(path: &str, message: String) -> ConfigProblem {
    ConfigProblem {
        path: path.to_owned(),
        message,
        // what TypeScript cannot express, not a broken rule
        rule: None,
    }
}

/// Puts `value` under `name`, or reports a different value already there.
fn merge(
    map: &mut Map<String, Value>,
    name: &str,
    value: Value,
    path: &str,
    problems: &mut Vec<ConfigProblem>,
) {
    match map.get(name) {
        None => {
            map.insert(name.to_owned(), value);
        }
        Some(existing) if *existing == value => {}
        Some(existing) => problems.push(problem(
            path,
            format!(
                "`{name}` is defined as {existing} by one entity and as {value} by another; the TypeScript config has one table-wide definition per name, so give them different names"
            ),
        )),
    }
}
