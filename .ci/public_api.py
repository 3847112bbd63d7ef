#!/usr/bin/env python3
"""A listing of a crate's public API from rustdoc's JSON output, one item per line, sorted.

Used by .ci/public-api.sh: CI compares the listing of each published crate with the committed
`public-api/<crate>.txt`, so that a change of the public API (an added, removed or changed
item, field, variant, method or signature) cannot land unnoticed. Items hidden from the docs
(`#[doc(hidden)]`, such as `__private`) are left out: they are not public API.
"""
import json
import sys


def hidden(item):
    for attr in item.get("attrs", []):
        text = attr if isinstance(attr, str) else json.dumps(attr)
        if "hidden" in text and "doc" in text:
            return True
    return False


class Api:
    def __init__(self, doc):
        self.index = doc["index"]
        self.paths = doc["paths"]
        self.lines = set()
        self.seen = set()

    def item(self, id_):
        return self.index.get(str(id_))

    def ty(self, t):
        if t is None:
            return "()"
        (kind, v), = t.items()
        if kind == "resolved_path":
            return v["path"].split("::")[-1] + self.args(v.get("args"))
        if kind == "primitive":
            return v
        if kind == "generic":
            return v
        if kind == "borrowed_ref":
            life = (v["lifetime"] + " ") if v.get("lifetime") else ""
            return "&" + life + ("mut " if v["is_mutable"] else "") + self.ty(v["type"])
        if kind == "raw_pointer":
            return ("*mut " if v["is_mutable"] else "*const ") + self.ty(v["type"])
        if kind == "tuple":
            return "(" + ", ".join(self.ty(x) for x in v) + ")"
        if kind == "slice":
            return "[" + self.ty(v) + "]"
        if kind == "array":
            return "[" + self.ty(v["type"]) + "; " + v["len"] + "]"
        if kind == "impl_trait":
            return "impl " + " + ".join(self.bound(b) for b in v)
        if kind == "dyn_trait":
            return "dyn " + " + ".join(p["trait"]["path"].split("::")[-1] + self.args(p["trait"].get("args")) for p in v["traits"])
        if kind == "qualified_path":
            trait = v.get("trait")
            trait_name = trait["path"].split("::")[-1] if trait else "?"
            return "<" + self.ty(v["self_type"]) + " as " + trait_name + ">::" + v["name"]
        if kind == "function_pointer":
            sig = v["sig"]
            return "fn(" + ", ".join(self.ty(x[1]) for x in sig["inputs"]) + ") -> " + self.ty(sig.get("output"))
        return kind

    def bound(self, b):
        if "trait_bound" in b:
            t = b["trait_bound"]["trait"]
            maybe = "?" if b["trait_bound"].get("modifier") == "maybe" else ""
            return maybe + t["path"].split("::")[-1] + self.args(t.get("args"))
        if "outlives" in b:
            return b["outlives"]
        return "?"

    def args(self, args):
        if not args or "angle_bracketed" not in args:
            return ""
        parts = []
        for a in args["angle_bracketed"]["args"]:
            if "type" in a:
                parts.append(self.ty(a["type"]))
            elif "lifetime" in a:
                parts.append(a["lifetime"])
            elif "const" in a:
                parts.append(str(a["const"].get("expr", "_")))
        for c in args["angle_bracketed"].get("constraints", []):
            binding = c.get("binding", {})
            if "equality" in binding:
                eq = binding["equality"]
                parts.append(c["name"] + " = " + (self.ty(eq["type"]) if "type" in eq else "_"))
            elif "constraint" in binding:
                parts.append(c["name"] + ": " + " + ".join(self.bound(b) for b in binding["constraint"]))
        return "<" + ", ".join(parts) + ">" if parts else ""

    def generics(self, g):
        params = []
        for p in g.get("params", []):
            kind = p["kind"]
            if "lifetime" in kind:
                params.append(p["name"])
            elif "type" in kind:
                if kind["type"].get("is_synthetic"):
                    continue
                bounds = kind["type"].get("bounds", [])
                params.append(p["name"] + (": " + " + ".join(self.bound(b) for b in bounds) if bounds else ""))
            elif "const" in kind:
                params.append("const " + p["name"] + ": " + self.ty(kind["const"]["type"]))
        return "<" + ", ".join(params) + ">" if params else ""

    def fn(self, name, f):
        sig = f["sig"]
        head = f.get("header", {})
        prefix = ("const " if head.get("is_const") else "") + ("async " if head.get("is_async") else "") + ("unsafe " if head.get("is_unsafe") else "")
        inputs = ", ".join(
            ("self" if self.ty(t) == "Self" else "self: " + self.ty(t)) if n == "self" else n + ": " + self.ty(t)
            for n, t in sig["inputs"]
        )
        out = sig.get("output")
        return prefix + "fn " + name + self.generics(f["generics"]) + "(" + inputs + ")" + (" -> " + self.ty(out) if out else "")

    def add(self, line):
        self.lines.add(line)

    def walk(self, id_, path):
        item = self.item(id_)
        if item is None or hidden(item):
            return
        (kind, inner), = item["inner"].items()
        name = item.get("name")
        here = (path + "::" + name if path else name) if name else path
        if kind == "module":
            if (id_, here) in self.seen:
                return
            self.seen.add((id_, here))
            self.add(f"pub mod {here}")
            for child in inner["items"]:
                self.walk(child, here)
        elif kind == "use":
            target = inner.get("id")
            local = target is not None and self.item(target) is not None and self.item(target).get("crate_id") == 0
            if local and not inner.get("is_glob"):
                # list the item under the name it is re-exported as
                t = self.item(target)
                t = dict(t, name=inner["name"])
                self.index[f"reexport-{target}-{here}"] = t
                self.walk(f"reexport-{target}-{here}", path)
            elif local and inner.get("is_glob"):
                for child in self.item(target)["inner"].get("module", {}).get("items", []):
                    self.walk(child, path)
            else:
                self.add(f"pub use {path}::{inner['name']} = {inner['source']}")
        elif kind == "struct":
            self.add(f"pub struct {here}{self.generics(inner['generics'])}")
            k = inner["kind"]
            if "plain" in k:
                for fid in k["plain"]["fields"]:
                    f = self.item(fid)
                    if f and f["visibility"] == "public" and not hidden(f):
                        self.add(f"pub {here}::{f['name']}: {self.ty(f['inner']['struct_field'])}")
            self.impls(here, inner["impls"])
        elif kind == "enum":
            self.add(f"pub enum {here}{self.generics(inner['generics'])}")
            for vid in inner["variants"]:
                v = self.item(vid)
                if v and not hidden(v):
                    self.add(f"pub {here}::{v['name']}")
            self.impls(here, inner["impls"])
        elif kind == "union":
            self.add(f"pub union {here}")
        elif kind == "trait":
            self.add(f"pub trait {here}{self.generics(inner['generics'])}")
            for tid in inner["items"]:
                t = self.item(tid)
                if t and not hidden(t):
                    self.assoc(here, t)
        elif kind == "function":
            self.add(f"pub {self.fn(here, inner)}")
        elif kind == "constant":
            self.add(f"pub const {here}: {self.ty(inner['type'])}")
        elif kind == "static":
            self.add(f"pub static {here}: {self.ty(inner['type'])}")
        elif kind == "type_alias":
            self.add(f"pub type {here} = {self.ty(inner['type'])}")
        elif kind in ("macro", "proc_macro"):
            self.add(f"pub macro {here}")
        else:
            self.add(f"pub {kind} {here}")

    def assoc(self, owner, t):
        (k, inner), = t["inner"].items()
        if k == "function":
            self.add(f"{owner}::{self.fn(t['name'], inner)}")
        elif k == "assoc_const":
            self.add(f"{owner}::const {t['name']}: {self.ty(inner['type'])}")
        elif k == "assoc_type":
            self.add(f"{owner}::type {t['name']}")

    def impls(self, owner, impl_ids):
        for iid in impl_ids:
            imp = self.item(iid)
            if imp is None or hidden(imp):
                continue
            i = imp["inner"]["impl"]
            if i.get("is_synthetic") or i.get("blanket_impl") is not None:
                continue
            if i.get("trait"):
                trait = i["trait"]["path"].split("::")[-1] + self.args(i["trait"].get("args"))
                self.add(f"impl {trait} for {owner}")
                continue
            for mid in i["items"]:
                m = self.item(mid)
                if m and m["visibility"] == "public" and not hidden(m):
                    self.assoc(owner, m)


def main():
    doc = json.load(open(sys.argv[1]))
    api = Api(doc)
    root = doc["index"][str(doc["root"])]
    api.walk(doc["root"], "")
    for line in sorted(api.lines):
        print(line)


if __name__ == "__main__":
    main()
