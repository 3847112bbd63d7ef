//! The oracle's generators, model and paging checks (`oracle.rs`).

pub(crate) mod classic;
pub(crate) mod live;
pub(crate) mod live_classic;
pub(crate) mod model;
pub(crate) mod multi;
pub(crate) mod paging;

use proptest::prelude::*;

pub(crate) type BoxError = Box<dyn std::error::Error>;

/// How a query is paged (beside by tokens, which every query is).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Way {
    /// `page` by tokens only.
    Tokens,
    /// `page` by tokens, then `page` again from every token.
    Resumed,
    /// `pages(None)`.
    Pages,
    /// `pages(Some(token))` from the token of one page (its position among the tokens).
    PagesFrom(usize),
    /// `stream()`.
    Stream,
}

pub(crate) fn way() -> impl Strategy<Value = Way> {
    prop_oneof![
        Just(Way::Tokens),
        Just(Way::Resumed),
        Just(Way::Pages),
        (0_usize..8).prop_map(Way::PagesFrom),
        Just(Way::Stream),
    ]
}

/// A limit of 1 to 100, mostly small (pages end in the middle of ties).
pub(crate) fn limit() -> impl Strategy<Value = usize> {
    prop_oneof![
        6 => 1_usize..=8,
        3 => 9_usize..=50,
        1 => 51_usize..=100,
    ]
}
