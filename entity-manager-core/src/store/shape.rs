//! The shapes of requests that every store checks first, with the same verdict and words: the
//! key condition of a query against its (multi-attribute) key, and the operations of a
//! transaction.

use super::{Expect, MAX_SCAN_SEGMENTS, QueryPage, ScanPage, StoreError, TransactWrite};
use crate::table::KeyAttribute;

/// Checks the shape of a query's key condition against the key it queries, as every store does
/// before anything else: one value per partition attribute, and no more sort conditions than
/// sort attributes (an equality prefix, then at most one condition).
pub(super) fn check_key_condition(
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

/// The most operations one transaction may hold.
pub(super) const MAX_TRANSACTION: usize = 100;

/// Rejects what no store accepts in a transaction: no operations, more than 100, a condition
/// check without a condition.
pub(super) fn check_transaction_shape(writes: &[TransactWrite]) -> Result<(), StoreError> {
    const OP: &str = "TransactWriteItems";
    if writes.is_empty() || writes.len() > MAX_TRANSACTION {
        return Err(StoreError::validation(
            OP,
            format!(
                "a transaction holds 1 to {MAX_TRANSACTION} operations, not {}",
                writes.len()
            ),
        )
        .with_code("ValidationException"));
    }
    if writes.iter().any(|w| {
        matches!(
            w,
            TransactWrite::Check {
                expect: Expect::Any,
                ..
            }
        )
    }) {
        return Err(StoreError::validation(
            OP,
            "a condition check needs a condition: use Expect::Absent or Expect::Present",
        )
        .with_code("ValidationException"));
    }
    Ok(())
}

impl ScanPage {
    /// Checks what no store accepts: a segment count out of range, a segment outside it,
    /// limit 0.
    pub(crate) fn check(&self) -> Result<(), StoreError> {
        const OP: &str = "Scan";
        if self.total_segments == 0 || self.total_segments > MAX_SCAN_SEGMENTS {
            return Err(StoreError::validation(
                OP,
                format!(
                    "TotalSegments must be between 1 and {MAX_SCAN_SEGMENTS}, got {}",
                    self.total_segments
                ),
            )
            .with_code("ValidationException"));
        }
        if self.segment >= self.total_segments {
            return Err(StoreError::validation(
                OP,
                format!(
                    "Segment must be less than TotalSegments: segment {} of {}",
                    self.segment, self.total_segments
                ),
            )
            .with_code("ValidationException"));
        }
        if self.limit == Some(0) {
            return Err(
                StoreError::validation(OP, "Limit must be greater than or equal to 1")
                    .with_code("ValidationException"),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_dynamo::Item;

    use super::*;

    fn checks(n: usize, expect: impl Fn() -> Expect) -> Vec<TransactWrite> {
        (0..n)
            .map(|_| TransactWrite::Check {
                key: Item::default(),
                expect: expect(),
            })
            .collect()
    }

    /// The rule both stores apply before anything else (`MemoryStore` and `DynamoStore` call
    /// this one function): 1 to 100 operations, and a condition on every check.
    #[test]
    fn a_transaction_holds_1_to_100_operations_each_check_with_a_condition() {
        let refused = |writes: &[TransactWrite]| {
            check_transaction_shape(writes)
                .is_err_and(|e| e.is_validation() && e.code() == Some("ValidationException"))
        };
        assert!(refused(&[]));
        assert!(check_transaction_shape(&checks(1, || Expect::Present)).is_ok());
        assert!(check_transaction_shape(&checks(MAX_TRANSACTION, || Expect::Absent)).is_ok());
        assert!(refused(&checks(MAX_TRANSACTION + 1, || Expect::Present)));
        assert!(refused(&checks(1, || Expect::Any)));
    }
}
