//! The requests of the storage seam and their conditions: what a query, a scan and a write
//! ask of a [`Store`](super::Store), and the pages they return.

use serde_dynamo::{AttributeValue, Item};

/// A condition on the range key of a table or index query.
#[derive(Clone, Debug, PartialEq)]
pub enum RangeCondition {
    /// `= value`
    Eq(AttributeValue),
    /// `< value`
    Lt(AttributeValue),
    /// `<= value`
    Le(AttributeValue),
    /// `> value`
    Gt(AttributeValue),
    /// `>= value`
    Ge(AttributeValue),
    /// `BETWEEN low AND high` (inclusive; `low` must not be greater than `high`)
    Between(AttributeValue, AttributeValue),
    /// `begins_with(prefix)` (string and binary range keys only)
    BeginsWith(AttributeValue),
}

impl RangeCondition {
    /// The values of the condition: one, or the two bounds of `BETWEEN`.
    pub(crate) fn values(&self) -> impl Iterator<Item = &AttributeValue> {
        let (first, second) = match self {
            Self::Between(low, high) => (low, Some(high)),
            Self::Eq(v)
            | Self::Lt(v)
            | Self::Le(v)
            | Self::Gt(v)
            | Self::Ge(v)
            | Self::BeginsWith(v) => (v, None),
        };
        std::iter::once(first).chain(second)
    }
}

/// A comparison operator of a [`Filter`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Comparison {
    /// `=`
    Eq,
    /// `<>`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Comparison {
    /// The operator as `DynamoDB` writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Eq => "=",
            Self::Ne => "<>",
            Self::Lt => "<",
            Self::Le => "<=",
            Self::Gt => ">",
            Self::Ge => ">=",
        }
    }
}

/// A filter expression over top-level attributes, evaluated after the `limit` (`DynamoDB`
/// semantics: items that fail the filter still count towards the limit).
///
/// It follows `DynamoDB`'s rules: a comparison with a missing attribute or one of another type
/// is false (`<>` is then true); a query filter may not name the key attributes of the queried
/// table or index; `And`/`Or` need at least one operand and `In` at least one value.
#[derive(Clone, Debug, PartialEq)]
pub enum Filter {
    /// `attribute <op> value`
    Compare {
        /// The attribute.
        attribute: String,
        /// The operator.
        op: Comparison,
        /// The value compared with.
        value: AttributeValue,
    },
    /// `attribute BETWEEN low AND high`
    Between {
        /// The attribute.
        attribute: String,
        /// The inclusive lower bound.
        low: AttributeValue,
        /// The inclusive upper bound.
        high: AttributeValue,
    },
    /// `begins_with(attribute, prefix)` (strings and binary)
    BeginsWith {
        /// The attribute.
        attribute: String,
        /// The prefix.
        prefix: AttributeValue,
    },
    /// `contains(attribute, value)`: a substring of a string, a member of a set, an element of
    /// a list.
    Contains {
        /// The attribute.
        attribute: String,
        /// The value looked for.
        value: AttributeValue,
    },
    /// `attribute_exists(attribute)`
    Exists(String),
    /// `attribute_not_exists(attribute)`
    NotExists(String),
    /// `attribute IN (values…)` (1 to 100 values)
    In {
        /// The attribute.
        attribute: String,
        /// The candidate values.
        values: Vec<AttributeValue>,
    },
    /// Every operand holds.
    And(Vec<Filter>),
    /// At least one operand holds.
    Or(Vec<Filter>),
    /// The operand does not hold.
    Not(Box<Filter>),
    /// `size(attribute) <op> size`: the UTF-8 length of a string, the length of a binary, the
    /// number of elements of a set, list or map (false for other types and missing attributes).
    Size {
        /// The attribute.
        attribute: String,
        /// The operator.
        op: Comparison,
        /// The size compared with.
        size: u64,
    },
    /// `attribute_type(attribute, type)`
    Type {
        /// The attribute.
        attribute: String,
        /// The type it must have.
        of: AttributeType,
    },
}

/// The type of a stored attribute, as `attribute_type` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttributeType {
    /// A string (`S`).
    S,
    /// A number (`N`).
    N,
    /// A binary (`B`).
    B,
    /// A boolean (`BOOL`).
    Bool,
    /// A null (`NULL`).
    Null,
    /// A list (`L`).
    L,
    /// A map (`M`).
    M,
    /// A string set (`SS`).
    Ss,
    /// A number set (`NS`).
    Ns,
    /// A binary set (`BS`).
    Bs,
}

impl AttributeType {
    /// The type as `DynamoDB` writes it (`S`, `BOOL`, `SS`…).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::S => "S",
            Self::N => "N",
            Self::B => "B",
            Self::Bool => "BOOL",
            Self::Null => "NULL",
            Self::L => "L",
            Self::M => "M",
            Self::Ss => "SS",
            Self::Ns => "NS",
            Self::Bs => "BS",
        }
    }

    /// The type of a value.
    pub const fn of(value: &AttributeValue) -> Self {
        match value {
            AttributeValue::S(_) => Self::S,
            AttributeValue::N(_) => Self::N,
            AttributeValue::B(_) => Self::B,
            AttributeValue::Bool(_) => Self::Bool,
            AttributeValue::Null(_) => Self::Null,
            AttributeValue::L(_) => Self::L,
            AttributeValue::M(_) => Self::M,
            AttributeValue::Ss(_) => Self::Ss,
            AttributeValue::Ns(_) => Self::Ns,
            AttributeValue::Bs(_) => Self::Bs,
        }
    }
}

impl Filter {
    /// `attribute <op> value`.
    pub fn compare(attribute: impl Into<String>, op: Comparison, value: AttributeValue) -> Self {
        Self::Compare {
            attribute: attribute.into(),
            op,
            value,
        }
    }

    /// `attribute = value`.
    pub fn eq(attribute: impl Into<String>, value: AttributeValue) -> Self {
        Self::compare(attribute, Comparison::Eq, value)
    }

    /// The names of the attributes this filter reads, in order of appearance (with repeats).
    pub fn attributes(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect_attributes(&mut out);
        out
    }

    fn collect_attributes<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Self::Compare { attribute, .. }
            | Self::Between { attribute, .. }
            | Self::BeginsWith { attribute, .. }
            | Self::Contains { attribute, .. }
            | Self::In { attribute, .. }
            | Self::Exists(attribute)
            | Self::NotExists(attribute)
            | Self::Size { attribute, .. }
            | Self::Type { attribute, .. } => out.push(attribute),
            Self::And(fs) | Self::Or(fs) => fs.iter().for_each(|f| f.collect_attributes(out)),
            Self::Not(f) => f.collect_attributes(out),
        }
    }
}

/// One page of a query of one partition of the table or of a global secondary index.
///
/// Build it with [`QueryPage::new`] and the chained setters.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct QueryPage {
    /// The GSI to query; `None` for the table.
    pub index: Option<String>,
    /// The hash key attribute value to query (the first partition attribute's value, for a
    /// multi-attribute key).
    pub hash_key: AttributeValue,
    /// The values of the further partition attributes of a multi-attribute key, in key order
    /// (equality on every partition attribute; empty for a classic key).
    pub more_hash_keys: Vec<AttributeValue>,
    /// Equality on the first sort attributes of a multi-attribute key, in key order; `range`
    /// then applies to the next sort attribute (empty for a classic key).
    pub range_prefix: Vec<AttributeValue>,
    /// A condition on the range key (on the sort attribute after `range_prefix`, for a
    /// multi-attribute key).
    pub range: Option<RangeCondition>,
    /// A filter applied after `limit` (`DynamoDB` semantics).
    pub filter: Option<Filter>,
    /// Attributes to return; `None` for all (projected) attributes. Asking a `KEYS_ONLY` or
    /// `INCLUDE` index for an attribute it does not project is a validation error.
    pub projection: Option<Vec<String>>,
    /// The maximum number of items to evaluate (at least 1); `None` for no limit.
    pub limit: Option<u32>,
    /// Where to resume: the previous page's `last_evaluated_key`.
    pub exclusive_start_key: Option<Item>,
    /// Descending range-key order.
    pub descending: bool,
}

impl QueryPage {
    /// A query of the table partition with this hash key value, ascending, without limit.
    pub fn new(hash_key: AttributeValue) -> Self {
        Self {
            index: None,
            hash_key,
            more_hash_keys: Vec::new(),
            range_prefix: Vec::new(),
            range: None,
            filter: None,
            projection: None,
            limit: None,
            exclusive_start_key: None,
            descending: false,
        }
    }

    /// Adds the value of the next partition attribute of a multi-attribute key.
    #[must_use]
    pub fn and_hash_key(mut self, value: AttributeValue) -> Self {
        self.more_hash_keys.push(value);
        self
    }

    /// Sets equality on the first sort attributes of a multi-attribute key, in key order
    /// (`range` then applies to the next one).
    #[must_use]
    pub fn range_prefix(mut self, values: impl IntoIterator<Item = AttributeValue>) -> Self {
        self.range_prefix = values.into_iter().collect();
        self
    }

    /// Queries this GSI instead of the table.
    #[must_use]
    pub fn index(mut self, index: impl Into<String>) -> Self {
        self.index = Some(index.into());
        self
    }

    /// Sets the range-key condition.
    #[must_use]
    pub fn range(mut self, condition: RangeCondition) -> Self {
        self.range = Some(condition);
        self
    }

    /// Sets the filter.
    #[must_use]
    pub fn filter(mut self, filter: Filter) -> Self {
        self.filter = Some(filter);
        self
    }

    /// Returns only these attributes.
    #[must_use]
    pub fn projection<I, S>(mut self, attributes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.projection = Some(attributes.into_iter().map(Into::into).collect());
        self
    }

    /// Evaluates at most `limit` items.
    #[must_use]
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Resumes after this key (a previous page's `last_evaluated_key`).
    #[must_use]
    pub fn start_after(mut self, key: Option<Item>) -> Self {
        self.exclusive_start_key = key;
        self
    }

    /// Sets descending (`true`) or ascending (`false`) range-key order.
    #[must_use]
    pub fn descending(mut self, descending: bool) -> Self {
        self.descending = descending;
        self
    }
}

/// The most segments `DynamoDB` accepts in a parallel scan (`TotalSegments`).
pub const MAX_SCAN_SEGMENTS: u32 = 1_000_000;

/// One page of one segment of a scan of the whole table.
///
/// A parallel scan splits the table into `total_segments` disjoint segments; each item belongs
/// to exactly one, chosen by its hash key, and the pages of a segment are read one after the
/// other with [`Page::last_evaluated_key`]. Build it with [`ScanPage::new`] (one segment: the
/// whole table) and the chained setters.
///
/// As in `DynamoDB`, `limit` counts the items evaluated before the filter, and the filter may
/// name any attribute, the key attributes included.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ScanPage {
    /// The segment to read (`0..total_segments`).
    pub segment: u32,
    /// How many segments the table is split into (1 to [`MAX_SCAN_SEGMENTS`]).
    pub total_segments: u32,
    /// The maximum number of items to evaluate (at least 1); `None` for no limit.
    pub limit: Option<u32>,
    /// Where to resume: the previous page's `last_evaluated_key`.
    pub exclusive_start_key: Option<Item>,
    /// A filter applied after `limit`.
    pub filter: Option<Filter>,
    /// Strongly consistent reads (`DynamoStore`; the memory store always is).
    pub consistent: bool,
    /// Whether to ask for the read capacity the page consumed, reported in
    /// [`Page::consumed_capacity`] (`DynamoStore` asks `DynamoDB` with
    /// `ReturnConsumedCapacity=TOTAL`; the memory store computes it anyway). On by default; a
    /// scan that does not use it turns it off, so that `DynamoDB` does not compute it
    /// (`DynamoStore` asks anyway while a `tracing` subscriber records the operation spans,
    /// which carry it).
    pub capacity: bool,
}

impl Default for ScanPage {
    fn default() -> Self {
        Self::new()
    }
}

impl ScanPage {
    /// The first page of the whole table as one segment, without limit or filter.
    pub fn new() -> Self {
        Self {
            segment: 0,
            total_segments: 1,
            limit: None,
            exclusive_start_key: None,
            filter: None,
            consistent: false,
            capacity: true,
        }
    }

    /// Reads segment `segment` of `total_segments`.
    #[must_use]
    pub fn segment(mut self, segment: u32, total_segments: u32) -> Self {
        self.segment = segment;
        self.total_segments = total_segments;
        self
    }

    /// Evaluates at most `limit` items.
    #[must_use]
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Resumes after this key (a previous page's `last_evaluated_key`).
    #[must_use]
    pub fn start_after(mut self, key: Option<Item>) -> Self {
        self.exclusive_start_key = key;
        self
    }

    /// Sets the filter.
    #[must_use]
    pub fn filter(mut self, filter: Filter) -> Self {
        self.filter = Some(filter);
        self
    }

    /// Asks for strongly consistent reads.
    #[must_use]
    pub fn consistent(mut self, consistent: bool) -> Self {
        self.consistent = consistent;
        self
    }

    /// Asks for the read capacity the page consumed, or not ([`capacity`](Self::capacity)).
    ///
    /// ```
    /// use entity_manager_core::store::ScanPage;
    ///
    /// assert!(ScanPage::new().capacity);
    /// assert!(!ScanPage::new().with_capacity(false).capacity);
    /// ```
    #[must_use]
    pub fn with_capacity(mut self, capacity: bool) -> Self {
        self.capacity = capacity;
        self
    }
}

/// A page of query or scan results.
///
/// Two pages are equal when they hold the same items and page key: what a read cost
/// ([`consumed_capacity`](Self::consumed_capacity)) is not part of what it returned.
#[derive(Clone, Debug, Default)]
pub struct Page {
    /// The items: in range-key order for a query (descending if asked), in the store's
    /// order for a scan.
    pub items: Vec<Item>,
    /// Where the next page starts: table keys plus index keys of the last item evaluated.
    /// `None` when the partition is exhausted. Like `DynamoDB`, it is set whenever the limit was
    /// reached, even if nothing remains (the next page is then empty).
    pub last_evaluated_key: Option<Item>,
    /// The read capacity units the request consumed, when the store reports them (a query of
    /// `DynamoStore` asks `DynamoDB` for them; `MemoryStore` computes them by `DynamoDB`'s rule).
    pub consumed_capacity: Option<f64>,
}

impl PartialEq for Page {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items && self.last_evaluated_key == other.last_evaluated_key
    }
}

/// What must hold of an item's current state for a write to proceed.
///
/// When it does not hold, the write fails with
/// [`StoreError::is_conditional_check_failed`](super::StoreError::is_conditional_check_failed)
/// and the error carries the current item
/// ([`StoreError::current_item`](super::StoreError::current_item)), as `DynamoDB` returns it
/// with `ReturnValuesOnConditionCheckFailure = ALL_OLD`.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Expect {
    /// Nothing: write unconditionally.
    #[default]
    Any,
    /// No item with this key exists (`attribute_not_exists` of the hash key).
    Absent,
    /// An item with this key exists (`attribute_exists` of the hash key).
    Present,
    /// The condition holds for the current item (a missing item has no attributes: only
    /// `attribute_not_exists`, `<>` and their negations can hold for it). The condition may
    /// name any attribute, the keys included.
    Matches(Filter),
}

/// One action of an [`Update`]: what happens to one top-level attribute.
#[derive(Clone, Debug, PartialEq)]
pub enum UpdateAction {
    /// `SET attribute = value`
    Set(String, AttributeValue),
    /// `SET attribute = if_not_exists(attribute, value)`
    SetIfNotExists(String, AttributeValue),
    /// `SET attribute = attribute + number` (the attribute must exist and be a number)
    Increment(String, AttributeValue),
    /// `SET attribute = attribute - number` (the attribute must exist and be a number)
    Decrement(String, AttributeValue),
    /// `SET attribute = list_append(if_not_exists(attribute, []), list)`: appends the list's
    /// elements (to an empty list when the attribute is missing).
    Append(String, AttributeValue),
    /// `SET attribute = list_append(list, if_not_exists(attribute, []))`: prepends them.
    Prepend(String, AttributeValue),
    /// `REMOVE attribute`
    Remove(String),
    /// `ADD attribute value`: adds a number to a number, or the elements of a set to a set
    /// (the value itself when the attribute is missing).
    Add(String, AttributeValue),
    /// `DELETE attribute set`: removes the elements of a set from a set (the attribute goes
    /// when nothing is left).
    Delete(String, AttributeValue),
}

impl UpdateAction {
    /// The attribute this action changes.
    pub fn attribute(&self) -> &str {
        match self {
            Self::Set(a, _)
            | Self::SetIfNotExists(a, _)
            | Self::Increment(a, _)
            | Self::Decrement(a, _)
            | Self::Append(a, _)
            | Self::Prepend(a, _)
            | Self::Remove(a)
            | Self::Add(a, _)
            | Self::Delete(a, _) => a,
        }
    }
}

/// A structured `UpdateItem` expression over top-level attributes: `SET`, `REMOVE`, `ADD` and
/// `DELETE` actions, each on a distinct attribute that is not a table key.
///
/// ```
/// use entity_manager_core::AttributeValue;
/// use entity_manager_core::store::Update;
///
/// let update = Update::new()
///     .set("name", AttributeValue::S("Ann".into()))
///     .remove("phone")
///     .add("logins", AttributeValue::N("1".into()));
/// assert_eq!(update.actions().len(), 3);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[must_use]
pub struct Update {
    actions: Vec<UpdateAction>,
}

impl Update {
    /// An update with no action.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether applying this update twice leaves the item as applying it once: no increment,
    /// decrement, append, prepend or numeric `ADD` (sets, `SET`, `REMOVE` and `DELETE` are
    /// repeatable). A store never sends again an update that is not repeatable after a failure
    /// that may have applied it.
    pub fn is_repeatable(&self) -> bool {
        self.actions.iter().all(|a| match a {
            UpdateAction::Increment(..)
            | UpdateAction::Decrement(..)
            | UpdateAction::Append(..)
            | UpdateAction::Prepend(..) => false,
            UpdateAction::Add(_, v) => !matches!(v, AttributeValue::N(_)),
            _ => true,
        })
    }

    /// Adds an action.
    pub fn action(mut self, action: UpdateAction) -> Self {
        self.actions.push(action);
        self
    }

    /// `SET attribute = value`.
    pub fn set(self, attribute: impl Into<String>, value: AttributeValue) -> Self {
        self.action(UpdateAction::Set(attribute.into(), value))
    }

    /// `SET attribute = if_not_exists(attribute, value)`.
    pub fn set_if_not_exists(self, attribute: impl Into<String>, value: AttributeValue) -> Self {
        self.action(UpdateAction::SetIfNotExists(attribute.into(), value))
    }

    /// `SET attribute = attribute + number`.
    pub fn increment(self, attribute: impl Into<String>, number: AttributeValue) -> Self {
        self.action(UpdateAction::Increment(attribute.into(), number))
    }

    /// `SET attribute = attribute - number`.
    pub fn decrement(self, attribute: impl Into<String>, number: AttributeValue) -> Self {
        self.action(UpdateAction::Decrement(attribute.into(), number))
    }

    /// Appends a list's elements (`list_append`; to an empty list when missing).
    pub fn append(self, attribute: impl Into<String>, list: AttributeValue) -> Self {
        self.action(UpdateAction::Append(attribute.into(), list))
    }

    /// Prepends a list's elements.
    pub fn prepend(self, attribute: impl Into<String>, list: AttributeValue) -> Self {
        self.action(UpdateAction::Prepend(attribute.into(), list))
    }

    /// `REMOVE attribute`.
    pub fn remove(self, attribute: impl Into<String>) -> Self {
        self.action(UpdateAction::Remove(attribute.into()))
    }

    /// `ADD attribute value`.
    pub fn add(self, attribute: impl Into<String>, value: AttributeValue) -> Self {
        self.action(UpdateAction::Add(attribute.into(), value))
    }

    /// `DELETE attribute set`.
    pub fn delete(self, attribute: impl Into<String>, set: AttributeValue) -> Self {
        self.action(UpdateAction::Delete(attribute.into(), set))
    }

    /// The actions, in the order they were added.
    pub fn actions(&self) -> &[UpdateAction] {
        &self.actions
    }

    /// Whether the update has no action.
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }
}

/// Which attributes an update returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ReturnValues {
    /// Nothing.
    #[default]
    None,
    /// The whole item as it was before (nothing if there was none).
    AllOld,
    /// The whole item as it is after.
    AllNew,
    /// The attributes the update changed, as they were before.
    UpdatedOld,
    /// The attributes the update changed, as they are after.
    UpdatedNew,
}

/// One request of a batch write.
#[derive(Clone, Debug, PartialEq)]
pub enum WriteRequest {
    /// Put (create or replace) this item.
    Put(Item),
    /// Delete the item with this key.
    Delete(Item),
}

/// One operation of a transactional write.
#[derive(Clone, Debug, PartialEq)]
pub enum TransactWrite {
    /// Put this item if `expect` holds.
    Put {
        /// The item.
        item: Item,
        /// The condition on the current item with the same key.
        expect: Expect,
    },
    /// Delete the item with this key if `expect` holds.
    Delete {
        /// The key (the table's hash and range key attributes).
        key: Item,
        /// The condition on the current item.
        expect: Expect,
    },
    /// Update the item with this key (creating it when missing) if `expect` holds.
    Update {
        /// The key.
        key: Item,
        /// The actions.
        update: Update,
        /// The condition on the current item.
        expect: Expect,
    },
    /// Write nothing, but cancel the transaction unless `expect` holds for this key.
    Check {
        /// The key.
        key: Item,
        /// The condition (`Absent` or `Present`).
        expect: Expect,
    },
}
