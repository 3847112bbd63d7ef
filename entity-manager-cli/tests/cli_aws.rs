//! Credentials, region and endpoint as every AWS tool finds them, seen from the server's side:
//! a loopback proxy in front of DynamoDB Local records the `SigV4` `Authorization` headers that
//! reach it (`Credential=<access key>/<date>/<region>/dynamodb/aws4_request`).
//!
//! No test here or elsewhere may reach a real AWS endpoint: the tests' environment has dummy
//! credentials, no region and no endpoint, and under `CI=true` a missing DynamoDB Local
//! endpoint fails the run instead of skipping.

use std::process::Stdio;

mod support;

use support::{
    BoxError, Seen, TestResult, arg, assert_code, bin, drop_table, endpoint, recording_proxy,
    temp_json, user_service_config, user_table,
};

/// The `Credential=` scopes (access key, date, region, service) of the requests seen.
fn credentials(seen: &Seen) -> Vec<String> {
    let bytes = seen.lock().map(|s| s.clone()).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    text.split("Credential=")
        .skip(1)
        .filter_map(|rest| rest.split([',', ' ', '\r']).next())
        .map(str::to_owned)
        .collect()
}

/// `--profile ops` with temporary AWS config and credentials files: the profile's access key
/// and region sign every request that reaches the server (not the environment's keys, as with
/// the AWS CLI), and without `--profile` the environment's do; `AWS_ENDPOINT_URL_DYNAMODB`
/// stands for `--endpoint-url`.
#[test]
fn the_named_profile_signs_the_requests_that_reach_the_server() -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let (config, table) = user_table("profile", &endpoint)?;
    let result = (|| -> TestResult {
        let upstream: std::net::SocketAddr = endpoint
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .replace("localhost", "127.0.0.1")
            .parse()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        let (proxy, seen) = runtime.block_on(recording_proxy(upstream))?;
        let proxy_url = format!("http://{proxy}");

        let dir = std::env::temp_dir().join(format!("em-cli-aws-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let config_file = dir.join("config");
        let credentials_file = dir.join("credentials");
        std::fs::write(&config_file, "[profile ops]\nregion = eu-west-3\n")?;
        std::fs::write(
            &credentials_file,
            "[ops]\naws_access_key_id = AKIDOPSPROFILE\naws_secret_access_key = ops-secret\n",
        )?;
        let get = |profile: Option<&str>, by_env: bool| -> Result<i32, BoxError> {
            let mut command = bin();
            command
                .env("AWS_CONFIG_FILE", &config_file)
                .env("AWS_SHARED_CREDENTIALS_FILE", &credentials_file)
                .env("AWS_ACCESS_KEY_ID", "AKIDFROMENV")
                .args([
                    "get",
                    "--config",
                    arg(&config)?,
                    "--table",
                    &table,
                    "--entity",
                    "user",
                    "--id",
                    "u1",
                ])
                .stdin(Stdio::null());
            if by_env {
                command.env("AWS_ENDPOINT_URL_DYNAMODB", &proxy_url);
            } else {
                command.args(["--endpoint-url", &proxy_url]);
            }
            if let Some(profile) = profile {
                command.args(["--profile", profile]);
            }
            let out = command.output()?;
            // exit 3: u1 is not there; the request went through
            assert_code(&out, 3);
            Ok(0)
        };

        get(Some("ops"), false)?;
        let sent = credentials(&seen);
        assert!(!sent.is_empty(), "no request reached the proxy");
        for scope in &sent {
            assert!(
                scope.starts_with("AKIDOPSPROFILE/") && scope.contains("/eu-west-3/dynamodb/"),
                "{sent:?}"
            );
        }
        if let Ok(mut s) = seen.lock() {
            s.clear();
        }
        // no --profile: the environment's key; the endpoint from AWS_ENDPOINT_URL_DYNAMODB
        // (the region defaults to us-east-1 for an endpoint given without one)
        get(None, true)?;
        let sent = credentials(&seen);
        assert!(!sent.is_empty(), "AWS_ENDPOINT_URL_DYNAMODB was not used");
        for scope in &sent {
            assert!(
                scope.starts_with("AKIDFROMENV/") && scope.contains("/us-east-1/dynamodb/"),
                "{sent:?}"
            );
        }
        std::fs::remove_dir_all(&dir)?;
        Ok(())
    })();
    drop_table(&config, &table, &endpoint)?;
    result
}

/// No test may reach AWS: under `CI=true` the DynamoDB Local endpoint must be set, and be
/// loopback; and the tests' environment gives no region and no endpoint, so a command without
/// `--endpoint-url` stops before sending anything (exit 2, "no AWS region").
#[test]
fn no_test_can_reach_a_real_aws_endpoint() -> TestResult {
    if std::env::var("CI").as_deref() == Ok("true") {
        let endpoint = std::env::var("DYNAMODB_ENDPOINT").map_err(
            |_| "CI=true but DYNAMODB_ENDPOINT is not set: tests would skip or reach AWS",
        )?;
        assert!(
            endpoint.starts_with("http://127.") || endpoint.starts_with("http://localhost"),
            "not loopback: {endpoint}"
        );
    }
    let config = temp_json("no-aws", "config", &user_service_config()?)?;
    let get = [
        "get",
        "--config",
        arg(&config)?,
        "--table",
        "T",
        "--entity",
        "user",
        "--id",
        "u1",
    ];
    let out = bin().args(get).stdin(Stdio::null()).output()?;
    assert_code(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no AWS region"));
    // a region that cannot name a host: said before anything is sent
    for region in ["bad region!", "EU-WEST-1", ""] {
        let out = bin()
            .args(get)
            .args(["--region", region])
            .stdin(Stdio::null())
            .output()?;
        assert_code(&out, 2);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("is not an AWS region name"),
            "{region}: {stderr}"
        );
    }
    Ok(())
}
