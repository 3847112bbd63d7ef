//! What the tests against the npm release share: where its scripts and packages are, and the
//! deterministic players both libraries key (the values whose key forms differ between the
//! modes: negative and large ints, `fix6` decimals, booleans, short timestamps, empty strings).

use std::path::PathBuf;

use serde_json::{Value, json};

/// `tests/ts-bench`: the Node scripts and their installer.
pub(crate) fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ts-bench")
}

/// `EM_TS_NODE_PATH` (the npm packages), or `None` with a printed reason to skip. Under
/// `CI=true` a missing path fails instead: CI installs the packages.
pub(crate) fn node_path() -> Option<String> {
    if let Ok(path) = std::env::var("EM_TS_NODE_PATH") {
        return Some(path);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true but EM_TS_NODE_PATH is not set: install the npm packages with tests/ts-bench/install.sh"
    );
    eprintln!(
        "skipping: EM_TS_NODE_PATH is not set (export EM_TS_NODE_PATH=$(bash tests/ts-bench/install.sh))"
    );
    None
}

/// Ints: zero, negative, ±(2^53−1).
const SCORES: [i64; 8] = [
    0,
    42,
    -5,
    -42,
    1_234_567,
    -9_007_199_254_740_991,
    9_007_199_254_740_991,
    10,
];
const RATINGS: [f64; 8] = [
    0.0,
    1.5,
    -12.5,
    123.456_789,
    3.0,
    -0.25,
    9_999_999.999_999,
    0.000_001,
];
const CREATEDS: [u64; 7] = [
    5_000,
    999_999_999_999,
    0,
    1_700_000_000_000,
    1_726_880_933_123,
    1,
    // 1 ms before the second bump of `fleet.json` (on it: 1_700_000_000_000; the first: 0)
    1_699_999_999_999,
];
/// Names: ASCII, empty, non-ASCII.
const NAMES: [&str; 5] = ["ann", "", "bob", "zoë", "Émile"];

/// A deterministic source of players (xorshift64).
pub(crate) struct Players(u64);

impl Players {
    pub(crate) fn new() -> Self {
        Self(0x2545_F491_4F6C_DD1D)
    }

    /// The next pseudo-random number.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// One of `choices`.
    pub(crate) fn pick<'c, T>(&mut self, choices: &'c [T]) -> &'c T {
        let i = usize::try_from(self.next()).unwrap_or(0) % choices.len();
        &choices[i]
    }

    /// The `n`-th player, under `id`: `created` and `name` always; `score` on three players
    /// of four; `rating` and `active` on two of three; no `team` on one of five, an empty one
    /// on another. Returns the JSON and the team.
    pub(crate) fn player(&mut self, n: usize, id: &str) -> (Value, Option<String>) {
        let mut player = json!({
            "playerId": id,
            "created": self.pick(&CREATEDS),
            "name": self.pick(&NAMES),
        });
        if !n.is_multiple_of(4) {
            player["score"] = json!(self.pick(&SCORES));
        }
        if !n.is_multiple_of(3) {
            player["rating"] = json!(self.pick(&RATINGS));
            player["active"] = json!(self.next().is_multiple_of(2));
        }
        let team = match n % 5 {
            0 => None,
            1 => Some(String::new()),
            _ => Some(format!("t{}", self.next() % 7)),
        };
        if let Some(team) = &team {
            player["team"] = json!(team);
        }
        (player, team)
    }
}
