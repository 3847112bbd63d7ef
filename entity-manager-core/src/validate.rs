//! The configuration rules, shared by static models and run-time configs.

use crate::error::ConfigError;
use crate::model::{EntityModel, TableModel};

pub(crate) fn validate(table: &TableModel, entities: &mut [EntityModel]) -> Result<(), ConfigError> {
    let _ = (table, entities);
    Ok(())
}
