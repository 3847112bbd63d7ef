// The timestamp is written into keys as 13 digits (as TypeScript writes it): `int` would key
// records as `created#p0001700000000000` and silently break compatibility.
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = id, timestamp = created)]
struct User {
    #[transcode("string")]
    id: String,
    #[transcode("int")]
    created: u64,
}

fn main() {}

// rule: timestamp-property
