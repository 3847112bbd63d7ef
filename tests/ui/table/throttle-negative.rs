// A negative throttle.
use entity_manager::Table;

#[derive(Table)]
#[table(throttle = -1)]
struct Users;

fn main() {}
