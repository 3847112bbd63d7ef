//! The shards view: records (and their bytes) per shard per entity as a heat map, from a sample
//! of the table (its size shown) or from a whole-table parallel scan the user starts, that shows
//! its progress and can be stopped. A shard is flagged when it holds 2× the mean of its bump's
//! shards and more than a uniform random assignment of the bump's records would plausibly give
//! ([`judge`]), with what that means for throughput and what a shard bump would change; a bump
//! with too few records is said to be too small to judge.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::extract::{Form, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use entity_manager::model::ShardBump;
use entity_manager::scan::ParallelScan;
use entity_manager::store::{is_stamp, item_size};
use entity_manager::{Item, Schema};
use futures::StreamExt;
use maud::{Markup, html};

use super::{design, page, svg};
use crate::connection::explain;

/// Segments of the console's whole-table scan, and how many are read at once.
const SEGMENTS: u32 = 4;

/// Where the whole-table scan stands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) enum Phase {
    /// Not started.
    #[default]
    Idle,
    Running,
    Done,
    Stopped,
    Failed(String),
}

impl Phase {
    fn name(&self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Running => "running",
            Self::Done => "done",
            Self::Stopped => "stopped",
            Self::Failed(_) => "failed",
        }
    }
}

/// The whole-table scan of this run: its counts per hash key so far.
#[derive(Debug, Default)]
pub(super) struct ScanJob {
    phase: Phase,
    counts: Counts,
    scanned: u64,
    estimate: Option<u64>,
    stop: Arc<AtomicBool>,
}

/// Records and their bytes (DynamoDB's item size) per hash key value.
#[derive(Clone, Debug, Default)]
pub(super) struct Counts {
    records: BTreeMap<String, u64>,
    bytes: BTreeMap<String, u64>,
}

/// Records counted per hash key value, and how many records were read.
type Counted = (Counts, usize);

/// Counts `item` under its hash key value.
fn count(schema: &Schema, counts: &mut Counts, item: &Item) {
    let hash = &*schema.table().hash_key;
    if let Some(entity_manager::AttributeValue::S(h)) = item.get(hash) {
        *counts.records.entry(h.clone()).or_default() += 1;
        *counts.bytes.entry(h.clone()).or_default() +=
            u64::try_from(item_size(item)).unwrap_or(u64::MAX);
    }
}

pub(super) async fn view(
    State(state): State<Arc<super::State>>,
    Query(params): Query<super::Params>,
) -> Result<Response, super::Unavailable> {
    let opened = state.opened()?;
    let schema = &opened.schema;
    let sample_size = Some(params.get("sample").trim().to_owned()).filter(|s| !s.is_empty());
    let job = match state.scan.lock() {
        Ok(job) => (
            job.phase.clone(),
            job.counts.clone(),
            job.scanned,
            job.estimate,
        ),
        Err(_) => (
            Phase::Failed("the scan's state was lost".to_owned()),
            Counts::default(),
            0,
            None,
        ),
    };
    let (phase, scan_counts, scanned, estimate) = job;
    let sampled: Option<Result<Counted, String>> = match &sample_size {
        None => None,
        Some(text) => Some(match text.parse::<u32>() {
            Ok(n) if (1..=100_000).contains(&n) => {
                design::sample(&opened.store, n).await.map(|items| {
                    let mut counts = Counts::default();
                    for item in &items {
                        count(schema, &mut counts, item);
                    }
                    (counts, items.len())
                })
            }
            _ => Err(format!(
                "sample size `{text}` is not a whole number from 1 to 100000"
            )),
        }),
    };
    let body = html! {
        h1 { "Records per shard" }
        section.card {
            form.inline method="get" action="/shards" {
                label for="sample" { "Sample the first " }
                input id="sample" name="sample" type="number" min="1" max="100000" value=(sample_size.as_deref().unwrap_or("1000"));
                " records "
                button id="run-sample" type="submit" { "Sample" }
            }
            " or "
            @if phase == Phase::Running {
                form.inline method="post" action="/shards" {
                    input type="hidden" name="token" value=(state.token);
                    input type="hidden" name="action" value="stop";
                    button.secondary id="stop-scan" type="submit" { "Stop the scan" }
                }
            } @else {
                form.inline method="post" action="/shards" {
                    input type="hidden" name="token" value=(state.token);
                    input type="hidden" name="action" value="scan";
                    button id="start-scan" type="submit" { "Scan the whole table" }
                }
                span.small { " (reads every item: " (SEGMENTS) " segments in parallel; it can be stopped)" }
            }
        }
        @match &sampled {
            Some(Err(message)) => { (page::refused(message)) }
            Some(Ok((counts, n))) => {
                section.card id="heat" data-source="sample" data-size=(n) {
                    h2 { "Sample of " (n) " records" }
                    p.small { "The first records of a scan, not the whole table: counts show where these records are." }
                    (heat_map(schema, counts))
                }
            }
            None => {
                @if phase != Phase::Idle {
                    section.card id="heat" data-source="scan" data-state=(phase.name()) data-scanned=(scanned)
                        data-refresh=[(phase == Phase::Running).then_some("1000")] {
                        h2 id="scan-state" data-state=(phase.name()) {
                            "Whole-table scan: " (phase.name()) ", " (scanned) " records"
                        }
                        p id="scan-line" {
                            @if let Some(total) = estimate {
                                progress id="scan-progress" value=(scanned.min(total)) max=(total.max(1)) {}
                                span.small { " of about " (total) " (DynamoDB's estimate)" }
                            } @else {
                                progress id="scan-progress" {}
                            }
                        }
                        @if let Phase::Failed(message) = &phase { (page::refused(message)) }
                        @if phase == Phase::Stopped { p { "Stopped: the counts are those of the records read until then." } }
                        (heat_map(schema, &scan_counts))
                    }
                } @else {
                    p.muted { "Nothing is read until you ask: take a sample, or scan the whole table." }
                }
            }
        }
    };
    Ok(page::layout(&state.table, "Shards", &body))
}

/// One bump of one entity: its label, its shards with their counts, and what they say.
type Era = (String, Vec<(String, u64)>, Judgement);

/// The suffixes of each bump of `entity`, the records counted in each, and their judgement.
fn eras(schema: &Schema, token: &str, counts: &BTreeMap<String, u64>) -> Vec<Era> {
    let Ok(entity) = schema.entity(token) else {
        return Vec::new();
    };
    let model = entity.model();
    let mut bumps: Vec<ShardBump> = model.shard_bumps.to_vec();
    if bumps.first().is_none_or(|b| b.timestamp > 0) {
        bumps.insert(0, ShardBump::UNSHARDED);
    }
    let hash = schema.table().hash_key.to_string();
    let mut rows = Vec::new();
    for (i, bump) in bumps.iter().enumerate() {
        let to = bumps
            .get(i + 1)
            .map_or(u64::MAX, |next| next.timestamp.saturating_sub(1));
        let Ok(space) = entity.hash_key_space(&hash, &Item::default(), bump.timestamp, to) else {
            continue;
        };
        let cells: Vec<(String, u64)> = space
            .into_iter()
            .map(|key| {
                let n = counts.get(&key).copied().unwrap_or(0);
                (key, n)
            })
            .collect();
        let counts: Vec<u64> = cells.iter().map(|c| c.1).collect();
        let flag = judge(&counts);
        rows.push((
            format!("{token} from {}", svg::date(bump.timestamp)),
            cells,
            flag,
        ));
    }
    rows
}

/// Records per shard on average below which a bump is not judged: with fewer, a uniform random
/// assignment leaves some shards with several times the mean by chance alone.
const MIN_MEAN: f64 = 5.0;

/// What the counts of one bump's shards say.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Judgement {
    /// One shard, or no record: nothing to compare.
    Nothing,
    /// Fewer than [`MIN_MEAN`] records per shard on average: too few records to judge.
    TooFew {
        /// Records per shard.
        mean: f64,
    },
    /// A shard holding `at_least` records or more is hot.
    Judged {
        /// Records per shard.
        mean: f64,
        /// The least count flagged: at least 2× the mean, and more than the mean plus three
        /// standard deviations of a uniform random assignment (`√mean`, Poisson).
        at_least: u64,
    },
}

impl Judgement {
    /// The least count flagged, when the bump is judged.
    pub(super) fn threshold(self) -> Option<u64> {
        match self {
            Self::Judged { at_least, .. } => Some(at_least),
            _ => None,
        }
    }
}

/// Judges one bump's shards from their counts: a shard is hot when it holds 2× the mean and more
/// than `mean + 3·√mean` (what a uniform random assignment plausibly gives), and the bump is
/// judged only from [`MIN_MEAN`] records per shard.
pub(super) fn judge(counts: &[u64]) -> Judgement {
    let total: u64 = counts.iter().sum();
    if counts.len() < 2 || total == 0 {
        return Judgement::Nothing;
    }
    #[allow(clippy::cast_precision_loss)] // counts far below 2^52
    let mean = total as f64 / counts.len() as f64;
    if mean < MIN_MEAN {
        return Judgement::TooFew { mean };
    }
    let twice = (2.0 * mean).ceil();
    let plausible = (mean + 3.0 * mean.sqrt()).floor() + 1.0;
    // a whole number of records below the total, by construction
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let at_least = twice.max(plausible) as u64;
    Judgement::Judged { mean, at_least }
}

fn heat_map(schema: &Schema, counts: &Counts) -> Markup {
    let mut eras_ = Vec::new();
    for entity in schema.entities() {
        eras_.extend(eras(schema, &entity.token, &counts.records));
    }
    let known: u64 = eras_.iter().flat_map(|r| r.1.iter().map(|c| c.1)).sum();
    let all: u64 = counts.records.values().sum();
    let hot: Vec<(&str, &str, u64, f64)> = eras_
        .iter()
        .flat_map(|(label, cells, judgement)| {
            let mean = match judgement {
                Judgement::Judged { mean, .. } => *mean,
                _ => 0.0,
            };
            cells
                .iter()
                .filter(|c| svg::flag_of(c.1, judgement.threshold()))
                .map(move |c| (label.as_str(), c.0.as_str(), c.1, mean))
        })
        .collect();
    let too_few: Vec<(&str, f64)> = eras_
        .iter()
        .filter_map(|(label, _, judgement)| match judgement {
            Judgement::TooFew { mean } => Some((label.as_str(), *mean)),
            _ => None,
        })
        .collect();
    let rows: Vec<svg::HeatRow> = eras_
        .iter()
        .map(|(label, cells, judgement)| (label.clone(), cells.clone(), judgement.threshold()))
        .collect();
    html! {
        div.heat { (svg::heat("heat-map", &rows)) }
        @if all > known {
            p.small { (all - known) " records have a hash key of no entity of the configuration." }
        }
        p.small {
            "A shard is flagged when it holds 2× the mean of its bump's shards and more than a uniform "
            "random assignment of the bump's records would plausibly give (the mean plus three standard "
            "deviations, √mean); a bump is judged from " (MIN_MEAN) " records per shard on average."
        }
        @if !too_few.is_empty() {
            ul id="too-few" {
                @for (label, mean) in &too_few {
                    li data-too-few=(label) { (label) ": too few records to judge (" (format!("{mean:.1}")) " per shard)" }
                }
            }
        }
        @if hot.is_empty() {
            p id="no-hot-shard" { "No shard is hot among the bumps judged." }
        } @else {
            div id="hot-shards" {
                p.flag { (hot.len()) " shard(s) hold 2× the mean of their bump's shards or more, beyond chance:" }
                ul {
                    @for (label, shard, n, mean) in &hot {
                        li data-hot=(shard) { code { (shard) } " (" (label) "): " (n) " records, mean " (format!("{mean:.1}")) }
                    }
                }
                p.small {
                    "DynamoDB serves one partition key with at most 3,000 reads and 1,000 writes per second: "
                    "the entity's throughput is bounded by its hottest shard, and its queries wait on it. "
                    "Uneven shards come from uneven unique ids or from records made before a bump. "
                    "A shard bump (more suffix characters or a larger radix, from a date on) spreads the "
                    "records created after it over more shards; records already written stay where they "
                    "are until migrated (" code { "entity-manager audit --bump" } " shows the dry run)."
                }
            }
        }
        table id="shard-counts" {
            tr { th { "bump" } th { "shard" } th { "records" } th { "bytes" } }
            @for (label, cells, _) in &eras_ {
                @for (shard, n) in cells {
                    @if *n > 0 {
                        @let bytes = counts.bytes.get(shard).copied().unwrap_or(0);
                        tr data-shard=(shard) data-count=(n) data-bytes=(bytes) {
                            td { (label) } td.mono { (shard) } td { (n) } td { (bytes) }
                        }
                    }
                }
            }
        }
    }
}

/// `POST /shards`: `action=scan` starts the whole-table scan, `action=stop` stops it. The form
/// must carry this run's token (another page cannot start a scan of the table).
pub(super) async fn act(
    State(state): State<Arc<super::State>>,
    Form(fields): Form<super::Params>,
) -> Response {
    if fields.get("token") != state.token {
        return (
            StatusCode::FORBIDDEN,
            "refused: the form does not carry this console's token (reload the page and try again)\n",
        )
            .into_response();
    }
    match fields.get("action") {
        "scan" => start(&state).await,
        "stop" => {
            if let Ok(job) = state.scan.lock() {
                job.stop.store(true, Ordering::SeqCst);
            }
        }
        _ => {}
    }
    Redirect::to("/shards").into_response()
}

/// Starts the whole-table scan, unless one runs.
async fn start(state: &Arc<super::State>) {
    let Ok(opened) = state.opened.as_ref() else {
        return;
    };
    let estimate = opened
        .store
        .client()
        .describe_table()
        .table_name(opened.store.table_name())
        .send()
        .await
        .ok()
        .and_then(|out| {
            out.table()
                .and_then(aws_sdk_dynamodb::types::TableDescription::item_count)
        })
        .and_then(|n| u64::try_from(n).ok());
    let stop = Arc::new(AtomicBool::new(false));
    if let Ok(mut job) = state.scan.lock() {
        if job.phase == Phase::Running {
            return;
        }
        *job = ScanJob {
            phase: Phase::Running,
            estimate,
            stop: Arc::clone(&stop),
            ..ScanJob::default()
        };
    }
    let task = Arc::clone(state);
    tokio::spawn(async move { scan(&task, &stop).await });
}

/// The whole-table scan, counting into the state's job until done, stopped or failed.
async fn scan(state: &super::State, stop: &AtomicBool) {
    let Ok(opened) = state.opened.as_ref() else {
        return;
    };
    let store = &opened.store;
    let mut pages = std::pin::pin!(
        ParallelScan::new(store)
            .segments(SEGMENTS)
            .throttle(SEGMENTS as usize)
            .pages()
    );
    let phase = loop {
        if stop.load(Ordering::SeqCst) {
            break Phase::Stopped;
        }
        match pages.next().await {
            None => break Phase::Done,
            Some(Err(e)) => break Phase::Failed(explain("scan", store.table_name(), &e).message()),
            Some(Ok(batch)) => {
                if let Ok(mut job) = state.scan.lock() {
                    for item in &batch.items {
                        if !is_stamp(item, entity_manager::store::Store::definition(store)) {
                            count(&opened.schema, &mut job.counts, item);
                            job.scanned += 1;
                        }
                    }
                }
            }
        }
    };
    if let Ok(mut job) = state.scan.lock() {
        job.phase = phase;
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{Judgement, MIN_MEAN, judge};

    #[test]
    fn a_small_bump_is_too_small_to_judge() {
        // 26 records over 64 shards (a mean of 0.4): a shard of 1 or 3 is chance, not heat
        let mut counts = vec![0_u64; 64];
        counts[0] = 3;
        for c in counts.iter_mut().skip(1).take(23) {
            *c = 1;
        }
        assert!(matches!(judge(&counts), Judgement::TooFew { mean } if mean < 0.5));
        assert_eq!(judge(&counts).threshold(), None);
        assert_eq!(judge(&[7]), Judgement::Nothing);
        assert_eq!(judge(&[0, 0, 0]), Judgement::Nothing);
    }

    #[test]
    fn a_judged_bump_flags_from_twice_the_mean_and_beyond_chance() {
        // a mean of 5: twice is 10, chance reaches 5 + 3·√5 ≈ 11.7, so 12
        assert_eq!(judge(&[5, 5, 5, 5]).threshold(), Some(12));
        // a mean of 100: chance reaches 130, twice is 200
        assert_eq!(judge(&[100, 100]).threshold(), Some(200));
        // every record in one shard of 4: flagged
        let counts = [40, 0, 0, 0];
        let at_least = judge(&counts).threshold().unwrap_or(u64::MAX);
        assert!(counts[0] >= at_least && at_least > 1, "{at_least}");
    }

    proptest! {
        /// A perfectly even spread is never flagged, whatever its size.
        #[test]
        fn an_even_spread_is_never_flagged(shards in 1_usize..300, each in 0_u64..100_000) {
            let counts = vec![each; shards];
            if let Some(at_least) = judge(&counts).threshold() {
                prop_assert!(each < at_least);
            }
        }

        /// A shard flagged holds 2× the mean and more than the mean plus three √mean, and only
        /// bumps of at least `MIN_MEAN` records per shard are judged.
        #[test]
        fn a_flag_is_twice_the_mean_and_beyond_chance(
            counts in proptest::collection::vec(0_u64..1_000, 1..80),
        ) {
            let judgement = judge(&counts);
            #[allow(clippy::cast_precision_loss)]
            let mean = counts.iter().sum::<u64>() as f64 / counts.len() as f64;
            match judgement {
                Judgement::Judged { at_least, .. } => {
                    prop_assert!(mean >= MIN_MEAN);
                    #[allow(clippy::cast_precision_loss)]
                    let t = at_least as f64;
                    prop_assert!(t >= 2.0 * mean && t > mean + 3.0 * mean.sqrt());
                    // the least such count
                    prop_assert!(t - 1.0 < 2.0 * mean || t - 1.0 <= mean + 3.0 * mean.sqrt());
                }
                Judgement::TooFew { .. } => prop_assert!(mean < MIN_MEAN),
                Judgement::Nothing => prop_assert!(counts.len() < 2 || mean == 0.0),
            }
        }
    }
}
