//! The counts and findings of bulk jobs, shared by the jobs ([`migrate`](crate::migrate),
//! [`audit`](crate::audit)) and their journals ([`job`](crate::job)), which sit below them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The counts of one entity, for a run or (what would happen) for a dry run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EntityCounts {
    /// Records of the entity the scan found.
    pub scanned: u64,
    /// Records whose migrated form is the record itself: nothing to write.
    pub unchanged: u64,
    /// Records already in B's shape (migrated by an earlier run): left alone.
    pub migrated_before: u64,
    /// Records rewritten in place (same primary key).
    pub rewritten: u64,
    /// Records moved to a new primary key (old item deleted in the same transaction).
    pub moved: u64,
    /// Records that cannot be migrated (dry run only: a run stops at the first one).
    pub failed: u64,
    /// Writes that found the record changed since it was read (by another client): the
    /// record was read again (from the failed condition), planned again and written under a
    /// new condition. Each record is counted once, by its final outcome.
    pub conflicts: u64,
    /// Records deleted by another client between the scan and their write: nothing left to
    /// migrate.
    pub vanished: u64,
}

impl EntityCounts {
    /// Records written (or, in a dry run, to write): rewritten plus moved.
    pub fn written(&self) -> u64 {
        self.rewritten + self.moved
    }

    /// Adds `other` to these counts.
    pub fn add(&mut self, other: &Self) {
        self.scanned += other.scanned;
        self.unchanged += other.unchanged;
        self.migrated_before += other.migrated_before;
        self.rewritten += other.rewritten;
        self.moved += other.moved;
        self.failed += other.failed;
        self.conflicts += other.conflicts;
        self.vanished += other.vanished;
    }
}

/// The counts of a migration: per entity (by A's token), and the items of no migrated entity.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MigrateCounts {
    /// Per entity, by A's token.
    pub entities: BTreeMap<String, EntityCounts>,
    /// Items the scan found that belong to no migrated entity (left alone).
    pub other: u64,
}

impl MigrateCounts {
    /// Whether nothing is counted.
    pub fn is_empty(&self) -> bool {
        self.other == 0
            && self
                .entities
                .values()
                .all(|c| *c == EntityCounts::default())
    }

    /// Adds `other` to these counts (for example the counts of an earlier, interrupted run).
    pub fn add(&mut self, other: &Self) {
        for (entity, counts) in &other.entities {
            self.entities.entry(entity.clone()).or_default().add(counts);
        }
        self.other += other.other;
    }

    /// The sum over every entity.
    pub fn total(&self) -> EntityCounts {
        let mut total = EntityCounts::default();
        for counts in self.entities.values() {
            total.add(counts);
        }
        total
    }
}

/// A record whose stored hash key disagrees with the current schedule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Misplaced {
    /// The entity.
    pub entity: String,
    /// The unique value, as it is hashed (a number in its decimal form).
    pub unique: String,
    /// The stored range key.
    pub range_key: String,
    /// The stored hash key.
    pub stored: String,
    /// The hash key the schedule gives the record.
    pub expected: String,
}

/// A record of an audited entity whose hash key cannot be computed (no unique value, no
/// readable timestamp).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Unreadable {
    /// The entity.
    pub entity: String,
    /// The stored hash key.
    pub hash_key: String,
    /// The stored range key.
    pub range_key: String,
    /// Why the hash key cannot be computed.
    pub reason: String,
}
