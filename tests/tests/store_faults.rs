//! Fault injection: a store that wraps `MemoryStore` and, on a seeded schedule, leaves batch
//! requests unprocessed, throttles, or fails for good. It drives the same batch loop
//! (`write_batches`/`get_batches`) as `DynamoStore`, so these tests exercise the real retry,
//! backoff and error-reporting code without a network.

mod store_support;

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use entity_manager::store::{
    BatchSender, Expect, GetBatch, MemoryStore, Page, QueryPage, RetryPolicy, Store, StoreError,
    StoreErrorKind, TableDefinition, TransactWrite, WriteRequest, get_batches, write_batches,
};
use entity_manager::{Item, store};
use store_support::{TestResult, canonical, definition, key, text};

/// `SplitMix64`.
struct Rng(u64);

impl Rng {
    fn percent(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % 100
    }
}

/// A `MemoryStore` behind injected faults.
struct Faulty {
    inner: MemoryStore,
    rng: Mutex<Rng>,
    /// Each request of each call is left unprocessed with this probability (percent).
    unprocessed_percent: u64,
    /// Range keys that are never processed.
    stuck: HashSet<String>,
    /// Every n-th call fails with a throttling error (0: never).
    throttle_every: usize,
    /// From this call on (1-based), every call fails with a non-retryable error.
    fail_from: Option<usize>,
    calls: AtomicUsize,
    pauses: Mutex<Vec<Duration>>,
    policy: RetryPolicy,
}

impl Faulty {
    fn new(seed: u64) -> Self {
        Self {
            inner: MemoryStore::new(definition()),
            rng: Mutex::new(Rng(seed)),
            unprocessed_percent: 0,
            stuck: HashSet::new(),
            throttle_every: 0,
            fail_from: None,
            calls: AtomicUsize::new(0),
            pauses: Mutex::new(Vec::new()),
            policy: RetryPolicy {
                max_attempts: 30,
                base_delay: Duration::from_millis(10),
                max_delay: Duration::from_millis(200),
            },
        }
    }

    /// Injects the scheduled failure of this call, if any.
    fn fault(&self, operation: &'static str) -> Result<(), StoreError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if self.fail_from.is_some_and(|f| call >= f) {
            return Err(StoreError::new(
                StoreErrorKind::Other,
                operation,
                "injected permanent failure",
            ));
        }
        if self.throttle_every > 0 && call.is_multiple_of(self.throttle_every) {
            return Err(StoreError::new(
                StoreErrorKind::Throttled,
                operation,
                "injected throttling",
            ));
        }
        Ok(())
    }

    /// Whether this request is left unprocessed on this call.
    fn skip(&self, item: &Item) -> bool {
        if self.stuck.contains(&text(item, "rangeKey")) {
            return true;
        }
        let roll = self.rng.lock().map_or(0, |mut r| r.percent());
        roll < self.unprocessed_percent
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl BatchSender for Faulty {
    async fn send_write_batch(
        &self,
        batch: Vec<WriteRequest>,
    ) -> Result<Vec<WriteRequest>, StoreError> {
        assert!(
            batch.len() <= store::MAX_BATCH_WRITE,
            "a chunk of {} writes",
            batch.len()
        );
        self.fault("BatchWriteItem")?;
        let (unprocessed, processed): (Vec<_>, Vec<_>) = batch.into_iter().partition(|w| {
            let (WriteRequest::Put(i) | WriteRequest::Delete(i)) = w;
            self.skip(i)
        });
        if !processed.is_empty() {
            self.inner.send_write_batch(processed).await?;
        }
        Ok(unprocessed)
    }

    async fn send_get_batch(
        &self,
        keys: Vec<Item>,
        projection: Option<&[String]>,
    ) -> Result<GetBatch, StoreError> {
        assert!(
            keys.len() <= store::MAX_BATCH_GET,
            "a chunk of {} keys",
            keys.len()
        );
        self.fault("BatchGetItem")?;
        let (unprocessed, processed): (Vec<_>, Vec<_>) =
            keys.into_iter().partition(|k| self.skip(k));
        let items = if processed.is_empty() {
            Vec::new()
        } else {
            self.inner
                .send_get_batch(processed, projection)
                .await?
                .items
        };
        Ok(GetBatch { items, unprocessed })
    }

    async fn pause(&self, delay: Duration) {
        if let Ok(mut p) = self.pauses.lock() {
            p.push(delay);
        }
    }
}

impl Store for Faulty {
    fn definition(&self) -> &TableDefinition {
        self.inner.definition()
    }

    async fn put_item(&self, item: Item, expect: Expect) -> Result<(), StoreError> {
        self.inner.put_item(item, expect).await
    }

    async fn get_item(
        &self,
        key: &Item,
        projection: Option<&[String]>,
    ) -> Result<Option<Item>, StoreError> {
        self.inner.get_item(key, projection).await
    }

    async fn delete_item(&self, key: &Item, expect: Expect) -> Result<(), StoreError> {
        self.inner.delete_item(key, expect).await
    }

    async fn batch_write(&self, writes: Vec<WriteRequest>) -> Result<(), store::BatchWriteError> {
        write_batches(self, writes, &self.policy).await
    }

    async fn batch_get(
        &self,
        keys: Vec<Item>,
        projection: Option<&[String]>,
    ) -> Result<Vec<Item>, store::BatchGetError> {
        get_batches(self, keys, projection, &self.policy).await
    }

    async fn transact_write(&self, writes: Vec<TransactWrite>) -> Result<(), StoreError> {
        self.inner.transact_write(writes).await
    }

    async fn update_item(
        &self,
        key: &Item,
        update: &store::Update,
        expect: Expect,
        returns: store::ReturnValues,
    ) -> Result<Option<Item>, StoreError> {
        self.inner.update_item(key, update, expect, returns).await
    }

    async fn transact_get(&self, keys: Vec<Item>) -> Result<Vec<Option<Item>>, StoreError> {
        self.inner.transact_get(keys).await
    }

    async fn query_page(&self, request: &QueryPage) -> Result<Page, StoreError> {
        self.inner.query_page(request).await
    }
}

fn items(count: usize) -> Vec<Item> {
    (0..count)
        .map(|i| {
            let mut it = key("f", &format!("{i:04}"));
            it.insert("i".into(), store_support::n(i));
            it
        })
        .collect()
}

fn puts(items: &[Item]) -> Vec<WriteRequest> {
    items.iter().cloned().map(WriteRequest::Put).collect()
}

#[tokio::test]
async fn a_thousand_items_under_30_percent_unprocessed_are_all_written() -> TestResult {
    let mut store = Faulty::new(1);
    store.unprocessed_percent = 30;
    let all = items(1000);
    store.batch_write(puts(&all)).await?;
    assert_eq!(canonical(store.inner.items()), canonical(all));
    // 40 chunks, and retries: at 30% per request nearly every chunk needs some.
    assert!(store.calls() > 80, "only {} calls", store.calls());
    let pauses = store.pauses.lock().map_err(|_| "poisoned")?.clone();
    assert_eq!(
        pauses.len(),
        store.calls() - 40,
        "one pause before each retry"
    );
    let policy = store.policy;
    assert!(
        pauses
            .iter()
            .all(|p| *p >= policy.base_delay / 2 && *p <= policy.max_delay)
    );
    assert!(
        pauses.iter().any(|p| *p > policy.base_delay),
        "the backoff grows"
    );
    Ok(())
}

#[tokio::test]
async fn a_thousand_keys_under_30_percent_unprocessed_are_all_read() -> TestResult {
    let mut store = Faulty::new(2);
    let all = items(1000);
    store.inner.batch_write(puts(&all)).await?;
    store.unprocessed_percent = 30;
    let keys: Vec<Item> = (0..1000).map(|i| key("f", &format!("{i:04}"))).collect();
    let read = store.batch_get(keys, None).await?;
    assert_eq!(canonical(read), canonical(all));
    assert!(store.calls() > 10);
    Ok(())
}

#[tokio::test]
async fn throttling_on_a_schedule_is_retried_until_everything_is_written() -> TestResult {
    let mut store = Faulty::new(3);
    store.unprocessed_percent = 30;
    store.throttle_every = 3;
    let all = items(500);
    store.batch_write(puts(&all)).await?;
    assert_eq!(store.inner.len(), 500);
    Ok(())
}

#[tokio::test]
async fn requests_never_processed_end_in_an_error_naming_exactly_the_unwritten() -> TestResult {
    let mut store = Faulty::new(4);
    store.unprocessed_percent = 30;
    let all = items(100);
    // Items 0, 7, 14 and 21 of the first chunk are never processed.
    store.stuck = ["0000", "0007", "0014", "0021"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    let e = store
        .batch_write(puts(&all))
        .await
        .err()
        .ok_or("a batch with stuck items succeeded")?;
    assert!(e.cause.is_incomplete() && e.cause.is_retryable(), "{e:?}");
    assert_eq!(e.total, 100);
    let mut expected: Vec<WriteRequest> = puts(&[
        all[0].clone(),
        all[7].clone(),
        all[14].clone(),
        all[21].clone(),
    ]);
    expected.extend(puts(&all[25..]));
    assert_eq!(
        e.unwritten, expected,
        "exactly the stuck requests and every later chunk"
    );
    // Bounded: the first chunk was sent exactly `max_attempts` times.
    assert_eq!(store.calls(), usize::try_from(store.policy.max_attempts)?);
    // Nothing silently dropped: what is stored and what is reported unwritten partition the batch.
    let stored: Vec<String> = store
        .inner
        .items()
        .iter()
        .map(|i| text(i, "rangeKey"))
        .collect();
    let expected_stored: Vec<String> = (0..25)
        .filter(|i| i % 7 != 0)
        .map(|i| format!("{i:04}"))
        .collect();
    assert_eq!(stored, expected_stored);
    assert!(
        e.to_string().contains("79 of 100 requests unwritten"),
        "{e}"
    );
    // retryable: the message says so; `Debug` counts the requests instead of printing them
    assert!(
        e.is_retryable() && e.to_string().ends_with("retry them"),
        "{e}"
    );
    let debug = format!("{e:?}");
    assert!(
        debug.contains("[79 requests]") && debug.len() < 400,
        "{debug}"
    );
    Ok(())
}

#[tokio::test]
async fn a_permanent_failure_stops_the_batch_and_names_every_unwritten_request() -> TestResult {
    let mut store = Faulty::new(5);
    store.fail_from = Some(3);
    let all = items(100);
    let e = store
        .batch_write(puts(&all))
        .await
        .err()
        .ok_or("a failing batch succeeded")?;
    assert!(!e.cause.is_retryable(), "{e:?}");
    assert_eq!(e.unwritten, puts(&all[50..]));
    assert_eq!(store.inner.len(), 50);
    assert_eq!(store.calls(), 3, "a non-retryable error is not retried");
    // permanent: the message does not advise a retry
    assert!(!e.is_retryable(), "{e:?}");
    assert!(!e.to_string().contains("retry them"), "{e}");
    assert!(e.to_string().contains("fix the cause first"), "{e}");
    let debug = format!("{e:?}");
    assert!(
        debug.contains("[50 requests]") && debug.len() < 400,
        "{debug}"
    );
    Ok(())
}

#[tokio::test]
async fn keys_never_processed_end_in_an_error_naming_exactly_the_unread() -> TestResult {
    let mut store = Faulty::new(6);
    let all = items(250);
    store.inner.batch_write(puts(&all)).await?;
    store.unprocessed_percent = 30;
    store.stuck = ["0105", "0150"].into_iter().map(str::to_owned).collect();
    let keys: Vec<Item> = (0..250).map(|i| key("f", &format!("{i:04}"))).collect();
    let e = store
        .batch_get(keys.clone(), None)
        .await
        .err()
        .ok_or("a batch get with stuck keys succeeded")?;
    assert!(e.cause.is_incomplete(), "{e:?}");
    let mut expected = vec![keys[105].clone(), keys[150].clone()];
    expected.extend(keys[200..].iter().cloned());
    assert_eq!(e.unread, expected);
    // What was read is everything of the first two chunks but the stuck keys.
    let read: Vec<String> = canonical(e.items)
        .iter()
        .map(|i| text(i, "rangeKey"))
        .collect();
    let expected_read: Vec<String> = (0..200)
        .filter(|i| *i != 105 && *i != 150)
        .map(|i| format!("{i:04}"))
        .collect();
    assert_eq!(read, expected_read);
    Ok(())
}

/// A server that accepts connections and never answers: every `DynamoStore` call, batch retry
/// loops and queries included, ends in a typed timeout error instead of hanging.
#[tokio::test]
async fn a_silent_server_gives_a_typed_timeout_on_every_call() -> TestResult {
    use entity_manager::store::DynamoStore;

    // accepts, holds the connections open, answers nothing
    let (endpoint, held) = store_support::silent_server().await?;
    let store = DynamoStore::new(store_support::client_at(&endpoint), "silent", definition())
        .with_timeouts(Duration::from_millis(400), Duration::from_millis(200));

    let guard = Duration::from_secs(20);
    let check =
        |what: &str, result: Result<Result<(), StoreError>, tokio::time::error::Elapsed>| {
            match result {
                Err(elapsed) => panic!("{what} hung past the guard ({elapsed})"),
                Ok(Ok(())) => panic!("{what} succeeded against a silent server"),
                Ok(Err(e)) => assert!(e.is_timeout(), "{what}: {e}"),
            }
        };
    let item = key("h", "r");
    check(
        "put_item",
        tokio::time::timeout(guard, store.put_item(item.clone(), Expect::Any)).await,
    );
    check(
        "get_item",
        tokio::time::timeout(guard, async { store.get_item(&item, None).await.map(drop) }).await,
    );
    check(
        "delete_item",
        tokio::time::timeout(guard, store.delete_item(&item, Expect::Any)).await,
    );
    check(
        "query_page",
        tokio::time::timeout(guard, async {
            store
                .query_page(&QueryPage::new(entity_manager::AttributeValue::S(
                    "h".into(),
                )))
                .await
                .map(drop)
        })
        .await,
    );
    check(
        "transact_write",
        tokio::time::timeout(
            guard,
            store.transact_write(vec![TransactWrite::Put {
                item: item.clone(),
                expect: Expect::Absent,
            }]),
        )
        .await,
    );
    // batches: the error lists every request as not done, caused by the timeout
    let written = tokio::time::timeout(guard, store.batch_write(puts(&items(30)))).await;
    match written {
        Err(elapsed) => panic!("batch_write hung past the guard ({elapsed})"),
        Ok(Ok(())) => panic!("batch_write succeeded against a silent server"),
        Ok(Err(e)) => assert!(
            e.to_string().contains("no answer within the time limit"),
            "{e}"
        ),
    }
    let read = tokio::time::timeout(guard, store.batch_get(vec![item], None)).await;
    match read {
        Err(elapsed) => panic!("batch_get hung past the guard ({elapsed})"),
        Ok(Ok(_)) => panic!("batch_get succeeded against a silent server"),
        Ok(Err(e)) => assert!(
            e.to_string().contains("no answer within the time limit"),
            "{e}"
        ),
    }
    held.abort();
    Ok(())
}

/// An endpoint that is not DynamoDB (a proxy's error page): the error says what answered, not
/// the SDK's bare "service error".
#[tokio::test]
async fn an_endpoint_that_is_not_dynamodb_is_named_for_what_it_answered() -> TestResult {
    use entity_manager::store::DynamoStore;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let endpoint = format!("http://{}", listener.local_addr()?);
    let server = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 64 * 1024];
                let _ = socket.read(&mut buffer).await;
                let body = "<html><body>403 Forbidden by the proxy</body></html>";
                let answer = format!(
                    "HTTP/1.1 403 Forbidden\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    let store = DynamoStore::new(store_support::client_at(&endpoint), "proxied", definition())
        .with_timeouts(Duration::from_secs(5), Duration::from_secs(5));
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        store.get_item(&key("h", "r"), None),
    )
    .await;
    server.abort();
    let error = match result {
        Ok(Err(e)) => e,
        other => return Err(format!("expected a store error, got {other:?}").into()),
    };
    let message = error.to_string();
    assert!(
        message.contains("HTTP 403") && message.contains("Forbidden by the proxy"),
        "{message}"
    );
    assert!(message.contains("is it a DynamoDB endpoint"), "{message}");
    Ok(())
}
