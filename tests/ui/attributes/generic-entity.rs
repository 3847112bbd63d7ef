use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities())]
struct Users;

#[derive(Entity)]
#[entity(table = Users, unique = user_id, timestamp = created)]
struct User<T> {
    #[transcode("string")]
    user_id: T,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {}
