use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = user_id, timestamp = created)]
#[shard_bump(bump(timestamp = 1_700_000_000_000, char_bits = 2, chars = 1))]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {}
