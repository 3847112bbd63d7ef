//! What every query's pages share: the paging settings and their setters' state, resuming
//! from a page token (verified against the query and the table, its window pinned), the table
//! binding of tokens, and the tracing span of a page.

use std::time::{SystemTime, UNIX_EPOCH};

use super::page::QueryPageResult;
use super::token::{self, TokenState};
use crate::error::{Error, Result, TokenError};
use crate::store::Store;

/// The paging settings of [`Query`](super::untyped::Query) and
/// [`MultiQuery`](super::untyped::MultiQuery), and the setters they share (in an `impl` of a
/// builder with a `paging: Paging` field).
#[derive(Clone, Debug, Default)]
pub(super) struct Paging {
    pub(super) window: Option<(u64, u64)>,
    pub(super) limit: Option<usize>,
    pub(super) page_size: Option<usize>,
    pub(super) descending: bool,
    pub(super) throttle: Option<usize>,
    pub(super) signing_key: Option<Vec<u8>>,
}

impl Paging {
    /// Refuses a token written for another window than the one set.
    fn check_window(&self, verified: &token::Verified) -> Result<()> {
        match self.window {
            Some((from, to)) if (from, to) != (verified.from, verified.to) => {
                Err(Error::Token(TokenError::OtherWindow {
                    token_from: verified.from,
                    token_to: verified.to,
                    from,
                    to,
                }))
            }
            _ => Ok(()),
        }
    }
}

/// Runs one page inside the `entity_manager.query` tracing span (entity, indexes), and records
/// the page's stats on the span: shards, shard queries, items read and returned, duplicates
/// removed and consumed capacity.
pub(super) async fn traced_page(
    entity: &str,
    indexes: usize,
    page: impl Future<Output = Result<QueryPageResult>>,
) -> Result<QueryPageResult> {
    let span = tracing::debug_span!(
        "entity_manager.query",
        entity = %entity,
        indexes,
        shards = tracing::field::Empty,
        shard_queries = tracing::field::Empty,
        items_read = tracing::field::Empty,
        items_returned = tracing::field::Empty,
        duplicates_removed = tracing::field::Empty,
        consumed_capacity = tracing::field::Empty,
    );
    let result = tracing::Instrument::instrument(page, span.clone()).await?;
    span.record("shards", result.stats.shards);
    span.record("shard_queries", result.stats.shard_queries);
    span.record("items_read", result.stats.items_read);
    span.record("items_returned", result.stats.items_returned);
    span.record("duplicates_removed", result.stats.duplicates_removed);
    span.record("consumed_capacity", result.stats.consumed_capacity);
    tracing::debug!(parent: &span, stats = ?result.stats, "query page");
    Ok(result)
}

/// The items of a stream of pages, page after page; a failed page's error ends them.
pub(super) fn items_of(
    pages: impl futures::Stream<Item = Result<QueryPageResult>>,
) -> impl futures::Stream<Item = Result<serde_dynamo::Item>> {
    use futures::StreamExt as _;
    pages.flat_map(|page| {
        let items: Vec<Result<serde_dynamo::Item>> = match page {
            Ok(page) => page.items.into_iter().map(Ok).collect(),
            Err(e) => vec![Err(e)],
        };
        futures::stream::iter(items)
    })
}

/// What a token is bound to besides its query: the table, by its definition (keys and
/// indexes), the name the store knows it by ([`Store::name`]) and the name the query was given
/// (`Query::table_name`).
pub(super) fn table_binding<S: Store>(store: &S, table_name: Option<&str>) -> [u8; 32] {
    use std::sync::{Mutex, PoisonError};
    /// The bindings last computed (most recent last): a page of a query computes its table's
    /// again, and rendering the definition costs more than comparing it.
    type Memo = Vec<(crate::store::TableDefinition, [Option<String>; 2], [u8; 32])>;
    static MEMO: Mutex<Memo> = Mutex::new(Vec::new());
    const KEPT: usize = 8;
    let names = [store.name(), table_name];
    let same = |(definition, kept, _): &(_, [Option<String>; 2], _)| {
        definition == store.definition() && kept.iter().zip(names).all(|(a, b)| a.as_deref() == b)
    };
    let mut memo = MEMO.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(found) = memo.iter().rev().find(|entry| same(entry)) {
        return found.2;
    }
    let binding = compute_table_binding(store, table_name);
    if memo.len() >= KEPT {
        memo.remove(0);
    }
    memo.push((
        store.definition().clone(),
        names.map(|n| n.map(str::to_owned)),
        binding,
    ));
    binding
}

/// [`table_binding`], computed.
fn compute_table_binding<S: Store>(store: &S, table_name: Option<&str>) -> [u8; 32] {
    use sha2::{Digest as _, Sha256};
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(b"entity-manager query table binding v2");
    // Debug rendering of the definition is canonical within one build; tokens are versioned,
    // not promised across releases
    field(format!("{:?}", store.definition()).as_bytes());
    for name in [store.name(), table_name] {
        match name {
            Some(name) => {
                field(b"named");
                field(name.as_bytes());
            }
            None => field(b"unnamed"),
        }
    }
    h.finalize().into()
}

/// What a page's plan gives its token: the window it covers, the query's fingerprint, the
/// token's shape, and the largest shape a token of the query can have.
pub(super) trait Resumable: Sized {
    fn window(&self) -> (u64, u64);
    fn fingerprint(&self) -> &[u8; 32];
    fn shape(&self) -> token::Shape;
    fn max_shape(&self) -> token::Shape {
        self.shape()
    }
}

/// The plan of a page and where it starts: from the beginning (no token), or as `token` says,
/// verified against the query's fingerprint and the `table` binding (at most as long as a token
/// of the plan of its window can be), its window checked against the one given and pinned.
/// `plan` builds the plan of a window, once a page: for the window given, or the one the token
/// says (read before the check, used only if it ends by now), or `0..=now`; again only when
/// the token's checked window is not that one.
pub(super) fn resume<P: Resumable>(
    token: Option<&str>,
    paging: &Paging,
    table: &[u8; 32],
    plan: impl Fn((u64, u64)) -> Result<P>,
) -> Result<(P, Option<TokenState>)> {
    // the window given; or, paging on, the window the token says it was written for (read
    // unchecked, then checked with the rest: the plan is built once a page); or 0..=now
    // (a window beyond now is not planned before the check: a forged token cannot make the
    // plan wider than the default window's)
    let now = now_ms();
    let peeked = match (paging.window, token) {
        (None, Some(token)) => token::window_of(token)
            .filter(|&(_, to)| to <= now)
            .and_then(|window| plan(window).ok()),
        _ => None,
    };
    let probe = match peeked {
        Some(probe) => probe,
        None => plan(paging.window.unwrap_or((0, now)))?,
    };
    let Some(token) = token else {
        return Ok((probe, None));
    };
    let binding = token::Binding {
        query: probe.fingerprint(),
        table,
    };
    let max = token::max_chars(probe.max_shape());
    let verified = token::verify(token, binding, paging.signing_key.as_deref(), max)?;
    paging.check_window(&verified)?;
    let plan = if (verified.from, verified.to) == probe.window() {
        probe
    } else {
        plan((verified.from, verified.to))?
    };
    let state = verified.parse(plan.shape())?;
    Ok((plan, Some(state)))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::token::{self, Binding, Shape, StreamState, TokenState};
    use super::{Paging, Resumable, resume};

    /// A plan that is only a window and a fingerprint.
    struct Window((u64, u64));

    const FINGERPRINT: [u8; 32] = [7; 32];
    const TABLE: [u8; 32] = [9; 32];

    impl Resumable for Window {
        fn window(&self) -> (u64, u64) {
            self.0
        }
        fn fingerprint(&self) -> &[u8; 32] {
            &FINGERPRINT
        }
        fn shape(&self) -> Shape {
            Shape {
                streams: 1,
                lanes: 3,
            }
        }
    }

    fn token_for(window: (u64, u64)) -> String {
        let state = TokenState {
            from: window.0,
            to: window.1,
            streams: vec![StreamState::fresh(3)],
        };
        let binding = Binding {
            query: &FINGERPRINT,
            table: &TABLE,
        };
        token::encode(&state, binding, None)
    }

    #[test]
    fn a_continuation_page_of_the_default_window_is_planned_once() -> super::Result<()> {
        // the default window is 0..=now: the token's (0..=1000, written long ago) is not it
        let token = token_for((0, 1_000));
        let built = Cell::new(0);
        let (plan, state) = resume(Some(&token), &Paging::default(), &TABLE, |window| {
            built.set(built.get() + 1);
            Ok(Window(window))
        })?;
        assert_eq!(plan.0, (0, 1_000), "the token's window is pinned");
        assert!(state.is_some());
        assert_eq!(built.get(), 1, "one plan for the page");
        Ok(())
    }

    #[test]
    fn a_token_window_beyond_now_is_not_planned_before_the_check() -> super::Result<()> {
        let future = u64::MAX / 2;
        let token = token_for((0, future));
        let windows = std::cell::RefCell::new(Vec::new());
        let (plan, _) = resume(Some(&token), &Paging::default(), &TABLE, |window| {
            windows.borrow_mut().push(window);
            Ok(Window(window))
        })?;
        assert_eq!(plan.0, (0, future));
        let windows = windows.into_inner();
        assert_eq!(windows.len(), 2, "0..=now first, then the checked window");
        assert!(windows[0].1 < future);
        Ok(())
    }

    #[test]
    fn the_window_of_a_token_is_read_from_its_first_bytes() {
        assert_eq!(
            token::window_of(&token_for((5, 1_732_000_000_000))),
            Some((5, 1_732_000_000_000))
        );
        assert_eq!(token::window_of("not a token"), None);
        assert_eq!(token::window_of(""), None);
    }
}
