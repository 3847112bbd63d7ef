//! The recorder: one logical clock and the calls made under it, and the typed operations of
//! [`EntityExt`] recorded on the [`Register`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::check::{Entry, History, Linearizable, Model, NotLinearizable};
use super::models::{Register, RegisterOp, RegisterOut, Require, Versioned, Write};
use crate::field::Changes;
use crate::store::Store;
use crate::{Entity, EntityExt, Error, Result};

/// Whether a failed library call may have taken effect anyway: a store error after which the
/// write may have been applied (a timeout, a server error;
/// [`StoreError::may_have_applied`](crate::store::StoreError::may_have_applied)). Every other
/// error wrote nothing (a failed condition, a conflict, throttling, a validation error).
pub fn may_have_applied(error: &Error) -> bool {
    match error {
        Error::Store { source, .. } => source.may_have_applied(),
        _ => false,
    }
}

struct Shared<M: Model> {
    clock: AtomicU64,
    entries: Mutex<Vec<Entry<M>>>,
}

/// Records the calls of concurrent tasks into one [`History`]: clone it into each task, call
/// [`invoke`](Self::invoke) just before a call and complete the returned [`Call`] just after
/// it. One clock orders every invocation and completion, so a call that completed before
/// another was invoked is ordered before it.
///
/// The typed methods ([`get`](Recorder::get), [`create`](Recorder::create), …) run an
/// [`EntityExt`] operation and record it on the [`Register`] in one step.
pub struct Recorder<M: Model> {
    shared: Arc<Shared<M>>,
}

impl<M: Model> std::fmt::Debug for Recorder<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("clock", &self.shared.clock)
            .finish_non_exhaustive()
    }
}

impl<M: Model> std::fmt::Debug for Call<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("client", &self.client)
            .field("input", &self.input)
            .field("invoked", &self.invoked)
            .finish_non_exhaustive()
    }
}

impl<M: Model> Clone for Recorder<M> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<M: Model> Default for Recorder<M> {
    fn default() -> Self {
        Self {
            shared: Arc::new(Shared {
                clock: AtomicU64::new(0),
                entries: Mutex::new(Vec::new()),
            }),
        }
    }
}

impl<M: Model> Recorder<M> {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    fn tick(&self) -> u64 {
        self.shared.clock.fetch_add(1, Ordering::SeqCst)
    }

    fn push(&self, entry: Entry<M>) {
        self.shared
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(entry);
    }

    /// Marks the invocation of a call by `client`; complete the returned [`Call`] when it
    /// returns. A `Call` dropped without completion (its task canceled, a timeout dropped the
    /// future) is recorded as open: it may have taken effect.
    pub fn invoke(&self, client: usize, input: M::Input) -> Call<M> {
        let invoked = self.tick();
        Call {
            recorder: self.clone(),
            client,
            input: Some(input),
            invoked,
        }
    }

    /// The calls recorded so far.
    pub fn history(&self) -> History<M> {
        History {
            entries: self
                .shared
                .entries
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        }
    }

    /// Checks the calls recorded so far against `model`: see [`History::check`].
    pub fn check(&self, model: &M) -> std::result::Result<Linearizable, NotLinearizable<M>> {
        self.history().check(model)
    }
}

/// A call in flight: complete it with [`ok`](Self::ok), [`open`](Self::open),
/// [`not_applied`](Self::not_applied) or [`error`](Self::error).
pub struct Call<M: Model> {
    recorder: Recorder<M>,
    client: usize,
    input: Option<M::Input>,
    invoked: u64,
}

impl<M: Model> Call<M> {
    /// The call completed and answered `output`.
    pub fn ok(mut self, output: M::Output) {
        if let Some(input) = self.input.take() {
            let returned = self.recorder.tick();
            self.recorder.push(Entry::completed(
                self.client,
                input,
                output,
                self.invoked,
                returned,
            ));
        }
    }

    /// The call failed in a way that may have applied it (`may_have_applied`), or never
    /// answered: it may take effect at any point after its invocation, or never.
    pub fn open(mut self) {
        if let Some(input) = self.input.take() {
            self.recorder
                .push(Entry::open(self.client, input, self.invoked));
        }
    }

    /// The call failed and certainly did nothing: it is left out of the history.
    pub fn not_applied(mut self) {
        self.input = None;
    }

    /// The call failed with `error`: open if the error [`may_have_applied`] it, else left out.
    pub fn error(self, error: &Error) {
        if may_have_applied(error) {
            self.open();
        } else {
            self.not_applied();
        }
    }
}

impl<M: Model> Drop for Call<M> {
    fn drop(&mut self) {
        if let Some(input) = self.input.take() {
            self.recorder
                .push(Entry::open(self.client, input, self.invoked));
        }
    }
}

/// A record id as the register names it: a string id as it is, any other as its JSON.
fn id_key<I: Serialize + ?Sized>(id: &I) -> String {
    match serde_json::to_value(id) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(e) => format!("<unserializable id: {e}>"),
    }
}

/// A record's id (its unique property) as the register names it.
fn record_key<E: Entity + Serialize>(record: &E) -> String {
    let unique = &E::model().unique_property;
    match serde_json::to_value(record) {
        Ok(json) => json
            .get(unique.as_ref())
            .map_or_else(|| format!("<no {unique}>"), id_key),
        Err(e) => format!("<unserializable record: {e}>"),
    }
}

/// What a typed write requires of the stored record: its version (or nothing stored, for
/// version 0) with a version field, anything without.
fn put_requirement<E: Entity + Serialize>(record: &E) -> Require {
    match Versioned::of(record).version {
        Some(0) => Require::AbsentOrVersion(0),
        Some(v) => Require::Version(v),
        None => Require::Any,
    }
}

/// Whether a library error says a requirement of the write did not hold (nothing written).
fn refused(error: &Error) -> bool {
    matches!(
        error,
        Error::AlreadyExists { .. }
            | Error::VersionConflict { .. }
            | Error::ConditionFailed { .. }
            | Error::NotFound { .. }
    )
}

/// Completes a write call from its result: applied, refused, open or left out.
fn finish_write(call: Call<Register>, result: &Result<()>) {
    match result {
        Ok(()) => call.ok(RegisterOut::Applied),
        Err(e) if refused(e) => call.ok(RegisterOut::Refused),
        Err(e) => call.error(e),
    }
}

impl Recorder<Register> {
    /// [`EntityExt::get`], recorded as a read of `id`.
    pub async fn get<E, S, I>(&self, client: usize, store: &S, id: &I) -> Result<Option<E>>
    where
        E: Entity + Serialize + DeserializeOwned + Send,
        S: Store,
        I: Serialize + Sync + ?Sized,
    {
        let call = self.invoke(client, RegisterOp::Read(id_key(id)));
        let result = E::get(store, id).await;
        match &result {
            Ok(record) => call.ok(RegisterOut::Read(record.as_ref().map(Versioned::of))),
            // a failed read wrote nothing, whatever the error
            Err(_) => call.not_applied(),
        }
        result
    }

    /// [`EntityExt::create`], recorded as a write that requires no record.
    pub async fn create<E, S>(&self, client: usize, store: &S, record: &E) -> Result<()>
    where
        E: Entity + Serialize + Sync,
        S: Store,
    {
        let op = RegisterOp::write(
            record_key(record),
            Require::Absent,
            Some(Versioned::stored(record)),
        );
        let call = self.invoke(client, op);
        let result = record.create(store).await;
        finish_write(call, &result);
        result
    }

    /// [`EntityExt::put`], recorded as a write that requires the record's version (with a
    /// version field) or nothing.
    pub async fn put<E, S>(&self, client: usize, store: &S, record: &E) -> Result<()>
    where
        E: Entity + Serialize + Sync,
        S: Store,
    {
        let op = RegisterOp::write(
            record_key(record),
            put_requirement(record),
            Some(Versioned::stored(record)),
        );
        let call = self.invoke(client, op);
        let result = record.put(store).await;
        finish_write(call, &result);
        result
    }

    /// [`EntityExt::update`], recorded as a write of the returned record. With a version
    /// field it requires the version before it (the returned one minus one); without one, only
    /// a record. What an update whose outcome is unknown wrote is not known either: it is
    /// recorded as [`RegisterOp::Unknown`] (the record may hold anything until it is read).
    pub async fn update<E, S, I>(
        &self,
        client: usize,
        store: &S,
        id: &I,
        changes: Changes<E>,
    ) -> Result<Option<E>>
    where
        E: Entity + Serialize + DeserializeOwned + Send,
        S: Store,
        I: Serialize + Sync + ?Sized,
    {
        let key = id_key(id);
        let invoked = self.tick();
        let result = E::update(store, id, changes).await;
        let returned = self.tick();
        let entry = match &result {
            Ok(Some(record)) => {
                let after = Versioned::of(record);
                let require = match after.version {
                    Some(v) if v > 0 => Require::Version(v - 1),
                    _ => Require::Present,
                };
                Some((
                    RegisterOp::write(key, require, Some(after)),
                    RegisterOut::Applied,
                ))
            }
            Ok(None) => Some((RegisterOp::Read(key), RegisterOut::Read(None))),
            Err(e) => {
                if may_have_applied(e) {
                    self.push(Entry::open(client, RegisterOp::Unknown(key), invoked));
                }
                None
            }
        };
        if let Some((input, output)) = entry {
            self.push(Entry::completed(client, input, output, invoked, returned));
        }
        result
    }

    /// [`EntityExt::modify`], recorded as a write that requires the record exactly as
    /// `change` last saw it and leaves the returned record (or, when the outcome is unknown,
    /// the changed record at the next version).
    pub async fn modify<E, S, I, F>(
        &self,
        client: usize,
        store: &S,
        id: &I,
        mut change: F,
    ) -> Result<Option<E>>
    where
        E: Entity + Serialize + DeserializeOwned + Send + Sync,
        S: Store,
        I: Serialize + Sync + ?Sized,
        F: FnMut(&mut E) + Send,
    {
        let key = id_key(id);
        let invoked = self.tick();
        let seen: Arc<Mutex<Option<(Versioned, Versioned)>>> = Arc::default();
        let last = Arc::clone(&seen);
        let result = E::modify(store, id, move |record: &mut E| {
            let before = Versioned::of(&*record);
            change(record);
            let after = Versioned::stored(&*record);
            *last.lock().unwrap_or_else(PoisonError::into_inner) = Some((before, after));
        })
        .await;
        let seen = seen.lock().unwrap_or_else(PoisonError::into_inner).take();
        let returned = self.tick();
        let entry = match (&result, seen) {
            (Ok(Some(record)), Some((before, _))) => Some(Entry::completed(
                client,
                RegisterOp::write(key, Require::Equals(before), Some(Versioned::of(record))),
                RegisterOut::Applied,
                invoked,
                returned,
            )),
            (Ok(None), _) => Some(Entry::completed(
                client,
                RegisterOp::Read(key),
                RegisterOut::Read(None),
                invoked,
                returned,
            )),
            (Err(e), Some((before, after))) if may_have_applied(e) => Some(Entry::open(
                client,
                RegisterOp::write(key, Require::Equals(before), Some(after)),
                invoked,
            )),
            _ => None,
        };
        if let Some(entry) = entry {
            self.push(entry);
        }
        result
    }

    /// [`EntityExt::delete`], recorded as a write that requires a record and deletes it
    /// (`Ok(None)` as a read of no record).
    pub async fn delete<E, S, I>(&self, client: usize, store: &S, id: &I) -> Result<Option<E>>
    where
        E: Entity + DeserializeOwned + Send,
        S: Store,
        I: Serialize + Sync + ?Sized,
    {
        let key = id_key(id);
        let invoked = self.tick();
        let result = E::delete(store, id).await;
        let returned = self.tick();
        let entry = match &result {
            Ok(Some(_)) => Some(Entry::completed(
                client,
                RegisterOp::write(key, Require::Present, None),
                RegisterOut::Applied,
                invoked,
                returned,
            )),
            Ok(None) => Some(Entry::completed(
                client,
                RegisterOp::Read(key),
                RegisterOut::Read(None),
                invoked,
                returned,
            )),
            Err(e) if may_have_applied(e) => Some(Entry::open(
                client,
                RegisterOp::write(key, Require::Present, None),
                invoked,
            )),
            Err(_) => None,
        };
        if let Some(entry) = entry {
            self.push(entry);
        }
        result
    }

    /// [`EntityExt::move_record`], recorded as one all-or-nothing write: `from` must exist
    /// (at `to`'s version, with a version field) and `to`'s id must be free, then `from` is
    /// deleted and `to` stored at the next version. A move that keeps the id (a new
    /// timestamp) is a write of that one record.
    pub async fn move_record<E, S, I>(
        &self,
        client: usize,
        store: &S,
        from: &I,
        to: &E,
    ) -> Result<()>
    where
        E: Entity + Serialize + Sync,
        S: Store,
        I: Serialize + Sync + ?Sized,
    {
        let (from_key, to_key) = (id_key(from), record_key(to));
        let present = match Versioned::of(to).version {
            Some(v) => Require::Version(v),
            None => Require::Present,
        };
        let stored = Some(Versioned::stored(to));
        let writes = if from_key == to_key {
            vec![Write::new(to_key, present, stored)]
        } else {
            vec![
                Write::new(from_key, present, None),
                Write::new(to_key, Require::Absent, stored),
            ]
        };
        let call = self.invoke(client, RegisterOp::Write(writes));
        let result = E::move_record(store, from, to).await;
        finish_write(call, &result);
        result
    }
}
