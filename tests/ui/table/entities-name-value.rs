// `entities = [User]` instead of `entities(User)`.
use entity_manager::Table;

#[derive(Table)]
#[table(entities = [User])]
struct Users;

fn main() {}
