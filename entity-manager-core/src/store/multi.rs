//! Multi-attribute GSI keys in the table definition: the [`GlobalIndex`] of a model index with a
//! [`MultiKey`].

use crate::model::{Index, MultiKey, TableModel};

use super::table::{GlobalIndex, KeyAttribute};
use super::{QueryPage, StoreError};

/// The GSI of a multi-attribute index: its attributes with their natural types, in key order.
/// An empty side (refused by validation) falls back to the table key of that side, so that a
/// hand-built model never yields a GSI without keys.
pub(crate) fn global_index(table: &TableModel, index: &Index, multi: &MultiKey) -> GlobalIndex {
    let attribute = |p: &crate::model::IndexAttribute| KeyAttribute::new(&*p.name, p.key_type);
    let mut hash = multi.hash.iter().map(attribute);
    let mut range = multi.range.iter().map(attribute);
    let first_hash = hash
        .next()
        .unwrap_or_else(|| KeyAttribute::new(&*table.hash_key, super::KeyType::S));
    let first_range = range
        .next()
        .unwrap_or_else(|| KeyAttribute::new(&*table.range_key, super::KeyType::S));
    let mut gsi = GlobalIndex::new(index.name.to_string(), first_hash, first_range)
        .projection(index.projection.clone());
    gsi.more_hash_keys = hash.collect();
    gsi.more_range_keys = range.collect();
    gsi
}

/// Checks the shape of a query's key condition against the key it queries, as every store does
/// before anything else: one value per partition attribute, and no more sort conditions than
/// sort attributes (an equality prefix, then at most one condition).
pub(crate) fn check_key_condition(
    request: &QueryPage,
    hash: &[&KeyAttribute],
    range: &[&KeyAttribute],
) -> Result<(), StoreError> {
    const OP: &str = "Query";
    let given = 1 + request.more_hash_keys.len();
    if given != hash.len() {
        return Err(StoreError::validation(
            OP,
            format!(
                "Query condition missed key schema element: the key has {} partition attributes ({}), and the query gives {given} values; give one value for each",
                hash.len(),
                hash.iter()
                    .map(|a| format!("`{}`", a.name))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
        )
        .with_code("ValidationException"));
    }
    let needed = request.range_prefix.len() + usize::from(request.range.is_some());
    if needed > range.len() {
        return Err(StoreError::validation(
            OP,
            format!(
                "Query key condition not supported: the key has {} sort attributes, and the query conditions {needed}; condition the sort attributes left to right, at most one each",
                range.len()
            ),
        )
        .with_code("ValidationException"));
    }
    Ok(())
}
