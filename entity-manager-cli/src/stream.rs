//! `stream`: follows the table's DynamoDB stream and prints every change, decoded against the
//! configuration, as one JSON line; resumable from a checkpoint file.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use entity_manager::store::{TableDefinition, is_stamp};
use entity_manager::stream::{
    Change, Checkpoint, StartAt, StreamError, StreamReader, StreamRecord,
};
use entity_manager::{Item, Schema};
use serde_json::{Value, json};

use crate::connection::{Place, explain_at};
use crate::scan::{counts_json, counts_text};
use crate::{ConfigArgs, Connection, Failure, connect, job, out, runtime};

#[derive(Debug, Args)]
pub(crate) struct StreamArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// The table name.
    #[arg(long)]
    table: String,
    /// Where to begin without a checkpoint: the oldest record the stream keeps (24 hours), or
    /// only changes made from now on.
    #[arg(long, value_enum, default_value_t = From::TrimHorizon)]
    from: From,
    /// Save the position here after every batch printed, and resume from it when it exists.
    #[arg(long)]
    checkpoint: Option<PathBuf>,
    /// Print only the changes of this entity.
    #[arg(long)]
    entity: Option<String>,
    /// Stop once every shard is read up to its newest record, instead of waiting for changes.
    #[arg(long)]
    no_follow: bool,
    /// How long to wait between polls once caught up, in milliseconds.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    poll_interval: u64,
    /// The DynamoDB Streams endpoint URL (default: `AWS_ENDPOINT_URL_DYNAMODB_STREAMS`, else
    /// the DynamoDB endpoint of `--endpoint-url`, `AWS_ENDPOINT_URL_DYNAMODB`,
    /// `AWS_ENDPOINT_URL` or the profile, since DynamoDB Local serves both APIs at one URL;
    /// else the region's `https://streams.dynamodb.<region>.amazonaws.com`).
    #[arg(long, env = "DYNAMODB_STREAMS_ENDPOINT")]
    streams_endpoint: Option<String>,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum From {
    TrimHorizon,
    Latest,
}

/// What a stream checkpoint file holds: the table it belongs to and the reader's position.
#[derive(serde::Serialize, serde::Deserialize)]
struct StreamState {
    table: String,
    position: Checkpoint,
}

/// One change as a JSON line: kind, entity, key, sequence number, the images (without keys),
/// whether Time to Live removed it, and for a modify with both images the fields and generated
/// keys that changed.
pub(crate) fn change_json(schema: &Schema, change: &Change<Item>) -> Result<Value, Failure> {
    // attributes by name, keys appended: the same order on every line
    let order = out::Order::keys_last(out::key_names(schema, Some(&change.entity)));
    let image = |item: &Option<Item>| -> Result<Value, Failure> {
        Ok(item
            .as_ref()
            .map_or(Value::Null, |i| out::item(i, &order, out::Format::Json)))
    };
    let table = schema.table();
    let mut line = json!({
        "kind": change.kind.as_str(),
        "entity": change.entity,
        "key": {
            &*table.hash_key: change.key.hash_key,
            &*table.range_key: change.key.range_key,
        },
        "sequenceNumber": change.sequence_number,
    });
    if change.old.is_some() {
        line["old"] = image(&change.old)?;
    }
    if change.new.is_some() {
        line["new"] = image(&change.new)?;
    }
    if change.expired {
        line["expired"] = json!(true);
    }
    if change.old.is_some() && change.new.is_some() {
        line["changedFields"] = json!(change.changed_fields());
        line["changedKeys"] = json!(change.changed_keys());
    }
    Ok(line)
}

/// A stream record as a line: its change decoded (with its entity), or, for a record that does
/// not decode, the line of its error (never dropped).
pub(crate) enum Line {
    Change { entity: String, line: Value },
    Undecodable(Value),
}

/// The line of `record`, decoded against `schema`.
pub(crate) fn decode_line(schema: &Schema, record: &StreamRecord) -> Result<Line, Failure> {
    Ok(match Change::decode_items(schema, record) {
        Ok(change) => Line::Change {
            line: change_json(schema, &change)?,
            entity: change.entity,
        },
        Err(e) => Line::Undecodable(json!({
            "error": e.to_string(),
            "entity": e.entity(),
            "kind": record.kind.as_str(),
            "keys": serde_dynamo::from_item::<_, Value>(record.keys.clone()).unwrap_or(Value::Null),
            "sequenceNumber": record.sequence_number,
        })),
    })
}

/// The failure of a poll: the Streams endpoint or DynamoDB named as the one that failed.
pub(crate) fn poll_failure(table: &str, streams: &Place<'_>, err: &StreamError) -> Failure {
    // the table's description comes from DynamoDB, the records from the Streams endpoint
    if is_streams_call(err) {
        explain_at("stream", table, streams, err)
    } else {
        crate::connection::explain("stream", table, err)
    }
}

/// The place of the Streams endpoint `at`, as a failure names it.
pub(crate) fn streams_place(at: &str) -> Place<'_> {
    Place {
        service: "DynamoDB Streams",
        at,
        flags: "--streams-endpoint (or AWS_ENDPOINT_URL_DYNAMODB_STREAMS), --endpoint-url and --region",
    }
}

/// Whether `err` is of a call to the DynamoDB Streams API (not DynamoDB's `DescribeTable`).
fn is_streams_call(err: &StreamError) -> bool {
    match err {
        StreamError::Store(e) => STREAMS_CALLS.contains(&e.operation()),
        StreamError::Trimmed { .. } => true,
        _ => false,
    }
}

/// The operations of the DynamoDB Streams API the reader calls.
const STREAMS_CALLS: [&str; 3] = ["DescribeStream", "GetShardIterator", "GetRecords"];

fn write_line(out: &mut impl Write, line: &Value) -> io::Result<()> {
    serde_json::to_writer(&mut *out, line)?;
    writeln!(out)
}

#[allow(clippy::too_many_lines)] // one command, start to end
pub(crate) fn stream(args: &StreamArgs, json: bool) -> Result<(), Failure> {
    let schema = args.config.resolve(&args.table, &args.connection)?;
    if let Some(entity) = &args.entity {
        schema
            .entity(entity)
            .map_err(|e| Failure::Input(e.to_string()))?;
    }
    let store = connect(&schema, &args.table, &args.connection)?;
    let (streams, streams_at) = args
        .connection
        .resolve()?
        .streams_client(args.streams_endpoint.as_deref());
    let streams_place = streams_place(&streams_at);
    let mut reader = StreamReader::new(&store, streams).start_at(match args.from {
        From::TrimHorizon => StartAt::TrimHorizon,
        From::Latest => StartAt::Latest,
    });
    let _held = args.checkpoint.as_deref().map(job::hold).transpose()?;
    if let Some(path) = &args.checkpoint
        && let Some(saved) = job::load::<StreamState>(path, "stream")?
    {
        if saved.table != args.table {
            return Err(Failure::Input(format!(
                "the checkpoint {} belongs to the stream of table {}, not {}; use another file",
                path.display(),
                saved.table,
                args.table
            )));
        }
        reader = reader.resume_from(saved.position);
    }
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut errors = 0u64;
    let definition =
        TableDefinition::from_schema(&schema).map_err(|e| Failure::Operation(e.to_string()))?;
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let interval = Duration::from_millis(args.poll_interval);
    let outcome = runtime()?.block_on(async {
        loop {
            let records = reader
                .poll()
                .await
                .map_err(|e| poll_failure(&args.table, &streams_place, &e))?;
            if records.is_empty() {
                if args.no_follow {
                    return Ok(());
                }
                tokio::time::sleep(interval).await;
                continue;
            }
            for record in &records {
                // the table's stamp (written when the table was created) is no record
                if is_stamp(&record.keys, &definition) {
                    continue;
                }
                let line = match decode_line(&schema, record)? {
                    Line::Change { entity, line } => {
                        if args.entity.as_ref().is_some_and(|e| *e != entity) {
                            continue;
                        }
                        *counts.entry(entity).or_default() += 1;
                        line
                    }
                    // never dropped: the record's error goes in the output, in order
                    Line::Undecodable(line) => {
                        errors += 1;
                        line
                    }
                };
                match write_line(&mut out, &line) {
                    Ok(()) => {}
                    // the reader of a pipe went away (`| head`): stop quietly, the position
                    // stays where the last saved batch ended
                    Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
                    Err(e) => return Err(out::write_failure(&e)),
                }
            }
            match out.flush() {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
                Err(e) => return Err(out::write_failure(&e)),
            }
            if let Some(path) = &args.checkpoint {
                let state = StreamState {
                    table: args.table.clone(),
                    position: reader.checkpoint().clone(),
                };
                job::save(path, "stream", &state)?;
            }
        }
    });
    outcome?;
    let total: u64 = counts.values().sum();
    if json {
        say!(
            "{}",
            json!({ "ok": errors == 0, "table": args.table, "changes": total, "counts": counts_json(&counts), "errors": errors })
        );
    } else {
        say!(
            "{total} changes ({}){}",
            counts_text(&counts),
            if errors > 0 {
                format!(", {errors} records that do not decode")
            } else {
                String::new()
            }
        );
    }
    if errors > 0 {
        return Err(Failure::Findings(format!(
            "{errors} stream records of table {} do not decode (their errors are in the output)",
            args.table
        )));
    }
    Ok(())
}
