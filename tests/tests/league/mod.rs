//! The league of the multi-attribute tests (`multi_attribute.rs`, `multi_typed.rs`): players
//! and coaches sharing two multi-attribute indexes (an item collection), and a classic index.

use entity_manager::store::TableDefinition;
use entity_manager::{Entity, Table};
use serde::{Deserialize, Serialize};

#[derive(Table)]
#[table(entities(Player, Coach))]
pub(crate) struct League;

/// A sharded player: by team and region (unsharded multi-attribute key), by organisation
/// (sharded: the table hash key leads the partition attributes), and by creation (a classic
/// key).
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = League, unique = player_id, timestamp = created)]
#[shard_bumps(bumps = [bump(timestamp = 0, char_bits = 2, chars = 1)])]
#[index(name = "byTeam", hash = [team_id, region], range = [score, nickname])]
#[index(name = "byOrg", hash = [org_id], range = [score, created], sharded)]
#[index(name = "byCreated", range = created)]
pub(crate) struct Player {
    #[transcode("string")]
    pub(crate) player_id: String,
    #[transcode("timestamp")]
    pub(crate) created: u64,
    pub(crate) team_id: String,
    pub(crate) region: String,
    pub(crate) org_id: String,
    pub(crate) score: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) nickname: Option<String>,
}

/// A coach shares both multi-attribute indexes with the players (the same names and key
/// attributes): a team's players and coaches form an item collection.
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = League, unique = coach_id, timestamp = created)]
#[shard_bumps(bumps = [bump(timestamp = 0, char_bits = 1, chars = 1)])]
#[index(name = "byTeam", hash = [team_id, region], range = [score, nickname])]
#[index(name = "byOrg", hash = [org_id], range = [score, created], sharded)]
pub(crate) struct Coach {
    #[transcode("string")]
    pub(crate) coach_id: String,
    #[transcode("timestamp")]
    pub(crate) created: u64,
    pub(crate) team_id: String,
    pub(crate) region: String,
    pub(crate) org_id: String,
    pub(crate) score: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) nickname: Option<String>,
}

/// A team's players and coaches, as one typed enum.
#[derive(entity_manager::Collection, Debug, Clone, PartialEq)]
pub(crate) enum Roster {
    Player(Player),
    Coach(Coach),
}

pub(crate) fn league() -> Result<TableDefinition, Box<dyn std::error::Error>> {
    Ok(TableDefinition::from_schema(League::schema()?)?)
}
