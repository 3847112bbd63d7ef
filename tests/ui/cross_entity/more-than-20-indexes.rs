use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(User, Email))]
struct Users;

// 11 + 10 distinct index names: one more than the 20 GSIs DynamoDB allows per table
#[derive(Entity)]
#[entity(table = Users, unique = user_id, timestamp = created)]
#[index(name = "u1", range = f1)]
#[index(name = "u2", range = f2)]
#[index(name = "u3", range = f3)]
#[index(name = "u4", range = f4)]
#[index(name = "u5", range = f5)]
#[index(name = "u6", range = f6)]
#[index(name = "u7", range = f7)]
#[index(name = "u8", range = f8)]
#[index(name = "u9", range = f9)]
#[index(name = "u10", range = f10)]
#[index(name = "u11", range = f11)]
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

#[derive(Entity)]
#[entity(table = Users, unique = email, timestamp = created)]
#[index(name = "e1", range = f1)]
#[index(name = "e2", range = f2)]
#[index(name = "e3", range = f3)]
#[index(name = "e4", range = f4)]
#[index(name = "e5", range = f5)]
#[index(name = "e6", range = f6)]
#[index(name = "e7", range = f7)]
#[index(name = "e8", range = f8)]
#[index(name = "e9", range = f9)]
#[index(name = "e10", range = f10)]
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
