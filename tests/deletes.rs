//! C5 (unlike), C6 (delete a comment) and C7 (delete a post): each counter moves with its item
//! in one transaction, only the owner may, and a deleted post's copies and items all go.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use blog::testing::cosmos::{Container, PageRequest, QuerySpec};
use blog::testing::model::DELETED_POST_TTL_SECS;
use blog::testing::scripts::StoredProcedure;
use common::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

async fn like(app: &TestApp, post: &str, user: &str) -> StatusCode {
    app.post(&format!("/api/posts/{post}/likes"), json!({"userId": user})).await.status
}

async fn comment(app: &TestApp, post: &str, user: &str, content: &str) -> String {
    let answer = app
        .post(&format!("/api/posts/{post}/comments"), json!({"userId": user, "content": content}))
        .await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    answer.body["id"].as_str().unwrap().to_owned()
}

async fn delete_as(app: &TestApp, caller: &str, path: &str) -> common::Answer {
    app.send_as(Some(caller), Method::DELETE, path, None).await
}

async fn counts(app: &TestApp, post: &str) -> (u64, u64) {
    let post = app.get(&format!("/api/posts/{post}")).await.body;
    (post["commentCount"].as_u64().unwrap(), post["likeCount"].as_u64().unwrap())
}

/// Every item left in a post's partition (the in-process scripts' fence item aside).
async fn items_in_partition(app: &TestApp, post: &str) -> Vec<Value> {
    let query = QuerySpec {
        sql: "SELECT * FROM c WHERE NOT IS_DEFINED(c.scriptFence)".into(),
        parameters: vec![],
    };
    let page = PageRequest { size: 1000, continuation: None };
    app.state.store.query_documents(Container::Posts, post, query, page).await.unwrap().0
}

#[tokio::test]
async fn only_the_liker_takes_back_a_like() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let post = app.post_by(&alice, "Hello").await;
    assert_eq!(like(&app, &post, &bob).await, StatusCode::CREATED);
    assert_eq!(like(&app, &post, &alice).await, StatusCode::CREATED);

    let path = format!("/api/posts/{post}/likes/{bob}");
    let refused = delete_as(&app, &alice, &path).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert_eq!(
        app.send_as(None, Method::DELETE, &path, None).await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(counts(&app, &post).await, (0, 2), "a refused unlike moves nothing");

    let answer = delete_as(&app, &bob, &path).await;
    assert_eq!(answer.status, StatusCode::NO_CONTENT, "{}", answer.body);
    assert_eq!(counts(&app, &post).await, (0, 1));
    let likes = app.get(&format!("/api/posts/{post}/likes")).await.body;
    assert_eq!(
        likes["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|like| like["userId"].clone())
            .collect::<Vec<_>>(),
        [json!(alice)]
    );

    let again = delete_as(&app, &bob, &path).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    assert!(again.problem(404).contains("does not like"), "{}", again.body);
    assert_eq!(counts(&app, &post).await, (0, 1), "a second unlike moves nothing");

    // The like can be given again, and an unlike of a post that does not exist is 404.
    assert_eq!(like(&app, &post, &bob).await, StatusCode::CREATED);
    assert_eq!(counts(&app, &post).await, (0, 2));
    let missing = delete_as(&app, &bob, &format!("/api/posts/no-such-post/likes/{bob}")).await;
    assert!(missing.problem(404).contains("no post"), "{}", missing.body);
    let bad = delete_as(&app, &bob, &format!("/api/posts/{post}/likes/a%23b")).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.body);
}

#[tokio::test]
async fn a_comment_is_deleted_by_its_author_or_the_posts_author_only() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let post = app.post_by(&alice, "Hello").await;
    let first = comment(&app, &post, &bob, "first").await;
    let second = comment(&app, &post, &bob, "second").await;
    let third = comment(&app, &post, &carol, "third").await;

    let refused = delete_as(&app, &carol, &format!("/api/posts/{post}/comments/{first}")).await;
    assert!(refused.problem(403).contains(&format!("{bob:?}")), "{}", refused.body);
    assert_eq!(counts(&app, &post).await, (3, 0));

    assert_eq!(
        delete_as(&app, &bob, &format!("/api/posts/{post}/comments/{first}")).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(counts(&app, &post).await, (2, 0));
    // The post's author moderates the comments under the post.
    assert_eq!(
        delete_as(&app, &alice, &format!("/api/posts/{post}/comments/{second}")).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(counts(&app, &post).await, (1, 0));
    let listed = app.get(&format!("/api/posts/{post}/comments")).await.body;
    assert_eq!(
        listed["items"].as_array().unwrap().iter().map(|c| c["id"].clone()).collect::<Vec<_>>(),
        [json!(third)]
    );

    let again = delete_as(&app, &bob, &format!("/api/posts/{post}/comments/{first}")).await;
    assert!(again.problem(404).contains("no comment"), "{}", again.body);
    // A like's id is not a comment's.
    assert_eq!(like(&app, &post, &bob).await, StatusCode::CREATED);
    let not_a_comment =
        delete_as(&app, &bob, &format!("/api/posts/{post}/comments/like-{bob}")).await;
    assert_eq!(not_a_comment.status, StatusCode::NOT_FOUND, "{}", not_a_comment.body);
    assert_eq!(counts(&app, &post).await, (1, 1), "nothing moved");
}

/// The C7 case: a post with 25 comments and 100 likes goes whole, and its copies in
/// `users` (Q3) and `feed` (Q6) follow through the change feed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_deleted_post_takes_everything_under_it() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let keep = app.post_by(&alice, "Kept").await;
    let post = app.post_by(&alice, "Doomed").await;
    for n in 0..25 {
        comment(&app, &post, &alice, &format!("comment {n}")).await;
    }
    for n in 0..100 {
        let fan = app.user(&format!("fan {n}")).await;
        assert_eq!(like(&app, &post, &fan).await, StatusCode::CREATED);
    }
    assert_eq!(counts(&app, &post).await, (25, 100));
    let has = |list: &Value, id: &str| {
        list["items"].as_array().unwrap().iter().any(|item| item["id"] == id)
    };
    app.eventually(&format!("/api/users/{alice}/posts"), |list| has(list, &post)).await;
    app.eventually("/api/feed", |list| has(list, &post)).await;

    let bob = app.user("bob").await;
    let refused = delete_as(&app, &bob, &format!("/api/posts/{post}")).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert_eq!(counts(&app, &post).await, (25, 100), "a refused delete deletes nothing");

    let deleted = delete_as(&app, &alice, &format!("/api/posts/{post}")).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.body);
    for path in [
        format!("/api/posts/{post}"),
        format!("/api/posts/{post}/comments"),
        format!("/api/posts/{post}/likes"),
    ] {
        let answer = app.get(&path).await;
        assert!(answer.problem(404).contains("no post"), "GET {path}: {}", answer.body);
    }
    assert_eq!(like(&app, &post, &bob).await, StatusCode::NOT_FOUND);
    let late_comment = app
        .post(&format!("/api/posts/{post}/comments"), json!({"userId": alice, "content": "late"}))
        .await;
    assert_eq!(late_comment.status, StatusCode::NOT_FOUND);
    let edit =
        app.put(&format!("/api/posts/{post}"), json!({"title": "back", "content": "again"})).await;
    assert_eq!(edit.status, StatusCode::NOT_FOUND);
    app.eventually(&format!("/api/users/{alice}/posts"), |list| {
        !has(list, &post) && has(list, &keep)
    })
    .await;
    app.eventually("/api/feed", |list| !has(list, &post) && has(list, &keep)).await;
    assert_eq!(
        delete_as(&app, &alice, &format!("/api/posts/{post}")).await.status,
        StatusCode::NOT_FOUND
    );

    // What is left is the tombstone alone, with no words of the post, until its time to live.
    let left = items_in_partition(&app, &post).await;
    assert_eq!(left.len(), 1, "{left:?}");
    let tombstone = &left[0];
    assert_eq!(
        (tombstone["deleted"].clone(), tombstone["ttl"].clone()),
        (json!(true), json!(DELETED_POST_TTL_SECS))
    );
    assert_eq!((tombstone["title"].as_str(), tombstone["content"].as_str()), (Some(""), Some("")));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    assert_eq!(
        app.state
            .store
            .embedded()
            .unwrap()
            .remove_expired(&app.state.store, now + u64::from(DELETED_POST_TTL_SECS) - 60)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        app.state
            .store
            .embedded()
            .unwrap()
            .remove_expired(&app.state.store, now + u64::from(DELETED_POST_TTL_SECS) + 60)
            .await
            .unwrap(),
        1
    );
    assert!(items_in_partition(&app, &post).await.is_empty());
    assert_eq!(counts(&app, &keep).await, (0, 0));
}

/// A DELETE whose request stops after its first run (the handler crashed) leaves a tombstone
/// with comments and likes under it: the change feed delivers the tombstone and finishes.
#[tokio::test]
async fn a_deletion_cut_short_is_finished_by_the_change_feed() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Long").await;
    // More than one run deletes on the embedded store (98 items per transaction).
    for n in 0..150 {
        comment(&app, &post, &alice, &format!("comment {n}")).await;
    }
    let has = |list: &Value| {
        list["items"].as_array().unwrap().iter().any(|item| item["id"] == post.as_str())
    };
    app.eventually("/api/feed", has).await;

    let args = (post.as_str(), alice.as_str(), DELETED_POST_TTL_SECS);
    let first_run =
        app.state.scripts.execute(StoredProcedure::DeletePost, &post, args).await.unwrap();
    assert_eq!(
        (first_run["marked"].clone(), first_run["done"].clone()),
        (json!(true), json!(false)),
        "{first_run}"
    );
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.status, StatusCode::NOT_FOUND);

    app.eventually("/api/feed", |list| !has(list)).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while items_in_partition(&app, &post).await.len() > 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "the change feed did not finish the deletion"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(app.get(&format!("/api/posts/{post}/comments")).await.status, StatusCode::NOT_FOUND);
}

/// A repeated DELETE also finishes what a cut-short one left (204), and only then is 404.
#[tokio::test]
async fn a_repeated_delete_finishes_a_cut_short_one() {
    let app = TestApp::start_as_host().await;
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Long").await;
    for n in 0..120 {
        comment(&app, &post, &alice, &format!("comment {n}")).await;
    }
    let args = (post.as_str(), alice.as_str(), DELETED_POST_TTL_SECS);
    app.state.scripts.execute(StoredProcedure::DeletePost, &post, args).await.unwrap();
    assert!(items_in_partition(&app, &post).await.len() > 1);
    assert_eq!(
        delete_as(&app, &alice, &format!("/api/posts/{post}")).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(items_in_partition(&app, &post).await.len(), 1);
    assert_eq!(
        delete_as(&app, &alice, &format!("/api/posts/{post}")).await.status,
        StatusCode::NOT_FOUND
    );
}

/// The feed after a deletion: the hole is not refilled from older posts (that would take a
/// query across every partition of `posts`); the next new post fills it.
#[tokio::test]
async fn a_deleted_post_leaves_a_hole_in_the_feed_until_the_next_post() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let mut posts = Vec::new();
    for n in 0..101 {
        posts.push(app.post_by(&alice, &format!("post {n}")).await);
    }
    let ids = |list: &Value| -> Vec<String> {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let newest: Vec<String> = posts.iter().rev().take(100).cloned().collect();
    app.eventually("/api/feed?limit=100", |feed| ids(feed) == newest).await;

    let deleted = posts.pop().unwrap();
    assert_eq!(
        delete_as(&app, &alice, &format!("/api/posts/{deleted}")).await.status,
        StatusCode::NO_CONTENT
    );
    let left: Vec<String> = newest[1..].to_vec();
    app.eventually("/api/feed?limit=100", |feed| ids(feed) == left).await;

    let next = app.post_by(&alice, "the next post").await;
    let refilled: Vec<String> = std::iter::once(next).chain(left).collect();
    app.eventually("/api/feed?limit=100", |feed| ids(feed) == refilled).await;
}
