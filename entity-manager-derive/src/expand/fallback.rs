//! What a failed derive emits beside its errors (STYLE.md §3.5): placeholder impls and the typed
//! fields, so that code using the type (`User::model()`, `User::FIELDS.name`,
//! `#[table(entities(User))]`, `table = Users`) does not drown in follow-on errors. Generic types get none: an impl without their parameters is one more
//! error.

use proc_macro2::{Group, Ident, TokenStream, TokenTree};
use quote::quote;
use syn::DeriveInput;

use super::assertions::member_assertion;
use super::entity::{field_tokens_of, index_enum};
use super::table::membership;
use crate::model::Container;
use crate::table::TableDef;

/// The index enum and a placeholder `impl Entity`. Without a `table = …`, the entity stands in
/// `PlaceholderTable`, which every table accepts.
///
/// A struct generic over lifetimes only (`User<'a>`, an error) gets them for `User<'static>`,
/// the one instance an entity could be: uses of `User` (whose lifetimes are inferred) and the
/// table listing it then report nothing more. Other generic structs get the index enum only.
pub(crate) fn entity(c: &Container<'_>) -> TokenStream {
    let mut tokens = index_enum(c);
    let krate = &c.krate;
    let ident = c.ident;
    let lifetimes: Vec<String> = c
        .generics
        .lifetimes()
        .map(|l| l.lifetime.ident.to_string())
        .collect();
    if c.generics.params.len() > lifetimes.len() {
        return tokens;
    }
    let statics = lifetimes.iter().map(|_| quote!('static));
    let self_ty = if lifetimes.is_empty() {
        quote!(#ident)
    } else {
        quote!(#ident<#(#statics),*>)
    };
    let (table, member) = match &c.table {
        // the placeholder model's names, which the table lists
        Some(table) => (quote!(#table), member_assertion(ident, table, ["", "", ""])),
        None => (quote!(_em::__private::PlaceholderTable), TokenStream::new()),
    };
    tokens.extend(quote! {
        #[doc(hidden)]
        #[allow(unused_qualifications, clippy::all, clippy::pedantic)]
        const _: () = {
            use #krate as _em;
            #[automatically_derived]
            impl _em::__private::Entity for #self_ty {
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
    tokens.extend(field_tokens_of(c, &self_ty, &|ty| {
        static_lifetimes(quote!(#ty), &lifetimes)
    }));
    tokens
}

/// `tokens` with each lifetime named in `lifetimes` written `'static`.
fn static_lifetimes(tokens: TokenStream, lifetimes: &[String]) -> TokenStream {
    let mut out = Vec::new();
    let mut tokens = tokens.into_iter().peekable();
    while let Some(token) = tokens.next() {
        match token {
            TokenTree::Punct(p) if p.as_char() == '\'' => {
                out.push(TokenTree::Punct(p));
                if let Some(TokenTree::Ident(name)) = tokens.peek()
                    && lifetimes.iter().any(|l| name == l)
                {
                    let span = name.span();
                    tokens.next();
                    out.push(TokenTree::Ident(Ident::new("static", span)));
                }
            }
            TokenTree::Group(g) => {
                let mut group = Group::new(g.delimiter(), static_lifetimes(g.stream(), lifetimes));
                group.set_span(g.span());
                out.push(TokenTree::Group(group));
            }
            other => out.push(other),
        }
    }
    out.into_iter().collect()
}

/// A placeholder `impl Table` with the default settings and the memberships of the entities it
/// lists, so that the entities report nothing more.
pub(crate) fn table(t: &TableDef<'_>) -> TokenStream {
    if t.generic {
        return TokenStream::new();
    }
    let krate = &t.krate;
    let ident = t.ident;
    let (members, table_of) = membership(t);
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
                #members
                fn entities() -> _em::__private::Vec<&'static _em::__private::EntityModel> {
                    _em::__private::Vec::new()
                }
            }
            #table_of
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
