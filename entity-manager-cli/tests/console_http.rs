//! `entity-manager console` over plain HTTP, without DynamoDB: where it listens and what it
//! prints first, the `Host` check against DNS rebinding, the token of its one form that is not
//! a plain read, and the page of a table that cannot be reached (what failed and what to do,
//! no trace, no hang: the CLI's timeout applies).
//!
//! The browser tests (`console_browser.rs`) drive its views on DynamoDB Local.

mod support;

use support::{BoxError, Console, TestResult, closed_port, http};

/// A console on a table whose endpoint nothing listens on.
fn unreachable_console(test: &str, extra: &[&str]) -> Result<(Console, String), BoxError> {
    let endpoint = format!("http://127.0.0.1:{}", closed_port()?);
    let mut args = vec![
        "--table",
        "Users",
        "--endpoint-url",
        &endpoint,
        "--region",
        "us-east-1",
        "--timeout",
        "3",
    ];
    args.extend_from_slice(extra);
    Ok((Console::start(test, &args)?, endpoint))
}

/// By default the console listens on 127.0.0.1 on a port the system picks, and prints its
/// address as the first line of stdout.
#[test]
fn it_listens_on_loopback_by_default_and_prints_its_address_first() -> TestResult {
    let (console, _) = unreachable_console("loopback", &[])?;
    assert!(
        console.url.starts_with("http://127.0.0.1:"),
        "{}",
        console.url
    );
    assert_ne!(console.address.port(), 0);
    assert!(console.address.ip().is_loopback());
    assert!(
        !console.stderr().contains("warning"),
        "no warning on loopback: {}",
        console.stderr()
    );
    Ok(())
}

/// `--listen` on another address than loopback is served, with a warning that anyone who
/// reaches it can read the table.
#[test]
fn listening_beyond_loopback_prints_a_warning() -> TestResult {
    let (console, _) = unreachable_console("listen", &["--listen", "0.0.0.0:0"])?;
    assert!(
        console.url.starts_with("http://0.0.0.0:"),
        "{}",
        console.url
    );
    let stderr = console.stderr();
    assert!(
        stderr.contains("warning: the console listens on 0.0.0.0:")
            && stderr.contains("anyone who reaches it can read table Users"),
        "{stderr}"
    );
    // on every interface: any IP address with its port is served, a name still is not
    let port = console.address.port();
    let local = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let (status, _) = http(local, "GET", Some(&local.to_string()), "/console.css", "")?;
    assert_eq!(status, 200);
    let (status, _) = http(local, "GET", Some(&format!("evil.example:{port}")), "/", "")?;
    assert_eq!(status, 421);
    Ok(())
}

/// A request whose `Host` is not the address listened on (a page of another site whose name
/// was rebound to 127.0.0.1) is refused with 421; the console's own address and `localhost`
/// with its port are served.
#[test]
fn a_foreign_host_header_is_refused() -> TestResult {
    let (console, _) = unreachable_console("host", &[])?;
    let port = console.address.port();
    let own = console.address.to_string();
    for foreign in [
        "evil.example".to_owned(),
        format!("evil.example:{port}"),
        format!("{own}.evil.example"),
        format!("127.0.0.1:{}", port.wrapping_add(1)),
    ] {
        let (status, body) = http(console.address, "GET", Some(&foreign), "/", "")?;
        assert_eq!(status, 421, "Host: {foreign}: {body}");
        assert!(body.contains("refused"), "{body}");
        assert!(
            !body.contains("Users"),
            "nothing of the table is shown: {body}"
        );
    }
    let (status, _) = http(console.address, "GET", None, "/query", "")?;
    assert_eq!(status, 421, "no Host header");
    for own in [own.clone(), format!("localhost:{port}")] {
        let (status, body) = http(console.address, "GET", Some(&own), "/console.css", "")?;
        assert_eq!(status, 200, "Host: {own}: {body}");
    }
    Ok(())
}

/// The one form that is not a plain read (starting a whole-table scan) is refused without this
/// run's token.
#[test]
fn the_scan_form_needs_the_run_s_token() -> TestResult {
    let (console, _) = unreachable_console("token", &[])?;
    let own = console.address.to_string();
    for body in ["action=scan", "action=scan&token=0000"] {
        let (status, answer) = http(console.address, "POST", Some(&own), "/shards", body)?;
        assert_eq!(status, 403, "{body}: {answer}");
        assert!(answer.contains("token"), "{answer}");
    }
    Ok(())
}

/// Without `--write` the delete routes answer 403 (read-only), whatever the form carries; with
/// it, a delete `POST` without this run's token or with a wrong one is 403, before the table is
/// read.
#[test]
fn deleting_needs_write_and_the_run_s_token() -> TestResult {
    let fields = "hashKey=user%21a&rangeKey=userId%23c1";
    let (console, _) = unreachable_console("readonly", &[])?;
    let own = console.address.to_string();
    for (method, path, body) in [
        ("GET", format!("/delete?{fields}"), String::new()),
        ("POST", "/delete".to_owned(), format!("{fields}&token=0000")),
    ] {
        let (status, answer) = http(console.address, method, Some(&own), &path, &body)?;
        assert_eq!(status, 403, "{method} {path}: {answer}");
        assert!(
            answer.contains("read-only") && answer.contains("--write"),
            "{answer}"
        );
    }
    drop(console);
    let (console, _) = unreachable_console("writable", &["--write"])?;
    let own = console.address.to_string();
    for body in [fields.to_owned(), format!("{fields}&token=0000")] {
        let (status, answer) = http(console.address, "POST", Some(&own), "/delete", &body)?;
        assert_eq!(status, 403, "{body}: {answer}");
        assert!(
            answer.contains("token") && answer.contains("nothing was changed"),
            "{answer}"
        );
    }
    Ok(())
}

/// A table that cannot be reached: every view is a page saying what failed and what to do
/// (503), with no trace of the program; the console answers once the CLI's timeout has passed.
#[test]
fn an_unreachable_table_gives_a_page_that_says_what_failed_and_what_to_do() -> TestResult {
    let (console, endpoint) = unreachable_console("unreachable", &[])?;
    let own = console.address.to_string();
    for path in [
        "/",
        "/query?entity=user&index=created&run=1",
        "/shards?sample=10",
    ] {
        let (status, body) = http(console.address, "GET", Some(&own), path, "")?;
        assert_eq!(status, 503, "{path}: {body}");
        let reach = format!("cannot reach DynamoDB at {endpoint}");
        for said in ["What failed", &reach, "check --endpoint-url and --region"] {
            assert!(body.contains(said), "{path} does not say `{said}`: {body}");
        }
        for trace in ["panicked", "RUST_BACKTRACE", "src/", "caused by"] {
            assert!(!body.contains(trace), "{path} shows `{trace}`: {body}");
        }
    }
    Ok(())
}

/// No credentials anywhere: the page says so and where credentials come from.
#[test]
fn missing_credentials_give_a_page_that_says_where_credentials_come_from() -> TestResult {
    let endpoint = format!("http://127.0.0.1:{}", closed_port()?);
    let args = [
        "--table",
        "Users",
        "--endpoint-url",
        &endpoint,
        "--region",
        "us-east-1",
    ];
    let console = Console::start_with("credentials", &args, |command| {
        command
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY");
    })?;
    let (status, body) = http(
        console.address,
        "GET",
        Some(&console.address.to_string()),
        "/",
        "",
    )?;
    assert_eq!(status, 503, "{body}");
    for said in [
        "no usable AWS credentials",
        "check --profile",
        "aws sso login",
    ] {
        assert!(
            body.contains(said),
            "the page does not say `{said}`: {body}"
        );
    }
    Ok(())
}
