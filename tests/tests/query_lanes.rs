//! When a lane is done: every condition kind on every sort attribute position of a four-attribute
//! key, in both directions, paged by tokens, as a stream of pages and as a stream of items,
//! against a brute-force filter and sort of the records, on both stores.
//!
//! The engine reads a lane that it has read through a sort tuple inside a value of the
//! conditioned attribute by narrowing on the tuple's deepest given attribute (`(v, w, x)` then
//! `(v, w, > x)`); such a read covers the value only where that prefix is the conditioned
//! attribute alone. A lane whose user condition ends at `v` (`le(v)`, `between(_, v)`,
//! ascending) is done only once it is read through *every* tuple of `v`: before the fix it was
//! taken as done after the deepest read ran out, and the tuples `(v, w, > x')` or `(v, > w, …)`
//! were lost with no next token (issue 46; `the_smallest_lost_record_case`).
#![allow(clippy::struct_field_names)] // fields are named after their attributes

mod store_support;

use entity_manager::query::TryStreamExt as _;
use entity_manager::query::untyped::MultiQuery;
use entity_manager::store::{MemoryStore, RangeCondition, Store, TableDefinition};
use entity_manager::{AttributeValue, Entity, EntityExt as _, Item, Table};
use futures::StreamExt as _;
use serde::{Deserialize, Serialize};
use store_support::{TestResult, n, s, text};

#[derive(Table)]
#[table(entities(Deep))]
struct Deeps;

/// A record whose index sorts by four attributes: numbers and strings, so that every comparison
/// kind (and `begins_with`) applies somewhere.
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Deeps, unique = id, timestamp = created)]
#[shard_bumps(bumps = [bump(timestamp = 0, char_bits = 1, chars = 1)])]
#[index(name = "deep", hash = [group], range = [a, b, c, d], sharded)]
struct Deep {
    #[transcode("string")]
    id: String,
    #[transcode("timestamp")]
    created: u64,
    group: String,
    a: i64,
    b: String,
    c: i64,
    d: String,
}

/// One sort attribute's value, in the attribute's own order (numbers numerically, strings by
/// bytes: the test's values are ASCII).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum V {
    N(i64),
    S(String),
}

impl V {
    fn value(&self) -> AttributeValue {
        match self {
            Self::N(x) => n(x),
            Self::S(x) => s(x),
        }
    }
}

/// The values each attribute takes: two numbers for `a` and `c`, a string and one that starts
/// with it for `b` and `d`.
fn domain(position: usize) -> [V; 2] {
    match position {
        0 => [V::N(0), V::N(1)],
        1 => [V::S("p".into()), V::S("pq".into())],
        2 => [V::N(-1), V::N(1)],
        _ => [V::S("y".into()), V::S("yz".into())],
    }
}

fn tuple(deep: &Deep) -> [V; 4] {
    [
        V::N(deep.a),
        V::S(deep.b.clone()),
        V::N(deep.c),
        V::S(deep.d.clone()),
    ]
}

/// Every tuple of the domain once (16 records, no ties: the order is the tuples').
fn records() -> Vec<Deep> {
    let mut all = Vec::new();
    for i in 0..16_u32 {
        let pick = |p: usize| domain(p)[usize::from((i >> (3 - p)) & 1 == 1)].clone();
        let (V::N(a), V::S(b), V::N(c), V::S(d)) = (pick(0), pick(1), pick(2), pick(3)) else {
            unreachable!("the domain's kinds are fixed")
        };
        all.push(Deep {
            id: format!("r{i:02}"),
            created: u64::from(i) * 7,
            group: "g".into(),
            a,
            b,
            c,
            d,
        });
    }
    all
}

/// A condition on one sort attribute, evaluated apart from the code under test.
#[derive(Clone, Debug)]
enum Cond {
    Eq(V),
    Lt(V),
    Le(V),
    Gt(V),
    Ge(V),
    Between(V, V),
    BeginsWith(String),
}

impl Cond {
    fn holds(&self, x: &V) -> bool {
        match self {
            Self::Eq(v) => x == v,
            Self::Lt(v) => x < v,
            Self::Le(v) => x <= v,
            Self::Gt(v) => x > v,
            Self::Ge(v) => x >= v,
            Self::Between(lo, hi) => lo <= x && x <= hi,
            Self::BeginsWith(p) => matches!(x, V::S(x) if x.starts_with(p.as_str())),
        }
    }

    fn condition(&self) -> RangeCondition {
        match self {
            Self::Eq(v) => RangeCondition::Eq(v.value()),
            Self::Lt(v) => RangeCondition::Lt(v.value()),
            Self::Le(v) => RangeCondition::Le(v.value()),
            Self::Gt(v) => RangeCondition::Gt(v.value()),
            Self::Ge(v) => RangeCondition::Ge(v.value()),
            Self::Between(lo, hi) => RangeCondition::Between(lo.value(), hi.value()),
            Self::BeginsWith(p) => RangeCondition::BeginsWith(s(p)),
        }
    }
}

/// Every condition kind on the attribute at `position`, with each value of its domain.
fn conditions(position: usize) -> Vec<Cond> {
    let [lo, hi] = domain(position);
    let mut all = Vec::new();
    for v in [&lo, &hi] {
        all.extend([
            Cond::Eq(v.clone()),
            Cond::Lt(v.clone()),
            Cond::Le(v.clone()),
            Cond::Gt(v.clone()),
            Cond::Ge(v.clone()),
        ]);
    }
    all.extend([
        Cond::Between(lo.clone(), lo.clone()),
        Cond::Between(lo.clone(), hi.clone()),
        Cond::Between(hi.clone(), hi.clone()),
    ]);
    if let V::S(p) = &lo {
        all.push(Cond::BeginsWith(p.clone()));
        all.push(Cond::BeginsWith(format!("{p}q")));
    }
    all
}

/// A query: an equality prefix on the attributes before `cond`'s, the condition, an order and
/// a limit.
#[derive(Clone, Debug)]
struct Ask {
    prefix: Vec<V>,
    cond: Option<Cond>,
    descending: bool,
    limit: usize,
}

impl Ask {
    fn query<'a, S: Store>(
        &self,
        store: &'a S,
    ) -> Result<MultiQuery<'a, S>, Box<dyn std::error::Error>> {
        let mut q = MultiQuery::new(store, Deep::schema()?, "deep")
            .hash([s("g")])
            .shards_between(0, 1_000)
            .descending(self.descending)
            .limit(self.limit)
            .page_size(2)
            .throttle(2);
        if !self.prefix.is_empty() {
            q = q.range_prefix(self.prefix.iter().map(V::value));
        }
        if let Some(cond) = &self.cond {
            q = q.range(cond.condition());
        }
        Ok(q)
    }

    /// The ids the query selects, in its order.
    fn expected(&self, records: &[Deep]) -> Vec<String> {
        let mut hits: Vec<([V; 4], String)> = records
            .iter()
            .map(|r| (tuple(r), r.id.clone()))
            .filter(|(t, _)| {
                t.iter().zip(&self.prefix).all(|(x, p)| x == p)
                    && self
                        .cond
                        .as_ref()
                        .is_none_or(|c| c.holds(&t[self.prefix.len()]))
            })
            .collect();
        hits.sort_by(|x, y| x.0.cmp(&y.0));
        if self.descending {
            hits.reverse();
        }
        hits.into_iter().map(|(_, id)| id).collect()
    }
}

/// Every query of the space: each position, each prefix before it (`all_prefixes`: every value
/// of every attribute before it; else the first values), each condition, each direction.
fn asks(all_prefixes: bool, limits: &[usize]) -> Vec<Ask> {
    let mut asks = Vec::new();
    for position in 0..4 {
        let mut prefixes: Vec<Vec<V>> = vec![Vec::new()];
        for p in 0..position {
            let values = if all_prefixes {
                domain(p).to_vec()
            } else {
                vec![domain(p)[0].clone()]
            };
            prefixes = prefixes
                .into_iter()
                .flat_map(|prefix| {
                    values.iter().map(move |v| {
                        let mut longer = prefix.clone();
                        longer.push(v.clone());
                        longer
                    })
                })
                .collect();
        }
        let mut conds: Vec<Option<Cond>> = conditions(position).into_iter().map(Some).collect();
        conds.push(None);
        for prefix in &prefixes {
            for cond in &conds {
                for descending in [false, true] {
                    for &limit in limits {
                        asks.push(Ask {
                            prefix: prefix.clone(),
                            cond: cond.clone(),
                            descending,
                            limit,
                        });
                    }
                }
            }
        }
    }
    asks
}

fn ids(items: &[Item]) -> Vec<String> {
    items.iter().map(|i| text(i, "id")).collect()
}

/// Pages `ask` by tokens (each page full but the last, the last without a token), as a stream
/// of pages and as a stream of items: each gives exactly the expected ids in order.
async fn check<S: Store>(store: &S, records: &[Deep], ask: &Ask) -> TestResult {
    let want = ask.expected(records);
    let q = ask.query(store)?;
    let mut got = Vec::new();
    let mut token: Option<String> = None;
    for _ in 0..=want.len() + 1 {
        let page = q.page(token.as_deref()).await?;
        let remaining = want.len() - got.len().min(want.len());
        assert_eq!(
            page.items.len(),
            ask.limit.min(remaining),
            "page size, {ask:?}"
        );
        got.extend(ids(&page.items));
        match page.next {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    assert_eq!(got, want, "by tokens, {ask:?}");
    let paged: Vec<_> = q.pages(None).collect().await;
    let mut by_pages = Vec::new();
    for page in paged {
        by_pages.extend(ids(&page?.items));
    }
    assert_eq!(by_pages, want, "as pages, {ask:?}");
    let streamed: Vec<Item> = q.stream().try_collect().await?;
    assert_eq!(ids(&streamed), want, "as a stream, {ask:?}");
    Ok(())
}

async fn load<S: Store>(store: &S, records: &[Deep]) -> TestResult {
    for r in records {
        r.put(store).await?;
    }
    Ok(())
}

fn definition() -> Result<TableDefinition, Box<dyn std::error::Error>> {
    Ok(TableDefinition::from_schema(Deeps::schema()?)?)
}

/// The smallest case found (two records; before the fix the second was never returned): an
/// ascending query with an upper bound on the first sort attribute, limit 1, whose first page
/// ends inside the bound's value at a tuple with more attributes after it.
#[tokio::test]
async fn the_smallest_lost_record_case() -> TestResult {
    let store = MemoryStore::new(definition()?);
    let record = |id: &str, c: i64| Deep {
        id: id.into(),
        created: 0,
        group: "g".into(),
        a: 0,
        b: "p".into(),
        c,
        d: "y".into(),
    };
    let records = [record("r41", 0), record("r31", 1)];
    load(&store, &records).await?;
    for cond in [
        Cond::Le(V::N(0)),
        Cond::Between(V::N(0), V::N(0)),
        Cond::Lt(V::N(1)),
    ] {
        for limit in [1, 2] {
            let ask = Ask {
                prefix: Vec::new(),
                cond: Some(cond.clone()),
                descending: false,
                limit,
            };
            assert_eq!(ask.expected(&records), ["r41", "r31"]);
            check(&store, &records, &ask).await?;
        }
    }
    Ok(())
}

/// Every condition kind on every position, every prefix, both directions, limits 1 to 3 and
/// one larger than the records: exact on `MemoryStore`.
#[tokio::test]
async fn every_condition_on_every_position_in_memory() -> TestResult {
    let store = MemoryStore::new(definition()?);
    let records = records();
    load(&store, &records).await?;
    let asks = asks(true, &[1, 2, 3, 20]);
    for ask in &asks {
        check(&store, &records, ask).await?;
    }
    println!("{} queries exact on MemoryStore", asks.len());
    Ok(())
}

/// The same space with the first value of each prefix attribute and limit 1, on
/// `DynamoDB` Local.
#[tokio::test]
async fn every_condition_on_every_position_in_dynamodb() -> TestResult {
    store_support::on_dynamodb("query-lanes", definition()?, |store| async move {
        let records = records();
        load(&store, &records).await?;
        let asks = asks(false, &[1]);
        for ask in &asks {
            check(&store, &records, ask).await?;
        }
        println!("{} queries exact on DynamoDB Local", asks.len());
        Ok(())
    })
    .await
}
