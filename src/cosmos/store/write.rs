//! Writes: one operation, or a transactional batch. On the embedded store each is made durable
//! before it is acknowledged: the partition is held from before the write until its commit, and
//! a request dropped midway is committed as the emulator holds it. A batch there is the embedded
//! store's own (`embedded::batch`), with the request records the database alone keeps.

use std::sync::Arc;

use azure_core::http::Etag;
use azure_data_cosmos::options::{
    BatchDeleteOptions, BatchReplaceOptions, BatchUpsertOptions, Precondition,
};
use azure_data_cosmos::{CosmosError, TransactionalBatch};
use serde_json::Value;

use super::super::Scope;
use super::super::embedded::{self, Durability};
use super::super::error::StoreError;
use super::super::items::WriteOp;
use super::super::schema::Container;
use super::super::sdk::metered;
use super::Store;

/// Holds a write's partition while the emulator applies it. A request dropped then (its client
/// went away) drops the write's future. The emulator may have applied it without the database
/// or the change index ever hearing of it (a post readable now, never copied, and gone after a
/// restart). On drop, it has the items committed as the emulator holds them, the partition
/// still held until then. (It borrows the write's own records: nothing is copied unless it is
/// dropped holding the partition.)
struct DroppedMidway<'a> {
    durability: &'a Arc<Durability>,
    container: Container,
    partition_key: &'a str,
    records: &'a [(String, Option<Value>)],
    guard: Option<embedded::locks::PartitionGuard>,
}

impl Drop for DroppedMidway<'_> {
    fn drop(&mut self) {
        let Some(guard) = self.guard.take() else { return };
        let (durability, container, partition_key) =
            (self.durability.clone(), self.container, self.partition_key.to_owned());
        let ids = self.records.iter().map(|(id, _)| id.clone()).collect();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(durability.commit_as_is(container, partition_key, ids, guard));
        }
    }
}
impl Store {
    /// One write, conditional as `write` says.
    pub async fn execute_write(
        &self,
        container: Container,
        partition_key: &str,
        write: WriteOp,
    ) -> Result<(), StoreError> {
        match write {
            WriteOp::Create { document } => self.create(container, partition_key, &document).await,
            WriteOp::Replace { id, document, if_match } => {
                self.replace(container, partition_key, &id, &document, if_match.as_deref()).await
            }
            other => self
                .execute_batch(container, partition_key, vec![other])
                .await
                .map_err(StoreError::of_failed_operation),
        }
    }

    /// Commits `operations` in one partition as one transactional batch: all or nothing.
    pub async fn execute_batch(
        &self,
        container: Container,
        partition_key: &str,
        operations: Vec<WriteOp>,
    ) -> Result<(), StoreError> {
        if operations.is_empty() {
            return Ok(());
        }
        if let Some(durability) = &self.durability {
            let guard = durability.locks().write(container, partition_key).await;
            return durability.batch(container, partition_key, operations, guard).await;
        }
        let batch = sdk_batch(partition_key, operations)?;
        self.run_batch(container, partition_key, batch).await
    }

    /// For the tests: `operations` as the SDK's emulator runs a batch, without the embedded
    /// store (nothing committed), to hold the embedded store's own batches to.
    #[cfg(test)]
    pub(in crate::cosmos) async fn emulator_batch(
        &self,
        container: Container,
        partition_key: &str,
        operations: Vec<WriteOp>,
    ) -> Result<(), StoreError> {
        self.run_batch(container, partition_key, sdk_batch(partition_key, operations)?).await
    }

    /// Runs a transactional batch in the SDK's client (the account, or the emulator).
    async fn run_batch(
        &self,
        container: Container,
        partition_key: &str,
        batch: TransactionalBatch,
    ) -> Result<(), StoreError> {
        let response = metered(
            Scope::partition(container, partition_key),
            self.container(container).execute_transactional_batch(batch, None),
        )
        .await?;
        let results = response
            .into_model()
            .map_err(|error| StoreError::sdk("a transactional batch's answer", error))?;
        // A failed batch is an `Ok` response (207) whose operations say what failed.
        if results.results().iter().all(|result| result.is_success()) {
            Ok(())
        } else {
            let statuses = results.results().iter().map(|result| result.status_code()).collect();
            Err(StoreError::BatchFailed { statuses })
        }
    }

    /// Runs a write. On the embedded store, it also commits what it left (`records`: id and
    /// document, `None` for a deletion) to the database before acknowledging it. It holds the
    /// partition from before the write until then, so no one sees it before it is durable.
    pub(in crate::cosmos) async fn durably<R>(
        &self,
        container: Container,
        partition_key: &str,
        records: Vec<(String, Option<Value>)>,
        write: impl Future<Output = Result<R, StoreError>>,
    ) -> Result<(), StoreError> {
        let Some(durability) = &self.durability else {
            return write.await.map(drop);
        };
        let guard = durability.locks().write(container, partition_key).await;
        let mut dropped_midway = DroppedMidway {
            durability,
            container,
            partition_key,
            records: &records,
            guard: Some(guard),
        };
        let written = write.await;
        let guard = dropped_midway.guard.take().expect("taken only here");
        drop(dropped_midway);
        if let Err(error) = written {
            // Refused, which nearly always applied nothing; but a write whose answer was lost
            // and that the SDK sent again is refused as a duplicate of itself, applied.
            let ids = records.into_iter().map(|(id, _)| id).collect();
            durability.clone().commit_as_is(container, partition_key.to_owned(), ids, guard).await;
            return Err(error);
        }
        durability.commit(container, partition_key, records, guard).await
    }
}

/// `operations` as the SDK's transactional batch.
fn sdk_batch(
    partition_key: &str,
    operations: Vec<WriteOp>,
) -> Result<TransactionalBatch, StoreError> {
    let mut batch = TransactionalBatch::new(partition_key.to_owned());
    let sdk_error = |error: CosmosError| StoreError::sdk("a transactional batch", error);
    let precondition =
        |etag: Option<String>| etag.map(|etag| Precondition::if_match(Etag::from(etag)));
    for operation in operations {
        batch = match operation {
            WriteOp::Create { document } => batch.create_item(document).map_err(sdk_error)?,
            WriteOp::Replace { id, document, if_match } => {
                let options = precondition(if_match)
                    .map(|p| BatchReplaceOptions::default().with_precondition(p));
                batch.replace_item(id, document, options).map_err(sdk_error)?
            }
            WriteOp::Upsert { document, if_match } => {
                let options = precondition(if_match)
                    .map(|p| BatchUpsertOptions::default().with_precondition(p));
                batch.upsert_item(document, options).map_err(sdk_error)?
            }
            WriteOp::Delete { id, if_match } => {
                let options = precondition(if_match)
                    .map(|p| BatchDeleteOptions::default().with_precondition(p));
                batch.delete_item(id, options)
            }
        };
    }
    Ok(batch)
}
