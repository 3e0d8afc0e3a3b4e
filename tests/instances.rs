//! What one instance of the function app shows of a write made through another: two `Blog`s
//! on one store, each with its own caches, the first running the change-feed processors. Each
//! kept page is checked once it is older than its lifetime (a second): by the blog's change log,
//! one point read a second for every page the instance keeps, or, where the log cannot say (a
//! page read before the instance first read it), by one point read of the page's own mark; and
//! read whole only when that read says it changed.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use blog::testing::cosmos::Container;
use common::TestApp;
use reqwest::StatusCode;

/// Longer than the caches' lifetime (`FRESH_FOR`: a second):
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

/// Waits out a lifetime, then views `page` on `instance` until `shown` holds of it (the change
/// feed delivers a change a moment after the write it follows): the operations of the view that
/// first shows it. Fails after ten tries.
async fn operations_when_shown(
    instance: &common::OtherInstance,
    page: &str,
    shown: impl Fn(&str) -> bool,
) -> u64 {
    for _ in 0..10 {
        tokio::time::sleep(LIFETIME).await;
        let (operations, html) = instance.get(page).await;
        if shown(&html) {
            return operations;
        }
    }
    panic!("{page} never showed the change");
}

/// A second instance on the same database keeps its own post views: once a view is older than
/// `FRESH_FOR` it is checked by the change log (or, before the instance first read the
/// log, by one point read of the post: its etag), shown again when nothing changed, and read
/// again where something did: a like made through the first instance, and the liker's new name,
/// show on the second's next check once the change feed delivered them.
#[tokio::test]
async fn another_instance_shows_a_write_made_elsewhere_on_a_kept_post_view() {
    let app = TestApp::start().await;
    let author = app.user("author").await;
    let fan = app.user("fan").await;
    let post = app.post_by(&author, "Kept").await;
    app.eventually("/api/feed", |feed| feed["items"][0]["id"] == post.as_str()).await;
    let second = app.another_instance().await;
    let page = format!("/posts/{post}");

    let (operations, html) = second.get(&page).await;
    assert_eq!(operations, 3, "Q2, Q4 and Q5, read whole");
    assert!(html.contains("0 comments · 0 likes"), "{html}");
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get(&page).await;
    assert_eq!(
        operations, 2,
        "the log, which cannot say for a view read before it, then the post's etag: nothing changed"
    );
    assert!(html.contains("0 comments · 0 likes"), "{html}");
    tokio::time::sleep(LIFETIME).await;
    let (operations, _) = second.get(&page).await;
    assert_eq!(operations, 1, "the log alone: nothing changed");

    let liked =
        app.post(&format!("/api/posts/{post}/likes"), serde_json::json!({"userId": fan})).await;
    assert_eq!(liked.status, StatusCode::CREATED, "{}", liked.body);
    let operations =
        operations_when_shown(&second, &page, |html| html.contains("0 comments · 1 like")).await;
    assert_eq!(
        operations, 3,
        "the log named the post: then the post and its likes, whose version moved"
    );

    // A liker's new name is written onto their like by the change feed, with the post written
    // again in the same transaction, which the change feed delivers and the log names.
    let renamed =
        app.put(&format!("/api/users/{fan}"), serde_json::json!({"username": "renamed-fan"})).await;
    assert_eq!(renamed.status, StatusCode::OK, "{}", renamed.body);
    let operations =
        operations_when_shown(&second, &page, |html| html.contains("renamed-fan")).await;
    assert_eq!(
        operations, 3,
        "the log named the post after the rename: the post and its likes again"
    );

    second.stop().await;
}

/// A second instance's kept post view, once the log names the post, reads again only what the
/// write changed, as the versions of the post's lists say: the post alone after an edit, the
/// post and its comments after a comment or a commenter's new name, the post and its likes after
/// a like; and all three for a post stored without versions (written before posts had them),
/// which cannot say.
#[tokio::test]
async fn another_instance_reads_again_only_what_a_write_made_elsewhere_changed_in_a_kept_post_view()
{
    let app = TestApp::start().await;
    let author = app.user("author").await;
    let fan = app.user("fan").await;
    let commenter = app.user("commenter").await;
    let post = app.post_by(&author, "Kept").await;
    app.eventually("/api/feed", |feed| feed["items"][0]["id"] == post.as_str()).await;
    let second = app.another_instance().await;
    let page = format!("/posts/{post}");
    assert_eq!(second.get(&page).await.0, 3, "Q2, Q4 and Q5, read whole");

    let edited = app
        .put(
            &format!("/api/posts/{post}"),
            serde_json::json!({"title": "Kept, edited", "content": "Edited."}),
        )
        .await;
    assert_eq!(edited.status, StatusCode::OK, "{}", edited.body);
    let operations =
        operations_when_shown(&second, &page, |html| html.contains("Kept, edited")).await;
    assert_eq!(operations, 2, "the log, then the post alone: an edit moves neither list's version");

    let comment = serde_json::json!({"userId": commenter, "content": "Shown elsewhere"});
    let commented = app.post(&format!("/api/posts/{post}/comments"), comment).await;
    assert_eq!(commented.status, StatusCode::CREATED, "{}", commented.body);
    let operations =
        operations_when_shown(&second, &page, |html| html.contains("Shown elsewhere")).await;
    assert_eq!(operations, 3, "the log, then the post and its comments");

    let liked =
        app.post(&format!("/api/posts/{post}/likes"), serde_json::json!({"userId": fan})).await;
    assert_eq!(liked.status, StatusCode::CREATED, "{}", liked.body);
    let operations = operations_when_shown(&second, &page, |html| html.contains("Liked by")).await;
    assert_eq!(operations, 3, "the log, then the post and its likes");
    let (_, html) = second.get(&page).await;
    assert!(
        html.contains("Shown elsewhere") && html.contains("Kept, edited"),
        "the parts kept still shown: {html}"
    );

    let renamed = app
        .put(
            &format!("/api/users/{commenter}"),
            serde_json::json!({"username": "renamed-commenter"}),
        )
        .await;
    assert_eq!(renamed.status, StatusCode::OK, "{}", renamed.body);
    let operations =
        operations_when_shown(&second, &page, |html| html.contains("renamed-commenter")).await;
    assert_eq!(
        operations, 3,
        "the log, then the post and its comments, whose version updateUsernames moved"
    );

    // The post as one written before posts carried their lists' versions: a change of it cannot
    // say which list changed, whichever side lacks them.
    let mut stored: serde_json::Value =
        app.state.store.read(Container::Posts, &post, &post).await.unwrap().unwrap();
    let fields = stored.as_object_mut().unwrap();
    fields.retain(|name, _| {
        !name.starts_with('_') && name != "commentsVersion" && name != "likesVersion"
    });
    fields.insert("title".into(), "Kept, unversioned".into());
    app.state.store.upsert(Container::Posts, &post, &stored).await.unwrap();
    let operations =
        operations_when_shown(&second, &page, |html| html.contains("Kept, unversioned")).await;
    assert_eq!(operations, 4, "the log, then all three: the post says nothing of its lists");
    let edited = app
        .put(
            &format!("/api/posts/{post}"),
            serde_json::json!({"title": "Kept, edited again", "content": "Again."}),
        )
        .await;
    assert_eq!(edited.status, StatusCode::OK, "{}", edited.body);
    let operations =
        operations_when_shown(&second, &page, |html| html.contains("Kept, edited again")).await;
    assert_eq!(operations, 4, "the log, then all three: nor did the view kept");

    second.stop().await;
}

/// The front page on a second instance is checked by one point read of the feed's change mark
/// once it is older than `FRESH_FOR`, shown again when the mark did not change, and
/// after each change `PostsChangeFeed` makes to `feed` through the first instance shows it: read
/// again (the mark, then Q6) for a post that entered or left the feed, mended with a point read
/// of each copy changed in place (a like, the author's new name).
#[tokio::test]
async fn another_instance_shows_each_change_made_elsewhere_on_its_kept_front_page() {
    let app = TestApp::start().await;
    let author = app.user("author").await;
    let fan = app.user("fan").await;
    let first = app.post_by(&author, "First").await;
    app.eventually("/api/feed", |feed| {
        feed["items"].as_array().is_some_and(|items| items.len() == 1)
    })
    .await;
    let second = app.another_instance().await;

    let (operations, html) = second.get("/").await;
    assert_eq!(operations, 2, "the feed's mark, then Q6");
    assert!(html.contains("First"), "{html}");
    tokio::time::sleep(LIFETIME).await;
    let (operations, _) = second.get("/").await;
    assert_eq!(
        operations, 2,
        "the log, which cannot say for a page read before it, then the mark: nothing changed"
    );
    tokio::time::sleep(LIFETIME).await;
    let (operations, _) = second.get("/").await;
    assert_eq!(operations, 1, "the log alone: nothing changed");
    assert!(
        shares_a_kept_page(&second, "/", "/feed.atom").await,
        "the Atom feed shares the front page's kept page"
    );

    // Each change is made through the first instance and waited for there (its processors
    // copy it, mark the feed, then name it in the log); the second shows it at its next check:
    // the log, then the mark and Q6.
    let newest = app.post_by(&author, "Second").await;
    app.eventually("/api/feed", |feed| feed["items"][0]["id"] == newest.as_str()).await;
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get("/").await;
    assert_eq!(operations, 3, "a new post marked the feed");
    assert!(html.contains("Second"), "{html}");

    let liked =
        app.post(&format!("/api/posts/{first}/likes"), serde_json::json!({"userId": fan})).await;
    assert_eq!(liked.status, StatusCode::CREATED, "{}", liked.body);
    app.eventually("/api/feed", |feed| feed["items"][1]["likeCount"] == 1).await;
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get("/").await;
    assert_eq!(
        operations, 2,
        "the log named the post's copy, changed in place: read alone, the kept page mended"
    );
    assert!(html.contains("1 like"), "{html}");

    let renamed = app
        .put(&format!("/api/users/{author}"), serde_json::json!({"username": "renamed-author"}))
        .await;
    assert_eq!(renamed.status, StatusCode::OK, "{}", renamed.body);
    app.eventually("/api/feed", |feed| {
        feed["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|post| post["userUsername"] == "renamed-author")
    })
    .await;
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get("/").await;
    assert_eq!(
        operations, 3,
        "the author's new name on both copies: the log, then each copy, the kept page mended"
    );
    assert!(html.contains("renamed-author"), "{html}");

    let deleted = app
        .send_as(Some(&author), reqwest::Method::DELETE, &format!("/api/posts/{newest}"), None)
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.body);
    app.eventually("/api/feed", |feed| {
        feed["items"].as_array().is_some_and(|items| items.len() == 1)
    })
    .await;
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get("/").await;
    assert_eq!(operations, 3, "the deleted post's copy went, and marked the feed");
    assert!(!html.contains("Second"), "{html}");

    second.stop().await;
}

/// A user's page on a second instance: the user (Q1) and their posts (Q3) kept and checked by the
/// change log, or where it cannot say, the user read again and the posts by their posts mark,
/// which `PostsChangeFeed` writes after each change to their posts' copies: a new post, a like on
/// one of them and the user's new name, made through the first instance, show at the second's
/// next check. `GET /api/users/{id}/posts` shares the kept page.
#[tokio::test]
async fn another_instance_shows_each_change_made_elsewhere_on_its_kept_user_posts() {
    let app = TestApp::start().await;
    let author = app.user("author").await;
    let fan = app.user("fan").await;
    let first = app.post_by(&author, "First").await;
    let posts = format!("/api/users/{author}/posts");
    app.eventually(&posts, |page| page["items"].as_array().is_some_and(|items| items.len() == 1))
        .await;
    let second = app.another_instance().await;
    let page = format!("/users/{author}");

    let (operations, html) = second.get(&page).await;
    assert_eq!(operations, 3, "Q1, then the user's posts mark and Q3");
    assert!(html.contains("First"), "{html}");
    assert!(
        shares_a_kept_page(&second, &page, &posts).await,
        "the API's first page is the user page's kept page"
    );
    tokio::time::sleep(LIFETIME).await;
    let (operations, _) = second.get(&page).await;
    assert_eq!(
        operations, 3,
        "the log, which cannot say for a page read before it, then Q1 and the mark: nothing changed"
    );
    tokio::time::sleep(LIFETIME).await;
    let (operations, _) = second.get(&page).await;
    assert_eq!(operations, 1, "the log alone: nothing changed");

    let newest = app.post_by(&author, "Second").await;
    app.eventually(&posts, |page| page["items"][0]["id"] == newest.as_str()).await;
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get(&page).await;
    assert_eq!(operations, 3, "the log, then the mark and Q3: a new post marked the user's posts");
    assert!(html.contains("Second"), "{html}");

    let liked =
        app.post(&format!("/api/posts/{first}/likes"), serde_json::json!({"userId": fan})).await;
    assert_eq!(liked.status, StatusCode::CREATED, "{}", liked.body);
    app.eventually(&posts, |page| page["items"][1]["likeCount"] == 1).await;
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get(&page).await;
    assert_eq!(operations, 3, "the like changed the post's copy, which marked the user's posts");
    assert!(html.contains("1 like"), "{html}");

    let renamed = app
        .put(&format!("/api/users/{author}"), serde_json::json!({"username": "renamed-author"}))
        .await;
    assert_eq!(renamed.status, StatusCode::OK, "{}", renamed.body);
    let operations = operations_when_shown(&second, &page, |html| {
        html.contains("<h1 dir=\"auto\">renamed-author")
    })
    .await;
    // The posts' copies take the new name through the change feed too: named in the same log
    // read (their mark and Q3 read again with Q1) or a later one.
    assert!(
        matches!(operations, 2 | 4),
        "the log named the user: Q1 read again ({operations} operations)"
    );

    second.stop().await;
}

/// A tag's page on a second instance is kept and checked by the tag's mark, as the user page is:
/// a post tagged, a like on a tagged post and a tag removed by an edit, all made through the
/// first instance, each show on the second's next check, a lifetime later at most.
#[tokio::test]
async fn another_instance_shows_each_change_made_elsewhere_on_its_kept_tag_page() {
    let app = TestApp::start().await;
    let author = app.user("author").await;
    let fan = app.user("fan").await;
    let tagged = |title: &str, tags: &[&str]| serde_json::json!({"userId": author, "title": title, "content": "c", "tags": tags});
    let first = app.post("/api/posts", tagged("First", &["Kites"])).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let posts = "/api/tags/kites/posts";
    app.eventually(posts, |page| page["items"][0]["id"] == first.as_str()).await;
    let second = app.another_instance().await;
    let page = "/tags/Kites";

    let (operations, html) = second.get(page).await;
    assert_eq!(operations, 2, "the tag's mark and Q7");
    assert!(html.contains("First"), "{html}");
    assert!(
        shares_a_kept_page(&second, page, posts).await,
        "the API's first page is the tag page's kept page"
    );
    assert!(
        shares_a_kept_page(&second, page, "/tags/kites/feed.atom").await,
        "the tag's feed is its page's kept page"
    );
    tokio::time::sleep(LIFETIME).await;
    let (operations, _) = second.get(page).await;
    assert_eq!(
        operations, 2,
        "the log, which cannot say for a page read before it, and the mark: nothing changed"
    );
    tokio::time::sleep(LIFETIME).await;
    let (operations, _) = second.get(page).await;
    assert_eq!(operations, 1, "the log alone: nothing changed");

    let newest = app.post("/api/posts", tagged("Second", &["kites", "Wind"])).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.eventually(posts, |page| page["items"][0]["id"] == newest.as_str()).await;
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get(page).await;
    assert_eq!(operations, 3, "the log, then the mark and Q7: a post tagged marked the tag");
    assert!(html.contains("Second"), "{html}");

    let liked =
        app.post(&format!("/api/posts/{first}/likes"), serde_json::json!({"userId": fan})).await;
    assert_eq!(liked.status, StatusCode::CREATED, "{}", liked.body);
    app.eventually(posts, |page| page["items"][1]["likeCount"] == 1).await;
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get(page).await;
    assert_eq!(operations, 3, "the like changed the post's copy under the tag, which marked it");
    assert!(html.contains("1 like"), "{html}");

    let edited = app
        .put(
            &format!("/api/posts/{newest}"),
            serde_json::json!({"title": "Second", "content": "c", "tags": ["Wind"]}),
        )
        .await;
    assert_eq!(edited.status, StatusCode::OK, "{}", edited.body);
    app.eventually(posts, |page| page["items"].as_array().is_some_and(|items| items.len() == 1))
        .await;
    tokio::time::sleep(LIFETIME).await;
    let (operations, html) = second.get(page).await;
    assert_eq!(operations, 3, "the tag removed marked it");
    assert!(!html.contains("Second"), "{html}");

    second.stop().await;
}

/// The API's reads of a post (Q2) and of its comments (Q4) on a second instance are kept for
/// callers who are not signed in and checked by the change log, as the post's page is: kept the
/// next moment, read again once the change feed named the post after a like and a comment made
/// through the first instance. A signed-in caller, who may have just written, is read anew.
#[tokio::test]
async fn another_instance_keeps_the_apis_reads_of_a_post_for_readers_not_signed_in() {
    let app = TestApp::start().await;
    let author = app.user("author").await;
    let fan = app.user("fan").await;
    let post = app.post_by(&author, "Kept").await;
    app.eventually("/api/feed", |feed| feed["items"][0]["id"] == post.as_str()).await;
    let second = app.another_instance().await;
    let (read, comments) = (format!("/api/posts/{post}"), format!("/api/posts/{post}/comments"));

    assert_eq!(second.get(&read).await.0, 1, "Q2");
    assert_eq!(
        second.get(&comments).await.0,
        2,
        "Q4, and Q2 to tell an empty page from a missing post"
    );
    assert!(shares_a_kept_page(&second, &read, &read).await, "kept for the next reader");
    assert!(shares_a_kept_page(&second, &comments, &comments).await, "a page of comments kept too");
    assert_eq!(second.get_as(&fan, &read).await, 1, "a signed-in caller's read is made anew");
    tokio::time::sleep(LIFETIME).await;
    assert_eq!(
        second.get(&read).await.0,
        2,
        "the log, which cannot say for a read made before it, then Q2 again"
    );
    assert_eq!(
        second.get(&comments).await.0,
        2,
        "the log just read, which cannot say: Q4 and Q2 again"
    );
    tokio::time::sleep(LIFETIME).await;
    assert_eq!(second.get(&read).await.0, 1, "the log alone: nothing changed");
    assert_eq!(second.get(&comments).await.0, 0, "the same read of the log");

    let liked =
        app.post(&format!("/api/posts/{post}/likes"), serde_json::json!({"userId": fan})).await;
    assert_eq!(liked.status, StatusCode::CREATED, "{}", liked.body);
    let operations =
        operations_when_shown(&second, &read, |body| body.contains("\"likeCount\":1")).await;
    assert_eq!(operations, 2, "the log named the post: then Q2");
    let commented = app
        .post(
            &format!("/api/posts/{post}/comments"),
            serde_json::json!({"userId": fan, "content": "Nice"}),
        )
        .await;
    assert_eq!(commented.status, StatusCode::CREATED, "{}", commented.body);
    let operations = operations_when_shown(&second, &comments, |body| body.contains("Nice")).await;
    assert_eq!(operations, 2, "the log named the post: then Q4");

    second.stop().await;
}
