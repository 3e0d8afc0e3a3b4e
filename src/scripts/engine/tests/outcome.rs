//! What a run leaves: writes that fit one batch, the etags of its own writes, one conditioned
//! operation per id, the read set, and the limits of time, memory, stack and compilation.

use std::rc::Rc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::scripts::ScriptFailure;

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
    assert_eq!(
        out.body,
        json!({"n": 99, "late": false, "again": true, "called": false, "reads": 2000})
    );
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
            WriteOp::Replace {
                id: "post-3".into(),
                document: d("post-3", 1),
                if_match: etag("post-3")
            },
            WriteOp::Replace {
                id: "post-6".into(),
                document: d("post-6", 9),
                if_match: etag("post-6")
            },
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
    assert!(
        matches!(&result, Err(ScriptError::Failed(ScriptFailure::DidNotFinish { .. }))),
        "{result:?}"
    );
    assert!(start.elapsed() < Duration::from_secs(2));

    let limits = Limits { max_memory_bytes: 4 * 1024 * 1024, ..Limits::default() };
    let hungry =
        r#"function main() { var a = []; for (;;) a.push(new Array(1000).fill("x" + a.length)); }"#;
    let result = run_with(hungry, Invocation::Procedure(vec![]), reader(), &limits).result;
    assert!(
        matches!(&result, Err(ScriptError::Failed(ScriptFailure::OutOfMemory { .. }))),
        "{result:?}"
    );

    let message = thrown(sp(
        "function main() { function f(n) { return f(n + 1) + 1; } f(0); }",
        vec![],
        reader(),
    ));
    assert!(message.contains("stack"), "{message}");
    // On a thread with tokio's default blocking stack (2 MiB), too.
    let deep = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(|| {
            thrown(sp(
                "function main() { function f(n) { return f(n + 1) + 1; } f(0); }",
                vec![],
                reader(),
            ))
        })
        .unwrap();
    assert!(deep.join().unwrap().contains("stack"));

    assert!(matches!(
        sp("function main( {", vec![], reader()),
        Err(ScriptError::Failed(ScriptFailure::DoesNotCompile { .. }))
    ));
    assert!(
        matches!(sp("function other() {}", vec![], reader()), Err(ScriptError::Failed(ScriptFailure::NoFunction { function })) if function == "main")
    );
}

/// A store failure under the script (429, timeout) is not the script's to see: the run ends with it.
#[test]
fn store_failures_end_the_run() {
    let failing = MemReader {
        fail_with: Some(|| StoreError::Throttled { retry_after: None }),
        ..MemReader::default()
    };
    let source = r#"function main() { try { __.readDocument(__.getAltLink() + "/docs/post-2", function (err) {
      getContext().getResponse().setBody("saw " + err); }); } catch (e) {} }"#;
    assert!(matches!(
        sp(source, vec![], Rc::new(failing)),
        Err(ScriptError::Store(StoreError::Throttled { .. }))
    ));
}

/// `cargo test --release --lib -- --ignored --nocapture per_run_cost`
#[test]
#[ignore]
fn per_run_cost() {
    let r = reader();
    let create = r#"function main() { __.readDocument(__.getAltLink() + "/docs/post-1",
        function (e, p) { p.commentCount++; __.replaceDocument(p._self, p); }); }"#;
    for (name, source) in [
        ("trivial", "function main(x) { getContext().getResponse().setBody(x + 1); }"),
        ("read+replace", create),
    ] {
        let start = Instant::now();
        for _ in 0..300 {
            sp(source, vec![json!(1)], r.clone()).unwrap();
        }
        println!("{name}: {:?} per run", start.elapsed() / 300);
    }
}
