//! The stream of a table on `DynamoDB` Local, read with `StreamReader`: creates, updates (one
//! that changes a generated key, one that moves a record to another shard), deletes and a
//! transaction across two entities, then the stream read to its end. Every change decodes, in
//! per-item order, with exactly the images the stream view carries, equal to what an oracle
//! kept; no record is lost or doubled across shard iterators; a reader resumed from a
//! checkpoint mid-way gives the same result. Skips without `DYNAMODB_ENDPOINT` (fails under
//! `CI=true`).

use std::collections::{BTreeMap, BTreeSet};
use std::error::Error;

use entity_manager::field::Changes;
use entity_manager::store::{DynamoStore, Store as _, StreamView, TableDefinition};
use entity_manager::stream::{Change, ChangeKind, Checkpoint, StartAt, StreamReader, StreamRecord};
use entity_manager::{EntityExt, PrimaryKey, Table, Transaction};

mod store_support;
mod stream_support;
use stream_support::{Account, Order, Shop, ShopRecord, Tier, account};

type TestResult = Result<(), Box<dyn Error>>;

/// A Streams client for the same `DynamoDB` Local.
fn streams_client() -> Option<aws_sdk_dynamodbstreams::Client> {
    let endpoint = std::env::var("DYNAMODB_ENDPOINT").ok()?;
    let config = aws_sdk_dynamodbstreams::Config::builder()
        .behavior_version(aws_sdk_dynamodbstreams::config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_sdk_dynamodbstreams::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodbstreams::config::Credentials::new(
            "local", "local", None, None, "static",
        ))
        .build();
    Some(aws_sdk_dynamodbstreams::Client::from_conf(config))
}

/// One expected change: the kind, the key and both records (before and after).
#[derive(Clone, Debug, PartialEq)]
struct Expected {
    kind: ChangeKind,
    key: PrimaryKey,
    old: Option<ShopRecord>,
    new: Option<ShopRecord>,
}

/// What the table holds and every change made to it, kept beside the store.
#[derive(Default)]
struct Oracle {
    state: BTreeMap<PrimaryKey, ShopRecord>,
    changes: Vec<Expected>,
}

fn key_of(record: &ShopRecord) -> Result<PrimaryKey, Box<dyn Error>> {
    Ok(match record {
        ShopRecord::Account(a) => Account::primary_key(a)?,
        ShopRecord::Order(o) => Order::primary_key(o)?,
    })
}

impl Oracle {
    fn put(&mut self, record: ShopRecord) -> TestResult {
        let key = key_of(&record)?;
        let old = self.state.insert(key.clone(), record.clone());
        let kind = if old.is_some() {
            ChangeKind::Modify
        } else {
            ChangeKind::Insert
        };
        self.changes.push(Expected {
            kind,
            key,
            old,
            new: Some(record),
        });
        Ok(())
    }

    fn remove(&mut self, key: &PrimaryKey) -> TestResult {
        let old = self
            .state
            .remove(key)
            .ok_or("removing a record the oracle does not hold")?;
        self.changes.push(Expected {
            kind: ChangeKind::Remove,
            key: key.clone(),
            old: Some(old),
            new: None,
        });
        Ok(())
    }

    /// The changes per item, in the order they were made.
    fn per_item(&self) -> BTreeMap<PrimaryKey, Vec<Expected>> {
        let mut per: BTreeMap<PrimaryKey, Vec<Expected>> = BTreeMap::new();
        for c in &self.changes {
            per.entry(c.key.clone()).or_default().push(c.clone());
        }
        per
    }
}

fn order(no: i64, account_id: &str) -> Order {
    stream_support::order(no, 1_000 + no.unsigned_abs(), account_id)
}

/// The workload, applied to the store and mirrored in the oracle.
async fn workload(store: &DynamoStore, oracle: &mut Oracle) -> TestResult {
    let f = Account::FIELDS;
    // creates: two accounts under different shard bumps, three orders
    let a1 = account("a1", 500, 1);
    let a2 = account("a2", 2_000_000, 2);
    for a in [&a1, &a2] {
        a.create(store).await?;
        oracle.put(ShopRecord::Account(a.clone()))?;
    }
    for o in [order(1, "a1"), order(-2, "a1"), order(3, "a2")] {
        o.create(store).await?;
        oracle.put(ShopRecord::Order(o))?;
    }
    // an update that changes a generated key (`scoreRangeKey` holds the score)
    let a1 = Account::update(
        store,
        "a1",
        Changes::new().set(f.score, 99).add(f.logins, 1),
    )
    .await?
    .ok_or("a1 vanished")?;
    oracle.put(ShopRecord::Account(a1.clone()))?;
    // an update that makes a sparse generated key appear (`regionHashKey`)
    let a2 = Account::update(
        store,
        "a2",
        Changes::new().set_option(f.region, Some("eu".to_owned())),
    )
    .await?
    .ok_or("a2 vanished")?;
    oracle.put(ShopRecord::Account(a2.clone()))?;
    // a put of changed plain fields
    let a1 = Account {
        note: Some("vip".into()),
        tier: Tier::Pro,
        ..a1
    };
    a1.put(store).await?;
    oracle.put(ShopRecord::Account(a1.clone()))?;
    // a move to another shard: a new creation time under the second bump
    let old_key = Account::primary_key(&a1)?;
    let moved = Account {
        created: 3_000_000,
        ..a1
    };
    Account::move_record(store, "a1", &moved).await?;
    assert_ne!(
        Account::primary_key(&moved)?.hash_key,
        old_key.hash_key,
        "the move changes shard"
    );
    oracle.remove(&old_key)?;
    oracle.put(ShopRecord::Account(moved.clone()))?;
    // a delete
    Order::delete(store, &1i64)
        .await?
        .ok_or("order 1 vanished")?;
    oracle.remove(&Order::primary_key(&order(1, "a1"))?)?;
    // a transaction across both entities: an insert, a modify, a remove
    let o4 = order(4, "a2");
    let a2 = Account { logins: 7, ..a2 };
    Transaction::new()
        .create(&o4)?
        .put(&a2)?
        .delete::<Order, _>(&-2i64)?
        .commit(store)
        .await?;
    oracle.put(ShopRecord::Order(o4))?;
    oracle.put(ShopRecord::Account(a2))?;
    oracle.remove(&Order::primary_key(&order(-2, "a1"))?)?;
    // the moved record changes once more, under its new key
    Account::update(store, "a1", Changes::new().add(f.logins, 5))
        .await?
        .ok_or("a1 vanished")?;
    oracle.put(ShopRecord::Account(Account {
        logins: moved.logins + 5,
        ..moved
    }))?;
    Ok(())
}

/// The decoded changes per item, in stream order; fails on any record that does not decode.
fn per_item(
    records: &[StreamRecord],
) -> Result<BTreeMap<PrimaryKey, Vec<Expected>>, Box<dyn Error>> {
    let mut per: BTreeMap<PrimaryKey, Vec<Expected>> = BTreeMap::new();
    for record in records {
        let change = Change::<ShopRecord>::decode(record)?;
        per.entry(change.key.clone()).or_default().push(Expected {
            kind: change.kind,
            key: change.key,
            old: change.old,
            new: change.new,
        });
    }
    Ok(per)
}

/// The oracle's changes as `view` shows them.
fn seen_through(
    view: StreamView,
    per: BTreeMap<PrimaryKey, Vec<Expected>>,
) -> BTreeMap<PrimaryKey, Vec<Expected>> {
    let old = matches!(view, StreamView::OldImage | StreamView::NewAndOldImages);
    let new = matches!(view, StreamView::NewImage | StreamView::NewAndOldImages);
    per.into_iter()
        .map(|(k, changes)| {
            let changes = changes
                .into_iter()
                .map(|c| Expected {
                    old: c.old.filter(|_| old),
                    new: c.new.filter(|_| new),
                    ..c
                })
                .collect();
            (k, changes)
        })
        .collect()
}

fn sequence_numbers(records: &[StreamRecord]) -> Vec<String> {
    records
        .iter()
        .filter_map(|r| r.sequence_number.clone())
        .collect()
}

#[tokio::test]
async fn the_stream_read_to_its_end_equals_the_oracle_in_every_view() -> TestResult {
    let Some(client) = store_support::dynamo_client() else {
        return Ok(());
    };
    let streams = streams_client().ok_or("no endpoint")?;
    for view in StreamView::ALL {
        let definition = TableDefinition::from_schema(Shop::schema()?)?.with_stream(view);
        let store = DynamoStore::new(
            client.clone(),
            store_support::unique_table("stream"),
            definition,
        );
        store.create_table().await?;
        let mut oracle = Oracle::default();
        workload(&store, &mut oracle).await?;

        // the whole stream, in pages of 3 records (many shard iterators)
        let mut reader = StreamReader::new(&store, streams.clone()).limit(3);
        // the table's stamp, written when the table was created, is no record
        let records = |batch: Vec<StreamRecord>| -> Vec<StreamRecord> {
            batch
                .into_iter()
                .filter(|r| !entity_manager::store::is_stamp(&r.keys, store.definition()))
                .collect()
        };
        let all = records(reader.read_available().await?);
        let want = seen_through(view, oracle.per_item());
        assert_eq!(
            all.len(),
            oracle.changes.len(),
            "{view:?}: one record per change"
        );
        let seqs = sequence_numbers(&all);
        assert_eq!(
            seqs.iter().collect::<BTreeSet<_>>().len(),
            all.len(),
            "{view:?}: no record twice"
        );
        assert_eq!(per_item(&all)?, want, "{view:?}");
        assert!(
            reader.read_available().await?.is_empty(),
            "{view:?}: nothing after the end"
        );

        // stopped after a few batches, resumed from the saved checkpoint: the same records
        let mut first = StreamReader::new(&store, streams.clone()).limit(2);
        let mut head = Vec::new();
        for _ in 0..3 {
            head.extend(first.poll().await?);
        }
        let saved = serde_json::to_string(first.checkpoint())?;
        drop(first);
        let checkpoint: Checkpoint = serde_json::from_str(&saved)?;
        let mut resumed = StreamReader::new(&store, streams.clone()).resume_from(checkpoint);
        let tail = resumed.read_available().await?;
        assert!(
            !head.is_empty() && !tail.is_empty(),
            "{view:?}: the checkpoint is mid-way"
        );
        let mut joined = records(head.clone());
        joined.extend(records(tail));
        assert_eq!(
            sequence_numbers(&joined),
            seqs,
            "{view:?}: resumed = read at once"
        );
        assert_eq!(per_item(&joined)?, want, "{view:?}");

        // `latest` starts after what is there: only later changes arrive
        let mut latest = StreamReader::new(&store, streams.clone()).start_at(StartAt::Latest);
        assert!(latest.read_available().await?.is_empty(), "{view:?}");
        order(9, "a2").create(&store).await?;
        let later = latest.read_available().await?;
        assert_eq!(later.len(), 1, "{view:?}");
        assert_eq!(
            Change::<ShopRecord>::decode(&later[0])?.kind,
            ChangeKind::Insert
        );
        store.delete_table().await?;
    }
    Ok(())
}

/// A table without a stream is a typed error, not an empty stream.
#[tokio::test]
async fn a_table_without_a_stream_is_an_error() -> TestResult {
    let Some(client) = store_support::dynamo_client() else {
        return Ok(());
    };
    let streams = streams_client().ok_or("no endpoint")?;
    let definition = TableDefinition::from_schema(Shop::schema()?)?;
    let store = DynamoStore::new(client, store_support::unique_table("nostream"), definition);
    store.create_table().await?;
    let err = StreamReader::new(&store, streams)
        .poll()
        .await
        .err()
        .ok_or("a stream without a stream")?;
    assert!(
        matches!(err, entity_manager::stream::StreamError::NoStream { .. }),
        "{err}"
    );
    store.delete_table().await?;
    Ok(())
}
