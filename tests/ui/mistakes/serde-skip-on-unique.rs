// The unique field skipped by serde would never be stored.
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = id, timestamp = created)]
struct User {
    #[transcode("string")]
    #[serde(skip)]
    id: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {}
