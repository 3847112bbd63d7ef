//! Seeded differential test: random operation sequences (puts, conditional puts, deletes, batch
//! writes, gets, and queries with every range condition, filters, projections, limits and
//! pagination, on the table and on GSIs) run against a brute-force oracle, the in-memory store
//! and, when `DYNAMODB_ENDPOINT` is set, `DynamoDB` Local. Every result must be identical: items,
//! their order, page boundaries and page keys, and which writes fail their condition.

mod store_support;

use std::cmp::Ordering;
use std::collections::BTreeMap;

use entity_manager::store::{
    Comparison, Expect, Filter, MemoryStore, Page, QueryPage, RangeCondition, Store, WriteRequest,
};
use entity_manager::{AttributeValue, Item};
use store_support::{TestResult, definition, key, n, s, text};

/// How many random sequences run.
const SEQUENCES: u64 = 200;
/// Operations per sequence.
const STEPS: usize = 14;
/// The seed of the first sequence (sequence `i` uses `SEED + i`).
const SEED: u64 = 0x5eed_0004;

/// `SplitMix64`: a tiny, well-mixed, seedable generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(n.max(1)).unwrap_or(1)).unwrap_or(0)
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<T: Clone>(&mut self, items: impl AsRef<[T]>) -> T {
        let items = items.as_ref();
        items[self.below(items.len())].clone()
    }
}

const RANGES: [&str; 8] = ["a", "ab", "abc", "b", "ba", "c", "Z", "é"];
const NAMES: [&str; 5] = ["al", "al2", "bo", "cy", "Al"];
const KINDS: [&str; 3] = ["x", "y", "xy"];
const NUMBERS: [&str; 8] = ["-2", "-0.5", "0", "1", "1.5", "2", "10", "3"];

/// The stores' index layout, as the oracle sees it.
struct IndexSpec {
    name: Option<&'static str>,
    hash: &'static str,
    range: &'static str,
    numeric_range: bool,
    /// `None` for every attribute.
    projected: Option<&'static [&'static str]>,
}

const INDEXES: [IndexSpec; 4] = [
    IndexSpec {
        name: None,
        hash: "hashKey",
        range: "rangeKey",
        numeric_range: false,
        projected: None,
    },
    IndexSpec {
        name: Some("byScore"),
        hash: "group",
        range: "score",
        numeric_range: true,
        projected: Some(&["hashKey", "rangeKey", "group", "score", "name"]),
    },
    IndexSpec {
        name: Some("byName"),
        hash: "group",
        range: "name",
        numeric_range: false,
        projected: Some(&["hashKey", "rangeKey", "group", "name"]),
    },
    IndexSpec {
        name: Some("byCreated"),
        hash: "hashKey",
        range: "created",
        numeric_range: true,
        projected: None,
    },
];

/// A brute-force model of one table.
#[derive(Default)]
struct Oracle {
    items: BTreeMap<(String, String), Item>,
}

fn num(v: &AttributeValue) -> Option<f64> {
    match v {
        AttributeValue::N(x) => x.parse().ok(),
        _ => None,
    }
}

/// Orders two scalar values of the same type; `None` across types.
fn cmp_values(a: &AttributeValue, b: &AttributeValue) -> Option<Ordering> {
    match (a, b) {
        (AttributeValue::S(x), AttributeValue::S(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        (AttributeValue::N(_), AttributeValue::N(_)) => num(a)?.partial_cmp(&num(b)?),
        _ => None,
    }
}

fn eq_values(a: &AttributeValue, b: &AttributeValue) -> bool {
    cmp_values(a, b) == Some(Ordering::Equal)
}

fn oracle_filter(f: &Filter, item: &Item) -> bool {
    match f {
        Filter::Compare {
            attribute,
            op,
            value,
        } => match item.get(attribute) {
            None => *op == Comparison::Ne,
            Some(a) => {
                let o = cmp_values(a, value);
                match op {
                    Comparison::Eq => o == Some(Ordering::Equal),
                    Comparison::Ne => o != Some(Ordering::Equal),
                    Comparison::Lt => o == Some(Ordering::Less),
                    Comparison::Le => matches!(o, Some(Ordering::Less | Ordering::Equal)),
                    Comparison::Gt => o == Some(Ordering::Greater),
                    Comparison::Ge => matches!(o, Some(Ordering::Greater | Ordering::Equal)),
                }
            }
        },
        Filter::Between {
            attribute,
            low,
            high,
        } => item.get(attribute).is_some_and(|a| {
            matches!(
                cmp_values(a, low),
                Some(Ordering::Greater | Ordering::Equal)
            ) && matches!(cmp_values(a, high), Some(Ordering::Less | Ordering::Equal))
        }),
        Filter::BeginsWith { attribute, prefix } => match (item.get(attribute), prefix) {
            (Some(AttributeValue::S(a)), AttributeValue::S(p)) => a.starts_with(p.as_str()),
            _ => false,
        },
        Filter::Exists(a) => item.contains_key(a),
        Filter::NotExists(a) => !item.contains_key(a),
        Filter::In { attribute, values } => item
            .get(attribute)
            .is_some_and(|a| values.iter().any(|v| eq_values(a, v))),
        Filter::And(fs) => fs.iter().all(|f| oracle_filter(f, item)),
        Filter::Or(fs) => fs.iter().any(|f| oracle_filter(f, item)),
        Filter::Not(f) => !oracle_filter(f, item),
        // not generated
        Filter::Contains { .. } | Filter::Size { .. } | Filter::Type { .. } => false,
    }
}

fn oracle_range(cond: &RangeCondition, v: &AttributeValue) -> bool {
    let c = |x: &AttributeValue| cmp_values(v, x);
    match cond {
        RangeCondition::Eq(x) => c(x) == Some(Ordering::Equal),
        RangeCondition::Lt(x) => c(x) == Some(Ordering::Less),
        RangeCondition::Le(x) => matches!(c(x), Some(Ordering::Less | Ordering::Equal)),
        RangeCondition::Gt(x) => c(x) == Some(Ordering::Greater),
        RangeCondition::Ge(x) => matches!(c(x), Some(Ordering::Greater | Ordering::Equal)),
        RangeCondition::Between(a, b) => {
            matches!(c(a), Some(Ordering::Greater | Ordering::Equal))
                && matches!(c(b), Some(Ordering::Less | Ordering::Equal))
        }
        RangeCondition::BeginsWith(p) => match (v, p) {
            (AttributeValue::S(a), AttributeValue::S(p)) => a.starts_with(p.as_str()),
            _ => false,
        },
    }
}

fn pick_attrs(item: &Item, names: &[&str]) -> Item {
    item.iter()
        .filter(|(k, _)| names.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect::<std::collections::HashMap<_, _>>()
        .into()
}

impl Oracle {
    fn exists(&self, k: &Item) -> bool {
        self.items
            .contains_key(&(text(k, "hashKey"), text(k, "rangeKey")))
    }

    fn put(&mut self, item: Item) {
        self.items
            .insert((text(&item, "hashKey"), text(&item, "rangeKey")), item);
    }

    fn delete(&mut self, k: &Item) {
        self.items
            .remove(&(text(k, "hashKey"), text(k, "rangeKey")));
    }

    fn query(&self, spec: &IndexSpec, q: &QueryPage) -> Page {
        let position = |i: &Item| -> Option<(AttributeValue, String, String)> {
            Some((
                i.get(spec.range)?.clone(),
                text(i, "hashKey"),
                text(i, "rangeKey"),
            ))
        };
        let order = |a: &(AttributeValue, String, String), b: &(AttributeValue, String, String)| {
            cmp_values(&a.0, &b.0)
                .unwrap_or(Ordering::Equal)
                .then_with(|| a.1.as_bytes().cmp(b.1.as_bytes()))
                .then_with(|| a.2.as_bytes().cmp(b.2.as_bytes()))
        };
        let mut rows: Vec<(_, &Item)> = self
            .items
            .values()
            .filter(|i| i.get(spec.hash).is_some_and(|h| eq_values(h, &q.hash_key)))
            .filter_map(|i| position(i).map(|p| (p, i)))
            .filter(|(p, _)| q.range.as_ref().is_none_or(|c| oracle_range(c, &p.0)))
            .collect();
        rows.sort_by(|a, b| order(&a.0, &b.0));
        if q.descending {
            rows.reverse();
        }
        if let Some(start) = &q.exclusive_start_key
            && let Some(sp) = position(start)
        {
            {
                rows.retain(|(p, _)| {
                    let o = order(p, &sp);
                    if q.descending {
                        o == Ordering::Less
                    } else {
                        o == Ordering::Greater
                    }
                });
            }
        }
        let mut page = Page::default();
        for (evaluated, (_, item)) in rows.iter().enumerate() {
            let visible = match spec.projected {
                Some(names) => pick_attrs(item, names),
                None => (*item).clone(),
            };
            if q.filter.as_ref().is_none_or(|f| oracle_filter(f, &visible)) {
                page.items.push(match &q.projection {
                    Some(names) => pick_attrs(
                        &visible,
                        &names.iter().map(String::as_str).collect::<Vec<_>>(),
                    ),
                    None => visible,
                });
            }
            if q.limit
                .is_some_and(|l| usize::try_from(l).is_ok_and(|l| l == evaluated + 1))
            {
                let mut names = vec!["hashKey", "rangeKey"];
                if spec.name.is_some() {
                    names.extend([spec.hash, spec.range]);
                }
                page.last_evaluated_key = Some(pick_attrs(item, &names));
                break;
            }
        }
        page
    }
}

/// The random generator of one sequence's operations.
struct Gen<'a> {
    rng: &'a mut Rng,
    seq: u64,
}

impl Gen<'_> {
    fn hash(&mut self) -> String {
        format!("s{}-h{}", self.seq, self.rng.below(2))
    }

    fn group(&mut self) -> String {
        format!("s{}-g{}", self.seq, self.rng.below(2))
    }

    fn number(&mut self) -> AttributeValue {
        n(self.rng.pick(NUMBERS))
    }

    fn item(&mut self) -> Item {
        let mut it = key(&self.hash(), self.rng.pick(RANGES));
        if self.rng.chance(80) {
            it.insert("group".into(), s(&self.group()));
        }
        if self.rng.chance(75) {
            it.insert("score".into(), self.number());
        }
        if self.rng.chance(75) {
            it.insert("name".into(), s(self.rng.pick(NAMES)));
        }
        if self.rng.chance(70) {
            it.insert("created".into(), n(self.rng.below(4)));
        }
        if self.rng.chance(70) {
            it.insert("kind".into(), s(self.rng.pick(KINDS)));
        }
        if self.rng.chance(50) {
            it.insert("v".into(), self.number());
        }
        it
    }

    fn key(&mut self) -> Item {
        key(&self.hash(), self.rng.pick(RANGES))
    }

    fn range_value(&mut self, spec: &IndexSpec) -> AttributeValue {
        if spec.numeric_range {
            self.number()
        } else if spec.range == "name" {
            s(self.rng.pick(["a", "al", "b", "bo", "cz", "A"]))
        } else {
            s(self.rng.pick(["a", "ab", "b", "bz", "c", "Z", "é", "aa"]))
        }
    }

    fn range(&mut self, spec: &IndexSpec) -> Option<RangeCondition> {
        Some(match self.rng.below(8) {
            0 => return None,
            1 => RangeCondition::Eq(self.range_value(spec)),
            2 => RangeCondition::Lt(self.range_value(spec)),
            3 => RangeCondition::Le(self.range_value(spec)),
            4 => RangeCondition::Gt(self.range_value(spec)),
            5 => RangeCondition::Ge(self.range_value(spec)),
            6 => {
                let (a, b) = (self.range_value(spec), self.range_value(spec));
                match cmp_values(&a, &b) {
                    Some(Ordering::Greater) => RangeCondition::Between(b, a),
                    _ => RangeCondition::Between(a, b),
                }
            }
            _ if spec.numeric_range => RangeCondition::Ge(self.range_value(spec)),
            _ => RangeCondition::BeginsWith(s(self.rng.pick(["a", "ab", "b", "é", "x", "A"]))),
        })
    }

    /// A filter over attributes the index projects and does not key on.
    #[allow(clippy::too_many_lines)] // one arm per kind of filter
    fn filter(&mut self, spec: &IndexSpec, depth: usize) -> Filter {
        let attrs: Vec<&str> = [
            "kind", "v", "name", "score", "created", "hashKey", "rangeKey", "group",
        ]
        .into_iter()
        .filter(|a| *a != spec.hash && *a != spec.range)
        .filter(|a| spec.projected.is_none_or(|p| p.contains(a)))
        .collect();
        let attribute = (self.rng.pick(attrs)).to_owned();
        let value = |g: &mut Self, attribute: &str| match attribute {
            "v" | "score" => g.number(),
            "created" => n(g.rng.below(4)),
            "kind" => s(g.rng.pick(KINDS)),
            "name" => s(g.rng.pick(NAMES)),
            _ => s(g.rng.pick(["s0-h0", "a", "b", "x"])),
        };
        match self.rng.below(if depth > 0 { 8 } else { 11 }) {
            0 => Filter::Exists(attribute),
            1 => Filter::NotExists(attribute),
            2 => {
                let (a, b) = (value(self, &attribute), value(self, &attribute));
                match cmp_values(&a, &b) {
                    Some(Ordering::Greater) => Filter::Between {
                        attribute,
                        low: b,
                        high: a,
                    },
                    _ => Filter::Between {
                        attribute,
                        low: a,
                        high: b,
                    },
                }
            }
            3 => Filter::In {
                values: vec![value(self, &attribute), value(self, &attribute)],
                attribute,
            },
            4 if matches!(value(self, &attribute), AttributeValue::S(_)) => Filter::BeginsWith {
                prefix: s(self.rng.pick(["a", "x", "b", "s"])),
                attribute,
            },
            8 => Filter::And(vec![
                self.filter(spec, depth + 1),
                self.filter(spec, depth + 1),
            ]),
            9 => Filter::Or(vec![
                self.filter(spec, depth + 1),
                self.filter(spec, depth + 1),
            ]),
            10 => Filter::Not(Box::new(self.filter(spec, depth + 1))),
            _ => {
                let op = self.rng.pick([
                    Comparison::Eq,
                    Comparison::Ne,
                    Comparison::Lt,
                    Comparison::Le,
                    Comparison::Gt,
                    Comparison::Ge,
                ]);
                let value = value(self, &attribute);
                Filter::Compare {
                    attribute,
                    op,
                    value,
                }
            }
        }
    }

    fn query(&mut self) -> (usize, QueryPage) {
        let which = self.rng.below(INDEXES.len());
        let spec = &INDEXES[which];
        let hash = if spec.hash == "group" {
            self.group()
        } else {
            self.hash()
        };
        let mut q = QueryPage::new(s(&hash)).descending(self.rng.chance(40));
        if let Some(name) = spec.name {
            q = q.index(name);
        }
        if let Some(c) = self.range(spec) {
            q = q.range(c);
        }
        if self.rng.chance(50) {
            q = q.filter(self.filter(spec, 0));
        }
        if self.rng.chance(70) {
            q = q.limit(u32::try_from(1 + self.rng.below(4)).unwrap_or(1));
        }
        if self.rng.chance(20) {
            let names: &[&str] = spec
                .projected
                .unwrap_or(&["hashKey", "rangeKey", "kind", "v", "created"]);
            let picked = names[self.rng.below(names.len())];
            q = if picked == "rangeKey" {
                q.projection([picked])
            } else {
                q.projection([picked, "rangeKey"])
            };
        }
        (which, q)
    }
}

/// Every page of a query on one store.
async fn pages<S: Store>(store: &S, q: &QueryPage) -> Result<Vec<Page>, String> {
    let mut out = Vec::new();
    let mut q = q.clone();
    loop {
        let page = store.query_page(&q).await.map_err(|e| format!("{e:?}"))?;
        let next = page.last_evaluated_key.clone();
        out.push(page);
        match next {
            Some(k) if out.len() < 1000 => q = q.start_after(Some(k)),
            Some(_) => return Err("pagination does not end".into()),
            None => return Ok(out),
        }
    }
}

fn oracle_pages(oracle: &Oracle, spec: &IndexSpec, q: &QueryPage) -> Vec<Page> {
    let mut out = Vec::new();
    let mut q = q.clone();
    loop {
        let page = oracle.query(spec, &q);
        let next = page.last_evaluated_key.clone();
        out.push(page);
        match next {
            Some(k) => q = q.start_after(Some(k)),
            None => return out,
        }
    }
}

/// What must agree between the memory store and `DynamoDB` on a GSI query. `DynamoDB` does not
/// define the order of index items with equal index range keys (`DynamoDB` Local keeps them in
/// insertion order; the memory store orders them by table key), so within such ties items are
/// compared as sets; everything else must be identical: the items, the range-key order, the
/// number of pages, the range key at each page boundary, and (without a filter) the page sizes.
#[derive(Debug, PartialEq)]
struct TieInsensitive {
    items: Vec<Item>,
    pages: usize,
    boundaries: Vec<Option<AttributeValue>>,
    sizes: Option<Vec<usize>>,
}

fn tie_insensitive(pages: &[Page], spec: &IndexSpec, q: &QueryPage) -> TieInsensitive {
    let mut items: Vec<Item> = pages.iter().flat_map(|p| p.items.clone()).collect();
    let tie_key = |i: &Item| (text(i, "hashKey"), text(i, "rangeKey"), format!("{i:?}"));
    if items.iter().all(|i| i.contains_key(spec.range)) {
        // Sort each run of equal range keys by table key.
        let mut start = 0;
        while start < items.len() {
            let mut end = start + 1;
            while end < items.len()
                && items[end]
                    .get(spec.range)
                    .zip(items[start].get(spec.range))
                    .is_some_and(|(a, b)| eq_values(a, b))
            {
                end += 1;
            }
            items[start..end].sort_by_key(tie_key);
            start = end;
        }
    } else {
        items.sort_by_key(tie_key);
    }
    TieInsensitive {
        items,
        pages: pages.len(),
        boundaries: pages
            .iter()
            .map(|p| {
                p.last_evaluated_key
                    .as_ref()
                    .and_then(|k| k.get(spec.range).cloned())
            })
            .collect(),
        sizes: q
            .filter
            .is_none()
            .then(|| pages.iter().map(|p| p.items.len()).collect()),
    }
}

/// The pages without a final empty page: `DynamoDB` Local omits the page key (and so the
/// trailing empty page) when the last item evaluated sits exactly on the far, inclusive bound of
/// the key condition (`<=`, `>=` descending, `BETWEEN`), since nothing further can match; the
/// memory store, like the `DynamoDB` documentation, returns a page key whenever the limit is
/// reached. Both page to the same items.
fn without_trailing_empty_page(pages: &[Page]) -> Vec<Page> {
    let mut pages = pages.to_vec();
    if pages.len() > 1
        && pages
            .last()
            .is_some_and(|p| p.items.is_empty() && p.last_evaluated_key.is_none())
    {
        pages.pop();
        if let Some(last) = pages.last_mut() {
            last.last_evaluated_key = None;
        }
    }
    pages
}

/// Compares `DynamoDB`'s pages with the expected ones: exactly on the table, up to the order
/// of ties on a GSI.
fn assert_same_pages(got: &[Page], expected: &[Page], spec: &IndexSpec, q: &QueryPage, ctx: &str) {
    let (got, expected) = (
        &without_trailing_empty_page(got),
        &without_trailing_empty_page(expected),
    );
    if spec.name.is_none() {
        assert_eq!(got, expected, "{ctx}: {q:?} (DynamoDB vs oracle)");
    } else {
        assert_eq!(
            tie_insensitive(got, spec, q),
            tie_insensitive(expected, spec, q),
            "{ctx}: {q:?} (DynamoDB vs oracle, up to the order of ties)"
        );
    }
}

/// The outcome of a conditional write, as compared across stores.
fn outcome(r: Result<(), entity_manager::store::StoreError>) -> Result<(), String> {
    r.map_err(|e| {
        if e.is_conditional_check_failed() {
            "conditional check failed".to_owned()
        } else {
            format!("{e:?}")
        }
    })
}

/// Runs one sequence on the oracle, the memory store and maybe `DynamoDB`, comparing as it goes.
#[allow(clippy::too_many_lines)] // one arm per kind of operation
async fn run_sequence<D: Store>(seq: u64, memory: &MemoryStore, dynamo: Option<&D>) -> TestResult {
    let mut rng = Rng(SEED + seq);
    let mut g = Gen { rng: &mut rng, seq };
    let mut oracle = Oracle::default();
    for step in 0..STEPS {
        let ctx = format!("sequence {seq} (seed {:#x}) step {step}", SEED + seq);
        match g.rng.below(100) {
            0..=39 => {
                let it = g.item();
                let expect =
                    g.rng
                        .pick([Expect::Any, Expect::Any, Expect::Absent, Expect::Present]);
                let model = match expect {
                    Expect::Any => Ok(()),
                    Expect::Absent if !oracle.exists(&it) => Ok(()),
                    Expect::Present if oracle.exists(&it) => Ok(()),
                    _ => Err("conditional check failed".to_owned()),
                };
                if model.is_ok() {
                    oracle.put(it.clone());
                }
                assert_eq!(
                    outcome(memory.put_item(it.clone(), expect.clone()).await),
                    model,
                    "{ctx}: put {it:?} {expect:?} (memory)"
                );
                if let Some(d) = dynamo {
                    assert_eq!(
                        outcome(d.put_item(it.clone(), expect.clone()).await),
                        model,
                        "{ctx}: put {it:?} {expect:?} (DynamoDB)"
                    );
                }
            }
            40..=49 => {
                let k = g.key();
                let expect = g.rng.pick([Expect::Any, Expect::Present]);
                let model = if expect == Expect::Present && !oracle.exists(&k) {
                    Err("conditional check failed".to_owned())
                } else {
                    Ok(())
                };
                if model.is_ok() {
                    oracle.delete(&k);
                }
                assert_eq!(
                    outcome(memory.delete_item(&k, expect.clone()).await),
                    model,
                    "{ctx}: delete (memory)"
                );
                if let Some(d) = dynamo {
                    assert_eq!(
                        outcome(d.delete_item(&k, expect).await),
                        model,
                        "{ctx}: delete (DynamoDB)"
                    );
                }
            }
            50..=57 => {
                let mut writes = Vec::new();
                let mut seen = Vec::new();
                for _ in 0..=g.rng.below(6) {
                    let w = if g.rng.chance(70) {
                        WriteRequest::Put(g.item())
                    } else {
                        WriteRequest::Delete(g.key())
                    };
                    let (WriteRequest::Put(i) | WriteRequest::Delete(i)) = &w;
                    let id = (text(i, "hashKey"), text(i, "rangeKey"));
                    if !seen.contains(&id) {
                        seen.push(id);
                        writes.push(w);
                    }
                }
                for w in &writes {
                    match w {
                        WriteRequest::Put(i) => oracle.put(i.clone()),
                        WriteRequest::Delete(k) => oracle.delete(k),
                    }
                }
                memory.batch_write(writes.clone()).await?;
                if let Some(d) = dynamo {
                    d.batch_write(writes).await?;
                }
            }
            58..=62 => {
                let k = g.key();
                let model = oracle
                    .items
                    .get(&(text(&k, "hashKey"), text(&k, "rangeKey")))
                    .cloned();
                assert_eq!(
                    memory.get_item(&k, None).await?,
                    model,
                    "{ctx}: get (memory)"
                );
                if let Some(d) = dynamo {
                    assert_eq!(d.get_item(&k, None).await?, model, "{ctx}: get (DynamoDB)");
                }
            }
            _ => {
                let (which, q) = g.query();
                let expected = oracle_pages(&oracle, &INDEXES[which], &q);
                let got = pages(memory, &q)
                    .await
                    .map_err(|e| format!("{ctx}: {q:?} (memory): {e}"))?;
                assert_eq!(got, expected, "{ctx}: {q:?} (memory vs oracle)");
                if let Some(d) = dynamo {
                    let got = pages(d, &q)
                        .await
                        .map_err(|e| format!("{ctx}: {q:?} (DynamoDB): {e}"))?;
                    assert_same_pages(&got, &expected, &INDEXES[which], &q, &ctx);
                }
            }
        }
    }
    // Finally every partition of every index, unlimited and paged by 2, in both directions.
    for spec in &INDEXES {
        for h in 0..2 {
            let hash = if spec.hash == "group" {
                format!("s{seq}-g{h}")
            } else {
                format!("s{seq}-h{h}")
            };
            for (limit, descending) in [(None, false), (Some(2), true)] {
                let mut q = QueryPage::new(s(&hash)).descending(descending);
                q.limit = limit;
                if let Some(name) = spec.name {
                    q = q.index(name);
                }
                let expected = oracle_pages(&oracle, spec, &q);
                assert_eq!(
                    pages(memory, &q).await?,
                    expected,
                    "sequence {seq}: final {q:?} (memory)"
                );
                if let Some(d) = dynamo {
                    let got = pages(d, &q).await?;
                    assert_same_pages(&got, &expected, spec, &q, &format!("sequence {seq}: final"));
                }
            }
        }
    }
    Ok(())
}

#[tokio::test]
async fn random_sequences_agree_with_the_oracle_and_dynamodb() -> TestResult {
    let dynamo = store_support::dynamo_store("differential", definition()).await?;
    if dynamo.is_none() {
        eprintln!("running the differential test against the oracle and the memory store only");
    }
    for seq in 0..SEQUENCES {
        // A fresh memory store per sequence; DynamoDB shares one table, partitioned by sequence.
        let memory = MemoryStore::new(definition());
        run_sequence(seq, &memory, dynamo.as_ref()).await?;
    }
    if let Some(d) = dynamo {
        d.delete_table().await?;
    }
    Ok(())
}
