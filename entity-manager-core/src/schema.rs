//! A validated schema: one table and its entities.

use serde_dynamo::{AttributeValue, Item};

use crate::error::{ConfigError, Error, Result};
use crate::limits::{KeyRole, key_value_bytes};
use crate::model::{EntityModel, Profile, TableModel};
use crate::store::{Inference, TableDefinition, TableDefinitionError};
use crate::transcode::KeyType;

/// A validated table configuration with its entities.
///
/// Build one from static models ([`Schema::new`]) or from a TypeScript Entity Manager config
/// ([`Schema::from_ts_config`]); both apply the same rules and report every problem at once.
#[derive(Clone, Debug)]
pub struct Schema {
    table: TableModel,
    entities: Vec<EntityModel>,
    /// Per entity (same order), the key attributes whose values DynamoDB limits.
    key_limits: Vec<Vec<KeyLimit>>,
    /// Per entity (same order), the keys of its multi-attribute indexes, limited together.
    key_groups: Vec<Vec<KeyGroup>>,
}

impl Schema {
    /// Validates and normalises a table and its entities.
    ///
    /// Shard bumps are sorted by timestamp and a `{timestamp: 0, charBits: 1, chars: 0}` bump is
    /// put in front when none starts at 0 (an empty schedule means the default one). Every rule
    /// of the configuration is checked, and every problem found is reported in one
    /// [`ConfigError`].
    pub fn new(table: TableModel, mut entities: Vec<EntityModel>) -> Result<Self, ConfigError> {
        crate::validate::validate(&table, &mut entities)?;
        let key_limits = entities
            .iter()
            .map(|entity| KeyLimit::of(&table, entity))
            .collect();
        let key_groups = entities
            .iter()
            .map(|entity| KeyGroup::of(&table, entity))
            .collect();
        Ok(Self {
            table,
            entities,
            key_limits,
            key_groups,
        })
    }

    /// The table settings.
    pub fn table(&self) -> &TableModel {
        &self.table
    }

    /// The entities, in configuration order.
    pub fn entities(&self) -> &[EntityModel] {
        &self.entities
    }

    /// The entity with this token, bound to the table settings.
    pub fn entity(&self, token: &str) -> Result<EntitySchema<'_>> {
        self.entities
            .iter()
            .zip(self.key_limits.iter().zip(&self.key_groups))
            .find(|(e, _)| e.token == token)
            .map(|(model, (key_limits, key_groups))| EntitySchema {
                table: &self.table,
                model,
                key_limits,
                key_groups,
            })
            .ok_or_else(|| Error::UnknownEntity {
                entity: token.to_owned(),
                known: self
                    .entities
                    .iter()
                    .map(|e| &*e.token)
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

/// An entity bound to its table's settings: the handle every key operation goes through.
///
/// It only comes out of a validated [`Schema`] ([`Schema::entity`], or `EntityExt::schema` for
/// a derived entity), so its shard schedule is always normalised: sorted, with the implied
/// `{timestamp: 0, charBits: 1, chars: 0}` bump in front.
#[derive(Clone, Copy, Debug)]
pub struct EntitySchema<'a> {
    pub(crate) table: &'a TableModel,
    pub(crate) model: &'a EntityModel,
    pub(crate) key_limits: &'a [KeyLimit],
    pub(crate) key_groups: &'a [KeyGroup],
}

impl<'a> EntitySchema<'a> {
    /// The table settings.
    pub fn table(&self) -> &'a TableModel {
        self.table
    }

    /// The entity model.
    pub fn model(&self) -> &'a EntityModel {
        self.model
    }

    /// Whether `item` is a record of this entity, judged by its hash key: it must start with
    /// the entity token and the shard key delimiter. An item without a string hash key (a
    /// record not yet keyed) passes.
    pub fn check_entity_token(&self, item: &Item) -> Result<()> {
        self.check_hash_key(item.get(&*self.table.hash_key))
    }

    /// [`check_entity_token`](Self::check_entity_token) of an item's hash key value, taken
    /// off it (or absent).
    pub(crate) fn check_hash_key(&self, hash_key: Option<&AttributeValue>) -> Result<()> {
        let Some(AttributeValue::S(hash_key)) = hash_key else {
            return Ok(());
        };
        let delimiter = &*self.table.delimiters.shard_key;
        let ours = hash_key
            .strip_prefix(&*self.model.token)
            .is_some_and(|rest| rest.starts_with(delimiter));
        if ours {
            Ok(())
        } else {
            Err(Error::OtherEntity {
                entity: self.model.token.to_string(),
                delimiter: delimiter.to_owned(),
                hash_key: hash_key.clone(),
            })
        }
    }
}

// ---------------------------------------------------------------------------------------------
// the table a schema needs

// Here rather than in `store::table`, so that the stores stay below the schema (the schema
// depends on `error`, which holds the stores' errors).
impl TableDefinition {
    /// The table of a validated schema: its keys and every index of every entity.
    ///
    /// The definition keeps the schema, with which a store meeting a table without a stamp
    /// works out from its records which profile made their keys ([`Schema::infer_profile`]).
    pub fn from_schema(schema: &Schema) -> Result<Self, TableDefinitionError> {
        let mut definition = Self::from_entities(schema.table(), schema.entities())?;
        // the stamp carries the whole schema, so that the table describes itself
        if let Some(stamp) = definition.stamp.as_mut() {
            stamp.schema_json = schema.stamp_schema();
        }
        let inferring = schema.clone();
        definition.models = Some(crate::table::KeyModels {
            infer: std::sync::Arc::new(move |records| inferring.infer_profile(records)),
            entities: schema.entities().len(),
        });
        Ok(definition)
    }
}

// ---------------------------------------------------------------------------------------------
// DynamoDB's key limits, per entity

/// A key attribute of an entity whose values DynamoDB limits: the strictest role it has in the
/// table's key or any index key (computed once per validated schema).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KeyLimit {
    pub(crate) attribute: String,
    /// Whether the key core writes it (table keys, generated properties), so that its new value
    /// is among the key updates, rather than a stored property.
    computed: bool,
    /// For a computed key, its slot among the key updates: 0 the table's hash key, 1 its range
    /// key, `2 + i` the entity's `i`-th generated property.
    pub(crate) slot: Option<usize>,
    role: KeyRole,
    /// The index whose key it is (the first with the strictest role), `None` for the table's.
    index: Option<String>,
}

impl KeyLimit {
    /// The key attributes of `entity`, each once.
    pub(crate) fn of(table: &TableModel, entity: &EntityModel) -> Vec<Self> {
        let table_keys = [
            (&*table.hash_key, KeyRole::Partition),
            (&*table.range_key, KeyRole::Sort),
        ]
        .into_iter()
        .map(|(attribute, role)| (None, attribute, role));
        // every key attribute of an index: of a multi-attribute key, the later partition and
        // sort attributes as well (each is a key attribute of its own to `DynamoDB`)
        let index_keys = entity.indexes.iter().flat_map(|index| {
            let name = Some(&*index.name);
            let mut keys = vec![
                (name, &*index.hash_key, KeyRole::Partition),
                (name, &*index.range_key, KeyRole::Sort),
            ];
            if let Some(multi) = &index.multi {
                keys.extend(
                    (multi.hash.iter().skip(1)).map(|a| (name, &*a.name, KeyRole::Partition)),
                );
                keys.extend((multi.range.iter().skip(1)).map(|a| (name, &*a.name, KeyRole::Sort)));
            }
            keys
        });
        let mut limits: Vec<Self> = Vec::new();
        for (index, attribute, role) in table_keys.chain(index_keys) {
            match limits.iter_mut().find(|l| l.attribute == attribute) {
                Some(known) if role.max_bytes() < known.role.max_bytes() => {
                    known.role = role;
                    known.index = index.map(str::to_owned);
                }
                Some(_) => {}
                None => {
                    let slot = slot_of(table, entity, attribute);
                    limits.push(Self {
                        attribute: attribute.to_owned(),
                        computed: slot.is_some(),
                        slot,
                        role,
                        index: index.map(str::to_owned),
                    });
                }
            }
        }
        // a property stored as a number has no byte length to check
        limits.retain(|l| {
            l.computed
                || entity
                    .property(&l.attribute)
                    .is_none_or(|p| p.transcode.key_type() != Some(KeyType::N))
        });
        limits
    }
}

/// For a key attribute the key core computes (table keys, generated properties), its slot
/// among the key updates: 0 the table's hash key, 1 its range key, `2 + i` the entity's `i`-th
/// generated property; `None` for a stored property.
fn slot_of(table: &TableModel, entity: &EntityModel, attribute: &str) -> Option<usize> {
    if attribute == &*table.hash_key {
        Some(0)
    } else if attribute == &*table.range_key {
        Some(1)
    } else {
        entity
            .generated
            .iter()
            .position(|g| g.name == attribute)
            .map(|i| 2 + i)
    }
}

/// The partition or the sort attributes of a multi-attribute index, whose present values
/// DynamoDB limits together ([`crate::limits::key_total_over`]): computed once per validated
/// schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KeyGroup {
    index: String,
    role: KeyRole,
    /// Each attribute, with its slot among the key updates when the key core computes it.
    pub(crate) attributes: Vec<(String, Option<usize>)>,
}

impl KeyGroup {
    /// The keys of `entity`'s multi-attribute indexes that have more than one attribute.
    pub(crate) fn of(table: &TableModel, entity: &EntityModel) -> Vec<Self> {
        let mut groups = Vec::new();
        for index in entity.indexes.iter() {
            let Some(multi) = &index.multi else {
                continue;
            };
            for (attributes, role) in [
                (&multi.hash, KeyRole::Partition),
                (&multi.range, KeyRole::Sort),
            ] {
                if attributes.len() > 1 {
                    groups.push(Self {
                        index: index.name.to_string(),
                        role,
                        attributes: attributes
                            .iter()
                            .map(|a| (a.name.to_string(), slot_of(table, entity, &a.name)))
                            .collect(),
                    });
                }
            }
        }
        groups
    }

    /// [`Error::KeyTooLong`] when the values of the group are over its limit together, each
    /// attribute's value size given by `size` (`None`: absent); the error names the attributes
    /// joined with ` + ` and their total.
    pub(crate) fn check(
        &self,
        schema: &EntitySchema<'_>,
        size: impl Fn(&str, Option<usize>) -> Option<usize>,
    ) -> Result<()> {
        let sizes = self
            .attributes
            .iter()
            .filter_map(|(a, slot)| size(a, *slot));
        match crate::limits::key_total_over(self.role, sizes) {
            None => Ok(()),
            Some(bytes) => Err(Error::KeyTooLong {
                entity: schema.model().token.to_string(),
                attribute: self
                    .attributes
                    .iter()
                    .map(|(a, _)| a.as_str())
                    .collect::<Vec<_>>()
                    .join(" + "),
                index: Some(self.index.clone()),
                role: self.role,
                bytes,
            }),
        }
    }
}

impl EntitySchema<'_> {
    /// Checks every key value of a keyed item against DynamoDB's limits: the table's hash and
    /// range keys and the hash and range key of every index the entity declares, and the
    /// partition and the sort attributes of a multi-attribute index together (2,048 and 1,024
    /// bytes). The first value over its limit is a [`Error::KeyTooLong`] naming the entity, the
    /// attribute (the attributes joined with ` + `, for a multi-attribute key), the key (table
    /// or index) and the byte length; an empty plain property keyed on by an index is
    /// an [`Error::EmptyKey`] (`DynamoDB` refuses empty key values).
    pub fn check_key_sizes(&self, item: &Item) -> Result<()> {
        self.check_key_sizes_with(item, &[])
    }

    /// [`check_key_sizes`](Self::check_key_sizes) of `item` once `updates` are written (a
    /// `None` value removes the attribute).
    pub(crate) fn check_key_sizes_with(
        &self,
        item: &Item,
        updates: &[(&str, Option<String>)],
    ) -> Result<()> {
        for limit in self.key_limits {
            let update = if limit.computed {
                updates.iter().find(|(name, _)| **name == *limit.attribute)
            } else {
                None
            };
            let bytes = match update {
                Some((_, value)) => value.as_ref().map(String::len),
                None => item.get(&limit.attribute).and_then(key_value_bytes),
            };
            limit.check(self, bytes)?;
        }
        for group in self.key_groups {
            group.check(self, |name, slot| {
                match slot.and_then(|_| updates.iter().find(|(n, _)| *n == name)) {
                    Some((_, value)) => value.as_ref().map(String::len),
                    None => item.get(name).map(crate::store::value::value_bytes),
                }
            })?;
        }
        Ok(())
    }
}

impl EntitySchema<'_> {
    /// Checks the key values an update writes (`SET`, plain or `if_not_exists`, of a key
    /// attribute: a plain field that an index keys on, or a rewritten generated property)
    /// against DynamoDB's limits: the first value over its limit is a [`Error::KeyTooLong`],
    /// before anything is sent.
    pub(crate) fn check_update_key_sizes(
        &self,
        actions: &[crate::store::UpdateAction],
    ) -> Result<()> {
        use crate::store::UpdateAction;
        for action in actions {
            let (UpdateAction::Set(name, value) | UpdateAction::SetIfNotExists(name, value)) =
                action
            else {
                continue;
            };
            if let Some(limit) = self.key_limits.iter().find(|l| l.attribute == *name) {
                limit.check(self, crate::limits::key_value_bytes(value))?;
            }
        }
        Ok(())
    }
}

impl KeyLimit {
    /// [`Error::KeyTooLong`] when `bytes` exceeds the limit of this key; [`Error::EmptyKey`]
    /// when a plain property keyed on by an index is empty.
    pub(crate) fn check(&self, schema: &EntitySchema<'_>, bytes: Option<usize>) -> Result<()> {
        match bytes {
            // a plain property keyed on by an index: `DynamoDB` refuses an empty value (a
            // computed key is never empty: it holds at least its entity token or property)
            Some(0) if !self.computed => Err(Error::EmptyKey {
                entity: schema.model().token.to_string(),
                property: self.attribute.clone(),
                index: self.index.clone().unwrap_or_default(),
                role: self.role,
            }),
            Some(bytes) if bytes > self.role.max_bytes() => Err(Error::KeyTooLong {
                entity: schema.model().token.to_string(),
                attribute: self.attribute.clone(),
                index: self.index.clone(),
                role: self.role,
                bytes,
            }),
            _ => Ok(()),
        }
    }
}

/// The validated schemas of `Table` types and their entities, built once per type and leaked:
/// one per type, like a `static`, so every path (keys, queries, stores) shares one validated
/// value without revalidating.
///
/// A small per-thread cache sits in front of the shared map, so the hot write path takes no
/// lock once a thread has seen a type.
pub(crate) mod registry {
    use std::any::{Any, TypeId};
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::sync::{PoisonError, RwLock};

    type Value = &'static (dyn Any + Send + Sync);
    /// The key type and the value type: one registry serves several kinds of values.
    type Key = (TypeId, TypeId);

    static SHARED: RwLock<Option<HashMap<Key, Value>>> = RwLock::new(None);

    thread_local! {
        static LOCAL: RefCell<Vec<(Key, Value)>> = const { RefCell::new(Vec::new()) };
    }

    /// The `V` registered for the type `K`, built with `build` and registered the first time.
    /// A failed build registers nothing (it is tried again, and fails again, next time:
    /// validation is deterministic).
    pub(crate) fn get_or_try_init<K: 'static, V: Any + Send + Sync, E>(
        build: impl FnOnce() -> Result<V, E>,
    ) -> Result<&'static V, E> {
        let key = (TypeId::of::<K>(), TypeId::of::<V>());
        let cached = LOCAL.with_borrow(|local| {
            local
                .iter()
                .find(|(k, _)| *k == key)
                .and_then(|(_, v)| v.downcast_ref::<V>())
        });
        if let Some(value) = cached {
            return Ok(value);
        }
        let shared = SHARED
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .and_then(|map| map.get(&key).copied())
            .and_then(|v| v.downcast_ref::<V>());
        let value: &'static V = if let Some(value) = shared {
            value
        } else {
            let fresh: &'static V = Box::leak(Box::new(build()?));
            let mut map = SHARED.write().unwrap_or_else(PoisonError::into_inner);
            // Another thread may have registered one meanwhile: keep the first.
            let kept = *map
                .get_or_insert_with(HashMap::new)
                .entry(key)
                .or_insert(fresh);
            kept.downcast_ref::<V>().unwrap_or(fresh)
        };
        LOCAL.with_borrow_mut(|local| local.push((key, value)));
        Ok(value)
    }
}

// ---------------------------------------------------------------------------------------------
// which profile made a table's keys

impl Schema {
    /// Which profile made the keys of `records` (items as stored, keys included): see
    /// [`Inference`]. The profile configured in this schema plays no part: the configuration
    /// is loaded under every profile in turn.
    ///
    /// ```
    /// use entity_manager_core::Schema;
    /// use entity_manager_core::model::Profile;
    /// use entity_manager_core::store::Inference;
    /// use serde_json::json;
    ///
    /// let config = json!({
    ///     "hashKey": "hashKey",
    ///     "rangeKey": "rangeKey",
    ///     "entities": { "player": {
    ///         "uniqueProperty": "playerId", "timestampProperty": "created",
    ///         "shardBumps": [{ "timestamp": 0, "charBits": 2, "chars": 2 }]
    ///     } },
    ///     "generatedProperties": { "unsharded": { "scoreRangeKey": ["score", "created"] } },
    ///     "propertyTranscodes": { "playerId": "string", "created": "timestamp", "score": "int" }
    /// });
    /// // records a TypeScript service (npm 6.14.0: 8 shards; upstream 8 has 16) wrote
    /// let npm = Schema::from_ts_config(&config, Profile::Npm6_14)?;
    /// let stored = (0..20)
    ///     .map(|i| {
    ///         let record = serde_dynamo::to_item(json!({ "playerId": format!("p{i}"), "created": 1000, "score": 42 }))?;
    ///         Ok(npm.entity("player")?.add_keys(&record)?)
    ///     })
    ///     .collect::<Result<Vec<_>, Box<dyn std::error::Error>>>()?;
    ///
    /// // a service loaded with any profile reads the same answer from them
    /// let native = Schema::from_ts_config(&config, Profile::Native)?;
    /// let inference = native.infer_profile(&stored);
    /// assert_eq!(inference.shown(), Some(Profile::Npm6_14));
    /// assert!(!inference.admits(Profile::Native));
    /// assert_eq!(native.infer_profile(&[]), Inference::Empty { read: 0 });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn infer_profile(&self, records: &[Item]) -> Inference {
        let read = records.len();
        let schemas: Vec<(Profile, Option<Schema>)> = Profile::ALL
            .into_iter()
            .map(|p| {
                let table = self.table().clone().with_profile(p);
                (p, Schema::new(table, self.entities().to_vec()).ok())
            })
            .collect();
        let mut telling = 0usize;
        let mut counts = [0usize; Profile::ALL.len()];
        let mut missed: [Option<String>; Profile::ALL.len()] = Default::default();
        for record in records {
            let Some(token) = self.entity_of(record) else {
                continue;
            };
            let reproduced: Vec<Option<bool>> =
                schemas
                    .iter()
                    .map(|(_, schema)| {
                        schema
                            .as_ref()
                            .and_then(|s| s.entity(token).ok())
                            .and_then(|entity| {
                                let made = entity.refresh_keys(record).ok()?;
                                Some(self.key_names(token).iter().all(|name| {
                                    record.get(name.as_str()) == made.get(name.as_str())
                                }))
                            })
                    })
                    .collect();
            // a record whose keys no profile can make tells nothing
            if reproduced.iter().all(Option::is_none) {
                continue;
            }
            telling += 1;
            for (i, r) in reproduced.iter().enumerate() {
                if *r == Some(true) {
                    counts[i] += 1;
                } else if missed[i].is_none() {
                    missed[i] = Some(self.describe_record(token, record));
                }
            }
        }
        if telling == 0 {
            return Inference::Empty { read };
        }
        let profiles: Vec<Profile> = Profile::ALL
            .into_iter()
            .zip(counts)
            .filter(|(_, n)| *n == telling)
            .map(|(p, _)| p)
            .collect();
        if !profiles.is_empty() {
            return Inference::Reproduced {
                profiles,
                records: telling,
                read,
            };
        }
        let most = counts.iter().copied().max().unwrap_or(0);
        let best: Vec<(Profile, usize)> = Profile::ALL
            .into_iter()
            .zip(counts)
            .filter(|(_, n)| *n == most)
            .collect();
        let example = Profile::ALL
            .iter()
            .position(|p| best.first().is_some_and(|(b, _)| b == p))
            .and_then(|i| missed[i].clone())
            .unwrap_or_default();
        Inference::Unexplained {
            records: telling,
            unexplained: telling - most,
            best,
            example,
            read,
        }
    }

    /// The token of the entity whose hash key `record` has (`<token><shard key delimiter>…`).
    fn entity_of<'s>(&'s self, record: &Item) -> Option<&'s str> {
        let Some(AttributeValue::S(hash_key)) = record.get(&*self.table().hash_key) else {
            return None;
        };
        let delimiter = &*self.table().delimiters.shard_key;
        self.entities().iter().map(|e| &*e.token).find(|token| {
            hash_key
                .strip_prefix(token)
                .is_some_and(|rest| rest.starts_with(delimiter))
        })
    }

    /// The attributes the keys of entity `token` are made of: the table keys and its
    /// generated properties.
    fn key_names(&self, token: &str) -> Vec<String> {
        let mut names = vec![
            self.table().hash_key.to_string(),
            self.table().range_key.to_string(),
        ];
        if let Some(entity) = self.entities().iter().find(|e| e.token == token) {
            names.extend(entity.generated.iter().map(|g| g.name.to_string()));
        }
        names
    }

    /// `entity <token>, key <hash>/<range>`, for messages.
    fn describe_record(&self, token: &str, record: &Item) -> String {
        let text = |name: &str| match record.get(name) {
            Some(AttributeValue::S(s)) => s.clone(),
            Some(other) => format!("{other:?}"),
            None => "(none)".to_owned(),
        };
        format!(
            "entity `{token}`, key `{}` / `{}`",
            text(&self.table().hash_key),
            text(&self.table().range_key)
        )
    }
}
