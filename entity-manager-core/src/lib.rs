//! The runtime core of [entity-manager]: the configuration model, transcodes, shard keys,
//! generated keys and page keys for DynamoDB single-table design.
//!
//! Most users depend on the `entity-manager` facade, which re-exports this crate together with
//! `#[derive(Entity)]`. This crate is usable on its own with a model built at run time, for
//! example from the JSON configuration of a TypeScript Entity Manager service:
//!
//! ```
//! use entity_manager_core::{Item, Schema};
//! use entity_manager_core::model::ShardSpace;
//! use serde_json::json;
//!
//! let schema = Schema::from_ts_config(
//!     &json!({
//!         "hashKey": "hashKey",
//!         "rangeKey": "rangeKey",
//!         "entities": {
//!             "user": {
//!                 "uniqueProperty": "userId",
//!                 "timestampProperty": "created",
//!                 "shardBumps": [{ "timestamp": 1_700_000_000_000u64, "charBits": 2, "chars": 1 }]
//!             }
//!         },
//!         "propertyTranscodes": { "userId": "string", "created": "timestamp" }
//!     }),
//!     ShardSpace::Power,
//! )?;
//! let user = schema.entity("user")?;
//! let item: Item = serde_dynamo::to_item(json!({ "userId": "user-123", "created": 1_700_000_000_005u64 }))?;
//! let keyed = user.add_keys(&item)?;
//! assert_eq!(keyed["hashKey"], serde_dynamo::AttributeValue::S("user!1".into()));
//! assert_eq!(keyed["rangeKey"], serde_dynamo::AttributeValue::S("userId#user-123".into()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [entity-manager]: https://docs.rs/entity-manager
#![warn(missing_docs)]
// docs.rs (nightly, `--cfg docsrs`) labels feature-gated items; on stable their docs say it
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(rustdoc::broken_intra_doc_links)]
#![doc(test(attr(deny(warnings))))]

#[doc(hidden)]
pub mod __private;
pub mod audit;
mod builder;
mod counts;
mod entity;
mod entity_ext;
mod error;
pub mod field;
mod guarded;
pub mod job;
mod key_type;
mod keys;
pub mod limits;
pub mod migrate;
pub mod model;
mod ops;
pub mod purge;
pub mod query;
mod rules;
pub mod scan;
mod schema;
mod schema_json;
pub mod shard;
pub mod store;
pub mod stream;
mod table;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;
mod trace;
pub mod transcode;
mod ts;
mod validate;

pub use builder::KeyBuilder;
pub use entity::{Entity, Table};
pub use entity_ext::EntityExt;
pub use error::{ConfigError, ConfigProblem, Error, Result};
pub use keys::{MAX_HASH_KEY_SPACE, PrimaryKey};
pub use ops::{ReadHandle, ReadResults, ReadTransaction, Transaction};
pub use rules::ConfigRule;
pub use schema::{EntitySchema, Schema};
pub use schema_json::{SCHEMA_VERSION, SCHEMA_VERSION_KEY, SchemaDifference};
/// `serde_dynamo`'s attribute value and item (attribute map), the shapes every store and key
/// function takes: **not** `aws_sdk_dynamodb::types::AttributeValue`. Code that mixes raw SDK
/// calls converts with `.into()` either way (`serde_dynamo`'s `From` impls, feature
/// `dynamodb`), and an [`Item`] to and from the SDK's `HashMap<String, AttributeValue>`.
pub use serde_dynamo::{AttributeValue, Item};

/// Helpers for this workspace's tests: the TypeScript page-key layout, which the compatibility
/// tests replay from the golden vectors. Not part of the public API; may change at any time.
#[doc(hidden)]
pub mod __test_support {
    pub use crate::ts::page_key::{PageKeyMap, TsPageKeys};
}
