use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(
    generated_key_delimiter = "||",
    generated_value_delimiter = "|",
    entities(User)
)]
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

// rule: delimiters-disjoint
