#!/usr/bin/env bash
# Mutation testing (cargo-mutants) of the two areas issue 46 measures: the query engine
# (`entity-manager-core/src/query/`) and the guarded writes (`ops/`, `migrate.rs`, `guarded.rs`).
# Each area's mutants are tested by the test targets that exercise it (not the whole suite), so
# that a mutant costs one incremental build of the core and those targets.
#
#   bash .ci/mutants.sh query                      # every mutant of the area (hours on 2 cores)
#   bash .ci/mutants.sh query --in-diff my.diff    # only what a change touches (git diff > my.diff)
#   bash .ci/mutants.sh writes --shard 3/20        # a uniform sample: every 20th mutant (round robin)
#   bash .ci/mutants.sh query --list               # the mutants, without running them
#
# Before changing these files, run it on your change: `git diff main > /tmp/d.diff && bash
# .ci/mutants.sh query --in-diff /tmp/d.diff`. On 2 cores a mutant of `query/` takes about one
# to three minutes (the core, then the test targets below, rebuilt), so a change of a few dozen
# lines costs a few tens of minutes. Results go to mutants.out/ (ignored by git): caught.txt,
# missed.txt, timeout.txt, unviable.txt. BENCHMARKS.md ("Mutation testing") has the figures.
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
    # the oracles and contract tests of every query kind, tokens and streams, the checks made
    # before the first read, and the generative oracle (a small run: ORACLE_CASES below)
    tests=(--test query_lanes --test query --test query_v2 --test query_ties --test query_typed
        --test multi_attribute --test multi_typed --test query_token --test query_mistakes
        --test oracle)
    # the generative oracle's cases per mutant (CI runs 5,000; a mutant needs a quick verdict)
    export ORACLE_CASES=${ORACLE_CASES:-200}
    ;;
writes)
    files=(-f 'entity-manager-core/src/ops/**' -f 'entity-manager-core/src/migrate.rs'
        -f 'entity-manager-core/src/guarded.rs')
    # the typed operations, versions, conflicts under faults and the live migration
    tests=(--test entity_ops --test entity_update --test entity_version --test entity_wide
        --test faults --test migrate --test live_migration)
    ;;
*) usage ;;
esac
# MUTANTS_TESTS="--test a --test b" replaces the area's test targets (a quicker sample)
if [[ -n ${MUTANTS_TESTS:-} ]]; then
    read -r -a tests <<<"$MUTANTS_TESTS"
fi

if ! command -v cargo-mutants >/dev/null; then
    cargo install cargo-mutants --locked --version 27.1.0
fi

started=$(date +%s)
# --sharding round-robin: `--shard k/n` is then a uniform sample over the area's files
# `--baseline skip`: cargo-mutants 27 runs its baseline on the mutated package alone, where
# these targets are not (the suite passes unmutated: CI says so), so the timeouts are fixed.
# `--test-workspace true` with `--test` filters: the targets named below (and `--lib`, the unit
# tests of the crates) in whichever package holds them
status=0
cargo mutants "${files[@]}" \
    --sharding round-robin \
    --test-workspace true \
    --baseline skip --timeout 600 --build-timeout 900 \
    "$@" \
    -- --lib "${tests[@]}" || status=$?
# cargo-mutants exits 2 when a mutant was missed, 3 when one timed out
printf 'mutants of %s done in %d s (cargo-mutants exit %d)\n' "$area" "$(($(date +%s) - started))" "$status"
exit "$status"
