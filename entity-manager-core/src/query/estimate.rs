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

/// How far beyond the previous page's span the predicted end lies, as a fraction of the span.
pub(crate) const MARGIN: f64 = 0.2;

/// The range key `factor` spans beyond `last`, the span being `first..last` (descending when
/// `last < first`). `None` when no prediction can be made (same key, other types, overflow).
pub(crate) fn extrapolate(
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
    if rounded.abs() < 1e15 {
        format!("{rounded:.0}")
    } else {
        // DynamoDB numbers carry 38 digits: a plain decimal of a large float fits
        format!("{value}")
    }
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

/// Orders two range key values as DynamoDB does (strings and binary by bytes, numbers
/// numerically); values of other types compare as equal.
pub(crate) fn compare(a: &AttributeValue, b: &AttributeValue) -> Ordering {
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

    #[test]
    fn numbers_extrapolate_linearly_in_both_directions() {
        assert_eq!(extrapolate(&n("100"), &n("200"), 1.2), Some(n("320")));
        assert_eq!(extrapolate(&n("200"), &n("100"), 1.2), Some(n("-20")));
        assert_eq!(extrapolate(&n("5"), &n("5"), 1.2), None);
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
