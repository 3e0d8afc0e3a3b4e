//! The embedded store keeps every acknowledged write across a restart, also after `kill -9`.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use common::TestApp;
use serde_json::json;

#[tokio::test]
async fn everything_acknowledged_survives_a_restart() {
    let app = TestApp::start().await;
    let author = app.user("alice").await;
    let post = app.post_by(&author, "Hello").await;
    app.post(&format!("/api/posts/{post}/comments"), json!({"userId": author, "content": "first"})).await;
    app.post(&format!("/api/posts/{post}/likes"), json!({"userId": author})).await;
    app.put(&format!("/api/users/{author}"), json!({"username": "alice2"})).await;
    // Let the rename reach the post through the change feed, so the state is settled.
    let before = app.eventually(&format!("/api/posts/{post}"), |post| post["userUsername"] == "alice2").await.body;
    let temp = app.stop().await.unwrap();

    let app = TestApp::start_in(temp.path()).await;
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body, before);
    assert_eq!(app.get(&format!("/api/users/{author}")).await.body["username"], "alice2");
    assert_eq!(app.get(&format!("/api/posts/{post}/comments")).await.body["items"][0]["content"], "first");
    assert_eq!(app.get(&format!("/api/posts/{post}/likes")).await.body["items"].as_array().unwrap().len(), 1);
    // The restarted store goes on working: the like is still a like, the counters still move.
    app.post(&format!("/api/posts/{post}/likes"), json!({"userId": author})).await.problem(409);
    app.post(&format!("/api/posts/{post}/comments"), json!({"userId": author, "content": "second"})).await;
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body["commentCount"], 2);
    app.stop().await;
    drop(temp);
}

/// The real binary, as `cargo run` starts it, on `data_dir`; returns it with its base URL.
fn spawn_handler(data_dir: &std::path::Path) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_handler"))
        .env("BLOG_DATA_DIR", data_dir)
        .env("BLOG_LISTEN", "127.0.0.1:0")
        .env("BLOG_AUTH", "development")
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the handler binary starts");
    let stdout = BufReader::new(child.stdout.take().unwrap());
    for line in stdout.lines() {
        let line = line.unwrap();
        if let Some(at) = line.find("serving on http://") {
            let address = line[at + "serving on ".len()..].split_whitespace().next().unwrap();
            let url = address.trim_end_matches('/').to_owned();
            return (child, url);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the handler exited before serving");
}

/// A write to the spawned handler as `caller` (development sign-in); its answer's body.
async fn post_as(client: &reqwest::Client, base: &str, caller: &str, path: &str, body: serde_json::Value) -> serde_json::Value {
    let response = client.post(format!("{base}{path}")).header("x-dev-user", caller).json(&body).send().await.unwrap();
    assert!(response.status().is_success(), "{path}: {}", response.status());
    response.json().await.unwrap()
}

#[tokio::test]
async fn acknowledged_writes_survive_kill_9() {
    let data = tempfile::tempdir().unwrap();
    let (mut child, base) = spawn_handler(data.path());
    let client = reqwest::Client::new();
    let user = post_as(&client, &base, "alice-principal", "/api/users", json!({"username": "alice"})).await;
    let user_id = user["id"].as_str().unwrap();
    let mut posts = Vec::new();
    for n in 0..20 {
        let body = json!({"userId": user_id, "title": format!("post {n}"), "content": "body"});
        posts.push(post_as(&client, &base, user_id, "/api/posts", body).await);
    }
    child.kill().unwrap(); // SIGKILL: no shutdown code runs.
    child.wait().unwrap();

    let (mut child, base) = spawn_handler(data.path());
    for post in &posts {
        let read: serde_json::Value =
            client.get(format!("{base}/api/posts/{}", post["id"].as_str().unwrap())).send().await.unwrap().json().await.unwrap();
        assert_eq!(&read, post);
    }
    child.kill().unwrap();
    child.wait().unwrap();
}
