//! The configuration rules that one struct can check by itself, one function per rule group,
//! each rule stated in a comment. Rules that need the table or other entities are compile-time
//! assertions in the expansion (`__private::check_entity_in_table`, `check_table`).

use darling::error::Accumulator;
use syn::Ident;

use crate::attrs::{GeneratedAttrs, IndexAttrs, ShardBumpsAttrs};
use crate::case;
use crate::model::{Bump, Field, Generated, IndexDef, KeyRef, ProjectionDef};

fn err(message: impl std::fmt::Display, span: &impl syn::spanned::Spanned) -> darling::Error {
    darling::Error::custom(message).with_span(span)
}

/// ``; did you mean `x`?`` when a candidate is close to `name` (Jaro-Winkler, as darling does).
pub(crate) fn did_you_mean<'n>(
    name: &str,
    candidates: impl IntoIterator<Item = &'n str>,
) -> String {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(name, c), c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map_or_else(String::new, |(_, c)| format!("; did you mean `{c}`?"))
}

fn field_names(fields: &[Field<'_>]) -> Vec<String> {
    fields.iter().map(|f| f.ident.to_string()).collect()
}

/// The unique and the timestamp property must be transcoded fields: the unique value is written
/// into the range key, and both are written into page keys.
pub(crate) fn check_key_property(
    fields: &[Field<'_>],
    index: Option<usize>,
    ident: &Ident,
    what: &str,
    errors: &mut Accumulator,
) {
    if let Some(field) = index.map(|i| &fields[i])
        && field.transcode.is_none()
    {
        let hint = if what == "timestamp" {
            "#[transcode(\"timestamp\")]"
        } else {
            "#[transcode(\"string\")]"
        };
        errors.push(err(
            format!("the {what} property `{ident}` must be a transcoded field, as it is written into keys; add `{hint}` to it"),
            ident,
        ));
    }
}

/// Generated properties: unique names that no field uses; a non-empty list of distinct
/// components, each a transcoded field (never another generated property).
pub(crate) fn check_generated(
    attrs: Vec<GeneratedAttrs>,
    fields: &[Field<'_>],
    stored_name: &dyn Fn(&Ident) -> String,
    errors: &mut Accumulator,
) -> Vec<Generated> {
    let names: Vec<Ident> = attrs.iter().map(|g| g.name.clone()).collect();
    let mut out: Vec<Generated> = Vec::with_capacity(attrs.len());
    for g in attrs {
        let ident = &g.name;
        let stored = g
            .rename
            .as_ref()
            .map_or_else(|| stored_name(ident), |r| (**r).clone());
        // generated property names are unique
        if out.iter().any(|o| o.stored == stored || o.ident == *ident) {
            errors.push(err(
                format!("duplicate generated property `{stored}`"),
                ident,
            ));
        }
        // a generated property does not reuse a field's stored name
        if let Some(field) = fields.iter().find(|f| f.stored == stored) {
            errors.push(err(
                format!("generated property `{stored}` collides with field `{}`, stored under the same attribute name", field.ident),
                ident,
            ));
        }
        // the component list is not empty
        if g.components.idents.is_empty() {
            errors.push(
                darling::Error::custom("a generated property needs at least one component, like `components = [user_id]`")
                    .with_span(&g.components.span),
            );
        }
        let mut components: Vec<usize> = Vec::new();
        for component in &g.components.idents {
            // a component is not itself a generated property
            if names.iter().any(|n| n == component) {
                errors.push(err(
                    format!("component `{component}` is a generated property; components must be transcoded fields"),
                    component,
                ));
                continue;
            }
            // a component is a field of this struct
            let Some(index) = fields.iter().position(|f| f.ident == component) else {
                errors.push(err(
                    format!(
                        "component `{component}`: no field `{component}` in this struct{}",
                        did_you_mean(
                            &component.to_string(),
                            field_names(fields).iter().map(String::as_str)
                        )
                    ),
                    component,
                ));
                continue;
            };
            // ... that is transcoded
            if fields[index].transcode.is_none() {
                errors.push(err(
                    format!("component `{component}` must be a transcoded field, as its value is written into the key; add `#[transcode(\"…\")]` to it"),
                    component,
                ));
            }
            // ... and listed once
            if components.contains(&index) {
                errors.push(err(format!("duplicate component `{component}`"), component));
                continue;
            }
            components.push(index);
        }
        out.push(Generated {
            ident: g.name.clone(),
            stored,
            sharded: g.sharded.is_present(),
            atomic: g.atomic.is_present() || g.sharded.is_present(),
            components,
        });
    }
    out
}

/// Indexes: a name that makes an enum variant; the hash key is the table hash key or a sharded
/// generated property; the range key is the table range key, an unsharded generated property or
/// a transcoded field; no two indexes share a (hash, range) pair or a name; projections name
/// only non-key fields, once each.
pub(crate) fn check_indexes(
    attrs: Vec<IndexAttrs>,
    fields: &[Field<'_>],
    generated: &[Generated],
    errors: &mut Accumulator,
) -> Vec<IndexDef> {
    let mut out: Vec<IndexDef> = Vec::new();
    for index in attrs {
        let name_span = index.name.span();
        let name = (*index.name).clone();
        let variant = index_variant(&name, name_span, &out, errors);
        let hash = index_hash_key(index.hash.as_ref(), fields, generated, errors);
        let range = index_range_key(index.range.as_ref(), fields, generated, errors);
        // no two indexes share a (hash key, range key) pair
        if let Some(other) = out.iter().find(|o| o.hash == hash && o.range == range) {
            errors.push(
                darling::Error::custom(format!(
                    "index `{name}` has the same hash and range keys as index `{}`",
                    other.name
                ))
                .with_span(&name_span),
            );
        }
        let projection = index_projection(&index, range, fields, generated, errors);
        out.push(IndexDef {
            name,
            variant,
            hash,
            range,
            projection,
        });
    }
    out
}

/// An index name makes an enum variant; names and variants are unique.
fn index_variant(
    name: &str,
    span: proc_macro2::Span,
    previous: &[IndexDef],
    errors: &mut Accumulator,
) -> Ident {
    let variant = if let Some(v) = case::variant(name) {
        Ident::new(&v, span)
    } else {
        errors.push(
            darling::Error::custom(format!(
                "index name `{name}` must start with a letter, so that it can name an enum variant"
            ))
            .with_span(&span),
        );
        Ident::new("Invalid", span)
    };
    if previous.iter().any(|o| o.name == name) {
        errors.push(darling::Error::custom(format!("duplicate index `{name}`")).with_span(&span));
    } else if previous.iter().any(|o| o.variant == variant) {
        errors.push(darling::Error::custom(format!("index `{name}` maps to the same enum variant `{variant}` as another index; rename one")).with_span(&span));
    }
    variant
}

/// An index hash key is the table hash key (no `hash`) or a sharded generated property.
fn index_hash_key(
    hash: Option<&Ident>,
    fields: &[Field<'_>],
    generated: &[Generated],
    errors: &mut Accumulator,
) -> KeyRef {
    let Some(ident) = hash else {
        return KeyRef::TableHash;
    };
    match generated.iter().position(|g| g.ident == *ident) {
        Some(i) if generated[i].sharded => return KeyRef::Generated(i),
        Some(_) => errors.push(err(format!("index hash key `{ident}` is an unsharded generated property; an index hash key is the table hash key (leave `hash` out) or a `sharded` generated property"), ident)),
        None if fields.iter().any(|f| f.ident == ident) => errors.push(err(format!("index hash key `{ident}` is a field; an index hash key is the table hash key (leave `hash` out) or a `sharded` generated property"), ident)),
        None => {
            let names: Vec<String> = generated.iter().map(|g| g.ident.to_string()).collect();
            errors.push(err(format!("index hash key `{ident}`: no generated property `{ident}`{}", did_you_mean(&ident.to_string(), names.iter().map(String::as_str))), ident));
        }
    }
    KeyRef::TableHash
}

/// An index range key is the table range key (no `range`), an unsharded generated property or a
/// transcoded field.
fn index_range_key(
    range: Option<&Ident>,
    fields: &[Field<'_>],
    generated: &[Generated],
    errors: &mut Accumulator,
) -> KeyRef {
    let Some(ident) = range else {
        return KeyRef::TableRange;
    };
    if let Some(i) = generated.iter().position(|g| g.ident == *ident) {
        if generated[i].sharded {
            errors.push(err(format!("index range key `{ident}` is a sharded generated property; an index range key is the table range key (leave `range` out), an unsharded generated property or a transcoded field"), ident));
        }
        KeyRef::Generated(i)
    } else if let Some(i) = fields.iter().position(|f| f.ident == ident) {
        if fields[i].transcode.is_none() {
            errors.push(err(format!("index range key `{ident}` must be a transcoded field; add `#[transcode(\"…\")]` to it"), ident));
        }
        KeyRef::Field(i)
    } else {
        let candidates: Vec<String> = fields
            .iter()
            .map(|f| f.ident.to_string())
            .chain(generated.iter().map(|g| g.ident.to_string()))
            .collect();
        errors.push(err(
            format!(
                "index range key `{ident}`: no field or generated property `{ident}`{}",
                did_you_mean(&ident.to_string(), candidates.iter().map(String::as_str))
            ),
            ident,
        ));
        KeyRef::TableRange
    }
}

/// A projection names fields that are not keys (keys are always projected), once each;
/// `project` and `keys_only` exclude each other.
fn index_projection(
    index: &IndexAttrs,
    range: KeyRef,
    fields: &[Field<'_>],
    generated: &[Generated],
    errors: &mut Accumulator,
) -> ProjectionDef {
    let list = match (&index.project, index.keys_only.is_present()) {
        (Some(list), true) => {
            errors.push(
                darling::Error::custom("`project` and `keys_only` exclude each other")
                    .with_span(&list.span),
            );
            return ProjectionDef::KeysOnly;
        }
        (None, true) => return ProjectionDef::KeysOnly,
        (None, false) => return ProjectionDef::All,
        (Some(list), false) => list,
    };
    let mut projected: Vec<usize> = Vec::new();
    for ident in &list.idents {
        if generated.iter().any(|g| g.ident == *ident) {
            errors.push(err(format!("projection `{ident}` is a generated property, a key that every index projects; remove it"), ident));
            continue;
        }
        let Some(i) = fields.iter().position(|f| f.ident == ident) else {
            errors.push(err(
                format!(
                    "projection `{ident}`: no field `{ident}` in this struct{}",
                    did_you_mean(
                        &ident.to_string(),
                        field_names(fields).iter().map(String::as_str)
                    )
                ),
                ident,
            ));
            continue;
        };
        if range == KeyRef::Field(i) {
            errors.push(err(format!("projection `{ident}` is the index's range key, which every index projects; remove it"), ident));
            continue;
        }
        if projected.contains(&i) {
            errors.push(err(format!("duplicate projection `{ident}`"), ident));
            continue;
        }
        projected.push(i);
    }
    ProjectionDef::Include(projected)
}

/// Shard bumps: `char_bits` in 1..=5, `chars` in 0..=40, timestamps non-negative and distinct;
/// after sorting and putting the implied `{0, 1, 0}` bump in front, `chars` strictly increases.
pub(crate) fn check_bumps(attrs: Option<ShardBumpsAttrs>, errors: &mut Accumulator) -> Vec<Bump> {
    let mut bumps: Vec<(Bump, proc_macro2::Span, proc_macro2::Span)> = Vec::new();
    for b in attrs.map(|a| a.bumps).unwrap_or_default() {
        let mut ok = true;
        if b.timestamp.value < 0 {
            errors.push(
                darling::Error::custom(
                    "a shard bump timestamp is milliseconds since the epoch and cannot be negative",
                )
                .with_span(&b.timestamp.span),
            );
            ok = false;
        } else if b.timestamp.value > i128::from(u64::MAX) {
            errors.push(
                darling::Error::custom("shard bump timestamp out of range")
                    .with_span(&b.timestamp.span),
            );
            ok = false;
        }
        if !(1..=5).contains(&b.char_bits.value) {
            errors.push(
                darling::Error::custom("`char_bits` must be in 1..=5 (radix 2, 4, 8, 16 or 32)")
                    .with_span(&b.char_bits.span),
            );
            ok = false;
        }
        if !(0..=40).contains(&b.chars.value) {
            errors
                .push(darling::Error::custom("`chars` must be in 0..=40").with_span(&b.chars.span));
            ok = false;
        }
        if !ok {
            continue;
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let bump = Bump {
            timestamp: b.timestamp.value as u64,
            char_bits: b.char_bits.value as u8,
            chars: b.chars.value as u8,
        };
        if bumps.iter().any(|(o, _, _)| o.timestamp == bump.timestamp) {
            errors.push(
                darling::Error::custom(format!(
                    "duplicate shard bump timestamp {}",
                    bump.timestamp
                ))
                .with_span(&b.timestamp.span),
            );
            continue;
        }
        bumps.push((bump, b.timestamp.span, b.chars.span));
    }
    bumps.sort_by_key(|(b, _, _)| b.timestamp);
    let mut normalized: Vec<Bump> = Vec::with_capacity(bumps.len() + 1);
    if bumps.first().is_none_or(|(b, _, _)| b.timestamp != 0) {
        normalized.push(Bump {
            timestamp: 0,
            char_bits: 1,
            chars: 0,
        });
    }
    for (bump, _, chars_span) in bumps {
        if let Some(previous) = normalized.last()
            && bump.chars <= previous.chars
        {
            errors.push(darling::Error::custom(format!(
                "shard bump `chars` must strictly increase over time: {} at timestamp {} does not exceed {} before it{}",
                bump.chars,
                bump.timestamp,
                previous.chars,
                if previous.timestamp == 0 && normalized.len() == 1 { " (the implied first bump has 0 chars)" } else { "" }
            )).with_span(&chars_span));
            continue;
        }
        normalized.push(bump);
    }
    normalized
}
