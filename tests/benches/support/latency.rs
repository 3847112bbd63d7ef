//! A store latency for the query benches (`query.rs`, `query_ts.rs`): a hook that waits a
//! fixed delay before every shard query, on a precise timer thread or on tokio's timer, and
//! records how long the waits really took. Included by each bench with `#[path]`.
#![allow(dead_code)] // `query_ts` uses only the precise clock

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use entity_manager_tests::QueryHook;
use tokio::sync::oneshot;

/// How the fan-out store waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Clock {
    /// A timer thread that wakes each read within tens of microseconds of its deadline.
    Precise,
    /// `tokio::time::sleep`, whose wheel counts whole milliseconds: a 2 ms sleep takes about
    /// 3 ms, and reads started within one millisecond end on the same tick.
    Tokio,
}

/// A timer thread: each `sleep` registers a deadline and a channel, the thread sleeps until
/// the earliest deadline (a futex wait, precise to tens of microseconds) and completes every
/// channel that is due.
pub(crate) struct PreciseTimer {
    requests: mpsc::Sender<(Instant, oneshot::Sender<()>)>,
}

impl PreciseTimer {
    pub(crate) fn start() -> Self {
        let (requests, incoming) = mpsc::channel::<(Instant, oneshot::Sender<()>)>();
        std::thread::spawn(move || {
            let mut due: BTreeMap<(Instant, u64), oneshot::Sender<()>> = BTreeMap::new();
            let mut sequence = 0u64;
            loop {
                let now = Instant::now();
                while let Some(entry) = due.first_entry() {
                    if entry.key().0 > now {
                        break;
                    }
                    let _ = entry.remove().send(());
                }
                let next = match due.first_key_value() {
                    Some((&(deadline, _), _)) => {
                        incoming.recv_timeout(deadline.saturating_duration_since(Instant::now()))
                    }
                    None => incoming
                        .recv()
                        .map_err(|_| mpsc::RecvTimeoutError::Disconnected),
                };
                match next {
                    Ok((deadline, done)) => {
                        sequence += 1;
                        due.insert((deadline, sequence), done);
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                }
            }
        });
        Self { requests }
    }

    async fn sleep(&self, delay: Duration) {
        let (done, wait) = oneshot::channel();
        if self.requests.send((Instant::now() + delay, done)).is_ok() {
            let _ = wait.await;
        }
    }
}

/// Waits `delay` before every shard query, and records how long the waits really took.
pub(crate) struct Latency<'t> {
    delay: Duration,
    clock: Clock,
    timer: &'t PreciseTimer,
    /// Nanoseconds spent waiting, and waits.
    waited: AtomicU64,
    waits: AtomicU64,
}

impl<'t> Latency<'t> {
    /// Waits `delay` on `clock` (`timer` serves `Clock::Precise`).
    pub(crate) fn new(delay: Duration, clock: Clock, timer: &'t PreciseTimer) -> Self {
        Self {
            delay,
            clock,
            timer,
            waited: AtomicU64::new(0),
            waits: AtomicU64::new(0),
        }
    }

    /// The mean wait so far.
    pub(crate) fn mean_wait(&self) -> Duration {
        let waited = self.waited.load(AtomicOrdering::Relaxed);
        let waits = self.waits.load(AtomicOrdering::Relaxed);
        Duration::from_nanos(waited / waits.max(1))
    }
}

impl QueryHook for Latency<'_> {
    async fn around<T: Send>(&self, query: impl Future<Output = T> + Send) -> T {
        let started = Instant::now();
        match self.clock {
            Clock::Precise => self.timer.sleep(self.delay).await,
            Clock::Tokio => tokio::time::sleep(self.delay).await,
        }
        let waited = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.waited.fetch_add(waited, AtomicOrdering::Relaxed);
        self.waits.fetch_add(1, AtomicOrdering::Relaxed);
        query.await
    }
}
