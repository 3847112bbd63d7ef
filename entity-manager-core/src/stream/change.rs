//! Decoding: a [`StreamRecord`] routed to its entity, checked against the table's key
//! contract, and its images read as the entity's Rust type.

use serde::de::DeserializeOwned;
use serde_dynamo::{AttributeValue, Item};

use super::error::{ChangeError, Image};
use super::record::{ChangeKind, StreamRecord, carried};
use crate::entity::Entity;
use crate::error::Error;
use crate::field::Field;
use crate::keys::PrimaryKey;
use crate::schema::{EntitySchema, Schema};
use crate::transcode::DisplayAttr;

/// What a stream record's images decode into: one entity, or an enum over several entities of
/// one table, so that one `match` handles every entity of the table.
///
/// Every `#[derive(Entity)]` type is `Routed` (a record of another entity is then
/// [`ChangeError::UnknownEntity`]); `#[derive(Collection)]` makes an enum with one variant per
/// entity `Routed`, in variant order. A hand-written impl lists the entities and builds the
/// record of a keyed image of one of them.
pub trait Routed: Sized {
    /// The entities a record may belong to, in order.
    fn entities() -> crate::Result<Vec<EntitySchema<'static>>>;

    /// The record of a keyed image of entity number `member` (a position in
    /// [`entities`](Self::entities)); keys and generated properties are to be dropped, as
    /// `EntityExt::from_item` drops them.
    fn from_image(member: usize, image: &Item) -> crate::Result<Self>;
}

impl<E: Entity + DeserializeOwned> Routed for E {
    fn entities() -> crate::Result<Vec<EntitySchema<'static>>> {
        Ok(vec![crate::entity::schema_of::<E>()?])
    }

    fn from_image(_member: usize, image: &Item) -> crate::Result<Self> {
        crate::entity::from_item::<E>(image)
    }
}

/// One decoded change: the event kind, the entity, the primary key, and the images the stream
/// view carries as `T` (an entity, an enum of the table's entities, or an [`Item`] without its
/// keys for [`Change::decode_items`]).
///
/// For a `MODIFY` with both images it also tells what changed: the stored fields
/// ([`changed_fields`](Self::changed_fields), [`changed`](Self::changed)) and the generated
/// keys ([`changed_keys`](Self::changed_keys)). A `MODIFY` never moves a record: `DynamoDB`
/// keeps the primary key of an item it modifies, so a record moved to another shard (a new
/// timestamp under another shard bump, `EntityExt::move_record`) arrives as a `REMOVE` of the
/// old key and an `INSERT` of the new one, with the same [`unique`](Self::unique) value and
/// another [`shard`](Self::shard).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Change<T> {
    /// Insert, modify or remove.
    pub kind: ChangeKind,
    /// The entity token.
    pub entity: String,
    /// The primary key of the changed item.
    pub key: PrimaryKey,
    /// The record before the change, when the stream view carries it (`OLD_IMAGE`,
    /// `NEW_AND_OLD_IMAGES`) and there was one (not for an insert).
    pub old: Option<T>,
    /// The record after the change, when the stream view carries it (`NEW_IMAGE`,
    /// `NEW_AND_OLD_IMAGES`) and there is one (not for a remove).
    pub new: Option<T>,
    /// The record's sequence number in its stream shard, when the record says.
    pub sequence_number: Option<String>,
    /// The event id, when the record says.
    pub event_id: Option<String>,
    /// Whether `DynamoDB`'s Time to Live deleted the item, rather than a write.
    pub expired: bool,
    unique: AttributeValue,
    shard: String,
    changed_fields: Vec<String>,
    changed_keys: Vec<String>,
}

/// A record routed and checked: the entity, its schema position, the key, and the keyed
/// images present.
struct Checked<'s> {
    member: usize,
    schema: EntitySchema<'s>,
    key: PrimaryKey,
    unique: AttributeValue,
    shard: String,
    old: Option<&'s Item>,
    new: Option<&'s Item>,
}

impl<T: Routed> Change<T> {
    /// Decodes a stream record: routes it to its entity by the hash key's token, checks its
    /// keys (and each image's keys and generated properties) against the table's settings, and
    /// reads each image the stream view carries as a `T`, keys and generated properties
    /// removed.
    ///
    /// Every record gives a change or a typed [`ChangeError`] naming the entity token and the
    /// keys: a record of an entity `T` does not cover, keys missing or written under another
    /// key mode, shard space or schedule, an image the view promises but the record lacks, an
    /// image that does not decode.
    pub fn decode(record: &StreamRecord) -> Result<Self, ChangeError> {
        let schemas = T::entities().map_err(|e| ChangeError::Schema(Box::new(e)))?;
        let checked = check(&schemas, record)?;
        let decode = |which: Image, item: Option<&Item>| {
            item.map(|item| {
                T::from_image(checked.member, item).map_err(|source| ChangeError::Decode {
                    entity: checked.schema.model().token.to_string(),
                    keys: record.record_keys(),
                    image: which,
                    source: Box::new(source),
                })
            })
            .transpose()
        };
        let old = decode(Image::Old, checked.old)?;
        let new = decode(Image::New, checked.new)?;
        Ok(Self::assemble(record, &checked, old, new))
    }
}

impl Change<Item> {
    /// Decodes a stream record against a schema built at run time (e.g. from a TypeScript
    /// configuration): as [`decode`](Self::decode), with each image an [`Item`] without its
    /// keys and generated properties.
    pub fn decode_items(schema: &Schema, record: &StreamRecord) -> Result<Self, ChangeError> {
        let schemas: Vec<EntitySchema<'_>> = schema
            .entities()
            .iter()
            .map(|e| schema.entity(&e.token))
            .collect::<crate::Result<_>>()
            .map_err(|e| ChangeError::Schema(Box::new(e)))?;
        let checked = check(&schemas, record)?;
        let strip = |item: Option<&Item>| item.map(|i| checked.schema.remove_keys(i));
        let (old, new) = (strip(checked.old), strip(checked.new));
        Ok(Self::assemble(record, &checked, old, new))
    }
}

impl<T> Change<T> {
    fn assemble(
        record: &StreamRecord,
        checked: &Checked<'_>,
        old: Option<T>,
        new: Option<T>,
    ) -> Self {
        let (changed_fields, changed_keys) = match (checked.old, checked.new) {
            (Some(old), Some(new)) => diff(&checked.schema, old, new),
            _ => (Vec::new(), Vec::new()),
        };
        Self {
            kind: record.kind,
            entity: checked.schema.model().token.to_string(),
            key: checked.key.clone(),
            old,
            new,
            sequence_number: record.sequence_number.clone(),
            event_id: record.event_id.clone(),
            expired: record.expired,
            unique: checked.unique.clone(),
            shard: checked.shard.clone(),
            changed_fields,
            changed_keys,
        }
    }

    /// The record's unique value, read from its range key (so known under every stream view,
    /// `KEYS_ONLY` included).
    pub fn unique(&self) -> &AttributeValue {
        &self.unique
    }

    /// The shard suffix of the record's hash key (`"2"` of `user!2`; empty for an unsharded
    /// record).
    pub fn shard(&self) -> &str {
        &self.shard
    }

    /// The stored fields (attribute names, keys and generated properties excluded) whose
    /// values differ between the old and the new image, sorted; empty unless the change has
    /// both images. Sets compare as sets.
    pub fn changed_fields(&self) -> &[String] {
        &self.changed_fields
    }

    /// Whether this typed field of an entity differs between the old and the new image
    /// (`false` without both images, or for a field of another entity).
    ///
    /// `field` is one of the entity's `FIELDS`, emitted by `#[derive(Entity)]`:
    /// `change.changed(User::FIELDS.email)`.
    pub fn changed<E: Entity, V, K>(&self, field: Field<E, V, K>) -> bool {
        self.entity == E::model().token.as_ref()
            && self.changed_fields.iter().any(|f| f == field.name())
    }

    /// The generated properties (index keys) whose values differ between the old and the new
    /// image, in the entity's order; empty unless the change has both images. A property that
    /// appears or disappears (a sparse index entered or left) counts as changed.
    pub fn changed_keys(&self) -> &[String] {
        &self.changed_keys
    }

    /// The same change with its images mapped by `f` (e.g. to a view of the record).
    pub fn map<U>(self, mut f: impl FnMut(T) -> U) -> Change<U> {
        Change {
            kind: self.kind,
            entity: self.entity,
            key: self.key,
            old: self.old.map(&mut f),
            new: self.new.map(&mut f),
            sequence_number: self.sequence_number,
            event_id: self.event_id,
            expired: self.expired,
            unique: self.unique,
            shard: self.shard,
            changed_fields: self.changed_fields,
            changed_keys: self.changed_keys,
        }
    }
}

/// The string value of key attribute `name` of the record, or [`ChangeError::MissingKey`].
fn key_of<'r>(record: &'r StreamRecord, name: &str) -> Result<&'r str, ChangeError> {
    match record.keys.get(name) {
        Some(AttributeValue::S(s)) if !s.is_empty() => Ok(s),
        _ => Err(ChangeError::MissingKey {
            attribute: name.to_owned(),
            keys: record.record_keys(),
        }),
    }
}

fn shown(value: Option<&AttributeValue>) -> String {
    value.map_or_else(|| "(absent)".to_owned(), |v| DisplayAttr(v).to_string())
}

/// Routes `record` to one of `schemas` (all of one table) and checks its keys and images.
fn check<'s>(
    schemas: &[EntitySchema<'s>],
    record: &'s StreamRecord,
) -> Result<Checked<'s>, ChangeError> {
    let known = || {
        schemas
            .iter()
            .map(|s| &*s.model().token)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(first) = schemas.first() else {
        return Err(ChangeError::UnknownEntity {
            token: String::new(),
            keys: record.record_keys(),
            known: known(),
        });
    };
    let table = first.table();
    let hash_key = key_of(record, &table.hash_key)?;
    let range_key = key_of(record, &table.range_key)?;
    let Some(member) = schemas
        .iter()
        .position(|s| s.check_entity_token(&record.keys).is_ok())
    else {
        let token = hash_key
            .split_once(&*table.delimiters.shard_key)
            .map_or(hash_key, |(token, _)| token);
        return Err(ChangeError::UnknownEntity {
            token: token.to_owned(),
            keys: record.record_keys(),
            known: known(),
        });
    };
    let schema = schemas[member];
    let model = schema.model();
    let token = || model.token.to_string();
    let key_error = |source: Error| ChangeError::Key {
        entity: token(),
        keys: record.record_keys(),
        source: Box::new(source),
    };
    // the range key: `<unique><gvd><encoded unique value>`, decoded in the table's key mode
    let prefix_ok = range_key
        .strip_prefix(&*model.unique_property)
        .is_some_and(|rest| rest.starts_with(&*table.delimiters.generated_value));
    if !prefix_ok {
        return Err(key_error(Error::MalformedKey {
            entity: token(),
            segment: range_key.to_owned(),
            reason: format!(
                "a range key of entity `{}` reads `{}{}<value>`",
                model.token, model.unique_property, table.delimiters.generated_value
            ),
        }));
    }
    let components = schema.decode_generated(range_key).map_err(key_error)?;
    let Some(unique) = components.get(&*model.unique_property).cloned() else {
        return Err(key_error(Error::MissingUnique {
            entity: token(),
            property: model.unique_property.to_string(),
        }));
    };
    // the hash key: one of the shards the unique value maps to (one per shard bump)
    let candidates = schema.primary_keys(&components).map_err(key_error)?;
    if !candidates.iter().any(|k| k.hash_key == hash_key) {
        return Err(key_error(Error::MalformedKey {
            entity: token(),
            segment: hash_key.to_owned(),
            reason: format!(
                "unique value {} maps to hash key(s) {} under this table's shard space and shard bumps",
                DisplayAttr(&unique),
                candidates
                    .iter()
                    .map(|k| format!("{:?}", k.hash_key))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }));
    }
    let shard = hash_key
        .strip_prefix(&*model.token)
        .and_then(|rest| rest.strip_prefix(&*table.delimiters.shard_key))
        .unwrap_or_default()
        .to_owned();
    let (old, new) = check_images(&schema, record)?;
    Ok(Checked {
        member,
        schema,
        key: PrimaryKey {
            hash_key: hash_key.to_owned(),
            range_key: range_key.to_owned(),
        },
        unique,
        shard,
        old,
        new,
    })
}

/// The images of `record`: present only where the event kind allows, present wherever the
/// stream view promises, and each consistent with the table's settings.
fn check_images<'s>(
    schema: &EntitySchema<'_>,
    record: &'s StreamRecord,
) -> Result<(Option<&'s Item>, Option<&'s Item>), ChangeError> {
    let model = schema.model();
    // the images the event kind allows and the view promises
    let kind_allows = match record.kind {
        ChangeKind::Insert => (false, true),
        ChangeKind::Modify => (true, true),
        ChangeKind::Remove => (true, false),
    };
    let promised = record.view.map(carried);
    let images = [
        (Image::Old, record.old_image.as_ref()),
        (Image::New, record.new_image.as_ref()),
    ];
    for (i, &(which, item)) in images.iter().enumerate() {
        let allowed = if i == 0 { kind_allows.0 } else { kind_allows.1 };
        let promised = promised.map(|(old, new)| if i == 0 { old } else { new });
        match (item, allowed, promised) {
            (Some(_), false, _) => {
                return Err(ChangeError::Malformed {
                    keys: record.record_keys(),
                    reason: format!(
                        "a {} event of entity `{}` has no {which}, but the record holds one",
                        record.kind, model.token
                    ),
                });
            }
            (None, true, Some(true)) => {
                return Err(ChangeError::MissingImage {
                    entity: model.token.to_string(),
                    keys: record.record_keys(),
                    image: which,
                    view: record.view.map_or("", crate::store::StreamView::as_str),
                    kind: record.kind.as_str(),
                });
            }
            (Some(image), true, _) => check_image(schema, record, which, image)?,
            _ => {}
        }
    }
    Ok((images[0].1, images[1].1))
}

/// An image holds the record's keys, and every key and generated property it stores is the one
/// its values give under the table's settings.
fn check_image(
    schema: &EntitySchema<'_>,
    record: &StreamRecord,
    which: Image,
    image: &Item,
) -> Result<(), ChangeError> {
    let table = schema.table();
    let mismatch =
        |attribute: &str, stored: Option<&AttributeValue>, expected: Option<&AttributeValue>| {
            ChangeError::KeyMismatch {
                entity: schema.model().token.to_string(),
                keys: record.record_keys(),
                image: which,
                attribute: attribute.to_owned(),
                stored: shown(stored),
                expected: shown(expected),
            }
        };
    for name in [&table.hash_key, &table.range_key] {
        if image.get(&**name) != record.keys.get(&**name) {
            return Err(mismatch(name, image.get(&**name), record.keys.get(&**name)));
        }
    }
    let rebuilt = schema
        .refresh_keys(&schema.remove_keys(image))
        .map_err(|source| ChangeError::Decode {
            entity: schema.model().token.to_string(),
            keys: record.record_keys(),
            image: which,
            source: Box::new(source),
        })?;
    let names = [&table.hash_key, &table.range_key]
        .into_iter()
        .chain(schema.model().generated.iter().map(|g| &g.name));
    for name in names {
        let (stored, expected) = (image.get(&**name), rebuilt.get(&**name));
        if stored != expected {
            return Err(mismatch(name, stored, expected));
        }
    }
    Ok(())
}

/// The stored fields and the generated keys that differ between two keyed images.
fn diff(schema: &EntitySchema<'_>, old: &Item, new: &Item) -> (Vec<String>, Vec<String>) {
    let (old_fields, new_fields) = (schema.remove_keys(old), schema.remove_keys(new));
    let mut fields: Vec<String> = old_fields
        .keys()
        .chain(new_fields.keys())
        .filter(|name| !same_opt(old_fields.get(name.as_str()), new_fields.get(name.as_str())))
        .cloned()
        .collect();
    fields.sort();
    fields.dedup();
    let table = schema.table();
    let keys = [&table.hash_key, &table.range_key]
        .into_iter()
        .chain(schema.model().generated.iter().map(|g| &g.name))
        .filter(|name| !same_opt(old.get(&***name), new.get(&***name)))
        .map(ToString::to_string)
        .collect();
    (fields, keys)
}

fn same_opt(a: Option<&AttributeValue>, b: Option<&AttributeValue>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => same(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// Equal values, sets compared as sets (a stream may list a set's members in any order).
fn same(a: &AttributeValue, b: &AttributeValue) -> bool {
    fn sorted<T: Ord + Clone>(v: &[T]) -> Vec<T> {
        let mut v = v.to_vec();
        v.sort();
        v
    }
    match (a, b) {
        (AttributeValue::Ss(a), AttributeValue::Ss(b))
        | (AttributeValue::Ns(a), AttributeValue::Ns(b)) => sorted(a) == sorted(b),
        (AttributeValue::Bs(a), AttributeValue::Bs(b)) => sorted(a) == sorted(b),
        (AttributeValue::L(a), AttributeValue::L(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(a, b))
        }
        (AttributeValue::M(a), AttributeValue::M(b)) => {
            a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}
