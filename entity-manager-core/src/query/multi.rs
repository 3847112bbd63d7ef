//! Queries of multi-attribute indexes, of one entity or of an item collection (several entities
//! sharing the index), merged exactly across shards and resumable through the page token.
//!
//! # Lanes
//!
//! A query gives every partition attribute a value, except the shard attribute of a sharded key
//! (the table hash key), over which it fans out: one *lane* per shard of each entity in the time
//! window. An unsharded key has one lane, which every entity of a collection shares (their
//! items are told apart by the entity token that begins their table hash key; items of other
//! entities in that partition are read and skipped).
//!
//! # Order and pages
//!
//! Items come in the tuple order of the sort attributes (each attribute in its type's order:
//! numbers numerically, strings and binary by bytes), ties broken by the table range key then
//! the table hash key, ascending or descending as asked. Every page holds exactly
//! `min(limit, remaining)` items, and paging to the end returns every matching item exactly
//! once, in that order across pages, whatever order a store gives equal tuples in: an item is
//! emitted only when every lane that can still give items is read past its tuple.
//!
//! The page token (the same format as [`Query`](super::Query)'s) holds the last item's tuple
//! and tie-breaker, where the span the pages cover starts (on the conditioned sort attribute,
//! the first after the equality prefix), one "exhausted" bit per lane and, when no item left
//! unreturned ties with the last one, the lane that held it. The next page reads every live lane
//! from the boundary's value of the conditioned attribute on (the user's condition narrowed to
//! it) and skips what lies at or before the boundary; the lane that held the last item resumes
//! right after it instead.
//!
//! # Reads
//!
//! Reads are scheduled continuously: up to `throttle` shard queries are in flight, a new one
//! starts as soon as one returns, and the merge emits meanwhile what is settled. The lanes
//! read, least advanced first, are the lanes not yet read on this page, the lanes that block
//! the merge (they may hold an item before the next one to emit), and the lanes short of where
//! the page ends:
//! - once `remaining` items are buffered, the page is known to end at the latest at the
//!   `remaining`-th of them; lanes read up to its value of the conditioned attribute, bounded
//!   there by the key condition, so that a lane that runs out is known complete up to it;
//! - before that, when the previous pages' span on the conditioned attribute is numeric, the
//!   page is predicted to end as far beyond the boundary (plus a margin shrinking as
//!   `1/√limit`), and lanes read up to there, each about its share of the page plus a Poisson
//!   margin;
//! - otherwise (the first page, strings, an equality on every sort attribute) a lane reads its
//!   share of what the page still wants at a time.
//!
//! A read asks `page_size` items at most (plus one to learn that a lane goes no further, and
//! one for the boundary read again). Reads of lanes that run ahead of the page are kept only
//! for this page: the next page reads them again from its boundary.

use std::cmp::Ordering;
use std::collections::{HashSet, VecDeque};

use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use serde_dynamo::{AttributeValue, Item};
use sha2::{Digest as _, Sha256};

use super::engine::prefix_successor;
use super::estimate;
use super::token::{self, Boundary, StreamState, TokenState};
use super::{Paging, QueryPageResult, QueryStats};
use crate::error::{Error, Result};
use crate::model::{Index, MultiKey};
use crate::schema::EntitySchema;
use crate::store::value::Scalar;
use crate::store::{QueryPage, RangeCondition, Store};

/// A query of a multi-attribute index over one entity, or over several entities that share
/// the index (an item collection).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use entity_manager_core::query::MultiQuery;
/// use entity_manager_core::store::{KeyType, MemoryStore, RangeCondition, Store, TableDefinition};
/// use entity_manager_core::{
///     AttributeValue, EntityModel, Index, IndexAttribute, Projection, Property, Schema, ShardBump,
///     TableModel, transcode,
/// };
///
/// const PROPERTIES: &[Property] = &[
///     Property::new("id", transcode::STRING),
///     Property::new("created", transcode::TIMESTAMP),
/// ];
/// const HASH: &[IndexAttribute] =
///     &[IndexAttribute::new("hashKey", KeyType::S), IndexAttribute::new("team", KeyType::S)];
/// const RANGE: &[IndexAttribute] = &[IndexAttribute::new("score", KeyType::N)];
/// const INDEXES: &[Index] = &[Index::multi("byTeam", HASH, RANGE, true, Projection::All)];
/// const BUMPS: &[ShardBump] = &[ShardBump::new(0, 2, 1)];
/// let player = EntityModel::new("player", "id", "created")
///     .with_properties(PROPERTIES)
///     .with_indexes(INDEXES)
///     .with_shard_bumps(BUMPS);
/// let schema = Schema::new(TableModel::DEFAULT, vec![player])?;
/// let store = MemoryStore::new(TableDefinition::from_schema(&schema)?);
/// let players = schema.entity("player")?;
/// for n in 0..30u64 {
///     let item = serde_dynamo::to_item(serde_json::json!({
///         "id": format!("p{n}"), "created": n, "team": "red", "score": (n * 7) % 30
///     }))?;
///     store.put_item(players.add_keys(&item)?, Default::default()).await?;
/// }
/// let query = MultiQuery::new(&store, players, "byTeam")
///     .hash([AttributeValue::S("red".into())])
///     .range(RangeCondition::Ge(AttributeValue::N("10".into())))
///     .window(0, 100)
///     .limit(8);
/// let first = query.page(None).await?;
/// assert_eq!(first.items.len(), 8); // merged over 4 shards, in score order
/// assert_eq!(first.items[0]["score"], AttributeValue::N("10".into()));
/// let second = query.page(first.next.as_deref()).await?;
/// assert_eq!(second.items[0]["score"], AttributeValue::N("18".into()));
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct MultiQuery<'a, S> {
    store: &'a S,
    entities: Vec<EntitySchema<'a>>,
    index: String,
    hash: Vec<AttributeValue>,
    prefix: Vec<AttributeValue>,
    range: Option<RangeCondition>,
    paging: Paging,
}

/// One shard (or the one partition) of one entity, or of every entity of an unsharded key.
#[derive(Clone, Debug)]
struct LaneDef {
    /// The table hash key value of a sharded key; `None` for an unsharded key.
    shard: Option<String>,
}

/// A validated query: its key, its lanes and what its tokens are bound to.
#[derive(Debug)]
struct Plan<'a> {
    entities: Vec<EntitySchema<'a>>,
    multi: MultiKey,
    lanes: Vec<LaneDef>,
    window: (u64, u64),
    fingerprint: [u8; 32],
    table: [u8; 32],
}

/// An item's place in the merge: its sort tuple and tie-breaker, in scan order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Place {
    tuple: Vec<Scalar>,
    tie: (String, String),
}

/// Where one lane stands during a page.
#[derive(Debug, Default)]
struct Lane {
    /// Items read, not yet emitted, sorted in scan order.
    buffer: VecDeque<(Place, Item)>,
    /// Where the next read of this page starts (`ExclusiveStartKey`); `None` for the boundary's
    /// value of the conditioned attribute (or the beginning).
    cursor: Option<Item>,
    /// How far the lane is read on this page; `None` before its first read.
    frontier: Option<Front>,
    /// Nothing is left to read.
    exhausted: bool,
    /// A read of this lane is in flight.
    busy: bool,
}

impl<'a, S: Store> MultiQuery<'a, S> {
    /// A query of `entity` through its multi-attribute index `index`.
    pub fn new(store: &'a S, entity: EntitySchema<'a>, index: impl Into<String>) -> Self {
        Self::collection(store, vec![entity], index)
    }

    /// A query of an item collection: `entities` share the multi-attribute index `index` (the
    /// same name and key attributes); items of all of them come in one order.
    pub fn collection(
        store: &'a S,
        entities: Vec<EntitySchema<'a>>,
        index: impl Into<String>,
    ) -> Self {
        Self {
            store,
            entities,
            index: index.into(),
            hash: Vec::new(),
            prefix: Vec::new(),
            range: None,
            paging: Paging::default(),
        }
    }

    /// The values of the partition attributes, in key order (without the shard attribute of a
    /// sharded key, over which the query fans out).
    #[must_use]
    pub fn hash(mut self, values: impl IntoIterator<Item = AttributeValue>) -> Self {
        self.hash = values.into_iter().collect();
        self
    }

    /// Equality on the first sort attributes, in key order.
    #[must_use]
    pub fn range_prefix(mut self, values: impl IntoIterator<Item = AttributeValue>) -> Self {
        self.prefix = values.into_iter().collect();
        self
    }

    /// A condition on the sort attribute after the prefix.
    #[must_use]
    pub fn range(mut self, condition: RangeCondition) -> Self {
        self.range = Some(condition);
        self
    }

    /// Records created in `from..=to` (ms since the epoch): the shards to visit. Default:
    /// `0..=now`, pinned into the page token.
    #[must_use]
    pub fn window(mut self, from: u64, to: u64) -> Self {
        self.paging.window = Some((from, to));
        self
    }

    paging_setters!();

    /// The entity tokens, comma-separated (one for an entity query).
    fn tokens(&self) -> String {
        self.entities
            .iter()
            .map(|e| e.model().token.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn invalid(&self, reason: impl Into<String>) -> Error {
        Error::InvalidQuery {
            entity: self.tokens(),
            reason: reason.into(),
        }
    }

    /// The multi-attribute key every entity declares for the index.
    fn key(&self) -> Result<MultiKey> {
        let first = self
            .entities
            .first()
            .ok_or_else(|| self.invalid("a collection query needs at least one entity"))?;
        let index: &Index = first.index(&self.index)?;
        let Some(multi) = &index.multi else {
            return Err(self.invalid(format!(
                "index `{}` is not a multi-attribute index; query it with `Query`",
                self.index
            )));
        };
        for other in &self.entities[1..] {
            let theirs = other.index(&self.index)?;
            if theirs.multi.as_ref() != Some(multi) {
                return Err(self.invalid(format!(
                    "entities `{}` and `{}` declare index `{}` with different keys; a collection shares one index",
                    first.model().token,
                    other.model().token,
                    self.index
                )));
            }
        }
        let mut tokens = HashSet::new();
        if let Some(dup) = self
            .entities
            .iter()
            .find(|e| !tokens.insert(&*e.model().token))
        {
            return Err(self.invalid(format!("entity `{}` is listed twice", dup.model().token)));
        }
        let given = self.hash.len();
        let wanted = multi.user_hash().len();
        if given != wanted {
            return Err(self.invalid(format!(
                "index `{}` has {wanted} partition attributes to give ({}), and the query gives {given} values",
                self.index,
                multi
                    .user_hash()
                    .iter()
                    .map(|p| format!("`{}`", p.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let conditioned = self.prefix.len() + usize::from(self.range.is_some());
        if conditioned > multi.range.len() {
            return Err(self.invalid(format!(
                "index `{}` has {} sort attributes, and the query conditions {conditioned}",
                self.index,
                multi.range.len()
            )));
        }
        Ok(multi.clone())
    }

    fn plan(&self, window: (u64, u64)) -> Result<Plan<'a>> {
        let multi = self.key()?;
        if window.0 > window.1 {
            return Err(self.invalid(format!(
                "the time window {}..={} is reversed",
                window.0, window.1
            )));
        }
        let mut lanes = Vec::new();
        if multi.sharded {
            for entity in &self.entities {
                let table_hash = &entity.table().hash_key;
                for shard in
                    entity.hash_key_space(table_hash, &Item::default(), window.0, window.1)?
                {
                    lanes.push(LaneDef { shard: Some(shard) });
                }
            }
        } else {
            lanes.push(LaneDef { shard: None });
        }
        let fingerprint = self.fingerprint(&multi);
        Ok(Plan {
            entities: self.entities.clone(),
            multi,
            lanes,
            window,
            fingerprint,
            table: self.table_binding(),
        })
    }

    /// SHA-256 over what identifies the query across its pages (not its window, limit, page
    /// size or throttle).
    fn fingerprint(&self, multi: &MultiKey) -> [u8; 32] {
        let mut h = Sha256::new();
        let mut field = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        field(b"entity-manager multi-attribute query v1");
        for entity in &self.entities {
            // Debug renderings are canonical within one build; tokens are versioned, not
            // promised across releases
            field(format!("{:?}", entity.model()).as_bytes());
            field(format!("{:?}", entity.table()).as_bytes());
        }
        field(self.index.as_bytes());
        field(
            format!(
                "{multi:?}|{:?}|{:?}|{:?}|{}",
                self.hash, self.prefix, self.range, self.paging.descending
            )
            .as_bytes(),
        );
        h.finalize().into()
    }

    fn table_binding(&self) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(b"entity-manager multi-attribute table binding v1");
        h.update(format!("{:?}|{:?}", self.store.definition(), self.store.name()).as_bytes());
        h.finalize().into()
    }

    /// The page's plan and where it starts: from the beginning, or as `token` says (checked
    /// against the query and the table, its window pinned).
    fn resume(&self, token: Option<&str>) -> Result<(Plan<'a>, StreamState)> {
        let probe = self.plan(self.paging.window.unwrap_or((0, now_ms())))?;
        let shape = |plan: &Plan<'_>| token::Shape {
            streams: 1,
            lanes: plan.lanes.len(),
        };
        let Some(token) = token else {
            return Ok((probe, StreamState::fresh(0)));
        };
        let binding = token::Binding {
            query: &probe.fingerprint,
            table: &probe.table,
        };
        // a tuple of up to 4 values: room for 4 streams' boundaries
        let max = token::max_chars(token::Shape {
            streams: 4,
            lanes: probe.lanes.len(),
        });
        let verified = token::verify(token, binding, self.paging.signing_key.as_deref(), max)?;
        self.paging.check_window(&verified)?;
        let plan = if (verified.from, verified.to) == probe.window {
            probe
        } else {
            self.plan((verified.from, verified.to))?
        };
        let mut parsed = verified.parse(shape(&plan))?;
        let state = parsed
            .streams
            .pop()
            .ok_or(crate::error::TokenError::Malformed("shape"))?;
        Ok((plan, state))
    }

    /// One page: the first (`token: None`) or the one after the page that returned `token`.
    ///
    /// Runs in the `entity_manager.query` tracing span, as [`Query::page`](super::Query::page)
    /// does, with the page's [`QueryStats`] (consumed capacity included) recorded on it.
    pub async fn page(&self, token: Option<&str>) -> Result<QueryPageResult> {
        super::traced_page(&self.tokens(), 1, self.run_page(token)).await
    }

    async fn run_page(&self, token: Option<&str>) -> Result<QueryPageResult> {
        let first = self
            .entities
            .first()
            .ok_or_else(|| self.invalid("a collection query needs at least one entity"))?;
        let limit = self.paging.limit.unwrap_or(first.model().default_limit);
        let page_size = self
            .paging
            .page_size
            .unwrap_or(first.model().default_page_size);
        let throttle = self.paging.throttle.unwrap_or(first.table().throttle);
        if limit == 0 || page_size == 0 || throttle == 0 {
            return Err(self.invalid("the limit, page size and throttle must be at least 1"));
        }
        let (plan, state) = self.resume(token)?;
        let exhausted = if state.exhausted.is_empty() {
            vec![false; plan.lanes.len()]
        } else {
            state.exhausted.clone()
        };
        let after = match &state.boundary {
            Some(b) => Some(self.boundary_place(&plan, b)?),
            None => None,
        };
        let mut lanes: Vec<Lane> = exhausted
            .iter()
            .map(|&e| Lane {
                exhausted: e,
                ..Lane::default()
            })
            .collect();
        // the lane that held the boundary, with nothing left tying with it, resumes right after
        // it: it does not read the boundary's item again
        if let (Some(b), Some(after)) = (&state.boundary, &after)
            && let Some(t) = b.lane
            && let Some(lane) = lanes.get_mut(t)
            && !lane.exhausted
        {
            lane.cursor = resume_key(self, &plan, t, b, after);
        }
        let mut run = Run {
            query: self,
            plan: &plan,
            at: self.prefix.len(),
            lanes,
            after,
            boundary: state.boundary.clone(),
            page_size,
            throttle,
            known: None,
            stats: QueryStats {
                shards: plan.lanes.len(),
                ..QueryStats::default()
            },
        };
        let (items, boundary) = run.page(limit).await?;
        let mut page_stats = run.stats;
        page_stats.items_returned = items.len();
        // a lane is done for the next page when it is exhausted and kept nothing back
        let next_exhausted: Vec<bool> = run
            .lanes
            .iter()
            .map(|l| l.exhausted && l.buffer.is_empty())
            .collect();
        let done = next_exhausted.iter().all(|&e| e);
        let next = (!done).then(|| {
            token::encode(
                &TokenState {
                    from: plan.window.0,
                    to: plan.window.1,
                    streams: vec![StreamState {
                        boundary,
                        exhausted: next_exhausted,
                    }],
                },
                token::Binding {
                    query: &plan.fingerprint,
                    table: &plan.table,
                },
                self.paging.signing_key.as_deref(),
            )
        });
        Ok(QueryPageResult {
            items,
            next,
            stats: page_stats,
        })
    }

    /// The place of a token's boundary.
    fn boundary_place(&self, plan: &Plan<'_>, b: &Boundary) -> Result<Place> {
        let malformed = || Error::Token(crate::error::TokenError::Malformed("boundary"));
        let AttributeValue::L(values) = &b.last else {
            return Err(malformed());
        };
        if values.len() != plan.multi.range.len() {
            return Err(malformed());
        }
        let tuple = plan
            .multi
            .range
            .iter()
            .zip(values)
            .map(|(p, v)| Scalar::of(v, p.key_type))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(malformed)?;
        let tie = split_tie(&b.unique).ok_or_else(malformed)?;
        let _ = self;
        Ok(Place { tuple, tie })
    }
}

/// The tie-breaker of an item as the token writes it: the length of the table range key, `:`,
/// the range key, then the hash key.
fn join_tie(tie: &(String, String)) -> String {
    format!("{}:{}{}", tie.0.len(), tie.0, tie.1)
}

fn split_tie(text: &str) -> Option<(String, String)> {
    let (len, rest) = text.split_once(':')?;
    let len: usize = len.parse().ok()?;
    let range = rest.get(..len)?;
    let hash = rest.get(len..)?;
    Some((range.to_owned(), hash.to_owned()))
}

/// The page key of the boundary's item in lane `t`: the table keys and the index keys, which
/// the boundary holds (its tuple, its tie-breaker) or the lane and the query fix.
fn resume_key<S>(
    query: &MultiQuery<'_, S>,
    plan: &Plan<'_>,
    t: usize,
    boundary: &Boundary,
    after: &Place,
) -> Option<Item> {
    let table = plan.entities.first()?.table();
    let AttributeValue::L(tuple) = &boundary.last else {
        return None;
    };
    let mut key = Item::default();
    key.insert(
        table.range_key.to_string(),
        AttributeValue::S(after.tie.0.clone()),
    );
    key.insert(
        table.hash_key.to_string(),
        AttributeValue::S(after.tie.1.clone()),
    );
    let shard = plan.lanes.get(t)?.shard.clone().map(AttributeValue::S);
    let hash_values = shard.into_iter().chain(query.hash.iter().cloned());
    if plan.multi.hash.len() != usize::from(plan.multi.sharded) + query.hash.len()
        || plan.multi.range.len() != tuple.len()
    {
        return None;
    }
    for (attribute, value) in plan.multi.hash.iter().zip(hash_values) {
        key.insert(attribute.name.to_string(), value);
    }
    for (attribute, value) in plan.multi.range.iter().zip(tuple) {
        key.insert(attribute.name.to_string(), value.clone());
    }
    Some(key)
}

/// How far a lane is read on this page, in scan order.
#[derive(Clone, Debug)]
enum Front {
    /// Every item before this tuple, and some at it (a page key: a store gives equal tuples in
    /// no order it promises).
    At(Vec<Scalar>),
    /// Every item whose conditioned attribute lies at or before this value (a read bounded
    /// there by the key condition that ran out).
    Through(Scalar),
}

/// Where reads stop: a value of the conditioned attribute, as a scalar and as the value for the
/// key condition.
#[derive(Clone, Debug)]
struct End {
    scalar: Scalar,
    value: AttributeValue,
}

/// One page in progress: a k-way merge over the lanes with continuous reads.
///
/// Up to `throttle` shard queries are in flight; a new one starts as soon as one returns, and
/// the merge emits meanwhile what is settled. The lanes read, least advanced first, are the
/// lanes not yet read on this page, the lanes that block the merge (they may hold an item
/// before the head), and the lanes short of where the page ends: the known end (the
/// `remaining`-th buffered item's value of the conditioned attribute: the page cannot end
/// later) once enough is buffered, else the predicted end (the previous pages' span on the
/// conditioned attribute extrapolated, numbers only). A read up to an end is bounded there by
/// the key condition, so a lane that runs out is known complete up to it; its limit is the
/// lane's share of what the page still wants, plus a Poisson margin.
struct Run<'q, 'a, S> {
    query: &'q MultiQuery<'a, S>,
    plan: &'q Plan<'a>,
    /// The position of the conditioned attribute in the tuple (after the equality prefix);
    /// equal to the tuple's length when the prefix covers it (no end can bound a read).
    at: usize,
    lanes: Vec<Lane>,
    /// The previous page's last item: everything at or before it is skipped.
    after: Option<Place>,
    /// The previous page's boundary (its tuple, the span the pages cover).
    boundary: Option<Boundary>,
    page_size: usize,
    throttle: usize,
    /// The known end of the page, while no read has buffered more: `(remaining, end)`.
    known: Option<(usize, Option<End>)>,
    stats: QueryStats,
}

/// A finished read: the lane, where it stops (if bounded), the limit it asked for, and the
/// store's answer.
type Read = (
    usize,
    Option<End>,
    u32,
    std::result::Result<crate::store::Page, crate::store::StoreError>,
);

/// A read to start: the lane, the request, where it stops (if bounded) and its limit.
type Scheduled = (usize, QueryPage, Option<End>, u32);

/// How many times a page predicts its end again when every lane is read up to the prediction
/// and the page is not full, before it reads without a bound.
const REPREDICTIONS: usize = 3;

impl<S: Store> Run<'_, '_, S> {
    fn descending(&self) -> bool {
        self.query.paging.descending
    }

    /// Orders in scan order: ascending, or reversed when descending.
    fn scan(&self, o: Ordering) -> Ordering {
        if self.descending() { o.reverse() } else { o }
    }

    fn cmp(&self, a: &Place, b: &Place) -> Ordering {
        self.scan(a.cmp(b))
    }

    fn cmp_tuple(&self, a: &[Scalar], b: &[Scalar]) -> Ordering {
        self.scan(a.cmp(b))
    }

    fn cmp_scalar(&self, a: &Scalar, b: &Scalar) -> Ordering {
        self.scan(a.cmp(b))
    }

    /// Whether the sort attributes hold a conditioned attribute, whose ends can bound reads.
    fn bounded(&self) -> bool {
        self.at < self.plan.multi.range.len()
    }

    /// Orders how far lanes are read, least advanced first.
    fn cmp_front(&self, one: &Front, other: &Front) -> Ordering {
        match (one, other) {
            (Front::At(x), Front::At(y)) => self.cmp_tuple(x, y),
            (Front::Through(x), Front::Through(y)) => self.cmp_scalar(x, y),
            (Front::At(tuple), Front::Through(through)) => match tuple.get(self.at) {
                // "through" a value holds every item at it
                Some(value) => self.cmp_scalar(value, through).then(Ordering::Less),
                None => Ordering::Less,
            },
            (Front::Through(_), Front::At(_)) => self.cmp_front(other, one).reverse(),
        }
    }

    /// Whether a lane read up to `front` holds no unread item at or before the tuple `head`.
    fn covers(&self, front: &Front, head: &[Scalar]) -> bool {
        match front {
            Front::At(t) => self.cmp_tuple(t, head) == Ordering::Greater,
            Front::Through(v) => head
                .get(self.at)
                .is_some_and(|h| self.cmp_scalar(v, h) != Ordering::Less),
        }
    }

    /// Whether a lane read up to `front` holds no unread item up to `end` (every item at it
    /// included).
    fn reaches(&self, front: &Front, end: &Scalar) -> bool {
        match front {
            Front::At(t) => t
                .get(self.at)
                .is_some_and(|v| self.cmp_scalar(v, end) == Ordering::Greater),
            Front::Through(v) => self.cmp_scalar(v, end) != Ordering::Less,
        }
    }

    /// The lane whose next item comes first in scan order.
    fn head(&self) -> Option<usize> {
        let mut best: Option<(usize, &Place)> = None;
        for (i, lane) in self.lanes.iter().enumerate() {
            if let Some((p, _)) = lane.buffer.front()
                && best.is_none_or(|(_, b)| self.cmp(p, b) == Ordering::Less)
            {
                best = Some((i, p));
            }
        }
        best.map(|(i, _)| i)
    }

    /// Whether a lane with something left to read may still hold an item before the head
    /// (every such lane, when nothing is buffered): the head cannot be emitted yet.
    fn blocked(&self, head: Option<&[Scalar]>) -> bool {
        self.lanes.iter().any(|lane| self.blocks(lane, head))
    }

    fn blocks(&self, lane: &Lane, head: Option<&[Scalar]>) -> bool {
        !lane.exhausted
            && match (&lane.frontier, head) {
                (None, _) | (Some(_), None) => true,
                (Some(f), Some(h)) => !self.covers(f, h),
            }
    }

    /// The lanes that can still give items (at least 1, to divide by).
    fn live(&self) -> usize {
        self.lanes
            .iter()
            .filter(|l| !(l.exhausted && l.buffer.is_empty()))
            .count()
            .max(1)
    }

    /// The page: up to `limit` items, and the boundary the next page starts from.
    async fn page(&mut self, limit: usize) -> Result<(Vec<Item>, Option<Boundary>)> {
        let throttle = self.throttle.max(1);
        let previous = self.boundary.clone();
        let margin = previous.as_ref().map_or(estimate::MARGIN, |b| {
            let averaged = self
                .span(b)
                .is_some_and(|(first, last)| estimate::averaged(&first, &last));
            estimate::margin(limit, self.live(), throttle, averaged)
        });
        let mut predicted = previous.as_ref().and_then(|b| {
            let (first, last) = self.span(b)?;
            let value = estimate::extrapolate(&first, &last, 1.0 + margin)?;
            self.end_of(value)
        });
        let mut repredicted = 0usize;
        let mut out: Vec<Item> = Vec::new();
        let mut first: Option<AttributeValue> = None;
        let mut last: Option<(usize, Place, AttributeValue)> = None;
        let mut inflight = FuturesUnordered::new();
        while out.len() < limit {
            let remaining = limit - out.len();
            let head = self.head();
            let head_tuple = head.and_then(|h| self.lanes[h].buffer.front().map(|(p, _)| p));
            if self.blocked(head_tuple.map(|p| p.tuple.as_slice())) {
                if inflight.len() < throttle {
                    let known = self.known_end(remaining);
                    if known.is_none()
                        && let Some(end) = &predicted
                        && self.lanes.iter().all(|l| {
                            l.exhausted
                                || l.frontier
                                    .as_ref()
                                    .is_some_and(|f| self.reaches(f, &end.scalar))
                        })
                    {
                        // every lane is read up to the predicted end and the page is not full:
                        // predict once more from what that range held; then read unbounded
                        let found = out.len() + self.buffered();
                        predicted = previous
                            .as_ref()
                            .and_then(|b| self.repredict(b, end, (found, limit), repredicted));
                        repredicted += 1;
                    }
                    let reads = self.schedule(
                        throttle - inflight.len(),
                        remaining,
                        known.as_ref(),
                        predicted.as_ref(),
                        margin,
                    )?;
                    let store = self.query.store;
                    for (t, request, end, asked) in reads {
                        self.stats.shard_queries += 1;
                        inflight.push(async move {
                            let result = store.query_page(&request).await;
                            (t, end, asked, result)
                        });
                    }
                }
                if let Some(done) = inflight.next().await {
                    self.settle(done)?;
                }
                continue;
            }
            let Some(h) = head else { break };
            let Some((place, item)) = self.lanes[h].buffer.pop_front() else {
                break;
            };
            let value = self.at_value(&item);
            if first.is_none() {
                first = Some(value.clone());
            }
            last = Some((h, place, value));
            out.push(item);
        }
        // reads still in flight are waited for, not abandoned: a caller that asks for the next
        // page at once must not find more than `throttle` of its reads in flight
        while let Some(done) = inflight.next().await {
            self.settle(done)?;
        }
        let boundary = match (first, last, &out.last()) {
            (Some(first), Some((lane, place, value)), Some(item)) => Some(self.next_boundary(
                &first,
                (lane, &place, &value, item),
                predicted.as_ref(),
                out.len(),
            )),
            _ => previous,
        };
        Ok((out, boundary))
    }

    /// The conditioned attribute's value of an item (`0` when the prefix covers every sort
    /// attribute: there is no span to predict from).
    fn at_value(&self, item: &Item) -> AttributeValue {
        self.plan
            .multi
            .range
            .get(self.at)
            .and_then(|p| item.get(&*p.name))
            .cloned()
            .unwrap_or(AttributeValue::N("0".into()))
    }

    /// The span of the previous pages on the conditioned attribute, from the boundary: where
    /// it starts and the last item's value.
    fn span(&self, b: &Boundary) -> Option<(AttributeValue, AttributeValue)> {
        if !self.bounded() {
            return None;
        }
        let AttributeValue::L(values) = &b.last else {
            return None;
        };
        let last = values.get(self.at)?.clone();
        let first = match &b.first {
            AttributeValue::L(values) => values.get(self.at)?.clone(),
            other => other.clone(),
        };
        Some((first, last))
    }

    /// An end at `value` of the conditioned attribute: numbers only (the span of other types
    /// is not averaged, and reads are not bounded by a guess on them).
    fn end_of(&self, value: AttributeValue) -> Option<End> {
        if !self.bounded() || !matches!(value, AttributeValue::N(_)) {
            return None;
        }
        let part = self.plan.multi.range.get(self.at)?;
        Some(End {
            scalar: Scalar::of(&value, part.key_type)?,
            value,
        })
    }

    fn buffered(&self) -> usize {
        self.lanes.iter().map(|l| l.buffer.len()).sum()
    }

    /// A new predicted end, when the range from the boundary to `end` (the previous
    /// prediction) held only `found` of the `want` items: as much further as the density found
    /// calls for, plus a margin, once; a page of fewer items than lanes goes on by the items
    /// still wanted at the pages' density, up to [`REPREDICTIONS`] times. Then (or when
    /// nothing was found) it reads without a bound (`None`).
    fn repredict(
        &self,
        boundary: &Boundary,
        end: &End,
        (found, want): (usize, usize),
        earlier: usize,
    ) -> Option<End> {
        let (first, last) = self.span(boundary)?;
        // counts of one page, far below 2^52
        #[allow(clippy::cast_precision_loss)]
        let next = if want < self.live() && estimate::averaged(&first, &last) {
            if earlier >= REPREDICTIONS {
                return None;
            }
            let need = want.saturating_sub(found).max(1);
            let margin = estimate::spread_margin(need, true, estimate::SPREAD_AGAIN);
            let factor = need as f64 / want as f64 * (1.0 + margin);
            estimate::advance(&first, &last, &end.value, factor)?
        } else if found > 0 && earlier == 0 {
            let factor =
                (want as f64 / found as f64 * (1.0 + estimate::MARGIN) - 1.0).max(estimate::MARGIN);
            estimate::extrapolate(&last, &end.value, factor)?
        } else {
            return None;
        };
        let next = self.end_of(next)?;
        (self.cmp_scalar(&next.scalar, &end.scalar) == Ordering::Greater).then_some(next)
    }

    /// Where the page is known to end: the `remaining`-th buffered item's value of the
    /// conditioned attribute, if that many are buffered (more reads can only bring it
    /// forward). Kept until a read buffers more: emitting an item takes the first buffered
    /// one and lowers `remaining` by one, which leaves it where it is.
    fn known_end(&mut self, remaining: usize) -> Option<End> {
        if !self.bounded() || remaining == 0 {
            return None;
        }
        if let Some((at, end)) = &self.known {
            // the cache was taken `at - remaining` items ago: the same end
            let emitted = at.checked_sub(remaining);
            if emitted.is_some() {
                return end.clone();
            }
        }
        let end = self.compute_known_end(remaining);
        self.known = Some((remaining, end.clone()));
        end
    }

    fn compute_known_end(&self, remaining: usize) -> Option<End> {
        if self.buffered() < remaining {
            return None;
        }
        let mut keys: Vec<(&Scalar, &Item)> = self
            .lanes
            .iter()
            .flat_map(|l| l.buffer.iter())
            .filter_map(|(p, item)| Some((p.tuple.get(self.at)?, item)))
            .collect();
        if keys.len() < remaining {
            return None;
        }
        let (_, &mut (scalar, item), _) =
            keys.select_nth_unstable_by(remaining - 1, |a, b| self.cmp_scalar(a.0, b.0));
        let part = self.plan.multi.range.get(self.at)?;
        Some(End {
            scalar: scalar.clone(),
            value: item.get(&*part.name)?.clone(),
        })
    }

    /// Up to `free` lanes to read now, least advanced first: the unread lanes, then the lanes
    /// that block the merge or are short of `bound`, skipping those being read. With nothing
    /// buffered and a bound, a lane read up to it waits for the others (if they find nothing
    /// either, the page predicts its end again) rather than read on without one.
    fn targets(&self, free: usize, bound: Option<&End>) -> Vec<usize> {
        let head = self
            .head()
            .and_then(|h| self.lanes[h].buffer.front())
            .map(|(p, _)| p.tuple.as_slice());
        let mut unread = Vec::new();
        let mut read: Vec<(&Front, usize)> = Vec::new();
        for (t, lane) in self.lanes.iter().enumerate() {
            if lane.exhausted || lane.busy {
                continue;
            }
            let Some(front) = &lane.frontier else {
                unread.push(t);
                continue;
            };
            let short = bound.is_some_and(|b| !self.reaches(front, &b.scalar));
            let wanted = match head {
                Some(h) => short || !self.covers(front, h),
                None => short || bound.is_none(),
            };
            if wanted {
                read.push((front, t));
            }
        }
        read.sort_by(|a, b| self.cmp_front(a.0, b.0).then(a.1.cmp(&b.1)));
        unread
            .into_iter()
            .chain(read.into_iter().map(|(_, t)| t))
            .take(free)
            .collect()
    }

    /// The next reads, at most `free`: the lane, the request, where it stops (if bounded) and
    /// its limit. Each read stops at the known end of the page (taking everything up to it);
    /// else at the predicted end, for lanes short of it, a little more than a fair share; else
    /// it takes a fair share of what the page still wants. Lanes settled without a read
    /// (nothing can match up to the end) are marked read that far.
    fn schedule(
        &mut self,
        free: usize,
        remaining: usize,
        known: Option<&End>,
        predicted: Option<&End>,
        margin: f64,
    ) -> Result<Vec<Scheduled>> {
        let live = self.live();
        let bound = known.or(predicted);
        let targets = self.targets(free, bound);
        let mut reads = Vec::with_capacity(targets.len());
        for t in targets {
            let short_of = |end: &End| {
                self.lanes[t]
                    .frontier
                    .as_ref()
                    .is_none_or(|f| !self.reaches(f, &end.scalar))
            };
            // one item more than the page can take from the lane: a read that returns fewer
            // than it asked shows the lane complete up to where it stops; and one more after a
            // boundary (a lane reads from the boundary's value on, so it reads the previous
            // page's last item again, unless it resumes right after it)
            let extra = 1 + usize::from(self.after.is_some() && self.lanes[t].cursor.is_none());
            let (end, limit) = estimate::next_read(
                (known, predicted),
                short_of,
                (remaining, live, margin),
                extra,
                self.page_size,
            );
            if let Some((request, bounded)) = self.request(t, limit, end)? {
                self.lanes[t].busy = true;
                reads.push((t, request, end.filter(|_| bounded).cloned(), limit));
            }
        }
        Ok(reads)
    }

    /// The next read of lane `t`, up to `end`; `None` when the lane is settled without one (it
    /// was already read past the end, or nothing can match up to it). The flag tells whether
    /// the read stops at the end.
    fn request(
        &mut self,
        t: usize,
        limit: u32,
        end: Option<&End>,
    ) -> Result<Option<(QueryPage, bool)>> {
        let q = self.query;
        // a lane whose page key lies past the end holds nothing more up to it; DynamoDB would
        // also reject a starting key outside the key condition
        let position = self.lanes[t].cursor.as_ref().and_then(|k| self.tuple_of(k));
        if let (Some(end), Some(position)) = (end, &position)
            && position
                .get(self.at)
                .is_some_and(|v| self.cmp_scalar(&end.scalar, v) == Ordering::Less)
        {
            // every item before the page key was read: everything up to the end
            let reached = Front::Through(end.scalar.clone());
            let advances = self.lanes[t]
                .frontier
                .as_ref()
                .is_none_or(|f| self.cmp_front(f, &reached) == Ordering::Less);
            if advances {
                self.lanes[t].frontier = Some(reached);
            }
            return Ok(None);
        }
        let after = self.boundary.as_ref().and_then(|b| match &b.last {
            AttributeValue::L(values) => values.get(self.at),
            _ => None,
        });
        let condition = if self.bounded() {
            let condition = key_condition(
                q.range.as_ref(),
                after,
                end.map(|e| &e.value),
                self.descending(),
            );
            let Some(condition) = condition else {
                // nothing can match up to the end (or at all)
                let lane = &mut self.lanes[t];
                match end {
                    Some(end) => lane.frontier = Some(Front::Through(end.scalar.clone())),
                    None => lane.exhausted = true,
                }
                return Ok(None);
            };
            condition
        } else {
            None
        };
        let def = &self.plan.lanes[t];
        let mut values = def
            .shard
            .iter()
            .map(|s| AttributeValue::S(s.clone()))
            .chain(q.hash.iter().cloned());
        let Some(first) = values.next() else {
            return Err(q.invalid("a multi-attribute key needs a partition attribute"));
        };
        let mut request = QueryPage::new(first)
            .index(q.index.clone())
            .range_prefix(q.prefix.iter().cloned())
            .descending(self.descending())
            .limit(limit);
        for v in values {
            request = request.and_hash_key(v);
        }
        if let Some(c) = condition {
            request = request.range(c);
        }
        Ok(Some((
            request.start_after(self.lanes[t].cursor.clone()),
            end.is_some(),
        )))
    }

    /// Applies a finished read to its lane.
    fn settle(&mut self, (t, end, asked, result): Read) -> Result<()> {
        self.lanes[t].busy = false;
        let page = result.map_err(|source| Error::ShardQuery {
            entity: self.query.tokens(),
            index: self.query.index.clone(),
            hash_key: self.plan.lanes[t]
                .shard
                .clone()
                .unwrap_or_else(|| format!("{:?}", self.query.hash)),
            source: Box::new(source),
        })?;
        self.stats.items_read += page.items.len();
        self.stats.consumed_capacity += page.consumed_capacity.unwrap_or(0.0);
        let limit_reached = page.items.len() >= usize::try_from(asked).unwrap_or(usize::MAX);
        self.take(t, page, limit_reached, end);
        Ok(())
    }

    /// The sort tuple of an item or a page key.
    fn tuple_of(&self, item: &Item) -> Option<Vec<Scalar>> {
        self.plan
            .multi
            .range
            .iter()
            .map(|p| item.get(&*p.name).and_then(|v| Scalar::of(v, p.key_type)))
            .collect()
    }

    /// The page key of an item of lane `t`: the table keys and every index key attribute.
    fn key_of(&self, item: &Item) -> Option<Item> {
        let table = self.plan.entities.first()?.table();
        let names = [&*table.hash_key, &*table.range_key]
            .into_iter()
            .chain(self.plan.multi.hash_names())
            .chain(self.plan.multi.range_names());
        let mut key = Item::default();
        for name in names {
            key.insert(name.to_owned(), item.get(name)?.clone());
        }
        Some(key)
    }

    /// Takes a read of lane `t`: buffers what belongs to the page's entities and lies after the
    /// boundary, and moves the lane's read position: to the page key, or when there is none,
    /// to "complete up to the end" or "exhausted".
    fn take(&mut self, t: usize, page: crate::store::Page, limit_reached: bool, end: Option<End>) {
        let last_read = page.items.last().and_then(|item| self.key_of(item));
        let mut kept = Vec::new();
        for item in page.items {
            let Some(place) = place_of(self.plan, &item) else {
                continue;
            };
            if !self.belongs(t, &item) {
                continue;
            }
            if let Some(after) = &self.after
                && self.cmp(&place, after) != Ordering::Greater
            {
                continue;
            }
            if !self.holds(&item) {
                continue;
            }
            kept.push((place, item));
        }
        if !kept.is_empty() {
            self.known = None;
        }
        // DynamoDB returns a page key whenever the limit is reached; DynamoDB Local omits it
        // when the last item sits exactly on an inclusive bound, although equal keys may
        // follow: resume after the last item rather than trust "complete"
        let last_evaluated_key = match page.last_evaluated_key {
            Some(key) => Some(key),
            None if limit_reached => last_read.clone(),
            None => None,
        };
        let position = last_evaluated_key.as_ref().and_then(|k| self.tuple_of(k));
        let descending = self.descending();
        let bounded_read = end.is_some();
        let through = end.map(|e| Front::Through(e.scalar));
        let advance = |lane: &Lane, front: Front, run: &Self| {
            lane.frontier
                .as_ref()
                .is_none_or(|f| run.cmp_front(f, &front) == Ordering::Less)
                .then_some(front)
        };
        let next_front = match (&last_evaluated_key, position, through) {
            (Some(_), Some(position), _) => advance(&self.lanes[t], Front::At(position), self),
            (None, _, Some(through)) => advance(&self.lanes[t], through, self),
            _ => None,
        };
        let lane = &mut self.lanes[t];
        for (place, item) in kept {
            // a store gives equal tuples in no promised order: keep the lane's buffer in scan
            // order of (tuple, tie-breaker)
            let at = lane
                .buffer
                .iter()
                .rposition(|(p, _)| {
                    let o = p.cmp(&place);
                    (if descending { o.reverse() } else { o }) != Ordering::Greater
                })
                .map_or(0, |i| i + 1);
            lane.buffer.insert(at, (place, item));
        }
        if let Some(front) = next_front {
            lane.frontier = Some(front);
        }
        if last_evaluated_key.is_none() && !bounded_read {
            // an unbounded read that ran out: nothing is left
            lane.exhausted = true;
        }
        if let Some(key) = last_evaluated_key.or(last_read) {
            lane.cursor = Some(key);
        }
    }

    /// The boundary after a page whose first item has `first` as its conditioned value and
    /// whose last item is `last` (its lane, place, conditioned value and item).
    fn next_boundary(
        &self,
        first: &AttributeValue,
        (lane, place, value, item): (usize, &Place, &AttributeValue, &Item),
        predicted: Option<&End>,
        returned: usize,
    ) -> Boundary {
        // the next page resumes the last item's lane right after it, unless an item left in
        // some lane ties with it (then every lane reads its value again)
        let ties = self
            .lanes
            .iter()
            .any(|l| l.buffer.iter().any(|(p, _)| p.tuple == place.tuple));
        // every lane read up to the prediction: the items found up to there measure how far a
        // page reaches
        let measured = predicted
            .filter(|end| {
                self.lanes.iter().all(|l| {
                    l.exhausted
                        || l.frontier
                            .as_ref()
                            .is_some_and(|f| self.reaches(f, &end.scalar))
                })
            })
            .and_then(|end| {
                let through = self
                    .lanes
                    .iter()
                    .flat_map(|l| l.buffer.iter())
                    .filter(|(p, _)| {
                        p.tuple
                            .get(self.at)
                            .is_some_and(|v| self.cmp_scalar(v, &end.scalar) != Ordering::Greater)
                    })
                    .count();
                let found = returned + through;
                // counts of one page, far below 2^52
                #[allow(clippy::cast_precision_loss)]
                let ratio = returned as f64 / found as f64;
                (found > 0).then_some((&end.value, ratio))
            });
        let span = self.boundary.as_ref().and_then(|b| self.span(b));
        let start = if self.bounded() {
            estimate::span_start(span.as_ref().map(|(f, l)| (f, l)), first, value, measured)
        } else {
            AttributeValue::N("0".into())
        };
        Boundary {
            first: start,
            last: tuple_value(&self.plan.multi, item),
            unique: join_tie(&place.tie),
            lane: (!ties).then_some(lane),
            run: false,
        }
    }

    /// Whether an item of lane `i` is a record of one of the query's entities (an unsharded
    /// partition holds every entity's items).
    fn belongs(&self, i: usize, item: &Item) -> bool {
        if self.plan.lanes[i].shard.is_some() {
            return true;
        }
        let Some(AttributeValue::S(hash)) = item.get(&*self.plan.entities[0].table().hash_key)
        else {
            return false;
        };
        self.plan.entities.iter().any(|e| {
            hash.strip_prefix(&*e.model().token)
                .is_some_and(|rest| rest.starts_with(&*e.table().delimiters.shard_key))
        })
    }

    /// Whether an item holds the user's condition (a narrowed condition may read more).
    fn holds(&self, item: &Item) -> bool {
        let query = self.query;
        let Some(condition) = &query.range else {
            return true;
        };
        let Some(part) = self.plan.multi.range.get(query.prefix.len()) else {
            return true;
        };
        let Some(value) = item.get(&*part.name) else {
            return false;
        };
        let order = |other: &AttributeValue| estimate::compare(value, other);
        match condition {
            RangeCondition::Eq(x) => order(x) == Ordering::Equal,
            RangeCondition::Lt(x) => order(x) == Ordering::Less,
            RangeCondition::Le(x) => order(x) != Ordering::Greater,
            RangeCondition::Gt(x) => order(x) == Ordering::Greater,
            RangeCondition::Ge(x) => order(x) != Ordering::Less,
            RangeCondition::Between(low, high) => {
                order(low) != Ordering::Less && order(high) != Ordering::Greater
            }
            RangeCondition::BeginsWith(prefix) => match (value, prefix) {
                (AttributeValue::S(text), AttributeValue::S(p)) => text.starts_with(p.as_str()),
                (AttributeValue::B(bytes), AttributeValue::B(p)) => bytes.starts_with(p),
                _ => false,
            },
        }
    }
}

/// The place of an item: its sort tuple and tie-breaker (table range key, table hash key);
/// `None` for an item without them (not in the index).
fn place_of(plan: &Plan<'_>, item: &Item) -> Option<Place> {
    let tuple = plan
        .multi
        .range
        .iter()
        .map(|p| item.get(&*p.name).and_then(|v| Scalar::of(v, p.key_type)))
        .collect::<Option<Vec<_>>>()?;
    let table = plan.entities.first()?.table();
    let text = |name: &str| match item.get(name) {
        Some(AttributeValue::S(s)) => Some(s.clone()),
        _ => None,
    };
    Some(Place {
        tuple,
        tie: (text(&table.range_key)?, text(&table.hash_key)?),
    })
}

/// An item's sort tuple as an `L` (what the token holds).
fn tuple_value(multi: &MultiKey, item: &Item) -> AttributeValue {
    AttributeValue::L(
        multi
            .range
            .iter()
            .map(|p| {
                item.get(&*p.name)
                    .cloned()
                    .unwrap_or(AttributeValue::S(String::new()))
            })
            .collect(),
    )
}

/// One end of a range of the conditioned attribute.
#[derive(Clone, Debug)]
struct Limit {
    value: AttributeValue,
    inclusive: bool,
}

/// The key condition of a read: the user's condition on the conditioned attribute, narrowed
/// to what lies at or after `from` (the boundary's value) and at or before `to` (where the read
/// stops) in scan order. `None` when nothing can match; `Some(None)` for no condition. The
/// result may hold more than asked (an exclusive end becomes inclusive when two ends combine,
/// a prefix a range up to its successor): reads skip what the user's condition does not hold.
#[allow(clippy::option_option)] // "nothing can match" and "no condition" differ
fn key_condition(
    user: Option<&RangeCondition>,
    from: Option<&AttributeValue>,
    to: Option<&AttributeValue>,
    descending: bool,
) -> Option<Option<RangeCondition>> {
    use RangeCondition as R;
    let cmp = |a: &AttributeValue, b: &AttributeValue| estimate::compare(a, b);
    let at = |value: &AttributeValue, inclusive: bool| {
        Some(Limit {
            value: value.clone(),
            inclusive,
        })
    };
    let (mut low, mut high, mut prefix) = (None, None, None);
    match user {
        None => {}
        Some(R::Eq(v)) => (low, high) = (at(v, true), at(v, true)),
        Some(R::Lt(v)) => high = at(v, false),
        Some(R::Le(v)) => high = at(v, true),
        Some(R::Gt(v)) => low = at(v, false),
        Some(R::Ge(v)) => low = at(v, true),
        Some(R::Between(a, b)) => (low, high) = (at(a, true), at(b, true)),
        Some(R::BeginsWith(p)) => prefix = Some(p.clone()),
    }
    // the tighter of two lower (or upper) ends
    let tighter = |current: Option<Limit>, new: Option<&AttributeValue>, upper: bool| {
        let Some(new) = new else { return current };
        Some(match current {
            None => Limit {
                value: new.clone(),
                inclusive: true,
            },
            // at the same value, the current end (exclusive or not) is as tight
            Some(c) => match (cmp(new, &c.value), upper) {
                (Ordering::Less, true) | (Ordering::Greater, false) => Limit {
                    value: new.clone(),
                    inclusive: true,
                },
                _ => c,
            },
        })
    };
    let (lower_end, upper_end) = if descending { (to, from) } else { (from, to) };
    if let Some(p) = &prefix
        && (lower_end.is_some() || upper_end.is_some())
    {
        // a prefix is the range from itself up to its successor (exclusive)
        low = at(p, true);
        high = prefix_successor(p).and_then(|next| at(&next, false));
        prefix = None;
    }
    let low = tighter(low, lower_end, false);
    let high = tighter(high, upper_end, true);
    if let Some(p) = prefix {
        return Some(Some(R::BeginsWith(p)));
    }
    Some(match (low, high) {
        (Some(l), Some(h)) => match cmp(&l.value, &h.value) {
            Ordering::Greater => return None,
            Ordering::Equal if !(l.inclusive && h.inclusive) => return None,
            Ordering::Equal => Some(R::Eq(l.value)),
            Ordering::Less => Some(R::Between(l.value, h.value)),
        },
        (Some(l), None) if l.inclusive => Some(R::Ge(l.value)),
        (Some(l), None) => Some(R::Gt(l.value)),
        (None, Some(h)) if h.inclusive => Some(R::Le(h.value)),
        (None, Some(h)) => Some(R::Lt(h.value)),
        (None, None) => None,
    })
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Whether `x` meets `c`, evaluated here apart from the code under test.
    fn meets(condition: &RangeCondition, value: &AttributeValue) -> bool {
        use RangeCondition as R;
        let order = |other: &AttributeValue| estimate::compare(value, other);
        match condition {
            R::Eq(v) => order(v).is_eq(),
            R::Lt(v) => order(v).is_lt(),
            R::Le(v) => order(v).is_le(),
            R::Gt(v) => order(v).is_gt(),
            R::Ge(v) => order(v).is_ge(),
            R::Between(low, high) => order(low).is_ge() && order(high).is_le(),
            R::BeginsWith(prefix) => match (value, prefix) {
                (AttributeValue::S(text), AttributeValue::S(p)) => text.starts_with(p.as_str()),
                _ => false,
            },
        }
    }

    fn text(v: &str) -> AttributeValue {
        AttributeValue::S(v.to_owned())
    }

    /// Strings over a small alphabet, so that prefixes and bounds meet.
    fn word() -> impl Strategy<Value = String> {
        proptest::collection::vec(prop_oneof![Just('a'), Just('b'), Just('c')], 0..3)
            .prop_map(|chars| chars.into_iter().collect())
    }

    fn condition() -> impl Strategy<Value = Option<RangeCondition>> {
        use RangeCondition as R;
        proptest::option::of(prop_oneof![
            word().prop_map(|v| R::Eq(text(&v))),
            word().prop_map(|v| R::Lt(text(&v))),
            word().prop_map(|v| R::Le(text(&v))),
            word().prop_map(|v| R::Gt(text(&v))),
            word().prop_map(|v| R::Ge(text(&v))),
            (word(), word()).prop_map(|(a, b)| R::Between(text(&a), text(&b))),
            word().prop_map(|v| R::BeginsWith(text(&v))),
        ])
    }

    proptest! {
        /// A read's key condition holds every value the user's condition holds between the
        /// boundary and the end (in scan order), and nothing beyond them; "nothing can match"
        /// only when no value is wanted.
        #[test]
        fn key_conditions_cover_what_the_page_wants(
            user in condition(),
            from in proptest::option::of(word()),
            to in proptest::option::of(word()),
            descending: bool,
        ) {
            let (from, to) = (from.map(|v| text(&v)), to.map(|v| text(&v)));
            let scan = |a: &AttributeValue, b: &AttributeValue| {
                let o = estimate::compare(a, b);
                if descending { o.reverse() } else { o }
            };
            let wanted = |x: &AttributeValue| {
                user.as_ref().is_none_or(|c| meets(c, x))
                    && from.as_ref().is_none_or(|f| scan(x, f).is_ge())
                    && to.as_ref().is_none_or(|t| scan(x, t).is_le())
            };
            let got = key_condition(user.as_ref(), from.as_ref(), to.as_ref(), descending);
            // every string of up to 3 letters of the alphabet, and a few beyond it
            let mut values = vec![String::new()];
            for _ in 0..3 {
                let longer: Vec<String> = values
                    .iter()
                    .flat_map(|v| ["a", "b", "c", "d"].map(|c| format!("{v}{c}")))
                    .collect();
                values.extend(longer);
            }
            values.sort();
            values.dedup();
            for x in values.iter().map(|v| text(v)) {
                match &got {
                    None => prop_assert!(!wanted(&x), "{x:?} is wanted, yet nothing matches"),
                    Some(None) => {
                        prop_assert!(user.is_none() && from.is_none() && to.is_none());
                    }
                    Some(Some(c)) => {
                        if wanted(&x) {
                            prop_assert!(meets(c, &x), "{x:?} wanted, not in {c:?}");
                        }
                        let bounded = !matches!(c, RangeCondition::BeginsWith(_));
                        if bounded && meets(c, &x) {
                            prop_assert!(from.as_ref().is_none_or(|f| scan(&x, f).is_ge()));
                            prop_assert!(to.as_ref().is_none_or(|t| scan(&x, t).is_le()));
                        }
                    }
                }
            }
            if let Some(Some(RangeCondition::BeginsWith(_))) = &got {
                prop_assert!(from.is_none() && to.is_none(), "a prefix is narrowed by its ends");
            }
        }
    }

    #[test]
    fn key_conditions_narrow_numbers_to_the_page() {
        use RangeCondition as R;
        let n = |v: i64| AttributeValue::N(v.to_string());
        // ascending from the boundary 5 up to the end 9, within >= 3
        assert_eq!(
            key_condition(Some(&R::Ge(n(3))), Some(&n(5)), Some(&n(9)), false),
            Some(Some(R::Between(n(5), n(9))))
        );
        // descending: from 9 down to 5
        assert_eq!(
            key_condition(None, Some(&n(9)), Some(&n(5)), true),
            Some(Some(R::Between(n(5), n(9))))
        );
        // an exclusive end meeting the boundary: nothing
        assert_eq!(
            key_condition(Some(&R::Lt(n(5))), Some(&n(5)), None, false),
            None
        );
        assert_eq!(
            key_condition(Some(&R::Eq(n(5))), Some(&n(5)), Some(&n(7)), false),
            Some(Some(R::Eq(n(5))))
        );
    }
}
