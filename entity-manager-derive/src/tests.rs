//! Unit tests of the parse → model → check layers: each input is a `syn::DeriveInput`, and each
//! test counts the `compile_error!` invocations of the expansion. Independent mistakes must all
//! be reported (STYLE.md §3.6), and one mistake must give one error, not a cascade. The messages
//! and spans themselves are pinned by the trybuild cases under `tests/ui/`.

use proc_macro2::{TokenStream, TokenTree};
use syn::{DeriveInput, parse_quote};

use crate::expand::{derive_entity, derive_table};

/// The messages of every `compile_error!{…}` / `compile_error!(…)` in `tokens`, in order.
fn errors(tokens: TokenStream) -> Vec<String> {
    let mut out = Vec::new();
    collect_errors(tokens, &mut out);
    out
}

fn collect_errors(tokens: TokenStream, out: &mut Vec<String>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, token) in tokens.iter().enumerate() {
        match token {
            TokenTree::Ident(ident) if ident == "compile_error" => {
                let message = match (tokens.get(i + 1), tokens.get(i + 2)) {
                    (Some(TokenTree::Punct(bang)), Some(TokenTree::Group(args)))
                        if bang.as_char() == '!' =>
                    {
                        // the message is one string literal: keep its value, unescaped
                        syn::parse2::<syn::LitStr>(args.stream())
                            .map_or_else(|_| args.stream().to_string(), |lit| lit.value())
                    }
                    _ => continue,
                };
                out.push(message);
            }
            TokenTree::Group(group) => collect_errors(group.stream(), out),
            _ => {}
        }
    }
}

/// Expands `#[derive(Entity)]` on `input` and asserts it reports exactly `expected` errors, each
/// containing the matching fragment.
#[track_caller]
fn entity_errors(input: &DeriveInput, expected: &[&str]) -> TokenStream {
    let tokens = derive_entity(input);
    assert_errors(&tokens, expected);
    tokens
}

#[track_caller]
fn table_errors(input: &DeriveInput, expected: &[&str]) {
    assert_errors(&derive_table(input), expected);
}

#[track_caller]
fn assert_errors(tokens: &TokenStream, expected: &[&str]) {
    let found = errors(tokens.clone());
    assert_eq!(
        found.len(),
        expected.len(),
        "expected {} error(s) {expected:?}, got {}: {found:#?}",
        expected.len(),
        found.len()
    );
    for (message, fragment) in found.iter().zip(expected) {
        assert!(
            message.contains(fragment),
            "expected an error containing {fragment:?}, got {message}"
        );
    }
}

/// A valid entity to start from: `User` with a unique and a timestamp property.
fn user(extra: &TokenStream) -> DeriveInput {
    parse_quote! {
        #[entity(table = Users, unique = user_id, timestamp = created)]
        #extra
        struct User {
            #[transcode("string")]
            user_id: String,
            #[transcode("timestamp")]
            created: u64,
            #[transcode("string")]
            first_name: String,
            last_name: String,
        }
    }
}

// --- valid inputs give no error -----------------------------------------------------------------

#[test]
fn a_valid_entity_has_no_error() {
    let input = user(&quote::quote! {
        #[shard_bumps(bump(timestamp = 1_700_000_000_000, char_bits = 2, chars = 1))]
        #[generated(name = user_key, components = [user_id], sharded)]
        #[generated(name = first_name_key, components = [first_name, created])]
        #[index(name = "firstName", range = first_name_key)]
        #[index(name = "userFirstName", hash = user_key, range = first_name_key, project = [last_name])]
    });
    let tokens = entity_errors(&input, &[]);
    let text = tokens.to_string();
    assert!(
        text.contains("impl _em :: __private :: Entity for User"),
        "{text}"
    );
    assert!(!text.contains("PLACEHOLDER_ENTITY"), "{text}");
}

#[test]
fn a_valid_table_has_no_error() {
    let input: DeriveInput = parse_quote! {
        #[table(hash_key = "pk", range_key = "sk", generated_key_delimiter = "~", shard_space = power, entities(User, Email))]
        struct Users;
    };
    table_errors(&input, &[]);
}

// --- all independent mistakes are reported together --------------------------------------------

#[test]
fn three_independent_mistakes_give_three_errors() {
    let input: DeriveInput = parse_quote! {
        #[entity(table = Users, unique = user_id, timestamp = created)]
        #[generated(name = name_key, components = [frist_name])]
        #[shard_bumps(bump(timestamp = 1_700_000_000_000, char_bits = 6, chars = 1))]
        struct User {
            #[transcode("string")]
            user_id: String,
            #[transcode("timestamp")]
            created: u64,
            #[transcode("strin")]
            first_name: String,
        }
    };
    entity_errors(
        &input,
        &[
            "unknown transcode `strin`",
            "no field `frist_name`",
            "`char_bits` must be in 1..=5",
        ],
    );
}

#[test]
fn one_error_per_attribute_kind() {
    // entity options, a field, a generated property, an index, a shard bump: five attributes,
    // five mistakes, none hiding another
    let input: DeriveInput = parse_quote! {
        #[entity(table = Users, unique = user_id, timestamp = created, default_limit = 0)]
        #[generated(name = name_key, components = [])]
        #[index(name = "byPhone", range = phone)]
        #[shard_bumps(bump(timestamp = -1, char_bits = 2, chars = 1))]
        struct User {
            #[transcode("string")]
            user_id: String,
            #[transcode("timestamp")]
            created: u64,
            #[transcode("timestamp")]
            #[serde(skip)]
            updated: u64,
            phone: String,
        }
    };
    entity_errors(
        &input,
        &[
            "serde must not skip it",
            "must be at least 1",
            "at least one component",
            "index range key `phone` must be a transcoded field",
            "cannot be negative",
        ],
    );
}

#[test]
fn every_bad_component_of_one_generated_property_is_reported() {
    let input = user(&quote::quote! {
        #[generated(name = user_key, components = [user_id], sharded)]
        #[generated(name = name_key, components = [frist_name, last_name, user_key, user_id, user_id])]
    });
    entity_errors(
        &input,
        &[
            "no field `frist_name`",
            "component `last_name` must be a transcoded field",
            "component `user_key` is a generated property",
            "duplicate component `user_id`",
        ],
    );
}

#[test]
fn every_bad_shard_bump_is_reported() {
    let input = user(&quote::quote! {
        #[shard_bumps(
            bump(timestamp = -5, char_bits = 0, chars = 41),
            bump(timestamp = 1_700_000_000_000, char_bits = 2, chars = 2),
            bump(timestamp = 1_700_000_000_000, char_bits = 2, chars = 3),
            bump(timestamp = 1_800_000_000_000, char_bits = 3, chars = 1),
        )]
    });
    entity_errors(
        &input,
        &[
            "cannot be negative",
            "`char_bits` must be in 1..=5",
            "`chars` must be in 0..=40",
            "duplicate shard bump timestamp 1700000000000",
            "must strictly increase",
        ],
    );
}

#[test]
fn every_bad_index_is_reported() {
    let input = user(&quote::quote! {
        #[generated(name = user_key, components = [user_id], sharded)]
        #[generated(name = name_key, components = [first_name])]
        #[index(name = "a", hash = first_name)]
        #[index(name = "b", hash = name_key, range = created)]
        #[index(name = "c", range = user_key)]
        #[index(name = "d", range = last_name)]
        #[index(name = "e", range = first_name)]
        #[index(name = "f", range = first_name)]
        #[index(name = "g", range = name_key, project = [name_key, first_name])]
    });
    entity_errors(
        &input,
        &[
            "index hash key `first_name` is a field",
            "index hash key `name_key` is an unsharded generated property",
            "index range key `user_key` is a sharded generated property",
            "index range key `last_name` must be a transcoded field",
            "index `f` has the same hash and range keys as index `e`",
            "projection `name_key` is a generated property",
        ],
    );
}

#[test]
fn unique_and_timestamp_mistakes_are_both_reported() {
    let input: DeriveInput = parse_quote! {
        #[entity(table = Users, unique = user_ud, timestamp = created)]
        struct User {
            #[transcode("string")]
            user_id: String,
            created: u64,
        }
    };
    entity_errors(
        &input,
        &[
            "no field `user_ud`",
            "the timestamp property `created` must be a transcoded field",
        ],
    );
}

#[test]
fn every_table_mistake_is_reported() {
    let input: DeriveInput = parse_quote! {
        #[table(
            hash_key = "pk",
            range_key = "pk",
            generated_key_delimiter = "",
            generated_value_delimiter = "a",
            shard_key_delimiter = "!!",
            shard_space = powr,
            throttle = 0,
            entities(User),
        )]
        struct Users;
    };
    table_errors(
        &input,
        &[
            "unknown shard space `powr`",
            "`throttle` must be at least 1",
            "the hash key and the range key are both `pk`",
            "`generated_key_delimiter` must not be empty",
            "`generated_value_delimiter` \"a\" contains a word character",
        ],
    );
}

// --- one mistake, one error ---------------------------------------------------------------------

#[test]
fn one_mistake_gives_one_error() {
    let cases: Vec<(TokenStream, &str)> = vec![
        (
            quote::quote!(#[generated(name = k, components = [first_name, first_name])]),
            "duplicate component",
        ),
        (
            quote::quote!(#[generated(name = k, components = [user_id])] #[generated(name = k, components = [created])]),
            "duplicate generated property `k`",
        ),
        (
            quote::quote!(#[generated(name = first_name, components = [user_id])]),
            "collides with field `first_name`",
        ),
        (
            quote::quote!(#[generated(name = k, components = [user_id], shraded)]),
            "`shraded`",
        ),
        (
            quote::quote!(#[index(name = "created", rnage = created)]),
            "`rnage`",
        ),
        (
            quote::quote!(#[index(name = "created", range = created, project = [last_name], keys_only)]),
            "exclude each other",
        ),
        (
            quote::quote!(#[index(name = "9lives", range = created)]),
            "must start with a letter",
        ),
        (
            quote::quote!(#[shard_bumps(bump(timestamp = 1, char_bits = 2, chars = 0))]),
            "must strictly increase",
        ),
        (
            quote::quote!(#[shard_bumps(bump(timestamp = 1, char_bits = 2, chars = 1))] #[shard_bumps(bump(timestamp = 2, char_bits = 2, chars = 2))]),
            "duplicate `#[shard_bumps(…)]`",
        ),
        (
            quote::quote!(#[entity(token = "user")]),
            "duplicate `#[entity(…)]`",
        ),
        (quote::quote!(#[transcode("string")]), "goes on a field"),
        (
            quote::quote!(#[serde(rename_all = "camelcase")]),
            "did you mean `camelCase`?",
        ),
    ];
    for (extra, fragment) in cases {
        let input = user(&extra);
        let found = errors(derive_entity(&input));
        assert!(
            found.len() == 1 && found[0].contains(fragment),
            "`{extra}`: expected one error containing {fragment:?}, got {found:#?}"
        );
    }
}

#[test]
fn a_field_mistake_gives_one_error() {
    let input: DeriveInput = parse_quote! {
        #[entity(table = Users, unique = user_id, timestamp = created)]
        struct User {
            #[transcode("string")]
            user_id: String,
            #[transcode("timestamp")]
            created: u64,
            #[transcode("string")]
            #[transcode("int")]
            phone: String,
            #[index(name = "x")]
            note: String,
        }
    };
    entity_errors(
        &input,
        &[
            "duplicate `#[transcode(…)]`",
            "`#[index(…)]` goes on the struct",
        ],
    );
}

#[test]
fn a_missing_entity_attribute_is_one_error() {
    let input: DeriveInput = parse_quote! {
        struct User {
            #[transcode("string")]
            user_id: String,
        }
    };
    entity_errors(&input, &["missing `#[entity("]);
}

#[test]
fn an_unsupported_shape_is_one_error() {
    let input: DeriveInput = parse_quote! {
        #[entity(table = Users, unique = a, timestamp = b)]
        enum User { A, B }
    };
    entity_errors(&input, &["Unsupported shape `enum`"]);
    let input: DeriveInput = parse_quote! {
        #[entity(table = Users, unique = a, timestamp = b)]
        struct User(String, u64);
    };
    entity_errors(&input, &["Unsupported shape"]);
}

// --- on error, a stub impl keeps user code compiling --------------------------------------------

#[test]
fn errors_come_with_a_placeholder_impl() {
    let input = user(&quote::quote!(#[generated(name = k, components = [])]));
    let text = entity_errors(&input, &["at least one component"]).to_string();
    assert!(text.contains("PLACEHOLDER_ENTITY"), "{text}");
    assert!(text.contains("enum UserIndex"), "{text}");
}

// --- known cascades: the ideal counts, ignored until the derive is fixed ------------------------

#[test]
#[ignore = "derive bug: a misspelled `#[entity]` key also reports `Missing field` (at the call site)"]
fn a_misspelled_entity_key_is_one_error() {
    let input: DeriveInput = parse_quote! {
        #[entity(table = Users, unique = user_id, timestmap = created)]
        struct User {
            #[transcode("string")]
            user_id: String,
            #[transcode("timestamp")]
            created: u64,
        }
    };
    entity_errors(&input, &["Did you mean `timestamp`?"]);
}

#[test]
#[ignore = "derive bug: a misspelled bump key also reports `Missing field … at bump[0]` (at the call site)"]
fn a_misspelled_bump_key_is_one_error() {
    let input = user(&quote::quote!(#[shard_bumps(bump(timestamp = 1, charbits = 2, chars = 1))]));
    entity_errors(&input, &["Did you mean `char_bits`?"]);
}

#[test]
#[ignore = "derive bug: a rejected index hash key falls back to the table hash key, which then \
            duplicates another index's (hash, range) pair"]
fn a_bad_index_hash_key_is_one_error() {
    let input = user(&quote::quote! {
        #[generated(name = name_key, components = [first_name])]
        #[index(name = "a", hash = first_name)]
        #[index(name = "b", hash = name_key)]
    });
    entity_errors(
        &input,
        &[
            "`first_name` is a field",
            "`name_key` is an unsharded generated property",
        ],
    );
}

#[test]
#[ignore = "derive bug: an unknown transcode also reports that the unique property is not transcoded"]
fn an_unknown_transcode_on_the_unique_property_is_one_error() {
    let input: DeriveInput = parse_quote! {
        #[entity(table = Users, unique = user_id, timestamp = created)]
        struct User {
            #[transcode("strng")]
            user_id: String,
            #[transcode("timestamp")]
            created: u64,
        }
    };
    entity_errors(&input, &["unknown transcode `strng`"]);
}
