//! Expansion snapshots (issue 31): what each derive emits for representative inputs, pretty
//! printed and pinned with insta under `src/snapshots/`, so that any change to emitted code shows
//! as a diff in review (the model of `diesel_derives`). To accept a deliberate change, run the tests with
//! `INSTA_UPDATE=always` (or `cargo insta review`) and review the `.snap` diff.
//!
//! The inputs are the README's `User` (classic indexes, a generated property, shard bumps,
//! optimistic locking), an entity with multi-attribute indexes, a table, an item collection, and
//! each derive under `crate = …`.

use proc_macro2::TokenStream;
use syn::{DeriveInput, parse_quote};

use crate::expand::{derive_entity, derive_table};

/// The expansion as formatted Rust; the raw tokens when they do not parse as a file (a failing
/// derive), so that the snapshot still shows them.
fn pretty(tokens: &TokenStream) -> String {
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(_) => tokens.to_string(),
    }
}

fn entity(input: &DeriveInput) -> String {
    pretty(&derive_entity(input))
}

fn table(input: &DeriveInput) -> String {
    pretty(&derive_table(input))
}

fn collection(input: &DeriveInput) -> String {
    pretty(&crate::collection::derive(input))
}

fn readme_user() -> DeriveInput {
    parse_quote! {
        #[serde(rename_all = "camelCase")]
        #[entity(table = Users, unique = user_id, timestamp = created, version = version)]
        #[shard_bumps(bumps = [bump(timestamp = 1_700_000_000_000, char_bits = 2, chars = 1)])]
        #[generated(name = name_range_key, components = [last_name, first_name])]
        #[index(name = "created", range = created)]
        #[index(name = "lastName", range = name_range_key)]
        #[index(name = "phone", range = phone)]
        pub struct User {
            #[transcode("string")]
            user_id: String,
            #[transcode("timestamp")]
            created: u64,
            #[transcode("string")]
            first_name: String,
            #[transcode("string")]
            last_name: String,
            #[transcode("string")]
            #[serde(default, skip_serializing_if = "Option::is_none")]
            phone: Option<String>,
            logins: u64,
            version: u64,
        }
    }
}

#[test]
fn entity_readme_user() {
    insta::assert_snapshot!(entity(&readme_user()));
}

#[test]
fn entity_multi_attribute_indexes() {
    insta::assert_snapshot!(entity(&parse_quote! {
        #[serde(rename_all = "camelCase")]
        #[entity(table = League, unique = player_id, timestamp = created)]
        #[shard_bumps(bumps = [bump(timestamp = 0, char_bits = 2, chars = 1)])]
        #[index(name = "byTeam", hash = [team_id, region], range = [score, nickname])]
        #[index(name = "byOrg", hash = [org_id], range = [score, created], sharded)]
        #[index(name = "byCreated", range = created)]
        pub(crate) struct Player {
            #[transcode("string")]
            pub(crate) player_id: String,
            #[transcode("timestamp")]
            pub(crate) created: u64,
            pub(crate) team_id: String,
            pub(crate) region: String,
            pub(crate) org_id: String,
            pub(crate) score: i64,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub(crate) nickname: Option<String>,
        }
    }));
}

#[test]
fn entity_crate_path() {
    insta::assert_snapshot!(entity(&parse_quote! {
        #[entity(table = Users, unique = email, timestamp = created, crate = ::em)]
        struct Email {
            #[transcode("string")]
            email: String,
            #[transcode("timestamp")]
            created: u64,
        }
    }));
}

#[test]
fn table_readme_users() {
    insta::assert_snapshot!(table(&parse_quote! {
        #[table(entities(User, Email))]
        struct Users;
    }));
}

#[test]
fn table_settings_and_crate_path() {
    insta::assert_snapshot!(table(&parse_quote! {
        #[table(hash_key = "pk", range_key = "sk", shard_space = power, entities(User), crate = ::em)]
        pub struct Users;
    }));
}

#[test]
fn collection_roster() {
    insta::assert_snapshot!(collection(&parse_quote! {
        pub(crate) enum Roster {
            Player(Player),
            Coach(Coach),
        }
    }));
}

#[test]
fn collection_crate_path() {
    let expansion = collection(&parse_quote! {
        #[collection(crate = ::em)]
        pub(crate) enum Roster {
            Player(Player),
            Coach(Coach),
        }
    });
    // every runtime path goes through `crate = …`: none is hard-coded
    assert!(!expansion.contains("entity_manager"), "{expansion}");
    insta::assert_snapshot!(expansion);
}

#[test]
fn entity_and_table_crate_paths_are_honoured() {
    for expansion in [
        entity(&parse_quote! {
            #[entity(table = Users, unique = email, timestamp = created, crate = ::em)]
            #[generated(name = email_key, components = [email])]
            struct Email {
                #[transcode("string")]
                email: String,
                #[transcode("timestamp")]
                created: u64,
            }
        }),
        table(&parse_quote! {
            #[table(entities(User), crate = ::em)]
            pub struct Users;
        }),
    ] {
        assert!(!expansion.contains("entity_manager"), "{expansion}");
    }
}

/// A derive that fails keeps its items: the errors, and beside them the placeholder impl, the
/// index enum and the typed fields, so that uses of `User::FIELDS` add no error of their own.
#[test]
fn entity_with_an_error_keeps_its_items() {
    insta::assert_snapshot!(entity(&parse_quote! {
        #[entity(table = Users, unique = id, timestamp = created)]
        #[shard_bumps(bumps = [bump(timestamp = 1_726_880_933, char_bits = 2, chars = 1)])]
        #[index(name = "created", range = created)]
        struct User {
            #[transcode("string")]
            id: String,
            #[transcode("timestamp")]
            created: u64,
            name: String,
        }
    }));
}
