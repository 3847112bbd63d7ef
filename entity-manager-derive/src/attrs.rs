//! Attribute receivers: what users write, parsed with darling. Every field here is a user
//! option. Validation beyond the shape of one attribute lives in `model.rs` and `check.rs`.

use darling::util::{Flag, SpannedValue};
use darling::{FromDeriveInput, FromField, FromMeta};
use syn::spanned::Spanned;
use syn::{Attribute, Expr, Ident, Path, Type};

/// `#[derive(Entity)]` on a struct with named fields. The `#[entity(…)]` options are parsed
/// separately ([`EntityOptions`]) so that a mistake there does not hide mistakes elsewhere.
#[derive(FromDeriveInput)]
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
    /// `table = UsersTable`: the `#[derive(Table)]` type the entity is stored in.
    pub(crate) table: Path,
    /// `token = "user"`: the entity token that prefixes hash keys; default: the struct name in
    /// lowerCamelCase.
    pub(crate) token: Option<SpannedValue<String>>,
    /// `unique = user_id`: the field whose value identifies a record and never changes.
    pub(crate) unique: Ident,
    /// `timestamp = created`: the creation-time field (ms since the epoch) that picks the shard.
    pub(crate) timestamp: Ident,
    /// `default_limit = 10`: the default query limit.
    pub(crate) default_limit: Option<SpannedValue<usize>>,
    /// `default_page_size = 10`: the default page size of one shard query.
    pub(crate) default_page_size: Option<SpannedValue<usize>>,
    /// `index_enum = UserIndex`: the name of the emitted index-token enum; default
    /// `<Struct>Index`.
    pub(crate) index_enum: Option<Ident>,
    /// `crate = ::entity_manager`: where the runtime lives, for re-exporting crates.
    #[darling(rename = "crate")]
    pub(crate) krate: Option<Path>,
}

/// A named field; its attributes are parsed by hand (`#[transcode("…")]` holds a bare literal).
#[derive(FromField)]
#[darling(forward_attrs(transcode, serde, generated, index, shard_bumps, entity))]
pub(crate) struct FieldAttrs {
    pub(crate) ident: Option<Ident>,
    pub(crate) ty: Type,
    pub(crate) attrs: Vec<Attribute>,
}

/// `#[generated(name = user_hash_key, components = [user_id], sharded)]`.
#[derive(FromMeta)]
pub(crate) struct GeneratedAttrs {
    /// The property's name as a Rust identifier; stored under the struct's serde renaming.
    pub(crate) name: Ident,
    /// `rename = "userPK"`: the stored attribute name, overriding the renaming.
    pub(crate) rename: Option<SpannedValue<String>>,
    /// The component fields, in key order.
    pub(crate) components: IdentList,
    /// A hash-side property (`<hashKey>|c1#v1…`), usable as an index hash key; always atomic.
    pub(crate) sharded: Flag,
    /// An unsharded property that is absent when a component is missing.
    pub(crate) atomic: Flag,
}

/// `#[index(name = "firstName", hash = …, range = …, project = […] | keys_only)]`.
#[derive(FromMeta)]
pub(crate) struct IndexAttrs {
    /// The index token, which is also the GSI name.
    pub(crate) name: SpannedValue<String>,
    /// A sharded generated property; default: the table hash key.
    pub(crate) hash: Option<Ident>,
    /// A transcoded field or an unsharded generated property; default: the table range key.
    pub(crate) range: Option<Ident>,
    /// Attributes the GSI projects besides the keys (default: all attributes).
    pub(crate) project: Option<IdentList>,
    /// Project only the keys.
    pub(crate) keys_only: Flag,
}

/// `#[shard_bumps(bump(timestamp = …, char_bits = …, chars = …), …)]`.
#[derive(FromMeta)]
pub(crate) struct ShardBumpsAttrs {
    #[darling(multiple, rename = "bump")]
    pub(crate) bumps: Vec<BumpAttrs>,
}

/// One `bump(timestamp = 1726880933000, char_bits = 2, chars = 1)`.
#[derive(FromMeta)]
pub(crate) struct BumpAttrs {
    /// From when (ms since the epoch) the bump applies.
    pub(crate) timestamp: IntExpr,
    /// Bits per suffix character, 1..=5.
    pub(crate) char_bits: IntExpr,
    /// Suffix length, 0..=40.
    pub(crate) chars: IntExpr,
}

/// `#[derive(Table)]` on a struct.
#[derive(FromDeriveInput)]
#[darling(attributes(table), supports(struct_any))]
pub(crate) struct TableAttrs {
    pub(crate) ident: Ident,
    pub(crate) generics: syn::Generics,
    /// The partition key attribute name (default `hashKey`).
    pub(crate) hash_key: Option<SpannedValue<String>>,
    /// The sort key attribute name (default `rangeKey`).
    pub(crate) range_key: Option<SpannedValue<String>>,
    /// Separates the parts of a generated property (default `|`).
    pub(crate) generated_key_delimiter: Option<SpannedValue<String>>,
    /// Separates a component's name from its value (default `#`).
    pub(crate) generated_value_delimiter: Option<SpannedValue<String>>,
    /// Separates the entity token from the shard suffix (default `!`).
    pub(crate) shard_key_delimiter: Option<SpannedValue<String>>,
    /// `product` (default: `chars × 2^charBits` shards) or `power` (`(2^charBits)^chars`).
    pub(crate) shard_space: Option<SpannedValue<Ident>>,
    /// The default number of shard queries in flight (default 10).
    pub(crate) throttle: Option<SpannedValue<usize>>,
    /// `entities(User, Email)`: the entity types stored in the table.
    #[darling(default)]
    pub(crate) entities: darling::util::PathList,
    /// `crate = ::entity_manager`: where the runtime lives.
    #[darling(rename = "crate")]
    pub(crate) krate: Option<Path>,
}

/// `[a, b, c]`: a list of identifiers.
pub(crate) struct IdentList {
    pub(crate) idents: Vec<Ident>,
    pub(crate) span: proc_macro2::Span,
}

impl FromMeta for IdentList {
    fn from_expr(expr: &Expr) -> darling::Result<Self> {
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
            .filter_map(|e| errors.handle(Ident::from_expr(e).map_err(|err| err.with_span(e))))
            .collect();
        errors.finish_with(Self {
            idents,
            span: expr.span(),
        })
    }
}

/// An integer literal, possibly negated, kept with its span for precise errors.
pub(crate) struct IntExpr {
    pub(crate) value: i128,
    pub(crate) span: proc_macro2::Span,
}

impl FromMeta for IntExpr {
    fn from_expr(expr: &Expr) -> darling::Result<Self> {
        let parse = |lit: &syn::Lit| match lit {
            syn::Lit::Int(int) => int
                .base10_parse::<i128>()
                .map_err(|e| darling::Error::custom(e).with_span(int)),
            other => Err(darling::Error::custom("expected an integer").with_span(other)),
        };
        let value = match expr {
            Expr::Lit(lit) => parse(&lit.lit)?,
            Expr::Unary(syn::ExprUnary {
                op: syn::UnOp::Neg(_),
                expr: inner,
                ..
            }) => match &**inner {
                Expr::Lit(lit) => -parse(&lit.lit)?,
                other => return Err(darling::Error::custom("expected an integer").with_span(other)),
            },
            Expr::Group(group) => return Self::from_expr(&group.expr),
            other => {
                return Err(darling::Error::custom("expected an integer literal").with_span(other));
            }
        };
        Ok(Self {
            value,
            span: expr.span(),
        })
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
        if input.peek(syn::LitStr) {
            Ok(Self::Named(input.parse()?))
        } else {
            Ok(Self::Path(input.parse()?))
        }
    }
}

/// What the derive reads of `#[serde(…)]` to know stored attribute names.
#[derive(Default)]
pub(crate) struct SerdeAttrs {
    pub(crate) rename: Option<(String, proc_macro2::Span)>,
    pub(crate) rename_all: Option<(String, proc_macro2::Span)>,
    pub(crate) skip: Option<proc_macro2::Span>,
    pub(crate) flatten: Option<proc_macro2::Span>,
}

impl SerdeAttrs {
    /// Reads `rename`, `rename_all`, `skip*` and `flatten` from every `#[serde(…)]`; other serde
    /// options are serde's business and left alone.
    pub(crate) fn from_attrs(
        attrs: &[Attribute],
        errors: &mut darling::error::Accumulator,
    ) -> Self {
        let mut out = Self::default();
        for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
            let result = attr.parse_nested_meta(|meta| {
                let key = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
                match key.as_str() {
                    "rename" | "rename_all" => {
                        let name = if meta.input.peek(syn::Token![=]) {
                            let lit: syn::LitStr = meta.value()?.parse()?;
                            (lit.value(), lit.span())
                        } else {
                            // rename(serialize = "…", deserialize = "…"): both must agree
                            let mut names: Vec<(String, proc_macro2::Span)> = Vec::new();
                            meta.parse_nested_meta(|inner| {
                                let lit: syn::LitStr = inner.value()?.parse()?;
                                names.push((lit.value(), lit.span()));
                                Ok(())
                            })?;
                            match names.as_slice() {
                                [one] => one.clone(),
                                [a, b] if a.0 == b.0 => a.clone(),
                                _ => {
                                    return Err(meta.error(
                                        "entity attributes need one stored name: give `serialize` and `deserialize` the same name",
                                    ));
                                }
                            }
                        };
                        if key == "rename" {
                            out.rename = Some(name);
                        } else {
                            out.rename_all = Some(name);
                        }
                    }
                    "skip" | "skip_serializing" | "skip_deserializing" => out.skip = Some(meta.path.span()),
                    "flatten" => out.flatten = Some(meta.path.span()),
                    _ => {
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
            if let Err(e) = result {
                errors.push(e.into());
            }
        }
        out
    }
}
