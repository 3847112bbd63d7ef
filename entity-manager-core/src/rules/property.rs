//! The rules of properties and generated properties: names, roles and components.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use crate::model::Delimiters;

use super::entity::name_with_delimiter;
use super::wording::{Named, Role, Syntax, repeats};
use super::{ConfigRule, Problem};

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

/// Rule: property, generated property and index names contain no delimiter: names appear inside
/// keys (`<name><generatedValueDelimiter><value>`) and page keys, which are split on delimiters.
/// The derive, which does not know the table's delimiters, checks this with `const` assertions
/// over [`contains_delimiter`](super::contains_delimiter) and the message of
/// [`delimiter_in_name`](super::delimiter_in_name).
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
