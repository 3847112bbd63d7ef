use entity_manager::{Entity, Table};
use serde::{Deserialize, Serialize};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[entity(table = Users, unique = user_id, timestamp = created)]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    // camelCase makes this `rangeKey`, the table's sort key attribute
    range_key: String,
}

fn main() {}
