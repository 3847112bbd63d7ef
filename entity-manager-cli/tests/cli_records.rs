//! The record commands (`import`, `get`, `query`, `put`, `delete`) driven as processes on
//! DynamoDB Local, against an oracle computed from the records themselves: which records an
//! index holds and in which order (its range key, then the shard), with the keys the library
//! gives them.
//!
//! They run when `DYNAMODB_ENDPOINT` is set (`.ci/run` starts DynamoDB Local) and skip with a
//! printed reason otherwise, except under `CI=true`.

use std::cmp::Ordering;
use std::path::PathBuf;

use entity_manager::model::Profile;
use entity_manager::{AttributeValue, Item, Schema};
use serde_json::{Value, json};

mod support;

use support::{
    BoxError, TestResult, arg, assert_code, drop_table, endpoint, on, run, run_with_stdin,
    stdout_json, stdout_lines, user_service_config, user_table,
};

const FIRST: [&str; 7] = ["ann", "bob", "cid", "dee", "eve", "fay", "gus"];
const LAST: [&str; 5] = ["lee", "kim", "ray", "poe", "orr"];

/// The i-th user: every property an index of the User service reads; `created` and `updated`
/// distinct and spread over the unsharded era and both shard bumps (1 shard, 4, then 64);
/// `phone` on two users in three (a sparse index), distinct; five beneficiaries.
fn user(i: u64) -> Value {
    let created = 1_720_000_000_000u64 + i * 1_000_003;
    let mut user = json!({
        "userId": format!("u{i:05}"),
        "created": created,
        "updated": created + 7,
        "firstNameCanonical": FIRST[usize::try_from(i % 7).unwrap_or(0)],
        "lastNameCanonical": LAST[usize::try_from(i % 5).unwrap_or(0)],
        "beneficiaryId": format!("b{}", i % 5),
        "someProperty": i,
    });
    if !i.is_multiple_of(3) {
        // 7919 is prime to 10_000_019 (prime): distinct for every i below it
        user["phone"] = json!(format!("+1555{:08}", (i * 7919) % 10_000_019));
    }
    user
}

/// `records` as a JSON lines file.
fn jsonl(test: &str, records: &[Value]) -> Result<PathBuf, BoxError> {
    let path = std::env::temp_dir().join(format!("em-cli-{test}-{}.jsonl", std::process::id()));
    let lines: Vec<String> = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&path, lines.concat())?;
    Ok(path)
}

/// The User service schema, as the CLI loads it by default (`--key-profile npm-6.14`).
fn schema() -> Result<Schema, BoxError> {
    Ok(Schema::from_ts_config(
        &user_service_config()?,
        Profile::Npm6_14,
    )?)
}

/// The users with the keys the library gives them.
fn keyed(users: &[Value]) -> Result<Vec<Item>, BoxError> {
    let schema = schema()?;
    let entity = schema.entity("user")?;
    users
        .iter()
        .map(|u| Ok(entity.add_keys(&serde_dynamo::to_item(u.clone())?)?))
        .collect()
}

/// DynamoDB's order of two key values: numbers by value, strings by their bytes.
fn compare(a: &AttributeValue, b: &AttributeValue) -> Ordering {
    match (a, b) {
        (AttributeValue::N(x), AttributeValue::N(y)) => {
            let (x, y) = (x.parse::<i128>(), y.parse::<i128>());
            match (x, y) {
                (Ok(x), Ok(y)) => x.cmp(&y),
                _ => Ordering::Equal,
            }
        }
        (AttributeValue::S(x), AttributeValue::S(y)) => x.as_bytes().cmp(y.as_bytes()),
        _ => Ordering::Equal,
    }
}

fn text(item: &Item, name: &str) -> String {
    match item.get(name) {
        Some(AttributeValue::S(s) | AttributeValue::N(s)) => s.clone(),
        _ => String::new(),
    }
}

/// The oracle of an index: the ids of the records holding both its keys (and, for a generated
/// hash key, `fill`'s value of its component), by range key, then shard (table hash key), then
/// table range key.
fn oracle(keyed: &[Item], hash: &str, range: &str, fill: Option<&(&str, String)>) -> Vec<String> {
    let mut held: Vec<&Item> = keyed
        .iter()
        .filter(|i| i.contains_key(hash) && i.contains_key(range))
        .filter(|i| fill.is_none_or(|(component, value)| text(i, component) == *value))
        .collect();
    held.sort_by(|a, b| {
        let (ra, rb) = (&a[range], &b[range]);
        compare(ra, rb)
            .then_with(|| text(a, "hashKey").cmp(&text(b, "hashKey")))
            .then_with(|| text(a, "rangeKey").cmp(&text(b, "rangeKey")))
    });
    held.iter().map(|i| text(i, "userId")).collect()
}

/// The `userId`s of the records a command printed, in order.
fn ids(out: &std::process::Output) -> Result<Vec<String>, BoxError> {
    Ok(stdout_lines(out)?
        .iter()
        .map(|l| l["userId"].as_str().unwrap_or_default().to_owned())
        .collect())
}

/// 20,000 users imported from a file, then every index of the User service configuration
/// queried to its end across its shards: each returns exactly the oracle's records, in the
/// oracle's order.
#[test]
fn import_20000_then_every_index_to_its_end_equals_the_oracle() -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let (config, table) = user_table("import20k", &endpoint)?;
    let result = (|| -> TestResult {
        let users: Vec<Value> = (0..20_000).map(user).collect();
        let file = jsonl("import20k", &users)?;
        let mut args = on("import", &config, &table, &endpoint)?;
        args.extend(["--file", arg(&file)?, "--json", "--batch", "500"]);
        let out = run(&args)?;
        assert_code(&out, 0);
        let report = stdout_json(&out)?;
        assert_eq!(report["written"], json!(20_000), "{report}");
        assert_eq!(report["refused"], json!([]));

        let keyed = keyed(&users)?;
        let config_json = user_service_config()?;
        let indexes = config_json["indexes"].as_object().ok_or("indexes")?;
        assert_eq!(indexes.len(), 11);
        let sharded = config_json["generatedProperties"]["sharded"]
            .as_object()
            .ok_or("sharded")?;
        let sample = user(4_242);
        for (name, index) in indexes {
            let hash = index["hashKey"].as_str().ok_or("hashKey")?;
            let range = index["rangeKey"].as_str().ok_or("rangeKey")?;
            // a generated hash key (`userBeneficiaryHashKey`, `userHashKey`): the records of
            // one value of its component (the sample user's), in every shard
            let filled = match sharded.get(hash) {
                Some(components) => {
                    let component = components[0].as_str().ok_or("component")?;
                    let value = sample[component].as_str().ok_or("sample value")?;
                    Some((component, value.to_owned()))
                }
                None => None,
            };
            let expected = oracle(&keyed, hash, range, filled.as_ref());
            let least = if filled.is_some() { 1 } else { 2_000 };
            assert!(expected.len() >= least, "{name}: {}", expected.len());
            let mut args = on("query", &config, &table, &endpoint)?;
            args.extend([
                "--index",
                name,
                "--all",
                "--limit",
                "5000",
                "--page-size",
                "1000",
            ]);
            let where_arg = filled.as_ref().map(|(c, v)| format!("{c}={v}"));
            if let Some(w) = &where_arg {
                args.extend(["--where", w.as_str()]);
            }
            let out = run(&args)?;
            assert_code(&out, 0);
            let got = ids(&out)?;
            let first_difference = got.iter().zip(&expected).position(|(g, e)| g != e);
            assert!(
                got.len() == expected.len() && first_difference.is_none(),
                "index {name}: {} records, the oracle {}; first difference at {first_difference:?}",
                got.len(),
                expected.len()
            );
        }
        Ok(())
    })();
    drop_table(&config, &table, &endpoint)?;
    result
}

/// `get` of 100 ids in one call prints each record as imported (keys removed, attributes by
/// name); an id not found is named, exit 3; `--format dynamodb` prints DynamoDB JSON of the
/// same record.
#[test]
#[allow(clippy::too_many_lines)] // one story: import, get, create-only, put, delete, query pages
fn records_get_put_delete_query_pages_and_create_only() -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let (config, table) = user_table("records", &endpoint)?;
    let result = (|| -> TestResult {
        let users: Vec<Value> = (0..300).map(user).collect();
        let file = jsonl("records", &users)?;

        // an import stopped after 2 batches of 50, resumed from its checkpoint: every record once
        let checkpoint =
            std::env::temp_dir().join(format!("em-cli-records-import-{}.json", std::process::id()));
        let _ = std::fs::remove_file(&checkpoint);
        let mut import = on("import", &config, &table, &endpoint)?;
        import.extend([
            "--file",
            arg(&file)?,
            "--batch",
            "50",
            "--checkpoint",
            arg(&checkpoint)?,
            "--json",
        ]);
        let out = run(&[&import[..], &["--stop-after", "2"]].concat())?;
        assert_code(&out, 1);
        // with --json the failure is a JSON report on stdout
        let message = stdout_json(&out)?["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            message.contains("at line 101") && message.contains("--checkpoint"),
            "{message}"
        );
        let saved: Value = serde_json::from_str(&std::fs::read_to_string(&checkpoint)?)?;
        assert_eq!(
            (saved["line"].clone(), saved["written"].clone()),
            (json!(101), json!(100))
        );
        let out = run(&import)?;
        assert_code(&out, 0);
        assert!(!checkpoint.exists());

        // get: 100 ids (every third user, over every era and bump), one batch
        let wanted: Vec<&Value> = users.iter().step_by(3).take(100).collect();
        let mut get = on("get", &config, &table, &endpoint)?;
        let id_args: Vec<String> = wanted
            .iter()
            .map(|u| u["userId"].as_str().unwrap_or_default().to_owned())
            .collect();
        for id in &id_args {
            get.extend(["--id", id.as_str()]);
        }
        let out = run(&get)?;
        assert_code(&out, 0);
        let printed = stdout_lines(&out)?;
        assert_eq!(printed.len(), 100);
        for (got, want) in printed.iter().zip(&wanted) {
            assert_eq!(got, *want);
        }
        // attributes by name (the record's own; no keys)
        let names: Vec<&String> = printed[0].as_object().ok_or("object")?.keys().collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);

        // a missing id: named on stderr, exit 3; the found one still printed
        let mut get = on("get", &config, &table, &endpoint)?;
        get.extend(["--id", "u00001", "--id", "nobody"]);
        let out = run(&get)?;
        assert_code(&out, 3);
        assert_eq!(ids(&out)?, ["u00001"]);
        assert!(String::from_utf8_lossy(&out.stderr).contains("nobody"));

        // DynamoDB JSON: the same record, typed
        let mut get = on("get", &config, &table, &endpoint)?;
        get.extend(["--id", "u00002", "--format", "dynamodb"]);
        let out = run(&get)?;
        assert_code(&out, 0);
        let typed: Item = serde_json::from_value(stdout_json(&out)?)?;
        assert_eq!(typed, serde_dynamo::to_item(user(2))?);
        assert!(String::from_utf8_lossy(&out.stdout).contains(r#""userId":{"S":"u00002"}"#));

        // --create-only: an existing id (under another creation time, so another key) and a
        // duplicate of a new one are refused and reported; the new ones are written
        let mut changed = user(1);
        changed["created"] = json!(1_730_000_000_000u64);
        changed["firstNameCanonical"] = json!("zed");
        let batch = [changed, user(90_000), user(90_001), user(90_001)];
        let file = jsonl("records-create-only", &batch)?;
        let mut import = on("import", &config, &table, &endpoint)?;
        import.extend(["--file", arg(&file)?, "--create-only", "--json"]);
        let out = run(&import)?;
        assert_code(&out, 3);
        let report = stdout_json(&out)?;
        assert_eq!(report["written"], json!(2), "{report}");
        let refused: Vec<(u64, &str)> = report["refused"]
            .as_array()
            .ok_or("refused")?
            .iter()
            .map(|r| {
                (
                    r["line"].as_u64().unwrap_or(0),
                    r["id"].as_str().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(refused, [(1, "u00001"), (4, "u90001")]);
        let mut get = on("get", &config, &table, &endpoint)?;
        get.extend(["--id", "u00001", "--id", "u90000", "--id", "u90001"]);
        let out = run(&get)?;
        assert_code(&out, 0);
        let printed = stdout_lines(&out)?;
        assert_eq!(printed, [user(1), user(90_000), user(90_001)]);

        // put: plain, refused by --create-only, versioned
        let mut record = user(90_002);
        record["version"] = json!(1);
        let item = record.to_string();
        let mut put = on("put", &config, &table, &endpoint)?;
        put.extend(["--item", item.as_str()]);
        assert_code(&run(&put)?, 0);
        assert_code(&run(&[&put[..], &["--create-only"]].concat())?, 3);
        record["phone"] = json!("+15550000000");
        let item = record.to_string();
        let mut versioned = on("put", &config, &table, &endpoint)?;
        versioned.extend(["--if-version", "1"]);
        let out = run_with_stdin(&versioned, &item)?;
        assert_code(&out, 0);
        let out = run_with_stdin(&versioned, &item)?;
        assert_code(&out, 3); // the stored version is 2 now
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("the stored version is 2, not 1"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // a versioned put of a record that is not there: said so
        let mut absent = user(90_003);
        absent["version"] = json!(4);
        let out = run_with_stdin(&versioned, &absent.to_string())?;
        assert_code(&out, 3);
        assert!(String::from_utf8_lossy(&out.stderr).contains("not found"));
        // a put of a stored id with another timestamp (another shard) would leave two
        // records: refused, the stored one kept
        let mut moved = user(5);
        moved["created"] = json!(1_790_000_000_000u64);
        let mut put_moved = on("put", &config, &table, &endpoint)?;
        put_moved.extend(["--item"]);
        let moved_text = moved.to_string();
        put_moved.push(moved_text.as_str());
        let out = run(&put_moved)?;
        assert_code(&out, 3);
        assert!(String::from_utf8_lossy(&out.stderr).contains("another shard"));
        let mut get5 = on("get", &config, &table, &endpoint)?;
        get5.extend(["--id", "u00005", "--id", "u00005"]);
        let out = run(&get5)?;
        assert_code(&out, 0);
        assert_eq!(stdout_lines(&out)?, [user(5)], "one record, printed once");
        // a projection that names the unique id itself
        let mut projected = on("get", &config, &table, &endpoint)?;
        projected.extend(["--id", "u00005", "--projection", "userId,beneficiaryId"]);
        let out = run(&projected)?;
        assert_code(&out, 0);
        assert_eq!(
            stdout_lines(&out)?,
            [json!({ "beneficiaryId": "b0", "userId": "u00005" })]
        );

        // import: a key twice in one batch (the later line wins, as line by line), and an
        // item over 400 KB refused on its own with its id, the rest written
        let mut first = user(91_000);
        first["someProperty"] = json!(1);
        let mut second = user(91_000);
        second["someProperty"] = json!(2);
        let mut huge = user(91_001);
        huge["blob"] = json!("x".repeat(410_000));
        let batch = [first, user(91_002), second, huge, user(91_003)];
        let file = jsonl("records-dupes", &batch)?;
        let mut import = on("import", &config, &table, &endpoint)?;
        import.extend(["--file", arg(&file)?, "--json"]);
        let out = run(&import)?;
        assert_code(&out, 3);
        let report = stdout_json(&out)?;
        let refused = report["refused"].as_array().ok_or("refused")?;
        assert_eq!(refused.len(), 1, "{report}");
        assert_eq!(
            (refused[0]["line"].clone(), refused[0]["id"].clone()),
            (json!(4), json!("u91001"))
        );
        let mut get = on("get", &config, &table, &endpoint)?;
        get.extend(["--id", "u91000", "--id", "u91002", "--id", "u91003"]);
        let out = run(&get)?;
        assert_code(&out, 0);
        let printed = stdout_lines(&out)?;
        assert_eq!(printed.len(), 3);
        assert_eq!(printed[0]["someProperty"], json!(2));
        // a start past the end of the input is said, not passed over in silence
        let out = run(&[&import[..], &["--start-line", "99"]].concat())?;
        assert_code(&out, 0);
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("imported nothing"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );

        // a number plain JSON cannot hold exactly is refused, not stored rounded; in DynamoDB
        // JSON it is stored as given
        let big = "123456789012345678901234567890";
        let line = format!(r#"{{"userId":"u92000","created":1725000000000,"someProperty":{big}}}"#);
        let mut put = on("put", &config, &table, &endpoint)?;
        put.extend(["--item", line.as_str()]);
        let out = run(&put)?;
        assert_code(&out, 2);
        assert!(String::from_utf8_lossy(&out.stderr).contains(big));
        let file = std::env::temp_dir().join(format!("em-cli-big-{}.jsonl", std::process::id()));
        std::fs::write(&file, format!("{line}\n"))?;
        let mut import = on("import", &config, &table, &endpoint)?;
        import.extend(["--file", arg(&file)?]);
        let out = run(&import)?;
        assert_code(&out, 3);
        assert!(String::from_utf8_lossy(&out.stderr).contains(big));
        let typed = format!(
            r#"{{"userId":{{"S":"u92000"}},"created":{{"N":"1725000000000"}},"someProperty":{{"N":"{big}"}}}}"#
        );
        let mut put = on("put", &config, &table, &endpoint)?;
        put.extend(["--item", typed.as_str(), "--format", "dynamodb"]);
        assert_code(&run(&put)?, 0);
        let mut get = on("get", &config, &table, &endpoint)?;
        get.extend(["--id", "u92000", "--format", "dynamodb"]);
        let out = run(&get)?;
        assert_code(&out, 0);
        assert_eq!(stdout_json(&out)?["someProperty"], json!({ "N": big }));
        let mut get = on("get", &config, &table, &endpoint)?;
        get.extend(["--id", "u90002"]);
        let stored = stdout_json(&run(&get)?)?;
        assert_eq!(
            (stored["version"].clone(), stored["phone"].clone()),
            (json!(2), json!("+15550000000"))
        );

        // delete: the wrong version refused, the right one deletes, then not found
        let mut delete = on("delete", &config, &table, &endpoint)?;
        delete.extend(["--id", "u90002"]);
        assert_code(&run(&[&delete[..], &["--if-version", "1"]].concat())?, 3);
        assert_code(&run(&[&delete[..], &["--if-version", "2"]].concat())?, 0);
        assert_code(&run(&get)?, 3);
        assert_code(&run(&delete)?, 3);

        // query pages: two pages of 7, then the token continues where they ended; the same
        // records as one query to the end; a range condition and a filter
        let mut all = on("query", &config, &table, &endpoint)?;
        all.extend(["--index", "created", "--all"]);
        let everything = ids(&run(&all)?)?;
        let mut paged = on("query", &config, &table, &endpoint)?;
        paged.extend(["--index", "created", "--limit", "7", "--pages", "2"]);
        let out = run(&paged)?;
        assert_code(&out, 0);
        let first = ids(&out)?;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let token = stderr
            .split("--page-token ")
            .nth(1)
            .map(str::trim)
            .ok_or("no page token on stderr")?;
        let out = run(&[&paged[..], &["--page-token", token]].concat())?;
        let second = ids(&out)?;
        // what the operator gave and cannot be used is bad input (exit 2): a token altered or
        // of another query, a range value of the wrong type for its key
        let mut altered = token.to_owned();
        altered.insert(5, 'x');
        for bad in [
            altered.as_str(),
            "garbage",
            token.get(..token.len() - 2).unwrap_or(""),
        ] {
            let out = run(&[&paged[..], &["--page-token", bad]].concat())?;
            assert_code(&out, 2);
        }
        let mut other = on("query", &config, &table, &endpoint)?;
        other.extend(["--index", "updated", "--limit", "7", "--page-token", token]);
        assert_code(&run(&other)?, 2);
        let mut mistyped = on("query", &config, &table, &endpoint)?;
        mistyped.extend(["--index", "created", "--all", "--range", "> abc"]);
        assert_code(&run(&mistyped)?, 2);
        // query mistakes refused before any read (InvalidQuery, naming the fix): a reversed
        // between, a filter on the index's range key, `between` bounds that are not numbers
        for (flag, mistake, fix) in [
            ("--range", "between 300 and 200", "give the lower one first"),
            ("--filter", "created > 1", "range condition"),
            ("--range", "> NaN", "give a finite number"),
        ] {
            let mut refused = on("query", &config, &table, &endpoint)?;
            refused.extend(["--index", "created", "--all", flag, mistake]);
            let out = run(&refused)?;
            assert_code(&out, 2);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("invalid query") && stderr.contains(fix),
                "{mistake}: {stderr}"
            );
        }
        // --where naming no component of the index's hash key, or one component twice
        let mut unknown = on("query", &config, &table, &endpoint)?;
        unknown.extend(["--index", "created", "--all", "--where", "nosuch=1"]);
        let out = run(&unknown)?;
        assert_code(&out, 2);
        assert!(String::from_utf8_lossy(&out.stderr).contains("nosuch"));
        let mut twice = on("query", &config, &table, &endpoint)?;
        twice.extend(["--index", "userBeneficiaryCreated", "--all"]);
        twice.extend(["--where", "beneficiaryId=b1", "--where", "beneficiaryId=b2"]);
        assert_code(&run(&twice)?, 2);
        // and none where the index needs it: asked for by its flag
        let mut none = on("query", &config, &table, &endpoint)?;
        none.extend(["--index", "userBeneficiaryCreated", "--all"]);
        let out = run(&none)?;
        assert_code(&out, 2);
        assert!(String::from_utf8_lossy(&out.stderr).contains("--where beneficiaryId="));
        assert_eq!([first, second].concat(), everything[..28]);
        let created = |i: u64| user(i)["created"].as_u64().unwrap_or(0);
        let (low, high) = (created(50), created(250));
        let range = format!("between {low} and {high}");
        let mut ranged = on("query", &config, &table, &endpoint)?;
        ranged.extend([
            "--index",
            "created",
            "--all",
            "--range",
            range.as_str(),
            "--filter",
            "someProperty < 200",
            "--filter",
            "someProperty >= 100",
        ]);
        let out = run(&ranged)?;
        assert_code(&out, 0);
        // repeated filters: every one holds
        let mut expected: Vec<&Value> = users
            .iter()
            .filter(|u| {
                let c = u["created"].as_u64().unwrap_or(0);
                let p = u["someProperty"].as_u64().unwrap_or(0);
                (low..=high).contains(&c) && (100..200).contains(&p)
            })
            .collect();
        expected.sort_by_key(|u| u["created"].as_u64());
        assert!(!expected.is_empty());
        assert_eq!(
            stdout_lines(&out)?,
            expected.into_iter().cloned().collect::<Vec<_>>()
        );
        // a string value as a JSON literal or as plain text: the same records
        let by = |filter: &str| -> Result<Vec<String>, BoxError> {
            let mut q = on("query", &config, &table, &endpoint)?;
            q.extend(["--index", "created", "--all", "--filter", filter]);
            let out = run(&q)?;
            assert_code(&out, 0);
            ids(&out)
        };
        let plain = by("beneficiaryId = b1")?;
        assert!(!plain.is_empty());
        assert_eq!(by(r#"beneficiaryId = "b1""#)?, plain);
        let prefixed = by("firstNameCanonical begins_with cid")?;
        assert!(!prefixed.is_empty());
        assert_eq!(by(r#"firstNameCanonical begins_with "cid""#)?, prefixed);
        Ok(())
    })();
    drop_table(&config, &table, &endpoint)?;
    result
}
