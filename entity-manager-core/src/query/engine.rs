//! One page of one merged stream: a k-way merge over shard lanes with per-lane cursors.
//!
//! Every lane (one shard of one index) is read in range-key order from its cursor. An item is
//! emitted only when no lane can still hold an earlier one, so pages are exact. Lanes are read
//! in small bounded steps: the first round reads each live lane up to where the page is
//! predicted to end, and later rounds refill only the lanes that block the merge, never past
//! the point where the page is already known to end. The cursor of each lane after the page is
//! the last item it gave (or where it stopped reading, when it gave everything it read).

use std::cmp::Ordering;
use std::collections::{HashSet, VecDeque};

use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use serde_dynamo::{AttributeValue, Item};

use super::QueryStats;
use super::estimate::{self, MARGIN};
use super::plan::Plan;
use super::token::{Boundary, IndexState, ShardState};
use crate::error::{Error, Result};
use crate::store::{Page, QueryPage, RangeCondition, Store};

/// Where one lane stands during a page.
#[derive(Debug)]
struct Lane {
    index: usize,
    shard: usize,
    /// Items read but not yet emitted, in the lane's order, with their range keys.
    buffer: VecDeque<(AttributeValue, Item)>,
    /// Where the next read starts (`ExclusiveStartKey`); `None` for the beginning.
    read_from: Option<Item>,
    /// The lane's state at the start of the page, kept while it has emitted nothing.
    start: ShardState,
    /// The last item emitted (or dropped as a duplicate) from this lane on this page.
    consumed: Option<Item>,
    /// Every item up to this range key has been read.
    frontier: Option<AttributeValue>,
    /// Nothing is left to read.
    exhausted: bool,
}

/// The outcome of one page of one stream.
pub(crate) struct StreamPage {
    pub(crate) items: Vec<Item>,
    pub(crate) state: Vec<IndexState>,
}

/// A finished read: the lane, the bound it stopped at (if bounded), the limit it asked for, and
/// the store's answer.
type Read = (
    usize,
    Option<AttributeValue>,
    u32,
    std::result::Result<Page, crate::store::StoreError>,
);

/// The lanes that can still give items (at least 1, to divide by).
fn live(lanes: &[Lane]) -> usize {
    lanes
        .iter()
        .filter(|l| !l.exhausted || !l.buffer.is_empty())
        .count()
        .max(1)
}

/// `a` comes strictly before `b` in the scan direction.
fn before(a: &AttributeValue, b: &AttributeValue, descending: bool) -> bool {
    let order = estimate::compare(a, b);
    if descending {
        order == Ordering::Greater
    } else {
        order == Ordering::Less
    }
}

/// A range condition narrowed to what lies at or before `bound` in the scan direction.
enum Narrowed {
    /// Nothing can match: the lane holds nothing up to the bound.
    Empty,
    /// Query with this condition; `bounded` when it stops at the bound, so that running out
    /// means "complete up to the bound" rather than "exhausted".
    Query {
        condition: Option<RangeCondition>,
        bounded: bool,
    },
}

fn narrow(
    user: Option<&RangeCondition>,
    bound: Option<&AttributeValue>,
    descending: bool,
) -> Narrowed {
    use RangeCondition as R;
    let Some(t) = bound else {
        return Narrowed::Query {
            condition: user.cloned(),
            bounded: false,
        };
    };
    let cmp = |a: &AttributeValue, b: &AttributeValue| estimate::compare(a, b);
    let bounded = |condition: RangeCondition| Narrowed::Query {
        condition: Some(condition),
        bounded: true,
    };
    let unbounded = |condition: &RangeCondition| Narrowed::Query {
        condition: Some(condition.clone()),
        bounded: false,
    };
    let starts_with = |value: &AttributeValue, prefix: &AttributeValue| match (value, prefix) {
        (AttributeValue::S(v), AttributeValue::S(p)) => v.starts_with(p.as_str()),
        (AttributeValue::B(v), AttributeValue::B(p)) => v.starts_with(p),
        _ => false,
    };
    if descending {
        // keep items at or after `t` going down: range keys >= t
        match user {
            Some(R::Eq(v)) if cmp(v, t) == Ordering::Less => Narrowed::Empty,
            Some(c @ R::Eq(_)) => bounded(c.clone()),
            Some(R::Gt(v)) if cmp(v, t) != Ordering::Less => bounded(R::Gt(v.clone())),
            Some(R::Ge(v)) if cmp(v, t) != Ordering::Less => bounded(R::Ge(v.clone())),
            None | Some(R::Gt(_) | R::Ge(_)) => bounded(R::Ge(t.clone())),
            Some(R::Le(v)) if cmp(v, t) == Ordering::Less => Narrowed::Empty,
            Some(R::Le(v)) => bounded(R::Between(t.clone(), v.clone())),
            Some(R::Lt(v)) if cmp(v, t) != Ordering::Greater => Narrowed::Empty,
            Some(c @ R::Lt(_)) => unbounded(c),
            Some(R::Between(_, b)) if cmp(b, t) == Ordering::Less => Narrowed::Empty,
            Some(R::Between(a, b)) => {
                let low = if cmp(a, t) == Ordering::Less { t } else { a };
                bounded(R::Between(low.clone(), b.clone()))
            }
            Some(c @ R::BeginsWith(p)) => {
                if starts_with(t, p) {
                    unbounded(c)
                } else if cmp(t, p) == Ordering::Greater {
                    Narrowed::Empty
                } else {
                    bounded(c.clone())
                }
            }
        }
    } else {
        // keep range keys <= t
        match user {
            Some(R::Eq(v)) if cmp(v, t) == Ordering::Greater => Narrowed::Empty,
            Some(c @ R::Eq(_)) => bounded(c.clone()),
            Some(R::Lt(v)) if cmp(v, t) != Ordering::Greater => bounded(R::Lt(v.clone())),
            Some(R::Le(v)) if cmp(v, t) != Ordering::Greater => bounded(R::Le(v.clone())),
            None | Some(R::Lt(_) | R::Le(_)) => bounded(R::Le(t.clone())),
            Some(R::Ge(v)) if cmp(v, t) == Ordering::Greater => Narrowed::Empty,
            Some(R::Ge(v)) => bounded(R::Between(v.clone(), t.clone())),
            Some(R::Gt(v)) if cmp(v, t) != Ordering::Less => Narrowed::Empty,
            Some(c @ R::Gt(_)) => unbounded(c),
            Some(R::Between(a, _)) if cmp(a, t) == Ordering::Greater => Narrowed::Empty,
            Some(R::Between(a, b)) => {
                let high = if cmp(b, t) == Ordering::Greater { t } else { b };
                bounded(R::Between(a.clone(), high.clone()))
            }
            Some(c @ R::BeginsWith(p)) => {
                if starts_with(t, p) {
                    bounded(R::Between(p.clone(), t.clone()))
                } else if cmp(t, p) == Ordering::Less {
                    Narrowed::Empty
                } else {
                    bounded(c.clone())
                }
            }
        }
    }
}

/// Runs one page of one stream over the given indexes of the plan.
pub(crate) struct Engine<'p, 'a, S> {
    pub(crate) plan: &'p Plan<'a>,
    pub(crate) store: &'p S,
    pub(crate) page_size: usize,
    pub(crate) throttle: usize,
}

impl<S: Store> Engine<'_, '_, S> {
    /// Emits up to `want` items from the lanes of `indexes` (positions into the plan), starting
    /// from `states` (one per index in `indexes`), deduplicating by unique value against
    /// `seen`.
    pub(crate) async fn page(
        &self,
        indexes: &[usize],
        states: &[IndexState],
        want: usize,
        seen: &mut HashSet<String>,
        totals: &mut QueryStats,
    ) -> Result<StreamPage> {
        // a boundary and ties are kept once per stream, on its first index
        let boundary = states.first().and_then(|s| s.boundary.clone());
        for tie in states
            .first()
            .map(|s| s.ties.as_slice())
            .unwrap_or_default()
        {
            seen.insert(tie.clone());
        }
        let mut lanes = self.lanes(indexes, states);
        self.first_round(&mut lanes, boundary.as_ref(), want, totals)
            .await?;

        let mut out: Vec<Item> = Vec::new();
        let mut first_key: Option<AttributeValue> = None;
        let mut last_key: Option<AttributeValue> = None;
        // reads in flight, at most `throttle`: a lane is read again as soon as any read
        // returns, while the merge goes on with what is buffered
        let mut inflight = FuturesUnordered::new();
        let mut busy = vec![false; lanes.len()];
        while out.len() < want {
            let remaining = want - out.len();
            let head = self.head(&lanes);
            if self.blocked(&lanes, head) {
                // the page cannot end after the `remaining`-th buffered item: read no further
                let bound = self.nth_buffered(&lanes, remaining);
                // a read bounded by the page's known end cannot overshoot it: let it take all it
                // finds up to there in one query; unbounded, take a fair share
                let limit = if bound.is_some() {
                    remaining
                } else {
                    remaining.div_ceil(live(&lanes)).max(1)
                };
                let limit = u32::try_from(limit.min(self.page_size).max(1)).unwrap_or(u32::MAX);
                for t in self.refills(&lanes, head, bound.as_ref()) {
                    if inflight.len() >= self.throttle.max(1) {
                        break;
                    }
                    if busy[t] {
                        continue;
                    }
                    if let Some((request, bounded)) =
                        self.request(&mut lanes[t], limit, bound.as_ref())
                    {
                        busy[t] = true;
                        let end = if bounded { bound.clone() } else { None };
                        let store = self.store;
                        inflight.push(async move {
                            let result = store.query_page(&request).await;
                            (t, end, limit, result)
                        });
                    }
                }
                if let Some(done) = inflight.next().await {
                    self.settle(&mut lanes, &mut busy, done, totals)?;
                }
                continue;
            }
            let Some((key, item)) = head
                .and_then(|h| lanes[h].buffer.pop_front().map(|e| (h, e)))
                .map(|(h, (key, item))| {
                    lanes[h].consumed = Some(item.clone());
                    (key, item)
                })
            else {
                break;
            };
            if !seen.insert(self.plan.unique_of(&item).unwrap_or_default()) {
                totals.duplicates_removed += 1;
                continue;
            }
            if first_key.is_none() {
                first_key = Some(key.clone());
            }
            last_key = Some(key);
            out.push(item);
        }

        // reads still in flight are waited for: they were paid for, and they keep the cursors
        // and the throttle accounting exact
        while let Some(done) = inflight.next().await {
            self.settle(&mut lanes, &mut busy, done, totals)?;
        }
        let state = self.state_after(indexes, &lanes, &out, first_key, last_key, seen);
        Ok(StreamPage { items: out, state })
    }

    /// The lanes of `indexes`, each at its cursor from `states`.
    fn lanes(&self, indexes: &[usize], states: &[IndexState]) -> Vec<Lane> {
        let plan = self.plan;
        let mut lanes: Vec<Lane> = Vec::with_capacity(indexes.len() * plan.hash_keys.len());
        for (position, &index) in indexes.iter().enumerate() {
            for shard in 0..plan.hash_keys.len() {
                let start = states
                    .get(position)
                    .and_then(|s| s.shards.get(shard))
                    .cloned()
                    .unwrap_or(ShardState::NotStarted);
                let (read_from, exhausted) = match &start {
                    ShardState::NotStarted => (None, false),
                    ShardState::Exhausted => (None, true),
                    ShardState::After { unique, range_key } => (
                        Some(plan.resume_key(index, shard, unique, range_key)),
                        false,
                    ),
                };
                lanes.push(Lane {
                    index,
                    shard,
                    buffer: VecDeque::new(),
                    read_from,
                    start,
                    consumed: None,
                    frontier: None,
                    exhausted,
                });
            }
        }
        lanes
    }

    /// Reads every live lane once, up to where the page is predicted to end when the previous
    /// page's span allows a prediction, else a fair share of the page plus a tenth.
    async fn first_round(
        &self,
        lanes: &mut [Lane],
        boundary: Option<&Boundary>,
        want: usize,
        totals: &mut QueryStats,
    ) -> Result<()> {
        let predicted = boundary
            .filter(|_| want != usize::MAX)
            .and_then(|b| estimate::extrapolate(&b.first, &b.last, 1.0 + MARGIN));
        let share = want.div_ceil(live(lanes));
        let limit = if predicted.is_some() {
            share.saturating_mul(2)
        } else {
            share.saturating_add(share.div_ceil(10)).max(1)
        };
        let targets: Vec<usize> = (0..lanes.len()).filter(|&i| !lanes[i].exhausted).collect();
        self.fetch(lanes, &targets, limit, predicted.as_ref(), totals)
            .await
    }

    /// Whether a lane may still hold an item before the head (all live lanes block when nothing
    /// is buffered): the head cannot be emitted yet.
    fn blocked(&self, lanes: &[Lane], head: Option<usize>) -> bool {
        let head_key = head.map(|i| &lanes[i].buffer[0].0);
        lanes.iter().any(|lane| {
            lane.buffer.is_empty()
                && !lane.exhausted
                && match (head_key, &lane.frontier) {
                    (Some(h), Some(f)) => before(f, h, self.plan.descending),
                    _ => true,
                }
        })
    }

    /// The lanes to read in one round: those that block the head, and with them every live
    /// lane not yet read up to `bound` (the page's known end), which the page needs read that
    /// far anyway: reading them in the same round keeps `throttle` queries in flight instead of
    /// waiting for each in turn. Least advanced first, at most `throttle`.
    fn refills(
        &self,
        lanes: &[Lane],
        head: Option<usize>,
        bound: Option<&AttributeValue>,
    ) -> Vec<usize> {
        let descending = self.plan.descending;
        let head_key = head.map(|i| &lanes[i].buffer[0].0);
        let mut targets: Vec<usize> = (0..lanes.len())
            .filter(|&i| {
                let lane = &lanes[i];
                if lane.exhausted {
                    return false;
                }
                let blocks_head = lane.buffer.is_empty()
                    && match (head_key, &lane.frontier) {
                        (Some(h), Some(f)) => before(f, h, descending),
                        _ => true,
                    };
                let short_of_bound = match (bound, &lane.frontier) {
                    (Some(b), Some(f)) => before(f, b, descending),
                    (Some(_), None) => lane.buffer.is_empty(),
                    (None, _) => false,
                };
                blocks_head || short_of_bound
            })
            .collect();
        targets.sort_by(|&a, &b| match (&lanes[a].frontier, &lanes[b].frontier) {
            (Some(x), Some(y)) => {
                let o = estimate::compare(x, y);
                if descending { o.reverse() } else { o }
            }
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        });
        targets
    }

    /// The lane whose next buffered item comes first (ties: lane order, for determinism).
    fn head(&self, lanes: &[Lane]) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, lane) in lanes.iter().enumerate() {
            let Some((key, _)) = lane.buffer.front() else {
                continue;
            };
            match best {
                Some(b) if !before(key, &lanes[b].buffer[0].0, self.plan.descending) => {}
                _ => best = Some(i),
            }
        }
        best
    }

    /// The range key of the `n`-th buffered item in scan order, if that many are buffered.
    fn nth_buffered(&self, lanes: &[Lane], n: usize) -> Option<AttributeValue> {
        let total: usize = lanes.iter().map(|l| l.buffer.len()).sum();
        if n == 0 || total < n {
            return None;
        }
        let mut keys: Vec<&AttributeValue> = lanes
            .iter()
            .flat_map(|l| l.buffer.iter().map(|(k, _)| k))
            .collect();
        keys.sort_by(|a, b| {
            let o = estimate::compare(a, b);
            if self.plan.descending { o.reverse() } else { o }
        });
        keys.get(n - 1).map(|k| (*k).clone())
    }

    /// The next read of a lane, up to `bound`; `None` when the lane is settled without one (it
    /// was already read past the bound, or nothing can match up to it). The flag tells whether
    /// the read stops at the bound.
    fn request(
        &self,
        lane: &mut Lane,
        limit: u32,
        bound: Option<&AttributeValue>,
    ) -> Option<(QueryPage, bool)> {
        let plan = self.plan;
        let index = &plan.indexes[lane.index];
        // a lane already read past the bound (its last read item was filtered out beyond it)
        // holds nothing more up to the bound; DynamoDB would also reject a starting key outside
        // the key condition
        let position = lane
            .read_from
            .as_ref()
            .and_then(|k| k.get(&index.range_attr));
        if let (Some(end), Some(position)) = (bound, position)
            && before(end, position, plan.descending)
        {
            lane.frontier = Some(position.clone());
            return None;
        }
        match narrow(index.range.as_ref(), bound, plan.descending) {
            Narrowed::Empty => {
                // nothing up to the bound: the lane is read that far
                lane.frontier = bound.cloned();
                None
            }
            Narrowed::Query { condition, bounded } => {
                let mut request =
                    QueryPage::new(AttributeValue::S(plan.hash_keys[lane.shard].clone()))
                        .index(index.name.clone())
                        .limit(limit)
                        .descending(plan.descending)
                        .start_after(lane.read_from.clone());
                if let Some(condition) = condition {
                    request = request.range(condition);
                }
                if let Some(filter) = &index.filter {
                    request = request.filter(filter.clone());
                }
                if let Some(projection) = &plan.projection {
                    request = request.projection(projection.iter().cloned());
                }
                Some((request, bounded))
            }
        }
    }

    /// Reads the next page of each target lane (at most `throttle` queries in flight).
    async fn fetch(
        &self,
        lanes: &mut [Lane],
        targets: &[usize],
        limit: usize,
        bound: Option<&AttributeValue>,
        totals: &mut QueryStats,
    ) -> Result<()> {
        let limit = u32::try_from(limit.min(self.page_size).max(1)).unwrap_or(u32::MAX);
        let mut requests: Vec<(usize, QueryPage, bool)> = Vec::with_capacity(targets.len());
        for &t in targets {
            if let Some((request, bounded)) = self.request(&mut lanes[t], limit, bound) {
                requests.push((t, request, bounded));
            }
        }
        let store = self.store;
        let results: Vec<(
            usize,
            bool,
            std::result::Result<Page, crate::store::StoreError>,
        )> = futures::stream::iter(
            requests
                .into_iter()
                .map(|(t, request, bounded)| async move {
                    let result = store.query_page(&request).await;
                    (t, bounded, result)
                }),
        )
        .buffer_unordered(self.throttle.max(1))
        .collect()
        .await;
        for (t, bounded, result) in results {
            totals.shard_queries += 1;
            let lane = &mut lanes[t];
            let page = result.map_err(|source| self.shard_error(lane, source))?;
            totals.items_read += page.items.len();
            let limit_reached = page.items.len() >= usize::try_from(limit).unwrap_or(usize::MAX);
            self.take(
                lane,
                page,
                limit_reached,
                bounded.then_some(bound).flatten(),
            );
        }
        Ok(())
    }

    /// Buffers a shard page in its lane and moves the lane's read position: to the page key,
    /// or when there is none, to "complete up to the bound" or "exhausted".
    fn take(
        &self,
        lane: &mut Lane,
        page: Page,
        limit_reached: bool,
        bound: Option<&AttributeValue>,
    ) {
        let range_attr = &self.plan.indexes[lane.index].range_attr;
        let mut last_item: Option<Item> = None;
        for item in page.items {
            let Some(key) = item.get(range_attr).cloned() else {
                continue;
            };
            last_item = Some(item.clone());
            lane.buffer.push_back((key, item));
        }
        // DynamoDB returns a page key whenever the limit is reached; DynamoDB Local omits it
        // when the last item sits exactly on an inclusive bound, although equal keys may
        // follow: resume after the last item rather than trust "complete"
        let last_evaluated_key = page.last_evaluated_key.or_else(|| {
            last_item
                .as_ref()
                .filter(|_| limit_reached)
                .map(|item| self.key_of(lane.index, lane.shard, item))
        });
        if let Some(lek) = last_evaluated_key {
            lane.frontier = lek.get(range_attr).cloned();
            lane.read_from = Some(lek);
            return;
        }
        match bound {
            Some(bound) => lane.frontier = Some(bound.clone()),
            None => lane.exhausted = true,
        }
        if let Some(item) = last_item {
            lane.read_from = Some(self.key_of(lane.index, lane.shard, &item));
        }
    }

    /// Applies a finished read to its lane.
    fn settle(
        &self,
        lanes: &mut [Lane],
        busy: &mut [bool],
        (t, end, asked, result): Read,
        totals: &mut QueryStats,
    ) -> Result<()> {
        busy[t] = false;
        totals.shard_queries += 1;
        let lane = &mut lanes[t];
        let page = result.map_err(|source| self.shard_error(lane, source))?;
        totals.items_read += page.items.len();
        let limit_reached = page.items.len() >= usize::try_from(asked).unwrap_or(usize::MAX);
        self.take(lane, page, limit_reached, end.as_ref());
        Ok(())
    }

    /// A failed read of a lane, as the query's error.
    fn shard_error(&self, lane: &Lane, source: crate::store::StoreError) -> Error {
        let plan = self.plan;
        Error::ShardQuery {
            entity: plan.schema.model().token.to_string(),
            index: plan.indexes[lane.index].name.clone(),
            hash_key: plan.hash_keys[lane.shard].clone(),
            source: Box::new(source),
        }
    }

    /// The page key of an item in a lane: table keys plus index keys.
    fn key_of(&self, index: usize, shard: usize, item: &Item) -> Item {
        let plan = self.plan;
        let unique = plan.unique_of(item).unwrap_or_default();
        let range_key = item
            .get(&plan.indexes[index].range_attr)
            .cloned()
            .unwrap_or(AttributeValue::Null(true));
        plan.resume_key(index, shard, &unique, &range_key)
    }

    /// The lanes' states after the page, for the next token.
    fn state_after(
        &self,
        indexes: &[usize],
        lanes: &[Lane],
        out: &[Item],
        first_key: Option<AttributeValue>,
        last_key: Option<AttributeValue>,
        seen: &HashSet<String>,
    ) -> Vec<IndexState> {
        let plan = self.plan;
        let shards = plan.hash_keys.len();
        let mut states: Vec<IndexState> = indexes
            .iter()
            .map(|_| IndexState {
                boundary: None,
                ties: Vec::new(),
                shards: Vec::with_capacity(shards),
            })
            .collect();
        for (n, lane) in lanes.iter().enumerate() {
            let position = n / shards.max(1);
            let state = if lane.buffer.is_empty() && lane.exhausted {
                ShardState::Exhausted
            } else if lane.buffer.is_empty() {
                match &lane.read_from {
                    Some(key) => self.after(lane, key),
                    None => lane.start.clone(),
                }
            } else {
                match &lane.consumed {
                    Some(item) => self.after(lane, item),
                    None => lane.start.clone(),
                }
            };
            if let Some(s) = states.get_mut(position) {
                s.shards.push(state);
            }
        }
        if let (Some(first), Some(last), Some(s)) =
            (first_key, last_key.clone(), states.first_mut())
        {
            s.boundary = Some(Boundary { first, last });
        }
        if indexes.len() > 1
            && let (Some(last), Some(s)) = (last_key, states.first_mut())
        {
            // records returned at the last range key may also sit in another index of the
            // stream, after its cursor: remember them so the next page drops them
            let range_attrs: Vec<&str> = indexes
                .iter()
                .map(|&i| plan.indexes[i].range_attr.as_str())
                .collect();
            s.ties = out
                .iter()
                .filter(|item| {
                    range_attrs.iter().any(|a| {
                        item.get(*a)
                            .is_some_and(|v| estimate::compare(v, &last) == Ordering::Equal)
                    })
                })
                .filter_map(|item| plan.unique_of(item))
                .filter(|u| seen.contains(u))
                .collect();
        }
        states
    }

    fn after(&self, lane: &Lane, item: &Item) -> ShardState {
        let plan = self.plan;
        match (
            plan.unique_of(item),
            item.get(&plan.indexes[lane.index].range_attr),
        ) {
            (Some(unique), Some(range_key)) => ShardState::After {
                unique,
                range_key: range_key.clone(),
            },
            _ => lane.start.clone(),
        }
    }
}
