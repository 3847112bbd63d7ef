// `bumps = [...]`: not a list, an entry that is not `bump(…)`, a bump missing an option, and
// the range rules inside the list.
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(A, B, C))]
struct Things;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Things, unique = id, timestamp = created)]
#[shard_bumps(bumps = bump(timestamp = 1, char_bits = 2, chars = 1))]
struct A {
    #[transcode("string")]
    id: String,
    #[transcode("timestamp")]
    created: u64,
}

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Things, unique = id, timestamp = created)]
#[shard_bumps(bumps = [bump(timestamp = 1, char_bits = 2, chars = 1), shard(timestamp = 2), 7])]
struct B {
    #[transcode("string")]
    id: String,
    #[transcode("timestamp")]
    created: u64,
}

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Things, unique = id, timestamp = created)]
#[shard_bumps(bumps = [bump(timestamp = 1, char_bits = 2), bump(timestamp = 2, char_bits = 9, chars = 2)])]
struct C {
    #[transcode("string")]
    id: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {}
