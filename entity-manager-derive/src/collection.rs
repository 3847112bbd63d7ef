//! `#[derive(Collection)]`: an enum with one variant per member entity of an item collection.
//! It emits data only: the member list and a match from a member's position to its variant;
//! telling items apart and querying live in `entity_manager::query::Collection`, and routing
//! stream records in `entity_manager::stream::Routed`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields};

/// The impl of `Collection`, or every error at once (each on its token).
pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    let mut errors: Vec<syn::Error> = Vec::new();
    let ident = &input.ident;
    if !input.generics.params.is_empty() {
        errors.push(syn::Error::new(
            input.generics.span(),
            "a collection cannot be generic: name its member entities",
        ));
    }
    let Data::Enum(data) = &input.data else {
        return syn::Error::new(
            ident.span(),
            "`#[derive(Collection)]` applies to an enum with one variant per member entity, like `enum UserAndEmails { User(User), Email(Email) }`",
        )
        .to_compile_error();
    };
    if data.variants.is_empty() {
        errors.push(syn::Error::new(
            ident.span(),
            "a collection needs at least one member: add a variant per entity, like `User(User)`",
        ));
    }
    let mut members = Vec::new();
    for variant in &data.variants {
        match &variant.fields {
            Fields::Unnamed(fields) if fields.unnamed.len() == 1 => {
                members.push((&variant.ident, &fields.unnamed[0].ty));
            }
            _ => errors.push(syn::Error::new(
                variant.span(),
                format!(
                    "variant `{}` must hold one entity, like `{}({})`",
                    variant.ident, variant.ident, variant.ident
                ),
            )),
        }
    }
    if let Some(mut first) = errors.first().cloned() {
        for e in &errors[1..] {
            first.combine(e.clone());
        }
        return first.to_compile_error();
    }
    let types = members.iter().map(|(_, ty)| ty);
    let arms = members.iter().enumerate().map(|(i, (variant, ty))| {
        quote!(#i => <#ty as _em::EntityExt>::from_item(item).map(Self::#variant))
    });
    let count = members.len();
    // each member's type may give conditions to the collection's queries (spanned at the type)
    let memberships = members.iter().map(|(_, ty)| {
        quote::quote_spanned!(ty.span()=>
            #[automatically_derived]
            impl _em::query::CollectionMember<#ident> for #ty {}
        )
    });
    quote! {
        const _: () = {
            use ::entity_manager as _em;
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
