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
use entity_manager::store::{
    Expect, MemoryStore, ReturnValues, Store, StoreError, TableDefinition, Update,
};
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

/// Before the first guarded `put_item` or `update_item` reaches the table, the other client
/// changes the stored record with `change` (an unconditional put of the record as it is,
/// changed).
struct WriteFirst<S, F> {
    inner: S,
    change: F,
    done: AtomicBool,
}

impl<S: Store, F: Fn(&mut Item) + Send + Sync> WriteFirst<S, F> {
    /// `inner`, where the other client will change the record with `change`.
    fn new(inner: S, change: F) -> Self {
        Self {
            inner,
            change,
            done: AtomicBool::new(false),
        }
    }

    /// The other client's write, once: before the first guarded write to `key`.
    async fn write_first(&self, key: &Item, expect: &Expect) -> Result<(), StoreError> {
        if matches!(expect, Expect::Matches(_))
            && !self.done.swap(true, Ordering::SeqCst)
            && let Some(mut stored) = self.inner.get_item(key, None).await?
        {
            (self.change)(&mut stored);
            self.inner.put_item(stored, Expect::Any).await?;
        }
        Ok(())
    }
}

impl<S: Store, F: Fn(&mut Item) + Send + Sync> Store for WriteFirst<S, F> {
    entity_manager_tests::forward_store!(inner: definition, name, get_item, delete_item, batch_write, batch_get, transact_write, transact_get, query_page, scan_page);

    async fn put_item(&self, item: Item, expect: Expect) -> Result<(), StoreError> {
        self.write_first(&key_of(&item), &expect).await?;
        self.inner.put_item(item, expect).await
    }

    async fn update_item(
        &self,
        key: &Item,
        update: &Update,
        expect: Expect,
        returns: ReturnValues,
    ) -> Result<Option<Item>, StoreError> {
        self.write_first(key, &expect).await?;
        self.inner.update_item(key, update, expect, returns).await
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
    let store = WriteFirst::new(inner, change);
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

/// The other client changes an attribute the scan read (`text`): refused the same way. When
/// it writes exactly what the migration would (the text in capitals), the record, already
/// what the write makes, is counted rewritten after the one conflict (a write sent before a
/// stop and carried out after it looks the same).
#[tokio::test]
async fn an_attribute_changed_after_the_read_is_kept() -> TestResult {
    for (text, migrated) in [("changed", "CHANGED"), ("HELLO", "HELLO")] {
        let (left, conflicts) = migrate_against(&note("hello", Some("t")), |item| {
            item.insert("text".to_owned(), AttributeValue::S(text.to_owned()));
        })
        .await?;
        assert_eq!(left, note(migrated, Some("t")), "{text}");
        assert_eq!(conflicts, 1, "{text}");
    }
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

/// A migration of one entity type scans with that type's filter itself (`scan::entity_filter`,
/// the records whose hash key starts with its token), not an `or` of one filter.
#[test]
fn a_migration_of_one_entity_type_has_its_filter() -> TestResult {
    let migration = Migration::new().records::<Note, Note, _>(shout)?;
    assert_eq!(
        migration.filter(),
        Some(entity_manager::scan::entity_filter(&Note::schema()?))
    );
    Ok(())
}

/// A worker that stopped while a page was writing `n1` (its journal's last line says the page
/// began and never ended) resumes: it reads `n1` back, finds it not written yet, writes it
/// now, and the other client changes it just before: the settled page counts the conflict.
/// With `to`, the journal says the page was moving it; a record that now needs no change is
/// counted unchanged. Without `stored`, the record is gone when the worker resumes.
async fn settle_against(
    before: &Note,
    stored: bool,
    to: Option<(&str, &str)>,
    change: impl Fn(&mut Item) + Send + Sync,
) -> Result<(Option<Note>, entity_manager::migrate::EntityCounts), Box<dyn std::error::Error>> {
    use entity_manager::job::{Entry, JobHeader, JobKind, Journal, merge};
    use entity_manager::scan::SegmentRange;

    let inner = MemoryStore::new(TableDefinition::from_schema(Notes::schema()?)?);
    let item = before.to_item()?;
    if stored {
        inner.put_item(item.clone(), Expect::Any).await?;
    }
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
    let store = WriteFirst::new(inner, change);
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
    let left = Note::get(&store.inner, &before.note_id).await?;
    Ok((left, counts))
}

#[tokio::test]
async fn a_page_settled_after_a_stop_counts_the_conflict_of_its_write() -> TestResult {
    let (left, counts) = settle_against(&note("hello", None), true, None, |item| {
        item.insert("tag".to_owned(), AttributeValue::S("late".to_owned()));
    })
    .await?;
    assert_eq!(left, Some(note("HELLO", Some("late"))));
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
        true,
        Some(("note!elsewhere", "noteId#n1")),
        |_| {},
    )
    .await?;
    assert_eq!(left, Some(note("HELLO", None)));
    assert_eq!(
        (counts.unchanged, counts.rewritten, counts.moved),
        (1, 0, 0),
        "{counts:?}"
    );
    Ok(())
}

/// A dry run counts what a run would do, record by record, and writes nothing: a record the
/// transform leaves as it is is unchanged, one it changes is rewritten.
#[tokio::test]
async fn a_dry_run_counts_unchanged_and_rewritten_records() -> TestResult {
    let store = MemoryStore::new(TableDefinition::from_schema(Notes::schema()?)?);
    let mut loud = note("HELLO", None);
    loud.note_id = "n0".to_owned();
    let mut quiet = note("hello", None);
    quiet.note_id = "n1".to_owned();
    for n in [&loud, &quiet] {
        store.put_item(n.to_item()?, Expect::Any).await?;
    }
    let migration = Migration::new().records::<Note, Note, _>(shout)?;
    let plan = migration.dry_run(ParallelScan::new(&store), 0).await?;
    let counts = plan.counts.entities["note"];
    assert_eq!(
        (counts.scanned, counts.unchanged, counts.rewritten),
        (2, 1, 1),
        "{counts:?}"
    );
    assert_eq!(
        Note::get(&store, "n1").await?,
        Some(quiet),
        "a dry run writes nothing"
    );
    Ok(())
}

/// The record a stopped page was writing is gone when its worker resumes (deleted by another
/// client; moving it, the page's new key is empty too): the settled page counts it vanished.
#[tokio::test]
async fn a_page_settled_after_a_stop_counts_a_record_gone_meanwhile_vanished() -> TestResult {
    for to in [None, Some(("note!elsewhere", "noteId#n1"))] {
        let (left, counts) = settle_against(&note("hello", None), false, to, |_| {}).await?;
        assert_eq!(left, None);
        assert_eq!(
            (counts.vanished, counts.rewritten, counts.moved),
            (1, 0, 0),
            "{to:?}: {counts:?}"
        );
    }
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
    // the dry run counts them the same way
    let plan = Migration::new()
        .dry_run(ParallelScan::new(&store), 0)
        .await?;
    assert_eq!(plan.counts.other, 3, "{:?}", plan.counts);
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

/// The first move transaction is carried out, its answer lost, and the attempt sent again
/// refused by its own conditions (the old item gone, the new one there): what a store that
/// sends a transaction again without its idempotency token (or after the token's window)
/// reports as [`StoreError::is_refused_after_lost_answer`], the transaction's reasons dropped.
struct LostAnswerOnMove<S> {
    inner: S,
    done: AtomicBool,
}

impl<S: Store> Store for LostAnswerOnMove<S> {
    entity_manager_tests::forward_store!(inner: definition, name, put_item, get_item, delete_item, batch_write, batch_get, update_item, transact_get, query_page, scan_page);

    async fn transact_write(
        &self,
        writes: Vec<entity_manager::store::TransactWrite>,
    ) -> Result<(), StoreError> {
        use entity_manager::store::CancellationReason;
        if self.done.swap(true, Ordering::SeqCst) {
            return self.inner.transact_write(writes).await;
        }
        let n = writes.len();
        self.inner.transact_write(writes).await?;
        let mut reasons = vec![CancellationReason::NONE; n];
        reasons[0] = CancellationReason::conditional_check_failed();
        Err(StoreError::transaction_canceled("TransactWriteItems", reasons).after_lost_answer(2))
    }
}

/// A move whose transaction was carried out though the mover was told it was refused on a
/// resend after a lost answer: the migration reads the old key (gone), finds the record at its
/// new key and counts it moved; nothing is reported failed, nothing is lost.
#[tokio::test]
async fn a_move_refused_on_a_resend_after_its_lost_answer_is_counted_moved() -> TestResult {
    let inner = MemoryStore::new(TableDefinition::from_schema(ShardedNotes::schema()?)?);
    let store = LostAnswerOnMove {
        inner,
        done: AtomicBool::new(false),
    };
    let old = note("hello", None);
    let (left, counts) = move_over(&store, &store.inner, vec![old.to_item()?]).await?;
    assert!(
        store.done.load(Ordering::SeqCst),
        "the move went through the fault"
    );
    assert_eq!(left, vec![sharded(old).to_item()?]);
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

/// A store whose single-item puts and deletes are throttled (every attempt): nothing else
/// fails.
struct ThrottledPuts<S> {
    inner: S,
}

fn throttled(operation: &'static str) -> StoreError {
    StoreError::new(
        entity_manager::store::StoreErrorKind::Throttled,
        operation,
        "throughput exceeded",
    )
}

impl<S: Store> Store for ThrottledPuts<S> {
    entity_manager_tests::forward_store!(inner: definition, name, get_item, batch_write, batch_get, transact_write, update_item, transact_get, query_page, scan_page);

    async fn put_item(&self, _: Item, _: Expect) -> Result<(), StoreError> {
        Err(throttled("PutItem"))
    }

    async fn delete_item(&self, _: &Item, _: Expect) -> Result<(), StoreError> {
        Err(throttled("DeleteItem"))
    }
}

/// A delete refused by the store for any reason but its condition is the store's error: the
/// caller is not told the record is gone (or changed) while it is still there.
#[tokio::test]
async fn a_throttled_delete_is_a_store_error() -> TestResult {
    let store = ThrottledPuts {
        inner: MemoryStore::new(TableDefinition::from_schema(Notes::schema()?)?),
    };
    let record = note("hello", None);
    store.inner.put_item(record.to_item()?, Expect::Any).await?;
    let refused = Note::delete(&store, "n1").await;
    assert!(
        matches!(
            &refused,
            Err(entity_manager::Error::Store { operation: "DeleteItem", source, .. })
                if source.is_throttled()
        ),
        "{refused:?}"
    );
    assert_eq!(Note::get(&store.inner, "n1").await?, Some(record));
    Ok(())
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

/// `modify` of a record without a version guards its write by the record as read: every
/// attribute it read still has the value read, and every attribute the write adds is still
/// absent. The other client sets `tag` (absent when `modify` read the record) just before the
/// write: the write is refused, the closure runs again on the record as it is now, and the
/// other client's tag is kept. Without the "still absent" part, the closure's tag replaced it.
#[tokio::test]
async fn a_modify_runs_again_when_a_property_it_adds_was_set_meanwhile() -> TestResult {
    let inner = MemoryStore::new(TableDefinition::from_schema(Notes::schema()?)?);
    inner
        .put_item(note("hello", None).to_item()?, Expect::Any)
        .await?;
    let store = WriteFirst::new(inner, |item: &mut Item| {
        item.insert("tag".to_owned(), AttributeValue::S("late".to_owned()));
    });
    let modified = Note::modify(&store, "n1", |n| {
        n.tag = Some(format!("{}+mine", n.tag.as_deref().unwrap_or("")));
    })
    .await?;
    let both = note("hello", Some("late+mine"));
    assert_eq!(modified.as_ref(), Some(&both), "the closure ran on the tag");
    assert_eq!(Note::get(&store.inner, "n1").await?, Some(both));
    Ok(())
}

/// A typed update of the unique or the timestamp property is refused before anything is
/// sent, even through a hand-written field (`Field::new`, which the compile-time check of
/// `Changes::set` cannot see is a key part): those values are written into the record's keys,
/// which an `UpdateItem` cannot change.
#[tokio::test]
async fn a_typed_update_of_a_key_part_is_refused() -> TestResult {
    use entity_manager::field::{Changes, Field, Required};
    let store = MemoryStore::new(TableDefinition::from_schema(Notes::schema()?)?);
    let record = note("hello", None);
    store.put_item(record.to_item()?, Expect::Any).await?;
    let created = Changes::new().set(Field::<Note, u64, Required>::new("created"), 5_u64);
    let id = Changes::new().set(Field::<Note, String, Required>::new("noteId"), "n2");
    for (changes, part) in [(created, "created"), (id, "noteId")] {
        match Note::update(&store, "n1", changes).await {
            Err(entity_manager::Error::PrimaryKeyChange {
                entity,
                unique,
                property,
            }) => assert_eq!(
                (entity.as_str(), unique.as_str(), property.as_str()),
                ("note", "n1", part)
            ),
            other => panic!("{part}: expected PrimaryKeyChange, got {other:?}"),
        }
    }
    assert_eq!(Note::get(&store, "n1").await?, Some(record), "unchanged");
    Ok(())
}

fn layered(id: &str) -> Layered {
    Layered {
        note_id: id.to_owned(),
        created: 1_000,
        text: "hello".to_owned(),
    }
}

/// Asserts `result` is [`Error::TransactionTooLarge`](entity_manager::Error) of 102 actions
/// whose parts are `expected`.
fn too_large<T: std::fmt::Debug>(result: entity_manager::Result<T>, expected: &[&str]) {
    match result {
        Err(entity_manager::Error::TransactionTooLarge {
            actions,
            limit,
            parts,
        }) => {
            assert_eq!((actions, limit), (102, 100));
            assert_eq!(parts, expected.join("; "));
        }
        other => panic!("expected TransactionTooLarge, got {other:?}"),
    }
}

/// A transaction over `DynamoDB`'s 100 actions says where they came from: per call and entity,
/// the records and their actions (records of a schedule with two shard bumps take two each),
/// and why a record takes several. One of exactly 100 actions is sent, write or read.
#[tokio::test]
async fn a_transaction_over_100_actions_counts_its_records() -> TestResult {
    use entity_manager::{ReadTransaction, Transaction};
    let store = MemoryStore::new(TableDefinition::from_schema(LayeredNotes::schema()?)?);
    let create = ": a create puts the record and checks that every other candidate shard of its unique value (one per shard bump) holds none";
    let mut creates = Transaction::new();
    for i in 0..51 {
        creates = creates.create(&layered(&format!("n{i:02}")))?;
    }
    assert_eq!(creates.len(), 102);
    too_large(
        creates.commit(&store).await,
        &[&format!(
            "51 `create` of `note`: 102 actions, about 2 each{create}"
        )],
    );
    assert_eq!(Layered::get(&store, "n00").await?, None, "nothing written");

    let mut mixed = Transaction::new();
    for i in 0..30 {
        mixed = mixed.create(&layered(&format!("n{i:02}")))?;
    }
    for i in 0..11 {
        mixed = mixed.put(&layered(&format!("p{i:02}")))?;
    }
    for i in 0..10 {
        mixed = mixed.delete::<Layered, _>(&format!("d{i:02}"))?;
    }
    too_large(
        mixed.commit(&store).await,
        &[
            &format!("30 `create` of `note`: 60 actions, about 2 each{create}"),
            "11 `put` of `note`: 22 actions, about 2 each: a put checks that every other candidate shard of its unique value (one per shard bump) holds no copy",
            "10 `delete` of `note`: 20 actions, about 2 each: a delete by id deletes at every candidate shard of the value (one per shard bump)",
        ],
    );

    // 100 actions: sent
    let mut fifty = Transaction::new();
    for i in 0..50 {
        fifty = fifty.create(&layered(&format!("n{i:02}")))?;
    }
    fifty.commit(&store).await?;
    let mut read = ReadTransaction::new();
    let handles = (0..50)
        .map(|i| read.get::<Layered, _>(&format!("n{i:02}")))
        .collect::<Result<Vec<_>, _>>()?;
    let results = read.commit(&store).await?;
    assert_eq!(results.get(handles[49])?, Some(layered("n49")));
    let mut over = ReadTransaction::new();
    for i in 0..51 {
        over.get::<Layered, _>(&format!("n{i:02}"))?;
    }
    too_large(
        over.commit(&store).await,
        &[
            "51 `get` of `note`: 102 actions, about 2 each: a get reads every candidate shard of the value (one per shard bump)",
        ],
    );
    Ok(())
}

/// Another client deletes the record at `key`: just before the first transaction reaches the
/// table (`before`), or just after it is refused.
struct Deleted<S> {
    inner: S,
    key: Item,
    before: bool,
    done: AtomicBool,
}

impl<S: Store> Store for Deleted<S> {
    entity_manager_tests::forward_store!(inner: definition, name, put_item, get_item, delete_item, batch_write, batch_get, update_item, transact_get, query_page, scan_page);

    async fn transact_write(
        &self,
        writes: Vec<entity_manager::store::TransactWrite>,
    ) -> Result<(), StoreError> {
        if self.before && !self.done.swap(true, Ordering::SeqCst) {
            self.inner.delete_item(&self.key, Expect::Any).await?;
        }
        let result = self.inner.transact_write(writes).await;
        if result.is_err() && !self.done.swap(true, Ordering::SeqCst) {
            self.inner.delete_item(&self.key, Expect::Any).await?;
        }
        result
    }
}

/// A record of [`Counted`] at version `version`.
fn counted(id: &str, version: u64) -> Counted {
    Counted {
        note_id: id.to_owned(),
        created: 1_000,
        text: "hello".to_owned(),
        version,
    }
}

/// A move of a record deleted between its read and its transaction finds nothing to move: it
/// says so (`NotFound`), not that the record changed.
#[tokio::test]
async fn a_move_of_a_record_deleted_after_its_read_is_not_found() -> TestResult {
    let inner = MemoryStore::new(TableDefinition::from_schema(CountedNotes::schema()?)?);
    counted("n1", 5).create(&inner).await?;
    let store = Deleted {
        inner,
        key: key_of(&counted("n1", 6).to_item()?),
        before: true,
        done: AtomicBool::new(false),
    };
    let refused = Counted::move_record(&store, "n1", &counted("n2", 6)).await;
    assert!(
        matches!(&refused, Err(entity_manager::Error::NotFound { unique, .. }) if unique == "n1"),
        "{refused:?}"
    );
    assert_eq!(Counted::get(&store, "n2").await?, None, "nothing written");
    Ok(())
}

/// A move refused by its condition reports the record the condition met (the stored version
/// and item), even when the record is deleted right after: not what a later read finds.
#[tokio::test]
async fn a_refused_move_reports_the_record_its_condition_met() -> TestResult {
    let inner = MemoryStore::new(TableDefinition::from_schema(CountedNotes::schema()?)?);
    counted("n1", 5).create(&inner).await?;
    let stored = counted("n1", 6).to_item()?;
    let store = Deleted {
        inner,
        key: key_of(&stored),
        before: false,
        done: AtomicBool::new(false),
    };
    let refused = Counted::move_record(&store, "n1", &counted("n2", 5)).await;
    match refused {
        Err(entity_manager::Error::VersionConflict {
            expected,
            stored: version,
            current,
            ..
        }) => {
            assert_eq!((expected.as_str(), version.as_deref()), ("5", Some("6")));
            assert_eq!(current.as_deref(), Some(&stored));
        }
        other => panic!("expected VersionConflict, got {other:?}"),
    }
    assert_eq!(Counted::get(&store, "n2").await?, None, "nothing written");
    Ok(())
}

/// A guarded rewrite the store refuses for a reason other than its condition (every put
/// throttled) stops the migration with the store's error, the record named as unwritten: it
/// is not taken for a concurrent change, which would plan the record again from the item such
/// an error does not carry (none: counted vanished, and the run reported complete).
#[tokio::test]
async fn a_throttled_rewrite_stops_the_migration_with_the_store_error() -> TestResult {
    let store = ThrottledPuts {
        inner: MemoryStore::new(TableDefinition::from_schema(Notes::schema()?)?),
    };
    let record = note("hello", None);
    store.inner.put_item(record.to_item()?, Expect::Any).await?;
    let result = Migration::new()
        .records::<Note, Note, _>(shout)?
        .run(ParallelScan::new(&store), |_| ControlFlow::Continue(()))
        .await;
    match result {
        Err(e) => match &e.source {
            entity_manager::migrate::MigrateFailure::Rewrite { unwritten, source } => {
                assert_eq!(unwritten, &vec![key_of(&record.to_item()?)], "{e}");
                assert!(source.cause.is_throttled(), "{e}");
            }
            other => panic!("expected a failed rewrite, got {other:?}"),
        },
        Ok(report) => panic!("expected the throttled write to stop the run: {report:?}"),
    }
    assert_eq!(
        Note::get(&store.inner, "n1").await?,
        Some(record),
        "unchanged"
    );
    Ok(())
}

/// Another client changes the record at `key` (its `tag`, counted up) just before every move transaction (`before_delete` false) or every guarded delete
/// (true) reaches the table; `writes` counts those writes.
struct Churn<S> {
    inner: S,
    key: Item,
    before_delete: bool,
    writes: std::sync::atomic::AtomicUsize,
}

impl<S: Store> Churn<S> {
    async fn churn(&self) -> Result<(), StoreError> {
        let n = self.writes.fetch_add(1, Ordering::SeqCst);
        if let Some(mut stored) = self.inner.get_item(&self.key, None).await? {
            stored.insert("tag".to_owned(), AttributeValue::S(format!("churn {n}")));
            self.inner.put_item(stored, Expect::Any).await?;
        }
        Ok(())
    }
}

impl<S: Store> Store for Churn<S> {
    entity_manager_tests::forward_store!(inner: definition, name, put_item, get_item, batch_write, batch_get, update_item, transact_get, query_page, scan_page);

    async fn transact_write(
        &self,
        writes: Vec<entity_manager::store::TransactWrite>,
    ) -> Result<(), StoreError> {
        if !self.before_delete {
            self.churn().await?;
        }
        self.inner.transact_write(writes).await
    }

    async fn delete_item(&self, key: &Item, expect: Expect) -> Result<(), StoreError> {
        if self.before_delete && matches!(expect, Expect::Matches(_)) {
            self.churn().await?;
        }
        self.inner.delete_item(key, expect).await
    }
}

/// A move whose record another client changes before every attempt is planned and sent again
/// 32 times (33 transactions), then given up with an error naming it; the same when the new
/// item is there already (a move an exclusive job left half done) and the delete of the old
/// one is what keeps being refused (32 deletes, each after a transaction). The move drops the
/// tag, so the new item stays what the move writes.
#[tokio::test]
async fn a_move_refused_on_every_attempt_is_given_up_after_32_redos() -> TestResult {
    let untagged = |note: Note| Sharded {
        tag: None,
        ..sharded(note)
    };
    for (before_delete, writes) in [(false, 33), (true, 32)] {
        let inner = MemoryStore::new(TableDefinition::from_schema(ShardedNotes::schema()?)?);
        let old = note("hello", None);
        inner.put_item(old.to_item()?, Expect::Any).await?;
        if before_delete {
            inner
                .put_item(untagged(old.clone()).to_item()?, Expect::Any)
                .await?;
        }
        let store = Churn {
            inner,
            key: key_of(&old.to_item()?),
            before_delete,
            writes: std::sync::atomic::AtomicUsize::new(0),
        };
        let result = Migration::new()
            .records::<Note, Sharded, _>(untagged)?
            .run(ParallelScan::new(&store), |_| ControlFlow::Continue(()))
            .await;
        match result {
            Err(e) => assert!(
                matches!(&e.source, entity_manager::migrate::MigrateFailure::Move { entity, .. } if entity == "note"),
                "{e}"
            ),
            Ok(report) => panic!("expected the move to be given up: {report:?}"),
        }
        assert_eq!(
            store.writes.load(Ordering::SeqCst),
            writes,
            "before_delete {before_delete}"
        );
    }
    Ok(())
}

/// A typed update that rewrites a generated key (`nameRangeKey` of `Member`, from the last and
/// the first name) guards every component it read: another client changes the first name
/// between the read and the write, the update is refused, reads again and builds the key from
/// the first name as it is now. Guarding only the component it changes, the key kept the old
/// first name.
#[tokio::test]
async fn a_key_rewrite_guards_every_component_it_read() -> TestResult {
    use entity_manager::field::Changes;
    use entity_support::{Member, assert_stored, definition, member};
    let inner = MemoryStore::new(definition()?);
    member("a", 500).create(&inner).await?;
    let store = WriteFirst::new(inner, |item: &mut Item| {
        item.insert("firstName".to_owned(), AttributeValue::S("zed".to_owned()));
    });
    let f = Member::FIELDS;
    let updated = Member::update(&store, "a", Changes::new().set(f.last_name, "king"))
        .await?
        .ok_or("a missing")?;
    assert_eq!(
        (updated.first_name.as_str(), updated.last_name.as_str()),
        ("zed", "king")
    );
    assert_stored(&store.inner, &updated).await?;
    Ok(())
}

/// A table keyed by another range key attribute (`sk`) than `Notes`.
#[derive(Table)]
#[table(entities(OtherRange), range_key = "sk")]
struct OtherRangeNotes;

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = OtherRangeNotes, token = "note", unique = note_id, timestamp = created)]
struct OtherRange {
    #[transcode("string")]
    note_id: String,
    #[transcode("timestamp")]
    created: u64,
    text: String,
}

/// A table keyed by another hash key attribute (`pk`) than `Notes`.
#[derive(Table)]
#[table(entities(OtherHash), hash_key = "pk")]
struct OtherHashNotes;

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = OtherHashNotes, token = "note", unique = note_id, timestamp = created)]
struct OtherHash {
    #[transcode("string")]
    note_id: String,
    #[transcode("timestamp")]
    created: u64,
    text: String,
}

/// A migration to a table whose key attributes differ from the source's in either name is
/// refused before it starts: its writes would put items the table is not keyed by.
#[test]
fn a_migration_between_other_table_keys_is_refused() {
    use entity_manager::migrate::IncompatibleSchemas;
    let range = Migration::new()
        .records::<Note, OtherRange, _>(|n| OtherRange {
            note_id: n.note_id,
            created: n.created,
            text: n.text,
        })
        .err();
    let hash = Migration::new()
        .records::<Note, OtherHash, _>(|n| OtherHash {
            note_id: n.note_id,
            created: n.created,
            text: n.text,
        })
        .err();
    for (refused, keys) in [(range, ("hashKey", "sk")), (hash, ("pk", "rangeKey"))] {
        match refused {
            Some(IncompatibleSchemas::TableKeys {
                to_hash, to_range, ..
            }) => assert_eq!((to_hash.as_str(), to_range.as_str()), keys),
            other => panic!("{keys:?}: expected TableKeys, got {other:?}"),
        }
    }
}

/// Finishing a move an exclusive job left half done, the delete of the old item is refused by
/// the store for a reason other than its condition (throttled): the migration stops with that
/// error. It is not counted moved while the old item is still there.
#[tokio::test]
async fn a_throttled_finish_of_a_half_done_move_stops_the_migration() -> TestResult {
    let store = ThrottledPuts {
        inner: MemoryStore::new(TableDefinition::from_schema(ShardedNotes::schema()?)?),
    };
    let old = note("hello", None);
    store.inner.put_item(old.to_item()?, Expect::Any).await?;
    store
        .inner
        .put_item(sharded(old.clone()).to_item()?, Expect::Any)
        .await?;
    let result = Migration::new()
        .records::<Note, Sharded, _>(sharded)?
        .run(ParallelScan::new(&store), |_| ControlFlow::Continue(()))
        .await;
    match result {
        Err(e) => assert!(
            matches!(&e.source, entity_manager::migrate::MigrateFailure::Move { source, .. } if source.is_throttled()),
            "{e}"
        ),
        Ok(report) => panic!("expected the throttled delete to stop the run: {report:?}"),
    }
    assert!(
        store
            .inner
            .get_item(&key_of(&old.to_item()?), None)
            .await?
            .is_some(),
        "the old item is still there"
    );
    Ok(())
}

/// A transaction's conditional put writes the record when its condition holds for the stored
/// one, and fails the transaction with `ConditionFailed` (nothing written) when it does not.
#[tokio::test]
async fn a_transaction_put_if_writes_only_when_its_condition_holds() -> TestResult {
    use entity_manager::Transaction;
    let store = MemoryStore::new(TableDefinition::from_schema(Notes::schema()?)?);
    let f = Note::FIELDS;
    note("hello", None).create(&store).await?;
    let refused = Transaction::new()
        .put_if(&note("bye", None), f.text.eq("other"))?
        .commit(&store)
        .await;
    assert!(
        matches!(&refused, Err(entity_manager::Error::ConditionFailed { .. })),
        "{refused:?}"
    );
    assert_eq!(Note::get(&store, "n1").await?, Some(note("hello", None)));
    Transaction::new()
        .put_if(&note("bye", None), f.text.eq("hello"))?
        .commit(&store)
        .await?;
    assert_eq!(Note::get(&store, "n1").await?, Some(note("bye", None)));
    Ok(())
}

/// A put of a record read at version 6 whose stored record is gone (deleted since) is a
/// version conflict, not a new record: only a put of version 0 creates one.
#[tokio::test]
async fn a_versioned_put_of_a_deleted_record_is_a_version_conflict() -> TestResult {
    let store = MemoryStore::new(TableDefinition::from_schema(CountedNotes::schema()?)?);
    let refused = counted("n1", 6).put(&store).await;
    assert!(
        matches!(&refused, Err(entity_manager::Error::VersionConflict { expected, stored: None, .. }) if expected == "6"),
        "{refused:?}"
    );
    assert_eq!(Counted::get(&store, "n1").await?, None, "nothing written");
    counted("n1", 0).put(&store).await?;
    assert_eq!(Counted::get(&store, "n1").await?, Some(counted("n1", 1)));
    Ok(())
}

/// A move to the record's own primary key (the same unique value and timestamp, another text)
/// replaces the record in place.
#[tokio::test]
async fn a_move_to_the_same_key_replaces_the_record() -> TestResult {
    let store = MemoryStore::new(TableDefinition::from_schema(Notes::schema()?)?);
    note("hello", None).create(&store).await?;
    Note::move_record(&store, "n1", &note("moved", Some("t"))).await?;
    assert_eq!(
        Note::get(&store, "n1").await?,
        Some(note("moved", Some("t")))
    );
    Ok(())
}

#[derive(Table)]
#[table(entities(Titled))]
struct TitledNotes;

/// One candidate key (no shard bumps) and a generated key (`titleKey`, from the title).
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = TitledNotes, token = "note", unique = note_id, timestamp = created)]
#[generated(name = title_key, components = [title])]
#[index(name = "byTitle", range = title_key)]
struct Titled {
    #[transcode("string")]
    note_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    title: String,
}

/// A typed update of a generated key's component on a record with one candidate key rewrites
/// the key (it reads the record first for that, though it need not to find it).
#[tokio::test]
async fn a_typed_update_of_a_component_rewrites_the_key_of_a_one_key_record() -> TestResult {
    use entity_manager::field::Changes;
    let store = MemoryStore::new(TableDefinition::from_schema(TitledNotes::schema()?)?);
    let titled = |title: &str| Titled {
        note_id: "n1".to_owned(),
        created: 1_000,
        title: title.to_owned(),
    };
    titled("a").create(&store).await?;
    let f = Titled::FIELDS;
    let updated = Titled::update(&store, "n1", Changes::new().set(f.title, "b"))
        .await?
        .ok_or("n1 missing")?;
    assert_eq!(updated, titled("b"));
    let item = updated.to_item()?;
    assert_eq!(store.get_item(&key_of(&item), None).await?, Some(item));
    Ok(())
}

/// A store whose transactions are all canceled by a conflict with another transaction on
/// their first action (`TransactionConflict`, not a failed condition).
struct Conflicted<S> {
    inner: S,
}

impl<S: Store> Store for Conflicted<S> {
    entity_manager_tests::forward_store!(inner: definition, name, put_item, get_item, delete_item, batch_write, batch_get, update_item, transact_get, query_page, scan_page);

    async fn transact_write(
        &self,
        writes: Vec<entity_manager::store::TransactWrite>,
    ) -> Result<(), StoreError> {
        use entity_manager::store::CancellationReason;
        let mut reasons = vec![CancellationReason::NONE; writes.len()];
        if let Some(first) = reasons.first_mut() {
            first.code = Some("TransactionConflict".to_owned());
        }
        Err(StoreError::transaction_canceled(
            "TransactWriteItems",
            reasons,
        ))
    }
}

/// A put (a transaction: the put and a check of the other candidate key) canceled by a
/// transaction conflict is the store's error, which may be retried; it is not a failed
/// condition.
#[tokio::test]
async fn a_put_canceled_by_a_transaction_conflict_is_a_store_error() -> TestResult {
    let store = Conflicted {
        inner: MemoryStore::new(TableDefinition::from_schema(LayeredNotes::schema()?)?),
    };
    let refused = layered("n1").put(&store).await;
    assert!(
        matches!(
            &refused,
            Err(entity_manager::Error::Store { operation: "TransactWriteItems", source, .. })
                if source.is_transaction_canceled()
        ),
        "{refused:?}"
    );
    Ok(())
}
