//! Emission: the static model, a thin trait impl, the index-token enum and the compile-time
//! assertions. No key logic is emitted: the runtime reads the model.

use darling::FromDeriveInput;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::DeriveInput;

use crate::attrs::{EntityAttrs, TableAttrs};
use crate::model::{Container, KeyRef, ProjectionDef, Transcode};

/// `#[derive(Entity)]`: tokens whether it succeeded or not.
pub(crate) fn derive_entity(input: &DeriveInput) -> TokenStream {
    let attrs = match EntityAttrs::from_derive_input(input) {
        Ok(attrs) => attrs,
        Err(e) => return e.write_errors(),
    };
    let mut errors = darling::Error::accumulator();
    let container = Container::from_attrs(&attrs, &mut errors);
    match errors.finish() {
        Ok(()) => expand_entity(&container),
        Err(e) => {
            let mut tokens = e.write_errors();
            tokens.extend(fallback_entity(&container));
            tokens
        }
    }
}

/// The index-token enum: one variant per index.
fn index_enum(c: &Container<'_>) -> TokenStream {
    let krate = &c.krate;
    let vis = c.vis;
    let name = &c.index_enum;
    let ident = c.ident;
    let variants: Vec<_> = c.indexes.iter().map(|i| &i.variant).collect();
    let names: Vec<_> = c.indexes.iter().map(|i| &i.name).collect();
    let docs: Vec<String> = c
        .indexes
        .iter()
        .map(|i| format!("The `{}` index.", i.name))
        .collect();
    let enum_doc = format!("The indexes of [`{ident}`], for typed queries.");
    let name_body = if variants.is_empty() {
        quote!(match self {})
    } else {
        quote!(match self { #(Self::#variants => #names,)* })
    };
    quote! {
        #[doc = #enum_doc]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[allow(dead_code)]
        #vis enum #name {
            #(#[doc = #docs] #variants,)*
        }

        #[automatically_derived]
        impl #krate::__private::IndexToken for #name {
            const ALL: &'static [Self] = &[#(Self::#variants),*];

            fn name(self) -> &'static str {
                #name_body
            }
        }
    }
}

/// Expands to:
///
/// ```text
/// const _: () = {
///     use ::entity_manager as _em;
///     const __TABLE: &TableModel = &<UsersTable as Table>::MODEL;
///     impl Entity for User { type Table = …; type Index = UserIndex; const MODEL = …; fn model() }
///     const _: () = { assert_transcode::<Timestamp, u64>(); … };   // spanned at field types
///     const _: () = check_entity_in_table(__TABLE, __ENTITY);
/// };
/// pub enum UserIndex { Created, … }
/// ```
fn expand_entity(c: &Container<'_>) -> TokenStream {
    let Some(table) = &c.table else {
        return TokenStream::new();
    };
    let krate = &c.krate;
    let ident = c.ident;
    let index_enum_name = &c.index_enum;
    let (Some(unique), Some(timestamp)) = (c.unique, c.timestamp) else {
        return TokenStream::new();
    };
    let unique = &c.fields[unique].stored;
    let timestamp_field = &c.fields[timestamp];
    let timestamp = &timestamp_field.stored;
    let model = entity_model(c, unique, timestamp);

    let timestamp_ty = timestamp_field.ty;
    let timestamp_assert = quote_spanned! {value_ty_span(timestamp_ty)=>
        _em::__private::assert_timestamp::<#timestamp_ty>();
    };
    let table_assert = quote_spanned! {path_span(table)=>
        const _: () = _em::__private::check_entity_in_table(__TABLE, __ENTITY);
    };
    let index_enum = index_enum(c);
    let builders = key_builders(c);

    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, unused_attributes, unused_qualifications, clippy::all, clippy::pedantic)]
        const _: () = {
            use #krate as _em;
            const __TABLE: &_em::__private::TableModel = &<#table as _em::__private::Table>::MODEL;

            #[automatically_derived]
            impl _em::__private::Entity for #ident {
                type Table = #table;
                type Index = #index_enum_name;

                const MODEL: _em::__private::EntityModel = #model;

                fn model() -> &'static _em::__private::EntityModel {
                    static __MODEL: _em::__private::EntityModel = <#ident as _em::__private::Entity>::MODEL;
                    &__MODEL
                }
            }

            const __ENTITY: &_em::__private::EntityModel = &<#ident as _em::__private::Entity>::MODEL;
            const _: () = { #timestamp_assert };
            #table_assert
        };

        #index_enum
        #builders
    }
}

/// The `EntityModel` value: names, schedule, transcoded properties (each spanned at its field's
/// type, so a transcode that does not accept the type fails there), generated properties and
/// indexes (the table's key names come from the table's own model).
fn entity_model(c: &Container<'_>, unique: &str, timestamp: &str) -> TokenStream {
    let token = &c.token;
    let (default_limit, default_page_size) = (c.default_limit, c.default_page_size);
    let bumps = c.bumps.iter().map(|b| {
        let (t, bits, chars) = (b.timestamp, b.char_bits, b.chars);
        quote!(_em::__private::ShardBump::new(#t, #bits, #chars))
    });

    let properties = c.fields.iter().filter_map(|f| {
        let transcode = f.transcode.as_ref()?;
        let stored = &f.stored;
        let value_ty = f.value_ty;
        let marker = marker(transcode);
        // spanned at the field's type: a transcode that does not accept it fails there
        Some(quote_spanned! {value_ty_span(f.value_ty)=>
            _em::__private::Property::new(#stored, &_em::__private::Typed::<#marker, #value_ty>::NEW)
        })
    });

    let generated = c.generated.iter().map(|g| {
        let stored = &g.stored;
        let kind = if g.sharded {
            quote!(_em::__private::GeneratedKind::Sharded)
        } else {
            quote!(_em::__private::GeneratedKind::Unsharded)
        };
        let atomic = g.atomic;
        let components = g.components.iter().map(|&i| &c.fields[i].stored);
        quote! {
            _em::__private::GeneratedProperty {
                name: _em::__private::Cow::Borrowed(#stored),
                kind: #kind,
                atomic: #atomic,
                components: _em::__private::Cow::Borrowed(&[#(_em::__private::Cow::Borrowed(#components)),*]),
            }
        }
    });

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
    let indexes = c.indexes.iter().map(|i| {
        let name = &i.name;
        let hash = key_name(i.hash);
        let range = key_name(i.range);
        let projection = match &i.projection {
            ProjectionDef::All => quote!(_em::__private::Projection::All),
            ProjectionDef::KeysOnly => quote!(_em::__private::Projection::KeysOnly),
            ProjectionDef::Include(fields) => {
                let names = fields.iter().map(|&f| &c.fields[f].stored);
                quote!(_em::__private::Projection::Include(_em::__private::Cow::Borrowed(&[#(_em::__private::Cow::Borrowed(#names)),*])))
            }
        };
        quote! {
            _em::__private::Index {
                name: _em::__private::Cow::Borrowed(#name),
                hash_key: #hash,
                range_key: #range,
                projection: #projection,
            }
        }
    });

    quote! {
        _em::__private::EntityModel {
            token: _em::__private::Cow::Borrowed(#token),
            unique_property: _em::__private::Cow::Borrowed(#unique),
            timestamp_property: _em::__private::Cow::Borrowed(#timestamp),
            shard_bumps: _em::__private::Cow::Borrowed(&[#(#bumps),*]),
            default_limit: #default_limit,
            default_page_size: #default_page_size,
            properties: _em::__private::Cow::Borrowed(&[#(#properties),*]),
            generated: _em::__private::Cow::Borrowed(&[#(#generated),*]),
            indexes: _em::__private::Cow::Borrowed(&[#(#indexes),*]),
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
        let builder = format_ident!("{}{}", ident, crate::case::pascal(&g.ident.to_string()));
        let method = &g.ident;
        let stored = &g.stored;
        let components: Vec<&crate::model::Field<'_>> =
            g.components.iter().map(|&i| &c.fields[i]).collect();
        let listing = components
            .iter()
            .map(|f| format!("`{}`", f.stored))
            .collect::<Vec<_>>()
            .join(", ");
        let doc = format!(
            "Builds values of the {} generated property `{stored}` of [`{ident}`] from its components {listing}, in that order. Each stage gives its value so far ([`as_str`](Self::as_str)): a prefix for `begins_with` conditions, or the full key once every component is given.",
            if g.sharded { "sharded" } else { "unsharded" }
        );
        let (ctor_args, ctor_body) = if g.sharded {
            (
                quote!(hash_key: &str),
                quote!(#krate::__private::KeyBuilder::from_property(<Self as #krate::__private::EntityExt>::schema(), &<Self as #krate::__private::Entity>::model().generated[#index]).hash_key(hash_key)),
            )
        } else {
            (
                quote!(),
                quote!(#krate::__private::KeyBuilder::from_property(<Self as #krate::__private::EntityExt>::schema(), &<Self as #krate::__private::Entity>::model().generated[#index])),
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
            #vis fn #method(#ctor_args) -> #builder<0> {
                #builder(#ctor_body)
            }
        });
        let stages = components.iter().enumerate().map(|(n, f)| {
            let next = n + 1;
            let name = f.ident;
            let value_ty = f.value_ty;
            let marker = f.transcode.as_ref().map(|t| marker_abs(krate, t));
            let is_string = matches!(value_ty, syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident("String"));
            let stage_doc = format!("Appends `{}`.", f.stored);
            let (arg, value) = if is_string {
                (quote!(value: &str), quote!(&::std::string::String::from(value)))
            } else {
                (quote!(value: &#value_ty), quote!(value))
            };
            quote! {
                #[allow(dead_code)]
                impl #builder<#n> {
                    #[doc = #stage_doc]
                    #vis fn #name(self, #arg) -> #krate::Result<#builder<#next>> {
                        self.0
                            .push_encoded(<#marker as #krate::__private::Transcode<#value_ty>>::encode(#value))
                            .map(#builder)
                    }
                }
            }
        });
        let complete = components.len();
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

fn marker_abs(krate: &syn::Path, transcode: &Transcode) -> TokenStream {
    match transcode {
        Transcode::Builtin(name, span) => {
            let marker = format_ident!("{}", name, span = *span);
            quote_spanned!(*span=> #krate::transcode::#marker)
        }
        Transcode::Path(path) => quote!(#path),
    }
}

/// What is emitted beside the errors: the index enum, and a placeholder impl when the table is
/// known, so that code using the entity does not drown in follow-on errors.
fn fallback_entity(c: &Container<'_>) -> TokenStream {
    let mut tokens = index_enum(c);
    let Some(table) = &c.table else {
        return tokens;
    };
    let krate = &c.krate;
    let ident = c.ident;
    let index_enum_name = &c.index_enum;
    tokens.extend(quote! {
        #[doc(hidden)]
        const _: () = {
            use #krate as _em;
            #[automatically_derived]
            impl _em::__private::Entity for #ident {
                type Table = #table;
                type Index = #index_enum_name;
                const MODEL: _em::__private::EntityModel = _em::__private::PLACEHOLDER_ENTITY;
                fn model() -> &'static _em::__private::EntityModel {
                    static __MODEL: _em::__private::EntityModel = _em::__private::PLACEHOLDER_ENTITY;
                    &__MODEL
                }
            }
        };
    });
    tokens
}

fn marker(transcode: &Transcode) -> TokenStream {
    match transcode {
        Transcode::Builtin(name, span) => {
            let marker = format_ident!("{}", name, span = *span);
            quote_spanned!(*span=> _em::transcode::#marker)
        }
        Transcode::Path(path) => quote!(#path),
    }
}

fn value_ty_span(ty: &syn::Type) -> Span {
    crate::model::ty_span(ty)
}

fn path_span(path: &syn::Path) -> Span {
    syn::spanned::Spanned::span(path)
}

// ---------------------------------------------------------------------------------------------

/// `#[derive(Table)]`.
pub(crate) fn derive_table(input: &DeriveInput) -> TokenStream {
    let attrs = match TableAttrs::from_derive_input(input) {
        Ok(attrs) => attrs,
        Err(e) => return e.write_errors(),
    };
    let mut errors = darling::Error::accumulator();
    let settings = crate::table::TableSettings::from_attrs(&attrs, &mut errors);
    if let Err(e) = errors.finish() {
        return e.write_errors();
    }
    expand_table(&attrs, &settings)
}

fn expand_table(attrs: &TableAttrs, s: &crate::table::TableSettings) -> TokenStream {
    let krate = attrs
        .krate
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::entity_manager));
    let ident = &attrs.ident;
    let (hash_key, range_key) = (&s.hash_key, &s.range_key);
    let (gkd, gvd, skd) = (&s.generated_key, &s.generated_value, &s.shard_key);
    let shard_space = format_ident!("{}", if s.power { "Power" } else { "Product" });
    let throttle = s.throttle;
    let entities: Vec<&syn::Path> = attrs.entities.iter().collect();
    let entity_asserts = entities.iter().map(|e| {
        quote_spanned! {path_span(e)=>
            _em::__private::assert_entity_of::<#e, #ident>();
        }
    });
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, unused_qualifications, clippy::all, clippy::pedantic)]
        const _: () = {
            use #krate as _em;

            #[automatically_derived]
            impl _em::__private::Table for #ident {
                const MODEL: _em::__private::TableModel = _em::__private::TableModel {
                    hash_key: _em::__private::Cow::Borrowed(#hash_key),
                    range_key: _em::__private::Cow::Borrowed(#range_key),
                    delimiters: _em::__private::Delimiters {
                        generated_key: _em::__private::Cow::Borrowed(#gkd),
                        generated_value: _em::__private::Cow::Borrowed(#gvd),
                        shard_key: _em::__private::Cow::Borrowed(#skd),
                    },
                    shard_space: _em::__private::ShardSpace::#shard_space,
                    throttle: #throttle,
                };

                fn model() -> &'static _em::__private::TableModel {
                    static __MODEL: _em::__private::TableModel = <#ident as _em::__private::Table>::MODEL;
                    &__MODEL
                }

                fn entities() -> _em::__private::Vec<&'static _em::__private::EntityModel> {
                    _em::__private::Vec::from([#(<#entities as _em::__private::Entity>::model()),*])
                }
            }

            const _: () = { #(#entity_asserts)* };
            const __ENTITIES: &[&_em::__private::EntityModel] = &[#(&<#entities as _em::__private::Entity>::MODEL),*];
            const _: () = _em::__private::check_table(__ENTITIES);
        };
    }
}
