// rule: multi-key-arity
// five partition attributes (the table hash key that `sharded` puts first, then four fields)
// and no sort attribute: DynamoDB takes 1 to 4 of each
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(Game))]
struct Games;

#[derive(Entity)]
#[entity(table = Games, unique = game_id, timestamp = created)]
#[index(name = "wide", hash = [a, b, c, d], range = [], sharded)]
struct Game {
    #[transcode("string")]
    game_id: String,
    #[transcode("timestamp")]
    created: u64,
    a: String,
    b: String,
    c: u32,
    d: i64,
}

fn main() {}
