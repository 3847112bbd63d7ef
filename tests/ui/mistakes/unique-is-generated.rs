// `unique` names a generated property: the unique must be a transcoded field.
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = name_key, timestamp = created)]
#[generated(name = name_key, components = [name])]
struct User {
    #[transcode("string")]
    name: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {
    let _ = User::FIELDS.name;
}
