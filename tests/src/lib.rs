//! Fixtures shared by the integration tests and the benches of entity-manager.

use std::future::Future;

use entity_manager::Item;
use entity_manager::store::{
    BatchGetError, BatchWriteError, Expect, Page, QueryPage, ReturnValues, Store, StoreError,
    TableDefinition, TransactWrite, Update, WriteRequest,
};

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
    fn definition(&self) -> &TableDefinition {
        self.inner.definition()
    }

    fn name(&self) -> Option<&str> {
        self.inner.name()
    }

    fn put_item(
        &self,
        item: Item,
        expect: Expect,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.inner.put_item(item, expect)
    }

    fn get_item(
        &self,
        key: &Item,
        projection: Option<&[String]>,
    ) -> impl Future<Output = Result<Option<Item>, StoreError>> + Send {
        self.inner.get_item(key, projection)
    }

    fn delete_item(
        &self,
        key: &Item,
        expect: Expect,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.inner.delete_item(key, expect)
    }

    fn batch_write(
        &self,
        writes: Vec<WriteRequest>,
    ) -> impl Future<Output = Result<(), BatchWriteError>> + Send {
        self.inner.batch_write(writes)
    }

    fn batch_get(
        &self,
        keys: Vec<Item>,
        projection: Option<&[String]>,
    ) -> impl Future<Output = Result<Vec<Item>, BatchGetError>> + Send {
        self.inner.batch_get(keys, projection)
    }

    fn transact_write(
        &self,
        writes: Vec<TransactWrite>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.inner.transact_write(writes)
    }

    fn update_item(
        &self,
        key: &Item,
        update: &Update,
        expect: Expect,
        returns: ReturnValues,
    ) -> impl Future<Output = Result<Option<Item>, StoreError>> + Send {
        self.inner.update_item(key, update, expect, returns)
    }

    fn transact_get(
        &self,
        keys: Vec<Item>,
    ) -> impl Future<Output = Result<Vec<Option<Item>>, StoreError>> + Send {
        self.inner.transact_get(keys)
    }

    fn query_page(
        &self,
        request: &QueryPage,
    ) -> impl Future<Output = Result<Page, StoreError>> + Send {
        self.hook.around(self.inner.query_page(request))
    }
}
