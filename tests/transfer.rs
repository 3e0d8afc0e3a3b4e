//! `handler export` and `handler import` (issue 33), on the real binary: a blog exported and
//! imported into an empty store shows the same API answers and the same pages; an import run
//! twice changes nothing; a malformed line is named and nothing is imported.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::binary::Handler;
use serde_json::{Value, json};

/// `handler <args>` on the embedded store in `data`.
fn handler(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_handler"))
        .args(args)
        .env("BLOG_DATA_DIR", data)
        .env("RUST_LOG", "warn")
        .env("NO_COLOR", "1")
        .env_remove("CosmosDB")
        .env_remove("CosmosDB__accountEndpoint")
        .env_remove("FUNCTIONS_CUSTOMHANDLER_PORT")
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

async fn send(client: &reqwest::Client, base: &str, caller: &str, method: reqwest::Method, path: &str, body: Value) -> Value {
    let response = client.request(method, format!("{base}{path}")).header("x-dev-user", caller).json(&body).send().await.unwrap();
    assert!(response.status().is_success(), "{path}: {}", response.status());
    response.json().await.unwrap_or(Value::Null)
}

/// The blog's answers that an export must carry over: for every user, Q1, Q3 and their page; for
/// every post, Q2, Q4, Q5 and its page; Q6 and the front page. Pages with the base address
/// taken out (each blog runs on a port of its own).
async fn everything_shown(base: &str, users: &[String], posts: &[String]) -> Vec<(String, String)> {
    let client = reqwest::Client::new();
    let mut paths = vec!["/api/feed?limit=100".to_owned(), "/".to_owned()];
    for user in users {
        paths.extend([format!("/api/users/{user}"), format!("/api/users/{user}/posts"), format!("/users/{user}")]);
    }
    for post in posts {
        paths.extend([
            format!("/api/posts/{post}"),
            format!("/api/posts/{post}/comments"),
            format!("/api/posts/{post}/likes"),
            format!("/posts/{post}"),
        ]);
    }
    let mut shown = Vec::new();
    for path in paths {
        let response = client.get(format!("{base}{path}")).send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap().replace(base, "BASE");
        shown.push((path, format!("{status} {text}")));
    }
    shown
}

/// Waits until the feed lists `count` posts (the copies follow the writes).
async fn until_the_feed_has(base: &str, count: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let feed: Value = reqwest::get(format!("{base}/api/feed?limit=100")).await.unwrap().json().await.unwrap();
        if feed["items"].as_array().map_or(0, Vec::len) == count {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "the feed never had {count} posts: {feed}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_export_imported_into_an_empty_store_shows_the_same_blog_and_twice_changes_nothing() {
    let (from, to, files) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let client = reqwest::Client::new();
    let blog = Handler::start(from.path(), &[]);
    let base = blog.base.clone();
    let mut users = Vec::new();
    for name in ["ada", "grace", "edsger"] {
        send(&client, &base, name, reqwest::Method::POST, "/api/users", json!({"username": name})).await;
        users.push(name.to_owned());
    }
    send(&client, &base, "grace", reqwest::Method::PUT, "/api/users/grace", json!({"username": "Grace Hopper"})).await;
    let mut posts = Vec::new();
    for (n, author) in ["ada", "grace", "ada", "edsger"].into_iter().enumerate() {
        let body = json!({"userId": author, "title": format!("Post {n}"), "content": format!("**Text** {n}.")});
        let post = send(&client, &base, author, reqwest::Method::POST, "/api/posts", body).await;
        posts.push(post["id"].as_str().unwrap().to_owned());
    }
    for (post, reader) in posts.iter().zip(["grace", "edsger", "grace", "ada"]) {
        let comment = json!({"userId": reader, "content": format!("{reader} was here")});
        send(&client, &base, reader, reqwest::Method::POST, &format!("/api/posts/{post}/comments"), comment).await;
        send(&client, &base, reader, reqwest::Method::POST, &format!("/api/posts/{post}/likes"), json!({"userId": reader})).await;
    }
    // A deleted post is not exported.
    let gone = send(
        &client,
        &base,
        "ada",
        reqwest::Method::POST,
        "/api/posts",
        json!({"userId": "ada", "title": "Gone", "content": "x"}),
    )
    .await;
    send(&client, &base, "ada", reqwest::Method::DELETE, &format!("/api/posts/{}", gone["id"].as_str().unwrap()), Value::Null)
        .await;
    until_the_feed_has(&base, 4).await;
    let before = everything_shown(&base, &users, &posts).await;
    assert!(before.iter().any(|(_, text)| text.contains("Grace Hopper")));
    blog.stop();

    let file = files.path().join("blog.jsonl");
    let exported = handler(from.path(), &["export", "--output", file.to_str().unwrap()]);
    assert!(exported.status.success(), "{}", stderr(&exported));
    assert!(stderr(&exported).contains("export: 3 users, 4 posts, 4 comments, 4 likes written to"), "{}", stderr(&exported));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("\"_etag\"") && !text.contains("Gone"), "no system properties, no deleted post");
    // The same on stdout.
    let to_stdout = handler(from.path(), &["export"]);
    assert_eq!(String::from_utf8_lossy(&to_stdout.stdout), text);

    for run in 1..=2 {
        let imported = handler(to.path(), &["import", file.to_str().unwrap()]);
        assert!(imported.status.success(), "run {run}: {}", stderr(&imported));
        assert!(
            stderr(&imported).contains("import: 3 users, 4 posts, 4 comments, 4 likes written, copies made"),
            "{}",
            stderr(&imported)
        );
        let blog = Handler::start(to.path(), &[]);
        until_the_feed_has(&blog.base, 4).await;
        let after = everything_shown(&blog.base, &users, &posts).await;
        for ((path, was), (_, is)) in before.iter().zip(&after) {
            assert_eq!(was, is, "run {run}: {path} shows another thing after the import");
        }
        // The names came with the users: a new user cannot take one.
        let taken = client
            .post(format!("{}/api/users", blog.base))
            .header("x-dev-user", "newcomer")
            .json(&json!({"username": "grace hopper"}))
            .send()
            .await
            .unwrap();
        assert_eq!(taken.status(), 409, "run {run}: the imported name is reserved");
        blog.stop();
    }
}

#[test]
fn a_malformed_line_is_named_and_nothing_is_imported() {
    let (to, files) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let file = files.path().join("broken.jsonl");
    let header = json!({"format": "cosmos-blog", "version": 1});
    let user = json!({"id": "ada", "type": "user", "userId": "ada", "username": "ada"});
    let cases = [
        (format!("{header}\n{user}\n{{\"id\": \"p\", \"type\": \"post\"\n"), "line 3: not JSON"),
        (format!("{header}\n{user}\n{{\"id\": \"p\", \"type\": \"post\"}}\n"), "line 3: not a \"post\" as the blog stores one"),
        (format!("{header}\n{user}\n{{\"type\": \"picture\"}}\n"), "line 3: `type` is \"picture\""),
        (
            format!(
                "{header}\n{{\"id\": \"c\", \"type\": \"comment\", \"postId\": \"p\", \"userId\": \"ada\", \"userUsername\": \"ada\", \"content\": \"x\", \"creationDate\": \"2026-01-01T00:00:00Z\"}}\n"
            ),
            "line 2: a comment of post \"p\", which no line before it holds",
        ),
        (format!("{user}\n"), "line 1: not the header"),
        (String::new(), "line 1: the file is empty"),
    ];
    for (text, said) in cases {
        std::fs::write(&file, &text).unwrap();
        let imported = handler(to.path(), &["import", file.to_str().unwrap()]);
        assert_eq!(imported.status.code(), Some(1), "{}", stderr(&imported));
        assert!(
            stderr(&imported).contains(said) && stderr(&imported).contains("nothing was imported"),
            "{said}: {}",
            stderr(&imported)
        );
    }
    let exported = handler(to.path(), &["export"]);
    assert_eq!(String::from_utf8_lossy(&exported.stdout).lines().count(), 1, "only the header: nothing was imported");
}

/// `handler lag` on the embedded store: with nothing delivering the change feed (the blog run
/// as under the Functions host, whose trigger is not there), the writes are counted as not yet
/// delivered, with the oldest one's age; once the local processors have run, nothing is.
#[tokio::test]
async fn lag_counts_the_changes_not_yet_delivered_and_is_zero_once_the_processors_ran() {
    let data = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    let fresh = handler(data.path(), &["lag"]);
    assert!(fresh.status.success(), "{}", stderr(&fresh));
    assert_eq!(String::from_utf8_lossy(&fresh.stdout), "PostsChangeFeed: up to date\nUsersChangeFeed: up to date\n");

    let blog = Handler::start(data.path(), &[("BLOG_CHANGE_FEED", "host")]);
    send(&client, &blog.base, "ada", reqwest::Method::POST, "/api/users", json!({"username": "ada"})).await;
    for n in 0..3 {
        let body = json!({"userId": "ada", "title": format!("Post {n}"), "content": "x"});
        send(&client, &blog.base, "ada", reqwest::Method::POST, "/api/posts", body).await;
    }
    blog.stop();
    let behind = handler(data.path(), &["lag"]);
    assert!(behind.status.success(), "{}", stderr(&behind));
    let said = String::from_utf8_lossy(&behind.stdout).into_owned();
    assert!(said.starts_with("PostsChangeFeed: 3 changes not delivered yet, the oldest written "), "{said}");
    // The user, and the name it reserved, in `users`.
    assert!(said.contains("\nUsersChangeFeed: ") && !said.contains("UsersChangeFeed: up to date"), "{said}");

    let blog = Handler::start(data.path(), &[]);
    until_the_feed_has(&blog.base, 3).await;
    blog.stop();
    let caught_up = handler(data.path(), &["lag"]);
    assert_eq!(String::from_utf8_lossy(&caught_up.stdout), "PostsChangeFeed: up to date\nUsersChangeFeed: up to date\n");
}
