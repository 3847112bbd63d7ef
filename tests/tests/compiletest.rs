//! The compile-time validation of `#[derive(Entity)]` and `#[derive(Table)]`: every program
//! under `ui/<category>/` must fail to compile with exactly the errors of its `.stderr`.
//!
//! The messages depend on the compiler version, so the cases run on the one toolchain CI builds
//! with. Regenerate after a deliberate change with `TRYBUILD=overwrite cargo test -p
//! entity-manager-tests --test compiletest`, then read every changed `.stderr`.
//!
//! Every error points at the user's token, and no `.stderr` of the derive's cases quotes the
//! runtime's sources (no `$WORKSPACE/…` or `$RUST/…` snippet): the derive spans its compile-time
//! assertions itself and its type checks go through `#[diagnostic::on_unimplemented]` traits, so
//! these files change when a message changes, not when `entity-manager-core` is edited. The
//! misuses of the typed query (`ui/query/`: each was a run-time `InvalidQuery` before the index
//! token carried its kind) quote the bound of the method misused, after the message.

#[rustversion::attr(
    not(stable(1.95)),
    ignore = "the expected compiler output is that of Rust 1.95"
)]
#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/**/*.rs");
}
