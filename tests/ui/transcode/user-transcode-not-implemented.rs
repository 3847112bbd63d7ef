use entity_manager::{Entity, Table};

/// Meant as a transcode, but it implements nothing.
struct Upper;

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = user_id, timestamp = created)]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode(Upper)]
    nickname: String,
}

fn main() {}
