//! Every kind of damage the embedded store refuses at start, in every container: the refusal
//! the real binary prints, the command it advises run as printed (`sh -c`, with `handler` on
//! the PATH, as an operator pasting it would), and then the blog starts, serves, and what it
//! serves is consistent: each post's counts equal its lists, in `posts` and in its copies, each
//! tag's page lists the posts that carry the tag, each author's list their posts, and no
//! comment, like or copy is left of a post that is gone.
//!
//! One blog is written per test and copied for each case, so that every case damages the same
//! blog: every item kind of every container (a user, a username's reservation, a post's copy,
//! a request record, a post, a comment, a like, a deleted post's tombstone, a dead letter).

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::TestApp;
use common::binary::Handler;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

mod items;
mod records;
mod repair;

use records::*;
use repair::*;

/// The tags the blog's posts carry, in normal form.
const TAGS: [&str; 2] = ["kites", "модель"];

/// A stopped blog that holds an item of every kind in every container, settled (every copy
/// made); its users' ids.
struct Template {
    dir: tempfile::TempDir,
    users: Vec<String>,
}

async fn template() -> Template {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let tagged = |author: &str, title: &str, tags: Value| json!({"userId": author, "title": title, "content": "Some.", "tags": tags});
    let first = app.post("/api/posts", tagged(&alice, "Kites", json!(["Kites", "модель"]))).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    let first = first.body["id"].as_str().unwrap().to_owned();
    let second =
        app.post("/api/posts", tagged(&bob, "More kites", json!(["KITES"]))).await.body["id"]
            .as_str()
            .unwrap()
            .to_owned();
    for (author, post) in [(&alice, &first), (&bob, &first), (&alice, &second)] {
        let comment = app
            .post(
                &format!("/api/posts/{post}/comments"),
                json!({"userId": author, "content": "A comment."}),
            )
            .await;
        assert_eq!(comment.status, StatusCode::CREATED, "{}", comment.body);
    }
    let liked = app
        .send_as(
            Some(&bob),
            Method::POST,
            &format!("/api/posts/{first}/likes"),
            Some(json!({"userId": bob})),
        )
        .await;
    assert!(liked.status.is_success(), "{}", liked.body);
    // Request records, in `users` and in `posts`: writes sent with an Idempotency-Key.
    for (path, body) in [
        ("/api/users".to_owned(), json!({"username": "carol"})),
        (format!("/api/posts/{second}/comments"), json!({"userId": bob, "content": "Keyed."})),
    ] {
        let caller = if path == "/api/users" { "carol-principal" } else { bob.as_str() };
        let request = app
            .client
            .post(format!("{}{path}", app.base))
            .header("x-dev-user", caller)
            .header("idempotency-key", "k1");
        let answer = common::read(request.json(&body).send().await.unwrap()).await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    }
    // A deleted post: its tombstone stays in `posts` until its time to live.
    let gone = app.post("/api/posts", tagged(&alice, "Gone", json!(["Kites"]))).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let deleted =
        app.send_as(Some(&alice), Method::DELETE, &format!("/api/posts/{gone}"), None).await;
    assert!(deleted.status.is_success(), "{}", deleted.body);
    // A dead letter, in `leases`: what the API cannot write.
    blog::testing::changefeed::dead_letters::set_aside(
        &app.state.store,
        "PostsChangeFeed",
        "a post",
        "a test's",
        "{}",
    )
    .await
    .unwrap();
    app.eventually("/api/feed", |feed| {
        let items = feed["items"].as_array().unwrap();
        items.len() == 2
            && items.iter().any(|copy| copy["id"] == first.as_str() && copy["commentCount"] == 2)
    })
    .await;
    app.eventually("/api/tags/kites/posts", |page| page["items"].as_array().unwrap().len() == 2)
        .await;
    app.eventually(&format!("/api/posts/{second}"), |post| post["commentCount"] == 2).await;
    Template { dir: app.stop().await.unwrap(), users: vec![alice, bob] }
}

impl Template {
    /// A copy of the blog's data directory, to damage.
    fn copy(&self) -> tempfile::TempDir {
        let copy = tempfile::tempdir().unwrap();
        copy_dir(self.dir.path(), copy.path());
        copy
    }

    /// One item of each kind in each container (a kind: its `type`, or a request record), and
    /// each container: what the cases damage.
    fn items(&self) -> Vec<Item> {
        let mut kinds: BTreeMap<(String, String), Item> = BTreeMap::new();
        for item in rows(self.dir.path()) {
            let kind = if item.id.starts_with("request-") {
                "request record".to_owned()
            } else {
                let doc: Value = serde_json::from_str(&item.doc).unwrap();
                match doc["type"].as_str() {
                    _ if doc["scriptFence"] == true => "script fence".to_owned(),
                    Some("post") if doc["deleted"] == true => "tombstone".to_owned(),
                    Some(kind) => kind.to_owned(),
                    None => "untyped".to_owned(),
                }
            };
            kinds.entry((item.container.clone(), kind)).or_insert(item);
        }
        let containers: Vec<&str> = kinds.keys().map(|(container, _)| container.as_str()).collect();
        for container in ["users", "posts", "feed", "tags", "leases"] {
            assert!(
                containers.contains(&container),
                "the blog holds an item in {container}: {:?}",
                kinds.keys()
            );
        }
        for kind in ["user", "username", "post", "tombstone", "comment", "like", "request record"] {
            assert!(
                kinds.keys().any(|(_, held)| held == kind),
                "the blog holds a {kind}: {:?}",
                kinds.keys()
            );
        }
        kinds.into_values().collect()
    }
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
