// A misspelled profile.
use entity_manager::Table;

#[derive(Table)]
#[table(profile = npm614)]
struct Users;

fn main() {}
