//! Table definitions: key schema, attribute types, GSIs and LSIs, billing, TTL, Streams,
//! point-in-time recovery, deletion protection and tags; derived from the entities, rendered as
//! a `CreateTable` request (by `DynamoStore::create_table`) or as a `CloudFormation`
//! `AWS::DynamoDB::Table` resource, and compared with a live table by the drift check
//! ([`super::drift`]).

use std::collections::BTreeMap;

use serde_dynamo::{AttributeValue, Item};
use serde_json::{Value, json};

use crate::limits::{MAX_LOCAL_INDEXES, MAX_PROJECTED_ATTRIBUTES, MAX_TAGS};
use crate::model::{EntityModel, Index, KeySource, MultiKey, Projection, TableModel};

use super::stamp::{STAMP_ATTRIBUTE, STAMP_HASH_KEY, STAMP_RANGE_KEY, TableStamp};
use crate::key_type::KeyType;

/// A key attribute: its name and `DynamoDB` type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KeyAttribute {
    /// The attribute name.
    pub name: String,
    /// Its `DynamoDB` scalar type.
    pub key_type: KeyType,
}

impl KeyAttribute {
    /// A key attribute.
    pub fn new(name: impl Into<String>, key_type: KeyType) -> Self {
        Self {
            name: name.into(),
            key_type,
        }
    }
}

impl<S: Into<String>> From<(S, KeyType)> for KeyAttribute {
    fn from((name, key_type): (S, KeyType)) -> Self {
        Self::new(name, key_type)
    }
}

/// Read and write capacity units, of a provisioned table or of one of its GSIs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Capacity {
    /// Read capacity units (at least 1).
    pub read: i64,
    /// Write capacity units (at least 1).
    pub write: i64,
}

impl Capacity {
    /// `read` read and `write` write capacity units.
    pub const fn new(read: i64, write: i64) -> Self {
        Self { read, write }
    }
}

/// A global secondary index of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GlobalIndex {
    /// The index name (the entity manager's index token).
    pub name: String,
    /// The index hash key.
    pub hash_key: KeyAttribute,
    /// The index range key.
    pub range_key: KeyAttribute,
    /// The attributes the index projects.
    pub projection: Projection,
    /// The index's own provisioned capacity; `None` gives it the table's (provisioned billing
    /// only: an on-demand table's indexes have none).
    pub capacity: Option<Capacity>,
    /// The further partition attributes of a multi-attribute key, in key order after
    /// `hash_key` (empty for a classic index).
    pub more_hash_keys: Vec<KeyAttribute>,
    /// The further sort attributes of a multi-attribute key, in key order after `range_key`
    /// (empty for a classic index).
    pub more_range_keys: Vec<KeyAttribute>,
}

impl GlobalIndex {
    /// An index projecting every attribute.
    pub fn new(
        name: impl Into<String>,
        hash_key: impl Into<KeyAttribute>,
        range_key: impl Into<KeyAttribute>,
    ) -> Self {
        Self {
            name: name.into(),
            hash_key: hash_key.into(),
            range_key: range_key.into(),
            projection: Projection::All,
            capacity: None,
            more_hash_keys: Vec::new(),
            more_range_keys: Vec::new(),
        }
    }

    /// Adds a partition attribute after the others (a multi-attribute key: up to 4).
    ///
    /// ```
    /// use entity_manager_core::store::{GlobalIndex, KeyType};
    ///
    /// let gsi = GlobalIndex::new("byOrg", ("orgId", KeyType::S), ("score", KeyType::N))
    ///     .with_hash_key(("region", KeyType::S))
    ///     .with_range_key(("name", KeyType::S));
    /// assert_eq!(gsi.hash_keys().len(), 2);
    /// assert_eq!(gsi.range_keys()[1].name, "name");
    /// ```
    #[must_use]
    pub fn with_hash_key(mut self, attribute: impl Into<KeyAttribute>) -> Self {
        self.more_hash_keys.push(attribute.into());
        self
    }

    /// Adds a sort attribute after the others (a multi-attribute key: up to 4).
    #[must_use]
    pub fn with_range_key(mut self, attribute: impl Into<KeyAttribute>) -> Self {
        self.more_range_keys.push(attribute.into());
        self
    }

    /// Every partition attribute, in key order.
    pub fn hash_keys(&self) -> Vec<&KeyAttribute> {
        std::iter::once(&self.hash_key)
            .chain(&self.more_hash_keys)
            .collect()
    }

    /// Every sort attribute, in key order.
    pub fn range_keys(&self) -> Vec<&KeyAttribute> {
        std::iter::once(&self.range_key)
            .chain(&self.more_range_keys)
            .collect()
    }

    /// Every key attribute: the partition attributes, then the sort attributes.
    pub fn key_attributes(&self) -> Vec<&KeyAttribute> {
        let mut all = self.hash_keys();
        all.extend(self.range_keys());
        all
    }

    /// Whether the key has more than one partition or sort attribute.
    pub fn is_multi_attribute(&self) -> bool {
        !self.more_hash_keys.is_empty() || !self.more_range_keys.is_empty()
    }

    /// Sets the projection.
    #[must_use]
    pub fn projection(mut self, projection: Projection) -> Self {
        self.projection = projection;
        self
    }

    /// Gives the index its own provisioned capacity (for a table with
    /// [`Billing::Provisioned`]; otherwise [`TableDefinition::validate`] rejects it).
    #[must_use]
    pub fn capacity(mut self, capacity: Capacity) -> Self {
        self.capacity = Some(capacity);
        self
    }
}

/// A local secondary index: the table's hash key with another range key. It can only be
/// created with the table, and at most [`MAX_LOCAL_INDEXES`] per table.
///
/// Both stores maintain and query LSIs alike: an item lacking the range key is not in the index,
/// and a query's projection may ask an LSI for attributes it does not project (they are read from
/// the table, where a GSI refuses them; a filter sees only what the LSI projects, as on DynamoDB
/// Local). `DynamoStore` also creates and drift-checks them.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LocalIndex {
    /// The index name.
    pub name: String,
    /// The index hash key: it must be the table's hash key.
    pub hash_key: KeyAttribute,
    /// The index range key.
    pub range_key: KeyAttribute,
    /// The attributes the index projects.
    pub projection: Projection,
}

impl LocalIndex {
    /// An index projecting every attribute.
    pub fn new(
        name: impl Into<String>,
        hash_key: impl Into<KeyAttribute>,
        range_key: impl Into<KeyAttribute>,
    ) -> Self {
        Self {
            name: name.into(),
            hash_key: hash_key.into(),
            range_key: range_key.into(),
            projection: Projection::All,
        }
    }

    /// Sets the projection.
    #[must_use]
    pub fn projection(mut self, projection: Projection) -> Self {
        self.projection = projection;
        self
    }
}

/// How the table is billed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Billing {
    /// On demand (`PAY_PER_REQUEST`): the default.
    #[default]
    PayPerRequest,
    /// Provisioned capacity, for the table and for each GSI without its own
    /// ([`GlobalIndex::capacity`]).
    Provisioned {
        /// Read capacity units.
        read: i64,
        /// Write capacity units.
        write: i64,
    },
}

impl Billing {
    /// The table's provisioned capacity, or `None` on demand.
    pub fn capacity(self) -> Option<Capacity> {
        match self {
            Self::PayPerRequest => None,
            Self::Provisioned { read, write } => Some(Capacity { read, write }),
        }
    }

    /// `PAY_PER_REQUEST` or `PROVISIONED`.
    pub fn mode(self) -> &'static str {
        match self {
            Self::PayPerRequest => "PAY_PER_REQUEST",
            Self::Provisioned { .. } => "PROVISIONED",
        }
    }
}

/// What a `DynamoDB` stream records of each change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StreamView {
    /// Only the key attributes of the changed item (`KEYS_ONLY`).
    KeysOnly,
    /// The item as it is after the change (`NEW_IMAGE`).
    NewImage,
    /// The item as it was before the change (`OLD_IMAGE`).
    OldImage,
    /// Both images (`NEW_AND_OLD_IMAGES`).
    NewAndOldImages,
}

impl StreamView {
    /// Every view type.
    pub const ALL: [Self; 4] = [
        Self::KeysOnly,
        Self::NewImage,
        Self::OldImage,
        Self::NewAndOldImages,
    ];

    /// The `DynamoDB` name: `KEYS_ONLY`, `NEW_IMAGE`, `OLD_IMAGE` or `NEW_AND_OLD_IMAGES`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::KeysOnly => "KEYS_ONLY",
            Self::NewImage => "NEW_IMAGE",
            Self::OldImage => "OLD_IMAGE",
            Self::NewAndOldImages => "NEW_AND_OLD_IMAGES",
        }
    }

    /// The view type of a `DynamoDB` name, or `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == name)
    }
}

/// The problems that keep a table definition from being derived or rendered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TableDefinitionError {
    /// One attribute is a key with two different `DynamoDB` types.
    #[error(
        "attribute `{attribute}` is a key of type {first:?} (in {first_in}) and of type {second:?} (in {second_in}); DynamoDB gives an attribute one type: use transcodes of the same type"
    )]
    ConflictingKeyType {
        /// The attribute.
        attribute: String,
        /// The first type found.
        first: KeyType,
        /// Where the first type comes from.
        first_in: String,
        /// The other type.
        second: KeyType,
        /// Where the other type comes from.
        second_in: String,
    },
    /// Two entities define an index of the same name differently.
    #[error(
        "index `{index}` of entity `{second}` differs from the index of the same name of entity `{first}`; one name is one GSI: give them the same keys and projection, or different names"
    )]
    ConflictingIndex {
        /// The index name.
        index: String,
        /// The entity that defined it first.
        first: String,
        /// The entity with the other definition.
        second: String,
    },
    /// An index key's transcode has no `DynamoDB` key type.
    #[error(
        "key `{attribute}` of index `{index}` (entity `{entity}`) has transcode `{transcode}`, which DynamoDB cannot use as a key; use a string or number transcode"
    )]
    UnkeyableTranscode {
        /// The entity.
        entity: String,
        /// The index.
        index: String,
        /// The key attribute.
        attribute: String,
        /// The transcode's name.
        transcode: String,
    },
    /// An index key is neither a table key, a generated property nor a transcoded property.
    #[error(
        "key `{attribute}` of index `{index}` (entity `{entity}`) is neither a table key, a generated property nor a transcoded property, so its DynamoDB type is unknown; give it a transcode"
    )]
    UnknownKeyAttribute {
        /// The entity.
        entity: String,
        /// The index.
        index: String,
        /// The key attribute.
        attribute: String,
    },
    /// Two indexes (global or local) share a name.
    #[error("the table definition has two indexes named `{index}`; give each index its own name")]
    DuplicateIndex {
        /// The index name.
        index: String,
    },
    /// An index key has more than 4 partition or sort attributes, or names one twice.
    #[error(
        "index `{index}` has the key attributes {attributes:?} ({hash} partition, {range} sort); DynamoDB takes 1 to 4 of each, none twice: remove the extra or repeated ones"
    )]
    InvalidMultiKey {
        /// The index name.
        index: String,
        /// Its key attributes, partition attributes first.
        attributes: Vec<String>,
        /// How many partition attributes.
        hash: usize,
        /// How many sort attributes.
        range: usize,
    },
    /// An index name `DynamoDB` would reject.
    #[error(
        "index name `{name}` is invalid: index names are 3 to 255 characters of a-z, A-Z, 0-9, `_`, `-` and `.`"
    )]
    InvalidIndexName {
        /// The name.
        name: String,
    },
    /// An attribute name `DynamoDB` would reject (empty, or longer than 255 bytes).
    #[error("attribute name `{name}` ({role}) is invalid: attribute names are 1 to 255 bytes")]
    InvalidAttributeName {
        /// The name.
        name: String,
        /// What the attribute is for (a key, the TTL attribute).
        role: String,
    },
    /// An LSI whose hash key is not the table's.
    #[error(
        "local index `{index}` has hash key `{actual}`, but an LSI must use the table's hash key `{expected}`; use `{expected}` or make it a GSI"
    )]
    LocalIndexHashKey {
        /// The index.
        index: String,
        /// The table's hash key.
        expected: String,
        /// The index's hash key.
        actual: String,
    },
    /// More LSIs than [`MAX_LOCAL_INDEXES`].
    #[error(
        "the table definition has {count} local indexes; DynamoDB allows at most {MAX_LOCAL_INDEXES}: make the others GSIs"
    )]
    TooManyLocalIndexes {
        /// How many the definition has.
        count: usize,
    },
    /// More `INCLUDE` attributes over all indexes than [`MAX_PROJECTED_ATTRIBUTES`].
    #[error(
        "the indexes project {count} non-key attributes in all; DynamoDB allows at most {MAX_PROJECTED_ATTRIBUTES}: project ALL or fewer attributes"
    )]
    TooManyProjectedAttributes {
        /// How many the indexes project.
        count: usize,
    },
    /// The TTL attribute is a key of the table or of an index.
    #[error(
        "TTL attribute `{attribute}` is a key attribute (of {key_of}); DynamoDB expires items by a non-key number attribute: choose another attribute"
    )]
    TtlIsKey {
        /// The attribute.
        attribute: String,
        /// The table or index it is a key of.
        key_of: String,
    },
    /// A provisioned capacity below 1.
    #[error(
        "the provisioned capacity of {of} is {read} read / {write} write units; both must be at least 1"
    )]
    InvalidCapacity {
        /// The table or index.
        of: String,
        /// Read units.
        read: i64,
        /// Write units.
        write: i64,
    },
    /// A GSI with its own capacity on an on-demand table.
    #[error(
        "GSI `{index}` has a provisioned capacity but the table is billed on demand; remove the capacity or use `Billing::Provisioned`"
    )]
    CapacityOnDemand {
        /// The index.
        index: String,
    },
    /// A tag `DynamoDB` would reject.
    #[error("tag `{key}` is invalid: {reason}")]
    InvalidTag {
        /// The tag key.
        key: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// More tags than [`MAX_TAGS`].
    #[error("the table definition has {count} tags; DynamoDB allows at most {MAX_TAGS}")]
    TooManyTags {
        /// How many the definition has.
        count: usize,
    },
}

/// A `DynamoDB` table: key schema, GSIs and LSIs, billing, TTL, Streams, point-in-time recovery,
/// deletion protection and tags.
///
/// Derive it from the entities with [`from_schema`](Self::from_schema) (defined beside [`Schema`](crate::Schema)) and add the operational
/// settings with the `with_*` methods; every store is built from one. Key attribute types come
/// from transcodes: `S` for the table keys and for generated properties, the transcode's
/// [`key_type`](crate::transcode::Transcoder::key_type) for a transcoded property (`N` for
/// `timestamp`, `int`, `fix6`, `bigint20`; `S` for `string`). [`validate`](Self::validate)
/// checks what `DynamoDB` would reject; `DynamoStore::create_table` and
/// [`cloudformation`](Self::cloudformation) call it.
///
/// ```
/// use entity_manager_core::store::{
///     GlobalIndex, KeyType, LocalIndex, StreamView, TableDefinition,
/// };
///
/// let table = TableDefinition::new(("hashKey", KeyType::S), ("rangeKey", KeyType::S))
///     .with_index(GlobalIndex::new("created", ("hashKey", KeyType::S), ("created", KeyType::N)))
///     .with_local_index(LocalIndex::new("byScore", ("hashKey", KeyType::S), ("score", KeyType::N)))
///     .with_ttl("expiresAt")
///     .with_stream(StreamView::NewAndOldImages)
///     .with_point_in_time_recovery(true)
///     .with_deletion_protection(true)
///     .with_tag("team", "accounts");
/// let resource = table.cloudformation(Some("Users"))?;
/// let props = &resource["Properties"];
/// assert_eq!(resource["Type"], "AWS::DynamoDB::Table");
/// assert_eq!(props["BillingMode"], "PAY_PER_REQUEST");
/// assert_eq!(props["AttributeDefinitions"][2]["AttributeType"], "N");
/// assert_eq!(props["LocalSecondaryIndexes"][0]["IndexName"], "byScore");
/// assert_eq!(props["TimeToLiveSpecification"]["AttributeName"], "expiresAt");
/// assert_eq!(props["StreamSpecification"]["StreamViewType"], "NEW_AND_OLD_IMAGES");
/// # Ok::<(), entity_manager_core::store::TableDefinitionError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableDefinition {
    /// The table's partition key.
    pub hash_key: KeyAttribute,
    /// The table's sort key.
    pub range_key: KeyAttribute,
    /// The global secondary indexes, in definition order.
    pub indexes: Vec<GlobalIndex>,
    /// The local secondary indexes, in definition order.
    pub local_indexes: Vec<LocalIndex>,
    /// The billing mode.
    pub billing: Billing,
    /// The attribute whose epoch-seconds number expires an item (Time to Live), or `None`.
    pub ttl_attribute: Option<String>,
    /// The stream of changes and what it records, or `None` for no stream.
    pub stream: Option<StreamView>,
    /// Whether point-in-time recovery (continuous backups) is on.
    pub point_in_time_recovery: bool,
    /// Whether the table refuses `DeleteTable` until this is turned off.
    pub deletion_protection: bool,
    /// The table's tags.
    pub tags: BTreeMap<String, String>,
    /// How the keys of the table are made, recorded with the table and checked by the stores on
    /// first use ([`TableStamp`]); set by [`from_schema`](Self::from_schema), `None` otherwise
    /// (no stamp written, no check).
    pub stamp: Option<TableStamp>,
    /// The configuration the definition was made from ([`from_schema`](Self::from_schema)),
    /// with which a store infers the profile of a table without a stamp from its records.
    pub(crate) models: Option<super::KeyModels>,
}

impl TableDefinition {
    /// A table with these keys, no index, billed per request, with no TTL, stream, point-in-time
    /// recovery, deletion protection or tag.
    pub fn new(hash_key: impl Into<KeyAttribute>, range_key: impl Into<KeyAttribute>) -> Self {
        Self {
            hash_key: hash_key.into(),
            range_key: range_key.into(),
            indexes: Vec::new(),
            local_indexes: Vec::new(),
            billing: Billing::PayPerRequest,
            ttl_attribute: None,
            stream: None,
            point_in_time_recovery: false,
            deletion_protection: false,
            tags: BTreeMap::new(),
            stamp: None,
            models: None,
        }
    }

    /// Adds a GSI.
    #[must_use]
    pub fn with_index(mut self, index: GlobalIndex) -> Self {
        self.indexes.push(index);
        self
    }

    /// Adds an LSI.
    #[must_use]
    pub fn with_local_index(mut self, index: LocalIndex) -> Self {
        self.local_indexes.push(index);
        self
    }

    /// Sets the billing mode.
    #[must_use]
    pub fn with_billing(mut self, billing: Billing) -> Self {
        self.billing = billing;
        self
    }

    /// Expires items by this attribute (a number of epoch seconds): Time to Live.
    #[must_use]
    pub fn with_ttl(mut self, attribute: impl Into<String>) -> Self {
        self.ttl_attribute = Some(attribute.into());
        self
    }

    /// Turns the table's stream on, recording `view` of each change.
    #[must_use]
    pub fn with_stream(mut self, view: StreamView) -> Self {
        self.stream = Some(view);
        self
    }

    /// Turns point-in-time recovery on or off.
    #[must_use]
    pub fn with_point_in_time_recovery(mut self, on: bool) -> Self {
        self.point_in_time_recovery = on;
        self
    }

    /// Turns deletion protection on or off.
    #[must_use]
    pub fn with_deletion_protection(mut self, on: bool) -> Self {
        self.deletion_protection = on;
        self
    }

    /// Sets (or, with `None`, removes) the stamp the stores write and check ([`TableStamp`]).
    #[must_use]
    pub fn with_stamp(mut self, stamp: Option<TableStamp>) -> Self {
        self.stamp = stamp;
        self
    }

    /// Adds (or replaces) a tag.
    #[must_use]
    pub fn with_tag(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.tags.insert(key.into(), value.into());
        self
    }

    /// The table of these entities: the table keys (`S`) and every index of every entity (an
    /// index shared by several entities appears once, and must be defined alike), in entity
    /// then index order.
    pub fn from_entities(
        table: &TableModel,
        entities: &[EntityModel],
    ) -> Result<Self, TableDefinitionError> {
        let mut def = Self::new(
            (&*table.hash_key, KeyType::S),
            (&*table.range_key, KeyType::S),
        );
        let mut owners: Vec<&str> = Vec::new();
        for entity in entities {
            for index in entity.indexes.iter() {
                let gsi = if let Some(multi) = &index.multi {
                    global_index(table, index, multi)
                } else {
                    let hash_key =
                        key_attribute(table, entities, entity, &index.name, &index.hash_key)?;
                    let range_key =
                        key_attribute(table, entities, entity, &index.name, &index.range_key)?;
                    GlobalIndex::new(index.name.to_string(), hash_key, range_key)
                        .projection(index.projection.clone())
                };
                if let Some(i) = def.indexes.iter().position(|g| g.name == gsi.name) {
                    if def.indexes[i] != gsi {
                        return Err(TableDefinitionError::ConflictingIndex {
                            index: gsi.name,
                            first: owners[i].to_owned(),
                            second: entity.token.to_string(),
                        });
                    }
                } else {
                    owners.push(&entity.token);
                    def.indexes.push(gsi);
                }
            }
        }
        def.attribute_definitions()?;
        def.stamp = Some(TableStamp::of(table, entities));
        Ok(def)
    }

    /// The GSI of this name.
    pub fn index(&self, name: &str) -> Option<&GlobalIndex> {
        self.indexes.iter().find(|i| i.name == name)
    }

    /// The LSI of this name.
    pub fn local_index(&self, name: &str) -> Option<&LocalIndex> {
        self.local_indexes.iter().find(|i| i.name == name)
    }

    /// The hash and range key of the index (global or local) of this name (the first
    /// partition and sort attribute of a multi-attribute key).
    pub fn index_keys(&self, name: &str) -> Option<(&KeyAttribute, &KeyAttribute)> {
        self.index(name)
            .map(|g| (&g.hash_key, &g.range_key))
            .or_else(|| self.local_index(name).map(|l| (&l.hash_key, &l.range_key)))
    }

    /// Every partition and every sort attribute of the index (global or local) of this name.
    pub fn index_key_lists(&self, name: &str) -> Option<(Vec<&KeyAttribute>, Vec<&KeyAttribute>)> {
        self.index(name)
            .map(|g| (g.hash_keys(), g.range_keys()))
            .or_else(|| {
                self.local_index(name)
                    .map(|l| (vec![&l.hash_key], vec![&l.range_key]))
            })
    }

    /// Every index: `(name, key attributes, projection, is local)`, GSIs first.
    fn all_indexes(&self) -> impl Iterator<Item = (&str, Vec<&KeyAttribute>, &Projection, bool)> {
        let globals = self
            .indexes
            .iter()
            .map(|g| (&*g.name, g.key_attributes(), &g.projection, false));
        let locals = self.local_indexes.iter().map(|l| {
            (
                &*l.name,
                vec![&l.hash_key, &l.range_key],
                &l.projection,
                true,
            )
        });
        globals.chain(locals)
    }

    /// The attribute definitions: the table keys, then each index's hash and range key not yet
    /// listed, GSIs then LSIs in definition order. Fails when one attribute would get two types
    /// or two indexes share a name.
    pub fn attribute_definitions(&self) -> Result<Vec<KeyAttribute>, TableDefinitionError> {
        let mut out: Vec<(KeyAttribute, String)> = vec![
            (self.hash_key.clone(), "the table key schema".to_owned()),
            (self.range_key.clone(), "the table key schema".to_owned()),
        ];
        let mut names: Vec<&str> = Vec::new();
        for index in &self.indexes {
            let keys = index.key_attributes();
            let distinct = keys
                .iter()
                .enumerate()
                .all(|(i, k)| keys[..i].iter().all(|o| o.name != k.name));
            let (hash, range) = (index.hash_keys().len(), index.range_keys().len());
            if !distinct || hash > 4 || range > 4 {
                return Err(TableDefinitionError::InvalidMultiKey {
                    index: index.name.clone(),
                    attributes: keys.iter().map(|k| k.name.clone()).collect(),
                    hash,
                    range,
                });
            }
        }
        for (name, keys, _, local) in self.all_indexes() {
            if names.contains(&name) {
                return Err(TableDefinitionError::DuplicateIndex {
                    index: name.to_owned(),
                });
            }
            names.push(name);
            let origin = if local {
                format!("local index `{name}`")
            } else {
                format!("index `{name}`")
            };
            for key in keys {
                match out.iter().find(|(k, _)| k.name == key.name) {
                    Some((k, first_in)) if k.key_type != key.key_type => {
                        return Err(TableDefinitionError::ConflictingKeyType {
                            attribute: key.name.clone(),
                            first: k.key_type,
                            first_in: first_in.clone(),
                            second: key.key_type,
                            second_in: origin,
                        });
                    }
                    Some(_) => {}
                    None => out.push((key.clone(), origin.clone())),
                }
            }
        }
        Ok(out.into_iter().map(|(k, _)| k).collect())
    }

    /// Checks everything `DynamoDB` would reject in this definition: key types and index
    /// names (as [`attribute_definitions`](Self::attribute_definitions)), index and attribute
    /// names, LSI hash keys and count, projected attributes, the TTL attribute, capacities and
    /// tags. The first problem found is returned.
    pub fn validate(&self) -> Result<(), TableDefinitionError> {
        let attributes = self.attribute_definitions()?;
        for key in &attributes {
            check_attribute_name(&key.name, "a key")?;
        }
        for (name, ..) in self.all_indexes() {
            // the rule a configuration's index names follow (`rules::index_name_valid`), which
            // leaves the empty name to another rule
            if name.is_empty() || crate::rules::index_name_valid(name).is_some() {
                return Err(TableDefinitionError::InvalidIndexName {
                    name: name.to_owned(),
                });
            }
        }
        for lsi in &self.local_indexes {
            if lsi.hash_key.name != self.hash_key.name {
                return Err(TableDefinitionError::LocalIndexHashKey {
                    index: lsi.name.clone(),
                    expected: self.hash_key.name.clone(),
                    actual: lsi.hash_key.name.clone(),
                });
            }
        }
        if self.local_indexes.len() > MAX_LOCAL_INDEXES {
            return Err(TableDefinitionError::TooManyLocalIndexes {
                count: self.local_indexes.len(),
            });
        }
        let projected: usize = self
            .all_indexes()
            .filter_map(|(_, keys, projection, _)| self.non_key_of(&keys, projection))
            .map(|n| n.len())
            .sum();
        if projected > MAX_PROJECTED_ATTRIBUTES {
            return Err(TableDefinitionError::TooManyProjectedAttributes { count: projected });
        }
        self.validate_ttl()?;
        self.validate_billing()?;
        self.validate_tags()
    }

    fn validate_ttl(&self) -> Result<(), TableDefinitionError> {
        if let Some(ttl) = &self.ttl_attribute {
            check_attribute_name(ttl, "the TTL attribute")?;
            let key_of = if *ttl == self.hash_key.name || *ttl == self.range_key.name {
                Some("the table".to_owned())
            } else {
                self.all_indexes()
                    .find(|(_, keys, ..)| keys.iter().any(|k| k.name == *ttl))
                    .map(|(name, ..)| format!("index `{name}`"))
            };
            if let Some(key_of) = key_of {
                return Err(TableDefinitionError::TtlIsKey {
                    attribute: ttl.clone(),
                    key_of,
                });
            }
        }
        Ok(())
    }

    fn validate_billing(&self) -> Result<(), TableDefinitionError> {
        let check_capacity = |of: String, c: Capacity| {
            if c.read < 1 || c.write < 1 {
                Err(TableDefinitionError::InvalidCapacity {
                    of,
                    read: c.read,
                    write: c.write,
                })
            } else {
                Ok(())
            }
        };
        match self.billing.capacity() {
            Some(table) => {
                check_capacity("the table".to_owned(), table)?;
                for gsi in &self.indexes {
                    if let Some(c) = gsi.capacity {
                        check_capacity(format!("GSI `{}`", gsi.name), c)?;
                    }
                }
            }
            None => {
                if let Some(gsi) = self.indexes.iter().find(|g| g.capacity.is_some()) {
                    return Err(TableDefinitionError::CapacityOnDemand {
                        index: gsi.name.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    fn validate_tags(&self) -> Result<(), TableDefinitionError> {
        if self.tags.len() > MAX_TAGS {
            return Err(TableDefinitionError::TooManyTags {
                count: self.tags.len(),
            });
        }
        for (key, value) in &self.tags {
            let reason = if key.is_empty() || key.chars().count() > 128 {
                Some("tag keys are 1 to 128 characters")
            } else if key.starts_with("aws:") {
                Some("the `aws:` prefix is reserved for AWS")
            } else if value.chars().count() > 256 {
                Some("tag values are at most 256 characters")
            } else {
                None
            };
            if let Some(reason) = reason {
                return Err(TableDefinitionError::InvalidTag {
                    key: key.clone(),
                    reason,
                });
            }
        }
        Ok(())
    }

    /// The provisioned capacity of a GSI: its own, else the table's; `None` on demand.
    pub fn index_capacity(&self, index: &GlobalIndex) -> Option<Capacity> {
        self.billing
            .capacity()
            .map(|table| index.capacity.unwrap_or(table))
    }

    /// The attributes an index item carries, or `None` for every attribute (`ALL`).
    pub fn projected_attributes(&self, index: &GlobalIndex) -> Option<Vec<String>> {
        let mut keys = vec![self.hash_key.name.clone(), self.range_key.name.clone()];
        keys.extend(index.key_attributes().into_iter().map(|k| k.name.clone()));
        match &index.projection {
            Projection::All => return None,
            Projection::KeysOnly => {}
            Projection::Include(names) => keys.extend(names.iter().map(ToString::to_string)),
        }
        let mut seen = Vec::new();
        keys.retain(|k| {
            let new = !seen.contains(k);
            seen.push(k.clone());
            new
        });
        Some(keys)
    }

    /// The `NonKeyAttributes` of an `INCLUDE` projection of an index with these key attributes
    /// (key attributes and repeats removed), or `None` when it is `ALL` or effectively
    /// `KEYS_ONLY`.
    pub(crate) fn non_key_of(
        &self,
        index_keys: &[&KeyAttribute],
        projection: &Projection,
    ) -> Option<Vec<String>> {
        let Projection::Include(names) = projection else {
            return None;
        };
        let mut keys = vec![&self.hash_key.name, &self.range_key.name];
        keys.extend(index_keys.iter().map(|k| &k.name));
        let mut out: Vec<String> = Vec::new();
        for name in names.iter() {
            if !keys.iter().any(|k| **k == **name) && !out.iter().any(|o| **o == **name) {
                out.push(name.to_string());
            }
        }
        (!out.is_empty()).then_some(out)
    }

    /// The `DynamoDB` projection type name of a projection of an index with these keys.
    pub(crate) fn projection_type_of(
        &self,
        keys: &[&KeyAttribute],
        projection: &Projection,
    ) -> &'static str {
        match (projection, self.non_key_of(keys, projection)) {
            (Projection::All, _) => "ALL",
            (_, Some(_)) => "INCLUDE",
            (_, None) => "KEYS_ONLY",
        }
    }

    /// The table as a `CloudFormation` `AWS::DynamoDB::Table` resource (JSON), with
    /// `TableName` when given: every setting of the definition, in the property names of the
    /// resource schema. Fails as [`validate`](Self::validate) does.
    pub fn cloudformation(&self, table_name: Option<&str>) -> Result<Value, TableDefinitionError> {
        self.validate()?;
        let throughput =
            |c: Capacity| json!({ "ReadCapacityUnits": c.read, "WriteCapacityUnits": c.write });
        let projection = |keys: &[&KeyAttribute], p: &Projection| {
            let mut out = json!({ "ProjectionType": self.projection_type_of(keys, p) });
            if let Some(names) = self.non_key_of(keys, p) {
                out["NonKeyAttributes"] = json!(names);
            }
            out
        };
        let mut props = serde_json::Map::new();
        if let Some(name) = table_name {
            props.insert("TableName".into(), json!(name));
        }
        props.insert("BillingMode".into(), json!(self.billing.mode()));
        props.insert(
            "AttributeDefinitions".into(),
            Value::Array(
                self.attribute_definitions()?
                    .iter()
                    .map(|a| json!({ "AttributeName": a.name, "AttributeType": key_type_name(a.key_type) }))
                    .collect(),
            ),
        );
        props.insert(
            "KeySchema".into(),
            key_schema_json(&[&self.hash_key], &[&self.range_key]),
        );
        if !self.indexes.is_empty() {
            let gsis = self
                .indexes
                .iter()
                .map(|index| {
                    let mut gsi = json!({
                        "IndexName": index.name,
                        "KeySchema": key_schema_json(&index.hash_keys(), &index.range_keys()),
                        "Projection": projection(&index.key_attributes(), &index.projection),
                    });
                    if let Some(c) = self.index_capacity(index) {
                        gsi["ProvisionedThroughput"] = throughput(c);
                    }
                    gsi
                })
                .collect();
            props.insert("GlobalSecondaryIndexes".into(), Value::Array(gsis));
        }
        if !self.local_indexes.is_empty() {
            let lsis = self
                .local_indexes
                .iter()
                .map(|index| {
                    json!({
                        "IndexName": index.name,
                        "KeySchema": key_schema_json(&[&index.hash_key], &[&index.range_key]),
                        "Projection": projection(&[&index.hash_key, &index.range_key], &index.projection),
                    })
                })
                .collect();
            props.insert("LocalSecondaryIndexes".into(), Value::Array(lsis));
        }
        if let Some(c) = self.billing.capacity() {
            props.insert("ProvisionedThroughput".into(), throughput(c));
        }
        if let Some(ttl) = &self.ttl_attribute {
            props.insert(
                "TimeToLiveSpecification".into(),
                json!({ "AttributeName": ttl, "Enabled": true }),
            );
        }
        if let Some(view) = self.stream {
            props.insert(
                "StreamSpecification".into(),
                json!({ "StreamViewType": view.as_str() }),
            );
        }
        if self.point_in_time_recovery {
            props.insert(
                "PointInTimeRecoverySpecification".into(),
                json!({ "PointInTimeRecoveryEnabled": true }),
            );
        }
        if self.deletion_protection {
            props.insert("DeletionProtectionEnabled".into(), json!(true));
        }
        if !self.tags.is_empty() {
            let tags = self
                .tags
                .iter()
                .map(|(k, v)| json!({ "Key": k, "Value": v }))
                .collect();
            props.insert("Tags".into(), Value::Array(tags));
        }
        Ok(json!({ "Type": "AWS::DynamoDB::Table", "Properties": Value::Object(props) }))
    }
}

fn check_attribute_name(name: &str, role: &str) -> Result<(), TableDefinitionError> {
    if name.is_empty() || name.len() > 255 {
        return Err(TableDefinitionError::InvalidAttributeName {
            name: name.to_owned(),
            role: role.to_owned(),
        });
    }
    Ok(())
}

/// A `KeySchema`: every partition attribute (`HASH`), then every sort attribute (`RANGE`).
fn key_schema_json(hash: &[&KeyAttribute], range: &[&KeyAttribute]) -> Value {
    Value::Array(
        hash.iter()
            .map(|k| json!({ "AttributeName": k.name, "KeyType": "HASH" }))
            .chain(
                range
                    .iter()
                    .map(|k| json!({ "AttributeName": k.name, "KeyType": "RANGE" })),
            )
            .collect(),
    )
}

/// `S`, `N` or `B`.
pub(crate) fn key_type_name(key_type: KeyType) -> &'static str {
    match key_type {
        KeyType::S => "S",
        KeyType::N => "N",
        KeyType::B => "B",
    }
}

/// The key attribute of an index key named `attribute`, typed from the model.
fn key_attribute(
    table: &TableModel,
    entities: &[EntityModel],
    entity: &EntityModel,
    index: &str,
    attribute: &str,
) -> Result<KeyAttribute, TableDefinitionError> {
    // the entity's own attribute; else one another entity generates, else holds
    let source = entity
        .key_source(table, attribute)
        .map(|source| (entity, source))
        .or_else(|| {
            entities
                .iter()
                .find(|e| e.generated_property(attribute).is_some())
                .map(|e| (e, KeySource::Generated))
        })
        .or_else(|| {
            entities
                .iter()
                .find_map(|e| e.key_source(table, attribute).map(|source| (e, source)))
        });
    let (owner, property) = match source {
        None => {
            return Err(TableDefinitionError::UnknownKeyAttribute {
                entity: entity.token.to_string(),
                index: index.to_owned(),
                attribute: attribute.to_owned(),
            });
        }
        Some((_, KeySource::TableKey | KeySource::Generated)) => {
            return Ok(KeyAttribute::new(attribute, KeyType::S));
        }
        Some((owner, KeySource::Property(property))) => (owner, property),
    };
    let key_type = KeySource::Property(property).key_type().ok_or_else(|| {
        TableDefinitionError::UnkeyableTranscode {
            entity: entity.token.to_string(),
            index: index.to_owned(),
            attribute: attribute.to_owned(),
            transcode: property.transcode.name().to_owned(),
        }
    })?;
    // Every entity that transcodes this attribute must agree on its type.
    for other in entities {
        if let Some(p) = other.property(attribute)
            && let Some(t) = p.transcode.key_type()
            && t != key_type
        {
            return Err(TableDefinitionError::ConflictingKeyType {
                attribute: attribute.to_owned(),
                first: key_type,
                first_in: format!("entity `{}`", owner.token),
                second: t,
                second_in: format!("entity `{}`", other.token),
            });
        }
    }
    Ok(KeyAttribute::new(attribute, key_type))
}

// ---------------------------------------------------------------------------------------------
// the stamp item of a table with this definition

impl TableStamp {
    /// The stamp item of a table with this definition: the reserved key and the stamp.
    pub fn to_item(&self, definition: &TableDefinition) -> Item {
        let mut item = stamp_key(definition);
        item.insert(STAMP_ATTRIBUTE.to_owned(), self.attribute());
        item
    }
}

/// The key of the stamp item of a table with this definition.
pub fn stamp_key(definition: &TableDefinition) -> Item {
    let mut key = Item::default();
    key.insert(
        definition.hash_key.name.clone(),
        AttributeValue::S(STAMP_HASH_KEY.to_owned()),
    );
    key.insert(
        definition.range_key.name.clone(),
        AttributeValue::S(STAMP_RANGE_KEY.to_owned()),
    );
    key
}

/// Whether `item` is the stamp item of a table with this definition.
pub fn is_stamp(item: &Item, definition: &TableDefinition) -> bool {
    matches!(item.get(&definition.hash_key.name), Some(AttributeValue::S(h)) if h == STAMP_HASH_KEY)
        && matches!(item.get(&definition.range_key.name), Some(AttributeValue::S(r)) if r == STAMP_RANGE_KEY)
}

/// Whether a table of this definition can hold the stamp (string table keys).
pub(crate) fn stampable(definition: &TableDefinition) -> bool {
    definition.hash_key.key_type == KeyType::S && definition.range_key.key_type == KeyType::S
}

/// The GSI of a multi-attribute index: its attributes with their natural types, in key order.
/// An empty side (refused by validation) falls back to the table key of that side, so that a
/// hand-built model never yields a GSI without keys.
fn global_index(table: &TableModel, index: &Index, multi: &MultiKey) -> GlobalIndex {
    let attribute = |p: &crate::model::IndexAttribute| KeyAttribute::new(&*p.name, p.key_type);
    let mut hash = multi.hash.iter().map(attribute);
    let mut range = multi.range.iter().map(attribute);
    let first_hash = hash
        .next()
        .unwrap_or_else(|| KeyAttribute::new(&*table.hash_key, KeyType::S));
    let first_range = range
        .next()
        .unwrap_or_else(|| KeyAttribute::new(&*table.range_key, KeyType::S));
    let mut gsi = GlobalIndex::new(index.name.to_string(), first_hash, first_range)
        .projection(index.projection.clone());
    gsi.more_hash_keys = hash.collect();
    gsi.more_range_keys = range.collect();
    gsi
}
