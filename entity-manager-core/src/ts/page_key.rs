//! TypeScript page-key compatibility: the components of an index's page key and the
//! dehydrated page-key layout of the TypeScript Entity Manager (`dehydrateIndexItem`,
//! `rehydrateIndexItem`, `dehydratePageKeyMap`).
//!
//! Our page token has its own format (see [`query`](crate::query)); these functions exist only so
//! that the compatibility tests can replay the TypeScript golden vectors. They are reachable
//! through the hidden [`__test_support`](crate::__test_support) module and are not part of the
//! public API.

use serde_dynamo::{AttributeValue, Item};

use crate::error::{Error, Result};
use crate::keys::present;
use crate::schema::EntitySchema;

/// Page keys of a multi-shard query in the TypeScript layout: for each index token, for each
/// hash key value, the shard's last evaluated key (`None` when there is none).
pub type PageKeyMap = Vec<(String, Vec<(String, Option<Item>)>)>;

/// Sorts names by UTF-16 code units, as JavaScript's default `sort()` does.
fn sort_utf16(names: &mut [&str]) {
    names.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
}

/// The TypeScript page-key operations of one entity.
pub trait TsPageKeys<'a> {
    /// The attributes of a page key (DynamoDB `LastEvaluatedKey`) of this index: the table hash
    /// and range keys plus the index hash and range keys, without duplicates.
    fn index_components(&self, index: &str) -> Result<Vec<&'a str>>;

    /// The transcoded properties an index's page key is made of, sorted by UTF-16 code units:
    /// the table hash key stands for the timestamp property, the table range key for the unique
    /// property, a generated property for its components. Names in `omit` are left out, before
    /// and after unwrapping.
    fn unwrap_index(&self, index: &str, omit: &[&str]) -> Result<Vec<&'a str>>;

    /// The index-item fields a page key is stored as: the index's unwrapped properties (less
    /// its hash key, which the hash-key space re-derives), encoded and joined with the generated
    /// key delimiter; missing values give empty fields.
    fn dehydrate_index_item(&self, index: &str, item: &Item) -> Result<String>;

    /// Reads a dehydrated index item back; empty fields are left out.
    fn rehydrate_index_item(&self, index: &str, dehydrated: &str) -> Result<Item>;

    /// Dehydrates the page keys of a multi-shard query, in the TypeScript layout: index tokens
    /// sorted (UTF-16), hash keys in the order of the first sorted index, one dehydrated index
    /// item (or `""`) per (index, hash key). All-empty gives `[]`.
    fn dehydrate_page_key_map(&self, map: &PageKeyMap) -> Result<Vec<String>>;
}

impl<'a> TsPageKeys<'a> for EntitySchema<'a> {
    fn index_components(&self, index: &str) -> Result<Vec<&'a str>> {
        EntitySchema::index_components(self, index)
    }

    fn unwrap_index(&self, index: &str, omit: &[&str]) -> Result<Vec<&'a str>> {
        EntitySchema::unwrap_index(self, index, omit)
    }

    fn dehydrate_index_item(&self, index: &str, item: &Item) -> Result<String> {
        EntitySchema::dehydrate_index_item(self, index, item)
    }

    fn rehydrate_index_item(&self, index: &str, dehydrated: &str) -> Result<Item> {
        EntitySchema::rehydrate_index_item(self, index, dehydrated)
    }

    fn dehydrate_page_key_map(&self, map: &PageKeyMap) -> Result<Vec<String>> {
        EntitySchema::dehydrate_page_key_map(self, map)
    }
}

impl<'a> EntitySchema<'a> {
    /// The attributes of a page key (DynamoDB `LastEvaluatedKey`) of this index: the table hash
    /// and range keys plus the index hash and range keys, without duplicates.
    pub(crate) fn index_components(&self, index: &str) -> Result<Vec<&'a str>> {
        let index = self.index(index)?;
        let mut components: Vec<&'a str> = Vec::with_capacity(4);
        for name in [
            &*self.table.hash_key,
            &*self.table.range_key,
            &*index.hash_key,
            &*index.range_key,
        ] {
            if !components.contains(&name) {
                components.push(name);
            }
        }
        Ok(components)
    }

    /// The transcoded properties an index's page key is made of, sorted by UTF-16 code units:
    /// the table hash key stands for the timestamp property, the table range key for the unique
    /// property, a generated property for its components. Names in `omit` are left out, before
    /// and after unwrapping.
    pub(crate) fn unwrap_index(&self, index: &str, omit: &[&str]) -> Result<Vec<&'a str>> {
        let mut unwrapped: Vec<&'a str> = Vec::new();
        for component in self.index_components(index)? {
            if omit.contains(&component) {
                continue;
            }
            let expanded: Vec<&'a str> = if component == self.table.hash_key {
                vec![&*self.model.timestamp_property]
            } else if component == self.table.range_key {
                vec![&*self.model.unique_property]
            } else if let Some(generated) = self.model.generated_property(component) {
                generated.components.iter().map(|c| &**c).collect()
            } else {
                vec![component]
            };
            for name in expanded {
                if !omit.contains(&name) && !unwrapped.contains(&name) {
                    unwrapped.push(name);
                }
            }
        }
        sort_utf16(&mut unwrapped);
        Ok(unwrapped)
    }

    /// The index-item fields a page key is stored as: the index's unwrapped properties (less
    /// its hash key, which the hash-key space re-derives), encoded and joined with the generated
    /// key delimiter; missing values give empty fields.
    pub(crate) fn dehydrate_index_item(&self, index: &str, item: &Item) -> Result<String> {
        let hash_key = &*self.index(index)?.hash_key;
        let mut fields = Vec::new();
        for element in self.unwrap_index(index, &[hash_key])? {
            fields.push(match present(item, element) {
                Some(value) => self.encode_component(element, value)?.unwrap_or_default(),
                None => String::new(),
            });
        }
        Ok(fields.join(&self.table.delimiters.generated_key))
    }

    /// Reads a dehydrated index item back; empty fields are left out.
    pub(crate) fn rehydrate_index_item(&self, index: &str, dehydrated: &str) -> Result<Item> {
        let hash_key = &*self.index(index)?.hash_key;
        let elements = self.unwrap_index(index, &[hash_key])?;
        let fields: Vec<&str> = dehydrated
            .split(&*self.table.delimiters.generated_key)
            .collect();
        if fields.len() != elements.len() {
            return Err(Error::RehydrationMismatch {
                entity: self.entity(),
                index: index.to_owned(),
                expected: elements.len(),
                found: fields.len(),
            });
        }
        let mut item = Item::default();
        for (element, field) in elements.into_iter().zip(fields) {
            if !field.is_empty() {
                item.insert(element.to_owned(), self.decode_component(element, field)?);
            }
        }
        Ok(item)
    }

    /// Dehydrates the page keys of a multi-shard query, in the TypeScript layout: index tokens
    /// sorted (UTF-16), hash keys in the order of the first sorted index, one dehydrated index
    /// item (or `""`) per (index, hash key). All-empty gives `[]`.
    pub(crate) fn dehydrate_page_key_map(&self, map: &PageKeyMap) -> Result<Vec<String>> {
        let mut indexes: Vec<&str> = map.iter().map(|(index, _)| index.as_str()).collect();
        sort_utf16(&mut indexes);
        for index in &indexes {
            self.index(index)?;
        }
        let Some(first) = indexes.first() else {
            return Ok(Vec::new());
        };
        let shards_of = |index: &str| {
            map.iter()
                .find(|(i, _)| i == index)
                .map_or(&[][..], |(_, shards)| shards.as_slice())
        };
        let hash_keys: Vec<&str> = shards_of(first).iter().map(|(h, _)| h.as_str()).collect();
        let mut dehydrated = Vec::with_capacity(indexes.len() * hash_keys.len());
        for index in &indexes {
            let shards = shards_of(index);
            for hash_key in &hash_keys {
                let page_key = shards
                    .iter()
                    .find(|(h, _)| h == hash_key)
                    .and_then(|(_, page_key)| page_key.as_ref());
                dehydrated.push(match page_key {
                    None => String::new(),
                    Some(page_key) => {
                        let item = self.page_key_item(page_key)?;
                        self.dehydrate_index_item(index, &item)?
                    }
                });
            }
        }
        if dehydrated.iter().all(String::is_empty) {
            dehydrated.clear();
        }
        Ok(dehydrated)
    }

    /// The properties a page key holds: generated keys and the range key decoded into their
    /// components, other attributes as they are.
    fn page_key_item(&self, page_key: &Item) -> Result<Item> {
        let mut item = Item::default();
        for (name, value) in page_key.iter() {
            let is_generated =
                *name == *self.table.range_key || self.model.generated_property(name).is_some();
            match value {
                AttributeValue::S(encoded) if is_generated => {
                    item.extend(
                        self.decode_generated(encoded)?
                            .iter()
                            .map(|(k, v)| (k.clone(), v.clone())),
                    );
                }
                _ => {
                    item.insert(name.clone(), value.clone());
                }
            }
        }
        Ok(item)
    }
}
