// DynamoDB index names have 3 to 255 letters, digits, `_`, `-` or `.`: a space and a name too
// short are both refused, each on its name.
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = id, timestamp = created)]
#[index(name = "by created", range = created)]
#[index(name = "up", range = updated)]
struct User {
    #[transcode("string")]
    id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("timestamp")]
    updated: u64,
}

fn main() {}

// rule: index-names-valid
