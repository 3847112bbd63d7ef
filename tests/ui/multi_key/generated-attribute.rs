// rule: multi-key-attribute-roles
// a generated property is a string built for classic keys, not a natural value
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(Game))]
struct Games;

#[derive(Entity)]
#[entity(table = Games, unique = game_id, timestamp = created)]
#[generated(name = name_key, components = [name])]
#[index(name = "byTeam", hash = [team_id], range = [name_key])]
struct Game {
    #[transcode("string")]
    game_id: String,
    #[transcode("timestamp")]
    created: u64,
    team_id: String,
    #[transcode("string")]
    name: String,
}

fn main() {}
