use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User, Admin))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = user_id, timestamp = created)]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
}

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, token = "user", unique = user_id, timestamp = created)]
struct Admin {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {}

// rule: entity-tokens-unique
