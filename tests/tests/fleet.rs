//! A live mixed fleet on DynamoDB Local: a Rust service (`Profile::Npm6_14`) and a TypeScript
//! service (`@karmaniverous/entity-manager` 6.14.0 with `@karmaniverous/entity-client-dynamodb`
//! 0.2.10, driven by `tests/ts-bench/fleet.mjs`) share one table, both configured from one JSON
//! config (`tests/ts-bench/fleet.json`). Each writes 200 players (ints, negatives, `fix6`
//! decimals, `bigint20` values, timestamps that are not 13 digits, empty strings), then:
//!
//! - (a) Rust finds every TypeScript record by key (by unique id alone, one candidate per bump)
//!   and by paging every index over every shard;
//! - (b) TypeScript finds every Rust record by key (`getPrimaryKey` + `getItems`) and by paging
//!   every index with its cross-shard query;
//! - (c) TypeScript paging finds the same records whichever service wrote them;
//! - (d) under the default (native) profile, a TypeScript-written key is the typed
//!   `Error::KeyModeMismatch` when decoded, never a wrong value, and the records are not missed;
//! - (e) the table is stamped with the npm 6.14 profile when Rust creates it: a Rust service with
//!   another profile or shard space fails before its first write, with the message asserted;
//! - (f) each side updates records the other wrote (score and name changed, keys rebuilt), and
//!   after the updates the keys each side reads equal the keys the other computes, on every
//!   generated property;
//! - (g) both sides page every index at page sizes 3, 10 and 1,000 (Rust: every record, once;
//!   TypeScript: every record at 1,000, and never a partial result without an error).
//!
//! The counts are printed per index and direction (`.ci/run` runs this test with `--nocapture`).
//!
//! Runs when `EM_TS_NODE_PATH` (`tests/ts-bench/install.sh`) and `DYNAMODB_ENDPOINT`
//! (`.ci/dynamodb-local.sh`) are set; skips with a printed reason otherwise, except under
//! `CI=true`, where it fails.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use entity_manager::model::{KeyMode, Profile, ShardHash};
use entity_manager::query::untyped::Query;
use entity_manager::store::{DynamoStore, Expect, STAMP_MISMATCH_CODE, Store, WriteRequest};
use entity_manager::{AttributeValue, EntitySchema, Error, Item, Schema};
use serde_json::{Value, json};

mod store_support;
mod ts_support;

use ts_support::{Players, dir, node_path};

type TestResult = Result<(), Box<dyn std::error::Error>>;
type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Players each service writes.
const PER_WRITER: usize = 200;
/// Rust's records are `r0000`.., TypeScript's `t0000`..: the same players otherwise.
const RUST: &str = "r";
const TS: &str = "t";
/// The page size TypeScript pages with when it must see every record (see the README: with a
/// page smaller than a shard, TS 6.14.0 cannot page its own generated keys).
const TS_WHOLE_SHARD_PAGE: u32 = 1_000;
/// The page sizes both sides page every index with.
const PAGE_SIZES: [usize; 3] = [3, 10, 1_000];
/// Every `UPDATE_EVERY`-th record of each writer is updated by the other side.
const UPDATE_EVERY: usize = 3;
/// The new scores and names of updated records: zero, negative, ±(2^53−1); empty, non-ASCII.
const NEW_SCORES: [i64; 4] = [0, -9_007_199_254_740_991, 9_007_199_254_740_991, -7];
const NEW_NAMES: [&str; 4] = ["", "Ωmega", "zoë", "ann"];

fn runtime() -> Result<tokio::runtime::Runtime, std::io::Error> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

fn config() -> AnyResult<Value> {
    Ok(serde_json::from_str(&std::fs::read_to_string(
        dir().join("fleet.json"),
    )?)?)
}

/// One player: its JSON for the TypeScript side (a `bigint20` as a string) and its item.
struct Player {
    id: String,
    json: Value,
    item: Item,
    team: Option<String>,
}

/// The same deterministic players for both writers, under ids `<prefix>0000`..
fn players(prefix: &str) -> AnyResult<Vec<Player>> {
    let balances = [
        "0",
        "-99999999999999999999",
        "99999999999999999999",
        "12345678901234567890",
        "-1",
        "9007199254740993",
    ];
    let mut source = Players::new();
    let mut out = Vec::with_capacity(PER_WRITER);
    for n in 0..PER_WRITER {
        let id = format!("{prefix}{n:04}");
        let (mut player, team) = source.player(n, &id);
        let balance = *source.pick(&balances);
        let mut item: Item = serde_dynamo::to_item(player.clone())?;
        item.insert("balance".into(), AttributeValue::N(balance.into()));
        player["balance"] = json!(balance);
        out.push(Player {
            id,
            json: player,
            item,
            team,
        });
    }
    Ok(out)
}

/// The `k`-th update: a new score and name (the unique and timestamp values stay).
fn update(player: &mut Player, k: usize) {
    let (score, name) = (
        NEW_SCORES[k % NEW_SCORES.len()],
        NEW_NAMES[k % NEW_NAMES.len()],
    );
    player.json["score"] = json!(score);
    player.json["name"] = json!(name);
    player
        .item
        .insert("score".into(), AttributeValue::N(score.to_string()));
    player
        .item
        .insert("name".into(), AttributeValue::S(name.to_owned()));
}

fn text(item: &Item, attribute: &str) -> Option<String> {
    match item.get(attribute) {
        Some(AttributeValue::S(s)) => Some(s.clone()),
        _ => None,
    }
}

/// Runs `fleet.mjs` and returns the JSON line it prints.
fn node(node_path: &str, args: &[&dyn AsRef<std::ffi::OsStr>]) -> AnyResult<Value> {
    let mut command = Command::new("node");
    command
        .env("NODE_PATH", node_path)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .arg(dir().join("fleet.mjs"));
    for arg in args {
        command.arg(arg);
    }
    let out = command.output()?;
    if !out.status.success() {
        return Err(format!(
            "node fleet.mjs failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let stdout = String::from_utf8(out.stdout)?;
    let line = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .ok_or("node fleet.mjs printed nothing")?;
    Ok(serde_json::from_str(line)?)
}

fn write_jsonl(path: &Path, players: &[&Player]) -> std::io::Result<()> {
    std::fs::write(
        path,
        players
            .iter()
            .map(|p| p.json.to_string() + "\n")
            .collect::<String>(),
    )
}

/// What TypeScript's `read` found on one index.
#[derive(Default)]
struct TsIndex {
    ids: BTreeSet<String>,
    pages: u64,
    items: u64,
    errors: Vec<String>,
    unterminated: u64,
}

/// What TypeScript's `read` found: by key, and per index.
struct TsRead {
    by_key: BTreeSet<String>,
    /// The items found by key (keys included), by id.
    by_key_items: BTreeMap<String, Value>,
    indexes: BTreeMap<String, TsIndex>,
}

fn ts_read(value: &Value) -> AnyResult<TsRead> {
    let ids = |v: &Value| -> BTreeSet<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut indexes = BTreeMap::new();
    for (name, index) in value["indexes"]
        .as_object()
        .ok_or("no indexes in the output of fleet.mjs read")?
    {
        indexes.insert(
            name.clone(),
            TsIndex {
                ids: ids(&index["ids"]),
                pages: index["pages"].as_u64().unwrap_or(0),
                items: index["items"].as_u64().unwrap_or(0),
                errors: index["errors"]
                    .as_array()
                    .map(|a| a.iter().map(ToString::to_string).collect())
                    .unwrap_or_default(),
                unterminated: index["unterminated"].as_u64().unwrap_or(0),
            },
        );
    }
    let by_key_items = value["byKeyItems"]
        .as_object()
        .map(|o| o.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    Ok(TsRead {
        by_key: ids(&value["byKey"]),
        by_key_items,
        indexes,
    })
}

/// The records of `players` each index holds: all but the `teamRating` records without a team
/// (its hash key is generated from `team`, so the index is sparse).
fn expected(index: &str, players: &[Player]) -> BTreeSet<String> {
    players
        .iter()
        .filter(|p| index != "teamRating" || p.team.is_some())
        .map(|p| p.id.clone())
        .collect()
}

/// Rust's get by unique id: every candidate key (one per bump) of every id, in batches. The
/// library's `EntityExt::get` needs a derived entity; a schema loaded from JSON has
/// `primary_keys` and the store's `batch_get`.
async fn rust_get_by_id<P: std::borrow::Borrow<Player>>(
    store: &DynamoStore,
    entity: EntitySchema<'_>,
    players: &[P],
) -> AnyResult<BTreeMap<String, Item>> {
    let table = entity.table();
    let mut keys = Vec::new();
    for player in players {
        let player = player.borrow();
        let mut probe = Item::default();
        probe.insert("playerId".into(), AttributeValue::S(player.id.clone()));
        for key in entity.primary_keys(&probe)? {
            let mut item = Item::default();
            item.insert(table.hash_key.to_string(), AttributeValue::S(key.hash_key));
            item.insert(
                table.range_key.to_string(),
                AttributeValue::S(key.range_key),
            );
            keys.push(item);
        }
    }
    let mut found = BTreeMap::new();
    for item in store.batch_get(keys, None).await? {
        if let Some(id) = text(&item, "playerId") {
            found.insert(id, item);
        }
    }
    Ok(found)
}

/// Rust's pages of one index to its end (per team for `teamRating`): the ids, and the ids seen
/// twice (exact mode promises none).
async fn rust_page(
    store: &DynamoStore,
    entity: EntitySchema<'_>,
    index: &str,
    teams: &BTreeSet<String>,
    page_size: usize,
) -> AnyResult<(BTreeSet<String>, usize)> {
    let items: Vec<Item> = if index == "teamRating" {
        teams
            .iter()
            .map(|team| {
                let mut item = Item::default();
                item.insert("team".into(), AttributeValue::S(team.clone()));
                item
            })
            .collect()
    } else {
        vec![Item::default()]
    };
    let mut ids = BTreeSet::new();
    let mut duplicates = 0;
    for item in items {
        let query = Query::new(store, entity)
            .index(index)
            .item(item)
            .limit(100)
            .page_size(page_size);
        let mut token: Option<String> = None;
        loop {
            let page = query.page(token.as_deref()).await?;
            for found in &page.items {
                let id = text(found, "playerId").ok_or("an item without playerId")?;
                if !ids.insert(id) {
                    duplicates += 1;
                }
            }
            token = page.next;
            if token.is_none() {
                break;
            }
        }
    }
    Ok((ids, duplicates))
}

fn with_prefix(ids: &BTreeSet<String>, prefix: &str) -> BTreeSet<String> {
    ids.iter()
        .filter(|id| id.starts_with(prefix))
        .cloned()
        .collect()
}

/// The ids without their writer's prefix: the players they are.
fn players_of(ids: &BTreeSet<String>, prefix: &str) -> BTreeSet<String> {
    ids.iter()
        .filter_map(|id| id.strip_prefix(prefix).map(str::to_owned))
        .collect()
}

fn ratio(found: &BTreeSet<String>, want: &BTreeSet<String>) -> String {
    format!("{}/{}", found.intersection(want).count(), want.len())
}

/// Numbers compare by value (`1e-6` and `0.000001` are one number).
fn same_value(a: &AttributeValue, b: &AttributeValue) -> bool {
    match (a, b) {
        (AttributeValue::N(x), AttributeValue::N(y)) => {
            x == y || x.parse::<f64>().ok() == y.parse::<f64>().ok()
        }
        _ => a == b,
    }
}

#[test]
fn a_rust_and_a_typescript_service_share_one_table_on_dynamodb_local() -> TestResult {
    let Some(node_path) = node_path() else {
        return Ok(());
    };
    let Some(client) = store_support::dynamo_client() else {
        return Ok(());
    };
    let endpoint = std::env::var("DYNAMODB_ENDPOINT")?;
    let config = config()?;
    let npm = Schema::from_ts_config(&config, Profile::Npm6_14)?;
    let player = npm.entity("player")?;
    let table = store_support::unique_table("fleet");
    let store = DynamoStore::new(
        client.clone(),
        table.clone(),
        entity_manager::store::TableDefinition::from_schema(&npm)?,
    );
    let rt = runtime()?;
    rt.block_on(store.create_table())?;
    // (e) the table is stamped: a Rust service with another profile or shard space fails
    // before its first write
    rt.block_on(refused_before_first_write(&client, &table, &config))?;

    let scratch = std::env::temp_dir().join(format!("em-fleet-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let result = run(
        &node_path, &endpoint, &store, player, &config, &scratch, &rt,
    );
    let _ = std::fs::remove_dir_all(&scratch);
    rt.block_on(store.delete_table())?;
    result
}

/// (e) Services with the wrong profile (native), the wrong shard space and numeric hashing
/// (upstream v8) and the wrong shard space alone, against the table Rust created with the npm
/// 6.14 profile: the first write fails, naming both settings and the fix, and nothing is
/// written.
async fn refused_before_first_write(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    config: &Value,
) -> TestResult {
    let npm = Schema::from_ts_config(config, Profile::Npm6_14)?;
    let npm_in_power = Schema::new(
        npm.table()
            .clone()
            .with_shard_space(entity_manager::model::ShardSpace::Power),
        npm.entities().to_vec(),
    )?;
    let cases = [
        (
            Schema::from_ts_config(config, Profile::Native)?,
            "this service makes keys with profile `native` (key mode `transcoded`, shard space `product`",
        ),
        (
            Schema::from_ts_config(config, Profile::Upstream8)?,
            "this service makes keys with profile `upstream-8` (key mode `typescript`, shard space `power`",
        ),
        (
            npm_in_power,
            "this service makes keys with no named profile (key mode `typescript`, shard space `power`",
        ),
    ];
    let stamped = "the table is stamped with profile `npm-6.14` (key mode `typescript`, shard space `product`";
    let fix = "load the configuration with the table's profile (`Profile::Npm6_14`; CLI: `--key-profile npm-6.14`)";
    for (schema, ours) in &cases {
        let store = DynamoStore::new(
            client.clone(),
            table,
            entity_manager::store::TableDefinition::from_schema(schema)?,
        );
        let entity = schema.entity("player")?;
        let mut source = Players::new();
        let (player, _) = source.player(1, "wrong-profile");
        let item = entity.add_keys(&serde_dynamo::to_item(player)?)?;
        let error = store
            .batch_write(vec![WriteRequest::Put(item.clone())])
            .await
            .err()
            .ok_or("a write under another profile succeeded")?;
        assert_eq!(error.unwritten.len(), 1);
        let message = error.cause.to_string();
        assert_eq!(error.cause.code(), Some(STAMP_MISMATCH_CODE), "{message}");
        for part in [stamped, ours, fix, "nothing was written"] {
            assert!(message.contains(part), "`{part}` not in: {message}");
        }
        let error = store
            .put_item(item, Expect::Any)
            .await
            .err()
            .ok_or("a put under another profile succeeded")?;
        assert_eq!(error.code(), Some(STAMP_MISMATCH_CODE), "{error}");
    }
    // nothing was written
    let scanned = DynamoStore::new(
        client.clone(),
        table,
        entity_manager::store::TableDefinition::from_schema(&npm)?,
    )
    .scan_page(&entity_manager::store::ScanPage::new())
    .await?;
    assert!(scanned.items.is_empty(), "{:?}", scanned.items);
    eprintln!(
        "stamp: writes under profile native, upstream-8 and npm-6.14 in the power shard space refused before the first write"
    );
    Ok(())
}

/// (f) TypeScript updates every `UPDATE_EVERY`-th Rust record, Rust every `UPDATE_EVERY`-th
/// TypeScript record (found by id first), with a new score and name; `ours` and `theirs` get
/// the new values. Returns how many each side updated.
#[allow(clippy::too_many_arguments)] // the scenario's handles
fn cross_updates(
    node_path: &str,
    endpoint: &str,
    store: &DynamoStore,
    player: EntitySchema<'_>,
    ours: &mut [Player],
    theirs: &mut [Player],
    scratch: &Path,
    rt: &tokio::runtime::Runtime,
) -> AnyResult<(usize, usize)> {
    let config_path = dir().join("fleet.json");
    let table = store.table_name().to_owned();
    // TypeScript updates Rust's records
    let mut by_ts = Vec::new();
    for (k, p) in ours.iter_mut().step_by(UPDATE_EVERY).enumerate() {
        update(p, k);
        by_ts.push(&*p);
    }
    let path = scratch.join("ts-updates.jsonl");
    write_jsonl(&path, &by_ts)?;
    let out = node(
        node_path,
        &[&"update", &endpoint, &table, &config_path, &"player", &path],
    )?;
    assert_eq!(
        out["found"],
        json!(by_ts.len()),
        "TypeScript looked up Rust records: {out}"
    );
    assert_eq!(out["written"], json!(by_ts.len()), "{out}");
    // Rust updates TypeScript's records: found by id, changed, keys rebuilt, put
    let targets: Vec<usize> = (0..theirs.len()).step_by(UPDATE_EVERY).collect();
    let mut found = rt.block_on(rust_get_by_id(
        store,
        player,
        &targets.iter().map(|&i| &theirs[i]).collect::<Vec<_>>(),
    ))?;
    assert_eq!(
        found.len(),
        targets.len(),
        "Rust looked up TypeScript records"
    );
    for (k, &i) in targets.iter().enumerate() {
        let p = &mut theirs[i];
        update(p, k);
        let mut record = player.remove_keys(&found.remove(&p.id).ok_or("not found")?);
        record.insert("score".into(), p.item["score"].clone());
        record.insert("name".into(), p.item["name"].clone());
        rt.block_on(store.put_item(player.add_keys(&record)?, Expect::Present))?;
    }
    Ok((by_ts.len(), targets.len()))
}

/// The key attributes of a `fleet.json` player.
const KEY_ATTRIBUTES: [&str; 6] = [
    "hashKey",
    "rangeKey",
    "teamHashKey",
    "scoreRangeKey",
    "ratingRangeKey",
    "balanceRangeKey",
];

#[allow(clippy::too_many_lines)] // one scenario, told in order
fn run(
    node_path: &str,
    endpoint: &str,
    store: &DynamoStore,
    player: EntitySchema<'_>,
    config: &Value,
    scratch: &Path,
    rt: &tokio::runtime::Runtime,
) -> TestResult {
    let config_path = dir().join("fleet.json");
    let table = store.table_name().to_owned();
    let mut ours = players(RUST)?;
    let mut theirs = players(TS)?;

    // Rust writes its players under the npm 6.14 profile.
    let writes = ours
        .iter()
        .map(|p| Ok(WriteRequest::Put(player.add_keys(&p.item)?)))
        .collect::<AnyResult<Vec<_>>>()?;
    rt.block_on(store.batch_write(writes))?;

    // TypeScript writes its players: addKeys + putItems.
    let ts_records = scratch.join("ts.jsonl");
    write_jsonl(&ts_records, &theirs.iter().collect::<Vec<_>>())?;
    let written = node(
        node_path,
        &[
            &"write",
            &endpoint,
            &table,
            &config_path,
            &"player",
            &ts_records,
        ],
    )?;
    assert_eq!(written["written"], json!(PER_WRITER), "{written}");

    // (f) each side updates records the other wrote
    let (updated_by_ts, updated_by_rust) = cross_updates(
        node_path,
        endpoint,
        store,
        player,
        &mut ours,
        &mut theirs,
        scratch,
        rt,
    )?;

    // (a) Rust reads TypeScript's records: by unique id, and paging every index.
    let by_id = rt.block_on(rust_get_by_id(store, player, &theirs))?;
    // the keys Rust would write for each TypeScript record are the ones TypeScript wrote
    let mut rekeyed = 0;
    for (id, item) in &by_id {
        let again = player.add_keys(&player.remove_keys(item))?;
        for (name, value) in item.iter() {
            let mine = again
                .get(name)
                .ok_or_else(|| format!("{id}: {name} lost"))?;
            assert!(
                same_value(mine, value),
                "{id}.{name}: {mine:?}, TS wrote {value:?}"
            );
        }
        assert_eq!(again.len(), item.len(), "{id}: {again:?} vs {item:?}");
        let want = theirs
            .iter()
            .find(|p| &p.id == id)
            .ok_or_else(|| format!("{id}: not a TypeScript player"))?;
        for name in ["score", "name", "created"] {
            match (item.get(name), want.item.get(name)) {
                (Some(a), Some(b)) => assert!(same_value(a, b), "{id}.{name}: {a:?}, want {b:?}"),
                (a, b) => assert_eq!(a, b, "{id}.{name}"),
            }
        }
        rekeyed += 1;
    }
    let both: Vec<Player> = ours.into_iter().chain(theirs).collect();
    let (ours, theirs) = both.split_at(PER_WRITER);
    let teams: BTreeSet<String> = both.iter().filter_map(|p| p.team.clone()).collect();
    let indexes: Vec<String> = config["indexes"]
        .as_object()
        .ok_or("no indexes")?
        .keys()
        .cloned()
        .collect();
    let timer = std::time::Instant::now();
    let mut rust_paged = BTreeMap::new();
    for index in &indexes {
        for size in PAGE_SIZES {
            rust_paged.insert(
                (index.clone(), size),
                rt.block_on(rust_page(store, player, index, &teams, size))?,
            );
        }
    }

    // (b) TypeScript reads every record: by key, and paging every index, once with pages that
    // hold a whole shard, once with its default page size (10).
    let all_records = scratch.join("all.jsonl");
    write_jsonl(&all_records, &both.iter().collect::<Vec<_>>())?;
    let read_with = |options: &Value, name: &str| -> AnyResult<TsRead> {
        let path = scratch.join(name);
        std::fs::write(&path, options.to_string())?;
        ts_read(&node(
            node_path,
            &[
                &"read",
                &endpoint,
                &table,
                &config_path,
                &"player",
                &all_records,
                &path,
            ],
        )?)
    };
    let rust_paging = timer.elapsed();
    let whole = read_with(
        &json!({ "pageSize": TS_WHOLE_SHARD_PAGE, "limit": 50 }),
        "whole.json",
    )?;
    let ts_whole = timer.elapsed();
    let small = read_with(&json!({}), "default.json")?;
    let ts_small = timer.elapsed();
    let tiny = read_with(&json!({ "pageSize": 3, "limit": 1_000 }), "three.json")?;
    eprintln!(
        "timings: rust paging {rust_paging:?}, ts 1000 {:?}, ts 10 {:?}, ts 3 {:?}",
        ts_whole.saturating_sub(rust_paging),
        ts_small.saturating_sub(ts_whole),
        timer.elapsed().saturating_sub(ts_small)
    );

    // (f) the keys TypeScript reads for every Rust record (updated or not) are the keys Rust
    // computes for it, on every generated property
    let mut keys_checked = 0;
    for p in ours {
        let theirs_read = whole
            .by_key_items
            .get(&p.id)
            .ok_or_else(|| format!("{}: not found by TypeScript", p.id))?;
        let mine = player.add_keys(&p.item)?;
        for key in KEY_ATTRIBUTES {
            let want = text(&mine, key);
            let got = theirs_read[key].as_str().map(str::to_owned);
            assert_eq!(got, want, "{}.{key}: TypeScript read {got:?}", p.id);
            keys_checked += usize::from(want.is_some());
        }
        for name in ["score", "name"] {
            let got = &theirs_read[name];
            let want = &p.json[name];
            assert!(
                got == want || got.as_f64() == want.as_f64() && want.is_number(),
                "{}.{name}: TypeScript read {got}, want {want}",
                p.id
            );
        }
    }

    // (d) The default (native) profile on the same table. Its shard hash (SHA-256) is not
    // TypeScript's (`string-hash`): by id it finds exactly the records whose shard both hashes
    // pick, never a wrong one.
    let native = Schema::from_ts_config(config, Profile::Native)?;
    let npm_player = Schema::from_ts_config(config, Profile::Npm6_14)?;
    let npm_player = npm_player.entity("player")?;
    let native_sha = rt.block_on(rust_get_by_id(store, native.entity("player")?, theirs))?;
    let mut same_shard = BTreeSet::new();
    for p in theirs {
        // the whole record (its timestamp picks the bump, so one key each)
        let native_keys = native.entity("player")?.primary_keys(&p.item)?;
        let theirs_keys = npm_player.primary_keys(&p.item)?;
        if native_keys.iter().any(|k| {
            theirs_keys
                .iter()
                .any(|t| (&t.hash_key, &t.range_key) == (&k.hash_key, &k.range_key))
        }) {
            same_shard.insert(p.id.clone());
        }
    }
    let native_sha_ids: BTreeSet<String> = native_sha.keys().cloned().collect();
    assert_eq!(native_sha_ids, same_shard, "native (SHA-256) by id");
    assert!(
        same_shard.len() < PER_WRITER,
        "the two hashes agree on every id?"
    );
    // With TypeScript's shard hash, the native key mode alone differs: every record is found
    // by id, and its generated keys are refused as a mode mismatch or read as its own values.
    // (reads of a table stamped with another profile go ahead, with a warning)
    let native = Schema::new(
        native
            .table()
            .clone()
            .with_shard_hash(ShardHash::StringHash),
        native.entities().to_vec(),
    )?;
    let native_player = native.entity("player")?;
    let native_by_id = rt.block_on(rust_get_by_id(store, native_player, theirs))?;
    let mut mismatches = 0;
    let mut decoded_alike = 0;
    for (id, item) in &native_by_id {
        for key in ["scoreRangeKey", "ratingRangeKey", "balanceRangeKey"] {
            let Some(encoded) = text(item, key) else {
                continue;
            };
            match native_player.decode_generated(&encoded) {
                Err(Error::KeyModeMismatch { table, written, .. }) => {
                    assert_eq!((table, written), (KeyMode::Transcoded, KeyMode::TypeScript));
                    mismatches += 1;
                }
                Ok(decoded) => {
                    // the same in both modes (strings, 13-digit timestamps, absent values):
                    // then it must be the record's own values, never a wrong one
                    for (name, value) in decoded.iter() {
                        let want = item.get(name).ok_or_else(|| {
                            format!("{id}: {name} decoded from {encoded} but not in the record")
                        })?;
                        assert!(
                            same_value(value, want),
                            "{id}: {name} = {value:?} from {encoded}, record has {want:?}"
                        );
                    }
                    decoded_alike += 1;
                }
                Err(other) => {
                    return Err(
                        format!("{id}: {encoded}: expected KeyModeMismatch, got {other}").into(),
                    );
                }
            }
        }
    }

    // The table of counts.
    let want_ours: BTreeSet<String> = ours.iter().map(|p| p.id.clone()).collect();
    let want_theirs: BTreeSet<String> = theirs.iter().map(|p| p.id.clone()).collect();
    let found_by_id: BTreeSet<String> = by_id.keys().cloned().collect();
    let mut summary = String::new();
    writeln!(
        summary,
        "fleet on DynamoDB Local: {PER_WRITER} players written by Rust (Profile::Npm6_14), {PER_WRITER} by TypeScript (entity-manager 6.14.0 + entity-client-dynamodb 0.2.10)"
    )?;
    writeln!(
        summary,
        "  {:<18} {:>9} {:>9} {:>9}   {:<44}",
        "index", "ts->rust", "rust->ts", "ts->ts", "TS paging with its default page size (10)"
    )?;
    writeln!(
        summary,
        "  {:<18} {:>9} {:>9} {:>9}",
        "key (by id)",
        ratio(&found_by_id, &want_theirs),
        ratio(&whole.by_key, &want_ours),
        ratio(&whole.by_key, &want_theirs),
    )?;
    for index in &indexes {
        let (rust_ids, _) = &rust_paged[&(index.clone(), 3)];
        let ts_whole = whole.indexes.get(index).ok_or("index missing")?;
        let ts_small = small.indexes.get(index).ok_or("index missing")?;
        let want_o = expected(index, ours);
        let want_t = expected(index, theirs);
        writeln!(
            summary,
            "  {:<18} {:>9} {:>9} {:>9}   rust->ts {} ts->ts {}, {} pages, {} items, {} errors{}",
            format!("index {index}"),
            ratio(rust_ids, &want_t),
            ratio(&ts_whole.ids, &want_o),
            ratio(&ts_whole.ids, &want_t),
            ratio(&ts_small.ids, &want_o),
            ratio(&ts_small.ids, &want_t),
            ts_small.pages,
            ts_small.items,
            ts_small.errors.len(),
            ts_small
                .errors
                .first()
                .map(|e| format!(" (first: {e})"))
                .unwrap_or_default(),
        )?;
    }
    writeln!(
        summary,
        "  native profile: {}/{} TypeScript records found by id with SHA-256 shards (all whose shard both hashes pick), {}/{} with string-hash shards; {mismatches} generated keys refused with KeyModeMismatch, {decoded_alike} read alike in both modes",
        native_sha.len(),
        theirs.len(),
        native_by_id.len(),
        theirs.len()
    )?;
    writeln!(
        summary,
        "  keys Rust computes for TypeScript's records equal TypeScript's: {rekeyed}/{}",
        theirs.len()
    )?;
    writeln!(
        summary,
        "  updates: TypeScript updated {updated_by_ts} Rust records, Rust {updated_by_rust} TypeScript records; {keys_checked} keys TypeScript read for Rust's records equal Rust's"
    )?;
    for index in &indexes {
        let sizes: Vec<String> = PAGE_SIZES
            .iter()
            .map(|size| {
                let (ids, _) = &rust_paged[&(index.clone(), *size)];
                let want: BTreeSet<String> = expected(index, ours)
                    .union(&expected(index, theirs))
                    .cloned()
                    .collect();
                format!("{size}: {}", ratio(ids, &want))
            })
            .collect();
        let ts: Vec<String> = [(3, &tiny), (10, &small), (1_000, &whole)]
            .iter()
            .map(|(size, read)| {
                let r = &read.indexes[index];
                let want: BTreeSet<String> = expected(index, ours)
                    .union(&expected(index, theirs))
                    .cloned()
                    .collect();
                format!(
                    "{size}: {} ({} errors)",
                    ratio(&r.ids, &want),
                    r.errors.len()
                )
            })
            .collect();
        writeln!(
            summary,
            "  paging {index:<12} rust {}   ts {}",
            sizes.join(", "),
            ts.join(", ")
        )?;
    }
    eprint!("{summary}");

    // (a) Rust finds all of TypeScript's records, by id and through every index, once each.
    assert_eq!(found_by_id, want_theirs, "{summary}");
    assert_eq!(rekeyed, PER_WRITER, "{summary}");
    for ((index, size), (rust_ids, duplicates)) in &rust_paged {
        assert_eq!(*duplicates, 0, "{index} ({size}): duplicates\n{summary}");
        assert_eq!(
            with_prefix(rust_ids, TS),
            expected(index, theirs),
            "{index} ({size})\n{summary}"
        );
        assert_eq!(
            with_prefix(rust_ids, RUST),
            expected(index, ours),
            "{index} ({size})\n{summary}"
        );
    }
    // (b) TypeScript finds all of Rust's records, by key and through every index.
    assert_eq!(with_prefix(&whole.by_key, RUST), want_ours, "{summary}");
    assert_eq!(with_prefix(&whole.by_key, TS), want_theirs, "{summary}");
    for index in &indexes {
        let ts = &whole.indexes[index];
        assert!(ts.errors.is_empty(), "{index}: {:?}\n{summary}", ts.errors);
        assert_eq!(ts.unterminated, 0, "{index}\n{summary}");
        assert_eq!(
            with_prefix(&ts.ids, RUST),
            expected(index, ours),
            "{index}\n{summary}"
        );
        // (c) the same players whichever service wrote them
        assert_eq!(
            players_of(&ts.ids, RUST),
            players_of(&ts.ids, TS),
            "{index}\n{summary}"
        );
    }
    // With its default page size (10) and with 3, TypeScript pages the `created` index (a plain
    // attribute) to the end; on the generated-key indexes it may fail, but loudly (a thrown
    // error), never silently.
    for (index, ts) in indexes
        .iter()
        .flat_map(|i| [(i, &small.indexes[i]), (i, &tiny.indexes[i])])
    {
        let complete = with_prefix(&ts.ids, RUST) == expected(index, ours)
            && with_prefix(&ts.ids, TS) == expected(index, theirs);
        if index == "created" {
            assert!(complete && ts.errors.is_empty(), "{index}\n{summary}");
        } else {
            assert!(
                complete || !ts.errors.is_empty(),
                "{index}: a partial result without an error\n{summary}"
            );
        }
        assert_eq!(ts.unterminated, 0, "{index}\n{summary}");
    }
    // (d) native: no record missed, every TypeScript key either refused as a mode mismatch or
    // read as its own value (checked above), and most are refused.
    assert_eq!(native_by_id.len(), PER_WRITER, "{summary}");
    assert!(mismatches > PER_WRITER, "{summary}");
    Ok(())
}

/// Issue 47: a Rust service joins a table a TypeScript service created and wrote, without a
/// stamp. Writers on the wrong profile (native), the wrong shard space and numeric hashing
/// (upstream 8) and the wrong shard space alone write 0 records, each error naming the
/// profile the records show (npm 6.14) as the fix; the right profile writes, and its first
/// write stamps the table; TypeScript still finds every record by key and by paging every
/// index.
#[test]
fn a_rust_service_joins_an_unstamped_typescript_table_on_dynamodb_local() -> TestResult {
    let Some(node_path) = node_path() else {
        return Ok(());
    };
    let Some(client) = store_support::dynamo_client() else {
        return Ok(());
    };
    let endpoint = std::env::var("DYNAMODB_ENDPOINT")?;
    let config = config()?;
    let npm = Schema::from_ts_config(&config, Profile::Npm6_14)?;
    let table = store_support::unique_table("fleet-join");
    let definition = entity_manager::store::TableDefinition::from_schema(&npm)?;
    // the table as a TypeScript service has it: no stamp
    let creator = DynamoStore::new(client.clone(), table.clone(), definition.with_stamp(None));
    let rt = runtime()?;
    rt.block_on(creator.create_table())?;
    let scratch = std::env::temp_dir().join(format!("em-fleet-join-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let result = join(
        &node_path, &endpoint, &client, &creator, &config, &scratch, &rt,
    );
    let _ = std::fs::remove_dir_all(&scratch);
    rt.block_on(creator.delete_table())?;
    result
}

/// Every item of the table (the creator's store does not check the stamp; scans leave it out).
async fn scan_all(store: &DynamoStore) -> AnyResult<Vec<Item>> {
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let page = store
            .scan_page(&entity_manager::store::ScanPage::new().start_after(start))
            .await?;
        items.extend(page.items);
        match page.last_evaluated_key {
            Some(key) => start = Some(key),
            None => return Ok(items),
        }
    }
}

#[allow(clippy::too_many_lines)] // one scenario, step by step
fn join(
    node_path: &str,
    endpoint: &str,
    client: &aws_sdk_dynamodb::Client,
    creator: &DynamoStore,
    config: &Value,
    scratch: &Path,
    rt: &tokio::runtime::Runtime,
) -> TestResult {
    let config_path = dir().join("fleet.json");
    let table = creator.table_name().to_owned();
    let theirs = players(TS)?;
    let ours = players(RUST)?;

    // TypeScript writes its players to the unstamped table.
    let ts_records = scratch.join("ts.jsonl");
    write_jsonl(&ts_records, &theirs.iter().collect::<Vec<_>>())?;
    let written = node(
        node_path,
        &[
            &"write",
            &endpoint,
            &table,
            &config_path,
            &"player",
            &ts_records,
        ],
    )?;
    assert_eq!(written["written"], json!(PER_WRITER), "{written}");
    assert_eq!(rt.block_on(creator.table_stamp())?, None);

    // Rust writers on the wrong profile or shard space: refused before their first write.
    let npm = Schema::from_ts_config(config, Profile::Npm6_14)?;
    let npm_in_power = Schema::new(
        npm.table()
            .clone()
            .with_shard_space(entity_manager::model::ShardSpace::Power),
        npm.entities().to_vec(),
    )?;
    let wrong = [
        (Schema::from_ts_config(config, Profile::Native)?, "native"),
        (
            Schema::from_ts_config(config, Profile::Upstream8)?,
            "upstream-8",
        ),
        (npm_in_power, "npm-6.14 in the power shard space"),
    ];
    let mut refused = Vec::new();
    for (schema, name) in &wrong {
        let store = DynamoStore::new(
            client.clone(),
            table.clone(),
            entity_manager::store::TableDefinition::from_schema(schema)?,
        );
        let entity = schema.entity("player")?;
        let writes = ours
            .iter()
            .map(|p| Ok(WriteRequest::Put(entity.add_keys(&p.item)?)))
            .collect::<AnyResult<Vec<_>>>()?;
        let error = rt
            .block_on(store.batch_write(writes))
            .err()
            .ok_or_else(|| format!("{name}: a batch write to TypeScript's table went ahead"))?;
        assert_eq!(error.unwritten.len(), PER_WRITER, "{name}");
        assert_eq!(
            error.cause.code(),
            Some(STAMP_MISMATCH_CODE),
            "{name}: {}",
            error.cause
        );
        let message = error.cause.to_string();
        for part in [
            "has no stamp",
            "are those of profile `npm-6.14` and no other",
            "--key-profile npm-6.14",
            "nothing was written",
        ] {
            assert!(message.contains(part), "{name}: `{part}` not in: {message}");
        }
        for own in ["--key-profile native", "--key-profile upstream-8"] {
            assert!(!message.contains(own), "{name}: advises `{own}`: {message}");
        }
        let item = entity.add_keys(&ours[0].item)?;
        let error = rt
            .block_on(store.put_item(item, Expect::Any))
            .err()
            .ok_or_else(|| format!("{name}: a put to TypeScript's table went ahead"))?;
        assert_eq!(error.code(), Some(STAMP_MISMATCH_CODE), "{name}: {error}");
        refused.push(format!("{name}: 0 of {} written", PER_WRITER + 1));
    }
    let after_wrong = rt.block_on(scan_all(creator))?;
    assert_eq!(after_wrong.len(), PER_WRITER, "the wrong writers wrote");
    assert_eq!(rt.block_on(creator.table_stamp())?, None);

    // The right profile writes; its first write stamps the table with it.
    let store = DynamoStore::new(
        client.clone(),
        table.clone(),
        entity_manager::store::TableDefinition::from_schema(&npm)?,
    );
    let player = npm.entity("player")?;
    let writes = ours
        .iter()
        .map(|p| Ok(WriteRequest::Put(player.add_keys(&p.item)?)))
        .collect::<AnyResult<Vec<_>>>()?;
    rt.block_on(store.batch_write(writes))?;
    let stamp = rt
        .block_on(creator.table_stamp())?
        .ok_or("the right profile's first write did not stamp the table")?;
    assert_eq!(stamp.profile(), Some(Profile::Npm6_14));
    assert_eq!(rt.block_on(scan_all(creator))?.len(), 2 * PER_WRITER);

    // TypeScript finds every record by key and by paging every index (not the stamp).
    let both: Vec<&Player> = ours.iter().chain(&theirs).collect();
    let all_records = scratch.join("all.jsonl");
    write_jsonl(&all_records, &both)?;
    let options = scratch.join("whole.json");
    std::fs::write(
        &options,
        json!({ "pageSize": TS_WHOLE_SHARD_PAGE, "limit": 50 }).to_string(),
    )?;
    let read = ts_read(&node(
        node_path,
        &[
            &"read",
            &endpoint,
            &table,
            &config_path,
            &"player",
            &all_records,
            &options,
        ],
    )?)?;
    let want: BTreeSet<String> = both.iter().map(|p| p.id.clone()).collect();
    assert_eq!(read.by_key, want, "TypeScript by key");
    let all: Vec<Player> = players(RUST)?.into_iter().chain(players(TS)?).collect();
    let mut paged = Vec::new();
    for (index, found) in &read.indexes {
        assert!(found.errors.is_empty(), "{index}: {:?}", found.errors);
        assert_eq!(
            found.ids,
            expected(index, &all),
            "TypeScript paging {index}"
        );
        paged.push(format!("{index} {}", found.ids.len()));
    }
    eprintln!(
        "join of an unstamped TypeScript table: {}; npm-6.14: {PER_WRITER} written, table stamped {}; TypeScript found {}/{} by key, by paging {}",
        refused.join(", "),
        stamp.describe(),
        read.by_key.len(),
        want.len(),
        paged.join(", ")
    );
    Ok(())
}
