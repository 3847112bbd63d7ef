//! `keys add|remove`: keys of JSON items, stdin to stdout.

use std::io::{self, Write};

use clap::{Args, Subcommand};
use entity_manager::Item;
use serde_json::Value;

use crate::{ConfigArgs, Failure, load, read_items};

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
}

pub(crate) fn keys(action: KeysAction) -> Result<(), Failure> {
    let (args, add) = match action {
        KeysAction::Add(args) => (args, true),
        KeysAction::Remove(args) => (args, false),
    };
    let schema = load(&args.config.config, &args.config.space)?;
    let entity = schema
        .entity(&args.entity)
        .map_err(|e| Failure::Input(e.to_string()))?;
    let (items, as_array) = read_items()?;
    let mut out = Vec::with_capacity(items.len());
    for (n, value) in items.into_iter().enumerate() {
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
        let value: Value = serde_dynamo::from_item(keyed)
            .map_err(|e| Failure::Operation(format!("item {}: {e}", n + 1)))?;
        out.push(value);
    }
    let stdout = io::stdout();
    let mut stdout = stdout.lock();
    let written = if as_array {
        serde_json::to_writer(&mut stdout, &out)
            .map_err(io::Error::from)
            .and_then(|()| writeln!(stdout))
    } else {
        out.iter().try_for_each(|value| {
            serde_json::to_writer(&mut stdout, value).map_err(io::Error::from)?;
            writeln!(stdout)
        })
    };
    written.map_err(|e| Failure::Operation(format!("cannot write stdout: {e}")))
}
