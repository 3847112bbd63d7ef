//! A fuzz-style test of the whole derive front end: attribute combinations drawn from valid and
//! invalid fragments (typos, wrong kinds, raw identifiers, empty and duplicate lists, huge and
//! negative numbers, unicode, wrong shapes) must never panic the macro, and what it emits must
//! always be valid Rust: items for a correct input, `compile_error!`s plus placeholders for a
//! wrong one.

#![allow(clippy::format_collect)] // building test sources

use std::panic::{AssertUnwindSafe, catch_unwind};

use proptest::prelude::*;
use syn::DeriveInput;

use crate::expand::{derive_entity, derive_table};

const ENTITY_OPTIONS: &[&str] = &[
    "table = Users",
    "table = r#Users",
    "table = crate::Users",
    "table = \"Users\"",
    "tabel = Users",
    "unique = id",
    "unique = r#type",
    "unique = missing",
    "unique",
    "unique(id)",
    "timestamp = created",
    "timestamp = id",
    "timestamp = 5",
    "token = \"user\"",
    "token = \"\"",
    "token = \"a|b\"",
    "token = 5",
    "token = \"ünïcødé\"",
    "default_limit = 0",
    "default_limit = -1",
    "default_limit = 99999999999999999999999999999",
    "default_page_size = 10",
    "index_enum = Idx",
    "index_enum = r#Idx",
    "index_enum = \"Idx\"",
    "crate = ::entity_manager",
    "crate = \"entity_manager\"",
    "crate = self",
];

const STRUCT_ATTRS: &[&str] = &[
    "#[generated(name = name_key, components = [name, created])]",
    "#[generated(name = r#type_key, components = [r#type, created])]",
    "#[generated(name = hash_key2, components = [name], sharded)]",
    "#[generated(name = hash_key3, components = [name], sharded, atomic)]",
    "#[generated(name = \"quoted\", components = [name])]",
    "#[generated(name = empty, components = [])]",
    "#[generated(name = twice, components = [name, name])]",
    "#[generated(name = unknown, components = [nope])]",
    "#[generated(name = plain, components = [plain])]",
    "#[generated(name = renamed, components = [name], rename = \"a|b\")]",
    "#[generated(components = [name])]",
    "#[generated]",
    "#[generated(name = name_key, components = name)]",
    "#[index(name = \"byName\", range = name_key)]",
    "#[index(name = \"byName\", range = created)]",
    "#[index(name = \"byHash\", hash = hash_key2, range = created, project = [name])]",
    "#[index(name = \"keys\", range = created, keys_only)]",
    "#[index(name = \"keys2\", range = created, project = keys_only)]",
    "#[index(name = \"\", range = created)]",
    "#[index(name = \"1st\", range = created)]",
    "#[index(name = \"ünï\", range = created)]",
    "#[index(name = \"bad\", hash = created, range = created)]",
    "#[index(name = \"bad2\", range = nope)]",
    "#[index(name = \"bad3\", range = created, project = [hashKey])]",
    "#[index(range = created)]",
    "#[index(name = byName)]",
    "#[shard_bumps(bump(timestamp = 1, char_bits = 2, chars = 1))]",
    "#[shard_bumps(bumps = [bump(timestamp = 1, char_bits = 2, chars = 1), bump(timestamp = 2, char_bits = 3, chars = 2)])]",
    "#[shard_bumps(bumps = [bump(timestamp = -1, char_bits = 0, chars = 41)])]",
    "#[shard_bumps(bumps = bump(timestamp = 1))]",
    "#[shard_bumps(bumps = [7, \"x\", shard()])]",
    "#[shard_bumps(timestamp = 1, char_bits = 2, chars = 1)]",
    "#[shard_bumps(bump(timestamp = 99999999999999999999999999999999, char_bits = 2, chars = 1))]",
    "#[shard_bumps(bump(timestamp = 5, char_bits = 2, chars = 1), bump(timestamp = 5, char_bits = 2, chars = 2))]",
    "#[shard_bumps]",
    "#[transcode(\"string\")]",
    "#[serde(rename_all = \"camelCase\")]",
    "#[serde(rename_all = \"nonsense\")]",
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
    "#[transcode(string)] plain: String",
    "#[transcode(\"nope\")] other: String",
    "#[transcode(my::Upper)] upper: String",
    "#[transcode] bare: String",
    "#[transcode(\"fix6\")] score: f64",
    "#[transcode(\"bigint20\")] big: i128",
    "#[transcode(\"string\")] #[serde(rename = \"hashKey\")] clash: String",
    "#[serde(flatten)] rest: std::collections::HashMap<String, String>",
    "#[serde(skip)] skipped: u8",
    "#[serde(rename = \"a|b\")] #[transcode(\"string\")] delim: String",
    "plain: String",
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
    "entities = User",
    "hash_key = \"pk\"",
    "hash_key = \"\"",
    "range_key = \"pk\"",
    "generated_key_delimiter = \"~\"",
    "generated_key_delimiter = \"a\"",
    "generated_value_delimiter = \"~~\"",
    "shard_key_delimiter = \"\"",
    "shard_space = power",
    "shard_space = powr",
    "throttle = 0",
    "throttle = 99999999999999999999999",
    "key_mode = typescript",
    "profile = npm6_14",
    "profile = nope",
    "crate = ::entity_manager",
    "entites(User)",
];

/// Runs `expand` on `input`, failing on a panic or on output that is not valid Rust items.
fn check(
    expand: fn(&DeriveInput) -> proc_macro2::TokenStream,
    input: &DeriveInput,
    source: &str,
) -> Result<(), TestCaseError> {
    let out = catch_unwind(AssertUnwindSafe(|| expand(input)))
        .map_err(|_| TestCaseError::fail(format!("the derive panicked on:\n{source}")))?;
    syn::parse2::<syn::File>(out.clone()).map_err(|e| {
        TestCaseError::fail(format!("invalid output ({e}) for:\n{source}\n\n{out}"))
    })?;
    Ok(())
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
        let (options, attrs, fields): (Vec<&str>, Vec<&str>, Vec<&str>) = if base {
            (
                valid_options.into_iter().chain(options.into_iter().take(mistakes.min(1))).collect(),
                valid_attrs.into_iter().chain(attrs.into_iter().take(mistakes)).collect(),
                fields.into_iter().take(mistakes.saturating_sub(1)).collect(),
            )
        } else {
            (options, attrs, fields)
        };
        let mut field_list: String = fields.iter().map(|f| format!("{f}, ")).collect();
        let mut options = options;
        if base {
            // keep the fragments that do not redeclare a base field
            field_list = fields
                .iter()
                .filter(|f| !["id:", "created:", "name:", "r#type:"].iter().any(|b| f.contains(b)))
                .map(|f| format!("{f}, "))
                .collect::<String>()
                + BASE_FIELDS;
            options.retain(|o| !["table", "unique", "timestamp"].iter().any(|k| o.starts_with(k)));
            options.insert(0, BASE_OPTIONS);
        }
        let tuple_list: String = fields
            .iter()
            .filter_map(|f| f.rsplit_once(": ").map(|(_, ty)| format!("{ty}, ")))
            .collect();
        let body = shape
            .replace("{{", "{")
            .replace("}}", "}")
            .replace("{fields}", &field_list)
            .replace("{fields_tuple}", &tuple_list);
        let source = format!(
            "#[entity({})]\n{}\n{}",
            options.join(", "),
            attrs.join("\n"),
            body
        );
        // every fragment is valid syntax, so every input reaches the derive
        let input = syn::parse_str::<DeriveInput>(&source)
            .map_err(|e| TestCaseError::fail(format!("not Rust ({e}):\n{source}")))?;
        check(derive_entity, &input, &source)?;
    }

    #[test]
    fn the_table_derive_never_panics(
        options in pick(TABLE_OPTIONS, 4),
        shape in proptest::sample::select(&["struct Users;", "struct Users { a: u8 }", "enum Users {}", "struct r#Users;"][..]),
    ) {
        let source = format!("#[table({})]\n{shape}", options.join(", "));
        let input = syn::parse_str::<DeriveInput>(&source)
            .map_err(|e| TestCaseError::fail(format!("not Rust ({e}):\n{source}")))?;
        check(derive_table, &input, &source)?;
    }
}
