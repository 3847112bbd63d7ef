use entity_manager::Table;

#[derive(Table)]
#[table(entities(User))]
struct Users;

// no `#[derive(Entity)]`
struct User {
    user_id: String,
}

fn main() {}
