// The entities of a table named by strings.
use entity_manager::Table;

#[derive(Table)]
#[table(entities("User", "Email"))]
struct Users;

fn main() {}
