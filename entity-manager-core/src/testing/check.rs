//! The linearizability search: Wing and Gong's algorithm with Lowe's memoisation, per
//! partition of the history, and the shrinking of a refused partition.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::hash::Hash;

/// What a history is checked against: a sequential specification of the objects it touches.
///
/// A model is a state machine. The checker looks for an order of the operations, consistent
/// with real time (an operation that returned before another was invoked comes first), in which
/// every operation, applied by [`step`](Self::step) to the state the ones before it left, gives
/// the output it was observed to give. Operations are split by the records they touch
/// ([`keys`](Self::keys)): operations on disjoint records are checked apart, since
/// linearizability is compositional (Herlihy and Wing); an operation on several records (a
/// transaction, a move) joins their partitions.
pub trait Model {
    /// The state of the records of one partition (a map from record id to the record's state).
    type State: Clone + Eq + Hash + fmt::Debug;
    /// What a call asked for.
    type Input: Clone + fmt::Debug + fmt::Display;
    /// What a call that completed answered.
    type Output: Clone + fmt::Debug + fmt::Display;

    /// The state before the history of a partition whose records are `keys`.
    fn init(&self, keys: &[String]) -> Self::State;

    /// The ids of the records an input touches (at least one).
    fn keys(&self, input: &Self::Input) -> Vec<String>;

    /// The state after `input` is applied to `state` and answers `output`, or `None` when it
    /// cannot answer that from that state. `output` is `None` for a call whose outcome is
    /// unknown (it failed with `may_have_applied`): it takes effect as the input says, answering
    /// whatever it would.
    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> Option<Self::State>;

    /// Whether a completed call left every state as it was whatever the state (a read, a
    /// refused write): such a call only observes, and the shrinker may drop it.
    fn observes_only(&self, input: &Self::Input, output: &Self::Output) -> bool;
}

/// One call of a history: what it asked, what it answered, and when.
///
/// Times are logical (any increasing counter; the [`Recorder`](super::Recorder) uses one clock
/// for every call). A call with `output: None` is *open*: it failed in a way that may have
/// applied it, or never answered; it may take effect at any point after its invocation, or
/// never.
pub struct Entry<M: Model> {
    /// Who made the call (a task number), for the report only.
    pub client: usize,
    /// What it asked for.
    pub input: M::Input,
    /// What it answered; `None` when the outcome is unknown.
    pub output: Option<M::Output>,
    /// When it was invoked.
    pub invoked: u64,
    /// When it returned (ignored for an open call).
    pub returned: u64,
}

impl<M: Model> Clone for Entry<M> {
    fn clone(&self) -> Self {
        Self {
            client: self.client,
            input: self.input.clone(),
            output: self.output.clone(),
            invoked: self.invoked,
            returned: self.returned,
        }
    }
}

impl<M: Model> fmt::Debug for Entry<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("client", &self.client)
            .field("input", &self.input)
            .field("output", &self.output)
            .field("invoked", &self.invoked)
            .field("returned", &self.returned)
            .finish()
    }
}

impl<M: Model> Entry<M> {
    /// A call that completed with `output`.
    pub fn completed(
        client: usize,
        input: M::Input,
        output: M::Output,
        invoked: u64,
        returned: u64,
    ) -> Self {
        Self {
            client,
            input,
            output: Some(output),
            invoked,
            returned,
        }
    }

    /// A call whose outcome is unknown: it may have taken effect, once, at any point after
    /// `invoked`, or never.
    pub fn open(client: usize, input: M::Input, invoked: u64) -> Self {
        Self {
            client,
            input,
            output: None,
            invoked,
            returned: u64::MAX,
        }
    }

    fn end(&self) -> u64 {
        if self.output.is_some() {
            self.returned
        } else {
            u64::MAX
        }
    }
}

impl<M: Model> fmt::Display for Entry<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.output {
            Some(output) => write!(
                f,
                "[{:>6} .. {:>6}] client {:>3}: {} -> {}",
                self.invoked, self.returned, self.client, self.input, output
            ),
            None => write!(
                f,
                "[{:>6} ..    ...] client {:>3}: {} -> ? (may have applied)",
                self.invoked, self.client, self.input
            ),
        }
    }
}

/// A history: the calls made on some records, in any order.
pub struct History<M: Model> {
    /// The calls.
    pub entries: Vec<Entry<M>>,
}

impl<M: Model> Clone for History<M> {
    fn clone(&self) -> Self {
        Self {
            entries: self.entries.clone(),
        }
    }
}

impl<M: Model> fmt::Debug for History<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("History")
            .field("entries", &self.entries)
            .finish()
    }
}

impl<M: Model> Default for History<M> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
        }
    }
}

impl<M: Model> History<M> {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a call.
    pub fn push(&mut self, entry: Entry<M>) {
        self.entries.push(entry);
    }

    /// The number of calls.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no call.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Checks that the history is linearizable against `model`. On failure, the error holds
    /// the smallest refused sub-history the shrinker found, which its `Display` prints.
    pub fn check(&self, model: &M) -> Result<Linearizable, NotLinearizable<M>> {
        check(model, self)
    }
}

/// A history found linearizable: what was checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Linearizable {
    /// The calls checked.
    pub operations: usize,
    /// Of them, the calls whose outcome was unknown.
    pub open: usize,
    /// The partitions (sets of records touched together) checked apart.
    pub partitions: usize,
}

/// A history that is not linearizable: the records of the refused partition and the smallest
/// sub-history of it that is still refused.
///
/// No order of the calls of [`sub_history`](Self::sub_history) explains what they answered, so
/// no order of the whole history does; it stays so even when the calls listed in
/// [`weakened`](Self::weakened) are taken as open (their answer set aside: they may take effect
/// or not), so their answers are not what is wrong.
pub struct NotLinearizable<M: Model> {
    /// The ids of the records of the refused partition.
    pub keys: Vec<String>,
    /// How many calls the refused partition had.
    pub partition_len: usize,
    /// The smallest refused sub-history found, by invocation time, each call with its observed
    /// answer.
    pub sub_history: Vec<Entry<M>>,
    /// The indexes in `sub_history` of the calls that are refused even with their answer set
    /// aside.
    pub weakened: Vec<usize>,
}

impl<M: Model> Clone for NotLinearizable<M> {
    fn clone(&self) -> Self {
        Self {
            keys: self.keys.clone(),
            partition_len: self.partition_len,
            sub_history: self.sub_history.clone(),
            weakened: self.weakened.clone(),
        }
    }
}

impl<M: Model> fmt::Debug for NotLinearizable<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NotLinearizable")
            .field("keys", &self.keys)
            .field("partition_len", &self.partition_len)
            .field("sub_history", &self.sub_history)
            .field("weakened", &self.weakened)
            .finish()
    }
}

impl<M: Model> fmt::Display for NotLinearizable<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "not linearizable: the {} calls on {} have no order consistent with real time that \
             the model explains; the smallest refused sub-history ({} calls):",
            self.partition_len,
            self.keys.join(", "),
            self.sub_history.len()
        )?;
        for (i, entry) in self.sub_history.iter().enumerate() {
            if self.weakened.contains(&i) {
                writeln!(f, "  {entry}   (refused even with this answer set aside)")?;
            } else {
                writeln!(f, "  {entry}")?;
            }
        }
        Ok(())
    }
}

impl<M: Model> std::error::Error for NotLinearizable<M> {}

/// Checks `history` against `model`: see [`History::check`].
pub fn check<M: Model>(
    model: &M,
    history: &History<M>,
) -> Result<Linearizable, NotLinearizable<M>> {
    let partitions = partition(model, &history.entries);
    let mut checked = Linearizable {
        operations: history.entries.len(),
        open: history
            .entries
            .iter()
            .filter(|e| e.output.is_none())
            .count(),
        partitions: partitions.len(),
    };
    for (keys, indexes) in &partitions {
        let entries: Vec<Entry<M>> = indexes
            .iter()
            .map(|&i| history.entries[i].clone())
            .collect();
        if !linearizable(model, keys, &entries) {
            return Err(shrink(model, keys, entries));
        }
    }
    checked.partitions = partitions.len();
    Ok(checked)
}

/// The root of `x` in a union-find forest, halving the path.
fn find(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

/// The partitions of a history: the connected sets of records, each with its calls (indexes in
/// `entries`), in the order of their first call.
fn partition<M: Model>(model: &M, entries: &[Entry<M>]) -> Vec<(Vec<String>, Vec<usize>)> {
    // union-find over record ids
    let mut ids: BTreeMap<String, usize> = BTreeMap::new();
    let mut parent: Vec<usize> = Vec::new();
    let mut first_key = Vec::with_capacity(entries.len());
    for entry in entries {
        let keys = model.keys(&entry.input);
        let mut roots = Vec::with_capacity(keys.len());
        for key in keys {
            let next = parent.len();
            let id = *ids.entry(key).or_insert(next);
            if id == next {
                parent.push(id);
            }
            roots.push(id);
        }
        for pair in roots.windows(2) {
            let (a, b) = (find(&mut parent, pair[0]), find(&mut parent, pair[1]));
            if a != b {
                parent[a] = b;
            }
        }
        first_key.push(roots.first().copied());
    }
    let mut groups: BTreeMap<usize, (Vec<String>, Vec<usize>)> = BTreeMap::new();
    let mut order: Vec<usize> = Vec::new();
    for (i, key) in first_key.iter().enumerate() {
        let Some(key) = key else { continue };
        let root = find(&mut parent, *key);
        let group = groups.entry(root).or_insert_with(|| {
            order.push(root);
            (Vec::new(), Vec::new())
        });
        group.1.push(i);
    }
    for (key, id) in &ids {
        let root = find(&mut parent, *id);
        if let Some(group) = groups.get_mut(&root) {
            group.0.push(key.clone());
        }
    }
    order
        .into_iter()
        .filter_map(|root| groups.remove(&root))
        .collect()
}

/// One end of a call in the search's event list.
#[derive(Clone, Copy)]
struct Event {
    call: bool,
    op: usize,
    /// The other end of the same call (its index in the list).
    other: usize,
}

/// Whether the calls of one partition are linearizable: Wing and Gong's search, with Lowe's
/// cache of (calls linearized, state) pairs already explored, as Porcupine does.
fn linearizable<M: Model>(model: &M, keys: &[String], entries: &[Entry<M>]) -> bool {
    search(model, keys, entries, usize::MAX) != Some(false)
}

/// The search: `Some(true)` if linearizable, `Some(false)` if not, `None` if it explored more
/// than `budget` (calls linearized, state) pairs without an answer.
pub(super) fn search<M: Model>(
    model: &M,
    keys: &[String],
    entries: &[Entry<M>],
    budget: usize,
) -> Option<bool> {
    let n = entries.len();
    if n == 0 {
        return Some(true);
    }
    // the events, by time: calls before returns at equal times (they overlap), open returns last
    let mut times: Vec<(u64, bool, usize)> = Vec::with_capacity(2 * n);
    for (i, e) in entries.iter().enumerate() {
        times.push((e.invoked, true, i));
        times.push((e.end(), false, i));
    }
    times.sort_by_key(|&(t, call, i)| (t, !call, i));
    let mut position = vec![[0usize; 2]; n];
    for (p, &(_, call, i)) in times.iter().enumerate() {
        position[i][usize::from(!call)] = p;
    }
    let events: Vec<Event> = times
        .iter()
        .map(|&(_, call, i)| Event {
            call,
            op: i,
            other: position[i][usize::from(call)],
        })
        .collect();
    // a doubly linked list over the events; node 0 is the head, event p is node p + 1
    let len = events.len();
    let nil = usize::MAX;
    let mut next: Vec<usize> = (0..=len)
        .map(|p| if p < len { p + 1 } else { nil })
        .collect();
    let mut prev: Vec<usize> = (0..=len).map(|p| p.wrapping_sub(1)).collect();
    prev[0] = nil;
    let lift = |next: &mut Vec<usize>, prev: &mut Vec<usize>, node: usize| {
        let (p, q) = (prev[node], next[node]);
        next[p] = q;
        if q != nil {
            prev[q] = p;
        }
    };
    let unlift = |next: &mut Vec<usize>, prev: &mut Vec<usize>, node: usize| {
        let (p, q) = (prev[node], next[node]);
        next[p] = node;
        if q != nil {
            prev[q] = node;
        }
    };

    let words = n.div_ceil(64);
    let mut linearized = vec![0u64; words];
    let mut cache: HashSet<(Vec<u64>, M::State)> = HashSet::new();
    let mut state = model.init(keys);
    // each choice: the call event, the state before it, and whether the call left the state
    // as it was
    let mut stack: Vec<(usize, M::State, bool)> = Vec::new();
    let mut node = next[0];
    while next[0] != nil {
        if node != nil {
            let event = events[node - 1];
            let entry = &entries[event.op];
            if event.call {
                if let Some(after) = model
                    .step(&state, &entry.input, entry.output.as_ref())
                    // an open call that changes nothing now is better left out: it need not
                    // take effect at all, and leaving it out keeps it for later
                    .filter(|after| entry.output.is_some() || *after != state)
                {
                    let mut tried = linearized.clone();
                    tried[event.op / 64] |= 1 << (event.op % 64);
                    if cache.len() >= budget {
                        return None;
                    }
                    if cache.insert((tried.clone(), after.clone())) {
                        let kept = after == state;
                        stack.push((node, std::mem::replace(&mut state, after), kept));
                        linearized = tried;
                        lift(&mut next, &mut prev, node);
                        lift(&mut next, &mut prev, event.other + 1);
                        node = next[0];
                        continue;
                    }
                }
                node = next[node];
                continue;
            }
            if entry.output.is_none() {
                // only open calls are left before their (infinite) returns: each may never apply
                return Some(true);
            }
        }
        // a call returned that could not be placed before it (or every remaining call was
        // tried here): take the last choice back
        let Some((back, before, kept)) = stack.pop() else {
            return Some(false);
        };
        let event = events[back - 1];
        linearized[event.op / 64] &= !(1 << (event.op % 64));
        // put back the return first, then the call (the reverse of lifting)
        unlift(&mut next, &mut prev, event.other + 1);
        unlift(&mut next, &mut prev, back);
        state = before;
        // A call that left the state as it was is best placed as early as it can be (Lowe,
        // "Testing for linearizability", 2017): any order that places it later stays valid
        // with it moved here (every call it must follow is placed already, and it changes
        // nothing the others see), so the orders without it here fail too. Take the choice
        // before it back instead: without this, n concurrent refused writes (a 32-way create)
        // are tried in all 2^n subsets.
        node = if kept { nil } else { next[back] };
    }
    Some(true)
}

/// The most (calls linearized, state) pairs one search of the shrinker explores: past it, the
/// smaller history is taken as not refused (the call stays).
const SHRINK_STATES: usize = 200_000;
/// The most searches the shrinker makes after the bisection.
const SHRINK_CHECKS: usize = 2_000;

/// The smallest refused sub-history found: the shortest refused prefix, then calls that only observe are dropped, and calls that
/// changed state have their answer set aside (made open), one at a time, as long as the
/// partition stays refused. Both only make a history easier to linearize, so what is left is
/// refused on its own.
fn shrink<M: Model>(model: &M, keys: &[String], mut entries: Vec<Entry<M>>) -> NotLinearizable<M> {
    let partition_len = entries.len();
    // first the shortest refused prefix, by bisection: the calls invoked before a cut, those
    // that had not returned by then set aside (open). Any linearization of the whole history
    // gives one of such a prefix, so a refused prefix is a witness
    entries.sort_by_key(|e| e.invoked);
    let cut = |k: usize| -> Vec<(Entry<M>, Option<M::Output>)> {
        let at = entries.get(k).map_or(u64::MAX, |e| e.invoked);
        entries[..k]
            .iter()
            // a call that only observes, set aside, does nothing: left out
            .filter(|e| {
                e.end() < at
                    || e.output
                        .as_ref()
                        .is_none_or(|o| !model.observes_only(&e.input, o))
            })
            .map(|e| {
                let mut e = e.clone();
                let original = if e.end() >= at { e.output.take() } else { None };
                (e, original)
            })
            .collect()
    };
    let plain = |calls: &[(Entry<M>, Option<M::Output>)]| -> Vec<Entry<M>> {
        calls.iter().map(|(e, _)| e.clone()).collect()
    };
    let (mut lo, mut hi) = (0, entries.len());
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        if search(model, keys, &plain(&cut(mid)), SHRINK_STATES) == Some(false) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    // each call, with its observed answer once that is set aside
    let mut current = cut(hi);
    let mut checks = 0;
    let mut refused = |calls: &[(Entry<M>, Option<M::Output>)]| {
        checks += 1;
        checks <= SHRINK_CHECKS && search(model, keys, &plain(calls), SHRINK_STATES) == Some(false)
    };
    loop {
        let mut changed = false;
        let mut i = 0;
        while i < current.len() {
            let Some(output) = current[i].0.output.clone() else {
                // an open call stays: dropping it would take a possible effect away
                i += 1;
                continue;
            };
            if model.observes_only(&current[i].0.input, &output) {
                let removed = current.remove(i);
                if refused(&current) {
                    changed = true;
                    continue;
                }
                current.insert(i, removed);
            } else {
                current[i].0.output = None;
                if refused(&current) {
                    current[i].1 = Some(output);
                    changed = true;
                } else {
                    current[i].0.output = Some(output);
                }
            }
            i += 1;
        }
        if !changed {
            break;
        }
    }
    current.sort_by_key(|(e, _)| e.invoked);
    let weakened = current
        .iter()
        .enumerate()
        .filter_map(|(i, (_, w))| w.is_some().then_some(i))
        .collect();
    // show every call with its observed answer; `weakened` says whose was not needed
    let sub_history = current
        .into_iter()
        .map(|(mut e, original)| {
            if original.is_some() {
                e.output = original;
            }
            e
        })
        .collect();
    NotLinearizable {
        keys: keys.to_vec(),
        partition_len,
        sub_history,
        weakened,
    }
}
