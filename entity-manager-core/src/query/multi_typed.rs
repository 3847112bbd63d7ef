//! The typed face of [`MultiQuery`]: the index named by the entity's index token, the partition
//! values and sort conditions written with the entity's fields, records read back as the
//! entity's type (or, for an item collection, as the collection's enum).
//!
//! Conditions are given one field at a time, in any order: the query puts them in key order.
//! Every misuse (a field not in the index, a partition attribute missing or given twice, a
//! non-equality condition on a partition attribute, a gap in the sort prefix, two range
//! conditions, a combined condition) is an [`Error::InvalidQuery`] that names the entity, the
//! index and the field, returned by the first page before any read.

use std::future::Future;
use std::marker::PhantomData;

use futures::Stream;
use serde::de::DeserializeOwned;
use serde_dynamo::AttributeValue;

use super::{MultiQuery, Paging, QueryPageResult, TypedPage};
use crate::entity::{Entity, IndexToken, from_owned_item, schema_of};
use crate::error::{Error, Result};
use crate::field::Condition;
use crate::model::MultiKey;
use crate::schema::EntitySchema;
use crate::store::{Comparison, Filter, RangeCondition, Store};
use crate::transcode::KeyType;

/// A typed query of a multi-attribute index of entity `E`, built by
/// [`EntityExt::multi_query`](crate::EntityExt::multi_query) from an index token: give every
/// partition attribute a value with [`hash`](Self::hash), and optionally conditions on the sort
/// attributes with [`range`](Self::range), each from a field of `E`
/// (`Player::FIELDS.team_id.eq("t1")`), in any order.
///
/// The sort conditions are equality on the leading sort attributes (the prefix) and at most one
/// condition (`eq`, `lt`, `le`, `gt`, `ge`, `between` or `begins_with`) on the next one. The
/// order, the paging and the page token are those of [`MultiQuery`], which this builds: the same
/// inputs given untyped give the same pages and tokens.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use entity_manager_core::field::Field;
/// use entity_manager_core::store::{KeyType, MemoryStore, TableDefinition};
/// use entity_manager_core::{Entity, EntityExt, Table};
/// # use entity_manager_core::{EntityModel, TableModel, IndexToken, Index, IndexAttribute, Projection, Property, ShardBump, transcode};
/// # #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
/// # #[serde(rename_all = "camelCase")]
/// # struct Player { player_id: String, created: u64, team: String, score: i64 }
/// # struct League;
/// # impl Table for League {
/// #     const MODEL: TableModel = TableModel::DEFAULT;
/// #     fn model() -> &'static TableModel { static M: TableModel = League::MODEL; &M }
/// #     fn entities() -> Vec<&'static EntityModel> { vec![Player::model()] }
/// # }
/// # #[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// # enum PlayerIndex { ByTeam }
/// # impl IndexToken for PlayerIndex {
/// #     const ALL: &'static [Self] = &[Self::ByTeam];
/// #     fn name(self) -> &'static str { "byTeam" }
/// # }
/// # impl Entity for Player {
/// #     type Table = League;
/// #     type Index = PlayerIndex;
/// #     const MODEL: EntityModel = {
/// #         const PROPERTIES: &[Property] = &[Property::new("playerId", transcode::STRING), Property::new("created", transcode::TIMESTAMP)];
/// #         const HASH: &[IndexAttribute] = &[IndexAttribute::new("hashKey", KeyType::S), IndexAttribute::new("team", KeyType::S)];
/// #         const RANGE: &[IndexAttribute] = &[IndexAttribute::new("score", KeyType::N)];
/// #         const INDEXES: &[Index] = &[Index::multi("byTeam", HASH, RANGE, true, Projection::All)];
/// #         EntityModel::new("player", "playerId", "created")
/// #             .with_shard_bumps(&[ShardBump::new(0, 2, 1)])
/// #             .with_properties(PROPERTIES)
/// #             .with_indexes(INDEXES)
/// #     };
/// #     fn model() -> &'static EntityModel { static M: EntityModel = Player::MODEL; &M }
/// # }
/// // `Player` derives `Entity`: its index tokens are `PlayerIndex`, its fields `Player::FIELDS`
/// let team: Field<Player, String> = Field::new("team"); // `Player::FIELDS.team`
/// let score: Field<Player, i64> = Field::new("score"); // `Player::FIELDS.score`
/// let store = MemoryStore::new(TableDefinition::from_schema(League::schema()?)?);
/// for n in 0..30 {
///     let player = Player { player_id: format!("p{n}"), created: n, team: "red".into(), score: (n as i64 * 7) % 30 };
///     player.put(&store).await?;
/// }
/// let query = Player::multi_query(&store, PlayerIndex::ByTeam)?
///     .range(score.ge(10)) // in any order
///     .hash(team.eq("red"))
///     .window(0, 100)
///     .limit(8);
/// let first = query.page(None).await?;
/// assert_eq!(first.items.len(), 8); // merged over 4 shards, in score order
/// assert_eq!(first.items[0].score, 10);
/// let second = query.page(first.next.as_deref()).await?;
/// assert_eq!(second.items[0].score, 18);
///
/// // a misuse is a typed error naming the field
/// let wrong = Player::multi_query(&store, PlayerIndex::ByTeam)?.hash(team.ge("r"));
/// let error = wrong.page(None).await.err().ok_or("accepted")?;
/// assert!(error.to_string().contains("`team`"));
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct TypedMultiQuery<'a, S, E> {
    core: Core<'a, S>,
    paging: Paging,
    entity: PhantomData<fn() -> E>,
}

impl<'a, S: Store, E: Entity> TypedMultiQuery<'a, S, E> {
    /// A query of `E`'s multi-attribute index `index`; an index with a classic key is refused.
    pub(crate) fn new(store: &'a S, index: E::Index) -> Result<Self> {
        Ok(Self {
            core: Core::new(store, vec![schema_of::<E>()?], index.name())?,
            paging: Paging::default(),
            entity: PhantomData,
        })
    }

    /// The value of a partition attribute: an equality on a field of `E` in the index's
    /// partition key (`Player::FIELDS.team_id.eq("t1")`). Give every partition attribute (not
    /// the shard attribute of a sharded index: the query fans out over it) once, in any order.
    #[must_use]
    pub fn hash(mut self, condition: Condition<E>) -> Self {
        self.core.conditions.add(Part::Hash, None, condition);
        self
    }

    /// A condition on a sort attribute, a field of `E` in the index's sort key: equality on
    /// each leading sort attribute, and at most one `eq`, `lt`, `le`, `gt`, `ge`, `between` or
    /// `begins_with` on the one after them; in any order.
    #[must_use]
    pub fn range(mut self, condition: Condition<E>) -> Self {
        self.core.conditions.add(Part::Range, None, condition);
        self
    }

    /// The shards to visit: those of the shard bumps in force from `from` to `to` (ms since the
    /// epoch). It selects shards, not records (see [`MultiQuery::window`]). Default: `0..=now`,
    /// pinned into the page token.
    #[must_use]
    pub fn window(mut self, from: u64, to: u64) -> Self {
        self.paging.window = Some((from, to));
        self
    }

    paging_setters!();

    /// The untyped query these inputs make (what [`page`](Self::page) runs), or the first
    /// page's error.
    pub fn untyped(&self) -> Result<MultiQuery<'a, S>> {
        self.core.build(&self.paging)
    }

    /// One page of records: the first (`token: None`) or the one after the page that returned
    /// `token`.
    pub async fn page(&self, token: Option<&str>) -> Result<TypedPage<E>>
    where
        E: DeserializeOwned,
    {
        typed(
            self.core.page(&self.paging, token).await?,
            from_owned_item::<E>,
        )
    }

    /// Every matching record, page after page (a [`Stream`]: bring
    /// [`StreamExt`](super::StreamExt) into scope to use `next`, `try_collect` and the rest).
    pub fn stream(&self) -> impl Stream<Item = Result<E>> + '_
    where
        E: DeserializeOwned,
    {
        pages(move |token| async move { self.page(token.as_deref()).await })
    }
}

/// A query of an item collection through a multi-attribute index its members share, built by
/// [`Collection::query`](super::Collection::query) from an index token: the partition values
/// and sort conditions come from the fields of any member (their attribute names are the
/// index's), as for [`TypedMultiQuery`], and records come back as the collection's enum. See
/// [`MultiQuery`] for the order and the paging.
#[derive(Debug)]
pub struct CollectionQuery<'a, S, C> {
    core: Core<'a, S>,
    paging: Paging,
    collection: PhantomData<fn() -> C>,
}

impl<'a, S: Store, C: super::Collection> CollectionQuery<'a, S, C> {
    pub(super) fn new(store: &'a S, index: &'static str) -> Result<Self> {
        Ok(Self {
            core: Core::new(store, C::members()?, index)?,
            paging: Paging::default(),
            collection: PhantomData,
        })
    }

    /// The value of a partition attribute: an equality on a field of a member entity `M`
    /// (`User::FIELDS.user_id.eq("u1")`; a field of another entity does not compile). Give
    /// every partition attribute (not the shard attribute) once, in any order.
    #[must_use]
    pub fn hash<M: super::CollectionMember<C>>(mut self, condition: Condition<M>) -> Self {
        self.core
            .conditions
            .add(Part::Hash, Some(&M::model().token), condition);
        self
    }

    /// A condition on a sort attribute, from a field of a member entity: equality on each
    /// leading sort attribute, and at most one other condition on the one after them; in any
    /// order.
    #[must_use]
    pub fn range<M: super::CollectionMember<C>>(mut self, condition: Condition<M>) -> Self {
        self.core
            .conditions
            .add(Part::Range, Some(&M::model().token), condition);
        self
    }

    /// The shards to visit: those of the shard bumps in force from `from` to `to` (ms since the
    /// epoch), for every member. It selects shards, not records. Default: `0..=now`.
    #[must_use]
    pub fn window(mut self, from: u64, to: u64) -> Self {
        self.paging.window = Some((from, to));
        self
    }

    paging_setters!();

    /// The untyped query these inputs make (what [`page`](Self::page) runs), or the first
    /// page's error.
    pub fn untyped(&self) -> Result<MultiQuery<'a, S>> {
        self.core.build(&self.paging)
    }

    /// One page of records: the first (`token: None`) or the one after the page that returned
    /// `token`.
    pub async fn page(&self, token: Option<&str>) -> Result<TypedPage<C>> {
        typed(self.core.page(&self.paging, token).await?, |item| {
            C::from_item(&item)
        })
    }

    /// Every matching record, page after page.
    pub fn stream(&self) -> impl Stream<Item = Result<C>> + '_ {
        pages(move |token| async move { self.page(token.as_deref()).await })
    }
}

/// A page's items read as `T`.
fn typed<T>(
    page: QueryPageResult,
    read: impl Fn(serde_dynamo::Item) -> Result<T>,
) -> Result<TypedPage<T>> {
    Ok(TypedPage {
        items: page
            .items
            .into_iter()
            .map(read)
            .collect::<Result<Vec<T>>>()?,
        next: page.next,
        stats: page.stats,
    })
}

/// Every item of every page, page after page, until a page has no next token (an error ends the
/// stream after it).
fn pages<'s, T, F, Fut>(page: F) -> impl Stream<Item = Result<T>> + 's
where
    T: 's,
    F: Fn(Option<String>) -> Fut + 's,
    Fut: Future<Output = Result<TypedPage<T>>> + 's,
{
    use futures::StreamExt as _;
    enum Next {
        Start,
        Token(String),
        Done,
    }
    futures::stream::unfold((Next::Start, page), |(next, page)| async move {
        let token = match next {
            Next::Done => return None,
            Next::Start => None,
            Next::Token(token) => Some(token),
        };
        match page(token).await {
            Ok(p) => {
                let next = p.next.map_or(Next::Done, Next::Token);
                let items: Vec<Result<T>> = p.items.into_iter().map(Ok).collect();
                Some((futures::stream::iter(items), (next, page)))
            }
            Err(e) => Some((futures::stream::iter(vec![Err(e)]), (Next::Done, page))),
        }
    })
    .flatten()
}

/// What the typed queries share: the store, the entities, the index and its key, the
/// conditions given.
#[derive(Debug)]
struct Core<'a, S> {
    store: &'a S,
    entities: Vec<EntitySchema<'a>>,
    index: &'static str,
    multi: MultiKey,
    conditions: Conditions,
}

impl<'a, S: Store> Core<'a, S> {
    /// Refuses an index that is not a multi-attribute index of every entity, with the same
    /// key.
    fn new(store: &'a S, entities: Vec<EntitySchema<'a>>, index: &'static str) -> Result<Self> {
        let tokens = tokens(&entities);
        let invalid = |reason: String| Error::InvalidQuery {
            entity: tokens.clone(),
            reason,
        };
        let mut multi: Option<&MultiKey> = None;
        for entity in &entities {
            let token = &*entity.model().token;
            let declared = entity.model().index(index).ok_or_else(|| {
                invalid(format!(
                    "entity `{token}` declares no index `{index}`; every member of a collection declares the index it is queried by"
                ))
            })?;
            let theirs = declared.multi.as_ref().ok_or_else(|| {
                invalid(format!(
                    "index `{index}` of entity `{token}` has a classic key, not a multi-attribute one; query it with `EntityExt::query(..).index(..)`"
                ))
            })?;
            match multi {
                Some(first) if first != theirs => {
                    return Err(invalid(format!(
                        "the members declare index `{index}` with different keys (entity `{token}`: partition {:?}, sort {:?}); a collection shares one index",
                        theirs.hash_names().collect::<Vec<_>>(),
                        theirs.range_names().collect::<Vec<_>>(),
                    )));
                }
                _ => multi = Some(theirs),
            }
        }
        let multi = multi
            .cloned()
            .ok_or_else(|| invalid("a collection needs at least one member entity".into()))?;
        Ok(Self {
            store,
            conditions: Conditions {
                members: entities
                    .iter()
                    .map(|e| e.model().token.to_string())
                    .collect(),
                given: Vec::new(),
                problems: Vec::new(),
            },
            entities,
            index,
            multi,
        })
    }

    /// The untyped query of the conditions, in key order, with the paging settings.
    fn build(&self, paging: &Paging) -> Result<MultiQuery<'a, S>> {
        let resolved = self
            .conditions
            .resolve(&self.multi, self.index)
            .map_err(|problems| Error::InvalidQuery {
                entity: tokens(&self.entities),
                reason: problems.join("; "),
            })?;
        let mut query = MultiQuery::collection(self.store, self.entities.clone(), self.index)
            .hash(resolved.hash)
            .range_prefix(resolved.prefix)
            .descending(paging.descending);
        if let Some(range) = resolved.range {
            query = query.range(range);
        }
        if let Some((from, to)) = paging.window {
            query = query.window(from, to);
        }
        if let Some(limit) = paging.limit {
            query = query.limit(limit);
        }
        if let Some(page_size) = paging.page_size {
            query = query.page_size(page_size);
        }
        if let Some(throttle) = paging.throttle {
            query = query.throttle(throttle);
        }
        if let Some(key) = &paging.signing_key {
            query = query.signing_key(key.clone());
        }
        Ok(query)
    }

    async fn page(&self, paging: &Paging, token: Option<&str>) -> Result<QueryPageResult> {
        self.build(paging)?.page(token).await
    }
}

fn tokens(entities: &[EntitySchema<'_>]) -> String {
    entities
        .iter()
        .map(|e| e.model().token.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Which part of the key a condition was given for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Hash,
    Range,
}

/// One field condition, as a key condition on its attribute.
#[derive(Clone, Debug)]
struct Given {
    part: Part,
    attribute: String,
    condition: RangeCondition,
}

/// The conditions given so far, and what could not be taken (reported by the first page).
#[derive(Clone, Debug)]
struct Conditions {
    /// The entity tokens whose fields may be used.
    members: Vec<String>,
    given: Vec<Given>,
    problems: Vec<String>,
}

/// The conditions in key order: what [`MultiQuery`] takes.
#[derive(Debug)]
struct Resolved {
    hash: Vec<AttributeValue>,
    prefix: Vec<AttributeValue>,
    range: Option<RangeCondition>,
}

impl Conditions {
    /// Takes a condition of a field of entity `entity` (`None`: the query's own entity).
    fn add<M>(&mut self, part: Part, entity: Option<&str>, condition: Condition<M>) {
        if let Some(entity) = entity
            && !self.members.iter().any(|m| m == entity)
        {
            self.problems.push(format!(
                "a condition on a field of entity `{entity}`, which is not a member of this collection ({}); use fields of the members",
                self.members.join(", ")
            ));
            return;
        }
        let filter = match condition.into_filter() {
            Ok(filter) => filter,
            Err(invalid) => {
                self.problems.push(format!(
                    "a value of `{}` cannot be stored: {}",
                    invalid.property, invalid.source
                ));
                return;
            }
        };
        match key_condition(filter) {
            Ok((attribute, condition)) => self.given.push(Given {
                part,
                attribute,
                condition,
            }),
            Err(problem) => self.problems.push(problem),
        }
    }

    /// The values and conditions in key order, or every problem found.
    fn resolve(&self, multi: &MultiKey, index: &str) -> std::result::Result<Resolved, Vec<String>> {
        let mut problems = self.problems.clone();
        let partition = multi.user_hash();
        let sort = &multi.range;
        let names = |attributes: &[crate::model::IndexAttribute]| {
            attributes
                .iter()
                .map(|a| format!("`{}`", a.name))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let key_text = format!(
            "partition {}, sort {}",
            if partition.is_empty() {
                "(the shard attribute only)".to_owned()
            } else {
                names(partition)
            },
            names(sort)
        );
        let mut hash: Vec<Option<AttributeValue>> = vec![None; partition.len()];
        let mut range: Vec<Option<RangeCondition>> = vec![None; sort.len()];
        for g in &self.given {
            let attribute = &*g.attribute;
            let in_hash = partition.iter().position(|a| &*a.name == attribute);
            let in_range = sort.iter().position(|a| &*a.name == attribute);
            match (g.part, in_hash, in_range) {
                (Part::Hash, Some(at), _) => {
                    let RangeCondition::Eq(value) = &g.condition else {
                        problems.push(format!(
                            "`{attribute}` is a partition attribute of index `{index}`: give it a value with `eq`, not a range condition"
                        ));
                        continue;
                    };
                    if let Some(problem) = mistyped(attribute, partition[at].key_type, &g.condition) {
                        problems.push(problem);
                    } else if hash[at].is_some() {
                        problems.push(format!(
                            "partition attribute `{attribute}` of index `{index}` is given twice; give it once"
                        ));
                    } else {
                        hash[at] = Some(value.clone());
                    }
                }
                (Part::Range, _, Some(at)) => {
                    if let Some(problem) = mistyped(attribute, sort[at].key_type, &g.condition) {
                        problems.push(problem);
                    } else if range[at].is_some() {
                        problems.push(format!(
                            "sort attribute `{attribute}` of index `{index}` has two conditions; give it one"
                        ));
                    } else {
                        range[at] = Some(g.condition.clone());
                    }
                }
                (Part::Hash, None, Some(_)) => problems.push(format!(
                    "`{attribute}` is a sort attribute of index `{index}`: give its condition to `range`, not `hash`"
                )),
                (Part::Range, Some(_), None) => problems.push(format!(
                    "`{attribute}` is a partition attribute of index `{index}`: give its value to `hash`, not `range`"
                )),
                _ => problems.push(format!(
                    "`{attribute}` is not a key attribute of index `{index}` ({key_text}); condition only those fields"
                )),
            }
        }
        for (at, value) in hash.iter().enumerate() {
            if value.is_none() {
                let name = &partition[at].name;
                problems.push(format!(
                    "partition attribute `{name}` of index `{index}` has no value; give it one with `hash(FIELDS.<{name} field>.eq(..))`"
                ));
            }
        }
        problems.extend(prefix_problems(&range, sort, index));
        if !problems.is_empty() {
            return Err(problems);
        }
        let mut range: Vec<RangeCondition> = range.into_iter().flatten().collect();
        let last = range.pop();
        Ok(Resolved {
            hash: hash.into_iter().flatten().collect(),
            prefix: range
                .into_iter()
                .filter_map(|c| match c {
                    RangeCondition::Eq(v) => Some(v),
                    _ => None,
                })
                .collect(),
            range: last,
        })
    }
}

/// What is wrong with the sort conditions (by sort attribute, in key order): the conditioned
/// attributes must be the first ones, with equality on all but the last.
fn prefix_problems(
    range: &[Option<RangeCondition>],
    sort: &[crate::model::IndexAttribute],
    index: &str,
) -> Vec<String> {
    let mut problems = Vec::new();
    // the conditioned sort attributes: a prefix of the key, equality but on the last
    let conditioned = range.iter().take_while(|c| c.is_some()).count();
    if let Some(after) = range.iter().skip(conditioned).position(Option::is_some) {
        let name = &sort[conditioned + after].name;
        let missing = &sort[conditioned].name;
        problems.push(format!(
            "sort attribute `{name}` of index `{index}` is conditioned, and `{missing}` before it is not: condition the sort attributes from the first one on, with `eq` on all but the last"
        ));
    }
    let last = conditioned.saturating_sub(1);
    for (at, condition) in range.iter().enumerate().take(last) {
        if !matches!(condition, Some(RangeCondition::Eq(_))) {
            problems.push(format!(
                "sort attribute `{}` of index `{index}` has a range condition, and `{}` after it is conditioned too: only the last conditioned sort attribute takes one (<, <=, >, >=, between, begins_with); give `eq` to the ones before it",
                sort[at].name,
                sort[last].name
            ));
        }
    }
    problems
}

/// A field condition as a key condition on its attribute, or why it is not one.
fn key_condition(filter: Filter) -> std::result::Result<(String, RangeCondition), String> {
    let not_key = |attribute: &str, what: &str| {
        format!(
            "{what} on `{attribute}` is not a key condition: a key condition is one `eq`, `lt`, `le`, `gt`, `ge`, `between` or `begins_with` on one field"
        )
    };
    match filter {
        Filter::Compare {
            attribute,
            op,
            value,
        } => match op {
            Comparison::Eq => Ok((attribute, RangeCondition::Eq(value))),
            Comparison::Lt => Ok((attribute, RangeCondition::Lt(value))),
            Comparison::Le => Ok((attribute, RangeCondition::Le(value))),
            Comparison::Gt => Ok((attribute, RangeCondition::Gt(value))),
            Comparison::Ge => Ok((attribute, RangeCondition::Ge(value))),
            Comparison::Ne => Err(not_key(&attribute, "`ne`")),
        },
        Filter::Between {
            attribute,
            low,
            high,
        } => Ok((attribute, RangeCondition::Between(low, high))),
        Filter::BeginsWith { attribute, prefix } => {
            Ok((attribute, RangeCondition::BeginsWith(prefix)))
        }
        combined @ (Filter::And(_) | Filter::Or(_) | Filter::Not(_)) => {
            let mut fields = Vec::new();
            attributes(&combined, &mut fields);
            Err(format!(
                "a combined condition (and, or, not) on {} is not a key condition: give each field's condition in a call of its own",
                fields
                    .iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        }
        Filter::Contains { attribute, .. } => Err(not_key(&attribute, "`contains`")),
        Filter::Exists(attribute) => Err(not_key(&attribute, "`exists`")),
        Filter::NotExists(attribute) => Err(not_key(&attribute, "`not_exists`")),
        Filter::In { attribute, .. } => Err(not_key(&attribute, "`is_in`")),
        Filter::Size { attribute, .. } => Err(not_key(&attribute, "`size`")),
        Filter::Type { attribute, .. } => Err(not_key(&attribute, "`is_type`")),
    }
}

/// The attributes a filter names, in order, once each.
fn attributes(filter: &Filter, out: &mut Vec<String>) {
    let mut push = |a: &String| {
        if !out.contains(a) {
            out.push(a.clone());
        }
    };
    match filter {
        Filter::Compare { attribute, .. }
        | Filter::Between { attribute, .. }
        | Filter::BeginsWith { attribute, .. }
        | Filter::Contains { attribute, .. }
        | Filter::In { attribute, .. }
        | Filter::Size { attribute, .. }
        | Filter::Type { attribute, .. }
        | Filter::Exists(attribute)
        | Filter::NotExists(attribute) => push(attribute),
        Filter::And(operands) | Filter::Or(operands) => {
            for f in operands {
                attributes(f, out);
            }
        }
        Filter::Not(inner) => attributes(inner, out),
    }
}

/// Why a condition's values do not fit the key attribute's type (a collection member's field of
/// the same name and another type), if they do not.
fn mistyped(attribute: &str, key_type: KeyType, condition: &RangeCondition) -> Option<String> {
    let fits = |v: &AttributeValue| {
        matches!(
            (key_type, v),
            (KeyType::S, AttributeValue::S(_))
                | (KeyType::N, AttributeValue::N(_))
                | (KeyType::B, AttributeValue::B(_))
        )
    };
    let ok = match condition {
        RangeCondition::Eq(v)
        | RangeCondition::Lt(v)
        | RangeCondition::Le(v)
        | RangeCondition::Gt(v)
        | RangeCondition::Ge(v)
        | RangeCondition::BeginsWith(v) => fits(v),
        RangeCondition::Between(low, high) => fits(low) && fits(high),
    };
    (!ok).then(|| {
        format!(
            "`{attribute}` is a key attribute of type {key_type:?}, and the condition gives {condition:?}; give a value of that type"
        )
    })
}
