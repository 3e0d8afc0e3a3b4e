//! How often the pages read the store and what a reader gets from caches: ETags, the feed and
//! a post read about once a second, a write shown at once, compression and security headers.

use super::*;

#[tokio::test]
async fn the_lists_revalidate_with_an_etag() {
    let app = TestApp::start().await;
    let user = app.user("alice").await;
    app.post_by(&user, "Cached").await;
    let browser = Browser::new(&app);
    browser.eventually("/", |html| html.contains("Cached")).await;
    for path in ["/", "/api/feed"] {
        let first = browser.get(path).await;
        let etag = first.header("etag").to_owned();
        assert!(etag.starts_with('"'), "{path}: {etag}");
        assert!(first.header("cache-control").contains("s-maxage="), "{path}");
        let again = browser.get_with(path, &[("if-none-match", &etag)]).await;
        assert_eq!(again.status, StatusCode::NOT_MODIFIED, "{path}");
        assert!(again.html.is_empty(), "{path}: a 304 has no body");
        assert_eq!(again.header("etag"), etag);
        let other = browser.get_with(path, &[("if-none-match", "\"something-else\"")]).await;
        assert_eq!(other.status, StatusCode::OK, "{path}");
    }
    // A new post changes the page, and so its ETag: the cache was dropped by the change feed.
    let before = browser.get("/").await.header("etag").to_owned();
    app.post_by(&user, "Newer").await;
    let after = browser.eventually("/", |html| html.contains("Newer")).await;
    assert_ne!(after.header("etag"), before);
}

#[tokio::test]
async fn many_concurrent_front_page_loads_read_the_feed_about_once_a_second() {
    let app = TestApp::start().await;
    let user = app.user("alice").await;
    app.post_by(&user, "Popular").await;
    let browser = Browser::new(&app);
    browser.eventually("/", |html| html.contains("Popular")).await;

    let started = Instant::now();
    let loads: Vec<_> = (0..200)
        .map(|n| {
            let path = if n % 2 == 0 { "/" } else { "/api/feed" };
            browser.get(path)
        })
        .collect();
    let answers = futures::future::join_all(loads).await;
    let seconds = started.elapsed().as_secs_f64();
    assert!(answers.iter().all(|got| got.status == StatusCode::OK));
    let queries: u64 = answers.iter().map(Got::operations).sum();
    let bound = seconds.ceil() as u64 + 1;
    assert!(
        queries <= bound,
        "200 loads in {seconds:.2} s made {queries} Cosmos queries; at most {bound} expected"
    );
    assert!(
        answers.iter().filter(|got| got.operations() == 0).count() >= 200 - bound as usize,
        "cache hits cost nothing"
    );
}

/// The feed cache is dropped by `PostsChangeFeed` itself, not only by time: within one cache
/// lifetime, a delivered post change makes the next feed read go to the store and show it.
#[tokio::test]
async fn posts_change_feed_drops_the_cached_feed_at_once() {
    use blog::testing::changefeed::Function;
    use blog::testing::cosmos::Container;

    // Playing the host: nothing delivers the change feed but this test.
    let app = TestApp::start_as_host().await;
    let user = app.user("alice").await;
    let post = app.post_by(&user, "Delivered").await;
    let first = app.get("/api/feed").await;
    assert_eq!(first.body["items"].as_array().unwrap().len(), 0, "no copy yet");
    assert_eq!(app.state.feed.cached_pages(), 1);

    let document = app
        .state
        .store
        .read::<serde_json::Value>(Container::Posts, &post, &post)
        .await
        .unwrap()
        .unwrap();
    Function::PostsChangeFeed.deliver(&app.state, vec![document]).await.unwrap();
    // Gone at once, whatever the time (a slow machine may take longer than a cache lifetime).
    assert_eq!(app.state.feed.cached_pages(), 0, "the delivery dropped the cache");
    let after = app.get("/api/feed").await;
    assert_eq!(after.body["items"].as_array().unwrap().len(), 1, "the post is in the feed at once");
    assert_ne!(after.header("etag"), first.header("etag"));
}

/// On a post with more likes than the first page shows, a later liker still sees that they
/// like it, and can take the like back (one point read of their like, not a search of a page).
#[tokio::test]
async fn a_later_liker_of_a_popular_post_sees_their_like() {
    let app = TestApp::start().await;
    let author = app.user("author").await;
    let post = app.post_by(&author, "Popular").await;
    for n in 0..29 {
        let fan = app.user(&format!("fan{n}")).await;
        assert_eq!(
            app.post(&format!("/api/posts/{post}/likes"), serde_json::json!({"userId": fan}))
                .await
                .status,
            StatusCode::CREATED
        );
    }
    let mut late = Browser::new(&app);
    late.sign_up("late", "Late").await;
    let liked = late.submit(&format!("/posts/{post}/likes"), &[]).await;
    assert_eq!(liked.status, StatusCode::SEE_OTHER, "{}", liked.html);
    let page = late.get(&format!("/posts/{post}")).await;
    assert!(page.html.contains("30 likes"), "{}", page.html);
    assert!(
        page.html.contains("You like this post.") && page.html.contains("Take back your like"),
        "{}",
        page.html
    );
    assert_eq!(page.operations(), 4, "Q2 + Q4 + Q5, and the viewer's like past the first page");
    let unliked = late.submit(&format!("/posts/{post}/unlike"), &[]).await;
    assert_eq!(unliked.status, StatusCode::SEE_OTHER, "{}", unliked.html);
    let page = late.get(&format!("/posts/{post}")).await;
    assert!(
        page.html.contains("29 likes") && !page.html.contains("You like this post."),
        "{}",
        page.html
    );
}

/// The head of the answer to `GET path` with `Accept-Encoding: encoding` (none if empty), sent
/// on a raw socket (an HTTP client library may decompress and drop `Content-Encoding` before the
/// test sees it).
async fn head_with_encoding(app: &TestApp, path: &str, encoding: &str) -> HeaderMap {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = app.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let accept = if encoding.is_empty() {
        String::new()
    } else {
        format!("Accept-Encoding: {encoding}\r\n")
    };
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {address}\r\n{accept}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let end = answer.windows(4).position(|window| window == b"\r\n\r\n").expect("a whole head");
    let head = String::from_utf8_lossy(&answer[..end]).into_owned();
    let mut headers = HeaderMap::new();
    for line in head.lines().skip(1) {
        let (name, value) = line.split_once(':').unwrap();
        headers.append(
            reqwest::header::HeaderName::from_bytes(name.trim().as_bytes()).unwrap(),
            value.trim().parse().unwrap(),
        );
    }
    headers
}

/// Pages are compressed for a browser that accepts it, and carry a Content-Security-Policy that
/// the pages' own markup passes (one stylesheet of the blog's, no script, no inline style), no
/// framing, `nosniff` and a Referrer-Policy; the API's answers carry `nosniff` too.
#[tokio::test]
async fn pages_are_served_compressed_with_security_headers() {
    let app = TestApp::start().await;
    let author = app.user("alice").await;
    let post = app.post_by(&author, "Headers").await;
    for path in [
        "/".to_owned(),
        format!("/posts/{post}"),
        "/signin".to_owned(),
        "/posts/missing".to_owned(),
    ] {
        let headers = head_with_encoding(&app, &path, "gzip").await;
        assert_eq!(headers["content-encoding"], "gzip", "{path}: {headers:?}");
        // Not compressed for a client that accepts no encoding, and a shared cache is told that
        // the answer depends on it either way.
        let plain = head_with_encoding(&app, &path, "").await;
        assert!(plain.get("content-encoding").is_none(), "{path}: {plain:?}");
        for answer in [&headers, &plain] {
            assert!(
                answer.get_all("vary").iter().any(|vary| vary == "accept-encoding"),
                "{path}: {answer:?}"
            );
        }
        let policy = headers["content-security-policy"].to_str().unwrap();
        assert!(
            policy.contains("default-src 'none'") && policy.contains("style-src 'self'"),
            "{path}: {policy}"
        );
        assert!(
            policy.contains("frame-ancestors 'none'") && !policy.contains("unsafe-inline"),
            "{path}: {policy}"
        );
        assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(headers["x-frame-options"], "DENY", "{path}");
        assert_eq!(headers["referrer-policy"], "strict-origin-when-cross-origin", "{path}");
    }
    // What the policy allows is all the pages use: no script, no inline style, no other origin.
    // The one exception is the post's JSON-LD: a data block, which the browser never runs (so
    // the policy needs no `script-src` for it), naming schema.org's vocabulary by its address.
    let page = Browser::new(&app).get(&format!("/posts/{post}")).await.html;
    let data = "<script type=\"application/ld+json\">";
    let at = page.find(data).expect("a published post's JSON-LD");
    let end = at + page[at..].find("</script>").unwrap() + "</script>".len();
    let html = format!("{}{}", &page[..at], &page[end..]);
    for forbidden in ["<script", " style=", "<style", " src="] {
        assert!(!html.contains(forbidden), "{forbidden} in a page: {html}");
    }
    // (An absolute address is the page's own, for its canonical link and OpenGraph.)
    for (at, _) in html
        .match_indices("http")
        .filter(|(at, _)| html[*at..].starts_with("http://") || html[*at..].starts_with("https://"))
    {
        assert!(html[at..].starts_with(&app.public), "another origin in a page: {}", &html[at..]);
    }
    let api = head_with_encoding(&app, "/api/feed", "br").await;
    assert_eq!(api["content-encoding"], "br");
    assert_eq!(api["x-content-type-options"], "nosniff");
    assert!(api.get("content-security-policy").is_none(), "JSON is not a page");
}

/// The post page's reads are shared by its viewers for a second, as the
/// front page's are: a burst of views of a popular post costs its three reads about once a
/// second; a write through this instance shows at once; the page revalidates with an ETag.
#[tokio::test]
async fn many_views_of_a_post_read_it_about_once_a_second() {
    let app = TestApp::start().await;
    let author = app.user("author").await;
    let post = app.post_by(&author, "Popular").await;
    let browser = Browser::new(&app);
    let path = format!("/posts/{post}");
    let first = browser.get(&path).await;
    assert_eq!(first.operations(), 3, "Q2 + Q4 + Q5");

    let started = Instant::now();
    let answers = futures::future::join_all((0..200).map(|_| browser.get(&path))).await;
    let seconds = started.elapsed().as_secs_f64();
    assert!(answers.iter().all(|got| got.status == StatusCode::OK));
    let operations: u64 = answers.iter().map(Got::operations).sum();
    let bound = 3 * (seconds.ceil() as u64 + 1);
    assert!(
        operations <= bound,
        "200 views in {seconds:.2} s made {operations} operations; at most {bound} expected"
    );

    // A comment through the API (this instance) drops the post's views: the next view shows it.
    let body = serde_json::json!({"userId": author, "content": "Seen at once"});
    assert_eq!(
        app.post(&format!("/api/posts/{post}/comments"), body).await.status,
        StatusCode::CREATED
    );
    let page = browser.get(&path).await;
    assert!(page.html.contains("Seen at once") && page.html.contains("1 comment"), "{}", page.html);

    // Revalidation: the same page answers 304 to its ETag.
    let etag = page.header("etag").to_owned();
    assert!(etag.starts_with('"'), "{etag:?}");
    assert_eq!(
        page.header("cache-control"),
        "public, max-age=0, s-maxage=5, stale-while-revalidate=30"
    );
    let again = browser.get_with(&path, &[("if-none-match", &etag)]).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
}

/// A write through this instance has its kept view of the post checked on the next view, which
/// reads the post and only the list the write changed (the post's lists' versions say which):
/// the comments after a comment or its deletion, the likes after a like or an unlike, neither
/// after an edit.
#[tokio::test]
async fn a_write_through_this_instance_has_the_next_view_read_only_what_it_changed() {
    let app = TestApp::start().await;
    let author = app.user("author").await;
    let fan = app.user("fan").await;
    let post = app.post_by(&author, "Mended").await;
    let browser = Browser::new(&app);
    let path = format!("/posts/{post}");
    assert_eq!(browser.get(&path).await.operations(), 3, "Q2 + Q4 + Q5");

    let body = serde_json::json!({"userId": fan, "content": "Read with the post"});
    let commented = app.post(&format!("/api/posts/{post}/comments"), body).await;
    assert_eq!(commented.status, StatusCode::CREATED, "{}", commented.body);
    let page = browser.get(&path).await;
    assert_eq!(page.operations(), 2, "Q2, then Q4: the comments' version moved");
    assert!(
        page.html.contains("Read with the post") && page.html.contains("1 comment"),
        "{}",
        page.html
    );

    let liked =
        app.post(&format!("/api/posts/{post}/likes"), serde_json::json!({"userId": fan})).await;
    assert_eq!(liked.status, StatusCode::CREATED, "{}", liked.body);
    let page = browser.get(&path).await;
    assert_eq!(page.operations(), 2, "Q2, then Q5: the likes' version moved");
    assert!(
        page.html.contains("Liked by") && page.html.contains("Read with the post"),
        "{}",
        page.html
    );

    let unliked = app
        .send_as(
            Some(&fan),
            reqwest::Method::DELETE,
            &format!("/api/posts/{post}/likes/{fan}"),
            None,
        )
        .await;
    assert_eq!(unliked.status, StatusCode::NO_CONTENT, "{}", unliked.body);
    let page = browser.get(&path).await;
    assert_eq!(page.operations(), 2, "Q2, then Q5");
    assert!(!page.html.contains("Liked by") && page.html.contains("0 likes"), "{}", page.html);

    let edited = app
        .put(
            &format!("/api/posts/{post}"),
            serde_json::json!({"title": "Mended, edited", "content": "Again."}),
        )
        .await;
    assert_eq!(edited.status, StatusCode::OK, "{}", edited.body);
    let page = browser.get(&path).await;
    assert_eq!(page.operations(), 1, "Q2 alone: an edit moves neither list's version");
    assert!(
        page.html.contains("Mended, edited") && page.html.contains("Read with the post"),
        "{}",
        page.html
    );

    let comment = commented.body["id"].as_str().unwrap();
    let deleted = app
        .send_as(
            Some(&fan),
            reqwest::Method::DELETE,
            &format!("/api/posts/{post}/comments/{comment}"),
            None,
        )
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.body);
    let page = browser.get(&path).await;
    assert_eq!(page.operations(), 2, "Q2, then Q4");
    assert!(
        !page.html.contains("Read with the post") && page.html.contains("0 comments"),
        "{}",
        page.html
    );
}

/// The front page for readers who are not signed in is rendered once per feed page read and
/// shared by all of them; what differs between requests still differs (the page size asked for,
/// and who is signed in), and the address a request names does not (the canonical link).
#[tokio::test]
async fn the_shared_front_page_keeps_what_differs_between_readers() {
    let app = TestApp::start().await;
    let author = app.user("author").await;
    for n in 0..3 {
        app.post_by(&author, &format!("Shared {n}")).await;
    }
    app.eventually("/api/feed", |feed| {
        feed["items"].as_array().is_some_and(|items| items.len() == 3)
    })
    .await;
    let client = reqwest::Client::new();
    let front = |host: &'static str, query: &'static str| {
        let request = client.get(format!("{}/{query}", app.base)).header("Host", host);
        async move { request.send().await.unwrap().text().await.unwrap() }
    };
    // The address a request says it was sent to changes nothing: the canonical link is the
    // blog's configured address, for every reader a shared copy is handed to.
    let here = front("blog.example", "").await;
    let there = front("other.example", "").await;
    assert!(here.contains(&format!("<link rel=\"canonical\" href=\"{}/\">", app.public)), "{here}");
    assert_eq!(here, there);
    let two = front("blog.example", "?limit=2").await;
    assert!(
        two.contains("href=\"/?limit=2&amp;continuationToken="),
        "a page of two links on to the next: {two}"
    );
    assert!(!here.contains("continuationToken="), "{here}");

    let mut alice = Browser::new(&app);
    alice.sign_up("alice", "Alice").await;
    let signed_in = alice.get("/").await;
    assert!(signed_in.html.contains("Signed in as"), "{}", signed_in.html);
    assert!(
        !front("blog.example", "").await.contains("Signed in as"),
        "a signed-in page is never shared"
    );
}
