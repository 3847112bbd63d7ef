use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

// the unique property cannot double as the version field
#[derive(Entity, serde::Serialize)]
#[entity(table = Users, unique = user_id, timestamp = created, version = user_id)]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    revision: u64,
}

fn main() {}
