//! Queries of the league's multi-attribute indexes for the oracle tests (`multi_attribute.rs`,
//! `query_live_multi.rs`): a record of either entity, what a paging asks for, which records it
//! selects, and the query itself.

use entity_manager::query::untyped::MultiQuery;
use entity_manager::store::{RangeCondition, Store};
use entity_manager::{AttributeValue, EntityExt as _, EntitySchema, Item};

use super::league::{Coach, Player};
use super::store_support::{n, s, text};

type BoxError = Box<dyn std::error::Error>;

/// One record of either entity, its fields from small sets so that tuples tie.
#[derive(Clone, Debug)]
pub(crate) struct Rec {
    pub(crate) coach: bool,
    pub(crate) id: String,
    pub(crate) created: u64,
    pub(crate) team: u8,
    pub(crate) org: u8,
    pub(crate) score: i64,
    pub(crate) nickname: Option<u8>,
}

impl Rec {
    pub(crate) fn as_player(&self) -> Player {
        Player {
            player_id: self.id.clone(),
            created: self.created,
            team_id: format!("t{}", self.team),
            region: "eu".into(),
            org_id: format!("o{}", self.org),
            score: self.score,
            nickname: self.nickname.map(|n| format!("n{n}")),
        }
    }

    pub(crate) fn as_coach(&self) -> Coach {
        let Player {
            player_id,
            created,
            team_id,
            region,
            org_id,
            score,
            nickname,
        } = self.as_player();
        Coach {
            coach_id: player_id,
            created,
            team_id,
            region,
            org_id,
            score,
            nickname,
        }
    }

    /// The record as an item, keyed.
    pub(crate) fn item(&self) -> Result<Item, BoxError> {
        Ok(if self.coach {
            self.as_coach().to_item()?
        } else {
            self.as_player().to_item()?
        })
    }

    /// The record's table keys: (range key, hash key).
    pub(crate) fn table_keys(&self) -> Result<(String, String), BoxError> {
        let item = self.item()?;
        Ok((text(&item, "rangeKey"), text(&item, "hashKey")))
    }
}

/// A query: by team (unsharded) or by organisation (sharded), of the players or of the
/// collection, with an optional condition on the first sort attribute or an equality prefix
/// then (by organisation) a condition on the second.
#[derive(Clone, Debug)]
pub(crate) struct Ask {
    pub(crate) by_org: bool,
    pub(crate) collection: bool,
    pub(crate) key: u8,
    pub(crate) prefix: Option<i64>,
    /// An operator (see [`condition`]) and a value: on the score, or after a prefix on
    /// `created` (the value times 500).
    pub(crate) cond: Option<(u8, i64)>,
    pub(crate) descending: bool,
    pub(crate) limit: usize,
    pub(crate) page_size: usize,
    pub(crate) throttle: usize,
}

pub(crate) fn condition(op: u8, v: &AttributeValue) -> RangeCondition {
    match op {
        0 => RangeCondition::Eq(v.clone()),
        1 => RangeCondition::Lt(v.clone()),
        2 => RangeCondition::Ge(v.clone()),
        3 => RangeCondition::Le(v.clone()),
        _ => RangeCondition::Gt(v.clone()),
    }
}

/// Whether `x` meets operator `op` against `v`, evaluated apart from the code under test.
pub(crate) fn holds(op: u8, x: i64, v: i64) -> bool {
    match op {
        0 => x == v,
        1 => x < v,
        2 => x >= v,
        3 => x <= v,
        _ => x > v,
    }
}

/// A record's sort tuple in the asked index: (score, created) by organisation, (score,
/// nickname) by team; `None` when it is not in the index (a sparse `nickname`).
pub(crate) fn tuple(rec: &Rec, ask: &Ask) -> Option<(i64, i64)> {
    if ask.by_org {
        Some((rec.score, i64::try_from(rec.created).ok()?))
    } else {
        rec.nickname.map(|n| (rec.score, i64::from(n)))
    }
}

/// Whether the query selects the record.
pub(crate) fn wanted(rec: &Rec, ask: &Ask) -> bool {
    if (rec.coach && !ask.collection) || (if ask.by_org { rec.org } else { rec.team }) != ask.key {
        return false;
    }
    let Some((first, second)) = tuple(rec, ask) else {
        return false;
    };
    match (ask.prefix, ask.cond) {
        (Some(p), cond) => {
            first == p && (!ask.by_org || cond.is_none_or(|(op, v)| holds(op, second, v * 500)))
        }
        (None, Some((op, v))) => holds(op, first, v),
        (None, None) => true,
    }
}

/// The query `ask` describes, over `entities`.
pub(crate) fn query<'a, S: Store>(
    store: &'a S,
    entities: Vec<EntitySchema<'a>>,
    ask: &Ask,
) -> MultiQuery<'a, S> {
    let (index, values) = if ask.by_org {
        ("byOrg", vec![s(&format!("o{}", ask.key))])
    } else {
        ("byTeam", vec![s(&format!("t{}", ask.key)), s("eu")])
    };
    let mut q = MultiQuery::collection(store, entities, index)
        .hash(values)
        .shards_between(0, 3_000)
        .descending(ask.descending)
        .limit(ask.limit)
        .page_size(ask.page_size)
        .throttle(ask.throttle);
    if let Some(p) = ask.prefix {
        q = q.range_prefix([n(p)]);
        // on `created` (by organisation) only: `nickname` is a string
        if ask.by_org
            && let Some((op, v)) = ask.cond
        {
            q = q.range(condition(op, &n(v * 500)));
        }
    } else if let Some((op, v)) = ask.cond {
        q = q.range(condition(op, &n(v)));
    }
    q
}
