use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User, Email))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = user_id, timestamp = created)]
#[index(name = "recent", range = created)]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
}

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = email, timestamp = created)]
#[index(name = "recent", range = updated)]
struct Email {
    #[transcode("string")]
    email: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("timestamp")]
    updated: u64,
}

fn main() {}

// rule: index-declarations-agree
