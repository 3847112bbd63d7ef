//! `#[derive(Collection)]`: an enum with one variant per member entity of an item collection,
//! through the same pipeline as the other derives: parse (`#[collection(crate = …)]`, the
//! variants) → model and check ([`CollectionDef`]) → expand. It emits data only: the member list
//! and a match from a member's position to its variant; telling items apart and querying live in
//! `entity_manager::query::Collection`, and routing stream records in
//! `entity_manager::stream::Routed`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Ident, Path, Type};

use crate::attrs::{self, CollectionOptions};
use crate::errors::Errors;

/// The model of a collection: its runtime path and its members.
pub(crate) struct CollectionDef<'a> {
    ident: &'a Ident,
    /// `#[collection(crate = …)]`, or `::entity_manager`.
    krate: Path,
    /// Each member's variant and entity type, in declaration order.
    members: Vec<(&'a Ident, &'a Type)>,
}

impl<'a> CollectionDef<'a> {
    /// Parses, models and checks `input`, pushing every problem (each on its token) to
    /// `errors`; `None` when it is not an enum. The rules: a collection is not generic (its
    /// members are named entities), has at least one member, and each variant holds one entity.
    fn from_input(input: &'a DeriveInput, errors: &mut Errors) -> Option<Self> {
        let ident = &input.ident;
        let collection_attrs: Vec<_> = input
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("collection"))
            .collect();
        for extra in collection_attrs.iter().skip(1) {
            errors.at(
                &extra.meta,
                "duplicate `#[collection(…)]`: give every option in one attribute",
            );
        }
        let options: Option<CollectionOptions> = collection_attrs
            .first()
            .and_then(|a| attrs::parse_list(&a.meta, &attrs::COLLECTION, errors));
        let krate = options
            .and_then(|o| o.krate.map(|k| k.0))
            .unwrap_or_else(|| syn::parse_quote!(::entity_manager));
        if !input.generics.params.is_empty() {
            errors.at_span(
                input.generics.span(),
                "a collection cannot be generic: name its member entities",
            );
        }
        let Data::Enum(data) = &input.data else {
            errors.at(
                ident,
                "`#[derive(Collection)]` applies to an enum with one variant per member entity, like `enum UserAndEmails { User(User), Email(Email) }`",
            );
            return None;
        };
        if data.variants.is_empty() {
            errors.at(
                ident,
                "a collection needs at least one member: add a variant per entity, like `User(User)`",
            );
        }
        let mut members = Vec::new();
        for variant in &data.variants {
            match &variant.fields {
                Fields::Unnamed(fields) if fields.unnamed.len() == 1 => {
                    members.push((&variant.ident, &fields.unnamed[0].ty));
                }
                _ => errors.at_span(
                    variant.span(),
                    format!(
                        "variant `{}` must hold one entity, like `{}({})`",
                        variant.ident, variant.ident, variant.ident
                    ),
                ),
            }
        }
        Some(Self {
            ident,
            krate,
            members,
        })
    }
}

/// `#[derive(Collection)]`: the impls, or every error at once (each on its token).
pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    let mut errors = Errors::default();
    let def = CollectionDef::from_input(input, &mut errors);
    match def {
        Some(def) if errors.is_empty() => expand_collection(&def),
        _ => errors.to_compile_errors(),
    }
}

/// Expands to:
///
/// ```text
/// const _: () = {
///     use ::entity_manager as _em;   // or `#[collection(crate = …)]`
///     impl _em::query::Collection for Roster { fn members() …; fn from_member(…) … }
///     impl _em::query::QueryOutput for Roster { … } // what its queries return
///     impl _em::stream::Routed for Roster { … }    // the same enum routes stream records
///     impl _em::query::CollectionMember<Roster> for Player {}   // per member, at its type
/// };
/// ```
fn expand_collection(def: &CollectionDef<'_>) -> TokenStream {
    let ident = def.ident;
    let krate = &def.krate;
    let types = def.members.iter().map(|(_, ty)| ty);
    let arms = def.members.iter().enumerate().map(|(i, (variant, ty))| {
        quote!(#i => <#ty as _em::EntityExt>::from_item(item).map(Self::#variant))
    });
    let count = def.members.len();
    // each member's type may give conditions to the collection's queries (spanned at the type)
    let memberships = def.members.iter().map(|(_, ty)| {
        quote_spanned!(ty.span()=>
            #[automatically_derived]
            impl _em::query::CollectionMember<#ident> for #ty {}
        )
    });
    quote! {
        #[doc(hidden)]
        #[allow(unused_qualifications, clippy::all, clippy::pedantic)]
        const _: () = {
            use #krate as _em;
            #[automatically_derived]
            impl _em::query::Collection for #ident {
                fn members() -> _em::Result<::std::vec::Vec<_em::EntitySchema<'static>>> {
                    ::std::result::Result::Ok(::std::vec![#(<#types as _em::EntityExt>::schema()?),*])
                }

                fn from_member(member: usize, item: &_em::Item) -> _em::Result<Self> {
                    match member {
                        #(#arms,)*
                        _ => ::std::result::Result::Err(_em::Error::InvalidQuery {
                            entity: ::std::string::String::new(),
                            reason: ::std::format!(
                                "member {} of a collection of {}", member, #count
                            ),
                        }),
                    }
                }
            }
            // what a query through any member's multi-attribute index returns
            #[automatically_derived]
            impl _em::query::QueryOutput for #ident {
                type Members = ::std::vec::Vec<_em::EntitySchema<'static>>;

                fn members() -> _em::Result<Self::Members> {
                    <Self as _em::query::Collection>::members()
                }

                fn read(item: _em::Item) -> _em::Result<Self> {
                    <Self as _em::query::Collection>::from_item(&item)
                }
            }
            // the same enum routes the changes of a stream (`entity_manager::stream`)
            #[automatically_derived]
            impl _em::stream::Routed for #ident {
                fn entities() -> _em::Result<::std::vec::Vec<_em::EntitySchema<'static>>> {
                    <Self as _em::query::Collection>::members()
                }

                fn from_image(member: usize, image: &_em::Item) -> _em::Result<Self> {
                    <Self as _em::query::Collection>::from_member(member, image)
                }
            }
            #(#memberships)*
        };
    }
}
