// A generated property built from the table range key attribute name.
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = id, timestamp = created)]
#[generated(name = key, components = [rangeKey])]
struct User {
    #[transcode("string")]
    id: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {}
