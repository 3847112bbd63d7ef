//! The store conformance suite, written once over `Store` and run against `MemoryStore` and
//! against `DynamoDB` Local (when `DYNAMODB_ENDPOINT` is set; required when `CI=true`).
//!
//! Every expectation here was checked against `DynamoDB` Local: where the in-memory store
//! imitates `DynamoDB` (orders, limits, page keys, projections, sparse indexes, filters,
//! validation errors), this suite is what keeps the two in step.

mod store_support;

use entity_manager::store::{
    AttributeType, Comparison, Expect, Filter, MemoryStore, QueryPage, RangeCondition,
    ReturnValues, Store, TransactWrite, Update, WriteRequest,
};
use entity_manager::{AttributeValue, Item};
use serde_json::json;
use store_support::{TestResult, all_pages, canonical, definition, item, key, n, s, text};

/// The conformance tests, each a generic function over the store.
mod suite {
    pub(crate) use super::suite2::*;
    pub(crate) use super::suite3::*;
    use super::*;

    fn ranges(items: &[Item]) -> Vec<String> {
        items.iter().map(|i| text(i, "rangeKey")).collect()
    }

    async fn put_all<S: Store>(store: &S, items: Vec<Item>) -> TestResult {
        for i in items {
            store.put_item(i, Expect::Any).await?;
        }
        Ok(())
    }

    async fn query_ranges<S: Store>(
        store: &S,
        request: &QueryPage,
    ) -> Result<Vec<String>, Box<dyn std::error::Error>> {
        let pages = all_pages(store, request).await?;
        Ok(pages.iter().flat_map(|p| ranges(&p.items)).collect())
    }

    /// A small partition: ranges r0..r9, scores 0..9 (as numbers), names, a tag set and a list.
    fn partition(hash: &str) -> Result<Vec<Item>, Box<dyn std::error::Error>> {
        (0..10)
            .map(|i| {
                let mut it = item(json!({
                    "hashKey": hash, "rangeKey": format!("r{i}"), "group": format!("{hash}-g"),
                    "score": i, "name": format!("name{}", 9 - i), "created": 1000 + i,
                    "kind": if i % 2 == 0 { "even" } else { "odd" },
                }))?;
                if i % 3 == 0 {
                    it.insert(
                        "tags".into(),
                        AttributeValue::Ss(vec![format!("t{i}"), "common".into()]),
                    );
                    it.insert("list".into(), AttributeValue::L(vec![n(i), s("x")]));
                }
                if i == 7 {
                    it.remove("kind");
                }
                Ok(it)
            })
            .collect()
    }

    pub(crate) async fn put_get_delete<S: Store>(store: &S) -> TestResult {
        let it = item(
            json!({ "hashKey": "p", "rangeKey": "1", "a": "x", "b": 2, "m": { "k": [1, "y", true] } }),
        )?;
        store.put_item(it.clone(), Expect::Any).await?;
        assert_eq!(
            store.get_item(&key("p", "1"), None).await?,
            Some(it.clone())
        );
        let projected = store
            .get_item(&key("p", "1"), Some(&["a".into(), "missing".into()]))
            .await?;
        assert_eq!(projected, Some(item(json!({ "a": "x" }))?));
        assert_eq!(store.get_item(&key("p", "2"), None).await?, None);
        // A put replaces the whole item.
        let replacement = item(json!({ "hashKey": "p", "rangeKey": "1", "c": 3 }))?;
        store.put_item(replacement.clone(), Expect::Any).await?;
        assert_eq!(
            store.get_item(&key("p", "1"), None).await?,
            Some(replacement)
        );
        store.delete_item(&key("p", "1"), Expect::Any).await?;
        assert_eq!(store.get_item(&key("p", "1"), None).await?, None);
        // Deleting what is not there succeeds.
        store.delete_item(&key("p", "1"), Expect::Any).await?;
        Ok(())
    }

    pub(crate) async fn conditional_writes<S: Store>(store: &S) -> TestResult {
        let it = item(json!({ "hashKey": "c", "rangeKey": "1", "v": 1 }))?;
        store.put_item(it.clone(), Expect::Absent).await?;
        let e = store
            .put_item(it.clone(), Expect::Absent)
            .await
            .err()
            .ok_or("second put if absent succeeded")?;
        assert!(
            e.is_conditional_check_failed() && !e.is_validation() && !e.is_retryable(),
            "{e:?}"
        );
        let other = item(json!({ "hashKey": "c", "rangeKey": "2" }))?;
        let e = store
            .put_item(other.clone(), Expect::Present)
            .await
            .err()
            .ok_or("put if present on a missing item succeeded")?;
        assert!(e.is_conditional_check_failed(), "{e:?}");
        store.put_item(it.clone(), Expect::Present).await?;
        let e = store
            .delete_item(&key("c", "2"), Expect::Present)
            .await
            .err()
            .ok_or("delete if present of a missing item succeeded")?;
        assert!(e.is_conditional_check_failed(), "{e:?}");
        let e = store
            .delete_item(&key("c", "1"), Expect::Absent)
            .await
            .err()
            .ok_or("delete if absent of an item succeeded")?;
        assert!(e.is_conditional_check_failed(), "{e:?}");
        assert_eq!(store.get_item(&key("c", "1"), None).await?, Some(it));
        store.delete_item(&key("c", "1"), Expect::Present).await?;
        assert_eq!(store.get_item(&key("c", "1"), None).await?, None);
        Ok(())
    }

    #[allow(clippy::too_many_lines)] // a table of cases
    pub(crate) async fn validation_errors<S: Store>(store: &S) -> TestResult {
        let bad_items = [
            json!({ "hashKey": "v" }),                 // no range key
            json!({ "hashKey": 1, "rangeKey": "1" }),  // hash key is N
            json!({ "hashKey": "", "rangeKey": "1" }), // empty key string
            json!({ "hashKey": "v", "rangeKey": "1", "group": "g", "score": "high" }), // GSI key type
            json!({ "hashKey": "v", "rangeKey": "1", "group": "" , "score": 1 }), // empty GSI key
        ];
        for bad in bad_items {
            let e = store
                .put_item(item(bad.clone())?, Expect::Any)
                .await
                .err()
                .ok_or(format!("put of {bad} succeeded"))?;
            assert!(e.is_validation(), "{bad}: {e:?}");
        }
        let mut bad_number = key("v", "1");
        bad_number.insert("x".into(), n("12abc"));
        let e = store
            .put_item(bad_number, Expect::Any)
            .await
            .err()
            .ok_or("bad number accepted")?;
        assert!(e.is_validation(), "{e:?}");

        let mut long_key = key("v", "1");
        long_key.insert("extra".into(), s("x"));
        let e = store
            .get_item(&long_key, None)
            .await
            .err()
            .ok_or("get with a non-key attribute succeeded")?;
        assert!(e.is_validation(), "{e:?}");

        let q = QueryPage::new(s("v"));
        let bad_queries = [
            q.clone().index("noSuchIndex"),
            q.clone().limit(0),
            q.clone().range(RangeCondition::Between(s("b"), s("a"))),
            q.clone().range(RangeCondition::Eq(n(1))),
            QueryPage::new(n(1)),
            QueryPage::new(s("g"))
                .index("byScore")
                .range(RangeCondition::BeginsWith(n(1))),
            QueryPage::new(s("g"))
                .index("byScore")
                .filter(Filter::eq("score", n(1))),
            q.clone().filter(Filter::eq("rangeKey", s("1"))),
            QueryPage::new(s("g")).index("byName").projection(["other"]),
            QueryPage::new(s("g"))
                .index("byScore")
                .projection(["name", "created"]),
            q.clone().filter(Filter::And(vec![])),
            q.clone().filter(Filter::Between {
                attribute: "x".into(),
                low: n(2),
                high: n(1),
            }),
        ];
        for bad in bad_queries {
            let e = store
                .query_page(&bad)
                .await
                .err()
                .ok_or(format!("query {bad:?} succeeded"))?;
            assert!(e.is_validation(), "{bad:?}: {e:?}");
        }
        Ok(())
    }

    pub(crate) async fn numbers_sort_numerically_and_read_back_canonically<S: Store>(
        store: &S,
    ) -> TestResult {
        let scores = [
            "10", "9", "1.50", "-3", "100.0", "0.25", "-0.5", "1e2", "007",
        ];
        for (i, score) in scores.iter().enumerate() {
            let mut it =
                item(json!({ "hashKey": "num", "rangeKey": format!("r{i}"), "group": "num-g" }))?;
            it.insert("score".into(), n(score));
            it.insert("plain".into(), n(score));
            if *score == "1e2" {
                // 100.0 and 1e2 are the same number: DynamoDB keeps both items (distinct table keys).
                it.insert("note".into(), s("exp"));
            }
            store.put_item(it, Expect::Any).await?;
        }
        let page = store
            .query_page(&QueryPage::new(s("num-g")).index("byScore"))
            .await?;
        let got: Vec<String> = page.items.iter().map(|i| text(i, "score")).collect();
        assert_eq!(
            got,
            ["-3", "-0.5", "0.25", "1.5", "7", "9", "10", "100", "100"]
        );
        let r2 = store
            .get_item(&key("num", "r2"), None)
            .await?
            .ok_or("missing r2")?;
        assert_eq!(r2["plain"], n("1.5"));
        let r8 = store
            .get_item(&key("num", "r8"), None)
            .await?
            .ok_or("missing r8")?;
        assert_eq!(r8["plain"], n("7"));
        // Numeric filter comparisons: 1.50 = 1.5.
        let eq = store
            .query_page(&QueryPage::new(s("num")).filter(Filter::eq("plain", n("1.500"))))
            .await?;
        assert_eq!(ranges(&eq.items), ["r2"]);
        let gt = store
            .query_page(&QueryPage::new(s("num")).filter(Filter::compare(
                "plain",
                Comparison::Gt,
                n(9),
            )))
            .await?;
        assert_eq!(ranges(&gt.items), ["r0", "r4", "r7"]);
        Ok(())
    }

    pub(crate) async fn strings_sort_by_bytes<S: Store>(store: &S) -> TestResult {
        let values = ["b", "a", "Z", "é", "aa", "a b", "~", "A", "ä", "0", "日本"];
        for v in values {
            store
                .put_item(
                    item(json!({ "hashKey": "str", "rangeKey": v }))?,
                    Expect::Any,
                )
                .await?;
        }
        let mut expected: Vec<&str> = values.to_vec();
        expected.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        assert_eq!(
            query_ranges(store, &QueryPage::new(s("str"))).await?,
            expected
        );
        expected.reverse();
        assert_eq!(
            query_ranges(store, &QueryPage::new(s("str")).descending(true)).await?,
            expected
        );
        let prefixed = query_ranges(
            store,
            &QueryPage::new(s("str")).range(RangeCondition::BeginsWith(s("a"))),
        )
        .await?;
        assert_eq!(prefixed, ["a", "a b", "aa"]);
        Ok(())
    }

    #[allow(clippy::too_many_lines)] // a table of cases
    pub(crate) async fn range_conditions<S: Store>(store: &S) -> TestResult {
        put_all(store, partition("rc")?).await?;
        let q = QueryPage::new(s("rc"));
        let cases: Vec<(RangeCondition, Vec<&str>)> = vec![
            (RangeCondition::Eq(s("r3")), vec!["r3"]),
            (RangeCondition::Lt(s("r3")), vec!["r0", "r1", "r2"]),
            (RangeCondition::Le(s("r3")), vec!["r0", "r1", "r2", "r3"]),
            (RangeCondition::Gt(s("r7")), vec!["r8", "r9"]),
            (RangeCondition::Ge(s("r7")), vec!["r7", "r8", "r9"]),
            (
                RangeCondition::Between(s("r2"), s("r4")),
                vec!["r2", "r3", "r4"],
            ),
            (RangeCondition::Between(s("r4"), s("r4")), vec!["r4"]),
            (
                RangeCondition::BeginsWith(s("r")),
                vec!["r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9"],
            ),
            (RangeCondition::BeginsWith(s("r5")), vec!["r5"]),
            (RangeCondition::BeginsWith(s("x")), vec![]),
            (RangeCondition::Gt(s("r9")), vec![]),
        ];
        for (cond, expected) in cases {
            for limit in [None, Some(1), Some(2), Some(100)] {
                for descending in [false, true] {
                    let mut request = q.clone().range(cond.clone()).descending(descending);
                    request.limit = limit;
                    let got = query_ranges(store, &request).await?;
                    let mut want: Vec<String> = expected.iter().map(|s| (*s).to_owned()).collect();
                    if descending {
                        want.reverse();
                    }
                    assert_eq!(
                        got, want,
                        "{cond:?} limit {limit:?} descending {descending}"
                    );
                }
            }
        }
        // A numeric range key (byScore): scores 0..9.
        let g = QueryPage::new(s("rc-g")).index("byScore");
        let numeric: Vec<(RangeCondition, Vec<&str>)> = vec![
            (RangeCondition::Eq(n(3)), vec!["r3"]),
            (RangeCondition::Lt(n(2)), vec!["r0", "r1"]),
            (RangeCondition::Le(n("2.0")), vec!["r0", "r1", "r2"]),
            (RangeCondition::Gt(n("8.5")), vec!["r9"]),
            (RangeCondition::Ge(n(8)), vec!["r8", "r9"]),
            (RangeCondition::Between(n("-1"), n("1.5")), vec!["r0", "r1"]),
        ];
        for (cond, expected) in numeric {
            let got = query_ranges(store, &g.clone().range(cond.clone()).limit(1)).await?;
            assert_eq!(got, expected, "{cond:?}");
        }
        Ok(())
    }

    pub(crate) async fn limit_counts_before_the_filter<S: Store>(store: &S) -> TestResult {
        put_all(store, partition("lf")?).await?;
        let request = QueryPage::new(s("lf"))
            .filter(Filter::eq("kind", s("odd")))
            .limit(3);
        let pages = all_pages(store, &request).await?;
        let per_page: Vec<Vec<String>> = pages.iter().map(|p| ranges(&p.items)).collect();
        // 10 items, 3 evaluated per page: r0..r2 | r3..r5 | r6..r8 | r9 (+ LEK-less end).
        assert_eq!(
            per_page,
            vec![vec!["r1"], vec!["r3", "r5"], vec![], vec!["r9"]]
        );
        assert!(
            pages[2].last_evaluated_key.is_some(),
            "a page emptied by the filter still has a page key"
        );
        assert!(pages[3].last_evaluated_key.is_none());
        Ok(())
    }

    pub(crate) async fn trailing_empty_page_when_the_limit_lands_on_the_end<S: Store>(
        store: &S,
    ) -> TestResult {
        put_all(store, partition("te")?).await?;
        for (limit, expected_pages) in [(5, 3), (2, 6), (10, 2), (3, 4), (11, 1)] {
            let pages = all_pages(store, &QueryPage::new(s("te")).limit(limit)).await?;
            assert_eq!(pages.len(), expected_pages, "limit {limit}");
            let total: usize = pages.iter().map(|p| p.items.len()).sum();
            assert_eq!(total, 10);
        }
        let pages = all_pages(store, &QueryPage::new(s("te")).limit(5)).await?;
        assert!(pages[2].items.is_empty() && pages[2].last_evaluated_key.is_none());
        // An empty partition: one empty page without a key.
        let empty = store
            .query_page(&QueryPage::new(s("nothing-here")).limit(1))
            .await?;
        assert!(empty.items.is_empty() && empty.last_evaluated_key.is_none());
        Ok(())
    }

    pub(crate) async fn last_evaluated_key_holds_table_and_index_keys<S: Store>(
        store: &S,
    ) -> TestResult {
        put_all(store, partition("lek")?).await?;
        let page = store.query_page(&QueryPage::new(s("lek")).limit(2)).await?;
        assert_eq!(page.last_evaluated_key, Some(key("lek", "r1")));
        let page = store
            .query_page(&QueryPage::new(s("lek-g")).index("byScore").limit(2))
            .await?;
        let mut expected = key("lek", "r1");
        expected.insert("group".into(), s("lek-g"));
        expected.insert("score".into(), n(1));
        assert_eq!(page.last_evaluated_key, Some(expected));
        // An index whose hash key is the table hash key: the key holds it once.
        let page = store
            .query_page(
                &QueryPage::new(s("lek"))
                    .index("byCreated")
                    .limit(1)
                    .descending(true),
            )
            .await?;
        let mut expected = key("lek", "r9");
        expected.insert("created".into(), n(1009));
        assert_eq!(page.last_evaluated_key, Some(expected));
        Ok(())
    }

    pub(crate) async fn sparse_indexes<S: Store>(store: &S) -> TestResult {
        put_all(
            store,
            vec![
                item(json!({ "hashKey": "sp", "rangeKey": "both", "group": "sp-g", "score": 1, "name": "n1" }))?,
                item(json!({ "hashKey": "sp", "rangeKey": "no-score", "group": "sp-g", "name": "n2" }))?,
                item(json!({ "hashKey": "sp", "rangeKey": "no-group", "score": 3, "name": "n3" }))?,
                item(json!({ "hashKey": "sp", "rangeKey": "none" }))?,
            ],
        )
        .await?;
        assert_eq!(
            query_ranges(store, &QueryPage::new(s("sp-g")).index("byScore")).await?,
            ["both"]
        );
        assert_eq!(
            query_ranges(store, &QueryPage::new(s("sp-g")).index("byName")).await?,
            ["both", "no-score"]
        );
        assert_eq!(
            query_ranges(store, &QueryPage::new(s("sp")).index("byCreated")).await?,
            Vec::<String>::new()
        );
        // Removing the index key attribute removes the item from the index.
        store
            .put_item(
                item(json!({ "hashKey": "sp", "rangeKey": "both", "group": "sp-g" }))?,
                Expect::Any,
            )
            .await?;
        assert_eq!(
            query_ranges(store, &QueryPage::new(s("sp-g")).index("byScore")).await?,
            Vec::<String>::new()
        );
        Ok(())
    }

    pub(crate) async fn projections<S: Store>(store: &S) -> TestResult {
        let full = item(json!({
            "hashKey": "pj", "rangeKey": "1", "group": "pj-g", "score": 5, "name": "x",
            "created": 7, "secret": "s", "other": 1
        }))?;
        store.put_item(full.clone(), Expect::Any).await?;
        let keys_only = store
            .query_page(&QueryPage::new(s("pj-g")).index("byName"))
            .await?;
        assert_eq!(
            keys_only.items,
            vec![item(
                json!({ "hashKey": "pj", "rangeKey": "1", "group": "pj-g", "name": "x" })
            )?]
        );
        let include = store
            .query_page(&QueryPage::new(s("pj-g")).index("byScore"))
            .await?;
        assert_eq!(
            include.items,
            vec![item(
                json!({ "hashKey": "pj", "rangeKey": "1", "group": "pj-g", "score": 5, "name": "x" })
            )?]
        );
        let all = store
            .query_page(&QueryPage::new(s("pj")).index("byCreated"))
            .await?;
        assert_eq!(all.items, vec![full.clone()]);
        let chosen = store
            .query_page(
                &QueryPage::new(s("pj-g"))
                    .index("byScore")
                    .projection(["name", "hashKey"]),
            )
            .await?;
        assert_eq!(
            chosen.items,
            vec![item(json!({ "hashKey": "pj", "name": "x" }))?]
        );
        let table = store
            .query_page(&QueryPage::new(s("pj")).projection(["secret", "nope"]))
            .await?;
        assert_eq!(table.items, vec![item(json!({ "secret": "s" }))?]);
        Ok(())
    }

    #[allow(clippy::too_many_lines)] // a table of cases
    pub(crate) async fn filters<S: Store>(store: &S) -> TestResult {
        put_all(store, partition("f")?).await?;
        let q = QueryPage::new(s("f"));
        let all: Vec<String> = (0..10).map(|i| format!("r{i}")).collect();
        let cases: Vec<(Filter, Vec<&str>)> = vec![
            (
                Filter::eq("kind", s("even")),
                vec!["r0", "r2", "r4", "r6", "r8"],
            ),
            // `<>` is true where the attribute is missing (r7 has no kind).
            (
                Filter::compare("kind", Comparison::Ne, s("even")),
                vec!["r1", "r3", "r5", "r7", "r9"],
            ),
            (
                Filter::compare("score", Comparison::Lt, n(2)),
                vec!["r0", "r1"],
            ),
            (
                Filter::compare("score", Comparison::Le, n(2)),
                vec!["r0", "r1", "r2"],
            ),
            (
                Filter::compare("score", Comparison::Gt, n(7)),
                vec!["r8", "r9"],
            ),
            (
                Filter::compare("score", Comparison::Ge, n(7)),
                vec!["r7", "r8", "r9"],
            ),
            // Comparing with another type is false.
            (Filter::compare("score", Comparison::Lt, s("9")), vec![]),
            (
                Filter::compare("kind", Comparison::Gt, s("a")),
                vec!["r0", "r1", "r2", "r3", "r4", "r5", "r6", "r8", "r9"],
            ),
            (
                Filter::Between {
                    attribute: "score".into(),
                    low: n(3),
                    high: n(5),
                },
                vec!["r3", "r4", "r5"],
            ),
            (
                Filter::BeginsWith {
                    attribute: "name".into(),
                    prefix: s("name1"),
                },
                vec!["r8"],
            ),
            (
                Filter::Contains {
                    attribute: "name".into(),
                    value: s("e9"),
                },
                vec!["r0"],
            ),
            (
                Filter::Contains {
                    attribute: "tags".into(),
                    value: s("common"),
                },
                vec!["r0", "r3", "r6", "r9"],
            ),
            (
                Filter::Contains {
                    attribute: "tags".into(),
                    value: s("t6"),
                },
                vec!["r6"],
            ),
            (
                Filter::Contains {
                    attribute: "list".into(),
                    value: n(9),
                },
                vec!["r9"],
            ),
            (Filter::Exists("tags".into()), vec!["r0", "r3", "r6", "r9"]),
            (Filter::NotExists("kind".into()), vec!["r7"]),
            (
                Filter::In {
                    attribute: "score".into(),
                    values: vec![n(1), n(4), s("4"), n(11)],
                },
                vec!["r1", "r4"],
            ),
            (
                Filter::And(vec![
                    Filter::eq("kind", s("even")),
                    Filter::compare("score", Comparison::Gt, n(3)),
                ]),
                vec!["r4", "r6", "r8"],
            ),
            (
                Filter::Or(vec![
                    Filter::eq("score", n(1)),
                    Filter::Exists("list".into()),
                ]),
                vec!["r0", "r1", "r3", "r6", "r9"],
            ),
            (
                Filter::Not(Box::new(Filter::Or(vec![
                    Filter::compare("score", Comparison::Lt, n(2)),
                    Filter::compare("score", Comparison::Gt, n(7)),
                ]))),
                vec!["r2", "r3", "r4", "r5", "r6", "r7"],
            ),
            (
                Filter::Not(Box::new(Filter::compare("missing", Comparison::Lt, n(1)))),
                all.iter().map(String::as_str).collect(),
            ),
        ];
        for (filter, expected) in cases {
            let got = query_ranges(store, &q.clone().filter(filter.clone())).await?;
            assert_eq!(got, expected, "{filter:?}");
        }
        // A filter on a projected index may name only projected attributes.
        let e = store
            .query_page(
                &QueryPage::new(s("f-g"))
                    .index("byScore")
                    .filter(Filter::Exists("kind".into())),
            )
            .await
            .err()
            .ok_or("a filter on an attribute the index does not project was accepted")?;
        assert!(e.is_validation(), "{e:?}");
        let on_index = query_ranges(
            store,
            &QueryPage::new(s("f-g"))
                .index("byScore")
                .filter(Filter::eq("name", s("name0"))),
        )
        .await?;
        assert_eq!(on_index, ["r9"]);
        Ok(())
    }

    #[allow(clippy::too_many_lines)] // a table of cases
    pub(crate) async fn batch_write_and_get<S: Store>(store: &S) -> TestResult {
        let items: Vec<Item> = (0..60)
            .map(|i| item(json!({ "hashKey": "b", "rangeKey": format!("{i:03}"), "v": i })))
            .collect::<Result<_, _>>()?;
        store
            .batch_write(items.iter().cloned().map(WriteRequest::Put).collect())
            .await?;
        let keys: Vec<Item> = (0..150).map(|i| key("b", &format!("{i:03}"))).collect();
        let got = store.batch_get(keys.clone(), None).await?;
        assert_eq!(canonical(got), canonical(items.clone()));
        let projected = store
            .batch_get(keys[..3].to_vec(), Some(&["v".into()]))
            .await?;
        let mut vs: Vec<String> = projected.iter().map(|i| text(i, "v")).collect();
        vs.sort();
        assert_eq!(vs, ["0", "1", "2"]);
        // Delete the even ones, put two new ones, in one batch.
        let mut writes: Vec<WriteRequest> = (0..60)
            .step_by(2)
            .map(|i| WriteRequest::Delete(key("b", &format!("{i:03}"))))
            .collect();
        writes.push(WriteRequest::Put(item(
            json!({ "hashKey": "b", "rangeKey": "new1" }),
        )?));
        store.batch_write(writes).await?;
        let left = store.batch_get(keys.clone(), None).await?;
        assert_eq!(left.len(), 30);
        assert!(
            left.iter()
                .all(|i| text(i, "v").parse::<u32>().is_ok_and(|v| v % 2 == 1))
        );
        // Two requests for one key in one chunk: a validation error naming exactly what was not
        // written (the chunk and everything after it).
        let mut dup: Vec<WriteRequest> = (0..30)
            .map(|i| WriteRequest::Put(key("d", &format!("{i:02}"))))
            .collect();
        dup[27] = WriteRequest::Delete(key("d", "26"));
        let e = store
            .batch_write(dup.clone())
            .await
            .err()
            .ok_or("duplicate keys in a chunk accepted")?;
        assert!(e.cause.is_validation(), "{e:?}");
        assert_eq!(e.unwritten, dup[25..].to_vec());
        let written = store
            .batch_get(
                (0..30).map(|i| key("d", &format!("{i:02}"))).collect(),
                None,
            )
            .await?;
        assert_eq!(written.len(), 25);
        // Duplicate keys in one get chunk.
        let e = store
            .batch_get(vec![key("b", "001"), key("b", "001")], None)
            .await
            .err()
            .ok_or("duplicate get keys accepted")?;
        assert!(e.cause.is_validation(), "{e:?}");
        assert_eq!(e.unread.len(), 2);
        // Nothing to do is fine.
        store.batch_write(Vec::new()).await?;
        assert!(store.batch_get(Vec::new(), None).await?.is_empty());
        Ok(())
    }

    #[allow(clippy::too_many_lines)] // a table of cases
    pub(crate) async fn transactions<S: Store>(store: &S) -> TestResult {
        store
            .put_item(
                item(json!({ "hashKey": "t", "rangeKey": "existing", "v": 1 }))?,
                Expect::Any,
            )
            .await?;
        store
            .transact_write(vec![
                TransactWrite::Put {
                    item: item(json!({ "hashKey": "t", "rangeKey": "a", "v": 1 }))?,
                    expect: Expect::Absent,
                },
                TransactWrite::Put {
                    item: item(json!({ "hashKey": "t", "rangeKey": "b" }))?,
                    expect: Expect::Any,
                },
                TransactWrite::Check {
                    key: key("t", "existing"),
                    expect: Expect::Present,
                },
            ])
            .await?;
        assert!(store.get_item(&key("t", "a"), None).await?.is_some());
        // One failed condition cancels everything, with one reason per operation.
        let e = store
            .transact_write(vec![
                TransactWrite::Delete {
                    key: key("t", "b"),
                    expect: Expect::Present,
                },
                TransactWrite::Put {
                    item: item(json!({ "hashKey": "t", "rangeKey": "a", "v": 2 }))?,
                    expect: Expect::Absent,
                },
                TransactWrite::Put {
                    item: item(json!({ "hashKey": "t", "rangeKey": "c" }))?,
                    expect: Expect::Any,
                },
                TransactWrite::Check {
                    key: key("t", "nope"),
                    expect: Expect::Present,
                },
            ])
            .await
            .err()
            .ok_or("a transaction with a failed condition succeeded")?;
        assert!(
            e.is_transaction_canceled() && e.is_conditional_check_failed(),
            "{e:?}"
        );
        let codes: Vec<Option<&str>> = e
            .cancellation_reasons()
            .iter()
            .map(|r| r.code.as_deref())
            .collect();
        assert_eq!(
            codes,
            [
                None,
                Some("ConditionalCheckFailed"),
                None,
                Some("ConditionalCheckFailed")
            ]
        );
        assert!(store.get_item(&key("t", "b"), None).await?.is_some());
        assert!(store.get_item(&key("t", "c"), None).await?.is_none());
        assert_eq!(
            store
                .get_item(&key("t", "a"), None)
                .await?
                .map(|i| text(&i, "v")),
            Some("1".into())
        );
        store
            .transact_write(vec![
                TransactWrite::Delete {
                    key: key("t", "a"),
                    expect: Expect::Present,
                },
                TransactWrite::Check {
                    key: key("t", "zzz"),
                    expect: Expect::Absent,
                },
            ])
            .await?;
        assert!(store.get_item(&key("t", "a"), None).await?.is_none());
        // Two operations on one item, and an empty transaction, are invalid.
        let e = store
            .transact_write(vec![
                TransactWrite::Put {
                    item: key("t", "x"),
                    expect: Expect::Any,
                },
                TransactWrite::Delete {
                    key: key("t", "x"),
                    expect: Expect::Any,
                },
            ])
            .await
            .err()
            .ok_or("two operations on one item accepted")?;
        assert!(e.is_validation(), "{e:?}");
        let e = store
            .transact_write(Vec::new())
            .await
            .err()
            .ok_or("empty transaction accepted")?;
        assert!(e.is_validation(), "{e:?}");
        Ok(())
    }

    pub(crate) async fn concurrent_writes_and_queries<S: Store>(store: &S) -> TestResult {
        let writer = |w: usize| async move {
            for i in 0..20 {
                let it = item(
                    json!({ "hashKey": "cc", "rangeKey": format!("{w}-{i:02}"), "group": "cc-g", "score": w * 100 + i }),
                )?;
                store.put_item(it, Expect::Absent).await?;
                let _ = store
                    .query_page(&QueryPage::new(s("cc-g")).index("byScore").limit(5))
                    .await?;
            }
            Ok::<(), Box<dyn std::error::Error>>(())
        };
        let (a, b, c, d) = tokio::join!(writer(0), writer(1), writer(2), writer(3));
        a?;
        b?;
        c?;
        d?;
        let all = query_ranges(store, &QueryPage::new(s("cc-g")).index("byScore").limit(7)).await?;
        let expected: Vec<String> = (0..4)
            .flat_map(|w| (0..20).map(move |i| format!("{w}-{i:02}")))
            .collect();
        assert_eq!(all, expected);
        Ok(())
    }
}

/// Updates, conditions on any attribute, size limits and transactional reads.
mod suite2 {
    use super::*;

    fn get(item: &Item, attribute: &str) -> Option<AttributeValue> {
        item.get(attribute).cloned()
    }

    #[allow(clippy::too_many_lines)] // one block per update action
    pub(crate) async fn updates<S: Store>(store: &S) -> TestResult {
        let k = key("u", "1");
        // an update of a missing item creates it, with its key
        let new = store
            .update_item(
                &k,
                &Update::new().set("a", s("x")).add("n", n(5)),
                Expect::Any,
                ReturnValues::AllNew,
            )
            .await?
            .ok_or("ALL_NEW returned nothing")?;
        assert_eq!(
            new,
            item(json!({ "hashKey": "u", "rangeKey": "1", "a": "x", "n": 5 }))?
        );
        // every action
        let update = Update::new()
            .set_if_not_exists("a", s("ignored"))
            .set_if_not_exists("b", s("set"))
            .increment("n", n("2.5"))
            .append("l", AttributeValue::L(vec![n(1), n(2)]))
            .add("tags", AttributeValue::Ss(vec!["t1".into(), "t2".into()]))
            .set("z", AttributeValue::Null(true));
        let old = store
            .update_item(&k, &update, Expect::Present, ReturnValues::UpdatedOld)
            .await?;
        assert_eq!(old, Some(item(json!({ "a": "x", "n": 5 }))?));
        let update = Update::new()
            .prepend("l", AttributeValue::L(vec![s("first")]))
            .decrement("n", n(10))
            .delete("tags", AttributeValue::Ss(vec!["t1".into()]))
            .remove("z")
            .remove("missing");
        let updated_new = store
            .update_item(&k, &update, Expect::Any, ReturnValues::UpdatedNew)
            .await?
            .ok_or("UPDATED_NEW returned nothing")?;
        assert_eq!(get(&updated_new, "n"), Some(n("-2.5")));
        assert_eq!(updated_new.get("z"), None);
        let now = store.get_item(&k, None).await?.ok_or("gone")?;
        assert_eq!(get(&now, "a"), Some(s("x")));
        assert_eq!(get(&now, "b"), Some(s("set")));
        assert_eq!(
            get(&now, "l"),
            Some(AttributeValue::L(vec![s("first"), n(1), n(2)]))
        );
        assert_eq!(
            get(&now, "tags"),
            Some(AttributeValue::Ss(vec!["t2".into()]))
        );
        // deleting the last element removes the set
        store
            .update_item(
                &k,
                &Update::new().delete("tags", AttributeValue::Ss(vec!["t2".into()])),
                Expect::Any,
                ReturnValues::None,
            )
            .await?;
        let now = store.get_item(&k, None).await?.ok_or("gone")?;
        assert_eq!(now.get("tags"), None);
        // ALL_OLD of a missing item is nothing
        let none = store
            .update_item(
                &key("u", "2"),
                &Update::new().set("a", s("y")),
                Expect::Any,
                ReturnValues::AllOld,
            )
            .await?;
        assert_eq!(none, None);
        // an update moves the item into a sparse index and out of it
        store
            .update_item(
                &k,
                &Update::new().set("group", s("ug")).set("score", n(3)),
                Expect::Any,
                ReturnValues::None,
            )
            .await?;
        let q = QueryPage::new(s("ug")).index("byScore");
        assert_eq!(query_ranges_of(store, &q).await?, vec!["1".to_owned()]);
        store
            .update_item(
                &k,
                &Update::new().remove("score"),
                Expect::Any,
                ReturnValues::None,
            )
            .await?;
        assert!(query_ranges_of(store, &q).await?.is_empty());

        // what DynamoDB refuses
        let mut with_string = key("u", "3");
        with_string.insert("s".into(), s("text"));
        store.put_item(with_string, Expect::Any).await?;
        let bad = [
            Update::new().set("hashKey", s("other")),
            Update::new().set("a", s("1")).remove("a"),
            Update::new().add("a", s("not a number")),
            Update::new().add("s", n(1)),
            Update::new().increment("nothing", n(1)),
            Update::new().increment("s", n(1)),
            Update::new().delete("a", s("x")),
            Update::new().append("s", AttributeValue::L(vec![n(1)])),
            Update::new()
                .set("group", s("g"))
                .set("score", s("not a number")),
        ];
        for update in bad {
            let e = store
                .update_item(&key("u", "3"), &update, Expect::Any, ReturnValues::None)
                .await
                .err()
                .ok_or(format!("{update:?} succeeded"))?;
            assert!(e.is_validation(), "{update:?}: {e:?}");
        }
        assert_eq!(
            store.get_item(&key("u", "3"), None).await?.map(|i| i.len()),
            Some(3),
            "a refused update changed nothing"
        );
        Ok(())
    }

    async fn query_ranges_of<S: Store>(
        store: &S,
        q: &QueryPage,
    ) -> Result<Vec<String>, Box<dyn std::error::Error>> {
        let pages = all_pages(store, q).await?;
        Ok(pages
            .iter()
            .flat_map(|p| p.items.iter().map(|i| text(i, "rangeKey")))
            .collect())
    }

    #[allow(clippy::too_many_lines)] // two tables of cases
    pub(crate) async fn conditions_on_attributes<S: Store>(store: &S) -> TestResult {
        let it = item(
            json!({ "hashKey": "c", "rangeKey": "1", "v": 3, "name": "ann", "tags": ["a", "b"] }),
        )?;
        store.put_item(it.clone(), Expect::Any).await?;
        let holds = [
            Filter::eq("v", n(3)),
            Filter::compare("v", Comparison::Lt, n(4)),
            Filter::BeginsWith {
                attribute: "name".into(),
                prefix: s("an"),
            },
            Filter::Between {
                attribute: "v".into(),
                low: n(1),
                high: n(3),
            },
            Filter::Size {
                attribute: "name".into(),
                op: Comparison::Eq,
                size: 3,
            },
            Filter::Size {
                attribute: "tags".into(),
                op: Comparison::Ge,
                size: 2,
            },
            Filter::Type {
                attribute: "tags".into(),
                of: AttributeType::L,
            },
            Filter::Or(vec![Filter::eq("v", n(9)), Filter::Exists("name".into())]),
            Filter::Not(Box::new(Filter::Exists("nope".into()))),
            Filter::eq("hashKey", s("c")),
        ];
        for (i, condition) in holds.into_iter().enumerate() {
            store
                .update_item(
                    &key("c", "1"),
                    &Update::new().set("seen", n(i)),
                    Expect::Matches(condition.clone()),
                    ReturnValues::None,
                )
                .await
                .map_err(|e| format!("{condition:?}: {e:?}"))?;
        }
        let fails = [
            Filter::eq("v", n(4)),
            Filter::Size {
                attribute: "name".into(),
                op: Comparison::Gt,
                size: 3,
            },
            Filter::Type {
                attribute: "v".into(),
                of: AttributeType::S,
            },
            Filter::And(vec![
                Filter::eq("v", n(3)),
                Filter::NotExists("name".into()),
            ]),
        ];
        for condition in fails {
            let e = store
                .put_item(it.clone(), Expect::Matches(condition.clone()))
                .await
                .err()
                .ok_or(format!("{condition:?} held"))?;
            assert!(e.is_conditional_check_failed(), "{condition:?}: {e:?}");
            // the failure carries the current item
            let current = e.current_item().ok_or("no current item")?;
            assert_eq!(get(current, "v"), Some(n(3)), "{condition:?}");
            let e = store
                .delete_item(&key("c", "1"), Expect::Matches(condition.clone()))
                .await
                .err()
                .ok_or(format!("{condition:?} held on delete"))?;
            assert!(e.current_item().is_some(), "{e:?}");
        }
        // on a missing item a condition sees no attributes
        let e = store
            .update_item(
                &key("c", "2"),
                &Update::new().set("a", n(1)),
                Expect::Matches(Filter::eq("v", n(3))),
                ReturnValues::None,
            )
            .await
            .err()
            .ok_or("condition held on a missing item")?;
        assert!(
            e.is_conditional_check_failed() && e.current_item().is_none(),
            "{e:?}"
        );
        store
            .put_item(
                key("c", "2"),
                Expect::Matches(Filter::NotExists("v".into())),
            )
            .await?;
        // a bad condition is a validation error
        let e = store
            .put_item(it, Expect::Matches(Filter::And(vec![])))
            .await
            .err()
            .ok_or("empty AND accepted")?;
        assert!(e.is_validation(), "{e:?}");
        Ok(())
    }

    /// A key condition's sort key values are sort keys: each is at most 1,024 bytes (UTF-8
    /// bytes of a string), whatever the operator, on the table and on a GSI; two values of
    /// `BETWEEN` count apart. Both stores refuse 1,025 with the same validation error.
    pub(crate) async fn key_condition_sort_values_at_the_limit<S: Store>(store: &S) -> TestResult {
        let conditions = |v: AttributeValue| {
            [
                RangeCondition::Eq(v.clone()),
                RangeCondition::Lt(v.clone()),
                RangeCondition::Ge(v.clone()),
                RangeCondition::Between(s("a"), v.clone()),
                RangeCondition::BeginsWith(v),
            ]
        };
        for (value, ok) in [
            (s(&"r".repeat(1_024)), true),
            (s(&"r".repeat(1_025)), false),
            (s(&"é".repeat(512)), true),
            (s(&format!("{}r", "é".repeat(512))), false),
        ] {
            for condition in conditions(value.clone()) {
                for query in [
                    QueryPage::new(s("h")).range(condition.clone()),
                    QueryPage::new(s("g"))
                        .index("byName")
                        .range(condition.clone()),
                ] {
                    let verdict = store.query_page(&query).await;
                    assert_eq!(verdict.is_ok(), ok, "{query:?}: {verdict:?}");
                    if let Err(e) = verdict {
                        assert!(e.is_validation(), "{e:?}");
                        assert!(e.to_string().contains("1024 bytes"), "{e}");
                    }
                }
            }
        }
        // two values of 600 bytes: each within the limit
        let both = QueryPage::new(s("h")).range(RangeCondition::Between(
            s(&"a".repeat(600)),
            s(&"b".repeat(600)),
        ));
        store.query_page(&both).await?;
        Ok(())
    }

    /// Key and item sizes at the limits: both stores give the same verdict at 2,047/2,048/2,049
    /// and 1,023/1,024/1,025 bytes, for table keys and GSI keys, and at 400 KB.
    pub(crate) async fn size_limits<S: Store>(store: &S) -> TestResult {
        for (len, ok) in [(2_047, true), (2_048, true), (2_049, false)] {
            let hash = "h".repeat(len);
            let verdict = store.put_item(key(&hash, "r"), Expect::Any).await;
            assert_eq!(
                verdict.is_ok(),
                ok,
                "table hash key of {len} bytes: {verdict:?}"
            );
            if let Err(e) = verdict {
                assert!(e.is_validation(), "{e:?}");
            }
            let mut it = key("h", "r");
            it.insert("group".into(), s(&hash));
            it.insert("score".into(), n(1));
            let verdict = store.put_item(it, Expect::Any).await;
            assert_eq!(
                verdict.is_ok(),
                ok,
                "GSI hash key of {len} bytes: {verdict:?}"
            );
            // multi-byte characters count their UTF-8 bytes
            let wide = "é".repeat(len / 2) + if len % 2 == 1 { "h" } else { "" };
            let verdict = store.put_item(key(&wide, "r"), Expect::Any).await;
            assert_eq!(
                verdict.is_ok(),
                ok,
                "{len}-byte hash key of 2-byte characters"
            );
        }
        for (len, ok) in [(1_023, true), (1_024, true), (1_025, false)] {
            let range = "r".repeat(len);
            let verdict = store.put_item(key("h", &range), Expect::Any).await;
            assert_eq!(
                verdict.is_ok(),
                ok,
                "table range key of {len} bytes: {verdict:?}"
            );
            let mut it = key("h", "r");
            it.insert("group".into(), s("g"));
            it.insert("name".into(), s(&range));
            let verdict = store.put_item(it.clone(), Expect::Any).await;
            assert_eq!(
                verdict.is_ok(),
                ok,
                "GSI range key of {len} bytes: {verdict:?}"
            );
            // the same through an update
            let verdict = store
                .update_item(
                    &key("h", "r"),
                    &Update::new().set("group", s("g")).set("name", s(&range)),
                    Expect::Any,
                    ReturnValues::None,
                )
                .await;
            assert_eq!(
                verdict.is_ok(),
                ok,
                "GSI range key of {len} bytes by update"
            );
        }
        // items: names and values count; 409,600 bytes is the most
        for (total, ok) in [(409_599, true), (409_600, true), (409_601, false)] {
            let mut it = key("a", "x"); // 7 + 1 + 8 + 1 bytes
            it.insert("d".into(), s(&"z".repeat(total - 17 - 1)));
            let verdict = store.put_item(it, Expect::Any).await;
            assert_eq!(verdict.is_ok(), ok, "item of {total} bytes: {verdict:?}");
        }
        let mut numbers = key("a", "y");
        numbers.insert("n".into(), n("-12345.678")); // 1 + 7 bytes
        numbers.insert("d".into(), s(&"z".repeat(409_600 - 17 - 8 - 1)));
        store.put_item(numbers.clone(), Expect::Any).await?;
        numbers.insert("n".into(), n("-1234567.891")); // one more pair of digits
        assert!(store.put_item(numbers, Expect::Any).await.is_err());
        Ok(())
    }

    pub(crate) async fn transactional_updates_and_reads<S: Store>(store: &S) -> TestResult {
        store
            .put_item(
                item(json!({ "hashKey": "t", "rangeKey": "1", "n": 1 }))?,
                Expect::Any,
            )
            .await?;
        store
            .transact_write(vec![
                TransactWrite::Update {
                    key: key("t", "1"),
                    update: Update::new().add("n", n(1)),
                    expect: Expect::Matches(Filter::eq("n", n(1))),
                },
                TransactWrite::Put {
                    item: key("t", "2"),
                    expect: Expect::Absent,
                },
            ])
            .await?;
        let read = store
            .transact_get(vec![key("t", "1"), key("t", "3"), key("t", "2")])
            .await?;
        assert_eq!(read.len(), 3);
        assert_eq!(read[0].as_ref().and_then(|i| get(i, "n")), Some(n(2)));
        assert_eq!(read[1], None);
        assert_eq!(read[2], Some(key("t", "2")));
        // a failed condition cancels everything and names the current item
        let e = store
            .transact_write(vec![
                TransactWrite::Update {
                    key: key("t", "1"),
                    update: Update::new().add("n", n(1)),
                    expect: Expect::Matches(Filter::eq("n", n(1))),
                },
                TransactWrite::Delete {
                    key: key("t", "2"),
                    expect: Expect::Any,
                },
            ])
            .await
            .err()
            .ok_or("stale transaction committed")?;
        assert!(e.is_transaction_canceled(), "{e:?}");
        let reasons = e.cancellation_reasons();
        assert!(reasons[0].is_conditional_check_failed(), "{reasons:?}");
        assert_eq!(
            reasons[0].item.as_ref().and_then(|i| get(i, "n")),
            Some(n(2))
        );
        assert_eq!(reasons[1].code, None);
        assert!(store.get_item(&key("t", "2"), None).await?.is_some());
        // the same item twice is refused
        let e = store
            .transact_get(vec![key("t", "1"), key("t", "1")])
            .await
            .err()
            .ok_or("duplicate keys read")?;
        assert!(e.is_validation(), "{e:?}");
        Ok(())
    }
}

/// `DynamoDB`'s expression limits, on both stores alike: every expression of a request is at
/// most 4,096 bytes and 300 operators and functions, and its substitution variables at most
/// 2 MB. The expected sizes are computed here from the wire form of the expressions
/// (`#n0, #n1…` for names in order of first use, `:v0, :v1…` for values in order of use).
mod suite3 {
    use super::*;
    use entity_manager::limits::{ExpressionKind, ExpressionLimit};
    use entity_manager::limits::{MAX_EXPRESSION_BYTES, MAX_EXPRESSION_OPERATORS};
    use entity_manager::store::{ScanPage, StoreError};

    /// `SET #n0 = :v0, #n1 = :v1, …` of `count` attributes.
    pub(crate) fn set_text(count: usize) -> String {
        let parts: Vec<String> = (0..count).map(|i| format!("#n{i} = :v{i}")).collect();
        format!("SET {}", parts.join(", "))
    }

    pub(crate) fn wide_set(count: usize) -> Update {
        (0..count).fold(Update::new(), |u, i| u.set(format!("a{i}"), n(1)))
    }

    /// `(attribute_not_exists(#n0)) AND (attribute_not_exists(#n1)) AND …`, starting at name
    /// placeholder `first`.
    pub(crate) fn absent_text(count: usize, first: usize) -> String {
        let parts: Vec<String> = (first..first + count)
            .map(|i| format!("(attribute_not_exists(#n{i}))"))
            .collect();
        parts.join(" AND ")
    }

    pub(crate) fn all_absent(count: usize) -> Filter {
        Filter::And(
            (0..count)
                .map(|i| Filter::NotExists(format!("b{i}")))
                .collect(),
        )
    }

    /// `#n0, #n1, …`.
    pub(crate) fn projection_text(count: usize) -> String {
        let parts: Vec<String> = (0..count).map(|i| format!("#n{i}")).collect();
        parts.join(", ")
    }

    /// The largest count whose text is at most `MAX_EXPRESSION_BYTES`.
    pub(crate) fn widest(text: impl Fn(usize) -> String) -> usize {
        (1..10_000)
            .take_while(|&c| text(c).len() <= MAX_EXPRESSION_BYTES)
            .last()
            .unwrap_or(0)
    }

    fn refusal<T: std::fmt::Debug>(
        result: Result<T, StoreError>,
    ) -> Result<(ExpressionKind, ExpressionLimit, usize), String> {
        match result {
            Err(e) => match e.expression_too_large() {
                Some(d) if e.is_validation() => Ok((d.expression, d.limit, d.size)),
                _ => Err(format!("not an expression refusal: {e:?}")),
            },
            Ok(v) => Err(format!("accepted: {v:?}")),
        }
    }

    #[allow(clippy::too_many_lines)] // one block per expression
    pub(crate) async fn expression_limits<S: Store>(store: &S) -> TestResult {
        let k = key("x", "1");
        let mut it = k.clone();
        it.insert("a0".into(), n(1));
        store.put_item(it.clone(), Expect::Any).await?;

        // UpdateExpression: the widest update that fits passes; one attribute more is refused,
        // and nothing of it is written
        let fit = widest(set_text);
        assert!(fit > 100, "{fit}");
        store
            .update_item(&k, &wide_set(fit), Expect::Present, ReturnValues::None)
            .await?;
        let over = store
            .update_item(&k, &wide_set(fit + 1), Expect::Present, ReturnValues::None)
            .await;
        assert_eq!(
            refusal(over)?,
            (
                ExpressionKind::Update,
                ExpressionLimit::Length,
                set_text(fit + 1).len()
            )
        );
        let stored = store.get_item(&k, None).await?.ok_or("x/1 missing")?;
        assert!(stored.contains_key(&format!("a{}", fit - 1)));
        assert!(!stored.contains_key(&format!("a{fit}")));
        // the same inside a transaction
        let over = store
            .transact_write(vec![TransactWrite::Update {
                key: k.clone(),
                update: wide_set(fit + 1),
                expect: Expect::Any,
            }])
            .await;
        assert_eq!(refusal(over)?.0, ExpressionKind::Update);

        // ConditionExpression: 300 operators pass, 301 are refused
        let below = |count: usize| {
            (0..count)
                .map(|_| Filter::compare("a0", Comparison::Lt, n(0)))
                .collect::<Vec<_>>()
        };
        // NOT, 150 comparisons, 149 ANDs: true, since a0 = 1
        let at_limit = Filter::Not(Box::new(Filter::And(below(150))));
        store
            .put_item(it.clone(), Expect::Matches(at_limit.clone()))
            .await?;
        store
            .delete_item(
                &key("nobody", "1"),
                Expect::Matches(Filter::Not(Box::new(Filter::And(below(150))))),
            )
            .await?;
        let over = Filter::Not(Box::new(Filter::Not(Box::new(Filter::And(below(150))))));
        assert_eq!(
            refusal(
                store
                    .put_item(it.clone(), Expect::Matches(over.clone()))
                    .await
            )?,
            (
                ExpressionKind::Condition,
                ExpressionLimit::Operators,
                MAX_EXPRESSION_OPERATORS + 1
            )
        );
        assert_eq!(
            refusal(store.delete_item(&k, Expect::Matches(over)).await)?.1,
            ExpressionLimit::Operators
        );

        // ConditionExpression length: the widest fits (under 300 operators), one more is refused
        let fit = widest(|c| absent_text(c, 0));
        assert!(2 * fit - 1 < MAX_EXPRESSION_OPERATORS, "{fit}");
        store
            .put_item(it.clone(), Expect::Matches(all_absent(fit)))
            .await?;
        assert_eq!(
            refusal(
                store
                    .put_item(it.clone(), Expect::Matches(all_absent(fit + 1)))
                    .await
            )?,
            (
                ExpressionKind::Condition,
                ExpressionLimit::Length,
                absent_text(fit + 1, 0).len()
            )
        );
        // an update's condition: names after the update's own (#n0 is `a0`)
        let update = Update::new().set("a0", n(2));
        let fit = widest(|c| absent_text(c, 1));
        store
            .update_item(
                &k,
                &update,
                Expect::Matches(all_absent(fit)),
                ReturnValues::None,
            )
            .await?;
        assert_eq!(
            refusal(
                store
                    .update_item(
                        &k,
                        &update,
                        Expect::Matches(all_absent(fit + 1)),
                        ReturnValues::None
                    )
                    .await
            )?,
            (
                ExpressionKind::Condition,
                ExpressionLimit::Length,
                absent_text(fit + 1, 1).len()
            )
        );

        // FilterExpression of a scan (no other names) and of a query (after the key names)
        let fit = widest(|c| absent_text(c, 0));
        let scan = |c| ScanPage::new().filter(all_absent(c));
        assert_eq!(store.scan_page(&scan(fit)).await?.items.len(), 1);
        assert_eq!(
            refusal(store.scan_page(&scan(fit + 1)).await)?,
            (
                ExpressionKind::Filter,
                ExpressionLimit::Length,
                absent_text(fit + 1, 0).len()
            )
        );
        let fit = widest(|c| absent_text(c, 1));
        let query = |c| QueryPage::new(s("x")).filter(all_absent(c));
        assert_eq!(store.query_page(&query(fit)).await?.items.len(), 1);
        assert_eq!(
            refusal(store.query_page(&query(fit + 1)).await)?,
            (
                ExpressionKind::Filter,
                ExpressionLimit::Length,
                absent_text(fit + 1, 1).len()
            )
        );

        // ProjectionExpression
        let fit = widest(projection_text);
        let names = |c: usize| (0..c).map(|i| format!("a{i}")).collect::<Vec<_>>();
        assert!(store.get_item(&k, Some(&names(fit))).await?.is_some());
        assert_eq!(
            refusal(store.get_item(&k, Some(&names(fit + 1))).await)?,
            (
                ExpressionKind::Projection,
                ExpressionLimit::Length,
                projection_text(fit + 1).len()
            )
        );

        // substitution variables: 300 KB of values pass, over 2 MB are refused
        let values = |count: usize, bytes: usize| Filter::In {
            attribute: "a0".into(),
            values: (0..count)
                .map(|i| s(&format!("{i}{}", "z".repeat(bytes))))
                .collect(),
        };
        let page = store
            .scan_page(&ScanPage::new().filter(values(3, 100_000)))
            .await?;
        assert!(page.items.is_empty());
        let (kind, limit, size) = refusal(
            store
                .scan_page(&ScanPage::new().filter(values(3, 700_000)))
                .await,
        )?;
        assert_eq!(
            (kind, limit),
            (
                ExpressionKind::Substitutions,
                ExpressionLimit::SubstitutionBytes
            )
        );
        // `#n0` + `a0`, then `:vi` and a value of 700,001 bytes, three times
        assert_eq!(size, 3 + 2 + 3 * (3 + 700_001));
        Ok(())
    }
}

macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        /// The suite on the in-memory store.
        mod memory {
            use super::*;
            $(
                #[tokio::test]
                async fn $name() -> TestResult {
                    let store = MemoryStore::new(definition());
                    suite::$name(&store).await
                }
            )*
        }

        /// The suite on `DynamoDB` Local.
        mod dynamodb {
            use super::*;
            $(
                #[tokio::test]
                async fn $name() -> TestResult {
                    let Some(store) = store_support::dynamo_store(stringify!($name), definition()).await? else {
                        return Ok(());
                    };
                    let result = suite::$name(&store).await;
                    store.delete_table().await?;
                    result
                }
            )*
        }
    };
}

conformance!(
    put_get_delete,
    conditional_writes,
    validation_errors,
    numbers_sort_numerically_and_read_back_canonically,
    strings_sort_by_bytes,
    range_conditions,
    limit_counts_before_the_filter,
    trailing_empty_page_when_the_limit_lands_on_the_end,
    last_evaluated_key_holds_table_and_index_keys,
    sparse_indexes,
    projections,
    filters,
    batch_write_and_get,
    transactions,
    concurrent_writes_and_queries,
    updates,
    conditions_on_attributes,
    size_limits,
    key_condition_sort_values_at_the_limit,
    transactional_updates_and_reads,
    expression_limits,
);

/// `DynamoDB`'s 1 MB pages, on a table of items of about 100 KB: a query or scan page ends
/// after the item that brings the data read to 1,048,576 bytes or past it, with a page key only
/// when more items follow. The expected pages are computed here from the item sizes (attribute
/// names plus string values), independently of the stores.
mod one_megabyte_pages {
    use super::*;
    use entity_manager::model::Projection;
    use entity_manager::store::{GlobalIndex, KeyType, ScanPage, TableDefinition};

    const MB: usize = 1_048_576;
    const ITEMS: usize = 60;

    fn definition() -> TableDefinition {
        TableDefinition::new(("hashKey", KeyType::S), ("rangeKey", KeyType::S))
            .with_index(GlobalIndex::new(
                "byGroup",
                ("group", KeyType::S),
                ("name", KeyType::S),
            ))
            .with_index(
                GlobalIndex::new("keysOnly", ("group", KeyType::S), ("name", KeyType::S))
                    .projection(Projection::KeysOnly),
            )
    }

    /// The size of item `i` as `DynamoDB` counts it: about 100 KB, varying.
    fn size(i: usize) -> usize {
        100_000 + (i * 7_919) % 9_000
    }

    fn record(i: usize) -> Result<Item, Box<dyn std::error::Error>> {
        // every attribute is a string: size = name lengths + value lengths
        let fixed = "hashKey".len() + 3 + "rangeKey".len() + 3 + "group".len() + 5;
        let fixed = fixed + "name".len() + 3 + "blob".len();
        item(json!({
            "hashKey": "big", "rangeKey": format!("r{i:02}"), "group": "big-g",
            "name": format!("n{i:02}"), "blob": "x".repeat(size(i) - fixed),
        }))
    }

    /// The pages a reader of items in `order` (item numbers) gets: each ends at the item that
    /// brings its data to 1 MB or past it (or at `limit` items first).
    fn expected(order: &[usize], limit: Option<usize>) -> Vec<Vec<String>> {
        let mut pages = vec![Vec::new()];
        let mut bytes = 0;
        for (at, &i) in order.iter().enumerate() {
            let page = pages.last_mut().map_or(0, |p: &mut Vec<String>| {
                p.push(format!("r{i:02}"));
                p.len()
            });
            bytes += size(i);
            let full = bytes >= MB || limit == Some(page);
            if full && (at + 1 < order.len() || limit == Some(page)) {
                pages.push(Vec::new());
                bytes = 0;
            }
        }
        pages
    }

    fn shape(pages: &[entity_manager::store::Page]) -> Vec<Vec<String>> {
        pages
            .iter()
            .map(|p| p.items.iter().map(|i| text(i, "rangeKey")).collect())
            .collect()
    }

    /// Every page but the last has a page key.
    fn keyed(pages: &[entity_manager::store::Page]) -> bool {
        let last = pages.len().saturating_sub(1);
        pages
            .iter()
            .enumerate()
            .all(|(at, p)| p.last_evaluated_key.is_some() == (at < last))
    }

    async fn scan_pages<S: Store>(
        store: &S,
    ) -> Result<Vec<entity_manager::store::Page>, Box<dyn std::error::Error>> {
        let mut pages = Vec::new();
        let mut request = ScanPage::new();
        loop {
            let page = store.scan_page(&request).await?;
            let next = page.last_evaluated_key.clone();
            pages.push(page);
            match next {
                Some(k) => request = request.start_after(Some(k)),
                None => return Ok(pages),
            }
        }
    }

    /// What both stores agree on.
    async fn suite<S: Store>(store: &S) -> TestResult {
        for i in 0..ITEMS {
            store.put_item(record(i)?, Expect::Any).await?;
        }
        let ascending: Vec<usize> = (0..ITEMS).collect();
        let descending: Vec<usize> = (0..ITEMS).rev().collect();
        let want = expected(&ascending, None);
        assert!(
            want.len() > 3,
            "the items must span several pages: {want:?}"
        );

        let pages = all_pages(store, &QueryPage::new(s("big"))).await?;
        assert_eq!(shape(&pages), want, "table query");
        assert!(keyed(&pages));
        let pages = all_pages(store, &QueryPage::new(s("big")).descending(true)).await?;
        assert_eq!(shape(&pages), expected(&descending, None), "descending");
        assert!(keyed(&pages));
        // an index that projects everything: its entries are the items' size
        let pages = all_pages(store, &QueryPage::new(s("big-g")).index("byGroup")).await?;
        assert_eq!(shape(&pages), want, "GSI query");
        assert!(keyed(&pages));
        let pages = scan_pages(store).await?;
        assert_eq!(shape(&pages), want, "scan");
        assert!(keyed(&pages));
        // a cut on the last item of the range: no page key (nothing follows)
        let first = want.first().ok_or("no page")?;
        let (Some(low), Some(high)) = (first.first(), first.last()) else {
            return Err("an empty first page".into());
        };
        let range = RangeCondition::Between(s(low), s(high));
        let pages = all_pages(store, &QueryPage::new(s("big")).range(range)).await?;
        assert_eq!(shape(&pages), vec![first.clone()], "a cut on the last item");
        assert!(pages[0].last_evaluated_key.is_none());
        // a limit below the cut ends the page first; above it, the cut does
        for limit in [5, 20] {
            let pages = all_pages(store, &QueryPage::new(s("big")).limit(limit)).await?;
            let limit = usize::try_from(limit)?;
            let want = expected(&ascending, Some(limit));
            assert_eq!(shape(&pages), want, "limit {limit}");
        }
        Ok(())
    }

    #[tokio::test]
    async fn memory() -> TestResult {
        suite(&MemoryStore::new(definition())).await
    }

    /// Where `DynamoDB` Local departs from `DynamoDB` (it cuts a query after its filter, and
    /// a `KEYS_ONLY` index by the size of the whole items), the memory store follows `DynamoDB`'s
    /// documented rule: the cut counts the data read, before the filter, and an index's data is
    /// its entries.
    #[tokio::test]
    async fn memory_cuts_before_the_filter_and_counts_index_entries() -> TestResult {
        let store = MemoryStore::new(definition());
        for i in 0..ITEMS {
            store.put_item(record(i)?, Expect::Any).await?;
        }
        let ascending: Vec<usize> = (0..ITEMS).collect();
        let filtered = QueryPage::new(s("big")).filter(Filter::eq("name", s("none")));
        let pages = all_pages(&store, &filtered).await?;
        let empty: Vec<Vec<String>> = expected(&ascending, None)
            .iter()
            .map(|_| Vec::new())
            .collect();
        assert_eq!(
            shape(&pages),
            empty,
            "a filter that keeps nothing still pages at 1 MB"
        );
        assert!(keyed(&pages));
        let pages = all_pages(&store, &QueryPage::new(s("big-g")).index("keysOnly")).await?;
        assert_eq!(pages.len(), 1, "60 small index entries fit one page");
        assert_eq!(pages[0].items.len(), ITEMS);
        Ok(())
    }

    #[tokio::test]
    async fn dynamodb() -> TestResult {
        let Some(store) = store_support::dynamo_store("one_megabyte", definition()).await? else {
            return Ok(());
        };
        let result = suite(&store).await;
        store.delete_table().await?;
        result
    }
}

/// Local secondary indexes, on a table of their own: the table's hash key with another range
/// key, sparse, ordered by that key; a `KEYS_ONLY` or `INCLUDE` LSI returns what it projects, and
/// (unlike a GSI) reads attributes it does not project from the table for a projection, though
/// not for a filter.
mod local_indexes {
    use super::*;
    use entity_manager::model::Projection;
    use entity_manager::store::{KeyType, LocalIndex, TableDefinition};

    fn definition() -> TableDefinition {
        store_support::definition()
            .with_local_index(
                LocalIndex::new("byKind", ("hashKey", KeyType::S), ("kind", KeyType::S))
                    .projection(Projection::KeysOnly),
            )
            .with_local_index(
                LocalIndex::new(
                    "byScoreHere",
                    ("hashKey", KeyType::S),
                    ("score", KeyType::N),
                )
                .projection(Projection::Include(vec!["name".into()].into())),
            )
    }

    fn names(item: &Item) -> Vec<&str> {
        let mut names: Vec<&str> = item.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    async fn suite<S: Store>(store: &S) -> TestResult {
        // ranges r0..r9 with `kind` even/odd except on r7, `score` i, `name`, `created` 1000 + i
        let mut written = Vec::new();
        for i in 0..10 {
            let mut it = item(json!({
                "hashKey": "p", "rangeKey": format!("r{i}"), "score": i,
                "name": format!("name{}", 9 - i), "created": 1000 + i,
                "kind": if i % 2 == 0 { "even" } else { "odd" },
            }))?;
            if i == 7 {
                it.remove("kind");
            }
            store.put_item(it.clone(), Expect::Any).await?;
            written.push(it);
        }
        // sparse and ordered by the LSI's range key; KEYS_ONLY: the table keys and `kind`
        let by_kind = all_pages(store, &QueryPage::new(s("p")).index("byKind").limit(4)).await?;
        let items: Vec<&Item> = by_kind.iter().flat_map(|p| &p.items).collect();
        let kinds: Vec<String> = items.iter().map(|i| text(i, "kind")).collect();
        let mut sorted = kinds.clone();
        sorted.sort();
        assert_eq!(kinds, sorted);
        let mut ranges: Vec<String> = items.iter().map(|i| text(i, "rangeKey")).collect();
        ranges.sort();
        let mut want: Vec<String> = written
            .iter()
            .filter(|i| i.contains_key("kind"))
            .map(|i| text(i, "rangeKey"))
            .collect();
        want.sort();
        assert_eq!(ranges, want);
        for it in &items {
            assert_eq!(names(it), ["hashKey", "kind", "rangeKey"]);
        }
        // attributes it does not project are read from the table
        let fetched = store
            .query_page(
                &QueryPage::new(s("p"))
                    .index("byKind")
                    .range(RangeCondition::Eq(s("odd")))
                    .projection(["rangeKey", "created"]),
            )
            .await?;
        let mut created: Vec<AttributeValue> = fetched
            .items
            .iter()
            .filter_map(|i| i.get("created").cloned())
            .collect();
        created.sort_by_key(|v| match v {
            AttributeValue::N(n) => n.clone(),
            _ => String::new(),
        });
        assert_eq!(created, vec![n(1001), n(1003), n(1005), n(1009)]);
        // a filter sees only what the LSI projects
        let e = store
            .query_page(
                &QueryPage::new(s("p"))
                    .index("byKind")
                    .filter(Filter::compare("created", Comparison::Ge, n(1006))),
            )
            .await
            .err()
            .ok_or("a filter on an attribute the LSI does not project")?;
        assert!(e.is_validation(), "{e:?}");
        // INCLUDE: keys, the LSI's range key and `name`, in score order
        let scores = store
            .query_page(
                &QueryPage::new(s("p"))
                    .index("byScoreHere")
                    .range(RangeCondition::Between(n(3), n(6))),
            )
            .await?;
        let ranges: Vec<String> = scores.items.iter().map(|i| text(i, "rangeKey")).collect();
        assert_eq!(ranges, ["r3", "r4", "r5", "r6"]);
        for it in &scores.items {
            assert_eq!(names(it), ["hashKey", "name", "rangeKey", "score"]);
        }
        // the LSI's range key is a sort key: the wrong type is refused on write
        let wrong = item(json!({ "hashKey": "p", "rangeKey": "bad", "kind": 5 }))?;
        let e = store
            .put_item(wrong, Expect::Any)
            .await
            .err()
            .ok_or("a number stored as an S LSI key")?;
        assert!(e.is_validation(), "{e:?}");
        Ok(())
    }

    #[tokio::test]
    async fn memory() -> TestResult {
        suite(&MemoryStore::new(definition())).await
    }

    #[tokio::test]
    async fn dynamodb() -> TestResult {
        let Some(store) = store_support::dynamo_store("local_indexes", definition()).await? else {
            return Ok(());
        };
        let result = suite(&store).await;
        store.delete_table().await?;
        result
    }
}

/// Multi-attribute GSI keys (2 partition + 2 sort attributes) on both stores: key-condition
/// validation, tuple order (numbers numerically, strings by bytes, left to right), equality
/// prefix then one condition, sparse membership, page keys. The oracle property tests are in
/// `multi_attribute.rs`.
mod multi_attribute {
    use entity_manager::store::{GlobalIndex, KeyType, TableDefinition};

    use super::*;

    /// A table with one multi-attribute GSI: partition (`a` S, `b` N), sort (`c` S, `d` N).
    fn definition() -> TableDefinition {
        TableDefinition::new(("hashKey", KeyType::S), ("rangeKey", KeyType::S)).with_index(
            GlobalIndex::new("abcd", ("a", KeyType::S), ("c", KeyType::S))
                .with_hash_key(("b", KeyType::N))
                .with_range_key(("d", KeyType::N)),
        )
    }

    /// The conformance cases of multi-attribute keys, on both stores.
    mod conformance {
        use super::*;

        /// Validation: the key condition must give every partition attribute, and no more sort
        /// conditions than sort attributes; values of the wrong type; an item with a key attribute
        /// of the wrong type is refused.
        pub(super) async fn validation<S: Store>(store: &S) -> TestResult {
            let one = QueryPage::new(s("x")).index("abcd");
            let e = store
                .query_page(&one)
                .await
                .err()
                .ok_or("one of two values")?;
            assert!(e.is_validation(), "{e:?}");
            let three = one.clone().and_hash_key(n(1)).and_hash_key(n(2));
            let e = store.query_page(&three).await.err().ok_or("three values")?;
            assert!(e.is_validation(), "{e:?}");
            let too_many = one
                .clone()
                .and_hash_key(n(1))
                .range_prefix([s("c"), n(1)])
                .range(RangeCondition::Eq(n(1)));
            let e = store
                .query_page(&too_many)
                .await
                .err()
                .ok_or("three sort conditions")?;
            assert!(e.is_validation(), "{e:?}");
            let mistyped = one.clone().and_hash_key(s("1"));
            let e = store
                .query_page(&mistyped)
                .await
                .err()
                .ok_or("b is a number")?;
            assert!(e.is_validation(), "{e:?}");
            let bad =
                item(json!({ "hashKey": "h", "rangeKey": "r", "a": "x", "b": "not a number" }))?;
            let e = store
                .put_item(bad, Expect::Any)
                .await
                .err()
                .ok_or("b is a number")?;
            assert!(e.is_validation(), "{e:?}");
            // each sort value of the condition at most 1,024 bytes, the equality prefix too;
            // a prefix and a condition of 1,000 bytes each are within it
            let two = one.clone().and_hash_key(n(1));
            for (query, ok) in [
                (two.clone().range_prefix([s(&"c".repeat(1_025))]), false),
                (
                    two.clone().range(RangeCondition::Ge(s(&"c".repeat(1_025)))),
                    false,
                ),
                (
                    two.clone().range(RangeCondition::Ge(s(&"c".repeat(1_024)))),
                    true,
                ),
                (
                    two.clone()
                        .range_prefix([s(&"c".repeat(1_000))])
                        .range(RangeCondition::Ge(n(1))),
                    true,
                ),
            ] {
                let verdict = store.query_page(&query).await;
                assert_eq!(verdict.is_ok(), ok, "{verdict:?}");
                if let Err(e) = verdict {
                    assert!(e.is_validation(), "{e:?}");
                }
            }
            Ok(())
        }

        /// Numbers order numerically inside the tuple, strings by bytes, the first attribute first;
        /// `begins_with` on the first sort attribute, a range on the second after an equality.
        pub(super) async fn tuple_order<S: Store>(store: &S) -> TestResult {
            let rows = [("c9", -1), ("c10", 5), ("c9", 10), ("c9", 2), ("c1", 3)];
            for (i, (c, d)) in rows.iter().enumerate() {
                store
                    .put_item(
                        item(json!({ "hashKey": "h", "rangeKey": format!("r{i}"), "a": "x", "b": 7, "c": c, "d": d }))?,
                        Expect::Any,
                    )
                    .await?;
            }
            // an item of another partition, and one lacking `d` (not in the index)
            store
                .put_item(
                    item(json!({ "hashKey": "h", "rangeKey": "other", "a": "x", "b": 8, "c": "c9", "d": 1 }))?,
                    Expect::Any,
                )
                .await?;
            store
                .put_item(
                    item(json!({ "hashKey": "h", "rangeKey": "sparse", "a": "x", "b": 7, "c": "c9" }))?,
                    Expect::Any,
                )
                .await?;
            let q = QueryPage::new(s("x")).index("abcd").and_hash_key(n(7));
            let ids = |pages: Vec<entity_manager::store::Page>| -> Vec<String> {
                pages
                    .iter()
                    .flat_map(|p| p.items.iter().map(|i| text(i, "rangeKey")))
                    .collect()
            };
            assert_eq!(
                ids(all_pages(store, &q.clone().limit(2)).await?),
                ["r4", "r1", "r0", "r3", "r2"]
            );
            let c9 = q.clone().range_prefix([s("c9")]);
            assert_eq!(
                ids(all_pages(store, &c9.clone().range(RangeCondition::Ge(n(2)))).await?),
                ["r3", "r2"]
            );
            assert_eq!(
                ids(all_pages(store, &c9.clone().descending(true).limit(1)).await?),
                ["r2", "r3", "r0"]
            );
            assert_eq!(
                ids(all_pages(store, &q.clone().range(RangeCondition::BeginsWith(s("c1")))).await?),
                ["r4", "r1"]
            );
            Ok(())
        }
    }

    macro_rules! both_stores {
        ($($name:ident),* $(,)?) => {
            mod memory {
                use super::*;
                $(
                    #[tokio::test]
                    async fn $name() -> TestResult {
                        conformance::$name(&MemoryStore::new(definition())).await
                    }
                )*
            }
            mod dynamodb {
                use super::*;
                $(
                    #[tokio::test]
                    async fn $name() -> TestResult {
                        let Some(store) = store_support::dynamo_store(stringify!($name), definition()).await? else {
                            return Ok(());
                        };
                        let result = conformance::$name(&store).await;
                        store.delete_table().await?;
                        result
                    }
                )*
            }
        };
    }

    both_stores!(validation, tuple_order);
}

/// The memory store from several OS threads at once: no lost writes, consistent reads.
#[test]
fn memory_store_is_safe_across_threads() -> TestResult {
    use entity_manager_tests::block_on;
    let store = MemoryStore::new(definition());
    std::thread::scope(|scope| {
        for t in 0..4 {
            let store = &store;
            scope.spawn(move || {
                for i in 0..250 {
                    let it = key(&format!("th{}", i % 5), &format!("{t}-{i:03}"));
                    if block_on(store.put_item(it, Expect::Absent)).is_err() {
                        return;
                    }
                    let _ = block_on(store.query_page(&QueryPage::new(s("th0")).limit(3)));
                }
            });
        }
    });
    assert_eq!(store.len(), 1000);
    let mut total = 0;
    for h in 0..5 {
        total += block_on(all_pages(
            &store,
            &QueryPage::new(s(&format!("th{h}"))).limit(40),
        ))?
        .iter()
        .map(|p| p.items.len())
        .sum::<usize>();
    }
    assert_eq!(total, 1000);
    Ok(())
}

/// What the stores refuse before sending, `DynamoDB` Local refuses too: the same expressions,
/// sent raw through the SDK, pass at the limits and fail one step over them.
#[tokio::test]
#[allow(clippy::too_many_lines)] // one block per expression
async fn dynamodb_local_enforces_the_expression_limits_the_stores_enforce() -> TestResult {
    use aws_sdk_dynamodb::types::AttributeValue as Aws;
    use entity_manager::store::DynamoStore;
    use std::collections::HashMap;
    use suite3::{absent_text, projection_text, set_text, widest};

    let Some(client) = store_support::dynamo_client() else {
        return Ok(());
    };
    let table = store_support::unique_table("raw_limits");
    let store = DynamoStore::new(client.clone(), &table, definition());
    store.create_table().await?;
    let aws_key: HashMap<String, Aws> = [
        ("hashKey".to_owned(), Aws::S("x".into())),
        ("rangeKey".to_owned(), Aws::S("1".into())),
    ]
    .into();
    let names = |count: usize, first: usize, prefix: &str| -> HashMap<String, String> {
        (0..count)
            .map(|i| (format!("#n{}", first + i), format!("{prefix}{i}")))
            .collect()
    };
    let message = |e: &aws_sdk_dynamodb::error::SdkError<_, _>| {
        use aws_sdk_dynamodb::error::ProvideErrorMetadata;
        let service = e.as_service_error().map(
            |s: &aws_sdk_dynamodb::operation::update_item::UpdateItemError| {
                format!("{:?}: {:?}", s.code(), s.message())
            },
        );
        service.unwrap_or_else(|| format!("{e:?}"))
    };

    // UpdateExpression of 4,096 bytes or fewer passes, one attribute more does not
    let fit = widest(set_text);
    for (count, ok) in [(fit, true), (fit + 1, false)] {
        let values: HashMap<String, Aws> = (0..count)
            .map(|i| (format!(":v{i}"), Aws::N("1".into())))
            .collect();
        let result = client
            .update_item()
            .table_name(&table)
            .set_key(Some(aws_key.clone()))
            .update_expression(set_text(count))
            .set_expression_attribute_names(Some(names(count, 0, "a")))
            .set_expression_attribute_values(Some(values))
            .send()
            .await;
        assert_eq!(result.is_ok(), ok, "update of {count} attributes");
        if let Err(e) = &result {
            let m = message(e);
            assert!(m.contains("Expression size has exceeded"), "{m}");
        }
    }

    // ConditionExpression: 300 operators pass, 301 do not
    let compares: Vec<String> = (0..150).map(|i| format!("(#n0 < :v{i})")).collect();
    let compares = compares.join(" AND ");
    let values: HashMap<String, Aws> = (0..150)
        .map(|i| (format!(":v{i}"), Aws::N("0".into())))
        .collect();
    for (condition, ok) in [
        (format!("NOT ({compares})"), true),
        (format!("NOT (NOT ({compares}))"), false),
    ] {
        let result = client
            .update_item()
            .table_name(&table)
            .set_key(Some(aws_key.clone()))
            .update_expression("SET #n1 = :x")
            .condition_expression(&condition)
            .set_expression_attribute_names(Some(
                [
                    ("#n0".to_owned(), "a0".to_owned()),
                    ("#n1".to_owned(), "c".to_owned()),
                ]
                .into(),
            ))
            .set_expression_attribute_values(Some({
                let mut v = values.clone();
                v.insert(":x".into(), Aws::N("1".into()));
                v
            }))
            .send()
            .await;
        assert_eq!(result.is_ok(), ok, "condition of {condition:.40}…");
        if let Err(e) = &result {
            let m = message(e);
            assert!(m.contains("too many operators"), "{m}");
        }
    }

    // FilterExpression and ProjectionExpression lengths
    let fit = widest(|c| absent_text(c, 0));
    for (count, ok) in [(fit, true), (fit + 1, false)] {
        let result = client
            .scan()
            .table_name(&table)
            .filter_expression(absent_text(count, 0))
            .set_expression_attribute_names(Some(names(count, 0, "b")))
            .send()
            .await;
        assert_eq!(result.is_ok(), ok, "filter of {count} conditions");
    }
    let fit = widest(projection_text);
    for (count, ok) in [(fit, true), (fit + 1, false)] {
        let result = client
            .get_item()
            .table_name(&table)
            .set_key(Some(aws_key.clone()))
            .projection_expression(projection_text(count))
            .set_expression_attribute_names(Some(names(count, 0, "a")))
            .send()
            .await;
        assert_eq!(result.is_ok(), ok, "projection of {count} names");
    }

    // substitution values over 2 MB
    let values: HashMap<String, Aws> = (0..3)
        .map(|i| {
            (
                format!(":v{i}"),
                Aws::S(format!("{i}{}", "z".repeat(700_000))),
            )
        })
        .collect();
    let result = client
        .scan()
        .table_name(&table)
        .filter_expression("#n0 IN (:v0, :v1, :v2)")
        .set_expression_attribute_names(Some([("#n0".to_owned(), "a0".to_owned())].into()))
        .set_expression_attribute_values(Some(values))
        .send()
        .await;
    assert!(result.is_err(), "3 values of 700,001 bytes were accepted");
    store.delete_table().await?;
    Ok(())
}
