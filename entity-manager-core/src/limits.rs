//! Every limit and default, as named constants in one place: DynamoDB's size limits, the
//! limits of a configuration (indexes, shard bumps) and the defaults of a table and an entity.
//! The module depends on nothing else in the crate; the rules (`Schema::new`, the derive, the
//! TypeScript loader) and the stores read their numbers here.
//!
//! DynamoDB's size limits are checked before any store call so that every store gives the same
//! verdict on every input (`MemoryStore` enforces them too).
//!
//! From the DynamoDB developer guide ("Service, account, and table quotas"): a partition key
//! value is at most 2,048 bytes, a sort key value at most 1,024 bytes (for the table's keys and
//! every GSI key alike), and an item at most 400 KB (409,600 bytes, attribute names included).
//! String key values count their UTF-8 bytes, binary ones their raw bytes; number key values are
//! bounded by the 38-digit precision rule instead.

use serde_dynamo::AttributeValue;

/// The largest partition (hash) key value, in bytes.
pub const MAX_PARTITION_KEY_BYTES: usize = 2_048;

/// The largest sort (range) key value, in bytes.
pub const MAX_SORT_KEY_BYTES: usize = 1_024;

/// The largest item, in bytes (400 KB), attribute names included.
pub const MAX_ITEM_BYTES: usize = 400 * 1_024;

/// The most data one `Query` or `Scan` page reads (1 MB), counted as item sizes are (the
/// index entry's size for a secondary index), before any filter: the page ends after the item
/// that brings the total to this size or past it, with a `LastEvaluatedKey` when more items
/// follow.
pub const MAX_PAGE_BYTES: usize = 1_024 * 1_024;

// ---------------------------------------------------------------------------------------------
// DynamoDB expressions
//
// From the DynamoDB developer guide ("Constraints", expression parameters), each checked against
// DynamoDB Local 2.x (see the store conformance suite):
//
// - every expression string (condition, update, key condition, filter, projection) is at most
//   4 KB: 4,096 bytes pass, 4,097 are refused;
// - an expression holds at most 300 operators and functions: 301 are refused. In a condition,
//   filter or key condition every comparison, `BETWEEN`, `IN`, `AND`, `OR`, `NOT` and function
//   (`attribute_exists`, `attribute_not_exists`, `attribute_type`, `begins_with`, `contains`,
//   `size`) counts one; in an update expression `+`, `-`, `if_not_exists` and `list_append`
//   count one each (the `=` of `SET`, `REMOVE`, `ADD` and `DELETE` do not). Each expression of
//   a request is counted on its own;
// - `IN` takes at most 100 operands;
// - an expression attribute name placeholder (`#name`) is at most 255 bytes;
// - all the substitution variables of a request (`ExpressionAttributeNames` and
//   `ExpressionAttributeValues`) are at most 2 MB together. DynamoDB Local is stricter than
//   documented here (it refuses one value of about 1 MiB, and three of 600,000 bytes); the
//   stores enforce the documented 2 MB, so only a request with between about 1 and 2 MB of
//   substitution values can pass `MemoryStore` and fail on DynamoDB Local.

/// The longest expression string, in bytes (4 KB), for every kind of expression.
pub const MAX_EXPRESSION_BYTES: usize = 4_096;

/// The most operators and functions one expression may hold.
pub const MAX_EXPRESSION_OPERATORS: usize = 300;

/// The most operands of one `IN`.
pub const MAX_IN_OPERANDS: usize = 100;

/// The longest expression attribute name placeholder (`#name`), in bytes.
pub const MAX_NAME_PLACEHOLDER_BYTES: usize = 255;

/// The largest total of a request's substitution variables (names and values), in bytes (2 MB).
pub const MAX_SUBSTITUTION_BYTES: usize = 2 * 1_024 * 1_024;

/// Which expression of a request a limit applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExpressionKind {
    /// `ConditionExpression` (a write's [`Expect`](crate::store::Expect)).
    Condition,
    /// `UpdateExpression`.
    Update,
    /// `KeyConditionExpression` (a query).
    KeyCondition,
    /// `FilterExpression` (a query or a scan).
    Filter,
    /// `ProjectionExpression`.
    Projection,
    /// `ExpressionAttributeNames` and `ExpressionAttributeValues` of the whole request.
    Substitutions,
}

impl ExpressionKind {
    /// The request parameter, as `DynamoDB` names it (`"UpdateExpression"`…).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Condition => "ConditionExpression",
            Self::Update => "UpdateExpression",
            Self::KeyCondition => "KeyConditionExpression",
            Self::Filter => "FilterExpression",
            Self::Projection => "ProjectionExpression",
            Self::Substitutions => "ExpressionAttributeNames and ExpressionAttributeValues",
        }
    }
}

impl std::fmt::Display for ExpressionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which limit of an expression was exceeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExpressionLimit {
    /// The length of the expression string, in bytes: at most [`MAX_EXPRESSION_BYTES`].
    Length,
    /// The operators and functions of the expression: at most [`MAX_EXPRESSION_OPERATORS`].
    Operators,
    /// The bytes of all substitution variables: at most [`MAX_SUBSTITUTION_BYTES`].
    SubstitutionBytes,
}

impl ExpressionLimit {
    /// The largest value this limit allows.
    pub const fn max(self) -> usize {
        match self {
            Self::Length => MAX_EXPRESSION_BYTES,
            Self::Operators => MAX_EXPRESSION_OPERATORS,
            Self::SubstitutionBytes => MAX_SUBSTITUTION_BYTES,
        }
    }

    /// What the limit counts (`"bytes"`, `"operators"`).
    pub const fn unit(self) -> &'static str {
        match self {
            Self::Length | Self::SubstitutionBytes => "bytes",
            Self::Operators => "operators and functions",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// the configuration: limits and defaults

/// The most global secondary indexes `DynamoDB` allows on one table.
pub const MAX_INDEXES: usize = 20;
/// The longest shard suffix, in characters.
pub const MAX_CHARS: u8 = 40;
/// The widest suffix character, in bits (radix 32).
pub const MAX_CHAR_BITS: u8 = 5;
/// The default table hash (partition) key attribute name.
pub const DEFAULT_HASH_KEY: &str = "hashKey";
/// The default table range (sort) key attribute name.
pub const DEFAULT_RANGE_KEY: &str = "rangeKey";
/// The default delimiter between the parts of a generated property.
pub const DEFAULT_GENERATED_KEY_DELIMITER: &str = "|";
/// The default delimiter between a component's name and its value.
pub const DEFAULT_GENERATED_VALUE_DELIMITER: &str = "#";
/// The default delimiter between the entity token and the shard suffix.
pub const DEFAULT_SHARD_KEY_DELIMITER: &str = "!";
/// The default number of shard queries in flight.
pub const DEFAULT_THROTTLE: usize = 10;
/// The default number of items a query returns.
pub const DEFAULT_LIMIT: usize = 10;
/// The default number of items one shard query reads.
pub const DEFAULT_PAGE_SIZE: usize = 10;

// ---------------------------------------------------------------------------------------------
// a table definition

/// The shortest and the longest GSI name DynamoDB accepts.
pub const INDEX_NAME_LENGTH: (usize, usize) = (3, 255);
/// At most this many local secondary indexes per table (a hard `DynamoDB` limit).
pub const MAX_LOCAL_INDEXES: usize = 5;
/// At most this many tags per resource.
pub const MAX_TAGS: usize = 50;
/// At most this many `INCLUDE` attributes over all the indexes of a table.
pub const MAX_PROJECTED_ATTRIBUTES: usize = 100;

// ---------------------------------------------------------------------------------------------
// DynamoDB key values

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

/// The values of a key's attributes over DynamoDB's limit together: `Some(total)` when the
/// `sizes` of its present values (the partition attributes of an index together, or its sort
/// attributes together; one attribute for a classic key) add up to more than
/// [`KeyRole::max_bytes`]. The one home of the rule for written items, checked by `MemoryStore`
/// on every write and by the entity layer (`add_keys`, `to_item`) before any store call.
///
/// Each present value counts its size as an item's size counts it (a string its UTF-8 bytes, a
/// binary its bytes, a number its stored size: 1 byte, and 1 more per two significant digits);
/// an absent attribute counts nothing, and an item lacking one is checked all the same (so a
/// sparse index does not exempt it). Checked against DynamoDB Local 2.x: `PutItem` of sort
/// attributes of 1,022 bytes, the number `1` and `"a"` is refused ("Aggregate size for RANGE key
/// attributes s0, s1, s2 of index multi has exceeded limit 1024 bytes, with actual size 1025
/// bytes"), of 1,021 bytes accepted; partition attributes of 2,000 and 49 bytes refused, of
/// 2,000 and 48 accepted. A key condition is not held to it (DynamoDB Local accepts an equality
/// prefix and a condition of 600 bytes each, and partition values of 1,500 bytes each: a bound
/// need not be a stored value); each sort value of a condition is ([`sort_value_fits`]).
pub(crate) fn key_total_over(
    role: KeyRole,
    sizes: impl IntoIterator<Item = usize>,
) -> Option<usize> {
    let total: usize = sizes.into_iter().sum();
    (total > role.max_bytes()).then_some(total)
}

/// Whether a key value is empty: an empty string or binary, which DynamoDB refuses as a key
/// attribute's value, in an item and in every value of a key condition alike (the partition
/// values, the equality prefix, the condition of every operator, `begins_with` and either end of
/// `BETWEEN` included: checked against DynamoDB Local 2.x, "The `AttributeValue` for a key
/// attribute cannot contain an empty string value"). The one home of that rule: `MemoryStore`
/// checks items and key conditions with it, the query builders their conditions.
pub(crate) fn empty_key_value(value: &AttributeValue) -> bool {
    key_value_bytes(value) == Some(0)
}

/// Whether a value can stand as a sort key value in a key condition: at most
/// [`MAX_SORT_KEY_BYTES`] (DynamoDB refuses a longer one, each value of a condition on its own:
/// the equality prefix of a multi-attribute key, the condition, either end of `BETWEEN`).
/// The one home of that rule: the stores check key conditions with it, the query engine the
/// boundaries of page tokens and the bounds it predicts.
pub(crate) fn sort_value_fits(value: &AttributeValue) -> bool {
    key_value_bytes(value).is_none_or(|bytes| bytes <= MAX_SORT_KEY_BYTES)
}
