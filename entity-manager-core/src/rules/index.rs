//! The rules of indexes: names, hash and range keys, and projections.

use crate::limits::INDEX_NAME_LENGTH;
use crate::model::GeneratedKind;

use super::wording::{Role, Syntax, list, repeated, repeats};
use super::{ConfigRule, Problem};

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
/// [`name_not_empty`](super::name_not_empty).
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
