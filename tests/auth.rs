//! Reads are public; a write acts as its authenticated caller and touches only what the caller
//! owns. Every refused write leaves the store as it was.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use blog::testing::cosmos::{Container, QuerySpec};
use blog::{AuthMode, Config};
use common::TestApp;
use reqwest::Method;
use serde_json::{Value, json};

/// Every item of a container, for checking that nothing was written.
async fn everything(app: &TestApp, container: Container) -> Vec<Value> {
    let query = QuerySpec { sql: "SELECT c.id, c._etag FROM c".into(), parameters: vec![] };
    let mut items = app.state.store.query_all_partitions(container, query).await.unwrap();
    items.sort_by_key(|item| item.to_string());
    items
}

async fn snapshot(app: &TestApp) -> (Vec<Value>, Vec<Value>) {
    (everything(app, Container::Users).await, everything(app, Container::Posts).await)
}

#[tokio::test]
async fn anonymous_writes_are_401() {
    let app = TestApp::start_as_host().await;
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Hello").await;
    let before = snapshot(&app).await;

    let writes = [
        (Method::POST, "/api/users".to_owned(), json!({"username": "x"})),
        (Method::PUT, format!("/api/users/{alice}"), json!({"username": "x"})),
        (
            Method::POST,
            "/api/posts".to_owned(),
            json!({"userId": alice, "title": "t", "content": "c"}),
        ),
        (Method::PUT, format!("/api/posts/{post}"), json!({"title": "t", "content": "c"})),
        (
            Method::POST,
            format!("/api/posts/{post}/comments"),
            json!({"userId": alice, "content": "c"}),
        ),
        (Method::POST, format!("/api/posts/{post}/likes"), json!({"userId": alice})),
    ];
    for (method, path, body) in writes {
        let detail = app.send_as(None, method.clone(), &path, Some(body)).await.problem(401);
        assert!(detail.contains("x-dev-user"), "{method} {path}: {detail}");
    }
    assert_eq!(snapshot(&app).await, before, "nothing was written");
    for path in
        [format!("/api/users/{alice}"), format!("/api/posts/{post}"), "/api/feed".to_owned()]
    {
        assert_eq!(
            app.send_as(None, Method::GET, &path, None).await.status.as_u16(),
            200,
            "{path} is public"
        );
    }
}

#[tokio::test]
async fn a_user_is_the_callers_own_principal() {
    let app = TestApp::start_as_host().await;
    let created = app
        .send_as(
            Some("principal-1"),
            Method::POST,
            "/api/users",
            Some(json!({"username": "alice"})),
        )
        .await;
    assert_eq!(created.status.as_u16(), 201);
    assert_eq!(created.body["id"], "principal-1");
    let detail = app
        .send_as(
            Some("principal-1"),
            Method::POST,
            "/api/users",
            Some(json!({"username": "again"})),
        )
        .await
        .problem(409);
    assert!(detail.contains("PUT"), "{detail}");
    assert_eq!(app.get("/api/users/principal-1").await.body["username"], "alice");
    app.send_as(Some("a/b"), Method::POST, "/api/users", Some(json!({"username": "x"})))
        .await
        .problem(403);
    let me = app.send_as(Some("principal-1"), Method::GET, "/api/me", None).await;
    assert_eq!((me.status.as_u16(), me.operations()), (200, 0));
    assert_eq!(me.body, json!({"userId": "principal-1"}));
    app.send_as(Some("principal-1"), Method::GET, "/api/me?x=1", None).await.problem(400);
    app.send_as(None, Method::GET, "/api/me", None).await.problem(401);
}

#[tokio::test]
async fn only_owners_write_what_they_own() {
    let app = TestApp::start_as_host().await;
    let alice = app.user("alice").await;
    let mallory = app.user("mallory").await;
    let post = app.post_by(&alice, "Alice's").await;
    let before = snapshot(&app).await;

    let forbidden = [
        (Method::PUT, format!("/api/users/{alice}"), json!({"username": "pwned"})),
        (
            Method::POST,
            "/api/posts".to_owned(),
            json!({"userId": alice, "title": "as alice", "content": "c"}),
        ),
        (Method::PUT, format!("/api/posts/{post}"), json!({"title": "pwned", "content": "c"})),
        (
            Method::POST,
            format!("/api/posts/{post}/comments"),
            json!({"userId": alice, "content": "as alice"}),
        ),
        (Method::POST, format!("/api/posts/{post}/likes"), json!({"userId": alice})),
    ];
    for (method, path, body) in forbidden {
        let detail =
            app.send_as(Some(&mallory), method.clone(), &path, Some(body)).await.problem(403);
        assert!(detail.contains(&mallory), "{method} {path}: {detail}");
    }
    assert_eq!(snapshot(&app).await, before, "nothing was written");

    // As themselves, mallory may comment on and like alice's post.
    let comment = app
        .send_as(
            Some(&mallory),
            Method::POST,
            &format!("/api/posts/{post}/comments"),
            Some(json!({"userId": mallory, "content": "hi"})),
        )
        .await;
    assert_eq!(comment.status.as_u16(), 201);
    let like = app
        .send_as(
            Some(&mallory),
            Method::POST,
            &format!("/api/posts/{post}/likes"),
            Some(json!({"userId": mallory})),
        )
        .await;
    assert_eq!(like.status.as_u16(), 201);
}

#[tokio::test]
async fn with_no_authentication_configured_every_write_is_401() {
    let dir = tempfile::tempdir().unwrap();
    let app =
        TestApp::start_configured(Config { auth: AuthMode::None, ..TestApp::config(dir.path()) })
            .await;
    let detail = app
        .send_as(Some("anyone"), Method::POST, "/api/users", Some(json!({"username": "x"})))
        .await
        .problem(401);
    assert!(detail.contains("BLOG_AUTH=development"), "{detail}");
    assert!(everything(&app, Container::Users).await.is_empty());
}

#[tokio::test]
async fn platform_authentication_trusts_only_the_platforms_header() {
    let dir = tempfile::tempdir().unwrap();
    let app = TestApp::start_configured(Config {
        auth: AuthMode::Platform,
        ..TestApp::config(dir.path())
    })
    .await;
    // The development header means nothing here.
    app.send_as(Some("dev"), Method::POST, "/api/users", Some(json!({"username": "x"})))
        .await
        .problem(401);
    // As the Functions host forwards it, with the headers App Service Authentication sets.
    let identity = common::host::signed_in("00000000-0000-0000-0000-0000000000aa");
    let mut headers: Vec<(&str, &str)> =
        identity.iter().map(|(name, value)| (*name, value.as_str())).collect();
    headers.push(("Content-Type", "application/json"));
    let answer = common::host::forward(
        &app,
        "POST",
        "/api/users",
        &headers,
        Some(br#"{"username":"entra"}"#),
    )
    .await;
    assert_eq!(answer.status.as_u16(), 201, "{}", answer.body);
    assert_eq!(answer.body["id"], "00000000-0000-0000-0000-0000000000aa");
    // A client with a token learns the id its writes must name.
    let headers: Vec<(&str, &str)> =
        identity.iter().map(|(name, value)| (*name, value.as_str())).collect();
    let me = common::host::forward(&app, "GET", "/api/me", &headers, None).await;
    assert_eq!(me.status.as_u16(), 200, "{}", me.body);
    assert_eq!(me.body, json!({"userId": "00000000-0000-0000-0000-0000000000aa"}));
    app.send_as(None, Method::GET, "/api/me", None).await.problem(401);
    app.send_as(Some("dev"), Method::GET, "/api/me", None).await.problem(401);
}
