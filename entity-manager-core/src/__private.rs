//! Implementation details of `#[derive(Entity)]` and `#[derive(Table)]`. Not public API: it
//! changes in any release.
//!
//! Compile-time checks come in two shapes, both chosen so that the error points at the user's
//! token and its text does not depend on this file:
//!
//! - type checks are traits with `#[diagnostic::on_unimplemented]` messages, used as
//!   `<Type as Trait>::CONST` (no function bound, hence no "required by a bound in" note) and
//!   implemented through one `#[diagnostic::do_not_recommend]` blanket impl each (so the compiler
//!   reports the trait itself, without listing implementations);
//! - value checks are `const fn`s returning `bool` or `Option`; the derive emits the `assert!`
//!   (or `panic!`) itself, spanned at the offending token, so the panic is not inside this file.

pub use std::borrow::Cow;
pub use std::option::Option;
pub use std::vec::Vec;

use serde::Serialize;
use serde::de::DeserializeOwned;

pub use crate::builder::KeyBuilder;
pub use crate::entity::{Entity, EntityExt, IndexToken, Table};
pub use crate::error::Result;
pub use crate::model::{
    Delimiters, EntityModel, GeneratedKind, GeneratedProperty, Index, KeyMode, NumericHash,
    Projection, Property, ShardBump, ShardSpace, TableModel,
};
use crate::transcode::{BigInt20, Boolean, Fix6, Int, Str, Timestamp};
pub use crate::transcode::{Transcode, TranscodeError, Transcoder, Typed};

// ---------------------------------------------------------------------------------------------
// transcoded fields

/// Defines one field trait per default transcode: `<V as StringField>::TRANSCODER` is the
/// transcoder of a `#[transcode("string")]` field of type `V`, and compiles only when the
/// transcode accepts `V` (with a message naming the transcode and what it accepts).
macro_rules! field_traits {
    ($($(#[$attr:meta])* $name:ident => $marker:ident;)*) => {$(
        $(#[$attr])*
        pub trait $name: Sized {
            /// The transcoder of a field of this type.
            const TRANSCODER: &'static dyn Transcoder;
            /// Encodes a value of the field (for the typed key builders).
            fn encode(value: &Self) -> Result<String, TranscodeError>;
        }

        #[diagnostic::do_not_recommend]
        impl<V> $name for V
        where
            $marker: Transcode<V>,
            V: Serialize + DeserializeOwned + 'static,
        {
            const TRANSCODER: &'static dyn Transcoder = &Typed::<$marker, V>::NEW;
            fn encode(value: &Self) -> Result<String, TranscodeError> {
                <$marker as Transcode<V>>::encode(value)
            }
        }
    )*};
}

field_traits! {
    /// A type the `string` transcode accepts: `String`.
    #[diagnostic::on_unimplemented(
        message = "the `string` transcode does not accept `{Self}`",
        label = "not a `String`",
        note = "`string` accepts `String`; change the field's type or use another transcode"
    )]
    StringField => Str;

    /// A type the `int` transcode accepts: the integer types up to 64 bits.
    #[diagnostic::on_unimplemented(
        message = "the `int` transcode does not accept `{Self}`",
        label = "not an integer type of up to 64 bits",
        note = "`int` accepts `i8`, `i16`, `i32`, `i64`, `u8`, `u16`, `u32` and `u64` (at most 16 digits); change the field's type or use another transcode"
    )]
    IntField => Int;

    /// A type the `fix6` transcode accepts: `f32` and `f64`.
    #[diagnostic::on_unimplemented(
        message = "the `fix6` transcode does not accept `{Self}`",
        label = "not `f64` or `f32`",
        note = "`fix6` accepts `f64` and `f32`; change the field's type or use another transcode"
    )]
    Fix6Field => Fix6;

    /// A type the `timestamp` transcode accepts: `u64`, `i64`, `u32` and `i32`. (A timestamp
    /// *property* must be `u64` or `i64`: see [`TimestampValue`].)
    #[diagnostic::on_unimplemented(
        message = "the `timestamp` transcode does not accept `{Self}`",
        label = "not an integer type (milliseconds since the epoch)",
        note = "`timestamp` accepts `u64`, `i64`, `u32` and `i32`; use an integer type or another transcode"
    )]
    TimestampField => Timestamp;

    /// A type the `boolean` transcode accepts: `bool`.
    #[diagnostic::on_unimplemented(
        message = "the `boolean` transcode does not accept `{Self}`",
        label = "not a `bool`",
        note = "`boolean` accepts `bool`; change the field's type or use another transcode"
    )]
    BooleanField => Boolean;

    /// A type the `bigint20` transcode accepts on a field: `i64` and `u64` (`serde_dynamo`
    /// cannot store `i128`/`u128`, which the derive rejects on sight).
    #[diagnostic::on_unimplemented(
        message = "the `bigint20` transcode does not accept `{Self}`",
        label = "not `i64` or `u64`",
        note = "`bigint20` accepts `i64` and `u64` on a field; change the field's type or use another transcode"
    )]
    BigInt20Field => BigInt20;
}

/// A type a user transcode `T` (`#[transcode(path::to::T)]`) accepts: `T: Transcode<Self>`, and
/// `Self` is (de)serializable, as a stored attribute must be.
#[diagnostic::on_unimplemented(
    message = "transcode `{T}` does not accept `{Self}`",
    label = "`{T}` does not implement `Transcode<{Self}>`",
    note = "implement `Transcode<{Self}>` for `{T}`, or change the field's type"
)]
pub trait TranscodedBy<T>: Sized {
    /// The transcoder of a field of this type.
    const TRANSCODER: &'static dyn Transcoder;
    /// Encodes a value of the field (for the typed key builders).
    fn encode(value: &Self) -> Result<String, TranscodeError>;
}

#[diagnostic::do_not_recommend]
impl<T, V> TranscodedBy<T> for V
where
    T: Transcode<V> + 'static,
    V: Serialize + DeserializeOwned + 'static,
{
    const TRANSCODER: &'static dyn Transcoder = &Typed::<T, V>::NEW;
    fn encode(value: &Self) -> Result<String, TranscodeError> {
        T::encode(value)
    }
}

mod sealed {
    /// The integer types a timestamp property may have.
    pub trait TimestampInt {}
    impl TimestampInt for u64 {}
    impl TimestampInt for i64 {}
}

/// A type a timestamp property (`#[entity(timestamp = …)]`) may have: `u64` or `i64`,
/// milliseconds since the epoch. Narrower than what the `timestamp` transcode accepts (`u32` and
/// `i32` too, for other fields): a creation time in milliseconds does not fit 32 bits.
///
/// `<V as TimestampValue>::TRANSCODER` is the `timestamp` transcoder of the property, so a
/// timestamp property transcoded with `timestamp` is checked once.
#[diagnostic::on_unimplemented(
    message = "the timestamp property must be `u64` or `i64`, not `{Self}`",
    label = "not `u64` or `i64`",
    note = "the timestamp property holds the record's creation time in milliseconds since the epoch, which picks its shard"
)]
pub trait TimestampValue: Sized {
    /// The `timestamp` transcoder of the property.
    const TRANSCODER: &'static dyn Transcoder;
    /// Encodes a value of the property (for the typed key builders).
    fn encode(value: &Self) -> Result<String, TranscodeError>;
}

#[diagnostic::do_not_recommend]
impl<V> TimestampValue for V
where
    V: sealed::TimestampInt + Serialize + DeserializeOwned + 'static,
    Timestamp: Transcode<V>,
{
    const TRANSCODER: &'static dyn Transcoder = &Typed::<Timestamp, V>::NEW;
    fn encode(value: &Self) -> Result<String, TranscodeError> {
        <Timestamp as Transcode<V>>::encode(value)
    }
}

// ---------------------------------------------------------------------------------------------
// entities and tables

/// Implemented by `#[derive(Table)]` for every entity its `entities(…)` lists; `#[derive(Entity)]`
/// checks `<Self as MemberOf<Table>>::MEMBER`, so an entity its table does not list fails on the
/// `table = …` path.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an entity of table `{T}`",
    label = "add `{Self}` to `#[table(entities(…))]` of `{T}`"
)]
pub trait MemberOf<T> {
    /// Names the check.
    const MEMBER: () = ();
}

/// Implemented by `#[derive(Table)]` as `impl<T: SameType<Self>, E> TableOf<T, E> for Self` (a
/// blanket impl, so that an error names no near miss): the table side
/// checks `<<E as Entity>::Table as TableOf<Self, E>>::OK` for every listed entity `E`, so an
/// entity stored in another table fails on its path in `entities(…)`.
#[diagnostic::on_unimplemented(
    message = "`{E}` is stored in table `{Self}`, not in `{T}`",
    label = "`{E}` names `{Self}` in `#[entity(table = …)]`",
    note = "list `{E}` in the `entities(…)` of `{Self}` only, or change its `#[entity(table = …)]` to `{T}`"
)]
pub trait TableOf<T, E> {
    /// Names the check.
    const OK: () = ();
}

/// `Self` and `T` are one type: what `TableOf` holds for a table itself.
pub trait SameType<T> {}
impl<T> SameType<T> for T {}

/// The table of an entity whose `#[entity(…)]` does not name one (a compile error already):
/// it stands in so that the tables listing the entity report nothing more.
#[derive(Debug)]
pub enum PlaceholderTable {}

impl Table for PlaceholderTable {
    const MODEL: TableModel = TableModel::DEFAULT;
    fn model() -> &'static TableModel {
        static MODEL: TableModel = TableModel::DEFAULT;
        &MODEL
    }
    fn entities() -> Vec<&'static EntityModel> {
        Vec::new()
    }
}

#[diagnostic::do_not_recommend]
impl<T, E> TableOf<T, E> for PlaceholderTable {}

/// The model a failed derive stands in with, so that code using the entity does not drown in
/// follow-on errors. Never used at run time: the derive's errors stop compilation.
pub const PLACEHOLDER_ENTITY: EntityModel = EntityModel {
    token: Cow::Borrowed(""),
    unique_property: Cow::Borrowed(""),
    timestamp_property: Cow::Borrowed(""),
    shard_bumps: Cow::Borrowed(&[]),
    default_limit: 10,
    default_page_size: 10,
    properties: Cow::Borrowed(&[]),
    generated: Cow::Borrowed(&[]),
    indexes: Cow::Borrowed(&[]),
};

/// A `'static` borrowed copy of a name of a static model (`""` for an owned one, which static
/// models never hold).
#[allow(clippy::ptr_arg)] // matches on the variant
pub const fn borrowed(cow: &Cow<'static, str>) -> Cow<'static, str> {
    match cow {
        Cow::Borrowed(s) => Cow::Borrowed(*s),
        Cow::Owned(_) => Cow::Borrowed(""),
    }
}

// ---------------------------------------------------------------------------------------------
// compile-time checks of names against the table

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn contains(haystack: &str, needle: &str) -> bool {
    let (h, n) = (haystack.as_bytes(), needle.as_bytes());
    if n.is_empty() || n.len() > h.len() {
        return false;
    }
    let mut start = 0;
    while start + n.len() <= h.len() {
        let mut i = 0;
        while i < n.len() && h[start + i] == n[i] {
            i += 1;
        }
        if i == n.len() {
            return true;
        }
        start += 1;
    }
    false
}

#[allow(clippy::ptr_arg)] // `&str` cannot be had from a `&Cow` in a const fn otherwise
const fn name<'a>(cow: &'a Cow<'static, str>) -> &'a str {
    match cow {
        Cow::Borrowed(s) => s,
        Cow::Owned(s) => s.as_str(),
    }
}

#[allow(clippy::ptr_arg)] // `&[T]` cannot be had from a `&Cow` in a const fn otherwise
const fn slice<'a, T: Clone>(cow: &'a Cow<'static, [T]>) -> &'a [T] {
    match cow {
        Cow::Borrowed(s) => s,
        Cow::Owned(v) => v.as_slice(),
    }
}

/// Whether `name` is the table's hash key attribute name.
pub const fn is_hash_key(table: &TableModel, name: &str) -> bool {
    str_eq(name, self::name(&table.hash_key))
}

/// Whether `name` is the table's range key attribute name.
pub const fn is_range_key(table: &TableModel, name: &str) -> bool {
    str_eq(name, self::name(&table.range_key))
}

/// One of the table's delimiters.
#[derive(Clone, Copy, Debug)]
pub enum Delimiter {
    /// `generated_key_delimiter`.
    GeneratedKey,
    /// `generated_value_delimiter`.
    GeneratedValue,
    /// `shard_key_delimiter`.
    ShardKey,
}

/// Whether `text` (a name written inside keys) contains the table's `delimiter`.
pub const fn contains_delimiter(table: &TableModel, delimiter: Delimiter, text: &str) -> bool {
    let d = match delimiter {
        Delimiter::GeneratedKey => &table.delimiters.generated_key,
        Delimiter::GeneratedValue => &table.delimiters.generated_value,
        Delimiter::ShardKey => &table.delimiters.shard_key,
    };
    contains(text, name(d))
}

// ---------------------------------------------------------------------------------------------
// compile-time checks across the entities of one table

/// Whether two entities have the same (non-empty) token. A placeholder model has none.
pub const fn same_token(a: &EntityModel, b: &EntityModel) -> bool {
    !name(&a.token).is_empty() && str_eq(name(&a.token), name(&b.token))
}

const fn same_projection(a: &Projection, b: &Projection) -> bool {
    match (a, b) {
        (Projection::All, Projection::All) | (Projection::KeysOnly, Projection::KeysOnly) => true,
        (Projection::Include(a), Projection::Include(b)) => {
            let (a, b) = (slice(a), slice(b));
            if a.len() != b.len() {
                return false;
            }
            let mut i = 0;
            while i < a.len() {
                if !str_eq(name(&a[i]), name(&b[i])) {
                    return false;
                }
                i += 1;
            }
            true
        }
        _ => false,
    }
}

/// How two indexes of one name in two entities of a table disagree.
#[derive(Clone, Copy, Debug)]
pub enum IndexConflict {
    /// Different hash or range key attributes.
    Keys(&'static str),
    /// Different projections.
    Projection(&'static str),
}

/// The first index name `a` and `b` both declare with different key attributes or projections:
/// one index name is one GSI, with one key schema and one projection.
#[allow(clippy::many_single_char_names)] // two entities, two index positions, two indexes
pub const fn index_conflict(
    a: &'static EntityModel,
    b: &'static EntityModel,
) -> Option<IndexConflict> {
    let (a, b) = (slice(&a.indexes), slice(&b.indexes));
    let mut i = 0;
    while i < a.len() {
        let mut j = 0;
        while j < b.len() {
            let (x, y) = (&a[i], &b[j]);
            if str_eq(name(&x.name), name(&y.name)) {
                if !(str_eq(name(&x.hash_key), name(&y.hash_key))
                    && str_eq(name(&x.range_key), name(&y.range_key)))
                {
                    return Some(IndexConflict::Keys(name(&x.name)));
                }
                if !same_projection(&x.projection, &y.projection) {
                    return Some(IndexConflict::Projection(name(&x.name)));
                }
            }
            j += 1;
        }
        i += 1;
    }
    None
}

/// The most global secondary indexes one DynamoDB table can have.
pub const MAX_GSIS: usize = 20;

/// The number of distinct index names the entities of one table declare: the table's GSIs.
#[allow(clippy::many_single_char_names)] // loop indices over entities and indexes
pub const fn distinct_indexes(entities: &[&EntityModel]) -> usize {
    let mut count = 0;
    let mut e = 0;
    while e < entities.len() {
        let indexes = slice(&entities[e].indexes);
        let mut i = 0;
        while i < indexes.len() {
            // counted where it first occurs: in an earlier entity, or earlier in this one
            let mut seen = false;
            let mut f = 0;
            while f <= e && !seen {
                let others = slice(&entities[f].indexes);
                let end = if f == e { i } else { others.len() };
                let mut j = 0;
                while j < end && !seen {
                    seen = str_eq(name(&indexes[i].name), name(&others[j].name));
                    j += 1;
                }
                f += 1;
            }
            if !seen {
                count += 1;
            }
            i += 1;
        }
        e += 1;
    }
    count
}

/// A panic message assembled at compile time (a `const` cannot `format!`): up to 512 bytes,
/// longer text is cut at a piece boundary.
#[derive(Clone, Copy, Debug)]
pub struct Message {
    buf: [u8; 512],
    len: usize,
}

impl Message {
    /// An empty message.
    pub const fn new() -> Self {
        Self {
            buf: [0; 512],
            len: 0,
        }
    }

    /// Appends `text` whole, or nothing if it does not fit.
    #[must_use]
    pub const fn push(mut self, text: &str) -> Self {
        let bytes = text.as_bytes();
        if self.len + bytes.len() > self.buf.len() {
            return self;
        }
        let mut i = 0;
        while i < bytes.len() {
            self.buf[self.len + i] = bytes[i];
            i += 1;
        }
        self.len += bytes.len();
        self
    }

    /// Appends a number in decimal.
    #[must_use]
    pub const fn push_usize(self, mut n: usize) -> Self {
        let mut digits = [0u8; 20];
        let mut start = digits.len();
        loop {
            start -= 1;
            #[allow(clippy::cast_possible_truncation)] // a digit
            {
                digits[start] = b'0' + (n % 10) as u8;
            }
            n /= 10;
            if n == 0 {
                break;
            }
        }
        match std::str::from_utf8(digits.split_at(start).1) {
            Ok(text) => self.push(text),
            Err(_) => self,
        }
    }

    /// The message.
    pub const fn as_str(&self) -> &str {
        match std::str::from_utf8(self.buf.split_at(self.len).0) {
            Ok(text) => text,
            Err(_) => "",
        }
    }
}

impl Default for Message {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepts_timestamp<V: TimestampValue>() -> &'static str {
        V::TRANSCODER.name()
    }

    #[test]
    fn timestamp_properties_are_u64_and_i64_with_the_timestamp_transcode() {
        assert_eq!(accepts_timestamp::<u64>(), "timestamp");
        assert_eq!(accepts_timestamp::<i64>(), "timestamp");
        // the `timestamp` transcode itself also takes 32-bit integers, for other fields
        assert_eq!(<u32 as TimestampField>::TRANSCODER.name(), "timestamp");
        assert_eq!(<i32 as TimestampField>::TRANSCODER.name(), "timestamp");
    }

    #[test]
    fn messages_are_assembled_at_compile_time() {
        const M: Message = Message::new().push("index `a` of ").push_usize(20).push("");
        assert_eq!(M.as_str(), "index `a` of 20");
        assert_eq!(Message::new().push_usize(0).as_str(), "0");
        assert_eq!(Message::new().push(&"x".repeat(600)).as_str(), "");
    }

    #[test]
    fn names_are_checked_against_the_table() {
        let table = TableModel::DEFAULT;
        assert!(is_hash_key(&table, "hashKey") && !is_hash_key(&table, "rangeKey"));
        assert!(is_range_key(&table, "rangeKey"));
        assert!(contains_delimiter(&table, Delimiter::GeneratedKey, "a|b"));
        assert!(!contains_delimiter(&table, Delimiter::ShardKey, "a|b"));
    }
}
