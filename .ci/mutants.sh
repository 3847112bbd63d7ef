#!/usr/bin/env bash
# Mutation testing (cargo-mutants) of the two areas issue 46 measures: the query engine
# (`entity-manager-core/src/query/`) and the guarded writes (`ops/`, `migrate.rs`, `guarded.rs`).
# Each area's mutants are tested by one test binary that holds the test files exercising it
# (tests/tests/mutants_query.rs, mutants_writes.rs) and by the core's unit tests, so that a
# mutant costs one incremental build of the core and one link.
#
#   bash .ci/mutants.sh query                      # every mutant of the area (hours on 2 cores)
#   bash .ci/mutants.sh query --in-diff my.diff    # only what a change touches (git diff > my.diff)
#   bash .ci/mutants.sh writes --shard 3/20        # a uniform sample: every 20th mutant (round robin)
#   bash .ci/mutants.sh query --list               # the mutants, without running them
#
# Before changing these files, run it on your change: `git diff main > /tmp/d.diff && bash
# .ci/mutants.sh query --in-diff /tmp/d.diff`. Results go to mutants.out/ (ignored by git):
# caught.txt, missed.txt, timeout.txt, unviable.txt, outcomes.json (each phase's seconds).
#
# Cost of one mutant on the shared 2-core machine (load average 11-15, other builds running;
# BENCHMARKS.md, "Mutation testing"):
# - before (all test targets of the test package built per mutant, each linked on its own, with
#   line tables; first sample): 241-259 s build + 408-415 s tests, about 11 minutes a viable
#   mutant; the second sample (in place, fewer targets run) about 4 minutes
# - now, `writes` (28 viable mutants of 33 run, 2026-11-28): 64 s build + 57 s tests on average,
#   about 2 minutes a mutant. `query`: a build of the same size; its tests (the proptests of
#   query.rs, query_v2.rs, query_token.rs and multi_attribute.rs run 400-2,000 cases each) took
#   327 s of CPU unmutated (1,596 s at `nice 19` on that load), and a binary runs all its tests,
#   caught or not. The proptests' own case counts (not yet bounded per mutant) are the next cut.
# - `query` since (proptests capped per mutant, nextest with 8 tests at once stopping at the first
#   failure; load average 2-5, 2026-11-29): a build of 12-15 s (median; 53 s at most), then 2-4 s
#   of tests for a caught mutant (median; 110 s at most) and 105-116 s for one that survives (the
#   whole binary runs): an `--in-diff` run of a change with 20 mutants takes 10-20 minutes
# - do not edit this script while it runs (bash reads it as it goes)
#
# It is not part of .ci/run (too long for CI's budget). cargo-mutants is installed from the
# crates registry when missing.
set -euo pipefail

cd "$(dirname "$0")/.."

usage() {
    echo "usage: bash .ci/mutants.sh query|writes [cargo-mutants options: --in-diff FILE, --shard K/N, --list, ...]" >&2
    exit 2
}
[[ $# -ge 1 ]] || usage
area=$1
shift

case $area in
query)
    files=(-f 'entity-manager-core/src/query/**')
    # one binary (tests/tests/mutants_query.rs) of the oracles and contract tests of every query
    # kind, tokens and streams, the checks made before the first read and the generative oracle:
    # multi_attribute, multi_typed, oracle, query, query_ahead, query_costs, query_lanes,
    # query_mistakes, query_rounds, query_ties, query_token, query_typed, query_v2
    tests=(--test mutants_query)
    # about 60 s of wall unmutated on a quiet machine (8 tests at once), 105-116 s for a survivor
    # at load average 2-5; more than 600 s at load average 10 (then raise MUTANTS_TIMEOUT)
    timeout=300
    # the generative oracle's cases per mutant (CI runs 5,000; a mutant needs a quick verdict)
    export ORACLE_CASES=${ORACLE_CASES:-200}
    export QUERY_MISTAKES_CASES=${QUERY_MISTAKES_CASES:-200}
    # the other property tests of the binary (400 to 2,000 cases each, fixed in their files)
    # capped per mutant: `entity_manager_tests::cases`
    export CASES_CAP=${CASES_CAP:-100}
    # the two tests that page 20,000 records to the end at limits down to 1 (query.rs), on
    # 10,000: about half their time (`entity_manager_tests::items`)
    export ITEMS_CAP=${ITEMS_CAP:-10000}
    ;;
writes)
    files=(-f 'entity-manager-core/src/ops/**' -f 'entity-manager-core/src/migrate.rs'
        -f 'entity-manager-core/src/guarded.rs')
    # one binary (tests/tests/mutants_writes.rs) of the typed operations, versions, conflicts
    # under faults and the live migration: entity_ops, entity_update, entity_version,
    # entity_fields, entity_wide, faults, guarded_writes, live_migration, migrate, workers
    tests=(--test mutants_writes)
    # about 25 s unmutated (60-70 s at load average 10): a mutant that makes a test loop for
    # ever is cut off sooner
    timeout=240
    ;;
*) usage ;;
esac
# MUTANTS_TIMEOUT (seconds; 240 for writes, 300 for query by default) bounds a mutant's
# tests: on a machine loaded 10-13 the query binary's tests took more than 600 s for a mutant
# they did not catch (counted as a timeout); raise it on a loaded machine
# MUTANTS_TESTS="--test a --test b" replaces the area's test targets (a quicker sample)
if [[ -n ${MUTANTS_TESTS:-} ]]; then
    read -r -a tests <<<"$MUTANTS_TESTS"
fi

if ! command -v cargo-mutants >/dev/null; then
    cargo install cargo-mutants --locked --version 27.1.0
fi

# What a mutant costs, and what cuts it (measured: BENCHMARKS.md, "Mutation testing"):
# - the build directory: cargo-mutants mutates a copy of the checkout (never your files), and
#   builds it in this checkout's own target directory (MUTANTS_TARGET_DIR to choose another),
#   so the dependencies are never rebuilt; a copy with a target of its own first spent ~12
#   minutes rebuilding them. With `debug = 0` (below) the mutated crates get artifacts of their
#   own beside yours: a mutant never makes your next `cargo test` rebuild, nor the reverse.
#   While a mutant builds, your own cargo commands in this checkout wait for its lock.
# - no debug info for the workspace crates (`CARGO_PROFILE_DEV_DEBUG=0`): less to write and link
# - the build phase builds only the area's targets (the `--cargo-arg`s below); before, it built
#   every test target of the test package (about 60) per mutant
# - only the mutated package's unit tests and the test package (`--test-package`), not every
#   crate of the workspace (`--test-workspace` rebuilt the derive, facade and CLI unit tests,
#   and their dependencies with the workspace's features, per mutant)
# - one test binary per area: one link per mutant instead of seven or ten
# - the generative oracles at a few hundred cases (ORACLE_CASES, QUERY_MISTAKES_CASES above)
export CARGO_TARGET_DIR=${MUTANTS_TARGET_DIR:-$PWD/target}
# The copy lives in TMPDIR; tests read the shared fixtures at `$CARGO_MANIFEST_DIR/../../shared`
# (the checkout's sibling `shared`), so the copy gets a TMPDIR whose `shared` is that one: without
# it, every mutant of `writes` failed ten `migrate` tests (file not found) and counted as caught.
# That TMPDIR must not be inside the target directory: cargo records a source file under the
# target directory by its path relative to it (as it does a build script's output), so the
# fingerprints of a copy named in a run stopped before it removed its copy kept pointing at that
# stale copy, and the next run's mutated files were never compiled: every mutant "missed"
# (2026-11-29: a query sample reported mutants missed that the tests kill when built by hand).
# One run per checkout at a time: a run removes the copies an earlier, stopped run left.
scratch=${MUTANTS_SCRATCH:-${TMPDIR:-/tmp}/entity-manager-mutants-$(printf '%s' "$PWD" | cksum | cut -d' ' -f1)}
case $scratch/ in
"$CARGO_TARGET_DIR"/*) echo "MUTANTS_SCRATCH must be outside the target directory $CARGO_TARGET_DIR" >&2; exit 2 ;;
esac
mkdir -p "$scratch"
rm -rf "$scratch"/cargo-mutants-*
ln -sfn "$(cd .. && pwd)/shared" "$scratch/shared"
export TMPDIR=$scratch
export CARGO_PROFILE_DEV_DEBUG=0

# the test targets go to both phases (`--cargo-arg`): after `--` they reached only `cargo test`,
# and the build (`cargo test --no-run`) built every test target of the test package per mutant
targets=(--cargo-arg=--lib)
for t in "${tests[@]}"; do
    targets+=("--cargo-arg=$t")
done

# cargo-nextest when installed: it stops a mutant's tests at the first failure (a caught
# mutant then costs its build and the tests up to the one that catches it, not the whole
# binary: the query binary runs 6-7 minutes on a loaded machine), and runs each test in a
# process of its own. `MUTANTS_TEST_TOOL=cargo` keeps `cargo test`.
test_tool=${MUTANTS_TEST_TOOL:-}
if [[ -z $test_tool ]]; then
    if cargo nextest --version >/dev/null 2>&1; then test_tool=nextest; else test_tool=cargo; fi
fi
echo "mutants of $area: tests run by $test_tool" >&2
# nextest runs 8 tests at once on the 2 cores (NEXTEST_TEST_THREADS to change it): with one a
# core, a mutant caught by a quick test (query_mistakes, say) waited behind the long oracles
# and paging tests that start before it in nextest's order (106-143 s of tests for a mutant of
# query/check.rs); with 8 the quick ones run beside them and end the run at the first failure.
# A mutant no test catches costs the same CPU either way.
export NEXTEST_TEST_THREADS=${NEXTEST_TEST_THREADS:-8}
# the `mutants` profile of .config/nextest.toml: at the first failure the tests still running
# are stopped, not waited for (they may loop until the timeout under the mutant)
export NEXTEST_PROFILE=${NEXTEST_PROFILE:-mutants}

started=$(date +%s)
# `--sharding round-robin` (with `--shard`): `--shard k/n` is then a uniform sample over the area's files
# `--baseline skip`: the suite passes unmutated (CI says so), so the timeouts are fixed.
# `-j 1`: the build directory above is shared, one mutant at a time
sharding=()
for arg in "$@"; do
    [[ $arg == --shard* ]] && sharding=(--sharding round-robin)
done
status=0
cargo mutants "${files[@]}" "${sharding[@]}" \
    --test-package entity-manager-core,entity-manager-tests \
    --baseline skip --timeout "${MUTANTS_TIMEOUT:-$timeout}" --build-timeout 900 --jobs 1 --test-tool "$test_tool" \
    "${targets[@]}" "$@" || status=$?
# cargo-mutants exits 2 when a mutant was missed, 3 when one timed out
printf 'mutants of %s done in %d s (cargo-mutants exit %d)\n' "$area" "$(($(date +%s) - started))" "$status"
exit "$status"
