//! The search page and the search box in every page's header: posts found with what matched
//! marked, paged; how to search without a query; a refused query a 400 page saying why.

use super::*;

/// The header's form, as every page has it (its box's value aside).
const SEARCH_FORM: &str = "<form class=\"search\" role=\"search\" method=\"get\" action=\"/search\">\
    <label class=\"visually-hidden\" for=\"site-search\">Search posts</label>\
    <input type=\"search\" id=\"site-search\" name=\"q\" maxlength=\"256\"";

/// `/search` with `q` percent-encoded, and `rest` (`&limit=1`, ...) after it.
fn search_path(q: &str, rest: &str) -> String {
    format!("/search?{}{rest}", serde_urlencoded::to_string([("q", q)]).unwrap())
}

/// A post by `author` through the API: its id.
async fn post(app: &TestApp, author: &str, title: &str, content: &str) -> String {
    let body = serde_json::json!({"userId": author, "title": title, "content": content});
    let answer = app.post("/api/posts", body).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    answer.body["id"].as_str().unwrap().to_owned()
}

/// The one search form of `html`, and the value its box holds.
fn search_box(html: &str) -> Option<String> {
    assert_eq!(html.matches("role=\"search\"").count(), 1, "one search form: {html}");
    assert_eq!(html.matches("name=\"q\"").count(), 1, "one search box: {html}");
    let after = html.split(SEARCH_FORM).nth(1).unwrap_or_else(|| panic!("no search form: {html}"));
    let tag = after.split('>').next().unwrap();
    tag.split(" value=\"").nth(1).map(|value| value.split('"').next().unwrap().to_owned())
}

#[tokio::test]
async fn every_page_has_the_search_box_in_its_header() {
    let app = TestApp::start().await;
    let (alice, post) = alice_with_a_post(&app).await;
    for path in ["/", post.as_str(), "/users/alice", "/write", "/search", "/no/such/page"] {
        let got = alice.get(path).await;
        let header = got.html.split("<main").next().unwrap();
        assert!(header.contains(SEARCH_FORM), "{path}: {}", got.html);
        assert!(header.contains("<button type=\"submit\">Search</button></form>"), "{path}");
        assert_eq!(search_box(&got.html), None, "{path}: an empty box");
    }
    let signed_out = Browser::new(&app).get("/").await;
    assert_eq!(search_box(&signed_out.html), None);
}

#[tokio::test]
async fn a_post_is_found_by_a_word_with_it_marked() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let id = post(&app, &alice, "Kites over the harbour", "Strings snapped in the gale.").await;
    let browser = Browser::new(&app);
    let path = search_path("gale", "");
    let got = browser.eventually(&path, |html| html.contains("Kites over the harbour")).await;
    assert_eq!(got.status, StatusCode::OK);
    let html = &got.html;
    assert!(html.contains("<title>Search: gale · Cosmos Blog</title>"), "{html}");
    assert!(html.contains("<h1>Search: <bdi>gale</bdi></h1>"), "{html}");
    assert!(html.contains("This page shows 1 post found, best first."), "{html}");
    assert!(html.contains(&format!("<a href=\"/posts/{id}\"><bdi>Kites over the harbour</bdi>")));
    assert!(
        html.contains(
            "<p class=\"excerpt\" dir=\"auto\">Strings snapped in the <mark>gale</mark>."
        ),
        "{html}"
    );
    assert_eq!(search_box(html).as_deref(), Some("gale"), "the box holds the query");
    // Search engines may index it, at its address without the query.
    assert!(!html.contains("noindex"), "{html}");
    assert!(html.contains(&format!("<link rel=\"canonical\" href=\"{}/search\">", app.public)));
    let robots = browser.get("/robots.txt").await.html;
    assert!(!robots.lines().any(|line| line.starts_with("Disallow: /search")), "{robots}");

    // A word of its title finds it too; one no post has finds nothing, and says so.
    let title = browser.get(&search_path("harbour", "")).await;
    assert!(title.html.contains("Kites over the harbour"), "{}", title.html);
    let none = browser.get(&search_path("zeppelin", "")).await;
    assert_eq!(none.status, StatusCode::OK);
    assert!(none.html.contains("No post has these words."), "{}", none.html);
    assert!(!none.html.contains("<ol class=\"posts\">"), "{}", none.html);
}

#[tokio::test]
async fn an_author_or_a_tag_the_query_names_is_shown_above_the_posts() {
    let app = TestApp::start().await;
    let ada = app.user("Ada").await;
    let body = serde_json::json!({"userId": ada, "title": "Engines", "content": "Gears.", "tags": ["Ada"]});
    assert_eq!(app.post("/api/posts", body).await.status, StatusCode::CREATED);
    let browser = Browser::new(&app);
    let got = browser.eventually("/search?q=Ada", |html| html.contains("Tag: ")).await;
    let named =
        got.html.split("<ul class=\"named\"").nth(1).unwrap().split("</ul>").next().unwrap();
    assert!(
        named.contains(&format!("Author: <a href=\"/users/{ada}\"><bdi>Ada</bdi></a>")),
        "{named}"
    );
    assert!(named.contains("Tag: <a rel=\"tag\" href=\"/tags/ada\"><bdi>Ada</bdi></a>"), "{named}");
}

#[tokio::test]
async fn without_a_query_the_page_says_how_to_search() {
    let app = TestApp::start().await;
    let browser = Browser::new(&app);
    for path in ["/search", "/search?q=", "/search?q=%20%20", "/search?utm_source=x"] {
        let got = browser.get(path).await;
        assert_eq!(got.status, StatusCode::OK, "{path}: {}", got.html);
        assert!(got.html.contains("<title>Search · Cosmos Blog</title>"), "{path}");
        for help in ["Words: ", "A phrase in quotes", "A minus before a word", "Russian"] {
            assert!(got.html.contains(help), "{path}: {help}: {}", got.html);
        }
        search_box(&got.html);
    }
}

#[tokio::test]
async fn a_refused_query_is_a_400_page_with_the_reason_and_the_box() {
    let app = TestApp::start().await;
    let browser = Browser::new(&app);
    let long = "k".repeat(257);
    for (q, says, kept) in [
        ("и в", "too common", "и в"),
        ("kite\u{1}", "control character (U+0001)", "kite"),
        ("Сosmos", "mixes", "Сosmos"),
        ("***", "no word", "***"),
        (long.as_str(), "257 bytes", long.as_str()),
    ] {
        let got = browser.get(&search_path(q, "")).await;
        assert_eq!(got.status, StatusCode::BAD_REQUEST, "{q:?}: {}", got.html);
        assert_eq!(got.header("content-type"), "text/html; charset=utf-8");
        assert!(got.html.contains("<h1>That did not work</h1>"), "{q:?}: {}", got.html);
        assert!(got.html.contains(says), "{q:?}: {says}: {}", got.html);
        assert_eq!(search_box(&got.html).as_deref(), Some(&*escape(kept)), "{q:?}");
    }
    let limit = browser.get(&search_path("kite", "&limit=26")).await;
    assert_eq!(limit.status, StatusCode::BAD_REQUEST);
    assert!(limit.html.contains("`limit` must be a whole number from 1 to 25"), "{}", limit.html);
    let token = browser.get(&search_path("kite", "&continuationToken=abc")).await;
    assert_eq!(token.status, StatusCode::BAD_REQUEST);
    assert!(token.html.contains("continuationToken"), "{}", token.html);
}

#[tokio::test]
async fn a_hostile_query_shows_as_text() {
    let app = TestApp::start().await;
    let browser = Browser::new(&app);
    for q in ["<script>alert('q')</script>", "\"><img src=x onerror=alert(1)> kite", "kite\u{1}<b>"]
    {
        let got = browser.get(&search_path(q, "")).await;
        assert!(
            got.status == StatusCode::OK || got.status == StatusCode::BAD_REQUEST,
            "{q}: {}",
            got.html
        );
        let html = &got.html;
        assert!(!html.contains("<script>") && !html.contains("<img") && !html.contains("<b>"));
        let shown: String = q.chars().filter(|c| !c.is_control()).collect();
        assert_eq!(search_box(html), Some(escape(&shown)), "{q}: {html}");
        if got.status == StatusCode::OK {
            assert!(html.contains(&format!("<h1>Search: <bdi>{}</bdi></h1>", escape(q))), "{html}");
        }
    }
}

#[tokio::test]
async fn paging_by_one_reaches_the_second_result() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let first = post(&app, &alice, "Harbour lights", "The harbour at night.").await;
    let second = post(&app, &alice, "Boats", "Moored in the harbour.").await;
    let browser = Browser::new(&app);
    let path = search_path("harbour", "&limit=1");
    let both =
        |html: &str| html.contains("This page shows 1 post found") && html.contains("rel=\"next\"");
    app.eventually("/api/search?q=harbour", |page| {
        page["items"].as_array().is_some_and(|items| items.len() == 2)
    })
    .await;
    let one = browser.eventually(&path, both).await;
    let next = one.html.split("rel=\"next\" href=\"").nth(1).unwrap().split('"').next().unwrap();
    let next = next.replace("&amp;", "&");
    assert!(next.starts_with("/search?q=harbour&limit=1&continuationToken="), "{next}");
    let two = browser.get(&next).await;
    assert_eq!(two.status, StatusCode::OK, "{}", two.html);
    assert!(two.html.contains("This page shows 1 post found"), "{}", two.html);
    let shows = |html: &str, id: &str| html.contains(&format!("href=\"/posts/{id}\""));
    // The title's word ranks first; the other is on the next page.
    assert!(shows(&one.html, &first) && !shows(&one.html, &second), "{}", one.html);
    assert!(shows(&two.html, &second) && !shows(&two.html, &first), "{}", two.html);
    assert_eq!(search_box(&two.html).as_deref(), Some("harbour"));
}
