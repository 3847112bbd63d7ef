//! Laws, vectors and robustness of the default transcodes.
//!
//! - For every transcode and every Rust type it is implemented for: `decode(encode(x)) == x`
//!   over the whole valid range (negatives and both boundaries included), and
//!   `a < b ⇔ encode(a) < encode(b)` in byte order; out-of-range values are `Encode` errors.
//! - `fix6`: exact round trip on the six-decimal grid, encoding equal to an independent
//!   `toFixed(6)` oracle for arbitrary in-range floats, and monotonicity everywhere.
//! - No decoder panics on any string; when one succeeds, encoding the result gives the string
//!   back (decoders accept only canonical encodings).
//! - The TypeScript vectors of `ts-reference.md` §2 for non-negative values.
//! - The dynamic [`Transcoder`] side on `DynamoDB` attribute values.

use std::fmt::{Debug, Display};

use entity_manager::store::KeyType;
use entity_manager::transcode::{
    BIGINT20_MAX, BUILTIN_NAMES, BigInt20, Boolean, Direction, FIX6_MAX, Fix6, INT_MAX, Int, Str,
    TIMESTAMP_MAX, Timestamp, Transcode, TranscodeError, Transcoder, builtin,
};
use proptest::prelude::*;
use proptest::strategy::Union;
use serde_dynamo::AttributeValue;

type TestResult = Result<(), TestCaseError>;

fn fail(e: impl Display) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

// ---------------------------------------------------------------------------------------------
// generic law checks

/// `decode(encode(v)) == v`; returns the encoding.
fn round_trip<T: Transcode<V>, V: PartialEq + Debug>(v: &V) -> Result<String, TestCaseError> {
    let encoded = T::encode(v).map_err(fail)?;
    let decoded = T::decode(&encoded).map_err(fail)?;
    prop_assert_eq!(&decoded, v, "{} decoded {:?}", T::NAME, encoded);
    Ok(encoded)
}

/// `a < b ⇔ encode(a) < encode(b)` (and `==`, `>` likewise), in byte order.
fn same_order<T: Transcode<V>, V: PartialOrd + Debug>(a: &V, b: &V) -> TestResult {
    let (ea, eb) = (T::encode(a).map_err(fail)?, T::encode(b).map_err(fail)?);
    prop_assert_eq!(
        a.partial_cmp(b),
        Some(ea.as_bytes().cmp(eb.as_bytes())),
        "{}: {:?} -> {}, {:?} -> {}",
        T::NAME,
        a,
        ea,
        b,
        eb
    );
    Ok(())
}

/// Both laws for a pair of valid values.
fn laws<T: Transcode<V>, V: PartialOrd + Debug>(a: &V, b: &V) -> TestResult {
    round_trip::<T, V>(a)?;
    round_trip::<T, V>(b)?;
    same_order::<T, V>(a, b)
}

/// `encode(v)` is an `Encode` error of this transcode.
fn rejects<T: Transcode<V>, V: Debug>(v: &V) -> TestResult {
    match T::encode(v) {
        Ok(encoded) => prop_assert!(false, "{} encoded {:?} to {:?}", T::NAME, v, encoded),
        Err(e) => check_error(&e, T::NAME, Direction::Encode)?,
    }
    Ok(())
}

fn check_error(e: &TranscodeError, name: &str, direction: Direction) -> TestResult {
    prop_assert_eq!(e.transcode, name);
    prop_assert_eq!(e.direction, direction);
    let prefix = match direction {
        Direction::Encode => format!("invalid {name} "),
        Direction::Decode => format!("invalid encoded {name} "),
    };
    prop_assert!(e.to_string().starts_with(&prefix), "{}", e);
    Ok(())
}

/// `decode(s)` returns (it does not panic); an `Ok` value encodes back to exactly `s`.
fn decodes_canonically<T: Transcode<V>, V: Debug>(s: &str) -> TestResult {
    match T::decode(s) {
        Ok(v) => {
            let again = T::encode(&v).map_err(fail)?;
            prop_assert_eq!(&again, s, "{} decoded {:?} to {:?}", T::NAME, s, v);
        }
        Err(e) => check_error(&e, T::NAME, Direction::Decode)?,
    }
    Ok(())
}

/// The same through the dynamic side.
fn dyn_decodes_canonically(name: &str, s: &str) -> TestResult {
    let t = builtin(name).ok_or_else(|| fail(name))?;
    match t.decode(s) {
        Ok(v) => {
            let again = t.encode(&v).map_err(fail)?;
            prop_assert_eq!(&again, s, "{} decoded {:?} to {:?}", name, s, v);
        }
        Err(e) => check_error(&e, t.name(), Direction::Decode)?,
    }
    Ok(())
}

/// Every decoder, typed and dynamic.
fn all_decoders(s: &str) -> TestResult {
    decodes_canonically::<Str, String>(s)?;
    decodes_canonically::<Int, i8>(s)?;
    decodes_canonically::<Int, i16>(s)?;
    decodes_canonically::<Int, i32>(s)?;
    decodes_canonically::<Int, i64>(s)?;
    decodes_canonically::<Int, u8>(s)?;
    decodes_canonically::<Int, u16>(s)?;
    decodes_canonically::<Int, u32>(s)?;
    decodes_canonically::<Int, u64>(s)?;
    decodes_canonically::<Fix6, f64>(s)?;
    decodes_canonically::<Fix6, f32>(s)?;
    decodes_canonically::<Timestamp, i64>(s)?;
    decodes_canonically::<Timestamp, u64>(s)?;
    decodes_canonically::<Timestamp, i32>(s)?;
    decodes_canonically::<Timestamp, u32>(s)?;
    decodes_canonically::<Boolean, bool>(s)?;
    decodes_canonically::<BigInt20, i128>(s)?;
    decodes_canonically::<BigInt20, u128>(s)?;
    decodes_canonically::<BigInt20, i64>(s)?;
    decodes_canonically::<BigInt20, u64>(s)?;
    for name in BUILTIN_NAMES {
        dyn_decodes_canonically(name, s)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// integer strategies (values as i128, converted to the type under test)

/// Values in `lo..=hi`: uniform, small, and the boundaries and their neighbours.
fn ints(lo: i128, hi: i128) -> BoxedStrategy<i128> {
    let special: Vec<i128> = [lo, lo + 1, hi - 1, hi, -1, 0, 1]
        .into_iter()
        .filter(|v| (lo..=hi).contains(v))
        .collect();
    prop_oneof![
        4 => lo..=hi,
        2 => lo.max(-1000)..=hi.min(1000),
        2 => proptest::sample::select(special),
    ]
    .boxed()
}

/// Pairs of values in `lo..=hi`: independent, and adjacent (to test order at unit distance).
fn pairs(lo: i128, hi: i128) -> impl Strategy<Value = (i128, i128)> {
    prop_oneof![
        (ints(lo, hi), ints(lo, hi)),
        ints(lo, hi).prop_flat_map(move |a| (Just(a), a..=hi.min(a.saturating_add(2)))),
        ints(lo, hi).prop_flat_map(move |b| (lo.max(b.saturating_sub(2))..=b, Just(b))),
    ]
}

/// Values of the type (`type_lo..=type_hi`) outside the transcode's range `lo..=hi`, or `None`
/// when there are none.
fn outside(lo: i128, hi: i128, type_lo: i128, type_hi: i128) -> BoxedStrategy<Option<i128>> {
    let mut options: Vec<BoxedStrategy<Option<i128>>> = Vec::new();
    if type_lo < lo {
        options.push((type_lo..lo).prop_map(Some).boxed());
        options.push(
            proptest::sample::select(vec![type_lo, lo - 1])
                .prop_map(Some)
                .boxed(),
        );
    }
    if hi < type_hi {
        options.push((hi + 1..=type_hi).prop_map(Some).boxed());
        options.push(
            proptest::sample::select(vec![hi + 1, type_hi])
                .prop_map(Some)
                .boxed(),
        );
    }
    if options.is_empty() {
        Just(None).boxed()
    } else {
        Union::new(options).boxed()
    }
}

const INT_MAX_128: i128 = INT_MAX as i128;
const TIMESTAMP_MAX_128: i128 = TIMESTAMP_MAX as i128;

/// For each (transcode, type): the laws over pairs of valid values, and rejection of values
/// of the type outside the transcode's range.
macro_rules! integer_laws {
    ($($test:ident: $marker:ty, $t:ty, $lo:expr, $hi:expr;)*) => {$(
        proptest! {
            #![proptest_config(ProptestConfig::with_cases(1024))]
            #[test]
            fn $test(
                (a, b) in pairs($lo, $hi),
                out in outside($lo, $hi, i128::from(<$t>::MIN), i128::from(<$t>::MAX)),
            ) {
                let (a, b) = (<$t>::try_from(a).map_err(fail)?, <$t>::try_from(b).map_err(fail)?);
                laws::<$marker, $t>(&a, &b)?;
                if let Some(out) = out {
                    rejects::<$marker, $t>(&<$t>::try_from(out).map_err(fail)?)?;
                }
            }
        }
    )*};
}

integer_laws! {
    int_i8: Int, i8, -128, 127;
    int_i16: Int, i16, i128::from(i16::MIN), i128::from(i16::MAX);
    int_i32: Int, i32, i128::from(i32::MIN), i128::from(i32::MAX);
    int_i64: Int, i64, -INT_MAX_128, INT_MAX_128;
    int_u8: Int, u8, 0, 255;
    int_u16: Int, u16, 0, i128::from(u16::MAX);
    int_u32: Int, u32, 0, i128::from(u32::MAX);
    int_u64: Int, u64, 0, INT_MAX_128;
    timestamp_i64: Timestamp, i64, 0, TIMESTAMP_MAX_128;
    timestamp_u64: Timestamp, u64, 0, TIMESTAMP_MAX_128;
    timestamp_i32: Timestamp, i32, 0, i128::from(i32::MAX);
    timestamp_u32: Timestamp, u32, 0, i128::from(u32::MAX);
    bigint20_i128: BigInt20, i128, -BIGINT20_MAX, BIGINT20_MAX;
    bigint20_i64: BigInt20, i64, i128::from(i64::MIN), i128::from(i64::MAX);
    bigint20_u64: BigInt20, u64, 0, i128::from(u64::MAX);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// `u128` does not fit the i128 plumbing of `integer_laws!`.
    #[test]
    fn bigint20_u128(
        (a, b) in pairs(0, BIGINT20_MAX),
        out in prop_oneof![
            BIGINT20_MAX.unsigned_abs() + 1..=u128::MAX,
            proptest::sample::select(vec![BIGINT20_MAX.unsigned_abs() + 1, u128::MAX]),
        ],
    ) {
        let (a, b) = (a.unsigned_abs(), b.unsigned_abs());
        laws::<BigInt20, u128>(&a, &b)?;
        rejects::<BigInt20, u128>(&out)?;
    }

    /// The same value through different Rust types encodes to the same string.
    #[test]
    fn integer_encodings_agree_across_types(v in ints(-INT_MAX_128, INT_MAX_128)) {
        let as_i64 = i64::try_from(v).map_err(fail)?;
        let int = <Int as Transcode<i64>>::encode(&as_i64).map_err(fail)?;
        if let Ok(small) = i32::try_from(v) {
            prop_assert_eq!(&<Int as Transcode<i32>>::encode(&small).map_err(fail)?, &int);
        }
        if let Ok(unsigned) = u64::try_from(v) {
            prop_assert_eq!(&<Int as Transcode<u64>>::encode(&unsigned).map_err(fail)?, &int);
            prop_assert_eq!(
                <Timestamp as Transcode<u64>>::encode(&unsigned).ok(),
                <Timestamp as Transcode<i64>>::encode(&as_i64).ok()
            );
        }
        let big = <BigInt20 as Transcode<i128>>::encode(&v).map_err(fail)?;
        prop_assert_eq!(&<BigInt20 as Transcode<i64>>::encode(&as_i64).map_err(fail)?, &big);
        // int and bigint20 are the same layout, at widths 16 and 20
        if v >= 0 {
            prop_assert_eq!(&big[5..], &int[1..]);
        }
    }

    #[test]
    fn string_laws(a in any::<String>(), b in any::<String>()) {
        laws::<Str, String>(&a, &b)?;
        prop_assert_eq!(<Str as Transcode<String>>::encode(&a).map_err(fail)?, a);
    }
}

#[test]
fn boolean_laws() -> TestResult {
    for a in [false, true] {
        for b in [false, true] {
            laws::<Boolean, bool>(&a, &b)?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// fix6

/// The largest number of micro-units whose nearest `f64` is in range (`9007199254.740992` and
/// `.740991` both parse to `FIX6_MAX`).
const MAX_MICROS: i64 = 9_007_199_254_740_992;

/// The decimal text of `micros` millionths, as a JavaScript literal would be written.
fn micros_text(micros: i64) -> String {
    let sign = if micros < 0 { "-" } else { "" };
    let m = micros.unsigned_abs();
    format!("{sign}{}.{:06}", m / 1_000_000, m % 1_000_000)
}

fn grid_f64(micros: i64) -> Result<f64, TestCaseError> {
    micros_text(micros).parse().map_err(fail)
}

/// Micro-units in range: uniform, small, the boundaries, and around 2^32 and 2^33 (where f64
/// spacing crosses 1e-6).
fn micros() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => -MAX_MICROS..=MAX_MICROS,
        2 => -10_000_000i64..=10_000_000,
        1 => -MAX_MICROS..=-MAX_MICROS + 10_000,
        1 => MAX_MICROS - 10_000..=MAX_MICROS,
        1 => 4_294_967_296_000_000i64 - 10_000..=4_294_967_296_000_000 + 10_000,
        1 => 8_589_934_592_000_000i64 - 10_000..=8_589_934_592_000_000 + 10_000,
        1 => proptest::sample::select(vec![
            -MAX_MICROS, -MAX_MICROS + 1, -1_000_000, -1, 0, 1, 1_000_000, MAX_MICROS - 1, MAX_MICROS,
        ]),
    ]
}

fn micros_pairs() -> impl Strategy<Value = (i64, i64)> {
    prop_oneof![
        (micros(), micros()),
        micros().prop_flat_map(|a| (Just(a), a..=MAX_MICROS.min(a + 3))),
    ]
}

/// Every in-range `f64`, log-uniformly over magnitudes (subnormals included), plus exact ties
/// at the sixth decimal (`j / 128` for odd `j`) and their neighbours.
fn any_fix6() -> impl Strategy<Value = f64> {
    let by_bits = (any::<bool>(), 0u64..=1056, 0u64..(1u64 << 52)).prop_map(
        |(negative, exponent, fraction)| {
            f64::from_bits((u64::from(negative) << 63) | (exponent << 52) | fraction)
        },
    );
    let tie = (-576_460_752_303i64..=576_460_752_303).prop_filter_map("exact", |j| {
        let v: f64 = format!("{}", 2 * j + 1).parse().ok()?;
        Some(v / 128.0)
    });
    let near_tie = (tie.clone(), -2i32..=2).prop_map(|(v, steps)| nudge(v, steps));
    prop_oneof![
        4 => by_bits,
        2 => -FIX6_MAX..=FIX6_MAX,
        1 => -1e-5..=1e-5,
        2 => tie,
        2 => near_tie,
        1 => proptest::sample::select(vec![
            0.0, -0.0, FIX6_MAX, -FIX6_MAX, 5e-7, -5e-7, 0.007_812_5, 1.000_001_5, f64::MIN_POSITIVE,
            5e-324, -5e-324,
        ]),
    ]
    .prop_filter("in range", |v| v.abs() <= FIX6_MAX)
}

/// `v` moved by `steps` representable floats.
fn nudge(mut v: f64, steps: i32) -> f64 {
    for _ in 0..steps.unsigned_abs() {
        v = if steps > 0 {
            v.next_up()
        } else {
            v.next_down()
        };
    }
    v
}

/// JavaScript `|v|.toFixed(6)` in micro-units, computed independently of the library: Rust
/// prints the exact decimal expansion of a float when asked for at least 1074 decimals, and
/// `toFixed` rounds that exact value half up.
fn to_fixed6_micros(v: f64) -> Result<u64, TestCaseError> {
    let exact = format!("{:.1100}", v.abs());
    let (int, frac) = exact.split_once('.').ok_or_else(|| fail(&exact))?;
    let int: u64 = int.parse().map_err(fail)?;
    let six: u64 = frac
        .get(..6)
        .ok_or_else(|| fail(&exact))?
        .parse()
        .map_err(fail)?;
    let round_up = frac.as_bytes().get(6).is_some_and(|&d| d >= b'5');
    Ok(int * 1_000_000 + six + u64::from(round_up))
}

/// The expected `fix6` encoding of an in-range `v`: for `v >= 0` the TypeScript form, `p` and
/// `toFixed(6)` left-padded to 17; for `v < 0` the complement `10^16 - micros` after `n`.
fn expected_fix6(v: f64) -> Result<String, TestCaseError> {
    let micros = to_fixed6_micros(v)?;
    let (sign, digits) = if v < 0.0 && micros != 0 {
        ('n', 10_000_000_000_000_000 - micros)
    } else {
        ('p', micros)
    };
    Ok(format!(
        "{sign}{:010}.{:06}",
        digits / 1_000_000,
        digits % 1_000_000
    ))
}

#[allow(clippy::float_cmp)] // exact equality is the law under test
fn same_f64(a: f64, b: f64) -> bool {
    a == b
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Values on the six-decimal grid round-trip exactly and keep their order, including
    /// adjacent grid points; below 2^33 the encoding is the grid text itself.
    #[test]
    fn fix6_f64_grid_laws((ma, mb) in micros_pairs()) {
        let (a, b) = (grid_f64(ma)?, grid_f64(mb)?);
        laws::<Fix6, f64>(&a, &b)?;
        if a.abs() < 8_589_934_592.0 {
            let digits = if ma < 0 { 10_000_000_000_000_000 + ma } else { ma };
            let sign = if ma < 0 { 'n' } else { 'p' };
            let text = format!("{sign}{:010}.{:06}", digits / 1_000_000, digits % 1_000_000);
            prop_assert_eq!(<Fix6 as Transcode<f64>>::encode(&a).map_err(fail)?, text);
        }
    }

    /// Every in-range f64 encodes as JavaScript `toFixed(6)` would (sign handling aside),
    /// decodes to a value that re-encodes identically, within half a micro-unit.
    #[test]
    fn fix6_f64_encodes_like_to_fixed(v in any_fix6()) {
        let encoded = <Fix6 as Transcode<f64>>::encode(&v).map_err(fail)?;
        prop_assert_eq!(&encoded, &expected_fix6(v)?, "{:?}", v);
        let decoded = <Fix6 as Transcode<f64>>::decode(&encoded).map_err(fail)?;
        prop_assert_eq!(&<Fix6 as Transcode<f64>>::encode(&decoded).map_err(fail)?, &encoded);
        prop_assert!((decoded - v).abs() <= 5e-7 + 2.0 * v.abs() * f64::EPSILON, "{v:?} -> {decoded:?}");
        // where floats are sparser than the grid, every float round-trips exactly
        if v.abs() >= 8_589_934_592.0 {
            prop_assert!(same_f64(decoded, v), "{v:?} -> {decoded:?}");
        }
    }

    /// `a <= b ⇒ encode(a) <= encode(b)` for arbitrary in-range floats, including neighbours.
    #[test]
    fn fix6_f64_is_monotone(
        (a, b) in prop_oneof![
            (any_fix6(), any_fix6()),
            (any_fix6(), 0i32..=3).prop_map(|(a, steps)| (a, nudge(a, steps))),
        ].prop_filter("in range", |(a, b)| a.abs() <= FIX6_MAX && b.abs() <= FIX6_MAX),
    ) {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let (el, eh) = (
            <Fix6 as Transcode<f64>>::encode(&lo).map_err(fail)?,
            <Fix6 as Transcode<f64>>::encode(&hi).map_err(fail)?,
        );
        prop_assert!(el <= eh, "{lo:?} -> {el}, {hi:?} -> {eh}");
    }

    /// Out-of-range and non-finite values are `Encode` errors.
    #[test]
    fn fix6_f64_rejects_out_of_range(
        v in prop_oneof![
            (FIX6_MAX.next_up()..=f64::MAX),
            (f64::MIN..=(-FIX6_MAX).next_down()),
            proptest::sample::select(vec![
                FIX6_MAX.next_up(), (-FIX6_MAX).next_down(), f64::MAX, f64::MIN,
                f64::INFINITY, f64::NEG_INFINITY, f64::NAN, -f64::NAN, 1e21, -1e21,
            ]),
        ],
    ) {
        rejects::<Fix6, f64>(&v)?;
    }

    /// f32 values on the grid (parsed from the decimal text as f32) round-trip and keep order.
    #[test]
    fn fix6_f32_grid_laws((ma, mb) in micros_pairs()) {
        let a: f32 = micros_text(ma).parse().map_err(fail)?;
        let b: f32 = micros_text(mb).parse().map_err(fail)?;
        prop_assume!(f64::from(a).abs() <= FIX6_MAX && f64::from(b).abs() <= FIX6_MAX);
        laws::<Fix6, f32>(&a, &b)?;
    }

    /// An f32 encodes as its f64 widening; it is monotone, re-encodes identically after a
    /// decode, and from 16 on (where f32 is sparser than the grid) round-trips exactly.
    #[test]
    fn fix6_f32_any(
        (negative, exponent, fraction) in (any::<bool>(), 0u32..=160, 0u32..(1u32 << 23)),
        steps in 0i32..=3,
    ) {
        let a = f32::from_bits((u32::from(negative) << 31) | (exponent << 23) | fraction);
        let mut b = a;
        for _ in 0..steps {
            b = b.next_up();
        }
        for v in [a, b] {
            if f64::from(v).abs() > FIX6_MAX {
                rejects::<Fix6, f32>(&v)?;
                return Ok(());
            }
        }
        let ea = <Fix6 as Transcode<f32>>::encode(&a).map_err(fail)?;
        let eb = <Fix6 as Transcode<f32>>::encode(&b).map_err(fail)?;
        prop_assert_eq!(&ea, &<Fix6 as Transcode<f64>>::encode(&f64::from(a)).map_err(fail)?);
        prop_assert!(ea <= eb, "{a:?} -> {ea}, {b:?} -> {eb}");
        let decoded = <Fix6 as Transcode<f32>>::decode(&ea).map_err(fail)?;
        prop_assert_eq!(&<Fix6 as Transcode<f32>>::encode(&decoded).map_err(fail)?, &ea);
        if a.abs() >= 16.0 {
            round_trip::<Fix6, f32>(&a)?;
        }
    }
}

#[test]
fn fix6_boundaries() -> TestResult {
    // the range is Number.MAX_SAFE_INTEGER / 1e6 either way, inclusive
    laws::<Fix6, f64>(&-FIX6_MAX, &FIX6_MAX)?;
    prop_assert_eq!(round_trip::<Fix6, f64>(&FIX6_MAX)?, "p9007199254.740992");
    prop_assert_eq!(round_trip::<Fix6, f64>(&-FIX6_MAX)?, "n0992800745.259008");
    rejects::<Fix6, f64>(&FIX6_MAX.next_up())?;
    rejects::<Fix6, f64>(&(-FIX6_MAX).next_down())?;
    // the smallest steps around zero
    laws::<Fix6, f64>(&-0.000_001, &0.000_001)?;
    prop_assert_eq!(round_trip::<Fix6, f64>(&-0.000_001)?, "n9999999999.999999");
    prop_assert_eq!(round_trip::<Fix6, f64>(&0.0)?, "p0000000000.000000");
    // -0 and negative values that round to zero encode as zero
    prop_assert_eq!(
        <Fix6 as Transcode<f64>>::encode(&-0.0).map_err(fail)?,
        "p0000000000.000000"
    );
    prop_assert_eq!(
        <Fix6 as Transcode<f64>>::encode(&-4e-7).map_err(fail)?,
        "p0000000000.000000"
    );
    // f32: the largest f32 in range is accepted, the next one is not
    let top: f32 = "9007199254.740991".parse().map_err(fail)?;
    prop_assert!(f64::from(top) <= FIX6_MAX && f64::from(top.next_up()) > FIX6_MAX);
    laws::<Fix6, f32>(&-top, &top)?;
    rejects::<Fix6, f32>(&top.next_up())?;
    rejects::<Fix6, f32>(&(-top).next_down())?;
    for v in [
        f32::MAX,
        f32::MIN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ] {
        rejects::<Fix6, f32>(&v)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// out-of-range integers, exactly at the boundaries

#[test]
fn integer_boundaries() -> TestResult {
    let max = INT_MAX;
    laws::<Int, i64>(&-max, &max)?;
    prop_assert_eq!(round_trip::<Int, i64>(&max)?, "p9999999999999999");
    prop_assert_eq!(round_trip::<Int, i64>(&-max)?, "n0000000000000001");
    prop_assert_eq!(round_trip::<Int, i64>(&-1)?, "n9999999999999999");
    rejects::<Int, i64>(&(max + 1))?;
    rejects::<Int, i64>(&(-max - 1))?;
    rejects::<Int, i64>(&i64::MIN)?;
    rejects::<Int, i64>(&i64::MAX)?;
    rejects::<Int, u64>(&(max.unsigned_abs() + 1))?;
    rejects::<Int, u64>(&u64::MAX)?;

    laws::<Timestamp, i64>(&0, &TIMESTAMP_MAX)?;
    prop_assert_eq!(
        round_trip::<Timestamp, i64>(&TIMESTAMP_MAX)?,
        "9999999999999"
    );
    rejects::<Timestamp, i64>(&-1)?;
    rejects::<Timestamp, i64>(&(TIMESTAMP_MAX + 1))?;
    rejects::<Timestamp, i64>(&i64::MIN)?;
    rejects::<Timestamp, u64>(&(TIMESTAMP_MAX.unsigned_abs() + 1))?;
    rejects::<Timestamp, i32>(&-1)?;
    rejects::<Timestamp, i32>(&i32::MIN)?;

    let big = BIGINT20_MAX;
    laws::<BigInt20, i128>(&-big, &big)?;
    prop_assert_eq!(round_trip::<BigInt20, i128>(&big)?, "p99999999999999999999");
    prop_assert_eq!(
        round_trip::<BigInt20, i128>(&-big)?,
        "n00000000000000000001"
    );
    rejects::<BigInt20, i128>(&(big + 1))?;
    rejects::<BigInt20, i128>(&(-big - 1))?;
    rejects::<BigInt20, i128>(&i128::MIN)?;
    rejects::<BigInt20, i128>(&i128::MAX)?;
    rejects::<BigInt20, u128>(&(big.unsigned_abs() + 1))?;
    rejects::<BigInt20, u128>(&u128::MAX)?;
    // the whole i64 and u64 ranges fit in 20 digits
    laws::<BigInt20, i64>(&i64::MIN, &i64::MAX)?;
    laws::<BigInt20, u64>(&0, &u64::MAX)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// decoders never panic and accept only canonical encodings

/// Strings shaped like (or almost like) the encodings.
fn near_encodings() -> impl Strategy<Value = String> {
    prop_oneof![
        "[np][0-9]{15,17}",
        "[np][0-9]{19,21}",
        "[np][0-9]{10}\\.[0-9]{6}",
        "[np]0[0-9]{9}\\.[0-9]{6}",
        "[np]0{6}[0-9]{4}\\.[0-9]{6}",
        "[np]90071992547[0-9]{5}",
        "[np]9007199254\\.74099[0-9]",
        "[np]0992800745\\.25900[0-9]",
        "[np]0{2,10}[0-9]{0,8}",
        "[0-9]{12,14}",
        "[np+-]?[0-9 .,eE+_-]{0,22}",
        "[np][0-9\\p{Nd}]{16}",
        "[np][0-9\\p{Nd}]{20}",
        "[np][0-9\\p{Nd}]{10}[.\\p{Nd}][0-9\\p{Nd}]{6}",
        "[0-9\\p{Nd}]{13}",
        "[np][0-9]{0,3}[\u{0660}-\u{0669}\u{ff10}-\u{ff19}\u{1d7ce}-\u{1d7ff}][0-9]{10,15}",
        "[\\PC]{0,3}[np][0-9]{16}",
        "[np][0-9]{16}[\\PC]{1,2}",
        "[tfTF\u{0}]{0,2}",
        proptest::sample::select(vec![
            "n0000000000000000",
            "n00000000000000000000",
            "n0000000000.000000",
            "p0000000000000000",
            "p-000000000000001",
            "p+000000000000001",
            "p9007199254.740991",
            "p9007199254.740992",
            "p9007199254.740993",
            "n0992800745.259007",
            "n0992800745.259008",
            "0000000000000",
            "9999999999999",
            "10000000000000",
            "-000000000001",
            "t",
            "f",
            "true",
            "",
        ])
        .prop_map(str::to_owned),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn decoders_accept_only_canonical_near_encodings(s in near_encodings()) {
        all_decoders(&s)?;
    }

    #[test]
    fn decoders_accept_only_canonical_arbitrary_strings(s in any::<String>()) {
        all_decoders(&s)?;
    }
}

/// Every valid encoding decodes: the canonical check does not reject what encode writes.
#[test]
fn decoders_accept_every_encoding_of_grid_values() -> TestResult {
    for micros in (-MAX_MICROS..=MAX_MICROS).step_by(9_007_199_254_741) {
        let v = grid_f64(micros)?;
        let encoded = round_trip::<Fix6, f64>(&v)?;
        decodes_canonically::<Fix6, f64>(&encoded)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// TypeScript vectors (ts-reference §2, entity-tools tests, non-negative values)

fn vector<T: Transcode<V>, V: PartialEq + Debug>(value: V, encoded: &str) -> TestResult {
    prop_assert_eq!(T::encode(&value).map_err(fail)?, encoded);
    prop_assert_eq!(T::decode(encoded).map_err(fail)?, value);
    Ok(())
}

#[test]
fn typescript_vectors() -> TestResult {
    vector::<Str, String>(String::new(), "")?;
    vector::<Str, String>("hello world".to_owned(), "hello world")?;

    vector::<Int, i64>(0, "p0000000000000000")?;
    vector::<Int, i64>(1_234_567_890_123_456, "p1234567890123456")?;
    vector::<Int, i64>(123_456, "p0000000000123456")?;
    vector::<Int, u32>(123_456, "p0000000000123456")?;
    // decode `p12345678901234567` throws
    prop_assert!(<Int as Transcode<i64>>::decode("p12345678901234567").is_err());

    vector::<Fix6, f64>(1_234_567_890.123_456, "p1234567890.123456")?;
    vector::<Fix6, f64>(123.456, "p0000000123.456000")?;
    vector::<Fix6, f64>(1.5, "p0000000001.500000")?;
    vector::<Fix6, f64>(0.0, "p0000000000.000000")?;
    // rounding: encode only, the decoded value is the rounded one
    for (v, encoded, decoded) in [
        (5e-7, "p0000000000.000000", 0.0),
        (1.000_001_5, "p0000000001.000001", 1.000_001),
        (0.007_812_5, "p0000000000.007813", 0.007_813),
        (413.579_628_802_835_94, "p0000000413.579629", 413.579_629),
    ] {
        prop_assert_eq!(<Fix6 as Transcode<f64>>::encode(&v).map_err(fail)?, encoded);
        let back = <Fix6 as Transcode<f64>>::decode(encoded).map_err(fail)?;
        prop_assert!(same_f64(back, decoded), "{encoded} -> {back:?}");
    }
    // encode -12345678901.23456 throws `invalid fix6`
    rejects::<Fix6, f64>(&-12_345_678_901.234_56)?;

    vector::<Timestamp, i64>(0, "0000000000000")?;
    vector::<Timestamp, i64>(123_456, "0000000123456")?;
    vector::<Timestamp, i64>(1_234_567_890_123, "1234567890123")?;
    vector::<Timestamp, u64>(1_700_000_000_000, "1700000000000")?;
    rejects::<Timestamp, i64>(&-123_456)?;
    rejects::<Timestamp, i64>(&10_000_000_000_000)?;

    vector::<Boolean, bool>(true, "t")?;
    vector::<Boolean, bool>(false, "f")?;

    vector::<BigInt20, i128>(0, "p00000000000000000000")?;
    vector::<BigInt20, i128>(12_345_678_901_234_567_890, "p12345678901234567890")?;
    vector::<BigInt20, u128>(12_345_678_901_234_567_890, "p12345678901234567890")?;
    vector::<BigInt20, i64>(1_234_567_890_123_456_789, "p01234567890123456789")?;
    vector::<BigInt20, u64>(12_345_678_901_234_567_890, "p12345678901234567890")?;
    Ok(())
}

/// Negative values: where we deliberately differ from TypeScript (which writes `n` + |v|).
#[test]
fn negative_values_sort_numerically() -> TestResult {
    vector::<Int, i64>(-123_456, "n9999999999876544")?;
    vector::<Int, i64>(-1, "n9999999999999999")?;
    vector::<Fix6, f64>(-123.456, "n9999999876.544000")?;
    vector::<Fix6, f64>(-1.5, "n9999999998.500000")?;
    vector::<BigInt20, i128>(-1, "n99999999999999999999")?;
    vector::<BigInt20, i128>(-1_234_567_890_123_456_789, "n98765432109876543211")?;
    same_order::<Int, i64>(&-5, &-1)?;
    same_order::<Fix6, f64>(&-5.5, &-1.25)?;
    same_order::<BigInt20, i128>(&-5, &-1)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// the dynamic side: builtin transcoders on attribute values

fn n(s: &str) -> AttributeValue {
    AttributeValue::N(s.to_owned())
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

fn transcoder(name: &str) -> Result<&'static dyn Transcoder, TestCaseError> {
    builtin(name).ok_or_else(|| fail(format!("no builtin {name}")))
}

/// `encode(value) == encoded` and `decode(encoded) == value`.
fn dyn_vector(name: &str, value: &AttributeValue, encoded: &str) -> TestResult {
    let t = transcoder(name)?;
    prop_assert_eq!(t.encode(value).map_err(fail)?, encoded);
    prop_assert_eq!(&t.decode(encoded).map_err(fail)?, value);
    Ok(())
}

fn dyn_rejects(name: &str, value: &AttributeValue) -> TestResult {
    let t = transcoder(name)?;
    match t.encode(value) {
        Ok(e) => prop_assert!(false, "{name} encoded {value:?} to {e:?}"),
        Err(e) => check_error(&e, name, Direction::Encode)?,
    }
    Ok(())
}

#[test]
fn builtin_registry() -> TestResult {
    let expected = [
        ("string", Some(KeyType::S)),
        ("int", Some(KeyType::N)),
        ("fix6", Some(KeyType::N)),
        ("timestamp", Some(KeyType::N)),
        ("boolean", None),
        ("bigint20", Some(KeyType::N)),
    ];
    prop_assert_eq!(BUILTIN_NAMES.len(), expected.len());
    for (name, key_type) in expected {
        prop_assert!(BUILTIN_NAMES.contains(&name));
        let t = transcoder(name)?;
        prop_assert_eq!(t.name(), name);
        prop_assert_eq!(t.key_type(), key_type);
        prop_assert_eq!(format!("{t:?}"), format!("Transcoder({name})"));
    }
    // TypeScript's unsortable `number` and `bigint` are not defaults here
    for name in ["number", "bigint", "Int", "", "string "] {
        prop_assert!(builtin(name).is_none(), "{}", name);
    }
    Ok(())
}

#[test]
fn dynamic_vectors() -> TestResult {
    dyn_vector("string", &s("hello"), "hello")?;
    dyn_vector("string", &s(""), "")?;
    dyn_vector("int", &n("123456"), "p0000000000123456")?;
    dyn_vector("int", &n("-5"), "n9999999999999995")?;
    dyn_vector("int", &n("0"), "p0000000000000000")?;
    dyn_vector("fix6", &n("1.5"), "p0000000001.500000")?;
    dyn_vector("fix6", &n("-123.456"), "n9999999876.544000")?;
    dyn_vector("fix6", &n("0.007813"), "p0000000000.007813")?;
    dyn_vector("timestamp", &n("1700000000000"), "1700000000000")?;
    dyn_vector("timestamp", &n("0"), "0000000000000")?;
    dyn_vector("boolean", &AttributeValue::Bool(true), "t")?;
    dyn_vector("boolean", &AttributeValue::Bool(false), "f")?;
    dyn_vector(
        "bigint20",
        &n("12345678901234567890"),
        "p12345678901234567890",
    )?;
    dyn_vector(
        "bigint20",
        &n("-99999999999999999999"),
        "n00000000000000000001",
    )?;
    dyn_vector("bigint20", &n("-1"), "n99999999999999999999")?;
    // rounding on the way in: the stored value comes back rounded
    prop_assert_eq!(
        transcoder("fix6")?.encode(&n("0.0078125")).map_err(fail)?,
        "p0000000000.007813"
    );
    // non-canonical but equal numbers are accepted on the way in
    prop_assert_eq!(
        transcoder("int")?.encode(&n("+007")).map_err(fail)?,
        "p0000000000000007"
    );
    prop_assert_eq!(
        transcoder("bigint20")?.encode(&n("-0")).map_err(fail)?,
        "p00000000000000000000"
    );
    Ok(())
}

#[test]
fn dynamic_errors() -> TestResult {
    let null = AttributeValue::Null(true);
    let list = AttributeValue::L(vec![n("1")]);
    // wrong attribute types
    for name in ["int", "fix6", "timestamp", "bigint20"] {
        dyn_rejects(name, &s("5"))?;
        dyn_rejects(name, &AttributeValue::Bool(true))?;
        dyn_rejects(name, &null)?;
        dyn_rejects(name, &list)?;
        dyn_rejects(name, &AttributeValue::Ns(vec!["1".to_owned()]))?;
        dyn_rejects(name, &n("abc"))?;
        dyn_rejects(name, &n(""))?;
    }
    dyn_rejects("string", &n("1"))?;
    dyn_rejects("string", &AttributeValue::Bool(false))?;
    dyn_rejects("string", &AttributeValue::Ss(vec!["a".to_owned()]))?;
    dyn_rejects("boolean", &s("true"))?;
    dyn_rejects("boolean", &n("1"))?;
    dyn_rejects("boolean", &null)?;
    // non-integers to integer transcodes
    for name in ["int", "timestamp", "bigint20"] {
        dyn_rejects(name, &n("1.5"))?;
        dyn_rejects(name, &n("1e3"))?;
        dyn_rejects(name, &n("NaN"))?;
    }
    // out of range
    dyn_rejects("int", &n("10000000000000000"))?;
    dyn_rejects("int", &n("-10000000000000000"))?;
    dyn_rejects("int", &n("99999999999999999999999"))?;
    dyn_rejects("timestamp", &n("-1"))?;
    dyn_rejects("timestamp", &n("10000000000000"))?;
    dyn_rejects("bigint20", &n("100000000000000000000"))?;
    dyn_rejects("bigint20", &n("-100000000000000000000"))?;
    dyn_rejects("bigint20", &n("999999999999999999999999999999999999999999"))?;
    dyn_rejects("fix6", &n("9007199254.740993"))?;
    dyn_rejects("fix6", &n("1e300"))?;
    dyn_rejects("fix6", &n("inf"))?;
    dyn_rejects("fix6", &n("NaN"))?;
    // decoding errors
    for name in BUILTIN_NAMES.into_iter().filter(|&name| name != "string") {
        let t = transcoder(name)?;
        for bad in ["", "x", "n0000000000000000", "p12345678901234567", "T"] {
            match t.decode(bad) {
                Ok(v) => prop_assert!(false, "{name} decoded {bad:?} to {v:?}"),
                Err(e) => check_error(&e, name, Direction::Decode)?,
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// The dynamic side agrees with the typed side on every valid number.
    #[test]
    fn dynamic_agrees_with_typed(
        i in ints(-INT_MAX_128, INT_MAX_128),
        t in ints(0, TIMESTAMP_MAX_128),
        big in ints(-BIGINT20_MAX, BIGINT20_MAX),
        micros in micros(),
        flag in any::<bool>(),
        text in any::<String>(),
    ) {
        let i = i64::try_from(i).map_err(fail)?;
        dyn_vector("int", &n(&i.to_string()), &<Int as Transcode<i64>>::encode(&i).map_err(fail)?)?;
        let t = i64::try_from(t).map_err(fail)?;
        dyn_vector("timestamp", &n(&t.to_string()), &<Timestamp as Transcode<i64>>::encode(&t).map_err(fail)?)?;
        dyn_vector("bigint20", &n(&big.to_string()), &<BigInt20 as Transcode<i128>>::encode(&big).map_err(fail)?)?;
        dyn_vector("boolean", &AttributeValue::Bool(flag), &<Boolean as Transcode<bool>>::encode(&flag).map_err(fail)?)?;
        dyn_vector("string", &s(&text), &text)?;

        // fix6: the stored N text may be any spelling of the value; it comes back as the
        // shortest one, which parses to the same float
        let v = grid_f64(micros)?;
        let typed = <Fix6 as Transcode<f64>>::encode(&v).map_err(fail)?;
        let fix6 = transcoder("fix6")?;
        prop_assert_eq!(&fix6.encode(&n(&micros_text(micros))).map_err(fail)?, &typed);
        match fix6.decode(&typed).map_err(fail)? {
            AttributeValue::N(back) => {
                let back: f64 = back.parse().map_err(fail)?;
                prop_assert!(same_f64(back, v), "{typed} -> {back:?}, expected {v:?}");
            }
            other => prop_assert!(false, "fix6 decoded {typed} to {other:?}"),
        }
    }
}
