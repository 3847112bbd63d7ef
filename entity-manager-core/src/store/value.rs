//! `DynamoDB` value semantics for the in-memory store: numbers as decimals, key scalars with
//! their order, equality, item validation and filter evaluation.

use std::cmp::Ordering;

use serde_dynamo::{AttributeValue, Item};

use super::{Comparison, Filter};
use crate::key_type::KeyType;

/// A `DynamoDB` number: an exact decimal of at most 38 significant digits.
///
/// The value is `±0.d₁d₂…dₙ × 10^exponent` with `d₁ ≠ 0` and `dₙ ≠ 0`; zero has no digits.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Number {
    negative: bool,
    digits: Digits,
    exponent: i64,
}

/// At most 38 decimal digits, in place: a number key is parsed for every item a query reads,
/// and an allocation per item was the largest part of it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Digits {
    len: u8,
    digits: [u8; 38],
}

impl Digits {
    const EMPTY: Self = Self {
        len: 0,
        digits: [0; 38],
    };

    /// The digits of `iter`; `None` beyond 38.
    fn collect(iter: impl IntoIterator<Item = u8>) -> Option<Self> {
        let mut out = Self::EMPTY;
        for d in iter {
            *out.digits.get_mut(usize::from(out.len))? = d;
            out.len += 1;
        }
        Some(out)
    }

    /// The 38 places, the unused ones 0, as three big-endian words.
    fn words(&self) -> (u128, u128, u64) {
        let (mut high, mut middle, mut low) = ([0u8; 16], [0u8; 16], [0u8; 8]);
        high.copy_from_slice(&self.digits[..16]);
        middle.copy_from_slice(&self.digits[16..32]);
        low[2..].copy_from_slice(&self.digits[32..]);
        (
            u128::from_be_bytes(high),
            u128::from_be_bytes(middle),
            u64::from_be_bytes(low),
        )
    }

    /// The order of the digit strings, compared as words (a number key is compared several
    /// times for every item a query reads): no digit string ends in 0, so one that is a
    /// prefix of another is less with its unused places 0 as well.
    fn cmp_strings(&self, other: &Self) -> Ordering {
        self.words().cmp(&other.words())
    }
}

impl std::ops::Deref for Digits {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.digits[..usize::from(self.len)]
    }
}

impl std::fmt::Debug for Digits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl Number {
    /// Parses a number as `DynamoDB` accepts it (`-12.50`, `1e3`, `.5`); `None` otherwise.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        Self::plain_integer(text.as_bytes()).or_else(|| Self::parse_shaped(text))
    }

    /// [`parse`](Self::parse) of any text, through its [`Shape`].
    fn parse_shaped(text: &str) -> Option<Self> {
        let shape = Shape::of(text)?;
        let Some((first, significant)) = shape.significant else {
            return Some(Self::zero());
        };
        let digits = Digits::collect(shape.digits().skip(first).take(significant))?;
        Some(Self {
            negative: shape.negative,
            digits,
            exponent: shape.exponent,
        })
    }

    /// An integer of at most 38 digits, with no sign but `-` and no space: the number keys
    /// of most tables (timestamps, counters), parsed in one pass as every item a query reads
    /// has its key parsed. `None` for any other text, which [`parse`](Self::parse) reads in
    /// full.
    fn plain_integer(text: &[u8]) -> Option<Self> {
        let (negative, text) = match text {
            [b'-', rest @ ..] => (true, rest),
            text => (false, text),
        };
        if text.is_empty() || text.len() > 38 || !text.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let Some(first) = text.iter().position(|&b| b != b'0') else {
            return Some(Self::zero());
        };
        let last = text.iter().rposition(|&b| b != b'0')?;
        let significant = &text[first..=last];
        let mut digits = Digits::EMPTY;
        for (place, &b) in digits.digits.iter_mut().zip(significant) {
            *place = b - b'0';
        }
        digits.len = u8::try_from(significant.len()).ok()?;
        Some(Self {
            negative,
            digits,
            exponent: i64::try_from(text.len() - first).ok()?,
        })
    }

    /// `stored_bytes` (a test's check) of the number `text` is, without collecting its digits
    /// (an item's size is counted on every read); `None` when `text` is no number.
    pub(crate) fn stored_bytes_of(text: &str) -> Option<usize> {
        let shape = Shape::of(text)?;
        let Some((_, significant)) = shape.significant else {
            return Some(1);
        };
        Some(stored_bytes(
            shape.negative,
            shape.exponent,
            i64::try_from(significant).ok()?,
        ))
    }

    fn zero() -> Self {
        Self {
            negative: false,
            digits: Digits::EMPTY,
            exponent: 0,
        }
    }

    /// The canonical text `DynamoDB` returns: no exponent, no leading or trailing zeros.
    pub(crate) fn canonical(&self) -> String {
        if self.digits.is_empty() {
            return "0".to_owned();
        }
        let digits: String = self.digits.iter().map(|d| char::from(b'0' + d)).collect();
        let n = i64::try_from(digits.len()).unwrap_or(i64::MAX);
        let mut out = String::new();
        if self.negative {
            out.push('-');
        }
        if self.exponent <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n(
                '0',
                usize::try_from(-self.exponent).unwrap_or(0),
            ));
            out.push_str(&digits);
        } else if self.exponent >= n {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n(
                '0',
                usize::try_from(self.exponent - n).unwrap_or(0),
            ));
        } else {
            let split = usize::try_from(self.exponent).unwrap_or(0);
            out.push_str(&digits[..split]);
            out.push('.');
            out.push_str(&digits[split..]);
        }
        out
    }
}

impl Number {
    /// The nearest `f64` (the query's predictions compute with it; exact values are kept as
    /// they are everywhere else).
    pub(crate) fn approx(&self) -> f64 {
        // exact powers of ten as f64 (10^22 is the largest)
        const POW10: [f64; 23] = [
            1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
            1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
        ];
        if self.digits.is_empty() {
            return 0.0;
        }
        // the value is m × 10^e with m the digits as an integer; when m and 10^|e| are both
        // exact in f64 (m < 2^53, |e| ≤ 22), one multiplication or division rounds once: the
        // nearest f64, as parsing the text gives (without building it: the engine's
        // predictions call this for every item they weigh)
        let len = i64::try_from(self.digits.len()).unwrap_or(i64::MAX);
        let e = self.exponent - len;
        if len <= 15
            && let Some(&power) = usize::try_from(e.unsigned_abs())
                .ok()
                .and_then(|i| POW10.get(i))
        {
            let m = self.digits.iter().fold(0u64, |m, &d| m * 10 + u64::from(d));
            // m < 10^15 < 2^53: exact
            #[allow(clippy::cast_precision_loss)]
            let m = m as f64;
            let v = if e >= 0 { m * power } else { m / power };
            return if self.negative { -v } else { v };
        }
        self.canonical().parse().unwrap_or(f64::NAN)
    }

    /// `self + other`, exactly; `None` when the sum needs more than 38 significant digits or
    /// leaves `DynamoDB`'s range.
    pub(crate) fn add(&self, other: &Self) -> Option<Self> {
        if self.digits.is_empty() {
            return Some(other.clone());
        }
        if other.digits.is_empty() {
            return Some(self.clone());
        }
        // each as an integer of decimal digits (least significant first) times 10^low
        let low = |n: &Self| n.exponent - i64::try_from(n.digits.len()).unwrap_or(i64::MAX);
        let base = low(self).min(low(other));
        let widen = |n: &Self| -> Option<Vec<u8>> {
            let shift = usize::try_from(low(n) - base).ok()?;
            if shift > 600 {
                return None;
            }
            let mut v = vec![0u8; shift];
            v.extend(n.digits.iter().rev());
            Some(v)
        };
        let (a, b) = (widen(self)?, widen(other)?);
        let (negative, digits) = if self.negative == other.negative {
            (self.negative, add_digits(&a, &b))
        } else {
            // the sign of the larger magnitude
            match cmp_digits(&a, &b) {
                Ordering::Equal => return Some(Self::zero()),
                Ordering::Greater => (self.negative, sub_digits(&a, &b)),
                Ordering::Less => (other.negative, sub_digits(&b, &a)),
            }
        };
        let first = digits.iter().position(|&d| d != 0)?;
        let last = digits.iter().rposition(|&d| d != 0)?;
        // back to most significant first
        let kept = Digits::collect(digits[first..=last].iter().rev().copied())?;
        let exponent = base
            .checked_add(i64::try_from(last).ok()?)?
            .checked_add(1)?;
        if !(-129..=126).contains(&exponent) {
            return None;
        }
        Some(Self {
            negative,
            digits: kept,
            exponent,
        })
    }

    /// The least number greater than `self` that `DynamoDB` holds (38 significant digits,
    /// magnitudes from 1E-130 to under 1E126): `self` plus one unit in its 38th significant
    /// place; `None` above the largest. What a key condition needs to start strictly after a
    /// number (`BETWEEN` is inclusive at both ends).
    pub(crate) fn next_up(&self) -> Option<Self> {
        if self.digits.is_empty() {
            // 1E-130
            return Some(Self::power_of_ten(-130));
        }
        if self.negative {
            return self.negated().next_down_positive().map(|n| n.negated());
        }
        self.add(&Self::power_of_ten(self.exponent - 38))
    }

    /// The greatest number less than `self` that `DynamoDB` holds; `None` below the least.
    pub(crate) fn next_down(&self) -> Option<Self> {
        self.negated().next_up().map(|n| n.negated())
    }

    /// [`next_down`](Self::next_down) of a positive number: below a power of ten the places
    /// are ten times finer (just below 1 lies 0.99…9, 38 nines).
    fn next_down_positive(&self) -> Option<Self> {
        let step = if *self.digits == [1] {
            if self.exponent == -129 {
                // 1E-130, the least positive number
                return Some(Self::zero());
            }
            self.exponent - 39
        } else {
            self.exponent - 38
        };
        self.add(&Self::power_of_ten(step).negated())
    }

    /// `10^k` (`0.1 × 10^(k+1)`), whether or not `DynamoDB` holds it (a step to add).
    fn power_of_ten(k: i64) -> Self {
        let mut digits = Digits::EMPTY;
        digits.digits[0] = 1;
        digits.len = 1;
        Self {
            negative: false,
            digits,
            exponent: k + 1,
        }
    }

    /// `-self`.
    pub(crate) fn negated(&self) -> Self {
        Self {
            negative: !self.negative && !self.digits.is_empty(),
            ..self.clone()
        }
    }

    /// The bytes `DynamoDB` counts for this number in an item's size: one per pair of digits
    /// (aligned on the decimal point) from the first significant pair to the last, plus one,
    /// plus one more when negative. (What [`stored_bytes_of`](Self::stored_bytes_of) counts
    /// from the text, which the stores use; this form checks it in tests.)
    #[cfg(test)]
    pub(crate) fn stored_bytes(&self) -> usize {
        if self.digits.is_empty() {
            return 1;
        }
        let n = i64::try_from(self.digits.len()).unwrap_or(i64::MAX);
        stored_bytes(self.negative, self.exponent, n)
    }
}

/// `Number::stored_bytes` (a test's check) of a non-zero number of `n` significant digits
/// whose first digit is at `10^(exponent - 1)`.
fn stored_bytes(negative: bool, exponent: i64, n: i64) -> usize {
    // the power of ten of the first and last digits
    let (top, bottom) = (exponent - 1, exponent - n);
    let pairs = top.div_euclid(2) - bottom.div_euclid(2) + 1;
    usize::try_from(pairs).unwrap_or(0) + 1 + usize::from(negative)
}

/// What [`Number::parse`] checks of a number's text, before it collects the digits.
struct Shape<'t> {
    negative: bool,
    int: &'t str,
    frac: &'t str,
    /// The place of the first significant digit among `int` and `frac`'s digits and how many
    /// there are; `None` for zero.
    significant: Option<(usize, usize)>,
    /// The power of ten just above the first significant digit (0 for zero).
    exponent: i64,
}

impl<'t> Shape<'t> {
    /// The shape of a number `DynamoDB` accepts; `None` otherwise.
    fn of(text: &'t str) -> Option<Self> {
        let s = text.trim();
        let (negative, s) = match s.as_bytes().first()? {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        // most numbers are plain integers: one pass tells them
        let (int, frac, exp) = if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            (s, "", 0)
        } else {
            let (mantissa, exp) = match s.find(['e', 'E']) {
                Some(i) => (&s[..i], s[i + 1..].parse::<i64>().ok()?),
                None => (s, 0),
            };
            let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
            if int.is_empty() && frac.is_empty() {
                return None;
            }
            if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
                return None;
            }
            (int, frac, exp)
        };
        let mut shape = Self {
            negative,
            int,
            frac,
            significant: None,
            exponent: 0,
        };
        // the significant digits, without the leading and trailing zeros
        let Some(first) = shape.digits().position(|d| d != 0) else {
            return Some(shape);
        };
        let count = int.len() + frac.len();
        let trailing = shape.digits().rev().position(|d| d != 0).unwrap_or(0);
        let significant = count - trailing - first;
        if significant > 38 {
            return None;
        }
        let int_len = i64::try_from(int.len()).ok()?;
        let first_i = i64::try_from(first).ok()?;
        let exponent = exp.checked_add(int_len)?.checked_sub(first_i)?;
        // DynamoDB's range: 1E-130 ..= 9.9999999999999999999999999999999999999E+125.
        if !(-129..=126).contains(&exponent) {
            return None;
        }
        shape.significant = Some((first, significant));
        shape.exponent = exponent;
        Some(shape)
    }

    /// The digits of the integer and fraction parts, in order.
    fn digits(&self) -> impl DoubleEndedIterator<Item = u8> + '_ {
        self.int.bytes().chain(self.frac.bytes()).map(|b| b - b'0')
    }
}

/// Digit vectors are least significant first.
fn add_digits(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(a.len().max(b.len()) + 1);
    let mut carry = 0;
    for i in 0..a.len().max(b.len()) {
        let d = a.get(i).copied().unwrap_or(0) + b.get(i).copied().unwrap_or(0) + carry;
        out.push(d % 10);
        carry = d / 10;
    }
    if carry > 0 {
        out.push(carry);
    }
    out
}

/// `a - b` for `a >= b`.
fn sub_digits(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(a.len());
    let mut borrow = 0;
    for (i, &x) in a.iter().enumerate() {
        let y = b.get(i).copied().unwrap_or(0) + borrow;
        if x >= y {
            out.push(x - y);
            borrow = 0;
        } else {
            out.push(x + 10 - y);
            borrow = 1;
        }
    }
    out
}

fn cmp_digits(a: &[u8], b: &[u8]) -> Ordering {
    let len = a.len().max(b.len());
    (0..len)
        .rev()
        .map(|i| {
            a.get(i)
                .copied()
                .unwrap_or(0)
                .cmp(&b.get(i).copied().unwrap_or(0))
        })
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// The bytes `DynamoDB` counts for a value in an item's size (measured on DynamoDB Local):
/// strings their UTF-8 bytes, binaries their bytes, numbers [`Number::stored_bytes_of`],
/// booleans and nulls 1, lists and maps 3 plus 1 per element (and a map its keys), sets the sum
/// of their elements.
pub(crate) fn value_bytes(value: &AttributeValue) -> usize {
    let number = |n: &String| Number::stored_bytes_of(n).unwrap_or(n.len());
    match value {
        AttributeValue::S(s) => s.len(),
        AttributeValue::B(b) => b.len(),
        AttributeValue::N(n) => number(n),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::L(l) => 3 + l.iter().map(|v| 1 + value_bytes(v)).sum::<usize>(),
        AttributeValue::M(m) => {
            3 + m
                .iter()
                .map(|(k, v)| 1 + k.len() + value_bytes(v))
                .sum::<usize>()
        }
        AttributeValue::Ss(ss) => ss.iter().map(String::len).sum(),
        AttributeValue::Ns(ns) => ns.iter().map(number).sum(),
        AttributeValue::Bs(bs) => bs.iter().map(Vec::len).sum(),
    }
}

/// The size `DynamoDB` counts for an item: attribute names plus values.
pub(crate) fn item_bytes(item: &Item) -> usize {
    item.iter().map(|(k, v)| k.len() + value_bytes(v)).sum()
}

/// `size(value)` as a condition reads it: `None` for types without a size.
fn size_of(value: &AttributeValue) -> Option<u64> {
    let n = match value {
        AttributeValue::S(s) => s.len(),
        AttributeValue::B(b) => b.len(),
        AttributeValue::L(l) => l.len(),
        AttributeValue::M(m) => m.len(),
        AttributeValue::Ss(s) | AttributeValue::Ns(s) => s.len(),
        AttributeValue::Bs(s) => s.len(),
        _ => return None,
    };
    u64::try_from(n).ok()
}

impl Ord for Number {
    fn cmp(&self, other: &Self) -> Ordering {
        let sign = |n: &Self| match (n.digits.is_empty(), n.negative) {
            (true, _) => 1,
            (false, true) => 0,
            (false, false) => 2,
        };
        match sign(self).cmp(&sign(other)) {
            Ordering::Equal => {}
            o => return o,
        }
        let magnitude = self
            .exponent
            .cmp(&other.exponent)
            .then_with(|| self.digits.cmp_strings(&other.digits));
        if self.negative {
            magnitude.reverse()
        } else {
            magnitude
        }
    }
}

impl PartialOrd for Number {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A key value: string and binary by bytes, numbers numerically. `Min` and `Max` bound ranges.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Scalar {
    Min,
    S(String),
    N(Number),
    B(Vec<u8>),
    Max,
}

impl Scalar {
    /// The key scalar of a value of type `ty`; `None` if the value is not of that type.
    pub(crate) fn of(value: &AttributeValue, ty: KeyType) -> Option<Self> {
        match (value, ty) {
            (AttributeValue::S(s), KeyType::S) => Some(Self::S(s.clone())),
            (AttributeValue::N(n), KeyType::N) => Number::parse(n).map(Self::N),
            (AttributeValue::B(b), KeyType::B) => Some(Self::B(b.clone())),
            _ => None,
        }
    }

    /// The key scalar of an `S`, `N` or `B` value.
    pub(crate) fn any(value: &AttributeValue) -> Option<Self> {
        match value {
            AttributeValue::S(s) => Some(Self::S(s.clone())),
            AttributeValue::N(n) => Number::parse(n).map(Self::N),
            AttributeValue::B(b) => Some(Self::B(b.clone())),
            _ => None,
        }
    }

    /// The attribute value of a key scalar (`None` for `Min` and `Max`): `of` reads it back to
    /// `self`.
    pub(crate) fn to_value(&self) -> Option<AttributeValue> {
        match self {
            Self::S(s) => Some(AttributeValue::S(s.clone())),
            Self::N(n) => Some(AttributeValue::N(n.canonical())),
            Self::B(b) => Some(AttributeValue::B(b.clone())),
            Self::Min | Self::Max => None,
        }
    }

    /// Whether this value begins with `prefix` (strings and binary).
    pub(crate) fn begins_with(&self, prefix: &Self) -> bool {
        match (self, prefix) {
            (Self::S(s), Self::S(p)) => s.as_bytes().starts_with(p.as_bytes()),
            (Self::B(s), Self::B(p)) => s.starts_with(p),
            _ => false,
        }
    }
}

/// The `DynamoDB` type name of a value (for messages).
pub(crate) fn type_name(value: &AttributeValue) -> &'static str {
    match value {
        AttributeValue::S(_) => "S",
        AttributeValue::N(_) => "N",
        AttributeValue::B(_) => "B",
        AttributeValue::Bool(_) => "BOOL",
        AttributeValue::Null(_) => "NULL",
        AttributeValue::M(_) => "M",
        AttributeValue::L(_) => "L",
        AttributeValue::Ss(_) => "SS",
        AttributeValue::Ns(_) => "NS",
        AttributeValue::Bs(_) => "BS",
    }
}

/// Checks a value as `DynamoDB` does on write and rewrites its numbers canonically.
pub(crate) fn normalize(value: &mut AttributeValue, path: &str) -> Result<(), String> {
    match value {
        AttributeValue::N(n) => {
            *n = Number::parse(n)
                .ok_or_else(|| format!("attribute `{path}`: {n:?} is not a DynamoDB number"))?
                .canonical();
        }
        AttributeValue::Ns(ns) => {
            if ns.is_empty() {
                return Err(format!(
                    "attribute `{path}`: an empty number set is not allowed"
                ));
            }
            let mut seen = Vec::new();
            for n in ns.iter_mut() {
                let parsed = Number::parse(n)
                    .ok_or_else(|| format!("attribute `{path}`: {n:?} is not a DynamoDB number"))?;
                if seen.contains(&parsed) {
                    return Err(format!(
                        "attribute `{path}`: the number set holds duplicates"
                    ));
                }
                *n = parsed.canonical();
                seen.push(parsed);
            }
        }
        AttributeValue::Ss(ss) => {
            let mut sorted: Vec<&String> = ss.iter().collect();
            sorted.sort();
            sorted.dedup();
            if ss.is_empty() || sorted.len() != ss.len() {
                return Err(format!(
                    "attribute `{path}`: a string set must be non-empty and hold no duplicates"
                ));
            }
        }
        AttributeValue::Bs(bs) => {
            let mut sorted: Vec<&Vec<u8>> = bs.iter().collect();
            sorted.sort();
            sorted.dedup();
            if bs.is_empty() || sorted.len() != bs.len() {
                return Err(format!(
                    "attribute `{path}`: a binary set must be non-empty and hold no duplicates"
                ));
            }
        }
        AttributeValue::M(m) => {
            for (k, v) in m.iter_mut() {
                normalize(v, &format!("{path}.{k}"))?;
            }
        }
        AttributeValue::L(l) => {
            for (i, v) in l.iter_mut().enumerate() {
                normalize(v, &format!("{path}[{i}]"))?;
            }
        }
        AttributeValue::S(_)
        | AttributeValue::B(_)
        | AttributeValue::Bool(_)
        | AttributeValue::Null(_) => {}
    }
    Ok(())
}

/// `DynamoDB` equality: same type; numbers numerically; sets regardless of order.
pub(crate) fn equal(a: &AttributeValue, b: &AttributeValue) -> bool {
    use AttributeValue as V;
    match (a, b) {
        (V::N(x), V::N(y)) => match (Number::parse(x), Number::parse(y)) {
            (Some(x), Some(y)) => x == y,
            _ => x == y,
        },
        (V::S(x), V::S(y)) => x == y,
        (V::B(x), V::B(y)) => x == y,
        (V::Bool(x), V::Bool(y)) => x == y,
        (V::Null(_), V::Null(_)) => true,
        (V::Ss(x), V::Ss(y)) => x.len() == y.len() && x.iter().all(|e| y.contains(e)),
        (V::Bs(x), V::Bs(y)) => x.len() == y.len() && x.iter().all(|e| y.contains(e)),
        (V::Ns(x), V::Ns(y)) => {
            let x: Vec<_> = x.iter().filter_map(|n| Number::parse(n)).collect();
            let y: Vec<_> = y.iter().filter_map(|n| Number::parse(n)).collect();
            x.len() == y.len() && x.iter().all(|e| y.contains(e))
        }
        (V::L(x), V::L(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| equal(a, b)),
        (V::M(x), V::M(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w)))
        }
        _ => false,
    }
}

/// The order of two values of the same scalar type; `None` otherwise.
fn order(a: &AttributeValue, b: &AttributeValue) -> Option<Ordering> {
    match (Scalar::any(a)?, Scalar::any(b)?) {
        (x @ Scalar::S(_), y @ Scalar::S(_))
        | (x @ Scalar::N(_), y @ Scalar::N(_))
        | (x @ Scalar::B(_), y @ Scalar::B(_)) => Some(x.cmp(&y)),
        _ => None,
    }
}

/// Checks a filter as `DynamoDB` validates a `FilterExpression`; `keys` are the attributes it
/// may not name (the key attributes of the queried table or index).
pub(crate) fn check_filter(filter: &Filter, keys: &[&str]) -> Result<(), String> {
    for attribute in filter.attributes() {
        if keys.contains(&attribute) {
            return Err(format!(
                "Filter Expression can only contain non-primary key attributes: Primary key attribute: {attribute}"
            ));
        }
    }
    check_operands(filter)
}

fn scalar_operand(op: &str, value: &AttributeValue) -> Result<(), String> {
    match value {
        AttributeValue::S(_) | AttributeValue::N(_) | AttributeValue::B(_) => Ok(()),
        other => Err(format!(
            "Invalid FilterExpression: Incorrect operand type for operator or function; operator or function: {op}, operand type: {}",
            type_name(other)
        )),
    }
}

fn check_operands(filter: &Filter) -> Result<(), String> {
    match filter {
        Filter::Compare { op, value, .. } => {
            let mut v = value.clone();
            normalize(&mut v, "filter value")?;
            if !matches!(op, Comparison::Eq | Comparison::Ne) {
                scalar_operand(op.as_str(), value)?;
            }
            Ok(())
        }
        Filter::Between { low, high, .. } => {
            scalar_operand("BETWEEN", low)?;
            scalar_operand("BETWEEN", high)?;
            match order(low, high) {
                Some(Ordering::Greater) => Err(
                    "Invalid FilterExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound"
                        .to_owned(),
                ),
                Some(_) => Ok(()),
                None => Err("Invalid FilterExpression: The BETWEEN operator requires same data type for lower and upper bounds".to_owned()),
            }
        }
        Filter::BeginsWith { prefix, .. } => match prefix {
            AttributeValue::S(_) | AttributeValue::B(_) => Ok(()),
            other => Err(format!(
                "Invalid FilterExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: {}",
                type_name(other)
            )),
        },
        Filter::Contains { value, .. } => {
            let mut v = value.clone();
            normalize(&mut v, "filter value")
        }
        Filter::Exists(_) | Filter::NotExists(_) | Filter::Size { .. } | Filter::Type { .. } => {
            Ok(())
        }
        Filter::In { values, .. } => {
            if values.is_empty() || values.len() > 100 {
                return Err(format!(
                    "Invalid FilterExpression: IN takes 1 to 100 values, not {}",
                    values.len()
                ));
            }
            Ok(())
        }
        Filter::And(fs) | Filter::Or(fs) => {
            if fs.is_empty() {
                return Err("Invalid FilterExpression: AND/OR need at least one operand".to_owned());
            }
            fs.iter().try_for_each(check_operands)
        }
        Filter::Not(f) => check_operands(f),
    }
}

/// Evaluates a (checked) filter on an item.
pub(crate) fn matches(filter: &Filter, item: &Item) -> bool {
    match filter {
        Filter::Compare {
            attribute,
            op,
            value,
        } => match item.get(attribute) {
            None => *op == Comparison::Ne,
            Some(a) => match op {
                Comparison::Eq => equal(a, value),
                Comparison::Ne => !equal(a, value),
                Comparison::Lt => order(a, value) == Some(Ordering::Less),
                Comparison::Le => matches!(order(a, value), Some(Ordering::Less | Ordering::Equal)),
                Comparison::Gt => order(a, value) == Some(Ordering::Greater),
                Comparison::Ge => {
                    matches!(order(a, value), Some(Ordering::Greater | Ordering::Equal))
                }
            },
        },
        Filter::Between {
            attribute,
            low,
            high,
        } => item.get(attribute).is_some_and(|a| {
            matches!(order(a, low), Some(Ordering::Greater | Ordering::Equal))
                && matches!(order(a, high), Some(Ordering::Less | Ordering::Equal))
        }),
        Filter::BeginsWith { attribute, prefix } => {
            item.get(attribute)
                .is_some_and(|a| match (Scalar::any(a), Scalar::any(prefix)) {
                    (Some(a), Some(p)) => a.begins_with(&p),
                    _ => false,
                })
        }
        Filter::Contains { attribute, value } => {
            item.get(attribute).is_some_and(|a| contains(a, value))
        }
        Filter::Exists(attribute) => item.contains_key(attribute),
        Filter::NotExists(attribute) => !item.contains_key(attribute),
        Filter::In { attribute, values } => item
            .get(attribute)
            .is_some_and(|a| values.iter().any(|v| equal(a, v))),
        Filter::And(fs) => fs.iter().all(|f| matches(f, item)),
        Filter::Or(fs) => fs.iter().any(|f| matches(f, item)),
        Filter::Not(f) => !matches(f, item),
        Filter::Size {
            attribute,
            op,
            size,
        } => item
            .get(attribute)
            .and_then(size_of)
            .is_some_and(|n| compare(n.cmp(size), *op)),
        Filter::Type { attribute, of } => item
            .get(attribute)
            .is_some_and(|v| super::AttributeType::of(v) == *of),
    }
}

fn compare(order: Ordering, op: Comparison) -> bool {
    match op {
        Comparison::Eq => order.is_eq(),
        Comparison::Ne => order.is_ne(),
        Comparison::Lt => order.is_lt(),
        Comparison::Le => order.is_le(),
        Comparison::Gt => order.is_gt(),
        Comparison::Ge => order.is_ge(),
    }
}

fn contains(haystack: &AttributeValue, needle: &AttributeValue) -> bool {
    use AttributeValue as V;
    match (haystack, needle) {
        (V::S(h), V::S(n)) => h.contains(n.as_str()),
        (V::B(h), V::B(n)) => n.is_empty() || h.windows(n.len()).any(|w| w == n.as_slice()),
        (V::Ss(h), V::S(n)) => h.contains(n),
        (V::Bs(h), V::B(n)) => h.contains(n),
        (V::Ns(h), V::N(n)) => h.iter().any(|x| equal(&V::N(x.clone()), &V::N(n.clone()))),
        (V::L(h), n) => h.iter().any(|x| equal(x, n)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Number {
        Number::parse(s).unwrap_or_else(Number::zero)
    }

    #[test]
    fn numbers_compare_numerically_and_print_canonically() {
        let sorted = [
            "-100",
            "-9.5",
            "-1",
            "-0.001",
            "0",
            "0.001",
            "1",
            "1.5",
            "9",
            "10",
            "1e3",
            "123456789012345678901234567890",
        ];
        for w in sorted.windows(2) {
            assert!(n(w[0]) < n(w[1]), "{} < {}", w[0], w[1]);
        }
        assert_eq!(n("1.50"), n("1.5"));
        assert_eq!(n("-0"), n("0"));
        assert_eq!(n("010").canonical(), "10");
        assert_eq!(n("1.50").canonical(), "1.5");
        assert_eq!(n("1e3").canonical(), "1000");
        assert_eq!(n("-.25").canonical(), "-0.25");
        assert_eq!(n("0.000").canonical(), "0");
        assert_eq!(n("12345.678").canonical(), "12345.678");
        for bad in ["", "-", ".", "1..2", "abc", "1e", "1e999", "0x10", "1 2"] {
            assert!(Number::parse(bad).is_none(), "{bad:?}");
        }
        assert!(Number::parse(&"1".repeat(39)).is_none());
        assert!(Number::parse(&"1".repeat(38)).is_some());
    }

    proptest::proptest! {
        /// `approx` is the nearest `f64`: what parsing the canonical text gives, on the fast
        /// path (up to 15 digits, |exponent| ≤ 22) and off it.
        #[test]
        fn approx_is_the_parsed_text(
            negative in proptest::bool::ANY,
            digits in "[0-9]{1,20}",
            point in 0usize..21,
            exponent in -40i32..40,
        ) {
            let point = point.min(digits.len());
            let text = format!(
                "{}{}.{}e{exponent}",
                if negative { "-" } else { "" },
                &digits[..point],
                &digits[point..]
            );
            let number = Number::parse(&text)
                .ok_or_else(|| proptest::test_runner::TestCaseError::fail("not parsed"))?;
            let parsed: f64 = number
                .canonical()
                .parse()
                .map_err(|_| proptest::test_runner::TestCaseError::fail("not an f64"))?;
            proptest::prop_assert_eq!(number.approx().to_bits(), parsed.to_bits(), "{}", text);
        }
    }

    /// The order of two numbers written `[-]int.frac` (no exponent), by their fixed-point
    /// text: both scaled to the same number of fraction digits, their integers compared by
    /// length and then digit by digit.
    fn fixed_point_order(a: (bool, &str, &str), b: (bool, &str, &str)) -> Ordering {
        let scale = a.2.len().max(b.2.len());
        let integer = |(_, int, frac): (bool, &str, &str)| {
            let text = format!("{int}{frac:0<scale$}");
            text.trim_start_matches('0').to_owned()
        };
        let (x, y) = (integer(a), integer(b));
        // zero has no sign
        let sign = |negative: bool, digits: &str| match (digits.is_empty(), negative) {
            (true, _) => 1,
            (false, true) => 0,
            (false, false) => 2,
        };
        let (sa, sb) = (sign(a.0, &x), sign(b.0, &y));
        if sa != sb {
            return sa.cmp(&sb);
        }
        let magnitude = x.len().cmp(&y.len()).then_with(|| x.cmp(&y));
        if sa == 0 {
            magnitude.reverse()
        } else {
            magnitude
        }
    }

    proptest::proptest! {
        /// Numbers compare as their values do, up to 38 significant digits (every place of a
        /// number's digits takes part), with leading and trailing zeros anywhere.
        #[test]
        fn numbers_compare_as_their_values(
            a in (proptest::bool::ANY, "0{0,2}[0-9]{0,20}", "[0-9]{0,18}0{0,2}"),
            b in (proptest::bool::ANY, "0{0,2}[0-9]{0,20}", "[0-9]{0,18}0{0,2}"),
            same_start in proptest::bool::ANY,
        ) {
            // half the time, `b` shares `a`'s leading digits: equal and prefix strings
            let b = if same_start {
                (b.0, a.1.clone(), format!("{}{}", a.2, &b.2[..b.2.len().min(4)]))
            } else {
                b
            };
            let text = |(negative, int, frac): &(bool, String, String)| {
                format!("{}{int}.{frac}0", if *negative { "-" } else { "" })
            };
            let (x, y) = (
                Number::parse(&text(&a)),
                Number::parse(&text(&b)),
            );
            if let (Some(x), Some(y)) = (x, y) {
                proptest::prop_assert_eq!(
                    x.cmp(&y),
                    fixed_point_order((a.0, &a.1, &a.2), (b.0, &b.1, &b.2)),
                    "{} against {}",
                    text(&a),
                    text(&b)
                );
                proptest::prop_assert_eq!(x == y, x.cmp(&y).is_eq());
            }
        }
    }

    proptest::proptest! {
        /// A number's size counted from its text is the size of the number parsed, and the
        /// text is refused exactly when it is no number (digits, signs, points, exponents and
        /// zeros in any arrangement, long and short).
        #[test]
        fn sizes_from_the_text_are_the_parsed_sizes(
            text in "[+-]?0{0,3}[0-9]{0,45}(\\.[0-9]{0,45})?([eE][+-]?[0-9]{1,4})?|[ +.eE0-9a-]{0,8}"
        ) {
            proptest::prop_assert_eq!(
                Number::stored_bytes_of(&text),
                Number::parse(&text).map(|n| n.stored_bytes()),
                "{}",
                text
            );
        }
    }

    proptest::proptest! {
        /// The one-pass integer parse reads every integer text as the full parse does (signs,
        /// leading and trailing zeros, 38 digits and more), and takes no other text.
        #[test]
        fn integers_parse_as_any_number_does(
            text in "[+-]?0{0,3}[0-9]{0,40}0{0,3}| ?-?[0-9]{1,5} ?|[0-9.eE-]{0,6}"
        ) {
            let plain = Number::plain_integer(text.as_bytes());
            if plain.is_some() {
                proptest::prop_assert_eq!(&plain, &Number::parse_shaped(&text), "{}", text);
            }
            proptest::prop_assert_eq!(Number::parse(&text), Number::parse_shaped(&text), "{}", text);
        }
    }

    #[test]
    fn numbers_add_exactly() {
        let sum = |a: &str, b: &str| n(a).add(&n(b)).map(|x| x.canonical());
        assert_eq!(sum("1", "2").as_deref(), Some("3"));
        assert_eq!(sum("0.1", "0.2").as_deref(), Some("0.3"));
        assert_eq!(sum("-5", "3").as_deref(), Some("-2"));
        assert_eq!(sum("5", "-5").as_deref(), Some("0"));
        assert_eq!(sum("999", "1").as_deref(), Some("1000"));
        assert_eq!(sum("1e3", "-0.001").as_deref(), Some("999.999"));
        assert_eq!(sum("-1.5", "-1.5").as_deref(), Some("-3"));
        assert_eq!(sum("0", "-7").as_deref(), Some("-7"));
        // 39 significant digits
        assert_eq!(sum(&"9".repeat(38), "0.1"), None);
        assert_eq!(n("4").negated().canonical(), "-4");
    }

    #[test]
    fn the_next_numbers_up_and_down_are_the_neighbours_at_38_digits() {
        let up = |a: &str| n(a).next_up().map(|x| x.canonical());
        let down = |a: &str| n(a).next_down().map(|x| x.canonical());
        let tiny = format!("0.{}1", "0".repeat(129));
        assert_eq!(up("0").as_deref(), Some(tiny.as_str()));
        assert_eq!(down("0"), Some(format!("-{tiny}")));
        assert_eq!(down(&tiny).as_deref(), Some("0"));
        assert_eq!(up(&format!("-{tiny}")).as_deref(), Some("0"));
        let ulp = format!("1.{}1", "0".repeat(36));
        assert_eq!(up("1"), Some(ulp.clone()));
        assert_eq!(down(&ulp).as_deref(), Some("1"));
        // below a power of ten the places are ten times finer
        let nines = format!("0.{}", "9".repeat(38));
        assert_eq!(down("1"), Some(nines.clone()));
        assert_eq!(up(&nines).as_deref(), Some("1"));
        assert_eq!(up("-1"), Some(format!("-{nines}")));
        assert_eq!(down("-1"), Some(format!("-{ulp}")));
        assert_eq!(
            up("1700000000000").as_deref(),
            Some("1700000000000.0000000000000000000000001")
        );
        assert_eq!(
            up(&"9".repeat(38)).as_deref(),
            Some(format!("1{}", "0".repeat(38)).as_str())
        );
        // the largest number has none above it
        let largest = format!("{}{}", "9".repeat(38), "0".repeat(88));
        assert_eq!(up(&largest), None);
        assert_eq!(down(&format!("-{largest}")), None);
        // every result is a number DynamoDB holds, strictly beyond its operand, with nothing
        // between: the one 39-digit number between them is not a number at all
        for text in [
            "3.14",
            "-2.5e-7",
            "12345678901234567890123456789012345678",
            "-1e125",
        ] {
            let (x, above, below) = (n(text), n(text).next_up(), n(text).next_down());
            assert!(
                above
                    .as_ref()
                    .is_some_and(|a| *a > x && Number::parse(&a.canonical()).is_some())
            );
            assert!(
                below
                    .as_ref()
                    .is_some_and(|b| *b < x && Number::parse(&b.canonical()).is_some())
            );
        }
    }

    #[test]
    fn sizes_match_what_dynamodb_local_counts() {
        // figures measured on DynamoDB Local 2 by growing an item to the 400 KB limit
        for (text, bytes) in [
            ("0", 1),
            ("1", 2),
            ("12", 2),
            ("123", 3),
            ("1234", 3),
            ("-1", 3),
            ("1.5", 3),
            ("1e10", 2),
            ("100", 2),
            ("0.01", 2),
            ("101", 3),
            ("-0.5", 3),
            ("12345.678", 6),
            ("1e-130", 2),
            ("9.99e125", 3),
            ("-100", 3),
        ] {
            assert_eq!(n(text).stored_bytes(), bytes, "{text}");
            assert_eq!(Number::stored_bytes_of(text), Some(bytes), "{text}");
        }
        assert_eq!(n(&"1".repeat(38)).stored_bytes(), 20);
        assert_eq!(Number::stored_bytes_of(&"1".repeat(38)), Some(20));
        let nested = AttributeValue::L(vec![
            AttributeValue::L(vec![AttributeValue::N("1".into())]),
            AttributeValue::M([("ab".to_owned(), AttributeValue::S("xyz".into()))].into()),
        ]);
        assert_eq!(value_bytes(&nested), 20);
        assert_eq!(
            value_bytes(&AttributeValue::Ss(vec!["a".into(), "bc".into()])),
            3
        );
        assert_eq!(
            value_bytes(&AttributeValue::Ns(vec!["1".into(), "22".into()])),
            4
        );
    }

    #[test]
    fn strings_compare_by_bytes() {
        let a = Scalar::S("Z".into());
        let b = Scalar::S("a".into());
        let c = Scalar::S("é".into());
        assert!(a < b && b < c);
    }
}
