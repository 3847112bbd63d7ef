//! The layers of `entity-manager-core` and `entity-manager-derive`: no import circle between
//! the top-level modules of either crate.
//!
//! Every `crate::…` path of a module (in `use` trees and in code, test modules left out) is
//! resolved to the top-level module that defines it, through the crate root's re-exports. The
//! resulting graph must be acyclic, so that each module can be read knowing only the modules
//! below it: `limits` and `transcode` at the ground; `model`, `rules`, `error`, `store`,
//! `schema`, `keys` on them; `entity` (the traits the derives implement); `ops`, `query`,
//! `scan`; and `entity_ext` (the [`EntityExt`](entity_manager::EntityExt) methods) at the top.
//! The derive reads in the same order: `attrs` → `model` (and its `resolve`) → `table` →
//! `check` → `expand`, with `case` and `errors` at the ground.

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

/// Fails with every circle, each edge with a path that makes it.
fn assert_acyclic(krate: &str, known: &[(&str, &str)]) -> Result<(), String> {
    let (graph, example) = graph(&src(krate))?;
    // the analysis sees the edges it must see: a module that is known to use another
    for (from, to) in known {
        assert!(
            graph[*from].contains(*to),
            "{krate}: {from} -> {to} not found: {graph:?}"
        );
    }
    let circles = circles(&graph);
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
    Ok(())
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
fn the_ground_modules_import_nothing_of_the_crate() -> Result<(), String> {
    let (graph, _) = graph(&src("entity-manager-core"))?;
    for ground in ["limits", "transcode"] {
        assert_eq!(
            graph[ground],
            BTreeSet::new(),
            "{ground} imports other modules"
        );
    }
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
