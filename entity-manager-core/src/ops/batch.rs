//! Batches of puts and deletes (`BatchWriteItem`): no condition, no transaction.

use std::collections::HashSet;

use serde::Serialize;

use crate::entity::{Entity, schema_of, to_item};
use crate::error::{Error, Result};
use crate::keys::PrimaryKey;
use crate::store::{Store, WriteRequest};

use super::read::{candidates, key_item};

/// Puts many records; see [`EntityExt::put_many`](crate::EntityExt::put_many).
pub(crate) async fn put_many<E, S>(store: &S, records: &[E]) -> Result<()>
where
    E: Entity + Serialize,
    S: Store,
{
    let writes = records
        .iter()
        .map(|record| to_item(record).map(WriteRequest::Put))
        .collect::<Result<Vec<_>>>()?;
    write_batch::<E, S>(store, writes).await
}

/// Deletes the records with these unique values; see [`EntityExt::delete_many`](crate::EntityExt::delete_many).
pub(crate) async fn delete_many<E, S, I>(store: &S, ids: &[I]) -> Result<()>
where
    E: Entity,
    S: Store,
    I: Serialize,
{
    let schema = schema_of::<E>()?;
    // each key once, in the order given (a set beside the list: linear in the ids, where a
    // search of the list was quadratic)
    let mut keys: Vec<PrimaryKey> = Vec::new();
    let mut seen: HashSet<PrimaryKey> = HashSet::new();
    for id in ids {
        for key in candidates::<E, I>(schema, id)? {
            if seen.insert(key.clone()) {
                keys.push(key);
            }
        }
    }
    let writes = keys
        .iter()
        .map(|key| WriteRequest::Delete(key_item(schema, key)))
        .collect();
    write_batch::<E, S>(store, writes).await
}

/// Sends the writes of entity `E` in batches; a failure names the entity.
async fn write_batch<E: Entity, S: Store>(store: &S, writes: Vec<WriteRequest>) -> Result<()> {
    store
        .batch_write(writes)
        .await
        .map_err(|source| Error::BatchWrite {
            entity: E::model().token.to_string(),
            source: Box::new(source),
        })
}
