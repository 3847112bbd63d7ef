use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(hash_key = "", entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = user_id, timestamp = created)]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {}

// rule: table-keys-not-empty
