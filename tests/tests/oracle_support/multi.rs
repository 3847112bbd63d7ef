//! Multi-attribute indexes (and their item collections) for the oracle: random run-time
//! schemas (1 to 3 partition attributes after an optional shard attribute, 1 to 4 sort
//! attributes of either type, 1 to 3 shard bumps, one or two entities sharing the index),
//! random records, random queries, and the translation of each into the public API and into
//! the model.

use std::borrow::Cow;
use std::fmt::Write as _;

use entity_manager::model::{
    EntityModel, Index, IndexAttribute, Projection, Property, ShardBump, TableModel,
};
use entity_manager::query::untyped::MultiQuery;
use entity_manager::store::{KeyType, RangeCondition, Store};
use entity_manager::{AttributeValue, Item, Schema, transcode};
use proptest::prelude::*;

use super::model::{Cond, Selection, Stored, Val};
use super::{BoxError, Way, limit, way};

/// The index every entity of a multi-attribute schema declares.
pub(crate) const INDEX: &str = "byKey";

/// The string values of key attributes: ties, a space, a prefix of another, bytes above ASCII.
pub(crate) const STRINGS: &[&str] = &["a", "a b", "ab", "b", "é", "z\u{1F600}"];
/// The number values: negatives, fractions, a large value.
pub(crate) const NUMBERS: &[&str] = &["-20", "-2.5", "0", "1", "2.75", "100"];

/// A value of a key attribute of type `t`, from its pool; string 6 is 1,000 bytes extending
/// `"ab"` (the sort attributes of a multi-attribute key hold up to 1,024 bytes together).
pub(crate) fn value(t: KeyType, i: u8) -> Val {
    match t {
        KeyType::N => Val::N(NUMBERS[usize::from(i) % NUMBERS.len()].to_owned()),
        _ if i == 6 => Val::S(format!("ab{}", "c".repeat(998))),
        _ => Val::S(STRINGS[usize::from(i) % STRINGS.len()].to_owned()),
    }
}

/// A value of a partition attribute of type `t`: string 2 is 2,000 bytes (the partition
/// attributes of a multi-attribute key hold up to 2,048 bytes together).
pub(crate) fn partition_value(t: KeyType, i: u8) -> Val {
    match t {
        KeyType::S if i == 2 => Val::S(format!("p{}", "é".repeat(999)) + "q"),
        _ => value(t, i),
    }
}

/// A model value as an attribute value.
pub(crate) fn attribute(v: &Val) -> AttributeValue {
    match v {
        Val::S(s) => AttributeValue::S(s.clone()),
        Val::N(n) => AttributeValue::N(n.clone()),
    }
}

/// The shape of a schema.
#[derive(Clone, Debug)]
pub(crate) struct Shape {
    /// The types of the partition attributes a query supplies (1 to 3).
    pub(crate) hash: Vec<KeyType>,
    /// The types of the sort attributes (1 to 4).
    pub(crate) sort: Vec<KeyType>,
    /// Whether the table hash key leads the partition attributes.
    pub(crate) sharded: bool,
    /// The shard bumps: (timestamp, `char_bits`, chars), chars increasing.
    pub(crate) bumps: Vec<(u64, u8, u8)>,
    /// Entities sharing the index (1 or 2).
    pub(crate) entities: usize,
}

const PROPERTIES: &[Property] = &[
    Property::new("id", transcode::STRING),
    Property::new("created", transcode::TIMESTAMP),
];

pub(crate) const TOKENS: &[&str] = &["ea", "eb"];

fn key_type() -> impl Strategy<Value = KeyType> {
    prop_oneof![Just(KeyType::S), Just(KeyType::N)]
}

/// 1 to 3 bumps at 0, 1000 and 2000, chars increasing from 0 or 1.
pub(crate) fn bumps() -> impl Strategy<Value = Vec<(u64, u8, u8)>> {
    (
        1_usize..=3,
        0_u8..=1,
        proptest::collection::vec((1_u8..=2, 1_u8..=2), 3),
    )
        .prop_map(|(n, first, steps)| {
            let mut chars = first;
            let mut out = Vec::new();
            for (i, (bits, step)) in steps.into_iter().take(n).enumerate() {
                if i > 0 {
                    chars += step;
                }
                out.push((1_000 * i as u64, bits, chars));
            }
            out
        })
}

pub(crate) fn shape() -> impl Strategy<Value = Shape> {
    (
        proptest::collection::vec(key_type(), 1..=3),
        proptest::collection::vec(key_type(), 1..=4),
        any::<bool>(),
        bumps(),
        1_usize..=2,
    )
        .prop_map(|(hash, sort, sharded, bumps, entities)| Shape {
            hash,
            sort,
            sharded,
            bumps,
            entities,
        })
}

impl Shape {
    /// The validated schema of this shape.
    pub(crate) fn schema(&self) -> Result<Schema, BoxError> {
        let mut hash = Vec::new();
        if self.sharded {
            hash.push(IndexAttribute::new("hashKey", KeyType::S));
        }
        for (i, t) in self.hash.iter().enumerate() {
            hash.push(IndexAttribute::named(Cow::Owned(format!("h{i}")), *t));
        }
        let range: Vec<IndexAttribute> = self
            .sort
            .iter()
            .enumerate()
            .map(|(i, t)| IndexAttribute::named(Cow::Owned(format!("s{i}")), *t))
            .collect();
        let mut index = Index::multi(INDEX, &[], &[], self.sharded, Projection::All);
        index.hash_key.clone_from(&hash[0].name);
        index.range_key.clone_from(&range[0].name);
        if let Some(multi) = index.multi.as_mut() {
            multi.hash = Cow::Owned(hash);
            multi.range = Cow::Owned(range);
        }
        let bumps: Vec<ShardBump> = self
            .bumps
            .iter()
            .map(|&(t, bits, chars)| ShardBump::new(t, bits, chars))
            .collect();
        let entities = TOKENS[..self.entities]
            .iter()
            .map(|token| {
                let mut model =
                    EntityModel::new(token, "id", "created").with_properties(PROPERTIES);
                model.indexes = Cow::Owned(vec![index.clone()]);
                model.shard_bumps = Cow::Owned(bumps.clone());
                model
            })
            .collect();
        Ok(Schema::new(TableModel::DEFAULT, entities)?)
    }
}

/// One record: its entity, id, creation time, partition and sort values (pool indexes; `None`
/// absent).
#[derive(Clone, Debug)]
pub(crate) struct Rec {
    pub(crate) entity: usize,
    pub(crate) id: u8,
    pub(crate) created: u64,
    pub(crate) hash: Vec<Option<u8>>,
    pub(crate) sort: Vec<Option<u8>>,
}

pub(crate) fn rec() -> impl Strategy<Value = Rec> {
    (
        0_usize..2,
        0_u8..80,
        0_u64..3_000,
        // most records in one partition, values tying in every attribute
        proptest::collection::vec(
            proptest::option::weighted(
                0.98,
                prop_oneof![18 => Just(0_u8), 2 => Just(1_u8), 1 => Just(2_u8)],
            ),
            3,
        ),
        sort_values(),
    )
        .prop_map(|(entity, id, created, hash, sort)| Rec {
            entity,
            id,
            created,
            hash: within_limit(hash, 2),
            sort,
        })
}

/// Sort values (pool indexes; `None` absent): at most one long value, so that every record
/// keeps the sort attributes within their aggregate limit.
pub(crate) fn sort_values() -> impl Strategy<Value = Vec<Option<u8>>> {
    proptest::collection::vec(
        proptest::option::weighted(0.96, prop_oneof![6 => 0_u8..2, 2 => 2_u8..4, 1 => 4_u8..7]),
        4,
    )
    .prop_map(|sort| within_limit(sort, 6))
}

/// The values with every `long` after the first replaced by 0: `DynamoDB` limits the
/// aggregate size of a multi-attribute key's partition attributes to 2,048 bytes and of its
/// sort attributes to 1,024 (each long value stays within its side's limit alone).
fn within_limit(mut values: Vec<Option<u8>>, long: u8) -> Vec<Option<u8>> {
    let mut seen = false;
    for v in values.iter_mut().flatten() {
        if *v == long {
            if seen {
                *v = 0;
            }
            seen = true;
        }
    }
    values
}

impl Rec {
    /// The record as an unkeyed item of `shape`.
    pub(crate) fn item(&self, shape: &Shape) -> Item {
        let mut item: std::collections::HashMap<String, AttributeValue> =
            std::collections::HashMap::new();
        item.insert("id".into(), AttributeValue::S(format!("r{:02}", self.id)));
        item.insert(
            "created".into(),
            AttributeValue::N(self.created.to_string()),
        );
        for (i, t) in shape.hash.iter().enumerate() {
            if let Some(v) = self.hash[i] {
                item.insert(format!("h{i}"), attribute(&partition_value(*t, v)));
            }
        }
        for (i, t) in shape.sort.iter().enumerate() {
            if let Some(v) = self.sort[i] {
                item.insert(format!("s{i}"), attribute(&value(*t, v)));
            }
        }
        item.into()
    }

    /// The model's view of the keyed record.
    pub(crate) fn stored(&self, shape: &Shape, keyed: &Item) -> Stored {
        let text = |name: &str| match keyed.get(name) {
            Some(AttributeValue::S(s)) => s.clone(),
            _ => String::new(),
        };
        Stored {
            entity: self.entity,
            hash_key: text("hashKey"),
            range_key: text("rangeKey"),
            partition: shape
                .hash
                .iter()
                .enumerate()
                .map(|(i, t)| self.hash[i].map(|v| partition_value(*t, v)))
                .collect(),
            sort: shape
                .sort
                .iter()
                .enumerate()
                .map(|(i, t)| self.sort[i].map(|v| value(*t, v)))
                .collect(),
            visited: true,
            kept: true,
        }
    }
}

/// A query: partition values, an equality prefix, a condition after it, the entities, order,
/// limit, page size, throttle and the way it is paged.
#[derive(Clone, Debug)]
pub(crate) struct Ask {
    /// A record whose values the query takes (its position among the records, modulo their
    /// number), so that queries select records; the query's own values where it has none.
    pub(crate) template: Option<usize>,
    pub(crate) hash: Vec<u8>,
    /// The prefix length (cut to what the shape allows).
    pub(crate) prefix_len: usize,
    pub(crate) prefix: Vec<u8>,
    /// An operator 0..7 (eq, lt, le, gt, ge, between, `begins_with`), two values, and whether
    /// the first is the template's.
    pub(crate) cond: Option<(u8, u8, u8, bool)>,
    pub(crate) collection: bool,
    pub(crate) descending: bool,
    pub(crate) limit: usize,
    pub(crate) page_size: usize,
    pub(crate) throttle: usize,
    pub(crate) way: Way,
    /// `shards_between(from, to)`; `None`: every shard (`0..=3000`).
    pub(crate) window: Option<(u64, u64)>,
}

pub(crate) fn ask() -> impl Strategy<Value = Ask> {
    (
        (
            proptest::option::weighted(0.9, 0_usize..100),
            proptest::collection::vec(prop_oneof![10 => Just(0_u8), 5 => Just(1), 1 => Just(2)], 3),
            prop_oneof![3 => Just(0_usize), 2 => Just(1), 1 => Just(2), 1 => 3_usize..=4],
            proptest::collection::vec(0_u8..6, 4),
            proptest::option::weighted(
                0.85,
                (0_u8..7, 0_u8..6, 0_u8..6, proptest::bool::weighted(0.7)),
            ),
        ),
        (
            any::<bool>(),
            any::<bool>(),
            limit(),
            1_usize..=20,
            1_usize..=8,
            way(),
            proptest::option::weighted(
                0.25,
                (0_u64..3_000, 0_u64..3_000).prop_map(|(a, b)| (a.min(b), a.max(b))),
            ),
        ),
    )
        .prop_map(
            |(
                (template, hash, prefix_len, prefix, cond),
                (collection, descending, limit, page_size, throttle, way, window),
            )| Ask {
                template,
                hash,
                prefix_len,
                prefix,
                cond,
                collection,
                descending,
                limit,
                page_size,
                throttle,
                way,
                window,
            },
        )
}

/// A query as the model sees it, and as the public API builds it.
pub(crate) struct Resolved {
    pub(crate) entities: Vec<usize>,
    pub(crate) partition: Vec<Val>,
    pub(crate) prefix: Vec<Val>,
    pub(crate) cond: Option<Cond>,
}

impl Resolved {
    pub(crate) fn selection(&self, ask: &Ask, shape: &Shape) -> Selection<'_> {
        Selection {
            entities: &self.entities,
            partition: &self.partition,
            prefix: &self.prefix,
            cond: self.cond.as_ref(),
            descending: ask.descending,
            lanes_by_shard: shape.sharded,
        }
    }
}

/// The condition of operator `op` on values `a` and `b` of type `t` (`between` ordered low to
/// high by the model; `begins_with` on a number is `ge`).
pub(crate) fn condition(kind: KeyType, op: u8, first: u8, second: u8) -> Cond {
    let (one, other) = (value(kind, first), value(kind, second));
    match op {
        0 => Cond::Eq(one),
        1 => Cond::Lt(one),
        2 => Cond::Le(one),
        3 => Cond::Gt(one),
        4 => Cond::Ge(one),
        5 => {
            if one.order(&other).is_gt() {
                Cond::Between(other, one)
            } else {
                Cond::Between(one, other)
            }
        }
        _ if kind == KeyType::S => Cond::BeginsWith(match one {
            // a prefix of some values: their first character
            Val::S(text) => Val::S(text.chars().next().map(String::from).unwrap_or_default()),
            number @ Val::N(_) => number,
        }),
        _ => Cond::Ge(one),
    }
}

/// The store condition of a model condition.
pub(crate) fn range_condition(cond: &Cond) -> RangeCondition {
    match cond {
        Cond::Eq(v) => RangeCondition::Eq(attribute(v)),
        Cond::Lt(v) => RangeCondition::Lt(attribute(v)),
        Cond::Le(v) => RangeCondition::Le(attribute(v)),
        Cond::Gt(v) => RangeCondition::Gt(attribute(v)),
        Cond::Ge(v) => RangeCondition::Ge(attribute(v)),
        Cond::Between(a, b) => RangeCondition::Between(attribute(a), attribute(b)),
        Cond::BeginsWith(v) => RangeCondition::BeginsWith(attribute(v)),
    }
}

impl Ask {
    pub(crate) fn resolve(&self, shape: &Shape, recs: &[Rec]) -> Resolved {
        let entities = if self.collection && shape.entities > 1 {
            vec![0, 1]
        } else {
            vec![0]
        };
        // among the records in the index (all key values present) of the queried entities
        let candidates: Vec<&Rec> = recs
            .iter()
            .filter(|r| {
                entities.contains(&r.entity)
                    && r.hash[..shape.hash.len()].iter().all(Option::is_some)
                    && r.sort[..shape.sort.len()].iter().all(Option::is_some)
            })
            .collect();
        let template = self
            .template
            .and_then(|t| candidates.get(t % candidates.len().max(1)).copied());
        let hash = |i: usize| template.and_then(|r| r.hash[i]).unwrap_or(self.hash[i]);
        let sort = |i: usize, own: u8| template.and_then(|r| r.sort[i]).unwrap_or(own);
        let partition = shape
            .hash
            .iter()
            .enumerate()
            .map(|(i, t)| partition_value(*t, hash(i)))
            .collect();
        let room = if self.cond.is_some() {
            shape.sort.len() - 1
        } else {
            shape.sort.len()
        };
        let n = self.prefix_len.min(room);
        let prefix = (0..n)
            .map(|i| value(shape.sort[i], sort(i, self.prefix[i])))
            .collect();
        let cond = self.cond.map(|(op, a, b, from_template)| {
            let a = if from_template { sort(n, a) } else { a };
            condition(shape.sort[n], op, a, b)
        });
        Resolved {
            entities,
            partition,
            prefix,
            cond,
        }
    }

    /// The query through the public API.
    pub(crate) fn query<'a, S: Store>(
        &self,
        store: &'a S,
        schema: &'a Schema,
        resolved: &Resolved,
    ) -> Result<MultiQuery<'a, S>, BoxError> {
        let entities = resolved
            .entities
            .iter()
            .map(|&e| schema.entity(TOKENS[e]))
            .collect::<Result<Vec<_>, _>>()?;
        let mut q = MultiQuery::collection(store, entities, INDEX)
            .hash(resolved.partition.iter().map(attribute))
            .shards_between(
                self.window.map_or(0, |w| w.0),
                self.window.map_or(3_000, |w| w.1),
            )
            .descending(self.descending)
            .limit(self.limit)
            .page_size(self.page_size)
            .throttle(self.throttle);
        if !resolved.prefix.is_empty() {
            q = q.range_prefix(resolved.prefix.iter().map(attribute));
        }
        if let Some(cond) = &resolved.cond {
            q = q.range(range_condition(cond));
        }
        Ok(q)
    }

    /// Whether this is the shape of the known defect of issue 46: an upper bound on the
    /// conditioned sort attribute ascending (`le`, `between`), or a lower bound descending
    /// (`ge`, `between`), on the first sort attribute or after an equality prefix.
    pub(crate) fn known_defect(&self, resolved: &Resolved) -> bool {
        match resolved.cond {
            Some(Cond::Between(..)) => true,
            Some(Cond::Le(_)) => !self.descending,
            Some(Cond::Ge(_)) => self.descending,
            _ => false,
        }
    }
}

/// A case in a few lines: the schema, the records the query can meet (as stored: entity, id,
/// created, partition and sort values), and each query as built.
pub(crate) fn describe(shape: &Shape, recs: &[Rec], asks: &[Ask]) -> String {
    let show = |v: Option<Val>| match v {
        Some(Val::S(s)) if s.len() > 40 => {
            format!(
                "{:?}…({} bytes)",
                s.chars().take(3).collect::<String>(),
                s.len()
            )
        }
        Some(Val::S(s)) => format!("{s:?}"),
        Some(Val::N(n)) => n,
        None => "-".to_owned(),
    };
    let mut out = format!(
        "schema: partition {}{:?}, sort {:?}, bumps (timestamp, char_bits, chars) {:?}, entities {:?}\n",
        if shape.sharded { "[hashKey] + " } else { "" },
        shape.hash,
        shape.sort,
        shape.bumps,
        &TOKENS[..shape.entities]
    );
    out.push_str("records in the index, as stored (entity id created | partition | sort):\n");
    let mut latest: Vec<&Rec> = Vec::new();
    for r in recs {
        latest.retain(|o| (o.entity, o.id) != (r.entity, r.id));
        latest.push(r);
    }
    let indexed = |r: &&&Rec| {
        r.entity < shape.entities
            && r.hash[..shape.hash.len()].iter().all(Option::is_some)
            && r.sort[..shape.sort.len()].iter().all(Option::is_some)
    };
    for r in latest.iter().filter(indexed) {
        let partition: Vec<String> = shape
            .hash
            .iter()
            .enumerate()
            .map(|(i, t)| show(r.hash[i].map(|v| partition_value(*t, v))))
            .collect();
        let sort: Vec<String> = shape
            .sort
            .iter()
            .enumerate()
            .map(|(i, t)| show(r.sort[i].map(|v| value(*t, v))))
            .collect();
        let _ = writeln!(
            out,
            "  {} r{:02} {} | {} | {}",
            TOKENS[r.entity],
            r.id,
            r.created,
            partition.join(", "),
            sort.join(", ")
        );
    }
    for (i, ask) in asks.iter().enumerate() {
        let q = ask.resolve(shape, recs);
        let _ = writeln!(
            out,
            "query {i}: entities {:?}, partition [{}], prefix {:?}, condition {:?}, {}, limit {}, page size {}, throttle {}, {:?}, window {:?}",
            q.entities.iter().map(|&e| TOKENS[e]).collect::<Vec<_>>(),
            q.partition
                .iter()
                .cloned()
                .map(|v| show(Some(v)))
                .collect::<Vec<_>>()
                .join(", "),
            q.prefix,
            q.cond,
            if ask.descending {
                "descending"
            } else {
                "ascending"
            },
            ask.limit,
            ask.page_size,
            ask.throttle,
            ask.way,
            ask.window
        );
    }
    out
}
