//! Table definitions: key schema, attribute types and GSIs, derived from the entities, rendered
//! as a `CreateTable` request (by `DynamoStore::create_table`) or as a `CloudFormation`
//! `AWS::DynamoDB::Table` resource.

use serde_json::{Value, json};

use crate::model::{EntityModel, Projection, TableModel};

use super::KeyType;

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

/// A global secondary index of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobalIndex {
    /// The index name (the entity manager's index token).
    pub name: String,
    /// The index hash key.
    pub hash_key: KeyAttribute,
    /// The index range key.
    pub range_key: KeyAttribute,
    /// The attributes the index projects.
    pub projection: Projection,
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
}

/// How the table is billed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Billing {
    /// On demand (`PAY_PER_REQUEST`): the default.
    #[default]
    PayPerRequest,
    /// Provisioned capacity, for the table and for each GSI.
    Provisioned {
        /// Read capacity units.
        read: i64,
        /// Write capacity units.
        write: i64,
    },
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
    /// Two indexes share a name.
    #[error("the table definition has two indexes named `{index}`")]
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
}

/// A `DynamoDB` table: key schema, GSIs and billing.
///
/// Derive it from the entities with [`from_schema`](Self::from_schema) (defined beside [`Schema`](crate::Schema)); every store is built
/// from one. Key attribute types come from transcodes: `S` for the table keys and for generated
/// properties, the transcode's [`key_type`](crate::transcode::Transcoder::key_type) for a
/// transcoded property (`N` for `timestamp`, `int`, `fix6`, `bigint20`; `S` for `string`).
///
/// ```
/// use entity_manager_core::store::{GlobalIndex, KeyType, TableDefinition};
///
/// let table = TableDefinition::new(("hashKey", KeyType::S), ("rangeKey", KeyType::S))
///     .with_index(GlobalIndex::new("created", ("hashKey", KeyType::S), ("created", KeyType::N)));
/// let resource = table.cloudformation(Some("Users"))?;
/// assert_eq!(resource["Type"], "AWS::DynamoDB::Table");
/// assert_eq!(resource["Properties"]["BillingMode"], "PAY_PER_REQUEST");
/// assert_eq!(resource["Properties"]["AttributeDefinitions"][2]["AttributeType"], "N");
/// # Ok::<(), entity_manager_core::store::TableDefinitionError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableDefinition {
    /// The table's partition key.
    pub hash_key: KeyAttribute,
    /// The table's sort key.
    pub range_key: KeyAttribute,
    /// The global secondary indexes, in definition order.
    pub indexes: Vec<GlobalIndex>,
    /// The billing mode.
    pub billing: Billing,
}

impl TableDefinition {
    /// A table with these keys, no index, billed per request.
    pub fn new(hash_key: impl Into<KeyAttribute>, range_key: impl Into<KeyAttribute>) -> Self {
        Self {
            hash_key: hash_key.into(),
            range_key: range_key.into(),
            indexes: Vec::new(),
            billing: Billing::PayPerRequest,
        }
    }

    /// Adds a GSI.
    #[must_use]
    pub fn with_index(mut self, index: GlobalIndex) -> Self {
        self.indexes.push(index);
        self
    }

    /// Sets the billing mode.
    #[must_use]
    pub fn with_billing(mut self, billing: Billing) -> Self {
        self.billing = billing;
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
                    super::multi::global_index(table, index, multi)
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
        Ok(def)
    }

    /// The index of this name.
    pub fn index(&self, name: &str) -> Option<&GlobalIndex> {
        self.indexes.iter().find(|i| i.name == name)
    }

    /// The attribute definitions: the table keys, then each index's hash and range key not yet
    /// listed, in index order. Fails when one attribute would get two types or two indexes
    /// share a name.
    pub fn attribute_definitions(&self) -> Result<Vec<KeyAttribute>, TableDefinitionError> {
        let mut out: Vec<(KeyAttribute, String)> = vec![
            (self.hash_key.clone(), "the table key schema".to_owned()),
            (self.range_key.clone(), "the table key schema".to_owned()),
        ];
        for (i, index) in self.indexes.iter().enumerate() {
            if self.indexes[..i].iter().any(|g| g.name == index.name) {
                return Err(TableDefinitionError::DuplicateIndex {
                    index: index.name.clone(),
                });
            }
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
            for key in keys {
                match out.iter().find(|(k, _)| k.name == key.name) {
                    Some((k, origin)) if k.key_type != key.key_type => {
                        return Err(TableDefinitionError::ConflictingKeyType {
                            attribute: key.name.clone(),
                            first: k.key_type,
                            first_in: origin.clone(),
                            second: key.key_type,
                            second_in: format!("index `{}`", index.name),
                        });
                    }
                    Some(_) => {}
                    None => out.push((key.clone(), format!("index `{}`", index.name))),
                }
            }
        }
        Ok(out.into_iter().map(|(k, _)| k).collect())
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

    /// The `NonKeyAttributes` of an `INCLUDE` index (key attributes and repeats removed), or
    /// `None` when the index is `ALL` or effectively `KEYS_ONLY`.
    pub(crate) fn non_key_attributes(&self, index: &GlobalIndex) -> Option<Vec<String>> {
        let Projection::Include(names) = &index.projection else {
            return None;
        };
        let mut keys = vec![&self.hash_key.name, &self.range_key.name];
        keys.extend(index.key_attributes().into_iter().map(|k| &k.name));
        let mut out: Vec<String> = Vec::new();
        for name in names.iter() {
            if !keys.iter().any(|k| **k == **name) && !out.iter().any(|o| **o == **name) {
                out.push(name.to_string());
            }
        }
        (!out.is_empty()).then_some(out)
    }

    /// The `DynamoDB` projection type name of an index.
    pub(crate) fn projection_type(&self, index: &GlobalIndex) -> &'static str {
        match (&index.projection, self.non_key_attributes(index)) {
            (Projection::All, _) => "ALL",
            (_, Some(_)) => "INCLUDE",
            (_, None) => "KEYS_ONLY",
        }
    }

    /// The table as a `CloudFormation` `AWS::DynamoDB::Table` resource (JSON), with
    /// `TableName` when given.
    pub fn cloudformation(&self, table_name: Option<&str>) -> Result<Value, TableDefinitionError> {
        let key_schema = |hash: &[&KeyAttribute], range: &[&KeyAttribute]| {
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
        };
        let throughput = match self.billing {
            Billing::PayPerRequest => None,
            Billing::Provisioned { read, write } => {
                Some(json!({ "ReadCapacityUnits": read, "WriteCapacityUnits": write }))
            }
        };
        let mut props = serde_json::Map::new();
        if let Some(name) = table_name {
            props.insert("TableName".into(), json!(name));
        }
        props.insert(
            "BillingMode".into(),
            json!(match self.billing {
                Billing::PayPerRequest => "PAY_PER_REQUEST",
                Billing::Provisioned { .. } => "PROVISIONED",
            }),
        );
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
            key_schema(&[&self.hash_key], &[&self.range_key]),
        );
        if !self.indexes.is_empty() {
            let gsis = self
                .indexes
                .iter()
                .map(|index| {
                    let mut projection = json!({ "ProjectionType": self.projection_type(index) });
                    if let Some(names) = self.non_key_attributes(index) {
                        projection["NonKeyAttributes"] = json!(names);
                    }
                    let mut gsi = json!({
                        "IndexName": index.name,
                        "KeySchema": key_schema(&index.hash_keys(), &index.range_keys()),
                        "Projection": projection,
                    });
                    if let Some(t) = &throughput {
                        gsi["ProvisionedThroughput"] = t.clone();
                    }
                    gsi
                })
                .collect();
            props.insert("GlobalSecondaryIndexes".into(), Value::Array(gsis));
        }
        if let Some(t) = throughput {
            props.insert("ProvisionedThroughput".into(), t);
        }
        Ok(json!({ "Type": "AWS::DynamoDB::Table", "Properties": Value::Object(props) }))
    }
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
    if attribute == table.hash_key || attribute == table.range_key {
        return Ok(KeyAttribute::new(attribute, KeyType::S));
    }
    if entity.generated_property(attribute).is_some()
        || (entity.property(attribute).is_none()
            && entities
                .iter()
                .any(|e| e.generated_property(attribute).is_some()))
    {
        return Ok(KeyAttribute::new(attribute, KeyType::S));
    }
    let owner = std::iter::once(entity)
        .chain(entities.iter())
        .find(|e| e.property(attribute).is_some());
    let Some(property) = owner.and_then(|e| e.property(attribute)) else {
        return Err(TableDefinitionError::UnknownKeyAttribute {
            entity: entity.token.to_string(),
            index: index.to_owned(),
            attribute: attribute.to_owned(),
        });
    };
    let key_type =
        property
            .transcode
            .key_type()
            .ok_or_else(|| TableDefinitionError::UnkeyableTranscode {
                entity: entity.token.to_string(),
                index: index.to_owned(),
                attribute: attribute.to_owned(),
                transcode: property.transcode.name().to_owned(),
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
                first_in: format!("entity `{}`", owner.map_or("?", |e| &*e.token)),
                second: t,
                second_in: format!("entity `{}`", other.token),
            });
        }
    }
    Ok(KeyAttribute::new(attribute, key_type))
}
