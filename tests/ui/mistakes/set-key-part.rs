// An update that sets the unique property: the compiler says to move the record.
use entity_manager::field::Changes;
use entity_manager::{Entity, Table};

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
    name: String,
}

fn main() {
    let _ = Changes::<User>::new().set(User::FIELDS.name, "ann".to_string());
    let _ = Changes::<User>::new().set(User::FIELDS.id, "u2".to_string());
}
