//! A validated schema: one table and its entities.

use crate::error::{ConfigError, Error, Result};
use crate::model::{EntityModel, TableModel};

/// A validated table configuration with its entities.
///
/// Build one from static models ([`Schema::new`]) or from a TypeScript Entity Manager config
/// ([`Schema::from_ts_config`]); both apply the same rules and report every problem at once.
#[derive(Clone, Debug)]
pub struct Schema {
    table: TableModel,
    entities: Vec<EntityModel>,
}

impl Schema {
    /// Validates and normalises a table and its entities.
    ///
    /// Shard bumps are sorted by timestamp and a `{timestamp: 0, charBits: 1, chars: 0}` bump is
    /// put in front when none starts at 0 (an empty schedule means the default one). Every rule
    /// of the configuration is checked, and every problem found is reported in one
    /// [`ConfigError`].
    pub fn new(table: TableModel, mut entities: Vec<EntityModel>) -> Result<Self, ConfigError> {
        crate::validate::validate(&table, &mut entities)?;
        Ok(Self { table, entities })
    }

    /// The table settings.
    pub fn table(&self) -> &TableModel {
        &self.table
    }

    /// The entities, in configuration order.
    pub fn entities(&self) -> &[EntityModel] {
        &self.entities
    }

    /// The entity with this token, bound to the table settings.
    pub fn entity(&self, token: &str) -> Result<EntitySchema<'_>> {
        self.entities
            .iter()
            .find(|e| e.token == token)
            .map(|model| EntitySchema {
                table: &self.table,
                model,
            })
            .ok_or_else(|| Error::UnknownEntity {
                entity: token.to_owned(),
                known: self
                    .entities
                    .iter()
                    .map(|e| &*e.token)
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

/// An entity bound to its table's settings: the handle every key operation goes through.
#[derive(Clone, Copy, Debug)]
pub struct EntitySchema<'a> {
    pub(crate) table: &'a TableModel,
    pub(crate) model: &'a EntityModel,
}

impl<'a> EntitySchema<'a> {
    /// Binds an entity to table settings without validating them; use models that came out of
    /// a [`Schema`] or a derive, which are validated.
    pub fn new(table: &'a TableModel, model: &'a EntityModel) -> Self {
        Self { table, model }
    }

    /// The table settings.
    pub fn table(&self) -> &'a TableModel {
        self.table
    }

    /// The entity model.
    pub fn model(&self) -> &'a EntityModel {
        self.model
    }
}
