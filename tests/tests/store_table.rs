//! Table definitions from entities: attribute types from transcodes, key schema, GSIs with
//! projections, billing; as `CloudFormation` JSON (checked structurally) and as a table created
//! on `DynamoDB` Local (the seed's User service table, all eleven GSIs).

mod store_support;

use std::borrow::Cow;
use std::collections::BTreeMap;

use entity_manager::store::{
    Billing, GlobalIndex, KeyType, Projection, TableDefinition, TableDefinitionError,
};
use entity_manager::transcode;
use entity_manager::{EntityModel, Index, Property, Schema, ShardSpace, TableModel};
use serde_json::{Value, json};
use store_support::TestResult;

/// The User service of the seed documents, loaded from its TypeScript config.
fn user_service() -> Result<Schema, Box<dyn std::error::Error>> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/compat/product-user-service.json"
    );
    let file: Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    Ok(Schema::from_ts_config(
        &file["config"],
        ShardSpace::Product,
    )?)
}

/// The expected GSIs of the User service: name → (hash key, range key, projection).
fn expected_gsis() -> BTreeMap<&'static str, (&'static str, &'static str, Value)> {
    let all = json!({ "ProjectionType": "ALL" });
    BTreeMap::from([
        ("created", ("hashKey", "created", all.clone())),
        ("firstName", ("hashKey", "firstNameRangeKey", all.clone())),
        ("lastName", ("hashKey", "lastNameRangeKey", all.clone())),
        ("phone", ("hashKey", "phone", all.clone())),
        ("updated", ("hashKey", "updated", all.clone())),
        (
            "userBeneficiaryCreated",
            (
                "userBeneficiaryHashKey",
                "created",
                json!({ "ProjectionType": "INCLUDE", "NonKeyAttributes": ["someProperty", "someOtherProperty"] }),
            ),
        ),
        (
            "userBeneficiaryFirstName",
            (
                "userBeneficiaryHashKey",
                "firstNameRangeKey",
                json!({ "ProjectionType": "KEYS_ONLY" }),
            ),
        ),
        (
            "userBeneficiaryLastName",
            ("userBeneficiaryHashKey", "lastNameRangeKey", all.clone()),
        ),
        (
            "userBeneficiaryPhone",
            ("userBeneficiaryHashKey", "phone", all.clone()),
        ),
        (
            "userBeneficiaryUpdated",
            ("userBeneficiaryHashKey", "updated", all.clone()),
        ),
        ("userCreated", ("userHashKey", "created", all)),
    ])
}

/// Attribute name → type, as the User service needs them.
fn expected_attributes() -> BTreeMap<&'static str, &'static str> {
    BTreeMap::from([
        ("hashKey", "S"),
        ("rangeKey", "S"),
        ("created", "N"),
        ("firstNameRangeKey", "S"),
        ("lastNameRangeKey", "S"),
        ("phone", "S"),
        ("updated", "N"),
        ("userBeneficiaryHashKey", "S"),
        ("userHashKey", "S"),
    ])
}

#[test]
fn user_service_cloudformation_is_structurally_right() -> TestResult {
    let table = TableDefinition::from_schema(&user_service()?)?;
    let resource = table.cloudformation(Some("UserService"))?;
    assert_eq!(resource["Type"], "AWS::DynamoDB::Table");
    let props = resource["Properties"]
        .as_object()
        .ok_or("Properties is not an object")?;
    let mut keys: Vec<&str> = props.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "AttributeDefinitions",
            "BillingMode",
            "GlobalSecondaryIndexes",
            "KeySchema",
            "TableName"
        ]
    );
    assert_eq!(props["TableName"], "UserService");
    assert_eq!(props["BillingMode"], "PAY_PER_REQUEST");
    assert_eq!(
        props["KeySchema"],
        json!([{ "AttributeName": "hashKey", "KeyType": "HASH" }, { "AttributeName": "rangeKey", "KeyType": "RANGE" }])
    );
    // Attribute definitions: the table keys first, every key attribute once, typed by transcode.
    let defs = props["AttributeDefinitions"]
        .as_array()
        .ok_or("AttributeDefinitions")?;
    assert_eq!(
        defs[0],
        json!({ "AttributeName": "hashKey", "AttributeType": "S" })
    );
    assert_eq!(
        defs[1],
        json!({ "AttributeName": "rangeKey", "AttributeType": "S" })
    );
    let attributes: BTreeMap<&str, &str> = defs
        .iter()
        .map(|d| {
            (
                d["AttributeName"].as_str().unwrap_or("?"),
                d["AttributeType"].as_str().unwrap_or("?"),
            )
        })
        .collect();
    assert_eq!(
        defs.len(),
        attributes.len(),
        "an attribute is defined twice"
    );
    assert_eq!(attributes, expected_attributes());
    // Eleven GSIs, each keyed and projected as configured.
    let gsis = props["GlobalSecondaryIndexes"]
        .as_array()
        .ok_or("GlobalSecondaryIndexes")?;
    assert_eq!(gsis.len(), 11);
    let expected = expected_gsis();
    for gsi in gsis {
        let name = gsi["IndexName"].as_str().ok_or("IndexName")?;
        let (hash, range, projection) =
            expected.get(name).ok_or(format!("unexpected GSI {name}"))?;
        assert_eq!(
            gsi["KeySchema"],
            json!([{ "AttributeName": hash, "KeyType": "HASH" }, { "AttributeName": range, "KeyType": "RANGE" }]),
            "{name}"
        );
        assert_eq!(&gsi["Projection"], projection, "{name}");
        assert!(
            gsi.get("ProvisionedThroughput").is_none(),
            "{name}: on-demand GSIs have no throughput"
        );
        // Every key attribute of the GSI is defined.
        assert!(
            attributes.contains_key(hash) && attributes.contains_key(range),
            "{name}"
        );
    }
    Ok(())
}

#[test]
fn provisioned_billing_sets_throughput_on_the_table_and_every_index() -> TestResult {
    let table = TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::N))
        .with_index(
            GlobalIndex::new("byX", ("x", KeyType::S), ("sk", KeyType::N))
                .projection(Projection::KeysOnly),
        )
        .with_billing(Billing::Provisioned { read: 5, write: 3 });
    let r = table.cloudformation(None)?;
    let throughput = json!({ "ReadCapacityUnits": 5, "WriteCapacityUnits": 3 });
    assert_eq!(r["Properties"]["BillingMode"], "PROVISIONED");
    assert_eq!(r["Properties"]["ProvisionedThroughput"], throughput);
    assert_eq!(
        r["Properties"]["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"],
        throughput
    );
    assert!(r["Properties"].get("TableName").is_none());
    assert_eq!(
        r["Properties"]["AttributeDefinitions"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );
    Ok(())
}

const PROPERTIES: &[Property] = &[
    Property::new("id", transcode::STRING),
    Property::new("created", transcode::TIMESTAMP),
    Property::new("score", transcode::INT),
    Property::new("flag", transcode::BOOLEAN),
];

/// Like `PROPERTIES`, but `created` is a string.
const OTHER: &[Property] = &[
    Property::new("id", transcode::STRING),
    Property::new("created", transcode::STRING),
];

fn entity(
    token: &'static str,
    properties: &'static [Property],
    indexes: Vec<Index>,
) -> EntityModel {
    let mut entity = EntityModel::new(token, "id", "created").with_properties(properties);
    entity.indexes = Cow::Owned(indexes);
    entity
}

fn index(
    name: &'static str,
    hash: &'static str,
    range: &'static str,
    projection: Projection,
) -> Index {
    Index::new(name, Cow::Borrowed(hash), Cow::Borrowed(range), projection)
}

#[test]
fn key_types_come_from_transcodes_and_shared_indexes_appear_once() -> TestResult {
    let table = TableModel::DEFAULT;
    let a = entity(
        "a",
        PROPERTIES,
        vec![
            index("byScore", "hashKey", "score", Projection::All),
            index("created", "hashKey", "created", Projection::All),
        ],
    );
    let b = entity(
        "b",
        PROPERTIES,
        vec![index("created", "hashKey", "created", Projection::All)],
    );
    let def = TableDefinition::from_entities(&table, &[a, b])?;
    assert_eq!(def.indexes.len(), 2);
    let types: Vec<(String, KeyType)> = def
        .attribute_definitions()?
        .into_iter()
        .map(|k| (k.name, k.key_type))
        .collect();
    assert_eq!(
        types,
        [
            ("hashKey".into(), KeyType::S),
            ("rangeKey".into(), KeyType::S),
            ("score".into(), KeyType::N),
            ("created".into(), KeyType::N)
        ]
    );
    assert_eq!(def.billing, Billing::PayPerRequest);
    Ok(())
}

#[test]
fn definitions_that_dynamodb_would_reject_are_typed_errors() {
    let table = TableModel::DEFAULT;
    // A boolean cannot be a key.
    let e = TableDefinition::from_entities(
        &table,
        &[entity(
            "a",
            PROPERTIES,
            vec![index("byFlag", "hashKey", "flag", Projection::All)],
        )],
    );
    assert!(
        matches!(e, Err(TableDefinitionError::UnkeyableTranscode { ref attribute, .. }) if attribute == "flag"),
        "{e:?}"
    );
    // An attribute without a transcode has no known type.
    let e = TableDefinition::from_entities(
        &table,
        &[entity(
            "a",
            PROPERTIES,
            vec![index("byNothing", "hashKey", "nothing", Projection::All)],
        )],
    );
    assert!(
        matches!(e, Err(TableDefinitionError::UnknownKeyAttribute { ref attribute, .. }) if attribute == "nothing"),
        "{e:?}"
    );
    // One index name, two definitions.
    let e = TableDefinition::from_entities(
        &table,
        &[
            entity(
                "a",
                PROPERTIES,
                vec![index("i", "hashKey", "created", Projection::All)],
            ),
            entity(
                "b",
                PROPERTIES,
                vec![index("i", "hashKey", "created", Projection::KeysOnly)],
            ),
        ],
    );
    assert!(
        matches!(e, Err(TableDefinitionError::ConflictingIndex { ref index, .. }) if index == "i"),
        "{e:?}"
    );
    // One attribute, two types.
    let e = TableDefinition::from_entities(
        &table,
        &[
            entity(
                "a",
                PROPERTIES,
                vec![index("i", "hashKey", "created", Projection::All)],
            ),
            entity("b", OTHER, vec![]),
        ],
    );
    assert!(
        matches!(e, Err(TableDefinitionError::ConflictingKeyType { ref attribute, .. }) if attribute == "created"),
        "{e:?}"
    );
    let manual = TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::S)).with_index(
        GlobalIndex::new("i", ("pk", KeyType::N), ("sk", KeyType::S)),
    );
    assert!(matches!(
        manual.cloudformation(None),
        Err(TableDefinitionError::ConflictingKeyType { .. })
    ));
    let twice = TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::S))
        .with_index(GlobalIndex::new("i", ("a", KeyType::S), ("sk", KeyType::S)))
        .with_index(GlobalIndex::new("i", ("b", KeyType::S), ("sk", KeyType::S)));
    assert!(matches!(
        twice.attribute_definitions(),
        Err(TableDefinitionError::DuplicateIndex { .. })
    ));
}

#[tokio::test]
async fn user_service_table_is_created_on_dynamodb_local_with_all_eleven_gsis() -> TestResult {
    let definition = TableDefinition::from_schema(&user_service()?)?;
    let Some(store) = store_support::dynamo_store("user_service", definition).await? else {
        return Ok(());
    };
    let described = store
        .client()
        .describe_table()
        .table_name(store.table_name())
        .send()
        .await?;
    let table = described.table().ok_or("DescribeTable returned no table")?;
    assert_eq!(
        table
            .table_status()
            .map(aws_sdk_dynamodb::types::TableStatus::as_str),
        Some("ACTIVE")
    );
    assert_eq!(
        table
            .billing_mode_summary()
            .and_then(|b| b.billing_mode())
            .map(aws_sdk_dynamodb::types::BillingMode::as_str),
        Some("PAY_PER_REQUEST")
    );
    let attributes: BTreeMap<&str, &str> = table
        .attribute_definitions()
        .iter()
        .map(|a| (a.attribute_name(), a.attribute_type().as_str()))
        .collect();
    assert_eq!(attributes, expected_attributes());
    let expected = expected_gsis();
    assert_eq!(table.global_secondary_indexes().len(), 11);
    for gsi in table.global_secondary_indexes() {
        let name = gsi.index_name().ok_or("a GSI without a name")?;
        let (hash, range, projection) =
            expected.get(name).ok_or(format!("unexpected GSI {name}"))?;
        assert_eq!(
            gsi.index_status()
                .map(aws_sdk_dynamodb::types::IndexStatus::as_str),
            Some("ACTIVE"),
            "{name}"
        );
        let keys: Vec<(&str, &str)> = gsi
            .key_schema()
            .iter()
            .map(|k| (k.attribute_name(), k.key_type().as_str()))
            .collect();
        assert_eq!(keys, [(*hash, "HASH"), (*range, "RANGE")], "{name}");
        let p = gsi.projection().ok_or("a GSI without a projection")?;
        assert_eq!(
            p.projection_type()
                .map(aws_sdk_dynamodb::types::ProjectionType::as_str),
            projection["ProjectionType"].as_str(),
            "{name}"
        );
        let non_key: Vec<&str> = p.non_key_attributes().iter().map(String::as_str).collect();
        let expected_non_key: Vec<&str> = projection["NonKeyAttributes"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert_eq!(non_key, expected_non_key, "{name}");
    }
    // Creating it again is a typed "in use" error.
    let again = store
        .create_table()
        .await
        .err()
        .ok_or("creating an existing table succeeded")?;
    assert!(again.is_resource_in_use(), "{again:?}");
    store.delete_table().await?;
    Ok(())
}

#[tokio::test]
async fn a_missing_table_is_a_typed_error() -> TestResult {
    use entity_manager::store::{DynamoStore, Expect, Store};
    let Some(client) = store_support::dynamo_client() else {
        return Ok(());
    };
    let store = DynamoStore::new(
        client,
        store_support::unique_table("missing"),
        store_support::definition(),
    );
    let e = store
        .put_item(store_support::key("a", "b"), Expect::Any)
        .await
        .err()
        .ok_or("a put into a missing table succeeded")?;
    assert!(e.is_resource_not_found(), "{e:?}");
    Ok(())
}
