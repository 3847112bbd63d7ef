//! `--write`: deleting a record from the query view's results. The record's link opens a
//! confirmation page that shows it; its form carries this run's token, which `POST /delete`
//! checks before anything else. Without `--write` the query view shows no delete link, and
//! both routes answer 403 without reading or changing anything.

use std::sync::Arc;

use axum::extract::{Form, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use entity_manager::store::{Expect, KeyType, Store};
use entity_manager::{AttributeValue, Item};
use maud::{Markup, html};

use super::page;
use crate::connection::explain;

/// The refusal of a write route when the console was not started with `--write`.
fn read_only() -> Response {
    (
        StatusCode::FORBIDDEN,
        "refused: this console is read-only (start it with --write to delete records)\n",
    )
        .into_response()
}

/// The refusal of a `POST` without this run's token.
fn no_token() -> Response {
    (
        StatusCode::FORBIDDEN,
        "refused: the form does not carry this console's token (reload the page and try again); nothing was changed\n",
    )
        .into_response()
}

/// A failed read or delete, as the page says it.
fn failed(message: &str) -> Markup {
    html! { div.error id="failed" role="alert" { p { (message) } } }
}

/// The table key of a record from the fields `hashKey` and `rangeKey` (the table's key
/// attributes as strings, or numbers when the table's key says so).
fn key_of(store: &impl Store, fields: &super::Params) -> Result<Item, String> {
    let definition = store.definition();
    let mut key = Item::default();
    for (attribute, field) in [
        (&definition.hash_key, "hashKey"),
        (&definition.range_key, "rangeKey"),
    ] {
        let text = fields.get(field);
        if text.is_empty() {
            return Err(format!(
                "the record's key is incomplete: give `{field}` (the table's `{}`)",
                attribute.name
            ));
        }
        let value = match attribute.key_type {
            KeyType::N if text.parse::<f64>().is_ok() => AttributeValue::N(text.to_owned()),
            KeyType::N => {
                return Err(format!(
                    "`{text}` is not a number, and `{}` is a number key",
                    attribute.name
                ));
            }
            _ => AttributeValue::S(text.to_owned()),
        };
        key.insert(attribute.name.clone(), value);
    }
    Ok(key)
}

/// The link of the delete page of a record (its table keys), shown by the query view's
/// results when the console may write.
pub(super) fn link(store: &impl Store, item: &Item) -> Option<String> {
    let definition = store.definition();
    let text = |name: &str| match item.get(name)? {
        AttributeValue::S(s) | AttributeValue::N(s) => Some(s.clone()),
        _ => None,
    };
    let hash = text(&definition.hash_key.name)?;
    let range = text(&definition.range_key.name)?;
    Some(format!(
        "/delete?hashKey={}&rangeKey={}",
        encoded(&hash),
        encoded(&range)
    ))
}

/// `s` percent-encoded for a query string (unreserved characters kept).
fn encoded(s: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(s.len());
    for byte in s.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// `GET /delete`: the record to delete, and the form that deletes it (with this run's token).
pub(super) async fn confirm(
    State(state): State<Arc<super::State>>,
    Query(fields): Query<super::Params>,
) -> Result<Response, super::Unavailable> {
    if !state.write {
        return Ok(read_only());
    }
    let opened = state.opened()?;
    let store = &opened.store;
    let body = match key_of(store, &fields) {
        Err(message) => page::refused(&message),
        Ok(key) => match store.get_item(&key, None).await {
            Err(e) => failed(&explain("get", &state.table, &e).message()),
            Ok(None) => html! { p id="no-record" { "No record has this key (already deleted?)." } },
            Ok(Some(item)) => confirmation(&state, &opened.schema, &fields, &item),
        },
    };
    let body = html! { h1 { "Delete a record" } (body) };
    Ok(page::layout(&state.table, "Delete", &body))
}

fn confirmation(
    state: &super::State,
    schema: &entity_manager::Schema,
    fields: &super::Params,
    item: &Item,
) -> Markup {
    let token = crate::scan::entity_of(schema, item);
    let record = schema
        .entity(&token)
        .map(|entity| page::decoded(schema, &entity, item))
        .unwrap_or_default();
    html! {
        section.card id="confirm-delete" data-entity=(token) {
            p { "This " strong { (token) } " record will be deleted from table " code { (state.table) } ". This cannot be undone." }
            pre.mono id="record" { (serde_json::to_string_pretty(&record).unwrap_or_default()) }
            form method="post" action="/delete" {
                input type="hidden" name="token" value=(state.token);
                input type="hidden" name="hashKey" value=(fields.get("hashKey"));
                input type="hidden" name="rangeKey" value=(fields.get("rangeKey"));
                button id="confirm" type="submit" { "Delete this record" }
                " "
                a id="cancel" href="/query" { "cancel" }
            }
        }
    }
}

/// `POST /delete`: deletes the record, if the console may write and the form carries this
/// run's token (checked before anything is read).
pub(super) async fn delete(
    State(state): State<Arc<super::State>>,
    Form(fields): Form<super::Params>,
) -> Result<Response, super::Unavailable> {
    if !state.write {
        return Ok(read_only());
    }
    if fields.get("token") != state.token {
        return Ok(no_token());
    }
    let opened = state.opened()?;
    let store = &opened.store;
    let body = match key_of(store, &fields) {
        Err(message) => page::refused(&message),
        Ok(key) => match store.delete_item(&key, Expect::Present).await {
            Ok(()) => html! {
                p id="deleted" data-hash-key=(fields.get("hashKey")) data-range-key=(fields.get("rangeKey")) {
                    "Deleted the record " code { (fields.get("hashKey")) " / " (fields.get("rangeKey")) } "."
                }
            },
            Err(e) if e.is_conditional_check_failed() => {
                html! { p id="no-record" { "No record has this key (already deleted?): nothing was changed." } }
            }
            Err(e) => failed(&explain("delete", &state.table, &e).message()),
        },
    };
    let body = html! {
        h1 { "Delete a record" }
        (body)
        p { a href="/query" { "back to the query view" } }
    };
    Ok(page::layout(&state.table, "Delete", &body))
}
