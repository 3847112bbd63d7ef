#!/usr/bin/env bash
# The three published crates package cleanly: `cargo package` builds each from its packaged
# sources (so the internal `=X.Y.Z` dependencies, the include lists and the MSRV field are
# checked), and each package lists exactly what it should: its sources, its README and both
# license files, and no junk (build output, caches, test data, node modules).
set -euo pipefail
cd "$(dirname "$0")/.."

crates=(entity-manager-core entity-manager-derive entity-manager)
# `cargo package` verifies each crate against the others' packaged sources through a local
# registry, which cargo unpacks under $CARGO_HOME/registry/src/<hash>/ and never refreshes while
# the version stays the same: an earlier run's copy would be built instead of this tree's.
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
for crate in "${crates[@]}"; do
    rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$crate-$version"
done
args=()
for crate in "${crates[@]}"; do args+=(-p "$crate"); done
cargo package "${args[@]}" ${PACKAGE_ALLOW_DIRTY:+--allow-dirty}

status=0
for crate in "${crates[@]}"; do
    list=$(cargo package -p "$crate" --list ${PACKAGE_ALLOW_DIRTY:+--allow-dirty} 2>/dev/null)
    for required in Cargo.toml README.md LICENSE-MIT LICENSE-APACHE src/lib.rs; do
        if ! grep -qx "$required" <<<"$list"; then
            echo "package $crate lacks $required" >&2
            status=1
        fi
    done
    junk=$(grep -E '(^|/)(target|node_modules|\.dynamodb-local|tests|benches|examples)/|proptest-regressions|\.(log|jsonl|orig\.rej)$' <<<"$list" || true)
    if [ -n "$junk" ]; then
        echo "package $crate holds files it should not:" >&2
        echo "$junk" >&2
        status=1
    fi
    printf '%s: %s files\n' "$crate" "$(wc -l <<<"$list")"
done
exit $status
