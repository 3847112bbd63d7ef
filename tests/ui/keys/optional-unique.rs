// The unique value is written into every key: it cannot be missing.
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = id, timestamp = created)]
struct User {
    #[transcode("string")]
    id: Option<String>,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {}
