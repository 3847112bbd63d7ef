//! Fixtures shared by the integration tests and the benches of entity-manager.

use std::future::Future;

use entity_manager::store::{Page, QueryPage, Store, StoreError};

/// What a [`Hooked`] store does around each shard query of the store it wraps: wait, count,
/// yield to the executor…
pub trait QueryHook: Send + Sync {
    /// Runs `query` (the wrapped store's `query_page`) and returns what it returns.
    fn around<T: Send>(
        &self,
        query: impl Future<Output = T> + Send,
    ) -> impl Future<Output = T> + Send;
}

/// A store that forwards every call to `inner`, with `hook` around each `query_page`.
#[derive(Debug)]
pub struct Hooked<S, H> {
    /// The store that answers.
    pub inner: S,
    /// What runs around its shard queries.
    pub hook: H,
}

impl<S: Store, H: QueryHook> Store for Hooked<S, H> {
    crate::forward_store!(inner: definition, name, put_item, get_item, delete_item, batch_write);
    crate::forward_store!(inner: batch_get, transact_write, update_item, transact_get, scan_page);

    fn query_page(
        &self,
        request: &QueryPage,
    ) -> impl Future<Output = Result<Page, StoreError>> + Send {
        self.hook.around(self.inner.query_page(request))
    }
}

/// A store that forwards every call to `inner` and records what each shard query returned,
/// with the number `page` held when it ran (set it before each page): what the index showed
/// the query, for contracts stated "with respect to what the index returned".
#[derive(Debug)]
pub struct Observed<S> {
    /// The store that answers.
    pub inner: S,
    /// The number of the page being read.
    pub page: std::sync::atomic::AtomicUsize,
    /// Every item a shard query returned, with the page it was read for.
    pub seen: std::sync::Mutex<Vec<(usize, entity_manager::Item)>>,
}

impl<S> Observed<S> {
    /// `inner`, observed from page 0.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            page: std::sync::atomic::AtomicUsize::new(0),
            seen: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// What the shard queries returned so far, with their pages.
    pub fn seen(&self) -> Vec<(usize, entity_manager::Item)> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl<S: Store> Store for Observed<S> {
    crate::forward_store!(inner: definition, name, put_item, get_item, delete_item, batch_write);
    crate::forward_store!(inner: batch_get, transact_write, update_item, transact_get, scan_page);

    async fn query_page(&self, request: &QueryPage) -> Result<Page, StoreError> {
        let page = self.inner.query_page(request).await?;
        let k = self.page.load(std::sync::atomic::Ordering::SeqCst);
        if let Ok(mut seen) = self.seen.lock() {
            seen.extend(page.items.iter().map(|i| (k, i.clone())));
        }
        Ok(page)
    }
}

/// A store that forwards every call to `inner` and counts the shard queries that answered and
/// the items they returned.
#[derive(Debug)]
pub struct Tally<S> {
    /// The store that answers.
    pub inner: S,
    /// Shard queries answered.
    pub queries: std::sync::atomic::AtomicUsize,
    /// Items they returned.
    pub items: std::sync::atomic::AtomicUsize,
}

impl<S> Tally<S> {
    /// `inner`, counted from zero.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            queries: std::sync::atomic::AtomicUsize::new(0),
            items: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// The shard queries and items counted since the last call (or since the start).
    pub fn take(&self) -> (usize, usize) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.queries.swap(0, Relaxed), self.items.swap(0, Relaxed))
    }
}

/// What a stream that keeps its merge open between pages must save over paging by tokens, from
/// the counts ([`Tally::take`]: shard queries, items read) of paging `returned` items to the end
/// both ways: each item read about once (a read past the last page's end is all it reads
/// again), and at most a quarter of the shard queries (its pages grow: a few large reads
/// instead of a small one per lane and page). `label` names the case in a failure.
///
/// # Panics
///
/// When either does not hold.
pub fn assert_streamed_once(
    label: &str,
    returned: usize,
    by_tokens: (usize, usize),
    streaming: (usize, usize),
) {
    assert!(
        streaming.1 * 100 <= returned * 102,
        "{label}: the stream read {} items for {returned} ({by_tokens:?} by tokens)",
        streaming.1
    );
    assert!(
        streaming.0 * 4 <= by_tokens.0,
        "{label}: {streaming:?} streamed against {by_tokens:?} by tokens (shard queries, items read)"
    );
}

impl<S: Store> Store for Tally<S> {
    crate::forward_store!(inner: definition, name, put_item, get_item, delete_item, batch_write);
    crate::forward_store!(inner: batch_get, transact_write, update_item, transact_get, scan_page);

    async fn query_page(&self, request: &QueryPage) -> Result<Page, StoreError> {
        use std::sync::atomic::Ordering::Relaxed;
        let page = self.inner.query_page(request).await?;
        self.queries.fetch_add(1, Relaxed);
        self.items.fetch_add(page.items.len(), Relaxed);
        Ok(page)
    }
}

/// A page of a query (`page`: the query's `page` with the same token each time), retried while
/// it fails with a retryable shard query error (throttled, transient), as the paging guide
/// says a caller may; up to 10,000 failures, then the error.
pub async fn page_retrying<F, Fut>(
    mut page: F,
) -> Result<entity_manager::query::QueryPageResult, entity_manager::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<entity_manager::query::QueryPageResult, entity_manager::Error>>,
{
    let mut failures = 0;
    loop {
        match page().await {
            Err(entity_manager::Error::ShardQuery { source, .. })
                if source.is_retryable() && failures < 10_000 =>
            {
                failures += 1;
            }
            other => return other,
        }
    }
}

/// Forwards the named [`Store`] methods to the store in field `$field`, inside an
/// `impl Store for …` of a test double, so that the double writes out only the methods it
/// changes. With `then $hook`, each forwarded call first runs `self.$hook()` (a counter, say).
///
/// ```ignore
/// impl<S: Store> Store for Counting<S> {
///     forward_store!(inner: definition, name);
///     forward_store!(inner, then count: put_item, get_item, query_page);
///     // … the methods it changes
/// }
/// ```
#[macro_export]
macro_rules! forward_store {
    ($field:ident: $($method:ident),+ $(,)?) => {
        $( $crate::forward_store!(@ $field [] $method); )+
    };
    ($field:ident, then $hook:ident: $($method:ident),+ $(,)?) => {
        $( $crate::forward_store!(@ $field [$hook] $method); )+
    };
    (@ $f:ident [$($h:ident)?] definition) => {
        fn definition(&self) -> &::entity_manager::store::TableDefinition {
            $(self.$h();)?
            self.$f.definition()
        }
    };
    (@ $f:ident [$($h:ident)?] name) => {
        fn name(&self) -> ::std::option::Option<&str> {
            $(self.$h();)?
            self.$f.name()
        }
    };
    (@ $f:ident [$($h:ident)?] put_item) => {
        fn put_item(
            &self,
            item: ::entity_manager::Item,
            expect: ::entity_manager::store::Expect,
        ) -> impl ::std::future::Future<
            Output = ::std::result::Result<(), ::entity_manager::store::StoreError>,
        > + Send {
            $(self.$h();)?
            self.$f.put_item(item, expect)
        }
    };
    (@ $f:ident [$($h:ident)?] get_item) => {
        fn get_item(
            &self,
            key: &::entity_manager::Item,
            projection: ::std::option::Option<&[::std::string::String]>,
        ) -> impl ::std::future::Future<
            Output = ::std::result::Result<
                ::std::option::Option<::entity_manager::Item>,
                ::entity_manager::store::StoreError,
            >,
        > + Send {
            $(self.$h();)?
            self.$f.get_item(key, projection)
        }
    };
    (@ $f:ident [$($h:ident)?] delete_item) => {
        fn delete_item(
            &self,
            key: &::entity_manager::Item,
            expect: ::entity_manager::store::Expect,
        ) -> impl ::std::future::Future<
            Output = ::std::result::Result<(), ::entity_manager::store::StoreError>,
        > + Send {
            $(self.$h();)?
            self.$f.delete_item(key, expect)
        }
    };
    (@ $f:ident [$($h:ident)?] batch_write) => {
        fn batch_write(
            &self,
            writes: ::std::vec::Vec<::entity_manager::store::WriteRequest>,
        ) -> impl ::std::future::Future<
            Output = ::std::result::Result<(), ::entity_manager::store::BatchWriteError>,
        > + Send {
            $(self.$h();)?
            self.$f.batch_write(writes)
        }
    };
    (@ $f:ident [$($h:ident)?] batch_get) => {
        fn batch_get(
            &self,
            keys: ::std::vec::Vec<::entity_manager::Item>,
            projection: ::std::option::Option<&[::std::string::String]>,
        ) -> impl ::std::future::Future<
            Output = ::std::result::Result<
                ::std::vec::Vec<::entity_manager::Item>,
                ::entity_manager::store::BatchGetError,
            >,
        > + Send {
            $(self.$h();)?
            self.$f.batch_get(keys, projection)
        }
    };
    (@ $f:ident [$($h:ident)?] transact_write) => {
        fn transact_write(
            &self,
            writes: ::std::vec::Vec<::entity_manager::store::TransactWrite>,
        ) -> impl ::std::future::Future<
            Output = ::std::result::Result<(), ::entity_manager::store::StoreError>,
        > + Send {
            $(self.$h();)?
            self.$f.transact_write(writes)
        }
    };
    (@ $f:ident [$($h:ident)?] update_item) => {
        fn update_item(
            &self,
            key: &::entity_manager::Item,
            update: &::entity_manager::store::Update,
            expect: ::entity_manager::store::Expect,
            returns: ::entity_manager::store::ReturnValues,
        ) -> impl ::std::future::Future<
            Output = ::std::result::Result<
                ::std::option::Option<::entity_manager::Item>,
                ::entity_manager::store::StoreError,
            >,
        > + Send {
            $(self.$h();)?
            self.$f.update_item(key, update, expect, returns)
        }
    };
    (@ $f:ident [$($h:ident)?] transact_get) => {
        fn transact_get(
            &self,
            keys: ::std::vec::Vec<::entity_manager::Item>,
        ) -> impl ::std::future::Future<
            Output = ::std::result::Result<
                ::std::vec::Vec<::std::option::Option<::entity_manager::Item>>,
                ::entity_manager::store::StoreError,
            >,
        > + Send {
            $(self.$h();)?
            self.$f.transact_get(keys)
        }
    };
    (@ $f:ident [$($h:ident)?] query_page) => {
        fn query_page(
            &self,
            request: &::entity_manager::store::QueryPage,
        ) -> impl ::std::future::Future<
            Output = ::std::result::Result<
                ::entity_manager::store::Page,
                ::entity_manager::store::StoreError,
            >,
        > + Send {
            $(self.$h();)?
            self.$f.query_page(request)
        }
    };
    (@ $f:ident [$($h:ident)?] scan_page) => {
        fn scan_page(
            &self,
            request: &::entity_manager::store::ScanPage,
        ) -> impl ::std::future::Future<
            Output = ::std::result::Result<
                ::entity_manager::store::Page,
                ::entity_manager::store::StoreError,
            >,
        > + Send {
            $(self.$h();)?
            self.$f.scan_page(request)
        }
    };
}

/// Runs a future to completion on the current thread, with no runtime: for the benches and
/// tests that drive `MemoryStore` (which never waits on I/O) and want no executor overhead in
/// their figures. Everything else uses tokio.
pub fn block_on<F: Future>(future: F) -> F::Output {
    use std::pin::pin;
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};

    struct ThreadWaker(std::thread::Thread);
    impl Wake for ThreadWaker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

/// A xorshift64 generator for the writers and datasets of the property tests: the same seed
/// gives the same sequence (proptest's seed decides it, so a failing case replays).
#[derive(Clone, Copy, Debug, Default)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator from `seed` (any value: a zero state is avoided).
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    /// The next number below `m` (`m` > 0).
    pub fn below(&mut self, m: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % m.max(1)
    }
}

/// How a test reads a query's paging to its end ([`read_to_end`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `page` from each page's token.
    Tokens,
    /// One `stream` of items, whose pages go on from what the previous one read.
    Stream,
    /// `pages`, whose pages go on from what the previous one read; every third page the stream
    /// is dropped and a new one resumes from the last page's token (as after a failure).
    Pages,
}

impl Mode {
    /// Every mode.
    pub const ALL: [Self; 3] = [Self::Tokens, Self::Stream, Self::Pages];
}

/// A boxed future of `'s`.
pub type Boxed<'s, T> = std::pin::Pin<Box<dyn Future<Output = T> + 's>>;
/// A boxed stream of `'s`.
pub type BoxedStream<'s, T> = std::pin::Pin<Box<dyn entity_manager::query::Stream<Item = T> + 's>>;

type PageResult = Result<entity_manager::query::QueryPageResult, entity_manager::Error>;

/// A query [`read_to_end`] pages: an untyped `Query` or `MultiQuery`.
pub trait Paged {
    /// `page(token)`.
    fn page_at<'s>(&'s self, token: Option<&'s str>) -> Boxed<'s, PageResult>;
    /// `stream()`.
    fn items(&self) -> BoxedStream<'_, Result<entity_manager::Item, entity_manager::Error>>;
    /// `pages(token)`.
    fn pages_from(&self, token: Option<&str>) -> BoxedStream<'_, PageResult>;
}

/// `impl Paged` for query types whose `page`, `stream` and `pages` have the untyped queries'
/// signatures.
macro_rules! paged {
    ($($query:ty),+) => {$(
        impl<S: Store> Paged for $query {
            fn page_at<'s>(&'s self, token: Option<&'s str>) -> Boxed<'s, PageResult> {
                Box::pin(self.page(token))
            }
            fn items(
                &self,
            ) -> BoxedStream<'_, Result<entity_manager::Item, entity_manager::Error>> {
                Box::pin(self.stream())
            }
            fn pages_from(&self, token: Option<&str>) -> BoxedStream<'_, PageResult> {
                Box::pin(self.pages(token))
            }
        }
    )+};
}

paged!(
    entity_manager::query::untyped::Query<'_, S, entity_manager::query::untyped::Indexed>,
    entity_manager::query::untyped::MultiQuery<'_, S>
);

/// Every item of `query`'s paging, read as `mode` says, with `between` awaited between two
/// pages (by tokens or of `pages`: a write to the table, say). Fails after 20,000 pages (the
/// paging did not end), and when a stream of pages ends before a page without a token.
///
/// # Errors
///
/// A page's error, `between`'s, or either failure above.
pub async fn read_to_end<Q, W, E>(
    query: &Q,
    mode: Mode,
    mut between: impl FnMut() -> W,
) -> Result<Vec<entity_manager::Item>, Box<dyn std::error::Error>>
where
    Q: Paged + ?Sized,
    W: Future<Output = Result<(), E>>,
    E: std::error::Error + 'static,
{
    use entity_manager::query::StreamExt as _;
    let mut got = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0usize;
    match mode {
        Mode::Stream => {
            let mut items = query.items();
            while let Some(item) = items.next().await {
                got.push(item?);
            }
            Ok(got)
        }
        Mode::Tokens | Mode::Pages => {
            // the stream of pages, until it is dropped (every third page)
            let mut stream = None;
            loop {
                let page = if mode == Mode::Tokens {
                    query.page_at(token.as_deref()).await?
                } else {
                    stream
                        .get_or_insert_with(|| query.pages_from(token.as_deref()))
                        .next()
                        .await
                        .ok_or("the pages ended before a page without a token")??
                };
                got.extend(page.items);
                token = page.next;
                if token.is_none() {
                    return Ok(got);
                }
                pages += 1;
                if pages > 20_000 {
                    return Err("did not terminate".into());
                }
                between().await?;
                if pages.is_multiple_of(3) {
                    stream = None;
                }
            }
        }
    }
}

/// A test's record count: `default`, or fewer when `ITEMS_CAP` (a number) says so.
///
/// For quicker verdicts only, like [`cases`]: `.ci/mutants.sh` sets it to 10,000 for the two
/// tests that page 20,000 records to the end at limits down to 1 (the largest part of a query
/// mutant's test time). What they bound are ratios of long pagings (a stream's shard queries
/// against paging by tokens), which hold from about 10,000 records (at 5,000 a growing
/// stream's first pages weigh too much: measured), so do not set it lower.
///
/// ```
/// assert!((1..=20_000).contains(&entity_manager_tests::items(20_000)));
/// ```
#[must_use]
pub fn items(default: usize) -> usize {
    std::env::var("ITEMS_CAP")
        .ok()
        .and_then(|cap| cap.parse::<usize>().ok())
        .map_or(default, |cap| cap.clamp(1, default.max(1)))
}

/// A property test's case count: `default`, or fewer when `CASES_CAP` (a number) says so.
///
/// For quick verdicts only: `.ci/mutants.sh` sets it so that each mutant's run of the query
/// tests costs minutes; without it every test runs the cases it names.
///
/// ```
/// assert!((1..=500).contains(&entity_manager_tests::cases(500)));
/// ```
#[must_use]
pub fn cases(default: u32) -> u32 {
    std::env::var("CASES_CAP")
        .ok()
        .and_then(|cap| cap.parse::<u32>().ok())
        .map_or(default, |cap| cap.clamp(1, default.max(1)))
}
