//! Cross-shard, multi-index queries: throttled parallel reads over every shard of every index,
//! merged, deduplicated, sorted and resumable through one compact page token.
//!
//! # Modes and guarantees
//!
//! # Sources
//!
//! A query reads one or more *sources* that share their hash key attribute: global secondary
//! indexes ([`Query::index`]) and the table itself ([`Query::table`]: every shard of the
//! entity's own hash key space, in table range-key order, that is by unique value). A range
//! condition or filter applies to the source added last; given before any source it does not
//! compile (see [`Unindexed`]).
//!
//! **Exact mode** — one source, or sources that share their range key attribute as well.
//! Since the rule `index-key-pairs-unique` refuses two indexes with the same hash and range
//! key, the only such pair is the table and an index on the table's own keys (for example a
//! `KEYS_ONLY` copy): every record is then in both, at the same position, and is returned once.
//! Items come in range-key order (ascending, or descending), merged across every shard:
//! - every page holds exactly `min(limit, remaining)` items;
//! - paging to the end returns every matching item exactly once (no duplicate, no miss), in one
//!   global order across pages: by range key, items with equal range keys by shard (its table
//!   hash key), and within a shard as the store keeps them (`MemoryStore`: by table range key;
//!   `DynamoDB`: an order of its own), the exact reverse when descending;
//! - the last page may be empty (when the previous one ended exactly at the end);
//! - on a table written meanwhile, every page is in order, no record comes twice (unless moved
//!   ahead of the paging after it was returned: a token is a position), every record that
//!   exists unchanged throughout comes exactly once, and records written, moved or deleted
//!   meanwhile come at most once (the paging guide, "While the table is written").
//!
//! **Union mode** — indexes with different range keys (for example a name search over a
//! first-name and a last-name index). The page limit is shared between the indexes, each index
//! is paged exactly as above, and each page is deduplicated and sorted by the query's sort order
//! (the unique property by default). Across pages:
//! - each page holds at most `limit` items, none twice, sorted;
//! - every item of every index is taken from that index exactly once over the whole paging, so
//!   paging to the end returns every matching item at least once;
//! - an item that matches several indexes is returned at most once per index it matches, on
//!   different pages (never twice on one page);
//! - pages can be shorter than `limit` (duplicates removed, an index running out).
//!
//! **Windows** — [`Query::shards_between`] picks the shards (those of the shard bumps in force during
//! it) and nothing else: records of those shards created outside it are returned too.
//! [`Query::created_between`] picks the same shards and, of their records, those created in
//! the window (a key condition when the range key is the timestamp property, else a check of
//! each item read).
//!
//! **Projections** — [`Query::projection`] reads only the attributes named (and the keys the
//! query needs). The unique value is never asked of the index: it is restored from the table
//! range key, so projections work on `KEYS_ONLY` and `INCLUDE` indexes; asking an index for an
//! attribute it does not project is refused before any read ([`Error::InvalidQuery`]).
//!
//! **Cost** — every shard query asks the store for the read capacity it consumed; the page's
//! [`QueryStats`] and the `entity_manager.query` tracing span hold the sum.
//!
//! In both modes a shard that has given everything is never queried again, an unlimited query
//! terminates, any failed shard query fails the whole page, and reads stay proportional to
//! what is returned (each page reads every live shard up to about where the page ends, as
//! predicted from the previous page, and refills only the shards that can still contribute).
//!
//! The page token records where the previous page ended (its last item's range key, unique
//! value and lane, per index in union mode), one "exhausted" bit per (index, shard) lane, the time
//! window and a checksum of the query and of the table; its size does not depend on where each
//! shard stands (about 70 characters for one index up to 64 lanes, 1 character more per 6
//! lanes beyond). It is rejected, with a typed error, by any other query
//! ([`TokenError::OtherQuery`]) or table ([`TokenError::OtherTable`]: another table name or
//! definition), when truncated or altered, when longer than any token of the query can be
//! ([`TokenError::TooLong`], before it is decoded: a few thousand characters per index), and —
//! with [`Query::signing_key`] — when signed with another key.

/// The paging settings of [`Query`] and [`MultiQuery`], and the setters they share (in an
/// `impl` of a builder with a `paging: Paging` field).
#[derive(Clone, Debug, Default)]
struct Paging {
    window: Option<(u64, u64)>,
    limit: Option<usize>,
    page_size: Option<usize>,
    descending: bool,
    throttle: Option<usize>,
    signing_key: Option<Vec<u8>>,
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

macro_rules! paging_setters {
    () => {
        /// Items per page (default: the entity's default limit; a collection's: its first
        /// entity's).
        #[must_use]
        pub fn limit(mut self, limit: usize) -> Self {
            self.paging.limit = Some(limit);
            self
        }

        /// The largest `Limit` of one shard query (default: the entity's default page size; a
        /// collection's: its first entity's).
        #[must_use]
        pub fn page_size(mut self, page_size: usize) -> Self {
            self.paging.page_size = Some(page_size);
            self
        }

        /// Descending order (of the range key, or of the sort attributes).
        #[must_use]
        pub fn descending(mut self, descending: bool) -> Self {
            self.paging.descending = descending;
            self
        }

        /// At most this many shard queries in flight (default: the table's throttle).
        #[must_use]
        pub fn throttle(mut self, throttle: usize) -> Self {
            self.paging.throttle = Some(throttle);
            self
        }

        /// Signs page tokens with this key (HMAC-SHA-256), so that they cannot be forged; the
        /// same key must be given for every page.
        #[must_use]
        pub fn signing_key(mut self, key: impl Into<Vec<u8>>) -> Self {
            self.paging.signing_key = Some(key.into());
            self
        }
    };
}

mod collection;
mod door;
mod engine;
mod estimate;
mod index;
mod lanes;
mod multi;
mod multi_typed;
mod page;
mod plan;
mod token;
mod typed;

use std::collections::HashSet;
use std::marker::PhantomData;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_dynamo::{AttributeValue, Item};

use crate::error::{Error, Result};
use crate::schema::EntitySchema;
use crate::store::{Filter, RangeCondition, Store};

pub use self::collection::Collection;
pub use self::door::{IndexFor, QueryStart};
use self::engine::Engine;
pub use self::index::{
    Classic, ClassicIndexOf, ClassicIndexesHaveNoPartitionValues, CollectionMember,
    ConditionsFollowTheIndex, KeyKind, MultiAttribute, QueryOutput, TypedIndex,
};
pub use self::multi::MultiQuery;
pub use self::multi_typed::TypedMultiQuery;
pub use self::page::{QueryPageResult, QueryStats};
use self::plan::{IndexSpec, Plan, PlanInput};
use self::token::{StreamState, TokenState};
pub use self::typed::{FieldSet, KeyCondition, KeyValue, TypedPage, TypedQuery};
pub use crate::error::TokenError;
/// The trait of what [`Query::stream`] and [`TypedQuery::stream`] return, and its combinators
/// (`next`, `try_collect`, `take`…): `use entity_manager::query::StreamExt as _;`.
pub use futures::{Stream, StreamExt, TryStreamExt};

/// Runs one page inside the `entity_manager.query` tracing span (entity, indexes), and records
/// the page's stats on the span: shards, shard queries, items read and returned, duplicates
/// removed and consumed capacity.
async fn traced_page(
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

/// A query of one entity over one or more of its indexes.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use entity_manager_core::query::Query;
/// use entity_manager_core::store::{MemoryStore, Store, TableDefinition};
/// use entity_manager_core::Schema;
/// use entity_manager_core::model::ShardSpace;
/// use serde_json::json;
///
/// let schema = Schema::from_ts_config(
///     &json!({
///         "hashKey": "hashKey",
///         "rangeKey": "rangeKey",
///         "entities": { "user": {
///             "uniqueProperty": "userId",
///             "timestampProperty": "created",
///             "shardBumps": [{ "timestamp": 0, "charBits": 2, "chars": 1 }]
///         } },
///         "indexes": { "created": { "hashKey": "hashKey", "rangeKey": "created" } },
///         "propertyTranscodes": { "userId": "string", "created": "timestamp" }
///     }),
///     ShardSpace::Power,
/// )?;
/// let store = MemoryStore::new(TableDefinition::from_schema(&schema)?);
/// let user = schema.entity("user")?;
/// for n in 0..25u64 {
///     let item = serde_dynamo::to_item(json!({ "userId": format!("u{n}"), "created": 1_000 + n }))?;
///     store.put_item(user.add_keys(&item)?, Default::default()).await?;
/// }
///
/// let query = Query::new(&store, user).index("created").shards_between(0, 10_000).limit(10);
/// let first = query.page(None).await?;
/// assert_eq!(first.items.len(), 10); // merged over 4 shards, in `created` order
/// let second = query.page(first.next.as_deref()).await?;
/// assert_eq!(second.items[0]["created"], serde_dynamo::AttributeValue::N("1010".into()));
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Query<'a, S, St = Indexed> {
    store: &'a S,
    schema: EntitySchema<'a>,
    indexes: Vec<IndexSpec>,
    item: Item,
    paging: Paging,
    sort: Vec<(String, bool)>,
    projection: Option<Vec<String>>,
    table_name: Option<String>,
    /// Records created in this window only (besides the shards of the window).
    created: Option<(u64, u64)>,
    hash_suffix: Option<(String, String)>,
    /// Why a typed input could not be used (every page fails with it).
    problem: Option<String>,
    state: PhantomData<fn() -> St>,
}

/// The hash key to give a typed key builder of a sharded property in a query
/// ([`TypedQuery::hash_key`]): the query puts each shard's in its place.
pub const EVERY_SHARD: &str = "";

/// The state of a [`Query`] (or [`TypedQuery`]) with no index (nor the table) to read yet:
/// it has no [`range`](Query::range), [`filter`](Query::filter) or [`page`](Query::page), so a
/// condition cannot be given before the index it applies to.
///
/// ```compile_fail,E0599
/// # use entity_manager_core::query::Query;
/// # use entity_manager_core::store::{MemoryStore, RangeCondition};
/// # fn f(store: &MemoryStore, user: entity_manager_core::EntitySchema<'_>) {
/// // a range condition before any index: no index to apply to, so it does not compile
/// let query = Query::new(store, user).range(RangeCondition::Ge(5u64.into())).index("created");
/// # }
/// ```
#[derive(Clone, Copy, Debug)]
pub enum Unindexed {}

/// The state of a [`Query`] (or [`TypedQuery`]) with at least one index (or the table) to
/// read: [`range`](Query::range) and [`filter`](Query::filter) apply to the last one added.
#[derive(Clone, Copy, Debug)]
pub enum Indexed {}

impl<'a, S: Store> Query<'a, S, Unindexed> {
    /// A query of `entity` on `store`; add at least one index ([`index`](Query::index)) or the
    /// table ([`table`](Query::table)).
    pub fn new(store: &'a S, entity: EntitySchema<'a>) -> Self {
        Self {
            store,
            schema: entity,
            indexes: Vec::new(),
            item: Item::default(),
            paging: Paging::default(),
            sort: Vec::new(),
            projection: None,
            table_name: None,
            created: None,
            hash_suffix: None,
            problem: None,
            state: PhantomData,
        }
    }
}

impl<S: Store> Query<'_, S, Indexed> {
    /// A condition on the range key of the last index (or table) added.
    #[must_use]
    pub fn range(mut self, condition: RangeCondition) -> Self {
        if let Some(index) = self.indexes.last_mut() {
            index.range = Some(condition);
        }
        self
    }

    /// A filter on the items of the last index (or table) added (applied after each shard
    /// query's limit, as DynamoDB does).
    #[must_use]
    pub fn filter(mut self, filter: Filter) -> Self {
        if let Some(index) = self.indexes.last_mut() {
            index.filter = Some(filter);
        }
        self
    }
}

impl<S: Store> Query<'_, S, Indexed> {
    /// The last index (or table) added, for the typed face.
    fn last_spec(&mut self) -> Option<&mut IndexSpec> {
        self.indexes.last_mut()
    }
}

impl<'a, S: Store, St> Query<'a, S, St> {
    fn retype<T>(self) -> Query<'a, S, T> {
        Query {
            store: self.store,
            schema: self.schema,
            indexes: self.indexes,
            item: self.item,
            paging: self.paging,
            sort: self.sort,
            projection: self.projection,
            table_name: self.table_name,
            created: self.created,
            hash_suffix: self.hash_suffix,
            problem: self.problem,
            state: PhantomData,
        }
    }

    /// Adds an index to query (its GSI name). [`range`](Query::range) and
    /// [`filter`](Query::filter) then apply to it.
    #[must_use]
    pub fn index(mut self, name: impl Into<String>) -> Query<'a, S, Indexed> {
        self.indexes.push(IndexSpec::new(Some(name.into())));
        self.retype()
    }

    /// Adds the table itself: every shard of the entity's own hash key space, in table
    /// range-key order (the unique value). [`range`](Query::range) and
    /// [`filter`](Query::filter) then apply to it.
    #[must_use]
    pub fn table(mut self) -> Query<'a, S, Indexed> {
        self.indexes.push(IndexSpec::new(None));
        self.retype()
    }

    /// The partial item that fills the components of a sharded hash key; a unique value narrows
    /// each shard bump to the one shard it maps to.
    #[must_use]
    pub fn item(mut self, item: Item) -> Self {
        self.item = item;
        self
    }

    /// The shards to visit: those of the shard bumps in force from `from` to `to` (ms since the
    /// epoch), so those that can hold records created in `from..=to`. It selects shards, not
    /// records: a shard's other records (created before `from` under the same bump, or after
    /// `to`) are returned too; for those created in the window only, use
    /// [`created_between`](Self::created_between). Default: `0..=now`, pinned into the page
    /// token so that later pages see the same shards.
    #[must_use]
    pub fn shards_between(mut self, from: u64, to: u64) -> Self {
        self.paging.window = Some((from, to));
        self
    }

    /// Only records created in `from..=to` (ms since the epoch, the timestamp property): the
    /// shards of that window ([`shards_between`](Self::shards_between)), and of their records those whose timestamp lies
    /// in it (a key condition when the range key is the timestamp, else a check of each item
    /// read, so the index must project the timestamp property).
    #[must_use]
    pub fn created_between(mut self, from: u64, to: u64) -> Self {
        self.paging.window = Some((from, to));
        self.created = Some((from, to));
        self
    }

    paging_setters!();

    /// No limit: one page holds every matching item.
    #[must_use]
    pub fn unlimited(mut self) -> Self {
        self.paging.limit = Some(usize::MAX);
        self
    }

    /// Adds a sort key for union mode (indexes with different range keys); `desc` for
    /// descending. Default: the unique property, ascending.
    #[must_use]
    pub fn sort_by(mut self, attribute: impl Into<String>, desc: bool) -> Self {
        self.sort.push((attribute.into(), desc));
        self
    }

    /// Returns only these attributes (plus the keys the query needs).
    #[must_use]
    pub fn projection<I, T>(mut self, attributes: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        self.projection = Some(attributes.into_iter().map(Into::into).collect());
        self
    }

    /// Binds page tokens to the table of this name as well: a token of this query on another
    /// table is refused ([`TokenError::OtherTable`]). Tokens are always bound to the store's
    /// table definition (keys and indexes) and to the name the store gives ([`Store::name`]:
    /// a `DynamoStore`'s table name); this name tells apart tables that a store cannot (two
    /// `MemoryStore`s defined alike). Give the same name for every page.
    #[must_use]
    pub fn table_name(mut self, name: impl Into<String>) -> Self {
        self.table_name = Some(name.into());
        self
    }

    /// Refuses a `created_between` over an index that does not project the timestamp
    /// property (its items could not be checked), before any read.
    /// And a projection asking an index for attributes it does not project.
    fn check_projection(&self, plan: &Plan<'_>) -> Result<()> {
        let model = self.schema.model();
        let timestamp = &*model.timestamp_property;
        let definition = self.store.definition();
        for index in &plan.indexes {
            let Some(name) = &index.name else { continue };
            let Some(projected) = definition
                .index(name)
                .and_then(|gsi| definition.projected_attributes(gsi))
            else {
                continue;
            };
            let missing: Vec<&str> = self
                .projection
                .iter()
                .flatten()
                .map(String::as_str)
                .filter(|a| *a != &*model.unique_property && !projected.iter().any(|p| p == a))
                .collect();
            if !missing.is_empty() {
                return Err(self.invalid(format!(
                    "index `{name}` does not project {missing:?}, which the projection asks for; ask only for {projected:?} (and the unique property, always returned), or project them"
                )));
            }
            if plan.created.is_some() && !projected.iter().any(|a| a == timestamp) {
                return Err(self.invalid(format!(
                    "created_between needs the timestamp property `{timestamp}` of each item, and index `{name}` does not project it; project it, or use window() (which selects shards, not records) with a range condition"
                )));
            }
        }
        Ok(())
    }

    fn invalid(&self, reason: impl Into<String>) -> Error {
        Error::InvalidQuery {
            entity: self.schema.model().token.to_string(),
            reason: reason.into(),
        }
    }
}

impl<'a, S: Store> Query<'a, S, Indexed> {
    /// One page: the first (`token: None`) or the one after the page that returned `token`.
    pub async fn page(&self, token: Option<&str>) -> Result<QueryPageResult> {
        let model = self.schema.model();
        let limit = self.paging.limit.unwrap_or(model.default_limit);
        let page_size = self.paging.page_size.unwrap_or(model.default_page_size);
        let throttle = self.paging.throttle.unwrap_or(self.schema.table().throttle);
        if let Some(problem) = &self.problem {
            return Err(self.invalid(problem.clone()));
        }
        if limit == 0 {
            return Err(self.invalid("the limit must be at least 1"));
        }
        if page_size == 0 {
            return Err(self.invalid("the page size must be at least 1"));
        }
        if throttle == 0 {
            return Err(self.invalid("the throttle must be at least 1"));
        }
        let sort: Vec<(String, bool)> = if self.sort.is_empty() {
            vec![(model.unique_property.to_string(), false)]
        } else {
            self.sort.clone()
        };
        let input = PlanInput {
            specs: &self.indexes,
            item: &self.item,
            descending: self.paging.descending,
            projection: self.projection.as_deref(),
            sort: &sort,
            created: self.created,
            hash_suffix: self.hash_suffix.as_ref(),
        };
        let table = table_binding(self.store, self.table_name.as_deref());
        let (plan, state) = resume(token, &self.paging, &table, |window| {
            let plan = Plan::new(self.schema, &input, window)?;
            self.check_projection(&plan)?;
            Ok(plan)
        })?;

        traced_page(
            &model.token,
            plan.indexes.len(),
            self.run(&plan, state.as_ref(), limit, page_size, throttle, &sort),
        )
        .await
    }

    async fn run(
        &self,
        plan: &Plan<'a>,
        state: Option<&TokenState>,
        limit: usize,
        page_size: usize,
        throttle: usize,
        sort: &[(String, bool)],
    ) -> Result<QueryPageResult> {
        let engine = Engine {
            plan,
            store: self.store,
            page_size,
            throttle,
        };
        let mut totals = QueryStats {
            shards: plan.lanes(),
            ..QueryStats::default()
        };
        let token_shape = stream_shape(plan);
        let state_of = |i: usize| -> StreamState {
            state
                .and_then(|s| s.streams.get(i).cloned())
                .unwrap_or_else(|| StreamState::fresh(token_shape.lanes))
        };
        let mut seen: HashSet<String> = HashSet::new();
        let mut items: Vec<Item> = Vec::new();
        let mut next_states: Vec<StreamState> = Vec::with_capacity(token_shape.streams);
        if plan.exact {
            let all: Vec<usize> = (0..plan.indexes.len()).collect();
            let mut page_stats = QueryStats::default();
            let page = engine
                .page(&all, &state_of(0), limit, &mut seen, &mut page_stats)
                .await?;
            totals.add(&page_stats);
            items = page.items;
            next_states.push(page.state);
        } else {
            // the limit is shared out between the indexes that still have items
            let states: Vec<StreamState> = (0..plan.indexes.len()).map(state_of).collect();
            let live: Vec<usize> = (0..states.len()).filter(|&i| !states[i].done()).collect();
            for (i, state) in states.into_iter().enumerate() {
                let rank = live.iter().position(|&l| l == i);
                let share = match rank {
                    None => 0,
                    Some(_) if limit == usize::MAX => usize::MAX,
                    Some(rank) => limit / live.len() + usize::from(rank < limit % live.len()),
                };
                let mut page_stats = QueryStats::default();
                let mut page = if share == 0 {
                    engine::StreamPage {
                        items: Vec::new(),
                        state,
                    }
                } else {
                    engine
                        .page(&[i], &state, share, &mut seen, &mut page_stats)
                        .await?
                };
                totals.add(&page_stats);
                items.append(&mut page.items);
                next_states.push(page.state);
            }
        }
        for item in &mut items {
            plan.restore_unique(item);
        }
        if !plan.exact {
            sort_items(&mut items, sort);
        }
        totals.items_returned = items.len();
        let done = next_states.iter().all(StreamState::done);
        let next = (!done).then(|| {
            let table = table_binding(self.store, self.table_name.as_deref());
            token::encode(
                &TokenState {
                    from: plan.window.0,
                    to: plan.window.1,
                    streams: next_states,
                },
                token::Binding {
                    query: &plan.fingerprint,
                    table: &table,
                },
                self.paging.signing_key.as_deref(),
            )
        });
        Ok(QueryPageResult {
            items,
            next,
            stats: totals,
        })
    }

    /// Every matching item, page after page, until the shards are exhausted.
    pub fn stream(&self) -> impl Stream<Item = Result<Item>> + '_ {
        enum Next {
            Start,
            Token(String),
            Done,
        }
        futures::stream::unfold(Next::Start, move |next| async move {
            let token = match next {
                Next::Done => return None,
                Next::Start => None,
                Next::Token(token) => Some(token),
            };
            match self.page(token.as_deref()).await {
                Ok(page) => {
                    let next = page.next.map_or(Next::Done, Next::Token);
                    let items: Vec<Result<Item>> = page.items.into_iter().map(Ok).collect();
                    Some((futures::stream::iter(items), next))
                }
                Err(e) => Some((futures::stream::iter(vec![Err(e)]), Next::Done)),
            }
        })
        .flatten()
    }
}

/// The streams of a query's token and the lanes of each: one stream over every lane in exact
/// mode, one per index (over its shards) in union mode.
impl Resumable for Plan<'_> {
    fn window(&self) -> (u64, u64) {
        self.window
    }

    fn fingerprint(&self) -> &[u8; 32] {
        &self.fingerprint
    }

    fn shape(&self) -> token::Shape {
        stream_shape(self)
    }
}

fn stream_shape(plan: &Plan<'_>) -> token::Shape {
    if plan.exact {
        token::Shape {
            streams: 1,
            lanes: plan.lanes(),
        }
    } else {
        token::Shape {
            streams: plan.indexes.len(),
            lanes: plan.hash_keys.len(),
        }
    }
}

/// Sorts by the sort keys (missing values first, as the TypeScript library does), then by
/// nothing: the sort is stable.
fn sort_items(items: &mut [Item], sort: &[(String, bool)]) {
    items.sort_by(|a, b| {
        for (attribute, desc) in sort {
            let order = match (a.get(attribute), b.get(attribute)) {
                (None, None) => std::cmp::Ordering::Equal,
                (None, Some(_)) => std::cmp::Ordering::Less,
                (Some(_), None) => std::cmp::Ordering::Greater,
                (Some(x), Some(y)) => estimate::compare(x, y),
            };
            let order = if *desc { order.reverse() } else { order };
            if order != std::cmp::Ordering::Equal {
                return order;
            }
        }
        std::cmp::Ordering::Equal
    });
}

/// What a token is bound to besides its query: the table, by its definition (keys and
/// indexes), the name the store knows it by ([`Store::name`]) and the name the query was given
/// (`Query::table_name`).
fn table_binding<S: Store>(store: &S, table_name: Option<&str>) -> [u8; 32] {
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
trait Resumable: Sized {
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
fn resume<P: Resumable>(
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

/// A range-key condition value from anything serde can write (numbers become `N`, strings `S`).
pub fn key_value<T: serde::Serialize + ?Sized>(
    value: &T,
) -> Result<AttributeValue, serde_dynamo::Error> {
    serde_dynamo::to_attribute_value(value)
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
