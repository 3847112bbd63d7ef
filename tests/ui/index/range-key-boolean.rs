// DynamoDB cannot key on a boolean: a `boolean` field cannot be an index range key.
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = id, timestamp = created)]
#[index(name = "active", range = active)]
struct User {
    #[transcode("string")]
    id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("boolean")]
    active: bool,
}

fn main() {}

// rule: index-range-key-types
