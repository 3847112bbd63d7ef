//! Implementation details of `#[derive(Entity)]` and `#[derive(Table)]`. Not public API: it
//! changes in any release.

pub use std::borrow::Cow;
pub use std::option::Option;
pub use std::vec::Vec;

pub use crate::builder::KeyBuilder;
pub use crate::entity::{Entity, EntityExt, IndexToken, Table};
pub use crate::error::Result;
pub use crate::model::{
    Delimiters, EntityModel, GeneratedKind, GeneratedProperty, Index, Projection, Property,
    ShardBump, ShardSpace, TableModel,
};
pub use crate::transcode::{Transcode, Transcoder, Typed};

/// Compiles only when transcode `T` accepts values of type `V`; the derive spans the call at
/// the field's type, so a mismatch is reported there.
pub const fn assert_transcode<T: Transcode<V>, V>() {}

/// Types a timestamp property may have: integers (milliseconds since the epoch).
pub trait TimestampValue {}
impl TimestampValue for i64 {}
impl TimestampValue for u64 {}
impl TimestampValue for i128 {}
impl TimestampValue for u128 {}

/// Compiles only when `V` is an integer type a timestamp property may have.
pub const fn assert_timestamp<V: TimestampValue>() {}

/// Compiles only when entity `E` is stored in table `T`.
pub const fn assert_entity_of<E: Entity<Table = T>, T: Table>() {}

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

const fn delimiter_in(table: &TableModel, text: &str) -> bool {
    contains(text, name(&table.delimiters.generated_key))
        || contains(text, name(&table.delimiters.generated_value))
        || contains(text, name(&table.delimiters.shard_key))
}

/// Checks an entity against its table at compile time: its stored attribute names must not
/// collide with the table's key attributes, and its token and names must not contain a
/// delimiter (they appear inside keys). Panics (a compile error in a `const`) on a problem.
pub const fn check_entity_in_table(table: &TableModel, entity: &EntityModel) {
    assert!(
        !delimiter_in(table, name(&entity.token)),
        "the entity token contains one of the table's delimiters; choose another token or other delimiters"
    );
    let properties = match &entity.properties {
        Cow::Borrowed(p) => *p,
        Cow::Owned(p) => p.as_slice(),
    };
    let mut i = 0;
    while i < properties.len() {
        let n = name(&properties[i].name);
        assert!(
            !(str_eq(n, name(&table.hash_key)) || str_eq(n, name(&table.range_key))),
            "a transcoded property has the name of the table's hash or range key attribute; rename it"
        );
        assert!(
            !(delimiter_in(table, n)),
            "a transcoded property name contains one of the table's delimiters; rename it"
        );
        i += 1;
    }
    let generated = match &entity.generated {
        Cow::Borrowed(g) => *g,
        Cow::Owned(g) => g.as_slice(),
    };
    let mut i = 0;
    while i < generated.len() {
        let n = name(&generated[i].name);
        assert!(
            !(str_eq(n, name(&table.hash_key)) || str_eq(n, name(&table.range_key))),
            "a generated property has the name of the table's hash or range key attribute; rename it"
        );
        assert!(
            !(delimiter_in(table, n)),
            "a generated property name contains one of the table's delimiters; rename it"
        );
        i += 1;
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

#[allow(clippy::ptr_arg)] // `&[T]` cannot be had from a `&Cow` in a const fn otherwise
const fn slice<'a, T: Clone>(cow: &'a Cow<'static, [T]>) -> &'a [T] {
    match cow {
        Cow::Borrowed(s) => s,
        Cow::Owned(v) => v.as_slice(),
    }
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

/// The most global secondary indexes one DynamoDB table can have.
pub const MAX_GSIS: usize = 20;

/// Checks the entities of one table at compile time: distinct entity tokens; an index name used
/// by several entities means the same GSI (same keys and projection); at most 20 GSIs. Panics
/// (a compile error in a `const`) on a problem.
#[allow(clippy::many_single_char_names)] // loop indices over entities and indexes
pub const fn check_table(entities: &[&EntityModel]) {
    let mut distinct_indexes = 0;
    let mut e = 0;
    while e < entities.len() {
        let mut f = 0;
        while f < e {
            assert!(
                !str_eq(name(&entities[e].token), name(&entities[f].token)),
                "two entities of this table have the same token; give each entity its own `token`"
            );
            f += 1;
        }
        let indexes = slice(&entities[e].indexes);
        let mut i = 0;
        while i < indexes.len() {
            let mut seen = false;
            let mut f = 0;
            while f <= e {
                let others = slice(&entities[f].indexes);
                let end = if f == e { i } else { others.len() };
                let mut j = 0;
                while j < end {
                    let (a, b) = (&indexes[i], &others[j]);
                    if str_eq(name(&a.name), name(&b.name)) {
                        seen = true;
                        assert!(
                            str_eq(name(&a.hash_key), name(&b.hash_key))
                                && str_eq(name(&a.range_key), name(&b.range_key)),
                            "one index name is declared with different hash or range keys in two entities of this table; a GSI has one key schema"
                        );
                        assert!(
                            same_projection(&a.projection, &b.projection),
                            "one index name is declared with different projections in two entities of this table; a GSI has one projection"
                        );
                    }
                    j += 1;
                }
                f += 1;
            }
            if !seen {
                distinct_indexes += 1;
            }
            i += 1;
        }
        e += 1;
    }
    assert!(
        distinct_indexes <= MAX_GSIS,
        "the entities of this table declare more than 20 distinct indexes; DynamoDB allows 20 global secondary indexes per table"
    );
}
