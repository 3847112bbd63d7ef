//! The layers of `entity-manager-core` and `entity-manager-derive`: no import circle between
//! the modules of either crate, at the top level and one level down.
//!
//! Every `crate::…` path of a module (in `use` trees and in code, test modules left out) is
//! resolved to the top-level module that defines it, through the crate root's re-exports. The
//! resulting graph must be acyclic, so that each module can be read knowing only the modules
//! below it: `limits`, `key_type` and `transcode` at the ground; `model`, `rules`, `error`,
//! `table`, `store`, `schema`, `keys` on them; `entity` (the traits the derives implement);
//! `ops`, `query`, `scan`; and `entity_ext` (the [`EntityExt`](entity_manager::EntityExt)
//! methods) at the top. The derive reads in the same order: `attrs` → `model` (its types, then
//! its `resolve` and `build`) → `table` → `check` → `expand` (the pipelines, then `fallback`,
//! `entity` and `table`, then `assertions`), with `case` and `errors` at the ground.
//!
//! One level down, the modules of a folder (`store::memory`, `store::shape`, `ops::read`,
//! `rules::bump`, …) and the folder's own `mod.rs` are modules of their own: every `crate::`,
//! `super::`, `self::` path and every path through a child module is resolved, through the
//! `use` items (re-exports and globs) of every module on the way, to the module that defines
//! the item, counted at its second level; that graph must be acyclic too, but for the circles
//! listed as left for later (which the test also fails on once they are gone).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

type Graph = BTreeMap<String, BTreeSet<String>>;
/// One path per edge, as evidence.
type Examples = BTreeMap<(String, String), String>;

/// A crate's sources, by its directory in the workspace.
fn src(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(krate)
        .join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// Whether an item is compiled only for tests (`#[cfg(test)]`).
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string() == "test")
    })
}

/// Every path a `use` tree names, as segments.
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => out.push([prefix.clone(), vec![n.ident.to_string()]].concat()),
        syn::UseTree::Rename(r) => out.push([prefix.clone(), vec![r.ident.to_string()]].concat()),
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix, out);
            }
        }
    }
}

/// The paths of one source file.
#[derive(Default)]
struct Paths(Vec<Vec<String>>);

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test_only(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test_only(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if !is_test_only(&u.attrs) {
            use_paths(&u.tree, &mut Vec::new(), &mut self.0);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.0
            .push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }
}

fn parse(path: &Path) -> Result<syn::File, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    syn::parse_file(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The top-level modules of the crate and, for each name the root re-exports, its module.
fn root(src: &Path) -> Result<(BTreeSet<String>, BTreeMap<String, String>), String> {
    let lib = parse(&src.join("lib.rs"))?;
    let mut modules = BTreeSet::new();
    let mut uses = Vec::new();
    for item in &lib.items {
        match item {
            syn::Item::Mod(m) if m.content.is_none() => {
                modules.insert(m.ident.to_string());
            }
            syn::Item::Use(u) => use_paths(&u.tree, &mut Vec::new(), &mut uses),
            _ => {}
        }
    }
    let exports = uses
        .into_iter()
        .filter_map(|path| {
            let first = path.first().filter(|m| modules.contains(*m))?.clone();
            Some((path.last()?.clone(), first))
        })
        .collect();
    Ok((modules, exports))
}

/// The graph of the crate's top-level modules, with one example path per edge.
fn graph(src: &Path) -> Result<(Graph, Examples), String> {
    let (modules, exports) = root(src)?;
    let mut files = Vec::new();
    rust_files(src, &mut files).map_err(|e| e.to_string())?;
    let mut graph: Graph = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    let mut example = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(src).map_err(|e| e.to_string())?;
        let Some(first) = relative.components().next() else {
            continue;
        };
        let unit = first
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_owned();
        if unit == "lib" {
            continue;
        }
        let at_top = relative.components().count() == 1;
        let mut paths = Paths::default();
        paths.visit_file(&parse(&file)?);
        for path in paths.0 {
            let rest = match path.first().map(String::as_str) {
                Some("crate") => &path[1..],
                // `super` of a top-level module is the crate root
                Some("super") if at_top => &path[1..],
                _ => continue,
            };
            let Some(head) = rest.first() else { continue };
            let target = if modules.contains(head) {
                Some(head)
            } else {
                exports.get(head)
            };
            if let Some(target) = target.filter(|t| **t != unit) {
                graph
                    .entry(unit.clone())
                    .or_default()
                    .insert(target.clone());
                example
                    .entry((unit.clone(), target.clone()))
                    .or_insert_with(|| format!("{} uses {}", relative.display(), path.join("::")));
            }
        }
    }
    Ok((graph, example))
}

/// The strongly connected components of more than one module (Tarjan).
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        circles: Vec<Vec<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        for w in s.graph.get(v).into_iter().flatten() {
            if !s.index.contains_key(w.as_str()) {
                visit(s, w);
                let low = s.low[w.as_str()].min(s.low[v]);
                s.low.insert(v, low);
            } else if s.stack.contains(&w.as_str()) {
                let low = s.index[w.as_str()].min(s.low[v]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.circles.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        circles: Vec::new(),
    };
    for v in graph.keys() {
        if !state.index.contains_key(v.as_str()) {
            visit(&mut state, v);
        }
    }
    state.circles
}

/// Fails with every circle between the top-level modules, each edge with a path that makes it.
fn assert_acyclic(krate: &str, known: &[(&str, &str)]) -> Result<(), String> {
    let (graph, example) = graph(&src(krate))?;
    assert_no_circle(krate, &graph, &example, known);
    Ok(())
}

/// Fails with every circle between the modules down to the second level (`store::memory`,
/// `ops::read`; a deeper module counts as its second-level ancestor), each edge with a path
/// that makes it.
///
/// `left` are the circles known and left for later, each exactly as found (its modules, sorted):
/// the test fails on any other circle, and on a circle of `left` that is gone (strike it).
fn assert_acyclic_submodules(
    krate: &str,
    known: &[(&str, &str)],
    left: &[&[&str]],
) -> Result<(), String> {
    let (mut graph, example) = graph_to_depth(&src(krate), 2)?;
    let found = circles(&graph);
    for circle in left {
        assert!(
            found.iter().any(|c| c == circle),
            "{krate}: the circle {circle:?} is gone: strike it from the circles left"
        );
        // cut the circle's inner edges, so that only the others are reported
        for module in *circle {
            if let Some(to) = graph.get_mut(*module) {
                to.retain(|m| !circle.contains(&m.as_str()));
            }
        }
    }
    assert_no_circle(krate, &graph, &example, known);
    Ok(())
}

fn assert_no_circle(krate: &str, graph: &Graph, example: &Examples, known: &[(&str, &str)]) {
    // the analysis sees the edges it must see: a module that is known to use another
    for (from, to) in known {
        assert!(
            graph[*from].contains(*to),
            "{krate}: {from} -> {to} not found: {graph:?}"
        );
    }
    let circles = circles(graph);
    let explain = |c: &Vec<String>| {
        c.iter()
            .flat_map(|a| {
                graph[a]
                    .iter()
                    .filter(|b| c.contains(b))
                    .map(move |b| (a, b))
            })
            .map(|(a, b)| format!("  {a} -> {b} ({})", example[&(a.clone(), b.clone())]))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        circles.is_empty(),
        "import circles between the modules of {krate}:\n{}",
        circles.iter().map(explain).collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn core_modules_import_no_circle() -> Result<(), String> {
    assert_acyclic(
        "entity-manager-core",
        &[
            ("ops", "entity"),
            ("entity_ext", "ops"),
            ("schema", "validate"),
        ],
    )
}

#[test]
fn derive_modules_import_no_circle() -> Result<(), String> {
    assert_acyclic(
        "entity-manager-derive",
        &[("expand", "check"), ("check", "model")],
    )
}

#[test]
fn core_submodules_import_no_circle() -> Result<(), String> {
    assert_acyclic_submodules(
        "entity-manager-core",
        &[
            // between siblings (some through their parent's re-exports)
            ("ops::update", "ops::write"),
            ("ops::transaction", "ops::read"),
            ("rules::entity", "rules::table"),
            ("store::memory", "store::shape"),
            ("store::dynamo", "store::shape"),
            ("table::definition", "table::stamp"),
            ("store::memory", "store::request"),
            ("store::error", "store::request"),
            // from a parent's own code to its child, and across top-level modules
            ("store", "store::error"),
            ("store::memory", "table::stamp"),
            ("ops::read", "entity"),
            // the typed door over the untyped builders, both over the shared paging
            ("query::typed", "query::untyped"),
            ("query::untyped", "query::paging"),
            ("query::multi_typed", "query::paging"),
        ],
        &[],
    )
}

#[test]
fn derive_submodules_import_no_circle() -> Result<(), String> {
    assert_acyclic_submodules(
        "entity-manager-derive",
        &[
            ("expand", "check"),
            ("check", "model::resolve"),
            // the model's types below its builders, the emitters below the pipeline
            ("model::build", "model::resolve"),
            ("model::resolve", "model"),
            ("expand", "expand::fallback"),
            ("expand::fallback", "expand::entity"),
            ("expand::entity", "expand::assertions"),
        ],
        &[],
    )
}

#[test]
fn the_ground_modules_import_nothing_of_the_crate() -> Result<(), String> {
    let (graph, _) = graph(&src("entity-manager-core"))?;
    for ground in ["limits", "key_type"] {
        assert_eq!(
            graph[ground],
            BTreeSet::new(),
            "{ground} imports other modules"
        );
    }
    // the transcodes name the key type of their encoded values, and nothing else of the crate
    assert_eq!(
        graph["transcode"],
        BTreeSet::from(["key_type".to_owned()]),
        "transcode imports other modules"
    );
    Ok(())
}

#[test]
fn a_circle_is_found() {
    let graph: Graph = [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")]
        .into_iter()
        .fold(Graph::new(), |mut g, (from, to)| {
            g.entry(from.to_owned()).or_default().insert(to.to_owned());
            g.entry(to.to_owned()).or_default();
            g
        });
    assert_eq!(
        circles(&graph),
        vec![vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]]
    );
}

// ---------------------------------------------------------------------------------------------
// second-level modules: no circle between `store::memory`, `store::shape`, `ops::read`, … either

/// A module path from the crate root (`[]` is the root).
type ModPath = Vec<String>;

/// One module of a crate as its `mod` declarations make it (test-only modules left out): what
/// it declares, defines and imports.
#[derive(Default)]
struct Module {
    file: PathBuf,
    items: Vec<syn::Item>,
    /// Its child modules, by name.
    children: BTreeSet<String>,
    /// The names its items define.
    defined: BTreeSet<String>,
    /// The names its `use` items bring in, with the absolute path each names.
    aliases: BTreeMap<String, ModPath>,
    /// The modules its `use …::*` items bring in.
    globs: Vec<ModPath>,
}

/// The modules of a crate, from `lib.rs` through its `mod` declarations.
fn modules(src: &Path) -> Result<BTreeMap<ModPath, Module>, String> {
    fn load(
        path: ModPath,
        file: PathBuf,
        dir: &Path,
        out: &mut BTreeMap<ModPath, Module>,
    ) -> Result<(), String> {
        let parsed = parse(&file)?;
        let mut module = Module {
            file,
            ..Module::default()
        };
        for item in parsed.items {
            if let syn::Item::Mod(m) = &item
                && !is_test_only(&m.attrs)
                && m.content.is_none()
            {
                let name = m.ident.to_string();
                let flat = dir.join(format!("{name}.rs"));
                let (child, child_dir) = if flat.exists() {
                    (flat, dir.join(&name))
                } else {
                    (dir.join(&name).join("mod.rs"), dir.join(&name))
                };
                module.children.insert(name.clone());
                load([path.clone(), vec![name]].concat(), child, &child_dir, out)?;
            }
            module.items.push(item);
        }
        out.insert(path, module);
        Ok(())
    }
    let mut out = BTreeMap::new();
    load(Vec::new(), src.join("lib.rs"), src, &mut out)?;
    // what each module defines and imports
    let paths: Vec<ModPath> = out.keys().cloned().collect();
    for path in paths {
        let (mut defined, mut aliases, mut globs) = (BTreeSet::new(), BTreeMap::new(), Vec::new());
        let module = &out[&path];
        for item in &module.items {
            let ident = match item {
                syn::Item::Const(i) => Some(&i.ident),
                syn::Item::Enum(i) => Some(&i.ident),
                syn::Item::Fn(i) => Some(&i.sig.ident),
                syn::Item::Macro(i) => i.ident.as_ref(),
                syn::Item::Mod(i) => Some(&i.ident),
                syn::Item::Static(i) => Some(&i.ident),
                syn::Item::Struct(i) => Some(&i.ident),
                syn::Item::Trait(i) => Some(&i.ident),
                syn::Item::Type(i) => Some(&i.ident),
                syn::Item::Union(i) => Some(&i.ident),
                syn::Item::Use(u) if !is_test_only(&u.attrs) => {
                    let mut named = Vec::new();
                    use_names(&u.tree, &mut Vec::new(), &mut named);
                    for (name, target) in named {
                        let Some(target) = absolute(&out, &path, &target) else {
                            continue;
                        };
                        match name {
                            Some(name) => {
                                aliases.insert(name, target);
                            }
                            None => globs.push(target),
                        }
                    }
                    None
                }
                _ => None,
            };
            if let Some(ident) = ident {
                defined.insert(ident.to_string());
            }
        }
        let module = out.get_mut(&path).ok_or("module vanished")?;
        module.defined = defined;
        module.aliases = aliases;
        module.globs = globs;
    }
    Ok(out)
}

/// Each path of a `use` tree with the name it brings in (`None` for a glob).
fn use_names(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Option<String>, Vec<String>)>,
) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_names(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            // `use a::b::{self}` brings in `b`
            let (path, name) = if name == "self" {
                (prefix.clone(), prefix.last().cloned())
            } else {
                ([prefix.clone(), vec![name.clone()]].concat(), Some(name))
            };
            out.push((name, path));
        }
        syn::UseTree::Rename(r) => out.push((
            Some(r.rename.to_string()),
            [prefix.clone(), vec![r.ident.to_string()]].concat(),
        )),
        syn::UseTree::Glob(_) => out.push((None, prefix.clone())),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_names(t, prefix, out);
            }
        }
    }
}

/// The absolute path (from the crate root) that `path`, written in module `at`, names; `None`
/// for a path outside the crate.
fn absolute(modules: &BTreeMap<ModPath, Module>, at: &ModPath, path: &[String]) -> Option<ModPath> {
    let mut base = at.clone();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        Some(first) if modules.get(at).is_some_and(|m| m.children.contains(first)) => {}
        // a name this module imports (`use super::stamp;` … `stamp::f()`)
        Some(first) => {
            let target = modules.get(at)?.aliases.get(first)?;
            return Some([target.clone(), rest[1..].to_vec()].concat());
        }
        None => return None,
    }
    Some([base, rest.to_vec()].concat())
}

/// The module that defines what the absolute `path` names (through re-exports and globs), or
/// the module itself when the path names a module.
fn defining(modules: &BTreeMap<ModPath, Module>, path: &[String], depth: usize) -> ModPath {
    let mut at: ModPath = Vec::new();
    for (i, segment) in path.iter().enumerate() {
        let Some(module) = modules.get(&at) else {
            return at;
        };
        if module.children.contains(segment) {
            at.push(segment.clone());
            continue;
        }
        if depth < 16 && !module.defined.contains(segment) {
            if let Some(target) = module.aliases.get(segment) {
                return defining(
                    modules,
                    &[target.clone(), path[i + 1..].to_vec()].concat(),
                    depth + 1,
                );
            }
            for glob in &module.globs {
                let knows = modules.get(glob).is_some_and(|g| {
                    g.defined.contains(segment)
                        || g.children.contains(segment)
                        || g.aliases.contains_key(segment)
                });
                if knows {
                    return defining(
                        modules,
                        &[glob.clone(), path[i..].to_vec()].concat(),
                        depth + 1,
                    );
                }
            }
        }
        return at;
    }
    at
}

/// The graph of the modules of the crate down to `depth` (a deeper module counts as its
/// ancestor at that depth), with one example path per edge. A module's `pub` `use` items are
/// re-exports, not uses: they make no edge (where they point is followed instead).
fn graph_to_depth(src: &Path, depth: usize) -> Result<(Graph, Examples), String> {
    let modules = modules(src)?;
    let unit = |path: &ModPath| path[..path.len().min(depth)].join("::");
    let mut graph = Graph::new();
    let mut example = Examples::new();
    for (path, module) in &modules {
        if path.is_empty() {
            continue;
        }
        let from = unit(path);
        graph.entry(from.clone()).or_default();
        let mut paths = Paths::default();
        for item in &module.items {
            if let syn::Item::Use(u) = item
                && !module.children.is_empty()
                && !matches!(u.vis, syn::Visibility::Inherited)
            {
                continue;
            }
            paths.visit_item(item);
        }
        for used in paths.0 {
            // a one-segment path in code is a local, a field or a name a `use` brought in (whose
            // path is counted at the `use`): only `crate::`, `super::` and `self::` ones count
            if used.len() < 2
                && !matches!(
                    used.first().map(String::as_str),
                    Some("crate" | "super" | "self")
                )
            {
                continue;
            }
            let Some(target) = absolute(&modules, path, &used) else {
                continue;
            };
            let defined_in = defining(&modules, &target, 0);
            if defined_in.is_empty() {
                continue;
            }
            let to = unit(&defined_in);
            if to != from {
                graph.entry(from.clone()).or_default().insert(to.clone());
                graph.entry(to.clone()).or_default();
                let relative = module.file.strip_prefix(src).unwrap_or(&module.file);
                example
                    .entry((from.clone(), to.clone()))
                    .or_insert_with(|| format!("{} uses {}", relative.display(), used.join("::")));
            }
        }
    }
    Ok((graph, example))
}
