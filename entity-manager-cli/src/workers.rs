//! Bulk jobs split across workers: `--worker` (or the job engine's index variable), each
//! worker's journal, and `report merge`, which adds the workers' journals into the job's totals.
//!
//! A Kubernetes Indexed Job of 16 workers over 4,096 segments, each with its journal on a
//! shared volume:
//!
//! ```yaml
//! apiVersion: batch/v1
//! kind: Job
//! metadata: { name: migrate-users }
//! spec:
//!   completionMode: Indexed
//!   completions: 16
//!   parallelism: 16
//!   backoffLimit: 64          # a killed worker is restarted and resumes from its journal
//!   template:
//!     spec:
//!       restartPolicy: OnFailure
//!       containers:
//!         - name: worker
//!           image: example/entity-manager
//!           command: [sh, -c]
//!           args:
//!             - entity-manager migrate --from /cfg/a.json --to /cfg/b.json --table Users
//!               --segments 4096 --workers 16 --yes --json
//!               --checkpoint /journals/migrate-$JOB_COMPLETION_INDEX.jsonl
//!           volumeMounts: [{ name: journals, mountPath: /journals }]
//!       volumes: [{ name: journals, persistentVolumeClaim: { claimName: journals } }]
//! ```
//!
//! The same as an AWS Batch array job (`AWS_BATCH_JOB_ARRAY_INDEX` from 0 to 15, journals on
//! EFS):
//!
//! ```sh
//! aws batch submit-job --job-name migrate-users --job-queue bulk --array-properties size=16 \
//!   --retry-strategy attempts=10 --job-definition entity-manager \
//!   --container-overrides 'command=["sh","-c","entity-manager migrate --from /cfg/a.json --to /cfg/b.json --table Users --segments 4096 --workers 16 --yes --json --checkpoint /efs/migrate-$AWS_BATCH_JOB_ARRAY_INDEX.jsonl"]'
//! # once they are done (or at any time): the job's totals and what is left
//! entity-manager report merge /efs/migrate-*.jsonl
//! ```

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use entity_manager::job::{JobHeader, JobKind, JobReport, Journal, SegmentState, merge_files};
use entity_manager::scan::{SegmentRange, WORKER_INDEX_VARIABLES};
use serde_json::{Value, json};

use crate::Failure;

/// Which segments this worker owns.
#[derive(Debug, Args)]
pub(crate) struct ShareArgs {
    /// This worker's share of the `--segments`: `INDEX/WORKERS` (from 0: `3/16` is the fourth
    /// of 16 even shares) or `FIRST..END` (segments, END excluded). Without it, the index comes
    /// from `JOB_COMPLETION_INDEX` (a Kubernetes Indexed Job) or `AWS_BATCH_JOB_ARRAY_INDEX`
    /// (an AWS Batch array job) when `--workers` is given; else this worker reads every segment.
    ///
    /// Each worker keeps its own journal (`--checkpoint`, on a volume its restarts see) and
    /// resumes from it; `report merge` adds the journals into the job's totals. Kubernetes
    /// Indexed Job (`completionMode: Indexed`, `completions: 16`, `restartPolicy: OnFailure`),
    /// container args:
    ///   entity-manager migrate --from a.json --to b.json --table Users --yes --json
    ///     --segments 4096 --workers 16 --checkpoint /journals/w-$(JOB_COMPLETION_INDEX).jsonl
    /// AWS Batch array job (`--array-properties size=16 --retry-strategy attempts=10`),
    /// command:
    ///   sh -c 'entity-manager migrate … --segments 4096 --workers 16
    ///     --checkpoint /efs/w-$AWS_BATCH_JOB_ARRAY_INDEX.jsonl'
    /// then: entity-manager report merge /efs/w-*.jsonl
    #[arg(long, value_name = "INDEX/WORKERS|FIRST..END", verbatim_doc_comment)]
    worker: Option<String>,
    /// The number of workers of the job, whose index this worker takes from the environment
    /// (see `--worker`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..), conflicts_with = "worker")]
    workers: Option<u32>,
}

impl ShareArgs {
    /// The segments this worker owns of a split into `segments`.
    pub(crate) fn range(&self, segments: u32) -> Result<SegmentRange, Failure> {
        let input = |e: &dyn std::fmt::Display| Failure::Input(format!("--worker: {e}"));
        if let Some(text) = &self.worker {
            return SegmentRange::parse(segments, text).map_err(|e| input(&e));
        }
        match self.workers {
            Some(workers) => SegmentRange::from_env(segments, workers)
                .map_err(|e| input(&e))?
                .ok_or_else(|| {
                    Failure::Input(format!(
                        "--workers {workers} needs the worker's index in {}",
                        WORKER_INDEX_VARIABLES.join(" or ")
                    ))
                }),
            None => SegmentRange::all(segments).map_err(|e| input(&e)),
        }
    }
}

/// A worker's journal file: `--checkpoint`, resumed when it exists; without it, a file named
/// after the command, the table and the segments, started afresh.
pub(crate) struct JournalFile {
    pub(crate) journal: Journal,
    pub(crate) path: PathBuf,
    /// Whether this worker owns only part of the segments (its journal is then kept when it
    /// completes, for `report merge`).
    pub(crate) split: bool,
    /// The journal held for this run: another job given it is refused.
    _held: crate::job::Held,
}

impl JournalFile {
    pub(crate) fn open(
        header: JobHeader,
        command: &str,
        table: &str,
        checkpoint: Option<&Path>,
    ) -> Result<Self, Failure> {
        let range = header.range;
        let split = range.len() != range.total;
        let path = checkpoint.map_or_else(
            || {
                let part = if split {
                    format!("-{}-{}", range.first, range.end)
                } else {
                    String::new()
                };
                PathBuf::from(format!(
                    "entity-manager-{command}-{table}{part}.checkpoint.json"
                ))
            },
            Path::to_path_buf,
        );
        // held before anything is read or removed: another run of the job on this journal
        // (the same --checkpoint, or the same default name) is refused
        let held = crate::job::hold(&path)?;
        if checkpoint.is_none() {
            // no --checkpoint: a new job, whatever an earlier stopped run left here
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(Failure::Operation(format!(
                        "cannot replace {}: {e}",
                        path.display()
                    )));
                }
            }
        }
        let journal = Journal::open(&path, header).map_err(|e| match e {
            entity_manager::job::JournalError::Io { .. } => Failure::Operation(e.to_string()),
            _ => Failure::Input(e.to_string()),
        })?;
        Ok(Self {
            journal,
            path,
            split,
            _held: held,
        })
    }

    /// The job completed: a whole-table journal is removed, a worker's share kept for
    /// `report merge`.
    pub(crate) fn complete(&self, command: &str) -> Result<(), Failure> {
        if self.split {
            return Ok(());
        }
        std::fs::remove_file(&self.path).map_err(|e| {
            Failure::Operation(format!(
                "{command} complete, but the checkpoint {} could not be removed: {e}",
                self.path.display()
            ))
        })
    }

    /// Whether the job has started: its journal holds more than its header (a page begun
    /// in this run or an earlier one).
    pub(crate) fn started(&self) -> bool {
        self.journal.entries().len() > 1
    }

    /// Removes the journal of a job that never started (a refused confirmation, a missing
    /// table): nothing to resume.
    pub(crate) fn abandon(&self) {
        if !self.started() {
            let _ = std::fs::remove_file(&self.path);
        }
    }

    /// The failure of a run that stopped (`why`) with `done` so far: it says how to resume. A
    /// job that never started leaves no journal and needs no resuming.
    pub(crate) fn stopped(&self, why: &str, done: &str) -> Failure {
        if !self.started() {
            self.abandon();
            return Failure::Operation(format!("{why}; nothing was changed"));
        }
        Failure::Operation(format!(
            "{why}; {done} so far; to resume, run the same command with --checkpoint {}",
            self.path.display()
        ))
    }

    /// The run failed with `err` (the job `what` on `table`) with `done` so far: the operator's
    /// message of [`explain`](crate::connection::explain), then how to resume (see
    /// [`stopped`](Self::stopped)).
    pub(crate) fn failed(
        &self,
        what: &str,
        table: &str,
        err: &(dyn std::error::Error + 'static),
        done: &str,
    ) -> Failure {
        let (message, detail) = match crate::connection::explain(what, table, err) {
            Failure::Detailed { message, detail } => (message, detail),
            other => (other.message(), String::new()),
        };
        match self.stopped(&message, done) {
            Failure::Operation(message) => Failure::Detailed { message, detail },
            other => other,
        }
    }
}

/// The worker's part of the JSON output: its segments and their state.
pub(crate) fn worker_json(report: &JobReport, range: SegmentRange) -> Value {
    json!({
        "segments": { "total": range.total, "first": range.first, "end": range.end },
        "state": spans_json(report),
    })
}

fn spans_json(report: &JobReport) -> Value {
    let spans = |state| -> Vec<[u32; 2]> {
        report
            .spans(state)
            .into_iter()
            .map(|r| [r.start, r.end])
            .collect()
    };
    json!({
        "done": spans(SegmentState::Done),
        "inProgress": spans(SegmentState::InProgress),
        "notStarted": spans(SegmentState::NotStarted),
    })
}

/// `report …`.
#[derive(Debug, Subcommand)]
pub(crate) enum ReportAction {
    /// Merges the journals (`--checkpoint` files) of the workers of one job into the job's
    /// totals, each record counted once, and says which segments are done, in progress or
    /// never started (exit 1 unless every segment is done and no two journals cover one
    /// segment; exit 3 when a complete audit found misplaced or unreadable records). Re-run a
    /// missing span with `--worker FIRST..END`.
    Merge {
        /// The journals, one per worker (any order).
        #[arg(required = true)]
        journals: Vec<PathBuf>,
        /// Where the merge spills the keys of the records the job wrote and found, in one
        /// file per 64 MB of journals by key hash, so that it holds one file's keys in memory
        /// at a time, not the job's (a migration of 10⁹ records: about 60 GB of keys); needs
        /// free space about the journals' size. Default: the system's temporary directory.
        #[arg(long)]
        spill: Option<PathBuf>,
    },
}

/// Journal bytes per spill partition of `report merge`: a partition's keys, in memory at once.
const SPILL_PARTITION_BYTES: u64 = 64 << 20;

/// The journals merged: the job's report, and the JSON `report merge --json` prints.
pub(crate) struct Merged {
    pub(crate) report: JobReport,
    pub(crate) json: Value,
    /// The counts of the job's kind (`written`/`counts`/`other`, `deleted`/`counts` or
    /// `scanned`/`misplaced`/`unreadable`).
    pub(crate) counts: Value,
    /// Whether a complete audit found misplaced or unreadable records.
    pub(crate) findings: bool,
}

/// Merges the journals (spilling to `spill`, else the temporary directory) as `report merge`.
pub(crate) fn merged(journals: &[PathBuf], spill: Option<&Path>) -> Result<Merged, Failure> {
    let bytes: u64 = journals
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum();
    let partitions = usize::try_from(bytes / SPILL_PARTITION_BYTES + 1)
        .unwrap_or(1)
        .min(512);
    let spill = spill.map_or_else(
        || std::env::temp_dir().join(format!("entity-manager-merge-{}", std::process::id())),
        Path::to_path_buf,
    );
    let report =
        merge_files(journals, &spill, partitions).map_err(|e| Failure::Input(e.to_string()))?;
    let _ = std::fs::remove_dir(&spill);
    let t = &report.tally;
    let counts = match report.kind {
        JobKind::Migrate => json!({
            "written": t.migrate.total().written(),
            "counts": t.migrate.entities,
            "other": t.migrate.other,
        }),
        JobKind::Purge => json!({
            "deleted": t.deleted.values().sum::<u64>(),
            "counts": t.deleted,
        }),
        JobKind::Audit => json!({
            "scanned": t.scanned,
            "misplaced": t.misplaced,
            "unreadable": t.unreadable,
        }),
    };
    let findings =
        report.kind == JobKind::Audit && !(t.misplaced.is_empty() && t.unreadable.is_empty());
    let ok = report.complete() && report.overlaps.is_empty() && !findings;
    let mut out = json!({
        "ok": ok,
        "kind": report.kind.to_string(),
        "job": report.job,
        "totalSegments": report.total_segments,
        "complete": report.complete(),
        "segments": spans_json(&report),
        "overlaps": report.overlaps,
    });
    if let (Some(out), Value::Object(counts)) = (out.as_object_mut(), counts.clone()) {
        out.extend(counts);
    }
    Ok(Merged {
        report,
        json: out,
        counts,
        findings,
    })
}

pub(crate) fn report(action: &ReportAction, json: bool) -> Result<(), Failure> {
    let ReportAction::Merge { journals, spill } = action;
    let Merged {
        report,
        json: out,
        counts,
        findings,
    } = merged(journals, spill.as_deref())?;
    let t = &report.tally;
    let missing: Vec<String> = report
        .spans(SegmentState::NotStarted)
        .into_iter()
        .chain(report.spans(SegmentState::InProgress))
        .map(|r| format!("{}..{}", r.start, r.end))
        .collect();
    if json {
        println!("{out}");
    } else {
        println!(
            "{} job `{}`: {} of {} segments done, {} in progress, {} not started",
            report.kind,
            report.job,
            report.count(SegmentState::Done),
            report.total_segments,
            report.count(SegmentState::InProgress),
            report.count(SegmentState::NotStarted),
        );
        println!("  totals: {counts}");
        if !missing.is_empty() {
            println!(
                "  to finish, run a worker with --worker SPAN (resuming the journals of the spans in progress): {}",
                missing.join(" ")
            );
        }
    }
    // an unfinished job is a failure (exit 1); an audit's verdict, its findings (exit 3)
    if !report.overlaps.is_empty() {
        return Err(Failure::Unfinished(format!(
            "{} segments are covered by two journals: their records may be counted twice (the table is right)",
            report.overlaps.len()
        )));
    }
    if !report.complete() {
        return Err(Failure::Unfinished(format!(
            "the job is not finished: segments {} are left",
            missing.join(" ")
        )));
    }
    if findings {
        return Err(Failure::Findings(format!(
            "the audit found {} misplaced and {} unreadable records",
            t.misplaced.len(),
            t.unreadable.len()
        )));
    }
    Ok(())
}
