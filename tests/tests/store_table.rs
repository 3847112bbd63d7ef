//! Table definitions from entities: attribute types from transcodes, key schema, GSIs with
//! projections, billing; the operational settings (LSIs, TTL, Streams, point-in-time recovery,
//! deletion protection, tags, capacities) and their validation; as `CloudFormation` JSON
//! (checked structurally, and against the property names of the resource schema) and as tables
//! created on `DynamoDB` Local (the seed's User service table, all eleven GSIs; a table with
//! every setting), read back and drift-checked, also after being altered behind the
//! definition's back.

mod store_support;

use std::borrow::Cow;
use std::collections::BTreeMap;

use entity_manager::Schema;
use entity_manager::model::Projection;
use entity_manager::model::{EntityModel, Index, Property, ShardSpace, TableModel};
use entity_manager::store::{
    Billing, Capacity, Drift, DynamoStore, GlobalIndex, IndexKind, KeyType, LocalIndex,
    MemoryStore, Setting, StreamView, TableDefinition, TableDefinitionError,
};
use entity_manager::transcode;
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
        GlobalIndex::new("idx", ("pk", KeyType::N), ("sk", KeyType::S)),
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

/// `DynamoStore::from_sdk_config` takes what `aws_config::load_defaults` returns: the shared
/// configuration's endpoint, region, credentials and retry settings reach the client (a put and
/// a get on `DynamoDB` Local through it), the default timeouts fill what it leaves unset, and a
/// configuration with nothing in it still builds a store (no panic).
#[tokio::test]
async fn a_store_from_the_shared_aws_configuration_reaches_the_table() -> TestResult {
    use entity_manager::store::aws_sdk_dynamodb::config::{
        BehaviorVersion, Credentials, Region, SharedCredentialsProvider, retry::RetryConfig,
    };
    use entity_manager::store::{DynamoStore, Expect, SdkConfig, Store};

    let bare = DynamoStore::from_sdk_config(
        &SdkConfig::builder().build(),
        "Users",
        store_support::definition(),
    );
    let timeouts = bare.client().config().timeout_config().cloned();
    assert_eq!(
        timeouts.and_then(|t| t.operation_timeout()),
        Some(DynamoStore::DEFAULT_OPERATION_TIMEOUT)
    );
    let Ok(endpoint) = std::env::var("DYNAMODB_ENDPOINT") else {
        return store_support::dynamo_client().map_or(Ok(()), |_| Err("unreachable".into()));
    };
    let shared = SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("eu-west-3"))
        .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
            "shared", "shared", None, None, "static",
        )))
        .retry_config(RetryConfig::standard().with_max_attempts(7))
        .build();
    let store = DynamoStore::from_sdk_config(
        &shared,
        store_support::unique_table("sdk-config"),
        store_support::definition(),
    );
    let config = store.client().config();
    assert_eq!(config.region().map(Region::as_ref), Some("eu-west-3"));
    assert_eq!(
        config.retry_config().map(RetryConfig::max_attempts),
        Some(7)
    );
    store.create_table().await?;
    let key = store_support::key("a", "b");
    let outcome = async {
        store.put_item(key.clone(), Expect::Any).await?;
        store.get_item(&key, None).await
    }
    .await;
    store.delete_table().await?;
    assert_eq!(outcome?, Some(key));
    Ok(())
}

/// A definition with every operational setting: two GSIs (one with its own capacity), two
/// LSIs, provisioned billing, TTL, a stream, point-in-time recovery, deletion protection and
/// two tags.
fn full_definition() -> TableDefinition {
    TableDefinition::new(("hashKey", KeyType::S), ("rangeKey", KeyType::S))
        .with_index(
            GlobalIndex::new("byOwner", ("owner", KeyType::S), ("rangeKey", KeyType::S))
                .projection(Projection::Include(vec!["name".into()].into())),
        )
        .with_index(
            GlobalIndex::new(
                "byCreated",
                ("hashKey", KeyType::S),
                ("created", KeyType::N),
            )
            .capacity(Capacity::new(2, 1)),
        )
        .with_local_index(
            LocalIndex::new("byScore", ("hashKey", KeyType::S), ("score", KeyType::N))
                .projection(Projection::KeysOnly),
        )
        .with_local_index(LocalIndex::new(
            "byName",
            ("hashKey", KeyType::S),
            ("name", KeyType::S),
        ))
        .with_billing(Billing::Provisioned { read: 4, write: 3 })
        .with_ttl("expiresAt")
        .with_stream(StreamView::NewAndOldImages)
        .with_point_in_time_recovery(true)
        .with_deletion_protection(true)
        .with_tag("team", "accounts")
        .with_tag("cost-center", "42")
}

/// The property names of the `AWS::DynamoDB::Table` resource schema and of the property types
/// this crate emits, from the CloudFormation template reference
/// (`aws-resource-dynamodb-table`, `aws-properties-dynamodb-table-*`). A fixture written down
/// independently of the renderer: any emitted name outside it is not in the schema.
fn cloudformation_schema() -> BTreeMap<&'static str, &'static [&'static str]> {
    BTreeMap::from([
        (
            "Properties",
            &[
                "AttributeDefinitions",
                "BillingMode",
                "ContributorInsightsSpecification",
                "DeletionProtectionEnabled",
                "GlobalSecondaryIndexes",
                "ImportSourceSpecification",
                "KeySchema",
                "KinesisStreamSpecification",
                "LocalSecondaryIndexes",
                "OnDemandThroughput",
                "PointInTimeRecoverySpecification",
                "ProvisionedThroughput",
                "ResourcePolicy",
                "SSESpecification",
                "StreamSpecification",
                "TableClass",
                "TableName",
                "Tags",
                "TimeToLiveSpecification",
                "WarmThroughput",
            ][..],
        ),
        (
            "AttributeDefinition",
            &["AttributeName", "AttributeType"][..],
        ),
        ("KeySchema", &["AttributeName", "KeyType"][..]),
        (
            "GlobalSecondaryIndex",
            &[
                "ContributorInsightsSpecification",
                "IndexName",
                "KeySchema",
                "OnDemandThroughput",
                "Projection",
                "ProvisionedThroughput",
                "WarmThroughput",
            ][..],
        ),
        (
            "LocalSecondaryIndex",
            &["IndexName", "KeySchema", "Projection"][..],
        ),
        ("Projection", &["NonKeyAttributes", "ProjectionType"][..]),
        (
            "ProvisionedThroughput",
            &["ReadCapacityUnits", "WriteCapacityUnits"][..],
        ),
        ("TimeToLiveSpecification", &["AttributeName", "Enabled"][..]),
        (
            "StreamSpecification",
            &["ResourcePolicy", "StreamViewType"][..],
        ),
        (
            "PointInTimeRecoverySpecification",
            &["PointInTimeRecoveryEnabled", "RecoveryPeriodInDays"][..],
        ),
        ("Tag", &["Key", "Value"][..]),
    ])
}

/// Every key of `value` is a property of `schema_type` (recursively, by the property types
/// the resource schema gives each property).
fn assert_in_schema(value: &Value, schema_type: &str) -> TestResult {
    let schema = cloudformation_schema();
    let allowed = schema
        .get(schema_type)
        .ok_or(format!("no fixture for {schema_type}"))?;
    let object = value
        .as_object()
        .ok_or(format!("{schema_type} is not an object"))?;
    for (key, v) in object {
        assert!(
            allowed.contains(&key.as_str()),
            "`{key}` is not a property of {schema_type} in the CloudFormation schema"
        );
        let child = match key.as_str() {
            "AttributeDefinitions" => Some("AttributeDefinition"),
            "KeySchema" => Some("KeySchema"),
            "GlobalSecondaryIndexes" => Some("GlobalSecondaryIndex"),
            "LocalSecondaryIndexes" => Some("LocalSecondaryIndex"),
            "Tags" => Some("Tag"),
            "Projection"
            | "ProvisionedThroughput"
            | "TimeToLiveSpecification"
            | "StreamSpecification"
            | "PointInTimeRecoverySpecification" => Some(key.as_str()),
            _ => None,
        };
        match (child, v) {
            (Some(child), Value::Array(items)) => {
                for item in items {
                    assert_in_schema(item, child)?;
                }
            }
            (Some(child), Value::Object(_)) => assert_in_schema(v, child)?,
            (Some(child), other) => return Err(format!("{child} is {other}").into()),
            (None, _) => {}
        }
    }
    Ok(())
}

#[test]
fn cloudformation_emits_every_setting_inside_the_resource_schema() -> TestResult {
    let resource = full_definition().cloudformation(Some("Accounts"))?;
    let props = &resource["Properties"];
    assert_in_schema(props, "Properties")?;
    assert_in_schema(
        &TableDefinition::from_schema(&user_service()?)?.cloudformation(None)?["Properties"],
        "Properties",
    )?;
    assert_eq!(props["BillingMode"], "PROVISIONED");
    assert_eq!(
        props["ProvisionedThroughput"],
        json!({ "ReadCapacityUnits": 4, "WriteCapacityUnits": 3 })
    );
    // A GSI without its own capacity gets the table's; one with its own keeps it.
    let gsis = props["GlobalSecondaryIndexes"]
        .as_array()
        .ok_or("GlobalSecondaryIndexes")?;
    assert_eq!(gsis[0]["IndexName"], "byOwner");
    assert_eq!(
        gsis[0]["ProvisionedThroughput"],
        json!({ "ReadCapacityUnits": 4, "WriteCapacityUnits": 3 })
    );
    assert_eq!(
        gsis[0]["Projection"],
        json!({ "ProjectionType": "INCLUDE", "NonKeyAttributes": ["name"] })
    );
    assert_eq!(
        gsis[1]["ProvisionedThroughput"],
        json!({ "ReadCapacityUnits": 2, "WriteCapacityUnits": 1 })
    );
    assert_eq!(
        props["LocalSecondaryIndexes"],
        json!([
            {
                "IndexName": "byScore",
                "KeySchema": [
                    { "AttributeName": "hashKey", "KeyType": "HASH" },
                    { "AttributeName": "score", "KeyType": "RANGE" },
                ],
                "Projection": { "ProjectionType": "KEYS_ONLY" },
            },
            {
                "IndexName": "byName",
                "KeySchema": [
                    { "AttributeName": "hashKey", "KeyType": "HASH" },
                    { "AttributeName": "name", "KeyType": "RANGE" },
                ],
                "Projection": { "ProjectionType": "ALL" },
            },
        ])
    );
    // LSI range keys are attribute definitions too, once each.
    let defined: BTreeMap<&str, &str> = props["AttributeDefinitions"]
        .as_array()
        .ok_or("AttributeDefinitions")?
        .iter()
        .map(|d| {
            (
                d["AttributeName"].as_str().unwrap_or("?"),
                d["AttributeType"].as_str().unwrap_or("?"),
            )
        })
        .collect();
    assert_eq!(
        defined,
        BTreeMap::from([
            ("hashKey", "S"),
            ("rangeKey", "S"),
            ("owner", "S"),
            ("created", "N"),
            ("score", "N"),
            ("name", "S"),
        ])
    );
    assert_eq!(
        props["TimeToLiveSpecification"],
        json!({ "AttributeName": "expiresAt", "Enabled": true })
    );
    assert_eq!(
        props["StreamSpecification"],
        json!({ "StreamViewType": "NEW_AND_OLD_IMAGES" })
    );
    assert_eq!(
        props["PointInTimeRecoverySpecification"],
        json!({ "PointInTimeRecoveryEnabled": true })
    );
    assert_eq!(props["DeletionProtectionEnabled"], json!(true));
    // Tags in key order.
    assert_eq!(
        props["Tags"],
        json!([{ "Key": "cost-center", "Value": "42" }, { "Key": "team", "Value": "accounts" }])
    );
    Ok(())
}

#[test]
fn cloudformation_leaves_settings_that_are_off_out() -> TestResult {
    let plain =
        TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::S)).cloudformation(None)?;
    for absent in [
        "TimeToLiveSpecification",
        "StreamSpecification",
        "PointInTimeRecoverySpecification",
        "DeletionProtectionEnabled",
        "Tags",
        "LocalSecondaryIndexes",
        "ProvisionedThroughput",
    ] {
        assert!(plain["Properties"].get(absent).is_none(), "{absent}");
    }
    Ok(())
}

#[test]
fn invalid_indexes_are_typed_errors() {
    let base = || TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::S));
    let lsi = |name: &str, hash: &str| LocalIndex::new(name, (hash, KeyType::S), ("x", KeyType::N));
    let check = |def: TableDefinition, what: &str, ok: &dyn Fn(&TableDefinitionError) -> bool| {
        check(&def, what, ok);
    };
    check(
        base().with_local_index(lsi("byOther", "other")),
        "an LSI on another hash key",
        &|e| matches!(e, TableDefinitionError::LocalIndexHashKey { index, expected, actual } if index == "byOther" && expected == "pk" && actual == "other"),
    );
    let six = (0..6).fold(base(), |d, i| {
        d.with_local_index(LocalIndex::new(
            format!("lsi{i}"),
            ("pk", KeyType::S),
            (format!("r{i}"), KeyType::S),
        ))
    });
    check(six, "six LSIs", &|e| {
        matches!(e, TableDefinitionError::TooManyLocalIndexes { count: 6 })
    });
    for bad in ["ab", "has space", "ünïcode", &"x".repeat(256)] {
        check(
            base().with_index(GlobalIndex::new(bad, ("g", KeyType::S), ("sk", KeyType::S))),
            "a bad GSI name",
            &|e| matches!(e, TableDefinitionError::InvalidIndexName { name } if name == bad),
        );
    }
    check(
        base().with_local_index(lsi("by/x", "pk")),
        "a bad LSI name",
        &|e| matches!(e, TableDefinitionError::InvalidIndexName { .. }),
    );
    check(
        base()
            .with_index(GlobalIndex::new(
                "same",
                ("g", KeyType::S),
                ("sk", KeyType::S),
            ))
            .with_local_index(lsi("same", "pk")),
        "a GSI and an LSI of one name",
        &|e| matches!(e, TableDefinitionError::DuplicateIndex { index } if index == "same"),
    );
}

/// `def.validate()` fails as `ok` says, and `cloudformation` with the same error.
fn check(def: &TableDefinition, what: &str, ok: &dyn Fn(&TableDefinitionError) -> bool) {
    let e = def.validate();
    assert!(e.as_ref().is_err_and(ok), "{what}: {e:?}");
    assert_eq!(def.cloudformation(None).err(), e.err(), "{what}");
}

#[test]
fn invalid_ttl_capacities_and_tags_are_typed_errors() {
    let base = || TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::S));
    let lsi = |name: &str, hash: &str| LocalIndex::new(name, (hash, KeyType::S), ("x", KeyType::N));
    let check = |def: TableDefinition, what: &str, ok: &dyn Fn(&TableDefinitionError) -> bool| {
        check(&def, what, ok);
    };
    check(
        base().with_ttl("sk"),
        "TTL on the range key",
        &|e| matches!(e, TableDefinitionError::TtlIsKey { attribute, .. } if attribute == "sk"),
    );
    check(
        base().with_local_index(lsi("byX", "pk")).with_ttl("x"),
        "TTL on an LSI key",
        &|e| matches!(e, TableDefinitionError::TtlIsKey { key_of, .. } if key_of.contains("byX")),
    );
    check(base().with_ttl(""), "an empty TTL attribute", &|e| {
        matches!(e, TableDefinitionError::InvalidAttributeName { .. })
    });
    check(
        base().with_billing(Billing::Provisioned { read: 0, write: 1 }),
        "zero read capacity",
        &|e| matches!(e, TableDefinitionError::InvalidCapacity { read: 0, .. }),
    );
    check(
        base()
            .with_billing(Billing::Provisioned { read: 1, write: 1 })
            .with_index(
                GlobalIndex::new("gsi", ("g", KeyType::S), ("sk", KeyType::S))
                    .capacity(Capacity::new(1, 0)),
            ),
        "zero GSI write capacity",
        &|e| matches!(e, TableDefinitionError::InvalidCapacity { of, .. } if of.contains("gsi")),
    );
    check(
        base().with_index(
            GlobalIndex::new("gsi", ("g", KeyType::S), ("sk", KeyType::S))
                .capacity(Capacity::new(1, 1)),
        ),
        "GSI capacity on demand",
        &|e| matches!(e, TableDefinitionError::CapacityOnDemand { index } if index == "gsi"),
    );
    check(
        base().with_tag("aws:owner", "me"),
        "a reserved tag",
        &|e| matches!(e, TableDefinitionError::InvalidTag { key, .. } if key == "aws:owner"),
    );
    check(base().with_tag("", "v"), "an empty tag key", &|e| {
        matches!(e, TableDefinitionError::InvalidTag { .. })
    });
    check(
        base().with_tag("k", "v".repeat(257)),
        "a long tag value",
        &|e| matches!(e, TableDefinitionError::InvalidTag { .. }),
    );
    let many = (0..51).fold(base(), |d, i| d.with_tag(format!("k{i}"), "v"));
    check(many, "51 tags", &|e| {
        matches!(e, TableDefinitionError::TooManyTags { count: 51 })
    });
    let wide: Vec<std::borrow::Cow<'static, str>> =
        (0..101).map(|i| format!("a{i}").into()).collect();
    check(
        base().with_index(
            GlobalIndex::new("gsi", ("g", KeyType::S), ("sk", KeyType::S))
                .projection(Projection::Include(wide.into())),
        ),
        "101 projected attributes",
        &|e| {
            matches!(
                e,
                TableDefinitionError::TooManyProjectedAttributes { count: 101 }
            )
        },
    );
    // And the full definition, and the User service table, are valid.
    assert_eq!(full_definition().validate(), Ok(()));
    assert!(
        user_service()
            .ok()
            .and_then(|s| TableDefinition::from_schema(&s).ok())
            .is_some_and(|d| d.validate().is_ok())
    );
}

#[test]
fn memory_store_describes_the_definition_it_was_given() {
    let store = MemoryStore::new(full_definition());
    let live = store.describe_table();
    assert_eq!(live.definition, full_definition());
    assert!(live.unreported.is_empty());
    assert!(full_definition().drift(&live).is_clean());
    // And reports what another definition would change.
    let other = full_definition().with_point_in_time_recovery(false);
    assert_eq!(
        other.drift(&live).drifts,
        [Drift::PointInTimeRecovery {
            expected: false,
            actual: true
        }]
    );
}

/// Turns deletion protection off (if on) and deletes the table.
async fn drop_table(store: &DynamoStore) -> TestResult {
    store
        .client()
        .update_table()
        .table_name(store.table_name())
        .deletion_protection_enabled(false)
        .send()
        .await?;
    store.delete_table().await?;
    Ok(())
}

#[tokio::test]
async fn every_setting_is_created_on_dynamodb_local_and_read_back() -> TestResult {
    // DynamoDB Local implements neither UpdateContinuousBackups nor tagging (it accepts the tags
    // of CreateTable and drops them): the table is created without point-in-time recovery, and
    // both are reported as unchecked, never as matching.
    let definition = full_definition().with_point_in_time_recovery(false);
    let Some(store) = store_support::dynamo_store("every_setting", definition.clone()).await?
    else {
        return Ok(());
    };
    let described = store
        .client()
        .describe_table()
        .table_name(store.table_name())
        .send()
        .await?;
    let table = described.table().ok_or("no table")?;
    assert_eq!(table.deletion_protection_enabled(), Some(true));
    let stream = table.stream_specification().ok_or("no stream")?;
    assert!(stream.stream_enabled());
    assert_eq!(
        stream
            .stream_view_type()
            .map(aws_sdk_dynamodb::types::StreamViewType::as_str),
        Some("NEW_AND_OLD_IMAGES")
    );
    let lsis: Vec<&str> = table
        .local_secondary_indexes()
        .iter()
        .filter_map(|l| l.index_name())
        .collect();
    assert_eq!(lsis, ["byScore", "byName"]);
    let throughput = table.provisioned_throughput().ok_or("no throughput")?;
    assert_eq!(
        (
            throughput.read_capacity_units(),
            throughput.write_capacity_units()
        ),
        (Some(4), Some(3))
    );
    let by_created = table
        .global_secondary_indexes()
        .iter()
        .find(|g| g.index_name() == Some("byCreated"))
        .and_then(|g| g.provisioned_throughput())
        .ok_or("byCreated has no throughput")?;
    assert_eq!(by_created.read_capacity_units(), Some(2));
    let ttl = store
        .client()
        .describe_time_to_live()
        .table_name(store.table_name())
        .send()
        .await?;
    assert_eq!(
        ttl.time_to_live_description()
            .and_then(|t| t.attribute_name()),
        Some("expiresAt")
    );
    // Read back through the store: everything Local reports equals the definition.
    let live = store.describe_table().await?;
    assert_eq!(
        live.unreported,
        [Setting::PointInTimeRecovery, Setting::Tags]
    );
    // LSIs come back in DynamoDB's order, not the definition's.
    let mut lsis = live.definition.local_indexes.clone();
    lsis.sort_by(|a, b| b.name.cmp(&a.name));
    assert_eq!(lsis, definition.local_indexes);
    assert_eq!(live.definition.ttl_attribute.as_deref(), Some("expiresAt"));
    assert_eq!(live.definition.billing, definition.billing);
    let report = store.drift().await?;
    assert_eq!(report.drifts, []);
    assert_eq!(
        report.unchecked,
        [Setting::PointInTimeRecovery, Setting::Tags]
    );
    // The LSI is queryable through the store (its keys come from the definition).
    {
        use entity_manager::store::{Expect, QueryPage, Store};
        let item = store_support::item(json!({
            "hashKey": "h", "rangeKey": "r", "score": 7, "name": "n", "owner": "o", "created": 1
        }))?;
        store.put_item(item, Expect::Any).await?;
        let page = store
            .query_page(&QueryPage::new(store_support::s("h")).index("byScore"))
            .await?;
        assert_eq!(page.items.len(), 1);
    }
    // Deletion protection is on: DeleteTable is refused until it is turned off.
    let refused = store
        .delete_table()
        .await
        .err()
        .ok_or("a protected table was deleted")?;
    assert!(refused.is_validation(), "{refused:?}");
    drop_table(&store).await
}

#[tokio::test]
async fn point_in_time_recovery_on_dynamodb_local_is_an_error_not_a_silent_success() -> TestResult {
    let Some(client) = store_support::dynamo_client() else {
        return Ok(());
    };
    let definition = TableDefinition::new(("hashKey", KeyType::S), ("rangeKey", KeyType::S))
        .with_point_in_time_recovery(true);
    let store = DynamoStore::new(client, store_support::unique_table("pitr"), definition);
    let e = store
        .create_table()
        .await
        .err()
        .ok_or("DynamoDB Local turned point-in-time recovery on")?;
    assert_eq!(e.code(), Some("UnknownOperationException"), "{e:?}");
    assert!(e.message().contains("point-in-time recovery"), "{e}");
    assert!(e.message().contains("was created"), "{e}");
    // The table exists, and the drift check cannot say whether PITR is on.
    let report = store.drift().await?;
    assert!(report.is_clean(), "{report:?}");
    assert!(report.unchecked.contains(&Setting::PointInTimeRecovery));
    store.delete_table().await?;
    Ok(())
}

/// The definition the drift tests check against: two GSIs, TTL, a stream.
fn drift_definition(projection: Projection) -> TableDefinition {
    TableDefinition::new(("hashKey", KeyType::S), ("rangeKey", KeyType::S))
        .with_index(GlobalIndex::new(
            "byOwner",
            ("owner", KeyType::S),
            ("rangeKey", KeyType::S),
        ))
        .with_index(
            GlobalIndex::new(
                "byCreated",
                ("hashKey", KeyType::S),
                ("created", KeyType::N),
            )
            .projection(projection),
        )
        .with_local_index(LocalIndex::new(
            "byScore",
            ("hashKey", KeyType::S),
            ("score", KeyType::N),
        ))
        .with_ttl("expiresAt")
        .with_stream(StreamView::KeysOnly)
}

#[tokio::test]
async fn a_table_matching_its_definition_has_no_drift_on_dynamodb_local() -> TestResult {
    let definition = drift_definition(Projection::Include(
        vec!["name".into(), "owner".into()].into(),
    ));
    let Some(store) = store_support::dynamo_store("no_drift", definition.clone()).await? else {
        return Ok(());
    };
    let report = store.drift().await?;
    assert_eq!(report.drifts, []);
    // Both stores agree: a memory store of the definition reports none either.
    assert!(
        definition
            .drift(&MemoryStore::new(definition.clone()).describe_table())
            .is_clean()
    );
    store.delete_table().await?;
    Ok(())
}

#[tokio::test]
async fn a_table_altered_behind_the_definitions_back_reports_exactly_those_drifts() -> TestResult {
    let defined = drift_definition(Projection::Include(vec!["name".into()].into()));
    // Created from another definition (`byCreated` projects only keys), then altered: GSI
    // `byOwner` deleted with UpdateTable, TTL turned off with UpdateTimeToLive.
    let created = drift_definition(Projection::KeysOnly);
    let Some(store) = store_support::dynamo_store("drift", created).await? else {
        return Ok(());
    };
    let client = store.client();
    client
        .update_table()
        .table_name(store.table_name())
        .global_secondary_index_updates(
            aws_sdk_dynamodb::types::GlobalSecondaryIndexUpdate::builder()
                .delete(
                    aws_sdk_dynamodb::types::DeleteGlobalSecondaryIndexAction::builder()
                        .index_name("byOwner")
                        .build()?,
                )
                .build(),
        )
        .send()
        .await?;
    client
        .update_time_to_live()
        .table_name(store.table_name())
        .time_to_live_specification(
            aws_sdk_dynamodb::types::TimeToLiveSpecification::builder()
                .enabled(false)
                .attribute_name("expiresAt")
                .build()?,
        )
        .send()
        .await?;
    let live = store.describe_table().await?;
    let report = defined.drift(&live);
    assert_eq!(
        report.drifts,
        [
            Drift::MissingIndex {
                kind: IndexKind::Global,
                index: "byOwner".into()
            },
            Drift::Projection {
                kind: IndexKind::Global,
                index: "byCreated".into(),
                expected: Projection::Include(vec!["name".into()].into()),
                actual: Projection::KeysOnly,
            },
            Drift::TimeToLive {
                expected: Some("expiresAt".into()),
                actual: None
            },
        ]
    );
    // What Local cannot report is said, not assumed.
    assert_eq!(
        report.unchecked,
        [Setting::PointInTimeRecovery, Setting::Tags]
    );
    store.delete_table().await?;
    Ok(())
}

/// A table with a multi-attribute GSI (`byOrg`: `orgId`, `region` / `score`, `name`).
fn multi_attribute_definition(second_range: &str) -> TableDefinition {
    TableDefinition::new(("hashKey", KeyType::S), ("rangeKey", KeyType::S)).with_index(
        GlobalIndex::new("byOrg", ("orgId", KeyType::S), ("score", KeyType::N))
            .with_hash_key(("region", KeyType::S))
            .with_range_key((second_range, KeyType::S)),
    )
}

#[tokio::test]
async fn multi_attribute_keys_are_read_back_whole_and_a_later_attribute_drifts() -> TestResult {
    let created = multi_attribute_definition("name");
    let Some(store) = store_support::dynamo_store("drift_multi", created.clone()).await? else {
        return Ok(());
    };
    let live = store.describe_table().await?;
    // Every partition and sort attribute comes back, in key order.
    let Some(gsi) = live.definition.indexes.iter().find(|g| g.name == "byOrg") else {
        return Err("the live table lacks GSI `byOrg`".into());
    };
    let names = |keys: Vec<&entity_manager::store::KeyAttribute>| -> Vec<String> {
        keys.into_iter().map(|k| k.name.clone()).collect()
    };
    assert_eq!(names(gsi.hash_keys()), ["orgId", "region"]);
    assert_eq!(names(gsi.range_keys()), ["score", "name"]);
    assert_eq!(created.drift(&live).drifts, []);
    // A definition differing only in the second sort attribute drifts from it: the check
    // does not stop at the first attribute of each side.
    let defined = multi_attribute_definition("city");
    let report = defined.drift(&live);
    let [
        Drift::KeySchema {
            index,
            expected,
            actual,
        },
    ] = report.drifts.as_slice()
    else {
        return Err(format!("expected one key-schema drift, got {:?}", report.drifts).into());
    };
    assert_eq!(index.as_deref(), Some("byOrg"));
    assert_eq!(
        (expected.hash.clone(), expected.range.clone()),
        (
            vec!["orgId".to_owned(), "region".to_owned()],
            vec!["score".to_owned(), "city".to_owned()]
        )
    );
    assert_eq!(actual.range, ["score", "name"]);
    assert_eq!(
        report.drifts[0].to_string(),
        "index `byOrg` is keyed by (`orgId`, `region`)/(`score`, `name`), \
         the definition says (`orgId`, `region`)/(`score`, `city`)"
    );
    // The memory store gives the same verdict on its own description.
    assert_eq!(
        defined
            .drift(&MemoryStore::new(created).describe_table())
            .drifts,
        report.drifts
    );
    store.delete_table().await?;
    Ok(())
}
