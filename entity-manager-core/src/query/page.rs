//! What a page of a query returns and what it cost: below the engine and every builder.

use serde_dynamo::Item;

/// What one page of a query cost and returned.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueryStats {
    /// The (index, shard) pairs the query spans.
    pub shards: usize,
    /// Shard queries made for this page.
    pub shard_queries: usize,
    /// Items the shard queries returned.
    pub items_read: usize,
    /// Items on the page.
    pub items_returned: usize,
    /// Items dropped because another index (or page) already returned the record.
    pub duplicates_removed: usize,
    /// Read capacity units the shard queries consumed (each asks the store for them: `DynamoDB`
    /// reports them, `MemoryStore` computes them by `DynamoDB`'s rule; a store that reports
    /// none adds nothing).
    pub consumed_capacity: f64,
}

impl QueryStats {
    pub(crate) fn add(&mut self, other: &Self) {
        self.shard_queries += other.shard_queries;
        self.items_read += other.items_read;
        self.items_returned += other.items_returned;
        self.duplicates_removed += other.duplicates_removed;
        self.consumed_capacity += other.consumed_capacity;
    }
}

/// One page of results.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryPageResult {
    /// The items, in the query's order.
    pub items: Vec<Item>,
    /// The token of the next page; `None` when every shard is exhausted.
    pub next: Option<String>,
    /// What the page cost.
    pub stats: QueryStats,
}
