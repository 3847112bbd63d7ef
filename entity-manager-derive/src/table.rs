//! `#[derive(Table)]`: the table settings and their rules.

use darling::error::Accumulator;
use darling::util::SpannedValue;

use crate::attrs::TableAttrs;

pub(crate) struct TableSettings {
    pub(crate) hash_key: String,
    pub(crate) range_key: String,
    pub(crate) generated_key: String,
    pub(crate) generated_value: String,
    pub(crate) shard_key: String,
    pub(crate) power: bool,
    pub(crate) throttle: usize,
}

fn value(v: Option<&SpannedValue<String>>, default: &str) -> String {
    v.map_or_else(|| default.to_owned(), |v| (**v).clone())
}

impl TableSettings {
    pub(crate) fn from_attrs(attrs: &TableAttrs, errors: &mut Accumulator) -> Self {
        if !attrs.generics.params.is_empty() {
            errors.push(
                darling::Error::custom("`#[derive(Table)]` does not support generic types")
                    .with_span(&attrs.generics),
            );
        }
        let settings = Self {
            hash_key: value(attrs.hash_key.as_ref(), "hashKey"),
            range_key: value(attrs.range_key.as_ref(), "rangeKey"),
            generated_key: value(attrs.generated_key_delimiter.as_ref(), "|"),
            generated_value: value(attrs.generated_value_delimiter.as_ref(), "#"),
            shard_key: value(attrs.shard_key_delimiter.as_ref(), "!"),
            power: match &attrs.shard_space {
                None => false,
                Some(space) if *space.as_ref() == "product" => false,
                Some(space) if *space.as_ref() == "power" => true,
                Some(space) => {
                    errors.push(
                        darling::Error::custom(format!(
                            "unknown shard space `{}`: use `product` (chars × 2^char_bits shards, npm 6.14.0) or `power` ((2^char_bits)^chars, upstream v8){}",
                            space.as_ref(),
                            crate::check::did_you_mean(&space.to_string(), ["product", "power"])
                        ))
                        .with_span(&space.span()),
                    );
                    false
                }
            },
            throttle: attrs.throttle.as_ref().map_or(10, |t| {
                if **t == 0 {
                    errors.push(
                        darling::Error::custom("`throttle` must be at least 1")
                            .with_span(&t.span()),
                    );
                }
                **t
            }),
        };
        check_key_names(attrs, &settings, errors);
        check_delimiters(attrs, &settings, errors);
        settings
    }
}

/// The table key attribute names are not empty and differ.
fn check_key_names(attrs: &TableAttrs, s: &TableSettings, errors: &mut Accumulator) {
    for (v, name) in [
        (&attrs.hash_key, &s.hash_key),
        (&attrs.range_key, &s.range_key),
    ] {
        if let Some(v) = v
            && name.is_empty()
        {
            errors.push(
                darling::Error::custom("a key attribute name must not be empty")
                    .with_span(&v.span()),
            );
        }
    }
    if s.hash_key == s.range_key {
        let span = attrs
            .range_key
            .as_ref()
            .or(attrs.hash_key.as_ref())
            .map(SpannedValue::span);
        let error = darling::Error::custom(format!(
            "the hash key and the range key are both `{}`; they must differ",
            s.hash_key
        ));
        errors.push(match span {
            Some(span) => error.with_span(&span),
            None => error,
        });
    }
}

/// Delimiters are not empty, hold no word character (`[A-Za-z0-9_]`, which values and names
/// use), and none contains another.
fn check_delimiters(attrs: &TableAttrs, s: &TableSettings, errors: &mut Accumulator) {
    let delimiters = [
        (
            "generated_key_delimiter",
            &attrs.generated_key_delimiter,
            &s.generated_key,
        ),
        (
            "generated_value_delimiter",
            &attrs.generated_value_delimiter,
            &s.generated_value,
        ),
        (
            "shard_key_delimiter",
            &attrs.shard_key_delimiter,
            &s.shard_key,
        ),
    ];
    for (i, (name, attr, value)) in delimiters.iter().enumerate() {
        let at = |e: darling::Error| match attr {
            Some(a) => e.with_span(&a.span()),
            None => e,
        };
        if value.is_empty() {
            errors.push(at(darling::Error::custom(format!(
                "`{name}` must not be empty"
            ))));
            continue;
        }
        if value.chars().any(|c| c.is_ascii_alphanumeric() || c == '_') {
            errors.push(at(darling::Error::custom(format!(
                "`{name}` {value:?} contains a word character; delimiters must be punctuation such as `|`, `#` or `!`"
            ))));
        }
        for (j, (other, _, other_value)) in delimiters.iter().enumerate() {
            if i != j && !other_value.is_empty() && value.contains(other_value.as_str()) {
                errors.push(at(darling::Error::custom(format!(
                    "`{name}` {value:?} contains `{other}` {other_value:?}, which would make keys ambiguous"
                ))));
            }
        }
    }
}
