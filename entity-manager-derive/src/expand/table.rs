//! `#[derive(Table)]`: the table's `impl Table`, the memberships of its entities and the checks
//! across them.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::assertions;
use crate::table::{TableDef, TableSettings};

/// The data the table's entities check their membership against (`Table::MEMBERS`), and the
/// blanket `TableOf` impl its own checks use. The entities are named only inside the `const`'s
/// value, where a borrowed entity (`User<'a>`, an error of its own derive) needs no lifetime.
pub(crate) fn membership(table: &TableDef<'_>) -> (TokenStream, TokenStream) {
    let ident = table.ident;
    let members = table
        .entities
        .iter()
        .map(|e| quote_spanned!(e.span()=> &<#e as _em::__private::Entity>::MODEL));
    (
        quote! {
            const MEMBERS: &'static [&'static _em::__private::EntityModel] = &[#(#members),*];
        },
        quote! {
            #[automatically_derived]
            #[diagnostic::do_not_recommend]
            impl<__T: _em::__private::SameType<#ident>, __E> _em::__private::TableOf<__T, __E> for #ident {}
        },
    )
}

pub(crate) fn expand_table(table: &TableDef<'_>, s: &TableSettings) -> TokenStream {
    let krate = &table.krate;
    let ident = table.ident;
    let (hash_key, range_key) = (&s.hash_key, &s.range_key);
    let (gkd, gvd, skd) = (&s.generated_key, &s.generated_value, &s.shard_key);
    let shard_space = format_ident!("{}", if s.power { "Power" } else { "Product" });
    let throttle = s.throttle;
    let key_mode = format_ident!(
        "{}",
        if s.typescript_keys {
            "TypeScript"
        } else {
            "Transcoded"
        }
    );
    let numeric_hash = format_ident!(
        "{}",
        if s.constant_numeric_hash {
            "Constant"
        } else {
            "Decimal"
        }
    );
    // the shard hash follows the key mode: keys shared with TypeScript hash as it does
    // (`string-hash`), our own keys with SHA-256 (see `ShardHash`)
    let shard_hash = format_ident!(
        "{}",
        if s.typescript_keys {
            "StringHash"
        } else {
            "Sha256"
        }
    );
    let (members, table_of) = membership(table);
    let checks = assertions::table_checks(table);
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, unused_qualifications, clippy::all, clippy::pedantic)]
        const _: () = {
            use #krate as _em;

            #[automatically_derived]
            impl _em::__private::Table for #ident {
                const MODEL: _em::__private::TableModel = _em::__private::TableModel::DEFAULT
                    .with_keys(#hash_key, #range_key)
                    .with_delimiters(_em::__private::Delimiters::new(#gkd, #gvd, #skd))
                    .with_shard_space(_em::__private::ShardSpace::#shard_space)
                    .with_throttle(#throttle)
                    .with_key_mode(_em::__private::KeyMode::#key_mode)
                    .with_numeric_hash(_em::__private::NumericHash::#numeric_hash)
                    .with_shard_hash(_em::__private::ShardHash::#shard_hash);

                fn model() -> &'static _em::__private::TableModel {
                    static __MODEL: _em::__private::TableModel = <#ident as _em::__private::Table>::MODEL;
                    &__MODEL
                }

                #members

                fn entities() -> _em::__private::Vec<&'static _em::__private::EntityModel> {
                    <Self as _em::__private::Table>::MEMBERS.to_vec()
                }
            }

            #table_of
            #checks
        };
    }
}
