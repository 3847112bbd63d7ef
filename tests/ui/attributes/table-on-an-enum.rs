// `#[derive(Table)]` on an enum: a table is a struct, like `struct Users;`.
use entity_manager::Table;

#[derive(Table)]
#[table(entities())]
enum Users {
    Active,
    Archived,
}

fn main() {}
