//! Transcodes: reversible, order-preserving encodings of values to strings.
//!
//! A transcode turns a value into the string written inside keys, such that the byte order of
//! the strings is the order of the values, and decodes it back. Two traits describe one:
//!
//! - [`Transcode<T>`] is the typed side, implemented by a marker type (such as [`Timestamp`])
//!   for every Rust type it accepts. `#[derive(Entity)]` checks `#[transcode("timestamp")]`
//!   against the field's type through it, so a mismatch is a compile error on that type.
//! - [`Transcoder`] is the dynamic side the key core uses on DynamoDB attribute values. Every
//!   typed transcode gets one for free through [`Typed`], which reads the attribute with
//!   `serde_dynamo`.
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

use std::fmt;
use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_dynamo::AttributeValue;

/// The DynamoDB scalar type of a key attribute (`AttributeDefinitions`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyType {
    /// `S`: string.
    S,
    /// `N`: number.
    N,
    /// `B`: binary.
    B,
}

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
    pub fn encode(transcode: &'static str, value: impl fmt::Debug, reason: impl Into<String>) -> Self {
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
    /// The DynamoDB type of an attribute holding such values when it is an index key; `None`
    /// when DynamoDB cannot key on it (booleans).
    const KEY_TYPE: Option<KeyType>;
}

/// A typed transcode: an order-preserving, reversible encoding of `T` to a string.
///
/// Laws, checked by property tests for every default transcode: `decode(encode(x)) == x`, and
/// `a < b` exactly when `encode(a) < encode(b)` (byte order), over every value `encode` accepts.
///
/// Implement it on a marker type of your own and name that type in
/// `#[transcode(path::to::Marker)]`.
pub trait Transcode<T>: TranscodeName {
    /// Encodes a value; out-of-range values are errors, never wrapped or clamped.
    fn encode(value: &T) -> Result<String, TranscodeError>;
    /// Decodes a string produced by [`encode`](Self::encode); anything else is an error.
    fn decode(encoded: &str) -> Result<T, TranscodeError>;
}

/// A transcode seen through DynamoDB attribute values: what the key core uses.
pub trait Transcoder: Send + Sync + 'static {
    /// The transcode's name.
    fn name(&self) -> &'static str;
    /// The DynamoDB key type of attributes holding such values.
    fn key_type(&self) -> Option<KeyType>;
    /// Encodes a stored attribute value.
    fn encode(&self, value: &AttributeValue) -> Result<String, TranscodeError>;
    /// Decodes a string back to the stored attribute value.
    fn decode(&self, encoded: &str) -> Result<AttributeValue, TranscodeError>;
}

impl fmt::Debug for dyn Transcoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Transcoder({})", self.name())
    }
}

/// The [`Transcoder`] of a typed transcode `T` over values of type `V`: attribute values are read
/// as `V` with `serde_dynamo` and written back the same way.
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
        let typed: V = serde_dynamo::from_attribute_value(value.clone()).map_err(|e| {
            TranscodeError::encode(T::NAME, DisplayAttr(value), format!("not a {}: {e}", T::NAME))
        })?;
        T::encode(&typed)
    }

    fn decode(&self, encoded: &str) -> Result<AttributeValue, TranscodeError> {
        let typed = T::decode(encoded)?;
        serde_dynamo::to_attribute_value(typed)
            .map_err(|e| TranscodeError::decode(T::NAME, encoded, e.to_string()))
    }
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
    Some(match name {
        "string" => STRING,
        "int" => INT,
        "fix6" => FIX6,
        "timestamp" => TIMESTAMP,
        "boolean" => BOOLEAN,
        "bigint20" => BIGINT20,
        _ => return None,
    })
}

/// The names of the default transcodes.
pub const BUILTIN_NAMES: [&str; 6] = ["string", "int", "fix6", "timestamp", "boolean", "bigint20"];

/// `string` over attribute values.
pub const STRING: &dyn Transcoder = &Typed::<Str, String>::NEW;
/// `int` over attribute values.
pub const INT: &dyn Transcoder = &Typed::<Int, i64>::NEW;
/// `fix6` over attribute values.
pub const FIX6: &dyn Transcoder = &Typed::<Fix6, f64>::NEW;
/// `timestamp` over attribute values.
pub const TIMESTAMP: &dyn Transcoder = &Typed::<Timestamp, i64>::NEW;
/// `boolean` over attribute values.
pub const BOOLEAN: &dyn Transcoder = &Typed::<Boolean, bool>::NEW;
/// `bigint20` over attribute values.
pub const BIGINT20: &dyn Transcoder = &Typed::<BigInt20, i128>::NEW;

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

    fn decode(encoded: &str) -> Result<String, TranscodeError> {
        Ok(encoded.to_owned())
    }
}

// ---------------------------------------------------------------------------------------------
// sign-prefixed fixed-width decimals, shared by int, fix6 and bigint20

/// Writes `magnitude` (which must be below `10^width`) as `p` + `width` digits, or for a negative
/// value `n` + the `width`-digit complement `10^width - magnitude`, so that byte order is numeric
/// order across the whole range. Zero is always `p`.
fn signed_digits(negative: bool, magnitude: u128, width: usize) -> String {
    if negative && magnitude != 0 {
        format!("n{:0width$}", 10u128.pow(width as u32) - magnitude)
    } else {
        format!("p{magnitude:0width$}")
    }
}

/// Parses `p`/`n` + exactly `width` ASCII digits back to (negative, magnitude).
fn parse_signed_digits(
    transcode: &'static str,
    encoded: &str,
    width: usize,
) -> Result<(bool, u128), TranscodeError> {
    let expected = || format!("expected `p` or `n` followed by {width} digits");
    let bytes = encoded.as_bytes();
    if bytes.len() != width + 1 || !bytes[1..].iter().all(u8::is_ascii_digit) {
        return Err(TranscodeError::decode(transcode, encoded, expected()));
    }
    let digits: u128 = encoded[1..]
        .parse()
        .map_err(|_| TranscodeError::decode(transcode, encoded, expected()))?;
    match bytes[0] {
        b'p' => Ok((false, digits)),
        b'n' if digits == 0 => Err(TranscodeError::decode(
            transcode,
            encoded,
            "`n` with an all-zero complement is not a value encode produces",
        )),
        b'n' => Ok((true, 10u128.pow(width as u32) - digits)),
        _ => Err(TranscodeError::decode(transcode, encoded, expected())),
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

impl TranscodeName for Int {
    const NAME: &'static str = "int";
    const KEY_TYPE: Option<KeyType> = Some(KeyType::N);
}

macro_rules! int_impls {
    ($($t:ty),*) => {$(
        impl Transcode<$t> for Int {
            fn encode(value: &$t) -> Result<String, TranscodeError> {
                let v = i128::from(*value);
                if v.unsigned_abs() > INT_MAX as u128 {
                    return Err(TranscodeError::encode("int", value, "magnitude above 9999999999999999 (16 digits)"));
                }
                Ok(signed_digits(v < 0, v.unsigned_abs(), 16))
            }

            fn decode(encoded: &str) -> Result<$t, TranscodeError> {
                let (negative, magnitude) = parse_signed_digits("int", encoded, 16)?;
                let v = if negative { -(magnitude as i128) } else { magnitude as i128 };
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
/// followed by the complement `10^10 - |v|` in the same layout.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fix6;

/// The largest magnitude `fix6` accepts: JavaScript `Number.MAX_SAFE_INTEGER / 1e6`.
pub const FIX6_MAX: f64 = 9_007_199_254_740_991.0 / 1e6;

impl TranscodeName for Fix6 {
    const NAME: &'static str = "fix6";
    const KEY_TYPE: Option<KeyType> = Some(KeyType::N);
}

/// `round(|v| × 10^6)` with ties away from zero on the exact binary value of `v`, as
/// JavaScript's `toFixed(6)` computes it. `v` must be finite and at most [`FIX6_MAX`] in magnitude.
fn micros_to_fixed(v: f64) -> u128 {
    let bits = v.abs().to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32;
    let fraction = u128::from(bits & ((1 << 52) - 1));
    // value = mantissa × 2^shift_exp, exactly
    let (mantissa, shift_exp) = if exponent == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1 << 52), exponent - 1075)
    };
    let scaled = mantissa * 1_000_000; // < 2^73
    if shift_exp >= 0 {
        // |v| ≤ FIX6_MAX keeps this far below u128::MAX
        return scaled << shift_exp;
    }
    let shift = shift_exp.unsigned_abs();
    if shift >= 100 {
        // scaled < 2^73, so the value is below 2^-27 micro-units: rounds to zero
        return 0;
    }
    let quotient = scaled >> shift;
    let remainder = scaled - (quotient << shift);
    // round half up: remainder / 2^shift >= 1/2
    if remainder << 1 >= 1u128 << shift {
        quotient + 1
    } else {
        quotient
    }
}

fn fix6_layout(negative: bool, micros: u128) -> String {
    let m = if negative && micros != 0 {
        10u128.pow(16) - micros
    } else {
        micros
    };
    let sign = if negative && micros != 0 { 'n' } else { 'p' };
    format!("{sign}{:010}.{:06}", m / 1_000_000, m % 1_000_000)
}

macro_rules! fix6_impls {
    ($($t:ty),*) => {$(
        impl Transcode<$t> for Fix6 {
            fn encode(value: &$t) -> Result<String, TranscodeError> {
                let v = f64::from(*value);
                if !v.is_finite() || v.abs() > FIX6_MAX {
                    return Err(TranscodeError::encode("fix6", value, "must be finite with magnitude at most 9007199254.740991"));
                }
                Ok(fix6_layout(v < 0.0, micros_to_fixed(v)))
            }

            fn decode(encoded: &str) -> Result<$t, TranscodeError> {
                let expected = "expected `p` or `n`, 10 digits, `.` and 6 digits";
                let b = encoded.as_bytes();
                let well_formed = b.len() == 18
                    && matches!(b[0], b'p' | b'n')
                    && b[1..11].iter().all(u8::is_ascii_digit)
                    && b[11] == b'.'
                    && b[12..].iter().all(u8::is_ascii_digit);
                if !well_formed {
                    return Err(TranscodeError::decode("fix6", encoded, expected));
                }
                let int: u128 = encoded[1..11].parse().map_err(|_| TranscodeError::decode("fix6", encoded, expected))?;
                let frac: u128 = encoded[12..].parse().map_err(|_| TranscodeError::decode("fix6", encoded, expected))?;
                let digits = int * 1_000_000 + frac;
                let (negative, micros) = match b[0] {
                    b'n' if digits == 0 => return Err(TranscodeError::decode("fix6", encoded, "`n` with an all-zero complement is not a value encode produces")),
                    b'n' => (true, 10u128.pow(16) - digits),
                    _ => (false, digits),
                };
                let text = format!("{}{}.{:06}", if negative { "-" } else { "" }, micros / 1_000_000, micros % 1_000_000);
                let v: f64 = text.parse().map_err(|_| TranscodeError::decode("fix6", encoded, expected))?;
                if v.abs() > FIX6_MAX {
                    return Err(TranscodeError::decode("fix6", encoded, "magnitude above 9007199254.740991"));
                }
                // f32 values are widened on encode; narrowing back is the exact inverse for them
                #[allow(clippy::cast_possible_truncation)]
                Ok(v as $t)
            }
        }
    )*};
}
fix6_impls!(f64, f32);

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
                let v = i128::from(*value);
                if !(0..=i128::from(TIMESTAMP_MAX)).contains(&v) {
                    return Err(TranscodeError::encode("timestamp", value, "must be in 0..=9999999999999 (ms since the epoch, 13 digits)"));
                }
                Ok(format!("{v:013}"))
            }

            fn decode(encoded: &str) -> Result<$t, TranscodeError> {
                let expected = "expected exactly 13 digits";
                if encoded.len() != 13 || !encoded.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(TranscodeError::decode("timestamp", encoded, expected));
                }
                let v: i128 = encoded.parse().map_err(|_| TranscodeError::decode("timestamp", encoded, expected))?;
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

    fn decode(encoded: &str) -> Result<bool, TranscodeError> {
        match encoded {
            "t" => Ok(true),
            "f" => Ok(false),
            _ => Err(TranscodeError::decode("boolean", encoded, "expected `t` or `f`")),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// bigint20

/// `bigint20`: `p`/`n` + 20 digits, for integers with at most 20 digits. A negative value is `n`
/// followed by `10^20 - |v|`.
#[derive(Clone, Copy, Debug, Default)]
pub struct BigInt20;

/// The largest magnitude `bigint20` accepts.
pub const BIGINT20_MAX: i128 = 99_999_999_999_999_999_999;

impl TranscodeName for BigInt20 {
    const NAME: &'static str = "bigint20";
    const KEY_TYPE: Option<KeyType> = Some(KeyType::N);
}

macro_rules! bigint20_impls {
    ($($t:ty),*) => {$(
        impl Transcode<$t> for BigInt20 {
            fn encode(value: &$t) -> Result<String, TranscodeError> {
                let v = i128::try_from(*value).map_err(|_| {
                    TranscodeError::encode("bigint20", value, "magnitude above 99999999999999999999 (20 digits)")
                })?;
                if v.unsigned_abs() > BIGINT20_MAX as u128 {
                    return Err(TranscodeError::encode("bigint20", value, "magnitude above 99999999999999999999 (20 digits)"));
                }
                Ok(signed_digits(v < 0, v.unsigned_abs(), 20))
            }

            fn decode(encoded: &str) -> Result<$t, TranscodeError> {
                let (negative, magnitude) = parse_signed_digits("bigint20", encoded, 20)?;
                // magnitude < 10^20 < 2^67
                #[allow(clippy::cast_possible_wrap)]
                let v = if negative { -(magnitude as i128) } else { magnitude as i128 };
                <$t>::try_from(v).map_err(|_| {
                    TranscodeError::decode("bigint20", encoded, concat!("out of range for ", stringify!($t)))
                })
            }
        }
    )*};
}
bigint20_impls!(i128, u128, i64, u64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fix6_rounds_like_javascript_to_fixed() {
        // vectors of ts-reference §2 and the compat README
        let enc = |v: f64| <Fix6 as Transcode<f64>>::encode(&v).unwrap_or_default();
        assert_eq!(enc(1.5), "p0000000001.500000");
        assert_eq!(enc(0.0078125), "p0000000000.007813");
        assert_eq!(enc(5e-7), "p0000000000.000000"); // 5e-7 is just below 0.0000005 in binary
        assert_eq!(enc(1.000_001_5), "p0000000001.000001");
        assert_eq!(enc(1_234_567_890.123_456), "p1234567890.123456");
        assert_eq!(enc(123.456), "p0000000123.456000");
        assert!(<Fix6 as Transcode<f64>>::encode(&-12_345_678_901.234_56).is_err());
    }
}
