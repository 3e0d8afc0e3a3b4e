//! The change-feed functions keep every denormalized copy true: end to end on the embedded
//! store with the local processors, and as the Functions host invokes them.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use blog::ChangeFeedMode;
use blog::testing::changefeed::Function;
use blog::testing::changefeed::dead_letters;
use blog::testing::cosmos::{Container, PageRequest, QuerySpec};
use blog::testing::model::SHORT_CONTENT_CHARS;
use common::TestApp;
use common::host::{self, Attempt};
use reqwest::StatusCode;
use serde_json::{Value, json};

fn ids(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Every application document of one partition, system properties included; not the in-process
/// scripts' fence item, nor a user's posts mark (written again by every delivery that finds a
/// copy, repeated or not, so that no instance keeps a page it made old).
async fn partition(app: &TestApp, container: Container, key: &str) -> Vec<Value> {
    let query = QuerySpec {
        sql: "SELECT * FROM c WHERE NOT IS_DEFINED(c.scriptFence) AND c.type != 'postsMark' ORDER BY c.id".into(),
        parameters: vec![],
    };
    let page = PageRequest { size: 1000, continuation: None };
    app.state.store.query_documents(container, key, query, page).await.unwrap().0
}

/// The documents of a partition without what the store adds, for comparing states.
async fn contents(app: &TestApp, container: Container, key: &str) -> Vec<Value> {
    let mut documents = partition(app, container, key).await;
    for document in &mut documents {
        document.as_object_mut().unwrap().retain(|name, _| !name.starts_with('_'));
    }
    documents
}

#[tokio::test]
async fn q3_and_q6_show_each_post_with_its_author_counts_and_short_content() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let long = "é".repeat(SHORT_CONTENT_CHARS + 50);
    let first = app
        .post("/api/posts", json!({"userId": alice, "title": "First", "content": long}))
        .await
        .body;
    let second = app.post_by(&alice, "Second").await;
    let first_id = first["id"].as_str().unwrap();
    for n in 0..3 {
        app.post(
            &format!("/api/posts/{first_id}/comments"),
            json!({"userId": bob, "content": format!("c{n}")}),
        )
        .await;
    }
    app.post(&format!("/api/posts/{first_id}/likes"), json!({"userId": bob})).await;
    app.post(&format!("/api/posts/{first_id}/likes"), json!({"userId": alice})).await;

    let expected_first = |item: &Value| {
        item["id"] == first["id"]
            && item["commentCount"] == 3
            && item["likeCount"] == 2
            && item["userUsername"] == "alice"
            && item["content"].as_str().unwrap().chars().count() == SHORT_CONTENT_CHARS
            && first["content"].as_str().unwrap().starts_with(item["content"].as_str().unwrap())
    };
    let feed = app
        .eventually("/api/feed", |feed| {
            feed["items"].as_array().unwrap().iter().any(expected_first)
        })
        .await;
    assert_eq!(ids(&feed.body), vec![second.clone(), first_id.to_owned()], "newest first");
    assert_eq!(
        feed.body["items"][1].as_object().unwrap().len(),
        10,
        "exactly the article's fields: {}",
        feed.body
    );
    let posts = app
        .eventually(&format!("/api/users/{alice}/posts"), |posts| {
            posts["items"].as_array().unwrap().iter().any(expected_first)
        })
        .await;
    assert_eq!(ids(&posts.body), vec![second, first_id.to_owned()]);
    assert_eq!(app.get(&format!("/api/users/{bob}/posts")).await.body["items"], json!([]));
}

#[tokio::test]
async fn a_rename_reaches_every_post_comment_like_and_copy() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let alices_post = app.post_by(&alice, "By Alice").await;
    let bobs_post = app.post_by(&bob, "By Bob").await;
    app.post(
        &format!("/api/posts/{bobs_post}/comments"),
        json!({"userId": alice, "content": "hi"}),
    )
    .await;
    app.post(&format!("/api/posts/{bobs_post}/likes"), json!({"userId": alice})).await;
    app.post(
        &format!("/api/posts/{alices_post}/comments"),
        json!({"userId": alice, "content": "mine"}),
    )
    .await;
    app.post(
        &format!("/api/posts/{alices_post}/comments"),
        json!({"userId": bob, "content": "bob's"}),
    )
    .await;

    app.put(&format!("/api/users/{alice}"), json!({"username": "alicia"})).await;

    app.eventually(&format!("/api/posts/{alices_post}"), |post| post["userUsername"] == "alicia")
        .await;
    let comments = app
        .eventually(&format!("/api/posts/{bobs_post}/comments"), |c| {
            c["items"][0]["userUsername"] == "alicia"
        })
        .await;
    assert_eq!(comments.body["items"].as_array().unwrap().len(), 1);
    app.eventually(&format!("/api/posts/{bobs_post}/likes"), |l| {
        l["items"][0]["userUsername"] == "alicia"
    })
    .await;
    let own = app
        .eventually(&format!("/api/posts/{alices_post}/comments"), |c| {
            c["items"][0]["userUsername"] == "alicia"
        })
        .await;
    assert_eq!(own.body["items"][1]["userUsername"], "bob", "other users' items keep their names");
    app.eventually(&format!("/api/users/{alice}/posts"), |p| {
        p["items"][0]["userUsername"] == "alicia"
    })
    .await;
    let feed = app
        .eventually("/api/feed", |feed| {
            feed["items"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["id"] == alices_post.as_str() && p["userUsername"] == "alicia")
        })
        .await;
    let bobs_copy = feed.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == bobs_post.as_str())
        .unwrap()
        .clone();
    assert_eq!(bobs_copy["userUsername"], "bob");
    assert_eq!(app.get(&format!("/api/posts/{bobs_post}")).await.body["userUsername"], "bob");
}

#[tokio::test]
async fn the_feed_keeps_exactly_the_newest_100_posts() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let mut posts = Vec::new();
    for n in 0..105 {
        posts.push(app.post_by(&alice, &format!("post {n}")).await);
    }
    let newest: Vec<String> = posts.iter().rev().take(100).cloned().collect();
    let feed = app.eventually("/api/feed?limit=100", |feed| ids(feed) == newest).await;
    assert_eq!(feed.body["items"].as_array().unwrap().len(), 100);
    assert_eq!(
        partition(&app, Container::Feed, "post").await.len(),
        100,
        "the container itself holds 100"
    );

    // Changing an old post (a comment moves its counter) must not bring it back into the feed.
    let oldest = &posts[0];
    app.post(&format!("/api/posts/{oldest}/comments"), json!({"userId": alice, "content": "late"}))
        .await;
    app.put(&format!("/api/posts/{oldest}"), json!({"title": "edited", "content": "edited"})).await;
    app.eventually(&format!("/api/users/{alice}/posts?limit=100"), |list| {
        list["items"].as_array().unwrap().iter().all(|p| p["id"] != oldest.as_str())
    })
    .await;
    let mut copies_of_oldest = Vec::new();
    for _ in 0..50 {
        copies_of_oldest = partition(&app, Container::Users, &alice)
            .await
            .into_iter()
            .filter(|d| d["id"] == oldest.as_str())
            .collect();
        if copies_of_oldest.first().is_some_and(|copy| copy["title"] == "edited") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(copies_of_oldest[0]["title"], "edited", "the user's copy follows the edit");
    assert_eq!(ids(&app.get("/api/feed?limit=100").await.body), newest, "the feed does not");
    assert_eq!(partition(&app, Container::Feed, "post").await.len(), 100);
}

/// Delivers `documents` to `function` exactly as the Functions host would (see common/host.rs).
async fn deliver(app: &TestApp, function: &str, documents: &[Value]) -> common::Answer {
    let body = host::cosmos_invocation(function, documents, Attempt::Retry(0));
    let answer = host::invoke(app, function, &body).await;
    assert_eq!(
        answer.header("content-type"),
        Some("application/json"),
        "the host reads only a JSON answer"
    );
    answer
}

#[tokio::test]
async fn a_replayed_or_late_batch_leaves_the_same_state() {
    // No local processors: this test plays the host.
    let app = TestApp::start_as_host().await;
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Hello").await;
    let old_version =
        app.state.store.read::<Value>(Container::Posts, &post, &post).await.unwrap().unwrap();
    // A second later, so the two versions differ in `_ts` too.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    app.put(&format!("/api/posts/{post}"), json!({"title": "Hello, edited", "content": "new"}))
        .await;
    let new_version =
        app.state.store.read::<Value>(Container::Posts, &post, &post).await.unwrap().unwrap();

    let answer = deliver(&app, "PostsChangeFeed", std::slice::from_ref(&new_version)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(answer.body["Outputs"], json!({}));
    assert_eq!(answer.body["ReturnValue"], Value::Null);
    assert!(answer.body["Logs"][0].as_str().unwrap().contains("1 applied"), "{}", answer.body);
    let state = (
        contents(&app, Container::Users, &alice).await,
        contents(&app, Container::Feed, "post").await,
    );
    assert_eq!(state.1[0]["title"], "Hello, edited");

    // The same batch again (a retry: the host's second attempt), then the older version late,
    // then both in one batch with no retry policy: nothing moves.
    let again = host::cosmos_invocation(
        "PostsChangeFeed",
        std::slice::from_ref(&new_version),
        Attempt::Retry(1),
    );
    assert_eq!(host::invoke(&app, "PostsChangeFeed", &again).await.status, StatusCode::OK);
    deliver(&app, "PostsChangeFeed", std::slice::from_ref(&old_version)).await;
    let both = host::cosmos_invocation(
        "PostsChangeFeed",
        &[old_version, new_version],
        Attempt::NoRetryPolicy,
    );
    assert_eq!(host::invoke(&app, "PostsChangeFeed", &both).await.status, StatusCode::OK);
    assert_eq!(
        (
            contents(&app, Container::Users, &alice).await,
            contents(&app, Container::Feed, "post").await
        ),
        state
    );
}

/// A deleted post's tombstone, delivered by the host, removes both copies; a late or repeated
/// delivery of the post's live version afterwards brings neither back.
#[tokio::test]
async fn a_tombstone_removes_the_copies_and_a_late_live_version_does_not_bring_them_back() {
    let app = TestApp::start_as_host().await;
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Hello").await;
    let live =
        app.state.store.read::<Value>(Container::Posts, &post, &post).await.unwrap().unwrap();
    deliver(&app, "PostsChangeFeed", std::slice::from_ref(&live)).await;
    assert_eq!(ids(&app.get("/api/feed").await.body), vec![post.clone()]);
    assert_eq!(ids(&app.get(&format!("/api/users/{alice}/posts")).await.body), vec![post.clone()]);

    let deleted = app
        .send_as(Some(&alice), reqwest::Method::DELETE, &format!("/api/posts/{post}"), None)
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let tombstone =
        app.state.store.read::<Value>(Container::Posts, &post, &post).await.unwrap().unwrap();
    let answer = deliver(&app, "PostsChangeFeed", std::slice::from_ref(&tombstone)).await;
    assert!(answer.body["Logs"][0].as_str().unwrap().contains("1 applied"), "{}", answer.body);
    let no_copies = (
        partition(&app, Container::Users, &alice).await.len(),
        partition(&app, Container::Feed, "post").await.len(),
    );
    assert_eq!(no_copies, (1, 0), "the user alone, no copy");

    for batch in [vec![live.clone()], vec![live.clone(), tombstone.clone()], vec![tombstone]] {
        assert_eq!(deliver(&app, "PostsChangeFeed", &batch).await.status, StatusCode::OK);
        assert!(ids(&app.get("/api/feed").await.body).is_empty());
        assert!(ids(&app.get(&format!("/api/users/{alice}/posts")).await.body).is_empty());
    }
}

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
async fn the_host_invocation_is_decoded_through_both_string_layers() {
    let app = TestApp::start_as_host().await;
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Hello").await;
    let version =
        app.state.store.read::<Value>(Container::Posts, &post, &post).await.unwrap().unwrap();
    let body = host::cosmos_invocation(
        "PostsChangeFeed",
        std::slice::from_ref(&version),
        Attempt::Retry(0),
    );
    // The shape itself: Data.documents is a string holding a string holding the array.
    let invocation: Value = serde_json::from_slice(&body).unwrap();
    let layer: String =
        serde_json::from_str(invocation["Data"]["documents"].as_str().unwrap()).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&layer).unwrap(), json!([version]));

    let answer = host::invoke(&app, "PostsChangeFeed", &body).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert!(answer.body["Logs"][0].as_str().unwrap().contains("1 applied"), "{}", answer.body);
    assert_eq!(ids(&app.get("/api/feed").await.body), vec![post]);
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
    assert_eq!(dead_letters::replay(&app.state).await.unwrap(), (1, 6));
    assert_eq!(dead_letters::list(&app.state.store).await.unwrap().len(), 6);
    assert_eq!(ids(&app.get("/api/feed").await.body), vec![second, post]);
}

#[tokio::test]
async fn an_unreadable_invocation_is_acknowledged_and_kept_not_retried_forever() {
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
async fn users_change_feed_applies_the_current_name_whatever_the_batch_says() {
    let app = TestApp::start_as_host().await;
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Hello").await;
    app.post(&format!("/api/posts/{post}/comments"), json!({"userId": alice, "content": "c"}))
        .await;
    let old =
        app.state.store.read::<Value>(Container::Users, &alice, &alice).await.unwrap().unwrap();
    app.put(&format!("/api/users/{alice}"), json!({"username": "alicia"})).await;
    let new =
        app.state.store.read::<Value>(Container::Users, &alice, &alice).await.unwrap().unwrap();

    for batch in [vec![new.clone()], vec![new.clone()], vec![old.clone()], vec![new, old]] {
        let answer = deliver(&app, "UsersChangeFeed", &batch).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        for item in contents(&app, Container::Posts, &post).await {
            assert_eq!(item["userUsername"], "alicia", "{item}");
        }
    }
}

#[tokio::test]
async fn a_restart_delivers_what_was_not_processed_and_rebuild_gives_the_same_copies() {
    let data = tempfile::tempdir().unwrap();
    // Written while nothing processes the change feed.
    let app = TestApp::start_with(data.path(), ChangeFeedMode::Host).await;
    let alice = app.user("alice").await;
    let posts = [app.post_by(&alice, "one").await, app.post_by(&alice, "two").await];
    app.post(&format!("/api/posts/{}/likes", posts[0]), json!({"userId": alice})).await;
    assert_eq!(app.get("/api/feed").await.body["items"], json!([]));
    app.stop().await;

    // The processors catch up after the restart...
    let app = TestApp::start_in(data.path()).await;
    let expected: Vec<String> = posts.iter().rev().cloned().collect();
    app.eventually("/api/feed", |feed| ids(feed) == expected && feed["items"][1]["likeCount"] == 1)
        .await;
    let incremental = (
        contents(&app, Container::Users, &alice).await,
        contents(&app, Container::Feed, "post").await,
    );
    let position = app.state.store.embedded().unwrap().write_position();
    let checkpoint = data.path().join("changefeed-PostsChangeFeed.json");
    for _ in 0..200 {
        let saved: Value = serde_json::from_slice(&std::fs::read(&checkpoint).unwrap_or_default())
            .unwrap_or_default();
        if saved["delivered_through"].as_u64() >= Some(position) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let saved: Value = serde_json::from_slice(&std::fs::read(&checkpoint).unwrap()).unwrap();
    assert!(
        saved["delivered_through"].as_u64().unwrap() >= position,
        "the position is kept: {saved}"
    );
    app.stop().await;

    // ...and rebuilding from the whole posts feed, on a store stripped of its copies, gives the
    // same copies.
    let app = TestApp::start_with(data.path(), ChangeFeedMode::Host).await;
    for document in
        partition(&app, Container::Users, &alice).await.into_iter().filter(|d| d["type"] == "post")
    {
        let id = document["id"].as_str().unwrap().to_owned();
        app.state
            .store
            .execute_write(
                Container::Users,
                &alice,
                blog::testing::cosmos::WriteOp::Delete { id, if_match: None },
            )
            .await
            .unwrap();
    }
    for document in partition(&app, Container::Feed, "post").await {
        let id = document["id"].as_str().unwrap().to_owned();
        app.state
            .store
            .execute_write(
                Container::Feed,
                "post",
                blog::testing::cosmos::WriteOp::Delete { id, if_match: None },
            )
            .await
            .unwrap();
    }
    assert_eq!(app.get("/api/feed").await.body["items"], json!([]));
    let rebuilt = blog::testing::changefeed::processor::rebuild_copies(&app.state).await.unwrap();
    assert_eq!(rebuilt, 2);
    let strip_versions = |mut documents: Vec<Value>| {
        for document in &mut documents {
            let object = document.as_object_mut().unwrap();
            object.remove("sourceTs");
            object.remove("sourceEtag");
        }
        documents
    };
    assert_eq!(
        strip_versions(contents(&app, Container::Users, &alice).await),
        strip_versions(incremental.0)
    );
    assert_eq!(
        strip_versions(contents(&app, Container::Feed, "post").await),
        strip_versions(incremental.1)
    );
}

#[tokio::test]
async fn the_processors_meter_their_work_and_query_only_for_renamed_users() {
    let app = TestApp::start().await;
    let deliveries = app.deliveries.clone().expect("the local processors run");
    let settled = |function: Function, items: u64| {
        let deliveries = deliveries.clone();
        async move {
            for _ in 0..250 {
                if deliveries.of(function).items >= items {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            deliveries.of(function)
        }
    };
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Hello").await;
    app.eventually("/api/feed", |feed| ids(feed) == [post.clone()]).await;

    let posts = settled(Function::PostsChangeFeed, 1).await;
    assert!(posts.items >= 1 && posts.charge > 0.0, "{posts:?}");
    assert!(
        posts.operations >= posts.items + 4,
        "each item read, then both copies read and written: {posts:?}"
    );
    // Her name's reservation, the user, then the copy of her post in her partition and her
    // posts mark: each costs the processor's read of it, and the user one read of her name's
    // reservation, and the change log's read and write that name her for the instances that
    // keep her page. A user never renamed needs no query for items under another name.
    let users = settled(Function::UsersChangeFeed, 4).await;
    assert_eq!((users.items, users.operations), (4, 7), "{users:?}");

    let renamed = app.put(&format!("/api/users/{alice}"), json!({"username": "alice2"})).await;
    assert!(renamed.body["renamedAt"].is_string(), "{}", renamed.body);
    app.eventually(&format!("/api/posts/{post}"), |found| found["userUsername"] == "alice2").await;
    // (The new name's reservation, and the user.)
    let users = settled(Function::UsersChangeFeed, 6).await;
    assert!(
        users.operations > users.items + 1,
        "a rename reads the user and queries for her items: {users:?}"
    );
}

#[tokio::test]
async fn the_change_feed_routes_exist_only_for_the_host() {
    // Locally the processors deliver the changes: nobody else may.
    let app = TestApp::start().await;
    for function in Function::ALL {
        let forged = host::cosmos_invocation(
            function.name(),
            &[json!({"id": "p", "type": "post"})],
            Attempt::Retry(0),
        );
        let answer = host::invoke(&app, function.name(), &forged).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{}: {}", function.name(), answer.body);
    }
    // Under the host, a client's request is forwarded under the `api` prefix, where no
    // change-feed function lives.
    let app = TestApp::start_as_host().await;
    for function in Function::ALL {
        for path in [format!("/api/{}", function.name()), format!("/api/../{}", function.name())] {
            let answer = host::forward(
                &app,
                "POST",
                &path,
                &[("Content-Type", "application/json")],
                Some(b"{}"),
            )
            .await;
            assert!(matches!(answer.status.as_u16(), 404 | 405), "{path}: {}", answer.status);
        }
    }
}

#[tokio::test]
async fn a_version_from_the_future_is_set_aside_and_freezes_nothing() {
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

/// Users written before usernames were unique have no reservations: `rebuild-copies` replays
/// the users' change feed, which reserves each user's current name.
#[tokio::test]
async fn replaying_the_users_reserves_the_names_of_users_from_before_reservations() {
    use blog::testing::model::usernames::{Reservation, normalize_username, reservation_id};
    let app = TestApp::start_as_host().await;
    for (id, name) in [("old-1", "Ada"), ("old-2", "Grace")] {
        let user = blog::testing::model::new_user(id.into(), name.into());
        app.state.store.create(Container::Users, id, &user).await.unwrap();
    }
    // Nothing holds Ada's name yet, so a new user may take it: then it is theirs.
    let newcomer = app.user("ada").await;
    let replayed = blog::testing::changefeed::processor::replay_users(&app.state).await.unwrap();
    assert_eq!(replayed, 3);
    for (name, holder) in [("Ada", newcomer.as_str()), ("Grace", "old-2")] {
        let reservation = reservation_id(&normalize_username(name));
        let found = app
            .state
            .store
            .read::<Reservation>(Container::Users, &reservation, &reservation)
            .await
            .unwrap();
        assert_eq!(found.map(|r| r.owner_id).as_deref(), Some(holder), "{name}");
    }
    app.post("/api/users", json!({"username": "GRACE"})).await.problem(409);
    // Again: nothing changes.
    assert_eq!(blog::testing::changefeed::processor::replay_users(&app.state).await.unwrap(), 3);
}
