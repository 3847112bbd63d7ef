//! The key core on the seed docs' User service: loads the TypeScript Entity Manager config at
//! run time, adds keys to the docs' sample user and email, and shows where a query over a time
//! window must look.
//!
//! Run with `cargo run --example keys`.

use entity_manager::model::ShardSpace;
use entity_manager::{Item, Schema};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The User service of "Evolving a NoSQL Database Schema" (timestamps in ms).
    let config = json!({
        "hashKey": "hashKey",
        "rangeKey": "rangeKey",
        "entities": {
            "email": { "uniqueProperty": "email", "timestampProperty": "created" },
            "user": {
                "uniqueProperty": "userId",
                "timestampProperty": "created",
                "shardBumps": [
                    { "timestamp": 1_726_880_933_000u64, "charBits": 2, "chars": 1 },
                    { "timestamp": 1_735_689_600_000u64, "charBits": 3, "chars": 2 }
                ]
            }
        },
        "generatedProperties": {
            "sharded": {
                "userBeneficiaryHashKey": ["beneficiaryId"],
                "userHashKey": ["userId"]
            },
            "unsharded": {
                "firstNameRangeKey": ["firstNameCanonical", "lastNameCanonical", "created"],
                "lastNameRangeKey": ["lastNameCanonical", "firstNameCanonical", "created"]
            }
        },
        "indexes": {
            "created": { "hashKey": "hashKey", "rangeKey": "created" },
            "firstName": { "hashKey": "hashKey", "rangeKey": "firstNameRangeKey" },
            "lastName": { "hashKey": "hashKey", "rangeKey": "lastNameRangeKey" },
            "phone": { "hashKey": "hashKey", "rangeKey": "phone" },
            "updated": { "hashKey": "hashKey", "rangeKey": "updated" },
            "userBeneficiaryCreated": { "hashKey": "userBeneficiaryHashKey", "rangeKey": "created" },
            "userBeneficiaryFirstName": { "hashKey": "userBeneficiaryHashKey", "rangeKey": "firstNameRangeKey" },
            "userBeneficiaryLastName": { "hashKey": "userBeneficiaryHashKey", "rangeKey": "lastNameRangeKey" },
            "userBeneficiaryPhone": { "hashKey": "userBeneficiaryHashKey", "rangeKey": "phone" },
            "userBeneficiaryUpdated": { "hashKey": "userBeneficiaryHashKey", "rangeKey": "updated" },
            "userCreated": { "hashKey": "userHashKey", "rangeKey": "created" }
        },
        "propertyTranscodes": {
            "beneficiaryId": "string",
            "created": "timestamp",
            "email": "string",
            "firstNameCanonical": "string",
            "lastNameCanonical": "string",
            "phone": "string",
            "updated": "timestamp",
            "userId": "string"
        }
    });
    let schema = Schema::from_ts_config(&config, ShardSpace::Product)?;

    let user: Item = serde_dynamo::to_item(json!({
        "beneficiaryId": "JCcwi4vyqwMJdaBwbjLG3",
        "created": 1_726_880_933_000u64,
        "firstName": "Jason",
        "firstNameCanonical": "jason",
        "lastName": "Williscroft",
        "lastNameCanonical": "williscroft",
        "phone": "17739999999",
        "updated": 1_726_880_933_000u64,
        "userId": "wf5yU_5f63gqauSOLpP5O"
    }))?;
    let email: Item = serde_dynamo::to_item(json!({
        "created": 1_726_880_947_000u64,
        "email": "me@karmanivero.us",
        "userId": "wf5yU_5f63gqauSOLpP5O"
    }))?;

    for (token, item) in [("user", &user), ("email", &email)] {
        let entity = schema.entity(token)?;
        let keyed = entity.add_keys(item)?;
        println!("{token} record with keys:");
        let mut names: Vec<&String> = keyed.keys().collect();
        names.sort();
        for name in names {
            println!("  {name:<24} {}", show(&keyed[name.as_str()]));
        }
        println!();
    }

    let users = schema.entity("user")?;
    let window = (1_726_000_000_000, 1_740_000_000_000);
    let space = users.hash_key_space("hashKey", &Item::default(), window.0, window.1)?;
    println!(
        "a query over users created in {}..={} visits {} shards: {}",
        window.0,
        window.1,
        space.len(),
        space.join(" ")
    );
    let own = users.primary_keys(&serde_dynamo::to_item(
        json!({ "userId": "wf5yU_5f63gqauSOLpP5O" }),
    )?)?;
    println!(
        "without its timestamp, the sample user may sit under {} keys: {}",
        own.len(),
        own.iter()
            .map(|k| format!("{}/{}", k.hash_key, k.range_key))
            .collect::<Vec<_>>()
            .join(" ")
    );
    Ok(())
}

fn show(value: &entity_manager::AttributeValue) -> String {
    match value {
        entity_manager::AttributeValue::S(s) => s.clone(),
        entity_manager::AttributeValue::N(n) => n.clone(),
        other => format!("{other:?}"),
    }
}
