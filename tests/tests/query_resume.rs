//! Where a lane's reads resume within a page (the paging guide's "Under lag"): once a read of a
//! lane ran out at an inclusive end `t` (the lane is read through `t`), no later read of that lane
//! on the page reads `t` again, nor anything before it: it starts strictly after `t` (`> t`, or
//! from the value next after `t`), never at `t` nor after an item at or before `t`.
//!
//! A read that went back over a value the page had read through could meet there a record that
//! a lagging index shows only now: ahead of the page's start, so the page must return it, but
//! behind what the merge already emitted, so it cannot. Before the rule held everywhere, such
//! reads happened where a page predicted its end again (a bounded read ran out at the first
//! prediction, the next one started at it again) and where the user's condition has an upper
//! bound beyond the value (`le`, `lt`, `between` ascending; `ge`, `gt`, `between` descending:
//! no key condition says "strictly after `t`, up to the bound"). This test records every shard
//! query of random pagings by tokens, over a numeric index and a string index with every
//! condition kind in both directions, and checks each read against the reads before it on its
//! page; the contents of the pages are the oracle's (`oracle`, `query_lag`).

mod query_support;

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering as Atomic};

use entity_manager::model::ShardSpace;
use entity_manager::query::untyped::Query;
use entity_manager::store::{Page, QueryPage, RangeCondition, Store, StoreError};
use entity_manager::{AttributeValue, Item};
use entity_manager_tests::{block_on, forward_store};
use proptest::prelude::*;
use query_support::{condition_on_created, condition_on_name, load, records, schema};

/// One shard query as the engine sent it, with how it ended.
#[derive(Clone, Debug)]
struct Read {
    page: usize,
    partition: String,
    condition: Option<RangeCondition>,
    /// The range attribute's value of the item the read started after.
    start: Option<AttributeValue>,
    /// It returned fewer items than its limit and no page key: the lane is read through the
    /// end of its condition.
    ran_out: bool,
}

/// A store that records every shard query of the index `attribute` sorts.
struct Recording<S> {
    inner: S,
    attribute: &'static str,
    page: AtomicUsize,
    reads: Mutex<Vec<Read>>,
}

impl<S: Store> Store for Recording<S> {
    forward_store!(inner: definition, name, put_item, get_item, delete_item, batch_write);
    forward_store!(inner: batch_get, transact_write, update_item, transact_get, scan_page);

    async fn query_page(&self, request: &QueryPage) -> Result<Page, StoreError> {
        let page = self.inner.query_page(request).await?;
        let partition = match &request.hash_key {
            AttributeValue::S(hash) => hash.clone(),
            _ => String::new(),
        };
        let limit = request
            .limit
            .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
        let read = Read {
            page: self.page.load(Atomic::SeqCst),
            partition,
            condition: request.range.clone(),
            start: request
                .exclusive_start_key
                .as_ref()
                .and_then(|key: &Item| key.get(self.attribute).cloned()),
            ran_out: page.last_evaluated_key.is_none() && page.items.len() < limit,
        };
        if let Ok(mut reads) = self.reads.lock() {
            reads.push(read);
        }
        Ok(page)
    }
}

/// Compares two numbers' decimal texts (no exponent, as the engine and these records write
/// them) or two strings by bytes.
fn compare(a: &AttributeValue, b: &AttributeValue) -> Ordering {
    match (a, b) {
        (AttributeValue::N(x), AttributeValue::N(y)) => decimal(x).cmp_with(&decimal(y)),
        (AttributeValue::S(x), AttributeValue::S(y)) => x.as_bytes().cmp(y.as_bytes()),
        _ => Ordering::Equal,
    }
}

/// A decimal as sign, integer digits (no leading zeros) and fraction digits (no trailing ones).
struct Decimal {
    negative: bool,
    integer: String,
    fraction: String,
}

fn decimal(text: &str) -> Decimal {
    let (negative, text) = text
        .strip_prefix('-')
        .map_or((false, text), |rest| (true, rest));
    let (integer, fraction) = text.split_once('.').unwrap_or((text, ""));
    let integer = integer.trim_start_matches('0').to_owned();
    let fraction = fraction.trim_end_matches('0').to_owned();
    let zero = integer.is_empty() && fraction.is_empty();
    Decimal {
        negative: negative && !zero,
        integer,
        fraction,
    }
}

impl Decimal {
    fn cmp_with(&self, other: &Self) -> Ordering {
        let magnitude = self
            .integer
            .len()
            .cmp(&other.integer.len())
            .then_with(|| self.integer.cmp(&other.integer))
            .then_with(|| self.fraction.cmp(&other.fraction));
        match (self.negative, other.negative) {
            (false, false) => magnitude,
            (true, true) => magnitude.reverse(),
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
        }
    }
}

/// The value a read ran out at, inclusive, in scan order: the lane is read through it.
fn far_end(condition: Option<&RangeCondition>, descending: bool) -> Option<&AttributeValue> {
    use RangeCondition as R;
    match (condition?, descending) {
        (R::Eq(t), _)
        | (R::Le(t) | R::Between(_, t), false)
        | (R::Ge(t) | R::Between(t, _), true) => Some(t),
        _ => None,
    }
}

/// Why `read` goes back over `through` (a value its lane was read through earlier on the page),
/// or `None` when it starts strictly after it.
fn goes_back(read: &Read, through: &AttributeValue, descending: bool) -> Option<String> {
    use RangeCondition as R;
    // `x` lies after `through` in scan order
    let after = |x: &AttributeValue| {
        let o = compare(x, through);
        if descending {
            o == Ordering::Less
        } else {
            o == Ordering::Greater
        }
    };
    if let Some(start) = &read.start {
        // a read after an item reads the rest of the item's value
        return (!after(start))
            .then(|| format!("starts after an item at {start:?}, not after {through:?}"));
    }
    let strict = match (&read.condition, descending) {
        // `> x` (`< x` descending) with `x` at or after `through`
        (Some(R::Gt(x)), false) | (Some(R::Lt(x)), true) => {
            after(x) || compare(x, through) == Ordering::Equal
        }
        (Some(R::Ge(x) | R::Eq(x) | R::Between(x, _)), false)
        | (Some(R::Le(x) | R::Eq(x) | R::Between(_, x)), true) => after(x),
        (Some(R::BeginsWith(AttributeValue::S(p))), _) => match through {
            AttributeValue::S(t) => {
                !t.starts_with(p.as_str()) && after(&AttributeValue::S(p.clone()))
            }
            _ => true,
        },
        _ => false,
    };
    (!strict).then(|| format!("{:?} reads {through:?} again", read.condition))
}

fn check(reads: &[Read], descending: bool) -> Result<(), String> {
    let mut through: HashMap<(usize, &str), &AttributeValue> = HashMap::new();
    for (i, read) in reads.iter().enumerate() {
        let lane = (read.page, read.partition.as_str());
        if let Some(t) = through.get(&lane)
            && let Some(why) = goes_back(read, t, descending)
        {
            return Err(format!(
                "read {i} of page {} on {}: {why}; the page's reads of the lane: {:?}",
                read.page,
                read.partition,
                reads
                    .iter()
                    .filter(|r| (r.page, r.partition.as_str()) == lane)
                    .collect::<Vec<_>>()
            ));
        }
        if read.ran_out
            && let Some(t) = far_end(read.condition.as_ref(), descending)
        {
            through.insert(lane, t);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    /// No read of a page goes back over a value its lane was read through on that page.
    #[test]
    fn a_read_never_goes_back_over_a_value_its_lane_was_read_through(
        records in records(600),
        by_name in any::<bool>(),
        on_created in condition_on_created(),
        on_name in condition_on_name(),
        descending in any::<bool>(),
        limit in prop_oneof![Just(1usize), 2usize..10, 10usize..60],
        page_size in prop_oneof![Just(1usize), 2usize..6, Just(25usize)],
        throttle in prop_oneof![Just(1usize), 2usize..5, Just(10usize)],
        two_bumps in any::<bool>(),
    ) {
        let bumps: &[(u64, u8, u8)] = if two_bumps { &[(0, 2, 1), (1_500, 3, 2)] } else { &[(0, 3, 1)] };
        let schema = schema(bumps, ShardSpace::Product).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let store = load(&schema, &records).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let (index, attribute, condition) = if by_name {
            ("name", "nameRK", on_name)
        } else {
            ("created", "created", on_created)
        };
        let recording = Recording { inner: store, attribute, page: AtomicUsize::new(0), reads: Mutex::new(Vec::new()) };
        let user = schema.entity("user").map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut query = Query::new(&recording, user)
            .index(index)
            .shards_between(0, 3_000)
            .limit(limit)
            .page_size(page_size)
            .throttle(throttle)
            .descending(descending);
        if let Some(condition) = condition {
            query = query.range(condition);
        }
        let mut token: Option<String> = None;
        let mut returned = 0usize;
        for page in 0..=records.len() + 1 {
            recording.page.store(page, Atomic::SeqCst);
            let got = block_on(query.page(token.as_deref())).map_err(|e| TestCaseError::fail(e.to_string()))?;
            returned += got.items.len();
            token = got.next;
            if token.is_none() {
                break;
            }
        }
        prop_assert!(token.is_none(), "the paging did not end");
        prop_assert!(returned <= records.len());
        let reads = recording.reads.lock().map(|r| r.clone()).unwrap_or_default();
        prop_assert!(check(&reads, descending).is_ok(), "{}", check(&reads, descending).err().unwrap_or_default());
    }
}
