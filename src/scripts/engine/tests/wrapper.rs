//! The collection's API as a script calls it, each test naming the behaviour of Cosmos DB it
//! holds the engine to.

use serde_json::json;

use super::*;

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
    assert_eq!(
        out.body,
        json!({"log": ["read true after", "number", true, "object"], "accepted": true})
    );
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
    assert_eq!(
        out.body,
        json!({"read": [404, true, 1, 1], "create": 409, "stale": 412, "del": [null, 2, "object"]})
    );
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
    assert_eq!(
        thrown(sp(r#"function main() { throw "plain " + 42; }"#, vec![], reader())),
        "plain 42"
    );
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
    assert_eq!(
        out.body,
        json!({"results": [400, 400, 400, 400, 400, 400], "self": SELF, "alt": ALT, "same": true})
    );
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
fn queries_never_return_deleted_documents() {
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
    let pages: Vec<_> = r
        .queries
        .borrow()
        .iter()
        .skip(1)
        .map(|(_, page)| (page.size, page.continuation.clone()))
        .collect();
    assert_eq!(pages, [(4, None), (4, Some("4".to_owned()))]);
}

/// Context.abort (W DocDbContext): rolls back even from a promise callback, where an exception
/// is swallowed and the run commits.
#[test]
fn abort_rolls_back_from_a_promise() {
    let write = r#"__.createDocument(__.getSelfLink(), { id: "x", postId: "post-1" });"#;
    let swallowed = format!(
        "function main() {{ {write} Promise.resolve().then(function () {{ throw new Error('lost'); }}); }}"
    );
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
    assert_eq!(
        out.body,
        json!({"args": [{"k": 1}], "same": true, "requestIsReadOnly": true, "newHeader": 400, "body": "ab"})
    );
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
    assert_eq!(
        out.body,
        json!({"op": "Create", "read": "new", "etag": true, "requestHasNoRid": true, "storedRid": "string"})
    );
    assert!(out.writes.is_empty());
}
