//! The written contract (as `live.rs`) on classic indexes and the table: a query of one source
//! (exact mode) paged while records are inserted, deleted and moved (new name, score or tag: a
//! new place in every index ordered by them) between its pages.

use std::collections::{HashMap, HashSet};

use entity_manager::store::{Expect, Store};
use entity_manager::{AttributeValue, Item, Schema};
use proptest::prelude::*;

use super::BoxError;
use super::classic::{Ask, Rec, SOURCES, Stored};
use super::live::{Writer, drive, judge};
use super::model::Val;
use super::paging::{Key, key};

/// A write between two pages.
#[derive(Clone, Debug)]
pub(crate) enum Write {
    /// A new record (its id made unique).
    Insert(Rec),
    /// Deletes the record at this position among those stored (modulo their number).
    Delete(usize),
    /// Gives the record at this position the name, score and tag of `Rec` (same table keys).
    Move(usize, Rec),
}

fn write() -> impl Strategy<Value = Write> {
    prop_oneof![
        super::classic::rec().prop_map(Write::Insert),
        (0_usize..200).prop_map(Write::Delete),
        (0_usize..200, super::classic::rec()).prop_map(|(i, r)| Write::Move(i, r)),
    ]
}

/// A case: bumps, records, one query (not a union), the writes after each page.
pub(crate) type LiveCase = (Vec<(u64, u8, u8)>, Vec<Rec>, Ask, Vec<Vec<Write>>);

pub(crate) fn case() -> impl Strategy<Value = LiveCase> {
    (
        super::multi::bumps(),
        proptest::collection::vec(super::classic::rec(), 0..60),
        // exact mode, whole items (the model reads the group and the note off returned items)
        super::classic::ask()
            .prop_filter("exact mode", |a| !a.is_union())
            .prop_map(|a| Ask {
                projection: false,
                ..a
            }),
        proptest::collection::vec(proptest::collection::vec(write(), 0..4), 0..12),
    )
}

/// The model's view of a stored or returned item.
fn view(item: &Item) -> Stored {
    let mut values = HashMap::new();
    for (_, attr, _) in SOURCES {
        match item.get(*attr) {
            Some(AttributeValue::S(s)) => {
                values.insert((*attr).to_owned(), Val::S(s.clone()));
            }
            Some(AttributeValue::N(n)) => {
                values.insert((*attr).to_owned(), Val::N(n.clone()));
            }
            _ => {}
        }
    }
    let text = |name: &str| match item.get(name) {
        Some(AttributeValue::S(s)) => Some(s.clone()),
        _ => None,
    };
    Stored {
        key: key(item),
        created: match item.get("created") {
            Some(AttributeValue::N(n)) => n.parse().unwrap_or(0),
            _ => 0,
        },
        group: u8::from(text("group").as_deref() == Some("g1")),
        note: text("note"),
        values,
    }
}

struct ClassicWriter<'w, S> {
    store: &'w S,
    schema: &'w Schema,
    writes: &'w [Vec<Write>],
    current: Vec<(Key, Item)>,
    touched: HashSet<Key>,
    fresh: u16,
}

impl<S: Store> Writer for ClassicWriter<'_, S> {
    async fn write(&mut self, step: usize) -> Result<(), String> {
        let e = |x: &dyn std::fmt::Display| x.to_string();
        let user = self.schema.entity("user").map_err(|x| e(&x))?;
        for w in self.writes.get(step).into_iter().flatten() {
            match w {
                Write::Insert(r) => {
                    self.fresh += 1;
                    let mut item = r.item().map_err(|x| e(&x))?;
                    item.insert(
                        "id".into(),
                        AttributeValue::S(format!("n{:03}", self.fresh)),
                    );
                    let keyed = user.add_keys(&item).map_err(|x| e(&x))?;
                    self.store
                        .put_item(keyed.clone(), Expect::Any)
                        .await
                        .map_err(|x| e(&x))?;
                    self.touched.insert(key(&keyed));
                    self.current.push((key(&keyed), keyed));
                }
                Write::Delete(i) if !self.current.is_empty() => {
                    let (k, _) = self.current.remove(i % self.current.len());
                    let table_key: Item = [
                        ("hashKey".to_owned(), AttributeValue::S(k.0.clone())),
                        ("rangeKey".to_owned(), AttributeValue::S(k.1.clone())),
                    ]
                    .into_iter()
                    .collect::<HashMap<_, _>>()
                    .into();
                    self.store
                        .delete_item(&table_key, Expect::Any)
                        .await
                        .map_err(|x| e(&x))?;
                    self.touched.insert(k);
                }
                Write::Move(i, moved) if !self.current.is_empty() => {
                    let at = i % self.current.len();
                    let (record, old) = &self.current[at];
                    // the same record (id, created, group, note), new name, score and tag
                    let mut new = moved.item().map_err(|x| e(&x))?;
                    for kept in ["id", "created", "group", "note"] {
                        match old.get(kept) {
                            Some(v) => {
                                new.insert(kept.into(), v.clone());
                            }
                            None => {
                                new.remove(kept);
                            }
                        }
                    }
                    let keyed = user.add_keys(&new).map_err(|x| e(&x))?;
                    if key(&keyed) != *record {
                        return Err(format!("a move changed the table keys of {record:?}"));
                    }
                    self.store
                        .put_item(keyed.clone(), Expect::Any)
                        .await
                        .map_err(|x| e(&x))?;
                    self.touched.insert(record.clone());
                    self.current[at].1 = keyed;
                }
                Write::Delete(_) | Write::Move(..) => {}
            }
        }
        Ok(())
    }
}

/// Runs a live case on `store` (an empty table of the schema of `bumps`): the number of
/// records the query selected at the start.
pub(crate) async fn run<S: Store>(
    store: &S,
    schema: &Schema,
    case: &LiveCase,
) -> Result<usize, BoxError> {
    let (bumps, recs, ask, writes) = case;
    let user = schema.entity("user")?;
    let mut latest: Vec<&Rec> = Vec::new();
    for r in recs {
        latest.retain(|o| o.id != r.id);
        latest.push(r);
    }
    let mut current = Vec::new();
    let mut stored = Vec::new();
    for r in latest {
        let keyed = user.add_keys(&r.item()?)?;
        store.put_item(keyed.clone(), Expect::Any).await?;
        stored.push(Stored::of(r, &keyed));
        current.push((key(&keyed), keyed));
    }
    // the query's conditions take their values from the records at the start
    let q = ask.query(store, schema, &stored)?;
    let conditions = ask.sources(&stored);
    let selects = |item: &Item| {
        ask.expected_with(&[view(item)], bumps, &conditions)
            .into_iter()
            .next()
    };
    let initially: Vec<Key> = current
        .iter()
        .filter(|(_, item)| selects(item).is_some())
        .map(|(k, _)| k.clone())
        .collect();
    let most = initially.len() + writes.iter().map(Vec::len).sum::<usize>() + 2;
    let mut between_pages = ClassicWriter {
        store,
        schema,
        writes,
        current,
        touched: HashSet::new(),
        fresh: 0,
    };
    let returned = drive(&q, ask.way, ask.limit, most, &mut between_pages).await?;
    judge(
        &returned,
        selects,
        ask.descending,
        &initially,
        &between_pages.touched,
    )?;
    Ok(initially.len())
}
