//! The live table of `DescribeTable` (and `DescribeTimeToLive`, `DescribeContinuousBackups`,
//! `ListTagsOfResource`) as a [`LiveTable`], for the drift check.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::{
    self as aws, BillingMode, KeySchemaElement, KeyType as AwsKeyType, ProjectionType,
    ScalarAttributeType, TimeToLiveStatus,
};

use crate::key_type::KeyType;
use crate::model::{Name, Projection};
use crate::store::{StoreError, StoreErrorKind};
use crate::table::{
    Billing, Capacity, GlobalIndex, KeyAttribute, LiveTable, LocalIndex, Setting, StreamView,
    TableDefinition,
};

const OP: &str = "DescribeTable";

/// The error code of an operation the endpoint does not implement (`DynamoDB` Local answers it
/// to `DescribeContinuousBackups`, `UpdateContinuousBackups` and the tagging calls).
pub(super) const UNKNOWN_OPERATION: &str = "UnknownOperationException";

/// What the calls besides `DescribeTable` reported; `None` where the endpoint could not.
#[derive(Debug, Default)]
pub(super) struct Extras {
    /// Whether `DescribeTimeToLive` answered.
    pub(super) ttl_reported: bool,
    /// The TTL attribute when TTL is enabled or enabling.
    pub(super) ttl: Option<String>,
    /// Point-in-time recovery on.
    pub(super) point_in_time_recovery: Option<bool>,
    /// The tags.
    pub(super) tags: Option<BTreeMap<String, String>>,
}

/// The TTL attribute of a `DescribeTimeToLive` answer: set when TTL is enabled or enabling.
pub(super) fn ttl_attribute(description: Option<&aws::TimeToLiveDescription>) -> Option<String> {
    let description = description?;
    match description.time_to_live_status() {
        Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling) => {
            description.attribute_name().map(str::to_owned)
        }
        _ => None,
    }
}

fn conversion(message: String) -> StoreError {
    StoreError::new(StoreErrorKind::Conversion, OP, message)
}

fn key_type(attributes: &[aws::AttributeDefinition], name: &str) -> Result<KeyType, StoreError> {
    let Some(a) = attributes.iter().find(|a| a.attribute_name() == name) else {
        return Err(conversion(format!(
            "DescribeTable lists no attribute definition for key attribute `{name}`"
        )));
    };
    match a.attribute_type() {
        ScalarAttributeType::S => Ok(KeyType::S),
        ScalarAttributeType::N => Ok(KeyType::N),
        ScalarAttributeType::B => Ok(KeyType::B),
        other => Err(conversion(format!(
            "key attribute `{name}` has type `{}`, which this version of entity-manager does not know; upgrade it",
            other.as_str()
        ))),
    }
}

/// The partition and sort attributes of a key schema, each in key order (a multi-attribute
/// GSI key has up to four of each; an absent sort key is one attribute with an empty name).
fn keys(
    schema: &[KeySchemaElement],
    attributes: &[aws::AttributeDefinition],
) -> Result<(Vec<KeyAttribute>, Vec<KeyAttribute>), StoreError> {
    let of = |t: &AwsKeyType| -> Result<Vec<KeyAttribute>, StoreError> {
        let mut out = schema
            .iter()
            .filter(|k| k.key_type() == t)
            .map(|k| {
                Ok(KeyAttribute::new(
                    k.attribute_name(),
                    key_type(attributes, k.attribute_name())?,
                ))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        if out.is_empty() {
            out.push(KeyAttribute::new("", KeyType::S));
        }
        Ok(out)
    };
    Ok((of(&AwsKeyType::Hash)?, of(&AwsKeyType::Range)?))
}

/// The first attribute of a key side and the others.
fn split(mut keys: Vec<KeyAttribute>) -> (KeyAttribute, Vec<KeyAttribute>) {
    let first = if keys.is_empty() {
        KeyAttribute::new("", KeyType::S)
    } else {
        keys.remove(0)
    };
    (first, keys)
}

fn projection(p: Option<&aws::Projection>) -> Projection {
    match p.and_then(aws::Projection::projection_type) {
        Some(ProjectionType::KeysOnly) => Projection::KeysOnly,
        Some(ProjectionType::Include) => Projection::Include(
            p.map(aws::Projection::non_key_attributes)
                .unwrap_or_default()
                .iter()
                .map(|n| Name::from(n.clone()))
                .collect::<Vec<_>>()
                .into(),
        ),
        _ => Projection::All,
    }
}

fn capacity(t: Option<&aws::ProvisionedThroughputDescription>) -> Capacity {
    Capacity::new(
        t.and_then(aws::ProvisionedThroughputDescription::read_capacity_units)
            .unwrap_or(0),
        t.and_then(aws::ProvisionedThroughputDescription::write_capacity_units)
            .unwrap_or(0),
    )
}

/// The live table of a `DescribeTable` answer and what the other calls reported.
pub(super) fn live_table(
    table: &aws::TableDescription,
    extras: Extras,
) -> Result<LiveTable, StoreError> {
    let attributes = table.attribute_definitions();
    let (hash, range) = keys(table.key_schema(), attributes)?;
    let mut def = TableDefinition::new(split(hash).0, split(range).0);
    let on_demand = table
        .billing_mode_summary()
        .and_then(aws::BillingModeSummary::billing_mode)
        == Some(&BillingMode::PayPerRequest);
    def.billing = if on_demand {
        Billing::PayPerRequest
    } else {
        let c = capacity(table.provisioned_throughput());
        Billing::Provisioned {
            read: c.read,
            write: c.write,
        }
    };
    for g in table.global_secondary_indexes() {
        // Being deleted (`UpdateTable` has removed its attribute definitions already): gone.
        if g.index_status() == Some(&aws::IndexStatus::Deleting) {
            continue;
        }
        let (hash, range) = keys(g.key_schema(), attributes)?;
        let ((hash, more_hash), (range, more_range)) = (split(hash), split(range));
        let mut index = GlobalIndex::new(g.index_name().unwrap_or_default(), hash, range)
            .projection(projection(g.projection()));
        index.more_hash_keys = more_hash;
        index.more_range_keys = more_range;
        if !on_demand {
            index = index.capacity(capacity(g.provisioned_throughput()));
        }
        def.indexes.push(index);
    }
    for l in table.local_secondary_indexes() {
        let (hash, range) = keys(l.key_schema(), attributes)?;
        def.local_indexes.push(
            LocalIndex::new(
                l.index_name().unwrap_or_default(),
                split(hash).0,
                split(range).0,
            )
            .projection(projection(l.projection())),
        );
    }
    def.stream = table
        .stream_specification()
        .filter(|s| s.stream_enabled())
        .and_then(aws::StreamSpecification::stream_view_type)
        .and_then(|v| StreamView::from_name(v.as_str()));
    def.deletion_protection = table.deletion_protection_enabled().unwrap_or(false);
    let mut live = LiveTable::new(def);
    if extras.ttl_reported {
        live.definition.ttl_attribute = extras.ttl;
    } else {
        live = live.with_unreported(Setting::TimeToLive);
    }
    match extras.point_in_time_recovery {
        Some(on) => live.definition.point_in_time_recovery = on,
        None => live = live.with_unreported(Setting::PointInTimeRecovery),
    }
    match extras.tags {
        Some(tags) => live.definition.tags = tags,
        None => live = live.with_unreported(Setting::Tags),
    }
    Ok(live)
}

#[cfg(test)]
mod tests {
    //! The drift check on constructed `DescribeTable` answers: the settings `DynamoDB` Local
    //! cannot report or set (point-in-time recovery, tags, capacities of a live table that
    //! changed mode) are exercised here.

    use std::error::Error;

    use aws_sdk_dynamodb::types::{
        AttributeDefinition, BillingModeSummary, GlobalSecondaryIndexDescription, KeySchemaElement,
        LocalSecondaryIndexDescription, Projection as AwsProjection,
        ProvisionedThroughputDescription, StreamSpecification, StreamViewType, TableDescription,
        TimeToLiveDescription,
    };

    use super::*;
    use crate::store::{Drift, IndexKind};

    type TestResult = Result<(), Box<dyn Error>>;

    fn attribute(
        name: &str,
        t: ScalarAttributeType,
    ) -> Result<AttributeDefinition, Box<dyn Error>> {
        Ok(AttributeDefinition::builder()
            .attribute_name(name)
            .attribute_type(t)
            .build()?)
    }

    fn schema(hash: &str, range: &str) -> Result<Vec<KeySchemaElement>, Box<dyn Error>> {
        Ok(vec![
            KeySchemaElement::builder()
                .attribute_name(hash)
                .key_type(AwsKeyType::Hash)
                .build()?,
            KeySchemaElement::builder()
                .attribute_name(range)
                .key_type(AwsKeyType::Range)
                .build()?,
        ])
    }

    fn throughput(read: i64, write: i64) -> ProvisionedThroughputDescription {
        ProvisionedThroughputDescription::builder()
            .read_capacity_units(read)
            .write_capacity_units(write)
            .build()
    }

    /// A provisioned table (5/5, GSI `byOwner` at 2/2), LSI `byScore` INCLUDE `name`, stream
    /// of new images, deletion protection on.
    fn described() -> Result<TableDescription, Box<dyn Error>> {
        Ok(TableDescription::builder()
            .table_name("t")
            .set_attribute_definitions(Some(vec![
                attribute("pk", ScalarAttributeType::S)?,
                attribute("sk", ScalarAttributeType::S)?,
                attribute("owner", ScalarAttributeType::S)?,
                attribute("score", ScalarAttributeType::N)?,
            ]))
            .set_key_schema(Some(schema("pk", "sk")?))
            .provisioned_throughput(throughput(5, 5))
            .global_secondary_indexes(
                GlobalSecondaryIndexDescription::builder()
                    .index_name("byOwner")
                    .set_key_schema(Some(schema("owner", "sk")?))
                    .projection(
                        AwsProjection::builder()
                            .projection_type(ProjectionType::All)
                            .build(),
                    )
                    .provisioned_throughput(throughput(2, 2))
                    .build(),
            )
            .local_secondary_indexes(
                LocalSecondaryIndexDescription::builder()
                    .index_name("byScore")
                    .set_key_schema(Some(schema("pk", "score")?))
                    .projection(
                        AwsProjection::builder()
                            .projection_type(ProjectionType::Include)
                            .non_key_attributes("name")
                            .build(),
                    )
                    .build(),
            )
            .stream_specification(
                StreamSpecification::builder()
                    .stream_enabled(true)
                    .stream_view_type(StreamViewType::NewImage)
                    .build()?,
            )
            .deletion_protection_enabled(true)
            .build())
    }

    /// The definition `described()` matches.
    fn defined() -> TableDefinition {
        TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::S))
            .with_index(
                GlobalIndex::new("byOwner", ("owner", KeyType::S), ("sk", KeyType::S))
                    .capacity(Capacity::new(2, 2)),
            )
            .with_local_index(
                LocalIndex::new("byScore", ("pk", KeyType::S), ("score", KeyType::N))
                    .projection(Projection::Include(vec![Name::from("name")].into())),
            )
            .with_billing(Billing::Provisioned { read: 5, write: 5 })
            .with_stream(StreamView::NewImage)
            .with_deletion_protection(true)
            .with_ttl("expires")
            .with_point_in_time_recovery(true)
            .with_tag("team", "core")
    }

    fn all_reported() -> Extras {
        Extras {
            ttl_reported: true,
            ttl: Some("expires".into()),
            point_in_time_recovery: Some(true),
            tags: Some(BTreeMap::from([("team".into(), "core".into())])),
        }
    }

    #[test]
    fn a_matching_description_has_no_drift() -> TestResult {
        let live = live_table(&described()?, all_reported())?;
        let report = defined().drift(&live);
        assert_eq!(report.drifts, []);
        assert!(report.unchecked.is_empty());
        // Read back, the live table is the definition itself.
        assert_eq!(live.definition, defined());
        Ok(())
    }

    /// `byOrg` keyed by `(orgId, region)` / `(score, <second_range>)`.
    fn multi_attribute(second_range: &str) -> Result<TableDescription, Box<dyn Error>> {
        let element = |name: &str, t: AwsKeyType| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(t)
                .build()
        };
        Ok(TableDescription::builder()
            .table_name("t")
            .set_attribute_definitions(Some(vec![
                attribute("pk", ScalarAttributeType::S)?,
                attribute("sk", ScalarAttributeType::S)?,
                attribute("orgId", ScalarAttributeType::S)?,
                attribute("region", ScalarAttributeType::S)?,
                attribute("score", ScalarAttributeType::N)?,
                attribute(second_range, ScalarAttributeType::S)?,
            ]))
            .set_key_schema(Some(schema("pk", "sk")?))
            .billing_mode_summary(
                BillingModeSummary::builder()
                    .billing_mode(BillingMode::PayPerRequest)
                    .build(),
            )
            .global_secondary_indexes(
                GlobalSecondaryIndexDescription::builder()
                    .index_name("byOrg")
                    .set_key_schema(Some(vec![
                        element("orgId", AwsKeyType::Hash)?,
                        element("region", AwsKeyType::Hash)?,
                        element("score", AwsKeyType::Range)?,
                        element(second_range, AwsKeyType::Range)?,
                    ]))
                    .projection(
                        AwsProjection::builder()
                            .projection_type(ProjectionType::All)
                            .build(),
                    )
                    .build(),
            )
            .build())
    }

    #[test]
    fn every_attribute_of_a_multi_attribute_key_is_read_and_compared() -> TestResult {
        let defined = TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::S)).with_index(
            GlobalIndex::new("byOrg", ("orgId", KeyType::S), ("score", KeyType::N))
                .with_hash_key(("region", KeyType::S))
                .with_range_key(("name", KeyType::S)),
        );
        let extras = || Extras {
            ttl_reported: true,
            point_in_time_recovery: Some(false),
            tags: Some(BTreeMap::new()),
            ..Extras::default()
        };
        let live = live_table(&multi_attribute("name")?, extras())?;
        assert_eq!(live.definition, defined);
        assert_eq!(defined.drift(&live).drifts, []);
        // Only the second sort attribute differs.
        let report = defined.drift(&live_table(&multi_attribute("city")?, extras())?);
        assert_eq!(
            report.drifts,
            [Drift::KeySchema {
                index: Some("byOrg".into()),
                expected: crate::store::KeySchemaNames {
                    hash: vec!["orgId".into(), "region".into()],
                    range: vec!["score".into(), "name".into()],
                },
                actual: crate::store::KeySchemaNames {
                    hash: vec!["orgId".into(), "region".into()],
                    range: vec!["score".into(), "city".into()],
                },
            }]
        );
        Ok(())
    }

    #[test]
    fn point_in_time_recovery_and_tags_differences_are_reported() -> TestResult {
        let extras = Extras {
            point_in_time_recovery: Some(false),
            tags: Some(BTreeMap::from([
                ("team".into(), "billing".into()),
                ("cost".into(), "42".into()),
            ])),
            ..all_reported()
        };
        let report = defined().drift(&live_table(&described()?, extras)?);
        assert_eq!(
            report.drifts,
            [
                Drift::PointInTimeRecovery {
                    expected: true,
                    actual: false
                },
                Drift::Tag {
                    key: "cost".into(),
                    expected: None,
                    actual: Some("42".into())
                },
                Drift::Tag {
                    key: "team".into(),
                    expected: Some("core".into()),
                    actual: Some("billing".into())
                },
            ]
        );
        Ok(())
    }

    #[test]
    fn unreported_settings_are_unchecked_not_matching() -> TestResult {
        let extras = Extras {
            point_in_time_recovery: None,
            tags: None,
            ..all_reported()
        };
        let live = live_table(&described()?, extras)?;
        // The definition differs in both (no PITR, no tag), but nothing can be said.
        let def = TableDefinition {
            point_in_time_recovery: false,
            tags: BTreeMap::new(),
            ..defined()
        };
        let report = def.drift(&live);
        assert_eq!(report.drifts, []);
        assert_eq!(
            report.unchecked,
            [Setting::PointInTimeRecovery, Setting::Tags]
        );
        Ok(())
    }

    #[test]
    fn billing_capacity_stream_and_lsi_differences_are_reported() -> TestResult {
        let def = TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::S))
            .with_index(GlobalIndex::new(
                "byOwner",
                ("owner", KeyType::S),
                ("sk", KeyType::S),
            ))
            .with_billing(Billing::Provisioned { read: 5, write: 6 })
            .with_stream(StreamView::NewAndOldImages)
            .with_ttl("expires")
            .with_point_in_time_recovery(true)
            .with_tag("team", "core");
        let report = def.drift(&live_table(&described()?, all_reported())?);
        assert_eq!(
            report.drifts,
            [
                Drift::ExtraIndex {
                    kind: IndexKind::Local,
                    index: "byScore".into()
                },
                Drift::Billing {
                    expected: Billing::Provisioned { read: 5, write: 6 },
                    actual: Billing::Provisioned { read: 5, write: 5 }
                },
                // Without its own capacity, the GSI is expected at the table's.
                Drift::IndexCapacity {
                    index: "byOwner".into(),
                    expected: Some(Capacity::new(5, 6)),
                    actual: Some(Capacity::new(2, 2))
                },
                Drift::Stream {
                    expected: Some(StreamView::NewAndOldImages),
                    actual: Some(StreamView::NewImage)
                },
                Drift::DeletionProtection {
                    expected: false,
                    actual: true
                },
            ]
        );
        Ok(())
    }

    #[test]
    fn on_demand_and_key_types_are_read_from_the_description() -> TestResult {
        let table = TableDescription::builder()
            .set_attribute_definitions(Some(vec![
                attribute("pk", ScalarAttributeType::S)?,
                attribute("sk", ScalarAttributeType::B)?,
            ]))
            .set_key_schema(Some(schema("pk", "sk")?))
            .billing_mode_summary(
                BillingModeSummary::builder()
                    .billing_mode(BillingMode::PayPerRequest)
                    .build(),
            )
            .provisioned_throughput(throughput(0, 0))
            .build();
        let extras = Extras {
            ttl_reported: true,
            ttl: ttl_attribute(Some(
                &TimeToLiveDescription::builder()
                    .time_to_live_status(TimeToLiveStatus::Disabled)
                    .attribute_name("expires")
                    .build(),
            )),
            point_in_time_recovery: Some(false),
            tags: Some(BTreeMap::new()),
        };
        let live = live_table(&table, extras)?;
        assert_eq!(live.definition.billing, Billing::PayPerRequest);
        assert_eq!(live.definition.ttl_attribute, None);
        let def = TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::S))
            .with_billing(Billing::Provisioned { read: 1, write: 1 });
        assert_eq!(
            def.drift(&live).drifts,
            [
                Drift::KeyAttributeType {
                    attribute: "sk".into(),
                    expected: KeyType::S,
                    actual: KeyType::B
                },
                Drift::Billing {
                    expected: Billing::Provisioned { read: 1, write: 1 },
                    actual: Billing::PayPerRequest
                },
            ]
        );
        Ok(())
    }

    #[test]
    fn a_gsi_being_deleted_is_missing() -> TestResult {
        let mut table = described()?;
        let gsis = table.global_secondary_indexes.take().unwrap_or_default();
        table.global_secondary_indexes = Some(
            gsis.into_iter()
                .map(|g| {
                    let mut g = g;
                    g.index_status = Some(aws::IndexStatus::Deleting);
                    g
                })
                .collect(),
        );
        let report = defined().drift(&live_table(&table, all_reported())?);
        assert_eq!(
            report.drifts,
            [Drift::MissingIndex {
                kind: IndexKind::Global,
                index: "byOwner".into()
            }]
        );
        Ok(())
    }

    #[test]
    fn a_key_without_an_attribute_definition_is_a_conversion_error() -> TestResult {
        let table = TableDescription::builder()
            .set_attribute_definitions(Some(vec![attribute("pk", ScalarAttributeType::S)?]))
            .set_key_schema(Some(schema("pk", "sk")?))
            .build();
        let e = live_table(&table, Extras::default())
            .err()
            .ok_or("a key without a type was accepted")?;
        assert_eq!(e.kind(), StoreErrorKind::Conversion);
        assert!(e.message().contains("`sk`"), "{e}");
        Ok(())
    }
}
