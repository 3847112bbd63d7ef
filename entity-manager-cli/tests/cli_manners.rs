//! How the `entity-manager` binary behaves as a process: a closed stdout, Ctrl-C, a missing
//! table, errors an operator reads, exit codes that tell a finding from a failure, stable
//! output, progress on stderr only.
//!
//! The table tests run against DynamoDB Local when `DYNAMODB_ENDPOINT` is set (`.ci/run`
//! starts it); they skip with a printed reason otherwise, except under `CI=true`.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use entity_manager::model::Profile;
use entity_manager::store::{Store, WriteRequest};
use entity_manager::{Item, Schema};
use serde_json::{Value, json};

mod support;

use support::{
    BoxError, TestResult, arg, assert_code, bin, drop_table, endpoint, on, run, run_with_stdin,
    stdout_json, stdout_lines, temp_json, user_service_config, user_table,
};

/// Writes `users` users and `emails` emails (keys added by the library) to `table`.
fn seed(endpoint: &str, table: &str, users: u64, emails: u64) -> TestResult {
    let config = user_service_config()?;
    let schema = Schema::from_ts_config(&config, Profile::Npm6_14)?;
    let store = support::store(endpoint, table, &schema)?;
    let mut writes = Vec::new();
    for i in 0..users {
        let raw: Item = serde_dynamo::to_item(json!({
            "userId": format!("u{i:04}"),
            "created": 1_720_000_000_000u64 + i * 86_400_000,
            "firstNameCanonical": "ann",
            "lastNameCanonical": format!("l{i:04}"),
        }))?;
        writes.push(WriteRequest::Put(schema.entity("user")?.add_keys(&raw)?));
    }
    for i in 0..emails {
        let raw: Item = serde_dynamo::to_item(json!({
            "email": format!("e{i:04}@example.com"),
            "userId": format!("u{i:04}"),
            "created": 1_729_000_000_000u64 + i,
        }))?;
        writes.push(WriteRequest::Put(schema.entity("email")?.add_keys(&raw)?));
    }
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(store.batch_write(writes))?;
    Ok(())
}

/// Runs the binary with its stdout a pipe whose reader has already gone (every write fails
/// with `EPIPE`).
fn run_into_closed_pipe(args: &[&str]) -> Result<Output, BoxError> {
    let mut child = bin()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    drop(child.stdout.take());
    Ok(child.wait_with_output()?)
}

/// Runs `entity-manager ARGS | head -1` in bash: the binary's exit code and stderr, and what
/// `head` printed.
fn run_into_head(args: &[&str]) -> Result<(Option<i32>, String, String), BoxError> {
    let script = r#"exe=$1; shift; "$exe" "$@" 2>"$EM_STDERR" | head -1; exit "${PIPESTATUS[0]}""#;
    let stderr = std::env::temp_dir().join(format!(
        "em-cli-head-{}-{}.txt",
        std::process::id(),
        RandomState::new().hash_one(args)
    ));
    let mut command = Command::new("bash");
    // the binary with the tests' environment (no AWS settings of the caller)
    let template = bin();
    for (key, value) in template.get_envs() {
        match value {
            Some(v) => command.env(key, v),
            None => command.env_remove(key),
        };
    }
    let out = command
        .arg("-c")
        .arg(script)
        .arg("em")
        .arg(template.get_program())
        .args(args)
        .env("EM_STDERR", &stderr)
        .stdin(Stdio::null())
        .output()?;
    let err = std::fs::read_to_string(&stderr).unwrap_or_default();
    let _ = std::fs::remove_file(&stderr);
    Ok((out.status.code(), String::from_utf8(out.stdout)?, err))
}

/// Fails when a closed stdout made the command panic or fail.
fn assert_quiet_end(what: &str, code: Option<i32>, stderr: &str) {
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
        "{what}: {stderr}"
    );
    assert_eq!(code, Some(0), "{what}: {stderr}");
}

/// Two jobs given one checkpoint: the second is refused (exit 2) while the first runs, before
/// it reads or writes anything; once the first has ended (here killed, as a crash would), the
/// checkpoint is free again.
#[test]
fn one_checkpoint_one_job() -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let (config, table) = user_table("held", &endpoint)?;
    let result = one_checkpoint_one_job_on(&config, &table, &endpoint);
    drop_table(&config, &table, &endpoint)?;
    result
}

fn one_checkpoint_one_job_on(config: &Path, table: &str, endpoint: &str) -> TestResult {
    let checkpoint = std::env::temp_dir().join(format!("em-cli-held-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&checkpoint);
    let mut args = on("import", config, table, endpoint)?;
    args.extend(["--checkpoint", arg(&checkpoint)?]);
    // the first waits on its stdin, holding the checkpoint
    let mut first = bin()
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let lock = std::path::PathBuf::from(format!("{}.lock", checkpoint.display()));
    while !lock.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = bin().args(&args).stdin(Stdio::null()).output()?;
    let _ = first.kill();
    let _ = first.wait();
    assert_code(&second, 2);
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("another job"),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    // the first is gone: the next run holds the checkpoint (its empty input imports nothing)
    let third = bin().args(&args).stdin(Stdio::null()).output()?;
    assert!(
        !String::from_utf8_lossy(&third.stderr).contains("another job"),
        "{}",
        String::from_utf8_lossy(&third.stderr)
    );
    assert!(!lock.exists(), "the lock file is removed when the job ends");
    let _ = std::fs::remove_file(&checkpoint);
    Ok(())
}

/// Commands whose stdout and stderr both go to a pipe whose reader is gone (`2>&1 | head -1`
/// once `head` has left): the exit code the command has for its outcome, never a panic (101).
#[test]
fn a_closed_stderr_keeps_the_exit_code() -> TestResult {
    let mut invalid = user_service_config()?;
    invalid["hashKey"] = json!("");
    invalid["entities"]["user"]["shardBumps"] =
        json!([{ "timestamp": 0, "charBits": 9, "chars": 1 }]);
    let invalid = temp_json("stderr", "invalid", &invalid)?;
    let config = temp_json("stderr", "config", &user_service_config()?)?;
    let bad_lines = "not json\n{\"userId\": 1}\n".repeat(200);
    for (args, stdin, code) in [
        (vec!["validate", "--config", arg(&invalid)?], "", 1),
        (
            vec!["validate", "--config", "/nonexistent/config.json"],
            "",
            2,
        ),
        (
            vec!["keys", "add", "--config", arg(&config)?, "--entity", "user"],
            bad_lines.as_str(),
            2,
        ),
    ] {
        let mut child = bin()
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        drop(child.stdout.take());
        drop(child.stderr.take());
        if let Some(mut input) = child.stdin.take() {
            use std::io::Write;
            // the command may stop reading early: a refused write is no failure of the test
            let _ = input.write_all(stdin.as_bytes());
        }
        let status = child.wait()?;
        assert_eq!(status.code(), Some(code), "{}", args.join(" "));
    }
    Ok(())
}

/// Every command that prints, with a reader that is gone, and the long outputs through
/// `| head -1` as well: exit 0, no panic, no error message.
#[test]
#[allow(clippy::too_many_lines)] // one list of commands
fn a_closed_stdout_ends_every_printing_command_quietly() -> TestResult {
    let config = temp_json("pipe", "config", &user_service_config()?)?;
    let c = arg(&config)?;
    // commands without a table
    let items: String = (0..3000)
        .map(|i: u64| {
            format!(
                "{{\"userId\":\"u{i}\",\"created\":{}}}\n",
                1_720_000_000_000u64 + i
            )
        })
        .collect::<Vec<_>>()
        .concat();
    let local: Vec<Vec<&str>> = vec![
        vec!["validate", "--config", c],
        vec!["validate", "--config", c, "--json"],
        vec!["table", "cloudformation", "--config", c, "--table", "T"],
        vec![
            "audit",
            "--config",
            c,
            "--entity",
            "user",
            "--bump",
            "timestamp=1800000000000,char-bits=3,chars=3",
        ],
    ];
    for args in &local {
        let out = run_into_closed_pipe(args)?;
        assert_quiet_end(
            &args.join(" "),
            out.status.code(),
            &String::from_utf8_lossy(&out.stderr),
        );
    }
    // keys add: 3000 lines through `| head -1`, and into a closed pipe
    let keys = ["keys", "add", "--config", c, "--entity", "user"];
    let mut child = bin()
        .args(keys)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    drop(child.stdout.take());
    if let Some(mut input) = child.stdin.take() {
        use std::io::Write;
        input.write_all(items.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    assert_quiet_end(
        "keys add",
        out.status.code(),
        &String::from_utf8_lossy(&out.stderr),
    );

    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let (config, table) = user_table("pipe", &endpoint)?;
    let c = arg(&config)?;
    let result = (|| -> TestResult {
        seed(&endpoint, &table, 400, 20)?;
        let at = [
            "--table",
            table.as_str(),
            "--endpoint-url",
            endpoint.as_str(),
        ];
        let ids: Vec<String> = (0..50).map(|i| format!("u{i:04}")).collect();
        let mut get = vec!["get", "--config", c, "--entity", "user"];
        for id in &ids {
            get.extend(["--id", id.as_str()]);
        }
        let printing: Vec<Vec<&str>> = vec![
            vec!["scan", "--config", c],
            vec!["table", "describe", "--config", c],
            vec!["table", "describe", "--config", c, "--json"],
            vec!["table", "drift", "--config", c],
            get,
            vec![
                "query", "--config", c, "--entity", "user", "--index", "created", "--all",
            ],
            vec![
                "query", "--config", c, "--entity", "user", "--index", "lastName", "--all",
                "--format", "dynamodb",
            ],
            vec!["audit", "--config", c],
            vec!["migrate", "--from", c, "--to", c, "--dry-run"],
            vec!["stream", "--config", c, "--no-follow"],
        ];
        for args in &printing {
            let args = [&args[..], &at[..]].concat();
            let what = args[..2].join(" ");
            let out = run_into_closed_pipe(&args)?;
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            // the stream command needs a table with a stream: its failure is no pipe matter
            if what.starts_with("stream") {
                assert!(!stderr.contains("panicked"), "{stderr}");
                continue;
            }
            assert_quiet_end(&what, out.status.code(), &stderr);
            // and through `| head -1`: the first line arrives, then a quiet end
            let (code, first, stderr) = run_into_head(&args)?;
            assert_quiet_end(&what, code, &stderr);
            assert_eq!(first.lines().count(), 1, "{what}: {first}");
        }
        Ok(())
    })();
    drop_table(&config, &table, &endpoint)?;
    result
}

/// A random number in `0..n` (no seed to keep: each run tries another page).
fn random_below(n: u64) -> u64 {
    RandomState::new().hash_one(Instant::now()) % n.max(1)
}

/// Starts `args`, waits until its checkpoint has recorded a position and then a random number
/// of milliseconds more (a random page), sends SIGINT, and returns its output.
fn interrupt_at_a_random_page(args: &[&str], checkpoint: &Path) -> Result<Output, BoxError> {
    let child = bin()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let started = Instant::now();
    while !std::fs::read_to_string(checkpoint)
        .unwrap_or_default()
        .contains("\"after\"")
    {
        if started.elapsed() > Duration::from_mins(1) {
            return Err("no checkpoint within 60 s".into());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(random_below(400)));
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()?;
    assert!(status.success());
    Ok(child.wait_with_output()?)
}

/// The users and emails of the table, as `(hashKey, rangeKey)` sorted.
fn scanned(c: &str, table: &str, endpoint: &str, entity: &str) -> Result<Vec<Value>, BoxError> {
    let out = run(&[
        "scan",
        "--config",
        c,
        "--table",
        table,
        "--endpoint-url",
        endpoint,
        "--entity",
        entity,
    ])?;
    assert_code(&out, 0);
    stdout_lines(&out)
}

/// SIGINT at a random page of a purge: it stops after the page in flight, saves the
/// checkpoint, says how to resume and exits 130; the same command then finishes the job, with
/// the counts of both runs.
#[test]
fn sigint_stops_a_purge_at_a_random_page_and_the_rerun_resumes() -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let (config, table) = user_table("sigint-purge", &endpoint)?;
    let c = arg(&config)?;
    let result = (|| -> TestResult {
        seed(&endpoint, &table, 150, 10)?;
        let checkpoint = checkpoint_path("sigint-purge");
        let purge = [
            "purge",
            "--config",
            c,
            "--table",
            &table,
            "--endpoint-url",
            &endpoint,
            "--entity",
            "user",
            "--yes",
            "--segments",
            "1",
            "--page-size",
            "1",
            "--checkpoint",
            arg(&checkpoint)?,
            "--json",
        ];
        let out = interrupt_at_a_random_page(&purge, &checkpoint)?;
        assert_code(&out, 130);
        let report = stdout_json(&out)?;
        let message = report["message"].as_str().unwrap_or_default();
        assert!(
            report["error"] == json!("interrupted")
                && message.contains(&format!("--checkpoint {}", checkpoint.display())),
            "{report}"
        );
        assert!(checkpoint.exists());
        let left = scanned(c, &table, &endpoint, "user")?.len();
        assert!(
            left > 0 && left < 150,
            "{left} users left after the interrupt"
        );

        let out = run(&purge)?;
        assert_code(&out, 0);
        assert_eq!(stdout_json(&out)?["counts"], json!({ "user": 150 }));
        assert!(!checkpoint.exists());
        assert!(scanned(c, &table, &endpoint, "user")?.is_empty());
        assert_eq!(scanned(c, &table, &endpoint, "email")?.len(), 10);
        Ok(())
    })();
    drop_table(&config, &table, &endpoint)?;
    result
}

fn checkpoint_path(test: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "em-cli-{test}-{}.checkpoint.json",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    path
}

/// SIGINT at a random page of a migration (a new shard bump: records move): exit 130 with how
/// to resume; the rerun finishes, and the audit under the new configuration is clean.
#[test]
fn sigint_stops_a_migration_at_a_random_page_and_the_rerun_resumes() -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let (config_a, table) = user_table("sigint-migrate", &endpoint)?;
    let a = arg(&config_a)?;
    let mut b = user_service_config()?;
    b["entities"]["user"]["shardBumps"] = json!([
        { "timestamp": 1_700_000_000_000u64, "charBits": 2, "chars": 1 },
        { "timestamp": 1_735_689_600_000u64, "charBits": 3, "chars": 2 }
    ]);
    let config_b = temp_json("sigint-migrate", "b", &b)?;
    let b = arg(&config_b)?;
    let result = (|| -> TestResult {
        seed(&endpoint, &table, 150, 10)?;
        let at = [
            "--table",
            table.as_str(),
            "--endpoint-url",
            endpoint.as_str(),
        ];
        let out = run(&[&["audit", "--config", b][..], &at].concat())?;
        assert_code(&out, 3); // under B the users are misplaced: a finding
        let checkpoint = checkpoint_path("sigint-migrate");
        let migrate = [
            &[
                "migrate",
                "--from",
                a,
                "--to",
                b,
                "--yes",
                "--segments",
                "1",
                "--page-size",
                "1",
                "--checkpoint",
                arg(&checkpoint)?,
            ][..],
            &at,
        ]
        .concat();
        let out = interrupt_at_a_random_page(&migrate, &checkpoint)?;
        assert_code(&out, 130);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("interrupted")
                && stderr.contains(&format!("--checkpoint {}", checkpoint.display())),
            "{stderr}"
        );
        assert!(checkpoint.exists());
        let out = run(&migrate)?;
        assert_code(&out, 0);
        assert!(!checkpoint.exists());
        let out = run(&[&["audit", "--config", b][..], &at].concat())?;
        assert_code(&out, 0);
        assert_eq!(scanned(b, &table, &endpoint, "user")?.len(), 150);
        Ok(())
    })();
    drop_table(&config_a, &table, &endpoint)?;
    result
}

/// A purge of a table that does not exist: exit 1 with an operator's message (no Rust, no
/// "resume"), and no checkpoint file, given or default.
#[test]
fn a_purge_of_a_missing_table_writes_no_checkpoint() -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let config = temp_json("missing", "config", &user_service_config()?)?;
    let dir = std::env::temp_dir().join(format!("em-cli-missing-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let checkpoint = checkpoint_path("missing");
    let table = format!("cli-missing-{}", std::process::id());
    for with_file in [true, false] {
        let mut args = vec![
            "purge",
            "--config",
            arg(&config)?,
            "--table",
            &table,
            "--endpoint-url",
            &endpoint,
            "--all",
            "--yes",
        ];
        if with_file {
            args.extend(["--checkpoint", arg(&checkpoint)?]);
        }
        let out = bin()
            .args(&args)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()?;
        assert_code(&out, 1);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("table {table} does not exist at {endpoint}"))
                && stderr.contains("entity-manager table create")
                && !stderr.contains("resume")
                && !stderr.contains("DynamoStore"),
            "{stderr}"
        );
        assert!(!checkpoint.exists());
        assert_eq!(
            std::fs::read_dir(&dir)?.count(),
            0,
            "a file was left in {dir:?}"
        );
    }
    std::fs::remove_dir(&dir)?;
    Ok(())
}

/// A refused connection: what failed and where, in one line, the SDK's chain only with `-v`.
#[test]
fn errors_speak_to_operators_and_show_the_sdk_detail_only_with_v() -> TestResult {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}", listener.local_addr()?);
    drop(listener); // nothing listens there now: connections are refused
    let config = temp_json("refused", "config", &user_service_config()?)?;
    let args = [
        "get",
        "--config",
        arg(&config)?,
        "--table",
        "T",
        "--entity",
        "user",
        "--id",
        "u1",
        "--endpoint-url",
        &url,
        "--timeout",
        "5",
    ];
    let out = run(&args)?;
    assert_code(&out, 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("cannot reach DynamoDB at {url}"))
            && stderr.contains("-v")
            && !stderr.contains("DispatchFailure")
            && !stderr.contains("caused by"),
        "{stderr}"
    );
    let out = run(&[&args[..], &["-v"]].concat())?;
    assert_code(&out, 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("caused by"), "{stderr}");
    Ok(())
}

/// Two runs of `keys add` on the same input write the same bytes: the input's attribute order,
/// then the keys in the configuration's order.
#[test]
fn keys_add_twice_gives_byte_identical_output_in_the_inputs_order() -> TestResult {
    let config = temp_json("stable", "config", &user_service_config()?)?;
    let input: String = (0..200u64)
        .map(|i| {
            format!(
                "{{\"zeta\":{i},\"userId\":\"u{i}\",\"created\":{},\"lastNameCanonical\":\"l{i}\",\"firstNameCanonical\":\"f\",\"alpha\":{{\"y\":1,\"b\":2,\"m\":3}}}}\n",
                1_720_000_000_000u64 + i * 86_400_000
            )
        })
        .collect::<Vec<_>>()
        .concat();
    let args = ["keys", "add", "--config", arg(&config)?, "--entity", "user"];
    let first = run_with_stdin(&args, &input)?;
    assert_code(&first, 0);
    for _ in 0..3 {
        let again = run_with_stdin(&args, &input)?;
        assert!(first.stdout == again.stdout, "two runs differ");
    }
    let line: Value = serde_json::from_str(
        String::from_utf8(first.stdout)?
            .lines()
            .next()
            .ok_or("no output")?,
    )?;
    let names: Vec<&str> = line
        .as_object()
        .ok_or("object")?
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        names[..6],
        [
            "zeta",
            "userId",
            "created",
            "lastNameCanonical",
            "firstNameCanonical",
            "alpha"
        ]
    );
    assert_eq!(names[6..8], ["hashKey", "rangeKey"]);
    // nested maps by name
    let nested: Vec<&String> = line["alpha"].as_object().ok_or("alpha")?.keys().collect();
    assert_eq!(nested, ["b", "m", "y"]);
    Ok(())
}

/// `--config FILE` names the configuration in every command that reads one (the positional
/// form still works where it was).
#[test]
fn config_is_a_flag_everywhere() -> TestResult {
    let config = temp_json("flag", "config", &user_service_config()?)?;
    let c = arg(&config)?;
    for args in [
        &["validate", "--config", c][..],
        &["validate", c][..],
        &["table", "cloudformation", "--config", c][..],
    ] {
        assert_code(&run(args)?, 0);
    }
    // every command with a table accepts --config (usage errors are exit 2; these get as far
    // as needing a region, which the tests' environment does not give)
    for command in [
        &["scan"][..],
        &["purge", "--all", "--yes"],
        &["stream"],
        &["audit"],
        &["get", "--entity", "user", "--id", "u1"],
        &["query", "--entity", "user", "--index", "created"],
        &["put", "--entity", "user", "--item", "{}"],
        &["delete", "--entity", "user", "--id", "u1"],
        &["import", "--entity", "user"],
        &["table", "describe"],
    ] {
        let out = run(&[command, &["--config", c, "--table", "T"]].concat())?;
        assert_code(&out, 2);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("no AWS region"), "{command:?}: {stderr}");
    }
    Ok(())
}

/// Progress goes to stderr only: plain lines (stderr is not a terminal) with the total
/// DynamoDB estimates, the rate and the ETA; `--quiet` turns them off; stdout holds the
/// result alone.
#[test]
fn progress_lines_on_stderr_when_it_is_not_a_terminal() -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let (config, table) = user_table("progress", &endpoint)?;
    let c = arg(&config)?;
    let result = (|| -> TestResult {
        seed(&endpoint, &table, 60, 0)?;
        let purge = [
            "purge",
            "--config",
            c,
            "--table",
            &table,
            "--endpoint-url",
            &endpoint,
            "--all",
            "--yes",
            "--segments",
            "1",
            "--page-size",
            "5",
            "--json",
        ];
        let out = bin()
            .args(purge)
            .env("ENTITY_MANAGER_PROGRESS_SECONDS", "0")
            .stdin(Stdio::null())
            .output()?;
        assert_code(&out, 0);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with(&format!("purge of every item of table {table}: ")))
            .collect();
        assert!(lines.len() >= 10, "{stderr}");
        assert!(
            lines.iter().any(|l| l.contains("of ~")
                && l.contains("estimated by DynamoDB")
                && l.contains("/s")
                && l.contains("ETA")),
            "{stderr}"
        );
        // stdout: the report alone
        assert_eq!(stdout_json(&out)?["deleted"], json!(60));

        seed(&endpoint, &table, 20, 0)?;
        let out = bin()
            .args([&purge[..], &["--quiet"]].concat())
            .env("ENTITY_MANAGER_PROGRESS_SECONDS", "0")
            .stdin(Stdio::null())
            .output()?;
        assert_code(&out, 0);
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("purge of"),
            "--quiet printed progress"
        );
        Ok(())
    })();
    drop_table(&config, &table, &endpoint)?;
    result
}
