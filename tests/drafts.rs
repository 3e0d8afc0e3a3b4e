//! Drafts: a post its author alone reads, copied into no list readers see, published by an edit
//! (dated then), and sent back to draft only while readers have not answered it.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use common::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

fn ids(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|post| post["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Alice's draft tagged "kites", once the change feed has copied it into her list of drafts.
async fn alices_draft(app: &TestApp) -> (String, String) {
    let alice = app.user("alice").await;
    let body = json!({"userId": alice, "title": "Kites, not yet", "content": "Half written.",
        "tags": ["kites"], "status": "draft"});
    let created = app.post("/api/posts", body).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.body["status"], "draft");
    let draft = created.body["id"].as_str().unwrap().to_owned();
    let drafts = format!("/api/users/{alice}/drafts");
    wait_for(app, &alice, &drafts, |page| ids(page) == [draft.clone()]).await;
    (alice, draft)
}

/// `GET path` as `reader` (`None`: nobody signed in), signed in as both the API and the pages
/// tell it: the development header and the development cookie.
async fn get_as(app: &TestApp, reader: Option<&str>, path: &str) -> common::Answer {
    let mut request = app.client.get(format!("{}{path}", app.base));
    if let Some(reader) = reader {
        request = request
            .header("x-dev-user", reader)
            .header("cookie", format!("blog_dev_user={reader}"));
    }
    common::read(request.send().await.unwrap()).await
}

/// Waits until `path`, read as `user`, answers what `check` accepts.
async fn wait_for(app: &TestApp, user: &str, path: &str, check: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..250 {
        let answer = app.send_as(Some(user), Method::GET, path, None).await;
        if answer.status == StatusCode::OK && check(&answer.body) {
            return answer.body;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("{path} never answered as expected");
}

#[tokio::test]
async fn a_draft_is_read_by_its_author_alone() {
    let app = TestApp::start().await;
    let (alice, draft) = alices_draft(&app).await;
    let bob = app.user("bob").await;

    let own = app.send_as(Some(&alice), Method::GET, &format!("/api/posts/{draft}"), None).await;
    assert_eq!(own.status, StatusCode::OK);
    assert_eq!(own.body["status"], "draft");
    assert_eq!(
        own.header("cache-control"),
        Some("private, no-cache"),
        "never kept by a shared cache"
    );
    let page = get_as(&app, Some(&alice), &format!("/posts/{draft}")).await;
    assert_eq!(page.status, StatusCode::OK);
    let html = page.text();
    assert!(html.contains("A draft: only you can see it."), "{html}");
    assert!(html.contains(r#"<meta name="robots" content="noindex, nofollow">"#), "{html}");
    assert!(!html.contains("Like</button>") && !html.contains(">Comment</button>"), "{html}");

    // Anyone else: as if it did not exist, never 403 (which would say it does).
    for reader in [None, Some(bob.as_str())] {
        for path in [
            format!("/api/posts/{draft}"),
            format!("/api/posts/{draft}/comments"),
            format!("/api/posts/{draft}/likes"),
            format!("/posts/{draft}"),
            format!("/posts/{draft}/edit"),
            format!("/posts/{draft}/delete"),
        ] {
            let answer = get_as(&app, reader, &path).await;
            assert_eq!(answer.status, StatusCode::NOT_FOUND, "{reader:?} {path}");
            assert!(
                !answer.header("cache-control").unwrap_or_default().contains("public"),
                "{path}"
            );
        }
    }
    let edit = json!({"title": "Mine now", "content": "Taken."});
    let as_bob = |method: Method, path: String, body: Option<Value>| {
        let bob = bob.clone();
        let app = &app;
        async move { app.send_as(Some(&bob), method, &path, body).await }
    };
    as_bob(Method::PUT, format!("/api/posts/{draft}"), Some(edit)).await.problem(404);
    as_bob(Method::DELETE, format!("/api/posts/{draft}"), None).await.problem(404);
    let comment = json!({"userId": bob, "content": "First!"});
    as_bob(Method::POST, format!("/api/posts/{draft}/comments"), Some(comment)).await.problem(404);
    let like = json!({"userId": bob});
    as_bob(Method::POST, format!("/api/posts/{draft}/likes"), Some(like)).await.problem(404);
    as_bob(Method::GET, format!("/api/users/{alice}/drafts"), None).await.problem(403);
    let listed =
        app.send_as(Some(&alice), Method::GET, &format!("/api/users/{alice}/drafts"), None).await;
    assert_eq!(
        (listed.operations(), listed.partitions()),
        (1, "users=1"),
        "one query, one partition"
    );
    assert_eq!(listed.header("cache-control"), Some("private, no-cache"));
    // Her own page lists it for her, and for nobody else.
    let own_page = get_as(&app, Some(&alice), &format!("/users/{alice}")).await.text();
    assert!(own_page.contains("Your drafts") && own_page.contains(&draft), "{own_page}");
    app.send_as(None, Method::GET, &format!("/api/users/{alice}/drafts"), None).await.problem(401);

    // Its author is told why: a draft takes neither.
    let comment = json!({"userId": alice, "content": "Note to self."});
    let detail = app
        .send_as(Some(&alice), Method::POST, &format!("/api/posts/{draft}/comments"), Some(comment))
        .await
        .problem(409);
    assert!(detail.contains("is a draft"), "{detail}");

    // In no list a reader sees, on the API or the pages, once the change feed has copied it:
    // a post published after it is there, the draft is not.
    let later = app.post_by(&alice, "Published").await;
    app.eventually("/api/feed", |feed| ids(feed).contains(&later)).await;
    app.eventually(&format!("/api/users/{alice}/posts"), |page| ids(page) == [later.clone()]).await;
    for path in [
        "/api/feed".to_owned(),
        format!("/api/users/{alice}/posts"),
        "/api/tags/kites/posts".to_owned(),
        "/".to_owned(),
        format!("/users/{alice}"),
        "/tags/kites".to_owned(),
        "/feed.atom".to_owned(),
        format!("/users/{alice}/feed.atom"),
        "/tags/kites/feed.atom".to_owned(),
    ] {
        for reader in [None, Some(bob.as_str()), Some(alice.as_str())] {
            let answer = get_as(&app, reader, &path).await;
            assert!(
                answer.status == StatusCode::OK || answer.status == StatusCode::NOT_FOUND,
                "{path}"
            );
            // Her own page lists it among her drafts, above her posts: not among them.
            let text = answer.text();
            let shown = text.split_once(r#"id="posts""#).map_or(text.as_str(), |(_, posts)| posts);
            assert!(!shown.contains(&draft), "{reader:?} {path} shows the draft");
        }
    }
}

#[tokio::test]
async fn a_draft_published_is_dated_when_published() {
    let app = TestApp::start().await;
    let (alice, draft) = alices_draft(&app).await;
    let path = format!("/api/posts/{draft}");
    let begun = app.send_as(Some(&alice), Method::GET, &path, None).await.body;

    let still = app.put(&path, json!({"title": "Kites", "content": "Whole now."})).await;
    assert_eq!(still.status, StatusCode::OK, "{}", still.body);
    assert_eq!(still.body["status"], "draft", "an edit without a status keeps it");

    let body = json!({"title": "Kites", "content": "Whole now.", "status": "published"});
    let published = app.put(&path, body).await;
    assert_eq!(published.status, StatusCode::OK, "{}", published.body);
    let post = &published.body;
    assert!(post.get("status").is_none(), "a published post has the article's shape: {post}");
    assert!(post.get("editedAt").is_none(), "readers see it first now: {post}");
    assert!(
        post["creationDate"].as_str().unwrap() > begun["creationDate"].as_str().unwrap(),
        "dated when published, not when begun: {post} {begun}"
    );
    // Everyone reads it, and every list has it, its tag's too; the drafts no longer do.
    assert_eq!(app.send_as(None, Method::GET, &path, None).await.status, StatusCode::OK);
    app.eventually("/api/feed", |feed| ids(feed) == [draft.clone()]).await;
    app.eventually(&format!("/api/users/{alice}/posts"), |page| ids(page) == [draft.clone()]).await;
    app.eventually("/api/tags/kites/posts", |page| ids(page) == [draft.clone()]).await;
    wait_for(&app, &alice, &format!("/api/users/{alice}/drafts"), |page| ids(page).is_empty())
        .await;
    assert!(app.get("/feed.atom").await.text().contains(&draft));
}

#[tokio::test]
async fn back_to_draft_takes_the_post_out_of_every_list_until_readers_answer_it() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let body = json!({"userId": alice, "title": "Kites", "content": "Out.", "tags": ["kites"]});
    let post = app.post("/api/posts", body).await.body["id"].as_str().unwrap().to_owned();
    app.eventually("/api/tags/kites/posts", |page| ids(page) == [post.clone()]).await;
    app.eventually("/api/feed", |feed| ids(feed) == [post.clone()]).await;

    let path = format!("/api/posts/{post}");
    let back =
        app.put(&path, json!({"title": "Kites", "content": "Out.", "status": "draft"})).await;
    assert_eq!(back.status, StatusCode::OK, "{}", back.body);
    assert_eq!(back.body["status"], "draft");
    app.eventually("/api/feed", |feed| ids(feed).is_empty()).await;
    app.eventually("/api/tags/kites/posts", |page| ids(page).is_empty()).await;
    app.eventually(&format!("/api/users/{alice}/posts"), |page| ids(page).is_empty()).await;
    wait_for(&app, &alice, &format!("/api/users/{alice}/drafts"), |page| {
        ids(page) == [post.clone()]
    })
    .await;
    app.send_as(None, Method::GET, &path, None).await.problem(404);

    // Published again, then answered: readers' words stay on a post they can read.
    let again =
        app.put(&path, json!({"title": "Kites", "content": "Out.", "status": "published"})).await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
    let bob = app.user("bob").await;
    let liked = app.post(&format!("/api/posts/{post}/likes"), json!({"userId": bob})).await;
    assert_eq!(liked.status, StatusCode::CREATED, "{}", liked.body);
    let detail = app
        .put(&path, json!({"title": "Kites", "content": "Out.", "status": "draft"}))
        .await
        .problem(409);
    assert!(detail.contains("1 likes") && detail.contains("stays published"), "{detail}");
    assert!(app.send_as(None, Method::GET, &path, None).await.body.get("status").is_none());
}

#[tokio::test]
async fn an_unknown_status_is_refused_and_nothing_is_written() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    for status in [json!("scheduled"), json!("Draft"), json!(""), json!(1), json!(["draft"])] {
        let body = json!({"userId": alice, "title": "T", "content": "C", "status": status});
        let answer = app.post("/api/posts", body).await;
        assert!(answer.status.is_client_error(), "{status}: {}", answer.body);
    }
    assert!(ids(&app.get(&format!("/api/users/{alice}/posts")).await.body).is_empty());
    let drafts = format!("/api/users/{alice}/drafts");
    assert!(ids(&app.send_as(Some(&alice), Method::GET, &drafts, None).await.body).is_empty());
}

#[tokio::test]
async fn a_preview_link_shows_the_draft_to_whoever_has_it_until_it_is_revoked() {
    let app = TestApp::start().await;
    let (alice, draft) = alices_draft(&app).await;
    let bob = app.user("bob").await;
    let share = format!("/api/posts/{draft}/preview");
    app.send_as(Some(&bob), Method::POST, &share, None).await.problem(404);
    let shared = app.send_as(Some(&alice), Method::POST, &share, None).await;
    assert_eq!(shared.status, StatusCode::CREATED, "{}", shared.body);
    let link = shared.body["path"].as_str().unwrap().to_owned();
    let key = link.rsplit('/').next().unwrap().to_owned();
    assert!(link.starts_with(&format!("/preview/{draft}/")) && key.len() == 32, "{link}");

    for reader in [None, Some(bob.as_str())] {
        let page = get_as(&app, reader, &link).await;
        assert_eq!(page.status, StatusCode::OK, "{reader:?}");
        let html = page.text();
        assert!(
            html.contains("A preview: this post is not published yet.")
                && html.contains("Kites, not yet"),
            "{html}"
        );
        assert!(html.contains(r#"<meta name="robots" content="noindex, nofollow">"#), "{html}");
        assert!(page.header("cache-control").unwrap().starts_with("private"), "never public");
        // A link followed from it tells another site the origin alone, never the key.
        assert_eq!(page.header("referrer-policy"), Some("strict-origin-when-cross-origin"));
    }
    // A guess is not found, nor is the draft itself, nor its copies' fields: the key is no
    // field of any answer.
    let guess = format!("/preview/{draft}/{}", "0".repeat(32));
    assert_eq!(get_as(&app, None, &guess).await.status, StatusCode::NOT_FOUND);
    let own = app.send_as(Some(&alice), Method::GET, &format!("/api/posts/{draft}"), None).await;
    assert!(!own.text().contains(&key), "{}", own.body);
    let drafts = format!("/api/users/{alice}/drafts");
    assert!(!app.send_as(Some(&alice), Method::GET, &drafts, None).await.text().contains(&key));

    // A new link revokes the old; revoked, neither works.
    let again = app.send_as(Some(&alice), Method::POST, &share, None).await.body;
    let second = again["path"].as_str().unwrap().to_owned();
    assert_ne!(second, link);
    assert_eq!(get_as(&app, None, &link).await.status, StatusCode::NOT_FOUND);
    assert_eq!(get_as(&app, None, &second).await.status, StatusCode::OK);
    let revoked = app.send_as(Some(&alice), Method::DELETE, &share, None).await;
    assert_eq!(revoked.status, StatusCode::NO_CONTENT);
    assert_eq!(get_as(&app, None, &second).await.status, StatusCode::NOT_FOUND);

    // Published, a post's own address shares it.
    let third = app.send_as(Some(&alice), Method::POST, &share, None).await.body;
    let third = third["path"].as_str().unwrap().to_owned();
    let body = json!({"title": "Kites", "content": "Out.", "status": "published"});
    assert_eq!(app.put(&format!("/api/posts/{draft}"), body).await.status, StatusCode::OK);
    // (The client follows the redirect to the post's page.)
    let moved = get_as(&app, None, &third).await;
    assert_eq!(moved.status, StatusCode::OK);
    assert!(
        !moved.text().contains("A preview") && moved.text().contains("Kites"),
        "{}",
        moved.text()
    );
    let detail = app.send_as(Some(&alice), Method::POST, &share, None).await.problem(409);
    assert!(detail.contains("is published"), "{detail}");
}

/// `handler rebuild-copies` makes every copy again from `posts` by the same rules: a draft's
/// copy in its author's partition, none in the feed or under its tags.
#[tokio::test]
async fn copies_rebuilt_keep_a_draft_out_of_every_list() {
    let app = TestApp::start().await;
    let (alice, draft) = alices_draft(&app).await;
    let published = app.post_by(&alice, "Out").await;
    app.eventually("/api/feed", |feed| ids(feed) == [published.clone()]).await;
    blog::testing::changefeed::processor::rebuild_copies(&app.state, &mut |_| {}).await.unwrap();
    assert_eq!(ids(&app.get("/api/feed").await.body), std::slice::from_ref(&published));
    assert!(ids(&app.get("/api/tags/kites/posts").await.body).is_empty());
    assert_eq!(ids(&app.get(&format!("/api/users/{alice}/posts")).await.body), [published]);
    let drafts = format!("/api/users/{alice}/drafts");
    assert_eq!(ids(&app.send_as(Some(&alice), Method::GET, &drafts, None).await.body), [draft]);
}
