//! A write sent again with its `Idempotency-Key`, or whose answer was lost, is made once; a
//! key is its caller's and one request's.

use super::*;

/// Sends a write twice with one `Idempotency-Key`, checks that the second answer is the
/// first's (the same status, the same item), and answers it.
async fn twice(
    writer: &Writer,
    method: Method,
    path: &str,
    body: Option<Value>,
    key: &str,
) -> (u16, Value) {
    let first = writer.send(method.clone(), path, body.clone(), Some(key)).await;
    let second = writer.send(method.clone(), path, body, Some(key)).await;
    assert_eq!(first, second, "{method} {path}: the second answer is the first's");
    first
}

/// A blog served on `dir` with alice and her post, each written twice with a key (`k1`, `k2`):
/// the base URL, what stops the blog, alice, and the post's id.
async fn alices_post(dir: &std::path::Path) -> (String, Stop, Writer, String) {
    let (api, stop) = serve(dir, SdkFaults::default()).await;
    let alice = Writer::new(&api, "alice");
    assert_eq!(
        twice(&alice, Method::POST, "/users", Some(json!({"username": "alice"})), "k1").await.0,
        201
    );
    let (status, post) = twice(
        &alice,
        Method::POST,
        "/posts",
        Some(json!({"userId": "alice", "title": "t", "content": "c"})),
        "k2",
    )
    .await;
    assert_eq!(status, 201);
    let post = post["id"].as_str().unwrap().to_owned();
    (api, stop, alice, post)
}

/// Every write (C1–C7) sent twice with one `Idempotency-Key` is made once, and the
/// second answer is the first's (the same status, the same item).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_sent_again_with_its_key_is_made_once() {
    let dir = tempfile::tempdir().unwrap();
    let (_api, _stop, alice, post) = alices_post(dir.path()).await;
    let comment = json!({"userId": "alice", "content": "once"});
    let (status, first) =
        twice(&alice, Method::POST, &format!("/posts/{post}/comments"), Some(comment), "k3").await;
    assert_eq!(status, 201);
    let (status, _) = twice(
        &alice,
        Method::POST,
        &format!("/posts/{post}/likes"),
        Some(json!({"userId": "alice"})),
        "k4",
    )
    .await;
    assert_eq!(status, 201);
    let read = alice.get(&format!("/posts/{post}")).await;
    assert_eq!(
        (read["commentCount"].as_u64(), read["likeCount"].as_u64()),
        (Some(1), Some(1)),
        "{read}"
    );
    assert_eq!(
        alice.get(&format!("/posts/{post}/comments")).await["items"].as_array().unwrap().len(),
        1
    );

    let (status, edited) = twice(
        &alice,
        Method::PUT,
        &format!("/posts/{post}"),
        Some(json!({"title": "t2", "content": "c2"})),
        "k5",
    )
    .await;
    assert_eq!((status, edited["title"].as_str()), (200, Some("t2")));
    assert_eq!(
        twice(&alice, Method::PUT, "/users/alice", Some(json!({"username": "Alice"})), "k6")
            .await
            .0,
        200
    );
    assert_eq!(
        twice(&alice, Method::DELETE, &format!("/posts/{post}/likes/alice"), None, "k7").await.0,
        204
    );
    let comment_id = first["id"].as_str().unwrap();
    assert_eq!(
        twice(&alice, Method::DELETE, &format!("/posts/{post}/comments/{comment_id}"), None, "k8")
            .await
            .0,
        204
    );
    let read = alice.get(&format!("/posts/{post}")).await;
    assert_eq!(
        (read["commentCount"].as_u64(), read["likeCount"].as_u64()),
        (Some(0), Some(0)),
        "each taken back once: {read}"
    );
    assert_eq!(twice(&alice, Method::DELETE, &format!("/posts/{post}"), None, "k9").await.0, 204);
}

/// A key sent again with another request is refused (422, saying so) and writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_sent_with_another_request_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (_api, _stop, alice, post) = alices_post(dir.path()).await;
    let comment = json!({"userId": "alice", "content": "once"});
    assert_eq!(
        twice(&alice, Method::POST, &format!("/posts/{post}/comments"), Some(comment), "k3")
            .await
            .0,
        201
    );
    let other = json!({"userId": "alice", "content": "something else"});
    let (status, problem) =
        alice.send(Method::POST, &format!("/posts/{post}/comments"), Some(other), Some("k3")).await;
    assert_eq!(status, 422, "{problem}");
    assert!(
        problem["detail"].as_str().unwrap().contains("already used for another request"),
        "{problem}"
    );
    assert_eq!(alice.get(&format!("/posts/{post}")).await["commentCount"], 1);
}

/// The same key from another caller is another key: its write is made, as its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_key_of_two_callers_is_two_keys() {
    let dir = tempfile::tempdir().unwrap();
    let (api, _stop, alice, post) = alices_post(dir.path()).await;
    let comment = json!({"userId": "alice", "content": "once"});
    let (_, first) =
        twice(&alice, Method::POST, &format!("/posts/{post}/comments"), Some(comment), "k3").await;
    let bob = Writer::new(&api, "bob");
    assert_eq!(
        bob.send(Method::POST, "/users", Some(json!({"username": "bob"})), Some("k1")).await.0,
        201
    );
    let (status, bobs) = bob
        .send(
            Method::POST,
            &format!("/posts/{post}/comments"),
            Some(json!({"userId": "bob", "content": "once"})),
            Some("k3"),
        )
        .await;
    assert_eq!(status, 201);
    assert_ne!(bobs["id"], first["id"]);
    let read = alice.get(&format!("/posts/{post}")).await;
    assert_eq!(read["commentCount"], 2, "bob's comment is made: {read}");
}

/// A key that is empty, not ASCII, or longer than 255 characters is refused, 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_key_is_400() {
    let dir = tempfile::tempdir().unwrap();
    let (api, _stop, _alice, _post) = alices_post(dir.path()).await;
    for bad in ["", "caf\u{e9}", &"k".repeat(256)] {
        let mut request =
            reqwest::Client::new().post(format!("{api}/posts")).header("x-dev-user", "alice");
        request = request.header(
            "idempotency-key",
            reqwest::header::HeaderValue::from_bytes(bad.as_bytes()).unwrap(),
        );
        let answer = request
            .json(&json!({"userId": "alice", "title": "t", "content": "c"}))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 400, "{bad:?}");
    }
}

/// Rules that lose the answer of the next write (any create, replace, upsert, delete or batch)
/// after Cosmos DB applied it (`ResponseTimeoutAfterService`): one shared switch and count, so
/// that [`LostAnswer::arm`] loses exactly one answer, wherever the write goes.
struct LostAnswer {
    rules: Vec<Arc<FaultInjectionRule>>,
    enabled: Arc<std::sync::atomic::AtomicBool>,
    hits: Arc<std::sync::atomic::AtomicU32>,
}

impl LostAnswer {
    fn new() -> LostAnswer {
        let enabled = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let hits = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let writes = [
            FaultOperationType::CreateItem,
            FaultOperationType::ReplaceItem,
            FaultOperationType::UpsertItem,
            FaultOperationType::DeleteItem,
            FaultOperationType::BatchItem,
        ];
        let rules = writes
            .into_iter()
            .map(|operation| {
                let result = FaultInjectionResultBuilder::new()
                    .with_error(FaultInjectionErrorType::ResponseTimeoutAfterService)
                    .build();
                let condition =
                    FaultInjectionConditionBuilder::new().with_operation_type(operation).build();
                Arc::new(
                    FaultInjectionRuleBuilder::new(format!("lost answer of {operation:?}"), result)
                        .with_condition(condition)
                        .with_hit_limit(1)
                        .with_shared_state(enabled.clone(), hits.clone())
                        .build(),
                )
            })
            .collect();
        LostAnswer { rules, enabled, hits }
    }

    /// The next write's answer is lost.
    fn arm(&self) {
        self.hits.store(0, std::sync::atomic::Ordering::SeqCst);
        self.enabled.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether an answer was lost since [`LostAnswer::arm`]; disarms.
    fn disarm(&self) -> bool {
        self.enabled.store(false, std::sync::atomic::Ordering::SeqCst);
        self.hits.load(std::sync::atomic::Ordering::SeqCst) == 1
    }
}

/// The answer of every write (C1–C7) lost after Cosmos DB committed it, and the SDK
/// sending the write again by itself (it retries writes after an unknown outcome,
/// `azure_data_cosmos_driver` `CosmosOperation::allows_ambiguous_outcome_retry`): with a key,
/// every request is answered as done (docs/api.md's table, "When Cosmos DB fails"). Nothing is
/// written twice: the counters equal what is listed, and so they are after a restart (the
/// embedded store commits what the emulator applied though its answer was lost).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_key_a_write_whose_answer_was_lost_is_answered_as_done() {
    let dir = tempfile::tempdir().unwrap();
    let (statuses, kept, stop) = lose_every_answer(dir.path(), "alice", true).await;
    assert_eq!(
        statuses,
        lost_answer_table([201, 201, 201, 201, 200, 200, 204, 204, 204]),
        "with a key: as done"
    );
    stop.now().await;
    once_after_a_restart(dir.path(), "alice", &kept).await;
}

/// As above without a key: the writes whose retry cannot tell its own earlier try from
/// another's are answered as repeats are, a second like (409), an unlike or deletion of what is
/// gone (404); still nothing is written twice, before or after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_key_a_write_whose_answer_was_lost_is_answered_as_a_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let (statuses, kept, stop) = lose_every_answer(dir.path(), "bob", false).await;
    assert_eq!(
        statuses,
        lost_answer_table([201, 201, 201, 409, 200, 200, 404, 404, 404]),
        "without a key"
    );
    stop.now().await;
    once_after_a_restart(dir.path(), "bob", &kept).await;
}

/// The writes C1–C7 in the order [`lose_every_answer`] sends them, with `statuses`.
fn lost_answer_table(statuses: [u16; 9]) -> Vec<(&'static str, u16)> {
    ["C1", "C2", "C3", "C4", "C2 edit", "C1 edit", "C5", "C6", "C7"]
        .into_iter()
        .zip(statuses)
        .collect()
}

/// Serves a blog on `dir` and sends every write as `user` (with keys when `keyed`), each with its
/// answer lost: the statuses answered (as [`lost_answer_table`] lists them), a post left for a
/// restart (a comment on it also lost its answer), and what stops the blog. The counters are
/// checked against the lists after the writes and after the deletes.
async fn lose_every_answer(
    dir: &std::path::Path,
    user: &'static str,
    keyed: bool,
) -> (Vec<(&'static str, u16)>, String, Stop) {
    let lost = LostAnswer::new();
    // No change-feed processors: the one answer lost is the request's own write's, never a
    // copy's written meanwhile.
    let config = blog::Config { change_feed: blog::ChangeFeedMode::Host, ..embedded_config(dir) };
    let (api, stop, _) =
        serve_config(config, SdkFaults { rules: lost.rules.clone(), ..SdkFaults::default() }).await;
    let reader = Writer::new(&api, user);
    let key = |name: &str| keyed.then(|| format!("{name}-{keyed}"));
    let writer = Writer::new(&api, user);
    let lose = async |step: &'static str,
                      method: Method,
                      path: String,
                      body: Option<Value>,
                      key: Option<String>| {
        lost.arm();
        let answer = writer.send(method, &path, body, key.as_deref()).await;
        assert!(lost.disarm(), "{step}: an answer was lost");
        (step, answer)
    };
    let mut answers = vec![
        lose("C1", Method::POST, "/users".into(), Some(json!({"username": user})), key("c1")).await,
    ];
    let body = json!({"userId": user, "title": format!("by {user}"), "content": "c"});
    answers.push(lose("C2", Method::POST, "/posts".into(), Some(body), key("c2")).await);
    let post = answers[1].1.1["id"].as_str().expect("the post was created").to_owned();
    let comment = json!({"userId": user, "content": "once"});
    answers.push(
        lose("C3", Method::POST, format!("/posts/{post}/comments"), Some(comment), key("c3")).await,
    );
    let comment = answers[2].1.1["id"].as_str().expect("the comment was created").to_owned();
    answers.push(
        lose(
            "C4",
            Method::POST,
            format!("/posts/{post}/likes"),
            Some(json!({"userId": user})),
            key("c4"),
        )
        .await,
    );
    let read = reader.get(&format!("/posts/{post}")).await;
    assert_eq!(
        (read["commentCount"].as_u64(), read["likeCount"].as_u64()),
        (Some(1), Some(1)),
        "keyed {keyed}: {read}"
    );
    assert_eq!(
        reader.get(&format!("/posts/{post}/comments")).await["items"].as_array().unwrap().len(),
        1,
        "keyed {keyed}"
    );
    let edit = json!({"title": "t2", "content": "c2"});
    answers
        .push(lose("C2 edit", Method::PUT, format!("/posts/{post}"), Some(edit), key("c2e")).await);
    let rename = json!({"username": format!("{user}2")});
    answers.push(
        lose("C1 edit", Method::PUT, format!("/users/{user}"), Some(rename), key("c1e")).await,
    );
    answers.push(
        lose("C5", Method::DELETE, format!("/posts/{post}/likes/{user}"), None, key("c5")).await,
    );
    answers.push(
        lose("C6", Method::DELETE, format!("/posts/{post}/comments/{comment}"), None, key("c6"))
            .await,
    );
    let read = reader.get(&format!("/posts/{post}")).await;
    assert_eq!(
        (read["commentCount"].as_u64(), read["likeCount"].as_u64()),
        (Some(0), Some(0)),
        "keyed {keyed}: {read}"
    );
    // A post left for the restart, and one deleted.
    let body = json!({"userId": user, "title": "kept", "content": "c"});
    let (status, kept) = writer.send(Method::POST, "/posts", Some(body), None).await;
    assert_eq!(status, 201);
    let kept = kept["id"].as_str().unwrap().to_owned();
    let comment = json!({"userId": user, "content": "kept"});
    let (_, (status, _)) =
        lose("C3", Method::POST, format!("/posts/{kept}/comments"), Some(comment), key("c3k"))
            .await;
    assert_eq!(status, 201);
    answers.push(lose("C7", Method::DELETE, format!("/posts/{post}"), None, key("c7")).await);
    assert_eq!(
        reader.client.get(format!("{api}/posts/{post}")).send().await.unwrap().status(),
        404,
        "keyed {keyed}"
    );
    (answers.into_iter().map(|(step, (status, _))| (step, status)).collect(), kept, stop)
}

/// Serves `dir` again: `user` is renamed, and the comment whose answer was lost is on the
/// `kept` post, counted once.
async fn once_after_a_restart(dir: &std::path::Path, user: &'static str, kept: &str) {
    let (api, _stop) = serve(dir, SdkFaults::default()).await;
    let reader = Writer::new(&api, user);
    assert_eq!(
        reader.get(&format!("/users/{user}")).await["username"],
        format!("{user}2"),
        "after a restart"
    );
    let read = reader.get(&format!("/posts/{kept}")).await;
    assert_eq!(read["commentCount"], 1, "after a restart: {read}");
    assert_eq!(
        reader.get(&format!("/posts/{kept}/comments")).await["items"].as_array().unwrap().len(),
        1
    );
}
