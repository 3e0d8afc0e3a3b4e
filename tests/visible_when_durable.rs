//! Through HTTP, as a client sees it: a write held back before its commit is durable is seen by
//! no one, and a name claim is not refused on a claim not yet durable. The blog is started as
//! `main` starts it (`Blog::start` on the state `connect` builds, served by `Blog::serve`), on a
//! store whose disk the test controls.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use blog::Blog;
use blog::test_support::{FaultyDisk, ReleaseOnDrop, embedded_config, store_on};
use blog::testing::cosmos::{Container, Store};
use blog::testing::model::usernames::{normalize_username, reservation_id};
use reqwest::Method;
use serde_json::{Value, json};

/// A blog on a store whose commits `disk` can hold or refuse, served; its base URL, what stops
/// it, and how many hold or wait for a partition of its store.
async fn serve(
    dir: &std::path::Path,
    disk: Arc<FaultyDisk>,
) -> (
    String,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
    impl Fn(Container, &str) -> usize,
) {
    let config = embedded_config(dir);
    let store = store_on(&config, disk).await.unwrap();
    let probe = store.partition_probe().expect("the embedded store");
    let blog = Blog::start(&config, blog::state_on(&config, store).await.unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/api", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        blog.serve(listener, async move { drop(stopped.await) }).await.unwrap()
    });
    (base, stop, server, probe)
}

/// Waits, up to a bound that only a broken lock reaches, until `count()` is `want`.
async fn until(what: &str, want: usize, count: impl Fn() -> usize) {
    let started = std::time::Instant::now();
    while count() != want {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{what}: {} after 30 s, not {want}",
            count()
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

async fn send(method: Method, url: String, caller: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = reqwest::Client::new().request(method, url).header("x-dev-user", caller);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

/// Waits until the writer holds a commit at the fault hook.
async fn until_held(disk: &FaultyDisk) {
    // Bounded, so that a commit that never reaches the disk fails the test instead of hanging it.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !disk.holding() {
        assert!(std::time::Instant::now() < deadline, "no commit reached the disk to be held");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// A comment's commit is held at the disk; reads of its post (Q2 and Q4) are seen waiting for
/// its partition, not guessed to by a pause, and answer only once the commit is durable, with
/// the comment and its count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_is_seen_only_once_the_commit_is_durable() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(FaultyDisk::default());
    let _release = ReleaseOnDrop(disk.clone());
    let (api, _stop, _server, holders) = serve(dir.path(), disk.clone()).await;
    assert_eq!(
        send(Method::POST, format!("{api}/users"), "alice", Some(json!({"username": "alice"})))
            .await
            .0,
        201
    );
    let post_body = json!({"userId": "alice", "title": "Kites", "content": "c"});
    let (_, post) = send(Method::POST, format!("{api}/posts"), "alice", Some(post_body)).await;
    let post = post["id"].as_str().unwrap().to_owned();
    // The post's copies and its index written first (the index is the delivery's last write):
    // otherwise the commit held below can be one of theirs, and the reads race the delivery.
    for list in
        [format!("{api}/users/alice/posts"), format!("{api}/feed"), format!("{api}/search?q=kites")]
    {
        let started = std::time::Instant::now();
        while send(Method::GET, list.clone(), "x", None).await.1["items"]
            .as_array()
            .is_none_or(Vec::is_empty)
        {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the post's copy never reached {list}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    disk.hold_syncs();
    let commenting = tokio::spawn(send(
        Method::POST,
        format!("{api}/posts/{post}/comments"),
        "alice",
        Some(json!({"userId": "alice", "content": "held"})),
    ));
    until_held(&disk).await;
    let in_partition = || holders(Container::Posts, &post);
    until("the comment's write holds the post's partition", 1, in_partition).await;
    let reading_post =
        tokio::spawn(send(Method::GET, format!("{api}/posts/{post}"), "reader", None));
    let reading_comments =
        tokio::spawn(send(Method::GET, format!("{api}/posts/{post}/comments"), "reader", None));
    until("the writer and both readers", 3, in_partition).await;
    assert!(
        !reading_post.is_finished() && !reading_comments.is_finished(),
        "a read answered while the commit was held"
    );
    disk.release_syncs();
    assert_eq!(commenting.await.unwrap().0, 201);

    let (_, read) = reading_post.await.unwrap();
    assert_eq!(read["commentCount"], 1, "the read waited for the commit: {read}");
    let (_, comments) = reading_comments.await.unwrap();
    assert_eq!(comments["items"][0]["content"], "held", "{comments}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_claim_is_not_refused_on_a_claim_that_never_became_durable() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(FaultyDisk::default());
    let _release = ReleaseOnDrop(disk.clone());
    let (api, _stop, _server, holders) = serve(dir.path(), disk.clone()).await;
    let reservation = reservation_id(&normalize_username("carol"));

    // The first claim's commit is held, then refused (a full disk).
    disk.hold_syncs();
    disk.fail_next_commits(1);
    let first = tokio::spawn(send(
        Method::POST,
        format!("{api}/users"),
        "bob",
        Some(json!({"username": "carol"})),
    ));
    until_held(&disk).await;
    let second = tokio::spawn(send(
        Method::POST,
        format!("{api}/users"),
        "dave",
        Some(json!({"username": "carol"})),
    ));
    until("the held claim and the second, waiting for the name's partition", 2, || {
        holders(Container::Users, &reservation)
    })
    .await;
    disk.release_syncs();
    let (first, problem) = first.await.unwrap();
    assert_eq!(first, 507, "{problem}");
    let (second, answer) = second.await.unwrap();
    assert_eq!(second, 201, "refused on a claim that was never durable: {answer}");
    assert_eq!(
        send(Method::GET, format!("{api}/users/dave"), "x", None).await.1["username"],
        "carol"
    );
    assert_eq!(send(Method::GET, format!("{api}/users/bob"), "x", None).await.0, 404);
}

#[tokio::test]
async fn writing_resumes_once_a_full_disk_has_room() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(FaultyDisk::default());
    let (api, stop, server, _) = serve(dir.path(), disk.clone()).await;
    let (status, _) =
        send(Method::POST, format!("{api}/users"), "alice", Some(json!({"username": "alice"})))
            .await;
    assert_eq!(status, 201);
    let post_body = json!({"userId": "alice", "title": "t", "content": "c"});
    let (_, post) = send(Method::POST, format!("{api}/posts"), "alice", Some(post_body)).await;
    let post = post["id"].as_str().unwrap().to_owned();
    let comment = |content: &str| Some(json!({"userId": "alice", "content": content}));
    assert_eq!(
        send(Method::POST, format!("{api}/posts/{post}/comments"), "alice", comment("one")).await.0,
        201
    );

    // Full: each commit fails at `COMMIT`, after its statements ran (SQLite rolls them back).
    disk.full.store(true, Ordering::SeqCst);
    let (status, problem) =
        send(Method::POST, format!("{api}/posts/{post}/comments"), "alice", comment("two")).await;
    assert_eq!(status, 507, "{problem}");
    assert!(problem["detail"].as_str().unwrap().contains("nothing was written"), "{problem}");
    assert_eq!(
        send(Method::POST, format!("{api}/users"), "bob", Some(json!({"username": "bob"}))).await.0,
        507
    );
    assert_eq!(
        send(
            Method::POST,
            format!("{api}/posts/{post}/likes"),
            "alice",
            Some(json!({"userId": "alice"}))
        )
        .await
        .0,
        507
    );
    let rename = Some(json!({"username": "alice2"}));
    assert_eq!(send(Method::PUT, format!("{api}/users/alice"), "alice", rename).await.0, 507);
    // Reads agree with what a restart would find.
    let (_, read) = send(Method::GET, format!("{api}/posts/{post}"), "x", None).await;
    assert_eq!(
        (read["commentCount"].as_u64(), read["likeCount"].as_u64()),
        (Some(1), Some(0)),
        "{read}"
    );
    let (_, comments) = send(Method::GET, format!("{api}/posts/{post}/comments"), "x", None).await;
    assert_eq!(comments["items"].as_array().unwrap().len(), 1, "{comments}");
    assert_eq!(send(Method::GET, format!("{api}/users/bob"), "x", None).await.0, 404);
    assert_eq!(
        send(Method::GET, format!("{api}/users/alice"), "x", None).await.1["username"],
        "alice"
    );

    // Room again: writing resumes without a restart, and the refused like is no like.
    disk.full.store(false, Ordering::SeqCst);
    assert_eq!(
        send(
            Method::POST,
            format!("{api}/posts/{post}/likes"),
            "alice",
            Some(json!({"userId": "alice"}))
        )
        .await
        .0,
        201
    );
    assert_eq!(
        send(Method::POST, format!("{api}/posts/{post}/comments"), "alice", comment("three"))
            .await
            .0,
        201
    );
    assert_eq!(
        send(Method::POST, format!("{api}/users"), "bob", Some(json!({"username": "bob"}))).await.0,
        201
    );
    stop.send(()).unwrap();
    server.await.unwrap();

    let store = Store::connect(&embedded_config(dir.path()))
        .await
        .expect("the store reopens after the full disk");
    let read: Value = store.read(Container::Posts, &post, &post).await.unwrap().unwrap();
    assert_eq!(
        (read["commentCount"].as_u64(), read["likeCount"].as_u64()),
        (Some(2), Some(1)),
        "{read}"
    );
    assert!(store.read::<Value>(Container::Users, "bob", "bob").await.unwrap().is_some());
}
