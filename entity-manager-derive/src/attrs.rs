//! Attribute receivers: what users write, parsed with darling. Every field here is a user
//! option. Validation beyond the shape of one attribute lives in `model.rs` and `check.rs`.
//!
//! Required options are `Option`s too: darling would report a missing option at the call site,
//! and also when the user only misspelled it. [`parse_list`] reports missing options itself, on
//! the attribute, and only when no unknown option of the list looks like a misspelling of it.

use darling::FromMeta;
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, Ident, Lit, Meta, Path, Type};

use crate::errors::Errors;

/// `#[derive(Entity)]` on a struct with named fields. The `#[entity(…)]` options are parsed
/// separately ([`EntityOptions`]) so that a mistake there does not hide mistakes elsewhere.
#[derive(darling::FromDeriveInput)]
#[darling(
    forward_attrs(entity, serde, generated, index, shard_bumps, transcode),
    supports(struct_named)
)]
pub(crate) struct EntityAttrs {
    pub(crate) ident: Ident,
    pub(crate) vis: syn::Visibility,
    pub(crate) generics: syn::Generics,
    pub(crate) data: darling::ast::Data<darling::util::Ignored, FieldAttrs>,
    pub(crate) attrs: Vec<Attribute>,
}

/// `#[entity(table = …, unique = …, timestamp = …, …)]`.
#[derive(FromMeta)]
pub(crate) struct EntityOptions {
    /// `table = UsersTable`: the `#[derive(Table)]` type the entity is stored in (required).
    pub(crate) table: Option<PathValue>,
    /// `token = "user"`: the entity token that prefixes hash keys; default: the struct name in
    /// lowerCamelCase.
    pub(crate) token: Option<Str>,
    /// `unique = user_id`: the field whose value identifies a record and never changes
    /// (required).
    pub(crate) unique: Option<IdentValue>,
    /// `timestamp = created`: the creation-time field (ms since the epoch) that picks the shard
    /// (required).
    pub(crate) timestamp: Option<IdentValue>,
    /// `default_limit = 10`: the default query limit.
    pub(crate) default_limit: Option<IntExpr>,
    /// `default_page_size = 10`: the default page size of one shard query.
    pub(crate) default_page_size: Option<IntExpr>,
    /// `index_enum = UserIndex`: the name of the emitted index-token enum; default
    /// `<Struct>Index`.
    pub(crate) index_enum: Option<IdentValue>,
    /// `version = version`: an integer field every write checks and increments (optimistic
    /// locking).
    pub(crate) version: Option<IdentValue>,
    /// `crate = ::entity_manager`: where the runtime lives, for re-exporting crates.
    #[darling(rename = "crate")]
    pub(crate) krate: Option<PathValue>,
}

pub(crate) const ENTITY: ListSpec = ListSpec {
    what: "#[entity(…)]",
    known: &[
        "table",
        "token",
        "unique",
        "timestamp",
        "default_limit",
        "default_page_size",
        "index_enum",
        "version",
        "crate",
    ],
    required: &[
        (
            "table",
            "name the `#[derive(Table)]` type the entity is stored in, like `table = Users`",
        ),
        (
            "unique",
            "name the field that identifies a record, like `unique = user_id`",
        ),
        (
            "timestamp",
            "name the creation-time field (ms since the epoch), like `timestamp = created`",
        ),
    ],
};

/// A named field; its attributes are parsed by hand (`#[transcode("…")]` holds a bare literal).
#[derive(darling::FromField)]
#[darling(forward_attrs(transcode, serde, generated, index, shard_bumps, entity))]
pub(crate) struct FieldAttrs {
    pub(crate) ident: Option<Ident>,
    pub(crate) vis: syn::Visibility,
    pub(crate) ty: Type,
    pub(crate) attrs: Vec<Attribute>,
}

/// `#[generated(name = user_hash_key, components = [user_id], sharded)]`.
#[derive(FromMeta)]
pub(crate) struct GeneratedAttrs {
    /// The property's name as a Rust identifier; stored under the struct's serde renaming
    /// (required).
    pub(crate) name: Option<IdentValue>,
    /// `rename = "userPK"`: the stored attribute name, overriding the renaming.
    pub(crate) rename: Option<Str>,
    /// The component fields, in key order (required).
    pub(crate) components: Option<IdentList>,
    /// A hash-side property (`<hashKey>|c1#v1…`), usable as an index hash key; always atomic.
    pub(crate) sharded: Flag,
    /// An unsharded property that is absent when a component is missing.
    pub(crate) atomic: Flag,
}

pub(crate) const GENERATED: ListSpec = ListSpec {
    what: "#[generated(…)]",
    known: &["name", "rename", "components", "sharded", "atomic"],
    required: &[
        ("name", "name the property, like `name = user_hash_key`"),
        (
            "components",
            "list the fields the property is built from, like `components = [user_id]`",
        ),
    ],
};

/// `#[index(name = "firstName", hash = …, range = …, project = […])]`, or with `keys_only` (also
/// written `project = keys_only`).
#[derive(FromMeta)]
pub(crate) struct IndexAttrs {
    /// The index token, which is also the GSI name (required).
    pub(crate) name: Option<Str>,
    /// A sharded generated property (default: the table hash key), or a list of 1 to 4 fields:
    /// the partition attributes of a multi-attribute key.
    pub(crate) hash: Option<KeySpec>,
    /// A transcoded field or an unsharded generated property (default: the table range key), or
    /// a list of 1 to 4 fields: the sort attributes of a multi-attribute key.
    pub(crate) range: Option<KeySpec>,
    /// A multi-attribute key led by the table hash key, so that the key's partitions are the
    /// entity's shards.
    pub(crate) sharded: Flag,
    /// Attributes the GSI projects besides the keys (default: all attributes).
    pub(crate) project: Option<IdentList>,
    /// Project only the keys: `keys_only`, or `project = keys_only`.
    pub(crate) keys_only: Flag,
}

pub(crate) const INDEX: ListSpec = ListSpec {
    what: "#[index(…)]",
    known: &["name", "hash", "range", "sharded", "project", "keys_only"],
    required: &[(
        "name",
        "name the index (the GSI name), like `name = \"lastName\"`",
    )],
};

/// `#[shard_bumps(bumps = [bump(timestamp = …, char_bits = …, chars = …), …])]`, or the bumps
/// directly: `#[shard_bumps(bump(…), bump(…))]`.
#[derive(FromMeta)]
pub(crate) struct ShardBumpsAttrs {
    #[darling(multiple, rename = "bump")]
    pub(crate) bumps: Vec<BumpAttrs>,
    /// `bumps = [bump(…), …]`: one list, which clippy's `duplicated_attributes` lint does not
    /// misread as repeated attributes (it does `bump(…), bump(…)`).
    #[darling(default, rename = "bumps")]
    pub(crate) list: Option<BumpList>,
}

/// The `bump(…)` entries of `bumps = [...]`, as metas (read like the direct `bump(…)` ones).
pub(crate) struct BumpList(pub(crate) Vec<Meta>);

impl FromMeta for BumpList {
    fn from_expr(expr: &syn::Expr) -> darling::Result<Self> {
        let syn::Expr::Array(array) = expr else {
            return Err(darling::Error::custom(
                "expected a list of bumps: `bumps = [bump(timestamp = …, char_bits = …, chars = …), …]`",
            )
            .with_span(expr));
        };
        let mut errors = darling::Error::accumulator();
        let mut metas = Vec::with_capacity(array.elems.len());
        for elem in &array.elems {
            match syn::parse2::<Meta>(elem.to_token_stream()) {
                Ok(meta @ Meta::List(_)) if meta.path().is_ident("bump") => metas.push(meta),
                _ => errors.push(
                    darling::Error::custom(
                        "expected `bump(timestamp = …, char_bits = …, chars = …)`",
                    )
                    .with_span(elem),
                ),
            }
        }
        errors.finish_with(Self(metas))
    }
}

pub(crate) const SHARD_BUMPS: ListSpec = ListSpec {
    what: "#[shard_bumps(bumps = [bump(timestamp = …, char_bits = …, chars = …), …])]",
    known: &["bumps", "bump"],
    required: &[],
};

/// One `bump(timestamp = 1726880933000, char_bits = 2, chars = 1)`; every option is required.
#[derive(FromMeta)]
pub(crate) struct BumpAttrs {
    /// From when (ms since the epoch) the bump applies.
    pub(crate) timestamp: Option<IntExpr>,
    /// Bits per suffix character, 1..=5.
    pub(crate) char_bits: Option<IntExpr>,
    /// Suffix length, 0..=40.
    pub(crate) chars: Option<IntExpr>,
}

pub(crate) const BUMP: ListSpec = ListSpec {
    what: "bump(…)",
    known: &["timestamp", "char_bits", "chars"],
    required: &[
        (
            "timestamp",
            "give the time (ms since the epoch) from which the bump applies",
        ),
        ("char_bits", "give the bits per shard character, 1..=5"),
        ("chars", "give the number of shard characters, 0..=40"),
    ],
};

/// `#[derive(Table)]` on a struct. The `#[table(…)]` options are parsed separately
/// ([`TableOptions`]), so that a mistake there still leaves a placeholder impl.
#[derive(darling::FromDeriveInput)]
#[darling(forward_attrs(table), supports(struct_any))]
pub(crate) struct TableAttrs {
    pub(crate) ident: Ident,
    pub(crate) generics: syn::Generics,
    pub(crate) attrs: Vec<Attribute>,
}

/// `#[table(…)]`.
#[derive(FromMeta)]
pub(crate) struct TableOptions {
    /// The partition key attribute name (default `hashKey`).
    pub(crate) hash_key: Option<Str>,
    /// The sort key attribute name (default `rangeKey`).
    pub(crate) range_key: Option<Str>,
    /// Separates the parts of a generated property (default `|`).
    pub(crate) generated_key_delimiter: Option<Str>,
    /// Separates a component's name from its value (default `#`).
    pub(crate) generated_value_delimiter: Option<Str>,
    /// Separates the entity token from the shard suffix (default `!`).
    pub(crate) shard_key_delimiter: Option<Str>,
    /// `product` (default: `chars × 2^charBits` shards) or `power` (`(2^charBits)^chars`).
    pub(crate) shard_space: Option<IdentValue>,
    /// The default number of shard queries in flight (default 10).
    pub(crate) throttle: Option<IntExpr>,
    /// `transcoded` (default) or `typescript`: how component values are written in keys.
    pub(crate) key_mode: Option<IdentValue>,
    /// `native` (default), `npm6_14` or `upstream8`: shard space, key mode and numeric hashing
    /// at once.
    pub(crate) profile: Option<IdentValue>,
    /// `entities(User, Email)`: the entity types stored in the table.
    pub(crate) entities: Option<EntityList>,
    /// `crate = ::entity_manager`: where the runtime lives.
    #[darling(rename = "crate")]
    pub(crate) krate: Option<PathValue>,
}

pub(crate) const TABLE: ListSpec = ListSpec {
    what: "#[table(…)]",
    known: &[
        "hash_key",
        "range_key",
        "generated_key_delimiter",
        "generated_value_delimiter",
        "shard_key_delimiter",
        "shard_space",
        "throttle",
        "key_mode",
        "profile",
        "entities",
        "crate",
    ],
    required: &[],
};

/// `#[collection(…)]` on a `#[derive(Collection)]` enum.
#[derive(FromMeta)]
pub(crate) struct CollectionOptions {
    /// `crate = ::entity_manager`: where the runtime lives, for re-exporting crates.
    #[darling(rename = "crate")]
    pub(crate) krate: Option<PathValue>,
}

pub(crate) const COLLECTION: ListSpec = ListSpec {
    what: "#[collection(…)]",
    known: &["crate"],
    required: &[],
};

// ---------------------------------------------------------------------------------------------
// parsing one attribute list

/// What an attribute list accepts: for messages about missing options.
pub(crate) struct ListSpec {
    /// The attribute as users write it, e.g. `#[entity(…)]`.
    pub(crate) what: &'static str,
    /// Every option the receiver knows (darling's field names).
    pub(crate) known: &'static [&'static str],
    /// The required options, each with what to write.
    pub(crate) required: &'static [(&'static str, &'static str)],
}

/// Parses `meta` (`name(…)`) into `T` with darling, pushing darling's errors (each on its own
/// token) and one error per required option that is missing, on `name`. A missing option is not
/// reported when an unknown option of the list looks like a misspelling of it: darling already
/// suggests it there.
pub(crate) fn parse_list<T: FromMeta>(
    meta: &Meta,
    spec: &ListSpec,
    errors: &mut Errors,
) -> Option<T> {
    if !matches!(meta, Meta::List(_)) {
        errors.at(meta, format!("expected a list of options: `{}`", spec.what));
        return None;
    }
    let parsed = errors.handle(T::from_meta(meta));
    report_missing(meta, spec, errors);
    parsed
}

/// Pushes an error per required option of `spec` missing from `meta`'s list.
pub(crate) fn report_missing(meta: &Meta, spec: &ListSpec, errors: &mut Errors) {
    let Some(items) = nested(meta) else {
        return;
    };
    let keys: Vec<String> = items
        .iter()
        .filter_map(|item| item.path().get_ident().map(ToString::to_string))
        .collect();
    for (key, hint) in spec.required {
        if keys.iter().any(|k| k == key) {
            continue;
        }
        let misspelled = keys
            .iter()
            .any(|k| !spec.known.contains(&k.as_str()) && suggestion(k, spec.known) == Some(key));
        if !misspelled {
            errors.at(
                meta.path(),
                format!("missing `{key}` in `{}`: {hint}", spec.what),
            );
        }
    }
}

/// The items of `name(a = …, b(…), c)`; `None` when it is not such a list.
pub(crate) fn nested(meta: &Meta) -> Option<Vec<Meta>> {
    let list = meta.require_list().ok()?;
    list.parse_args_with(Punctuated::<Meta, syn::Token![,]>::parse_terminated)
        .ok()
        .map(|items| items.into_iter().collect())
}

/// The known name most like `name`, as darling picks it for "Did you mean".
pub(crate) fn suggestion<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    let mut best: Option<(f64, &str)> = None;
    for candidate in known {
        let score = strsim::jaro_winkler(name, candidate);
        if score > 0.8 && best.is_none_or(|(b, _)| b < score) {
            best = Some((score, candidate));
        }
    }
    best.map(|(_, c)| c)
}

/// The value of `key = value` in the list `meta`, read leniently (whatever else the list
/// holds): for the placeholder impl, which must name the table even when the options are wrong.
pub(crate) fn lenient_value(meta: &Meta, key: &str) -> Option<Expr> {
    nested(meta)?.into_iter().find_map(|item| match item {
        Meta::NameValue(nv) if nv.path.is_ident(key) => Some(ungroup(&nv.value).clone()),
        _ => None,
    })
}

/// `Expr::Group` (a `macro_rules!` fragment) unwrapped.
fn ungroup(expr: &Expr) -> &Expr {
    match expr {
        Expr::Group(group) => ungroup(&group.expr),
        other => other,
    }
}

/// The value of `key = value`; any other form is an error saying what to write.
fn value_of(item: &Meta) -> darling::Result<&Expr> {
    if let Meta::NameValue(nv) = item {
        return Ok(ungroup(&nv.value));
    }
    let key = key_of(item);
    Err(darling::Error::custom(format!("`{key}` needs a value: `{key} = …`")).with_span(item))
}

fn key_of(item: &Meta) -> String {
    item.path().to_token_stream().to_string()
}

// ---------------------------------------------------------------------------------------------
// option values

/// A string literal value, like `name = "created"`.
pub(crate) struct Str {
    pub(crate) value: String,
    pub(crate) lit: syn::LitStr,
}

impl FromMeta for Str {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        let key = key_of(item);
        match value_of(item)? {
            Expr::Lit(syn::ExprLit {
                lit: Lit::Str(lit), ..
            }) => Ok(Self {
                value: lit.value(),
                lit: lit.clone(),
            }),
            Expr::Path(path) if path.path.get_ident().is_some() => {
                let ident = path.to_token_stream();
                Err(darling::Error::custom(format!(
                    "expected a string literal like `{key} = \"{ident}\"`"
                ))
                .with_span(path))
            }
            other => Err(darling::Error::custom(format!(
                "expected a string literal like `{key} = \"…\"`"
            ))
            .with_span(other)),
        }
    }
}

/// An identifier value, like `unique = user_id`.
pub(crate) struct IdentValue(pub(crate) Ident);

impl FromMeta for IdentValue {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        let key = key_of(item);
        let expr = value_of(item)?;
        if let Expr::Path(path) = expr
            && path.qself.is_none()
            && let Some(ident) = path.path.get_ident()
        {
            // path keywords parse as a path of one segment, but name nothing here
            if ["self", "Self", "super", "crate"]
                .iter()
                .any(|k| ident == k)
            {
                return Err(darling::Error::custom(format!(
                    "`{ident}` is a keyword, not a name: write a name like `{key} = my_name`"
                ))
                .with_span(ident));
            }
            return Ok(Self(ident.clone()));
        }
        let message = match expr {
            Expr::Lit(syn::ExprLit {
                lit: Lit::Str(lit), ..
            }) => quoted_name(&key, &lit.value()),
            // `keys::name_key`: the name is the last segment
            Expr::Path(path) if path.qself.is_none() && path.path.segments.len() > 1 => path
                .path
                .segments
                .last()
                .map(|last| format!("expected a name, not a path: `{key} = {}`", last.ident)),
            _ => None,
        }
        .unwrap_or_else(|| format!("expected a name, like `{key} = my_name`"));
        Err(darling::Error::custom(message).with_span(expr))
    }
}

/// What to write instead of `key = "text"`: the name without quotes, in the case Rust expects
/// there (so that the fix does not trip `non_snake_case`). `None` when `text` makes no name.
fn quoted_name(key: &str, text: &str) -> Option<String> {
    // type names and setting values are written as they are; fields and properties in snake_case
    let as_is = matches!(key, "index_enum" | "shard_space" | "key_mode" | "profile");
    let name = if as_is {
        text.to_owned()
    } else {
        crate::case::snake(text)
    };
    let name = match syn::parse_str::<Ident>(&name) {
        Ok(_) => name,
        // a keyword (`type`) is written as a raw identifier
        Err(_) if syn::parse_str::<Ident>(&format!("r#{name}")).is_ok() => format!("r#{name}"),
        Err(_) => return None,
    };
    let rename = if key == "name" && name != text {
        format!(
            "; it is stored as serde's `rename_all` makes it, or exactly as written with `rename = \"{text}\"`"
        )
    } else {
        String::new()
    };
    Some(format!(
        "expected a name without quotes: `{key} = {name}`{rename}"
    ))
}

/// A path value, like `table = Users` or `crate = ::entity_manager`.
pub(crate) struct PathValue(pub(crate) Path);

impl FromMeta for PathValue {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        let key = key_of(item);
        match value_of(item)? {
            Expr::Path(path) if path.qself.is_none() => Ok(Self(path.path.clone())),
            Expr::Lit(syn::ExprLit {
                lit: Lit::Str(lit), ..
            }) if syn::parse_str::<Path>(&lit.value()).is_ok() => Err(darling::Error::custom(
                format!("expected a path without quotes: `{key} = {}`", lit.value()),
            )
            .with_span(lit)),
            other => Err(darling::Error::custom(format!(
                "expected a path, like `{key} = my::Type`"
            ))
            .with_span(other)),
        }
    }
}

/// `[a, b, c]`: a list of identifiers.
/// An index key as written: one name (a classic key) or a list of fields (a multi-attribute
/// key).
pub(crate) enum KeySpec {
    /// `hash = user_hash_key`
    One(IdentValue),
    /// `hash = [org_id, region]`
    Many(IdentList),
}

impl FromMeta for KeySpec {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        if matches!(value_of(item).map(ungroup), Ok(Expr::Array(_))) {
            IdentList::from_meta(item).map(Self::Many)
        } else {
            IdentValue::from_meta(item).map(Self::One)
        }
    }
}

pub(crate) struct IdentList {
    pub(crate) idents: Vec<Ident>,
    /// The whole list, for errors about it.
    pub(crate) tokens: TokenStream,
}

impl FromMeta for IdentList {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        let expr = value_of(item)?;
        let Expr::Array(array) = expr else {
            return Err(darling::Error::custom(
                "expected a list of field names, like `[first_name, last_name]`",
            )
            .with_span(expr));
        };
        let mut errors = darling::Error::accumulator();
        let idents = array
            .elems
            .iter()
            .filter_map(|e| {
                let ident = match ungroup(e) {
                    Expr::Path(p) if p.qself.is_none() => p.path.get_ident().cloned(),
                    _ => None,
                };
                if ident.is_none() {
                    errors.push(darling::Error::custom("expected a field name").with_span(e));
                }
                ident
            })
            .collect();
        errors.finish_with(Self {
            idents,
            tokens: expr.to_token_stream(),
        })
    }
}

/// An integer literal, possibly negated, kept with its tokens for precise errors.
pub(crate) struct IntExpr {
    pub(crate) value: i128,
    /// `-1` as written, so that an error underlines all of it.
    pub(crate) tokens: TokenStream,
}

impl FromMeta for IntExpr {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        let key = key_of(item);
        let expr = value_of(item)?;
        let not_an_integer = |tokens: &dyn ToTokens| {
            darling::Error::custom("expected an integer literal, like `1`")
                .with_span(&tokens.to_token_stream())
        };
        let parse = |lit: &Lit| match lit {
            Lit::Int(int) => int.base10_parse::<i128>().map_err(|_| {
                darling::Error::custom(format!("number too large for `{key}`")).with_span(int)
            }),
            other => Err(not_an_integer(other)),
        };
        let value = match expr {
            Expr::Lit(lit) => parse(&lit.lit)?,
            Expr::Unary(syn::ExprUnary {
                op: syn::UnOp::Neg(_),
                expr: inner,
                ..
            }) => match ungroup(inner) {
                Expr::Lit(lit) => -parse(&lit.lit)?,
                other => return Err(not_an_integer(other)),
            },
            other => return Err(not_an_integer(other)),
        };
        Ok(Self {
            value,
            tokens: expr.to_token_stream(),
        })
    }
}

/// A flag, like `sharded`: present or not. A value (`sharded = true`) is an error that says to
/// write the word alone (darling's own `Flag` says only "Unexpected type `bool`").
#[derive(Default)]
pub(crate) struct Flag(bool);

impl Flag {
    pub(crate) fn is_present(&self) -> bool {
        self.0
    }
}

impl FromMeta for Flag {
    fn from_none() -> Option<Self> {
        Some(Self(false))
    }

    fn from_meta(item: &Meta) -> darling::Result<Self> {
        let key = key_of(item);
        match item {
            Meta::Path(_) => Ok(Self(true)),
            Meta::NameValue(nv) => {
                let off = matches!(&nv.value, Expr::Lit(syn::ExprLit { lit: Lit::Bool(b), .. }) if !b.value);
                let message = if off {
                    format!("`{key}` is a flag: leave it out to turn it off")
                } else {
                    format!("`{key}` is a flag: write `{key}` alone, without a value")
                };
                Err(darling::Error::custom(message).with_span(&nv.value))
            }
            Meta::List(list) => Err(darling::Error::custom(format!(
                "`{key}` is a flag: write `{key}` alone, without options"
            ))
            .with_span(&list.delimiter.span().join())),
        }
    }
}

/// `entities(User, Email)`: the entity types of a table, as paths.
pub(crate) struct EntityList(Vec<Path>);

impl std::ops::Deref for EntityList {
    type Target = Vec<Path>;

    fn deref(&self) -> &Vec<Path> {
        &self.0
    }
}

impl FromMeta for EntityList {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        let entities = match item {
            Meta::List(entities) => entities,
            Meta::NameValue(nv) => {
                let inside = match ungroup(&nv.value) {
                    Expr::Array(array) => array.elems.to_token_stream().to_string(),
                    other => other.to_token_stream().to_string(),
                };
                return Err(darling::Error::custom(format!(
                    "list the entities in parentheses: `entities({inside})`"
                ))
                .with_span(&nv.value));
            }
            Meta::Path(path) => {
                return Err(darling::Error::custom(
                    "`entities` needs the entity types: `entities(User, …)`",
                )
                .with_span(path));
            }
        };
        let elems = entities
            .parse_args_with(Punctuated::<Expr, syn::Token![,]>::parse_terminated)
            .map_err(darling::Error::from)?;
        let mut errors = darling::Error::accumulator();
        let mut paths = Vec::with_capacity(elems.len());
        for elem in &elems {
            match ungroup(elem) {
                Expr::Path(p) if p.qself.is_none() => paths.push(p.path.clone()),
                Expr::Lit(syn::ExprLit {
                    lit: Lit::Str(lit), ..
                }) if syn::parse_str::<Path>(&lit.value()).is_ok() => errors.push(
                    darling::Error::custom(format!(
                        "expected an entity type without quotes: `{}`",
                        lit.value()
                    ))
                    .with_span(lit),
                ),
                other => errors.push(
                    darling::Error::custom("expected an entity type, like `User`").with_span(other),
                ),
            }
        }
        errors.finish_with(Self(paths))
    }
}

/// What `#[transcode(…)]` names.
pub(crate) enum TranscodeSpec {
    /// A default transcode by name: `#[transcode("timestamp")]`.
    Named(syn::LitStr),
    /// A user transcode type: `#[transcode(my::Fix13)]`.
    Path(Path),
}

impl syn::parse::Parse for TranscodeSpec {
    fn parse(input: syn::parse::ParseStream<'_>) -> syn::Result<Self> {
        let spec = if input.peek(syn::LitStr) {
            Self::Named(input.parse()?)
        } else {
            Self::Path(input.parse()?)
        };
        if !input.is_empty() {
            let rest: TokenStream = input.parse()?;
            return Err(syn::Error::new_spanned(
                rest,
                "a field has one transcode: keep one, like `#[transcode(\"string\")]`",
            ));
        }
        Ok(spec)
    }
}

/// What the derive reads of `#[serde(…)]` to know stored attribute names.
#[derive(Default)]
pub(crate) struct SerdeAttrs {
    /// `rename = "…"`: the literal, for its value and its span.
    pub(crate) rename: Option<syn::LitStr>,
    /// `rename_all = "…"` on the container.
    pub(crate) rename_all: Option<String>,
    /// `skip`, `skip_serializing` or `skip_deserializing`.
    pub(crate) skip: Option<Span>,
    /// `skip` or `skip_serializing`: the field is never written, so it has no stored name.
    pub(crate) not_written: bool,
    pub(crate) flatten: Option<Span>,
    /// `with` or `serialize_with`: serde does not write the field's type as such.
    pub(crate) custom: bool,
    /// A `#[serde(…)]` that does not parse: serde's derive reports it (and writes no impl).
    pub(crate) malformed: bool,
}

impl SerdeAttrs {
    /// Reads `rename`, `rename_all`, `skip*`, `flatten` and `*with` from every `#[serde(…)]`;
    /// other serde options are serde's business and left alone (serde reports its own mistakes,
    /// such as an unknown `rename_all` rule).
    pub(crate) fn from_attrs(attrs: &[Attribute], errors: &mut Errors) -> Self {
        let mut out = Self::default();
        let mut disagreeing: Option<Path> = None;
        for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
            let result = attr.parse_nested_meta(|meta| {
                let key = meta
                    .path
                    .get_ident()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                match key.as_str() {
                    "rename" | "rename_all" => {
                        let name = if meta.input.peek(syn::Token![=]) {
                            meta.value()?.parse::<syn::LitStr>()?
                        } else {
                            // rename(serialize = "…", deserialize = "…"): both must agree
                            let mut names: Vec<syn::LitStr> = Vec::new();
                            meta.parse_nested_meta(|inner| {
                                names.push(inner.value()?.parse()?);
                                Ok(())
                            })?;
                            match names.as_slice() {
                                [one] => one.clone(),
                                [a, b] if a.value() == b.value() => a.clone(),
                                [first, ..] => {
                                    disagreeing = Some(meta.path.clone());
                                    first.clone()
                                }
                                [] => return Ok(()),
                            }
                        };
                        if key == "rename" {
                            out.rename = Some(name);
                        } else {
                            out.rename_all = Some(name.value());
                        }
                    }
                    "skip" | "skip_serializing" | "skip_deserializing" => {
                        out.skip = Some(syn::spanned::Spanned::span(&meta.path));
                        out.not_written |= key != "skip_deserializing";
                    }
                    "flatten" => out.flatten = Some(syn::spanned::Spanned::span(&meta.path)),
                    _ => {
                        out.custom |= key == "with" || key == "serialize_with";
                        // skip whatever value this option has
                        if meta.input.peek(syn::Token![=]) {
                            let _: Expr = meta.value()?.parse()?;
                        } else if meta.input.peek(syn::token::Paren) {
                            let _: proc_macro2::Group = meta.input.parse()?;
                        }
                    }
                }
                Ok(())
            });
            // a malformed `#[serde(…)]` is serde's to report, once
            out.malformed |= result.is_err();
        }
        if let Some(path) = disagreeing {
            errors.at(
                path,
                "an entity attribute has one stored name: give `serialize` and `deserialize` the same name",
            );
        }
        out
    }
}
