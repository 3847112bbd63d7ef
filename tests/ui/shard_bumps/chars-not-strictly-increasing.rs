use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity)]
#[entity(table = Users, unique = user_id, timestamp = created)]
#[shard_bumps(
    bump(timestamp = 1_700_000_000_000, char_bits = 2, chars = 2),
    bump(timestamp = 1_800_000_000_000, char_bits = 3, chars = 2)
)]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {}

// rule: bump-chars-increase
