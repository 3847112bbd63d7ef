//! What a failed derive emits beside its errors (STYLE.md §3.5): placeholder impls and the typed
//! fields, so that code using the type (`User::model()`, `User::FIELDS.name`,
//! `#[table(entities(User))]`, `table = Users`) does not drown in follow-on errors. Generic types get none: an impl without their parameters is one more
//! error.

use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

use crate::expand::{field_tokens, index_enum, member_assertion, membership};
use crate::model::Container;
use crate::table::TableDef;

/// The index enum and a placeholder `impl Entity`. Without a `table = …`, the entity stands in
/// `PlaceholderTable`, which every table accepts.
pub(crate) fn entity(c: &Container<'_>) -> TokenStream {
    let mut tokens = index_enum(c);
    if c.generic {
        return tokens;
    }
    let krate = &c.krate;
    let ident = c.ident;
    let (table, member) = match &c.table {
        Some(table) => (quote!(#table), member_assertion(ident, table)),
        None => (quote!(_em::__private::PlaceholderTable), TokenStream::new()),
    };
    tokens.extend(quote! {
        #[doc(hidden)]
        #[allow(unused_qualifications, clippy::all, clippy::pedantic)]
        const _: () = {
            use #krate as _em;
            #[automatically_derived]
            impl _em::__private::Entity for #ident {
                type Table = #table;
                const MODEL: _em::__private::EntityModel = _em::__private::PLACEHOLDER_ENTITY;
                fn model() -> &'static _em::__private::EntityModel {
                    static __MODEL: _em::__private::EntityModel = _em::__private::PLACEHOLDER_ENTITY;
                    &__MODEL
                }
            }
            #member
        };
    });
    // the typed fields, so that `User::FIELDS.name` at the uses adds no error of its own
    tokens.extend(field_tokens(c));
    tokens
}

/// A placeholder `impl Table` with the default settings and the memberships of the entities it
/// lists, so that the entities report nothing more.
pub(crate) fn table(t: &TableDef<'_>) -> TokenStream {
    if t.generic {
        return TokenStream::new();
    }
    let krate = &t.krate;
    let ident = t.ident;
    let membership = membership(t);
    quote! {
        #[doc(hidden)]
        #[allow(unused_qualifications, clippy::all, clippy::pedantic)]
        const _: () = {
            use #krate as _em;
            #[automatically_derived]
            impl _em::__private::Table for #ident {
                const MODEL: _em::__private::TableModel = _em::__private::TableModel::DEFAULT;
                fn model() -> &'static _em::__private::TableModel {
                    static __MODEL: _em::__private::TableModel = _em::__private::TableModel::DEFAULT;
                    &__MODEL
                }
                fn entities() -> _em::__private::Vec<&'static _em::__private::EntityModel> {
                    _em::__private::Vec::new()
                }
            }
            #membership
        };
    }
}

/// A placeholder `impl Entity` for a type the derive does not support (a tuple or unit struct, an
/// enum): a table listing it then reports nothing more.
pub(crate) fn unsupported_entity(input: &DeriveInput) -> TokenStream {
    if !input.generics.params.is_empty() {
        return TokenStream::new();
    }
    let krate: syn::Path = input
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("entity"))
        .find_map(|a| match crate::attrs::lenient_value(&a.meta, "crate") {
            Some(syn::Expr::Path(p)) if p.qself.is_none() => Some(p.path),
            _ => None,
        })
        .unwrap_or_else(|| syn::parse_quote!(::entity_manager));
    let ident = &input.ident;
    quote! {
        #[doc(hidden)]
        #[allow(unused_qualifications, clippy::all, clippy::pedantic)]
        const _: () = {
            use #krate as _em;
            #[automatically_derived]
            impl _em::__private::Entity for #ident {
                type Table = _em::__private::PlaceholderTable;
                const MODEL: _em::__private::EntityModel = _em::__private::PLACEHOLDER_ENTITY;
                fn model() -> &'static _em::__private::EntityModel {
                    static __MODEL: _em::__private::EntityModel = _em::__private::PLACEHOLDER_ENTITY;
                    &__MODEL
                }
            }
        };
    }
}
