//! Tests of the rules across subjects.

use std::borrow::Cow;

use crate::limits::MAX_CHAR_BITS;
use crate::model::{Delimiters, Index, Projection, ShardBump};

use super::*;

#[test]
fn messages_are_assembled_at_compile_time() {
    const M: Message = Message::new().push("index `a` of ").push_usize(20).push("");
    assert_eq!(M.as_str(), "index `a` of 20");
    assert_eq!(Message::new().push_usize(0).as_str(), "0");
    assert_eq!(Message::new().push(&"x".repeat(600)).as_str(), "");
}

#[test]
fn delimiters_are_found_in_names() {
    let delimiters = Delimiters::DEFAULT;
    assert!(contains_delimiter(
        &delimiters,
        Delimiter::GeneratedKey,
        "a|b"
    ));
    assert!(!contains_delimiter(&delimiters, Delimiter::ShardKey, "a|b"));
    assert!(!contains("abc", ""));
}

#[test]
fn settings_are_spelled_in_the_callers_syntax() {
    let config = bump_char_bits(Syntax::Config, 6).map(|p| p.message);
    let derive = bump_char_bits(Syntax::Derive, 6).map(|p| p.message);
    assert!(config.is_some_and(|m| m.contains("`charBits` is 6")));
    assert!(derive.is_some_and(|m| m.contains("`char_bits` is 6")));
    assert_eq!(bump_char_bits(Syntax::Derive, MAX_CHAR_BITS.into()), None);
}

#[test]
fn a_schedule_is_sorted_with_the_implied_bump_in_front() {
    let bumps = [ShardBump::new(9, 1, 2), ShardBump::new(5, 1, 1)];
    let s = schedule(&bumps);
    assert_eq!(s.declared, [None, Some(1), Some(0)]);
    assert_eq!(s.bumps[0], ShardBump::UNSHARDED);
    assert!(s.implied());
    let s = schedule(&[ShardBump::new(0, 2, 1)]);
    assert_eq!(s.declared, [Some(0)]);
    assert!(!s.implied());
    assert_eq!(schedule(&[]).bumps, [ShardBump::UNSHARDED]);
}

#[test]
fn the_21st_distinct_index_is_over_the_limit() {
    let index = |name: String| Index {
        name: Cow::Owned(name),
        hash_key: Cow::Borrowed("hashKey"),
        range_key: Cow::Borrowed("x"),
        projection: Projection::All,
        multi: None,
    };
    let a: Vec<Index> = (0..15).map(|i| index(format!("i{i}"))).collect();
    // 10 repeats of `a`'s names and 6 new ones
    let b: Vec<Index> = (5..21).map(|i| index(format!("i{i}"))).collect();
    let lists: [&[Index]; 2] = [&a, &b];
    assert_eq!(distinct_indexes(&lists), 21);
    assert_eq!(first_index_over_limit(&lists), Some((1, 15)));
    assert_eq!(first_index_over_limit(&lists[..1]), None);
    assert!(index_count_message("", &lists).is_some_and(|m| {
        m.as_str()
            .contains("`i20` is the 21st distinct index of the table, which declares 21")
    }));
    assert!(index_count_message("Users", &lists[..1]).is_none());
}

/// `name_problems`, which the derive's `const` assertion runs with a byte mask to skip the
/// delimiter scan, finds what the rules one by one find, in the same order.
mod name_problems_agree {
    use proptest::prelude::*;

    use super::*;
    use crate::model::{Delimiters, TableModel};

    const TEXTS: [&str; 9] = ["|", "#", "!", "ab", "é", "", "x", "hashKey", "rangeKey"];

    fn reference(table: &TableModel, names: &[(&str, bool, bool)]) -> (usize, usize) {
        for (k, &(text, keys, delimiters)) in names.iter().enumerate() {
            if keys && is_name(&table.hash_key, text) {
                return (k, 1);
            }
            if keys && is_name(&table.range_key, text) {
                return (k, 2);
            }
            if delimiters {
                for (d, which) in Delimiter::ALL.into_iter().enumerate() {
                    if contains_delimiter(&table.delimiters, which, text) {
                        return (k, 3 + d);
                    }
                }
            }
        }
        (usize::MAX, 0)
    }

    /// The mask the derive computes (`expand/assertions.rs`).
    fn mask(names: &[(&str, bool, bool)]) -> u128 {
        let mut bytes = 0u128;
        for &(text, _, delimiters) in names {
            if delimiters {
                for b in text.bytes() {
                    bytes |= 1u128 << b.min(127);
                }
            }
        }
        bytes
    }

    proptest! {
        #[test]
        fn as_the_rules_one_by_one(
            keys in (0..TEXTS.len(), 0..TEXTS.len()),
            delimiters in (0..TEXTS.len(), 0..TEXTS.len(), 0..TEXTS.len()),
            names in proptest::collection::vec(("[a-z|#!xé]{0,6}", any::<bool>(), any::<bool>()), 0..6),
        ) {
            let table = TableModel::DEFAULT
                .with_keys(TEXTS[keys.0], TEXTS[keys.1])
                .with_delimiters(Delimiters::new(TEXTS[delimiters.0], TEXTS[delimiters.1], TEXTS[delimiters.2]));
            let names: Vec<(&str, bool, bool)> =
                names.iter().map(|(t, k, d)| (t.as_str(), *k, *d)).collect();
            prop_assert_eq!(name_problems(&table, &names, mask(&names)), reference(&table, &names));
        }
    }
}
