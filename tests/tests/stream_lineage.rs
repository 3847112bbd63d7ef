//! `StreamReader` against a scripted Streams endpoint on loopback: a parent shard (closed)
//! whose id sorts after its child's, an expired iterator on the way, and a trimmed shard. The
//! reader returns the parent's records before the child's (so one item's changes stay in
//! order), renews the expired iterator without losing or doubling a record, resumes from a
//! checkpoint taken between the two shards, and stops with a typed error at trimmed data.

use std::sync::{Arc, Mutex};

use entity_manager::store::{DynamoStore, StreamView, TableDefinition};
use entity_manager::stream::{
    Change, ChangeKind, Checkpoint, StreamError, StreamReader, StreamRecord,
};
use entity_manager::{EntityExt, Item, Table};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

mod stream_support;
use stream_support::{Shop, ShopRecord, account, record};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Each change's kind and, for a new image, the account's score.
type Scores = Vec<(ChangeKind, Option<i64>)>;

const ARN: &str =
    "arn:aws:dynamodb:us-east-1:000000000000:table/shop/stream/2026-01-01T00:00:00.000";

/// The scripted stream: shards (id, parent, closed) with their records, and which calls fail.
struct Script {
    shards: Vec<(&'static str, Option<&'static str>, bool, Vec<Value>)>,
    /// Iterators that answer `ExpiredIteratorException` once.
    expire_once: Vec<String>,
    /// Shards whose iterators are refused as trimmed.
    trimmed: Vec<&'static str>,
    calls: Vec<String>,
}

fn error(kind: &str) -> (u16, Value) {
    (
        400,
        json!({ "__type": format!("com.amazonaws.dynamodb.v20120810#{kind}"), "message": kind }),
    )
}

impl Script {
    fn answer(&mut self, target: &str, body: &Value) -> (u16, Value) {
        self.calls.push(target.to_owned());
        match target {
            "DynamoDB_20120810.DescribeTable" => (
                200,
                json!({ "Table": {
                    "TableName": body["TableName"],
                    "StreamSpecification": { "StreamEnabled": true, "StreamViewType": "NEW_AND_OLD_IMAGES" },
                    "LatestStreamArn": ARN,
                }}),
            ),
            "DynamoDBStreams_20120810.DescribeStream" => {
                let shards: Vec<Value> = self.shards.iter().map(|(id, parent, closed, records)| {
                    let mut range = json!({ "StartingSequenceNumber": records.first().map_or(json!("0"), |r| r["dynamodb"]["SequenceNumber"].clone()) });
                    if *closed {
                        range["EndingSequenceNumber"] = records.last().map_or(json!("0"), |r| r["dynamodb"]["SequenceNumber"].clone());
                    }
                    let mut shard = json!({ "ShardId": id, "SequenceNumberRange": range });
                    if let Some(parent) = parent {
                        shard["ParentShardId"] = json!(parent);
                    }
                    shard
                }).collect();
                (
                    200,
                    json!({ "StreamDescription": { "StreamArn": ARN, "StreamStatus": "ENABLED", "Shards": shards } }),
                )
            }
            "DynamoDBStreams_20120810.GetShardIterator" => {
                let shard = body["ShardId"].as_str().unwrap_or_default();
                if self.trimmed.contains(&shard) {
                    return error("TrimmedDataAccessException");
                }
                let Some((_, _, _, records)) = self.shards.iter().find(|s| s.0 == shard) else {
                    return error("ResourceNotFoundException");
                };
                let at = match (
                    body["ShardIteratorType"].as_str(),
                    body["SequenceNumber"].as_str(),
                ) {
                    (Some("TRIM_HORIZON"), _) => 0,
                    (Some("LATEST"), _) => records.len(),
                    (Some("AFTER_SEQUENCE_NUMBER"), Some(seq)) => records
                        .iter()
                        .position(|r| r["dynamodb"]["SequenceNumber"] == json!(seq))
                        .map_or(0, |i| i + 1),
                    _ => return error("ValidationException"),
                };
                (200, json!({ "ShardIterator": format!("{shard}|{at}") }))
            }
            "DynamoDBStreams_20120810.GetRecords" => {
                let iterator = body["ShardIterator"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                if let Some(i) = self.expire_once.iter().position(|e| *e == iterator) {
                    self.expire_once.remove(i);
                    return error("ExpiredIteratorException");
                }
                let Some((shard, at)) = iterator.split_once('|') else {
                    return error("ValidationException");
                };
                let at: usize = at.parse().unwrap_or(0);
                let limit = body["Limit"]
                    .as_u64()
                    .map_or(1000, |l| usize::try_from(l).unwrap_or(1000));
                let Some((_, _, closed, records)) = self.shards.iter().find(|s| s.0 == shard)
                else {
                    return error("ResourceNotFoundException");
                };
                let page: Vec<Value> = records.iter().skip(at).take(limit).cloned().collect();
                let next = at + page.len();
                let mut out = json!({ "Records": page });
                if !(*closed && next >= records.len() && page.is_empty()) {
                    out["NextShardIterator"] = json!(format!("{shard}|{next}"));
                }
                (200, out)
            }
            other => error(&format!("UnknownOperationException {other}")),
        }
    }
}

/// Serves `script` on loopback; returns the endpoint.
async fn serve(script: Arc<Mutex<Script>>) -> Result<String, std::io::Error> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let endpoint = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let script = script.clone();
            tokio::spawn(async move {
                let (read, mut write) = socket.into_split();
                let mut read = BufReader::new(read);
                loop {
                    let (mut target, mut length) = (String::new(), 0usize);
                    loop {
                        let mut line = String::new();
                        if read.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        let line = line.trim_end();
                        if line.is_empty() {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':') {
                            match name.to_ascii_lowercase().as_str() {
                                "x-amz-target" => target = value.trim().to_owned(),
                                "content-length" => length = value.trim().parse().unwrap_or(0),
                                _ => {}
                            }
                        }
                    }
                    let mut body = vec![0; length];
                    if read.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let (status, answer) = match script.lock() {
                        Ok(mut s) => s.answer(&target, &body),
                        Err(_) => return,
                    };
                    let text = answer.to_string();
                    let response = format!(
                        "HTTP/1.1 {status} {}\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: {}\r\n\r\n{text}",
                        if status == 200 { "OK" } else { "Bad Request" },
                        text.len()
                    );
                    if write.write_all(response.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    Ok(endpoint)
}

/// A record of the Streams API on the wire, from a `StreamRecord`.
fn wire(record: &StreamRecord, seq: u64) -> Value {
    let mut change = json!({
        "Keys": record.keys,
        "SequenceNumber": seq.to_string(),
        "SizeBytes": 100,
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    });
    if let Some(old) = &record.old_image {
        change["OldImage"] = json!(old);
    }
    if let Some(new) = &record.new_image {
        change["NewImage"] = json!(new);
    }
    json!({ "eventID": format!("e{seq}"), "eventName": record.kind.as_str(), "eventSource": "aws:dynamodb", "awsRegion": "us-east-1", "dynamodb": change })
}

fn clients(endpoint: &str) -> (aws_sdk_dynamodb::Client, aws_sdk_dynamodbstreams::Client) {
    use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    let dynamo = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("local", "local", None, None, "static"))
        .build();
    let streams = aws_sdk_dynamodbstreams::Config::builder()
        .behavior_version(aws_sdk_dynamodbstreams::config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("local", "local", None, None, "static"))
        .build();
    (
        aws_sdk_dynamodb::Client::from_conf(dynamo),
        aws_sdk_dynamodbstreams::Client::from_conf(streams),
    )
}

/// Four versions of one account: insert and modify in the parent shard, modify and remove in
/// the child.
fn history() -> Result<Vec<StreamRecord>, Box<dyn std::error::Error>> {
    let v: Vec<Item> = (0..3)
        .map(|i| account("a1", 500, i).to_item())
        .collect::<Result<_, _>>()?;
    Ok(vec![
        record(
            ChangeKind::Insert,
            None,
            Some(&v[0]),
            StreamView::NewAndOldImages,
            0,
        ),
        record(
            ChangeKind::Modify,
            Some(&v[0]),
            Some(&v[1]),
            StreamView::NewAndOldImages,
            0,
        ),
        record(
            ChangeKind::Modify,
            Some(&v[1]),
            Some(&v[2]),
            StreamView::NewAndOldImages,
            0,
        ),
        record(
            ChangeKind::Remove,
            Some(&v[2]),
            None,
            StreamView::NewAndOldImages,
            0,
        ),
    ])
}

fn scores(records: &[StreamRecord]) -> Result<Scores, Box<dyn std::error::Error>> {
    records
        .iter()
        .map(|r| {
            let change = Change::<ShopRecord>::decode(r)?;
            let score = match change.new {
                Some(ShopRecord::Account(a)) => Some(a.score),
                _ => None,
            };
            Ok((change.kind, score))
        })
        .collect()
}

#[tokio::test]
async fn parents_before_children_expired_iterators_renewed_checkpoints_resume() -> TestResult {
    let h = history()?;
    let script = Arc::new(Mutex::new(Script {
        shards: vec![
            // the child's id sorts first: only lineage puts the parent first
            (
                "shard-a-child",
                Some("shard-b-parent"),
                false,
                vec![wire(&h[2], 201), wire(&h[3], 202)],
            ),
            (
                "shard-b-parent",
                None,
                true,
                vec![wire(&h[0], 101), wire(&h[1], 102)],
            ),
        ],
        expire_once: vec!["shard-b-parent|1".into()],
        trimmed: vec![],
        calls: vec![],
    }));
    let endpoint = serve(script.clone()).await?;
    let (dynamo, streams) = clients(&endpoint);
    let store = DynamoStore::new(
        dynamo,
        "shop",
        TableDefinition::from_schema(Shop::schema()?)?,
    );

    let mut reader = StreamReader::new(&store, streams.clone()).limit(1);
    let all = reader.read_available().await?;
    let want = vec![
        (ChangeKind::Insert, Some(0)),
        (ChangeKind::Modify, Some(1)),
        (ChangeKind::Modify, Some(2)),
        (ChangeKind::Remove, None),
    ];
    assert_eq!(scores(&all)?, want, "parent first, each record once");
    let count = |op: &str| -> Result<usize, String> {
        let script = script.lock().map_err(|e| e.to_string())?;
        Ok(script.calls.iter().filter(|c| c.ends_with(op)).count())
    };
    assert_eq!(
        count("GetShardIterator")?,
        3,
        "one iterator per shard plus the renewed one"
    );
    // the shards are listed at the start and once the parent ended, not per page
    assert_eq!(count("DescribeStream")?, 2);
    assert_eq!(reader.checkpoint().finished_shards(), 1);

    // stopped after the parent's records: the checkpoint resumes with the child's
    let mut first = StreamReader::new(&store, streams.clone()).limit(1);
    let mut head = first.poll().await?;
    head.extend(first.poll().await?);
    let saved: Checkpoint = serde_json::from_str(&serde_json::to_string(first.checkpoint())?)?;
    let mut resumed = StreamReader::new(&store, streams.clone()).resume_from(saved);
    let tail = resumed.read_available().await?;
    assert_eq!(scores(&head)?, want[..2]);
    assert_eq!(scores(&tail)?, want[2..]);
    Ok(())
}

#[tokio::test]
async fn trimmed_records_are_an_error_not_a_gap() -> TestResult {
    let h = history()?;
    let script = Arc::new(Mutex::new(Script {
        shards: vec![("shard-1", None, false, vec![wire(&h[0], 1)])],
        expire_once: vec![],
        trimmed: vec!["shard-1"],
        calls: vec![],
    }));
    let endpoint = serve(script).await?;
    let (dynamo, streams) = clients(&endpoint);
    let store = DynamoStore::new(
        dynamo,
        "shop",
        TableDefinition::from_schema(Shop::schema()?)?,
    );
    let err = StreamReader::new(&store, streams)
        .poll()
        .await
        .err()
        .ok_or("read past trimmed data")?;
    assert!(
        matches!(&err, StreamError::Trimmed { shard, .. } if shard == "shard-1"),
        "{err}"
    );
    Ok(())
}
