//! One page of one merged stream: a k-way merge over shard lanes.
//!
//! # Order
//!
//! Every lane (one shard of one index) is read in the store's order: by range key, and items
//! with equal range keys in the order the store keeps them (a function of their table keys:
//! `MemoryStore` orders them by table range key, `DynamoDB` and `DynamoDB` Local by a hash of
//! the table key, promised by neither). The merge emits items in one total order, the same on
//! every page: by range key, then by lane *rank* (the lane's table hash key; lanes of several
//! sources over one shard share a rank), then in the lane's own order. Descending queries use
//! the exact reverse. Every page is therefore a stretch of that order, and where a page ended
//! is fixed by its last item and that item's lane (the *boundary*), whatever else the store
//! holds: the next page resumes the boundary's lane right after its item (`ExclusiveStartKey`),
//! reads the lanes ranked before it strictly after the boundary's range key and the lanes ranked
//! after it from that range key on. Items tied on one range key cost no more than any others:
//! no lane ever reads an item twice to place a tie.
//!
//! An item is emitted only when no lane can still hold an earlier one in that order: every lane
//! keeps a *frontier* (everything it holds up to there was read) and the merge compares
//! frontiers and items in the global order.
//!
//! # Under concurrent writes
//!
//! Within a page, a lane is read in contiguous stretches: a read resumes where the lane was read
//! through (after its last item read, or after the range key a bounded read covered), never
//! behind it. And nothing at or before what the merge has already emitted (on this page or, via
//! the boundary, on an earlier one) is ever emitted: an item written behind the merge is
//! skipped. So a page is in order and no record comes twice across pages, whatever is written
//! meanwhile; a record that exists unchanged for the whole paging is returned exactly once.
//!
//! A lane read through the whole of a value `v` of the conditioned attribute reads on strictly
//! after `v` ([`Engine::strictly`]), never from `v` again: under index lag a read again could
//! meet there a record the index shows only now, ahead of where the page began (so the page
//! must return it) but behind what the merge emitted (so it cannot). Where a value next after
//! `v` is known (numbers at 38 digits, binaries ascending and some descending) the read starts
//! there and stays bounded at the page's end; else (strings) it reads `> v` (`< v` descending)
//! without the end and without a far bound of the user's condition (a key condition has one
//! comparison), a share of the page at most, skipping what lies beyond. Only a lane ranked
//! before the page's start boundary at its very key, whose items there all came before the
//! page, may read `v` again (it costs an item or so). `tests/query_resume.rs` checks the rule
//! request by request.
//!
//! On a multi-attribute key with sort attributes after the conditioned one, a token records
//! whether the lanes ranked before the boundary's were read through the boundary's whole value
//! ([`Boundary::through`]): the next page then reads them strictly after that value at once,
//! rather than first the rest of it after the boundary's tuple (`(v, > w)`) and then past it, a
//! read per lane saved where a page crosses from one value to the next.
//!
//! # Reads
//!
//! Reads are scheduled continuously: up to `throttle` shard queries are in flight, a new one
//! starts as soon as any returns, and the merge goes on meanwhile with what is buffered. The
//! lanes read, least advanced first (in the global order):
//! - every lane not yet read on the first page, and every lane that blocks the merge (it may
//!   still hold an item before the head);
//! - every lane not yet read up to where the page is known to end (the `remaining`-th buffered
//!   item: the page cannot end later), in one query bounded there;
//! - until that end is known, every lane not yet read up to where the page is predicted to end
//!   (from the previous page's span), a few items at a time. When the previous pages did not
//!   move (their items all tied), the page probably ends within the same range key: lanes are
//!   read in the global order, one at first, twice as many each round after.
//!
//! A lane that is the only one left reads what the page wants in one query. The page is over
//! as soon as it holds what it wants and the reads in flight are back.
//!
//! The predicted end extrapolates the distance the pages cover, a running average for number
//! range keys (see [`estimate::span_start`]), by a margin that shrinks with the page's size
//! ([`estimate::margin`]). Over more lanes than one round of the throttle (number range keys),
//! the ends are *staged*: the first round is bounded where the page ends with probability
//! [`estimate::FIRST_QUANTILE`] or more, and the first reads of the other lanes where it ends
//! with probability [`estimate::LATER_QUANTILE`] or more given what the reads back found
//! ([`estimate::Evidence`]: items buffered, how far each lane is read); the larger the page,
//! the closer its end is known and the higher the probability ([`estimate::quantiles`]). A
//! staged read asks for more items than an unstaged one ([`estimate::staged_margin`]), so that
//! a lane denser than its share rarely stops at its limit short of the page's end (a query
//! more, and a round more when the throttle is full).
//!
//! A page whose reads back found nothing where the pages' density expects
//! [`estimate::EMPTY_EVIDENCE`] items or more (the page after the last item, or one before a
//! gap) reads on without a bound at once: only an unbounded read shows that a lane has nothing
//! left, and bounding the next reads further first costs a round or more for nothing.
//!
//! # When a lane is done
//!
//! A lane is *exhausted* (never read again, and its flag is set in the page token) only when a
//! read that ran out covered everything from where it started to the last key the user's
//! condition admits, in scan order. What a read that runs out covers:
//! - a read with the user's condition alone (no bound of the engine's): every key the condition
//!   admits from its start on: the lane is done;
//! - a read bounded at a value `t` of the conditioned attribute (the attribute the condition
//!   is on: the range key of a classic index; on a multi-attribute key, the one after the
//!   equality prefix): every tuple whose conditioned attribute is up to `t` in scan order,
//!   whatever its free attributes after it hold (the key *through* `t`, see
//!   [`Lanes::key_through`]). The lane is read through there, not done;
//! - a read *within* a value, which resumes after a sort tuple `(v, w, x)` (the conditioned
//!   attribute `v`, free attributes after it) with an equality on its leading attributes and a
//!   condition on its deepest one (`(v, w, > x)`, see [`Lanes::request_within`]): the tuples
//!   that share that prefix, through `(v, w, MAX)`. Only a read whose prefix is `v` alone
//!   (`(v, > w)`) covers the rest of `v`; a deeper one leaves `(v, > w, …)` unread, and the
//!   next read goes one attribute up (`(v, > w)`), then past `v`.
//!
//! Whether the rest of a lane can hold anything once it is read through every tuple of a value
//! `v` of the conditioned attribute depends on the condition and the direction alone
//! ([`ends_at`]); the positions of the equality prefix play no part, as every read carries it:
//!
//! | condition on the conditioned attribute | ascending: done through `v` when | descending: done through `v` when |
//! |---|---|---|
//! | `eq(x)` (also the equality that ends a prefix) | `v >= x` | `v <= x` |
//! | `lt(x)`, `le(x)` | `v >= x` | never (read to the end) |
//! | `gt(x)`, `ge(x)` | never (read to the end) | `v <= x` |
//! | `between(a, b)` | `v >= b` | `v <= a` |
//! | `begins_with(p)`, none | never (read to the end) | never (read to the end) |
//!
//! "Never" means a read with no bound of the engine's must run out (which is exact: the key
//! condition ends where the user's does). A read within a value counts as "through every tuple
//! of `v`" only when its prefix is `v` alone; the regression of issue 46 (`tests/query_lanes.rs`)
//! took a deeper one for it and lost the tuples after the deeper prefix.
//!
//! # Streams
//!
//! A page by token starts from the boundary alone. A [`Cursor`] (a query's `stream()`) keeps
//! the merge open instead: the next page goes on with every lane's buffer, frontier and cursor
//! as the page before left them, so nothing read is read again and a lane read past the next
//! page's end is not queried for it. The rules above hold across its pages as within one page;
//! the unique values emitted are kept while an item read before them is still buffered (a
//! record moved to another lane meanwhile is not emitted twice).
//!
//! # Read-ahead
//!
//! A cursor does not wait for its caller between pages. Once a page has its items, the merge
//! goes on to the next page ([`Engine::read_ahead`]): that page's reads are scheduled as its own
//! loop would schedule its first ones (every lane short of where it is known or predicted to
//! end, from where the lane was read through), into the throttle's free places, as each of the
//! page's own last reads comes back and once more when they are all back; then the page is
//! returned with those reads in flight. They are futures the cursor owns ([`Reads`]): polled
//! once before the page is returned (a future does nothing until polled: this starts them),
//! then again when the caller asks for the next page (a store whose requests go on by
//! themselves once sent, as an HTTP client's connection does, answers them meanwhile).
//! Dropping the stream drops them: nothing is spawned, and nothing it started keeps running.
//! The throttle counts every read in flight, those issued ahead included.
//!
//! What stays as it was:
//! - the items: every page emits the next items of the global order, whatever was read for it,
//!   and the reads ahead are reads the next page would make, each from where its lane was read
//!   through (nothing is read twice);
//! - the tokens: a page's token is written once the page's own reads are back, and counts a
//!   lane exhausted only when a read issued for that page (or before) found it so
//!   ([`Lane::done_on`]): a read ahead that runs out shows on the next page's token, so a
//!   paging ends on the page it ends on without read-ahead;
//! - the stats: a read counts on the page it was issued for, ahead or not; a read ahead that
//!   fails fails the page it was issued for (the next one), not the page that has its items;
//! - a stream of items reads ahead from its second page on, so that `stream().take(limit)`
//!   reads what `page(None)` reads.
//!
//! What a cursor holds between two pages, at most: the page it returns; per lane, the items
//! its reads brought past that page's end; and the next page's first reads, at most `throttle`
//! shard queries, in flight or back. Every shard query asks for at most `page_size` items (a
//! lane that is the only one left: what the page still wants, one more) and a lane is read
//! only while it may hold items of the page being read or of the next, so what it holds beyond
//! the page it returns stays under `(lanes + throttle) × max(page_size, limit + 1)` items
//! (checked on random pagings by `tests/query_ahead.rs`).
//!
//! Range keys are compared as [`Pos`]itions, parsed once per item read, and the lanes are kept
//! in ordered sets (by next item, by frontier), so that choosing the next item or the next reads
//! costs a logarithm of the number of lanes, not a pass over them.

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeSet, BinaryHeap, HashSet, VecDeque};
use std::pin::Pin;

use futures::stream::FuturesUnordered;
use futures::{FutureExt as _, StreamExt as _};
use serde_dynamo::{AttributeValue, Item};

use super::QueryStats;
use super::estimate::{self, MARGIN};
use super::lanes::{Key, Lanes};
use super::token::{Boundary, StreamState};
use crate::error::{Error, Result, TokenError};
use crate::store::value::Scalar;
use crate::store::{Page, QueryPage, RangeCondition, Store};

/// A key in scan order: "earlier in the scan" is always `<` (keys as `DynamoDB` orders them
/// when ascending, reversed when descending). One engine uses one variant only.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Pos {
    Up(Key),
    Down(Reverse<Key>),
}

impl Pos {
    /// The value of the conditioned attribute (the range key itself, for a classic index).
    fn head(&self) -> Option<&Scalar> {
        match self {
            Self::Up(key) | Self::Down(Reverse(key)) => key.head(),
        }
    }

    /// Whether two keys share the value of the conditioned attribute: a read from the value of
    /// one holds the other.
    fn same_head(&self, other: &Self) -> bool {
        self.head() == other.head()
    }
}

/// How far a lane is read at one range key, in scan order: none of its items there (but every
/// item before), some of them, or every one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Upto {
    Before,
    Part,
    All,
}

/// How far a lane is read: every item it holds before this point (in its own order) was read.
/// `value` is the point's value of the conditioned attribute (none when equality fixes every
/// sort attribute).
#[derive(Clone, Debug)]
struct Front {
    pos: Pos,
    upto: Upto,
    value: Option<AttributeValue>,
}

/// A frontier in the page's global order (range key, lane rank, within the lane). A lane read
/// through a range key (`All`) is past every rank there.
type Global = (Pos, usize, Upto);

fn global(front: &Front, rank: usize) -> Global {
    match front.upto {
        Upto::All => (front.pos.clone(), usize::MAX, Upto::All),
        upto => (front.pos.clone(), rank, upto),
    }
}

/// Where reads stop: a range key, as a position and as the value for the key condition, and,
/// for the known end of a page, the rank of the lane that holds the page's last item (lanes
/// ranked after it need not be read at that range key).
#[derive(Clone, Debug)]
struct End {
    pos: Pos,
    value: AttributeValue,
    rank: Option<usize>,
}

impl End {
    /// A lane whose global frontier is short of this must still be read.
    fn threshold(&self) -> Global {
        match self.rank {
            Some(rank) => (self.pos.clone(), rank, Upto::Before),
            None => (self.pos.clone(), usize::MAX, Upto::All),
        }
    }
}

/// The last item the merge emitted (on this page, or the previous page's last): nothing at or
/// before it is emitted again.
#[derive(Clone, Debug)]
struct Mark {
    pos: Pos,
    rank: usize,
    lane: usize,
}

impl Mark {
    /// Whether an item at `pos` in lane `lane` (of rank `rank`) lies at or before the mark: at
    /// an earlier position or rank, or at the mark's in another lane (another source of the
    /// same shard holds the same record there). The mark's own lane goes on in its own order.
    fn covers(&self, pos: &Pos, rank: usize, lane: usize) -> bool {
        match (pos, rank).cmp(&(&self.pos, self.rank)) {
            Ordering::Less => true,
            Ordering::Equal => lane != self.lane,
            Ordering::Greater => false,
        }
    }
}

/// Where one lane stands during a page.
#[derive(Debug)]
struct Lane {
    index: usize,
    shard: usize,
    /// The lane's place among lanes at one range key, in scan order.
    rank: usize,
    /// Items read but not yet emitted, in the lane's order, with their positions.
    buffer: VecDeque<(Pos, Item)>,
    /// The page key of the last item read (or of the previous page's last item, in its lane),
    /// with its position: a read that resumes at that position starts right after it.
    cursor: Option<(Pos, Item)>,
    /// Every item up to this point has been read; `None` before the first read of the first
    /// page.
    frontier: Option<Front>,
    /// Nothing is left to read.
    exhausted: bool,
    /// The page (of the merge's stream) whose reads found the lane exhausted: a page's token
    /// counts a lane done only when that page's reads found it so, not the next page's reads
    /// ahead (see [`Cursor`]).
    done_on: u32,
    /// A read of this lane is in flight.
    busy: bool,
    /// Not read yet on this page.
    fresh: bool,
    /// The page (of the merge's stream, see [`Merge::page`]) each buffered item was read for
    /// (the read was issued while that page was built, or ahead of it), in the buffer's order.
    read_on: VecDeque<u32>,
}

/// How a lane read through a whole value goes on ([`Engine::strictly`]).
#[derive(Clone, Debug)]
enum After {
    /// Read from this value, the one next after the value in scan order: as any other read
    /// (bounded at the page's end), none of the value read again.
    From(AttributeValue),
    /// Read strictly after the value, with this key condition, unbounded: no value is known
    /// to come next (a string).
    Strictly(RangeCondition),
    /// The user's condition holds nothing after the value.
    Nothing,
}

/// The cached end of the page.
#[derive(Debug)]
enum Known {
    /// To compute again.
    Stale,
    /// Computed since the last change (`None`: too few items buffered to know).
    Fresh(Option<End>),
}

/// The lanes of one page and the ordered views of them that the merge and the scheduler use.
#[derive(Debug)]
struct Merge {
    lanes: Vec<Lane>,
    /// The next item of every lane with buffered items, earliest first.
    heads: BinaryHeap<Reverse<(Pos, usize, usize)>>,
    /// Lanes with something left to read and nothing known of them (the first page).
    unread: BTreeSet<usize>,
    /// Lanes with something left to read and a frontier, by global frontier.
    read: BTreeSet<(Global, usize)>,
    /// Items buffered over all lanes.
    buffered: usize,
    /// Lanes exhausted with nothing buffered.
    dead: usize,
    /// Lanes with something left to read and not read yet on this page.
    fresh: usize,
    /// Where the page is known to end, while no read or duplicate has changed it.
    known_end: Known,
    /// The last item emitted.
    mark: Option<Mark>,
    /// Where the page started: the previous page's last item (its boundary). A value of a lane
    /// read through may be read again only where it lies at or before it (see
    /// [`Engine::strictly`]).
    start: Option<Mark>,
    /// The pages are in a run of ties: the previous one ended at the range key the one before
    /// it ended at.
    in_run: bool,
    /// The merge's page: 0, and one more for each page of a [`Cursor`].
    page: u32,
}

impl Merge {
    /// Takes lane `t` out of the ordered sets, before its frontier or state changes.
    fn detach(&mut self, t: usize) {
        let lane = &self.lanes[t];
        if lane.exhausted {
            return;
        }
        match &lane.frontier {
            None => {
                self.unread.remove(&t);
            }
            Some(f) => {
                self.read.remove(&(global(f, lane.rank), t));
            }
        }
    }

    /// Puts lane `t` back into the ordered sets its state calls for.
    fn attach(&mut self, t: usize) {
        let lane = &self.lanes[t];
        if lane.exhausted {
            return;
        }
        match &lane.frontier {
            None => {
                self.unread.insert(t);
            }
            Some(f) => {
                self.read.insert((global(f, lane.rank), t));
            }
        }
    }

    /// Applies `change` to lane `t` and keeps every view of the lanes in step with it: the
    /// ordered sets, the heads, the buffered and dead counts, the cached end of the page.
    /// A change may only append to the lane's buffer (emitting goes through [`Self::pop`]);
    /// one that finds the lane exhausted is recorded as `page`'s finding.
    fn update<R>(&mut self, t: usize, page: u32, change: impl FnOnce(&mut Lane) -> R) -> R {
        let lane = &self.lanes[t];
        let (before, was_dead) = (lane.buffer.len(), lane.exhausted && lane.buffer.is_empty());
        let (was_fresh, was_exhausted) = (lane.fresh && !lane.exhausted, lane.exhausted);
        self.detach(t);
        let result = change(&mut self.lanes[t]);
        self.attach(t);
        let lane = &mut self.lanes[t];
        if lane.exhausted && !was_exhausted {
            lane.done_on = page;
        }
        let lane = &self.lanes[t];
        if was_fresh && (!lane.fresh || lane.exhausted) {
            self.fresh -= 1;
        }
        let added = lane.buffer.len().saturating_sub(before);
        if added > 0 {
            self.buffered += added;
            self.known_end = Known::Stale;
            if before == 0
                && let Some((pos, _)) = lane.buffer.front()
            {
                self.heads.push(Reverse((pos.clone(), lane.rank, t)));
            }
        }
        if lane.exhausted && lane.buffer.is_empty() && !was_dead {
            self.dead += 1;
        }
        result
    }

    /// Makes the merge ready for the next page of its stream: every lane is known (read on a
    /// page before), the page's end is to be found again, and the pages' run of ties is `run`.
    fn carry(&mut self, run: bool) {
        for lane in &mut self.lanes {
            lane.fresh = false;
        }
        self.fresh = 0;
        self.known_end = Known::Stale;
        self.in_run = run;
        self.start.clone_from(&self.mark);
        self.page += 1;
    }

    /// The earliest page an item still buffered was read on (`None`: nothing is buffered).
    fn oldest_read(&self) -> Option<u32> {
        self.lanes
            .iter()
            .filter_map(|lane| lane.read_on.front().copied())
            .min()
    }

    /// Takes the next item in the global order out of its lane: the lane, its position and the
    /// item.
    fn pop(&mut self) -> Option<(usize, Pos, Item)> {
        let Reverse((_, _, h)) = self.heads.pop()?;
        let lane = &mut self.lanes[h];
        let (pos, item) = lane.buffer.pop_front()?;
        lane.read_on.pop_front();
        self.buffered -= 1;
        if let Some((next, _)) = lane.buffer.front() {
            self.heads.push(Reverse((next.clone(), lane.rank, h)));
        } else if lane.exhausted {
            self.dead += 1;
        }
        Some((h, pos, item))
    }

    /// Items buffered at or before `end`.
    fn buffered_through(&self, end: &Pos) -> usize {
        self.lanes
            .iter()
            .map(|lane| lane.buffer.iter().take_while(|(p, _)| p <= end).count())
            .sum()
    }

    /// Whether some lane with something left to read is short of `end`.
    fn short_of(&self, end: &End) -> bool {
        !self.unread.is_empty() || self.read.first().is_some_and(|(g, _)| *g < end.threshold())
    }

    /// The lanes that can still give items (at least 1, to divide by).
    fn live(&self) -> usize {
        // the count kept in step by `update` and `pop` is the count of the lanes it counts (the
        // estimates divide by it: a count gone wrong changes reads, never results)
        debug_assert_eq!(
            self.dead,
            self.lanes
                .iter()
                .filter(|lane| lane.exhausted && lane.buffer.is_empty())
                .count(),
            "dead lanes miscounted"
        );
        (self.lanes.len() - self.dead).max(1)
    }

    /// Whether a lane with something left is not read yet on this page.
    fn any_fresh(&self) -> bool {
        self.fresh > 0
    }

    /// The next item in the global order, as the frontier every other lane must reach before
    /// it is emitted.
    fn head_threshold(&self) -> Option<Global> {
        self.heads
            .peek()
            .map(|Reverse((pos, rank, _))| (pos.clone(), *rank, Upto::Before))
    }

    /// Whether a lane may still hold an item before the head (every lane with something left,
    /// when nothing is buffered): the head cannot be emitted yet.
    fn blocked(&self) -> bool {
        if !self.unread.is_empty() {
            return true;
        }
        // compared in place: this runs before every item the page emits
        match (self.read.first(), self.heads.peek()) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(((pos, rank, upto), _)), Some(Reverse((head, head_rank, _)))) => pos
                .cmp(head)
                .then(rank.cmp(head_rank))
                .then(upto.cmp(&Upto::Before))
                .is_lt(),
        }
    }

    /// Up to `free` lanes to read now, least advanced first: the unread lanes, then the lanes
    /// short of `bound` (or of the head, if it is further), skipping those being read. With
    /// nothing buffered and no bound, every lane with something left qualifies; with nothing
    /// buffered, a lane read up to the bound waits for the others (if they find nothing either,
    /// the page predicts its end again) rather than read on without one.
    fn targets(&self, free: usize, bound: Option<&End>) -> Vec<usize> {
        let threshold = match (self.head_threshold(), bound.map(End::threshold)) {
            (Some(h), Some(b)) => Some(h.max(b)),
            (h, b) => h.or(b),
        };
        self.unread
            .iter()
            .copied()
            .chain(
                self.read
                    .iter()
                    .take_while(|(g, _)| threshold.as_ref().is_none_or(|t| g < t))
                    .map(|&(_, t)| t),
            )
            .filter(|&t| !self.lanes[t].busy)
            .take(free)
            .collect()
    }
}

/// How many times a page of fewer items than lanes predicts its end again, when every lane is
/// read up to the prediction and the page is not full, before it reads without a bound.
const REPREDICTIONS: usize = 3;

/// Where a page's first and last items came from: their plan index (for their range keys)
/// and the last one's lane.
#[derive(Clone, Copy, Debug, Default)]
struct Ends {
    first_from: Option<usize>,
    last_from: Option<usize>,
    last_lane: Option<usize>,
}

/// The outcome of one page of one stream.
pub(crate) struct StreamPage {
    pub(crate) items: Vec<Item>,
    pub(crate) state: StreamState,
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

/// The previous pages' span on the conditioned attribute: where they start (a running start,
/// see [`estimate::span_start`]) and where the last one ended, and whether they are in a run
/// of ties.
#[derive(Debug)]
struct Span {
    first: AttributeValue,
    last: AttributeValue,
    run: bool,
}

/// How a page reads: the previous pages' span, the margin of its predictions, where it
/// probably ends and whether that is staged ([`Engine::predict`]), and what has changed the
/// prediction since. Made when the page begins, or, in a [`Cursor`], when the page before it
/// has its items and the page's first reads go out ahead of it.
#[derive(Debug)]
struct Schedule {
    span: Option<Span>,
    /// The page's items.
    want: usize,
    margin: f64,
    staged: bool,
    /// Where the page probably ends.
    predicted: Option<End>,
    /// The reads in flight at once while the pages are in a run of ties (the page probably
    /// ends at the range key the previous one ended at, and the lanes are read in the global
    /// order, a few at a time): 1 at first, doubled each time they are all back.
    allowance: usize,
    /// Reads taken in since the prediction was last refined.
    news: usize,
    /// Predictions made again on this page.
    repredicted: usize,
}

/// What a page's reads found, as distances beyond the boundary's last value `last` in scan
/// order (range key units, see [`Engine::evidence`]): the items buffered, how far each lane
/// that can still give items is read, and the pages' running density per lane.
struct Evidence {
    found: Vec<f64>,
    covered: Vec<f64>,
    rate: f64,
    last: f64,
}

/// A finished read: the lane, where it stops (if bounded), the limit it asked for, the page of
/// the merge it was issued for, and the store's answer.
type Read = (
    usize,
    Option<End>,
    u32,
    u32,
    std::result::Result<Page, crate::store::StoreError>,
);

/// A shard query in flight: a future that owns its request and borrows only the store, so
/// that it can outlive the page that issued it. Dropping it cancels the query.
type Flight<'s> = Pin<Box<dyn Future<Output = Read> + Send + 's>>;

/// The shard queries in flight: one page's, or a [`Cursor`]'s from page to page (it issues the
/// next page's first reads while a page ends, and they stay in flight while the caller holds
/// the page). Owned here, never spawned: dropping the cursor drops them, and nothing it started
/// goes on running.
#[derive(Default)]
struct Reads<'s> {
    flights: FuturesUnordered<Flight<'s>>,
    /// How many of them were issued for a page before the merge's current one: the reads of
    /// the page that is ending while the next page's reads go ahead.
    behind: usize,
    /// What the reads issued ahead for the merge's current page cost before it began (its
    /// stats begin with them).
    ahead: QueryStats,
    /// A read issued ahead failed: the page it was issued for fails with it.
    failed: Option<Error>,
}

impl Reads<'_> {
    /// Shard queries in flight.
    fn len(&self) -> usize {
        self.flights.len()
    }
}

/// Runs one page of one stream over the given sources of the plan; its shard queries borrow
/// the store (`'s`), not the plan (`'p`), so that a [`Cursor`] can keep them from page to page.
pub(crate) struct Engine<'p, 's, P, S> {
    pub(crate) plan: &'p P,
    pub(crate) store: &'s S,
    pub(crate) page_size: usize,
    pub(crate) throttle: usize,
}

/// A stream kept open from page to page (a [`Stream`](futures::Stream) of one query): its
/// lanes, with what they buffered beyond the page's end and how far each is read, and the last
/// page's boundary. The next page goes on from there instead of from a token, so that nothing
/// read is read again and a lane read past the next page's end is not queried for it.
///
/// A cursor reads ahead: once a page has its items, the next page's first reads go out into
/// the throttle's free places while the page's own last reads come back, and they stay in
/// flight while the caller holds the page, so that the rounds of two pages overlap instead of
/// waiting on each other (see the module's "Read-ahead"). The page's token is written from its
/// own reads alone.
///
/// A buffered item may be stale: its record may have moved since (to another lane, say) and be
/// met again at its new place. Within a page the unique values emitted tell the two copies
/// apart; a cursor keeps them from page to page, for as long as an item read for the page they
/// were emitted on (or an earlier one) is still buffered: a copy read later is no stale copy of
/// them.
///
/// The pages of a stream of items grow: the first is the limit, each next one twice the one
/// before, up to a page size from each of a throttle's lanes. A stream read to its end then
/// takes fewer and larger reads; one whose first items only are taken reads no more than its
/// first page (its first page reads nothing ahead). The pages of a stream of pages
/// ([`Growth::Fixed`]) are all of the limit, and each reads ahead for the next.
pub(crate) struct Cursor<'s> {
    merge: Merge,
    boundary: Option<Boundary>,
    seen: Seen,
    /// The size of the next page, and of the first.
    want: usize,
    limit: usize,
    growth: Growth,
    /// The shard queries in flight, issued for the next page while the caller holds the last.
    reads: Reads<'s>,
    /// How the next page reads, when its first reads went out ahead of it.
    next: Option<Schedule>,
}

/// Whether the pages of a [`Cursor`] grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Growth {
    /// Each page twice the one before (a stream of items: its pages are not seen).
    Doubling,
    /// Every page of the limit (a stream of pages, each with its token).
    Fixed,
}

/// The unique values a cursor emitted, with the page each was emitted on, in that order.
#[derive(Default)]
struct Seen {
    values: HashSet<String>,
    order: Emitted,
}

/// Unique values emitted, each with the page it was emitted on, in that order.
type Emitted = VecDeque<(u32, String)>;

impl<'s, P: Lanes, S: Store> Engine<'_, 's, P, S> {
    /// Emits up to `want` items from the lanes of `indexes` (positions into the plan), starting
    /// from `state` (the stream's boundary and one flag per lane, index-major), deduplicating by
    /// unique value against `seen`.
    pub(crate) async fn page(
        &self,
        indexes: &[usize],
        state: &StreamState,
        want: usize,
        seen: &mut HashSet<String>,
        totals: &mut QueryStats,
    ) -> Result<StreamPage> {
        let mut merge = self.merge(indexes, state)?;
        let schedule = self.schedule(&merge, state.boundary.as_ref(), want);
        let (page, _) = self
            .run(
                &mut merge,
                (state.boundary.as_ref(), schedule),
                (seen, None),
                totals,
                (&mut Reads::default(), None),
            )
            .await?;
        Ok(page)
    }

    /// The stream over the lanes of `indexes`, from `state` (fresh, or a token's), in pages of
    /// `limit` items (and more, as `growth` says), for [`stream_page`](Self::stream_page) to
    /// page.
    pub(crate) fn open(
        &self,
        indexes: &[usize],
        state: &StreamState,
        limit: usize,
        growth: Growth,
    ) -> Result<Cursor<'s>> {
        Ok(Cursor {
            merge: self.merge(indexes, state)?,
            boundary: state.boundary.clone(),
            seen: Seen::default(),
            want: limit,
            limit,
            growth,
            reads: Reads::default(),
            next: None,
        })
    }

    /// The next page of an open stream: as [`page`](Self::page) from the state the previous
    /// page's token holds, with what the previous page read kept (and what was read ahead for
    /// this one). Every read of a page resumes where its lane was read through, and nothing at
    /// or before what was emitted is emitted again, within a page and from page to page: the
    /// pages of a cursor keep the contract of the pages of tokens.
    async fn next(&self, cursor: &mut Cursor<'s>, totals: &mut QueryStats) -> Result<StreamPage> {
        let Cursor {
            merge,
            boundary,
            seen,
            want,
            limit,
            growth,
            reads,
            next,
        } = cursor;
        if let Some(error) = reads.failed.take() {
            // a read issued ahead for this page failed
            return Err(error);
        }
        totals.add(&std::mem::take(&mut reads.ahead));
        let following = match growth {
            Growth::Doubling => {
                let most = (*limit).max(self.page_size.saturating_mul(self.throttle));
                want.saturating_mul(2).min(most).max(*limit)
            }
            Growth::Fixed => *want,
        };
        // a stream of items reads ahead from its second page on: one whose first items only
        // are taken reads what its first page reads
        let ahead = (*growth == Growth::Fixed || merge.page > 0).then_some(following);
        let schedule = match next.take() {
            Some(schedule) => schedule,
            None => self.schedule(merge, boundary.as_ref(), *want),
        };
        let on = merge.page;
        let (page, schedule) = self
            .run(
                merge,
                (boundary.as_ref(), schedule),
                (&mut seen.values, Some(&mut seen.order)),
                totals,
                (reads, ahead),
            )
            .await?;
        *next = schedule;
        *want = following;
        if merge.page == on {
            // not carried to the next page yet (it read nothing ahead)
            merge.carry(page.state.boundary.as_ref().is_some_and(|b| b.run));
        }
        // the values no buffered item can be a stale copy of: emitted on a page before any
        // buffered item was read for (a read in flight was issued for the next page, after
        // every value of this one was emitted)
        let oldest = merge.oldest_read().unwrap_or(merge.page);
        while let Some((_, value)) = seen.order.pop_front_if(|(page, _)| *page < oldest) {
            seen.values.remove(&value);
        }
        // what the stream holds between pages stays bounded: no value emitted before the
        // oldest buffered read is kept
        debug_assert!(
            seen.order.front().is_none_or(|(page, _)| *page >= oldest)
                && seen.order.len() == seen.values.len(),
            "the stream keeps values it no longer needs"
        );
        boundary.clone_from(&page.state.boundary);
        Ok(page)
    }

    /// The next page of an open stream (see [`next`](Self::next)) as a stream gives it: traced
    /// (as `entity`'s, over `indexes` indexes) with its stats, each item passed to `finish`;
    /// with the state a token of the page after it holds (no token is written here).
    pub(crate) async fn stream_page(
        &self,
        cursor: &mut Cursor<'s>,
        (entity, indexes): (&str, usize),
        finish: impl Fn(&mut Item),
    ) -> Result<(super::page::QueryPageResult, StreamState)> {
        let mut after = None;
        let page = super::paging::traced_page(entity, indexes, async {
            let mut stats = QueryStats {
                shards: cursor.merge.lanes.len(),
                ..QueryStats::default()
            };
            let mut page = self.next(cursor, &mut stats).await?;
            page.items.iter_mut().for_each(&finish);
            stats.items_returned = page.items.len();
            after = Some(page.state);
            Ok(super::page::QueryPageResult {
                items: page.items,
                next: None,
                stats,
            })
        })
        .await?;
        // a page that ran to its end has its state
        let after = after.unwrap_or_else(|| StreamState::fresh(0));
        Ok((page, after))
    }

    /// How a page of `want` items after `boundary` reads (see [`Schedule`]).
    fn schedule(&self, merge: &Merge, boundary: Option<&Boundary>, want: usize) -> Schedule {
        let span = boundary.and_then(|b| {
            Some(Span {
                first: b.first.clone(),
                last: self.plan.boundary_value(b)?,
                run: b.run,
            })
        });
        let margin = span.as_ref().map_or(MARGIN, |b| {
            let averaged = estimate::averaged(&b.first, &b.last);
            estimate::margin(want, merge.live(), self.throttle.max(1), averaged)
        });
        let (staged, predicted) = self.predict(merge, span.as_ref(), want, margin);
        Schedule {
            span,
            want,
            margin,
            staged,
            predicted,
            allowance: 1,
            news: 0,
            repredicted: 0,
        }
    }

    /// One page of `merge`, whose previous page ended at `boundary`, read as `schedule` says,
    /// its shard queries in `reads`. With `ahead` (a cursor's page, the size of the page after
    /// it), once the page has its items the next page's first reads go out ahead of it (see
    /// [`read_ahead`](Self::read_ahead)), and how that page reads is returned with the page.
    async fn run(
        &self,
        merge: &mut Merge,
        (boundary, mut schedule): (Option<&Boundary>, Schedule),
        (seen, mut order): (&mut HashSet<String>, Option<&mut Emitted>),
        totals: &mut QueryStats,
        (reads, ahead): (&mut Reads<'s>, Option<usize>),
    ) -> Result<(StreamPage, Option<Schedule>)> {
        let page = merge.page;
        let want = schedule.want;
        let throttle = self.throttle.max(1);
        let mut out: Vec<Item> = Vec::with_capacity(want.min(self.page_size.max(1)));
        // where the first and last items on the page came from, for the next page's boundary
        let mut ends = Ends::default();
        while out.len() < want {
            if merge.blocked() {
                if reads.len() < throttle {
                    totals.shard_queries += self.issue(merge, &mut schedule, out.len(), reads);
                }
                schedule.news += self.take_in(merge, reads, (page, totals)).await?;
                if reads.len() == 0 {
                    schedule.allowance = schedule.allowance.saturating_mul(2).min(throttle);
                }
                continue;
            }
            let Some((h, pos, item)) = merge.pop() else {
                break;
            };
            let index = merge.lanes[h].index;
            merge.mark = Some(Mark {
                pos,
                rank: merge.lanes[h].rank,
                lane: h,
            });
            let identity = self.plan.identity(&item).unwrap_or_default();
            let first = match order.as_deref_mut() {
                // a stream's: kept in order, to be forgotten
                Some(order) => {
                    let first = seen.insert(identity.clone());
                    if first {
                        order.push_back((page, identity));
                    }
                    first
                }
                None => seen.insert(identity),
            };
            if !first {
                // the same record from another index of the stream, at the same position, or
                // read twice during the page at two places (it moved meanwhile)
                totals.duplicates_removed += 1;
                // the page now ends one item further
                merge.known_end = Known::Stale;
                continue;
            }
            ends.first_from.get_or_insert(index);
            ends.last_from = Some(index);
            ends.last_lane = Some(h);
            out.push(item);
        }
        // the boundary after the page, from what the lanes read so far
        let after = |merge: &Merge| {
            self.next_boundary(
                merge,
                &out,
                ends,
                schedule.predicted.as_ref(),
                (boundary, schedule.span.as_ref()),
            )
        };
        let next = match ahead {
            Some(following) if out.len() == want && want != usize::MAX => {
                let provisional = after(merge);
                let next = self.read_ahead(
                    merge,
                    (provisional.as_ref(), following),
                    reads,
                    (page, &mut *totals),
                );
                Some(next.await?)
            }
            _ => {
                // the page's reads still in flight are waited for, not abandoned: the store
                // may already be serving them, and a caller that asks for the next page at
                // once must not find more than `throttle` of its reads in flight (measured: it
                // costs little, as they are reads the page needed up to its end)
                while let Some(done) = reads.flights.next().await {
                    self.settle(merge, done, reads, (page, &mut *totals))?;
                }
                None
            }
        };
        let boundary = after(merge);
        // a lane is done for the token when the page's own reads found it so (reads ahead for
        // the next page are not the page's: a token shows what paging by tokens would show)
        let exhausted = merge
            .lanes
            .iter()
            .map(|lane| lane.exhausted && lane.buffer.is_empty() && lane.done_on <= page)
            .collect();
        Ok((
            StreamPage {
                items: out,
                state: StreamState {
                    boundary,
                    exhausted,
                },
            },
            next,
        ))
    }

    /// Once page `page` has its items (the stream's next page to start after `boundary`, the
    /// page's last item, and to hold `want` items): the merge goes on to the next page, whose
    /// first reads go out into the throttle's free places as each of the page's own last reads
    /// comes back, and once more when they are all back; the page waits for its own reads only.
    /// The reads issued ahead are started (polled once, the ready ones taken in) and left in
    /// flight. How the next page reads.
    async fn read_ahead(
        &self,
        merge: &mut Merge,
        (boundary, want): (Option<&Boundary>, usize),
        reads: &mut Reads<'s>,
        (page, totals): (u32, &mut QueryStats),
    ) -> Result<Schedule> {
        merge.carry(boundary.is_some_and(|b| b.run));
        reads.behind = reads.len();
        let mut next = self.schedule(merge, boundary, want);
        let throttle = self.throttle.max(1);
        loop {
            if reads.failed.is_none() && reads.len() < throttle {
                reads.ahead.shard_queries += self.issue(merge, &mut next, 0, reads);
            }
            if reads.behind == 0 {
                break;
            }
            next.news += self.take_in(merge, reads, (page, &mut *totals)).await?;
        }
        // a future does nothing until polled: the reads issued ahead start now
        while let Some(Some(done)) = reads.flights.next().now_or_never() {
            self.settle(merge, done, reads, (page, &mut *totals))?;
        }
        Ok(next)
    }

    /// Issues the page's next reads into the throttle's free places, `taken` of its items out,
    /// as `s` says; how many. They stop at the page's known end (the `remaining`-th buffered
    /// item) or else its predicted end: predicted once more when every lane is read up to it
    /// and the page is not full (then read without a bound: only an unbounded read finds that
    /// a lane has nothing left), refined from what the reads back found when staged; read
    /// without a bound at once when the reads back found nothing where the pages' density
    /// expects many items ([`found_none`](Self::found_none): the page after the last item).
    /// When the previous pages did not move, the page probably ends at their range key: the
    /// lanes are then read in the global order, `allowance` at a time.
    fn issue(
        &self,
        merge: &mut Merge,
        s: &mut Schedule,
        taken: usize,
        reads: &mut Reads<'s>,
    ) -> usize {
        let remaining = s.want - taken;
        let known = self.known_end(merge, remaining);
        if known.is_none() && taken == 0 && s.predicted.is_some() && self.found_none(merge, s) {
            // the reads back found nothing where the pages' density expects many items: the
            // lanes end (or thin out) here, and only an unbounded read shows that a lane has
            // nothing left, so they read on without a bound (a fair share each) rather than
            // up to one bound, then a further one, then without
            s.predicted = None;
            s.repredicted = s.repredicted.max(1);
        } else if known.is_none()
            && let Some(end) = &s.predicted
            && !merge.short_of(end)
        {
            // every lane is read up to the predicted end and the page is not full: predict
            // once more, from what that range held
            let found = taken + merge.buffered;
            s.predicted = s
                .span
                .as_ref()
                .and_then(|b| self.repredict(b, end, (found, s.want, merge.live()), s.repredicted));
            s.repredicted += 1;
        } else if s.staged
            && known.is_none()
            && s.repredicted == 0
            && let Some(end) = self.refined(
                merge,
                s.span.as_ref(),
                (s.want, remaining),
                s.news,
                reads.len() == 0,
            )
        {
            // what the reads back found bounds the next ones
            s.predicted = Some(end);
            s.news = 0;
        }
        let tied = known.is_none()
            && s.predicted
                .as_ref()
                .zip(merge.mark.as_ref())
                .is_some_and(|(end, mark)| end.pos.same_head(&mark.pos));
        let free = if tied {
            s.allowance
        } else {
            self.throttle.max(1)
        }
        .saturating_sub(reads.len());
        let page = merge.page;
        let issued = self.next_reads(
            merge,
            free,
            remaining,
            (known.as_ref(), s.predicted.as_ref()),
            (Self::read_margin(s), tied),
        );
        let count = issued.len();
        for (t, request, end, limit) in issued {
            let store = self.store;
            reads.flights.push(Box::pin(async move {
                (t, end, limit, page, store.query_page(&request).await)
            }));
        }
        count
    }

    /// Whether the page's reads back found nothing (no item taken or buffered) where the
    /// pages' running density expects [`estimate::EMPTY_EVIDENCE`] items or more, over how far
    /// its lanes are read (number range keys only): on items spread as the pages found them,
    /// a chance below 1 in 20,000; at the end of the items (the page after the last one) or
    /// before a gap, a certainty.
    fn found_none(&self, merge: &Merge, s: &Schedule) -> bool {
        merge.buffered == 0
            && s.span
                .as_ref()
                .and_then(|b| self.evidence(merge, b, s.want))
                .is_some_and(|e| e.rate * e.covered.iter().sum::<f64>() >= estimate::EMPTY_EVIDENCE)
    }

    /// The margin of the limits of a page's reads up to its predicted end: when staged, at
    /// least as far as the bound reaches beyond the pages' span (a staged bound lies where the
    /// page ends with a high probability, further than the margin of an unstaged one), so that
    /// a read's limit rarely stops it short of its bound ([`estimate::staged_margin`]).
    fn read_margin(s: &Schedule) -> f64 {
        match (&s.span, &s.predicted) {
            (Some(b), Some(end)) if s.staged => {
                estimate::staged_margin(&b.first, &b.last, &end.value, s.margin)
            }
            _ => s.margin,
        }
    }

    /// The boundary after a page that returned `out` (`None` when it returned nothing and
    /// the stream had not started), from the `previous` one (and its span).
    fn next_boundary(
        &self,
        merge: &Merge,
        out: &[Item],
        ends: Ends,
        predicted: Option<&End>,
        (previous, span): (Option<&Boundary>, Option<&Span>),
    ) -> Option<Boundary> {
        let plan = self.plan;
        let value = |item: Option<&Item>, source: Option<usize>| {
            item.zip(source)
                .and_then(|(item, source)| plan.value(source, item))
                .cloned()
        };
        let (Some(last_item), Some(last_from)) = (out.last(), ends.last_from) else {
            // nothing returned: the stream stands where it stood
            return previous.cloned();
        };
        let shard = ends
            .last_lane
            .and_then(|h| merge.lanes.get(h))
            .map(|l| l.shard);
        let (Some(last), Some(unique)) = (
            plan.boundary_last(last_from, last_item),
            shard.and_then(|shard| plan.boundary_unique(shard, last_item)),
        ) else {
            return previous.cloned();
        };
        // the span the pages cover, on the conditioned attribute (none when equality fixes
        // every sort attribute: nothing to predict)
        let (Some(first_value), Some(last_value)) = (
            value(out.first(), ends.first_from),
            value(Some(last_item), Some(last_from)),
        ) else {
            return Some(Boundary {
                first: AttributeValue::N("0".into()),
                last,
                unique,
                lane: ends.last_lane,
                run: false,
                through: false,
            });
        };
        let through = self.read_through(merge, ends.last_lane, last_from, last_item);
        // every lane read up to the prediction: the items found up to there measure how far
        // a page reaches
        let measured = predicted
            .filter(|end| !merge.short_of(end))
            .and_then(|end| {
                let found = out.len() + merge.buffered_through(&end.pos);
                // counts of one page, far below 2^52
                #[allow(clippy::cast_precision_loss)]
                let ratio = out.len() as f64 / found as f64;
                (found > 0).then_some((&end.value, ratio))
            });
        // a page that ended at the value the previous one ended at did not move, and a page of
        // several items all at one value lies inside one: it is in a run of ties, and so
        // (probably) is the next page (a page of one item says nothing)
        let stayed =
            span.is_some_and(|p| estimate::compare(&p.last, &last_value) == Ordering::Equal);
        let run = stayed
            || (out.len() > 1 && estimate::compare(&first_value, &last_value) == Ordering::Equal);
        Some(Boundary {
            first: if stayed {
                last_value
            } else {
                estimate::span_start(
                    span.map(|b| (&b.first, &b.last)),
                    &first_value,
                    &last_value,
                    measured,
                )
            },
            last,
            unique,
            // the next page resumes the last item's lane right after it
            lane: ends.last_lane,
            run,
            through,
        })
    }

    /// Whether every lane ranked before lane `last_lane` (which gave the page's last item) is
    /// read through the whole value of the conditioned attribute that item holds, with nothing
    /// left there: no buffered item at that value, and a frontier past it (or nothing left to
    /// read). Only where that tells more than the item's own key does: a key with sort
    /// attributes after the conditioned one, where the lanes before the boundary could still
    /// hold items after the item's tuple within its value.
    fn read_through(
        &self,
        merge: &Merge,
        last_lane: Option<usize>,
        source: usize,
        item: &Item,
    ) -> bool {
        let (Some(lane), Some(value), Some(pos)) = (
            last_lane.and_then(|h| merge.lanes.get(h)),
            self.plan.value(source, item),
            self.pos(source, item),
        ) else {
            return false;
        };
        let Some(through) = self.through(value) else {
            return false;
        };
        through != pos
            && merge.lanes.iter().filter(|l| l.rank < lane.rank).all(|l| {
                let read = l.exhausted
                    || l.frontier
                        .as_ref()
                        .is_some_and(|f| (&f.pos, f.upto) >= (&through, Upto::All));
                read && l.buffer.front().is_none_or(|(p, _)| *p > through)
            })
    }

    /// A key in this scan's order.
    fn scan(&self, key: Key) -> Pos {
        if self.plan.descending() {
            Pos::Down(Reverse(key))
        } else {
            Pos::Up(key)
        }
    }

    /// The position of an item (or a page key) of `source`.
    fn pos(&self, source: usize, item: &Item) -> Option<Pos> {
        self.plan.key(source, item).map(|key| self.scan(key))
    }

    /// The position past every item whose conditioned attribute is `value`.
    fn through(&self, value: &AttributeValue) -> Option<Pos> {
        self.plan.key_through(value).map(|key| self.scan(key))
    }

    fn end(&self, value: AttributeValue) -> Option<End> {
        self.through(&value).map(|pos| End {
            pos,
            value,
            rank: None,
        })
    }

    /// A new predicted end, when the range from the boundary (where the page began) to `end`
    /// (the previous prediction) held only `found` of the `want` items.
    ///
    /// A page of fewer items than `live` lanes (an unbounded read would take at least one item
    /// of every lane) with number range keys goes on by the items still wanted at the pages'
    /// running density (the boundary's span), plus their margin, up to [`REPREDICTIONS`]
    /// times. Any other page goes as much further as the density found calls for, plus the
    /// margin, once; then (or when nothing was found: no density to go by) it reads without a
    /// bound (`None`), so that a density changed by orders of magnitude costs one more wave.
    fn repredict(
        &self,
        boundary: &Span,
        end: &End,
        (found, want, live): (usize, usize, usize),
        earlier: usize,
    ) -> Option<End> {
        // counts of one page, far below 2^52
        #[allow(clippy::cast_precision_loss)]
        let next = if want < live && estimate::averaged(&boundary.first, &boundary.last) {
            if earlier >= REPREDICTIONS {
                return None;
            }
            let need = want.saturating_sub(found).max(1);
            let margin = estimate::spread_margin(need, true, estimate::SPREAD_AGAIN);
            let factor = need as f64 / want as f64 * (1.0 + margin);
            estimate::advance(&boundary.first, &boundary.last, &end.value, factor)?
        } else if found > 0 && earlier == 0 {
            let factor = (want as f64 / found as f64 * (1.0 + MARGIN) - 1.0).max(MARGIN);
            estimate::extrapolate(&boundary.last, &end.value, factor)?
        } else {
            return None;
        };
        let next = self.end(next)?;
        (next.pos > end.pos).then_some(next)
    }

    /// Where the page probably ends, before any read, and whether its predictions are
    /// *staged*. They are when the lanes take more than one round of the throttle, over number
    /// range keys: the first round is bounded where the page ends with the probability
    /// [`estimate::quantiles`] gives, the later ones from what the earlier found
    /// ([`refined`](Self::refined)). Otherwise the end lies as far beyond the previous page as
    /// the pages spanned, plus `margin`. An unlimited page reads everything anyway.
    fn predict(
        &self,
        merge: &Merge,
        boundary: Option<&Span>,
        want: usize,
        margin: f64,
    ) -> (bool, Option<End>) {
        let Some(boundary) = boundary.filter(|_| want != usize::MAX) else {
            return (false, None);
        };
        if boundary.run {
            // the pages did not move: a run of ties, in which the page probably ends too
            return (false, self.end(boundary.last.clone()));
        }
        let staged = merge.live() > self.throttle.max(1)
            && estimate::averaged(&boundary.first, &boundary.last);
        let end = staged
            .then(|| self.refine(merge, boundary, want, want, estimate::quantiles(want).0))
            .flatten()
            .or_else(|| {
                estimate::extrapolate(&boundary.first, &boundary.last, 1.0 + margin)
                    .and_then(|value| self.end(value))
            });
        (staged, end)
    }

    /// The prediction refined from what the reads taken in found, while lanes are left to
    /// read for the first time, once a round of the throttle (`news` reads) is back (or every
    /// read is, `idle`): [`refine`](Self::refine) at the later probability of
    /// [`estimate::quantiles`].
    fn refined(
        &self,
        merge: &Merge,
        boundary: Option<&Span>,
        (want, remaining): (usize, usize),
        news: usize,
        idle: bool,
    ) -> Option<End> {
        let due = news >= self.throttle.max(1) || (news > 0 && idle);
        if !due || !merge.any_fresh() {
            return None;
        }
        self.refine(
            merge,
            boundary?,
            want,
            remaining,
            estimate::quantiles(want).1,
        )
    }

    /// Where the page ends with probability `q`, from what its reads found (number range keys
    /// only, see [`evidence`](Self::evidence)), `remaining` items still wanted.
    fn refine(
        &self,
        merge: &Merge,
        boundary: &Span,
        want: usize,
        remaining: usize,
        q: f64,
    ) -> Option<End> {
        let Evidence {
            found,
            covered,
            rate,
            last,
        } = self.evidence(merge, boundary, want)?;
        let t = estimate::Evidence::new(found, covered, rate).quantile(remaining, q)?;
        self.end(estimate::beyond(last, t, self.plan.descending())?)
    }

    /// What the page's reads found (number range keys only), as distances beyond the
    /// boundary's last value: the items buffered, how far each lane is read, and the pages'
    /// running density per lane (`want` items over the boundary's span).
    fn evidence(&self, merge: &Merge, boundary: &Span, want: usize) -> Option<Evidence> {
        let (first, last) = (
            estimate::number(&boundary.first)?,
            estimate::number(&boundary.last)?,
        );
        let span = (last - first).abs();
        if !(span.is_finite() && span > 0.0) {
            return None;
        }
        let descending = self.plan.descending();
        let distance = |pos: &Pos| -> Option<f64> {
            let Some(Scalar::N(n)) = pos.head() else {
                return None;
            };
            let d = if descending {
                last - n.approx()
            } else {
                n.approx() - last
            };
            d.is_finite().then_some(d.max(0.0))
        };
        let mut found = Vec::with_capacity(merge.buffered);
        let mut covered = Vec::with_capacity(merge.lanes.len());
        for lane in &merge.lanes {
            for (pos, _) in &lane.buffer {
                found.push(distance(pos)?);
            }
            if !lane.exhausted {
                covered.push(
                    lane.frontier
                        .as_ref()
                        .map_or(Some(0.0), |f| distance(&f.pos))?,
                );
            }
        }
        // counts of one page and lanes, far below 2^52
        #[allow(clippy::cast_precision_loss)]
        let rate = want as f64 / span / merge.live() as f64;
        Some(Evidence {
            found,
            covered,
            rate,
            last,
        })
    }

    /// The merge over the lanes of `indexes`, placed by the stream's boundary (or at the
    /// beginning), the exhausted ones left out.
    ///
    /// After a boundary (the previous page's last item, at range key `v` in lane `b`): the
    /// lanes ranked before `b` were read through `v`, `b` (and the lanes of other sources over
    /// its shard) resume right after the boundary's item, and the lanes ranked after `b` were
    /// read up to `v`, none of their items at `v` returned yet.
    fn merge(&self, indexes: &[usize], state: &StreamState) -> Result<Merge> {
        let plan = self.plan;
        let shards = plan.shards();
        // lanes rank by their table hash key (then shard), in scan order
        let mut order: Vec<usize> = (0..shards).collect();
        order.sort_by(|&a, &b| {
            plan.table_hash_key(a)
                .cmp(plan.table_hash_key(b))
                .then(a.cmp(&b))
        });
        let mut rank_of = vec![0usize; shards];
        for (rank, &shard) in order.iter().enumerate() {
            rank_of[shard] = if plan.descending() {
                shards - 1 - rank
            } else {
                rank
            };
        }
        let mut merge = Merge {
            lanes: Vec::with_capacity(indexes.len() * shards),
            heads: BinaryHeap::new(),
            unread: BTreeSet::new(),
            read: BTreeSet::new(),
            buffered: 0,
            dead: 0,
            fresh: 0,
            known_end: Known::Stale,
            mark: None,
            start: None,
            in_run: state.boundary.as_ref().is_some_and(|b| b.run),
            page: 0,
        };
        for (position, &index) in indexes.iter().enumerate() {
            for (shard, &rank) in rank_of.iter().enumerate() {
                let exhausted = state
                    .exhausted
                    .get(position * shards + shard)
                    .copied()
                    .unwrap_or(false);
                merge.dead += usize::from(exhausted);
                merge.fresh += usize::from(!exhausted);
                merge.lanes.push(Lane {
                    index,
                    shard,
                    rank,
                    buffer: VecDeque::new(),
                    cursor: None,
                    frontier: None,
                    exhausted,
                    done_on: 0,
                    busy: false,
                    fresh: true,
                    read_on: VecDeque::new(),
                });
            }
        }
        // a boundary that is no key of the stream is refused, not passed over (which would
        // start the paging again): only a forger writes one
        let after = match state.boundary.as_ref() {
            None => None,
            Some(b) => {
                let key = indexes
                    .first()
                    .filter(|_| sort_key_sized(&b.last) && sort_key_sized(&b.first))
                    .and_then(|&source| plan.boundary_key(source, b))
                    .ok_or(Error::Token(TokenError::Malformed("boundary")))?;
                Some((b, self.scan(key), plan.boundary_value(b)))
            }
        };
        if let Some((b, pos, value)) = after {
            self.place(&mut merge, b, pos, value.as_ref());
        }
        for t in 0..merge.lanes.len() {
            merge.attach(t);
        }
        Ok(merge)
    }

    /// Places the lanes of `merge` after the boundary `b` (its item at `pos`, its value of the
    /// conditioned attribute `value`): see [`merge`](Self::merge).
    fn place(&self, merge: &mut Merge, b: &Boundary, pos: Pos, value: Option<&AttributeValue>) {
        let plan = self.plan;
        let mark = match b.lane.and_then(|t| merge.lanes.get(t).map(|l| (t, l.rank))) {
            Some((t, rank)) => Mark { pos, rank, lane: t },
            // a boundary without its lane (no token written today has one): everything at
            // its range key counts as returned
            None => Mark {
                pos,
                rank: usize::MAX,
                lane: usize::MAX,
            },
        };
        // the lanes ranked before the boundary's hold nothing more at its value (the token
        // says so): they are read through the whole value, and read on strictly after it
        let through = value
            .filter(|_| b.through)
            .and_then(|v| Some((self.through(v)?, v)));
        for lane in &mut merge.lanes {
            if lane.rank < mark.rank
                && let Some((pos, v)) = &through
                && strictly_after(plan.condition(lane.index), v, plan.descending()).is_some()
            {
                lane.frontier = Some(Front {
                    pos: pos.clone(),
                    upto: Upto::All,
                    value: Some((*v).clone()),
                });
                continue;
            }
            let (upto, cursor) = match lane.rank.cmp(&mark.rank) {
                Ordering::Less => (Upto::All, None),
                Ordering::Equal => {
                    let key = plan.resume_key(lane.index, lane.shard, b);
                    let upto = if plan.unique_keys(lane.index) {
                        Upto::All
                    } else {
                        Upto::Part
                    };
                    (upto, key.map(|key| (mark.pos.clone(), key)))
                }
                Ordering::Greater => (Upto::Before, None),
            };
            lane.frontier = Some(Front {
                pos: mark.pos.clone(),
                upto,
                value: value.cloned(),
            });
            lane.cursor = cursor;
        }
        merge.start = Some(mark.clone());
        merge.mark = Some(mark);
    }

    /// Where the page is known to end: the `remaining`-th buffered item in the global order, if
    /// that many are buffered (more lanes can only bring it forward). Kept until a read buffers
    /// more or a duplicate is dropped: emitting an item takes the first buffered one and lowers
    /// `remaining` by one, which leaves it where it is.
    fn known_end(&self, merge: &mut Merge, remaining: usize) -> Option<End> {
        if remaining == 0 || merge.buffered < remaining {
            return None;
        }
        if let Known::Fresh(known) = &merge.known_end {
            return known.clone();
        }
        let mut keys: Vec<(&Pos, usize, usize, usize)> = Vec::with_capacity(merge.buffered);
        for (t, lane) in merge.lanes.iter().enumerate() {
            keys.extend(
                lane.buffer
                    .iter()
                    .enumerate()
                    .map(|(i, (pos, _))| (pos, lane.rank, t, i)),
            );
        }
        let end = if keys.len() >= remaining {
            let (_, &mut (pos, rank, t, i), _) = keys.select_nth_unstable(remaining - 1);
            let lane = &merge.lanes[t];
            self.plan
                .value(lane.index, &lane.buffer[i].1)
                .map(|value| End {
                    pos: pos.clone(),
                    value: value.clone(),
                    rank: Some(rank),
                })
        } else {
            None
        };
        merge.known_end = Known::Fresh(end.clone());
        end
    }

    /// The next reads, at most `free`: the lane, the request, where it stops (if bounded) and
    /// its limit. Each read stops at the known end of the page (taking everything up to it: it
    /// cannot overshoot); else at the predicted end, for lanes short of it, a little more than a
    /// fair share at a time; else it takes a fair share of what the page still wants. A lane
    /// that is the only one left reads what the page wants in one query. Lanes settled without
    /// a read (nothing can match up to the end) are marked read that far.
    fn next_reads(
        &self,
        merge: &mut Merge,
        free: usize,
        remaining: usize,
        (known, predicted): (Option<&End>, Option<&End>),
        (margin, tied): (f64, bool),
    ) -> Vec<(usize, QueryPage, Option<End>, u32)> {
        let (live, in_run, page) = (merge.live(), merge.in_run, merge.page);
        let bound = known.or(predicted);
        let targets = merge.targets(free, bound);
        let mut reads = Vec::with_capacity(targets.len());
        for t in targets {
            let lane = &merge.lanes[t];
            let short_of = |end: &End| {
                lane.frontier
                    .as_ref()
                    .is_none_or(|f| global(f, lane.rank) < end.threshold())
            };
            // one item more than the page can take from the lane: a read that returns fewer
            // than it asked shows the lane complete up to where it stops, so a lane holding the
            // page's last item needs no second query to learn that nothing ties with it (on
            // one shard: 1 query per page, not 2); and one more for a lane that reads a range
            // key it was read through again (a lane ranked before the previous page's last item)
            let rereads = lane.cursor.is_none()
                && lane.frontier.as_ref().is_some_and(|f| f.upto == Upto::All);
            let (end, limit) = if live == 1 && remaining != usize::MAX {
                // the only lane left: what the page wants, in one query
                (
                    known.filter(|end| short_of(end)),
                    u32::try_from(remaining + usize::from(rereads)).unwrap_or(u32::MAX),
                )
            } else if tied && remaining != usize::MAX {
                // within a run of ties, lanes are read one after another in the global order:
                // the lane read gives its items in the page's order, so what the page still
                // wants is all it needs (no item beyond it is needed to place one)
                (
                    predicted.filter(|end| short_of(end)),
                    u32::try_from(remaining.min(self.page_size) + usize::from(rereads))
                        .unwrap_or(u32::MAX),
                )
            } else {
                estimate::next_read(
                    (known, predicted),
                    short_of,
                    (remaining, live, margin),
                    1 + usize::from(rereads),
                    self.page_size,
                )
            };
            // a lane read through a range key with no item there to start after reads strictly
            // after it, unbounded (`request`): a share of the page at most, not the whole page
            // a bounded read may ask, since it cannot stop at the end
            let after = self.strictly(in_run, merge.start.as_ref(), lane);
            let limit = if matches!(after, Some(After::Strictly(_))) {
                let share = remaining.div_ceil(live);
                limit.min(
                    u32::try_from(estimate::poisson_limit(share, margin).max(1))
                        .unwrap_or(u32::MAX),
                )
            } else {
                limit
            };
            let end = end.cloned();
            let request = merge.update(t, page, |lane| {
                self.request(lane, limit, end.as_ref(), after)
            });
            if let Some((request, stop)) = request {
                merge.lanes[t].busy = true;
                reads.push((t, request, stop, limit));
            }
        }
        reads
    }

    /// The next read of a lane, up to `end`; `None` when the lane is settled without one (it
    /// was already read past the end, or nothing can match up to it). With it, where the read
    /// stops (`None`: it runs to the lane's end), so that running out means "read through
    /// there".
    ///
    /// A read starts where the lane was read through: right after its last item read when
    /// that item is at its frontier (`ExclusiveStartKey`), else at the frontier's range key
    /// (after it, when the lane was read through it and the read has no upper bound).
    fn request(
        &self,
        lane: &mut Lane,
        limit: u32,
        end: Option<&End>,
        after: Option<After>,
    ) -> Option<(QueryPage, Option<End>)> {
        lane.fresh = false;
        let plan = self.plan;
        let user = plan.condition(lane.index);
        let descending = plan.descending();
        if let (Some(end), Some(front)) = (end, &lane.frontier)
            && global(front, lane.rank) >= end.threshold()
        {
            // already read through the end
            return None;
        }
        if let Some(within) = self.within(lane, limit) {
            return Some(within);
        }
        let narrowed = narrow(user, end.map(|e| &e.value), descending);
        let (condition, bounded) = match narrowed {
            Narrowed::Empty => {
                // nothing up to the end: the lane is read that far
                if let Some(end) = end {
                    lane.frontier = Some(Front {
                        pos: end.pos.clone(),
                        upto: Upto::All,
                        value: Some(end.value.clone()),
                    });
                }
                return None;
            }
            Narrowed::Query { condition, bounded } => (condition, bounded),
        };
        let (condition, start, bounded) = match &lane.frontier {
            None => (condition, None, bounded),
            Some(front) => {
                // a read resumes after the lane's last item when that item lies at the value
                // of the conditioned attribute the read starts from (a key condition must hold
                // the page key it starts after)
                let start = lane
                    .cursor
                    .as_ref()
                    .filter(|(pos, _)| pos.same_head(&front.pos))
                    .map(|(_, key)| key.clone());
                let Some(value) = &front.value else {
                    // equality fixes every sort attribute: no condition to narrow
                    let stop = end.filter(|_| bounded).map(|end| self.covered(end));
                    return Some((self.requested(lane, limit, condition, start), stop));
                };
                let from = match &after {
                    Some(After::From(next)) => next,
                    _ => value,
                };
                if let Some(After::Strictly(condition)) = after {
                    // read through a value: strictly after it, without the end (`strictly`)
                    (Some(condition), None, false)
                } else if let Some(After::Nothing) = after {
                    // read through the last value the user's condition holds
                    Self::settle_at(lane, end);
                    return None;
                } else if let Some(condition) = from_boundary(condition, from, descending) {
                    // after a value read through, from the next one: no item to start after
                    let start = start.filter(|_| !matches!(after, Some(After::From(_))));
                    (Some(condition), start, bounded)
                } else {
                    // nothing can match from the frontier on
                    Self::settle_at(lane, end);
                    return None;
                }
            }
        };
        let stop = end.filter(|_| bounded).map(|end| self.covered(end));
        Some((self.requested(lane, limit, condition, start), stop))
    }

    /// A lane in which nothing can match from its frontier on: done (`end` `None`), or read up
    /// to `end`.
    fn settle_at(lane: &mut Lane, end: Option<&End>) {
        match end {
            None => lane.exhausted = true,
            Some(end) => {
                lane.frontier = Some(Front {
                    pos: end.pos.clone(),
                    upto: Upto::All,
                    value: Some(end.value.clone()),
                });
            }
        }
    }

    /// What a read bounded at `end` by a key condition covers when it runs out: every item up
    /// to `end`'s value of the conditioned attribute (past `end` itself, when that is an item's
    /// sort tuple inside the value).
    fn covered(&self, end: &End) -> End {
        End {
            pos: self.through(&end.value).unwrap_or_else(|| end.pos.clone()),
            value: end.value.clone(),
            rank: None,
        }
    }

    /// The read of a lane read through a sort tuple inside a value of the conditioned attribute
    /// (or up to it), with no item there to start after: right after that tuple (or at it),
    /// among the items of its value, so that the lane does not read again what it read (see
    /// [`Lanes::request_within`]); it stops where that value ends.
    fn within(&self, lane: &Lane, limit: u32) -> Option<(QueryPage, Option<End>)> {
        let front = lane.frontier.as_ref()?;
        if front.upto == Upto::Part
            || lane
                .cursor
                .as_ref()
                .is_some_and(|(pos, _)| pos.same_head(&front.pos) && *pos > front.pos)
        {
            // a read resumes after an item past the frontier
            return None;
        }
        let value = front.value.clone()?;
        let key = match &front.pos {
            Pos::Up(key) | Pos::Down(Reverse(key)) => key,
        };
        let (request, through) =
            self.plan
                .request_within(lane.index, lane.shard, key, front.upto == Upto::Before)?;
        // running out means the lane has nothing left only where the read covers the rest of
        // the value (its prefix is the conditioned attribute alone: a deeper one leaves the
        // tuples after it within the value unread) and the user's condition holds nothing
        // after that value; otherwise the lane is read through `through`
        let through = self.scan(through);
        let last = self.through(&value).as_ref() == Some(&through)
            && ends_at(
                self.plan.condition(lane.index),
                &value,
                self.plan.descending(),
            );
        let stop = (!last).then_some(End {
            pos: through,
            value,
            rank: None,
        });
        Some((request.limit(limit), stop))
    }

    /// The query of a lane, with its limit, key condition and start.
    fn requested(
        &self,
        lane: &Lane,
        limit: u32,
        condition: Option<RangeCondition>,
        start: Option<Item>,
    ) -> QueryPage {
        let request = self
            .plan
            .request(lane.index, lane.shard)
            .limit(limit)
            .start_after(start);
        match condition {
            Some(condition) => request.range(condition),
            None => request,
        }
    }

    /// How the next read of a lane read through the whole of a value `v` of the conditioned
    /// attribute goes on (`None`: from `v`, as any other read): from the value next after `v`
    /// where one is known ([`next_value`]: bounded at the page's end as any read), else
    /// strictly after `v` without an end (a key condition cannot start strictly after a value
    /// and stop at the end: [`strictly_after`]), or not at all when the user's condition holds
    /// nothing after `v`.
    ///
    /// A read must not read `v` again where the lane was read through it after the page
    /// started (a bounded read ran out there, a read within `v` covered its rest, the lane's
    /// last item lies at `v`, or the token says the lane holds nothing more at `v`): a record a
    /// lagging index shows there only now would lie behind what the merge emitted, although
    /// ahead of the page's start, and could not be returned. Reading `v` again is left only to
    /// a lane ranked before the previous page's last item at its very key, with no item there
    /// to start after (all of its items at `v` came before the page): outside a run of ties
    /// that costs an item or so, less than a read that cannot stop at the end; in a run of
    /// ties (`merge_in_run`) it would read the run again, so the read goes strictly after `v`.
    fn strictly(&self, merge_in_run: bool, start: Option<&Mark>, lane: &Lane) -> Option<After> {
        let front = lane.frontier.as_ref()?;
        let value = front.value.as_ref()?;
        if front.upto != Upto::All || self.through(value).as_ref() != Some(&front.pos) {
            return None;
        }
        let at_item = lane
            .cursor
            .as_ref()
            .is_some_and(|(pos, _)| pos.same_head(&front.pos));
        let (user, descending) = (self.plan.condition(lane.index), self.plan.descending());
        let next = || next_value(value, descending).map(After::From);
        let behind = start.is_some_and(|m| front.pos == m.pos && lane.rank < m.rank);
        if behind && !at_item && !merge_in_run {
            // reading the value again is safe here: skip it only where that costs nothing
            return strictly_after(user, value, descending).and_then(|_| next());
        }
        if let Some(condition) = strictly_after(user, value, descending) {
            if merge_in_run && !at_item {
                // in a run of ties the page's end is the run's value, which the lane is read
                // through: the read goes on past it at once, a share of the page at most
                return Some(After::Strictly(condition));
            }
            next().or(Some(After::Strictly(condition)))
        } else if ends_at(user, value, descending) {
            Some(After::Nothing)
        } else {
            // a lower bound beyond `v`: the read from it reads nothing of `v`
            None
        }
    }

    /// Waits for a read in flight, and takes it in with every other read already back (so
    /// that the next reads are chosen from all of them); how many (0: none was in flight).
    /// `page` and `totals`: see [`settle`](Self::settle).
    async fn take_in(
        &self,
        merge: &mut Merge,
        reads: &mut Reads<'s>,
        (page, totals): (u32, &mut QueryStats),
    ) -> Result<usize> {
        let Some(done) = reads.flights.next().await else {
            return Ok(0);
        };
        self.settle(merge, done, reads, (page, &mut *totals))?;
        let mut taken = 1;
        while let Some(Some(done)) = reads.flights.next().now_or_never() {
            self.settle(merge, done, reads, (page, &mut *totals))?;
            taken += 1;
        }
        Ok(taken)
    }

    /// Applies a finished read to its lane. What it cost goes to `totals`, the stats of `page`
    /// (the page being built or ending), when it was issued for that page, and to the next
    /// page's when it was issued ahead for it; a read issued ahead that failed fails the next
    /// page, not this one (which has its items).
    fn settle(
        &self,
        merge: &mut Merge,
        (t, end, asked, issued_for, result): Read,
        reads: &mut Reads<'s>,
        (page, totals): (u32, &mut QueryStats),
    ) -> Result<()> {
        merge.lanes[t].busy = false;
        if issued_for < merge.page {
            reads.behind = reads.behind.saturating_sub(1);
        }
        let lane = &merge.lanes[t];
        let read = match result {
            Ok(read) => read,
            Err(error) => {
                let error = self.plan.shard_error(lane.index, lane.shard, error);
                if issued_for > page {
                    reads.failed.get_or_insert(error);
                    return Ok(());
                }
                return Err(error);
            }
        };
        let stats = if issued_for > page {
            &mut reads.ahead
        } else {
            totals
        };
        stats.items_read += read.items.len();
        stats.consumed_capacity += read.consumed_capacity.unwrap_or(0.0);
        let limit_reached = read.items.len() >= usize::try_from(asked).unwrap_or(usize::MAX);
        let mark = merge.mark.clone();
        merge.update(t, issued_for, |lane| {
            self.take(
                t,
                lane,
                read,
                (limit_reached, end),
                (mark.as_ref(), issued_for),
            );
        });
        Ok(())
    }

    /// Buffers a shard page in its lane and moves the lane's frontier and cursor: to the page
    /// key, or when there is none, to "complete up to the end" or "exhausted". Items at or
    /// before what the merge emitted are skipped (written behind it, or read again).
    fn take(
        &self,
        t: usize,
        lane: &mut Lane,
        page: Page,
        (limit_reached, end): (bool, Option<End>),
        (mark, read_on): (Option<&Mark>, u32),
    ) {
        let plan = self.plan;
        let source = lane.index;
        let condition = plan.condition(source).map(Satisfies::new);
        let unique_keys = plan.unique_keys(source);
        // the last item read (whether kept or not), as a page key with its position: needed
        // only when the store gave no page key (built then alone: it costs a key per read)
        let last_read = if page.last_evaluated_key.is_none() {
            page.items.last().and_then(|item| {
                let pos = self.pos(source, item)?;
                Some((pos, plan.page_key(source, lane.shard, item)?))
            })
        } else {
            None
        };
        lane.buffer.reserve(page.items.len());
        for item in page.items {
            let Some(pos) = self.pos(source, &item) else {
                continue;
            };
            // reads may cover more than the user's condition (a key condition can only be
            // narrowed so far): what it does not hold is skipped, and so is what lies at or
            // before what the merge emitted, and anything behind what the lane already took in
            // (a store gives a lane's items in order: only a read again gives them)
            if condition
                .as_ref()
                .is_some_and(|c| pos.head().is_none_or(|v| !c.holds(v)))
                || !plan.admits(lane.shard, &item)
                || mark.is_some_and(|m| m.covers(&pos, lane.rank, t))
                || lane
                    .buffer
                    .back()
                    .is_some_and(|(last, _)| pos < *last || (unique_keys && pos == *last))
            {
                continue;
            }
            lane.buffer.push_back((pos, item));
            lane.read_on.push_back(read_on);
        }
        let advance = |lane: &mut Lane, front: Front| {
            let later = lane
                .frontier
                .as_ref()
                .is_none_or(|f| (&f.pos, f.upto) < (&front.pos, front.upto));
            if later {
                lane.frontier = Some(front);
            }
        };
        // DynamoDB returns a page key whenever the limit is reached; DynamoDB Local omits it
        // when the last item sits exactly on an inclusive bound, although equal keys may
        // follow: resume after the last item rather than trust "complete"
        let last_evaluated_key = match page.last_evaluated_key {
            Some(key) => Some(key),
            None if limit_reached => last_read.as_ref().map(|(_, key)| key.clone()),
            None => None,
        };
        if let Some(lek) = last_evaluated_key {
            if let Some(pos) = self.pos(source, &lek) {
                let upto = if unique_keys { Upto::All } else { Upto::Part };
                advance(
                    lane,
                    Front {
                        pos: pos.clone(),
                        upto,
                        value: plan.value(source, &lek).cloned(),
                    },
                );
                lane.cursor = Some((pos, lek));
            }
            return;
        }
        match end {
            Some(end) => advance(
                lane,
                Front {
                    pos: end.pos,
                    upto: Upto::All,
                    value: Some(end.value),
                },
            ),
            None => lane.exhausted = true,
        }
        if let Some(last) = last_read {
            lane.cursor = Some(last);
        }
    }
}

/// The value next after `v` in scan order, where one is known: a key condition from it reads
/// what lies strictly after `v` and can still stop at the page's end. A number's neighbour at
/// 38 significant digits ([`Number::next_up`](crate::store::value::Number::next_up)); a binary
/// followed by a zero byte ascending, or without its trailing zero byte descending. None for a
/// string (the one just after `s` is `s` followed by U+0000, which not every store keeps in a
/// key; just before `s` there is none) or past the largest sort key.
fn next_value(v: &AttributeValue, descending: bool) -> Option<AttributeValue> {
    let next = match v {
        AttributeValue::N(text) => {
            let n = crate::store::value::Number::parse(text)?;
            let next = if descending {
                n.next_down()
            } else {
                n.next_up()
            };
            AttributeValue::N(next?.canonical())
        }
        AttributeValue::B(bytes) if !descending => {
            let mut next = bytes.clone();
            next.push(0);
            AttributeValue::B(next)
        }
        AttributeValue::B(bytes) => match bytes.split_last() {
            Some((0, rest)) if !rest.is_empty() => AttributeValue::B(rest.to_vec()),
            _ => return None,
        },
        _ => return None,
    };
    sort_key_sized(&next).then_some(next)
}

/// A key condition for what lies strictly after `b` in scan order (`> b` ascending, `< b`
/// descending), when the user's condition may hold something there and does not start
/// beyond `b`; `None` otherwise (nothing after `b`: [`ends_at`]; or a lower bound beyond it,
/// from which a read reads nothing of `b`).
///
/// A key condition has one comparison on the conditioned attribute, so where the user's
/// condition also bounds the far side (`lt`, `le`, `between`, `begins_with` ascending; `gt`,
/// `ge`, `between`, `begins_with` descending) the result leaves that bound out: the read skips
/// what lies beyond it (as it skips whatever a key condition admits beyond the user's), and a
/// read that passes it shows the lane done. That costs at most the read's limit in items past
/// the bound, where reading `b` again would cost every item at `b` and could meet a record a
/// lagging index shows there only now, behind what the merge emitted.
fn strictly_after(
    user: Option<&RangeCondition>,
    b: &AttributeValue,
    descending: bool,
) -> Option<RangeCondition> {
    use RangeCondition as R;
    let at_or_before = |v: &AttributeValue| {
        let o = estimate::compare(v, b);
        if descending {
            o != Ordering::Less
        } else {
            o != Ordering::Greater
        }
    };
    if ends_at(user, b, descending) {
        return None;
    }
    let starts = match (user, descending) {
        (None | Some(R::Lt(_) | R::Le(_)), false) | (None | Some(R::Gt(_) | R::Ge(_)), true) => {
            true
        }
        (Some(R::Gt(v) | R::Ge(v)), false) | (Some(R::Lt(v) | R::Le(v)), true) => at_or_before(v),
        (Some(R::Between(low, _)), false) => at_or_before(low),
        (Some(R::Between(_, high)), true) => at_or_before(high),
        (Some(R::BeginsWith(p)), _) => starts_with(b, p),
        (Some(R::Eq(_)), _) => false,
    };
    starts.then(|| {
        if descending {
            R::Lt(b.clone())
        } else {
            R::Gt(b.clone())
        }
    })
}

/// Whether the user's key condition holds no value after `v` in scan order.
fn ends_at(user: Option<&RangeCondition>, v: &AttributeValue, descending: bool) -> bool {
    use RangeCondition as R;
    // `x` lies at or before `v` in scan order
    let reached = |x: &AttributeValue| {
        let o = estimate::compare(x, v);
        if descending {
            o != Ordering::Less
        } else {
            o != Ordering::Greater
        }
    };
    match (user, descending) {
        (Some(R::Eq(x)), _)
        | (Some(R::Lt(x) | R::Le(x) | R::Between(_, x)), false)
        | (Some(R::Gt(x) | R::Ge(x) | R::Between(x, _)), true) => reached(x),
        _ => false,
    }
}

/// A range condition with its bounds read once, to test many values against it.
struct Satisfies<'c> {
    condition: &'c RangeCondition,
    /// The bounds, as key scalars (the second only for `BETWEEN`).
    bounds: [Option<Scalar>; 2],
}

impl<'c> Satisfies<'c> {
    fn new(condition: &'c RangeCondition) -> Self {
        use RangeCondition as R;
        let bounds = match condition {
            R::Eq(v) | R::Lt(v) | R::Le(v) | R::Gt(v) | R::Ge(v) => [Scalar::any(v), None],
            R::Between(a, b) => [Scalar::any(a), Scalar::any(b)],
            R::BeginsWith(_) => [None, None],
        };
        Self { condition, bounds }
    }

    /// Whether a value of the conditioned attribute (an item's [`Pos::head`]: read once for
    /// its position) meets the condition, as `DynamoDB` compares.
    fn holds(&self, value: &Scalar) -> bool {
        use RangeCondition as R;
        let cmp = |bound: &Option<Scalar>| bound.as_ref().map_or(Ordering::Equal, |b| value.cmp(b));
        let [a, b] = &self.bounds;
        match self.condition {
            R::Eq(_) => cmp(a) == Ordering::Equal,
            R::Lt(_) => cmp(a) == Ordering::Less,
            R::Le(_) => cmp(a) != Ordering::Greater,
            R::Gt(_) => cmp(a) == Ordering::Greater,
            R::Ge(_) => cmp(a) != Ordering::Less,
            R::Between(..) => cmp(a) != Ordering::Less && cmp(b) != Ordering::Greater,
            R::BeginsWith(prefix) => match (value, prefix) {
                (Scalar::S(v), AttributeValue::S(p)) => v.starts_with(p.as_str()),
                (Scalar::B(v), AttributeValue::B(p)) => v.starts_with(p),
                _ => false,
            },
        }
    }
}

fn starts_with(value: &AttributeValue, prefix: &AttributeValue) -> bool {
    match (value, prefix) {
        (AttributeValue::S(v), AttributeValue::S(p)) => v.starts_with(p.as_str()),
        (AttributeValue::B(v), AttributeValue::B(p)) => v.starts_with(p),
        _ => false,
    }
}

/// Whether a boundary's value (or each value of its tuple) can be a sort key: not empty and at
/// most [`MAX_SORT_KEY_BYTES`](crate::limits::MAX_SORT_KEY_BYTES), as every item's key is. Any
/// other (only a forged token holds one) would make every shard query fail.
fn sort_key_sized(value: &AttributeValue) -> bool {
    match value {
        AttributeValue::L(values) => values.iter().all(sort_key_sized),
        value => crate::limits::sort_value_fits(value) && !crate::limits::empty_key_value(value),
    }
}

/// The least value greater than every value that starts with `prefix` (itself not starting
/// with it), or `None` when there is none.
pub(crate) fn prefix_successor(prefix: &AttributeValue) -> Option<AttributeValue> {
    match prefix {
        AttributeValue::S(p) => {
            let mut chars: Vec<char> = p.chars().collect();
            while let Some(last) = chars.pop() {
                let next = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32);
                if let Some(next) = next {
                    chars.push(next);
                    return Some(AttributeValue::S(chars.into_iter().collect()));
                }
            }
            None
        }
        AttributeValue::B(p) => {
            let mut bytes = p.clone();
            while let Some(last) = bytes.pop() {
                if last < u8::MAX {
                    bytes.push(last + 1);
                    return Some(AttributeValue::B(bytes));
                }
            }
            None
        }
        _ => None,
    }
}

/// A key condition narrowed to range keys at or after the boundary `b` in scan order (at or
/// above it ascending, at or below it descending); `None` when nothing can match. The result
/// may hold more than `condition` and the boundary allow (an exclusive end becomes inclusive, a
/// prefix a range up to its successor): reads skip what the condition does not hold.
fn from_boundary(
    condition: Option<RangeCondition>,
    b: &AttributeValue,
    descending: bool,
) -> Option<RangeCondition> {
    use RangeCondition as R;
    let cmp = |x: &AttributeValue, y: &AttributeValue| estimate::compare(x, y);
    let max = |x: &AttributeValue| if cmp(x, b) == Ordering::Less { b } else { x }.clone();
    let min = |x: &AttributeValue| if cmp(x, b) == Ordering::Greater { b } else { x }.clone();
    if descending {
        // range keys <= b
        match condition {
            Some(R::Eq(v)) => (cmp(&v, b) != Ordering::Greater).then_some(R::Eq(v)),
            Some(R::Lt(v)) if cmp(&v, b) != Ordering::Greater => Some(R::Lt(v)),
            None | Some(R::Lt(_)) => Some(R::Le(b.clone())),
            Some(R::Le(v)) => Some(R::Le(min(&v))),
            Some(R::Gt(v) | R::Ge(v)) => {
                (cmp(&v, b) != Ordering::Greater).then(|| R::Between(v, b.clone()))
            }
            Some(R::Between(lo, hi)) => {
                (cmp(&lo, b) != Ordering::Greater).then(|| R::Between(lo, min(&hi)))
            }
            Some(R::BeginsWith(p)) => {
                if starts_with(b, &p) {
                    Some(R::Between(p, b.clone()))
                } else if cmp(b, &p) == Ordering::Less {
                    None
                } else {
                    Some(R::BeginsWith(p))
                }
            }
        }
    } else {
        // range keys >= b
        match condition {
            Some(R::Eq(v)) => (cmp(&v, b) != Ordering::Less).then_some(R::Eq(v)),
            Some(R::Gt(v)) if cmp(&v, b) != Ordering::Less => Some(R::Gt(v)),
            None | Some(R::Gt(_)) => Some(R::Ge(b.clone())),
            Some(R::Ge(v)) => Some(R::Ge(max(&v))),
            Some(R::Lt(v) | R::Le(v)) => {
                (cmp(&v, b) != Ordering::Less).then(|| R::Between(b.clone(), v))
            }
            Some(R::Between(lo, hi)) => {
                (cmp(&hi, b) != Ordering::Less).then(|| R::Between(max(&lo), hi))
            }
            Some(R::BeginsWith(p)) => {
                if starts_with(b, &p) {
                    Some(match prefix_successor(&p) {
                        Some(next) => R::Between(b.clone(), next),
                        None => R::Ge(b.clone()),
                    })
                } else if cmp(b, &p) == Ordering::Less {
                    Some(R::BeginsWith(p))
                } else {
                    None
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Strings of characters around the edges a successor crosses: the last code point, the
    /// surrogate gap, the ASCII and two-byte boundaries.
    fn text() -> impl Strategy<Value = String> {
        let edge = prop::sample::select(vec![
            'a',
            'b',
            '\u{7f}',
            '\u{80}',
            '\u{d7ff}',
            '\u{e000}',
            '\u{fffd}',
            char::MAX,
        ]);
        prop::collection::vec(edge, 0..4).prop_map(|c| c.into_iter().collect())
    }

    fn bytes() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop::sample::select(vec![0u8, 1, 0x7f, 0xfe, 0xff]), 0..4)
    }

    /// The rule of a successor, checked on one value `y`: every value that starts with the
    /// prefix lies below it, and every value above the prefix that does not start with it lies
    /// at or above it (it is the least such); with no successor, every value at or above the
    /// prefix starts with it.
    fn holds<T: Ord + ?Sized>(
        prefix: &T,
        successor: Option<&T>,
        y: &T,
        starts: impl Fn(&T, &T) -> bool,
    ) -> Result<(), TestCaseError> {
        match successor {
            Some(next) => {
                prop_assert!(
                    !starts(next, prefix),
                    "the successor starts with the prefix"
                );
                if starts(y, prefix) {
                    prop_assert!(
                        y < next,
                        "a value with the prefix is not below the successor"
                    );
                } else if y > prefix {
                    prop_assert!(y >= next, "a value between the prefix and its successor");
                }
            }
            None => {
                if y >= prefix {
                    prop_assert!(
                        starts(y, prefix),
                        "no successor, but a value above the prefix"
                    );
                }
            }
        }
        Ok(())
    }

    proptest! {
        /// `prefix_successor` of a string or a binary value is the least value above every
        /// value that starts with it, against the comparison of the values themselves (code
        /// points order strings as their UTF-8 bytes do).
        #[test]
        fn a_prefix_successor_is_the_least_value_past_the_prefix(
            p in text(),
            suffix in text(),
            other in text(),
            pb in bytes(),
            suffix_b in bytes(),
            other_b in bytes(),
        ) {
            let next = match prefix_successor(&AttributeValue::S(p.clone())) {
                Some(AttributeValue::S(next)) => Some(next),
                None => None,
                Some(other) => return Err(TestCaseError::fail(format!("{other:?}"))),
            };
            for y in [format!("{p}{suffix}"), other.clone(), format!("{other}{suffix}")] {
                holds(p.as_str(), next.as_deref(), y.as_str(), |a, b| a.starts_with(b))?;
            }
            let next = match prefix_successor(&AttributeValue::B(pb.clone())) {
                Some(AttributeValue::B(next)) => Some(next),
                None => None,
                Some(other) => return Err(TestCaseError::fail(format!("{other:?}"))),
            };
            for y in [[pb.as_slice(), &suffix_b].concat(), other_b.clone(), [other_b.as_slice(), &suffix_b].concat()] {
                holds(pb.as_slice(), next.as_deref(), y.as_slice(), <[u8]>::starts_with)?;
            }
        }
    }

    /// A number has no prefix successor (`begins_with` takes strings and binaries only).
    #[test]
    fn a_number_has_no_prefix_successor() {
        assert_eq!(prefix_successor(&AttributeValue::N("12".into())), None);
    }
}
