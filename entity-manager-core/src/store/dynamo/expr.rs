//! Expressions: key conditions, filters and projections with `#n`/`:v` placeholders.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue as AwsValue;
use serde_dynamo::AttributeValue;

use super::convert::value_to_aws;
use crate::store::{Filter, RangeCondition, StoreError, Update, UpdateAction};

/// Collects the placeholders of one request's expressions.
#[derive(Debug, Default)]
pub(super) struct Expr {
    names: Vec<String>,
    values: HashMap<String, AwsValue>,
}

impl Expr {
    /// The placeholder of an attribute name (one per name).
    pub(super) fn name(&mut self, attribute: &str) -> String {
        let i = self
            .names
            .iter()
            .position(|n| n == attribute)
            .unwrap_or_else(|| {
                self.names.push(attribute.to_owned());
                self.names.len() - 1
            });
        format!("#n{i}")
    }

    /// The placeholder of a value.
    pub(super) fn value(&mut self, value: &AttributeValue) -> String {
        let key = format!(":v{}", self.values.len());
        self.values.insert(key.clone(), value_to_aws(value.clone()));
        key
    }

    /// `#hash = :v` plus the range condition.
    #[cfg(test)]
    pub(super) fn key_condition(
        &mut self,
        hash: &str,
        value: &AttributeValue,
        range: &str,
        condition: Option<&RangeCondition>,
    ) -> String {
        self.multi_key_condition(&[(hash, value)], &[], condition.map(|c| (range, c)))
    }

    /// A key condition of a multi-attribute key: equality on every partition attribute, on the
    /// first sort attributes (`prefix`), then one condition on the next sort attribute, left to
    /// right as `DynamoDB` requires.
    pub(super) fn multi_key_condition(
        &mut self,
        hash: &[(&str, &AttributeValue)],
        prefix: &[(&str, &AttributeValue)],
        condition: Option<(&str, &RangeCondition)>,
    ) -> String {
        let mut parts: Vec<String> = hash
            .iter()
            .chain(prefix)
            .map(|(name, value)| format!("{} = {}", self.name(name), self.value(value)))
            .collect();
        let mut out = parts.join(" AND ");
        parts.clear();
        if let Some((range, c)) = condition {
            let r = self.name(range);
            let cond = match c {
                RangeCondition::Eq(v) => format!("{r} = {}", self.value(v)),
                RangeCondition::Lt(v) => format!("{r} < {}", self.value(v)),
                RangeCondition::Le(v) => format!("{r} <= {}", self.value(v)),
                RangeCondition::Gt(v) => format!("{r} > {}", self.value(v)),
                RangeCondition::Ge(v) => format!("{r} >= {}", self.value(v)),
                RangeCondition::Between(a, b) => {
                    format!("{r} BETWEEN {} AND {}", self.value(a), self.value(b))
                }
                RangeCondition::BeginsWith(v) => format!("begins_with({r}, {})", self.value(v)),
            };
            out.push_str(" AND ");
            out.push_str(&cond);
        }
        out
    }

    /// A filter expression. Empty `And`/`Or`/`In` have no expression and are rejected.
    pub(super) fn filter(&mut self, filter: &Filter) -> Result<String, StoreError> {
        Ok(match filter {
            Filter::Compare {
                attribute,
                op,
                value,
            } => {
                format!(
                    "{} {} {}",
                    self.name(attribute),
                    op.as_str(),
                    self.value(value)
                )
            }
            Filter::Between {
                attribute,
                low,
                high,
            } => format!(
                "{} BETWEEN {} AND {}",
                self.name(attribute),
                self.value(low),
                self.value(high)
            ),
            Filter::BeginsWith { attribute, prefix } => {
                format!(
                    "begins_with({}, {})",
                    self.name(attribute),
                    self.value(prefix)
                )
            }
            Filter::Contains { attribute, value } => {
                format!("contains({}, {})", self.name(attribute), self.value(value))
            }
            Filter::Exists(attribute) => format!("attribute_exists({})", self.name(attribute)),
            Filter::NotExists(attribute) => {
                format!("attribute_not_exists({})", self.name(attribute))
            }
            Filter::In { attribute, values } => {
                if values.is_empty() {
                    return Err(StoreError::validation(
                        "Query",
                        "Invalid FilterExpression: IN takes 1 to 100 values, not 0",
                    ));
                }
                let name = self.name(attribute);
                let values: Vec<String> = values.iter().map(|v| self.value(v)).collect();
                format!("{name} IN ({})", values.join(", "))
            }
            Filter::And(fs) | Filter::Or(fs) => {
                if fs.is_empty() {
                    return Err(StoreError::validation(
                        "Query",
                        "Invalid FilterExpression: AND/OR need at least one operand",
                    ));
                }
                let joiner = if matches!(filter, Filter::And(_)) {
                    " AND "
                } else {
                    " OR "
                };
                let parts = fs
                    .iter()
                    .map(|f| self.filter(f).map(|s| format!("({s})")))
                    .collect::<Result<Vec<_>, _>>()?;
                parts.join(joiner)
            }
            Filter::Not(f) => format!("NOT ({})", self.filter(f)?),
            Filter::Size {
                attribute,
                op,
                size,
            } => format!(
                "size({}) {} {}",
                self.name(attribute),
                op.as_str(),
                self.value(&AttributeValue::N(size.to_string()))
            ),
            Filter::Type { attribute, of } => format!(
                "attribute_type({}, {})",
                self.name(attribute),
                self.value(&AttributeValue::S(of.as_str().to_owned()))
            ),
        })
    }

    /// An update expression (`SET … REMOVE … ADD … DELETE …`); `None` for no action.
    pub(super) fn update(&mut self, update: &Update) -> Option<String> {
        let (mut set, mut remove, mut add, mut delete) = (vec![], vec![], vec![], vec![]);
        for action in update.actions() {
            let name = self.name(action.attribute());
            match action {
                UpdateAction::Set(_, v) => set.push(format!("{name} = {}", self.value(v))),
                UpdateAction::SetIfNotExists(_, v) => {
                    set.push(format!("{name} = if_not_exists({name}, {})", self.value(v)));
                }
                UpdateAction::Increment(_, v) => {
                    set.push(format!("{name} = {name} + {}", self.value(v)));
                }
                UpdateAction::Decrement(_, v) => {
                    set.push(format!("{name} = {name} - {}", self.value(v)));
                }
                UpdateAction::Append(_, v) | UpdateAction::Prepend(_, v) => {
                    let list = self.value(v);
                    let empty = self.value(&AttributeValue::L(Vec::new()));
                    let current = format!("if_not_exists({name}, {empty})");
                    set.push(if matches!(action, UpdateAction::Append(..)) {
                        format!("{name} = list_append({current}, {list})")
                    } else {
                        format!("{name} = list_append({list}, {current})")
                    });
                }
                UpdateAction::Remove(_) => remove.push(name),
                UpdateAction::Add(_, v) => add.push(format!("{name} {}", self.value(v))),
                UpdateAction::Delete(_, v) => delete.push(format!("{name} {}", self.value(v))),
            }
        }
        let clauses: Vec<String> = [
            ("SET", set),
            ("REMOVE", remove),
            ("ADD", add),
            ("DELETE", delete),
        ]
        .into_iter()
        .filter(|(_, parts)| !parts.is_empty())
        .map(|(keyword, parts)| format!("{keyword} {}", parts.join(", ")))
        .collect();
        (!clauses.is_empty()).then(|| clauses.join(" "))
    }

    /// A projection expression.
    pub(super) fn projection(&mut self, attributes: &[String]) -> String {
        attributes
            .iter()
            .map(|a| self.name(a))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `ExpressionAttributeNames`, or `None` when empty (`DynamoDB` rejects an empty map).
    pub(super) fn names(&self) -> Option<HashMap<String, String>> {
        (!self.names.is_empty()).then(|| {
            self.names
                .iter()
                .enumerate()
                .map(|(i, n)| (format!("#n{i}"), n.clone()))
                .collect()
        })
    }

    /// `ExpressionAttributeValues`, or `None` when empty.
    pub(super) fn values(&self) -> Option<HashMap<String, AwsValue>> {
        (!self.values.is_empty()).then(|| self.values.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Comparison;

    #[test]
    fn renders_nested_filters_with_shared_name_placeholders() {
        let mut e = Expr::default();
        let f = Filter::Not(Box::new(Filter::Or(vec![
            Filter::compare("a", Comparison::Lt, AttributeValue::N("1".into())),
            Filter::compare("a", Comparison::Gt, AttributeValue::N("5".into())),
            Filter::In {
                attribute: "b".into(),
                values: vec![AttributeValue::S("x".into()), AttributeValue::S("y".into())],
            },
        ])));
        assert_eq!(
            e.filter(&f).ok().as_deref(),
            Some("NOT ((#n0 < :v0) OR (#n0 > :v1) OR (#n1 IN (:v2, :v3)))")
        );
        assert_eq!(e.names().map(|n| n.len()), Some(2));
        assert!(e.filter(&Filter::And(vec![])).is_err());
    }

    #[test]
    fn renders_key_conditions() {
        let mut e = Expr::default();
        let s = |v: &str| AttributeValue::S(v.into());
        let kc = e.key_condition(
            "hk",
            &s("h"),
            "rk",
            Some(&RangeCondition::Between(s("a"), s("b"))),
        );
        assert_eq!(kc, "#n0 = :v0 AND #n1 BETWEEN :v1 AND :v2");
        let kc = Expr::default().key_condition(
            "hk",
            &s("h"),
            "rk",
            Some(&RangeCondition::BeginsWith(s("p"))),
        );
        assert_eq!(kc, "#n0 = :v0 AND begins_with(#n1, :v1)");
    }

    #[test]
    fn renders_multi_attribute_key_conditions() {
        let s = |v: &str| AttributeValue::S(v.into());
        let n = |v: &str| AttributeValue::N(v.into());
        let kc = Expr::default().multi_key_condition(
            &[("a", &s("x")), ("b", &n("1"))],
            &[("c", &s("y"))],
            Some(("d", &RangeCondition::BeginsWith(s("p")))),
        );
        assert_eq!(
            kc,
            "#n0 = :v0 AND #n1 = :v1 AND #n2 = :v2 AND begins_with(#n3, :v3)"
        );
        let kc = Expr::default().multi_key_condition(&[("a", &s("x"))], &[("c", &s("y"))], None);
        assert_eq!(kc, "#n0 = :v0 AND #n1 = :v1");
    }
}
