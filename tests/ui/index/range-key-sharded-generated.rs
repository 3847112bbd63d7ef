use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity)]
#[entity(table = Users, unique = user_id, timestamp = created)]
#[generated(name = team_key, components = [team_id], sharded)]
#[index(name = "team", range = team_key)]
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

// rule: index-range-keys
