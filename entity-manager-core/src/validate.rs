//! Run-time validation: the rules of [`crate::rules`] applied to a configuration, each problem
//! located by a path.
//!
//! [`validate`] normalises every entity's shard schedule and checks every rule, collecting all
//! problems instead of stopping at the first. The rules themselves (what is checked, why, and
//! the message) live in [`crate::rules`], which `#[derive(Entity)]` and `#[derive(Table)]` call
//! too; this module only walks the configuration and says where each problem is.
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
use std::collections::HashSet;

use crate::error::{ConfigError, ConfigProblem};
use crate::model::{
    EntityModel, GeneratedKind, GeneratedProperty, Index, MultiKey, Projection, Property,
    TableModel,
};
use crate::rules::ConfigRule;
use crate::rules::{
    self, Delimiter, IndexKey, Key, KeyKind, KeyProperty, KeySide, Named, Problem, Role, Setting,
    Syntax,
};

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

/// Problems found so far, in the order found.
#[derive(Debug, Default)]
pub(crate) struct Problems(Vec<ConfigProblem>);

impl Problems {
    /// Records a problem of no rule (the shape of a config).
    pub(crate) fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(ConfigProblem {
            path: path.into(),
            message: message.into(),
            rule: None,
        });
    }

    /// Records a rule's problem at `path`.
    fn add(&mut self, path: impl Into<String>, problem: Problem) {
        self.0.push(ConfigProblem {
            path: path.into(),
            message: problem.message,
            rule: Some(problem.rule),
        });
    }

    /// Records a rule's problem at `path`, if any.
    fn add_some(&mut self, path: impl Into<String>, problem: Option<Problem>) {
        if let Some(problem) = problem {
            self.add(path, problem);
        }
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
    rules::list(names)
}

/// The problem of a `charBits` outside 1..=5 (shared with the JSON loader, which meets values
/// the model cannot hold).
pub(crate) fn char_bits_message(value: i64) -> String {
    rules::bump_char_bits(Syntax::Config, value.into()).map_or_else(String::new, |p| p.message)
}

/// The problem of a `chars` outside 0..=40 (shared with the JSON loader).
pub(crate) fn chars_message(value: i64) -> String {
    rules::bump_chars(Syntax::Config, value.into()).map_or_else(String::new, |p| p.message)
}

/// A count as the rules take it.
fn count(value: usize) -> i128 {
    i128::try_from(value).unwrap_or(i128::MAX)
}

// =============================================================================================
// table settings

fn check_table(table: &TableModel, problems: &mut Problems) {
    let syntax = Syntax::Config;
    let delimiters = Delimiter::ALL.map(|d| (d, d.of(&table.delimiters)));
    for (which, value) in delimiters {
        let path = Setting::Delimiter(which).name(syntax);
        problems.add_some(path, rules::delimiter_not_empty(syntax, which, value));
        problems.add_some(
            path,
            rules::delimiter_without_word_characters(syntax, which, value),
        );
    }
    for (which, problem) in rules::delimiters_disjoint(syntax, &delimiters) {
        problems.add(Setting::Delimiter(which).name(syntax), problem);
    }
    for (key, value) in [
        (Setting::HashKey, &table.hash_key),
        (Setting::RangeKey, &table.range_key),
    ] {
        problems.add_some(
            key.name(syntax),
            rules::table_key_not_empty(syntax, key, value),
        );
    }
    problems.add_some(
        Setting::RangeKey.name(syntax),
        rules::table_keys_distinct(&table.hash_key, &table.range_key),
    );
    problems.add_some(
        Setting::Throttle.name(syntax),
        rules::throttle_positive(syntax, count(table.throttle)),
    );
}

// =============================================================================================
// entity settings and shard bumps

/// The rule of the unique or of the timestamp property.
type PropertyRule = fn(Syntax, KeyProperty<'_>) -> Option<Problem>;

fn check_entity(
    table: &TableModel,
    entity: &mut EntityModel,
    check_order: bool,
    problems: &mut Problems,
) {
    let syntax = Syntax::Config;
    let path = join("entities", &entity.token);
    problems.add_some(
        &path,
        rules::entity_token(syntax, &entity.token, Some(&table.delimiters)),
    );
    let bumps_path = join(&path, "shardBumps");
    for (i, bump) in entity.shard_bumps.iter().enumerate() {
        let bump_path = join(&bumps_path, &i.to_string());
        problems.add_some(
            join(&bump_path, "charBits"),
            rules::bump_char_bits(syntax, bump.char_bits.into()),
        );
        problems.add_some(
            join(&bump_path, "chars"),
            rules::bump_chars(syntax, bump.chars.into()),
        );
    }
    if check_order {
        let timestamps = entity.shard_bumps.iter().map(|b| b.timestamp).enumerate();
        for (i, problem) in rules::bump_timestamps_unique(timestamps) {
            problems.add(format!("{bumps_path}.{i}.timestamp"), problem);
        }
    }
    // normalised: reported at the position in the ordered schedule, as TypeScript does
    let schedule = rules::schedule(&entity.shard_bumps);
    if check_order {
        for (i, problem) in rules::bump_chars_increase(syntax, &schedule) {
            problems.add(format!("{bumps_path}.{i}"), problem);
        }
    }
    if schedule.bumps[..] != entity.shard_bumps[..] {
        entity.shard_bumps = Cow::Owned(schedule.bumps);
    }

    let transcoded: Vec<&str> = entity.properties.iter().map(|p| &*p.name).collect();
    let transcode = |name: &str| entity.property(name).map(|p| p.transcode.name());
    let key_properties: [(&str, &str, PropertyRule); 2] = [
        (
            "uniqueProperty",
            &entity.unique_property,
            rules::unique_property,
        ),
        (
            "timestampProperty",
            &entity.timestamp_property,
            rules::timestamp_property,
        ),
    ];
    for (field, name, rule) in key_properties {
        problems.add_some(
            join(&path, field),
            rule(
                syntax,
                KeyProperty {
                    name,
                    transcode: transcode(name),
                    transcoded: &transcoded,
                },
            ),
        );
    }
    for (setting, value) in [
        (Setting::DefaultLimit, entity.default_limit),
        (Setting::DefaultPageSize, entity.default_page_size),
    ] {
        problems.add_some(
            join(&path, setting.name(syntax)),
            rules::entity_default_positive(syntax, setting, count(value)),
        );
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

    fn property(&self, name: &str) -> Option<&'a Property> {
        self.properties.iter().find(|p| p.name == name)
    }

    fn generated_property(&self, name: &str) -> Option<&'a GeneratedProperty> {
        self.generated.iter().find(|g| g.name == name)
    }

    /// What `name` is: a table key, a generated or a transcoded property, or nothing declared.
    fn role(&self, table: &TableModel, name: &str) -> Option<Role> {
        if name == table.hash_key {
            Some(Role::TableHashKey)
        } else if name == table.range_key {
            Some(Role::TableRangeKey)
        } else if let Some(generated) = self.generated_property(name) {
            Some(Role::Generated(generated.kind))
        } else {
            self.property(name).map(|_| Role::Transcoded)
        }
    }

    /// The names of the generated properties of one kind.
    fn generated_names(&self, kind: GeneratedKind) -> Vec<&'a str> {
        self.generated
            .iter()
            .filter(|g| g.kind == kind)
            .map(|g| &*g.name)
            .collect()
    }

    fn projections(index: &Index) -> &[Cow<'static, str>] {
        match &index.projection {
            Projection::Include(names) => names,
            Projection::All | Projection::KeysOnly => &[],
        }
    }
}

fn check_scope(table: &TableModel, scope: &Scope<'_>, problems: &mut Problems) {
    check_names(table, scope, problems);
    check_generated(scope, problems);
    check_indexes(table, scope, problems);
}

/// Names: not empty, free of delimiters, one role each.
fn check_names(table: &TableModel, scope: &Scope<'_>, problems: &mut Problems) {
    let named = scope
        .properties
        .iter()
        .map(|p| (Named::Transcoded, &*p.name, scope.property_path(&p.name)))
        .chain(
            scope
                .generated
                .iter()
                .map(|g| (Named::Generated, &*g.name, scope.generated_path(g))),
        )
        .chain(
            scope
                .indexes
                .iter()
                .map(|i| (Named::Index, &*i.name, scope.index_path(i))),
        );
    for (named, name, path) in named {
        problems.add_some(&path, rules::name_not_empty(named, name));
        let delimiter =
            rules::name_free_of_delimiters(Syntax::Config, named, name, &table.delimiters);
        // a delimiter in an index name is reported as such, not also as an invalid character
        if named == Named::Index && delimiter.is_none() {
            problems.add_some(&path, rules::index_name_valid(name));
        }
        problems.add_some(path, delimiter);
    }
    for index in scope.indexes {
        let path = scope.index_path(index);
        for (i, projection) in Scope::projections(index).iter().enumerate() {
            problems.add_some(
                format!("{path}.projections.{i}"),
                rules::projection_not_empty(&index.name, i, projection),
            );
        }
    }
    let declared: Vec<(&str, Role, String)> = scope
        .generated
        .iter()
        .map(|g| (&*g.name, Role::Generated(g.kind), scope.generated_path(g)))
        .chain(
            scope
                .properties
                .iter()
                .map(|p| (&*p.name, Role::Transcoded, scope.property_path(&p.name))),
        )
        .collect();
    let roles: Vec<(&str, Role)> = declared.iter().map(|(n, r, _)| (*n, *r)).collect();
    for (i, problem) in
        rules::attribute_names_distinct(Some((&table.hash_key, &table.range_key)), &roles)
    {
        problems.add(declared[i].2.clone(), problem);
    }
}

/// Generated properties: components transcoded, not empty, unique.
fn check_generated(scope: &Scope<'_>, problems: &mut Problems) {
    let syntax = Syntax::Config;
    for generated in scope.generated {
        for (i, component) in generated.components.iter().enumerate() {
            let role = match scope.generated_property(component) {
                Some(g) => Some(Role::Generated(g.kind)),
                None => scope.property(component).map(|_| Role::Transcoded),
            };
            problems.add_some(
                scope.component_path(generated, i),
                rules::component_transcoded(syntax, &generated.name, i, component, role),
            );
        }
        problems.add_some(
            scope.generated_path(generated),
            rules::components_not_empty(&generated.name, generated.components.len()),
        );
        let components: Vec<&str> = generated.components.iter().map(|c| &**c).collect();
        for (i, problem) in rules::components_unique(&generated.name, &components) {
            problems.add(scope.component_path(generated, i), problem);
        }
    }
}

/// Indexes: unique names, valid keys, distinct key pairs, projections of non-keys, once each.
fn check_indexes(table: &TableModel, scope: &Scope<'_>, problems: &mut Problems) {
    let names: Vec<&str> = scope.indexes.iter().map(|i| &*i.name).collect();
    let repeated = rules::index_names_unique(&names);
    let repeats: HashSet<usize> = repeated.iter().map(|(i, _)| *i).collect();
    for (i, problem) in repeated {
        problems.add(scope.index_path(&scope.indexes[i]), problem);
    }
    let (sharded, unsharded) = (
        scope.generated_names(GeneratedKind::Sharded),
        scope.generated_names(GeneratedKind::Unsharded),
    );
    for index in scope.indexes {
        match &index.multi {
            Some(multi) => check_multi_key(table, scope, index, multi, problems),
            None => check_classic_keys(table, scope, index, (&sharded, &unsharded), problems),
        }
    }
    let pairs: Vec<Option<(&str, Key<'_>, Key<'_>)>> = scope
        .indexes
        .iter()
        .enumerate()
        .map(|(i, index)| {
            (!repeats.contains(&i)
                && index.multi.is_none()
                && !index.hash_key.is_empty()
                && !index.range_key.is_empty())
            .then(|| {
                (
                    &*index.name,
                    Key::Named(&index.hash_key),
                    Key::Named(&index.range_key),
                )
            })
        })
        .collect();
    for (i, problem) in rules::index_key_pairs_unique(&pairs) {
        problems.add(scope.index_path(&scope.indexes[i]), problem);
    }
    for index in scope.indexes {
        let path = scope.index_path(index);
        let projections: Vec<&str> = Scope::projections(index).iter().map(|p| &**p).collect();
        for (i, projection) in projections.iter().enumerate() {
            let key = if *projection == table.hash_key {
                Some(KeyKind::TableHash)
            } else if *projection == table.range_key {
                Some(KeyKind::TableRange)
            } else if index.hash_names().contains(projection) {
                Some(KeyKind::IndexHash)
            } else if index.range_names().contains(projection) {
                Some(KeyKind::IndexRange)
            } else if scope.generated_property(projection).is_some() {
                Some(KeyKind::Generated)
            } else {
                None
            };
            problems.add_some(
                format!("{path}.projections.{i}"),
                rules::projection_not_key(&index.name, projection, key),
            );
        }
        for (i, problem) in rules::projections_unique(&index.name, &projections) {
            problems.add(format!("{path}.projections.{i}"), problem);
        }
    }
}

/// A classic index: its hash key, its range key and the range key's type.
fn check_classic_keys(
    table: &TableModel,
    scope: &Scope<'_>,
    index: &Index,
    (sharded, unsharded): (&[&str], &[&str]),
    problems: &mut Problems,
) {
    let syntax = Syntax::Config;
    let path = scope.index_path(index);
    problems.add_some(
        format!("{path}.hashKey"),
        rules::index_hash_key(
            syntax,
            IndexKey {
                index: &index.name,
                key: &index.hash_key,
                role: scope.role(table, &index.hash_key),
                table_key: Some(&table.hash_key),
            },
            sharded,
        ),
    );
    let range_role = scope.role(table, &index.range_key);
    problems.add_some(
        format!("{path}.rangeKey"),
        rules::index_range_key(
            syntax,
            IndexKey {
                index: &index.name,
                key: &index.range_key,
                role: range_role,
                table_key: Some(&table.range_key),
            },
            unsharded,
        ),
    );
    if range_role == Some(Role::Transcoded)
        && let Some(property) = scope.property(&index.range_key)
    {
        problems.add_some(
            format!("{path}.rangeKey"),
            rules::index_range_key_type(
                &index.name,
                &index.range_key,
                property.transcode.name(),
                property.transcode.key_type().is_some(),
            ),
        );
    }
}

/// A multi-attribute key: 1 to 4 attributes a side, each once, each a stored property (the
/// table hash key only as the shard attribute leading a sharded key).
fn check_multi_key(
    table: &TableModel,
    scope: &Scope<'_>,
    index: &Index,
    multi: &MultiKey,
    problems: &mut Problems,
) {
    let syntax = Syntax::Config;
    let path = scope.index_path(index);
    for (side, parts, key) in [
        (KeySide::Partition, &multi.hash, "hashKey"),
        (KeySide::Sort, &multi.range, "rangeKey"),
    ] {
        problems.add_some(
            format!("{path}.{key}"),
            rules::multi_key_arity(syntax, &index.name, side, parts.len(), multi.sharded),
        );
    }
    let attributes: Vec<(&str, String)> = multi
        .hash
        .iter()
        .enumerate()
        .map(|(i, p)| (&*p.name, format!("{path}.hashKey.{i}")))
        .chain(
            multi
                .range
                .iter()
                .enumerate()
                .map(|(i, p)| (&*p.name, format!("{path}.rangeKey.{i}"))),
        )
        .collect();
    let names: Vec<&str> = attributes.iter().map(|(n, _)| *n).collect();
    for (i, problem) in rules::multi_key_attributes_unique(&index.name, &names) {
        problems.add(attributes[i].1.clone(), problem);
    }
    for (i, (name, at)) in attributes.iter().enumerate() {
        problems.add_some(
            at.clone(),
            rules::multi_key_attribute_role(
                syntax,
                &index.name,
                name,
                scope.role(table, name),
                multi.sharded && i == 0,
            ),
        );
    }
}

// =============================================================================================
// across entities: the `const fn` rules the derive evaluates in `const` assertions

fn check_across_entities(entities: &[EntityModel], layout: &Layout<'_>, problems: &mut Problems) {
    // entity tokens are unique (reported on the later entity)
    for (j, entity) in entities.iter().enumerate() {
        if entities[..j].iter().any(|e| rules::same_token(e, entity)) {
            problems.add(
                join("entities", &entity.token),
                rules::duplicate_token(Syntax::Config, &entity.token, &entity.token),
            );
        }
    }
    // one index name is one GSI (reported on the later entity, once per index name)
    if let Layout::PerEntity = layout {
        for (j, later) in entities.iter().enumerate() {
            let mut reported = HashSet::new();
            for earlier in &entities[..j] {
                if earlier.token == later.token {
                    continue; // the duplicate token is reported
                }
                if let Some(conflict) = rules::index_conflict(later, earlier) {
                    let name = conflict.name();
                    if reported.insert(name) {
                        problems.add(
                            join(&join(&join("entities", &later.token), "indexes"), name),
                            rules::problem(
                                ConfigRule::IndexDeclarationsAgree,
                                &rules::index_conflict_message(
                                    conflict,
                                    &later.token,
                                    &earlier.token,
                                ),
                            ),
                        );
                    }
                }
            }
        }
    }
    // at most 20 GSIs
    let lists: Vec<&[Index]> = match layout {
        Layout::Global(globals) => vec![globals.indexes],
        Layout::PerEntity => entities.iter().map(|e| &*e.indexes).collect(),
    };
    if let (Some(message), Some((e, i))) = (
        rules::index_count_message("", &lists),
        rules::first_index_over_limit(&lists),
    ) {
        let name = &lists[e][i].name;
        let path = match layout {
            Layout::Global(_) => join("indexes", name),
            Layout::PerEntity => join(
                &join(&join("entities", &entities[e].token), "indexes"),
                name,
            ),
        };
        problems.add(path, rules::problem(ConfigRule::IndexCount, &message));
    }
}

/// The problem of an unknown key in a JSON configuration, with the known key it most likely
/// misspells (shared by the TypeScript loader and the schema file's reader).
pub(crate) fn unknown_key_message(key: &str, known: &[&str]) -> String {
    match closest(key, known) {
        Some(suggestion) => format!("unknown key `{key}`; did you mean `{suggestion}`?"),
        None => format!(
            "unknown key `{key}`; the known keys here are {}",
            list(known.iter().copied())
        ),
    }
}

/// The known key closest to `key` (ignoring case), if it is close enough to be a likely typo.
fn closest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    let key = key.to_lowercase();
    known
        .iter()
        .map(|k| (edit_distance(&key, &k.to_lowercase()), *k))
        .filter(|(distance, k)| *distance <= (k.len() / 3).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, k)| k)
}

/// The Levenshtein distance between two strings, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}
