//! The native side of every operation: the run's view of its partition (the store as first seen,
//! under the script's own writes) and the net effect of those writes.

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::{Map, Value, json};

use super::{Invocation, Limits, Partition, PartitionReader, Reads};
use crate::cosmos::{PageRequest, StoreError, WriteOp};
use crate::scripts::{ScriptError, ScriptFailure};

/// The system properties Cosmos DB sets on every document; a write's own are ignored.
const SYSTEM_PROPERTIES: [&str; 5] = ["_rid", "_self", "_etag", "_ts", "_attachments"];

/// Bytes a batch operation takes beside its document (its JSON envelope, generously).
const OPERATION_OVERHEAD: usize = 256;

/// The largest document Cosmos DB stores (2 MB).
const MAX_DOCUMENT_BYTES: usize = 2 * 1024 * 1024;

#[derive(Debug, Clone, Default)]
enum Stored {
    #[default]
    Unknown,
    Absent,
    Present(Value),
}

#[derive(Debug, Default)]
struct Entry {
    /// The store's version, as first seen (point read or query): a snapshot per document.
    stored: Stored,
    /// The script's writes: `Some(Some(doc))` written, `Some(None)` deleted.
    written: Option<Option<Value>>,
    /// Bytes the id's net write adds to the batch.
    bytes: usize,
}

/// How an operation went, for the JavaScript layer.
enum Reply {
    /// The reply's fields: `result`, `continuation`, `notModified`.
    Done(Map<String, Value>),
    Failed(u16, String),
    NotAccepted,
}

pub(super) struct State {
    partition: Partition,
    reader: Rc<dyn PartitionReader>,
    entries: HashMap<String, Entry>,
    /// Ids the script wrote, in the order of their first write.
    write_order: Vec<String>,
    rids: HashMap<String, String>,
    queried: bool,
    /// Distinct ids and bytes the script may still write in the batch.
    max_ids: usize,
    bytes_left: usize,
    /// Set when the run must fail whatever the script does next (abort, store failure).
    pub failure: Option<ScriptError>,
}

fn failed(status: u16, message: impl Into<String>) -> Reply {
    Reply::Failed(status, message.into())
}

fn done(reply: Value) -> Reply {
    Reply::Done(reply.as_object().cloned().unwrap_or_default())
}

fn not_found() -> Reply {
    failed(404, "Resource Not Found")
}

impl State {
    pub(super) fn new(
        partition: Partition,
        reader: Rc<dyn PartitionReader>,
        limits: &Limits,
        invocation: &Invocation,
    ) -> State {
        // One operation of the batch is the fence's, one a trigger's request's.
        let mut state = State {
            partition,
            reader,
            entries: HashMap::new(),
            write_order: Vec::new(),
            rids: HashMap::new(),
            queried: false,
            max_ids: limits.batch_operations.saturating_sub(1),
            bytes_left: limits.batch_bytes.saturating_sub(OPERATION_OVERHEAD),
            failure: None,
        };
        if let Invocation::PostTrigger { document, .. } = invocation {
            state.max_ids = state.max_ids.saturating_sub(1);
            state.bytes_left =
                state.bytes_left.saturating_sub(document.to_string().len() + OPERATION_OVERHEAD);
        }
        state
    }

    /// The request's document as the trigger sees it: written, with system properties.
    pub(crate) fn written_by_request(&mut self, document: &Value) -> Value {
        let id = document.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
        let stored = self.with_system_properties(&id, document.clone());
        self.entries.entry(id).or_default().written = Some(Some(stored.clone()));
        stored
    }

    /// Performs `kind` with the JSON `payload` from `server_api.js` and answers it as JSON:
    /// `{accepted:false}`, `{accepted:true, result, continuation?, notModified?}`,
    /// `{accepted:true, error:{status, message}}`, or `{stop}` (the run is over).
    pub(crate) fn dispatch(&mut self, kind: &str, payload: &str) -> String {
        if self.failure.is_some() {
            return json!({"stop": "the run was stopped"}).to_string();
        }
        let request: Value = serde_json::from_str(payload).unwrap_or_default();
        let outcome = match kind {
            "read" => self.read(&request),
            "query" => self.query(&request),
            "create" | "upsert" | "replace" => self.write(kind, &request),
            "delete" => self.delete(&request),
            "abort" => {
                let message = request["message"].as_str().unwrap_or("aborted").to_owned();
                self.failure = Some(ScriptError::Thrown(message));
                return json!({"stop": "aborted"}).to_string();
            }
            other => Err(ScriptError::Failed(ScriptFailure::UnknownOperation {
                operation: other.to_owned(),
            })),
        };
        let reply = match outcome {
            Ok(Reply::NotAccepted) => json!({"accepted": false}),
            Ok(Reply::Failed(status, message)) => {
                json!({"accepted": true, "error": {"status": status, "message": message}})
            }
            Ok(Reply::Done(mut reply)) => {
                reply.insert("accepted".into(), Value::Bool(true));
                Value::Object(reply)
            }
            Err(error) => {
                let message = error.to_string();
                self.failure = Some(error);
                json!({"stop": message})
            }
        };
        reply.to_string()
    }

    fn read(&mut self, request: &Value) -> Result<Reply, ScriptError> {
        let Some(id) = self.target(&request["target"])? else { return Ok(not_found()) };
        let Some(document) = self.current(&id)? else { return Ok(not_found()) };
        let unchanged = request["options"]["ifNoneMatch"]
            .as_str()
            .is_some_and(|etag| document.get("_etag") == Some(&json!(etag)));
        Ok(done(if unchanged { json!({"notModified": true}) } else { json!({"result": document}) }))
    }

    fn query(&mut self, request: &Value) -> Result<Reply, ScriptError> {
        let Some(sql) = request["query"].as_str() else {
            return Ok(failed(400, "The query must be a string."));
        };
        let mut parameters = Vec::new();
        for parameter in request["parameters"].as_array().into_iter().flatten() {
            let Some(name) = parameter["name"].as_str() else {
                return Ok(failed(400, "A query parameter has no name."));
            };
            parameters.push((name.to_owned(), parameter["value"].clone()));
        }
        let size = request["pageSize"]
            .as_f64()
            .filter(|size| *size >= 1.0)
            .map_or(100, |size| size.min(1000.0) as u32);
        let continuation =
            request["continuation"].as_str().filter(|token| !token.is_empty()).map(str::to_owned);
        self.queried = true;
        let (documents, continuation) =
            match self.reader.query(sql, &parameters, PageRequest { size, continuation }) {
                Ok(page) => page,
                Err(StoreError::BadRequest(message) | StoreError::BadContinuation(message)) => {
                    return Ok(failed(400, message));
                }
                Err(other) => return Err(ScriptError::Store(other)),
            };
        let mut visible = Vec::with_capacity(documents.len());
        for document in documents {
            let Some(id) = document.get("id").and_then(Value::as_str).map(str::to_owned) else {
                visible.push(document);
                continue;
            };
            self.note_stored(&id, Some(&document));
            // What the script deleted is gone; what it wrote shows as stored (the store ran the query).
            if !matches!(self.entries.get(&id).and_then(|entry| entry.written.as_ref()), Some(None))
            {
                visible.push(document);
            }
        }
        Ok(done(json!({"result": visible, "continuation": continuation})))
    }

    fn write(&mut self, kind: &str, request: &Value) -> Result<Reply, ScriptError> {
        let mut document = match &request["document"] {
            Value::String(text) => match serde_json::from_str::<Value>(text) {
                Ok(document @ Value::Object(_)) => document,
                _ => {
                    return Ok(failed(
                        400,
                        "The input content is invalid: the document must be a JSON object.",
                    ));
                }
            },
            _ => {
                return Ok(failed(
                    400,
                    "The input content is invalid: the document must be a JSON object.",
                ));
            }
        };
        let generate = request["options"]["generateId"].as_bool().unwrap_or(false);
        if generate && is_falsy(document.get("id")) {
            document["id"] = Value::String(uuid::Uuid::new_v4().to_string());
        }
        let id = match document.get("id") {
            None => {
                return Ok(failed(
                    400,
                    "The input content is invalid because the required properties - 'id; ' - are missing",
                ));
            }
            Some(Value::String(id)) if valid_id(id) => id.clone(),
            Some(other) => return Ok(failed(400, format!("The input name {other} is invalid."))),
        };
        if kind == "replace" {
            match self.target(&request["target"])? {
                Some(target) if target == id => {}
                Some(_) => {
                    return Ok(failed(
                        400,
                        "The id of the document does not match the id of its link.",
                    ));
                }
                None => return Ok(not_found()),
            }
        }
        if document.pointer(self.partition.key_path) != Some(&self.partition.key) {
            return Ok(failed(
                400,
                "Requests originating from scripts cannot reference partition keys other than the one for which \
                 client request was submitted.",
            ));
        }
        let current = self.current(&id)?;
        match (kind, &current) {
            ("create", Some(_)) => {
                return Ok(failed(409, "Resource with specified id or name already exists."));
            }
            ("replace", None) => return Ok(not_found()),
            _ => {}
        }
        if let Some(etag) = request["options"]["etag"].as_str()
            && current.as_ref().and_then(|document| document.get("_etag")) != Some(&json!(etag))
        {
            return Ok(failed(412, "One of the specified pre-condition is not met."));
        }
        for property in SYSTEM_PROPERTIES {
            document.as_object_mut().map(|fields| fields.remove(property));
        }
        let bytes = document.to_string().len();
        if bytes > MAX_DOCUMENT_BYTES {
            return Ok(failed(413, "Request size is too large."));
        }
        if !self.fits(&id, bytes + OPERATION_OVERHEAD) {
            return Ok(Reply::NotAccepted);
        }
        let stored = self.with_system_properties(&id, document);
        self.record_write(&id, Some(stored.clone()), bytes + OPERATION_OVERHEAD);
        Ok(done(json!({"result": stored})))
    }

    fn delete(&mut self, request: &Value) -> Result<Reply, ScriptError> {
        let Some(id) = self.target(&request["target"])? else { return Ok(not_found()) };
        let Some(current) = self.current(&id)? else { return Ok(not_found()) };
        if let Some(etag) = request["options"]["etag"].as_str()
            && current.get("_etag") != Some(&json!(etag))
        {
            return Ok(failed(412, "One of the specified pre-condition is not met."));
        }
        // Its net effect depends on whether the store has it.
        self.stored(&id)?;
        if !self.fits(&id, OPERATION_OVERHEAD) {
            return Ok(Reply::NotAccepted);
        }
        self.record_write(&id, None, OPERATION_OVERHEAD);
        Ok(done(json!({})))
    }

    /// The id a link names: by id, or by `_rid` (one seen in this run, else looked up).
    fn target(&mut self, target: &Value) -> Result<Option<String>, ScriptError> {
        if let Some(id) = target["id"].as_str() {
            return Ok(Some(id.to_owned()));
        }
        let rid = target["rid"].as_str().unwrap_or_default();
        if let Some(id) = self.rids.get(rid) {
            return Ok(Some(id.clone()));
        }
        let parameters = [("@rid".to_owned(), json!(rid))];
        let page = PageRequest { size: 1, continuation: None };
        let (found, _) = self
            .reader
            .query("SELECT * FROM c WHERE c._rid = @rid", &parameters, page)
            .map_err(ScriptError::Store)?;
        let id = found
            .first()
            .and_then(|document| document.get("id"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        if let (Some(id), Some(document)) = (&id, found.first()) {
            self.note_stored(id, Some(document));
        }
        Ok(id)
    }

    /// The document as the script sees it now: its own write, else the store's.
    fn current(&mut self, id: &str) -> Result<Option<Value>, ScriptError> {
        if let Some(written) = self.entries.get(id).and_then(|entry| entry.written.clone()) {
            return Ok(written);
        }
        self.stored(id)
    }

    fn stored(&mut self, id: &str) -> Result<Option<Value>, ScriptError> {
        match self.entries.get(id).map(|entry| &entry.stored) {
            Some(Stored::Present(document)) => return Ok(Some(document.clone())),
            Some(Stored::Absent) => return Ok(None),
            _ => {}
        }
        let document = self.reader.read(id).map_err(ScriptError::Store)?;
        self.note_stored(id, document.as_ref());
        Ok(document)
    }

    /// Remembers the store's version of `id`, if it is the first one seen.
    fn note_stored(&mut self, id: &str, document: Option<&Value>) {
        let entry = self.entries.entry(id.to_owned()).or_default();
        if matches!(entry.stored, Stored::Unknown) {
            entry.stored =
                document.map_or(Stored::Absent, |document| Stored::Present(document.clone()));
            if let Some(rid) =
                document.and_then(|document| document.get("_rid")).and_then(Value::as_str)
            {
                self.rids.insert(rid.to_owned(), id.to_owned());
            }
        }
    }

    /// Whether writing `id` with `bytes` keeps the batch within its limits.
    fn fits(&self, id: &str, bytes: usize) -> bool {
        let previous = self.entries.get(id).map_or(0, |entry| entry.bytes);
        let new_id = !self.write_order.iter().any(|written| written == id);
        (!new_id || self.write_order.len() < self.max_ids) && bytes <= self.bytes_left + previous
    }

    fn record_write(&mut self, id: &str, document: Option<Value>, bytes: usize) {
        if !self.write_order.iter().any(|written| written == id) {
            self.write_order.push(id.to_owned());
        }
        let entry = self.entries.entry(id.to_owned()).or_default();
        self.bytes_left = self.bytes_left + entry.bytes - bytes;
        entry.bytes = bytes;
        entry.written = Some(document);
    }

    /// `document` as the store would return it: the `_rid` it has (or a new one) and a new
    /// `_etag` and `_ts`. The store assigns the real ones at commit.
    fn with_system_properties(&mut self, id: &str, mut document: Value) -> Value {
        let stored_rid = match self
            .entries
            .get(id)
            .and_then(|entry| entry.written.as_ref())
            .and_then(Option::as_ref)
        {
            Some(written) => written.get("_rid").cloned(),
            None => match self.entries.get(id).map(|entry| &entry.stored) {
                Some(Stored::Present(stored)) => stored.get("_rid").cloned(),
                _ => None,
            },
        };
        let rid = stored_rid.and_then(|rid| rid.as_str().map(str::to_owned)).unwrap_or_else(|| {
            let bytes = uuid::Uuid::new_v4().into_bytes();
            bytes[..8].iter().map(|byte| format!("{byte:02X}")).collect()
        });
        self.rids.insert(rid.clone(), id.to_owned());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let fields = document.as_object_mut().expect("documents are objects");
        fields.insert("_rid".into(), json!(rid));
        fields.insert("_self".into(), json!(format!("{}docs/{rid}/", self.partition.self_link)));
        fields.insert("_etag".into(), json!(format!("\"{}\"", uuid::Uuid::new_v4())));
        fields.insert("_ts".into(), json!(now));
        fields.insert("_attachments".into(), json!("attachments/"));
        document
    }

    /// What the run read, for the caller to check it is still current.
    pub(super) fn reads(&self) -> Reads {
        let etag =
            |document: &Value| document.get("_etag").and_then(Value::as_str).map(str::to_owned);
        let items = self
            .entries
            .iter()
            .filter_map(|(id, entry)| match &entry.stored {
                Stored::Unknown => None,
                Stored::Absent => Some((id.clone(), None)),
                Stored::Present(document) => Some((id.clone(), etag(document))),
            })
            .collect();
        Reads { items, queried: self.queried }
    }

    /// Each written id's history as one operation, conditioned on what the store had when the
    /// script first saw it.
    pub(crate) fn net_writes(&self) -> Vec<WriteOp> {
        let mut writes = Vec::new();
        for id in &self.write_order {
            let entry = &self.entries[id];
            let if_match = match &entry.stored {
                Stored::Present(document) => {
                    document.get("_etag").and_then(Value::as_str).map(str::to_owned)
                }
                _ => None,
            };
            let write = match (&entry.written, &entry.stored) {
                (Some(Some(document)), stored) => {
                    let mut document = document.clone();
                    let fields: &mut Map<String, Value> =
                        document.as_object_mut().expect("documents are objects");
                    for property in SYSTEM_PROPERTIES {
                        fields.remove(property);
                    }
                    match stored {
                        Stored::Present(_) => {
                            WriteOp::Replace { id: id.clone(), document, if_match }
                        }
                        Stored::Absent => WriteOp::Create { document },
                        Stored::Unknown => WriteOp::Upsert { document, if_match: None },
                    }
                }
                (Some(None), Stored::Present(_)) => WriteOp::Delete { id: id.clone(), if_match },
                _ => continue,
            };
            writes.push(write);
        }
        writes
    }
}

/// What the wrapper's `!body.id` treats as missing.
fn is_falsy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) | Some(Value::Bool(false)) => true,
        Some(Value::String(text)) => text.is_empty(),
        Some(Value::Number(number)) => number.as_f64() == Some(0.0),
        Some(_) => false,
    }
}

/// Cosmos DB ids: non-empty, at most 255 characters, without `/ \ ? #`.
fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.chars().count() <= 255 && !id.contains(['/', '\\', '?', '#'])
}
