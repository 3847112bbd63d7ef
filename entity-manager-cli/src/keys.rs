//! `keys add|remove`: keys of JSON items, stdin to stdout.

use std::io::{self, Write};

use clap::{Args, Subcommand};
use entity_manager::Item;
use serde_json::Value;

use crate::out::{self, Format, Order};
use crate::{ConfigArgs, Failure, read_items};

#[derive(Debug, Subcommand)]
pub(crate) enum KeysAction {
    /// Adds the hash key, range key and generated properties (existing ones are kept).
    Add(KeysArgs),
    /// Removes the keys and generated properties.
    Remove(KeysArgs),
}

#[derive(Debug, Args)]
pub(crate) struct KeysArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// The entity token of the items.
    #[arg(long)]
    entity: String,
    /// Recompute keys that are already present (after a change of the configuration).
    #[arg(long)]
    refresh: bool,
    /// The format of the items written: plain JSON, or DynamoDB JSON (one item per line, the
    /// shape `aws dynamodb put-item --item` and `batch-write-item` take).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

pub(crate) fn keys(action: KeysAction) -> Result<(), Failure> {
    let (args, add) = match action {
        KeysAction::Add(args) => (args, true),
        KeysAction::Remove(args) => (args, false),
    };
    let schema = args.config.load()?;
    let entity = schema
        .entity(&args.entity)
        .map_err(|e| Failure::Input(e.to_string()))?;
    let (items, as_array) = read_items()?;
    let key_names = out::key_names(&schema, Some(&args.entity));
    let mut written = Vec::with_capacity(items.len());
    for (n, value) in items.into_iter().enumerate() {
        // the input's attribute order, keys appended
        let order = Order::input(&value, key_names.clone());
        let item: Item = serde_dynamo::to_item(value)
            .map_err(|e| Failure::Input(format!("item {}: {e}", n + 1)))?;
        let keyed = if !add {
            entity.remove_keys(&item)
        } else if args.refresh {
            entity
                .refresh_keys(&item)
                .map_err(|e| Failure::Operation(format!("item {}: {e}", n + 1)))?
        } else {
            entity
                .add_keys(&item)
                .map_err(|e| Failure::Operation(format!("item {}: {e}", n + 1)))?
        };
        written.push(out::item(&keyed, &order, args.format));
    }
    let stdout = io::stdout();
    let mut stdout = stdout.lock();
    if as_array {
        out::json_line(&mut stdout, &Value::Array(written))?;
    } else {
        for value in &written {
            out::json_line(&mut stdout, value)?;
        }
    }
    stdout.flush().map_err(|e| out::write_failure(&e))
}
