//! The rules of the table settings: delimiters, table keys, throttle.

use super::wording::{Delimiter, Setting, Syntax};
use super::{ConfigRule, Problem};

/// Rule: no delimiter is empty: keys are split on delimiters.
pub fn delimiter_not_empty(syntax: Syntax, which: Delimiter, value: &str) -> Option<Problem> {
    let name = Setting::Delimiter(which).name(syntax);
    value.is_empty().then(|| {
        Problem::new(
            ConfigRule::DelimitersNotEmpty,
            format!(
                "`{name}` is empty; use one or more non-word characters, such as `|`, `#` or `!`"
            ),
        )
    })
}

/// Rule: no delimiter contains a word character (`[A-Za-z0-9_]`), because names and encoded
/// values are made of them. Stricter than TypeScript on purpose: its unanchored regex `/\W+/`
/// accepts any delimiter with one non-word character somewhere, such as `a|`.
pub fn delimiter_without_word_characters(
    syntax: Syntax,
    which: Delimiter,
    value: &str,
) -> Option<Problem> {
    let name = Setting::Delimiter(which).name(syntax);
    let c = value
        .chars()
        .find(|c| c.is_ascii_alphanumeric() || *c == '_')?;
    Some(Problem::new(
        ConfigRule::DelimitersWithoutWordCharacters,
        format!(
            "`{name}` `{value}` contains the word character `{c}`; delimiters must not contain letters, digits or `_`, which occur in names and encoded values"
        ),
    ))
}

/// Rule: no delimiter contains another one (a substring test, checked in both directions as in
/// TypeScript, so equal delimiters are reported twice); otherwise keys cannot be split. Returns,
/// for each delimiter that contains another, the problem (reported on the containing one).
pub fn delimiters_disjoint(
    syntax: Syntax,
    delimiters: &[(Delimiter, &str); 3],
) -> Vec<(Delimiter, Problem)> {
    let mut problems = Vec::new();
    for &(which, value) in delimiters {
        for &(other, other_value) in delimiters {
            if which != other
                && !value.is_empty()
                && !other_value.is_empty()
                && value.contains(other_value)
            {
                let (name, other_name) = (
                    Setting::Delimiter(which).name(syntax),
                    Setting::Delimiter(other).name(syntax),
                );
                problems.push((
                    which,
                    Problem::new(
                        ConfigRule::DelimitersDisjoint,
                        format!(
                            "`{name}` `{value}` contains `{other_name}` `{other_value}`, so keys could not be split unambiguously; choose delimiters that do not contain one another"
                        ),
                    ),
                ));
            }
        }
    }
    problems
}

/// Rule: the table hash key and range key names are not empty: they name the table's key
/// attributes. `key` is `Setting::HashKey` or `Setting::RangeKey`.
pub fn table_key_not_empty(syntax: Syntax, key: Setting, value: &str) -> Option<Problem> {
    let field = key.name(syntax);
    let what = if key == Setting::HashKey {
        "partition key"
    } else {
        "sort key"
    };
    value.is_empty().then(|| {
        Problem::new(
            ConfigRule::TableKeysNotEmpty,
            format!("`{field}` is empty; name the table's {what} attribute"),
        )
    })
}

/// Rule: the table hash key and range key are different attributes (reported on the range key).
pub fn table_keys_distinct(hash_key: &str, range_key: &str) -> Option<Problem> {
    (!hash_key.is_empty() && hash_key == range_key).then(|| {
        Problem::new(
            ConfigRule::TableKeysDistinct,
            format!(
                "the table range key `{range_key}` is the same attribute as the table hash key; give the sort key its own name"
            ),
        )
    })
}

/// The problem of a count (throttle, default limit, default page size) below 1.
pub(super) fn positive(
    rule: ConfigRule,
    syntax: Syntax,
    setting: Setting,
    value: i128,
) -> Option<Problem> {
    let what = match setting {
        Setting::Throttle => "the default number of shard queries in flight",
        Setting::DefaultLimit => "the default number of items a query returns",
        _ => "the default number of items one shard query reads",
    };
    let field = setting.name(syntax);
    (value < 1).then(|| {
        Problem::new(
            rule,
            format!("`{field}` must be greater than 0: it is {what}"),
        )
    })
}

/// Rule: the table throttle is greater than 0: a query runs at most that many shard queries at
/// once, and none at all with 0.
pub fn throttle_positive(syntax: Syntax, value: i128) -> Option<Problem> {
    positive(
        ConfigRule::ThrottlePositive,
        syntax,
        Setting::Throttle,
        value,
    )
}
