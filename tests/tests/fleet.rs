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
//!   `Error::KeyModeMismatch` when decoded, never a wrong value, and the records are not missed.
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

use entity_manager::query::Query;
use entity_manager::store::{DynamoStore, Store, WriteRequest};
use entity_manager::{AttributeValue, EntitySchema, Error, Item, KeyMode, Profile, Schema};
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
    Ok(TsRead {
        by_key: ids(&value["byKey"]),
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
async fn rust_get_by_id(
    store: &DynamoStore,
    entity: EntitySchema<'_>,
    players: &[Player],
) -> AnyResult<BTreeMap<String, Item>> {
    let table = entity.table();
    let mut keys = Vec::new();
    for player in players {
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
        let query = Query::new(store, entity).index(index).item(item).limit(25);
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
    let npm = Schema::from_ts_config_profile(&config, Profile::Npm6_14)?;
    let player = npm.entity("player")?;
    let table = store_support::unique_table("fleet");
    let store = DynamoStore::new(
        client,
        table.clone(),
        entity_manager::TableDefinition::from_schema(&npm)?,
    );
    let rt = runtime()?;
    rt.block_on(store.create_table())?;

    let scratch = std::env::temp_dir().join(format!("em-fleet-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let result = run(
        &node_path, &endpoint, &store, player, &config, &scratch, &rt,
    );
    let _ = std::fs::remove_dir_all(&scratch);
    rt.block_on(store.delete_table())?;
    result
}

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
    let ours = players(RUST)?;
    let theirs = players(TS)?;

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
    let mut rust_paged = BTreeMap::new();
    for index in &indexes {
        rust_paged.insert(
            index.clone(),
            rt.block_on(rust_page(store, player, index, &teams))?,
        );
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
    let whole = read_with(
        &json!({ "pageSize": TS_WHOLE_SHARD_PAGE, "limit": 50 }),
        "whole.json",
    )?;
    let small = read_with(&json!({}), "default.json")?;

    // (d) The default (native) profile on the same table.
    let native = Schema::from_ts_config_profile(config, Profile::Native)?;
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
        let (rust_ids, _) = &rust_paged[index];
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
        "  native profile: {}/{} TypeScript records found by id; {mismatches} generated keys refused with KeyModeMismatch, {decoded_alike} read alike in both modes",
        native_by_id.len(),
        theirs.len()
    )?;
    writeln!(
        summary,
        "  keys Rust computes for TypeScript's records equal TypeScript's: {rekeyed}/{}",
        theirs.len()
    )?;
    eprint!("{summary}");

    // (a) Rust finds all of TypeScript's records, by id and through every index, once each.
    assert_eq!(found_by_id, want_theirs, "{summary}");
    assert_eq!(rekeyed, PER_WRITER, "{summary}");
    for index in &indexes {
        let (rust_ids, duplicates) = &rust_paged[index];
        assert_eq!(*duplicates, 0, "{index}: duplicates\n{summary}");
        assert_eq!(
            with_prefix(rust_ids, TS),
            expected(index, theirs),
            "{index}\n{summary}"
        );
        assert_eq!(
            with_prefix(rust_ids, RUST),
            expected(index, ours),
            "{index}\n{summary}"
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
    // With its default page size, TypeScript pages the `created` index (a plain attribute) to
    // the end; on the generated-key indexes it fails loudly (a thrown error), never silently.
    for index in &indexes {
        let ts = &small.indexes[index];
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
