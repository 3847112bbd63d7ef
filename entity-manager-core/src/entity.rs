//! The traits `#[derive(Table)]` and `#[derive(Entity)]` implement, and what every entity gets
//! from them.
//!
//! The derives emit data, not logic: a `const` model plus a thin impl. Everything else is a
//! provided method of [`EntityExt`](crate::EntityExt), which reads the model through [`EntitySchema`].

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_dynamo::{AttributeValue, Item};

use crate::error::{Error, Result};
use crate::keys::PrimaryKey;
use crate::model::{EntityModel, TableModel};
use crate::schema::{EntitySchema, Schema};

/// A DynamoDB table: its settings and the entities stored in it.
///
/// Implemented by `#[derive(Table)]` on a unit struct, or by hand:
///
/// ```
/// use entity_manager_core::Table;
/// use entity_manager_core::model::{EntityModel, TableModel};
///
/// struct Users;
///
/// impl Table for Users {
///     const MODEL: TableModel = TableModel::DEFAULT;
///     fn model() -> &'static TableModel {
///         static MODEL: TableModel = Users::MODEL;
///         &MODEL
///     }
///     fn entities() -> Vec<&'static EntityModel> {
///         Vec::new()
///     }
/// }
///
/// assert_eq!(Users::model().hash_key, "hashKey");
/// assert!(Users::entities().is_empty());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a table",
    label = "not a `#[derive(Table)]` type",
    note = "add `#[derive(Table)]` and `#[table(entities(…))]` to `{Self}`, or name the table type the entity is stored in"
)]
pub trait Table: 'static {
    /// The table settings, as a constant (for compile-time checks).
    const MODEL: TableModel;

    /// The models of the entities `#[derive(Table)]` lists, as a constant: what
    /// `#[derive(Entity)]` checks its membership against at compile time. Data, so that the
    /// table names its entities only inside `const` bodies, where a borrowed entity's
    /// lifetime needs no spelling (a derive error reports it once, at the entity).
    #[doc(hidden)]
    const MEMBERS: &'static [&'static EntityModel] = &[];

    /// The table settings.
    fn model() -> &'static TableModel;

    /// The models of the entities stored in this table.
    fn entities() -> Vec<&'static EntityModel>;

    /// The validated schema of the table and all its entities: built and validated once per
    /// table type, then shared by every path (keys, queries, stores).
    ///
    /// A configuration error (possible only for a hand-written impl: the derive checks the
    /// same rules at compile time) is returned on every call.
    fn schema() -> Result<&'static Schema>
    where
        Self: Sized,
    {
        crate::schema::registry::get_or_try_init::<Self, Schema, Error>(|| {
            Ok(Schema::new(
                Self::model().clone(),
                Self::entities().into_iter().cloned().collect(),
            )?)
        })
    }
}

/// A record type stored in a [`Table`].
///
/// Implemented by `#[derive(Entity)]`; see the derive's documentation for the attributes and
/// for the equivalent hand-written impl.
pub trait Entity: Sized + 'static {
    /// The table the entity is stored in.
    type Table: Table;

    /// The entity's model, as a constant (for compile-time checks).
    const MODEL: EntityModel;

    /// The stored name of the version field (`#[entity(version = …)]`), if the entity has one:
    /// an integer field that every write checks and increments (optimistic locking).
    const VERSION: Option<&'static str> = None;

    /// The largest value the version field's type holds, in decimal (`"255"` for a `u8`): a
    /// write that would increment the version past it is refused with
    /// [`Error::InvalidUpdate`], so the record stays readable.
    const VERSION_MAX: Option<&'static str> = None;

    /// The entity's model.
    fn model() -> &'static EntityModel;
}

// ---------------------------------------------------------------------------------------------
// what every entity gets, for the operations above this module; `EntityExt` (in `entity_ext`)
// offers each of them as a method

/// The entity in its table's validated schema; see [`EntityExt::schema`](crate::EntityExt::schema).
pub(crate) fn schema_of<E: Entity>() -> Result<EntitySchema<'static>> {
    crate::schema::registry::get_or_try_init::<E, EntitySchema<'static>, Error>(|| {
        <E::Table as Table>::schema()?.entity(&E::model().token)
    })
    .copied()
}

/// The record as a keyed item; see [`EntityExt::to_item`](crate::EntityExt::to_item).
pub(crate) fn to_item<E: Entity + Serialize>(record: &E) -> Result<Item> {
    // straight into an item with room for every key, without `NULL` attributes
    let keys = 2 + E::model().generated.len();
    let mut item = crate::keys::record_item(record, keys).map_err(|source| Error::Serde {
        entity: E::model().token.to_string(),
        source,
    })?;
    debug_assert!(!item.values().any(|v| matches!(v, AttributeValue::Null(_))));
    let schema = schema_of::<E>()?;
    // the same as `refresh_keys(&item)`, without copying the item; checks the key limits
    schema.refresh_keys_mut(&mut item)?;
    Ok(item)
}

/// The record of an item; see [`EntityExt::from_item`](crate::EntityExt::from_item).
pub(crate) fn from_item<E: Entity + DeserializeOwned>(item: &Item) -> Result<E> {
    from_item_as::<E, E>(item)
}

/// An item of entity `E` read as a `P` (the record itself, or a projected view of it): the
/// entity token checked, the keys and generated properties taken off.
pub(crate) fn from_item_as<E: Entity, P: DeserializeOwned>(item: &Item) -> Result<P> {
    let schema = schema_of::<E>()?;
    schema.check_entity_token(item)?;
    let table = schema.table();
    decode::<E, P>(schema.remove_keys(item)).map_err(|failed| {
        failed.at_keys(
            item.get(&*table.hash_key).cloned(),
            item.get(&*table.range_key).cloned(),
        )
    })
}

/// [`from_item`] of an item the caller gives up: its keys are taken off in place.
pub(crate) fn from_owned_item<E: Entity + DeserializeOwned>(item: Item) -> Result<E> {
    from_owned_item_as::<E, E>(item)
}

/// [`from_item_as`] of an item the caller gives up: its keys are taken off in place.
pub(crate) fn from_owned_item_as<E: Entity, P: DeserializeOwned>(mut item: Item) -> Result<P> {
    let schema = schema_of::<E>()?;
    // the table keys are kept to name the item if it cannot be read (and its hash key is
    // checked once taken off: one lookup, not two)
    let (hash, range) = schema.strip_keys(&mut item);
    schema.check_hash_key(hash.as_ref())?;
    decode::<E, P>(item).map_err(|failed| failed.at_keys(hash, range))
}

/// The record of an item whose keys are off; an error is an [`Error::Decode`] without keys
/// (the caller names them: [`Error::at_keys`]).
fn decode<E: Entity, P: DeserializeOwned>(mut item: Item) -> Result<P> {
    // the map itself, moved: `serde_dynamo::from_item` would rebuild it (rehashing every
    // attribute name) to read it
    let map = std::mem::take(item.inner_mut());
    serde_dynamo::from_attribute_value(AttributeValue::M(map)).map_err(|source| Error::Decode {
        entity: E::model().token.to_string(),
        hash_key: None,
        range_key: None,
        source,
    })
}

/// The record's primary key; see [`EntityExt::primary_key`](crate::EntityExt::primary_key).
pub(crate) fn primary_key<E: Entity + Serialize>(record: &E) -> Result<PrimaryKey> {
    let item: Item = serde_dynamo::to_item(record).map_err(|source| Error::Serde {
        entity: E::model().token.to_string(),
        source,
    })?;
    let schema = schema_of::<E>()?;
    Ok(PrimaryKey {
        hash_key: schema.hash_key(&item)?,
        range_key: schema.range_key(&item)?,
    })
}

/// The names under which `T` stores its fields, as its `Deserialize` implementation declares
/// them (serde's derive passes a struct's field names, renames applied, to
/// `deserialize_struct`); empty when `T` does not deserialize as a struct of named fields (a
/// map, or a struct with a `#[serde(flatten)]` field).
///
/// Bulk writes of an entity type without a version guard a record by its attributes: every one
/// read still has the value read, and every one it may have and did not is still absent. These
/// are the names "it may have", beyond the transcoded properties the model lists.
pub(crate) fn stored_field_names<T: DeserializeOwned>() -> &'static [&'static str] {
    use serde::de::{self, Visitor};

    /// A deserializer that records the field names it is asked for and gives up.
    struct Names(&'static [&'static str]);

    impl<'de> de::Deserializer<'de> for &mut Names {
        type Error = de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = fields;
            Err(de::Error::custom("names taken"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }

    let mut names = Names(&[]);
    // the error is the point: the names were taken before it
    let _ = T::deserialize(&mut names);
    names.0
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    use super::stored_field_names;

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)] // only its field names are read
    struct Named {
        user_id: String,
        #[serde(rename = "tag")]
        label: Option<String>,
        #[serde(skip)]
        cache: u8,
    }

    #[derive(Deserialize)]
    #[allow(dead_code)] // only its field names are read
    struct Flattened {
        id: String,
        #[serde(flatten)]
        rest: BTreeMap<String, String>,
    }

    #[test]
    fn the_stored_names_of_a_struct_are_its_serde_names() {
        assert_eq!(stored_field_names::<Named>(), ["userId", "tag"]);
        // a flattened struct reads as a map: its names are not known
        assert!(stored_field_names::<Flattened>().is_empty());
        assert!(stored_field_names::<BTreeMap<String, String>>().is_empty());
        assert!(stored_field_names::<u64>().is_empty());
    }
}
