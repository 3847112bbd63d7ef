//! Multi-attribute GSI keys (up to 4 partition + 4 sort attributes, natural values), on both
//! stores and from the derive.
//!
//! - The store semantics: equality on every partition attribute, an equality prefix on the sort
//!   attributes then one condition, tuple order (each attribute in its type's order), sparse
//!   membership, page keys holding every key attribute. An oracle property test compares
//!   `MemoryStore` with a plain filter-and-sort over the items (512 cases) and `DynamoDB` Local
//!   with the same oracle (a smaller run, when `DYNAMODB_ENDPOINT` is set).
//! - The derive: `#[index(name = …, hash = [..], range = [..], sharded)]` makes the model's
//!   multi-attribute index, the table definition's key schema (`CreateTable`, `CloudFormation`)
//!   with natural types, and stored items that both stores index.
//! - The cross-shard query (`MultiQuery`) over sharded and unsharded keys, of one entity and of
//!   an item collection, paged to the end against an oracle (512 cases on `MemoryStore`, 12 on
//!   `DynamoDB` Local); tokens bound to their query; `#[derive(Collection)]`'s typed enum.
//!
//! The store conformance cases of multi-attribute keys are in `store_conformance.rs`.
#![allow(clippy::struct_field_names)] // fields are named after their attributes

mod league;
mod league_query;
mod store_support;

use std::cmp::Ordering;
use std::collections::BTreeSet;

use entity_manager::store::{
    Expect, GlobalIndex, KeyType, MemoryStore, QueryPage, RangeCondition, Store, TableDefinition,
};
use entity_manager::{Entity, EntityExt, Item};
use league::{Coach, Player, PlayerIndex, Roster, league};
use proptest::prelude::*;
use proptest::strategy::ValueTree as _;
use serde_json::json;
use store_support::{TestResult, all_pages, item, n, s, text};

type BoxError = Box<dyn std::error::Error>;

// =============================================================================================
// the store semantics

/// A table with one multi-attribute GSI: partition (`a` S, `b` N), sort (`c` S, `d` N).
fn definition() -> TableDefinition {
    TableDefinition::new(("hashKey", KeyType::S), ("rangeKey", KeyType::S)).with_index(
        GlobalIndex::new("abcd", ("a", KeyType::S), ("c", KeyType::S))
            .with_hash_key(("b", KeyType::N))
            .with_range_key(("d", KeyType::N)),
    )
}

/// One stored row: its table range key and its four key attributes (each may be missing).
#[derive(Clone, Debug)]
struct Row {
    id: usize,
    a: Option<u8>,
    b: Option<i8>,
    c: Option<u8>,
    d: Option<i16>,
}

fn a_text(ns: &str, a: u8) -> String {
    format!("{ns}a{a}")
}

/// `c` values whose byte order differs from their numeric order (`c10` < `c9`).
fn c_text(c: u8) -> String {
    format!("c{c}")
}

impl Row {
    fn item(&self, ns: &str) -> Result<Item, BoxError> {
        let mut item = item(
            json!({ "hashKey": format!("{ns}h{}", self.id % 3), "rangeKey": format!("r{:03}", self.id) }),
        )?;
        if let Some(a) = self.a {
            item.insert("a".into(), s(&a_text(ns, a)));
        }
        if let Some(b) = self.b {
            item.insert("b".into(), n(b));
        }
        if let Some(c) = self.c {
            item.insert("c".into(), s(&c_text(c)));
        }
        if let Some(d) = self.d {
            item.insert("d".into(), n(d));
        }
        Ok(item)
    }
}

/// The condition on the sort attribute after the prefix.
#[derive(Clone, Debug)]
enum Cond {
    None,
    Eq(u8, i16),
    Lt(u8, i16),
    Le(u8, i16),
    Gt(u8, i16),
    Ge(u8, i16),
    Between(u8, i16, u8, i16),
    BeginsWith(u8),
}

/// A query: partition values, an optional equality on `c`, a condition, order and limit.
#[derive(Clone, Debug)]
struct Ask {
    a: u8,
    b: i8,
    prefix: Option<u8>,
    cond: Cond,
    descending: bool,
    limit: Option<u32>,
}

impl Ask {
    fn request(&self, ns: &str) -> QueryPage {
        let mut q = QueryPage::new(s(&a_text(ns, self.a)))
            .index("abcd")
            .and_hash_key(n(self.b))
            .descending(self.descending);
        if let Some(c) = self.prefix {
            q = q.range_prefix([s(&c_text(c))]);
        }
        // with a prefix the condition is on `d`, else on `c`
        let value = |c: u8, d: i16| {
            if self.prefix.is_some() {
                n(d)
            } else {
                s(&c_text(c))
            }
        };
        let cond = match self.cond {
            Cond::None => None,
            Cond::Eq(c, d) => Some(RangeCondition::Eq(value(c, d))),
            Cond::Lt(c, d) => Some(RangeCondition::Lt(value(c, d))),
            Cond::Le(c, d) => Some(RangeCondition::Le(value(c, d))),
            Cond::Gt(c, d) => Some(RangeCondition::Gt(value(c, d))),
            Cond::Ge(c, d) => Some(RangeCondition::Ge(value(c, d))),
            Cond::Between(c1, d1, c2, d2) => {
                let (low, high) = if self.prefix.is_some() {
                    (n(d1.min(d2)), n(d1.max(d2)))
                } else {
                    let (x, y) = (c_text(c1), c_text(c2));
                    if x <= y {
                        (s(&x), s(&y))
                    } else {
                        (s(&y), s(&x))
                    }
                };
                Some(RangeCondition::Between(low, high))
            }
            Cond::BeginsWith(c) => (self.prefix.is_none())
                .then(|| RangeCondition::BeginsWith(s(&format!("c{}", c % 3)))),
        };
        if let Some(cond) = cond {
            q = q.range(cond);
        }
        if let Some(limit) = self.limit {
            q = q.limit(limit);
        }
        q
    }

    /// The oracle: the rows the query selects, in the order `DynamoDB` returns them (sort
    /// tuple, then table keys for equal tuples).
    fn expected(&self, rows: &[Row], ns: &str) -> Vec<String> {
        let mut hits: Vec<&Row> = rows
            .iter()
            .filter(|r| r.a == Some(self.a) && r.b == Some(self.b))
            .filter(|r| r.c.is_some() && r.d.is_some())
            .filter(|r| self.prefix.is_none_or(|p| r.c == Some(p)))
            .filter(|r| self.holds(r))
            .collect();
        let tuple = |r: &Row| (c_text(r.c.unwrap_or_default()), r.d.unwrap_or_default());
        hits.sort_by(|x, y| {
            tuple(x)
                .cmp(&tuple(y))
                .then_with(|| (x.id % 3).cmp(&(y.id % 3)))
                .then_with(|| x.id.cmp(&y.id))
        });
        if self.descending {
            hits.reverse();
        }
        hits.iter()
            .map(|r| {
                let _ = ns;
                format!("r{:03}", r.id)
            })
            .collect()
    }

    #[allow(clippy::many_single_char_names)] // the attributes are named a, b, c, d
    fn holds(&self, r: &Row) -> bool {
        let (Some(c), Some(d)) = (r.c, r.d) else {
            return false;
        };
        // compare the attribute the condition is on
        let cmp = |vc: u8, vd: i16| -> Ordering {
            if self.prefix.is_some() {
                d.cmp(&vd)
            } else {
                c_text(c).cmp(&c_text(vc))
            }
        };
        match self.cond {
            Cond::None => true,
            Cond::Eq(vc, vd) => cmp(vc, vd) == Ordering::Equal,
            Cond::Lt(vc, vd) => cmp(vc, vd) == Ordering::Less,
            Cond::Le(vc, vd) => cmp(vc, vd) != Ordering::Greater,
            Cond::Gt(vc, vd) => cmp(vc, vd) == Ordering::Greater,
            Cond::Ge(vc, vd) => cmp(vc, vd) != Ordering::Less,
            Cond::Between(c1, d1, c2, d2) => {
                if self.prefix.is_some() {
                    (d1.min(d2)..=d1.max(d2)).contains(&d)
                } else {
                    let (x, y) = (c_text(c1), c_text(c2));
                    let (low, high) = if x <= y { (x, y) } else { (y, x) };
                    (low..=high).contains(&c_text(c))
                }
            }
            Cond::BeginsWith(p) => {
                self.prefix.is_some() || c_text(c).starts_with(&format!("c{}", p % 3))
            }
        }
    }
}

fn row() -> impl Strategy<Value = (Option<u8>, Option<i8>, Option<u8>, Option<i16>)> {
    let some = |p: u32| p; // weight of present values
    (
        proptest::option::weighted(0.95, 0_u8..2),
        proptest::option::weighted(0.95, -1_i8..2),
        proptest::option::weighted(f64::from(some(9)) / 10.0, 0_u8..12),
        proptest::option::weighted(0.9, -12_i16..12),
    )
}

fn cond() -> impl Strategy<Value = Cond> {
    let c = 0_u8..12;
    let d = -12_i16..12;
    prop_oneof![
        Just(Cond::None),
        (c.clone(), d.clone()).prop_map(|(c, d)| Cond::Eq(c, d)),
        (c.clone(), d.clone()).prop_map(|(c, d)| Cond::Lt(c, d)),
        (c.clone(), d.clone()).prop_map(|(c, d)| Cond::Le(c, d)),
        (c.clone(), d.clone()).prop_map(|(c, d)| Cond::Gt(c, d)),
        (c.clone(), d.clone()).prop_map(|(c, d)| Cond::Ge(c, d)),
        (c.clone(), d.clone(), c.clone(), d).prop_map(|(a, b, x, y)| Cond::Between(a, b, x, y)),
        c.prop_map(Cond::BeginsWith),
    ]
}

fn ask() -> impl Strategy<Value = Ask> {
    (
        0_u8..2,
        -1_i8..2,
        proptest::option::of(0_u8..12),
        cond(),
        any::<bool>(),
        proptest::option::of(1_u32..6),
    )
        .prop_map(|(a, b, prefix, cond, descending, limit)| Ask {
            a,
            b,
            prefix,
            cond,
            descending,
            limit,
        })
}

fn case() -> impl Strategy<Value = (Vec<Row>, Vec<Ask>)> {
    (
        proptest::collection::vec(row(), 0..40),
        proptest::collection::vec(ask(), 1..4),
    )
        .prop_map(|(rows, asks)| {
            let rows = rows
                .into_iter()
                .enumerate()
                .map(|(id, (a, b, c, d))| Row { id, a, b, c, d })
                .collect();
            (rows, asks)
        })
}

/// Writes the rows, runs every query to its end, and compares with the oracle: the same items
/// in the same order, pages no longer than the limit, page keys holding every key attribute.
async fn check_case<S: Store>(store: &S, ns: &str, rows: &[Row], asks: &[Ask]) -> TestResult {
    for r in rows {
        store.put_item(r.item(ns)?, Expect::Any).await?;
    }
    for ask in asks {
        let pages = all_pages(store, &ask.request(ns)).await?;
        let mut got = Vec::new();
        for page in &pages {
            if let Some(limit) = ask.limit {
                assert!(page.items.len() <= limit as usize, "{ask:?}");
            }
            if let Some(key) = &page.last_evaluated_key {
                let mut names: Vec<&str> = key.keys().map(String::as_str).collect();
                names.sort_unstable();
                assert_eq!(
                    names,
                    ["a", "b", "c", "d", "hashKey", "rangeKey"],
                    "{ask:?}"
                );
            }
            got.extend(page.items.iter().map(|i| text(i, "rangeKey")));
        }
        assert_eq!(got, ask.expected(rows, ns), "{ask:?}");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: entity_manager_tests::cases(512), ..ProptestConfig::default() })]

    /// `MemoryStore` against the oracle.
    #[test]
    fn memory_store_matches_the_oracle((rows, asks) in case()) {
        let store = MemoryStore::new(definition());
        let runtime = tokio::runtime::Builder::new_current_thread().build()
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        runtime.block_on(check_case(&store, "", &rows, &asks))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
}

/// `DynamoDB` Local against the same oracle: 24 cases, in one table (each case in partitions of
/// its own).
#[tokio::test]
async fn dynamodb_matches_the_oracle() -> TestResult {
    let Some(store) = store_support::dynamo_store("multiattr-oracle", definition()).await? else {
        return Ok(());
    };
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut result = Ok(());
    for i in 0..24 {
        let (rows, asks) = case()
            .new_tree(&mut runner)
            .map_err(|e| e.to_string())?
            .current();
        if let Err(e) = check_case(&store, &format!("case{i}-"), &rows, &asks).await {
            result = Err(format!("case {i} ({rows:?}, {asks:?}): {e}").into());
            break;
        }
    }
    store.delete_table().await?;
    result
}

// The store conformance cases of multi-attribute keys (validation, tuple order, sparse
// membership) run on both stores in `store_conformance.rs` (`multi_attribute` module).

// =============================================================================================
// the derive

#[test]
fn the_derive_makes_multi_attribute_indexes() -> TestResult {
    let model = Player::model();
    let by_team = model.index("byTeam").ok_or("byTeam")?;
    assert_eq!(by_team.hash_names(), ["teamId", "region"]);
    assert_eq!(by_team.range_names(), ["score", "nickname"]);
    let multi = by_team.multi.as_ref().ok_or("multi")?;
    assert!(!multi.sharded);
    assert_eq!(
        multi.range.iter().map(|p| p.key_type).collect::<Vec<_>>(),
        [KeyType::N, KeyType::S]
    );
    let by_org = model.index("byOrg").ok_or("byOrg")?;
    assert_eq!(by_org.hash_names(), ["hashKey", "orgId"]);
    assert_eq!(by_org.range_names(), ["score", "created"]);
    assert!(by_org.multi.as_ref().is_some_and(|m| m.sharded));

    let def = league()?;
    let gsi = def.index("byTeam").ok_or("byTeam GSI")?;
    assert_eq!(
        gsi.key_attributes()
            .iter()
            .map(|k| (k.name.as_str(), k.key_type))
            .collect::<Vec<_>>(),
        [
            ("teamId", KeyType::S),
            ("region", KeyType::S),
            ("score", KeyType::N),
            ("nickname", KeyType::S)
        ]
    );
    let cf = def.cloudformation(Some("League"))?;
    let gsis = cf["Properties"]["GlobalSecondaryIndexes"]
        .as_array()
        .ok_or("GSIs")?;
    let by_org = gsis
        .iter()
        .find(|g| g["IndexName"] == "byOrg")
        .ok_or("byOrg")?;
    assert_eq!(
        by_org["KeySchema"],
        json!([
            { "AttributeName": "hashKey", "KeyType": "HASH" },
            { "AttributeName": "orgId", "KeyType": "HASH" },
            { "AttributeName": "score", "KeyType": "RANGE" },
            { "AttributeName": "created", "KeyType": "RANGE" },
        ])
    );
    let types: Vec<(String, String)> = cf["Properties"]["AttributeDefinitions"]
        .as_array()
        .ok_or("definitions")?
        .iter()
        .map(|d| {
            (
                d["AttributeName"].as_str().unwrap_or_default().to_owned(),
                d["AttributeType"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    for (name, ty) in [
        ("score", "N"),
        ("created", "N"),
        ("teamId", "S"),
        ("nickname", "S"),
    ] {
        assert!(
            types.contains(&(name.to_owned(), ty.to_owned())),
            "{name}: {types:?}"
        );
    }
    Ok(())
}

fn player(i: u32) -> Player {
    Player {
        player_id: format!("p{i:02}"),
        created: 1_000 + u64::from(i),
        team_id: format!("t{}", i % 2),
        region: "eu".to_owned(),
        org_id: "acme".to_owned(),
        score: i64::from(i % 5) - 2,
        nickname: (!i.is_multiple_of(4)).then(|| format!("n{}", i % 3)),
    }
}

/// Stored players are indexed with their natural values: the unsharded index answers one query
/// per partition, the sharded one one query per shard (the table hash keys of the entity's shard
/// space), and together they return exactly the expected players in tuple order.
async fn derived_entities_are_indexed<S: Store>(store: &S) -> TestResult {
    let players: Vec<Player> = (0..24).map(player).collect();
    for p in &players {
        p.put(store).await?;
    }
    // unsharded: team t1 in eu, nickname present, in (score, nickname) order
    let q = QueryPage::new(s("t1"))
        .index("byTeam")
        .and_hash_key(s("eu"))
        .limit(3);
    let got: Vec<String> = all_pages(store, &q)
        .await?
        .iter()
        .flat_map(|p| p.items.iter().map(|i| text(i, "playerId")))
        .collect();
    let mut expected: Vec<&Player> = players
        .iter()
        .filter(|p| p.team_id == "t1" && p.nickname.is_some())
        .collect();
    expected.sort_by(|a, b| {
        (a.score, &a.nickname)
            .cmp(&(b.score, &b.nickname))
            .then_with(|| a.player_id.cmp(&b.player_id))
    });
    let expected_ids: Vec<&str> = expected.iter().map(|p| p.player_id.as_str()).collect();
    assert_eq!(got, expected_ids);

    // sharded: one query per shard of the entity (4 shards), score >= 0 after no prefix
    let shards: Vec<String> = (0..4).map(|i| format!("player!{i}")).collect();
    let mut found = BTreeSet::new();
    for shard in &shards {
        let q = QueryPage::new(s(shard))
            .index("byOrg")
            .and_hash_key(s("acme"))
            .range(RangeCondition::Ge(n(0)));
        let items: Vec<Item> = all_pages(store, &q.limit(2))
            .await?
            .into_iter()
            .flat_map(|p| p.items)
            .collect();
        let scores: Vec<String> = items.iter().map(|i| text(i, "score")).collect();
        let mut sorted = scores.clone();
        sorted.sort_by_key(|v| v.parse::<i64>().unwrap_or(i64::MIN));
        assert_eq!(scores, sorted, "{shard}: tuple order");
        for i in &items {
            assert!(
                found.insert(text(i, "rangeKey")),
                "{i:?} found in two shards"
            );
        }
    }
    let expected: BTreeSet<String> = players
        .iter()
        .filter(|p| p.score >= 0)
        .map(|p| format!("playerId#{}", p.player_id))
        .collect();
    assert_eq!(found, expected);
    Ok(())
}

#[tokio::test]
async fn derived_entities_are_indexed_in_memory() -> TestResult {
    derived_entities_are_indexed(&MemoryStore::new(league()?)).await
}

#[tokio::test]
async fn derived_entities_are_indexed_in_dynamodb() -> TestResult {
    let Some(store) = store_support::dynamo_store("multiattr-derive", league()?).await? else {
        return Ok(());
    };
    let result = derived_entities_are_indexed(&store).await;
    store.delete_table().await?;
    result
}

// =============================================================================================
// the cross-shard query and item collections

mod query_oracle {
    use entity_manager::Error;
    use entity_manager::query::TokenError;
    use entity_manager::query::untyped::MultiQuery;

    use super::league_query::{Ask, Rec, query, tuple, wanted};
    use super::*;

    fn rec() -> impl Strategy<Value = Rec> {
        (
            any::<bool>(),
            0_u8..30,
            0_u64..3_000,
            0_u8..2,
            0_u8..2,
            -3_i64..4,
            proptest::option::weighted(0.8, 0_u8..3),
        )
            .prop_map(|(coach, id, created, team, org, score, nickname)| Rec {
                coach,
                id: format!("{}{id:02}", if coach { 'c' } else { 'p' }),
                created,
                team,
                org,
                score,
                nickname,
            })
    }

    fn ask() -> impl Strategy<Value = Ask> {
        (
            any::<bool>(),
            any::<bool>(),
            0_u8..2,
            proptest::option::weighted(0.3, -3_i64..4),
            proptest::option::of((0_u8..5, -3_i64..4)),
            any::<bool>(),
            1_usize..8,
            1_usize..5,
            1_usize..4,
        )
            .prop_map(
                |(
                    by_org,
                    collection,
                    key,
                    prefix,
                    cond,
                    descending,
                    limit,
                    page_size,
                    throttle,
                )| {
                    Ask {
                        by_org,
                        collection,
                        key,
                        prefix,
                        cond,
                        descending,
                        limit,
                        page_size,
                        throttle,
                    }
                },
            )
    }

    /// The records a query selects, as (table range key, table hash key), in the query's order
    /// on `store`: by sort tuple, then by lane (the table hash key of a sharded index's shard;
    /// an unsharded index has one lane), then in the order the store keeps equal tuples in
    /// within a partition, read from the store with plain `Query` paging; reversed when
    /// descending.
    async fn expected<S: Store>(
        store: &S,
        recs: &[Rec],
        ask: &Ask,
    ) -> Result<Vec<(String, String)>, BoxError> {
        let mut hits = Vec::new();
        for r in recs {
            if let Some(tuple) = tuple(r, ask).filter(|_| wanted(r, ask)) {
                hits.push((tuple, r.table_keys()?));
            }
        }
        // the store's own order within each partition
        let partitions: BTreeSet<String> = if ask.by_org {
            hits.iter().map(|(_, (_, hash))| hash.clone()).collect()
        } else {
            BTreeSet::from([String::new()])
        };
        let mut seq: std::collections::HashMap<(String, String), usize> =
            std::collections::HashMap::new();
        for partition in partitions {
            let request = if ask.by_org {
                QueryPage::new(s(&partition))
                    .and_hash_key(s(&format!("o{}", ask.key)))
                    .index("byOrg")
            } else {
                QueryPage::new(s(&format!("t{}", ask.key)))
                    .and_hash_key(s("eu"))
                    .index("byTeam")
            };
            for page in all_pages(store, &request).await? {
                for item in &page.items {
                    let next = seq.len();
                    seq.insert((text(item, "rangeKey"), text(item, "hashKey")), next);
                }
            }
        }
        let lane = |keys: &(String, String)| {
            if ask.by_org {
                keys.1.clone()
            } else {
                String::new()
            }
        };
        hits.sort_by(|(tx, kx), (ty, ky)| {
            tx.cmp(ty)
                .then_with(|| lane(kx).cmp(&lane(ky)))
                .then_with(|| seq.get(kx).cmp(&seq.get(ky)))
        });
        if ask.descending {
            hits.reverse();
        }
        Ok(hits.into_iter().map(|(_, keys)| keys).collect())
    }

    /// Writes the records (the last of one id wins), pages every query to its end and compares
    /// with the oracle: the same records in the same order, every page but the last full.
    pub(super) async fn check<S: Store>(store: &S, recs: &[Rec], asks: &[Ask]) -> TestResult {
        let mut latest: Vec<Rec> = Vec::new();
        for r in recs {
            latest.retain(|o| (o.coach, &o.id) != (r.coach, &r.id));
            latest.push(r.clone());
        }
        for r in &latest {
            if r.coach {
                r.as_coach().put(store).await?;
            } else {
                r.as_player().put(store).await?;
            }
        }
        for ask in asks {
            let mut entities = vec![Player::schema()?];
            if ask.collection {
                entities.push(Coach::schema()?);
            }
            let q = query(store, entities, ask);
            let want = expected(store, &latest, ask).await?;
            let mut got = Vec::new();
            let mut token: Option<String> = None;
            for _ in 0..=want.len() + 1 {
                let page = q.page(token.as_deref()).await?;
                let remaining = want.len() - got.len().min(want.len());
                assert_eq!(page.items.len(), ask.limit.min(remaining), "{ask:?}");
                got.extend(
                    page.items
                        .iter()
                        .map(|i| (text(i, "rangeKey"), text(i, "hashKey"))),
                );
                match page.next {
                    Some(next) => token = Some(next),
                    None => break,
                }
            }
            assert_eq!(got, want, "{ask:?}");
            // one stream, whose pages go on from what the previous one read: the same items
            let streamed: Vec<Item> =
                entity_manager::query::TryStreamExt::try_collect(q.stream()).await?;
            let streamed: Vec<(String, String)> = streamed
                .iter()
                .map(|i| (text(i, "rangeKey"), text(i, "hashKey")))
                .collect();
            assert_eq!(streamed, want, "the stream differs ({ask:?})");
        }
        Ok(())
    }

    /// The same queries on a `MemoryStore` whose indexes lag `lag` calls behind the table
    /// (a `FaultPlan`), with 10 % of shard queries throttled and 5 % failing (a failed page is
    /// retried with its token): pages exact with respect to what the index returned (the
    /// paging guide's "Under index lag") — every page but the last full, in the oracle's order,
    /// no record twice, and a record returned if and only if a shard query showed it ahead of
    /// the last record returned before that page.
    #[allow(clippy::too_many_lines)] // the paging, then each clause of the contract
    pub(super) async fn check_lagging(
        recs: &[Rec],
        asks: &[Ask],
        lag: u64,
        seed: u64,
    ) -> TestResult {
        use entity_manager::store::{FaultPlan, Operation};
        use std::collections::{HashMap, HashSet};
        let mut latest: Vec<Rec> = Vec::new();
        for r in recs {
            latest.retain(|o| (o.coach, &o.id) != (r.coach, &r.id));
            latest.push(r.clone());
        }
        let plan = FaultPlan::new(seed)
            .lag(lag)
            .throttle(0.1)
            .transient(0.05)
            .attempts(2)
            .only(&[Operation::Query]);
        let store =
            entity_manager_tests::Observed::new(MemoryStore::new(league()?).with_faults(plan));
        // the oracle's order (ties in the store's own order) from a store without faults
        let clean = MemoryStore::new(league()?);
        for r in &latest {
            if r.coach {
                r.as_coach().put(&store).await?;
                r.as_coach().put(&clean).await?;
            } else {
                r.as_player().put(&store).await?;
                r.as_player().put(&clean).await?;
            }
        }
        for ask in asks {
            if let Ok(mut seen) = store.seen.lock() {
                seen.clear();
            }
            let mut entities = vec![Player::schema()?];
            if ask.collection {
                entities.push(Coach::schema()?);
            }
            let q = query(&store, entities, ask);
            let want = expected(&clean, &latest, ask).await?;
            let pos: HashMap<&(String, String), usize> =
                want.iter().enumerate().map(|(i, k)| (k, i)).collect();
            let keys = |i: &Item| (text(i, "rangeKey"), text(i, "hashKey"));
            let mut pages: Vec<Vec<(String, String)>> = Vec::new();
            let mut token: Option<String> = None;
            loop {
                store
                    .page
                    .store(pages.len(), std::sync::atomic::Ordering::SeqCst);
                let page = entity_manager_tests::page_retrying(|| q.page(token.as_deref())).await?;
                pages.push(page.items.iter().map(keys).collect());
                match page.next {
                    Some(next) => token = Some(next),
                    None => break,
                }
                if pages.len() > 1_000 {
                    return Err("the paging did not end".into());
                }
            }
            let mut cursor = Vec::new();
            let mut last: Option<usize> = None;
            let mut previous: Option<usize> = None;
            for (i, page) in pages.iter().enumerate() {
                if page.len() > ask.limit || (i + 1 < pages.len() && page.len() != ask.limit) {
                    return Err(format!("page {i} holds {} items ({ask:?})", page.len()).into());
                }
                cursor.push(last);
                for k in page {
                    let p = *pos.get(k).ok_or_else(|| format!("{k:?} not selected"))?;
                    if previous.is_some_and(|q| p <= q) {
                        return Err(format!("{k:?} out of order or twice ({ask:?})").into());
                    }
                    previous = Some(p);
                    last = Some(p);
                }
            }
            let mut must = HashSet::new();
            for (k, item) in store.seen() {
                let Some(p) = pos.get(&keys(&item)).copied() else {
                    continue; // not selected by this query (another entity, a sparse miss)
                };
                if cursor.get(k).copied().flatten().is_none_or(|c| p > c) {
                    must.insert(p);
                }
            }
            let got: HashSet<usize> = pages
                .iter()
                .flatten()
                .filter_map(|k| pos.get(k).copied())
                .collect();
            if got != must {
                return Err(format!(
                    "returned {got:?} ≠ shown ahead of the cursor {must:?} (lag {lag}, {ask:?})"
                )
                .into());
            }
            // once the lag has passed (calls that fail nothing), every record in order
            for _ in 0..=lag {
                let _ = store
                    .inner
                    .get_item(&store_support::key("-", "-"), None)
                    .await?;
            }
            let mut again = Vec::new();
            let mut token: Option<String> = None;
            for _ in 0..10_000 {
                let page = entity_manager_tests::page_retrying(|| q.page(token.as_deref())).await?;
                again.extend(page.items.iter().map(keys));
                match page.next {
                    Some(next) => token = Some(next),
                    None => break,
                }
            }
            if again != want {
                return Err(format!("after the lag: {again:?} ≠ {want:?} ({ask:?})").into());
            }
        }
        Ok(())
    }

    fn case() -> impl Strategy<Value = (Vec<Rec>, Vec<Ask>)> {
        (
            proptest::collection::vec(rec(), 0..40),
            proptest::collection::vec(ask(), 1..4),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: entity_manager_tests::cases(512), ..ProptestConfig::default() })]

        /// Sharded and unsharded multi-attribute indexes, of one entity and of the collection,
        /// paged to the end on `MemoryStore`, against the oracle.
        #[test]
        fn memory_store_pages_match_the_oracle((recs, asks) in case()) {
            let runtime = tokio::runtime::Builder::new_current_thread().build()
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            runtime.block_on(async {
                let store = MemoryStore::new(league()?);
                check(&store, &recs, &asks).await
            }).map_err(|e| TestCaseError::fail(e.to_string()))?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: entity_manager_tests::cases(128), ..ProptestConfig::default() })]

        /// Under index lag and failing shard queries (a fault plan), of one entity and of the
        /// collection: pages exact with respect to what the index returned.
        #[test]
        fn lagging_indexes_give_pages_exact_to_what_they_returned(
            (recs, asks) in case(),
            lag in prop_oneof![Just(0u64), Just(3), Just(30), Just(300)],
            seed in any::<u64>(),
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread().build()
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            runtime.block_on(check_lagging(&recs, &asks, lag, seed))
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
        }
    }

    /// The same on `DynamoDB` Local: 12 cases, a table each.
    #[tokio::test]
    async fn dynamodb_pages_match_the_oracle() -> TestResult {
        if store_support::dynamo_client().is_none() {
            return Ok(());
        }
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        for i in 0..12 {
            let (recs, asks) = case()
                .new_tree(&mut runner)
                .map_err(|e| e.to_string())?
                .current();
            let Some(store) = store_support::dynamo_store("multiattr-query", league()?).await?
            else {
                return Ok(());
            };
            let result = check(&store, &recs, &asks).await;
            store.delete_table().await?;
            result.map_err(|e| format!("case {i} ({recs:?}, {asks:?}): {e}"))?;
        }
        Ok(())
    }

    /// An in-memory league holding players `0..n`.
    async fn players(n: u32) -> Result<MemoryStore, BoxError> {
        let store = MemoryStore::new(league()?);
        for i in 0..n {
            player(i).put(&store).await?;
        }
        Ok(store)
    }

    /// A stream over a sharded multi-attribute key reads each item once and takes far fewer
    /// shard queries than paging by tokens (each page of a stream goes on from what the one
    /// before read), and gives the same items in the same order.
    #[tokio::test]
    async fn a_multi_query_stream_reads_each_item_once() -> TestResult {
        use entity_manager::query::TryStreamExt as _;
        let store = entity_manager_tests::Tally::new(players(2_000).await?);
        let q = MultiQuery::new(&store, Player::schema()?, "byOrg")
            .hash([s("acme")])
            .shards_between(0, 5_000)
            .limit(10)
            .page_size(50);
        let mut paged = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let page = q.page(token.as_deref()).await?;
            paged.extend(page.items);
            token = page.next;
            if token.is_none() {
                break;
            }
        }
        let by_tokens = store.take();
        let streamed: Vec<Item> = q.stream().try_collect().await?;
        let streaming = store.take();
        println!("(shard queries, items read): by tokens {by_tokens:?}, streamed {streaming:?}");
        assert_eq!(streamed.len(), 2_000);
        assert!(streamed == paged, "the stream differs from the pages");
        entity_manager_tests::assert_streamed_once("byOrg", 2_000, by_tokens, streaming);
        Ok(())
    }

    /// A token of one query is refused by another.
    #[tokio::test]
    async fn tokens_are_bound_to_their_query() -> TestResult {
        let store = players(6).await?;
        let q = MultiQuery::new(&store, Player::schema()?, "byOrg")
            .hash([s("acme")])
            .shards_between(0, 3_000)
            .limit(2);
        let first = q.page(None).await?;
        let token = first.next.ok_or("more pages")?;
        let other = MultiQuery::new(&store, Player::schema()?, "byOrg")
            .hash([s("other")])
            .shards_between(0, 3_000)
            .limit(2);
        let e = other.page(Some(&token)).await.err().ok_or("accepted")?;
        assert!(matches!(e, Error::Token(TokenError::OtherQuery)), "{e:?}");
        Ok(())
    }

    /// The bytes of a page token (base64url without padding, as the token module documents it),
    /// decoded here by hand.
    fn token_bytes(token: &str) -> Result<Vec<u8>, BoxError> {
        let mut bits = 0u32;
        let mut held = 0u32;
        let mut out = Vec::new();
        for c in token.bytes() {
            let v = match c {
                b'A'..=b'Z' => c - b'A',
                b'a'..=b'z' => c - b'a' + 26,
                b'0'..=b'9' => c - b'0' + 52,
                b'-' => 62,
                b'_' => 63,
                _ => return Err(format!("{c} in a token").into()),
            };
            bits = (bits << 6) | u32::from(v);
            held += 6;
            if held >= 8 {
                held -= 8;
                out.push(u8::try_from((bits >> held) & 0xff)?);
            }
        }
        Ok(out)
    }

    /// A sharded key's token names the boundary's record by its unique value alone, as a
    /// classic query's does: its lane gives the table hash key, and the entity the range key's
    /// form (`playerId#…`), so neither is in the token (they were, and made `MultiQuery`'s
    /// tokens a third longer than `Query`'s). The records of every page still come once each,
    /// in order.
    #[tokio::test]
    async fn a_sharded_token_holds_the_unique_value_alone() -> TestResult {
        let store = players(24).await?;
        let schemas = vec![Player::schema()?, Coach::schema()?];
        let q = MultiQuery::collection(&store, schemas, "byOrg")
            .hash([s("acme")])
            .shards_between(0, 3_000)
            .limit(5);
        let (mut token, mut seen, mut pages) = (None::<String>, Vec::new(), 0);
        loop {
            let page = q.page(token.as_deref()).await?;
            pages += 1;
            seen.extend(page.items.iter().map(|i| text(i, "playerId")));
            let Some(next) = page.next else { break };
            let bytes = token_bytes(&next)?;
            let last = page
                .items
                .last()
                .map(|i| text(i, "playerId"))
                .ok_or("a page")?;
            let holds = |needle: &str| bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
            assert!(holds(&last), "{next}: the last record's id {last}");
            for absent in ["player!", "playerId#"] {
                assert!(!holds(absent), "{next} holds {absent}");
            }
            token = Some(next);
        }
        assert!(pages >= 5, "{pages} pages");
        let mut unique = seen.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 24, "{seen:?}");
        assert_eq!(seen.len(), 24, "{seen:?}");
        Ok(())
    }

    /// An equality condition on the attribute after the prefix is the prefix one value longer:
    /// one query, one plan. Both forms give the same pages and the same tokens (each resumes
    /// the other), over every limit, page size, throttle and direction tried. (They were two
    /// plans: one could end on a last empty page the other did not need.)
    #[tokio::test]
    async fn an_equality_condition_is_the_longer_prefix() -> TestResult {
        let store = players(24).await?;
        let schemas = vec![Player::schema()?, Coach::schema()?];
        for (limit, page_size, throttle, descending) in [
            (1, 1, 1, false),
            (1, 1, 2, true),
            (2, 1, 3, false),
            (3, 2, 1, true),
            (5, 3, 4, false),
        ] {
            let base = || {
                MultiQuery::collection(&store, schemas.clone(), "byOrg")
                    .hash([s("acme")])
                    .shards_between(0, 3_000)
                    .limit(limit)
                    .page_size(page_size)
                    .throttle(throttle)
                    .descending(descending)
            };
            let by_condition = base().range(RangeCondition::Eq(n(-1)));
            let by_prefix = base().range_prefix([n(-1)]);
            let mut token: Option<String> = None;
            let mut pages = 0;
            let mut got = Vec::new();
            loop {
                let a = by_condition.page(token.as_deref()).await?;
                let b = by_prefix.page(token.as_deref()).await?;
                assert_eq!(
                    a.items, b.items,
                    "page {pages} of {limit}/{page_size}/{throttle}"
                );
                assert_eq!(
                    a.next, b.next,
                    "token {pages} of {limit}/{page_size}/{throttle}"
                );
                got.extend(a.items.iter().map(|item| item.get("playerId").cloned()));
                pages += 1;
                // alternate the query that resumes: each resumes the other's token
                let next = if pages % 2 == 0 { a.next } else { b.next };
                match next {
                    Some(next) => token = Some(next),
                    None => break,
                }
            }
            // the players of score -1 (i % 5 == 1), by creation (1_000 + i): none lost, none
            // repeated
            let mut want: Vec<_> = (0..24_u32)
                .filter(|i| i % 5 == 1)
                .map(|i| Some(s(&format!("p{i:02}"))))
                .collect();
            if descending {
                want.reverse();
            }
            assert_eq!(got, want, "{limit}/{page_size}/{throttle}/{descending}");
        }
        Ok(())
    }
}

/// A collection query returns players and coaches, told apart by their entity token, in exact
/// order across both entities' shards, page after page.
#[tokio::test]
async fn collections_return_the_typed_enum() -> TestResult {
    use entity_manager::query::Collection as _;
    let store = MemoryStore::new(league()?);
    let players: Vec<Player> = (0..10).map(player).collect();
    let coaches: Vec<Coach> = (0_u8..4)
        .map(|i| Coach {
            coach_id: format!("c{i}"),
            created: 2_000 + u64::from(i),
            team_id: "t0".into(),
            region: "eu".into(),
            org_id: "acme".into(),
            score: i64::from(i) - 1,
            nickname: None,
        })
        .collect();
    for p in &players {
        p.put(&store).await?;
    }
    for c in &coaches {
        c.put(&store).await?;
    }
    let query = Roster::query(&store)?
        .index(PlayerIndex::ByOrg)
        .hash(Player::FIELDS.org_id.eq("acme"))
        .shards_between(0, 3_000)
        .limit(3);
    let mut got = Vec::new();
    let mut token = None;
    loop {
        let page = query.page(token.as_deref()).await?;
        got.extend(page.items);
        match page.next {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    let mut expected: Vec<(i64, u64, Roster)> = players
        .iter()
        .map(|p| (p.score, p.created, Roster::Player(p.clone())))
        .chain(
            coaches
                .iter()
                .map(|c| (c.score, c.created, Roster::Coach(c.clone()))),
        )
        .collect();
    expected.sort_by_key(|(score, created, _)| (*score, *created));
    let expected: Vec<Roster> = expected.into_iter().map(|(_, _, r)| r).collect();
    assert_eq!(got, expected);
    assert!(got.iter().any(|r| matches!(r, Roster::Coach(_))));
    Ok(())
}
