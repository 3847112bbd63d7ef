//! Predicting where the next page ends, so that shards are read up to about there and no
//! further.
//!
//! The previous page returned `limit` items between two range keys `first` and `last`; the next
//! page probably ends about as far beyond `last`. The prediction only bounds shard reads until
//! the page's end is known from what was read: a wrong guess costs reads or one more wave of
//! queries, never correctness.

use std::cmp::Ordering;

use serde_dynamo::AttributeValue;

use crate::store::value::Scalar;

/// How far beyond the previous page's span the predicted end lies, as a fraction of the span,
/// when nothing better is known (string and binary keys, whose spans are not averaged).
pub(crate) const MARGIN: f64 = 0.2;

/// The weight of the last page in the running average of the span a page covers (numbers).
const SMOOTHING: f64 = 0.2;

/// Standard deviations of the page's end, in units of `1 / √limit` of its span, that the
/// predicted end lies beyond the expected end (numbers, whose spans are averaged).
const SPREAD: f64 = 0.7;

/// [`SPREAD`] when the lanes take more than two rounds of the throttle: a page that falls
/// short then costs that many more rounds, more than the items a wider margin reads.
const SPREAD_MANY_LANES: f64 = 1.5;

/// The probability with which the first reads of a page, bounded before any of its reads is
/// back, reach the page's end, when its lanes take more than one round of the throttle, at
/// least: a round that falls short costs one more query for each of its lanes and a round of
/// latency. Over small pages (10 items over 20 lanes, throttle 10; 2,000 pages by tokens,
/// rounds counted exactly by `tests/tests/query_rounds.rs`) 0.95 with [`LATER_QUANTILE`] 0.95
/// pages at 1.051 × the ideal rounds, 21.0 shard queries a page and 1.53 items read per item
/// returned; 0.95/0.9 at 1.075 ×, 21.5 and 1.50; 0.9/0.95 at 1.095 ×, 21.9 and 1.44; 0.9/0.9 at
/// 1.116 ×, 22.3 and 1.41 (and 0.8/0.85 at 1.25 × in the v2 bench). DynamoDB bills a query of
/// small items by the request (half a read unit at least), so the fewer queries are cheaper as
/// well as faster, and no bound reaches 1.2 items read within 1.2 × the floor
/// (`query_frontier`, with the density known exactly: 1.30 at best). Pages of about 85 items
/// or more aim higher anyway ([`quantiles`]; the later reads from about 65), so this floor
/// moves smaller pages only: the limit-100 counts are the same with 0.9 or 0.95.
pub(crate) const FIRST_QUANTILE: f64 = 0.95;

/// The probability with which reads bounded from what the page's earlier reads found reach
/// the page's end, at least.
pub(crate) const LATER_QUANTILE: f64 = 0.95;

/// The largest probabilities [`quantiles`] aims at: beyond them, a wider bound reads many
/// items to save rounds that rarely happen.
const FIRST_QUANTILE_MAX: f64 = 0.97;
const LATER_QUANTILE_MAX: f64 = 0.98;

/// The share of a page that a staged bound may read beyond the page's expected end, for
/// [`quantiles`].
const OVER_READ: f64 = 0.18;

/// The probabilities with which the first and the later staged reads of a page of `want`
/// items reach its end. The page's end lies within about `1/√want` of its span from where it is
/// expected (items are about Poisson-distributed over the range key), so a bound `z` standard
/// deviations beyond it reads about `z/√want` of the page more. The bounds aim at that
/// over-read ([`OVER_READ`]): a large page, whose end is known closely, is bounded where it
/// ends almost surely (a round that falls short costs a round of latency for every page it
/// happens to: 1.3× the ideal floor at 100 items over 20 lanes, against 1.1× this way, for 7 %
/// more items read); a small one, whose end is not, at [`FIRST_QUANTILE`] and
/// [`LATER_QUANTILE`] (a higher probability would read far more than it wants, a lower one
/// costs rounds).
pub(crate) fn quantiles(want: usize) -> (f64, f64) {
    // a page size is far below 2^52
    #[allow(clippy::cast_precision_loss)]
    let z = OVER_READ * (want as f64).sqrt();
    (
        normal_cdf(z).clamp(FIRST_QUANTILE, FIRST_QUANTILE_MAX),
        normal_cdf(z + 0.2).clamp(LATER_QUANTILE, LATER_QUANTILE_MAX),
    )
}

/// [`SPREAD`] of a prediction made again within a page, for the items still wanted: a wave
/// that falls short again costs one more query for every lane, so it aims further.
pub(crate) const SPREAD_AGAIN: f64 = 1.0;

/// How far beyond the span a page is expected to cover its end is predicted, as a fraction of
/// that span, for a page of `want` items: the `want`-th item after the boundary lies about
/// `span × (1 ± 1/√want)` away (items of a shard are about Poisson-distributed over the range
/// key), so the margin shrinks as pages grow. A bigger margin reads more items a page; a
/// smaller one more often falls short, which costs one more query for every one of the `live`
/// lanes (`live / throttle` more rounds).
pub(crate) fn margin(want: usize, live: usize, throttle: usize, averaged: bool) -> f64 {
    let spread = if live > throttle.saturating_mul(2) {
        SPREAD_MANY_LANES
    } else {
        SPREAD
    };
    spread_margin(want, averaged, spread)
}

/// [`margin`] with `spread` standard deviations.
pub(crate) fn spread_margin(want: usize, averaged: bool, spread: f64) -> f64 {
    if !averaged {
        return MARGIN;
    }
    // page sizes are far below 2^52
    #[allow(clippy::cast_precision_loss)]
    let want = want.max(1) as f64;
    (spread / want.sqrt()).clamp(0.1, 1.0)
}

/// What a page knows of where it ends, as distances beyond the boundary in scan order (range
/// key units): the items read and not yet emitted, how far each lane that can still give
/// items is read (0 before its first read), and a lane's density (items per unit). Beyond where
/// a lane is read its items are taken as Poisson-distributed at that density.
#[derive(Debug)]
pub(crate) struct Evidence {
    /// Distances of the items read, ascending.
    found: Vec<f64>,
    /// How far each lane is read, ascending.
    covered: Vec<f64>,
    /// `covered`'s prefix sums (`prefix[j]`: the first `j` lanes).
    prefix: Vec<f64>,
    rate: f64,
}

impl Evidence {
    pub(crate) fn new(mut found: Vec<f64>, mut covered: Vec<f64>, rate: f64) -> Self {
        found.sort_by(f64::total_cmp);
        covered.sort_by(f64::total_cmp);
        let mut prefix = Vec::with_capacity(covered.len() + 1);
        prefix.push(0.0);
        for c in &covered {
            prefix.push(prefix.last().copied().unwrap_or(0.0) + c);
        }
        Self {
            found,
            covered,
            prefix,
            rate,
        }
    }

    /// The probability that the `need`-th item beyond the boundary lies within `distance`.
    fn within(&self, distance: f64, need: usize) -> f64 {
        let found = self.found.partition_point(|&x| x <= distance);
        if found >= need {
            return 1.0;
        }
        // the unread stretch of every lane up to `distance`
        let short = self.covered.partition_point(|&c| c < distance);
        // lane counts, far below 2^52
        #[allow(clippy::cast_precision_loss)]
        let exposure = distance * short as f64 - self.prefix.get(short).copied().unwrap_or(0.0);
        poisson_at_least(need - found, self.rate * exposure)
    }

    /// The least distance within which the `need`-th item beyond the boundary lies with
    /// probability at least `q`; `None` when no distance does (nothing left to read).
    pub(crate) fn quantile(&self, need: usize, q: f64) -> Option<f64> {
        if !(self.rate.is_finite() && self.rate > 0.0) || self.covered.is_empty() {
            return None;
        }
        // counts of one page and lanes, far below 2^52
        #[allow(clippy::cast_precision_loss)]
        let expected = need as f64 / (self.rate * self.covered.len() as f64);
        let mut high = expected + self.covered.last().copied().unwrap_or(0.0);
        let mut doublings = 0;
        while self.within(high, need) < q {
            doublings += 1;
            high *= 2.0;
            if doublings > 60 || !high.is_finite() {
                return None;
            }
        }
        let mut low = 0.0;
        for _ in 0..48 {
            let middle = f64::midpoint(low, high);
            if self.within(middle, need) >= q {
                high = middle;
            } else {
                low = middle;
            }
        }
        Some(high)
    }
}

/// `P(N >= k)` for `N` Poisson-distributed with mean `lambda`.
fn poisson_at_least(k: usize, lambda: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if lambda.is_nan() || lambda <= 0.0 {
        return 0.0;
    }
    // counts of one page, far below 2^52
    #[allow(clippy::cast_precision_loss)]
    let kf = k as f64;
    if k > 60 || lambda > 600.0 {
        // the normal approximation, with a continuity correction
        return 1.0 - normal_cdf((kf - 0.5 - lambda) / lambda.sqrt());
    }
    let mut term = (-lambda).exp();
    let mut below = term;
    for j in 1..k {
        #[allow(clippy::cast_precision_loss)]
        let j = j as f64;
        term *= lambda / j;
        below += term;
    }
    (1.0 - below).clamp(0.0, 1.0)
}

/// The standard normal distribution function (Abramowitz and Stegun 7.1.26: within 1.5e-7).
fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-x * x).exp();
    if z >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

/// The number `distance` beyond `from` in scan order, rounded away from `from`.
pub(crate) fn beyond(from: f64, distance: f64, descending: bool) -> Option<AttributeValue> {
    let value = if descending {
        from - distance
    } else {
        from + distance
    };
    value
        .is_finite()
        .then(|| AttributeValue::N(format_number(value, descending)))
}

/// The first value of the next boundary: where the span the next page is predicted from
/// starts. For numbers, `last` minus a running average of the distance the pages covered (the
/// previous boundary's span, and this page's, from the previous boundary's last value to
/// `last`), so that one page's chance spacing does not steer the prediction; else the page's
/// own first value.
///
/// `measured`, when every lane was read up to some `end` beyond the page: that end and the
/// ratio of the page's size to the items found up to it, so that the distance a page covers is
/// measured over all the items read rather than the page's own (far fewer on small pages).
pub(crate) fn span_start(
    previous: Option<(&AttributeValue, &AttributeValue)>,
    first: &AttributeValue,
    last: &AttributeValue,
    measured: Option<(&AttributeValue, f64)>,
) -> AttributeValue {
    let number = |v: &AttributeValue| match v {
        AttributeValue::N(n) => n.parse::<f64>().ok().filter(|x| x.is_finite()),
        _ => None,
    };
    let averaged = previous.and_then(|(p_first, p_last)| {
        let (pf, pl, l) = (number(p_first)?, number(p_last)?, number(last)?);
        let now = match measured.and_then(|(end, ratio)| Some((number(end)?, ratio))) {
            Some((end, ratio)) if ratio.is_finite() && ratio > 0.0 => (end - pl) * ratio,
            _ => l - pl,
        };
        let before = pl - pf;
        let span = if before == 0.0 || before.signum() != now.signum() {
            now
        } else {
            SMOOTHING * now + (1.0 - SMOOTHING) * before
        };
        let start = (l - span).round();
        (start.is_finite() && start.abs() < 1e15 && l.abs() < 1e15)
            .then(|| AttributeValue::N(format!("{start:.0}")))
    });
    averaged.unwrap_or_else(|| first.clone())
}

/// For numbers: `from` moved on by `factor` spans `first..last` (in the span's direction),
/// rounded away from `from`; `None` for other types, or when it would not move.
pub(crate) fn advance(
    first: &AttributeValue,
    last: &AttributeValue,
    from: &AttributeValue,
    factor: f64,
) -> Option<AttributeValue> {
    let number = |v: &AttributeValue| match v {
        AttributeValue::N(n) => n.parse::<f64>().ok().filter(|x| x.is_finite()),
        _ => None,
    };
    let (a, b, x) = (number(first)?, number(last)?, number(from)?);
    let next = x + (b - a) * factor;
    (next.is_finite() && next.total_cmp(&x) != Ordering::Equal)
        .then(|| AttributeValue::N(format_number(next, b < a)))
}

/// Whether a boundary's span is a running average (numbers) rather than one page's.
pub(crate) fn averaged(first: &AttributeValue, last: &AttributeValue) -> bool {
    matches!((first, last), (AttributeValue::N(_), AttributeValue::N(_)))
}

/// The range key `factor` spans beyond `last`, the span being `first..last` (descending when
/// `last < first`). `None` when no prediction can be made (same key, other types, overflow).
pub(crate) fn extrapolate(
    first: &AttributeValue,
    last: &AttributeValue,
    factor: f64,
) -> Option<AttributeValue> {
    // a bound is a sort key in a key condition: one longer than a sort key may be (a long
    // common prefix, then digits of up to 4 bytes each) would fail the read, so none is
    // predicted
    // a bound the stores take in a key condition: not empty, not over the size limit
    extrapolate_any(first, last, factor)
        .filter(|v| crate::limits::sort_value_fits(v) && !crate::limits::empty_key_value(v))
}

fn extrapolate_any(
    first: &AttributeValue,
    last: &AttributeValue,
    factor: f64,
) -> Option<AttributeValue> {
    match (first, last) {
        (AttributeValue::N(a), AttributeValue::N(b)) => {
            let (a, b) = (a.parse::<f64>().ok()?, b.parse::<f64>().ok()?);
            let next = b + (b - a) * factor;
            (next.is_finite() && next.total_cmp(&b) != Ordering::Equal)
                .then(|| AttributeValue::N(format_number(next, b < a)))
        }
        (AttributeValue::S(a), AttributeValue::S(b)) => {
            let a: Vec<u32> = a.chars().map(u32::from).collect();
            let b: Vec<u32> = b.chars().map(u32::from).collect();
            let digits = extrapolate_digits(&a, &b, 0x11_0000, factor)?;
            Some(AttributeValue::S(
                digits
                    .into_iter()
                    .map(|d| char::from_u32(d).unwrap_or('\u{e000}'))
                    .collect(),
            ))
        }
        (AttributeValue::B(a), AttributeValue::B(b)) => {
            let a: Vec<u32> = a.iter().map(|&x| u32::from(x)).collect();
            let b: Vec<u32> = b.iter().map(|&x| u32::from(x)).collect();
            let digits = extrapolate_digits(&a, &b, 256, factor)?;
            Some(AttributeValue::B(
                digits
                    .into_iter()
                    .map(|d| u8::try_from(d).unwrap_or(u8::MAX))
                    .collect(),
            ))
        }
        _ => None,
    }
}

/// A number DynamoDB accepts, rounded away from the span (up when ascending, down when
/// descending) so that the prediction does not fall short by rounding.
fn format_number(value: f64, descending: bool) -> String {
    let rounded = if descending {
        value.floor()
    } else {
        value.ceil()
    };
    // a whole number, printed with the fewest digits that read back as it and no exponent
    // (DynamoDB numbers carry 38 significant digits: an exact decimal expansion of a large
    // float would not fit, its shortest form does); before, a value rounded to exactly 10^15
    // was printed unrounded, short of the span by up to one
    format!("{rounded}")
}

/// Extrapolates digit strings (most significant first, in `radix`): the common prefix is kept,
/// and the next few digits are read as one number.
fn extrapolate_digits(a: &[u32], b: &[u32], radix: u32, factor: f64) -> Option<Vec<u32>> {
    const WIDTH: usize = 3;
    let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let window = |s: &[u32]| -> f64 {
        (0..WIDTH).fold(0.0, |acc, i| {
            acc * f64::from(radix) + f64::from(s.get(common + i).copied().unwrap_or(0))
        })
    };
    let (x, y) = (window(a), window(b));
    if x.partial_cmp(&y) == Some(Ordering::Equal) {
        return None;
    }
    let next = y + (y - x) * factor;
    let top = (0..WIDTH).fold(1.0, |acc, _| acc * f64::from(radix));
    if !(0.0..top).contains(&next) {
        return None;
    }
    let ascending = y > x;
    let mut rest = if ascending { next.ceil() } else { next.floor() };
    let mut digits = vec![0u32; WIDTH];
    for d in digits.iter_mut().rev() {
        // each digit is below the radix
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let digit = (rest % f64::from(radix)) as u32;
        *d = digit;
        rest = (rest / f64::from(radix)).floor();
    }
    let mut out = b[..common].to_vec();
    out.extend(digits);
    if ascending {
        // anything longer that starts with these digits still sorts below the bound
        out.push(radix - 1);
    } else {
        while out.last() == Some(&0) {
            out.pop();
        }
    }
    Some(out)
}

/// The limit of a read up to a predicted end, for a lane whose fair share of the page is
/// `share` (both engines read with it): the lane holds about
/// `share × (1 + margin)` items up to there (if the prediction holds), and a read that stops at
/// its limit short of the end costs a second query. Items of a shard are about
/// Poisson-distributed over the sort key, so three standard deviations above the mean, plus
/// one, leave about one lane in a hundred short.
pub(crate) fn poisson_limit(share: usize, margin: f64) -> usize {
    // shares are at most a page size, far below 2^52
    #[allow(clippy::cast_precision_loss)]
    let mean = share as f64 * (1.0 + margin.max(0.0));
    let limit = (mean + 3.0 * mean.sqrt()).ceil() + 1.0;
    if !limit.is_finite() || limit >= 1e15 {
        return usize::MAX;
    }
    // a positive finite value below 2^50
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let limit = limit as usize;
    limit.max(1)
}

/// Items a page's reads were expected to find, at the pages' running density, over how far its
/// lanes are read, at least, for finding none to mean that the lanes end (or thin out) there:
/// on items spread as the pages found them, none where 10 are expected has a chance of
/// `e^-10`, below 1 in 20,000. The page then reads on without a bound (only an unbounded read
/// shows that a lane has nothing left) instead of up to one bound and then a further one: the
/// page after the last item took 5 rounds at limit 100 and 11 at limit 10, against 2 ideal,
/// over the 20,000 items of `tests/tests/query_rounds.rs`.
pub(crate) const EMPTY_EVIDENCE: f64 = 10.0;

/// The least margin of the limit of a staged read (see [`staged_margin`]).
const STAGED_READ_MARGIN: f64 = 0.5;

/// A number range key value as a float; `None` for other types or a value out of range.
pub(crate) fn number(v: &AttributeValue) -> Option<f64> {
    match v {
        AttributeValue::N(n) => n.parse::<f64>().ok().filter(|x| x.is_finite()),
        _ => None,
    }
}

/// The margin of the limit ([`poisson_limit`]) of a read up to a staged bound `end`, the
/// previous pages spanning `first..last`, for a page whose unstaged margin is `margin`. A
/// staged bound lies where the page ends with a high probability, further than the margin
/// reaches, and a read that stops at its limit short of the page's end costs a query and, when
/// the throttle is full, a round: over the 20,000 items of `tests/tests/query_rounds.rs` at
/// limit 100, two pages in 200 took a third round for a lane holding more than its limit before
/// the end. So the margin is at least how far the bound reaches beyond one span, and at least
/// [`STAGED_READ_MARGIN`] (the limit binds only on a lane denser than its share up to the
/// bound, and then reads at most up to the bound), at most 1.
pub(crate) fn staged_margin(
    first: &AttributeValue,
    last: &AttributeValue,
    end: &AttributeValue,
    margin: f64,
) -> f64 {
    let reach = number(first)
        .zip(number(last))
        .zip(number(end))
        .map(|((a, b), e)| (e - b).abs() / (b - a).abs())
        .filter(|r| r.is_finite())
        .map_or(0.0, |r| r - 1.0);
    margin.max(reach).clamp(STAGED_READ_MARGIN, 1.0)
}

/// Where the next read of a lane stops and how many items it asks for, on a page that still
/// wants `remaining` items over `live` lanes: at the page's `known` end, taking everything up to
/// it (it cannot overshoot); with one lane left, what the page wants, unbounded; at the
/// `predicted` end, for a lane `short_of` it, a Poisson-sized share ([`poisson_limit`] with
/// `margin`); else a fair share unbounded. `extra`: the items the lane reads that the page
/// cannot take (one more, so that a read returning fewer than it asked shows the lane complete
/// up to where it stops, and the boundary's item when the lane reads it again). At most
/// `page_size + extra`.
pub(crate) fn next_read<'e, E>(
    (known, predicted): (Option<&'e E>, Option<&'e E>),
    short_of: impl FnOnce(&E) -> bool,
    (remaining, live, margin): (usize, usize, f64),
    extra: usize,
    page_size: usize,
) -> (Option<&'e E>, u32) {
    let share = remaining.div_ceil(live.max(1));
    let (end, limit) = match (known, predicted) {
        (Some(known), _) => (Some(known), remaining.saturating_add(extra)),
        (None, _) if live == 1 => (None, remaining.saturating_add(extra)),
        (None, Some(predicted)) if short_of(predicted) => {
            (Some(predicted), poisson_limit(share, margin))
        }
        _ => (None, share.saturating_add(share.div_ceil(10))),
    };
    let cap = page_size.saturating_add(extra);
    (
        end,
        u32::try_from(limit.min(cap).max(1)).unwrap_or(u32::MAX),
    )
}

/// Orders two range key values as DynamoDB does (strings and binary by bytes, numbers
/// numerically); values of other types compare as equal.
pub(crate) fn compare(a: &AttributeValue, b: &AttributeValue) -> Ordering {
    // strings and binaries compare as their bytes, without a copy
    match (a, b) {
        (AttributeValue::S(x), AttributeValue::S(y)) => return x.as_bytes().cmp(y.as_bytes()),
        (AttributeValue::B(x), AttributeValue::B(y)) => return x.cmp(y),
        _ => {}
    }
    match (Scalar::any(a), Scalar::any(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => Ordering::Equal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(v: &str) -> AttributeValue {
        AttributeValue::N(v.to_owned())
    }

    fn s(v: &str) -> AttributeValue {
        AttributeValue::S(v.to_owned())
    }

    /// A predicted number is a whole number rounded away from the span (up ascending, down
    /// descending), at every magnitude, in its shortest decimal form.
    #[test]
    fn predicted_numbers_round_away_from_the_span() {
        for (value, descending, want) in [
            (1.25, false, "2"),
            (1.25, true, "1"),
            (-1.25, false, "-1"),
            (-1.25, true, "-2"),
            (999_999_999_999_999.5, false, "1000000000000000"),
            (-999_999_999_999_999.5, true, "-1000000000000000"),
            (4_503_599_627_370_495.5, false, "4503599627370496"),
            (1e30, false, "1000000000000000000000000000000"),
        ] {
            assert_eq!(
                format_number(value, descending),
                want,
                "{value} {descending}"
            );
        }
    }

    #[test]
    fn numbers_extrapolate_linearly_in_both_directions() {
        assert_eq!(extrapolate(&n("100"), &n("200"), 1.2), Some(n("320")));
        assert_eq!(extrapolate(&n("200"), &n("100"), 1.2), Some(n("-20")));
        assert_eq!(extrapolate(&n("5"), &n("5"), 1.2), None);
    }

    #[test]
    fn a_number_span_is_a_running_average_of_the_distance_pages_cover() {
        // no previous boundary: the page's own first value
        assert_eq!(span_start(None, &n("10"), &n("50"), None), n("10"));
        // previous span 100 (0..100), this page covered 200 (100..300): 0.2 × 200 + 0.8 × 100
        assert_eq!(
            span_start(Some((&n("0"), &n("100"))), &n("120"), &n("300"), None),
            n("180")
        );
        // descending alike
        assert_eq!(
            span_start(Some((&n("300"), &n("200"))), &n("190"), &n("0"), None),
            n("120")
        );
        // no previous span to average: this page's distance
        assert_eq!(
            span_start(Some((&n("7"), &n("7"))), &n("8"), &n("9"), None),
            n("7")
        );
        // strings keep their first value
        assert_eq!(
            span_start(Some((&s("a"), &s("b"))), &s("c"), &s("d"), None),
            s("c")
        );
        // measured: every lane read up to 400, holding 4 items where the page wanted 1: a page
        // covers (400 - 100) / 4 = 75; 0.2 × 75 + 0.8 × 100
        assert_eq!(
            span_start(
                Some((&n("0"), &n("100"))),
                &n("120"),
                &n("300"),
                Some((&n("400"), 0.25))
            ),
            n("205")
        );
        assert!(margin(100, 20, 10, true) < margin(10, 20, 10, true));
        assert!(margin(100, 20, 10, true) < margin(100, 512, 10, true));
        assert_eq!(
            advance(&n("0"), &n("100"), &n("1000"), 0.5),
            Some(n("1050"))
        );
        assert_eq!(
            advance(&n("100"), &n("0"), &n("1000"), 0.25),
            Some(n("975"))
        );
        assert_eq!(advance(&s("a"), &s("b"), &s("c"), 1.0), None);
        assert!((margin(10, 20, 10, false) - MARGIN).abs() < f64::EPSILON);
    }

    #[test]
    fn poisson_tails_match_their_sums_and_the_normal_approximation() {
        // P(N >= 1) = 1 - e^-λ
        assert!((poisson_at_least(1, 2.0) - (1.0 - (-2.0_f64).exp())).abs() < 1e-12);
        // P(N >= 2) at λ = 1: 1 - 2/e
        assert!((poisson_at_least(2, 1.0) - (1.0 - 2.0 / std::f64::consts::E)).abs() < 1e-12);
        assert!((poisson_at_least(0, 0.0) - 1.0).abs() < f64::EPSILON);
        assert!(poisson_at_least(3, 0.0).abs() < f64::EPSILON);
        // the median of a large Poisson is about its mean
        assert!((poisson_at_least(1000, 1000.0) - 0.5).abs() < 0.02);
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.96) - 0.975).abs() < 1e-3);
        assert!((normal_cdf(-1.96) - 0.025).abs() < 1e-3);
    }

    #[test]
    fn the_end_quantile_follows_what_was_read() {
        // nothing read, 10 lanes of density 1: the 10th item lies within t with
        // P(Poisson(10 t) >= 10); the median is about 0.97
        let prior = Evidence::new(Vec::new(), vec![0.0; 10], 1.0);
        let Some(median) = prior.quantile(10, 0.5) else {
            panic!("no quantile");
        };
        assert!((median - 0.967).abs() < 0.01, "{median}");
        let Some(high) = prior.quantile(10, 0.85) else {
            panic!("no quantile");
        };
        assert!(high > median);
        // 9 items already read within 0.5, every lane read to 0.5: the 10th lies beyond 0.5,
        // the first item of 10 lanes of density 1 there: within 0.5 + t with 1 - e^(-10 t)
        let nine = Evidence::new(vec![0.1; 9], vec![0.5; 10], 1.0);
        let Some(t) = nine.quantile(10, 0.5) else {
            panic!("no quantile");
        };
        assert!(
            (t - (0.5 + std::f64::consts::LN_2 / 10.0)).abs() < 1e-6,
            "{t}"
        );
        // nothing left to read and too few items: no distance
        assert_eq!(
            Evidence::new(vec![0.1], Vec::new(), 1.0).quantile(2, 0.5),
            None
        );
        assert_eq!(beyond(100.0, 20.2, false), Some(n("121")));
        assert_eq!(beyond(100.0, 20.2, true), Some(n("79")));
    }

    #[test]
    fn large_pages_aim_further_than_small_ones() {
        // 10 items: the floors (the end is not known closely enough to aim further)
        assert_eq!(quantiles(10), (FIRST_QUANTILE, LATER_QUANTILE));
        assert_eq!(quantiles(1), (FIRST_QUANTILE, LATER_QUANTILE));
        // 100 items: 1.8 standard deviations (Φ(1.8) = 0.964), then 2.0 (0.977)
        let (first, later) = quantiles(100);
        assert!((first - 0.9641).abs() < 1e-3, "{first}");
        assert!((later - 0.9772).abs() < 1e-3, "{later}");
        // the ceilings
        assert_eq!(quantiles(10_000), (FIRST_QUANTILE_MAX, LATER_QUANTILE_MAX));
        // never lower for a larger page
        let mut last = quantiles(0);
        for want in 1..2_000 {
            let now = quantiles(want);
            assert!(now.0 >= last.0 && now.1 >= last.1, "{want}");
            last = now;
        }
    }

    #[test]
    fn staged_reads_allow_for_their_bounds_reach() {
        // a bound 1.8 spans beyond the last: 0.8 more than a span
        let m = staged_margin(&n("0"), &n("100"), &n("280"), 0.1);
        assert!((m - 0.8).abs() < 1e-9, "{m}");
        // descending alike
        let m = staged_margin(&n("100"), &n("0"), &n("-180"), 0.1);
        assert!((m - 0.8).abs() < 1e-9, "{m}");
        // a span that does not start at 0: measured by its own width (100), both ways
        let m = staged_margin(&n("100"), &n("200"), &n("380"), 0.1);
        assert!((m - 0.8).abs() < 1e-9, "{m}");
        let m = staged_margin(&n("-100"), &n("-200"), &n("-380"), 0.1);
        assert!((m - 0.8).abs() < 1e-9, "{m}");
        // a near bound: the least staged margin, or the page's own when larger
        assert!(
            (staged_margin(&n("0"), &n("100"), &n("110"), 0.1) - STAGED_READ_MARGIN).abs() < 1e-9
        );
        assert!((staged_margin(&n("0"), &n("100"), &n("110"), 0.7) - 0.7).abs() < 1e-9);
        // far bounds are capped; no span or no numbers: the least staged margin
        assert!((staged_margin(&n("0"), &n("100"), &n("900"), 0.1) - 1.0).abs() < 1e-9);
        assert!((staged_margin(&n("5"), &n("5"), &n("9"), 0.1) - STAGED_READ_MARGIN).abs() < 1e-9);
        assert!((staged_margin(&s("a"), &s("b"), &s("c"), 0.1) - STAGED_READ_MARGIN).abs() < 1e-9);
        // a staged read asks for more than an unstaged one of the same share
        assert!(
            poisson_limit(5, staged_margin(&n("0"), &n("100"), &n("118"), 0.1))
                > poisson_limit(5, 0.1)
        );
    }

    #[test]
    fn poisson_limits_cover_a_share_with_its_margin() {
        // share 5, margin 0.2: mean 6, 6 + 3 × √6 = 13.35, up to 14, plus 1
        assert_eq!(poisson_limit(5, 0.2), 15);
        // share 0: one item, to learn the lane's next position
        assert_eq!(poisson_limit(0, 0.2), 1);
        assert!(poisson_limit(100, 0.1) < poisson_limit(100, 0.5));
        assert_eq!(poisson_limit(usize::MAX, 0.2), usize::MAX);
    }

    /// An ascending span's string prediction is its digits followed by the largest character,
    /// so that every key extending those digits lies before the bound (a read up to it takes
    /// them in); a descending one ends on no zero digit.
    #[test]
    fn string_predictions_take_in_every_key_that_extends_their_digits() {
        for (a, b) in [("a", "b"), ("name#aa", "name#ab"), ("u0001", "u0007")] {
            let Some(AttributeValue::S(up)) = extrapolate(&s(a), &s(b), 1.2) else {
                panic!("no prediction from {a:?} to {b:?}");
            };
            let Some((at, last)) = up.char_indices().last() else {
                panic!("an empty prediction");
            };
            assert_eq!(last, char::MAX, "{up:?}");
            let digits = &up[..at];
            for tail in ["", "a", "zz", "\u{10fffe}"] {
                assert_eq!(
                    compare(&s(&format!("{digits}{tail}")), &s(&up)),
                    Ordering::Less,
                    "{digits:?} + {tail:?} against {up:?}"
                );
            }
            let Some(AttributeValue::S(down)) = extrapolate(&s(b), &s(a), 1.2) else {
                panic!("no prediction from {b:?} to {a:?}");
            };
            assert!(!down.ends_with('\0'), "{down:?}");
            assert_eq!(compare(&s(&down), &s(a)), Ordering::Less, "{down:?}");
        }
    }

    #[test]
    fn strings_extrapolate_past_the_common_prefix() {
        let next = extrapolate(&s("name#aa"), &s("name#ab"), 1.0);
        let Some(next) = next else {
            panic!("no prediction");
        };
        assert_eq!(compare(&next, &s("name#ab")), Ordering::Greater);
        assert_eq!(compare(&next, &s("name#b")), Ordering::Less);
        let back = extrapolate(&s("name#ab"), &s("name#aa"), 1.0);
        assert!(back.is_some_and(|v| compare(&v, &s("name#aa")) == Ordering::Less));
        assert_eq!(extrapolate(&s("x"), &n("1"), 1.0), None);
    }
}
