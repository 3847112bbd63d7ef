//! Emission: the static model, a thin trait impl, the index-token enum and the compile-time
//! assertions, one module per derive. No key logic is emitted: the runtime reads the model.
//!
//! Every assertion is its own `const` item, spanned at the user's token it is about, so that the
//! error points there and its text does not depend on the runtime's source (STYLE.md §3.6).
//!
//! This module runs each derive's pipeline (parse → model → check → expand, or the fallback
//! beside the errors); its modules import downward only: `fallback` re-emits items of `entity`
//! and `table`, which both emit checks of `assertions`.

mod assertions;
mod entity;
mod fallback;
mod table;

use darling::FromDeriveInput;
use proc_macro2::TokenStream;
use syn::DeriveInput;

use crate::attrs::{EntityAttrs, TableAttrs};
use crate::errors::Errors;
use crate::model::Container;
use crate::table::TableDef;

/// `#[derive(Entity)]`: tokens whether it succeeded or not.
pub(crate) fn derive_entity(input: &DeriveInput) -> TokenStream {
    if let Some(error) = unsupported_shape(
        input,
        "Entity",
        "a struct with named fields, whose fields are the stored attributes",
    ) {
        let mut tokens = error;
        tokens.extend(fallback::unsupported_entity(input));
        return tokens;
    }
    let attrs = match EntityAttrs::from_derive_input(input) {
        Ok(attrs) => attrs,
        Err(e) => return e.write_errors(),
    };
    let mut errors = Errors::default();
    let container = Container::from_attrs(&attrs, &mut errors);
    crate::check::check_entity(&container, &mut errors);
    if errors.is_empty()
        && let Some(tokens) = entity::expand_entity(&container)
    {
        return tokens;
    }
    let mut tokens = errors.to_compile_errors();
    tokens.extend(fallback::entity(&container));
    tokens
}

/// `#[derive(Table)]`: tokens whether it succeeded or not.
pub(crate) fn derive_table(input: &DeriveInput) -> TokenStream {
    if let Some(error) = unsupported_shape(input, "Table", "a struct, like `struct Users;`") {
        return error;
    }
    let attrs = match TableAttrs::from_derive_input(input) {
        Ok(attrs) => attrs,
        Err(e) => return e.write_errors(),
    };
    let mut errors = Errors::default();
    let table = TableDef::from_attrs(&attrs, &mut errors);
    if let (Some(options), Some(settings)) = (&table.options, &table.settings) {
        crate::check::check_table(options, settings, &mut errors);
    }
    if errors.is_empty()
        && let Some(settings) = &table.settings
        && !table.generic
    {
        return table::expand_table(&table, settings);
    }
    let mut tokens = errors.to_compile_errors();
    tokens.extend(fallback::table(&table));
    tokens
}

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
