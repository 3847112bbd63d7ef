//! The seed docs' User service declared with `#[derive(Entity)]`: the derived model, the
//! TypeScript golden `add_keys` vectors replayed through the structs, and a lossless round trip.

use std::path::{Path, PathBuf};

use entity_manager::model::{Projection, ShardBump, ShardSpace};
use entity_manager::query::{Classic, TypedIndex};
use entity_manager::{AttributeValue, Entity, EntityExt, Item, Table};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The User service table. Product shard space: what the seed docs and npm 6.14.0 use.
#[derive(Table, Debug)]
#[table(profile = npm6_14, entities(User, Email))]
struct UserService;

/// The same entities on the `power` rule, for the upstream-v8 vectors.
#[derive(Table, Debug)]
#[table(profile = upstream8, entities(PowerUser, PowerEmail))]
struct PowerUserService;

#[macro_use]
mod user_service;

user_service!(User, Email, UserService);

mod power {
    use super::*;
    user_service!(PowerUser, PowerEmail, PowerUserService);
}
use power::{PowerEmail, PowerUser};

#[test]
fn the_derived_model_is_the_seed_docs_user_service() -> Result<(), entity_manager::Error> {
    let schema = UserService::schema()?;
    assert_eq!(schema.table().shard_space, ShardSpace::Product);
    assert_eq!(
        <PowerUserService as Table>::model().shard_space,
        ShardSpace::Power
    );
    let user = User::model();
    assert_eq!(user.token, "user");
    assert_eq!(
        (&*user.unique_property, &*user.timestamp_property),
        ("userId", "created")
    );
    assert_eq!(
        &*user.shard_bumps,
        &[
            ShardBump::UNSHARDED,
            ShardBump::new(1_726_880_933_000, 2, 1),
            ShardBump::new(1_735_689_600_000, 3, 2)
        ]
    );
    let generated: Vec<(&str, bool, Vec<&str>)> = user
        .generated
        .iter()
        .map(|g| {
            (
                &*g.name,
                g.is_sharded(),
                g.components.iter().map(|c| &**c).collect(),
            )
        })
        .collect();
    assert_eq!(
        generated,
        [
            ("userBeneficiaryHashKey", true, vec!["beneficiaryId"]),
            (
                "firstNameRangeKey",
                false,
                vec!["firstNameCanonical", "lastNameCanonical", "created"]
            ),
            (
                "lastNameRangeKey",
                false,
                vec!["lastNameCanonical", "firstNameCanonical", "created"]
            ),
        ]
    );
    Ok(())
}

#[test]
fn the_derived_indexes_are_the_seed_docs_eleven() {
    let user = User::model();
    // the eleven indexes of the seed's final index table, over both entities
    let mut indexes: Vec<(&str, &str, &str)> = User::model()
        .indexes
        .iter()
        .chain(Email::model().indexes.iter())
        .map(|i| (&*i.name, &*i.hash_key, &*i.range_key))
        .collect();
    indexes.sort_unstable();
    indexes.dedup();
    assert_eq!(
        indexes,
        [
            ("created", "hashKey", "created"),
            ("firstName", "hashKey", "firstNameRangeKey"),
            ("lastName", "hashKey", "lastNameRangeKey"),
            ("phone", "hashKey", "phone"),
            ("updated", "hashKey", "updated"),
            (
                "userBeneficiaryCreated",
                "userBeneficiaryHashKey",
                "created"
            ),
            (
                "userBeneficiaryFirstName",
                "userBeneficiaryHashKey",
                "firstNameRangeKey"
            ),
            (
                "userBeneficiaryLastName",
                "userBeneficiaryHashKey",
                "lastNameRangeKey"
            ),
            ("userBeneficiaryPhone", "userBeneficiaryHashKey", "phone"),
            (
                "userBeneficiaryUpdated",
                "userBeneficiaryHashKey",
                "updated"
            ),
            ("userCreated", "userHashKey", "created"),
        ]
    );
    let projections: Vec<&Projection> = [
        "userBeneficiaryCreated",
        "userBeneficiaryFirstName",
        "created",
    ]
    .iter()
    .filter_map(|n| user.index(n).map(|i| &i.projection))
    .collect();
    assert!(
        matches!(projections[0], Projection::Include(names) if names.iter().map(|n| &**n).eq(["someProperty", "someOtherProperty"]))
    );
    assert_eq!(projections[1], &Projection::KeysOnly);
    assert_eq!(projections[2], &Projection::All);
    // the typed index tokens: one per index, named as the index, of its kind
    let user_tokens: [TypedIndex<User, Classic>; 10] = [
        UserIndex::Created,
        UserIndex::FirstName,
        UserIndex::LastName,
        UserIndex::Phone,
        UserIndex::Updated,
        UserIndex::UserBeneficiaryCreated,
        UserIndex::UserBeneficiaryFirstName,
        UserIndex::UserBeneficiaryLastName,
        UserIndex::UserBeneficiaryPhone,
        UserIndex::UserBeneficiaryUpdated,
    ];
    let mut names: Vec<&str> = user.indexes.iter().map(|i| &*i.name).collect();
    let mut tokens = user_tokens.map(TypedIndex::name).to_vec();
    names.sort_unstable();
    tokens.sort_unstable();
    assert_eq!(tokens, names);
    assert_eq!(
        UserIndex::UserBeneficiaryFirstName.name(),
        "userBeneficiaryFirstName"
    );
    assert_eq!(
        [EmailIndex::Created.name(), EmailIndex::UserCreated.name()],
        ["created", "userCreated"]
    );
}

#[test]
fn typed_key_builders_give_prefixes_and_full_keys() -> Result<(), entity_manager::Error> {
    // a `begins_with` prefix from the leading component
    let prefix = User::first_name_range_key().first_name_canonical("j")?;
    assert_eq!(prefix.as_str(), "firstNameCanonical#j");
    let full = prefix
        .last_name_canonical("williscroft")?
        .created(&1_726_880_933_000)?
        .key();
    assert_eq!(
        full,
        "firstNameCanonical#j|lastNameCanonical#williscroft|created#1726880933000"
    );
    // a sharded property starts with the record's hash key
    let hash = User::user_beneficiary_hash_key("user!1")
        .beneficiary_id("JCcwi4vyqwMJdaBwbjLG3")?
        .key();
    assert_eq!(hash, "user!1|beneficiaryId#JCcwi4vyqwMJdaBwbjLG3");
    // the builders agree with the keys added to a record
    let user = User {
        user_id: "wf5yU_5f63gqauSOLpP5O".into(),
        created: 1_726_880_933_000,
        updated: 1_726_880_933_000,
        beneficiary_id: Some("JCcwi4vyqwMJdaBwbjLG3".into()),
        first_name: "Jason".into(),
        first_name_canonical: "jason".into(),
        last_name: "Williscroft".into(),
        last_name_canonical: "williscroft".into(),
        phone: None,
        some_property: None,
        some_other_property: None,
    };
    let item = user.to_item()?;
    let built = User::last_name_range_key()
        .last_name_canonical(&user.last_name_canonical)?
        .first_name_canonical(&user.first_name_canonical)?
        .created(&user.created)?
        .key();
    assert_eq!(item["lastNameRangeKey"], AttributeValue::S(built));
    // a delimiter inside a component is an error, not an ambiguous key
    assert!(matches!(
        User::first_name_range_key().first_name_canonical("a|b"),
        Err(entity_manager::Error::DelimiterInValue { .. })
    ));
    assert!(matches!(
        Email::user_hash_key("email!").user_id("x").map(EmailUserHashKey::key),
        Ok(ref k) if k == "email!|userId#x"
    ));
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The TypeScript `add_keys` vectors for `user` and `email`, through the derived structs.

fn compat_dir() -> PathBuf {
    std::env::var_os("EM_COMPAT_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/compat"),
        PathBuf::from,
    )
}

/// Struct → item with keys, compared on every key the entity declares.
fn check_add_keys<E>(case: &Value) -> Result<(), String>
where
    E: Entity + EntityExt + Serialize + serde::de::DeserializeOwned,
{
    let expected = &case["expected"];
    let record: Result<E, _> = serde_json::from_value(case["item"].clone());
    if let Some(message) = expected["error"].as_str() {
        // A record without its unique property cannot be built: the type requires it.
        return match (message, record) {
            ("missing item unique property", Err(e))
                if e.to_string().contains(&*E::model().unique_property) =>
            {
                Ok(())
            }
            (m, r) => Err(format!(
                "expected error {m:?}, got {:?}",
                r.map(|_| "a record")
            )),
        };
    }
    let record = record.map_err(|e| format!("cannot build the record: {e}"))?;
    let item = record.to_item().map_err(|e| e.to_string())?;
    let table = <E::Table as Table>::model();
    let declared = [&*table.hash_key, &*table.range_key]
        .into_iter()
        .chain(E::model().generated.iter().map(|g| &*g.name));
    for key in declared {
        let want = expected.get(key).and_then(Value::as_str);
        let got = match item.get(key) {
            Some(AttributeValue::S(s)) => Some(s.as_str()),
            Some(other) => return Err(format!("{key} is {other:?}")),
            None => None,
        };
        if want != got {
            return Err(format!("{key}: expected {want:?}, got {got:?}"));
        }
    }
    Ok(())
}

fn replay(file: &str) -> Result<usize, String> {
    let text =
        std::fs::read_to_string(compat_dir().join(file)).map_err(|e| format!("{file}: {e}"))?;
    let vectors: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let power = vectors["shardSpace"] == "power";
    let mut ran = 0;
    for (i, case) in vectors["cases"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if case["op"] != "add_keys" {
            continue;
        }
        let result = match (case["entity"].as_str(), power) {
            (Some("user"), false) => check_add_keys::<User>(case),
            (Some("email"), false) => check_add_keys::<Email>(case),
            (Some("user"), true) => check_add_keys::<PowerUser>(case),
            (Some("email"), true) => check_add_keys::<PowerEmail>(case),
            (other, _) => Err(format!("unexpected entity {other:?}")),
        };
        result.map_err(|e| format!("{file} case {i}: {e}"))?;
        ran += 1;
    }
    Ok(ran)
}

#[test]
fn typescript_add_keys_vectors_pass_through_the_derived_structs() -> Result<(), String> {
    let ran = replay("product-user-service.json")? + replay("power-user-service.json")?;
    // 16 + 15 add_keys cases, all for `user` or `email`
    assert_eq!(ran, 31);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Lossless round trip

fn name() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 _.@+-]{1,20}|\\PC{1,10}".prop_map(|s| s.replace(['|', '#', '!'], "x"))
}

fn user() -> impl Strategy<Value = User> {
    (
        (
            name(),
            0u64..=9_999_999_999_999,
            0u64..=9_999_999_999_999,
            proptest::option::of(name()),
        ),
        (name(), name(), name(), name()),
        (
            proptest::option::of(name()),
            proptest::option::of(any::<String>()),
            proptest::option::of(any::<i64>()),
        ),
    )
        .prop_map(
            |(
                (user_id, created, updated, beneficiary_id),
                (first_name, first, last_name, last),
                (phone, some, other),
            )| User {
                user_id,
                created,
                updated,
                beneficiary_id,
                first_name,
                first_name_canonical: first,
                last_name,
                last_name_canonical: last,
                phone,
                some_property: some,
                some_other_property: other,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn user_round_trips_through_an_item_with_keys(user in user()) {
        let item: Item = user.to_item().map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(item.contains_key("hashKey") && item.contains_key("rangeKey") && item.contains_key("firstNameRangeKey"));
        prop_assert_eq!(item.contains_key("userBeneficiaryHashKey"), user.beneficiary_id.as_deref().is_some_and(|b| !b.is_empty()));
        let back = User::from_item(&item).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(back, user);
    }

    #[test]
    fn email_round_trips_through_an_item_with_keys(email in name(), created in 0u64..=9_999_999_999_999, user_id in name()) {
        let record = Email { email, created, user_id };
        let item = record.to_item().map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(item.contains_key("userHashKey"));
        let back = Email::from_item(&item).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(back, record);
    }
}

/// Raw identifiers are accepted everywhere: fields, generated property names, components,
/// index keys, the struct itself.
mod raw_identifiers {
    use entity_manager::{Entity, EntityExt, Table};
    use serde::{Deserialize, Serialize};

    #[derive(Table)]
    #[table(entities(r#Match))]
    struct r#Matches;

    #[derive(Entity, Serialize, Deserialize, Debug, PartialEq)]
    #[serde(rename_all = "camelCase")]
    #[entity(table = r#Matches, unique = r#ref, timestamp = r#use)]
    #[generated(name = r#type_key, components = [r#type, r#use])]
    #[generated(name = r#loop_key, components = [r#type], sharded)]
    #[index(name = "byType", hash = r#loop_key, range = r#type_key)]
    struct r#Match {
        #[transcode("string")]
        r#ref: String,
        #[transcode("timestamp")]
        r#use: u64,
        #[transcode("string")]
        r#type: String,
    }

    #[test]
    fn raw_identifiers_compile_and_key_records() -> Result<(), entity_manager::Error> {
        let record = r#Match {
            r#ref: "m1".into(),
            r#use: 5,
            r#type: "final".into(),
        };
        let item = record.to_item()?;
        assert_eq!(
            item["typeKey"],
            entity_manager::AttributeValue::S("type#final|use#0000000000005".into())
        );
        assert_eq!(
            item["loopKey"],
            entity_manager::AttributeValue::S("match!|type#final".into())
        );
        let prefix = r#Match::r#type_key().r#type("fi")?;
        assert_eq!(prefix.as_str(), "type#fi");
        assert_eq!(MatchIndex::ByType.name(), "byType");
        assert_eq!(r#Match::from_item(&item)?, record);
        Ok(())
    }
}

/// The syntax the derive's docs show compiles and means what they say.
mod accepted_syntax {
    use entity_manager::model::{Projection, ShardBump};
    use entity_manager::{Entity, Table};
    use serde::{Deserialize, Serialize};

    #[derive(Table)]
    #[table(entities(Listing, OldBumps))]
    struct Listings;

    /// `project = keys_only` (as the docs write `project = […] | keys_only`), the flag
    /// `keys_only`, and a bump list of two.
    #[derive(Entity, Serialize, Deserialize)]
    #[entity(table = Listings, unique = id, timestamp = created)]
    #[shard_bumps(bumps = [
        bump(timestamp = 1_000, char_bits = 2, chars = 1),
        bump(timestamp = 2_000, char_bits = 2, chars = 2),
    ])]
    #[index(name = "byCreated", range = created, project = keys_only)]
    #[index(name = "byPrice", range = price, keys_only)]
    #[index(name = "byTitle", range = title, project = [price])]
    struct Listing {
        #[transcode("string")]
        id: String,
        #[transcode("timestamp")]
        created: u64,
        #[transcode("int")]
        price: u32,
        #[transcode("string")]
        title: String,
    }

    /// The first bump syntax, `bump(…)` written directly, still works. Two of them trip clippy's
    /// `duplicated_attributes` (rust-clippy#13238; `char_bits = 2` twice): the `expect` proves
    /// the lint fires on this syntax, while `Listing` above (the `bumps = [...]` list, no
    /// `allow`) proves it does not fire on the list, under `cargo clippy -- -D warnings`.
    #[derive(Entity, Serialize, Deserialize)]
    #[entity(table = Listings, unique = id, timestamp = created)]
    #[expect(clippy::duplicated_attributes)]
    #[shard_bumps(
        bump(timestamp = 1_000, char_bits = 2, chars = 1),
        bump(timestamp = 2_000, char_bits = 2, chars = 2)
    )]
    struct OldBumps {
        #[transcode("string")]
        id: String,
        #[transcode("timestamp")]
        created: u64,
    }

    #[test]
    fn project_equals_keys_only_is_the_keys_only_flag() {
        let projections: Vec<(&str, &Projection)> = Listing::model()
            .indexes
            .iter()
            .map(|i| (&*i.name, &i.projection))
            .collect();
        assert_eq!(projections.len(), 3);
        assert_eq!(projections[0], ("byCreated", &Projection::KeysOnly));
        assert_eq!(projections[1], ("byPrice", &Projection::KeysOnly));
        assert!(
            matches!(projections[2], ("byTitle", Projection::Include(fields)) if fields.len() == 1 && fields[0] == "price")
        );
    }

    #[test]
    fn both_bump_syntaxes_give_one_schedule() {
        let expected = [
            ShardBump::UNSHARDED,
            ShardBump::new(1_000, 2, 1),
            ShardBump::new(2_000, 2, 2),
        ];
        assert_eq!(&*Listing::model().shard_bumps, &expected);
        assert_eq!(&*OldBumps::model().shard_bumps, &expected);
    }
}

/// `crate = …` on all three derives (issue 31): a crate that re-exports the runtime names it
/// under its own path, and `#[derive(Collection)]` honours it as `Entity` and `Table` do.
mod renamed_crate {
    use serde::{Deserialize, Serialize};

    /// The runtime under another path, as a re-exporting crate would give it.
    pub(crate) mod rt {
        pub(crate) use ::entity_manager as runtime;
    }

    #[derive(entity_manager::Table)]
    #[table(entities(Note, Tag), crate = crate::renamed_crate::rt::runtime)]
    struct Notes;

    #[derive(entity_manager::Entity, Serialize, Deserialize, Debug, PartialEq)]
    #[entity(table = Notes, unique = id, timestamp = created, crate = crate::renamed_crate::rt::runtime)]
    struct Note {
        #[transcode("string")]
        id: String,
        #[transcode("timestamp")]
        created: u64,
    }

    #[derive(entity_manager::Entity, Serialize, Deserialize, Debug, PartialEq)]
    #[entity(table = Notes, unique = id, timestamp = created, crate = crate::renamed_crate::rt::runtime)]
    struct Tag {
        #[transcode("string")]
        id: String,
        #[transcode("timestamp")]
        created: u64,
    }

    #[derive(entity_manager::Collection, Debug, PartialEq)]
    #[collection(crate = crate::renamed_crate::rt::runtime)]
    enum NotesAndTags {
        Note(Note),
        Tag(Tag),
    }

    #[test]
    fn a_collection_under_a_renamed_crate_path_knows_its_members()
    -> Result<(), entity_manager::Error> {
        use rt::runtime::EntityExt as _;
        use rt::runtime::query::Collection as _;
        let members = NotesAndTags::members()?;
        let tokens: Vec<&str> = members.iter().map(|m| m.model().token.as_ref()).collect();
        assert_eq!(
            tokens,
            [
                Note::schema()?.model().token.as_ref(),
                Tag::schema()?.model().token.as_ref()
            ]
        );
        let tag = Tag {
            id: "t1".into(),
            created: 5,
        };
        assert_eq!(
            NotesAndTags::from_member(1, &tag.to_item()?)?,
            NotesAndTags::Tag(tag)
        );
        Ok(())
    }
}
