//! The configuration rules that one struct can check by itself, one function per rule group,
//! each rule stated in a comment. Rules that need the table or other entities are compile-time
//! assertions in the expansion (`expand.rs`, over `__private`'s `const fn`s).

use syn::Ident;

use crate::attrs::{GeneratedAttrs, IndexAttrs, ShardBumpsAttrs};
use crate::case;
use crate::errors::Errors;
use crate::model::{Bump, Field, Generated, IndexDef, KeyRef, ProjectionDef};

/// `"; did you mean `x`?"` for the candidate most like `name`, or nothing.
pub(crate) fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> String {
    let candidates: Vec<&str> = candidates.into_iter().collect();
    crate::attrs::suggestion(name, &candidates)
        .map_or_else(String::new, |c| format!("; did you mean `{c}`?"))
}

fn field_names(fields: &[Field<'_>]) -> Vec<String> {
    fields.iter().map(|f| f.ident.to_string()).collect()
}

/// The unique and the timestamp property must be transcoded fields: the unique value is written
/// into the range key, and both are written into page keys.
pub(crate) fn check_key_property(
    field: &Field<'_>,
    ident: &Ident,
    what: &str,
    errors: &mut Errors,
) {
    if field.transcode.is_none() {
        let hint = if what == "timestamp" {
            "#[transcode(\"timestamp\")]"
        } else {
            "#[transcode(\"string\")]"
        };
        errors.at(
            ident,
            format!("the {what} property `{ident}` must be a transcoded field, as it is written into keys; add `{hint}` to it"),
        );
    }
    // The timestamp is written into keys as 13 digits, the form TypeScript writes and reads;
    // another transcode (`int`: `created#p0001700000000000`) silently breaks compatibility.
    if what == "timestamp" {
        match &field.transcode {
            Some(crate::model::Transcode::Builtin { name, span, .. }) if *name != "timestamp" => {
                errors.at_span(
                    *span,
                    format!("the timestamp property `{ident}` must use the `timestamp` transcode, not `{name}`: keys write creation times as 13 digits, as TypeScript does; write `#[transcode(\"timestamp\")]`"),
                );
            }
            Some(crate::model::Transcode::Path(path)) => {
                errors.at(
                    path,
                    format!("the timestamp property `{ident}` must use the `timestamp` transcode, not a transcode of your own: keys write creation times as 13 digits, as TypeScript does; write `#[transcode(\"timestamp\")]`"),
                );
            }
            _ => {}
        }
    }
    // The unique value identifies the record: every key holds it, so it cannot be missing.
    if what == "unique" && !std::ptr::eq(field.ty, field.value_ty) {
        errors.at(
            field.ty,
            format!("the unique property `{ident}` identifies a record and is written into every key, so it cannot be an `Option`; use the value type itself"),
        );
    }
}

/// No two fields are stored under one attribute name (serde would write one over the other).
/// The table's key names are checked by the expansion: they are the table's settings.
pub(crate) fn check_stored_names(fields: &[Field<'_>], errors: &mut Errors) {
    for (i, field) in fields.iter().enumerate().filter(|(_, f)| f.written) {
        if let Some(first) = fields[..i]
            .iter()
            .find(|f| f.written && f.stored == field.stored)
        {
            errors.at(
                &field.name_tokens,
                format!(
                    "field `{}` is stored as `{}`, like field `{}`; rename one of them",
                    field.ident, field.stored, first.ident
                ),
            );
        }
    }
}

/// Generated properties: unique names that no field uses; a non-empty list of distinct
/// components, each a transcoded field (never another generated property).
pub(crate) fn check_generated(
    attrs: Vec<GeneratedAttrs>,
    fields: &[Field<'_>],
    stored_name: &dyn Fn(&Ident) -> String,
    errors: &mut Errors,
) -> Vec<Generated> {
    let names: Vec<Ident> = attrs
        .iter()
        .filter_map(|g| g.name.as_ref().map(|n| n.0.clone()))
        .collect();
    let mut out: Vec<Generated> = Vec::with_capacity(attrs.len());
    for g in attrs {
        // without a name (reported), the property cannot be referred to: skip it
        let Some(ident) = g.name.as_ref().map(|n| n.0.clone()) else {
            continue;
        };
        let (stored, name_tokens) = match &g.rename {
            Some(rename) => (
                rename.value.clone(),
                quote::ToTokens::to_token_stream(&rename.lit),
            ),
            None => (
                stored_name(&ident),
                quote::ToTokens::to_token_stream(&ident),
            ),
        };
        // generated property names are unique
        if out.iter().any(|o| o.stored == stored || o.ident == ident) {
            errors.at(
                &name_tokens,
                format!("duplicate generated property `{stored}`"),
            );
        }
        // a generated property does not reuse a field's stored name
        else if let Some(field) = fields.iter().find(|f| f.written && f.stored == stored) {
            errors.at(
                &name_tokens,
                format!(
                    "generated property `{ident}` is stored as `{stored}`, like field `{}`; rename one of them",
                    field.ident
                ),
            );
        }
        let component_idents = g.components.as_ref().map_or(&[][..], |c| &c.idents);
        // the component list is not empty
        if let Some(list) = &g.components
            && list.idents.is_empty()
        {
            errors.at(
                &list.tokens,
                "a generated property needs at least one component, like `components = [user_id]`",
            );
        }
        let mut components: Vec<usize> = Vec::new();
        for component in component_idents {
            // a component is not itself a generated property
            if names.iter().any(|n| n == component) {
                errors.at(
                    component,
                    format!("component `{component}` is a generated property; components must be transcoded fields"),
                );
                continue;
            }
            // a component is a field of this struct
            let Some(index) = fields.iter().position(|f| f.ident == component) else {
                errors.at(
                    component,
                    format!(
                        "component `{component}`: no field `{component}` in this struct{}",
                        did_you_mean(
                            &component.to_string(),
                            field_names(fields).iter().map(String::as_str)
                        )
                    ),
                );
                continue;
            };
            // ... that is transcoded
            if fields[index].transcode.is_none() {
                errors.at(
                    component,
                    format!("component `{component}` must be a transcoded field, as its value is written into the key; add `#[transcode(\"…\")]` to it"),
                );
            }
            // ... and listed once
            if components.contains(&index) {
                errors.at(component, format!("duplicate component `{component}`"));
                continue;
            }
            components.push(index);
        }
        out.push(Generated {
            ident,
            stored,
            name_tokens,
            sharded: g.sharded.is_present(),
            atomic: g.atomic.is_present() || g.sharded.is_present(),
            components,
        });
    }
    out
}

/// Indexes: a name that makes an enum variant; the hash key is the table hash key or a sharded
/// generated property; the range key is the table range key, an unsharded generated property or
/// a transcoded field; the keys differ from the table's own; no two indexes share a (hash,
/// range) pair or a name; projections name only non-key fields, once each.
///
/// An index whose name is rejected is left out (of the index enum too); one whose key is
/// rejected stays, but takes no part in the pair checks.
pub(crate) fn check_indexes(
    attrs: Vec<IndexAttrs>,
    fields: &[Field<'_>],
    generated: &[Generated],
    errors: &mut Errors,
) -> Vec<IndexDef> {
    let mut out: Vec<IndexDef> = Vec::new();
    for index in attrs {
        let variant = index
            .name
            .as_ref()
            .and_then(|name| index_variant(name, &out, errors));
        let hash = index_hash_key(index.hash.as_ref().map(|h| &h.0), fields, generated, errors);
        let range = index_range_key(
            index.range.as_ref().map(|r| &r.0),
            fields,
            generated,
            errors,
        );
        let mut keys_valid = hash.is_some() && range.is_some();
        let (hash, range) = (
            hash.unwrap_or(KeyRef::TableHash),
            range.unwrap_or(KeyRef::TableRange),
        );
        let name = index
            .name
            .as_ref()
            .map(|n| n.value.clone())
            .unwrap_or_default();
        // an index differs from the table's primary key
        if index.hash.is_none() && index.range.is_none() {
            if let Some(lit) = &index.name {
                errors.at(
                    &lit.lit,
                    format!("index `{name}` has the table's own hash and range keys; give it a `range` (or a sharded generated `hash`)"),
                );
            }
            keys_valid = false;
        }
        // no two indexes share a (hash key, range key) pair
        if keys_valid
            && let Some(other) = out
                .iter()
                .find(|o| o.keys_valid && o.hash == hash && o.range == range)
            && let Some(lit) = &index.name
        {
            errors.at(
                &lit.lit,
                format!(
                    "index `{name}` has the same hash and range keys as index `{}`",
                    other.name
                ),
            );
        }
        let projection = index_projection(&index, range, fields, generated, errors);
        if let Some(variant) = variant {
            out.push(IndexDef {
                name,
                variant,
                hash,
                range,
                keys_valid,
                projection,
            });
        }
    }
    out
}

/// An index name makes an enum variant; names and variants are unique. `None` when rejected.
fn index_variant(
    name: &crate::attrs::Str,
    previous: &[IndexDef],
    errors: &mut Errors,
) -> Option<Ident> {
    let value = &name.value;
    if value.is_empty() {
        errors.at(
            &name.lit,
            "an index needs a name, the GSI's name: write one like `name = \"byCreated\"`",
        );
        return None;
    }
    let Some(variant) = case::variant(value) else {
        errors.at(
            &name.lit,
            format!(
                "index name `{value}` must start with a letter, so that it can name an enum variant"
            ),
        );
        return None;
    };
    let variant = Ident::new(&variant, name.lit.span());
    if previous.iter().any(|o| o.name == *value) {
        errors.at(&name.lit, format!("duplicate index `{value}`"));
        return None;
    }
    if let Some(other) = previous.iter().find(|o| o.variant == variant) {
        errors.at(
            &name.lit,
            format!(
                "index `{value}` maps to the same enum variant `{variant}` as index `{}`; rename one",
                other.name
            ),
        );
        return None;
    }
    Some(variant)
}

/// An index hash key is the table hash key (no `hash`) or a sharded generated property. `None`
/// when rejected.
fn index_hash_key(
    hash: Option<&Ident>,
    fields: &[Field<'_>],
    generated: &[Generated],
    errors: &mut Errors,
) -> Option<KeyRef> {
    let Some(ident) = hash else {
        return Some(KeyRef::TableHash);
    };
    let what = "an index hash key is the table hash key (leave `hash` out) or a `sharded` generated property";
    match generated.iter().position(|g| g.ident == *ident) {
        Some(i) if generated[i].sharded => return Some(KeyRef::Generated(i)),
        Some(_) => errors.at(
            ident,
            format!("index hash key `{ident}` is an unsharded generated property; {what}"),
        ),
        None if fields.iter().any(|f| f.ident == ident) => {
            errors.at(
                ident,
                format!("index hash key `{ident}` is a field; {what}"),
            );
        }
        None => {
            let names: Vec<String> = generated.iter().map(|g| g.ident.to_string()).collect();
            errors.at(
                ident,
                format!(
                    "index hash key `{ident}`: no generated property `{ident}`{}",
                    did_you_mean(&ident.to_string(), names.iter().map(String::as_str))
                ),
            );
        }
    }
    None
}

/// An index range key is the table range key (no `range`), an unsharded generated property or a
/// transcoded field. `None` when rejected.
fn index_range_key(
    range: Option<&Ident>,
    fields: &[Field<'_>],
    generated: &[Generated],
    errors: &mut Errors,
) -> Option<KeyRef> {
    let Some(ident) = range else {
        return Some(KeyRef::TableRange);
    };
    if let Some(i) = generated.iter().position(|g| g.ident == *ident) {
        if generated[i].sharded {
            errors.at(
                ident,
                format!("index range key `{ident}` is a sharded generated property; an index range key is the table range key (leave `range` out), an unsharded generated property or a transcoded field"),
            );
            return None;
        }
        Some(KeyRef::Generated(i))
    } else if let Some(i) = fields.iter().position(|f| f.ident == ident) {
        if fields[i].transcode.is_none() {
            errors.at(
                ident,
                format!("index range key `{ident}` must be a transcoded field; add `#[transcode(\"…\")]` to it"),
            );
            return None;
        }
        // DynamoDB keys are strings, numbers or binary: it cannot key on a boolean
        if let Some(crate::model::Transcode::Builtin {
            name: "boolean", ..
        }) = &fields[i].transcode
        {
            errors.at(
                ident,
                format!("index range key `{ident}` has the `boolean` transcode, but DynamoDB cannot key an index on a boolean; use a string or number field, or a generated property that holds `{ident}`"),
            );
            return None;
        }
        Some(KeyRef::Field(i))
    } else {
        let candidates: Vec<String> = fields
            .iter()
            .map(|f| f.ident.to_string())
            .chain(generated.iter().map(|g| g.ident.to_string()))
            .collect();
        errors.at(
            ident,
            format!(
                "index range key `{ident}`: no field or generated property `{ident}`{}",
                did_you_mean(&ident.to_string(), candidates.iter().map(String::as_str))
            ),
        );
        None
    }
}

/// A projection names fields that are not keys (keys are always projected), once each;
/// `project` and `keys_only` exclude each other.
fn index_projection(
    index: &IndexAttrs,
    range: KeyRef,
    fields: &[Field<'_>],
    generated: &[Generated],
    errors: &mut Errors,
) -> ProjectionDef {
    let list = match (&index.project, index.keys_only.is_present()) {
        (Some(list), true) => {
            errors.at(&list.tokens, "`project` and `keys_only` exclude each other");
            return ProjectionDef::KeysOnly;
        }
        (None, true) => return ProjectionDef::KeysOnly,
        (None, false) => return ProjectionDef::All,
        (Some(list), false) => list,
    };
    let mut projected: Vec<usize> = Vec::new();
    for ident in &list.idents {
        if generated.iter().any(|g| g.ident == *ident) {
            errors.at(
                ident,
                format!("projection `{ident}` is a generated property, a key that every index projects; remove it"),
            );
            continue;
        }
        let Some(i) = fields.iter().position(|f| f.ident == ident) else {
            errors.at(
                ident,
                format!(
                    "projection `{ident}`: no field `{ident}` in this struct{}",
                    did_you_mean(
                        &ident.to_string(),
                        field_names(fields).iter().map(String::as_str)
                    )
                ),
            );
            continue;
        };
        if range == KeyRef::Field(i) {
            errors.at(
                ident,
                format!("projection `{ident}` is the index's range key, which every index projects; remove it"),
            );
            continue;
        }
        if projected.contains(&i) {
            errors.at(ident, format!("duplicate projection `{ident}`"));
            continue;
        }
        projected.push(i);
    }
    ProjectionDef::Include(projected)
}

/// Shard bumps: `char_bits` in 1..=5, `chars` in 0..=40, timestamps non-negative and distinct;
/// after sorting and putting the implied `{0, 1, 0}` bump in front, `chars` strictly increases.
pub(crate) fn check_bumps(attrs: Option<ShardBumpsAttrs>, errors: &mut Errors) -> Vec<Bump> {
    let mut bumps: Vec<(Bump, proc_macro2::TokenStream)> = Vec::new();
    for b in attrs.map(|a| a.bumps).unwrap_or_default() {
        // a bump with a missing option is reported where it is parsed
        let (Some(timestamp), Some(char_bits), Some(chars)) = (b.timestamp, b.char_bits, b.chars)
        else {
            continue;
        };
        let mut ok = true;
        if timestamp.value < 0 {
            errors.at(
                &timestamp.tokens,
                "a shard bump timestamp is milliseconds since the epoch and cannot be negative",
            );
            ok = false;
        } else if timestamp.value > i128::from(u64::MAX) {
            errors.at(&timestamp.tokens, "shard bump timestamp out of range");
            ok = false;
        }
        if !(1..=5).contains(&char_bits.value) {
            errors.at(
                &char_bits.tokens,
                "`char_bits` must be in 1..=5 (radix 2, 4, 8, 16 or 32)",
            );
            ok = false;
        }
        if !(0..=40).contains(&chars.value) {
            errors.at(&chars.tokens, "`chars` must be in 0..=40");
            ok = false;
        }
        if !ok {
            continue;
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // checked above
        let bump = Bump {
            timestamp: timestamp.value as u64,
            char_bits: char_bits.value as u8,
            chars: chars.value as u8,
        };
        if bumps.iter().any(|(o, _)| o.timestamp == bump.timestamp) {
            errors.at(
                &timestamp.tokens,
                format!("duplicate shard bump timestamp {}", bump.timestamp),
            );
            continue;
        }
        bumps.push((bump, chars.tokens));
    }
    bumps.sort_by_key(|(b, _)| b.timestamp);
    let mut normalized: Vec<Bump> = Vec::with_capacity(bumps.len() + 1);
    if bumps.first().is_none_or(|(b, _)| b.timestamp != 0) {
        normalized.push(Bump {
            timestamp: 0,
            char_bits: 1,
            chars: 0,
        });
    }
    for (bump, chars_tokens) in bumps {
        if let Some(previous) = normalized.last()
            && bump.chars <= previous.chars
        {
            errors.at(
                &chars_tokens,
                format!(
                    "shard bump `chars` must strictly increase over time: {} at timestamp {} does not exceed {} before it{}",
                    bump.chars,
                    bump.timestamp,
                    previous.chars,
                    if previous.timestamp == 0 && normalized.len() == 1 { " (the implied first bump has 0 chars)" } else { "" }
                ),
            );
            continue;
        }
        normalized.push(bump);
    }
    normalized
}
