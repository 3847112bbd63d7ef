//! The tests of the guarded writes for `.ci/mutants.sh writes` in one test binary (issue 46,
//! point 3): each mutant of `ops/`, `migrate.rs` or `guarded.rs` is then one build and one link
//! of this binary, not of seven. It holds the same files as their own targets (`entity_ops.rs`,
//! `migrate.rs`, ...), unchanged; `cargo test` does not build it (`test = false` in Cargo.toml),
//! the script names it. `entity_fields` (typed updates, conditions, transactions) joined it
//! after the fourth sample: its typed updates that rewrite a generated key were the only tests
//! of that part of `ops/update.rs`.
//!
//! ```text
//! cargo test -p entity-manager-tests --test mutants_writes
//! ```

#[path = "entity_fields.rs"]
mod entity_fields;
#[path = "entity_ops.rs"]
mod entity_ops;
#[path = "entity_update.rs"]
mod entity_update;
#[path = "entity_version.rs"]
mod entity_version;
#[path = "entity_wide.rs"]
mod entity_wide;
#[path = "faults.rs"]
mod faults;
#[path = "guarded_writes.rs"]
mod guarded_writes;
#[path = "live_migration.rs"]
mod live_migration;
#[path = "migrate.rs"]
mod migrate;
#[path = "workers.rs"]
mod workers;
