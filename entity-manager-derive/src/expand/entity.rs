//! `#[derive(Entity)]`: the entity's model, its `impl Entity`, the index-token enum, the typed
//! key builders and the checks against its table.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt as _;
use syn::spanned::Spanned;

use super::assertions;
use crate::model::{Container, Field, KeyRef, ProjectionDef, Target, Transcode};

/// The index type: a namespace of one typed token per index, `TypedIndex<Entity, Kind>`, whose
/// kind (classic or multi-attribute) picks the query builder at compile time.
pub(crate) fn index_enum(c: &Container<'_>) -> TokenStream {
    let krate = &c.krate;
    let vis = c.vis;
    let name = &c.index_enum;
    let ident = c.ident;
    // a generic entity is an error of its own: its tokens name no entity, so as to add none
    let entity = if c.generic {
        quote!(())
    } else {
        quote!(#ident)
    };
    // an index whose name makes no token of its own is an error, and left out
    let tokens = c.indexes.iter().filter_map(|i| {
        let variant = i.variant.as_ref()?;
        let index = &i.name;
        let doc = format!("The `{index}` index.");
        let kind = if i.multi.is_some() {
            quote!(MultiAttribute)
        } else {
            quote!(Classic)
        };
        Some(quote! {
            #[doc = #doc]
            #vis const #variant: #krate::__private::TypedIndex<#entity, #krate::__private::#kind> =
                #krate::__private::TypedIndex::named(#index);
        })
    });
    let doc = format!(
        "The indexes of [`{ident}`], for typed queries: `{ident}::query(&store)?.index({name}::…)`."
    );
    quote! {
        #[doc = #doc]
        #[derive(Debug)]
        #[allow(dead_code)]
        #vis enum #name {}

        #[automatically_derived]
        // the tokens read as the index names they stand for (`UserIndex::Created`)
        #[allow(dead_code, non_upper_case_globals)]
        impl #name {
            #(#tokens)*
        }
    }
}

/// Expands to:
///
/// ```text
/// const _: () = {
///     use ::entity_manager as _em;
///     const __TABLE: &TableModel = &<<User as Entity>::Table as Table>::MODEL;
///     impl Entity for User {
///         type Table = Users; fn model() …
///         // each transcoder checks its field's type, spanned at the type
///         const MODEL = EntityModel { properties: &[Property::new("created", <u64 as TimestampValue>::TRANSCODER), …], … };
///     }
///     const _: () = <User as MemberOf<<User as Entity>::Table>>::MEMBER;  // at `table = Users`
///     const _: () = assert!(!is_name(&__TABLE.hash_key, "userId"), "{}", "…"); // at each stored name
///     …
/// };
/// pub enum UserIndex {}
/// impl UserIndex { pub const Created: TypedIndex<User, Classic> = TypedIndex::named("created"); … }
/// // typed key builders
/// ```
///
/// `None` when the model is incomplete (which comes with an error).
pub(crate) fn expand_entity(c: &Container<'_>) -> Option<TokenStream> {
    let table = c.table.as_ref()?;
    let (unique, timestamp) = (c.unique?, c.timestamp?);
    if c.generic {
        return None;
    }
    let krate = &c.krate;
    let ident = c.ident;
    let model = entity_model(c, &c.fields[unique].stored, timestamp);
    let table_asserts = assertions::table_assertions(c, table);
    let index_enum = index_enum(c);
    let builders = key_builders(c);
    // spanned at `table = …`, so that a table of the wrong visibility is reported there
    let table_item = quote_spanned!(table.span()=> type Table = #table;);
    // the table's model, reached through a blanket impl over every entity, so that a table type
    // that is not a `#[derive(Table)]` is reported once, by the impl's `type Table`, not here too
    let table_const = quote! {
        const __TABLE: &_em::__private::TableModel = <#ident as _em::__private::TableModelOf>::TABLE;
    };

    let version_const = c.version.map(|i| {
        let f = &c.fields[i];
        let ty = f.ty;
        let stored = &f.stored;
        let check = quote_spanned!(ty.span()=> <#ty as _em::__private::VersionField>::OK);
        quote! {
            const VERSION: _em::__private::Option<&'static str> = {
                let () = #check;
                _em::__private::Option::Some(#stored)
            };
            const VERSION_MAX: _em::__private::Option<&'static str> =
                _em::__private::Option::Some(<#ty as _em::__private::VersionField>::MAX);
        }
    });
    let fields = field_tokens(c);

    Some(quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, unused_attributes, unused_qualifications, clippy::all, clippy::pedantic)]
        const _: () = {
            use #krate as _em;
            #table_const

            #[automatically_derived]
            impl _em::__private::Entity for #ident {
                #table_item

                const MODEL: _em::__private::EntityModel = #model;
                #version_const

                #[inline]
                fn model() -> &'static _em::__private::EntityModel {
                    // the constant's value, interned: no `static` of its own per entity
                    <#ident as _em::__private::TableModelOf>::ENTITY
                }
            }

            #table_asserts
        };

        #index_enum
        #builders
        #fields
    })
}

/// The typed field tokens: `UserFields` with one `Field` per stored field, and `User::FIELDS`.
pub(crate) fn field_tokens(c: &Container<'_>) -> TokenStream {
    let ident = c.ident;
    field_tokens_of(c, &quote!(#ident), &|ty| quote!(#ty), &Params::default())
}

/// The type and const parameters that a fallback's items carry (a generic struct's, its
/// lifetimes written `'static`); none for the derive's own items.
#[derive(Default)]
pub(crate) struct Params {
    /// `<T: Bound + 'static, const N: usize>`, declaring them on an item or an impl.
    pub(crate) decl: TokenStream,
    /// `<T, N>`, naming the item declared with them.
    pub(crate) args: TokenStream,
    /// The struct's `where` clause.
    pub(crate) where_clause: TokenStream,
}

/// [`field_tokens`] for the entity type `self_ty`, with each field's value type written by `ty`
/// (a borrowed entity's fallback writes `User<'static>` and `&'static str`), and the fields
/// struct generic over `params` (a generic entity's fallback: `UserFields<T>`).
pub(crate) fn field_tokens_of(
    c: &Container<'_>,
    self_ty: &TokenStream,
    ty: &dyn Fn(&syn::Type) -> TokenStream,
    params: &Params,
) -> TokenStream {
    let krate = &c.krate;
    let ident = c.ident;
    let vis = c.vis;
    let name = format_ident!("{}Fields", ident.unraw());
    let mut members = Vec::new();
    let mut values = Vec::new();
    for (i, f) in c.fields.iter().enumerate().filter(|(_, f)| f.written) {
        let field = f.ident;
        let field_vis = f.vis;
        let value_ty = ty(f.value_ty);
        let stored = &f.stored;
        let kind = if Some(i) == c.unique || Some(i) == c.timestamp {
            quote!(#krate::__private::KeyPart)
        } else if !std::ptr::eq(f.value_ty, f.ty) {
            quote!(#krate::__private::Optional)
        } else {
            quote!(#krate::__private::Required)
        };
        let doc = format!("`{}`, stored as `{stored}`.", field.unraw());
        members.push(quote! {
            #[doc = #doc]
            #field_vis #field: #krate::__private::Field<#self_ty, #value_ty, #kind>
        });
        values.push(quote!(#field: #krate::__private::Field::new(#stored)));
    }
    let doc = format!(
        "The typed fields of [`{ident}`], for conditions and partial updates: [`{ident}::FIELDS`]."
    );
    let debug = format!("{}Fields {{ .. }}", ident.unraw());
    let Params {
        decl,
        args,
        where_clause,
    } = params;
    // a parameter that no stored field's type names is used all the same
    if !args.is_empty() {
        members.push(quote! {
            #[doc(hidden)]
            __marker: ::core::marker::PhantomData<fn() -> #self_ty>
        });
        values.push(quote!(__marker: ::core::marker::PhantomData));
    }
    // `Copy`, `Clone` and `Debug` by hand: the derives' per-field code costs more to compile,
    // and the value is a constant whose fields name themselves
    quote! {
        #[doc = #doc]
        #[allow(dead_code)]
        #vis struct #name #decl #where_clause {
            #(#members,)*
        }

        #[automatically_derived]
        impl #decl ::core::marker::Copy for #name #args #where_clause {}

        #[automatically_derived]
        impl #decl ::core::clone::Clone for #name #args #where_clause {
            #[inline]
            fn clone(&self) -> Self {
                *self
            }
        }

        #[automatically_derived]
        impl #decl ::core::fmt::Debug for #name #args #where_clause {
            #[inline]
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(#debug)
            }
        }

        #[automatically_derived]
        #[allow(dead_code)]
        impl #decl #self_ty #where_clause {
            /// The typed fields of the entity, for conditions and partial updates.
            #vis const FIELDS: #name #args = #name { #(#values,)* };
        }
    }
}

/// A field's transcoder, through the `__private` trait that checks that the field's transcode
/// accepts it (`<u64 as TimestampField>::TRANSCODER`). The timestamp property transcoded with
/// `timestamp` is checked as a timestamp property, which implies the transcode's check.
fn transcoder(f: &Field<'_>, timestamp_property: bool) -> Option<TokenStream> {
    let span = f.value_ty.span();
    Some(match f.transcode.as_ref()? {
        Transcode::Builtin {
            name: "timestamp", ..
        } if timestamp_property => {
            let ty = f.ty;
            quote_spanned!(ty.span()=> <#ty as _em::__private::TimestampValue>::TRANSCODER)
        }
        Transcode::Builtin {
            check,
            span: name_span,
            ..
        } => {
            let check = format_ident!("{}", check, span = *name_span);
            let value_ty = f.value_ty;
            quote_spanned!(span=> <#value_ty as _em::__private::#check>::TRANSCODER)
        }
        Transcode::Path(path) => {
            let value_ty = f.value_ty;
            quote_spanned!(span=> <#value_ty as _em::__private::TranscodedBy<#path>>::TRANSCODER)
        }
        Transcode::Invalid => return None,
    })
}

/// How a key builder encodes a component: the same check as the model's, so that a transcode
/// that does not accept the field's type is one error.
fn encoder(krate: &syn::Path, f: &Field<'_>, timestamp_property: bool) -> Option<TokenStream> {
    let span = f.value_ty.span();
    let value_ty = f.value_ty;
    Some(match f.transcode.as_ref()? {
        Transcode::Builtin {
            name: "timestamp", ..
        } if timestamp_property => {
            quote_spanned!(span=> <#value_ty as #krate::__private::TimestampValue>::encode)
        }
        Transcode::Builtin {
            check,
            span: name_span,
            ..
        } => {
            let check = format_ident!("{}", check, span = *name_span);
            quote_spanned!(span=> <#value_ty as #krate::__private::#check>::encode)
        }
        Transcode::Path(path) => {
            quote_spanned!(span=> <#value_ty as #krate::__private::TranscodedBy<#path>>::encode)
        }
        Transcode::Invalid => return None,
    })
}

/// The `EntityModel` value: names, schedule, transcoded properties (each checked at its field's
/// type), generated properties and indexes (the table's key names come from the table's own
/// model).
fn entity_model(c: &Container<'_>, unique: &str, timestamp: usize) -> TokenStream {
    let token = &c.token;
    let timestamp_field = &c.fields[timestamp];
    let timestamp_name = &timestamp_field.stored;
    let (default_limit, default_page_size) = (c.default_limit, c.default_page_size);
    let bumps = c.bumps.iter().map(|b| {
        let (t, bits, chars) = (b.timestamp, b.char_bits, b.chars);
        quote!(_em::__private::ShardBump::new(#t, #bits, #chars))
    });

    let properties = c.fields.iter().enumerate().filter_map(|(i, f)| {
        let transcoder = transcoder(f, i == timestamp)?;
        let stored = &f.stored;
        Some(quote!(_em::__private::Property::new(#stored, #transcoder)))
    });

    // a `&[…]` of values with drop glue lives for `'static` only in a `const` item's value,
    // not as a `const fn`'s argument: the components', projections' and multi-attribute keys'
    // lists are `const` items of their own, the model's four lists one more
    let mut slices = Vec::new();
    let generated: Vec<TokenStream> = c
        .generated
        .iter()
        .enumerate()
        .map(|(n, g)| {
            let stored = &g.stored;
            let components = g.components.iter().map(|&i| &c.fields[i].stored);
            let slice = format_ident!("__COMPONENTS_{n}");
            slices.push(quote! {
                const #slice: &[_em::__private::Name] = &[#(_em::__private::Cow::Borrowed(#components)),*];
            });
            if g.sharded {
                quote!(_em::__private::GeneratedProperty::sharded(#stored, #slice))
            } else {
                let atomic = g.atomic;
                quote!(_em::__private::GeneratedProperty::unsharded(#stored, #slice, #atomic))
            }
        })
        .collect();

    let key_name = |key: KeyRef| match key {
        KeyRef::TableHash => quote!(_em::__private::borrowed(&__TABLE.hash_key)),
        KeyRef::TableRange => quote!(_em::__private::borrowed(&__TABLE.range_key)),
        KeyRef::Generated(i) => {
            let stored = &c.generated[i].stored;
            quote!(_em::__private::Cow::Borrowed(#stored))
        }
        KeyRef::Field(i) => {
            let stored = &c.fields[i].stored;
            quote!(_em::__private::Cow::Borrowed(#stored))
        }
    };
    let indexes: Vec<TokenStream> = c
        .indexes
        .iter()
        .enumerate()
        .map(|(n, i)| {
            let name = &i.name;
            let hash = key_name(i.hash);
            let range = key_name(i.range);
            let projection = match &i.projection {
                ProjectionDef::All => quote!(_em::__private::Projection::All),
                ProjectionDef::KeysOnly => quote!(_em::__private::Projection::KeysOnly),
                ProjectionDef::Include(fields) => {
                    let names = fields.iter().map(|&f| &c.fields[f].stored);
                    let slice = format_ident!("__INCLUDE_{n}");
                    slices.push(quote! {
                        const #slice: &[_em::__private::Name] = &[#(_em::__private::Cow::Borrowed(#names)),*];
                    });
                    quote!(_em::__private::Projection::Include(_em::__private::Cow::Borrowed(#slice)))
                }
            };
            if let Some(multi) = &i.multi {
                let (index, slice) = multi_index(c, n, name, multi, &projection);
                slices.push(slice);
                return index;
            }
            quote!(_em::__private::Index::new(#name, #hash, #range, #projection))
        })
        .collect();

    // the four lists of the model in one `const` item (a tuple's `&[…]`s live for `'static`
    // as its parts): each `const` item is one more body for the compiler to check, build,
    // evaluate and validate
    quote! {
        {
            #(#slices)*
            const __PARTS: (
                &[_em::__private::ShardBump],
                &[_em::__private::Property],
                &[_em::__private::GeneratedProperty],
                &[_em::__private::Index],
            ) = (
                &[#(#bumps),*],
                &[#(#properties),*],
                &[#(#generated),*],
                &[#(#indexes),*],
            );
            _em::__private::entity_model(
                #token,
                #unique,
                #timestamp_name,
                __PARTS.0,
                (#default_limit, #default_page_size),
                __PARTS.1,
                __PARTS.2,
                __PARTS.3,
            )
        }
    }
}

/// The typed queries' view of a key builder: data only (the property a value belongs to, and
/// the value so far).
fn key_value_impl(
    krate: &syn::Path,
    ident: &syn::Ident,
    builder: &syn::Ident,
    stored: &impl quote::ToTokens,
) -> TokenStream {
    quote! {
        #[automatically_derived]
        impl<const N: usize> #krate::query::KeyValue<#ident> for #builder<N> {
            const PROPERTY: &'static str = #stored;
            fn key_text(&self) -> &str {
                self.0.as_str()
            }
            fn is_complete(&self) -> bool {
                self.0.is_complete()
            }
        }
    }
}

/// One typed builder per generated property: `User::first_name_range_key()` returns
/// `UserFirstNameRangeKey<0>`, whose methods take the components in key order with their field
/// types; every stage can give its value as a prefix, the last one as the full key.
fn key_builders(c: &Container<'_>) -> TokenStream {
    let krate = &c.krate;
    let ident = c.ident;
    let vis = c.vis;
    let mut tokens = TokenStream::new();
    let mut constructors = TokenStream::new();
    for (index, g) in c.generated.iter().enumerate() {
        // raw identifiers (`r#type_key`) name builders by their plain text
        let property = crate::case::pascal(&g.ident.unraw().to_string());
        let builder = format_ident!("{}{property}", ident.unraw());
        let method = &g.ident;
        let stored = &g.stored;
        let components: Vec<(usize, &Field<'_>)> =
            g.components.iter().map(|&i| (i, &c.fields[i])).collect();
        let listing = components
            .iter()
            .map(|(_, f)| format!("`{}`", f.stored))
            .collect::<Vec<_>>()
            .join(", ");
        let doc = format!(
            "Builds values of the {} generated property `{stored}` of [`{ident}`] from its components {listing}, in that order. Each stage gives its value so far ([`as_str`](Self::as_str)): a prefix for `begins_with` conditions, or the full key once every component is given.",
            if g.sharded { "sharded" } else { "unsharded" }
        );
        let (ctor_args, ctor_body) = if g.sharded {
            (
                quote!(hash_key: &str),
                quote!(#krate::__private::KeyBuilder::of::<Self>(&<Self as #krate::__private::Entity>::model().generated[#index]).hash_key(hash_key)),
            )
        } else {
            (
                quote!(),
                quote!(#krate::__private::KeyBuilder::of::<Self>(&<Self as #krate::__private::Entity>::model().generated[#index])),
            )
        };
        let ctor_doc = format!(
            "Starts a value of `{stored}`{}; see [`{builder}`].",
            if g.sharded {
                " under the record's hash key (e.g. `user!1`)"
            } else {
                ""
            }
        );
        constructors.extend(quote! {
            #[doc = #ctor_doc]
            #[inline]
            #vis fn #method(#ctor_args) -> #builder<0> {
                #builder(#ctor_body)
            }
        });
        let stages = components
            .iter()
            .enumerate()
            .map(|(n, &(i, f))| stage_method(c, &builder, n, f, Some(i) == c.timestamp));
        let complete = components.len();
        tokens.extend(key_value_impl(krate, ident, &builder, stored));
        tokens.extend(quote! {
            #[doc = #doc]
            #[derive(Clone, Debug)]
            #[allow(dead_code)]
            #vis struct #builder<const N: usize>(#krate::__private::KeyBuilder<'static>);

            #(#stages)*

            #[allow(dead_code)]
            impl<const N: usize> #builder<N> {
                /// The value so far: a prefix of the full key, for `begins_with` conditions.
                #vis fn as_str(&self) -> &str {
                    self.0.as_str()
                }
            }


            #[allow(dead_code)]
            impl #builder<#complete> {
                /// The full key.
                #[inline]
                #vis fn key(self) -> ::std::string::String {
                    self.0.into_string()
                }
            }
        });
    }
    if !c.generated.is_empty() {
        tokens.extend(quote! {
            #[automatically_derived]
            #[allow(dead_code)]
            impl #ident {
                #constructors
            }
        });
    }
    tokens
}

/// Stage `n` of a key builder: the method named after component `f`, which appends it.
fn stage_method(
    c: &Container<'_>,
    builder: &syn::Ident,
    n: usize,
    f: &Field<'_>,
    timestamp_property: bool,
) -> TokenStream {
    let (krate, vis) = (&c.krate, c.vis);
    let next = n + 1;
    let name = f.ident;
    let value_ty = f.value_ty;
    let encode = encoder(krate, f, timestamp_property);
    let is_string =
        matches!(value_ty, syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident("String"));
    let stage_doc = format!("Appends `{}`.", f.stored);
    let (arg, value) = if is_string {
        (
            quote!(value: &str),
            quote!(&::std::string::String::from(value)),
        )
    } else {
        (quote!(value: &#value_ty), quote!(value))
    };
    quote! {
        #[allow(dead_code)]
        impl #builder<#n> {
            #[doc = #stage_doc]
            #[inline]
            #vis fn #name(self, #arg) -> #krate::Result<#builder<#next>> {
                ::core::result::Result::Ok(#builder(self.0.push_encoded(#encode(#value))?))
            }
        }
    }
}

/// A multi-attribute index of the model, and the `const` slices of its attributes: the table
/// hash key first when sharded, then the fields with their natural key types.
fn multi_index(
    c: &Container<'_>,
    n: usize,
    name: &str,
    multi: &crate::model::MultiDef,
    projection: &TokenStream,
) -> (TokenStream, TokenStream) {
    let part = |a: &crate::model::MultiAttr| {
        let stored = match a.target {
            Target::Field(f) => &c.fields[f].stored,
            Target::Generated(g) => &c.generated[g].stored,
        };
        let key_type = match a.key_type {
            Some(entity_manager_core::store::KeyType::N) => quote!(N),
            Some(entity_manager_core::store::KeyType::B) => quote!(B),
            _ => quote!(S),
        };
        quote!(_em::__private::IndexAttribute::new(#stored, _em::__private::KeyType::#key_type))
    };
    let shard = multi.sharded.then(|| {
        quote!(_em::__private::IndexAttribute::named(
            _em::__private::borrowed(&__TABLE.hash_key),
            _em::__private::KeyType::S
        ),)
    });
    let hash = multi.hash.iter().map(part);
    let range = multi.range.iter().map(part);
    let (hash_slice, range_slice) = (format_ident!("__HASH_{n}"), format_ident!("__RANGE_{n}"));
    let slices = quote! {
        const #hash_slice: &[_em::__private::IndexAttribute] = &[#shard #(#hash),*];
        const #range_slice: &[_em::__private::IndexAttribute] = &[#(#range),*];
    };
    let sharded = multi.sharded;
    (
        quote!(_em::__private::Index::multi(#name, #hash_slice, #range_slice, #sharded, #projection)),
        slices,
    )
}
