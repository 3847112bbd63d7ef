//! The crate's error types.

use std::fmt;

use crate::transcode::TranscodeError;

/// A `Result` whose error defaults to this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while building, reading or using keys.
///
/// Every variant names the entity and the property, index or value at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration is invalid; every problem found is listed.
    #[error(transparent)]
    Config(#[from] ConfigError),

    /// No entity has this token.
    #[error("unknown entity `{entity}`; the schema has: {known}")]
    UnknownEntity {
        /// The token asked for.
        entity: String,
        /// The tokens the schema has, comma-separated.
        known: String,
    },

    /// The entity has no index of this name.
    #[error("entity `{entity}` has no index `{index}`")]
    UnknownIndex {
        /// The entity token.
        entity: String,
        /// The index token asked for.
        index: String,
    },

    /// The entity has no generated property of this name.
    #[error("entity `{entity}` has no generated property `{property}`")]
    UnknownGeneratedProperty {
        /// The entity token.
        entity: String,
        /// The property asked for.
        property: String,
    },

    /// A key names a property that is not a transcoded property of the entity.
    #[error(
        "`{property}` is not a transcoded property of entity `{entity}`, so it cannot appear in a key"
    )]
    UnknownTranscodedProperty {
        /// The entity token.
        entity: String,
        /// The property named in the key.
        property: String,
    },

    /// A hash-key space was asked of an unsharded generated property.
    #[error(
        "generated property `{property}` of entity `{entity}` is not sharded, so it has no hash key space; use the table hash key or a sharded generated property"
    )]
    NotSharded {
        /// The entity token.
        entity: String,
        /// The unsharded property.
        property: String,
    },

    /// The item lacks the entity's timestamp property, which picks its shard.
    #[error(
        "item of entity `{entity}` lacks its timestamp property `{property}`, which picks its shard; set it, or pass the existing hash key"
    )]
    MissingTimestamp {
        /// The entity token.
        entity: String,
        /// The timestamp property.
        property: String,
    },

    /// The item lacks the entity's unique property.
    #[error(
        "item of entity `{entity}` lacks its unique property `{property}`, which identifies the record"
    )]
    MissingUnique {
        /// The entity token.
        entity: String,
        /// The unique property.
        property: String,
    },

    /// A sharded generated property cannot be built because a component is missing.
    #[error(
        "item does not support the hash key space of `{property}` (entity `{entity}`): component `{component}` is missing"
    )]
    MissingComponent {
        /// The entity token.
        entity: String,
        /// The sharded generated property.
        property: String,
        /// The first missing component.
        component: String,
    },

    /// A key component's encoded value contains a delimiter, which would make keys ambiguous.
    #[error(
        "value {value:?} of `{property}` (entity `{entity}`) contains the delimiter {delimiter:?}, which would make its keys ambiguous; remove it from the value or configure other delimiters"
    )]
    DelimiterInValue {
        /// The entity token.
        entity: String,
        /// The property whose value is at fault.
        property: String,
        /// The encoded value.
        value: String,
        /// The delimiter found in it.
        delimiter: String,
    },

    /// A value could not be encoded, or a key segment decoded, by the property's transcode.
    #[error("property `{property}` of entity `{entity}`: {source}")]
    Transcode {
        /// The entity token.
        entity: String,
        /// The property.
        property: String,
        /// What the transcode reported (boxed to keep `Error` small).
        #[source]
        source: Box<TranscodeError>,
    },

    /// The item's timestamp property holds something that is not a timestamp.
    #[error(
        "timestamp property `{property}` of entity `{entity}` holds {value}, not a whole number of milliseconds in 0..=9999999999999"
    )]
    InvalidTimestamp {
        /// The entity token.
        entity: String,
        /// The timestamp property.
        property: String,
        /// The offending value, rendered.
        value: String,
    },

    /// A generated key string is not in the `<name><gvd><value>` layout.
    #[error("malformed generated key segment {segment:?} (entity `{entity}`): {reason}")]
    MalformedKey {
        /// The entity token.
        entity: String,
        /// The offending segment.
        segment: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A generated key holds a delimiter inside a component value, so it cannot be read one
    /// way. This crate never writes such a key (it refuses the value); a service that does not
    /// refuse delimiters in values (TypeScript) can.
    #[error(
        "a generated key of entity `{entity}` cannot be read unambiguously: the value {value:?} of `{property}` holds the delimiter {delimiter:?}; rewrite the record without the delimiter in `{property}` (this crate refuses such values on write)"
    )]
    AmbiguousKey {
        /// The entity token.
        entity: String,
        /// The component whose value holds the delimiter.
        property: String,
        /// That value, as stored in the key.
        value: String,
        /// The delimiter found in it.
        delimiter: String,
    },

    /// A dehydrated index item has the wrong number of fields.
    #[error(
        "dehydrated item of index `{index}` (entity `{entity}`) has {found} fields, expected {expected}"
    )]
    RehydrationMismatch {
        /// The entity token.
        entity: String,
        /// The index token.
        index: String,
        /// Fields expected.
        expected: usize,
        /// Fields found.
        found: usize,
    },

    /// A record could not be converted to or from a DynamoDB item (a stored item that cannot
    /// be read as its entity's record is [`Error::Decode`], which names it).
    #[error("cannot convert a record of entity `{entity}` to or from a DynamoDB item: {source}")]
    Serde {
        /// The entity token.
        entity: String,
        /// What serde_dynamo reported.
        #[source]
        source: serde_dynamo::Error,
    },

    /// A stored item of an entity could not be read as its record (a field missing or of
    /// another type: written by hand, by another program, or under an older shape of the
    /// struct). Names the item by its table keys, so that it can be found and mended; the
    /// untyped reads ([`query::untyped`](crate::query::untyped), `Store`) still return it.
    #[error(
        "the item at {} cannot be read as a record of entity `{entity}`: {source}; mend or delete that item, or read it untyped",
        key_text(.hash_key.as_deref(), .range_key.as_deref())
    )]
    Decode {
        /// The entity token.
        entity: String,
        /// The item's table hash key (`None`: it had none, or not as a string).
        hash_key: Option<String>,
        /// The item's table range key (`None`: it had none, or not as a string).
        range_key: Option<String>,
        /// What serde_dynamo reported.
        #[source]
        source: serde_dynamo::Error,
    },

    /// A query was set up wrongly (no index, indexes with different hash keys, a zero limit…).
    #[error("invalid query of entity `{entity}`: {reason}")]
    InvalidQuery {
        /// The entity token.
        entity: String,
        /// What is wrong and what to do.
        reason: String,
    },

    /// A page token was rejected.
    #[error(transparent)]
    Token(#[from] TokenError),

    /// A shard query failed, so the whole page failed: no partial pages.
    #[error("query of shard `{hash_key}` of index `{index}` (entity `{entity}`) failed: {source}")]
    ShardQuery {
        /// The entity token.
        entity: String,
        /// The index.
        index: String,
        /// The shard's hash key value.
        hash_key: String,
        /// What the store reported.
        #[source]
        source: Box<crate::store::StoreError>,
    },

    /// A key value is longer than DynamoDB allows (partition keys 2,048 bytes, sort keys
    /// 1,024 bytes, for the table and every index; the partition attributes of a
    /// multi-attribute key together, and its sort attributes together, likewise); nothing was
    /// written.
    #[error(
        "the {role} key `{attribute}`{} of entity `{entity}` is {bytes} bytes long, more than the {max} bytes DynamoDB allows; shorten the values of its components",
        index.as_ref().map(|i| format!(" (index `{i}`)")).unwrap_or_default(),
        max = role.max_bytes()
    )]
    KeyTooLong {
        /// The entity token.
        entity: String,
        /// The key attribute (for a multi-attribute key over its aggregate limit, its
        /// partition or its sort attributes joined with ` + `, e.g. `teamId + region`).
        attribute: String,
        /// The index whose key it is, or `None` for the table's own key.
        index: Option<String>,
        /// Partition or sort key.
        role: crate::limits::KeyRole,
        /// The value's length in bytes (the values' total, for a multi-attribute key).
        bytes: usize,
    },

    /// A property that is a key attribute of an index (a plain index key, not a generated
    /// property) holds an empty string or binary, which DynamoDB refuses in any key attribute;
    /// nothing was written. A missing value (`None`) is not an error: the record is then not in
    /// the index (a sparse index).
    #[error(
        "property `{property}` of entity `{entity}` is empty, and it is the {role} key of index `{index}`: DynamoDB refuses empty strings and binaries in key attributes; give it a non-empty value, or none (`None`: the record then stays out of the index)",
        role = role.as_str()
    )]
    EmptyKey {
        /// The entity token.
        entity: String,
        /// The property (the index's key attribute).
        property: String,
        /// The index whose key it is.
        index: String,
        /// Partition or sort key.
        role: crate::limits::KeyRole,
    },

    /// A write transaction holds more actions than DynamoDB takes in one (100); nothing was
    /// sent.
    #[error(
        "a transaction of {actions} actions is more than the {limit} DynamoDB takes in one ({parts}); split it into transactions of at most {limit} actions (each commits on its own), or write fewer records in it"
    )]
    TransactionTooLarge {
        /// The actions the transaction holds.
        actions: usize,
        /// The most DynamoDB takes.
        limit: usize,
        /// Where the actions came from: per operation and entity, how many records and actions.
        parts: String,
    },

    /// An item of another entity was read as this one: its hash key does not start with this
    /// entity's token.
    #[error(
        "the item with hash key {hash_key:?} is not a record of entity `{entity}` (its hash keys start with `{entity}{delimiter}`); read it as the entity its token names"
    )]
    OtherEntity {
        /// The entity asked for.
        entity: String,
        /// The shard key delimiter.
        delimiter: String,
        /// The item's hash key value.
        hash_key: String,
    },

    /// A record with this unique value already exists (in any shard): nothing was written.
    #[error(
        "a record of entity `{entity}` with unique value {unique:?} already exists; read it, or put it to replace it"
    )]
    AlreadyExists {
        /// The entity token.
        entity: String,
        /// The unique value.
        unique: String,
    },

    /// An update would change a property that decides the primary key (the unique or the
    /// timestamp property): nothing was written.
    #[error(
        "an update of entity `{entity}` (unique value {unique:?}) changes `{property}`, which decides the record's primary key; move the record instead (EntityExt::move_record)"
    )]
    PrimaryKeyChange {
        /// The entity token.
        entity: String,
        /// The record's unique value.
        unique: String,
        /// The stored name of the property the update changed.
        property: String,
    },

    /// A read-modify-write (an update, or a delete of a record that kept moving) kept meeting
    /// concurrent changes of the record: nothing was written.
    #[error(
        "the record of entity `{entity}` with unique value {unique:?} changed under {attempts} attempts to write it; retry later"
    )]
    Conflict {
        /// The entity token.
        entity: String,
        /// The record's unique value.
        unique: String,
        /// How many times the write was tried.
        attempts: usize,
    },

    /// A write's condition did not hold for the stored record: nothing was written. The
    /// stored item (when the record exists) is in `current`; decode it with
    /// [`EntityExt::from_item`](crate::EntityExt::from_item).
    #[error(
        "the condition of a write of entity `{entity}` (unique value {unique:?}) did not hold{}; nothing was written",
        if current.is_some() { " for the stored record" } else { ": there is no stored record" }
    )]
    ConditionFailed {
        /// The entity token.
        entity: String,
        /// The record's unique value.
        unique: String,
        /// The stored item when the condition failed, if there is one.
        current: Option<Box<serde_dynamo::Item>>,
    },

    /// A write of an entity with a version field (`#[entity(version = …)]`) expected another
    /// stored version: someone wrote the record since it was read. Nothing was written; read
    /// the record again and retry.
    #[error(
        "version conflict on entity `{entity}` (unique value {unique:?}): the write expected version {expected}, the store holds {}; read the record again and retry",
        stored.as_deref().unwrap_or("no record")
    )]
    VersionConflict {
        /// The entity token.
        entity: String,
        /// The record's unique value.
        unique: String,
        /// The version the write expected (`absent` for a create).
        expected: String,
        /// The stored version, or `None` when there is no stored record.
        stored: Option<String>,
        /// The stored item, if there is one.
        current: Option<Box<serde_dynamo::Item>>,
    },

    /// A value in a condition or update could not be converted to an attribute value by
    /// serde: nothing was written.
    #[error("a value for `{property}` of entity `{entity}` cannot be stored: {source}")]
    InvalidOperand {
        /// The entity token.
        entity: String,
        /// The stored name of the field.
        property: String,
        /// What serde reported.
        #[source]
        source: serde_dynamo::Error,
    },

    /// An update is invalid for this entity (two changes of one field, a change of the version
    /// field, a change that makes the record unreadable…): nothing was written.
    #[error("invalid update of entity `{entity}` (unique value {unique:?}): {reason}")]
    InvalidUpdate {
        /// The entity token.
        entity: String,
        /// The record's unique value.
        unique: String,
        /// What is wrong and what to do.
        reason: String,
    },

    /// A put would leave a second copy of the record: one with its unique value is stored
    /// under another shard (its timestamp differs). Nothing was written; move the record
    /// ([`EntityExt::move_record`](crate::EntityExt::move_record)) to change its timestamp.
    #[error(
        "a record of entity `{entity}` with unique value {unique:?} is stored under another timestamp's shard; a put would orphan it: move the record instead (EntityExt::move_record)"
    )]
    StoredElsewhere {
        /// The entity token.
        entity: String,
        /// The unique value.
        unique: String,
    },

    /// The record to move or update does not exist: nothing was written.
    #[error("no record of entity `{entity}` with unique value {unique:?}")]
    NotFound {
        /// The entity token.
        entity: String,
        /// The unique value.
        unique: String,
    },

    /// A store call of an entity operation failed.
    #[error("{operation} of entity `{entity}` failed: {source}")]
    Store {
        /// The entity token(s).
        entity: String,
        /// The store operation (`GetItem`, `PutItem`, `TransactWriteItems`, …).
        operation: &'static str,
        /// What the store reported.
        #[source]
        source: Box<crate::store::StoreError>,
    },

    /// A batch write of an entity operation did not carry out every request; the source lists
    /// which ones were not.
    #[error("batch write of entity `{entity}` failed: {source}")]
    BatchWrite {
        /// The entity token.
        entity: String,
        /// What the store reported, with the requests not carried out.
        #[source]
        source: Box<crate::store::BatchWriteError>,
    },

    /// A batch read of an entity operation did not read every key; the source lists which.
    #[error("batch read of entity `{entity}` failed: {source}")]
    BatchGet {
        /// The entity token.
        entity: String,
        /// What the store reported, with the keys not read.
        #[source]
        source: Box<crate::store::BatchGetError>,
    },

    /// A key component was written in the other key mode: the table sharing these records is
    /// configured differently (for example a TypeScript service writes raw values while this
    /// table transcodes them). Nothing is read as a wrong value.
    #[error(
        "property `{property}` of entity `{entity}` holds {value:?}, written in the `{written}` key mode, but this table uses the `{table}` key mode; configure every service sharing the table with one profile: load the configuration with `Profile::Npm6_14` when a service of the npm release 6.14.0 shares it, `Profile::Upstream8` for TypeScript v8, `Profile::Native` when no TypeScript service does (CLI: `--key-profile npm-6.14|upstream-8|native`); the table's stamp says which (`table describe`)"
    )]
    KeyModeMismatch {
        /// The entity token.
        entity: String,
        /// The component.
        property: String,
        /// The encoded value found.
        value: String,
        /// The table's key mode.
        table: crate::model::KeyMode,
        /// The key mode the value was written in.
        written: crate::model::KeyMode,
    },

    /// A hash-key space too large to enumerate.
    #[error(
        "the hash key space of entity `{entity}` has {shards} shards, more than the {limit} that can be enumerated; narrow the time window or give the unique property"
    )]
    ShardSpaceTooLarge {
        /// The entity token.
        entity: String,
        /// The number of shards.
        shards: u128,
        /// The enumeration limit.
        limit: u128,
    },
}

/// One problem found in a configuration, located by its path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigProblem {
    /// Where the problem is, as a dotted path into the configuration (for example
    /// `entities.user.shardBumps.2`); empty for the root.
    pub path: String,
    /// What is wrong and what to do about it.
    pub message: String,
    /// The configuration rule broken, or `None` for a problem of shape (a missing field, a
    /// value of the wrong JSON type, an unknown key).
    pub rule: Option<crate::rules::ConfigRule>,
}

impl Error {
    /// An [`Error::Decode`] with the item's table keys (string keys; others are left out).
    pub(crate) fn at_keys(
        self,
        hash: Option<crate::AttributeValue>,
        range: Option<crate::AttributeValue>,
    ) -> Self {
        let text = |key: Option<crate::AttributeValue>| match key {
            Some(crate::AttributeValue::S(s)) => Some(s),
            _ => None,
        };
        match self {
            Self::Decode { entity, source, .. } => Self::Decode {
                entity,
                hash_key: text(hash),
                range_key: text(range),
                source,
            },
            other => other,
        }
    }
}

/// An item's table keys as [`Error::Decode`] names them.
fn key_text(hash_key: Option<&str>, range_key: Option<&str>) -> String {
    let part = |key: Option<&str>| key.map_or_else(|| "(none)".to_owned(), |k| format!("{k:?}"));
    format!("hash key {}, range key {}", part(hash_key), part(range_key))
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// An invalid configuration: every problem found, not only the first.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    /// The problems, in the order they were found.
    pub problems: Vec<ConfigProblem>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid configuration ({} problem", self.problems.len())?;
        if self.problems.len() != 1 {
            f.write_str("s")?;
        }
        f.write_str(")")?;
        for p in &self.problems {
            write!(f, "\n  - {p}")?;
        }
        Ok(())
    }
}

/// Why a page token was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Not a token this library wrote: bad characters, truncated, or a broken structure.
    #[error("the page token is malformed ({0}); pass the token of the previous page unchanged")]
    Malformed(&'static str),
    /// Written by a version of this library that this one cannot read.
    #[error(
        "the page token has version {0}, which this library cannot read; start the query again"
    )]
    UnsupportedVersion(u8),
    /// The token belongs to another query (other entity, indexes, conditions, item or shard
    /// schedule).
    #[error(
        "the page token belongs to another query (entity, indexes, conditions, item or shard schedule differ); start this query without a token"
    )]
    OtherQuery,
    /// The token belongs to the same query on another table (another table name or table
    /// definition).
    #[error(
        "the page token belongs to another table (its name or definition differs); continue a query on the table it started on, or start it again without a token"
    )]
    OtherTable,
    /// The token was made for another time window than the one given.
    #[error(
        "the page token was made for the time window {token_from}..={token_to}, not {from}..={to}; leave the window out to continue, or start again"
    )]
    OtherWindow {
        /// The window in the token (from).
        token_from: u64,
        /// The window in the token (to).
        token_to: u64,
        /// The window given (from).
        from: u64,
        /// The window given (to).
        to: u64,
    },
    /// The checksum or signature does not match: the token was altered, or signed with another
    /// key.
    #[error(
        "the page token failed its integrity check: it was altered, or signed with another key"
    )]
    Tampered,
    /// The token is longer than any token of this query can be: refused before it is decoded.
    #[error(
        "the page token is {length} characters long, more than the {max} a token of this query can have; pass the token of the previous page unchanged"
    )]
    TooLong {
        /// The length of the token given, in characters (bytes).
        length: usize,
        /// The longest token this query can have written.
        max: usize,
    },
}
