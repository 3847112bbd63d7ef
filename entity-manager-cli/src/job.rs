//! What the resumable commands (`purge`, `migrate`) share: their checkpoint file, written
//! atomically after every page, and the run around their pages (a spinner on a terminal,
//! `--stop-after`, the message that says how to resume).

use std::io::{self, BufRead, IsTerminal};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

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
pub(crate) struct Run<'a> {
    command: &'static str,
    /// `--checkpoint`, saved after every page.
    checkpoint: Option<&'a Path>,
    /// Where the position goes if the run stops: the checkpoint, or a file named after the table.
    resume: PathBuf,
    stop_after: Option<u64>,
    bar: Option<indicatif::ProgressBar>,
    /// Pages done in this run.
    pub(crate) pages: u64,
    save_error: Option<Failure>,
}

impl<'a> Run<'a> {
    /// A run of `command` on `table`; the spinner (on a terminal only) starts with `message`.
    pub(crate) fn new(
        command: &'static str,
        table: &str,
        checkpoint: Option<&'a Path>,
        stop_after: Option<u64>,
        message: String,
    ) -> Self {
        let resume = checkpoint.map_or_else(
            || PathBuf::from(format!("entity-manager-{command}-{table}.checkpoint.json")),
            Path::to_path_buf,
        );
        let bar = io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_message(message);
            bar
        });
        Self {
            command,
            checkpoint,
            resume,
            stop_after,
            bar,
            pages: 0,
            save_error: None,
        }
    }

    /// Saves `state` to the checkpoint file, if there is one.
    pub(crate) fn save<T: Serialize>(&self, state: &T) -> Result<(), Failure> {
        self.checkpoint
            .map_or(Ok(()), |path| save(path, self.command, state))
    }

    /// After a page: saves `state`, shows `progress`, and says whether to go on (not after a
    /// failed save, nor past `--stop-after`).
    pub(crate) fn page<T: Serialize>(&mut self, state: &T, progress: String) -> ControlFlow<()> {
        self.pages += 1;
        if let Err(e) = self.save(state) {
            self.save_error = Some(e);
            return ControlFlow::Break(());
        }
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

    /// Once the pages are done: clears the spinner; a failed save is the run's failure.
    pub(crate) fn end(&mut self) -> Result<(), Failure> {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        self.save_error.take().map_or(Ok(()), Err)
    }

    /// The run finished: its checkpoint file is no longer needed.
    pub(crate) fn complete(&self) -> Result<(), Failure> {
        match self.checkpoint {
            Some(path) => std::fs::remove_file(path).map_err(|e| {
                Failure::Operation(format!(
                    "{} complete, but the checkpoint {} could not be removed: {e}",
                    self.command,
                    path.display()
                ))
            }),
            None => Ok(()),
        }
    }

    /// The run stopped at `--stop-after` with `done` so far; see [`stopped`](Self::stopped).
    pub(crate) fn stopped_early<T: Serialize>(&self, state: &T, done: &str) -> Failure {
        let why = format!(
            "{} stopped after {} pages (--stop-after)",
            self.command, self.pages
        );
        self.stopped(state, &why, done)
    }

    /// The run stopped (`why`) with `done` so far: the failure, which says how to resume. The
    /// position is saved first when no `--checkpoint` was given.
    pub(crate) fn stopped<T: Serialize>(&self, state: &T, why: &str, done: &str) -> Failure {
        if self.checkpoint.is_none()
            && let Err(e) = save(&self.resume, self.command, state)
        {
            return Failure::Operation(format!("{why}; the position could not be saved ({e:?})"));
        }
        Failure::Operation(format!(
            "{why}; {done} so far; to resume, run the same command with --checkpoint {}",
            self.resume.display()
        ))
    }
}
