//! The design view: every entity with its key shapes, generated properties (components and
//! their transcodes), indexes and shard schedule; the table's stamp; and a sample of records
//! laid out as `NoSQL` Workbench lays a table out — grouped by partition, for the table or for
//! one index.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::Response;
use entity_manager::model::{EntityModel, GeneratedKind, Projection, TableModel};
use entity_manager::scan::ParallelScan;
use entity_manager::store::{DynamoStore, Store, is_stamp};
use entity_manager::{AttributeValue, Item, Schema};
use futures::{StreamExt, TryStreamExt};
use maud::{Markup, html};
use serde_json::Value;

use super::{Opened, page, svg};
use crate::connection::explain;
use crate::scan::entity_of;

pub(super) async fn view(
    State(state): State<Arc<super::State>>,
    Query(params): Query<super::Params>,
) -> Result<Response, super::Unavailable> {
    let opened = state.opened()?;
    let chosen = Some(params.get("index")).filter(|i| !i.is_empty());
    let described = crate::table::describe(&opened.store)
        .await
        .map_err(|f| f.message());
    let sample = sample(&opened.store, state.sample).await;
    let schema = &opened.schema;
    let body = html! {
        h1 { "Design of table " (state.table) }
        (table_section(schema.table(), described.as_ref()))
        @for entity in schema.entities() {
            (entity_section(schema, entity, sample.as_deref().unwrap_or_default()))
        }
        (layout_section(opened, chosen, &sample))
    };
    Ok(page::layout(&state.table, "Design", &body))
}

/// The first `n` records of a scan (the table's stamp left out).
pub(super) async fn sample(store: &DynamoStore, n: u32) -> Result<Vec<Item>, String> {
    let items: Vec<Item> = ParallelScan::new(store)
        .segments(1)
        .page_size(n)
        .items()
        .take(usize::try_from(n).unwrap_or(usize::MAX))
        .try_collect()
        .await
        .map_err(|e| explain("reading a sample", store.table_name(), &e).message())?;
    Ok(items
        .into_iter()
        .filter(|item| !is_stamp(item, store.definition()))
        .collect())
}

fn table_section(table: &TableModel, described: Result<&Value, &String>) -> Markup {
    let d = &table.delimiters;
    html! {
        section.card id="table" {
            h2 { "Table keys" }
            p {
                "Hash key " code.key { (table.hash_key) } ", range key " code.key { (table.range_key) }
                "; delimiters: shard key " code { (d.shard_key) } ", generated key " code { (d.generated_key) }
                ", generated value " code { (d.generated_value) }
                "; shard space " code { (table.shard_space.as_str()) } ", key mode " code { (table.key_mode.as_str()) }
            }
            h3 { "Stamp" }
            @match described {
                Ok(described) => {
                    @let stamp = &described["stamp"];
                    @if stamp.is_null() {
                        p id="stamp" { "No stamp: " (described["stampState"]["message"].as_str().unwrap_or_default()) }
                    } @else {
                        table id="stamp" {
                            tr { th { "profile" } td { (page::cell(&stamp["profile"])) } }
                            tr { th { "key mode" } td { (page::cell(&stamp["keyMode"])) } }
                            tr { th { "shard space" } td { (page::cell(&stamp["shardSpace"])) } }
                            tr { th { "numeric hash" } td { (page::cell(&stamp["numericHash"])) } }
                            tr { th { "fingerprint" } td.mono { (page::cell(&stamp["fingerprint"])) } }
                            tr { th { "schema carried" } td { @if stamp["schema"].is_null() { "no" } @else { "yes" } } }
                            tr { th { "state" } td { (page::cell(&described["stampState"]["state"])) " " (page::cell(&described["stampState"]["message"])) } }
                        }
                    }
                    p.small { "Item count (DynamoDB's estimate): " (page::cell(&described["itemCount"])) }
                }
                Err(message) => { (page::refused(message)) }
            }
        }
    }
}

/// The shape of a generated property's value.
fn generated_shape(table: &TableModel, kind: GeneratedKind, components: &[String]) -> String {
    let d = &table.delimiters;
    let parts: Vec<String> = components
        .iter()
        .map(|c| format!("{c}{}<{c}>", d.generated_value))
        .collect();
    let joined = parts.join(&d.generated_key);
    match kind {
        GeneratedKind::Sharded => format!("<{}>{}{joined}", table.hash_key, d.generated_key),
        GeneratedKind::Unsharded => joined,
    }
}

#[allow(clippy::too_many_lines)] // one section of markup
fn entity_section(schema: &Schema, entity: &EntityModel, sample: &[Item]) -> Markup {
    let table = schema.table();
    let d = &table.delimiters;
    let transcode = |name: &str| {
        entity
            .properties
            .iter()
            .find(|p| *p.name == *name)
            .map_or("(none)", |p| p.transcode.name())
    };
    let example = sample
        .iter()
        .find(|item| entity_of(schema, item) == *entity.token);
    let key_text = |name: &str| match example.and_then(|e| e.get(name)) {
        Some(AttributeValue::S(s) | AttributeValue::N(s)) => s.clone(),
        _ => String::new(),
    };
    let mut steps: Vec<(u64, u128)> = Vec::new();
    for bump in entity.shard_bumps.iter() {
        steps.push((
            bump.timestamp,
            entity_manager::shard::shard_count(*bump, table.shard_space),
        ));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    if steps.first().is_none_or(|s| s.0 > 0) {
        // before the first bump: one unsharded partition
        steps.insert(0, (0, 1));
    }
    // the unsharded start is drawn from a while before the first real bump, not from 1970
    if let [start, first, ..] = steps.as_mut_slice()
        && start.0 == 0
    {
        let while_before = (now.saturating_sub(first.0) / 3).max(30 * 86_400_000);
        start.0 = first.0.saturating_sub(while_before);
    }
    let token = &*entity.token;
    html! {
        section.card.entity id={ "entity-" (token) } data-entity=(token) {
            h2 { "Entity " code { (token) } }
            p {
                "Unique property " code { (entity.unique_property) } " (" (transcode(&entity.unique_property)) ")"
                ", timestamp property " code { (entity.timestamp_property) }
                ", default limit " (entity.default_limit) ", page size " (entity.default_page_size)
            }
            h3 { "Keys" }
            table.keys {
                tr { th { "attribute" } th { "shape" } th { "example" } }
                tr data-key=(table.hash_key) {
                    td { code { (table.hash_key) } " " span.tag { "hash" } }
                    td.mono { (token) (d.shard_key) "<shard suffix>" }
                    td.mono { (key_text(&table.hash_key)) }
                }
                tr data-key=(table.range_key) {
                    td { code { (table.range_key) } " " span.tag { "range" } }
                    td.mono { (entity.unique_property) (d.generated_value) "<" (entity.unique_property) ">" }
                    td.mono { (key_text(&table.range_key)) }
                }
            }
            @if !entity.generated.is_empty() {
                h3 { "Generated properties" }
                table.generated {
                    tr { th { "property" } th { "side" } th { "components (transcode)" } th { "shape" } }
                    @for g in entity.generated.iter() {
                        @let components: Vec<String> = g.components.iter().map(ToString::to_string).collect();
                        tr data-generated=(g.name) {
                            td { code { (g.name) } }
                            td { @if g.is_sharded() { "hash (sharded)" } @else { "range" } @if g.is_atomic() && !g.is_sharded() { ", atomic" } }
                            td { @for c in &components { span.tag { (c) " (" (transcode(c)) ")" } } }
                            td.mono { (generated_shape(table, g.kind, &components)) }
                        }
                    }
                }
            }
            h3 { "Indexes" }
            table.indexes {
                tr { th { "index" } th { "hash key" } th { "range key" } th { "projection" } }
                @for index in entity.indexes.iter() {
                    tr data-index=(index.name) {
                        td { a href={ "/?index=" (index.name) } { code { (index.name) } } }
                        @if let Some(multi) = &index.multi {
                            td { @for a in multi.hash.iter() { span.tag { (a.name) } } @if multi.sharded { span.muted { "(sharded)" } } }
                            td { @for a in multi.range.iter() { span.tag { (a.name) } } span.muted { "multi-attribute" } }
                        } @else {
                            td { code { (index.hash_key) } }
                            td { code { (index.range_key) } }
                        }
                        td { (projection(&index.projection)) }
                    }
                }
            }
            h3 { "Shard schedule" }
            table.bumps {
                tr { th { "from" } th { "radix" } th { "suffix characters" } th { "shards" } }
                @for bump in entity.shard_bumps.iter() {
                    tr {
                        td { (svg::date(bump.timestamp)) " " span.muted { "(" (bump.timestamp) ")" } }
                        td { (bump.radix()) } td { (bump.chars) }
                        td { (entity_manager::shard::shard_count(*bump, table.shard_space)) }
                    }
                }
            }
            (svg::timeline(&format!("timeline-{token}"), &steps, now))
        }
    }
}

fn projection(p: &Projection) -> Markup {
    html! {
        @match p {
            Projection::All => "all attributes",
            Projection::KeysOnly => "keys only",
            Projection::Include(names) => { "keys + " @for n in names.iter() { span.tag { (n) } } },
        }
    }
}

/// The sample laid out as `NoSQL` Workbench does: the aggregate view (by table partition), or
/// the view of one index (by its partition, in its range key's order).
fn layout_section(
    opened: &Opened,
    chosen: Option<&str>,
    sample: &Result<Vec<Item>, String>,
) -> Markup {
    let schema = &opened.schema;
    let table = schema.table();
    let mut indexes: Vec<&str> = schema
        .entities()
        .iter()
        .flat_map(|e| e.indexes.iter().map(|i| &*i.name))
        .collect();
    indexes.sort_unstable();
    indexes.dedup();
    let (hash, range): (String, Option<String>) = match chosen {
        Some(name) => schema
            .entities()
            .iter()
            .find_map(|e| e.index(name))
            .map_or((table.hash_key.to_string(), None), |i| {
                (i.hash_key.to_string(), Some(i.range_key.to_string()))
            }),
        None => (
            table.hash_key.to_string(),
            Some(table.range_key.to_string()),
        ),
    };
    html! {
        section.card id="layout" {
            h2 { "Layout of a sample" }
            p.tabs {
                a href="/" class=[chosen.is_none().then_some("current")] { "aggregate view" }
                @for name in &indexes {
                    a href={ "/?index=" (name) } class=[(chosen == Some(*name)).then_some("current")] { (name) }
                }
            }
            @match sample {
                Err(message) => { (page::refused(message)) }
                Ok(items) => {
                    p.small { "The first " (items.len()) " records of a scan (--sample sets how many), grouped by partition key " code { (hash) }
                        @if let Some(range) = &range { ", sorted by " code { (range) } } "." }
                    (partitions(schema, items, &hash, range.as_deref()))
                }
            }
        }
    }
}

/// A key attribute as text, for grouping and sorting.
fn key_text(item: &Item, name: &str) -> Option<String> {
    match item.get(name)? {
        AttributeValue::S(s) | AttributeValue::N(s) => Some(s.clone()),
        _ => None,
    }
}

fn partitions(schema: &Schema, items: &[Item], hash: &str, range: Option<&str>) -> Markup {
    let mut groups: BTreeMap<String, Vec<&Item>> = BTreeMap::new();
    for item in items {
        let held = range.is_none_or(|r| item.contains_key(r));
        if let (Some(h), true) = (key_text(item, hash), held) {
            groups.entry(h).or_default().push(item);
        }
    }
    for group in groups.values_mut() {
        if let Some(range) = range {
            group.sort_by(|a, b| crate_order(a.get(range), b.get(range)));
        }
    }
    html! {
        table.layout {
            tr { th { "partition key " code { (hash) } } @if let Some(r) = range { th { "sort key " code { (r) } } } th { "entity" } th { "attributes" } }
            @for (partition, group) in &groups {
                @for (i, item) in group.iter().enumerate() {
                    @let token = entity_of(schema, item);
                    tr data-partition=(partition) {
                        @if i == 0 { td.pk rowspan=(group.len()) { (partition) } }
                        @if let Some(r) = range { td.mono { (key_text(item, r).unwrap_or_default()) } }
                        td { (token) }
                        td.mono {
                            @match schema.entity(&token) {
                                Ok(entity) => { (page::decoded(schema, &entity, item).to_string()) }
                                Err(_) => { (crate::out::item(item, &crate::out::Order::keys_last(Vec::new()), crate::out::Format::Json).to_string()) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// DynamoDB's order of two key values: numbers by value, strings by their bytes.
fn crate_order(a: Option<&AttributeValue>, b: Option<&AttributeValue>) -> std::cmp::Ordering {
    match (a, b) {
        (Some(AttributeValue::N(x)), Some(AttributeValue::N(y))) => x
            .parse::<f64>()
            .ok()
            .partial_cmp(&y.parse::<f64>().ok())
            .unwrap_or(std::cmp::Ordering::Equal),
        (Some(AttributeValue::S(x)), Some(AttributeValue::S(y))) => x.as_bytes().cmp(y.as_bytes()),
        _ => std::cmp::Ordering::Equal,
    }
}
