//! `table create|delete|describe|cloudformation`.

use clap::Subcommand;
use entity_manager::store::{DynamoStore, TableDefinition};
use serde_json::{Value, json};

use crate::{ConfigArgs, Failure, TableArgs, load, runtime, store};

#[derive(Debug, Subcommand)]
pub(crate) enum TableAction {
    /// Creates the table and its GSIs, and waits until it is active.
    Create(TableArgs),
    /// Deletes the table.
    Delete(TableArgs),
    /// Describes the live table: status, keys, indexes, item count.
    Describe(TableArgs),
    /// Prints the `AWS::DynamoDB::Table` CloudFormation resource (no network).
    Cloudformation {
        #[command(flatten)]
        config: ConfigArgs,
        /// The table name to put in the resource (none: CloudFormation names it).
        #[arg(long)]
        table: Option<String>,
    },
}

pub(crate) fn table(action: TableAction, json: bool) -> Result<(), Failure> {
    match action {
        TableAction::Cloudformation { config, table } => {
            let schema = load(&config.config, config.space.shard_space)?;
            let definition = TableDefinition::from_schema(&schema)
                .map_err(|e| Failure::Operation(e.to_string()))?;
            let resource = definition
                .cloudformation(table.as_deref())
                .map_err(|e| Failure::Operation(e.to_string()))?;
            let text = serde_json::to_string_pretty(&resource)
                .map_err(|e| Failure::Operation(e.to_string()))?;
            println!("{text}");
            Ok(())
        }
        TableAction::Create(args) => {
            let store = store(&args)?;
            runtime()?
                .block_on(store.create_table())
                .map_err(|e| Failure::Operation(e.to_string()))?;
            done(json, "created", &args.table);
            Ok(())
        }
        TableAction::Delete(args) => {
            let store = store(&args)?;
            runtime()?
                .block_on(store.delete_table())
                .map_err(|e| Failure::Operation(e.to_string()))?;
            done(json, "deleted", &args.table);
            Ok(())
        }
        TableAction::Describe(args) => {
            let store = store(&args)?;
            let described = runtime()?.block_on(describe(&store))?;
            if json {
                println!("{described}");
            } else {
                let text = serde_json::to_string_pretty(&described)
                    .map_err(|e| Failure::Operation(e.to_string()))?;
                println!("{text}");
            }
            Ok(())
        }
    }
}

pub(crate) fn done(json: bool, what: &str, table: &str) {
    if json {
        println!("{}", json!({ "ok": true, "table": table, "action": what }));
    } else {
        println!("table {table} {what}");
    }
}

pub(crate) async fn describe(store: &DynamoStore) -> Result<Value, Failure> {
    let out = store
        .client()
        .describe_table()
        .table_name(store.table_name())
        .send()
        .await
        .map_err(|e| {
            Failure::Operation(format!(
                "DescribeTable {} failed: {}",
                store.table_name(),
                aws_sdk_dynamodb::error::DisplayErrorContext(&e)
            ))
        })?;
    let Some(table) = out.table() else {
        return Err(Failure::Operation("DescribeTable returned no table".into()));
    };
    let keys = |schema: &[aws_sdk_dynamodb::types::KeySchemaElement]| -> Vec<Value> {
        schema
            .iter()
            .map(|k| json!({ "attribute": k.attribute_name(), "type": k.key_type().as_str() }))
            .collect()
    };
    let indexes: Vec<Value> = table
        .global_secondary_indexes()
        .iter()
        .map(|g| {
            json!({
                "name": g.index_name(),
                "keys": keys(g.key_schema()),
                "projection": g.projection().and_then(|p| p.projection_type()).map(aws_sdk_dynamodb::types::ProjectionType::as_str),
                "status": g.index_status().map(aws_sdk_dynamodb::types::IndexStatus::as_str),
            })
        })
        .collect();
    Ok(json!({
        "table": table.table_name(),
        "status": table.table_status().map(aws_sdk_dynamodb::types::TableStatus::as_str),
        "keys": keys(table.key_schema()),
        "indexes": indexes,
        "itemCount": table.item_count(),
    }))
}
