use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

// an optional version field: every stored record has a version
#[derive(Entity, serde::Serialize)]
#[entity(table = Users, unique = user_id, timestamp = created, version = revision)]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    revision: Option<u64>,
}

fn main() {}
