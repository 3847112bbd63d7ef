// The options of a bump written straight into `#[shard_bumps(…)]`, without `bump(…)` around them.
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = id, timestamp = created)]
#[shard_bumps(timestamp = 1_700_000_000_000, char_bits = 2, chars = 1)]
struct User {
    #[transcode("string")]
    id: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {}
