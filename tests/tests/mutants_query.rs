//! The query tests of `.ci/mutants.sh query` in one test binary (issue 46, point 3): each
//! mutant of `entity-manager-core/src/query/` is then one build and one link of this binary,
//! not of ten. It holds the same files as their own targets (`query_lanes.rs`, `query.rs`, ...),
//! unchanged; `cargo test` does not build it (`test = false` in Cargo.toml), the script names it.
//!
//! ```text
//! cargo test -p entity-manager-tests --test mutants_query
//! ```

#[path = "multi_attribute.rs"]
mod multi_attribute;
#[path = "multi_typed.rs"]
mod multi_typed;
#[path = "oracle.rs"]
mod oracle;
#[path = "query.rs"]
mod query;
#[path = "query_ahead.rs"]
mod query_ahead;
#[path = "query_costs.rs"]
mod query_costs;
#[path = "query_lanes.rs"]
mod query_lanes;
#[path = "query_mistakes.rs"]
mod query_mistakes;
#[path = "query_rounds.rs"]
mod query_rounds;
#[path = "query_ties.rs"]
mod query_ties;
#[path = "query_token.rs"]
mod query_token;
#[path = "query_typed.rs"]
mod query_typed;
#[path = "query_v2.rs"]
mod query_v2;
