//! What `to_item` and `from_item` guarantee on every record, before any store call: `None` is
//! never written (no `NULL` attributes), key values stay inside DynamoDB's limits, and an item of
//! another entity is refused.

use entity_manager::limits::{KeyRole, MAX_PARTITION_KEY_BYTES, MAX_SORT_KEY_BYTES};
use entity_manager::store::{Expect, MemoryStore, Store, TableDefinition};
use entity_manager::{AttributeValue, Entity, EntityExt, Error, Item, Table};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

mod store_support;

#[derive(Table)]
#[table(entities(Person, Pet, Personnel))]
struct People;

/// Optional fields without any serde attribute: the derive's `to_item` must leave them out.
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = People, unique = person_id, timestamp = created)]
#[shard_bumps(bump(timestamp = 0, char_bits = 2, chars = 1))]
#[generated(name = group_hash_key, components = [group], sharded)]
#[generated(name = name_range_key, components = [name, nickname])]
#[index(name = "phone", range = phone)]
#[index(name = "groupName", hash = group_hash_key, range = name_range_key)]
#[allow(clippy::struct_field_names)] // `person_id`: the attribute name
struct Person {
    #[transcode("string")]
    person_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    name: String,
    #[transcode("string")]
    nickname: Option<String>,
    #[transcode("string")]
    phone: Option<String>,
    #[transcode("string")]
    group: Option<String>,
    note: Option<String>,
}

/// Another entity of the same table.
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = People, unique = pet_id, timestamp = created)]
struct Pet {
    #[transcode("string")]
    pet_id: String,
    #[transcode("timestamp")]
    created: u64,
}

/// An entity whose token starts with another's (`personnel` / `person`).
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = People, unique = person_id, timestamp = created)]
struct Personnel {
    #[transcode("string")]
    person_id: String,
    #[transcode("timestamp")]
    created: u64,
}

fn person(id: &str) -> Person {
    Person {
        person_id: id.to_owned(),
        created: 1_000,
        name: "ann".into(),
        nickname: None,
        phone: None,
        group: None,
        note: None,
    }
}

fn has_null(item: &Item) -> bool {
    item.values().any(|v| matches!(v, AttributeValue::Null(_)))
}

#[test]
fn none_is_never_written() -> Result<(), Error> {
    let record = person("p1");
    let item = record.to_item()?;
    assert!(!has_null(&item), "{item:?}");
    for absent in ["phone", "group", "note", "nickname", "groupHashKey"] {
        assert!(!item.contains_key(absent), "{absent} in {item:?}");
    }
    // An unsharded generated property with a missing component keeps the TypeScript rule.
    assert!(item.contains_key("nameRangeKey"));
    assert_eq!(Person::from_item(&item)?, record);

    let full = Person {
        nickname: Some("a".into()),
        phone: Some("+1".into()),
        group: Some("g".into()),
        note: Some("n".into()),
        ..person("p2")
    };
    let item = full.to_item()?;
    assert_eq!(item.get("phone"), Some(&AttributeValue::S("+1".into())));
    assert!(item.contains_key("groupHashKey"));
    assert_eq!(Person::from_item(&item)?, full);
    Ok(())
}

proptest! {
    /// Whatever fields are `None`, no attribute is `NULL` and the record reads back unchanged.
    #[test]
    fn no_null_for_any_combination(
        nickname in proptest::option::of("[a-z]{1,8}"),
        phone in proptest::option::of("[0-9]{1,8}"),
        group in proptest::option::of("[a-z]{1,8}"),
        note in proptest::option::of(".{0,8}"),
    ) {
        let record = Person { nickname, phone, group, note, ..person("p") };
        let item = record.to_item().map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(!has_null(&item));
        prop_assert_eq!(Person::from_item(&item).map_err(|e| TestCaseError::fail(e.to_string()))?, record);
    }
}

/// A record with `None` in an index key writes on both stores: DynamoDB rejects a `NULL` index
/// key ("Type mismatch for Index Key phone Expected: S Actual: NULL").
#[tokio::test]
async fn a_record_without_its_index_key_writes_on_both_stores()
-> Result<(), Box<dyn std::error::Error>> {
    let definition = TableDefinition::from_schema(People::schema()?)?;
    let item = person("p1").to_item()?;
    let memory = MemoryStore::new(definition.clone());
    memory.put_item(item.clone(), Expect::Any).await?;
    if let Some(dynamo) = store_support::dynamo_store("none-index-key", definition).await? {
        dynamo.put_item(item.clone(), Expect::Any).await?;
        let key = Person::schema()?.primary_keys(&item)?;
        assert_eq!(key.len(), 1);
    }
    Ok(())
}

/// The key value `to_item` wrote under `attribute`, in bytes.
fn bytes(item: &Item, attribute: &str) -> usize {
    match item.get(attribute) {
        Some(AttributeValue::S(s)) => s.len(),
        other => panic!("{attribute}: {other:?}"),
    }
}

/// What `to_item` says of a record whose key attribute `attribute` would be `len` bytes long,
/// given how long it is for a probe record: `Ok(len)` or the error's fields.
fn verdict(
    result: Result<Item, Error>,
    attribute: &str,
) -> Result<usize, (String, Option<String>, KeyRole, usize)> {
    match result {
        Ok(item) => Ok(bytes(&item, attribute)),
        Err(Error::KeyTooLong {
            attribute,
            index,
            role,
            bytes,
            ..
        }) => Err((attribute, index, role, bytes)),
        Err(other) => panic!("unexpected error: {other}"),
    }
}

#[test]
fn key_limits_are_checked_before_any_store_call() -> Result<(), Error> {
    // Table range key `personId#<id>`: 1,023 / 1,024 bytes pass, 1,025 fails. The id holds a
    // two-byte character, so bytes (not characters) are counted.
    let prefix = "personId#".len();
    for len in [
        MAX_SORT_KEY_BYTES - 1,
        MAX_SORT_KEY_BYTES,
        MAX_SORT_KEY_BYTES + 1,
    ] {
        let id = format!("é{}", "x".repeat(len - prefix - 2));
        let got = verdict(person(&id).to_item(), "rangeKey");
        if len <= MAX_SORT_KEY_BYTES {
            assert_eq!(got, Ok(len));
        } else {
            assert_eq!(got, Err(("rangeKey".into(), None, KeyRole::Sort, len)));
        }
    }

    // GSI partition key `groupHashKey` = `<hashKey>|group#<group>`: 2,047 / 2,048 / 2,049.
    let probe = Person {
        group: Some("g".into()),
        ..person("p")
    }
    .to_item()?;
    let base = bytes(&probe, "groupHashKey") - 1;
    for len in [
        MAX_PARTITION_KEY_BYTES - 1,
        MAX_PARTITION_KEY_BYTES,
        MAX_PARTITION_KEY_BYTES + 1,
    ] {
        let record = Person {
            group: Some("g".repeat(len - base)),
            ..person("p")
        };
        let got = verdict(record.to_item(), "groupHashKey");
        if len <= MAX_PARTITION_KEY_BYTES {
            assert_eq!(got, Ok(len));
        } else {
            assert_eq!(
                got,
                Err((
                    "groupHashKey".into(),
                    Some("groupName".into()),
                    KeyRole::Partition,
                    len
                ))
            );
        }
    }

    // GSI sort key `nameRangeKey` = `name#<name>|nickname#`: 1,023 / 1,024 / 1,025.
    let base = bytes(
        &Person {
            name: "n".into(),
            ..person("p")
        }
        .to_item()?,
        "nameRangeKey",
    ) - 1;
    for len in [
        MAX_SORT_KEY_BYTES - 1,
        MAX_SORT_KEY_BYTES,
        MAX_SORT_KEY_BYTES + 1,
    ] {
        let record = Person {
            name: "n".repeat(len - base),
            ..person("p")
        };
        let got = verdict(record.to_item(), "nameRangeKey");
        if len <= MAX_SORT_KEY_BYTES {
            assert_eq!(got, Ok(len));
        } else {
            assert_eq!(
                got,
                Err((
                    "nameRangeKey".into(),
                    Some("groupName".into()),
                    KeyRole::Sort,
                    len
                ))
            );
        }
    }

    // A scalar GSI range key (`phone`) is a sort key too.
    let record = Person {
        phone: Some("1".repeat(MAX_SORT_KEY_BYTES + 1)),
        ..person("p")
    };
    assert_eq!(
        verdict(record.to_item(), "phone"),
        Err((
            "phone".into(),
            Some("phone".into()),
            KeyRole::Sort,
            MAX_SORT_KEY_BYTES + 1
        ))
    );

    // The message names the entity, the attribute, the index and the length.
    let err = person(&"x".repeat(2_000))
        .to_item()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    for part in ["`person`", "`rangeKey`", "2009 bytes", "1024"] {
        assert!(err.contains(part), "{part} not in {err}");
    }
    Ok(())
}

#[test]
fn an_item_of_another_entity_is_refused() -> Result<(), Error> {
    let pet = Pet {
        pet_id: "p1".into(),
        created: 1,
    }
    .to_item()?;
    match Person::from_item(&pet) {
        Err(Error::OtherEntity {
            entity, hash_key, ..
        }) => {
            assert_eq!(entity, "person");
            assert_eq!(hash_key, "pet!");
        }
        other => panic!("expected OtherEntity, got {other:?}"),
    }
    // A token that merely starts with ours is another entity too.
    let staff = Personnel {
        person_id: "p1".into(),
        created: 1,
    }
    .to_item()?;
    assert!(matches!(
        Person::from_item(&staff),
        Err(Error::OtherEntity { .. })
    ));
    assert!(matches!(
        Personnel::from_item(&person("p1").to_item()?),
        Err(Error::OtherEntity { .. })
    ));
    // Its own items read back.
    assert_eq!(Personnel::from_item(&staff)?.person_id, "p1");
    // The same verdicts on the path a query's items take (the item given up, its keys taken
    // off in place before its hash key is checked).
    let read = <Person as entity_manager::query::QueryOutput>::read;
    match read(pet) {
        Err(Error::OtherEntity { hash_key, .. }) => assert_eq!(hash_key, "pet!"),
        other => panic!("expected OtherEntity, got {other:?}"),
    }
    assert!(matches!(read(staff), Err(Error::OtherEntity { .. })));
    assert_eq!(read(person("p1").to_item()?)?.person_id, "p1");
    Ok(())
}

/// The in-place key path leaves the item unchanged on any error: every value is computed and
/// checked before anything is written.
#[test]
fn add_keys_mut_changes_nothing_on_error() -> Result<(), Error> {
    let schema = Person::schema()?;
    // A delimiter in the last component written (`nickname`, in `nameRangeKey`).
    let mut item = person("p1").to_item()?;
    item.remove("nameRangeKey");
    item.insert("nickname".into(), AttributeValue::S("a|b".into()));
    let before = item.clone();
    assert!(matches!(
        schema.add_keys_mut(&mut item),
        Err(Error::DelimiterInValue { .. })
    ));
    assert_eq!(item, before);
    assert!(matches!(
        schema.refresh_keys_mut(&mut item),
        Err(Error::DelimiterInValue { .. })
    ));
    assert_eq!(item, before);

    // A key too long.
    let mut item = person("p2").to_item()?;
    item.insert(
        "name".into(),
        AttributeValue::S("n".repeat(MAX_SORT_KEY_BYTES)),
    );
    let before = item.clone();
    assert!(matches!(
        schema.refresh_keys_mut(&mut item),
        Err(Error::KeyTooLong { .. })
    ));
    assert_eq!(item, before);

    // And on success it equals the copying path.
    let mut item = person("p3").to_item()?;
    item.insert("group".into(), AttributeValue::S("g".into()));
    let copied = schema.refresh_keys(&item)?;
    schema.refresh_keys_mut(&mut item)?;
    assert_eq!(item, copied);
    assert!(item.contains_key("groupHashKey"));
    Ok(())
}
