//! The key condition of a query on a multi-attribute GSI key, checked as every store checks it.

use super::{QueryPage, StoreError};
use crate::table::KeyAttribute;

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
