//! The write transaction ([`Transaction`], everything or nothing) and the read transaction
//! ([`ReadTransaction`], every record as of one instant).

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_dynamo::{AttributeValue, Item};

use crate::entity::{Entity, from_item, schema_of, to_item};
use crate::error::{Error, Result};
use crate::field::{Changes, Condition};
use crate::store::{Expect, Filter, Store, TransactWrite, Update};

use super::condition::{
    all_of, conflict_error, id_text, invalid_operand, store_error, unique_text, version_conflict,
    version_filter,
};
use super::read::{candidates, key_item, key_of, pick_versioned};
use super::update::{checked_update, existing_record_write, rewrite_keys};
use super::write::{create_writes, put_writes, write_item};
/// What one operation of a [`Transaction`] was, to turn a cancellation into a typed error.
#[derive(Clone, Debug)]
struct Origin {
    entity: String,
    unique: String,
    kind: OriginKind,
    /// The call that made it (`create`, `put`…): where an action came from, when a
    /// transaction holds too many.
    call: &'static str,
    /// The version the operation expects stored, for an entity with a version field.
    version: Option<(&'static str, AttributeValue)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OriginKind {
    /// The put of a create, or a check that another candidate key of a create is free.
    Create,
    /// A put (a missing record passes).
    Put,
    /// A check that another candidate key of a put holds no copy.
    Elsewhere,
    /// An update, a condition check or a delete of a record that must exist.
    Existing,
    /// A delete by id of one candidate key (never fails).
    Delete,
}

/// A transaction over records of one or more entities: everything or nothing.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use entity_manager_core::store::{MemoryStore, TableDefinition};
/// use entity_manager_core::{EntityExt, Table, Transaction};
/// # use entity_manager_core::{Entity, transcode};
/// # use entity_manager_core::model::{EntityModel, Property, TableModel};
/// # struct Users;
/// # impl Table for Users {
/// #     const MODEL: TableModel = TableModel::DEFAULT;
/// #     fn model() -> &'static TableModel { static M: TableModel = Users::MODEL; &M }
/// #     fn entities() -> Vec<&'static EntityModel> { vec![User::model(), Email::model()] }
/// # }
/// # #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
/// # #[serde(rename_all = "camelCase")]
/// # struct User { user_id: String, created: u64 }
/// # impl Entity for User {
/// #     type Table = Users;
/// #     const MODEL: EntityModel = {
/// #         const PROPERTIES: &[Property] = &[Property::new("userId", transcode::STRING), Property::new("created", transcode::TIMESTAMP)];
/// #         EntityModel::new("user", "userId", "created").with_properties(PROPERTIES)
/// #     };
/// #     fn model() -> &'static EntityModel { static M: EntityModel = User::MODEL; &M }
/// # }
/// # #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
/// # #[serde(rename_all = "camelCase")]
/// # struct Email { email: String, created: u64, user_id: String }
/// # impl Entity for Email {
/// #     type Table = Users;
/// #     const MODEL: EntityModel = {
/// #         const PROPERTIES: &[Property] = &[Property::new("email", transcode::STRING), Property::new("created", transcode::TIMESTAMP)];
/// #         EntityModel::new("email", "email", "created").with_properties(PROPERTIES)
/// #     };
/// #     fn model() -> &'static EntityModel { static M: EntityModel = Email::MODEL; &M }
/// # }
/// let store = MemoryStore::new(TableDefinition::from_schema(Users::schema()?)?);
/// let ann = User { user_id: "u1".into(), created: 1 };
/// let email = Email { email: "ann@example.com".into(), created: 2, user_id: "u1".into() };
///
/// // a user and her email, created together or not at all
/// Transaction::new().create(&ann)?.create(&email)?.commit(&store).await?;
/// assert_eq!(User::get(&store, "u1").await?, Some(ann));
///
/// // deleting both in one transaction
/// Transaction::new().delete::<User, _>("u1")?.delete::<Email, _>("ann@example.com")?.commit(&store).await?;
/// assert_eq!(Email::get(&store, "ann@example.com").await?, None);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Default)]
#[must_use = "a transaction does nothing until it is committed"]
pub struct Transaction {
    writes: Vec<TransactWrite>,
    origins: Vec<Origin>,
}

impl Transaction {
    /// An empty transaction.
    pub fn new() -> Self {
        Self::default()
    }

    fn push(&mut self, write: TransactWrite, origin: Origin) {
        self.writes.push(write);
        self.origins.push(origin);
    }

    /// Creates `record`: fails the whole transaction with [`Error::AlreadyExists`] if a record
    /// with its unique value exists in any shard.
    pub fn create<E: Entity + Serialize>(mut self, record: &E) -> Result<Self> {
        let schema = schema_of::<E>()?;
        let (item, _) = write_item(record)?;
        let origin = Origin {
            entity: schema.model().token.to_string(),
            unique: unique_text(schema, &item),
            kind: OriginKind::Create,
            call: "create",
            version: None,
        };
        for write in create_writes(schema, item)? {
            self.push(write, origin.clone());
        }
        Ok(self)
    }

    /// Puts (creates or replaces) `record`, as [`EntityExt::put`](crate::EntityExt::put) does: refused with
    /// [`Error::StoredElsewhere`] if a copy is stored under another shard, and with
    /// [`Error::VersionConflict`] if the stored version is not the record's.
    pub fn put<E: Entity + Serialize>(self, record: &E) -> Result<Self> {
        self.put_writes(record, None)
    }

    /// Puts `record` if `condition` holds for the stored one, else the transaction fails with
    /// [`Error::ConditionFailed`].
    pub fn put_if<E: Entity + Serialize>(
        self,
        record: &E,
        condition: Condition<E>,
    ) -> Result<Self> {
        self.put_writes(record, Some(condition))
    }

    fn put_writes<E: Entity + Serialize>(
        mut self,
        record: &E,
        condition: Option<Condition<E>>,
    ) -> Result<Self> {
        let schema = schema_of::<E>()?;
        let (writes, expected) = put_writes(schema, record, condition)?;
        let unique = match writes.first() {
            Some(TransactWrite::Put { item, .. }) => unique_text(schema, item),
            _ => String::new(),
        };
        let version = E::VERSION.zip(expected);
        for (n, write) in writes.into_iter().enumerate() {
            let origin = Origin {
                entity: schema.model().token.to_string(),
                unique: unique.clone(),
                kind: if n == 0 {
                    OriginKind::Put
                } else {
                    OriginKind::Elsewhere
                },
                call: "put",
                version: version.clone(),
            };
            self.push(write, origin);
        }
        Ok(self)
    }

    /// Applies typed [`Changes`] to the stored `record` (as read earlier): every generated
    /// property built from a changed field is rewritten from the record's values, so the
    /// transaction fails with [`Error::ConditionFailed`] if the record changed since (with a
    /// version field: [`Error::VersionConflict`]); also if the record no longer exists.
    pub fn update<E: Entity + Serialize + DeserializeOwned>(
        mut self,
        record: &E,
        changes: Changes<E>,
    ) -> Result<Self> {
        let schema = schema_of::<E>()?;
        let entity = schema.model().token.to_string();
        let old = to_item(record)?;
        let unique = unique_text(schema, &old);
        let crate::field::Parts {
            actions,
            condition,
            version: expected,
        } = changes
            .into_parts()
            .map_err(|invalid| invalid_operand(&entity, invalid))?;
        let table = schema.table();
        // the table keys are all the check needs of the table
        let definition = crate::store::TableDefinition::new(
            (&*table.hash_key, crate::store::KeyType::S),
            (&*table.range_key, crate::store::KeyType::S),
        );
        let (actions, affected) =
            checked_update(schema, E::VERSION, &unique, &actions, &definition)?;
        let mut update = actions.iter().cloned().fold(Update::new(), Update::action);
        let guard = rewrite_keys::<E>(&old, &actions, &affected, &unique, &mut update)?;
        // the record's own version, unless the caller asked for another
        let version = E::VERSION.and_then(|name| {
            let expected = expected.or_else(|| old.get(name).cloned())?;
            Some((name, expected))
        });
        let (update, expect) = existing_record_write::<E>(
            update,
            &table.hash_key,
            &guard,
            version.as_ref().map(|(_, expected)| expected),
            condition,
        );
        let origin = Origin {
            entity,
            unique,
            kind: OriginKind::Existing,
            call: "update",
            version,
        };
        self.push(
            TransactWrite::Update {
                key: key_of(schema, &old),
                update,
                expect,
            },
            origin,
        );
        Ok(self)
    }

    /// Checks that the stored `record` exists and `condition` holds for it, else the
    /// transaction fails with [`Error::ConditionFailed`]; writes nothing.
    pub fn check<E: Entity + Serialize>(
        mut self,
        record: &E,
        condition: Condition<E>,
    ) -> Result<Self> {
        let schema = schema_of::<E>()?;
        let entity = schema.model().token.to_string();
        let item = to_item(record)?;
        let condition = condition
            .into_filter()
            .map_err(|invalid| invalid_operand(&entity, invalid))?;
        let origin = Origin {
            entity,
            unique: unique_text(schema, &item),
            kind: OriginKind::Existing,
            call: "check",
            version: None,
        };
        self.push(
            TransactWrite::Check {
                key: key_of(schema, &item),
                expect: Expect::Matches(Filter::And(vec![
                    Filter::Exists(schema.table().hash_key.to_string()),
                    condition,
                ])),
            },
            origin,
        );
        Ok(self)
    }

    /// Deletes the record with unique value `id`, wherever it is: one delete per candidate
    /// shard, so no read is needed (deleting a missing item is no error).
    pub fn delete<E: Entity, I: Serialize + ?Sized>(mut self, id: &I) -> Result<Self> {
        let schema = schema_of::<E>()?;
        for key in candidates::<E, I>(schema, id)? {
            let origin = Origin {
                entity: schema.model().token.to_string(),
                unique: id_text(id),
                kind: OriginKind::Delete,
                call: "delete",
                version: None,
            };
            self.push(
                TransactWrite::Delete {
                    key: key_item(schema, &key),
                    expect: Expect::Any,
                },
                origin,
            );
        }
        Ok(self)
    }

    /// Deletes the stored `record` (as read earlier): it must still exist and, with a version
    /// field, still hold the record's version, else the transaction fails with
    /// [`Error::ConditionFailed`] or [`Error::VersionConflict`].
    pub fn delete_record<E: Entity + Serialize>(mut self, record: &E) -> Result<Self> {
        let schema = schema_of::<E>()?;
        let item = to_item(record)?;
        let hash_key = schema.table().hash_key.to_string();
        let version = E::VERSION.and_then(|name| Some((name, item.get(name)?.clone())));
        let mut conditions = vec![Filter::Exists(hash_key.clone())];
        if let Some((name, expected)) = &version {
            conditions.push(version_filter(name, &hash_key, expected, false));
        }
        let origin = Origin {
            entity: schema.model().token.to_string(),
            unique: unique_text(schema, &item),
            kind: OriginKind::Existing,
            call: "delete_record",
            version,
        };
        self.push(
            TransactWrite::Delete {
                key: key_of(schema, &item),
                expect: all_of(conditions).map_or(Expect::Any, Expect::Matches),
            },
            origin,
        );
        Ok(self)
    }

    /// The number of store operations so far (DynamoDB allows 100 in one transaction).
    pub fn len(&self) -> usize {
        self.writes.len()
    }

    /// Whether the transaction holds no operation.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    /// Carries out every operation or none. A failed operation is a typed error naming its
    /// entity and unique value: [`Error::AlreadyExists`] (create), [`Error::StoredElsewhere`]
    /// (put), [`Error::VersionConflict`], [`Error::ConditionFailed`] (with the stored item).
    pub async fn commit<S: Store>(self, store: &S) -> Result<()> {
        let span = crate::trace::op_span!("entity_manager.transaction", operations = self.len());
        crate::trace::operation(span, self.commit_inner(store)).await
    }

    async fn commit_inner<S: Store>(self, store: &S) -> Result<()> {
        let Self { writes, origins } = self;
        if writes.is_empty() {
            return Ok(());
        }
        if writes.len() > MAX_ACTIONS {
            return Err(Error::TransactionTooLarge {
                actions: writes.len(),
                limit: MAX_ACTIONS,
                parts: parts(
                    origins
                        .iter()
                        .map(|o| (o.call, o.entity.as_str(), o.unique.as_str())),
                ),
            });
        }
        let entities = || {
            let mut names: Vec<&str> = origins.iter().map(|o| &*o.entity).collect();
            names.dedup();
            names.join(", ")
        };
        let Err(e) = store.transact_write(writes).await else {
            return Ok(());
        };
        let failures = || {
            e.cancellation_reasons()
                .iter()
                .zip(&origins)
                .filter(|(reason, _)| reason.is_conditional_check_failed())
        };
        // a copy elsewhere explains a failed version check at a put's new key too
        let failed = failures()
            .find(|(_, origin)| origin.kind == OriginKind::Elsewhere)
            .or_else(|| failures().next());
        let Some((reason, origin)) = failed else {
            return Err(store_error(entities(), "TransactWriteItems", e));
        };
        let entity = origin.entity.clone();
        let unique = origin.unique.clone();
        let current = reason.item.clone();
        Err(match origin.kind {
            OriginKind::Create => Error::AlreadyExists { entity, unique },
            OriginKind::Elsewhere => Error::StoredElsewhere { entity, unique },
            OriginKind::Put | OriginKind::Existing | OriginKind::Delete => {
                let absent_ok = origin.kind == OriginKind::Put;
                match &origin.version {
                    Some((name, expected))
                        if version_conflict(name, expected, current.as_ref(), absent_ok) =>
                    {
                        conflict_error(entity, unique, name, expected, current)
                    }
                    _ => Error::ConditionFailed {
                        entity,
                        unique,
                        current: current.map(Box::new),
                    },
                }
            }
        })
    }
}

/// The most actions `DynamoDB` takes in one transaction (`TransactWriteItems` and
/// `TransactGetItems` alike).
const MAX_ACTIONS: usize = 100;

/// Where the actions of a transaction came from, from each action's call, entity and record
/// (in order: a call's actions are consecutive): per call and entity, how many records and
/// actions, and why a record takes several.
fn parts<'o>(actions: impl Iterator<Item = (&'static str, &'o str, &'o str)>) -> String {
    // (call, entity, records, actions), in order of first appearance
    let mut groups: Vec<(&str, &str, usize, usize)> = Vec::new();
    let mut last: Option<(&str, &str, &str)> = None;
    for action in actions {
        let (call, entity, _) = action;
        let new_record = last != Some(action);
        last = Some(action);
        match groups
            .iter_mut()
            .find(|(c, e, _, _)| *c == call && *e == entity)
        {
            Some(group) => {
                group.2 += usize::from(new_record);
                group.3 += 1;
            }
            None => groups.push((call, entity, 1, 1)),
        }
    }
    groups
        .iter()
        .map(|&(call, entity, records, actions)| {
            let why = match call {
                "create" => ": a create puts the record and checks that every other candidate shard of its unique value (one per shard bump) holds none",
                "put" => ": a put checks that every other candidate shard of its unique value (one per shard bump) holds no copy",
                "delete" => ": a delete by id deletes at every candidate shard of the value (one per shard bump)",
                "get" => ": a get reads every candidate shard of the value (one per shard bump)",
                _ => "",
            };
            if records == actions {
                format!("{records} `{call}` of `{entity}`: {actions} actions")
            } else {
                format!(
                    "{records} `{call}` of `{entity}`: {actions} actions, about {} each{why}",
                    actions.div_ceil(records)
                )
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A consistent read of records of one or more entities by id, in one `TransactGetItems`: every
/// record as of the same instant.
///
/// Each [`get`](Self::get) returns a typed handle; after [`commit`](Self::commit), the
/// [`ReadResults`] give each record back by its handle.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use entity_manager_core::store::{MemoryStore, TableDefinition};
/// use entity_manager_core::{EntityExt, ReadTransaction, Table};
/// # use entity_manager_core::{Entity, transcode};
/// # use entity_manager_core::model::{EntityModel, Property, TableModel};
/// # struct Users;
/// # impl Table for Users {
/// #     const MODEL: TableModel = TableModel::DEFAULT;
/// #     fn model() -> &'static TableModel { static M: TableModel = Users::MODEL; &M }
/// #     fn entities() -> Vec<&'static EntityModel> { vec![User::model()] }
/// # }
/// # #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
/// # #[serde(rename_all = "camelCase")]
/// # struct User { user_id: String, created: u64 }
/// # impl Entity for User {
/// #     type Table = Users;
/// #     const MODEL: EntityModel = {
/// #         const PROPERTIES: &[Property] = &[Property::new("userId", transcode::STRING), Property::new("created", transcode::TIMESTAMP)];
/// #         EntityModel::new("user", "userId", "created").with_properties(PROPERTIES)
/// #     };
/// #     fn model() -> &'static EntityModel { static M: EntityModel = User::MODEL; &M }
/// # }
/// let store = MemoryStore::new(TableDefinition::from_schema(Users::schema()?)?);
/// User { user_id: "u1".into(), created: 1 }.create(&store).await?;
///
/// let mut read = ReadTransaction::new();
/// let ann = read.get::<User, _>("u1")?;
/// let bob = read.get::<User, _>("u2")?;
/// let results = read.commit(&store).await?;
/// assert_eq!(results.get(ann)?, Some(User { user_id: "u1".into(), created: 1 }));
/// assert_eq!(results.get(bob)?, None);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Default)]
#[must_use = "a read transaction reads nothing until it is committed"]
pub struct ReadTransaction {
    keys: Vec<Item>,
    /// Per `get`: the range of `keys` holding its candidate keys.
    slots: Vec<std::ops::Range<usize>>,
    entities: Vec<String>,
}

/// A record asked of a [`ReadTransaction`]: give it to [`ReadResults::get`].
#[derive(Debug)]
pub struct ReadHandle<E> {
    slot: usize,
    entity: std::marker::PhantomData<fn() -> E>,
}

impl<E> Clone for ReadHandle<E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for ReadHandle<E> {}

impl ReadTransaction {
    /// An empty read transaction.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for the record of entity `E` with unique value `id` (every candidate shard is
    /// read; `TransactGetItems` allows 100 keys in all).
    pub fn get<E: Entity, I: Serialize + ?Sized>(&mut self, id: &I) -> Result<ReadHandle<E>> {
        let schema = schema_of::<E>()?;
        let start = self.keys.len();
        for key in candidates::<E, I>(schema, id)? {
            self.keys.push(key_item(schema, &key));
        }
        self.slots.push(start..self.keys.len());
        self.entities.push(schema.model().token.to_string());
        Ok(ReadHandle {
            slot: self.slots.len() - 1,
            entity: std::marker::PhantomData,
        })
    }

    /// Reads every record asked for, as of one instant.
    pub async fn commit<S: Store>(self, store: &S) -> Result<ReadResults> {
        let span =
            crate::trace::op_span!("entity_manager.read_transaction", keys = self.keys.len());
        crate::trace::operation(span, self.commit_inner(store)).await
    }

    async fn commit_inner<S: Store>(self, store: &S) -> Result<ReadResults> {
        let Self {
            keys,
            slots,
            entities,
        } = self;
        if keys.len() > MAX_ACTIONS {
            let calls = slots.iter().zip(&entities).flat_map(|(slot, entity)| {
                // each get's keys are one record's
                let record = slot.start.to_string();
                slot.clone()
                    .map(move |_| ("get", entity.as_str(), record.clone()))
            });
            let calls: Vec<(&'static str, &str, String)> = calls.collect();
            return Err(Error::TransactionTooLarge {
                actions: keys.len(),
                limit: MAX_ACTIONS,
                parts: parts(calls.iter().map(|(c, e, r)| (*c, *e, r.as_str()))),
            });
        }
        let items = if keys.is_empty() {
            Vec::new()
        } else {
            store.transact_get(keys).await.map_err(|e| {
                let mut names = entities.clone();
                names.dedup();
                store_error(names.join(", "), "TransactGetItems", e)
            })?
        };
        Ok(ReadResults { items, slots })
    }
}

/// What a [`ReadTransaction`] read.
#[derive(Debug)]
pub struct ReadResults {
    items: Vec<Option<Item>>,
    slots: Vec<std::ops::Range<usize>>,
}

impl ReadResults {
    /// The record a handle asked for, or `None` if there is none.
    ///
    /// # Errors
    ///
    /// When the stored item is not a record of `E` ([`EntityExt::from_item`](crate::EntityExt::from_item)).
    pub fn get<E: Entity + DeserializeOwned>(&self, handle: ReadHandle<E>) -> Result<Option<E>> {
        let schema = schema_of::<E>()?;
        let found: Vec<Item> = self
            .slots
            .get(handle.slot)
            .and_then(|range| self.items.get(range.clone()))
            .unwrap_or_default()
            .iter()
            .flatten()
            .cloned()
            .collect();
        pick_versioned(schema, E::VERSION, found)
            .map(|item| from_item::<E>(&item))
            .transpose()
    }
}
