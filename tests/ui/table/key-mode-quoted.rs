// The key mode written as a string.
use entity_manager::Table;

#[derive(Table)]
#[table(key_mode = "typescript")]
struct Users;

fn main() {}
