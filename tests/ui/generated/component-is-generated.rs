use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity)]
#[entity(table = Users, unique = user_id, timestamp = created)]
#[generated(name = user_key, components = [user_id], sharded)]
#[generated(name = user_first_name_key, components = [user_key, first_name])]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    first_name: String,
}

fn main() {}
