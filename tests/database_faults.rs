//! Cosmos DB's own faults, injected by the SDK's fault injection (`azure_data_cosmos`, feature
//! `fault_injection`) between the SDK's client and its in-memory emulator, below the SDK's
//! retries, on the path the deployed build takes: the blog started as `main` starts it
//! (`Blog::start` on the state `connect` builds, served by `Blog::serve`).

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use blog::Blog;
use blog::test_support::sdk_faults::{
    CustomResponseBuilder, FaultInjectionConditionBuilder, FaultInjectionErrorType,
    FaultInjectionResultBuilder, FaultInjectionRuleBuilder, FaultOperationType,
};
use blog::test_support::{FaultInjectionRule, SdkFaults, embedded_config, store_with_sdk_faults};
use common::forms::Browser;
use serde_json::{Value, json};

/// What stops a served blog: dropped, it asks the blog to stop; [`Stop::now`] also waits
/// until it has (its requests finished, its processors stopped, its store closed), so that a
/// test can open the same data directory again.
struct Stop {
    asked: Option<tokio::sync::oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<()>>,
}

impl Stop {
    async fn now(mut self) {
        drop(self.asked.take());
        self.served.take().expect("not yet awaited").await.unwrap();
    }
}

impl Drop for Stop {
    fn drop(&mut self) {
        drop(self.asked.take());
    }
}

/// A blog whose SDK reaches its store through `faults`, served; its base URL, what stops it,
/// and its state (to read the dead letters).
async fn serve_with_state(
    dir: &std::path::Path,
    faults: SdkFaults,
) -> (String, Stop, blog::AppState) {
    serve_config(embedded_config(dir), faults).await
}

/// A blog on `config` whose SDK reaches its store through `faults`, served as `main` serves it.
async fn serve_config(config: blog::Config, faults: SdkFaults) -> (String, Stop, blog::AppState) {
    let store = store_with_sdk_faults(&config, faults).await.unwrap();
    let blog = Blog::start(&config, blog::state_on(&config, store).await.unwrap());
    let state = blog.state.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/api", listener.local_addr().unwrap());
    let (asked, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(async move {
        blog.serve(listener, async move { drop(stopped.await) }).await.unwrap()
    });
    (base, Stop { asked: Some(asked), served: Some(served) }, state)
}

/// [`serve_with_state`], without the state.
async fn serve(dir: &std::path::Path, faults: SdkFaults) -> (String, Stop) {
    let (base, stop, _) = serve_with_state(dir, faults).await;
    (base, stop)
}

/// `url` with `query`, encoded.
fn with(url: &str, query: &[(&str, &str)]) -> reqwest::Url {
    reqwest::Url::parse_with_params(url, query).unwrap()
}

/// A rule that answers every query of `posts` with `error`, off until enabled.
fn failing_queries_of_posts(error: FaultInjectionErrorType) -> Arc<FaultInjectionRule> {
    let result = FaultInjectionResultBuilder::new().with_error(error).build();
    let condition = FaultInjectionConditionBuilder::new()
        .with_operation_type(FaultOperationType::QueryItem)
        .with_container_id("posts")
        .build();
    let rule = Arc::new(
        FaultInjectionRuleBuilder::new(format!("{error:?} on posts queries"), result)
            .with_condition(condition)
            .build(),
    );
    rule.disable();
    rule
}

/// A list paged with a continuation token while the database fails is a
/// passing failure (503 with `Retry-After`, in our words), never "your token is bad" and never
/// the SDK's text; the same token works once the database answers again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_asked_for_while_the_database_fails_is_503_with_retry_after_and_no_sdk_text() {
    let unavailable = failing_queries_of_posts(FaultInjectionErrorType::ServiceUnavailable);
    let timing_out = failing_queries_of_posts(FaultInjectionErrorType::Timeout);
    let dir = tempfile::tempdir().unwrap();
    let faults =
        SdkFaults { rules: vec![unavailable.clone(), timing_out.clone()], ..SdkFaults::default() };
    let (api, _stop) = serve(dir.path(), faults).await;
    let client = reqwest::Client::new();
    let write = |path: String, body: Value| {
        client.post(format!("{api}{path}")).header("x-dev-user", "alice").json(&body).send()
    };
    assert_eq!(write("/users".into(), json!({"username": "alice"})).await.unwrap().status(), 201);
    let post: Value =
        write("/posts".into(), json!({"userId": "alice", "title": "t", "content": "c"}))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    let post = post["id"].as_str().unwrap().to_owned();
    for n in 0..3 {
        let comment = json!({"userId": "alice", "content": format!("comment {n}")});
        assert_eq!(write(format!("/posts/{post}/comments"), comment).await.unwrap().status(), 201);
    }
    let comments = format!("{api}/posts/{post}/comments");
    let first: Value =
        client.get(with(&comments, &[("limit", "1")])).send().await.unwrap().json().await.unwrap();
    let token = first["continuationToken"].as_str().expect("a second page").to_owned();

    for rule in [&unavailable, &timing_out] {
        rule.enable();
        for query in
            [vec![("limit", "1"), ("continuationToken", token.as_str())], vec![("limit", "1")]]
        {
            // Signed in, so the read goes to the database, not to the page this instance keeps
            // for readers who are not.
            let answer = client
                .get(with(&comments, &query))
                .header("x-dev-user", "alice")
                .send()
                .await
                .unwrap();
            assert_eq!(answer.status(), 503, "{} with {query:?}", rule.id());
            assert_eq!(answer.headers()["content-type"], "application/problem+json");
            assert!(answer.headers().contains_key("retry-after"), "says when to come back");
            let problem: Value = answer.json().await.unwrap();
            let detail = problem["detail"].as_str().unwrap();
            for internal in [
                "continuation",
                "token",
                "Cosmos",
                "SDK",
                "x-ms",
                "ServiceUnavailable",
                "status",
                "Timeout",
            ] {
                assert!(!detail.contains(internal), "{} says {internal:?}: {detail}", rule.id());
            }
        }
        rule.disable();
    }
    let second: Value = client
        .get(with(&comments, &[("limit", "1"), ("continuationToken", token.as_str())]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        second["items"][0]["content"], "comment 1",
        "the token works once the database answers: {second}"
    );
}

/// Throttling answered, not hidden: once the SDK's own retries are spent, a read that
/// Cosmos DB throttles is 503 with `Retry-After` as long as Cosmos DB asked to wait
/// (`x-ms-retry-after-ms`, rounded up to whole seconds), and a `detail` that says so. The 429
/// is built as the service sends it: status 429 with the header (the SDK's own injected 429
/// carries none, `fault_injection/http_client.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_read_says_when_to_come_back_as_cosmos_db_asked() {
    let throttled = CustomResponseBuilder::new(azure_core::http::StatusCode::TooManyRequests)
        .with_header("x-ms-retry-after-ms", "2500")
        .build();
    let condition = FaultInjectionConditionBuilder::new()
        .with_operation_type(FaultOperationType::ReadItem)
        .with_container_id("posts")
        .build();
    let result = FaultInjectionResultBuilder::new().with_custom_response(throttled).build();
    let rule = Arc::new(
        FaultInjectionRuleBuilder::new("429 on reads of posts", result)
            .with_condition(condition)
            .build(),
    );
    rule.disable();
    let dir = tempfile::tempdir().unwrap();
    let (api, _stop) =
        serve(dir.path(), SdkFaults { rules: vec![rule.clone()], throttle_retries: Some(0) }).await;
    let client = reqwest::Client::new();
    let write = |path: &str, body: Value| {
        client.post(format!("{api}{path}")).header("x-dev-user", "alice").json(&body).send()
    };
    assert_eq!(write("/users", json!({"username": "alice"})).await.unwrap().status(), 201);
    let post: Value = write("/posts", json!({"userId": "alice", "title": "t", "content": "c"}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let post = format!("{api}/posts/{}", post["id"].as_str().unwrap());

    rule.enable();
    let answer = client.get(&post).send().await.unwrap();
    assert_eq!(answer.status(), 503);
    assert_eq!(answer.headers()["retry-after"], "3", "2,500 ms, in whole seconds");
    let problem: Value = answer.json().await.unwrap();
    assert!(
        problem["detail"].as_str().unwrap().contains("busy")
            && problem["detail"].as_str().unwrap().contains("3 s"),
        "{problem}"
    );
    rule.disable();
    assert_eq!(
        client.get(&post).send().await.unwrap().status(),
        200,
        "served again once the database is"
    );
}

/// The change-feed functions treat Cosmos DB's passing failures as passing: while
/// every call to `feed` answers 503 (after the SDK's retries), `PostsChangeFeed` cannot write the
/// post's copy there, more times than a change that fails alone is allowed before it is set
/// aside; the processors deliver it again later, nothing goes to the dead letters, and once the
/// database answers the copy is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_change_feed_functions_wait_out_an_unavailable_database_and_set_nothing_aside() {
    let failing = |container: &str, error| {
        let condition = FaultInjectionConditionBuilder::new().with_container_id(container).build();
        let result = FaultInjectionResultBuilder::new().with_error(error).build();
        let rule = Arc::new(
            FaultInjectionRuleBuilder::new(format!("{error:?} on {container}"), result)
                .with_condition(condition)
                .build(),
        );
        rule.disable();
        rule
    };
    let feed_unavailable = failing("feed", FaultInjectionErrorType::ServiceUnavailable);
    let dir = tempfile::tempdir().unwrap();
    let faults = SdkFaults { rules: vec![feed_unavailable.clone()], throttle_retries: Some(0) };
    let (api, _stop, state) = serve_with_state(dir.path(), faults).await;
    let client = reqwest::Client::new();
    let write = |path: &str, body: Value| {
        client.post(format!("{api}{path}")).header("x-dev-user", "alice").json(&body).send()
    };
    assert_eq!(write("/users", json!({"username": "alice"})).await.unwrap().status(), 201);

    feed_unavailable.enable();
    // How many requests the SDK sends for one call that meets 503 (its own retries): one read of
    // the feed, answered 503, counts them.
    let before = feed_unavailable.hit_count();
    assert_eq!(client.get(format!("{api}/feed")).send().await.unwrap().status(), 503);
    let tries_per_call = feed_unavailable.hit_count() - before;
    assert!(tries_per_call >= 1, "the read reached the database");
    let post: Value =
        write("/posts", json!({"userId": "alice", "title": "held back", "content": "c"}))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    let post = post["id"].as_str().unwrap().to_owned();
    // The user's own list gets its copy (`users` answers); the feed's copy keeps failing, past
    // the deliveries after which a change that keeps failing alone is set aside as a dead letter.
    // Deliveries, each one call to `feed` that fails: more than a change failing alone may have
    // before it is set aside (which would end the deliveries, and this wait with them).
    let started = std::time::Instant::now();
    let past_isolation =
        before + tries_per_call * (1 + blog::testing::changefeed::ISOLATE_AFTER + 2);
    while feed_unavailable.hit_count() < past_isolation {
        assert!(
            started.elapsed().as_secs() < 60,
            "PostsChangeFeed stopped delivering the change: {} of {past_isolation} tries",
            feed_unavailable.hit_count()
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    feed_unavailable.disable();
    let started = std::time::Instant::now();
    loop {
        let feed: Value =
            client.get(format!("{api}/feed")).send().await.unwrap().json().await.unwrap();
        if feed["items"][0]["id"] == post.as_str() {
            break;
        }
        assert!(started.elapsed().as_secs() < 30, "the feed's copy never arrived: {feed}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let letters = blog::testing::changefeed::dead_letters::list(&state.store).await.unwrap();
    assert!(letters.is_empty(), "a passing failure is not a dead letter: {letters:?}");
}

/// A caller of the JSON API signed in as `user`, sending `Idempotency-Key` when given one.
struct Writer {
    api: String,
    user: &'static str,
    client: reqwest::Client,
}

impl Writer {
    fn new(api: &str, user: &'static str) -> Writer {
        Writer { api: api.to_owned(), user, client: reqwest::Client::new() }
    }

    /// Sends a write; its status and body (`null` for none).
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        key: Option<&str>,
    ) -> (u16, Value) {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.api))
            .header("x-dev-user", self.user);
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer = request.send().await.unwrap();
        let status = answer.status().as_u16();
        (status, answer.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> Value {
        let answer = self.client.get(format!("{}{path}", self.api)).send().await.unwrap();
        assert_eq!(answer.status(), 200, "GET {path}");
        answer.json().await.unwrap()
    }
}

use reqwest::Method;

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
async fn a_write_sent_again_with_its_key_is_made_once_and_answered_as_the_first_time() {
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
async fn a_key_sent_with_another_request_is_422_and_writes_nothing() {
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
async fn with_a_key_a_write_whose_answer_was_lost_is_answered_as_done_and_made_once() {
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
async fn without_a_key_a_write_whose_answer_was_lost_is_answered_as_a_repeat_and_made_once() {
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

/// Sends a keyed write until it is answered as done, as a client following docs/api.md does:
/// 503 (with `Retry-After`) and 409 "in progress" are sent again with the same key; any other
/// answer is final. Every answer is checked to be one docs/api.md's table lists.
async fn until_done(
    writer: &Writer,
    method: Method,
    path: &str,
    body: Option<Value>,
    key: &str,
) -> (u16, Value) {
    for _ in 0..200 {
        let (status, answer) = writer.send(method.clone(), path, body.clone(), Some(key)).await;
        match status {
            503 => assert!(answer["detail"].is_string(), "{method} {path}: {answer}"),
            409 if answer["detail"]
                .as_str()
                .is_some_and(|detail| detail.contains("being made right now")) => {}
            200 | 201 | 204 => return (status, answer),
            other => {
                panic!("{method} {path} answered {other}, which the table does not list: {answer}")
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("{method} {path} was never done");
}

/// About 30 % of all operations fail, of every kind the SDK injects (503, 429, 449,
/// 408, 410/1002, 500, a connection failure, a response timeout, and the lost answer of an applied
/// write), under the SDK's own retries, while three writers create their users and posts,
/// comment, like, unlike, rename, and write, edit and delete a second post, all with keys, and
/// read every list. Every answer is one docs/api.md lists (never a 500); at the end, with the
/// faults off, every comment answered 201 is there once, nothing deleted is, each post's
/// counters equal what is listed, both change-feed functions have caught up with nothing set
/// aside, and all of it is so again after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_thirty_percent_of_operations_failing_every_acknowledged_write_is_there_once() {
    let rules = every_kind_of_fault_at_thirty_percent();
    let dir = tempfile::tempdir().unwrap();
    let (api, stop, state) =
        serve_with_state(dir.path(), SdkFaults { rules: rules.clone(), ..SdkFaults::default() })
            .await;
    let writers = ["ana", "ben", "cy"].map(|user| Writer::new(&api, user));
    let turns = take_turns(rules.clone());

    // The users and their posts are written under the faults too (C1, C2).
    let mut posts = Vec::new();
    for writer in &writers {
        let user = json!({"username": writer.user});
        assert_eq!(
            until_done(writer, Method::POST, "/users", Some(user), &format!("{}-c1", writer.user))
                .await
                .0,
            201
        );
        let body = json!({"userId": writer.user, "title": "t", "content": "c"});
        let (_, post) =
            until_done(writer, Method::POST, "/posts", Some(body), &format!("{}-c2", writer.user))
                .await;
        posts.push(post["id"].as_str().unwrap().to_owned());
    }
    let acknowledged = Acknowledged::default();
    let work = writers
        .iter()
        .enumerate()
        .map(|(n, writer)| rounds_under_faults(writer, n, &posts, &acknowledged));
    futures::future::join_all(work).await;
    turns.abort();
    let _ = turns.await;
    rules.iter().for_each(|rule| rule.disable());
    let failed: Vec<(String, u32)> =
        rules.iter().map(|rule| (rule.id().to_owned(), rule.hit_count())).collect();
    assert!(
        failed.iter().all(|(_, hits)| *hits > 0),
        "every kind of fault was injected: {failed:?}"
    );
    eprintln!("faults injected: {failed:?}");

    let reader = &writers[0];
    let (comments, deleted_posts) = (
        acknowledged.comments.into_inner().unwrap(),
        acknowledged.deleted_posts.into_inner().unwrap(),
    );
    for post in &deleted_posts {
        assert_eq!(
            reader
                .client
                .get(format!("{}/posts/{post}", reader.api))
                .send()
                .await
                .unwrap()
                .status(),
            404,
            "{post}"
        );
    }
    for post in &posts {
        counters_match_lists_and_each_acknowledged_comment_is_there_once(reader, post, &comments)
            .await;
    }
    // Both change-feed functions caught up through the faults, setting nothing aside.
    until_copies_caught_up(reader, &writers, &posts).await;
    let letters = blog::testing::changefeed::dead_letters::list(&state.store).await.unwrap();
    assert!(
        letters.is_empty(),
        "the database's faults are passing, never dead letters: {letters:?}"
    );

    // And so it is after a restart: what was acknowledged is on disk, once.
    let mut before = Vec::new();
    for post in &posts {
        before
            .push(reader.get(&format!("/posts/{post}/comments?limit=100")).await["items"].clone());
    }
    drop(state);
    stop.now().await;
    let (api, _stop) = serve(dir.path(), SdkFaults::default()).await;
    let reader = Writer::new(&api, "ana");
    for (post, before) in posts.iter().zip(before) {
        assert_eq!(
            reader.get(&format!("/posts/{post}/comments?limit=100")).await["items"],
            before,
            "{post} after a restart"
        );
        let read = reader.get(&format!("/posts/{post}")).await;
        assert_eq!(
            read["commentCount"].as_u64(),
            Some(before.as_array().unwrap().len() as u64),
            "{post} after a restart"
        );
    }
}

/// A rule for every kind of fault the SDK injects, each failing 30 % of what it meets, all off.
fn every_kind_of_fault_at_thirty_percent() -> Vec<Arc<FaultInjectionRule>> {
    let kinds = [
        FaultInjectionErrorType::ServiceUnavailable,
        FaultInjectionErrorType::TooManyRequests,
        FaultInjectionErrorType::RetryWith,
        FaultInjectionErrorType::Timeout,
        FaultInjectionErrorType::PartitionIsGone,
        FaultInjectionErrorType::InternalServerError,
        FaultInjectionErrorType::ConnectionError,
        FaultInjectionErrorType::ResponseTimeout,
        FaultInjectionErrorType::ResponseTimeoutAfterService,
    ];
    kinds
        .into_iter()
        .map(|kind| {
            let result =
                FaultInjectionResultBuilder::new().with_error(kind).with_probability(0.3).build();
            let rule =
                Arc::new(FaultInjectionRuleBuilder::new(format!("{kind:?}"), result).build());
            rule.disable();
            rule
        })
        .collect()
}

/// Turns `rules` on one at a time, each for a few milliseconds, until aborted: the SDK applies
/// the first rule that matches and then draws its probability (`fault_injection/http_client.rs`,
/// "first match wins"), so two rules on at once would leave the second unused.
fn take_turns(rules: Vec<Arc<FaultInjectionRule>>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        for turn in 0.. {
            rules.iter().for_each(|rule| rule.disable());
            rules[turn % rules.len()].enable();
            // The pace of the turns, not a wait for anything.
            tokio::time::sleep(std::time::Duration::from_millis(7)).await;
        }
    })
}

/// What the writers were told is done: each comment (its post, its id, whether it was then
/// deleted), and the posts written and then deleted.
#[derive(Default)]
struct Acknowledged {
    comments: std::sync::Mutex<Vec<(String, String, bool)>>,
    deleted_posts: std::sync::Mutex<Vec<String>>,
}

/// Twelve rounds of one writer (the `n`th) under the faults: a comment on one of `posts` each
/// round (every fourth deleted again), a second post written, edited and deleted (round 8), a
/// rename (round 6), a like given (rounds 0, 6) and taken back (3, 9), and every list read.
async fn rounds_under_faults(
    writer: &Writer,
    n: usize,
    posts: &[String],
    acknowledged: &Acknowledged,
) {
    for round in 0..12 {
        let post = &posts[(n + round) % posts.len()];
        let key = format!("{}-{round}", writer.user);
        let body = json!({"userId": writer.user, "content": format!("{key} on {post}")});
        let (_, comment) =
            until_done(writer, Method::POST, &format!("/posts/{post}/comments"), Some(body), &key)
                .await;
        let id = comment["id"].as_str().unwrap().to_owned();
        let deleted = round % 4 == 3;
        if deleted {
            until_done(
                writer,
                Method::DELETE,
                &format!("/posts/{post}/comments/{id}"),
                None,
                &format!("{key}-d"),
            )
            .await;
        }
        acknowledged.comments.lock().unwrap().push((post.clone(), id, deleted));
        if round == 8 {
            let deleted = short_lived_post(writer, &key).await;
            acknowledged.deleted_posts.lock().unwrap().push(deleted);
        }
        // Renamed halfway: the name reaches every comment and copy through the change feed.
        if round == 6 {
            let renamed = json!({"username": format!("{}-renamed", writer.user)});
            let users = format!("/users/{}", writer.user);
            assert_eq!(
                until_done(writer, Method::PUT, &users, Some(renamed), &format!("{key}-r")).await.0,
                200
            );
        }
        like_or_take_back(writer, post, round, &key).await;
        every_read_answers_200_or_503(writer, post).await;
    }
}

/// A second post, written, edited and deleted (C2, C2 edit, C7), its copies read (Q3) while it
/// lives; its id.
async fn short_lived_post(writer: &Writer, key: &str) -> String {
    let body = json!({"userId": writer.user, "title": "short-lived", "content": "c"});
    let (_, post) =
        until_done(writer, Method::POST, "/posts", Some(body), &format!("{key}-p")).await;
    let post = post["id"].as_str().unwrap().to_owned();
    let edit = json!({"title": "short-lived, edited", "content": "c2"});
    assert_eq!(
        until_done(writer, Method::PUT, &format!("/posts/{post}"), Some(edit), &format!("{key}-e"))
            .await
            .0,
        200
    );
    let own = writer
        .client
        .get(format!("{}/users/{}/posts", writer.api, writer.user))
        .send()
        .await
        .unwrap();
    assert!(matches!(own.status().as_u16(), 200 | 503), "Q3 answered {}", own.status());
    assert_eq!(
        until_done(writer, Method::DELETE, &format!("/posts/{post}"), None, &format!("{key}-x"))
            .await
            .0,
        204
    );
    post
}

/// Rounds 0 and 6 like `post`, 3 and 9 take the like back.
async fn like_or_take_back(writer: &Writer, post: &str, round: usize, key: &str) {
    let likes = format!("/posts/{post}/likes");
    match round % 6 {
        0 => {
            let like = Some(json!({"userId": writer.user}));
            assert_eq!(
                until_done(writer, Method::POST, &likes, like, &format!("{key}-l")).await.0,
                201
            );
        }
        3 => {
            let unlike = format!("{likes}/{}", writer.user);
            assert_eq!(
                until_done(writer, Method::DELETE, &unlike, None, &format!("{key}-u")).await.0,
                204
            );
        }
        _ => {}
    }
}

/// Every read of `post`, its lists, the feed and the writer answers 200, or 503 for a fault:
/// never another status.
async fn every_read_answers_200_or_503(writer: &Writer, post: &str) {
    for path in [
        format!("/posts/{post}"),
        format!("/posts/{post}/comments"),
        format!("/posts/{post}/likes"),
        "/feed".to_owned(),
        format!("/users/{}", writer.user),
    ] {
        let answer = writer.client.get(format!("{}{path}", writer.api)).send().await.unwrap();
        assert!(
            matches!(answer.status().as_u16(), 200 | 503),
            "GET {path} answered {}",
            answer.status()
        );
    }
}

/// `post`'s counters equal what its lists hold, and its comments are those answered 201 and not
/// deleted (of `comments`), each once.
async fn counters_match_lists_and_each_acknowledged_comment_is_there_once(
    reader: &Writer,
    post: &str,
    comments: &[(String, String, bool)],
) {
    let read = reader.get(&format!("/posts/{post}")).await;
    let listed = reader.get(&format!("/posts/{post}/comments?limit=100")).await;
    let listed: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap())
        .collect();
    let likes = reader.get(&format!("/posts/{post}/likes?limit=100")).await;
    assert_eq!(read["commentCount"].as_u64(), Some(listed.len() as u64), "{post}: {read}");
    assert_eq!(
        read["likeCount"].as_u64(),
        Some(likes["items"].as_array().unwrap().len() as u64),
        "{post}: {read}"
    );
    let kept: Vec<&str> = comments
        .iter()
        .filter(|(on, _, deleted)| on == post && !deleted)
        .map(|(_, id, _)| id.as_str())
        .collect();
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    let mut expected = kept.clone();
    expected.sort_unstable();
    assert_eq!(sorted, expected, "{post}: the comments answered 201 and not deleted, each once");
}

/// Waits until every post (the `n`th is the `n`th writer's) is copied into its author's list
/// and the feed, and every comment and copy carries its writer's new name.
async fn until_copies_caught_up(reader: &Writer, writers: &[Writer], posts: &[String]) {
    let started = std::time::Instant::now();
    let renamed = |item: &Value| {
        item["userUsername"] == format!("{}-renamed", item["userId"].as_str().unwrap())
    };
    loop {
        let feed = reader.get("/feed?limit=100").await;
        let items = feed["items"].as_array().unwrap();
        let mut caught_up = items.len() == posts.len() && items.iter().all(renamed);
        for (writer, post) in writers.iter().zip(posts) {
            let own = reader.get(&format!("/users/{}/posts", writer.user)).await;
            let own = own["items"].as_array().unwrap();
            caught_up &= own.len() == 1
                && own.iter().any(|item| item["id"] == post.as_str() && renamed(item));
            let listed = reader.get(&format!("/posts/{post}/comments?limit=100")).await;
            caught_up &= listed["items"].as_array().unwrap().iter().all(renamed);
        }
        if caught_up {
            return;
        }
        assert!(started.elapsed().as_secs() < 60, "the copies never caught up: {feed}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A form sent while the database cannot take the write is the form again, 503 with
/// `Retry-After`, saying the blog is busy and when to send it again, with what was typed and
/// the same one-time key (the write may have been made); sent again once the database answers,
/// it is made once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_sent_while_the_database_is_busy_keeps_the_text_and_its_key() {
    let result = FaultInjectionResultBuilder::new()
        .with_error(FaultInjectionErrorType::ServiceUnavailable)
        .build();
    let condition = FaultInjectionConditionBuilder::new()
        .with_operation_type(FaultOperationType::BatchItem)
        .build();
    let unavailable = Arc::new(
        FaultInjectionRuleBuilder::new("503 on batches", result).with_condition(condition).build(),
    );
    unavailable.disable();
    let dir = tempfile::tempdir().unwrap();
    let (api, _stop) =
        serve(dir.path(), SdkFaults { rules: vec![unavailable.clone()], ..SdkFaults::default() })
            .await;
    let alice = Writer::new(&api, "alice");
    assert_eq!(
        alice.send(Method::POST, "/users", Some(json!({"username": "alice"})), None).await.0,
        201
    );
    let (_, post) = alice
        .send(
            Method::POST,
            "/posts",
            Some(json!({"userId": "alice", "title": "t", "content": "c"})),
            None,
        )
        .await;
    let post = post["id"].as_str().unwrap().to_owned();
    let browser = Browser::at(api.trim_end_matches("/api")).signed_in_as("alice");
    let comments = format!("/posts/{post}/comments");
    let typed = [("content", "Typed while busy."), ("idempotencyKey", "form-key-1")];

    unavailable.enable();
    let busy = browser.submit(&comments, &typed).await;
    assert_eq!(busy.status, 503);
    assert!(busy.headers.contains_key("retry-after"));
    let html = busy.html;
    assert!(html.contains("The blog is busy right now"), "{html}");
    assert!(html.contains("Typed while busy."), "what was typed is kept: {html}");
    assert!(html.contains("name=\"idempotencyKey\" value=\"form-key-1\""), "the same key: {html}");
    unavailable.disable();

    for _ in 0..2 {
        let sent = browser.submit(&comments, &typed).await;
        assert_eq!(sent.status, 303);
    }
    let read = alice.get(&format!("/posts/{post}")).await;
    assert_eq!(read["commentCount"], 1, "{read}");
}

/// A blog whose requests have 1 s each (`BLOG_REQUEST_TIMEOUT`), with alice and her post, and
/// two rules, off until enabled: one makes Cosmos DB take 5 s to answer each read of `posts`,
/// the other 2 s for each batch. The base URL, what stops the blog, alice, the post, and the
/// rules for reads and for writes.
async fn with_a_slow_database(
    dir: &std::path::Path,
) -> (String, Stop, Writer, String, Arc<FaultInjectionRule>, Arc<FaultInjectionRule>) {
    let result =
        FaultInjectionResultBuilder::new().with_delay(std::time::Duration::from_secs(5)).build();
    let condition = FaultInjectionConditionBuilder::new()
        .with_operation_type(FaultOperationType::ReadItem)
        .with_container_id("posts")
        .build();
    let slow = Arc::new(
        FaultInjectionRuleBuilder::new("slow reads of posts", result)
            .with_condition(condition)
            .build(),
    );
    slow.disable();
    let result =
        FaultInjectionResultBuilder::new().with_delay(std::time::Duration::from_secs(2)).build();
    let condition = FaultInjectionConditionBuilder::new()
        .with_operation_type(FaultOperationType::BatchItem)
        .build();
    let slow_writes = Arc::new(
        FaultInjectionRuleBuilder::new("slow batches", result).with_condition(condition).build(),
    );
    slow_writes.disable();
    let config =
        blog::Config { request_timeout: std::time::Duration::from_secs(1), ..embedded_config(dir) };
    let rules = vec![slow.clone(), slow_writes.clone()];
    let (api, stop, _) = serve_config(config, SdkFaults { rules, ..SdkFaults::default() }).await;
    let alice = Writer::new(&api, "alice");
    assert_eq!(
        alice.send(Method::POST, "/users", Some(json!({"username": "alice"})), None).await.0,
        201
    );
    let (_, post) = alice
        .send(
            Method::POST,
            "/posts",
            Some(json!({"userId": "alice", "title": "t", "content": "c"})),
            None,
        )
        .await;
    let post = post["id"].as_str().unwrap().to_owned();
    (api, stop, alice, post, slow, slow_writes)
}

/// A time budget per request. While Cosmos DB takes 5 s to answer each read of `posts`, a
/// request is answered 503 with `Retry-After` once its budget (here 1 s) has passed,
/// problem+json on the API and an HTML page for a page; once the database answers in time, the
/// same requests are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_database_never_holds_a_request_past_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let (api, _stop, alice, post, slow, _) = with_a_slow_database(dir.path()).await;
    let site = api.trim_end_matches("/api").to_owned();
    slow.enable();
    for (url, kind) in [
        (format!("{api}/posts/{post}"), "application/problem+json"),
        (format!("{site}/posts/{post}"), "text/html"),
    ] {
        // 503 saying the budget ran out: the read itself, 5 s later, would have answered 200.
        let answer = alice.client.get(&url).send().await.unwrap();
        assert_eq!(answer.status(), 503, "{url}");
        assert!(answer.headers().contains_key("retry-after"), "{url}");
        assert!(answer.headers()["content-type"].to_str().unwrap().starts_with(kind), "{url}");
        assert!(answer.text().await.unwrap().contains("did not answer within 1 s"), "{url}");
    }
    slow.disable();
    assert_eq!(alice.client.get(format!("{api}/posts/{post}")).send().await.unwrap().status(), 200);
}

/// A write past its budget is 503 too, and sent again with its key once the database answers
/// in time, it is made once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_past_its_budget_is_503_and_sent_again_with_its_key_made_once() {
    let dir = tempfile::tempdir().unwrap();
    let (_api, _stop, alice, post, _, slow_writes) = with_a_slow_database(dir.path()).await;
    slow_writes.enable();
    let comments = format!("/posts/{post}/comments");
    let comment = json!({"userId": "alice", "content": "slow"});
    let (status, problem) =
        alice.send(Method::POST, &comments, Some(comment.clone()), Some("slow-1")).await;
    assert_eq!(status, 503, "{problem}");
    assert!(problem["detail"].as_str().unwrap().contains("same Idempotency-Key"), "{problem}");
    slow_writes.disable();
    // Sent again as a client does on 503 (the write cut short may still hold its post for a
    // moment), then once more: both answered as done, one comment.
    assert_eq!(
        until_done(&alice, Method::POST, &comments, Some(comment.clone()), "slow-1").await.0,
        201
    );
    assert_eq!(alice.send(Method::POST, &comments, Some(comment), Some("slow-1")).await.0, 201);
    assert_eq!(alice.get(&format!("/posts/{post}")).await["commentCount"], 1);
}
