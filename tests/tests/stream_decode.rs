//! Stream records decoded into typed changes: every field type through `to_item`, a synthetic
//! stream record in both shapes (the Streams API's and the Lambda event's) and every stream
//! view gives the record back; what changed; and 1,000 mutated records each give a typed error.

use std::collections::{BTreeMap, BTreeSet};

use entity_manager::model::KeyMode;
use entity_manager::store::StreamView;
use entity_manager::stream::{Change, ChangeError, ChangeKind, Image, StreamRecord};
use entity_manager::{AttributeValue, EntityExt, Item, Schema, Table};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRng;

mod stream_support;
use stream_support::{
    Account, Address, OPTIONAL_PLAIN, Order, Shop, ShopRecord, Tier, record, to_lambda, to_sdk,
};

fn fail(e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

/// Text without the table's delimiters (`|`, `#`, `!`), for key components.
const COMPONENT: &str = "[a-zA-Z0-9 _.éü-]{1,10}";

prop_compose! {
    fn account_with(id: String, created: u64)(
        name in COMPONENT,
        region in proptest::option::of(COMPONENT),
        score in -9_999_999_999_999_999i64..=9_999_999_999_999_999,
        micros in -9_000_000_000_000_000i64..9_000_000_000_000_000,
        active in any::<bool>(),
        big in any::<i64>(),
        logins in any::<u32>(),
        ratio in -1e12f64..1e12,
        history in proptest::collection::vec(".{0,6}", 0..4),
        counts in proptest::collection::btree_map("[a-z]{1,5}", any::<i64>(), 0..4),
        tags in proptest::collection::btree_set("[a-z]{1,5}", 1..4),
        pro in any::<bool>(),
        city in ".{0,8}",
        zip in proptest::option::of(any::<u32>()),
        note in proptest::option::of(".{0,8}"),
    ) -> Account {
        Account {
            account_id: id.clone(),
            created,
            name,
            region,
            score,
            // micro-units: at most 6 decimals, as `fix6` keeps
            #[allow(clippy::cast_precision_loss)]
            balance: micros as f64 / 1e6,
            active,
            big,
            logins,
            ratio,
            history,
            counts,
            tags,
            tier: if pro { Tier::Pro } else { Tier::Free },
            address: Address { city, zip },
            note,
        }
    }
}

/// Two versions of one account (same unique value and creation time, so one primary key),
/// created before or after the second shard bump.
fn account_pair() -> impl Strategy<Value = (Account, Account)> {
    (
        "[a-z0-9]{1,12}",
        prop_oneof![0u64..1_000_000, 1_000_000u64..9_999_999_999_999],
    )
        .prop_flat_map(|(id, created)| {
            (account_with(id.clone(), created), account_with(id, created))
        })
}

fn order_pair() -> impl Strategy<Value = (Order, Order)> {
    (
        -9_999_999_999_999_999i64..=9_999_999_999_999_999,
        0u64..9_999_999_999_999,
        (
            COMPONENT,
            -1e9f64..1e9,
            proptest::collection::vec(".{0,5}", 0..3),
        ),
        (
            COMPONENT,
            -1e9f64..1e9,
            proptest::collection::vec(".{0,5}", 0..3),
        ),
    )
        .prop_map(|(order_no, created, a, b)| {
            let make = |(account_id, total, lines): (String, f64, Vec<String>)| Order {
                order_no,
                created,
                account_id,
                total,
                lines,
            };
            (make(a), make(b))
        })
}

/// The images of a change of `kind` from `old` to `new`.
fn images<'a>(
    kind: ChangeKind,
    old: &'a Item,
    new: &'a Item,
) -> (Option<&'a Item>, Option<&'a Item>) {
    match kind {
        ChangeKind::Insert => (None, Some(new)),
        ChangeKind::Modify => (Some(old), Some(new)),
        ChangeKind::Remove => (Some(old), None),
    }
}

/// `record` through both shapes, back as `StreamRecord`s.
fn shapes(record: &StreamRecord) -> Result<Vec<(&'static str, StreamRecord)>, TestCaseError> {
    let sdk = StreamRecord::try_from(to_sdk(record)).map_err(fail)?;
    let lambda = StreamRecord::try_from(to_lambda(record).map_err(fail)?).map_err(fail)?;
    Ok(vec![("streams api", sdk), ("lambda", lambda)])
}

const KINDS: [ChangeKind; 3] = [ChangeKind::Insert, ChangeKind::Modify, ChangeKind::Remove];

/// For every kind, view and shape, `decode` gives back exactly the images the view carries, as
/// `T`, with the record's key.
fn round_trip<T, R>(old: &R, new: &R, wrap: impl Fn(R) -> T) -> Result<(), TestCaseError>
where
    T: entity_manager::stream::Routed + PartialEq + std::fmt::Debug,
    R: EntityExt + serde::Serialize + Clone,
{
    let (old_item, new_item) = (old.to_item().map_err(fail)?, new.to_item().map_err(fail)?);
    for kind in KINDS {
        for view in StreamView::ALL {
            let (o, n) = images(kind, &old_item, &new_item);
            let synthetic = record(kind, o, n, view, 7);
            for (shape, record) in shapes(&synthetic)? {
                let change = Change::<T>::decode(&record)
                    .map_err(|e| fail(format!("{shape} {kind} {view:?}: {e}")))?;
                let carries_old =
                    matches!(view, StreamView::OldImage | StreamView::NewAndOldImages);
                let carries_new =
                    matches!(view, StreamView::NewImage | StreamView::NewAndOldImages);
                let want_old =
                    (carries_old && kind != ChangeKind::Insert).then(|| wrap(old.clone()));
                let want_new =
                    (carries_new && kind != ChangeKind::Remove).then(|| wrap(new.clone()));
                prop_assert_eq!(change.kind, kind);
                prop_assert_eq!(&change.entity, &*R::model().token);
                prop_assert_eq!(&change.key, &R::primary_key(new).map_err(fail)?);
                prop_assert_eq!(change.old, want_old, "{} {} {:?}", shape, kind, view);
                prop_assert_eq!(change.new, want_new, "{} {} {:?}", shape, kind, view);
                prop_assert_eq!(
                    change.sequence_number.as_deref(),
                    Some("000000000000000000007")
                );
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Accounts (every field type), as the entity itself and as the table's enum.
    #[test]
    fn accounts_decode_back_in_every_view_and_shape((old, new) in account_pair()) {
        round_trip::<Account, Account>(&old, &new, |a| a)?;
        round_trip::<ShopRecord, Account>(&old, &new, ShopRecord::Account)?;
    }

    /// Orders (an `int` unique property), as the entity and as the table's enum.
    #[test]
    fn orders_decode_back_in_every_view_and_shape((old, new) in order_pair()) {
        round_trip::<Order, Order>(&old, &new, |o| o)?;
        round_trip::<ShopRecord, Order>(&old, &new, ShopRecord::Order)?;
    }

    /// What changed in a modify: the fields whose values differ (the oracle compares the two
    /// records as JSON, field by field) and the generated keys whose values differ.
    #[test]
    fn changed_fields_are_the_fields_that_differ((old, new) in account_pair(), same in any::<bool>()) {
        let new = if same { old.clone() } else { new };
        let (old_item, new_item) = (old.to_item().map_err(fail)?, new.to_item().map_err(fail)?);
        let r = record(ChangeKind::Modify, Some(&old_item), Some(&new_item), StreamView::NewAndOldImages, 1);
        let change = Change::<ShopRecord>::decode(&r).map_err(fail)?;
        let as_json = |a: &Account| serde_json::to_value(a).map_err(fail);
        let (a, b) = (as_json(&old)?, as_json(&new)?);
        let names: BTreeSet<&String> = a.as_object().into_iter().chain(b.as_object()).flat_map(|m| m.keys()).collect();
        let want: Vec<String> = names.into_iter().filter(|k| a.get(*k) != b.get(*k)).cloned().collect();
        prop_assert_eq!(change.changed_fields(), &want[..]);
        let f = Account::FIELDS;
        prop_assert_eq!(change.changed(f.score), old.score != new.score);
        prop_assert_eq!(change.changed(f.tags), old.tags != new.tags);
        prop_assert_eq!(change.changed(f.region), old.region != new.region);
        // a field of the other entity never matches
        prop_assert!(!change.changed(Order::FIELDS.total));
        let keys: Vec<String> = ["regionHashKey", "scoreRangeKey"]
            .into_iter()
            .filter(|k| old_item.get(*k) != new_item.get(*k))
            .map(str::to_owned)
            .collect();
        prop_assert_eq!(change.changed_keys(), &keys[..]);
        // the images are the records
        prop_assert_eq!(change.old, Some(ShopRecord::Account(old)));
        prop_assert_eq!(change.new, Some(ShopRecord::Account(new)));
    }
}

#[test]
fn keys_only_gives_the_key_unique_value_and_shard() -> Result<(), Box<dyn std::error::Error>> {
    let order = stream_support::order(-42, 5, "a");
    let item = order.to_item()?;
    let r = record(
        ChangeKind::Remove,
        Some(&item),
        None,
        StreamView::KeysOnly,
        3,
    );
    let change = Change::<ShopRecord>::decode(&r)?;
    assert_eq!((&change.old, &change.new), (&None, &None));
    assert_eq!(change.unique(), &AttributeValue::N("-42".into()));
    let hash_key = stream_support::text(&item, "hashKey");
    assert_eq!(format!("order!{}", change.shard()), hash_key);
    assert_eq!(change.key, Order::primary_key(&order)?);
    Ok(())
}

/// A schema built at run time (the CLI's) decodes the same records into items without keys.
#[test]
fn items_decode_against_a_runtime_schema() -> Result<(), Box<dyn std::error::Error>> {
    let schema = Shop::schema()?;
    let account = Account {
        region: Some("eu".into()),
        note: Some("n".into()),
        ..stream_support::account("a1", 2_000_000, 3)
    };
    let item = account.to_item()?;
    let r = record(
        ChangeKind::Insert,
        None,
        Some(&item),
        StreamView::NewImage,
        1,
    );
    let change = Change::decode_items(schema, &r)?;
    let stripped: Item = serde_dynamo::to_item(&account)?;
    assert_eq!(change.new, Some(stripped));
    assert_eq!(change.entity, "account");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// bad input

/// What a mutation did, and which error it must give.
#[derive(Clone, Copy, Debug)]
enum Mutation {
    WrongToken,
    MissingKey,
    OtherKeyMode,
    TruncatedImage,
    WrongType,
    BadEventName,
    ImageOfWrongKind,
    MissingPromisedImage,
}

const MUTATIONS: [Mutation; 8] = [
    Mutation::WrongToken,
    Mutation::MissingKey,
    Mutation::OtherKeyMode,
    Mutation::TruncatedImage,
    Mutation::WrongType,
    Mutation::BadEventName,
    Mutation::ImageOfWrongKind,
    Mutation::MissingPromisedImage,
];

fn pick<'a, T>(rng: &mut TestRng, items: &'a [T]) -> &'a T {
    &items[rng.random_range(0..items.len())]
}

/// `value` as another type than its own.
fn retyped(value: &AttributeValue) -> AttributeValue {
    match value {
        AttributeValue::S(_) => AttributeValue::Bool(true),
        AttributeValue::Bool(_) => AttributeValue::N("1".into()),
        // numbers, lists, maps, sets
        _ => AttributeValue::S("x".into()),
    }
}

/// The item keyed as a table in the other key mode writes it.
fn other_mode_keys(item: &Item, token: &str) -> Result<Item, Box<dyn std::error::Error>> {
    let schema = Shop::schema()?;
    let mut table = schema.table().clone();
    table.key_mode = match table.key_mode {
        KeyMode::Transcoded => KeyMode::TypeScript,
        KeyMode::TypeScript => KeyMode::Transcoded,
    };
    let other = Schema::new(table, schema.entities().to_vec())?;
    let entity = other.entity(token)?;
    Ok(entity.refresh_keys(&entity.remove_keys(item))?)
}

/// 1,000 mutated records (both entities, every view, both shapes): each gives a typed error,
/// naming the entity when its token is known and the record's keys; none panics.
#[test]
#[allow(clippy::too_many_lines)] // one loop: make a record, mutate it, check the error
fn a_thousand_mutated_records_each_give_a_typed_error() -> Result<(), Box<dyn std::error::Error>> {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for n in 0..1000 {
        let (old, new, token) = if n % 2 == 0 {
            let (a, b) = account_pair()
                .new_tree(&mut runner)
                .map_err(|e| e.to_string())?
                .current();
            (a.to_item()?, b.to_item()?, "account")
        } else {
            let (a, b) = order_pair()
                .new_tree(&mut runner)
                .map_err(|e| e.to_string())?
                .current();
            (a.to_item()?, b.to_item()?, "order")
        };
        let rng = runner.rng();
        let mutation = MUTATIONS[n % MUTATIONS.len()];
        let kind = *pick(rng, &KINDS);
        // mutations of an image need a view that carries it
        let views: &[StreamView] = match mutation {
            Mutation::TruncatedImage
            | Mutation::WrongType
            | Mutation::ImageOfWrongKind
            | Mutation::MissingPromisedImage => &[StreamView::NewAndOldImages],
            _ => &StreamView::ALL,
        };
        let view = *pick(rng, views);
        let (o, nw) = images(kind, &old, &new);
        let mut r = record(kind, o, nw, view, n as u64);
        let mut lambda_event_name: Option<&str> = None;
        let image = match (&mut r.old_image, &mut r.new_image) {
            (Some(i), _) if kind == ChangeKind::Remove || rng.random_bool(0.5) => Some(i),
            (_, Some(i)) | (Some(i), None) => Some(i),
            (None, None) => None,
        };
        let expect_entity = match mutation {
            Mutation::WrongToken => {
                let bad = |v: &mut Item| {
                    if let Some(AttributeValue::S(h)) = v.get_mut("hashKey") {
                        *h = h.replacen(token, "zzz", 1);
                    }
                };
                bad(&mut r.keys);
                r.old_image.as_mut().map(bad);
                r.new_image.as_mut().map(bad);
                false
            }
            Mutation::MissingKey => {
                let key = *pick(rng, &["hashKey", "rangeKey"]);
                r.keys.remove(key);
                false
            }
            Mutation::OtherKeyMode => {
                // the keys and images as a table in the other key mode writes them; the
                // account's string unique value keeps its range key, so its generated `int`
                // key must tell, which needs an image
                let source = new.clone();
                let other = other_mode_keys(&source, token)?;
                r = record(
                    ChangeKind::Insert,
                    None,
                    Some(&other),
                    if token == "account" {
                        StreamView::NewImage
                    } else {
                        view
                    },
                    1,
                );
                true
            }
            Mutation::TruncatedImage => {
                let image = image.ok_or("no image")?;
                let names: Vec<String> = image
                    .keys()
                    .filter(|k| !OPTIONAL_PLAIN.contains(&k.as_str()))
                    .cloned()
                    .collect();
                image.remove(pick(rng, &names).as_str());
                true
            }
            Mutation::WrongType => {
                let image = image.ok_or("no image")?;
                let names: Vec<String> = image
                    .keys()
                    .filter(|k| !matches!(k.as_str(), "hashKey" | "rangeKey"))
                    .cloned()
                    .collect();
                let name = pick(rng, &names).clone();
                let value = retyped(&image[name.as_str()]);
                image.insert(name, value);
                true
            }
            Mutation::BadEventName => {
                lambda_event_name = Some("UPSERT");
                false
            }
            Mutation::ImageOfWrongKind => {
                // an old image on an insert, or a new image on a remove
                r = match kind {
                    ChangeKind::Remove => record(ChangeKind::Remove, Some(&old), None, view, 1)
                        .with_new_image(new.clone()),
                    _ => record(ChangeKind::Insert, None, Some(&new), view, 1)
                        .with_old_image(old.clone()),
                };
                false
            }
            Mutation::MissingPromisedImage => {
                match kind {
                    ChangeKind::Remove => r.old_image = None,
                    _ => r.new_image = None,
                }
                true
            }
        };
        let result = if n % 4 < 2 {
            let mut event = stream_support::to_lambda_json(&r);
            if let Some(name) = lambda_event_name {
                event["eventName"] = serde_json::json!(name);
            }
            let event: entity_manager::stream::aws_lambda_events::event::dynamodb::EventRecord =
                serde_json::from_value(event)?;
            StreamRecord::try_from(event).and_then(|r| Change::<ShopRecord>::decode(&r))
        } else {
            let mut sdk = to_sdk(&r);
            if lambda_event_name.is_some() {
                sdk.event_name = Some(aws_sdk_dynamodbstreams::types::OperationType::from(
                    "UPSERT",
                ));
            }
            StreamRecord::try_from(sdk).and_then(|r| Change::<ShopRecord>::decode(&r))
        };
        let err = match result {
            Ok(change) => {
                return Err(format!(
                    "mutation {mutation:?} #{n} ({kind} {view:?}) decoded: {change:?}"
                )
                .into());
            }
            Err(e) => e,
        };
        let keys = err
            .keys()
            .ok_or_else(|| format!("{mutation:?}: no keys in {err}"))?;
        if !matches!(mutation, Mutation::MissingKey | Mutation::WrongToken) {
            assert_eq!(keys.item().get("hashKey"), r.keys.get("hashKey"), "{err}");
        }
        if expect_entity {
            assert_eq!(err.entity(), Some(token), "{mutation:?}: {err}");
            assert!(err.to_string().contains(token), "{err}");
        }
        match (mutation, &err) {
            (Mutation::WrongToken, ChangeError::UnknownEntity { token: t, .. }) => {
                assert!(t.starts_with("zzz"), "{err}");
            }
            (Mutation::MissingKey, ChangeError::MissingKey { .. })
            | (Mutation::OtherKeyMode, ChangeError::Key { .. } | ChangeError::KeyMismatch { .. })
            | (
                Mutation::TruncatedImage | Mutation::WrongType,
                ChangeError::Decode { .. } | ChangeError::KeyMismatch { .. },
            )
            | (
                Mutation::BadEventName | Mutation::ImageOfWrongKind,
                ChangeError::Malformed { .. },
            ) => {}
            (Mutation::MissingPromisedImage, ChangeError::MissingImage { image, .. }) => {
                assert_eq!(
                    *image,
                    if kind == ChangeKind::Remove {
                        Image::Old
                    } else {
                        Image::New
                    }
                );
            }
            _ => return Err(format!("mutation {mutation:?}: unexpected error {err:?}").into()),
        }
        *counts.entry(format!("{mutation:?}")).or_default() += 1;
    }
    assert_eq!(counts.values().sum::<usize>(), 1000);
    assert_eq!(counts.len(), MUTATIONS.len());
    Ok(())
}

/// A record of an entity the decoder does not cover is an error naming the token, never
/// another entity's record.
#[test]
fn a_single_entity_decoder_refuses_other_entities() -> Result<(), Box<dyn std::error::Error>> {
    let order = stream_support::order(1, 1, "a");
    let item = order.to_item()?;
    let r = record(
        ChangeKind::Insert,
        None,
        Some(&item),
        StreamView::NewImage,
        1,
    );
    let err = Change::<Account>::decode(&r)
        .err()
        .ok_or("an order decoded as an account")?;
    assert!(
        matches!(&err, ChangeError::UnknownEntity { token, known, .. } if token == "order" && known == "account"),
        "{err}"
    );
    assert_eq!(Change::<Order>::decode(&r)?.new, Some(order));
    Ok(())
}

/// A removal by Time to Live (user identity: the DynamoDB service) is told apart from a delete,
/// in both shapes.
#[test]
fn removals_by_time_to_live_are_marked_expired() -> Result<(), Box<dyn std::error::Error>> {
    let order = stream_support::order(5, 9, "a");
    let item = order.to_item()?;
    let r = record(
        ChangeKind::Remove,
        Some(&item),
        None,
        StreamView::OldImage,
        4,
    );
    for ttl in [false, true] {
        let mut sdk = to_sdk(&r);
        let mut event = stream_support::to_lambda_json(&r);
        if ttl {
            sdk.user_identity = Some(
                aws_sdk_dynamodbstreams::types::Identity::builder()
                    .r#type("Service")
                    .principal_id("dynamodb.amazonaws.com")
                    .build(),
            );
            event["userIdentity"] =
                serde_json::json!({ "type": "Service", "principalId": "dynamodb.amazonaws.com" });
        }
        let lambda: entity_manager::stream::aws_lambda_events::event::dynamodb::EventRecord =
            serde_json::from_value(event)?;
        for record in [
            StreamRecord::try_from(sdk)?,
            StreamRecord::try_from(lambda)?,
        ] {
            let change = Change::<Order>::decode(&record)?;
            assert_eq!(change.expired, ttl);
            assert_eq!(change.old.as_ref(), Some(&order));
        }
    }
    Ok(())
}
