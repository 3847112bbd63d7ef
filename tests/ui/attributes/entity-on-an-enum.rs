use entity_manager::Entity;

#[derive(Entity)]
#[entity(unique = user_id, timestamp = created)]
enum User {
    Active,
    Deleted,
}

fn main() {}
