//! `UpdateItem` semantics for the in-memory store: validating an [`Update`] as `DynamoDB` does
//! and applying it to an item.

use std::collections::HashMap;

use serde_dynamo::{AttributeValue, Item};

use super::value::{Number, normalize, type_name};
use super::{ReturnValues, TableDefinition, Update, UpdateAction};

/// Checks an update before it touches anything: distinct attributes, no key attribute,
/// operands of the right types (numbers and sets normalised). Returns the normalised actions.
pub(crate) fn check(
    update: &Update,
    definition: &TableDefinition,
) -> Result<Vec<UpdateAction>, String> {
    let mut seen: Vec<&str> = Vec::with_capacity(update.actions().len());
    let mut out = Vec::with_capacity(update.actions().len());
    for action in update.actions() {
        let attribute = action.attribute();
        if attribute.is_empty() {
            return Err("Invalid UpdateExpression: an attribute name is empty".to_owned());
        }
        if attribute == definition.hash_key.name || attribute == definition.range_key.name {
            return Err(format!(
                "One or more parameter values were invalid: Cannot update attribute {attribute}. This attribute is part of the key"
            ));
        }
        if seen.contains(&attribute) {
            return Err(format!(
                "Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [{attribute}], path two: [{attribute}]"
            ));
        }
        seen.push(attribute);
        let mut action = action.clone();
        match &mut action {
            UpdateAction::Set(a, v) | UpdateAction::SetIfNotExists(a, v) => normalize(v, a)?,
            UpdateAction::Increment(a, v) | UpdateAction::Decrement(a, v) => {
                operand(v, a, "+", |v| matches!(v, AttributeValue::N(_)))?;
            }
            UpdateAction::Append(a, v) | UpdateAction::Prepend(a, v) => {
                operand(v, a, "list_append", |v| matches!(v, AttributeValue::L(_)))?;
            }
            UpdateAction::Add(a, v) => operand(v, a, "ADD", |v| {
                matches!(
                    v,
                    AttributeValue::N(_)
                        | AttributeValue::Ss(_)
                        | AttributeValue::Ns(_)
                        | AttributeValue::Bs(_)
                )
            })?,
            UpdateAction::Delete(a, v) => operand(v, a, "DELETE", |v| {
                matches!(
                    v,
                    AttributeValue::Ss(_) | AttributeValue::Ns(_) | AttributeValue::Bs(_)
                )
            })?,
            UpdateAction::Remove(_) => {}
        }
        out.push(action);
    }
    Ok(out)
}

fn operand(
    value: &mut AttributeValue,
    attribute: &str,
    operator: &str,
    accepts: impl Fn(&AttributeValue) -> bool,
) -> Result<(), String> {
    normalize(value, attribute)?;
    if accepts(value) {
        Ok(())
    } else {
        Err(format!(
            "Invalid UpdateExpression: Incorrect operand type for operator or function; operator: {operator}, operand type: {}",
            type_name(value)
        ))
    }
}

fn wrong_type(operator: &str, attribute: &str, found: &AttributeValue) -> String {
    format!(
        "An operand in the update expression has an incorrect data type: {operator} on attribute `{attribute}` of type {}",
        type_name(found)
    )
}

fn number(v: &AttributeValue) -> Option<Number> {
    match v {
        AttributeValue::N(n) => Number::parse(n),
        _ => None,
    }
}

fn sum(attribute: &str, a: &Number, b: &Number) -> Result<AttributeValue, String> {
    a.add(b).map(|n| AttributeValue::N(n.canonical())).ok_or_else(|| {
        format!(
            "Number overflow. Attempting to store a number with magnitude larger than supported range, or more than 38 significant digits: attribute `{attribute}`"
        )
    })
}

/// Applies checked actions to `item` (the current item, or the key alone when there is none).
#[allow(clippy::too_many_lines)] // one arm per action, as DynamoDB defines it
pub(crate) fn apply(item: &mut Item, actions: &[UpdateAction]) -> Result<(), String> {
    for action in actions {
        match action {
            UpdateAction::Set(a, v) => {
                item.insert(a.clone(), v.clone());
            }
            UpdateAction::SetIfNotExists(a, v) => {
                if !item.contains_key(a) {
                    item.insert(a.clone(), v.clone());
                }
            }
            UpdateAction::Increment(a, v) | UpdateAction::Decrement(a, v) => {
                let Some(current) = item.get(a) else {
                    return Err(format!(
                        "The provided expression refers to an attribute that does not exist in the item: `{a}`"
                    ));
                };
                let (Some(x), Some(y)) = (number(current), number(v)) else {
                    return Err(wrong_type("+", a, current));
                };
                let y = if matches!(action, UpdateAction::Decrement(..)) {
                    y.negated()
                } else {
                    y
                };
                let value = sum(a, &x, &y)?;
                item.insert(a.clone(), value);
            }
            UpdateAction::Append(a, v) | UpdateAction::Prepend(a, v) => {
                let AttributeValue::L(extra) = v else {
                    return Err(wrong_type("list_append", a, v));
                };
                let mut list = match item.get(a) {
                    None => Vec::new(),
                    Some(AttributeValue::L(l)) => l.clone(),
                    Some(other) => return Err(wrong_type("list_append", a, other)),
                };
                if matches!(action, UpdateAction::Append(..)) {
                    list.extend(extra.iter().cloned());
                } else {
                    let mut front = extra.clone();
                    front.extend(list);
                    list = front;
                }
                item.insert(a.clone(), AttributeValue::L(list));
            }
            UpdateAction::Remove(a) => {
                item.remove(a);
            }
            UpdateAction::Add(a, v) => {
                let value = match (item.get(a), v) {
                    (None, v) => v.clone(),
                    (Some(AttributeValue::N(_)), AttributeValue::N(_)) => {
                        match (item.get(a).and_then(number), number(v)) {
                            (Some(x), Some(y)) => sum(a, &x, &y)?,
                            _ => return Err(wrong_type("ADD", a, v)),
                        }
                    }
                    (Some(AttributeValue::Ss(x)), AttributeValue::Ss(y)) => {
                        AttributeValue::Ss(union(x, y))
                    }
                    (Some(AttributeValue::Bs(x)), AttributeValue::Bs(y)) => {
                        AttributeValue::Bs(union(x, y))
                    }
                    (Some(AttributeValue::Ns(x)), AttributeValue::Ns(y)) => {
                        let mut out = x.clone();
                        for n in y {
                            if !x.iter().any(|m| Number::parse(m) == Number::parse(n)) {
                                out.push(n.clone());
                            }
                        }
                        AttributeValue::Ns(out)
                    }
                    (Some(current), _) => return Err(wrong_type("ADD", a, current)),
                };
                item.insert(a.clone(), value);
            }
            UpdateAction::Delete(a, v) => {
                let left = match (item.get(a), v) {
                    (None, _) => continue,
                    (Some(AttributeValue::Ss(x)), AttributeValue::Ss(y)) => {
                        let rest: Vec<String> =
                            x.iter().filter(|e| !y.contains(e)).cloned().collect();
                        (!rest.is_empty()).then_some(AttributeValue::Ss(rest))
                    }
                    (Some(AttributeValue::Bs(x)), AttributeValue::Bs(y)) => {
                        let rest: Vec<Vec<u8>> =
                            x.iter().filter(|e| !y.contains(e)).cloned().collect();
                        (!rest.is_empty()).then_some(AttributeValue::Bs(rest))
                    }
                    (Some(AttributeValue::Ns(x)), AttributeValue::Ns(y)) => {
                        let rest: Vec<String> = x
                            .iter()
                            .filter(|e| !y.iter().any(|n| Number::parse(n) == Number::parse(e)))
                            .cloned()
                            .collect();
                        (!rest.is_empty()).then_some(AttributeValue::Ns(rest))
                    }
                    (Some(current), _) => return Err(wrong_type("DELETE", a, current)),
                };
                match left {
                    Some(v) => item.insert(a.clone(), v),
                    None => item.remove(a),
                };
            }
        }
    }
    Ok(())
}

fn union<T: Clone + PartialEq>(x: &[T], y: &[T]) -> Vec<T> {
    let mut out = x.to_vec();
    out.extend(y.iter().filter(|e| !x.contains(e)).cloned());
    out
}

/// What an update returns, from the item before (`None` if there was none) and after.
pub(crate) fn returned(
    returns: ReturnValues,
    actions: &[UpdateAction],
    old: Option<&Item>,
    new: &Item,
) -> Option<Item> {
    let updated = |item: &Item| -> Item {
        actions
            .iter()
            .filter_map(|a| {
                let name = a.attribute();
                item.get(name).map(|v| (name.to_owned(), v.clone()))
            })
            .collect::<HashMap<_, _>>()
            .into()
    };
    match returns {
        ReturnValues::None => None,
        ReturnValues::AllOld => old.cloned(),
        ReturnValues::AllNew => Some(new.clone()),
        ReturnValues::UpdatedOld => old.map(updated).filter(|i| !i.is_empty()),
        ReturnValues::UpdatedNew => Some(updated(new)).filter(|i| !i.is_empty()),
    }
}
