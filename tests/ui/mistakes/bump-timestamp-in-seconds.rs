// A shard-bump timestamp in seconds (2024-09-21), where milliseconds are meant: 1970-01-20.
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = id, timestamp = created)]
#[shard_bumps(bumps = [bump(timestamp = 1_726_880_933, char_bits = 2, chars = 1)])]
struct User {
    #[transcode("string")]
    id: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {
    // no knock-on error: the model and the typed fields are still there
    let _ = User::FIELDS.id;
}
