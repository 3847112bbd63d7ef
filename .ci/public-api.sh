#!/usr/bin/env bash
# Semver discipline: the public API of each published crate, listed from rustdoc's JSON output
# (.ci/public_api.py), must equal the committed listing in public-api/<crate>.txt. A change of
# the public API then shows in review as a diff of that file, and an accidental one fails CI.
#
#   bash .ci/public-api.sh            # check (CI)
#   bash .ci/public-api.sh --update   # rewrite the listings after an intended change
#
# rustdoc's JSON output is unstable, so it runs with RUSTC_BOOTSTRAP=1 on the stable toolchain
# (the only one here); the listing records names, kinds and signatures, not the JSON itself.
set -euo pipefail
cd "$(dirname "$0")/.."
update=${1:-}
status=0
for crate in entity-manager-core entity-manager-derive entity-manager; do
    lib=${crate//-/_}
    RUSTC_BOOTSTRAP=1 cargo rustdoc -q -p "$crate" --all-features --lib -- \
        -Z unstable-options --output-format json
    listing=$(python3 .ci/public_api.py "${CARGO_TARGET_DIR:-target}/doc/$lib.json")
    if [ "$update" = "--update" ]; then
        printf '%s\n' "$listing" > "public-api/$crate.txt"
        echo "public-api/$crate.txt: $(wc -l < "public-api/$crate.txt") items"
    elif ! diff -u "public-api/$crate.txt" <(printf '%s\n' "$listing"); then
        echo "the public API of $crate changed (diff above): if intended, run \`bash .ci/public-api.sh --update\` and commit public-api/$crate.txt (a breaking change needs a new major version)" >&2
        status=1
    fi
done
exit $status
