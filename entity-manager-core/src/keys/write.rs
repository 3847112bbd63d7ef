//! Write-side keys: hash and range keys, generated properties, adding, refreshing and removing
//! keys, candidate primary keys, and encoding and decoding single components.
//!
//! Every operation is a method of [`EntitySchema`]; all are pure. Component values are written
//! with their transcode, and a value whose encoding contains a delimiter is rejected, so every
//! key decodes back to exactly its components.

use std::borrow::Cow;

use serde_dynamo::{AttributeValue, Item};

use crate::error::{Error, Result};
use crate::model::{GeneratedProperty, Index, KeyMode, NumericHash, ShardBump};
use crate::schema::EntitySchema;
use crate::shard;
use crate::transcode::DisplayAttr;
use crate::transcode::ts_mode;

/// A primary key: the values of the table's hash and range key attributes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PrimaryKey {
    /// The hash (partition) key value, e.g. `user!1`.
    pub hash_key: String,
    /// The range (sort) key value, e.g. `userId#user-123`.
    pub range_key: String,
}

/// A present value: the attribute exists and is not `NULL`.
pub(crate) fn present<'i>(item: &'i Item, name: &str) -> Option<&'i AttributeValue> {
    item.get(name)
        .filter(|v| !matches!(v, AttributeValue::Null(_)))
}

/// A non-empty string attribute (the TypeScript "truthy" test used for existing keys).
fn truthy_str<'i>(item: &'i Item, name: &str) -> Option<&'i str> {
    match item.get(name) {
        Some(AttributeValue::S(s)) if !s.is_empty() => Some(s),
        _ => None,
    }
}

/// The encoded values of the components of one item, so that a component shared by several keys
/// is read and encoded once. Holds up to 16 components; beyond that the last slot is reused.
#[derive(Default)]
struct EncodedComponents<'a> {
    len: usize,
    entries: [(&'a str, Option<String>); 16],
}

impl<'a> EncodedComponents<'a> {
    /// The slot of `property`, if its value was stored.
    fn find(&self, property: &str) -> Option<usize> {
        self.entries[..self.len]
            .iter()
            .position(|(name, _)| *name == property)
    }

    /// Stores the encoded value of `property` (`None`: missing or empty); returns its slot.
    fn store(&mut self, property: &'a str, value: Option<String>) -> usize {
        let slot = self.len.min(self.entries.len() - 1);
        self.entries[slot] = (property, value);
        self.len = slot + 1;
        slot
    }

    /// The encoded value in `slot`.
    fn value(&self, slot: usize) -> Option<&str> {
        self.entries[slot].1.as_deref()
    }
}

impl<'a> EntitySchema<'a> {
    pub(crate) fn entity(&self) -> String {
        self.model.token.to_string()
    }

    pub(super) fn generated(&self, name: &str) -> Result<&'a GeneratedProperty> {
        self.model
            .generated_property(name)
            .ok_or_else(|| Error::UnknownGeneratedProperty {
                entity: self.entity(),
                property: name.to_owned(),
            })
    }

    /// The index of this name.
    pub fn index(&self, name: &str) -> Result<&'a Index> {
        self.model.index(name).ok_or_else(|| Error::UnknownIndex {
            entity: self.entity(),
            index: name.to_owned(),
        })
    }

    /// Writes one component value with its property's transcode, rejecting encodings that
    /// contain a delimiter. `Ok(None)` when the encoding is empty (an empty string), which keys
    /// treat as absent so that they stay injective.
    pub fn encode_component(
        &self,
        property: &str,
        value: &AttributeValue,
    ) -> Result<Option<String>> {
        let transcode = self
            .model
            .property(property)
            .ok_or_else(|| Error::UnknownTranscodedProperty {
                entity: self.entity(),
                property: property.to_owned(),
            })?
            .transcode;
        let encoded = match self.table.key_mode {
            KeyMode::Transcoded => transcode.encode(value),
            KeyMode::TypeScript => ts_mode::encode(transcode, value),
        }
        .map_err(|source| Error::Transcode {
            entity: self.entity(),
            property: property.to_owned(),
            source: Box::new(source),
        })?;
        if let Some(delimiter) = self.delimiter_in(&encoded) {
            return Err(Error::DelimiterInValue {
                entity: self.entity(),
                property: property.to_owned(),
                value: encoded,
                delimiter: delimiter.to_owned(),
            });
        }
        // An empty encoding counts as absent in our keys (so that they stay injective); the
        // TypeScript release writes an empty string as a present, empty value.
        Ok((!encoded.is_empty() || self.table.key_mode == KeyMode::TypeScript).then_some(encoded))
    }

    /// The first delimiter that occurs in `value`, if any: one pass over the bytes for the usual
    /// single-byte delimiters.
    fn delimiter_in(&self, value: &str) -> Option<&'a str> {
        let d = &self.table.delimiters;
        if let ([k], [v], [s]) = (
            d.generated_key.as_bytes(),
            d.generated_value.as_bytes(),
            d.shard_key.as_bytes(),
        ) && !value.bytes().any(|b| b == *k || b == *v || b == *s)
        {
            return None;
        }
        d.find_in(value)
    }

    /// Appends `<gkd>` (unless `first`), `<property><gvd>` and the item's encoded value of
    /// `property` (if any) to `key`; `Ok(false)` when the value is missing or encodes as empty.
    fn push_component(
        &self,
        key: &mut String,
        first: bool,
        property: &'a str,
        item: &Item,
        encoded: &mut EncodedComponents<'a>,
    ) -> Result<bool> {
        let d = &self.table.delimiters;
        if !first {
            key.push_str(&d.generated_key);
        }
        key.push_str(property);
        key.push_str(&d.generated_value);
        let slot = if let Some(slot) = encoded.find(property) {
            slot
        } else {
            let value = match present(item, property) {
                Some(value) => self.encode_component(property, value)?,
                None => None,
            };
            encoded.store(property, value)
        };
        Ok(encoded.value(slot).is_some_and(|value| {
            key.push_str(value);
            true
        }))
    }

    /// Reads one component value back with its property's transcode (in the table's key mode).
    ///
    /// A value that does not decode in the table's mode but does in the other one was written by
    /// a table configured the other way: that is [`Error::KeyModeMismatch`], naming both modes.
    pub fn decode_component(&self, property: &str, encoded: &str) -> Result<AttributeValue> {
        let transcode = self
            .model
            .property(property)
            .ok_or_else(|| Error::UnknownTranscodedProperty {
                entity: self.entity(),
                property: property.to_owned(),
            })?
            .transcode;
        let decode = |mode: KeyMode| match mode {
            KeyMode::Transcoded => transcode.decode(encoded),
            KeyMode::TypeScript => ts_mode::decode(transcode, encoded),
        };
        let mode = self.table.key_mode;
        decode(mode).map_err(|source| {
            let other = match mode {
                KeyMode::Transcoded => KeyMode::TypeScript,
                KeyMode::TypeScript => KeyMode::Transcoded,
            };
            if decode(other).is_ok() {
                Error::KeyModeMismatch {
                    entity: self.entity(),
                    property: property.to_owned(),
                    value: encoded.to_owned(),
                    table: mode,
                    written: other,
                }
            } else {
                Error::Transcode {
                    entity: self.entity(),
                    property: property.to_owned(),
                    source: Box::new(source),
                }
            }
        })
    }

    /// The item's creation time, which picks its shard bump.
    fn timestamp(&self, item: &Item) -> Result<u64> {
        let property = &self.model.timestamp_property;
        let value = present(item, property).ok_or_else(|| Error::MissingTimestamp {
            entity: self.entity(),
            property: property.to_string(),
        })?;
        match value {
            AttributeValue::N(n) => n.parse::<u64>().ok(),
            _ => None,
        }
        .ok_or_else(|| Error::InvalidTimestamp {
            entity: self.entity(),
            property: property.to_string(),
            value: DisplayAttr(value).to_string(),
        })
    }

    /// The string the item's unique value is hashed as, if it has one.
    pub(super) fn unique_hash_text<'i>(&self, item: &'i Item) -> Option<Cow<'i, str>> {
        match present(item, &self.model.unique_property) {
            // upstream v8 hashes a number as `string-hash` of a non-string: the constant 5381,
            // which is the hash of the empty string
            Some(AttributeValue::N(_)) if self.table.numeric_hash == NumericHash::Constant => {
                Some(Cow::Borrowed(""))
            }
            // the TypeScript release hashes an empty string (5381) where we require a value
            Some(AttributeValue::S(s))
                if s.is_empty() && self.table.key_mode == KeyMode::TypeScript =>
            {
                Some(Cow::Borrowed(""))
            }
            value => value.and_then(shard::hash_text),
        }
    }

    fn missing_unique(&self) -> Error {
        Error::MissingUnique {
            entity: self.entity(),
            property: self.model.unique_property.to_string(),
        }
    }

    /// `<entityToken><shardKeyDelimiter><suffix>`.
    pub(super) fn hash_key_value(&self, suffix: &str) -> String {
        let mut key = String::with_capacity(
            self.model.token.len() + self.table.delimiters.shard_key.len() + suffix.len(),
        );
        key.push_str(&self.model.token);
        key.push_str(&self.table.delimiters.shard_key);
        key.push_str(suffix);
        key
    }

    /// The suffix of the unique value `text` under `bump`.
    pub(super) fn suffix_of(&self, text: &str, bump: ShardBump) -> String {
        shard::suffix(shard::string_hash(text), bump, self.table.shard_space)
    }

    /// The hash key a record gets: its shard under the bump in force at its creation time.
    pub fn hash_key(&self, item: &Item) -> Result<String> {
        let timestamp = self.timestamp(item)?;
        let bump = self
            .model
            .shard_bump(timestamp)
            .unwrap_or(ShardBump::UNSHARDED);
        let shard = if bump.chars == 0 {
            0
        } else {
            let text = self
                .unique_hash_text(item)
                .ok_or_else(|| self.missing_unique())?;
            shard::shard_of(shard::string_hash(&text), bump, self.table.shard_space)
        };
        let mut key = String::with_capacity(
            self.model.token.len()
                + self.table.delimiters.shard_key.len()
                + usize::from(bump.chars),
        );
        key.push_str(&self.model.token);
        key.push_str(&self.table.delimiters.shard_key);
        shard::push_suffix(&mut key, shard, bump);
        Ok(key)
    }

    /// The range key of a record: `<uniqueProperty><generatedValueDelimiter><encoded value>`.
    pub fn range_key(&self, item: &Item) -> Result<String> {
        self.range_key_with(item, &mut EncodedComponents::default())
    }

    fn range_key_with(&self, item: &Item, encoded: &mut EncodedComponents<'a>) -> Result<String> {
        let property = &self.model.unique_property;
        let mut key = String::with_capacity(property.len() + 48);
        if self.push_component(&mut key, true, property, item, encoded)? {
            Ok(key)
        } else {
            Err(self.missing_unique())
        }
    }

    /// Builds a generated property from the item, or `None` when it is atomic and a component
    /// (or, for a sharded property, the hash key) is missing.
    pub fn encode_generated(&self, property: &str, item: &Item) -> Result<Option<String>> {
        let generated = self.generated(property)?;
        self.encode_generated_property(generated, item)
    }

    pub(super) fn encode_generated_property(
        &self,
        generated: &'a GeneratedProperty,
        item: &Item,
    ) -> Result<Option<String>> {
        let hash_key = truthy_str(item, &self.table.hash_key);
        self.generated_value(generated, item, hash_key, &mut EncodedComponents::default())
    }

    /// A generated property of `item` whose hash key (non-empty, if any) is `hash_key`.
    fn generated_value(
        &self,
        generated: &'a GeneratedProperty,
        item: &Item,
        hash_key: Option<&str>,
        encoded: &mut EncodedComponents<'a>,
    ) -> Result<Option<String>> {
        let hash_key = if generated.is_sharded() {
            let Some(hash_key) = hash_key else {
                return Ok(None);
            };
            hash_key
        } else {
            ""
        };
        // room for the names, the delimiters and values of a typical length
        let capacity = generated
            .components
            .iter()
            .map(|c| c.len() + 24)
            .sum::<usize>()
            + hash_key.len();
        let mut key = String::with_capacity(capacity);
        key.push_str(hash_key);
        for (i, component) in generated.components.iter().enumerate() {
            let first = i == 0 && !generated.is_sharded();
            if !self.push_component(&mut key, first, component, item, encoded)?
                && generated.is_atomic()
            {
                return Ok(None);
            }
        }
        Ok(Some(key))
    }

    /// Reads a generated property (or range key) back into its components: the hash key (a
    /// leading segment holding the shard key delimiter) and one decoded value per
    /// `<name><gvd><value>` segment. Empty values are left out.
    pub fn decode_generated(&self, encoded: &str) -> Result<Item> {
        let mut item = Item::default();
        if encoded.is_empty() {
            return Ok(item);
        }
        let d = &self.table.delimiters;
        let mut segments = encoded.split(&*d.generated_key).peekable();
        if let Some(first) = segments.next_if(|s| s.contains(&*d.shard_key)) {
            item.insert(
                self.table.hash_key.to_string(),
                AttributeValue::S(first.to_owned()),
            );
        }
        for segment in segments {
            let mut parts = segment.split(&*d.generated_value);
            let (Some(name), Some(value), None) = (parts.next(), parts.next(), parts.next()) else {
                return Err(Error::MalformedKey {
                    entity: self.entity(),
                    segment: segment.to_owned(),
                    reason: format!("expected `<property>{}<value>`", d.generated_value),
                });
            };
            if self.model.property(name).is_none() {
                return Err(Error::UnknownTranscodedProperty {
                    entity: self.entity(),
                    property: name.to_owned(),
                });
            }
            if value.is_empty() {
                item.remove(name);
            } else {
                item.insert(name.to_owned(), self.decode_component(name, value)?);
            }
        }
        Ok(item)
    }

    /// Adds the hash key, the range key and every generated property the entity declares.
    ///
    /// As in TypeScript, a non-empty existing hash or range key is kept, and so is any generated
    /// property already present; an atomic generated property whose components are missing is
    /// removed. The input is not modified.
    pub fn add_keys(&self, item: &Item) -> Result<Item> {
        self.add_keys_impl(item, false)
    }

    /// Like [`add_keys`](Self::add_keys), but recomputes every key even when present.
    pub fn refresh_keys(&self, item: &Item) -> Result<Item> {
        self.add_keys_impl(item, true)
    }

    fn add_keys_impl(&self, item: &Item, overwrite: bool) -> Result<Item> {
        let mut keyed = item.clone();
        self.add_keys_in_place(&mut keyed, overwrite)?;
        Ok(keyed)
    }

    /// [`add_keys`](Self::add_keys) on the item itself, without copying it: the in-place write
    /// path. On an error the item is unchanged. Every key value is checked against DynamoDB's
    /// limits ([`Error::KeyTooLong`]) before anything is written.
    pub fn add_keys_mut(&self, item: &mut Item) -> Result<()> {
        self.add_keys_in_place(item, false)
    }

    /// [`refresh_keys`](Self::refresh_keys) on the item itself, without copying it. On an error
    /// the item is unchanged.
    pub fn refresh_keys_mut(&self, item: &mut Item) -> Result<()> {
        self.add_keys_in_place(item, true)
    }

    /// [`add_keys`](Self::add_keys) (or with `overwrite`, [`refresh_keys`](Self::refresh_keys))
    /// on the item itself, which gives the same item as working on a copy: every key is built
    /// from transcoded properties and the hash key, and in a validated model no key is a
    /// component of another. Every value is computed and checked first, then written, so an
    /// error leaves the item unchanged.
    pub(crate) fn add_keys_in_place(&self, item: &mut Item, overwrite: bool) -> Result<()> {
        let updates = self.key_updates(item, overwrite)?;
        self.check_key_sizes_with(item, &updates)?;
        item.reserve(updates.len());
        for (name, value) in updates {
            match value {
                Some(value) => {
                    item.insert(name.to_owned(), AttributeValue::S(value));
                }
                None => {
                    item.remove(name);
                }
            }
        }
        Ok(())
    }

    /// The key attributes `add_keys` writes (`Some`) or removes (`None`), computed from the
    /// item without changing it.
    fn key_updates(&self, item: &Item, overwrite: bool) -> Result<Vec<(&'a str, Option<String>)>> {
        let table = self.table;
        let mut updates = Vec::with_capacity(2 + self.model.generated.len());
        // each component is encoded once, however many keys it appears in
        let mut encoded = EncodedComponents::default();
        let hash_key = if overwrite || truthy_str(item, &table.hash_key).is_none() {
            Some(self.hash_key(item)?)
        } else {
            None
        };
        let range_key = if overwrite || truthy_str(item, &table.range_key).is_none() {
            Some(self.range_key_with(item, &mut encoded)?)
        } else {
            None
        };
        let sharded_on = hash_key
            .as_deref()
            .or_else(|| truthy_str(item, &table.hash_key))
            .filter(|h| !h.is_empty());
        for generated in self.model.generated.iter() {
            if !overwrite && present(item, &generated.name).is_some() {
                continue;
            }
            let value = self.generated_value(generated, item, sharded_on, &mut encoded)?;
            updates.push((&*generated.name, value));
        }
        if let Some(hash_key) = hash_key {
            updates.push((&*table.hash_key, Some(hash_key)));
        }
        if let Some(range_key) = range_key {
            updates.push((&*table.range_key, Some(range_key)));
        }
        Ok(updates)
    }

    /// Removes the hash key, the range key and every generated property the entity declares.
    pub fn remove_keys(&self, item: &Item) -> Item {
        let mut stripped = item.clone();
        stripped.remove(&*self.table.hash_key);
        stripped.remove(&*self.table.range_key);
        for generated in self.model.generated.iter() {
            stripped.remove(&*generated.name);
        }
        stripped
    }

    /// The primary key(s) a record may have.
    ///
    /// An item that already holds both keys yields them. An item with its timestamp yields its
    /// one key. Without a timestamp, the record may sit under any bump, so one candidate per
    /// bump is returned (duplicates removed), each in the shard its unique value maps to.
    pub fn primary_keys(&self, item: &Item) -> Result<Vec<PrimaryKey>> {
        if let (Some(hash_key), Some(range_key)) = (
            truthy_str(item, &self.table.hash_key),
            truthy_str(item, &self.table.range_key),
        ) {
            return Ok(vec![PrimaryKey {
                hash_key: hash_key.to_owned(),
                range_key: range_key.to_owned(),
            }]);
        }
        let range_key = self.range_key(item)?;
        if present(item, &self.model.timestamp_property).is_some() {
            return Ok(vec![PrimaryKey {
                hash_key: self.hash_key(item)?,
                range_key,
            }]);
        }
        let text = self
            .unique_hash_text(item)
            .ok_or_else(|| self.missing_unique())?;
        let mut keys: Vec<PrimaryKey> = Vec::with_capacity(self.model.shard_bumps.len());
        for bump in self.model.shard_bumps.iter() {
            let key = PrimaryKey {
                hash_key: self.hash_key_value(&self.suffix_of(&text, *bump)),
                range_key: range_key.clone(),
            };
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        Ok(keys)
    }
}
