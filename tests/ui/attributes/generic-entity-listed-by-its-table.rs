// A generic entity that its table lists, as a new user would write it: the derive's error, at
// the parameters, names the entity and says to declare it without them; it also says that the
// table's request for generic arguments comes from this mistake. That second error is rustc's
// E0107 at `entities(User)`, and no derive can prevent it: the table names each entity in a type
// (`<User as Entity>::MODEL`), which needs `User`'s type arguments before any impl is looked up,
// and nothing emitted beside the struct can give a bare `User` a meaning there.
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[entity(table = Users, unique = user_id, timestamp = created)]
struct User<T> {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    name: T,
}

fn main() {
    let _ = Users::entities();
}
