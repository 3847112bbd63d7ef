// A plain field as an index hash key (only sharded generated properties can be).
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = id, timestamp = created)]
#[index(name = "byId", hash = id, range = created)]
struct User {
    #[transcode("string")]
    id: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {}
