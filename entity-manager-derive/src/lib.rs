//! The derives of [entity-manager](https://docs.rs/entity-manager): `#[derive(Entity)]`,
//! `#[derive(Table)]` and `#[derive(Collection)]`. Use them through the `entity-manager` crate, which documents them.

mod attrs;
mod case;
mod check;
mod collection;
mod errors;
mod expand;
#[cfg(test)]
mod fuzz;
mod model;
#[cfg(test)]
mod snapshots;
mod table;
#[cfg(test)]
mod tests;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

/// Derives `Entity`; documented on the `entity-manager` re-export.
///
/// `serde` is a helper attribute too (the derive reads serde's names): an entity that forgot
/// `#[derive(Serialize, Deserialize)]` but kept its `#[serde(...)]` attributes then gets the
/// derive's own error saying so, not the compiler's "cannot find attribute `serde`" alone.
#[proc_macro_derive(
    Entity,
    attributes(entity, transcode, generated, index, shard_bumps, serde)
)]
pub fn derive_entity(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive_entity(&input).into()
}

/// Derives `Table`; documented on the `entity-manager` re-export.
#[proc_macro_derive(Table, attributes(table))]
pub fn derive_table(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive_table(&input).into()
}

/// Derives `Collection`; documented on the `entity-manager` re-export.
#[proc_macro_derive(Collection, attributes(collection))]
pub fn derive_collection(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    collection::derive(&input).into()
}
