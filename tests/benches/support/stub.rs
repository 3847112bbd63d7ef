//! What the loopback-stub benches (`query_stub.rs`, `ops_stub.rs`) share: items in `DynamoDB`'s
//! JSON wire form (the stubs' recorded answers), an SDK client at a stub, and the median of a
//! round's figures. Included by each bench with `#[path]`.

use entity_manager::{AttributeValue, Item};
use serde_json::{Map, Value, json};

/// An attribute value in `DynamoDB`'s JSON wire form (the strings and numbers the benches'
/// records hold).
pub(crate) fn wire_json(value: &AttributeValue) -> Result<Value, String> {
    Ok(match value {
        AttributeValue::S(s) => json!({ "S": s }),
        AttributeValue::N(n) => json!({ "N": n }),
        other => return Err(format!("no wire form written for {other:?}")),
    })
}

/// An item in `DynamoDB`'s JSON wire form.
pub(crate) fn item_json(item: &Item) -> Result<Value, String> {
    let mut out = Map::new();
    for (name, value) in item.iter() {
        out.insert(name.clone(), wire_json(value)?);
    }
    Ok(Value::Object(out))
}

/// An SDK client at the stub's endpoint (explicit region, dummy credentials).
pub(crate) fn client(endpoint: &str) -> aws_sdk_dynamodb::Client {
    use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("local", "local", None, None, "static"))
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

/// The median of a round's figures (0 for none).
pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}
