//! [`StreamReader`]: a table's stream over the `DynamoDB` Streams API, shard lineage followed
//! in order, resumable from a [`Checkpoint`] (feature `streams`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use aws_sdk_dynamodbstreams::Client;
use aws_sdk_dynamodbstreams::config::AsyncSleep;
use aws_sdk_dynamodbstreams::types::ShardIteratorType;
use serde::{Deserialize, Serialize};

use super::error::ChangeError;
use super::record::StreamRecord;
use crate::store::{DynamoStore, RetryPolicy, StoreError, StoreErrorKind, sdk_error};

/// Where a reader without a checkpoint begins.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum StartAt {
    /// At the oldest record the stream keeps (`TRIM_HORIZON`, up to 24 hours back).
    #[default]
    TrimHorizon,
    /// After the newest record: only changes made from now on (`LATEST`).
    Latest,
}

/// How far a reader got, per stream shard: serializable (JSON with `serde_json`), so a reader
/// stopped after any batch resumes where it left off with
/// [`StreamReader::resume_from`].
///
/// A shard is recorded as read up to a sequence number, as finished, or (for a reader that
/// started at [`StartAt::Latest`] and has read nothing from that shard yet) as "from the
/// latest record": resuming such a shard starts after its newest record again.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The stream the positions belong to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stream_arn: Option<String>,
    /// Position per shard id.
    #[serde(default)]
    shards: BTreeMap<String, Position>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Position {
    /// Not read yet: from the newest record on.
    Latest,
    /// Read up to and including this sequence number.
    After(String),
    /// Read to its end (a closed shard).
    Done,
}

impl Checkpoint {
    /// The stream this checkpoint is of, once a reader has opened it.
    pub fn stream_arn(&self) -> Option<&str> {
        self.stream_arn.as_deref()
    }

    /// Whether no shard has a position yet.
    pub fn is_empty(&self) -> bool {
        self.shards.is_empty()
    }

    /// The number of shards read to their end.
    pub fn finished_shards(&self) -> usize {
        self.shards
            .values()
            .filter(|p| matches!(p, Position::Done))
            .count()
    }
}

/// What went wrong while reading a stream.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// The table has no stream.
    #[error(
        "table `{table}` has no stream: give its definition a stream view (`TableDefinition::with_stream`) before creating it, or enable one on the table"
    )]
    NoStream {
        /// The table name.
        table: String,
    },

    /// The checkpoint belongs to another stream than the table's current one (the stream was
    /// disabled and enabled again, or the checkpoint is of another table).
    #[error(
        "the checkpoint is of stream {checkpoint}, but table `{table}` now streams to {current}; start a new checkpoint (the old stream's records are no longer read)"
    )]
    OtherStream {
        /// The table name.
        table: String,
        /// The checkpoint's stream ARN.
        checkpoint: String,
        /// The table's stream ARN.
        current: String,
    },

    /// Records the checkpoint has not read yet were trimmed from the stream (older than 24
    /// hours): reading on would lose them silently, so the reader stops.
    #[error(
        "records of stream shard `{shard}` after {position} are trimmed (older than the stream keeps); they are lost to this checkpoint: rebuild from a table scan, then start a new checkpoint"
    )]
    Trimmed {
        /// The shard id.
        shard: String,
        /// Where the checkpoint stood.
        position: String,
    },

    /// A record of the Streams API is not a `DynamoDB` stream record.
    #[error("stream shard `{shard}`: {source}")]
    Record {
        /// The shard id.
        shard: String,
        /// Why.
        #[source]
        source: ChangeError,
    },

    /// A Streams API call failed (after the retries of the store's policy); the store error
    /// names the call.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One shard as `DescribeStream` lists it.
#[derive(Clone, Debug)]
struct Shard {
    id: String,
    parent: Option<String>,
    closed: bool,
}

/// What one read of a shard gave.
enum ShardRead {
    Records(Vec<StreamRecord>),
    /// The shard is closed and read to its end.
    Ended,
    /// An open shard with nothing more for now.
    CaughtUp,
}

/// Pages of empty records a closed shard may return before its end, per poll.
const MAX_EMPTY_PAGES: usize = 1000;

/// A table's `DynamoDB` stream, read record by record in order: every shard after its parent
/// (so every item's changes arrive in the order they were made), each record once, resumable
/// from a [`Checkpoint`].
///
/// **Available with the `streams` feature.** Every call runs under the timeouts and retry
/// configuration of the store's client (see [`DynamoStore::with_timeouts`]); throttled,
/// transient and expired-iterator calls are retried under the store's [`RetryPolicy`].
///
/// ```no_run
/// # async fn run(store: entity_manager_core::store::DynamoStore) -> Result<(), Box<dyn std::error::Error>> {
/// use entity_manager_core::stream::{StartAt, StreamReader};
///
/// # let streams_config = aws_sdk_dynamodbstreams::Config::builder().build();
/// let streams = aws_sdk_dynamodbstreams::Client::from_conf(streams_config); // as the store's client
/// let mut reader = StreamReader::new(&store, streams).start_at(StartAt::TrimHorizon);
/// loop {
///     let records = reader.poll().await?;
///     if records.is_empty() {
///         break; // caught up; poll again later to follow the stream
///     }
///     // decode with `Change::decode`, handle, then save `reader.checkpoint()`
///     let _saved = serde_json::to_string(reader.checkpoint())?;
/// }
/// # Ok(()) }
/// # let _compiles = run;
/// ```
#[derive(Debug)]
pub struct StreamReader {
    streams: Client,
    dynamo: aws_sdk_dynamodb::Client,
    table_name: String,
    start: StartAt,
    retry: RetryPolicy,
    limit: Option<i32>,
    checkpoint: Checkpoint,
    /// The next shard iterator of each shard being read.
    iterators: HashMap<String, String>,
    /// The stream's shards, parents first, as last listed.
    shards: Option<Vec<Shard>>,
}

/// `streams` with the store client's timeouts, retry configuration, sleep and HTTP client
/// (one HTTP stack), unless its own configuration sets an operation timeout.
fn with_store_limits(store: &DynamoStore, streams: Client) -> Client {
    let bounded = streams
        .config()
        .timeout_config()
        .is_some_and(|t| t.operation_timeout().is_some());
    if bounded {
        return streams;
    }
    let from = store.client().config();
    let mut builder = streams.config().to_builder();
    builder
        .set_timeout_config(from.timeout_config().cloned())
        .set_retry_config(from.retry_config().cloned())
        .set_sleep_impl(from.sleep_impl())
        .set_http_client(from.http_client());
    Client::from_conf(builder.build())
}

impl StreamReader {
    /// The stream of the store's table, read through `streams`: a Streams client configured as
    /// the store's client is (region, credentials, endpoint; with `aws-config`,
    /// `aws_sdk_dynamodbstreams::Client::new(&sdk_config)` from the same `SdkConfig`;
    /// `DynamoDB` Local serves both APIs at one URL). Unless its configuration sets an
    /// operation timeout, it gets the store client's timeouts, retry configuration and HTTP
    /// client, so nothing hangs and there is one connection pool.
    pub fn new(store: &DynamoStore, streams: Client) -> Self {
        Self {
            streams: with_store_limits(store, streams),
            dynamo: store.client().clone(),
            table_name: store.table_name().to_owned(),
            start: StartAt::default(),
            retry: *store.retry_policy(),
            limit: None,
            checkpoint: Checkpoint::default(),
            iterators: HashMap::new(),
            shards: None,
        }
    }

    /// Where to begin without a checkpoint ([`StartAt::TrimHorizon`] by default).
    #[must_use]
    pub fn start_at(mut self, start: StartAt) -> Self {
        self.start = start;
        self
    }

    /// Resumes from a checkpoint saved earlier: every shard it knows is read on after its
    /// position; shards it does not know (created since) are read from their start.
    #[must_use]
    pub fn resume_from(mut self, checkpoint: Checkpoint) -> Self {
        self.checkpoint = checkpoint;
        self.iterators.clear();
        self.shards = None;
        self
    }

    /// The most records one `GetRecords` call returns (1 to 1,000; `DynamoDB`'s default
    /// 1,000 when unset).
    #[must_use]
    pub fn limit(mut self, limit: u16) -> Self {
        self.limit = Some(i32::from(limit.clamp(1, 1000)));
        self
    }

    /// How far the reader got: every record returned so far is covered. Save it after
    /// handling a batch; resuming from it gives the records after that batch.
    pub fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    /// The next records: one `GetRecords` page of the first shard (in lineage order) that has
    /// any, or an empty batch when every shard is caught up for now (poll again later to
    /// follow the stream). The checkpoint covers the batch returned.
    pub async fn poll(&mut self) -> Result<Vec<StreamRecord>, StreamError> {
        loop {
            let (arn, shards) = match (&self.checkpoint.stream_arn, &self.shards) {
                (Some(arn), Some(shards)) => (arn.clone(), shards.clone()),
                _ => self.refresh().await?,
            };
            let listed: HashSet<&str> = shards.iter().map(|s| s.id.as_str()).collect();
            let mut ended = false;
            for shard in &shards {
                if self.is_done(&shard.id) {
                    continue;
                }
                // a child waits until its parent (when the stream still lists it) is read
                let parent_pending = shard
                    .parent
                    .as_deref()
                    .is_some_and(|p| listed.contains(p) && !self.is_done(p));
                if parent_pending {
                    continue;
                }
                match self.read_shard(&arn, shard).await? {
                    ShardRead::Records(records) => {
                        if self.is_done(&shard.id) {
                            // its last page: its children may be listed now
                            self.shards = None;
                        }
                        return Ok(records);
                    }
                    ShardRead::Ended => {
                        self.checkpoint
                            .shards
                            .insert(shard.id.clone(), Position::Done);
                        self.iterators.remove(&shard.id);
                        ended = true;
                        break;
                    }
                    ShardRead::CaughtUp => {}
                }
            }
            if !ended {
                return Ok(Vec::new());
            }
            // a shard ended: list the shards again, for the children that follow it
            self.shards = None;
        }
    }

    /// Reads the table's stream ARN and lists its shards (the first time, and after a shard
    /// ended: `DescribeStream` is limited to a few calls a second, so it is not called per
    /// page).
    async fn refresh(&mut self) -> Result<(String, Vec<Shard>), StreamError> {
        let arn = self.stream_arn().await?;
        let shards = self.describe(&arn).await?;
        if self.checkpoint.shards.is_empty() && self.start == StartAt::Latest {
            // the records before now are skipped: closed shards entirely, open ones up to
            // their newest record
            for shard in &shards {
                let position = if shard.closed {
                    Position::Done
                } else {
                    Position::Latest
                };
                self.checkpoint.shards.insert(shard.id.clone(), position);
            }
        }
        self.shards = Some(shards.clone());
        Ok((arn, shards))
    }

    /// Every record available now: [`poll`](Self::poll) until a poll returns nothing.
    pub async fn read_available(&mut self) -> Result<Vec<StreamRecord>, StreamError> {
        let mut all = Vec::new();
        loop {
            let batch = self.poll().await?;
            if batch.is_empty() {
                return Ok(all);
            }
            all.extend(batch);
        }
    }

    fn is_done(&self, shard: &str) -> bool {
        matches!(self.checkpoint.shards.get(shard), Some(Position::Done))
    }

    /// The table's current stream ARN, checked against the checkpoint's.
    async fn stream_arn(&mut self) -> Result<String, StreamError> {
        let table = self
            .retrying(|| async {
                self.dynamo
                    .describe_table()
                    .table_name(&self.table_name)
                    .send()
                    .await
                    .map_err(|e| sdk_error("DescribeTable", e))
            })
            .await?;
        let current = table
            .table
            .and_then(|t| {
                let enabled = t
                    .stream_specification
                    .as_ref()
                    .is_some_and(|s| s.stream_enabled);
                t.latest_stream_arn.filter(|_| enabled)
            })
            .ok_or_else(|| StreamError::NoStream {
                table: self.table_name.clone(),
            })?;
        match &self.checkpoint.stream_arn {
            Some(saved) if *saved != current => Err(StreamError::OtherStream {
                table: self.table_name.clone(),
                checkpoint: saved.clone(),
                current,
            }),
            _ => {
                self.checkpoint.stream_arn = Some(current.clone());
                Ok(current)
            }
        }
    }

    /// Every shard of the stream, parents before children.
    async fn describe(&self, arn: &str) -> Result<Vec<Shard>, StreamError> {
        let mut shards = Vec::new();
        let mut start: Option<String> = None;
        loop {
            let out = self
                .retrying(|| async {
                    self.streams
                        .describe_stream()
                        .stream_arn(arn)
                        .set_exclusive_start_shard_id(start.clone())
                        .send()
                        .await
                        .map_err(|e| sdk_error("DescribeStream", e))
                })
                .await?;
            let Some(description) = out.stream_description else {
                break;
            };
            for shard in description.shards.unwrap_or_default() {
                let Some(id) = shard.shard_id else { continue };
                shards.push(Shard {
                    id,
                    parent: shard.parent_shard_id,
                    closed: shard
                        .sequence_number_range
                        .is_some_and(|r| r.ending_sequence_number.is_some()),
                });
            }
            match description.last_evaluated_shard_id {
                Some(last) if start.as_deref() != Some(&last) => start = Some(last),
                _ => break,
            }
        }
        Ok(lineage_order(shards))
    }

    /// A fresh iterator for `shard` at its checkpoint position.
    async fn iterator(&self, arn: &str, shard: &str) -> Result<Option<String>, StreamError> {
        let (kind, sequence) = match self.checkpoint.shards.get(shard) {
            Some(Position::After(seq)) => {
                (ShardIteratorType::AfterSequenceNumber, Some(seq.clone()))
            }
            Some(Position::Latest) => (ShardIteratorType::Latest, None),
            Some(Position::Done) => return Ok(None),
            None => (ShardIteratorType::TrimHorizon, None),
        };
        let out = self
            .retrying(|| async {
                self.streams
                    .get_shard_iterator()
                    .stream_arn(arn)
                    .shard_id(shard)
                    .shard_iterator_type(kind.clone())
                    .set_sequence_number(sequence.clone())
                    .send()
                    .await
                    .map_err(|e| sdk_error("GetShardIterator", e))
            })
            .await
            .map_err(|e| self.trimmed(shard, e))?;
        Ok(out.shard_iterator)
    }

    /// The next page of `shard` that has records, or how the shard stands.
    async fn read_shard(&mut self, arn: &str, shard: &Shard) -> Result<ShardRead, StreamError> {
        let mut empty_pages = 0;
        let mut expired = 0;
        loop {
            let iterator = match self.iterators.get(&shard.id) {
                Some(it) => it.clone(),
                None => match self.iterator(arn, &shard.id).await? {
                    Some(it) => it,
                    None => return Ok(ShardRead::Ended),
                },
            };
            let result = self
                .retrying(|| async {
                    self.streams
                        .get_records()
                        .shard_iterator(&iterator)
                        .set_limit(self.limit)
                        .send()
                        .await
                        .map_err(|e| sdk_error("GetRecords", e))
                })
                .await;
            let out = match result {
                Ok(out) => out,
                Err(e)
                    if e.code() == Some("ExpiredIteratorException")
                        && expired < self.retry.max_attempts.max(1) =>
                {
                    // iterators live 15 minutes: take a new one at the checkpoint
                    expired += 1;
                    self.iterators.remove(&shard.id);
                    continue;
                }
                Err(e) => return Err(self.trimmed(&shard.id, e)),
            };
            let mut records = Vec::new();
            for record in out.records.unwrap_or_default() {
                let record =
                    StreamRecord::try_from(record).map_err(|source| StreamError::Record {
                        shard: shard.id.clone(),
                        source,
                    })?;
                records.push(record);
            }
            match out.next_shard_iterator {
                Some(next) => {
                    self.iterators.insert(shard.id.clone(), next);
                }
                None => {
                    self.iterators.remove(&shard.id);
                }
            }
            let ended = !self.iterators.contains_key(&shard.id);
            if let Some(last) = records.iter().rev().find_map(|r| r.sequence_number.clone()) {
                let position = if ended {
                    Position::Done
                } else {
                    Position::After(last)
                };
                self.checkpoint.shards.insert(shard.id.clone(), position);
            }
            if !records.is_empty() {
                return Ok(ShardRead::Records(records));
            }
            if ended {
                return Ok(ShardRead::Ended);
            }
            empty_pages += 1;
            if !shard.closed || empty_pages >= MAX_EMPTY_PAGES {
                return Ok(ShardRead::CaughtUp);
            }
        }
    }

    /// A `TrimmedDataAccessException` as [`StreamError::Trimmed`]; other errors as they are.
    fn trimmed(&self, shard: &str, e: StoreError) -> StreamError {
        if e.code() == Some("TrimmedDataAccessException") {
            StreamError::Trimmed {
                shard: shard.to_owned(),
                position: match self.checkpoint.shards.get(shard) {
                    Some(Position::After(seq)) => format!("sequence number {seq}"),
                    _ => "its start".to_owned(),
                },
            }
        } else {
            StreamError::Store(e)
        }
    }

    /// `call`, retried under the store's policy while it fails with a throttle, a transient
    /// error or a timeout.
    async fn retrying<T, F, Fut>(&self, call: F) -> Result<T, StoreError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, StoreError>>,
    {
        let mut attempt = 1;
        loop {
            match call().await {
                Ok(out) => return Ok(out),
                Err(e)
                    if attempt < self.retry.max_attempts.max(1)
                        && matches!(
                            e.kind(),
                            StoreErrorKind::Throttled
                                | StoreErrorKind::Transient
                                | StoreErrorKind::Timeout
                        ) =>
                {
                    self.sleep(
                        self.retry
                            .backoff(attempt, u64::from(attempt) * 0x9e37_79b9),
                    )
                    .await;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn sleep(&self, delay: Duration) {
        if let Some(sleep) = self.streams.config().sleep_impl() {
            sleep.sleep(delay).await;
        }
    }
}

/// Shards ordered so that every parent comes before its children (and otherwise by id, which
/// in `DynamoDB` begins with the shard's creation time).
fn lineage_order(mut shards: Vec<Shard>) -> Vec<Shard> {
    shards.sort_by(|a, b| a.id.cmp(&b.id));
    let mut ordered: Vec<Shard> = Vec::with_capacity(shards.len());
    let mut placed: HashSet<String> = HashSet::new();
    let ids: HashSet<String> = shards.iter().map(|s| s.id.clone()).collect();
    while !shards.is_empty() {
        let before = shards.len();
        shards.retain(|s| {
            let ready = s
                .parent
                .as_ref()
                .is_none_or(|p| !ids.contains(p) || placed.contains(p));
            if ready {
                placed.insert(s.id.clone());
                ordered.push(s.clone());
            }
            !ready
        });
        if shards.len() == before {
            // a cycle (never in `DynamoDB`): keep the rest by id rather than loop
            ordered.append(&mut shards);
        }
    }
    ordered
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(id: &str, parent: Option<&str>) -> Shard {
        Shard {
            id: id.to_owned(),
            parent: parent.map(str::to_owned),
            closed: false,
        }
    }

    #[test]
    fn parents_come_before_children() {
        // ids sort the children first, lineage puts them after their parents
        let shards = vec![
            shard("a-child", Some("z-parent")),
            shard("b-grandchild", Some("a-child")),
            shard("z-parent", None),
            shard("m-orphan", Some("trimmed")),
        ];
        let order: Vec<String> = lineage_order(shards).into_iter().map(|s| s.id).collect();
        let at = |id: &str| order.iter().position(|s| s == id);
        assert!(at("z-parent") < at("a-child"));
        assert!(at("a-child") < at("b-grandchild"));
        assert_eq!(order.len(), 4);
    }

    #[test]
    fn checkpoint_round_trips_as_json() -> Result<(), serde_json::Error> {
        let mut checkpoint = Checkpoint {
            stream_arn: Some("arn:aws:dynamodb:local:stream".into()),
            shards: BTreeMap::new(),
        };
        checkpoint
            .shards
            .insert("s1".into(), Position::After("000123".into()));
        checkpoint.shards.insert("s0".into(), Position::Done);
        checkpoint.shards.insert("s2".into(), Position::Latest);
        let text = serde_json::to_string(&checkpoint)?;
        let back: Checkpoint = serde_json::from_str(&text)?;
        assert_eq!(back, checkpoint);
        assert_eq!(back.finished_shards(), 1);
        Ok(())
    }
}
