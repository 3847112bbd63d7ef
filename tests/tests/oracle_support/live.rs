//! The oracle while the table is written (PRODUCT.md §13, the paging guide's "While the table
//! is written"): a multi-attribute query paged by tokens, by `pages` or as a stream while
//! records are inserted, deleted and moved (their sort values changed) between its pages, behind
//! and ahead of its position. Checked, from the records' histories alone:
//!
//! - every returned item is a version of its record the query selects, and the items come in
//!   the query's order (each after the one before it);
//! - no record is returned twice, except one moved after it was returned (met again at its new
//!   place);
//! - every record that exists, unchanged, for the whole paging and is selected is returned
//!   exactly once.

use std::collections::{HashMap, HashSet};
use std::pin::pin;

use entity_manager::store::{Expect, Store};
use entity_manager::{AttributeValue, Item, Schema};
use futures::StreamExt as _;
use proptest::prelude::*;

use super::model::{self, Hit, Stored, Val};
use super::multi::{Ask, Rec, Shape, TOKENS};
use super::paging::{Key, Paged, key};
use super::{BoxError, Way};

/// A write between two pages.
#[derive(Clone, Debug)]
pub(crate) enum Write {
    /// A new record (its id made unique).
    Insert(Rec),
    /// Deletes the record at this position among those stored (modulo their number).
    Delete(usize),
    /// Gives the record at this position new sort values (the same table keys).
    Move(usize, Vec<Option<u8>>),
}

pub(crate) fn write() -> impl Strategy<Value = Write> {
    prop_oneof![
        super::multi::rec().prop_map(Write::Insert),
        (0_usize..200).prop_map(Write::Delete),
        (0_usize..200, super::multi::sort_values()).prop_map(|(i, sort)| Write::Move(i, sort)),
    ]
}

/// The writes after each page (or each `limit` items of a stream).
pub(crate) fn writes() -> impl Strategy<Value = Vec<Vec<Write>>> {
    proptest::collection::vec(proptest::collection::vec(write(), 0..4), 0..12)
}

/// The model's view of an item as returned (or stored).
fn view(shape: &Shape, entity: usize, item: &Item) -> Stored {
    let val = |name: String| match item.get(&name) {
        Some(AttributeValue::S(s)) => Some(Val::S(s.clone())),
        Some(AttributeValue::N(n)) => Some(Val::N(n.clone())),
        _ => None,
    };
    let (hash_key, range_key) = key(item);
    Stored {
        entity,
        hash_key,
        range_key,
        partition: (0..shape.hash.len())
            .map(|i| val(format!("h{i}")))
            .collect(),
        sort: (0..shape.sort.len())
            .map(|i| val(format!("s{i}")))
            .collect(),
        visited: true,
        kept: true,
    }
}

fn entity_of(item: &Item) -> usize {
    match item.get("hashKey") {
        Some(AttributeValue::S(s)) if s.starts_with("eb!") => 1,
        _ => 0,
    }
}

/// Runs the query `ask` while applying `writes`, and checks the contract.
#[allow(clippy::too_many_lines)] // the paging, then each clause of the contract
pub(crate) async fn check<S: Store>(
    store: &S,
    schema: &Schema,
    shape: &Shape,
    recs: &[Rec],
    ask: &Ask,
    writes: &[Vec<Write>],
) -> Result<usize, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    // the records as stored now, by table keys
    let mut current: Vec<(Key, Item)> = Vec::new();
    let mut latest: Vec<&Rec> = Vec::new();
    for r in recs {
        latest.retain(|o| (o.entity, o.id) != (r.entity, r.id));
        latest.push(r);
    }
    for r in latest.iter().filter(|r| r.entity < shape.entities) {
        let keyed = schema
            .entity(TOKENS[r.entity])
            .and_then(|s| s.add_keys(&r.item(shape)))
            .map_err(|x| e(&x))?;
        store
            .put_item(keyed.clone(), Expect::Any)
            .await
            .map_err(|x| e(&x))?;
        current.push((key(&keyed), keyed));
    }
    let resolved = ask.resolve(shape, recs);
    let selection = resolved.selection(ask, shape);
    let selects = |item: &Item| -> Option<Hit> {
        let mut seen = view(shape, entity_of(item), item);
        if let (Some((from, to)), true) = (ask.window, shape.sharded) {
            seen.visited = model::visits(&seen.hash_key, &shape.bumps, from, to);
        }
        model::select(&[seen], &selection).into_iter().next()
    };
    let initially: Vec<Key> = current
        .iter()
        .filter(|(_, item)| selects(item).is_some())
        .map(|(k, _)| k.clone())
        .collect();
    let mut touched: HashSet<Key> = HashSet::new();
    let mut fresh = 0_u16;

    let q = ask.query(store, schema, &resolved).map_err(|x| e(&x))?;
    // applies the writes of step `k`
    let apply = async |k: usize,
                       current: &mut Vec<(Key, Item)>,
                       touched: &mut HashSet<Key>,
                       fresh: &mut u16|
           -> Result<(), String> {
        for w in writes.get(k).into_iter().flatten() {
            match w {
                Write::Insert(r) => {
                    *fresh += 1;
                    let mut item = r.item(shape);
                    item.insert("id".into(), AttributeValue::S(format!("n{fresh:03}")));
                    let entity = r.entity.min(shape.entities - 1);
                    let keyed = schema
                        .entity(TOKENS[entity])
                        .and_then(|s| s.add_keys(&item))
                        .map_err(|x| e(&x))?;
                    store
                        .put_item(keyed.clone(), Expect::Any)
                        .await
                        .map_err(|x| e(&x))?;
                    touched.insert(key(&keyed));
                    current.push((key(&keyed), keyed));
                }
                Write::Delete(i) if !current.is_empty() => {
                    let (k, _) = current.remove(i % current.len());
                    let table_key: Item = [
                        ("hashKey".to_owned(), AttributeValue::S(k.0.clone())),
                        ("rangeKey".to_owned(), AttributeValue::S(k.1.clone())),
                    ]
                    .into_iter()
                    .collect::<HashMap<_, _>>()
                    .into();
                    store
                        .delete_item(&table_key, Expect::Any)
                        .await
                        .map_err(|x| e(&x))?;
                    touched.insert(k);
                }
                Write::Move(i, sort) if !current.is_empty() => {
                    let at = i % current.len();
                    let item = &mut current[at].1;
                    for (j, t) in shape.sort.iter().enumerate() {
                        match sort[j] {
                            Some(v) => {
                                item.insert(
                                    format!("s{j}"),
                                    super::multi::attribute(&super::multi::value(*t, v)),
                                );
                            }
                            None => {
                                item.remove(&format!("s{j}"));
                            }
                        }
                    }
                    store
                        .put_item(item.clone(), Expect::Any)
                        .await
                        .map_err(|x| e(&x))?;
                    touched.insert(current[at].0.clone());
                }
                Write::Delete(_) | Write::Move(..) => {}
            }
        }
        Ok(())
    };
    let most = initially.len() + writes.iter().map(Vec::len).sum::<usize>() + 2;
    let mut between_pages = MultiWriter {
        apply: &apply,
        current: &mut current,
        touched: &mut touched,
        fresh: &mut fresh,
    };
    let returned = drive(&q, ask.way, ask.limit, most, &mut between_pages).await?;
    judge(&returned, selects, ask.descending, &initially, &touched)?;
    Ok(initially.len())
}

/// What applies the writes of one step, between two pages.
pub(crate) trait Writer {
    async fn write(&mut self, step: usize) -> Result<(), String>;
}

struct MultiWriter<'w, F> {
    apply: &'w F,
    current: &'w mut Vec<(Key, Item)>,
    touched: &'w mut HashSet<Key>,
    fresh: &'w mut u16,
}

impl<F> Writer for MultiWriter<'_, F>
where
    F: AsyncFn(usize, &mut Vec<(Key, Item)>, &mut HashSet<Key>, &mut u16) -> Result<(), String>,
{
    async fn write(&mut self, step: usize) -> Result<(), String> {
        (self.apply)(step, self.current, self.touched, self.fresh).await
    }
}

/// Pages `q` the way `way` says, writing between pages (after every `limit` items of a
/// stream): the items returned.
pub(crate) async fn drive<Q: Paged, W: Writer>(
    q: &Q,
    way: Way,
    limit: usize,
    most: usize,
    writer: &mut W,
) -> Result<Vec<Item>, String> {
    let mut returned: Vec<Item> = Vec::new();
    match way {
        Way::Stream => {
            let mut stream = pin!(q.lazy_items());
            let mut step = 0;
            while let Some(item) = stream.next().await {
                returned.push(item.map_err(|x| format!("stream: {x}"))?);
                if returned.len().is_multiple_of(limit) {
                    writer.write(step).await?;
                    step += 1;
                }
                if returned.len() > most {
                    return Err("the stream did not end".into());
                }
            }
        }
        Way::Pages | Way::PagesFrom(_) => {
            let mut pages = pin!(q.lazy_pages());
            let mut step = 0;
            while let Some(page) = pages.next().await {
                returned.extend(page.map_err(|x| format!("pages: {x}"))?.items);
                writer.write(step).await?;
                step += 1;
                if step > most {
                    return Err("the pages did not end".into());
                }
            }
        }
        Way::Tokens | Way::Resumed => {
            let mut token: Option<String> = None;
            for step in 0.. {
                let page = q
                    .page(token.as_deref())
                    .await
                    .map_err(|x| format!("page {step}: {x}"))?;
                returned.extend(page.items);
                writer.write(step).await?;
                match page.next {
                    Some(next) => token = Some(next),
                    None => break,
                }
                if step > most {
                    return Err("the paging did not end".into());
                }
            }
        }
    }
    Ok(returned)
}

/// The written contract, from the items returned, what selects an item (and where), the
/// records selected at the start and the records written meanwhile.
pub(crate) fn judge(
    returned: &[Item],
    selects: impl Fn(&Item) -> Option<Hit>,
    descending: bool,
    initially: &[Key],
    touched: &HashSet<Key>,
) -> Result<(), String> {
    // every item selected, in order
    let show = |items: &[Item]| {
        items
            .iter()
            .map(|i| format!("{}/{}", key(i).0, key(i).1))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut hits = Vec::new();
    for item in returned {
        let hit = selects(item)
            .ok_or_else(|| format!("{:?} returned but not selected: {item:?}", key(item)))?;
        hits.push(hit);
    }
    for (i, pair) in hits.windows(2).enumerate() {
        let step = model::order_hits(&pair[0], &pair[1]);
        let forward = if descending {
            step.is_gt()
        } else {
            step.is_lt()
        };
        if !forward {
            return Err(format!(
                "items {i} and {} out of order or equal: {:?} then {:?}\n  returned: [{}]",
                i + 1,
                pair[0],
                pair[1],
                show(returned)
            ));
        }
    }
    // no record twice, unless written after it was returned
    let mut counts: HashMap<Key, usize> = HashMap::new();
    for item in returned {
        *counts.entry(key(item)).or_default() += 1;
    }
    for (k, c) in &counts {
        if *c > 1 && !touched.contains(k) {
            return Err(format!(
                "{k:?} returned {c} times, never written\n  returned: [{}]",
                show(returned)
            ));
        }
    }
    // every record unchanged for the whole paging, once
    for k in initially {
        if !touched.contains(k) && counts.get(k).copied().unwrap_or(0) != 1 {
            return Err(format!(
                "{k:?}, unchanged for the whole paging, returned {} times\n  returned: [{}]\n  selected at the start: {initially:?}\n  written: {touched:?}",
                counts.get(k).copied().unwrap_or(0),
                show(returned)
            ));
        }
    }
    Ok(())
}

/// A case of the live variant: the multi-attribute case and the writes.
pub(crate) type LiveCase = (Shape, Vec<Rec>, Ask, Vec<Vec<Write>>);

pub(crate) fn case() -> impl Strategy<Value = LiveCase> {
    (
        super::multi::shape(),
        proptest::collection::vec(super::multi::rec(), 0..80),
        super::multi::ask(),
        writes(),
    )
}

/// Runs a live case on `store` (an empty table of the shape's schema).
pub(crate) async fn run<S: Store>(
    store: &S,
    schema: &Schema,
    case: &LiveCase,
) -> Result<usize, BoxError> {
    let (shape, recs, ask, writes) = case;
    Ok(check(store, schema, shape, recs, ask, writes).await?)
}
