//! Revisions: every edit keeps the version it replaced, in the post's partition and in the
//! edit's own transaction, up to the newest 20; its author lists them, reads one with what
//! changed since, and restores one (an edit, itself kept). Nobody else sees them.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use blog::testing::cosmos::{Container, PageRequest, QuerySpec};
use common::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

fn numbers(page: &Value) -> Vec<u64> {
    page["items"].as_array().unwrap().iter().map(|item| item["number"].as_u64().unwrap()).collect()
}

#[tokio::test]
async fn each_edit_keeps_the_version_it_replaced_for_its_author_alone() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "First title").await;
    let path = format!("/api/posts/{post}");
    for n in 1..=2 {
        let body =
            json!({"title": format!("Title {n}"), "content": format!("Some content.\nLine {n}.")});
        assert_eq!(app.put(&path, body).await.status, StatusCode::OK);
    }
    let revisions = format!("{path}/revisions");
    let listed = app.send_as(Some(&alice), Method::GET, &revisions, None).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    assert_eq!(numbers(&listed.body), [1, 0], "newest first");
    assert_eq!(listed.body["items"][1]["title"], "First title");
    assert_eq!(listed.body["items"][0]["title"], "Title 1");
    assert_eq!(listed.partitions(), "posts=1", "the post's partition alone");
    assert_eq!(listed.header("cache-control"), Some("private, no-cache"));

    let one = app.send_as(Some(&alice), Method::GET, &format!("{revisions}/1"), None).await;
    assert_eq!(one.status, StatusCode::OK, "{}", one.body);
    assert_eq!(one.body["titleNow"], "Title 2");
    assert_eq!(
        one.body["changes"],
        json!([
            {"change": "same", "line": "Some content."},
            {"change": "removed", "line": "Line 1."},
            {"change": "added", "line": "Line 2."},
        ])
    );

    // Nobody else: not the readers of the post, not its copies, not Q2.
    let bob = app.user("bob").await;
    app.send_as(Some(&bob), Method::GET, &revisions, None).await.problem(403);
    app.send_as(None, Method::GET, &revisions, None).await.problem(401);
    let read = app.get(&path).await.body;
    assert!(read.get("revisionCount").is_none(), "{read}");
    app.eventually("/api/feed", |feed| feed["items"][0]["title"] == "Title 2").await;
    app.send_as(Some(&alice), Method::GET, &format!("{revisions}/7"), None).await.problem(404);
    app.send_as(Some(&alice), Method::GET, &format!("{revisions}/x"), None).await.problem(400);

    // Restored: an edit back to it, which keeps what it replaced.
    let restored =
        app.send_as(Some(&alice), Method::POST, &format!("{revisions}/0/restore"), None).await;
    assert_eq!(restored.status, StatusCode::OK, "{}", restored.body);
    assert_eq!(restored.body["title"], "First title");
    let listed = app.send_as(Some(&alice), Method::GET, &revisions, None).await.body;
    assert_eq!(numbers(&listed), [2, 1, 0]);
    assert_eq!(listed["items"][0]["title"], "Title 2");

    // Deleted with the post.
    assert_eq!(app.send(Method::DELETE, &path, None).await.status, StatusCode::NO_CONTENT);
    let query =
        QuerySpec { sql: "SELECT * FROM c WHERE c.type = 'revision'".into(), parameters: vec![] };
    let page = PageRequest { size: 100, continuation: None };
    let left =
        app.state.store.query_documents(Container::Posts, &post, query, page).await.unwrap().0;
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn a_post_keeps_its_newest_twenty_revisions() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Title").await;
    let path = format!("/api/posts/{post}");
    for n in 0..23 {
        let body = json!({"title": format!("Title {n}"), "content": "Same."});
        assert_eq!(app.put(&path, body).await.status, StatusCode::OK);
    }
    let revisions = format!("{path}/revisions?limit=100");
    let listed = app.send_as(Some(&alice), Method::GET, &revisions, None).await.body;
    assert_eq!(numbers(&listed), (3..23).rev().collect::<Vec<u64>>(), "the oldest three dropped");
}

/// A restore and an edit at once: each is made on the other's version (the etag refuses a
/// write from a stale read, and it is made again), so neither is lost: the post is one of them,
/// and the other is a revision.
#[tokio::test]
async fn a_restore_racing_an_edit_loses_neither() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Original").await;
    let path = format!("/api/posts/{post}");
    let body = json!({"title": "Edited once", "content": "Some content."});
    assert_eq!(app.put(&path, body).await.status, StatusCode::OK);
    let restore = format!("{path}/revisions/0/restore");
    let racing = json!({"title": "Racing", "content": "Some content."});
    let (restored, edited) = tokio::join!(
        app.send_as(Some(&alice), Method::POST, &restore, None),
        app.put(&path, racing)
    );
    assert_eq!((restored.status, edited.status), (StatusCode::OK, StatusCode::OK));
    let now = app.get(&path).await.body["title"].as_str().unwrap().to_owned();
    let revisions = format!("{path}/revisions");
    let kept = app.send_as(Some(&alice), Method::GET, &revisions, None).await.body;
    let mut titles: Vec<String> = kept["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|revision| revision["title"].as_str().unwrap().to_owned())
        .collect();
    titles.push(now);
    titles.sort();
    assert_eq!(titles, ["Edited once", "Original", "Original", "Racing"], "{kept}");
}
