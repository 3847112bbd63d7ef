//! Histories and linearizability (feature `testing`): record what concurrent tasks asked and
//! were answered, and check that some order of those calls, consistent with real time,
//! explains every answer.
//!
//! Linearizability (Herlihy and Wing, 1990) is what users of a database rely on: each call
//! seems to take effect at one instant between its invocation and its answer. A test that
//! checks its own invariant (a final count, one winner) misses bugs that a whole history shows:
//! a read that saw a value no write produced, a version that went back, a create that both won
//! and lost, an update that was lost or applied twice.
//!
//! - A [`Recorder`] logs calls from many tasks on one logical clock. Its typed methods run an
//!   [`EntityExt`](crate::EntityExt) operation and record it ([`Recorder::get`],
//!   [`Recorder::create`], [`Recorder::put`], [`Recorder::update`], [`Recorder::modify`],
//!   [`Recorder::delete`], [`Recorder::move_record`]); anything else is recorded by hand with
//!   [`Recorder::invoke`] and [`Call::ok`] / [`Call::open`] / [`Call::error`].
//! - A [`Model`] says what the library promises: the [`Register`] (a versioned register per
//!   record; writes that require a state, all-or-nothing transactions over several records)
//!   and the [`Counter`] (atomic `add`). Write your own for your service's invariants.
//! - [`History::check`] searches for a linearization. A call that failed with
//!   [`may_have_applied`] (a timeout, a server error after the write applied) is *open*: it may
//!   take effect at any point after its invocation, or never, and the checker tries both. On
//!   failure it returns [`NotLinearizable`], whose `Display` prints the smallest refused
//!   sub-history it found.
//!
//! ## The search
//!
//! The checker is Wing and Gong's search for a linearization ("Testing and verifying
//! concurrent objects", 1993) with Lowe's memoisation of the (calls linearized, model state)
//! pairs already explored ("Testing for linearizability", 2017), the algorithm of Porcupine
//! (Anish Athalye's checker in Go) and of Knossos' `linear` search (Jepsen). The history is
//! first split into partitions of records touched together, checked apart, since
//! linearizability is compositional. A refused partition is shrunk: calls that only observe
//! (reads, refused writes) are dropped and the answers of calls that changed state are set
//! aside (made open), one at a time, while the partition stays refused; both only make a
//! history easier to linearize, so what is left is a witness on its own.
//!
//! The search is exponential in the worst case (linearizability checking is NP-complete), but
//! the cost follows the concurrency per record, not the history's length: see the
//! `linearizability` row of BENCHMARKS.md (10,000 calls over 100 records).
//!
//! ```
//! use entity_manager_core::testing::{Entry, History, Register, RegisterOp, RegisterOut, Require, Versioned};
//!
//! // a stale read: x was written at v2 and acknowledged, then a read saw v1
//! let mut h = History::<Register>::new();
//! let v = |s: &str, n| Some(Versioned::new(s, n));
//! h.push(Entry::completed(0, RegisterOp::write("x", Require::Absent, v("a", 1)), RegisterOut::Applied, 0, 1));
//! h.push(Entry::completed(0, RegisterOp::write("x", Require::Version(1), v("b", 2)), RegisterOut::Applied, 2, 3));
//! h.push(Entry::completed(1, RegisterOp::read("x"), RegisterOut::Read(v("a", 1)), 4, 5));
//! let refused = h.check(&Register::new()).unwrap_err();
//! assert_eq!(refused.sub_history.len(), 3);
//! println!("{refused}");
//! ```

mod check;
mod models;
mod record;
#[cfg(test)]
mod tests;

pub use check::{Entry, History, Linearizable, Model, NotLinearizable, check};
pub use models::{
    Counter, CounterOp, CounterOut, Register, RegisterOp, RegisterOut, Require, Slot, Versioned,
    Write,
};
pub use record::{Call, Recorder, may_have_applied};
