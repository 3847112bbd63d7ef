// A generated property named by a string: the suggested fix must not trip non_snake_case.
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = id, timestamp = created)]
#[generated(name = "nameKey", components = [id])]
struct User {
    #[transcode("string")]
    id: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {}
