use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User, Email))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = user_id, timestamp = created)]
#[index(name = "recent", range = created, keys_only)]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
}

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = email, timestamp = created)]
#[index(name = "recent", range = created)]
struct Email {
    #[transcode("string")]
    email: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {}
