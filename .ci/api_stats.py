#!/usr/bin/env python3
"""Figures of the public API from the committed listings (public-api/*.txt), for BENCHMARKS.md.

    python3 .ci/api_stats.py

Prints the listing's lines; its functions, structs, enums and traits; and every type name
(struct, enum, trait, type alias) reachable at two or more public paths, with the paths, not
counting the prelude (a glob-import module whose re-exports are its purpose) nor the facade's
`entity_manager_core` re-export of the whole core crate (the same items under the facade).
"""
import collections
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
lines = []
for name in ("entity-manager-core", "entity-manager-derive", "entity-manager"):
    lines += (root / "public-api" / f"{name}.txt").read_text().splitlines()

kinds = collections.Counter()
paths = collections.defaultdict(set)
decl = re.compile(r"^pub (struct|enum|trait|type|use|fn|async fn|const fn|unsafe fn) ")
for line in lines:
    m = re.match(r"^pub (struct|enum|trait|type) ([\w:]+)", line)
    if m:
        kinds[m.group(1)] += 1
        path = m.group(2)
        paths[path.split("::")[-1]].add(path)
        continue
    if re.search(r"\bfn \w", line):
        kinds["fn"] += 1
    m = re.match(r"^pub use ([\w:]+) = ([\w:]+)", line)
    if m and "::prelude::" not in m.group(1) and not m.group(1).endswith("entity_manager_core"):
        # a re-export of a type under another path (the facade's derives are macros: skipped)
        target = m.group(2).split("::")[-1]
        if not m.group(2).startswith("entity_manager_derive::"):
            paths[target].add(m.group(1))

twice = {n: sorted(p) for n, p in paths.items() if len(p) > 1}
print(f"listing lines: {len(lines)}")
print(
    f"functions: {kinds['fn']}, structs: {kinds['struct']}, enums: {kinds['enum']}, "
    f"traits: {kinds['trait']}, type aliases: {kinds['type']}"
)
print(f"type names at two or more public paths: {len(twice)}")
for name, ps in sorted(twice.items()):
    print(f"  {name}: {', '.join(ps)}")
sys.exit(0)
