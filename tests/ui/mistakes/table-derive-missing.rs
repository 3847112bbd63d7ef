// The table type exists but does not derive `Table`.
use entity_manager::Entity;

struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = id, timestamp = created)]
struct User {
    #[transcode("string")]
    id: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {}
