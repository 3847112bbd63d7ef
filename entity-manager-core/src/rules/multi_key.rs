//! The rules of multi-attribute index keys: arity, repeats and the roles of their attributes.

use super::wording::{Role, Syntax, repeated};
use super::{ConfigRule, Problem};

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
