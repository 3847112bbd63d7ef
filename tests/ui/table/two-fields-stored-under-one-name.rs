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
    #[transcode("string")]
    #[serde(rename = "userId")]
    legacy_id: String,
}

fn main() {}

// rule: attribute-names-distinct
