//! Wide records: a typed update or `modify` that changes 300 attributes renders an
//! `UpdateItem` far over `DynamoDB`'s 4 KB expression limit (which both stores enforce alike).
//! It never fails late: with a version field, the whole record is put instead, conditioned on
//! the version read, so the read-modify-write stays safe (concurrent wide writers lose
//! nothing); without one, the read-modify-write could only be guarded attribute by attribute,
//! which is over the limits too, so the write is refused before anything is written, with a
//! typed error that says to add a version field.
//!
//! The entities have 300 named fields (written by one `macro_rules!` from a list of names, so
//! that the derive sees what a user's wide struct would give it). Their futures are large,
//! hence boxed.
#![allow(clippy::struct_field_names, clippy::too_many_lines)]

use entity_manager::field::Changes;
use entity_manager::limits::{ExpressionKind, ExpressionLimit};
use entity_manager::store::{Expect, MemoryStore, ReturnValues, Store, TableDefinition, Update};
use entity_manager::{Entity, EntityExt, Error, Table};
use serde::{Deserialize, Serialize};

mod entity_support;
mod store_support;

use entity_support::{TestResult, assert_stored, key_of};

#[derive(Table)]
#[table(entities(Wide, Bare))]
struct Wides;

/// Two entities of 300 string fields each (`Wide` with a version field, `Bare` without) and
/// their helpers, from one list of field names.
macro_rules! wide_entities {
    ($($f:ident)*) => {
        /// 300 string fields and a version field.
        #[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
        #[serde(rename_all = "camelCase")]
        #[entity(table = Wides, unique = wide_id, timestamp = created, version = version)]
        #[shard_bumps(bumps = [bump(timestamp = 1_000, char_bits = 2, chars = 1)])]
        struct Wide {
            #[transcode("string")]
            wide_id: String,
            #[transcode("timestamp")]
            created: u64,
            version: u64,
            $($f: String,)*
        }

        /// The same 300 fields, without a version field.
        #[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
        #[serde(rename_all = "camelCase")]
        #[entity(table = Wides, unique = bare_id, timestamp = created)]
        struct Bare {
            #[transcode("string")]
            bare_id: String,
            #[transcode("timestamp")]
            created: u64,
            $($f: String,)*
        }

        fn wide(id: &str, created: u64) -> Wide {
            Wide {
                wide_id: id.to_owned(),
                created,
                version: 0,
                $($f: String::new(),)*
            }
        }

        fn bare(id: &str) -> Bare {
            Bare {
                bare_id: id.to_owned(),
                created: 1,
                $($f: String::new(),)*
            }
        }

        /// Changes every field: `tag` in front of its text (so that the stamps of concurrent
        /// writers pile up).
        fn stamp_wide(w: &mut Wide, tag: &str) {
            $(w.$f = format!("{tag}{}", w.$f);)*
        }

        fn stamp_bare(w: &mut Bare, tag: &str) {
            $(w.$f = format!("{tag}{}", w.$f);)*
        }

        /// Sets every field to `tag` and its number (`f007` gets `<tag>007`).
        fn set_every_wide(tag: &str) -> Changes<Wide> {
            let f = Wide::FIELDS;
            Changes::new()$(.set(f.$f, format!("{tag}{}", &stringify!($f)[1..])))*
        }

        fn set_every_bare(tag: &str) -> Changes<Bare> {
            let f = Bare::FIELDS;
            Changes::new()$(.set(f.$f, format!("{tag}{}", &stringify!($f)[1..])))*
        }
    };
}

wide_entities!(
    f000 f001 f002 f003 f004 f005 f006 f007 f008 f009 f010 f011 f012 f013 f014
    f015 f016 f017 f018 f019 f020 f021 f022 f023 f024 f025 f026 f027 f028 f029
    f030 f031 f032 f033 f034 f035 f036 f037 f038 f039 f040 f041 f042 f043 f044
    f045 f046 f047 f048 f049 f050 f051 f052 f053 f054 f055 f056 f057 f058 f059
    f060 f061 f062 f063 f064 f065 f066 f067 f068 f069 f070 f071 f072 f073 f074
    f075 f076 f077 f078 f079 f080 f081 f082 f083 f084 f085 f086 f087 f088 f089
    f090 f091 f092 f093 f094 f095 f096 f097 f098 f099 f100 f101 f102 f103 f104
    f105 f106 f107 f108 f109 f110 f111 f112 f113 f114 f115 f116 f117 f118 f119
    f120 f121 f122 f123 f124 f125 f126 f127 f128 f129 f130 f131 f132 f133 f134
    f135 f136 f137 f138 f139 f140 f141 f142 f143 f144 f145 f146 f147 f148 f149
    f150 f151 f152 f153 f154 f155 f156 f157 f158 f159 f160 f161 f162 f163 f164
    f165 f166 f167 f168 f169 f170 f171 f172 f173 f174 f175 f176 f177 f178 f179
    f180 f181 f182 f183 f184 f185 f186 f187 f188 f189 f190 f191 f192 f193 f194
    f195 f196 f197 f198 f199 f200 f201 f202 f203 f204 f205 f206 f207 f208 f209
    f210 f211 f212 f213 f214 f215 f216 f217 f218 f219 f220 f221 f222 f223 f224
    f225 f226 f227 f228 f229 f230 f231 f232 f233 f234 f235 f236 f237 f238 f239
    f240 f241 f242 f243 f244 f245 f246 f247 f248 f249 f250 f251 f252 f253 f254
    f255 f256 f257 f258 f259 f260 f261 f262 f263 f264 f265 f266 f267 f268 f269
    f270 f271 f272 f273 f274 f275 f276 f277 f278 f279 f280 f281 f282 f283 f284
    f285 f286 f287 f288 f289 f290 f291 f292 f293 f294 f295 f296 f297 f298 f299
);

fn definition() -> Result<TableDefinition, Box<dyn std::error::Error>> {
    Ok(TableDefinition::from_schema(Wides::schema()?)?)
}

/// Every non-key attribute of a record's item, set, as one `UpdateItem` would write them.
fn set_every_attribute<E: Entity + Serialize>(
    record: &E,
) -> Result<Update, Box<dyn std::error::Error>> {
    let item = record.to_item()?;
    Ok(item
        .iter()
        .filter(|(name, _)| !["hashKey", "rangeKey"].contains(&name.as_str()))
        .fold(Update::new(), |u, (name, value)| {
            u.set(name.clone(), value.clone())
        }))
}

async fn wide_versioned<S: Store>(store: &S) -> TestResult {
    for (id, created) in [("w1", 500), ("w2", 1_500)] {
        wide(id, created).create(store).await?;
    }

    // one UpdateItem that sets every attribute is over the 4 KB limit: both stores refuse it
    let mut expected = Wide::get(store, "w1").await?.ok_or("w1 missing")?;
    stamp_wide(&mut expected, "m");
    let refused = store
        .update_item(
            &key_of(&expected)?,
            &set_every_attribute(&expected)?,
            entity_manager::store::Expect::Present,
            ReturnValues::None,
        )
        .await;
    let detail = refused
        .as_ref()
        .err()
        .and_then(|e| e.expression_too_large().copied());
    assert_eq!(
        detail.map(|d| (d.expression, d.limit)),
        Some((ExpressionKind::Update, ExpressionLimit::Length)),
        "{refused:?}"
    );
    assert!(detail.is_some_and(|d| d.size > d.max()));

    // modify changing all 300 fields: the whole record is put, guarded by the version
    let modified = Wide::modify(store, "w1", |w| stamp_wide(w, "m"))
        .await?
        .ok_or("w1 missing")?;
    expected.version = 2;
    assert_eq!(modified, expected);
    assert_stored(store, &modified).await?;
    assert_eq!(Wide::get(store, "w1").await?.as_ref(), Some(&modified));

    // a typed update setting all 300 fields (a blind update otherwise): read, then put
    let updated = Wide::update(store, "w2", set_every_wide("u"))
        .await?
        .ok_or("w2 missing")?;
    assert_eq!(
        (
            updated.f000.as_str(),
            updated.f299.as_str(),
            updated.version
        ),
        ("u000", "u299", 2)
    );
    assert_stored(store, &updated).await?;

    // a stale version: a typed conflict, nothing written
    let stale = Wide::update(store, "w2", set_every_wide("s").if_version(1_u64)).await;
    assert!(
        matches!(&stale, Err(Error::VersionConflict { expected, stored, .. })
            if expected == "1" && stored.as_deref() == Some("2")),
        "{stale:?}"
    );
    // a failed condition: typed, nothing written
    let f = Wide::FIELDS;
    let refused = Wide::update(store, "w2", set_every_wide("c").when(f.f000.eq("nope"))).await;
    assert!(
        matches!(refused, Err(Error::ConditionFailed { .. })),
        "{refused:?}"
    );
    assert_stored(store, &updated).await?;
    assert_eq!(Wide::get(store, "w2").await?.as_ref(), Some(&updated));

    // a missing record: nothing
    assert_eq!(
        Wide::update(store, "nobody", set_every_wide("x")).await?,
        None
    );
    assert_eq!(
        Wide::modify(store, "nobody", |w| stamp_wide(w, "x")).await?,
        None
    );
    Ok(())
}

/// Eight writers stamp every field of one wide record at once, each retrying on a conflict:
/// no stamp is lost (each field's text grows once per writer).
async fn concurrent_wide_writers<S: Store + 'static>(store: std::sync::Arc<S>) -> TestResult {
    wide("hot", 10).create(&*store).await?;
    let writers: Vec<_> = (0..8)
        .map(|_| {
            let store = std::sync::Arc::clone(&store);
            tokio::spawn(async move {
                loop {
                    match Wide::modify(&*store, "hot", |w| stamp_wide(w, "x")).await {
                        Ok(_) => return Ok(()),
                        Err(Error::Conflict { .. }) => tokio::task::yield_now().await,
                        Err(e) => return Err(e),
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.await??;
    }
    let hot = Wide::get(&*store, "hot").await?.ok_or("hot missing")?;
    // one stamp per writer, and the version counts the writes independently
    assert_eq!(hot.version, 1 + 8);
    let text = "x".repeat(8);
    assert_eq!(hot.f000, text);
    assert_eq!(hot.f299, text);
    assert_stored(&*store, &hot).await?;
    Ok(())
}

async fn wide_unversioned<S: Store>(store: &S) -> TestResult {
    let original = bare("b1");
    original.create(store).await?;
    let stored = Bare::get(store, "b1").await?.ok_or("b1 missing")?;

    // without a version field the read-modify-write would need a condition on all 300
    // attributes: refused before any write, saying to add a version field
    let refused = Bare::modify(store, "b1", |b| stamp_bare(b, "m")).await;
    let Err(Error::Store { source, .. }) = &refused else {
        return Err(format!("expected a store error, got {refused:?}").into());
    };
    let detail = source
        .expression_too_large()
        .ok_or("no expression detail")?;
    assert_eq!(detail.expression, ExpressionKind::Condition);
    assert!(detail.size > detail.max());
    assert!(source.to_string().contains("version field"), "{source}");

    let refused = Bare::update(store, "b1", set_every_bare("u")).await;
    assert!(
        matches!(&refused, Err(Error::Store { source, .. }) if source.expression_too_large().is_some()),
        "{refused:?}"
    );
    // nothing was written
    assert_eq!(Bare::get(store, "b1").await?.as_ref(), Some(&stored));
    assert_stored(store, &stored).await?;
    Ok(())
}

/// A store where another client moves a record (`move_record` to `moved`: the same unique
/// value at a timestamp under the schedule's other bump, so another candidate key) just before
/// the first guarded `put_item` reaches the table.
struct MovedBeforePut<S> {
    inner: S,
    moved: Wide,
    done: std::sync::atomic::AtomicBool,
}

impl<S: Store> Store for MovedBeforePut<S> {
    entity_manager_tests::forward_store!(inner: definition, name, get_item, delete_item, batch_write, batch_get, transact_write, transact_get, query_page, scan_page);

    async fn put_item(
        &self,
        item: entity_manager::Item,
        expect: Expect,
    ) -> Result<(), entity_manager::store::StoreError> {
        self.move_first(&expect).await?;
        self.inner.put_item(item, expect).await
    }

    async fn update_item(
        &self,
        key: &entity_manager::Item,
        update: &Update,
        expect: Expect,
        returns: ReturnValues,
    ) -> Result<Option<entity_manager::Item>, entity_manager::store::StoreError> {
        self.move_first(&expect).await?;
        self.inner.update_item(key, update, expect, returns).await
    }
}

impl<S: Store> MovedBeforePut<S> {
    /// The other client's move, once: before the first guarded write.
    async fn move_first(&self, expect: &Expect) -> Result<(), entity_manager::store::StoreError> {
        if matches!(expect, Expect::Matches(_))
            && !self.done.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            Box::pin(Wide::move_record(
                &self.inner,
                &self.moved.wide_id,
                &self.moved,
            ))
            .await
            .map_err(|e| {
                entity_manager::store::StoreError::new(
                    entity_manager::store::StoreErrorKind::Other,
                    "PutItem",
                    e.to_string(),
                )
            })?;
        }
        Ok(())
    }
}

/// A typed update whose record moved to another candidate key between the read and the write
/// finds the key read empty: it reads the record again where it went and writes it there; it
/// does not report a missing record. `changes` sets `f000` to `f000`: all 300 fields (the
/// whole record put) or that one (one `UpdateItem`).
async fn wide_update_of_a_moved_record(changes: Changes<Wide>, f000: &str) -> TestResult {
    let inner = MemoryStore::new(definition()?);
    wide("w3", 500).create(&inner).await?;
    // the same record at 1,500 (sharded from 1,000), holding the stored version
    let moved = Wide {
        created: 1_500,
        version: 1,
        ..wide("w3", 500)
    };
    assert_ne!(
        key_of(&moved)?,
        key_of(&wide("w3", 500))?,
        "two candidate keys"
    );
    let store = MovedBeforePut {
        inner,
        moved,
        done: std::sync::atomic::AtomicBool::new(false),
    };
    let updated = Wide::update(&store, "w3", changes)
        .await?
        .ok_or("the moved record was reported missing")?;
    assert_eq!(
        (updated.created, updated.f000.as_str(), updated.version),
        (1_500, f000, 3)
    );
    assert_stored(&store.inner, &updated).await?;
    assert_eq!(
        store
            .inner
            .get_item(&key_of(&wide("w3", 500))?, None)
            .await?,
        None
    );
    Ok(())
}

#[tokio::test]
async fn a_wide_update_follows_a_record_moved_after_its_read() -> TestResult {
    Box::pin(wide_update_of_a_moved_record(set_every_wide("u"), "u000")).await?;
    let f = Wide::FIELDS;
    Box::pin(wide_update_of_a_moved_record(
        Changes::new().set(f.f000, "one"),
        "one",
    ))
    .await
}

#[tokio::test]
async fn wide_versioned_records_are_put_whole_on_memory() -> TestResult {
    Box::pin(wide_versioned(&MemoryStore::new(definition()?))).await
}

#[tokio::test]
async fn wide_versioned_records_are_put_whole_on_dynamodb() -> TestResult {
    let Some(store) = store_support::dynamo_store("wide", definition()?).await? else {
        return Ok(());
    };
    Box::pin(wide_versioned(&store)).await
}

#[tokio::test]
async fn concurrent_wide_writers_lose_nothing_on_memory() -> TestResult {
    Box::pin(concurrent_wide_writers(std::sync::Arc::new(
        MemoryStore::new(definition()?),
    )))
    .await
}

#[tokio::test]
async fn concurrent_wide_writers_lose_nothing_on_dynamodb() -> TestResult {
    let Some(store) = store_support::dynamo_store("wide-hot", definition()?).await? else {
        return Ok(());
    };
    Box::pin(concurrent_wide_writers(std::sync::Arc::new(store))).await
}

#[tokio::test]
async fn wide_unversioned_records_are_refused_before_any_write_on_memory() -> TestResult {
    Box::pin(wide_unversioned(&MemoryStore::new(definition()?))).await
}

#[tokio::test]
async fn wide_unversioned_records_are_refused_before_any_write_on_dynamodb() -> TestResult {
    let Some(store) = store_support::dynamo_store("wide-bare", definition()?).await? else {
        return Ok(());
    };
    Box::pin(wide_unversioned(&store)).await
}

#[derive(Table)]
#[table(entities(Edge))]
struct Edges;

/// An entity without a version whose records have 149 attributes besides their keys (an id,
/// a timestamp and 147 strings): the guard of a migration's rewrite (each attribute equal to
/// the value read, `AND`ed, and the hash key's `attribute_exists`) has 2 × 149 + 1 = 299
/// operators and functions, one under `DynamoDB`'s 300. The table keys are not compared:
/// the item stored under the key read has those key values.
macro_rules! edge_entity {
    ($($f:ident)*) => {
        #[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
        #[serde(rename_all = "camelCase")]
        #[entity(table = Edges, unique = edge_id, timestamp = created)]
        struct Edge {
            #[transcode("string")]
            edge_id: String,
            #[transcode("timestamp")]
            created: u64,
            $($f: String,)*
        }

        fn edge(id: &str) -> Edge {
            Edge {
                edge_id: id.to_owned(),
                created: 1,
                $($f: String::new(),)*
            }
        }
    };
}

edge_entity!(
    e000 e001 e002 e003 e004 e005 e006 e007 e008 e009 e010 e011 e012 e013 e014 e015 e016
    e017 e018 e019 e020 e021 e022 e023 e024 e025 e026 e027 e028 e029 e030 e031 e032 e033
    e034 e035 e036 e037 e038 e039 e040 e041 e042 e043 e044 e045 e046 e047 e048 e049 e050
    e051 e052 e053 e054 e055 e056 e057 e058 e059 e060 e061 e062 e063 e064 e065 e066 e067
    e068 e069 e070 e071 e072 e073 e074 e075 e076 e077 e078 e079 e080 e081 e082 e083 e084
    e085 e086 e087 e088 e089 e090 e091 e092 e093 e094 e095 e096 e097 e098 e099 e100 e101
    e102 e103 e104 e105 e106 e107 e108 e109 e110 e111 e112 e113 e114 e115 e116 e117 e118
    e119 e120 e121 e122 e123 e124 e125 e126 e127 e128 e129 e130 e131 e132 e133 e134 e135
    e136 e137 e138 e139 e140 e141 e142 e143 e144 e145 e146
);

/// A migration rewrites a record whose guard is at the edge of the operator limit (299 of
/// 300): the guard holds what it must and nothing more.
async fn migration_at_the_operator_limit() -> TestResult {
    use std::ops::ControlFlow;

    use entity_manager::migrate::Migration;
    use entity_manager::scan::ParallelScan;

    let store = MemoryStore::new(TableDefinition::from_schema(Edges::schema()?)?);
    edge("e1").create(&store).await?;
    let report = Migration::new()
        .records::<Edge, Edge, _>(|mut e: Edge| {
            "migrated".clone_into(&mut e.e000);
            e
        })?
        .run(ParallelScan::new(&store), |_| ControlFlow::Continue(()))
        .await?;
    assert!(report.complete);
    let counts = report
        .counts
        .entities
        .get("edge")
        .copied()
        .unwrap_or_default();
    assert_eq!(counts.rewritten, 1, "{counts:?}");
    let stored = Edge::get(&store, "e1").await?.ok_or("e1 missing")?;
    assert_eq!(stored.e000, "migrated");
    Ok(())
}

#[tokio::test]
async fn a_migration_guard_at_the_operator_limit_is_sent() -> TestResult {
    Box::pin(migration_at_the_operator_limit()).await
}

/// A store that counts the single-item puts and updates it is sent.
struct Calls<S> {
    inner: S,
    puts: std::sync::atomic::AtomicUsize,
    updates: std::sync::atomic::AtomicUsize,
}

impl<S> Calls<S> {
    fn put(&self) {
        self.puts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    fn update(&self) {
        self.updates
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// The puts and the updates counted since the last call.
    fn take(&self) -> (usize, usize) {
        use std::sync::atomic::Ordering::SeqCst;
        (self.puts.swap(0, SeqCst), self.updates.swap(0, SeqCst))
    }
}

impl<S: Store> Store for Calls<S> {
    entity_manager_tests::forward_store!(inner: definition, name, get_item, delete_item, batch_write, batch_get, transact_write, transact_get, query_page, scan_page);
    entity_manager_tests::forward_store!(inner, then put: put_item);
    entity_manager_tests::forward_store!(inner, then update: update_item);
}

/// A `modify` that changes one field of a wide record sends that change alone, in one
/// `UpdateItem`; only a change one `UpdateItem` cannot hold (all 300 fields) is put whole.
async fn narrow_and_wide_changes() -> TestResult {
    let store = Calls {
        inner: MemoryStore::new(definition()?),
        puts: std::sync::atomic::AtomicUsize::new(0),
        updates: std::sync::atomic::AtomicUsize::new(0),
    };
    wide("w4", 500).create(&store.inner).await?;
    let one = Wide::modify(&store, "w4", |w| "one".clone_into(&mut w.f150))
        .await?
        .ok_or("w4 missing")?;
    assert_eq!((one.f150.as_str(), one.version), ("one", 2));
    assert_eq!(store.take(), (0, 1), "one UpdateItem");
    assert_stored(&store.inner, &one).await?;
    let all = Wide::modify(&store, "w4", |w| stamp_wide(w, "a"))
        .await?
        .ok_or("w4 missing")?;
    assert_eq!((all.f150.as_str(), all.version), ("aone", 3));
    assert_eq!(store.take(), (1, 0), "the whole record put");
    assert_stored(&store.inner, &all).await?;
    Ok(())
}

#[tokio::test]
async fn a_narrow_change_of_a_wide_record_is_one_update() -> TestResult {
    Box::pin(narrow_and_wide_changes()).await
}
