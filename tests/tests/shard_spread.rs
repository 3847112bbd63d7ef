//! How evenly the shard hashes spread common families of ids (issue 49, point 5).
//!
//! For 10,000 ids of each family — sequential (`t0000` … `t9999`), `user-N`, UUIDs and emails —
//! at 16, 64 and 256 shards, the native profile's hash ([`ShardHash::Sha256`]) must use every
//! shard and put no more records on the hottest shard than a uniform random assignment would
//! within 5 standard deviations: `count ≤ mean + 5·√mean` (1.20× the mean at 16 shards, 1.40× at
//! 64, 1.80× at 256). The TypeScript profiles' `string-hash` is printed beside it, not asserted:
//! it must stay byte-compatible (the compatibility vectors pin it), and it does not meet the bound
//! from 64 shards up. `cargo test -p entity-manager-tests --test shard_spread -- --nocapture`
//! prints the table that the sharding guide shows.

use entity_manager::model::{Profile, ShardBump, ShardHash, ShardSpace};
use entity_manager::shard::{shard_count, shard_hash, shard_of};

const IDS: usize = 10_000;

/// The bumps that give 16, 64 and 256 shards in the native profile's `product` space
/// (`chars × 2^char_bits`).
fn bumps() -> [ShardBump; 3] {
    [
        ShardBump::new(0, 4, 1), // 1 × 16
        ShardBump::new(0, 5, 2), // 2 × 32
        ShardBump::new(0, 5, 8), // 8 × 32
    ]
}

/// `SplitMix64`: a fixed sequence of well-mixed 64-bit values (Steele, Lea and Flood, 2014), so
/// the UUIDs are the same in every run.
fn split_mix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A version-4 UUID in its text form from 128 random bits.
fn uuid(state: &mut u64) -> String {
    let (hi, lo) = (split_mix(state), split_mix(state));
    let hi = (hi & 0xffff_ffff_ffff_0fff) | 0x4000; // version 4
    let lo = (lo & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000; // variant 10
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

fn families() -> Vec<(&'static str, Vec<String>)> {
    let mut state = 49;
    vec![
        (
            "t0000 … t9999",
            (0..IDS).map(|i| format!("t{i:04}")).collect(),
        ),
        (
            "user-0 … user-9999",
            (0..IDS).map(|i| format!("user-{i}")).collect(),
        ),
        ("UUID v4", (0..IDS).map(|_| uuid(&mut state)).collect()),
        (
            "person.N@example.com",
            (0..IDS)
                .map(|i| format!("person.{i}@example.com"))
                .collect(),
        ),
    ]
}

/// Records per shard of `ids` under `hash` and `bump`.
fn spread(ids: &[String], hash: ShardHash, bump: ShardBump) -> Vec<usize> {
    let count = usize::try_from(shard_count(bump, ShardSpace::Product)).unwrap_or(usize::MAX);
    let mut per_shard = vec![0usize; count];
    for id in ids {
        let shard = shard_of(shard_hash(hash, id), bump, ShardSpace::Product);
        if let Some(slot) = usize::try_from(shard)
            .ok()
            .and_then(|s| per_shard.get_mut(s))
        {
            *slot += 1;
        }
    }
    per_shard
}

#[test]
fn the_native_hash_spreads_every_family_as_a_uniform_assignment_would() {
    let native = Profile::Native.shard_hash();
    assert_eq!(native, ShardHash::Sha256);
    assert_eq!(Profile::Npm6_14.shard_hash(), ShardHash::StringHash);
    assert_eq!(Profile::Upstream8.shard_hash(), ShardHash::StringHash);

    println!(
        "| ids (10,000) | shards | bound (mean + 5·√mean) | native (sha256): used, hottest ÷ mean | string-hash: used, hottest ÷ mean |"
    );
    println!("|---|---:|---:|---|---|");
    let mut failures = Vec::new();
    for (family, ids) in families() {
        for bump in bumps() {
            let shards = shard_count(bump, ShardSpace::Product);
            #[allow(clippy::cast_precision_loss)] // small counts
            let mean = IDS as f64 / shards as f64;
            let bound = mean + 5.0 * mean.sqrt();
            let figures = |per_shard: &[usize]| {
                let used = per_shard.iter().filter(|&&n| n > 0).count();
                let hottest = per_shard.iter().copied().max().unwrap_or(0);
                (used, hottest)
            };
            let (used, hottest) = figures(&spread(&ids, native, bump));
            let (ts_used, ts_hottest) = figures(&spread(&ids, ShardHash::StringHash, bump));
            #[allow(clippy::cast_precision_loss)]
            let ratio = |n: usize| n as f64 / mean;
            println!(
                "| {family} | {shards} | {:.2}× | {used} of {shards}, {:.2}× | {ts_used} of {shards}, {:.2}× |",
                bound / mean,
                ratio(hottest),
                ratio(ts_hottest)
            );
            #[allow(clippy::cast_precision_loss)]
            let too_hot = hottest as f64 > bound;
            if u128::try_from(used).ok() != Some(shards) || too_hot {
                failures.push(format!(
                    "{family} at {shards} shards: {used} shards used, the hottest holds {hottest} (bound {bound:.1})"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "the native shard hash spreads worse than a uniform assignment: {failures:#?}"
    );
}

/// The spread test would catch a hash that spreads the way `string-hash` does: the bound is not
/// vacuous (the TypeScript hash, kept byte for byte for shared tables, breaks it).
#[test]
fn the_bound_refuses_string_hash_from_64_shards_up() {
    let families = families();
    let sequential = &families[0].1;
    let bump = ShardBump::new(0, 5, 2); // 64 shards
    let per_shard = spread(sequential, ShardHash::StringHash, bump);
    let used = per_shard.iter().filter(|&&n| n > 0).count();
    assert!(
        used < 64,
        "string-hash used all 64 shards for sequential ids ({used}): the bound's check is not exercised"
    );
}
