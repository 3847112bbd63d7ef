//! Query v2 on the in-memory store, against the records themselves: projections on `KEYS_ONLY`
//! and `INCLUDE` indexes, the table as a source (alone, and with an index on the same keys:
//! exact mode over two sources that share their range key, every record in both), and
//! `created_between` (records, not only shards) beside `window` (shards).

use entity_manager::model::ShardSpace;
use entity_manager::query::untyped::Query;
use entity_manager::store::{MemoryStore, RangeCondition};
use entity_manager::{Error, Schema};
use entity_manager_tests::block_on;
use proptest::prelude::*;

type TestResult = Result<(), Box<dyn std::error::Error>>;

mod query_support;
use query_support::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: entity_manager_tests::cases(400), ..ProptestConfig::default() })]

    /// Every source (KEYS_ONLY, INCLUDE and table-keyed indexes, the table, the table with an
    /// index on its own keys), with and without a projection, with a window of shards or of
    /// records: paging to the end gives exactly the records, in order, each once, with their
    /// stored attributes and their unique value.
    #[test]
    fn v2_cases_equal_the_records(
        (bumps, space) in bumps(),
        records in records(600),
        case in case(),
    ) {
        let check = || -> TestResult {
            let schema = schema_v2(&bumps, space)?;
            let store = load(&schema, &records)?;
            block_on(check_case(&store, schema.entity("user")?, &records, &case))
        };
        check().map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
}

/// Many records with equal range keys (a handful of `created` values) over two sources that
/// share their keys: every record is in both, at the same (range key, unique value), and pages
/// of every size still return each once.
#[test]
fn the_table_and_an_index_on_its_keys_return_each_record_once_across_pages() -> TestResult {
    let schema = schema_v2(&[(0, 2, 1)], ShardSpace::Power)?;
    let records: Vec<Record> = uniform_within(150, 7, 3);
    let store = load(&schema, &records)?;
    let user = schema.entity("user")?;
    for limit in [1, 2, 3, 7, 50, 149, 150, 151] {
        for descending in [false, true] {
            let case = Case {
                source: Source::TableAndKeys,
                window: (0, 10),
                created: false,
                limit,
                descending,
                projection: None,
            };
            block_on(check_case(&store, user, &records, &case))?;
            let query = Query::new(&store, user)
                .table()
                .index("keys")
                .shards_between(0, 10)
                .limit(limit);
            let first = block_on(query.page(None))?;
            // both sources were read, and what both gave was returned once
            if limit > 150 {
                assert_eq!(first.stats.duplicates_removed, 150, "limit {limit}");
            }
        }
    }
    Ok(())
}

/// The same two sources streamed (`stream`: pages read ahead, one set of the values emitted
/// kept across pages): each record once at every page size, though a record's copy from the
/// other source often lies on the page after the one that emitted it, read on a page before.
#[test]
fn the_table_and_an_index_on_its_keys_stream_each_record_once() -> TestResult {
    use entity_manager::query::TryStreamExt as _;
    let schema = schema_v2(&[(0, 2, 1)], ShardSpace::Power)?;
    let records: Vec<Record> = uniform_within(150, 7, 3);
    let store = load(&schema, &records)?;
    let user = schema.entity("user")?;
    for limit in [1, 2, 3, 7, 50] {
        for descending in [false, true] {
            let query = Query::new(&store, user)
                .table()
                .index("keys")
                .shards_between(0, 10)
                .limit(limit)
                .descending(descending);
            let items: Vec<entity_manager::Item> = block_on(query.stream().try_collect())?;
            let ids: std::collections::HashSet<String> = items
                .iter()
                .map(|item| format!("{:?}", item.get("userId")))
                .collect();
            assert_eq!(
                (items.len(), ids.len()),
                (records.len(), records.len()),
                "limit {limit}, descending {descending}"
            );
        }
    }
    Ok(())
}

/// The table and the index on its keys, each under a range of its own, the two ranges far
/// apart: every record of either range once, in range-key order, paged by tokens and streamed.
/// The pages of the lower range predict ends below the upper range's low end, where that
/// source's lanes hold nothing (a lane narrowed to nothing is not read: a `between` whose low
/// end lies past its high end is a query DynamoDB refuses).
#[test]
fn two_sources_under_disjoint_ranges_give_each_record_of_either_once() -> TestResult {
    use entity_manager::query::TryStreamExt as _;
    let schema = schema_v2(&[(0, 2, 1)], ShardSpace::Power)?;
    let records: Vec<Record> = uniform_within(400, 13, 3);
    let store = load(&schema, &records)?;
    let user = schema.entity("user")?;
    let key = |item: &entity_manager::Item| match item.get("rangeKey") {
        Some(entity_manager::AttributeValue::S(k)) => k.clone(),
        other => format!("{other:?}"),
    };
    // the range keys, from the records' own keys
    let mut keys: Vec<String> = records
        .iter()
        .map(|r| Ok(key(&user.add_keys(&r.item()?)?)))
        .collect::<Result<_, Box<dyn std::error::Error>>>()?;
    keys.sort();
    let (low, high) = (
        (keys[20].clone(), keys[90].clone()),
        (keys[300].clone(), keys[360].clone()),
    );
    for descending in [false, true] {
        let mut want: Vec<String> = keys
            .iter()
            .filter(|k| (&low.0 <= *k && *k <= &low.1) || (&high.0 <= *k && *k <= &high.1))
            .cloned()
            .collect();
        if descending {
            want.reverse();
        }
        for limit in [3, 10, 40] {
            let query = Query::new(&store, user)
                .table()
                .range(RangeCondition::Between(s(&low.0), s(&low.1)))
                .index("keys")
                .range(RangeCondition::Between(s(&high.0), s(&high.1)))
                .shards_between(0, 10)
                .limit(limit)
                .descending(descending);
            let paged: Vec<String> = page_all(&query)?
                .iter()
                .flat_map(|p| p.items.iter().map(key))
                .collect();
            assert_eq!(paged, want, "paged, limit {limit}, descending {descending}");
            let streamed: Vec<entity_manager::Item> = block_on(query.stream().try_collect())?;
            let streamed: Vec<String> = streamed.iter().map(key).collect();
            assert_eq!(
                streamed, want,
                "streamed, limit {limit}, descending {descending}"
            );
        }
    }
    Ok(())
}

/// A range condition that admits every record reads the items no condition reads: the same
/// items on every page and the same items read, since each read is narrowed to the page's end
/// either way (ascending under `lt`/`le` above every value, descending under `gt`/`ge` below
/// every value), paged by tokens. (The shard queries may differ: the estimates see the
/// condition's bound.)
#[test]
fn a_condition_that_admits_everything_reads_what_none_reads() -> TestResult {
    let schema = schema_v2(&[(0, 2, 1)], ShardSpace::Power)?;
    let records: Vec<Record> = uniform_within(400, 11, 3_000);
    let store = load(&schema, &records)?;
    let user = schema.entity("user")?;
    let reads = |pages: &[entity_manager::query::QueryPageResult]| {
        let items: Vec<Vec<entity_manager::Item>> = pages.iter().map(|p| p.items.clone()).collect();
        let read: usize = pages.iter().map(|p| p.stats.items_read).sum();
        (items, read)
    };
    for limit in [3, 10, 40] {
        for descending in [false, true] {
            let query = || {
                Query::new(&store, user)
                    .index("created")
                    .shards_between(0, 3_000)
                    .limit(limit)
                    .descending(descending)
            };
            let plain = reads(&page_all(&query())?);
            let everything = if descending {
                [RangeCondition::Gt(n(0)), RangeCondition::Ge(n(0))]
            } else {
                [
                    RangeCondition::Lt(n(1_000_000)),
                    RangeCondition::Le(n(1_000_000)),
                ]
            };
            for condition in everything {
                let bounded = reads(&page_all(&query().range(condition.clone()))?);
                assert_eq!(
                    bounded.0.concat().len(),
                    records.len(),
                    "{condition:?}, limit {limit}"
                );
                assert!(
                    bounded == plain,
                    "{condition:?}, limit {limit}, descending {descending}: {} items read against {} with no condition",
                    bounded.1,
                    plain.1
                );
            }
        }
    }
    Ok(())
}

/// `window` selects shards only: records of those shards created outside it come too;
/// `created_between` returns only those created in it.
#[test]
fn window_selects_shards_and_created_between_selects_records() -> TestResult {
    // one bump: every record in the same 4 shards, whenever created
    let schema = schema_v2(&[(0, 2, 1)], ShardSpace::Power)?;
    let records: Vec<Record> = uniform_within(200, 3, 3_000);
    let store = load(&schema, &records)?;
    let user = schema.entity("user")?;
    let (from, to) = (1_000, 1_500);
    let inside = records
        .iter()
        .filter(|r| (from..=to).contains(&r.created))
        .count();
    assert!(
        inside > 0 && inside < records.len(),
        "the fixture spans the window"
    );
    let count = |query: &Query<'_, MemoryStore>| -> Result<usize, Error> {
        Ok(page_all(query)?.iter().map(|p| p.items.len()).sum())
    };
    // on the `created` index (a key condition) and on the table (each item checked)
    let shards = [
        Query::new(&store, user)
            .index("created")
            .shards_between(from, to),
        Query::new(&store, user).table().shards_between(from, to),
    ];
    let created = [
        Query::new(&store, user)
            .index("created")
            .created_between(from, to),
        Query::new(&store, user).table().created_between(from, to),
    ];
    for (shards, created) in shards.iter().zip(&created) {
        assert_eq!(count(shards)?, records.len(), "window selects shards");
        assert_eq!(count(created)?, inside, "created_between selects records");
    }
    // a range condition and created_between both hold
    let both = Query::new(&store, user)
        .index("created")
        .range(RangeCondition::Ge(n(1_200)))
        .created_between(from, to);
    let want = records
        .iter()
        .filter(|r| (1_200..=to).contains(&r.created))
        .count();
    assert_eq!(count(&both)?, want);
    // created_between and window are different queries: a token of one is refused by the other
    let shards = Query::new(&store, user)
        .index("created")
        .shards_between(from, to)
        .limit(5);
    let created = Query::new(&store, user)
        .index("created")
        .created_between(from, to)
        .limit(5);
    let token = block_on(created.page(None))?.next.ok_or("no next page")?;
    assert!(matches!(
        block_on(shards.page(Some(&token))),
        Err(Error::Token(_))
    ));
    Ok(())
}

/// `query::key_value` writes a condition value as the store holds it (numbers `N`, strings
/// `S`), so a bound written with it selects what the bound written by hand selects.
#[test]
fn key_value_writes_numbers_as_n_and_strings_as_s() -> Result<(), Box<dyn std::error::Error>> {
    use entity_manager::query::key_value;
    assert_eq!(key_value(&1_200_u64)?, n(1_200));
    assert_eq!(
        key_value(&-2.5_f64)?,
        entity_manager::AttributeValue::N("-2.5".into())
    );
    assert_eq!(key_value("userId#u1")?, s("userId#u1"));
    Ok(())
}

/// The table as the only source: every record of the window's shards in unique-value order,
/// with a range condition on the table range key.
#[test]
fn the_table_is_queried_across_its_shards() -> TestResult {
    let schema = schema_v2(&[(0, 2, 1), (1_500, 3, 2)], ShardSpace::Power)?;
    let records: Vec<Record> = uniform_within(300, 11, 3_000);
    let store = load(&schema, &records)?;
    let user = schema.entity("user")?;
    let all = page_all(
        &Query::new(&store, user)
            .table()
            .shards_between(0, 3_000)
            .limit(17),
    )?;
    let got: Vec<String> = all
        .iter()
        .flat_map(|p| &p.items)
        .map(|i| text(i, "userId").to_owned())
        .collect();
    let mut want: Vec<String> = records.iter().map(|r| r.id.clone()).collect();
    want.sort();
    assert_eq!(got, want);
    assert!(
        all[0].stats.shards > 4,
        "both bumps' shards: {}",
        all[0].stats.shards
    );
    let prefixed = page_all(
        &Query::new(&store, user)
            .table()
            .range(RangeCondition::BeginsWith(s("userId#u1")))
            .shards_between(0, 3_000)
            .limit(9),
    )?;
    let got: Vec<&str> = prefixed
        .iter()
        .flat_map(|p| &p.items)
        .map(|i| text(i, "userId"))
        .collect();
    let want: Vec<&str> = want
        .iter()
        .map(String::as_str)
        .filter(|id| id.starts_with("u1"))
        .collect();
    assert_eq!(got, want);
    Ok(())
}

/// The rule `index-key-pairs-unique` refuses two indexes with the same keys, and the indexes
/// of one query share their hash key: so the only sources of one query that share their range
/// key as well are the table and an index on the table's own keys (tested above).
#[test]
fn two_indexes_on_the_same_keys_are_refused() {
    let config = serde_json::json!({
        "hashKey": "hashKey",
        "rangeKey": "rangeKey",
        "entities": { "user": { "uniqueProperty": "userId", "timestampProperty": "created" } },
        "indexes": {
            "byCreated": { "hashKey": "hashKey", "rangeKey": "created" },
            "createdKeys": { "hashKey": "hashKey", "rangeKey": "created", "projections": [] }
        },
        "propertyTranscodes": { "userId": "string", "created": "timestamp" }
    });
    let refused = Schema::from_ts_config(&config, ShardSpace::Power);
    assert!(
        format!("{refused:?}").contains("IndexKeyPairsUnique"),
        "{refused:?}"
    );
}

/// Consumed capacity on the in-memory store follows DynamoDB's rule: each query rounds the
/// bytes it evaluated up to 4 KB blocks, half a unit per block (eventually consistent), at least
/// one block. Small items and small pages: each shard query costs exactly half a unit.
#[test]
fn consumed_capacity_is_summed_over_the_shard_queries() -> TestResult {
    use entity_manager::store::{QueryPage, Store as _};
    let schema = schema_v2(&[(0, 2, 1)], ShardSpace::Power)?;
    let records: Vec<Record> = uniform_within(100, 5, 1_000);
    let store = load(&schema, &records)?;
    let user = schema.entity("user")?;
    // one item is about 100 bytes: 5 per shard query stay under 4 KB
    let query = Query::new(&store, user)
        .table()
        .shards_between(0, 1_000)
        .limit(20)
        .page_size(5);
    for page in page_all(&query)? {
        #[allow(clippy::cast_precision_loss)]
        let want = page.stats.shard_queries as f64 * 0.5;
        assert!(page.stats.shard_queries > 0);
        assert!(
            (page.stats.consumed_capacity - want).abs() < 1e-9,
            "{:?}",
            page.stats
        );
    }
    // a 10,000-byte attribute: 10,0xx bytes are 3 blocks of 4 KB, 1.5 units
    let big = entity_manager::Item::from(std::collections::HashMap::from([
        ("hashKey".to_owned(), s("big")),
        ("rangeKey".to_owned(), s("x")),
        ("blob".to_owned(), s(&"b".repeat(10_000))),
    ]));
    block_on(store.put_item(big, entity_manager::store::Expect::Any))?;
    let read = block_on(store.query_page(&QueryPage::new(s("big"))))?;
    assert_eq!(read.consumed_capacity, Some(1.5));
    let none = block_on(store.query_page(&QueryPage::new(s("nobody"))))?;
    assert_eq!(none.consumed_capacity, Some(0.5));
    Ok(())
}

/// A page resumes the lane that held its boundary right after the boundary's item (the token
/// names that lane when nothing left ties with it): on one shard, with distinct range keys,
/// every page after the first reads one shard query of what it returns plus one item (the one
/// that shows the lane complete at the page's end), not the previous page's last item again;
/// with equal range keys spanning pages, pages stay exact.
#[test]
fn a_page_resumes_its_boundary_lane_right_after_the_boundary() -> TestResult {
    let schema = schema(&[], ShardSpace::Power)?;
    let user = schema.entity("user")?;
    for equal_keys in [false, true] {
        let records: Vec<Record> = uniform(95, 3)
            .into_iter()
            .enumerate()
            .map(|(i, mut r)| {
                // distinct keys, or runs of 7 equal keys across pages of 10
                let i = u64::try_from(i).unwrap_or(u64::MAX);
                r.created = if equal_keys {
                    1_000 + i / 7
                } else {
                    1_000 + i * 10
                };
                r
            })
            .collect();
        let store = load(&schema, &records)?;
        for descending in [false, true] {
            let query = Query::new(&store, user)
                .index("created")
                .shards_between(0, 10_000)
                .limit(10)
                .page_size(100)
                .descending(descending);
            let pages = page_all(&query)?;
            let expected = oracle(
                user,
                &records,
                "created",
                (0, 10_000),
                None,
                None,
                descending,
                &entity_manager::Item::default(),
            )?;
            let got: Vec<(&str, &str)> = pages
                .iter()
                .flat_map(|p| &p.items)
                .map(|i| (text(i, "created"), text(i, "userId")))
                .collect();
            let mut want: Vec<(&str, &str)> = expected
                .iter()
                .map(|i| (text(i, "created"), text(i, "userId")))
                .collect();
            // equal range keys come in unique-value order, in the scan's direction
            want.sort_by(|a, b| {
                let key = |x: &(&str, &str)| (x.0.parse::<u64>().unwrap_or(0), x.1.to_owned());
                let o = key(a).cmp(&key(b));
                if descending { o.reverse() } else { o }
            });
            assert_eq!(
                got, want,
                "equal keys {equal_keys}, descending {descending}"
            );
            if !equal_keys {
                for (i, page) in pages.iter().enumerate().skip(1) {
                    assert_eq!(page.stats.shard_queries, 1, "page {i}: {:?}", page.stats);
                    assert!(
                        page.stats.items_read <= page.items.len() + 1,
                        "page {i}: {:?}",
                        page.stats
                    );
                }
            }
        }
    }
    Ok(())
}
