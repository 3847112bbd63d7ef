//! Building the model's lists from the attributes: generated properties, indexes and shard
//! bumps, with every name resolved to what it refers to. Only what stops a name from being
//! resolved is reported here (a component that names no field, a value that is not a number of
//! the right kind); the configuration rules run afterwards, over the finished model
//! (`check.rs`).

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::Ident;
use syn::ext::IdentExt as _;

use crate::attrs::{GeneratedAttrs, IndexAttrs, IntExpr, KeySpec, ShardBumpsAttrs};
use crate::case;
use crate::errors::Errors;
use crate::model::{
    Bump, BumpDef, Field, Generated, IndexDef, KeyRef, MultiAttr, MultiDef, ProjectionDef, Target,
    Written, natural_key_type,
};

/// `"; did you mean `x`?"` for the candidate most like `name`, or nothing.
pub(crate) fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> String {
    let candidates: Vec<&str> = candidates.into_iter().collect();
    crate::attrs::suggestion(name, &candidates)
        .map_or_else(String::new, |c| format!("; did you mean `{c}`?"))
}

/// The text of an identifier, without `r#`.
pub(crate) fn text(ident: &Ident) -> String {
    ident.unraw().to_string()
}

/// What `ident` names: a generated property (looked up first) or a field; `None` after an
/// error saying so (`what` names the role, `generated_too` whether a generated property would
/// do).
fn target(
    ident: &Ident,
    what: &str,
    generated_too: bool,
    fields: &[Field<'_>],
    generated: &[Generated],
    errors: &mut Errors,
) -> Option<Target> {
    if let Some(i) = generated.iter().position(|g| g.ident == *ident) {
        return Some(Target::Generated(i));
    }
    if let Some(i) = fields.iter().position(|f| f.ident == ident) {
        return Some(Target::Field(i));
    }
    let names: Vec<String> = fields
        .iter()
        .map(|f| text(f.ident))
        .chain(
            generated
                .iter()
                .filter(|_| generated_too)
                .map(|g| text(&g.ident)),
        )
        .collect();
    let kind = if generated_too {
        "field or generated property"
    } else {
        "field"
    };
    errors.at(
        ident,
        format!(
            "{what} `{0}`: no {kind} `{0}` in this struct{1}",
            text(ident),
            did_you_mean(&text(ident), names.iter().map(String::as_str))
        ),
    );
    None
}

/// The generated properties, named; their components resolved (a component that names
/// nothing is reported and left out).
pub(crate) fn generated(
    attrs: Vec<GeneratedAttrs>,
    fields: &[Field<'_>],
    stored_name: &dyn Fn(&Ident) -> String,
    errors: &mut Errors,
) -> Vec<Generated> {
    // named first, so that components can name any generated property
    let mut out: Vec<Generated> = Vec::with_capacity(attrs.len());
    let mut lists = Vec::with_capacity(attrs.len());
    for g in attrs {
        // without a name (reported), the property cannot be referred to: skip it
        let Some(ident) = g.name.as_ref().map(|n| n.0.clone()) else {
            continue;
        };
        let (stored, name_tokens) = match &g.rename {
            Some(rename) => (rename.value.clone(), rename.lit.to_token_stream()),
            None => (stored_name(&ident), ident.to_token_stream()),
        };
        out.push(Generated {
            ident,
            stored,
            name_tokens,
            sharded: g.sharded.is_present(),
            atomic: g.atomic.is_present() || g.sharded.is_present(),
            components: Vec::new(),
            listed: Vec::new(),
            empty_list: g
                .components
                .as_ref()
                .filter(|c| c.idents.is_empty())
                .map(|c| c.tokens.clone()),
        });
        lists.push(g.components.map(|c| c.idents).unwrap_or_default());
    }
    for (i, list) in lists.into_iter().enumerate() {
        for component in list {
            let Some(target) = target(&component, "component", false, fields, &out, errors) else {
                continue;
            };
            if let Target::Field(f) = target {
                out[i].components.push(f);
            }
            out[i].listed.push((component, target));
        }
    }
    out
}

/// The indexes: name and enum variant, keys and projection resolved.
pub(crate) fn indexes(
    attrs: Vec<IndexAttrs>,
    fields: &[Field<'_>],
    generated: &[Generated],
    errors: &mut Errors,
) -> Vec<IndexDef> {
    let mut out: Vec<IndexDef> = Vec::new();
    for index in attrs {
        // without a name (reported), the index cannot be referred to: skip it
        let Some(name) = index.name else { continue };
        // the first index of a variant gets it; the others are reported by `check.rs`
        let variant = case::variant(&name.value)
            .map(|v| Ident::new(&v, name.lit.span()))
            .filter(|v| out.iter().all(|o| o.variant.as_ref() != Some(v)));
        let multi = multi_key(
            (&index.hash, &index.range, index.sharded.is_present()),
            &name.lit,
            fields,
            generated,
            errors,
        );
        let (hash_spec, range_spec) = match (&multi, index.hash, index.range) {
            (Some(_), _, _) => (None, None),
            (None, hash, range) => (one(hash), one(range)),
        };
        let mut keys_valid = multi.is_none();
        let mut key = |ident: Option<&Ident>, default: KeyRef, what: &str, errors: &mut Errors| {
            let Some(ident) = ident else {
                return default;
            };
            match target(ident, what, true, fields, generated, errors) {
                Some(Target::Generated(i)) => KeyRef::Generated(i),
                Some(Target::Field(i)) => KeyRef::Field(i),
                None => {
                    keys_valid = false;
                    default
                }
            }
        };
        let hash = key(
            hash_spec.as_ref(),
            KeyRef::TableHash,
            "index hash key",
            errors,
        );
        let range = key(
            range_spec.as_ref(),
            KeyRef::TableRange,
            "index range key",
            errors,
        );
        let mut project = Vec::new();
        let projection = match (&index.project, index.keys_only.is_present()) {
            (Some(list), true) => {
                errors.at(&list.tokens, "`project` and `keys_only` exclude each other");
                ProjectionDef::KeysOnly
            }
            (None, true) => ProjectionDef::KeysOnly,
            (None, false) => ProjectionDef::All,
            (Some(list), false) => {
                let mut projected = Vec::new();
                for ident in &list.idents {
                    let Some(target) =
                        target(ident, "projection", false, fields, generated, errors)
                    else {
                        continue;
                    };
                    if let Target::Field(f) = target {
                        projected.push(f);
                    }
                    project.push((ident.clone(), target));
                }
                // `project = []`: nothing beyond the keys, as `projections: []` means in a
                // TypeScript config (DynamoDB refuses an empty INCLUDE list)
                if list.idents.is_empty() {
                    ProjectionDef::KeysOnly
                } else {
                    ProjectionDef::Include(projected)
                }
            }
        };
        out.push(IndexDef {
            name: name.value,
            name_lit: name.lit,
            variant,
            hash,
            range,
            hash_ident: hash_spec,
            range_ident: range_spec,
            keys_valid,
            projection,
            project,
            multi,
        });
    }
    out
}

/// The name of a classic key (`hash = name`), or `None` for none or a list.
fn one(spec: Option<KeySpec>) -> Option<Ident> {
    match spec {
        Some(KeySpec::One(ident)) => Some(ident.0),
        Some(KeySpec::Many(_)) | None => None,
    }
}

/// The multi-attribute key of an index that lists a side (`hash = [..]`, `range = [..]`) or
/// says `sharded`; `None` for a classic index. A side given as one name is read as a list of
/// one, with an error; a missing side is empty (reported by the arity rule), except for the
/// partition side of a sharded key, which the shard attribute alone may make.
fn multi_key(
    (hash, range, sharded): (&Option<KeySpec>, &Option<KeySpec>, bool),
    name_lit: &syn::LitStr,
    fields: &[Field<'_>],
    generated: &[Generated],
    errors: &mut Errors,
) -> Option<MultiDef> {
    let listed = |spec: &Option<KeySpec>| matches!(spec, Some(KeySpec::Many(_)));
    if !listed(hash) && !listed(range) {
        if sharded {
            errors.at(
                name_lit,
                "`sharded` applies to a multi-attribute key: list its fields, like `hash = [org_id], range = [created], sharded` (a classic index is sharded through a sharded generated `hash`)",
            );
        }
        return None;
    }
    let mut side = |spec: &Option<KeySpec>, option: &str| -> (Vec<MultiAttr>, TokenStream) {
        let (idents, tokens): (Vec<Ident>, TokenStream) = match spec {
            Some(KeySpec::Many(list)) => (list.idents.clone(), list.tokens.clone()),
            Some(KeySpec::One(ident)) => {
                errors.at(
                    &ident.0,
                    format!(
                        "a multi-attribute index lists both sides: write `{option} = [{}]`",
                        text(&ident.0)
                    ),
                );
                (vec![ident.0.clone()], ident.0.to_token_stream())
            }
            None => (Vec::new(), name_lit.to_token_stream()),
        };
        let attrs = idents
            .into_iter()
            .filter_map(|ident| {
                let target = target(
                    &ident,
                    "multi-attribute key attribute",
                    true,
                    fields,
                    generated,
                    errors,
                )?;
                let key_type = match target {
                    Target::Field(i) => natural_key_type(fields[i].value_ty),
                    Target::Generated(_) => None,
                };
                Some(MultiAttr {
                    ident,
                    target,
                    key_type,
                })
            })
            .collect();
        (attrs, tokens)
    };
    let (hash, hash_tokens) = side(hash, "hash");
    let (range, range_tokens) = side(range, "range");
    Some(MultiDef {
        hash,
        range,
        hash_tokens,
        range_tokens,
        sharded,
    })
}

fn written(int: IntExpr) -> Written<i128> {
    Written {
        value: int.value,
        tokens: int.tokens,
    }
}

/// The shard bumps as written (those with all three options: a missing one is reported where
/// it is parsed), and the schedule they make: sorted, with the implied zero bump in front. A
/// timestamp that is not milliseconds since the epoch is reported here; bumps whose values do
/// not fit are left out of the schedule (an error is reported for each).
pub(crate) fn bumps(
    attrs: Option<ShardBumpsAttrs>,
    errors: &mut Errors,
) -> (Vec<BumpDef>, Vec<Bump>) {
    let mut defs = Vec::new();
    for b in attrs.map(|a| a.bumps).unwrap_or_default() {
        let (Some(timestamp), Some(char_bits), Some(chars)) = (b.timestamp, b.char_bits, b.chars)
        else {
            continue;
        };
        let valid_timestamp = if timestamp.value < 0 {
            errors.at(
                &timestamp.tokens,
                "a shard bump timestamp is milliseconds since the epoch and cannot be negative",
            );
            None
        } else {
            let value = u64::try_from(timestamp.value).ok();
            if value.is_none() {
                errors.at(&timestamp.tokens, "shard bump timestamp out of range");
            }
            value
        };
        defs.push(BumpDef {
            timestamp: written(timestamp),
            valid_timestamp,
            char_bits: written(char_bits),
            chars: written(chars),
        });
    }
    let schedule = entity_manager_core::__private::rules::schedule(&declared_bumps(&defs).1);
    (defs, schedule.bumps)
}

/// The bumps with a valid timestamp, as the model holds them, with their positions in `defs`
/// (values that do not fit a `u8` become `u8::MAX`, out of range: their rule reports them).
pub(crate) fn declared_bumps(defs: &[BumpDef]) -> (Vec<usize>, Vec<Bump>) {
    let byte = |v: &Written<i128>| u8::try_from(v.value).unwrap_or(u8::MAX);
    defs.iter()
        .enumerate()
        .filter_map(|(i, d)| {
            let bump = Bump::new(d.valid_timestamp?, byte(&d.char_bits), byte(&d.chars));
            Some((i, bump))
        })
        .unzip()
}

/// A count as written, or `None`.
pub(crate) fn count(value: Option<&IntExpr>) -> Option<Written<i128>> {
    value.map(|v| Written {
        value: v.value,
        tokens: v.tokens.clone(),
    })
}

/// The value of a count for the model: the given one, or `default` when it is left out or
/// cannot be one (which `check.rs` reports).
pub(crate) fn count_value(value: Option<&Written<i128>>, default: usize) -> usize {
    value
        .and_then(|v| usize::try_from(v.value).ok())
        .filter(|&n| n >= 1)
        .unwrap_or(default)
}
