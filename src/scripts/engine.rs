//! In-process runner for Azure Cosmos DB server-side JavaScript (stored procedures and
//! post-triggers) on the embedded QuickJS engine (`rquickjs`).
//!
//! The backing store cannot run scripts, so this module runs them here, against a
//! [`PartitionReader`] for the one logical partition a script may touch. Writes are never sent
//! anywhere: they are buffered in an overlay and returned as the script's *net effect*
//! ([`ScriptOutcome::writes`]), with the `_etag` of every document the script saw attached as an
//! `if_match` precondition. The caller commits them as one transactional batch and re-runs the
//! script when a precondition fails.
//!
//! # How it is built
//! * The Cosmos API surface (`getContext()`, `__`, the collection, request and response objects,
//!   the asynchronous callback queue) is a JavaScript prelude ([`PRELUDE`]) over one native
//!   function, `host(kind, payloadJson) -> replyJson`, which performs an operation synchronously
//!   against the overlay and the reader. Values cross the boundary as JSON text.
//! * Each run gets a fresh QuickJS `Runtime` + `Context` (nothing carries over between runs)
//!   on a script thread taken from a small process-wide pool (threads are reused, runtimes are
//!   not). The reader stays on the caller's thread (it need not be `Send` or `Sync`): the script
//!   thread asks for reads and queries over channels and the caller's thread serves them. This
//!   keeps the module free of `unsafe` (a JS function must be `'static`, so it cannot borrow the
//!   caller's `&dyn PartitionReader`) and gives QuickJS a stack of known size.
//! * Cost: about 0.55 ms per run of a trivial script on the 2-core dev VM, mostly compiling the
//!   prelude (~0.3 ms) and creating the context (~0.1 ms); see the `per_run_cost` test.
//!
//! # Semantics (summary; see the items for details)
//! * Every operation is performed when it is called and returns `true` ("accepted"), or returns
//!   `false` and does nothing (the callback is never called) once the budget is exhausted.
//! * Callbacks are queued and run after the current JS turn, first in, first out, until the
//!   queue is empty (then pending promise jobs run, and the queue is drained again).
//! * A failed operation without a callback, or an uncaught exception anywhere, aborts the run
//!   with [`ScriptError::Thrown`] and no writes.
//! * `readDocument` sees the overlay (read-your-writes); `queryDocuments` goes to the reader
//!   only and does NOT see the script's own buffered writes.
//! * Point reads are a per-document snapshot: the first read of an id goes to the reader, later
//!   ones are answered from it (the etag the script saw first is the one checked at commit).
//! * Only documents the script writes get a precondition; what it merely read is not
//!   re-validated at commit (a transactional batch cannot express that).
//! * `deleteDocument`'s callback is called as `(err, responseOptions)`, as in Cosmos.
//! * Not supported: `__.filter/map/chain` (the query-builder API), `readDocuments`,
//!   attachments, pre-triggers, `setStatusCode`; `console.log` is a no-op.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use rquickjs::context::EvalOptions;
use rquickjs::convert::Coerced;
use rquickjs::{Context, Ctx, Function, Object, Runtime, Value as JsValue};
use serde_json::{Map, Value, json};

// ---------------------------------------------------------------------------------------------
// Public interface
// ---------------------------------------------------------------------------------------------

/// What a script may read: the ONE logical partition it runs in. Called from a blocking thread
/// (the caller wraps async store calls with `Handle::block_on`), so methods are synchronous.
///
/// The reader is only ever called on the thread that called [`run_stored_procedure`] /
/// [`run_post_trigger`], so it needs to be neither `Send` nor `Sync`.
pub trait PartitionReader {
    /// Point read by id; `Ok(None)` when absent. Documents carry system properties (`_etag`, and
    /// `_rid`, `_self`, `_ts` where the store has them).
    fn read(&self, id: &str) -> Result<Option<Value>, StoreError>;
    /// One page of a parameterized query in this partition. Returns the documents and the
    /// continuation for the next page (`None` when done).
    fn query(
        &self,
        sql: &str,
        parameters: &[(String, Value)],
        page_size: Option<u32>,
        continuation: Option<&str>,
    ) -> Result<QueryPage, StoreError>;
}

/// One page of query results.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct QueryPage {
    pub documents: Vec<Value>,
    pub continuation: Option<String>,
}

/// A failure of the store behind a [`PartitionReader`] (throttling, unavailability, a query the
/// store rejects, ...). Such failures are not shown to the script: they end the run with
/// [`ScriptError::Store`] so that the caller can retry or report them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError {
    pub status: u16,
    pub message: String,
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "store error {}: {}", self.status, self.message)
    }
}

impl std::error::Error for StoreError {}

/// The net effect of a script on its partition: at most one operation per document id, in the
/// order in which the script first (successfully) wrote each id.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteOp {
    /// The id did not exist in the store when the script created it.
    Create { document: Value },
    /// The id existed in the store; `if_match` is the `_etag` the script saw (or passed).
    Replace { id: String, document: Value, if_match: Option<String> },
    /// An upsert; `if_match` is set only if the script saw (or passed) the stored etag.
    Upsert { document: Value, if_match: Option<String> },
    /// The id existed in the store and the script deleted it.
    Delete { id: String, if_match: Option<String> },
}

/// The partition a script runs in.
#[derive(Debug, Clone, Copy)]
pub struct Partition<'a> {
    /// The partition key value, e.g. `json!("post-1")`.
    pub key: &'a Value,
    /// The partition key path, a JSON-pointer-like path such as `"/postId"`.
    pub key_path: &'a str,
    /// The collection link, e.g. `"dbs/blog/colls/posts"`; returned by `getSelfLink()` and
    /// `getAltLink()` and used to build the `_self` of written documents.
    pub collection_link: &'a str,
}

/// Budgets of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Maximum number of distinct document ids the script may write (default 100, a
    /// transactional batch's limit). Writing again to an id already written costs nothing, so
    /// the returned `writes` never exceed this. Once reached, a write to a new id returns false.
    pub max_writes: usize,
    /// Maximum number of operations (reads, queries, writes; failed ones included).
    pub max_operations: usize,
    /// Wall-clock budget of the run (script execution plus the reader's time).
    pub max_duration: Duration,
    /// Memory limit of the JS heap (covers the whole QuickJS runtime, whose baseline is a few
    /// hundred KiB).
    pub max_memory_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_writes: 100, max_operations: 1000, max_duration: Duration::from_secs(5), max_memory_bytes: 64 * 1024 * 1024 }
    }
}

/// The result of a successful run.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptOutcome {
    /// What `getResponse().setBody()` last received (as JSON); `Null` if never set.
    pub body: Value,
    /// The net writes, to be committed as one transactional batch.
    pub writes: Vec<WriteOp>,
    /// Operations performed (reads + queries + writes, failed ones included; rejected ones not).
    pub operations: usize,
}

/// Why a run produced no outcome.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptError {
    /// The source does not parse, or does not define the named function.
    Compile(String),
    /// The script threw (or an operation without a callback failed). `message` is the thrown
    /// Error's `message`, or `String(value)` for other values.
    Thrown { message: String },
    /// `max_duration` elapsed.
    TimedOut,
    /// `max_memory_bytes` was exceeded.
    OutOfMemory,
    /// The reader failed; the script did not see this error.
    Store(StoreError),
    /// The engine itself failed (could not start a thread or a JS runtime). Not in the original
    /// sketch; needed because those failures are possible and are none of the above.
    Internal(String),
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScriptError::Compile(m) => write!(f, "script compile error: {m}"),
            ScriptError::Thrown { message } => write!(f, "script threw: {message}"),
            ScriptError::TimedOut => write!(f, "script timed out"),
            ScriptError::OutOfMemory => write!(f, "script ran out of memory"),
            ScriptError::Store(e) => write!(f, "{e}"),
            ScriptError::Internal(m) => write!(f, "script engine error: {m}"),
        }
    }
}

impl std::error::Error for ScriptError {}

/// The kind of write that fired a trigger; `getRequest().getOperationType()` returns its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerOperation {
    Create,
    Replace,
    Upsert,
    Delete,
}

impl TriggerOperation {
    /// The name Cosmos uses: "Create", "Replace", "Upsert" or "Delete".
    pub fn as_str(self) -> &'static str {
        match self {
            TriggerOperation::Create => "Create",
            TriggerOperation::Replace => "Replace",
            TriggerOperation::Upsert => "Upsert",
            TriggerOperation::Delete => "Delete",
        }
    }
}

/// The write that fired a post-trigger.
#[derive(Debug, Clone, PartialEq)]
pub struct TriggerRequest {
    pub operation: TriggerOperation,
    /// The request's document (for a delete, whatever the caller wants the trigger to see,
    /// typically the deleted document).
    pub document: Value,
}

/// Runs the stored procedure `function_name` defined in `source` with `args`.
pub fn run_stored_procedure(
    source: &str,
    function_name: &str,
    args: &[Value],
    partition: &Partition,
    reader: &dyn PartitionReader,
    limits: &Limits,
) -> Result<ScriptOutcome, ScriptError> {
    let job = Job {
        source: source.to_owned(),
        function_name: function_name.to_owned(),
        args: Value::Array(args.to_vec()),
        trigger: None,
        partition: OwnedPartition::from(partition),
        limits: limits.clone(),
    };
    run(job, reader)
}

/// Runs the post-trigger `function_name` defined in `source` (called with no arguments).
/// `getContext().getRequest().getBody()` (and `getValue()`) return `request.document`,
/// `getOperationType()` its operation, and `getResponse().getBody()` starts as the document too.
/// The trigger's reads and queries do NOT see the request's document (the caller commits it
/// together with the trigger's writes).
pub fn run_post_trigger(
    source: &str,
    function_name: &str,
    request: &TriggerRequest,
    partition: &Partition,
    reader: &dyn PartitionReader,
    limits: &Limits,
) -> Result<ScriptOutcome, ScriptError> {
    let job = Job {
        source: source.to_owned(),
        function_name: function_name.to_owned(),
        args: Value::Array(Vec::new()),
        trigger: Some(request.clone()),
        partition: OwnedPartition::from(partition),
        limits: limits.clone(),
    };
    run(job, reader)
}

// ---------------------------------------------------------------------------------------------
// Running a job: the script thread and the store channel
// ---------------------------------------------------------------------------------------------

/// Stack of the script thread. QuickJS stops JS recursion at its own limit (1 MiB of stack by
/// default), well below this.
const SCRIPT_THREAD_STACK: usize = 4 * 1024 * 1024;

struct Job {
    source: String,
    function_name: String,
    args: Value,
    trigger: Option<TriggerRequest>,
    partition: OwnedPartition,
    limits: Limits,
}

#[derive(Clone)]
struct OwnedPartition {
    key: Value,
    key_path: String,
    collection_link: String,
}

impl From<&Partition<'_>> for OwnedPartition {
    fn from(p: &Partition<'_>) -> Self {
        OwnedPartition {
            key: p.key.clone(),
            key_path: p.key_path.to_owned(),
            collection_link: p.collection_link.trim_end_matches('/').to_owned(),
        }
    }
}

enum StoreCall {
    Read(String),
    Query { sql: String, parameters: Vec<(String, Value)>, page_size: Option<u32>, continuation: Option<String> },
}

enum StoreReply {
    Read(Result<Option<Value>, StoreError>),
    Query(Result<QueryPage, StoreError>),
}

/// The script thread's end of the store channel.
struct StoreLink {
    calls: Sender<FromScript>,
    replies: Receiver<StoreReply>,
}

fn link_broken() -> StoreError {
    StoreError { status: 500, message: "the reader's thread stopped answering".to_owned() }
}

impl StoreLink {
    fn read(&self, id: &str) -> Result<Option<Value>, StoreError> {
        self.calls.send(FromScript::Store(StoreCall::Read(id.to_owned()))).map_err(|_| link_broken())?;
        match self.replies.recv() {
            Ok(StoreReply::Read(r)) => r,
            _ => Err(link_broken()),
        }
    }

    fn query(
        &self,
        sql: String,
        parameters: Vec<(String, Value)>,
        page_size: Option<u32>,
        continuation: Option<String>,
    ) -> Result<QueryPage, StoreError> {
        self.calls
            .send(FromScript::Store(StoreCall::Query { sql, parameters, page_size, continuation }))
            .map_err(|_| link_broken())?;
        match self.replies.recv() {
            Ok(StoreReply::Query(r)) => r,
            _ => Err(link_broken()),
        }
    }
}

/// Messages from a script thread to the caller's thread.
enum FromScript {
    Store(StoreCall),
    Done(Result<ScriptOutcome, ScriptError>),
}

/// One run handed to a script thread.
struct Assignment {
    job: Job,
    to_caller: Sender<FromScript>,
    replies: Receiver<StoreReply>,
}

/// Idle script threads, each waiting for its next assignment. Threads are reused because
/// starting one (and warming its allocator arena) costs about as much as a whole small run;
/// every run still gets a fresh QuickJS runtime, so nothing carries over between runs.
static IDLE_WORKERS: Mutex<Vec<Sender<Assignment>>> = Mutex::new(Vec::new());

/// Idle script threads kept beyond this number exit.
const MAX_IDLE_WORKERS: usize = 8;

fn spawn_worker() -> Result<Sender<Assignment>, ScriptError> {
    let (tx, rx) = mpsc::channel::<Assignment>();
    std::thread::Builder::new()
        .name("cosmos-script".to_owned())
        .stack_size(SCRIPT_THREAD_STACK)
        .spawn(move || {
            for Assignment { job, to_caller, replies } in rx {
                let link = StoreLink { calls: to_caller.clone(), replies };
                let result = std::panic::catch_unwind(AssertUnwindSafe(|| execute(&job, link)))
                    .unwrap_or_else(|_| Err(ScriptError::Internal("the script engine panicked".to_owned())));
                // The caller may be gone (it panicked); nothing to do then.
                let _ = to_caller.send(FromScript::Done(result));
            }
        })
        .map_err(|e| ScriptError::Internal(format!("cannot start a script thread: {e}")))?;
    Ok(tx)
}

fn idle_workers() -> std::sync::MutexGuard<'static, Vec<Sender<Assignment>>> {
    IDLE_WORKERS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Hands `assignment` to an idle script thread, or to a new one.
fn dispatch_to_worker(assignment: Assignment) -> Result<Sender<Assignment>, ScriptError> {
    let mut assignment = assignment;
    let idle = idle_workers().pop();
    if let Some(worker) = idle {
        match worker.send(assignment) {
            Ok(()) => return Ok(worker),
            Err(mpsc::SendError(returned)) => assignment = returned,
        }
    }
    let worker = spawn_worker()?;
    worker.send(assignment).map_err(|_| ScriptError::Internal("a new script thread exited at once".to_owned()))?;
    Ok(worker)
}

fn run(job: Job, reader: &dyn PartitionReader) -> Result<ScriptOutcome, ScriptError> {
    let (to_caller, from_script) = mpsc::channel::<FromScript>();
    let (reply_tx, reply_rx) = mpsc::channel::<StoreReply>();
    let worker = dispatch_to_worker(Assignment { job, to_caller, replies: reply_rx })?;
    // Serve the script's reads and queries on this thread until it is done.
    loop {
        match from_script.recv() {
            Ok(FromScript::Store(call)) => {
                let reply = match call {
                    StoreCall::Read(id) => StoreReply::Read(reader.read(&id)),
                    StoreCall::Query { sql, parameters, page_size, continuation } => {
                        StoreReply::Query(reader.query(&sql, &parameters, page_size, continuation.as_deref()))
                    }
                };
                // A send error means the script thread is gone; the next recv says so.
                let _ = reply_tx.send(reply);
            }
            Ok(FromScript::Done(result)) => {
                let mut idle = idle_workers();
                if idle.len() < MAX_IDLE_WORKERS {
                    idle.push(worker);
                }
                return result;
            }
            Err(_) => return Err(ScriptError::Internal("the script thread stopped unexpectedly".to_owned())),
        }
    }
}

/// Flags shared by the engine state and the interrupt handler.
#[derive(Default)]
struct Flags {
    /// Set when the run must end (abort, store failure, deadline): makes the interrupt handler
    /// stop the script even if it catches the exception it was given.
    stop: Cell<bool>,
    timed_out: Cell<bool>,
}

/// Runs on the script thread.
fn execute(job: &Job, link: StoreLink) -> Result<ScriptOutcome, ScriptError> {
    let deadline =
        Instant::now().checked_add(job.limits.max_duration).unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365));
    let flags = Rc::new(Flags::default());
    let state = Rc::new(RefCell::new(State::new(job.partition.clone(), job.limits.clone(), link, deadline, flags.clone())));

    let rt = Runtime::new().map_err(|e| ScriptError::Internal(e.to_string()))?;
    let context = Context::full(&rt).map_err(|e| ScriptError::Internal(e.to_string()))?;
    rt.set_memory_limit(job.limits.max_memory_bytes);
    {
        let flags = flags.clone();
        rt.set_interrupt_handler(Some(Box::new(move || {
            if flags.stop.get() {
                return true;
            }
            if Instant::now() >= deadline {
                flags.timed_out.set(true);
                flags.stop.set(true);
                return true;
            }
            false
        })));
    }

    let result = context.with(|ctx| run_in_context(&ctx, job, &state, &flags));
    drop(context);
    drop(rt);

    let mut state = state.borrow_mut();
    // A failure recorded by the engine wins over what the script did with it afterwards
    // (e.g. caught the exception and returned normally).
    if flags.timed_out.get() {
        return Err(ScriptError::TimedOut);
    }
    if let Some(failure) = state.failure.take() {
        return Err(failure);
    }
    let body = result?;
    Ok(ScriptOutcome { body, writes: state.net_writes(), operations: state.operations })
}

fn run_in_context<'js>(ctx: &Ctx<'js>, job: &Job, state: &Rc<RefCell<State>>, flags: &Flags) -> Result<Value, ScriptError> {
    let fail = |err: rquickjs::Error| classify(ctx, err, flags);

    // Install the prelude.
    let install: Function =
        ctx.eval(PRELUDE).map_err(|e| ScriptError::Internal(format!("prelude: {}", describe_error(ctx, e))))?;
    let host = {
        let state = state.clone();
        Function::new(ctx.clone(), move |kind: String, payload: String| -> String {
            state.borrow_mut().dispatch(&kind, &payload)
        })
        .map_err(fail)?
    };
    let setup = json!({
        "collectionLink": job.partition.collection_link,
        "args": job.args,
        "trigger": job.trigger.as_ref().map(|t| json!({
            "operationType": t.operation.as_str(),
            "body": t.document,
        })),
    });
    let controller: Object = install.call((host, setup.to_string())).map_err(fail)?;

    // Compile and evaluate the script (sloppy mode, like Cosmos).
    let mut options = EvalOptions::default();
    options.strict = false;
    if let Err(err) = ctx.eval_with_options::<(), _>(job.source.as_str(), options) {
        if let rquickjs::Error::Exception = err {
            let exception = ctx.catch();
            if !flags.stop.get() && error_name(&exception).as_deref() == Some("SyntaxError") {
                return Err(ScriptError::Compile(describe_value(&exception)));
            }
            return Err(classify_value(exception, flags));
        }
        return Err(fail(err));
    }
    let entry: JsValue = ctx.globals().get(job.function_name.as_str()).map_err(fail)?;
    if !entry.is_function() {
        return Err(ScriptError::Compile(format!("the script does not define a function named '{}'", job.function_name)));
    }

    // Call it, then run the queued callbacks (and any promise jobs) until nothing is left.
    let invoke: Function = controller.get("invoke").map_err(fail)?;
    let drain: Function = controller.get("drain").map_err(fail)?;
    let body: Function = controller.get("body").map_err(fail)?;
    invoke.call::<_, ()>((entry, job.args.to_string())).map_err(fail)?;
    loop {
        drain.call::<_, ()>(()).map_err(fail)?;
        if !ctx.execute_pending_job() {
            break;
        }
    }
    let body: Option<String> = body.call(()).map_err(fail)?;
    match body {
        None => Ok(Value::Null),
        Some(text) => serde_json::from_str(&text).map_err(|e| ScriptError::Internal(format!("response body is not JSON: {e}"))),
    }
}

fn classify(ctx: &Ctx<'_>, err: rquickjs::Error, flags: &Flags) -> ScriptError {
    if flags.timed_out.get() {
        return ScriptError::TimedOut;
    }
    match err {
        rquickjs::Error::Exception => classify_value(ctx.catch(), flags),
        rquickjs::Error::Allocation => ScriptError::OutOfMemory,
        other => ScriptError::Thrown { message: other.to_string() },
    }
}

fn classify_value(exception: JsValue<'_>, flags: &Flags) -> ScriptError {
    if flags.timed_out.get() {
        return ScriptError::TimedOut;
    }
    let message = describe_value(&exception);
    if message == "out of memory" && error_name(&exception).as_deref() == Some("InternalError") {
        return ScriptError::OutOfMemory;
    }
    ScriptError::Thrown { message }
}

fn describe_error(ctx: &Ctx<'_>, err: rquickjs::Error) -> String {
    match err {
        rquickjs::Error::Exception => describe_value(&ctx.catch()),
        other => other.to_string(),
    }
}

fn error_name(value: &JsValue<'_>) -> Option<String> {
    value.as_object()?.get::<_, Option<String>>("name").ok()?
}

/// The Error's `message`, or `String(value)`.
fn describe_value(value: &JsValue<'_>) -> String {
    if let Some(obj) = value.as_object()
        && let Ok(Some(message)) = obj.get::<_, Option<String>>("message")
    {
        return message;
    }
    match value.get::<Coerced<String>>() {
        Ok(Coerced(s)) => s,
        Err(_) => "<unprintable exception>".to_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// The engine state: budget, overlay, etags, net effect
// ---------------------------------------------------------------------------------------------

/// What the store holds for an id, as first observed by a point read in this run. Kept as a
/// per-document snapshot: later point reads of the id are answered from it.
#[derive(Debug, Clone, Default)]
enum Stored {
    #[default]
    Unknown,
    Absent,
    Present(Value),
}

#[derive(Debug, Clone, Default)]
enum Overlay {
    #[default]
    Untouched,
    Written(Value),
    Deleted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WriteKind {
    Create,
    Replace,
    Upsert,
    Delete,
}

#[derive(Debug, Default)]
struct Entry {
    stored: Stored,
    /// The first `_etag` the script saw for this id (read or query result).
    seen_etag: Option<String>,
    overlay: Overlay,
    /// The first successful write to this id; decides the kind of the net operation.
    first_write: Option<WriteKind>,
    /// `options.etag` passed with the first write; wins over `seen_etag`.
    explicit_etag: Option<String>,
}

/// Why an operation did not succeed.
enum Failure {
    /// Over budget: return false, do nothing.
    Rejected,
    /// A Cosmos error for the script (404, 409, 400, 412 ...).
    Op { status: u16, message: String },
    /// The reader failed: end the run.
    Store(StoreError),
}

fn op_error(status: u16, message: impl Into<String>) -> Failure {
    Failure::Op { status, message: message.into() }
}

fn not_found(id: &str) -> Failure {
    op_error(404, format!("Resource Not Found: the document '{id}' does not exist"))
}

struct Success {
    result: Value,
    continuation: Option<String>,
}

impl From<Value> for Success {
    fn from(result: Value) -> Self {
        Success { result, continuation: None }
    }
}

struct State {
    partition: OwnedPartition,
    limits: Limits,
    store: StoreLink,
    deadline: Instant,
    flags: Rc<Flags>,
    entries: HashMap<String, Entry>,
    /// Ids in the order of their first successful write.
    write_order: Vec<String>,
    /// `_self` links seen (store documents and overlay documents) → id.
    self_links: HashMap<String, String>,
    operations: usize,
    /// Set when the run must fail whatever the script does next.
    failure: Option<ScriptError>,
    /// The status of the Error thrown into the script for `failure`.
    failure_status: u16,
}

impl State {
    fn new(partition: OwnedPartition, limits: Limits, store: StoreLink, deadline: Instant, flags: Rc<Flags>) -> Self {
        State {
            partition,
            limits,
            store,
            deadline,
            flags,
            entries: HashMap::new(),
            write_order: Vec::new(),
            self_links: HashMap::new(),
            operations: 0,
            failure: None,
            failure_status: 500,
        }
    }

    /// The native side of every operation: `payload` is the JSON the prelude sent, the reply is
    /// `{"accepted":false}`, `{"accepted":true,"result":..,"error":{status,message}?,
    /// "continuation":..?}` or `{"abort":{status,message}}` (the prelude then throws).
    fn dispatch(&mut self, kind: &str, payload: &str) -> String {
        self.dispatch_value(kind, payload).to_string()
    }

    fn dispatch_value(&mut self, kind: &str, payload: &str) -> Value {
        if let Some(reply) = self.abort_reply() {
            return reply;
        }
        if Instant::now() >= self.deadline {
            self.flags.timed_out.set(true);
            self.flags.stop.set(true);
            return json!({"abort": {"status": 408, "message": "script timed out"}});
        }
        let request: Value = match serde_json::from_str(payload) {
            Ok(v) => v,
            Err(e) => return self.abort(ScriptError::Internal(format!("bad host payload: {e}")), 500),
        };
        let has_callback = request["hasCallback"].as_bool().unwrap_or(false);
        if self.operations >= self.limits.max_operations {
            return json!({"accepted": false});
        }
        let outcome = match kind {
            "read" => self.op_read(&request),
            "query" => self.op_query(&request),
            "create" => self.op_create(&request),
            "replace" => self.op_replace(&request),
            "upsert" => self.op_upsert(&request),
            "delete" => self.op_delete(&request),
            other => return self.abort(ScriptError::Internal(format!("unknown operation {other}")), 500),
        };
        match outcome {
            Err(Failure::Rejected) => json!({"accepted": false}),
            Err(Failure::Store(e)) => {
                let status = e.status;
                self.abort(ScriptError::Store(e), status)
            }
            Err(Failure::Op { status, message }) => {
                self.operations += 1;
                if has_callback {
                    json!({"accepted": true, "error": {"status": status, "message": message}})
                } else {
                    self.abort(ScriptError::Thrown { message }, status)
                }
            }
            Ok(success) => {
                self.operations += 1;
                let mut reply = Map::new();
                reply.insert("accepted".into(), Value::Bool(true));
                reply.insert("result".into(), success.result);
                if let Some(c) = success.continuation {
                    reply.insert("continuation".into(), Value::String(c));
                }
                Value::Object(reply)
            }
        }
    }

    /// Records the run's failure (the first one wins) and tells the prelude to throw.
    fn abort(&mut self, failure: ScriptError, status: u16) -> Value {
        if self.failure.is_none() {
            self.failure = Some(failure);
            self.failure_status = status;
        }
        self.flags.stop.set(true);
        self.abort_reply().unwrap_or(Value::Null)
    }

    fn abort_reply(&self) -> Option<Value> {
        let message = match self.failure.as_ref()? {
            ScriptError::Thrown { message } => message.clone(),
            ScriptError::Store(e) => e.message.clone(),
            other => other.to_string(),
        };
        Some(json!({"abort": {"status": self.failure_status, "message": message}}))
    }

    // --- operations ---------------------------------------------------------------------

    fn op_read(&mut self, request: &Value) -> Result<Success, Failure> {
        let id = self.resolve_link(&request["link"])?;
        match self.current(&id)? {
            Some(doc) => Ok(doc.into()),
            None => Err(not_found(&id)),
        }
    }

    fn op_query(&mut self, request: &Value) -> Result<Success, Failure> {
        let sql = request["query"].as_str().ok_or_else(|| op_error(400, "the query must be a string"))?.to_owned();
        let mut parameters = Vec::new();
        if let Some(list) = request["parameters"].as_array() {
            for p in list {
                let name = p["name"].as_str().ok_or_else(|| op_error(400, "a query parameter has no name"))?;
                parameters.push((name.to_owned(), p["value"].clone()));
            }
        }
        let page_size = request["pageSize"].as_f64().filter(|n| *n >= 1.0).map(|n| n.min(f64::from(u32::MAX)) as u32);
        let continuation = request["continuation"].as_str().map(str::to_owned);
        let page = self.store.query(sql, parameters, page_size, continuation).map_err(Failure::Store)?;
        for doc in &page.documents {
            self.note_seen(doc);
        }
        Ok(Success { result: Value::Array(page.documents), continuation: page.continuation })
    }

    fn op_create(&mut self, request: &Value) -> Result<Success, Failure> {
        let mut doc = document_arg(request)?;
        let id = ensure_id(&mut doc)?;
        self.check_write_budget(&id)?;
        self.check_partition_key(&doc)?;
        if self.current(&id)?.is_some() {
            return Err(op_error(409, format!("Resource with specified id or name already exists: '{id}'")));
        }
        Ok(self.write(&id, WriteKind::Create, Some(doc), None).into())
    }

    fn op_replace(&mut self, request: &Value) -> Result<Success, Failure> {
        let id = self.resolve_link(&request["link"])?;
        let mut doc = document_arg(request)?;
        match doc.get("id") {
            None | Some(Value::Null) => {
                doc["id"] = Value::String(id.clone());
            }
            Some(Value::String(s)) if *s == id => {}
            Some(other) => return Err(op_error(400, format!("the document's id {other} does not match the link's id '{id}'"))),
        }
        self.check_write_budget(&id)?;
        self.check_partition_key(&doc)?;
        if self.current(&id)?.is_none() {
            return Err(not_found(&id));
        }
        let etag = explicit_etag(request);
        self.check_explicit_etag(&id, etag.as_deref())?;
        Ok(self.write(&id, WriteKind::Replace, Some(doc), etag).into())
    }

    fn op_upsert(&mut self, request: &Value) -> Result<Success, Failure> {
        let mut doc = document_arg(request)?;
        let id = ensure_id(&mut doc)?;
        self.check_write_budget(&id)?;
        self.check_partition_key(&doc)?;
        let etag = explicit_etag(request);
        self.check_explicit_etag(&id, etag.as_deref())?;
        Ok(self.write(&id, WriteKind::Upsert, Some(doc), etag).into())
    }

    fn op_delete(&mut self, request: &Value) -> Result<Success, Failure> {
        let id = self.resolve_link(&request["link"])?;
        self.check_write_budget(&id)?;
        if self.current(&id)?.is_none() {
            return Err(not_found(&id));
        }
        let etag = explicit_etag(request);
        self.check_explicit_etag(&id, etag.as_deref())?;
        // Upserted then deleted: the net effect depends on whether the store has the id.
        let entry = self.entries.entry(id.clone()).or_default();
        if entry.first_write == Some(WriteKind::Upsert) && matches!(entry.stored, Stored::Unknown) {
            self.stored(&id)?;
        }
        self.write(&id, WriteKind::Delete, None, etag);
        Ok(Value::Null.into())
    }

    // --- helpers ------------------------------------------------------------------------

    /// The document as the script currently sees it: the overlay, else the store snapshot.
    /// A store document returned here counts as seen (its etag is remembered).
    fn current(&mut self, id: &str) -> Result<Option<Value>, Failure> {
        let entry = self.entries.entry(id.to_owned()).or_default();
        match &entry.overlay {
            Overlay::Written(doc) => return Ok(Some(doc.clone())),
            Overlay::Deleted => return Ok(None),
            Overlay::Untouched => {}
        }
        let doc = self.stored(id)?;
        if let Some(doc) = &doc {
            self.note_seen(doc);
        }
        Ok(doc)
    }

    /// The store's document for `id` (fetched on first use, then answered from the snapshot).
    fn stored(&mut self, id: &str) -> Result<Option<Value>, Failure> {
        if let Some(entry) = self.entries.get(id) {
            match &entry.stored {
                Stored::Present(doc) => return Ok(Some(doc.clone())),
                Stored::Absent => return Ok(None),
                Stored::Unknown => {}
            }
        }
        let doc = self.store.read(id).map_err(Failure::Store)?;
        if let Some(self_link) = doc.as_ref().and_then(|d| d.get("_self")).and_then(Value::as_str) {
            self.self_links.insert(normalize_link(self_link).to_owned(), id.to_owned());
        }
        let entry = self.entries.entry(id.to_owned()).or_default();
        entry.stored = match &doc {
            Some(d) => Stored::Present(d.clone()),
            None => Stored::Absent,
        };
        Ok(doc)
    }

    /// Remembers the etag and `_self` of a store document the script has seen.
    fn note_seen(&mut self, doc: &Value) {
        let Some(id) = doc.get("id").and_then(Value::as_str) else {
            return;
        };
        if let Some(self_link) = doc.get("_self").and_then(Value::as_str) {
            self.self_links.insert(normalize_link(self_link).to_owned(), id.to_owned());
        }
        let entry = self.entries.entry(id.to_owned()).or_default();
        if matches!(entry.stored, Stored::Absent) {
            // Seen absent first; a create of it will fail at commit if it now exists.
            return;
        }
        if entry.seen_etag.is_none() {
            entry.seen_etag = doc.get("_etag").and_then(Value::as_str).map(str::to_owned);
        }
    }

    /// `options.etag` must match the store's etag of a document the script has not yet
    /// written (a document it has written has no etag yet; the first write's precondition
    /// stands for it).
    fn check_explicit_etag(&mut self, id: &str, etag: Option<&str>) -> Result<(), Failure> {
        let Some(etag) = etag else { return Ok(()) };
        let untouched = self.entries.get(id).is_none_or(|e| matches!(e.overlay, Overlay::Untouched));
        if !untouched {
            return Ok(());
        }
        let stored = self.stored(id)?;
        let current = stored.as_ref().and_then(|d| d.get("_etag")).and_then(Value::as_str);
        if current == Some(etag) {
            Ok(())
        } else {
            Err(op_error(412, format!("Precondition Failed: the etag of '{id}' does not match")))
        }
    }

    fn check_write_budget(&self, id: &str) -> Result<(), Failure> {
        let already_written = self.entries.get(id).is_some_and(|e| e.first_write.is_some());
        if already_written || self.write_order.len() < self.limits.max_writes { Ok(()) } else { Err(Failure::Rejected) }
    }

    fn check_partition_key(&self, doc: &Value) -> Result<(), Failure> {
        match doc.pointer(&self.partition.key_path) {
            Some(value) if *value == self.partition.key => Ok(()),
            found => Err(op_error(
                400,
                format!(
                    "PartitionKey extracted from document ({}) doesn't match the partition the \
                     script runs in ({}) at {}",
                    found.map_or_else(|| "undefined".to_owned(), Value::to_string),
                    self.partition.key,
                    self.partition.key_path
                ),
            )),
        }
    }

    /// Applies a successful write to the overlay and returns the written document (or Null).
    fn write(&mut self, id: &str, kind: WriteKind, doc: Option<Value>, explicit_etag: Option<String>) -> Value {
        let doc = doc.map(|mut d| {
            let self_link = format!("{}/docs/{}", self.partition.collection_link, id);
            if let Some(obj) = d.as_object_mut() {
                // The store assigns fresh ones when the batch commits.
                obj.remove("_etag");
                obj.remove("_ts");
                obj.insert("_self".into(), Value::String(self_link.clone()));
            }
            self.self_links.insert(self_link, id.to_owned());
            d
        });
        let entry = self.entries.entry(id.to_owned()).or_default();
        if entry.first_write.is_none() {
            entry.first_write = Some(kind);
            entry.explicit_etag = explicit_etag;
            self.write_order.push(id.to_owned());
        }
        match doc {
            Some(d) => {
                entry.overlay = Overlay::Written(d.clone());
                d
            }
            None => {
                entry.overlay = Overlay::Deleted;
                Value::Null
            }
        }
    }

    /// Resolves a document link: a `_self` seen in this run, or anything ending in
    /// `/docs/<id>` (percent-decoded).
    fn resolve_link(&self, link: &Value) -> Result<String, Failure> {
        let link = link.as_str().ok_or_else(|| op_error(400, "the document link must be a string"))?;
        let trimmed = normalize_link(link);
        if let Some(id) = self.self_links.get(trimmed) {
            return Ok(id.clone());
        }
        let tail = if let Some(pos) = trimmed.rfind("/docs/") {
            &trimmed[pos + "/docs/".len()..]
        } else if let Some(rest) = trimmed.strip_prefix("docs/") {
            rest
        } else {
            return Err(op_error(400, format!("invalid document link '{link}'")));
        };
        if tail.is_empty() || tail.contains('/') {
            return Err(op_error(400, format!("invalid document link '{link}'")));
        }
        Ok(percent_decode(tail))
    }

    /// Collapses each id's history into one operation, in order of first write.
    fn net_writes(&self) -> Vec<WriteOp> {
        let mut writes = Vec::new();
        for id in &self.write_order {
            let entry = &self.entries[id];
            let Some(first) = entry.first_write else {
                continue;
            };
            let if_match = entry.explicit_etag.clone().or(entry.seen_etag.clone());
            let op = match (&entry.overlay, first) {
                (Overlay::Untouched, _) => None,
                (Overlay::Written(doc), WriteKind::Create) => Some(WriteOp::Create { document: doc.clone() }),
                (Overlay::Written(doc), WriteKind::Replace | WriteKind::Delete) => {
                    Some(WriteOp::Replace { id: id.clone(), document: doc.clone(), if_match })
                }
                (Overlay::Written(doc), WriteKind::Upsert) => Some(WriteOp::Upsert { document: doc.clone(), if_match }),
                (Overlay::Deleted, WriteKind::Create) => None,
                (Overlay::Deleted, WriteKind::Replace | WriteKind::Delete) => Some(WriteOp::Delete { id: id.clone(), if_match }),
                (Overlay::Deleted, WriteKind::Upsert) => match entry.stored {
                    Stored::Present(_) => Some(WriteOp::Delete { id: id.clone(), if_match }),
                    // Absent (or, defensively, unknown): upserted then deleted = nothing.
                    Stored::Absent | Stored::Unknown => None,
                },
            };
            writes.extend(op);
        }
        writes
    }
}

fn document_arg(request: &Value) -> Result<Value, Failure> {
    match &request["document"] {
        Value::Object(_) => Ok(request["document"].clone()),
        _ => Err(op_error(400, "the document must be an object")),
    }
}

/// The document's id; a generated UUID when it has none.
fn ensure_id(doc: &mut Value) -> Result<String, Failure> {
    match doc.get("id") {
        Some(Value::String(id)) if !id.is_empty() => Ok(id.clone()),
        None | Some(Value::Null) => {
            let id = new_uuid();
            doc["id"] = Value::String(id.clone());
            Ok(id)
        }
        Some(other) => Err(op_error(400, format!("the document's id must be a non-empty string, not {other}"))),
    }
}

fn explicit_etag(request: &Value) -> Option<String> {
    request["options"]["etag"].as_str().map(str::to_owned)
}

fn normalize_link(link: &str) -> &str {
    link.trim_start_matches('/').trim_end_matches('/')
}

/// Decodes `%XX` escapes; returns the input unchanged when it is not valid percent-encoded
/// UTF-8.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let decoded =
            bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
        match decoded {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => return s.to_owned(),
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_owned())
}

/// A random (version 4) UUID, from std's randomly seeded hasher; good enough for ids.
fn new_uuid() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let half = |salt: u64| {
        let mut h = RandomState::new().build_hasher();
        h.write_u64(n);
        h.write_u128(nanos);
        h.write_u64(salt);
        h.finish()
    };
    let hi = half(1);
    let lo = half(2);
    let hi = (hi & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_4000;
    let lo = (lo & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    format!("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xffff, hi & 0xffff, lo >> 48, lo & 0xffff_ffff_ffff)
}

// ---------------------------------------------------------------------------------------------
// The JavaScript prelude
// ---------------------------------------------------------------------------------------------

/// The Cosmos server-side API, over the native `host(kind, payloadJson) -> replyJson`.
/// Evaluates to `install(host, setupJson) -> { invoke, drain, body }`; only `getContext`, `__`
/// and (if absent) `console` become globals.
const PRELUDE: &str = r#"
(function (host, setupJson) {
  "use strict";
  var parse = JSON.parse, stringify = JSON.stringify;
  var setup = parse(setupJson);
  var collectionLink = setup.collectionLink;
  var queue = [];
  var head = 0;
  var trigger = setup.trigger;
  var responseBody = trigger ? trigger.body : undefined;
  var bodySet = false;

  function cosmosError(e) {
    var err = new Error(e.message);
    err.number = e.status;
    return err;
  }

  // Performs an operation now; queues its callback. `args(err, reply)` builds the callback's
  // arguments.
  function perform(kind, payload, callback, args) {
    if (callback !== undefined && callback !== null && typeof callback !== "function") {
      throw new Error("the callback must be a function");
    }
    var hasCallback = typeof callback === "function";
    payload.hasCallback = hasCallback;
    var reply = parse(host(kind, stringify(payload)));
    if (reply.abort) throw cosmosError(reply.abort);
    if (!reply.accepted) return false;
    if (hasCallback) {
      var err = reply.error ? cosmosError(reply.error) : null;
      queue.push({ fn: callback, args: args(err, reply) });
    }
    return true;
  }

  // (options, callback) where options may be left out.
  function optionsAndCallback(options, callback) {
    if (typeof options === "function") return { options: {}, callback: options };
    if (options === undefined || options === null) return { options: {}, callback: callback };
    if (typeof options !== "object") throw new Error("the options must be an object");
    return { options: options, callback: callback };
  }

  function etagOption(options) {
    return typeof options.etag === "string" ? { etag: options.etag } : {};
  }

  function requireDocument(doc) {
    if (doc === null || typeof doc !== "object" || Array.isArray(doc)) {
      throw new Error("the document must be an object");
    }
  }

  function resourceArgs(err, reply) { return [err, err ? undefined : reply.result, {}]; }

  var collection = {
    getSelfLink: function () { return collectionLink; },
    getAltLink: function () { return collectionLink; },
    readDocument: function (documentLink, options, callback) {
      var oc = optionsAndCallback(options, callback);
      return perform("read", { link: documentLink, options: {} }, oc.callback, resourceArgs);
    },
    createDocument: function (link, document, options, callback) {
      var oc = optionsAndCallback(options, callback);
      requireDocument(document);
      return perform("create", { document: document, options: {} }, oc.callback, resourceArgs);
    },
    replaceDocument: function (documentLink, document, options, callback) {
      var oc = optionsAndCallback(options, callback);
      requireDocument(document);
      return perform("replace",
        { link: documentLink, document: document, options: etagOption(oc.options) },
        oc.callback, resourceArgs);
    },
    upsertDocument: function (link, document, options, callback) {
      var oc = optionsAndCallback(options, callback);
      requireDocument(document);
      return perform("upsert", { document: document, options: etagOption(oc.options) },
        oc.callback, resourceArgs);
    },
    deleteDocument: function (documentLink, options, callback) {
      var oc = optionsAndCallback(options, callback);
      // Cosmos calls a delete's callback as (err, responseOptions).
      return perform("delete", { link: documentLink, options: etagOption(oc.options) },
        oc.callback, function (err) { return [err, {}]; });
    },
    queryDocuments: function (link, query, options, callback) {
      var oc = optionsAndCallback(options, callback);
      var spec = typeof query === "string" ? { query: query } : query;
      if (spec === null || typeof spec !== "object" || typeof spec.query !== "string") {
        throw new Error("the query must be a string or { query, parameters }");
      }
      var parameters = [];
      var given = spec.parameters || [];
      for (var i = 0; i < given.length; i++) {
        parameters.push({ name: given[i].name, value: given[i].value });
      }
      var payload = { query: spec.query, parameters: parameters };
      if (typeof oc.options.pageSize === "number") payload.pageSize = oc.options.pageSize;
      if (typeof oc.options.continuation === "string") {
        payload.continuation = oc.options.continuation;
      }
      return perform("query", payload, oc.callback, function (err, reply) {
        return [err, err ? undefined : reply.result, { continuation: reply.continuation }];
      });
    }
  };

  var request = {
    getBody: function () { return trigger ? trigger.body : setup.args; },
    getValue: function () { return trigger ? trigger.body : setup.args; },
    getOperationType: function () { return trigger ? trigger.operationType : undefined; }
  };

  var response = {
    getBody: function () { return responseBody; },
    setBody: function (value) { responseBody = value; bodySet = true; },
    getValue: function () { return responseBody; },
    setValue: function (value) { responseBody = value; bodySet = true; },
    appendBody: function (text) {
      responseBody = (responseBody === undefined ? "" : String(responseBody)) + String(text);
      bodySet = true;
    }
  };

  var context = {
    getCollection: function () { return collection; },
    getRequest: function () { return request; },
    getResponse: function () { return response; }
  };

  var global = globalThis;
  global.getContext = function () { return context; };
  global.__ = collection;
  if (global.console === undefined) {
    global.console = { log: function () {}, warn: function () {}, error: function () {} };
  }

  return {
    invoke: function (fn, argsJson) { fn.apply(undefined, parse(argsJson)); },
    drain: function () {
      while (head < queue.length) {
        var job = queue[head];
        queue[head] = undefined;
        head++;
        job.fn.apply(collection, job.args);
      }
      queue.length = 0;
      head = 0;
    },
    body: function () { return bodySet ? stringify(responseBody) : undefined; }
  };
})
"#;

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const COLL: &str = "dbs/blog/colls/posts";

    /// A HashMap-backed partition. Supports the query shapes the tests use:
    /// `SELECT * FROM c` and `SELECT * FROM c WHERE c.<field> = @<param>`, ordered by id,
    /// paged with the continuation being the next offset.
    struct MemReader {
        /// The thread that made the reader: the engine must call it there only.
        thread: std::thread::ThreadId,
        docs: BTreeMap<String, Value>,
        fail_id: Option<String>,
        reads: RefCell<Vec<String>>,
        queries: RefCell<Vec<RecordedQuery>>,
    }

    /// (sql, parameters, page size, continuation) as the reader received them.
    type RecordedQuery = (String, Vec<(String, Value)>, Option<u32>, Option<String>);

    impl MemReader {
        fn new(docs: Vec<Value>) -> Self {
            let mut reader = MemReader {
                thread: std::thread::current().id(),
                docs: BTreeMap::new(),
                fail_id: None,
                reads: RefCell::default(),
                queries: RefCell::default(),
            };
            for mut doc in docs {
                let id = doc["id"].as_str().unwrap().to_owned();
                let obj = doc.as_object_mut().unwrap();
                obj.entry("_etag").or_insert_with(|| json!(format!("\"etag-{id}\"")));
                obj.entry("_self").or_insert_with(|| json!(format!("{COLL}/docs/{id}")));
                obj.entry("_ts").or_insert(json!(1_700_000_000));
                reader.docs.insert(id, doc);
            }
            reader
        }
    }

    impl PartitionReader for MemReader {
        fn read(&self, id: &str) -> Result<Option<Value>, StoreError> {
            assert_eq!(std::thread::current().id(), self.thread);
            self.reads.borrow_mut().push(id.to_owned());
            if self.fail_id.as_deref() == Some(id) {
                return Err(StoreError { status: 503, message: "service unavailable".into() });
            }
            Ok(self.docs.get(id).cloned())
        }

        fn query(
            &self,
            sql: &str,
            parameters: &[(String, Value)],
            page_size: Option<u32>,
            continuation: Option<&str>,
        ) -> Result<QueryPage, StoreError> {
            assert_eq!(std::thread::current().id(), self.thread);
            self.queries.borrow_mut().push((sql.to_owned(), parameters.to_vec(), page_size, continuation.map(str::to_owned)));
            let unsupported = || StoreError { status: 400, message: format!("test reader cannot run: {sql}") };
            let rows: Vec<Value> = if sql == "SELECT * FROM c" {
                self.docs.values().cloned().collect()
            } else if let Some(cond) = sql.strip_prefix("SELECT * FROM c WHERE c.") {
                let (field, param) = cond.split_once(" = ").ok_or_else(unsupported)?;
                let value = parameters.iter().find(|(n, _)| n == param).map(|(_, v)| v.clone()).ok_or_else(unsupported)?;
                self.docs.values().filter(|d| d.get(field) == Some(&value)).cloned().collect()
            } else {
                return Err(unsupported());
            };
            let offset: usize = continuation.map_or(0, |c| c.parse().unwrap());
            let size = page_size.map_or(rows.len(), |s| s as usize);
            let end = (offset + size).min(rows.len());
            Ok(QueryPage { documents: rows[offset..end].to_vec(), continuation: (end < rows.len()).then(|| end.to_string()) })
        }
    }

    fn post(id: &str) -> Value {
        json!({"id": id, "postId": "post-1", "type": "post", "title": "Hello", "commentCount": 0})
    }

    fn reader() -> MemReader {
        MemReader::new(vec![post("post-1"), post("post-2"), post("post-3"), post("post-4"), post("post-5"), post("post-6")])
    }

    fn key() -> Value {
        json!("post-1")
    }

    fn run_sp(
        source: &str,
        name: &str,
        args: &[Value],
        reader: &MemReader,
        limits: &Limits,
    ) -> Result<ScriptOutcome, ScriptError> {
        let key = key();
        let partition = Partition { key: &key, key_path: "/postId", collection_link: COLL };
        run_stored_procedure(source, name, args, &partition, reader, limits)
    }

    fn run_ok(source: &str, name: &str, args: &[Value], reader: &MemReader) -> ScriptOutcome {
        run_sp(source, name, args, reader, &Limits::default()).unwrap_or_else(|e| panic!("script failed: {e:?}"))
    }

    fn etag(id: &str) -> Option<String> {
        Some(format!("\"etag-{id}\""))
    }

    fn thrown(result: Result<ScriptOutcome, ScriptError>) -> String {
        match result {
            Err(ScriptError::Thrown { message }) => message,
            other => panic!("expected Thrown, got {other:?}"),
        }
    }

    #[test]
    fn round_trip_with_callbacks_after_the_turn() {
        let src = r#"
        function main() {
          var c = getContext().getCollection();
          var log = [];
          var accepted = c.readDocument(c.getAltLink() + "/docs/post-1", function (err, post) {
            log.push("read:" + (err === null) + ":" + marker + ":" + post.title);
            post.title = "changed";
            c.replaceDocument(post._self, post, function (err, replaced) {
              log.push("replaced:" + replaced.title);
              c.createDocument(c.getSelfLink(), { id: "c1", postId: "post-1" }, {},
                function (err, created, options) {
                  log.push("created:" + created.id + ":" + typeof options);
                  getContext().getResponse().setBody({ log: log, accepted: accepted });
                });
            });
            log.push("after-replace-call");
          });
          var marker = "set-after-call";
          log.push("main-end");
        }"#;
        let r = reader();
        let out = run_ok(src, "main", &[], &r);
        assert_eq!(
            out.body,
            json!({"log": ["main-end", "read:true:set-after-call:Hello", "after-replace-call",
                           "replaced:changed", "created:c1:object"], "accepted": true})
        );
        assert_eq!(out.operations, 3);
        assert_eq!(out.writes.len(), 2);
        match &out.writes[0] {
            WriteOp::Replace { id, document, if_match } => {
                assert_eq!(id, "post-1");
                assert_eq!(document["title"], "changed");
                assert_eq!(document["_self"], format!("{COLL}/docs/post-1"));
                assert!(document.get("_etag").is_none());
                assert_eq!(*if_match, etag("post-1"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            out.writes[1],
            WriteOp::Create { document: json!({"id": "c1", "postId": "post-1", "_self": format!("{COLL}/docs/c1")}) }
        );
    }

    #[test]
    fn errors_are_delivered_to_callbacks_with_number() {
        let src = r#"
        function main() {
          var c = __;
          var got = {};
          c.readDocument(c.getAltLink() + "/docs/missing", function (err, doc) {
            got.read = [err.number, err instanceof Error, typeof err.message, doc === undefined];
          });
          c.createDocument(c.getSelfLink(), { id: "post-1", postId: "post-1" }, function (err) {
            got.create = err.number;
          });
          c.replaceDocument(c.getAltLink() + "/docs/nope", { postId: "post-1" }, function (err) {
            got.replace = err.number;
          });
          c.deleteDocument(c.getAltLink() + "/docs/nope", function (err) {
            got.del = err.number;
            getContext().getResponse().setBody(got);
          });
        }"#;
        let out = run_ok(src, "main", &[], &reader());
        assert_eq!(out.body, json!({"read": [404, true, "string", true], "create": 409, "replace": 404, "del": 404}));
        assert!(out.writes.is_empty());
        assert_eq!(out.operations, 4);
    }

    #[test]
    fn failed_operation_without_callback_aborts() {
        let src = r#"
        function main() {
          var c = getContext().getCollection();
          c.createDocument(c.getSelfLink(), { id: "fresh", postId: "post-1" });
          c.createDocument(c.getSelfLink(), { id: "post-1", postId: "post-1" });
          getContext().getResponse().setBody("unreachable");
        }"#;
        let msg = thrown(run_sp(src, "main", &[], &reader(), &Limits::default()));
        assert!(msg.contains("already exists"), "{msg}");

        // Catching the exception does not save the run.
        let src = r#"
        function main() {
          var c = getContext().getCollection();
          c.createDocument(c.getSelfLink(), { id: "fresh", postId: "post-1" });
          var number;
          try { c.readDocument(c.getAltLink() + "/docs/missing"); } catch (e) { number = e.number; }
          if (number !== 404) throw new Error("expected 404, got " + number);
          getContext().getResponse().setBody("caught");
        }"#;
        let msg = thrown(run_sp(src, "main", &[], &reader(), &Limits::default()));
        assert!(msg.contains("Not Found"), "{msg}");
    }

    #[test]
    fn throw_in_main_or_callback_aborts_without_writes() {
        let in_main = r#"
        function main() {
          var c = getContext().getCollection();
          c.createDocument(c.getSelfLink(), { id: "x", postId: "post-1" });
          throw new Error("boom");
        }"#;
        assert_eq!(thrown(run_sp(in_main, "main", &[], &reader(), &Limits::default())), "boom");

        let in_callback = r#"
        function main() {
          var c = getContext().getCollection();
          c.createDocument(c.getSelfLink(), { id: "x", postId: "post-1" }, function (err, doc) {
            getContext().getResponse().setBody(doc);
            throw new Error("callback boom " + doc.id);
          });
        }"#;
        assert_eq!(thrown(run_sp(in_callback, "main", &[], &reader(), &Limits::default())), "callback boom x");

        let not_an_error = r#"function main() { throw "plain " + 42; }"#;
        assert_eq!(thrown(run_sp(not_an_error, "main", &[], &reader(), &Limits::default())), "plain 42");
    }

    #[test]
    fn reads_see_the_overlay_but_queries_do_not() {
        let src = r#"
        function main() {
          var c = getContext().getCollection();
          var link = function (id) { return c.getAltLink() + "/docs/" + id; };
          var seen = {};
          c.createDocument(c.getSelfLink(), { id: "new", postId: "post-1", v: 1 });
          c.readDocument(link("new"), function (err, d) { seen.created = d.v; });
          c.replaceDocument(link("new"), { id: "new", postId: "post-1", v: 2 });
          c.readDocument(link("new"), function (err, d) { seen.replaced = d.v; });
          c.deleteDocument(link("post-2"));
          c.readDocument(link("post-2"), function (err) { seen.deleted = err.number; });
          c.queryDocuments(c.getSelfLink(), "SELECT * FROM c", function (err, docs) {
            seen.queried = docs.map(function (d) { return d.id; });
            getContext().getResponse().setBody(seen);
          });
        }"#;
        let out = run_ok(src, "main", &[], &reader());
        assert_eq!(
            out.body,
            json!({"created": 1, "replaced": 2, "deleted": 404,
                   "queried": ["post-1", "post-2", "post-3", "post-4", "post-5", "post-6"]})
        );
    }

    #[test]
    fn net_effect_collapses_per_id_history() {
        let src = r#"
        function main() {
          var c = getContext().getCollection();
          var link = function (id) { return c.getAltLink() + "/docs/" + id; };
          var doc = function (id, v) { return { id: id, postId: "post-1", v: v }; };
          // created then replaced -> one Create of the final document
          c.createDocument(c.getSelfLink(), doc("a", 1));
          c.replaceDocument(link("a"), doc("a", 2));
          // read then replaced twice -> one Replace with the original etag
          c.readDocument(link("post-1"));
          c.replaceDocument(link("post-1"), doc("post-1", 1));
          c.replaceDocument(link("post-1"), doc("post-1", 2));
          // created then deleted -> nothing
          c.createDocument(c.getSelfLink(), doc("b", 1));
          c.deleteDocument(link("b"));
          // read then deleted -> Delete with the etag
          c.readDocument(link("post-2"));
          c.deleteDocument(link("post-2"));
          // upsert of an id never seen -> Upsert without if_match
          c.upsertDocument(c.getSelfLink(), doc("u1", 1));
          // upsert of a stored id the script never saw -> no if_match either
          c.upsertDocument(c.getSelfLink(), doc("post-5", 1));
          // read then upsert -> Upsert with the etag
          c.readDocument(link("post-3"));
          c.upsertDocument(c.getSelfLink(), doc("post-3", 1));
          // an explicit options.etag wins (and is checked)
          c.replaceDocument(link("post-4"), doc("post-4", 1), { etag: "\"etag-post-4\"" });
          // read, deleted, created again -> Replace with the etag
          c.readDocument(link("post-6"));
          c.deleteDocument(link("post-6"));
          c.createDocument(c.getSelfLink(), doc("post-6", 9));
          // upserted then deleted, never in the store -> nothing
          c.upsertDocument(c.getSelfLink(), doc("u2", 1));
          c.deleteDocument(link("u2"));
        }"#;
        let out = run_ok(src, "main", &[], &reader());
        let d = |id: &str, v: i64| json!({"id": id, "postId": "post-1", "v": v, "_self": format!("{COLL}/docs/{id}")});
        assert_eq!(
            out.writes,
            vec![
                WriteOp::Create { document: d("a", 2) },
                WriteOp::Replace { id: "post-1".into(), document: d("post-1", 2), if_match: etag("post-1") },
                WriteOp::Delete { id: "post-2".into(), if_match: etag("post-2") },
                WriteOp::Upsert { document: d("u1", 1), if_match: None },
                WriteOp::Upsert { document: d("post-5", 1), if_match: None },
                WriteOp::Upsert { document: d("post-3", 1), if_match: etag("post-3") },
                WriteOp::Replace { id: "post-4".into(), document: d("post-4", 1), if_match: etag("post-4") },
                WriteOp::Replace { id: "post-6".into(), document: d("post-6", 9), if_match: etag("post-6") },
            ]
        );
        assert_eq!(out.operations, 19);
    }

    #[test]
    fn wrong_explicit_etag_is_a_412() {
        let src = r#"
        function main() {
          var c = getContext().getCollection();
          c.replaceDocument(c.getAltLink() + "/docs/post-1", { postId: "post-1" },
            { etag: "stale" }, function (err) { getContext().getResponse().setBody(err.number); });
        }"#;
        let out = run_ok(src, "main", &[], &reader());
        assert_eq!(out.body, json!(412));
        assert!(out.writes.is_empty());
    }

    #[test]
    fn etag_is_captured_from_query_results() {
        let src = r#"
        function main() {
          var c = getContext().getCollection();
          c.queryDocuments(c.getSelfLink(),
            { query: "SELECT * FROM c WHERE c.id = @id", parameters: [{ name: "@id", value: "post-2" }] },
            function (err, docs) {
              if (err) throw err;
              var d = docs[0];
              d.title = "from query";
              c.replaceDocument(c.getAltLink() + "/docs/" + d.id, d);
            });
        }"#;
        let out = run_ok(src, "main", &[], &reader());
        assert_eq!(out.writes.len(), 1);
        match &out.writes[0] {
            WriteOp::Replace { id, document, if_match } => {
                assert_eq!(id, "post-2");
                assert_eq!(document["title"], "from query");
                assert_eq!(*if_match, etag("post-2"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn partition_key_mismatch_is_a_400() {
        let src = r#"
        function main() {
          var c = getContext().getCollection();
          var got = [];
          c.createDocument(c.getSelfLink(), { id: "x", postId: "post-2" }, function (err) {
            got.push(err.number);
          });
          c.upsertDocument(c.getSelfLink(), { id: "y" }, function (err) { got.push(err.number); });
          c.readDocument(c.getAltLink() + "/docs/post-1", function (err, d) {
            d.postId = "elsewhere";
            c.replaceDocument(d._self, d, function (err) {
              got.push(err.number);
              getContext().getResponse().setBody(got);
            });
          });
        }"#;
        let out = run_ok(src, "main", &[], &reader());
        assert_eq!(out.body, json!([400, 400, 400]));
        assert!(out.writes.is_empty());
    }

    #[test]
    fn writes_are_not_accepted_past_max_writes() {
        let src = r#"
        function bulk(n) {
          var c = getContext().getCollection();
          var i = 0;
          for (; i < n; i++) {
            if (!c.createDocument(c.getSelfLink(), { id: "d" + i, postId: "post-1" })) break;
          }
          var called = false;
          var late = c.createDocument(c.getSelfLink(), { id: "late", postId: "post-1" },
            function () { called = true; });
          // Writing again to an id already written costs nothing.
          var again = c.replaceDocument(c.getAltLink() + "/docs/d0", { postId: "post-1", v: 2 });
          c.readDocument(c.getAltLink() + "/docs/post-1", function () {
            getContext().getResponse().setBody({
              created: i, continuation: i < n ? i : null, late: late, again: again, called: called });
          });
        }"#;
        let limits = Limits { max_writes: 5, ..Limits::default() };
        let out = run_sp(src, "bulk", &[json!(8)], &reader(), &limits).unwrap();
        assert_eq!(out.body, json!({"created": 5, "continuation": 5, "late": false, "again": true, "called": false}));
        assert_eq!(out.writes.len(), 5);
        assert_eq!(out.operations, 7);
    }

    #[test]
    fn operations_are_not_accepted_past_max_operations() {
        let src = r#"
        function main() {
          var c = getContext().getCollection();
          var n = 0;
          while (c.readDocument(c.getAltLink() + "/docs/post-1")) n++;
          getContext().getResponse().setBody(n);
        }"#;
        let limits = Limits { max_operations: 3, ..Limits::default() };
        let out = run_sp(src, "main", &[], &reader(), &limits).unwrap();
        assert_eq!(out.body, json!(3));
        assert_eq!(out.operations, 3);
    }

    #[test]
    fn query_with_parameters_pages_through_the_reader() {
        let src = r#"
        function main(type) {
          var c = getContext().getCollection();
          var ids = [], pages = 0;
          var spec = { query: "SELECT * FROM c WHERE c.type = @type",
                       parameters: [{ name: "@type", value: type }] };
          function page(continuation) {
            c.queryDocuments(c.getSelfLink(), spec, { pageSize: 4, continuation: continuation },
              function (err, docs, options) {
                if (err) throw err;
                pages++;
                docs.forEach(function (d) { ids.push(d.id); });
                if (options.continuation) page(options.continuation);
                else getContext().getResponse().setBody({ ids: ids, pages: pages,
                                                          last: options.continuation });
              });
          }
          page(undefined);
        }"#;
        let r = reader();
        let out = run_ok(src, "main", &[json!("post")], &r);
        assert_eq!(out.body, json!({"ids": ["post-1", "post-2", "post-3", "post-4", "post-5", "post-6"], "pages": 2}));
        let queries = r.queries.borrow();
        assert_eq!(queries.len(), 2);
        let params = vec![("@type".to_owned(), json!("post"))];
        assert_eq!(queries[0], ("SELECT * FROM c WHERE c.type = @type".to_owned(), params.clone(), Some(4), None));
        assert_eq!(queries[1].1, params);
        assert_eq!(queries[1].3.as_deref(), Some("4"));
    }

    const TRUNCATE_FEED: &str = r#"
    function truncateFeed() {
      var maxItems = 3;
      var context = getContext();
      var collection = context.getCollection();
      var request = context.getRequest();
      var created = request.getBody();
      var seen = {};
      collection.readDocument(collection.getAltLink() + "/docs/" + created.id, function (err) {
        seen.requestDocVisible = !err;
        collection.queryDocuments(collection.getSelfLink(),
          { query: "SELECT * FROM c WHERE c.type = @type", parameters: [{ name: "@type", value: "post" }] },
          function (err, items) {
            if (err) throw err;
            var excess = items.length - maxItems;
            for (var i = 0; i < excess; i++) {
              collection.deleteDocument(items[i]._self, function (err) { if (err) throw err; });
            }
            context.getResponse().setBody({ id: created.id, op: request.getOperationType(),
              sameValue: request.getValue().id === created.id, deleted: Math.max(excess, 0),
              seen: seen });
          });
      });
    }"#;

    #[test]
    fn post_trigger_sees_request_body_and_operation() {
        let r = reader();
        let key = key();
        let partition = Partition { key: &key, key_path: "/postId", collection_link: COLL };
        let request = TriggerRequest {
            operation: TriggerOperation::Create,
            document: json!({"id": "post-7", "postId": "post-1", "type": "post"}),
        };
        let out = run_post_trigger(TRUNCATE_FEED, "truncateFeed", &request, &partition, &r, &Limits::default()).unwrap();
        assert_eq!(
            out.body,
            json!({"id": "post-7", "op": "Create", "sameValue": true, "deleted": 3,
                   "seen": {"requestDocVisible": false}})
        );
        let deleted: Vec<_> = out
            .writes
            .iter()
            .map(|w| match w {
                WriteOp::Delete { id, if_match } => {
                    assert_eq!(*if_match, etag(id));
                    id.as_str()
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(deleted, ["post-1", "post-2", "post-3"]);
    }

    #[test]
    fn infinite_loop_times_out() {
        let limits = Limits { max_duration: Duration::from_millis(50), ..Limits::default() };
        let start = Instant::now();
        let result = run_sp("function main() { while (true) {} }", "main", &[], &reader(), &limits);
        assert_eq!(result, Err(ScriptError::TimedOut));
        assert!(start.elapsed() < Duration::from_secs(2));

        // Also inside a callback, and not catchable.
        let src = r#"
        function main() {
          __.readDocument(__.getAltLink() + "/docs/post-1", function () {
            try { for (;;) {} } catch (e) {}
            getContext().getResponse().setBody("escaped");
          });
        }"#;
        let result = run_sp(src, "main", &[], &reader(), &limits);
        assert_eq!(result, Err(ScriptError::TimedOut));
    }

    #[test]
    fn runaway_recursion_is_a_thrown_error() {
        let src = "function main() { function f(n) { return f(n + 1) + 1; } f(0); }";
        let message = thrown(run_sp(src, "main", &[], &reader(), &Limits::default()));
        assert!(message.contains("stack"), "{message}");
    }

    #[test]
    fn memory_limit_is_enforced() {
        let limits = Limits { max_memory_bytes: 4 * 1024 * 1024, ..Limits::default() };
        let src = r#"function main() { var a = []; for (;;) a.push(new Array(1000).fill("x" + a.length)); }"#;
        let result = run_sp(src, "main", &[], &reader(), &limits);
        assert_eq!(result, Err(ScriptError::OutOfMemory));
    }

    #[test]
    fn set_body_with_objects() {
        let src = r#"
        function main(a, b) {
          var res = getContext().getResponse();
          res.setBody("first");
          res.setBody({ sum: a + b, nested: { list: [1, "two", null, true], f: function () {} } });
          res.getBody().extra = res.getBody().sum * 2;
        }"#;
        let out = run_ok(src, "main", &[json!(2), json!(3)], &reader());
        assert_eq!(out.body, json!({"sum": 5, "nested": {"list": [1, "two", null, true]}, "extra": 10}));
        let out = run_ok("function main() {}", "main", &[], &reader());
        assert_eq!(out.body, Value::Null);
        assert_eq!(out.operations, 0);
        let out = run_ok(
            "function main(x) { getContext().getResponse().setBody(getContext().getRequest().getBody()); }",
            "main",
            &[json!({"k": [1]})],
            &reader(),
        );
        assert_eq!(out.body, json!([{"k": [1]}]));
    }

    #[test]
    fn compile_errors_and_missing_functions() {
        let r = reader();
        let result = run_sp("function main( {", "main", &[], &r, &Limits::default());
        assert!(matches!(result, Err(ScriptError::Compile(_))), "{result:?}");
        let result = run_sp("function other() {}", "main", &[], &r, &Limits::default());
        assert!(matches!(result, Err(ScriptError::Compile(m)) if m.contains("main")));
    }

    #[test]
    fn store_failures_end_the_run() {
        let mut r = reader();
        r.fail_id = Some("post-2".into());
        let src = r#"
        function main() {
          __.readDocument(__.getAltLink() + "/docs/post-2", function (err) {
            getContext().getResponse().setBody("script saw " + err);
          });
        }"#;
        let result = run_sp(src, "main", &[], &r, &Limits::default());
        assert_eq!(result, Err(ScriptError::Store(StoreError { status: 503, message: "service unavailable".into() })));
    }

    #[test]
    fn links_by_rid_self_and_percent_encoded_id_and_generated_ids() {
        let r = MemReader::new(vec![
            json!({"id": "ridded", "postId": "post-1", "n": 1,
                   "_self": "dbs/AbC==/colls/XyZ=/docs/RiD1==/", "_etag": "\"e1\""}),
            json!({"id": "a b", "postId": "post-1"}),
        ]);
        let src = r#"
        function main() {
          var c = getContext().getCollection();
          c.readDocument(c.getAltLink() + "/docs/ridded", function (err, d) {
            d.n++;
            c.replaceDocument(d._self, d, function (err) { if (err) throw err; });
          });
          c.readDocument(c.getAltLink() + "/docs/" + encodeURIComponent("a b"), function (err, d) {
            if (err) throw err;
            c.deleteDocument(d._self);
          });
          c.createDocument(c.getSelfLink(), { postId: "post-1" }, function (err, d) {
            getContext().getResponse().setBody(d.id);
          });
        }"#;
        let out = run_ok(src, "main", &[], &r);
        let generated = out.body.as_str().unwrap().to_owned();
        assert_eq!(generated.len(), 36);
        assert_eq!(&generated[14..15], "4");
        assert_eq!(out.writes.len(), 3);
        assert!(matches!(&out.writes[0], WriteOp::Create { document } if document["id"] == generated.as_str()));
        assert!(matches!(&out.writes[1], WriteOp::Replace { id, document, if_match }
                if id == "ridded" && document["n"] == 2 && if_match.as_deref() == Some("\"e1\"")));
        assert_eq!(out.writes[2], WriteOp::Delete { id: "a b".into(), if_match: etag("a b") });
    }

    #[test]
    fn promise_jobs_run_too() {
        let src = r#"
        function main() {
          Promise.resolve(7).then(function (v) {
            __.readDocument(__.getAltLink() + "/docs/post-1", function (err, d) {
              getContext().getResponse().setBody([v, d.id]);
            });
          });
        }"#;
        let out = run_ok(src, "main", &[], &reader());
        assert_eq!(out.body, json!([7, "post-1"]));
    }

    #[test]
    fn create_comment_end_to_end() {
        let src = r#"
        function createComment(postId, comment) {
          var collection = getContext().getCollection();
          var link = collection.getAltLink() + "/docs/" + postId;
          collection.readDocument(link, function (err, post) {
            if (err) throw err;
            post.commentCount++;
            collection.replaceDocument(post._self, post, function (err) {
              if (err) throw err;
              collection.createDocument(collection.getSelfLink(), comment, function (err, created) {
                if (err) throw err;
                getContext().getResponse().setBody(created);
              });
            });
          });
        }"#;
        let r = reader();
        let comment = json!({"id": "comment-1", "postId": "post-1", "type": "comment", "content": "Nice"});
        let out = run_ok(src, "createComment", &[json!("post-1"), comment.clone()], &r);
        let mut expected_comment = comment;
        expected_comment["_self"] = json!(format!("{COLL}/docs/comment-1"));
        assert_eq!(out.body, expected_comment);
        assert_eq!(out.operations, 3);
        let mut expected_post = r.docs["post-1"].clone();
        expected_post["commentCount"] = json!(1);
        expected_post.as_object_mut().unwrap().remove("_etag");
        expected_post.as_object_mut().unwrap().remove("_ts");
        assert_eq!(
            out.writes,
            vec![
                WriteOp::Replace { id: "post-1".into(), document: expected_post, if_match: etag("post-1") },
                WriteOp::Create { document: expected_comment },
            ]
        );

        // A missing post: the callback throws the 404 error, nothing is written.
        let message = thrown(run_sp(
            src,
            "createComment",
            &[json!("post-404"), json!({"id": "c", "postId": "post-1"})],
            &r,
            &Limits::default(),
        ));
        assert!(message.contains("post-404"), "{message}");
    }

    /// `cargo test --release -- --ignored --nocapture per_run_cost`
    #[test]
    #[ignore]
    fn per_run_cost() {
        let r = reader();
        let src = "function main(x) { getContext().getResponse().setBody(x + 1); }";
        let n = 300;
        for _ in 0..20 {
            run_ok(src, "main", &[json!(1)], &r);
        }
        let start = Instant::now();
        for _ in 0..n {
            run_ok(src, "main", &[json!(1)], &r);
        }
        let per_run = start.elapsed() / n;
        let create = r#"function main() { var c = __; c.readDocument(c.getAltLink() + "/docs/post-1",
            function (e, p) { p.commentCount++; c.replaceDocument(p._self, p); }); }"#;
        let start = Instant::now();
        for _ in 0..n {
            run_ok(create, "main", &[], &r);
        }
        let per_rw = start.elapsed() / n;
        println!("per run, trivial script: {per_run:?}; read+replace script: {per_rw:?}");
    }
}
