//! Compatibility with the TypeScript Entity Manager: loading its JSON config
//! ([`Schema::from_ts_config`](crate::Schema::from_ts_config)), exporting one
//! ([`Schema::to_ts_config`](crate::Schema::to_ts_config)), and its page-key layout (for the
//! compatibility tests only).

mod config;
mod export;
pub(crate) mod page_key;
