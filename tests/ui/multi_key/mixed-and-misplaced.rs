// every mistake of a multi-attribute index at once: a side written as one name, an unknown
// field (with a suggestion), and `sharded` on a classic index
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(Game))]
struct Games;

#[derive(Entity)]
#[entity(table = Games, unique = game_id, timestamp = created)]
#[index(name = "byTeam", hash = [team_id, regoin], range = score)]
#[index(name = "byCreated", range = created, sharded)]
struct Game {
    #[transcode("string")]
    game_id: String,
    #[transcode("timestamp")]
    created: u64,
    team_id: String,
    region: String,
    score: i32,
}

fn main() {}
