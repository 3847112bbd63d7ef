//! Building generated-property values component by component: full keys, and prefixes of
//! leading components for `begins_with` conditions.
//!
//! `#[derive(Entity)]` wraps [`KeyBuilder`] in one typed builder per generated property, whose
//! methods take the components in key order with their Rust types, so that users never
//! assemble key strings by hand.

use crate::entity::{Entity, Table};
use crate::error::{Error, Result};
use crate::model::{Delimiters, GeneratedProperty};
use crate::schema::EntitySchema;
use crate::transcode::TranscodeError;

/// A generated-property value under construction.
///
/// ```
/// use entity_manager_core::{KeyBuilder, Schema};
/// use entity_manager_core::model::ShardSpace;
/// use serde_json::json;
///
/// let schema = Schema::from_ts_config(
///     &json!({
///         "hashKey": "hashKey",
///         "rangeKey": "rangeKey",
///         "entities": { "user": { "uniqueProperty": "userId", "timestampProperty": "created" } },
///         "generatedProperties": { "unsharded": { "nameRK": ["firstName", "lastName"] } },
///         "propertyTranscodes": { "userId": "string", "created": "timestamp", "firstName": "string", "lastName": "string" }
///     }),
///     ShardSpace::Product,
/// )?;
/// let user = schema.entity("user")?;
/// let prefix = KeyBuilder::new(user, "nameRK")?.push_encoded(Ok("jo".to_owned()))?;
/// assert_eq!(prefix.as_str(), "firstName#jo");
/// let full = prefix.push_encoded(Ok("doe".to_owned()))?;
/// assert!(full.is_complete());
/// assert_eq!(full.into_string(), "firstName#jo|lastName#doe");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct KeyBuilder<'a> {
    /// The entity token, for errors.
    entity: &'a str,
    delimiters: &'a Delimiters,
    property: &'a GeneratedProperty,
    key: String,
    next: usize,
}

impl<'a> KeyBuilder<'a> {
    /// Starts a value of the generated property `property`. A sharded property starts with its
    /// hash key: call [`hash_key`](Self::hash_key) first.
    pub fn new(schema: EntitySchema<'a>, property: &str) -> Result<Self> {
        let generated = schema.model().generated_property(property).ok_or_else(|| {
            Error::UnknownGeneratedProperty {
                entity: schema.model().token.to_string(),
                property: property.to_owned(),
            }
        })?;
        Ok(Self::from_property(schema, generated))
    }

    /// Starts a value of a generated property of the schema's entity.
    pub fn from_property(schema: EntitySchema<'a>, property: &'a GeneratedProperty) -> Self {
        Self {
            entity: &schema.model().token,
            delimiters: &schema.table().delimiters,
            property,
            key: String::new(),
            next: 0,
        }
    }

    /// Starts a value of a generated property of the entity `E` (what the typed builders of
    /// `#[derive(Entity)]` call). A key builder reads only the table's delimiters and the
    /// property's components, which validation does not change, so it needs no schema.
    #[doc(hidden)]
    pub fn of<E: Entity>(property: &'static GeneratedProperty) -> KeyBuilder<'static> {
        KeyBuilder {
            entity: &E::model().token,
            delimiters: &<E::Table as Table>::model().delimiters,
            property,
            key: String::new(),
            next: 0,
        }
    }

    /// Sets the hash key a sharded property starts with (for example `user!1`).
    #[must_use]
    pub fn hash_key(mut self, hash_key: &str) -> Self {
        self.key.clear();
        self.key.push_str(hash_key);
        self
    }

    /// Appends the next component, already encoded by its transcode. A transcode error, or an
    /// encoding holding a delimiter, is an error naming the entity and the component.
    pub fn push_encoded(mut self, encoded: Result<String, TranscodeError>) -> Result<Self> {
        let entity = || self.entity.to_owned();
        let component =
            self.property
                .components
                .get(self.next)
                .ok_or_else(|| Error::MalformedKey {
                    entity: entity(),
                    segment: self.key.clone(),
                    reason: format!(
                        "generated property `{}` has only {} components",
                        self.property.name,
                        self.property.components.len()
                    ),
                })?;
        let encoded = encoded.map_err(|source| Error::Transcode {
            entity: entity(),
            property: component.to_string(),
            source: Box::new(source),
        })?;
        let delimiters = self.delimiters;
        if let Some(delimiter) = delimiters.find_in(&encoded) {
            return Err(Error::DelimiterInValue {
                entity: entity(),
                property: component.to_string(),
                value: encoded,
                delimiter: delimiter.to_owned(),
            });
        }
        if self.next > 0 || self.property.is_sharded() {
            self.key.push_str(&delimiters.generated_key);
        }
        self.key.push_str(component);
        self.key.push_str(&delimiters.generated_value);
        self.key.push_str(&encoded);
        self.next += 1;
        Ok(self)
    }

    /// Whether every component has been given: the value is a full key, not a prefix.
    pub fn is_complete(&self) -> bool {
        self.next == self.property.components.len()
    }

    /// The value so far: a full key when complete, otherwise a prefix for `begins_with`.
    pub fn as_str(&self) -> &str {
        &self.key
    }

    /// The value so far.
    pub fn into_string(self) -> String {
        self.key
    }
}
