//! What the resumable commands (`purge`, `migrate`, `audit`) share: the confirmation, and the
//! run around their pages (a spinner on a terminal with the items per second, `--stop-after`).
//! Their journals (checkpoints) are in [`workers`](crate::workers); the checkpoint file of
//! `stream` is here.

use std::io::{self, BufRead, IsTerminal};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::Failure;

/// A checkpoint file: `{"command": …, …the command's state}`.
#[derive(Serialize)]
struct File<'a, T> {
    command: &'a str,
    #[serde(flatten)]
    state: &'a T,
}

/// The state saved in `path` by `command`, or `None` when there is no such file.
pub(crate) fn load<T: DeserializeOwned>(path: &Path, command: &str) -> Result<Option<T>, Failure> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Failure::Input(format!(
                "cannot read the checkpoint {}: {e}",
                path.display()
            )));
        }
    };
    let bad = |why: String| {
        Failure::Input(format!(
            "{} is not a {command} checkpoint ({why}); remove it to start over",
            path.display()
        ))
    };
    let mut value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    match value.as_object_mut().and_then(|o| o.remove("command")) {
        Some(serde_json::Value::String(c)) if c == command => {}
        _ => return Err(bad(format!("no `\"command\": \"{command}\"`"))),
    }
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| bad(e.to_string()))
}

/// Writes `state` to `path` atomically (a temporary file renamed over it).
pub(crate) fn save<T: Serialize>(path: &Path, command: &str, state: &T) -> Result<(), Failure> {
    let text = serde_json::to_vec_pretty(&File { command, state })
        .map_err(|e| Failure::Operation(format!("cannot serialize the checkpoint: {e}")))?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            Failure::Operation(format!(
                "cannot write the checkpoint {}: {e}",
                path.display()
            ))
        })
}

/// Asks on the terminal whether to `action` (e.g. "delete every item of table Users"); without a
/// terminal, `--yes` is required (`hint` names another way out, e.g. " (or --dry-run)").
pub(crate) fn confirm(yes: bool, action: &str, hint: &str) -> Result<(), Failure> {
    if yes {
        return Ok(());
    }
    if !io::stdin().is_terminal() {
        return Err(Failure::Input(format!(
            "refusing to {action} without confirmation: stdin is not a terminal; pass --yes{hint}"
        )));
    }
    eprint!("{action}? [y/N] ");
    let mut answer = String::new();
    io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| Failure::Input(format!("cannot read the answer: {e}")))?;
    if matches!(answer.trim(), "y" | "Y" | "yes") {
        Ok(())
    } else {
        Err(Failure::Input("not confirmed: nothing changed".to_owned()))
    }
}

/// One run of a resumable command over pages.
pub(crate) struct Run {
    stop_after: Option<u64>,
    bar: Option<indicatif::ProgressBar>,
    started: Instant,
    /// Pages done in this run.
    pub(crate) pages: u64,
}

impl Run {
    /// A run whose spinner (on a terminal only) starts with `message`.
    pub(crate) fn new(stop_after: Option<u64>, message: String) -> Self {
        let bar = io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_message(message);
            bar
        });
        Self {
            stop_after,
            bar,
            started: Instant::now(),
            pages: 0,
        }
    }

    /// Items per second since the run started, for `items` items.
    pub(crate) fn rate(&self, items: u64) -> f64 {
        #[allow(clippy::cast_precision_loss)] // a rate to show
        let items = items as f64;
        items / self.started.elapsed().as_secs_f64().max(1e-3)
    }

    /// After a page (recorded in the journal by the job): shows `progress` and says whether to
    /// go on (not past `--stop-after`).
    pub(crate) fn tick(&mut self, progress: String) -> ControlFlow<()> {
        self.pages += 1;
        if let Some(bar) = &self.bar {
            bar.set_message(progress);
            bar.tick();
        }
        if self.stop_after.is_some_and(|n| self.pages >= n) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    /// Once the pages are done: clears the spinner.
    pub(crate) fn end(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    /// Why the run stopped at `--stop-after`.
    pub(crate) fn why_stopped(&self, command: &str) -> String {
        format!(
            "{command} stopped after {} pages (--stop-after)",
            self.pages
        )
    }
}
