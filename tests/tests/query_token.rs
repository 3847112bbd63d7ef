//! The constant-size page token on the in-memory store: paging through random data with the
//! token carried as text between independently built queries equals a brute-force oracle,
//! item for item, including runs of equal range keys across page boundaries, over many shards,
//! in both directions; and the token's size does not grow with where the shards stand.

use entity_manager::model::ShardSpace;
use entity_manager::query::untyped::Query;
use entity_manager::query::{QueryPageResult, TryStreamExt as _};
use entity_manager::store::{Comparison, Filter, MemoryStore, RangeCondition};
use entity_manager::{AttributeValue, EntitySchema, Item};
use entity_manager_tests::block_on;
use proptest::prelude::*;

type TestResult = Result<(), Box<dyn std::error::Error>>;

mod query_support;
use query_support::*;

/// The longest `next` token of the first five pages of `query`.
fn largest(query: &Query<'_, MemoryStore>) -> Result<usize, Box<dyn std::error::Error>> {
    let mut token: Option<String> = None;
    let mut largest = 0;
    for _ in 0..5 {
        let page = block_on(query.page(token.as_deref()))?;
        let Some(next) = page.next else { break };
        largest = largest.max(next.len());
        token = Some(next);
    }
    Ok(largest)
}

prop_compose! {
    /// Records whose `created` values repeat a lot: few distinct keys (runs of equal keys span
    /// pages and shards), or a wide spread.
    fn tied_records()(
        count in prop_oneof![3 => 0usize..150, 1 => 0usize..500],
        spread in prop_oneof![Just(1u64), Just(3), Just(20), Just(3_000)],
        seed in any::<u64>(),
    ) -> Vec<Record> {
        let mut state = seed | 1;
        let mut next = move |m: u64| { state ^= state << 13; state ^= state >> 7; state ^= state << 17; state % m };
        (0..count)
            .map(|i| Record {
                id: format!("u{i}-{}", next(1_000_000)),
                created: next(spread),
                name: ["ann", "bob", "cy"][usize::try_from(next(3)).unwrap_or(0)].to_owned(),
                group: "g1".to_owned(),
                score: i64::try_from(next(100)).unwrap_or(0) - 50,
            })
            .collect()
    }
}

/// What one index of the query asks: a range condition and a filter (score at least, or name
/// equal to).
#[derive(Clone, Debug)]
struct Side {
    condition: Option<RangeCondition>,
    min_score: Option<i64>,
    name: Option<&'static str>,
}

impl Side {
    fn filter(&self) -> Option<Filter> {
        match (self.min_score, self.name) {
            (Some(m), _) => score_filter(Some(m)),
            (None, Some(name)) => Some(Filter::compare(
                "name",
                Comparison::Eq,
                AttributeValue::S(name.to_owned()),
            )),
            (None, None) => None,
        }
    }

    fn matches(&self, record: &Record, created: &AttributeValue) -> bool {
        holds(self.condition.as_ref(), created)
            && self.min_score.is_none_or(|m| record.score >= m)
            && (self.min_score.is_some() || self.name.is_none_or(|n| record.name == n))
    }
}

fn side() -> impl Strategy<Value = Side> {
    (
        condition_on_created(),
        proptest::option::weighted(0.3, -50i64..50),
        proptest::option::weighted(0.3, prop_oneof![Just("ann"), Just("bob")]),
    )
        .prop_map(|(condition, min_score, name)| Side {
            condition,
            min_score,
            name,
        })
}

/// Every record in the query's shards that one of the sides matches, in scan order: range key,
/// then table hash key (the lane), then table range key (the order `MemoryStore` holds equal
/// keys in within a lane), reversed when descending.
fn oracle_of(
    user: EntitySchema<'_>,
    records: &[Record],
    window: (u64, u64),
    sides: &[Side],
    descending: bool,
) -> Result<Vec<Item>, Box<dyn std::error::Error>> {
    let space = user.hash_key_space("hashKey", &Item::default(), window.0, window.1)?;
    let mut out = Vec::new();
    for r in records {
        let keyed = user.add_keys(&r.item()?)?;
        let in_space =
            matches!(keyed.get("hashKey"), Some(AttributeValue::S(h)) if space.contains(h));
        let created = keyed.get("created").cloned().ok_or("no created")?;
        if in_space && sides.iter().any(|s| s.matches(r, &created)) {
            out.push(keyed);
        }
    }
    out.sort_by(|a, b| {
        let o = order(&a["created"], &b["created"])
            .then_with(|| {
                text(a, "hashKey")
                    .as_bytes()
                    .cmp(text(b, "hashKey").as_bytes())
            })
            .then_with(|| {
                text(a, "rangeKey")
                    .as_bytes()
                    .cmp(text(b, "rangeKey").as_bytes())
            });
        if descending { o.reverse() } else { o }
    });
    Ok(out)
}

/// How a query is asked for, page after page: built anew for every page, as a service does
/// for every request.
struct Asked<'s> {
    store: &'s MemoryStore,
    user: EntitySchema<'s>,
    indexes: Vec<(&'static str, Side)>,
    window: (u64, u64),
    limit: usize,
    page_size: usize,
    descending: bool,
    key: Option<&'static [u8]>,
}

impl<'s> Asked<'s> {
    fn query(&self, with_window: bool) -> Query<'s, MemoryStore> {
        let unindexed = Query::new(self.store, self.user);
        let mut sides = self.indexes.iter();
        let Some((first, _)) = sides.next() else {
            return unindexed.table();
        };
        let mut query = unindexed.index(*first);
        for (n, (index, side)) in self.indexes.iter().enumerate() {
            if n > 0 {
                query = query.index(*index);
            }
            if let Some(c) = side.condition.clone() {
                query = query.range(c);
            }
            if let Some(f) = side.filter() {
                query = query.filter(f);
            }
        }
        if with_window {
            query = query.shards_between(self.window.0, self.window.1);
        }
        if let Some(key) = self.key {
            query = query.signing_key(key);
        }
        query
            .limit(self.limit)
            .page_size(self.page_size)
            .descending(self.descending)
    }

    /// Pages to the end, each page from a new query given the previous token as text.
    fn pages(&self, lanes: usize) -> Result<Vec<QueryPageResult>, Box<dyn std::error::Error>> {
        let mut pages = Vec::new();
        let mut token: Option<String> = None;
        loop {
            // the window may be left out after the first page: it comes from the token
            let query = self.query(token.is_none() || pages.len() % 2 == 0);
            let page = block_on(query.page(token.as_deref()))?;
            token = match &page.next {
                None => None,
                Some(t) => {
                    assert!(
                        t.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                        "not URL-safe: {t}"
                    );
                    // one stream: a fixed part plus one bit per lane, plus the signature
                    let max = 160
                        + lanes.saturating_sub(64).div_ceil(6)
                        + if self.key.is_some() { 11 } else { 0 };
                    assert!(
                        t.len() <= max,
                        "{} characters over {lanes} lanes: {t}",
                        t.len()
                    );
                    // carried as text, as in a URL
                    Some(String::from_utf8(t.as_bytes().to_vec())?)
                }
            };
            pages.push(page);
            if token.is_none() {
                return Ok(pages);
            }
            if pages.len() > 10_000 {
                return Err("did not terminate".into());
            }
        }
    }
}

fn check_against_oracle(asked: &Asked<'_>, records: &[Record]) -> TestResult {
    let sides: Vec<Side> = asked.indexes.iter().map(|(_, s)| s.clone()).collect();
    let expected = oracle_of(asked.user, records, asked.window, &sides, asked.descending)?;
    let shards = asked
        .user
        .hash_key_space("hashKey", &Item::default(), asked.window.0, asked.window.1)?
        .len();
    let pages = asked.pages(shards * asked.indexes.len())?;
    let mut remaining = expected.len();
    for page in &pages {
        assert_eq!(page.items.len(), asked.limit.min(remaining), "page size");
        remaining -= page.items.len();
    }
    let got: Vec<&str> = pages
        .iter()
        .flat_map(|p| &p.items)
        .map(|i| text(i, "rangeKey"))
        .collect();
    let want: Vec<&str> = expected.iter().map(|i| text(i, "rangeKey")).collect();
    assert_eq!(got, want, "pages differ from the oracle");
    // one stream, whose pages go on from what the previous one read: the same items
    let streamed: Vec<Item> = block_on(asked.query(true).stream().try_collect())?;
    let streamed: Vec<&str> = streamed.iter().map(|i| text(i, "rangeKey")).collect();
    assert_eq!(streamed, want, "the stream differs from the oracle");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: entity_manager_tests::cases(400), ..ProptestConfig::default() })]

    /// Exact mode: the pages, each from a new query given the previous page's token as text,
    /// are the oracle's items in order (equal range keys by table key), each once.
    #[test]
    fn pages_through_random_data_equal_the_oracle(
        (bumps, space) in bumps(),
        records in tied_records(),
        window in window(),
        limit in prop_oneof![3 => 1usize..8, 2 => 1usize..40, 1 => 1usize..=300],
        page_size in prop_oneof![1usize..4, 1usize..60],
        descending in any::<bool>(),
        first in side(),
        signed in any::<bool>(),
    ) {
        let check = || -> TestResult {
            let schema = schema(&bumps, space)?;
            let store = load(&schema, &records)?;
            let indexes = vec![("created", first.clone())];
            let asked = Asked {
                store: &store,
                user: schema.entity("user")?,
                indexes,
                window,
                limit,
                page_size,
                descending,
                key: signed.then_some(&b"a signing key"[..]),
            };
            check_against_oracle(&asked, &records)
        };
        check().map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
}

/// The token does not grow with how far each shard has read: over 64 lanes it stays within
/// 160 characters on every page, and with 512 shards it grows only by its lane bits.
#[test]
fn token_size_does_not_depend_on_shard_cursors() -> TestResult {
    let mut sizes = Vec::new();
    for (bumps, space) in [
        (vec![(0u64, 3u8, 2u8)], ShardSpace::Power), // 64 shards
        (vec![(0, 3, 3)], ShardSpace::Power),        // 512 shards
    ] {
        let schema = schema(&bumps, space)?;
        let records = uniform(3_000, 11);
        let store = load(&schema, &records)?;
        let user = schema.entity("user")?;
        let query = Query::new(&store, user)
            .index("created")
            .shards_between(0, u64::from(u32::MAX))
            .limit(25);
        let shards = user
            .hash_key_space("hashKey", &Item::default(), 0, u64::from(u32::MAX))?
            .len();
        let mut token: Option<String> = None;
        let mut largest = 0;
        for _ in 0..20 {
            let page = block_on(query.page(token.as_deref()))?;
            let Some(next) = page.next else { break };
            largest = largest.max(next.len());
            token = Some(next);
        }
        sizes.push((shards, largest));
    }
    assert_eq!(sizes[0].0, 64);
    assert_eq!(sizes[1].0, 512);
    assert!(sizes[0].1 <= 160, "{sizes:?}");
    // 448 more lanes: 56 more bytes of bits, 75 characters, and nothing else
    assert!(
        sizes[1].1 <= sizes[0].1 + 448usize.div_ceil(6) + 1,
        "{sizes:?}"
    );
    Ok(())
}

/// The largest token over the first pages (limit 100, 5,000 items), for the shardings of
/// BENCHMARKS.md; printed with `--nocapture`. One index (exact) stays within 160 characters up
/// to 64 lanes.
#[test]
fn token_sizes_by_shards_and_indexes() -> TestResult {
    let records = uniform(5_000, 3);
    println!("| shards | 1 index (`created`) | 2 indexes (`created` ∪ `name`, union) |");
    println!("|---:|---:|---:|");
    for (bumps, space, shards) in [
        (vec![], ShardSpace::Power, 1usize),
        (vec![(0u64, 3u8, 1u8)], ShardSpace::Power, 8),
        (vec![(0, 2, 5)], ShardSpace::Product, 20),
        (vec![(0, 3, 2)], ShardSpace::Power, 64),
        (vec![(0, 3, 3)], ShardSpace::Power, 512),
    ] {
        let schema = schema(&bumps, space)?;
        let store = load(&schema, &records)?;
        let user = schema.entity("user")?;
        assert_eq!(
            user.hash_key_space("hashKey", &Item::default(), 0, u64::from(u32::MAX))?
                .len(),
            shards
        );
        let base = || {
            Query::new(&store, user)
                .shards_between(0, u64::from(u32::MAX))
                .limit(100)
                .page_size(100)
        };
        let one = largest(&base().index("created"))?;
        let two = largest(&base().index("created").index("name"))?;
        if shards <= 64 {
            assert!(one <= 160, "{one} characters over {shards} shards");
        }
        println!("| {shards} | {one} | {two} |");
    }
    Ok(())
}

/// Token sizes over 1 to 512 shards and 1 to 4 sources (indexes and the table): in exact mode
/// (the table and the index on its own keys: 2 lanes per shard) at most 160 characters up to 64
/// lanes; in union mode one boundary per source, so about one exact token per source.
#[test]
fn token_sizes_by_shards_and_sources() -> TestResult {
    let records: Vec<Record> = uniform(3_000, 5)
        .into_iter()
        .enumerate()
        .map(|(n, mut r)| {
            r.name = format!("name-{}", n % 97);
            r
        })
        .collect();
    println!("| shards | exact, 2 sources (lanes) | union 1 | union 2 | union 3 | union 4 |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for (bits, chars, shards) in [
        (0u8, 0u8, 1usize),
        (3, 1, 8),
        (4, 1, 16),
        (5, 1, 32),
        (3, 2, 64),
        (3, 3, 512),
    ] {
        let bumps: Vec<(u64, u8, u8)> = if shards == 1 {
            vec![]
        } else {
            vec![(0, bits, chars)]
        };
        let schema = query_support::schema_v2(&bumps, ShardSpace::Power)?;
        let store = load(&schema, &records)?;
        let user = schema.entity("user")?;
        let base = || {
            Query::new(&store, user)
                .shards_between(0, u64::from(u32::MAX))
                .limit(100)
                .page_size(100)
        };
        let exact = largest(&base().table().index("keys"))?;
        let lanes = 2 * shards;
        if lanes <= 64 {
            assert!(exact <= 160, "{exact} characters over {lanes} lanes");
        }
        let unions = [
            largest(&base().index("created"))?,
            largest(&base().index("created").index("name"))?,
            largest(&base().index("created").index("name").table())?,
            largest(
                &base()
                    .index("created")
                    .index("name")
                    .table()
                    .index("keys")
                    .sort_by("userId", false),
            )?,
        ];
        // one boundary per source, and the lanes' bits: each source adds about one exact token
        for (sources, size) in unions.iter().enumerate() {
            let bound = (sources + 1) * 160 + shards * (sources + 1) / 6;
            assert!(
                *size <= bound,
                "{size} characters for {} sources over {shards} shards",
                sources + 1
            );
        }
        println!(
            "| {shards} | {exact} ({lanes}) | {} | {} | {} | {} |",
            unions[0], unions[1], unions[2], unions[3]
        );
    }
    Ok(())
}

/// Items written by hand into an entity's partitions, with a range key of another form, are
/// paged once each, in order ([`query_support::check_foreign_items`]; on DynamoDB Local in
/// `query_dynamodb`).
#[test]
fn items_of_another_key_form_are_paged_once_each() -> TestResult {
    let schema = schema(&[(0, 1, 1)], ShardSpace::Power)?; // 2 shards
    let store = MemoryStore::new(entity_manager::store::TableDefinition::from_schema(
        &schema,
    )?);
    block_on(check_foreign_items(&store, &schema))
}
