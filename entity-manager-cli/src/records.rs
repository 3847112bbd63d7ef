//! The record commands: `get`, `query`, `import`, `put`, `delete`, typed by the configuration
//! (an entity's unique id, its indexes and shards), over the library's untyped API and its one
//! query engine.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::io::{self, BufRead, Write};
use std::path::PathBuf;

use clap::Args;
use entity_manager::limits::MAX_ITEM_BYTES;
use entity_manager::query::CollectionQuery;
use entity_manager::query::untyped::{Indexed, MultiQuery, Query};
use entity_manager::store::{
    Comparison, DynamoStore, Expect, Filter, KeyType, RangeCondition, Store, WriteRequest,
    item_size,
};
use entity_manager::{AttributeValue, EntitySchema, Item, Schema};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::connection::explain;
use crate::out::{self, Format, Order};
use crate::progress::{Progress, Total};
use crate::{ConfigArgs, Connection, Failure, connect, job, runtime, signal};

/// The table and entity a record command works on.
#[derive(Debug, Args)]
pub(crate) struct Target {
    #[command(flatten)]
    config: ConfigArgs,
    /// The table name.
    #[arg(long)]
    table: String,
    /// The entity token of the records (e.g. `user`).
    #[arg(long)]
    entity: String,
    #[command(flatten)]
    connection: Connection,
}

/// How records are printed.
#[derive(Debug, Args)]
pub(crate) struct Output {
    /// The format of the records printed: plain JSON lines, or DynamoDB JSON (the shape
    /// `aws dynamodb` takes).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Keep the keys (table hash and range key, generated properties) in the records printed.
    #[arg(long)]
    keys: bool,
}

#[derive(Debug, Args)]
pub(crate) struct GetArgs {
    #[command(flatten)]
    target: Target,
    /// The unique id of a record (repeatable); every shard a record with this id may be in is
    /// read, in one batch.
    #[arg(long, required = true, value_name = "ID")]
    id: Vec<String>,
    /// Only these attributes (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "ATTRS")]
    projection: Option<Vec<String>>,
    #[command(flatten)]
    output: Output,
}

#[derive(Debug, Args)]
pub(crate) struct QueryArgs {
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    pub(crate) conditions: Conditions,
    /// Every page, to the end.
    #[arg(long, conflicts_with = "pages")]
    all: bool,
    /// This many pages (default 1); the token of the next is printed on stderr.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pages: Option<u64>,
    /// Continue from this token (printed by the previous call).
    #[arg(long, value_name = "TOKEN")]
    page_token: Option<String>,
    #[command(flatten)]
    output: Output,
}

/// What a query reads: its indexes, conditions and page shape (the flags of `query`, and the
/// fields of the console's query form), checked and built by [`prepare`].
#[derive(Clone, Debug, Default, Args)]
pub(crate) struct Conditions {
    /// The index to query (its GSI name; repeatable: a union of indexes), across every shard.
    #[arg(long = "index", required = true, value_name = "INDEX")]
    pub(crate) indexes: Vec<String>,
    /// A value that fills a sharded hash key, `NAME=VALUE` (repeatable), e.g.
    /// `beneficiaryId=b1` for an index whose hash key is made of `beneficiaryId`.
    #[arg(long = "where", value_name = "NAME=VALUE")]
    pub(crate) wheres: Vec<String>,
    /// A condition on the index's range key: `= V`, `< V`, `<= V`, `> V`, `>= V`,
    /// `between A and B`, `begins_with P` (one `--index` only). A generated range key is
    /// compared as stored (e.g. `begins_with lastNameCanonical#lee`).
    #[arg(long, value_name = "CONDITION", allow_hyphen_values = true)]
    pub(crate) range: Option<String>,
    /// A filter on the items read: `ATTR = V` (also `<>`, `<`, `<=`, `>`, `>=`),
    /// `ATTR between A and B`, `ATTR begins_with P`, `ATTR contains V`, `ATTR exists`,
    /// `ATTR not_exists` (repeatable: all must hold). A value is a JSON literal or plain text.
    #[arg(long, value_name = "CONDITION", allow_hyphen_values = true)]
    pub(crate) filter: Vec<String>,
    /// Only these attributes (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "ATTRS")]
    pub(crate) projection: Option<Vec<String>>,
    /// Records per page (default: the entity's default limit; 1000 with `--all`).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub(crate) limit: Option<u64>,
    /// Descending range-key order.
    #[arg(long)]
    pub(crate) descending: bool,
    /// Only the shards of this creation-time window, `FROM..TO` (milliseconds).
    #[arg(long, value_name = "FROM..TO")]
    pub(crate) window: Option<String>,
    /// Only the records created in this window, `FROM..TO` (milliseconds).
    #[arg(long, value_name = "FROM..TO", conflicts_with = "window")]
    pub(crate) created: Option<String>,
    /// The largest `Limit` of one shard query.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub(crate) page_size: Option<u64>,
    /// At most this many shard queries in flight (default: the table's throttle); 1 reads the
    /// shards one after the other, which makes a page's statistics the same on every run.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub(crate) throttle: Option<u64>,
}

#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    #[command(flatten)]
    target: Target,
    /// The records, one JSON object per line (default: stdin).
    #[arg(long, value_name = "FILE")]
    file: Option<PathBuf>,
    /// The format of the records read.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Refuse a record whose id exists (in any shard) or comes twice: it is reported, not
    /// written (exit 3 when any is refused).
    #[arg(long)]
    create_only: bool,
    /// Start at this line (1-based): the lines before it are skipped (to resume an import).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    start_line: u64,
    /// Save the next line to import here after every batch, and resume from it when it
    /// exists. Removed when the import completes.
    #[arg(long, value_name = "FILE")]
    checkpoint: Option<PathBuf>,
    /// Records per batch (written with 25-item batch writes, unprocessed items retried).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    batch: u64,
    /// Testing: stop after this many batches, as an interrupted run would.
    #[arg(long, hide = true)]
    stop_after: Option<u64>,
}

#[derive(Debug, Args)]
pub(crate) struct PutArgs {
    #[command(flatten)]
    target: Target,
    /// The record, as JSON (default: one JSON object on stdin).
    #[arg(long, value_name = "JSON")]
    item: Option<String>,
    /// The format of the record.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Refuse the record when its id exists, in any shard (exit 3).
    #[arg(long, conflicts_with = "if_version")]
    create_only: bool,
    #[command(flatten)]
    version: VersionArgs,
}

#[derive(Debug, Args)]
pub(crate) struct DeleteArgs {
    #[command(flatten)]
    target: Target,
    /// The unique id of the record.
    #[arg(long, value_name = "ID")]
    id: String,
    #[command(flatten)]
    version: VersionArgs,
}

/// Optimistic locking on a version attribute.
#[derive(Debug, Args)]
pub(crate) struct VersionArgs {
    /// Only when the stored record's version attribute is this number (exit 3 otherwise); a
    /// `put` then writes the record with version N+1.
    #[arg(long, value_name = "N")]
    if_version: Option<u64>,
    /// The version attribute of `--if-version`.
    #[arg(long, default_value = "version", value_name = "NAME")]
    version_attribute: String,
}

/// A target resolved: the schema, its entity and the store.
struct Opened {
    schema: Schema,
    store: DynamoStore,
}

impl Target {
    fn open(&self) -> Result<Opened, Failure> {
        let schema = self.config.resolve(&self.table, &self.connection)?;
        schema
            .entity(&self.entity)
            .map_err(|e| Failure::Input(e.to_string()))?;
        let store = connect(&schema, &self.table, &self.connection)?;
        Ok(Opened { schema, store })
    }
}

impl Opened {
    fn entity(&self, token: &str) -> Result<EntitySchema<'_>, Failure> {
        self.schema
            .entity(token)
            .map_err(|e| Failure::Input(e.to_string()))
    }
}

/// The key type `attribute` is stored as, when it is a transcoded property of the entity.
pub(crate) fn key_type_of(entity: &EntitySchema<'_>, attribute: &str) -> Option<KeyType> {
    entity
        .model()
        .properties
        .iter()
        .find(|p| *p.name == *attribute)
        .and_then(|p| p.transcode.key_type())
}

/// `text` as a value of `attribute`: typed by its transcode when it is a property of the
/// entity (the key type it is stored as), else a JSON literal, else a string. A property
/// stored as a number refuses text that is not one (nothing is sent: DynamoDB would refuse it).
fn typed_value(
    entity: &EntitySchema<'_>,
    attribute: &str,
    text: &str,
) -> Result<AttributeValue, Failure> {
    match key_type_of(entity, attribute) {
        Some(KeyType::N) => {
            let number = text.trim();
            // `NaN` and infinities parse: the library refuses them with its own reason
            return if number.parse::<f64>().is_ok() {
                Ok(AttributeValue::N(number.to_owned()))
            } else {
                Err(Failure::Input(format!(
                    "`{text}` is not a number: `{attribute}` of entity {} is stored as a number; give digits (e.g. 1726000000000)",
                    entity.model().token
                )))
            };
        }
        Some(_) => return Ok(AttributeValue::S(unquoted(text))),
        None => {}
    }
    Ok(match serde_json::from_str::<Value>(text) {
        Ok(v @ (Value::Number(_) | Value::Bool(_) | Value::String(_))) => {
            serde_dynamo::to_attribute_value(v).unwrap_or_else(|_| AttributeValue::S(text.into()))
        }
        _ => AttributeValue::S(text.to_owned()),
    })
}

/// A string given as a JSON literal (`"b1"`) or as plain text (`b1`): its text.
fn unquoted(text: &str) -> String {
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(Value::String(s)) => s,
        _ => text.to_owned(),
    }
}

/// A string or number attribute as text (empty when absent).
fn text_of(item: &Item, name: &str) -> String {
    match item.get(name) {
        Some(AttributeValue::S(s) | AttributeValue::N(s)) => s.clone(),
        _ => String::new(),
    }
}

/// The unique id of a record, as text.
fn id_of(entity: &EntitySchema<'_>, item: &Item) -> Option<String> {
    match item.get(&*entity.model().unique_property)? {
        AttributeValue::S(s) | AttributeValue::N(s) => Some(s.clone()),
        _ => None,
    }
}

/// Every key a record with unique value `id` may have (one per shard bump).
fn candidate_keys(entity: &EntitySchema<'_>, id: &AttributeValue) -> Result<Vec<Item>, Failure> {
    let unique = entity.model().unique_property.to_string();
    let probe: Item = HashMap::from([(unique, id.clone())]).into();
    let keys = entity
        .primary_keys(&probe)
        .map_err(|e| Failure::Input(e.to_string()))?;
    let table = entity.table();
    Ok(keys
        .into_iter()
        .map(|k| {
            HashMap::from([
                (table.hash_key.to_string(), AttributeValue::S(k.hash_key)),
                (table.range_key.to_string(), AttributeValue::S(k.range_key)),
            ])
            .into()
        })
        .collect())
}

/// The stored records (any shard) of these unique values, by id.
async fn find(
    store: &DynamoStore,
    entity: &EntitySchema<'_>,
    ids: &[AttributeValue],
    projection: Option<&[String]>,
) -> Result<HashMap<String, Vec<Item>>, Failure> {
    let mut keys = Vec::new();
    let mut seen = HashSet::new();
    let table = entity.table();
    for id in ids {
        for key in candidate_keys(entity, id)? {
            let pair = (
                text_of(&key, &table.hash_key),
                text_of(&key, &table.range_key),
            );
            if seen.insert(pair) {
                keys.push(key);
            }
        }
    }
    let found = store
        .batch_get(keys, projection)
        .await
        .map_err(|e| explain("reading the records", store.table_name(), &e))?;
    let mut by_id: HashMap<String, Vec<Item>> = HashMap::new();
    for item in found {
        if let Some(id) = id_of(entity, &item) {
            by_id.entry(id).or_default().push(item);
        }
    }
    Ok(by_id)
}

/// Prints records in `output`'s format (keys removed unless `--keys`), one JSON line each.
fn print_records(
    schema: &Schema,
    entity: &EntitySchema<'_>,
    items: &[Item],
    output: &Output,
) -> Result<(), Failure> {
    let keys = out::key_names(schema, Some(&entity.model().token));
    let order = Order::keys_last(keys);
    let stdout = io::stdout();
    let mut lock = stdout.lock();
    for item in items {
        let shown = if output.keys {
            out::item(item, &order, output.format)
        } else {
            out::item(&entity.remove_keys(item), &order, output.format)
        };
        out::json_line(&mut lock, &shown)?;
    }
    lock.flush().map_err(|e| out::write_failure(&e))
}

pub(crate) fn get(args: &GetArgs, json: bool) -> Result<(), Failure> {
    let opened = args.target.open()?;
    let entity = opened.entity(&args.target.entity)?;
    let unique = entity.model().unique_property.to_string();
    // an id given twice is read and printed once
    let mut given = std::collections::HashSet::new();
    let asked: Vec<&String> = args.id.iter().filter(|id| given.insert(*id)).collect();
    let ids: Vec<AttributeValue> = asked
        .iter()
        .map(|id| typed_value(&entity, &unique, id))
        .collect::<Result<_, _>>()?;
    // the unique value is always read (it names the record), once: DynamoDB refuses a
    // projection that names an attribute twice
    let projection = args.projection.as_ref().map(|p| {
        let mut p = p.clone();
        p.push(unique.clone());
        let mut seen = std::collections::HashSet::new();
        p.retain(|name| seen.insert(name.clone()));
        p
    });
    let found = runtime()?.block_on(find(&opened.store, &entity, &ids, projection.as_deref()))?;
    let mut missing = Vec::new();
    for id in asked {
        match found.get(id) {
            Some(items) => print_records(&opened.schema, &entity, items, &args.output)?,
            None => missing.push(id.as_str()),
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    if json {
        say!(
            "{}",
            json!({ "ok": false, "table": args.target.table, "entity": args.target.entity, "notFound": missing })
        );
    }
    Err(Failure::Findings(format!(
        "no {} with {unique} {} in table {}",
        args.target.entity,
        missing.join(", "),
        args.target.table
    )))
}

/// `FROM..TO` in milliseconds.
fn window(text: &str, flag: &str) -> Result<(u64, u64), Failure> {
    let bad = || Failure::Input(format!("{flag} `{text}` is not FROM..TO in milliseconds"));
    let (from, to) = text.split_once("..").ok_or_else(bad)?;
    Ok((
        from.trim().parse().map_err(|_| bad())?,
        to.trim().parse().map_err(|_| bad())?,
    ))
}

/// `OP VALUE` of `--range` on `attribute`.
fn range_condition(
    entity: &EntitySchema<'_>,
    attribute: &str,
    text: &str,
) -> Result<RangeCondition, Failure> {
    let bad = |why: &str| Failure::Input(format!("--range `{text}`: {why}"));
    let text = text.trim();
    let (op, rest) = split_op(text);
    let value = |t: &str| typed_value(entity, attribute, t.trim()).map_err(|e| bad(&e.message()));
    Ok(match op {
        "=" => RangeCondition::Eq(value(rest)?),
        "<" => RangeCondition::Lt(value(rest)?),
        "<=" => RangeCondition::Le(value(rest)?),
        ">" => RangeCondition::Gt(value(rest)?),
        ">=" => RangeCondition::Ge(value(rest)?),
        "between" => {
            let (low, high) = rest
                .split_once(" and ")
                .ok_or_else(|| bad("`between A and B`"))?;
            RangeCondition::Between(value(low)?, value(high)?)
        }
        "begins_with" => RangeCondition::BeginsWith(AttributeValue::S(unquoted(rest.trim()))),
        other => {
            return Err(bad(&format!(
                "unknown operator `{other}`; expected `= V`, `< V`, `<= V`, `> V`, `>= V`, `between A and B` or `begins_with P`"
            )));
        }
    })
}

/// The operator and the rest of `OP REST` (the operator may touch the value: `>=5`).
fn split_op(text: &str) -> (&str, &str) {
    for op in ["<=", ">=", "<>", "=", "<", ">"] {
        if let Some(rest) = text.strip_prefix(op) {
            return (op, rest.trim());
        }
    }
    let (word, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    (word, rest.trim())
}

/// `ATTR OP VALUE` of `--filter`.
fn filter(entity: &EntitySchema<'_>, text: &str) -> Result<Filter, Failure> {
    let bad = |why: &str| Failure::Input(format!("--filter `{text}`: {why}"));
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| c.is_whitespace() || "<>=".contains(c))
        .ok_or_else(|| bad("expected `ATTR OP VALUE`"))?;
    let (attribute, rest) = trimmed.split_at(split);
    let attribute = attribute.to_owned();
    let (op, value) = split_op(rest.trim());
    let typed = |t: &str| typed_value(entity, &attribute, t.trim()).map_err(|e| bad(&e.message()));
    let compare = |op: Comparison| -> Result<Filter, Failure> {
        Ok(Filter::Compare {
            attribute: attribute.clone(),
            op,
            value: typed(value)?,
        })
    };
    Ok(match op {
        "=" => compare(Comparison::Eq)?,
        "<>" => compare(Comparison::Ne)?,
        "<" => compare(Comparison::Lt)?,
        "<=" => compare(Comparison::Le)?,
        ">" => compare(Comparison::Gt)?,
        ">=" => compare(Comparison::Ge)?,
        "between" => {
            let (low, high) = value
                .split_once(" and ")
                .ok_or_else(|| bad("`ATTR between A and B`"))?;
            Filter::Between {
                attribute: attribute.clone(),
                low: typed(low)?,
                high: typed(high)?,
            }
        }
        "begins_with" => Filter::BeginsWith {
            attribute: attribute.clone(),
            prefix: AttributeValue::S(unquoted(value)),
        },
        "contains" => Filter::Contains {
            attribute: attribute.clone(),
            value: typed(value)?,
        },
        "exists" => Filter::Exists(attribute.clone()),
        "not_exists" => Filter::NotExists(attribute.clone()),
        other => return Err(bad(&format!("unknown operator `{other}`"))),
    })
}

pub(crate) fn query(args: &QueryArgs, json: bool) -> Result<(), Failure> {
    let opened = args.target.open()?;
    let entity = opened.entity(&args.target.entity)?;
    let prepared = prepare(&args.conditions, args.all, &opened.store, entity)?;
    let prepared = &prepared;
    print_pages(args, json, &opened, &entity, move |token| async move {
        prepared.page(token.as_deref()).await
    })
}

/// A query ready to read pages: of classic indexes (one or a union), or of one
/// multi-attribute index. Built by [`prepare`] without a request.
pub(crate) enum Prepared<'a, S> {
    /// One or more classic indexes.
    Classic(Query<'a, S, Indexed>),
    /// One multi-attribute index.
    Multi(MultiQuery<'a, S>),
}

impl<S: Store> Prepared<'_, S> {
    /// The page after `token` (the first without one).
    pub(crate) async fn page(
        &self,
        token: Option<&str>,
    ) -> entity_manager::Result<entity_manager::query::QueryPageResult> {
        match self {
            Self::Classic(query) => query.page(token).await,
            Self::Multi(query) => query.page(token).await,
        }
    }
}

/// The records per page a query asks for: `--limit`, else the entity's default (1000 for
/// every page to the end).
fn page_limit(conditions: &Conditions, all: bool, entity: &EntitySchema<'_>) -> usize {
    conditions.limit.map_or(
        if all {
            1000
        } else {
            entity.model().default_limit
        },
        |l| usize::try_from(l).unwrap_or(usize::MAX),
    )
}

/// The query `conditions` describe on `entity`, checked and built without a request: a
/// condition that does not parse, a value of the wrong type, an index the entity does not
/// have or a hash key component left out is refused here (`Failure::Input`, naming it).
#[allow(clippy::too_many_lines)] // the `query` command's checks, in its order
pub(crate) fn prepare<'a, S: Store>(
    conditions: &Conditions,
    all: bool,
    store: &'a S,
    entity: EntitySchema<'a>,
) -> Result<Prepared<'a, S>, Failure> {
    let c = conditions;
    if c.range.is_some() && c.indexes.len() != 1 {
        return Err(Failure::Input(
            "--range needs exactly one --index (a range key belongs to one index)".to_owned(),
        ));
    }
    // one multi-attribute index: its partition attributes from --where
    if let [name] = c.indexes.as_slice()
        && let Some(multi) = entity.model().index(name).and_then(|i| i.multi.clone())
    {
        return prepare_multi(c, all, store, vec![entity], name, &multi).map(Prepared::Multi);
    }
    // --where fills the components of the indexes' sharded hash keys: a name that is none of
    // them, or given twice, is a mistake, not something to pass over; one not given is asked
    // for (the library's message speaks of its Rust calls)
    let components: Vec<String> = c
        .indexes
        .iter()
        .filter_map(|name| entity.model().index(name))
        .filter_map(|index| entity.model().generated_property(&index.hash_key))
        .flat_map(|generated| generated.components.iter().map(ToString::to_string))
        .collect();
    let mut fills: HashMap<String, AttributeValue> = HashMap::new();
    for pair in &c.wheres {
        let (name, value) = pair
            .split_once('=')
            .ok_or_else(|| Failure::Input(format!("--where `{pair}` is not NAME=VALUE")))?;
        let name = name.trim();
        if !components.iter().any(|c| c == name) {
            return Err(Failure::Input(format!(
                "--where {name}: not a component of the hash key of {}; {}",
                c.indexes.join(", "),
                if components.is_empty() {
                    "their hash keys have no components to fill: drop --where".to_owned()
                } else {
                    format!("fill {}", components.join(", "))
                }
            )));
        }
        if fills
            .insert(name.to_owned(), typed_value(&entity, name, value)?)
            .is_some()
        {
            return Err(Failure::Input(format!(
                "--where {name} is given twice: a query reads one partition of it (run one query per value)"
            )));
        }
    }
    if let Some(missing) = components.iter().find(|c| !fills.contains_key(*c)) {
        return Err(Failure::Input(format!(
            "--index {} is keyed by a sharded hash key of `{missing}`: give its value with --where {missing}=VALUE",
            c.indexes.join(", ")
        )));
    }
    let filters: Vec<Filter> = c
        .filter
        .iter()
        .map(|f| filter(&entity, f))
        .collect::<Result<_, _>>()?;
    let mut ranges = Vec::new();
    for name in &c.indexes {
        let index = entity
            .index(name)
            .map_err(|e| Failure::Input(e.to_string()))?;
        let range = c
            .range
            .as_deref()
            .map(|r| range_condition(&entity, &index.range_key, r))
            .transpose()?;
        ranges.push((name.clone(), range));
    }
    let limit = page_limit(c, all, &entity);
    let mut unindexed = Query::new(store, entity)
        .item(fills.into())
        .descending(c.descending);
    if let Some(p) = &c.projection {
        unindexed = unindexed.projection(p.iter().cloned());
    }
    if let Some(w) = &c.window {
        let (from, to) = window(w, "--window")?;
        unindexed = unindexed.shards_between(from, to);
    }
    if let Some(w) = &c.created {
        let (from, to) = window(w, "--created")?;
        unindexed = unindexed.created_between(from, to);
    }
    unindexed = unindexed.limit(limit);
    if let Some(size) = c.page_size {
        unindexed = unindexed.page_size(usize::try_from(size).unwrap_or(usize::MAX));
    }
    if let Some(throttle) = c.throttle {
        unindexed = unindexed.throttle(usize::try_from(throttle).unwrap_or(usize::MAX));
    }
    let mut ranges = ranges.into_iter();
    let Some((first, range)) = ranges.next() else {
        return Err(Failure::Input("give at least one --index".to_owned()));
    };
    let mut query = unindexed.index(first);
    if let Some(range) = range {
        query = query.range(range);
    }
    for f in &filters {
        query = query.filter(f.clone());
    }
    for (name, _) in ranges {
        query = query.index(name);
        for f in &filters {
            query = query.filter(f.clone());
        }
    }
    Ok(Prepared::Classic(query))
}

/// The query `conditions` describe on the item collection of `members` over their shared
/// multi-attribute index (the one `--index` of `conditions`), its items tagged with their
/// member; checked and built without a request, as [`prepare`] does.
pub(crate) fn prepare_collection<'a, S: Store>(
    conditions: &Conditions,
    store: &'a S,
    members: Vec<EntitySchema<'a>>,
) -> Result<CollectionQuery<'a, S>, Failure> {
    let [name] = conditions.indexes.as_slice() else {
        return Err(Failure::Input(
            "a collection is queried on exactly one index (the multi-attribute index its members share)"
                .to_owned(),
        ));
    };
    let multi = members
        .first()
        .and_then(|m| m.model().index(name))
        .and_then(|i| i.multi.clone())
        .ok_or_else(|| {
            Failure::Input(format!(
                "--index {name} is not a multi-attribute index of the collection's members"
            ))
        })?;
    prepare_multi(conditions, false, store, members, name, &multi).map(MultiQuery::tagged)
}

/// A query of one multi-attribute index, of one entity or of the item collection of
/// `entities` (the first gives the types and the default page size): `--where` gives each
/// partition attribute (but the shard attribute of a sharded key, over which the query fans
/// out), `--range` a condition on the first sort attribute.
fn prepare_multi<'a, S: Store>(
    c: &Conditions,
    all: bool,
    store: &'a S,
    entities: Vec<EntitySchema<'a>>,
    name: &str,
    multi: &entity_manager::model::MultiKey,
) -> Result<MultiQuery<'a, S>, Failure> {
    let Some(entity) = entities.first().copied() else {
        return Err(Failure::Input(format!(
            "--index {name}: no entity to query"
        )));
    };
    let unsupported = [
        (!c.filter.is_empty(), "--filter"),
        (c.projection.is_some(), "--projection"),
        (c.created.is_some(), "--created"),
    ];
    if let Some((_, flag)) = unsupported.iter().find(|(given, _)| *given) {
        return Err(Failure::Input(format!(
            "{flag} is not supported on the multi-attribute index {name} yet: drop it"
        )));
    }
    let partition = multi.user_hash();
    let mut values = Vec::new();
    for attribute in partition {
        let prefix = format!("{}=", attribute.name);
        let given: Vec<&str> = c
            .wheres
            .iter()
            .filter_map(|w| w.strip_prefix(&prefix))
            .collect();
        let [value] = given.as_slice() else {
            return Err(Failure::Input(format!(
                "--index {name} has the partition attribute `{}`: give its value once with --where {}=VALUE",
                attribute.name, attribute.name
            )));
        };
        values.push(match attribute.key_type {
            KeyType::N if value.parse::<f64>().is_ok() => AttributeValue::N((*value).to_owned()),
            KeyType::S => AttributeValue::S((*value).to_owned()),
            _ => {
                return Err(Failure::Input(format!(
                    "--where {}: `{value}` is not a value of its type ({:?})",
                    attribute.name, attribute.key_type
                )));
            }
        });
    }
    if let Some(extra) = c.wheres.iter().find(|w| {
        !partition
            .iter()
            .any(|a| w.starts_with(&format!("{}=", a.name)))
    }) {
        let names: Vec<&str> = partition.iter().map(|a| &*a.name).collect();
        return Err(Failure::Input(format!(
            "--where {extra}: not a partition attribute of {name}; its partition attributes are {}",
            names.join(", ")
        )));
    }
    let limit = page_limit(c, all, &entity);
    let range = match &c.range {
        Some(range) => {
            let first = multi.range.first().map_or("", |a| &*a.name);
            Some(range_condition(&entity, first, range)?)
        }
        None => None,
    };
    let mut query = MultiQuery::collection(store, entities, name)
        .hash(values)
        .descending(c.descending)
        .limit(limit);
    if let Some(range) = range {
        query = query.range(range);
    }
    if let Some(size) = c.page_size {
        query = query.page_size(usize::try_from(size).unwrap_or(usize::MAX));
    }
    if let Some(throttle) = c.throttle {
        query = query.throttle(usize::try_from(throttle).unwrap_or(usize::MAX));
    }
    if let Some(w) = &c.window {
        let (from, to) = window(w, "--window")?;
        query = query.shards_between(from, to);
    }
    Ok(query)
}

/// Reads the pages `--all`, `--pages` and `--page-token` ask for with `page`, printing each
/// page's records and, on stderr, the count and the token of the next page.
fn print_pages<F, P>(
    args: &QueryArgs,
    json: bool,
    opened: &Opened,
    entity: &EntitySchema<'_>,
    page: P,
) -> Result<(), Failure>
where
    P: Fn(Option<String>) -> F,
    F: std::future::Future<Output = entity_manager::Result<entity_manager::query::QueryPageResult>>,
{
    let max_pages = if args.all {
        u64::MAX
    } else {
        args.pages.unwrap_or(1)
    };
    let mut token = args.page_token.clone();
    let (mut pages, mut count) = (0u64, 0u64);
    let rt = runtime()?;
    loop {
        let page = rt
            .block_on(page(token.clone()))
            .map_err(|e| explain("query", &args.target.table, &e))?;
        print_records(&opened.schema, entity, &page.items, &args.output)?;
        pages += 1;
        count += page.items.len() as u64;
        token = page.next;
        if token.is_none() || pages >= max_pages {
            break;
        }
    }
    if json {
        say!(
            "{}",
            json!({ "ok": true, "table": args.target.table, "records": count, "pages": pages, "nextPageToken": token })
        );
    } else if let Some(token) = &token {
        say!("{count} records in {pages} page(s); more remain: continue with --page-token {token}");
    } else {
        say!("{count} records in {pages} page(s); no more");
    }
    Ok(())
}

/// A record refused by `import`, `put` or `delete`.
struct Refused {
    line: u64,
    id: Option<String>,
    reason: String,
}

/// What an import checkpoint file holds: where it belongs and the next line to read.
#[derive(serde::Serialize, serde::Deserialize)]
struct ImportState {
    table: String,
    entity: String,
    file: Option<String>,
    line: u64,
    written: u64,
    refused: u64,
}

/// Writes one batch of keyed records; returns the refused ones (`--create-only`).
async fn write_batch(
    store: &DynamoStore,
    entity: &EntitySchema<'_>,
    batch: Vec<(u64, Item)>,
    create_only: bool,
) -> Result<(u64, Vec<Refused>), Failure> {
    let table = store.table_name().to_owned();
    if !create_only {
        let n = batch.len() as u64;
        // a record whose key comes again later in the batch is replaced by it, as writing the
        // lines one after the other would (a batch write refuses a key named twice)
        let hash_key = &*entity.table().hash_key;
        let range_key = &*entity.table().range_key;
        let key_of = |item: &Item| match (item.get(hash_key), item.get(range_key)) {
            (Some(AttributeValue::S(h)), Some(AttributeValue::S(r))) => {
                Some((h.clone(), r.clone()))
            }
            _ => None,
        };
        let mut last: HashMap<(String, String), usize> = HashMap::new();
        for (at, (_, item)) in batch.iter().enumerate() {
            if let Some(key) = key_of(item) {
                last.insert(key, at);
            }
        }
        let writes = batch
            .into_iter()
            .enumerate()
            .filter(|(at, (_, item))| key_of(item).is_none_or(|key| last.get(&key) == Some(at)))
            .map(|(_, (_, item))| WriteRequest::Put(item))
            .collect();
        store
            .batch_write(writes)
            .await
            .map_err(|e| explain("import", &table, &e))?;
        return Ok((n, Vec::new()));
    }
    let unique = entity.model().unique_property.to_string();
    let ids: Vec<AttributeValue> = batch
        .iter()
        .filter_map(|(_, item)| item.get(&unique).cloned())
        .collect();
    let existing = find(store, entity, &ids, None).await?;
    let mut refused = Vec::new();
    let mut fresh = Vec::new();
    let mut seen = HashSet::new();
    for (line, item) in batch {
        let id = id_of(entity, &item);
        let taken = id
            .as_ref()
            .is_some_and(|id| existing.contains_key(id) || !seen.insert(id.clone()));
        if taken {
            refused.push(Refused {
                line,
                id,
                reason: "exists".to_owned(),
            });
        } else {
            fresh.push((line, id, item));
        }
    }
    let results: Vec<_> =
        futures::stream::iter(fresh.into_iter().map(|(line, id, item)| async move {
            (line, id, store.put_item(item, Expect::Absent).await)
        }))
        .buffer_unordered(16)
        .collect()
        .await;
    let mut written = 0;
    let mut failure = None;
    for (line, id, result) in results {
        match result {
            Ok(()) => written += 1,
            Err(e) if e.is_conditional_check_failed() => refused.push(Refused {
                line,
                id,
                reason: "exists".to_owned(),
            }),
            Err(e) => failure = Some(explain("import", &table, &e)),
        }
    }
    if let Some(f) = failure {
        return Err(f);
    }
    refused.sort_by_key(|r| r.line);
    Ok((written, refused))
}

/// The number of lines of `path` (the progress total), or `None`.
fn count_lines(path: &std::path::Path) -> Option<u64> {
    let file = std::fs::File::open(path).ok()?;
    Some(io::BufReader::new(file).lines().count() as u64)
}

#[allow(clippy::too_many_lines)] // one command, start to end
pub(crate) fn import(args: &ImportArgs, json: bool) -> Result<(), Failure> {
    let opened = args.target.open()?;
    let entity = opened.entity(&args.target.entity)?;
    let table = args.target.table.clone();
    let file_name = args.file.as_ref().map(|p| p.display().to_string());
    let mut state = ImportState {
        table: table.clone(),
        entity: args.target.entity.clone(),
        file: file_name.clone(),
        line: args.start_line,
        written: 0,
        refused: 0,
    };
    let mut resumed = args.start_line > 1;
    let _held = args.checkpoint.as_deref().map(job::hold).transpose()?;
    if let Some(path) = &args.checkpoint
        && let Some(saved) = job::load::<ImportState>(path, "import")?
    {
        if saved.table != table || saved.entity != args.target.entity || saved.file != file_name {
            return Err(Failure::Input(format!(
                "the checkpoint {} belongs to an import of {} into table {} from {}; use another file",
                path.display(),
                saved.entity,
                saved.table,
                saved.file.as_deref().unwrap_or("stdin")
            )));
        }
        if args.start_line > 1 && args.start_line != saved.line {
            say!(
                "note: the checkpoint {} resumes at line {}; --start-line {} is not used",
                path.display(),
                saved.line,
                args.start_line
            );
        }
        state = saved;
        resumed = true;
    }
    let reader: Box<dyn BufRead> = match &args.file {
        Some(path) => Box::new(io::BufReader::new(
            std::fs::File::open(path)
                .map_err(|e| Failure::Input(format!("cannot read {}: {e}", path.display())))?,
        )),
        None => Box::new(io::BufReader::new(io::stdin())),
    };
    signal::listen()?;
    let total = args.file.as_deref().and_then(count_lines).map(Total::Exact);
    let mut progress = Progress::new(
        format!("import into table {table}"),
        "lines",
        total,
        state.line.saturating_sub(1),
    );
    let mut refused: Vec<Refused> = Vec::new();
    let mut batch: Vec<(u64, Item)> = Vec::new();
    let mut batches = 0u64;
    let mut next_line: u64;
    let rt = runtime()?;
    let mut lines = reader.lines();
    let mut line_no = 0u64;
    let mut stopped = false;
    let first_line = state.line;
    loop {
        let line = lines.next();
        let at_end = line.is_none();
        if let Some(line) = line {
            line_no += 1;
            let text =
                line.map_err(|e| Failure::Input(format!("line {line_no}: cannot read: {e}")))?;
            if line_no < state.line || text.trim().is_empty() {
                continue;
            }
            let parsed = out::parse_json(&text)
                .map_err(|e| (None, e))
                .and_then(|v| out::parse_item(v, args.format).map_err(|e| (None, e)))
                .and_then(|item| {
                    // a refusal names the record's id when it has one
                    let id = id_of(&entity, &item);
                    let keyed = entity.refresh_keys(&item).map_err(|e| (id.clone(), e.to_string()))?;
                    let size = item_size(&keyed);
                    if size > MAX_ITEM_BYTES {
                        return Err((
                            id,
                            format!(
                                "the item is {size} bytes with its keys, over DynamoDB's {MAX_ITEM_BYTES}; make it smaller"
                            ),
                        ));
                    }
                    Ok(keyed)
                });
            match parsed {
                Ok(item) => batch.push((line_no, item)),
                Err((id, reason)) => refused.push(Refused {
                    line: line_no,
                    id,
                    reason,
                }),
            }
            if (batch.len() as u64) < args.batch {
                continue;
            }
        }
        if !batch.is_empty() {
            let (written, mut refusals) = rt
                .block_on(write_batch(
                    &opened.store,
                    &entity,
                    std::mem::take(&mut batch),
                    args.create_only,
                ))
                .map_err(|f| interrupted_failure(f, args, &state, resumed || batches > 0))?;
            state.written += written;
            refused.append(&mut refusals);
            batches += 1;
        }
        next_line = line_no + 1;
        state.line = next_line;
        state.refused = refused.len() as u64;
        if let Some(path) = &args.checkpoint
            && !at_end
        {
            job::save(path, "import", &state)?;
        }
        progress.update(
            line_no,
            &format!("{} written, {} refused", state.written, refused.len()),
        );
        if at_end {
            break;
        }
        if signal::interrupted() || args.stop_after.is_some_and(|n| batches >= n) {
            stopped = true;
            break;
        }
    }
    progress.finish();
    if line_no + 1 < first_line {
        say!("note: the input has {line_no} lines; starting at line {first_line} imported nothing");
    }
    for r in &refused {
        say!(
            "line {}: refused{}: {}",
            r.line,
            r.id.as_ref()
                .map(|id| format!(" ({id})"))
                .unwrap_or_default(),
            r.reason
        );
    }
    if stopped {
        let resume = match &args.checkpoint {
            Some(path) => format!("--checkpoint {}", path.display()),
            None => format!("--start-line {next_line}"),
        };
        let message = format!(
            "import {} at line {next_line}: {} records written so far; to resume, run the same command with {resume}",
            if signal::interrupted() {
                "interrupted"
            } else {
                "stopped (--stop-after)"
            },
            state.written
        );
        return Err(if signal::interrupted() {
            Failure::Interrupted(message)
        } else {
            Failure::Operation(message)
        });
    }
    if let Some(path) = &args.checkpoint {
        let _ = std::fs::remove_file(path);
    }
    let refused_lines: Vec<Value> = refused
        .iter()
        .map(|r| json!({ "line": r.line, "id": r.id, "reason": r.reason }))
        .collect();
    if json {
        outln!(
            "{}",
            json!({ "ok": refused.is_empty(), "table": table, "entity": args.target.entity, "written": state.written, "refused": refused_lines })
        );
    } else {
        outln!(
            "imported {} records of entity {} into table {table}; {} refused",
            state.written,
            args.target.entity,
            refused.len()
        );
    }
    if refused.is_empty() {
        Ok(())
    } else {
        Err(Failure::Findings(format!(
            "{} records refused (listed above)",
            refused.len()
        )))
    }
}

/// A failed batch: the message says where to resume (the failed batch is written again; puts
/// are idempotent), unless nothing was written yet.
fn interrupted_failure(
    failure: Failure,
    args: &ImportArgs,
    state: &ImportState,
    started: bool,
) -> Failure {
    if !started {
        return failure;
    }
    let resume = match &args.checkpoint {
        Some(path) => format!("--checkpoint {}", path.display()),
        None => format!("--start-line {}", state.line),
    };
    match failure {
        Failure::Detailed { message, detail } => Failure::Detailed {
            message: format!(
                "{message}; {} records written before; to resume, run the same command with {resume}",
                state.written
            ),
            detail,
        },
        Failure::Input(message) => Failure::Input(format!(
            "{message}; {} records written before; to resume after the line at fault, run the same command with {resume}",
            state.written
        )),
        other => other,
    }
}

/// The record of `put`: `--item`, or one JSON object on stdin.
fn read_record(args: &PutArgs) -> Result<Item, Failure> {
    let text = if let Some(text) = &args.item {
        text.clone()
    } else {
        let mut text = String::new();
        io::Read::read_to_string(&mut io::stdin().lock(), &mut text)
            .map_err(|e| Failure::Input(format!("cannot read stdin: {e}")))?;
        text
    };
    let value: Value =
        out::parse_json(&text).map_err(|e| Failure::Input(format!("the record: {e}")))?;
    out::parse_item(value, args.format).map_err(|e| Failure::Input(format!("the record: {e}")))
}

/// The condition of `--if-version N`.
fn version_condition(version: &VersionArgs, n: u64) -> Expect {
    Expect::Matches(Filter::Compare {
        attribute: version.version_attribute.clone(),
        op: Comparison::Eq,
        value: AttributeValue::N(n.to_string()),
    })
}

pub(crate) fn put(args: &PutArgs, json: bool) -> Result<(), Failure> {
    let opened = args.target.open()?;
    let entity = opened.entity(&args.target.entity)?;
    let table = &args.target.table;
    let mut record = read_record(args)?;
    if let Some(n) = args.version.if_version {
        record.insert(
            args.version.version_attribute.clone(),
            AttributeValue::N((n + 1).to_string()),
        );
    }
    let item = entity
        .refresh_keys(&record)
        .map_err(|e| Failure::Input(format!("the record: {e}")))?;
    let id = id_of(&entity, &item).unwrap_or_default();
    let rt = runtime()?;
    // the record as stored, under any shard bump its id may sit under
    let unique = entity.model().unique_property.to_string();
    let ids: Vec<AttributeValue> = item.get(&unique).cloned().into_iter().collect();
    let stored: Vec<Item> = rt
        .block_on(find(&opened.store, &entity, &ids, None))?
        .remove(&id)
        .unwrap_or_default();
    if args.create_only && !stored.is_empty() {
        return Err(refusal(json, table, &id, "exists"));
    }
    let hash = &*entity.table().hash_key;
    let range = &*entity.table().range_key;
    if let Some(other) = stored
        .iter()
        .find(|o| o.get(hash) != item.get(hash) || o.get(range) != item.get(range))
    {
        let shown = match other.get(hash) {
            Some(AttributeValue::S(h)) => h.clone(),
            _ => String::new(),
        };
        let why = format!(
            "stored under hash key {shown}, another shard than this record's (its timestamp differs): a put would leave two records; keep the stored timestamp, or delete it first (delete --id {id})"
        );
        return Err(refusal(json, table, &id, &why));
    }
    let expect = match (args.create_only, args.version.if_version) {
        (true, _) => Expect::Absent,
        (false, Some(n)) => version_condition(&args.version, n),
        (false, None) => Expect::Any,
    };
    match rt.block_on(opened.store.put_item(item, expect)) {
        Ok(()) => {}
        Err(e) if e.is_conditional_check_failed() => {
            let version = &args.version.version_attribute;
            let why = if args.create_only {
                "exists".to_owned()
            } else {
                // read again: what the condition met
                let now: Vec<Item> = rt
                    .block_on(find(&opened.store, &entity, &ids, None))?
                    .remove(&id)
                    .unwrap_or_default();
                match now.first().map(|o| o.get(version)) {
                    None => "not found: there is no stored version".to_owned(),
                    Some(Some(AttributeValue::N(v))) => format!(
                        "the stored {version} is {v}, not {}",
                        args.version.if_version.unwrap_or_default()
                    ),
                    Some(_) => format!("the stored record has no number {version}"),
                }
            };
            return Err(refusal(json, table, &id, &why));
        }
        Err(e) => return Err(explain("put", table, &e)),
    }
    if json {
        outln!(
            "{}",
            json!({ "ok": true, "table": table, "entity": args.target.entity, "id": id, "action": "put" })
        );
    } else {
        outln!("put {} {id} into table {table}", args.target.entity);
    }
    Ok(())
}

/// A refused write: exit 3 with the reason.
fn refusal(json: bool, table: &str, id: &str, why: &str) -> Failure {
    if json {
        say!(
            "{}",
            json!({ "ok": false, "table": table, "id": id, "refused": why })
        );
    }
    Failure::Findings(format!("{id}: refused ({why})"))
}

pub(crate) fn delete(args: &DeleteArgs, json: bool) -> Result<(), Failure> {
    let opened = args.target.open()?;
    let entity = opened.entity(&args.target.entity)?;
    let table = &args.target.table;
    let unique = entity.model().unique_property.to_string();
    let id = typed_value(&entity, &unique, &args.id)?;
    let rt = runtime()?;
    let found = rt.block_on(find(&opened.store, &entity, &[id], None))?;
    let Some(items) = found.get(&args.id) else {
        return Err(refusal(json, table, &args.id, "not found"));
    };
    let hash = entity.table().hash_key.to_string();
    let range = entity.table().range_key.to_string();
    let mut deleted = BTreeSet::new();
    for item in items {
        let key: Item = item
            .iter()
            .filter(|(k, _)| **k == hash || **k == range)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<HashMap<_, _>>()
            .into();
        let expect = match args.version.if_version {
            Some(n) => version_condition(&args.version, n),
            None => Expect::Present,
        };
        match rt.block_on(opened.store.delete_item(&key, expect)) {
            Ok(()) => {
                deleted.insert((text_of(&key, &hash), text_of(&key, &range)));
            }
            Err(e) if e.is_conditional_check_failed() => {
                let why = if args.version.if_version.is_some() {
                    "the stored version differs"
                } else {
                    "not found"
                };
                return Err(refusal(json, table, &args.id, why));
            }
            Err(e) => return Err(explain("delete", table, &e)),
        }
    }
    if json {
        outln!(
            "{}",
            json!({ "ok": true, "table": table, "entity": args.target.entity, "id": args.id, "action": "deleted", "items": deleted.len() })
        );
    } else {
        outln!(
            "deleted {} {} from table {table}",
            args.target.entity,
            args.id
        );
    }
    Ok(())
}
