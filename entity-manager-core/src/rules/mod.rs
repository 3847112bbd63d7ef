//! The configuration rules, once.
//!
//! Every rule of a table and entity configuration is one function, headed by a comment that
//! states the rule and its reason, and tagged with its [`ConfigRule`]: the catalogue of rules and
//! their identifiers is this file, and each function is in the file of its subject (`table`,
//! `entity`, `bump`, `property`, `index`, `multi_key`, and `across` for the rules across the
//! entities of a table), worded through `wording`. The functions take plain
//! data (names, numbers, what a name refers to) and return [`Problem`]s, so that both callers
//! apply the same rule with the same words:
//!
//! - at run time, `validate.rs` ([`Schema::new`](crate::Schema::new) and
//!   [`Schema::from_ts_config`](crate::Schema::from_ts_config)) locates each problem by a path of
//!   the configuration;
//! - at compile time, `#[derive(Entity)]` and `#[derive(Table)]` (through `__private::rules`)
//!   put each problem on the offending token. The rules that need another entity or the table's
//!   settings cannot run in one derive: they are `const fn`s (`across`), evaluated by `const`
//!   assertions that the derive emits, and called by `validate.rs` at run time too.
//!
//! A message says what is wrong and what to do, in the words of the caller's [`Syntax`]: a JSON
//! config spells `charBits`, the derive `char_bits`.
//!
//! Limits and defaults are the named constants of this module.

mod across;
mod bump;
mod bytes;
mod entity;
mod index;
mod multi_key;
mod property;
mod table;
#[cfg(test)]
mod tests;
mod wording;

pub use across::*;
pub use bump::*;
pub use bytes::*;
pub use entity::*;
pub use index::*;
pub use multi_key::*;
pub use property::*;
pub use table::*;
pub use wording::*;

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
