//! The brute-force model of the oracle: which records a query selects and in which order,
//! computed from plain Rust data. It shares no code with the query plan, the engine or the
//! stores: values compare as `DynamoDB` documents (strings and binary by their UTF-8 bytes,
//! numbers numerically), a query's records are filtered one by one, sorted by the index's key
//! order, then by lane, then in the order `MemoryStore` keeps equal keys in a partition.

use std::cmp::Ordering;

/// A key value: a string, or a number (its decimal text, as stored).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Val {
    S(String),
    N(String),
}

impl Val {
    /// The value as a number (the model's numbers are small decimals, exact in `f64` order).
    fn number(text: &str) -> f64 {
        text.parse().unwrap_or(f64::NAN)
    }

    /// `DynamoDB`'s order of two values of one type: strings by bytes, numbers numerically.
    pub(crate) fn order(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Self::S(a), Self::S(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Self::N(a), Self::N(b)) => Self::number(a)
                .partial_cmp(&Self::number(b))
                .unwrap_or(Ordering::Equal),
            // values of two types never meet in one key attribute; order them apart anyway
            (Self::S(_), Self::N(_)) => Ordering::Greater,
            (Self::N(_), Self::S(_)) => Ordering::Less,
        }
    }

    /// Whether the value begins with `prefix` (strings only, by bytes).
    pub(crate) fn begins_with(&self, prefix: &Self) -> bool {
        match (self, prefix) {
            (Self::S(a), Self::S(p)) => a.as_bytes().starts_with(p.as_bytes()),
            _ => false,
        }
    }
}

/// Lexicographic order of two tuples, each attribute in its type's order.
pub(crate) fn order_tuples(a: &[Val], b: &[Val]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        match x.order(y) {
            Ordering::Equal => {}
            other => return other,
        }
    }
    a.len().cmp(&b.len())
}

/// A condition on one sort value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Cond {
    Eq(Val),
    Lt(Val),
    Le(Val),
    Gt(Val),
    Ge(Val),
    /// Low and high, low not above high.
    Between(Val, Val),
    BeginsWith(Val),
}

impl Cond {
    /// Whether `x` meets the condition.
    pub(crate) fn holds(&self, x: &Val) -> bool {
        match self {
            Self::Eq(v) => x.order(v) == Ordering::Equal,
            Self::Lt(v) => x.order(v) == Ordering::Less,
            Self::Le(v) => x.order(v) != Ordering::Greater,
            Self::Gt(v) => x.order(v) == Ordering::Greater,
            Self::Ge(v) => x.order(v) != Ordering::Less,
            Self::Between(low, high) => {
                x.order(low) != Ordering::Less && x.order(high) != Ordering::Greater
            }
            Self::BeginsWith(p) => x.begins_with(p),
        }
    }
}

/// One stored record as the model sees it: its entity, table keys and key values.
#[derive(Clone, Debug)]
pub(crate) struct Stored {
    pub(crate) entity: usize,
    pub(crate) hash_key: String,
    pub(crate) range_key: String,
    /// The index's partition values the query supplies (`None`: absent).
    pub(crate) partition: Vec<Option<Val>>,
    /// The index's sort values (`None`: absent).
    pub(crate) sort: Vec<Option<Val>>,
    /// Whether the record is in a shard the query visits.
    pub(crate) visited: bool,
    /// Whether the query's filter keeps it.
    pub(crate) kept: bool,
}

/// What the model needs of a query.
#[derive(Clone, Debug)]
pub(crate) struct Selection<'a> {
    pub(crate) entities: &'a [usize],
    pub(crate) partition: &'a [Val],
    pub(crate) prefix: &'a [Val],
    pub(crate) cond: Option<&'a Cond>,
    pub(crate) descending: bool,
    /// Whether each shard is a lane of its own (a sharded key); else one lane.
    pub(crate) lanes_by_shard: bool,
}

/// A selected record: its sort tuple, lane and table keys.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Hit {
    pub(crate) tuple: Vec<Val>,
    pub(crate) lane: String,
    pub(crate) hash_key: String,
    pub(crate) range_key: String,
}

impl Hit {
    /// The part of the order `DynamoDB` determines too: sort tuple, then lane (within a
    /// partition, equal keys are in an order of the store's own).
    pub(crate) fn same_place(&self, other: &Self) -> bool {
        order_tuples(&self.tuple, &other.tuple) == Ordering::Equal && self.lane == other.lane
    }
}

/// The records `sel` selects, in the query's order: by sort tuple, then lane (the table hash
/// key of a sharded key's shard; one lane for an unsharded key), then as `MemoryStore` keeps
/// equal keys in a partition (table hash key, then table range key); reversed when descending.
pub(crate) fn select(records: &[Stored], sel: &Selection<'_>) -> Vec<Hit> {
    let mut hits: Vec<Hit> = Vec::new();
    for r in records {
        if !sel.entities.contains(&r.entity) || !r.visited || !r.kept {
            continue;
        }
        let partition_matches = r.partition.len() == sel.partition.len()
            && r.partition
                .iter()
                .zip(sel.partition)
                .all(|(x, v)| x.as_ref().is_some_and(|x| x == v));
        if !partition_matches {
            continue;
        }
        let Some(tuple) = r.sort.iter().cloned().collect::<Option<Vec<Val>>>() else {
            continue; // sparse: not in the index
        };
        let prefix_matches = sel
            .prefix
            .iter()
            .zip(&tuple)
            .all(|(p, x)| x.order(p) == Ordering::Equal);
        if !prefix_matches {
            continue;
        }
        if let Some(cond) = sel.cond
            && !cond.holds(&tuple[sel.prefix.len()])
        {
            continue;
        }
        hits.push(Hit {
            tuple,
            lane: if sel.lanes_by_shard {
                r.hash_key.clone()
            } else {
                String::new()
            },
            hash_key: r.hash_key.clone(),
            range_key: r.range_key.clone(),
        });
    }
    hits.sort_by(order_hits);
    if sel.descending {
        hits.reverse();
    }
    hits
}

/// The ascending order of selected records: sort tuple, lane, then table hash and range key.
pub(crate) fn order_hits(x: &Hit, y: &Hit) -> Ordering {
    order_tuples(&x.tuple, &y.tuple)
        .then_with(|| x.lane.as_bytes().cmp(y.lane.as_bytes()))
        .then_with(|| x.hash_key.as_bytes().cmp(y.hash_key.as_bytes()))
        .then_with(|| x.range_key.as_bytes().cmp(y.range_key.as_bytes()))
}

/// The `chars` of the shard bumps in force in `from..=to` (a bump is in force from its
/// timestamp until the next one's).
pub(crate) fn chars_in_force(bumps: &[(u64, u8, u8)], from: u64, to: u64) -> Vec<u8> {
    bumps
        .iter()
        .enumerate()
        .filter(|(i, (t, _, _))| {
            *t <= to && bumps.get(i + 1).is_none_or(|(next, _, _)| *next > from)
        })
        .map(|(_, (_, _, chars))| *chars)
        .collect()
}

/// Whether a window `from..=to` visits the shard of table hash key `hash_key`: its suffix's
/// length is the `chars` of its bump, which names the bump (`chars` increase along a schedule).
pub(crate) fn visits(hash_key: &str, bumps: &[(u64, u8, u8)], from: u64, to: u64) -> bool {
    let suffix = hash_key.split_once('!').map_or(0, |(_, x)| x.len());
    chars_in_force(bumps, from, to)
        .iter()
        .any(|&c| usize::from(c) == suffix)
}
