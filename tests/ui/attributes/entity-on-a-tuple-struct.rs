// `#[derive(Entity)]` on a tuple struct: an entity's fields are its named attributes.
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = 0, timestamp = 1)]
struct User(#[transcode("string")] String, #[transcode("timestamp")] u64);

fn main() {}
