//! What the resumable commands (`purge`, `migrate`, `audit`) share: the confirmation, and the
//! run around their pages (progress on stderr with the items per second, `--stop-after`,
//! Ctrl-C, the message that says how to resume). Their journals (checkpoints) are in
//! [`workers`](crate::workers); the checkpoint file of `stream` is here.

use std::io::{self, BufRead, IsTerminal};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::Failure;
use crate::progress::{Progress, Total};
use crate::signal;
use crate::workers::JournalFile;

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

/// A checkpoint this process holds: `<checkpoint>.lock`, locked by the operating system for as
/// long as the job runs (released when the process ends, killed or not), so that two jobs
/// never write one checkpoint. The lock file is removed when the job ends.
pub(crate) struct Held {
    path: PathBuf,
    _file: std::fs::File,
}

/// Holds `checkpoint` for this job, or says that another job holds it.
pub(crate) fn hold(checkpoint: &Path) -> Result<Held, Failure> {
    let mut path = checkpoint.as_os_str().to_owned();
    path.push(".lock");
    let path = PathBuf::from(path);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Failure::Operation(format!("cannot open {}: {e}", path.display())))?;
    match file.try_lock() {
        Ok(()) => Ok(Held { path, _file: file }),
        Err(std::fs::TryLockError::WouldBlock) => Err(Failure::Input(format!(
            "another job is running with the checkpoint {} (it holds {}): wait for it to end, or give this one another --checkpoint",
            checkpoint.display(),
            path.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => Err(Failure::Operation(format!(
            "cannot lock {}: {e}",
            path.display()
        ))),
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// ` at <endpoint> (~N items in the table, estimated by DynamoDB)`: what a confirmation names.
pub(crate) fn at(estimate: Option<u64>) -> String {
    let place = crate::connection::endpoint_described();
    match estimate {
        Some(n) => format!(" at {place} (~{n} items in the table, estimated by DynamoDB)"),
        None => format!(" at {place}"),
    }
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
    {
        use std::io::Write as _;
        // the prompt, then the answer on the same line (a closed stderr loses the prompt only)
        let mut stderr = io::stderr();
        let _ = write!(stderr, "{action}? [y/N] ").and_then(|()| stderr.flush());
    }
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
    command: &'static str,
    stop_after: Option<u64>,
    progress: Progress,
    started: Instant,
    /// Pages done in this run.
    pub(crate) pages: u64,
}

impl Run {
    /// A run of `command`, its progress labelled `message`; Ctrl-C and SIGTERM stop it after
    /// the page in flight from now on.
    pub(crate) fn new(
        command: &'static str,
        stop_after: Option<u64>,
        message: String,
    ) -> Result<Self, Failure> {
        signal::listen()?;
        Ok(Self {
            command,
            stop_after,
            progress: Progress::new(message, "items", None, 0),
            started: Instant::now(),
            pages: 0,
        })
    }

    /// Counts `unit` towards `total`, `before` of them done by earlier runs (a resumed
    /// journal).
    pub(crate) fn progress(
        &mut self,
        label: String,
        unit: &'static str,
        total: Option<Total>,
        before: u64,
    ) {
        self.progress = Progress::new(label, unit, total, before);
    }

    /// Items per second since the run started, for `items` items.
    pub(crate) fn rate(&self, items: u64) -> f64 {
        #[allow(clippy::cast_precision_loss)] // a rate to show
        let items = items as f64;
        items / self.started.elapsed().as_secs_f64().max(1e-3)
    }

    /// After a page (recorded in the journal by the job): shows `done` (with `detail`: the
    /// counts, items/s and capacity used) and says whether to go on (not past `--stop-after`,
    /// nor after Ctrl-C).
    pub(crate) fn tick(&mut self, done: u64, detail: &str) -> ControlFlow<()> {
        self.pages += 1;
        self.progress.update(done, detail);
        if signal::interrupted() || self.stop_after.is_some_and(|n| self.pages >= n) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    /// Once the pages are done: clears the progress line.
    pub(crate) fn end(&mut self) {
        self.progress.finish();
    }

    /// The run stopped on Ctrl-C or SIGTERM (exit 130) or at `--stop-after` (exit 1) with
    /// `done` so far: the failure, which says how to resume from the worker's journal `file`.
    pub(crate) fn stopped_early(&self, file: &JournalFile, done: &str) -> Failure {
        if signal::interrupted() {
            let why = format!("{} interrupted after {} pages", self.command, self.pages);
            return match file.stopped(&why, done) {
                Failure::Operation(message) => Failure::Interrupted(message),
                other => other,
            };
        }
        let why = format!(
            "{} stopped after {} pages (--stop-after)",
            self.command, self.pages
        );
        file.stopped(&why, done)
    }
}
