//! Each test states the Cosmos DB behaviour it checks, from Azure/azure-cosmosdb-js-server
//! `utils/DocDbWrapperScript.js` (W) or learn.microsoft.com/azure/cosmos-db/nosql/stored-procedures-triggers-udfs (D1).
//!
//! The helpers are here: a partition in memory and the runs on it. `wrapper` checks the
//! collection's API as a script calls it (callbacks, errors, links, bodies, queries, the
//! request and response maps). The module `outcome` checks what a run leaves (one batch's worth
//! of writes, the etags, the net effect per id, the read set, the limits).

mod outcome;
mod wrapper;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::{Value, json};

use super::*;

const SELF: &str = "dbs/AbCdAA==/colls/AbCdAKl3aWs=/";
const ALT: &str = "dbs/blog/colls/posts";

/// A partition in memory. Queries: `SELECT * FROM c` and `SELECT * FROM c WHERE c.<field> = @<param>`,
/// by id, paged with the next offset as continuation; anything else is a 400, like bad SQL.
#[derive(Default)]
struct MemReader {
    docs: BTreeMap<String, Value>,
    fail_with: Option<fn() -> StoreError>,
    queries: RefCell<Vec<(String, PageRequest)>>,
}

fn mem(docs: Vec<Value>) -> Rc<MemReader> {
    let mut reader = MemReader::default();
    for (n, mut doc) in docs.into_iter().enumerate() {
        let id = doc["id"].as_str().unwrap().to_owned();
        let rid = format!("AbCdAKl3aWsB{n:04}==");
        let fields = doc.as_object_mut().unwrap();
        fields.insert("_etag".into(), json!(format!("\"etag-{id}\"")));
        fields.insert("_self".into(), json!(format!("{SELF}docs/{rid}/")));
        fields.insert("_rid".into(), json!(rid));
        fields.insert("_ts".into(), json!(1_700_000_000));
        reader.docs.insert(id, doc);
    }
    Rc::new(reader)
}

impl PartitionReader for MemReader {
    fn read(&self, id: &str) -> Result<Option<Value>, StoreError> {
        if let Some(fail) = self.fail_with {
            return Err(fail());
        }
        Ok(self.docs.get(id).cloned())
    }

    fn query(
        &self,
        sql: &str,
        parameters: &[(String, Value)],
        page: PageRequest,
    ) -> Result<(Vec<Value>, Option<String>), StoreError> {
        self.queries.borrow_mut().push((sql.to_owned(), page.clone()));
        let bad = || StoreError::BadRequest(format!("Syntax error near '{sql}'"));
        let rows: Vec<Value> = if sql == "SELECT * FROM c" {
            self.docs.values().cloned().collect()
        } else {
            let condition = sql.strip_prefix("SELECT * FROM c WHERE c.").ok_or_else(bad)?;
            let (field, name) = condition.split_once(" = ").ok_or_else(bad)?;
            let value =
                parameters.iter().find(|(n, _)| n == name).map(|(_, v)| v).ok_or_else(bad)?;
            self.docs.values().filter(|d| d.get(field) == Some(value)).cloned().collect()
        };
        let offset: usize = page.continuation.map_or(0, |c| c.parse().unwrap());
        let end = (offset + page.size as usize).min(rows.len());
        Ok((rows[offset..end].to_vec(), (end < rows.len()).then(|| end.to_string())))
    }
}

fn post(id: &str) -> Value {
    json!({"id": id, "postId": "post-1", "type": "post", "title": "Hello", "commentCount": 0})
}

fn reader() -> Rc<MemReader> {
    mem((1..=6).map(|n| post(&format!("post-{n}"))).collect())
}

fn partition() -> Partition {
    Partition {
        key: json!("post-1"),
        key_path: "/postId",
        self_link: SELF.into(),
        alt_link: ALT.into(),
    }
}

fn run_with(source: &str, invocation: Invocation, reader: Rc<MemReader>, limits: &Limits) -> Run {
    run(source, "main", &invocation, &partition(), reader, limits)
}

fn sp(source: &str, args: Vec<Value>, reader: Rc<MemReader>) -> Result<ScriptOutcome, ScriptError> {
    run_with(source, Invocation::Procedure(args), reader, &Limits::default()).result
}

fn ok(source: &str) -> ScriptOutcome {
    sp(source, vec![], reader()).unwrap_or_else(|e| panic!("script failed: {e}"))
}

fn thrown(result: Result<ScriptOutcome, ScriptError>) -> String {
    match result {
        Err(ScriptError::Thrown(message)) => message,
        other => panic!("expected a thrown error, got {other:?}"),
    }
}

fn etag(id: &str) -> Option<String> {
    Some(format!("\"etag-{id}\""))
}
