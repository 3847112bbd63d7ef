//! What the library promises, as sequential models: a versioned register per record (with
//! all-or-nothing transactions over several) and a counter per record.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use super::check::Model;
use crate::Entity;

/// A record's state as the register holds it: the record (as canonical JSON text) and its
/// version (`None` for an entity without a version field).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Versioned {
    /// The record, as JSON text.
    pub value: String,
    /// Its version field, if the entity has one.
    pub version: Option<u64>,
}

impl Versioned {
    /// A value at a version (for hand-made histories).
    pub fn new(value: impl Into<String>, version: u64) -> Self {
        Self {
            value: value.into(),
            version: Some(version),
        }
    }

    /// A value of an entity without a version field.
    pub fn unversioned(value: impl Into<String>) -> Self {
        Self {
            value: value.into(),
            version: None,
        }
    }

    /// A typed record: its JSON and, when the entity has a version field
    /// ([`Entity::VERSION`]), that field's value. A record that does not serialize to JSON
    /// is recorded by its serialization error, which no other record equals.
    pub fn of<E: Entity + Serialize>(record: &E) -> Self {
        match serde_json::to_value(record) {
            Ok(json) => {
                let version = E::VERSION
                    .and_then(|field| json.get(field))
                    .and_then(serde_json::Value::as_u64);
                Self {
                    value: json.to_string(),
                    version,
                }
            }
            Err(e) => Self {
                value: format!("<unserializable: {e}>"),
                version: None,
            },
        }
    }

    /// The record as it is stored after a typed write of `record`: with a version field, the
    /// record's version plus one (the library increments it on every write).
    pub fn stored<E: Entity + Serialize>(record: &E) -> Self {
        let Ok(mut json) = serde_json::to_value(record) else {
            return Self::of(record);
        };
        let mut version = None;
        if let Some(slot) = E::VERSION.and_then(|field| json.get_mut(field))
            && let Some(v) = slot.as_u64()
        {
            *slot = serde_json::Value::from(v + 1);
            version = Some(v + 1);
        }
        Self {
            value: json.to_string(),
            version,
        }
    }
}

impl fmt::Display for Versioned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.version {
            Some(v) => write!(f, "{}@v{v}", self.value),
            None => f.write_str(&self.value),
        }
    }
}

/// What a write requires of the record's state, checked at the instant it takes effect.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Require {
    /// Nothing (an unconditional put or delete).
    Any,
    /// No record (`create`).
    Absent,
    /// A record, whatever it holds (`update`, `delete`).
    Present,
    /// A record at this version (a versioned `put`, `update` under `if_version`).
    Version(u64),
    /// No record, or a record at this version (a versioned `put` of version 0 may create).
    AbsentOrVersion(u64),
    /// Exactly this record (`modify`: the write is conditioned on the record as read).
    Equals(Versioned),
}

impl Require {
    /// Whether the requirement holds of a slot: `None` when the slot is unknown.
    fn holds_of(&self, slot: Option<&Slot>) -> Option<bool> {
        match (slot, self) {
            (Some(Slot::Known(v)), _) => Some(self.holds(Some(v))),
            (None, _) => Some(self.holds(None)),
            (Some(Slot::Unknown { .. }), Self::Any) => Some(true),
            (Some(Slot::Unknown { version: None }), _) => None,
            (Some(Slot::Unknown { version: Some(n) }), _) => match self {
                Self::Version(v) | Self::AbsentOrVersion(v) => Some(v == n),
                Self::Equals(x) if x.version == Some(*n) => None,
                // it exists, at version `n`
                Self::Absent | Self::Equals(_) => Some(false),
                Self::Any | Self::Present => Some(true),
            },
        }
    }

    fn holds(&self, state: Option<&Versioned>) -> bool {
        match (self, state) {
            (Self::Any, _) | (Self::Absent, None) | (Self::Present, Some(_)) => true,
            (Self::Version(v), Some(s)) => s.version == Some(*v),
            (Self::AbsentOrVersion(v), s) => s.is_none_or(|s| s.version == Some(*v)),
            (Self::Equals(want), Some(s)) => want == s,
            _ => false,
        }
    }
}

impl fmt::Display for Require {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Any => f.write_str("any"),
            Self::Absent => f.write_str("absent"),
            Self::Present => f.write_str("present"),
            Self::Version(v) => write!(f, "v{v}"),
            Self::AbsentOrVersion(v) => write!(f, "absent or v{v}"),
            Self::Equals(s) => write!(f, "= {s}"),
        }
    }
}

/// One write of a [`RegisterOp`]: the record, what it requires, and what it leaves (`None`
/// deletes).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Write {
    /// The record's id.
    pub key: String,
    /// What the write requires of the record.
    pub require: Require,
    /// The record's state after the write (`None`: deleted).
    pub set: Option<Versioned>,
}

impl Write {
    /// A write of `key`.
    pub fn new(key: impl Into<String>, require: Require, set: Option<Versioned>) -> Self {
        Self {
            key: key.into(),
            require,
            set,
        }
    }
}

impl fmt::Display for Write {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.set {
            Some(s) => write!(f, "{} [{}] := {s}", self.key, self.require),
            None => write!(f, "{} [{}] := deleted", self.key, self.require),
        }
    }
}

/// A call on the versioned register ([`Register`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RegisterOp {
    /// A read of one record (`get`).
    Read(String),
    /// A consistent read of several records (a read transaction).
    ReadMany(Vec<String>),
    /// Writes that all take effect at one instant if each one's requirement holds, else none
    /// does: one write for `create`, `put`, `update`, `modify`, `delete`; several for a
    /// transaction or a `move_record` to another id.
    Write(Vec<Write>),
    /// An update whose result is not known (an `update` that failed with `may_have_applied`:
    /// what it would have left depends on the record it met). Recorded open: if it took
    /// effect, on a record that existed, the record went to the next version with a value not
    /// known, until a read or a write shows what it holds; on no record it does nothing.
    Unknown(String),
}

impl RegisterOp {
    /// A read of `key`.
    pub fn read(key: impl Into<String>) -> Self {
        Self::Read(key.into())
    }

    /// One write.
    pub fn write(key: impl Into<String>, require: Require, set: Option<Versioned>) -> Self {
        Self::Write(vec![Write::new(key, require, set)])
    }
}

impl fmt::Display for RegisterOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Read(key) => write!(f, "read {key}"),
            Self::ReadMany(keys) => write!(f, "read {}", keys.join(", ")),
            Self::Unknown(key) => write!(f, "write {key} := (unknown)"),
            Self::Write(writes) if writes.len() == 1 => write!(f, "write {}", writes[0]),
            Self::Write(writes) => {
                f.write_str("transaction {")?;
                for (i, w) in writes.iter().enumerate() {
                    let sep = if i == 0 { " " } else { "; " };
                    write!(f, "{sep}{w}")?;
                }
                f.write_str(" }")
            }
        }
    }
}

/// What a call on the [`Register`] answered.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RegisterOut {
    /// A read's record (`None`: no record).
    Read(Option<Versioned>),
    /// A consistent read's records, in the order asked.
    ReadMany(Vec<Option<Versioned>>),
    /// The writes took effect.
    Applied,
    /// A requirement did not hold (a failed condition, `AlreadyExists`, `VersionConflict`,
    /// `NotFound`, a canceled transaction): nothing was written.
    Refused,
}

impl fmt::Display for RegisterOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let one = |f: &mut fmt::Formatter<'_>, r: &Option<Versioned>| match r {
            Some(r) => write!(f, "{r}"),
            None => f.write_str("none"),
        };
        match self {
            Self::Read(r) => one(f, r),
            Self::ReadMany(rs) => {
                f.write_str("[")?;
                for (i, r) in rs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    one(f, r)?;
                }
                f.write_str("]")
            }
            Self::Applied => f.write_str("ok"),
            Self::Refused => f.write_str("refused"),
        }
    }
}

/// A record's state in the [`Register`]'s search: what it holds, or what is known of it after
/// a write whose effect is not known. An absent record has no slot.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Slot {
    /// The record holds this.
    Known(Versioned),
    /// The record's value is not known: it exists at this version (after a
    /// [`RegisterOp::Unknown`] update), or, with no version, it may be absent or hold anything
    /// (after a transaction of unknown outcome met an unknown record).
    Unknown {
        /// The record's version, when known.
        version: Option<u64>,
    },
}

/// The versioned register: what `get`, `create`, `put`, `update`, `modify`, `delete`,
/// `move_record` and transactions promise of records. Each record is absent or holds a value
/// at a version; reads see the latest write; writes take effect whole at one instant, or not at
/// all when a requirement fails; a transaction's writes take effect together (no read sees part
/// of one).
#[derive(Clone, Debug, Default)]
pub struct Register {
    initial: BTreeMap<String, Versioned>,
}

impl Register {
    /// Every record absent at first.
    pub fn new() -> Self {
        Self::default()
    }

    /// Record `key` holds `value` before the history.
    #[must_use]
    pub fn with_initial(mut self, key: impl Into<String>, value: Versioned) -> Self {
        self.initial.insert(key.into(), value);
        self
    }
}

impl Register {
    /// A read saw `seen` of `key`: the state after it, or `None` if it cannot have.
    fn observe(
        state: &mut BTreeMap<String, Slot>,
        key: &str,
        seen: Option<&Versioned>,
    ) -> Option<()> {
        match (state.get(key), seen) {
            (Some(Slot::Unknown { version: None }), _) => {
                match seen {
                    Some(v) => state.insert(key.to_owned(), Slot::Known(v.clone())),
                    None => state.remove(key),
                };
                Some(())
            }
            (Some(Slot::Unknown { version: Some(n) }), Some(v)) if v.version == Some(*n) => {
                state.insert(key.to_owned(), Slot::Known(v.clone()));
                Some(())
            }
            (Some(Slot::Known(now)), Some(seen)) if now == seen => Some(()),
            (None, None) => Some(()),
            _ => None,
        }
    }
}

impl Model for Register {
    type State = BTreeMap<String, Slot>;
    type Input = RegisterOp;
    type Output = RegisterOut;

    fn init(&self, keys: &[String]) -> Self::State {
        keys.iter()
            .filter_map(|k| {
                self.initial
                    .get(k)
                    .map(|v| (k.clone(), Slot::Known(v.clone())))
            })
            .collect()
    }

    fn keys(&self, input: &RegisterOp) -> Vec<String> {
        match input {
            RegisterOp::Read(key) | RegisterOp::Unknown(key) => vec![key.clone()],
            RegisterOp::ReadMany(keys) => keys.clone(),
            RegisterOp::Write(writes) => writes.iter().map(|w| w.key.clone()).collect(),
        }
    }

    fn step(
        &self,
        state: &Self::State,
        input: &RegisterOp,
        output: Option<&RegisterOut>,
    ) -> Option<Self::State> {
        let mut next = state.clone();
        match (input, output) {
            (RegisterOp::Read(_) | RegisterOp::ReadMany(_), None) => {}
            (RegisterOp::Unknown(key), _) => {
                let version = match state.get(key) {
                    // an update of no record does nothing
                    None => return Some(next),
                    Some(Slot::Known(v)) => v.version,
                    Some(Slot::Unknown { version }) => *version,
                };
                let version = version.map(|v| v + 1);
                next.insert(key.clone(), Slot::Unknown { version });
            }
            (RegisterOp::Read(key), Some(RegisterOut::Read(seen))) => {
                Self::observe(&mut next, key, seen.as_ref())?;
            }
            (RegisterOp::ReadMany(keys), Some(RegisterOut::ReadMany(seen))) => {
                if keys.len() != seen.len() {
                    return None;
                }
                for (key, seen) in keys.iter().zip(seen) {
                    Self::observe(&mut next, key, seen.as_ref())?;
                }
            }
            (RegisterOp::Write(writes), output) => {
                let mut holds = Some(true);
                for w in writes {
                    // one requirement that fails refuses it; one unknown makes it unknown
                    match w.require.holds_of(state.get(&w.key)) {
                        Some(false) => holds = Some(false),
                        None if holds == Some(true) => holds = None,
                        _ => {}
                    }
                }
                let apply = |next: &mut Self::State| {
                    for w in writes {
                        match &w.set {
                            Some(v) => next.insert(w.key.clone(), Slot::Known(v.clone())),
                            None => next.remove(&w.key),
                        };
                    }
                };
                match (holds, output) {
                    // applied: it held (or may have, of an unknown record)
                    (Some(true) | None, Some(RegisterOut::Applied)) | (Some(true), None) => {
                        apply(&mut next);
                    }
                    // refused, or open and refused: nothing changes
                    (Some(false), Some(RegisterOut::Refused) | None)
                    | (None, Some(RegisterOut::Refused)) => {}
                    // open on an unknown record: it may have applied or not
                    (None, None) => {
                        for w in writes {
                            next.insert(w.key.clone(), Slot::Unknown { version: None });
                        }
                    }
                    _ => return None,
                }
            }
            _ => return None,
        }
        Some(next)
    }

    fn observes_only(&self, input: &RegisterOp, output: &RegisterOut) -> bool {
        !matches!(input, RegisterOp::Unknown(_)) && !matches!(output, RegisterOut::Applied)
    }
}

/// A call on the [`Counter`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CounterOp {
    /// An atomic `add` of `delta` to the counter `key` (`Changes::add`).
    Add {
        /// The counter's id.
        key: String,
        /// What is added.
        delta: i64,
    },
    /// A read of the counter `key`.
    Read(String),
}

impl fmt::Display for CounterOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Add { key, delta } => write!(f, "add {delta:+} to {key}"),
            Self::Read(key) => write!(f, "read {key}"),
        }
    }
}

/// What a call on the [`Counter`] answered: the counter's value after an add (`None` when the
/// caller did not learn it), or the value read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CounterOut {
    /// The add took effect; the value after it, if known.
    Added(Option<i64>),
    /// The value read.
    Value(i64),
}

impl fmt::Display for CounterOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Added(Some(v)) => write!(f, "ok, now {v}"),
            Self::Added(None) => f.write_str("ok"),
            Self::Value(v) => write!(f, "{v}"),
        }
    }
}

/// Counters under atomic `add`: every add that took effect counts exactly once, whatever the
/// concurrency; a read sees the sum of the adds before it. Counters start at 0 unless given
/// ([`with_initial`](Self::with_initial)).
#[derive(Clone, Debug, Default)]
pub struct Counter {
    initial: BTreeMap<String, i64>,
}

impl Counter {
    /// Every counter at 0 at first.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counter `key` holds `value` before the history.
    #[must_use]
    pub fn with_initial(mut self, key: impl Into<String>, value: i64) -> Self {
        self.initial.insert(key.into(), value);
        self
    }
}

impl Model for Counter {
    type State = BTreeMap<String, i64>;
    type Input = CounterOp;
    type Output = CounterOut;

    fn init(&self, keys: &[String]) -> Self::State {
        keys.iter()
            .map(|k| (k.clone(), self.initial.get(k).copied().unwrap_or(0)))
            .collect()
    }

    fn keys(&self, input: &CounterOp) -> Vec<String> {
        match input {
            CounterOp::Add { key, .. } | CounterOp::Read(key) => vec![key.clone()],
        }
    }

    fn step(
        &self,
        state: &Self::State,
        input: &CounterOp,
        output: Option<&CounterOut>,
    ) -> Option<Self::State> {
        match (input, output) {
            (CounterOp::Read(_), None) => Some(state.clone()),
            (CounterOp::Read(key), Some(CounterOut::Value(v))) => {
                (state.get(key).copied().unwrap_or(0) == *v).then(|| state.clone())
            }
            (CounterOp::Add { key, delta }, None | Some(CounterOut::Added(_))) => {
                let now = state.get(key).copied().unwrap_or(0).checked_add(*delta)?;
                if let Some(CounterOut::Added(Some(seen))) = output
                    && *seen != now
                {
                    return None;
                }
                let mut next = state.clone();
                next.insert(key.clone(), now);
                Some(next)
            }
            _ => None,
        }
    }

    fn observes_only(&self, input: &CounterOp, _output: &CounterOut) -> bool {
        matches!(input, CounterOp::Read(_))
    }
}
