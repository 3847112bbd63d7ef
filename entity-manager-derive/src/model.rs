//! The model of one entity: what the checks (`check.rs`) and the emitter read. Built from the
//! attribute receivers (`build.rs`), with every name resolved (`resolve.rs`); every problem goes
//! to one accumulator, and each model item keeps the user's tokens so that errors and
//! compile-time assertions point at them. This file holds the model's types only, so that the
//! builders below it import them and nothing imports back.

use proc_macro2::{Span, TokenStream};
use syn::{Ident, Path, Type};

mod build;
pub(crate) mod resolve;

/// The default transcodes: attribute name → the `__private` trait checking a field's type.
pub(crate) const TRANSCODES: [(&str, &str); 6] = entity_manager_core::__private::FIELD_TRAITS;

pub(crate) struct Container<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) vis: &'a syn::Visibility,
    /// A generic struct is an error; it gets placeholder items for its lifetimes written
    /// `'static` and over its type and const parameters (`fallback.rs`).
    pub(crate) generic: bool,
    /// The struct's generics, as written.
    pub(crate) generics: &'a syn::Generics,
    /// `None` when `#[entity(…)]` names no table (an error is reported).
    pub(crate) table: Option<Path>,
    pub(crate) krate: Path,
    pub(crate) token: String,
    /// Where the token comes from: `token = "…"` or the struct name.
    pub(crate) token_tokens: TokenStream,
    pub(crate) fields: Vec<Field<'a>>,
    pub(crate) unique: Option<usize>,
    pub(crate) timestamp: Option<usize>,
    /// The version field (`version = …`), if any.
    pub(crate) version: Option<usize>,
    pub(crate) default_limit: usize,
    pub(crate) default_page_size: usize,
    /// `default_limit = …` and `default_page_size = …` as written.
    pub(crate) defaults_given: [Option<Written<i128>>; 2],
    pub(crate) generated: Vec<Generated>,
    pub(crate) indexes: Vec<IndexDef>,
    /// The shard bumps as written.
    pub(crate) bump_defs: Vec<BumpDef>,
    /// The schedule they make: sorted, with the implied zero bump in front.
    pub(crate) bumps: Vec<Bump>,
    pub(crate) index_enum: Ident,
    /// A `#[serde(…)]` attribute serde's derive refuses (an unknown `rename_all` rule, one
    /// that does not parse): serde reports it and writes no impl, so a missing `Serialize` is
    /// not reported again.
    pub(crate) serde_fails: bool,
}

pub(crate) struct Field<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) vis: &'a syn::Visibility,
    /// The field's type.
    pub(crate) ty: &'a Type,
    /// The type of its values: `T` for `Option<T>`.
    pub(crate) value_ty: &'a Type,
    /// The stored attribute name.
    pub(crate) stored: String,
    /// Where the stored name comes from: `#[serde(rename = "…")]` or the field name.
    pub(crate) name_tokens: TokenStream,
    /// Whether serde writes the field under `stored` (not skipped, not flattened).
    pub(crate) written: bool,
    pub(crate) transcode: Option<Transcode>,
}

pub(crate) enum Transcode {
    /// A default transcode: its name and the `__private` trait that checks the field's type.
    Builtin {
        name: &'static str,
        check: &'static str,
        span: Span,
    },
    /// A user's transcode type.
    Path(Path),
    /// A `#[transcode(…)]` that could not be read (an error is reported): the field counts as
    /// transcoded, so that the mistake is reported once.
    Invalid,
}

pub(crate) struct Generated {
    pub(crate) ident: Ident,
    pub(crate) stored: String,
    /// Where the stored name comes from: `rename = "…"` or `name = …`.
    pub(crate) name_tokens: TokenStream,
    pub(crate) sharded: bool,
    pub(crate) atomic: bool,
    /// Indices into `fields`.
    pub(crate) components: Vec<usize>,
    /// The components as listed, each with what it names.
    pub(crate) listed: Vec<(Ident, Target)>,
    /// `components = []`, when the list is empty.
    pub(crate) empty_list: Option<TokenStream>,
}

/// What a name in a list refers to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Field(usize),
    Generated(usize),
}

/// A value as written, with its tokens.
pub(crate) struct Written<T> {
    pub(crate) value: T,
    pub(crate) tokens: TokenStream,
}

/// One `bump(…)` as written.
pub(crate) struct BumpDef {
    pub(crate) timestamp: Written<i128>,
    /// The timestamp, when it is milliseconds since the epoch.
    pub(crate) valid_timestamp: Option<u64>,
    pub(crate) char_bits: Written<i128>,
    pub(crate) chars: Written<i128>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyRef {
    TableHash,
    TableRange,
    Generated(usize),
    Field(usize),
}

pub(crate) enum ProjectionDef {
    All,
    KeysOnly,
    Include(Vec<usize>),
}

pub(crate) struct IndexDef {
    pub(crate) name: String,
    pub(crate) name_lit: syn::LitStr,
    /// `None` when the name makes no variant, or the variant of an earlier index.
    pub(crate) variant: Option<Ident>,
    pub(crate) hash: KeyRef,
    pub(crate) range: KeyRef,
    /// `hash = …` and `range = …` as written.
    pub(crate) hash_ident: Option<Ident>,
    pub(crate) range_ident: Option<Ident>,
    /// `false` when a key names nothing (and was replaced by the table's): such an index is
    /// left out of the (hash, range) pair checks, which would only repeat the first error.
    pub(crate) keys_valid: bool,
    pub(crate) projection: ProjectionDef,
    /// `project = […]` as written, each with what it names.
    pub(crate) project: Vec<(Ident, Target)>,
    /// The attributes of a multi-attribute key (`hash = [..]`, `range = [..]`); `None` for a
    /// classic index, whose `hash` and `range` are then the keys.
    pub(crate) multi: Option<MultiDef>,
}

/// A multi-attribute index key as resolved: every name that names a field or generated property
/// (the others are reported), with the lists' tokens for errors about a whole side.
pub(crate) struct MultiDef {
    pub(crate) hash: Vec<MultiAttr>,
    pub(crate) range: Vec<MultiAttr>,
    pub(crate) hash_tokens: TokenStream,
    pub(crate) range_tokens: TokenStream,
    /// `sharded`: the table hash key leads the partition attributes.
    pub(crate) sharded: bool,
}

/// One attribute of a multi-attribute key.
pub(crate) struct MultiAttr {
    pub(crate) ident: Ident,
    pub(crate) target: Target,
    /// The `DynamoDB` type of a field's natural value (`N` for numbers, `S` for strings);
    /// `None` for a type without one, or a generated property (reported by `check.rs`).
    pub(crate) key_type: Option<entity_manager_core::store::KeyType>,
}

impl MultiDef {
    /// The number of partition attributes, the shard attribute included.
    pub(crate) fn partition_count(&self) -> usize {
        self.hash.len() + usize::from(self.sharded)
    }
}

/// The `DynamoDB` key type of a field's natural value: `N` for Rust's number types, `S` for
/// strings (`String`, `str`, `Cow<str>`, `Box<str>`, `Rc<str>`, `Arc<str>`, references to them);
/// `None` for any other type.
pub(crate) fn natural_key_type(ty: &Type) -> Option<entity_manager_core::store::KeyType> {
    use entity_manager_core::store::KeyType;
    match ty {
        Type::Reference(r) => natural_key_type(&r.elem),
        Type::Group(g) => natural_key_type(&g.elem),
        Type::Paren(p) => natural_key_type(&p.elem),
        Type::Path(path) if path.qself.is_none() => {
            let last = path.path.segments.last()?;
            let name = last.ident.to_string();
            match name.as_str() {
                "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8" | "u16" | "u32" | "u64"
                | "u128" | "usize" | "f32" | "f64" => Some(KeyType::N),
                "String" | "str" => Some(KeyType::S),
                "Cow" | "Box" | "Rc" | "Arc" => {
                    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
                        return None;
                    };
                    args.args.iter().find_map(|a| match a {
                        syn::GenericArgument::Type(t) => natural_key_type(t),
                        _ => None,
                    })
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// A shard bump of the model.
pub(crate) use entity_manager_core::model::ShardBump as Bump;
