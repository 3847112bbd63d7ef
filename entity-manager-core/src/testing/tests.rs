//! The checker on small hand-made histories: the classic linearizable ones accepted, the
//! classic anomalies refused with their sub-history.

use super::*;

#[allow(clippy::unnecessary_wraps)] // the shape every read and write takes
fn v(value: &str, version: u64) -> Option<Versioned> {
    Some(Versioned::new(value, version))
}

fn write(key: &str, require: Require, set: Option<Versioned>) -> RegisterOp {
    RegisterOp::write(key, require, set)
}

/// A completed call at `[invoked, returned]`.
fn done(
    client: usize,
    input: RegisterOp,
    output: RegisterOut,
    invoked: u64,
    returned: u64,
) -> Entry<Register> {
    Entry::completed(client, input, output, invoked, returned)
}

/// A completed write of `key` that applied.
fn applied(
    client: usize,
    key: &str,
    require: Require,
    set: Option<Versioned>,
    invoked: u64,
    returned: u64,
) -> Entry<Register> {
    done(
        client,
        write(key, require, set),
        RegisterOut::Applied,
        invoked,
        returned,
    )
}

/// A completed read of `key` that saw `seen`.
fn read(
    client: usize,
    key: &str,
    seen: Option<Versioned>,
    invoked: u64,
    returned: u64,
) -> Entry<Register> {
    done(
        client,
        RegisterOp::read(key),
        RegisterOut::Read(seen),
        invoked,
        returned,
    )
}

fn history(entries: Vec<Entry<Register>>) -> History<Register> {
    History { entries }
}

fn refused(h: &History<Register>) -> NotLinearizable<Register> {
    match h.check(&Register::new()) {
        Ok(ok) => panic!("accepted a non-linearizable history: {ok:?}"),
        Err(e) => e,
    }
}

fn accepted(h: &History<Register>) {
    if let Err(e) = h.check(&Register::new()) {
        panic!("refused a linearizable history:\n{e}");
    }
}

/// Herlihy and Wing's register example: a read overlapping a write may see either value; one
/// that starts after the write returned sees the new one.
#[test]
fn a_read_overlapping_a_write_sees_either_value() {
    let base = || {
        vec![
            applied(0, "x", Require::Absent, v("a", 1), 0, 1),
            applied(0, "x", Require::Version(1), v("b", 2), 2, 10),
        ]
    };
    for seen in [v("a", 1), v("b", 2)] {
        let mut h = base();
        h.push(read(1, "x", seen, 3, 5));
        accepted(&history(h));
    }
    // two overlapping reads may even see the new value then the old one, if they overlap
    let mut h = base();
    h.push(read(1, "x", v("b", 2), 3, 6));
    h.push(read(2, "x", v("a", 1), 4, 7));
    accepted(&history(h));
}

/// A stale read after an acknowledged write is refused, with the write, the overwrite and
/// the read shown.
#[test]
fn a_stale_read_after_an_acknowledged_write_is_refused() {
    let mut h = vec![
        applied(0, "x", Require::Absent, v("a", 1), 0, 1),
        applied(0, "x", Require::Version(1), v("b", 2), 2, 3),
        read(1, "x", v("a", 1), 4, 5),
    ];
    // unrelated calls on other records and on x, which the shrinker drops
    for i in 0..20 {
        h.push(read(2, "y", None, 6 + 2 * i, 7 + 2 * i));
        h.push(read(3, "x", v("b", 2), 6 + 2 * i, 7 + 2 * i));
    }
    let e = refused(&history(h));
    println!("{e}");
    assert_eq!(e.keys, ["x"]);
    assert_eq!(e.partition_len, 23);
    let shown: Vec<String> = e.sub_history.iter().map(|c| c.input.to_string()).collect();
    assert_eq!(
        shown,
        ["write x [absent] := a@v1", "write x [v1] := b@v2", "read x"],
        "{e}"
    );
    let text = e.to_string();
    assert!(text.contains("not linearizable"), "{text}");
    assert!(text.contains("read x -> a@v1"), "{text}");
}

/// A lost update: two read-modify-writes from the same version both applied.
#[test]
fn a_lost_update_is_refused() {
    let h = history(vec![
        applied(0, "c", Require::Absent, v("0", 1), 0, 1),
        applied(
            1,
            "c",
            Require::Equals(Versioned::new("0", 1)),
            v("1", 2),
            2,
            6,
        ),
        applied(
            2,
            "c",
            Require::Equals(Versioned::new("0", 1)),
            v("1", 2),
            3,
            7,
        ),
        read(3, "c", v("1", 2), 8, 9),
    ]);
    let e = refused(&h);
    println!("{e}");
    // the final read is not needed to refuse it; the create and both updates are
    assert_eq!(e.sub_history.len(), 3, "{e}");
    assert!(e.to_string().contains("client   2"), "{e}");
    // one of the two updates refused instead: linearizable
    let mut ok = h.entries.clone();
    ok[2].output = Some(RegisterOut::Refused);
    accepted(&history(ok));
}

/// A version that goes back: a read saw v2, a later one v1.
#[test]
fn a_version_that_goes_back_is_refused() {
    let h = history(vec![
        applied(0, "x", Require::Absent, v("a", 1), 0, 1),
        applied(0, "x", Require::Version(1), v("b", 2), 2, 20),
        read(1, "x", v("b", 2), 3, 4),
        read(2, "x", v("a", 1), 5, 6),
    ]);
    let e = refused(&h);
    assert_eq!(e.sub_history.len(), 4, "{e}");
    // both reads are needed: either alone is explained
    assert!(e.to_string().contains("read x -> b@v2"), "{e}");
}

/// A torn transaction: a reader saw one of its writes and not the other.
#[test]
fn a_torn_transaction_is_refused() {
    let tx = RegisterOp::Write(vec![
        Write::new("x", Require::Version(1), v("x2", 2)),
        Write::new("y", Require::Version(1), v("y2", 2)),
    ]);
    let setup = || {
        vec![
            applied(0, "x", Require::Absent, v("x1", 1), 0, 1),
            applied(0, "y", Require::Absent, v("y1", 1), 2, 3),
            done(1, tx.clone(), RegisterOut::Applied, 4, 20),
        ]
    };
    // one consistent read that sees half of it
    let mut h = setup();
    h.push(done(
        2,
        RegisterOp::ReadMany(vec!["x".into(), "y".into()]),
        RegisterOut::ReadMany(vec![v("x2", 2), v("y1", 1)]),
        5,
        6,
    ));
    let e = refused(&history(h));
    assert_eq!(e.keys, ["x", "y"]);
    assert!(e.to_string().contains("transaction {"), "{e}");
    // two reads in turn: x new, then y old
    let mut h = setup();
    h.push(read(2, "x", v("x2", 2), 5, 6));
    h.push(read(2, "y", v("y1", 1), 7, 8));
    let e = refused(&history(h));
    assert_eq!(e.sub_history.len(), 5, "{e}");
    // both old, or both new: linearizable
    for (x, y) in [(v("x1", 1), v("y1", 1)), (v("x2", 2), v("y2", 2))] {
        let mut h = setup();
        h.push(read(2, "x", x, 5, 6));
        h.push(read(2, "y", y, 7, 8));
        accepted(&history(h));
    }
}

/// A create that both won and lost: two creates of one id both acknowledged.
#[test]
fn two_winning_creates_are_refused_and_one_winner_is_accepted() {
    let create = |client, out, invoked, returned| {
        done(
            client,
            write("u", Require::Absent, v("u", 1)),
            out,
            invoked,
            returned,
        )
    };
    let e = refused(&history(vec![
        create(0, RegisterOut::Applied, 0, 5),
        create(1, RegisterOut::Applied, 1, 6),
    ]));
    assert_eq!(e.sub_history.len(), 2, "{e}");
    accepted(&history(vec![
        create(0, RegisterOut::Applied, 0, 5),
        create(1, RegisterOut::Refused, 1, 6),
        create(2, RegisterOut::Refused, 2, 3),
    ]));
    // a create refused when nothing could have been there is refused too
    let e = refused(&history(vec![create(0, RegisterOut::Refused, 0, 1)]));
    assert_eq!(e.sub_history.len(), 1, "{e}");
}

/// A call whose acknowledgement was lost may take effect or not, but only after its
/// invocation, and at most once.
#[test]
fn an_open_call_may_apply_once_after_its_invocation_or_never() {
    let setup = || {
        vec![
            applied(0, "x", Require::Absent, v("a", 1), 0, 1),
            Entry::open(1, write("x", Require::Version(1), v("b", 2)), 2),
        ]
    };
    for seen in [v("a", 1), v("b", 2)] {
        let mut h = setup();
        h.push(read(2, "x", seen, 3, 4));
        accepted(&history(h));
    }
    // seen, then not seen: it would have applied and then been undone
    let mut h = setup();
    h.push(read(2, "x", v("b", 2), 3, 4));
    h.push(read(2, "x", v("a", 1), 5, 6));
    refused(&history(h));
    // seen before it was invoked
    let mut h = vec![
        applied(0, "x", Require::Absent, v("a", 1), 0, 1),
        read(2, "x", v("b", 2), 2, 3),
        Entry::open(1, write("x", Require::Version(1), v("b", 2)), 4),
    ];
    let e = refused(&history(h.clone()));
    // the calls invoked after the read are not needed to refuse it
    assert_eq!(e.sub_history.len(), 2, "{e}");
    // later, it is fine
    h[2].invoked = 1;
    accepted(&history(h));
}

/// Counters: every add counts once; an add whose outcome is unknown may or may not count.
#[test]
fn counter_adds_count_once() {
    let add = |client, invoked, returned, now| {
        Entry::completed(
            client,
            CounterOp::Add {
                key: "c".into(),
                delta: 1,
            },
            CounterOut::Added(now),
            invoked,
            returned,
        )
    };
    let read = |invoked, value| {
        Entry::completed(
            9,
            CounterOp::Read("c".into()),
            CounterOut::Value(value),
            invoked,
            invoked + 1,
        )
    };
    let counter = Counter::new();
    let base = || {
        vec![
            add(0, 0, 10, Some(1)),
            add(1, 1, 11, None),
            Entry::open(
                2,
                CounterOp::Add {
                    key: "c".into(),
                    delta: 1,
                },
                2,
            ),
        ]
    };
    for total in [2, 3] {
        let mut h = base();
        h.push(read(20, total));
        assert!(
            History { entries: h }.check(&counter).is_ok(),
            "total {total}"
        );
    }
    for total in [1, 4] {
        let mut h = base();
        h.push(read(20, total));
        let Err(e) = (History { entries: h }).check(&counter) else {
            panic!("total {total} accepted");
        };
        assert!(e.to_string().contains("read c -> "), "{e}");
    }
    // two adds that both answered 1: one of them was lost or applied twice
    let h = History {
        entries: vec![add(0, 0, 10, Some(1)), add(1, 1, 11, Some(1))],
    };
    assert!(h.check(&counter).is_err());
}

/// Partitions are checked apart, and a transaction joins its records into one.
#[test]
fn partitions_follow_the_records_touched_together() {
    let mut h = History::<Register>::new();
    for (i, key) in ["a", "b", "c"].into_iter().enumerate() {
        let t = 10 * i as u64;
        h.push(applied(0, key, Require::Absent, v(key, 1), t, t + 1));
    }
    h.push(done(
        0,
        RegisterOp::Write(vec![
            Write::new("a", Require::Version(1), None),
            Write::new("b", Require::Version(1), None),
        ]),
        RegisterOut::Applied,
        40,
        41,
    ));
    let ok = h.check(&Register::new()).map_err(|e| e.to_string());
    assert_eq!(ok.map(|c| (c.operations, c.partitions)), Ok((4, 2)));
}

/// The initial state is the model's: a record created before the history.
#[test]
fn records_may_exist_before_the_history() {
    let h = history(vec![read(0, "x", v("a", 3), 0, 1)]);
    assert!(h.check(&Register::new()).is_err());
    assert!(
        h.check(&Register::new().with_initial("x", Versioned::new("a", 3)))
            .is_ok()
    );
}

/// A recorder orders calls by one clock; a call dropped unfinished is open.
#[test]
fn the_recorder_keeps_real_time_order_and_drops_become_open() {
    let recorder = Recorder::<Register>::new();
    recorder
        .invoke(0, write("x", Require::Absent, v("a", 1)))
        .ok(RegisterOut::Applied);
    let lost = recorder.invoke(1, write("x", Require::Version(1), v("b", 2)));
    drop(lost);
    recorder
        .invoke(2, RegisterOp::read("x"))
        .ok(RegisterOut::Read(v("b", 2)));
    recorder.invoke(3, RegisterOp::read("y")).not_applied();
    let h = recorder.history();
    assert_eq!(h.len(), 3);
    assert!(h.entries[1].output.is_none());
    assert!(h.entries[0].returned < h.entries[2].invoked);
    assert!(recorder.check(&Register::new()).is_ok());
}

/// An update whose effect is unknown: the record may hold any value at the next version until
/// a read shows what, and from then on the history is checked again.
#[test]
fn an_unknown_write_is_resolved_by_the_next_read() {
    let setup = || {
        vec![
            applied(0, "x", Require::Absent, v("a", 1), 0, 1),
            Entry::open(1, RegisterOp::Unknown("x".into()), 2),
            read(2, "x", v("z", 2), 3, 4),
        ]
    };
    accepted(&history(setup()));
    let mut h = setup();
    h.push(applied(2, "x", Require::Version(2), v("y", 3), 5, 6));
    h.push(read(3, "x", v("y", 3), 7, 8));
    accepted(&history(h));
    // any value, but at the next version only
    let mut h = setup();
    h[2] = read(2, "x", v("z", 9), 3, 4);
    refused(&history(h));
    // once seen, a version that goes back is refused again
    let mut h = setup();
    h.push(read(3, "x", v("a", 1), 7, 8));
    refused(&history(h));
}

/// 32 concurrent creates of one record, the winner's answer lost (as through `DynamoDB` with
/// lost acknowledgements): 11 more open, 20 refused, and a read that saw the winner. The
/// search places each refused create (which changes nothing) where it first can and never
/// tries the orders without it there, so each wrong guess of the winner fails at once instead
/// of after trying every subset of the refused creates (2^20): within a small budget of
/// states.
#[test]
fn many_concurrent_refused_creates_are_checked_without_trying_their_subsets() {
    let create = |i: u64| write("u", Require::Absent, v(&format!("c{i}"), 1));
    let mut entries = Vec::new();
    for i in 0..32u64 {
        let client = usize::try_from(i).unwrap_or(0);
        if i % 3 == 0 || i == 31 {
            // open (the winner, 31, among them)
            entries.push(Entry::open(client, create(i), i));
        } else {
            entries.push(done(client, create(i), RegisterOut::Refused, i, 40 + i));
        }
    }
    entries.push(read(99, "u", v("c31", 1), 100, 101));
    let keys = vec!["u".to_owned()];
    assert_eq!(
        check::search(&Register::new(), &keys, &entries, 10_000),
        Some(true)
    );
    // and the same without the winner's create: no order explains the read
    entries.retain(|e| e.client != 31);
    assert_eq!(
        check::search(&Register::new(), &keys, &entries, 10_000),
        Some(false)
    );
}
