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
use crate::schema::EntitySchema;

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

impl EntitySchema<'_> {
    /// Checks every key value of a keyed item against DynamoDB's limits: the table's hash and
    /// range keys and the hash and range key of every index the entity declares. The first
    /// value over its limit is a [`Error::KeyTooLong`] naming the entity, the attribute, the key
    /// (table or index) and the byte length.
    pub fn check_key_sizes(&self, item: &Item) -> Result<()> {
        let table = self.table();
        let table_keys = [
            (&*table.hash_key, KeyRole::Partition),
            (&*table.range_key, KeyRole::Sort),
        ]
        .into_iter()
        .map(|(attribute, role)| (None, attribute, role));
        let index_keys = self.model().indexes.iter().flat_map(|index| {
            [
                (Some(&*index.name), &*index.hash_key, KeyRole::Partition),
                (Some(&*index.name), &*index.range_key, KeyRole::Sort),
            ]
        });
        for (index, attribute, role) in table_keys.chain(index_keys) {
            let Some(bytes) = item.get(attribute).and_then(key_value_bytes) else {
                continue;
            };
            if bytes > role.max_bytes() {
                return Err(Error::KeyTooLong {
                    entity: self.model().token.to_string(),
                    attribute: attribute.to_owned(),
                    index: index.map(str::to_owned),
                    role,
                    bytes,
                });
            }
        }
        Ok(())
    }
}
