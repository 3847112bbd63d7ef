// A misspelled raw-identifier field as the unique property.
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = r#typ, timestamp = created)]
struct User {
    #[transcode("string")]
    r#type: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {}
