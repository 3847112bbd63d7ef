//! What a failed derive emits beside its errors (STYLE.md §3.5): placeholder impls and the typed
//! fields, so that code using the type (`User::model()`, `User::FIELDS.name`,
//! `#[table(entities(User))]`, `table = Users`) does not drown in follow-on errors. A generic
//! entity gets them over its parameters; a generic table or unsupported type gets none.

use proc_macro2::{Group, Ident, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::DeriveInput;

use super::assertions::member_assertion;
use super::entity::{Params, field_tokens_of, index_enum};
use super::table::membership;
use crate::model::Container;
use crate::table::TableDef;

/// The index enum, a placeholder `impl Entity` and the typed fields. Without a `table = …`, the
/// entity stands in `PlaceholderTable`, which every table accepts.
///
/// A generic struct (an error) gets them for its lifetimes written `'static`, the one instance
/// an entity could be, and for any of its type and const parameters (`impl<T: 'static> Entity
/// for User<T>`): uses of `User` then report nothing more, where their types are known. A table
/// naming a struct generic over types (`entities(User)`) still reports the missing arguments:
/// a type path needs them before any impl is looked up.
pub(crate) fn entity(c: &Container<'_>) -> TokenStream {
    let mut tokens = index_enum(c);
    let krate = &c.krate;
    let ident = c.ident;
    let lifetimes: Vec<String> = c
        .generics
        .lifetimes()
        .map(|l| l.lifetime.ident.to_string())
        .collect();
    let params = params(c.generics, &lifetimes);
    let args = c.generics.params.iter().map(|p| match p {
        syn::GenericParam::Lifetime(_) => quote!('static),
        syn::GenericParam::Type(t) => t.ident.to_token_stream(),
        syn::GenericParam::Const(k) => k.ident.to_token_stream(),
    });
    let self_ty = if c.generics.params.is_empty() {
        quote!(#ident)
    } else {
        quote!(#ident<#(#args),*>)
    };
    let (table, member) = match &c.table {
        // the placeholder model's names, which the table lists (a `const` item cannot name an
        // instance of a struct generic over types)
        Some(table) if params.args.is_empty() => {
            (quote!(#table), member_assertion(ident, table, ["", "", ""]))
        }
        Some(table) => (quote!(#table), TokenStream::new()),
        None => (quote!(_em::__private::PlaceholderTable), TokenStream::new()),
    };
    let Params {
        decl, where_clause, ..
    } = &params;
    tokens.extend(quote! {
        #[doc(hidden)]
        #[allow(unused_qualifications, clippy::all, clippy::pedantic)]
        const _: () = {
            use #krate as _em;
            #[automatically_derived]
            impl #decl _em::__private::Entity for #self_ty #where_clause {
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
    tokens.extend(field_tokens_of(
        c,
        &self_ty,
        &|ty| static_lifetimes(quote!(#ty), &lifetimes),
        &params,
    ));
    tokens
}

/// The type and const parameters of `generics` for the placeholder items, each type parameter
/// bounded by `'static` (as an entity is), with the lifetimes in `lifetimes` written `'static`.
fn params(generics: &syn::Generics, lifetimes: &[String]) -> Params {
    let mut decl = Vec::new();
    let mut args = Vec::new();
    for param in &generics.params {
        match param {
            syn::GenericParam::Lifetime(_) => {}
            syn::GenericParam::Type(t) => {
                let (ident, bounds) = (&t.ident, &t.bounds);
                decl.push(if bounds.is_empty() {
                    quote!(#ident: 'static)
                } else {
                    quote!(#ident: #bounds + 'static)
                });
                args.push(ident);
            }
            syn::GenericParam::Const(k) => {
                let (ident, ty) = (&k.ident, &k.ty);
                decl.push(quote!(const #ident: #ty));
                args.push(ident);
            }
        }
    }
    let where_clause = static_lifetimes(generics.where_clause.to_token_stream(), lifetimes);
    if args.is_empty() {
        return Params {
            where_clause,
            ..Params::default()
        };
    }
    Params {
        decl: static_lifetimes(quote!(<#(#decl),*>), lifetimes),
        args: quote!(<#(#args),*>),
        where_clause,
    }
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
