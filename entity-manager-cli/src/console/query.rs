//! The query view: an entity or an item collection and an index picked from the configuration,
//! typed conditions (a number field takes a number), run across every shard by the library's
//! query engine (`records::prepare`, the `query` command's own; for a collection
//! `records::prepare_collection`, the library's tagged collection query), paged with its tokens
//! forward and back, each page with its records decoded (by their member entity, for a
//! collection), its statistics and a bar per shard read.
//!
//! The collections are derived from the schema: entities that declare a multi-attribute index
//! of the same name and key form a collection on it ([`collections`]).
//!
//! Bad input — a condition that does not parse, a value of the wrong type, a key component
//! left out — is refused inline by `prepare`, before any request.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::Response;
use entity_manager::query::QueryPageResult;
use entity_manager::store::KeyType;
use entity_manager::{EntitySchema, Schema};
use maud::{Markup, html};

use super::watch::Watched;
use super::{page, svg};
use crate::Failure;
use crate::connection::explain;
use crate::records::{Conditions, key_type_of, prepare, prepare_collection};

/// The range operators of the form, as `query --range` writes them.
const OPERATORS: [&str; 8] = ["", "=", "<", "<=", ">", ">=", "between", "begins_with"];

/// The query form's fields, as sent.
struct Form(super::Params);

impl Form {
    fn get(&self, name: &str) -> &str {
        self.0.get(name)
    }

    /// The fields of the query itself (not its page): what the paging forms carry over.
    fn query_fields(&self) -> impl Iterator<Item = &(String, String)> {
        self.0
            .0
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "token" | "trail" | "run"))
    }
}

/// A field of the index's partition to fill: its name and whether it takes a number.
struct Fill {
    name: String,
    number: bool,
}

/// The partition fields an index of `entity` needs: the components of a sharded generated
/// hash key, or the partition attributes of a multi-attribute key (but its shard attribute).
fn fills(entity: &EntitySchema<'_>, index: &str) -> Vec<Fill> {
    let model = entity.model();
    let Some(index) = model.index(index) else {
        return Vec::new();
    };
    if let Some(multi) = &index.multi {
        return multi
            .user_hash()
            .iter()
            .map(|a| Fill {
                name: a.name.to_string(),
                number: a.key_type == KeyType::N,
            })
            .collect();
    }
    model
        .generated_property(&index.hash_key)
        .map(|g| {
            g.components
                .iter()
                .map(|c| Fill {
                    name: c.to_string(),
                    number: key_type_of(entity, c) == Some(KeyType::N),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The attribute the range condition is on (the first sort attribute of a multi-attribute
/// key), and whether it takes a number.
fn range_of(entity: &EntitySchema<'_>, index: &str) -> Option<(String, bool)> {
    let index = entity.model().index(index)?;
    let name = match &index.multi {
        Some(multi) => {
            let first = multi.range.first()?;
            return Some((first.name.to_string(), first.key_type == KeyType::N));
        }
        None => index.range_key.to_string(),
    };
    let number = key_type_of(entity, &name) == Some(KeyType::N);
    Some((name, number))
}

/// The query's conditions from the form, in `query`'s terms (checked by `prepare`).
fn conditions(form: &Form, entity: &EntitySchema<'_>) -> Result<Conditions, Failure> {
    let index = form.get("index").to_owned();
    let mut c = Conditions {
        indexes: vec![index.clone()],
        ..Conditions::default()
    };
    for fill in fills(entity, &index) {
        let value = form.get(&format!("w.{}", fill.name)).trim();
        if !value.is_empty() {
            c.wheres.push(format!("{}={value}", fill.name));
        }
    }
    let op = form.get("op");
    let (v1, v2) = (form.get("v1").trim(), form.get("v2").trim());
    if !OPERATORS.contains(&op) {
        return Err(Failure::Input(format!("unknown range operator `{op}`")));
    }
    if !op.is_empty() {
        if v1.is_empty() || (op == "between" && v2.is_empty()) {
            return Err(Failure::Input(format!(
                "the range condition `{op}` needs {}",
                if op == "between" {
                    "two values (from and to)"
                } else {
                    "a value"
                }
            )));
        }
        c.range = Some(if op == "between" {
            format!("between {v1} and {v2}")
        } else {
            format!("{op} {v1}")
        });
    }
    let filter = form.get("filter").trim();
    if !filter.is_empty() {
        c.filter.push(filter.to_owned());
    }
    c.limit = whole(form, "limit", "records per page")?;
    c.throttle = whole(form, "throttle", "shard queries in flight")?;
    c.descending = form.get("desc") == "on";
    Ok(c)
}

/// The whole number from 1 to 1000 in field `name` (`what` in a refusal), if given.
fn whole(form: &Form, name: &str, what: &str) -> Result<Option<u64>, Failure> {
    let text = form.get(name).trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse::<u64>()
        .ok()
        .filter(|n| (1..=1000).contains(n))
        .map(Some)
        .ok_or_else(|| {
            Failure::Input(format!(
                "{what} `{text}` is not a whole number from 1 to 1000"
            ))
        })
}

/// An item collection of the schema: entities declaring multi-attribute indexes of the same
/// names and keys.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Collection {
    /// The member tokens joined by `+` (the picker's value).
    label: String,
    /// The member entity tokens, in the schema's order.
    members: Vec<String>,
    /// The indexes they share (same name, same key).
    indexes: Vec<String>,
}

/// The item collections of `schema`: for each multi-attribute index, the entities that
/// declare it with the same key, when there are two or more; collections of the same members
/// on several indexes are one collection with those indexes.
fn collections(schema: &Schema) -> Vec<Collection> {
    let mut shared: Vec<(String, &entity_manager::model::MultiKey, Vec<String>)> = Vec::new();
    for entity in schema.entities() {
        for index in entity.indexes.iter() {
            let Some(multi) = &index.multi else {
                continue;
            };
            match shared
                .iter_mut()
                .find(|(name, key, _)| *name == *index.name && *key == multi)
            {
                Some((_, _, members)) => members.push(entity.token.to_string()),
                None => shared.push((
                    index.name.to_string(),
                    multi,
                    vec![entity.token.to_string()],
                )),
            }
        }
    }
    let mut out: Vec<Collection> = Vec::new();
    for (index, _, members) in shared.into_iter().filter(|s| s.2.len() >= 2) {
        let label = members.join("+");
        match out.iter_mut().find(|c| c.label == label) {
            Some(c) => c.indexes.push(index),
            None => out.push(Collection {
                label,
                members,
                indexes: vec![index],
            }),
        }
    }
    out
}

/// What the picker chose: one entity, or a collection with its member schemas (the first
/// types the form's fields: the members share the index's key).
enum Pick<'s> {
    Entity(EntitySchema<'s>),
    Collection(Collection, Vec<EntitySchema<'s>>),
}

impl<'s> Pick<'s> {
    /// The collection labelled `chosen`, else the entity of that token.
    fn of(schema: &'s Schema, chosen: &str) -> Option<Self> {
        if let Some(c) = collections(schema).into_iter().find(|c| c.label == chosen) {
            let members = c
                .members
                .iter()
                .map(|m| schema.entity(m))
                .collect::<Result<Vec<_>, _>>()
                .ok()?;
            return Some(Self::Collection(c, members));
        }
        schema.entity(chosen).ok().map(Self::Entity)
    }

    /// The entity whose fields the form shows.
    fn first(&self) -> Option<EntitySchema<'s>> {
        match self {
            Self::Entity(e) => Some(*e),
            Self::Collection(_, members) => members.first().copied(),
        }
    }

    /// The indexes the picker offers.
    fn indexes(&self) -> Vec<String> {
        match self {
            Self::Entity(e) => e
                .model()
                .indexes
                .iter()
                .map(|i| i.name.to_string())
                .collect(),
            Self::Collection(c, _) => c.indexes.clone(),
        }
    }
}

/// What one page of the query shows.
struct Ran {
    page: QueryPageResult,
    /// The member of each item (a position in the collection's members); empty for an entity.
    members: Vec<usize>,
    /// Items read per shard (hash key value, over every index queried).
    shards: Vec<(String, f64)>,
    /// The most shard queries one partition needed.
    rounds: usize,
}

pub(super) async fn view(
    State(state): State<Arc<super::State>>,
    Query(params): Query<super::Params>,
) -> Result<Response, super::Unavailable> {
    let opened = state.opened()?;
    let form = Form(params);
    let schema = &opened.schema;
    let chosen = match form.get("entity") {
        "" => schema.entities().first().map(|e| e.token.to_string()),
        token => Some(token.to_owned()),
    };
    let pick = chosen.as_deref().and_then(|t| Pick::of(schema, t));
    let index = match (form.get("index"), &pick) {
        ("", Some(pick)) => pick.indexes().into_iter().next(),
        (name, _) => Some(name.to_owned()),
    };
    let mut outcome: Option<Result<Ran, String>> = None;
    if let (Some(pick), Some(index), false) = (&pick, &index, form.get("run").is_empty()) {
        let mut fields = form.0.0.clone();
        fields.retain(|(k, _)| k != "index");
        fields.push(("index".to_owned(), index.clone()));
        let form = Form(super::Params(fields));
        outcome = Some(run(&form, pick, &opened.store, &state.table).await);
    }
    let body = html! {
        h1 { "Query" }
        (form_markup(schema, &form, chosen.as_deref(), pick.as_ref(), index.as_deref()))
        @match &outcome {
            None => {}
            Some(Err(message)) => { (page::refused(message)) }
            Some(Ok(ran)) => {
                (results(schema, pick.as_ref(), &form, ran, state.write.then_some(&opened.store)))
            }
        }
    };
    Ok(page::layout(&state.table, "Query", &body))
}

async fn run(
    form: &Form,
    pick: &Pick<'_>,
    store: &entity_manager::store::DynamoStore,
    table: &str,
) -> Result<Ran, String> {
    let entity = pick
        .first()
        .ok_or_else(|| "the collection has no members".to_owned())?;
    let conditions = conditions(form, &entity).map_err(|f| f.message())?;
    let watched = Watched::new(store);
    let token = Some(form.get("token")).filter(|t| !t.is_empty());
    let refused = |e: entity_manager::Error| {
        match explain("query", table, &e) {
            // a token or value the library refuses: bad input, said as such
            Failure::Input(m) => m,
            other => other.message(),
        }
    };
    let (page, members) = match pick {
        Pick::Entity(entity) => {
            let prepared =
                prepare(&conditions, false, &watched, *entity).map_err(|f| f.message())?;
            (prepared.page(token).await.map_err(refused)?, Vec::new())
        }
        Pick::Collection(_, members) => {
            let query = prepare_collection(&conditions, &watched, members.clone())
                .map_err(|f| f.message())?;
            let tagged = query.page(token).await.map_err(refused)?;
            let members = tagged.items.iter().map(|m| m.member).collect();
            let page = QueryPageResult {
                items: tagged.items.into_iter().map(|m| m.item).collect(),
                next: tagged.next,
                stats: tagged.stats,
            };
            (page, members)
        }
    };
    let reads = watched.reads();
    let rounds = reads.values().map(|r| r.queries).max().unwrap_or(0);
    let mut per_shard = std::collections::BTreeMap::<String, usize>::new();
    for ((_, hash), r) in &reads {
        *per_shard.entry(hash.clone()).or_default() += r.items;
    }
    #[allow(clippy::cast_precision_loss)] // item counts
    let shards = per_shard
        .into_iter()
        .map(|(hash, items)| (hash, items as f64))
        .collect();
    Ok(Ran {
        page,
        members,
        shards,
        rounds,
    })
}

fn form_markup(
    schema: &Schema,
    form: &Form,
    chosen: Option<&str>,
    pick: Option<&Pick<'_>>,
    index: Option<&str>,
) -> Markup {
    let first = pick.and_then(Pick::first);
    let index = index.unwrap_or_default();
    let fills = first.map(|e| fills(&e, index)).unwrap_or_default();
    let range = first.and_then(|e| range_of(&e, index));
    let input_type = |number: bool| if number { "number" } else { "text" };
    let collections = collections(schema);
    html! {
        form.query id="query-form" method="get" action="/query" {
            label for="entity" { "entity or collection" }
            select id="entity" name="entity" data-submit {
                optgroup label="entities" {
                    @for e in schema.entities() {
                        option value=(e.token) selected[Some(&*e.token) == chosen] { (e.token) }
                    }
                }
                @if !collections.is_empty() {
                    optgroup label="collections" {
                        @for c in &collections {
                            option value=(c.label) selected[Some(c.label.as_str()) == chosen] {
                                (c.members.join(" + ")) " (on " (c.indexes.join(", ")) ")"
                            }
                        }
                    }
                }
            }
            label for="index" { "index" }
            select id="index" name="index" data-submit {
                @if let Some(pick) = pick {
                    @for name in pick.indexes() {
                        option value=(name) selected[name == index] { (name) }
                    }
                }
            }
            @for fill in &fills {
                label for={ "w." (fill.name) } { (fill.name) " =" }
                input id={ "w." (fill.name) } name={ "w." (fill.name) } type=(input_type(fill.number))
                    step=[fill.number.then_some("any")] value=(form.get(&format!("w.{}", fill.name)));
            }
            @if let Some((name, number)) = &range {
                label for="op" { code { (name) } }
                span {
                    select id="op" name="op" {
                        @for op in OPERATORS {
                            option value=(op) selected[op == form.get("op")] { @if op.is_empty() { "(any)" } @else { (op) } }
                        }
                    }
                    " "
                    input id="v1" name="v1" type=(input_type(*number)) step=[number.then_some("any")] value=(form.get("v1"));
                    " and "
                    input id="v2" name="v2" type=(input_type(*number)) step=[number.then_some("any")] value=(form.get("v2")) placeholder="(between only)";
                }
            }
            label for="filter" { "filter" }
            input id="filter" name="filter" type="text" size="40" placeholder="e.g. phone begins_with +1555" value=(form.get("filter"));
            label for="limit" { "records per page" }
            input id="limit" name="limit" type="number" min="1" max="1000" value=(form.get("limit"));
            label for="throttle" { "shard queries in flight" }
            input id="throttle" name="throttle" type="number" min="1" max="1000" placeholder="(the table's)" value=(form.get("throttle"));
            label for="desc" { "descending" }
            input id="desc" name="desc" type="checkbox" checked[form.get("desc") == "on"];
            span {}
            span { button id="run" type="submit" name="run" value="1" { "Run across every shard" } }
        }
    }
}

/// A hidden-field form that runs the same query from `token`, with `trail` (the tokens of
/// the pages before, space-separated; `-` for the first page).
fn page_form(form: &Form, id: &str, label: &str, token: &str, trail: &str) -> Markup {
    html! {
        form.inline method="get" action="/query" {
            @for (name, value) in form.query_fields() {
                input type="hidden" name=(name) value=(value);
            }
            input type="hidden" name="token" value=(token);
            input type="hidden" name="trail" value=(trail);
            button id=(id) type="submit" name="run" value="1" { (label) }
        }
    }
}

/// A page of results; with `writable` (`--write`), each record links to its delete page.
fn results(
    schema: &Schema,
    pick: Option<&Pick<'_>>,
    form: &Form,
    ran: &Ran,
    writable: Option<&entity_manager::store::DynamoStore>,
) -> Markup {
    let stats = &ran.page.stats;
    let trail: Vec<&str> = form.get("trail").split_whitespace().collect();
    let here = match form.get("token") {
        "" => "-",
        token => token,
    };
    let number = trail.len() + 1;
    let after = trail
        .iter()
        .copied()
        .chain([here])
        .collect::<Vec<_>>()
        .join(" ");
    #[allow(clippy::cast_precision_loss)] // item counts
    let per_item = if stats.items_returned == 0 {
        "–".to_owned()
    } else {
        format!(
            "{:.2}",
            stats.items_read as f64 / stats.items_returned as f64
        )
    };
    // each record with the entity it is a record of (its member, for a collection)
    let of = |at: usize| match pick {
        Some(Pick::Collection(_, members)) => {
            ran.members.get(at).and_then(|m| members.get(*m)).copied()
        }
        Some(Pick::Entity(e)) => Some(*e),
        None => None,
    };
    let records: Vec<(String, String, serde_json::Value, Option<String>)> = ran
        .page
        .items
        .iter()
        .enumerate()
        .filter_map(|(at, item)| {
            let entity = of(at)?;
            let record = page::decoded(schema, &entity, item);
            let id = record
                .get(&*entity.model().unique_property)
                .map(page::cell)
                .unwrap_or_default();
            let delete = writable.and_then(|store| super::write::link(store, item));
            Some((entity.model().token.to_string(), id, record, delete))
        })
        .collect();
    let columns = page::columns(records.iter().map(|r| &r.2));
    let deletable = writable.is_some();
    let tagged = matches!(pick, Some(Pick::Collection(..)));
    html! {
        section.card id="results" data-page=(number) {
            h2 { "Page " (number) ": " (ran.page.items.len()) " records" }
            dl.stats {
                dt { "shards" } dd id="stat-shards" { (stats.shards) }
                dt { "shard queries" } dd id="stat-shard-queries" { (stats.shard_queries) }
                dt { "items read" } dd id="stat-items-read" { (stats.items_read) }
                dt { "items returned" } dd id="stat-items-returned" { (stats.items_returned) }
                dt { "read per returned" } dd id="stat-read-per-item" { (per_item) }
                dt { "consumed capacity" } dd id="stat-capacity" { (stats.consumed_capacity) }
                dt { "rounds" } dd id="stat-rounds" { (ran.rounds) }
                dt { "duplicates removed" } dd id="stat-duplicates" { (stats.duplicates_removed) }
            }
            p {
                @if let Some((previous, before)) = trail.split_last() {
                    @let previous = if *previous == "-" { "" } else { *previous };
                    (page_form(form, "previous", "← previous page", previous, &before.join(" ")))
                    " "
                }
                @if let Some(next) = &ran.page.next {
                    (page_form(form, "next", "next page →", next, &after))
                } @else {
                    span.muted id="end" { "last page" }
                }
            }
            table id="records" {
                tr {
                    @if tagged { th { "entity" } }
                    @for c in &columns { th { (c) } }
                    @if deletable { th {} }
                }
                @for (entity, id, record, delete) in &records {
                    tr data-id=(id) data-entity=(entity) {
                        @if tagged { td { span.tag { (entity) } } }
                        @for c in &columns { td { (record.get(c).map(page::cell).unwrap_or_default()) } }
                        @if let Some(delete) = delete { td { a.delete href=(delete) { "delete…" } } }
                    }
                }
            }
            h3 { "Items read per shard" }
            p.small { "Each bar: the items the shard queries of this page read from one partition (hash key value)." }
            (svg::bars("shard-reads", &ran.shards, "items"))
        }
    }
}

#[cfg(test)]
mod tests {
    use entity_manager::Schema;
    use entity_manager::model::Profile;
    use serde_json::json;

    use super::{Form, conditions, fills, range_of};
    use crate::console::Params;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn schema() -> Result<Schema, entity_manager::ConfigError> {
        let config = json!({
            "entities": { "user": { "uniqueProperty": "userId", "timestampProperty": "created" } },
            "generatedProperties": { "sharded": { "userHashKey": ["userId"] }, "unsharded": {} },
            "hashKey": "hashKey",
            "rangeKey": "rangeKey",
            "indexes": {
                "created": { "hashKey": "hashKey", "rangeKey": "created" },
                "userCreated": { "hashKey": "userHashKey", "rangeKey": "created" },
            },
            "propertyTranscodes": { "created": "timestamp", "userId": "string" },
        });
        Schema::from_ts_config(&config, Profile::Npm6_14)
    }

    fn form(fields: &[(&str, &str)]) -> Form {
        Form(Params(
            fields
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        ))
    }

    /// Entities declaring a multi-attribute index of the same name and key form a collection
    /// on it, and one collection of the same members groups their shared indexes.
    #[test]
    fn collections_are_the_entities_sharing_a_multi_attribute_index() -> TestResult {
        use entity_manager::model::{
            EntityModel, Index, IndexAttribute, Projection, Property, TableModel,
        };
        use entity_manager::store::KeyType;
        use entity_manager::transcode;

        const TEAM: &[IndexAttribute] = &[IndexAttribute::new("team", KeyType::S)];
        const ORG: &[IndexAttribute] = &[IndexAttribute::new("org", KeyType::S)];
        const SCORE: &[IndexAttribute] = &[IndexAttribute::new("score", KeyType::N)];
        const SHARED: &[Index] = &[
            Index::multi("byTeam", TEAM, SCORE, false, Projection::All),
            Index::multi("byOrg", ORG, SCORE, false, Projection::All),
        ];
        // (one index name is one GSI: the schema refuses it under another key)
        const TEAM_ONLY: &[Index] = &[Index::multi("byTeam", TEAM, SCORE, false, Projection::All)];
        const PROPS: &[Property] = &[
            Property::new("id", transcode::STRING),
            Property::new("created", transcode::TIMESTAMP),
        ];
        let entity = |token, indexes| {
            EntityModel::new(token, "id", "created")
                .with_properties(PROPS)
                .with_indexes(indexes)
        };
        let schema = entity_manager::Schema::new(
            TableModel::DEFAULT,
            vec![
                entity("player", SHARED),
                entity("coach", SHARED),
                entity("fan", TEAM_ONLY),
                entity("user", &[]),
            ],
        )?;
        let found = super::collections(&schema);
        let shown: Vec<(&str, Vec<&str>)> = found
            .iter()
            .map(|c| {
                (
                    c.label.as_str(),
                    c.indexes.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("player+coach+fan", vec!["byTeam"]),
                ("player+coach", vec!["byOrg"])
            ]
        );
        let Some(super::Pick::Collection(c, members)) = super::Pick::of(&schema, "player+coach")
        else {
            return Err("player+coach is a collection".into());
        };
        assert_eq!((c.members.len(), members.len()), (2, 2));
        assert!(matches!(
            super::Pick::of(&schema, "user"),
            Some(super::Pick::Entity(_))
        ));
        assert!(super::Pick::of(&schema, "player+user").is_none());
        Ok(())
    }

    #[test]
    fn the_form_s_fields_follow_the_index() -> TestResult {
        let schema = schema()?;
        let user = schema.entity("user")?;
        assert!(fills(&user, "created").is_empty());
        let names: Vec<(String, bool)> = fills(&user, "userCreated")
            .into_iter()
            .map(|f| (f.name, f.number))
            .collect();
        assert_eq!(names, [("userId".to_owned(), false)]);
        assert_eq!(
            range_of(&user, "created"),
            Some(("created".to_owned(), true))
        );
        Ok(())
    }

    #[test]
    fn the_form_becomes_the_query_command_s_conditions() -> TestResult {
        let schema = schema()?;
        let user = schema.entity("user")?;
        let c = conditions(
            &form(&[
                ("index", "userCreated"),
                ("w.userId", " u1 "),
                ("op", "between"),
                ("v1", "1"),
                ("v2", "9"),
                ("filter", "phone exists"),
                ("limit", "7"),
                ("throttle", "1"),
                ("desc", "on"),
            ]),
            &user,
        )
        .map_err(|f| f.message())?;
        assert_eq!(c.indexes, ["userCreated"]);
        assert_eq!(c.wheres, ["userId=u1"]);
        assert_eq!(c.range.as_deref(), Some("between 1 and 9"));
        assert_eq!(c.filter, ["phone exists"]);
        assert_eq!(
            (c.limit, c.throttle, c.descending),
            (Some(7), Some(1), true)
        );
        let c = conditions(
            &form(&[("index", "created"), ("op", ">="), ("v1", "5")]),
            &user,
        )
        .map_err(|f| f.message())?;
        assert_eq!(c.range.as_deref(), Some(">= 5"));
        assert!(c.wheres.is_empty() && c.filter.is_empty() && c.limit.is_none());
        Ok(())
    }

    #[test]
    fn incomplete_or_malformed_fields_are_refused() -> TestResult {
        let schema = schema()?;
        let user = schema.entity("user")?;
        for (fields, said) in [
            (vec![("op", "between"), ("v1", "1")], "two values"),
            (vec![("op", "<")], "needs a value"),
            (vec![("op", "~")], "unknown range operator"),
            (vec![("limit", "0")], "from 1 to 1000"),
            (vec![("limit", "x")], "from 1 to 1000"),
            (vec![("throttle", "1001")], "from 1 to 1000"),
        ] {
            let mut fields = fields;
            fields.push(("index", "created"));
            let refused = conditions(&form(&fields), &user)
                .err()
                .map(|f| f.message())
                .unwrap_or_default();
            assert!(refused.contains(said), "{fields:?}: {refused}");
        }
        Ok(())
    }
}
