//! Write-side keys: hash and range keys, generated properties, adding, refreshing and removing
//! keys, candidate primary keys, and encoding and decoding single components.
//!
//! Every operation is a method of [`EntitySchema`]; all are pure. Component values are written
//! with their transcode, and a value whose encoding contains a delimiter is rejected, so every
//! key decodes back to exactly its components.

use std::borrow::Cow;
use std::cell::Cell;

use serde_dynamo::{AttributeValue, Item};

use crate::error::{Error, Result};
use crate::limits::key_value_bytes;
use crate::model::{GeneratedKind, GeneratedProperty, Index, KeyMode, NumericHash, ShardBump};
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
    attribute(item, name).filter(|v| !matches!(v, AttributeValue::Null(_)))
}

/// Items up to this many attributes are searched by a scan rather than by hashing the name.
const SCANNED: usize = 16;

/// `item.get(name)`. A small item is scanned, comparing lengths first: that is cheaper than
/// hashing the name with the item's `SipHash` hasher, which the key path otherwise does a dozen
/// times per item.
pub(crate) fn attribute<'i>(item: &'i Item, name: &str) -> Option<&'i AttributeValue> {
    if item.len() > SCANNED {
        return item.get(name);
    }
    item.iter()
        .find(|(k, _)| k.len() == name.len() && k.as_str() == name)
        .map(|(_, v)| v)
}

/// A non-empty string attribute (the TypeScript "truthy" test used for existing keys).
fn truthy_str<'i>(item: &'i Item, name: &str) -> Option<&'i str> {
    match attribute(item, name) {
        Some(AttributeValue::S(s)) if !s.is_empty() => Some(s),
        _ => None,
    }
}

/// The most components one item's key computation remembers; beyond that the last entry is
/// reused (a component is then read and encoded again).
const REMEMBERED: usize = 16;

/// Where one component's encoding is: not computed yet, missing or empty, or a byte range of
/// the scratch buffer.
#[derive(Clone, Copy, Debug)]
enum Encoded {
    Unread,
    Absent,
    At(usize, usize),
}

/// One component of an item: its present value (looked up once) and its encoding.
#[derive(Clone, Copy, Debug)]
struct Component<'a, 'i> {
    name: &'a str,
    value: Option<&'i AttributeValue>,
    encoded: Encoded,
}

thread_local! {
    /// The scratch buffer of the last key computation on this thread, kept so that the next
    /// one does not allocate its own.
    static SCRATCH: Cell<String> = const { Cell::new(String::new()) };
}

/// A scratch buffer this large is not kept for the next key computation.
const SCRATCH_KEPT: usize = 4_096;

/// The components of one item, so that a property shared by several keys is looked up and
/// encoded once. Every encoding is written into one scratch buffer (reused from one
/// computation to the next on a thread), so that components cost no allocation of their own.
struct Components<'a, 'i> {
    item: &'i Item,
    len: usize,
    entries: [Component<'a, 'i>; REMEMBERED],
    scratch: String,
}

impl<'a, 'i> Components<'a, 'i> {
    fn new(item: &'i Item) -> Self {
        Self {
            item,
            len: 0,
            entries: [Component {
                name: "",
                value: None,
                encoded: Encoded::Unread,
            }; REMEMBERED],
            // a computation nested inside another one (a custom transcoder that builds keys)
            // finds the buffer taken and starts an empty one
            scratch: SCRATCH.try_with(Cell::take).unwrap_or_default(),
        }
    }

    /// The entry of `name`, looked up in the item the first time.
    fn entry(&mut self, name: &'a str) -> usize {
        if let Some(at) = self.entries[..self.len].iter().position(|c| c.name == name) {
            return at;
        }
        let at = self.len.min(REMEMBERED - 1);
        self.entries[at] = Component {
            name,
            value: present(self.item, name),
            encoded: Encoded::Unread,
        };
        self.len = at + 1;
        at
    }

    /// The present value of `name` (not `NULL`).
    fn value(&mut self, name: &'a str) -> Option<&'i AttributeValue> {
        let at = self.entry(name);
        self.entries[at].value
    }

    /// The byte range of the encoding of `name` in the scratch buffer; `None` when the value is
    /// missing or encodes as absent.
    fn encoded(
        &mut self,
        schema: &EntitySchema<'a>,
        name: &'a str,
    ) -> Result<Option<(usize, usize)>> {
        let at = self.entry(name);
        let encoded = match self.entries[at].encoded {
            Encoded::Unread => {
                let start = self.scratch.len();
                let encoded = match self.entries[at].value {
                    Some(value)
                        if schema.encode_component_into(name, value, &mut self.scratch)? =>
                    {
                        Encoded::At(start, self.scratch.len())
                    }
                    _ => Encoded::Absent,
                };
                self.entries[at].encoded = encoded;
                encoded
            }
            known => known,
        };
        Ok(match encoded {
            Encoded::At(start, end) => Some((start, end)),
            Encoded::Unread | Encoded::Absent => None,
        })
    }

    /// An encoding by its range.
    fn text(&self, (start, end): (usize, usize)) -> &str {
        self.scratch.get(start..end).unwrap_or_default()
    }
}

impl Drop for Components<'_, '_> {
    fn drop(&mut self) {
        let mut scratch = std::mem::take(&mut self.scratch);
        if scratch.capacity() <= SCRATCH_KEPT {
            scratch.clear();
            // after the thread's destructors ran there is nothing to keep it in
            let _ = SCRATCH.try_with(|kept| kept.set(scratch));
        }
    }
}

/// What a key computation does with one key attribute.
#[derive(Debug)]
pub(crate) enum KeyUpdate {
    /// Leaves the existing value.
    Keep,
    /// Leaves it absent: it is missing, and its new value is absent too.
    Absent,
    /// Writes this value.
    Write(String),
    /// Removes the attribute (present, or `NULL`).
    Remove,
}

/// How many key updates are kept inline, without an allocation: the hash key, the range key
/// and up to eight generated properties.
const INLINE_UPDATES: usize = 10;

/// The key updates of one item, by slot: 0 is the hash key, 1 the range key, `2 + i` the
/// entity's `i`-th generated property.
pub(crate) struct KeyUpdates {
    len: usize,
    inline: [KeyUpdate; INLINE_UPDATES],
    spilled: Vec<KeyUpdate>,
}

impl KeyUpdates {
    fn new(len: usize) -> Self {
        Self {
            len,
            inline: std::array::from_fn(|_| KeyUpdate::Keep),
            spilled: if len > INLINE_UPDATES {
                std::iter::repeat_with(|| KeyUpdate::Keep)
                    .take(len)
                    .collect()
            } else {
                Vec::new()
            },
        }
    }

    /// Every slot, in order.
    pub(crate) fn slots(&self) -> &[KeyUpdate] {
        if self.len > INLINE_UPDATES {
            &self.spilled
        } else {
            &self.inline[..self.len]
        }
    }

    fn slots_mut(&mut self) -> &mut [KeyUpdate] {
        if self.len > INLINE_UPDATES {
            &mut self.spilled
        } else {
            &mut self.inline[..self.len]
        }
    }

    /// How many values are written.
    fn writes(&self) -> usize {
        self.slots()
            .iter()
            .filter(|u| matches!(u, KeyUpdate::Write(_)))
            .count()
    }

    fn set(&mut self, slot: usize, update: KeyUpdate) {
        if let Some(at) = self.slots_mut().get_mut(slot) {
            *at = update;
        }
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
        let mut encoded = String::new();
        Ok(self
            .encode_component_into(property, value, &mut encoded)?
            .then_some(encoded))
    }

    /// [`encode_component`](Self::encode_component), appended to `out`: `Ok(true)` when a value
    /// was written, `Ok(false)` when it encodes as absent. On an error or an absent value `out`
    /// is unchanged.
    pub(crate) fn encode_component_into(
        &self,
        property: &str,
        value: &AttributeValue,
        out: &mut String,
    ) -> Result<bool> {
        let transcode = self
            .model
            .property(property)
            .ok_or_else(|| Error::UnknownTranscodedProperty {
                entity: self.entity(),
                property: property.to_owned(),
            })?
            .transcode;
        let start = out.len();
        match self.table.key_mode {
            KeyMode::Transcoded => transcode.encode_into(value, out),
            KeyMode::TypeScript => ts_mode::encode_into(transcode, value, out),
        }
        .map_err(|source| Error::Transcode {
            entity: self.entity(),
            property: property.to_owned(),
            source: Box::new(source),
        })?;
        let encoded = out.get(start..).unwrap_or_default();
        if let Some(delimiter) = self.delimiter_in(encoded) {
            let value = encoded.to_owned();
            out.truncate(start);
            return Err(Error::DelimiterInValue {
                entity: self.entity(),
                property: property.to_owned(),
                value,
                delimiter: delimiter.to_owned(),
            });
        }
        // An empty encoding counts as absent in our keys (so that they stay injective); the
        // TypeScript release writes an empty string as a present, empty value.
        Ok(out.len() > start || self.table.key_mode == KeyMode::TypeScript)
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
    fn timestamp(&self, value: Option<&AttributeValue>) -> Result<u64> {
        let property = &self.model.timestamp_property;
        let value = value.ok_or_else(|| Error::MissingTimestamp {
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
        self.hash_text_of(present(item, &self.model.unique_property))
    }

    /// The string a present unique value is hashed as.
    fn hash_text_of<'i>(&self, unique: Option<&'i AttributeValue>) -> Option<Cow<'i, str>> {
        match unique {
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
        shard::suffix(
            shard::shard_hash(self.table.shard_hash, text),
            bump,
            self.table.shard_space,
        )
    }

    /// The hash key a record gets: its shard under the bump in force at its creation time.
    pub fn hash_key(&self, item: &Item) -> Result<String> {
        self.hash_key_with(&mut Components::new(item))
    }

    fn hash_key_with(&self, components: &mut Components<'a, '_>) -> Result<String> {
        let timestamp = self.timestamp(components.value(&self.model.timestamp_property))?;
        let bump = self
            .model
            .shard_bump(timestamp)
            .unwrap_or(ShardBump::UNSHARDED);
        let shard = if bump.chars == 0 {
            0
        } else {
            let text = self
                .hash_text_of(components.value(&self.model.unique_property))
                .ok_or_else(|| self.missing_unique())?;
            shard::shard_of(
                shard::shard_hash(self.table.shard_hash, &text),
                bump,
                self.table.shard_space,
            )
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
        self.range_key_with(&mut Components::new(item))
    }

    fn range_key_with(&self, components: &mut Components<'a, '_>) -> Result<String> {
        let property: &'a str = &self.model.unique_property;
        let gvd = &*self.table.delimiters.generated_value;
        let Some(value) = components.encoded(self, property)? else {
            return Err(self.missing_unique());
        };
        let value = components.text(value);
        let mut key = String::with_capacity(property.len() + gvd.len() + value.len());
        key.push_str(property);
        key.push_str(gvd);
        key.push_str(value);
        Ok(key)
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
        self.generated_value(generated, &mut Components::new(item), hash_key)
    }

    /// A generated property of the item whose hash key (non-empty, if any) is `hash_key`:
    /// `[<hashKey><gkd>]<name><gvd><value>[<gkd><name><gvd><value>…]`, built in one exactly
    /// sized `String`.
    fn generated_value(
        &self,
        generated: &'a GeneratedProperty,
        components: &mut Components<'a, '_>,
        hash_key: Option<&str>,
    ) -> Result<Option<String>> {
        let hash_key = if generated.is_sharded() {
            let Some(hash_key) = hash_key else {
                return Ok(None);
            };
            hash_key
        } else {
            ""
        };
        let d = &self.table.delimiters;
        // Every component encoded first, in order (an atomic property stops at the first one
        // missing), which gives the exact length.
        let mut len = hash_key.len();
        // the ranges of the first components, so that the second pass need not find them again
        let mut ranges = [None; REMEMBERED];
        for (i, component) in generated.components.iter().enumerate() {
            if i > 0 || generated.is_sharded() {
                len += d.generated_key.len();
            }
            len += component.len() + d.generated_value.len();
            let range = components.encoded(self, component)?;
            match range {
                Some((start, end)) => len += end - start,
                None if generated.is_atomic() => return Ok(None),
                None => {}
            }
            if let Some(slot) = ranges.get_mut(i) {
                *slot = range;
            }
        }
        let mut key = String::with_capacity(len);
        key.push_str(hash_key);
        for (i, component) in generated.components.iter().enumerate() {
            if i > 0 || generated.is_sharded() {
                key.push_str(&d.generated_key);
            }
            key.push_str(component);
            key.push_str(&d.generated_value);
            let range = match ranges.get(i) {
                Some(range) => *range,
                None => components.encoded(self, component)?,
            };
            if let Some(range) = range {
                key.push_str(components.text(range));
            }
        }
        Ok(Some(key))
    }

    /// Reads a generated property (or range key) back into its components: the hash key (a
    /// leading `<entity token><shard key delimiter><suffix>` segment) and one decoded value per
    /// `<name><gvd><value>` segment. Empty values are left out.
    ///
    /// A key is read only when it can be read one way: the hash key must be this entity's, the
    /// component names must be, in order, those of one of the entity's generated properties
    /// (or its unique property alone, for a range key), and no value may hold a delimiter.
    /// Keys written by this crate always are; a key written by a service that does not refuse
    /// delimiters inside values (TypeScript: `firstNameCanonical#ann!e|…`) is
    /// [`Error::AmbiguousKey`] when a value holds a delimiter, [`Error::MalformedKey`] when the
    /// layout is broken, never a wrong value.
    pub fn decode_generated(&self, encoded: &str) -> Result<Item> {
        let mut item = Item::default();
        if encoded.is_empty() {
            return Ok(item);
        }
        let d = &self.table.delimiters;
        let mut segments = encoded.split(&*d.generated_key).peekable();
        if let Some(first) = segments.next_if(|s| self.is_hash_key_segment(s)) {
            item.insert(
                self.table.hash_key.to_string(),
                AttributeValue::S(first.to_owned()),
            );
        }
        let sharded = !item.is_empty();
        let mut names: Vec<&str> = Vec::new();
        let mut values: Vec<&str> = Vec::new();
        for segment in segments {
            let mut parts = segment.split(&*d.generated_value);
            let (Some(name), Some(value), None) = (parts.next(), parts.next(), parts.next()) else {
                // a value holding a delimiter cuts the key at it: name that value's property
                return Err(self.ambiguity(encoded).unwrap_or_else(|| {
                    self.malformed(
                        segment,
                        format!("expected `<property>{}<value>`", d.generated_value),
                    )
                }));
            };
            if let Some(delimiter) = d.find_in(value) {
                // the segment may be a piece of an earlier value cut at a delimiter (`ann|b!e`
                // reads as a component `b`): name the property whose value holds it
                return Err(self.ambiguity(encoded).unwrap_or_else(|| {
                    if self.model.property(name).is_some() {
                        Error::AmbiguousKey {
                            entity: self.entity(),
                            property: name.to_owned(),
                            value: value.to_owned(),
                            delimiter: delimiter.to_owned(),
                        }
                    } else {
                        self.malformed(
                            segment,
                            format!("`{name}` is no property of the entity, and `{value}` holds the delimiter {delimiter:?}"),
                        )
                    }
                }));
            }
            if self.model.property(name).is_none() {
                return Err(self.ambiguity(encoded).unwrap_or_else(|| {
                    Error::UnknownTranscodedProperty {
                        entity: self.entity(),
                        property: name.to_owned(),
                    }
                }));
            }
            if names.contains(&name) {
                return Err(self.malformed(segment, format!("property `{name}` appears twice")));
            }
            names.push(name);
            values.push(value);
        }
        // the layout first: a key of no layout of the entity is malformed, whatever its values
        // decode to (a value that holds a delimiter can split into components that decode to
        // nothing)
        if !self.is_key_layout(sharded, &names) {
            if let Some(ambiguous) = self.ambiguity(encoded) {
                return Err(ambiguous);
            }
            return Err(self.malformed(
                encoded,
                format!(
                    "the components [{}] are not those of a {} generated property of the entity, nor its range key",
                    names.join(", "),
                    if sharded { "sharded" } else { "unsharded" },
                ),
            ));
        }
        for (name, value) in names.into_iter().zip(values) {
            if !value.is_empty() {
                item.insert(name.to_owned(), self.decode_component(name, value)?);
            }
        }
        Ok(item)
    }

    /// The ambiguity of a key that is read as one of the entity's layouts (a generated
    /// property, or the range key) only when a value holds a delimiter: the first component
    /// whose value does, as [`Error::AmbiguousKey`]. Each value is taken to end where the
    /// next component's `<delimiter><name><gvd>` begins. `None` when no layout reads it so.
    fn ambiguity(&self, encoded: &str) -> Option<Error> {
        let d = &self.table.delimiters;
        let (gk, gv) = (&*d.generated_key, &*d.generated_value);
        if gk.is_empty() || gv.is_empty() {
            return None;
        }
        let unique = [&*self.model.unique_property];
        let layouts = self
            .model
            .generated
            .iter()
            .map(|g| {
                (
                    g.kind == GeneratedKind::Sharded,
                    g.components.iter().map(|c| &**c).collect::<Vec<&str>>(),
                )
            })
            .chain(std::iter::once((false, unique.to_vec())));
        for (sharded, names) in layouts {
            let mut rest = encoded;
            if sharded {
                let Some(end) = rest.find(gk) else { continue };
                if !self.is_hash_key_segment(&rest[..end]) {
                    continue;
                }
                rest = &rest[end + gk.len()..];
            }
            let mut values: Vec<&str> = Vec::with_capacity(names.len());
            for (i, name) in names.iter().enumerate() {
                let Some(after) = rest.strip_prefix(*name).and_then(|r| r.strip_prefix(gv)) else {
                    break;
                };
                match names.get(i + 1) {
                    None => {
                        values.push(after);
                        rest = "";
                    }
                    Some(next) => {
                        let marker = format!("{gk}{next}{gv}");
                        let Some(end) = after.find(&marker) else {
                            break;
                        };
                        values.push(&after[..end]);
                        rest = &after[end + gk.len()..];
                    }
                }
            }
            if values.len() != names.len() || names.is_empty() {
                continue;
            }
            for (name, value) in names.iter().zip(values) {
                if let Some(delimiter) = d.find_in(value) {
                    return Some(Error::AmbiguousKey {
                        entity: self.entity(),
                        property: (*name).to_owned(),
                        value: value.to_owned(),
                        delimiter: delimiter.to_owned(),
                    });
                }
            }
        }
        None
    }

    /// Whether a leading key segment is a hash key of this entity:
    /// `<token><shard key delimiter><suffix>`, the suffix free of delimiters.
    fn is_hash_key_segment(&self, segment: &str) -> bool {
        let d = &self.table.delimiters;
        segment
            .strip_prefix(&*self.model.token)
            .and_then(|rest| rest.strip_prefix(&*d.shard_key))
            .is_some_and(|suffix| d.find_in(suffix).is_none())
    }

    /// Whether the component names of a decoded key are, in order, those of one of the
    /// entity's generated properties of that side (or the unique property, for a range key).
    /// A hash key alone is the empty sharded layout.
    fn is_key_layout(&self, sharded: bool, names: &[&str]) -> bool {
        if sharded && names.is_empty() {
            return true;
        }
        let kind = if sharded {
            GeneratedKind::Sharded
        } else {
            GeneratedKind::Unsharded
        };
        let generated = self.model.generated.iter().any(|g| {
            g.kind == kind
                && g.components.len() == names.len()
                && g.components.iter().zip(names).all(|(c, n)| c == n)
        });
        generated || (!sharded && names == [&*self.model.unique_property])
    }

    fn malformed(&self, segment: &str, reason: String) -> Error {
        Error::MalformedKey {
            entity: self.entity(),
            segment: segment.to_owned(),
            reason,
        }
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
        let mut updates = self.key_updates(item, overwrite)?;
        self.check_key_updates(item, updates.slots())?;
        let room = item.len() + updates.writes();
        // A copy with room for the keys: a plain clone when the item has that room, else the
        // attributes inserted into a map of the final size (growing a clone would hash every
        // attribute as well, after copying the table once for nothing).
        let mut keyed = if item.capacity() >= room {
            item.clone()
        } else {
            let mut keyed = Item::default();
            keyed.reserve(room);
            for (name, value) in item.iter() {
                keyed.insert(name.clone(), value.clone());
            }
            keyed
        };
        self.write_key_updates(&mut keyed, &mut updates);
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
        let mut updates = self.key_updates(item, overwrite)?;
        self.check_key_updates(item, updates.slots())?;
        self.write_key_updates(item, &mut updates);
        Ok(())
    }

    /// Writes checked key updates into `item`.
    fn write_key_updates(&self, item: &mut Item, updates: &mut KeyUpdates) {
        item.reserve(updates.writes());
        let names = [&self.table.hash_key, &self.table.range_key]
            .into_iter()
            .chain(self.model.generated.iter().map(|g| &g.name));
        for (name, update) in names.zip(updates.slots_mut()) {
            match std::mem::replace(update, KeyUpdate::Keep) {
                KeyUpdate::Write(value) => {
                    item.insert(name.to_string(), AttributeValue::S(value));
                }
                KeyUpdate::Remove => {
                    item.remove(&**name);
                }
                KeyUpdate::Keep | KeyUpdate::Absent => {}
            }
        }
    }

    /// The key attributes `add_keys` writes or removes, by slot, computed from the item without
    /// changing it.
    fn key_updates(&self, item: &Item, overwrite: bool) -> Result<KeyUpdates> {
        let table = self.table;
        let mut updates = KeyUpdates::new(2 + self.model.generated.len());
        // each component is looked up and encoded once, however many keys it appears in
        let mut components = Components::new(item);
        let existing_hash_key = if overwrite {
            None
        } else {
            truthy_str(item, &table.hash_key)
        };
        let hash_key = match existing_hash_key {
            Some(_) => None,
            None => Some(self.hash_key_with(&mut components)?),
        };
        let range_key = if overwrite || truthy_str(item, &table.range_key).is_none() {
            Some(self.range_key_with(&mut components)?)
        } else {
            None
        };
        let sharded_on = hash_key
            .as_deref()
            .or(existing_hash_key)
            .filter(|h| !h.is_empty());
        for (i, generated) in self.model.generated.iter().enumerate() {
            let missing = if overwrite {
                false
            } else {
                match attribute(item, &generated.name) {
                    Some(AttributeValue::Null(_)) => false,
                    Some(_) => continue,
                    None => true,
                }
            };
            let value = self.generated_value(generated, &mut components, sharded_on)?;
            updates.set(
                2 + i,
                match value {
                    Some(value) => KeyUpdate::Write(value),
                    None if missing => KeyUpdate::Absent,
                    None => KeyUpdate::Remove,
                },
            );
        }
        if let Some(hash_key) = hash_key {
            updates.set(0, KeyUpdate::Write(hash_key));
        }
        if let Some(range_key) = range_key {
            updates.set(1, KeyUpdate::Write(range_key));
        }
        Ok(updates)
    }

    /// Removes the hash key, the range key and every generated property the entity declares.
    pub fn remove_keys(&self, item: &Item) -> Item {
        let mut stripped = item.clone();
        self.strip_keys(&mut stripped);
        stripped
    }

    /// [`remove_keys`](Self::remove_keys) in place, without copying the item; gives back the
    /// table hash and range key values it took off.
    pub(crate) fn strip_keys(
        &self,
        item: &mut Item,
    ) -> (Option<AttributeValue>, Option<AttributeValue>) {
        let keys = (
            item.remove(&*self.table.hash_key),
            item.remove(&*self.table.range_key),
        );
        for generated in self.model.generated.iter() {
            item.remove(&*generated.name);
        }
        keys
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

impl EntitySchema<'_> {
    /// [`check_key_sizes`](Self::check_key_sizes) of `item` once the key updates (by slot, see
    /// [`KeyLimit::slot`](crate::schema::KeyLimit::slot)) are written: the write path's check,
    /// which finds each computed key by its slot and looks up only the keys it does not write.
    pub(crate) fn check_key_updates(&self, item: &Item, updates: &[KeyUpdate]) -> Result<()> {
        for limit in self.key_limits {
            let bytes = match limit.slot.and_then(|slot| updates.get(slot)) {
                Some(KeyUpdate::Write(value)) => Some(value.len()),
                Some(KeyUpdate::Remove | KeyUpdate::Absent) => None,
                Some(KeyUpdate::Keep) | None => {
                    attribute(item, &limit.attribute).and_then(key_value_bytes)
                }
            };
            limit.check(self, bytes)?;
        }
        for group in self.key_groups {
            group.check(self, |name, slot| {
                match slot.and_then(|slot| updates.get(slot)) {
                    Some(KeyUpdate::Write(value)) => Some(value.len()),
                    Some(KeyUpdate::Remove | KeyUpdate::Absent) => None,
                    Some(KeyUpdate::Keep) | None => {
                        attribute(item, name).map(crate::store::value::value_bytes)
                    }
                }
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! The write path against a plain reference: every key built with `format!` from the rules,
    //! on a model with more generated properties than the inline update slots and a generated
    //! property with more components than the remembered ones.

    use std::borrow::Cow;

    use proptest::prelude::*;

    use super::*;
    use crate::model::{EntityModel, GeneratedKind, Index, Projection, Property, TableModel};
    use crate::schema::Schema;
    use crate::transcode;

    /// `p0` … `p19`: more than [`REMEMBERED`].
    const STRINGS: usize = 20;

    fn string_name(i: usize) -> String {
        format!("p{i}")
    }

    /// Twelve generated properties (more than [`INLINE_UPDATES`] with the table's two keys):
    /// sharded and unsharded, atomic and not, one over every string property and `created`.
    fn generated() -> Vec<(String, GeneratedKind, bool, Vec<String>)> {
        let mut all = vec![
            (
                "idPK".into(),
                GeneratedKind::Sharded,
                true,
                vec!["id".into()],
            ),
            (
                "widePK".into(),
                GeneratedKind::Sharded,
                true,
                vec!["p0".into(), "p1".into()],
            ),
            (
                "allRK".into(),
                GeneratedKind::Unsharded,
                true,
                (0..STRINGS)
                    .map(string_name)
                    .chain(["created".into(), "score".into()])
                    .collect(),
            ),
        ];
        for i in 0..9 {
            all.push((
                format!("g{i}RK"),
                GeneratedKind::Unsharded,
                i % 2 == 0,
                vec![string_name(i), "score".into(), string_name(i + 7)],
            ));
        }
        all
    }

    fn schema() -> Result<Schema> {
        let mut properties = vec![
            Property::new("id", transcode::STRING),
            Property::new("created", transcode::TIMESTAMP),
            Property::new("score", transcode::INT),
        ];
        properties.extend((0..STRINGS).map(|i| Property {
            name: Cow::Owned(string_name(i)),
            transcode: transcode::STRING,
        }));
        let generated: Vec<GeneratedProperty> = generated()
            .into_iter()
            .map(|(name, kind, atomic, components)| GeneratedProperty {
                name: Cow::Owned(name),
                kind,
                atomic,
                components: components.into_iter().map(Cow::Owned).collect(),
            })
            .collect();
        let indexes = generated
            .iter()
            .map(|g| {
                let (hash_key, range_key) = if g.is_sharded() {
                    (g.name.clone(), Cow::Borrowed("created"))
                } else {
                    (Cow::Borrowed("hashKey"), g.name.clone())
                };
                Index {
                    name: Cow::Owned(format!("by_{}", g.name)),
                    hash_key,
                    range_key,
                    projection: Projection::All,
                    multi: None,
                }
            })
            .collect();
        let entity = EntityModel {
            token: Cow::Borrowed("thing"),
            unique_property: Cow::Borrowed("id"),
            timestamp_property: Cow::Borrowed("created"),
            shard_bumps: Cow::Owned(vec![
                ShardBump::new(1_000, 2, 1),
                ShardBump::new(2_000, 3, 2),
            ]),
            default_limit: 10,
            default_page_size: 10,
            properties: Cow::Owned(properties),
            generated: Cow::Owned(generated),
            indexes: Cow::Owned(indexes),
        };
        Ok(Schema::new(TableModel::DEFAULT, vec![entity])?)
    }

    /// The reference encoding of a present value: `None` when it encodes as absent (an empty
    /// string), `Err` when the transcode or the delimiters refuse it.
    fn reference_encode(
        name: &str,
        value: &AttributeValue,
    ) -> std::result::Result<Option<String>, ()> {
        let encoded = match (name, value) {
            ("created", AttributeValue::N(n)) => {
                let v: u64 = n.parse().map_err(|_| ())?;
                if v > 9_999_999_999_999 {
                    return Err(());
                }
                format!("{v:013}")
            }
            ("score", AttributeValue::N(n)) => {
                let v: i64 = n.parse().map_err(|_| ())?;
                if v < 0 {
                    format!("n{:016}", 10_000_000_000_000_000 - i128::from(v).abs())
                } else {
                    format!("p{v:016}")
                }
            }
            ("created" | "score", _) => return Err(()),
            (_, AttributeValue::S(s)) => s.clone(),
            _ => return Err(()),
        };
        if encoded.contains(['|', '#', '!']) {
            return Err(());
        }
        Ok((!encoded.is_empty()).then_some(encoded))
    }

    fn reference_value(item: &Item, name: &str) -> std::result::Result<Option<String>, ()> {
        match item.get(name) {
            None | Some(AttributeValue::Null(_)) => Ok(None),
            Some(value) => reference_encode(name, value),
        }
    }

    fn reference_hash_key(item: &Item) -> std::result::Result<String, ()> {
        let created = match item.get("created") {
            Some(AttributeValue::N(n)) => n.parse::<u64>().map_err(|_| ())?,
            _ => return Err(()),
        };
        let bump = [
            ShardBump::UNSHARDED,
            ShardBump::new(1_000, 2, 1),
            ShardBump::new(2_000, 3, 2),
        ]
        .into_iter()
        .rev()
        .find(|b| b.timestamp <= created)
        .ok_or(())?;
        if bump.chars == 0 {
            return Ok("thing!".to_owned());
        }
        let id = match item.get("id") {
            Some(AttributeValue::S(s)) if !s.is_empty() => s,
            _ => return Err(()),
        };
        Ok(format!(
            "thing!{}",
            shard::suffix(
                {
                    // the native shard hash: SHA-256's first 8 bytes, big-endian
                    use sha2::Digest as _;
                    let d = sha2::Sha256::digest(id.as_bytes());
                    u64::from_be_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
                },
                bump,
                TableModel::DEFAULT.shard_space
            )
        ))
    }

    /// `add_keys` (or `refresh_keys`) by the rules, on a copy.
    fn reference_add_keys(item: &Item, overwrite: bool) -> std::result::Result<Item, ()> {
        let truthy =
            |name: &str| matches!(item.get(name), Some(AttributeValue::S(s)) if !s.is_empty());
        let mut keyed = item.clone();
        let hash_key = if overwrite || !truthy("hashKey") {
            Some(reference_hash_key(item)?)
        } else {
            None
        };
        if overwrite || !truthy("rangeKey") {
            let id = reference_value(item, "id")?.ok_or(())?;
            keyed.insert("rangeKey".into(), AttributeValue::S(format!("id#{id}")));
        }
        let sharded_on = match (&hash_key, item.get("hashKey")) {
            (Some(h), _) => Some(h.clone()),
            (None, Some(AttributeValue::S(h))) if !h.is_empty() => Some(h.clone()),
            _ => None,
        };
        for (name, kind, atomic, components) in generated() {
            if !overwrite && !matches!(item.get(&name), None | Some(AttributeValue::Null(_))) {
                continue;
            }
            let mut parts = Vec::new();
            let mut value = Some(());
            if kind == GeneratedKind::Sharded {
                match &sharded_on {
                    Some(h) => parts.push(h.clone()),
                    None => value = None,
                }
            }
            if value.is_some() {
                for component in &components {
                    match reference_value(item, component)? {
                        Some(v) => parts.push(format!("{component}#{v}")),
                        None if atomic => {
                            value = None;
                            break;
                        }
                        None => parts.push(format!("{component}#")),
                    }
                }
            }
            match value {
                Some(()) => {
                    keyed.insert(name, AttributeValue::S(parts.join("|")));
                }
                None => {
                    keyed.remove(&name);
                }
            }
        }
        if let Some(hash_key) = hash_key {
            keyed.insert("hashKey".into(), AttributeValue::S(hash_key));
        }
        Ok(keyed)
    }

    /// A property value: missing, `NULL`, or a short string (sometimes empty, sometimes with a
    /// delimiter).
    fn value() -> impl Strategy<Value = Option<AttributeValue>> {
        prop_oneof![
            2 => Just(None),
            1 => Just(Some(AttributeValue::Null(true))),
            8 => "[a-c]{0,3}".prop_map(|s| Some(AttributeValue::S(s))),
            1 => "[a-c|#!]{1,3}".prop_map(|s| Some(AttributeValue::S(s))),
        ]
    }

    prop_compose! {
        fn an_item()(
            strings in proptest::collection::vec(value(), STRINGS),
            id in value(),
            created in prop_oneof![
                1 => Just(None),
                8 => (0u64..3_000).prop_map(|v| Some(AttributeValue::N(v.to_string()))),
                1 => Just(Some(AttributeValue::N("-1".into()))),
            ],
            score in proptest::option::of(-100i64..100),
            // existing keys: an existing non-empty key is kept by add_keys, an empty one is not
            hash_key in proptest::option::of("(thing![0-7]{0,2})?"),
            range_key in proptest::option::of("(id#[a-c]{1,2})?"),
            existing in proptest::collection::vec(proptest::option::of("[a-z]{0,2}"), 12),
        ) -> Item {
            let mut item = Item::default();
            let mut set = |name: String, value: Option<AttributeValue>| {
                if let Some(value) = value {
                    item.insert(name, value);
                }
            };
            for (i, v) in strings.into_iter().enumerate() {
                set(string_name(i), v);
            }
            set("id".into(), id);
            set("created".into(), created);
            set("score".into(), score.map(|v| AttributeValue::N(v.to_string())));
            set("hashKey".into(), hash_key.map(AttributeValue::S));
            set("rangeKey".into(), range_key.map(AttributeValue::S));
            for ((name, ..), v) in generated().into_iter().zip(existing) {
                set(name, v.map(AttributeValue::S));
            }
            item
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1_000))]

        #[test]
        fn add_and_refresh_keys_follow_the_rules(item in an_item()) {
            let schema = schema().map_err(|e| TestCaseError::fail(e.to_string()))?;
            let entity = schema.entity("thing").map_err(|e| TestCaseError::fail(e.to_string()))?;
            for overwrite in [false, true] {
                let expected = reference_add_keys(&item, overwrite).ok();
                let copied = if overwrite { entity.refresh_keys(&item) } else { entity.add_keys(&item) };
                prop_assert_eq!(copied.as_ref().ok(), expected.as_ref(), "overwrite {}", overwrite);
                let mut in_place = item.clone();
                let result = entity.add_keys_in_place(&mut in_place, overwrite);
                if let Some(expected) = expected {
                    prop_assert!(result.is_ok());
                    prop_assert_eq!(in_place, expected);
                } else {
                    // an error leaves the item unchanged
                    prop_assert_eq!(in_place, item.clone());
                }
            }
        }
    }

    fn encoded_text<'a>(
        entity: &EntitySchema<'a>,
        components: &mut Components<'a, '_>,
        name: &'a str,
    ) -> Result<String> {
        let range = components.encoded(entity, name)?;
        Ok(range
            .map(|r| components.text(r).to_owned())
            .unwrap_or_default())
    }

    #[test]
    fn scratch_buffers_are_kept_small_and_never_shared() -> Result<()> {
        let schema = schema()?;
        let entity = schema.entity("thing")?;
        let item = |p0: String| {
            let mut item = Item::default();
            item.insert("p0".into(), AttributeValue::S(p0));
            item.insert("p1".into(), AttributeValue::S("b".into()));
            item
        };
        // a buffer grown too large is dropped, not kept for the next computation
        let large = item("a".repeat(SCRATCH_KEPT + 1));
        let mut components = Components::new(&large);
        assert_eq!(
            encoded_text(&entity, &mut components, "p0")?,
            "a".repeat(SCRATCH_KEPT + 1)
        );
        drop(components);
        assert_eq!(SCRATCH.with(Cell::take).capacity(), 0);
        // a small one is kept, empty
        let small = item("a".into());
        let mut components = Components::new(&small);
        assert_eq!(encoded_text(&entity, &mut components, "p0")?, "a");
        drop(components);
        let kept = SCRATCH.with(Cell::take);
        assert!(kept.is_empty() && kept.capacity() > 0);
        SCRATCH.with(|s| s.set(kept));
        // a computation inside another one gets a buffer of its own
        let mut outer = Components::new(&small);
        assert_eq!(encoded_text(&entity, &mut outer, "p0")?, "a");
        let mut inner = Components::new(&large);
        assert_eq!(encoded_text(&entity, &mut inner, "p1")?, "b");
        assert_eq!(
            encoded_text(&entity, &mut inner, "p0")?,
            "a".repeat(SCRATCH_KEPT + 1)
        );
        drop(inner);
        assert_eq!(encoded_text(&entity, &mut outer, "p1")?, "b");
        assert_eq!(encoded_text(&entity, &mut outer, "p0")?, "a");
        Ok(())
    }
}
