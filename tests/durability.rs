//! The embedded store keeps every acknowledged write across a restart, also after `kill -9`.

mod common;

use common::TestApp;
use common::binary::Handler;
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

/// A write to the spawned handler as `caller` (development sign-in); its answer's body.
async fn post_as(client: &reqwest::Client, base: &str, caller: &str, path: &str, body: serde_json::Value) -> serde_json::Value {
    let response = client.post(format!("{base}{path}")).header("x-dev-user", caller).json(&body).send().await.unwrap();
    assert!(response.status().is_success(), "{path}: {}", response.status());
    response.json().await.unwrap()
}

#[tokio::test]
async fn acknowledged_writes_survive_kill_9() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let base = handler.base.clone();
    let client = reqwest::Client::new();
    let user = post_as(&client, &base, "alice-principal", "/api/users", json!({"username": "alice"})).await;
    let user_id = user["id"].as_str().unwrap();
    let mut posts = Vec::new();
    for n in 0..20 {
        let body = json!({"userId": user_id, "title": format!("post {n}"), "content": "body"});
        posts.push(post_as(&client, &base, user_id, "/api/posts", body).await);
    }
    handler.kill_9();

    let handler = Handler::start(data.path(), &[]);
    let base = &handler.base;
    for post in &posts {
        let read: serde_json::Value =
            client.get(format!("{base}/api/posts/{}", post["id"].as_str().unwrap())).send().await.unwrap().json().await.unwrap();
        assert_eq!(&read, post);
    }
}

/// Why `Blog::open` refused `dir`; panics if it started.
async fn refusal(dir: &std::path::Path) -> String {
    match blog::Blog::open(&TestApp::config(dir)).await {
        Ok(_) => panic!("the handler started on {}", dir.display()),
        Err(error) => error.to_string(),
    }
}

#[tokio::test]
async fn numbering_goes_on_after_every_processor_position() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let first = app.post_by(&alice, "first").await;
    app.eventually("/api/feed", |feed| feed["items"][0]["id"] == first.as_str()).await;
    let temp = app.stop().await.unwrap();
    // Positions past the journal's last write, as processors that ran ahead of the disk left
    // them before a kill -9.
    for function in ["PostsChangeFeed", "UsersChangeFeed"] {
        let path = temp.path().join(format!("changefeed-{function}.json"));
        let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let ahead = saved["delivered_through"].as_u64().unwrap() + 20;
        std::fs::write(&path, json!({"delivered_through": ahead}).to_string()).unwrap();
    }

    let app = TestApp::start_in(temp.path()).await;
    let second = app.post_by(&alice, "second").await;
    app.eventually("/api/feed", |feed| feed["items"][0]["id"] == second.as_str()).await;
    app.put(&format!("/api/users/{alice}"), json!({"username": "alice2"})).await;
    app.eventually(&format!("/api/posts/{second}"), |post| post["userUsername"] == "alice2").await;
    app.stop().await;
}

#[tokio::test]
async fn a_corrupt_checkpoint_refuses_to_start_and_says_what_to_do() {
    let data = tempfile::tempdir().unwrap();
    let path = data.path().join("changefeed-PostsChangeFeed.json");
    std::fs::write(&path, r#"{"delivered_thr"#).unwrap();
    let error = refusal(data.path()).await;
    assert!(error.contains(&path.display().to_string()) && error.to_lowercase().contains("delete it"), "{error}");
}

/// A position no write number can reach (here `u64::MAX`) is refused at start like any damage,
/// naming the file and what to do; before, the handler started and then hung, chasing a
/// numbering that had wrapped around.
#[tokio::test]
async fn a_checkpoint_out_of_range_refuses_to_start_and_says_what_to_do() {
    let data = tempfile::tempdir().unwrap();
    let path = data.path().join("changefeed-UsersChangeFeed.json");
    std::fs::write(&path, r#"{"delivered_through":18446744073709551615}"#).unwrap();
    let error = refusal(data.path()).await;
    assert!(error.contains(&path.display().to_string()) && error.contains("beyond any write number"), "{error}");
    assert!(error.to_lowercase().contains("delete it"), "{error}");
}

#[tokio::test]
async fn a_damaged_journal_line_is_refused_with_its_file_and_line() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "first").await;
    app.post(&format!("/api/posts/{post}/comments"), json!({"userId": alice, "content": "a comment"})).await;
    app.eventually("/api/feed", |feed| feed["items"][0]["commentCount"] == 1).await;
    let temp = app.stop().await.unwrap();
    let journal = temp.path().join("journal.jsonl");
    let original = std::fs::read_to_string(&journal).unwrap();
    let lines: Vec<&str> = original.lines().collect();
    let comment = lines.iter().position(|line| line.contains("a comment")).unwrap();
    assert!(comment + 1 < lines.len(), "the damaged line is not the last");
    let seq_at = lines[comment].find(r#""seq":"#).unwrap() + r#""seq":"#.len();
    let damaged = [
        lines[comment].replacen(r#""doc""#, r#""dox""#, 1),
        lines[comment].replacen("a comment", "a commenu", 1),
        format!("{}9{}", &lines[comment][..seq_at], &lines[comment][seq_at..]),
    ];
    for line in damaged {
        let mut text: Vec<&str> = lines.clone();
        text[comment] = &line;
        std::fs::write(&journal, text.join("\n") + "\n").unwrap();
        let error = refusal(temp.path()).await;
        assert!(error.contains(&journal.display().to_string()) && error.contains(&format!("line {}", comment + 1)), "{error}");
    }
    std::fs::write(&journal, &original).unwrap();
    let app = TestApp::start_in(temp.path()).await;
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body["commentCount"], 1);
    app.stop().await;
}

#[tokio::test]
async fn a_line_torn_inside_a_character_is_a_torn_line() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Café crème").await;
    app.eventually("/api/feed", |feed| feed["items"][0]["id"] == post.as_str()).await;
    let temp = app.stop().await.unwrap();
    let journal = temp.path().join("journal.jsonl");
    let mut bytes = std::fs::read(&journal).unwrap();
    let last_line = bytes[..bytes.len() - 1].iter().rposition(|byte| *byte == b'\n').map_or(0, |at| at + 1);
    let inside = last_line + bytes[last_line..].iter().position(|byte| *byte >= 0x80).expect("the last write names the post") + 1;
    bytes.truncate(inside);
    std::fs::write(&journal, bytes).unwrap();

    let app = TestApp::start_in(temp.path()).await;
    assert_eq!(app.get(&format!("/api/users/{alice}")).await.body["username"], "alice");
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body["title"], "Café crème");
    app.stop().await;
}

#[tokio::test]
async fn a_missing_snapshot_or_journal_is_detected() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let temp = app.stop().await.unwrap();
    let app = TestApp::start_in(temp.path()).await;
    app.post_by(&alice, "written after a restart").await;
    app.stop().await;
    for name in ["journal.jsonl", "snapshot.jsonl"] {
        let path = temp.path().join(name);
        let kept = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let error = refusal(temp.path()).await;
        assert!(error.contains(&path.display().to_string()) && error.contains("missing"), "{error}");
        std::fs::write(&path, kept).unwrap();
    }
    let app = TestApp::start_in(temp.path()).await;
    assert_eq!(app.get(&format!("/api/users/{alice}")).await.body["username"], "alice");
    app.stop().await;
}
