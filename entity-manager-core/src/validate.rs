//! The configuration rules, shared by static models and run-time configs.
//!
//! [`validate`] normalises every entity's shard schedule and checks every rule, collecting all
//! problems instead of stopping at the first. Each rule is one `check_*` function headed by a
//! comment that states it.
//!
//! Problems are located by dotted paths in the shape of the configuration:
//! - table settings: `hashKey`, `rangeKey`, `generatedKeyDelimiter`, `throttle`, …;
//! - entity settings: `entities.<token>.uniqueProperty`, `entities.<token>.shardBumps.2.chars`, …;
//! - the lists of a static entity ([`Layout::PerEntity`]): `entities.<token>.properties.<name>`,
//!   `entities.<token>.generated.<name>.components.<i>`,
//!   `entities.<token>.indexes.<name>.rangeKey`, `….projections.<i>`;
//! - the global lists of a TypeScript config ([`Layout::Global`]), checked once:
//!   `propertyTranscodes.<name>`, `generatedProperties.sharded.<name>.<i>`,
//!   `indexes.<name>.hashKey`, ….
//!
//! An empty name is written `""` in a path.

use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

use crate::error::{ConfigError, ConfigProblem};
use crate::model::{
    EntityModel, GeneratedKind, GeneratedProperty, Index, Projection, Property, ShardBump,
    TableModel,
};

/// The most global secondary indexes `DynamoDB` allows on one table.
const MAX_INDEXES: usize = 20;
/// The longest shard suffix.
const MAX_CHARS: u8 = 40;
/// The widest suffix character, in bits (radix 32).
const MAX_CHAR_BITS: u8 = 5;
/// The transcode a timestamp property must have: 13-digit milliseconds, the form TypeScript
/// writes (an `int` timestamp would key records as `created#p0001700000000000`).
const TIMESTAMP_TRANSCODES: [&str; 1] = ["timestamp"];

/// A rule of the configuration: what [`ConfigProblem::rule`](crate::ConfigProblem::rule) names,
/// so that a problem can be told apart without reading its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigRule {
    /// No delimiter is empty.
    DelimitersNotEmpty,
    /// Delimiters hold no word characters.
    DelimitersWithoutWordCharacters,
    /// No delimiter contains another.
    DelimitersDisjoint,
    /// The table key attribute names are not empty.
    TableKeysNotEmpty,
    /// The hash and range key attributes differ.
    TableKeysDistinct,
    /// The throttle is at least 1.
    ThrottlePositive,
    /// The entity token is not empty and holds no delimiter.
    EntityToken,
    /// Shard bump `charBits` is in 1..=5 and `chars` in 0..=40.
    BumpRanges,
    /// Shard bump timestamps are distinct.
    BumpTimestampsUnique,
    /// Shard bump `chars` strictly increase over time.
    BumpCharsIncrease,
    /// The unique property is a transcoded property.
    UniqueProperty,
    /// The timestamp property is a `timestamp`-transcoded property.
    TimestampProperty,
    /// Default limit and page size are at least 1.
    EntityDefaultsPositive,
    /// Property, generated property, index and projection names are not empty.
    NamesNotEmpty,
    /// Names written into keys hold no delimiter.
    NamesFreeOfDelimiters,
    /// No two roles share an attribute name (table keys, generated and ordinary properties).
    AttributeNamesDistinct,
    /// Generated property components are transcoded properties.
    ComponentsTranscoded,
    /// A generated property has at least one component.
    ComponentsNotEmpty,
    /// A generated property names each component once.
    ComponentsUnique,
    /// Index names are unique within an entity.
    IndexNamesUnique,
    /// An index hash key is the table hash key or a sharded generated property.
    IndexHashKeys,
    /// An index range key is the table range key, an unsharded generated property or a transcoded property.
    IndexRangeKeys,
    /// A scalar index range key has a transcode DynamoDB can key on.
    IndexRangeKeyTypes,
    /// No two indexes have the same hash and range key.
    IndexKeyPairsUnique,
    /// A projection names no key attribute.
    ProjectionsNotKeys,
    /// A projection names each attribute once.
    ProjectionsUnique,
    /// Entity tokens are unique in a table.
    EntityTokensUnique,
    /// One index name means one GSI: the same keys and projection in every entity.
    IndexDeclarationsAgree,
    /// A table has at most 20 GSIs.
    IndexCount,
}

impl ConfigRule {
    /// Every rule, in the order they are checked.
    pub const ALL: &'static [Self] = &[
        Self::DelimitersNotEmpty,
        Self::DelimitersWithoutWordCharacters,
        Self::DelimitersDisjoint,
        Self::TableKeysNotEmpty,
        Self::TableKeysDistinct,
        Self::ThrottlePositive,
        Self::EntityToken,
        Self::BumpRanges,
        Self::BumpTimestampsUnique,
        Self::BumpCharsIncrease,
        Self::UniqueProperty,
        Self::TimestampProperty,
        Self::EntityDefaultsPositive,
        Self::NamesNotEmpty,
        Self::NamesFreeOfDelimiters,
        Self::AttributeNamesDistinct,
        Self::ComponentsTranscoded,
        Self::ComponentsNotEmpty,
        Self::ComponentsUnique,
        Self::IndexNamesUnique,
        Self::IndexHashKeys,
        Self::IndexRangeKeys,
        Self::IndexRangeKeyTypes,
        Self::IndexKeyPairsUnique,
        Self::ProjectionsNotKeys,
        Self::ProjectionsUnique,
        Self::EntityTokensUnique,
        Self::IndexDeclarationsAgree,
        Self::IndexCount,
    ];

    /// A stable kebab-case identifier, e.g. `bump-chars-increase`.
    pub const fn id(self) -> &'static str {
        match self {
            Self::DelimitersNotEmpty => "delimiters-not-empty",
            Self::DelimitersWithoutWordCharacters => "delimiters-without-word-characters",
            Self::DelimitersDisjoint => "delimiters-disjoint",
            Self::TableKeysNotEmpty => "table-keys-not-empty",
            Self::TableKeysDistinct => "table-keys-distinct",
            Self::ThrottlePositive => "throttle-positive",
            Self::EntityToken => "entity-token",
            Self::BumpRanges => "bump-ranges",
            Self::BumpTimestampsUnique => "bump-timestamps-unique",
            Self::BumpCharsIncrease => "bump-chars-increase",
            Self::UniqueProperty => "unique-property",
            Self::TimestampProperty => "timestamp-property",
            Self::EntityDefaultsPositive => "entity-defaults-positive",
            Self::NamesNotEmpty => "names-not-empty",
            Self::NamesFreeOfDelimiters => "names-free-of-delimiters",
            Self::AttributeNamesDistinct => "attribute-names-distinct",
            Self::ComponentsTranscoded => "components-transcoded",
            Self::ComponentsNotEmpty => "components-not-empty",
            Self::ComponentsUnique => "components-unique",
            Self::IndexNamesUnique => "index-names-unique",
            Self::IndexHashKeys => "index-hash-keys",
            Self::IndexRangeKeys => "index-range-keys",
            Self::IndexRangeKeyTypes => "index-range-key-types",
            Self::IndexKeyPairsUnique => "index-key-pairs-unique",
            Self::ProjectionsNotKeys => "projections-not-keys",
            Self::ProjectionsUnique => "projections-unique",
            Self::EntityTokensUnique => "entity-tokens-unique",
            Self::IndexDeclarationsAgree => "index-declarations-agree",
            Self::IndexCount => "index-count",
        }
    }
}

impl std::fmt::Display for ConfigRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// Validates and normalises static models: the rules of [`Schema::new`](crate::Schema::new).
pub(crate) fn validate(
    table: &TableModel,
    entities: &mut [EntityModel],
) -> Result<(), ConfigError> {
    let problems = problems(table, entities, &Layout::PerEntity);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ConfigError { problems })
    }
}

/// Normalises every entity's shard bumps and returns every rule problem, in the order found:
/// table settings, global lists, each entity, then rules across entities.
pub(crate) fn problems(
    table: &TableModel,
    entities: &mut [EntityModel],
    layout: &Layout<'_>,
) -> Vec<ConfigProblem> {
    let mut problems = Problems::default();
    check_table(table, &mut problems);
    if let Layout::Global(globals) = layout {
        check_scope(table, &Scope::global(globals), &mut problems);
    }
    for (position, entity) in entities.iter_mut().enumerate() {
        let check_order = match layout {
            Layout::PerEntity => true,
            Layout::Global(globals) => !globals.unreadable_schedules.contains(&position),
        };
        check_entity(table, entity, check_order, &mut problems);
        if let Layout::PerEntity = layout {
            check_scope(table, &Scope::entity(entity), &mut problems);
        }
    }
    check_across_entities(entities, layout, &mut problems);
    problems.into_vec()
}

/// Where the lists the rules check live, which decides where their problems are reported.
#[derive(Debug)]
pub(crate) enum Layout<'a> {
    /// Every entity declares its own properties, generated properties and indexes (static
    /// models): they are checked per entity, at `entities.<token>.…`.
    PerEntity,
    /// A TypeScript config: the lists are global and every entity carries all of them, so they
    /// are checked once, at their root paths.
    Global(Globals<'a>),
}

/// The global lists of a TypeScript config.
#[derive(Debug)]
pub(crate) struct Globals<'a> {
    /// `propertyTranscodes`.
    pub(crate) properties: &'a [Property],
    /// `generatedProperties`, sharded ones first.
    pub(crate) generated: &'a [GeneratedProperty],
    /// `indexes`.
    pub(crate) indexes: &'a [Index],
    /// Positions of entities some of whose shard bump timestamps could not be read: the loader
    /// put placeholders there, so the rules on the order of their bumps are skipped.
    pub(crate) unreadable_schedules: &'a [usize],
}

/// Problems found so far, in the order found, each tagged with the rule being checked.
#[derive(Debug, Default)]
pub(crate) struct Problems(Vec<ConfigProblem>, Option<ConfigRule>);

impl Problems {
    /// Records a problem (of the rule being checked, if any: shape problems have none).
    pub(crate) fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(ConfigProblem {
            path: path.into(),
            message: message.into(),
            rule: self.1,
        });
    }

    /// Runs the check of `rule`: the problems it records name the rule.
    fn under(&mut self, rule: ConfigRule, check: impl FnOnce(&mut Self)) {
        let outer = self.1.replace(rule);
        check(self);
        self.1 = outer;
    }

    /// The problems, in the order found.
    pub(crate) fn into_vec(self) -> Vec<ConfigProblem> {
        self.0
    }
}

/// `parent.key`, or `key` at the root; an empty key is written `""`.
pub(crate) fn join(parent: &str, key: &str) -> String {
    let key = if key.is_empty() { "\"\"" } else { key };
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

/// Names in backticks, comma-separated, or `none`.
pub(crate) fn list<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<String> = names.into_iter().map(|n| format!("`{n}`")).collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

/// The problem of a `charBits` outside 1..=5 (shared with the JSON loader, which meets values
/// the model cannot hold).
pub(crate) fn char_bits_message(value: i64) -> String {
    format!("shard bump `charBits` is {value}; it must be in 1..=5 (radix 2, 4, 8, 16 or 32)")
}

/// The problem of a `chars` outside 0..=40 (shared with the JSON loader).
pub(crate) fn chars_message(value: i64) -> String {
    format!(
        "shard bump `chars` is {value}; it must be in 0..=40 (the suffix length; 0 means one unsharded partition)"
    )
}

/// The problem of a count (throttle, default limit, default page size) below 1.
fn positive_message(field: &str, what: &str) -> String {
    format!("`{field}` must be greater than 0: it is {what}")
}

// =============================================================================================
// table settings

fn check_table(table: &TableModel, problems: &mut Problems) {
    problems.under(ConfigRule::DelimitersNotEmpty, |problems| {
        check_delimiters_not_empty(table, problems);
    });
    problems.under(ConfigRule::DelimitersWithoutWordCharacters, |problems| {
        check_delimiters_without_word_characters(table, problems);
    });
    problems.under(ConfigRule::DelimitersDisjoint, |problems| {
        check_delimiters_disjoint(table, problems);
    });
    problems.under(ConfigRule::TableKeysNotEmpty, |problems| {
        check_table_keys_not_empty(table, problems);
    });
    problems.under(ConfigRule::TableKeysDistinct, |problems| {
        check_table_keys_distinct(table, problems);
    });
    problems.under(ConfigRule::ThrottlePositive, |problems| {
        check_throttle_positive(table, problems);
    });
}

// Rule: no delimiter is empty.
fn check_delimiters_not_empty(table: &TableModel, problems: &mut Problems) {
    for (name, delimiter) in table.delimiters.named() {
        if delimiter.is_empty() {
            problems.push(
                name,
                format!("`{name}` is empty; use one or more non-word characters, such as `|`, `#` or `!`"),
            );
        }
    }
}

// Rule: no delimiter contains a word character (`[A-Za-z0-9_]`), because names and encoded
// values are made of them. Stricter than TypeScript on purpose: its unanchored regex `/\W+/`
// accepts any delimiter with one non-word character somewhere, such as `a|`.
fn check_delimiters_without_word_characters(table: &TableModel, problems: &mut Problems) {
    for (name, delimiter) in table.delimiters.named() {
        if let Some(c) = delimiter
            .chars()
            .find(|c| c.is_ascii_alphanumeric() || *c == '_')
        {
            problems.push(
                name,
                format!(
                    "`{name}` `{delimiter}` contains the word character `{c}`; delimiters must not contain letters, digits or `_`, which occur in names and encoded values"
                ),
            );
        }
    }
}

// Rule: no delimiter contains another one (a substring test, checked in both directions as in
// TypeScript, so equal delimiters are reported twice); otherwise keys cannot be split.
fn check_delimiters_disjoint(table: &TableModel, problems: &mut Problems) {
    let named = table.delimiters.named();
    for (name, delimiter) in named {
        for (other_name, other) in named {
            if name != other_name
                && !delimiter.is_empty()
                && !other.is_empty()
                && delimiter.contains(other)
            {
                problems.push(
                    name,
                    format!(
                        "`{name}` `{delimiter}` contains `{other_name}` `{other}`, so keys could not be split unambiguously; choose delimiters that do not contain one another"
                    ),
                );
            }
        }
    }
}

// Rule: the table hash key and range key names are not empty.
fn check_table_keys_not_empty(table: &TableModel, problems: &mut Problems) {
    for (field, name, what) in [
        ("hashKey", &table.hash_key, "partition key"),
        ("rangeKey", &table.range_key, "sort key"),
    ] {
        if name.is_empty() {
            problems.push(
                field,
                format!("`{field}` is empty; name the table's {what} attribute"),
            );
        }
    }
}

// Rule: the table hash key and range key are different attributes.
fn check_table_keys_distinct(table: &TableModel, problems: &mut Problems) {
    if !table.hash_key.is_empty() && table.hash_key == table.range_key {
        problems.push(
            "rangeKey",
            format!(
                "the table range key `{}` is the same attribute as the table hash key; give the sort key its own name",
                table.range_key
            ),
        );
    }
}

// Rule: the table throttle is greater than 0.
fn check_throttle_positive(table: &TableModel, problems: &mut Problems) {
    if table.throttle == 0 {
        problems.push(
            "throttle",
            positive_message("throttle", "the default number of shard queries in flight"),
        );
    }
}

// =============================================================================================
// entity settings and shard bumps

fn check_entity(
    table: &TableModel,
    entity: &mut EntityModel,
    check_order: bool,
    problems: &mut Problems,
) {
    let path = join("entities", &entity.token);
    problems.under(ConfigRule::EntityToken, |problems| {
        check_entity_token(table, entity, &path, problems);
    });
    problems.under(ConfigRule::BumpRanges, |problems| {
        check_bump_ranges(&path, &entity.shard_bumps, problems);
    });
    if check_order {
        problems.under(ConfigRule::BumpTimestampsUnique, |problems| {
            check_bump_timestamps_unique(&path, &entity.shard_bumps, problems);
        });
    }
    let implied = normalise_shard_bumps(entity);
    if check_order {
        problems.under(ConfigRule::BumpCharsIncrease, |problems| {
            check_bump_chars_increase(&path, &entity.shard_bumps, implied, problems);
        });
    }
    problems.under(ConfigRule::UniqueProperty, |problems| {
        check_unique_property(entity, &path, problems);
    });
    problems.under(ConfigRule::TimestampProperty, |problems| {
        check_timestamp_property(entity, &path, problems);
    });
    problems.under(ConfigRule::EntityDefaultsPositive, |problems| {
        check_entity_defaults_positive(entity, &path, problems);
    });
}

/// Sorts the bumps by timestamp (stably) and puts [`ShardBump::UNSHARDED`] in front when no
/// bump starts at 0; an empty schedule becomes the default one. Returns whether a bump was put
/// in front.
fn normalise_shard_bumps(entity: &mut EntityModel) -> bool {
    let mut bumps = entity.shard_bumps.to_vec();
    bumps.sort_by_key(|b| b.timestamp);
    let implied = bumps.first().is_none_or(|b| b.timestamp != 0);
    if implied {
        bumps.insert(0, ShardBump::UNSHARDED);
    }
    if bumps[..] != entity.shard_bumps[..] {
        entity.shard_bumps = Cow::Owned(bumps);
    }
    implied
}

// Rule: the entity token is not empty and contains no delimiter: it starts every hash key
// (`<token><shardKeyDelimiter><suffix>`).
fn check_entity_token(
    table: &TableModel,
    entity: &EntityModel,
    path: &str,
    problems: &mut Problems,
) {
    if entity.token.is_empty() {
        problems.push(
            path,
            "the entity token is empty; it prefixes every hash key of the entity, so name it",
        );
    } else if let Some(message) = delimiter_in_name(table, "entity token", &entity.token) {
        problems.push(path, message);
    }
}

// Rule: every bump, as declared, has `charBits` in 1..=5 and `chars` in 0..=40.
fn check_bump_ranges(path: &str, bumps: &[ShardBump], problems: &mut Problems) {
    for (i, bump) in bumps.iter().enumerate() {
        let bump_path = join(&join(path, "shardBumps"), &i.to_string());
        if !(1..=MAX_CHAR_BITS).contains(&bump.char_bits) {
            problems.push(
                join(&bump_path, "charBits"),
                char_bits_message(bump.char_bits.into()),
            );
        }
        if bump.chars > MAX_CHARS {
            problems.push(join(&bump_path, "chars"), chars_message(bump.chars.into()));
        }
    }
}

// Rule: no two bumps start at the same timestamp (reported on the later one, at its declared
// position).
fn check_bump_timestamps_unique(path: &str, bumps: &[ShardBump], problems: &mut Problems) {
    let mut first = HashMap::new();
    for (i, bump) in bumps.iter().enumerate() {
        match first.entry(bump.timestamp) {
            Entry::Vacant(entry) => {
                entry.insert(i);
            }
            Entry::Occupied(entry) => problems.push(
                format!("{path}.shardBumps.{i}.timestamp"),
                format!(
                    "shard bumps {} and {i} both start at timestamp {}; give each bump its own timestamp",
                    entry.get(),
                    bump.timestamp
                ),
            ),
        }
    }
}

// Rule: after normalisation (sorted by timestamp, the implied zero bump in front), `chars`
// strictly increases, so suffixes never get shorter and the shard spaces of different bumps
// never overlap. Reported at the position in the normalised list, as TypeScript does. A bump
// with `chars` out of range is reported by its own rule and skipped (the next bump is compared
// with the one before it); two bumps sharing a timestamp are reported as duplicates and not
// compared.
fn check_bump_chars_increase(
    path: &str,
    bumps: &[ShardBump],
    implied: bool,
    problems: &mut Problems,
) {
    let mut previous: Option<(usize, ShardBump)> = None;
    for (i, &bump) in bumps.iter().enumerate() {
        if bump.chars > MAX_CHARS {
            continue;
        }
        if let Some((j, before)) = previous
            && before.timestamp != bump.timestamp
            && bump.chars <= before.chars
        {
            let before = if implied && j == 0 {
                "the implied first bump `{timestamp: 0, charBits: 1, chars: 0}`".to_owned()
            } else {
                format!(
                    "`chars` {} of the bump at timestamp {}",
                    before.chars, before.timestamp
                )
            };
            problems.push(
                format!("{path}.shardBumps.{i}"),
                format!(
                    "shard bump chars do not strictly increase at timestamp {}: `chars` {} follows {before}; give every later bump more `chars`",
                    bump.timestamp, bump.chars
                ),
            );
        }
        previous = Some((i, bump));
    }
}

// Rule: the unique property is a transcoded property of the entity: its encoded value is part
// of the range key.
fn check_unique_property(entity: &EntityModel, path: &str, problems: &mut Problems) {
    let name = &entity.unique_property;
    if entity.property(name).is_none() {
        problems.push(
            join(path, "uniqueProperty"),
            not_transcoded_message("unique property", name, &entity.properties),
        );
    }
}

// Rule: the timestamp property is a transcoded property with an integer transcode (`timestamp`
// or `int`): it holds the creation time in milliseconds, which picks the shard bump.
fn check_timestamp_property(entity: &EntityModel, path: &str, problems: &mut Problems) {
    let name = &entity.timestamp_property;
    let path = join(path, "timestampProperty");
    match entity.property(name) {
        None => problems.push(
            path,
            not_transcoded_message("timestamp property", name, &entity.properties),
        ),
        Some(property) if !TIMESTAMP_TRANSCODES.contains(&property.transcode.name()) => problems
            .push(
                path,
                format!(
                    "timestamp property `{name}` has transcode `{}`, but it holds the creation time in whole milliseconds, which keys write as 13 digits (as TypeScript does); use the `timestamp` transcode",
                    property.transcode.name()
                ),
            ),
        Some(_) => {}
    }
}

fn not_transcoded_message(role: &str, name: &str, properties: &[Property]) -> String {
    if name.is_empty() {
        format!("the {role} is empty; name a transcoded property")
    } else {
        format!(
            "{role} `{name}` is not a transcoded property; give it a transcode (transcoded properties: {})",
            list(properties.iter().map(|p| &*p.name))
        )
    }
}

// Rule: the entity's default limit and default page size are greater than 0.
fn check_entity_defaults_positive(entity: &EntityModel, path: &str, problems: &mut Problems) {
    for (field, value, what) in [
        (
            "defaultLimit",
            entity.default_limit,
            "the default number of items a query returns",
        ),
        (
            "defaultPageSize",
            entity.default_page_size,
            "the default number of items one shard query reads",
        ),
    ] {
        if value == 0 {
            problems.push(join(path, field), positive_message(field, what));
        }
    }
}

// =============================================================================================
// properties, generated properties and indexes

/// The lists the rules check, and where they live in the configuration.
struct Scope<'a> {
    /// `entities.<token>` for an entity's own lists, empty for global lists.
    prefix: String,
    global: bool,
    properties: &'a [Property],
    generated: &'a [GeneratedProperty],
    indexes: &'a [Index],
}

impl<'a> Scope<'a> {
    fn entity(entity: &'a EntityModel) -> Self {
        Self {
            prefix: join("entities", &entity.token),
            global: false,
            properties: &entity.properties,
            generated: &entity.generated,
            indexes: &entity.indexes,
        }
    }

    fn global(globals: &Globals<'a>) -> Self {
        Self {
            prefix: String::new(),
            global: true,
            properties: globals.properties,
            generated: globals.generated,
            indexes: globals.indexes,
        }
    }

    fn property_path(&self, name: &str) -> String {
        if self.global {
            join("propertyTranscodes", name)
        } else {
            join(&join(&self.prefix, "properties"), name)
        }
    }

    fn generated_path(&self, generated: &GeneratedProperty) -> String {
        if self.global {
            let side = match generated.kind {
                GeneratedKind::Sharded => "generatedProperties.sharded",
                GeneratedKind::Unsharded => "generatedProperties.unsharded",
            };
            join(side, &generated.name)
        } else {
            join(&join(&self.prefix, "generated"), &generated.name)
        }
    }

    fn component_path(&self, generated: &GeneratedProperty, i: usize) -> String {
        let path = self.generated_path(generated);
        if self.global {
            format!("{path}.{i}")
        } else {
            format!("{path}.components.{i}")
        }
    }

    fn index_path(&self, index: &Index) -> String {
        join(&join(&self.prefix, "indexes"), &index.name)
    }

    fn is_transcoded(&self, name: &str) -> bool {
        self.properties.iter().any(|p| p.name == name)
    }

    fn property(&self, name: &str) -> Option<&'a Property> {
        self.properties.iter().find(|p| p.name == name)
    }

    fn generated_property(&self, name: &str) -> Option<&'a GeneratedProperty> {
        self.generated.iter().find(|g| g.name == name)
    }

    /// The generated properties of one kind, as a list for messages.
    fn generated_list(&self, kind: GeneratedKind) -> String {
        list(
            self.generated
                .iter()
                .filter(|g| g.kind == kind)
                .map(|g| &*g.name),
        )
    }

    fn projections(index: &Index) -> &[Cow<'static, str>] {
        match &index.projection {
            Projection::Include(names) => names,
            Projection::All | Projection::KeysOnly => &[],
        }
    }
}

fn check_scope(table: &TableModel, scope: &Scope<'_>, problems: &mut Problems) {
    problems.under(ConfigRule::NamesNotEmpty, |problems| {
        check_names_not_empty(scope, problems);
    });
    problems.under(ConfigRule::NamesFreeOfDelimiters, |problems| {
        check_names_free_of_delimiters(table, scope, problems);
    });
    problems.under(ConfigRule::AttributeNamesDistinct, |problems| {
        check_attribute_names_distinct(table, scope, problems);
    });
    problems.under(ConfigRule::ComponentsTranscoded, |problems| {
        check_components_transcoded(scope, problems);
    });
    problems.under(ConfigRule::ComponentsNotEmpty, |problems| {
        check_components_not_empty(scope, problems);
    });
    problems.under(ConfigRule::ComponentsUnique, |problems| {
        check_components_unique(scope, problems);
    });
    problems.under(ConfigRule::IndexNamesUnique, |problems| {
        check_index_names_unique(scope, problems);
    });
    problems.under(ConfigRule::IndexHashKeys, |problems| {
        check_index_hash_keys(table, scope, problems);
    });
    problems.under(ConfigRule::IndexRangeKeys, |problems| {
        check_index_range_keys(table, scope, problems);
    });
    problems.under(ConfigRule::IndexRangeKeyTypes, |problems| {
        check_index_range_key_types(table, scope, problems);
    });
    problems.under(ConfigRule::IndexKeyPairsUnique, |problems| {
        check_index_key_pairs_unique(scope, problems);
    });
    problems.under(ConfigRule::ProjectionsNotKeys, |problems| {
        check_projections_not_keys(table, scope, problems);
    });
    problems.under(ConfigRule::ProjectionsUnique, |problems| {
        check_projections_unique(scope, problems);
    });
}

// Rule: property, generated property, index and projection names are not empty.
fn check_names_not_empty(scope: &Scope<'_>, problems: &mut Problems) {
    for property in scope.properties.iter().filter(|p| p.name.is_empty()) {
        problems.push(
            scope.property_path(&property.name),
            "a transcoded property has an empty name; name the attribute",
        );
    }
    for generated in scope.generated.iter().filter(|g| g.name.is_empty()) {
        problems.push(
            scope.generated_path(generated),
            "a generated property has an empty name; name the attribute",
        );
    }
    for index in scope.indexes {
        if index.name.is_empty() {
            problems.push(
                scope.index_path(index),
                "an index has an empty name; name it (the name is the GSI name)",
            );
        }
        for (i, projection) in Scope::projections(index).iter().enumerate() {
            if projection.is_empty() {
                problems.push(
                    format!("{}.projections.{i}", scope.index_path(index)),
                    format!(
                        "projection {i} of index `{}` is empty; name an attribute or remove it",
                        index.name
                    ),
                );
            }
        }
    }
}

// Rule: property, generated property and index names contain no delimiter: names appear inside
// keys (`<name><generatedValueDelimiter><value>`) and page keys, which are split on delimiters.
fn check_names_free_of_delimiters(table: &TableModel, scope: &Scope<'_>, problems: &mut Problems) {
    for property in scope.properties {
        if let Some(message) = delimiter_in_name(table, "transcoded property", &property.name) {
            problems.push(scope.property_path(&property.name), message);
        }
    }
    for generated in scope.generated {
        if let Some(message) = delimiter_in_name(table, "generated property", &generated.name) {
            problems.push(scope.generated_path(generated), message);
        }
    }
    for index in scope.indexes {
        if let Some(message) = delimiter_in_name(table, "index", &index.name) {
            problems.push(scope.index_path(index), message);
        }
    }
}

fn delimiter_in_name(table: &TableModel, role: &str, name: &str) -> Option<String> {
    let (delimiter_name, delimiter) = table
        .delimiters
        .named()
        .into_iter()
        .find(|(_, d)| !d.is_empty() && name.contains(d))?;
    Some(format!(
        "{role} `{name}` contains the delimiter `{delimiter}` (`{delimiter_name}`); names appear inside keys, so rename it or choose other delimiters"
    ))
}

/// What an attribute name is used for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    TableHashKey,
    TableRangeKey,
    Generated(GeneratedKind),
    Transcoded,
}

impl Role {
    fn phrase(self) -> &'static str {
        match self {
            Self::TableHashKey => "the table hash key",
            Self::TableRangeKey => "the table range key",
            Self::Generated(GeneratedKind::Sharded) => "a sharded generated property",
            Self::Generated(GeneratedKind::Unsharded) => "an unsharded generated property",
            Self::Transcoded => "a transcoded property",
        }
    }
}

// Rule: every attribute name has one role: the table hash key, the table range key, one
// generated property or one transcoded property (TypeScript's "key exclusivity"); a repeated
// generated or transcoded property is a duplicate. Reported at the later declaration.
fn check_attribute_names_distinct(table: &TableModel, scope: &Scope<'_>, problems: &mut Problems) {
    let mut roles: HashMap<&str, Role> = HashMap::new();
    roles.insert(&table.hash_key, Role::TableHashKey);
    roles.entry(&table.range_key).or_insert(Role::TableRangeKey);
    let generated = scope
        .generated
        .iter()
        .map(|g| (&*g.name, Role::Generated(g.kind), scope.generated_path(g)));
    let transcoded = scope
        .properties
        .iter()
        .map(|p| (&*p.name, Role::Transcoded, scope.property_path(&p.name)));
    for (name, role, path) in generated.chain(transcoded) {
        if name.is_empty() {
            continue;
        }
        match roles.entry(name) {
            Entry::Vacant(entry) => {
                entry.insert(role);
            }
            Entry::Occupied(entry) if *entry.get() == role => problems.push(
                path,
                format!("`{name}` is declared twice as {}; remove one", role.phrase()),
            ),
            Entry::Occupied(entry) => problems.push(
                path,
                format!(
                    "`{name}` is already {}, so it cannot also be {}; every attribute has one role, so rename one of them",
                    entry.get().phrase(),
                    role.phrase()
                ),
            ),
        }
    }
}

// Rule: every component of a generated property is a transcoded property of the entity, and not
// itself a generated property.
fn check_components_transcoded(scope: &Scope<'_>, problems: &mut Problems) {
    for generated in scope.generated {
        for (i, component) in generated.components.iter().enumerate() {
            let message = if component.is_empty() {
                format!(
                    "component {i} of generated property `{}` is empty; name a transcoded property",
                    generated.name
                )
            } else if scope.generated_property(component).is_some() {
                format!(
                    "component `{component}` of generated property `{}` is itself a generated property; components must be transcoded properties",
                    generated.name
                )
            } else if !scope.is_transcoded(component) {
                format!(
                    "component `{component}` of generated property `{}` is not a transcoded property; give it a transcode",
                    generated.name
                )
            } else {
                continue;
            };
            problems.push(scope.component_path(generated, i), message);
        }
    }
}

// Rule: a generated property has at least one component.
fn check_components_not_empty(scope: &Scope<'_>, problems: &mut Problems) {
    for generated in scope.generated.iter().filter(|g| g.components.is_empty()) {
        problems.push(
            scope.generated_path(generated),
            format!(
                "generated property `{}` has no components; list at least one transcoded property",
                generated.name
            ),
        );
    }
}

// Rule: a generated property lists each component once (reported on the repeat).
fn check_components_unique(scope: &Scope<'_>, problems: &mut Problems) {
    for generated in scope.generated {
        let mut seen = HashSet::new();
        for (i, component) in generated.components.iter().enumerate() {
            if !seen.insert(&**component) {
                problems.push(
                    scope.component_path(generated, i),
                    format!(
                        "component `{component}` is listed twice in generated property `{}`; remove the repeat",
                        generated.name
                    ),
                );
            }
        }
    }
}

// Rule: index names are unique within an entity: the name is the GSI name.
fn check_index_names_unique(scope: &Scope<'_>, problems: &mut Problems) {
    let mut seen = HashSet::new();
    for index in scope.indexes {
        if !seen.insert(&*index.name) {
            problems.push(
                scope.index_path(index),
                format!(
                    "index `{}` is declared twice; an index name is a GSI name, so rename or remove one",
                    index.name
                ),
            );
        }
    }
}

// Rule: an index hash key is the table hash key or a sharded generated property.
fn check_index_hash_keys(table: &TableModel, scope: &Scope<'_>, problems: &mut Problems) {
    for index in scope.indexes {
        let key = &index.hash_key;
        let generated = scope.generated_property(key);
        if *key == table.hash_key || generated.is_some_and(GeneratedProperty::is_sharded) {
            continue;
        }
        let what = if generated.is_some() {
            "it is an unsharded generated property, which can only be a range key"
        } else if scope.is_transcoded(key) {
            "it is a transcoded property, which can only be a range key"
        } else {
            "no such attribute is declared"
        };
        problems.push(
            format!("{}.hashKey", scope.index_path(index)),
            format!(
                "index `{}` hash key `{key}` is neither the table hash key `{}` nor a sharded generated property ({what}); use one of them (sharded generated properties: {})",
                index.name,
                table.hash_key,
                scope.generated_list(GeneratedKind::Sharded)
            ),
        );
    }
}

// Rule: an index range key is the table range key, an unsharded generated property or a
// transcoded property.
fn check_index_range_keys(table: &TableModel, scope: &Scope<'_>, problems: &mut Problems) {
    for index in scope.indexes {
        let key = &index.range_key;
        let generated = scope.generated_property(key);
        if *key == table.range_key
            || generated.is_some_and(|g| !g.is_sharded())
            || scope.is_transcoded(key)
        {
            continue;
        }
        let what = if generated.is_some() {
            "it is a sharded generated property, which can only be a hash key"
        } else if *key == table.hash_key {
            "it is the table hash key"
        } else {
            "no such attribute is declared"
        };
        problems.push(
            format!("{}.rangeKey", scope.index_path(index)),
            format!(
                "index `{}` range key `{key}` is neither the table range key `{}`, an unsharded generated property nor a transcoded property ({what}); use one of them (unsharded generated properties: {})",
                index.name,
                table.range_key,
                scope.generated_list(GeneratedKind::Unsharded)
            ),
        );
    }
}

// Rule: a transcoded property used as an index range key has a transcode DynamoDB can key on:
// key attributes are strings, numbers or binary, so not `boolean`.
fn check_index_range_key_types(table: &TableModel, scope: &Scope<'_>, problems: &mut Problems) {
    for index in scope.indexes {
        let key = &index.range_key;
        if *key == table.range_key || scope.generated_property(key).is_some() {
            continue;
        }
        if let Some(property) = scope.property(key)
            && property.transcode.key_type().is_none()
        {
            problems.push(
                format!("{}.rangeKey", scope.index_path(index)),
                format!(
                    "index `{}` range key `{key}` has transcode `{}`, which DynamoDB cannot use as a key attribute type; use a property with a string or number transcode",
                    index.name,
                    property.transcode.name()
                ),
            );
        }
    }
}

// Rule: no two indexes have the same (hash key, range key) pair; reported on the second. Indexes
// with an empty key or a repeated name are reported by other rules and skipped here.
fn check_index_key_pairs_unique(scope: &Scope<'_>, problems: &mut Problems) {
    let mut names = HashSet::new();
    let mut pairs: HashMap<(&str, &str), &str> = HashMap::new();
    for index in scope.indexes {
        if !names.insert(&*index.name) || index.hash_key.is_empty() || index.range_key.is_empty() {
            continue;
        }
        match pairs.entry((&index.hash_key, &index.range_key)) {
            Entry::Vacant(entry) => {
                entry.insert(&index.name);
            }
            Entry::Occupied(entry) => problems.push(
                scope.index_path(index),
                format!(
                    "index `{}` has the same hash key `{}` and range key `{}` as index `{}`; remove one of them",
                    index.name,
                    index.hash_key,
                    index.range_key,
                    entry.get()
                ),
            ),
        }
    }
}

// Rule: a projection names no key attribute (the table keys, the index's own keys or any
// generated property): keys are always projected (TypeScript rule "index projection is a key").
fn check_projections_not_keys(table: &TableModel, scope: &Scope<'_>, problems: &mut Problems) {
    for index in scope.indexes {
        for (i, projection) in Scope::projections(index).iter().enumerate() {
            let role = if *projection == table.hash_key {
                "the table hash key"
            } else if *projection == table.range_key {
                "the table range key"
            } else if *projection == index.hash_key {
                "the index hash key"
            } else if *projection == index.range_key {
                "the index range key"
            } else if scope.generated_property(projection).is_some() {
                "a generated property"
            } else {
                continue;
            };
            problems.push(
                format!("{}.projections.{i}", scope.index_path(index)),
                format!(
                    "projection `{projection}` of index `{}` is {role}; keys are always projected, so remove it",
                    index.name
                ),
            );
        }
    }
}

// Rule: an index lists each projection once (reported on the repeat).
fn check_projections_unique(scope: &Scope<'_>, problems: &mut Problems) {
    for index in scope.indexes {
        let mut seen = HashSet::new();
        for (i, projection) in Scope::projections(index).iter().enumerate() {
            if !seen.insert(&**projection) {
                problems.push(
                    format!("{}.projections.{i}", scope.index_path(index)),
                    format!(
                        "projection `{projection}` is listed twice in index `{}`; remove the repeat",
                        index.name
                    ),
                );
            }
        }
    }
}

// =============================================================================================
// across entities

fn check_across_entities(entities: &[EntityModel], layout: &Layout<'_>, problems: &mut Problems) {
    problems.under(ConfigRule::EntityTokensUnique, |problems| {
        check_entity_tokens_unique(entities, problems);
    });
    if let Layout::PerEntity = layout {
        problems.under(ConfigRule::IndexDeclarationsAgree, |problems| {
            check_index_declarations_agree(entities, problems);
        });
    }
    problems.under(ConfigRule::IndexCount, |problems| {
        check_index_count(entities, layout, problems);
    });
}

// Rule: entity tokens are unique in a table: the token prefixes every hash key, so two entities
// with one token would share partitions. Reported on the second.
fn check_entity_tokens_unique(entities: &[EntityModel], problems: &mut Problems) {
    let mut seen = HashSet::new();
    for entity in entities {
        if !seen.insert(&*entity.token) {
            problems.push(
                join("entities", &entity.token),
                format!(
                    "entity token `{}` is used by two entities; each entity of a table needs its own token",
                    entity.token
                ),
            );
        }
    }
}

// Rule: an index name declared by several entities has the same hash key, range key and
// projection in each: it is one GSI of the table. Reported on the later entity.
fn check_index_declarations_agree(entities: &[EntityModel], problems: &mut Problems) {
    let mut first: HashMap<&str, (&str, &Index)> = HashMap::new();
    for entity in entities {
        for index in entity.indexes.iter() {
            let Some(&(token, original)) = first.get(&*index.name) else {
                first.insert(&index.name, (&entity.token, index));
                continue;
            };
            if token == entity.token {
                continue; // a repeat within one entity has its own rule
            }
            let path = join(
                &join(&join("entities", &entity.token), "indexes"),
                &index.name,
            );
            if (&index.hash_key, &index.range_key) != (&original.hash_key, &original.range_key) {
                problems.push(
                    path,
                    format!(
                        "index `{}` has hash key `{}` and range key `{}` here, but entity `{token}` declares it with hash key `{}` and range key `{}`; one index name is one GSI of the table, so make them agree or rename one",
                        index.name,
                        index.hash_key,
                        index.range_key,
                        original.hash_key,
                        original.range_key
                    ),
                );
            } else if index.projection != original.projection {
                problems.push(
                    path,
                    format!(
                        "index `{}` projects {} here, but entity `{token}` declares it projecting {}; one index name is one GSI of the table, so make them agree or rename one",
                        index.name,
                        describe_projection(&index.projection),
                        describe_projection(&original.projection)
                    ),
                );
            }
        }
    }
}

fn describe_projection(projection: &Projection) -> String {
    match projection {
        Projection::All => "all attributes".to_owned(),
        Projection::KeysOnly => "keys only".to_owned(),
        Projection::Include(names) => format!("keys and {}", list(names.iter().map(|n| &**n))),
    }
}

// Rule: the table has at most 20 distinct index names, DynamoDB's limit of global secondary
// indexes per table. Reported once, at the first declaration of the 21st name.
fn check_index_count(entities: &[EntityModel], layout: &Layout<'_>, problems: &mut Problems) {
    let declared: Vec<(String, &str)> = match layout {
        Layout::Global(globals) => globals
            .indexes
            .iter()
            .map(|i| (join("indexes", &i.name), &*i.name))
            .collect(),
        Layout::PerEntity => entities
            .iter()
            .flat_map(|e| {
                e.indexes.iter().map(|i| {
                    let path = join(&join(&join("entities", &e.token), "indexes"), &i.name);
                    (path, &*i.name)
                })
            })
            .collect(),
    };
    let mut seen = HashSet::new();
    let mut over = None;
    for (path, name) in declared {
        if seen.insert(name) && seen.len() == MAX_INDEXES + 1 {
            over = Some((path, name));
        }
    }
    if let Some((path, name)) = over {
        problems.push(
            path,
            format!(
                "index `{name}` is the 21st distinct index of the table, which declares {} in all; DynamoDB allows at most {MAX_INDEXES} global secondary indexes per table, so remove or merge indexes",
                seen.len()
            ),
        );
    }
}
