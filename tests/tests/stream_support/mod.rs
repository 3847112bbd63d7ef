//! The table of the stream tests: two entities with fields of every kind, two shard bumps,
//! sharded and unsharded generated properties; the table's enum; and stream records in the two
//! shapes (the Streams API's `Record`, the Lambda event's `EventRecord`) built from items.

#![allow(dead_code, unreachable_pub)] // each test binary uses part of it

use std::collections::{BTreeMap, BTreeSet};

use entity_manager::store::StreamView;
use entity_manager::stream::{ChangeKind, StreamRecord};
use entity_manager::{AttributeValue, Collection, Entity, Item, Table};
use serde::{Deserialize, Serialize};

#[derive(Table)]
#[table(entities(Account, Order))]
pub struct Shop;

/// A plan tier: a unit enum, stored as a string.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    Free,
    Pro,
}

/// A nested struct, stored as a map.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Address {
    pub city: String,
    pub zip: Option<u32>,
}

/// Every field kind: the transcoded ones (string, timestamp, int, fix6, boolean, bigint20 on an `i64`), an
/// optional generated component, plain numbers, a list, a map, a string set, an enum, a
/// nested struct and an optional string. Two shard bumps, so records sit in two shard spaces.
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Shop, unique = account_id, timestamp = created)]
#[shard_bumps(bumps = [
    bump(timestamp = 0, char_bits = 2, chars = 1),
    bump(timestamp = 1_000_000, char_bits = 3, chars = 2),
])]
#[generated(name = region_hash_key, components = [region], sharded)]
#[generated(name = score_range_key, components = [score, name])]
#[index(name = "byRegion", hash = region_hash_key, range = score_range_key)]
#[allow(clippy::struct_field_names)] // `account_id`: the attribute name
pub struct Account {
    #[transcode("string")]
    pub account_id: String,
    #[transcode("timestamp")]
    pub created: u64,
    #[transcode("string")]
    pub name: String,
    #[transcode("string")]
    pub region: Option<String>,
    #[transcode("int")]
    pub score: i64,
    #[transcode("fix6")]
    pub balance: f64,
    #[transcode("boolean")]
    pub active: bool,
    #[transcode("bigint20")]
    pub big: i64,
    pub logins: u32,
    pub ratio: f64,
    pub history: Vec<String>,
    pub counts: BTreeMap<String, i64>,
    #[serde(with = "serde_dynamo::string_set")]
    pub tags: BTreeSet<String>,
    pub tier: Tier,
    pub address: Address,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The other entity: its unique property is an `int`, so its range key differs between the
/// two key modes (`orderNo#p0000000000000042` / `orderNo#42`).
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Shop, unique = order_no, timestamp = created)]
#[shard_bumps(bump(timestamp = 0, char_bits = 1, chars = 2))]
#[generated(name = account_range_key, components = [account_id, created])]
#[index(name = "byAccount", range = account_range_key)]
#[allow(clippy::struct_field_names)] // `order_no`: the attribute name
pub struct Order {
    #[transcode("int")]
    pub order_no: i64,
    #[transcode("timestamp")]
    pub created: u64,
    #[transcode("string")]
    pub account_id: String,
    pub total: f64,
    pub lines: Vec<String>,
}

/// The table's enum: one `match` over every entity of `Shop`.
#[derive(Collection, Clone, Debug, PartialEq)]
pub enum ShopRecord {
    Account(Account),
    Order(Order),
}

/// An account with plain values.
pub fn account(id: &str, created: u64, score: i64) -> Account {
    Account {
        account_id: id.to_owned(),
        created,
        name: format!("name {id}"),
        region: None,
        score,
        balance: 10.25,
        active: true,
        big: 12_345_678_901,
        logins: 0,
        ratio: 0.5,
        history: vec!["joined".into()],
        counts: BTreeMap::from([("visits".into(), 1)]),
        tags: BTreeSet::from(["new".into()]),
        tier: Tier::Free,
        address: Address {
            city: "Oslo".into(),
            zip: Some(150),
        },
        note: None,
    }
}

/// An order with plain values.
pub fn order(order_no: i64, created: u64, account_id: &str) -> Order {
    Order {
        order_no,
        created,
        account_id: account_id.to_owned(),
        total: 9.5,
        lines: vec![format!("line {order_no}")],
    }
}

/// The attributes a record may lack (optional, and not a key component): removing one of them
/// from an image still gives a valid record.
pub const OPTIONAL_PLAIN: &[&str] = &["note"];

/// The primary key attributes of a keyed item.
pub fn keys_of(item: &Item) -> Item {
    let mut keys = Item::default();
    for k in ["hashKey", "rangeKey"] {
        if let Some(v) = item.get(k) {
            keys.insert(k.to_owned(), v.clone());
        }
    }
    keys
}

/// The record DynamoDB writes for a change from `old` to `new` (keyed items), seen through
/// `view`.
pub fn record(
    kind: ChangeKind,
    old: Option<&Item>,
    new: Option<&Item>,
    view: StreamView,
    seq: u64,
) -> StreamRecord {
    let keys = keys_of(new.or(old).unwrap_or(&Item::default()));
    let mut record = StreamRecord::new(kind, keys).with_sequence_number(format!("{seq:021}"));
    if let Some(old) = old {
        record = record.with_old_image(old.clone());
    }
    if let Some(new) = new {
        record = record.with_new_image(new.clone());
    }
    record.seen_through(view)
}

fn aws_map(
    item: &Item,
) -> std::collections::HashMap<String, aws_sdk_dynamodbstreams::types::AttributeValue> {
    item.clone().into()
}

/// `record` in the Streams API's shape (`GetRecords`), as `aws-sdk-dynamodbstreams` returns it.
pub fn to_sdk(record: &StreamRecord) -> aws_sdk_dynamodbstreams::types::Record {
    use aws_sdk_dynamodbstreams::types::{
        OperationType, Record, StreamRecord as Change, StreamViewType,
    };
    let change = Change::builder()
        .set_keys(Some(aws_map(&record.keys)))
        .set_old_image(record.old_image.as_ref().map(aws_map))
        .set_new_image(record.new_image.as_ref().map(aws_map))
        .set_stream_view_type(record.view.map(|v| StreamViewType::from(v.as_str())))
        .set_sequence_number(record.sequence_number.clone())
        .size_bytes(100)
        .build();
    Record::builder()
        .event_id("e1")
        .event_name(OperationType::from(record.kind.as_str()))
        .event_source("aws:dynamodb")
        .event_version("1.1")
        .aws_region("us-east-1")
        .dynamodb(change)
        .build()
}

/// `record` as the JSON of a Lambda `DynamoDB` event record.
pub fn to_lambda_json(record: &StreamRecord) -> serde_json::Value {
    let mut change = serde_json::json!({
        "ApproximateCreationDateTime": 1_700_000_000.0,
        "Keys": record.keys,
        "SizeBytes": 100,
    });
    if let Some(old) = &record.old_image {
        change["OldImage"] = serde_json::json!(old);
    }
    if let Some(new) = &record.new_image {
        change["NewImage"] = serde_json::json!(new);
    }
    if let Some(view) = record.view {
        change["StreamViewType"] = serde_json::json!(view.as_str());
    }
    if let Some(seq) = &record.sequence_number {
        change["SequenceNumber"] = serde_json::json!(seq);
    }
    serde_json::json!({
        "eventID": "e1",
        "eventName": record.kind.as_str(),
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/Shop/stream/2026-01-01T00:00:00.000",
        "dynamodb": change,
    })
}

/// `record` through the Lambda shape: JSON, deserialized by `aws_lambda_events`.
pub fn to_lambda(
    record: &StreamRecord,
) -> Result<aws_lambda_events::event::dynamodb::EventRecord, serde_json::Error> {
    serde_json::from_value(to_lambda_json(record))
}

/// A string attribute, for messages.
pub fn text(item: &Item, name: &str) -> String {
    match item.get(name) {
        Some(AttributeValue::S(s) | AttributeValue::N(s)) => s.clone(),
        other => format!("{other:?}"),
    }
}
