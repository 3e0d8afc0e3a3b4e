//! One `Idempotency-Key`, one request, on the real binary: a key is remembered per caller
//! across every write and every item (a reuse anywhere is 422, and writes nothing), across a
//! restart; and a repeat whose item has been deleted since is not found, never its remains.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use common::binary::Handler;
use reqwest::Method;
use serde_json::{Value, json};

/// A caller of the JSON API signed in as `user`.
struct Caller<'a> {
    base: &'a str,
    user: &'a str,
    client: reqwest::Client,
}

impl Caller<'_> {
    fn new<'a>(base: &'a str, user: &'a str) -> Caller<'a> {
        Caller { base, user, client: reqwest::Client::new() }
    }

    /// Sends a write with `key`; its status, `Location` and body (`null` for none).
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        key: &str,
    ) -> (u16, Option<String>, Value) {
        let mut request = self
            .client
            .request(method, format!("{}/api{path}", self.base))
            .header("x-dev-user", self.user)
            .header("idempotency-key", key);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer = request.send().await.unwrap();
        let status = answer.status().as_u16();
        let location =
            answer.headers().get("location").map(|value| value.to_str().unwrap().to_owned());
        (status, location, answer.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let answer = self.client.get(format!("{}/api{path}", self.base)).send().await.unwrap();
        (answer.status().as_u16(), answer.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, key: &str, title: &str) -> String {
        let body = json!({"userId": self.user, "title": title, "content": "text"});
        let (status, _, post) = self.send(Method::POST, "/posts", Some(body), key).await;
        assert_eq!(status, 201, "{post}");
        post["id"].as_str().unwrap().to_owned()
    }
}

fn reused(answer: &(u16, Option<String>, Value)) -> bool {
    answer.0 == 422
        && answer.2["detail"]
            .as_str()
            .is_some_and(|detail| detail.contains("already used for another request"))
}

#[tokio::test]
async fn a_key_used_on_one_post_writes_nothing_on_another() {
    let data = tempfile::tempdir().unwrap();
    let blog = Handler::start(data.path(), &[]);
    let alice = Caller::new(&blog.base, "alice");
    assert_eq!(
        alice.send(Method::POST, "/users", Some(json!({"username": "alice"})), "k-user").await.0,
        201
    );
    let (first, second) =
        (alice.post("k-first", "First").await, alice.post("k-second", "Second").await);
    let comment = json!({"userId": "alice", "content": "hello"});
    assert_eq!(
        alice
            .send(
                Method::POST,
                &format!("/posts/{first}/comments"),
                Some(comment.clone()),
                "k-comment"
            )
            .await
            .0,
        201
    );

    // The comment's key on the other post (C3), a like there (C4), and its deletion (C7).
    let again = alice
        .send(Method::POST, &format!("/posts/{second}/comments"), Some(comment), "k-comment")
        .await;
    assert!(reused(&again), "{again:?}");
    let like = alice
        .send(
            Method::POST,
            &format!("/posts/{second}/likes"),
            Some(json!({"userId": "alice"})),
            "k-comment",
        )
        .await;
    assert!(reused(&like), "{like:?}");
    let deletion = alice.send(Method::DELETE, &format!("/posts/{second}"), None, "k-first").await;
    assert!(reused(&deletion), "the first post's key deletes no second post: {deletion:?}");
    let (status, read) = alice.get(&format!("/posts/{second}")).await;
    assert_eq!(
        (status, read["commentCount"].as_u64(), read["likeCount"].as_u64()),
        (200, Some(0), Some(0)),
        "{read}"
    );

    // The user's key on a post (C1, then C2), and a post's key on the user (C1 edit).
    let post = json!({"userId": "alice", "title": "Third", "content": "text"});
    assert!(reused(&alice.send(Method::POST, "/posts", Some(post), "k-user").await));
    assert!(reused(
        &alice
            .send(Method::PUT, "/users/alice", Some(json!({"username": "Alicia"})), "k-second")
            .await
    ));
    assert_eq!(alice.get("/users/alice").await.1["username"], "alice");
    blog.stop();

    // Remembered across a restart.
    let blog = Handler::start(data.path(), &[]);
    let alice = Caller::new(&blog.base, "alice");
    assert!(reused(
        &alice.send(Method::DELETE, &format!("/posts/{second}"), None, "k-comment").await
    ));
    // Another caller's key of the same name is another key.
    let bob = Caller::new(&blog.base, "bob");
    assert_eq!(
        bob.send(Method::POST, "/users", Some(json!({"username": "bob"})), "k-comment").await.0,
        201
    );
    let (posts_listed, listed) = alice.get("/users/alice/posts").await;
    assert_eq!(
        (posts_listed, listed["items"].as_array().map(Vec::len)),
        (200, Some(2)),
        "{listed}"
    );
}

#[tokio::test]
async fn a_keyed_post_sent_again_after_its_deletion_is_not_found() {
    let data = tempfile::tempdir().unwrap();
    let blog = Handler::start(data.path(), &[]);
    let alice = Caller::new(&blog.base, "alice");
    assert_eq!(
        alice.send(Method::POST, "/users", Some(json!({"username": "alice"})), "k-user").await.0,
        201
    );
    let body = json!({"userId": "alice", "title": "Soon gone", "content": "text"});
    let (status, location, post) =
        alice.send(Method::POST, "/posts", Some(body.clone()), "k-post").await;
    assert_eq!(status, 201);
    let id = post["id"].as_str().unwrap();
    assert_eq!(
        alice.send(Method::POST, "/posts", Some(body.clone()), "k-post").await,
        (201, location, post.clone())
    );
    assert_eq!(alice.send(Method::DELETE, &format!("/posts/{id}"), None, "k-delete").await.0, 204);

    let (status, location, problem) =
        alice.send(Method::POST, "/posts", Some(body), "k-post").await;
    assert_eq!((status, location), (404, None), "{problem}");
    assert!(problem["detail"].as_str().unwrap().contains("has been deleted since"), "{problem}");
    assert_eq!(alice.get(&format!("/posts/{id}")).await.0, 404);
    // The edit of the deleted post, sent again, is not found as well.
    let edit = alice
        .send(
            Method::PUT,
            &format!("/posts/{id}"),
            Some(json!({"title": "t", "content": "c"})),
            "k-edit",
        )
        .await;
    assert_eq!(edit.0, 404, "{edit:?}");
}
