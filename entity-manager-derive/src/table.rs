//! `#[derive(Table)]`: the table settings and their rules.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{Ident, Meta, Path};

use crate::attrs::{self, Str, TableAttrs, TableOptions};
use crate::errors::Errors;
use entity_manager_core::__private::rules::Delimiter;
use entity_manager_core::limits;

pub(crate) struct TableSettings {
    pub(crate) hash_key: String,
    pub(crate) range_key: String,
    pub(crate) generated_key: String,
    pub(crate) generated_value: String,
    pub(crate) shard_key: String,
    pub(crate) power: bool,
    pub(crate) throttle: usize,
    /// `KeyMode::TypeScript`.
    pub(crate) typescript_keys: bool,
    /// `NumericHash::Constant`.
    pub(crate) constant_numeric_hash: bool,
}

/// One `#[derive(Table)]`, read: enough for a placeholder impl even when the options are wrong.
pub(crate) struct TableDef<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) generic: bool,
    pub(crate) krate: Path,
    /// `entities(…)`, read leniently when the options do not parse.
    pub(crate) entities: Vec<Path>,
    /// The `entities` key, for errors about all the entities.
    pub(crate) entities_key: TokenStream,
    /// `None` when the options do not parse.
    pub(crate) settings: Option<TableSettings>,
    /// The options as given, `None` when they do not parse: what
    /// [`check_table`](crate::check::check_table) reads beside the settings.
    pub(crate) options: Option<TableOptions>,
}

fn value(v: Option<&Str>, default: &str) -> String {
    v.map_or_else(|| default.to_owned(), |v| v.value.clone())
}

impl<'a> TableDef<'a> {
    pub(crate) fn from_attrs(attrs: &'a TableAttrs, errors: &mut Errors) -> Self {
        let generic = !attrs.generics.params.is_empty();
        if generic {
            errors.at(
                &attrs.generics,
                "`#[derive(Table)]` does not support generic types",
            );
        }
        let table_attrs: Vec<&syn::Attribute> = attrs
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("table"))
            .collect();
        for extra in table_attrs.iter().skip(1) {
            errors.at(
                &extra.meta,
                "duplicate `#[table(…)]`: give every option in one attribute",
            );
        }
        let first = table_attrs.first().map(|a| &a.meta);
        let options: Option<TableOptions> = match first {
            Some(meta) => attrs::parse_list(meta, &attrs::TABLE, errors),
            None => attrs::parse_list(&syn::parse_quote!(table()), &attrs::TABLE, errors),
        };
        let lenient = first.and_then(lenient_entities);
        let entities_key = lenient.as_ref().map_or_else(
            || attrs.ident.to_token_stream(),
            |(key, _)| key.to_token_stream(),
        );
        let listed = match (options.as_ref().and_then(|o| o.entities.as_ref()), lenient) {
            (Some(list), _) => list.to_vec(),
            (None, Some((_, paths))) => paths,
            (None, None) => Vec::new(),
        };
        // each entity once (twice would be two conflicting `MemberOf` impls)
        let mut entities: Vec<Path> = Vec::with_capacity(listed.len());
        for path in listed {
            let name = crate::errors::path_text(&path);
            if entities.iter().any(|e| crate::errors::path_text(e) == name) {
                errors.at(&path, format!("duplicate entity `{name}` in `entities(…)`"));
            } else {
                entities.push(path);
            }
        }
        let krate = options
            .as_ref()
            .and_then(|o| o.krate.as_ref().map(|k| k.0.clone()))
            .or_else(
                || match first.and_then(|m| attrs::lenient_value(m, "crate")) {
                    Some(syn::Expr::Path(p)) if p.qself.is_none() => Some(p.path),
                    _ => None,
                },
            )
            .unwrap_or_else(|| syn::parse_quote!(::entity_manager));
        let settings = options
            .as_ref()
            .map(|o| TableSettings::from_options(o, errors));
        Self {
            ident: &attrs.ident,
            generic,
            krate,
            entities,
            entities_key,
            settings,
            options,
        }
    }
}

/// `entities(A, B)` of `#[table(…)]`, whatever else the list holds: its key and its paths.
fn lenient_entities(meta: &Meta) -> Option<(Path, Vec<Path>)> {
    attrs::nested(meta)?
        .into_iter()
        .find_map(|item| match item {
            Meta::List(list) if list.path.is_ident("entities") => {
                let paths = list
                    .parse_args_with(
                        syn::punctuated::Punctuated::<Path, syn::Token![,]>::parse_terminated,
                    )
                    .ok()?;
                Some((list.path, paths.into_iter().collect()))
            }
            _ => None,
        })
}

impl TableSettings {
    fn from_options(options: &TableOptions, errors: &mut Errors) -> Self {
        let settings = Self {
            hash_key: value(options.hash_key.as_ref(), limits::DEFAULT_HASH_KEY),
            range_key: value(options.range_key.as_ref(), limits::DEFAULT_RANGE_KEY),
            generated_key: value(
                options.generated_key_delimiter.as_ref(),
                Delimiter::GeneratedKey.default_value(),
            ),
            generated_value: value(
                options.generated_value_delimiter.as_ref(),
                Delimiter::GeneratedValue.default_value(),
            ),
            shard_key: value(
                options.shard_key_delimiter.as_ref(),
                Delimiter::ShardKey.default_value(),
            ),
            power: match &options.shard_space {
                None => false,
                Some(space) if space.0 == "product" => false,
                Some(space) if space.0 == "power" => true,
                Some(space) => {
                    errors.at(
                        &space.0,
                        format!(
                            "unknown shard space `{}`: use `product` (chars × 2^char_bits shards, npm 6.14.0) or `power` ((2^char_bits)^chars, upstream v8){}",
                            space.0,
                            crate::model::resolve::did_you_mean(&space.0.to_string(), ["product", "power"])
                        ),
                    );
                    false
                }
            },
            throttle: options
                .throttle
                .as_ref()
                .and_then(|t| usize::try_from(t.value).ok())
                .filter(|&n| n >= 1)
                .unwrap_or(limits::DEFAULT_THROTTLE),
            typescript_keys: false,
            constant_numeric_hash: false,
        };
        let mut settings = settings;
        settings.typescript_keys = match &options.key_mode {
            None => false,
            Some(mode) if mode.0 == "transcoded" => false,
            Some(mode) if mode.0 == "typescript" => true,
            Some(mode) => {
                errors.at(
                    &mode.0,
                    format!(
                        "unknown key mode `{}`: use `transcoded` (values transcoded, keys sort by value) or `typescript` (raw values, as the TypeScript Entity Manager writes them){}",
                        mode.0,
                        crate::model::resolve::did_you_mean(&mode.0.to_string(), ["transcoded", "typescript"])
                    ),
                );
                false
            }
        };
        if let Some(profile) = &options.profile {
            let pinned = match profile.0.to_string().as_str() {
                "native" => Some((false, false, false)),
                "npm6_14" => Some((false, true, false)),
                "upstream8" => Some((true, true, true)),
                other => {
                    errors.at(
                        &profile.0,
                        format!(
                            "unknown profile `{other}`: use `native` (our keys), `npm6_14` (the npm release 6.14.0) or `upstream8` (upstream TypeScript v8){}",
                            crate::model::resolve::did_you_mean(other, ["native", "npm6_14", "upstream8"])
                        ),
                    );
                    None
                }
            };
            for (given, name) in [
                (options.shard_space.as_ref(), "shard_space"),
                (options.key_mode.as_ref(), "key_mode"),
            ] {
                if let Some(given) = given {
                    errors.at(
                        &given.0,
                        format!(
                            "`profile` already decides `{name}`; remove `{name}`, or the `profile` to choose each setting yourself"
                        ),
                    );
                }
            }
            if let Some((power, typescript, constant)) = pinned {
                settings.power = power;
                settings.typescript_keys = typescript;
                settings.constant_numeric_hash = constant;
            }
        }
        settings
    }
}
