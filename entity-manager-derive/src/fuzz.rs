//! A fuzz-style test of the whole derive front end: attribute combinations drawn from valid and
//! invalid fragments (typos, wrong kinds, raw identifiers, keywords, empty and duplicate lists,
//! huge and negative numbers, unicode, wrong shapes) must never panic the macro, and what it
//! emits must always be valid Rust: items for a correct input, `compile_error!`s plus
//! placeholders for a wrong one.
//!
//! A fragment starting with `!` is a mistake on its own: any input holding it must expand to a
//! `compile_error!`. One starting with `?` may be right or wrong depending on the others. The
//! rest are right on the base entity: an input made of them only must expand without error.

#![allow(clippy::format_collect)] // building test sources

use std::panic::{AssertUnwindSafe, catch_unwind};

use proptest::prelude::*;
use syn::DeriveInput;

use crate::expand::{derive_entity, derive_table};

const ENTITY_OPTIONS: &[&str] = &[
    "table = Users",
    "table = r#Users",
    "table = crate::Users",
    "!table = \"Users\"",
    "!tabel = Users",
    "unique = id",
    "unique = r#type",
    "!unique = missing",
    "!unique",
    "!unique(id)",
    "timestamp = created",
    "!timestamp = id",
    "!timestamp = 5",
    "token = \"user\"",
    "!token = \"\"",
    "token = \"a|b\"",
    "!token = 5",
    "token = \"ünïcødé\"",
    "!default_limit = 0",
    "!default_limit = -1",
    "!default_limit = 99999999999999999999999999999",
    "default_page_size = 10",
    "index_enum = Idx",
    "index_enum = r#Idx",
    "!index_enum = \"Idx\"",
    "crate = ::entity_manager",
    "!crate = \"entity_manager\"",
    "crate = self",
    "!index_enum = User",
    "!index_enum = Self",
    "!unique = self",
    "!unique = \"userId\"",
    "!default_limit = 2.5",
    "!crate = \"::entity_manager\"",
    "!token = user",
];

const STRUCT_ATTRS: &[&str] = &[
    "#[generated(name = name_key, components = [name, created])]",
    "#[generated(name = r#type_key, components = [r#type, created])]",
    "#[generated(name = hash_key2, components = [name], sharded)]",
    "#[generated(name = hash_key3, components = [name], sharded, atomic)]",
    "!#[generated(name = \"quoted\", components = [name])]",
    "!#[generated(name = empty, components = [])]",
    "!#[generated(name = twice, components = [name, name])]",
    "!#[generated(name = unknown, components = [nope])]",
    "!#[generated(name = plain, components = [plain])]",
    "?#[generated(name = renamed, components = [name], rename = \"a|b\")]",
    "!#[generated(components = [name])]",
    "!#[generated]",
    "!#[generated(name = name_key, components = name)]",
    "?#[index(name = \"byName\", range = name_key)]",
    "?#[index(name = \"byName\", range = created)]",
    "?#[index(name = \"byHash\", hash = hash_key2, range = created, project = [name])]",
    "?#[index(name = \"keys\", range = created, keys_only)]",
    "?#[index(name = \"keys2\", range = created, project = keys_only)]",
    "!#[index(name = \"\", range = created)]",
    "!#[index(name = \"1st\", range = created)]",
    "!#[index(name = \"ünï\", range = created)]",
    "!#[index(name = \"bad\", hash = created, range = created)]",
    "!#[index(name = \"bad2\", range = nope)]",
    "!#[index(name = \"bad3\", range = created, project = [hashKey])]",
    "!#[index(range = created)]",
    "!#[index(name = byName)]",
    "?#[shard_bumps(bump(timestamp = 1, char_bits = 2, chars = 1))]",
    "?#[shard_bumps(bumps = [bump(timestamp = 1, char_bits = 2, chars = 1), bump(timestamp = 2, char_bits = 3, chars = 2)])]",
    "!#[shard_bumps(bumps = [bump(timestamp = -1, char_bits = 0, chars = 41)])]",
    "!#[shard_bumps(bumps = bump(timestamp = 1))]",
    "!#[shard_bumps(bumps = [7, \"x\", shard()])]",
    "!#[shard_bumps(timestamp = 1, char_bits = 2, chars = 1)]",
    "!#[shard_bumps(bump(timestamp = 99999999999999999999999999999999, char_bits = 2, chars = 1))]",
    "!#[shard_bumps(bump(timestamp = 5, char_bits = 2, chars = 1), bump(timestamp = 5, char_bits = 2, chars = 2))]",
    "!#[shard_bumps]",
    "!#[transcode(\"string\")]",
    "#[serde(rename_all = \"camelCase\")]",
    "?#[serde(rename_all = \"nonsense\")]",
    "!#[generated(name = self, components = [name])]",
    "!#[generated(name = keys::k, components = [name])]",
    "!#[generated(name = \"type\", components = [name])]",
    "!#[generated(name = hk, components = [name], sharded = true)]",
    "!#[generated(name = hk2, components = [name], atomic = false)]",
    "?#[generated(name = index, components = [name])]",
    "?#[generated(name = a_b, components = [name])]",
    "?#[generated(name = a__b, components = [created])]",
    "!#[index(name = \"kk\", range = created, keys_only = true)]",
    "!#[index(name = \"kk2\", range = created, project = keys_only, keys_only)]",
    "?#[index(name = \"self\", range = name)]",
    "!#[index(name = \"pp\", range = created, project = keys_onyl)]",
    "!#[shard_bumps(bumps = [(timestamp = 1, char_bits = 2, chars = 1)])]",
    "!#[shard_bumps(bumps = [bump()])]",
    "!#[shard_bumps(bumps = [bump(timestamp = \"2025-01-01\", char_bits = 2, chars = 1)])]",
    "!#[entity(token = \"again\")]",
];

const FIELDS: &[&str] = &[
    "#[transcode(\"string\")] id: String",
    "#[transcode(\"string\")] id: Option<String>",
    "#[transcode(\"timestamp\")] created: u64",
    "#[transcode(\"int\")] created: u64",
    "#[transcode(\"timestamp\")] created: String",
    "#[transcode(\"string\")] name: String",
    "#[transcode(\"string\")] name: Option<String>",
    "#[transcode(\"string\")] r#type: String",
    "!#[transcode(string)] plain: String",
    "!#[transcode(\"nope\")] other: String",
    "#[transcode(my::Upper)] upper: String",
    "!#[transcode] bare: String",
    "#[transcode(\"fix6\")] score: f64",
    "!#[transcode(\"bigint20\")] big: i128",
    "#[transcode(\"string\")] #[serde(rename = \"hashKey\")] clash: String",
    "#[serde(flatten)] rest: std::collections::HashMap<String, String>",
    "#[serde(skip)] skipped: u8",
    "?#[serde(rename = \"a|b\")] #[transcode(\"string\")] delim: String",
    "plain: String",
    "!#[transcode = \"string\"] tv: String",
    "!#[transcode(\"string\", \"int\")] two: String",
    "!#[transcode(\"String\")] cap: String",
    "!#[index(name = \"onField\")] onf: String",
    "#[transcode(\"string\")] r#loop: String",
    "#[transcode(\"string\")] ünïcødé: String",
];

const SHAPES: &[&str] = &[
    "struct User {{ {fields} }}",
    "struct User<T> {{ {fields} t: T }}",
    "struct User({fields_tuple});",
    "struct User;",
    "enum User {{ A, B }}",
];

const TABLE_OPTIONS: &[&str] = &[
    "entities(User)",
    "entities(User, Email)",
    "entities()",
    "!entities = User",
    "hash_key = \"pk\"",
    "!hash_key = \"\"",
    "?range_key = \"pk\"",
    "?generated_key_delimiter = \"~\"",
    "!generated_key_delimiter = \"a\"",
    "?generated_value_delimiter = \"~~\"",
    "!shard_key_delimiter = \"\"",
    "?shard_space = power",
    "!shard_space = powr",
    "!throttle = 0",
    "!throttle = 99999999999999999999999",
    "?key_mode = typescript",
    "?profile = npm6_14",
    "!profile = nope",
    "crate = ::entity_manager",
    "!entites(User)",
    "!entities(\"User\")",
    "!entities = [User]",
    "!hash_key = pk",
    "!throttle = -1",
    "!key_mode = \"typescript\"",
    "!profile = \"native\"",
];

/// What a fragment is: a mistake on its own (`!`), right or wrong depending on the others (`?`),
/// or right on the base entity.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Mistake,
    Depends,
    Right,
}

/// A fragment's kind and its text without the marker.
fn kind(fragment: &str) -> (Kind, &str) {
    if let Some(text) = fragment.strip_prefix('!') {
        (Kind::Mistake, text)
    } else if let Some(text) = fragment.strip_prefix('?') {
        (Kind::Depends, text)
    } else {
        (Kind::Right, fragment)
    }
}

/// What the expansion of an input must hold beside being valid Rust.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// A `compile_error!`: the input holds a mistake.
    Error,
    /// No `compile_error!`: the input is right.
    Clean,
    /// Either.
    Anything,
}

/// Whether `tokens` invoke `compile_error!` anywhere.
fn has_compile_error(tokens: proc_macro2::TokenStream) -> bool {
    let tokens: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
    tokens.iter().enumerate().any(|(i, token)| match token {
        proc_macro2::TokenTree::Ident(ident) => {
            ident == "compile_error"
                && matches!(tokens.get(i + 1), Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == '!')
        }
        proc_macro2::TokenTree::Group(group) => has_compile_error(group.stream()),
        _ => false,
    })
}

/// Runs `expand` on `input`, failing on a panic, on output that is not valid Rust items, or on
/// output that breaks `expect`.
fn check(
    expand: fn(&DeriveInput) -> proc_macro2::TokenStream,
    input: &DeriveInput,
    source: &str,
    expect: Expect,
) -> Result<(), TestCaseError> {
    let out = catch_unwind(AssertUnwindSafe(|| expand(input)))
        .map_err(|_| TestCaseError::fail(format!("the derive panicked on:\n{source}")))?;
    syn::parse2::<syn::File>(out.clone()).map_err(|e| {
        TestCaseError::fail(format!("invalid output ({e}) for:\n{source}\n\n{out}"))
    })?;
    let error = has_compile_error(out.clone());
    match expect {
        Expect::Error if !error => Err(TestCaseError::fail(format!(
            "a mistake gave no compile_error!:\n{source}\n\n{out}"
        ))),
        Expect::Clean if error => Err(TestCaseError::fail(format!(
            "a right input gave a compile_error!:\n{source}\n\n{out}"
        ))),
        _ => Ok(()),
    }
}

fn pick(list: &'static [&'static str], most: usize) -> impl Strategy<Value = Vec<&'static str>> {
    proptest::sample::subsequence(list, 0..=most).prop_shuffle()
}

/// Fragments that keep the base entity correct, so that the success path is exercised.
const VALID_ATTRS: &[&str] = &[
    "#[generated(name = r#type_key, components = [r#type, created])]",
    "#[generated(name = name_range, components = [name, created], atomic)]",
    "#[generated(name = type_hash, components = [r#type], sharded)]",
    "#[index(name = \"byCreated\", range = created)]",
    "#[index(name = \"byName\", range = name, project = [r#type])]",
    "#[index(name = \"byType\", range = r#type, keys_only)]",
    "#[shard_bumps(bumps = [bump(timestamp = 1, char_bits = 2, chars = 1), bump(timestamp = 2, char_bits = 3, chars = 2)])]",
    "#[serde(rename_all = \"camelCase\")]",
];
const VALID_OPTIONS: &[&str] = &[
    "token = \"player\"",
    "default_limit = 25",
    "index_enum = PlayerIndexes",
    "crate = ::entity_manager",
];

/// A correct entity the fragments are added to, so that many cases get through every check
/// and exercise the whole expansion, not only its error path.
const BASE_OPTIONS: &str = "table = Users, unique = id, timestamp = created";
const BASE_FIELDS: &str = "#[transcode(\"string\")] id: String, #[transcode(\"timestamp\")] created: u64, #[transcode(\"string\")] name: String, #[transcode(\"string\")] r#type: String,";

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_entity_derive_never_panics(
        base in any::<bool>(),
        options in pick(ENTITY_OPTIONS, 3),
        attrs in pick(STRUCT_ATTRS, 4),
        fields in pick(FIELDS, 3),
        valid_attrs in pick(VALID_ATTRS, VALID_ATTRS.len()),
        valid_options in pick(VALID_OPTIONS, VALID_OPTIONS.len()),
        mistakes in 0usize..3,
        shape in proptest::sample::select(SHAPES),
    ) {
        // from no mistake (a correct entity, when `base`) to a few
        let clean = base && mistakes == 0;
        let (options, attrs, fields): (Vec<&str>, Vec<&str>, Vec<&str>) = if base {
            (
                valid_options.into_iter().chain(options.into_iter().take(mistakes.min(1))).collect(),
                valid_attrs.into_iter().chain(attrs.into_iter().take(mistakes)).collect(),
                fields.into_iter().take(mistakes.saturating_sub(1)).collect(),
            )
        } else {
            (options, attrs, fields)
        };
        let strip = |list: Vec<&'static str>| -> Vec<(Kind, &'static str)> { list.into_iter().map(kind).collect() };
        let (mut options, attrs, mut fields) = (strip(options), strip(attrs), strip(fields));
        if base {
            // keep the fragments that do not redeclare a base field or a base option
            fields.retain(|(_, f)| !["id:", "created:", "name:", "r#type:"].iter().any(|b| f.contains(b)));
            options.retain(|(_, o)| !["table", "unique", "timestamp"].iter().any(|k| o.starts_with(k)));
            options.insert(0, (Kind::Right, BASE_OPTIONS));
        }
        let mut field_list: String = fields.iter().map(|(_, f)| format!("{f}, ")).collect();
        if base {
            field_list += BASE_FIELDS;
        }
        let tuple_list: String = fields
            .iter()
            .filter_map(|(_, f)| f.rsplit_once(": ").map(|(_, ty)| format!("{ty}, ")))
            .collect();
        let body = shape
            .replace("{{", "{")
            .replace("}}", "}")
            .replace("{fields}", &field_list)
            .replace("{fields_tuple}", &tuple_list);
        let text = |list: &[(Kind, &str)], separator: &str| {
            list.iter().map(|(_, t)| *t).collect::<Vec<_>>().join(separator)
        };
        let source = format!("#[entity({})]\n{}\n{}", text(&options, ", "), text(&attrs, "\n"), body);
        // only a struct with named fields and no generics is supported; a named struct's fields
        // carry their attributes into the input
        let named = shape == SHAPES[0];
        let mistake = options.iter().chain(&attrs).chain(if named { &fields[..] } else { &[] })
            .any(|(k, _)| *k == Kind::Mistake);
        let expect = if !named || mistake {
            Expect::Error
        } else if clean {
            Expect::Clean
        } else {
            Expect::Anything
        };
        // every fragment is valid syntax, so every input reaches the derive
        let input = syn::parse_str::<DeriveInput>(&source)
            .map_err(|e| TestCaseError::fail(format!("not Rust ({e}):\n{source}")))?;
        check(derive_entity, &input, &source, expect)?;
    }

    #[test]
    fn the_table_derive_never_panics(
        options in pick(TABLE_OPTIONS, 4),
        shape in proptest::sample::select(&["struct Users;", "struct Users { a: u8 }", "enum Users {}", "struct r#Users;"][..]),
    ) {
        let options: Vec<(Kind, &str)> = options.into_iter().map(kind).collect();
        let source = format!(
            "#[table({})]\n{shape}",
            options.iter().map(|(_, t)| *t).collect::<Vec<_>>().join(", ")
        );
        // an option's key: `entities` of `entities(User)`, `hash_key` of `hash_key = "pk"`
        let keys: Vec<&str> = options
            .iter()
            .map(|(_, t)| t.split(['=', '(']).next().unwrap_or_default().trim())
            .collect();
        let distinct = keys.iter().enumerate().all(|(i, k)| !keys[..i].contains(k));
        let expect = if shape.starts_with("enum") || options.iter().any(|(k, _)| *k == Kind::Mistake) {
            Expect::Error
        } else if distinct && options.iter().all(|(k, _)| *k == Kind::Right) {
            Expect::Clean
        } else {
            Expect::Anything
        };
        let input = syn::parse_str::<DeriveInput>(&source)
            .map_err(|e| TestCaseError::fail(format!("not Rust ({e}):\n{source}")))?;
        check(derive_table, &input, &source, expect)?;
    }
}
