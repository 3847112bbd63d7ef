//! How rule messages are worded: the caller's [`Syntax`], the settings, delimiters, roles and
//! kinds of names they mention, and the lists and repeats they report.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use crate::limits::{
    DEFAULT_GENERATED_KEY_DELIMITER, DEFAULT_GENERATED_VALUE_DELIMITER, DEFAULT_SHARD_KEY_DELIMITER,
};
use crate::model::{Delimiters, GeneratedKind};

use super::bytes::name;
use super::{ConfigRule, Problem};

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
    pub(super) fn give_transcode(self, example: &str) -> String {
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
    pub(super) const fn phrase(self) -> &'static str {
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
    pub(super) const fn phrase(self) -> &'static str {
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
pub(super) fn repeated<K: Eq + std::hash::Hash + Copy, V: Copy>(
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
pub(super) fn repeats(
    rule: ConfigRule,
    names: &[&str],
    message: impl Fn(&str) -> String,
) -> Vec<(usize, Problem)> {
    repeated(names.iter().enumerate().map(|(i, name)| (i, *name, ())))
        .into_iter()
        .map(|(i, name, ())| (i, Problem::new(rule, message(name))))
        .collect()
}
