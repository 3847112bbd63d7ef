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
            "`char_bits` is 6; it must be in 1..=5",
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
            "cannot be negative",
            "`default_limit` must be greater than 0",
            "has no components",
            "range key `phone` is not a transcoded property",
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
            "component `last_name` of generated property `name_key` is not a transcoded property",
            "component `user_key` of generated property `name_key` is itself a generated property",
            "component `user_id` is listed twice",
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
            "`char_bits` is 0; it must be in 1..=5",
            "`chars` is 41; it must be in 0..=40",
            "both start at timestamp 1700000000000",
            "do not strictly increase",
        ],
    );
}

#[test]
fn every_bad_index_is_reported() {
    let input = user(&quote::quote! {
        #[generated(name = user_key, components = [user_id], sharded)]
        #[generated(name = name_key, components = [first_name])]
        #[index(name = "byA", hash = first_name)]
        #[index(name = "byB", hash = name_key, range = created)]
        #[index(name = "byC", range = user_key)]
        #[index(name = "byD", range = last_name)]
        #[index(name = "byE", range = first_name)]
        #[index(name = "byF", range = first_name)]
        #[index(name = "byG", range = name_key, project = [name_key, first_name])]
    });
    entity_errors(
        &input,
        &[
            "hash key `first_name` is neither the table hash key (leave `hash` out) nor a sharded generated property (it is a transcoded property",
            "hash key `name_key` is neither the table hash key (leave `hash` out) nor a sharded generated property (it is an unsharded generated property",
            "range key `user_key` is neither the table range key (leave `range` out), an unsharded generated property nor a transcoded property (it is a sharded generated property",
            "range key `last_name` is not a transcoded property",
            "projection `name_key` of index `byG` is a generated property",
            "index `byF` has the same hash key (the table hash key) and range key `first_name` as index `byE`",
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
            "timestamp property `created` is not a transcoded property; add `#[transcode(\"timestamp\")]` to it",
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
            "the table range key `pk` is the same attribute as the table hash key",
            "`generated_key_delimiter` is empty",
            "`generated_value_delimiter` `a` contains the word character `a`",
            "`throttle` must be greater than 0",
        ],
    );
}

// --- one mistake, one error ---------------------------------------------------------------------

#[test]
fn one_mistake_gives_one_error() {
    let cases: Vec<(TokenStream, &str)> = vec![
        (
            quote::quote!(#[generated(name = k, components = [first_name, first_name])]),
            "listed twice in generated property `k`",
        ),
        (
            quote::quote!(#[generated(name = k, components = [user_id])] #[generated(name = k, components = [created])]),
            "`k` is declared twice as an unsharded generated property",
        ),
        (
            quote::quote!(#[generated(name = first_name, components = [user_id])]),
            "`first_name` is already a transcoded property, so it cannot also be an unsharded generated property",
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
            "do not strictly increase",
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
            quote::quote!(#[index(name = "all")]),
            "the table's own hash and range keys",
        ),
        (
            quote::quote!(#[index(name = "byA", range = created)] #[index(name = "byA", range = first_name)]),
            "index `byA` is declared twice",
        ),
        (
            quote::quote!(#[index(name = "byA", range = created)] #[index(name = "by_a", range = first_name)]),
            "maps to the same enum variant `ByA`",
        ),
        (
            quote::quote!(#[index(name = created, range = created)]),
            "expected a string literal like `name = \"created\"`",
        ),
        (
            quote::quote!(#[generated(name = k)]),
            "missing `components` in `#[generated(…)]`",
        ),
        (
            quote::quote!(#[generated(nmae = k, components = [user_id])]),
            "Unknown field: `nmae`",
        ),
        (
            quote::quote!(#[shard_bumps(bump(timestamp = 1, chars = 1))]),
            "missing `char_bits` in `bump(…)`",
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
    entity_errors(
        &input,
        &["`#[derive(Entity)]` needs a struct with named fields"],
    );
    let input: DeriveInput = parse_quote! {
        #[entity(table = Users, unique = a, timestamp = b)]
        struct User(String, u64);
    };
    entity_errors(
        &input,
        &["`#[derive(Entity)]` needs a struct with named fields"],
    );
}

// --- on error, a stub impl keeps user code compiling --------------------------------------------

#[test]
fn errors_come_with_a_placeholder_impl() {
    let input = user(&quote::quote!(#[generated(name = k, components = [])]));
    let text = entity_errors(&input, &["has no components"]).to_string();
    assert!(text.contains("PLACEHOLDER_ENTITY"), "{text}");
    assert!(text.contains("enum UserIndex"), "{text}");
}

// --- no cascades: one mistake, one error --------------------------------------------------------

#[test]
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
fn a_misspelled_bump_key_is_one_error() {
    let input = user(&quote::quote!(#[shard_bumps(bump(timestamp = 1, charbits = 2, chars = 1))]));
    entity_errors(&input, &["Did you mean `char_bits`?"]);
}

#[test]
fn a_bad_index_hash_key_is_one_error() {
    let input = user(&quote::quote! {
        #[generated(name = name_key, components = [first_name])]
        #[index(name = "byA", hash = first_name)]
        #[index(name = "byB", hash = name_key)]
    });
    entity_errors(
        &input,
        &[
            "hash key `first_name` is neither",
            "hash key `name_key` is neither",
        ],
    );
}

#[test]
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

#[test]
fn a_missing_option_is_reported_unless_a_misspelling_covers_it() {
    // `foo` looks like no known option: `timestamp` is missing as well
    let input: DeriveInput = parse_quote! {
        #[entity(table = Users, unique = user_id, foo = created)]
        struct User {
            #[transcode("string")]
            user_id: String,
            #[transcode("timestamp")]
            created: u64,
        }
    };
    entity_errors(
        &input,
        &[
            "Unknown field: `foo`",
            "missing `timestamp` in `#[entity(…)]`",
        ],
    );
    let input = user(&quote::quote!(#[shard_bumps(bump())]));
    entity_errors(
        &input,
        &[
            "missing `timestamp` in `bump(…)`",
            "missing `char_bits` in `bump(…)`",
            "missing `chars` in `bump(…)`",
        ],
    );
}

#[test]
fn an_unknown_transcode_is_one_error_wherever_the_field_is_used() {
    let input: DeriveInput = parse_quote! {
        #[entity(table = Users, unique = user_id, timestamp = created)]
        #[generated(name = k, components = [phone])]
        #[index(name = "phone", range = phone)]
        struct User {
            #[transcode("string")]
            user_id: String,
            #[transcode("timestamp")]
            created: u64,
            #[transcode()]
            phone: String,
        }
    };
    entity_errors(&input, &["`#[transcode]` needs a transcode"]);
}

#[test]
fn two_fields_stored_under_one_name_are_an_error() {
    let input = user(&quote::quote!(#[serde(rename_all = "camelCase")]));
    entity_errors(&input, &[]);
    let input: DeriveInput = parse_quote! {
        #[entity(table = Users, unique = user_id, timestamp = created)]
        #[serde(rename_all = "camelCase")]
        struct User {
            #[transcode("string")]
            user_id: String,
            #[transcode("timestamp")]
            created: u64,
            #[serde(rename = "userId")]
            legacy_id: String,
            // never written: no stored name
            #[serde(skip)]
            created_at: u64,
            #[serde(rename = "created", skip_serializing)]
            created_copy: u64,
        }
    };
    entity_errors(
        &input,
        &["`userId` is already a transcoded property, so it cannot also be a stored attribute"],
    );
}

#[test]
fn every_stored_name_is_checked_against_the_table_keys() {
    let input: DeriveInput = parse_quote! {
        #[entity(table = Users, unique = user_id, timestamp = created)]
        #[serde(rename_all = "camelCase")]
        struct User {
            #[transcode("string")]
            user_id: String,
            #[transcode("timestamp")]
            created: u64,
            range_key: String,
        }
    };
    let text = entity_errors(&input, &[]).to_string();
    // the name with its kind (a stored attribute), and its check at its token: the message
    // is the core's
    assert!(text.contains("(\"rangeKey\" , 2u8)"), "{text}");
    assert!(
        text.contains("=> _em :: __private :: fail_name (__problem , \"rangeKey\")"),
        "{text}"
    );
    assert!(
        text.contains("is_member_of :: < User > (\"user\" , \"userId\" , \"created\")"),
        "{text}"
    );
    assert!(text.contains("type Table = Users"), "{text}");
}

#[test]
fn the_placeholder_impl_keeps_the_table_of_unreadable_options() {
    let input: DeriveInput = parse_quote! {
        #[entity(table = Users, unique = user_id, timestmap = created)]
        struct User {
            #[transcode("string")]
            user_id: String,
        }
    };
    let text = entity_errors(&input, &["Did you mean `timestamp`?"]).to_string();
    assert!(text.contains("type Table = Users"), "{text}");
    // without a table, the entity stands in the placeholder table
    let input: DeriveInput = parse_quote! {
        #[entity(unique = user_id, timestamp = created)]
        struct User {
            #[transcode("string")]
            user_id: String,
            #[transcode("timestamp")]
            created: u64,
        }
    };
    let text = entity_errors(&input, &["missing `table` in `#[entity(…)]`"]).to_string();
    assert!(text.contains("PlaceholderTable"), "{text}");
}

#[test]
fn a_generic_entity_gets_placeholders_over_its_parameters() {
    let input: DeriveInput = parse_quote! {
        #[entity(table = Users, unique = user_id, timestamp = created)]
        struct User<'a, T: Clone, const N: usize> where T: Default {
            #[transcode("string")]
            user_id: T,
            #[transcode("timestamp")]
            created: u64,
            tags: [&'a str; N],
        }
    };
    let text = entity_errors(
        &input,
        &["`User<'a, T, N>` is generic, and an entity cannot be: each entity has one static model"],
    )
    .to_string();
    for fragment in [
        "impl < T : Clone + 'static , const N : usize > _em :: __private :: Entity for User < 'static , T , N > where T : Default",
        "struct UserFields < T : Clone + 'static , const N : usize > where T : Default",
        "Field < User < 'static , T , N > , [& 'static str ; N]",
        "impl < T : Clone + 'static , const N : usize > User < 'static , T , N > where T : Default",
        "const FIELDS : UserFields < T , N >",
    ] {
        assert!(text.contains(fragment), "{fragment}: {text}");
    }
    // a `const` item cannot name `User<T>`: the membership is the table's to check
    assert!(!text.contains("is_member"), "{text}");
}

#[test]
fn a_borrowed_entity_gets_placeholders_for_static() {
    let input: DeriveInput = parse_quote! {
        #[entity(table = Users, unique = user_id, timestamp = created)]
        struct User<'a, 'b> {
            #[transcode("string")]
            user_id: &'a str,
            #[transcode("timestamp")]
            created: u64,
            tags: Vec<&'b str>,
            note: &'static str,
        }
    };
    let text = entity_errors(
        &input,
        &["`User<'a, 'b>` borrows, and an entity cannot: records are read back from the store as owned values"],
    )
    .to_string();
    for fragment in [
        "Entity for User < 'static , 'static >",
        "impl User < 'static , 'static >",
        "Field < User < 'static , 'static > , & 'static str",
        "Field < User < 'static , 'static > , Vec < & 'static str >",
        "is_member",
    ] {
        assert!(text.contains(fragment), "{fragment}: {text}");
    }
    // the items after the error (whose message quotes the lifetimes)
    let items = text
        .split_once("} ")
        .map_or(text.as_str(), |(_, items)| items);
    assert!(!items.contains("& 'a ") && !items.contains("'b"), "{items}");
}

#[test]
fn int128_fields_are_rejected_unless_serde_does_not_write_them() {
    let input: DeriveInput = parse_quote! {
        #[entity(table = Users, unique = user_id, timestamp = created)]
        struct User {
            #[transcode("string")]
            user_id: String,
            #[transcode("timestamp")]
            created: u64,
            #[transcode("bigint20")]
            balance: i128,
            limits: Option<Vec<u128>>,
            #[serde(skip)]
            cache: i128,
            #[serde(with = "my::as_string")]
            total: u128,
        }
    };
    entity_errors(
        &input,
        &[
            "`serde_dynamo` cannot store 128-bit integers",
            "`serde_dynamo` cannot store 128-bit integers",
        ],
    );
}

#[test]
fn a_failed_table_still_gets_a_placeholder_impl_with_its_entities() {
    let input: DeriveInput = parse_quote! {
        #[table(hash_kye = "pk", entities(User, Email))]
        struct Users;
    };
    let tokens = derive_table(&input);
    assert_errors(&tokens, &["Did you mean `hash_key`?"]);
    let text = tokens.to_string();
    assert!(text.contains("TableModel :: DEFAULT"), "{text}");
    assert!(
        text.contains("& < User as _em :: __private :: Entity > :: MODEL"),
        "{text}"
    );
    assert!(
        text.contains("& < Email as _em :: __private :: Entity > :: MODEL"),
        "{text}"
    );
    let input: DeriveInput = parse_quote! {
        #[table(entities(User))]
        struct Users<T>(T);
    };
    let tokens = derive_table(&input);
    assert_errors(&tokens, &["does not support generic types"]);
    assert!(!tokens.to_string().contains("impl"), "{tokens}");
}

#[test]
fn a_valid_table_checks_its_entities_pairwise() {
    let input: DeriveInput = parse_quote! {
        #[table(entities(User, Email, Phone))]
        struct Users;
    };
    let tokens = derive_table(&input);
    assert_errors(&tokens, &[]);
    let text = tokens.to_string();
    for fragment in [
        "const MEMBERS : & 'static [& 'static _em :: __private :: EntityModel] = & [& < User as _em :: __private :: Entity > :: MODEL , & < Email as _em :: __private :: Entity > :: MODEL , & < Phone as _em :: __private :: Entity > :: MODEL]",
        "const __NAMES : & [& str] = & [\"User\" , \"Email\" , \"Phone\"]",
        "\"`Phone` has the same entity token as `\"",
        "\"`Email` has the same entity token as `\"",
        "first_same_token (__this , __earlier)",
        "index_count_message",
    ] {
        assert!(text.contains(fragment), "{fragment}: {text}");
    }
}

#[test]
fn an_entity_listed_twice_is_one_error() {
    let input: DeriveInput = parse_quote! {
        #[table(entities(User, Email, User))]
        struct Users;
    };
    let tokens = derive_table(&input);
    assert_errors(&tokens, &["duplicate entity `User` in `entities(…)`"]);
    let text = tokens.to_string();
    assert_eq!(
        text.matches("< User as _em :: __private :: Entity > :: MODEL")
            .count(),
        1,
        "{text}"
    );
}

#[test]
fn an_attribute_without_options_is_one_error() {
    let input: DeriveInput = parse_quote! {
        #[entity]
        struct User {
            #[transcode("string")]
            user_id: String,
        }
    };
    entity_errors(&input, &["expected a list of options: `#[entity(…)]`"]);
}

/// A unique that names a generated property is told that it must be a transcoded field, not
/// that there is no such field (issue 31).
#[test]
fn unique_naming_a_generated_property() {
    let input: DeriveInput = parse_quote! {
        #[entity(table = Users, unique = name_key, timestamp = created)]
        #[generated(name = name_key, components = [name])]
        struct User {
            #[transcode("string")]
            name: String,
            #[transcode("timestamp")]
            created: u64,
        }
    };
    entity_errors(
        &input,
        &[
            "`unique` names the generated property `name_key`: the unique property must be a transcoded field",
        ],
    );
}

/// A shard-bump timestamp in seconds is refused, with the value in milliseconds (issue 31);
/// the synthetic schedules of tests (`timestamp = 1_000`) and `0` stay accepted.
#[test]
fn bump_timestamp_in_seconds() {
    let bump = |t: TokenStream| -> DeriveInput {
        user(
            &quote::quote!(#[shard_bumps(bumps = [bump(timestamp = #t, char_bits = 2, chars = 1)])]),
        )
    };
    entity_errors(
        &bump(quote::quote!(1_726_880_933)),
        &[
            "shard bump timestamp 1726880933 is 19 days after 1970-01-01 in milliseconds: it looks like seconds; bump timestamps are milliseconds since the Unix epoch, so write `1726880933000`",
        ],
    );
    for fine in [
        quote::quote!(0),
        quote::quote!(1_000),
        quote::quote!(1_726_880_933_000),
    ] {
        entity_errors(&bump(fine), &[]);
    }
}
