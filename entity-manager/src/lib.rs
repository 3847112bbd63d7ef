//! entity-manager: DynamoDB single-table design for Rust.
//!
//! This facade re-exports the runtime core ([`entity_manager_core`]) and `#[derive(Entity)]`.
#![warn(missing_docs)]

#[doc(inline)]
pub use entity_manager_core::*;
pub use entity_manager_derive::Entity;
