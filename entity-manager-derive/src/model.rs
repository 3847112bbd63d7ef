//! The validated model of one entity: what the emitter reads. Built from the attribute
//! receivers; every problem goes to one accumulator, and each model item keeps references to
//! the user's tokens so that errors point at them.

use darling::FromMeta;
use darling::error::Accumulator;
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Ident, Path, Type};

use crate::attrs::{
    EntityAttrs, EntityOptions, FieldAttrs, GeneratedAttrs, IndexAttrs, SerdeAttrs,
    ShardBumpsAttrs, TranscodeSpec,
};
use crate::{case, check};

/// The default transcodes: attribute name → marker type in `transcode`.
pub(crate) const TRANSCODES: [(&str, &str); 6] = [
    ("string", "Str"),
    ("int", "Int"),
    ("fix6", "Fix6"),
    ("timestamp", "Timestamp"),
    ("boolean", "Boolean"),
    ("bigint20", "BigInt20"),
];

pub(crate) struct Container<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) vis: &'a syn::Visibility,
    /// `None` when `#[entity(…)]` could not be read (its errors are reported).
    pub(crate) table: Option<Path>,
    pub(crate) krate: Path,
    pub(crate) token: String,
    pub(crate) fields: Vec<Field<'a>>,
    pub(crate) unique: Option<usize>,
    pub(crate) timestamp: Option<usize>,
    pub(crate) default_limit: usize,
    pub(crate) default_page_size: usize,
    pub(crate) generated: Vec<Generated>,
    pub(crate) indexes: Vec<IndexDef>,
    pub(crate) bumps: Vec<Bump>,
    pub(crate) index_enum: Ident,
}

pub(crate) struct Field<'a> {
    pub(crate) ident: &'a Ident,
    /// The field's type.
    pub(crate) ty: &'a Type,
    /// The type of its values: `T` for `Option<T>`.
    pub(crate) value_ty: &'a Type,
    pub(crate) stored: String,
    pub(crate) transcode: Option<Transcode>,
}

pub(crate) enum Transcode {
    /// A default transcode: the marker type's name in `transcode`.
    Builtin(&'static str, Span),
    /// A user's transcode type.
    Path(Path),
}

pub(crate) struct Generated {
    pub(crate) ident: Ident,
    pub(crate) stored: String,
    pub(crate) sharded: bool,
    pub(crate) atomic: bool,
    /// Indices into `fields`.
    pub(crate) components: Vec<usize>,
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
    pub(crate) variant: Ident,
    pub(crate) hash: KeyRef,
    pub(crate) range: KeyRef,
    pub(crate) projection: ProjectionDef,
}

#[derive(Clone, Copy)]
pub(crate) struct Bump {
    pub(crate) timestamp: u64,
    pub(crate) char_bits: u8,
    pub(crate) chars: u8,
}

/// `Option<T>` → `T`, recognised by the last path segment (`Option`, `std::option::Option`).
fn option_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        syn::GenericArgument::Type(inner) if args.args.len() == 1 => Some(inner),
        _ => None,
    }
}

impl<'a> Container<'a> {
    pub(crate) fn from_attrs(attrs: &'a EntityAttrs, errors: &mut Accumulator) -> Self {
        let options = read_options(attrs, errors);
        let serde = SerdeAttrs::from_attrs(&attrs.attrs, errors);
        let rename_all = read_rename_all(&serde, errors);
        let stored_name = |ident: &Ident| {
            let name = ident.to_string();
            let name = name.strip_prefix("r#").unwrap_or(&name).to_owned();
            match &rename_all {
                Some(rule) => case::rename(&name, rule).unwrap_or(name),
                None => name,
            }
        };

        if !attrs.generics.params.is_empty() {
            errors.push(
                darling::Error::custom("`#[derive(Entity)]` does not support generic structs: an entity's model is one static value")
                    .with_span(&attrs.generics),
            );
        }
        let fields = attrs
            .data
            .as_ref()
            .take_struct()
            .map(|s| s.fields)
            .unwrap_or_default();
        let fields: Vec<Field<'a>> = fields
            .into_iter()
            .filter_map(|f| Field::from_attrs(f, &stored_name, errors))
            .collect();

        let (unique, timestamp) = options
            .as_ref()
            .map_or((None, None), |o| resolve_key_properties(o, &fields, errors));

        let token = entity_token(attrs, options.as_ref(), errors);
        let positive = |v: Option<darling::util::SpannedValue<usize>>, errors: &mut Accumulator| {
            v.map_or(10, |v| {
                if *v == 0 {
                    errors.push(darling::Error::custom("must be at least 1").with_span(&v.span()));
                }
                *v
            })
        };
        let default_limit = positive(options.as_ref().and_then(|o| o.default_limit), errors);
        let default_page_size =
            positive(options.as_ref().and_then(|o| o.default_page_size), errors);

        // generated properties, then indexes (which refer to them), then shard bumps
        let (generated, index_attrs, bumps_attrs) = read_struct_attrs(attrs, errors);
        let generated = check::check_generated(generated, &fields, &stored_name, errors);
        let indexes = check::check_indexes(index_attrs, &fields, &generated, errors);
        if bumps_attrs.len() > 1 {
            errors.push(
                darling::Error::custom(
                    "duplicate `#[shard_bumps(…)]`: list every bump in one attribute",
                )
                .with_span(bumps_attrs[1].0),
            );
        }
        let bumps = check::check_bumps(bumps_attrs.into_iter().next().map(|(_, b)| b), errors);

        let index_enum = options
            .as_ref()
            .and_then(|o| o.index_enum.clone())
            .unwrap_or_else(|| Ident::new(&format!("{}Index", attrs.ident), attrs.ident.span()));

        Self {
            ident: &attrs.ident,
            vis: &attrs.vis,
            krate: options
                .as_ref()
                .and_then(|o| o.krate.clone())
                .unwrap_or_else(|| syn::parse_quote!(::entity_manager)),
            table: options.map(|o| o.table),
            token,
            fields,
            unique,
            timestamp,
            default_limit,
            default_page_size,
            generated,
            indexes,
            bumps,
            index_enum,
        }
    }
}

/// The unique and timestamp fields named in `#[entity(…)]`: fields of the struct, transcoded.
fn resolve_key_properties(
    options: &EntityOptions,
    fields: &[Field<'_>],
    errors: &mut Accumulator,
) -> (Option<usize>, Option<usize>) {
    let mut lookup = |ident: &Ident, what: &str| {
        let found = fields.iter().position(|f| f.ident == ident);
        if found.is_none() {
            let names: Vec<String> = fields.iter().map(|f| f.ident.to_string()).collect();
            errors.push(
                darling::Error::custom(format!(
                    "`{what}`: no field `{ident}` in this struct{}",
                    check::did_you_mean(&ident.to_string(), names.iter().map(String::as_str))
                ))
                .with_span(ident),
            );
        }
        found
    };
    let unique = lookup(&options.unique, "unique");
    let timestamp = lookup(&options.timestamp, "timestamp");
    check::check_key_property(fields, unique, &options.unique, "unique", errors);
    check::check_key_property(fields, timestamp, &options.timestamp, "timestamp", errors);
    (unique, timestamp)
}

/// The entity token: as given (not empty), or the struct name in lowerCamelCase.
fn entity_token(
    attrs: &EntityAttrs,
    options: Option<&EntityOptions>,
    errors: &mut Accumulator,
) -> String {
    match options.and_then(|o| o.token.as_ref()) {
        Some(t) if t.is_empty() => {
            errors.push(
                darling::Error::custom("the entity token must not be empty").with_span(&t.span()),
            );
            String::new()
        }
        Some(t) => (**t).clone(),
        None => case::lower_camel(&attrs.ident.to_string()),
    }
}

/// The `#[entity(…)]` options: exactly one attribute, read with darling.
fn read_options(attrs: &EntityAttrs, errors: &mut Accumulator) -> Option<EntityOptions> {
    let entity_attrs: Vec<&syn::Attribute> = attrs
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("entity"))
        .collect();
    let Some((first, rest)) = entity_attrs.split_first() else {
        errors.push(
            darling::Error::custom(
                "missing `#[entity(table = …, unique = …, timestamp = …)]`: an entity names its table, its unique property and its timestamp property",
            )
            .with_span(&attrs.ident),
        );
        return None;
    };
    for extra in rest {
        errors.push(
            darling::Error::custom("duplicate `#[entity(…)]`: give every option in one attribute")
                .with_span(extra),
        );
    }
    errors.handle(EntityOptions::from_meta(&first.meta))
}

/// serde's `rename_all` rule of the container, if it is one serde knows.
fn read_rename_all(serde: &SerdeAttrs, errors: &mut Accumulator) -> Option<String> {
    let (rule, span) = serde.rename_all.as_ref()?;
    if case::rename(rule, rule).is_none() {
        errors.push(
            darling::Error::custom(format!(
                "unknown serde `rename_all` rule `{rule}`{}",
                check::did_you_mean(rule, case::RULES)
            ))
            .with_span(span),
        );
        return None;
    }
    Some(rule.clone())
}

type StructAttrs<'a> = (
    Vec<GeneratedAttrs>,
    Vec<IndexAttrs>,
    Vec<(&'a syn::Attribute, ShardBumpsAttrs)>,
);

/// The repeatable struct attributes: `#[generated]`, `#[index]` and `#[shard_bumps]`.
fn read_struct_attrs<'a>(attrs: &'a EntityAttrs, errors: &mut Accumulator) -> StructAttrs<'a> {
    let (mut generated, mut indexes, mut bumps) = (Vec::new(), Vec::new(), Vec::new());
    for attr in &attrs.attrs {
        let path = attr.path();
        if path.is_ident("generated") {
            generated.extend(errors.handle(GeneratedAttrs::from_meta(&attr.meta)));
        } else if path.is_ident("index") {
            indexes.extend(errors.handle(IndexAttrs::from_meta(&attr.meta)));
        } else if path.is_ident("shard_bumps") {
            bumps.extend(
                errors
                    .handle(ShardBumpsAttrs::from_meta(&attr.meta))
                    .map(|b| (attr, b)),
            );
        } else if path.is_ident("transcode") {
            errors.push(
                darling::Error::custom("`#[transcode(…)]` goes on a field, not on the struct")
                    .with_span(attr),
            );
        }
    }
    (generated, indexes, bumps)
}

impl<'a> Field<'a> {
    fn from_attrs(
        field: &'a FieldAttrs,
        stored_name: &dyn Fn(&Ident) -> String,
        errors: &mut Accumulator,
    ) -> Option<Self> {
        let ident = field.ident.as_ref()?;
        let serde = SerdeAttrs::from_attrs(&field.attrs, errors);
        let mut transcode = None;
        for attr in &field.attrs {
            let path = attr.path();
            if path.is_ident("transcode") {
                if transcode.is_some() {
                    errors.push(
                        darling::Error::custom("duplicate `#[transcode(…)]`").with_span(attr),
                    );
                    continue;
                }
                match attr.parse_args::<TranscodeSpec>() {
                    Ok(TranscodeSpec::Named(lit)) => {
                        let name = lit.value();
                        match TRANSCODES.iter().find(|(n, _)| *n == name) {
                            Some((_, marker)) => transcode = Some(Transcode::Builtin(marker, lit.span())),
                            None => errors.push(
                                darling::Error::custom(format!(
                                    "unknown transcode `{name}`{}; the defaults are `string`, `int`, `fix6`, `timestamp`, `boolean` and `bigint20`, and a type implementing `Transcode` can be named as a path: `#[transcode(my::Transcode)]`",
                                    check::did_you_mean(&name, TRANSCODES.iter().map(|(n, _)| *n))
                                ))
                                .with_span(&lit),
                            ),
                        }
                    }
                    Ok(TranscodeSpec::Path(path)) => transcode = Some(Transcode::Path(path)),
                    Err(e) => errors.push(e.into()),
                }
            } else if !path.is_ident("serde") {
                // generated, index, shard_bumps or entity on a field
                errors.push(
                    darling::Error::custom(format!(
                        "`#[{}(…)]` goes on the struct, not on a field",
                        path.get_ident()
                            .map(ToString::to_string)
                            .unwrap_or_default()
                    ))
                    .with_span(attr),
                );
            }
        }
        if transcode.is_some() {
            if let Some(span) = serde.skip {
                errors.push(
                    darling::Error::custom(
                        "a transcoded field appears in keys, so serde must not skip it",
                    )
                    .with_span(&span),
                );
            }
            if let Some(span) = serde.flatten {
                errors.push(
                    darling::Error::custom(
                        "a transcoded field appears in keys, so it cannot be flattened",
                    )
                    .with_span(&span),
                );
            }
        }
        let stored = serde
            .rename
            .map_or_else(|| stored_name(ident), |(name, _)| name);
        Some(Field {
            ident,
            ty: &field.ty,
            value_ty: option_inner(&field.ty).unwrap_or(&field.ty),
            stored,
            transcode,
        })
    }
}

pub(crate) fn ty_span(ty: &Type) -> Span {
    ty.span()
}
