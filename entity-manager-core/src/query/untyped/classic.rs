//! The untyped query of one entity over its classic indexes (and the table): sources named by
//! string, conditions as `RangeCondition`s and `Filter`s, items as attribute maps.

use std::collections::HashSet;
use std::marker::PhantomData;

use serde_dynamo::Item;

use crate::error::{Error, Result};
use crate::query::check::Target;
use crate::query::engine::{self, Engine, Growth};
use crate::query::lanes::Lanes as _;
use crate::query::page::{QueryPageResult, QueryStats};
use crate::query::paging::{Paging, Resumable, items_of, resume, table_binding, traced_page};
use crate::query::plan::{IndexSpec, Plan, PlanInput};
use crate::query::token::{self, StreamState, TokenState};
use crate::query::{Stream, estimate};
use crate::schema::EntitySchema;
use crate::store::{Filter, RangeCondition, Store};

/// A query of one entity over one or more of its indexes.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use entity_manager_core::query::untyped::Query;
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
    pub(in crate::query) item: Item,
    paging: Paging,
    sort: Vec<(String, bool)>,
    projection: Option<Vec<String>>,
    table_name: Option<String>,
    /// Records created in this window only (besides the shards of the window).
    created: Option<(u64, u64)>,
    pub(in crate::query) hash_suffix: Option<(String, String)>,
    /// Why a typed input could not be used (every page fails with it).
    pub(in crate::query) problem: Option<String>,
    state: PhantomData<fn() -> St>,
}
/// The state of a [`Query`] with no index (nor the table) to read yet:
/// it has no [`range`](Query::range), [`filter`](Query::filter) or [`page`](Query::page), so a
/// condition cannot be given before the index it applies to.
///
/// ```compile_fail,E0599
/// # use entity_manager_core::query::untyped::Query;
/// # use entity_manager_core::store::{MemoryStore, RangeCondition};
/// # fn f(store: &MemoryStore, user: entity_manager_core::EntitySchema<'_>) {
/// // a range condition before any index: no index to apply to, so it does not compile
/// let query = Query::new(store, user).range(RangeCondition::Ge(5u64.into())).index("created");
/// # }
/// ```
#[derive(Clone, Copy, Debug)]
pub enum Unindexed {}

/// The state of a [`Query`] with at least one index (or the table) to
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
    /// query's limit, as DynamoDB does). Given more than once, every filter must hold.
    #[must_use]
    pub fn filter(mut self, filter: Filter) -> Self {
        if let Some(index) = self.indexes.last_mut() {
            index.and_filter(filter);
        }
        self
    }
}

impl<S: Store> Query<'_, S, Indexed> {
    /// The last index (or table) added, for the typed face.
    pub(in crate::query) fn last_spec(&mut self) -> Option<&mut IndexSpec> {
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
        // most queries name one source: room for one, not the four a first push makes (a block
        // large enough to make the allocator gather every small block freed since, each page)
        self.indexes.reserve_exact(1);
        self.indexes.push(IndexSpec::new(Some(name.into())));
        self.retype()
    }

    /// Adds the table itself: every shard of the entity's own hash key space, in table
    /// range-key order (the unique value). [`range`](Query::range) and
    /// [`filter`](Query::filter) then apply to it.
    #[must_use]
    pub fn table(mut self) -> Query<'a, S, Indexed> {
        self.indexes.reserve_exact(1);
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
    /// table is refused ([`TokenError::OtherTable`](crate::query::TokenError::OtherTable)). Tokens are always bound to the store's
    /// table definition (keys and indexes) and to the name the store gives ([`Store::name`]:
    /// a `DynamoStore`'s table name); this name tells apart tables that a store cannot (two
    /// `MemoryStore`s defined alike). Give the same name for every page.
    #[must_use]
    pub fn table_name(mut self, name: impl Into<String>) -> Self {
        self.table_name = Some(name.into());
        self
    }

    /// Refuses a `created_between` over an index that does not project the timestamp
    /// property (its items could not be checked), before any read. (A projection asking an
    /// index for attributes it does not project is refused with the requests themselves, by
    /// the stores' own rule: [`check_requests`](Self::check_requests).)
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
            if plan.created.is_some() && !projected.iter().any(|a| a == timestamp) {
                return Err(self.invalid(format!(
                    "created_between needs the timestamp property `{timestamp}` of each item, and index `{name}` does not project it; project it, or use shards_between() (which selects shards, not records) with a range condition"
                )));
            }
        }
        Ok(())
    }

    /// Refuses, before any read, what the store would refuse of a shard query of each source
    /// (its conditions, filter and projection: see [`check`](crate::query::check)).
    fn check_requests(&self, plan: &Plan<'_>) -> Result<()> {
        let definition = self.store.definition();
        for (source, index) in plan.indexes.iter().enumerate() {
            let Some(target) = Target::of(definition, index.name.as_deref()) else {
                continue;
            };
            let mut request = plan.request(source, 0);
            request.range.clone_from(&index.range);
            target
                .check(&request)
                .map_err(|reason| self.invalid(reason))?;
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
        let settings = self.settings()?;
        let (plan, state) = self.plan(token, &settings.sort)?;
        traced_page(
            &self.schema.model().token,
            plan.indexes.len(),
            self.run(&plan, state.as_ref(), &settings),
        )
        .await
    }

    /// The page settings, checked.
    fn settings(&self) -> Result<Settings> {
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
        Ok(Settings {
            limit,
            page_size,
            throttle,
            sort,
        })
    }

    /// The plan of a page, and the state its token resumes from.
    fn plan(
        &self,
        token: Option<&str>,
        sort: &[(String, bool)],
    ) -> Result<(Plan<'a>, Option<TokenState>)> {
        let input = PlanInput {
            specs: &self.indexes,
            item: &self.item,
            descending: self.paging.descending,
            projection: self.projection.as_deref(),
            sort,
            created: self.created,
            hash_suffix: self.hash_suffix.as_ref(),
        };
        let table = table_binding(self.store, self.table_name.as_deref());
        resume(token, &self.paging, &table, |window| {
            let plan = Plan::new(self.schema, &input, window)?;
            self.check_projection(&plan)?;
            self.check_requests(&plan)?;
            Ok(plan)
        })
    }

    async fn run(
        &self,
        plan: &Plan<'a>,
        state: Option<&TokenState>,
        settings: &Settings,
    ) -> Result<QueryPageResult> {
        let Settings {
            limit,
            page_size,
            throttle,
            ref sort,
        } = *settings;
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
        Ok(QueryPageResult {
            items,
            next: self.token_after(plan, next_states),
            stats: totals,
        })
    }

    /// The token of the page after one that left its streams in `states` (`None`: every lane
    /// gave everything, it was the last).
    fn token_after(&self, plan: &Plan<'_>, states: Vec<StreamState>) -> Option<String> {
        if states.iter().all(StreamState::done) {
            return None;
        }
        let table = table_binding(self.store, self.table_name.as_deref());
        Some(token::encode(
            &TokenState {
                from: plan.window.0,
                to: plan.window.1,
                streams: states,
            },
            token::Binding {
                query: &plan.fingerprint,
                table: &table,
            },
            self.paging.signing_key.as_deref(),
        ))
    }

    /// Every matching item, page after page, until the shards are exhausted.
    ///
    /// The pages of a stream are those [`page`](Self::page) would give, with the same
    /// guarantees while the table is written, but a stream over several shards in one merged
    /// order keeps what each page read beyond its end: the next page goes on from there,
    /// instead of reading it again from a token (each page is still traced as one).
    ///
    /// From its second page on, a stream reads ahead as [`pages`](Self::pages) does (its first
    /// page reads what [`page`](Self::page) reads, and nothing more).
    pub fn stream(&self) -> impl Stream<Item = Result<Item>> + '_ {
        items_of(self.pages_growing(None, Growth::Doubling))
    }

    /// The pages from the first (`token: None`) or from the one after the page that returned
    /// `token`, each as [`page`](Self::page) gives it (its items, its stats and the token of
    /// the page after it), until the last.
    ///
    /// Each page goes on from what the pages before it read, as a [`stream`](Self::stream)
    /// does, instead of reading it again from the token: a query paged to its end this way
    /// reads each item once (a page that starts from a token reads every shard beyond its end
    /// to know where it ends, and the next page reads that again). Every page holds the
    /// limit's number of items (the last one what is left), with the guarantees of
    /// [`page`](Self::page) while the table is written. A stream can know the end sooner than
    /// paging by tokens: when its reads found every shard exhausted, a full last page has no
    /// token, where paging by tokens gives it one and then one more, empty page.
    ///
    /// It reads ahead (in exact mode: a union of indexes pages by tokens): once a page has its
    /// items, the next page's first shard queries go
    /// out (within the throttle: never more in flight than it says, these included) and stay
    /// in flight while the caller holds the page, so that the next page's round overlaps what
    /// the caller does with this one. They are futures the stream owns, not spawned tasks:
    /// dropping the stream cancels them. Each page's token is written from that page's own
    /// reads. Between two pages the stream holds the page, what each shard's reads brought past
    /// it, and those reads: under `(shards + throttle) × max(page_size, limit + 1)` items
    /// beyond the page.
    ///
    /// A failed page ends the stream with its error; nothing is lost: the token of the last
    /// page received resumes it, with `pages(Some(token))` or [`page`](Self::page) (in this
    /// process or another one). A read issued ahead that fails fails the page it was issued
    /// for, the next one.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use entity_manager_core::query::{StreamExt as _, TryStreamExt as _, untyped::Query};
    /// # use entity_manager_core::store::{MemoryStore, Store, TableDefinition};
    /// # use entity_manager_core::Schema;
    /// # use entity_manager_core::model::ShardSpace;
    /// # use serde_json::json;
    /// # let schema = Schema::from_ts_config(
    /// #     &json!({
    /// #         "hashKey": "hashKey",
    /// #         "rangeKey": "rangeKey",
    /// #         "entities": { "user": {
    /// #             "uniqueProperty": "userId",
    /// #             "timestampProperty": "created",
    /// #             "shardBumps": [{ "timestamp": 0, "charBits": 2, "chars": 1 }]
    /// #         } },
    /// #         "indexes": { "created": { "hashKey": "hashKey", "rangeKey": "created" } },
    /// #         "propertyTranscodes": { "userId": "string", "created": "timestamp" }
    /// #     }),
    /// #     ShardSpace::Power,
    /// # )?;
    /// # let store = MemoryStore::new(TableDefinition::from_schema(&schema)?);
    /// # let user = schema.entity("user")?;
    /// # for n in 0..25u64 {
    /// #     let item = serde_dynamo::to_item(json!({ "userId": format!("u{n}"), "created": 1_000 + n }))?;
    /// #     store.put_item(user.add_keys(&item)?, Default::default()).await?;
    /// # }
    /// // 25 users over 4 shards
    /// let query = Query::new(&store, user).index("created").shards_between(0, 10_000).limit(10);
    /// let mut pages = std::pin::pin!(query.pages(None));
    /// let (mut sizes, mut resume_from) = (Vec::new(), None);
    /// while let Some(page) = pages.next().await {
    ///     let page = page?; // on an error, `query.pages(resume_from.as_deref())` goes on
    ///     sizes.push(page.items.len());
    ///     resume_from = page.next;
    /// }
    /// assert_eq!(sizes, [10, 10, 5]);
    /// assert_eq!(resume_from, None); // the last page has no token
    ///
    /// // a stream of pages resumes from any page's token, as `page` does
    /// let first = query.page(None).await?;
    /// let rest: Vec<_> = query.pages(first.next.as_deref()).try_collect().await?;
    /// assert_eq!(rest[0].items[0]["created"], serde_dynamo::AttributeValue::N("1010".into()));
    /// # Ok(())
    /// # }
    /// ```
    pub fn pages(
        &self,
        token: Option<&str>,
    ) -> impl Stream<Item = Result<QueryPageResult>> + use<'_, 'a, S> {
        self.pages_growing(token.map(str::to_owned), Growth::Fixed)
    }

    /// The pages of a stream from the beginning or after `token`, growing as `growth` says
    /// (kept open in exact mode, by tokens in union mode), until the last or the first error.
    fn pages_growing(
        &self,
        token: Option<String>,
        growth: Growth,
    ) -> impl Stream<Item = Result<QueryPageResult>> + use<'_, 'a, S> {
        enum Next<'a> {
            Start(Option<String>),
            Token(String),
            Open(Box<Open<'a>>),
            Done,
        }
        futures::stream::unfold(Next::Start(token), move |next| async move {
            let page = match next {
                Next::Done => return None,
                Next::Start(token) => {
                    self.open(token.as_deref(), growth)
                        .await
                        .map(|(page, open)| {
                            let next = match open {
                                Ok(open) => Next::Open(open),
                                Err(Some(token)) => Next::Token(token),
                                Err(None) => Next::Done,
                            };
                            (page, next)
                        })
                }
                Next::Token(token) => self.page(Some(&token)).await.map(|page| {
                    let next = page.next.clone().map_or(Next::Done, Next::Token);
                    (page, next)
                }),
                Next::Open(mut open) => self.go_on(&mut open).await.map(|page| {
                    let next = if page.next.is_some() {
                        Next::Open(open)
                    } else {
                        Next::Done
                    };
                    (page, next)
                }),
            };
            Some(match page {
                Ok((page, next)) => (Ok(page), next),
                Err(e) => (Err(e), Next::Done),
            })
        })
    }

    /// The first page of a stream, from the beginning or after `token`: kept open when the
    /// query is one merged stream (exact mode), else paged by tokens (`Err` with the next
    /// token).
    async fn open(
        &self,
        token: Option<&str>,
        growth: Growth,
    ) -> Result<(
        QueryPageResult,
        std::result::Result<Box<Open<'a>>, Option<String>>,
    )> {
        let settings = self.settings()?;
        let (plan, state) = self.plan(token, &settings.sort)?;
        if !plan.exact {
            let page = traced_page(
                &self.schema.model().token,
                plan.indexes.len(),
                self.run(&plan, state.as_ref(), &settings),
            )
            .await?;
            let next = page.next.clone();
            return Ok((page, Err(next)));
        }
        let all: Vec<usize> = (0..plan.indexes.len()).collect();
        let state = state
            .and_then(|mut s| s.streams.pop())
            .unwrap_or_else(|| StreamState::fresh(plan.lanes()));
        let cursor = Engine {
            plan: &plan,
            store: self.store,
            page_size: settings.page_size,
            throttle: settings.throttle,
        }
        .open(&all, &state, settings.limit, growth)?;
        let mut open = Box::new(Open {
            plan,
            cursor,
            settings,
        });
        let page = self.go_on(&mut open).await?;
        let next = if page.next.is_some() {
            Ok(open)
        } else {
            Err(None)
        };
        Ok((page, next))
    }

    /// The next page of an open stream, with the token of the page after it (`None`: it was
    /// the last).
    async fn go_on(&self, open: &mut Open<'a>) -> Result<QueryPageResult> {
        let Open {
            plan,
            cursor,
            settings,
        } = open;
        let engine = Engine {
            plan: &*plan,
            store: self.store,
            page_size: settings.page_size,
            throttle: settings.throttle,
        };
        let (mut page, state) = engine
            .stream_page(
                cursor,
                (&self.schema.model().token, plan.indexes.len()),
                |item| plan.restore_unique(item),
            )
            .await?;
        page.next = self.token_after(plan, vec![state]);
        Ok(page)
    }
}

/// The checked page settings of a query.
struct Settings {
    limit: usize,
    page_size: usize,
    throttle: usize,
    sort: Vec<(String, bool)>,
}

/// A stream kept open between its pages (exact mode): its plan, and the engine's cursor.
struct Open<'a> {
    plan: Plan<'a>,
    cursor: engine::Cursor<'a>,
    settings: Settings,
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

#[cfg(test)]
mod tests {
    //! Tokens a forger writes: an unsigned token's checksum is no secret from whoever knows
    //! the query and the table, so any state the format can hold may come back. None of them
    //! may widen the query: every item of every page from such a token is one the query
    //! itself admits, each once, and the paging ends.

    use std::cmp::Ordering::{Greater, Less};
    use std::collections::HashSet;

    use proptest::prelude::*;
    use serde_dynamo::{AttributeValue, Item};

    use super::Query;
    use crate::Schema;
    use crate::error::Error;
    use crate::model::ShardSpace;
    use crate::query::paging::table_binding;
    use crate::query::token::{self, Boundary, StreamState, TokenState};
    use crate::store::{Expect, MemoryStore, RangeCondition, Store as _, TableDefinition};

    const USERS: u64 = 40;
    /// The most pages a paging of the users can take (a page holds one at least).
    const MOST_PAGES: usize = 2 * 40 + 4;

    fn schema() -> Schema {
        let config = serde_json::json!({
            "hashKey": "hashKey",
            "rangeKey": "rangeKey",
            "entities": {
                "user": {
                    "uniqueProperty": "userId",
                    "timestampProperty": "created",
                    "shardBumps": [{ "timestamp": 0, "charBits": 2, "chars": 1 }]
                },
                "other": {
                    "uniqueProperty": "otherId",
                    "timestampProperty": "created",
                    "shardBumps": [{ "timestamp": 0, "charBits": 2, "chars": 1 }]
                }
            },
            "indexes": {
                "created": { "hashKey": "hashKey", "rangeKey": "created" },
                "name": { "hashKey": "hashKey", "rangeKey": "name" }
            },
            "propertyTranscodes": {
                "userId": "string", "otherId": "string", "created": "timestamp", "name": "string"
            }
        });
        match Schema::from_ts_config(&config, ShardSpace::Power) {
            Ok(schema) => schema,
            Err(e) => panic!("the test's schema: {e}"),
        }
    }

    /// Users and others created at 1000 + n, named from a small alphabet (ties included).
    fn store(
        schema: &Schema,
        runtime: &tokio::runtime::Runtime,
    ) -> Result<MemoryStore, Box<dyn std::error::Error>> {
        let store = MemoryStore::new(TableDefinition::from_schema(schema)?);
        for (name, id) in [("user", "userId"), ("other", "otherId")] {
            let entity = schema.entity(name)?;
            for n in 0..USERS {
                let first = ["ann", "bea", "bob", "cy"][usize::try_from(n % 4).unwrap_or(0)];
                let item: std::collections::HashMap<String, AttributeValue> = [
                    (id.to_string(), AttributeValue::S(format!("{name}-{n:02}"))),
                    (
                        "created".to_string(),
                        AttributeValue::N((1_000 + n).to_string()),
                    ),
                    (
                        "name".to_string(),
                        AttributeValue::S(format!("{first}{}", n % 3)),
                    ),
                ]
                .into_iter()
                .collect();
                runtime
                    .block_on(store.put_item(entity.add_keys(&Item::from(item))?, Expect::Any))?;
            }
        }
        Ok(store)
    }

    fn value() -> impl Strategy<Value = AttributeValue> {
        prop_oneof![
            (-3_000i64..3_000).prop_map(|n| AttributeValue::N(n.to_string())),
            "-?[0-9]{1,40}(\\.[0-9]{1,5})?".prop_map(AttributeValue::N),
            "[a-d]{0,4}[0-9]?|\\PC{0,6}|b[a-z]{1020,1030}".prop_map(AttributeValue::S),
            proptest::collection::vec(any::<u8>(), 0..6).prop_map(AttributeValue::B),
            proptest::collection::vec("[a-c]{0,3}".prop_map(AttributeValue::S), 0..3)
                .prop_map(AttributeValue::L),
        ]
    }

    fn boundary() -> impl Strategy<Value = Option<Boundary>> {
        proptest::option::of(
            (
                value(),
                value(),
                "(user|other)-[0-9]{2}|\\PC{0,8}|[a-z]{1000,1100}",
                proptest::option::of(0usize..8),
                any::<bool>(),
                any::<bool>(),
            )
                .prop_map(|(first, last, unique, lane, run, through)| Boundary {
                    first,
                    last,
                    unique,
                    lane,
                    run,
                    through,
                }),
        )
    }

    /// What the query asks: the index (`name` or `created`), a range condition of its type,
    /// the order.
    fn ask() -> impl Strategy<Value = (bool, Option<RangeCondition>, bool)> {
        let n = |v: u64| AttributeValue::N(v.to_string());
        let s = |v: &str| AttributeValue::S(v.to_string());
        let created = prop_oneof![
            Just(None),
            (1_000u64..1_045, 0u64..30)
                .prop_map(move |(a, w)| Some(RangeCondition::Between(n(a), n(a + w)))),
            (1_000u64..1_045).prop_map(move |a| Some(RangeCondition::Gt(n(a)))),
            (1_000u64..1_045).prop_map(move |a| Some(RangeCondition::Le(n(a)))),
            (1_000u64..1_045).prop_map(move |a| Some(RangeCondition::Eq(n(a)))),
        ]
        .prop_map(|c| (false, c));
        let name = prop_oneof![
            Just(None),
            prop_oneof![Just("b"), Just("bo"), Just("c"), Just("a")]
                .prop_map(move |p| Some(RangeCondition::BeginsWith(s(p)))),
            prop_oneof![Just("bea1"), Just("ann0")]
                .prop_map(move |p| Some(RangeCondition::Eq(s(p)))),
            prop_oneof![Just("b"), Just("bob2")].prop_map(move |p| Some(RangeCondition::Lt(s(p)))),
            (
                prop_oneof![Just("ann"), Just("bea0")],
                prop_oneof![Just("bob"), Just("cy1")]
            )
                .prop_map(move |(a, b)| Some(RangeCondition::Between(s(a), s(b)))),
        ]
        .prop_map(|c| (true, c));
        (prop_oneof![created, name], any::<bool>())
            .prop_map(|((by_name, condition), descending)| (by_name, condition, descending))
    }

    /// Whether the query admits `item`: a user, created in the window, its range key within
    /// the condition.
    fn admitted(item: &Item, by_name: bool, condition: Option<&RangeCondition>) -> bool {
        let user = matches!(item.get("userId"), Some(AttributeValue::S(_)))
            && matches!(item.get("hashKey"), Some(AttributeValue::S(h)) if h.starts_with("user!"));
        let key = if by_name { "name" } else { "created" };
        let Some(value) = item.get(key) else {
            return false;
        };
        let number = |v: &AttributeValue| match v {
            AttributeValue::N(n) => n.parse::<i64>().ok(),
            _ => None,
        };
        let cmp = |a: &AttributeValue, b: &AttributeValue| match (a, b) {
            (AttributeValue::S(a), AttributeValue::S(b)) => Some(a.cmp(b)),
            _ => Some(number(a)?.cmp(&number(b)?)),
        };
        let within = match condition {
            None => true,
            Some(RangeCondition::Eq(v)) => value == v,
            Some(RangeCondition::Lt(v)) => cmp(value, v) == Some(Less),
            Some(RangeCondition::Le(v)) => matches!(cmp(value, v), Some(o) if o != Greater),
            Some(RangeCondition::Gt(v)) => cmp(value, v) == Some(Greater),
            Some(RangeCondition::Ge(v)) => matches!(cmp(value, v), Some(o) if o != Less),
            Some(RangeCondition::Between(a, b)) => {
                matches!(cmp(value, a), Some(o) if o != Less)
                    && matches!(cmp(value, b), Some(o) if o != Greater)
            }
            Some(RangeCondition::BeginsWith(p)) => match (value, p) {
                (AttributeValue::S(v), AttributeValue::S(p)) => v.starts_with(p.as_str()),
                _ => false,
            },
        };
        user && within
    }

    /// Range keys as long as a sort key may be (1,021 bytes, a long common prefix): the
    /// bounds a page predicts from them are sort keys too, so every page is read, by tokens
    /// and as a stream, in order, each record once.
    #[test]
    fn range_keys_at_the_size_limit_page_to_the_end() -> Result<(), Box<dyn std::error::Error>> {
        let runtime = tokio::runtime::Builder::new_current_thread().build()?;
        let schema = schema();
        let store = MemoryStore::new(TableDefinition::from_schema(&schema)?);
        let user = schema.entity("user")?;
        let prefix = "n".repeat(1_018);
        for n in 0..150u64 {
            let item: std::collections::HashMap<String, AttributeValue> = [
                (
                    "userId".to_string(),
                    AttributeValue::S(format!("user-{n:03}")),
                ),
                (
                    "created".to_string(),
                    AttributeValue::N((1_000 + n).to_string()),
                ),
                (
                    "name".to_string(),
                    AttributeValue::S(format!("{prefix}{:03}", (n * 7) % 150)),
                ),
            ]
            .into_iter()
            .collect();
            runtime.block_on(store.put_item(user.add_keys(&Item::from(item))?, Expect::Any))?;
        }
        for descending in [false, true] {
            let query = Query::new(&store, user)
                .index("name")
                .shards_between(0, 10_000)
                .limit(4)
                .page_size(3)
                .descending(descending);
            let mut names = Vec::new();
            let mut next: Option<String> = None;
            loop {
                let page = runtime.block_on(query.page(next.as_deref()))?;
                for item in &page.items {
                    if let Some(AttributeValue::S(name)) = item.get("name") {
                        names.push(name.clone());
                    }
                }
                next = page.next;
                if next.is_none() {
                    break;
                }
            }
            let mut expected = names.clone();
            expected.sort();
            if descending {
                expected.reverse();
            }
            assert_eq!(names, expected, "in order");
            let streamed: Vec<Item> =
                runtime.block_on(futures::TryStreamExt::try_collect(query.stream()))?;
            let streamed: Vec<String> = streamed
                .iter()
                .filter_map(|item| match item.get("name") {
                    Some(AttributeValue::S(name)) => Some(name.clone()),
                    _ => None,
                })
                .collect();
            assert_eq!(streamed, names, "the stream gives the pages' records");
            expected.dedup();
            assert_eq!(expected.len(), 150, "every record once");
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// A token with a valid checksum and any state the format holds (boundaries of any
        /// type and value, any lane, any run flag, any lanes marked exhausted): each page
        /// from it is a typed error or items the query admits, none twice, and the paging ends.
        #[test]
        fn a_forged_token_never_widens_the_query(
            (by_name, condition, descending) in ask(),
            forged in boundary(),
            exhausted in proptest::collection::vec(any::<bool>(), 4),
            limit in 1usize..7,
        ) {
            let runtime = match tokio::runtime::Builder::new_current_thread().build() {
                Ok(runtime) => runtime,
                Err(e) => return Err(TestCaseError::fail(e.to_string())),
            };
            let schema = schema();
            let store = match store(&schema, &runtime) {
                Ok(store) => store,
                Err(e) => return Err(TestCaseError::fail(e.to_string())),
            };
            let user = match schema.entity("user") {
                Ok(user) => user,
                Err(e) => return Err(TestCaseError::fail(e.to_string())),
            };
            let mut query = Query::new(&store, user)
                .index(if by_name { "name" } else { "created" })
                .shards_between(0, 10_000)
                .limit(limit)
                .page_size(3)
                .descending(descending);
            if let Some(c) = &condition {
                query = query.range(c.clone());
            }
            let sort = match query.settings() {
                Ok(settings) => settings.sort,
                Err(e) => return Err(TestCaseError::fail(e.to_string())),
            };
            let plan = match query.plan(None, &sort) {
                Ok((plan, _)) => plan,
                Err(e) => return Err(TestCaseError::fail(e.to_string())),
            };
            let table = table_binding(&store, None);
            let token = token::encode(
                &TokenState {
                    from: plan.window.0,
                    to: plan.window.1,
                    streams: vec![StreamState { boundary: forged.clone(), exhausted }],
                },
                token::Binding { query: &plan.fingerprint, table: &table },
                None,
            );
            // a boundary of another type than the index's range key is no key of it
            let foreign = forged.as_ref().is_some_and(|b| {
                !matches!(
                    (by_name, &b.last),
                    (true, AttributeValue::S(_)) | (false, AttributeValue::N(_))
                )
            });
            let mut next = Some(token);
            let mut seen = HashSet::new();
            let mut pages = 0;
            while let Some(token) = next.take() {
                pages += 1;
                prop_assert!(pages <= MOST_PAGES, "the paging does not end");
                let page = match runtime.block_on(query.page(Some(&token))) {
                    Ok(_) if foreign && pages == 1 => {
                        return Err(TestCaseError::fail("a foreign boundary was passed over"));
                    }
                    Ok(page) => page,
                    Err(Error::Token(_)) => break,
                    Err(e) => return Err(TestCaseError::fail(format!("not a token error: {e}"))),
                };
                for item in &page.items {
                    prop_assert!(admitted(item, by_name, condition.as_ref()), "not admitted: {item:?}");
                    let id = format!("{:?}", item.get("userId"));
                    prop_assert!(seen.insert(id.clone()), "{id} returned twice");
                }
                next = page.next;
            }
        }
    }
}
