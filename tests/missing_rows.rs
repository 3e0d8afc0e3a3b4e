//! Rows deleted from `blog.sqlite` outside the handler: noticed at the next start, refused naming
//! what is missing, and the repair the refusal advises, run as it says, leaves a blog whose
//! counts equal its lists, with no orphan, which starts.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Output;

use common::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// A stopped blog: alice's post with three comments and bob's like, settled (the feed's copy
/// shows the counts). The post's id, alice's and bob's ids, and the directory.
struct Blog {
    post: String,
    alice: String,
    bob: String,
    dir: tempfile::TempDir,
}

async fn blog() -> Blog {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let post = app.post_by(&alice, "counted").await;
    for text in ["a comment", "b comment", "c comment"] {
        app.post(&format!("/api/posts/{post}/comments"), json!({"userId": alice, "content": text}))
            .await;
    }
    let liked = app
        .send_as(
            Some(&bob),
            Method::POST,
            &format!("/api/posts/{post}/likes"),
            Some(json!({"userId": bob})),
        )
        .await;
    assert!(liked.status.is_success(), "{}", liked.body);
    app.eventually("/api/feed", |feed| {
        feed["items"][0]["commentCount"] == 3 && feed["items"][0]["likeCount"] == 1
    })
    .await;
    Blog { post, alice, bob, dir: app.stop().await.unwrap() }
}

/// Runs `statement` on the stopped blog's database, as the sqlite3 shell would; returns how many
/// rows it changed.
fn sql(dir: &Path, statement: &str, params: &[&str]) -> usize {
    let database = rusqlite::Connection::open(dir.join("blog.sqlite")).unwrap();
    database.execute(statement, rusqlite::params_from_iter(params)).unwrap()
}

/// How many rows of `items` meet `condition`.
fn count(dir: &Path, condition: &str, params: &[&str]) -> i64 {
    let database = rusqlite::Connection::open(dir.join("blog.sqlite")).unwrap();
    database
        .query_row(
            &format!("SELECT count(*) FROM items WHERE {condition}"),
            rusqlite::params_from_iter(params),
            |row| row.get(0),
        )
        .unwrap()
}

/// Why `Blog::open` refused `dir`; panics if it started.
async fn refusal(dir: &Path) -> String {
    match blog::Blog::open(&TestApp::config(dir)).await {
        Ok(_) => panic!("the handler started on {}", dir.display()),
        Err(error) => blog::with_causes(&error),
    }
}

/// What the handler binary said refusing `dir`, as `handler <args>`.
fn refused_by_binary(args: &[&str], dir: &Path) -> String {
    let output = common::binary::run_to_end(args, dir);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!output.status.success(), "handler {args:?} succeeded: {said}");
    said
}

/// The command a refusal advises (between "`BLOG_DATA_DIR=" and "`, which"), run as an operator
/// pasting it would: by `sh`, with `handler` on the PATH, in `cwd`.
fn run_advised(message: &str, cwd: &Path) -> Output {
    common::binary::run_as_printed(common::binary::advised_command(message), cwd)
}

/// Every live post's counts equal its lists (Q2 against Q4 and Q5), in `posts` and in the feed's
/// copies.
async fn counts_equal_lists(app: &TestApp, post: &str) {
    let read = app.get(&format!("/api/posts/{post}")).await.body;
    let comments = app.get(&format!("/api/posts/{post}/comments")).await.body["items"]
        .as_array()
        .unwrap()
        .len();
    let likes =
        app.get(&format!("/api/posts/{post}/likes")).await.body["items"].as_array().unwrap().len();
    assert_eq!(
        (read["commentCount"].as_u64(), read["likeCount"].as_u64()),
        (Some(comments as u64), Some(likes as u64))
    );
    let feed = app.get("/api/feed").await.body;
    let copy = feed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|copy| copy["id"] == post)
        .expect("the feed's copy")
        .clone();
    assert_eq!(
        (&copy["commentCount"], &copy["likeCount"]),
        (&read["commentCount"], &read["likeCount"]),
        "the copy follows"
    );
}

#[tokio::test]
async fn a_deleted_comment_is_refused_naming_the_post() {
    let blog = blog().await;
    assert_eq!(sql(blog.dir.path(), "DELETE FROM items WHERE doc LIKE '%\"b comment\"%'", &[]), 1);
    let error = refusal(blog.dir.path()).await;
    assert!(
        error.contains(&format!("posts, partition {:?}: 1 of 5 items missing", blog.post)),
        "{error}"
    );
    assert!(error.contains("comments: its commentCount is 3, and 2 are listed"), "{error}");
    assert!(error.contains("handler repair") && error.contains("backup"), "{error}");
    // The binary, serving or running a command, refuses the same way.
    for args in [&[][..], &["lag"][..]] {
        let said = refused_by_binary(args, blog.dir.path());
        assert!(said.contains("comments: its commentCount is 3, and 2 are listed"), "{said}");
    }
}

#[tokio::test]
async fn the_advised_repair_after_a_deleted_comment_rebuilds_the_copies() {
    let blog = blog().await;
    sql(blog.dir.path(), "DELETE FROM items WHERE doc LIKE '%\"b comment\"%'", &[]);
    let error = refusal(blog.dir.path()).await;
    run_advised(&error, blog.dir.path());
    let app = TestApp::start_in(blog.dir.path()).await;
    assert_eq!(app.get(&format!("/api/posts/{}", blog.post)).await.body["commentCount"], 2);
    counts_equal_lists(&app, &blog.post).await;
    app.stop().await;
}

#[tokio::test]
async fn the_repair_of_a_deleted_reservation_reserves_the_name_again() {
    let blog = blog().await;
    let owner = format!("%\"ownerId\":\"{}\"%", blog.alice);
    let deleted = sql(
        blog.dir.path(),
        "DELETE FROM items WHERE container = 'users' AND doc LIKE ?1 AND doc LIKE '%\"type\":\"username\"%'",
        &[&owner],
    );
    assert_eq!(deleted, 1);
    let error = refusal(blog.dir.path()).await;
    assert!(
        error.contains("users, partition \"§username-")
            && error.contains("a username's reservation"),
        "{error}"
    );
    run_advised(&error, blog.dir.path());
    let app = TestApp::start_in(blog.dir.path()).await;
    let taken = app
        .send_as(
            Some(&blog.bob),
            Method::PUT,
            &format!("/api/users/{}", blog.bob),
            Some(json!({"username": "alice"})),
        )
        .await;
    assert_eq!(taken.status, StatusCode::CONFLICT, "alice's name is hers again: {}", taken.body);
    let stranger = app.post("/api/users", json!({"username": "Alice"})).await;
    assert_eq!(stranger.status, StatusCode::CONFLICT, "{}", stranger.body);
    app.stop().await;
}

#[tokio::test]
async fn the_repair_of_a_deleted_post_removes_what_was_under_it() {
    let blog = blog().await;
    assert_eq!(
        sql(
            blog.dir.path(),
            "DELETE FROM items WHERE container = 'posts' AND pk = ?1 AND id = ?1",
            &[&blog.post]
        ),
        1
    );
    let error = refusal(blog.dir.path()).await;
    assert!(
        error.contains(&format!(
            "the post {:?} itself, whose comments (3) and likes (1) are left",
            blog.post
        )),
        "{error}"
    );
    run_advised(&error, blog.dir.path());
    let orphans = count(
        blog.dir.path(),
        "container = 'posts' AND pk = ?1 AND doc NOT LIKE '%scriptFence%'",
        &[&blog.post],
    );
    assert_eq!(orphans, 0, "no comment or like of the post is left");
    let copies = count(
        blog.dir.path(),
        "container IN ('users', 'feed') AND doc LIKE ?1",
        &[&format!("%\"postId\":\"{}\"%", blog.post)],
    );
    assert_eq!(copies, 0, "no copy of the post is left");
    let app = TestApp::start_in(blog.dir.path()).await;
    assert_eq!(app.get(&format!("/api/posts/{}", blog.post)).await.status, StatusCode::NOT_FOUND);
    assert_eq!(app.get("/api/feed").await.body["items"], json!([]));
    assert_eq!(app.get(&format!("/api/users/{}/posts", blog.alice)).await.body["items"], json!([]));
    app.stop().await;
}

/// A deleted post's copies under its tags are orphans like its other copies: the repair removes
/// them, and the tag's page no longer lists the post.
#[tokio::test]
async fn the_repair_removes_a_deleted_posts_copies_under_its_tags() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let tagged = app
        .post(
            "/api/posts",
            json!({"userId": alice, "title": "Tagged", "content": "x", "tags": ["Kites"]}),
        )
        .await;
    assert_eq!(tagged.status, StatusCode::CREATED, "{}", tagged.body);
    let post = tagged.body["id"].as_str().unwrap().to_owned();
    app.eventually("/api/tags/kites/posts", |page| page["items"][0]["id"] == post.as_str()).await;
    let dir = app.stop().await.unwrap();
    assert_eq!(
        sql(
            dir.path(),
            "DELETE FROM items WHERE container = 'posts' AND pk = ?1 AND id = ?1",
            &[&post]
        ),
        1
    );
    let error = refusal(dir.path()).await;
    run_advised(&error, dir.path());
    let copies = count(
        dir.path(),
        "container = 'tags' AND doc LIKE ?1",
        &[&format!("%\"postId\":\"{post}\"%")],
    );
    assert_eq!(copies, 0, "no copy of the post is left under its tag");
    let app = TestApp::start_in(dir.path()).await;
    assert_eq!(app.get("/api/tags/kites/posts").await.body["items"], json!([]));
    app.stop().await;
}

#[tokio::test]
async fn an_emptied_table_is_refused() {
    let blog = blog().await;
    sql(blog.dir.path(), "DELETE FROM items", &[]);
    let error = refusal(blog.dir.path()).await;
    assert!(
        error.contains("items missing")
            && error.contains(&format!("the post {:?} itself", blog.post)),
        "{error}"
    );
    let said = refused_by_binary(&["export"], blog.dir.path());
    assert!(said.contains("does not hold what it recorded holding"), "{said}");
}

#[tokio::test]
async fn an_emptied_table_with_its_tallies_deleted_too_is_refused() {
    let blog = blog().await;
    sql(blog.dir.path(), "DELETE FROM items", &[]);
    sql(blog.dir.path(), "DELETE FROM partitions", &[]);
    let error = refusal(blog.dir.path()).await;
    assert!(
        error.contains("posts, in partitions whose record was deleted too: 5 of 5 items missing"),
        "{error}"
    );
    sql(blog.dir.path(), "DELETE FROM meta", &[]);
    let error = refusal(blog.dir.path()).await;
    assert!(
        error.contains("lost its records of what it holds") && error.contains("last_seq"),
        "{error}"
    );
}

#[tokio::test]
async fn the_advised_repair_after_emptied_tallies_starts_the_blog_as_it_is() {
    let blog = blog().await;
    sql(blog.dir.path(), "DELETE FROM items WHERE doc LIKE '%\"a comment\"%'", &[]);
    sql(blog.dir.path(), "DROP TABLE partitions", &[]);
    sql(blog.dir.path(), "DELETE FROM meta", &[]);
    let error = refusal(blog.dir.path()).await;
    run_advised(&error, blog.dir.path());
    let app = TestApp::start_in(blog.dir.path()).await;
    counts_equal_lists(&app, &blog.post).await;
    assert_eq!(app.get(&format!("/api/posts/{}", blog.post)).await.body["commentCount"], 2);
    app.stop().await;
}

/// A repair cut short (after the rows, before the names and copies) leaves its mark: the blog
/// refuses to start until `handler repair` has finished it.
#[tokio::test]
async fn a_repair_cut_short_is_refused_until_it_is_finished() {
    let blog = blog().await;
    sql(blog.dir.path(), "INSERT INTO meta (key, value) VALUES ('repair_pending', 1)", &[]);
    let error = refusal(blog.dir.path()).await;
    assert!(error.contains("did not finish") && error.contains("handler repair"), "{error}");
    let output = common::binary::run_to_end(&["repair"], blog.dir.path());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let app = TestApp::start_in(blog.dir.path()).await;
    counts_equal_lists(&app, &blog.post).await;
    app.stop().await;
}

/// A changed item whose ids hold what a shell would run: the refusal's command quotes them, so
/// pasted into `sh` it runs nothing but `handler remove`, which removes that user with their
/// reservation (the name is free again) and leaves a blog that starts.
#[tokio::test]
async fn the_advised_removal_of_an_item_with_a_hostile_id_runs_nothing_else() {
    let hostile = "h$(touch${IFS}pwned)`touch${IFS}pwned2`{a,b}'q\"${HOME}";
    let app = TestApp::start().await;
    let created = app
        .send_as(Some(hostile), Method::POST, "/api/users", Some(json!({"username": "mallory"})))
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let dir = app.stop().await.unwrap();
    let changed = sql(
        dir.path(),
        "UPDATE items SET doc = replace(doc, 'mallory', 'mallorz') WHERE container = 'users' AND id = ?1",
        &[hostile],
    );
    assert_eq!(changed, 1);
    let error = refusal(dir.path()).await;
    assert!(
        error.contains("does not match its checksum") && error.contains("handler remove users"),
        "{error}"
    );
    let cwd = tempfile::tempdir().unwrap();
    run_advised(&error, cwd.path());
    assert_eq!(std::fs::read_dir(cwd.path()).unwrap().count(), 0, "nothing in the ids ran");
    let left =
        count(dir.path(), "container = 'users' AND (pk = ?1 OR doc LIKE '%mallor%')", &[hostile]);
    assert_eq!(left, 0, "the user and their reservation are gone");
    let app = TestApp::start_in(dir.path()).await;
    let claimed = app.post("/api/users", json!({"username": "mallory"})).await;
    assert_eq!(claimed.status, StatusCode::CREATED, "the name is free again: {}", claimed.body);
    app.stop().await;
}

/// A database whose items were counted by an earlier handler (schema 1, no tallies) is upgraded
/// at its first start, the tallies made from what is there; from then on a deleted row is seen.
#[tokio::test]
async fn a_database_without_tallies_is_upgraded() {
    let blog = blog().await;
    let database = rusqlite::Connection::open(blog.dir.path().join("blog.sqlite")).unwrap();
    database
        .execute_batch(
            "DROP TABLE partitions; DELETE FROM meta WHERE key LIKE 'items:%' OR key LIKE 'digest:%'; PRAGMA user_version = 1;",
        )
        .unwrap();
    drop(database);
    let app = TestApp::start_in(blog.dir.path()).await;
    counts_equal_lists(&app, &blog.post).await;
    app.stop().await;
    let version: i64 = rusqlite::Connection::open(blog.dir.path().join("blog.sqlite"))
        .unwrap()
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, 4);
    sql(blog.dir.path(), "DELETE FROM items WHERE doc LIKE '%\"a comment\"%'", &[]);
    assert!(refusal(blog.dir.path()).await.contains("1 of 5 items missing"));
}

/// Writes keep the tallies: after comments, likes, an unlike, a deleted comment and a restart,
/// the blog starts (the tallies match), and `handler repair` on a whole blog changes nothing.
#[tokio::test]
async fn a_repair_of_a_whole_blog_changes_nothing() {
    let blog = blog().await;
    let app = TestApp::start_in(blog.dir.path()).await;
    let comments = app.get(&format!("/api/posts/{}/comments", blog.post)).await.body;
    let first: Value = comments["items"][0].clone();
    let deleted = app
        .send_as(
            Some(&blog.alice),
            Method::DELETE,
            &format!("/api/posts/{}/comments/{}", blog.post, first["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert!(deleted.status.is_success(), "{}", deleted.body);
    let unliked = app
        .send_as(
            Some(&blog.bob),
            Method::DELETE,
            &format!("/api/posts/{}/likes/{}", blog.post, blog.bob),
            None,
        )
        .await;
    assert!(unliked.status.is_success(), "{}", unliked.body);
    app.eventually("/api/feed", |feed| feed["items"][0]["commentCount"] == 2).await;
    app.stop().await;
    let output = common::binary::run_to_end(&["repair"], blog.dir.path());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{said}");
    assert!(
        said.contains("0 comments and likes of posts that are gone, 0 copies and 0 reservations removed; 0 posts recounted"),
        "{said}"
    );
    let app = TestApp::start_in(blog.dir.path()).await;
    counts_equal_lists(&app, &blog.post).await;
    app.stop().await;
}
