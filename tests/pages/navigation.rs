//! Where a person is sent: back to the post or the button after a write or a sign-in, and a
//! shared link with tracking parameters opened.

use super::*;

/// Links are shared with parameters the reader did not add (`utm_source`, `fbclid`, `ref`): a
/// page ignores those and still checks its own; the JSON API stays strict.
#[tokio::test]
async fn a_shared_link_with_tracking_parameters_opens_the_page() {
    let app = TestApp::start().await;
    let browser = Browser::new(&app);
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Shared").await;
    for path in [
        "/?utm_source=twitter".to_owned(),
        "/?utm_source=a&utm_source=b&limit=5".to_owned(),
        format!("/posts/{post}?fbclid=abc"),
        format!("/users/{alice}?ref=x"),
    ] {
        let got = browser.get(&path).await;
        assert_eq!(got.status, StatusCode::OK, "{path}: {}", got.html);
    }
    for path in ["/?limit=abc", "/?limit=5&limit=6&utm_source=x"] {
        assert_eq!(
            browser.get(path).await.status,
            StatusCode::BAD_REQUEST,
            "{path}: the page's own parameters are checked"
        );
    }
    let detail = app.get("/api/feed?utm_source=twitter").await.problem(400);
    assert!(detail.contains("utm_source"), "{detail}");
}

/// Past the first page of comments, the redirect after commenting goes to
/// the page that holds the new comment, not to page 1 where it is not.
#[tokio::test]
async fn a_new_comment_on_a_long_post_is_on_the_page_the_writer_is_sent_to() {
    let app = TestApp::start().await;
    let author = app.user("author").await;
    let post = app.post_by(&author, "Long thread").await;
    for n in 0..30 {
        let body = serde_json::json!({"userId": author, "content": format!("comment {n}")});
        assert_eq!(
            app.post(&format!("/api/posts/{post}/comments"), body).await.status,
            StatusCode::CREATED
        );
    }
    let mut reader = Browser::new(&app);
    reader.sign_up("reader", "Reader").await;
    let commented =
        reader.submit(&format!("/posts/{post}/comments"), &[("content", "The thirty-first")]).await;
    assert_eq!(commented.status, StatusCode::SEE_OTHER, "{}", commented.html);
    let location = commented.location().to_owned();
    let (path, anchor) = location.split_once('#').expect("an anchor on the new comment");
    assert!(path.starts_with(&format!("/posts/{post}?continuationToken=")), "{location}");
    let page = reader.get(path).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.html);
    assert!(
        page.html.contains(&format!("id=\"{anchor}\"")),
        "{anchor} is not on {path}:\n{}",
        page.html
    );
    assert!(page.html.contains("The thirty-first"), "{}", page.html);

    // On a short post, the first page, with no token.
    let short = app.post_by(&author, "Short thread").await;
    let commented =
        reader.submit(&format!("/posts/{short}/comments"), &[("content", "First!")]).await;
    assert!(
        commented.location().starts_with(&format!("/posts/{short}#comment-")),
        "{}",
        commented.location()
    );
}

/// A like or unlike sends the reader back to the button they
/// pressed, not to the top of a long post.
#[tokio::test]
async fn liking_goes_back_to_the_button() {
    let app = TestApp::start().await;
    let author = app.user("author").await;
    let post = app.post_by(&author, "Liked").await;
    let mut reader = Browser::new(&app);
    reader.sign_up("reader", "Reader").await;
    let liked = reader.submit(&format!("/posts/{post}/likes"), &[]).await;
    assert_eq!(liked.location(), format!("/posts/{post}#actions"));
    let unliked = reader.submit(&format!("/posts/{post}/unlike"), &[]).await;
    assert_eq!(unliked.location(), format!("/posts/{post}#actions"));
    let page = reader.get(&format!("/posts/{post}")).await;
    assert!(page.html.contains("id=\"actions\""), "{}", page.html);
}

/// Signing in from a post goes back to the post (and never to another
/// site), and the address a refused comment leaves in the browser opens the post's comments
/// when reloaded rather than answering 405.
#[tokio::test]
async fn sign_in_from_a_post_returns_to_it() {
    let app = TestApp::start().await;
    let author = app.user("author").await;
    let post = app.post_by(&author, "Worth a comment").await;
    let browser = Browser::new(&app);
    let page = browser.get(&format!("/posts/{post}")).await;
    let sign_in_link = format!("href=\"/signin?return=/posts/{post}\"");
    assert!(page.html.contains(&sign_in_link), "{}", page.html);
    let form = browser.get(&format!("/signin?return=/posts/{post}")).await;
    assert!(
        form.html.contains(&format!("action=\"/signin?return=%2Fposts%2F{post}\"")),
        "{}",
        form.html
    );
    let signed_in =
        browser.submit(&format!("/signin?return=%2Fposts%2F{post}"), &[("user", "reader")]).await;
    assert_eq!(
        (signed_in.status, signed_in.location()),
        (StatusCode::SEE_OTHER, &*format!("/posts/{post}"))
    );
    for elsewhere in ["//evil.example/", "/\\evil.example/", "https://evil.example/"] {
        let query = serde_urlencoded::to_string([("return", elsewhere)]).unwrap();
        let signed_in = browser.submit(&format!("/signin?{query}"), &[("user", "reader")]).await;
        assert_eq!(signed_in.location(), "/users/reader", "{elsewhere}");
    }

    let reopened = browser.get(&format!("/posts/{post}/comments")).await;
    assert_eq!(
        (reopened.status, reopened.location()),
        (StatusCode::SEE_OTHER, &*format!("/posts/{post}#comments"))
    );
}

/// Whoever writes to a post is sent back with a cookie scoped to the post
/// that makes its page read anew, so they see their write even from an instance whose cache
/// still holds the post as it was.
#[tokio::test]
async fn a_writer_is_sent_back_to_a_post_page_read_anew() {
    let app = TestApp::start().await;
    let author = app.user("author").await;
    let post = app.post_by(&author, "Liked").await;
    let mut reader = Browser::new(&app);
    reader.sign_up("reader", "Reader").await;
    let liked = reader.submit(&format!("/posts/{post}/likes"), &[]).await;
    let cookie = liked.header("set-cookie").to_owned();
    assert!(
        cookie.starts_with("blog_wrote=1;") && cookie.contains(&format!("Path=/posts/{post};")),
        "{cookie}"
    );
    assert!(cookie.contains("Max-Age=") && cookie.contains("HttpOnly"), "{cookie}");

    let path = format!("/posts/{post}");
    reader.get(&path).await; // read, and cached
    let cached = reader.get(&path).await;
    assert_eq!(cached.operations(), 0, "from the cache");
    let session = reader.cookie.clone().unwrap();
    let fresh = reader
        .send(
            reader
                .client
                .get(format!("{}{path}", app.base))
                .header("cookie", format!("{session}; blog_wrote=1")),
        )
        .await;
    assert_eq!(
        fresh.operations(),
        1,
        "checked now for the writer: the post, whose etag says the view kept is the one stored"
    );
    assert_eq!(fresh.header("cache-control"), "private, no-cache");
}
