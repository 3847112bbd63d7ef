//! The control plane of [`DynamoStore`]: creating, describing, stamping and deleting its table
//! (`CreateTable` with its follow-up calls, `DescribeTable` and the calls beside it for the drift
//! check, `DeleteTable`). The data plane is `mod.rs`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{
    self as aws, AttributeDefinition, BillingMode, GlobalSecondaryIndex, IndexStatus,
    KeySchemaElement, LocalSecondaryIndex, PointInTimeRecoverySpecification,
    PointInTimeRecoveryStatus, ProjectionType, ProvisionedThroughput, ScalarAttributeType,
    StreamSpecification, StreamViewType, TableStatus, Tag, TimeToLiveSpecification,
};

use super::convert::{build_error, sdk_error};
use super::{DynamoStore, describe};
use crate::store::stamp;
use crate::store::{
    Billing, Capacity, DriftReport, Expect, KeyType, LiveTable, StoreError, StoreErrorKind,
    TableDefinition,
};
use crate::table::KeyAttribute;

impl DynamoStore {
    /// Creates the table from its definition and waits until the table and every index are
    /// `ACTIVE`: one `CreateTable` (attribute definitions, key schema, every GSI and LSI with
    /// its projection, the billing mode and capacities, the stream, deletion protection and
    /// tags), then `UpdateTimeToLive` when the definition has a TTL attribute and
    /// `UpdateContinuousBackups` when it asks for point-in-time recovery, since `DynamoDB` sets
    /// those two by separate calls only.
    ///
    /// When the definition has a [`TableStamp`](crate::store::TableStamp) (one from
    /// [`TableDefinition::from_schema`]), the stamp item is written once the table is active.
    ///
    /// Fails with [`StoreError::is_resource_in_use`] if the table exists, with
    /// [`StoreError::is_validation`] if the definition is invalid
    /// ([`TableDefinition::validate`]; nothing is created then). When a follow-up call fails,
    /// the table exists without that setting and the error says so; its
    /// [`code`](StoreError::code) is `UnknownOperationException` on an endpoint that does not
    /// implement the call (`DynamoDB` Local has no point-in-time recovery, and ignores the
    /// tags of `CreateTable`).
    pub async fn create_table(&self) -> Result<(), StoreError> {
        const OP: &str = "CreateTable";
        let def = &self.definition;
        def.validate()
            .map_err(|e| StoreError::validation(OP, e.to_string()).with_source(e))?;
        let attributes = def
            .attribute_definitions()
            .map_err(|e| StoreError::validation(OP, e.to_string()).with_source(e))?
            .into_iter()
            .map(|a| {
                AttributeDefinition::builder()
                    .attribute_name(a.name)
                    .attribute_type(scalar_type(a.key_type))
                    .build()
                    .map_err(|e| build_error(OP, e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let (gsis, lsis) = index_requests(def)?;
        let stream = def
            .stream
            .map(|view| {
                StreamSpecification::builder()
                    .stream_enabled(true)
                    .stream_view_type(StreamViewType::from(view.as_str()))
                    .build()
                    .map_err(|e| build_error(OP, e))
            })
            .transpose()?;
        let tags = def
            .tags
            .iter()
            .map(|(k, v)| {
                Tag::builder()
                    .key(k)
                    .value(v)
                    .build()
                    .map_err(|e| build_error(OP, e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.client
            .create_table()
            .table_name(&self.table_name)
            .set_attribute_definitions(Some(attributes))
            .set_key_schema(Some(key_schema(&[&def.hash_key], &[&def.range_key])?))
            .set_global_secondary_indexes((!gsis.is_empty()).then_some(gsis))
            .set_local_secondary_indexes((!lsis.is_empty()).then_some(lsis))
            .billing_mode(match def.billing {
                Billing::PayPerRequest => BillingMode::PayPerRequest,
                Billing::Provisioned { .. } => BillingMode::Provisioned,
            })
            .set_provisioned_throughput(throughput(OP, def.billing.capacity())?)
            .set_stream_specification(stream)
            .deletion_protection_enabled(def.deletion_protection)
            .set_tags((!tags.is_empty()).then_some(tags))
            .send()
            .await
            .map_err(|e| sdk_error(OP, e))?;
        self.wait_until_active().await?;
        if let Some(stamp) = def.stamp.as_ref().filter(|_| crate::table::stampable(def)) {
            self.put(stamp.to_item(def), Expect::Any, false)
                .await
                .map_err(|e| self.created_without("PutItem", "its stamp", &e))?;
        }
        if let Some(attribute) = &def.ttl_attribute {
            self.enable_ttl(attribute).await?;
        }
        if def.point_in_time_recovery {
            self.enable_point_in_time_recovery().await?;
        }
        Ok(())
    }

    /// `UpdateTimeToLive`, after `CreateTable`.
    async fn enable_ttl(&self, attribute: &str) -> Result<(), StoreError> {
        const OP: &str = "UpdateTimeToLive";
        let spec = TimeToLiveSpecification::builder()
            .enabled(true)
            .attribute_name(attribute)
            .build()
            .map_err(|e| build_error(OP, e))?;
        self.client
            .update_time_to_live()
            .table_name(&self.table_name)
            .time_to_live_specification(spec)
            .send()
            .await
            .map_err(|e| self.created_without(OP, "Time to Live", &sdk_error(OP, e)))?;
        Ok(())
    }

    /// `UpdateContinuousBackups`, after `CreateTable`. Continuous backups take a moment to
    /// become available on a new table: `ContinuousBackupsUnavailableException` is retried
    /// within the table wait.
    async fn enable_point_in_time_recovery(&self) -> Result<(), StoreError> {
        const OP: &str = "UpdateContinuousBackups";
        let spec = PointInTimeRecoverySpecification::builder()
            .point_in_time_recovery_enabled(true)
            .build()
            .map_err(|e| build_error(OP, e))?;
        let started = Instant::now();
        let mut delay = Duration::from_millis(200);
        loop {
            let result = self
                .client
                .update_continuous_backups()
                .table_name(&self.table_name)
                .point_in_time_recovery_specification(spec.clone())
                .send()
                .await;
            let Err(e) = result else {
                return Ok(());
            };
            let e = sdk_error(OP, e);
            if e.code() != Some("ContinuousBackupsUnavailableException")
                || started.elapsed() >= self.table_wait
            {
                return Err(self.created_without(OP, "point-in-time recovery", &e));
            }
            self.sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
    }

    /// The error of a follow-up call of `create_table`: the table exists without `setting`.
    fn created_without(&self, op: &'static str, setting: &str, e: &StoreError) -> StoreError {
        let error = StoreError::new(
            e.kind(),
            op,
            format!(
                "table `{}` was created, but {setting} could not be turned on ({}); turn it on by hand or delete the table and retry",
                self.table_name,
                e.message()
            ),
        );
        match e.code() {
            Some(code) => error.with_code(code),
            None => error,
        }
    }

    /// The stamp the table holds ([`TableStamp`](crate::store::TableStamp)), read consistently, or
    /// `None` for a table without one. A stamp this release cannot read is an error of kind
    /// [`StoreErrorKind::Other`] saying why.
    pub async fn table_stamp(&self) -> Result<Option<crate::store::TableStamp>, StoreError> {
        stamp::stamp_of(self.read_stamp_item().await?)
    }

    /// Writes the stamp of this store's definition to an existing table (one created by a
    /// TypeScript service, or before stamps existed) and returns it. A table already stamped
    /// with other settings is left alone with an error saying what to do, unless `force` (after
    /// its records were migrated to this store's settings). Re-stamping with the same settings
    /// records a changed configuration.
    ///
    /// Fails with [`StoreError::is_validation`] when the definition has no stamp (build it
    /// with [`TableDefinition::from_schema`]).
    pub async fn stamp_table(&self, force: bool) -> Result<crate::store::TableStamp, StoreError> {
        let found = self.read_stamp_item().await?;
        let (stamp, item) =
            stamp::stamp_to_write(&self.definition, &self.table_name, found.as_ref(), force)?;
        if found.is_none() && !force {
            // a table without a stamp: its records decide, as for a write
            let inference = self.infer_profile().await?;
            stamp::refuse_stamp_against(&self.definition, &self.table_name, &inference)?;
        }
        self.put(item, Expect::Any, false).await?;
        self.stamp_guard.expire();
        Ok(stamp)
    }

    /// Which profile made the keys of the table's records, from a sample of them (one scan page
    /// of up to [`SAMPLE_PER_ENTITY`](crate::store::SAMPLE_PER_ENTITY) items per entity, at
    /// most [`SAMPLE_MAX`](crate::store::SAMPLE_MAX)): [`Schema::infer_profile`](crate::Schema::infer_profile)
    /// with the schema of this store's definition. What a store does with it on a table without
    /// a stamp is in the README ("A table without a stamp").
    ///
    /// Fails with [`StoreError::is_validation`] when the definition was not made from a schema
    /// ([`TableDefinition::from_schema`]).
    pub async fn infer_profile(&self) -> Result<crate::store::Inference, StoreError> {
        let limit = stamp::sample_limit(&self.definition);
        let sample = stamp::StampIo::sample(self, limit).await?;
        stamp::infer(&self.definition, &sample)
    }

    /// The live table: `DescribeTable`, `DescribeTimeToLive`, `DescribeContinuousBackups` and
    /// `ListTagsOfResource`, as a [`LiveTable`] for [`TableDefinition::drift`]. A call the
    /// endpoint does not implement (`UnknownOperationException`: on `DynamoDB` Local, point-in-time
    /// recovery and tags) leaves its setting in [`LiveTable::unreported`]; any other failure is
    /// an error.
    pub async fn describe_table(&self) -> Result<LiveTable, StoreError> {
        let out = self
            .client
            .describe_table()
            .table_name(&self.table_name)
            .send()
            .await
            .map_err(|e| sdk_error("DescribeTable", e))?;
        let Some(table) = out.table() else {
            return Err(StoreError::new(
                StoreErrorKind::Other,
                "DescribeTable",
                format!("DescribeTable of `{}` returned no table", self.table_name),
            ));
        };
        let mut extras = describe::Extras::default();
        match self
            .client
            .describe_time_to_live()
            .table_name(&self.table_name)
            .send()
            .await
        {
            Ok(out) => {
                extras.ttl_reported = true;
                extras.ttl = describe::ttl_attribute(out.time_to_live_description());
            }
            Err(e) => unsupported(sdk_error("DescribeTimeToLive", e))?,
        }
        match self
            .client
            .describe_continuous_backups()
            .table_name(&self.table_name)
            .send()
            .await
        {
            Ok(out) => {
                extras.point_in_time_recovery = Some(
                    out.continuous_backups_description()
                        .and_then(
                            aws::ContinuousBackupsDescription::point_in_time_recovery_description,
                        )
                        .and_then(
                            aws::PointInTimeRecoveryDescription::point_in_time_recovery_status,
                        )
                        == Some(&PointInTimeRecoveryStatus::Enabled),
                );
            }
            Err(e) => unsupported(sdk_error("DescribeContinuousBackups", e))?,
        }
        if let Some(arn) = table.table_arn() {
            extras.tags = self.tags(arn).await?;
        }
        describe::live_table(table, extras)
    }

    /// The tags of the resource, or `None` when the endpoint does not implement tagging.
    async fn tags(&self, arn: &str) -> Result<Option<BTreeMap<String, String>>, StoreError> {
        const OP: &str = "ListTagsOfResource";
        let mut tags = BTreeMap::new();
        let mut next: Option<String> = None;
        loop {
            let out = match self
                .client
                .list_tags_of_resource()
                .resource_arn(arn)
                .set_next_token(next.take())
                .send()
                .await
            {
                Ok(out) => out,
                Err(e) => {
                    unsupported(sdk_error(OP, e))?;
                    return Ok(None);
                }
            };
            for tag in out.tags() {
                tags.insert(tag.key().to_owned(), tag.value().to_owned());
            }
            match out.next_token() {
                Some(token) => next = Some(token.to_owned()),
                None => return Ok(Some(tags)),
            }
        }
    }

    /// How the live table differs from this store's definition:
    /// [`describe_table`](Self::describe_table), then [`TableDefinition::drift`].
    pub async fn drift(&self) -> Result<DriftReport, StoreError> {
        Ok(self.definition.drift(&self.describe_table().await?))
    }

    /// Waits until the table and every GSI are `ACTIVE`.
    pub async fn wait_until_active(&self) -> Result<(), StoreError> {
        const OP: &str = "DescribeTable";
        let started = Instant::now();
        let mut delay = Duration::from_millis(20);
        loop {
            let out = self
                .client
                .describe_table()
                .table_name(&self.table_name)
                .send()
                .await
                .map_err(|e| sdk_error(OP, e))?;
            if let Some(table) = out.table()
                && table.table_status() == Some(&TableStatus::Active)
                && table
                    .global_secondary_indexes()
                    .iter()
                    .all(|g| g.index_status() == Some(&IndexStatus::Active))
            {
                return Ok(());
            }
            if started.elapsed() >= self.table_wait {
                return Err(StoreError::new(
                    StoreErrorKind::Transient,
                    OP,
                    format!(
                        "table `{}` or one of its indexes is not ACTIVE after {:?}",
                        self.table_name, self.table_wait
                    ),
                ));
            }
            self.sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
    }

    /// Deletes the table (and every item in it).
    pub async fn delete_table(&self) -> Result<(), StoreError> {
        self.client
            .delete_table()
            .table_name(&self.table_name)
            .send()
            .await
            .map_err(|e| sdk_error("DeleteTable", e))?;
        Ok(())
    }
}

/// The GSIs and LSIs of a `CreateTable` request.
fn index_requests(
    def: &TableDefinition,
) -> Result<(Vec<GlobalSecondaryIndex>, Vec<LocalSecondaryIndex>), StoreError> {
    const OP: &str = "CreateTable";
    let projection = |keys: &[&KeyAttribute], p| {
        aws::Projection::builder()
            .projection_type(ProjectionType::from(def.projection_type_of(keys, p)))
            .set_non_key_attributes(def.non_key_of(keys, p))
            .build()
    };
    let mut gsis = Vec::with_capacity(def.indexes.len());
    for index in &def.indexes {
        gsis.push(
            GlobalSecondaryIndex::builder()
                .index_name(&index.name)
                .set_key_schema(Some(key_schema(&index.hash_keys(), &index.range_keys())?))
                .projection(projection(&index.key_attributes(), &index.projection))
                .set_provisioned_throughput(throughput(OP, def.index_capacity(index))?)
                .build()
                .map_err(|e| build_error(OP, e))?,
        );
    }
    let mut lsis = Vec::with_capacity(def.local_indexes.len());
    for index in &def.local_indexes {
        lsis.push(
            LocalSecondaryIndex::builder()
                .index_name(&index.name)
                .set_key_schema(Some(key_schema(&[&index.hash_key], &[&index.range_key])?))
                .projection(projection(
                    &[&index.hash_key, &index.range_key],
                    &index.projection,
                ))
                .build()
                .map_err(|e| build_error(OP, e))?,
        );
    }
    Ok((gsis, lsis))
}

/// The provisioned throughput of a capacity.
fn throughput(
    op: &'static str,
    c: Option<Capacity>,
) -> Result<Option<ProvisionedThroughput>, StoreError> {
    c.map(|c| {
        ProvisionedThroughput::builder()
            .read_capacity_units(c.read)
            .write_capacity_units(c.write)
            .build()
            .map_err(|e| build_error(op, e))
    })
    .transpose()
}

/// `Ok` when the error says the endpoint does not implement the call, else the error.
fn unsupported(e: StoreError) -> Result<(), StoreError> {
    if e.code() == Some(describe::UNKNOWN_OPERATION) {
        Ok(())
    } else {
        Err(e)
    }
}

fn scalar_type(key_type: KeyType) -> ScalarAttributeType {
    match key_type {
        KeyType::S => ScalarAttributeType::S,
        KeyType::N => ScalarAttributeType::N,
        KeyType::B => ScalarAttributeType::B,
    }
}

/// The key schema of the table or of a GSI: every partition attribute (`HASH`), then every sort
/// attribute (`RANGE`), in key order.
fn key_schema(
    hash: &[&KeyAttribute],
    range: &[&KeyAttribute],
) -> Result<Vec<KeySchemaElement>, StoreError> {
    hash.iter()
        .map(|a| (a, aws::KeyType::Hash))
        .chain(range.iter().map(|a| (a, aws::KeyType::Range)))
        .map(|(attribute, key_type)| {
            KeySchemaElement::builder()
                .attribute_name(&attribute.name)
                .key_type(key_type)
                .build()
                .map_err(|e| build_error("CreateTable", e))
        })
        .collect()
}
