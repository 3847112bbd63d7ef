//! The cross-shard query on DynamoDB Local: a smaller oracle run, and the seed docs' access
//! patterns through the typed builder.
//!
//! Runs when `DYNAMODB_ENDPOINT` is set (`.ci/run` starts DynamoDB Local); skips with a printed
//! reason otherwise, except under `CI=true`, where it fails.

use std::collections::HashSet;

use entity_manager::query::untyped::Query;
use entity_manager::store::{RangeCondition, Store, TableDefinition, WriteRequest};
use entity_manager::{AttributeValue, Entity, EntityExt, Item, Table};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

mod query_support;
mod store_support;
#[macro_use]
mod user_service;

use query_support::{
    Record, bumps, condition_on_created, oracle, order, page_all_on, records, schema, score_filter,
    text, window,
};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn runtime() -> Result<tokio::runtime::Runtime, std::io::Error> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// A new table of `schema` on DynamoDB Local (named after `name`), holding `records` with their
/// keys.
async fn loaded(
    client: aws_sdk_dynamodb::Client,
    name: &str,
    schema: &entity_manager::Schema,
    records: &[Record],
) -> Result<entity_manager::store::DynamoStore, Box<dyn std::error::Error>> {
    let store = entity_manager::store::DynamoStore::new(
        client,
        store_support::unique_table(name),
        TableDefinition::from_schema(schema)?,
    );
    store.create_table().await?;
    let user = schema.entity("user")?;
    let writes = records
        .iter()
        .map(|r| Ok(WriteRequest::Put(user.add_keys(&r.item()?)?)))
        .collect::<Result<Vec<_>, Box<dyn std::error::Error>>>()?;
    store.batch_write(writes).await?;
    Ok(store)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// The oracle property of the in-memory run, smaller, on DynamoDB Local.
    #[test]
    fn exact_mode_pages_equal_the_oracle_on_dynamodb_local(
        (bumps, space) in bumps(),
        records in records(250),
        window in window(),
        limit in 1usize..40,
        descending in any::<bool>(),
        condition in condition_on_created(),
        min_score in proptest::option::weighted(0.4, -50i64..50),
    ) {
        let check = || -> TestResult {
            let Some(client) = store_support::dynamo_client() else { return Ok(()) };
            runtime()?.block_on(async {
                let schema = schema(&bumps, space)?;
                let store = loaded(client, "query-oracle", &schema, &records).await?;
                let user = schema.entity("user")?;
                let expected = oracle(user, &records, "created", window, condition.as_ref(), min_score, descending, &Item::default())?;
                let mut query = Query::new(&store, user).index("created").shards_between(window.0, window.1).limit(limit).descending(descending);
                if let Some(c) = condition.clone() { query = query.range(c); }
                if let Some(f) = score_filter(min_score) { query = query.filter(f); }
                let pages = page_all_on(&query).await?;
                let mut remaining = expected.len();
                for page in &pages {
                    assert_eq!(page.len(), limit.min(remaining), "page size");
                    remaining -= page.len();
                }
                let got: Vec<&Item> = pages.iter().flatten().collect();
                let ids: Vec<&str> = got.iter().map(|i| text(i, "userId")).collect();
                assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len(), "duplicates");
                let want: HashSet<&str> = expected.iter().map(|i| text(i, "userId")).collect();
                assert_eq!(ids.into_iter().collect::<HashSet<_>>(), want);
                for pair in got.windows(2) {
                    let o = order(&pair[0]["created"], &pair[1]["created"]);
                    assert_ne!(o, if descending { std::cmp::Ordering::Less } else { std::cmp::Ordering::Greater });
                }
                store.delete_table().await?;
                Ok(())
            })
        };
        check().map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// The v2 cases of the in-memory run (projections on KEYS_ONLY and INCLUDE indexes, the
    /// table alone and with an index on its own keys, `created_between`), smaller, on
    /// DynamoDB Local.
    #[test]
    fn v2_cases_equal_the_records_on_dynamodb_local(
        (bumps, space) in bumps(),
        records in records(200),
        case in query_support::case(),
    ) {
        let check = || -> TestResult {
            let Some(client) = store_support::dynamo_client() else { return Ok(()) };
            runtime()?.block_on(async {
                let schema = query_support::schema_v2(&bumps, space)?;
                let store = loaded(client, "query-v2", &schema, &records).await?;
                let user = schema.entity("user")?;
                let result = query_support::check_case(&store, user, &records, &case).await;
                store.delete_table().await?;
                result
            })
        };
        check().map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
}

/// The boundary token on DynamoDB Local: runs of equal range keys continue across pages in the
/// query's order (by lane, then as DynamoDB Local keeps them within the lane: not table-key
/// order), each item once, in both directions; and a token of one table is refused on
/// another table of the same definition, told apart by the store's table name alone.
#[test]
fn boundary_tokens_resume_ties_exactly_and_stay_on_their_table() -> TestResult {
    let Some(client) = store_support::dynamo_client() else {
        return Ok(());
    };
    runtime()?.block_on(async {
        let schema = schema(&[(0, 2, 2)], entity_manager::model::ShardSpace::Power)?;
        let definition = TableDefinition::from_schema(&schema)?;
        let store = entity_manager::store::DynamoStore::new(
            client.clone(),
            store_support::unique_table("query-token-a"),
            definition.clone(),
        );
        let other = entity_manager::store::DynamoStore::new(
            client,
            store_support::unique_table("query-token-b"),
            definition,
        );
        store.create_table().await?;
        other.create_table().await?;
        let user = schema.entity("user")?;
        let records: Vec<Record> = (0..120u64)
            .map(|i| Record {
                id: format!("r{}-{}", i, (i * 7_919) % 1_000),
                created: i % 4,
                name: "ann".into(),
                group: "g1".into(),
                score: 0,
            })
            .collect();
        let writes = records
            .iter()
            .map(|r: &Record| Ok(WriteRequest::Put(user.add_keys(&r.item()?)?)))
            .collect::<Result<Vec<_>, Box<dyn std::error::Error>>>()?;
        store.batch_write(writes).await?;
        for descending in [false, true] {
            let expected = oracle(
                user,
                &records,
                "created",
                (0, 10),
                None,
                None,
                descending,
                &Item::default(),
            )?;
            // equal range keys by lane (table hash key), then in the order DynamoDB Local keeps
            // them in within the lane
            let expected = query_support::in_store_order(
                &store,
                Some("created"),
                "created",
                expected,
                descending,
            )
            .await?;
            for limit in [1usize, 7, 31] {
                let query = Query::new(&store, user)
                    .index("created")
                    .shards_between(0, 10)
                    .limit(limit)
                    .page_size(5)
                    .descending(descending);
                let pages = page_all_on(&query).await?;
                let got: Vec<&str> = pages
                    .iter()
                    .flatten()
                    .map(|i| text(i, "rangeKey"))
                    .collect();
                let want: Vec<&str> = expected.iter().map(|i| text(i, "rangeKey")).collect();
                assert_eq!(got, want, "limit {limit}, descending {descending}");
            }
        }
        let query = |store| {
            Query::new(store, user)
                .index("created")
                .shards_between(0, 10)
                .limit(10)
        };
        let token = query(&store).page(None).await?.next.ok_or("no next page")?;
        assert_eq!(query(&store).page(Some(&token)).await?.items.len(), 10);
        match query(&other).page(Some(&token)).await {
            Err(entity_manager::Error::Token(entity_manager::query::TokenError::OtherTable)) => {}
            other => return Err(format!("expected OtherTable, got {other:?}").into()),
        }
        store.delete_table().await?;
        other.delete_table().await?;
        Ok(())
    })
}

/// Items written by hand with a range key of another form page once each, in order, on
/// DynamoDB Local too (`ExclusiveStartKey` takes their keys as they are).
#[test]
fn items_of_another_key_form_are_paged_once_each() -> TestResult {
    let Some(client) = store_support::dynamo_client() else {
        return Ok(());
    };
    runtime()?.block_on(async {
        let schema = schema(&[(0, 1, 1)], entity_manager::model::ShardSpace::Power)?;
        let store = entity_manager::store::DynamoStore::new(
            client,
            store_support::unique_table("query-foreign"),
            TableDefinition::from_schema(&schema)?,
        );
        store.create_table().await?;
        query_support::check_foreign_items(&store, &schema).await?;
        store.delete_table().await?;
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------------
// the seed's access patterns, through the typed builder

#[derive(Table, Debug)]
#[table(entities(User, Email))]
struct UserService;

user_service!(User, Email, UserService);

const DAY: u64 = 86_400_000;
/// "Now" of the dataset: after the second user bump, so the data spans three bumps.
const NOW: u64 = 1_740_000_000_000;

fn dataset() -> (Vec<User>, Vec<Email>) {
    let first = ["jane", "john", "judy", "ann", "bob", "carl", "jim", "eve"];
    let last = ["smith", "jones", "lee", "brown", "garcia", "ng"];
    let mut users = Vec::new();
    let mut emails = Vec::new();
    for i in 0..160u64 {
        let created = NOW - 200 * DAY + i * (5 * DAY / 4) + i * 7_919;
        let f = first[usize::try_from(i % 8).unwrap_or(0)];
        let l = last[usize::try_from(i % 6).unwrap_or(0)];
        let user = User {
            user_id: format!("user-{i:03}"),
            created,
            updated: created + (i % 5) * DAY,
            beneficiary_id: Some(format!("ben-{}", i % 4)),
            first_name: f.to_uppercase(),
            first_name_canonical: f.to_owned(),
            last_name: l.to_uppercase(),
            last_name_canonical: l.to_owned(),
            phone: (i % 3 == 0).then(|| format!("+1555{i:07}")),
            some_property: None,
            some_other_property: None,
        };
        for e in 0..=(i % 3) {
            emails.push(Email {
                email: format!("{f}.{l}.{i}.{e}@example.com"),
                created: created + e * 1_000,
                user_id: user.user_id.clone(),
            });
        }
        users.push(user);
    }
    (users, emails)
}

/// Pages a typed query with a small limit (so tokens are used) to the end.
async fn all<S: Store, E: Entity + for<'de> Deserialize<'de>>(
    query: &entity_manager::query::TypedQuery<'_, S, E>,
) -> Result<Vec<E>, entity_manager::Error> {
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = query.page(token.as_deref()).await?;
        out.extend(page.items);
        token = page.next;
        if token.is_none() {
            return Ok(out);
        }
    }
}

#[test]
fn the_seed_access_patterns_run_on_dynamodb_local_through_the_typed_builder() -> TestResult {
    let Some(client) = store_support::dynamo_client() else {
        return Ok(());
    };
    runtime()?.block_on(async {
        let store = entity_manager::store::DynamoStore::new(
            client,
            store_support::unique_table("seed-patterns"),
            TableDefinition::from_schema(UserService::schema()?)?,
        );
        store.create_table().await?;
        let (users, emails) = dataset();
        let mut writes = Vec::new();
        for u in &users {
            writes.push(WriteRequest::Put(u.to_item()?));
        }
        for e in &emails {
            writes.push(WriteRequest::Put(e.to_item()?));
        }
        store.batch_write(writes).await?;
        let window = (0, NOW);

        // users created in the last 30 days, newest first
        let since = NOW - 30 * DAY;
        let query = User::query(&store)?
            .index(UserIndex::Created)
            .range(RangeCondition::Ge(AttributeValue::N(since.to_string())))
            .shards_between(window.0, window.1)
            .descending(true)
            .limit(7);
        let got = all(&query).await?;
        let mut want: Vec<&User> = users.iter().filter(|u| u.created >= since).collect();
        want.sort_by_key(|u| std::cmp::Reverse(u.created));
        assert!(!want.is_empty());
        assert_eq!(
            got.iter().map(|u| &u.user_id).collect::<Vec<_>>(),
            want.iter().map(|u| &u.user_id).collect::<Vec<_>>()
        );

        // first name begins with "j", through the typed key builder
        let prefix = User::first_name_range_key().first_name_canonical("j")?;
        let query = User::query(&store)?
            .index(UserIndex::FirstName)
            .range(RangeCondition::BeginsWith(AttributeValue::S(
                prefix.as_str().to_owned(),
            )))
            .shards_between(window.0, window.1)
            .limit(9);
        let got = all(&query).await?;
        let want = users
            .iter()
            .filter(|u| u.first_name_canonical.starts_with('j'))
            .count();
        assert_eq!(got.len(), want);
        assert!(got.iter().all(|u| u.first_name_canonical.starts_with('j')));
        assert!(
            got.windows(2)
                .all(|w| (&w[0].first_name_canonical, &w[0].last_name_canonical)
                    <= (&w[1].first_name_canonical, &w[1].last_name_canonical))
        );

        // the emails of a user
        let target = &users[41];
        let query = Email::query(&store)?
            .index(EmailIndex::UserCreated)
            .with("userId", &target.user_id)?
            .shards_between(window.0, window.1)
            .limit(1);
        let got = all(&query).await?;
        let want: Vec<&Email> = emails
            .iter()
            .filter(|e| e.user_id == target.user_id)
            .collect();
        assert_eq!(got.len(), want.len());
        assert!(got.windows(2).all(|w| w[0].created <= w[1].created));

        // the users of a beneficiary, by created
        let query = User::query(&store)?
            .index(UserIndex::UserBeneficiaryCreated)
            .with("beneficiaryId", "ben-2")?
            .shards_between(window.0, window.1)
            .limit(6);
        // that index projects only its keys and two attributes: read items, not records
        let got: Vec<Item> = page_all_on(query.untyped())
            .await?
            .into_iter()
            .flatten()
            .collect();
        let want: HashSet<&str> = users
            .iter()
            .filter(|u| u.beneficiary_id.as_deref() == Some("ben-2"))
            .map(|u| u.user_id.as_str())
            .collect();
        // (the unique value comes from the range key: `userId` itself is not projected)
        assert_eq!(
            got.iter()
                .map(|i| text(i, "rangeKey").trim_start_matches("userId#"))
                .collect::<HashSet<_>>(),
            want
        );
        assert_eq!(got.len(), want.len());
        assert!(
            got.windows(2)
                .all(|w| order(&w[0]["created"], &w[1]["created"]) != std::cmp::Ordering::Greater)
        );

        store.delete_table().await?;
        Ok(())
    })
}
