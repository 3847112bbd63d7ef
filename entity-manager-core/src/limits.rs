//! DynamoDB's size limits, checked before any store call so that every store gives the same
//! verdict on every input (`MemoryStore` enforces them too).
//!
//! From the DynamoDB developer guide ("Service, account, and table quotas"): a partition key
//! value is at most 2,048 bytes, a sort key value at most 1,024 bytes (for the table's keys and
//! every GSI key alike), and an item at most 400 KB (409,600 bytes, attribute names included).
//! String key values count their UTF-8 bytes, binary ones their raw bytes; number key values are
//! bounded by the 38-digit precision rule instead.

use serde_dynamo::{AttributeValue, Item};

use crate::error::{Error, Result};
use crate::keys::{KeyUpdate, attribute};
use crate::model::{EntityModel, TableModel};
use crate::schema::EntitySchema;
use crate::transcode::KeyType;

/// The largest partition (hash) key value, in bytes.
pub const MAX_PARTITION_KEY_BYTES: usize = 2_048;

/// The largest sort (range) key value, in bytes.
pub const MAX_SORT_KEY_BYTES: usize = 1_024;

/// The largest item, in bytes (400 KB), attribute names included.
pub const MAX_ITEM_BYTES: usize = 400 * 1_024;

/// Which key of the table or of an index an attribute is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyRole {
    /// A partition (hash) key: at most [`MAX_PARTITION_KEY_BYTES`].
    Partition,
    /// A sort (range) key: at most [`MAX_SORT_KEY_BYTES`].
    Sort,
}

impl KeyRole {
    /// The most bytes a value of this key may have.
    pub const fn max_bytes(self) -> usize {
        match self {
            Self::Partition => MAX_PARTITION_KEY_BYTES,
            Self::Sort => MAX_SORT_KEY_BYTES,
        }
    }

    /// `"partition"` or `"sort"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Partition => "partition",
            Self::Sort => "sort",
        }
    }
}

impl std::fmt::Display for KeyRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The size DynamoDB counts for a key value: UTF-8 bytes of a string, bytes of a binary value.
/// Other types are not string-like keys and have no byte limit here.
pub(crate) fn key_value_bytes(value: &AttributeValue) -> Option<usize> {
    match value {
        AttributeValue::S(s) => Some(s.len()),
        AttributeValue::B(b) => Some(b.len()),
        _ => None,
    }
}

/// A key attribute of an entity whose values DynamoDB limits: the strictest role it has in the
/// table's key or any index key (computed once per validated schema).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KeyLimit {
    attribute: String,
    /// Whether the key core writes it (table keys, generated properties), so that its new value
    /// is among the key updates, rather than a stored property.
    computed: bool,
    /// For a computed key, its slot among the key updates: 0 the table's hash key, 1 its range
    /// key, `2 + i` the entity's `i`-th generated property.
    slot: Option<usize>,
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
        let index_keys = entity.indexes.iter().flat_map(|index| {
            [
                (Some(&*index.name), &*index.hash_key, KeyRole::Partition),
                (Some(&*index.name), &*index.range_key, KeyRole::Sort),
            ]
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
                    let slot = if attribute == &*table.hash_key {
                        Some(0)
                    } else if attribute == &*table.range_key {
                        Some(1)
                    } else {
                        entity
                            .generated
                            .iter()
                            .position(|g| g.name == attribute)
                            .map(|i| 2 + i)
                    };
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

impl EntitySchema<'_> {
    /// Checks every key value of a keyed item against DynamoDB's limits: the table's hash and
    /// range keys and the hash and range key of every index the entity declares. The first
    /// value over its limit is a [`Error::KeyTooLong`] naming the entity, the attribute, the key
    /// (table or index) and the byte length.
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
        Ok(())
    }

    /// [`check_key_sizes`](Self::check_key_sizes) of `item` once the key updates (by slot, see
    /// [`KeyLimit::slot`]) are written: the write path's check, which finds each computed key
    /// by its slot and looks up only the keys it does not write.
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
        Ok(())
    }
}

impl KeyLimit {
    /// [`Error::KeyTooLong`] when `bytes` exceeds the limit of this key.
    fn check(&self, schema: &EntitySchema<'_>, bytes: Option<usize>) -> Result<()> {
        match bytes {
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
