//! `handler export` and `handler import`, on the real binary: a blog exported and imported into
//! an empty store shows the same API answers, pages and pictures (byte for byte); an import run
//! twice changes nothing, and one killed halfway is finished by running it again; an export
//! killed leaves no file cut short; a file cut short, put after another or changed is refused;
//! an item the API would never write, or a picture an upload would refuse, is refused naming its
//! line and field, and nothing is imported (the store exported before and after is the same);
//! a picture is stored as an upload's preparation makes it; an import killed at any step keeps
//! the blog from starting until the same import, run again, has finished it.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::binary::Handler;
use serde_json::{Value, json};

mod pictures;
mod refused_imports;
mod resumed;
mod round_trip;
mod support;

use support::*;

/// `handler <args>` on the embedded store in `data`.
fn handler(data: &Path, args: &[&str]) -> Output {
    handler_with(data, args, &[])
}

/// `handler <args>` on the embedded store in `data`, with `extra` settings.
fn handler_with(data: &Path, args: &[&str], extra: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_handler"));
    command
        .args(args)
        .env("BLOG_DATA_DIR", data)
        .env("RUST_LOG", "warn")
        .env("NO_COLOR", "1")
        .env_remove("CosmosDB")
        .env_remove("CosmosDB__accountEndpoint")
        .env_remove("FUNCTIONS_CUSTOMHANDLER_PORT")
        .env_remove("BLOG_TEST_KILL_AFTER");
    for (name, value) in extra {
        command.env(name, value);
    }
    command.output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

async fn send(
    client: &reqwest::Client,
    base: &str,
    caller: &str,
    method: reqwest::Method,
    path: &str,
    body: Value,
) -> Value {
    let response = client
        .request(method, format!("{base}{path}"))
        .header("x-dev-user", caller)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{path}: {}", response.status());
    response.json().await.unwrap_or(Value::Null)
}

/// The blog's answers that an export must carry over: for every user, Q1, Q3 and their page; for
/// every post, Q2, Q4, Q5 and its page; Q6 and the front page. Pages with the base address
/// taken out (each blog runs on a port of its own).
async fn everything_shown(base: &str, users: &[String], posts: &[String]) -> Vec<(String, String)> {
    let client = reqwest::Client::new();
    let mut paths = vec![
        "/api/feed?limit=100".to_owned(),
        "/".to_owned(),
        "/api/tags/rust/posts".to_owned(),
        "/tags/rust".to_owned(),
    ];
    for user in users {
        paths.extend([
            format!("/api/users/{user}"),
            format!("/api/users/{user}/posts"),
            format!("/users/{user}"),
        ]);
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
        // The blog's address, as requests reach it and as its links name it (the listener's).
        let public = base.replace("127.0.0.1", "localhost");
        let text = response.text().await.unwrap().replace(base, "BASE").replace(&public, "BASE");
        shown.push((path, format!("{status} {text}")));
    }
    shown
}

/// Waits until the tag's list has `count` posts (the copies follow the writes).
async fn until_the_tag_has(base: &str, tag: &str, count: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let list: Value = reqwest::get(format!("{base}/api/tags/{tag}/posts"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if list["items"].as_array().is_some_and(|items| items.len() == count) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the tag {tag} never listed {count} posts: {list}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Waits until the feed lists `count` posts (the copies follow the writes).
async fn until_the_feed_has(base: &str, count: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let feed: Value =
            reqwest::get(format!("{base}/api/feed?limit=100")).await.unwrap().json().await.unwrap();
        if feed["items"].as_array().map_or(0, Vec::len) == count {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "the feed never had {count} posts: {feed}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The bytes at `path` of the blog at `base`, with the status.
async fn bytes_at(base: &str, path: &str) -> (u16, Vec<u8>) {
    let response = reqwest::get(format!("{base}{path}")).await.unwrap();
    (response.status().as_u16(), response.bytes().await.unwrap().to_vec())
}

/// What a blog shows: its users, its posts, the API's answers and pages about them, and its
/// pictures' paths with their bytes.
struct Shown {
    users: Vec<String>,
    posts: Vec<String>,
    answers: Vec<(String, String)>,
    pictures: Vec<(String, Vec<u8>)>,
}
