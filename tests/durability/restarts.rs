//! What was acknowledged survives a restart or `kill -9`: writes, concurrent writes, and
//! pictures, none of them shown half written.

use super::*;

#[tokio::test]
async fn everything_acknowledged_survives_a_restart() {
    let app = TestApp::start().await;
    let author = app.user("alice").await;
    let post = app.post_by(&author, "Hello").await;
    app.post(&format!("/api/posts/{post}/comments"), json!({"userId": author, "content": "first"}))
        .await;
    app.post(&format!("/api/posts/{post}/likes"), json!({"userId": author})).await;
    app.put(&format!("/api/users/{author}"), json!({"username": "alice2"})).await;
    // Let the rename reach the post through the change feed, so the state is settled.
    let before = app
        .eventually(&format!("/api/posts/{post}"), |post| post["userUsername"] == "alice2")
        .await
        .body;
    let temp = app.stop().await.unwrap();

    let app = TestApp::start_in(temp.path()).await;
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body, before);
    assert_eq!(app.get(&format!("/api/users/{author}")).await.body["username"], "alice2");
    assert_eq!(
        app.get(&format!("/api/posts/{post}/comments")).await.body["items"][0]["content"],
        "first"
    );
    assert_eq!(
        app.get(&format!("/api/posts/{post}/likes")).await.body["items"].as_array().unwrap().len(),
        1
    );
    // The restarted store goes on working: the like is still a like, the counters still move.
    app.post(&format!("/api/posts/{post}/likes"), json!({"userId": author})).await.problem(409);
    app.post(
        &format!("/api/posts/{post}/comments"),
        json!({"userId": author, "content": "second"}),
    )
    .await;
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body["commentCount"], 2);
    app.stop().await;
    drop(temp);
}

/// A write to the spawned handler as `caller` (development sign-in); its answer's body.
async fn post_as(
    client: &reqwest::Client,
    base: &str,
    caller: &str,
    path: &str,
    body: serde_json::Value,
) -> serde_json::Value {
    let response = client
        .post(format!("{base}{path}"))
        .header("x-dev-user", caller)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{path}: {}", response.status());
    response.json().await.unwrap()
}

#[tokio::test]
async fn acknowledged_writes_survive_kill_9() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let base = handler.base.clone();
    let client = reqwest::Client::new();
    let user =
        post_as(&client, &base, "alice-principal", "/api/users", json!({"username": "alice"}))
            .await;
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
        let read: serde_json::Value = client
            .get(format!("{base}/api/posts/{}", post["id"].as_str().unwrap()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(&read, post);
    }
}

/// `kill -9` while 8 clients write at once (their commits grouped): every write acknowledged
/// before the kill is there after the restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_concurrent_writes_survive_kill_9() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let base = handler.base.clone();
    let client = reqwest::Client::new();
    let user =
        post_as(&client, &base, "alice-principal", "/api/users", json!({"username": "alice"}))
            .await;
    let user_id = user["id"].as_str().unwrap().to_owned();
    let acknowledged = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let writers: Vec<_> = (0..8)
        .map(|writer| {
            let (client, base, user_id, acknowledged) = (client.clone(), base.clone(), user_id.clone(), acknowledged.clone());
            tokio::spawn(async move {
                for n in 0.. {
                    let body = json!({"userId": user_id, "title": format!("post {writer}.{n}"), "content": "body"});
                    let Ok(response) =
                        client.post(format!("{base}/api/posts")).header("x-dev-user", &user_id).json(&body).send().await
                    else {
                        return;
                    };
                    if !response.status().is_success() {
                        return;
                    }
                    let Ok(post) = response.json::<serde_json::Value>().await else { return };
                    acknowledged.lock().unwrap().push(post);
                }
            })
        })
        .collect();
    // Bounded, so that writers that stop acknowledging fail the test instead of hanging it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while acknowledged.lock().unwrap().len() < 80 {
        assert!(std::time::Instant::now() < deadline, "80 writes were never acknowledged");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    handler.kill_9();
    for writer in writers {
        writer.await.unwrap();
    }

    let handler = Handler::start(data.path(), &[]);
    let posts = acknowledged.lock().unwrap().clone();
    for post in &posts {
        let response = client
            .get(format!("{}/api/posts/{}", handler.base, post["id"].as_str().unwrap()))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "an acknowledged post is lost: {post}");
        assert_eq!(&response.json::<serde_json::Value>().await.unwrap(), post);
    }
}

/// `kill -9` while pictures are being uploaded. Every picture answered 201 before the
/// kill is served whole after the restart; no name holds a half picture (every stored file's
/// bytes hash to its name); and what the cut-short uploads left is gone at the start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pictures_answered_before_kill_9_are_whole() {
    use sha2::{Digest, Sha256};
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let base = handler.base.clone();
    let client = reqwest::Client::new();
    post_as(&client, &base, "painter", "/api/users", json!({"username": "painter"})).await;
    let post = post_as(
        &client,
        &base,
        "painter",
        "/api/posts",
        json!({"userId": "painter", "title": "Many", "content": "x"}),
    )
    .await;
    let post_id = post["id"].as_str().unwrap().to_owned();
    // Pictures of about 1.5 MB each (noise does not compress), sent eight at a time.
    let answered = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut uploads = Vec::new();
    for n in 0..24_u32 {
        let (client, base, post_id, answered) =
            (client.clone(), base.clone(), post_id.clone(), answered.clone());
        uploads.push(tokio::spawn(async move {
            let png = common::noise_png(700, n);
            let sent = client
                .post(format!("{base}/api/posts/{post_id}/pictures"))
                .header("x-dev-user", "painter")
                .header("content-type", "image/png")
                .body(png)
                .send()
                .await;
            if let Ok(response) = sent
                && response.status() == reqwest::StatusCode::CREATED
                && let Ok(body) = response.json::<serde_json::Value>().await
            {
                answered.lock().unwrap().push(body["url"].as_str().unwrap().to_owned());
            }
        }));
    }
    // Killed once some are answered and others are still being written.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while answered.lock().unwrap().len() < 3 {
        assert!(std::time::Instant::now() < deadline, "no picture was answered");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    handler.kill_9();
    for upload in uploads {
        let _ = upload.await;
    }
    let answered = answered.lock().unwrap().clone();
    assert!(answered.len() < 24, "the kill came while uploads were under way");

    let handler = Handler::start(data.path(), &[]);
    for url in &answered {
        let response = client.get(format!("{}{url}", handler.base)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{url} was answered 201 before the kill");
        let bytes = response.bytes().await.unwrap();
        let hash = url.rsplit('/').next().unwrap().split('-').next().unwrap();
        assert_eq!(blog_hex(&Sha256::digest(&bytes)), hash, "{url} is whole");
    }
    let post_dir = data.path().join("pictures").join("painter").join(&post_id);
    for entry in std::fs::read_dir(&post_dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(
            !name.starts_with('.'),
            "{name}: what a cut-short upload left is removed at the start"
        );
        let bytes = std::fs::read(entry.path()).unwrap();
        // (A phones' variant is named by its picture's hash; these 700-pixel pictures have none.
        // Their small copies for the lists are too: each must decode whole, at its size.)
        if let Some(size) =
            ["128x96", "256x192"].into_iter().find(|size| name.ends_with(&format!("-{size}.png")))
        {
            let small =
                image::load_from_memory(&bytes).unwrap_or_else(|error| panic!("{name}: {error}"));
            assert_eq!(format!("{}x{}", small.width(), small.height()), size, "{name} is whole");
            continue;
        }
        assert_eq!(
            blog_hex(&Sha256::digest(&bytes)),
            &name[..64],
            "{name} holds the picture its name says, whole"
        );
    }
}

fn blog_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
