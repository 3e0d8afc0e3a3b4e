//! Runs Cosmos DB server-side JavaScript (stored procedures and post-triggers) in this process,
//! on QuickJS (`rquickjs`), for backends that cannot run scripts.
//!
//! The script reads its ONE logical partition through a [`PartitionReader`]. Its writes go to
//! an in-memory overlay and come back as its net effect ([`ScriptOutcome::writes`]), each
//! conditioned on what the script saw. The caller commits them as one transactional batch
//! (`in_process.rs`). The run happens on the calling thread, which blocks on the reader.
//!
//! * [`server_api.js`](server_api.js): the API as scripts see it (`getContext()`, `__`,
//!   `ErrorCodes`, collection, request and response), written from
//!   Azure/azure-cosmosdb-js-server `utils/DocDbWrapperScript.js`: the same argument checks,
//!   thrown synchronously with `number` 400; database outcomes (404, 409, 412, 413, bad SQL as
//!   400) reach the callback with `number` and `body`, and without a callback are thrown later,
//!   failing the run; `err` is `undefined` on success.
//! * `overlay.rs`: the native operations on the overlay; `runner.rs`: the QuickJS runtime.
//!
//! # Where this differs from Cosmos DB, and why
//! * Limits: Cosmos DB bounds a script by time (5 s) only. Here its writes must also fit ONE
//!   transactional batch (100 operations, 2 MB), shared with the partition's fence item and,
//!   for a trigger, the request's own write. So some writes would not fit: the 100th distinct
//!   id of a stored procedure, the 99th of a trigger, or past 2 MB of written documents. Such a
//!   write returns `false` and its callback is never called, as when Cosmos DB stops accepting
//!   operations. The script ends early and commits what it did (a script written for Cosmos DB
//!   checks `isAccepted` anyway).
//! * Queries run in the store, which has no SQL evaluator for the overlay: a query does not see
//!   the script's own creates and replaces (it returns the stored versions), but never returns a
//!   document the script deleted. Microsoft documents that queries in a script "may not see
//!   changes to items made by the same script transaction", so both are legal there too.
//! * System properties of written documents (`_rid`, `_self`, `_etag`, `_ts`) are synthesized
//!   for the run, consistently (a later `options.etag` check or `_self` link works). The store
//!   assigns the real ones at commit. So a response body that shows a written document shows
//!   the synthesized values.
//! * Links by name are not percent-decoded (the wrapper hands them on unchanged; ids cannot
//!   contain `/`). Headers are not modelled: `getValue(name)` knows `Body` (and a trigger's
//!   `OperationType`) only. A post-trigger's `setBody` shapes [`ScriptOutcome::body`], which the
//!   caller may ignore. Not provided: the `__.filter/map/chain` query API, attachments,
//!   pre-triggers, resource quotas; `console.log` does nothing.

mod overlay;
mod runner;

/// Runs the function `function_name` of `source` once.
pub use runner::run;
#[cfg(test)]
mod tests;

use std::time::Duration;

use serde_json::Value;

use super::ScriptError;
use crate::cosmos::{PageRequest, StoreError, WriteOp};

/// What a script may read: the ONE logical partition it runs in. Called on the run's thread,
/// which may block (the store reader wraps async calls in `Handle::block_on`).
pub trait PartitionReader {
    /// Point read by id, with system properties; `Ok(None)` when absent.
    fn read(&self, id: &str) -> Result<Option<Value>, StoreError>;
    /// One page of a parameterized query in this partition, and the continuation of the next.
    fn query(
        &self,
        sql: &str,
        parameters: &[(String, Value)],
        page: PageRequest,
    ) -> Result<(Vec<Value>, Option<String>), StoreError>;
}

/// The partition a script runs in, and its collection's links.
#[derive(Debug, Clone)]
pub struct Partition {
    /// The partition key value, e.g. `json!("post-1")`.
    pub key: Value,
    /// The partition key path, e.g. `"/postId"`.
    pub key_path: &'static str,
    /// `getSelfLink()`: `dbs/<dbRid>/colls/<collRid>/`, the prefix of every document's `_self`.
    pub self_link: String,
    /// `getAltLink()`: `dbs/<database>/colls/<collection>`.
    pub alt_link: String,
}

/// Budgets of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Operations one transactional batch may hold (Cosmos DB: 100), the fence and a trigger's
    /// request included.
    pub batch_operations: usize,
    /// Bytes of documents one transactional batch may carry (Cosmos DB: 2 MB).
    pub batch_bytes: usize,
    /// Wall-clock budget of the run (Cosmos DB: 5 s).
    pub max_duration: Duration,
    /// Memory limit of the QuickJS heap.
    pub max_memory_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            batch_operations: 100,
            batch_bytes: 2 * 1024 * 1024,
            max_duration: Duration::from_secs(5),
            max_memory_bytes: 64 * 1024 * 1024,
        }
    }
}

/// The kind of write that fired a trigger; `getRequest().getOperationType()` returns its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerOperation {
    /// A create.
    Create,
    /// A replace.
    Replace,
    /// An upsert.
    Upsert,
}

/// How a script is invoked.
#[derive(Debug, Clone)]
pub enum Invocation {
    /// A stored procedure, with its arguments.
    Procedure(Vec<Value>),
    /// A post-trigger, after the write of `document`. The trigger reads the document as written
    /// (with synthesized system properties, also its initial response body); its queries do not
    /// see it. The caller commits the request's write with the trigger's writes.
    PostTrigger {
        /// The write that fired it.
        operation: TriggerOperation,
        /// The document as written.
        document: Value,
    },
}

/// The result of a successful run.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptOutcome {
    /// The response body (`Null` if never set).
    pub body: Value,
    /// The net writes, at most one per id, in the order of each id's first write: replaces and
    /// deletes conditioned on the etag the script saw, creates of ids it saw absent.
    pub writes: Vec<WriteOp>,
}

/// What a run read: each id with the etag it had (`None`: absent), and whether it queried.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reads {
    /// The items the script wrote: id, and document (`None`: deleted).
    pub items: Vec<(String, Option<String>)>,
    /// Whether it ran a query.
    pub queried: bool,
}

impl Reads {
    /// Whether the net writes' conditions cover everything the run relied on: no query (a query
    /// depends on documents it did not return), and every id it read is written.
    pub(crate) fn covered_by(&self, writes: &[WriteOp]) -> bool {
        !self.queried
            && self
                .items
                .iter()
                .all(|(id, _)| writes.iter().any(|write| write_id(write) == Some(id)))
    }
}

/// The id a write is about.
pub(crate) fn write_id(write: &WriteOp) -> Option<&str> {
    match write {
        WriteOp::Create { document } | WriteOp::Upsert { document, .. } => {
            document.get("id").and_then(Value::as_str)
        }
        WriteOp::Replace { id, .. } | WriteOp::Delete { id, .. } => Some(id),
    }
}

/// One run: its result, and what it read (also when it failed).
#[derive(Debug)]
pub struct Run {
    /// What the script answered, or why it failed.
    pub result: Result<ScriptOutcome, ScriptError>,
    /// What it read, for the caller's metering.
    pub reads: Reads,
}
