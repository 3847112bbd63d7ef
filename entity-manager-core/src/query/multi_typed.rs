//! The typed face of [`MultiQuery`]: the index named by the entity's index token, the partition
//! values and sort conditions written with the entity's fields, records read back as the
//! entity's type (or, for an item collection, as the collection's enum).
//!
//! Conditions are given one field at a time, in any order: the query puts them in key order.
//! Every misuse (a field not in the index, a partition attribute missing or given twice, a
//! non-equality condition on a partition attribute, a gap in the sort prefix, two range
//! conditions, a combined condition) is an [`Error::InvalidQuery`] that names the entity, the
//! index and the field, returned by the first page before any read.

use std::marker::PhantomData;

use futures::Stream;
use serde_dynamo::AttributeValue;

use super::index::{CollectionMember, QueryOutput};
use super::page::QueryPageResult;
use super::paging::Paging;
use super::typed::{TypedPage, read_items};
use super::untyped::MultiQuery;
use crate::error::{Error, Result};
use crate::field::Condition;
use crate::model::MultiKey;
use crate::schema::EntitySchema;
use crate::store::{Comparison, Filter, RangeCondition, Store};
use crate::transcode::KeyType;

/// A typed query of a multi-attribute index, read as `O` (an entity, or an item collection's
/// enum), from [`QueryStart::index`](super::QueryStart::index) given the index's token
/// (`Player::query(&store)?.index(PlayerIndex::ByTeam)`): give every partition attribute a
/// value with [`hash`](Self::hash), and optionally conditions on the sort attributes with
/// [`range`](Self::range), each from a field (`Player::FIELDS.team_id.eq("t1")`; for a
/// collection, a field of any member), in any order.
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
/// # use entity_manager_core::transcode;
/// # use entity_manager_core::model::{EntityModel, TableModel, Index, IndexAttribute, Projection, Property, ShardBump};
/// # use entity_manager_core::query::{MultiAttribute, TypedIndex};
/// # #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
/// # #[serde(rename_all = "camelCase")]
/// # struct Player { player_id: String, created: u64, team: String, score: i64 }
/// # struct League;
/// # impl Table for League {
/// #     const MODEL: TableModel = TableModel::DEFAULT;
/// #     fn model() -> &'static TableModel { static M: TableModel = League::MODEL; &M }
/// #     fn entities() -> Vec<&'static EntityModel> { vec![Player::model()] }
/// # }
/// # enum PlayerIndex {}
/// # #[allow(non_upper_case_globals)]
/// # impl PlayerIndex { const ByTeam: TypedIndex<Player, MultiAttribute> = TypedIndex::named("byTeam"); }
/// # impl Entity for Player {
/// #     type Table = League;
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
/// let query = Player::query(&store)?
///     .index(PlayerIndex::ByTeam)
///     .range(score.ge(10)) // in any order
///     .hash(team.eq("red"))
///     .shards_between(0, 100)
///     .limit(8);
/// let first = query.page(None).await?;
/// assert_eq!(first.items.len(), 8); // merged over 4 shards, in score order
/// assert_eq!(first.items[0].score, 10);
/// let second = query.page(first.next.as_deref()).await?;
/// assert_eq!(second.items[0].score, 18);
///
/// // a misuse is a typed error naming the field
/// let wrong = Player::query(&store)?
///     .index(PlayerIndex::ByTeam).hash(team.ge("r"));
/// let error = wrong.page(None).await.err().ok_or("accepted")?;
/// assert!(error.to_string().contains("`team`"));
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct TypedMultiQuery<'a, S, O> {
    core: Core<'a, S>,
    paging: Paging,
    output: PhantomData<fn() -> O>,
}

impl<'a, S: Store, O: QueryOutput> TypedMultiQuery<'a, S, O> {
    /// A query of `members`' multi-attribute index `index` (from
    /// [`QueryStart::index`](super::QueryStart::index)); an index that is not a multi-attribute
    /// index of every member, with one key, fails every page.
    pub(super) fn open(
        store: &'a S,
        members: Vec<EntitySchema<'static>>,
        index: &'static str,
    ) -> Self {
        Self {
            core: Core::new(store, members, index),
            paging: Paging::default(),
            output: PhantomData,
        }
    }

    /// The value of a partition attribute: an equality on a field in the index's partition
    /// key (`Player::FIELDS.team_id.eq("t1")`), of the entity queried or, for a collection, of
    /// any member (a field of another entity does not compile). Give every partition attribute
    /// (not the shard attribute of a sharded index: the query fans out over it) once, in any
    /// order.
    #[must_use]
    pub fn hash<M: CollectionMember<O>>(mut self, condition: Condition<M>) -> Self {
        self.core
            .conditions
            .add(Part::Hash, &M::model().token, condition);
        self
    }

    /// A condition on a sort attribute, a field in the index's sort key (of the entity queried
    /// or of a member of the collection): equality on each leading sort attribute, and at most
    /// one `eq`, `lt`, `le`, `gt`, `ge`, `between` or `begins_with` on the one after them; in
    /// any order.
    #[must_use]
    pub fn range<M: CollectionMember<O>>(mut self, condition: Condition<M>) -> Self {
        self.core
            .conditions
            .add(Part::Range, &M::model().token, condition);
        self
    }

    /// The shards to visit: those of the shard bumps in force from `from` to `to` (ms since the
    /// epoch), for every member. It selects shards, not records (see
    /// [`MultiQuery::shards_between`]). Default: `0..=now`, pinned into the page token.
    #[must_use]
    pub fn shards_between(mut self, from: u64, to: u64) -> Self {
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
    pub async fn page(&self, token: Option<&str>) -> Result<TypedPage<O>> {
        read_items(self.core.page(&self.paging, token).await?, O::read)
    }

    /// Every matching record, page after page (a [`Stream`]: bring
    /// [`StreamExt`](super::StreamExt) into scope to use `next`, `try_collect` and the rest).
    ///
    /// Each page of the stream goes on from what the previous one read, instead of reading it
    /// again from a token (see [`Query::stream`](super::untyped::Query::stream)).
    pub fn stream(&self) -> impl Stream<Item = Result<O>> + '_ {
        use futures::StreamExt as _;
        use futures::future::Either;
        match self.core.build(&self.paging) {
            Ok(query) => Either::Left(query.into_stream().map(|item| item.and_then(O::read))),
            Err(e) => Either::Right(futures::stream::iter([Err(e)])),
        }
    }

    /// The pages of records from the first (`token: None`) or from the one after the page that
    /// returned `token`, each as [`page`](Self::page) gives it, until the last.
    ///
    /// Each page goes on from what the pages before it read (each item is read once) and
    /// carries the token of the page after it: a failed page ends the stream with its error,
    /// and the last page's token resumes it (see
    /// [`Query::pages`](super::untyped::Query::pages)).
    pub fn pages(
        &self,
        token: Option<&str>,
    ) -> impl Stream<Item = Result<TypedPage<O>>> + use<'_, 'a, S, O> {
        use futures::StreamExt as _;
        use futures::future::Either;
        match self.core.build(&self.paging) {
            Ok(query) => Either::Left(
                query
                    .into_pages(token.map(str::to_owned))
                    .map(|page| page.and_then(|page| read_items(page, O::read))),
            ),
            Err(e) => Either::Right(futures::stream::iter([Err(e)])),
        }
    }
}

/// What the typed queries share: the store, the entities, the index and its key, the
/// conditions given.
#[derive(Debug)]
struct Core<'a, S> {
    store: &'a S,
    entities: Vec<EntitySchema<'a>>,
    index: &'static str,
    /// The index's key, or why it cannot be queried as a multi-attribute index.
    multi: std::result::Result<MultiKey, String>,
    conditions: Conditions,
}

impl<'a, S: Store> Core<'a, S> {
    /// Takes any index: one that is not a multi-attribute index of every entity, with the same
    /// key, fails every page.
    fn new(store: &'a S, entities: Vec<EntitySchema<'a>>, index: &'static str) -> Self {
        Self {
            store,
            conditions: Conditions {
                members: entities
                    .iter()
                    .map(|e| e.model().token.to_string())
                    .collect(),
                given: Vec::new(),
                problems: Vec::new(),
            },
            multi: shared_key(&entities, index),
            entities,
            index,
        }
    }

    /// The untyped query of the conditions, in key order, with the paging settings.
    fn build(&self, paging: &Paging) -> Result<MultiQuery<'a, S>> {
        let multi = self.multi.as_ref().map_err(|reason| Error::InvalidQuery {
            entity: tokens(&self.entities),
            reason: reason.clone(),
        })?;
        let resolved = self
            .conditions
            .resolve(multi, self.index)
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
            query = query.shards_between(from, to);
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

/// The multi-attribute key every entity declares `index` with, or why there is none.
fn shared_key(entities: &[EntitySchema<'_>], index: &str) -> std::result::Result<MultiKey, String> {
    let mut multi: Option<&MultiKey> = None;
    for entity in entities {
        let token = &*entity.model().token;
        let declared = entity.model().index(index).ok_or_else(|| {
            format!(
                "entity `{token}` declares no index `{index}`; every member of a collection declares the index it is queried by"
            )
        })?;
        let theirs = declared.multi.as_ref().ok_or_else(|| {
            format!(
                "index `{index}` of entity `{token}` has a classic key, not a multi-attribute one; its token is a `TypedIndex<_, Classic>`"
            )
        })?;
        match multi {
            Some(first) if first != theirs => {
                return Err(format!(
                    "the members declare index `{index}` with different keys (entity `{token}`: partition {:?}, sort {:?}); a collection shares one index",
                    theirs.hash_names().collect::<Vec<_>>(),
                    theirs.range_names().collect::<Vec<_>>(),
                ));
            }
            _ => multi = Some(theirs),
        }
    }
    multi
        .cloned()
        .ok_or_else(|| "a collection needs at least one member entity".into())
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
    /// Takes a condition of a field of entity `entity`.
    fn add<M>(&mut self, part: Part, entity: &str, condition: Condition<M>) {
        if !self.members.iter().any(|m| m == entity) {
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
