use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

// three unrelated mistakes, all reported together
#[derive(Entity)]
#[entity(table = Users, unique = user_id, timestamp = created)]
#[generated(name = name_key, components = [frist_name])]
#[shard_bumps(bump(timestamp = 1_700_000_000_000, char_bits = 6, chars = 1))]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("strin")]
    first_name: String,
}

fn main() {}
