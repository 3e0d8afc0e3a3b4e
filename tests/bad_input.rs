//! Every bad input gets a problem+json answer that says what to fix, and writes nothing.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use common::TestApp;
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn malformed_bodies_are_refused_with_a_useful_detail() {
    let app = TestApp::start().await;
    let json_type = Some("application/json");

    let detail =
        app.raw(Method::POST, "/api/users", json_type, "{\"username\": ").await.problem(400);
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
    app.raw(Method::POST, "/api/users", Some("text/plain"), "{\"username\":\"a\"}")
        .await
        .problem(415);
    app.raw(Method::POST, "/api/users", None, "{\"username\":\"a\"}").await.problem(415);
    app.raw(
        Method::POST,
        "/api/users",
        json_type,
        &format!("{{\"username\":\"{}\"}}", "a".repeat(300_000)),
    )
    .await
    .problem(413);
    // The change-feed functions' routes, and their larger batch limit, exist only under the host;
    // locally the path is no route's, and nothing of its body is read: 404 at once.
    let unrouted = app.raw(Method::POST, "/PostsChangeFeed", json_type, &"a".repeat(300_000)).await;
    assert_eq!(unrouted.status, 404);
}

#[tokio::test]
async fn post_fields_have_limits() {
    let app = TestApp::start().await;
    let author = app.user("alice").await;
    let detail = app
        .post("/api/posts", json!({"userId": author, "title": "t".repeat(201), "content": "c"}))
        .await
        .problem(400);
    assert!(detail.contains("title") && detail.contains("200"), "{detail}");
    let detail = app
        .post("/api/posts", json!({"userId": author, "title": "t", "content": "c".repeat(20_001)}))
        .await
        .problem(400);
    assert!(detail.contains("content") && detail.contains("20000"), "{detail}");
    app.post("/api/posts", json!({"userId": author, "title": "t", "content": "c".repeat(20_000)}))
        .await;
    let detail = app.post("/api/posts", json!({"userId": author, "title": "t"})).await.problem(400);
    assert!(detail.contains("content"), "{detail}");
    let detail = app
        .post("/api/posts", json!({"userId": "a/b", "title": "t", "content": "c"}))
        .await
        .problem(400);
    assert!(detail.contains("userId"), "{detail}");
    let post = app.post_by(&author, "Hello").await;
    let detail = app
        .put(
            &format!("/api/posts/{post}"),
            json!({"title": "t", "content": "c", "commentCount": 99}),
        )
        .await
        .problem(400);
    assert!(detail.contains("commentCount"), "counters cannot be set by a client: {detail}");
    let detail = app
        .post(
            &format!("/api/posts/{post}/comments"),
            json!({"userId": author, "content": "c".repeat(2_001)}),
        )
        .await
        .problem(400);
    assert!(detail.contains("2000"), "{detail}");
    assert_eq!(
        app.get(&format!("/api/posts/{post}")).await.body["commentCount"],
        0,
        "nothing was written"
    );
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
async fn unknown_routes_or_methods_are_problems() {
    let app = TestApp::start().await;
    app.get("/api/nothing").await.problem(404);
    // Outside the API a person followed a link: an HTML page says so (tests/pages/rendering.rs).
    let page = app.get("/nothing").await;
    assert_eq!(
        (page.status.as_u16(), page.header("content-type")),
        (404, Some("text/html; charset=utf-8"))
    );
    let detail = app.send(Method::DELETE, "/api/users/u1", None).await.problem(405);
    assert!(detail.contains("DELETE"), "{detail}");
    app.send(Method::PATCH, "/api/feed", None).await.problem(405);
}

/// Clients that send their headers and then trickle the body hold their own connections, never
/// a place in flight: with every place's worth of them open, reads and writes are still served,
/// and each slow body is cut off with 408 once it falls behind the minimum rate (`MIN_RATE` after
/// `GRACE`). (503 past `max_in_flight` is
/// tested in src/http/mod.rs, where a handler can be held.)
#[tokio::test]
async fn slow_bodies_time_out_taking_no_place() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let dir = tempfile::tempdir().unwrap();
    let app =
        TestApp::start_configured(blog::Config { max_in_flight: 4, ..TestApp::config(dir.path()) })
            .await;
    let mut slow = Vec::new();
    for n in 0..16 {
        let mut stream =
            tokio::net::TcpStream::connect(app.base.trim_start_matches("http://")).await.unwrap();
        let head = format!(
            "POST /api/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-dev-user: slow{n}\r\nExpect: 100-continue\r\nContent-Length: 20\r\n\r\n{{\"user"
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        slow.push(stream);
    }
    // Every slow body is being read, four times as many as there are places.
    for stream in &mut slow {
        common::wire::body_being_read(stream).await;
    }
    assert_eq!(app.get("/api/feed").await.status, reqwest::StatusCode::OK, "reads are served");
    app.user("alice").await; // and writes

    let mut answer = Vec::new();
    slow[0].read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("came slower than"), "{answer}");
}

#[tokio::test]
async fn usernames_must_show_as_what_they_are() {
    let app = TestApp::start().await;
    // (Every default-ignorable code point, the ones names are compared without: an Arabic letter
    // mark or a Khmer inherent vowel alone would otherwise be a name that compares as empty.)
    for invisible in [
        "\u{200B}",
        "\u{200B}\u{200D} \u{FEFF}",
        "\u{3164}",
        "\u{2060}\u{FE0F}",
        "\u{061C}",
        "\u{17B4}\u{2065}",
    ] {
        let detail = app.post("/api/users", json!({"username": invisible})).await.problem(400);
        assert!(detail.contains("visible") || detail.contains("empty"), "{invisible:?}: {detail}");
    }
    for reordering in ["admin\u{202E}txt.exe", "\u{2067}alice", "a\u{202A}b"] {
        let detail = app.post("/api/users", json!({"username": reordering})).await.problem(400);
        assert!(detail.contains("bidirectional"), "{reordering:?}: {detail}");
    }
    // Scripts that need joiners and marks are fine when something shows.
    for fine in ["José", "علي\u{200F}", "👩\u{200D}💻 dev", "Zoë"] {
        assert_eq!(
            app.post("/api/users", json!({"username": fine})).await.status,
            reqwest::StatusCode::CREATED,
            "{fine:?}"
        );
    }
}
