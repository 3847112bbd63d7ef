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
//! and tie-breaker and one "exhausted" bit per lane; the next page reads every live lane from
//! the boundary's value of the conditioned sort attribute on (the user's condition narrowed to
//! it; a `begins_with` cannot be narrowed and is read from its start) and skips what lies at or
//! before the boundary.
//!
//! # Reads
//!
//! Each round reads, with at most `throttle` shard queries in flight, the lanes that may still
//! hold an item before the next one to emit, `page_size` items at most per read (the first read
//! of a lane on a page asks for about its share of the page). Reads of lanes that run ahead of
//! the page are kept only for this page: the next page reads them again from its boundary.

use std::cmp::Ordering;
use std::collections::HashSet;

use futures::StreamExt as _;
use serde_dynamo::{AttributeValue, Item};
use sha2::{Digest as _, Sha256};

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
    buffer: Vec<(Place, Item)>,
    /// Where the next read of this page starts.
    cursor: Option<Item>,
    /// The tuple of the last item read (in scan order, everything up to it was read).
    frontier: Option<Vec<Scalar>>,
    /// Nothing is left to read.
    exhausted: bool,
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
        let mut run = Run {
            query: self,
            plan: &plan,
            lanes: exhausted
                .iter()
                .map(|&e| Lane {
                    exhausted: e,
                    ..Lane::default()
                })
                .collect(),
            after,
            boundary_value: state.boundary.as_ref().map(|b| b.last.clone()),
            page_size,
            throttle,
            stats: QueryStats {
                shards: plan.lanes.len(),
                ..QueryStats::default()
            },
        };
        let (items, last) = run.page(limit).await?;
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
            let boundary = match (&last, &state.boundary) {
                (Some((first, last_item)), _) => Some(Boundary {
                    first: first.clone(),
                    last: last_item.0.clone(),
                    unique: last_item.1.clone(),
                    lane: None,
                }),
                (None, previous) => previous.clone(),
            };
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

/// One page in progress.
struct Run<'q, 'a, S> {
    query: &'q MultiQuery<'a, S>,
    plan: &'q Plan<'a>,
    lanes: Vec<Lane>,
    /// The previous page's last item: everything at or before it is skipped.
    after: Option<Place>,
    /// Its sort tuple, as the token holds it.
    boundary_value: Option<AttributeValue>,
    page_size: usize,
    throttle: usize,
    stats: QueryStats,
}

/// The last item of a page: its tuple (as an `L`) and tie-breaker.
type Last = (AttributeValue, String);

impl<S: Store> Run<'_, '_, S> {
    /// Compares places in scan order.
    fn cmp(&self, a: &Place, b: &Place) -> Ordering {
        let o = a.cmp(b);
        if self.query.paging.descending {
            o.reverse()
        } else {
            o
        }
    }

    fn cmp_tuple(&self, a: &[Scalar], b: &[Scalar]) -> Ordering {
        let o = a.cmp(b);
        if self.query.paging.descending {
            o.reverse()
        } else {
            o
        }
    }

    /// The page: up to `limit` items, with the first item's tuple and the last item.
    async fn page(&mut self, limit: usize) -> Result<(Vec<Item>, Option<(AttributeValue, Last)>)> {
        let mut out: Vec<Item> = Vec::new();
        let mut first: Option<AttributeValue> = None;
        let mut last: Option<Last> = None;
        loop {
            if out.len() >= limit {
                break;
            }
            // the earliest buffered item
            let head = self
                .lanes
                .iter()
                .enumerate()
                .filter_map(|(i, l)| l.buffer.first().map(|(p, _)| (i, p)))
                .min_by(|(_, a), (_, b)| self.cmp(a, b))
                .map(|(i, p)| (i, p.clone()));
            // lanes that may still hold an item at or before it
            let blocking: Vec<usize> = (0..self.lanes.len())
                .filter(|&i| {
                    let lane = &self.lanes[i];
                    !lane.exhausted
                        && match (&head, &lane.frontier) {
                            (_, None) | (None, _) => true,
                            (Some((_, h)), Some(f)) => {
                                self.cmp_tuple(f, &h.tuple) != Ordering::Greater
                            }
                        }
                })
                .collect();
            if blocking.is_empty() {
                let Some((lane, _)) = head else { break };
                let (place, item) = self.lanes[lane].buffer.remove(0);
                if first.is_none() {
                    first = Some(tuple_value(&self.plan.multi, &item));
                }
                last = Some((tuple_value(&self.plan.multi, &item), join_tie(&place.tie)));
                out.push(item);
                continue;
            }
            let live = self.lanes.iter().filter(|l| !l.exhausted).count().max(1);
            let share = (limit - out.len()).div_ceil(live) + 1;
            self.read(&blocking, share.min(self.page_size)).await?;
        }
        Ok((out, first.zip(last)))
    }

    /// Reads the next chunk of each lane of `lanes`, at most `throttle` at once.
    async fn read(&mut self, lanes: &[usize], chunk: usize) -> Result<()> {
        let chunk = u32::try_from(chunk.max(1)).unwrap_or(u32::MAX);
        let requests: Vec<(usize, Option<QueryPage>)> = lanes
            .iter()
            .map(|&i| Ok((i, self.request(i, chunk)?)))
            .collect::<Result<Vec<_>>>()?;
        let store = self.query.store;
        let results: Vec<(usize, Option<std::result::Result<crate::store::Page, _>>)> =
            futures::stream::iter(requests.into_iter().map(|(i, request)| async move {
                match request {
                    Some(request) => (i, Some(store.query_page(&request).await)),
                    None => (i, None),
                }
            }))
            .buffer_unordered(self.throttle)
            .collect()
            .await;
        for (i, result) in results {
            let Some(result) = result else {
                // the narrowed condition matches nothing
                self.lanes[i].exhausted = true;
                continue;
            };
            self.stats.shard_queries += 1;
            let page = result.map_err(|source| Error::ShardQuery {
                entity: self.query.tokens(),
                index: self.query.index.clone(),
                hash_key: self.plan.lanes[i]
                    .shard
                    .clone()
                    .unwrap_or_else(|| format!("{:?}", self.query.hash)),
                source: Box::new(source),
            })?;
            self.stats.items_read += page.items.len();
            self.stats.consumed_capacity += page.consumed_capacity.unwrap_or(0.0);
            self.take(i, page);
        }
        Ok(())
    }

    /// The next read of lane `i`; `None` when nothing can match.
    fn request(&self, i: usize, chunk: u32) -> Result<Option<QueryPage>> {
        let lane = &self.lanes[i];
        let def = &self.plan.lanes[i];
        let q = self.query;
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
            .descending(q.paging.descending)
            .limit(chunk);
        for v in values {
            request = request.and_hash_key(v);
        }
        // after a boundary, every read of the page is from the boundary's value of the
        // conditioned attribute on
        let at = q.prefix.len();
        let bound = match &self.boundary_value {
            Some(AttributeValue::L(values)) => values.get(at),
            _ => None,
        };
        let condition = match bound {
            None => q.range.clone(),
            Some(t) => match from_boundary(q.range.as_ref(), t, q.paging.descending) {
                Some(c) => Some(c),
                None => return Ok(None),
            },
        };
        if let Some(c) = condition {
            request = request.range(c);
        }
        Ok(Some(request.start_after(lane.cursor.clone())))
    }

    /// Takes a read of lane `i`: buffers what belongs to the page's entities and lies after the
    /// boundary, and moves the lane's frontier.
    fn take(&mut self, i: usize, page: crate::store::Page) {
        let mut kept = Vec::new();
        let mut frontier = None;
        for item in page.items {
            let Some(place) = place_of(self.plan, &item) else {
                continue;
            };
            frontier = Some(place.tuple.clone());
            if !self.belongs(i, &item) {
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
        let descending = self.query.paging.descending;
        let lane = &mut self.lanes[i];
        if frontier.is_some() {
            lane.frontier = frontier;
        }
        lane.buffer.extend(kept);
        lane.buffer.sort_by(|(a, _), (b, _)| {
            let o = a.cmp(b);
            if descending { o.reverse() } else { o }
        });
        lane.exhausted = page.last_evaluated_key.is_none();
        lane.cursor = page.last_evaluated_key;
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

/// The user's condition narrowed to what lies at or after `t` in scan order (ascending: `>= t`;
/// descending: `<= t`); `None` when nothing can match. A `begins_with` is kept as it is (it
/// cannot be combined with a bound in one key condition).
fn from_boundary(
    user: Option<&RangeCondition>,
    t: &AttributeValue,
    descending: bool,
) -> Option<RangeCondition> {
    use RangeCondition as R;
    let cmp = |a: &AttributeValue, b: &AttributeValue| estimate::compare(a, b);
    let max = |a: &AttributeValue, b: &AttributeValue| {
        if cmp(a, b) == Ordering::Less {
            b.clone()
        } else {
            a.clone()
        }
    };
    let min = |a: &AttributeValue, b: &AttributeValue| {
        if cmp(a, b) == Ordering::Greater {
            b.clone()
        } else {
            a.clone()
        }
    };
    Some(if descending {
        // keep <= t
        match user {
            None => R::Le(t.clone()),
            Some(R::Eq(v)) if cmp(v, t) == Ordering::Greater => return None,
            Some(R::Lt(v)) if cmp(v, t) == Ordering::Greater => R::Le(t.clone()),
            Some(c @ (R::Eq(_) | R::BeginsWith(_) | R::Lt(_))) => c.clone(),
            Some(R::Le(v)) => R::Le(min(v, t)),
            Some(R::Gt(v) | R::Ge(v)) if cmp(v, t) == Ordering::Greater => return None,
            Some(R::Gt(v) | R::Ge(v)) => R::Between(v.clone(), t.clone()),
            Some(R::Between(a, _)) if cmp(a, t) == Ordering::Greater => return None,
            Some(R::Between(a, b)) => R::Between(a.clone(), min(b, t)),
        }
    } else {
        // keep >= t
        match user {
            None => R::Ge(t.clone()),
            Some(R::Eq(v)) if cmp(v, t) == Ordering::Less => return None,
            Some(R::Gt(v)) if cmp(v, t) == Ordering::Less => R::Ge(t.clone()),
            Some(c @ (R::Eq(_) | R::BeginsWith(_) | R::Gt(_))) => c.clone(),
            Some(R::Ge(v)) => R::Ge(max(v, t)),
            Some(R::Lt(v) | R::Le(v)) if cmp(v, t) == Ordering::Less => return None,
            Some(R::Lt(v) | R::Le(v)) => R::Between(t.clone(), v.clone()),
            Some(R::Between(_, b)) if cmp(b, t) == Ordering::Less => return None,
            Some(R::Between(a, b)) => R::Between(max(a, t), b.clone()),
        }
    })
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
