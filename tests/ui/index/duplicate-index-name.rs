use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity)]
#[entity(table = Users, unique = user_id, timestamp = created)]
#[index(name = "lastName", range = last_name)]
#[index(name = "lastName", range = created)]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    team_id: String,
    #[transcode("string")]
    last_name: String,
    phone: String,
}

fn main() {}

// rule: index-names-unique
