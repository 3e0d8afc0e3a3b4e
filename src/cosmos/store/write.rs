//! Writes: one operation, or a transactional batch. On the embedded store each is made durable
//! before it is acknowledged: the partition is held from before the write until its commit, and
//! a request dropped midway is committed as the emulator holds it. Also the request records the
//! database alone keeps.

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
use super::super::sdk::{document_id, metered};
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
    /// The write's request records, which the emulator never holds: committed with the rest,
    /// if the emulator applied it.
    on_disk: &'a [(String, Option<Value>)],
    guard: Option<embedded::locks::PartitionGuard>,
}

impl Drop for DroppedMidway<'_> {
    fn drop(&mut self) {
        let Some(guard) = self.guard.take() else { return };
        let (durability, container, partition_key) =
            (self.durability.clone(), self.container, self.partition_key.to_owned());
        let ids = self.records.iter().map(|(id, _)| id.clone()).collect();
        let on_disk = self.on_disk.to_vec();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(durability.commit_as_is(container, partition_key, ids, on_disk, guard));
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
        if let Some(durability) = &self.durability
            && operations
                .iter()
                .any(|operation| operation_id(operation).is_some_and(embedded::on_disk_only))
        {
            return self.batch_with_records(durability, container, partition_key, operations).await;
        }
        let (records, batch) = sdk_batch(partition_key, operations)?;
        self.durably(
            container,
            partition_key,
            records,
            self.run_batch(container, partition_key, batch),
        )
        .await
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

    /// [`Store::execute_batch`] on the embedded store, for a batch that creates request
    /// records, which the database alone keeps (see `embedded`). Under the partition's lock, a
    /// record that is there already fails the batch as Cosmos DB would, before anything is
    /// applied. That is 409 for it and 424 for the rest, as the SDK's emulator answers a failed
    /// batch (`azure_data_cosmos_driver` 1.0.0, `in_memory_emulator/operations.rs`,
    /// `failed_batch_results`). Else the other operations go to the emulator, and the records
    /// are committed with them, in one transaction.
    async fn batch_with_records(
        &self,
        durability: &Arc<Durability>,
        container: Container,
        partition_key: &str,
        operations: Vec<WriteOp>,
    ) -> Result<(), StoreError> {
        let total = operations.len();
        let (mut on_disk, mut positions, mut rest) = (Vec::new(), Vec::new(), Vec::new());
        for (index, operation) in operations.into_iter().enumerate() {
            let record =
                operation_id(&operation).filter(|id| embedded::on_disk_only(id)).map(str::to_owned);
            match (record, operation) {
                (Some(id), WriteOp::Create { document }) => {
                    on_disk.push((index, id, Some(document)))
                }
                (Some(id), _) => {
                    return Err(StoreError::RecordNotCreated { id });
                }
                (None, other) => {
                    positions.push(index);
                    rest.push(other);
                }
            }
        }
        let guard = durability.locks().write(container, partition_key).await;
        for (index, id, _) in &on_disk {
            if durability.request_record(container, partition_key, id).await?.is_some() {
                let statuses = (0..total).map(|at| if at == *index { 409 } else { 424 }).collect();
                return Err(StoreError::BatchFailed { statuses });
            }
        }
        let on_disk: Vec<_> = on_disk.into_iter().map(|(_, id, document)| (id, document)).collect();
        if rest.is_empty() {
            return durability.commit(container, partition_key, on_disk, guard).await;
        }
        let (records, batch) = sdk_batch(partition_key, rest)?;
        let write = self.run_batch(container, partition_key, batch);
        match self
            .durably_holding(durability, guard, container, partition_key, records, on_disk, write)
            .await
        {
            // The statuses of the operations the emulator ran, at their places in the batch.
            Err(StoreError::BatchFailed { statuses: ran }) => {
                let mut statuses = vec![424; total];
                for (index, status) in positions.into_iter().zip(ran) {
                    statuses[index] = status;
                }
                Err(StoreError::BatchFailed { statuses })
            }
            other => other,
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
        self.durably_holding(
            durability,
            guard,
            container,
            partition_key,
            records,
            Vec::new(),
            write,
        )
        .await
    }

    /// [`Store::durably`] on the embedded store, its partition's `guard` taken; `on_disk`, the
    /// write's request records, committed with its `records` (see `embedded`).
    #[allow(clippy::too_many_arguments)]
    async fn durably_holding<R>(
        &self,
        durability: &Arc<Durability>,
        guard: embedded::locks::PartitionGuard,
        container: Container,
        partition_key: &str,
        mut records: Vec<(String, Option<Value>)>,
        on_disk: Vec<(String, Option<Value>)>,
        write: impl Future<Output = Result<R, StoreError>>,
    ) -> Result<(), StoreError> {
        let mut dropped_midway = DroppedMidway {
            durability,
            container,
            partition_key,
            records: &records,
            on_disk: &on_disk,
            guard: Some(guard),
        };
        let written = write.await;
        let guard = dropped_midway.guard.take().expect("taken only here");
        drop(dropped_midway);
        if let Err(error) = written {
            // Refused, which nearly always applied nothing; but a write whose answer was lost
            // and that the SDK sent again is refused as a duplicate of itself, applied.
            let ids = records.into_iter().map(|(id, _)| id).collect();
            durability
                .clone()
                .commit_as_is(container, partition_key.to_owned(), ids, on_disk, guard)
                .await;
            return Err(error);
        }
        records.extend(on_disk);
        durability.commit(container, partition_key, records, guard).await
    }
}

/// The id of the item `operation` writes (`None`: a document without one, which the SDK refuses).
fn operation_id(operation: &WriteOp) -> Option<&str> {
    match operation {
        WriteOp::Create { document } | WriteOp::Upsert { document, .. } => {
            document.get("id")?.as_str()
        }
        WriteOp::Replace { id, .. } | WriteOp::Delete { id, .. } => Some(id),
    }
}

/// `operations` as the SDK's transactional batch, with what each leaves (id and document,
/// `None` for a deletion), for the embedded store's commit.
#[allow(clippy::type_complexity)]
fn sdk_batch(
    partition_key: &str,
    operations: Vec<WriteOp>,
) -> Result<(Vec<(String, Option<Value>)>, TransactionalBatch), StoreError> {
    let mut records = Vec::with_capacity(operations.len());
    let mut batch = TransactionalBatch::new(partition_key.to_owned());
    let sdk_error = |error: CosmosError| StoreError::sdk("a transactional batch", error);
    let precondition = |etag: &Option<String>| {
        etag.as_ref().map(|etag| Precondition::if_match(Etag::from(etag.clone())))
    };
    for operation in operations {
        batch = match operation {
            WriteOp::Create { document } => {
                records.push((document_id(&document)?, Some(document.clone())));
                batch.create_item(document).map_err(sdk_error)?
            }
            WriteOp::Replace { id, document, if_match } => {
                records.push((id.clone(), Some(document.clone())));
                let options = precondition(&if_match)
                    .map(|p| BatchReplaceOptions::default().with_precondition(p));
                batch.replace_item(id, document, options).map_err(sdk_error)?
            }
            WriteOp::Upsert { document, if_match } => {
                records.push((document_id(&document)?, Some(document.clone())));
                let options = precondition(&if_match)
                    .map(|p| BatchUpsertOptions::default().with_precondition(p));
                batch.upsert_item(document, options).map_err(sdk_error)?
            }
            WriteOp::Delete { id, if_match } => {
                records.push((id.clone(), None));
                let options = precondition(&if_match)
                    .map(|p| BatchDeleteOptions::default().with_precondition(p));
                batch.delete_item(id, options)
            }
        };
    }
    Ok((records, batch))
}
