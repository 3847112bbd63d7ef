//! Bulk jobs split across worker processes on DynamoDB Local (issue 32): records under
//! configuration A (the User service), 4 workers over 64 segments started at once, two of
//! them killed (SIGKILL) at random points and restarted; afterwards the table equals the oracle and
//! `report merge` counts each record exactly once. For migrate, purge and audit.
//!
//! The size is `EM_WORKERS_RECORDS` (default 2,000 records, 90 % users, for the time of a
//! debug build on CI); the figure is
//! `EM_WORKERS_RECORDS=20000 bash .ci/dynamodb-local.sh cargo test -p entity-manager-cli --test cli_workers`.
//! Every run prints its seed; `EM_WORKERS_SEED=<n>` replays the kill points.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use entity_manager::model::ShardSpace;
use entity_manager::store::{DynamoStore, Store, WriteRequest};
use entity_manager::{Item, Schema};
use serde_json::{Value, json};

mod support;

use support::{keyed, runtime, sorted, table_items, text};

use support::{
    BoxError, TestResult, assert_code, bin, endpoint, run, stdout_json, store, temp_json,
};

const WORKERS: u32 = 4;
const SEGMENTS: &str = "64";

/// Schema A: the User service of the golden vectors.
fn config_a() -> Result<Value, BoxError> {
    support::user_service_config()
}

/// Schema B: A with a new bump (3 bits, 3 characters from 1,740,000,000,000 on): the users
/// created since then move.
fn config_b() -> Result<Value, BoxError> {
    let mut b = config_a()?;
    let bumps = b["entities"]["user"]["shardBumps"]
        .as_array_mut()
        .ok_or("no shardBumps")?;
    bumps.push(json!({ "timestamp": 1_740_000_000_000u64, "charBits": 3, "chars": 3 }));
    Ok(b)
}

fn size() -> u64 {
    std::env::var("EM_WORKERS_RECORDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000)
}

/// A seeded generator (splitmix64), so that a failing run can be replayed.
struct Rng(u64);

impl Rng {
    fn from_env() -> Self {
        let seed = std::env::var("EM_WORKERS_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(11, |d| d.as_secs())
            });
        eprintln!("EM_WORKERS_SEED={seed}");
        Self(seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n.max(1)
    }
}

/// `n` records: 90 % users created from 2023 to 2025 (every window of both schedules), 10 %
/// emails.
fn records(n: u64) -> Result<Vec<(&'static str, Item)>, BoxError> {
    let users = n * 9 / 10;
    let mut out = Vec::new();
    for i in 0..users {
        let created = 1_690_000_000_000u64 + (i * 7_919 % users) * (60_000_000_000 / users.max(1));
        let mut user = json!({ "userId": format!("u{i:06}"), "created": created });
        if i % 3 != 0 {
            user["firstNameCanonical"] = json!(format!("f{}", i % 5));
            user["lastNameCanonical"] = json!(format!("l{}", i % 7));
        }
        out.push(("user", serde_dynamo::to_item(user)?));
    }
    for i in 0..n - users {
        let email = json!({
            "email": format!("e{i:06}@example.com"),
            "userId": format!("u{i:06}"),
            "created": 1_729_000_000_000u64 + i * 60_000,
        });
        out.push(("email", serde_dynamo::to_item(email)?));
    }
    Ok(out)
}

fn fill(store: &DynamoStore, items: &[Item]) -> TestResult {
    runtime()?.block_on(async {
        for chunk in items.chunks(500) {
            store
                .batch_write(chunk.iter().cloned().map(WriteRequest::Put).collect())
                .await?;
        }
        Ok::<_, BoxError>(())
    })
}

/// The journal of worker `w` of job `job`, removed if an earlier run left it.
fn journal(job: &str, w: u32) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "em-cli-workers-{job}-{}-{w}.jsonl",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    path
}

fn start(args: &[String]) -> Result<Child, BoxError> {
    Ok(bin()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?)
}

/// Lines of the journal whose page ended inside a segment: progress made.
fn progress(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"entry\":\"done\""))
        .count()
}

/// Starts the 4 workers of a job at once (`args(w, journal)` is the command of worker `w`);
/// workers 0 and 2 are killed (SIGKILL) once their journal records a random number of pages (1 to
/// 12), then started again. Every worker must then exit with one of `codes`. Returns the journals and how many
/// workers were killed.
fn run_job(
    job: &str,
    rng: &mut Rng,
    codes: &[i32],
    args: impl Fn(u32, &Path) -> Vec<String>,
) -> Result<(Vec<PathBuf>, u32), BoxError> {
    let journals: Vec<PathBuf> = (0..WORKERS).map(|w| journal(job, w)).collect();
    let mut children: Vec<Child> = journals
        .iter()
        .zip(0..)
        .map(|(j, w)| start(&args(w, j)))
        .collect::<Result<_, _>>()?;
    let mut killed = 0;
    for w in [0u32, 2] {
        let at = 1 + usize::try_from(rng.below(12))?;
        let path = &journals[usize::try_from(w)?];
        let child = &mut children[usize::try_from(w)?];
        let started = Instant::now();
        while progress(path) < at && child.try_wait()?.is_none() {
            if started.elapsed() > Duration::from_mins(5) {
                return Err(format!("worker {w} of {job} made no progress").into());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        if child.try_wait()?.is_none() {
            child.kill()?; // SIGKILL
            let _ = child.wait()?;
            killed += 1;
            *child = start(&args(w, path))?;
        }
    }
    for (w, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output()?;
        assert!(
            out.status.code().is_some_and(|c| codes.contains(&c)),
            "worker {w} of {job}: {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!(
            "worker {w} of {job}: {}",
            String::from_utf8_lossy(&out.stdout).trim()
        );
    }
    Ok((journals, killed))
}

fn merge(journals: &[PathBuf]) -> Result<std::process::Output, BoxError> {
    let mut args = vec!["report".to_owned(), "merge".to_owned(), "--json".to_owned()];
    args.extend(journals.iter().map(|p| p.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Ok(run(&args)?)
}

/// A table of configuration B's layout holding `items`, for `test`; runs `body` and deletes it.
fn with_table(
    endpoint: &str,
    test: &str,
    b_path: &str,
    items: &[Item],
    body: impl FnOnce(&str, &DynamoStore) -> TestResult,
) -> TestResult {
    let b = Schema::from_ts_config(&config_b()?, ShardSpace::Product)?;
    let table = format!("cli-workers-{test}-{}", std::process::id());
    let out = run(&[
        "table",
        "create",
        "--config",
        b_path,
        "--table",
        &table,
        "--endpoint",
        endpoint,
    ])?;
    assert_code(&out, 0);
    let store = store(endpoint, &table, &b)?;
    let result = fill(&store, items).and_then(|()| body(&table, &store));
    let out = run(&[
        "table",
        "delete",
        "--config",
        b_path,
        "--table",
        &table,
        "--endpoint",
        endpoint,
    ])?;
    assert_code(&out, 0);
    result
}

/// The command of worker `w`: `command`, then the split, the page size, the worker's share,
/// the endpoint and its journal.
fn worker_args(command: &[&str], w: u32, journal: &Path, endpoint: &str) -> Vec<String> {
    let mut args: Vec<String> = command.iter().map(|s| (*s).to_owned()).collect();
    args.extend(
        [
            "--segments",
            SEGMENTS,
            "--page-size",
            "25",
            "--endpoint",
            endpoint,
        ]
        .map(str::to_owned),
    );
    args.extend([
        "--worker".to_owned(),
        format!("{w}/{WORKERS}"),
        "--checkpoint".to_owned(),
        journal.display().to_string(),
    ]);
    args
}

#[test]
fn migrate_split_across_killed_worker_processes() -> TestResult {
    migrate_across_killed_worker_processes(None)
}

/// `--exclusive`: a worker killed between a page's batch of puts and its batch of
/// deletes leaves both copies of a record, which it settles when restarted.
#[test]
fn migrate_exclusive_across_killed_worker_processes() -> TestResult {
    migrate_across_killed_worker_processes(Some("--exclusive"))
}

fn migrate_across_killed_worker_processes(exclusive: Option<&str>) -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let mut rng = Rng::from_env();
    let job = format!("migrate{}", exclusive.unwrap_or_default());
    // files of this job's own (the guarded and exclusive runs go at once)
    let (a_path, b_path) = (
        temp_json(&format!("workers-{job}"), "a", &config_a()?)?,
        temp_json(&format!("workers-{job}"), "b", &config_b()?)?,
    );
    let (a_arg, b_arg) = (a_path.display().to_string(), b_path.display().to_string());
    let a = Schema::from_ts_config(&config_a()?, ShardSpace::Product)?;
    let b = Schema::from_ts_config(&config_b()?, ShardSpace::Product)?;
    let records = records(size())?;
    let before = keyed(&a, &records)?;
    let after = keyed(&b, &records)?;
    let users = records.iter().filter(|(e, _)| *e == "user").count() as u64;
    let emails = records.len() as u64 - users;
    let moved = before
        .iter()
        .zip(&after)
        .filter(|(x, y)| text(x, "hashKey") != text(y, "hashKey"))
        .count() as u64;
    assert!(moved > 0 && moved < users, "the oracle moves {moved} users");
    with_table(&endpoint, &job, &b_arg, &before, |table, store| {
        let started = Instant::now();
        let (journals, killed) = run_job(&job, &mut rng, &[0], |w, journal| {
            let mut command = vec![
                "migrate", "--from", &a_arg, "--to", &b_arg, "--table", table,
            ];
            command.extend(["--yes", "--json"]);
            command.extend(exclusive);
            worker_args(&command, w, journal, &endpoint)
        })?;
        eprintln!(
            "{job}: {} records, 4 workers, {killed} killed, {:.1} s",
            records.len(),
            started.elapsed().as_secs_f64()
        );
        assert_eq!(
            table_items(store)?,
            sorted(after.clone()),
            "the table is not B's"
        );
        let out = merge(&journals)?;
        assert_code(&out, 0);
        let body = stdout_json(&out)?;
        assert_eq!(body["complete"], json!(true));
        let user = &body["counts"]["user"];
        assert_eq!(user["scanned"], json!(users), "{body}");
        assert_eq!(user["moved"], json!(moved), "{body}");
        assert_eq!(user["unchanged"], json!(users - moved), "{body}");
        assert_eq!(user["migratedBefore"], json!(0), "{body}");
        assert_eq!(body["counts"]["email"]["scanned"], json!(emails), "{body}");
        assert_eq!(
            body["counts"]["email"]["unchanged"],
            json!(emails),
            "{body}"
        );
        // a journal missing: the merge says which segments were never started
        let out = merge(&journals[1..])?;
        assert_code(&out, 1);
        let body = stdout_json(&out)?;
        assert_eq!(body["segments"]["notStarted"], json!([[0, 16]]));
        Ok(())
    })
}

#[test]
fn purge_split_across_killed_worker_processes() -> TestResult {
    purge_across_killed_worker_processes(None)
}

#[test]
fn purge_exclusive_across_killed_worker_processes() -> TestResult {
    purge_across_killed_worker_processes(Some("--exclusive"))
}

fn purge_across_killed_worker_processes(exclusive: Option<&str>) -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let mut rng = Rng::from_env();
    let job = format!("purge{}", exclusive.unwrap_or_default());
    // files of this job's own (the guarded and exclusive runs go at once)
    let b_path = temp_json(&format!("workers-{job}"), "b", &config_b()?)?;
    let b_arg = b_path.display().to_string();
    let a = Schema::from_ts_config(&config_a()?, ShardSpace::Product)?;
    let records = records(size())?;
    let items = keyed(&a, &records)?;
    let users = records.iter().filter(|(e, _)| *e == "user").count() as u64;
    with_table(&endpoint, &job, &b_arg, &items, |table, store| {
        let started = Instant::now();
        let (journals, killed) = run_job(&job, &mut rng, &[0], |w, journal| {
            // the table's own schema (B): another configuration is a finding (issue 48)
            let mut command = vec!["purge", &b_arg, "--all", "--table", table];
            command.extend(["--yes", "--json"]);
            command.extend(exclusive);
            worker_args(&command, w, journal, &endpoint)
        })?;
        eprintln!(
            "{job}: {} records, 4 workers, {killed} killed, {:.1} s",
            records.len(),
            started.elapsed().as_secs_f64()
        );
        assert_eq!(table_items(store)?, Vec::<Item>::new(), "items left");
        let out = merge(&journals)?;
        assert_code(&out, 0);
        let body = stdout_json(&out)?;
        assert_eq!(body["deleted"], json!(records.len()), "{body}");
        assert_eq!(body["counts"]["user"], json!(users), "{body}");
        assert_eq!(
            body["counts"]["email"],
            json!(records.len() as u64 - users),
            "{body}"
        );
        Ok(())
    })
}

#[test]
fn audit_split_across_killed_worker_processes() -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let mut rng = Rng::from_env();
    let b_path = temp_json("workers-audit", "b", &config_b()?)?;
    let b_arg = b_path.display().to_string();
    let a = Schema::from_ts_config(&config_a()?, ShardSpace::Product)?;
    let b = Schema::from_ts_config(&config_b()?, ShardSpace::Product)?;
    let records = records(size())?;
    let before = keyed(&a, &records)?;
    let mut misplaced: Vec<String> = before
        .iter()
        .zip(keyed(&b, &records)?)
        .filter(|(x, y)| text(x, "hashKey") != text(y, "hashKey"))
        .map(|(x, _)| text(x, "userId"))
        .collect();
    misplaced.sort();
    let users = records.iter().filter(|(e, _)| *e == "user").count() as u64;
    with_table(&endpoint, "audit", &b_arg, &before, |table, _| {
        // a worker that finds misplaced records exits 3: its findings
        let (journals, _) = run_job("audit", &mut rng, &[0, 3], |w, journal| {
            let mut command = vec!["audit", "--config", &b_arg, "--table", table];
            command.extend(["--json"]);
            worker_args(&command, w, journal, &endpoint)
        })?;
        // complete, with findings: exit 3
        let out = merge(&journals)?;
        assert_code(&out, 3);
        let body = stdout_json(&out)?;
        assert_eq!(body["complete"], json!(true), "{body}");
        assert_eq!(body["scanned"]["user"], json!(users), "{body}");
        let mut found: Vec<String> = body["misplaced"]
            .as_array()
            .ok_or("misplaced")?
            .iter()
            .filter_map(|m| m["unique"].as_str().map(str::to_owned))
            .collect();
        found.sort();
        assert_eq!(found, misplaced);
        Ok(())
    })
}
