//! The rules of an entity's shard bumps: their ranges, their timestamps (distinct, in
//! milliseconds) and their order.

use crate::limits::{MAX_CHAR_BITS, MAX_CHARS};
use crate::model::ShardBump;

use super::wording::{Setting, Syntax, repeated};
use super::{ConfigRule, Problem};

/// Rule (one half of bump ranges): `charBits` is in 1..=5: a suffix character holds
/// 1 to 5 bits (radix 2 to 32).
pub fn bump_char_bits(syntax: Syntax, value: i128) -> Option<Problem> {
    let name = Setting::CharBits.name(syntax);
    (!(1..=i128::from(MAX_CHAR_BITS)).contains(&value)).then(|| {
        Problem::new(
            ConfigRule::BumpRanges,
            format!("shard bump `{name}` is {value}; it must be in 1..={MAX_CHAR_BITS} (radix 2, 4, 8, 16 or 32)"),
        )
    })
}

/// Rule (the other half of bump ranges): `chars` is in 0..=40: the suffix length.
pub fn bump_chars(syntax: Syntax, value: i128) -> Option<Problem> {
    let name = Setting::Chars.name(syntax);
    (!(0..=i128::from(MAX_CHARS)).contains(&value)).then(|| {
        Problem::new(
            ConfigRule::BumpRanges,
            format!(
                "shard bump `{name}` is {value}; it must be in 0..={MAX_CHARS} (the suffix length; 0 means one unsharded partition)"
            ),
        )
    })
}

/// The bump timestamps [`bump_timestamp_in_milliseconds`] refuses: from 2001-09-09 in
/// seconds (10^9) up to the first millisecond of 2000 (UTC). Such a value is a recent date in
/// seconds and a date of 1970–1999 in milliseconds, before any table; smaller ones are the
/// synthetic schedules of tests and examples (`timestamp = 1_000`) and stay accepted.
pub const BUMP_TIMESTAMPS_IN_SECONDS: std::ops::Range<u64> = 1_000_000_000..946_684_800_000;

/// Rule (a half of bump ranges, in the derive): a bump's timestamp is milliseconds, not seconds.
/// `1_726_880_933` is 2024-09-21 in seconds but 1970-01-20 in milliseconds: the bump would start
/// in 1970, and every record since would be sharded by it. The message gives the value in
/// milliseconds. See [`BUMP_TIMESTAMPS_IN_SECONDS`].
pub fn bump_timestamp_in_milliseconds(value: u64) -> Option<Problem> {
    BUMP_TIMESTAMPS_IN_SECONDS.contains(&value).then(|| {
        let days = value / 86_400_000;
        let as_ms = value.saturating_mul(1000);
        Problem::new(
            ConfigRule::BumpRanges,
            format!(
                "shard bump timestamp {value} is {days} days after 1970-01-01 in milliseconds: it looks like seconds; bump timestamps are milliseconds since the Unix epoch, so write `{as_ms}`"
            ),
        )
    })
}

/// Rule: no two bumps start at the same timestamp: a record's creation time picks one bump.
/// `timestamps` are the bumps' (declared position, timestamp); returns the position of each
/// repeat, with its problem.
pub fn bump_timestamps_unique(
    timestamps: impl IntoIterator<Item = (usize, u64)>,
) -> Vec<(usize, Problem)> {
    repeated(timestamps.into_iter().map(|(i, t)| (i, t, i)))
        .into_iter()
        .map(|(i, timestamp, first)| {
            let message = format!(
                "shard bumps {first} and {i} both start at timestamp {timestamp}; give each bump its own timestamp"
            );
            (i, Problem::new(ConfigRule::BumpTimestampsUnique, message))
        })
        .collect()
}

/// A shard schedule put in order: sorted by timestamp (stably), with
/// [`ShardBump::UNSHARDED`] in front when no bump starts at 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// The bumps, in order.
    pub bumps: Vec<ShardBump>,
    /// For each of `bumps`, its position in the declared list (`None` for the implied one).
    pub declared: Vec<Option<usize>>,
}

impl Schedule {
    /// Whether the first bump is the implied one.
    pub fn implied(&self) -> bool {
        self.declared.first().is_some_and(Option::is_none)
    }
}

/// `bumps` in order: sorted by timestamp, with the implied zero bump in front when none starts
/// at 0 (so an empty schedule is one unsharded partition).
pub fn schedule(bumps: &[ShardBump]) -> Schedule {
    let mut order: Vec<usize> = (0..bumps.len()).collect();
    order.sort_by_key(|&i| bumps[i].timestamp);
    let mut declared: Vec<Option<usize>> = order.into_iter().map(Some).collect();
    if declared.first().and_then(|i| i.map(|i| bumps[i].timestamp)) != Some(0) {
        declared.insert(0, None);
    }
    let bumps = declared
        .iter()
        .map(|i| i.map_or(ShardBump::UNSHARDED, |i| bumps[i]))
        .collect();
    Schedule { bumps, declared }
}

/// Rule: in the schedule put in order, `chars` strictly increases, so suffixes never get shorter
/// and the shard spaces of different bumps never overlap. A bump with `chars` out of range is
/// reported by its own rule and skipped (the next bump is compared with the one before it); two
/// bumps sharing a timestamp are reported as duplicates and not compared. Returns the position in
/// the ordered schedule of each offending bump, with its problem.
pub fn bump_chars_increase(syntax: Syntax, schedule: &Schedule) -> Vec<(usize, Problem)> {
    let implied = schedule.implied();
    let chars = Setting::Chars.name(syntax);
    let mut problems = Vec::new();
    let mut previous: Option<(usize, ShardBump)> = None;
    for (i, &bump) in schedule.bumps.iter().enumerate() {
        if bump.chars > MAX_CHARS {
            continue;
        }
        if let Some((j, before)) = previous
            && before.timestamp != bump.timestamp
            && bump.chars <= before.chars
        {
            let before = if implied && j == 0 {
                match syntax {
                    Syntax::Config => {
                        "the implied first bump `{timestamp: 0, charBits: 1, chars: 0}`".to_owned()
                    }
                    Syntax::Derive => {
                        "the implied first bump `bump(timestamp = 0, char_bits = 1, chars = 0)`"
                            .to_owned()
                    }
                }
            } else {
                format!(
                    "`{chars}` {} of the bump at timestamp {}",
                    before.chars, before.timestamp
                )
            };
            problems.push((
                i,
                Problem::new(
                    ConfigRule::BumpCharsIncrease,
                    format!(
                        "shard bump chars do not strictly increase at timestamp {}: `{chars}` {} follows {before}; give every later bump more `{chars}`",
                        bump.timestamp, bump.chars
                    ),
                ),
            ));
        }
        previous = Some((i, bump));
    }
    problems
}
