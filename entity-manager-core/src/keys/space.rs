//! The hash-key space: every hash key value a query over a time window must visit.

use serde_dynamo::{AttributeValue, Item};

use crate::error::{Error, Result};
use crate::keys::present;
use crate::model::ShardBump;
use crate::schema::EntitySchema;
use crate::shard;

/// The most hash keys one hash-key space may enumerate.
pub const MAX_HASH_KEY_SPACE: u128 = 1 << 20;

impl EntitySchema<'_> {
    /// Every hash key value a query over records created in `from..=to` must visit, for the
    /// table hash key or a sharded generated property (whose other components come from `item`).
    ///
    /// Bumps are visited in order, and each contributes its suffixes in ascending order. When
    /// `item` holds the unique value, each bump contributes only that record's shard. Under the
    /// `product` rule only the suffixes records can get are listed.
    pub fn hash_key_space(
        &self,
        hash_key_token: &str,
        item: &Item,
        from: u64,
        to: u64,
    ) -> Result<Vec<String>> {
        let generated = if hash_key_token == self.table.hash_key {
            None
        } else {
            let generated = self.generated(hash_key_token)?;
            if !generated.is_sharded() {
                return Err(Error::NotSharded {
                    entity: self.entity(),
                    property: hash_key_token.to_owned(),
                });
            }
            Some(generated)
        };
        let unique = self.unique_hash_text(item);
        let bumps: Vec<ShardBump> =
            shard::bumps_in_window(&self.model.shard_bumps, from, to).collect();
        let total: u128 = if unique.is_some() {
            bumps.len() as u128
        } else {
            bumps
                .iter()
                .map(|b| shard::shard_count(*b, self.table.shard_space))
                .fold(0u128, u128::saturating_add)
        };
        if total > MAX_HASH_KEY_SPACE {
            return Err(Error::ShardSpaceTooLarge {
                entity: self.entity(),
                shards: total,
                limit: MAX_HASH_KEY_SPACE,
            });
        }
        // total ≤ MAX_HASH_KEY_SPACE fits in usize
        let mut space = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
        for bump in bumps {
            match &unique {
                Some(text) => space.push(self.hash_key_value(&self.suffix_of(text, bump))),
                None => {
                    for shard in 0..shard::shard_count(bump, self.table.shard_space) {
                        space.push(self.hash_key_value(&shard::format_suffix(shard, bump)));
                    }
                }
            }
        }
        let Some(generated) = generated else {
            return Ok(space);
        };
        let mut with_hash_key = item.clone();
        space
            .into_iter()
            .map(|hash_key| {
                with_hash_key.insert(self.table.hash_key.to_string(), AttributeValue::S(hash_key));
                self.encode_generated_property(generated, &with_hash_key)?
                    .ok_or_else(|| Error::MissingComponent {
                        entity: self.entity(),
                        property: generated.name.to_string(),
                        component: generated
                            .components
                            .iter()
                            .find(|c| present(item, c).is_none())
                            .map_or_else(String::new, ToString::to_string),
                    })
            })
            .collect()
    }
}
