//! Each test states the Cosmos DB behaviour it checks, from Azure/azure-cosmosdb-js-server
//! `utils/DocDbWrapperScript.js` (W) or learn.microsoft.com/azure/cosmos-db/nosql/stored-procedures-triggers-udfs (D1).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

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
            let value = parameters.iter().find(|(n, _)| n == name).map(|(_, v)| v).ok_or_else(bad)?;
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
    Partition { key: json!("post-1"), key_path: "/postId", self_link: SELF.into(), alt_link: ALT.into() }
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

/// W: callbacks run after the calling turn; success is `callback(undefined, resource, options)`
/// where the resource is the stored one, with `_rid`, `_self`, `_etag`, `_ts`.
#[test]
fn callbacks_get_the_stored_resource_after_the_turn() {
    let out = ok(r#"
    function main() {
      var c = getContext().getCollection(), log = [];
      var accepted = c.readDocument(c.getAltLink() + "/docs/post-1", function (err, post) {
        log.push("read " + (err === undefined) + " " + marker);
        post.title = "changed";
        c.replaceDocument(post._self, post, function (err, replaced) {
          log.push(replaced._rid === post._rid && replaced._etag !== post._etag && typeof replaced._ts);
          c.createDocument(c.getSelfLink(), { id: "c1", postId: "post-1" }, function (err, created, options) {
            log.push(created._self === c.getSelfLink() + "docs/" + created._rid + "/", typeof options);
            getContext().getResponse().setBody({ log: log, accepted: accepted });
          });
        });
      });
      var marker = "after";
    }"#);
    assert_eq!(out.body, json!({"log": ["read true after", "number", true, "object"], "accepted": true}));
    let mut replaced = reader().docs["post-1"].clone();
    for property in ["_rid", "_self", "_etag", "_ts"] {
        replaced.as_object_mut().unwrap().remove(property);
    }
    replaced["title"] = json!("changed");
    assert_eq!(
        out.writes,
        [
            WriteOp::Replace { id: "post-1".into(), document: replaced, if_match: etag("post-1") },
            WriteOp::Create { document: json!({"id": "c1", "postId": "post-1"}) },
        ]
    );
}

/// W: errors reach the callback as `callback(err)` with `number` and `body`; a delete's callback
/// gets `(undefined, options)`; an explicit `options.etag` is checked (412).
#[test]
fn database_errors_reach_the_callback() {
    let out = ok(r#"
    function main() {
      var c = __, got = {};
      c.readDocument(c.getAltLink() + "/docs/missing", function (err, doc) {
        got.read = [err.number, err instanceof Error, JSON.parse(err.body).Errors.length, arguments.length];
      });
      c.createDocument(c.getSelfLink(), { id: "post-1", postId: "post-1" }, function (err) { got.create = err.number; });
      c.replaceDocument(c.getAltLink() + "/docs/post-2", { id: "post-2", postId: "post-1" }, { etag: "stale" },
        function (err) { got.stale = err.number; });
      c.deleteDocument(c.getAltLink() + "/docs/post-3", function (err, options) {
        got.del = [err, arguments.length, typeof options];
        getContext().getResponse().setBody(got);
      });
    }"#);
    assert_eq!(out.body, json!({"read": [404, true, 1, 1], "create": 409, "stale": 412, "del": [null, 2, "object"]}));
    assert_eq!(out.writes, [WriteOp::Delete { id: "post-3".into(), if_match: etag("post-3") }]);
}

/// W: without a callback a failed operation's error is thrown from its completion, later: the
/// call itself returns true and a try/catch around it does not save the run.
#[test]
fn a_failure_without_callback_fails_the_run_later() {
    let message = thrown(sp(
        r#"function main() {
          var c = getContext().getCollection(), caught = false;
          try { var accepted = c.readDocument(c.getAltLink() + "/docs/missing"); } catch (e) { caught = true; }
          getContext().getResponse().setBody([accepted, caught]);
        }"#,
        vec![],
        reader(),
    ));
    assert!(message.contains("Resource Not Found"), "{message}");
}

/// D1: an exception anywhere rolls the whole run back.
#[test]
fn a_throw_writes_nothing() {
    let in_callback = r#"function main() {
      __.createDocument(__.getSelfLink(), { id: "x", postId: "post-1" }, function (err, doc) { throw new Error("boom " + doc.id); });
    }"#;
    assert_eq!(thrown(sp(in_callback, vec![], reader())), "boom x");
    assert_eq!(thrown(sp(r#"function main() { throw "plain " + 42; }"#, vec![], reader())), "plain 42");
}

/// A throw is classified by the number it was thrown with, never by its message: the keyed
/// procedures' "in progress" is its own variant, the same words without the number are not.
#[test]
fn a_throw_with_the_in_progress_number_is_told_apart_by_it() {
    let numbered = format!(
        r#"function main() {{ throw new Error({}, "createLike: a request with this key is in progress"); }}"#,
        crate::scripts::IN_PROGRESS
    );
    let result = sp(&numbered, vec![], reader());
    assert!(
        matches!(&result, Err(ScriptError::InProgress(message)) if message == "createLike: a request with this key is in progress"),
        "{result:?}"
    );
    let worded = r#"function main() { throw new Error("createLike: a request with this key is in progress"); }"#;
    assert!(matches!(sp(worded, vec![], reader()), Err(ScriptError::Thrown(_))));
    let other = r#"function main() { throw new Error(409, "taken"); }"#;
    assert_eq!(thrown(sp(other, vec![], reader())), "taken");
}

/// W: `ErrorCodes` is frozen with exactly these members, and `new Error(number, message)` (the
/// Chakra form the wrapper itself uses) sets `number` and `message`.
#[test]
fn error_codes_and_numbered_errors() {
    let out = ok(r#"function main() {
      ErrorCodes.NotFound = 1;
      var e = new Error(ErrorCodes.Conflict, "taken"), plain = new Error("text"), t = new TypeError("t");
      getContext().getResponse().setBody({ codes: ErrorCodes, frozen: Object.isFrozen(ErrorCodes),
        numbered: [e.number, e.message, e instanceof Error], plain: [plain.number === undefined, plain.message],
        typeError: t instanceof Error });
    }"#);
    assert_eq!(
        out.body,
        json!({"codes": {"BadRequest": 400, "Forbidden": 403, "NotFound": 404, "Conflict": 409, "PreconditionFailed": 412,
                         "RequestEntityTooLarge": 413, "RetryWith": 449, "InternalServerError": 500},
               "frozen": true, "numbered": [409, "taken", true], "plain": [true, "text"], "typeError": true})
    );
}

/// W validateCollectionLink/validateDocumentLink: the collection link must be exactly
/// getSelfLink() (by rid) or getAltLink() (by name); a document link is one of those plus
/// `docs/<rid>` or `/docs/<id>`. Anything else throws Error(400) synchronously.
#[test]
fn links_are_checked_as_on_cosmos() {
    let out = ok(r#"function main() {
      var c = __, results = [];
      function attempt(f) { try { f(); results.push("ok"); } catch (e) { results.push(e.number); } }
      attempt(function () { c.readDocument(c.getSelfLink() + "/docs/post-1"); });
      attempt(function () { c.readDocument("dbs/blog/colls/feed/docs/post-1"); });
      attempt(function () { c.readDocument(c.getAltLink()); });
      attempt(function () { c.createDocument(c.getAltLink() + "/", { id: "a", postId: "post-1" }); });
      attempt(function () { c.queryDocuments("dbs/other/colls/posts", "SELECT * FROM c"); });
      attempt(function () { c.readDocument(); });
      c.readDocument(c.getAltLink() + "/docs/post-2/", function (err, byId) {
        c.readDocument(byId._self, function (err, byRid) {
          getContext().getResponse().setBody({ results: results, self: c.getSelfLink(), alt: c.getAltLink(),
                                               same: byRid.id === "post-2" });
        });
      });
    }"#);
    assert_eq!(out.body, json!({"results": [400, 400, 400, 400, 400, 400], "self": SELF, "alt": ALT, "same": true}));
}

/// W createDocument: a string body is parsed; a missing id is generated (the caller's object is
/// left alone) unless `disableAutomaticIdGeneration`, when the database answers 400; a body that
/// is neither object nor string throws 400.
#[test]
fn create_bodies_and_generated_ids() {
    let out = ok(r#"function main() {
      var c = __, got = {}, doc = { postId: "post-1" };
      c.createDocument(c.getSelfLink(), '{"id":"s","postId":"post-1"}', function (err, d) { got.string = d.id; });
      c.createDocument(c.getSelfLink(), doc, function (err, d) { got.generated = d.id; got.untouched = doc.id === undefined; });
      c.createDocument(c.getSelfLink(), { postId: "post-1" }, { disableAutomaticIdGeneration: true },
        function (err) { got.noId = err.number; });
      try { c.createDocument(c.getSelfLink(), 5); } catch (e) { got.number = e.number; }
      c.createDocument(c.getSelfLink(), { id: "w", postId: "post-2" }, function (err) {
        got.otherPartition = err.number;
        getContext().getResponse().setBody(got);
      });
    }"#);
    let generated = out.body["generated"].as_str().unwrap();
    assert!(uuid::Uuid::parse_str(generated).is_ok(), "{generated}");
    assert_eq!(
        out.body,
        json!({"string": "s", "generated": generated, "untouched": true, "noId": 400, "number": 400, "otherPartition": 400})
    );
    assert_eq!(out.writes.len(), 2);
}

/// W queryDocuments: bad SQL reaches the callback as 400; pages follow `options.continuation`.
/// D1: queries "may not see changes to items made by the same script"; here they never return a
/// document the script deleted, and show the stored version of one it replaced.
#[test]
fn queries_page_and_never_return_deleted_documents() {
    let r = reader();
    let out = sp(
        r#"function main() {
          var c = __, got = {};
          c.queryDocuments(c.getSelfLink(), "SELEKT nothing", function (err) { got.bad = err.number; });
          c.deleteDocument(c.getAltLink() + "/docs/post-2");
          c.replaceDocument(c.getAltLink() + "/docs/post-3", { id: "post-3", postId: "post-1", title: "new" });
          c.createDocument(c.getSelfLink(), { id: "post-7", postId: "post-1", type: "post" });
          var spec = { query: "SELECT * FROM c WHERE c.type = @type", parameters: [{ name: "@type", value: "post" }] };
          var ids = [];
          (function page(continuation) {
            c.queryDocuments(c.getSelfLink(), spec, { pageSize: 4, continuation: continuation }, function (err, docs, options) {
              docs.forEach(function (d) { ids.push(d.id + ":" + d.title); });
              if (options.continuation) page(options.continuation);
              else { got.ids = ids; getContext().getResponse().setBody(got); }
            });
          })(undefined);
        }"#,
        vec![],
        r.clone(),
    )
    .unwrap();
    assert_eq!(
        out.body,
        json!({"bad": 400, "ids": ["post-1:Hello", "post-3:Hello", "post-4:Hello", "post-5:Hello", "post-6:Hello"]})
    );
    let pages: Vec<_> = r.queries.borrow().iter().skip(1).map(|(_, page)| (page.size, page.continuation.clone())).collect();
    assert_eq!(pages, [(4, None), (4, Some("4".to_owned()))]);
}

/// Context.abort (W DocDbContext): rolls back even from a promise callback, where an exception
/// is swallowed and the run commits.
#[test]
fn abort_rolls_back_from_a_promise() {
    let write = r#"__.createDocument(__.getSelfLink(), { id: "x", postId: "post-1" });"#;
    let swallowed = format!("function main() {{ {write} Promise.resolve().then(function () {{ throw new Error('lost'); }}); }}");
    assert_eq!(sp(&swallowed, vec![], reader()).unwrap().writes.len(), 1);
    let aborted = format!(
        "function main() {{ {write} Promise.resolve().then(function () {{
           try {{ getContext().abort(new Error('stop')); }} catch (e) {{}} }}); }}"
    );
    assert_eq!(thrown(sp(&aborted, vec![], reader())), "stop");
}

/// W DocDbMap: request and response have get/set per property and getValue/setValue by name;
/// a new name is Error(400), a read-only one Error(403); `__.request`/`__.response` are the same.
#[test]
fn request_and_response_are_property_maps() {
    let out = sp(
        r#"function main(a) {
          var req = getContext().getRequest(), res = getContext().getResponse(), got = {};
          got.args = req.getValue("Body");
          got.same = __.request === req && __.response === res;
          got.requestIsReadOnly = req.setBody === undefined && req.setValue === undefined;
          try { res.setValue("x-ms-new", 1); } catch (e) { got.newHeader = e.number; }
          res.setValue("Body", "a");
          res.appendBody("b");
          got.body = res.getBody();
          res.setBody(got);
        }"#,
        vec![json!({"k": 1})],
        reader(),
    )
    .unwrap();
    assert_eq!(out.body, json!({"args": [{"k": 1}], "same": true, "requestIsReadOnly": true, "newHeader": 400, "body": "ab"}));
}

/// D1, Response.setBody: a post-trigger sees the request's body and operation, reads the
/// written document, and its response body starts as the stored resource; setBody replaces it.
#[test]
fn post_trigger_sees_the_written_document() {
    let source = r#"function main() {
      var ctx = getContext(), written = ctx.getRequest().getBody();
      __.readDocument(__.getAltLink() + "/docs/" + written.id, function (err, doc) {
        var stored = ctx.getResponse().getBody();
        ctx.getResponse().setBody({ op: ctx.getRequest().getOperationType(), read: doc.title, etag: stored._etag === doc._etag,
                                    requestHasNoRid: written._rid === undefined, storedRid: typeof stored._rid });
      });
    }"#;
    let document = json!({"id": "post-9", "postId": "post-1", "title": "new"});
    let invocation = Invocation::PostTrigger { operation: TriggerOperation::Create, document };
    let out = run_with(source, invocation, reader(), &Limits::default()).result.unwrap();
    assert_eq!(out.body, json!({"op": "Create", "read": "new", "etag": true, "requestHasNoRid": true, "storedRid": "string"}));
    assert!(out.writes.is_empty());
}

/// The writes must fit one transactional batch (100 operations with the fence, 2 MB): past
/// that, the operation returns false and its callback is never called. Operations are not
/// counted otherwise (Cosmos DB bounds a script by time).
#[test]
fn writes_are_accepted_while_they_fit_one_batch() {
    let source = r#"function main(size) {
      var c = __, n = 0, called = false;
      while (c.createDocument(c.getSelfLink(), { id: "d" + n, postId: "post-1", pad: new Array(size).join("x") })) n++;
      var late = c.createDocument(c.getSelfLink(), { id: "late", postId: "post-1" }, function () { called = true; });
      var again = c.replaceDocument(c.getAltLink() + "/docs/d0", { id: "d0", postId: "post-1" });
      for (var reads = 0; reads < 2000 && c.readDocument(c.getAltLink() + "/docs/post-1"); reads++);
      getContext().getResponse().setBody({ n: n, late: late, again: again, called: called, reads: reads });
    }"#;
    let out = sp(source, vec![json!(1)], reader()).unwrap();
    assert_eq!(out.body, json!({"n": 99, "late": false, "again": true, "called": false, "reads": 2000}));
    let out = sp(source, vec![json!(100_000)], reader()).unwrap();
    assert_eq!(out.body["n"], 20, "20 documents of 100 kB fit in 2 MB");
    let document = json!({"id": "req", "postId": "post-1"});
    let trigger = Invocation::PostTrigger { operation: TriggerOperation::Create, document };
    let out = run_with(source, trigger, reader(), &Limits::default()).result.unwrap();
    assert_eq!(out.writes.len(), 98, "a trigger shares the batch with its request");
}

/// Etags: a document written in the run has its new etag (a check against it passes, against
/// the stored one fails); the net write is conditioned on the stored etag.
#[test]
fn etags_follow_the_runs_own_writes() {
    let out = ok(r#"function main() {
      var c = __, link = c.getAltLink() + "/docs/post-1";
      c.readDocument(link, function (err, old) {
        c.replaceDocument(link, { id: "post-1", postId: "post-1", v: 1 }, function (err, first) {
          c.replaceDocument(link, { id: "post-1", postId: "post-1", v: 2 }, { etag: old._etag }, function (err) {
            var stale = err.number;
            c.replaceDocument(link, { id: "post-1", postId: "post-1", v: 3 }, { etag: first._etag }, function (err) {
              getContext().getResponse().setBody([stale, err]);
            });
          });
        });
      });
    }"#);
    assert_eq!(out.body, json!([412, null]));
    assert_eq!(
        out.writes,
        [WriteOp::Replace {
            id: "post-1".into(),
            document: json!({"id": "post-1", "postId": "post-1", "v": 3}),
            if_match: etag("post-1")
        }]
    );
}

/// Each id's history collapses into one conditioned operation (an upsert reads the id first, so
/// it becomes a create of an absent id or a replace under the etag it had).
#[test]
fn net_effect_per_id() {
    let out = ok(r#"function main() {
      var c = __, link = function (id) { return c.getAltLink() + "/docs/" + id; };
      var doc = function (id, v) { return { id: id, postId: "post-1", v: v }; };
      c.createDocument(c.getSelfLink(), doc("a", 1));
      c.replaceDocument(link("a"), doc("a", 2));
      c.createDocument(c.getSelfLink(), doc("b", 1));
      c.deleteDocument(link("b"));
      c.upsertDocument(c.getSelfLink(), doc("u", 1));
      c.readDocument(link("post-3"));
      c.upsertDocument(c.getSelfLink(), doc("post-3", 1));
      c.deleteDocument(link("post-6"));
      c.createDocument(c.getSelfLink(), doc("post-6", 9));
      c.readDocument(link("absent"), function () { c.upsertDocument(c.getSelfLink(), doc("absent", 1)); });
    }"#);
    let d = |id: &str, v: i64| json!({"id": id, "postId": "post-1", "v": v});
    assert_eq!(
        out.writes,
        [
            WriteOp::Create { document: d("a", 2) },
            WriteOp::Create { document: d("u", 1) },
            WriteOp::Replace { id: "post-3".into(), document: d("post-3", 1), if_match: etag("post-3") },
            WriteOp::Replace { id: "post-6".into(), document: d("post-6", 9), if_match: etag("post-6") },
            WriteOp::Create { document: d("absent", 1) },
        ]
    );
}

/// The run reports what it read, and whether its writes' conditions cover it.
#[test]
fn the_read_set_comes_back() {
    let source = r#"function main() { __.readDocument(__.getAltLink() + "/docs/post-2", function (err, post) {
      if (post.title === "Hello") __.replaceDocument(post._self, post); }); }"#;
    let run = run_with(source, Invocation::Procedure(vec![]), reader(), &Limits::default());
    assert_eq!(run.reads.items, [("post-2".to_owned(), etag("post-2"))]);
    assert!(run.reads.covered_by(&run.result.unwrap().writes));
    let run = run_with(
        "function main() { __.queryDocuments(__.getSelfLink(), 'SELECT * FROM c'); }",
        Invocation::Procedure(vec![]),
        reader(),
        &Limits::default(),
    );
    assert!(run.reads.queried && !run.reads.covered_by(&[]));
}

/// D1: a script has 5 s; here a run past its budget fails, even inside a callback that catches.
#[test]
fn time_memory_stack_and_compile_limits() {
    let limits = Limits { max_duration: Duration::from_millis(50), ..Limits::default() };
    let start = Instant::now();
    let looping = r#"function main() { __.readDocument(__.getAltLink() + "/docs/post-1", function () {
      try { for (;;) {} } catch (e) {} getContext().getResponse().setBody("escaped"); }); }"#;
    let result = run_with(looping, Invocation::Procedure(vec![]), reader(), &limits).result;
    assert!(matches!(&result, Err(ScriptError::Failed(m)) if m.contains("did not finish")), "{result:?}");
    assert!(start.elapsed() < Duration::from_secs(2));

    let limits = Limits { max_memory_bytes: 4 * 1024 * 1024, ..Limits::default() };
    let hungry = r#"function main() { var a = []; for (;;) a.push(new Array(1000).fill("x" + a.length)); }"#;
    let result = run_with(hungry, Invocation::Procedure(vec![]), reader(), &limits).result;
    assert!(matches!(&result, Err(ScriptError::Failed(m)) if m.contains("out of memory")), "{result:?}");

    let message = thrown(sp("function main() { function f(n) { return f(n + 1) + 1; } f(0); }", vec![], reader()));
    assert!(message.contains("stack"), "{message}");
    // On a thread with tokio's default blocking stack (2 MiB), too.
    let deep = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(|| thrown(sp("function main() { function f(n) { return f(n + 1) + 1; } f(0); }", vec![], reader())))
        .unwrap();
    assert!(deep.join().unwrap().contains("stack"));

    assert!(matches!(sp("function main( {", vec![], reader()), Err(ScriptError::Failed(m)) if m.contains("compile")));
    assert!(matches!(sp("function other() {}", vec![], reader()), Err(ScriptError::Failed(m)) if m.contains("main")));
}

/// A store failure under the script (429, timeout) is not the script's to see: the run ends with it.
#[test]
fn store_failures_end_the_run() {
    let failing = MemReader { fail_with: Some(|| StoreError::Throttled { retry_after: None }), ..MemReader::default() };
    let source = r#"function main() { try { __.readDocument(__.getAltLink() + "/docs/post-2", function (err) {
      getContext().getResponse().setBody("saw " + err); }); } catch (e) {} }"#;
    assert!(matches!(sp(source, vec![], Rc::new(failing)), Err(ScriptError::Store(StoreError::Throttled { .. }))));
}

/// `cargo test --release --lib -- --ignored --nocapture per_run_cost`
#[test]
#[ignore]
fn per_run_cost() {
    let r = reader();
    let create = r#"function main() { __.readDocument(__.getAltLink() + "/docs/post-1",
        function (e, p) { p.commentCount++; __.replaceDocument(p._self, p); }); }"#;
    for (name, source) in
        [("trivial", "function main(x) { getContext().getResponse().setBody(x + 1); }"), ("read+replace", create)]
    {
        let start = Instant::now();
        for _ in 0..300 {
            sp(source, vec![json!(1)], r.clone()).unwrap();
        }
        println!("{name}: {:?} per run", start.elapsed() / 300);
    }
}
