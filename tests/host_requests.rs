//! The API as the Functions host forwards it (`enableForwardingHttpRequest`): requests built the
//! way the host builds them (see common/host.rs), and the answers a client gets through it.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use blog::{AuthMode, Config};
use common::TestApp;
use common::host;
use reqwest::StatusCode;
use serde_json::json;

async fn platform_app(dir: &std::path::Path) -> TestApp {
    TestApp::start_configured(Config { auth: AuthMode::Platform, ..TestApp::config(dir) }).await
}

#[tokio::test]
async fn requests_come_through_as_forwarded() {
    let dir = tempfile::tempdir().unwrap();
    let app = platform_app(dir.path()).await;
    let principal = "6f1c2b3a-0d4e-4f5a-9b8c-7d6e5f4a3b2c";
    let identity = host::signed_in(principal);
    let mut headers: Vec<(&str, &str)> =
        identity.iter().map(|(name, value)| (*name, value.as_str())).collect();
    headers.push(("Content-Type", "application/json"));
    headers.push(("User-Agent", "curl/8.5.0"));
    let created =
        host::forward(&app, "POST", "/api/users", &headers, Some(br#"{"username":"alice"}"#)).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(
        created.body["id"], principal,
        "the user is the principal App Service Authentication vouched for"
    );

    let read = host::forward(
        &app,
        "GET",
        &format!("/api/users/{principal}"),
        &[("Accept", "application/json")],
        None,
    )
    .await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.body);
    assert_eq!(read.body["username"], "alice");
}

#[tokio::test]
async fn a_write_whose_body_the_host_did_not_forward_is_answered_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let app = platform_app(dir.path()).await;
    let identity = host::signed_in("p1");
    let mut headers: Vec<(&str, &str)> =
        identity.iter().map(|(name, value)| (*name, value.as_str())).collect();
    headers.push(("Content-Type", "application/json"));

    // The client sent its body chunked: the host copies a body only when Content-Length > 0,
    // so the request arrives without one, and without Content-Length.
    let answer = host::forward(&app, "POST", "/api/users", &headers, None).await;
    let detail = answer.problem(411);
    assert!(detail.contains("Content-Length") && detail.contains("chunked"), "{detail}");

    // A body of zero bytes arrives as `Content-Length: 0`, without Content-Type.
    let detail = host::forward(&app, "POST", "/api/users", &headers, Some(b"")).await.problem(400);
    assert!(detail.contains("empty"), "{detail}");
    assert_eq!(app.get("/api/users/p1").await.status, StatusCode::NOT_FOUND, "nothing was written");
}

#[tokio::test]
async fn a_repeated_query_parameter_is_refused_however_the_host_sends_it() {
    let app = TestApp::start().await;
    // Locally, as the client sent it.
    let detail = app.get("/api/feed?limit=5&limit=6").await.problem(400);
    assert!(detail.contains("more than once"), "{detail}");
    // Through the host: one key, the values joined with a comma (and encoded).
    let detail = host::forward(&app, "GET", "/api/feed?limit=5%2C6", &[], None).await.problem(400);
    assert!(detail.contains("give it once"), "{detail}");
    let detail = app.get("/api/feed?limit=%2B5").await.problem(400);
    assert!(detail.contains("limit"), "{detail}");
    assert_eq!(
        host::forward(&app, "GET", "/api/feed?limit=5", &[], None).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_body_declared_in_another_charset_is_refused() {
    let app = TestApp::start().await;
    let detail = app
        .raw(
            reqwest::Method::POST,
            "/api/users",
            Some("application/json; charset=utf-16"),
            r#"{"username":"a"}"#,
        )
        .await
        .problem(415);
    assert!(detail.contains("UTF-8"), "{detail}");
    let ok = app
        .raw(
            reqwest::Method::POST,
            "/api/users",
            Some("application/json; charset=UTF-8"),
            r#"{"username":"a"}"#,
        )
        .await;
    assert_eq!(ok.status, StatusCode::CREATED, "{}", ok.body);
}

#[tokio::test]
async fn the_lists_of_a_post_that_does_not_exist_are_404() {
    let app = TestApp::start().await;
    for list in ["comments", "likes"] {
        let detail = app.get(&format!("/api/posts/no-such-post/{list}")).await.problem(404);
        assert!(detail.contains("no-such-post"), "{detail}");
    }
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Quiet").await;
    for list in ["comments", "likes"] {
        let empty = app.get(&format!("/api/posts/{post}/{list}")).await;
        assert_eq!(empty.status, StatusCode::OK);
        assert_eq!(empty.body, json!({"items": [], "continuationToken": null}));
        // "no comments yet" needs one point read to tell from "no such post".
        assert_eq!(empty.operations(), 2, "{list}");
    }
    app.post(&format!("/api/posts/{post}/comments"), json!({"userId": alice, "content": "First"}))
        .await;
    let listed = app.get(&format!("/api/posts/{post}/comments")).await;
    assert_eq!(listed.body["items"].as_array().unwrap().len(), 1);
    assert_eq!(listed.operations(), 1, "a post with comments costs its one query, nothing more");
}
