//! Every operation runs in a `tracing` span that records its attempts, throttles, retries,
//! unprocessed batch requests and consumed capacity, with the store's calls (on `DynamoDB`:
//! the AWS SDK's own spans and events) as its children. A recording subscriber checks a create,
//! an update, a batch, a transaction, a scan page and a migrate page on `MemoryStore` under a
//! fault plan and on `DynamoDB` Local through the chaos proxy, where the counts the spans
//! recorded must equal what the proxy (or the fault plan) injected. Each run prints its seed;
//! `SPANS_SEED=<n>` replays one.
#![allow(clippy::struct_field_names)]

mod chaos_support;
mod entity_support;
mod store_support;

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use entity_manager::field::Changes;
use entity_manager::migrate::Migration;
use entity_manager::scan::ParallelScan;
use entity_manager::store::{DynamoStore, FaultPlan, MemoryStore, Store};
use entity_manager::{EntityExt, Transaction};
use entity_support::{Member, TestResult, definition, member};
use futures::TryStreamExt;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// A span as recorded.
#[derive(Clone, Debug)]
struct SpanRecord {
    name: &'static str,
    target: String,
    parent: Option<u64>,
    fields: BTreeMap<String, String>,
}

/// An event as recorded: its target and the span it happened in.
#[derive(Clone, Debug)]
struct EventRecord {
    target: String,
    parent: Option<u64>,
}

#[derive(Default)]
struct Recorded {
    next: u64,
    spans: HashMap<u64, SpanRecord>,
    events: Vec<EventRecord>,
    /// The spans entered, innermost last (the runtime is single-threaded).
    stack: Vec<u64>,
}

/// A subscriber that keeps every span (with its fields and parent) and event, at every level.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Recorded>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl Recorder {
    fn lock(&self) -> std::sync::MutexGuard<'_, Recorded> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let mut r = self.lock();
        r.next += 1;
        let id = r.next;
        let parent = match attrs.parent() {
            Some(p) => Some(p.into_u64()),
            None if attrs.is_contextual() => r.stack.last().copied(),
            None => None,
        };
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        r.spans.insert(
            id,
            SpanRecord {
                name: attrs.metadata().name(),
                target: attrs.metadata().target().to_owned(),
                parent,
                fields,
            },
        );
        Id::from_u64(id)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut r = self.lock();
        if let Some(s) = r.spans.get_mut(&span.into_u64()) {
            values.record(&mut Fields(&mut s.fields));
        }
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut r = self.lock();
        let parent = match event.parent() {
            Some(p) => Some(p.into_u64()),
            None if event.is_contextual() => r.stack.last().copied(),
            None => None,
        };
        r.events.push(EventRecord {
            target: event.metadata().target().to_owned(),
            parent,
        });
    }
    fn enter(&self, span: &Id) {
        self.lock().stack.push(span.into_u64());
    }
    fn exit(&self, span: &Id) {
        let mut r = self.lock();
        if let Some(at) = r.stack.iter().rposition(|s| *s == span.into_u64()) {
            r.stack.remove(at);
        }
    }
}

impl Recorded {
    /// Whether `ancestor` is `span` or encloses it.
    fn within(&self, mut span: Option<u64>, ancestor: u64) -> bool {
        while let Some(s) = span {
            if s == ancestor {
                return true;
            }
            span = self.spans.get(&s).and_then(|s| s.parent);
        }
        false
    }

    /// The spans named `name`, by id.
    fn named(&self, name: &str) -> Vec<(u64, &SpanRecord)> {
        let mut found: Vec<_> = self
            .spans
            .iter()
            .filter(|(_, s)| s.name == name)
            .map(|(id, s)| (*id, s))
            .collect();
        found.sort_by_key(|(id, _)| *id);
        found
    }

    /// A count field of a span (0 when missing).
    fn count(span: &SpanRecord, field: &str) -> u64 {
        span.fields
            .get(field)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// The spans of operations not inside another operation.
    fn top_level(&self) -> Vec<&SpanRecord> {
        self.spans
            .values()
            .filter(|s| s.target == "entity_manager" && s.fields.contains_key("attempts"))
            .filter(|s| {
                let mut up = s.parent;
                while let Some(p) = up {
                    let Some(parent) = self.spans.get(&p) else {
                        break;
                    };
                    if parent.target == "entity_manager" && parent.fields.contains_key("attempts") {
                        return false;
                    }
                    up = parent.parent;
                }
                true
            })
            .collect()
    }
}

/// The operations every test runs: a create, an update, a batch (`put_many`), a transaction, a
/// full scan and a migration, on a table with 30 members.
async fn operations<S: Store>(store: &S) -> TestResult {
    member("m-create", 1_500).create(store).await?;
    Member::update(
        store,
        "m-create",
        Changes::new().set(Member::FIELDS.first_name, "ann"),
    )
    .await?
    .ok_or("the update found no record")?;
    let many: Vec<Member> = (0..30)
        .map(|i| member(&format!("m{i:02}"), 1_000 + i * 37))
        .collect();
    Member::put_many(store, &many).await?;
    Transaction::new()
        .create(&member("m-tx", 1_700))?
        .commit(store)
        .await?;
    let scanned: Vec<entity_manager::Item> = ParallelScan::new(store)
        .page_size(10)
        .items()
        .try_collect()
        .await?;
    assert_eq!(scanned.len(), 32);
    let migration = Migration::new().records::<Member, Member, _>(|mut m: Member| {
        m.last_name = m.last_name.to_uppercase();
        m
    })?;
    let done = migration
        .run(ParallelScan::new(store).page_size(10), |_| {
            ControlFlow::Continue(())
        })
        .await?;
    assert!(done.complete);
    Ok(())
}

/// The span names of the operations above, each expected at least once.
const OPERATIONS: [&str; 6] = [
    "entity_manager.create",
    "entity_manager.update",
    "entity_manager.batch_write",
    "entity_manager.transaction",
    "entity_manager.scan_page",
    "entity_manager.migrate_page",
];

/// Runs `operations` under a recorder on a single-threaded runtime (so the subscriber sees
/// every poll) and returns what it recorded.
fn record<F, Fut>(run: F) -> Result<Recorded, Box<dyn std::error::Error>>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = TestResult>,
{
    let recorder = Recorder::default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    tracing::subscriber::with_default(recorder.clone(), || runtime.block_on(run()))?;
    drop(runtime);
    let taken = std::mem::take(&mut *recorder.lock());
    Ok(taken)
}

/// Every operation has its span, once per call, with its counts filled and at least one
/// attempt; the create and the update are one span each.
fn check_operation_spans(recorded: &Recorded) {
    for name in OPERATIONS {
        let spans = recorded.named(name);
        assert!(!spans.is_empty(), "no `{name}` span");
        for (_, span) in &spans {
            for field in [
                "attempts",
                "throttles",
                "retries",
                "unprocessed",
                "consumed_capacity",
                "outcome",
            ] {
                assert!(
                    span.fields.contains_key(field),
                    "`{name}` has no `{field}`: {span:?}"
                );
            }
            // a page of no items (a scan's last page can be empty) sends nothing
            let empty = span.fields.get("items").is_some_and(|n| n == "0");
            assert!(empty || Recorded::count(span, "attempts") >= 1, "{span:?}");
            assert_eq!(span.fields.get("outcome").map(String::as_str), Some("ok"));
        }
    }
    assert_eq!(recorded.named("entity_manager.create").len(), 1);
    assert_eq!(recorded.named("entity_manager.update").len(), 1);
    assert_eq!(recorded.named("entity_manager.transaction").len(), 1);
}

fn seed() -> u64 {
    store_support::seed("SPANS_SEED")
}

/// On `MemoryStore` with throttling and unprocessed batches: the spans are there, and the
/// throttles and unprocessed requests they recorded are exactly those the fault plan injected.
#[test]
fn memory_store_operations_run_in_spans_that_count_the_faults() -> TestResult {
    let plan = FaultPlan::new(seed())
        .throttle(0.2)
        .unprocessed(0.3)
        .attempts(20);
    let store = MemoryStore::new(definition()?).with_faults(plan);
    let recorded = record(|| operations(&store))?;
    check_operation_spans(&recorded);
    let top = recorded.top_level();
    let sum = |field: &str| top.iter().map(|s| Recorded::count(s, field)).sum::<u64>();
    let counts = store.fault_counts();
    assert!(counts.throttled > 0, "{counts:?}");
    assert_eq!(sum("throttles"), counts.throttled, "{counts:?}");
    assert_eq!(sum("unprocessed"), counts.unprocessed, "{counts:?}");
    assert!(sum("retries") >= counts.throttled, "{counts:?}");
    Ok(())
}

/// On `DynamoDB`: every operation span that sent requests holds the SDK's spans and events and
/// recorded the capacity they consumed (more than 0, but for the pages of a segment that holds
/// no item; each operation's spans together consumed some).
fn check_sdk_calls_and_capacity(recorded: &Recorded) -> TestResult {
    for name in OPERATIONS {
        let mut total_capacity = 0.0;
        for (id, span) in recorded.named(name) {
            let sdk_spans = recorded
                .spans
                .values()
                .filter(|s| s.target.starts_with("aws_") && recorded.within(s.parent, id))
                .count();
            let sdk_events = recorded
                .events
                .iter()
                .filter(|e| e.target.starts_with("aws_") && recorded.within(e.parent, id))
                .count();
            // a page of a segment that holds no item makes no request (nothing to write)
            // or reads nothing: the SDK calls are where the span says it sent some
            let attempts = Recorded::count(span, "attempts");
            assert_eq!(
                attempts > 0,
                sdk_spans > 0 && sdk_events > 0,
                "`{name}`: {attempts} attempts, {sdk_spans} SDK spans, {sdk_events} SDK events"
            );
            if attempts == 0 {
                continue;
            }
            let capacity: f64 = span
                .fields
                .get("consumed_capacity")
                .and_then(|c| c.parse().ok())
                .ok_or_else(|| format!("`{name}` recorded no capacity: {span:?}"))?;
            // a scan page of a segment that holds no item reads nothing, and `DynamoDB`
            // Local then reports 0 units: the scan's pages together consumed some
            if !matches!(
                name,
                "entity_manager.scan_page" | "entity_manager.migrate_page"
            ) {
                assert!(capacity > 0.0, "`{name}` consumed no capacity: {span:?}");
            }
            total_capacity += capacity;
        }
        assert!(total_capacity > 0.0, "`{name}` consumed no capacity in all");
    }
    Ok(())
}

/// On `DynamoDB` Local through the chaos proxy (throttling): each operation's span holds the
/// SDK's spans and events, its attempts and consumed capacity are filled, and the attempts and
/// throttles of all spans add up to exactly the requests the proxy saw and the throttles it
/// answered.
#[test]
fn dynamodb_operations_run_in_spans_over_the_sdk_calls() -> TestResult {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let Some(direct) = runtime.block_on(store_support::dynamo_store("spans", definition()?))?
    else {
        return Ok(());
    };
    let plan = chaos_support::ChaosPlan {
        seed: seed(),
        throttle: 0.15,
        ..chaos_support::ChaosPlan::default()
    };
    let upstream = std::env::var("DYNAMODB_ENDPOINT")?;
    let outcome = (|| -> TestResult {
        let counts = Arc::new(chaos_support::ChaosCounts::default());
        let recorded = record(|| {
            let counts = counts.clone();
            let table = direct.table_name().to_owned();
            let plan = plan.clone();
            async move {
                let proxy = chaos_support::ChaosProxy::start(&upstream, plan).await?;
                let sdk = store_support::client_at(&proxy.endpoint);
                // many attempts with short pauses: throttles are retried, and quickly
                let config = sdk
                    .config()
                    .to_builder()
                    .retry_config(
                        entity_manager::store::aws_sdk_dynamodb::config::retry::RetryConfig::standard()
                            .with_max_attempts(10)
                            .with_initial_backoff(Duration::from_millis(5)),
                    )
                    .build();
                let store = DynamoStore::new(
                    entity_manager::store::aws_sdk_dynamodb::Client::from_conf(config),
                    table,
                    definition()?,
                );
                let result = operations(&store).await;
                for (to, from) in [
                    (&counts.requests, &proxy.counts.requests),
                    (&counts.throttled, &proxy.counts.throttled),
                ] {
                    to.store(
                        from.load(std::sync::atomic::Ordering::SeqCst),
                        std::sync::atomic::Ordering::SeqCst,
                    );
                }
                result
            }
        })?;
        check_operation_spans(&recorded);
        check_sdk_calls_and_capacity(&recorded)?;
        let top = recorded.top_level();
        let sum = |field: &str| top.iter().map(|s| Recorded::count(s, field)).sum::<u64>();
        let requests = counts.requests.load(std::sync::atomic::Ordering::SeqCst);
        let throttled = counts.throttled.load(std::sync::atomic::Ordering::SeqCst);
        eprintln!(
            "{requests} requests, {throttled} throttled; spans: {} attempts, {} throttles, {} retries",
            sum("attempts"),
            sum("throttles"),
            sum("retries")
        );
        assert!(throttled > 0, "the proxy throttled nothing");
        assert_eq!(sum("attempts"), requests);
        assert_eq!(sum("throttles"), throttled);
        assert!(sum("retries") >= throttled);
        Ok(())
    })();
    runtime.block_on(direct.delete_table())?;
    outcome
}
