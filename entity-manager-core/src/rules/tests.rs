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
/// delimiter scan, finds what the rules one by one find, in the same order, and words it as
/// they do.
mod name_problems_agree {
    use proptest::prelude::*;

    use super::*;
    use crate::model::{Delimiters, TableModel};

    const TEXTS: [&str; 9] = ["|", "#", "!", "ab", "é", "", "x", "hashKey", "rangeKey"];

    /// The first problem by the rules one by one, as `(k, code)`, with its message.
    fn reference(table: &TableModel, names: &[(&str, u8)]) -> ((usize, usize), Option<String>) {
        for (k, &(text, code)) in names.iter().enumerate() {
            let kind = NameKind::ALL[usize::from(code)];
            let base = 8 * usize::from(code);
            if let Some(role) = kind.role() {
                for (problem, key) in [(1, &table.hash_key), (2, &table.range_key)] {
                    if is_name(key, text) {
                        let first = [Role::TableHashKey, Role::TableRangeKey][problem - 1];
                        let message = role_conflict(text, first, role).message;
                        return ((k, base + problem), Some(message));
                    }
                }
            }
            if let Some(named) = kind.named() {
                for (d, which) in Delimiter::ALL.into_iter().enumerate() {
                    if contains_delimiter(&table.delimiters, which, text) {
                        let message =
                            delimiter_in_name(Syntax::Derive, named, text, which, None).message;
                        return ((k, base + 3 + d), Some(message));
                    }
                }
            }
        }
        ((usize::MAX, 0), None)
    }

    /// The mask the derive computes (`expand/assertions.rs`).
    fn mask(names: &[(&str, u8)]) -> u128 {
        let mut bytes = 0u128;
        for &(text, code) in names {
            if NameKind::ALL[usize::from(code)].named().is_some() {
                for b in text.bytes() {
                    bytes |= 1u128 << b.min(127);
                }
            }
        }
        bytes
    }

    #[test]
    fn kinds_are_numbered_by_their_place() {
        for (code, kind) in NameKind::ALL.into_iter().enumerate() {
            assert_eq!(usize::from(kind.code()), code);
        }
    }

    #[test]
    fn every_kind_and_problem_is_worded_as_the_rules_word_it() {
        let table = TableModel::DEFAULT;
        let mut worded = 0;
        for kind in NameKind::ALL {
            for text in ["hashKey", "rangeKey", "a|b", "a#b", "a!b", "ok"] {
                let names = [(text, kind.code())];
                let found = name_problems(&table, &names, mask(&names));
                let (expected, message) = reference(&table, &names);
                assert_eq!(found, expected, "{kind:?} {text}");
                if let Some(message) = message {
                    assert_eq!(name_problem_message(found.1, text).as_str(), message);
                    worded += 1;
                }
            }
        }
        // 5 kinds written inside keys × 3 delimiters, 4 kinds of attribute × 2 table keys
        assert_eq!(worded, 5 * 3 + 4 * 2);
    }

    proptest! {
        #[test]
        fn as_the_rules_one_by_one(
            keys in (0..TEXTS.len(), 0..TEXTS.len()),
            delimiters in (0..TEXTS.len(), 0..TEXTS.len(), 0..TEXTS.len()),
            names in proptest::collection::vec(("[a-z|#!xé]{0,6}", 0..NameKind::ALL.len()), 0..6),
        ) {
            let table = TableModel::DEFAULT
                .with_keys(TEXTS[keys.0], TEXTS[keys.1])
                .with_delimiters(Delimiters::new(TEXTS[delimiters.0], TEXTS[delimiters.1], TEXTS[delimiters.2]));
            let names: Vec<(&str, u8)> =
                names.iter().map(|(t, c)| (t.as_str(), NameKind::ALL[*c].code())).collect();
            let found = name_problems(&table, &names, mask(&names));
            let (expected, message) = reference(&table, &names);
            prop_assert_eq!(found, expected);
            if let Some(message) = message {
                let worded = name_problem_message(found.1, names[found.0].0);
                prop_assert_eq!(worded.as_str(), message);
            }
        }
    }
}
