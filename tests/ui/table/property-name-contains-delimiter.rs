use entity_manager::{Entity, Table};
use serde::{Deserialize, Serialize};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, Serialize, Deserialize)]
#[entity(table = Users, unique = user_id, timestamp = created)]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    #[serde(rename = "phone#home")]
    phone: String,
}

fn main() {}

// rule: names-free-of-delimiters
