use entity_manager::{Entity, Table};

#[derive(Table)]
#[table(entities(Account))]
struct Accounts;

#[derive(Entity)]
#[entity(table = Accounts, unique = account_id, timestamp = created)]
struct Account {
    #[transcode("string")]
    account_id: String,
    #[transcode("timestamp")]
    created: u64,
    // serde_dynamo cannot write 128-bit integers: every `to_item` would fail
    #[transcode("bigint20")]
    balance: i128,
    limits: Option<Vec<u128>>,
}

fn main() {}
