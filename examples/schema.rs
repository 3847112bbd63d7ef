//! Writes the schema file of a `#[derive(Table)]`: the versioned JSON the command line reads
//! (`entity-manager … --config users.schema.json`), for review, CI and migrations; with
//! `--check FILE`, checks that a committed file matches the code (exit 1 listing what differs).
//!
//! ```sh
//! cargo run --example schema -- users.schema.json          # write it
//! cargo run --example schema -- --check users.schema.json  # CI: is it up to date?
//! ```
//!
//! In your own crate, the same few lines with your table type (or a test that calls
//! `Schema::differences`, as the README shows).
#![allow(clippy::struct_field_names)] // fields are named after their attributes

use entity_manager::prelude::*;
use entity_manager::{Schema, SchemaDifference};
use serde::{Deserialize, Serialize};

#[derive(Table)]
#[table(entities(User, Email))]
struct Users;

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Users, unique = user_id, timestamp = created, version = version)]
#[shard_bumps(bumps = [bump(timestamp = 1_700_000_000_000, char_bits = 2, chars = 1)])]
#[index(name = "created", range = created)]
#[index(name = "byEmail", hash = [email], range = [created], sharded)] // a multi-attribute index
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    email: String,
    version: u64,
}

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Users, unique = email, timestamp = created)]
struct Email {
    #[transcode("string")]
    email: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let schema = Users::schema()?;
    match args.as_slice() {
        [path] => std::fs::write(path, schema.to_json_string()?)?,
        [flag, path] if flag == "--check" => {
            let committed: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(path)?)?;
            let differences: Vec<SchemaDifference> =
                schema.differences(&Schema::from_json(&committed)?);
            if !differences.is_empty() {
                eprintln!(
                    "{path} does not match the code (code ≠ file); write it again with `cargo run --example schema -- {path}`:"
                );
                for d in &differences {
                    eprintln!("  {d}");
                }
                std::process::exit(1);
            }
        }
        _ => print!("{}", schema.to_json_string()?),
    }
    Ok(())
}
