//! The users of the query benches (`query.rs`, `query_ts.rs`): the fixture of
//! `tests/tests/query_support` (a `user` entity with a numeric (`created`) and a string
//! (`name`) range key index) as a TypeScript-shaped config, and a deterministic generator of
//! its records. Included by each bench with `#[path]`.

use serde_json::{Value, json};

/// The config, with the user's shard bumps.
pub(crate) fn config(bumps: &Value) -> Value {
    json!({
        "hashKey": "hashKey",
        "rangeKey": "rangeKey",
        "entities": {
            "user": { "uniqueProperty": "userId", "timestampProperty": "created", "shardBumps": bumps }
        },
        "generatedProperties": { "unsharded": { "nameRK": ["name", "userId"] } },
        "indexes": {
            "created": { "hashKey": "hashKey", "rangeKey": "created" },
            "name": { "hashKey": "hashKey", "rangeKey": "nameRK" }
        },
        "propertyTranscodes": { "userId": "string", "created": "timestamp", "name": "string" }
    })
}

/// `count` users with distinct ids, uniform `created` times and five names: the same users
/// on every run (an xorshift generator with a fixed seed).
pub(crate) fn records(count: usize) -> Vec<Value> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |m: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % m
    };
    let names = ["ann", "bob", "cy", "dee", "eve"];
    (0..count)
        .map(|i| {
            // `next(5)` is below 5: the index is in range
            let name = names
                .get(usize::try_from(next(5)).unwrap_or(0))
                .copied()
                .unwrap_or("ann");
            json!({
                "userId": format!("user-{i:05}-{}", next(1 << 30)),
                "created": 1_000 + next(10_000_000),
                "name": name,
            })
        })
        .collect()
}
