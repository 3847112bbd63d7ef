//! The jobs view: the journals of a bulk job split across workers (`--journals`, files or
//! directories), merged by `report merge`'s own code into the job's progress per segment and
//! per worker and its totals, refreshed every two seconds until the job is complete.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::State;
use axum::response::Response;
use entity_manager::job::SegmentState;
use maud::{Markup, html};
use serde_json::Value;

use super::{page, svg};
use crate::workers::{Merged, merged};

/// The journal files of `paths`: each file, and the files of each directory (sorted).
fn journal_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let entries = std::fs::read_dir(path)
                .map_err(|e| format!("cannot list {}: {e}", path.display()))?;
            let mut found: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect();
            found.sort();
            files.extend(found);
        } else if path.is_file() {
            files.push(path.clone());
        } else {
            return Err(format!(
                "{} is neither a journal file nor a directory of journals",
                path.display()
            ));
        }
    }
    if files.is_empty() {
        return Err("no journal yet: the workers have not started".to_owned());
    }
    Ok(files)
}

/// The job merged, and each worker's journal merged alone.
type Progress = (
    Result<Merged, String>,
    Vec<(PathBuf, Result<Merged, String>)>,
);

/// Merges the journals (a spill directory of its own per call: two pages may merge at once).
fn merge_all(files: &[PathBuf]) -> Progress {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let spill = std::env::temp_dir().join(format!(
        "entity-manager-console-merge-{}-{}",
        std::process::id(),
        CALLS.fetch_add(1, Ordering::Relaxed)
    ));
    let merge = |files: &[PathBuf]| merged(files, Some(&spill)).map_err(|f| f.message());
    let job = merge(files);
    let workers = files
        .iter()
        .map(|f| (f.clone(), merge(std::slice::from_ref(f))))
        .collect();
    let _ = std::fs::remove_dir_all(&spill);
    (job, workers)
}

pub(super) async fn view(State(state): State<Arc<super::State>>) -> Response {
    let body = if state.journals.is_empty() {
        html! {
            h1 { "Jobs" }
            p { "Start the console with " code { "--journals DIR" } " (or the journal files) to follow a bulk job: "
                "the directory its workers write their " code { "--checkpoint" } " journals to." }
        }
    } else {
        let paths = state.journals.clone();
        let merged = tokio::task::spawn_blocking(move || {
            journal_files(&paths).map(|files| merge_all(&files))
        })
        .await
        .unwrap_or_else(|e| Err(format!("the merge stopped: {e}")));
        html! {
            h1 { "Job" }
            @match &merged {
                Err(message) => { (page::refused(message)) }
                Ok((Err(message), _)) => { (page::refused(message)) }
                Ok((Ok(job), workers)) => { (progress(job, workers)) }
            }
        }
    };
    page::layout(&state.table, "Jobs", &body)
}

fn progress(job: &Merged, workers: &[(PathBuf, Result<Merged, String>)]) -> Markup {
    let report = &job.report;
    let complete = report.complete();
    let name = |p: &Path| {
        p.file_name().map_or_else(
            || p.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    html! {
        section.card id="job" data-complete=(complete) data-refresh=[(!complete).then_some("2000")] {
            h2 { (report.kind) " job " code { (report.job) } }
            p id="job-segments" {
                (report.count(SegmentState::Done)) " of " (report.total_segments) " segments done, "
                (report.count(SegmentState::InProgress)) " in progress, "
                (report.count(SegmentState::NotStarted)) " not started"
                @if complete { " — complete" } @else { " (refreshed every 2 s)" }
            }
            (svg::segments("segments", report))
            h3 { "Totals" }
            (totals(&job.counts))
            @if !report.overlaps.is_empty() {
                p.flag { (report.overlaps.len()) " segments are covered by two journals: their records may be counted twice." }
            }
            @if job.findings { p.flag { "The audit found misplaced or unreadable records." } }
            h3 { "Workers" }
            table id="workers" {
                tr { th { "journal" } th { "segments done" } th { "in progress" } th { "totals" } }
                @for (path, merged) in workers {
                    tr data-journal=(name(path)) {
                        td.mono { (name(path)) }
                        @match merged {
                            Ok(w) => {
                                td { (w.report.count(SegmentState::Done)) }
                                td { (w.report.count(SegmentState::InProgress)) }
                                td.mono { (w.counts.to_string()) }
                            }
                            Err(message) => { td colspan="3" { (message) } }
                        }
                    }
                }
            }
            h3 { "As " code { "entity-manager report merge --json" } " prints it" }
            pre.mono id="merge-json" { (job.json.to_string()) }
        }
    }
}

/// The job's counts: one row per total (a map of counts per entity in one cell).
fn totals(counts: &Value) -> Markup {
    html! {
        table id="totals" {
            @if let Value::Object(map) = counts {
                @for (name, value) in map {
                    tr data-total=(name) { th { (name) } td.mono { (page::cell(value)) } }
                }
            }
        }
    }
}
