//! Runs the stored procedures in this process, for backends that cannot run them (the embedded
//! store, the Linux emulator), with the guarantees Cosmos DB gives a stored procedure.
//!
//! The script reads the partition through the store and buffers its writes (see [`engine`]).
//! Its net writes are then committed as ONE transactional batch, every replace or delete
//! conditioned on the etag the script read and every create on the id being free, so the batch
//! commits only if nothing the script relied on changed meanwhile. Otherwise the script is run
//! again on the new state. A script that throws writes nothing.

use std::borrow::Cow;
use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio::runtime::Handle;

use super::engine::{self, Limits, Partition, PartitionReader, QueryPage, ScriptOutcome, TriggerOperation, TriggerRequest};
use super::{PostTrigger, Script, ScriptError, ScriptExecutor, StoredProcedure};
use crate::cosmos::{Container, Meter, PageRequest, QuerySpec, Store, StoreError, WriteOp, retry_pause};

/// How often a script is re-run after its batch lost a race with a writer outside this process
/// (or a direct write such as a post edit). Each retry re-reads the partition.
const ATTEMPTS: usize = 16;

/// The page size of a script's query that sets no `pageSize` (Cosmos DB's default is 100).
const DEFAULT_SCRIPT_PAGE_SIZE: u32 = 100;

pub struct InProcessScripts {
    store: Arc<Store>,
    limits: Limits,
    /// Cosmos DB runs the scripts of one logical partition one after another. Doing the same
    /// here (a lock per partition, striped) keeps this process's scripts from failing each
    /// other's etag checks; the checks still guard against other processes and other writers.
    partitions: Vec<tokio::sync::Mutex<()>>,
}

/// How many partition locks there are; partitions that share a stripe merely wait for each
/// other.
const PARTITION_STRIPES: usize = 256;

impl InProcessScripts {
    pub fn new(store: Arc<Store>) -> Self {
        let partitions = (0..PARTITION_STRIPES).map(|_| tokio::sync::Mutex::new(())).collect();
        InProcessScripts { store, limits: Limits::default(), partitions }
    }

    fn partition_lock(&self, container: Container, partition_key: &str) -> &tokio::sync::Mutex<()> {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (container, partition_key).hash(&mut hasher);
        &self.partitions[hasher.finish() as usize % PARTITION_STRIPES]
    }

    /// One run of the script on the current state: its response body and net writes, and what
    /// it read (each id with the etag it had, `None` if it was absent).
    async fn run_once(
        &self,
        procedure: Script,
        partition_key: &str,
        invocation: &Invocation,
    ) -> Result<(ScriptOutcome, ReadSet), RunError> {
        let store = self.store.clone();
        let container = procedure.container;
        let key = partition_key.to_owned();
        let invocation = invocation.clone();
        let limits = self.limits.clone();
        let meter = Meter::current();
        let handle = Handle::current();
        // QuickJS is synchronous and not `Send`: the script runs on a blocking thread, and its
        // reads block that thread on the async store.
        let run = move || {
            let reader = StoreReader { store: &store, container, partition_key: &key, handle, seen: RefCell::default() };
            let key_value = Value::String(key.clone());
            let link = format!("dbs/blog/colls/{}", container.name());
            let partition = Partition { key: &key_value, key_path: container.partition_key_path(), collection_link: &link };
            let outcome = match &invocation {
                Invocation::Procedure(args) => {
                    engine::run_stored_procedure(procedure.source, procedure.name, args, &partition, &reader, &limits)
                }
                Invocation::Trigger(request) => {
                    engine::run_post_trigger(procedure.source, procedure.name, request, &partition, &reader, &limits)
                }
            };
            (outcome, reader.seen.into_inner())
        };
        let (outcome, seen) = tokio::task::spawn_blocking(move || match meter {
            Some(meter) => meter.enter(run),
            None => run(),
        })
        .await
        .map_err(|error| RunError::Final(ScriptError::Failed(format!("the script thread failed: {error}"))))?;
        match outcome {
            Ok(outcome) => Ok((outcome, seen)),
            // The store failed under the script: report it as the store failure it is.
            Err(engine::ScriptError::Store(engine::StoreError { status: 429, .. })) => {
                Err(RunError::Final(StoreError::Throttled.into()))
            }
            Err(engine::ScriptError::Store(engine::StoreError { status: 408, .. })) => {
                Err(RunError::Final(StoreError::Timeout.into()))
            }
            Err(thrown @ engine::ScriptError::Thrown { .. }) => {
                Err(RunError::Thrown(ScriptError::Thrown(thrown_message(thrown)), seen))
            }
            Err(other) => Err(RunError::Final(ScriptError::Failed(other.to_string()))),
        }
    }

    /// Whether every item in `seen` is still as the script saw it. The script's reads are
    /// separate point reads, not one snapshot as inside Cosmos DB; a script that threw on a view
    /// mixing old and new state (say, an old post and a comment made since) must run again
    /// rather than report an error that a consistent view would not have produced.
    async fn still_current(&self, container: Container, partition_key: &str, seen: &ReadSet) -> Result<bool, ScriptError> {
        for (id, etag) in seen {
            let now = self.store.read_versioned::<serde::de::IgnoredAny>(container, partition_key, id).await?;
            if now.map(|found| found.etag) != *etag {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Each item a script read, with the etag it had (`None`: it did not exist).
type ReadSet = Vec<(String, Option<String>)>;

enum RunError {
    /// The script threw; whether that stands depends on whether its reads were current.
    Thrown(ScriptError, ReadSet),
    Final(ScriptError),
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

    async fn write_with_trigger(&self, trigger: PostTrigger, partition_key: &str, write: WriteOp) -> Result<(), ScriptError> {
        let (operation, document) = match &write {
            WriteOp::Create { document } => (TriggerOperation::Create, document.clone()),
            WriteOp::Replace { document, .. } => (TriggerOperation::Replace, document.clone()),
            WriteOp::Upsert { document, .. } => (TriggerOperation::Upsert, document.clone()),
            WriteOp::Delete { .. } => {
                return Err(ScriptError::Failed("a post-trigger runs after a create, replace or upsert".into()));
            }
        };
        let request = Invocation::Trigger(TriggerRequest { operation, document });
        self.commit_until_current(trigger.script(), partition_key, &request, Some(write)).await.map(drop)
    }
}

impl InProcessScripts {
    /// Runs `procedure` in the partition `partition_key` until its writes commit, and returns the
    /// body it set.
    pub async fn run(&self, procedure: Script, partition_key: &str, args: Vec<Value>) -> Result<Value, ScriptError> {
        self.commit_until_current(procedure, partition_key, &Invocation::Procedure(args), None).await
    }

    /// Runs the script and commits `request_write` (the write that fired a trigger) with the
    /// script's writes as one batch; runs it again while what it read keeps changing under it.
    async fn commit_until_current(
        &self,
        script: Script,
        partition_key: &str,
        invocation: &Invocation,
        request_write: Option<WriteOp>,
    ) -> Result<Value, ScriptError> {
        let _serialized = self.partition_lock(script.container, partition_key).lock().await;
        for attempt in 0..ATTEMPTS {
            let outcome = match self.run_once(script, partition_key, invocation).await {
                Ok((outcome, _)) => outcome,
                Err(RunError::Thrown(error, seen)) => {
                    if self.still_current(script.container, partition_key, &seen).await? {
                        return Err(error);
                    }
                    tokio::time::sleep(retry_pause(attempt)).await;
                    continue;
                }
                Err(RunError::Final(error)) => return Err(error),
            };
            let mut writes: Vec<WriteOp> = request_write.iter().cloned().collect();
            if let Some(id) = request_write.as_ref().and_then(written_id)
                && outcome.writes.iter().any(|write| engine_write_id(write) == Some(id))
            {
                return Err(ScriptError::Failed(format!("{} wrote the document its request writes ({id})", script.name)));
            }
            writes.extend(outcome.writes.into_iter().map(into_write_op));
            match self.store.execute_batch(script.container, partition_key, writes).await {
                Ok(()) => return Ok(outcome.body),
                // Something the script read changed (412), or an id it found free was taken
                // (409), by a writer outside this lock: the script's view is stale, so it runs
                // again on the new state, after a short randomized pause. (A conflict on the
                // request's own write is the caller's to handle, so it is returned as it is.)
                Err(failed @ StoreError::BatchFailed { .. }) if is_script_conflict(&failed, request_write.is_some()) => {
                    tokio::time::sleep(retry_pause(attempt)).await;
                }
                Err(StoreError::BatchFailed { statuses }) if request_write.is_some() => {
                    return Err(ScriptError::Store(request_failure(&statuses)));
                }
                Err(other) => return Err(other.into()),
            }
        }
        Err(ScriptError::Contention)
    }
}

/// How a script was invoked.
#[derive(Clone)]
enum Invocation {
    Procedure(Vec<Value>),
    Trigger(TriggerRequest),
}

/// Whether a failed batch failed on one of the script's own writes with 409 or 412. The
/// request's write, when there is one, is the batch's first operation.
fn is_script_conflict(failed: &StoreError, has_request: bool) -> bool {
    let StoreError::BatchFailed { statuses } = failed else { return false };
    statuses.iter().enumerate().any(|(index, status)| (index > 0 || !has_request) && matches!(status, 409 | 412))
}

/// The error of the request's own write, the first operation of the batch.
fn request_failure(statuses: &[u16]) -> StoreError {
    match statuses.first() {
        Some(404) => StoreError::NotFound,
        Some(409) => StoreError::Conflict,
        Some(412) => StoreError::PreconditionFailed,
        Some(429) => StoreError::Throttled,
        _ => StoreError::BatchFailed { statuses: statuses.to_vec() },
    }
}

fn written_id(write: &WriteOp) -> Option<&str> {
    match write {
        WriteOp::Create { document } | WriteOp::Upsert { document, .. } => document.get("id").and_then(Value::as_str),
        WriteOp::Replace { id, .. } | WriteOp::Delete { id, .. } => Some(id),
    }
}

fn engine_write_id(write: &engine::WriteOp) -> Option<&str> {
    match write {
        engine::WriteOp::Create { document } | engine::WriteOp::Upsert { document, .. } => {
            document.get("id").and_then(Value::as_str)
        }
        engine::WriteOp::Replace { id, .. } | engine::WriteOp::Delete { id, .. } => Some(id),
    }
}

/// The message a script threw, without the engine's framing.
fn thrown_message(error: engine::ScriptError) -> String {
    match error {
        engine::ScriptError::Thrown { message } => message,
        other => other.to_string(),
    }
}

fn into_write_op(write: engine::WriteOp) -> WriteOp {
    match write {
        engine::WriteOp::Create { document } => WriteOp::Create { document },
        engine::WriteOp::Replace { id, document, if_match } => WriteOp::Replace { id, document, if_match },
        engine::WriteOp::Upsert { document, if_match } => WriteOp::Upsert { document, if_match },
        engine::WriteOp::Delete { id, if_match } => WriteOp::Delete { id, if_match },
    }
}

/// The script's view of its partition: reads go to the store, on the calling blocking thread.
struct StoreReader<'a> {
    store: &'a Store,
    container: Container,
    partition_key: &'a str,
    handle: Handle,
    /// What the script read, for [`InProcessScripts::still_current`].
    seen: RefCell<ReadSet>,
}

impl StoreReader<'_> {
    fn saw(&self, id: &str, document: Option<&Value>) {
        let etag = document.and_then(|document| document.get("_etag")).and_then(Value::as_str).map(str::to_owned);
        self.seen.borrow_mut().push((id.to_owned(), etag));
    }
}

impl PartitionReader for StoreReader<'_> {
    fn read(&self, id: &str) -> Result<Option<Value>, engine::StoreError> {
        let document =
            self.handle.block_on(self.store.read::<Value>(self.container, self.partition_key, id)).map_err(reader_error)?;
        self.saw(id, document.as_ref());
        Ok(document)
    }

    fn query(
        &self,
        sql: &str,
        parameters: &[(String, Value)],
        page_size: Option<u32>,
        continuation: Option<&str>,
    ) -> Result<QueryPage, engine::StoreError> {
        let query = QuerySpec {
            sql: Cow::Owned(sql.to_owned()),
            parameters: parameters.iter().map(|(name, value)| (Cow::Owned(name.clone()), value.clone())).collect(),
        };
        let page =
            PageRequest { size: page_size.unwrap_or(DEFAULT_SCRIPT_PAGE_SIZE), continuation: continuation.map(str::to_owned) };
        let (documents, continuation) = self
            .handle
            .block_on(self.store.query_documents(self.container, self.partition_key, query, page))
            .map_err(reader_error)?;
        for document in &documents {
            if let Some(id) = document.get("id").and_then(Value::as_str) {
                self.saw(id, Some(document));
            }
        }
        Ok(QueryPage { documents, continuation })
    }
}

fn reader_error(error: StoreError) -> engine::StoreError {
    let status = match error {
        StoreError::NotFound => 404,
        StoreError::Conflict => 409,
        StoreError::PreconditionFailed => 412,
        StoreError::Throttled => 429,
        StoreError::Timeout => 408,
        StoreError::BadContinuation(_) => 400,
        _ => 500,
    };
    engine::StoreError { status, message: error.to_string() }
}
