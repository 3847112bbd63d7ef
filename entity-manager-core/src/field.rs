//! Typed fields: conditions and partial updates written with the fields of an entity, never
//! with attribute-name strings or `AttributeValue`s.
//!
//! `#[derive(Entity)]` gives every entity a constant `FIELDS` (of a generated struct named
//! `<Entity>Fields`) holding one [`Field`] per stored field. A field knows its entity, the type
//! of its values and whether it may be absent ([`Optional`]), changed ([`Required`]) or neither
//! ([`KeyPart`]: the unique and the timestamp property decide the primary key). So a condition
//! compares a field with a value of its own type, `remove` exists only on optional fields, and
//! `set` does not exist on the unique property: each mistake is a compile error.
//!
//! ```
//! use entity_manager_core::field::{Changes, Condition, Field, Optional, Required};
//!
//! # struct User;
//! // what `#[derive(Entity)]` emits for `first_name: String`, `phone: Option<String>`,
//! // `logins: u32`, all under `#[serde(rename_all = "camelCase")]`
//! let first_name: Field<User, String> = Field::new("firstName");
//! let phone: Field<User, String, Optional> = Field::new("phone");
//! let logins: Field<User, u32, Required> = Field::new("logins");
//!
//! let guard: Condition<User> = first_name.eq("Ann") & (phone.exists() | logins.lt(3));
//! let changes = Changes::new().remove(phone).add(logins, 1).when(guard);
//! assert_eq!(changes.len(), 2);
//! ```
//!
//! The mistakes the types catch, each a compile error:
//!
//! ```compile_fail,E0277
//! # use entity_manager_core::field::{Changes, Field, KeyPart};
//! # struct User;
//! let user_id: Field<User, String, KeyPart> = Field::new("userId");
//! // the unique property decides the primary key: no update sets it
//! let changes = Changes::new().set(user_id, "someone-else");
//! ```
//!
//! ```compile_fail,E0308
//! # use entity_manager_core::field::{Changes, Field};
//! # struct User;
//! let first_name: Field<User, String> = Field::new("firstName");
//! // only an optional field can be removed
//! let changes = Changes::new().remove(first_name);
//! ```
//!
//! ```compile_fail,E0277
//! # use entity_manager_core::field::{Condition, Field};
//! # struct User;
//! let logins: Field<User, u32> = Field::new("logins");
//! // a number field compares with numbers
//! let condition: Condition<User> = logins.eq("seven");
//! ```
//!
//! ```compile_fail,E0308
//! # use entity_manager_core::field::{Changes, Field};
//! # struct User;
//! # struct Email;
//! let logins: Field<User, u32> = Field::new("logins");
//! // a field of another entity
//! let changes: Changes<Email> = Changes::new().add(logins, 1);
//! ```

#![allow(
    clippy::needless_pass_by_value,
    reason = "operands are taken by value, like literals, so that `eq(7)` and `eq(\"Ann\")` read naturally"
)]

use std::collections::{BTreeSet, HashSet};
use std::fmt;
use std::marker::PhantomData;
use std::ops::{BitAnd, BitOr, Not};

use serde::Serialize;
use serde_dynamo::AttributeValue;

use crate::store::{AttributeType, Comparison, Filter, UpdateAction};

/// A field that may be absent (`Option<T>`): it can be removed, and a `None` is never stored.
#[derive(Clone, Copy, Debug)]
pub enum Optional {}

/// A field that is always present: it can be set but not removed.
#[derive(Clone, Copy, Debug)]
pub enum Required {}

/// The unique or the timestamp property: it decides the record's primary key, so it can be
/// compared but never changed by an update (move the record instead).
#[derive(Clone, Copy, Debug)]
pub enum KeyPart {}

/// Field kinds an update may set ([`Optional`] and [`Required`]).
///
/// The unique and the timestamp property ([`KeyPart`]) are written into the record's keys: an
/// update that set them would leave the record under keys that no longer match it, so the
/// compiler refuses it and says to move the record.
#[diagnostic::on_unimplemented(
    message = "an update cannot set a key part (the unique or the timestamp property)",
    label = "this field is written into the record's keys",
    note = "to change the unique or the timestamp, move the record: `User::move_record(&store, &old_id, &moved)` deletes it under its old keys and writes it under the new ones, in one transaction"
)]
pub trait Settable: sealed::Kind {}
impl Settable for Optional {}
impl Settable for Required {}

mod sealed {
    pub trait Kind {}
    impl Kind for super::Optional {}
    impl Kind for super::Required {}
    impl Kind for super::KeyPart {}
}

/// One stored field of entity `E`, whose values have type `V`, of kind `K` ([`Required`],
/// [`Optional`] or [`KeyPart`]).
///
/// Emitted by `#[derive(Entity)]` in the entity's `FIELDS` constant; it is only a name with
/// types, so it is `Copy`.
pub struct Field<E, V, K = Required> {
    name: &'static str,
    marker: Marker<E, V, K>,
}

/// Variance and auto traits of a field: it holds no `E`, `V` or `K`.
type Marker<E, V, K> = PhantomData<fn() -> (E, V, K)>;

impl<E, V, K> Clone for Field<E, V, K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E, V, K> Copy for Field<E, V, K> {}

impl<E, V, K> fmt::Debug for Field<E, V, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Field").field(&self.name).finish()
    }
}

/// A value usable where a field of type `T` is expected: a `T`, a `&T`, or a `&str` for a
/// `String` field.
pub trait Operand<T: ?Sized> {
    /// The value as a `DynamoDB` attribute value.
    ///
    /// # Errors
    ///
    /// When serde cannot represent the value (e.g. a map with non-string keys).
    fn to_value(&self) -> Result<AttributeValue, serde_dynamo::Error>;
}

impl<T: Serialize> Operand<T> for T {
    fn to_value(&self) -> Result<AttributeValue, serde_dynamo::Error> {
        serde_dynamo::to_attribute_value(self)
    }
}

impl<T: Serialize> Operand<T> for &T {
    fn to_value(&self) -> Result<AttributeValue, serde_dynamo::Error> {
        serde_dynamo::to_attribute_value(*self)
    }
}

impl Operand<String> for &str {
    fn to_value(&self) -> Result<AttributeValue, serde_dynamo::Error> {
        Ok(AttributeValue::S((*self).to_owned()))
    }
}

/// Field types stored as `DynamoDB` numbers, which `ADD` can change atomically.
pub trait Number {}
macro_rules! numbers {
    ($($t:ty),*) => { $(impl Number for $t {})* };
}
numbers!(
    u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64
);

/// Field types stored as strings, for `begins_with`.
pub trait Text {}
impl Text for String {}
impl Text for Box<str> {}
impl Text for std::borrow::Cow<'static, str> {}

/// Field types `contains` looks into: a substring of a string, an element of a list or set.
pub trait Container {
    /// What `contains` looks for.
    type Element;
}
impl Container for String {
    type Element = String;
}
impl<T> Container for Vec<T> {
    type Element = T;
}
impl<T, H> Container for HashSet<T, H> {
    type Element = T;
}
impl<T> Container for BTreeSet<T> {
    type Element = T;
}

/// Field types that are lists, for `append` and `prepend`.
pub trait List {
    /// The element type.
    type Element;
}
impl<T> List for Vec<T> {
    type Element = T;
}

impl<E, V, K> Field<E, V, K> {
    /// A field stored under attribute `name`. Emitted by `#[derive(Entity)]`; a hand-written
    /// one must name a stored field of `E` with values of type `V`.
    #[must_use]
    pub const fn new(name: &'static str) -> Self {
        Self {
            name,
            marker: PhantomData,
        }
    }

    /// The stored attribute name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        self.name
    }

    fn compare(self, op: Comparison, value: &impl Operand<V>) -> Condition<E> {
        Condition::build(self.name, || {
            Ok(Filter::compare(self.name, op, value.to_value()?))
        })
    }

    /// The field is stored (`attribute_exists`).
    pub fn exists(self) -> Condition<E> {
        Condition::of(Filter::Exists(self.name.to_owned()))
    }

    /// The field is not stored (`attribute_not_exists`).
    pub fn not_exists(self) -> Condition<E> {
        Condition::of(Filter::NotExists(self.name.to_owned()))
    }

    /// The field equals `value`.
    pub fn eq(self, value: impl Operand<V>) -> Condition<E> {
        self.compare(Comparison::Eq, &value)
    }

    /// The field differs from `value` (also true when the field is absent).
    pub fn ne(self, value: impl Operand<V>) -> Condition<E> {
        self.compare(Comparison::Ne, &value)
    }

    /// The field is less than `value`.
    pub fn lt(self, value: impl Operand<V>) -> Condition<E> {
        self.compare(Comparison::Lt, &value)
    }

    /// The field is at most `value`.
    pub fn le(self, value: impl Operand<V>) -> Condition<E> {
        self.compare(Comparison::Le, &value)
    }

    /// The field is greater than `value`.
    pub fn gt(self, value: impl Operand<V>) -> Condition<E> {
        self.compare(Comparison::Gt, &value)
    }

    /// The field is at least `value`.
    pub fn ge(self, value: impl Operand<V>) -> Condition<E> {
        self.compare(Comparison::Ge, &value)
    }

    /// The field lies in `low..=high`.
    pub fn between(self, low: impl Operand<V>, high: impl Operand<V>) -> Condition<E> {
        Condition::build(self.name, || {
            Ok(Filter::Between {
                attribute: self.name.to_owned(),
                low: low.to_value()?,
                high: high.to_value()?,
            })
        })
    }

    /// The field equals one of `values` (1 to 100 of them).
    pub fn is_in<I>(self, values: I) -> Condition<E>
    where
        I: IntoIterator,
        I::Item: Operand<V>,
    {
        Condition::build(self.name, || {
            Ok(Filter::In {
                attribute: self.name.to_owned(),
                values: values
                    .into_iter()
                    .map(|v| v.to_value())
                    .collect::<Result<_, _>>()?,
            })
        })
    }

    /// The field's stored type is `of` (`attribute_type`).
    pub fn is_type(self, of: AttributeType) -> Condition<E> {
        Condition::of(Filter::Type {
            attribute: self.name.to_owned(),
            of,
        })
    }

    /// The size of the field (`size(…)`: UTF-8 bytes of a string, elements of a list, set or
    /// map), to compare.
    pub fn size(self) -> Size<E> {
        Size {
            attribute: self.name,
            entity: PhantomData,
        }
    }
}

impl<E, V: Text, K> Field<E, V, K> {
    /// The field starts with `prefix`.
    pub fn begins_with(self, prefix: impl Operand<String>) -> Condition<E> {
        Condition::build(self.name, || {
            Ok(Filter::BeginsWith {
                attribute: self.name.to_owned(),
                prefix: prefix.to_value()?,
            })
        })
    }
}

impl<E, V: Container, K> Field<E, V, K> {
    /// The field contains `element`: a substring of a string field, an element of a list or
    /// set field.
    pub fn contains(self, element: impl Operand<V::Element>) -> Condition<E> {
        Condition::build(self.name, || {
            Ok(Filter::Contains {
                attribute: self.name.to_owned(),
                value: element.to_value()?,
            })
        })
    }
}

/// `size(field)` of one field, to compare with a number: [`Field::size`].
#[derive(Debug)]
pub struct Size<E> {
    attribute: &'static str,
    entity: PhantomData<fn() -> E>,
}

impl<E> Size<E> {
    fn compare(self, op: Comparison, size: u64) -> Condition<E> {
        Condition::of(Filter::Size {
            attribute: self.attribute.to_owned(),
            op,
            size,
        })
    }

    /// The size equals `size`.
    pub fn eq(self, size: u64) -> Condition<E> {
        self.compare(Comparison::Eq, size)
    }

    /// The size differs from `size`.
    pub fn ne(self, size: u64) -> Condition<E> {
        self.compare(Comparison::Ne, size)
    }

    /// The size is less than `size`.
    pub fn lt(self, size: u64) -> Condition<E> {
        self.compare(Comparison::Lt, size)
    }

    /// The size is at most `size`.
    pub fn le(self, size: u64) -> Condition<E> {
        self.compare(Comparison::Le, size)
    }

    /// The size is greater than `size`.
    pub fn gt(self, size: u64) -> Condition<E> {
        self.compare(Comparison::Gt, size)
    }

    /// The size is at least `size`.
    pub fn ge(self, size: u64) -> Condition<E> {
        self.compare(Comparison::Ge, size)
    }
}

/// A value that serde could not turn into an attribute value, kept until the condition or
/// update is used (then [`Error::InvalidOperand`](crate::Error::InvalidOperand)).
#[derive(Clone, Debug)]
pub(crate) struct Invalid {
    pub(crate) property: &'static str,
    pub(crate) source: serde_dynamo::Error,
}

/// A condition on the fields of a record of entity `E`, for any write: combine with `&`, `|`
/// and `!` (or [`and`](Self::and), [`or`](Self::or), [`not`](Self::not)).
///
/// A missing record has no fields: only `not_exists`, `ne` and their negations can hold for it.
#[derive(Clone, Debug)]
#[must_use]
pub struct Condition<E> {
    filter: Filter,
    invalid: Option<Invalid>,
    entity: PhantomData<fn() -> E>,
}

impl<E> Condition<E> {
    fn of(filter: Filter) -> Self {
        Self {
            filter,
            invalid: None,
            entity: PhantomData,
        }
    }

    fn build(
        property: &'static str,
        filter: impl FnOnce() -> Result<Filter, serde_dynamo::Error>,
    ) -> Self {
        match filter() {
            Ok(filter) => Self::of(filter),
            Err(source) => Self {
                filter: Filter::And(Vec::new()),
                invalid: Some(Invalid { property, source }),
                entity: PhantomData,
            },
        }
    }

    /// Both conditions hold.
    pub fn and(self, other: Self) -> Self {
        let invalid = self.invalid.or(other.invalid);
        let mut operands = match self.filter {
            Filter::And(operands) if !operands.is_empty() => operands,
            filter => vec![filter],
        };
        match other.filter {
            Filter::And(more) if !more.is_empty() => operands.extend(more),
            filter => operands.push(filter),
        }
        Self {
            filter: Filter::And(operands),
            invalid,
            entity: PhantomData,
        }
    }

    /// At least one of the conditions holds.
    pub fn or(self, other: Self) -> Self {
        let invalid = self.invalid.or(other.invalid);
        let mut operands = match self.filter {
            Filter::Or(operands) => operands,
            filter => vec![filter],
        };
        match other.filter {
            Filter::Or(more) => operands.extend(more),
            filter => operands.push(filter),
        }
        Self {
            filter: Filter::Or(operands),
            invalid,
            entity: PhantomData,
        }
    }

    /// The condition does not hold.
    #[allow(clippy::should_implement_trait, reason = "`!` is implemented too")]
    pub fn not(self) -> Self {
        Self {
            filter: Filter::Not(Box::new(self.filter)),
            invalid: self.invalid,
            entity: PhantomData,
        }
    }

    /// The store filter this condition is, or the value that could not be converted.
    pub(crate) fn into_filter(self) -> Result<Filter, Invalid> {
        match self.invalid {
            Some(invalid) => Err(invalid),
            None => Ok(self.filter),
        }
    }

    /// The store filter this condition is (empty when a value could not be converted).
    pub fn filter(&self) -> &Filter {
        &self.filter
    }
}

impl<E> BitAnd for Condition<E> {
    type Output = Self;
    fn bitand(self, other: Self) -> Self {
        self.and(other)
    }
}

impl<E> BitOr for Condition<E> {
    type Output = Self;
    fn bitor(self, other: Self) -> Self {
        self.or(other)
    }
}

impl<E> Not for Condition<E> {
    type Output = Self;
    fn not(self) -> Self {
        Condition::not(self)
    }
}

/// A typed partial update of one record of entity `E`: what to set, remove, add or append,
/// and under which condition. Used by [`EntityExt::update`](crate::EntityExt::update) and
/// [`Transaction::update`](crate::Transaction::update).
///
/// Every generated property and index key built from a changed field is rewritten in the same
/// write (or removed, when a component becomes absent), so the stored item always equals
/// [`to_item`](crate::EntityExt::to_item) of the updated record.
#[derive(Clone, Debug)]
#[must_use]
pub struct Changes<E> {
    actions: Vec<UpdateAction>,
    condition: Option<Condition<E>>,
    version: Option<AttributeValue>,
    invalid: Option<Invalid>,
}

impl<E> Default for Changes<E> {
    fn default() -> Self {
        Self {
            actions: Vec::new(),
            condition: None,
            version: None,
            invalid: None,
        }
    }
}

impl<E> Changes<E> {
    /// No change yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn push(
        mut self,
        property: &'static str,
        action: impl FnOnce() -> Result<UpdateAction, serde_dynamo::Error>,
    ) -> Self {
        match action() {
            Ok(action) => self.actions.push(action),
            Err(source) => {
                self.invalid.get_or_insert(Invalid { property, source });
            }
        }
        self
    }

    /// Sets the field to `value`.
    pub fn set<V, K: Settable>(self, field: Field<E, V, K>, value: impl Operand<V>) -> Self {
        self.push(field.name, || {
            Ok(UpdateAction::Set(field.name.to_owned(), value.to_value()?))
        })
    }

    /// Sets the field to `value` unless it is stored already (`if_not_exists`).
    pub fn set_if_not_exists<V>(
        self,
        field: Field<E, V, Optional>,
        value: impl Operand<V>,
    ) -> Self {
        self.push(field.name, || {
            Ok(UpdateAction::SetIfNotExists(
                field.name.to_owned(),
                value.to_value()?,
            ))
        })
    }

    /// Sets an optional field to `Some(value)`, or removes it for `None`.
    pub fn set_option<V: Serialize>(self, field: Field<E, V, Optional>, value: Option<V>) -> Self {
        match value {
            Some(value) => self.set(field, value),
            None => self.remove(field),
        }
    }

    /// Removes an optional field (it becomes `None`).
    pub fn remove<V>(self, field: Field<E, V, Optional>) -> Self {
        self.push(field.name, || {
            Ok(UpdateAction::Remove(field.name.to_owned()))
        })
    }

    /// Adds `number` to a number field, atomically (`ADD`; an absent optional field counts as
    /// zero). Give a negative number to subtract.
    pub fn add<V: Number, K: Settable>(
        self,
        field: Field<E, V, K>,
        number: impl Operand<V>,
    ) -> Self {
        self.push(field.name, || {
            Ok(UpdateAction::Add(field.name.to_owned(), number.to_value()?))
        })
    }

    /// Appends `items` to a list field, atomically (`list_append`; to an empty list when the
    /// field is absent).
    pub fn append<V: List, K: Settable, I>(self, field: Field<E, V, K>, items: I) -> Self
    where
        I: IntoIterator,
        I::Item: Operand<V::Element>,
    {
        self.push(field.name, || {
            Ok(UpdateAction::Append(
                field.name.to_owned(),
                list::<V::Element, I>(items)?,
            ))
        })
    }

    /// Prepends `items` to a list field, atomically.
    pub fn prepend<V: List, K: Settable, I>(self, field: Field<E, V, K>, items: I) -> Self
    where
        I: IntoIterator,
        I::Item: Operand<V::Element>,
    {
        self.push(field.name, || {
            Ok(UpdateAction::Prepend(
                field.name.to_owned(),
                list::<V::Element, I>(items)?,
            ))
        })
    }

    /// The write happens only if `condition` holds for the stored record (several `when`s must
    /// all hold); otherwise it fails with [`Error::ConditionFailed`](crate::Error::ConditionFailed),
    /// which carries the stored record.
    pub fn when(mut self, condition: Condition<E>) -> Self {
        self.condition = Some(match self.condition.take() {
            Some(previous) => previous & condition,
            None => condition,
        });
        self
    }

    /// For an entity with a version field (`#[entity(version = …)]`): the write happens only if
    /// the stored version is `version`, else
    /// [`Error::VersionConflict`](crate::Error::VersionConflict). Every update increments the
    /// version, with or without this check.
    pub fn if_version<N: Serialize + Number>(mut self, version: N) -> Self {
        match serde_dynamo::to_attribute_value(version) {
            Ok(value) => self.version = Some(value),
            Err(source) => {
                self.invalid.get_or_insert(Invalid {
                    property: "version",
                    source,
                });
            }
        }
        self
    }

    /// The number of field changes.
    pub fn len(&self) -> usize {
        self.actions.len()
    }

    /// Whether no field changes.
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    /// The parts: actions, condition, expected version; or the value that could not be
    /// converted.
    pub(crate) fn into_parts(self) -> Result<Parts, Invalid> {
        if let Some(invalid) = self.invalid {
            return Err(invalid);
        }
        let condition = self.condition.map(Condition::into_filter).transpose()?;
        Ok(Parts {
            actions: self.actions,
            condition,
            version: self.version,
        })
    }
}

/// [`Changes`] taken apart for the store.
pub(crate) struct Parts {
    pub(crate) actions: Vec<UpdateAction>,
    pub(crate) condition: Option<Filter>,
    /// The version the caller expects stored.
    pub(crate) version: Option<AttributeValue>,
}

fn list<T, I>(items: I) -> Result<AttributeValue, serde_dynamo::Error>
where
    I: IntoIterator,
    I::Item: Operand<T>,
{
    Ok(AttributeValue::L(
        items
            .into_iter()
            .map(|item| item.to_value())
            .collect::<Result<_, _>>()?,
    ))
}
