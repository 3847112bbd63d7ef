// One option given twice.
use entity_manager::Table;

#[derive(Table)]
#[table(hash_key = "pk", hash_key = "id")]
struct Users;

fn main() {}
