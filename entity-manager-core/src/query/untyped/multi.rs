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
//! numbers numerically, strings and binary by bytes), then by lane (its table hash key), then
//! in the order the store keeps equal tuples in within a partition (promised by neither
//! `DynamoDB` nor this crate, but the same on every read); descending queries use the exact
//! reverse. Every page holds exactly `min(limit, remaining)` items, and paging to the end
//! returns every matching item exactly once, in that order across pages.
//!
//! The pages run on the one engine of every query (see [`Query`](super::Query)): the same
//! merge, the same scheduler, the same page token, the same contract while the table is
//! written. Only the position differs: a sort tuple instead of one range key. A key condition
//! can bound only the *conditioned* attribute (the first after the equality prefix), so a read
//! bounded at a value reads every tuple with that value; and the span the pages cover, from
//! which the engine predicts where a page ends, is measured on that attribute.

use std::borrow::Borrow;
use std::collections::HashSet;

use serde_dynamo::{AttributeValue, Item};

use crate::error::{Error, Result};
use crate::model::{Index, IndexAttribute, MultiKey};
use crate::query::Stream;
use crate::query::check::Target;
use crate::query::engine::{self, Engine, Growth};
use crate::query::lanes::{Key, Lanes};
use crate::query::page::{QueryPageResult, QueryStats};
use crate::query::paging::{self, Paging};
use crate::query::plan::{Canon, Fields, expand_range, shorten_range};
use crate::query::token::{self, Boundary, StreamState, TokenState};
use crate::schema::EntitySchema;
use crate::store::value::Scalar;
use crate::store::{QueryPage, RangeCondition, Store, StoreError};
use crate::table::key_type_name;

/// A query of a multi-attribute index over one entity, or over several entities that share
/// the index (an item collection).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use entity_manager_core::query::untyped::MultiQuery;
/// use entity_manager_core::store::{KeyType, MemoryStore, RangeCondition, Store, TableDefinition};
/// use entity_manager_core::{AttributeValue, Schema, transcode};
/// use entity_manager_core::model::{EntityModel, Index, IndexAttribute, Projection, Property, ShardBump, TableModel};
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
///     .shards_between(0, 100)
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
    /// The entity whose shard it is (a position in the plan's entities; 0 for an unsharded
    /// key's lane, which every entity shares).
    entity: usize,
}

/// A validated query: its key, its lanes and what its tokens are bound to.
#[derive(Debug)]
struct Plan<'a> {
    entities: Vec<EntitySchema<'a>>,
    multi: MultiKey,
    /// Equality on the leading sort attributes: the query's prefix, and its condition when that
    /// is an equality (one query, one plan: `range(Eq(v))` is the prefix one value longer).
    prefix: Vec<AttributeValue>,
    /// The condition on the sort attribute after the prefix, when it is not an equality.
    range: Option<RangeCondition>,
    lanes: Vec<LaneDef>,
    window: (u64, u64),
    fingerprint: [u8; 32],
}

impl paging::Resumable for Plan<'_> {
    fn window(&self) -> (u64, u64) {
        self.window
    }

    fn fingerprint(&self) -> &[u8; 32] {
        &self.fingerprint
    }

    fn shape(&self) -> token::Shape {
        token::Shape {
            streams: 1,
            lanes: self.lanes.len(),
        }
    }

    /// A tuple of up to 4 values: room for 4 streams' boundaries.
    fn max_shape(&self) -> token::Shape {
        token::Shape {
            streams: 4,
            lanes: self.lanes.len(),
        }
    }
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

    /// The shards to visit: those of the shard bumps in force from `from` to `to` (ms since the
    /// epoch). It selects shards, not records: the shards' other records are returned too.
    /// Default: `0..=now`, pinned into the page token.
    #[must_use]
    pub fn shards_between(mut self, from: u64, to: u64) -> Self {
        self.paging.window = Some((from, to));
        self
    }

    paging_setters!();

    /// The entities queried, in the order given.
    pub(crate) fn entities(&self) -> &[EntitySchema<'a>] {
        &self.entities
    }

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
            let spaces = self
                .entities
                .iter()
                .map(|entity| {
                    let table_hash = &entity.table().hash_key;
                    entity.hash_key_space(table_hash, &Item::default(), window.0, window.1)
                })
                .collect::<Result<Vec<_>>>()?;
            // sized once: a page plans its lanes again, and growing the list block by block
            // cost a tenth of the plan
            lanes.reserve_exact(spaces.iter().map(Vec::len).sum());
            for (at, space) in spaces.into_iter().enumerate() {
                lanes.extend(space.into_iter().map(|shard| LaneDef {
                    shard: Some(shard),
                    entity: at,
                }));
            }
        } else {
            lanes.push(LaneDef {
                shard: None,
                entity: 0,
            });
        }
        let mut prefix = self.prefix.clone();
        let range = match &self.range {
            Some(RangeCondition::Eq(value)) => {
                prefix.push(value.clone());
                None
            }
            other => other.clone(),
        };
        let fingerprint = self.fingerprint(&multi, &prefix, range.as_ref());
        let plan = Plan {
            entities: self.entities.clone(),
            multi,
            prefix,
            range,
            lanes,
            window,
            fingerprint,
        };
        self.check_request(&plan)?;
        Ok(plan)
    }

    /// Refuses, before any read, what the store would refuse of the query's shard queries (the
    /// types of its values, its condition: see [`check`](crate::query::check)).
    fn check_request(&self, plan: &Plan<'a>) -> Result<()> {
        let Some(target) = Target::of(self.store.definition(), Some(&self.index)) else {
            return Ok(());
        };
        let source = Source {
            query: self,
            plan,
            at: plan.prefix.len(),
        };
        let mut request = source.request(0, 0);
        request.range.clone_from(&plan.range);
        target
            .check(&request)
            .map_err(|reason| self.invalid(reason))
    }

    /// SHA-256 over what identifies the query across its pages (not its window, limit, page
    /// size or throttle).
    fn fingerprint(
        &self,
        multi: &MultiKey,
        prefix: &[AttributeValue],
        range: Option<&RangeCondition>,
    ) -> [u8; 32] {
        let mut fields = Fields::default();
        let mut field = |bytes: &[u8]| fields.field(bytes);
        let mut c = Canon::default();
        field(b"entity-manager multi-attribute query v3");
        // what makes an entity's items and lanes, as the classic fingerprint names it (not the
        // Debug text of whole models: rendering them cost a page more CPU than the rest of it)
        for entity in &self.entities {
            for text in crate::query::plan::key_layout(entity) {
                field(text.as_bytes());
            }
            let table = entity.table();
            // Debug renderings of small enums are canonical within one build; tokens are
            // versioned, not promised across releases
            field(
                format!(
                    "{:?}|{:?}|{:?}",
                    table.key_mode, table.numeric_hash, table.shard_hash
                )
                .as_bytes(),
            );
            for bump in entity.model().shard_bumps.iter() {
                field(c.clear().bump(bump).written());
            }
        }
        field(self.index.as_bytes());
        c.clear().tag(u8::from(multi.sharded));
        for attributes in [&multi.hash, &multi.range] {
            c.number(attributes.len() as u64);
            for attribute in attributes.iter() {
                c.text(&attribute.name)
                    .text(key_type_name(attribute.key_type));
            }
        }
        c.values(&self.hash)
            .values(prefix)
            .range(range)
            .tag(u8::from(self.paging.descending));
        field(c.written());
        fields.finish()
    }

    /// The page's plan and where it starts: from the beginning, or as `token` says (checked
    /// against the query and the table, its window pinned).
    fn resume(&self, token: Option<&str>, table: &[u8; 32]) -> Result<(Plan<'a>, StreamState)> {
        let (plan, state) = paging::resume(token, &self.paging, table, |window| self.plan(window))?;
        let state = match state {
            None => StreamState::fresh(plan.lanes.len()),
            Some(mut parsed) => parsed
                .streams
                .pop()
                .ok_or(crate::error::TokenError::Malformed("shape"))?,
        };
        Ok((plan, state))
    }

    /// One page: the first (`token: None`) or the one after the page that returned `token`.
    ///
    /// Runs in the `entity_manager.query` tracing span, as [`Query::page`](super::Query::page)
    /// does, with the page's [`QueryStats`] (consumed capacity included) recorded on it.
    pub async fn page(&self, token: Option<&str>) -> Result<QueryPageResult> {
        paging::traced_page(&self.tokens(), 1, self.run_page(token)).await
    }

    async fn run_page(&self, token: Option<&str>) -> Result<QueryPageResult> {
        let settings = self.settings()?;
        let table = paging::table_binding(self.store, None);
        let (plan, state) = self.resume(token, &table)?;
        let source = Source {
            query: self,
            plan: &plan,
            at: plan.prefix.len(),
        };
        let engine = Engine {
            plan: &source,
            store: self.store,
            page_size: settings.page_size,
            throttle: settings.throttle,
        };
        let mut totals = QueryStats {
            shards: plan.lanes.len(),
            ..QueryStats::default()
        };
        let mut seen = HashSet::new();
        let page = engine
            .page(&[0], &state, settings.limit, &mut seen, &mut totals)
            .await?;
        totals.items_returned = page.items.len();
        Ok(QueryPageResult {
            items: page.items,
            next: self.token_after(&plan, &table, page.state),
            stats: totals,
        })
    }

    /// The token of the page after one that left the stream in `state` (`None`: every lane
    /// gave everything, it was the last).
    fn token_after(&self, plan: &Plan<'_>, table: &[u8; 32], state: StreamState) -> Option<String> {
        (!state.done()).then(|| {
            token::encode(
                &TokenState {
                    from: plan.window.0,
                    to: plan.window.1,
                    streams: vec![state],
                },
                token::Binding {
                    query: &plan.fingerprint,
                    table,
                },
                self.paging.signing_key.as_deref(),
            )
        })
    }

    /// The page settings, checked.
    fn settings(&self) -> Result<Settings> {
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
        Ok(Settings {
            limit,
            page_size,
            throttle,
        })
    }

    /// Every matching item, page after page, until the shards are exhausted.
    ///
    /// As [`Query::stream`](super::Query::stream): the stream's pages are those
    /// [`page`](Self::page) would give, with the same guarantees while the table is written,
    /// but each goes on from what the previous one read, instead of reading it again from a
    /// token (each page is still traced as one).
    pub fn stream(&self) -> impl Stream<Item = Result<Item>> + '_ {
        stream_of(self)
    }

    /// [`stream`](Self::stream) of a query the stream owns.
    pub(crate) fn into_stream(self) -> impl Stream<Item = Result<Item>> + 'a
    where
        S: 'a,
    {
        stream_of(self)
    }

    /// The pages from the first (`token: None`) or from the one after the page that returned
    /// `token`, each as [`page`](Self::page) gives it, until the last.
    ///
    /// As [`Query::pages`](super::Query::pages): each page goes on from what the pages before
    /// it read (each item is read once), holds the limit's number of items, carries the
    /// token of the page after it, and reads the next page ahead while the caller holds one
    /// (within the throttle; dropping the stream cancels those reads); a failed page ends the
    /// stream with its error, and the last page's token resumes it.
    pub fn pages(
        &self,
        token: Option<&str>,
    ) -> impl Stream<Item = Result<QueryPageResult>> + use<'_, 'a, S> {
        pages_of(self, token.map(str::to_owned), Growth::Fixed)
    }

    /// [`pages`](Self::pages) of a query the stream owns.
    pub(crate) fn into_pages(
        self,
        token: Option<String>,
    ) -> impl Stream<Item = Result<QueryPageResult>> + 'a
    where
        S: 'a,
    {
        pages_of(self, token, Growth::Fixed)
    }
}

/// The checked page settings of a query.
#[derive(Clone, Copy)]
struct Settings {
    limit: usize,
    page_size: usize,
    throttle: usize,
}

/// A stream kept open between its pages: its plan, the engine's cursor, and the table
/// binding of its pages' tokens.
struct Open<'a> {
    plan: Plan<'a>,
    cursor: engine::Cursor<'a>,
    settings: Settings,
    table: [u8; 32],
}

/// The stream of `query` (borrowed or owned): each page goes on from the engine's cursor.
fn stream_of<'q, 'a: 'q, S, Q>(query: Q) -> impl Stream<Item = Result<Item>> + 'q
where
    S: Store + 'a,
    Q: Borrow<MultiQuery<'a, S>> + 'q,
{
    paging::items_of(pages_of(query, None, Growth::Doubling))
}

/// The pages of `query` (borrowed or owned), from the beginning or after `token`, growing as
/// `growth` says: each goes on from the engine's cursor.
fn pages_of<'q, 'a: 'q, S, Q>(
    query: Q,
    token: Option<String>,
    growth: Growth,
) -> impl Stream<Item = Result<QueryPageResult>> + 'q
where
    S: Store + 'a,
    Q: Borrow<MultiQuery<'a, S>> + 'q,
{
    enum Next<'a> {
        Start(Option<String>),
        Open(Box<Open<'a>>),
        Done,
    }
    futures::stream::unfold(
        (Next::Start(token), query),
        move |(next, query)| async move {
            let page = match next {
                Next::Done => return None,
                Next::Start(token) => match open(query.borrow(), token.as_deref(), growth) {
                    Ok(open) => go_on(query.borrow(), open).await,
                    Err(e) => Err(e),
                },
                Next::Open(open) => go_on(query.borrow(), open).await,
            };
            let (page, next) = match page {
                Ok((page, Some(open))) => (Ok(page), Next::Open(open)),
                Ok((page, None)) => (Ok(page), Next::Done),
                Err(e) => (Err(e), Next::Done),
            };
            Some((page, (next, query)))
        },
    )
}

/// A stream of `query`, before its first page, from the beginning or after `token`, its
/// pages growing as `growth` says.
fn open<'a, S: Store>(
    query: &MultiQuery<'a, S>,
    token: Option<&str>,
    growth: Growth,
) -> Result<Box<Open<'a>>> {
    let settings = query.settings()?;
    let table = paging::table_binding(query.store, None);
    let (plan, state) = query.resume(token, &table)?;
    let source = Source {
        query,
        plan: &plan,
        at: plan.prefix.len(),
    };
    let cursor = Engine {
        plan: &source,
        store: query.store,
        page_size: settings.page_size,
        throttle: settings.throttle,
    }
    .open(&[0], &state, settings.limit, growth)?;
    Ok(Box::new(Open {
        plan,
        cursor,
        settings,
        table,
    }))
}

/// The next page of an open stream, with the stream still open after it (`None`: it was the
/// last).
async fn go_on<'a, S: Store>(
    query: &MultiQuery<'a, S>,
    mut open: Box<Open<'a>>,
) -> Result<(QueryPageResult, Option<Box<Open<'a>>>)> {
    let Open {
        plan,
        cursor,
        settings,
        table,
    } = &mut *open;
    let source = Source {
        query,
        plan: &*plan,
        at: plan.prefix.len(),
    };
    let engine = Engine {
        plan: &source,
        store: query.store,
        page_size: settings.page_size,
        throttle: settings.throttle,
    };
    let (mut page, state) = engine
        .stream_page(cursor, (&query.tokens(), 1), |_| {})
        .await?;
    page.next = query.token_after(plan, table, state);
    let open = page.next.is_some().then_some(open);
    Ok((page, open))
}

/// The tie-breaker of an item as the token writes it in a lane that does not give the table
/// hash key (an unsharded key's one lane): the length of the table range key, `:`, the range
/// key, then the hash key. A sharded key's lane gives the hash key, and the token then holds
/// the range key alone ([`Lanes::boundary_unique`]).
fn join_tie(range: &str, hash: &str) -> String {
    // built by hand: one allocation, no formatting machinery (it runs for every item a page
    // returns)
    let mut tie = String::with_capacity(range.len() + hash.len() + 8);
    crate::store::expression::push_decimal(&mut tie, range.len());
    tie.push(':');
    tie.push_str(range);
    tie.push_str(hash);
    tie
}

fn split_tie(text: &str) -> Option<(&str, &str)> {
    let (len, rest) = text.split_once(':')?;
    let len: usize = len.parse().ok()?;
    Some((rest.get(..len)?, rest.get(len..)?))
}

/// One page's plan as the engine reads it: the query, its lanes, and the place of the
/// conditioned attribute in the sort tuple (after the equality prefix; the tuple's length when
/// the prefix covers it, and no read can be bounded).
struct Source<'q, 'a, S> {
    query: &'q MultiQuery<'a, S>,
    plan: &'q Plan<'a>,
    at: usize,
}

impl<S> Source<'_, '_, S> {
    fn table(&self) -> Option<&crate::model::TableModel> {
        self.plan.entities.first().map(EntitySchema::table)
    }

    /// A read of lane `shard` with this equality prefix on the sort attributes.
    fn request_with(&self, shard: usize, prefix: Vec<AttributeValue>) -> QueryPage {
        let q = self.query;
        let lane_hash = self
            .plan
            .lanes
            .get(shard)
            .and_then(|lane| lane.shard.clone())
            .map(AttributeValue::S);
        // the plan checked that the key has a partition attribute to give; the request's
        // fields are set in place (one request per shard query)
        let (first, more_hash_keys) = match lane_hash {
            Some(hash) => (hash, q.hash.clone()),
            None => match q.hash.split_first() {
                Some((first, rest)) => (first.clone(), rest.to_vec()),
                None => (AttributeValue::S(String::new()), Vec::new()),
            },
        };
        let mut request = QueryPage::new(first);
        request.index = Some(q.index.clone());
        request.more_hash_keys = more_hash_keys;
        request.range_prefix = prefix;
        request.descending = q.paging.descending;
        request
    }

    /// The conditioned attribute when it is the whole sort key: a key is then its value alone
    /// (it orders as the one-value tuple does, and costs no allocation, as a classic index's
    /// range key). One plan makes keys of one variant only.
    fn lone(&self) -> Option<&IndexAttribute> {
        match (&self.plan.multi.range[..], self.at) {
            ([one], 0) => Some(one),
            _ => None,
        }
    }

    /// The sort tuple of values as a key.
    fn tuple<'v>(
        &self,
        mut values: impl Iterator<Item = Option<&'v AttributeValue>>,
    ) -> Option<Key> {
        if let Some(one) = self.lone() {
            return Scalar::of(values.next()??, one.key_type).map(Key::One);
        }
        let range = &self.plan.multi.range;
        let mut parts = Vec::with_capacity(range.len());
        for (p, v) in range.iter().zip(values) {
            parts.push(Scalar::of(v?, p.key_type)?);
        }
        (parts.len() == range.len()).then(|| Key::Tuple {
            at: self.at,
            parts: parts.into_boxed_slice(),
        })
    }

    /// The unique property and the generated-value delimiter of the entity of a lane that
    /// gives the table hash key (a sharded key's): what its items' table range keys begin with.
    fn lane_entity(&self, shard: usize) -> Option<(&str, &str)> {
        let lane = self.plan.lanes.get(shard)?;
        lane.shard.as_ref()?;
        let entity = self.plan.entities.get(lane.entity)?;
        Some((
            &*entity.model().unique_property,
            &*entity.table().delimiters.generated_value,
        ))
    }

    /// The table range key a boundary's `unique` stands for in a lane that gives the table
    /// hash key ([`Lanes::boundary_unique`]).
    fn range_key_of(&self, shard: usize, unique: &str) -> Option<String> {
        let (property, delimiter) = self.lane_entity(shard)?;
        Some(expand_range(unique, property, delimiter))
    }

    /// A boundary's sort tuple: its `last`, a value for a key of one sort attribute (as
    /// [`boundary_last`](Lanes::boundary_last) writes it), else an `L` of one value per sort
    /// attribute; `None` when it is neither (a token of another shape).
    fn boundary_tuple<'b>(&self, boundary: &'b Boundary) -> Option<&'b [AttributeValue]> {
        let tuple = match (&self.plan.multi.range[..], &boundary.last) {
            (_, AttributeValue::L(values)) if self.plan.multi.range.len() > 1 => &values[..],
            ([_], value @ (AttributeValue::S(_) | AttributeValue::N(_) | AttributeValue::B(_))) => {
                std::slice::from_ref(value)
            }
            _ => return None,
        };
        (tuple.len() == self.plan.multi.range.len()).then_some(tuple)
    }
}

impl<S: Store> Lanes for Source<'_, '_, S> {
    fn descending(&self) -> bool {
        self.query.paging.descending
    }

    fn shards(&self) -> usize {
        self.plan.lanes.len()
    }

    fn table_hash_key(&self, shard: usize) -> &str {
        self.plan
            .lanes
            .get(shard)
            .and_then(|lane| lane.shard.as_deref())
            .unwrap_or("")
    }

    fn key(&self, _source: usize, item: &Item) -> Option<Key> {
        self.tuple(self.plan.multi.range.iter().map(|p| item.get(&*p.name)))
    }

    fn value<'i>(&self, _source: usize, item: &'i Item) -> Option<&'i AttributeValue> {
        item.get(&*self.plan.multi.range.get(self.at)?.name)
    }

    fn key_through(&self, value: &AttributeValue) -> Option<Key> {
        if let Some(one) = self.lone() {
            // the value is the key (nothing to fill)
            return Scalar::of(value, one.key_type).map(Key::One);
        }
        let range = &self.plan.multi.range;
        let conditioned = range.get(self.at)?;
        let mut parts = range
            .iter()
            .zip(&self.plan.prefix)
            .map(|(p, v)| Scalar::of(v, p.key_type))
            .collect::<Option<Vec<_>>>()?;
        parts.push(Scalar::of(value, conditioned.key_type)?);
        // past every tuple with that value: above them ascending, below them descending
        let fill = if self.descending() {
            Scalar::Min
        } else {
            Scalar::Max
        };
        parts.resize(range.len(), fill);
        Some(Key::Tuple {
            at: self.at,
            parts: parts.into(),
        })
    }

    fn condition(&self, _source: usize) -> Option<&RangeCondition> {
        self.plan.range.as_ref()
    }

    /// Whether an item of lane `shard` is a record of one of the query's entities (an
    /// unsharded partition holds every entity's items).
    fn admits(&self, shard: usize, item: &Item) -> bool {
        if self
            .plan
            .lanes
            .get(shard)
            .is_some_and(|lane| lane.shard.is_some())
        {
            return true;
        }
        let Some(table) = self.table() else {
            return false;
        };
        let Some(AttributeValue::S(hash)) = item.get(&*table.hash_key) else {
            return false;
        };
        self.plan.entities.iter().any(|e| {
            hash.strip_prefix(&*e.model().token)
                .is_some_and(|rest| rest.starts_with(&*e.table().delimiters.shard_key))
        })
    }

    fn request(&self, _source: usize, shard: usize) -> QueryPage {
        self.request_with(shard, self.plan.prefix.clone())
    }

    fn request_within(
        &self,
        _source: usize,
        shard: usize,
        key: &Key,
        inclusive: bool,
    ) -> Option<(QueryPage, Key)> {
        let Key::Tuple { at, parts } = key else {
            return None;
        };
        // the last sort attribute the key gives a value (the rest are filled: a key through)
        let last = parts
            .iter()
            .rposition(|p| !matches!(p, Scalar::Min | Scalar::Max))?;
        if last <= *at {
            return None;
        }
        let prefix = parts[..last]
            .iter()
            .map(Scalar::to_value)
            .collect::<Option<Vec<_>>>()?;
        let value = parts[last].to_value()?;
        let descending = self.descending();
        let condition = match (descending, inclusive) {
            (false, false) => RangeCondition::Gt(value),
            (false, true) => RangeCondition::Ge(value),
            (true, false) => RangeCondition::Lt(value),
            (true, true) => RangeCondition::Le(value),
        };
        let fill = if descending { Scalar::Min } else { Scalar::Max };
        let mut through = parts[..last].to_vec();
        through.resize(parts.len(), fill);
        Some((
            self.request_with(shard, prefix).range(condition),
            Key::Tuple {
                at: *at,
                parts: through.into(),
            },
        ))
    }

    fn unique_keys(&self, _source: usize) -> bool {
        false
    }

    /// The table keys and every index key attribute of an item.
    fn page_key(&self, _source: usize, _shard: usize, item: &Item) -> Option<Item> {
        let table = self.table()?;
        let (hash_key, range_key) = (&*table.hash_key, &*table.range_key);
        // a sharded key's first partition attribute is the table hash key: named once
        let names = [hash_key, range_key].into_iter().chain(
            self.plan
                .multi
                .hash_names()
                .chain(self.plan.multi.range_names())
                .filter(|name| *name != hash_key && *name != range_key),
        );
        // sized once: four or so keys, not grown (and rehashed) twice on the way
        let multi = &self.plan.multi;
        let mut key = Item::default();
        key.reserve(2 + multi.hash.len() + multi.range.len());
        for name in names {
            key.insert(name.to_owned(), item.get(name)?.clone());
        }
        Some(key)
    }

    /// The boundary's item's keys: the table keys from its tie-breaker (the table hash key from
    /// the lane, when it leads the partition), the partition attributes from the lane and the
    /// query, the sort attributes from its tuple.
    fn resume_key(&self, _source: usize, shard: usize, boundary: &Boundary) -> Option<Item> {
        let table = self.table()?;
        let tuple = self.boundary_tuple(boundary)?;
        let multi = &self.plan.multi;
        let lane_hash = self.plan.lanes.get(shard)?.shard.as_deref();
        let (range, hash) = if let Some(hash) = lane_hash {
            (self.range_key_of(shard, &boundary.unique)?, hash)
        } else {
            let (range, hash) = split_tie(&boundary.unique)?;
            (range.to_owned(), hash)
        };
        let hash_values: Vec<AttributeValue> = lane_hash
            .map(|hash| AttributeValue::S(hash.to_owned()))
            .into_iter()
            .chain(self.query.hash.iter().cloned())
            .collect();
        if multi.hash.len() != hash_values.len() {
            return None;
        }
        let mut key = Item::default();
        key.reserve(2 + multi.hash.len() + multi.range.len());
        key.insert(table.range_key.to_string(), AttributeValue::S(range));
        key.insert(
            table.hash_key.to_string(),
            AttributeValue::S(hash.to_owned()),
        );
        for (attribute, value) in multi.hash.iter().zip(hash_values) {
            key.insert(attribute.name.to_string(), value);
        }
        for (attribute, value) in multi.range.iter().zip(tuple) {
            key.insert(attribute.name.to_string(), value.clone());
        }
        Some(key)
    }

    /// The table keys (range key, then hash key), as the token's tie-breaker.
    fn identity(&self, item: &Item) -> Option<String> {
        let table = self.table()?;
        match (item.get(&*table.range_key), item.get(&*table.hash_key)) {
            (Some(AttributeValue::S(range)), Some(AttributeValue::S(hash))) => {
                Some(join_tie(range, hash))
            }
            _ => None,
        }
    }

    /// When the lane gives the table hash key (a sharded key: its items' table hash key is the
    /// lane's), the table range key alone, as short as a classic query's: its unique value
    /// when it has the lane's entity's form (`uniqueProperty#value`), else `\0` and the whole
    /// range key (so is a unique value that begins with `\0`: the two never mix up). Else both
    /// keys ([`identity`](Self::identity)).
    fn boundary_unique(&self, shard: usize, item: &Item) -> Option<String> {
        let Some((property, delimiter)) = self.lane_entity(shard) else {
            return self.identity(item);
        };
        match item.get(&*self.table()?.range_key) {
            Some(AttributeValue::S(range)) => Some(shorten_range(range, property, delimiter)),
            _ => None,
        }
    }

    /// The sort value of a key of one sort attribute, else the tuple as an `L`.
    fn boundary_last(&self, _source: usize, item: &Item) -> Option<AttributeValue> {
        let multi = &self.plan.multi;
        if let [one] = &multi.range[..] {
            return item.get(&*one.name).cloned();
        }
        Some(tuple_value(multi, item))
    }

    fn boundary_key(&self, _source: usize, boundary: &Boundary) -> Option<Key> {
        self.tuple(self.boundary_tuple(boundary)?.iter().map(Some))
    }

    fn boundary_value(&self, boundary: &Boundary) -> Option<AttributeValue> {
        self.boundary_tuple(boundary)?.get(self.at).cloned()
    }

    fn shard_error(&self, _source: usize, shard: usize, error: StoreError) -> Error {
        Error::ShardQuery {
            entity: self.query.tokens(),
            index: self.query.index.clone(),
            hash_key: self
                .plan
                .lanes
                .get(shard)
                .and_then(|lane| lane.shard.clone())
                .unwrap_or_else(|| format!("{:?}", self.query.hash)),
            source: Box::new(error),
        }
    }
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{join_tie, split_tie};
    use crate::query::plan::{WHOLE_KEY, expand_range, shorten_range};

    proptest! {
        /// A sharded lane's boundary keeps any table range key so that it comes back whole:
        /// as its unique value when it has the entity's form (as short as a classic query's
        /// token), else whole behind a marker; keys of either form, any text.
        #[test]
        fn a_lane_boundary_gives_its_range_key_back(
            value in "\\PC{0,40}|\\x00\\PC{0,10}",
            other in "\\PC{0,40}",
            property in "[a-zA-Z]{1,8}",
            delimiter in "#|!|::",
        ) {
            let formed = format!("{property}{delimiter}{value}");
            for range in [&formed, &other] {
                let kept = shorten_range(range, &property, &delimiter);
                prop_assert_eq!(&expand_range(&kept, &property, &delimiter), range);
            }
            // the entity's form keeps the value alone unless it begins with the marker
            let kept = shorten_range(&formed, &property, &delimiter);
            if value.starts_with(WHOLE_KEY) {
                prop_assert_eq!(kept, format!("{WHOLE_KEY}{formed}"));
            } else {
                prop_assert_eq!(kept, value);
            }
        }

        /// The tie-breaker a token carries: the length of the range key in decimal, a colon,
        /// then both keys (tokens written before the hand-built form stay readable), and it
        /// splits back into the two keys, whatever they hold.
        #[test]
        fn a_tie_is_its_length_and_both_keys(range in ".{0,300}", hash in ".{0,40}") {
            let tie = join_tie(&range, &hash);
            prop_assert_eq!(&tie, &format!("{}:{range}{hash}", range.len()));
            prop_assert_eq!(split_tie(&tie), Some((range.as_str(), hash.as_str())));
        }
    }
}
