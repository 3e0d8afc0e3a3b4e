//! What one instance of the function app shows of a write made through another: two `Blog`s
//! on one store, each with its own caches, the first running the change-feed processors. Each
//! kept page is checked by one point read once it is older than its lifetime (a second), and
//! read whole only when that read says it changed.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::TestApp;
use reqwest::StatusCode;

/// Longer than the caches' lifetime (`MARKED_PAGE_LIFETIME`: a second):
/// the time a kept page is shown unchecked is what is tested, so the test waits it out.
const LIFETIME: Duration = Duration::from_millis(1100);

/// Whether `then`, asked right after `first`, is answered from the page `first` kept (no
/// operation). A busy machine can let the kept page's second pass between the two requests, so
/// the pair is sent again; a pair that never shares a page fails every time.
async fn shares_a_kept_page(instance: &common::OtherInstance, first: &str, then: &str) -> bool {
    for _ in 0..10 {
        instance.get(first).await;
        if instance.get(then).await.0 == 0 {
            return true;
        }
    }
    false
}

/// A second instance on the same database keeps its own post views: once a view is older than
/// `MARKED_PAGE_LIFETIME` it is checked by one point read of the post (its etag), shown again when
/// nothing changed, and read whole when something did: a like made through the first instance,
/// and the liker's new name, show on the second's next check, one lifetime later at most.
#[tokio::test]
async fn another_instance_checks_its_kept_post_view_by_one_read_and_shows_a_write_made_elsewhere() {
    let app = TestApp::start().await;
    let author = app.user("author").await;
    let fan = app.user("fan").await;
    let post = app.post_by(&author, "Kept").await;
    let second = app.another_instance().await;
    let page = format!("/posts/{post}");

    let (operations, html) = second.get(&page).await;
    assert_eq!(operations, 3, "Q2, Q4 and Q5, read whole");
    assert!(html.contains("0 comments · 0 likes"), "{html}");
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get(&page).await;
    assert_eq!(operations, 1, "checked by the post's etag alone, nothing changed");
    assert!(html.contains("0 comments · 0 likes"), "{html}");

    let liked = app.post(&format!("/api/posts/{post}/likes"), serde_json::json!({"userId": fan})).await;
    assert_eq!(liked.status, StatusCode::CREATED, "{}", liked.body);
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get(&page).await;
    assert_eq!(operations, 3, "the etag changed: the post, then its comments and likes");
    assert!(html.contains("0 comments · 1 like"), "the like made through the first instance shows: {html}");
    assert!(html.contains("fan"), "{html}");

    // A liker's new name is written onto their like by the change feed, with the post written
    // again in the same transaction: its etag changes, and the kept view is read whole.
    let renamed = app.put(&format!("/api/users/{fan}"), serde_json::json!({"username": "renamed-fan"})).await;
    assert_eq!(renamed.status, StatusCode::OK, "{}", renamed.body);
    app.eventually(&format!("/api/posts/{post}/likes"), |likes| likes["items"][0]["userUsername"] == "renamed-fan").await;
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get(&page).await;
    assert_eq!(operations, 3, "the rename changed the post's etag");
    assert!(html.contains("renamed-fan"), "the liker's new name shows: {html}");

    second.stop().await;
}

/// The front page on a second instance is checked by one point read of the feed's change mark
/// once it is older than `MARKED_PAGE_LIFETIME`, shown again when the mark did not change, and
/// read again (the mark, then Q6) after each change `PostsChangeFeed` makes to `feed` through
/// the first instance: a new post, a like (the copy's counters), the author's new name, and a
/// deletion.
#[tokio::test]
async fn another_instance_checks_its_kept_front_page_by_the_feeds_mark_and_shows_each_change_made_elsewhere() {
    let app = TestApp::start().await;
    let author = app.user("author").await;
    let fan = app.user("fan").await;
    let first = app.post_by(&author, "First").await;
    app.eventually("/api/feed", |feed| feed["items"].as_array().is_some_and(|items| items.len() == 1)).await;
    let second = app.another_instance().await;

    let (operations, html) = second.get("/").await;
    assert_eq!(operations, 2, "the feed's mark, then Q6");
    assert!(html.contains("First"), "{html}");
    tokio::time::sleep(LIFETIME).await;
    let (operations, _) = second.get("/").await;
    assert_eq!(operations, 1, "checked by the mark alone, nothing changed");
    assert!(shares_a_kept_page(&second, "/", "/feed.atom").await, "the Atom feed shares the front page's kept page");

    // Each change is made through the first instance and waited for there (its processors
    // copy it, then mark the feed); the second shows it at its next check.
    let newest = app.post_by(&author, "Second").await;
    app.eventually("/api/feed", |feed| feed["items"][0]["id"] == newest.as_str()).await;
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get("/").await;
    assert_eq!(operations, 2, "a new post marked the feed");
    assert!(html.contains("Second"), "{html}");

    let liked = app.post(&format!("/api/posts/{first}/likes"), serde_json::json!({"userId": fan})).await;
    assert_eq!(liked.status, StatusCode::CREATED, "{}", liked.body);
    app.eventually("/api/feed", |feed| feed["items"][1]["likeCount"] == 1).await;
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get("/").await;
    assert_eq!(operations, 2, "the like changed the post's copy, which marked the feed");
    assert!(html.contains("1 like"), "{html}");

    let renamed = app.put(&format!("/api/users/{author}"), serde_json::json!({"username": "renamed-author"})).await;
    assert_eq!(renamed.status, StatusCode::OK, "{}", renamed.body);
    app.eventually("/api/feed", |feed| {
        feed["items"].as_array().unwrap().iter().all(|post| post["userUsername"] == "renamed-author")
    })
    .await;
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get("/").await;
    assert_eq!(operations, 2, "the author's new name on the copies marked the feed");
    assert!(html.contains("renamed-author"), "{html}");

    let deleted = app.send_as(Some(&author), reqwest::Method::DELETE, &format!("/api/posts/{newest}"), None).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.body);
    app.eventually("/api/feed", |feed| feed["items"].as_array().is_some_and(|items| items.len() == 1)).await;
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get("/").await;
    assert_eq!(operations, 2, "the deleted post's copy went, and marked the feed");
    assert!(!html.contains("Second"), "{html}");

    second.stop().await;
}

/// A user's page on a second instance: their name read each time (Q1, a point read), their posts
/// (Q3) kept and checked by their posts mark, which `PostsChangeFeed` writes after each change to
/// their posts' copies: a new post, and a like on one of them, made through the first instance,
/// show at the second's next check. `GET /api/users/{id}/posts` shares the kept page.
#[tokio::test]
async fn another_instance_checks_its_kept_user_posts_by_the_users_mark_and_shows_each_change_made_elsewhere() {
    let app = TestApp::start().await;
    let author = app.user("author").await;
    let fan = app.user("fan").await;
    let first = app.post_by(&author, "First").await;
    let posts = format!("/api/users/{author}/posts");
    app.eventually(&posts, |page| page["items"].as_array().is_some_and(|items| items.len() == 1)).await;
    let second = app.another_instance().await;
    let page = format!("/users/{author}");

    let (operations, html) = second.get(&page).await;
    assert_eq!(operations, 3, "Q1, then the user's posts mark and Q3");
    assert!(html.contains("First"), "{html}");
    assert!(shares_a_kept_page(&second, &page, &posts).await, "the API's first page is the user page's kept page");
    tokio::time::sleep(LIFETIME).await;
    let (operations, _) = second.get(&page).await;
    assert_eq!(operations, 2, "Q1, and the mark alone: nothing changed");

    let newest = app.post_by(&author, "Second").await;
    app.eventually(&posts, |page| page["items"][0]["id"] == newest.as_str()).await;
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get(&page).await;
    assert_eq!(operations, 3, "a new post marked the user's posts");
    assert!(html.contains("Second"), "{html}");

    let liked = app.post(&format!("/api/posts/{first}/likes"), serde_json::json!({"userId": fan})).await;
    assert_eq!(liked.status, StatusCode::CREATED, "{}", liked.body);
    app.eventually(&posts, |page| page["items"][1]["likeCount"] == 1).await;
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get(&page).await;
    assert_eq!(operations, 3, "the like changed the post's copy, which marked the user's posts");
    assert!(html.contains("1 like"), "{html}");

    second.stop().await;
}

/// A tag's page on a second instance is kept and checked by the tag's mark, as the user page is:
/// a post tagged, a like on a tagged post and a tag removed by an edit, all made through the
/// first instance, each show on the second's next check, a lifetime later at most.
#[tokio::test]
async fn another_instance_checks_its_kept_tag_page_by_the_tags_mark_and_shows_each_change_made_elsewhere() {
    let app = TestApp::start().await;
    let author = app.user("author").await;
    let fan = app.user("fan").await;
    let tagged = |title: &str, tags: &[&str]| serde_json::json!({"userId": author, "title": title, "content": "c", "tags": tags});
    let first = app.post("/api/posts", tagged("First", &["Kites"])).await.body["id"].as_str().unwrap().to_owned();
    let posts = "/api/tags/kites/posts";
    app.eventually(posts, |page| page["items"][0]["id"] == first.as_str()).await;
    let second = app.another_instance().await;
    let page = "/tags/Kites";

    let (operations, html) = second.get(page).await;
    assert_eq!(operations, 2, "the tag's mark and Q7");
    assert!(html.contains("First"), "{html}");
    assert!(shares_a_kept_page(&second, page, posts).await, "the API's first page is the tag page's kept page");
    assert!(shares_a_kept_page(&second, page, "/tags/kites/feed.atom").await, "the tag's feed is its page's kept page");
    tokio::time::sleep(LIFETIME).await;
    let (operations, _) = second.get(page).await;
    assert_eq!(operations, 1, "the mark alone: nothing changed");

    let newest = app.post("/api/posts", tagged("Second", &["kites", "Wind"])).await.body["id"].as_str().unwrap().to_owned();
    app.eventually(posts, |page| page["items"][0]["id"] == newest.as_str()).await;
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get(page).await;
    assert_eq!(operations, 2, "a post tagged marked the tag");
    assert!(html.contains("Second"), "{html}");

    let liked = app.post(&format!("/api/posts/{first}/likes"), serde_json::json!({"userId": fan})).await;
    assert_eq!(liked.status, StatusCode::CREATED, "{}", liked.body);
    app.eventually(posts, |page| page["items"][1]["likeCount"] == 1).await;
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get(page).await;
    assert_eq!(operations, 2, "the like changed the post's copy under the tag, which marked it");
    assert!(html.contains("1 like"), "{html}");

    let edited =
        app.put(&format!("/api/posts/{newest}"), serde_json::json!({"title": "Second", "content": "c", "tags": ["Wind"]})).await;
    assert_eq!(edited.status, StatusCode::OK, "{}", edited.body);
    app.eventually(posts, |page| page["items"].as_array().is_some_and(|items| items.len() == 1)).await;
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get(page).await;
    assert_eq!(operations, 2, "the tag removed marked it");
    assert!(!html.contains("Second"), "{html}");

    second.stop().await;
}
