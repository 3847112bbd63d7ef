//! The cost of the linearizability checker (issue 50): a history of 10,000 calls over 100
//! records, from 10 concurrent clients, checks within 10 s on one core.
//!
//! ```text
//! cargo bench -p entity-manager-tests --bench linearizability -- --warm-up-time 1 --measurement-time 5
//! ```
//!
//! The history is made by a seeded simulation: each client in turn invokes a call on a random
//! record (a read, a versioned write, a read-modify-write, a write under a stale version that is
//! refused, now and then a call that never answers), which takes effect at a random later step
//! and returns after that, so up to 10 calls overlap. The baseline, in the same run, replays the
//! same calls through the model in the order they took effect (what any check costs at least).

use std::collections::BTreeMap;

use criterion::{Criterion, criterion_group, criterion_main};
use entity_manager::testing::{
    Entry, History, Model, Register, RegisterOp, RegisterOut, Require, Versioned,
};

const CALLS: usize = 10_000;
const RECORDS: u64 = 100;
const CLIENTS: usize = 10;

/// splitmix64
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut x = self.0;
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^ (x >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

enum Phase {
    Idle,
    Invoked {
        key: String,
        kind: u64,
        at: u64,
    },
    Applied {
        input: RegisterOp,
        output: RegisterOut,
        at: u64,
    },
}

/// A linearizable history of `CALLS` calls, and the calls in the order they took effect.
fn simulate(seed: u64) -> (History<Register>, Vec<(RegisterOp, RegisterOut)>) {
    let mut rng = Rng(seed);
    let mut state: BTreeMap<String, Versioned> = BTreeMap::new();
    let mut clients: Vec<Phase> = (0..CLIENTS).map(|_| Phase::Idle).collect();
    let mut history = History::new();
    let mut order = Vec::new();
    let mut clock = 0u64;
    let mut started = 0;
    while history.len() < CALLS {
        let c = usize::try_from(rng.below(CLIENTS as u64)).unwrap_or(0);
        clock += 1;
        clients[c] = match std::mem::replace(&mut clients[c], Phase::Idle) {
            Phase::Idle if started < CALLS => {
                started += 1;
                Phase::Invoked {
                    key: format!("r{}", rng.below(RECORDS)),
                    kind: rng.below(100),
                    at: clock,
                }
            }
            Phase::Idle => Phase::Idle,
            Phase::Invoked { key, kind, at } => {
                let now = state.get(&key).cloned();
                let version = now.as_ref().and_then(|v| v.version).unwrap_or(0);
                let next = Some(Versioned::new(format!("{c}.{clock}"), version + 1));
                let (input, output) = match kind {
                    0..50 => (RegisterOp::read(key.clone()), RegisterOut::Read(now)),
                    50..75 => {
                        let require = if version == 0 {
                            Require::Absent
                        } else {
                            Require::Version(version)
                        };
                        (
                            RegisterOp::write(key.clone(), require, next),
                            RegisterOut::Applied,
                        )
                    }
                    75..90 => match now {
                        Some(now) => (
                            RegisterOp::write(key.clone(), Require::Equals(now), next),
                            RegisterOut::Applied,
                        ),
                        None => (RegisterOp::read(key.clone()), RegisterOut::Read(None)),
                    },
                    // a write under a version that is not the record's: refused
                    _ => (
                        RegisterOp::write(key.clone(), Require::Version(version + 7), next),
                        RegisterOut::Refused,
                    ),
                };
                if let (RegisterOp::Write(writes), RegisterOut::Applied) = (&input, &output)
                    && let Some(v) = &writes[0].set
                {
                    state.insert(key, v.clone());
                }
                order.push((input.clone(), output.clone()));
                if kind == 99 {
                    // it took effect and never answered
                    history.push(Entry::open(c, input, at));
                    Phase::Idle
                } else {
                    Phase::Applied { input, output, at }
                }
            }
            Phase::Applied { input, output, at } => {
                history.push(Entry::completed(c, input, output, at, clock));
                Phase::Idle
            }
        };
    }
    (history, order)
}

/// The baseline: the calls through the model in the order they took effect.
fn replay(order: &[(RegisterOp, RegisterOut)]) -> bool {
    let model = Register::new();
    let mut states: BTreeMap<String, <Register as Model>::State> = BTreeMap::new();
    for (input, output) in order {
        let key = model.keys(input).remove(0);
        let state = states
            .entry(key.clone())
            .or_insert_with(|| model.init(&[key]));
        match model.step(state, input, Some(output)) {
            Some(next) => *state = next,
            None => return false,
        }
    }
    true
}

fn bench(c: &mut Criterion) {
    let (history, order) = simulate(50);
    assert_eq!(history.len(), CALLS);
    assert!(replay(&order), "the simulation broke its own model");
    let checked = history.check(&Register::new());
    assert!(checked.is_ok(), "{checked:?}");
    // the same history with one read made stale is refused
    let mut broken = history.clone();
    let stale = broken
        .entries
        .iter()
        .position(|e| matches!(&e.output, Some(RegisterOut::Read(Some(v))) if v.version > Some(2)))
        .unwrap_or(0);
    if let Some(RegisterOut::Read(Some(v))) = &mut broken.entries[stale].output {
        v.version = Some(1);
    }
    assert!(broken.check(&Register::new()).is_err());

    let mut group = c.benchmark_group("linearizability");
    group.sample_size(10);
    group.bench_function("replay_10000_calls_in_order", |b| {
        b.iter(|| replay(&order));
    });
    group.bench_function("check_10000_calls_100_records_10_clients", |b| {
        b.iter(|| history.check(&Register::new()).is_ok());
    });
    group.bench_function("refuse_and_shrink_one_stale_read", |b| {
        b.iter(|| broken.check(&Register::new()).is_err());
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
