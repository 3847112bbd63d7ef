// `unique` names the stored (camelCase) name instead of the field.
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = userId, timestamp = created)]
#[serde(rename_all = "camelCase")]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
}

fn main() {}
