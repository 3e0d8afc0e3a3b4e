//! The embedded store's transactional batch: checked whole, then applied an item at a time.
//!
//! The SDK's emulator runs a batch on a copy of the whole physical partition
//! (`azure_data_cosmos_driver` 1.0.0, `in_memory_emulator/operations.rs`, `handle_batch`:
//! `docs_guard.clone()`), so each batch cost as much as its physical partition held: the search
//! index (a common word's chunks, and every item that shares their physical partition) took
//! longer a batch the more posts it indexed, and a post's comments longer the more it had. The
//! embedded store needs no copy. A write holds its logical partition exclusively until its
//! commit, and no one reads or writes the partition meanwhile ([`super::locks`]). So a batch is
//! checked against the items as they are, as Cosmos DB checks it, then applied as point writes
//! and committed as one. Nobody sees it in between. Cosmos DB runs its own batches: this is the
//! embedded store's alone.
//!
//! The SDK's faults and its resending must still meet a batch as one request, as on Azure (the
//! tests' faults are the SDK's fault injection, the network between the handler and the
//! database). So the batch's request goes through the application's client: a batch that writes
//! an item and deletes it again in a container of the emulator's own, where it copies next to
//! nothing ([`super::emulator::BATCHES`]), the item's id numbered. The emulator counts its
//! arrivals ([`super::emulator::BatchArrivals`]), and the store runs the batch once for each: not
//! at all if a fault stopped the request on its way, twice if the SDK sent it again after its
//! answer was lost. The caller gets the last run's outcome, or the fault if the last answer was
//! lost. (A fault rule for batches of one container only never meets that request; the tests'
//! rules for batches name no container.)

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use azure_data_cosmos::{ContainerClient, TransactionalBatch};
use serde::Serialize;
use serde_json::Value;

use super::emulator::BATCH_MARK;
use super::locks::PartitionGuard;
use super::{Durability, on_disk_only};
use crate::cosmos::items::WriteOp;
use crate::cosmos::sdk::{bounded, document_id};
use crate::cosmos::{Container, Meter, Scope, StoreError};

/// Cosmos DB's bounds on a transactional batch, which the emulator also refuses past
/// (`handle_batch`: `MAX_BATCH_OPERATIONS`, `MAX_BATCH_PAYLOAD_BYTES`), so that nothing works
/// here that an account refuses.
const MAX_OPERATIONS: usize = 100;
const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// What the emulator charges a batch: 1.24 RU an operation (`BATCH_OPERATION_CHARGE`), and 1 RU
/// for one that failed (`handle_batch`), so that `handler cost` and the benches read the same
/// figures as before the embedded store ran its batches itself.
fn emulator_charge(operations: usize, outcome: &Result<(), StoreError>) -> f64 {
    match outcome {
        Ok(()) => 1.24 * operations as f64,
        Err(StoreError::BatchFailed { .. }) => 1.0,
        Err(_) => 0.0,
    }
}

/// An item as the batch has left it so far.
#[derive(Clone)]
enum Item {
    Absent,
    /// Its etag; `None` once the batch wrote it (its new etag is no one's to match).
    Present(Option<String>),
}

impl Durability {
    /// Runs `operations` in the partition as one transactional batch, holding `guard` (its
    /// partition, exclusively) until the batch is committed or found to fail, and counts it on
    /// the request's meter as one operation. A task of its own: a request dropped midway leaves
    /// no batch half applied.
    pub(crate) async fn batch(
        self: &Arc<Self>,
        container: Container,
        partition_key: &str,
        operations: Vec<WriteOp>,
        guard: PartitionGuard,
    ) -> Result<(), StoreError> {
        let (durability, total) = (self.clone(), operations.len());
        let owned_key = partition_key.to_owned();
        let outcome = tokio::spawn(async move {
            durability.send_and_run(container, &owned_key, operations, guard).await
        })
        .await
        .map_err(|source| StoreError::TaskDied { work: "a transactional batch", source })
        .and_then(|outcome| outcome);
        Meter::record(Scope::partition(container, partition_key), emulator_charge(total, &outcome));
        outcome
    }

    /// [`Durability::batch`] in its task: sends the batch's request through the application's
    /// client, then runs the batch once for each time the request reached the emulator.
    async fn send_and_run(
        self: &Arc<Self>,
        container: Container,
        partition_key: &str,
        mut operations: Vec<WriteOp>,
        guard: PartitionGuard,
    ) -> Result<(), StoreError> {
        check_bounds(&operations)?;
        let number = self.next_batch.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let answer = bounded(
            self.batch_requests.container.execute_transactional_batch(request(number)?, None),
        )
        .await;
        let arrived = self.batch_requests.arrivals.take(number);
        let fault = match answer {
            Ok(_) if arrived > 0 => None,
            Ok(_) => Some(StoreError::BadRequest(
                "a transactional batch was answered without reaching the emulator".into(),
            )),
            Err(fault) => Some(fault),
        };
        let mut guard = Some(guard);
        let mut outcome = Ok(());
        for run in 1..=arrived {
            let guard = match guard.take() {
                Some(guard) => guard,
                // Sent again: the partition was let go after the run before, as on Azure.
                None => self.locks().write(container, partition_key).await,
            };
            let operations =
                if run == arrived { std::mem::take(&mut operations) } else { operations.clone() };
            outcome = self.run_batch(container, partition_key, operations, guard).await;
        }
        match fault {
            Some(fault) => Err(fault),
            None => outcome,
        }
    }

    /// Runs `operations` as one batch, holding `guard`: checked, applied through the store's own
    /// client (the database's work, which no fault meets), committed.
    async fn run_batch(
        self: &Arc<Self>,
        container: Container,
        partition_key: &str,
        operations: Vec<WriteOp>,
        guard: PartitionGuard,
    ) -> Result<(), StoreError> {
        if let Some((index, status)) =
            self.first_failure(container, partition_key, &operations).await?
        {
            let statuses =
                (0..operations.len()).map(|at| if at == index { status } else { 424 }).collect();
            return Err(StoreError::BatchFailed { statuses });
        }
        let own = &self.containers[&container];
        let mut records = Vec::with_capacity(operations.len());
        for operation in operations {
            let (id, document) = match operation {
                WriteOp::Create { document } | WriteOp::Upsert { document, .. } => {
                    (document_id(&document)?, Some(document))
                }
                WriteOp::Replace { id, document, .. } => (id, Some(document)),
                WriteOp::Delete { id, .. } => (id, None),
            };
            // A request record is the database's alone (see `super`): committed, not applied.
            let applied = if on_disk_only(&id) {
                Ok(())
            } else {
                apply(own, partition_key, &id, document.as_ref()).await
            };
            records.push((id, document));
            if let Err(error) = applied {
                let ids: Vec<String> = records.into_iter().map(|(id, _)| id).collect();
                self.restore(container, partition_key, &ids).await;
                return Err(error);
            }
        }
        self.commit(container, partition_key, records, guard).await
    }

    /// The first operation that fails, and its status, as Cosmos DB decides it: each operation
    /// against the items as the ones before it left them.
    async fn first_failure(
        self: &Arc<Self>,
        container: Container,
        partition_key: &str,
        operations: &[WriteOp],
    ) -> Result<Option<(usize, u16)>, StoreError> {
        let mut items: HashMap<&str, Item> = HashMap::new();
        for (index, operation) in operations.iter().enumerate() {
            let id = match operation {
                WriteOp::Create { document } | WriteOp::Upsert { document, .. } => {
                    document.get("id").and_then(Value::as_str).ok_or(StoreError::NoId)?
                }
                WriteOp::Replace { id, .. } | WriteOp::Delete { id, .. } => id.as_str(),
            };
            if on_disk_only(id) && !matches!(operation, WriteOp::Create { .. }) {
                return Err(StoreError::RecordNotCreated { id: id.to_owned() });
            }
            let item = match (items.get(id), operation) {
                (Some(item), _) => item.clone(),
                // An upsert without a condition fails on nothing: what it replaces is not read.
                (None, WriteOp::Upsert { if_match: None, .. }) => Item::Present(None),
                (None, _) => self.item_now(container, partition_key, id).await?,
            };
            let etag_differs = |if_match: &Option<String>| match (&item, if_match) {
                (Item::Present(etag), Some(wanted)) => etag.as_ref() != Some(wanted),
                _ => false,
            };
            let (failed, after) = match operation {
                WriteOp::Create { .. } => {
                    (matches!(item, Item::Present(_)).then_some(409), Item::Present(None))
                }
                WriteOp::Upsert { if_match, .. } => {
                    (etag_differs(if_match).then_some(412), Item::Present(None))
                }
                WriteOp::Replace { if_match, .. } | WriteOp::Delete { if_match, .. } => {
                    let failed = match item {
                        Item::Absent => Some(404),
                        Item::Present(_) => etag_differs(if_match).then_some(412),
                    };
                    let after = match operation {
                        WriteOp::Delete { .. } => Item::Absent,
                        _ => Item::Present(None),
                    };
                    (failed, after)
                }
            };
            if let Some(status) = failed {
                return Ok(Some((index, status)));
            }
            items.insert(id, after);
        }
        Ok(None)
    }

    /// The item `id` as the partition holds it now: its etag from a point read of the emulator,
    /// or, for a request record, whether the database holds it.
    async fn item_now(
        self: &Arc<Self>,
        container: Container,
        partition_key: &str,
        id: &str,
    ) -> Result<Item, StoreError> {
        if on_disk_only(id) {
            return Ok(match self.request_record(container, partition_key, id).await? {
                Some(row) => Item::Present(Some(format!("\"{}\"", row.seq))),
                None => Item::Absent,
            });
        }
        let client = &self.containers[&container];
        match bounded(client.read_item(partition_key.to_owned(), id, None)).await {
            Ok(response) => Ok(Item::Present(response.headers().etag().map(ToString::to_string))),
            Err(StoreError::NotFound) => Ok(Item::Absent),
            Err(other) => Err(other),
        }
    }
}

/// The request that stands for batch `number` on its way to the emulator: an item written and
/// deleted again (a write, so that a fault that loses a written batch's answer meets it; nothing
/// left), in [`super::emulator::BATCHES`], its id numbered.
fn request(number: u64) -> Result<TransactionalBatch, StoreError> {
    let id = format!("{BATCH_MARK}{number}");
    Ok(TransactionalBatch::new(BATCH_MARK)
        .upsert_item(serde_json::json!({"id": id, "key": BATCH_MARK}), None)
        .map_err(|error| StoreError::sdk("a transactional batch's request", error))?
        .delete_item(id, None))
}

/// One write of a batch, unconditional: the batch was checked under the partition's lock.
async fn apply(
    client: &ContainerClient,
    partition_key: &str,
    id: &str,
    document: Option<&Value>,
) -> Result<(), StoreError> {
    let partition_key = partition_key.to_owned();
    match document {
        Some(document) => bounded(client.upsert_item(partition_key, id, document, None)).await,
        None => bounded(client.delete_item(partition_key, id, None)).await,
    }
    .map(drop)
}

/// Refuses a batch Cosmos DB refuses whole (400 past 100 operations, 413 past 2 MB of body).
fn check_bounds(operations: &[WriteOp]) -> Result<(), StoreError> {
    if operations.len() > MAX_OPERATIONS {
        return Err(StoreError::BadRequest(format!(
            "a transactional batch of {} operations: Cosmos DB takes at most {MAX_OPERATIONS}",
            operations.len()
        )));
    }
    let bytes = body_bytes(operations);
    if bytes > MAX_BODY_BYTES {
        return Err(StoreError::BadRequest(format!(
            "a transactional batch of {bytes} bytes: Cosmos DB takes at most {MAX_BODY_BYTES}"
        )));
    }
    Ok(())
}

/// The bytes of the body the SDK would send for `operations`: a JSON array of operations, each
/// as `azure_data_cosmos` 1.0.0 serializes its `TransactionalBatchOperation`
/// (`models/transactional_batch.rs`), counted without being written.
fn body_bytes(operations: &[WriteOp]) -> usize {
    #[derive(Serialize)]
    #[serde(tag = "operationType", rename_all_fields = "camelCase")]
    enum Sent<'a> {
        Create {
            resource_body: &'a Value,
        },
        Upsert {
            resource_body: &'a Value,
            #[serde(skip_serializing_if = "Option::is_none")]
            if_match: Option<&'a str>,
        },
        Replace {
            id: &'a str,
            resource_body: &'a Value,
            #[serde(skip_serializing_if = "Option::is_none")]
            if_match: Option<&'a str>,
        },
        Delete {
            id: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            if_match: Option<&'a str>,
        },
    }
    struct Count(usize);
    impl Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let sent: Vec<Sent> = operations
        .iter()
        .map(|operation| match operation {
            WriteOp::Create { document } => Sent::Create { resource_body: document },
            WriteOp::Upsert { document, if_match } => {
                Sent::Upsert { resource_body: document, if_match: if_match.as_deref() }
            }
            WriteOp::Replace { id, document, if_match } => {
                Sent::Replace { id, resource_body: document, if_match: if_match.as_deref() }
            }
            WriteOp::Delete { id, if_match } => Sent::Delete { id, if_match: if_match.as_deref() },
        })
        .collect();
    let mut count = Count(0);
    serde_json::to_writer(&mut count, &sent).expect("JSON values always serialize");
    count.0
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_batch_s_body_is_counted_as_the_sdk_sends_it() {
        let operations = vec![
            WriteOp::Create { document: json!({"id": "a"}) },
            WriteOp::Delete { id: "b".into(), if_match: Some("\"1\"".into()) },
        ];
        let sent = r#"[{"operationType":"Create","resourceBody":{"id":"a"}},{"operationType":"Delete","id":"b","ifMatch":"\"1\""}]"#;
        assert_eq!(body_bytes(&operations), sent.len());
    }

    #[test]
    fn a_batch_past_cosmos_db_s_bounds_is_refused_whole() {
        let create = |id: usize| WriteOp::Create { document: json!({"id": id.to_string()}) };
        assert!(check_bounds(&(0..100).map(create).collect::<Vec<_>>()).is_ok());
        let error = check_bounds(&(0..101).map(create).collect::<Vec<_>>()).unwrap_err();
        assert!(error.to_string().contains("at most 100"), "{error}");
        let big =
            WriteOp::Create { document: json!({"id": "a", "text": "x".repeat(MAX_BODY_BYTES)}) };
        let error = check_bounds(&[big]).unwrap_err();
        assert!(error.to_string().contains("at most 2097152"), "{error}");
    }
}
