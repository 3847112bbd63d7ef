//! The page around every view: head, navigation, the embedded style sheet and script, the
//! page of a table that could not be opened, and the tables of records the views share.

use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use entity_manager::{EntitySchema, Item, Schema};
use maud::{DOCTYPE, Markup, html};
use serde_json::Value;

use crate::out::{self, Format, Order};

/// The views, in the navigation's order: path and title.
const VIEWS: [(&str, &str); 5] = [
    ("/", "Design"),
    ("/query", "Query"),
    ("/shards", "Shards"),
    ("/jobs", "Jobs"),
    ("/changes", "Changes"),
];

/// A whole page: `title` in the navigation is the current view.
pub(super) fn layout(table: &str, title: &str, body: &Markup) -> Response {
    Html(
        html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    title { (title) " · " (table) " · entity-manager console" }
                    link rel="stylesheet" href="/console.css";
                    script src="/console.js" defer {}
                }
                body {
                    nav {
                        span.brand { "entity-manager · " strong { (table) } }
                        @for (path, name) in VIEWS {
                            a href=(path) class=[(name == title).then_some("current")] { (name) }
                        }
                    }
                    main id={ "view-" (title.to_ascii_lowercase()) } { (body) }
                }
            }
        }
        .into_string(),
    )
    .into_response()
}

/// The page of every view when the table could not be opened: what failed and what to do
/// (the message of the command line), no trace.
pub(super) fn unavailable(table: &str, message: &str) -> Response {
    let body = html! {
        h1 { "Table " (table) " cannot be read" }
        div.error id="unavailable" {
            p { strong { "What failed: " } (message) }
        }
        p {
            "Check the flags the console was started with (--table, --endpoint-url, --region, --profile, --timeout), "
            "then restart it. The same message comes from any command of the CLI on this table, e.g. "
            code { "entity-manager table describe --table " (table) }
            "."
        }
    };
    let mut response = layout(table, "Design", &body);
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    response
}

/// An error shown inline in a form: the input refused, and that nothing was sent.
pub(super) fn refused(message: &str) -> Markup {
    html! {
        div.error id="refused" role="alert" {
            p { (message) }
            p.small { "Nothing was sent to the table." }
        }
    }
}

pub(super) async fn css() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("console.css"),
    )
        .into_response()
}

pub(super) async fn js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("console.js"),
    )
        .into_response()
}

/// A record as the CLI prints it (keys removed, attributes in the CLI's order), as JSON.
pub(super) fn decoded(schema: &Schema, entity: &EntitySchema<'_>, item: &Item) -> Value {
    let order = Order::keys_last(out::key_names(schema, Some(&entity.model().token)));
    out::item(&entity.remove_keys(item), &order, Format::Json)
}

/// A JSON value as a table cell: strings bare, the rest as JSON.
pub(super) fn cell(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The attribute names of these records, in first-seen order.
pub(super) fn columns<'v>(records: impl IntoIterator<Item = &'v Value>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for record in records {
        if let Value::Object(map) = record {
            for name in map.keys() {
                if !names.contains(name) {
                    names.push(name.clone());
                }
            }
        }
    }
    names
}
