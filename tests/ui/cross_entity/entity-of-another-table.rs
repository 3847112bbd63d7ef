use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Table)]
#[table(entities(Email))]
struct Emails;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = user_id, timestamp = created)]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
}

// declared in `Emails`, but names `Users` as its table
#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = email, timestamp = created)]
struct Email {
    #[transcode("string")]
    email: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {}
