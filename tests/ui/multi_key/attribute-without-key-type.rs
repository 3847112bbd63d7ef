// a multi-attribute key keeps natural values: a field must be a number or a string
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(Game))]
struct Games;

#[derive(Entity)]
#[entity(table = Games, unique = game_id, timestamp = created)]
#[index(name = "byTeam", hash = [team_id, active], range = [tags])]
struct Game {
    #[transcode("string")]
    game_id: String,
    #[transcode("timestamp")]
    created: u64,
    team_id: String,
    active: bool,
    tags: Vec<String>,
}

fn main() {}
