//! Model-based property test of the typed entity operations: random sequences of create,
//! update (rename, set or clear a phone, atomic add), replace, move and delete, run against a
//! store and against a plain map of records (the model).
//!
//! After every step, every record of the model is stored as exactly `to_item` of it (its
//! generated keys and version included), nothing else is stored, and every index query finds
//! exactly the model's records. 512 cases on `MemoryStore`; a short run on `DynamoDB` Local
//! when `DYNAMODB_ENDPOINT` is set.
#![allow(clippy::struct_field_names)] // fields are named after their attributes

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use entity_manager::field::Changes;
use entity_manager::store::{MemoryStore, RangeCondition, Store};
use entity_manager::{AttributeValue, EntityExt, Error, Item};
use proptest::prelude::*;
use proptest::strategy::ValueTree as _;

mod entity_support;
mod store_support;

use entity_support::{Member, MemberIndex, assert_stored, definition, member_ids};

type BoxError = Box<dyn std::error::Error>;

/// One step. Ids, names and timestamps come from small sets, so that steps collide: a create of
/// an existing id, a move onto one, equal names across shards.
#[derive(Clone, Debug)]
enum Op {
    Create {
        id: u8,
        created: u64,
        last: u8,
        phone: Option<u8>,
    },
    Rename {
        id: u8,
        last: u8,
    },
    Phone {
        id: u8,
        phone: Option<u8>,
    },
    Add {
        id: u8,
        n: u8,
    },
    Replace {
        id: u8,
        first: u8,
    },
    Move {
        id: u8,
        to: u8,
        created: u64,
    },
    Delete {
        id: u8,
    },
}

fn created() -> impl Strategy<Value = u64> {
    // one timestamp under each of the three bumps
    prop_oneof![Just(500_u64), Just(1_500), Just(2_500)]
}

fn op() -> impl Strategy<Value = Op> {
    let id = 0_u8..5;
    prop_oneof![
        3 => (id.clone(), created(), 0_u8..3, proptest::option::of(0_u8..3))
            .prop_map(|(id, created, last, phone)| Op::Create { id, created, last, phone }),
        2 => (id.clone(), 0_u8..3).prop_map(|(id, last)| Op::Rename { id, last }),
        2 => (id.clone(), proptest::option::of(0_u8..3)).prop_map(|(id, phone)| Op::Phone { id, phone }),
        1 => (id.clone(), 1_u8..4).prop_map(|(id, n)| Op::Add { id, n }),
        1 => (id.clone(), 0_u8..3).prop_map(|(id, first)| Op::Replace { id, first }),
        1 => (id.clone(), id.clone(), created()).prop_map(|(id, to, created)| Op::Move { id, to, created }),
        1 => id.prop_map(|id| Op::Delete { id }),
    ]
}

fn name(prefix: &str, n: u8) -> String {
    format!("{prefix}{n}")
}

type Model = BTreeMap<String, Member>;

/// Applies one step to the store and to the model; the store's answer must be the one the
/// model predicts.
#[allow(clippy::too_many_lines, reason = "one arm per operation")]
async fn step<S: Store>(store: &S, model: &mut Model, op: &Op) -> Result<(), BoxError> {
    let f = Member::FIELDS;
    match op {
        Op::Create {
            id,
            created,
            last,
            phone,
        } => {
            let id = name("m", *id);
            let record = Member {
                member_id: id.clone(),
                created: *created,
                first_name: "first".into(),
                last_name: name("last", *last),
                phone: phone.map(|p| name("555-", p)),
                logins: 0,
                tags: Vec::new(),
                version: 0,
            };
            let result = record.create(store).await;
            match model.entry(id) {
                Entry::Occupied(_) => assert!(
                    matches!(result, Err(Error::AlreadyExists { .. })),
                    "{result:?}"
                ),
                Entry::Vacant(slot) => {
                    result?;
                    slot.insert(Member {
                        version: 1,
                        ..record
                    });
                }
            }
        }
        Op::Rename { id, last } => {
            let id = name("m", *id);
            let got = Member::update(
                store,
                &id,
                Changes::new().set(f.last_name, name("last", *last)),
            )
            .await?;
            let expected = model.get_mut(&id).map(|m| {
                m.last_name = name("last", *last);
                m.version += 1;
                m.clone()
            });
            assert_eq!(got, expected);
        }
        Op::Phone { id, phone } => {
            let id = name("m", *id);
            let phone = phone.map(|p| name("555-", p));
            let got = Member::update(
                store,
                &id,
                Changes::new().set_option(f.phone, phone.clone()),
            )
            .await?;
            let expected = model.get_mut(&id).map(|m| {
                m.phone = phone;
                m.version += 1;
                m.clone()
            });
            assert_eq!(got, expected);
        }
        Op::Add { id, n } => {
            let id = name("m", *id);
            let got =
                Member::update(store, &id, Changes::new().add(f.logins, u64::from(*n))).await?;
            let expected = model.get_mut(&id).map(|m| {
                m.logins += u64::from(*n);
                m.version += 1;
                m.clone()
            });
            assert_eq!(got, expected);
        }
        Op::Replace { id, first } => {
            let id = name("m", *id);
            if let Some(m) = model.get_mut(&id) {
                let mut replacement = m.clone();
                replacement.first_name = name("first", *first);
                replacement.put(store).await?;
                *m = Member {
                    version: m.version + 1,
                    ..replacement
                };
            }
        }
        Op::Move { id, to, created } => {
            let (id, to) = (name("m", *id), name("m", *to));
            let Some(old) = model.get(&id).cloned() else {
                let e = Member::move_record(
                    store,
                    &id,
                    &Member {
                        member_id: to,
                        created: *created,
                        ..fresh()
                    },
                )
                .await
                .err()
                .ok_or("a move of a missing record succeeded")?;
                assert!(matches!(e, Error::NotFound { .. }), "{e}");
                return Ok(());
            };
            let moved = Member {
                member_id: to.clone(),
                created: *created,
                ..old
            };
            let result = Member::move_record(store, &id, &moved).await;
            if to != id && model.contains_key(&to) {
                assert!(
                    matches!(result, Err(Error::AlreadyExists { .. })),
                    "{result:?}"
                );
            } else {
                result?;
                model.remove(&id);
                model.insert(
                    to,
                    Member {
                        version: moved.version + 1,
                        ..moved
                    },
                );
            }
        }
        Op::Delete { id } => {
            let id = name("m", *id);
            let got = Member::delete(store, &id).await?;
            assert_eq!(got, model.remove(&id));
        }
    }
    Ok(())
}

fn fresh() -> Member {
    Member {
        member_id: String::new(),
        created: 0,
        first_name: "first".into(),
        last_name: "last".into(),
        phone: None,
        logins: 0,
        tags: Vec::new(),
        version: 0,
    }
}

/// The ids an index query finds, sorted (every page).
/// The store holds exactly the model.
async fn check<S: Store>(
    store: &S,
    model: &Model,
    items: Option<Vec<Item>>,
) -> Result<(), BoxError> {
    for record in model.values() {
        assert_stored(store, record).await?;
    }
    if let Some(items) = items {
        assert_eq!(items.len(), model.len(), "nothing else is stored");
    }
    let all: Vec<String> = model.keys().cloned().collect();
    assert_eq!(
        member_ids(store, MemberIndex::LastName, None, 3).await?,
        all
    );
    let with_phone: Vec<String> = model
        .values()
        .filter(|m| m.phone.is_some())
        .map(|m| m.member_id.clone())
        .collect();
    assert_eq!(
        member_ids(store, MemberIndex::Phone, None, 3).await?,
        with_phone
    );
    for last in 0..3 {
        let prefix = Member::name_range_key().last_name(&name("last", last))?;
        let found = member_ids(
            store,
            MemberIndex::LastName,
            Some(RangeCondition::BeginsWith(AttributeValue::S(
                prefix.as_str().to_owned(),
            ))),
            3,
        )
        .await?;
        let expected: Vec<String> = model
            .values()
            .filter(|m| m.last_name == name("last", last))
            .map(|m| m.member_id.clone())
            .collect();
        assert_eq!(found, expected, "lastName = last{last}");
    }
    Ok(())
}

fn run_on_memory(ops: &[Op]) -> Result<(), BoxError> {
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    runtime.block_on(async {
        let store = MemoryStore::new(definition()?);
        let mut model = Model::new();
        for op in ops {
            step(&store, &mut model, op).await?;
            check(&store, &model, Some(store.items())).await?;
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn every_step_keeps_the_store_equal_to_the_model_on_memory(
        ops in proptest::collection::vec(op(), 1..24)
    ) {
        run_on_memory(&ops).map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
}

#[tokio::test]
async fn every_step_keeps_the_store_equal_to_the_model_on_dynamodb() -> Result<(), BoxError> {
    let Some(store) = store_support::dynamo_store("model", definition()?).await? else {
        return Ok(());
    };
    // a fixed, seeded run: 6 sequences of 16 steps
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = proptest::collection::vec(op(), 16);
    let result = async {
        for _ in 0..6 {
            let ops = strategy
                .new_tree(&mut runner)
                .map_err(|e| e.to_string())?
                .current();
            let mut model = Model::new();
            for op in &ops {
                step(&store, &mut model, op).await?;
                check(&store, &model, None).await?;
            }
            // clean up for the next sequence
            for id in model.keys() {
                Member::delete(&store, id).await?;
            }
        }
        Ok::<(), BoxError>(())
    }
    .await;
    store.delete_table().await?;
    result
}
