//! Progress of a long job on stderr (never stdout): a live line on a terminal; elsewhere (a
//! Kubernetes or CI log) a plain line every few seconds. Done, total (exact, or an estimate,
//! labelled so), rate and ETA. `--quiet` turns it off.

use std::fmt::Write as _;
use std::io::{self, IsTerminal};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static QUIET: AtomicBool = AtomicBool::new(false);

/// `--quiet`: no progress at all.
pub(crate) fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::SeqCst);
}

/// The seconds between two plain progress lines when stderr is not a terminal:
/// `ENTITY_MANAGER_PROGRESS_SECONDS`, 5 by default.
fn interval() -> Duration {
    let seconds = std::env::var("ENTITY_MANAGER_PROGRESS_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(5.0);
    Duration::from_secs_f64(seconds)
}

/// How sure a total is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Total {
    /// Counted (a file's lines, a dry run, a checkpoint).
    Exact(u64),
    /// DynamoDB's item count of the table (`DescribeTable`, refreshed about every six hours).
    Estimate(u64),
}

/// One job's progress.
#[derive(Debug)]
pub(crate) struct Progress {
    /// What the job does, e.g. "purge of table Users".
    label: String,
    /// What is counted, e.g. "items".
    unit: &'static str,
    total: Option<Total>,
    started: Instant,
    /// Done before this run (a resumed job): not in the rate.
    before: u64,
    done: u64,
    bar: Option<indicatif::ProgressBar>,
    every: Duration,
    last_line: Option<Instant>,
    quiet: bool,
}

impl Progress {
    /// The progress of `label`, counting `unit`, from `before` done by earlier runs.
    pub(crate) fn new(
        label: String,
        unit: &'static str,
        total: Option<Total>,
        before: u64,
    ) -> Self {
        let quiet = QUIET.load(Ordering::SeqCst);
        let bar = (!quiet && io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        let mut progress = Self {
            label,
            unit,
            total,
            started: Instant::now(),
            before,
            done: before,
            bar,
            every: interval(),
            last_line: None,
            quiet,
        };
        if let Some(bar) = &progress.bar {
            bar.set_message(progress.text(""));
        }
        progress.last_line = Some(Instant::now());
        progress
    }

    /// `done` so far (this run and the earlier ones), with `detail` (e.g. counts per entity).
    pub(crate) fn update(&mut self, done: u64, detail: &str) {
        self.done = done;
        if self.quiet {
            return;
        }
        if let Some(bar) = &self.bar {
            bar.set_message(self.text(detail));
            return;
        }
        if self.last_line.is_none_or(|t| t.elapsed() >= self.every) {
            say!("{}", self.text(detail));
            self.last_line = Some(Instant::now());
        }
    }

    /// The job ended: clears the live line.
    pub(crate) fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    /// `label: 1200 of ~20000 items (6%, estimate), 350/s, ETA 52s; detail`.
    fn text(&self, detail: &str) -> String {
        let elapsed = self.started.elapsed().as_secs_f64();
        let this_run = self.done.saturating_sub(self.before);
        #[allow(clippy::cast_precision_loss)] // a rate for people
        let rate = if elapsed > 0.0 {
            this_run as f64 / elapsed
        } else {
            0.0
        };
        if self.unit.is_empty() {
            // a job that counts nothing: how long it has run
            return format!(
                "{} ({})",
                self.label,
                duration(self.started.elapsed().as_secs())
            );
        }
        let mut text = format!("{}: {} {}", self.label, self.done, self.unit);
        if let Some(total) = self.total {
            let (n, estimate) = match total {
                Total::Exact(n) => (n, false),
                Total::Estimate(n) => (n, true),
            };
            #[allow(clippy::cast_precision_loss)]
            let percent = if n > 0 {
                (self.done as f64 / n as f64 * 100.0).min(100.0)
            } else {
                100.0
            };
            let _ = write!(
                text,
                " of {}{n} ({percent:.0}%{})",
                if estimate { "~" } else { "" },
                if estimate {
                    ", total estimated by DynamoDB"
                } else {
                    ""
                }
            );
            if rate > 0.0 && n > self.done {
                #[allow(
                    clippy::cast_precision_loss,
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss
                )]
                let eta = ((n - self.done) as f64 / rate).round() as u64;
                let _ = write!(text, ", {rate:.0}/s, ETA {}", duration(eta));
            } else if rate > 0.0 {
                let _ = write!(text, ", {rate:.0}/s");
            }
        } else if rate > 0.0 {
            let _ = write!(text, ", {rate:.0}/s");
        }
        if !detail.is_empty() {
            text.push_str("; ");
            text.push_str(detail);
        }
        text
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// `93` → `1m33s`.
fn duration(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}
