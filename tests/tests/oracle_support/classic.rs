//! Classic indexes for the oracle: one entity (a TypeScript-style configuration read at run
//! time, 1 to 3 shard bumps) queried through the table (its range key, the unique value), a
//! number index (`created`, a timestamp), an int index (`score`, negatives), a sparse string
//! index (`tag`), generated range keys (`name|id`, and `score|name` whose int component is
//! transcoded to sort as a string), a sharded generated hash key (`group`), and the union of two
//! indexes sharing their range key; time windows (`shards_between`, `created_between`),
//! filters and projections.

use std::collections::HashMap;
use std::fmt::Write as _;

use entity_manager::model::ShardSpace;
use entity_manager::query::untyped::{Indexed, Query};
use entity_manager::store::{Comparison, Filter, Store};
use entity_manager::{AttributeValue, Item, Schema};
use proptest::prelude::*;
use serde_json::json;

use super::model::{Cond, Val};
use super::multi::range_condition;
use super::paging::Key;
use super::{BoxError, Way, limit, way};

/// The sources a query can read: the table, or an index (its name, range attribute, and
/// whether its hash key is the sharded `group` key).
pub(crate) const SOURCES: &[(Option<&str>, &str, bool)] = &[
    (None, "rangeKey", false),
    (Some("created"), "created", false),
    (Some("score"), "score", false),
    (Some("tag"), "tag", false),
    (Some("name"), "nameRK", false),
    (Some("scoreName"), "scoreNameRK", false),
    (Some("groupCreated"), "created", true),
];

/// The sources of a union query: two indexes of one hash key and different range keys (union
/// mode), each with a condition of its own.
const UNION: [usize; 2] = [1, 2];

/// The schema of the classic part, with these shard bumps.
pub(crate) fn schema(bumps: &[(u64, u8, u8)]) -> Result<Schema, BoxError> {
    let bumps: Vec<_> = bumps
        .iter()
        .map(|(t, b, c)| json!({ "timestamp": t, "charBits": b, "chars": c }))
        .collect();
    let config = json!({
        "hashKey": "hashKey",
        "rangeKey": "rangeKey",
        "entities": {
            "user": { "uniqueProperty": "id", "timestampProperty": "created", "shardBumps": bumps }
        },
        "generatedProperties": {
            "unsharded": { "nameRK": ["name", "id"], "scoreNameRK": ["score", "name"] },
            "sharded": { "groupPK": ["group"] }
        },
        "indexes": {
            "created": { "hashKey": "hashKey", "rangeKey": "created" },
            "score": { "hashKey": "hashKey", "rangeKey": "score" },
            "tag": { "hashKey": "hashKey", "rangeKey": "tag" },
            "name": { "hashKey": "hashKey", "rangeKey": "nameRK" },
            "scoreName": { "hashKey": "hashKey", "rangeKey": "scoreNameRK" },
            "groupCreated": { "hashKey": "groupPK", "rangeKey": "created" }
        },
        "propertyTranscodes": {
            "id": "string", "created": "timestamp", "name": "string", "group": "string",
            "score": "int", "tag": "string"
        }
    });
    Ok(Schema::from_ts_config(&config, ShardSpace::Product)?)
}

/// Names: ties, a prefix of another, a space, bytes above ASCII, a long one.
const NAMES: &[&str] = &["a", "ab", "a b", "b", "é", "z\u{1F600}"];
/// Tags (a sparse string key): non-ASCII and a value of 1,000 bytes, near the 1,024-byte limit
/// of a sort key.
fn tag(i: u8) -> String {
    match i {
        0 => "t".to_owned(),
        1 => "tä".to_owned(),
        2 => "t\u{10FFFF}".to_owned(),
        _ => "t".repeat(1_000),
    }
}
/// Notes (never a key): empty, absent, two values.
const NOTES: &[&str] = &["", "x", "xy", "y"];

/// One record.
#[derive(Clone, Debug)]
pub(crate) struct Rec {
    pub(crate) id: u8,
    pub(crate) created: u64,
    pub(crate) name: u8,
    pub(crate) group: u8,
    pub(crate) score: i64,
    pub(crate) tag: Option<u8>,
    pub(crate) note: Option<u8>,
}

pub(crate) fn rec() -> impl Strategy<Value = Rec> {
    (
        0_u8..90,
        prop_oneof![3 => 0_u64..3_000, 1 => Just(1_500_u64)],
        prop_oneof![4 => 0_u8..2, 1 => 2_u8..6],
        prop_oneof![3 => Just(0_u8), 1 => Just(1_u8)],
        -3_i64..4,
        proptest::option::weighted(0.8, 0_u8..4),
        proptest::option::weighted(0.8, 0_u8..4),
    )
        .prop_map(|(id, created, name, group, score, tag, note)| Rec {
            id,
            created,
            name,
            group,
            score,
            tag,
            note,
        })
}

impl Rec {
    pub(crate) fn item(&self) -> Result<Item, BoxError> {
        let mut value = json!({
            "id": format!("r{:02}", self.id),
            "created": self.created,
            "name": NAMES[usize::from(self.name)],
            "group": format!("g{}", self.group),
            "score": self.score,
        });
        if let Some(t) = self.tag {
            value["tag"] = json!(tag(t));
        }
        if let Some(n) = self.note {
            value["note"] = json!(NOTES[usize::from(n)]);
        }
        Ok(serde_dynamo::to_item(value)?)
    }
}

/// A record as stored, as the model sees it: table keys, creation time, group, note and the
/// value of every attribute a source orders by.
#[derive(Clone, Debug)]
pub(crate) struct Stored {
    pub(crate) key: Key,
    pub(crate) created: u64,
    pub(crate) group: u8,
    pub(crate) note: Option<String>,
    pub(crate) values: HashMap<String, Val>,
}

impl Stored {
    pub(crate) fn of(rec: &Rec, keyed: &Item) -> Self {
        let mut values = HashMap::new();
        for (_, attr, _) in SOURCES {
            match keyed.get(*attr) {
                Some(AttributeValue::S(s)) => {
                    values.insert((*attr).to_owned(), Val::S(s.clone()));
                }
                Some(AttributeValue::N(n)) => {
                    values.insert((*attr).to_owned(), Val::N(n.clone()));
                }
                _ => {}
            }
        }
        Self {
            key: super::paging::key(keyed),
            created: rec.created,
            group: rec.group,
            note: rec.note.map(|n| NOTES[usize::from(n)].to_owned()),
            values,
        }
    }
}

/// The time window of a query.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Window {
    /// `shards_between(0, 3000)`: every shard.
    All,
    /// `shards_between(from, to)`: the shards of the bumps in force then, all their records.
    Shards(u64, u64),
    /// `created_between(from, to)`: the records created then.
    Created(u64, u64),
}

fn window() -> impl Strategy<Value = Window> {
    let span = (0_u64..3_000, 0_u64..3_000).prop_map(|(a, b)| (a.min(b), a.max(b)));
    prop_oneof![
        3 => Just(Window::All),
        1 => span.clone().prop_map(|(a, b)| Window::Shards(a, b)),
        1 => span.prop_map(|(a, b)| Window::Created(a, b)),
    ]
}

/// A filter on the note (never a key attribute).
#[derive(Clone, Copy, Debug)]
pub(crate) enum NoteFilter {
    /// `note = value`
    Eq(u8),
    /// `note >= value`
    Ge(u8),
    /// `begins_with(note, "x")`
    BeginsWith,
}

impl NoteFilter {
    fn filter(self) -> Filter {
        let s = |i: u8| AttributeValue::S(NOTES[usize::from(i)].to_owned());
        match self {
            Self::Eq(v) => Filter::Compare {
                attribute: "note".into(),
                op: Comparison::Eq,
                value: s(v),
            },
            Self::Ge(v) => Filter::Compare {
                attribute: "note".into(),
                op: Comparison::Ge,
                value: s(v),
            },
            Self::BeginsWith => Filter::BeginsWith {
                attribute: "note".into(),
                prefix: AttributeValue::S("x".into()),
            },
        }
    }

    fn keeps(self, note: Option<&str>) -> bool {
        let Some(note) = note else { return false };
        match self {
            Self::Eq(v) => note == NOTES[usize::from(v)],
            Self::Ge(v) => note.as_bytes() >= NOTES[usize::from(v)].as_bytes(),
            Self::BeginsWith => note.starts_with('x'),
        }
    }
}

/// A query: its source (a position in [`SOURCES`], or the union of `created` and `score`), condition, group, window, filter, projection, order and paging.
#[derive(Clone, Debug)]
pub(crate) struct Ask {
    /// `SOURCES.len()` for the union.
    pub(crate) source: usize,
    /// Operator 0..7 (eq, lt, le, gt, ge, between, `begins_with`), two template records whose
    /// values the condition takes, and (`begins_with`) how many characters of the first.
    pub(crate) cond: Option<(u8, usize, usize, usize)>,
    /// The condition on the union's second index.
    pub(crate) cond2: Option<(u8, usize, usize, usize)>,
    pub(crate) group: u8,
    pub(crate) window: Window,
    pub(crate) filter: Option<NoteFilter>,
    pub(crate) projection: bool,
    pub(crate) descending: bool,
    pub(crate) limit: usize,
    pub(crate) page_size: usize,
    pub(crate) throttle: usize,
    pub(crate) way: Way,
}

pub(crate) fn ask() -> impl Strategy<Value = Ask> {
    (
        (
            0..=SOURCES.len(),
            proptest::option::weighted(0.8, (0_u8..7, 0_usize..200, 0_usize..200, 1_usize..12)),
            proptest::option::weighted(0.8, (0_u8..7, 0_usize..200, 0_usize..200, 1_usize..12)),
            0_u8..2,
            window(),
            proptest::option::weighted(
                0.2,
                prop_oneof![
                    (0_u8..4).prop_map(NoteFilter::Eq),
                    (0_u8..4).prop_map(NoteFilter::Ge),
                    Just(NoteFilter::BeginsWith)
                ],
            ),
            proptest::bool::weighted(0.15),
        ),
        (any::<bool>(), limit(), 1_usize..=20, 1_usize..=8, way()),
    )
        .prop_map(
            |(
                (source, cond, cond2, group, window, filter, projection),
                (descending, limit, page_size, throttle, way),
            )| Ask {
                source,
                cond,
                cond2,
                group,
                window,
                filter,
                projection,
                descending,
                limit,
                page_size,
                throttle,
                way,
            },
        )
}

/// The attributes a projected query asks for.
pub(crate) const PROJECTION: &[&str] = &["id", "created", "score"];

impl Ask {
    /// The sources read: (source position, its condition).
    pub(crate) fn sources(&self, stored: &[Stored]) -> Vec<(usize, Option<Cond>)> {
        if self.source == SOURCES.len() {
            vec![
                (UNION[0], Self::condition(self.cond, UNION[0], stored)),
                (UNION[1], Self::condition(self.cond2, UNION[1], stored)),
            ]
        } else {
            vec![(self.source, Self::condition(self.cond, self.source, stored))]
        }
    }

    /// The condition on source `source`'s range attribute, its values taken from records.
    fn condition(
        cond: Option<(u8, usize, usize, usize)>,
        source: usize,
        stored: &[Stored],
    ) -> Option<Cond> {
        let (op, first, second, chars) = cond?;
        let attr = SOURCES[source].1;
        let values: Vec<&Val> = stored.iter().filter_map(|s| s.values.get(attr)).collect();
        let pick = |i: usize| values.get(i % values.len().max(1)).copied().cloned();
        let one = pick(first)?;
        let other = pick(second)?;
        Some(match op {
            0 => Cond::Eq(one),
            1 => Cond::Lt(one),
            2 => Cond::Le(one),
            3 => Cond::Gt(one),
            4 => Cond::Ge(one),
            5 if one.order(&other).is_gt() => Cond::Between(other, one),
            5 => Cond::Between(one, other),
            _ => match one {
                Val::S(s) => Cond::BeginsWith(Val::S(s.chars().take(chars).collect())),
                n @ Val::N(_) => Cond::Ge(n),
            },
        })
    }

    /// Whether this is a union-mode query.
    pub(crate) fn is_union(&self) -> bool {
        self.source == SOURCES.len()
    }

    /// The model of a union: each selected record with the number of indexes selecting it.
    pub(crate) fn union_expected(
        &self,
        stored: &[Stored],
        bumps: &[(u64, u8, u8)],
    ) -> HashMap<Key, usize> {
        let mut out: HashMap<Key, usize> = HashMap::new();
        for (source, cond) in self.sources(stored) {
            let one = Self {
                source,
                cond: None,
                cond2: None,
                ..self.clone()
            };
            for hit in one.expected_with(stored, bumps, &[(source, cond)]) {
                *out.entry((hit.hash_key, hit.range_key)).or_default() += 1;
            }
        }
        out
    }

    /// The model: the records the query selects, in its order (by the range attribute, then
    /// table hash key, then table range key; each record once).
    pub(crate) fn expected(
        &self,
        stored: &[Stored],
        bumps: &[(u64, u8, u8)],
    ) -> Vec<super::model::Hit> {
        self.expected_with(stored, bumps, &self.sources(stored))
    }

    pub(crate) fn expected_with(
        &self,
        stored: &[Stored],
        bumps: &[(u64, u8, u8)],
        sources: &[(usize, Option<Cond>)],
    ) -> Vec<super::model::Hit> {
        let (from, to) = match self.window {
            Window::All => (0, 3_000),
            Window::Shards(a, b) | Window::Created(a, b) => (a, b),
        };
        let mut hits: Vec<super::model::Hit> = Vec::new();
        for s in stored {
            if !super::model::visits(&s.key.0, bumps, from, to) {
                continue;
            }
            if let Window::Created(a, b) = self.window
                && !(a..=b).contains(&s.created)
            {
                continue;
            }
            if self.filter.is_some_and(|f| !f.keeps(s.note.as_deref())) {
                continue;
            }
            let mut position = None;
            for (source, cond) in sources {
                let (_, attr, grouped) = SOURCES[*source];
                if grouped && s.group != self.group {
                    continue;
                }
                let Some(v) = s.values.get(attr) else {
                    continue;
                };
                if cond.as_ref().is_none_or(|c| c.holds(v)) {
                    position = Some(v.clone());
                }
            }
            if let Some(v) = position {
                hits.push(super::model::Hit {
                    tuple: vec![v],
                    lane: s.key.0.clone(),
                    hash_key: s.key.0.clone(),
                    range_key: s.key.1.clone(),
                });
            }
        }
        hits.sort_by(|x, y| {
            super::model::order_tuples(&x.tuple, &y.tuple)
                .then_with(|| x.hash_key.as_bytes().cmp(y.hash_key.as_bytes()))
                .then_with(|| x.range_key.as_bytes().cmp(y.range_key.as_bytes()))
        });
        if self.descending {
            hits.reverse();
        }
        hits
    }

    /// The query through the public API.
    pub(crate) fn query<'a, S: Store>(
        &self,
        store: &'a S,
        schema: &'a Schema,
        stored: &[Stored],
    ) -> Result<Query<'a, S, Indexed>, BoxError> {
        let user = schema.entity("user")?;
        let mut q: Option<Query<'a, S, Indexed>> = None;
        for (source, cond) in self.sources(stored) {
            let base = if let Some(q) = q.take() {
                match SOURCES[source].0 {
                    Some(name) => q.index(name),
                    None => q.table(),
                }
            } else {
                let q = Query::new(store, user);
                match SOURCES[source].0 {
                    Some(name) => q.index(name),
                    None => q.table(),
                }
            };
            let mut next = match cond {
                Some(c) => base.range(range_condition(&c)),
                None => base,
            };
            if let Some(f) = self.filter {
                next = next.filter(f.filter());
            }
            q = Some(next);
        }
        let mut q = q.ok_or("no source")?;
        if self.sources(stored).iter().any(|(s, _)| SOURCES[*s].2) {
            q = q.item(serde_dynamo::to_item(
                json!({ "group": format!("g{}", self.group) }),
            )?);
        }
        q = match self.window {
            Window::All => q.shards_between(0, 3_000),
            Window::Shards(a, b) => q.shards_between(a, b),
            Window::Created(a, b) => q.created_between(a, b),
        };
        if self.projection {
            q = q.projection(PROJECTION.iter().copied());
        }
        Ok(q.descending(self.descending)
            .limit(self.limit)
            .page_size(self.page_size)
            .throttle(self.throttle))
    }
}

/// A case in a few lines.
pub(crate) fn describe(
    bumps: &[(u64, u8, u8)],
    recs: &[Rec],
    stored: &[Stored],
    asks: &[Ask],
) -> String {
    let mut out = format!("bumps (timestamp, char_bits, chars): {bumps:?}\nrecords:\n");
    let mut latest: Vec<&Rec> = Vec::new();
    for r in recs {
        latest.retain(|o| o.id != r.id);
        latest.push(r);
    }
    for r in &latest {
        let _ = writeln!(
            out,
            "  r{:02} created {} name {:?} g{} score {} tag {:?} note {:?}",
            r.id,
            r.created,
            NAMES[usize::from(r.name)],
            r.group,
            r.score,
            r.tag.map(|t| {
                let t = tag(t);
                if t.len() > 20 {
                    format!("t×{}", t.len())
                } else {
                    t
                }
            }),
            r.note.map(|n| NOTES[usize::from(n)])
        );
    }
    for (i, ask) in asks.iter().enumerate() {
        let sources: Vec<String> = ask
            .sources(stored)
            .into_iter()
            .map(|(s, c)| format!("{} {c:?}", SOURCES[s].0.unwrap_or("table")))
            .collect();
        let _ = writeln!(
            out,
            "query {i}: {}, group g{}, {:?}, filter {:?}, projection {}, {}, limit {}, page size {}, throttle {}, {:?}",
            sources.join(" + "),
            ask.group,
            ask.window,
            ask.filter,
            ask.projection,
            if ask.descending {
                "descending"
            } else {
                "ascending"
            },
            ask.limit,
            ask.page_size,
            ask.throttle,
            ask.way
        );
    }
    out
}
