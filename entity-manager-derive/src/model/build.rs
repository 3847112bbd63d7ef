//! Building the model from the attribute receivers: the container's options, its fields and
//! their transcodes, here; the lists that name other items (generated properties, indexes,
//! shard bumps), in `resolve.rs`. Every problem goes to one accumulator.

use darling::FromMeta as _;
use proc_macro2::TokenStream;
use quote::ToTokens;
use quote::format_ident;
use syn::ext::IdentExt as _;
use syn::{Ident, Meta, Path, Type};

use crate::attrs::{
    self, EntityAttrs, EntityOptions, FieldAttrs, GeneratedAttrs, IndexAttrs, SerdeAttrs,
    ShardBumpsAttrs, TranscodeSpec,
};
use crate::case;
use crate::errors::Errors;
use crate::model::resolve;
use crate::model::{Container, Field, Generated, TRANSCODES, Transcode};
use entity_manager_core::limits;

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

/// The first `i128` or `u128` in a type (`Option<i128>`, `Vec<u128>`, …).
fn int128(ty: &Type) -> Option<&Ident> {
    match ty {
        Type::Path(path) => path.path.segments.iter().find_map(|segment| {
            if segment.arguments.is_none() && (segment.ident == "i128" || segment.ident == "u128") {
                return Some(&segment.ident);
            }
            let syn::PathArguments::AngleBracketed(args) = &segment.arguments else {
                return None;
            };
            args.args.iter().find_map(|arg| match arg {
                syn::GenericArgument::Type(inner) => int128(inner),
                _ => None,
            })
        }),
        Type::Array(array) => int128(&array.elem),
        Type::Slice(slice) => int128(&slice.elem),
        Type::Reference(reference) => int128(&reference.elem),
        Type::Paren(paren) => int128(&paren.elem),
        Type::Group(group) => int128(&group.elem),
        Type::Tuple(tuple) => tuple.elems.iter().find_map(int128),
        _ => None,
    }
}

impl<'a> Container<'a> {
    pub(crate) fn from_attrs(attrs: &'a EntityAttrs, errors: &mut Errors) -> Self {
        let (options, lenient) = read_options(attrs, errors);
        let serde = SerdeAttrs::from_attrs(&attrs.attrs, errors);
        // an unknown rule is serde's to report; names then stay as written
        let unknown_rule = serde
            .rename_all
            .as_ref()
            .is_some_and(|rule| case::rename(rule, rule).is_none());
        let rename_all = serde.rename_all.filter(|_| !unknown_rule);
        let stored_name = |ident: &Ident| {
            let name = ident.to_string();
            let name = name.strip_prefix("r#").unwrap_or(&name).to_owned();
            match &rename_all {
                Some(rule) => case::rename(&name, rule).unwrap_or(name),
                None => name,
            }
        };

        let generic = !attrs.generics.params.is_empty();
        if generic {
            errors.at(
                &attrs.generics,
                generics_error(&attrs.ident, &attrs.generics),
            );
        }
        let fields = attrs
            .data
            .as_ref()
            .take_struct()
            .map(|s| s.fields)
            .unwrap_or_default();
        let serde_fails = unknown_rule || serde.malformed || serde_fails_on_fields(&fields);
        let fields: Vec<Field<'a>> = fields
            .into_iter()
            .filter_map(|f| Field::from_attrs(f, &stored_name, errors))
            .collect();

        let generated_names = generated_names(attrs);
        let (unique, timestamp) = options.as_ref().map_or((None, None), |o| {
            resolve_key_properties(o, &fields, &generated_names, errors)
        });
        let version = options
            .as_ref()
            .and_then(|o| resolve_version(o, &fields, unique, timestamp, errors));

        let (token, token_tokens) = entity_token(attrs, options.as_ref());
        let defaults_given = [
            resolve::count(options.as_ref().and_then(|o| o.default_limit.as_ref())),
            resolve::count(options.as_ref().and_then(|o| o.default_page_size.as_ref())),
        ];
        let default_limit = resolve::count_value(defaults_given[0].as_ref(), limits::DEFAULT_LIMIT);
        let default_page_size =
            resolve::count_value(defaults_given[1].as_ref(), limits::DEFAULT_PAGE_SIZE);

        // generated properties, then indexes (which refer to them), then shard bumps
        let (generated, index_attrs, bumps_attrs) = read_struct_attrs(attrs, errors);
        let generated = resolve::generated(generated, &fields, &stored_name, errors);
        let indexes = resolve::indexes(index_attrs, &fields, &generated, errors);
        if let Some((second, _)) = bumps_attrs.get(1) {
            errors.at(
                &second.meta,
                "duplicate `#[shard_bumps(…)]`: list every bump in one attribute",
            );
        }
        let (bump_defs, bumps) =
            resolve::bumps(bumps_attrs.into_iter().next().map(|(_, b)| b), errors);

        let index_enum = options
            .as_ref()
            .and_then(|o| o.index_enum.as_ref())
            .map_or_else(
                || format_ident!("{}Index", attrs.ident.unraw(), span = attrs.ident.span()),
                |i| i.0.clone(),
            );

        let index_enum = check_emitted_names(&attrs.ident, index_enum, &generated, errors);

        let krate = options
            .as_ref()
            .and_then(|o| o.krate.as_ref().map(|k| k.0.clone()))
            .or(lenient.krate)
            .unwrap_or_else(|| syn::parse_quote!(::entity_manager));
        let table = options
            .as_ref()
            .and_then(|o| o.table.as_ref().map(|t| t.0.clone()))
            .or(lenient.table);
        Self {
            ident: &attrs.ident,
            vis: &attrs.vis,
            generic,
            generics: &attrs.generics,
            krate,
            table,
            token,
            token_tokens,
            fields,
            unique,
            timestamp,
            version,
            default_limit,
            default_page_size,
            defaults_given,
            generated,
            indexes,
            bump_defs,
            bumps,
            index_enum,
            serde_fails,
        }
    }
}

/// Rule: an entity is an owned, concrete type: records are read back from the store as owned
/// values (`DeserializeOwned`), and its model is one static value, which its table lists by the
/// struct's name. The message names the struct as written and says what rustc's follow-on errors
/// (which the derive cannot prevent: a table's `<User as Entity>` needs `User`'s type arguments,
/// and serde's `Deserialize` for a borrowing struct is not `DeserializeOwned`) mean.
fn generics_error(ident: &Ident, generics: &syn::Generics) -> String {
    let params: Vec<String> = generics
        .params
        .iter()
        .map(|p| match p {
            syn::GenericParam::Lifetime(l) => l.lifetime.to_string(),
            syn::GenericParam::Type(t) => t.ident.to_string(),
            syn::GenericParam::Const(c) => c.ident.to_string(),
        })
        .collect();
    let ident = ident.unraw();
    let written = format!("{ident}<{}>", params.join(", "));
    if let Some(lifetime) = generics.lifetimes().next()
        && generics.lifetimes().count() == params.len()
    {
        let lifetime = &lifetime.lifetime;
        format!(
            "`{written}` borrows, and an entity cannot: records are read back from the store as owned values (`DeserializeOwned`); store owned fields (`String`, not `&{lifetime} str`) and declare `struct {ident}` without lifetimes (until then, a read of `{ident}` may also say that `Deserialize` is not general enough)"
        )
    } else {
        format!(
            "`{written}` is generic, and an entity cannot be: each entity has one static model, which its table lists by the struct's name; give the fields concrete types and declare `struct {ident}` without parameters (until then, a table listing `{ident}` also asks for generic arguments: the fix is here)"
        )
    }
}

/// The type names the derive emits beside the struct do not collide: the index enum is not the
/// struct itself, and each generated property's key builder (`User` + `NameKey`) has a name of
/// its own, other than the index enum's. An enum named like the struct takes the default name
/// after the error, so that the placeholder brings no follow-on error.
fn check_emitted_names(
    ident: &Ident,
    index_enum: Ident,
    generated: &[Generated],
    errors: &mut Errors,
) -> Ident {
    let default = format_ident!("{}Index", ident.unraw(), span = ident.span());
    let index_enum = if index_enum.unraw() == ident.unraw() {
        errors.at(
            &index_enum,
            format!("`index_enum = {index_enum}` names the struct itself; the index enum needs a name of its own, like `{default}`"),
        );
        default.clone()
    } else {
        index_enum
    };
    let fields = format!("{}Fields", ident.unraw());
    let index_enum = if index_enum.unraw() == fields {
        errors.at(
            &index_enum,
            format!("`index_enum = {index_enum}` is the name of the typed fields struct the derive emits; choose another name, like `{default}`"),
        );
        default
    } else {
        index_enum
    };
    let index_enum = &index_enum;
    let mut builders: Vec<(String, &Ident)> = Vec::with_capacity(generated.len());
    for g in generated {
        let builder = format!(
            "{}{}",
            ident.unraw(),
            case::pascal(&g.ident.unraw().to_string())
        );
        if builder == fields {
            errors.at(
                &g.ident,
                format!("generated property `{}` would make the key builder `{builder}`, the name of the typed fields struct the derive emits; rename the property", g.ident),
            );
        } else if index_enum.unraw() == builder {
            errors.at(
                &g.ident,
                format!("generated property `{}` would make the key builder `{builder}`, the name of the index enum; rename the property, or the enum with `#[entity(index_enum = …)]`", g.ident),
            );
        } else if let Some((_, other)) = builders
            .iter()
            // the same name twice is reported as a duplicate property
            .find(|(b, other)| *b == builder && **other != g.ident)
        {
            errors.at(
                &g.ident,
                format!("generated properties `{other}` and `{}` would both make the key builder `{builder}`; rename one", g.ident),
            );
        }
        builders.push((builder, &g.ident));
    }
    index_enum.clone()
}

/// Whether serde's derive fails on a field's own `#[serde(…)]` (one that does not parse): it
/// then writes no `Serialize`, and its error is the one to read, so the derive does not add
/// that the entity is not serializable.
fn serde_fails_on_fields(fields: &[&FieldAttrs]) -> bool {
    fields
        .iter()
        .any(|f| SerdeAttrs::from_attrs(&f.attrs, &mut Errors::default()).malformed)
}

/// The generated properties' names as written, for the message of a unique or timestamp that
/// names one (read before the properties themselves, which need the key properties).
fn generated_names(attrs: &EntityAttrs) -> Vec<String> {
    attrs
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("generated"))
        .filter_map(|a| match attrs::lenient_value(&a.meta, "name") {
            Some(syn::Expr::Path(p)) => p.path.get_ident().map(ToString::to_string),
            _ => None,
        })
        .collect()
}

/// The unique and timestamp fields named in `#[entity(…)]`: fields of the struct, transcoded.
fn resolve_key_properties<'o>(
    options: &'o EntityOptions,
    fields: &[Field<'_>],
    generated: &[String],
    errors: &mut Errors,
) -> (Option<usize>, Option<usize>) {
    let mut lookup = |value: Option<&'o attrs::IdentValue>,
                      what: &str|
     -> Option<(usize, &'o Ident)> {
        let ident = &value?.0;
        let found = fields.iter().position(|f| f.ident == ident);
        if found.is_none() && generated.iter().any(|g| ident == g) {
            // rule: the unique and the timestamp are written into every key, and a generated
            // property is built from fields: it cannot be one of them
            errors.at(
                    ident,
                    format!(
                        "`{what}` names the generated property `{ident}`: the {what} property must be a transcoded field of the struct, like `#[transcode(\"string\")] {ident}: String`"
                    ),
                );
        } else if found.is_none() {
            let names: Vec<String> = fields.iter().map(|f| f.ident.to_string()).collect();
            errors.at(
                ident,
                format!(
                    "`{what}`: no field `{ident}` in this struct{}",
                    resolve::did_you_mean(&ident.to_string(), names.iter().map(String::as_str))
                ),
            );
        }
        found.map(|i| (i, ident))
    };
    let unique = lookup(options.unique.as_ref(), "unique");
    let timestamp = lookup(options.timestamp.as_ref(), "timestamp");
    (unique.map(|u| u.0), timestamp.map(|t| t.0))
}

/// The version field named in `#[entity(version = …)]`: a written field of the struct, not
/// optional, neither the unique nor the timestamp property (its type is checked to be an
/// integer by the emitted impl).
fn resolve_version(
    options: &EntityOptions,
    fields: &[Field<'_>],
    unique: Option<usize>,
    timestamp: Option<usize>,
    errors: &mut Errors,
) -> Option<usize> {
    let ident = &options.version.as_ref()?.0;
    let Some(found) = fields.iter().position(|f| f.ident == ident) else {
        let names: Vec<String> = fields.iter().map(|f| f.ident.to_string()).collect();
        errors.at(
            ident,
            format!(
                "`version`: no field `{ident}` in this struct{}",
                resolve::did_you_mean(&ident.to_string(), names.iter().map(String::as_str))
            ),
        );
        return None;
    };
    let field = &fields[found];
    let problem = if Some(found) == unique || Some(found) == timestamp {
        Some(
            "the version field must be a field of its own, not the unique or the timestamp property; add a field like `version: u64`",
        )
    } else if option_inner(field.ty).is_some() {
        Some(
            "the version field cannot be an `Option`: every stored record has a version; use an integer like `u64` (records stored without it count as version 0)",
        )
    } else if !field.written {
        Some("the version field must be stored: remove `#[serde(skip…)]`/`flatten` from it")
    } else {
        None
    };
    if let Some(problem) = problem {
        errors.at(ident, problem);
        return None;
    }
    Some(found)
}

/// The entity token (as given, not empty, or the struct name in lowerCamelCase) and the tokens
/// it comes from.
fn entity_token(attrs: &EntityAttrs, options: Option<&EntityOptions>) -> (String, TokenStream) {
    match options.and_then(|o| o.token.as_ref()) {
        Some(t) => (t.value.clone(), t.lit.to_token_stream()),
        None => (
            case::lower_camel(&attrs.ident.unraw().to_string()),
            attrs.ident.to_token_stream(),
        ),
    }
}

/// What a placeholder impl needs from `#[entity(…)]` even when its options do not parse.
#[derive(Default)]
struct Lenient {
    table: Option<Path>,
    krate: Option<Path>,
}

/// The `#[entity(…)]` options: exactly one attribute, read with darling; plus `table` and
/// `crate` read leniently, for the placeholder impl.
fn read_options(attrs: &EntityAttrs, errors: &mut Errors) -> (Option<EntityOptions>, Lenient) {
    let entity_attrs: Vec<&syn::Attribute> = attrs
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("entity"))
        .collect();
    let Some((first, rest)) = entity_attrs.split_first() else {
        errors.at(
            &attrs.ident,
            "missing `#[entity(table = …, unique = …, timestamp = …)]`: an entity names its table, its unique property and its timestamp property",
        );
        return (None, Lenient::default());
    };
    for extra in rest {
        errors.at(
            &extra.meta,
            "duplicate `#[entity(…)]`: give every option in one attribute",
        );
    }
    let path = |key: &str| match attrs::lenient_value(&first.meta, key) {
        Some(syn::Expr::Path(p)) if p.qself.is_none() => Some(p.path),
        _ => None,
    };
    let lenient = Lenient {
        table: path("table"),
        krate: path("crate"),
    };
    (
        attrs::parse_list(&first.meta, &attrs::ENTITY, errors),
        lenient,
    )
}

type StructAttrs<'a> = (
    Vec<GeneratedAttrs>,
    Vec<IndexAttrs>,
    Vec<(&'a syn::Attribute, ShardBumpsAttrs)>,
);

/// The repeatable struct attributes: `#[generated]`, `#[index]` and `#[shard_bumps]`.
fn read_struct_attrs<'a>(attrs: &'a EntityAttrs, errors: &mut Errors) -> StructAttrs<'a> {
    let (mut generated, mut indexes, mut bumps) = (Vec::new(), Vec::new(), Vec::new());
    for attr in &attrs.attrs {
        let path = attr.path();
        if path.is_ident("generated") {
            generated.extend(attrs::parse_list(&attr.meta, &attrs::GENERATED, errors));
        } else if path.is_ident("index") {
            let meta = project_keys_only(&attr.meta, errors);
            indexes.extend(attrs::parse_list(&meta, &attrs::INDEX, errors));
        } else if path.is_ident("shard_bumps") {
            let nested = attrs::nested(&attr.meta).unwrap_or_default();
            // the options of one bump written without `bump(…)` around them
            if let Some(loose) = nested.iter().find(|m| {
                ["timestamp", "char_bits", "chars"]
                    .iter()
                    .any(|k| m.path().is_ident(k))
            }) {
                errors.at(
                    loose,
                    "each shard bump goes inside `bump(…)`: write `#[shard_bumps(bumps = [bump(timestamp = …, char_bits = …, chars = …), …])]`",
                );
                continue;
            }
            let mut parsed =
                attrs::parse_list::<ShardBumpsAttrs>(&attr.meta, &attrs::SHARD_BUMPS, errors);
            // darling reads each `bump(…)`; missing options are reported per bump
            for bump in nested {
                if bump.path().is_ident("bump") && matches!(bump, Meta::List(_)) {
                    attrs::report_missing(&bump, &attrs::BUMP, errors);
                }
            }
            // `bumps = [bump(…), …]`: read each entry the same way
            if let Some(parsed) = parsed.as_mut()
                && let Some(list) = parsed.list.take()
            {
                for bump in list.0 {
                    attrs::report_missing(&bump, &attrs::BUMP, errors);
                    if let Some(b) = errors.handle(attrs::BumpAttrs::from_meta(&bump)) {
                        parsed.bumps.push(b);
                    }
                }
            }
            bumps.extend(parsed.map(|b| (attr, b)));
        } else if path.is_ident("transcode") {
            errors.at(
                &attr.meta,
                "`#[transcode(…)]` goes on a field, not on the struct",
            );
        }
    }
    (generated, indexes, bumps)
}

/// `#[index(…, project = keys_only)]` read as the flag `keys_only` it means (the docs write the
/// projection as `project = […] | keys_only`); the flag keeps the value's span.
fn project_keys_only(meta: &Meta, errors: &mut Errors) -> Meta {
    let Meta::List(list) = meta else {
        return meta.clone();
    };
    let Some(items) = attrs::nested(meta) else {
        return meta.clone();
    };
    let keys_only = |item: &Meta| match item {
        Meta::NameValue(nv) if nv.path.is_ident("project") => match &nv.value {
            syn::Expr::Path(p) if p.qself.is_none() && p.path.is_ident("keys_only") => {
                p.path.get_ident().cloned()
            }
            _ => None,
        },
        _ => None,
    };
    if !items.iter().any(|item| keys_only(item).is_some()) {
        return meta.clone();
    }
    let flag_too = items
        .iter()
        .any(|item| matches!(item, Meta::Path(p) if p.is_ident("keys_only")));
    let items: Vec<TokenStream> = items
        .iter()
        .filter_map(|item| match keys_only(item) {
            Some(_) if flag_too => {
                errors.at(
                    item,
                    "`project = keys_only` and the flag `keys_only` say the same: keep one",
                );
                None
            }
            Some(flag) => Some(flag.to_token_stream()),
            None => Some(item.to_token_stream()),
        })
        .collect();
    let mut list = list.clone();
    list.tokens = quote::quote!(#(#items),*);
    Meta::List(list)
}

impl<'a> Field<'a> {
    fn from_attrs(
        field: &'a FieldAttrs,
        stored_name: &dyn Fn(&Ident) -> String,
        errors: &mut Errors,
    ) -> Option<Self> {
        let ident = field.ident.as_ref()?;
        let serde = SerdeAttrs::from_attrs(&field.attrs, errors);
        let mut transcode = None;
        for attr in &field.attrs {
            let path = attr.path();
            if path.is_ident("transcode") {
                if transcode.is_some() {
                    errors.at(&attr.meta, "duplicate `#[transcode(…)]`");
                    continue;
                }
                transcode = Some(read_transcode(attr, errors));
            } else if !path.is_ident("serde") {
                // generated, index, shard_bumps or entity on a field
                errors.at(
                    &attr.meta,
                    format!(
                        "`#[{}(…)]` goes on the struct, not on a field",
                        path.to_token_stream()
                    ),
                );
            }
        }
        if transcode.is_some() {
            if let Some(span) = serde.skip {
                errors.at_span(
                    span,
                    "a transcoded field appears in keys, so serde must not skip it",
                );
            }
            if let Some(span) = serde.flatten {
                errors.at_span(
                    span,
                    "a transcoded field appears in keys, so it cannot be flattened",
                );
            }
        }
        let written = !serde.not_written && serde.flatten.is_none();
        // serde_dynamo has no 128-bit numbers: such a field fails in every `to_item`
        if (transcode.is_some() || (written && !serde.custom))
            && let Some(int) = int128(&field.ty)
        {
            errors.at(
                int,
                "`serde_dynamo` cannot store 128-bit integers; use `i64` or `u64` (which `bigint20` also accepts), or a `String` field",
            );
        }
        let (stored, name_tokens) = match &serde.rename {
            Some(lit) => (lit.value(), lit.to_token_stream()),
            None => (stored_name(ident), ident.to_token_stream()),
        };
        Some(Field {
            ident,
            vis: &field.vis,
            ty: &field.ty,
            value_ty: option_inner(&field.ty).unwrap_or(&field.ty),
            stored,
            name_tokens,
            written,
            transcode,
        })
    }
}

/// `#[transcode("name")]` or `#[transcode(path::to::Type)]`; `Invalid` after an error.
fn read_transcode(attr: &syn::Attribute, errors: &mut Errors) -> Transcode {
    // `#[transcode = "string"]`
    if let Meta::NameValue(nv) = &attr.meta {
        let value = match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(lit),
                ..
            }) => format!("{:?}", lit.value()),
            other => other.to_token_stream().to_string(),
        };
        errors.at(
            &attr.meta,
            format!("a transcode goes in parentheses: `#[transcode({value})]`"),
        );
        return Transcode::Invalid;
    }
    let empty = match &attr.meta {
        Meta::List(list) => list.tokens.is_empty(),
        _ => true,
    };
    if empty {
        errors.at(
            &attr.meta,
            "`#[transcode]` needs a transcode: a default by name, like `#[transcode(\"string\")]`, or a type implementing `Transcode`, like `#[transcode(my::Upper)]`",
        );
        return Transcode::Invalid;
    }
    match attr.parse_args::<TranscodeSpec>() {
        Ok(TranscodeSpec::Named(lit)) => {
            let name = lit.value();
            if let Some((name, check)) = TRANSCODES.iter().find(|(n, _)| *n == name) {
                return Transcode::Builtin {
                    name,
                    check,
                    span: lit.span(),
                };
            }
            let suggestion = resolve::did_you_mean(&name, TRANSCODES.iter().map(|(n, _)| *n));
            if name.is_empty() {
                errors.at(
                    &lit,
                    "empty transcode name: the defaults are `string`, `int`, `fix6`, `timestamp`, `boolean` and `bigint20`",
                );
            } else if suggestion.is_empty() {
                errors.at(
                    &lit,
                    format!(
                        "unknown transcode `{name}`: the defaults are `string`, `int`, `fix6`, `timestamp`, `boolean` and `bigint20`, and a type implementing `Transcode` is named by its path, like `#[transcode(my::Upper)]`"
                    ),
                );
            } else {
                errors.at(&lit, format!("unknown transcode `{name}`{suggestion}"));
            }
            Transcode::Invalid
        }
        // a default transcode's name written without quotes would be read as a type path
        Ok(TranscodeSpec::Path(path))
            if path.leading_colon.is_none()
                && path
                    .get_ident()
                    .is_some_and(|name| TRANSCODES.iter().any(|(builtin, _)| name == builtin)) =>
        {
            let name = path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            errors.at(
                &path,
                format!("the default transcodes are named by strings: write `#[transcode(\"{name}\")]` (a path names a transcode type of your own)"),
            );
            Transcode::Invalid
        }
        Ok(TranscodeSpec::Path(path)) => Transcode::Path(path),
        Err(e) => {
            errors.syn(e);
            Transcode::Invalid
        }
    }
}
