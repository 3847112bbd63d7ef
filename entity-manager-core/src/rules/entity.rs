//! The rules of an entity's settings: its token, its unique and timestamp properties and its
//! query defaults.

use crate::model::Delimiters;

use super::bytes::contains;
use super::table::positive;
use super::wording::{Delimiter, Named, Setting, Syntax, list};
use super::{ConfigRule, Problem, TIMESTAMP_TRANSCODE};

/// Whether `text` contains the delimiter `which` of `delimiters` (never, for an empty one).
pub const fn contains_delimiter(delimiters: &Delimiters, which: Delimiter, text: &str) -> bool {
    contains(text, which.of(delimiters))
}

/// The problem of a name written into keys that contains a delimiter (of rule
/// [`ConfigRule::EntityToken`] for the token, [`ConfigRule::NamesFreeOfDelimiters`] otherwise).
/// `value` is the delimiter, when the caller knows it.
pub fn delimiter_in_name(
    syntax: Syntax,
    named: Named,
    name: &str,
    which: Delimiter,
    value: Option<&str>,
) -> Problem {
    let rule = if named == Named::EntityToken {
        ConfigRule::EntityToken
    } else {
        ConfigRule::NamesFreeOfDelimiters
    };
    let setting = Setting::Delimiter(which).name(syntax);
    let delimiter = match value {
        Some(value) => format!("the delimiter `{value}` (`{setting}`)"),
        None => format!("the table's `{setting}`"),
    };
    let what = named.phrase();
    Problem::new(
        rule,
        format!(
            "{what} `{name}` contains {delimiter}; names appear inside keys, so rename it or choose other delimiters"
        ),
    )
}

/// The first delimiter `name` contains, as a problem.
pub(super) fn name_with_delimiter(
    syntax: Syntax,
    named: Named,
    name: &str,
    delimiters: &Delimiters,
) -> Option<Problem> {
    let which = Delimiter::ALL
        .into_iter()
        .find(|&d| contains_delimiter(delimiters, d, name))?;
    Some(delimiter_in_name(
        syntax,
        named,
        name,
        which,
        Some(which.of(delimiters)),
    ))
}

/// Rule: the entity token is not empty and contains no delimiter: it starts every hash key
/// (`<token><shardKeyDelimiter><suffix>`). Without `delimiters` (the derive, which does not know
/// the table's), only emptiness is checked; the delimiters are checked by a `const` assertion over
/// [`contains_delimiter`], with the message of [`delimiter_in_name`].
pub fn entity_token(
    syntax: Syntax,
    token: &str,
    delimiters: Option<&Delimiters>,
) -> Option<Problem> {
    if token.is_empty() {
        return Some(Problem::new(
            ConfigRule::EntityToken,
            "the entity token is empty; it prefixes every hash key of the entity, so name it",
        ));
    }
    name_with_delimiter(syntax, Named::EntityToken, token, delimiters?)
}

fn not_transcoded(
    syntax: Syntax,
    role: &str,
    name: &str,
    transcoded: &[&str],
    example: &str,
) -> String {
    if name.is_empty() {
        format!("the {role} is empty; name a transcoded property")
    } else {
        format!(
            "{role} `{name}` is not a transcoded property; {} (transcoded properties: {})",
            syntax.give_transcode(example),
            list(transcoded.iter().copied())
        )
    }
}

/// The unique or the timestamp property, as the rules about it take it.
#[derive(Clone, Copy, Debug)]
pub struct KeyProperty<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its transcode's name (`None`: not transcoded).
    pub transcode: Option<&'a str>,
    /// The transcoded properties, for the message.
    pub transcoded: &'a [&'a str],
}

/// Rule: the unique property is a transcoded property of the entity: its encoded value is part
/// of the range key.
pub fn unique_property(syntax: Syntax, unique: KeyProperty<'_>) -> Option<Problem> {
    let KeyProperty {
        name, transcoded, ..
    } = unique;
    unique.transcode.is_none().then(|| {
        Problem::new(
            ConfigRule::UniqueProperty,
            not_transcoded(syntax, "unique property", name, transcoded, "string"),
        )
    })
}

/// Rule: the timestamp property is a transcoded property with the `timestamp` transcode: it holds
/// the creation time in whole milliseconds, which picks the shard bump and which keys write as
/// 13 digits, as TypeScript does (`int` would write `created#p0001700000000000`).
pub fn timestamp_property(syntax: Syntax, timestamp: KeyProperty<'_>) -> Option<Problem> {
    let KeyProperty {
        name, transcoded, ..
    } = timestamp;
    let message = match timestamp.transcode {
        None => not_transcoded(
            syntax,
            "timestamp property",
            name,
            transcoded,
            TIMESTAMP_TRANSCODE,
        ),
        Some(TIMESTAMP_TRANSCODE) => return None,
        Some(transcode) => {
            let fix = match syntax {
                Syntax::Config => "use the `timestamp` transcode",
                Syntax::Derive => "write `#[transcode(\"timestamp\")]`",
            };
            format!(
                "timestamp property `{name}` has transcode `{transcode}`, but it holds the creation time in whole milliseconds, which keys write as 13 digits (as TypeScript does); {fix}"
            )
        }
    };
    Some(Problem::new(ConfigRule::TimestampProperty, message))
}

/// Rule: the entity's default limit and default page size (`setting`) are greater than 0: a
/// query of 0 items returns nothing.
pub fn entity_default_positive(syntax: Syntax, setting: Setting, value: i128) -> Option<Problem> {
    positive(ConfigRule::EntityDefaultsPositive, syntax, setting, value)
}
