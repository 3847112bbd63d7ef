// A transcode path naming a module instead of a type.
use entity_manager::{Entity, Table};

mod upper {}

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = id, timestamp = created)]
struct User {
    #[transcode("string")]
    id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode(upper)]
    name: String,
}

fn main() {}
