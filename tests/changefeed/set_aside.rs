//! An item that keeps failing, is malformed or comes from the future is set aside alone,
//! without stalling its batch or the feed.

use super::*;

/// An item that is well formed but fails every time it is applied (here its copy in `users` was
/// damaged by hand, so it cannot be read): the batch fails and is retried; from the 5th retry on
/// it is delivered item by item, the failing item is set aside and the others apply. When every
/// item fails alike it is an outage, and nothing is set aside.
#[tokio::test]
async fn after_five_failed_deliveries_the_item_that_keeps_failing_is_set_aside_alone() {
    let app = TestApp::start_as_host().await;
    let alice = app.user("alice").await;
    let [damaged, healthy, also_damaged] = [
        app.post_by(&alice, "a").await,
        app.post_by(&alice, "b").await,
        app.post_by(&alice, "c").await,
    ];
    let version = |post: String| {
        let store = app.state.store.clone();
        async move { store.read::<Value>(Container::Posts, &post, &post).await.unwrap().unwrap() }
    };
    let (damaged_version, healthy_version, also_damaged_version) = (
        version(damaged.clone()).await,
        version(healthy.clone()).await,
        version(also_damaged.clone()).await,
    );
    for post in [&damaged, &also_damaged] {
        let broken_copy = json!({"id": post, "userId": alice, "type": "post", "title": 5});
        app.state.store.upsert(Container::Users, &alice, &broken_copy).await.unwrap();
    }
    let app = &app;
    let invoke = |documents: Vec<Value>, retry: u32| {
        let body = host::cosmos_invocation("PostsChangeFeed", &documents, Attempt::Retry(retry));
        async move { host::invoke(app, "PostsChangeFeed", &body).await }
    };

    let batch = vec![damaged_version.clone(), healthy_version.clone()];
    for retry in 0..blog::testing::changefeed::ISOLATE_AFTER {
        assert_eq!(
            invoke(batch.clone(), retry).await.status,
            StatusCode::INTERNAL_SERVER_ERROR,
            "retry {retry}: delivered again"
        );
    }
    assert!(dead_letters::list(&app.state.store).await.unwrap().is_empty());
    // Both failing alike: the store, not an item, is what fails.
    let both_damaged = vec![damaged_version.clone(), also_damaged_version];
    assert_eq!(
        invoke(both_damaged, blog::testing::changefeed::ISOLATE_AFTER).await.status,
        StatusCode::INTERNAL_SERVER_ERROR
    );
    assert!(dead_letters::list(&app.state.store).await.unwrap().is_empty());

    let answer = invoke(batch, blog::testing::changefeed::ISOLATE_AFTER).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let letters = dead_letters::list(&app.state.store).await.unwrap();
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert_eq!(serde_json::from_str::<Value>(&letters[0].payload).unwrap(), damaged_version);
    assert!(letters[0].reason.contains("again alone"), "{}", letters[0].reason);
    assert!(ids(&app.get("/api/feed").await.body).contains(&healthy), "the healthy post applied");
}

#[tokio::test]
async fn a_malformed_item_is_set_aside_without_blocking_its_batch() {
    let app = TestApp::start_as_host().await;
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Good").await;
    let good =
        app.state.store.read::<Value>(Container::Posts, &post, &post).await.unwrap().unwrap();
    let poison = [
        json!({"id": "p-broken", "type": "post", "postId": "p-broken"}),
        json!({"id": "p-wrong", "type": "post", "postId": "p-wrong", "userId": 5, "_ts": 1, "_etag": "x"}),
        json!({"id": "p-huge", "type": "post", "postId": "p-huge", "userId": "u", "userUsername": "u", "title": "t",
               "content": "x".repeat(3_000_000), "commentCount": 0, "likeCount": 0, "creationDate": "2026-01-01T00:00:00.000Z",
               "_ts": 1, "_etag": "x"}),
        // Tags the API refuses (the same tag twice): each would be a copy in `tags`.
        json!({"id": "p-tags", "type": "post", "postId": "p-tags", "userId": alice, "userUsername": "alice", "title": "t",
               "content": "c", "tags": ["Same", "SAME"], "commentCount": 0, "likeCount": 0,
               "creationDate": "2026-01-01T00:00:00.000Z", "_ts": 1, "_etag": "x"}),
        json!("not even an object"),
    ];
    let mut batch = poison.to_vec();
    batch.push(json!({"id": "c1", "type": "comment", "postId": post}));
    batch.push(good);
    let answer = deliver(&app, "PostsChangeFeed", &batch).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let log = answer.body["Logs"][0].as_str().unwrap();
    assert!(
        log.contains("1 applied")
            && log.contains("1 of other types")
            && log.contains("5 malformed"),
        "{log}"
    );
    assert_eq!(
        ids(&app.get("/api/feed").await.body),
        vec![post.clone()],
        "the good post went through, nothing else was written"
    );
    assert_eq!(
        app.get("/api/tags/same/posts").await.body["items"],
        json!([]),
        "no copy under the refused tags"
    );

    let users = deliver(
        &app,
        "UsersChangeFeed",
        &[json!({"id": "u9", "type": "user"}), json!({"type": "post"})],
    )
    .await;
    assert_eq!(users.status, StatusCode::OK, "{}", users.body);
    assert!(users.body["Logs"][0].as_str().unwrap().contains("1 malformed"), "{}", users.body);

    // Every refused item is kept, whole, where a person can look at it.
    let letters = dead_letters::list(&app.state.store).await.unwrap();
    assert_eq!(letters.len(), 6, "{letters:?}");
    let payloads: Vec<Value> =
        letters.iter().map(|letter| serde_json::from_str(&letter.payload).unwrap()).collect();
    for refused in poison.iter().chain([&json!({"id": "u9", "type": "user"})]) {
        assert!(
            payloads.contains(refused),
            "not set aside: {}",
            refused.to_string().chars().take(80).collect::<String>()
        );
    }
    assert!(letters.iter().all(|letter| letter.what == "item" && !letter.reason.is_empty()));

    // A replay applies what now applies (here: a good post set aside, as an older version of
    // the function might have done) and keeps the rest.
    let second = app.post_by(&alice, "Set aside once").await;
    let version =
        app.state.store.read::<Value>(Container::Posts, &second, &second).await.unwrap().unwrap();
    dead_letters::set_aside(
        &app.state.store,
        "PostsChangeFeed",
        "item",
        "a bug since fixed",
        &version.to_string(),
    )
    .await
    .unwrap();
    assert_eq!(dead_letters::replay(&app.state, &mut |_| {}).await.unwrap(), (1, 6));
    assert_eq!(dead_letters::list(&app.state.store).await.unwrap().len(), 6);
    assert_eq!(ids(&app.get("/api/feed").await.body), vec![second, post]);
}

#[tokio::test]
async fn an_unreadable_invocation_is_kept_not_retried_forever() {
    let app = TestApp::start_as_host().await;
    for body in [
        &b"{\"Data\": {\"documents\": \"[1,\"}}"[..],
        b"not json at all",
        b"{\"Data\": {\"documents\": 5}}",
    ] {
        let answer = host::invoke(&app, "PostsChangeFeed", body).await;
        // A non-2xx answer would make the host deliver it again forever (maxRetryCount: -1),
        // holding every later change of the lease behind it.
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        assert!(answer.body["Logs"][0].as_str().unwrap().contains("set aside"), "{}", answer.body);
    }
    let letters = dead_letters::list(&app.state.store).await.unwrap();
    assert_eq!(letters.len(), 3);
    assert!(
        letters
            .iter()
            .any(|letter| letter.payload == "not json at all" && letter.what == "invocation")
    );
}

#[tokio::test]
async fn a_version_from_the_future_is_set_aside_freezing_nothing() {
    let app = TestApp::start_as_host().await;
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Real").await;
    let mut forged =
        app.state.store.read::<Value>(Container::Posts, &post, &post).await.unwrap().unwrap();
    forged["title"] = json!("DEFACED");
    forged["_ts"] = json!(9_999_999_999_i64);
    let answer = deliver(&app, "PostsChangeFeed", &[forged]).await;
    assert!(answer.body["Logs"][0].as_str().unwrap().contains("1 malformed"), "{}", answer.body);
    let real =
        app.state.store.read::<Value>(Container::Posts, &post, &post).await.unwrap().unwrap();
    deliver(&app, "PostsChangeFeed", &[real]).await;
    assert_eq!(app.get("/api/feed").await.body["items"][0]["title"], "Real");
}

/// A change that can never be applied (here a user whose id no resource path can carry, as the
/// API once let through) is set aside; the processor goes on, and later renames still reach
/// every item.
#[tokio::test]
async fn one_bad_item_does_not_stall_the_feed_for_everyone() {
    let app = TestApp::start().await;
    let poison = json!({"id": "..", "type": "user", "userId": "..", "username": "dots", "renamedAt": "2026-01-01T00:00:00.000Z"});
    app.state.store.upsert(Container::Users, "..", &poison).await.unwrap();
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Hello").await;
    app.post(&format!("/api/posts/{post}/comments"), json!({"userId": alice, "content": "c"}))
        .await;
    app.put(&format!("/api/users/{alice}"), json!({"username": "alicia"})).await;
    app.eventually(&format!("/api/posts/{post}/comments"), |page| {
        page["items"][0]["userUsername"] == "alicia"
    })
    .await;
    let letters = dead_letters::list(&app.state.store).await.unwrap();
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert_eq!(serde_json::from_str::<Value>(&letters[0].payload).unwrap()["id"], "..");
}
