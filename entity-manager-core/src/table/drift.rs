//! The drift check: how a live table differs from its [`TableDefinition`].
//!
//! A store describes its live table as a [`LiveTable`] (`DynamoStore::describe_table` reads
//! `DescribeTable`, `DescribeTimeToLive`, `DescribeContinuousBackups` and `ListTagsOfResource`;
//! `MemoryStore::describe_table` returns the definition it was built with), and
//! [`TableDefinition::drift`] compares the two into a [`DriftReport`]: a typed list of
//! [`Drift`]s, empty when the table matches, plus the settings the endpoint could not report
//! (which are not compared, and never reported as matching).
//!
//! `DynamoDB` Local (3.3) cannot report point-in-time recovery (`DescribeContinuousBackups` is
//! an unknown operation there) nor tags (`ListTagsOfResource` answers "Tagging is not currently
//! supported"): against it those two settings are [`DriftReport::unchecked`].

use std::collections::BTreeSet;
use std::fmt;

use crate::model::{Name, Projection};

use super::definition::key_type_name;
use super::definition::{Billing, Capacity, KeyAttribute, StreamView, TableDefinition};
use crate::key_type::KeyType;

/// A table as a store found it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LiveTable {
    /// The live table as a definition. Settings listed in `unreported` hold their defaults
    /// there and are not compared.
    pub definition: TableDefinition,
    /// The settings the endpoint could not report.
    pub unreported: Vec<Setting>,
}

impl LiveTable {
    /// A live table of which every setting was reported.
    pub fn new(definition: TableDefinition) -> Self {
        Self {
            definition,
            unreported: Vec::new(),
        }
    }

    /// Marks a setting as not reported by the endpoint.
    #[must_use]
    pub fn with_unreported(mut self, setting: Setting) -> Self {
        if !self.unreported.contains(&setting) {
            self.unreported.push(setting);
        }
        self
    }

    fn reported(&self, setting: Setting) -> bool {
        !self.unreported.contains(&setting)
    }
}

/// A setting of a table that an endpoint may be unable to report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Setting {
    /// Time to Live (`DescribeTimeToLive`).
    TimeToLive,
    /// Point-in-time recovery (`DescribeContinuousBackups`).
    PointInTimeRecovery,
    /// Tags (`ListTagsOfResource`).
    Tags,
}

impl Setting {
    /// A kebab-case name: `ttl`, `point-in-time-recovery`, `tags`.
    pub fn name(self) -> &'static str {
        match self {
            Self::TimeToLive => "ttl",
            Self::PointInTimeRecovery => "point-in-time-recovery",
            Self::Tags => "tags",
        }
    }
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::TimeToLive => "Time to Live",
            Self::PointInTimeRecovery => "point-in-time recovery",
            Self::Tags => "tags",
        })
    }
}

/// Global or local secondary index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexKind {
    /// A GSI.
    Global,
    /// An LSI.
    Local,
}

impl fmt::Display for IndexKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Global => "GSI",
            Self::Local => "LSI",
        })
    }
}

/// One difference between a table definition and the live table. `expected` is the
/// definition's value, `actual` the live table's.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Drift {
    /// An index of the definition that the live table lacks.
    MissingIndex {
        /// GSI or LSI.
        kind: IndexKind,
        /// The index name.
        index: String,
    },
    /// An index of the live table that the definition does not have.
    ExtraIndex {
        /// GSI or LSI.
        kind: IndexKind,
        /// The index name.
        index: String,
    },
    /// Different key attribute names or order, of the table (`index: None`) or of an index
    /// (every partition and sort attribute of a multi-attribute key is compared).
    KeySchema {
        /// The index, or `None` for the table.
        index: Option<String>,
        /// The definition's key attributes.
        expected: KeySchemaNames,
        /// The live key attributes.
        actual: KeySchemaNames,
    },
    /// A key attribute of another type.
    KeyAttributeType {
        /// The attribute.
        attribute: String,
        /// The definition's type.
        expected: KeyType,
        /// The live type.
        actual: KeyType,
    },
    /// An index projecting other attributes. Both sides are normalised: `Include` lists only
    /// non-key attributes, sorted, and an `Include` of key attributes only is `KeysOnly`.
    Projection {
        /// GSI or LSI.
        kind: IndexKind,
        /// The index.
        index: String,
        /// The definition's projection.
        expected: Projection,
        /// The live projection.
        actual: Projection,
    },
    /// TTL on or off, or on another attribute.
    TimeToLive {
        /// The definition's TTL attribute.
        expected: Option<String>,
        /// The live TTL attribute.
        actual: Option<String>,
    },
    /// The stream on or off, or of another view type.
    Stream {
        /// The definition's stream.
        expected: Option<StreamView>,
        /// The live stream.
        actual: Option<StreamView>,
    },
    /// Point-in-time recovery on or off.
    PointInTimeRecovery {
        /// The definition's setting.
        expected: bool,
        /// The live setting.
        actual: bool,
    },
    /// Deletion protection on or off.
    DeletionProtection {
        /// The definition's setting.
        expected: bool,
        /// The live setting.
        actual: bool,
    },
    /// Another billing mode, or another provisioned capacity of the table.
    Billing {
        /// The definition's billing.
        expected: Billing,
        /// The live billing.
        actual: Billing,
    },
    /// Another provisioned capacity of a GSI (reported when both sides are provisioned).
    IndexCapacity {
        /// The index.
        index: String,
        /// The definition's capacity (the index's own, else the table's).
        expected: Option<Capacity>,
        /// The live capacity.
        actual: Option<Capacity>,
    },
    /// A tag missing, extra or with another value.
    Tag {
        /// The tag key.
        key: String,
        /// The definition's value.
        expected: Option<String>,
        /// The live value.
        actual: Option<String>,
    },
}

/// The attribute names of a key schema, in key order: one partition and one sort attribute
/// for a classic key (the sort attribute's name is empty when there is none), up to four of
/// each for a multi-attribute GSI key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeySchemaNames {
    /// The partition (`HASH`) attributes.
    pub hash: Vec<String>,
    /// The sort (`RANGE`) attributes.
    pub range: Vec<String>,
}

impl KeySchemaNames {
    /// The names of these partition and sort attributes.
    pub fn new<'a>(
        hash: impl IntoIterator<Item = &'a KeyAttribute>,
        range: impl IntoIterator<Item = &'a KeyAttribute>,
    ) -> Self {
        Self {
            hash: hash.into_iter().map(|k| k.name.clone()).collect(),
            range: range.into_iter().map(|k| k.name.clone()).collect(),
        }
    }
}

impl fmt::Display for KeySchemaNames {
    /// `hash/range`, or `(a, b)/(c, d)` where a side has several attributes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = |names: &[String]| match names {
            [one] => format!("`{one}`"),
            _ => format!(
                "({})",
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        write!(f, "{}/{}", side(&self.hash), side(&self.range))
    }
}

impl Drift {
    /// A kebab-case name of the kind of difference (`missing-index`, `projection`, `ttl`, …),
    /// for machine-readable output.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::MissingIndex { .. } => "missing-index",
            Self::ExtraIndex { .. } => "extra-index",
            Self::KeySchema { .. } => "key-schema",
            Self::KeyAttributeType { .. } => "key-attribute-type",
            Self::Projection { .. } => "projection",
            Self::TimeToLive { .. } => "ttl",
            Self::Stream { .. } => "stream",
            Self::PointInTimeRecovery { .. } => "point-in-time-recovery",
            Self::DeletionProtection { .. } => "deletion-protection",
            Self::Billing { .. } => "billing",
            Self::IndexCapacity { .. } => "index-capacity",
            Self::Tag { .. } => "tag",
        }
    }
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

fn opt<T: fmt::Display>(v: Option<&T>) -> String {
    v.map_or_else(|| "none".to_owned(), |v| format!("`{v}`"))
}

fn projection_text(p: &Projection) -> String {
    match p {
        Projection::All => "ALL".to_owned(),
        Projection::KeysOnly => "KEYS_ONLY".to_owned(),
        Projection::Include(names) => format!("INCLUDE {}", names.join(", ")),
    }
}

fn billing_text(b: Billing) -> String {
    match b {
        Billing::PayPerRequest => "on demand".to_owned(),
        Billing::Provisioned { read, write } => format!("provisioned {read} read / {write} write"),
    }
}

fn capacity_text(c: Option<Capacity>) -> String {
    c.map_or_else(
        || "none".to_owned(),
        |c| format!("{} read / {} write", c.read, c.write),
    )
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingIndex { kind, index } => {
                write!(f, "{kind} `{index}` is defined but missing from the table")
            }
            Self::ExtraIndex { kind, index } => {
                write!(f, "{kind} `{index}` exists on the table but is not defined")
            }
            Self::KeySchema {
                index,
                expected,
                actual,
            } => {
                let of = index
                    .as_ref()
                    .map_or_else(|| "the table".to_owned(), |i| format!("index `{i}`"));
                write!(
                    f,
                    "{of} is keyed by {actual}, the definition says {expected}"
                )
            }
            Self::KeyAttributeType {
                attribute,
                expected,
                actual,
            } => write!(
                f,
                "key attribute `{attribute}` is of type {}, the definition says {}",
                key_type_name(*actual),
                key_type_name(*expected)
            ),
            Self::Projection {
                kind,
                index,
                expected,
                actual,
            } => write!(
                f,
                "{kind} `{index}` projects {}, the definition says {}",
                projection_text(actual),
                projection_text(expected)
            ),
            Self::TimeToLive { expected, actual } => write!(
                f,
                "TTL attribute is {}, the definition says {}",
                opt(actual.as_ref()),
                opt(expected.as_ref())
            ),
            Self::Stream { expected, actual } => write!(
                f,
                "stream is {}, the definition says {}",
                actual.map_or("off", StreamView::as_str),
                expected.map_or("off", StreamView::as_str)
            ),
            Self::PointInTimeRecovery { expected, actual } => write!(
                f,
                "point-in-time recovery is {}, the definition says {}",
                on_off(*actual),
                on_off(*expected)
            ),
            Self::DeletionProtection { expected, actual } => write!(
                f,
                "deletion protection is {}, the definition says {}",
                on_off(*actual),
                on_off(*expected)
            ),
            Self::Billing { expected, actual } => write!(
                f,
                "billing is {}, the definition says {}",
                billing_text(*actual),
                billing_text(*expected)
            ),
            Self::IndexCapacity {
                index,
                expected,
                actual,
            } => write!(
                f,
                "GSI `{index}` has capacity {}, the definition says {}",
                capacity_text(*actual),
                capacity_text(*expected)
            ),
            Self::Tag {
                key,
                expected,
                actual,
            } => write!(
                f,
                "tag `{key}` is {}, the definition says {}",
                opt(actual.as_ref()),
                opt(expected.as_ref())
            ),
        }
    }
}

/// The result of a drift check.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DriftReport {
    /// Every difference, in a fixed order: table keys, key types, GSIs, LSIs, billing, TTL,
    /// stream, point-in-time recovery, deletion protection, tags.
    pub drifts: Vec<Drift>,
    /// The settings the endpoint could not report, so not compared.
    pub unchecked: Vec<Setting>,
}

impl DriftReport {
    /// Whether no difference was found (unchecked settings aside).
    pub fn is_clean(&self) -> bool {
        self.drifts.is_empty()
    }
}

/// A projection as `DynamoDB` stores it: `Include` of sorted non-key attributes only.
fn normalize(def: &TableDefinition, keys: &[&KeyAttribute], projection: &Projection) -> Projection {
    match def.projection_type_of(keys, projection) {
        "ALL" => Projection::All,
        "INCLUDE" => {
            let names: BTreeSet<String> = def
                .non_key_of(keys, projection)
                .unwrap_or_default()
                .into_iter()
                .collect();
            Projection::Include(names.into_iter().map(Name::from).collect::<Vec<_>>().into())
        }
        _ => Projection::KeysOnly,
    }
}

/// One index of either kind, for the comparison.
struct IndexView<'a> {
    name: &'a str,
    /// Every partition attribute, then every sort attribute.
    keys: Vec<&'a KeyAttribute>,
    names: KeySchemaNames,
    projection: &'a Projection,
}

fn global_views(d: &TableDefinition) -> Vec<IndexView<'_>> {
    d.indexes
        .iter()
        .map(|g| IndexView {
            name: &g.name,
            keys: g.key_attributes(),
            names: KeySchemaNames::new(g.hash_keys(), g.range_keys()),
            projection: &g.projection,
        })
        .collect()
}

fn local_views(d: &TableDefinition) -> Vec<IndexView<'_>> {
    d.local_indexes
        .iter()
        .map(|l| IndexView {
            name: &l.name,
            keys: vec![&l.hash_key, &l.range_key],
            names: KeySchemaNames::new([&l.hash_key], [&l.range_key]),
            projection: &l.projection,
        })
        .collect()
}

fn compare_indexes(
    kind: IndexKind,
    (expected_def, expected): (&TableDefinition, &[IndexView<'_>]),
    (live_def, live): (&TableDefinition, &[IndexView<'_>]),
    out: &mut Vec<Drift>,
) {
    for e in expected {
        let Some(l) = live.iter().find(|l| l.name == e.name) else {
            out.push(Drift::MissingIndex {
                kind,
                index: e.name.to_owned(),
            });
            continue;
        };
        if e.names != l.names {
            out.push(Drift::KeySchema {
                index: Some(e.name.to_owned()),
                expected: e.names.clone(),
                actual: l.names.clone(),
            });
        }
        let expected_projection = normalize(expected_def, &e.keys, e.projection);
        let live_projection = normalize(live_def, &l.keys, l.projection);
        if expected_projection != live_projection {
            out.push(Drift::Projection {
                kind,
                index: e.name.to_owned(),
                expected: expected_projection,
                actual: live_projection,
            });
        }
    }
    for l in live {
        if !expected.iter().any(|e| e.name == l.name) {
            out.push(Drift::ExtraIndex {
                kind,
                index: l.name.to_owned(),
            });
        }
    }
}

impl TableDefinition {
    /// How `live` differs from this definition: an empty [`DriftReport::drifts`] when it
    /// matches. Settings `live` could not report are listed in [`DriftReport::unchecked`]
    /// and not compared.
    ///
    /// ```
    /// use entity_manager_core::store::{
    ///     Drift, GlobalIndex, KeyType, LiveTable, TableDefinition,
    /// };
    ///
    /// let defined = TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::S))
    ///     .with_index(GlobalIndex::new("byOwner", ("owner", KeyType::S), ("sk", KeyType::S)))
    ///     .with_ttl("expiresAt");
    /// let live = LiveTable::new(TableDefinition::new(("pk", KeyType::S), ("sk", KeyType::S)));
    /// let report = defined.drift(&live);
    /// assert_eq!(report.drifts.len(), 2);
    /// assert_eq!(report.drifts[0].kind(), "missing-index");
    /// assert!(matches!(report.drifts[1], Drift::TimeToLive { actual: None, .. }));
    /// assert!(defined.drift(&LiveTable::new(defined.clone())).is_clean());
    /// ```
    pub fn drift(&self, live: &LiveTable) -> DriftReport {
        let actual = &live.definition;
        let mut out = Vec::new();
        if self.hash_key.name != actual.hash_key.name
            || self.range_key.name != actual.range_key.name
        {
            out.push(Drift::KeySchema {
                index: None,
                expected: KeySchemaNames::new([&self.hash_key], [&self.range_key]),
                actual: KeySchemaNames::new([&actual.hash_key], [&actual.range_key]),
            });
        }
        // Key types: every attribute both sides define. Inconsistent definitions (which
        // `validate` rejects) are compared attribute by attribute as far as they go.
        let types = |d: &TableDefinition| -> Vec<KeyAttribute> {
            let mut all = vec![d.hash_key.clone(), d.range_key.clone()];
            for g in &d.indexes {
                all.extend(g.key_attributes().into_iter().cloned());
            }
            for l in &d.local_indexes {
                all.extend([l.hash_key.clone(), l.range_key.clone()]);
            }
            let mut seen = BTreeSet::new();
            all.retain(|k| seen.insert(k.name.clone()));
            all
        };
        let live_types = types(actual);
        for e in types(self) {
            if let Some(l) = live_types.iter().find(|l| l.name == e.name)
                && l.key_type != e.key_type
            {
                out.push(Drift::KeyAttributeType {
                    attribute: e.name.clone(),
                    expected: e.key_type,
                    actual: l.key_type,
                });
            }
        }
        compare_indexes(
            IndexKind::Global,
            (self, &global_views(self)),
            (actual, &global_views(actual)),
            &mut out,
        );
        compare_indexes(
            IndexKind::Local,
            (self, &local_views(self)),
            (actual, &local_views(actual)),
            &mut out,
        );
        self.setting_drifts(live, &mut out);
        let mut unchecked = live.unreported.clone();
        unchecked.sort_unstable();
        DriftReport {
            drifts: out,
            unchecked,
        }
    }

    /// Billing, capacities, TTL, stream, point-in-time recovery, deletion protection, tags.
    fn setting_drifts(&self, live: &LiveTable, out: &mut Vec<Drift>) {
        let actual = &live.definition;
        if self.billing != actual.billing {
            out.push(Drift::Billing {
                expected: self.billing,
                actual: actual.billing,
            });
        }
        if self.billing.capacity().is_some() && actual.billing.capacity().is_some() {
            for e in &self.indexes {
                if let Some(l) = actual.index(&e.name) {
                    let (expected, got) = (self.index_capacity(e), actual.index_capacity(l));
                    if expected != got {
                        out.push(Drift::IndexCapacity {
                            index: e.name.clone(),
                            expected,
                            actual: got,
                        });
                    }
                }
            }
        }
        if live.reported(Setting::TimeToLive) && self.ttl_attribute != actual.ttl_attribute {
            out.push(Drift::TimeToLive {
                expected: self.ttl_attribute.clone(),
                actual: actual.ttl_attribute.clone(),
            });
        }
        if self.stream != actual.stream {
            out.push(Drift::Stream {
                expected: self.stream,
                actual: actual.stream,
            });
        }
        if live.reported(Setting::PointInTimeRecovery)
            && self.point_in_time_recovery != actual.point_in_time_recovery
        {
            out.push(Drift::PointInTimeRecovery {
                expected: self.point_in_time_recovery,
                actual: actual.point_in_time_recovery,
            });
        }
        if self.deletion_protection != actual.deletion_protection {
            out.push(Drift::DeletionProtection {
                expected: self.deletion_protection,
                actual: actual.deletion_protection,
            });
        }
        if live.reported(Setting::Tags) {
            let keys: BTreeSet<&String> = self.tags.keys().chain(actual.tags.keys()).collect();
            for key in keys {
                let (e, l) = (self.tags.get(key), actual.tags.get(key));
                if e != l {
                    out.push(Drift::Tag {
                        key: key.clone(),
                        expected: e.cloned(),
                        actual: l.cloned(),
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::store::{GlobalIndex, LocalIndex};

    fn projection() -> impl Strategy<Value = Projection> {
        prop_oneof![
            Just(Projection::All),
            Just(Projection::KeysOnly),
            // Attributes that are sometimes keys (`hk`, `sk`): those do not count.
            proptest::sample::subsequence(vec!["a", "b", "c", "hk", "sk"], 0..=5).prop_map(
                |names| Projection::Include(
                    names.into_iter().map(Name::from).collect::<Vec<_>>().into()
                )
            ),
        ]
    }

    prop_compose! {
        fn definition()(
            gsis in proptest::collection::vec((any::<bool>(), projection(), proptest::option::of((1i64..4, 1i64..4)), 0u8..6), 3),
            lsis in proptest::collection::vec((any::<bool>(), projection()), 2),
            provisioned in proptest::option::of((1i64..4, 1i64..4)),
            ttl in proptest::option::of(prop_oneof![Just("ttl"), Just("expires")]),
            stream in proptest::option::of(proptest::sample::select(StreamView::ALL.to_vec())),
            pitr in any::<bool>(),
            protection in any::<bool>(),
            tags in proptest::collection::btree_map(prop_oneof![Just("a"), Just("b")], prop_oneof![Just("x"), Just("y")], 0..=2),
        ) -> TableDefinition {
            let mut def = TableDefinition::new(("hk", KeyType::S), ("sk", KeyType::S));
            for (i, (present, projection, capacity, shape)) in gsis.into_iter().enumerate() {
                if present {
                    let mut gsi = GlobalIndex::new(format!("gsi{i}"), ("g", KeyType::S), ("sk", KeyType::S))
                        .projection(projection);
                    // Multi-attribute keys: a second or third partition or sort attribute, so
                    // that keys differing only past their first attributes are compared.
                    gsi = match shape {
                        1 => gsi.with_hash_key(("g2", KeyType::S)),
                        2 => gsi.with_range_key(("n", KeyType::N)),
                        3 => gsi.with_hash_key(("g2", KeyType::S)).with_range_key(("n", KeyType::N)),
                        4 => gsi.with_range_key(("n", KeyType::N)).with_range_key(("b", KeyType::S)),
                        _ => gsi,
                    };
                    if let (Some(_), Some((r, w))) = (provisioned, capacity) {
                        gsi = gsi.capacity(Capacity::new(r, w));
                    }
                    def = def.with_index(gsi);
                }
            }
            for (i, (present, projection)) in lsis.into_iter().enumerate() {
                if present {
                    def = def.with_local_index(
                        LocalIndex::new(format!("lsi{i}"), ("hk", KeyType::S), (format!("l{i}"), KeyType::N))
                            .projection(projection),
                    );
                }
            }
            if let Some((read, write)) = provisioned {
                def = def.with_billing(Billing::Provisioned { read, write });
            }
            def.ttl_attribute = ttl.map(str::to_owned);
            def.stream = stream;
            def.point_in_time_recovery = pitr;
            def.deletion_protection = protection;
            for (k, v) in tags {
                def = def.with_tag(k, v);
            }
            def
        }
    }

    /// The drift of `b` against `a`, mirrored: what `a.drift(b)` should be, up to order.
    fn mirrored(d: &Drift) -> Drift {
        match d.clone() {
            Drift::MissingIndex { kind, index } => Drift::ExtraIndex { kind, index },
            Drift::ExtraIndex { kind, index } => Drift::MissingIndex { kind, index },
            Drift::KeySchema {
                index,
                expected,
                actual,
            } => Drift::KeySchema {
                index,
                expected: actual,
                actual: expected,
            },
            Drift::KeyAttributeType {
                attribute,
                expected,
                actual,
            } => Drift::KeyAttributeType {
                attribute,
                expected: actual,
                actual: expected,
            },
            Drift::Projection {
                kind,
                index,
                expected,
                actual,
            } => Drift::Projection {
                kind,
                index,
                expected: actual,
                actual: expected,
            },
            Drift::TimeToLive { expected, actual } => Drift::TimeToLive {
                expected: actual,
                actual: expected,
            },
            Drift::Stream { expected, actual } => Drift::Stream {
                expected: actual,
                actual: expected,
            },
            Drift::PointInTimeRecovery { expected, actual } => Drift::PointInTimeRecovery {
                expected: actual,
                actual: expected,
            },
            Drift::DeletionProtection { expected, actual } => Drift::DeletionProtection {
                expected: actual,
                actual: expected,
            },
            Drift::Billing { expected, actual } => Drift::Billing {
                expected: actual,
                actual: expected,
            },
            Drift::IndexCapacity {
                index,
                expected,
                actual,
            } => Drift::IndexCapacity {
                index,
                expected: actual,
                actual: expected,
            },
            Drift::Tag {
                key,
                expected,
                actual,
            } => Drift::Tag {
                key,
                expected: actual,
                actual: expected,
            },
        }
    }

    fn sorted(mut v: Vec<Drift>) -> Vec<String> {
        let mut out: Vec<String> = v.drain(..).map(|d| format!("{d:?}")).collect();
        out.sort();
        out
    }

    proptest! {
        /// A table that is its definition has no drift, whatever the definition.
        #[test]
        fn a_definition_does_not_drift_from_itself(def in definition()) {
            prop_assert_eq!(def.drift(&LiveTable::new(def.clone())).drifts, vec![]);
        }

        /// Comparing the other way round finds the same differences, mirrored.
        #[test]
        fn drift_is_symmetric(a in definition(), b in definition()) {
            let ab = a.drift(&LiveTable::new(b.clone())).drifts;
            let ba = b.drift(&LiveTable::new(a.clone())).drifts;
            prop_assert_eq!(sorted(ab.iter().map(mirrored).collect()), sorted(ba));
        }

        /// Drift is empty exactly when the definitions describe the same table: equal after
        /// ordering indexes by name, normalising projections and resolving GSI capacities.
        #[test]
        fn no_drift_means_the_same_table(a in definition(), b in definition()) {
            let canonical = |d: &TableDefinition| {
                let mut d = d.clone();
                let provisioned = d.billing.capacity().is_some();
                let globals: Vec<GlobalIndex> = d.indexes.iter().map(|g| {
                    let mut g = g.clone();
                    g.projection = normalize(&d, &g.key_attributes(), &g.projection);
                    g.capacity = if provisioned { d.index_capacity(&g) } else { None };
                    g
                }).collect();
                let locals: Vec<LocalIndex> = d.local_indexes.iter().map(|l| {
                    let mut l = l.clone();
                    l.projection = normalize(&d, &[&l.hash_key, &l.range_key], &l.projection);
                    l
                }).collect();
                d.indexes = globals;
                d.local_indexes = locals;
                d.indexes.sort_by(|x, y| x.name.cmp(&y.name));
                d.local_indexes.sort_by(|x, y| x.name.cmp(&y.name));
                d
            };
            prop_assert_eq!(
                a.drift(&LiveTable::new(b.clone())).is_clean(),
                canonical(&a) == canonical(&b)
            );
        }

        /// Unreported settings are never compared, and are listed.
        #[test]
        fn unreported_settings_are_not_compared(a in definition(), b in definition()) {
            let live = LiveTable::new(b)
                .with_unreported(Setting::Tags)
                .with_unreported(Setting::PointInTimeRecovery)
                .with_unreported(Setting::TimeToLive);
            let report = a.drift(&live);
            let compared = report.drifts.iter().any(|d| {
                matches!(
                    d,
                    Drift::Tag { .. } | Drift::PointInTimeRecovery { .. } | Drift::TimeToLive { .. }
                )
            });
            prop_assert!(!compared);
            prop_assert_eq!(
                report.unchecked,
                vec![Setting::TimeToLive, Setting::PointInTimeRecovery, Setting::Tags]
            );
        }
    }
}
