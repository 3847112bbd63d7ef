// A field serde serializes and deserializes under two names.
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
    created: u64,
    #[transcode("string")]
    #[serde(rename(serialize = "fullName", deserialize = "name"))]
    name: String,
}

fn main() {}
