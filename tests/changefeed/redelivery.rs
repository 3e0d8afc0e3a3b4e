//! A batch replayed, late or not processed before a restart leaves the same copies, and a
//! tombstone keeps them removed.

use super::*;

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
async fn a_late_live_version_does_not_undo_a_tombstone() {
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

#[tokio::test]
async fn a_restart_delivers_what_was_not_processed() {
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
    let rebuilt = blog::testing::changefeed::processor::rebuild_copies(&app.state, &mut |_| {})
        .await
        .unwrap();
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
