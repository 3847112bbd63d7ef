//! `const fn` comparisons of names and bytes, for the rules that run in the derive's `const`
//! assertions (`==`, `Deref` and `str::contains` are not `const`).

use std::borrow::Cow;

pub(super) const fn str_eq(a: &str, b: &str) -> bool {
    bytes_eq(a.as_bytes(), b.as_bytes())
}

pub(super) const fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
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

pub(super) const fn contains(haystack: &str, needle: &str) -> bool {
    bytes_contain(haystack.as_bytes(), needle.as_bytes())
}

pub(super) const fn bytes_contain(h: &[u8], n: &[u8]) -> bool {
    if n.is_empty() || n.len() > h.len() {
        return false;
    }
    let mut start = 0;
    while start + n.len() <= h.len() {
        // the first byte alone rules out most positions
        if h[start] == n[0] {
            let mut i = 1;
            while i < n.len() && h[start + i] == n[i] {
                i += 1;
            }
            if i == n.len() {
                return true;
            }
        }
        start += 1;
    }
    false
}

/// The text of a name (`const`: `Deref` is not).
#[allow(clippy::ptr_arg)] // `&str` cannot be had from a `&Cow` in a const fn otherwise
pub const fn name<'a>(cow: &'a Cow<'_, str>) -> &'a str {
    match cow {
        Cow::Borrowed(s) => s,
        Cow::Owned(s) => s.as_str(),
    }
}

#[allow(clippy::ptr_arg)] // `&[T]` cannot be had from a `&Cow` in a const fn otherwise
pub(super) const fn slice<'a, T: Clone>(cow: &'a Cow<'_, [T]>) -> &'a [T] {
    match cow {
        Cow::Borrowed(s) => s,
        Cow::Owned(v) => v.as_slice(),
    }
}
