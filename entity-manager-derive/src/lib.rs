//! `#[derive(Entity)]` for entity-manager. Placeholder until the derive lands: it builds, and
//! emits nothing.

use proc_macro::TokenStream;

/// Placeholder for the entity derive.
#[proc_macro_derive(Entity, attributes(entity, transcode, generated, shard_bumps))]
pub fn derive_entity(input: TokenStream) -> TokenStream {
    let _ = input;
    TokenStream::new()
}
