//! The configuration rules over a finished model, as serde's `internals/check.rs` does: the
//! model is built first (`model.rs`, `resolve.rs`, `table.rs`), then every rule runs on it and
//! every problem goes on the offending token.
//!
//! The rules are not written here: each is one function of the core's `rules` module, which
//! run-time validation (`Schema::new`, `Schema::from_ts_config`) calls too, with the same words.
//! The rules that need the table's settings or the other entities of a table are `const`
//! assertions over the core's `const fn`s (`assertions.rs`). What this file adds is what only
//! Rust has: an index name must make an enum variant, the unique property cannot be an
//! `Option`, an index needs keys of its own.

use entity_manager_core::__private::rules::{
    self, Delimiter, IndexKey, Key, KeyKind, KeyProperty, KeySide, Named, Problem, Role, Setting,
    Syntax,
};
use entity_manager_core::model::GeneratedKind;
use entity_manager_core::transcode;
use quote::ToTokens;

use crate::attrs::TableOptions;
use crate::case;
use crate::errors::Errors;
use crate::model::resolve::{self, text};
use crate::model::{Container, Field, Generated, KeyRef, MultiDef, Target, Transcode};
use crate::table::TableSettings;

const SYNTAX: Syntax = Syntax::Derive;

/// Reports `problem`, if any, on `tokens`.
fn report(errors: &mut Errors, tokens: impl ToTokens, problem: Option<Problem>) {
    if let Some(problem) = problem {
        errors.at(tokens, problem.message);
    }
}

/// What a field is as an attribute.
fn field_role(field: &Field<'_>) -> Role {
    if field.transcode.is_some() {
        Role::Transcoded
    } else {
        Role::Attribute
    }
}

fn kind(generated: &Generated) -> GeneratedKind {
    if generated.sharded {
        GeneratedKind::Sharded
    } else {
        GeneratedKind::Unsharded
    }
}

/// What a resolved name is as an attribute.
fn role(c: &Container<'_>, target: Target) -> Role {
    match target {
        Target::Field(i) => field_role(&c.fields[i]),
        Target::Generated(i) => Role::Generated(kind(&c.generated[i])),
    }
}

/// The name of a field's transcode, as the rules take it: a default's name or a transcode
/// type's path; `Err` for a `#[transcode]` already reported.
fn transcode_name(field: &Field<'_>) -> Result<Option<String>, ()> {
    match &field.transcode {
        None => Ok(None),
        Some(Transcode::Builtin { name, .. }) => Ok(Some((*name).to_owned())),
        Some(Transcode::Path(path)) => Ok(Some(crate::errors::path_text(path))),
        Some(Transcode::Invalid) => Err(()),
    }
}

/// Every rule of one entity that one derive can check.
pub(crate) fn check_entity(c: &Container<'_>, errors: &mut Errors) {
    report(
        errors,
        &c.token_tokens,
        rules::entity_token(SYNTAX, &c.token, None),
    );
    check_defaults(c, errors);
    check_bumps(c, errors);
    check_key_properties(c, errors);
    check_names(c, errors);
    check_generated(c, errors);
    check_indexes(c, errors);
}

fn check_defaults(c: &Container<'_>, errors: &mut Errors) {
    for (setting, given) in [Setting::DefaultLimit, Setting::DefaultPageSize]
        .into_iter()
        .zip(&c.defaults_given)
    {
        let Some(given) = given else { continue };
        report(
            errors,
            &given.tokens,
            rules::entity_default_positive(SYNTAX, setting, given.value),
        );
        if usize::try_from(given.value).is_err() && given.value > 0 {
            errors.at(
                &given.tokens,
                format!("`{}` is too large", setting.name(SYNTAX)),
            );
        }
    }
}

fn check_bumps(c: &Container<'_>, errors: &mut Errors) {
    let defs = &c.bump_defs;
    for def in defs {
        report(
            errors,
            &def.char_bits.tokens,
            rules::bump_char_bits(SYNTAX, def.char_bits.value),
        );
        report(
            errors,
            &def.chars.tokens,
            rules::bump_chars(SYNTAX, def.chars.value),
        );
        if let Some(timestamp) = def.valid_timestamp {
            report(
                errors,
                &def.timestamp.tokens,
                rules::bump_timestamp_in_milliseconds(timestamp),
            );
        }
    }
    let timestamps = defs
        .iter()
        .enumerate()
        .filter_map(|(i, d)| Some((i, d.valid_timestamp?)));
    for (i, problem) in rules::bump_timestamps_unique(timestamps) {
        report(errors, &defs[i].timestamp.tokens, Some(problem));
    }
    let (positions, bumps) = resolve::declared_bumps(defs);
    let schedule = rules::schedule(&bumps);
    for (i, problem) in rules::bump_chars_increase(SYNTAX, &schedule) {
        if let Some(Some(declared)) = schedule.declared.get(i) {
            report(
                errors,
                &defs[positions[*declared]].chars.tokens,
                Some(problem),
            );
        }
    }
}

/// The unique and the timestamp property: transcoded (the timestamp with `timestamp`); the
/// unique value identifies the record and is written into every key, so it is not an `Option`.
fn check_key_properties(c: &Container<'_>, errors: &mut Errors) {
    let transcoded: Vec<String> = c
        .fields
        .iter()
        .filter(|f| f.transcode.is_some())
        .map(|f| text(f.ident))
        .collect();
    let transcoded: Vec<&str> = transcoded.iter().map(String::as_str).collect();
    if let Some(field) = c.unique.map(|i| &c.fields[i]) {
        if let Ok(name) = transcode_name(field) {
            let unique = KeyProperty {
                name: &text(field.ident),
                transcode: name.as_deref(),
                transcoded: &transcoded,
            };
            report(errors, field.ident, rules::unique_property(SYNTAX, unique));
        }
        if !std::ptr::eq(field.ty, field.value_ty) {
            errors.at(
                field.ty,
                format!(
                    "the unique property `{}` identifies a record and is written into every key, so it cannot be an `Option`; use the value type itself",
                    text(field.ident)
                ),
            );
        }
    }
    if let Some(field) = c.timestamp.map(|i| &c.fields[i])
        && let Ok(name) = transcode_name(field)
        && let Some(problem) = rules::timestamp_property(
            SYNTAX,
            KeyProperty {
                name: &text(field.ident),
                transcode: name.as_deref(),
                transcoded: &transcoded,
            },
        )
    {
        match &field.transcode {
            Some(Transcode::Builtin { span, .. }) => errors.at_span(*span, problem.message),
            Some(Transcode::Path(path)) => errors.at(path, problem.message),
            _ => errors.at(field.ident, problem.message),
        }
    }
}

/// Names: not empty; one role per attribute name (the table's keys are `const` assertions);
/// index names unique, each making its own enum variant.
fn check_names(c: &Container<'_>, errors: &mut Errors) {
    let written: Vec<&Field<'_>> = c.fields.iter().filter(|f| f.written).collect();
    for field in written.iter().filter(|f| f.transcode.is_some()) {
        report(
            errors,
            &field.name_tokens,
            rules::name_not_empty(Named::Transcoded, &field.stored),
        );
    }
    for generated in &c.generated {
        report(
            errors,
            &generated.name_tokens,
            rules::name_not_empty(Named::Generated, &generated.stored),
        );
    }
    let declared: Vec<(&str, Role)> = written
        .iter()
        .map(|f| (f.stored.as_str(), field_role(f)))
        .chain(
            c.generated
                .iter()
                .map(|g| (g.stored.as_str(), Role::Generated(kind(g)))),
        )
        .collect();
    for (i, problem) in rules::attribute_names_distinct(None, &declared) {
        let tokens = match written.get(i) {
            Some(field) => &field.name_tokens,
            None => &c.generated[i - written.len()].name_tokens,
        };
        report(errors, tokens, Some(problem));
    }

    let names: Vec<&str> = c.indexes.iter().map(|i| i.name.as_str()).collect();
    let repeats = rules::index_names_unique(&names);
    for (i, index) in c.indexes.iter().enumerate() {
        let lit = &index.name_lit;
        if let Some(problem) = rules::name_not_empty(Named::Index, &index.name)
            .or_else(|| rules::index_name_valid(&index.name))
        {
            report(errors, lit, Some(problem));
        } else if case::variant(&index.name).is_none() {
            errors.at(
                lit,
                format!(
                    "index name `{}` must start with a letter, so that it can name an enum variant",
                    index.name
                ),
            );
        } else if let Some((_, problem)) = repeats.iter().find(|(r, _)| *r == i) {
            report(errors, lit, Some(problem.clone()));
        } else if index.variant.is_none()
            && let Some(other) = c.indexes[..i].iter().find(|o| {
                o.variant.is_some() && case::variant(&o.name) == case::variant(&index.name)
            })
        {
            errors.at(
                lit,
                format!(
                    "index `{}` maps to the same enum variant `{}` as index `{}`; rename one",
                    index.name,
                    case::variant(&index.name).unwrap_or_default(),
                    other.name
                ),
            );
        }
    }
}

/// Generated properties: components transcoded, not empty, unique.
fn check_generated(c: &Container<'_>, errors: &mut Errors) {
    for generated in &c.generated {
        let name = text(&generated.ident);
        for (i, (ident, target)) in generated.listed.iter().enumerate() {
            report(
                errors,
                ident,
                rules::component_transcoded(SYNTAX, &name, i, &text(ident), Some(role(c, *target))),
            );
        }
        if let Some(list) = &generated.empty_list {
            report(errors, list, rules::components_not_empty(&name, 0));
        }
        let listed: Vec<String> = generated.listed.iter().map(|(i, _)| text(i)).collect();
        let listed: Vec<&str> = listed.iter().map(String::as_str).collect();
        for (i, problem) in rules::components_unique(&name, &listed) {
            report(errors, &generated.listed[i].0, Some(problem));
        }
    }
}

/// An index key, for the rules (the derive does not know the table's key names).
fn index_key<'a>(index: &'a str, key: &'a str, role: Role) -> IndexKey<'a> {
    IndexKey {
        index,
        key,
        role: Some(role),
        table_key: None,
    }
}

/// Indexes: valid keys, distinct key pairs, keys of their own; projections of non-keys, once
/// each.
fn check_indexes(c: &Container<'_>, errors: &mut Errors) {
    let generated_names = |kind: GeneratedKind| -> Vec<String> {
        c.generated
            .iter()
            .filter(|g| self::kind(g) == kind)
            .map(|g| text(&g.ident))
            .collect()
    };
    let (sharded, unsharded) = (
        generated_names(GeneratedKind::Sharded),
        generated_names(GeneratedKind::Unsharded),
    );
    let (sharded, unsharded): (Vec<&str>, Vec<&str>) = (
        sharded.iter().map(String::as_str).collect(),
        unsharded.iter().map(String::as_str).collect(),
    );
    let key_target = |key: KeyRef| match key {
        KeyRef::Field(i) => Some(Target::Field(i)),
        KeyRef::Generated(i) => Some(Target::Generated(i)),
        KeyRef::TableHash | KeyRef::TableRange => None,
    };
    let names: Vec<&str> = c.indexes.iter().map(|i| i.name.as_str()).collect();
    let repeated: Vec<usize> = rules::index_names_unique(&names)
        .into_iter()
        .map(|(i, _)| i)
        .collect();
    let mut pairs = Vec::with_capacity(c.indexes.len());
    for (position, index) in c.indexes.iter().enumerate() {
        let mut keys_valid = index.keys_valid;
        if let (Some(ident), Some(target)) = (&index.hash_ident, key_target(index.hash)) {
            let key = text(ident);
            let hash = index_key(&index.name, &key, role(c, target));
            let problem = rules::index_hash_key(SYNTAX, hash, &sharded);
            keys_valid &= problem.is_none();
            report(errors, ident, problem);
        }
        if let (Some(ident), Some(target)) = (&index.range_ident, key_target(index.range)) {
            let key = text(ident);
            let range = index_key(&index.name, &key, role(c, target));
            let mut problem = rules::index_range_key(SYNTAX, range, &unsharded);
            // a default transcode DynamoDB cannot key on (a transcode type's key type is only
            // known at run time, where `Schema::new` checks it)
            if problem.is_none()
                && let Target::Field(i) = target
                && let Some(Transcode::Builtin { name, .. }) = &c.fields[i].transcode
            {
                let keyable = transcode::builtin(name).is_some_and(|t| t.key_type().is_some());
                problem = rules::index_range_key_type(&index.name, &key, name, keyable);
            }
            keys_valid &= problem.is_none();
            report(errors, ident, problem);
        }
        if let Some(multi) = &index.multi {
            check_multi_key(c, &index.name, multi, errors);
        }
        // an index of the table's own keys would be the table again
        if index.multi.is_none() && index.hash_ident.is_none() && index.range_ident.is_none() {
            errors.at(
                &index.name_lit,
                format!(
                    "index `{}` has the table's own hash and range keys; give it a `range` (or a sharded generated `hash`)",
                    index.name
                ),
            );
            keys_valid = false;
        }
        let key = |key: KeyRef| match key {
            KeyRef::TableHash => Key::TableHash,
            KeyRef::TableRange => Key::TableRange,
            KeyRef::Generated(i) => Key::Named(&c.generated[i].stored),
            KeyRef::Field(i) => Key::Named(&c.fields[i].stored),
        };
        pairs.push(
            (keys_valid && !repeated.contains(&position))
                .then(|| (index.name.as_str(), key(index.hash), key(index.range))),
        );

        for (ident, target) in &index.project {
            let kind = match *target {
                Target::Generated(_) => Some(KeyKind::Generated),
                Target::Field(i) if index.range == KeyRef::Field(i) => Some(KeyKind::IndexRange),
                Target::Field(_) if multi_side(index, *target, true) => Some(KeyKind::IndexHash),
                Target::Field(_) if multi_side(index, *target, false) => Some(KeyKind::IndexRange),
                Target::Field(_) => None,
            };
            report(
                errors,
                ident,
                rules::projection_not_key(&index.name, &text(ident), kind),
            );
        }
        let projected: Vec<String> = index.project.iter().map(|(i, _)| text(i)).collect();
        let projected: Vec<&str> = projected.iter().map(String::as_str).collect();
        for (i, problem) in rules::projections_unique(&index.name, &projected) {
            report(errors, &index.project[i].0, Some(problem));
        }
    }
    for (i, problem) in rules::index_key_pairs_unique(&pairs) {
        report(errors, &c.indexes[i].name_lit, Some(problem));
    }
}

/// Whether a multi-attribute key lists `target` on its partition (`hash`) or sort side.
fn multi_side(index: &crate::model::IndexDef, target: Target, hash: bool) -> bool {
    index.multi.as_ref().is_some_and(|m| {
        let side = if hash { &m.hash } else { &m.range };
        side.iter().any(|a| a.target == target)
    })
}

/// A multi-attribute key: 1 to 4 attributes a side (the shard attribute of a sharded key
/// counted), each once, each a stored field (not a generated property) whose type has a
/// `DynamoDB` key type (the same rules as at run time, on the offending tokens).
fn check_multi_key(c: &Container<'_>, index: &str, multi: &MultiDef, errors: &mut Errors) {
    report(
        errors,
        &multi.hash_tokens,
        rules::multi_key_arity(
            SYNTAX,
            index,
            KeySide::Partition,
            multi.partition_count(),
            multi.sharded,
        ),
    );
    report(
        errors,
        &multi.range_tokens,
        rules::multi_key_arity(SYNTAX, index, KeySide::Sort, multi.range.len(), false),
    );
    let attrs: Vec<_> = multi.hash.iter().chain(&multi.range).collect();
    let names: Vec<String> = attrs.iter().map(|a| stored_name(c, a.target)).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    for (i, problem) in rules::multi_key_attributes_unique(index, &names) {
        report(errors, &attrs[i].ident, Some(problem));
    }
    for (attr, name) in attrs.iter().zip(&names) {
        let problem =
            rules::multi_key_attribute_role(SYNTAX, index, name, Some(role(c, attr.target)), false);
        if problem.is_some() {
            report(errors, &attr.ident, problem);
        } else if attr.key_type.is_none()
            && let Target::Field(i) = attr.target
        {
            let field = &c.fields[i];
            errors.at(
                &attr.ident,
                format!(
                    "index `{index}` key attribute `{name}` has type `{}`, which has no DynamoDB key type; a multi-attribute key keeps natural values: use a field of a number type (N) or a string type (S)",
                    type_text(field.value_ty)
                ),
            );
        }
    }
}

/// A type as written, without the spaces tokens print with (`Vec<String>`).
fn type_text(ty: &syn::Type) -> String {
    ty.to_token_stream()
        .to_string()
        .replace(" < ", "<")
        .replace("< ", "<")
        .replace(" >", ">")
        .replace(" ,", ",")
}

/// The stored attribute name of a field or generated property.
fn stored_name(c: &Container<'_>, target: Target) -> String {
    match target {
        Target::Field(i) => c.fields[i].stored.clone(),
        Target::Generated(i) => c.generated[i].stored.clone(),
    }
}

/// The rules of the table's settings: key names not empty and distinct; delimiters not empty,
/// without word characters, none containing another; a throttle of at least 1. Only a setting
/// the user gave can be wrong (the defaults are fine together), and its problem goes on it.
pub(crate) fn check_table(options: &TableOptions, s: &TableSettings, errors: &mut Errors) {
    for (setting, given) in [
        (Setting::HashKey, &options.hash_key),
        (Setting::RangeKey, &options.range_key),
    ] {
        if let Some(given) = given {
            report(
                errors,
                &given.lit,
                rules::table_key_not_empty(SYNTAX, setting, &given.value),
            );
        }
    }
    if let Some(problem) = rules::table_keys_distinct(&s.hash_key, &s.range_key) {
        // the one given last (both given, or one given as the other's default)
        match options.range_key.as_ref().or(options.hash_key.as_ref()) {
            Some(v) => errors.at(&v.lit, problem.message),
            None => errors.at_span(proc_macro2::Span::call_site(), problem.message),
        }
    }
    let delimiters = [
        (Delimiter::GeneratedKey, s.generated_key.as_str()),
        (Delimiter::GeneratedValue, s.generated_value.as_str()),
        (Delimiter::ShardKey, s.shard_key.as_str()),
    ];
    let given = |which: Delimiter| match which {
        Delimiter::GeneratedKey => options.generated_key_delimiter.as_ref(),
        Delimiter::GeneratedValue => options.generated_value_delimiter.as_ref(),
        Delimiter::ShardKey => options.shard_key_delimiter.as_ref(),
    };
    for (which, value) in delimiters {
        if let Some(attr) = given(which) {
            report(
                errors,
                &attr.lit,
                rules::delimiter_not_empty(SYNTAX, which, value),
            );
            report(
                errors,
                &attr.lit,
                rules::delimiter_without_word_characters(SYNTAX, which, value),
            );
        }
    }
    for (which, problem) in rules::delimiters_disjoint(SYNTAX, &delimiters) {
        if let Some(attr) = given(which) {
            report(errors, &attr.lit, Some(problem));
        }
    }
    if let Some(throttle) = &options.throttle {
        report(
            errors,
            &throttle.tokens,
            rules::throttle_positive(SYNTAX, throttle.value),
        );
        if usize::try_from(throttle.value).is_err() && throttle.value > 0 {
            errors.at(&throttle.tokens, "`throttle` is too large");
        }
    }
}
