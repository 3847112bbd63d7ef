//! The configuration rules, once.
//!
//! Every rule of a table and entity configuration is one function here, headed by a comment that
//! states the rule and its reason, and tagged with its [`ConfigRule`]. The functions take plain
//! data (names, numbers, what a name refers to) and return [`Problem`]s, so that both callers
//! apply the same rule with the same words:
//!
//! - at run time, `validate.rs` ([`Schema::new`](crate::Schema::new) and
//!   [`Schema::from_ts_config`](crate::Schema::from_ts_config)) locates each problem by a path of
//!   the configuration;
//! - at compile time, `#[derive(Entity)]` and `#[derive(Table)]` (through `__private::rules`)
//!   put each problem on the offending token. The rules that need another entity or the table's
//!   settings cannot run in one derive: they are `const fn`s here, evaluated by `const`
//!   assertions that the derive emits, and called by `validate.rs` at run time too.
//!
//! A message says what is wrong and what to do, in the words of the caller's [`Syntax`]: a JSON
//! config spells `charBits`, the derive `char_bits`.
//!
//! Limits and defaults are the named constants of this module.

use std::borrow::Cow;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt::Write as _;

use crate::limits::{
    DEFAULT_GENERATED_KEY_DELIMITER, DEFAULT_GENERATED_VALUE_DELIMITER,
    DEFAULT_SHARD_KEY_DELIMITER, INDEX_NAME_LENGTH, MAX_CHAR_BITS, MAX_CHARS, MAX_INDEXES,
};
use crate::model::{
    Delimiters, EntityModel, GeneratedKind, Index, IndexAttribute, MultiKey, Projection, ShardBump,
};

// =============================================================================================
// the timestamp transcode

/// The transcode a timestamp property must have: 13-digit milliseconds, the form TypeScript
/// writes (an `int` timestamp would key records as `created#p0001700000000000`).
pub const TIMESTAMP_TRANSCODE: &str = "timestamp";

// =============================================================================================
// rule identifiers, problems and wording

/// A rule of the configuration: what [`ConfigProblem::rule`](crate::ConfigProblem::rule) names,
/// so that a problem can be told apart without reading its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigRule {
    /// No delimiter is empty.
    DelimitersNotEmpty,
    /// Delimiters hold no word characters.
    DelimitersWithoutWordCharacters,
    /// No delimiter contains another.
    DelimitersDisjoint,
    /// The table key attribute names are not empty.
    TableKeysNotEmpty,
    /// The hash and range key attributes differ.
    TableKeysDistinct,
    /// The throttle is at least 1.
    ThrottlePositive,
    /// The entity token is not empty and holds no delimiter.
    EntityToken,
    /// Shard bump `charBits` is in 1..=5 and `chars` in 0..=40.
    BumpRanges,
    /// Shard bump timestamps are distinct.
    BumpTimestampsUnique,
    /// Shard bump `chars` strictly increase over time.
    BumpCharsIncrease,
    /// The unique property is a transcoded property.
    UniqueProperty,
    /// The timestamp property is a `timestamp`-transcoded property.
    TimestampProperty,
    /// Default limit and page size are at least 1.
    EntityDefaultsPositive,
    /// Property, generated property, index and projection names are not empty.
    NamesNotEmpty,
    /// Names written into keys hold no delimiter.
    NamesFreeOfDelimiters,
    /// No two roles share an attribute name (table keys, generated and ordinary properties).
    AttributeNamesDistinct,
    /// Generated property components are transcoded properties.
    ComponentsTranscoded,
    /// A generated property has at least one component.
    ComponentsNotEmpty,
    /// A generated property names each component once.
    ComponentsUnique,
    /// Index names are unique within an entity.
    IndexNamesUnique,
    /// An index name is a valid DynamoDB GSI name: 3 to 255 letters, digits, `_`, `-` or `.`.
    IndexNamesValid,
    /// An index hash key is the table hash key or a sharded generated property.
    IndexHashKeys,
    /// An index range key is the table range key, an unsharded generated property or a transcoded property.
    IndexRangeKeys,
    /// A scalar index range key has a transcode DynamoDB can key on.
    IndexRangeKeyTypes,
    /// No two indexes have the same hash and range key.
    IndexKeyPairsUnique,
    /// A multi-attribute index key has 1 to 4 partition and 1 to 4 sort attributes.
    MultiKeyArity,
    /// A multi-attribute index key names each attribute once.
    MultiKeyAttributesUnique,
    /// A multi-attribute index key attribute is a stored property: not a table key (but the
    /// shard attribute leading a sharded key) nor a generated property.
    MultiKeyAttributeRoles,
    /// A projection names no key attribute.
    ProjectionsNotKeys,
    /// A projection names each attribute once.
    ProjectionsUnique,
    /// Entity tokens are unique in a table.
    EntityTokensUnique,
    /// One index name means one GSI: the same keys and projection in every entity.
    IndexDeclarationsAgree,
    /// A table has at most 20 GSIs.
    IndexCount,
}

impl ConfigRule {
    /// Every rule, in the order they are checked.
    pub const ALL: &'static [Self] = &[
        Self::DelimitersNotEmpty,
        Self::DelimitersWithoutWordCharacters,
        Self::DelimitersDisjoint,
        Self::TableKeysNotEmpty,
        Self::TableKeysDistinct,
        Self::ThrottlePositive,
        Self::EntityToken,
        Self::BumpRanges,
        Self::BumpTimestampsUnique,
        Self::BumpCharsIncrease,
        Self::UniqueProperty,
        Self::TimestampProperty,
        Self::EntityDefaultsPositive,
        Self::NamesNotEmpty,
        Self::NamesFreeOfDelimiters,
        Self::AttributeNamesDistinct,
        Self::ComponentsTranscoded,
        Self::ComponentsNotEmpty,
        Self::ComponentsUnique,
        Self::IndexNamesUnique,
        Self::IndexNamesValid,
        Self::IndexHashKeys,
        Self::IndexRangeKeys,
        Self::IndexRangeKeyTypes,
        Self::IndexKeyPairsUnique,
        Self::MultiKeyArity,
        Self::MultiKeyAttributesUnique,
        Self::MultiKeyAttributeRoles,
        Self::ProjectionsNotKeys,
        Self::ProjectionsUnique,
        Self::EntityTokensUnique,
        Self::IndexDeclarationsAgree,
        Self::IndexCount,
    ];

    /// A stable kebab-case identifier, e.g. `bump-chars-increase`.
    pub const fn id(self) -> &'static str {
        match self {
            Self::DelimitersNotEmpty => "delimiters-not-empty",
            Self::DelimitersWithoutWordCharacters => "delimiters-without-word-characters",
            Self::DelimitersDisjoint => "delimiters-disjoint",
            Self::TableKeysNotEmpty => "table-keys-not-empty",
            Self::TableKeysDistinct => "table-keys-distinct",
            Self::ThrottlePositive => "throttle-positive",
            Self::EntityToken => "entity-token",
            Self::BumpRanges => "bump-ranges",
            Self::BumpTimestampsUnique => "bump-timestamps-unique",
            Self::BumpCharsIncrease => "bump-chars-increase",
            Self::UniqueProperty => "unique-property",
            Self::TimestampProperty => "timestamp-property",
            Self::EntityDefaultsPositive => "entity-defaults-positive",
            Self::NamesNotEmpty => "names-not-empty",
            Self::NamesFreeOfDelimiters => "names-free-of-delimiters",
            Self::AttributeNamesDistinct => "attribute-names-distinct",
            Self::ComponentsTranscoded => "components-transcoded",
            Self::ComponentsNotEmpty => "components-not-empty",
            Self::ComponentsUnique => "components-unique",
            Self::IndexNamesUnique => "index-names-unique",
            Self::IndexNamesValid => "index-names-valid",
            Self::IndexHashKeys => "index-hash-keys",
            Self::IndexRangeKeys => "index-range-keys",
            Self::IndexRangeKeyTypes => "index-range-key-types",
            Self::IndexKeyPairsUnique => "index-key-pairs-unique",
            Self::MultiKeyArity => "multi-key-arity",
            Self::MultiKeyAttributesUnique => "multi-key-attributes-unique",
            Self::MultiKeyAttributeRoles => "multi-key-attribute-roles",
            Self::ProjectionsNotKeys => "projections-not-keys",
            Self::ProjectionsUnique => "projections-unique",
            Self::EntityTokensUnique => "entity-tokens-unique",
            Self::IndexDeclarationsAgree => "index-declarations-agree",
            Self::IndexCount => "index-count",
        }
    }
}

impl std::fmt::Display for ConfigRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// A broken rule: which one, and the message that says what is wrong and what to do. Where it
/// is (a configuration path, a token) is the caller's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The rule.
    pub rule: ConfigRule,
    /// What is wrong and what to do.
    pub message: String,
}

impl Problem {
    fn new(rule: ConfigRule, message: impl Into<String>) -> Self {
        Self {
            rule,
            message: message.into(),
        }
    }
}

/// How messages spell settings and fixes: as a JSON configuration or as the derive's
/// attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// A TypeScript-shaped JSON config, or models built in Rust (`charBits`, `defaultLimit`).
    Config,
    /// `#[derive(Entity)]` and `#[derive(Table)]` attributes (`char_bits`, `default_limit`).
    Derive,
}

/// A setting a message names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// The table hash key attribute name.
    HashKey,
    /// The table range key attribute name.
    RangeKey,
    /// A delimiter.
    Delimiter(Delimiter),
    /// The default number of shard queries in flight.
    Throttle,
    /// An entity's default query limit.
    DefaultLimit,
    /// An entity's default page size.
    DefaultPageSize,
    /// A shard bump's bits per character.
    CharBits,
    /// A shard bump's suffix length.
    Chars,
}

impl Setting {
    /// The setting's name in `syntax`.
    pub const fn name(self, syntax: Syntax) -> &'static str {
        let (config, derive) = match self {
            Self::HashKey => ("hashKey", "hash_key"),
            Self::RangeKey => ("rangeKey", "range_key"),
            Self::Delimiter(Delimiter::GeneratedKey) => {
                ("generatedKeyDelimiter", "generated_key_delimiter")
            }
            Self::Delimiter(Delimiter::GeneratedValue) => {
                ("generatedValueDelimiter", "generated_value_delimiter")
            }
            Self::Delimiter(Delimiter::ShardKey) => ("shardKeyDelimiter", "shard_key_delimiter"),
            Self::Throttle => ("throttle", "throttle"),
            Self::DefaultLimit => ("defaultLimit", "default_limit"),
            Self::DefaultPageSize => ("defaultPageSize", "default_page_size"),
            Self::CharBits => ("charBits", "char_bits"),
            Self::Chars => ("chars", "chars"),
        };
        match syntax {
            Syntax::Config => config,
            Syntax::Derive => derive,
        }
    }
}

impl Syntax {
    /// How to give a property a transcode (`example` names one, for the derive).
    fn give_transcode(self, example: &str) -> String {
        match self {
            Self::Config => "give it a transcode".to_owned(),
            Self::Derive => format!("add `#[transcode(\"{example}\")]` to it"),
        }
    }
}

/// One of the table's delimiters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Delimiter {
    /// `generated_key`: separates the parts of a generated property.
    GeneratedKey,
    /// `generated_value`: separates a component's name from its value.
    GeneratedValue,
    /// `shard_key`: separates the entity token from the shard suffix.
    ShardKey,
}

impl Delimiter {
    /// The three delimiters, in a fixed order.
    pub const ALL: [Self; 3] = [Self::GeneratedKey, Self::GeneratedValue, Self::ShardKey];

    /// This delimiter of `delimiters`.
    pub const fn of(self, delimiters: &Delimiters) -> &str {
        name(match self {
            Self::GeneratedKey => &delimiters.generated_key,
            Self::GeneratedValue => &delimiters.generated_value,
            Self::ShardKey => &delimiters.shard_key,
        })
    }

    /// The default value.
    pub const fn default_value(self) -> &'static str {
        match self {
            Self::GeneratedKey => DEFAULT_GENERATED_KEY_DELIMITER,
            Self::GeneratedValue => DEFAULT_GENERATED_VALUE_DELIMITER,
            Self::ShardKey => DEFAULT_SHARD_KEY_DELIMITER,
        }
    }
}

/// What an attribute name is used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The table hash key.
    TableHashKey,
    /// The table range key.
    TableRangeKey,
    /// A generated property.
    Generated(GeneratedKind),
    /// A transcoded property.
    Transcoded,
    /// A stored attribute without a transcode (a field of a derived entity).
    Attribute,
}

impl Role {
    fn phrase(self) -> &'static str {
        match self {
            Self::TableHashKey => "the table hash key",
            Self::TableRangeKey => "the table range key",
            Self::Generated(GeneratedKind::Sharded) => "a sharded generated property",
            Self::Generated(GeneratedKind::Unsharded) => "an unsharded generated property",
            Self::Transcoded => "a transcoded property",
            Self::Attribute => "a stored attribute",
        }
    }
}

/// A kind of name written into keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Named {
    /// The entity token.
    EntityToken,
    /// A transcoded property.
    Transcoded,
    /// A generated property.
    Generated,
    /// An index.
    Index,
}

impl Named {
    fn phrase(self) -> &'static str {
        match self {
            Self::EntityToken => "entity token",
            Self::Transcoded => "transcoded property",
            Self::Generated => "generated property",
            Self::Index => "index",
        }
    }
}

/// Names in backticks, comma-separated, or `none`.
pub fn list<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<String> = names.into_iter().map(|n| format!("`{n}`")).collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

/// Each item whose key repeats an earlier item's: its position, its key, and the earlier
/// item's value.
fn repeated<K: Eq + std::hash::Hash + Copy, V: Copy>(
    items: impl IntoIterator<Item = (usize, K, V)>,
) -> Vec<(usize, K, V)> {
    let mut first = HashMap::new();
    let mut out = Vec::new();
    for (i, key, value) in items {
        match first.entry(key) {
            Entry::Vacant(entry) => {
                entry.insert(value);
            }
            Entry::Occupied(entry) => out.push((i, key, *entry.get())),
        }
    }
    out
}

/// Each name of `names` that repeats an earlier one: its position, with the problem of `rule`
/// that `message` words for it.
fn repeats(
    rule: ConfigRule,
    names: &[&str],
    message: impl Fn(&str) -> String,
) -> Vec<(usize, Problem)> {
    repeated(names.iter().enumerate().map(|(i, name)| (i, *name, ())))
        .into_iter()
        .map(|(i, name, ())| (i, Problem::new(rule, message(name))))
        .collect()
}

// =============================================================================================
// table settings

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
fn positive(rule: ConfigRule, syntax: Syntax, setting: Setting, value: i128) -> Option<Problem> {
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

// =============================================================================================
// entity settings and shard bumps

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
fn name_with_delimiter(
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

/// Rule (one half of bump ranges): `charBits` is in 1..=5: a suffix character holds
/// 1 to 5 bits (radix 2 to 32).
pub fn bump_char_bits(syntax: Syntax, value: i128) -> Option<Problem> {
    let name = Setting::CharBits.name(syntax);
    (!(1..=i128::from(MAX_CHAR_BITS)).contains(&value)).then(|| {
        Problem::new(
            ConfigRule::BumpRanges,
            format!("shard bump `{name}` is {value}; it must be in 1..={MAX_CHAR_BITS} (radix 2, 4, 8, 16 or 32)"),
        )
    })
}

/// Rule (the other half of bump ranges): `chars` is in 0..=40: the suffix length.
pub fn bump_chars(syntax: Syntax, value: i128) -> Option<Problem> {
    let name = Setting::Chars.name(syntax);
    (!(0..=i128::from(MAX_CHARS)).contains(&value)).then(|| {
        Problem::new(
            ConfigRule::BumpRanges,
            format!(
                "shard bump `{name}` is {value}; it must be in 0..={MAX_CHARS} (the suffix length; 0 means one unsharded partition)"
            ),
        )
    })
}

/// The bump timestamps [`bump_timestamp_in_milliseconds`] refuses: from 2001-09-09 in
/// seconds (10^9) up to the first millisecond of 2000 (UTC). Such a value is a recent date in
/// seconds and a date of 1970–1999 in milliseconds, before any table; smaller ones are the
/// synthetic schedules of tests and examples (`timestamp = 1_000`) and stay accepted.
pub const BUMP_TIMESTAMPS_IN_SECONDS: std::ops::Range<u64> = 1_000_000_000..946_684_800_000;

/// Rule (a half of bump ranges, in the derive): a bump's timestamp is milliseconds, not seconds.
/// `1_726_880_933` is 2024-09-21 in seconds but 1970-01-20 in milliseconds: the bump would start
/// in 1970, and every record since would be sharded by it. The message gives the value in
/// milliseconds. See [`BUMP_TIMESTAMPS_IN_SECONDS`].
pub fn bump_timestamp_in_milliseconds(value: u64) -> Option<Problem> {
    BUMP_TIMESTAMPS_IN_SECONDS.contains(&value).then(|| {
        let days = value / 86_400_000;
        let as_ms = value.saturating_mul(1000);
        Problem::new(
            ConfigRule::BumpRanges,
            format!(
                "shard bump timestamp {value} is {days} days after 1970-01-01 in milliseconds: it looks like seconds; bump timestamps are milliseconds since the Unix epoch, so write `{as_ms}`"
            ),
        )
    })
}

/// Rule: no two bumps start at the same timestamp: a record's creation time picks one bump.
/// `timestamps` are the bumps' (declared position, timestamp); returns the position of each
/// repeat, with its problem.
pub fn bump_timestamps_unique(
    timestamps: impl IntoIterator<Item = (usize, u64)>,
) -> Vec<(usize, Problem)> {
    repeated(timestamps.into_iter().map(|(i, t)| (i, t, i)))
        .into_iter()
        .map(|(i, timestamp, first)| {
            let message = format!(
                "shard bumps {first} and {i} both start at timestamp {timestamp}; give each bump its own timestamp"
            );
            (i, Problem::new(ConfigRule::BumpTimestampsUnique, message))
        })
        .collect()
}

/// A shard schedule put in order: sorted by timestamp (stably), with
/// [`ShardBump::UNSHARDED`] in front when no bump starts at 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// The bumps, in order.
    pub bumps: Vec<ShardBump>,
    /// For each of `bumps`, its position in the declared list (`None` for the implied one).
    pub declared: Vec<Option<usize>>,
}

impl Schedule {
    /// Whether the first bump is the implied one.
    pub fn implied(&self) -> bool {
        self.declared.first().is_some_and(Option::is_none)
    }
}

/// `bumps` in order: sorted by timestamp, with the implied zero bump in front when none starts
/// at 0 (so an empty schedule is one unsharded partition).
pub fn schedule(bumps: &[ShardBump]) -> Schedule {
    let mut order: Vec<usize> = (0..bumps.len()).collect();
    order.sort_by_key(|&i| bumps[i].timestamp);
    let mut declared: Vec<Option<usize>> = order.into_iter().map(Some).collect();
    if declared.first().and_then(|i| i.map(|i| bumps[i].timestamp)) != Some(0) {
        declared.insert(0, None);
    }
    let bumps = declared
        .iter()
        .map(|i| i.map_or(ShardBump::UNSHARDED, |i| bumps[i]))
        .collect();
    Schedule { bumps, declared }
}

/// Rule: in the schedule put in order, `chars` strictly increases, so suffixes never get shorter
/// and the shard spaces of different bumps never overlap. A bump with `chars` out of range is
/// reported by its own rule and skipped (the next bump is compared with the one before it); two
/// bumps sharing a timestamp are reported as duplicates and not compared. Returns the position in
/// the ordered schedule of each offending bump, with its problem.
pub fn bump_chars_increase(syntax: Syntax, schedule: &Schedule) -> Vec<(usize, Problem)> {
    let implied = schedule.implied();
    let chars = Setting::Chars.name(syntax);
    let mut problems = Vec::new();
    let mut previous: Option<(usize, ShardBump)> = None;
    for (i, &bump) in schedule.bumps.iter().enumerate() {
        if bump.chars > MAX_CHARS {
            continue;
        }
        if let Some((j, before)) = previous
            && before.timestamp != bump.timestamp
            && bump.chars <= before.chars
        {
            let before = if implied && j == 0 {
                match syntax {
                    Syntax::Config => {
                        "the implied first bump `{timestamp: 0, charBits: 1, chars: 0}`".to_owned()
                    }
                    Syntax::Derive => {
                        "the implied first bump `bump(timestamp = 0, char_bits = 1, chars = 0)`"
                            .to_owned()
                    }
                }
            } else {
                format!(
                    "`{chars}` {} of the bump at timestamp {}",
                    before.chars, before.timestamp
                )
            };
            problems.push((
                i,
                Problem::new(
                    ConfigRule::BumpCharsIncrease,
                    format!(
                        "shard bump chars do not strictly increase at timestamp {}: `{chars}` {} follows {before}; give every later bump more `{chars}`",
                        bump.timestamp, bump.chars
                    ),
                ),
            ));
        }
        previous = Some((i, bump));
    }
    problems
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

// =============================================================================================
// properties, generated properties and indexes

/// Rule: property, generated property and index names are not empty: they name attributes and
/// GSIs.
pub fn name_not_empty(named: Named, name: &str) -> Option<Problem> {
    let message = match named {
        Named::Index => "an index has an empty name; name it (the name is the GSI name)",
        Named::Generated => "a generated property has an empty name; name the attribute",
        Named::Transcoded | Named::EntityToken => {
            "a transcoded property has an empty name; name the attribute"
        }
    };
    name.is_empty()
        .then(|| Problem::new(ConfigRule::NamesNotEmpty, message))
}

/// Rule (names not empty, for projections): a projection names an attribute.
pub fn projection_not_empty(index: &str, i: usize, projection: &str) -> Option<Problem> {
    projection.is_empty().then(|| {
        Problem::new(
            ConfigRule::NamesNotEmpty,
            format!("projection {i} of index `{index}` is empty; name an attribute or remove it"),
        )
    })
}

/// Rule: an index name is a valid DynamoDB GSI name (the index is created under it): 3 to 255
/// characters, each an ASCII letter or digit, `_`, `-` or `.`. An empty name is left to
/// [`name_not_empty`].
pub fn index_name_valid(name: &str) -> Option<Problem> {
    if name.is_empty() {
        return None;
    }
    let (min, max) = INDEX_NAME_LENGTH;
    let message = if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        format!(
            "index name `{name}` contains {c:?}; DynamoDB index names use only letters, digits, `_`, `-` and `.`"
        )
    } else if name.len() < min {
        format!(
            "index name `{name}` has {} characters; DynamoDB index names have {min} to {max}: lengthen it",
            name.len()
        )
    } else if name.len() > max {
        format!(
            "index name `{}…` has {} characters; DynamoDB index names have {min} to {max}: shorten it",
            &name[..20],
            name.len()
        )
    } else {
        return None;
    };
    Some(Problem::new(ConfigRule::IndexNamesValid, message))
}

/// Rule: property, generated property and index names contain no delimiter: names appear inside
/// keys (`<name><generatedValueDelimiter><value>`) and page keys, which are split on delimiters.
/// The derive, which does not know the table's delimiters, checks this with `const` assertions
/// over [`contains_delimiter`] and the message of [`delimiter_in_name`].
pub fn name_free_of_delimiters(
    syntax: Syntax,
    named: Named,
    name: &str,
    delimiters: &Delimiters,
) -> Option<Problem> {
    name_with_delimiter(syntax, named, name, delimiters)
}

/// The problem of an attribute name given a second role (rule
/// [`ConfigRule::AttributeNamesDistinct`]).
pub fn role_conflict(name: &str, first: Role, second: Role) -> Problem {
    let message = if first == second {
        format!(
            "`{name}` is declared twice as {}; remove or rename one",
            second.phrase()
        )
    } else {
        format!(
            "`{name}` is already {}, so it cannot also be {}; every attribute has one role, so rename one of them",
            first.phrase(),
            second.phrase()
        )
    };
    Problem::new(ConfigRule::AttributeNamesDistinct, message)
}

/// Rule: every attribute name has one role: the table hash key, the table range key, one
/// generated property or one transcoded property (TypeScript's "key exclusivity"); a repeated
/// generated or transcoded property is a duplicate. Otherwise one attribute would be written
/// twice, with different values. `table_keys` are the table's (hash, range) key names, when
/// known (the derive checks them with `const` assertions and [`role_conflict`]); `declared` the
/// other names in order. Returns the position in `declared` of each later declaration that
/// conflicts, with its problem. Empty names are left to [`name_not_empty`].
pub fn attribute_names_distinct(
    table_keys: Option<(&str, &str)>,
    declared: &[(&str, Role)],
) -> Vec<(usize, Problem)> {
    let mut roles: HashMap<&str, Role> = HashMap::new();
    if let Some((hash, range)) = table_keys {
        roles.insert(hash, Role::TableHashKey);
        roles.entry(range).or_insert(Role::TableRangeKey);
    }
    let mut problems = Vec::new();
    for (i, &(name, role)) in declared.iter().enumerate() {
        if name.is_empty() {
            continue;
        }
        match roles.entry(name) {
            Entry::Vacant(entry) => {
                entry.insert(role);
            }
            Entry::Occupied(entry) => problems.push((i, role_conflict(name, *entry.get(), role))),
        }
    }
    problems
}

/// Rule: every component of a generated property is a transcoded property of the entity, and not
/// itself a generated property: its encoded value is written into the key. `role` is what the
/// component names (`None`: nothing declared).
pub fn component_transcoded(
    syntax: Syntax,
    generated: &str,
    i: usize,
    component: &str,
    role: Option<Role>,
) -> Option<Problem> {
    let message = if component.is_empty() {
        format!(
            "component {i} of generated property `{generated}` is empty; name a transcoded property"
        )
    } else {
        match role {
            Some(Role::Transcoded) => return None,
            Some(Role::Generated(_)) => format!(
                "component `{component}` of generated property `{generated}` is itself a generated property; components must be transcoded properties"
            ),
            _ => format!(
                "component `{component}` of generated property `{generated}` is not a transcoded property; {}",
                syntax.give_transcode("…")
            ),
        }
    };
    Some(Problem::new(ConfigRule::ComponentsTranscoded, message))
}

/// Rule: a generated property has at least one component: its value is made of them.
pub fn components_not_empty(generated: &str, components: usize) -> Option<Problem> {
    (components == 0).then(|| {
        Problem::new(
            ConfigRule::ComponentsNotEmpty,
            format!("generated property `{generated}` has no components; list at least one transcoded property"),
        )
    })
}

/// Rule: a generated property lists each component once (reported on the repeat): a repeat
/// writes the same value twice into the key. Returns the positions of the repeats.
pub fn components_unique(generated: &str, components: &[&str]) -> Vec<(usize, Problem)> {
    repeats(ConfigRule::ComponentsUnique, components, |component| {
        format!(
            "component `{component}` is listed twice in generated property `{generated}`; remove the repeat"
        )
    })
}

/// Rule: index names are unique within an entity: the name is the GSI name. Returns the positions
/// of the repeats.
pub fn index_names_unique(names: &[&str]) -> Vec<(usize, Problem)> {
    repeats(ConfigRule::IndexNamesUnique, names, |name| {
        format!(
            "index `{name}` is declared twice; an index name is a GSI name, so rename or remove one"
        )
    })
}

/// An index key: an attribute name, or (in the derive, which does not know the table's key
/// names) the table's own key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Key<'a> {
    /// The attribute of this name.
    Named(&'a str),
    /// The table hash key.
    TableHash,
    /// The table range key.
    TableRange,
}

impl Key<'_> {
    fn show(self) -> String {
        match self {
            Self::Named(name) => format!("`{name}`"),
            Self::TableHash => "(the table hash key)".to_owned(),
            Self::TableRange => "(the table range key)".to_owned(),
        }
    }
}

/// How a message names a table key: by its name when known, or (in the derive) by how to
/// choose it.
fn table_key(syntax: Syntax, which: Key<'_>, name: Option<&str>) -> String {
    let (what, option) = if which == Key::TableHash {
        ("hash", "hash")
    } else {
        ("range", "range")
    };
    match (syntax, name) {
        (_, Some(name)) => format!("the table {what} key `{name}`"),
        (Syntax::Derive, None) => format!("the table {what} key (leave `{option}` out)"),
        (Syntax::Config, None) => format!("the table {what} key"),
    }
}

/// An index key as the rules about it take it.
#[derive(Clone, Copy, Debug)]
pub struct IndexKey<'a> {
    /// The index name.
    pub index: &'a str,
    /// The key's attribute name.
    pub key: &'a str,
    /// What the name is (`None`: nothing declared).
    pub role: Option<Role>,
    /// The table's key of that side, when known (not in the derive).
    pub table_key: Option<&'a str>,
}

/// Rule: an index hash key is the table hash key or a sharded generated property: an index is
/// queried shard by shard, so its hash key must carry the shard suffix. `sharded` lists the
/// sharded generated properties, for the message.
pub fn index_hash_key(syntax: Syntax, hash: IndexKey<'_>, sharded: &[&str]) -> Option<Problem> {
    let IndexKey { index, key, .. } = hash;
    let what = match hash.role {
        Some(Role::TableHashKey | Role::Generated(GeneratedKind::Sharded)) => return None,
        Some(Role::Generated(GeneratedKind::Unsharded)) => {
            "it is an unsharded generated property, which can only be a range key"
        }
        Some(Role::Transcoded) => "it is a transcoded property, which can only be a range key",
        Some(Role::Attribute) => "it is a stored attribute without a transcode",
        Some(Role::TableRangeKey) => "it is the table range key",
        None => "no such attribute is declared",
    };
    let table = table_key(syntax, Key::TableHash, hash.table_key);
    Some(wrong_key(
        ConfigRule::IndexHashKeys,
        &format!(
            "index `{index}` hash key `{key}` is neither {table} nor a sharded generated property ({what})"
        ),
        GeneratedKind::Sharded,
        sharded,
    ))
}

/// The problem of an index key of the wrong kind: `what` says what it is, and the message lists
/// the generated properties of `kind`, which would do.
fn wrong_key(rule: ConfigRule, what: &str, kind: GeneratedKind, candidates: &[&str]) -> Problem {
    let kind = match kind {
        GeneratedKind::Sharded => "sharded",
        GeneratedKind::Unsharded => "unsharded",
    };
    Problem::new(
        rule,
        format!(
            "{what}; use one of them ({kind} generated properties: {})",
            list(candidates.iter().copied())
        ),
    )
}

/// Rule: an index range key is the table range key, an unsharded generated property or a
/// transcoded property: the sort key is a value the index can order by. `unsharded` lists the
/// unsharded generated properties, for the message.
pub fn index_range_key(syntax: Syntax, range: IndexKey<'_>, unsharded: &[&str]) -> Option<Problem> {
    let IndexKey { index, key, .. } = range;
    let what = match range.role {
        Some(
            Role::TableRangeKey | Role::Generated(GeneratedKind::Unsharded) | Role::Transcoded,
        ) => return None,
        Some(Role::Generated(GeneratedKind::Sharded)) => {
            "it is a sharded generated property, which can only be a hash key"
        }
        Some(Role::TableHashKey) => "it is the table hash key",
        Some(Role::Attribute) => {
            return Some(Problem::new(
                ConfigRule::IndexRangeKeys,
                format!(
                    "index `{index}` range key `{key}` is not a transcoded property; {}",
                    syntax.give_transcode("…")
                ),
            ));
        }
        None => "no such attribute is declared",
    };
    let table = table_key(syntax, Key::TableRange, range.table_key);
    Some(wrong_key(
        ConfigRule::IndexRangeKeys,
        &format!(
            "index `{index}` range key `{key}` is neither {table}, an unsharded generated property nor a transcoded property ({what})"
        ),
        GeneratedKind::Unsharded,
        unsharded,
    ))
}

/// Rule: a transcoded property used as an index range key has a transcode DynamoDB can key on:
/// key attributes are strings, numbers or binary, so not `boolean`. `keyable` is whether the
/// transcode has a key type.
pub fn index_range_key_type(
    index: &str,
    key: &str,
    transcode: &str,
    keyable: bool,
) -> Option<Problem> {
    (!keyable).then(|| {
        Problem::new(
            ConfigRule::IndexRangeKeyTypes,
            format!(
                "index `{index}` range key `{key}` has transcode `{transcode}`, which DynamoDB cannot use as a key attribute type; use a property with a string or number transcode"
            ),
        )
    })
}

/// Rule: no two indexes have the same (hash key, range key) pair: they would be one index twice.
/// `indexes` are (name, hash key, range key); indexes with an empty key or a repeated name are
/// reported by other rules and skipped (pass them as `None`). Returns the position of each later
/// index of a pair, with its problem.
pub fn index_key_pairs_unique(
    indexes: &[Option<(&str, Key<'_>, Key<'_>)>],
) -> Vec<(usize, Problem)> {
    let keyed = indexes
        .iter()
        .enumerate()
        .filter_map(|(i, index)| index.map(|(name, hash, range)| (i, (hash, range), name)));
    repeated(keyed)
        .into_iter()
        .map(|(i, (hash, range), first)| {
            let name = indexes[i].map_or("", |(name, _, _)| name);
            let message = format!(
                "index `{name}` has the same hash key {} and range key {} as index `{first}`; remove one of them",
                hash.show(),
                range.show(),
            );
            (i, Problem::new(ConfigRule::IndexKeyPairsUnique, message))
        })
        .collect()
}

// =============================================================================================
// multi-attribute index keys

/// The most partition attributes, and the most sort attributes, of a multi-attribute GSI key
/// (`DynamoDB`'s limit).
pub const MAX_MULTI_KEY_ATTRIBUTES: usize = 4;

/// A side of a multi-attribute index key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeySide {
    /// The partition (hash) attributes.
    Partition,
    /// The sort (range) attributes.
    Sort,
}

impl KeySide {
    const fn phrase(self) -> &'static str {
        match self {
            Self::Partition => "partition",
            Self::Sort => "sort",
        }
    }

    const fn option(self) -> &'static str {
        match self {
            Self::Partition => "hash",
            Self::Sort => "range",
        }
    }
}

/// Rule: a multi-attribute index key has 1 to 4 attributes on each side: `DynamoDB` accepts at
/// most 4 partition and 4 sort attributes, and a query orders by at least one sort attribute.
/// `count` counts every attribute of the side, the shard attribute that leads a sharded
/// partition key included (`sharded` says whether it does, for the message).
pub fn multi_key_arity(
    syntax: Syntax,
    index: &str,
    side: KeySide,
    count: usize,
    sharded: bool,
) -> Option<Problem> {
    if (1..=MAX_MULTI_KEY_ATTRIBUTES).contains(&count) {
        return None;
    }
    let what = side.phrase();
    let shard = if sharded && side == KeySide::Partition {
        match syntax {
            Syntax::Derive => ", counting the table hash key that `sharded` puts first",
            Syntax::Config => ", counting the table hash key that leads a sharded key",
        }
    } else {
        ""
    };
    let fix = if count == 0 {
        match syntax {
            Syntax::Derive => format!("list at least one field in `{} = [...]`", side.option()),
            Syntax::Config => format!("give it at least one {what} attribute"),
        }
    } else {
        format!("remove {}", count - MAX_MULTI_KEY_ATTRIBUTES)
    };
    Some(Problem::new(
        ConfigRule::MultiKeyArity,
        format!(
            "index `{index}` has {count} {what} attributes{shard}; DynamoDB allows 1 to {MAX_MULTI_KEY_ATTRIBUTES}: {fix}"
        ),
    ))
}

/// Rule: a multi-attribute index key names each attribute once, across both sides: `DynamoDB`
/// refuses a key schema that repeats an attribute. `attributes` are the key's attribute names,
/// partition attributes first; returns the position of each repeat, with its problem.
pub fn multi_key_attributes_unique(index: &str, attributes: &[&str]) -> Vec<(usize, Problem)> {
    repeated(attributes.iter().enumerate().map(|(i, a)| (i, *a, i)))
        .into_iter()
        .map(|(i, attribute, _)| {
            (
                i,
                Problem::new(
                    ConfigRule::MultiKeyAttributesUnique,
                    format!(
                        "index `{index}` names attribute `{attribute}` twice in its key; an attribute is one key attribute: remove the repeat"
                    ),
                ),
            )
        })
        .collect()
}

/// Rule: an attribute of a multi-attribute index key is a stored property with its natural
/// value, not a table key nor a generated property: those are strings built for the classic
/// keys (use a classic index for them); the only exception is the table hash key that leads a
/// sharded key (`shard_attribute`), which carries the shard suffix. `role` is what the name is
/// (`None`: an attribute the model does not describe, which is fine).
pub fn multi_key_attribute_role(
    syntax: Syntax,
    index: &str,
    attribute: &str,
    role: Option<Role>,
    shard_attribute: bool,
) -> Option<Problem> {
    match (role, shard_attribute) {
        (Some(Role::TableHashKey), true)
        | (None | Some(Role::Transcoded | Role::Attribute), false) => None,
        (_, true) => Some(Problem::new(
            ConfigRule::MultiKeyAttributeRoles,
            format!(
                "index `{index}` is sharded, so its first partition attribute must be the table hash key, not `{attribute}`"
            ),
        )),
        (Some(role @ (Role::TableHashKey | Role::TableRangeKey | Role::Generated(_))), false) => {
            let fix = match (syntax, role) {
                (Syntax::Derive, Role::TableHashKey) => {
                    "add `sharded` to put the table hash key first".to_owned()
                }
                (Syntax::Config, Role::TableHashKey) => {
                    "make the index sharded to put the table hash key first".to_owned()
                }
                _ => "name the stored fields it is built from instead".to_owned(),
            };
            Some(Problem::new(
                ConfigRule::MultiKeyAttributeRoles,
                format!(
                    "index `{index}` key attribute `{attribute}` is {}, not a stored property with its natural value; {fix}",
                    role.phrase()
                ),
            ))
        }
    }
}

/// What a projected name is, when it is a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// The table hash key.
    TableHash,
    /// The table range key.
    TableRange,
    /// The index's hash key.
    IndexHash,
    /// The index's range key.
    IndexRange,
    /// A generated property.
    Generated,
}

/// Rule: a projection names no key attribute (the table keys, the index's own keys or any
/// generated property): keys are always projected (TypeScript rule "index projection is a key").
/// `key` is what the projected name is, when a key.
pub fn projection_not_key(index: &str, projection: &str, key: Option<KeyKind>) -> Option<Problem> {
    let role = match key? {
        KeyKind::TableHash => "the table hash key",
        KeyKind::TableRange => "the table range key",
        KeyKind::IndexHash => "the index hash key",
        KeyKind::IndexRange => "the index range key",
        KeyKind::Generated => "a generated property",
    };
    Some(Problem::new(
        ConfigRule::ProjectionsNotKeys,
        format!(
            "projection `{projection}` of index `{index}` is {role}; keys are always projected, so remove it"
        ),
    ))
}

/// Rule: an index lists each projection once (reported on the repeat). Returns the positions of
/// the repeats.
pub fn projections_unique(index: &str, projections: &[&str]) -> Vec<(usize, Problem)> {
    repeats(ConfigRule::ProjectionsUnique, projections, |projection| {
        format!("projection `{projection}` is listed twice in index `{index}`; remove the repeat")
    })
}

// =============================================================================================
// across the entities of a table: `const fn`s, for the derive's `const` assertions and for
// `validate.rs`

const fn str_eq(a: &str, b: &str) -> bool {
    bytes_eq(a.as_bytes(), b.as_bytes())
}

const fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn contains(haystack: &str, needle: &str) -> bool {
    bytes_contain(haystack.as_bytes(), needle.as_bytes())
}

const fn bytes_contain(h: &[u8], n: &[u8]) -> bool {
    if n.is_empty() || n.len() > h.len() {
        return false;
    }
    let mut start = 0;
    while start + n.len() <= h.len() {
        // the first byte alone rules out most positions
        if h[start] == n[0] {
            let mut i = 1;
            while i < n.len() && h[start + i] == n[i] {
                i += 1;
            }
            if i == n.len() {
                return true;
            }
        }
        start += 1;
    }
    false
}

/// The text of a name (`const`: `Deref` is not).
#[allow(clippy::ptr_arg)] // `&str` cannot be had from a `&Cow` in a const fn otherwise
pub const fn name<'a>(cow: &'a Cow<'_, str>) -> &'a str {
    match cow {
        Cow::Borrowed(s) => s,
        Cow::Owned(s) => s.as_str(),
    }
}

#[allow(clippy::ptr_arg)] // `&[T]` cannot be had from a `&Cow` in a const fn otherwise
const fn slice<'a, T: Clone>(cow: &'a Cow<'_, [T]>) -> &'a [T] {
    match cow {
        Cow::Borrowed(s) => s,
        Cow::Owned(v) => v.as_slice(),
    }
}

/// The indexes of an entity (`const`).
pub const fn indexes_of(entity: &EntityModel) -> &[Index] {
    slice(&entity.indexes)
}

/// Whether `name` is the attribute name `key` (a table key's, in a `const` assertion).
#[allow(clippy::ptr_arg)] // the model's names are `Cow`s
pub const fn is_name(key: &Cow<'_, str>, name: &str) -> bool {
    str_eq(name, self::name(key))
}

/// The first failing check of the names an entity writes, against its table, for the derive's
/// one `const` assertion per entity: `(k, code)` for `names[k] = (name, keys, delimiters)`, or
/// `(usize::MAX, 0)` when every check passes. Per name, in order: with `keys`, code `1` when
/// `name` is the table's hash key, `2` its range key (rule
/// [`ConfigRule::AttributeNamesDistinct`]); with `delimiters`, `3 + d` when it contains the
/// delimiter [`Delimiter::ALL`]`[d]` (rules [`ConfigRule::EntityToken`],
/// [`ConfigRule::NamesFreeOfDelimiters`]).
///
/// `bytes` has bit `b` set for every byte `b < 128` of every name (the derive computes it), and
/// bit 127 for any byte from 128: the delimiters are looked for only when one of them starts
/// with such a byte. One call per entity, with that shortcut: the compiler's `const` interpreter
/// runs it for every entity of every build, so its step count is the derive's compile cost.
pub const fn name_problems(
    table: &crate::model::TableModel,
    names: &[(&str, bool, bool)],
    bytes: u128,
) -> (usize, usize) {
    let hash = name(&table.hash_key).as_bytes();
    let range = name(&table.range_key).as_bytes();
    let delimiters = [
        Delimiter::ALL[0].of(&table.delimiters).as_bytes(),
        Delimiter::ALL[1].of(&table.delimiters).as_bytes(),
        Delimiter::ALL[2].of(&table.delimiters).as_bytes(),
    ];
    // the fast path: no delimiter starts with a byte any name holds, so no name contains one
    let mut scan = false;
    let mut d = 0;
    while d < delimiters.len() {
        if let Some(&first) = delimiters[d].first()
            && (first >= 128 || bytes & (1u128 << first) != 0)
        {
            scan = true;
        }
        d += 1;
    }
    let mut k = 0;
    while k < names.len() {
        let (text, keys, check_delimiters) = names[k];
        let text = text.as_bytes();
        if keys && bytes_eq(text, hash) {
            return (k, 1);
        }
        if keys && bytes_eq(text, range) {
            return (k, 2);
        }
        if scan && check_delimiters {
            let mut d = 0;
            while d < delimiters.len() {
                if bytes_contain(text, delimiters[d]) {
                    return (k, 3 + d);
                }
                d += 1;
            }
        }
        k += 1;
    }
    (usize::MAX, 0)
}

/// The first entity of `earlier` that shares `entity`'s token (rule
/// [`ConfigRule::EntityTokensUnique`]), by position.
pub const fn first_same_token(entity: &EntityModel, earlier: &[&EntityModel]) -> Option<usize> {
    let mut j = 0;
    while j < earlier.len() {
        if same_token(entity, earlier[j]) {
            return Some(j);
        }
        j += 1;
    }
    None
}

/// The first index of `entity` that conflicts with the first earlier declaration of its name
/// in `earlier` (rule [`ConfigRule::IndexDeclarationsAgree`]), by that entity's position, with
/// the conflict. Comparing with the first declaration only is enough: a later declaration
/// that disagreed with it was reported at its own entity. Linear in the entities, where
/// comparing every pair was quadratic in the `const` interpreter.
#[allow(clippy::many_single_char_names)] // positions and the two indexes, as in `index_conflict`
pub const fn first_index_conflict<'a>(
    entity: &'a EntityModel,
    earlier: &[&'a EntityModel],
) -> Option<(usize, IndexConflict<'a>)> {
    let mine = slice(&entity.indexes);
    let mut i = 0;
    while i < mine.len() {
        let x = &mine[i];
        let mut j = 0;
        'declarations: while j < earlier.len() {
            let theirs = slice(&earlier[j].indexes);
            let mut k = 0;
            while k < theirs.len() {
                let y = &theirs[k];
                if str_eq(name(&x.name), name(&y.name)) {
                    if !(str_eq(name(&x.hash_key), name(&y.hash_key))
                        && str_eq(name(&x.range_key), name(&y.range_key))
                        && same_multi_key(x.multi.as_ref(), y.multi.as_ref()))
                    {
                        return Some((j, IndexConflict::Keys(x, y)));
                    }
                    if !same_projection(&x.projection, &y.projection) {
                        return Some((j, IndexConflict::Projection(x, y)));
                    }
                    break 'declarations;
                }
                k += 1;
            }
            j += 1;
        }
        i += 1;
    }
    None
}

/// Rule: entity tokens are unique in a table: the token prefixes every hash key, so two entities
/// with one token would share partitions. A placeholder model (a failed derive) has no token and
/// is never a duplicate. Reported on the later entity.
pub const fn same_token(a: &EntityModel, b: &EntityModel) -> bool {
    !name(&a.token).is_empty() && str_eq(name(&a.token), name(&b.token))
}

/// The problem of two entities of one token (rule [`ConfigRule::EntityTokensUnique`]):
/// `this` and `other` name them (at run time, by the token itself).
pub fn duplicate_token(syntax: Syntax, this: &str, other: &str) -> Problem {
    let message = match syntax {
        Syntax::Config => format!(
            "entity token `{this}` is used by two entities; each entity of a table needs its own token"
        ),
        Syntax::Derive => format!(
            "`{this}` has the same entity token as `{other}`; each entity of a table needs its own token: give one of them another `#[entity(token = \"…\")]`"
        ),
    };
    Problem::new(ConfigRule::EntityTokensUnique, message)
}

const fn same_parts(a: &[IndexAttribute], b: &[IndexAttribute]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if !str_eq(name(&a[i].name), name(&b[i].name)) || a[i].key_type as u8 != b[i].key_type as u8
        {
            return false;
        }
        i += 1;
    }
    true
}

const fn same_multi_key(a: Option<&MultiKey>, b: Option<&MultiKey>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            a.sharded == b.sharded
                && same_parts(slice(&a.hash), slice(&b.hash))
                && same_parts(slice(&a.range), slice(&b.range))
        }
        _ => false,
    }
}

const fn same_projection(a: &Projection, b: &Projection) -> bool {
    match (a, b) {
        (Projection::All, Projection::All) | (Projection::KeysOnly, Projection::KeysOnly) => true,
        (Projection::Include(a), Projection::Include(b)) => {
            let (a, b) = (slice(a), slice(b));
            if a.len() != b.len() {
                return false;
            }
            let mut i = 0;
            while i < a.len() {
                if !str_eq(name(&a[i]), name(&b[i])) {
                    return false;
                }
                i += 1;
            }
            true
        }
        _ => false,
    }
}

/// How two indexes of one name in two entities of a table disagree: this entity's index, then
/// the other's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum IndexConflict<'a> {
    /// Different hash or range key attributes.
    Keys(&'a Index, &'a Index),
    /// Different projections.
    Projection(&'a Index, &'a Index),
}

impl<'a> IndexConflict<'a> {
    /// The index name.
    pub const fn name(self) -> &'a str {
        match self {
            Self::Keys(index, _) | Self::Projection(index, _) => name(&index.name),
        }
    }
}

/// Rule: an index name declared by several entities has the same hash key, range key and
/// projection in each: it is one GSI of the table. Returns the first index name `a` and `b` both
/// declare with different key attributes or projections.
#[allow(clippy::many_single_char_names)] // two entities, two index positions, two indexes
pub const fn index_conflict<'a>(
    a: &'a EntityModel,
    b: &'a EntityModel,
) -> Option<IndexConflict<'a>> {
    let (a, b) = (slice(&a.indexes), slice(&b.indexes));
    let mut i = 0;
    while i < a.len() {
        let mut j = 0;
        while j < b.len() {
            let (x, y) = (&a[i], &b[j]);
            if str_eq(name(&x.name), name(&y.name)) {
                if !(str_eq(name(&x.hash_key), name(&y.hash_key))
                    && str_eq(name(&x.range_key), name(&y.range_key))
                    && same_multi_key(x.multi.as_ref(), y.multi.as_ref()))
                {
                    return Some(IndexConflict::Keys(x, y));
                }
                if !same_projection(&x.projection, &y.projection) {
                    return Some(IndexConflict::Projection(x, y));
                }
            }
            j += 1;
        }
        i += 1;
    }
    None
}

impl Message {
    /// Appends the keys of `index`.
    const fn push_keys(self, index: &Index) -> Self {
        if let Some(multi) = &index.multi {
            let message = self
                .push("partition attributes ")
                .push_parts(slice(&multi.hash));
            return message
                .push(" and sort attributes ")
                .push_parts(slice(&multi.range));
        }
        self.push("hash key `")
            .push(name(&index.hash_key))
            .push("` and range key `")
            .push(name(&index.range_key))
            .push("`")
    }

    /// Appends attribute names in backticks, comma-separated.
    const fn push_parts(self, parts: &[IndexAttribute]) -> Self {
        let mut message = self;
        let mut i = 0;
        while i < parts.len() {
            if i > 0 {
                message = message.push(", ");
            }
            message = message.push("`").push(name(&parts[i].name)).push("`");
            i += 1;
        }
        message
    }

    /// Appends what `projection` projects.
    const fn push_projection(self, projection: &Projection) -> Self {
        match projection {
            Projection::All => self.push("all attributes"),
            Projection::KeysOnly => self.push("keys only"),
            Projection::Include(names) => {
                let names = slice(names);
                let mut message = self.push("keys and ");
                let mut i = 0;
                while i < names.len() {
                    if i > 0 {
                        message = message.push(", ");
                    }
                    message = message.push("`").push(name(&names[i])).push("`");
                    i += 1;
                }
                message
            }
        }
    }
}

/// The message of an index conflict between entity `this` and the earlier entity `other` (rule
/// [`ConfigRule::IndexDeclarationsAgree`]), assembled at compile time or at run time.
pub const fn index_conflict_message(
    conflict: IndexConflict<'_>,
    this: &str,
    other: &str,
) -> Message {
    let message = Message::new().push("index `").push(conflict.name());
    let message = match conflict {
        IndexConflict::Keys(mine, theirs) => {
            let message = message
                .push("` has ")
                .push_keys(mine)
                .push(" in entity `")
                .push(this)
                .push("`, but entity `")
                .push(other)
                .push("` declares it with ");
            message.push_keys(theirs)
        }
        IndexConflict::Projection(mine, theirs) => {
            let message = message
                .push("` projects ")
                .push_projection(&mine.projection)
                .push(" in entity `")
                .push(this)
                .push("`, but entity `")
                .push(other)
                .push("` declares it projecting ");
            message.push_projection(&theirs.projection)
        }
    };
    message.push("; one index name is one GSI of the table, so make them agree or rename one")
}

/// Whether index `i` of list `e` is the first declaration of its name in `lists`.
const fn first_of_name(lists: &[&[Index]], e: usize, i: usize) -> bool {
    let index = &lists[e][i];
    let mut f = 0;
    while f <= e {
        let others = lists[f];
        let end = if f == e { i } else { others.len() };
        let mut j = 0;
        while j < end {
            if str_eq(name(&index.name), name(&others[j].name)) {
                return false;
            }
            j += 1;
        }
        f += 1;
    }
    true
}

/// The number of distinct index names in `lists`, and where the `n`th (from 1) is first
/// declared: (list, position).
const fn count_indexes(lists: &[&[Index]], n: usize) -> (usize, Option<(usize, usize)>) {
    let (mut count, mut nth) = (0, None);
    let mut e = 0;
    while e < lists.len() {
        let mut i = 0;
        while i < lists[e].len() {
            if first_of_name(lists, e, i) {
                count += 1;
                if count == n {
                    nth = Some((e, i));
                }
            }
            i += 1;
        }
        e += 1;
    }
    (count, nth)
}

/// The number of distinct index names in `lists` (the index lists of a table's entities): the
/// table's GSIs.
pub const fn distinct_indexes(lists: &[&[Index]]) -> usize {
    count_indexes(lists, 0).0
}

/// Where the first index name beyond [`MAX_INDEXES`] is declared: (list, position).
pub const fn first_index_over_limit(lists: &[&[Index]]) -> Option<(usize, usize)> {
    count_indexes(lists, MAX_INDEXES + 1).1
}

/// Rule: a table has at most 20 distinct index names, DynamoDB's limit of global secondary
/// indexes per table. `lists` are the index lists of the table's entities (or the one global list
/// of a TypeScript config); `table` names the table, when known. Reported at the first
/// declaration of the 21st name ([`first_index_over_limit`]).
pub const fn index_count_message(table: &str, lists: &[&[Index]]) -> Option<Message> {
    let Some((e, i)) = first_index_over_limit(lists) else {
        return None;
    };
    let message = Message::new()
        .push("index `")
        .push(name(&lists[e][i].name))
        .push("` is the ")
        .push_usize(MAX_INDEXES + 1)
        .push("st distinct index of ");
    let message = if table.is_empty() {
        message.push("the table")
    } else {
        message.push("table `").push(table).push("`")
    };
    Some(
        message
            .push(", which declares ")
            .push_usize(distinct_indexes(lists))
            .push(" in all; DynamoDB allows at most ")
            .push_usize(MAX_INDEXES)
            .push(" global secondary indexes per table, so remove or merge indexes"),
    )
}

/// A message assembled by a `const fn` (a `const` cannot `format!`): up to 512 bytes, longer
/// text is cut at a piece boundary.
#[derive(Clone, Copy, Debug)]
pub struct Message {
    buf: [u8; 512],
    len: usize,
}

impl Message {
    /// An empty message.
    pub const fn new() -> Self {
        Self {
            buf: [0; 512],
            len: 0,
        }
    }

    /// Appends `text` whole, or nothing if it does not fit.
    #[must_use]
    pub const fn push(mut self, text: &str) -> Self {
        let bytes = text.as_bytes();
        if self.len + bytes.len() > self.buf.len() {
            return self;
        }
        let mut i = 0;
        while i < bytes.len() {
            self.buf[self.len + i] = bytes[i];
            i += 1;
        }
        self.len += bytes.len();
        self
    }

    /// Appends a number in decimal.
    #[must_use]
    pub const fn push_usize(self, mut n: usize) -> Self {
        let mut digits = [0u8; 20];
        let mut start = digits.len();
        loop {
            start -= 1;
            #[allow(clippy::cast_possible_truncation)] // a digit
            {
                digits[start] = b'0' + (n % 10) as u8;
            }
            n /= 10;
            if n == 0 {
                break;
            }
        }
        match std::str::from_utf8(digits.split_at(start).1) {
            Ok(text) => self.push(text),
            Err(_) => self,
        }
    }

    /// The message.
    pub const fn as_str(&self) -> &str {
        match std::str::from_utf8(self.buf.split_at(self.len).0) {
            Ok(text) => text,
            Err(_) => "",
        }
    }
}

impl Default for Message {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Display for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `rule` with `message`, as a [`Problem`] (for the `const fn` messages).
pub fn problem(rule: ConfigRule, message: &Message) -> Problem {
    let mut text = String::new();
    let _ = write!(text, "{message}");
    Problem::new(rule, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_assembled_at_compile_time() {
        const M: Message = Message::new().push("index `a` of ").push_usize(20).push("");
        assert_eq!(M.as_str(), "index `a` of 20");
        assert_eq!(Message::new().push_usize(0).as_str(), "0");
        assert_eq!(Message::new().push(&"x".repeat(600)).as_str(), "");
    }

    #[test]
    fn delimiters_are_found_in_names() {
        let delimiters = Delimiters::DEFAULT;
        assert!(contains_delimiter(
            &delimiters,
            Delimiter::GeneratedKey,
            "a|b"
        ));
        assert!(!contains_delimiter(&delimiters, Delimiter::ShardKey, "a|b"));
        assert!(!contains("abc", ""));
    }

    #[test]
    fn settings_are_spelled_in_the_callers_syntax() {
        let config = bump_char_bits(Syntax::Config, 6).map(|p| p.message);
        let derive = bump_char_bits(Syntax::Derive, 6).map(|p| p.message);
        assert!(config.is_some_and(|m| m.contains("`charBits` is 6")));
        assert!(derive.is_some_and(|m| m.contains("`char_bits` is 6")));
        assert_eq!(bump_char_bits(Syntax::Derive, MAX_CHAR_BITS.into()), None);
    }

    #[test]
    fn a_schedule_is_sorted_with_the_implied_bump_in_front() {
        let bumps = [ShardBump::new(9, 1, 2), ShardBump::new(5, 1, 1)];
        let s = schedule(&bumps);
        assert_eq!(s.declared, [None, Some(1), Some(0)]);
        assert_eq!(s.bumps[0], ShardBump::UNSHARDED);
        assert!(s.implied());
        let s = schedule(&[ShardBump::new(0, 2, 1)]);
        assert_eq!(s.declared, [Some(0)]);
        assert!(!s.implied());
        assert_eq!(schedule(&[]).bumps, [ShardBump::UNSHARDED]);
    }

    #[test]
    fn the_21st_distinct_index_is_over_the_limit() {
        let index = |name: String| Index {
            name: Cow::Owned(name),
            hash_key: Cow::Borrowed("hashKey"),
            range_key: Cow::Borrowed("x"),
            projection: Projection::All,
            multi: None,
        };
        let a: Vec<Index> = (0..15).map(|i| index(format!("i{i}"))).collect();
        // 10 repeats of `a`'s names and 6 new ones
        let b: Vec<Index> = (5..21).map(|i| index(format!("i{i}"))).collect();
        let lists: [&[Index]; 2] = [&a, &b];
        assert_eq!(distinct_indexes(&lists), 21);
        assert_eq!(first_index_over_limit(&lists), Some((1, 15)));
        assert_eq!(first_index_over_limit(&lists[..1]), None);
        assert!(index_count_message("", &lists).is_some_and(|m| {
            m.as_str()
                .contains("`i20` is the 21st distinct index of the table, which declares 21")
        }));
        assert!(index_count_message("Users", &lists[..1]).is_none());
    }
}

/// `name_problems`, which the derive's `const` assertion runs with a byte mask to skip the
/// delimiter scan, finds what the rules one by one find, in the same order.
#[cfg(test)]
mod name_problems_agree {
    use proptest::prelude::*;

    use super::*;
    use crate::model::{Delimiters, TableModel};

    const TEXTS: [&str; 9] = ["|", "#", "!", "ab", "é", "", "x", "hashKey", "rangeKey"];

    fn reference(table: &TableModel, names: &[(&str, bool, bool)]) -> (usize, usize) {
        for (k, &(text, keys, delimiters)) in names.iter().enumerate() {
            if keys && is_name(&table.hash_key, text) {
                return (k, 1);
            }
            if keys && is_name(&table.range_key, text) {
                return (k, 2);
            }
            if delimiters {
                for (d, which) in Delimiter::ALL.into_iter().enumerate() {
                    if contains_delimiter(&table.delimiters, which, text) {
                        return (k, 3 + d);
                    }
                }
            }
        }
        (usize::MAX, 0)
    }

    /// The mask the derive computes (`expand/assertions.rs`).
    fn mask(names: &[(&str, bool, bool)]) -> u128 {
        let mut bytes = 0u128;
        for &(text, _, delimiters) in names {
            if delimiters {
                for b in text.bytes() {
                    bytes |= 1u128 << b.min(127);
                }
            }
        }
        bytes
    }

    proptest! {
        #[test]
        fn as_the_rules_one_by_one(
            keys in (0..TEXTS.len(), 0..TEXTS.len()),
            delimiters in (0..TEXTS.len(), 0..TEXTS.len(), 0..TEXTS.len()),
            names in proptest::collection::vec(("[a-z|#!xé]{0,6}", any::<bool>(), any::<bool>()), 0..6),
        ) {
            let table = TableModel::DEFAULT
                .with_keys(TEXTS[keys.0], TEXTS[keys.1])
                .with_delimiters(Delimiters::new(TEXTS[delimiters.0], TEXTS[delimiters.1], TEXTS[delimiters.2]));
            let names: Vec<(&str, bool, bool)> =
                names.iter().map(|(t, k, d)| (t.as_str(), *k, *d)).collect();
            prop_assert_eq!(name_problems(&table, &names, mask(&names)), reference(&table, &names));
        }
    }
}
