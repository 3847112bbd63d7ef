//! The rules one derive cannot check alone, emitted as `const` assertions: an entity's names
//! against its table's settings (`#[derive(Entity)]`), and the entities of a table against each
//! other (`#[derive(Table)]`). Each assertion evaluates a `const fn` of the core's `rules`
//! module, which run-time validation calls too, and carries that module's message; each panic is
//! spanned at the user's token it is about, so that the error points there and its text does
//! not depend on the runtime's source (STYLE.md §3.6). The checks of one derive share one
//! `const` item and the names one `const fn` call: the compiler checks and evaluates every item
//! of every expansion, so fewer items is a cheaper build (issue 31: from 46 `const` items per
//! README entity to 2).

use entity_manager_core::__private::rules::{self, NameKind, Syntax};
use entity_manager_core::model::GeneratedKind;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::errors::path_text;
use crate::model::{Container, Transcode};
use crate::table::TableDef;

const SYNTAX: Syntax = Syntax::Derive;

/// Stands for a name in a rule's message, which the assertion splits around it.
const PLACEHOLDER: &str = "\u{0}";

/// The span of the first token of `tokens` (the call site when there is none).
pub(crate) fn first_span(tokens: &TokenStream) -> Span {
    tokens
        .clone()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |t| t.span())
}

/// The struct derives serde's traits: checked at its name (the bound is on a local function so
/// that the error's notes point at the user's code, not the runtime's). `serde` is a helper
/// attribute of the derive, so a `#[serde(…)]` attribute does not show that serde's derives
/// are there (without them it was the compiler's "cannot find attribute" alone): checked unless
/// a serde attribute is one serde's derive refuses (its error is the one to read).
fn stored_assertion(c: &Container<'_>) -> TokenStream {
    let ident = c.ident;
    if c.serde_fails {
        return TokenStream::new();
    }
    quote_spanned! {ident.span()=>
        #[allow(dead_code)]
        fn __stored() {
            fn __check<T: _em::__private::Stored>() {}
            __check::<#ident>();
        }
    }
}

/// The entity is listed by its table: its token, unique and timestamp property are those of
/// one of the table's `MEMBERS` (data the table derive emits), asserted in a `const` spanned at
/// `table = …`. The table is reached through `Entity::Table` inside the generic `is_member_of`,
/// so that a table path that names no `#[derive(Table)]` type is reported once, in the impl,
/// and the table's `MEMBERS` is evaluated once for all its entities. Expands to:
///
/// ```text
/// const _: () = if !is_member_of::<User>("user", "userId", "created") {
///     fail("`User` is not an entity of table `Users`: add `User` to `#[table(entities(…))]` of `Users`");
/// };
/// ```
pub(crate) fn member_assertion(
    ident: &syn::Ident,
    table: &syn::Path,
    [token, unique, timestamp]: [&str; 3],
) -> TokenStream {
    let table_text = path_text(table);
    let message = format!(
        "`{ident}` is not an entity of table `{table_text}`: add `{ident}` to `#[table(entities(…))]` of `{table_text}`"
    );
    quote_spanned! {table.span()=>
        const _: () = if !_em::__private::is_member_of::<#ident>(#token, #unique, #timestamp) {
            _em::__private::fail(#message);
        };
    }
}

/// The checks of the entity against its table, each spanned at the name's token:
/// the entity is listed by the table; the timestamp property is `u64` or `i64`; no stored name
/// is a table key's name (rule `attribute-names-distinct`); no name written inside keys (the
/// token, transcoded and generated properties, indexes) contains a delimiter (rules
/// `entity-token`, `names-free-of-delimiters`).
pub(crate) fn table_assertions(c: &Container<'_>, table: &syn::Path) -> TokenStream {
    let key_names = match (c.unique, c.timestamp) {
        (Some(u), Some(t)) => [c.token.as_str(), &c.fields[u].stored, &c.fields[t].stored],
        _ => ["", "", ""],
    };
    let mut tokens = member_assertion(c.ident, table, key_names);
    tokens.extend(stored_assertion(c));
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
    tokens.extend(name_assertion(c));
    tokens
}

/// The names' checks against the table's settings, in one `const`: rules
/// `attribute-names-distinct`, `entity-token` and `names-free-of-delimiters`, each failure at
/// its name's token. Expands to:
///
/// ```text
/// const _: () = {
///     let (__name, __problem) = name_problems(__TABLE, &[("user", 0u8), ("userId", 1u8), …], 0x…u128);
///     match __name {
///         0usize => fail_name(__problem, "user"),   // spanned at the token
///         1usize => fail_name(__problem, "userId"), // at the field's name
///         …
///         _ => {}
///     }
/// };
/// ```
///
/// The messages are the core's (`name_problem_message`, the rules' own text), so an expansion
/// carries each name once and no message text.
fn name_assertion(c: &Container<'_>) -> TokenStream {
    let mut arms = TokenStream::new();
    // every name's checks run in one call (`name_problems`); the panic of the name at fault is
    // spanned at its token, so that the error points there
    let mut calls = Vec::new();
    // the bytes of the names checked for delimiters, for `name_problems`' shortcut
    let mut bytes = 0u128;
    // the locals carry the call site's hygiene wherever they are used: a name's token may come
    // from the user's `macro_rules!`, whose hygiene would not see them
    let (name_var, problem_var) = (
        syn::Ident::new("__name", Span::call_site()),
        syn::Ident::new("__problem", Span::call_site()),
    );
    let mut check = |stored: &str, kind: NameKind, at: &TokenStream| {
        let span = first_span(at);
        let k = calls.len();
        if kind.named().is_some() {
            for b in stored.bytes() {
                bytes |= 1u128 << b.min(127);
            }
        }
        let code = kind.code();
        calls.push(quote!((#stored, #code)));
        arms.extend(quote_spanned! {span=>
            #k => _em::__private::fail_name(#problem_var, #stored),
        });
    };
    check(&c.token, NameKind::EntityToken, &c.token_tokens);
    for f in c.fields.iter().filter(|f| f.written) {
        let kind = if f.transcode.is_some() {
            NameKind::Transcoded
        } else {
            NameKind::Attribute
        };
        check(&f.stored, kind, &f.name_tokens);
    }
    for g in &c.generated {
        let kind = if g.sharded {
            GeneratedKind::Sharded
        } else {
            GeneratedKind::Unsharded
        };
        check(&g.stored, NameKind::Generated(kind), &g.name_tokens);
    }
    for index in &c.indexes {
        let at = quote::ToTokens::to_token_stream(&index.name_lit);
        check(&index.name, NameKind::Index, &at);
    }
    // one `const` for every name: the panic that fires is spanned at its name's token, so the
    // error points there, and one item to evaluate instead of one per name and rule keeps the
    // compile cost down
    quote! {
        const _: () = {
            let (#name_var, #problem_var) = _em::__private::name_problems(__TABLE, &[#(#calls),*], #bytes);
            match #name_var {
                #arms
                _ => {}
            }
        };
    }
}

/// The checks across the listed entities, each spanned at an entity's path in `entities(…)`:
/// every entity is stored in this table; tokens are distinct (rule `entity-tokens-unique`); an
/// index name means one key schema and one projection (rule `index-declarations-agree`); at
/// most 20 distinct indexes (rule `index-count`).
pub(crate) fn table_checks(table: &TableDef<'_>) -> TokenStream {
    let ident = table.ident;
    let table_name = ident.to_string();
    let entities = &table.entities;
    let names: Vec<String> = entities.iter().map(path_text).collect();
    // one `const` for every check of the table: each statement is spanned at the entity's
    // path (or `entities`) it is about, so that the error points there; one item to evaluate
    // rather than one per entity and pair keeps the compile cost down. The entities' models
    // are the table's `MEMBERS`, in order, read where used (a `const` alias of them would be
    // one more value for the compiler to validate); the earlier entities of entity `i` are
    // `MEMBERS.split_at(i).0`, and their names `__NAMES`: linear in the entities, where a
    // list per entity was quadratic
    let mut checks = quote! {
        const __NAMES: &[&str] = &[#(#names),*];
    };
    for e in entities {
        checks.extend(quote_spanned! {e.span()=>
            let () = <<#e as _em::__private::Entity>::Table as _em::__private::TableOf<#ident, #e>>::OK;
        });
    }
    // each entity (from the second), spanned at its path: its token and its indexes against
    // every earlier entity's, the first conflict reported with both names
    for (i, (e, this)) in entities.iter().zip(&names).enumerate().skip(1) {
        let span = e.span();
        // the message around the other entity's name (the rule's own text)
        let message = rules::duplicate_token(SYNTAX, this, PLACEHOLDER).message;
        let (before, after) = message.split_once(PLACEHOLDER).unwrap_or((&message, ""));
        checks.extend(quote_spanned! {span=>
            let (__this, __earlier) = (<#ident as _em::__private::Table>::MEMBERS[#i], <#ident as _em::__private::Table>::MEMBERS.split_at(#i).0);
            if let _em::__private::Option::Some(j) = _em::__private::first_same_token(__this, __earlier) {
                _em::__private::fail(
                    _em::__private::Message::new().push(#before).push(__NAMES[j]).push(#after).as_str()
                );
            }
            if let _em::__private::Option::Some((j, conflict)) = _em::__private::first_index_conflict(__this, __earlier) {
                _em::__private::fail(
                    _em::__private::index_conflict_message(conflict, #this, __NAMES[j]).as_str()
                );
            }
        });
    }
    if !entities.is_empty() {
        let span = first_span(&table.entities_key);
        let lists = (0..entities.len()).map(
            |i| quote!(_em::__private::indexes_of(<#ident as _em::__private::Table>::MEMBERS[#i])),
        );
        checks.extend(quote_spanned! {span=>
            if let _em::__private::Option::Some(message) = _em::__private::index_count_message(
                #table_name,
                &[#(#lists),*],
            ) {
                _em::__private::fail(message.as_str());
            }
        });
    }
    quote! {
        const _: () = {
            #checks
        };
    }
}
