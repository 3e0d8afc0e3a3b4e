//! Every bad input gets a problem+json answer that says what to fix, and writes nothing.

mod common;

use common::TestApp;
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn malformed_bodies_are_refused_with_a_useful_detail() {
    let app = TestApp::start().await;
    let json_type = Some("application/json");

    let detail = app.raw(Method::POST, "/api/users", json_type, "{\"username\": ").await.problem(400);
    assert!(detail.contains("not valid"), "{detail}");
    let detail = app.raw(Method::POST, "/api/users", json_type, "{}").await.problem(400);
    assert!(detail.contains("username"), "{detail}");
    let detail = app.post("/api/users", json!({"username": "a", "admin": true})).await.problem(400);
    assert!(detail.contains("admin"), "unknown fields are named: {detail}");
    let detail = app.post("/api/users", json!({"username": 42})).await.problem(400);
    assert!(detail.contains("string"), "{detail}");
    let detail = app.post("/api/users", json!({"username": "  "})).await.problem(400);
    assert!(detail.contains("empty"), "{detail}");
    let detail = app.post("/api/users", json!({"username": "x".repeat(65)})).await.problem(400);
    assert!(detail.contains("64"), "the limit is stated: {detail}");
    let detail = app.post("/api/users", json!({"username": "a\u{7}b"})).await.problem(400);
    assert!(detail.contains("control"), "{detail}");
    app.raw(Method::POST, "/api/users", Some("text/plain"), "{\"username\":\"a\"}").await.problem(415);
    app.raw(Method::POST, "/api/users", None, "{\"username\":\"a\"}").await.problem(415);
    app.raw(Method::POST, "/api/users", json_type, &format!("{{\"username\":\"{}\"}}", "a".repeat(300_000))).await.problem(413);
}

#[tokio::test]
async fn post_fields_have_limits() {
    let app = TestApp::start().await;
    let author = app.user("alice").await;
    let detail = app.post("/api/posts", json!({"userId": author, "title": "t".repeat(201), "content": "c"})).await.problem(400);
    assert!(detail.contains("title") && detail.contains("200"), "{detail}");
    let detail =
        app.post("/api/posts", json!({"userId": author, "title": "t", "content": "c".repeat(20_001)})).await.problem(400);
    assert!(detail.contains("content") && detail.contains("20000"), "{detail}");
    app.post("/api/posts", json!({"userId": author, "title": "t", "content": "c".repeat(20_000)})).await;
    let detail = app.post("/api/posts", json!({"userId": author, "title": "t"})).await.problem(400);
    assert!(detail.contains("content"), "{detail}");
    let detail = app.post("/api/posts", json!({"userId": "a/b", "title": "t", "content": "c"})).await.problem(400);
    assert!(detail.contains("userId"), "{detail}");
    let post = app.post_by(&author, "Hello").await;
    let detail =
        app.put(&format!("/api/posts/{post}"), json!({"title": "t", "content": "c", "commentCount": 99})).await.problem(400);
    assert!(detail.contains("commentCount"), "counters cannot be set by a client: {detail}");
    let detail = app
        .post(&format!("/api/posts/{post}/comments"), json!({"userId": author, "content": "c".repeat(2_001)}))
        .await
        .problem(400);
    assert!(detail.contains("2000"), "{detail}");
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body["commentCount"], 0, "nothing was written");
}

#[tokio::test]
async fn ids_cosmos_cannot_store_are_refused_in_paths() {
    let app = TestApp::start().await;
    for id in ["a%23b", "a%3Fb", "a%5Cb", "a%2Fb", "a%00b", "%20"] {
        let detail = app.get(&format!("/api/users/{id}")).await.problem(400);
        assert!(detail.contains("id"), "{id}: {detail}");
    }
    app.get(&format!("/api/posts/{}", "x".repeat(256))).await.problem(400);
}

#[tokio::test]
async fn unknown_routes_and_wrong_methods_are_problems() {
    let app = TestApp::start().await;
    app.get("/api/nothing").await.problem(404);
    app.get("/nothing").await.problem(404);
    let detail = app.send(Method::DELETE, "/api/users/u1", None).await.problem(405);
    assert!(detail.contains("DELETE"), "{detail}");
    app.send(Method::PATCH, "/api/feed", None).await.problem(405);
}

/// Past `max_in_flight` requests, the next is answered 503 at once instead of waiting in an
/// unbounded queue.
#[tokio::test]
async fn overload_is_answered_503_at_once() {
    use tokio::io::AsyncWriteExt;

    let dir = tempfile::tempdir().unwrap();
    let app = TestApp::start_configured(blog::config::Config { max_in_flight: 1, ..TestApp::config(dir.path()) }).await;
    // A request whose body is still on its way holds the only place.
    let mut slow = tokio::net::TcpStream::connect(app.base.trim_start_matches("http://")).await.unwrap();
    slow.write_all(b"POST /api/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-dev-user: slow\r\nContent-Length: 20\r\n\r\n{\"user")
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;

    let detail = app.get("/api/feed").await.problem(503);
    assert!(detail.contains("retry"), "{detail}");

    drop(slow);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(app.get("/api/feed").await.status, reqwest::StatusCode::OK, "the place is free again");
}
