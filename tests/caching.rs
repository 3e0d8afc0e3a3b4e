//! What a shared cache (a CDN, Azure Front Door) may keep, over HTTP through the handler's
//! router: every read that is the same for anonymous readers (pages, Atom feeds, the API's
//! reads) has a strong ETag, answers 304 when unchanged, and may be kept a few seconds by a shared
//! cache; nothing signed in, carrying a cookie or credentials, or setting a cookie may be.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use common::TestApp;
use common::forms::Browser;
use reqwest::StatusCode;
use serde_json::Value;

/// Whether `cache_control` lets a shared cache keep the answer.
fn shared(cache_control: &str) -> bool {
    let lower = cache_control.to_ascii_lowercase();
    ["public", "s-maxage", "stale-while-revalidate", "proxy-revalidate"]
        .iter()
        .any(|directive| lower.contains(directive))
}

/// A user with a post that has a comment and a like, once the change feed has made the post's
/// copies (the user's list and the feed), so that nothing the reads show moves during a test.
async fn blog_with_a_post(app: &TestApp) -> (String, String) {
    let user = app.user("alice").await;
    let post = app.post_by(&user, "Cached at the edge").await;
    let comment = serde_json::json!({"userId": user, "content": "A comment"});
    assert_eq!(
        app.post(&format!("/api/posts/{post}/comments"), comment).await.status,
        StatusCode::CREATED
    );
    let like = serde_json::json!({"userId": user});
    assert_eq!(
        app.post(&format!("/api/posts/{post}/likes"), like).await.status,
        StatusCode::CREATED
    );
    let settled = |body: &Value| {
        body["items"].as_array().is_some_and(|items| {
            items.iter().any(|item| {
                item["id"] == post.as_str() && item["commentCount"] == 1 && item["likeCount"] == 1
            })
        })
    };
    app.eventually("/api/feed", settled).await;
    app.eventually(&format!("/api/users/{user}/posts"), settled).await;
    // And in the search index, which the change feed keeps too.
    app.eventually("/api/search?q=cached", |body| body["items"][0]["post"]["id"] == post.as_str())
        .await;
    (user, post)
}

/// Every read the same for every anonymous reader: the pages, the feeds, the API's reads.
fn anonymous_reads(user: &str, post: &str) -> Vec<String> {
    vec![
        "/".to_owned(),
        format!("/posts/{post}"),
        format!("/users/{user}"),
        "/search?q=cached".to_owned(),
        "/feed.atom".to_owned(),
        format!("/users/{user}/feed.atom"),
        "/api/feed".to_owned(),
        format!("/api/posts/{post}"),
        format!("/api/posts/{post}/comments"),
        format!("/api/posts/{post}/likes"),
        format!("/api/users/{user}"),
        format!("/api/users/{user}/posts"),
    ]
}

#[tokio::test]
async fn every_anonymous_read_is_cacheable() {
    let app = TestApp::start().await;
    let (user, post) = blog_with_a_post(&app).await;
    let browser = Browser::new(&app);
    for path in anonymous_reads(&user, &post) {
        let first = browser.get(&path).await;
        assert_eq!(first.status, StatusCode::OK, "{path}");
        let etag = first.header("etag").to_owned();
        assert!(
            etag.starts_with('"') && etag.ends_with('"') && etag.len() > 2,
            "{path}: a strong ETag, not {etag:?}"
        );
        let cache_control = first.header("cache-control");
        assert!(
            cache_control.contains("public") && cache_control.contains("s-maxage="),
            "{path}: {cache_control}"
        );
        assert!(cache_control.contains("stale-while-revalidate="), "{path}: {cache_control}");
        assert!(
            cache_control.contains("max-age=0"),
            "{path}: the browser revalidates: {cache_control}"
        );

        let again = browser.get_with(&path, &[("if-none-match", &etag)]).await;
        assert_eq!(again.status, StatusCode::NOT_MODIFIED, "{path}");
        assert!(again.html.is_empty(), "{path}: a 304 has no body");
        assert_eq!(again.header("etag"), etag, "{path}");
        assert_eq!(
            again.header("cache-control"),
            cache_control,
            "{path}: a 304 refreshes the copy as the 200 made it"
        );
        let weak = format!("W/{etag}");
        assert_eq!(
            browser.get_with(&path, &[("if-none-match", &weak)]).await.status,
            StatusCode::NOT_MODIFIED,
            "{path}"
        );

        let other = browser.get_with(&path, &[("if-none-match", "\"something-else\"")]).await;
        assert_eq!(other.status, StatusCode::OK, "{path}");
        assert_eq!(other.html, first.html, "{path}");
    }
}

/// A change is a new ETag: the old one is answered in full.
#[tokio::test]
async fn a_changed_read_answers_its_new_etag_in_full() {
    let app = TestApp::start().await;
    let (user, post) = blog_with_a_post(&app).await;
    let browser = Browser::new(&app);
    let path = format!("/api/posts/{post}/comments");
    let before = browser.get(&path).await;
    let comment = serde_json::json!({"userId": user, "content": "Another"});
    assert_eq!(app.post(&path, comment).await.status, StatusCode::CREATED);
    let after = browser.get_with(&path, &[("if-none-match", before.header("etag"))]).await;
    assert_eq!(after.status, StatusCode::OK);
    assert_ne!(after.header("etag"), before.header("etag"));
}

#[tokio::test]
async fn no_answer_to_a_signed_in_cookie_bearing_or_credentialed_request_may_be_shared() {
    let app = TestApp::start().await;
    let (user, post) = blog_with_a_post(&app).await;
    let browser = Browser::new(&app);
    let dev_cookie = format!("blog_dev_user={user}");
    let signs: [(&str, &str); 5] = [
        // App Service Authentication's session cookie (the development handler does not read it:
        // the answer is an anonymous one, and still not for a shared cache).
        ("cookie", "AppServiceAuthSession=opaque"),
        // The development sign-in: the pages show the signed-in reader's forms.
        ("cookie", &dev_cookie),
        // Any other cookie.
        ("cookie", "something=else"),
        ("authorization", "Bearer a-token"),
        // The development scheme's header, as the API reads the caller.
        ("x-dev-user", &user),
    ];
    let mut paths = anonymous_reads(&user, &post);
    paths.push("/api/me".to_owned());
    paths.push("/style.css".to_owned());
    for path in &paths {
        for (name, value) in signs {
            let got = browser.get_with(path, &[(name, value)]).await;
            let cache_control = got.header("cache-control");
            if path == "/api/me" && name != "x-dev-user" {
                assert_eq!(got.status, StatusCode::UNAUTHORIZED, "{path} with {name}");
            } else {
                assert_eq!(got.status, StatusCode::OK, "{path} with {name}: {:?}", got.html);
            }
            assert!(
                !shared(cache_control),
                "{path} with {name}: {cache_control:?} lets a shared cache keep it"
            );
            assert!(
                cache_control.contains("private") || cache_control.contains("no-store"),
                "{path} with {name}: {cache_control:?}"
            );
        }
    }
    // Signed in, a page is the reader's own: tagged, and kept by their browser only (its forms
    // carry a one-time key each, so it is new on every view).
    let path = format!("/posts/{post}");
    let page = browser.get_with(&path, &[("cookie", &dev_cookie)]).await;
    assert!(page.html.contains("Sign out"), "the page shows who is signed in");
    assert_eq!(page.header("cache-control"), "private, no-cache");
    assert!(page.header("etag").starts_with('"'));
}

#[tokio::test]
async fn an_answer_that_sets_a_cookie_is_private() {
    let app = TestApp::start().await;
    // Signing in with the development form, asked without any cookie: the answer sets one.
    let signed_in = Browser::new(&app).submit("/signin", &[("user", "alice")]).await;
    assert_eq!(signed_in.status, StatusCode::SEE_OTHER);
    assert!(signed_in.headers.contains_key("set-cookie"));
    let cache_control = signed_in.header("cache-control");
    // A redirect is kept by nobody, which is stricter still than the browser alone.
    assert_eq!(cache_control, "no-store");
    assert!(!shared(cache_control), "{cache_control:?}");
}

/// What a request may say beside its URL, each tried alone against every public read: where
/// the blog is (`Host`, the proxies' headers in their forms, lists, ports, IPv6, Unicode and
/// empty values), who asks and how (language, agent, referrer, what it accepts), credentials
/// and cookies, and how it takes the answer. Conditional headers (`If-None-Match`) are a
/// cache's own, and left out.
const VARIED: &[(&str, &str)] = &[
    ("host", "evil.example"),
    ("host", "[::1]:8443"),
    ("x-forwarded-host", "evil.example"),
    ("x-forwarded-host", "evil.example, blog.example"),
    ("x-forwarded-host", "evil.example:8443"),
    ("x-forwarded-host", "[2001:db8::1]"),
    ("x-forwarded-host", "xn--blg-tna.example"),
    ("x-forwarded-host", ""),
    ("x-forwarded-proto", "https"),
    ("x-forwarded-proto", "gopher"),
    ("x-forwarded-port", "8443"),
    ("x-forwarded-prefix", "/evil"),
    ("x-forwarded-for", "203.0.113.7"),
    ("x-original-host", "evil.example"),
    ("x-host", "evil.example"),
    ("forwarded", "for=203.0.113.7;host=evil.example;proto=https"),
    ("forwarded", "host=\"[2001:db8::1]:8443\", host=evil.example"),
    ("via", "1.1 evil.example"),
    ("accept-language", "ru-RU,ru;q=0.9"),
    ("user-agent", "Googlebot/2.1 (+http://www.google.com/bot.html)"),
    ("referer", "https://evil.example/"),
    ("origin", "https://evil.example"),
    ("accept", "application/json"),
    ("accept", "text/html"),
    ("accept-charset", "iso-8859-1"),
    ("dnt", "1"),
    ("sec-fetch-site", "cross-site"),
    ("cache-control", "no-cache"),
    ("range", "bytes=0-10"),
    ("accept-encoding", "gzip"),
    ("accept-encoding", "br"),
    ("cookie", "blog_dev_user=alice"),
    ("cookie", "tracking=1"),
    ("authorization", "Bearer x"),
    ("x-dev-user", "alice"),
    ("x-ms-client-principal-id", "alice"),
];

/// Whether an answer says nobody but its one reader may keep it.
fn private(cache_control: &str) -> bool {
    let lower = cache_control.to_ascii_lowercase();
    lower.contains("private") || lower.contains("no-store")
}

/// Every public page and feed, every read of the API, and what they link to (the stylesheet,
/// the icon, `robots.txt`, a picture), with real ids, and a page and a resource that do not
/// exist: each varied by every header of [`VARIED`] either is the same bytes, or names the
/// header in `Vary`, or is private. So a shared cache that keys its copies by URL (Azure Front
/// Door ignores `Vary` but for `Accept-Encoding`) can hand none of them to the wrong reader,
/// and nobody can make a page carry another blog's address.
#[tokio::test]
async fn no_request_header_changes_a_shared_answer_unless_vary_names_it() {
    let app = TestApp::start().await;
    let (user, post) = blog_with_a_post(&app).await;
    let tagged = app
        .post("/api/posts", serde_json::json!({"userId": user, "title": "Tagged", "content": "Some.", "tags": ["rust"]}))
        .await;
    assert_eq!(tagged.status, StatusCode::CREATED, "{}", tagged.body);
    let png = common::noise_png(64, 3);
    let picture = app
        .client
        .post(format!("{}/api/posts/{post}/pictures", app.base))
        .header("x-dev-user", user.as_str())
        .header("content-type", "image/png")
        .body(png)
        .send()
        .await
        .unwrap();
    assert_eq!(picture.status(), StatusCode::CREATED);
    let picture: Value = picture.json().await.unwrap();
    let picture = picture["url"].as_str().unwrap().to_owned();
    app.eventually("/api/tags/rust/posts", |body| {
        body["items"].as_array().is_some_and(|items| items.len() == 1)
    })
    .await;
    let comments = app.get(&format!("/api/posts/{post}/comments")).await;
    let comment = comments.body["items"][0]["id"].as_str().unwrap().to_owned();

    let mut paths: Vec<String> = blog::testing::http::HttpFunction::ALL
        .iter()
        .filter(|function| function.method() == "GET")
        .map(|function| {
            blog::testing::http::router_path(function.route())
                .replace("{userId}/{postId}/{name}", picture.trim_start_matches("/pictures/"))
                .replace("{userId}", &user)
                .replace("{postId}", &post)
                .replace("{commentId}", &comment)
                .replace("{tag}", "rust")
        })
        .collect();
    paths.extend([
        "/?limit=1".to_owned(),
        "/no-such-page".to_owned(),
        "/api/no-such-resource".to_owned(),
    ]);
    let client = reqwest::Client::new();
    let fetch = |path: &str, header: Option<(&str, &str)>| {
        let mut request = client.get(format!("{}{path}", app.base));
        if let Some((name, value)) = header {
            request = request.header(name, value);
        }
        async move {
            let answer = request.send().await.unwrap();
            let headers = answer.headers().clone();
            (answer.status(), headers, answer.bytes().await.unwrap())
        }
    };
    let mut checked = 0;
    for path in &paths {
        let (status, headers, body) = fetch(path, None).await;
        let cache_control =
            headers.get("cache-control").map(|value| value.to_str().unwrap().to_owned());
        let cache_control = cache_control
            .unwrap_or_else(|| panic!("{path} ({status}) says nothing of how long it may be kept"));
        if private(&cache_control) {
            // Kept by nobody but its reader: whatever it shows, no cache hands it on.
            eprintln!("{path}: {status}, {cache_control}");
            continue;
        }
        assert_eq!(fetch(path, None).await.2, body, "{path} is the same bytes twice");
        for &(name, value) in VARIED {
            let (varied_status, varied_headers, varied_body) =
                fetch(path, Some((name, value))).await;
            let same = varied_status == status && varied_body == body;
            let vary = varied_headers
                .get_all("vary")
                .iter()
                .flat_map(|vary| vary.to_str().unwrap().split(','))
                .any(|named| named.trim().eq_ignore_ascii_case(name) || named.trim() == "*");
            let kept_by_one = varied_headers
                .get("cache-control")
                .is_some_and(|value| private(value.to_str().unwrap()));
            assert!(
                same || vary || kept_by_one,
                "{path} with {name}: {value:?} is {varied_status}, {} bytes (not {status}, {} bytes), neither named in Vary nor private",
                varied_body.len(),
                body.len()
            );
            checked += 1;
        }
    }
    assert!(checked >= 20 * VARIED.len(), "most reads are shared, so most were checked: {checked}");
}
