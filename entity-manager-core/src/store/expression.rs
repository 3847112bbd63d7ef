//! The expressions of a request as `DynamoDB` receives them (key conditions, filters,
//! conditions, updates and projections with `#n`/`:v` placeholders), and `DynamoDB`'s limits on
//! them.
//!
//! Both stores go through [`Request`]: `DynamoStore` sends what it renders (converting the
//! placeholder values to the SDK's type at its edge), `MemoryStore` renders the same strings
//! and discards them. Each constructor checks the limits of [`crate::limits`] (expression
//! length, operator count, substitution size) and refuses an oversize request with
//! [`StoreError::expression`], so both stores give the same verdict before anything is sent or
//! applied. Nothing here knows the AWS types.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_dynamo::AttributeValue;

use super::value::value_bytes;
use super::{
    Expect, ExpressionTooLarge, Filter, QueryPage, RangeCondition, StoreError, Update, UpdateAction,
};
use crate::limits::{
    ExpressionKind, ExpressionLimit, MAX_EXPRESSION_BYTES, MAX_EXPRESSION_OPERATORS,
    MAX_SUBSTITUTION_BYTES,
};

/// Collects the placeholders of one request's expressions: `#n0, #n1…` for attribute names (one
/// per distinct name), `:v0, :v1…` for values (one per use).
#[derive(Debug, Default)]
pub(crate) struct Expr {
    names: Vec<String>,
    /// The place of each name in `names`, once it holds [`INDEXED_NAMES`] or more.
    positions: HashMap<String, usize>,
    values: Vec<AttributeValue>,
}

/// The number of names from which [`Expr`] looks names up in a map rather than in its list.
const INDEXED_NAMES: usize = 16;

impl Expr {
    /// The placeholder of an attribute name (one per name).
    pub(crate) fn name(&mut self, attribute: &str) -> String {
        let mut out = String::with_capacity(4);
        self.push_name(&mut out, attribute);
        out
    }

    /// The placeholder of a value.
    pub(crate) fn value(&mut self, value: &AttributeValue) -> String {
        let mut out = String::with_capacity(4);
        self.push_value(&mut out, value);
        out
    }

    /// Writes the placeholder of an attribute name at the end of `out` (a request renders one
    /// per shard query: no allocation for a name already seen).
    fn push_name(&mut self, out: &mut String, attribute: &str) {
        // a request names a few attributes: a search of the list costs less than hashing the
        // name; the map serves long lists (built once the list reaches `INDEXED_NAMES`)
        let found = if self.names.len() < INDEXED_NAMES {
            self.names.iter().position(|n| n == attribute)
        } else {
            self.positions.get(attribute).copied()
        };
        let i = if let Some(i) = found {
            i
        } else {
            let i = self.names.len();
            self.names.push(attribute.to_owned());
            if self.names.len() == INDEXED_NAMES {
                self.positions = self
                    .names
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (n.clone(), i))
                    .collect();
            } else if self.names.len() > INDEXED_NAMES {
                self.positions.insert(attribute.to_owned(), i);
            }
            i
        };
        out.push_str("#n");
        push_decimal(out, i);
    }

    /// Writes the placeholder of a value at the end of `out`.
    fn push_value(&mut self, out: &mut String, value: &AttributeValue) {
        out.push_str(":v");
        push_decimal(out, self.values.len());
        self.values.push(value.clone());
    }

    /// A key condition of a (multi-attribute) key: equality on every partition attribute, on
    /// the first sort attributes (`prefix`), then one condition on the next sort attribute,
    /// left to right as `DynamoDB` requires.
    pub(crate) fn multi_key_condition(
        &mut self,
        hash: &[(&str, &AttributeValue)],
        prefix: &[(&str, &AttributeValue)],
        condition: Option<(&str, &RangeCondition)>,
    ) -> String {
        let mut out = String::with_capacity(16 * (hash.len() + prefix.len() + 1));
        for (n, (name, value)) in hash.iter().chain(prefix).enumerate() {
            if n > 0 {
                out.push_str(" AND ");
            }
            self.push_name(&mut out, name);
            out.push_str(" = ");
            self.push_value(&mut out, value);
        }
        if let Some((range, c)) = condition {
            out.push_str(" AND ");
            let (operator, value) = match c {
                RangeCondition::Eq(v) => (" = ", v),
                RangeCondition::Lt(v) => (" < ", v),
                RangeCondition::Le(v) => (" <= ", v),
                RangeCondition::Gt(v) => (" > ", v),
                RangeCondition::Ge(v) => (" >= ", v),
                RangeCondition::Between(a, b) => {
                    self.push_name(&mut out, range);
                    out.push_str(" BETWEEN ");
                    self.push_value(&mut out, a);
                    out.push_str(" AND ");
                    self.push_value(&mut out, b);
                    return out;
                }
                RangeCondition::BeginsWith(v) => {
                    out.push_str("begins_with(");
                    self.push_name(&mut out, range);
                    out.push_str(", ");
                    self.push_value(&mut out, v);
                    out.push(')');
                    return out;
                }
            };
            self.push_name(&mut out, range);
            out.push_str(operator);
            self.push_value(&mut out, value);
        }
        out
    }

    /// A filter (or condition) expression. Empty `And`/`Or`/`In` have no expression and are
    /// rejected.
    pub(crate) fn filter(&mut self, filter: &Filter) -> Result<String, StoreError> {
        let mut out = String::new();
        self.write_filter(filter, &mut out)?;
        Ok(out)
    }

    /// Writes `filter` at the end of `out`, placeholders in place (no string per placeholder
    /// or per clause: a condition is rendered for every write).
    fn write_filter(&mut self, filter: &Filter, out: &mut String) -> Result<(), StoreError> {
        match filter {
            Filter::Compare {
                attribute,
                op,
                value,
            } => {
                self.push_name(out, attribute);
                out.push(' ');
                out.push_str(op.as_str());
                out.push(' ');
                self.push_value(out, value);
            }
            Filter::Between {
                attribute,
                low,
                high,
            } => {
                self.push_name(out, attribute);
                out.push_str(" BETWEEN ");
                self.push_value(out, low);
                out.push_str(" AND ");
                self.push_value(out, high);
            }
            Filter::BeginsWith { attribute, prefix } => {
                self.push_call(out, "begins_with(", attribute, Some(prefix));
            }
            Filter::Contains { attribute, value } => {
                self.push_call(out, "contains(", attribute, Some(value));
            }
            Filter::Exists(attribute) => self.push_call(out, "attribute_exists(", attribute, None),
            Filter::NotExists(attribute) => {
                self.push_call(out, "attribute_not_exists(", attribute, None);
            }
            Filter::In { attribute, values } => {
                if values.is_empty() {
                    return Err(StoreError::validation(
                        "Query",
                        "Invalid FilterExpression: IN takes 1 to 100 values, not 0",
                    ));
                }
                self.push_name(out, attribute);
                out.push_str(" IN (");
                for (i, v) in values.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    self.push_value(out, v);
                }
                out.push(')');
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
                for (i, f) in fs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(joiner);
                    }
                    out.push('(');
                    self.write_filter(f, out)?;
                    out.push(')');
                }
            }
            Filter::Not(f) => {
                out.push_str("NOT (");
                self.write_filter(f, out)?;
                out.push(')');
            }
            Filter::Size {
                attribute,
                op,
                size,
            } => {
                self.push_call(out, "size(", attribute, None);
                out.push(' ');
                out.push_str(op.as_str());
                out.push(' ');
                self.push_value(out, &AttributeValue::N(size.to_string()));
            }
            Filter::Type { attribute, of } => {
                let of = AttributeValue::S(of.as_str().to_owned());
                self.push_call(out, "attribute_type(", attribute, Some(&of));
            }
        }
        Ok(())
    }

    /// Writes `function(#n)` or `function(#n, :v)` at the end of `out` (`function` with its
    /// opening parenthesis).
    fn push_call(
        &mut self,
        out: &mut String,
        function: &str,
        attribute: &str,
        value: Option<&AttributeValue>,
    ) {
        out.push_str(function);
        self.push_name(out, attribute);
        if let Some(value) = value {
            out.push_str(", ");
            self.push_value(out, value);
        }
        out.push(')');
    }

    /// An update expression (`SET … REMOVE … ADD … DELETE …`); `None` for no action.
    /// Placeholders are numbered in the order of the actions (each action's name, then its
    /// values), whatever clause the action goes to.
    pub(crate) fn update(&mut self, update: &Update) -> Option<String> {
        let (mut set, mut remove, mut add, mut delete) =
            (String::new(), String::new(), String::new(), String::new());
        for action in update.actions() {
            let clause = match action {
                UpdateAction::Remove(_) => &mut remove,
                UpdateAction::Add(..) => &mut add,
                UpdateAction::Delete(..) => &mut delete,
                _ => &mut set,
            };
            if !clause.is_empty() {
                clause.push_str(", ");
            }
            self.push_name(clause, action.attribute());
            match action {
                UpdateAction::Set(_, v) => {
                    clause.push_str(" = ");
                    self.push_value(clause, v);
                }
                UpdateAction::SetIfNotExists(attribute, v) => {
                    clause.push_str(" = if_not_exists(");
                    self.push_name(clause, attribute);
                    clause.push_str(", ");
                    self.push_value(clause, v);
                    clause.push(')');
                }
                UpdateAction::Increment(attribute, v) | UpdateAction::Decrement(attribute, v) => {
                    clause.push_str(" = ");
                    self.push_name(clause, attribute);
                    clause.push_str(if matches!(action, UpdateAction::Increment(..)) {
                        " + "
                    } else {
                        " - "
                    });
                    self.push_value(clause, v);
                }
                UpdateAction::Append(attribute, v) | UpdateAction::Prepend(attribute, v) => {
                    // the list's placeholder, then the empty list's
                    let list = self.value(v);
                    let empty = self.value(&AttributeValue::L(Vec::new()));
                    let mut current = String::from("if_not_exists(");
                    self.push_name(&mut current, attribute);
                    let _ = write!(current, ", {empty})");
                    let _ = if matches!(action, UpdateAction::Append(..)) {
                        write!(clause, " = list_append({current}, {list})")
                    } else {
                        write!(clause, " = list_append({list}, {current})")
                    };
                }
                UpdateAction::Remove(_) => {}
                UpdateAction::Add(_, v) | UpdateAction::Delete(_, v) => {
                    clause.push(' ');
                    self.push_value(clause, v);
                }
            }
        }
        let mut out = String::new();
        for (keyword, parts) in [
            ("SET ", set),
            ("REMOVE ", remove),
            ("ADD ", add),
            ("DELETE ", delete),
        ] {
            if parts.is_empty() {
                continue;
            }
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(keyword);
            out.push_str(&parts);
        }
        (!out.is_empty()).then_some(out)
    }

    /// A projection expression.
    pub(crate) fn projection(&mut self, attributes: &[String]) -> String {
        attributes
            .iter()
            .map(|a| self.name(a))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The condition expression of an expectation: `attribute_not_exists(#hk)`,
    /// `attribute_exists(#hk)`, or the filter; `None` for [`Expect::Any`].
    pub(crate) fn condition(
        &mut self,
        expect: &Expect,
        hash_key: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(match expect {
            Expect::Any => None,
            Expect::Absent | Expect::Present => {
                let function = if matches!(expect, Expect::Absent) {
                    "attribute_not_exists("
                } else {
                    "attribute_exists("
                };
                let mut out = String::with_capacity(function.len() + 5);
                self.push_call(&mut out, function, hash_key, None);
                Some(out)
            }
            Expect::Matches(filter) => Some(self.filter(filter)?),
        })
    }

    /// `ExpressionAttributeNames`, or `None` when empty (`DynamoDB` rejects an empty map).
    #[cfg_attr(not(feature = "dynamodb"), allow(dead_code))] // `DynamoStore` sends them
    pub(crate) fn names(&self) -> Option<HashMap<String, String>> {
        (!self.names.is_empty()).then(|| {
            self.names
                .iter()
                .enumerate()
                .map(|(i, n)| (placeholder("#n", i), n.clone()))
                .collect()
        })
    }

    /// `ExpressionAttributeValues`, or `None` when empty.
    #[cfg_attr(not(feature = "dynamodb"), allow(dead_code))] // `DynamoStore` sends them
    pub(crate) fn values(&self) -> Option<HashMap<String, AttributeValue>> {
        (!self.values.is_empty()).then(|| {
            self.values
                .iter()
                .enumerate()
                .map(|(i, v)| (placeholder(":v", i), v.clone()))
                .collect()
        })
    }

    /// [`names`](Self::names), taken rather than copied (a single write sends its expressions
    /// once): the names are left empty.
    #[cfg(feature = "dynamodb")]
    pub(crate) fn take_names(&mut self) -> Option<HashMap<String, String>> {
        (!self.names.is_empty()).then(|| {
            std::mem::take(&mut self.names)
                .into_iter()
                .enumerate()
                .map(|(i, n)| (placeholder("#n", i), n))
                .collect()
        })
    }

    /// [`values`](Self::values), taken rather than copied, each converted by `convert`.
    #[cfg(feature = "dynamodb")]
    pub(crate) fn into_values<V>(
        self,
        convert: impl Fn(AttributeValue) -> V,
    ) -> Option<HashMap<String, V>> {
        (!self.values.is_empty()).then(|| {
            self.values
                .into_iter()
                .enumerate()
                .map(|(i, v)| (placeholder(":v", i), convert(v)))
                .collect()
        })
    }

    /// The bytes of every substitution variable: each placeholder and the name or value it
    /// stands for (values counted as in an item).
    pub(crate) fn substitution_bytes(&self) -> usize {
        let digits = |i: usize| i.checked_ilog10().map_or(1, |d| d as usize + 1);
        let names: usize = self
            .names
            .iter()
            .enumerate()
            .map(|(i, n)| 2 + digits(i) + n.len())
            .sum();
        let values: usize = self
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| 2 + digits(i) + value_bytes(v))
            .sum();
        names + values
    }
}

/// The operators and functions of a filter or condition, as `DynamoDB` counts them: one per
/// comparison, `BETWEEN`, `IN`, `AND`, `OR`, `NOT` and function (`size(a) > n` is two).
pub(crate) fn filter_operators(filter: &Filter) -> usize {
    match filter {
        Filter::Compare { .. }
        | Filter::Between { .. }
        | Filter::BeginsWith { .. }
        | Filter::Contains { .. }
        | Filter::Exists(_)
        | Filter::NotExists(_)
        | Filter::In { .. }
        | Filter::Type { .. } => 1,
        Filter::Size { .. } => 2,
        Filter::And(fs) | Filter::Or(fs) => {
            fs.iter().map(filter_operators).sum::<usize>() + fs.len().saturating_sub(1)
        }
        Filter::Not(f) => 1 + filter_operators(f),
    }
}

/// The operators and functions of an update expression: `+`, `-`, `if_not_exists` and
/// `list_append` (the `=` of `SET`, `REMOVE`, `ADD` and `DELETE` do not count).
pub(crate) fn update_operators(update: &Update) -> usize {
    update
        .actions()
        .iter()
        .map(|a| match a {
            UpdateAction::Set(..)
            | UpdateAction::Remove(_)
            | UpdateAction::Add(..)
            | UpdateAction::Delete(..) => 0,
            UpdateAction::SetIfNotExists(..)
            | UpdateAction::Increment(..)
            | UpdateAction::Decrement(..) => 1,
            // list_append(…, if_not_exists(…))
            UpdateAction::Append(..) | UpdateAction::Prepend(..) => 2,
        })
        .sum()
}

fn expect_operators(expect: &Expect) -> usize {
    match expect {
        Expect::Any => 0,
        Expect::Absent | Expect::Present => 1,
        Expect::Matches(f) => filter_operators(f),
    }
}

/// Refuses an expression over the length or operator limit.
fn check(
    operation: &'static str,
    expression: ExpressionKind,
    text: Option<&str>,
    operators: usize,
) -> Result<(), StoreError> {
    let Some(text) = text else {
        return Ok(());
    };
    let too_large = |limit, size| {
        Err(StoreError::expression(
            operation,
            ExpressionTooLarge {
                expression,
                limit,
                size,
            },
        ))
    };
    if text.len() > MAX_EXPRESSION_BYTES {
        return too_large(ExpressionLimit::Length, text.len());
    }
    if operators > MAX_EXPRESSION_OPERATORS {
        return too_large(ExpressionLimit::Operators, operators);
    }
    Ok(())
}

/// The expressions of one request, rendered and checked against `DynamoDB`'s limits.
#[derive(Debug, Default)]
pub(crate) struct Request {
    /// The placeholders of every expression of the request.
    pub(crate) expr: Expr,
    /// `UpdateExpression`.
    pub(crate) update: Option<String>,
    /// `ConditionExpression`.
    pub(crate) condition: Option<String>,
    /// `KeyConditionExpression`.
    pub(crate) key_condition: Option<String>,
    /// `FilterExpression`.
    pub(crate) filter: Option<String>,
    /// `ProjectionExpression`.
    pub(crate) projection: Option<String>,
}

impl Request {
    /// A write (put, delete, update, condition check): the update expression, if any, then the
    /// condition.
    pub(crate) fn write(
        operation: &'static str,
        hash_key: &str,
        update: Option<&Update>,
        expect: &Expect,
    ) -> Result<Self, StoreError> {
        let mut r = Self::default();
        r.update = update.and_then(|u| r.expr.update(u));
        r.condition = r.expr.condition(expect, hash_key)?;
        check(
            operation,
            ExpressionKind::Update,
            r.update.as_deref(),
            update.map_or(0, update_operators),
        )?;
        check(
            operation,
            ExpressionKind::Condition,
            r.condition.as_deref(),
            expect_operators(expect),
        )?;
        r.check_substitutions(operation)?;
        Ok(r)
    }

    /// A query of the table or of an index whose key attributes are `hash` (partition) and
    /// `range` (sort), in key order: key condition, filter, projection.
    pub(crate) fn query(
        operation: &'static str,
        request: &QueryPage,
        hash: &[&str],
        range: &[&str],
    ) -> Result<Self, StoreError> {
        let mut r = Self::default();
        let values = std::iter::once(&request.hash_key).chain(&request.more_hash_keys);
        let hash: Vec<(&str, &AttributeValue)> = hash.iter().copied().zip(values).collect();
        let prefix: Vec<(&str, &AttributeValue)> =
            range.iter().copied().zip(&request.range_prefix).collect();
        let condition = request
            .range
            .as_ref()
            .and_then(|c| Some((*range.get(prefix.len())?, c)));
        let equalities = hash.len() + prefix.len();
        let key_operators = 2 * (equalities + usize::from(condition.is_some())) - 1;
        r.key_condition = Some(r.expr.multi_key_condition(&hash, &prefix, condition));
        check(
            operation,
            ExpressionKind::KeyCondition,
            r.key_condition.as_deref(),
            key_operators,
        )?;
        r.read_parts(
            operation,
            request.filter.as_ref(),
            request.projection.as_deref(),
        )?;
        Ok(r)
    }

    /// The verdict of [`query`](Self::query) without its expressions, for a store that sends
    /// none (`MemoryStore`): a key condition alone (no filter, no projection) whose placeholders
    /// and substitutions are surely within `DynamoDB`'s limits is accepted without rendering it
    /// (its names and values are placeholders: the expression's length and operators follow
    /// from their count, its substitutions from their sizes); anything else is rendered and
    /// checked as `DynamoStore` does. The same verdict either way, for a tenth of the cost of
    /// the rendering on a shard query.
    pub(crate) fn check_query(
        operation: &'static str,
        request: &QueryPage,
        hash: &[&str],
        range: &[&str],
    ) -> Result<(), StoreError> {
        if request.filter.is_none()
            && request.projection.is_none()
            && key_condition_fits(request, hash, range)
        {
            return Ok(());
        }
        Self::query(operation, request, hash, range).map(drop)
    }

    /// The verdict of [`write`](Self::write) on `DynamoDB`'s limits without its expressions,
    /// for a caller that only needs to know whether the write is too large (a typed update
    /// deciding between one `UpdateItem` and a put of the whole record): a write whose
    /// placeholders, text and substitutions are surely within the limits ([`write_fits`]) is
    /// accepted without rendering it; anything else is rendered and checked as the stores do.
    /// The same verdict either way.
    pub(crate) fn check_write(
        operation: &'static str,
        hash_key: &str,
        update: Option<&Update>,
        expect: &Expect,
    ) -> Result<(), StoreError> {
        if write_fits(hash_key, update, expect) {
            return Ok(());
        }
        Self::write(operation, hash_key, update, expect).map(drop)
    }

    /// A scan (filter) or a get (projection).
    pub(crate) fn read(
        operation: &'static str,
        filter: Option<&Filter>,
        projection: Option<&[String]>,
    ) -> Result<Self, StoreError> {
        let mut r = Self::default();
        r.read_parts(operation, filter, projection)?;
        Ok(r)
    }

    fn read_parts(
        &mut self,
        operation: &'static str,
        filter: Option<&Filter>,
        projection: Option<&[String]>,
    ) -> Result<(), StoreError> {
        self.filter = filter.map(|f| self.expr.filter(f)).transpose()?;
        self.projection = projection.map(|p| self.expr.projection(p));
        check(
            operation,
            ExpressionKind::Filter,
            self.filter.as_deref(),
            filter.map_or(0, filter_operators),
        )?;
        check(
            operation,
            ExpressionKind::Projection,
            self.projection.as_deref(),
            0,
        )?;
        self.check_substitutions(operation)
    }

    fn check_substitutions(&self, operation: &'static str) -> Result<(), StoreError> {
        let size = self.expr.substitution_bytes();
        if size > MAX_SUBSTITUTION_BYTES {
            return Err(StoreError::expression(
                operation,
                ExpressionTooLarge {
                    expression: ExpressionKind::Substitutions,
                    limit: ExpressionLimit::SubstitutionBytes,
                    size,
                },
            ));
        }
        Ok(())
    }
}

/// Whether the key condition [`Request::query`] renders for `request` is surely within the
/// limits [`check`] and [`Request::check_substitutions`] apply: bounds from the count of its
/// names and values (each a placeholder of at most `#n` or `:v` and three digits) and from
/// their sizes. `false` when unsure (the caller then renders it).
fn key_condition_fits(request: &QueryPage, hash: &[&str], range: &[&str]) -> bool {
    // what `Request::query` pairs: partition attributes with the request's values, the sort
    // prefix with its values, and the condition on the next sort attribute, if there is one
    let hash_values = std::iter::once(&request.hash_key).chain(&request.more_hash_keys);
    let equalities = hash
        .iter()
        .zip(hash_values)
        .chain(range.iter().zip(&request.range_prefix));
    let condition = request
        .range
        .as_ref()
        .and_then(|c| Some((*range.get(request.range_prefix.len().min(range.len()))?, c)));
    let mut names = 0usize;
    let mut substitutions = 0usize;
    for (name, value) in equalities {
        names += 1;
        // `#n` or `:v`, three digits at most (checked below), the name or the value
        substitutions += 5 + name.len() + 5 + value_bytes(value);
    }
    if let Some((name, c)) = condition {
        names += 1;
        substitutions += 5 + name.len();
        substitutions += match c {
            RangeCondition::Between(a, b) => 10 + value_bytes(a) + value_bytes(b),
            RangeCondition::Eq(v)
            | RangeCondition::Lt(v)
            | RangeCondition::Le(v)
            | RangeCondition::Gt(v)
            | RangeCondition::Ge(v)
            | RangeCondition::BeginsWith(v) => 5 + value_bytes(v),
        };
    }
    // at most 300 operators leaves at most 150 names and 151 values: every placeholder below
    // 1,000 (three digits); an equality renders as at most `#n999 = :v999 AND ` (19 bytes),
    // the condition as at most ` AND #n999 BETWEEN :v999 AND :v999` (40)
    let operators = 2 * names.max(1) - 1;
    19 * names + 40 <= MAX_EXPRESSION_BYTES
        && operators <= MAX_EXPRESSION_OPERATORS
        && substitutions <= MAX_SUBSTITUTION_BYTES
}

/// Upper bounds of what [`Expr`] renders for part of a request: the bytes of its text, its
/// placeholders (every use of a name or a value, so at least as many as it numbers) and the
/// bytes of their substitutions (each placeholder at its longest, `#n999` or `:v999`, with the
/// name or value it stands for). Valid while fewer than 1,000 names and values are used.
#[derive(Default)]
struct Bound {
    text: usize,
    names: usize,
    values: usize,
    substitutions: usize,
}

impl Bound {
    /// One use of the name `attribute` (its placeholder in the text counted by the caller).
    fn name(&mut self, attribute: &str) {
        self.names += 1;
        self.substitutions += 5 + attribute.len();
    }

    /// One use of `value`.
    fn value(&mut self, value: &AttributeValue) {
        self.values += 1;
        self.substitutions += 5 + value_bytes(value);
    }

    /// A filter or condition: each clause at most 32 bytes of text but `IN`'s values (7 each:
    /// `, :v999`), each operand of `AND`/`OR` 7 more (` AND ` and its parentheses), `NOT ( )` 6
    /// (the longest clause, `attribute_not_exists(#n999)`, is 27 bytes; `size(#n999) >= :v999`
    /// 20; `#n999 BETWEEN :v999 AND :v999` 29).
    fn filter(&mut self, filter: &Filter) {
        match filter {
            Filter::Compare {
                attribute, value, ..
            }
            | Filter::BeginsWith {
                attribute,
                prefix: value,
            }
            | Filter::Contains { attribute, value } => {
                self.text += 32;
                self.name(attribute);
                self.value(value);
            }
            Filter::Between {
                attribute,
                low,
                high,
            } => {
                self.text += 32;
                self.name(attribute);
                self.value(low);
                self.value(high);
            }
            Filter::Exists(attribute) | Filter::NotExists(attribute) => {
                self.text += 32;
                self.name(attribute);
            }
            Filter::In { attribute, values } => {
                self.text += 32 + 7 * values.len();
                self.name(attribute);
                for v in values {
                    self.value(v);
                }
            }
            Filter::And(fs) | Filter::Or(fs) => {
                for f in fs {
                    self.text += 7;
                    self.filter(f);
                }
            }
            Filter::Not(f) => {
                self.text += 6;
                self.filter(f);
            }
            Filter::Size { attribute, .. } => {
                self.text += 32;
                self.name(attribute);
                // the size is a number value of at most 20 digits
                self.values += 1;
                self.substitutions += 5 + 21;
            }
            Filter::Type { attribute, .. } => {
                self.text += 32;
                self.name(attribute);
                // the type's name: at most 4 bytes (`BOOL`, `NULL`)
                self.values += 1;
                self.substitutions += 5 + 8;
            }
        }
    }
}

/// Whether the expressions [`Request::write`] renders for this write are surely within the
/// limits [`check`] and [`Request::check_substitutions`] apply, from bounds on their text and
/// substitutions ([`Bound`]) and their exact operator counts. `false` when unsure (the caller
/// then renders it). An update action renders as at most 64 bytes (the longest,
/// `#n999 = list_append(if_not_exists(#n999, :v999), :v999), `, is 57) with two names and two
/// values; its clauses' keywords (`SET `, ` REMOVE `, ` ADD `, ` DELETE `) add at most 32.
fn write_fits(hash_key: &str, update: Option<&Update>, expect: &Expect) -> bool {
    let mut update_bound = Bound::default();
    if let Some(update) = update {
        update_bound.text = 32;
        for action in update.actions() {
            update_bound.text += 64;
            let attribute = action.attribute();
            update_bound.name(attribute);
            match action {
                UpdateAction::Remove(_) => {}
                UpdateAction::Set(_, v) | UpdateAction::Add(_, v) | UpdateAction::Delete(_, v) => {
                    update_bound.value(v);
                }
                UpdateAction::SetIfNotExists(_, v)
                | UpdateAction::Increment(_, v)
                | UpdateAction::Decrement(_, v) => {
                    update_bound.name(attribute);
                    update_bound.value(v);
                }
                UpdateAction::Append(_, v) | UpdateAction::Prepend(_, v) => {
                    update_bound.name(attribute);
                    update_bound.value(v);
                    update_bound.value(&AttributeValue::L(Vec::new()));
                }
            }
        }
    }
    let mut condition = Bound::default();
    match expect {
        Expect::Any => {}
        Expect::Absent | Expect::Present => {
            condition.text = 32;
            condition.name(hash_key);
        }
        Expect::Matches(filter) => condition.filter(filter),
    }
    update_bound.names + condition.names < 1_000
        && update_bound.values + condition.values < 1_000
        && update_bound.text <= MAX_EXPRESSION_BYTES
        && condition.text <= MAX_EXPRESSION_BYTES
        && update.map_or(0, update_operators) <= MAX_EXPRESSION_OPERATORS
        && expect_operators(expect) <= MAX_EXPRESSION_OPERATORS
        && update_bound.substitutions + condition.substitutions <= MAX_SUBSTITUTION_BYTES
}

/// A placeholder: `prefix` and `i` in decimal.
fn placeholder(prefix: &str, i: usize) -> String {
    let mut out = String::with_capacity(prefix.len() + 3);
    out.push_str(prefix);
    push_decimal(&mut out, i);
    out
}

/// `n` in decimal at the end of `out` (no formatting machinery: placeholders and tie-breakers
/// are written for every shard query and every returned item).
pub(crate) fn push_decimal(out: &mut String, n: usize) {
    if n >= 10 {
        push_decimal(out, n / 10);
    }
    if let Some(digit) = u32::try_from(n % 10)
        .ok()
        .and_then(|d| char::from_digit(d, 10))
    {
        out.push(digit);
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
        // NOT, OR twice, <, >, IN
        assert_eq!(filter_operators(&f), 6);
    }

    #[test]
    fn renders_key_conditions() {
        let s = |v: &str| AttributeValue::S(v.into());
        let q = QueryPage::new(s("h")).range(RangeCondition::Between(s("a"), s("b")));
        let r = Request::query("Query", &q, &["hk"], &["rk"]).ok();
        assert_eq!(
            r.and_then(|r| r.key_condition).as_deref(),
            Some("#n0 = :v0 AND #n1 BETWEEN :v1 AND :v2")
        );
        let q = QueryPage::new(s("h")).range(RangeCondition::BeginsWith(s("p")));
        let r = Request::query("Query", &q, &["hk"], &["rk"]).ok();
        assert_eq!(
            r.and_then(|r| r.key_condition).as_deref(),
            Some("#n0 = :v0 AND begins_with(#n1, :v1)")
        );
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

    /// A name given again gets its first placeholder, before and after the list of names is
    /// long enough to be looked up in a map.
    #[test]
    fn a_name_keeps_its_placeholder_in_long_lists() {
        let mut expr = Expr::default();
        let names: Vec<String> = (0..40).map(|i| format!("a{i}")).collect();
        for (i, name) in names.iter().enumerate() {
            assert_eq!(expr.name(name), format!("#n{i}"));
            // every name seen so far, again
            for (j, earlier) in names.iter().enumerate().take(i + 1) {
                assert_eq!(expr.name(earlier), format!("#n{j}"), "after {i} names");
            }
        }
        assert_eq!(expr.names().map(|n| n.len()), Some(40));
    }

    /// Every operator of a key condition, each with the placeholders in the order `DynamoDB`
    /// reads them (the name, then the values), and indexes past 9 written in full.
    #[test]
    fn renders_every_key_condition_operator() {
        let n = |v: &str| AttributeValue::N(v.into());
        let cases = [
            (RangeCondition::Eq(n("1")), "#n1 = :v1"),
            (RangeCondition::Lt(n("1")), "#n1 < :v1"),
            (RangeCondition::Le(n("1")), "#n1 <= :v1"),
            (RangeCondition::Gt(n("1")), "#n1 > :v1"),
            (RangeCondition::Ge(n("1")), "#n1 >= :v1"),
            (
                RangeCondition::Between(n("1"), n("2")),
                "#n1 BETWEEN :v1 AND :v2",
            ),
            (RangeCondition::BeginsWith(n("1")), "begins_with(#n1, :v1)"),
        ];
        for (condition, expected) in cases {
            let kc = Expr::default().multi_key_condition(
                &[("h", &n("0"))],
                &[],
                Some(("r", &condition)),
            );
            assert_eq!(kc, format!("#n0 = :v0 AND {expected}"));
        }
        // twelve partition attributes, then a name seen before: one placeholder per name
        let names: Vec<String> = (0..12).map(|i| format!("a{i}")).collect();
        let value = n("7");
        let hash: Vec<(&str, &AttributeValue)> =
            names.iter().map(|a| (a.as_str(), &value)).collect();
        let mut expr = Expr::default();
        let kc = expr.multi_key_condition(&hash, &[], Some(("a3", &RangeCondition::Gt(n("8")))));
        assert!(
            kc.ends_with("#n10 = :v10 AND #n11 = :v11 AND #n3 > :v12"),
            "{kc}"
        );
        assert_eq!(expr.names().map(|n| n.len()), Some(12));
        assert_eq!(expr.values().map(|v| v.len()), Some(13));
    }

    #[test]
    fn renders_updates_and_counts_their_operators() {
        let n = |v: &str| AttributeValue::N(v.into());
        let u = Update::new()
            .set("a", n("1"))
            .increment("b", n("2"))
            .set_if_not_exists("c", n("3"))
            .append("d", AttributeValue::L(vec![]))
            .remove("e")
            .add("f", n("4"));
        let r = Request::write("UpdateItem", "hk", Some(&u), &Expect::Present).ok();
        let r = r.as_ref();
        assert_eq!(
            r.and_then(|r| r.update.as_deref()),
            Some(
                "SET #n0 = :v0, #n1 = #n1 + :v1, #n2 = if_not_exists(#n2, :v2), \
                 #n3 = list_append(if_not_exists(#n3, :v4), :v3) REMOVE #n4 ADD #n5 :v5"
            )
        );
        assert_eq!(
            r.and_then(|r| r.condition.as_deref()),
            Some("attribute_exists(#n6)")
        );
        // +, if_not_exists, list_append and its if_not_exists
        assert_eq!(update_operators(&u), 4);
    }

    /// `DynamoDB`'s count of a filter's operators, read off the rendered text: the keywords,
    /// comparators and functions it contains.
    fn counted_in_text(text: &str) -> usize {
        let words = [
            " AND ",
            " OR ",
            "NOT (",
            " BETWEEN ",
            " IN (",
            "begins_with(",
            "contains(",
            "attribute_exists(",
            "attribute_not_exists(",
            "attribute_type(",
            "size(",
        ];
        let comparators = [" = ", " <> ", " < ", " <= ", " > ", " >= "];
        words
            .iter()
            .chain(&comparators)
            .map(|w| text.matches(w).count())
            .sum::<usize>()
            // BETWEEN's own AND is part of BETWEEN
            - text.matches(" BETWEEN ").count()
    }

    fn arb_filter() -> impl proptest::strategy::Strategy<Value = Filter> {
        use proptest::prelude::*;
        let name = prop_oneof![Just("a".to_owned()), Just("b".to_owned())];
        let value = (0..5_i32).prop_map(|n| AttributeValue::N(n.to_string()));
        let op = prop_oneof![
            Just(Comparison::Eq),
            Just(Comparison::Ne),
            Just(Comparison::Lt),
            Just(Comparison::Le),
            Just(Comparison::Gt),
            Just(Comparison::Ge),
        ];
        let leaf = prop_oneof![
            (name.clone(), op.clone(), value.clone())
                .prop_map(|(a, o, v)| Filter::compare(a, o, v)),
            (name.clone(), value.clone(), value.clone()).prop_map(|(attribute, low, high)| {
                Filter::Between {
                    attribute,
                    low,
                    high,
                }
            }),
            (name.clone(), proptest::collection::vec(value.clone(), 1..4))
                .prop_map(|(attribute, values)| Filter::In { attribute, values }),
            (name.clone(), value.clone())
                .prop_map(|(attribute, prefix)| Filter::BeginsWith { attribute, prefix }),
            (name.clone(), value)
                .prop_map(|(attribute, value)| Filter::Contains { attribute, value }),
            name.clone().prop_map(Filter::Exists),
            name.clone().prop_map(Filter::NotExists),
            (name.clone(), op, 0..9_u64).prop_map(|(attribute, op, size)| Filter::Size {
                attribute,
                op,
                size
            }),
            name.prop_map(|attribute| Filter::Type {
                attribute,
                of: crate::store::AttributeType::S
            }),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 1..4).prop_map(Filter::And),
                proptest::collection::vec(inner.clone(), 1..4).prop_map(Filter::Or),
                inner.prop_map(|f| Filter::Not(Box::new(f))),
            ]
        })
    }

    /// The rendering of a filter as it was written before placeholders were written in place
    /// (a string per placeholder, `write!` per node): the reference the in-place rendering
    /// must match byte for byte, as the request bodies must not change.
    fn reference_filter(e: &mut Expr, filter: &Filter, out: &mut String) {
        use std::fmt::Write as _;
        match filter {
            Filter::Compare {
                attribute,
                op,
                value,
            } => {
                let (n, v) = (e.name(attribute), e.value(value));
                let _ = write!(out, "{n} {} {v}", op.as_str());
            }
            Filter::Between {
                attribute,
                low,
                high,
            } => {
                let (n, l, h) = (e.name(attribute), e.value(low), e.value(high));
                let _ = write!(out, "{n} BETWEEN {l} AND {h}");
            }
            Filter::BeginsWith { attribute, prefix } => {
                let (n, v) = (e.name(attribute), e.value(prefix));
                let _ = write!(out, "begins_with({n}, {v})");
            }
            Filter::Contains { attribute, value } => {
                let (n, v) = (e.name(attribute), e.value(value));
                let _ = write!(out, "contains({n}, {v})");
            }
            Filter::Exists(attribute) => {
                let n = e.name(attribute);
                let _ = write!(out, "attribute_exists({n})");
            }
            Filter::NotExists(attribute) => {
                let n = e.name(attribute);
                let _ = write!(out, "attribute_not_exists({n})");
            }
            Filter::In { attribute, values } => {
                let n = e.name(attribute);
                let values: Vec<String> = values.iter().map(|v| e.value(v)).collect();
                let _ = write!(out, "{n} IN ({})", values.join(", "));
            }
            Filter::And(fs) | Filter::Or(fs) => {
                let parts: Vec<String> = fs
                    .iter()
                    .map(|f| {
                        let mut part = String::new();
                        reference_filter(e, f, &mut part);
                        format!("({part})")
                    })
                    .collect();
                let joiner = [" OR ", " AND "][usize::from(matches!(filter, Filter::And(_)))];
                out.push_str(&parts.join(joiner));
            }
            Filter::Not(f) => {
                let mut inner = String::new();
                reference_filter(e, f, &mut inner);
                let _ = write!(out, "NOT ({inner})");
            }
            Filter::Size {
                attribute,
                op,
                size,
            } => {
                let n = e.name(attribute);
                let v = e.value(&AttributeValue::N(size.to_string()));
                let _ = write!(out, "size({n}) {} {v}", op.as_str());
            }
            Filter::Type { attribute, of } => {
                let n = e.name(attribute);
                let v = e.value(&AttributeValue::S(of.as_str().to_owned()));
                let _ = write!(out, "attribute_type({n}, {v})");
            }
        }
    }

    /// The update expression as it was rendered before (see [`reference_filter`]).
    fn reference_update(e: &mut Expr, update: &Update) -> Option<String> {
        let (mut set, mut remove, mut add, mut delete) = (vec![], vec![], vec![], vec![]);
        for action in update.actions() {
            let name = e.name(action.attribute());
            match action {
                UpdateAction::Set(_, v) => set.push(format!("{name} = {}", e.value(v))),
                UpdateAction::SetIfNotExists(_, v) => {
                    set.push(format!("{name} = if_not_exists({name}, {})", e.value(v)));
                }
                UpdateAction::Increment(_, v) => {
                    set.push(format!("{name} = {name} + {}", e.value(v)));
                }
                UpdateAction::Decrement(_, v) => {
                    set.push(format!("{name} = {name} - {}", e.value(v)));
                }
                UpdateAction::Append(_, v) | UpdateAction::Prepend(_, v) => {
                    let list = e.value(v);
                    let empty = e.value(&AttributeValue::L(Vec::new()));
                    let current = format!("if_not_exists({name}, {empty})");
                    set.push(if matches!(action, UpdateAction::Append(..)) {
                        format!("{name} = list_append({current}, {list})")
                    } else {
                        format!("{name} = list_append({list}, {current})")
                    });
                }
                UpdateAction::Remove(_) => remove.push(name),
                UpdateAction::Add(_, v) => add.push(format!("{name} {}", e.value(v))),
                UpdateAction::Delete(_, v) => delete.push(format!("{name} {}", e.value(v))),
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

    fn arb_update() -> impl proptest::strategy::Strategy<Value = Update> {
        use proptest::prelude::*;
        let name = prop_oneof![Just("a"), Just("b"), Just("c")].prop_map(str::to_owned);
        let value = (0..5_i32).prop_map(|n| AttributeValue::N(n.to_string()));
        let list = Just(AttributeValue::L(vec![AttributeValue::S("x".into())]));
        let action = prop_oneof![
            (name.clone(), value.clone()).prop_map(|(a, v)| UpdateAction::Set(a, v)),
            (name.clone(), value.clone()).prop_map(|(a, v)| UpdateAction::SetIfNotExists(a, v)),
            (name.clone(), value.clone()).prop_map(|(a, v)| UpdateAction::Increment(a, v)),
            (name.clone(), value.clone()).prop_map(|(a, v)| UpdateAction::Decrement(a, v)),
            (name.clone(), list.clone()).prop_map(|(a, v)| UpdateAction::Append(a, v)),
            (name.clone(), list).prop_map(|(a, v)| UpdateAction::Prepend(a, v)),
            name.clone().prop_map(UpdateAction::Remove),
            (name.clone(), value.clone()).prop_map(|(a, v)| UpdateAction::Add(a, v)),
            (name, value).prop_map(|(a, v)| UpdateAction::Delete(a, v)),
        ];
        proptest::collection::vec(action, 0..7)
            .prop_map(|actions| actions.into_iter().fold(Update::new(), Update::action))
    }

    proptest::proptest! {
        /// A filter, and an update followed by a condition (as in one write), render as they
        /// did before placeholders were written in place: the same text, the same names and
        /// values.
        #[test]
        fn rendering_in_place_matches_the_reference(
            update in arb_update(),
            filter in arb_filter(),
        ) {
            let (mut ours, mut reference) = (Expr::default(), Expr::default());
            proptest::prop_assert_eq!(ours.update(&update), reference_update(&mut reference, &update));
            let rendered = ours.filter(&filter).ok();
            let mut text = String::new();
            reference_filter(&mut reference, &filter, &mut text);
            proptest::prop_assert_eq!(rendered, Some(text));
            proptest::prop_assert_eq!(ours.names(), reference.names());
            proptest::prop_assert_eq!(ours.values(), reference.values());
        }

        /// The operator count of a filter is what its rendered text holds.
        #[test]
        fn filter_operators_match_the_rendered_text(filter in arb_filter()) {
            let mut e = Expr::default();
            if let Ok(text) = e.filter(&filter) {
                proptest::prop_assert_eq!(filter_operators(&filter), counted_in_text(&text));
            }
        }
    }

    #[test]
    fn refuses_expressions_over_the_limits() {
        // 4,096 bytes pass, 4,097 do not: `SET #n0 = :v0, …` grows by the width of each part
        let wide = |n: usize| {
            (0..n).fold(Update::new(), |u, i| {
                u.set(format!("a{i}"), AttributeValue::N("1".into()))
            })
        };
        let len = |n: usize| {
            let mut e = Expr::default();
            e.update(&wide(n)).map_or(0, |s| s.len())
        };
        let fits = (1..1_000)
            .take_while(|&n| len(n) <= MAX_EXPRESSION_BYTES)
            .last();
        let Some(fits) = fits else {
            panic!("no update fits");
        };
        assert!(Request::write("UpdateItem", "hk", Some(&wide(fits)), &Expect::Any).is_ok());
        let err = Request::write("UpdateItem", "hk", Some(&wide(fits + 1)), &Expect::Any).err();
        let detail = err.as_ref().and_then(StoreError::expression_too_large);
        assert_eq!(
            detail.map(|d| (d.expression, d.limit, d.size)),
            Some((
                ExpressionKind::Update,
                ExpressionLimit::Length,
                len(fits + 1)
            ))
        );
        assert!(err.is_some_and(|e| e.is_validation()));

        // 300 operators pass, 301 do not
        let ands = |n: usize| {
            Expect::Matches(Filter::And(
                (0..n)
                    .map(|_| Filter::eq("a", AttributeValue::N("1".into())))
                    .collect::<Vec<_>>(),
            ))
        };
        assert!(Request::write("PutItem", "hk", None, &ands(150)).is_ok()); // 150 + 149
        let with_not = |n| match ands(n) {
            Expect::Matches(f) => Expect::Matches(Filter::Not(Box::new(f))),
            other => other,
        };
        assert!(Request::write("PutItem", "hk", None, &with_not(150)).is_ok()); // 300
        let err = Request::write("PutItem", "hk", None, &ands(151)).err();
        assert_eq!(
            err.as_ref()
                .and_then(StoreError::expression_too_large)
                .map(|d| (d.expression, d.limit, d.size)),
            Some((ExpressionKind::Condition, ExpressionLimit::Operators, 301))
        );
    }

    /// A value of `size` bytes as the store counts it (a string, or a number of `size` digits).
    fn sized(size: usize, number: bool) -> AttributeValue {
        if number {
            AttributeValue::N(format!("1{}", "0".repeat(size.saturating_sub(1).min(37))))
        } else {
            AttributeValue::S("x".repeat(size))
        }
    }

    fn condition(kind: u8, value: AttributeValue) -> RangeCondition {
        match kind {
            0 => RangeCondition::Eq(value),
            1 => RangeCondition::Lt(value),
            2 => RangeCondition::Ge(value),
            3 => RangeCondition::BeginsWith(value),
            _ => RangeCondition::Between(value.clone(), value),
        }
    }

    proptest::proptest! {
        /// The verdict without rendering is the rendering's: whenever the bounds accept a key
        /// condition, `Request::query` accepts it too (and otherwise `check_query` is it), over
        /// names and values up to and past the limits.
        #[test]
        fn a_key_condition_accepted_unrendered_is_accepted_rendered(
            names in proptest::collection::vec(0usize..400, 1..10),
            values in proptest::collection::vec((0usize..900_000, proptest::bool::ANY), 1..10),
            prefix in 0usize..5,
            range in proptest::option::of((0u8..5, 0usize..900_000)),
            filtered in proptest::bool::ANY,
        ) {
            let hash_count = (names.len() / 2).max(1);
            let names: Vec<String> = names.iter().enumerate()
                .map(|(i, len)| format!("{i}{}", "a".repeat(*len)))
                .collect();
            let (hash, sort) = names.split_at(hash_count);
            let hash: Vec<&str> = hash.iter().map(String::as_str).collect();
            let sort: Vec<&str> = sort.iter().map(String::as_str).collect();
            let mut values = values.into_iter().map(|(size, number)| sized(size, number));
            let mut q = QueryPage::new(values.next().unwrap_or(AttributeValue::S(String::new())));
            q.more_hash_keys = values.by_ref().take(hash.len().saturating_sub(1)).collect();
            q.range_prefix = values.by_ref().take(prefix).collect();
            q.range = range.map(|(kind, size)| condition(kind, sized(size, false)));
            if filtered {
                q.filter = Some(Filter::compare("f", crate::store::Comparison::Lt, AttributeValue::N("1".into())));
            }
            let rendered = Request::query("Query", &q, &hash, &sort).map(drop);
            if q.filter.is_none() && key_condition_fits(&q, &hash, &sort) {
                proptest::prop_assert!(rendered.is_ok(), "accepted unrendered, refused rendered: {rendered:?}");
            }
            let unrendered = Request::check_query("Query", &q, &hash, &sort);
            proptest::prop_assert_eq!(
                unrendered.map_err(|e| e.to_string()),
                rendered.map_err(|e| e.to_string())
            );
        }
    }

    fn arb_sized_update() -> impl proptest::strategy::Strategy<Value = Update> {
        use proptest::prelude::*;
        fn action(max_size: usize) -> impl Strategy<Value = UpdateAction> {
            let name =
                (0usize..4, 0usize..300).prop_map(|(i, len)| format!("{i}{}", "n".repeat(len)));
            let value =
                (0..max_size, proptest::bool::ANY).prop_map(|(size, number)| sized(size, number));
            prop_oneof![
                (name.clone(), value.clone()).prop_map(|(a, v)| UpdateAction::Set(a, v)),
                (name.clone(), value.clone()).prop_map(|(a, v)| UpdateAction::SetIfNotExists(a, v)),
                (name.clone(), value.clone()).prop_map(|(a, v)| UpdateAction::Increment(a, v)),
                (name.clone(), value.clone())
                    .prop_map(|(a, v)| UpdateAction::Append(a, AttributeValue::L(vec![v]))),
                name.clone().prop_map(UpdateAction::Remove),
                (name, value).prop_map(|(a, v)| UpdateAction::Add(a, v)),
            ]
        }
        // a few actions with values up to 700 KB (past the 2 MB of substitutions), or up to
        // 400 small ones (past the 4 KB of text, about 270 `SET`s, and the 300 operators)
        prop_oneof![
            proptest::collection::vec(action(700_000), 0..8),
            proptest::collection::vec(action(64), 0..400),
        ]
        .prop_map(|actions| actions.into_iter().fold(Update::new(), Update::action))
    }

    fn arb_expect() -> impl proptest::strategy::Strategy<Value = Expect> {
        use proptest::prelude::*;
        prop_oneof![
            Just(Expect::Any),
            Just(Expect::Absent),
            Just(Expect::Present),
            arb_filter().prop_map(Expect::Matches),
            // long conditions: up to 150 clauses of up to 100 values
            (1usize..150, 1usize..100, 0usize..200).prop_map(|(clauses, values, len)| {
                Expect::Matches(Filter::And(
                    (0..clauses)
                        .map(|i| Filter::In {
                            attribute: format!("{i}{}", "a".repeat(len)),
                            values: (0..values)
                                .map(|v| AttributeValue::N(v.to_string()))
                                .collect(),
                        })
                        .collect(),
                ))
            }),
        ]
    }

    proptest::proptest! {
        /// A write's verdict on the limits without rendering is the rendering's: whenever the
        /// bounds accept a write, `Request::write` accepts it too, and `check_write` refuses
        /// exactly what `write` refuses, with the same error, over updates and conditions up
        /// to and past every limit.
        #[test]
        fn a_write_accepted_unrendered_is_accepted_rendered(
            update in proptest::option::of(arb_sized_update()),
            expect in arb_expect(),
            hash_len in 0usize..100,
        ) {
            let hash_key = format!("h{}", "k".repeat(hash_len));
            let rendered = Request::write("UpdateItem", &hash_key, update.as_ref(), &expect).map(drop);
            if write_fits(&hash_key, update.as_ref(), &expect) {
                proptest::prop_assert!(rendered.is_ok(), "accepted unrendered, refused rendered: {rendered:?}");
            }
            let unrendered = Request::check_write("UpdateItem", &hash_key, update.as_ref(), &expect);
            proptest::prop_assert_eq!(
                unrendered.map_err(|e| e.to_string()),
                rendered.map_err(|e| e.to_string())
            );
        }
    }

    /// The writes of typed operations are checked without rendering: an update of a few
    /// attributes under a version guard, a create's absence condition; a write of 301
    /// increments (over the length and operator limits) is rendered, and refused.
    #[test]
    fn common_writes_fit_unrendered_and_oversized_ones_are_rendered() {
        use crate::store::Comparison;
        let n = |v: &str| AttributeValue::N(v.into());
        let update = Update::new()
            .set("name", AttributeValue::S("Ada".into()))
            .add("count", n("1"))
            .set("version", n("8"));
        let guard = Expect::Matches(Filter::And(vec![
            Filter::Exists("hashKey".into()),
            Filter::compare("version", Comparison::Eq, n("7")),
            Filter::compare("version", Comparison::Lt, n("99999999999999999999")),
        ]));
        assert!(write_fits("hashKey", Some(&update), &guard));
        assert!(write_fits("hashKey", None, &Expect::Absent));
        let wide = (0..301).fold(Update::new(), |u, i| {
            u.action(UpdateAction::Increment(format!("a{i}"), n("1")))
        });
        assert!(!write_fits("hashKey", Some(&wide), &Expect::Any));
        let refused = Request::check_write("UpdateItem", "hashKey", Some(&wide), &Expect::Any);
        assert!(
            refused
                .as_ref()
                .err()
                .and_then(StoreError::expression_too_large)
                .is_some(),
            "{refused:?}"
        );
    }

    /// Substitutions past 2 MB are refused without a filter too: the bounds do not accept them.
    #[test]
    fn oversized_key_values_are_refused_unrendered_as_rendered() {
        let big = || AttributeValue::S("x".repeat(800_000));
        let mut q = QueryPage::new(big());
        q.more_hash_keys = vec![big()];
        q.range = Some(RangeCondition::Between(big(), big()));
        let hash = ["h1", "h2"];
        assert!(!key_condition_fits(&q, &hash, &["r"]));
        let refused = Request::check_query("Query", &q, &hash, &["r"]);
        assert!(
            matches!(
                refused
                    .as_ref()
                    .err()
                    .and_then(StoreError::expression_too_large)
                    .map(|d| d.limit),
                Some(ExpressionLimit::SubstitutionBytes)
            ),
            "{refused:?}"
        );
        // one value of 800 KB is within the limits either way
        let q = QueryPage::new(big()).range(RangeCondition::Eq(AttributeValue::N("1".into())));
        assert!(key_condition_fits(&q, &["h"], &["r"]));
        assert!(Request::query("Query", &q, &["h"], &["r"]).is_ok());
    }
}
