// `#[shard_bumps(…)]` written on the timestamp field.
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = id, timestamp = created)]
struct User {
    #[transcode("string")]
    id: String,
    #[transcode("timestamp")]
    #[shard_bumps(bumps = [bump(timestamp = 1, char_bits = 2, chars = 1)])]
    created: u64,
}

fn main() {}
