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
pub use crate::entity::{Entity, Table};
use crate::error::Result;
pub use crate::model::{
    Delimiters, EntityModel, GeneratedProperty, Index, IndexAttribute, KeyMode, Name, NumericHash,
    Projection, Property, ShardBump, ShardHash, ShardSpace, TableModel,
};
pub use crate::query::{Classic, MultiAttribute, TypedIndex};
pub use crate::store::KeyType;
pub use crate::transcode::Transcoder;
use crate::transcode::{BUILTIN_NAMES, BigInt20, Boolean, Fix6, Int, Str, Timestamp};
use crate::transcode::{Transcode, TranscodeError, Typed};

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

/// The default transcodes by name, each with the trait above that checks a field's type: what
/// `#[transcode("…")]` accepts.
pub const FIELD_TRAITS: [(&str, &str); 6] = [
    (BUILTIN_NAMES[0], "StringField"),
    (BUILTIN_NAMES[1], "IntField"),
    (BUILTIN_NAMES[2], "Fix6Field"),
    (BUILTIN_NAMES[3], "TimestampField"),
    (BUILTIN_NAMES[4], "BooleanField"),
    (BUILTIN_NAMES[5], "BigInt20Field"),
];

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

/// A type the version field (`#[entity(version = …)]`) may have: an integer, which every write
/// checks and increments.
#[diagnostic::on_unimplemented(
    message = "the version field must be an integer, not `{Self}`",
    label = "not an integer type",
    note = "every write checks the stored version and increments it; use `u64`"
)]
pub trait VersionField {
    /// Names the check.
    const OK: () = ();
    /// The largest value of the type, in decimal: a write that would increment the version past
    /// it is refused (the record could not be read back).
    const MAX: &'static str;
}
macro_rules! version_fields {
    ($($t:ty => $max:literal),*) => {
        $(impl VersionField for $t {
            const MAX: &'static str = $max;
        })*
    };
}
version_fields!(
    u8 => "255", u16 => "65535", u32 => "4294967295", u64 => "18446744073709551615",
    i8 => "127", i16 => "32767", i32 => "2147483647", i64 => "9223372036854775807"
);
#[cfg(target_pointer_width = "64")]
version_fields!(usize => "18446744073709551615", isize => "9223372036854775807");
#[cfg(target_pointer_width = "32")]
version_fields!(usize => "4294967295", isize => "2147483647");

pub use crate::field::{Field, KeyPart, Optional, Required};

// ---------------------------------------------------------------------------------------------
// entities and tables

/// A type serde can write and read back, as every entity's records are: `#[derive(Entity)]`
/// checks it at the struct's name, so that a struct without the serde derives is reported there
/// with the fix, not at its first `to_item` with the runtime's source.
#[diagnostic::on_unimplemented(
    message = "the entity `{Self}` is not (de)serializable: it needs `serde::Serialize` and `serde::Deserialize`",
    label = "add `#[derive(serde::Serialize, serde::Deserialize)]` to `{Self}`",
    note = "records are written and read through serde: derive both beside `#[derive(Entity)]` (serde's attributes such as `rename_all` then name the stored attributes); where they are derived, fix the error serde's derive reports"
)]
pub trait Stored {}

#[diagnostic::do_not_recommend]
impl<T: Serialize + DeserializeOwned> Stored for T {}

/// Fails a `const` assertion with `message`, reported at the caller (`#[track_caller]`): the
/// derive calls it at the user's token an assertion is about, so the error points there and
/// quotes no line of this file. One function for every assertion, where a `panic!` per
/// assertion made the compiler expand and check a formatting call each.
#[track_caller]
pub const fn fail(message: &str) -> ! {
    panic!("{}", message)
}

/// Fails the name check of `#[derive(Entity)]` with problem `code` (from [`name_problems`]) of
/// `name`, worded by [`name_problem_message`]. Reported at the caller, as [`fail`]: the derive
/// calls it once per name, at the name's token.
#[track_caller]
pub const fn fail_name(code: usize, name: &str) -> ! {
    fail(name_problem_message(code, name).as_str())
}

/// Whether the entity of this token, unique and timestamp property is one of a table's
/// [`Table::MEMBERS`] (a table's tokens are distinct, which `#[derive(Table)]` checks, so the
/// token finds the one candidate). `#[derive(Entity)]` asserts it, spanned at `table = …`, so
/// an entity its table does not list fails there. It takes the names, not the entity's model:
/// the compiler validates every `const` it evaluates, following references, so a reference to
/// the model would be one more walk over it per entity.
pub const fn is_member(
    members: &[&EntityModel],
    token: &str,
    unique_property: &str,
    timestamp_property: &str,
) -> bool {
    let mut i = 0;
    while i < members.len() {
        let m = members[i];
        if crate::rules::is_name(&m.token, token)
            && crate::rules::is_name(&m.unique_property, unique_property)
            && crate::rules::is_name(&m.timestamp_property, timestamp_property)
        {
            return true;
        }
        i += 1;
    }
    false
}

/// [`is_member`] of the table of `E` (`<E::Table as Table>::MEMBERS`): what `#[derive(Entity)]`
/// asserts. Generic, so that the table's members are read inside the interpreter, where the
/// table's `MEMBERS` is evaluated once for all its entities; a `const` holding them per entity
/// (`<E as TableModelOf>::MEMBERS`) was one more value per entity for the compiler to
/// validate, models and all.
pub const fn is_member_of<E: Entity>(
    token: &str,
    unique_property: &str,
    timestamp_property: &str,
) -> bool {
    is_member(
        <E::Table as Table>::MEMBERS,
        token,
        unique_property,
        timestamp_property,
    )
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
    default_limit: crate::limits::DEFAULT_LIMIT,
    default_page_size: crate::limits::DEFAULT_PAGE_SIZE,
    properties: Cow::Borrowed(&[]),
    generated: Cow::Borrowed(&[]),
    indexes: Cow::Borrowed(&[]),
};

/// An entity's model from its parts, in one `const` call: what `#[derive(Entity)]` emits for
/// `MODEL` (the `with_*` builder chain made the compiler's `const` interpreter copy the model
/// once per call).
#[allow(clippy::too_many_arguments)] // one per field of the model
pub const fn entity_model(
    token: &'static str,
    unique_property: &'static str,
    timestamp_property: &'static str,
    shard_bumps: &'static [ShardBump],
    (default_limit, default_page_size): (usize, usize),
    properties: &'static [Property],
    generated: &'static [GeneratedProperty],
    indexes: &'static [Index],
) -> EntityModel {
    EntityModel {
        token: Cow::Borrowed(token),
        unique_property: Cow::Borrowed(unique_property),
        timestamp_property: Cow::Borrowed(timestamp_property),
        shard_bumps: Cow::Borrowed(shard_bumps),
        default_limit,
        default_page_size,
        properties: Cow::Borrowed(properties),
        generated: Cow::Borrowed(generated),
        indexes: Cow::Borrowed(indexes),
    }
}

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
// the configuration rules
//
// The derive calls the rules at expansion time through `rules`; the `const` assertions it emits
// (the rules that need the table's settings or the other entities) evaluate the `const fn`s
// re-exported below, which `validate.rs` calls at run time too.

/// The table model of an entity's table, for the derive's `const` assertions: one blanket impl
/// here rather than one trait per entity in every expansion. Reached through `Entity::Table`, so
/// that a table type that is not a `#[derive(Table)]` is reported once, by the impl's
/// `type Table`.
pub trait TableModelOf {
    /// `<Self::Table as Table>::MODEL`.
    const TABLE: &'static TableModel;
    /// `&<Self as Entity>::MODEL`, as a `'static` reference.
    const ENTITY: &'static EntityModel;
}

impl<E: Entity> TableModelOf for E {
    const TABLE: &'static TableModel = &<E::Table as Table>::MODEL;
    const ENTITY: &'static EntityModel = &E::MODEL;
}

/// The configuration rules, for the derive (see `rules/mod.rs`).
pub mod rules {
    pub use crate::rules::*;
}

pub use crate::rules::{
    Delimiter, IndexConflict, Message, NameKind, contains_delimiter, distinct_indexes,
    first_index_conflict, first_same_token, index_conflict, index_conflict_message,
    index_count_message, indexes_of, is_name, name_problem_message, name_problems, same_token,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn membership_is_the_token_unique_and_timestamp() {
        const USER: EntityModel = EntityModel::new("user", "userId", "created");
        const EMAIL: EntityModel = EntityModel::new("email", "email", "created");
        const MEMBERS: &[&EntityModel] = &[&USER, &EMAIL];
        assert!(is_member(MEMBERS, "email", "email", "created"));
        assert!(!is_member(&MEMBERS[..1], "email", "email", "created"));
        // one of the three differs: another entity
        assert!(!is_member(MEMBERS, "user", "id", "created"));
        assert!(!is_member(MEMBERS, "user", "userId", "at"));
        assert!(!is_member(MEMBERS, "users", "userId", "created"));
    }

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
    fn each_field_trait_checks_its_transcode() {
        let transcoders = [
            <String as StringField>::TRANSCODER,
            <i64 as IntField>::TRANSCODER,
            <f64 as Fix6Field>::TRANSCODER,
            <u64 as TimestampField>::TRANSCODER,
            <bool as BooleanField>::TRANSCODER,
            <i64 as BigInt20Field>::TRANSCODER,
        ];
        for ((name, _), transcoder) in FIELD_TRAITS.iter().zip(transcoders) {
            assert_eq!(*name, transcoder.name());
        }
    }

    #[test]
    fn names_are_checked_against_the_table() {
        let table = TableModel::DEFAULT;
        assert!(is_name(&table.hash_key, "hashKey") && !is_name(&table.hash_key, "rangeKey"));
        assert!(contains_delimiter(
            &table.delimiters,
            Delimiter::GeneratedKey,
            "a|b"
        ));
        assert!(!contains_delimiter(
            &table.delimiters,
            Delimiter::ShardKey,
            "a|b"
        ));
    }
}
