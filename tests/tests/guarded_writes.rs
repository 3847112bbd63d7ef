//! The guard of bulk writes, one interleaving at a time (issue 46, point 3: mutants of
//! `guarded.rs` and `migrate.rs` that the randomized tests walked past).
//!
//! A migration rewrites a record of an entity type without a version under a condition that
//! the record is unchanged since the scan read it: every attribute read has the value read,
//! and every property of the entity that was absent is still absent. A store wrapper plays
//! the other client: just before the migration's write reaches the table, it writes the
//! record itself. The migration must then be refused by its condition, plan the record again
//! from what the table holds, and keep the other client's write.

#![allow(clippy::struct_field_names)] // fields are named after their attributes

mod entity_support;

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};

use entity_manager::migrate::Migration;
use entity_manager::scan::ParallelScan;
use entity_manager::store::{Expect, MemoryStore, Store, StoreError, TableDefinition};
use entity_manager::{AttributeValue, Entity, EntityExt, Item, Table};
use entity_support::TestResult;
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};

#[derive(Table)]
#[table(entities(Note))]
struct Notes;

/// An entity type without a version: its bulk writes are guarded by every attribute.
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Notes, token = "note", unique = note_id, timestamp = created)]
struct Note {
    #[transcode("string")]
    note_id: String,
    #[transcode("timestamp")]
    created: u64,
    text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tag: Option<String>,
}

/// The migration's transform: the text in capitals (a rewrite in place).
fn shout(note: Note) -> Note {
    Note {
        text: note.text.to_uppercase(),
        ..note
    }
}

/// Before the first guarded `put_item` reaches the table, the other client changes the
/// stored record with `change` (an unconditional put of the record as it is, changed).
struct WriteFirst<S, F> {
    inner: S,
    change: F,
    done: AtomicBool,
}

impl<S: Store, F: Fn(&mut Item) + Send + Sync> Store for WriteFirst<S, F> {
    entity_manager_tests::forward_store!(inner: definition, name, get_item, delete_item, batch_write, batch_get, transact_write, update_item, transact_get, query_page, scan_page);

    async fn put_item(&self, item: Item, expect: Expect) -> Result<(), StoreError> {
        if matches!(expect, Expect::Matches(_))
            && !self.done.swap(true, Ordering::SeqCst)
            && let Some(mut stored) = self.inner.get_item(&key_of(&item), None).await?
        {
            (self.change)(&mut stored);
            self.inner.put_item(stored, Expect::Any).await?;
        }
        self.inner.put_item(item, expect).await
    }
}

fn note(text: &str, tag: Option<&str>) -> Note {
    Note {
        note_id: "n1".to_owned(),
        created: 1_000,
        text: text.to_owned(),
        tag: tag.map(str::to_owned),
    }
}

/// Runs the migration over one record written as `before`, the other client applying
/// `change` before the migration's write; returns the record left and the conflicts counted.
async fn migrate_against(
    before: &Note,
    change: impl Fn(&mut Item) + Send + Sync,
) -> Result<(Note, u64), Box<dyn std::error::Error>> {
    let inner = MemoryStore::new(TableDefinition::from_schema(Notes::schema()?)?);
    inner.put_item(before.to_item()?, Expect::Any).await?;
    let store = WriteFirst {
        inner,
        change,
        done: AtomicBool::new(false),
    };
    let migration = Migration::new().records::<Note, Note, _>(shout)?;
    let report = migration
        .run(ParallelScan::new(&store), |_| ControlFlow::Continue(()))
        .await?;
    assert!(report.complete, "the migration ran to its end");
    let left = Note::get(&store.inner, &before.note_id)
        .await?
        .ok_or("the record is gone")?;
    let counts = report
        .counts
        .entities
        .get("note")
        .copied()
        .unwrap_or_default();
    assert_eq!(
        counts.rewritten, 1,
        "the record was rewritten once: {counts:?}"
    );
    Ok((left, counts.conflicts))
}

/// The other client sets a property the record lacked when the scan read it (`tag`): the
/// condition "`tag` still absent" refuses the migration's write, which is planned again from
/// the record as it is now. Without that part of the guard, the migration put the record it
/// read, in capitals, and the tag the other client was told it wrote was gone.
#[tokio::test]
async fn a_property_added_after_the_read_is_kept() -> TestResult {
    let (left, conflicts) = migrate_against(&note("hello", None), |item| {
        item.insert("tag".to_owned(), AttributeValue::S("late".to_owned()));
    })
    .await?;
    assert_eq!(
        left,
        note("HELLO", Some("late")),
        "the other client's tag is kept"
    );
    assert_eq!(
        conflicts, 1,
        "one write refused by its condition, then redone"
    );
    Ok(())
}

/// The other client changes an attribute the scan read (`text`): refused the same way.
#[tokio::test]
async fn an_attribute_changed_after_the_read_is_kept() -> TestResult {
    let (left, conflicts) = migrate_against(&note("hello", Some("t")), |item| {
        item.insert("text".to_owned(), AttributeValue::S("changed".to_owned()));
    })
    .await?;
    assert_eq!(left, note("CHANGED", Some("t")));
    assert_eq!(conflicts, 1);
    Ok(())
}

/// The other client removes a property the scan read (`tag`): refused the same way.
#[tokio::test]
async fn a_property_removed_after_the_read_stays_removed() -> TestResult {
    let (left, conflicts) = migrate_against(&note("hello", Some("t")), |item| {
        item.remove("tag");
    })
    .await?;
    assert_eq!(left, note("HELLO", None));
    assert_eq!(conflicts, 1);
    Ok(())
}

/// A migration of no entity type keeps nothing: it asks the scan for no filter (an empty
/// `or` of filters is no condition a store accepts).
#[test]
fn a_migration_of_no_entity_type_has_no_filter() {
    assert_eq!(Migration::new().filter(), None);
}

/// A worker that stopped while a page was writing `n1` (its journal's last line says the page
/// began and never ended) resumes: it reads `n1` back, finds it not written yet, writes it
/// now, and the other client changes it just before: the settled page counts the conflict.
/// With `to`, the journal says the page was moving it; a record that now needs no change is
/// counted unchanged.
async fn settle_against(
    before: &Note,
    to: Option<(&str, &str)>,
    change: impl Fn(&mut Item) + Send + Sync,
) -> Result<(Note, entity_manager::migrate::EntityCounts), Box<dyn std::error::Error>> {
    use entity_manager::job::{Entry, JobHeader, JobKind, Journal, merge};
    use entity_manager::scan::SegmentRange;

    let inner = MemoryStore::new(TableDefinition::from_schema(Notes::schema()?)?);
    let item = before.to_item()?;
    inner.put_item(item.clone(), Expect::Any).await?;
    let text = |name: &str| match item.get(name) {
        Some(AttributeValue::S(s)) => Ok(s.clone()),
        _ => Err(format!("no {name}")),
    };
    let mut planned = serde_json::json!({
        "entity": "note",
        "key": [text("hashKey")?, text("rangeKey")?],
    });
    if let Some((hash, range)) = to {
        planned["to"] = serde_json::json!([hash, range]);
    }
    let begin: Entry = serde_json::from_value(serde_json::json!({
        "entry": "begin",
        "segment": 0,
        "planned": [planned],
    }))?;
    let header = JobHeader::new(JobKind::Migrate, "settle", SegmentRange::worker(1, 0, 1)?);
    let journal = Journal::resume_in_memory(header, vec![begin]);
    let store = WriteFirst {
        inner,
        change,
        done: AtomicBool::new(false),
    };
    let migration = Migration::new().records::<Note, Note, _>(shout)?;
    migration
        .run_job(ParallelScan::new(&store), &journal, |_| {
            ControlFlow::Continue(())
        })
        .await?;
    let report = merge(&[journal.entries()])?;
    assert!(report.complete(), "{:?}", report.segments);
    let counts = report
        .tally
        .migrate
        .entities
        .get("note")
        .copied()
        .unwrap_or_default();
    let left = Note::get(&store.inner, &before.note_id)
        .await?
        .ok_or("the record is gone")?;
    Ok((left, counts))
}

#[tokio::test]
async fn a_page_settled_after_a_stop_counts_the_conflict_of_its_write() -> TestResult {
    let (left, counts) = settle_against(&note("hello", None), None, |item| {
        item.insert("tag".to_owned(), AttributeValue::S("late".to_owned()));
    })
    .await?;
    assert_eq!(left, note("HELLO", Some("late")));
    assert_eq!(
        (counts.rewritten, counts.conflicts),
        (1, 1),
        "written once by the settled page, after one refusal: {counts:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_page_settled_after_a_stop_counts_a_record_that_needs_no_change_unchanged() -> TestResult
{
    let (left, counts) = settle_against(
        &note("HELLO", None),
        Some(("note!elsewhere", "noteId#n1")),
        |_| {},
    )
    .await?;
    assert_eq!(left, note("HELLO", None));
    assert_eq!(
        (counts.unchanged, counts.rewritten, counts.moved),
        (1, 0, 0),
        "{counts:?}"
    );
    Ok(())
}

/// A migration of no entity type reads the table without a filter and writes nothing: every
/// item it reads is counted as belonging to no migrated entity.
#[tokio::test]
async fn a_migration_of_no_entity_type_counts_every_item_as_other() -> TestResult {
    let store = MemoryStore::new(TableDefinition::from_schema(Notes::schema()?)?);
    for i in 0..3 {
        let mut n = note("hello", None);
        n.note_id = format!("n{i}");
        store.put_item(n.to_item()?, Expect::Any).await?;
    }
    let report = Migration::new()
        .run(ParallelScan::new(&store), |_| ControlFlow::Continue(()))
        .await?;
    assert!(report.complete);
    assert_eq!(report.counts.other, 3, "{:?}", report.counts);
    assert_eq!(report.counts.total().written(), 0);
    let mut first = note("hello", None);
    first.note_id = "n0".to_owned();
    assert_eq!(
        Note::get(&store, "n0").await?,
        Some(first),
        "left as it was"
    );
    Ok(())
}

/// The same records in a table that shards them: a migration from `Note` to `Sharded` moves
/// each record to a new hash key.
#[derive(Table)]
#[table(entities(Sharded))]
struct ShardedNotes;

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = ShardedNotes, token = "note", unique = note_id, timestamp = created)]
#[shard_bumps(bump(timestamp = 0, char_bits = 2, chars = 1))]
struct Sharded {
    #[transcode("string")]
    note_id: String,
    #[transcode("timestamp")]
    created: u64,
    text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tag: Option<String>,
}

fn sharded(note: Note) -> Sharded {
    Sharded {
        note_id: note.note_id,
        created: note.created,
        text: note.text,
        tag: note.tag,
    }
}

/// The table key of an item of the tables of this file (all keyed `hashKey`, `rangeKey`).
fn key_of(item: &Item) -> Item {
    let key: HashMap<String, AttributeValue> = ["hashKey", "rangeKey"]
        .into_iter()
        .filter_map(|name| item.get(name).map(|v| (name.to_owned(), v.clone())))
        .collect();
    Item::from(key)
}

/// Before the first move transaction reaches the table, the move it carries is finished by
/// someone else: the moved record put at its new key, the old one deleted (a move sent by a
/// worker before it stopped, carried out after).
struct MovedFirst<S> {
    inner: S,
    done: AtomicBool,
}

impl<S: Store> Store for MovedFirst<S> {
    entity_manager_tests::forward_store!(inner: definition, name, put_item, get_item, delete_item, batch_write, batch_get, update_item, transact_get, query_page, scan_page);

    async fn transact_write(
        &self,
        writes: Vec<entity_manager::store::TransactWrite>,
    ) -> Result<(), StoreError> {
        use entity_manager::store::TransactWrite;
        if !self.done.swap(true, Ordering::SeqCst) {
            for write in &writes {
                match write {
                    TransactWrite::Put { item, .. } => {
                        self.inner.put_item(item.clone(), Expect::Any).await?;
                    }
                    TransactWrite::Delete { key, .. } => {
                        self.inner.delete_item(key, Expect::Any).await?;
                    }
                    _ => {}
                }
            }
        }
        self.inner.transact_write(writes).await
    }
}

/// Runs the migration from `Note` to `Sharded` over the items `seed` puts; returns the items
/// left and the counts.
async fn move_over<S: Store>(
    store: &S,
    inner: &MemoryStore,
    seed: Vec<Item>,
) -> Result<(Vec<Item>, entity_manager::migrate::EntityCounts), Box<dyn std::error::Error>> {
    for item in seed {
        inner.put_item(item, Expect::Any).await?;
    }
    let report = Migration::new()
        .records::<Note, Sharded, _>(sharded)?
        .run(ParallelScan::new(store), |_| ControlFlow::Continue(()))
        .await?;
    assert!(report.complete);
    let counts = report
        .counts
        .entities
        .get("note")
        .copied()
        .unwrap_or_default();
    let items: Vec<Item> = ParallelScan::new(inner).items().try_collect().await?;
    Ok((items, counts))
}

/// An exclusive job stopped between the put and the delete of a move left both items; a
/// guarded run finds the new one there already (its transaction refused by the new key's
/// condition, with that item) and finishes the move by deleting the old one.
#[tokio::test]
async fn a_move_half_done_by_a_stopped_job_is_finished() -> TestResult {
    let inner = MemoryStore::new(TableDefinition::from_schema(ShardedNotes::schema()?)?);
    let old = note("hello", None);
    let (left, counts) = move_over(
        &inner,
        &inner,
        vec![old.to_item()?, sharded(old.clone()).to_item()?],
    )
    .await?;
    assert_eq!(
        left,
        vec![sharded(old).to_item()?],
        "only the moved record is left"
    );
    assert_eq!((counts.moved, counts.vanished), (1, 0), "{counts:?}");
    Ok(())
}

/// The move's transaction finds the old item gone and the moved one at its new key, equal to
/// what it would write: the record was moved (by a move sent before a stop and carried out
/// after), not deleted by someone else.
#[tokio::test]
async fn a_move_carried_out_meanwhile_is_counted_moved() -> TestResult {
    let inner = MemoryStore::new(TableDefinition::from_schema(ShardedNotes::schema()?)?);
    let store = MovedFirst {
        inner,
        done: AtomicBool::new(false),
    };
    let old = note("hello", None);
    let (left, counts) = move_over(&store, &store.inner, vec![old.to_item()?]).await?;
    let moved = sharded(old).to_item()?;
    assert_ne!(key_of(&moved), key_of(&note("hello", None).to_item()?));
    assert_eq!(left, vec![moved]);
    assert_eq!((counts.moved, counts.vanished), (1, 0), "{counts:?}");
    Ok(())
}

/// A table whose schedule widens the shard suffix at 2,000: a record created before it has
/// one candidate key per bump (reads try both), and lives under the first.
#[derive(Table)]
#[table(entities(Layered))]
struct LayeredNotes;

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = LayeredNotes, token = "note", unique = note_id, timestamp = created)]
#[shard_bumps(bumps = [
    bump(timestamp = 0, char_bits = 2, chars = 1),
    bump(timestamp = 2_000, char_bits = 2, chars = 2),
])]
struct Layered {
    #[transcode("string")]
    note_id: String,
    #[transcode("timestamp")]
    created: u64,
    text: String,
}

/// The same records keyed as if created under the second bump (two suffix characters).
#[derive(Table)]
#[table(entities(Widened))]
struct WidenedNotes;

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = WidenedNotes, token = "note", unique = note_id, timestamp = created)]
#[shard_bumps(bump(timestamp = 0, char_bits = 2, chars = 2))]
struct Widened {
    #[transcode("string")]
    note_id: String,
    #[transcode("timestamp")]
    created: u64,
    text: String,
}

/// A copy of a record left under another candidate key (by a move stopped half way, or an
/// older schedule) does not win a read of a record without a version: the item whose hash
/// key agrees with the record's own timestamp does, whichever the store returns first.
#[tokio::test]
async fn a_copy_under_another_candidate_key_loses_a_read() -> TestResult {
    let store = MemoryStore::new(TableDefinition::from_schema(LayeredNotes::schema()?)?);
    let own = Layered {
        note_id: "n1".to_owned(),
        created: 1_000,
        text: "own".to_owned(),
    };
    let copy = Widened {
        note_id: "n1".to_owned(),
        created: 1_000,
        text: "copy".to_owned(),
    }
    .to_item()?;
    assert_ne!(key_of(&copy), key_of(&own.to_item()?), "two keys");
    for first in [true, false] {
        store.delete_item(&key_of(&copy), Expect::Any).await?;
        store
            .delete_item(&key_of(&own.to_item()?), Expect::Any)
            .await?;
        let mut items = vec![own.to_item()?, copy.clone()];
        if !first {
            items.reverse();
        }
        for item in items {
            store.put_item(item, Expect::Any).await?;
        }
        assert_eq!(Layered::get(&store, "n1").await?, Some(own.clone()));
    }
    Ok(())
}

/// A store whose single-item puts are throttled (every attempt): nothing else fails.
struct ThrottledPuts<S> {
    inner: S,
}

impl<S: Store> Store for ThrottledPuts<S> {
    entity_manager_tests::forward_store!(inner: definition, name, get_item, delete_item, batch_write, batch_get, transact_write, update_item, transact_get, query_page, scan_page);

    async fn put_item(&self, _: Item, _: Expect) -> Result<(), StoreError> {
        Err(StoreError::new(
            entity_manager::store::StoreErrorKind::Throttled,
            "PutItem",
            "throughput exceeded",
        ))
    }
}

/// A replace refused by the store for any reason but its condition is the store's error, not
/// a failed condition: the caller must not be told the record changed when it was not even
/// compared.
#[tokio::test]
async fn a_throttled_replace_is_a_store_error_not_a_failed_condition() -> TestResult {
    let store = ThrottledPuts {
        inner: MemoryStore::new(TableDefinition::from_schema(Notes::schema()?)?),
    };
    let record = note("hello", None);
    store.inner.put_item(record.to_item()?, Expect::Any).await?;
    let refused = record.put(&store).await;
    assert!(
        matches!(
            &refused,
            Err(entity_manager::Error::Store { operation: "PutItem", source, .. })
                if source.is_throttled()
        ),
        "{refused:?}"
    );
    assert_eq!(Note::get(&store.inner, "n1").await?, Some(record));
    Ok(())
}

#[derive(Table)]
#[table(entities(Counted))]
struct CountedNotes;

/// A versioned entity: its moves must hold the caller's version.
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = CountedNotes, token = "note", unique = note_id, timestamp = created, version = version)]
struct Counted {
    #[transcode("string")]
    note_id: String,
    #[transcode("timestamp")]
    created: u64,
    text: String,
    version: u64,
}

/// A move from a record read before another client's write (a stale version) is refused as a
/// version conflict, and writes nothing; from the record as stored, it moves it.
#[tokio::test]
async fn a_move_from_a_stale_record_is_a_version_conflict() -> TestResult {
    let store = MemoryStore::new(TableDefinition::from_schema(CountedNotes::schema()?)?);
    let counted = |id: &str, version: u64| Counted {
        note_id: id.to_owned(),
        created: 1_000,
        text: "hello".to_owned(),
        version,
    };
    counted("n1", 5).create(&store).await?;
    let stored = Counted::get(&store, "n1").await?.ok_or("gone")?;
    assert_eq!(stored.version, 6);
    let refused = Counted::move_record(&store, "n1", &counted("n2", 5)).await;
    assert!(
        matches!(&refused, Err(entity_manager::Error::VersionConflict { .. })),
        "{refused:?}"
    );
    assert_eq!(Counted::get(&store, "n1").await?, Some(stored));
    assert_eq!(Counted::get(&store, "n2").await?, None, "nothing written");
    Counted::move_record(&store, "n1", &counted("n2", 6)).await?;
    assert_eq!(Counted::get(&store, "n1").await?, None);
    assert_eq!(Counted::get(&store, "n2").await?, Some(counted("n2", 7)));
    Ok(())
}
