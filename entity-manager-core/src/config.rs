//! Loading a TypeScript Entity Manager config (JSON) into a [`Schema`].

use crate::error::ConfigError;
use crate::model::ShardSpace;
use crate::schema::Schema;

impl Schema {
    /// Loads the JSON `config` object of a TypeScript Entity Manager service.
    pub fn from_ts_config(
        config: &serde_json::Value,
        shard_space: ShardSpace,
    ) -> Result<Self, ConfigError> {
        let _ = (config, shard_space);
        todo!()
    }
}
