use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User, Email))]
struct Users;

// 11 + 10 distinct index names: one more than the 20 GSIs DynamoDB allows per table
#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = user_id, timestamp = created)]
#[index(name = "byU1", range = f1)]
#[index(name = "byU2", range = f2)]
#[index(name = "byU3", range = f3)]
#[index(name = "byU4", range = f4)]
#[index(name = "byU5", range = f5)]
#[index(name = "byU6", range = f6)]
#[index(name = "byU7", range = f7)]
#[index(name = "byU8", range = f8)]
#[index(name = "byU9", range = f9)]
#[index(name = "byU10", range = f10)]
#[index(name = "byU11", range = f11)]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    f1: String,
    #[transcode("string")]
    f2: String,
    #[transcode("string")]
    f3: String,
    #[transcode("string")]
    f4: String,
    #[transcode("string")]
    f5: String,
    #[transcode("string")]
    f6: String,
    #[transcode("string")]
    f7: String,
    #[transcode("string")]
    f8: String,
    #[transcode("string")]
    f9: String,
    #[transcode("string")]
    f10: String,
    #[transcode("string")]
    f11: String,
}

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[entity(table = Users, unique = email, timestamp = created)]
#[index(name = "byE1", range = f1)]
#[index(name = "byE2", range = f2)]
#[index(name = "byE3", range = f3)]
#[index(name = "byE4", range = f4)]
#[index(name = "byE5", range = f5)]
#[index(name = "byE6", range = f6)]
#[index(name = "byE7", range = f7)]
#[index(name = "byE8", range = f8)]
#[index(name = "byE9", range = f9)]
#[index(name = "byE10", range = f10)]
struct Email {
    #[transcode("string")]
    email: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    f1: String,
    #[transcode("string")]
    f2: String,
    #[transcode("string")]
    f3: String,
    #[transcode("string")]
    f4: String,
    #[transcode("string")]
    f5: String,
    #[transcode("string")]
    f6: String,
    #[transcode("string")]
    f7: String,
    #[transcode("string")]
    f8: String,
    #[transcode("string")]
    f9: String,
    #[transcode("string")]
    f10: String,
}

fn main() {}

// rule: index-count
