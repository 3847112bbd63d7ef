use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

// a misspelt version field: the error suggests the field
#[derive(Entity, serde::Serialize)]
#[entity(table = Users, unique = user_id, timestamp = created, version = revison)]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    revision: u64,
}

fn main() {}
