//! Component values as the TypeScript Entity Manager writes them inside keys
//! ([`KeyMode::TypeScript`](crate::model::KeyMode::TypeScript)): the raw JavaScript string form of the
//! value, `` `${value}` ``. Strings as they are, numbers in JavaScript's `Number#toString` form,
//! big integers in decimal, booleans `true`/`false`.
//!
//! A value is still checked by its transcode first (an out-of-range `int` is refused in both
//! modes); reading a raw value back gives the attribute value its transcode stores.

use serde_dynamo::AttributeValue;

use super::{DisplayAttr, KeyType, TranscodeError, Transcoder};

/// Appends the raw JavaScript string form of `value` to `out`, after its transcode accepted
/// it; on an error `out` is unchanged.
pub(crate) fn encode_into(
    transcode: &dyn Transcoder,
    value: &AttributeValue,
    out: &mut String,
) -> Result<(), TranscodeError> {
    // the transcode's own encoding only checks the value: written, then taken back
    let start = out.len();
    transcode.encode_into(value, out)?;
    out.truncate(start);
    match value {
        AttributeValue::S(s) => out.push_str(s),
        AttributeValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        other => out.push_str(&raw_number(transcode, other)?),
    }
    Ok(())
}

/// The raw form of a number (or the error for a value that is no key component).
fn raw_number(
    transcode: &dyn Transcoder,
    value: &AttributeValue,
) -> Result<String, TranscodeError> {
    match value {
        AttributeValue::N(n) if transcode.name() == "bigint20" => n
            .trim()
            .parse::<i128>()
            .map(|v| v.to_string())
            .map_err(|_| {
                TranscodeError::encode(transcode.name(), DisplayAttr(value), "not an integer")
            }),
        AttributeValue::N(n) => match n.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(js_number(v)),
            _ => Err(TranscodeError::encode(
                transcode.name(),
                DisplayAttr(value),
                "not a finite number",
            )),
        },
        _ => Err(TranscodeError::encode(
            transcode.name(),
            DisplayAttr(value),
            "a key component must be a string, a number or a boolean",
        )),
    }
}

/// The attribute value of a raw component string, as the property's transcode stores it.
pub(crate) fn decode(
    transcode: &dyn Transcoder,
    raw: &str,
) -> Result<AttributeValue, TranscodeError> {
    let value = if transcode.name() == "boolean" {
        match raw {
            "true" => AttributeValue::Bool(true),
            "false" => AttributeValue::Bool(false),
            _ => {
                return Err(TranscodeError::decode(
                    transcode.name(),
                    raw,
                    "expected `true` or `false` (TypeScript key mode)",
                ));
            }
        }
    } else if transcode.key_type() == Some(KeyType::N) {
        if !is_js_decimal(raw) {
            return Err(TranscodeError::decode(
                transcode.name(),
                raw,
                "expected a number as JavaScript writes it (TypeScript key mode)",
            ));
        }
        AttributeValue::N(raw.to_owned())
    } else {
        AttributeValue::S(raw.to_owned())
    };
    // the value must be one the transcode accepts (`1.5` is no `int`)
    transcode.encode(&value).map_err(|e| {
        TranscodeError::decode(
            transcode.name(),
            raw,
            format!("{} (TypeScript key mode)", e.reason),
        )
    })?;
    Ok(value)
}

/// Whether `s` is a number in a form `Number#toString` gives: an optional `-`, digits, an
/// optional fraction, an optional exponent `e+N`/`e-N`.
fn is_js_decimal(s: &str) -> bool {
    let s = s.strip_prefix('-').unwrap_or(s);
    let (mantissa, exponent) = match s.split_once('e') {
        Some((m, e)) => (m, Some(e)),
        None => (s, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (mantissa, None),
    };
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    digits(int)
        && frac.is_none_or(digits)
        && exponent.is_none_or(|e| {
            e.strip_prefix('+')
                .or_else(|| e.strip_prefix('-'))
                .is_some_and(digits)
        })
}

/// `Number#toString()` of a finite number: the shortest digits that read back as the same
/// number, in positional notation from 1e-6 up to 1e21 and in exponent notation (`1e+21`,
/// `1.5e-7`) outside it; `-0` is `0`.
pub(crate) fn js_number(v: f64) -> String {
    if v == 0.0 {
        return "0".to_owned();
    }
    let magnitude = v.abs();
    if (1e-6..1e21).contains(&magnitude) {
        // Rust's `Display` for `f64` gives the shortest round-trip digits, positionally.
        return v.to_string();
    }
    let exponent_form = format!("{v:e}");
    match exponent_form.split_once('e') {
        Some((mantissa, exponent)) if !exponent.starts_with('-') => {
            format!("{mantissa}e+{exponent}")
        }
        _ => exponent_form,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_javascript_writes_them() {
        // expected strings from JavaScript's `String(n)`
        for (v, js) in [
            (42.0, "42"),
            (-5.0, "-5"),
            (1.5, "1.5"),
            (-0.0, "0"),
            (5000.0, "5000"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e21, "1e+21"),
            (1.5e-7, "1.5e-7"),
            (123_456_789_012.345_67, "123456789012.34567"),
            (1e-6, "0.000001"),
            (999_999_999_999_999_900_000.0, "999999999999999900000"),
        ] {
            assert_eq!(js_number(v), js, "{v}");
        }
    }

    #[test]
    fn javascript_decimals_are_recognised() {
        for ok in ["0", "42", "-5", "1.5", "1e+21", "1.5e-7", "0.000001"] {
            assert!(is_js_decimal(ok), "{ok}");
        }
        for bad in [
            "",
            "-",
            "1.",
            ".5",
            "p0000000000000042",
            "1e21",
            "NaN",
            "Infinity",
            "0x10",
            " 1",
        ] {
            assert!(!is_js_decimal(bad), "{bad}");
        }
    }
}
