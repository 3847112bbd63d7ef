//! The one error accumulator of a derive (STYLE.md §3.6): every independent mistake is pushed
//! here and reported together.
//!
//! It holds `syn::Error`s rather than `darling::Error`s because a `syn::Error` made from tokens
//! keeps their first *and* last span, so `timestamp = -1` underlines `-1` and not only `-` (a
//! `darling::Error` keeps one span, and joining spans needs a nightly compiler). darling's own
//! errors are flattened in, each with its own span.

use std::fmt::Display;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

#[derive(Default)]
pub(crate) struct Errors(Vec<syn::Error>);

impl Errors {
    /// An error spanning `tokens` (from their first to their last token).
    pub(crate) fn at(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.0.push(syn::Error::new_spanned(tokens, message));
    }

    /// An error at one span.
    pub(crate) fn at_span(&mut self, span: Span, message: impl Display) {
        self.0.push(syn::Error::new(span, message));
    }

    /// A parse error, possibly several combined.
    pub(crate) fn syn(&mut self, error: syn::Error) {
        self.0.extend(error);
    }

    /// A darling error, possibly several, each kept with its own span. darling's "Duplicate
    /// field `x`" is reworded in our style, with what to do.
    pub(crate) fn darling(&mut self, error: darling::Error) {
        for error in error.flatten() {
            let text = error.to_string();
            let duplicate = text
                .strip_prefix("Duplicate field `")
                .and_then(|rest| rest.split('`').next());
            match duplicate {
                Some(name) => self.at_span(
                    error.span(),
                    format!("duplicate `{name}`: give each option once"),
                ),
                None => self.syn(error.into()),
            }
        }
    }

    /// The value of `result`, or `None` after recording its errors.
    pub(crate) fn handle<T>(&mut self, result: darling::Result<T>) -> Option<T> {
        result.map_err(|e| self.darling(e)).ok()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// One `compile_error!` per error, in the order they were found.
    pub(crate) fn to_compile_errors(&self) -> TokenStream {
        self.0.iter().map(syn::Error::to_compile_error).collect()
    }
}

/// `crate::users::User` as written, without spaces: for messages.
pub(crate) fn path_text(path: &syn::Path) -> String {
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let text = segments.join("::");
    if path.leading_colon.is_some() {
        format!("::{text}")
    } else {
        text
    }
}
