//! The rules one derive cannot check alone, emitted as `const` assertions: an entity's names
//! against its table's settings (`#[derive(Entity)]`), and the entities of a table against each
//! other (`#[derive(Table)]`). Each assertion evaluates a `const fn` of the core's `rules`
//! module, which run-time validation calls too, and carries that module's message; each is its
//! own `const` item, spanned at the user's token it is about, so that the error points there
//! and its text does not depend on the runtime's source (STYLE.md §3.6).

use entity_manager_core::__private::rules::{self, Delimiter, Named, Problem, Role, Syntax};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::errors::path_text;
use crate::expand::member_assertion;
use crate::model::{Container, Transcode};
use crate::table::TableDef;

const SYNTAX: Syntax = Syntax::Derive;

/// The span of the first token of `tokens` (the call site when there is none).
pub(crate) fn first_span(tokens: &TokenStream) -> Span {
    tokens
        .clone()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |t| t.span())
}

/// `const _: () = assert!(#condition, "{}", message)`, spanned at `span`.
fn assertion(span: Span, condition: &TokenStream, problem: &Problem) -> TokenStream {
    let message = &problem.message;
    quote_spanned! {span=>
        const _: () = ::core::assert!(#condition, "{}", #message);
    }
}

/// The checks of the entity against its table, one `const` each, spanned at the name's token:
/// the entity is listed by the table; the timestamp property is `u64` or `i64`; no stored name
/// is a table key's name (rule `attribute-names-distinct`); no name written inside keys (the
/// token, transcoded and generated properties, indexes) contains a delimiter (rules
/// `entity-token`, `names-free-of-delimiters`).
pub(crate) fn table_assertions(c: &Container<'_>, table: &syn::Path) -> TokenStream {
    let mut tokens = member_assertion(c.ident, table);
    // the timestamp property is `u64` or `i64` (with the `timestamp` transcode, the model checks
    // it, as one check)
    if let Some(t) = c.timestamp
        && !matches!(
            c.fields[t].transcode,
            Some(Transcode::Builtin {
                name: "timestamp",
                ..
            })
        )
    {
        let ty = c.fields[t].ty;
        tokens.extend(quote_spanned! {ty.span()=>
            const _: &dyn _em::__private::Transcoder = <#ty as _em::__private::TimestampValue>::TRANSCODER;
        });
    }
    let keys = |stored: &str, role: Role, at: &TokenStream| {
        let span = first_span(at);
        [
            (Role::TableHashKey, quote!(hash_key)),
            (Role::TableRangeKey, quote!(range_key)),
        ]
        .map(|(key, field)| {
            let condition =
                quote_spanned!(span=> !_em::__private::is_name(&__TABLE.#field, #stored));
            assertion(span, &condition, &rules::role_conflict(stored, key, role))
        })
        .into_iter()
        .collect::<TokenStream>()
    };
    let delimiters = |named: Named, text: &str, at: &TokenStream| {
        let span = first_span(at);
        Delimiter::ALL
            .map(|which| {
                let variant = format_ident!("{which:?}", span = span);
                let condition = quote_spanned! {span=>
                    !_em::__private::contains_delimiter(&__TABLE.delimiters, _em::__private::Delimiter::#variant, #text)
                };
                let problem = rules::delimiter_in_name(SYNTAX, named, text, which, None);
                assertion(span, &condition, &problem)
            })
            .into_iter()
            .collect::<TokenStream>()
    };
    tokens.extend(delimiters(Named::EntityToken, &c.token, &c.token_tokens));
    for f in c.fields.iter().filter(|f| f.written) {
        let role = if f.transcode.is_some() {
            Role::Transcoded
        } else {
            Role::Attribute
        };
        tokens.extend(keys(&f.stored, role, &f.name_tokens));
        if f.transcode.is_some() {
            tokens.extend(delimiters(Named::Transcoded, &f.stored, &f.name_tokens));
        }
    }
    for g in &c.generated {
        let kind = if g.sharded {
            entity_manager_core::GeneratedKind::Sharded
        } else {
            entity_manager_core::GeneratedKind::Unsharded
        };
        tokens.extend(keys(&g.stored, Role::Generated(kind), &g.name_tokens));
        tokens.extend(delimiters(Named::Generated, &g.stored, &g.name_tokens));
    }
    for index in &c.indexes {
        let at = quote::ToTokens::to_token_stream(&index.name_lit);
        tokens.extend(delimiters(Named::Index, &index.name, &at));
    }
    tokens
}

/// The checks across the listed entities, each spanned at an entity's path in `entities(…)`:
/// every entity is stored in this table; tokens are distinct (rule `entity-tokens-unique`); an
/// index name means one key schema and one projection (rule `index-declarations-agree`); at
/// most 20 distinct indexes (rule `index-count`).
pub(crate) fn table_checks(table: &TableDef<'_>) -> TokenStream {
    let ident = table.ident;
    let table_name = ident.to_string();
    let entities = &table.entities;
    let models: Vec<syn::Ident> = (0..entities.len())
        .map(|i| format_ident!("__ENTITY{}", i))
        .collect();
    let mut tokens = TokenStream::new();
    for (e, model) in entities.iter().zip(&models) {
        let span = e.span();
        tokens.extend(quote_spanned! {span=>
            const #model: &'static _em::__private::EntityModel = &<#e as _em::__private::Entity>::MODEL;
            const _: () = <<#e as _em::__private::Entity>::Table as _em::__private::TableOf<#ident, #e>>::OK;
        });
    }
    for (i, (e, model)) in entities.iter().zip(&models).enumerate() {
        let span = e.span();
        let this = path_text(e);
        for (f, other_model) in entities[..i].iter().zip(&models) {
            let other = path_text(f);
            let condition =
                quote_spanned!(span=> !_em::__private::same_token(#model, #other_model));
            tokens.extend(assertion(
                span,
                &condition,
                &rules::duplicate_token(SYNTAX, &this, &other),
            ));
            tokens.extend(quote_spanned! {span=>
                const _: () = if let _em::__private::Option::Some(conflict) = _em::__private::index_conflict(#model, #other_model) {
                    ::core::panic!(
                        "{}",
                        _em::__private::index_conflict_message(conflict, #this, #other).as_str()
                    );
                };
            });
        }
    }
    if !entities.is_empty() {
        let span = first_span(&table.entities_key);
        tokens.extend(quote_spanned! {span=>
            const _: () = if let _em::__private::Option::Some(message) = _em::__private::index_count_message(
                #table_name,
                &[#(_em::__private::indexes_of(#models)),*],
            ) {
                ::core::panic!("{}", message.as_str());
            };
        });
    }
    tokens
}
