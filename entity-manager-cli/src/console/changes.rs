//! The changes view: a live tail of the table's stream, each record decoded into a typed change
//! by the `stream` command's own code (entity, kind, key, what changed, the images without
//! keys), filterable by entity. The tail starts when the view is first opened, from the newest
//! record on, and keeps the last [`KEPT`] changes.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::response::Response;
use entity_manager::store::{Store, is_stamp};
use entity_manager::stream::{StartAt, StreamReader};
use maud::html;
use serde_json::Value;

use super::page;
use crate::stream::{Line, decode_line, poll_failure, streams_place};

/// Changes kept for the page.
const KEPT: usize = 500;

/// The stream's tail of this run.
#[derive(Debug, Default)]
pub(super) struct Tail {
    started: bool,
    /// Polls answered so far (the first one fixes where the tail starts).
    polls: u64,
    /// The latest changes, newest first: the entity (`None` for a record that does not
    /// decode) and the line `stream` prints.
    lines: VecDeque<(Option<String>, Value)>,
    failed: Option<String>,
}

/// Follows the stream into the state's tail, until a poll fails.
async fn follow(state: Arc<super::State>) {
    let Ok(opened) = state.opened.as_ref() else {
        return;
    };
    let mut reader =
        StreamReader::new(&opened.store, opened.streams.clone()).start_at(StartAt::Latest);
    loop {
        let records = match reader.poll().await {
            Ok(records) => records,
            Err(e) => {
                let place = streams_place(&opened.streams_at);
                let failure = poll_failure(&state.table, &place, &e);
                if let Ok(mut tail) = state.tail.lock() {
                    tail.failed = Some(failure.message());
                }
                return;
            }
        };
        let mut decoded = Vec::new();
        for record in &records {
            if is_stamp(&record.keys, opened.store.definition()) {
                continue;
            }
            decoded.push(match decode_line(&opened.schema, record) {
                Ok(Line::Change { entity, line }) => (Some(entity), line),
                Ok(Line::Undecodable(line)) => (None, line),
                Err(failure) => (None, serde_json::json!({ "error": failure.message() })),
            });
        }
        if let Ok(mut tail) = state.tail.lock() {
            tail.polls += 1;
            for line in decoded {
                tail.lines.push_front(line);
            }
            tail.lines.truncate(KEPT);
        }
        if records.is_empty() {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

pub(super) async fn view(
    State(state): State<Arc<super::State>>,
    Query(params): Query<super::Params>,
) -> Result<Response, super::Unavailable> {
    let opened = state.opened()?;
    let start = state.tail.lock().is_ok_and(|mut tail| {
        let first = !tail.started;
        tail.started = true;
        first
    });
    if start {
        tokio::spawn(follow(Arc::clone(&state)));
    }
    let entity = params.get("entity");
    let (polls, lines, failed) = match state.tail.lock() {
        Ok(tail) => (
            tail.polls,
            tail.lines
                .iter()
                .filter(|(e, _)| entity.is_empty() || e.as_deref() == Some(entity))
                .map(|(_, line)| line.clone())
                .collect::<Vec<_>>(),
            tail.failed.clone(),
        ),
        Err(_) => (0, Vec::new(), Some("the tail's state was lost".to_owned())),
    };
    let table = opened.schema.table();
    let body = html! {
        h1 { "Changes" }
        form.inline method="get" action="/changes" {
            label for="entity" { "entity " }
            select id="entity" name="entity" data-submit {
                option value="" selected[entity.is_empty()] { "(every entity)" }
                @for e in opened.schema.entities() {
                    option value=(e.token) selected[*e.token == *entity] { (e.token) }
                }
            }
        }
        @if let Some(message) = &failed { (page::refused(message)) }
        section.card id="changes" data-polls=(polls) data-refresh=[failed.is_none().then_some("2000")] {
            p.small {
                "The table's stream from when this view was first opened, newest first (the last "
                (KEPT) " changes; refreshed every 2 s). Polls so far: " (polls) "."
            }
            table id="change-lines" {
                tr { th { "kind" } th { "entity" } th { (table.hash_key) } th { (table.range_key) } th { "changed" } th { "record" } }
                @for line in &lines {
                    @let key = &line["key"];
                    tr data-kind=(page::cell(&line["kind"])) data-entity=(page::cell(&line["entity"]))
                        data-range-key=(page::cell(&key[&*table.range_key])) {
                        td { (page::cell(&line["kind"])) }
                        td { (page::cell(&line["entity"])) }
                        td.mono { (page::cell(&key[&*table.hash_key])) }
                        td.mono { (page::cell(&key[&*table.range_key])) }
                        td { @if let Value::Array(fields) = &line["changedFields"] { @for f in fields { span.tag { (page::cell(f)) } } } }
                        td.mono {
                            @if line.get("error").is_some() { span.flag { (page::cell(&line["error"])) } }
                            @else if line.get("new").is_some() { (line["new"].to_string()) }
                            @else { (line["old"].to_string()) }
                        }
                    }
                }
            }
        }
    };
    Ok(page::layout(&state.table, "Changes", &body))
}
