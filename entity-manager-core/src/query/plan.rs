//! A validated query: its indexes, its shards (hash-key space), its mode and its fingerprint.

use sha2::{Digest, Sha256};

use serde_dynamo::{AttributeValue, Item};

use crate::error::{Error, Result};
use crate::schema::EntitySchema;
use crate::store::{Filter, RangeCondition};

/// One index of a query, as the caller set it up.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct IndexSpec {
    pub(crate) name: String,
    pub(crate) range: Option<RangeCondition>,
    pub(crate) filter: Option<Filter>,
}

/// One index of a validated query.
#[derive(Clone, Debug)]
pub(crate) struct PlanIndex {
    pub(crate) name: String,
    /// The index's range key attribute.
    pub(crate) range_attr: String,
    pub(crate) range: Option<RangeCondition>,
    pub(crate) filter: Option<Filter>,
}

/// What a query fans out over and how it orders.
#[derive(Clone, Debug)]
pub(crate) struct Plan<'a> {
    pub(crate) schema: EntitySchema<'a>,
    /// The hash key attribute every index shares.
    pub(crate) hash_attr: String,
    pub(crate) indexes: Vec<PlanIndex>,
    /// The index hash key value of each shard.
    pub(crate) hash_keys: Vec<String>,
    /// The table hash key value of each shard (the same shard seen from the table).
    pub(crate) table_hash_keys: Vec<String>,
    pub(crate) window: (u64, u64),
    /// One merged stream in range-key order (every index has the same range key), or a union.
    pub(crate) exact: bool,
    pub(crate) descending: bool,
    pub(crate) projection: Option<Vec<String>>,
    pub(crate) fingerprint: [u8; 32],
}

fn invalid(schema: &EntitySchema<'_>, reason: impl Into<String>) -> Error {
    Error::InvalidQuery {
        entity: schema.model().token.to_string(),
        reason: reason.into(),
    }
}

/// Everything that identifies a query across its pages: a token made for one fingerprint is
/// rejected by any other.
#[derive(Debug)]
pub(crate) struct FingerprintInput<'q> {
    pub(crate) item: &'q Item,
    pub(crate) sort: &'q [(String, bool)],
}

impl<'a> Plan<'a> {
    pub(crate) fn new(
        schema: EntitySchema<'a>,
        specs: &[IndexSpec],
        item: &Item,
        window: (u64, u64),
        descending: bool,
        projection: Option<&[String]>,
        sort: &[(String, bool)],
    ) -> Result<Self> {
        if specs.is_empty() {
            return Err(invalid(&schema, "a query needs at least one index"));
        }
        let mut indexes: Vec<PlanIndex> = Vec::with_capacity(specs.len());
        let mut hash_attr: Option<&str> = None;
        for spec in specs {
            let index = schema.index(&spec.name)?;
            if index.multi.is_some() {
                return Err(invalid(
                    &schema,
                    format!(
                        "index `{}` has a multi-attribute key; query it with `MultiQuery`",
                        spec.name
                    ),
                ));
            }
            if indexes.iter().any(|i| i.name == spec.name) {
                return Err(invalid(
                    &schema,
                    format!("index `{}` is listed twice", spec.name),
                ));
            }
            match hash_attr {
                None => hash_attr = Some(&index.hash_key),
                Some(h) if h == index.hash_key => {}
                Some(h) => {
                    return Err(invalid(
                        &schema,
                        format!(
                            "the indexes of one query must share a hash key: `{}` has `{}`, another has `{h}`",
                            spec.name, index.hash_key
                        ),
                    ));
                }
            }
            indexes.push(PlanIndex {
                name: spec.name.clone(),
                range_attr: index.range_key.to_string(),
                range: spec.range.clone(),
                filter: spec.filter.clone(),
            });
        }
        let hash_attr = hash_attr.unwrap_or_default().to_owned();
        if window.0 > window.1 {
            return Err(invalid(
                &schema,
                format!("the time window {}..={} is reversed", window.0, window.1),
            ));
        }
        let hash_keys = schema.hash_key_space(&hash_attr, item, window.0, window.1)?;
        let table_hash_keys = if hash_attr == schema.table().hash_key {
            hash_keys.clone()
        } else {
            schema.hash_key_space(&schema.table().hash_key, item, window.0, window.1)?
        };
        let exact = indexes
            .iter()
            .all(|i| i.range_attr == indexes[0].range_attr);
        let projection = projection.map(|attrs| {
            let mut all: Vec<String> = attrs.to_vec();
            let table = schema.table();
            let mut needed: Vec<&str> = vec![
                &table.hash_key,
                &table.range_key,
                &hash_attr,
                &schema.model().unique_property,
            ];
            needed.extend(indexes.iter().map(|i| i.range_attr.as_str()));
            needed.extend(sort.iter().map(|(a, _)| a.as_str()));
            for attr in needed {
                if !all.iter().any(|a| a == attr) {
                    all.push(attr.to_owned());
                }
            }
            all
        });
        let fingerprint = fingerprint(
            &schema,
            &hash_attr,
            &indexes,
            descending,
            exact,
            projection.as_deref(),
            &FingerprintInput { item, sort },
        );
        Ok(Self {
            schema,
            hash_attr,
            indexes,
            hash_keys,
            table_hash_keys,
            window,
            exact,
            descending,
            projection,
            fingerprint,
        })
    }

    /// The number of (index, shard) pairs.
    pub(crate) fn lanes(&self) -> usize {
        self.indexes.len() * self.hash_keys.len()
    }

    /// The page key (`ExclusiveStartKey`) that resumes shard `shard` of index `index` after the
    /// item with this unique value and range key.
    pub(crate) fn resume_key(
        &self,
        index: usize,
        shard: usize,
        unique: &str,
        range_key: &AttributeValue,
    ) -> Item {
        let table = self.schema.table();
        let mut key = Item::default();
        key.insert(
            table.hash_key.to_string(),
            AttributeValue::S(self.table_hash_keys[shard].clone()),
        );
        key.insert(
            table.range_key.to_string(),
            AttributeValue::S(format!(
                "{}{}{unique}",
                self.schema.model().unique_property,
                table.delimiters.generated_value
            )),
        );
        key.insert(
            self.hash_attr.clone(),
            AttributeValue::S(self.hash_keys[shard].clone()),
        );
        key.insert(self.indexes[index].range_attr.clone(), range_key.clone());
        key
    }

    /// The unique value (encoded, as written in the range key) of an item or page key.
    pub(crate) fn unique_of(&self, item: &Item) -> Option<String> {
        let table = self.schema.table();
        match item.get(&*table.range_key) {
            Some(AttributeValue::S(range_key)) => range_key
                .strip_prefix(&*self.schema.model().unique_property)
                .and_then(|rest| rest.strip_prefix(&*table.delimiters.generated_value))
                .map(str::to_owned),
            _ => None,
        }
    }
}

/// SHA-256 over a canonical description of the query (not its window, limit, page size or
/// throttle, which may change between pages or are checked on their own).
fn fingerprint(
    schema: &EntitySchema<'_>,
    hash_attr: &str,
    indexes: &[PlanIndex],
    descending: bool,
    exact: bool,
    projection: Option<&[String]>,
    input: &FingerprintInput<'_>,
) -> [u8; 32] {
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(b"entity-manager query v1");
    let table = schema.table();
    let model = schema.model();
    for text in [
        &*model.token,
        &*table.hash_key,
        &*table.range_key,
        &*table.delimiters.generated_key,
        &*table.delimiters.generated_value,
        &*table.delimiters.shard_key,
        table.shard_space.as_str(),
        &*model.unique_property,
        hash_attr,
    ] {
        field(text.as_bytes());
    }
    for bump in model.shard_bumps.iter() {
        field(format!("{}/{}/{}", bump.timestamp, bump.char_bits, bump.chars).as_bytes());
    }
    field(&[u8::from(descending), u8::from(exact)]);
    for index in indexes {
        // Debug renderings of conditions and filters are canonical within one build; tokens are
        // versioned, not promised across releases
        field(
            format!(
                "{}|{}|{:?}|{:?}",
                index.name, index.range_attr, index.range, index.filter
            )
            .as_bytes(),
        );
    }
    field(format!("{projection:?}|{:?}", input.sort).as_bytes());
    // the item's values that shape the hash-key space: the unique value and the components of a
    // sharded hash key
    let mut shaping: Vec<&str> = vec![&model.unique_property];
    if let Some(generated) = model.generated_property(hash_attr) {
        shaping.extend(generated.components.iter().map(|c| &**c));
    }
    for attr in shaping {
        field(format!("{attr}={:?}", input.item.get(attr)).as_bytes());
    }
    h.finalize().into()
}
