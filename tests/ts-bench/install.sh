#!/usr/bin/env bash
# Installs the TypeScript Entity Manager release the compatibility tests and the write-path bench
# compare against, with the DynamoDB client of the live mixed-fleet test (tests/fleet.rs), into a
# cache outside the repository ($EM_TS_CACHE, default ~/.cache/entity-manager-ts), and prints the
# NODE_PATH to give them:
#
#   export EM_TS_NODE_PATH=$(bash tests/ts-bench/install.sh)
#   cargo bench -p entity-manager-tests --bench write_path
#
# Pinned: @karmaniverous/entity-manager 6.14.0 (what the npm profile matches) and
# @karmaniverous/entity-client-dynamodb 0.2.10, which depends on entity-manager ^6.14.0 (so it
# shares the one above) and on @aws-sdk/client-dynamodb and @aws-sdk/lib-dynamodb ^3.691.0;
# both SDK packages are pinned to 3.712.0 (December 2024, the month of that release).
# Idempotent: npm runs only when a package is missing.
set -euo pipefail
cache=${EM_TS_CACHE:-$HOME/.cache/entity-manager-ts}
packages=(
    @karmaniverous/entity-manager@6.14.0
    tslib # the ESM build of entity-manager imports tslib without declaring it
    @karmaniverous/entity-client-dynamodb@0.2.10
    @aws-sdk/client-dynamodb@3.712.0
    @aws-sdk/lib-dynamodb@3.712.0
)
installed() {
    local spec=$1 name version
    name=${spec%@*}
    version=${spec##*@}
    [[ $spec == "$name" || $name == "" ]] && { name=$spec; version=; }
    [ -f "$cache/node_modules/$name/package.json" ] || return 1
    [ -z "$version" ] || grep -q "\"version\": *\"$version\"" "$cache/node_modules/$name/package.json"
}
mkdir -p "$cache"
missing=0
for spec in "${packages[@]}"; do
    installed "$spec" || missing=1
done
if [ "$missing" = 1 ]; then
    [ -f "$cache/package.json" ] || echo '{"private":true}' >"$cache/package.json"
    npm install --prefix "$cache" --no-audit --no-fund --silent "${packages[@]}" >&2
fi
echo "$cache/node_modules"
