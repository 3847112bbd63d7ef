//! Key invariants: generated keys are injective and decode back to their components, every
//! record's hash key lies in the hash-key space of any window holding its timestamp, and no key
//! decoder panics on arbitrary strings.

use std::borrow::Cow;
use std::collections::HashMap;

use entity_manager::__test_support::TsPageKeys as _;
use entity_manager::model::Name;
use entity_manager::model::{
    EntityModel, GeneratedProperty, Index, Projection, Property, ShardBump, ShardHash, ShardSpace,
    TableModel,
};
use entity_manager::shard::{string_hash, suffix};
use entity_manager::transcode;
use entity_manager::{AttributeValue, Error, Item, Schema};
use proptest::prelude::*;

const PROPERTIES: &[Property] = &[
    Property::new("userId", transcode::STRING),
    Property::new("created", transcode::TIMESTAMP),
    Property::new("first", transcode::STRING),
    Property::new("last", transcode::STRING),
    Property::new("score", transcode::INT),
];

const USER_PK: &[Name] = &[Cow::Borrowed("userId")];
const NAME_RK: &[Name] = &[
    Cow::Borrowed("first"),
    Cow::Borrowed("last"),
    Cow::Borrowed("score"),
];
const SCORE_RK: &[Name] = &[Cow::Borrowed("score"), Cow::Borrowed("created")];

const GENERATED: &[GeneratedProperty] = &[
    GeneratedProperty::sharded("userPK", USER_PK),
    GeneratedProperty::unsharded("nameRK", NAME_RK, false),
    GeneratedProperty::unsharded("scoreRK", SCORE_RK, true),
];

const fn index(name: &'static str, hash_key: &'static str, range_key: &'static str) -> Index {
    Index::new(
        name,
        Cow::Borrowed(hash_key),
        Cow::Borrowed(range_key),
        Projection::All,
    )
}

const INDEXES: &[Index] = &[
    index("created", "hashKey", "created"),
    index("name", "hashKey", "nameRK"),
    index("userScore", "userPK", "scoreRK"),
];

fn user(bumps: Vec<ShardBump>) -> EntityModel {
    let mut user = EntityModel::new("user", "userId", "created")
        .with_properties(PROPERTIES)
        .with_generated(GENERATED)
        .with_indexes(INDEXES);
    user.shard_bumps = Cow::Owned(bumps);
    user
}

/// The table of the reference examples (ts-reference): the TypeScript library's shard hash.
fn schema(bumps: Vec<ShardBump>, space: ShardSpace) -> Result<Schema, Error> {
    let table = TableModel::DEFAULT
        .with_shard_space(space)
        .with_shard_hash(ShardHash::StringHash);
    Ok(Schema::new(table, vec![user(bumps)])?)
}

fn default_schema() -> Result<Schema, Error> {
    schema(
        vec![
            ShardBump::new(1_700_000_000_000, 2, 1),
            ShardBump::new(1_710_000_000_000, 2, 2),
        ],
        ShardSpace::Power,
    )
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

#[allow(clippy::needless_pass_by_value)] // numbers read best passed by value
fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn item(pairs: &[(&str, AttributeValue)]) -> Item {
    Item::from(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect::<HashMap<_, _>>(),
    )
}

// ---------------------------------------------------------------------------------------------
// Vectors from ts-reference.md §3.4 (computed by the reference, not by us).

#[test]
fn string_hash_matches_the_reference_vectors() {
    let vectors: &[(&str, u32, u8, u8, &str)] = &[
        ("", 5381, 1, 1, "1"),
        ("a", 177_604, 1, 1, "0"),
        ("hello world", 2_616_892_229, 3, 2, "05"),
        ("alice@example.com", 1_076_863_232, 4, 2, "00"),
        ("01H8XGJWBWBAQ4Z4F2Q2Z5X9KD", 1_162_032_925, 5, 3, "dot"),
        ("日本語", 160_570_738, 2, 3, "302"),
        ("😀x", 193_939_232, 1, 4, "0000"),
        ("abc123", 3_855_951_957, 2, 1, "1"),
        ("1", 177_556, 4, 2, "94"),
        ("abc", 193_415_941, 2, 2, "11"),
        ("user-123", 3_026_334_825, 2, 2, "21"),
    ];
    for &(text, hash, char_bits, chars, expected) in vectors {
        assert_eq!(string_hash(text), hash, "hash of {text:?}");
        let bump = ShardBump::new(0, char_bits, chars);
        assert_eq!(
            suffix(u64::from(hash), bump, ShardSpace::Power),
            expected,
            "suffix of {text:?}"
        );
    }
}

#[test]
fn add_keys_matches_the_reference_worked_example() -> Result<(), Error> {
    // ts-reference §3.4, example 2 (power rule): user-123 created at T1 + 5 under {2, 1}.
    let schema = default_schema()?;
    let user = schema.entity("user")?;
    let keyed = user.add_keys(&item(&[
        ("userId", s("user-123")),
        ("created", n(1_700_000_000_005u64)),
        ("first", s("ann")),
        ("last", s("lee")),
    ]))?;
    assert_eq!(keyed["hashKey"], s("user!1"));
    assert_eq!(keyed["rangeKey"], s("userId#user-123"));
    assert_eq!(keyed["userPK"], s("user!1|userId#user-123"));
    assert_eq!(keyed["nameRK"], s("first#ann|last#lee|score#"));
    // atomic: no score, no scoreRK
    assert!(!keyed.contains_key("scoreRK"));
    // three bumps, three candidate keys without a timestamp (ts-reference §5.5)
    let keys = user.primary_keys(&item(&[("userId", s("user-123"))]))?;
    let hash_keys: Vec<&str> = keys.iter().map(|k| k.hash_key.as_str()).collect();
    assert_eq!(hash_keys, ["user!", "user!1", "user!21"]);
    Ok(())
}

#[test]
fn a_delimiter_inside_a_value_is_a_typed_error_naming_entity_property_and_value()
-> Result<(), Error> {
    let schema = default_schema()?;
    let user = schema.entity("user")?;
    for bad in ["a|b", "a#b", "a!b"] {
        let err = user
            .add_keys(&item(&[
                ("userId", s("u1")),
                ("created", n(1_600_000_000_000u64)),
                ("first", s(bad)),
            ]))
            .err();
        match err {
            Some(Error::DelimiterInValue {
                entity,
                property,
                value,
                ..
            }) => {
                assert_eq!(
                    (entity.as_str(), property.as_str(), value.as_str()),
                    ("user", "first", bad)
                );
            }
            other => panic!("expected DelimiterInValue for {bad:?}, got {other:?}"),
        }
    }
    // in the unique value too, which the range key carries
    assert!(matches!(
        user.add_keys(&item(&[
            ("userId", s("u|1")),
            ("created", n(1_600_000_000_000u64))
        ])),
        Err(Error::DelimiterInValue { .. })
    ));
    Ok(())
}

#[test]
fn out_of_range_component_values_are_transcode_errors() -> Result<(), Error> {
    let schema = default_schema()?;
    let user = schema.entity("user")?;
    let result = user.add_keys(&item(&[
        ("userId", s("u1")),
        ("created", n(1_600_000_000_000u64)),
        ("score", n("12345678901234567")),
    ]));
    assert!(matches!(
        result,
        Err(Error::Transcode { ref property, ref source, .. }) if property == "score" && source.transcode == "int"
    ));
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Properties

/// Component values from a small alphabet (so that equal values are common), sometimes absent,
/// sometimes holding a delimiter.
fn component() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        3 => "[ab]{0,2}".prop_map(Some),
        1 => Just(None),
        1 => "[a|#!]{1,3}".prop_map(Some),
        1 => any::<String>().prop_map(Some),
    ]
}

fn score() -> impl Strategy<Value = Option<i64>> {
    prop_oneof![
        1 => Just(None),
        3 => (-3i64..3).prop_map(Some),
        1 => (-transcode::INT_MAX..=transcode::INT_MAX).prop_map(Some),
    ]
}

#[derive(Clone, Debug)]
struct Record {
    user_id: String,
    created: u64,
    first: Option<String>,
    last: Option<String>,
    score: Option<i64>,
}

fn record() -> impl Strategy<Value = Record> {
    (
        "[a-z0-9]{1,3}|\\PC{1,12}",
        0u64..=2_000_000_000_000,
        component(),
        component(),
        score(),
    )
        .prop_map(|(user_id, created, first, last, score)| Record {
            user_id,
            created,
            first,
            last,
            score,
        })
}

impl Record {
    fn item(&self) -> Item {
        let mut pairs = vec![("userId", s(&self.user_id)), ("created", n(self.created))];
        if let Some(v) = &self.first {
            pairs.push(("first", s(v)));
        }
        if let Some(v) = &self.last {
            pairs.push(("last", s(v)));
        }
        if let Some(v) = self.score {
            pairs.push(("score", n(v)));
        }
        item(&pairs)
    }

    /// The components as keys see them: empty strings count as absent.
    fn components(&self) -> (Option<&str>, Option<&str>, Option<i64>) {
        fn non_empty(v: Option<&String>) -> Option<&str> {
            v.map(String::as_str).filter(|v| !v.is_empty())
        }
        (
            non_empty(self.first.as_ref()),
            non_empty(self.last.as_ref()),
            self.score,
        )
    }

    fn has_delimiter(&self) -> bool {
        let bad = |v: &str| v.contains(['|', '#', '!']);
        bad(&self.user_id)
            || self.first.as_deref().is_some_and(bad)
            || self.last.as_deref().is_some_and(bad)
    }
}

fn bumps() -> impl Strategy<Value = Vec<ShardBump>> {
    proptest::collection::vec((1u64..3_000_000_000_000, 1u8..=5, 1u8..=8), 0..=3).prop_map(|raw| {
        let mut raw = raw;
        raw.sort_by_key(|b| b.0);
        raw.dedup_by_key(|b| b.0);
        let mut chars = 0;
        raw.into_iter()
            .map(|(t, bits, extra)| {
                chars += extra.min(3);
                ShardBump::new(t, bits, chars)
            })
            .collect()
    })
}

fn space() -> impl Strategy<Value = ShardSpace> {
    prop_oneof![Just(ShardSpace::Product), Just(ShardSpace::Power)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Generated keys decode back to exactly their components, and two records share a key only
    /// when they share those components (injectivity).
    #[test]
    fn generated_keys_decode_to_their_components_and_are_injective(a in record(), b in record()) {
        let schema = default_schema().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let user = schema.entity("user").map_err(|e| TestCaseError::fail(e.to_string()))?;
        let keyed = |r: &Record| user.add_keys(&r.item());
        match (keyed(&a), keyed(&b)) {
            (Ok(ka), Ok(kb)) => {
                for (ka, r) in [(&ka, &a), (&kb, &b)] {
                    let (first, last, score) = r.components();
                    let AttributeValue::S(name_rk) = &ka["nameRK"] else { return Err(TestCaseError::fail("nameRK")) };
                    let decoded = user.decode_generated(name_rk).map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert_eq!(decoded.get("first").cloned(), first.map(s));
                    prop_assert_eq!(decoded.get("last").cloned(), last.map(s));
                    prop_assert_eq!(decoded.get("score").cloned(), score.map(n));
                    prop_assert_eq!(decoded.len(), usize::from(first.is_some()) + usize::from(last.is_some()) + usize::from(score.is_some()));
                    let AttributeValue::S(range_key) = &ka["rangeKey"] else { return Err(TestCaseError::fail("rangeKey")) };
                    let decoded = user.decode_generated(range_key).map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert_eq!(decoded, item(&[("userId", s(&r.user_id))]));
                    let AttributeValue::S(user_pk) = &ka["userPK"] else { return Err(TestCaseError::fail("userPK")) };
                    let decoded = user.decode_generated(user_pk).map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert_eq!(decoded, item(&[("hashKey", ka["hashKey"].clone()), ("userId", s(&r.user_id))]));
                    prop_assert_eq!(ka.contains_key("scoreRK"), score.is_some());
                }
                prop_assert_eq!(ka["nameRK"] == kb["nameRK"], a.components() == b.components());
                prop_assert_eq!(ka["rangeKey"] == kb["rangeKey"], a.user_id == b.user_id);
                if let (Some(x), Some(y)) = (ka.get("scoreRK"), kb.get("scoreRK")) {
                    prop_assert_eq!(x == y, (a.score, a.created) == (b.score, b.created));
                }
            }
            (ra, rb) => {
                for (r, rec) in [(ra, &a), (rb, &b)] {
                    match r {
                        Ok(_) => prop_assert!(!rec.has_delimiter()),
                        Err(Error::DelimiterInValue { .. }) => prop_assert!(rec.has_delimiter()),
                        Err(e) => return Err(TestCaseError::fail(format!("unexpected error {e}"))),
                    }
                }
            }
        }
    }

    /// A record's hash key is in the hash-key space of every window that holds its timestamp,
    /// with and without its unique value, under both rules; and it is one of its candidate
    /// primary keys when the timestamp is unknown.
    #[test]
    fn hash_keys_lie_in_the_hash_key_space(
        bumps in bumps(),
        space in space(),
        r in record(),
        before in 0u64..1_000_000_000_000,
        after in 0u64..1_000_000_000_000,
    ) {
        let schema = schema(bumps, space).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let user = schema.entity("user").map_err(|e| TestCaseError::fail(e.to_string()))?;
        let rec = item(&[("userId", s(&r.user_id.replace(['|', '#', '!'], ""))), ("created", n(r.created))]);
        prop_assume!(!r.user_id.replace(['|', '#', '!'], "").is_empty());
        let hash_key = user.hash_key(&rec).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let (from, to) = (r.created.saturating_sub(before), r.created + after);
        let narrowed = user.hash_key_space("hashKey", &rec, from, to).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(narrowed.contains(&hash_key), "{} not in {:?}", hash_key, narrowed);
        match user.hash_key_space("hashKey", &Item::default(), from, to) {
            Ok(full) => {
                prop_assert!(full.contains(&hash_key));
                // every narrowed key is in the full space, and the full space has no duplicates
                prop_assert!(narrowed.iter().all(|k| full.contains(k)));
                let mut dedup = full.clone();
                dedup.sort();
                dedup.dedup();
                prop_assert_eq!(dedup.len(), full.len());
            }
            Err(Error::ShardSpaceTooLarge { .. }) => {}
            Err(e) => return Err(TestCaseError::fail(e.to_string())),
        }
        let mut no_timestamp = rec.clone();
        no_timestamp.remove("created");
        let candidates = user.primary_keys(&no_timestamp).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(candidates.iter().any(|k| k.hash_key == hash_key));
    }

    /// Dehydrating an index item and rehydrating it gives back the item's unwrapped properties.
    #[test]
    fn index_items_round_trip(
        r in record().prop_filter("a delimiter in a value (the round trip is of clean values)", |r| !r.has_delimiter())
    ) {
        let schema = default_schema().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let user = schema.entity("user").map_err(|e| TestCaseError::fail(e.to_string()))?;
        let rec = r.item();
        for index in ["created", "name", "userScore"] {
            let dehydrated = user.dehydrate_index_item(index, &rec).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let rehydrated = user.rehydrate_index_item(index, &dehydrated).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let hash_key = &user.index(index).map_err(|e| TestCaseError::fail(e.to_string()))?.hash_key;
            for element in user.unwrap_index(index, &[hash_key]).map_err(|e| TestCaseError::fail(e.to_string()))? {
                let original = rec.get(element).filter(|v| **v != s(""));
                prop_assert_eq!(rehydrated.get(element), original, "{} of {}", element, index);
            }
        }
    }

    /// No decoder panics: arbitrary strings give `Ok` or `Err`.
    #[test]
    fn decoders_never_panic(text in any::<String>(), structured in "[a-z|#!]{0,3}(first|last|score|created|userId)[#|!][pn0-9|#!]{0,20}") {
        let schema = default_schema().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let user = schema.entity("user").map_err(|e| TestCaseError::fail(e.to_string()))?;
        for input in [&text, &structured] {
            let _ = user.decode_generated(input);
            for index in ["created", "name", "userScore"] {
                let _ = user.rehydrate_index_item(index, input);
            }
        }
    }
}

#[test]
fn an_unvalidated_schedule_cannot_make_suffixes_panic() {
    // static models skip validation until `Schema::new`; out-of-range char bits are clamped
    for char_bits in [0u8, 6, 9, 31, 200] {
        let bump = ShardBump::new(0, char_bits, 3);
        for space in [ShardSpace::Product, ShardSpace::Power] {
            assert_eq!(
                suffix(u64::from(string_hash("user-123")), bump, space).len(),
                3
            );
        }
    }
}
