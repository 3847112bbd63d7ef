// An entity whose serde derives were forgotten but whose `#[serde(...)]` attributes were kept:
// one error, the derive's own, at the struct's name with the fix (it was the compiler's
// "cannot find attribute `serde`" alone, and nothing about the derives).
use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, Clone, Debug)]
#[serde(rename_all = "camelCase")]
#[entity(table = Users, unique = user_id, timestamp = created)]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    phone: Option<String>,
}

fn main() {}
