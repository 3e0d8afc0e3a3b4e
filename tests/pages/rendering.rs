//! What the pages show: text escaped and isolated, Markdown rendered safely, excerpts,
//! HTML 404 pages, and every page's head (icon, description, canonical address, Open Graph).

use super::*;

#[tokio::test]
async fn markup_shows_as_text_wherever_it_is_typed() {
    let app = TestApp::start().await;
    let mut mallory = Browser::new(&app);
    mallory.sign_up("mallory", "<script>alert('name')</script>").await;
    let post =
        mallory.write("<script>alert('title')</script>", "<img src=x onerror=alert(1)>").await;
    mallory
        .submit(&format!("{post}/comments"), &[("content", "<script>alert('comment')</script>")])
        .await;

    let front = mallory.eventually("/", |html| html.contains("alert(&#39;title&#39;)")).await;
    for page in
        [front.html, mallory.get(&post).await.html, mallory.get("/users/mallory").await.html]
    {
        assert!(!page.contains("<script>") && !page.contains("<img src=x"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(&#39;"), "{page}");
    }
}

#[tokio::test]
async fn a_missing_post_or_user_is_an_html_404_page() {
    let app = TestApp::start().await;
    let browser = Browser::new(&app);
    for path in
        ["/posts/nothing-here", "/users/nobody", "/posts/nothing-here/edit", "/no/such/page"]
    {
        let got = browser.get(path).await;
        assert_eq!(got.status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(got.header("content-type"), "text/html; charset=utf-8", "{path}");
        assert!(
            got.html.contains("<h1>Not found</h1>") && got.html.contains("Go to the front page"),
            "{path}: {}",
            got.html
        );
    }
    let wrong_method = browser.send(browser.client.delete(format!("{}/posts/x", app.base))).await;
    assert_eq!(
        (wrong_method.status, wrong_method.header("content-type")),
        (StatusCode::METHOD_NOT_ALLOWED, "text/html; charset=utf-8")
    );
    // The JSON API keeps answering problem+json.
    app.get("/api/no/such/resource").await.problem(404);
    app.get("/api/posts/nothing-here").await.problem(404);
}

#[tokio::test]
async fn the_stylesheet_and_sign_in_page_are_served() {
    let app = TestApp::start().await;
    let browser = Browser::new(&app);
    let sign_in = browser.get("/signin").await;
    let href = sign_in
        .html
        .split("<link rel=\"stylesheet\" href=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    assert!(href.starts_with("/style.css?v="), "versioned by content: {href}");
    let css = browser.get(href).await;
    assert!(css.header("cache-control").contains("immutable"));
    assert_eq!(css.header("content-type"), "text/css; charset=utf-8");
    assert!(css.html.contains("system-ui"));
    assert!(
        sign_in.html.contains("<label for=\"signin-user\">Your user id</label>"),
        "{}",
        sign_in.html
    );
    for landmark in [
        "<header class=\"site\">",
        "<main id=\"main\">",
        "<nav aria-label=\"Site\">",
        "<html lang=\"en\">",
    ] {
        assert!(sign_in.html.contains(landmark), "{landmark}");
    }
}

/// On the front page a long post's excerpt ends at a whole word with "…" and
/// a link on to the post; a short one is shown whole, with no link.
#[tokio::test]
async fn a_long_posts_excerpt_ends_at_a_word_with_a_link_on() {
    let app = TestApp::start().await;
    let mut alice = Browser::new(&app);
    alice.sign_up("alice", "Alice").await;
    let long = alice.write("A long one", &"lorem ipsum dolor ".repeat(40)).await;
    let short = alice.write("A short one", "Only this.").await;
    let front = alice
        .eventually("/", |html| html.contains("A long one") && html.contains("A short one"))
        .await;
    assert!(
        front.html.contains("dolor…</p>")
            || front.html.contains("ipsum…</p>")
            || front.html.contains("lorem…</p>"),
        "{}",
        front.html
    );
    assert!(
        front
            .html
            .contains(&format!("<a href=\"{long}\">Continue reading <bdi>A long one</bdi></a>")),
        "{}",
        front.html
    );
    assert!(front.html.contains(">Only this.</p>"));
    assert!(!front.html.contains(&format!("<a href=\"{short}\">Continue reading")));
}

/// Every page links an icon (browsers otherwise ask for `/favicon.ico` and log
/// the 404) and describes the blog; crawlers may read everything but the forms; the stylesheet
/// follows the reader's light or dark preference.
#[tokio::test]
async fn every_pages_head_is_complete() {
    let app = TestApp::start().await;
    let browser = Browser::new(&app);
    for path in ["/", "/signin", "/no-such-page"] {
        let page = browser.get(path).await;
        assert!(
            page.html.contains("<link rel=\"icon\" type=\"image/svg+xml\" href=\"/favicon.svg\">"),
            "{path}: {}",
            page.html
        );
        assert!(page.html.contains("<meta name=\"description\" content=\""), "{path}");
        assert!(
            page.html.contains("<meta name=\"color-scheme\" content=\"light dark\">"),
            "{path}"
        );
    }
    let icon = browser.get("/favicon.svg").await;
    assert_eq!(icon.status, StatusCode::OK);
    assert_eq!(icon.header("content-type"), "image/svg+xml");
    assert!(icon.html.starts_with("<svg "));
    let robots = browser.get("/robots.txt").await;
    assert_eq!(robots.status, StatusCode::OK);
    assert_eq!(robots.header("content-type"), "text/plain; charset=utf-8");
    for form in ["/write", "/signin", "/posts/*/edit", "/posts/*/delete", "/posts/*/revisions/"] {
        assert!(robots.html.contains(&format!("Disallow: {form}\n")), "{form}: {}", robots.html);
    }
    assert!(!robots.html.contains("Disallow: /\n"), "the pages themselves may be crawled");
    let sign_in = browser.get("/signin").await;
    let href = sign_in
        .html
        .split("<link rel=\"stylesheet\" href=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    let css = browser.get(href).await;
    assert!(
        css.html.contains("color-scheme: light dark")
            && css.html.contains("@media (prefers-color-scheme: dark)")
    );
}

/// A browser sends a textarea's line breaks as CR LF: they are stored as LF, as the API stores
/// them, and count once against the limit, as the field's `maxlength` counts them. Every field
/// carries the API's limit as its `maxlength`.
#[tokio::test]
async fn line_breaks_typed_in_a_browser_are_stored_as_lf() {
    let app = TestApp::start().await;
    let mut alice = Browser::new(&app);
    alice.sign_up("alice", "Alice").await;
    let post = alice.write("Lines", "one\r\ntwo\rthree").await;
    let post_id = post.trim_start_matches("/posts/");
    assert_eq!(app.get(&format!("/api/posts/{post_id}")).await.body["content"], "one\ntwo\nthree");

    // 600 lines of "ab": 1,799 characters with LF, 2,398 as the browser sends them.
    let long = vec!["ab"; 600].join("\r\n");
    let commented = alice.submit(&format!("{post}/comments"), &[("content", &long)]).await;
    assert_eq!(commented.status, StatusCode::SEE_OTHER, "{}", commented.html);
    let comments = app.get(&format!("/api/posts/{post_id}/comments")).await;
    assert_eq!(comments.body["items"][0]["content"], vec!["ab"; 600].join("\n"));

    let form = alice.get(&post).await.html;
    assert!(form.contains("name=\"content\" rows=\"8\" maxlength=\"2000\""), "{form}");
    let write = alice.get("/write").await.html;
    assert!(write.contains("name=\"title\" type=\"text\" value=\"\" maxlength=\"200\""), "{write}");
    assert!(write.contains("maxlength=\"20000\""), "{write}");
}

/// An error page (404, 403, 400, 405) keeps showing who is signed in, as every other page does.
#[tokio::test]
async fn error_pages_show_the_signed_in_person_as_signed_in() {
    let app = TestApp::start().await;
    let mut alice = Browser::new(&app);
    alice.sign_up("alice", "Alice").await;
    let bob = app.user("bob").await;
    let bobs_post = app.post_by(&bob, "Bob's").await;
    let forbidden = alice.get(&format!("/posts/{bobs_post}/edit")).await;
    let refused_query = alice.get("/?limit=abc").await;
    let wrong_method = alice.send(alice.client.delete(format!("{}/posts/x", app.base))).await;
    for (got, status) in [
        (alice.get("/posts/nothing-here").await, StatusCode::NOT_FOUND),
        (alice.get("/no/such/page").await, StatusCode::NOT_FOUND),
        (forbidden, StatusCode::FORBIDDEN),
        (refused_query, StatusCode::BAD_REQUEST),
        (wrong_method, StatusCode::METHOD_NOT_ALLOWED),
    ] {
        assert_eq!(got.status, status, "{}", got.html);
        assert!(
            got.html.contains("href=\"/users/alice\">Your page</a>")
                && got.html.contains("Sign out"),
            "{}",
            got.html
        );
        assert!(!got.html.contains("href=\"/signin\""), "{}", got.html);
        assert_eq!(
            got.header("cache-control"),
            "no-store",
            "an error is kept by nobody, the signed-in person's page least"
        );
    }
    let anonymous = Browser::new(&app).get("/posts/nothing-here").await;
    assert!(anonymous.html.contains("href=\"/signin\""), "{}", anonymous.html);
}

/// A right-to-left name or title must not reorder the text around it ("by 24 · فاطمة Nov
/// 2026"): every user-supplied name is isolated in `<bdi>`, and every title and text block
/// takes its direction from its own first strong character (`dir="auto"`).
#[tokio::test]
async fn right_to_left_text_is_isolated_from_the_text_around_it() {
    let app = TestApp::start().await;
    let mut fatima = Browser::new(&app);
    fatima.sign_up("fatima", "فاطمة الزهراء").await;
    let post = fatima.write("مرحبا", "نص عربي").await;
    fatima.submit(&format!("{post}/comments"), &[("content", "تعليق")]).await;
    fatima.submit(&format!("{post}/likes"), &[]).await;
    let page = fatima.get(&post).await.html;
    assert!(page.contains("<h1 dir=\"auto\">مرحبا</h1>"), "{page}");
    assert!(
        page.contains("by <a href=\"/users/fatima\"><bdi>فاطمة الزهراء</bdi></a> · <time"),
        "{page}"
    );
    assert!(
        page.contains("<div class=\"content\" dir=\"auto\"><p dir=\"auto\">نص عربي</p>\n</div>"),
        "{page}"
    );
    assert!(
        page.contains("<div class=\"content\" dir=\"auto\"><p dir=\"auto\">تعليق</p>\n</div>"),
        "{page}"
    );
    assert_eq!(
        page.matches("<bdi>فاطمة الزهراء</bdi>").count(),
        3,
        "author, liker and commenter: {page}"
    );
    let front = fatima.eventually("/", |html| html.contains("مرحبا")).await.html;
    assert!(
        front.contains("<bdi>مرحبا</bdi></a></h2>")
            && front.contains("<bdi>فاطمة الزهراء</bdi></a> · <time"),
        "{front}"
    );
    let user_page = fatima.get("/users/fatima").await.html;
    assert!(user_page.contains("<h1 dir=\"auto\">فاطمة الزهراء</h1>"), "{user_page}");
}

/// Posts and comments are Markdown on the pages, rendered safe (raw HTML as
/// text, links only to the web with `rel="nofollow ugc"`, images as links, never loaded); the
/// API returns the text as written; lists show it as plain text.
#[tokio::test]
async fn markdown_is_rendered_safely_on_the_pages() {
    let app = TestApp::start().await;
    let mut alice = Browser::new(&app);
    alice.sign_up("alice", "Alice").await;
    let text = "## Why\n\nSome **bold** text, see https://example.com/a_b.\n\n```\nlet x = 1 < 2;\n```\n\n\
                [bad](javascript:alert(1)) <script>alert(1)</script> ![a cat](https://cats.example/cat.png)";
    let post = alice.write("Rendered", text).await;
    alice
        .submit(&format!("{post}/comments"), &[("content", "*so* [true](https://example.org)")])
        .await;

    let page = alice.get(&post).await.html;
    for rendered in [
        "<h2 dir=\"auto\">Why</h2>",
        "<strong>bold</strong>",
        "<a href=\"https://example.com/a_b\" rel=\"nofollow ugc\">https://example.com/a_b</a>.",
        "<pre><code>let x = 1 &lt; 2;\n</code></pre>",
        "&lt;script&gt;alert(1)&lt;/script&gt;",
        "<a href=\"https://cats.example/cat.png\" rel=\"nofollow ugc\" class=\"image\">Image: a cat</a>",
        "<em>so</em> <a href=\"https://example.org\" rel=\"nofollow ugc\">true</a>",
    ] {
        assert!(page.contains(rendered), "{rendered}: {page}");
    }
    assert!(
        !page.contains("javascript:") && !page.contains("<script>") && !page.contains("<img"),
        "{page}"
    );
    assert!(!page.contains("**") && !page.contains("## "), "{page}");

    let id = post.trim_start_matches("/posts/");
    assert_eq!(
        app.get(&format!("/api/posts/{id}")).await.body["content"],
        text,
        "the API returns the text as written"
    );

    let front = alice.eventually("/", |html| html.contains("Rendered")).await.html;
    assert!(
        front.contains(
            "<p class=\"excerpt\" dir=\"auto\">Why Some bold text, see https://example.com/a_b. let x = 1 &lt; 2; bad "
        ),
        "{front}"
    );
    assert!(
        !front.contains("<strong>") && !front.contains("**"),
        "an excerpt is plain text: {front}"
    );
}

/// An excerpt reads as the post does, with no space before the punctuation
/// after an inline element, on the front page, the author's page and in the post page's
/// description for search engines and link previews.
#[tokio::test]
async fn summaries_have_no_space_before_punctuation_after_inline_elements() {
    let app = TestApp::start().await;
    let mut alice = Browser::new(&app);
    alice.sign_up("alice", "Alice").await;
    let post = alice
        .write(
            "Inline",
            "A **bold**: word, an *em*, and `code`. Also [a link](https://example.org).",
        )
        .await;
    // Nothing in it for HTML to escape: the page shows it as it is.
    let read = "A bold: word, an em, and code. Also a link.";

    let front = alice.eventually("/", |html| html.contains("Inline")).await.html;
    assert!(front.contains(&format!("<p class=\"excerpt\" dir=\"auto\">{read}</p>")), "{front}");
    let own = alice.eventually("/users/alice", |html| html.contains("Inline")).await.html;
    assert!(own.contains(&format!("<p class=\"excerpt\" dir=\"auto\">{read}</p>")), "{own}");
    let page = alice.get(&post).await.html;
    for meta in [
        format!("<meta name=\"description\" content=\"{read}\">"),
        format!("<meta property=\"og:description\" content=\"{read}\">"),
    ] {
        assert!(page.contains(&meta), "{meta}: {page}");
    }
}

/// Every page says what it is to search engines and link previews: a
/// canonical address without the query (a link shared with tracking parameters counts as the
/// page), OpenGraph's title, type, description and address; a post's description is its start.
#[tokio::test]
async fn every_page_describes_itself() {
    let app = TestApp::start().await;
    let author = app.user("author").await;
    let body = serde_json::json!({"userId": author, "title": "Seen in a preview", "content": "It **starts** like this, and goes on."});
    let post = app.post("/api/posts", body).await.body["id"].as_str().unwrap().to_owned();
    let browser = Browser::new(&app);
    let page = browser.get(&format!("/posts/{post}?utm_source=mastodon&fbclid=x")).await.html;
    let address = format!("{}/posts/{post}", app.public);
    for head in [
        format!("<link rel=\"canonical\" href=\"{address}\">"),
        format!("<meta property=\"og:url\" content=\"{address}\">"),
        "<meta property=\"og:type\" content=\"article\">".to_owned(),
        "<meta property=\"og:title\" content=\"Seen in a preview\">".to_owned(),
        "<meta name=\"description\" content=\"It starts like this, and goes on.\">".to_owned(),
        "<meta property=\"og:description\" content=\"It starts like this, and goes on.\">"
            .to_owned(),
    ] {
        assert!(page.contains(&head), "{head}: {page}");
    }
    let front = browser.get("/?ref=newsletter").await.html;
    assert!(
        front.contains(&format!("<link rel=\"canonical\" href=\"{}/\">", app.public)),
        "{front}"
    );
    assert!(front.contains("<meta property=\"og:type\" content=\"website\">"), "{front}");
    // A user's page describes itself as theirs.
    let user_page = browser.get(&format!("/users/{author}")).await.html;
    assert!(
        user_page.contains(
            "<meta property=\"og:description\" content=\"Posts by author on Cosmos Blog.\">"
        ),
        "{user_page}"
    );
}

/// The navigation says who is signed in, the name isolated from the text
/// around it (`<bdi>`): locally the name signed in with, on Azure the identity provider's name
/// for the person (App Service's X-MS-CLIENT-PRINCIPAL-NAME), not the principal id.
#[tokio::test]
async fn the_navigation_says_who_is_signed_in() {
    let app = TestApp::start().await;
    let mut browser = Browser::new(&app);
    assert!(!browser.get("/").await.html.contains("Signed in as"));
    browser.sign_up("fatima", "فاطمة الزهراء").await;
    let front = browser.get("/").await.html;
    assert!(front.contains("Signed in as <bdi>fatima</bdi>"), "{front}");
    let missing = browser.get("/posts/nothing-here").await.html;
    assert!(missing.contains("Signed in as <bdi>fatima</bdi>"), "the error pages too: {missing}");

    let azure = on_azure().await;
    let front = forms::page_on_azure(&azure, PRINCIPAL, "/").await;
    let html = front.body.as_str().unwrap();
    assert!(html.contains("Signed in as <bdi>alice@example.com</bdi>"), "{html}");
}
