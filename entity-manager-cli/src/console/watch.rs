//! A store that notes what a query read from each partition: the query view's bars per shard
//! and its rounds (the most pages one partition was asked for), which the library's page
//! statistics sum over every shard.

use std::collections::BTreeMap;
use std::sync::Mutex;

use entity_manager::Item;
use entity_manager::store::{
    BatchGetError, BatchWriteError, DynamoStore, Expect, Page, QueryPage, ReturnValues, ScanPage,
    Store, StoreError, TableDefinition, TransactWrite, Update, WriteRequest,
};

/// What one partition gave a query: the pages asked and the items read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Reads {
    pub(super) queries: usize,
    pub(super) items: usize,
}

/// `DynamoStore` reads, noted per partition (index and hash key value) by `query_page`.
pub(super) struct Watched<'s> {
    inner: &'s DynamoStore,
    reads: Mutex<BTreeMap<(String, String), Reads>>,
}

impl<'s> Watched<'s> {
    pub(super) fn new(inner: &'s DynamoStore) -> Self {
        Self {
            inner,
            reads: Mutex::default(),
        }
    }

    /// The reads per partition: (index, hash key value) → reads.
    pub(super) fn reads(&self) -> BTreeMap<(String, String), Reads> {
        self.reads.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

/// A key value as text (the hash key of a query).
fn text(value: &entity_manager::AttributeValue) -> String {
    match value {
        entity_manager::AttributeValue::S(s) | entity_manager::AttributeValue::N(s) => s.clone(),
        other => format!("{other:?}"),
    }
}

impl Store for Watched<'_> {
    fn definition(&self) -> &TableDefinition {
        self.inner.definition()
    }

    fn name(&self) -> Option<&str> {
        Store::name(self.inner)
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

    async fn batch_write(&self, writes: Vec<WriteRequest>) -> Result<(), BatchWriteError> {
        self.inner.batch_write(writes).await
    }

    async fn batch_get(
        &self,
        keys: Vec<Item>,
        projection: Option<&[String]>,
    ) -> Result<Vec<Item>, BatchGetError> {
        self.inner.batch_get(keys, projection).await
    }

    async fn transact_write(&self, writes: Vec<TransactWrite>) -> Result<(), StoreError> {
        self.inner.transact_write(writes).await
    }

    async fn update_item(
        &self,
        key: &Item,
        update: &Update,
        expect: Expect,
        returns: ReturnValues,
    ) -> Result<Option<Item>, StoreError> {
        self.inner.update_item(key, update, expect, returns).await
    }

    async fn transact_get(&self, keys: Vec<Item>) -> Result<Vec<Option<Item>>, StoreError> {
        self.inner.transact_get(keys).await
    }

    async fn query_page(&self, request: &QueryPage) -> Result<Page, StoreError> {
        let page = self.inner.query_page(request).await?;
        let lane = (
            request.index.clone().unwrap_or_default(),
            text(&request.hash_key),
        );
        if let Ok(mut reads) = self.reads.lock() {
            let noted = reads.entry(lane).or_default();
            noted.queries += 1;
            noted.items += page.items.len();
        }
        Ok(page)
    }

    async fn scan_page(&self, request: &ScanPage) -> Result<Page, StoreError> {
        self.inner.scan_page(request).await
    }
}
