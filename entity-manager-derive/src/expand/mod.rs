//! Emission: the static model, a thin trait impl, the index-token enum and the compile-time
//! assertions, one module per derive. No key logic is emitted: the runtime reads the model.
//!
//! Every assertion is its own `const` item, spanned at the user's token it is about, so that the
//! error points there and its text does not depend on the runtime's source (STYLE.md §3.6).

mod assertions;
mod entity;
mod fallback;
mod table;

pub(crate) use entity::{derive_entity, field_tokens_of, index_enum, member_assertion};
pub(crate) use table::{derive_table, membership};

use proc_macro2::TokenStream;
use syn::DeriveInput;

/// An error for a shape the derive does not support, on the smallest token that shows it.
fn unsupported_shape(input: &DeriveInput, derive: &str, expected: &str) -> Option<TokenStream> {
    let message = format!("`#[derive({derive})]` needs {expected}");
    let error = match &input.data {
        // a table may be any struct; an entity's fields are named
        syn::Data::Struct(data) => match &data.fields {
            syn::Fields::Unnamed(fields) if derive == "Entity" => {
                syn::Error::new_spanned(fields, message)
            }
            syn::Fields::Unit if derive == "Entity" => {
                syn::Error::new_spanned(&input.ident, message)
            }
            _ => return None,
        },
        syn::Data::Enum(data) => syn::Error::new_spanned(data.enum_token, message),
        syn::Data::Union(data) => syn::Error::new_spanned(data.union_token, message),
    };
    Some(error.to_compile_error())
}
