use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

// `ts` is not an option (nor close to one), so `timestamp` is missing too: two errors
#[derive(Entity)]
#[entity(table = Users, unique = user_id, ts = created)]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {}
