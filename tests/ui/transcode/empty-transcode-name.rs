use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity)]
#[entity(table = Users, unique = user_id, timestamp = created)]
#[generated(name = user_key, components = [user_id])]
struct User {
    // one error: the unique property and the component still count as transcoded
    #[transcode("")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {}
