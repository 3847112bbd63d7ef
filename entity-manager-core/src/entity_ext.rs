//! [`EntityExt`]: what every [`Entity`] can do, as methods: items and keys, typed reads and
//! writes, queries and scans.
//!
//! The top of the crate's layers: it calls into `ops`, `query` and `scan`, which sit on
//! `entity` (the traits the derives implement) and never on this module.

use std::future::Future;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_dynamo::Item;

use crate::entity::Entity;
use crate::error::Result;
use crate::field::{Changes, Condition};
use crate::keys::PrimaryKey;
use crate::query::{QueryOutput, QueryStart};
use crate::schema::EntitySchema;
use crate::store::Store;
use crate::trace::{self, op_span};

/// What every [`Entity`] can do: conversion to and from DynamoDB items with keys, keys, and
/// queries.
pub trait EntityExt: Entity {
    /// A cross-shard query of this entity on `store`: name the index with
    /// [`QueryStart::index`] (`User::query(&store)?.index(UserIndex::Created)`), whose kind
    /// decides the builder ([`TypedQuery`](crate::query::TypedQuery) for a classic index,
    /// [`TypedMultiQuery`](crate::query::TypedMultiQuery) for a multi-attribute one), or read
    /// the table with [`QueryStart::table`]. Fails only when the table's configuration is
    /// invalid (see [`EntityExt::schema`]).
    fn query<S: Store>(store: &S) -> Result<QueryStart<'_, S, Self>>
    where
        Self: QueryOutput,
    {
        QueryStart::new(store)
    }

    /// A parallel scan of this entity's records on `store`; see
    /// [`RecordScan`](crate::scan::RecordScan) (segments, throttle, page size, and the
    /// resumable item scan underneath). Fails only when the table's configuration is invalid.
    fn scan<S: Store>(store: &S) -> Result<crate::scan::RecordScan<'_, S, Self>> {
        crate::scan::RecordScan::new(store)
    }

    /// The entity in its table's validated schema ([`Table::schema`](crate::Table::schema)), for every key
    /// operation. Fails when the table's configuration is invalid (only possible for a
    /// hand-written impl) or does not list this entity in [`Table::entities`](crate::Table::entities).
    fn schema() -> Result<EntitySchema<'static>> {
        crate::entity::schema_of::<Self>()
    }

    /// The record as a DynamoDB item, with its hash key, range key and every generated property
    /// the entity declares.
    ///
    /// `None` fields are left out, never written as `NULL` (DynamoDB rejects a `NULL` index key,
    /// and a record leaves a sparse index by lacking the attribute). Every key value is checked
    /// against DynamoDB's limits ([`limits`](crate::limits)): a key too long is
    /// [`Error::KeyTooLong`](crate::Error::KeyTooLong) here, before any store call.
    fn to_item(&self) -> Result<Item>
    where
        Self: Serialize,
    {
        crate::entity::to_item(self)
    }

    /// The record of a DynamoDB item; its keys and generated properties are dropped first.
    ///
    /// An item whose hash key belongs to another entity (it does not start with this entity's
    /// token and the shard key delimiter) is [`Error::OtherEntity`](crate::Error::OtherEntity).
    fn from_item(item: &Item) -> Result<Self>
    where
        Self: DeserializeOwned,
    {
        crate::entity::from_item(item)
    }

    /// Reads the record whose unique property is `id`, or `None`.
    ///
    /// Without its timestamp the record may sit under any shard bump, so every candidate key
    /// (one per bump) is read in one round trip: `GetItem` for one candidate, `BatchGetItem` for
    /// more.
    ///
    /// A record being moved between candidate keys (by [`move_record`](Self::move_record) or a
    /// migration) is never reported absent: a batch read is not isolated from the move's
    /// transaction and can miss both sides, so a record found under no candidate is read again
    /// with `TransactGetItems`, which sees the move whole or not at all. That costs one more
    /// round trip and twice the read units of the candidate keys, only when nothing was found.
    /// With a version field, a read that sees both sides of a move returns the newer.
    fn get<'s, S: Store, I: Serialize + Sync + ?Sized>(
        store: &'s S,
        id: &'s I,
    ) -> impl Future<Output = Result<Option<Self>>> + Send + 's
    where
        Self: DeserializeOwned,
    {
        trace::operation(
            op_span!("entity_manager.get", entity = %Self::model().token),
            crate::ops::get::<Self, S, I>(store, id),
        )
    }

    /// Reads the records with these unique values, in one batch read of every candidate key;
    /// the result is aligned with `ids` (`None` where there is no record; proved absent as
    /// [`get`](Self::get) does).
    fn get_many<'s, S: Store, I: Serialize + Sync>(
        store: &'s S,
        ids: &'s [I],
    ) -> impl Future<Output = Result<Vec<Option<Self>>>> + Send + 's
    where
        Self: DeserializeOwned + Send,
    {
        trace::operation(
            op_span!("entity_manager.get_many", entity = %Self::model().token),
            crate::ops::get_many::<Self, S, I>(store, ids),
        )
    }

    /// Creates the record, refusing it with [`Error::AlreadyExists`](crate::Error::AlreadyExists) (and writing nothing) if a
    /// record with its unique value exists under *any* candidate key: the put is conditioned
    /// on its own key being free and, in the same transaction, every other candidate key is
    /// checked free too.
    fn create<'s, S: Store>(&'s self, store: &'s S) -> impl Future<Output = Result<()>> + Send + 's
    where
        Self: Serialize + Sync,
    {
        trace::operation(
            op_span!("entity_manager.create", entity = %Self::model().token),
            crate::ops::create(store, self),
        )
    }

    /// Puts the record: creates it, or replaces the record with the same primary key.
    ///
    /// A record with the same unique value stored under another shard (its timestamp differs)
    /// is never orphaned beside the new one: the put is refused with
    /// [`Error::StoredElsewhere`](crate::Error::StoredElsewhere) (when the entity has several shard bumps, the put and a check
    /// of the other candidate keys go in one transaction). To change a timestamp, use
    /// [`move_record`](Self::move_record).
    ///
    /// With a version field (`#[entity(version = …)]`), the stored version must be the
    /// record's (version 0 may also create), else [`Error::VersionConflict`](crate::Error::VersionConflict); the version
    /// stored is the record's plus one.
    fn put<'s, S: Store>(&'s self, store: &'s S) -> impl Future<Output = Result<()>> + Send + 's
    where
        Self: Serialize + Sync,
    {
        trace::operation(
            op_span!("entity_manager.put", entity = %Self::model().token),
            crate::ops::put(store, self, None),
        )
    }

    /// Puts the record if `condition` holds for the stored one (a missing record has no
    /// fields), else [`Error::ConditionFailed`](crate::Error::ConditionFailed) carrying the stored item; otherwise as
    /// [`put`](Self::put).
    fn put_if<'s, S: Store>(
        &'s self,
        store: &'s S,
        condition: Condition<Self>,
    ) -> impl Future<Output = Result<()>> + Send + 's
    where
        Self: Serialize + Sync,
    {
        trace::operation(
            op_span!("entity_manager.put", entity = %Self::model().token),
            crate::ops::put(store, self, Some(condition)),
        )
    }

    /// Applies typed [`Changes`] to the record whose unique property is `id` and returns the
    /// updated record (`None` if there is none), in one `UpdateItem`.
    ///
    /// Every generated property built from a changed field is rewritten in the same write, or
    /// removed when a component becomes absent (the record leaves that sparse index), so the
    /// stored item equals [`to_item`](Self::to_item) of the returned record.
    ///
    /// Changes that touch no key component are atomic and need no read when the entity has
    /// one shard bump (`add` from many writers never loses an increment). Otherwise the
    /// record is read first (one round trip over every candidate shard) and the write is
    /// conditioned on the components of the rewritten keys being as read; if one changed
    /// meanwhile, it is read again (up to 8 times, then [`Error::Conflict`](crate::Error::Conflict)). A failed
    /// [`when`](Changes::when) is [`Error::ConditionFailed`](crate::Error::ConditionFailed); a failed
    /// [`if_version`](Changes::if_version) is [`Error::VersionConflict`](crate::Error::VersionConflict). The version field,
    /// if any, is incremented by every update.
    ///
    /// Wide changes never fail at the store. `DynamoDB` limits every expression to 4 KB and
    /// 300 operators ([`limits`](crate::limits); both stores enforce them alike), which an
    /// update of a few hundred fields exceeds. Such an update is applied to the record as read
    /// and the whole record is put instead, conditioned on the stored version being the one
    /// read (and on `when` and `if_version`), so it stays a safe read-modify-write. That needs
    /// a version field: without one the condition would compare every attribute, which is over
    /// the limits too, and the update is refused before anything is written with
    /// [`Error::Store`](crate::Error::Store), whose source's
    /// [`expression_too_large`](crate::store::StoreError::expression_too_large) names the
    /// expression; give the entity a version field (`#[entity(version = field)]`).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use entity_manager_core::{Entity, EntityExt, Table, transcode};
    /// # use entity_manager_core::model::{EntityModel, Property, TableModel};
    /// # use entity_manager_core::field::{Changes, Field, Optional, Required};
    /// # use entity_manager_core::store::{MemoryStore, TableDefinition};
    /// # struct Users;
    /// # impl Table for Users {
    /// #     const MODEL: TableModel = TableModel::DEFAULT;
    /// #     fn model() -> &'static TableModel { static M: TableModel = Users::MODEL; &M }
    /// #     fn entities() -> Vec<&'static EntityModel> { vec![User::model()] }
    /// # }
    /// # #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    /// # #[serde(rename_all = "camelCase")]
    /// # struct User { user_id: String, created: u64, logins: u32, #[serde(skip_serializing_if = "Option::is_none", default)] phone: Option<String> }
    /// # impl Entity for User {
    /// #     type Table = Users;
    /// #     const MODEL: EntityModel = {
    /// #         const PROPERTIES: &[Property] = &[Property::new("userId", transcode::STRING), Property::new("created", transcode::TIMESTAMP)];
    /// #         EntityModel::new("user", "userId", "created").with_properties(PROPERTIES)
    /// #     };
    /// #     fn model() -> &'static EntityModel { static M: EntityModel = User::MODEL; &M }
    /// # }
    /// # struct UserFields { logins: Field<User, u32, Required>, phone: Field<User, String, Optional> }
    /// # impl User { const FIELDS: UserFields = UserFields { logins: Field::new("logins"), phone: Field::new("phone") }; }
    /// let store = MemoryStore::new(TableDefinition::from_schema(Users::schema()?)?);
    /// User { user_id: "u1".into(), created: 1, logins: 0, phone: Some("555".into()) }.create(&store).await?;
    ///
    /// let f = User::FIELDS; // emitted by #[derive(Entity)]
    /// let user = User::update(&store, "u1", Changes::new().add(f.logins, 1).remove(f.phone)).await?;
    /// assert_eq!(user, Some(User { user_id: "u1".into(), created: 1, logins: 1, phone: None }));
    ///
    /// // a condition on the stored record
    /// let refused = User::update(&store, "u1", Changes::new().add(f.logins, 1).when(f.logins.ge(5))).await;
    /// assert!(matches!(refused, Err(entity_manager_core::Error::ConditionFailed { .. })));
    /// # Ok(())
    /// # }
    /// ```
    fn update<'s, S: Store, I: Serialize + Sync + ?Sized>(
        store: &'s S,
        id: &'s I,
        changes: Changes<Self>,
    ) -> impl Future<Output = Result<Option<Self>>> + Send + 's
    where
        Self: Serialize + DeserializeOwned + Send,
    {
        trace::operation(
            op_span!("entity_manager.update", entity = %Self::model().token),
            crate::ops::update::<Self, S, I>(store, id, changes),
        )
    }

    /// Updates the record whose unique property is `id` by a closure over the typed record,
    /// and returns the updated record (`None` if there is none).
    ///
    /// The record is read (every candidate key in one round trip), changed by `change`, and
    /// written back with one `UpdateItem` that sets what changed and removes what went: every
    /// generated property and index key whose components changed is rewritten in the same
    /// write, and one whose component became `None` is removed, so the record leaves that
    /// sparse index. The stored item then equals [`to_item`](Self::to_item) of the returned
    /// record.
    ///
    /// The write is conditioned on the record being as it was read, so a concurrent change is
    /// never overwritten: the record is read again and `change` runs again (it may run more
    /// than once), up to 8 times, then [`Error::Conflict`](crate::Error::Conflict). A change of the unique or the
    /// timestamp property (they decide the primary key) is [`Error::PrimaryKeyChange`](crate::Error::PrimaryKeyChange); use
    /// [`move_record`](Self::move_record).
    ///
    /// With a version field, "as it was read" is the version read (every typed write
    /// increments it), one comparison however wide the record; without one, every attribute
    /// is compared. A change too wide for one `UpdateItem` (over `DynamoDB`'s 4 KB and
    /// 300-operator expression limits, see [`update`](Self::update)) puts the whole record
    /// under the same condition. A condition itself over the limits (an unversioned record of
    /// about 150 attributes or more: two operators per attribute) is refused before any write with
    /// [`Error::Store`](crate::Error::Store) naming the expression: give the entity a version
    /// field.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use entity_manager_core::{Entity, EntityExt, Table, transcode};
    /// # use entity_manager_core::model::{EntityModel, Property, TableModel};
    /// # use entity_manager_core::store::{MemoryStore, TableDefinition};
    /// # struct Users;
    /// # impl Table for Users {
    /// #     const MODEL: TableModel = TableModel::DEFAULT;
    /// #     fn model() -> &'static TableModel { static M: TableModel = Users::MODEL; &M }
    /// #     fn entities() -> Vec<&'static EntityModel> { vec![User::model()] }
    /// # }
    /// # #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    /// # #[serde(rename_all = "camelCase")]
    /// # struct User { user_id: String, created: u64, logins: u32 }
    /// # impl Entity for User {
    /// #     type Table = Users;
    /// #     const MODEL: EntityModel = {
    /// #         const PROPERTIES: &[Property] = &[Property::new("userId", transcode::STRING), Property::new("created", transcode::TIMESTAMP)];
    /// #         EntityModel::new("user", "userId", "created").with_properties(PROPERTIES)
    /// #     };
    /// #     fn model() -> &'static EntityModel { static M: EntityModel = User::MODEL; &M }
    /// # }
    /// let store = MemoryStore::new(TableDefinition::from_schema(Users::schema()?)?);
    /// User { user_id: "u1".into(), created: 1, logins: 0 }.create(&store).await?;
    /// let user = User::modify(&store, "u1", |u| u.logins += 1).await?;
    /// assert_eq!(user.map(|u| u.logins), Some(1));
    /// # Ok(())
    /// # }
    /// ```
    fn modify<'s, S: Store, I: Serialize + Sync + ?Sized, F: FnMut(&mut Self) + Send + 's>(
        store: &'s S,
        id: &'s I,
        change: F,
    ) -> impl Future<Output = Result<Option<Self>>> + Send + 's
    where
        Self: Serialize + DeserializeOwned + Send + Sync,
    {
        trace::operation(
            op_span!("entity_manager.modify", entity = %Self::model().token),
            crate::ops::modify::<Self, S, I, F>(store, id, change),
        )
    }

    /// Moves the record whose unique property is `from` to the primary key of `to` (a new
    /// unique value, or a new timestamp and so maybe another shard), in one transaction: the
    /// old item is deleted (it must exist, else [`Error::NotFound`](crate::Error::NotFound)) and `to` is created
    /// (refused with [`Error::AlreadyExists`](crate::Error::AlreadyExists) if its unique value exists in any shard). With a
    /// version field, the stored record must hold `to`'s version (else
    /// [`Error::VersionConflict`](crate::Error::VersionConflict)), and `to` is stored with its version plus one.
    fn move_record<'s, S: Store, I: Serialize + Sync + ?Sized>(
        store: &'s S,
        from: &'s I,
        to: &'s Self,
    ) -> impl Future<Output = Result<()>> + Send + 's
    where
        Self: Serialize + Sync,
    {
        trace::operation(
            op_span!("entity_manager.move_record", entity = %Self::model().token),
            crate::ops::move_record::<Self, S, I>(store, from, to),
        )
    }

    /// Deletes the record whose unique property is `id` and returns it (`None` if there was
    /// none): it is read from its candidate keys in one round trip, then deleted under the
    /// condition that it still exists. A record moved to another candidate key between the
    /// read and the delete (by a migration or [`move_record`](Self::move_record)) is read
    /// again where it went and deleted there, up to 8 times, then
    /// [`Error::Conflict`](crate::Error::Conflict): a record that exists throughout is never
    /// reported as none.
    fn delete<'s, S: Store, I: Serialize + Sync + ?Sized>(
        store: &'s S,
        id: &'s I,
    ) -> impl Future<Output = Result<Option<Self>>> + Send + 's
    where
        Self: DeserializeOwned + Send,
    {
        trace::operation(
            op_span!("entity_manager.delete", entity = %Self::model().token),
            crate::ops::delete::<Self, S, I>(store, id, None),
        )
    }

    /// Deletes the record whose unique property is `id` if `condition` holds for it, and
    /// returns it (`None` if there was none); otherwise [`Error::ConditionFailed`](crate::Error::ConditionFailed) carrying the
    /// stored item, and nothing is deleted.
    fn delete_if<'s, S: Store, I: Serialize + Sync + ?Sized>(
        store: &'s S,
        id: &'s I,
        condition: Condition<Self>,
    ) -> impl Future<Output = Result<Option<Self>>> + Send + 's
    where
        Self: DeserializeOwned + Send,
    {
        trace::operation(
            op_span!("entity_manager.delete", entity = %Self::model().token),
            crate::ops::delete::<Self, S, I>(store, id, Some(condition)),
        )
    }

    /// Puts many records with batch writes (25 a request, unprocessed ones retried). Not atomic:
    /// on failure the error lists what was not written.
    ///
    /// A batch write takes no condition: unlike [`put`](Self::put), it neither checks a version
    /// field nor refuses a record stored under another shard. Use it to load records (or
    /// rewrite them as they are), and [`put`](Self::put) or a [`Transaction`](crate::Transaction)
    /// to replace records others may write.
    fn put_many<'s, S: Store>(
        store: &'s S,
        records: &'s [Self],
    ) -> impl Future<Output = Result<()>> + Send + 's
    where
        Self: Serialize + Sync,
    {
        trace::operation(
            op_span!("entity_manager.put_many", entity = %Self::model().token),
            crate::ops::put_many(store, records),
        )
    }

    /// Deletes the records with these unique values with batch deletes of every candidate key
    /// (no read needed). Not atomic: on failure the error lists what was not deleted.
    fn delete_many<'s, S: Store, I: Serialize + Sync>(
        store: &'s S,
        ids: &'s [I],
    ) -> impl Future<Output = Result<()>> + Send + 's {
        trace::operation(
            op_span!("entity_manager.delete_many", entity = %Self::model().token),
            crate::ops::delete_many::<Self, S, I>(store, ids),
        )
    }

    /// The record's primary key.
    fn primary_key(&self) -> Result<PrimaryKey>
    where
        Self: Serialize,
    {
        crate::entity::primary_key(self)
    }
}

impl<E: Entity> EntityExt for E {}
