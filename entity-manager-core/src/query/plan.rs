//! A validated query: its indexes, its shards (hash-key space), its mode and its fingerprint.

use sha2::{Digest, Sha256};

use serde_dynamo::{AttributeValue, Item};

use super::lanes::{Key, Lanes};
use super::token::Boundary;
use crate::error::{Error, Result};
use crate::key_type::KeyType;
use crate::model::KeySource;
use crate::schema::EntitySchema;
use crate::store::value::Scalar;
use crate::store::{Filter, QueryPage, RangeCondition, StoreError};

/// One index of a query, as the caller set it up.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct IndexSpec {
    /// The GSI; `None` for the table itself.
    pub(crate) name: Option<String>,
    pub(crate) range: Option<RangeCondition>,
    pub(crate) filter: Option<Filter>,
    /// The attribute a typed range condition was written for (checked against the range key).
    pub(crate) range_on: Option<String>,
    /// Why a typed condition of this index could not be built (the query refuses every page).
    pub(crate) problem: Option<String>,
}

impl IndexSpec {
    pub(crate) fn new(name: Option<String>) -> Self {
        Self {
            name,
            range: None,
            filter: None,
            range_on: None,
            problem: None,
        }
    }

    /// Adds a filter: every filter given must hold (the first alone, then `And` of them all).
    pub(crate) fn and_filter(&mut self, filter: Filter) {
        self.filter = Some(match self.filter.take() {
            None => filter,
            Some(Filter::And(mut all)) => {
                all.push(filter);
                Filter::And(all)
            }
            Some(first) => Filter::And(vec![first, filter]),
        });
    }
}

/// One index of a validated query.
#[derive(Clone, Debug)]
pub(crate) struct PlanIndex {
    /// The GSI; `None` for the table itself.
    pub(crate) name: Option<String>,
    /// The index's range key attribute.
    pub(crate) range_attr: String,
    /// Its key type, when the entity says it (table keys and generated properties are strings,
    /// a property is its transcode's type): a token's boundary must be a value of it.
    pub(crate) range_type: Option<KeyType>,
    pub(crate) range: Option<RangeCondition>,
    pub(crate) filter: Option<Filter>,
}

/// What a query fans out over and how it orders.
#[derive(Clone, Debug)]
pub(crate) struct Plan<'a> {
    pub(crate) schema: EntitySchema<'a>,
    /// The hash key attribute every index shares.
    pub(crate) hash_attr: String,
    pub(crate) indexes: Vec<PlanIndex>,
    /// The index hash key value of each shard.
    pub(crate) hash_keys: Vec<String>,
    /// The table hash key value of each shard (the same shard seen from the table).
    pub(crate) table_hash_keys: Vec<String>,
    pub(crate) window: (u64, u64),
    /// One merged stream in range-key order (every index has the same range key), or a union.
    pub(crate) exact: bool,
    pub(crate) descending: bool,
    pub(crate) projection: Option<Vec<String>>,
    /// Records created in this window only.
    pub(crate) created: Option<(u64, u64)>,
    pub(crate) fingerprint: [u8; 32],
}

/// What the caller set up, besides the window.
#[derive(Debug)]
pub(crate) struct PlanInput<'q> {
    pub(crate) specs: &'q [IndexSpec],
    pub(crate) item: &'q Item,
    pub(crate) descending: bool,
    pub(crate) projection: Option<&'q [String]>,
    pub(crate) sort: &'q [(String, bool)],
    pub(crate) created: Option<(u64, u64)>,
    /// A sharded hash key given by its typed key builder: the property and what follows the
    /// table hash key in its values.
    pub(crate) hash_suffix: Option<&'q (String, String)>,
}

/// How an index (or the table) is named in messages.
pub(crate) fn source_name(name: Option<&str>) -> String {
    name.map_or_else(|| "the table".to_owned(), |n| format!("index `{n}`"))
}

fn invalid(schema: &EntitySchema<'_>, reason: impl Into<String>) -> Error {
    Error::InvalidQuery {
        entity: schema.model().token.to_string(),
        reason: reason.into(),
    }
}

/// Everything that identifies a query across its pages: a token made for one fingerprint is
/// rejected by any other.
#[derive(Debug)]
pub(crate) struct FingerprintInput<'q> {
    pub(crate) item: &'q Item,
    pub(crate) sort: &'q [(String, bool)],
    pub(crate) created: Option<(u64, u64)>,
    pub(crate) hash_suffix: Option<&'q (String, String)>,
}

impl<'a> Plan<'a> {
    pub(crate) fn new(
        schema: EntitySchema<'a>,
        input: &PlanInput<'_>,
        window: (u64, u64),
    ) -> Result<Self> {
        let PlanInput {
            specs,
            item,
            descending,
            projection,
            sort,
            created,
            hash_suffix,
        } = *input;
        let (indexes, hash_attr) = Self::sources(&schema, specs, created)?;
        let table = schema.table();
        if window.0 > window.1 {
            return Err(invalid(
                &schema,
                format!("the time window {}..={} is reversed", window.0, window.1),
            ));
        }
        let table_hash_keys = schema.hash_key_space(&table.hash_key, item, window.0, window.1)?;
        let hash_keys = match hash_suffix {
            // a hash key of another attribute than the indexes' is refused, not passed over
            // (the query would read every record of the table's partitions instead)
            Some((property, _)) if *property != hash_attr => {
                let fix = if hash_attr == table.hash_key {
                    format!(
                        "these indexes are keyed by the table's `{hash_attr}`, which needs no hash key: drop `.hash_key(…)`, or query an index keyed by `{property}`"
                    )
                } else {
                    format!("build a `{hash_attr}` value")
                };
                return Err(invalid(
                    &schema,
                    format!(
                        "the hash key given is a value of `{property}`, but the query's hash key is `{hash_attr}`; {fix}"
                    ),
                ));
            }
            _ if hash_attr == table.hash_key => table_hash_keys.clone(),
            Some((_, suffix)) => table_hash_keys
                .iter()
                .map(|hash_key| format!("{hash_key}{suffix}"))
                .collect(),
            None => schema
                .hash_key_space(&hash_attr, item, window.0, window.1)
                .map_err(|e| match e {
                    // the query's partition was not given: say how to give it
                    Error::MissingComponent {
                        property,
                        component,
                        ..
                    } => invalid(
                        &schema,
                        format!(
                            "the indexes are keyed by `{property}`, whose partitions are named by `{component}`: give one with `.hash_key(…)` and the entity's key builder of `{property}` (its `{component}` set), or set `{component}` in the query's item"
                        ),
                    ),
                    other => other,
                })?,
        };
        let exact = indexes
            .iter()
            .all(|i| i.range_attr == indexes[0].range_attr);
        let projection = projection.map(|attrs| {
            Self::projected(
                &schema,
                attrs,
                &hash_attr,
                &indexes,
                sort,
                created.is_some(),
            )
        });
        let fingerprint = fingerprint(
            &schema,
            &hash_attr,
            &indexes,
            descending,
            exact,
            projection.as_deref(),
            &FingerprintInput {
                item,
                sort,
                created,
                hash_suffix,
            },
        );
        Ok(Self {
            schema,
            hash_attr,
            indexes,
            hash_keys,
            table_hash_keys,
            window,
            exact,
            descending,
            projection,
            created,
            fingerprint,
        })
    }

    /// The validated sources of a query and the hash key attribute they share.
    fn sources(
        schema: &EntitySchema<'_>,
        specs: &[IndexSpec],
        created: Option<(u64, u64)>,
    ) -> Result<(Vec<PlanIndex>, String)> {
        if specs.is_empty() {
            return Err(invalid(
                schema,
                "a query needs at least one index, or the table",
            ));
        }
        let table = schema.table();
        let model = schema.model();
        let mut indexes: Vec<PlanIndex> = Vec::with_capacity(specs.len());
        let mut hash_attr: Option<String> = None;
        for spec in specs {
            let (hash_key, range_key) = match &spec.name {
                Some(name) => {
                    let index = schema.index(name)?;
                    if index.multi.is_some() {
                        return Err(invalid(
                            schema,
                            format!(
                                "index `{name}` has a multi-attribute key; query it with `MultiQuery` (or a `Collection`)"
                            ),
                        ));
                    }
                    (index.hash_key.to_string(), index.range_key.to_string())
                }
                None => (table.hash_key.to_string(), table.range_key.to_string()),
            };
            if let Some(problem) = &spec.problem {
                return Err(invalid(
                    schema,
                    format!("{}: {problem}", source_name(spec.name.as_deref())),
                ));
            }
            if let Some(on) = &spec.range_on
                && *on != range_key
            {
                return Err(invalid(
                    schema,
                    format!(
                        "the range condition of {} is on `{on}`, but its range key is `{range_key}`; write the condition on `{range_key}`",
                        source_name(spec.name.as_deref())
                    ),
                ));
            }
            if indexes.iter().any(|i| i.name == spec.name) {
                return Err(invalid(
                    schema,
                    format!("{} is listed twice", source_name(spec.name.as_deref())),
                ));
            }
            match &hash_attr {
                None => hash_attr = Some(hash_key),
                Some(h) if *h == hash_key => {}
                Some(h) => {
                    return Err(invalid(
                        schema,
                        format!(
                            "the indexes of one query must share a hash key: {} has `{hash_key}`, another has `{h}`",
                            source_name(spec.name.as_deref())
                        ),
                    ));
                }
            }
            let mut range = spec.range.clone();
            // records created in the window: a key condition when the range key is the
            // timestamp (each item read is checked as well)
            if let Some((from, to)) = created
                && range.is_none()
                && range_key == *model.timestamp_property
            {
                range = Some(RangeCondition::Between(
                    AttributeValue::N(from.to_string()),
                    AttributeValue::N(to.to_string()),
                ));
            }
            let range_type = model
                .key_source(table, &range_key)
                .and_then(KeySource::key_type);
            indexes.push(PlanIndex {
                name: spec.name.clone(),
                range_attr: range_key,
                range_type,
                range,
                filter: spec.filter.clone(),
            });
        }
        Ok((indexes, hash_attr.unwrap_or_default()))
    }

    /// The attributes a projection reads: those asked (but the unique value, never asked of an
    /// index: the table range key holds it, and `KEYS_ONLY` or `INCLUDE` indexes may not
    /// project it, see `restore_unique`) and those the query needs.
    fn projected(
        schema: &EntitySchema<'_>,
        attrs: &[String],
        hash_attr: &str,
        indexes: &[PlanIndex],
        sort: &[(String, bool)],
        created: bool,
    ) -> Vec<String> {
        let table = schema.table();
        let model = schema.model();
        let unique = &*model.unique_property;
        let mut all: Vec<String> = attrs.iter().filter(|a| *a != unique).cloned().collect();
        let mut needed: Vec<&str> = vec![&table.hash_key, &table.range_key, hash_attr];
        needed.extend(indexes.iter().map(|i| i.range_attr.as_str()));
        needed.extend(sort.iter().map(|(a, _)| a.as_str()));
        if created {
            needed.push(&model.timestamp_property);
        }
        for attr in needed {
            if attr != unique && !all.iter().any(|a| a == attr) {
                all.push(attr.to_owned());
            }
        }
        all
    }

    /// Puts back the unique property of an item, from the table range key (`<unique
    /// property><delimiter><encoded value>`), when the index did not give it (a `KEYS_ONLY` or
    /// `INCLUDE` index, a projection).
    pub(crate) fn restore_unique(&self, item: &mut Item) {
        let model = self.schema.model();
        if item.contains_key(&*model.unique_property) {
            return;
        }
        let Some(encoded) = self.unique_of(item) else {
            return;
        };
        if let Some(value) = model
            .property(&model.unique_property)
            .and_then(|p| p.transcode.decode(&encoded).ok())
        {
            item.insert(model.unique_property.to_string(), value);
        }
    }

    /// Whether an item read lies in the `created` window (always, without one). An item whose
    /// timestamp is missing or not a number is outside.
    pub(crate) fn in_created(&self, item: &Item) -> bool {
        let Some((from, to)) = self.created else {
            return true;
        };
        match item.get(&*self.schema.model().timestamp_property) {
            Some(AttributeValue::N(n)) => n.parse::<u64>().is_ok_and(|t| (from..=to).contains(&t)),
            _ => false,
        }
    }

    /// The number of (index, shard) pairs.
    pub(crate) fn lanes(&self) -> usize {
        self.indexes.len() * self.hash_keys.len()
    }

    /// The page key (`ExclusiveStartKey`) that resumes shard `shard` of index `index` after the
    /// item with this table range key and index range key.
    pub(crate) fn resume_key(
        &self,
        index: usize,
        shard: usize,
        table_range: String,
        range_key: &AttributeValue,
    ) -> Item {
        let table = self.schema.table();
        // its four keys, sized once (not grown and rehashed twice)
        let mut key = Item::default();
        key.reserve(4);
        key.insert(
            table.hash_key.to_string(),
            AttributeValue::S(self.table_hash_keys[shard].clone()),
        );
        key.insert(table.range_key.to_string(), AttributeValue::S(table_range));
        key.insert(
            self.hash_attr.clone(),
            AttributeValue::S(self.hash_keys[shard].clone()),
        );
        key.insert(self.indexes[index].range_attr.clone(), range_key.clone());
        key
    }

    /// What names a record among the entity's items, in a boundary and across the indexes of
    /// a query: its table range key as [`shorten_range`] keeps it (the unique value, for a key
    /// of the entity's form); `None` for an item without a string range key.
    pub(crate) fn record_of(&self, item: &Item) -> Option<String> {
        self.table_range(item).map(|range_key| {
            shorten_range(
                range_key,
                &self.schema.model().unique_property,
                &self.schema.table().delimiters.generated_value,
            )
        })
    }

    /// An item's table range key, when it is a string.
    fn table_range<'i>(&self, item: &'i Item) -> Option<&'i str> {
        match item.get(&*self.schema.table().range_key) {
            Some(AttributeValue::S(range_key)) => Some(range_key),
            _ => None,
        }
    }

    /// The table range key of what [`record_of`](Self::record_of) kept.
    fn table_range_of(&self, record: &str) -> String {
        expand_range(
            record,
            &self.schema.model().unique_property,
            &self.schema.table().delimiters.generated_value,
        )
    }

    /// The unique value (encoded, as written in the range key) of an item or page key; `None`
    /// for a range key of another form.
    pub(crate) fn unique_of(&self, item: &Item) -> Option<String> {
        unique_in_range_key(
            self.table_range(item)?,
            &self.schema.model().unique_property,
            &self.schema.table().delimiters.generated_value,
        )
        .map(str::to_owned)
    }
}

/// The unique value (encoded) a table range key holds: what follows the unique property and
/// the generated-value delimiter; `None` for a key of another form.
pub(crate) fn unique_in_range_key<'k>(
    range_key: &'k str,
    property: &str,
    delimiter: &str,
) -> Option<&'k str> {
    range_key.strip_prefix(property)?.strip_prefix(delimiter)
}

/// The table range key of a unique value (encoded): the unique property, the generated-value
/// delimiter, the value.
pub(crate) fn range_key_of_unique(unique: &str, property: &str, delimiter: &str) -> String {
    let mut range = String::with_capacity(property.len() + delimiter.len() + unique.len());
    range.push_str(property);
    range.push_str(delimiter);
    range.push_str(unique);
    range
}

/// What begins a boundary's `unique` that is a whole table range key, not a unique value
/// ([`shorten_range`]).
pub(crate) const WHOLE_KEY: char = '\0';

/// A table range key as a boundary (and a classic query's identity of a record) keeps it: the
/// unique value when the key has the entity's form (`property`, `delimiter`, value), else
/// [`WHOLE_KEY`] and the whole key, so is a unique value that begins with [`WHOLE_KEY`]: the
/// two forms never mix up, and an item written by hand in another form is a record like any
/// other (before, it had no identity: a page that ended on it repeated forever).
pub(crate) fn shorten_range(range: &str, property: &str, delimiter: &str) -> String {
    match unique_in_range_key(range, property, delimiter) {
        Some(unique) if !unique.starts_with(WHOLE_KEY) => unique.to_owned(),
        _ => {
            let mut whole = String::with_capacity(range.len() + 1);
            whole.push(WHOLE_KEY);
            whole.push_str(range);
            whole
        }
    }
}

/// The table range key [`shorten_range`] kept.
pub(crate) fn expand_range(unique: &str, property: &str, delimiter: &str) -> String {
    match unique.strip_prefix(WHOLE_KEY) {
        Some(whole) => whole.to_owned(),
        None => range_key_of_unique(unique, property, delimiter),
    }
}

/// What makes an entity's keys, as a query's fingerprint names it: the entity token, the table
/// keys, the delimiters, the shard space and the unique property.
pub(crate) fn key_layout<'s>(schema: &'s EntitySchema<'_>) -> [&'s str; 8] {
    let (table, model) = (schema.table(), schema.model());
    [
        &model.token,
        &table.hash_key,
        &table.range_key,
        &table.delimiters.generated_key,
        &table.delimiters.generated_value,
        &table.delimiters.shard_key,
        table.shard_space.as_str(),
        &model.unique_property,
    ]
}

/// A fingerprint: SHA-256 over fields, each prefixed with its length.
#[derive(Default)]
pub(crate) struct Fields(Sha256);

impl Fields {
    /// Adds one field.
    pub(crate) fn field(&mut self, bytes: &[u8]) {
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
    }

    pub(crate) fn finish(self) -> [u8; 32] {
        self.0.finalize().into()
    }
}

/// A fingerprint's canonical bytes: every part tagged or length-prefixed, so that two
/// different descriptions never give the same bytes. Written by hand rather than as `Debug`
/// text: a query renders its fingerprint on every page, and `Debug` (escaping every character
/// of every string) cost more than the rest of the plan.
#[derive(Default)]
pub(crate) struct Canon(Vec<u8>);

impl Canon {
    /// The bytes written since the last [`clear`](Self::clear).
    pub(crate) fn written(&self) -> &[u8] {
        &self.0
    }

    /// Empties the buffer for the next field.
    pub(crate) fn clear(&mut self) -> &mut Self {
        self.0.clear();
        self
    }

    pub(crate) fn tag(&mut self, tag: u8) -> &mut Self {
        self.0.push(tag);
        self
    }

    pub(crate) fn number(&mut self, n: u64) -> &mut Self {
        self.0.extend_from_slice(&n.to_le_bytes());
        self
    }

    pub(crate) fn bytes(&mut self, bytes: &[u8]) -> &mut Self {
        self.number(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
        self
    }

    pub(crate) fn text(&mut self, text: &str) -> &mut Self {
        self.bytes(text.as_bytes())
    }

    pub(crate) fn optional_text(&mut self, text: Option<&str>) -> &mut Self {
        match text {
            None => self.tag(0),
            Some(text) => self.tag(1).text(text),
        }
    }

    /// A value: a key value (string, number, binary) by its type and bytes, any other by its
    /// `Debug` text (only filters carry those, and they are rare).
    pub(crate) fn value(&mut self, value: &AttributeValue) -> &mut Self {
        match value {
            AttributeValue::S(s) => self.tag(b'S').text(s),
            AttributeValue::N(n) => self.tag(b'N').text(n),
            AttributeValue::B(b) => self.tag(b'B').bytes(b),
            other => self.tag(b'?').text(&format!("{other:?}")),
        }
    }

    pub(crate) fn values(&mut self, values: &[AttributeValue]) -> &mut Self {
        self.number(values.len() as u64);
        for value in values {
            self.value(value);
        }
        self
    }

    pub(crate) fn optional_value(&mut self, value: Option<&AttributeValue>) -> &mut Self {
        match value {
            None => self.tag(0),
            Some(value) => self.tag(1).value(value),
        }
    }

    /// A key condition, or none.
    pub(crate) fn range(&mut self, range: Option<&RangeCondition>) -> &mut Self {
        match range {
            None => self.tag(0),
            Some(RangeCondition::Eq(v)) => self.tag(1).value(v),
            Some(RangeCondition::Lt(v)) => self.tag(2).value(v),
            Some(RangeCondition::Le(v)) => self.tag(3).value(v),
            Some(RangeCondition::Gt(v)) => self.tag(4).value(v),
            Some(RangeCondition::Ge(v)) => self.tag(5).value(v),
            Some(RangeCondition::Between(a, b)) => self.tag(6).value(a).value(b),
            Some(RangeCondition::BeginsWith(v)) => self.tag(7).value(v),
        }
    }

    /// A shard bump: its timestamp, bits per character and characters.
    pub(crate) fn bump(&mut self, bump: &crate::model::ShardBump) -> &mut Self {
        self.number(bump.timestamp)
            .number(u64::from(bump.char_bits))
            .number(u64::from(bump.chars))
    }
}

/// SHA-256 over a canonical description of the query (not its window, limit, page size or
/// throttle, which may change between pages or are checked on their own).
fn fingerprint(
    schema: &EntitySchema<'_>,
    hash_attr: &str,
    indexes: &[PlanIndex],
    descending: bool,
    exact: bool,
    projection: Option<&[String]>,
    input: &FingerprintInput<'_>,
) -> [u8; 32] {
    let mut fields = Fields::default();
    let mut field = |bytes: &[u8]| fields.field(bytes);
    let mut c = Canon::default();
    field(b"entity-manager query v3");
    let model = schema.model();
    for text in key_layout(schema).into_iter().chain([hash_attr]) {
        field(text.as_bytes());
    }
    for bump in model.shard_bumps.iter() {
        field(c.clear().bump(bump).written());
    }
    field(&[u8::from(descending), u8::from(exact)]);
    for index in indexes {
        c.clear()
            .optional_text(index.name.as_deref())
            .text(&index.range_attr)
            .range(index.range.as_ref());
        match &index.filter {
            None => c.tag(0),
            // a filter's `Debug` rendering is canonical within one build; tokens are versioned,
            // not promised across releases
            Some(filter) => c.tag(1).text(&format!("{filter:?}")),
        };
        field(c.written());
    }
    c.clear();
    match projection {
        None => c.tag(0),
        Some(attrs) => {
            c.tag(1).number(attrs.len() as u64);
            for attr in attrs {
                c.text(attr);
            }
            &mut c
        }
    };
    c.number(input.sort.len() as u64);
    for (attr, descending) in input.sort {
        c.text(attr).tag(u8::from(*descending));
    }
    match input.created {
        None => c.tag(0),
        Some((from, to)) => c.tag(1).number(from).number(to),
    };
    match input.hash_suffix {
        None => c.tag(0),
        Some((property, suffix)) => c.tag(1).text(property).text(suffix),
    };
    field(c.written());
    // the item's values that shape the hash-key space: the unique value and the components of a
    // sharded hash key
    let mut shaping: Vec<&str> = vec![&model.unique_property];
    if let Some(generated) = model.generated_property(hash_attr) {
        shaping.extend(generated.components.iter().map(|c| &**c));
    }
    for attr in shaping {
        field(
            c.clear()
                .text(attr)
                .optional_value(input.item.get(attr))
                .written(),
        );
    }
    fields.finish()
}

impl Lanes for Plan<'_> {
    fn descending(&self) -> bool {
        self.descending
    }

    fn shards(&self) -> usize {
        self.hash_keys.len()
    }

    fn table_hash_key(&self, shard: usize) -> &str {
        self.table_hash_keys.get(shard).map_or("", String::as_str)
    }

    fn key(&self, source: usize, item: &Item) -> Option<Key> {
        Scalar::any(self.value(source, item)?).map(Key::One)
    }

    fn value<'i>(&self, source: usize, item: &'i Item) -> Option<&'i AttributeValue> {
        item.get(&self.indexes.get(source)?.range_attr)
    }

    fn key_through(&self, value: &AttributeValue) -> Option<Key> {
        Scalar::any(value).map(Key::One)
    }

    fn condition(&self, source: usize) -> Option<&RangeCondition> {
        self.indexes.get(source)?.range.as_ref()
    }

    fn admits(&self, _shard: usize, item: &Item) -> bool {
        self.in_created(item)
    }

    fn request(&self, source: usize, shard: usize) -> QueryPage {
        let hash_key = self.hash_keys.get(shard).cloned().unwrap_or_default();
        let mut request = QueryPage::new(AttributeValue::S(hash_key)).descending(self.descending);
        if let Some(index) = self.indexes.get(source) {
            if let Some(name) = &index.name {
                request = request.index(name.clone());
            }
            if let Some(filter) = &index.filter {
                request = request.filter(filter.clone());
            }
        }
        if let Some(projection) = &self.projection {
            request = request.projection(projection.iter().cloned());
        }
        request
    }

    fn request_within(
        &self,
        _source: usize,
        _shard: usize,
        _key: &Key,
        _inclusive: bool,
    ) -> Option<(QueryPage, Key)> {
        // one range-key value: every key is a whole value
        None
    }

    fn unique_keys(&self, source: usize) -> bool {
        let table = self.schema.table();
        self.indexes
            .get(source)
            .is_some_and(|index| index.range_attr == *table.range_key)
            && self.hash_attr == *table.hash_key
    }

    fn page_key(&self, source: usize, shard: usize, item: &Item) -> Option<Item> {
        let table_range = self.table_range(item)?;
        let range_key = self
            .value(source, item)
            .cloned()
            .unwrap_or(AttributeValue::Null(true));
        Some(self.resume_key(source, shard, table_range.to_owned(), &range_key))
    }

    fn resume_key(&self, source: usize, shard: usize, boundary: &Boundary) -> Option<Item> {
        Some(Plan::resume_key(
            self,
            source,
            shard,
            self.table_range_of(&boundary.unique),
            &boundary.last,
        ))
    }

    fn identity(&self, item: &Item) -> Option<String> {
        self.record_of(item)
    }

    fn boundary_last(&self, source: usize, item: &Item) -> Option<AttributeValue> {
        self.value(source, item).cloned()
    }

    fn boundary_key(&self, source: usize, boundary: &Boundary) -> Option<Key> {
        match self.indexes.get(source)?.range_type {
            Some(key_type) => Scalar::of(&boundary.last, key_type).map(Key::One),
            None => self.key_through(&boundary.last),
        }
    }

    fn boundary_value(&self, boundary: &Boundary) -> Option<AttributeValue> {
        Some(boundary.last.clone())
    }

    fn shard_error(&self, source: usize, shard: usize, error: StoreError) -> Error {
        Error::ShardQuery {
            entity: self.schema.model().token.to_string(),
            index: self
                .indexes
                .get(source)
                .and_then(|index| index.name.clone())
                .unwrap_or_else(|| "(the table)".to_owned()),
            hash_key: self.hash_keys.get(shard).cloned().unwrap_or_default(),
            source: Box::new(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_dynamo::AttributeValue;

    use super::Canon;
    use crate::store::RangeCondition;

    fn value() -> impl Strategy<Value = AttributeValue> {
        prop_oneof![
            ".{0,6}".prop_map(AttributeValue::S),
            "-?[0-9]{1,4}".prop_map(AttributeValue::N),
            proptest::collection::vec(any::<u8>(), 0..5).prop_map(AttributeValue::B),
            any::<bool>().prop_map(AttributeValue::Bool),
        ]
    }

    fn range() -> impl Strategy<Value = Option<RangeCondition>> {
        proptest::option::of(prop_oneof![
            value().prop_map(RangeCondition::Eq),
            value().prop_map(RangeCondition::Lt),
            value().prop_map(RangeCondition::Le),
            value().prop_map(RangeCondition::Gt),
            value().prop_map(RangeCondition::Ge),
            (value(), value()).prop_map(|(a, b)| RangeCondition::Between(a, b)),
            value().prop_map(RangeCondition::BeginsWith),
        ])
    }

    /// What a fingerprint hashes of a query's parts.
    fn canon(
        (name, range, values, text): &(
            Option<String>,
            Option<RangeCondition>,
            Vec<AttributeValue>,
            String,
        ),
    ) -> Vec<u8> {
        let mut c = Canon::default();
        c.optional_text(name.as_deref())
            .range(range.as_ref())
            .values(values)
            .text(text);
        c.written().to_vec()
    }

    /// Parts whose bytes run together would collide without their lengths: the tag of the
    /// second value read as the end of the first.
    #[test]
    fn adjacent_values_keep_their_bounds() {
        let s = |v: &str| AttributeValue::S(v.into());
        let one = (
            None,
            Some(RangeCondition::Between(s("aS"), s("b"))),
            vec![],
            String::new(),
        );
        let two = (
            None,
            Some(RangeCondition::Between(s("a"), s("Sb"))),
            vec![],
            String::new(),
        );
        assert_ne!(canon(&one), canon(&two));
        let one = (Some("x".into()), None, vec![s("")], "y".to_owned());
        let two = (Some(String::new()), None, vec![s("x")], "y".to_owned());
        assert_ne!(canon(&one), canon(&two));
    }

    proptest! {
        /// The canonical bytes of a fingerprint are injective: two different descriptions
        /// (names, key conditions, values, text, in sequence) never give the same bytes, so
        /// two different queries never share a fingerprint (short of a SHA-256 collision).
        #[test]
        fn canonical_bytes_tell_descriptions_apart(
            a in (proptest::option::of(".{0,4}"), range(), proptest::collection::vec(value(), 0..3), ".{0,4}"),
            b in (proptest::option::of(".{0,4}"), range(), proptest::collection::vec(value(), 0..3), ".{0,4}"),
        ) {
            prop_assert_eq!(canon(&a) == canon(&b), a == b);
        }

        /// Descriptions that differ in one place only (the likeliest to collide) differ.
        #[test]
        fn a_value_moved_between_parts_is_another_description(
            text in ".{0,4}",
            value in value(),
        ) {
            let joined = (None, Some(RangeCondition::Eq(value.clone())), vec![], text.clone());
            let apart = (None, None, vec![value], text);
            prop_assert_ne!(canon(&joined), canon(&apart));
        }
    }
}
