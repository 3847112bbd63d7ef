// rule: multi-key-attributes-unique
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(Game))]
struct Games;

#[derive(Entity)]
#[entity(table = Games, unique = game_id, timestamp = created)]
#[index(name = "byTeam", hash = [team_id], range = [score, team_id])]
struct Game {
    #[transcode("string")]
    game_id: String,
    #[transcode("timestamp")]
    created: u64,
    team_id: String,
    score: i32,
}

fn main() {}
