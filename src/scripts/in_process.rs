//! Runs the stored procedures and the trigger in this process, for backends that cannot run them
//! (the embedded store, the Linux emulator), with the guarantees Cosmos DB gives a script.
//!
//! The script runs on a blocking thread, reading the partition through the store (see
//! [`engine`]). Its net writes are then committed as ONE transactional batch, every replace or
//! delete conditioned on the etag the script read and every create on the id being free. Some
//! scripts' decisions rest on more than the documents they write: they queried, or read a
//! document they do not write. Such a script also replaces the partition's fence item
//! ([`FENCE_ID`]) under the etag it had when the run began. Every committing script moves the
//! fence. So of two scripts of one partition that overlap in time, in any number of processes,
//! only the first commits. The other runs again on the new state, as Cosmos DB runs a
//! partition's scripts one after another. A script that throws writes nothing.

use std::borrow::Cow;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::runtime::Handle;

use super::engine::{
    self, Invocation, Limits, Partition, PartitionReader, Reads, TriggerOperation, write_id,
};
use super::{PostTrigger, Script, ScriptError, ScriptExecutor, ScriptFailure, StoredProcedure};
use crate::cosmos::{
    Container, Meter, PageRequest, QuerySpec, Store, StoreError, WriteOp, retry_pause,
};
use crate::striped::StripedLock;

/// The id of the item each partition's committing scripts move (see the module docs). Application
/// ids are printable ASCII; this one starts with `§` (U+00A7), so it can never be one of them.
/// It carries only the partition key and `scriptFence: true`; in `feed`, whose partition key is
/// `type`, it has `type: "post"`, so the feed's queries exclude it by `scriptFence`.
pub const FENCE_ID: &str = "\u{a7}scriptFence";

/// How often a script is re-run after its batch lost a race. Each retry re-reads the partition.
const ATTEMPTS: usize = 16;

/// Runs the article's scripts in this process, on the store's items, where the backend cannot (the SDK's in-memory emulator).
pub struct InProcessScripts {
    store: Arc<Store>,
    limits: Limits,
    /// Cosmos DB runs the scripts of one logical partition one after another. Doing the same
    /// here (a lock per partition, striped) keeps this process's scripts from failing each
    /// other's checks; the fence and the etags guard against other processes and writers.
    partitions: StripedLock,
    /// Each container's self link and name-based link, read once.
    links: Mutex<HashMap<Container, (String, String)>>,
}

/// How many partition locks there are; partitions that share a stripe merely wait for each other.
const PARTITION_STRIPES: usize = 256;

impl InProcessScripts {
    /// The scripts, run on `store`.
    pub fn new(store: Arc<Store>) -> Self {
        InProcessScripts {
            store,
            limits: Limits::default(),
            partitions: StripedLock::new(PARTITION_STRIPES),
            links: Mutex::default(),
        }
    }

    fn partition_lock(&self, container: Container, partition_key: &str) -> &tokio::sync::Mutex<()> {
        self.partitions.of((container, partition_key))
    }

    async fn partition(
        &self,
        container: Container,
        partition_key: &str,
    ) -> Result<Partition, StoreError> {
        let cached =
            self.links.lock().expect("the links' lock is never poisoned").get(&container).cloned();
        let (self_link, alt_link) = match cached {
            Some(links) => links,
            None => {
                let links = self.store.script_links(container).await?;
                self.links
                    .lock()
                    .expect("the links' lock is never poisoned")
                    .insert(container, links.clone());
                links
            }
        };
        let key = Value::String(partition_key.to_owned());
        Ok(Partition { key, key_path: container.partition_key_path(), self_link, alt_link })
    }

    /// One run of the script on the current state, on a blocking thread.
    async fn run_once(
        &self,
        script: Script,
        partition: &Partition,
        invocation: &Invocation,
    ) -> Result<engine::Run, ScriptError> {
        let reader = StoreReader {
            store: self.store.clone(),
            container: script.container,
            partition_key: partition.key.as_str().unwrap_or_default().to_owned(),
            handle: Handle::current(),
        };
        let (partition, invocation, limits, meter) =
            (partition.clone(), invocation.clone(), self.limits.clone(), Meter::current());
        let run = move || {
            engine::run(
                script.source,
                script.name,
                &invocation,
                &partition,
                Rc::new(reader),
                &limits,
            )
        };
        tokio::task::spawn_blocking(move || match meter {
            Some(meter) => meter.enter(run),
            None => run(),
        })
        .await
        .map_err(|error| ScriptError::Failed(ScriptFailure::ThreadDied(error)))
    }

    /// Whether every item in `reads` is still as the script saw it. The script's reads are
    /// separate point reads, not one snapshot as inside Cosmos DB. A script that threw on a
    /// view mixing old and new state must run again. It must not report an error that a
    /// consistent view would not have produced.
    async fn still_current(
        &self,
        container: Container,
        partition_key: &str,
        reads: &Reads,
    ) -> Result<bool, ScriptError> {
        for (id, etag) in &reads.items {
            let now = self
                .store
                .read_versioned::<serde::de::IgnoredAny>(container, partition_key, id)
                .await?;
            if now.map(|found| found.etag) != *etag {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Runs `procedure` in the partition `partition_key` until its writes commit, and returns the
    /// body it set.
    pub async fn run(
        &self,
        procedure: Script,
        partition_key: &str,
        args: Vec<Value>,
    ) -> Result<Value, ScriptError> {
        self.commit_until_current(procedure, partition_key, &Invocation::Procedure(args), None)
            .await
    }

    /// Runs the script and commits `request_write` (the write that fired a trigger) with the
    /// script's writes as one batch; runs it again while what it relied on keeps changing.
    async fn commit_until_current(
        &self,
        script: Script,
        partition_key: &str,
        invocation: &Invocation,
        request_write: Option<WriteOp>,
    ) -> Result<Value, ScriptError> {
        let _serialized = self.partition_lock(script.container, partition_key).lock().await;
        let partition = self.partition(script.container, partition_key).await?;
        let request_id = request_write.as_ref().and_then(write_id).map(str::to_owned);
        for attempt in 0..ATTEMPTS {
            // Read before the script reads anything: a commit in between moves it.
            let fence = self
                .store
                .read_versioned::<Value>(script.container, partition_key, FENCE_ID)
                .await?;
            let run = self.run_once(script, &partition, invocation).await?;
            let outcome = match run.result {
                Ok(outcome) => outcome,
                Err(thrown) if thrown.is_thrown() => {
                    if self.still_current(script.container, partition_key, &run.reads).await? {
                        return Err(thrown);
                    }
                    tokio::time::sleep(retry_pause(attempt)).await;
                    continue;
                }
                Err(other) => return Err(other),
            };
            if let Some(id) = &request_id
                && outcome.writes.iter().any(|write| write_id(write) == Some(id))
            {
                return Err(ScriptError::Failed(ScriptFailure::WroteItsRequest {
                    script: script.name,
                    id: id.clone(),
                }));
            }
            let fenced = !run.reads.covered_by(&outcome.writes);
            let mut writes: Vec<WriteOp> = request_write.iter().cloned().collect();
            writes.extend(outcome.writes);
            if fenced {
                let document = fence_document(script.container, &partition.key);
                writes.push(match fence {
                    Some(fence) => WriteOp::Replace {
                        id: FENCE_ID.to_owned(),
                        document,
                        if_match: Some(fence.etag),
                    },
                    None => WriteOp::Create { document },
                });
            }
            match self.store.execute_batch(script.container, partition_key, writes).await {
                Ok(()) => return Ok(outcome.body),
                // Something the script relied on changed (412), an id it found free was taken
                // (409), or an item it deleted is gone (404). That was done by another process
                // or writer, or by this very batch, applied once already when its answer was
                // lost and the SDK sent it again. The script runs again on the new state, after
                // a short randomized pause. (A conflict on the request's own write is the
                // caller's.)
                Err(failed @ StoreError::BatchFailed { .. })
                    if is_script_conflict(&failed, request_write.is_some()) =>
                {
                    tokio::time::sleep(retry_pause(attempt)).await;
                }
                // The request's own write failed (it is the batch's first operation).
                Err(failed @ StoreError::BatchFailed { .. }) if request_write.is_some() => {
                    return Err(ScriptError::Store(failed.of_failed_operation()));
                }
                Err(other) => return Err(other.into()),
            }
        }
        Err(ScriptError::Contention)
    }
}

#[async_trait]
impl ScriptExecutor for InProcessScripts {
    async fn execute_json(
        &self,
        procedure: StoredProcedure,
        partition_key: &str,
        args: Vec<Value>,
    ) -> Result<Value, ScriptError> {
        self.run(procedure.script(), partition_key, args).await
    }

    /// The trigger's response body is not returned: the application does not use it.
    async fn write_with_trigger(
        &self,
        trigger: PostTrigger,
        partition_key: &str,
        write: WriteOp,
    ) -> Result<(), ScriptError> {
        let (operation, document) = match &write {
            WriteOp::Create { document } => (TriggerOperation::Create, document.clone()),
            WriteOp::Replace { document, .. } => (TriggerOperation::Replace, document.clone()),
            WriteOp::Upsert { document, .. } => (TriggerOperation::Upsert, document.clone()),
            WriteOp::Delete { .. } => {
                return Err(ScriptError::Failed(ScriptFailure::TriggerOnDelete));
            }
        };
        let invocation = Invocation::PostTrigger { operation, document };
        self.commit_until_current(trigger.script(), partition_key, &invocation, Some(write))
            .await
            .map(drop)
    }
}

/// The fence item of a partition: its id, its partition key, and the mark queries exclude.
fn fence_document(container: Container, key: &Value) -> Value {
    let mut document = json!({"id": FENCE_ID, "scriptFence": true});
    document[container.partition_key_path().trim_start_matches('/')] = key.clone();
    document
}

/// Whether a failed batch failed on one of the script's own writes (or the fence) with 404, 409
/// or 412. The request's write, when there is one, is the batch's first operation.
fn is_script_conflict(failed: &StoreError, has_request: bool) -> bool {
    let StoreError::BatchFailed { statuses } = failed else { return false };
    statuses
        .iter()
        .enumerate()
        .any(|(index, status)| (index > 0 || !has_request) && matches!(status, 404 | 409 | 412))
}

/// The script's view of its partition: reads go to the store, blocking the script's thread.
struct StoreReader {
    store: Arc<Store>,
    container: Container,
    partition_key: String,
    handle: Handle,
}

impl PartitionReader for StoreReader {
    fn read(&self, id: &str) -> Result<Option<Value>, StoreError> {
        self.handle.block_on(self.store.read::<Value>(self.container, &self.partition_key, id))
    }

    fn query(
        &self,
        sql: &str,
        parameters: &[(String, Value)],
        page: PageRequest,
    ) -> Result<(Vec<Value>, Option<String>), StoreError> {
        let query = QuerySpec {
            sql: Cow::Owned(sql.to_owned()),
            parameters: parameters
                .iter()
                .map(|(name, value)| (Cow::Owned(name.clone()), value.clone()))
                .collect(),
        };
        self.handle.block_on(self.store.query_documents(
            self.container,
            &self.partition_key,
            query,
            page,
        ))
    }
}
