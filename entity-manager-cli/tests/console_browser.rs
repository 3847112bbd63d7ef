//! `entity-manager console` in a real browser: headless Chromium from the system's packages,
//! driven through `chromedriver` (`WebDriver`) against DynamoDB Local holding users of the User
//! service example. Each view opens; the design view lists every entity, key, generated
//! property and index of the configuration; a query run in the page returns the records, pages
//! and statistics of the library's query; a malformed condition is refused inline and sends
//! nothing (a loopback proxy in front of DynamoDB Local counts the `Query` requests); the heat
//! map's counts equal a scan's. A second table, defined in Rust (players and coaches sharing a
//! sharded multi-attribute index), is opened by a second console: its item collection is
//! offered in the query view, and a query of it returns the library's tagged collection query's
//! records (each with its entity), pages and statistics. Each view's screenshot is saved under
//! `target/console-screenshots/` (not committed).
//!
//! It runs when `DYNAMODB_ENDPOINT` is set and Chromium and chromedriver are installed
//! (`/usr/bin/chromium`, `/usr/bin/chromedriver`, or `CHROMIUM` and `CHROMEDRIVER`); outside CI it
//! skips with the reason, and under `CI=true` a missing browser fails it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use entity_manager::model::Profile;
use entity_manager::query::untyped::{MultiQuery, Query};
use entity_manager::scan::ParallelScan;
use entity_manager::store::{RangeCondition, Store, is_stamp, item_size};
use entity_manager::{AttributeValue, Entity, EntityExt, Schema, Table};
use fantoccini::{Client, ClientBuilder, Locator};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

mod support;

use support::{
    BoxError, Console, Hold, Seen, TestResult, arg, assert_code, closed_port, drop_table, endpoint,
    holding_proxy, http, on, run, temp_json, text, user_service_config,
};

/// The browser and its driver, or `None` (skip) outside CI.
fn browser() -> Option<(PathBuf, PathBuf)> {
    let find = |variable: &str, default: &str| {
        std::env::var_os(variable).map_or_else(|| PathBuf::from(default), PathBuf::from)
    };
    let chromium = find("CHROMIUM", "/usr/bin/chromium");
    let driver = find("CHROMEDRIVER", "/usr/bin/chromedriver");
    if chromium.exists() && driver.exists() {
        return Some((chromium, driver));
    }
    let why = format!(
        "no browser: {} or {} is missing (apt-get install -y chromium chromium-driver)",
        chromium.display(),
        driver.display()
    );
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true but {why}"
    );
    eprintln!("skipping: {why}");
    None
}

/// chromedriver on a free loopback port, killed when dropped.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts chromedriver and waits until it accepts connections (a minute at most).
fn start_driver(driver: &Path) -> Result<(Driver, String), BoxError> {
    let port = closed_port()?;
    let child = Command::new(driver)
        .arg(format!("--port={port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let driver = Driver(child);
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if started.elapsed() > Duration::from_mins(1) {
            return Err("chromedriver did not listen within a minute".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok((driver, format!("http://127.0.0.1:{port}")))
}

/// A `WebDriver` session of headless Chromium with the flags of `shared/notes/chromium.md` and
/// a fresh profile directory.
async fn session(webdriver: &str, chromium: &Path, profile: &Path) -> Result<Client, BoxError> {
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".to_owned(),
        json!({
            "binary": chromium,
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1280,1000", format!("--user-data-dir={}", profile.display()),
            ],
        }),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    Ok(ClientBuilder::new(connector)
        .capabilities(capabilities)
        .connect(webdriver)
        .await?)
}

/// Saves a screenshot of the page as `target/console-screenshots/<name>.png`.
async fn screenshot(client: &Client, name: &str) -> TestResult {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .ok_or("no target directory")?
        .join("console-screenshots");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(format!("{name}.png")), client.screenshot().await?)?;
    Ok(())
}

/// The i-th user: created from before the first shard bump to after the second (one shard,
/// then 4, then 64), with the properties of every index.
fn user(i: u64) -> Value {
    let created = 1_721_000_000_000 + i * 50_000_017;
    let first = ["ann", "bob", "cid"][usize::try_from(i % 3).unwrap_or(0)];
    let last = ["lee", "kim"][usize::try_from(i % 2).unwrap_or(0)];
    json!({
        "userId": format!("c{i:04}"),
        "created": created,
        "updated": created + 1,
        "firstNameCanonical": first,
        "lastNameCanonical": last,
        "beneficiaryId": format!("b{}", i % 4),
        "phone": format!("+1555{i:07}"),
    })
}

/// `Query` requests the proxy passed to DynamoDB Local so far.
fn queries_sent(seen: &Seen) -> usize {
    let bytes = seen.lock().map(|s| s.clone()).unwrap_or_default();
    String::from_utf8_lossy(&bytes)
        .matches("DynamoDB_20120810.Query\r\n")
        .count()
}

/// The text of the element `css`.
async fn text_of(client: &Client, css: &str) -> Result<String, BoxError> {
    Ok(client.find(Locator::Css(css)).await?.text().await?)
}

/// The attribute `name` of the element `css`, once it is there (empty when it has none).
async fn attribute(client: &Client, css: &str, name: &str) -> Result<String, BoxError> {
    let element = client.wait().for_element(Locator::Css(css)).await?;
    Ok(element.attr(name).await?.unwrap_or_default())
}

/// The `data-id`s of the records the query page shows, in order.
async fn shown_ids(client: &Client) -> Result<Vec<String>, BoxError> {
    let mut ids = Vec::new();
    for row in client
        .find_all(Locator::Css("#records tr[data-id]"))
        .await?
    {
        ids.push(row.attr("data-id").await?.unwrap_or_default());
    }
    Ok(ids)
}

/// Sets the value of the input `css` as a person would: cleared, then typed.
async fn type_into(client: &Client, css: &str, value: &str) -> TestResult {
    let input = client.find(Locator::Css(css)).await?;
    input.clear().await?;
    input.send_keys(value).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_a_browser_shows_what_the_library_reads() -> TestResult {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let Some((chromium, driver)) = browser() else {
        return Ok(());
    };
    // the User service's table, with a stream (for the changes view)
    let config = temp_json("console", "config", &user_service_config()?)?;
    let settings = temp_json(
        "console",
        "settings",
        &json!({ "stream": "NEW_AND_OLD_IMAGES" }),
    )?;
    let table = format!("cli-console-{}", std::process::id());
    assert_code(
        &run(&[
            "table",
            "create",
            "--config",
            arg(&config)?,
            "--settings",
            arg(&settings)?,
            "--table",
            &table,
            "--endpoint-url",
            &endpoint,
        ])?,
        0,
    );
    let users: Vec<String> = (0..300).map(|i| user(i).to_string()).collect();
    let file = std::env::temp_dir().join(format!("em-cli-console-{}.jsonl", std::process::id()));
    std::fs::write(&file, users.join("\n"))?;
    let mut import = on("import", &config, &table, &endpoint)?;
    import.extend(["--file", arg(&file)?]);
    assert_code(&run(&import)?, 0);

    let upstream = endpoint
        .trim_start_matches("http://")
        .parse()
        .map_err(|e| format!("{endpoint}: {e}"))?;
    let hold = Hold::default();
    let (proxy, seen) = holding_proxy(upstream, hold.clone()).await?;
    let proxy = format!("http://{proxy}");
    let journals =
        std::env::temp_dir().join(format!("em-cli-console-journals-{}", std::process::id()));
    std::fs::create_dir_all(&journals)?;
    // the schema and key profile from the table's stamp: no --config
    let console = Console::start(
        "browser",
        &[
            "--table",
            &table,
            "--endpoint-url",
            &proxy,
            "--region",
            "us-east-1",
            "--journals",
            arg(&journals)?,
        ],
    )?;
    let (_driver, webdriver) = start_driver(&driver)?;
    let profile =
        std::env::temp_dir().join(format!("em-cli-console-chromium-{}", std::process::id()));
    std::fs::create_dir_all(&profile)?;
    let client = session(&webdriver, &chromium, &profile).await?;

    let schema = Schema::from_ts_config(&user_service_config()?, Profile::Npm6_14)?;
    let store = support::store(&endpoint, &table, &schema)?;
    let outcome = async {
        design(&client, &console, &schema).await?;
        query(&client, &console, &schema, &store, &seen).await?;
        stop_scan(&client, &console, &hold).await?;
        shards(&client, &console, &store).await?;
        jobs(&client, &console, &journals, &table, &endpoint).await?;
        changes(&client, &console, &config, &table, &endpoint).await?;
        collection(&client, &endpoint).await
    }
    .await;
    let _ = client.close().await;
    let _ = std::fs::remove_dir_all(&profile);
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_dir_all(&journals);
    let _ = std::fs::remove_file(&settings);
    outcome.map_err(|e| format!("{e}\nconsole's stderr: {}", console.stderr()))?;
    drop(console);
    drop_table(&config, &table, &endpoint)
}

/// The design view lists every entity with its keys, generated properties and indexes, and
/// lays a sample out by partition, for the table and for an index.
async fn design(client: &Client, console: &Console, schema: &Schema) -> TestResult {
    client.goto(&console.url).await?;
    let table = schema.table();
    for entity in schema.entities() {
        let section = client
            .find(Locator::Css(&format!("#entity-{}", entity.token)))
            .await?;
        for key in [&table.hash_key, &table.range_key] {
            section
                .find(Locator::Css(&format!("tr[data-key='{key}']")))
                .await
                .map_err(|e| format!("entity {}: key {key}: {e}", entity.token))?;
        }
        for generated in entity.generated.iter() {
            let row = section
                .find(Locator::Css(&format!(
                    "tr[data-generated='{}']",
                    generated.name
                )))
                .await
                .map_err(|e| format!("entity {}: {}: {e}", entity.token, generated.name))?;
            let shown = row.text().await?;
            for component in generated.components.iter() {
                assert!(shown.contains(&**component), "{}: {shown}", generated.name);
            }
        }
        for index in entity.indexes.iter() {
            let row = section
                .find(Locator::Css(&format!("tr[data-index='{}']", index.name)))
                .await
                .map_err(|e| format!("entity {}: index {}: {e}", entity.token, index.name))?;
            let shown = row.text().await?;
            assert!(
                shown.contains(&*index.hash_key) && shown.contains(&*index.range_key),
                "index {}: {shown}",
                index.name
            );
        }
    }
    assert!(text_of(client, "#stamp").await?.contains("npm-6.14"));
    let partitions = client
        .find_all(Locator::Css("#layout tr[data-partition]"))
        .await?;
    assert!(
        !partitions.is_empty(),
        "the aggregate view shows the sample"
    );
    screenshot(client, "design").await?;
    client
        .goto(&format!("{}?index=userBeneficiaryCreated", console.url))
        .await?;
    let first = client
        .find(Locator::Css("#layout tr[data-partition]"))
        .await?
        .attr("data-partition")
        .await?
        .unwrap_or_default();
    assert!(
        first.starts_with("user!") && first.contains("|beneficiaryId#b"),
        "the index view is grouped by the index's hash key: {first}"
    );
    client
        .execute(
            "document.getElementById('layout').scrollIntoView();",
            Vec::new(),
        )
        .await?;
    screenshot(client, "design-index").await
}

/// A query run in the page returns the library's records, pages and statistics; back and
/// forward follow the tokens; malformed conditions are refused inline and send nothing.
async fn query(
    client: &Client,
    console: &Console,
    schema: &Schema,
    store: &impl Store,
    seen: &Seen,
) -> TestResult {
    let (low, high) = ("1722000000000", "1736500000000");
    let library = Query::new(store, schema.entity("user")?)
        .index("created")
        .range(RangeCondition::Between(
            AttributeValue::N(low.to_owned()),
            AttributeValue::N(high.to_owned()),
        ))
        .limit(7)
        .throttle(1);
    client
        .goto(&format!("{}query?entity=user&index=created", console.url))
        .await?;
    client
        .find(Locator::Css("#op"))
        .await?
        .select_by_value("between")
        .await?;
    type_into(client, "#v1", low).await?;
    type_into(client, "#v2", high).await?;
    type_into(client, "#limit", "7").await?;
    // one shard query at a time: the statistics of a page are then the same on every run
    type_into(client, "#throttle", "1").await?;
    client.find(Locator::Css("#run")).await?.click().await?;
    let mut token: Option<String> = None;
    let mut pages = Vec::new();
    for number in 1..=3 {
        client
            .wait()
            .for_element(Locator::Css(&format!("#results[data-page='{number}']")))
            .await?;
        let expected = library.page(token.as_deref()).await?;
        let ids: Vec<String> = expected.items.iter().map(|i| text(i, "userId")).collect();
        assert_eq!(shown_ids(client).await?, ids, "page {number}");
        shows_stats(client, &expected.stats, &format!("page {number}")).await?;
        let bars = client
            .find_all(Locator::Css("#shard-reads g[data-label]"))
            .await?;
        assert!(!bars.is_empty(), "a bar per shard read");
        assert!(
            client
                .find(Locator::Css("#records a.delete"))
                .await
                .is_err(),
            "a read-only console offers no delete"
        );
        if number == 1 {
            screenshot(client, "query").await?;
        }
        pages.push(ids);
        token = expected.next;
        assert!(token.is_some(), "more than three pages");
        client.find(Locator::Css("#next")).await?.click().await?;
    }
    // back from page 4 to page 3: the same records again
    client
        .wait()
        .for_element(Locator::Css("#results[data-page='4']"))
        .await?;
    client
        .find(Locator::Css("#previous"))
        .await?
        .click()
        .await?;
    client
        .wait()
        .for_element(Locator::Css("#results[data-page='3']"))
        .await?;
    assert_eq!(Some(&shown_ids(client).await?), pages.last());
    refusals(client, console, seen, low).await
}

/// The page's statistics are `stats` (`page` names the page in a failure).
async fn shows_stats(
    client: &Client,
    stats: &entity_manager::query::QueryStats,
    page: &str,
) -> TestResult {
    for (css, value) in [
        ("#stat-shards", stats.shards),
        ("#stat-shard-queries", stats.shard_queries),
        ("#stat-items-read", stats.items_read),
        ("#stat-items-returned", stats.items_returned),
    ] {
        assert_eq!(
            text_of(client, css).await?,
            value.to_string(),
            "{page}: {css}"
        );
    }
    let capacity: f64 = text_of(client, "#stat-capacity").await?.parse()?;
    assert!(
        (capacity - stats.consumed_capacity).abs() < 1e-9,
        "{page}: consumed capacity"
    );
    Ok(())
}

/// Malformed conditions are refused inline, and no `Query` reaches the table.
async fn refusals(client: &Client, console: &Console, seen: &Seen, low: &str) -> TestResult {
    let sent = queries_sent(seen);
    assert!(sent > 0, "the proxy counts the queries");
    for (filter, op, v1, refusal) in [
        ("created ~~ 5", "", "", "unknown operator `~~`"),
        ("created = abc", "", "", "`abc` is not a number"),
        ("", "between", low, "needs two values"),
    ] {
        client
            .goto(&format!("{}query?entity=user&index=created", console.url))
            .await?;
        type_into(client, "#filter", filter).await?;
        client
            .find(Locator::Css("#op"))
            .await?
            .select_by_value(op)
            .await?;
        type_into(client, "#v1", v1).await?;
        client.find(Locator::Css("#run")).await?.click().await?;
        let shown = client
            .wait()
            .for_element(Locator::Css("#refused"))
            .await?
            .text()
            .await?;
        assert!(shown.contains(refusal), "{filter} {op} {v1}: {shown}");
        assert!(shown.contains("Nothing was sent"), "{shown}");
        assert_eq!(
            queries_sent(seen),
            sent,
            "{filter} {op} {v1}: a query was sent"
        );
    }
    screenshot(client, "query-refused").await
}

/// Reloads the shards view until the whole-table scan is in `phase` (running until then; two
/// minutes at most).
async fn scan_until(client: &Client, console: &Console, phase: &str) -> TestResult {
    let started = Instant::now();
    loop {
        client.goto(&format!("{}shards", console.url)).await?;
        let state = attribute(client, "#scan-state", "data-state").await?;
        if state == phase {
            return Ok(());
        }
        assert_eq!(state, "running", "{}", text_of(client, "#heat").await?);
        assert!(
            started.elapsed() < Duration::from_mins(2),
            "the scan is not {phase}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A whole-table scan stopped in the page stops: its scan requests are held at the proxy while
/// the page shows it running and the stop is clicked, then released; it ends `stopped`, with
/// fewer records than the table holds.
async fn stop_scan(client: &Client, console: &Console, hold: &Hold) -> TestResult {
    client.goto(&format!("{}shards", console.url)).await?;
    hold.hold(b"DynamoDB_20120810.Scan\r\n");
    client
        .find(Locator::Css("#start-scan"))
        .await?
        .click()
        .await?;
    assert_eq!(
        attribute(client, "#scan-state", "data-state").await?,
        "running"
    );
    client
        .find(Locator::Css("#stop-scan"))
        .await?
        .click()
        .await?;
    hold.release();
    scan_until(client, console, "stopped").await?;
    let scanned: u64 = attribute(client, "#heat", "data-scanned").await?.parse()?;
    assert!(scanned < 300, "stopped after {scanned} of 300 records");
    screenshot(client, "shards-stopped").await
}

/// The heat map of a whole-table scan started in the page counts what a scan of the table
/// counts, records and bytes per shard; a sample shows its size.
async fn shards(client: &Client, console: &Console, store: &impl Store) -> TestResult {
    client.goto(&format!("{}shards", console.url)).await?;
    client
        .find(Locator::Css("#start-scan"))
        .await?
        .click()
        .await?;
    scan_until(client, console, "done").await?;
    let mut shown = BTreeMap::new();
    for row in client
        .find_all(Locator::Css("#shard-counts tr[data-shard]"))
        .await?
    {
        let shard = row.attr("data-shard").await?.unwrap_or_default();
        let count: u64 = row.attr("data-count").await?.unwrap_or_default().parse()?;
        let bytes: u64 = row.attr("data-bytes").await?.unwrap_or_default().parse()?;
        shown.insert(shard, (count, bytes));
    }
    let mut scanned: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let items: Vec<entity_manager::Item> = ParallelScan::new(store).items().try_collect().await?;
    for item in items.iter().filter(|i| !is_stamp(i, store.definition())) {
        let shard = scanned.entry(text(item, "hashKey")).or_default();
        shard.0 += 1;
        shard.1 += u64::try_from(item_size(item))?;
    }
    assert_eq!(shown, scanned);
    let cells = client
        .find_all(Locator::Css("#heat-map rect[data-count]"))
        .await?;
    assert!(cells.len() >= scanned.len(), "a cell per shard");
    screenshot(client, "shards").await?;
    client
        .goto(&format!("{}shards?sample=50", console.url))
        .await?;
    client
        .wait()
        .for_element(Locator::Css("#heat[data-source='sample'][data-size='50']"))
        .await?;
    Ok(())
}

/// The jobs view of an audit split over two workers: after the first worker, half the
/// segments are done and the page's totals are `report merge`'s; after the second, the job is
/// complete, and the totals are again `report merge`'s.
async fn jobs(
    client: &Client,
    console: &Console,
    journals: &Path,
    table: &str,
    endpoint: &str,
) -> TestResult {
    let journal = |w: u32| journals.join(format!("audit-{w}.jsonl"));
    let mut merged = Vec::new();
    for (w, complete) in [(0, "false"), (1, "true")] {
        let path = journal(w);
        let worker = format!("{w}/2");
        let out = run(&[
            "audit",
            "--table",
            table,
            "--segments",
            "8",
            "--page-size",
            "25",
            "--worker",
            &worker,
            "--checkpoint",
            arg(&path)?,
            "--endpoint-url",
            endpoint,
            "--json",
        ])?;
        assert_code(&out, 0);
        merged.push(path);
        let mut merge = vec!["report", "merge", "--json"];
        for p in &merged {
            merge.push(arg(p)?);
        }
        let out = run(&merge)?;
        let expected: Value = serde_json::from_slice(&out.stdout)?;
        let started = Instant::now();
        let shown: Value = loop {
            client.goto(&format!("{}jobs", console.url)).await?;
            if attribute(client, "#job", "data-complete").await? == complete {
                break serde_json::from_str(&text_of(client, "#merge-json").await?)?;
            }
            assert!(
                started.elapsed() < Duration::from_mins(1),
                "the page kept an old state"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert_eq!(shown, expected, "after worker {w}");
        let rows = client
            .find_all(Locator::Css("#workers tr[data-journal]"))
            .await?;
        assert_eq!(rows.len(), merged.len());
        let done = text_of(client, "#job-segments").await?;
        assert!(
            done.starts_with(if w == 0 { "4 of 8" } else { "8 of 8" }),
            "{done}"
        );
    }
    screenshot(client, "jobs").await
}

/// The changes view: a record put while the view is open appears in it, decoded (entity,
/// kind, key, record without keys), under its entity's filter and not under another's.
async fn changes(
    client: &Client,
    console: &Console,
    config: &Path,
    table: &str,
    endpoint: &str,
) -> TestResult {
    let page = |entity: &str| format!("{}changes?entity={entity}", console.url);
    // the tail starts with the view's first opening, at the stream's newest record: wait
    // until its first poll is answered
    let started = Instant::now();
    loop {
        client.goto(&page("")).await?;
        let polls = attribute(client, "#changes", "data-polls").await?;
        if polls != "0" {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_mins(1),
            "the stream was not polled"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let item = user(9999).to_string();
    let mut put = on("put", config, table, endpoint)?;
    put.extend(["--item", &item]);
    assert_code(&run(&put)?, 0);
    let row = "#change-lines tr[data-range-key='userId#c9999']";
    let started = Instant::now();
    let shown = loop {
        client.goto(&page("user")).await?;
        if let Ok(row) = client.find(Locator::Css(row)).await {
            break row.text().await?;
        }
        assert!(
            started.elapsed() < Duration::from_mins(1),
            "the change did not appear"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert!(shown.starts_with("INSERT user"), "{shown}");
    assert!(shown.contains("\"userId\":\"c9999\""), "{shown}");
    assert!(
        !shown.contains("hashKey\""),
        "the record is shown without its keys: {shown}"
    );
    screenshot(client, "changes").await?;
    client.goto(&page("email")).await?;
    client.wait().for_element(Locator::Css("#changes")).await?;
    assert!(
        client.find(Locator::Css(row)).await.is_err(),
        "filtered out by entity"
    );
    Ok(())
}

/// The league: players and coaches sharing the sharded multi-attribute index `byTeam` (same
/// name, same key), an item collection the console derives from the table's schema.
#[derive(Table)]
#[table(entities(Player, Coach))]
struct League;

#[allow(clippy::struct_field_names)] // fields are named after their attributes
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = League, unique = player_id, timestamp = created)]
#[shard_bumps(bumps = [bump(timestamp = 0, char_bits = 2, chars = 1)])]
#[index(name = "byTeam", hash = [team_id], range = [score], sharded)]
struct Player {
    #[transcode("string")]
    player_id: String,
    #[transcode("timestamp")]
    created: u64,
    team_id: String,
    score: i64,
}

#[allow(clippy::struct_field_names)] // fields are named after their attributes
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = League, unique = coach_id, timestamp = created)]
#[shard_bumps(bumps = [bump(timestamp = 0, char_bits = 1, chars = 1)])]
#[index(name = "byTeam", hash = [team_id], range = [score], sharded)]
struct Coach {
    #[transcode("string")]
    coach_id: String,
    #[transcode("timestamp")]
    created: u64,
    team_id: String,
    score: i64,
}

/// The query view of a table with an item collection (a second console, on a table made from
/// Rust entities): the picker offers `player + coach`, and its query's pages show the records
/// (each with its entity) and statistics of the library's tagged collection query, page after
/// page.
async fn collection(client: &Client, endpoint: &str) -> TestResult {
    let table = format!("cli-console-league-{}", std::process::id());
    let schema = League::schema()?;
    let store = support::store(endpoint, &table, schema)?;
    store.create_table().await?;
    let outcome = async {
        for i in 0..60_u32 {
            let (created, team, points) = (
                1_000 + u64::from(i),
                format!("t{}", i % 2),
                i64::from(i % 7),
            );
            if i % 3 == 0 {
                let coach = Coach {
                    coach_id: format!("c{i:02}"),
                    created,
                    team_id: team,
                    score: points,
                };
                coach.put(&store).await?;
            } else {
                let player = Player {
                    player_id: format!("p{i:02}"),
                    created,
                    team_id: team,
                    score: points,
                };
                player.put(&store).await?;
            }
        }
        // the schema and key profile from the table's stamp
        let console = Console::start(
            "league",
            &[
                "--table",
                &table,
                "--endpoint-url",
                endpoint,
                "--region",
                "us-east-1",
                "--write",
            ],
        )?;
        let shown = async {
            collection_pages(client, &console, &store, schema).await?;
            delete_record(client, &console, &store, schema).await
        }
        .await;
        shown.map_err(|e| format!("{e}\nthe league console's stderr: {}", console.stderr()).into())
    }
    .await;
    store.delete_table().await?;
    outcome
}

/// The library's query of the collection `player + coach` by `byTeam`, team `t1`.
fn team_t1<'a>(
    store: &'a entity_manager::store::DynamoStore,
    schema: &'a Schema,
) -> Result<MultiQuery<'a, entity_manager::store::DynamoStore>, BoxError> {
    Ok(MultiQuery::collection(
        store,
        vec![schema.entity("player")?, schema.entity("coach")?],
        "byTeam",
    )
    .hash([AttributeValue::S("t1".to_owned())]))
}

/// The collection's pages in the page against the library's.
async fn collection_pages(
    client: &Client,
    console: &Console,
    store: &entity_manager::store::DynamoStore,
    schema: &Schema,
) -> TestResult {
    let library = team_t1(store, schema)?
        .range(RangeCondition::Ge(AttributeValue::N("2".to_owned())))
        .limit(5)
        .throttle(1)
        .tagged();
    client.goto(&format!("{}query", console.url)).await?;
    // `+` is a space in a query string: the picker's value is sent encoded
    client
        .find(Locator::Css("#entity"))
        .await?
        .select_by_value("player+coach")
        .await?;
    client
        .wait()
        .for_element(Locator::Css("input[name='w.teamId']"))
        .await?;
    assert_eq!(
        attribute(client, "#index option[selected]", "value").await?,
        "byTeam"
    );
    type_into(client, "input[name='w.teamId']", "t1").await?;
    client
        .find(Locator::Css("#op"))
        .await?
        .select_by_value(">=")
        .await?;
    type_into(client, "#v1", "2").await?;
    type_into(client, "#limit", "5").await?;
    type_into(client, "#throttle", "1").await?;
    client.find(Locator::Css("#run")).await?.click().await?;
    let mut token: Option<String> = None;
    let mut entities = std::collections::BTreeSet::new();
    for number in 1..=3 {
        client
            .wait()
            .for_element(Locator::Css(&format!("#results[data-page='{number}']")))
            .await?;
        let expected = library.page(token.as_deref()).await?;
        let want: Vec<(String, String)> = expected
            .items
            .iter()
            .map(|m| {
                let unique = if m.entity == "coach" {
                    "coachId"
                } else {
                    "playerId"
                };
                (m.entity.clone(), text(&m.item, unique))
            })
            .collect();
        let mut got = Vec::new();
        for row in client
            .find_all(Locator::Css("#records tr[data-id]"))
            .await?
        {
            got.push((
                row.attr("data-entity").await?.unwrap_or_default(),
                row.attr("data-id").await?.unwrap_or_default(),
            ));
        }
        assert_eq!(got, want, "collection page {number}");
        entities.extend(want.into_iter().map(|(e, _)| e));
        shows_stats(
            client,
            &expected.stats,
            &format!("collection page {number}"),
        )
        .await?;
        if number == 1 {
            screenshot(client, "query-collection").await?;
        }
        token = expected.next;
        assert!(token.is_some(), "more than three pages");
        client.find(Locator::Css("#next")).await?.click().await?;
    }
    assert_eq!(entities.len(), 2, "both members are shown: {entities:?}");
    Ok(())
}

/// `s` percent-encoded for a form body.
fn encoded(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `--write`: a delete `POST` without this run's token, or with a wrong one, is refused (403)
/// and the record stays; in the browser, a record's delete link opens a confirmation page that
/// shows it, and confirming deletes it.
async fn delete_record(
    client: &Client,
    console: &Console,
    store: &entity_manager::store::DynamoStore,
    schema: &Schema,
) -> TestResult {
    let first = team_t1(store, schema)?.limit(1).tagged().page(None).await?;
    let record = first.items.first().ok_or("no record of team t1")?;
    let (hash, range) = (
        text(&record.item, "hashKey"),
        text(&record.item, "rangeKey"),
    );
    let mut key = entity_manager::Item::default();
    key.insert("hashKey".to_owned(), AttributeValue::S(hash.clone()));
    key.insert("rangeKey".to_owned(), AttributeValue::S(range.clone()));
    let own = console.address.to_string();
    let fields = format!("hashKey={}&rangeKey={}", encoded(&hash), encoded(&range));
    for body in [fields.clone(), format!("{fields}&token=0000")] {
        let answer = tokio::task::block_in_place(|| {
            http(console.address, "POST", Some(&own), "/delete", &body)
        })?;
        assert_eq!(answer.0, 403, "{body}: {}", answer.1);
        assert!(answer.1.contains("token"), "{}", answer.1);
        assert!(
            store.get_item(&key, None).await?.is_some(),
            "{body}: deleted"
        );
    }
    // in the page: the record's delete link, the confirmation, the deletion
    client
        .goto(&format!(
            "{}query?entity=player%2Bcoach&index=byTeam&w.teamId=t1&limit=1&run=1",
            console.url
        ))
        .await?;
    client
        .wait()
        .for_element(Locator::Css("#records a.delete"))
        .await?
        .click()
        .await?;
    let confirm = client
        .wait()
        .for_element(Locator::Css("#confirm-delete"))
        .await?;
    assert_eq!(
        confirm.attr("data-entity").await?.unwrap_or_default(),
        record.entity
    );
    assert!(
        store.get_item(&key, None).await?.is_some(),
        "deleted before the confirmation"
    );
    screenshot(client, "delete-confirm").await?;
    client.find(Locator::Css("#confirm")).await?.click().await?;
    let deleted = client.wait().for_element(Locator::Css("#deleted")).await?;
    assert_eq!(
        deleted.attr("data-range-key").await?.unwrap_or_default(),
        range
    );
    assert!(store.get_item(&key, None).await?.is_none(), "not deleted");
    Ok(())
}
