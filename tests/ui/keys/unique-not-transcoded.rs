use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity)]
#[entity(table = Users, unique = user_id, timestamp = created)]
struct User {
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {}

// rule: unique-property
