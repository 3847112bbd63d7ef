//! A Lambda function on a single table's DynamoDB stream, typed end to end: every record of the
//! event decoded into one enum over the table's entities and handled by one `match`, the records
//! that fail reported back to Lambda as batch item failures (`ReportBatchItemFailures`), so none
//! is dropped.
//!
//! It builds without the Lambda runtime: `handle` is what the function's
//! `lambda_runtime::service_fn` closure calls (`|e: LambdaEvent<Event>| async move {
//! Ok::<_, Error>(handle(e.payload, …)) }`); `main` feeds it an event as Lambda delivers it. Run with `cargo run -p entity-manager-examples --example stream_lambda`.
//!
//! The table needs a stream with both images for `changed_fields` (the definition's
//! `with_stream(StreamView::NewAndOldImages)`; in CloudFormation `StreamViewType:
//! NEW_AND_OLD_IMAGES`), and the event source mapping `FunctionResponseTypes:
//! [ReportBatchItemFailures]`.

use std::collections::BTreeMap;

use entity_manager::stream::aws_lambda_events::event::dynamodb::Event;
use entity_manager::stream::aws_lambda_events::event::streams::{
    DynamoDbBatchItemFailure, DynamoDbEventResponse,
};
use entity_manager::stream::{Change, ChangeKind, StreamRecord};
use entity_manager::{Collection, Entity, EntityExt, Item, Table};
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Table)]
#[table(entities(User, Order))]
struct Shop;

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Shop, unique = user_id, timestamp = created)]
#[shard_bumps(bump(timestamp = 0, char_bits = 2, chars = 1))]
#[generated(name = name_range_key, components = [last_name, first_name])]
#[index(name = "byName", range = name_range_key)]
#[allow(clippy::struct_field_names)] // `user_id`: the attribute name
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    first_name: String,
    #[transcode("string")]
    last_name: String,
    email: String,
}

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Shop, unique = order_id, timestamp = created)]
#[allow(clippy::struct_field_names)] // `order_id`: the attribute name
struct Order {
    #[transcode("string")]
    order_id: String,
    #[transcode("timestamp")]
    created: u64,
    user_id: String,
    total_cents: u64,
}

/// Every entity of the table: one variant each.
#[derive(Collection, Debug)]
enum ShopEntity {
    User(User),
    Order(Order),
}

/// What the function keeps in step: a name search index and each user's order total.
#[derive(Debug, Default)]
struct Projections {
    names: BTreeMap<String, String>,
    totals: BTreeMap<String, u64>,
}

impl Projections {
    fn apply(&mut self, change: Change<ShopEntity>) {
        let renamed =
            change.changed(User::FIELDS.first_name) || change.changed(User::FIELDS.last_name);
        match (change.kind, change.old, change.new) {
            (ChangeKind::Insert, _, Some(ShopEntity::User(u))) => {
                self.names.insert(
                    u.user_id.clone(),
                    format!("{} {}", u.first_name, u.last_name),
                );
            }
            (ChangeKind::Modify, _, Some(ShopEntity::User(u))) if renamed => {
                self.names.insert(
                    u.user_id.clone(),
                    format!("{} {}", u.first_name, u.last_name),
                );
            }
            (ChangeKind::Remove, Some(ShopEntity::User(u)), _) => {
                self.names.remove(&u.user_id);
            }
            (ChangeKind::Insert, _, Some(ShopEntity::Order(o))) => {
                *self.totals.entry(o.user_id).or_default() += o.total_cents;
            }
            (ChangeKind::Remove, Some(ShopEntity::Order(o)), _) => {
                let total = self.totals.entry(o.user_id).or_default();
                *total = total.saturating_sub(o.total_cents);
            }
            // a user's other fields changed, or an order was modified: nothing to keep in step
            _ => {}
        }
    }
}

/// The handler: each record decoded and applied; the sequence numbers of those that fail go
/// back to Lambda, which retries from the first of them.
fn handle(event: Event, projections: &mut Projections) -> DynamoDbEventResponse {
    let mut response = DynamoDbEventResponse::default();
    for record in event.records {
        let sequence_number = record.change.sequence_number.clone();
        match StreamRecord::try_from(record).and_then(|r| Change::<ShopEntity>::decode(&r)) {
            Ok(change) => projections.apply(change),
            Err(error) => {
                // typed, with the entity token and the keys: log it and report the record
                eprintln!("stream record not handled: {error}");
                let mut failure = DynamoDbBatchItemFailure::default();
                failure.item_identifier = sequence_number;
                response.batch_item_failures.push(failure);
            }
        }
    }
    response
}

/// One record of a Lambda event, as Lambda delivers it (`NEW_AND_OLD_IMAGES`).
fn lambda_record(
    name: &str,
    seq: u32,
    old: Option<&Item>,
    new: Option<&Item>,
) -> serde_json::Value {
    let keyed = new.or(old).cloned().unwrap_or_default();
    let keys: Item = ["hashKey", "rangeKey"]
        .into_iter()
        .filter_map(|k| keyed.get(k).map(|v| (k.to_owned(), v.clone())))
        .collect::<std::collections::HashMap<_, _>>()
        .into();
    let mut change = json!({
        "ApproximateCreationDateTime": 1_700_000_000.0,
        "Keys": keys,
        "SequenceNumber": format!("{seq:021}"),
        "SizeBytes": 120,
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    });
    if let Some(old) = old {
        change["OldImage"] = json!(old);
    }
    if let Some(new) = new {
        change["NewImage"] = json!(new);
    }
    json!({
        "eventID": format!("event-{seq}"),
        "eventName": name,
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "eu-west-1",
        "eventSourceARN": "arn:aws:dynamodb:eu-west-1:123456789012:table/Shop/stream/2026-01-01T00:00:00.000",
        "dynamodb": change,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ann = User {
        user_id: "u1".into(),
        created: 1_700_000_000_000,
        first_name: "Ann".into(),
        last_name: "Lee".into(),
        email: "ann@example.com".into(),
    };
    let renamed = User {
        last_name: "Park".into(),
        ..ann.clone()
    };
    let order = Order {
        order_id: "o1".into(),
        created: 1_700_000_000_500,
        user_id: "u1".into(),
        total_cents: 1250,
    };
    let (ann, renamed, order) = (ann.to_item()?, renamed.to_item()?, order.to_item()?);
    let mut foreign = ann.clone();
    foreign.insert(
        "hashKey".into(),
        entity_manager::AttributeValue::S("invoice!0".into()),
    );
    let event: Event = serde_json::from_value(json!({ "Records": [
        lambda_record("INSERT", 1, None, Some(&ann)),
        lambda_record("INSERT", 2, None, Some(&order)),
        lambda_record("MODIFY", 3, Some(&ann), Some(&renamed)),
        lambda_record("INSERT", 4, None, Some(&foreign)),
    ]}))?;

    let mut projections = Projections::default();
    let response = handle(event, &mut projections);
    println!("names: {:?}", projections.names);
    println!("order totals (cents): {:?}", projections.totals);
    let failed: Vec<_> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect();
    println!("batch item failures: {failed:?}");
    assert_eq!(
        projections.names.get("u1").map(String::as_str),
        Some("Ann Park")
    );
    assert_eq!(projections.totals.get("u1"), Some(&1250));
    assert_eq!(failed, [Some(format!("{:021}", 4))]);
    Ok(())
}
