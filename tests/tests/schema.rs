//! One validated schema per table, used by every path: a hand-written `impl Entity` goes through
//! the same validation and normalisation as `Schema::new`, so it cannot key records differently.

use entity_manager::model::{EntityModel, Property, ShardBump, TableModel};
use entity_manager::{AttributeValue, Entity, EntityExt, Error, Schema, Table, transcode};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

/// A table whose one entity is written by hand, with its shard bumps out of order and no bump
/// at timestamp 0: exactly what validation normalises.
struct Emails;

impl Table for Emails {
    const MODEL: TableModel = TableModel::DEFAULT;
    fn model() -> &'static TableModel {
        static MODEL: TableModel = Emails::MODEL;
        &MODEL
    }
    fn entities() -> Vec<&'static EntityModel> {
        vec![Email::model()]
    }
}

/// From 2,000 on: two characters of radix 4 (`product`: 8 shards, suffixes `00`..`13`);
/// from 1,000 on: one binary character. Listed latest first.
const UNSORTED: &[ShardBump] = &[ShardBump::new(2_000, 2, 2), ShardBump::new(1_000, 1, 1)];

const EMAIL_PROPERTIES: &[Property] = &[
    Property::new("email", transcode::STRING),
    Property::new("created", transcode::TIMESTAMP),
];

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Email {
    email: String,
    created: u64,
}

impl Entity for Email {
    type Table = Emails;
    const MODEL: EntityModel = EntityModel::new("email", "email", "created")
        .with_shard_bumps(UNSORTED)
        .with_properties(EMAIL_PROPERTIES);
    fn model() -> &'static EntityModel {
        static MODEL: EntityModel = Email::MODEL;
        &MODEL
    }
}

/// The shard suffix of the key contract, computed here from its definition (PRODUCT.md §4), not
/// by the library: npm `string-hash` over the UTF-16 units from last to first, modulo
/// `chars × 2^charBits`, in radix `2^charBits`, zero-padded to `chars`.
fn expected_hash_key(email: &str, created: u64) -> String {
    let (char_bits, chars) = if created >= 2_000 {
        (2u32, 2u32)
    } else if created >= 1_000 {
        (1, 1)
    } else {
        (1, 0) // the implied `{0, 1, 0}` bump: unsharded
    };
    if chars == 0 {
        return "email!".to_owned();
    }
    // the native shard hash: the first 8 bytes of SHA-256, big-endian
    let digest = <sha2::Sha256 as sha2::Digest>::digest(email.as_bytes());
    let h = u64::from_be_bytes([
        digest[0], digest[1], digest[2], digest[3], digest[4], digest[5], digest[6], digest[7],
    ]);
    let radix = 1u32 << char_bits;
    let mut shard = u32::try_from(h % u64::from(chars * radix)).unwrap_or(u32::MAX);
    let mut digits = Vec::new();
    for _ in 0..chars {
        digits.push(char::from_digit(shard % radix, radix).unwrap_or('?'));
        shard /= radix;
    }
    digits.reverse();
    format!("email!{}", digits.into_iter().collect::<String>())
}

fn hash_key(item: &entity_manager::Item) -> &str {
    match item.get("hashKey") {
        Some(AttributeValue::S(s)) => s,
        other => panic!("no string hash key: {other:?}"),
    }
}

#[test]
fn a_hand_written_impl_is_normalised_like_the_validated_schema() -> Result<(), Error> {
    // The schema the entity works with is the validated one: sorted, with the implied bump.
    let bumps: Vec<(u64, u8, u8)> = Email::schema()?
        .model()
        .shard_bumps
        .iter()
        .map(|b| (b.timestamp, b.char_bits, b.chars))
        .collect();
    assert_eq!(bumps, [(0, 1, 0), (1_000, 1, 1), (2_000, 2, 2)]);

    // And the same value `Table::schema` and `Schema::new` give.
    let validated = Schema::new(Emails::model().clone(), vec![Email::MODEL])?;
    assert_eq!(validated.entities(), Emails::schema()?.entities());

    // A case where the unsorted schedule read as given picks the wrong bump (1,000's one binary
    // digit instead of 2,000's two radix-4 digits, the `email!3`/`email!03` divergence).
    let record = Email {
        email: "a@b.c".into(),
        created: 5_000,
    };
    let item = record.to_item()?;
    assert_eq!(hash_key(&item), expected_hash_key("a@b.c", 5_000));
    assert_eq!(hash_key(&item).len(), "email!".len() + 2);
    assert_eq!(validated.entity("email")?.hash_key(&item)?, hash_key(&item));
    assert_eq!(Email::from_item(&item)?, record);
    Ok(())
}

/// The schema is built and validated once per table type and then shared.
#[test]
fn the_schema_is_built_once_per_table() -> Result<(), Error> {
    let first: &'static Schema = Emails::schema()?;
    let second: &'static Schema = std::thread::spawn(Emails::schema).join().map_err(|_| {
        Error::Config(entity_manager::ConfigError {
            problems: Vec::new(),
        })
    })??;
    assert!(std::ptr::eq(first, second));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// For every record, the hand-written entity, the validated schema and the key contract
    /// computed from its definition agree.
    #[test]
    fn every_path_keys_alike(email in "[a-z0-9@.]{1,24}", created in 0u64..4_000) {
        let item = Email { email: email.clone(), created }.to_item().map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(hash_key(&item), expected_hash_key(&email, created));
    }
}

/// A hand-written impl whose configuration breaks a rule gets the configuration error on every
/// path, instead of keys computed from an invalid schedule.
#[test]
fn an_invalid_hand_written_impl_is_refused() {
    struct Bad;
    impl Table for Bad {
        const MODEL: TableModel = TableModel::DEFAULT;
        fn model() -> &'static TableModel {
            static MODEL: TableModel = Bad::MODEL;
            &MODEL
        }
        fn entities() -> Vec<&'static EntityModel> {
            vec![Broken::model()]
        }
    }
    #[derive(Serialize, Deserialize)]
    struct Broken {
        email: String,
        created: u64,
    }
    impl Entity for Broken {
        type Table = Bad;
        const MODEL: EntityModel = EntityModel::new("broken", "email", "created")
            .with_shard_bumps(&[ShardBump::new(0, 6, 1)]) // char_bits 1..=5
            .with_properties(EMAIL_PROPERTIES);
        fn model() -> &'static EntityModel {
            static MODEL: EntityModel = Broken::MODEL;
            &MODEL
        }
    }
    let record = Broken {
        email: "a@b.c".into(),
        created: 1,
    };
    for result in [
        record.to_item().map(drop),
        Broken::schema().map(drop),
        Bad::schema().map(drop),
    ] {
        match result {
            Err(Error::Config(config)) => assert!(
                config.problems.iter().any(|p| p.path.contains("charBits")),
                "{config}"
            ),
            other => panic!("expected a configuration error, got {other:?}"),
        }
    }
}
