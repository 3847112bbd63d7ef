#!/usr/bin/env bash
# The derive's compile cost (issue 31, point 5): CPU seconds (user+sys) of rustc compiling a crate
# of N README-style entities with `#[derive(Entity)]` + the serde derives, against the same
# structs with only the serde derives. Non-incremental debug build of that one crate (its
# dependencies are built first and not counted); each build runs ROUNDS times, alternating, and the
# median of each is reported with their ratio. The machine is shared: compare the ratio of one run.
#
#   bash .ci/compile-cost.sh            # N=30 ROUNDS=5
#   N=30 ROUNDS=7 bash .ci/compile-cost.sh
#
# The crates are generated under target/compile-cost/ and share the workspace's target directory
# and Cargo.lock, so the dependencies are those the workspace already built.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
N=${N:-30}
ROUNDS=${ROUNDS:-5}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
work="$CARGO_TARGET_DIR/compile-cost"
export CARGO_INCREMENTAL=0

entity() { # $1 = index, $2 = "derive" or "serde"
    local i=$1 t=$(( $1 / 10 )) derives attrs
    if [ "$2" = derive ]; then
        derives="Entity, Serialize, Deserialize, Clone, Debug, PartialEq"
        attrs="#[entity(table = Table$t, unique = user_id, timestamp = created, version = version)]
#[shard_bumps(bumps = [bump(timestamp = 1_700_000_000_000, char_bits = 2, chars = 1)])]
#[generated(name = name_range_key, components = [last_name, first_name])]
#[index(name = \"created\", range = created)]
#[index(name = \"lastName\", range = name_range_key)]
#[index(name = \"phone\", range = phone)]"
        tr='#[transcode("string")]'
        ts='#[transcode("timestamp")]'
    else
        derives="Serialize, Deserialize, Clone, Debug, PartialEq"
        attrs="" tr="" ts=""
    fi
    cat <<RS
#[derive($derives)]
#[serde(rename_all = "camelCase")]
$attrs
pub struct User$i {
    $tr
    pub user_id: String,
    $ts
    pub created: u64,
    $tr
    pub first_name: String,
    $tr
    pub last_name: String,
    $tr
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phone: Option<String>,
    pub logins: u64,
    pub version: u64,
}

RS
}

generate() { # $1 = "derive" or "serde"
    local dir="$work/$1" deps
    mkdir -p "$dir/src"
    deps='serde = { version = "1", features = ["derive"] }'
    if [ "$1" = derive ]; then
        deps="$deps
entity-manager = { path = \"$root/entity-manager\", default-features = false }"
    fi
    cat > "$dir/Cargo.toml" <<TOML
[package]
name = "compile-cost-$1"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
$deps

[workspace]
TOML
    cp "$root/Cargo.lock" "$dir/Cargo.lock"
    {
        echo '#![allow(dead_code)]'
        echo 'use serde::{Deserialize, Serialize};'
        if [ "$1" = derive ]; then
            echo 'use entity_manager::{Entity, Table};'
            for t in $(seq 0 $(( (N - 1) / 10 ))); do
                local members
                members=$(seq -s ', ' -f 'User%g' $(( t * 10 )) $(( t * 10 + 9 < N - 1 ? t * 10 + 9 : N - 1 )))
                printf '#[derive(Table)]\n#[table(entities(%s))]\npub struct Table%s;\n\n' "$members" "$t"
            done
        fi
        for i in $(seq 0 $(( N - 1 ))); do entity "$i" "$1"; done
    } > "$dir/src/lib.rs"
}

# the rustc command cargo runs for the crate itself, with its environment
rustc_command() { # $1 = dir
    touch "$1/src/lib.rs"
    cargo build --offline --quiet --manifest-path "$1/Cargo.toml" >/dev/null 2>&1 || true
    touch "$1/src/lib.rs"
    cargo build --offline -v --manifest-path "$1/Cargo.toml" 2>&1 \
        | sed -n 's/^ *Running `\(.*--crate-name compile_cost_.*\)`$/\1/p' | tail -1
}

cpu() { # $1 = dir, $2 = command; prints user+sys seconds
    local t
    TIMEFORMAT='%U %S'
    t=$( cd "$1" && { time eval "$2" >/dev/null 2>&1; } 2>&1 )
    awk '{ printf "%.3f\n", $1 + $2 }' <<<"$t"
}

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

for kind in derive serde; do generate "$kind"; done
derive_cmd=$(rustc_command "$work/derive")
serde_cmd=$(rustc_command "$work/serde")
[ -n "$derive_cmd" ] && [ -n "$serde_cmd" ] || { echo "could not find the rustc commands (does the generated crate build?)" >&2; cargo build --offline --manifest-path "$work/derive/Cargo.toml" >&2; exit 1; }
# each must compile: a failing build would be timed as a cheap one
(cd "$work/derive" && eval "$derive_cmd" >/dev/null 2>&1) || { echo "the derive crate does not compile" >&2; exit 1; }
(cd "$work/serde" && eval "$serde_cmd" >/dev/null 2>&1) || { echo "the serde crate does not compile" >&2; exit 1; }
: > "$work/derive.times"; : > "$work/serde.times"
for r in $(seq "$ROUNDS"); do
    cpu "$work/derive" "$derive_cmd" >> "$work/derive.times"
    cpu "$work/serde" "$serde_cmd" >> "$work/serde.times"
done
d=$(median < "$work/derive.times"); s=$(median < "$work/serde.times")
echo "entities: $N, rounds: $ROUNDS (CPU s, user+sys, median)"
echo "derive: $d   ($(paste -sd' ' "$work/derive.times"))"
echo "serde:  $s   ($(paste -sd' ' "$work/serde.times"))"
awk -v d="$d" -v s="$s" 'BEGIN { printf "ratio:  %.2fx\n", d / s }'
