//! Shared by the entity tests: the `Club` table (a sharded, versioned `Member` with a generated
//! key and a sparse index, and a one-bump `Counter`), and helpers that page through a typed
//! query and compare a stored item with `to_item` of its record.

#![allow(dead_code, unreachable_pub, clippy::struct_field_names)]

use entity_manager::query::{Classic, TypedIndex, TypedQuery};
use entity_manager::store::{RangeCondition, Store, TableDefinition};
use entity_manager::{AttributeValue, Entity, EntityExt, Item, Table};
use serde::{Deserialize, Serialize};

/// The result of a test step.
pub type TestResult = Result<(), Box<dyn std::error::Error>>;

#[derive(Table)]
#[table(entities(Member, Counter))]
pub struct Club;

/// Three shard bumps, a generated `nameRangeKey` (last name, first name), a sparse `phone`
/// index, a list field and a version field.
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Club, unique = member_id, timestamp = created, version = version)]
#[shard_bumps(bumps = [
    bump(timestamp = 1_000, char_bits = 2, chars = 1),
    bump(timestamp = 2_000, char_bits = 2, chars = 2),
])]
#[generated(name = name_range_key, components = [last_name, first_name])]
#[index(name = "lastName", range = name_range_key)]
#[index(name = "phone", range = phone)]
pub struct Member {
    #[transcode("string")]
    pub member_id: String,
    #[transcode("timestamp")]
    pub created: u64,
    #[transcode("string")]
    pub first_name: String,
    #[transcode("string")]
    pub last_name: String,
    #[transcode("string")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phone: Option<String>,
    pub logins: u64,
    pub tags: Vec<String>,
    pub version: u64,
}

/// One shard bump: a put is one `PutItem`.
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Club, unique = counter_id, timestamp = created, version = version)]
pub struct Counter {
    #[transcode("string")]
    pub counter_id: String,
    #[transcode("timestamp")]
    pub created: u64,
    pub value: u64,
    pub version: u64,
}

/// A member with names and a phone derived from `id`, version 0.
pub fn member(id: &str, created: u64) -> Member {
    Member {
        member_id: id.to_owned(),
        created,
        first_name: format!("first{id}"),
        last_name: format!("last{id}"),
        phone: Some(format!("555-{id}")),
        logins: 0,
        tags: vec!["new".to_owned()],
        version: 0,
    }
}

/// The table of `Club`.
pub fn definition() -> Result<TableDefinition, Box<dyn std::error::Error>> {
    Ok(TableDefinition::from_schema(Club::schema()?)?)
}

/// The ids (by `id`) of every record a query returns over every page, sorted.
pub async fn all_ids<S: Store, E: Entity + serde::de::DeserializeOwned>(
    query: &TypedQuery<'_, S, E>,
    id: impl Fn(E) -> String,
) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let mut ids = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = query.page(token.as_deref()).await?;
        ids.extend(page.items.into_iter().map(&id));
        match page.next {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    ids.sort();
    Ok(ids)
}

/// The members an index finds (under `range`, if given), paged by `limit`.
pub async fn member_ids<S: Store>(
    store: &S,
    index: TypedIndex<Member, Classic>,
    range: Option<RangeCondition>,
    limit: usize,
) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let mut query = Member::query(store)?.index(index).shards_between(0, 10_000);
    if let Some(range) = range {
        query = query.range(range);
    }
    all_ids(&query.limit(limit), |m| m.member_id).await
}

/// The members the `lastName` index finds under a last-name prefix.
pub async fn by_last_name<S: Store>(
    store: &S,
    prefix: &str,
) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let prefix = Member::name_range_key().last_name(prefix)?;
    let range = RangeCondition::BeginsWith(AttributeValue::S(prefix.as_str().to_owned()));
    member_ids(store, MemberIndex::LastName, Some(range), 10).await
}

/// The members the sparse `phone` index holds.
pub async fn with_phone<S: Store>(store: &S) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    member_ids(store, MemberIndex::Phone, None, 10).await
}

/// The table key of a record.
pub fn key_of<E: Entity + Serialize>(record: &E) -> Result<Item, Box<dyn std::error::Error>> {
    let key = record.primary_key()?;
    let mut item = Item::default();
    item.insert("hashKey".into(), AttributeValue::S(key.hash_key));
    item.insert("rangeKey".into(), AttributeValue::S(key.range_key));
    Ok(item)
}

/// The stored item of a record equals `to_item` of it.
pub async fn assert_stored<S: Store, E: Entity + Serialize>(store: &S, record: &E) -> TestResult {
    let key = key_of(record)?;
    let stored = store.get_item(&key, None).await?.ok_or("not stored")?;
    assert_eq!(stored, record.to_item()?, "stored item of {key:?}");
    Ok(())
}

/// One version-locked increment of the `Counter` `c`: by `modify` for an even `task`, by a
/// transaction under the version read for an odd one. `Ok(true)` when the store acknowledged
/// it; `Ok(false)` when it lost a race or met a retryable failure (try again); `Err` otherwise.
pub async fn increment_once<S: Store>(store: &S, task: usize) -> Result<bool, String> {
    use entity_manager::field::Changes;
    use entity_manager::{Error, Transaction};
    let result = if task.is_multiple_of(2) {
        Counter::modify(store, "c", |c| c.value += 1)
            .await
            .map(|c| c.is_some())
    } else {
        match Counter::get(store, "c").await {
            Ok(Some(now)) => match Transaction::new().update(
                &now,
                Changes::new()
                    .set(Counter::FIELDS.value, now.value + 1)
                    .if_version(now.version),
            ) {
                Ok(tx) => tx.commit(store).await.map(|()| true),
                Err(e) => Err(e),
            },
            Ok(None) => Ok(false),
            Err(e) => Err(e),
        }
    };
    match result {
        Ok(true) => Ok(true),
        Ok(false) => Err("the counter is gone".to_owned()),
        Err(Error::VersionConflict { .. } | Error::Conflict { .. }) => Ok(false),
        Err(Error::Store { source, .. }) if source.is_retryable() => Ok(false),
        // a condition that refused a resend after an unanswered attempt: the callers' faults
        // all come before the request reaches the table, so it was not applied
        Err(Error::Store { source, .. }) if source.is_refused_after_lost_answer() => Ok(false),
        Err(e) => Err(e.to_string()),
    }
}
