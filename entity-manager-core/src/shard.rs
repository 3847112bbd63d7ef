//! Shard keys: the shard hashes, shard spaces and suffixes.
//!
//! A record's hash key is `<entityToken><shardKeyDelimiter><suffix>`. The suffix is picked once,
//! from the record's unique value and the shard bump in force at its creation time, and never
//! changes. Everything here is pure; under the TypeScript profiles (`string-hash`) it is
//! byte-compatible with the TypeScript Entity Manager.
//!
//! ```
//! use entity_manager_core::shard::{shard_hash, string_hash, suffix};
//! use entity_manager_core::model::{ShardBump, ShardHash, ShardSpace};
//!
//! assert_eq!(string_hash("abc"), 193_415_941);
//! let bump = ShardBump::new(1_710_000_000_000, 2, 2);
//! let ts = shard_hash(ShardHash::StringHash, "user-123");
//! assert_eq!(suffix(ts, bump, ShardSpace::Power), "21");
//! assert_eq!(suffix(ts, bump, ShardSpace::Product), "01");
//! // the native profile: SHA-256 ("abc" is FIPS 180-4's first test vector, ba7816bf…)
//! assert_eq!(shard_hash(ShardHash::Sha256, "abc"), 0xba78_16bf_8f01_cfea);
//! ```

use std::borrow::Cow;

use serde_dynamo::AttributeValue;

use sha2::{Digest as _, Sha256};

use crate::model::{ShardBump, ShardHash, ShardSpace};

/// npm `string-hash` 1.1.3: djb2 with XOR over the UTF-16 code units of `s`, last to first,
/// starting at 5381, in wrapping 32-bit arithmetic.
pub fn string_hash(s: &str) -> u32 {
    let step = |h: u32, unit: u16| h.wrapping_mul(33) ^ u32::from(unit);
    if s.is_ascii() {
        // one UTF-16 unit per byte
        return s.bytes().rev().fold(5381, |h, b| step(h, u16::from(b)));
    }
    // The units backwards are the chars backwards, each char's units backwards.
    s.chars().rev().fold(5381, |h, c| {
        let mut units = [0u16; 2];
        c.encode_utf16(&mut units)
            .iter()
            .rev()
            .fold(h, |h, &unit| step(h, unit))
    })
}

/// The hash of a unique value's text ([`hash_text`]) under `hash`: [`string_hash`] widened to
/// 64 bits, or the first 8 bytes of the SHA-256 digest of the UTF-8 bytes, big-endian.
pub fn shard_hash(hash: ShardHash, text: &str) -> u64 {
    match hash {
        ShardHash::StringHash => u64::from(string_hash(text)),
        ShardHash::Sha256 => {
            let digest = Sha256::digest(text.as_bytes());
            let mut first = [0u8; 8];
            first.copy_from_slice(&digest[..8]);
            u64::from_be_bytes(first)
        }
    }
}

/// The text a unique value is hashed as: a string as itself, a number as its decimal form (as
/// the TypeScript releases up to 6.14.0 did; v8 hashes every number to 5381), a boolean as
/// `true`/`false`. `None` for values that cannot identify a record (null, maps, lists, sets,
/// binary) and for empty strings.
pub fn hash_text(value: &AttributeValue) -> Option<Cow<'_, str>> {
    match value {
        AttributeValue::S(s) if !s.is_empty() => Some(Cow::Borrowed(s)),
        AttributeValue::N(n) => Some(canonical_number(n)),
        AttributeValue::Bool(b) => Some(Cow::Borrowed(if *b { "true" } else { "false" })),
        _ => None,
    }
}

/// A DynamoDB number in the decimal form JavaScript's `String(n)` gives integers: `"42"` for
/// `"42"`, `"042"` or `"42.0"`. Non-integers are kept as written.
fn canonical_number(n: &str) -> Cow<'_, str> {
    let trimmed = n.strip_suffix(".0").unwrap_or(n);
    match trimmed.parse::<i128>() {
        Ok(v) if v.to_string() != n => Cow::Owned(v.to_string()),
        _ => Cow::Borrowed(n),
    }
}

/// How many suffixes a bump provides under a shard-space rule; saturates at `u128::MAX`.
pub fn shard_count(bump: ShardBump, space: ShardSpace) -> u128 {
    if bump.chars == 0 {
        return 1;
    }
    let radix = u128::from(bump.radix());
    match space {
        ShardSpace::Product => u128::from(bump.chars) * radix,
        ShardSpace::Power => {
            let bits = u32::from(bump.bits()) * u32::from(bump.chars);
            if bits >= 128 {
                u128::MAX
            } else {
                1u128 << bits
            }
        }
    }
}

/// The shard number of a record whose unique value hashes to `hash` ([`shard_hash`]):
/// `hash % shard_count`. When the space exceeds the hash's range the modulo is the identity, as
/// in JavaScript for `string-hash`'s 32 bits.
pub fn shard_of(hash: u64, bump: ShardBump, space: ShardSpace) -> u128 {
    let count = shard_count(bump, space);
    // a 64-bit modulo when the space allows it (it always does under the product rule)
    match u64::try_from(count) {
        Ok(count) => u128::from(hash % count),
        Err(_) => u128::from(hash) % count,
    }
}

/// Writes a shard number in base `2^char_bits`, lowercase, zero-padded to `chars` characters.
/// Empty when `chars` is 0.
pub fn format_suffix(shard: u128, bump: ShardBump) -> String {
    let mut suffix = String::new();
    push_suffix(&mut suffix, shard, bump);
    suffix
}

/// Appends [`format_suffix`] of `shard` to `out`.
pub(crate) fn push_suffix(out: &mut String, shard: u128, bump: ShardBump) {
    const DIGITS: &[u8; 32] = b"0123456789abcdefghijklmnopqrstuv";
    if bump.chars == 0 {
        return;
    }
    // the radix is 2^char_bits (char_bits in 1..=5 once validated): digits are groups of
    // char_bits bits, at most 128 of them
    let bits = u32::from(bump.bits());
    let mask = u128::from(bump.radix()) - 1;
    let mut digits = [0u8; 128];
    let mut start = digits.len();
    let mut rest = shard;
    while rest > 0 {
        start -= 1;
        // rest & mask < 32
        #[allow(clippy::cast_possible_truncation)]
        let digit = DIGITS[(rest & mask) as usize];
        digits[start] = digit;
        rest >>= bits;
    }
    let written = digits.len() - start;
    out.reserve(usize::from(bump.chars).max(written));
    for _ in written..usize::from(bump.chars) {
        out.push('0');
    }
    out.extend(digits[start..].iter().map(|&d| char::from(d)));
}

/// The suffix of a record whose unique value hashes to `hash` ([`shard_hash`]), under `bump`.
pub fn suffix(hash: u64, bump: ShardBump, space: ShardSpace) -> String {
    format_suffix(shard_of(hash, bump, space), bump)
}

/// The bumps a query over creation times `from..=to` must visit: bump `i` is kept when its own
/// timestamp is not after `to` and it is the last bump or the next one starts after `from`.
pub fn bumps_in_window(bumps: &[ShardBump], from: u64, to: u64) -> impl Iterator<Item = ShardBump> {
    bumps.iter().enumerate().filter_map(move |(i, bump)| {
        let next_after_from = bumps.get(i + 1).is_none_or(|next| next.timestamp > from);
        (next_after_from && bump.timestamp <= to).then_some(*bump)
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// `string-hash` as written in the npm package: the UTF-16 units, last to first.
    fn reference_hash(s: &str) -> u32 {
        let units: Vec<u16> = s.encode_utf16().collect();
        units
            .iter()
            .rev()
            .fold(5381u32, |h, &unit| h.wrapping_mul(33) ^ u32::from(unit))
    }

    /// Base `2^char_bits` digits by repeated division, zero-padded to `chars`.
    fn reference_suffix(shard: u128, bump: ShardBump) -> String {
        if bump.chars == 0 {
            return String::new();
        }
        let radix = u128::from(bump.radix());
        let mut digits = Vec::new();
        let mut rest = shard;
        while rest > 0 {
            let digit = u32::try_from(rest % radix).unwrap_or(0);
            digits.push(char::from_digit(digit, 32).unwrap_or('?'));
            rest /= radix;
        }
        while digits.len() < usize::from(bump.chars) {
            digits.push('0');
        }
        digits.iter().rev().collect()
    }

    /// FIPS 180-4's examples (and the empty message), first 8 bytes of each digest.
    #[test]
    fn sha256_is_the_standard() {
        for (text, digest) in [
            ("", 0xe3b0_c442_98fc_1c14_u64),
            ("abc", 0xba78_16bf_8f01_cfea),
            (
                "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                0x248d_6a61_d206_38b8,
            ),
        ] {
            assert_eq!(shard_hash(ShardHash::Sha256, text), digest, "{text:?}");
        }
    }

    proptest! {
        #[test]
        fn string_hash_is_the_reference(s in any::<String>(), ascii in "[ -~]{0,40}") {
            prop_assert_eq!(string_hash(&s), reference_hash(&s));
            prop_assert_eq!(string_hash(&ascii), reference_hash(&ascii));
        }

        #[test]
        fn string_hash_widens_to_the_shard_hash(s in any::<String>()) {
            prop_assert_eq!(shard_hash(ShardHash::StringHash, &s), u64::from(reference_hash(&s)));
        }

        #[test]
        fn format_suffix_is_the_reference(
            shard in any::<u128>(),
            char_bits in 1u8..=5,
            chars in 0u8..=40,
        ) {
            let bump = ShardBump::new(0, char_bits, chars);
            prop_assert_eq!(format_suffix(shard, bump), reference_suffix(shard, bump));
            let hash = u64::try_from(shard & u128::from(u64::MAX)).unwrap_or(0);
            for space in [ShardSpace::Product, ShardSpace::Power] {
                prop_assert_eq!(
                    shard_of(hash, bump, space),
                    u128::from(hash) % shard_count(bump, space)
                );
            }
        }
    }
}
