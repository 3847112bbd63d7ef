//! Transcodes: reversible, order-preserving encodings of values to strings.
//!
//! A transcode turns a value into the string written inside keys, such that the byte order of
//! the strings is the order of the values, and decodes it back. Two traits describe one:
//!
//! - [`Transcode<T>`] is the typed side, implemented by a marker type (such as [`Timestamp`])
//!   for every Rust type it accepts. `#[derive(Entity)]` checks `#[transcode("timestamp")]`
//!   against the field's type through it, so a mismatch is a compile error on that type.
//! - [`Transcoder`] is the dynamic side the key core uses on `DynamoDB` attribute values. Every
//!   typed transcode gets one for free through [`Typed`], which reads the attribute with
//!   `serde_dynamo`. [`BigInt20`] is its own transcoder, because `serde_dynamo` cannot read or
//!   write `i128`.
//!
//! The defaults are [`Str`] (`string`), [`Int`] (`int`), [`Fix6`] (`fix6`), [`Timestamp`]
//! (`timestamp`), [`Boolean`] (`boolean`) and [`BigInt20`] (`bigint20`). Non-negative values encode
//! exactly as the TypeScript Entity Manager encodes them; negative values encode so that string
//! order is numeric order (the TypeScript library gets that wrong).
//!
//! ```
//! use entity_manager_core::transcode::{Fix6, Int, Timestamp, Transcode};
//!
//! assert_eq!(<Timestamp as Transcode<u64>>::encode(&1_700_000_000_000)?, "1700000000000");
//! assert_eq!(<Int as Transcode<i64>>::encode(&123_456)?, "p0000000000123456");
//! assert_eq!(<Fix6 as Transcode<f64>>::encode(&0.0078125)?, "p0000000000.007813"); // JS toFixed(6)
//! // Negative values sort before positive ones, and in numeric order.
//! let (a, b) = (<Int as Transcode<i64>>::encode(&-5)?, <Int as Transcode<i64>>::encode(&-1)?);
//! assert!(a < b && b < <Int as Transcode<i64>>::encode(&0)?);
//! # Ok::<(), entity_manager_core::transcode::TranscodeError>(())
//! ```

use std::any::{Any, TypeId};
use std::fmt;
use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_dynamo::AttributeValue;

pub(crate) use crate::key_type::KeyType;

/// Which way a transcode failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// The value could not be encoded (out of range, wrong type).
    Encode,
    /// The string is not an encoding this transcode produces.
    Decode,
}

/// A value that a transcode cannot encode, or a string it cannot decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{} {transcode} {value}: {reason}", match .direction { Direction::Encode => "invalid", Direction::Decode => "invalid encoded" })]
pub struct TranscodeError {
    /// The transcode's name, e.g. `timestamp`.
    pub transcode: &'static str,
    /// Whether encoding or decoding failed.
    pub direction: Direction,
    /// The offending value or string, rendered for the message.
    pub value: String,
    /// What is wrong and what is accepted.
    pub reason: String,
}

impl TranscodeError {
    /// A value this transcode cannot encode.
    pub fn encode(
        transcode: &'static str,
        value: impl fmt::Debug,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            transcode,
            direction: Direction::Encode,
            value: format!("{value:?}"),
            reason: reason.into(),
        }
    }

    /// A string this transcode cannot decode.
    pub fn decode(transcode: &'static str, encoded: &str, reason: impl Into<String>) -> Self {
        Self {
            transcode,
            direction: Direction::Decode,
            value: format!("{encoded:?}"),
            reason: reason.into(),
        }
    }
}

/// The name and key type of a transcode, shared by all the Rust types it accepts.
pub trait TranscodeName {
    /// The name used in `#[transcode("…")]` and in TypeScript configs.
    const NAME: &'static str;
    /// The `DynamoDB` type of an attribute holding such values when it is an index key; `None`
    /// when `DynamoDB` cannot key on it (booleans).
    const KEY_TYPE: Option<KeyType>;
}

/// A typed transcode: an order-preserving, reversible encoding of `T` to a string.
///
/// Laws, checked by property tests for every default transcode: `decode(encode(x)) == x`, and
/// `a < b` exactly when `encode(a) < encode(b)` (byte order), over every value `encode` accepts.
/// `decode` accepts exactly the strings `encode` produces: for any other string it returns an
/// error, and it never panics.
///
/// Implement it on a marker type of your own and name that type in
/// `#[transcode(path::to::Marker)]`.
#[diagnostic::on_unimplemented(
    message = "transcode `{Self}` does not accept values of type `{T}`",
    label = "`{Self}` does not implement `Transcode<{T}>`",
    note = "the defaults accept: `Str` `String`; `Int` integers up to 64 bits; `Fix6` `f64`, `f32`; `Timestamp` `u64`, `i64`, `u32`, `i32`; `Boolean` `bool`; `BigInt20` `i64`, `u64`, `i128`, `u128`"
)]
pub trait Transcode<T>: TranscodeName {
    /// Encodes a value; out-of-range values are errors, never wrapped or clamped.
    fn encode(value: &T) -> Result<String, TranscodeError>;
    /// Decodes a string produced by [`encode`](Self::encode); anything else is an error.
    fn decode(encoded: &str) -> Result<T, TranscodeError>;
    /// Appends exactly [`encode`](Self::encode)`(value)` to `out`; on an error `out` is
    /// unchanged.
    ///
    /// The key core writes every component of a key into one buffer this way. The default
    /// calls `encode`; the default transcodes write in place, without a `String` per value.
    fn encode_into(value: &T, out: &mut String) -> Result<(), TranscodeError> {
        out.push_str(&Self::encode(value)?);
        Ok(())
    }
}

/// A transcode seen through `DynamoDB` attribute values: what the key core uses.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `Transcoder`",
    label = "not a `Transcoder`",
    note = "a typed transcode `T: Transcode<V>` is a `Transcoder` as `Typed::<T, V>::NEW`; the defaults are `transcode::STRING`, `INT`, `FIX6`, `TIMESTAMP`, `BOOLEAN` and `BIGINT20`"
)]
pub trait Transcoder: Send + Sync + 'static {
    /// The transcode's name.
    fn name(&self) -> &'static str;
    /// The `DynamoDB` key type of attributes holding such values.
    fn key_type(&self) -> Option<KeyType>;
    /// Encodes a stored attribute value.
    fn encode(&self, value: &AttributeValue) -> Result<String, TranscodeError>;
    /// Decodes a string back to the stored attribute value.
    fn decode(&self, encoded: &str) -> Result<AttributeValue, TranscodeError>;
    /// Appends exactly [`encode`](Self::encode)`(value)` to `out`; on an error `out` is
    /// unchanged.
    ///
    /// The key core writes every component of a key into one buffer this way. The default
    /// calls `encode`; the default transcoders write in place, without a `String` per value.
    fn encode_into(&self, value: &AttributeValue, out: &mut String) -> Result<(), TranscodeError> {
        out.push_str(&self.encode(value)?);
        Ok(())
    }
}

impl fmt::Debug for dyn Transcoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Transcoder({})", self.name())
    }
}

/// The [`Transcoder`] of a typed transcode `T` over values of type `V`: attribute values are read
/// as `V` with `serde_dynamo` and written back the same way.
///
/// `V` must be a type `serde_dynamo` supports: `String` (`S`), `bool` (`Bool`), the integer types
/// up to 64 bits, `f32` and `f64` (`N`). It does not support `i128`/`u128` (every value fails at
/// run time); [`BigInt20`] is therefore a [`Transcoder`] of its own over `N` strings.
pub struct Typed<T, V>(PhantomData<fn() -> (T, V)>);

impl<T, V> Typed<T, V> {
    /// The transcoder (a zero-sized value, usable in `const` and `static` items).
    pub const NEW: Self = Self(PhantomData);
}

impl<T, V> fmt::Debug for Typed<T, V>
where
    T: TranscodeName,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Typed({}, {})", T::NAME, std::any::type_name::<V>())
    }
}

impl<T, V> Transcoder for Typed<T, V>
where
    T: Transcode<V> + 'static,
    V: Serialize + DeserializeOwned + 'static,
{
    fn name(&self) -> &'static str {
        T::NAME
    }

    fn key_type(&self) -> Option<KeyType> {
        T::KEY_TYPE
    }

    fn encode(&self, value: &AttributeValue) -> Result<String, TranscodeError> {
        let mut out = String::new();
        self.encode_into(value, &mut out)?;
        Ok(out)
    }

    fn encode_into(&self, value: &AttributeValue, out: &mut String) -> Result<(), TranscodeError> {
        // Fast paths, without copying the value: strings and booleans are borrowed as `V` when
        // `V` is `String` or `bool`, numbers parsed as `V` exactly as `serde_dynamo` parses them
        // when `V` is a primitive number. Anything else (and every error) takes the general path.
        let fast = match value {
            AttributeValue::S(s) => (s as &dyn Any)
                .downcast_ref::<V>()
                .map(|v| T::encode_into(v, out)),
            AttributeValue::Bool(b) => (b as &dyn Any)
                .downcast_ref::<V>()
                .map(|v| T::encode_into(v, out)),
            AttributeValue::N(n) => encode_number::<T, V>(n, out),
            _ => None,
        };
        if let Some(encoded) = fast {
            return encoded;
        }
        let typed: V = serde_dynamo::from_attribute_value(value.clone()).map_err(|e| {
            TranscodeError::encode(
                T::NAME,
                DisplayAttr(value),
                format!("not a {}: {e}", T::NAME),
            )
        })?;
        T::encode_into(&typed, out)
    }

    fn decode(&self, encoded: &str) -> Result<AttributeValue, TranscodeError> {
        let typed = T::decode(encoded)?;
        // Fast paths for strings, booleans and numbers, written as `serde_dynamo` writes them.
        if let Some(value) = scalar_attribute(&typed) {
            return Ok(value);
        }
        let typed = match into_string(typed) {
            Ok(s) => return Ok(AttributeValue::S(s)),
            Err(typed) => typed,
        };
        serde_dynamo::to_attribute_value(typed)
            .map_err(|e| TranscodeError::decode(T::NAME, encoded, e.to_string()))
    }
}

/// `n` parsed as `V` the way `serde_dynamo` parses it (`str::parse` of that type), then encoded
/// into `out`, when `V` is a primitive number. `None` when `V` is another type or `n` does not
/// parse, which leaves the error to the general path.
fn encode_number<T, V>(n: &str, out: &mut String) -> Option<Result<(), TranscodeError>>
where
    T: Transcode<V>,
    V: 'static,
{
    macro_rules! parse_as {
        ($($t:ty),*) => {$(
            if TypeId::of::<V>() == TypeId::of::<$t>() {
                let parsed: $t = n.parse().ok()?;
                return (&parsed as &dyn Any)
                    .downcast_ref::<V>()
                    .map(|v| T::encode_into(v, out));
            }
        )*};
    }
    parse_as!(u64, i64, u32, i32, f64, f32, u16, i16, u8, i8);
    None
}

/// `value` itself when `V` is `String` (moved, not copied); otherwise `value` back.
fn into_string<V: 'static>(value: V) -> Result<String, V> {
    if TypeId::of::<V>() != TypeId::of::<String>() {
        return Err(value);
    }
    let mut slot = Some(value);
    if let Some(s) = (&mut slot as &mut dyn Any).downcast_mut::<Option<String>>() {
        return Ok(s.take().unwrap_or_default());
    }
    match slot {
        Some(value) => Err(value),
        None => Ok(String::new()), // not reached: `slot` is only emptied above
    }
}

/// A `bool` or primitive number as the attribute value `serde_dynamo` writes for it.
fn scalar_attribute<V: 'static>(value: &V) -> Option<AttributeValue> {
    // `TypeId::of` comparisons are resolved at compile time; one downcast in the matching branch
    let any: &dyn Any = value;
    macro_rules! number {
        ($($t:ty),*) => {$(
            if TypeId::of::<V>() == TypeId::of::<$t>() {
                return any.downcast_ref::<$t>().map(|v| AttributeValue::N(v.to_string()));
            }
        )*};
    }
    if TypeId::of::<V>() == TypeId::of::<bool>() {
        return any.downcast_ref::<bool>().map(|b| AttributeValue::Bool(*b));
    }
    number!(u64, i64, u32, i32, f64, f32, u16, i16, u8, i8);
    None
}

/// Renders an attribute value compactly for error messages (`"abc"`, `42`, `true`, …).
pub(crate) struct DisplayAttr<'a>(pub(crate) &'a AttributeValue);

impl fmt::Debug for DisplayAttr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            AttributeValue::S(s) => write!(f, "{s:?}"),
            AttributeValue::N(n) => f.write_str(n),
            AttributeValue::Bool(b) => write!(f, "{b}"),
            AttributeValue::Null(_) => f.write_str("null"),
            other => write!(f, "{other:?}"),
        }
    }
}

impl fmt::Display for DisplayAttr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// The default transcodes by name, as a TypeScript config names them.
pub fn builtin(name: &str) -> Option<&'static dyn Transcoder> {
    BUILTINS.into_iter().find(|t| t.name() == name)
}

/// The default transcoders, in the order of [`BUILTIN_NAMES`].
const BUILTINS: [&dyn Transcoder; 6] = [STRING, INT, FIX6, TIMESTAMP, BOOLEAN, BIGINT20];

/// The names of the default transcodes (each transcode's own [`TranscodeName::NAME`]).
pub const BUILTIN_NAMES: [&str; 6] = [
    Str::NAME,
    Int::NAME,
    Fix6::NAME,
    Timestamp::NAME,
    Boolean::NAME,
    BigInt20::NAME,
];

/// `string` over attribute values (`S`).
pub const STRING: &dyn Transcoder = &Typed::<Str, String>::NEW;
/// `int` over attribute values (`N`, integers).
pub const INT: &dyn Transcoder = &Typed::<Int, i64>::NEW;
/// `fix6` over attribute values (`N`).
pub const FIX6: &dyn Transcoder = &Typed::<Fix6, f64>::NEW;
/// `timestamp` over attribute values (`N`, integers).
pub const TIMESTAMP: &dyn Transcoder = &Typed::<Timestamp, i64>::NEW;
/// `boolean` over attribute values (`Bool`).
pub const BOOLEAN: &dyn Transcoder = &Typed::<Boolean, bool>::NEW;
/// `bigint20` over attribute values (`N`, integers of up to 20 digits); see [`BigInt20`].
pub const BIGINT20: &dyn Transcoder = &BigInt20;

// ---------------------------------------------------------------------------------------------
// string

/// `string`: the identity. Byte order of UTF-8 is the order of `String`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Str;

impl TranscodeName for Str {
    const NAME: &'static str = "string";
    const KEY_TYPE: Option<KeyType> = Some(KeyType::S);
}

impl Transcode<String> for Str {
    fn encode(value: &String) -> Result<String, TranscodeError> {
        Ok(value.clone())
    }

    fn encode_into(value: &String, out: &mut String) -> Result<(), TranscodeError> {
        out.push_str(value);
        Ok(())
    }

    fn decode(encoded: &str) -> Result<String, TranscodeError> {
        Ok(encoded.to_owned())
    }
}

// ---------------------------------------------------------------------------------------------
// sign-prefixed fixed-width decimals, shared by int, fix6 and bigint20

/// The value of a run of ASCII digits; `None` if any byte is not an ASCII digit, the run is
/// empty or the value overflows.
fn ascii_digits(bytes: &[u8]) -> Option<u128> {
    if bytes.is_empty() {
        return None;
    }
    if bytes.len() <= 19 {
        // below 10^19: no overflow in 64 bits, which are cheaper than 128
        return bytes
            .iter()
            .try_fold(0u64, |acc, &b| {
                b.is_ascii_digit().then(|| acc * 10 + u64::from(b - b'0'))
            })
            .map(u128::from);
    }
    bytes.iter().try_fold(0u128, |acc, &b| {
        if b.is_ascii_digit() {
            acc.checked_mul(10)?.checked_add(u128::from(b - b'0'))
        } else {
            None
        }
    })
}

/// Writes `value` as `p` + `width` digits, or for a negative value `n` + the `width`-digit
/// complement `modulus - |value|` (`modulus = 10^width`), so that byte order is numeric order
/// across the whole range. Zero is `p`. `|value|` must be below `modulus`; a larger one is an
/// error with `reason`.
fn encode_signed(
    transcode: &'static str,
    value: i128,
    width: usize,
    modulus: u128,
    reason: &str,
) -> Result<String, TranscodeError> {
    let mut out = String::with_capacity(1 + width);
    encode_signed_into(&mut out, transcode, value, width, modulus, reason)?;
    Ok(out)
}

/// [`encode_signed`], appended to `out` (unchanged on an error).
fn encode_signed_into(
    out: &mut String,
    transcode: &'static str,
    value: i128,
    width: usize,
    modulus: u128,
    reason: &str,
) -> Result<(), TranscodeError> {
    let magnitude = value.unsigned_abs();
    if magnitude >= modulus {
        return Err(TranscodeError::encode(transcode, value, reason));
    }
    let (sign, digits) = if value < 0 {
        ('n', modulus - magnitude)
    } else {
        ('p', magnitude)
    };
    out.reserve(1 + width);
    out.push(sign);
    push_digits(out, digits, width);
    Ok(())
}

/// Appends `value` as exactly `width` decimal digits, zero-padded. `value` must be below
/// `10^width` (digits beyond `width` are not written).
fn push_digits(out: &mut String, value: u128, width: usize) {
    const TEN_POW_19: u128 = 10_000_000_000_000_000_000;
    match u64::try_from(value) {
        // 64-bit arithmetic is much cheaper than 128-bit
        Ok(value) if width <= 20 => push_u64_digits(out, value, width),
        _ if width > 19 => {
            // the high part first, then the low 19 digits (each fits in 64 bits when
            // value < 10^38)
            push_digits(out, value / TEN_POW_19, width - 19);
            push_u64_digits(out, u64::try_from(value % TEN_POW_19).unwrap_or(0), 19);
        }
        // value ≥ 2^64 never fits in 19 or fewer digits
        _ => {}
    }
}

/// Appends `value` as exactly `width` (at most 20) decimal digits, zero-padded.
fn push_u64_digits(out: &mut String, mut value: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let width = width.min(digits.len());
    let mut at = digits.len();
    while value > 0 && at > digits.len() - width {
        at -= 1;
        // value % 10 < 10
        #[allow(clippy::cast_possible_truncation)]
        let digit = (value % 10) as u8;
        digits[at] = b'0' + digit;
        value /= 10;
    }
    // ASCII digits only
    out.push_str(std::str::from_utf8(&digits[digits.len() - width..]).unwrap_or_default());
}

/// Parses `p`/`n` + exactly `width` ASCII digits (`modulus = 10^width`), the inverse of
/// [`encode_signed`].
fn decode_signed(
    transcode: &'static str,
    encoded: &str,
    width: usize,
    modulus: u128,
) -> Result<i128, TranscodeError> {
    let malformed = || {
        TranscodeError::decode(
            transcode,
            encoded,
            format!("expected `p` or `n` followed by {width} digits"),
        )
    };
    let bytes = encoded.as_bytes();
    let (&sign, digits) = bytes.split_first().ok_or_else(malformed)?;
    if digits.len() != width {
        return Err(malformed());
    }
    let digits = ascii_digits(digits).ok_or_else(malformed)?;
    let out_of_range = || TranscodeError::decode(transcode, encoded, "out of range");
    match sign {
        b'p' if digits < modulus => i128::try_from(digits).map_err(|_| out_of_range()),
        b'n' if digits == 0 => Err(TranscodeError::decode(
            transcode,
            encoded,
            "`n` with an all-zero complement is not a value encode produces",
        )),
        b'n' if digits < modulus => i128::try_from(modulus - digits)
            .map(|magnitude| -magnitude)
            .map_err(|_| out_of_range()),
        _ => Err(malformed()),
    }
}

// ---------------------------------------------------------------------------------------------
// int

/// `int`: `p`/`n` + 16 digits, for integers with at most 16 digits (|v| ≤ 9 999 999 999 999 999).
///
/// Non-negative values encode as in TypeScript (`p0000000000123456`). A negative value is `n`
/// followed by `10^16 - |v|`, so that `-5` sorts before `-1`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Int;

/// The largest magnitude `int` accepts.
pub const INT_MAX: i64 = 9_999_999_999_999_999;

const INT_WIDTH: usize = 16;
const INT_MODULUS: u128 = 10_000_000_000_000_000;
const INT_RANGE: &str = "magnitude above 9999999999999999 (16 digits)";

impl TranscodeName for Int {
    const NAME: &'static str = "int";
    const KEY_TYPE: Option<KeyType> = Some(KeyType::N);
}

macro_rules! int_impls {
    ($($t:ty),*) => {$(
        impl Transcode<$t> for Int {
            fn encode(value: &$t) -> Result<String, TranscodeError> {
                encode_signed("int", i128::from(*value), INT_WIDTH, INT_MODULUS, INT_RANGE)
            }

            fn encode_into(value: &$t, out: &mut String) -> Result<(), TranscodeError> {
                encode_signed_into(out, "int", i128::from(*value), INT_WIDTH, INT_MODULUS, INT_RANGE)
            }

            fn decode(encoded: &str) -> Result<$t, TranscodeError> {
                let v = decode_signed("int", encoded, INT_WIDTH, INT_MODULUS)?;
                <$t>::try_from(v).map_err(|_| {
                    TranscodeError::decode("int", encoded, concat!("out of range for ", stringify!($t)))
                })
            }
        }
    )*};
}
int_impls!(i8, i16, i32, i64, u8, u16, u32, u64);

// ---------------------------------------------------------------------------------------------
// fix6

/// `fix6`: a signed fixed-point number with six decimals, `p`/`n` + 10 integer digits, `.`, 6
/// decimals, for |v| ≤ `Number.MAX_SAFE_INTEGER / 1e6`.
///
/// Rounding to six decimals is JavaScript's `toFixed(6)`: the exact binary value, ties away from
/// zero (`0.0078125` → `.007813`, where Rust's `{:.6}` gives `.007812`). A negative value is `n`
/// followed by the complement `10^10 - |v|` in the same layout; a negative value that rounds to
/// zero encodes as zero (`p`).
///
/// Decoding yields the float nearest to the decimal and accepts only canonical strings (those
/// `encode` produces for that float). `decode(encode(x)) == x` holds for every float nearest to
/// a six-decimal value, and for every in-range float where floats are sparser than the
/// six-decimal grid (`f64` from 2^33 on, `f32` from 16 on); other floats lose their digits beyond
/// the sixth decimal.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fix6;

/// The largest magnitude `fix6` accepts: JavaScript `Number.MAX_SAFE_INTEGER / 1e6`.
pub const FIX6_MAX: f64 = 9_007_199_254_740_991.0 / 1e6;

impl TranscodeName for Fix6 {
    const NAME: &'static str = "fix6";
    const KEY_TYPE: Option<KeyType> = Some(KeyType::N);
}

/// `round(|v| × 10^6)` with ties away from zero on the exact binary value of `v`, as
/// JavaScript's `toFixed(6)` computes it. `None` if `|v| ≥ 2^52` or `v` is not finite (the
/// callers reject those earlier).
fn round_to_micros(v: f64) -> Option<u64> {
    let bits = v.abs().to_bits();
    let biased_exponent = bits >> 52; // the sign bit is clear
    let fraction = bits & ((1 << 52) - 1);
    // |v| = mantissa × 2^-shift, exactly
    let (mantissa, shift) = match biased_exponent {
        0 => (fraction, 1074),
        1..=1074 => (fraction | (1 << 52), 1075 - biased_exponent),
        _ => return None,
    };
    let scaled = u128::from(mantissa) * 1_000_000; // < 2^73
    if shift >= 100 {
        // |v| × 10^6 = scaled / 2^shift < 2^-27: rounds to zero
        return Some(0);
    }
    let quotient = scaled >> shift;
    let remainder = scaled - (quotient << shift);
    // ties away from zero: round up when remainder / 2^shift >= 1/2
    let rounded = if remainder << 1 >= 1u128 << shift {
        quotient + 1
    } else {
        quotient
    };
    u64::try_from(rounded).ok()
}

/// Ten integer digits and six decimals: the micros of a `fix6` stay below this.
const FIX6_MODULUS: u64 = 10_000_000_000_000_000;

/// The sign (`true`: negative) and rounded magnitude in millionths that `fix6` writes for `v`;
/// `None` when `v` is not finite or |v| > [`FIX6_MAX`]. A negative value that rounds to zero is
/// zero.
fn fix6_micros(v: f64) -> Option<(bool, u64)> {
    if !v.is_finite() || v.abs() > FIX6_MAX {
        return None;
    }
    let micros = round_to_micros(v).filter(|&m| m < FIX6_MODULUS)?;
    Some((v < 0.0 && micros != 0, micros))
}

/// Encodes a finite value with |v| ≤ [`FIX6_MAX`].
fn encode_fix6(v: f64, shown: impl fmt::Debug) -> Result<String, TranscodeError> {
    let mut out = String::with_capacity(18);
    encode_fix6_into(&mut out, v, shown)?;
    Ok(out)
}

/// [`encode_fix6`], appended to `out` (unchanged on an error).
fn encode_fix6_into(
    out: &mut String,
    v: f64,
    shown: impl fmt::Debug,
) -> Result<(), TranscodeError> {
    let (negative, micros) = fix6_micros(v).ok_or_else(|| {
        TranscodeError::encode(
            "fix6",
            &shown,
            "must be finite with magnitude at most 9007199254.740991",
        )
    })?;
    let (sign, digits) = if negative {
        // 0 < micros < FIX6_MODULUS
        ('n', FIX6_MODULUS - micros)
    } else {
        ('p', micros)
    };
    out.reserve(18);
    out.push(sign);
    push_u64_digits(out, digits / 1_000_000, 10);
    out.push('.');
    push_u64_digits(out, digits % 1_000_000, 6);
    Ok(())
}

/// Reads the layout of [`encode_fix6`]: the sign and the magnitude in millionths, without
/// checking that a float encodes to it.
fn fix6_parts(encoded: &str) -> Option<(bool, u64)> {
    let b = encoded.as_bytes();
    if b.len() != 18 || b[11] != b'.' {
        return None;
    }
    let int = u64::try_from(ascii_digits(&b[1..11])?).ok()?;
    let frac = u64::try_from(ascii_digits(&b[12..])?).ok()?;
    let digits = int * 1_000_000 + frac;
    match b[0] {
        b'p' => Some((false, digits)),
        b'n' if digits != 0 => Some((true, FIX6_MODULUS - digits)),
        _ => None,
    }
}

/// Decodes a `fix6` string as the float nearest to its decimal value (`nearest` computes it
/// from the sign and the millionths), and accepts it only if that float encodes back to
/// exactly this string.
fn decode_fix6<T: Copy>(
    encoded: &str,
    nearest: impl Fn(bool, u64) -> Option<T>,
    widen: impl Fn(T) -> f64,
) -> Result<T, TranscodeError> {
    let (negative, micros) = fix6_parts(encoded).ok_or_else(|| {
        TranscodeError::decode(
            "fix6",
            encoded,
            "expected `p` or `n`, 10 digits, `.` and 6 digits",
        )
    })?;
    let v = nearest(negative, micros)
        .ok_or_else(|| TranscodeError::decode("fix6", encoded, "not a decimal number"))?;
    // Out-of-range values, `n` forms of values that round to zero, and decimals that are not
    // what encode writes for the nearest float are all rejected here.
    if fix6_micros(widen(v)) == Some((negative, micros)) {
        Ok(v)
    } else {
        Err(TranscodeError::decode(
            "fix6",
            encoded,
            format!(
                "not the encoding of any {} (out of range or not canonical)",
                std::any::type_name::<T>()
            ),
        ))
    }
}

/// The `f64` nearest to `±micros / 10^6`. Both operands are exact below 2^53 (every in-range
/// value), and IEEE 754 division rounds the exact quotient to the nearest float, as parsing the
/// decimal text would. (From 2^53 on the value is out of range and rejected by the caller.)
fn nearest_f64(negative: bool, micros: u64) -> f64 {
    // exact below 2^53, see above
    #[allow(clippy::cast_precision_loss)]
    let magnitude = micros as f64 / 1e6;
    if negative { -magnitude } else { magnitude }
}

/// The `f32` nearest to `±micros / 10^6`, parsed from the decimal text (through `f64` it would
/// be rounded twice).
fn nearest_f32(negative: bool, micros: u64) -> Option<f32> {
    let sign = if negative { "-" } else { "" };
    format!("{sign}{}.{:06}", micros / 1_000_000, micros % 1_000_000)
        .parse()
        .ok()
}

macro_rules! fix6_impls {
    ($($t:ty => $nearest:expr),*) => {$(
        impl Transcode<$t> for Fix6 {
            fn encode(value: &$t) -> Result<String, TranscodeError> {
                encode_fix6(f64::from(*value), value)
            }

            fn encode_into(value: &$t, out: &mut String) -> Result<(), TranscodeError> {
                encode_fix6_into(out, f64::from(*value), value)
            }

            fn decode(encoded: &str) -> Result<$t, TranscodeError> {
                decode_fix6::<$t>(encoded, $nearest, f64::from)
            }
        }
    )*};
}
fix6_impls!(f64 => |n, m| Some(nearest_f64(n, m)), f32 => nearest_f32);

// ---------------------------------------------------------------------------------------------
// timestamp

/// `timestamp`: milliseconds since the epoch as 13 digits, 0 ..= 9 999 999 999 999.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timestamp;

/// The largest value `timestamp` accepts.
pub const TIMESTAMP_MAX: i64 = 9_999_999_999_999;

impl TranscodeName for Timestamp {
    const NAME: &'static str = "timestamp";
    const KEY_TYPE: Option<KeyType> = Some(KeyType::N);
}

macro_rules! timestamp_impls {
    ($($t:ty),*) => {$(
        impl Transcode<$t> for Timestamp {
            fn encode(value: &$t) -> Result<String, TranscodeError> {
                let mut out = String::with_capacity(13);
                <Self as Transcode<$t>>::encode_into(value, &mut out)?;
                Ok(out)
            }

            fn encode_into(value: &$t, out: &mut String) -> Result<(), TranscodeError> {
                match u64::try_from(*value) {
                    Ok(v) if v <= TIMESTAMP_MAX.unsigned_abs() => {
                        push_u64_digits(out, v, 13);
                        Ok(())
                    }
                    _ => Err(TranscodeError::encode("timestamp", value, "must be in 0..=9999999999999 (ms since the epoch, 13 digits)")),
                }
            }

            fn decode(encoded: &str) -> Result<$t, TranscodeError> {
                let digits = if encoded.len() == 13 { ascii_digits(encoded.as_bytes()) } else { None };
                let v = digits.ok_or_else(|| TranscodeError::decode("timestamp", encoded, "expected exactly 13 digits"))?;
                <$t>::try_from(v).map_err(|_| {
                    TranscodeError::decode("timestamp", encoded, concat!("out of range for ", stringify!($t)))
                })
            }
        }
    )*};
}
timestamp_impls!(i64, u64, i32, u32);

// ---------------------------------------------------------------------------------------------
// boolean

/// `boolean`: `f` or `t`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Boolean;

impl TranscodeName for Boolean {
    const NAME: &'static str = "boolean";
    const KEY_TYPE: Option<KeyType> = None;
}

impl Transcode<bool> for Boolean {
    fn encode(value: &bool) -> Result<String, TranscodeError> {
        Ok(if *value { "t" } else { "f" }.to_owned())
    }

    fn encode_into(value: &bool, out: &mut String) -> Result<(), TranscodeError> {
        out.push(if *value { 't' } else { 'f' });
        Ok(())
    }

    fn decode(encoded: &str) -> Result<bool, TranscodeError> {
        match encoded {
            "t" => Ok(true),
            "f" => Ok(false),
            _ => Err(TranscodeError::decode(
                "boolean",
                encoded,
                "expected `t` or `f`",
            )),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// bigint20

/// `bigint20`: `p`/`n` + 20 digits, for integers with at most 20 digits. A negative value is `n`
/// followed by `10^20 - |v|`.
///
/// As a [`Transcoder`] it reads and writes `N` attributes itself (any integer of at most 20
/// digits): `serde_dynamo` does not support `i128`, so [`Typed`] cannot serve it.
#[derive(Clone, Copy, Debug, Default)]
pub struct BigInt20;

/// The largest magnitude `bigint20` accepts.
pub const BIGINT20_MAX: i128 = 99_999_999_999_999_999_999;

const BIGINT20_WIDTH: usize = 20;
const BIGINT20_MODULUS: u128 = 100_000_000_000_000_000_000;
const BIGINT20_RANGE: &str = "magnitude above 99999999999999999999 (20 digits)";

impl TranscodeName for BigInt20 {
    const NAME: &'static str = "bigint20";
    const KEY_TYPE: Option<KeyType> = Some(KeyType::N);
}

macro_rules! bigint20_impls {
    ($($t:ty),*) => {$(
        impl Transcode<$t> for BigInt20 {
            fn encode(value: &$t) -> Result<String, TranscodeError> {
                encode_signed("bigint20", i128::from(*value), BIGINT20_WIDTH, BIGINT20_MODULUS, BIGINT20_RANGE)
            }

            fn encode_into(value: &$t, out: &mut String) -> Result<(), TranscodeError> {
                encode_signed_into(out, "bigint20", i128::from(*value), BIGINT20_WIDTH, BIGINT20_MODULUS, BIGINT20_RANGE)
            }

            fn decode(encoded: &str) -> Result<$t, TranscodeError> {
                let v = decode_signed("bigint20", encoded, BIGINT20_WIDTH, BIGINT20_MODULUS)?;
                <$t>::try_from(v).map_err(|_| {
                    TranscodeError::decode("bigint20", encoded, concat!("out of range for ", stringify!($t)))
                })
            }
        }
    )*};
}
bigint20_impls!(i64, u64);

impl Transcode<i128> for BigInt20 {
    fn encode(value: &i128) -> Result<String, TranscodeError> {
        encode_signed(
            "bigint20",
            *value,
            BIGINT20_WIDTH,
            BIGINT20_MODULUS,
            BIGINT20_RANGE,
        )
    }

    fn encode_into(value: &i128, out: &mut String) -> Result<(), TranscodeError> {
        encode_signed_into(
            out,
            "bigint20",
            *value,
            BIGINT20_WIDTH,
            BIGINT20_MODULUS,
            BIGINT20_RANGE,
        )
    }

    fn decode(encoded: &str) -> Result<i128, TranscodeError> {
        decode_signed("bigint20", encoded, BIGINT20_WIDTH, BIGINT20_MODULUS)
    }
}

impl Transcode<u128> for BigInt20 {
    fn encode(value: &u128) -> Result<String, TranscodeError> {
        let v = i128::try_from(*value)
            .map_err(|_| TranscodeError::encode("bigint20", value, BIGINT20_RANGE))?;
        <Self as Transcode<i128>>::encode(&v)
    }

    fn decode(encoded: &str) -> Result<u128, TranscodeError> {
        let v = <Self as Transcode<i128>>::decode(encoded)?;
        u128::try_from(v)
            .map_err(|_| TranscodeError::decode("bigint20", encoded, "out of range for u128"))
    }
}

impl Transcoder for BigInt20 {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn key_type(&self) -> Option<KeyType> {
        Self::KEY_TYPE
    }

    fn encode(&self, value: &AttributeValue) -> Result<String, TranscodeError> {
        let mut out = String::with_capacity(1 + BIGINT20_WIDTH);
        Transcoder::encode_into(self, value, &mut out)?;
        Ok(out)
    }

    fn encode_into(&self, value: &AttributeValue, out: &mut String) -> Result<(), TranscodeError> {
        let AttributeValue::N(n) = value else {
            return Err(TranscodeError::encode(
                Self::NAME,
                DisplayAttr(value),
                "not a bigint20: expected a number (N)",
            ));
        };
        let v: i128 = n.parse().map_err(|_| {
            TranscodeError::encode(
                Self::NAME,
                DisplayAttr(value),
                "not a bigint20: expected an integer",
            )
        })?;
        <Self as Transcode<i128>>::encode_into(&v, out)
    }

    fn decode(&self, encoded: &str) -> Result<AttributeValue, TranscodeError> {
        let v = <Self as Transcode<i128>>::decode(encoded)?;
        Ok(AttributeValue::N(v.to_string()))
    }
}

pub(crate) mod ts_mode;

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: f64) -> String {
        <Fix6 as Transcode<f64>>::encode(&v).unwrap_or_default()
    }

    #[test]
    fn fix6_rounds_like_javascript_to_fixed() {
        // vectors of ts-reference §2 and the compat README
        assert_eq!(enc(0.0), "p0000000000.000000");
        assert_eq!(enc(-0.0), "p0000000000.000000");
        assert_eq!(enc(1.5), "p0000000001.500000");
        assert_eq!(enc(0.1), "p0000000000.100000");
        assert_eq!(enc(0.007_812_5), "p0000000000.007813");
        assert_eq!(enc(5e-7), "p0000000000.000000"); // 5e-7 is just below 0.0000005 in binary
        assert_eq!(enc(1.000_001_5), "p0000000001.000001");
        assert_eq!(enc(1_234_567_890.123_456), "p1234567890.123456");
        assert_eq!(enc(123.456), "p0000000123.456000");
        assert_eq!(enc(413.579_628_802_835_94), "p0000000413.579629");
        assert_eq!(enc(f64::MIN_POSITIVE), "p0000000000.000000");
        assert_eq!(enc(5e-324), "p0000000000.000000");
        assert!(<Fix6 as Transcode<f64>>::encode(&-12_345_678_901.234_56).is_err());
    }

    #[test]
    fn fix6_exact_ties_round_away_from_zero() {
        // k / 128 has at most 7 decimals, so every odd k is an exact tie at the sixth decimal
        // when its seventh decimal is 5
        assert_eq!(enc(1.0 / 128.0), "p0000000000.007813");
        assert_eq!(enc(3.0 / 128.0), "p0000000000.023438");
        assert_eq!(enc(-1.0 / 128.0), "n9999999999.992187"); // -0.007813
        assert_eq!(enc(2.5e-6 * 2.0), "p0000000000.000005");
    }

    #[test]
    fn fix6_negative_values_sort_and_round_trip() {
        assert_eq!(enc(-1.5), "n9999999998.500000");
        assert_eq!(enc(-1e-9), "p0000000000.000000");
        assert!(enc(-2.0) < enc(-1.5) && enc(-1.5) < enc(-0.000_001) && enc(-0.000_001) < enc(0.0));
        for s in [enc(-1.5), enc(-FIX6_MAX), enc(FIX6_MAX), enc(-0.000_001)] {
            let v = <Fix6 as Transcode<f64>>::decode(&s);
            assert_eq!(v.map(enc), Ok(s));
        }
    }

    #[test]
    fn fix6_max_encodes_like_javascript() {
        // (Number.MAX_SAFE_INTEGER / 1e6).toFixed(6): the float is 9007199254.74099159…
        assert_eq!(enc(FIX6_MAX), "p9007199254.740992");
        assert_eq!(enc(-FIX6_MAX), "n0992800745.259008");
        assert_eq!(
            <Fix6 as Transcode<f64>>::decode("p9007199254.740992"),
            Ok(FIX6_MAX)
        );
        assert!(<Fix6 as Transcode<f64>>::encode(&9_007_199_254.740_993).is_err());
    }

    #[test]
    fn round_to_micros_rejects_huge_values() {
        assert_eq!(round_to_micros(f64::INFINITY), None);
        assert_eq!(round_to_micros(f64::NAN), None);
        assert_eq!(round_to_micros(4_503_599_627_370_496.0), None); // 2^52
        assert_eq!(round_to_micros(4_503_599_627_370_495.0), None); // too large for u64 micros
        assert_eq!(round_to_micros(1.0), Some(1_000_000));
    }

    #[test]
    fn decoders_reject_non_canonical_forms() {
        for s in [
            "n0000000000.000000",
            "p0000000000.00000",
            "p0000000000,000000",
            "x0000000000.000000",
            "p9007199254.740993", // nearest f64 is above FIX6_MAX
            "p9007199254.740991", // nearest f64 is FIX6_MAX, which encodes as .740992
            "p9999999999.999999",
            "p+000000000.000000",
            "",
        ] {
            assert!(<Fix6 as Transcode<f64>>::decode(s).is_err(), "{s}");
        }
        for s in [
            "n0000000000000000",
            "p000000000000000",
            "p+000000000000000",
            "",
            "p",
        ] {
            assert!(<Int as Transcode<i64>>::decode(s).is_err(), "{s}");
        }
        assert!(<Timestamp as Transcode<i64>>::decode("+000000000000").is_err());
        assert!(<BigInt20 as Transcode<i128>>::decode("n00000000000000000000").is_err());
    }

    /// The general path of [`Typed::encode`]: the value read with `serde_dynamo`.
    fn through_serde<T: Transcode<V>, V: DeserializeOwned>(
        value: &AttributeValue,
    ) -> Option<String> {
        serde_dynamo::from_attribute_value::<_, V>(value.clone())
            .ok()
            .and_then(|v| T::encode(&v).ok())
    }

    #[test]
    fn typed_fast_paths_agree_with_serde_dynamo() {
        fn check<T: Transcode<V> + 'static, V: Serialize + DeserializeOwned + 'static>(
            value: &AttributeValue,
        ) {
            let fast = Transcoder::encode(&Typed::<T, V>::NEW, value).ok();
            assert_eq!(fast, through_serde::<T, V>(value), "{value:?}");
            if let Some(encoded) = fast {
                let decoded = Transcoder::decode(&Typed::<T, V>::NEW, &encoded).ok();
                let expected = T::decode(&encoded)
                    .ok()
                    .and_then(|v| serde_dynamo::to_attribute_value(v).ok());
                assert_eq!(decoded, expected, "{encoded:?}");
            }
        }
        let numbers = [
            "0",
            "1",
            "-1",
            "+5",
            "007",
            "-0",
            "1.5",
            "-2.25",
            "1e3",
            "0.0",
            " 1",
            "",
            "NaN",
            "inf",
            "127",
            "128",
            "-129",
            "255",
            "256",
            "65536",
            "4294967296",
            "1700000000000",
            "9999999999999999",
            "18446744073709551615",
            "18446744073709551616",
        ];
        for n in numbers {
            let v = AttributeValue::N(n.to_owned());
            check::<Int, i64>(&v);
            check::<Int, u64>(&v);
            check::<Int, i32>(&v);
            check::<Int, u32>(&v);
            check::<Int, i16>(&v);
            check::<Int, u16>(&v);
            check::<Int, i8>(&v);
            check::<Int, u8>(&v);
            check::<Timestamp, u64>(&v);
            check::<Timestamp, i64>(&v);
            check::<Fix6, f64>(&v);
            check::<Fix6, f32>(&v);
            check::<Str, String>(&v);
        }
        for value in [
            AttributeValue::S("abc".to_owned()),
            AttributeValue::S(String::new()),
            AttributeValue::S("12".to_owned()),
            AttributeValue::Bool(true),
            AttributeValue::Bool(false),
            AttributeValue::Null(true),
        ] {
            check::<Str, String>(&value);
            check::<Boolean, bool>(&value);
            check::<Int, i64>(&value);
        }
    }

    proptest::proptest! {
        #[test]
        fn push_digits_is_zero_padded_decimal(v in proptest::prelude::any::<u128>(), width in 1usize..=38) {
            let modulus = 10u128.pow(u32::try_from(width).unwrap_or(38));
            let v = v % modulus;
            let mut out = String::from("x");
            push_digits(&mut out, v, width);
            proptest::prop_assert_eq!(out, format!("x{v:0width$}"));
        }

        #[test]
        fn encode_into_appends_exactly_encode(
            int in proptest::prelude::any::<i64>(),
            big in proptest::prelude::any::<i128>(),
            float in proptest::prelude::any::<f64>(),
            text in ".{0,8}",
            flag in proptest::prelude::any::<bool>(),
            prefix in "[a-z|#]{0,4}",
        ) {
            fn same<T: Transcode<V>, V>(value: &V, prefix: &str) -> Result<(), proptest::test_runner::TestCaseError> {
                let mut out = prefix.to_owned();
                let appended = T::encode_into(value, &mut out);
                match T::encode(value) {
                    Ok(encoded) => {
                        proptest::prop_assert!(appended.is_ok());
                        proptest::prop_assert_eq!(out, format!("{prefix}{encoded}"));
                    }
                    Err(e) => {
                        proptest::prop_assert_eq!(appended, Err(e));
                        proptest::prop_assert_eq!(out, prefix);
                    }
                }
                Ok(())
            }
            same::<Int, i64>(&int, &prefix)?;
            same::<Int, i64>(&(int % 20_000_000_000_000_000), &prefix)?;
            same::<Timestamp, i64>(&int, &prefix)?;
            same::<Timestamp, i64>(&(int % 20_000_000_000_000), &prefix)?;
            same::<BigInt20, i128>(&big, &prefix)?;
            same::<BigInt20, i128>(&(big % 200_000_000_000_000_000_000), &prefix)?;
            same::<Fix6, f64>(&float, &prefix)?;
            same::<Fix6, f64>(&(float % 1e10), &prefix)?;
            same::<Str, String>(&text, &prefix)?;
            same::<Boolean, bool>(&flag, &prefix)?;
            // the dynamic side, over attribute values of every kind
            for value in [
                AttributeValue::N(int.to_string()),
                AttributeValue::N((int % 10_000_000_000_000).to_string()),
                AttributeValue::N(big.to_string()),
                AttributeValue::N(float.to_string()),
                AttributeValue::S(text.clone()),
                AttributeValue::Bool(flag),
                AttributeValue::Null(true),
            ] {
                for transcoder in BUILTINS {
                    let mut out = prefix.clone();
                    let appended = transcoder.encode_into(&value, &mut out);
                    match transcoder.encode(&value) {
                        Ok(encoded) => {
                            proptest::prop_assert!(appended.is_ok());
                            proptest::prop_assert_eq!(out, format!("{prefix}{encoded}"));
                        }
                        Err(e) => {
                            proptest::prop_assert_eq!(appended, Err(e));
                            proptest::prop_assert_eq!(&out, &prefix);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn encodings_are_the_formatted_layouts() {
        // the digit writer against `format!`, on the layouts of every numeric transcode
        for v in [0i64, 1, 42, 1_700_000_000_000, 9_999_999_999_999] {
            assert_eq!(
                <Timestamp as Transcode<i64>>::encode(&v),
                Ok(format!("{v:013}"))
            );
            assert_eq!(<Int as Transcode<i64>>::encode(&v), Ok(format!("p{v:016}")));
            assert_eq!(
                <Int as Transcode<i64>>::encode(&(-v - 1)),
                Ok(format!("n{:016}", 10_000_000_000_000_000 - v - 1))
            );
            assert_eq!(
                <BigInt20 as Transcode<i64>>::encode(&v),
                Ok(format!("p{v:020}"))
            );
        }
        let big: i128 = 98_765_432_109_876_543_210;
        assert_eq!(
            <BigInt20 as Transcode<i128>>::encode(&big),
            Ok(format!("p{big:020}"))
        );
        assert_eq!(
            <BigInt20 as Transcode<i128>>::encode(&-big),
            Ok(format!("n{:020}", 100_000_000_000_000_000_000 - big))
        );
        assert_eq!(enc(1234.5), format!("p{:010}.{:06}", 1234, 500_000));
    }

    #[test]
    fn bigint20_transcoder_reads_numbers() {
        assert_eq!(
            BIGINT20.encode(&AttributeValue::N("-1".into())),
            Ok("n99999999999999999999".to_owned())
        );
        assert_eq!(
            BIGINT20.decode("p12345678901234567890"),
            Ok(AttributeValue::N("12345678901234567890".into()))
        );
        assert!(BIGINT20.encode(&AttributeValue::S("1".into())).is_err());
        assert!(BIGINT20.encode(&AttributeValue::N("1.5".into())).is_err());
    }
}
