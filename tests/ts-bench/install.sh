#!/usr/bin/env bash
# Installs the TypeScript Entity Manager release the write-path bench compares against, into a
# cache outside the repository ($EM_TS_CACHE, default ~/.cache/entity-manager-ts), and prints
# the NODE_PATH to give the bench:
#
#   export EM_TS_NODE_PATH=$(bash tests/ts-bench/install.sh)
#   cargo bench -p entity-manager-tests --bench write_path
set -euo pipefail
cache=${EM_TS_CACHE:-$HOME/.cache/entity-manager-ts}
mkdir -p "$cache"
if [ ! -f "$cache/node_modules/@karmaniverous/entity-manager/package.json" ] || [ ! -d "$cache/node_modules/tslib" ]; then
    [ -f "$cache/package.json" ] || echo '{"private":true}' > "$cache/package.json"
    npm install --prefix "$cache" --no-audit --no-fund --silent @karmaniverous/entity-manager@6.14.0 tslib >&2  # its ESM build imports tslib without declaring it
fi
echo "$cache/node_modules"
