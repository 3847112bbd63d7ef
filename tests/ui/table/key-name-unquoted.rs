// A key attribute name written as an identifier.
use entity_manager::Table;

#[derive(Table)]
#[table(hash_key = pk, range_key = sk)]
struct Users;

fn main() {}
