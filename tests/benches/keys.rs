//! Key building and transcodes, each against a hand-written baseline measured in the same run.
//!
//! - `to_item`: a `User` struct → a DynamoDB item with every key (`EntityExt::to_item`: serde_dynamo
//!   plus the key core) against `serde_dynamo::to_item` plus the same keys written with `format!`.
//! - `add_keys`: the key part alone, on a prepared item without keys (`EntitySchema::add_keys`
//!   and `refresh_keys`) against the `format!` keys inserted into a clone of the same item.
//! - `transcode_*`: every default transcode, typed (`Transcode<T>`) and dynamic (`Transcoder`
//!   over attribute values), encode and decode, against `format!` / `str::parse`.
//!
//! Before anything is timed, the baselines are checked to produce exactly the items the library
//! produces, for every generated user. At the end of a measuring run (`cargo bench`), the medians
//! of this run and their ratios are printed as a Markdown table (see BENCHMARKS.md).
//!
//! ```text
//! cargo bench -p entity-manager-tests --bench keys -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! With `KEYS_CALLGRIND=<routine>` set, the binary instead runs one key routine a fixed number of
//! times for `valgrind --tool=callgrind`, whose instruction counts do not depend on the load of
//! the machine (see `run_for_callgrind` and BENCHMARKS.md).

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use criterion::{BenchmarkGroup, Criterion, Throughput, measurement::WallTime};
use entity_manager::transcode::{
    self, BigInt20, Boolean, Fix6, Int, Str, Timestamp, Transcode, Transcoder,
};
use entity_manager::{AttributeValue, Entity, EntityExt, Item, Table};
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------------------------
// The seed's User service (tests/tests/derive.rs), with one more sharded generated property so
// that the entity has two sharded (`userHashKey`, `userBeneficiaryHashKey`) and two unsharded
// (`firstNameRangeKey`, `lastNameRangeKey`) generated properties.

/// The User service table, product shard space.
#[derive(Table, Debug)]
#[table(entities(User, Email))]
struct UserService;

/// A user of the User service.
#[allow(clippy::struct_field_names)] // `user_id`
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = UserService, token = "user", unique = user_id, timestamp = created)]
#[shard_bumps(bumps = [
    bump(timestamp = 1_726_880_933_000, char_bits = 2, chars = 1),
    bump(timestamp = 1_735_689_600_000, char_bits = 3, chars = 2),
])]
#[generated(name = user_hash_key, components = [user_id], sharded)]
#[generated(name = user_beneficiary_hash_key, components = [beneficiary_id], sharded)]
#[generated(name = first_name_range_key, components = [first_name_canonical, last_name_canonical, created])]
#[generated(name = last_name_range_key, components = [last_name_canonical, first_name_canonical, created])]
#[index(name = "created", range = created)]
#[index(name = "firstName", range = first_name_range_key)]
#[index(name = "lastName", range = last_name_range_key)]
#[index(name = "phone", range = phone)]
#[index(name = "updated", range = updated)]
#[index(name = "userCreated", hash = user_hash_key, range = created)]
#[index(name = "userBeneficiaryCreated", hash = user_beneficiary_hash_key, range = created, project = [some_property, some_other_property])]
#[index(name = "userBeneficiaryFirstName", hash = user_beneficiary_hash_key, range = first_name_range_key, keys_only)]
#[index(name = "userBeneficiaryLastName", hash = user_beneficiary_hash_key, range = last_name_range_key)]
#[index(name = "userBeneficiaryPhone", hash = user_beneficiary_hash_key, range = phone)]
#[index(name = "userBeneficiaryUpdated", hash = user_beneficiary_hash_key, range = updated)]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("timestamp")]
    updated: u64,
    #[transcode("string")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    beneficiary_id: Option<String>,
    first_name: String,
    #[transcode("string")]
    first_name_canonical: String,
    last_name: String,
    #[transcode("string")]
    last_name_canonical: String,
    #[transcode("string")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    phone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    some_property: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    some_other_property: Option<i64>,
}

/// An email address of a user.
#[allow(clippy::struct_field_names)] // `email`
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = UserService, token = "email", unique = email, timestamp = created)]
#[shard_bumps(bump(timestamp = 1_730_000_000_000, char_bits = 2, chars = 1))]
#[generated(name = user_hash_key, components = [user_id], sharded)]
#[index(name = "created", range = created)]
#[index(name = "userCreated", hash = user_hash_key, range = created)]
struct Email {
    #[transcode("string")]
    email: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    user_id: String,
}

// ---------------------------------------------------------------------------------------------
// Deterministic test data

/// How many users (and transcode values) one iteration processes.
const BATCH: usize = 512;

/// `SplitMix64`: a small deterministic generator, so that every run measures the same data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[usize::try_from(self.below(from.len() as u64)).unwrap_or(0)]
    }

    /// A 21-character nanoid, like the seed's `wf5yU_5f63gqauSOLpP5O`.
    fn nanoid(&mut self) -> String {
        const ALPHABET: &[u8; 64] =
            b"useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict";
        (0..21)
            .map(|_| char::from(ALPHABET[usize::try_from(self.below(64)).unwrap_or(0)]))
            .collect()
    }
}

const FIRST_NAMES: &[&str] = &[
    "Jason", "Maria", "Zoë", "Aarav", "Li", "Olivia", "Mateo", "Amara", "Noah", "Ingrid",
];
const LAST_NAMES: &[&str] = &[
    "Williscroft",
    "García",
    "Okafor",
    "Nguyen",
    "Smith",
    "Müller",
    "Kowalski",
    "Tanaka",
];

/// Users created between mid-2024 and late 2025: all three shard bumps of the schedule.
fn users() -> Vec<User> {
    let mut rng = Rng(0x5EED);
    (0..BATCH)
        .map(|i| {
            let created = 1_720_000_000_000 + rng.below(40_000_000_000);
            let first_name = rng.pick(FIRST_NAMES);
            let last_name = rng.pick(LAST_NAMES);
            User {
                user_id: rng.nanoid(),
                created,
                updated: created + rng.below(1_000_000_000),
                beneficiary_id: Some(rng.nanoid()),
                first_name: first_name.to_owned(),
                first_name_canonical: first_name.to_lowercase(),
                last_name: last_name.to_owned(),
                last_name_canonical: last_name.to_lowercase(),
                phone: (i % 2 == 0).then(|| format!("+1555{:07}", rng.below(10_000_000))),
                some_property: Some(format!("property {i}")),
                some_other_property: Some(i64::try_from(i).unwrap_or(0) * 1_000),
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The hand-written baseline: the same keys, with `format!`

/// `(timestamp, char_bits, chars)` of the `User` schedule, with the implied unsharded first bump.
const BUMPS: [(u64, u32, u32); 3] = [
    (0, 1, 0),
    (1_726_880_933_000, 2, 1),
    (1_735_689_600_000, 3, 2),
];

/// `user!<suffix>`: npm `string-hash` of the user id, modulo `chars × 2^char_bits` (the product
/// rule), in base `2^char_bits`, zero-padded to `chars` digits.
fn baseline_hash_key(user_id: &str, created: u64) -> String {
    const DIGITS: &[u8; 32] = b"0123456789abcdefghijklmnopqrstuv";
    let (_, char_bits, chars) = BUMPS
        .iter()
        .rev()
        .find(|(timestamp, _, _)| *timestamp <= created)
        .copied()
        .unwrap_or(BUMPS[0]);
    if chars == 0 {
        return "user!".to_owned();
    }
    let units: Vec<u16> = user_id.encode_utf16().collect();
    let hash = units
        .iter()
        .rev()
        .fold(5381u32, |h, &unit| h.wrapping_mul(33) ^ u32::from(unit));
    let radix = 1u32 << char_bits;
    let mut shard = hash % (chars * radix);
    let mut suffix = [b'0'; 2];
    for digit in suffix[..chars as usize].iter_mut().rev() {
        *digit = DIGITS[(shard % radix) as usize];
        shard /= radix;
    }
    let suffix = std::str::from_utf8(&suffix[..chars as usize]).unwrap_or_default();
    format!("user!{suffix}")
}

/// The keys of one user.
#[allow(clippy::struct_field_names)] // named after the attributes
struct BaselineKeys {
    hash_key: String,
    range_key: String,
    user_hash_key: String,
    user_beneficiary_hash_key: Option<String>,
    first_name_range_key: String,
    last_name_range_key: String,
}

impl BaselineKeys {
    fn new(
        user_id: &str,
        created: u64,
        beneficiary_id: Option<&str>,
        first: &str,
        last: &str,
    ) -> Self {
        let hash_key = baseline_hash_key(user_id, created);
        Self {
            range_key: format!("userId#{user_id}"),
            user_hash_key: format!("{hash_key}|userId#{user_id}"),
            user_beneficiary_hash_key: beneficiary_id
                .map(|beneficiary| format!("{hash_key}|beneficiaryId#{beneficiary}")),
            first_name_range_key: format!(
                "firstNameCanonical#{first}|lastNameCanonical#{last}|created#{created:013}"
            ),
            last_name_range_key: format!(
                "lastNameCanonical#{last}|firstNameCanonical#{first}|created#{created:013}"
            ),
            hash_key,
        }
    }

    fn of_user(user: &User) -> Self {
        Self::new(
            &user.user_id,
            user.created,
            user.beneficiary_id.as_deref(),
            &user.first_name_canonical,
            &user.last_name_canonical,
        )
    }

    /// Reads the components from an item without keys.
    fn of_item(item: &Item) -> Option<Self> {
        let s = |name: &str| match item.get(name) {
            Some(AttributeValue::S(s)) => Some(s.as_str()),
            _ => None,
        };
        let created = match item.get("created") {
            Some(AttributeValue::N(n)) => n.parse().ok()?,
            _ => return None,
        };
        Some(Self::new(
            s("userId")?,
            created,
            s("beneficiaryId"),
            s("firstNameCanonical")?,
            s("lastNameCanonical")?,
        ))
    }

    fn insert_into(self, item: &mut Item) {
        item.insert("hashKey".to_owned(), AttributeValue::S(self.hash_key));
        item.insert("rangeKey".to_owned(), AttributeValue::S(self.range_key));
        item.insert(
            "userHashKey".to_owned(),
            AttributeValue::S(self.user_hash_key),
        );
        if let Some(key) = self.user_beneficiary_hash_key {
            item.insert("userBeneficiaryHashKey".to_owned(), AttributeValue::S(key));
        }
        item.insert(
            "firstNameRangeKey".to_owned(),
            AttributeValue::S(self.first_name_range_key),
        );
        item.insert(
            "lastNameRangeKey".to_owned(),
            AttributeValue::S(self.last_name_range_key),
        );
    }
}

/// The baseline of `to_item`: serde_dynamo, then the `format!` keys.
fn baseline_to_item(user: &User) -> Option<Item> {
    let mut item: Item = serde_dynamo::to_item(user).ok()?;
    BaselineKeys::of_user(user).insert_into(&mut item);
    Some(item)
}

/// The baseline of `add_keys`: a copy of the item with the `format!` keys.
fn baseline_add_keys(item: &Item) -> Option<Item> {
    let mut keyed = item.clone();
    BaselineKeys::of_item(item)?.insert_into(&mut keyed);
    Some(keyed)
}

/// Both ways produce the same items for every user; checked before anything is timed.
fn check_baselines(users: &[User], items: &[Item]) {
    let Ok(schema) = User::schema() else {
        panic!("the User schema is invalid")
    };
    let mut sharded = [0usize; 3];
    for (user, item) in users.iter().zip(items) {
        let library = user.to_item();
        assert_eq!(library.as_ref().ok(), baseline_to_item(user).as_ref());
        let library = library.ok();
        let keyed = baseline_add_keys(item);
        assert_eq!(schema.add_keys(item).ok(), keyed);
        assert_eq!(schema.refresh_keys(item).ok(), keyed);
        assert_eq!(library, keyed);
        let suffix_len = match keyed.as_ref().and_then(|k| k.get("hashKey")) {
            Some(AttributeValue::S(hash_key)) => hash_key.len() - "user!".len(),
            other => panic!("no hash key: {other:?}"),
        };
        sharded[suffix_len] += 1;
    }
    // every bump of the schedule is exercised
    assert!(sharded.iter().all(|&n| n > 0), "{sharded:?}");
}

// ---------------------------------------------------------------------------------------------
// Benches

fn group<'c>(c: &'c mut Criterion, name: &str, elements: usize) -> BenchmarkGroup<'c, WallTime> {
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Elements(elements as u64));
    group
}

fn bench_keys(c: &mut Criterion, users: &[User], items: &[Item]) {
    let Ok(schema) = User::schema() else {
        panic!("the User schema is invalid")
    };

    let mut g = group(c, "to_item", users.len());
    g.bench_function("entity_manager", |b| {
        b.iter(|| {
            for user in users {
                black_box(black_box(user).to_item().ok());
            }
        });
    });
    g.bench_function("baseline", |b| {
        b.iter(|| {
            for user in users {
                black_box(baseline_to_item(black_box(user)));
            }
        });
    });
    g.finish();

    let mut g = group(c, "add_keys", items.len());
    g.bench_function("entity_manager", |b| {
        b.iter(|| {
            for item in items {
                black_box(schema.add_keys(black_box(item)).ok());
            }
        });
    });
    g.bench_function("baseline", |b| {
        b.iter(|| {
            for item in items {
                black_box(baseline_add_keys(black_box(item)));
            }
        });
    });
    g.finish();

    let mut g = group(c, "refresh_keys", items.len());
    g.bench_function("entity_manager", |b| {
        b.iter(|| {
            for item in items {
                black_box(schema.refresh_keys(black_box(item)).ok());
            }
        });
    });
    g.bench_function("baseline", |b| {
        b.iter(|| {
            for item in items {
                black_box(baseline_add_keys(black_box(item)));
            }
        });
    });
    g.finish();
}

/// One transcode, typed: `encode`/`decode` of `T` against `baseline_encode`/`baseline_decode`.
fn bench_typed<M, T>(
    c: &mut Criterion,
    name: &str,
    values: &[T],
    baseline_encode: fn(&T) -> String,
    baseline_decode: fn(&str) -> Option<T>,
) where
    M: Transcode<T>,
    T: PartialEq + std::fmt::Debug,
{
    let encoded: Vec<String> = values.iter().filter_map(|v| M::encode(v).ok()).collect();
    assert_eq!(encoded.len(), values.len(), "{name}: every value encodes");
    for (value, encoded) in values.iter().zip(&encoded) {
        assert_eq!(M::decode(encoded).as_ref().ok(), Some(value), "{name}");
        assert_eq!(
            baseline_decode(&baseline_encode(value)).as_ref(),
            Some(value),
            "{name} baseline"
        );
    }

    let mut g = group(c, &format!("transcode_typed_encode_{name}"), values.len());
    g.bench_function("entity_manager", |b| {
        b.iter(|| {
            for v in values {
                black_box(M::encode(black_box(v)).ok());
            }
        });
    });
    g.bench_function("baseline", |b| {
        b.iter(|| {
            for v in values {
                black_box(baseline_encode(black_box(v)));
            }
        });
    });
    g.finish();

    let baseline_encoded: Vec<String> = values.iter().map(baseline_encode).collect();
    let mut g = group(c, &format!("transcode_typed_decode_{name}"), values.len());
    g.bench_function("entity_manager", |b| {
        b.iter(|| {
            for s in &encoded {
                black_box(M::decode(black_box(s)).ok());
            }
        });
    });
    g.bench_function("baseline", |b| {
        b.iter(|| {
            for s in &baseline_encoded {
                black_box(baseline_decode(black_box(s)));
            }
        });
    });
    g.finish();
}

/// One transcode, dynamic: [`Transcoder`] over attribute values against a baseline that matches
/// the attribute type by hand.
fn bench_dynamic(
    c: &mut Criterion,
    name: &str,
    transcoder: &dyn Transcoder,
    values: &[AttributeValue],
    baseline_encode: fn(&AttributeValue) -> Option<String>,
    baseline_decode: fn(&str) -> Option<AttributeValue>,
) {
    let encoded: Vec<String> = values
        .iter()
        .filter_map(|v| transcoder.encode(v).ok())
        .collect();
    assert_eq!(encoded.len(), values.len(), "{name}: every value encodes");
    for (value, encoded) in values.iter().zip(&encoded) {
        assert_eq!(
            transcoder.decode(encoded).as_ref().ok(),
            Some(value),
            "{name}"
        );
        assert_eq!(
            baseline_encode(value).as_ref(),
            Some(encoded),
            "{name} baseline"
        );
        assert_eq!(
            baseline_decode(encoded).as_ref(),
            Some(value),
            "{name} baseline"
        );
    }

    let mut g = group(c, &format!("transcode_dynamic_encode_{name}"), values.len());
    g.bench_function("entity_manager", |b| {
        b.iter(|| {
            for v in values {
                black_box(transcoder.encode(black_box(v)).ok());
            }
        });
    });
    g.bench_function("baseline", |b| {
        b.iter(|| {
            for v in values {
                black_box(baseline_encode(black_box(v)));
            }
        });
    });
    g.finish();

    let mut g = group(c, &format!("transcode_dynamic_decode_{name}"), values.len());
    g.bench_function("entity_manager", |b| {
        b.iter(|| {
            for s in &encoded {
                black_box(transcoder.decode(black_box(s)).ok());
            }
        });
    });
    g.bench_function("baseline", |b| {
        b.iter(|| {
            for s in &encoded {
                black_box(baseline_decode(black_box(s)));
            }
        });
    });
    g.finish();
}

fn n(value: &AttributeValue) -> Option<&str> {
    match value {
        AttributeValue::N(n) => Some(n),
        _ => None,
    }
}

/// `p` + `width` digits, or `n` + the complement `10^width - |v|` (the `int`/`bigint20` layout).
fn signed(v: i128, width: usize, modulus: u128) -> String {
    if v < 0 {
        format!("n{:0width$}", modulus - v.unsigned_abs())
    } else {
        format!("p{v:0width$}")
    }
}

fn parse_signed(s: &str, modulus: u128) -> Option<i128> {
    let magnitude: u128 = s.get(1..)?.parse().ok()?;
    match s.as_bytes().first()? {
        b'p' => i128::try_from(magnitude).ok(),
        b'n' => i128::try_from(modulus - magnitude).ok().map(|m| -m),
        _ => None,
    }
}

/// `p`/`n`, 10 integer digits, `.`, 6 decimals; negative values as the complement `10^10 - |v|`.
/// Rounds with `f64::round` (fine for the six-decimal values measured here).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn fix6(v: f64) -> String {
    let micros = (v.abs() * 1e6).round() as u64;
    let (sign, digits) = if v < 0.0 && micros != 0 {
        ('n', 10_000_000_000_000_000 - micros)
    } else {
        ('p', micros)
    };
    format!("{sign}{:010}.{:06}", digits / 1_000_000, digits % 1_000_000)
}

#[allow(clippy::cast_precision_loss)]
fn parse_fix6(s: &str) -> Option<f64> {
    let int: u64 = s.get(1..11)?.parse().ok()?;
    let frac: u64 = s.get(12..)?.parse().ok()?;
    let digits = int * 1_000_000 + frac;
    match s.as_bytes().first()? {
        b'p' => Some(digits as f64 / 1e6),
        b'n' => Some(-((10_000_000_000_000_000 - digits) as f64 / 1e6)),
        _ => None,
    }
}

const INT_MODULUS: u128 = 10_000_000_000_000_000;
const BIGINT20_MODULUS: u128 = 100_000_000_000_000_000_000;

/// The values the transcode benches encode.
struct Data {
    strings: Vec<String>,
    timestamps: Vec<u64>,
    ints: Vec<i64>,
    fixes: Vec<f64>,
    bools: Vec<bool>,
    bigints: Vec<i128>,
}

fn transcode_data() -> Data {
    let mut rng = Rng(0x7C0DE);
    let strings: Vec<String> = (0..BATCH).map(|_| rng.nanoid()).collect();
    let timestamps: Vec<u64> = (0..BATCH)
        .map(|_| 1_700_000_000_000 + rng.below(100_000_000_000))
        .collect();
    let ints: Vec<i64> = (0..BATCH)
        .map(|_| i64::try_from(rng.below(2 * 10_000_000_000)).unwrap_or(0) - 10_000_000_000)
        .collect();
    // six-decimal values, which fix6 round-trips exactly
    #[allow(clippy::cast_precision_loss)]
    let fixes: Vec<f64> = ints.iter().map(|&i| i as f64 / 1e6).collect();
    let bools: Vec<bool> = (0..BATCH).map(|_| rng.below(2) == 1).collect();
    let bigints: Vec<i128> = (0..BATCH)
        .map(|_| (i128::from(rng.next()) - i128::from(rng.next())) * 5) // |v| < 10^20
        .collect();
    Data {
        strings,
        timestamps,
        ints,
        fixes,
        bools,
        bigints,
    }
}

fn bench_typed_transcodes(c: &mut Criterion, data: &Data) {
    let Data {
        strings,
        timestamps,
        ints,
        fixes,
        bools,
        bigints,
    } = data;
    bench_typed::<Str, String>(c, "string", strings, Clone::clone, |s| Some(s.to_owned()));
    bench_typed::<Timestamp, u64>(
        c,
        "timestamp",
        timestamps,
        |v| format!("{v:013}"),
        |s| s.parse().ok(),
    );
    bench_typed::<Int, i64>(
        c,
        "int",
        ints,
        |&v| signed(i128::from(v), 16, INT_MODULUS),
        |s| parse_signed(s, INT_MODULUS).and_then(|v| i64::try_from(v).ok()),
    );
    bench_typed::<Fix6, f64>(c, "fix6", fixes, |&v| fix6(v), parse_fix6);
    bench_typed::<Boolean, bool>(
        c,
        "boolean",
        bools,
        |&v| if v { "t" } else { "f" }.to_owned(),
        |s| match s {
            "t" => Some(true),
            "f" => Some(false),
            _ => None,
        },
    );
    bench_typed::<BigInt20, i128>(
        c,
        "bigint20",
        bigints,
        |&v| signed(v, 20, BIGINT20_MODULUS),
        |s| parse_signed(s, BIGINT20_MODULUS),
    );
}

fn bench_dynamic_transcodes(c: &mut Criterion, data: Data) {
    let Data {
        strings,
        timestamps,
        ints,
        fixes,
        bools,
        bigints,
    } = data;
    let attrs = |values: Vec<String>, f: fn(String) -> AttributeValue| -> Vec<AttributeValue> {
        values.into_iter().map(f).collect()
    };
    bench_dynamic(
        c,
        "string",
        transcode::STRING,
        &attrs(strings, AttributeValue::S),
        |v| match v {
            AttributeValue::S(s) => Some(s.clone()),
            _ => None,
        },
        |s| Some(AttributeValue::S(s.to_owned())),
    );
    bench_dynamic(
        c,
        "timestamp",
        transcode::TIMESTAMP,
        &attrs(
            timestamps.iter().map(ToString::to_string).collect(),
            AttributeValue::N,
        ),
        |v| n(v)?.parse::<u64>().ok().map(|v| format!("{v:013}")),
        |s| Some(AttributeValue::N(s.parse::<u64>().ok()?.to_string())),
    );
    bench_dynamic(
        c,
        "int",
        transcode::INT,
        &attrs(
            ints.iter().map(ToString::to_string).collect(),
            AttributeValue::N,
        ),
        |v| Some(signed(n(v)?.parse().ok()?, 16, INT_MODULUS)),
        |s| Some(AttributeValue::N(parse_signed(s, INT_MODULUS)?.to_string())),
    );
    bench_dynamic(
        c,
        "fix6",
        transcode::FIX6,
        &attrs(
            fixes.iter().map(ToString::to_string).collect(),
            AttributeValue::N,
        ),
        |v| Some(fix6(n(v)?.parse().ok()?)),
        |s| Some(AttributeValue::N(parse_fix6(s)?.to_string())),
    );
    bench_dynamic(
        c,
        "boolean",
        transcode::BOOLEAN,
        &bools
            .iter()
            .map(|&b| AttributeValue::Bool(b))
            .collect::<Vec<_>>(),
        |v| match v {
            AttributeValue::Bool(b) => Some(if *b { "t" } else { "f" }.to_owned()),
            _ => None,
        },
        |s| match s {
            "t" => Some(AttributeValue::Bool(true)),
            "f" => Some(AttributeValue::Bool(false)),
            _ => None,
        },
    );
    bench_dynamic(
        c,
        "bigint20",
        transcode::BIGINT20,
        &attrs(
            bigints.iter().map(ToString::to_string).collect(),
            AttributeValue::N,
        ),
        |v| Some(signed(n(v)?.parse().ok()?, 20, BIGINT20_MODULUS)),
        |s| {
            Some(AttributeValue::N(
                parse_signed(s, BIGINT20_MODULUS)?.to_string(),
            ))
        },
    );
}

// ---------------------------------------------------------------------------------------------
// The summary: medians of this run and their ratios, from criterion's own estimates

/// Where criterion writes its reports (its own rule, less the `cargo metadata` call).
fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return Path::new(&target).join("criterion");
    }
    // the bench runs from <target>/<profile>/deps/
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.parent()?.join("criterion")))
        .unwrap_or_else(|| PathBuf::from("target/criterion"))
}

/// `(group, function, median ns per iteration, elements per iteration)` of every benchmark
/// measured since `since`.
fn measured(dir: &Path, since: SystemTime, out: &mut Vec<(String, String, f64, f64)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        if path.file_name().is_some_and(|n| n == "new") {
            let fresh = std::fs::metadata(path.join("estimates.json"))
                .and_then(|m| m.modified())
                .is_ok_and(|t| t >= since);
            let read = |file: &str| -> Option<serde_json::Value> {
                serde_json::from_str(&std::fs::read_to_string(path.join(file)).ok()?).ok()
            };
            if let (true, Some(id), Some(estimates)) =
                (fresh, read("benchmark.json"), read("estimates.json"))
            {
                let median = estimates["median"]["point_estimate"].as_f64();
                let elements = id["throughput"]["Elements"].as_f64().unwrap_or(1.0);
                if let (Some(group), Some(function), Some(median)) =
                    (id["group_id"].as_str(), id["function_id"].as_str(), median)
                {
                    out.push((group.to_owned(), function.to_owned(), median, elements));
                }
            }
        } else {
            measured(&path, since, out);
        }
    }
}

fn print_ratios(since: SystemTime) {
    let mut results = Vec::new();
    measured(&criterion_dir(), since, &mut results);
    let mut groups: Vec<&str> = results.iter().map(|(g, ..)| g.as_str()).collect();
    groups.sort_unstable();
    groups.dedup();
    let per_element = |group: &str, function: &str| {
        results
            .iter()
            .find(|(g, f, ..)| g == group && f == function)
            .map(|(.., median, elements)| median / elements)
    };
    let mut table = String::from(
        "| bench | entity-manager median (ns/item) | baseline median (ns/item) | ratio |\n\
         |---|---:|---:|---:|\n",
    );
    let mut rows = 0;
    for group in groups {
        if let (Some(ours), Some(baseline)) = (
            per_element(group, "entity_manager"),
            per_element(group, "baseline"),
        ) {
            let _ = writeln!(
                table,
                "| {group} | {ours:.1} | {baseline:.1} | {:.2}× |",
                ours / baseline
            );
            rows += 1;
        }
    }
    if rows > 0 {
        println!("\nMedians of this run, per item, and ratio entity-manager / baseline:\n");
        print!("{table}");
    }
}

/// A key routine by name, on one user or its prepared item: what `KEYS_CALLGRIND` and the paired
/// measurement run.
fn routine(name: &str) -> Option<fn(&User, &Item)> {
    Some(match name {
        "to_item" => |user, _| drop(black_box(black_box(user).to_item().ok())),
        "baseline_to_item" => |user, _| drop(black_box(baseline_to_item(black_box(user)))),
        "add_keys" => |_, item| {
            drop(black_box(
                User::schema()
                    .and_then(|s| s.add_keys(black_box(item)))
                    .ok(),
            ));
        },
        "refresh_keys" => |_, item| {
            drop(black_box(
                User::schema()
                    .and_then(|s| s.refresh_keys(black_box(item)))
                    .ok(),
            ));
        },
        "baseline_add_keys" => |_, item| drop(black_box(baseline_add_keys(black_box(item)))),
        "none" => |_, _| {},
        _ => return None,
    })
}

/// Runs one routine over the users 20 times, without criterion, for an instruction count under
/// `valgrind --tool=callgrind` (deterministic, unlike the clock on a shared machine). `none`
/// runs only the set-up, to subtract. See BENCHMARKS.md.
fn run_for_callgrind(name: &str, users: &[User], items: &[Item]) {
    let Some(run) = routine(name) else {
        panic!(
            "KEYS_CALLGRIND={name}: expected to_item, baseline_to_item, add_keys, refresh_keys, \
             baseline_add_keys or none"
        );
    };
    for _ in 0..20 {
        for (user, item) in users.iter().zip(items) {
            run(user, item);
        }
    }
}

/// Nanoseconds per user of one pass of `run` over the batch.
fn time_pass(run: fn(&User, &Item), users: &[User], items: &[Item]) -> f64 {
    let started = Instant::now();
    for (user, item) in users.iter().zip(items) {
        run(user, item);
    }
    started.elapsed().as_secs_f64() * 1e9
        / f64::from(u32::try_from(users.len()).unwrap_or(u32::MAX))
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_unstable_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The key routines against their baselines in alternating passes over the batch (which one goes
/// first alternates too): the median of the per-pass ratios, which a change of machine load
/// between two criterion benches cannot skew. Printed after criterion's summary.
fn print_paired(users: &[User], items: &[Item]) {
    const ROUNDS: usize = 101;
    println!(
        "\nPaired: {ROUNDS} alternating passes over the {} users, medians per user, and the \
         median of the per-pass ratios:\n",
        users.len()
    );
    println!(
        "| bench | entity-manager median (ns/item) | baseline median (ns/item) | median ratio |"
    );
    println!("|---|---:|---:|---:|");
    for (name, baseline) in [
        ("to_item", "baseline_to_item"),
        ("add_keys", "baseline_add_keys"),
        ("refresh_keys", "baseline_add_keys"),
    ] {
        let (Some(ours), Some(theirs)) = (routine(name), routine(baseline)) else {
            continue;
        };
        for _ in 0..5 {
            time_pass(ours, users, items);
            time_pass(theirs, users, items);
        }
        let (mut a, mut b, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            let (x, y) = if round % 2 == 0 {
                let x = time_pass(ours, users, items);
                (x, time_pass(theirs, users, items))
            } else {
                let y = time_pass(theirs, users, items);
                (time_pass(ours, users, items), y)
            };
            a.push(x);
            b.push(y);
            ratios.push(x / y);
        }
        println!(
            "| {name} | {:.1} | {:.1} | {:.2}× |",
            median(&mut a),
            median(&mut b),
            median(&mut ratios)
        );
    }
}

fn main() {
    let users = users();
    let items: Vec<Item> = users
        .iter()
        .filter_map(|u| serde_dynamo::to_item(u).ok())
        .collect();
    assert_eq!(items.len(), users.len());
    check_baselines(&users, &items);

    if let Ok(routine) = std::env::var("KEYS_CALLGRIND") {
        run_for_callgrind(&routine, &users, &items);
        return;
    }
    let since = SystemTime::now();
    let mut c = Criterion::default().configure_from_args();
    bench_keys(&mut c, &users, &items);
    let data = transcode_data();
    bench_typed_transcodes(&mut c, &data);
    bench_dynamic_transcodes(&mut c, data);
    c.final_summary();
    print_ratios(since);
    // only when measuring (`cargo bench` passes `--bench`), not under `cargo test --benches`
    if std::env::args().any(|a| a == "--bench") {
        print_paired(&users, &items);
    }
}
