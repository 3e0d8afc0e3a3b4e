//! The Atom feeds over HTTP: `/feed.atom` and `/users/{userId}/feed.atom`
//! are RFC 4287 feeds, valid against the RFC's own schema (Appendix B, in `tests/atom/`, checked
//! with `xmllint --relaxng`), newest post first, escaped, served from the front page's cache with
//! an ETag, and linked from every page's `<head>`.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::TestApp;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::json;

const ATOM_NS: &str = "http://www.w3.org/2005/Atom";

struct Got {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Got {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|value| value.to_str().ok()).unwrap_or("")
    }
}

async fn get(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> Got {
    let mut request = app.client.get(format!("{}{path}", app.base));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    Got { status, headers, body: response.text().await.unwrap() }
}

/// The feed at `path` once it has `entries` entries (copies reach the feed through the change
/// feed a moment after C2; bounded to 10 s).
async fn feed_with(app: &TestApp, path: &str, entries: usize) -> Got {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = get(app, path, &[]).await;
        assert_eq!(got.status, StatusCode::OK, "{path}: {}", got.body);
        if got.body.matches("<entry>").count() == entries {
            return got;
        }
        assert!(Instant::now() < deadline, "{path} never had {entries} entries:\n{}", got.body);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn post(app: &TestApp, user: &str, title: &str, content: &str) -> String {
    let answer =
        app.post("/api/posts", json!({"userId": user, "title": title, "content": content})).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    answer.body["id"].as_str().unwrap().to_owned()
}

/// The text of `node`'s one child element `name`.
fn child<'a>(node: roxmltree::Node<'a, 'a>, name: &str) -> roxmltree::Node<'a, 'a> {
    let mut found = node.children().filter(|child| child.has_tag_name((ATOM_NS, name)));
    let first = found.next().unwrap_or_else(|| panic!("no {name} in {}", node.tag_name().name()));
    assert!(found.next().is_none(), "one {name} in {}", node.tag_name().name());
    first
}

fn text<'a>(node: roxmltree::Node<'a, 'a>, name: &str) -> &'a str {
    child(node, name).text().unwrap_or_default()
}

fn link<'a>(node: roxmltree::Node<'a, 'a>, rel: &str) -> &'a str {
    node.children()
        .find(|child| child.has_tag_name((ATOM_NS, "link")) && child.attribute("rel") == Some(rel))
        .and_then(|link| link.attribute("href"))
        .unwrap_or_else(|| panic!("no link rel={rel}"))
}

#[tokio::test]
async fn the_feed_holds_the_newest_posts_newest_first_escaped_with_their_authors() {
    let app = TestApp::start().await;
    let alice = app.user("Alice & <Co>").await;
    let first = post(&app, &alice, "First", "Some **bold** text.").await;
    let long = format!("## Long\n\n{}", "lorem **ipsum** dolor ".repeat(20));
    let second = post(&app, &alice, "Second", &long).await;
    let third = post(&app, &alice, "<script>alert('x')</script> & more", "Third.").await;

    let got = feed_with(&app, "/feed.atom", 3).await;
    assert_eq!(got.header("content-type"), "application/atom+xml; charset=utf-8");
    assert!(!got.body.contains("<script>"), "{}", got.body);
    assert!(got.body.contains(
        "<title type=\"text\">&lt;script&gt;alert(&apos;x&apos;)&lt;/script&gt; &amp; more</title>"
    ));

    let document = roxmltree::Document::parse(&got.body).expect("the feed is well-formed XML");
    let feed = document.root_element();
    assert!(feed.has_tag_name((ATOM_NS, "feed")), "{}", got.body);
    assert_eq!(text(feed, "id"), format!("{}/feed.atom", app.public));
    assert_eq!(link(feed, "self"), format!("{}/feed.atom", app.public));
    assert_eq!(link(feed, "alternate"), format!("{}/", app.public));

    let entries: Vec<_> =
        feed.children().filter(|node| node.has_tag_name((ATOM_NS, "entry"))).collect();
    let ids: Vec<&str> = entries.iter().map(|entry| text(*entry, "id")).collect();
    let expected: Vec<String> =
        [&third, &second, &first].iter().map(|id| format!("urn:uuid:{id}")).collect();
    assert_eq!(ids, expected, "newest first, each a post's stable id");
    assert_eq!(
        text(entries[0], "title"),
        "<script>alert('x')</script> & more",
        "escaped, and read back as typed"
    );
    let updated: Vec<&str> = entries.iter().map(|entry| text(*entry, "updated")).collect();
    assert_eq!(text(feed, "updated"), updated[0], "the feed changed when its newest entry did");
    for (entry, id) in entries.iter().zip([&third, &second, &first]) {
        assert_eq!(link(*entry, "alternate"), format!("{}/posts/{id}", app.public));
        let author = child(*entry, "author");
        assert_eq!(text(author, "name"), "Alice & <Co>");
        assert_eq!(text(author, "uri"), format!("{}/users/{alice}", app.public));
        assert_eq!(text(*entry, "published"), text(*entry, "updated"), "never edited");
    }
    // A whole post is its rendered Markdown; a long one, cut in its copy, its plain excerpt.
    let content = child(entries[2], "content");
    assert_eq!(
        (content.attribute("type"), content.text()),
        (Some("html"), Some("<p dir=\"auto\">Some <strong>bold</strong> text.</p>\n"))
    );
    let summary = child(entries[1], "summary");
    assert!(
        summary.text().unwrap().starts_with("Long lorem ipsum dolor")
            && summary.text().unwrap().ends_with('…')
    );
    assert!(!summary.text().unwrap().contains("**"));

    // An edit is the entry's new `updated`.
    let edited = app
        .put(&format!("/api/posts/{first}"), json!({"title": "First, edited", "content": "Again."}))
        .await;
    assert_eq!(edited.status, StatusCode::OK);
    let deadline = Instant::now() + Duration::from_secs(10);
    let edited_at = edited.body["editedAt"].as_str().unwrap();
    while !get(&app, "/feed.atom", &[])
        .await
        .body
        .contains(&format!("<updated>{edited_at}</updated>"))
    {
        assert!(Instant::now() < deadline, "the edit never reached the feed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs `xmllint --relaxng` on `xml` with the RFC's schema: `Err` holds what it said.
fn validate(xml: &str) -> Result<(), String> {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), xml).unwrap();
    let schema = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/atom/atom.rng");
    let output = std::process::Command::new("xmllint")
        .args(["--noout", "--relaxng", schema])
        .arg(file.path())
        .output()
        .expect("xmllint runs");
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// Whether xmllint is installed; when it is not, says so loudly, and fails under CI (`CI` set),
/// where `.ci/run` installs it: a local `cargo test` stays runnable without it.
fn xmllint_installed() -> bool {
    if std::process::Command::new("xmllint")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
    {
        return true;
    }
    let message = "xmllint is not installed, so the Atom feeds were NOT validated against RFC 4287's schema: \
                   install it with `apt-get install libxml2-utils` (Debian's package; .ci/run installs it)";
    assert!(std::env::var_os("CI").is_none(), "{message}");
    // Straight to the process's stderr: the test harness captures `eprintln!` of a passing test.
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "\n!!!!!!!! {message} !!!!!!!!\n");
    false
}

#[tokio::test]
async fn the_feeds_are_valid_against_the_atom_schema_of_rfc_4287() {
    if !xmllint_installed() {
        return;
    }
    // The validator is the real thing: it refuses a feed without the id the RFC requires.
    let broken = "<feed xmlns=\"http://www.w3.org/2005/Atom\"><title>t</title><updated>2026-01-01T00:00:00Z</updated></feed>";
    assert!(validate(broken).is_err(), "xmllint accepted a feed with no id");

    let app = TestApp::start().await;
    let empty = feed_with(&app, "/feed.atom", 0).await;
    validate(&empty.body).unwrap_or_else(|why| panic!("the empty feed: {why}\n{}", empty.body));
    let alice = app.user("Alice").await;
    let nobody_yet = feed_with(&app, &format!("/users/{alice}/feed.atom"), 0).await;
    validate(&nobody_yet.body)
        .unwrap_or_else(|why| panic!("a user's empty feed: {why}\n{}", nobody_yet.body));

    post(
        &app,
        &alice,
        "<b>Bold</b> & \"quoted\"",
        "A [link](https://example.com) and **markdown**.\n\n```\ncode\n```",
    )
    .await;
    let picture = |post: &str| {
        format!("![A kite](/pictures/{alice}/{post}/{}-1600x900.png)", "ab".repeat(32))
    };
    post(&app, &alice, "Long", &format!("{}\n\n{}", picture("p"), "word ".repeat(100))).await;
    // A post shows only its own pictures as images, so its picture names its id, known once it
    // is created.
    let pictured = post(&app, &alice, "A picture", "Soon a picture.").await;
    let edited = app
        .put(
            &format!("/api/posts/{pictured}"),
            json!({"title": "A picture", "content": picture(&pictured)}),
        )
        .await;
    assert_eq!(edited.status, StatusCode::OK, "{}", edited.body);
    let first = app.post_by(&alice, "Edited later").await;
    app.put(&format!("/api/posts/{first}"), json!({"title": "Edited", "content": "Now."})).await;
    for path in ["/feed.atom".to_owned(), format!("/users/{alice}/feed.atom")] {
        // The edit reaches the copies a moment after it, as the post did.
        let has_picture = |body: &str| {
            body.contains("&lt;img src=&quot;/pictures/")
                || body.contains("&lt;img src=\"/pictures/")
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        let got = loop {
            let got = feed_with(&app, &path, 4).await;
            if has_picture(&got.body) || Instant::now() > deadline {
                break got;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        validate(&got.body).unwrap_or_else(|why| panic!("{path}: {why}\n{}", got.body));
        // A picture's path in a post resolves against the feed's `xml:base`, the blog itself.
        let document = roxmltree::Document::parse(&got.body).unwrap();
        let base =
            document.root_element().attribute(("http://www.w3.org/XML/1998/namespace", "base"));
        assert_eq!(base, Some(format!("{}/", app.public).as_str()), "{path}");
        assert!(has_picture(&got.body), "{path}: the picture is in the entry's HTML");
    }
}

#[tokio::test]
async fn the_feed_is_served_from_the_front_pages_cache() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    app.post_by(&alice, "Cached").await;
    let first = feed_with(&app, "/feed.atom", 1).await;
    let etag = first.header("etag").to_owned();
    assert!(etag.starts_with('"'), "{etag}");
    assert!(first.header("cache-control").contains("s-maxage="));
    // Within the cache's lifetime (a second) the front page and the feed share one read of
    // `feed`. A busy machine can let that second pass between the two requests, so the pair is
    // sent again; a front page that never shares the feed's read fails every time.
    let mut operations = Vec::new();
    for _ in 0..10 {
        get(&app, "/feed.atom", &[]).await;
        operations.push(get(&app, "/", &[]).await.header("x-cosmos-operations").to_owned());
        if operations.last().is_some_and(|count| count == "0") {
            break;
        }
    }
    assert_eq!(
        operations.last().map(String::as_str),
        Some("0"),
        "the front page read the feed page the feed had read: {operations:?}"
    );
    let again = get(&app, "/feed.atom", &[("if-none-match", &etag)]).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    assert!(again.body.is_empty(), "a 304 has no body");
    assert_eq!(again.header("etag"), etag);
    assert_eq!(
        get(&app, "/feed.atom", &[("if-none-match", "\"other\"")]).await.status,
        StatusCode::OK
    );
    // The feed's links are the blog's configured address: a forwarded host changes nothing.
    let elsewhere = get(&app, "/feed.atom", &[("x-forwarded-host", "blog.example")]).await;
    assert_eq!(elsewhere.header("etag"), etag);
}

#[tokio::test]
async fn every_page_links_its_feeds_in_its_head() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let blog_feed = "<link rel=\"alternate\" type=\"application/atom+xml\" title=\"Cosmos Blog: newest posts\" href=\"/feed.atom\">";
    for path in [
        "/".to_owned(),
        "/signin".to_owned(),
        "/no-such-page".to_owned(),
        format!("/users/{alice}"),
    ] {
        let page = get(&app, &path, &[]).await.body;
        let head = page.split("</head>").next().unwrap();
        assert!(head.contains(blog_feed), "{path}: {head}");
    }
    let user_page = get(&app, &format!("/users/{alice}"), &[]).await.body;
    let own = format!(
        "<link rel=\"alternate\" type=\"application/atom+xml\" title=\"alice: posts\" href=\"/users/{alice}/feed.atom\">"
    );
    assert!(user_page.split("</head>").next().unwrap().contains(&own), "{user_page}");
    assert!(
        user_page.contains(&format!(
            "<a href=\"/users/{alice}/feed.atom\">Follow <bdi>alice</bdi>’s posts</a>"
        )),
        "{user_page}"
    );
}

#[tokio::test]
async fn a_users_feed_holds_their_posts_alone() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let alices = app.post_by(&alice, "By Alice").await;
    app.post_by(&bob, "By Bob").await;
    let path = format!("/users/{alice}/feed.atom");
    let got = feed_with(&app, &path, 1).await;
    assert!(
        got.body.contains(&format!("<id>urn:uuid:{alices}</id>")) && !got.body.contains("By Bob"),
        "{}",
        got.body
    );
    assert!(got.body.contains("<title type=\"text\">alice · Cosmos Blog</title>"), "{}", got.body);
    assert_eq!(
        got.header("x-cosmos-operations"),
        "2",
        "the user's posts mark and Q3: the name comes with the posts"
    );
    assert!(got.body.contains(&format!(
        "<link rel=\"self\" type=\"application/atom+xml\" href=\"{}{path}\"/>",
        app.public
    )));

    let carol = app.user("carol").await;
    let none_yet = get(&app, &format!("/users/{carol}/feed.atom"), &[]).await;
    assert_eq!(none_yet.status, StatusCode::OK);
    assert!(
        none_yet.body.contains("<title type=\"text\">carol · Cosmos Blog</title>")
            && !none_yet.body.contains("<entry>")
    );
    assert_eq!(get(&app, "/users/nobody/feed.atom", &[]).await.status, StatusCode::NOT_FOUND);
}

/// The feed's links are at the blog's configured address (`BLOG_PUBLIC_URL`): a request's
/// forwarded host and scheme, well formed or not, change nothing in it.
#[tokio::test]
async fn the_feeds_links_are_the_configured_address_whatever_the_request_says() {
    let dir = tempfile::tempdir().unwrap();
    let public_url = Some("https://blog.example".parse().unwrap());
    let app =
        TestApp::start_configured(blog::Config { public_url, ..TestApp::config(dir.path()) }).await;
    let alice = app.user("alice").await;
    let id = app.post_by(&alice, "Hello").await;
    let here = feed_with(&app, "/feed.atom", 1).await;
    assert!(here.body.contains(
        "<link rel=\"self\" type=\"application/atom+xml\" href=\"https://blog.example/feed.atom\"/>"
    ));
    assert!(
        here.body.contains(&format!("href=\"https://blog.example/posts/{id}\"")),
        "{}",
        here.body
    );
    for headers in [
        &[("x-forwarded-host", "evil.example"), ("x-forwarded-proto", "http")][..],
        &[("x-forwarded-host", "evil.example/\"><x")][..],
        &[("x-forwarded-proto", "gopher")][..],
        &[("host", "evil.example")][..],
    ] {
        let there = get(&app, "/feed.atom", headers).await;
        assert_eq!(there.status, StatusCode::OK, "{headers:?}");
        assert_eq!(there.body, here.body, "{headers:?}");
    }
}

/// A tag's feed: the posts with the tag in any form, each entry with its tags as categories,
/// valid against RFC 4287's schema; a tag nobody used is an empty feed, not a 404.
#[tokio::test]
async fn a_tags_feed_lists_its_posts_with_their_tags_as_categories() {
    let app = TestApp::start().await;
    let alice = app.user("Alice").await;
    let body = json!({"userId": alice, "title": "Tagged", "content": "Some.", "tags": ["Rust", "Cosmos DB"]});
    assert_eq!(app.post("/api/posts", body).await.status, StatusCode::CREATED);
    post(&app, &alice, "Untagged", "Other.").await;
    let got = feed_with(&app, "/tags/RUST/feed.atom", 1).await;
    assert!(got.body.contains("<category term=\"rust\" label=\"Rust\"/>"), "{}", got.body);
    assert!(
        got.body.contains("<category term=\"cosmos db\" label=\"Cosmos DB\"/>"),
        "{}",
        got.body
    );
    let document = roxmltree::Document::parse(&got.body).unwrap();
    let feed = document.root_element();
    assert_eq!(
        link(feed, "self"),
        format!("{}/tags/rust/feed.atom", app.public),
        "every form of the tag has one feed"
    );
    assert_eq!(link(feed, "alternate"), format!("{}/tags/rust", app.public));
    assert_eq!(text(feed, "title"), "Rust · Cosmos Blog");
    let unused = feed_with(&app, "/tags/nobody/feed.atom", 0).await;
    if xmllint_installed() {
        validate(&got.body).unwrap_or_else(|why| panic!("a tag's feed: {why}\n{}", got.body));
        validate(&unused.body)
            .unwrap_or_else(|why| panic!("an unused tag's feed: {why}\n{}", unused.body));
    }
    let tag_page = get(&app, "/tags/rust", &[]).await.body;
    assert!(
        tag_page.contains(
            "<link rel=\"alternate\" type=\"application/atom+xml\" title=\"Posts tagged Rust\" href=\"/tags/rust/feed.atom\">"
        ),
        "{tag_page}"
    );
}
