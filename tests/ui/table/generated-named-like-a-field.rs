use entity_manager::{Entity, Table};
use serde::{Deserialize, Serialize};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[entity(table = Users, unique = user_id, timestamp = created)]
#[generated(name = first_name, components = [user_id])]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    first_name: String,
}

fn main() {}
