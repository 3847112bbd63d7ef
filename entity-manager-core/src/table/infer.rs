//! Which profile made a table's keys, read from its records: the keys of each sampled record
//! are made again under every [`Profile`] and compared with the stored ones. A store that
//! meets a table without a stamp decides from this whether it may write
//! (`crate::store::stamp`).

use std::fmt;
use std::sync::Arc;

use serde_dynamo::Item;

use crate::model::Profile;

/// How many records a store reads from a table without a stamp to infer its profile: up to
/// this many per entity of its configuration, in one scan page of at most
/// [`SAMPLE_MAX`] items.
pub const SAMPLE_PER_ENTITY: usize = 100;
/// The most records read for one inference (one scan page).
pub const SAMPLE_MAX: usize = 1000;

/// What a sample of a table's records shows about the profile that made their keys
/// ([`Schema::infer_profile`](crate::Schema::infer_profile)).
///
/// A record is *reproduced* by a profile when the configuration loaded with that profile
/// makes exactly its stored keys again from its properties: the table's hash key (with its
/// shard suffix), range key and every generated property of its entity. Records of entities
/// the configuration does not know, and records whose keys no profile can make (a missing
/// unique or timestamp property, a value that holds a delimiter), tell nothing and are only
/// counted.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Inference {
    /// No sampled record tells anything: an empty table, or no record of a known entity whose
    /// keys could be made.
    Empty {
        /// The records read.
        read: usize,
    },
    /// Every record that tells anything is reproduced by each of `profiles` (in
    /// [`Profile::ALL`] order) and by no other profile. One profile: the data shows it. Several:
    /// the sample cannot tell them apart (keys with no number and one shard, say), and any of
    /// them writes the keys the others find for records like these.
    Reproduced {
        /// The profiles that reproduce every telling record.
        profiles: Vec<Profile>,
        /// The records that told something.
        records: usize,
        /// The records read.
        read: usize,
    },
    /// No one profile reproduces every telling record: the records were written under
    /// another configuration (delimiters, shard bumps, generated properties, transcodes), or
    /// under several profiles.
    Unexplained {
        /// The records that told something.
        records: usize,
        /// How many of them the profile that reproduces most of them does not.
        unexplained: usize,
        /// The profiles that reproduce the most records, with how many.
        best: Vec<(Profile, usize)>,
        /// The entity and stored hash and range key of one record `best` does not reproduce.
        example: String,
        /// The records read.
        read: usize,
    },
}

impl Inference {
    /// The one profile the data shows, or `None` when the sample cannot tell (no telling
    /// record, several profiles reproduce it, or none does).
    pub fn shown(&self) -> Option<Profile> {
        match self {
            Self::Reproduced { profiles, .. } if profiles.len() == 1 => profiles.first().copied(),
            _ => None,
        }
    }

    /// Whether the keys of `profile` are those of every telling record (also when there is
    /// none).
    pub fn admits(&self, profile: Profile) -> bool {
        match self {
            Self::Empty { .. } => true,
            Self::Reproduced { profiles, .. } => profiles.contains(&profile),
            Self::Unexplained { .. } => false,
        }
    }

    /// How many records were read.
    pub fn read(&self) -> usize {
        match self {
            Self::Empty { read }
            | Self::Reproduced { read, .. }
            | Self::Unexplained { read, .. } => *read,
        }
    }
}

impl fmt::Display for Inference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |ps: &[Profile]| {
            ps.iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(" or ")
        };
        match self {
            Self::Empty { read } => write!(
                f,
                "no record tells how the keys are made ({read} items read: none of a known entity with keys to compare)"
            ),
            Self::Reproduced {
                profiles,
                records,
                read,
            } => {
                if profiles.len() == 1 {
                    write!(
                        f,
                        "the keys of {records} sampled records ({read} items read) are those of profile {} and no other",
                        names(profiles)
                    )
                } else {
                    write!(
                        f,
                        "the keys of {records} sampled records ({read} items read) are alike under profiles {}: the sample cannot tell them apart",
                        profiles
                            .iter()
                            .map(|p| format!("`{p}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            }
            Self::Unexplained {
                records,
                unexplained,
                best,
                example,
                read,
            } => {
                let best = best
                    .iter()
                    .map(|(p, n)| format!("`{p}` {n}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                write!(
                    f,
                    "no profile reproduces the keys of every sampled record: of {records} ({read} items read), the most any profile reproduces leaves {unexplained} out ({best}; one not reproduced: {example}); the records were written with another configuration (delimiters, shard bumps, generated properties, transcodes) or under several profiles"
                )
            }
        }
    }
}

/// The inference of a configuration, over a sample of records.
pub(crate) type InferFn = dyn Fn(&[Item]) -> Inference + Send + Sync;

/// The inference a store's definition was made with: the schema's
/// ([`TableDefinition::from_schema`](super::TableDefinition::from_schema) keeps
/// `Schema::infer_profile` of its schema here, the schema standing above the table). Definitions
/// are compared by their stamp, which fingerprints the configuration: two of these are always
/// equal.
#[derive(Clone)]
pub(crate) struct KeyModels {
    /// The inference of a sample of records.
    pub(crate) infer: Arc<InferFn>,
    /// How many entities the configuration has (the sample is sized by it).
    pub(crate) entities: usize,
}

impl PartialEq for KeyModels {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for KeyModels {}

impl fmt::Debug for KeyModels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyModels {{ entities: {} }}", self.entities)
    }
}
