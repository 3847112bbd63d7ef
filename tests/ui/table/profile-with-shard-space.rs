// `profile` pins the shard space and the key mode: naming them too is a contradiction.
#[derive(entity_manager::Table)]
#[table(profile = upstream8, shard_space = product, key_mode = transcoded)]
struct Orders;

#[derive(entity_manager::Table)]
#[table(profile = npm614, key_mode = typscript)]
struct Typos;

fn main() {}
