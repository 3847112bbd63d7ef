//! No silent misread: a generated key that cannot be read one way (a delimiter inside a value,
//! as a TypeScript service writes it) is a typed error in every profile, never a record with
//! wrong values; every key without one decodes to exactly its values.

use entity_manager::model::Profile;
use entity_manager::{AttributeValue, Error, Item, Schema};
use proptest::prelude::*;
use serde_json::{Value, json};

/// The User service of the seed docs: two sharded and two unsharded generated properties.
fn config(delimiters: (&str, &str, &str)) -> Value {
    json!({
        "hashKey": "hashKey",
        "rangeKey": "rangeKey",
        "generatedKeyDelimiter": delimiters.0,
        "generatedValueDelimiter": delimiters.1,
        "shardKeyDelimiter": delimiters.2,
        "entities": {
            "user": {
                "uniqueProperty": "userId",
                "timestampProperty": "created",
                "shardBumps": [{ "timestamp": 0, "charBits": 2, "chars": 1 }]
            }
        },
        "generatedProperties": {
            "sharded": { "userHashKey": ["userId"] },
            "unsharded": {
                "firstNameRangeKey": ["firstNameCanonical", "lastNameCanonical", "created"],
                "lastNameRangeKey": ["lastNameCanonical", "firstNameCanonical", "created"]
            }
        },
        "indexes": {
            "firstName": { "hashKey": "hashKey", "rangeKey": "firstNameRangeKey" },
            "lastName": { "hashKey": "hashKey", "rangeKey": "lastNameRangeKey" },
            "userId": { "hashKey": "userHashKey", "rangeKey": "created" }
        },
        "propertyTranscodes": {
            "userId": "string",
            "created": "timestamp",
            "firstNameCanonical": "string",
            "lastNameCanonical": "string"
        }
    })
}

/// A key to build: the leading hash key, if any, and the `(component, value)` pairs.
type KeyCase<'a> = (Option<&'a str>, Vec<(&'a str, &'a str)>);

const DEFAULT: (&str, &str, &str) = ("|", "#", "!");
const CUSTOM: (&str, &str, &str) = ("~", ":", "$");

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

/// A key as the TypeScript library writes it: raw values joined by the delimiters, nothing
/// refused. `hash_key` leads a sharded property.
fn typescript_key(
    (gkd, gvd, _): (&str, &str, &str),
    hash_key: Option<&str>,
    components: &[(&str, &str)],
) -> String {
    hash_key
        .into_iter()
        .map(str::to_owned)
        .chain(components.iter().map(|(n, v)| format!("{n}{gvd}{v}")))
        .collect::<Vec<_>>()
        .join(gkd)
}

/// A user id holding the generated key and value delimiters splits its key into components
/// of no layout of the entity (`userId`, then `created` with value `é`): a typed error found
/// before any value is decoded (it was a timestamp decode error: the property test above drew
/// this input once). Since issue 47 it is the `AmbiguousKey` of the user id `|created#é`
/// (the one layout that reads the key); a key no layout reads is `MalformedKey`.
#[test]
fn a_key_of_no_layout_is_malformed_before_its_values_decode()
-> Result<(), Box<dyn std::error::Error>> {
    for profile in Profile::ALL {
        let schema = Schema::from_ts_config(&config(DEFAULT), profile)?;
        let user = schema.entity("user")?;
        for key in ["user!0|userId#|created#é", "userId#|created#é"] {
            match user.decode_generated(key) {
                Err(Error::AmbiguousKey {
                    property, value, ..
                }) => assert_eq!(
                    (property.as_str(), value.as_str()),
                    ("userId", "|created#é"),
                    "{profile}, {key}"
                ),
                other => panic!("{profile}, {key}: expected AmbiguousKey, got {other:?}"),
            }
        }
        for key in ["user!0|created#é|userId#u", "created#é|userId#"] {
            match user.decode_generated(key) {
                Err(Error::MalformedKey { .. }) => {}
                other => panic!("{profile}, {key}: expected MalformedKey, got {other:?}"),
            }
        }
    }
    Ok(())
}

/// The regression of issue 29: a TypeScript record whose first name holds the shard key
/// delimiter decoded to an item whose hash key was `firstNameCanonical#ann!e`.
#[test]
fn ann_e_is_an_ambiguous_key_not_a_hash_key() -> Result<(), Box<dyn std::error::Error>> {
    let key = "firstNameCanonical#ann!e|lastNameCanonical#smith|created#1726880933000";
    for profile in Profile::ALL {
        let schema = Schema::from_ts_config(&config(DEFAULT), profile)?;
        let user = schema.entity("user")?;
        match user.decode_generated(key) {
            Err(Error::AmbiguousKey {
                property,
                value,
                delimiter,
                ..
            }) => {
                assert_eq!(
                    (property.as_str(), value.as_str(), delimiter.as_str()),
                    ("firstNameCanonical", "ann!e", "!"),
                    "{profile}"
                );
            }
            other => panic!("{profile}: expected AmbiguousKey, got {other:?}"),
        }
        // the same name without the delimiter reads back
        let clean = user.decode_generated(&key.replace("ann!e", "anne"))?;
        assert_eq!(
            clean.get("firstNameCanonical"),
            Some(&s("anne")),
            "{profile}"
        );
        assert!(!clean.contains_key("hashKey"), "{profile}");
    }
    Ok(())
}

/// Issue 47: a first name holding the generated key delimiter (`ann|b!e`) split its key into a
/// segment `b!e`, and the `AmbiguousKey` named a property `b` the entity does not have. The
/// error names the property whose value holds the delimiter, with that whole value.
#[test]
fn an_ambiguous_key_names_the_property_whose_value_holds_the_delimiter()
-> Result<(), Box<dyn std::error::Error>> {
    let cases = [
        // the value cut at `|`: the piece after it reads as a component `b` whose value holds
        // `!` (was AmbiguousKey naming `b`)
        (
            "firstNameCanonical#ann|b#e!x|lastNameCanonical#smith|created#1726880933000",
            "firstNameCanonical",
            "ann|b#e!x",
            "|",
        ),
        // the piece after it reads as `b` with value `e` (was UnknownTranscodedProperty `b`)
        (
            "firstNameCanonical#ann|b#e|lastNameCanonical#smith|created#1726880933000",
            "firstNameCanonical",
            "ann|b#e",
            "|",
        ),
        // the second component's value
        (
            "lastNameCanonical#lee|firstNameCanonical#jo|b!x|created#1726880933000",
            "firstNameCanonical",
            "jo|b!x",
            "|",
        ),
        // a sharded key's only component
        ("user!1|userId#u|b!c", "userId", "u|b!c", "|"),
        // a piece with no value delimiter (was MalformedKey of segment `b!e`)
        (
            "firstNameCanonical#ann|b!e|lastNameCanonical#smith|created#1726880933000",
            "firstNameCanonical",
            "ann|b!e",
            "|",
        ),
    ];
    for profile in Profile::ALL {
        let schema = Schema::from_ts_config(&config(DEFAULT), profile)?;
        let user = schema.entity("user")?;
        for (key, want_property, want_value, want_delimiter) in cases {
            match user.decode_generated(key) {
                Err(Error::AmbiguousKey {
                    property,
                    value,
                    delimiter,
                    ..
                }) => assert_eq!(
                    (property.as_str(), value.as_str(), delimiter.as_str()),
                    (want_property, want_value, want_delimiter),
                    "{profile}, {key}"
                ),
                other => panic!("{profile}, {key}: expected AmbiguousKey, got {other:?}"),
            }
        }
    }
    Ok(())
}

/// A value: mostly letters, with every delimiter of both sets, the names of the components
/// (so that an injected segment looks like a real one) and non-ASCII text.
fn value() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            4 => "[a-zé北]{1,3}",
            1 => Just("|".to_owned()),
            1 => Just("#".to_owned()),
            1 => Just("!".to_owned()),
            1 => Just("~".to_owned()),
            1 => Just(":".to_owned()),
            1 => Just("$".to_owned()),
            1 => Just("lastNameCanonical".to_owned()),
            1 => Just("created".to_owned()),
            1 => Just("user".to_owned()),
        ],
        0..6,
    )
    .prop_map(|parts| parts.concat())
}

fn profile() -> impl Strategy<Value = Profile> {
    prop_oneof![
        Just(Profile::Native),
        Just(Profile::Npm6_14),
        Just(Profile::Upstream8)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Every generated key decodes to exactly the values it was built from, or is a typed error
    /// when a value holds a delimiter: never a record with other values.
    #[test]
    fn a_key_decodes_to_its_values_or_to_a_typed_error(
        profile in profile(),
        custom in any::<bool>(),
        first in value(),
        last in value(),
        user_id in value(),
        suffix in "[0-3]",
        by_last in any::<bool>(),
    ) {
        let delimiters = if custom { CUSTOM } else { DEFAULT };
        let schema = Schema::from_ts_config(&config(delimiters), profile)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let user = schema.entity("user").map_err(|e| TestCaseError::fail(e.to_string()))?;
        let held = |v: &str| [delimiters.0, delimiters.1, delimiters.2].iter().any(|d| v.contains(d));
        let created = "1726880933000";
        let names = if by_last {
            [("lastNameCanonical", last.as_str()), ("firstNameCanonical", first.as_str())]
        } else {
            [("firstNameCanonical", first.as_str()), ("lastNameCanonical", last.as_str())]
        };
        let hash_key = format!("user{}{suffix}", delimiters.2);
        let cases: [KeyCase<'_>; 3] = [
            (None, vec![names[0], names[1], ("created", created)]),
            (Some(&hash_key), vec![("userId", user_id.as_str())]),
            (None, vec![("userId", user_id.as_str())]),
        ];
        for (hash, components) in cases {
            let key = typescript_key(delimiters, hash, &components);
            let ambiguous = components.iter().any(|(_, v)| held(v));
            match user.decode_generated(&key) {
                Ok(decoded) => {
                    prop_assert!(!ambiguous, "{} read as {:?} ({})", key, decoded, profile);
                    let mut want = Item::default();
                    if let Some(h) = hash {
                        want.insert("hashKey".into(), s(h));
                    }
                    for (name, v) in &components {
                        if v.is_empty() {
                            continue;
                        }
                        let value = if *name == "created" {
                            AttributeValue::N((*v).to_owned())
                        } else {
                            s(v)
                        };
                        want.insert((*name).to_owned(), value);
                    }
                    prop_assert_eq!(decoded, want, "{} ({})", key, profile);
                }
                Err(Error::AmbiguousKey { property, .. }) => {
                    prop_assert!(ambiguous, "{} refused ({})", key, profile);
                    // it names a component of the key, never a piece of a value
                    prop_assert!(
                        components.iter().any(|(n, _)| *n == property),
                        "{} names `{}` ({})", key, property, profile
                    );
                }
                Err(Error::MalformedKey { .. } | Error::UnknownTranscodedProperty { .. }) => {
                    prop_assert!(ambiguous, "{} refused ({})", key, profile);
                }
                Err(e) => return Err(TestCaseError::fail(format!("{key}: unexpected error {e}"))),
            }
        }
    }
}
