//! The pages over HTTP: what a browser sends and gets, without the browser (tests/browser.rs
//! drives a real one). Forms are post/redirect/get, refused writes keep what was typed, every
//! state change refuses another site's forms, and everything shown is escaped.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Instant;

use blog::testing::http::HttpFunction;
use common::TestApp;
use common::forms::{self, Browser, Got, form_key};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;

/// Alice, signed up on `app`'s pages, with her post "Hello, pages" written in the form: her
/// browser and the post page's path.
async fn alice_with_a_post(app: &TestApp) -> (Browser, String) {
    let mut alice = Browser::new(app);
    alice.sign_up("alice", "Alice").await;
    let post = alice.write("Hello, pages", "My first post,\nwritten in a form.").await;
    (alice, post)
}

#[tokio::test]
async fn a_post_written_in_the_form_opens_on_its_own_page_in_three_reads() {
    let app = TestApp::start().await;
    let (alice, post) = alice_with_a_post(&app).await;
    assert!(post.starts_with("/posts/"), "the redirect goes to the post's own page: {post}");
    let page = alice.get(&post).await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.header("content-type"), "text/html; charset=utf-8");
    assert!(
        page.html.contains("<h1 dir=\"auto\">Hello, pages</h1>")
            && page.html.contains("Edit this post"),
        "{}",
        page.html
    );
    assert_eq!(page.operations(), 3, "Q2 + Q4 + Q5, nothing more");
}

#[tokio::test]
async fn a_written_post_reaches_the_front_page_under_its_authors_name() {
    let app = TestApp::start().await;
    let (alice, _) = alice_with_a_post(&app).await;
    let front = alice.eventually("/", |html| html.contains("Hello, pages")).await;
    assert!(
        front.html.contains("by <a href=\"/users/alice\"><bdi>Alice</bdi></a>"),
        "{}",
        front.html
    );
}

#[tokio::test]
async fn a_comment_and_a_like_sent_from_the_post_page_show_on_it() {
    let app = TestApp::start().await;
    let (alice, post) = alice_with_a_post(&app).await;
    let commented = alice.submit(&format!("{post}/comments"), &[("content", "First!")]).await;
    assert_eq!(commented.status, StatusCode::SEE_OTHER);
    assert!(commented.location().starts_with(&format!("{post}#comment-")));
    let liked = alice.submit(&format!("{post}/likes"), &[]).await;
    assert_eq!(liked.location(), format!("{post}#actions"));
    let page = alice.get(&post).await;
    assert!(
        page.html.contains("First!") && page.html.contains("1 comment · 1 like"),
        "{}",
        page.html
    );
    assert!(page.html.contains("You like this post."));
}

#[tokio::test]
async fn a_second_like_is_refused_on_the_page() {
    let app = TestApp::start().await;
    let (alice, post) = alice_with_a_post(&app).await;
    assert_eq!(alice.submit(&format!("{post}/likes"), &[]).await.status, StatusCode::SEE_OTHER);
    let again = alice.submit(&format!("{post}/likes"), &[]).await;
    assert_eq!(again.status, StatusCode::CONFLICT, "a second like is refused on the page");
    assert!(again.html.contains("already likes post"), "{}", again.html);
}

/// The edit page offers a way back to the post that changes nothing; an edited post says so.
#[tokio::test]
async fn an_edited_post_says_so_and_its_edit_page_offers_a_way_back() {
    let app = TestApp::start().await;
    let (alice, post) = alice_with_a_post(&app).await;
    assert!(!alice.get(&post).await.html.contains(" · edited "), "not edited yet");
    let edit_page = alice.get(&format!("{post}/edit")).await;
    assert!(
        edit_page.html.contains(&format!("<a href=\"{post}\">Cancel</a>")),
        "{}",
        edit_page.html
    );
    let edited = alice
        .submit(&format!("{post}/edit"), &[("title", "Hello, edited"), ("content", "Now edited.")])
        .await;
    assert_eq!(edited.location(), post);
    let after_edit = alice.get(&post).await.html;
    assert!(after_edit.contains("<h1 dir=\"auto\">Hello, edited</h1>"));
    assert!(after_edit.contains(" · edited <time"), "an edited post says so: {after_edit}");
}

#[tokio::test]
async fn a_rename_reaches_the_authors_posts() {
    let app = TestApp::start().await;
    let (alice, post) = alice_with_a_post(&app).await;
    let renamed = alice.submit("/users/alice", &[("username", "Alice Liddell")]).await;
    assert_eq!(renamed.location(), "/users/alice");
    alice.eventually(&post, |html| html.contains("><bdi>Alice Liddell</bdi></a>")).await;
}

/// Someone else sees no edit link, and may not edit.
#[tokio::test]
async fn someone_else_is_offered_no_edit_and_may_not_edit() {
    let app = TestApp::start().await;
    let (alice, post) = alice_with_a_post(&app).await;
    let mut bob = Browser::new(&app);
    bob.sign_up("bob", "Bob").await;
    let seen = bob.get(&post).await;
    assert!(!seen.html.contains("Edit this post") && seen.html.contains(">Like</button>"));
    assert_eq!(bob.get(&format!("{post}/edit")).await.status, StatusCode::FORBIDDEN);
    let refused =
        bob.submit(&format!("{post}/edit"), &[("title", "Mine now"), ("content", "x")]).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(alice.get(&post).await.html.contains("Hello, pages"), "a refused edit changes nothing");
}

#[tokio::test]
async fn signed_out_the_forms_are_gone() {
    let app = TestApp::start().await;
    let (alice, post) = alice_with_a_post(&app).await;
    let signed_out = alice.submit("/signout", &[]).await;
    assert!(signed_out.header("set-cookie").contains("Max-Age=0"));
    let anonymous = Browser::new(&app).get(&post).await;
    assert!(
        !anonymous.html.contains("<form method=\"post\" action=\"/posts/")
            && anonymous.html.contains("Sign in</a> to like")
    );
}

#[tokio::test]
async fn a_refused_form_shows_the_api_detail_next_to_its_field_and_keeps_what_was_typed() {
    let app = TestApp::start().await;
    let mut alice = Browser::new(&app);
    alice.sign_up("alice", "Alice").await;

    let refused =
        alice.submit("/write", &[("title", "   "), ("content", "Typed <b>carefully</b>.")]).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    let detail = app
        .post("/api/posts", serde_json::json!({"userId": "alice", "title": "   ", "content": "x"}))
        .await
        .problem(400);
    assert!(
        refused.html.contains(&format!(
            "<span class=\"error\" role=\"alert\" id=\"post-title-error\">{}</span>",
            escape(&detail.replacen("`title`", "Title", 1))
        )),
        "{}",
        refused.html
    );
    assert!(
        refused.html.contains("aria-invalid=\"true\" aria-describedby=\"post-title-error"),
        "{}",
        refused.html
    );
    assert!(
        refused.html.contains(">Typed &lt;b&gt;carefully&lt;/b&gt;.</textarea>"),
        "what was typed is kept: {}",
        refused.html
    );

    let long = "x".repeat(2001);
    let post = alice.write("A post", "Text").await;
    let refused = alice.submit(&format!("{post}/comments"), &[("content", &long)]).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(
        refused.html.contains(
            "id=\"comment-content-error\">Your comment must be at most 2000 characters long"
        ),
        "{}",
        refused.html
    );
    assert!(refused.html.contains(&long), "the comment is kept");

    let refused = alice.submit("/users/alice", &[("username", "\u{200B}")]).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(
        refused.html.contains("Username must contain a visible character."),
        "{}",
        refused.html
    );

    let refused = Browser::new(&app).submit("/signin", &[("user", "a b")]).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(
        refused.html.contains("id=\"signin-user-error\">Your user id must be 1 to 255 letters"),
        "{}",
        refused.html
    );

    let anonymous = Browser::new(&app).submit("/write", &[("title", "t"), ("content", "c")]).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);

    // The page speaks of its labels and of what to do, never of the API's
    // fields in backticks.
    let mut newcomer = Browser::new(&app);
    newcomer.sign_in("newcomer").await;
    let refused = newcomer.submit("/write", &[("title", "Hello"), ("content", "First post")]).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.html.contains("You have no profile yet"), "{}", refused.html);
    assert!(!refused.html.contains("`userId`"), "{}", refused.html);
}

#[tokio::test]
async fn a_taken_username_is_an_error_on_the_sign_up_and_rename_forms() {
    let app = TestApp::start().await;
    let mut alice = Browser::new(&app);
    alice.sign_up("alice", "Alice").await;

    let mut bob = Browser::new(&app);
    bob.sign_in("bob").await;
    let refused = bob.submit("/users", &[("username", "ALICE")]).await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    let error = format!("id=\"profile-username-error\">{}", escape("Username \"ALICE\" is taken"));
    assert!(refused.html.contains(&error), "{}", refused.html);
    assert!(refused.html.contains("value=\"ALICE\""), "what was typed is kept: {}", refused.html);
    assert!(refused.html.contains("Create my profile"), "the sign-up form again: {}", refused.html);

    let created = bob.submit("/users", &[("username", "Bob")]).await;
    assert_eq!(created.status, StatusCode::SEE_OTHER, "{}", created.html);
    let refused = bob.submit("/users/bob", &[("username", "alice")]).await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    let error = format!("id=\"rename-username-error\">{}", escape("Username \"alice\" is taken"));
    assert!(refused.html.contains(&error), "{}", refused.html);
    assert!(refused.html.contains("<details open>"), "the rename form is open: {}", refused.html);
    assert!(
        refused.html.contains("<h1 dir=\"auto\">Bob</h1>"),
        "a refused rename changes nothing: {}",
        refused.html
    );
}

fn escape(text: &str) -> String {
    blog::testing::http::esc(text).to_string()
}

/// Alice and Bob signed up on `app`'s pages, and Alice's post "Short-lived": their browsers
/// and the post page's path.
async fn alice_bob_and_a_short_lived_post(app: &TestApp) -> (Browser, Browser, String) {
    let mut alice = Browser::new(app);
    alice.sign_up("alice", "Alice").await;
    let mut bob = Browser::new(app);
    bob.sign_up("bob", "Bob").await;
    let post = alice.write("Short-lived", "Soon gone.").await;
    (alice, bob, post)
}

/// The address of the `n`th "Delete" link on `html`. (Deleting a comment is a link marked as
/// dangerous, to a page that asks first; its form posts to the same address.)
fn delete_path(html: &str, n: usize) -> String {
    const LINK: &str = "<a class=\"danger\" href=\"";
    let at = html.match_indices(LINK).nth(n).unwrap().0 + LINK.len();
    html[at..].split('"').next().unwrap().to_owned()
}

#[tokio::test]
async fn only_its_author_is_offered_to_delete_a_post() {
    let app = TestApp::start().await;
    let (alice, bob, post) = alice_bob_and_a_short_lived_post(&app).await;
    assert!(alice.get(&post).await.html.contains("Delete this post"));
    assert!(!bob.get(&post).await.html.contains("Delete this post"));
}

/// A like taken back is gone from the page; taken back again (in another tab) it is 404, on
/// the post's page saying why.
#[tokio::test]
async fn a_like_taken_back_is_gone_and_taken_back_again_is_404() {
    let app = TestApp::start().await;
    let (_alice, bob, post) = alice_bob_and_a_short_lived_post(&app).await;
    assert_eq!(bob.submit(&format!("{post}/likes"), &[]).await.status, StatusCode::SEE_OTHER);
    let page = bob.get(&post).await;
    assert!(
        page.html.contains("0 comments · 1 like") && page.html.contains("Take back your like"),
        "{}",
        page.html
    );
    let unliked = bob.submit(&format!("{post}/unlike"), &[]).await;
    assert_eq!(unliked.location(), format!("{post}#actions"));
    let page = bob.get(&post).await;
    assert!(
        page.html.contains("0 comments · 0 likes") && page.html.contains(">Like</button>"),
        "{}",
        page.html
    );
    let again = bob.submit(&format!("{post}/unlike"), &[]).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND, "taken back already, in another tab");
    assert!(
        again.html.contains("does not like") && again.html.contains("Short-lived"),
        "the post page says why: {}",
        again.html
    );
}

/// Bob deletes his own comment, after a confirmation, and no one else's; Alice, the post's
/// author, may delete any under her post.
#[tokio::test]
async fn a_commenter_deletes_his_own_comments_and_the_author_any_under_her_post() {
    let app = TestApp::start().await;
    let (alice, bob, post) = alice_bob_and_a_short_lived_post(&app).await;
    bob.submit(&format!("{post}/comments"), &[("content", "Bob's first")]).await;
    bob.submit(&format!("{post}/comments"), &[("content", "Bob's second")]).await;
    alice.submit(&format!("{post}/comments"), &[("content", "Alice's")]).await;
    let page = bob.get(&post).await;
    assert_eq!(page.html.matches("Delete this comment").count(), 2, "only his own: {}", page.html);
    assert_eq!(alice.get(&post).await.html.matches("Delete this comment").count(), 3);
    let first = delete_path(&page.html, 0);
    let confirm = bob.get(&first).await;
    assert_eq!(confirm.status, StatusCode::OK, "{}", confirm.html);
    assert!(
        confirm.html.contains("Bob&#39;s first")
            && confirm.html.contains(&format!("action=\"{first}\"")),
        "{}",
        confirm.html
    );
    let not_his = bob.get(&delete_path(&alice.get(&post).await.html, 2)).await;
    assert_eq!(
        not_his.status,
        StatusCode::FORBIDDEN,
        "not his comment to delete: {}",
        not_his.html
    );
    let forbidden = bob.submit(&delete_path(&alice.get(&post).await.html, 2), &[]).await;
    assert_eq!(forbidden.status, StatusCode::FORBIDDEN, "not his comment: {}", forbidden.html);
    assert_eq!(bob.submit(&first, &[]).await.location(), format!("{post}#comments"));
    let page = alice.get(&post).await;
    assert!(
        !page.html.contains("Bob&#39;s first") && page.html.contains("2 comments"),
        "{}",
        page.html
    );
    assert_eq!(alice.submit(&delete_path(&page.html, 0), &[]).await.status, StatusCode::SEE_OTHER);
    assert!(!alice.get(&post).await.html.contains("Bob&#39;s second"));
}

/// The post: a confirmation first (its author's only), then gone, and gone from the lists.
#[tokio::test]
async fn a_post_is_deleted_after_a_confirmation_and_leaves_the_lists() {
    let app = TestApp::start().await;
    let (alice, bob, post) = alice_bob_and_a_short_lived_post(&app).await;
    alice.submit(&format!("{post}/comments"), &[("content", "Alice's")]).await;
    alice.eventually("/users/alice", |html| html.contains("Short-lived")).await;
    assert_eq!(bob.get(&format!("{post}/delete")).await.status, StatusCode::FORBIDDEN);
    let confirm = alice.get(&format!("{post}/delete")).await;
    assert!(
        confirm.html.contains("Delete “<bdi>Short-lived</bdi>”?")
            && confirm.html.contains("1 comment"),
        "{}",
        confirm.html
    );
    assert!(
        confirm.html.contains("<button type=\"submit\" class=\"danger\">Delete</button>"),
        "{}",
        confirm.html
    );
    let deleted = alice.submit(&format!("{post}/delete"), &[]).await;
    assert_eq!(deleted.location(), "/users/alice");
    assert_eq!(alice.get(&post).await.status, StatusCode::NOT_FOUND);
    alice.eventually("/users/alice", |html| !html.contains("Short-lived")).await;
    alice.eventually("/", |html| !html.contains("Short-lived")).await;
}

#[tokio::test]
async fn every_form_refuses_another_sites_request_and_takes_the_blogs_own() {
    let app = TestApp::start().await;
    let mut alice = Browser::new(&app);
    alice.sign_up("alice", "Alice").await;
    let post = alice.write("Target", "Text").await;

    for (name, method, route) in HttpFunction::ALL
        .iter()
        .map(|f| (f.name(), f.method(), f.route()))
        .filter(|(_, method, route)| *method == "POST" && !blog::testing::http::is_api_route(route))
    {
        let path = blog::testing::http::router_path(route)
            .replace("{userId}", "alice")
            .replace("{postId}", post.trim_start_matches("/posts/"))
            .replace("{commentId}", "c1");
        for site in ["cross-site", "same-site"] {
            let forged = alice.submit_from(&path, &[("content", "forged")], site).await;
            assert_eq!(forged.status, StatusCode::FORBIDDEN, "{name}: {method} {path} from {site}");
            assert!(
                forged.html.contains("sent from another site")
                    && forged.html.contains("nothing was changed"),
                "{}",
                forged.html
            );
            assert_eq!(forged.header("content-type"), "text/html; charset=utf-8");
        }
        // A browser without fetch metadata: its Origin decides.
        let request = alice
            .client
            .post(format!("{}{path}", app.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("origin", "https://evil.example")
            .body("content=forged");
        assert_eq!(
            alice.send(request).await.status,
            StatusCode::FORBIDDEN,
            "{name}: a foreign Origin"
        );
    }
    let page = alice.get(&post).await;
    assert!(
        page.html.contains("0 comments · 0 likes") && !page.html.contains("forged"),
        "nothing forged landed: {}",
        page.html
    );

    // The same forms from the blog's own pages (fetch metadata, or only an Origin naming it) work.
    let own_origin = app.base.clone();
    let request = alice
        .client
        .post(format!("{}{post}/comments", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("origin", own_origin)
        .header("cookie", alice.cookie.clone().unwrap())
        .body("content=mine");
    assert_eq!(alice.send(request).await.status, StatusCode::SEE_OTHER);
    assert_eq!(alice.submit(&format!("{post}/likes"), &[]).await.status, StatusCode::SEE_OTHER);
    assert!(alice.get(&post).await.html.contains("1 comment · 1 like"));
}

#[tokio::test]
async fn markup_in_titles_comments_and_names_shows_as_text() {
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
async fn the_front_page_and_the_feed_revalidate_with_an_etag() {
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
async fn a_long_posts_excerpt_ends_at_a_word_with_an_ellipsis_and_a_link_on() {
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
async fn every_page_has_an_icon_a_description_and_both_color_schemes_and_robots_may_not_crawl_the_forms()
 {
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
    for form in ["/write", "/signin", "/posts/*/edit", "/posts/*/delete"] {
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

/// On Azure: the pages as the Functions host forwards them (the client's `Host`), signed in by
/// App Service Authentication's headers; sign-in and sign-out are the platform's `/.auth/`
/// endpoints, the development cookie means nothing, and a form is judged by its `Origin` when
/// the browser sends no fetch metadata. The tests below check one of these each.
async fn on_azure() -> TestApp {
    use blog::{AuthMode, Config};
    let dir = tempfile::tempdir().unwrap();
    let mut app = TestApp::start_configured(Config {
        auth: AuthMode::Platform,
        ..TestApp::config(dir.path())
    })
    .await;
    app.keep(dir);
    app
}

/// The Entra ID principal the platform signs in.
const PRINCIPAL: &str = "00000000-0000-0000-0000-0000000000aa";

/// The blog's own origin on Azure.
const AZURE_ORIGIN: &str = "https://blog.azurewebsites.net";

/// [`PRINCIPAL`]'s profile, "Entra Alice", made by the sign-up form, and the path of a post
/// written with the write form.
async fn entra_alices_post(app: &TestApp) -> String {
    let created =
        forms::form_on_azure(app, PRINCIPAL, "/users", AZURE_ORIGIN, Some(b"username=Entra+Alice"))
            .await;
    assert_eq!(
        (created.status.as_u16(), created.header("location")),
        (303, Some(&*format!("/users/{PRINCIPAL}")))
    );
    let written = forms::form_on_azure(
        app,
        PRINCIPAL,
        "/write",
        AZURE_ORIGIN,
        Some(b"title=From+Azure&content=c"),
    )
    .await;
    assert_eq!(written.status.as_u16(), 303, "{}", written.body);
    written.header("location").unwrap().to_owned()
}

/// Sign-in is the platform's, and comes back to the page it was asked from; never to another site.
#[tokio::test]
async fn on_azure_sign_in_is_the_platforms_and_comes_back_to_the_page_never_elsewhere() {
    let app = on_azure().await;
    let sign_in = common::host::forward(&app, "GET", "/signin", &[], None).await;
    assert_eq!(
        (sign_in.status.as_u16(), sign_in.header("location")),
        (303, Some("/.auth/login/aad?post_login_redirect_uri=/"))
    );
    let from_post = common::host::forward(&app, "GET", "/signin?return=/posts/p1", &[], None).await;
    assert_eq!(
        from_post.header("location"),
        Some("/.auth/login/aad?post_login_redirect_uri=/posts/p1")
    );
    let elsewhere =
        common::host::forward(&app, "GET", "/signin?return=//evil.example/", &[], None).await;
    assert_eq!(elsewhere.header("location"), Some("/.auth/login/aad?post_login_redirect_uri=/"));
}

#[tokio::test]
async fn on_azure_the_development_cookie_signs_nobody_in() {
    let app = on_azure().await;
    let front =
        common::host::forward(&app, "GET", "/", &[("Cookie", "blog_dev_user=alice")], None).await;
    assert!(
        front.body.as_str().unwrap().contains("href=\"/signin\""),
        "the development cookie signs nobody in"
    );
}

/// Without fetch metadata, a form is judged by its `Origin`: the blog's own is taken, another
/// site's refused.
#[tokio::test]
async fn on_azure_a_form_from_the_blogs_origin_is_taken_and_from_another_refused() {
    let app = on_azure().await;
    entra_alices_post(&app).await;
    let forged = forms::form_on_azure(
        &app,
        PRINCIPAL,
        "/write",
        "https://evil.example",
        Some(b"title=t&content=c"),
    )
    .await;
    assert_eq!(forged.status.as_u16(), 403, "{}", forged.body);
}

/// The like button's form is empty: the host forwards it without a body or Content-Type, and
/// it is a like, shown under the principal's name.
#[tokio::test]
async fn on_azure_an_empty_like_form_forwarded_without_a_body_is_a_like() {
    let app = on_azure().await;
    let post_path = entra_alices_post(&app).await;
    let liked =
        forms::form_on_azure(&app, PRINCIPAL, &format!("{post_path}/likes"), AZURE_ORIGIN, None)
            .await;
    assert_eq!(
        (liked.status.as_u16(), liked.header("location")),
        (303, Some(&*format!("{post_path}#actions"))),
        "{}",
        liked.body
    );
    let post = forms::page_on_azure(&app, PRINCIPAL, &post_path).await;
    let html = post.body.as_str().unwrap();
    assert!(
        html.contains(
            "by <a href=\"/users/00000000-0000-0000-0000-0000000000aa\"><bdi>Entra Alice</bdi></a>"
        ),
        "{html}"
    );
    assert!(html.contains("0 comments · 1 like") && html.contains("You like this post."), "{html}");
}

#[tokio::test]
async fn on_azure_sign_out_is_the_platforms() {
    let app = on_azure().await;
    let sign_out = forms::form_on_azure(&app, PRINCIPAL, "/signout", AZURE_ORIGIN, None).await;
    assert_eq!(sign_out.header("location"), Some("/.auth/logout?post_logout_redirect_uri=/"));
}

/// The feed cache is dropped by `PostsChangeFeed` itself, not only by time: within one cache
/// lifetime, a delivered post change makes the next feed read go to the store and show it.
#[tokio::test]
async fn posts_change_feed_drops_the_cached_feed_at_once() {
    use blog::testing::app::ListParams;
    use blog::testing::app::feed_page;
    use blog::testing::changefeed::Function;
    use blog::testing::cosmos::Container;

    // Playing the host: nothing delivers the change feed but this test.
    let app = TestApp::start_as_host().await;
    let user = app.user("alice").await;
    let post = app.post_by(&user, "Delivered").await;
    let first = feed_page(&app.state, &ListParams::default()).await.unwrap();
    assert!(first.list.items.is_empty(), "no copy yet");
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
    let after = feed_page(&app.state, &ListParams::default()).await.unwrap();
    assert_eq!(after.list.items.len(), 1, "the post is in the feed at once");
    assert_ne!(after.etag, first.etag);
}

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

/// A browser sends a textarea's line breaks as CR LF: they are stored as LF, as the API stores
/// them, and count once against the limit, as the field's `maxlength` counts them. Every field
/// carries the API's limit as its `maxlength`.
#[tokio::test]
async fn line_breaks_typed_in_a_browser_count_once_and_are_stored_as_lf() {
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

/// A right-to-left name or title must not reorder the text around it ("by 24 · فاطمة Nov
/// 2026"): every user-supplied name is isolated in `<bdi>`, and every title and text block
/// takes its direction from its own first strong character (`dir="auto"`).
#[tokio::test]
async fn right_to_left_names_and_titles_are_isolated_from_the_text_around_them() {
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
async fn pages_are_compressed_and_carry_security_headers() {
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
    let html = Browser::new(&app).get(&format!("/posts/{post}")).await.html;
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
async fn like_and_unlike_go_back_to_the_button() {
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
async fn sign_in_from_a_post_returns_to_it_and_the_comment_forms_address_opens_the_comments() {
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

/// A form sent after its writer's sign-in ended (signed out in another tab, an expired
/// session) is not sent: the form comes back with what they typed, says why, and links to the
/// sign-in that returns to it; signed in again, the same text goes through.
#[tokio::test]
async fn a_form_sent_after_the_sign_in_ended_keeps_the_text_and_leads_back_through_sign_in() {
    let app = TestApp::start().await;
    let author = app.user("author").await;
    let post = app.post_by(&author, "Worth a comment").await;
    let mut browser = Browser::new(&app);
    browser.sign_up("reader", "Reader").await;
    browser.cookie = None;
    let typed = "A comment written while the session ran out";
    let refused = browser.submit(&format!("/posts/{post}/comments"), &[("content", typed)]).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{}", refused.html);
    assert!(refused.html.contains(&escape(blog::testing::http::SIGNED_OUT)), "{}", refused.html);
    assert!(refused.html.contains(typed), "what was typed is kept: {}", refused.html);
    let back = format!("/signin?return=%2Fposts%2F{post}%2Fcomments");
    assert!(refused.html.contains(&format!("href=\"{back}\"")), "{}", refused.html);

    let signed_in = browser.submit(&back, &[("user", "reader")]).await;
    assert_eq!(signed_in.location(), format!("/posts/{post}/comments"));
    browser.keep_cookie(&signed_in);
    let reopened = browser.get(signed_in.location()).await;
    assert_eq!(reopened.location(), format!("/posts/{post}#comments"));
    let sent = browser.submit(&format!("/posts/{post}/comments"), &[("content", typed)]).await;
    assert_eq!(sent.status, StatusCode::SEE_OTHER, "{}", sent.html);
    let page = browser.get(&format!("/posts/{post}")).await;
    assert!(page.html.contains(typed), "{}", page.html);

    // The same on the new post form.
    browser.cookie = None;
    let refused = browser.submit("/write", &[("title", "A title kept"), ("content", typed)]).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{}", refused.html);
    assert!(
        refused.html.contains("value=\"A title kept\"") && refused.html.contains(typed),
        "{}",
        refused.html
    );
    assert!(refused.html.contains("href=\"/signin?return=%2Fwrite\""), "{}", refused.html);
}

/// The post page's reads are shared by its viewers for a second, as the
/// front page's are: a burst of views of a popular post costs its three reads about once a
/// second; a write through this instance shows at once; the page revalidates with an ETag.
#[tokio::test]
async fn many_views_of_a_post_read_it_about_once_a_second_and_a_write_shows_at_once() {
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

/// Posts and comments are Markdown on the pages, rendered safe (raw HTML as
/// text, links only to the web with `rel="nofollow ugc"`, images as links, never loaded); the
/// API returns the text as written; lists show it as plain text.
#[tokio::test]
async fn markdown_in_posts_and_comments_is_rendered_safely_and_the_api_keeps_it_as_written() {
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
async fn an_excerpt_and_a_description_have_no_space_before_punctuation_after_inline_elements() {
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
async fn every_page_has_a_canonical_address_and_opengraph_and_a_post_describes_itself() {
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

/// The per-user write limit on the pages: a comment past it is the post's page again,
/// 429 with `Retry-After`, saying when to send it, with what was typed kept, and nothing
/// written.
#[tokio::test]
async fn a_form_past_the_write_limit_keeps_what_was_typed_and_says_when_to_send_it() {
    let dir = tempfile::tempdir().unwrap();
    let limit = blog::WriteLimitSetting { per_minute: 6, burst: 3 };
    let app = TestApp::start_configured(blog::Config {
        write_limit: Some(limit),
        ..TestApp::config(dir.path())
    })
    .await;
    let mut alice = Browser::new(&app);
    alice.sign_up("alice", "Alice").await;
    let post = alice.write("Limited", "Text").await;
    assert_eq!(
        alice.submit(&format!("{post}/comments"), &[("content", "the third write")]).await.status,
        StatusCode::SEE_OTHER
    );
    let refused =
        alice.submit(&format!("{post}/comments"), &[("content", "typed past the limit")]).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS, "{}", refused.html);
    let retry_after: u64 = refused.header("retry-after").parse().expect("Retry-After in seconds");
    assert!((1..=10).contains(&retry_after), "{retry_after}");
    assert!(refused.html.contains("the next is accepted in"), "says when: {}", refused.html);
    assert!(
        refused.html.contains("typed past the limit"),
        "keeps what was typed: {}",
        refused.html
    );
    assert!(
        alice.get(&post).await.html.contains("1 comment · 0 likes"),
        "nothing more was written"
    );
}

/// Every form that writes carries a one-time key, so a form sent twice (a double
/// click, the back button, sent again after an error page) writes once and both answers lead
/// to the same result; sent again with other text it writes nothing and says what happened,
/// keeping the text, with a new key to send it as a new comment.
#[tokio::test]
async fn a_form_sent_twice_writes_once_and_shows_the_first_result() {
    let app = TestApp::start().await;
    let mut alice = Browser::new(&app);
    alice.sign_up("alice", "Alice").await;

    let write_page = alice.get("/write").await;
    let key = form_key(&write_page.html, "/write");
    let fields = [("title", "Twice"), ("content", "Sent twice."), ("idempotencyKey", key.as_str())];
    let (first, second) =
        (alice.submit("/write", &fields).await, alice.submit("/write", &fields).await);
    assert_eq!(
        (first.status, second.status),
        (StatusCode::SEE_OTHER, StatusCode::SEE_OTHER),
        "{}",
        second.html
    );
    assert_eq!(first.location(), second.location(), "one post");
    let post = first.location().to_owned();
    let mine = alice.eventually("/users/alice", |html| html.contains("Twice")).await;
    assert_eq!(mine.html.matches(">Twice<").count(), 1, "{}", mine.html);

    let page = alice.get(&post).await;
    let key = form_key(&page.html, &format!("{post}/comments"));
    let comment = [("content", "Only once, please."), ("idempotencyKey", key.as_str())];
    let (first, second) = (
        alice.submit(&format!("{post}/comments"), &comment).await,
        alice.submit(&format!("{post}/comments"), &comment).await,
    );
    assert_eq!(first.status, StatusCode::SEE_OTHER, "{}", first.html);
    assert_eq!(first.location(), second.location(), "both lead to the one comment");
    let like_key = form_key(&page.html, &format!("{post}/likes"));
    for _ in 0..2 {
        let liked =
            alice.submit(&format!("{post}/likes"), &[("idempotencyKey", like_key.as_str())]).await;
        assert_eq!(
            liked.location(),
            format!("{post}#actions"),
            "the second click is not 'already liked': {}",
            liked.html
        );
    }
    let page = alice.get(&post).await;
    assert_eq!(page.html.matches("Only once, please.").count(), 1, "{}", page.html);
    assert!(page.html.contains("1 comment · 1 like"), "{}", page.html);

    // The back button, the text changed, sent again: nothing more written, the text kept.
    let other = [("content", "A second thought."), ("idempotencyKey", key.as_str())];
    let refused = alice.submit(&format!("{post}/comments"), &other).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.html);
    assert!(refused.html.contains(&escape(blog::testing::http::SENT_BEFORE)), "{}", refused.html);
    assert!(refused.html.contains("A second thought."), "what was typed is kept: {}", refused.html);
    let fresh = form_key(&refused.html, &format!("{post}/comments"));
    assert_ne!(fresh, key, "the form shown again has a new key");
    let sent = alice
        .submit(
            &format!("{post}/comments"),
            &[("content", "A second thought."), ("idempotencyKey", &fresh)],
        )
        .await;
    assert_eq!(sent.status, StatusCode::SEE_OTHER, "{}", sent.html);
    assert!(alice.get(&post).await.html.contains("2 comments · 1 like"));
}

/// Tags typed on the write page (separated by commas) show under the post's title and in its
/// excerpts as links to the tag's page, which lists the posts with the tag in any form; a refused
/// tag shows next to its field with what was typed; the edit form carries the tags and removes
/// them when emptied.
#[tokio::test]
async fn tags_are_written_on_the_form_shown_as_links_and_have_a_page() {
    let app = TestApp::start().await;
    let mut alice = Browser::new(&app);
    alice.sign_up("alice", "Alice").await;

    let form = alice.get("/write").await;
    assert!(
        form.html.contains("name=\"tags\" type=\"text\" value=\"\" maxlength=\"170\" aria-describedby=\"post-tags-hint\""),
        "{}",
        form.html
    );
    let refused = alice
        .submit("/write", &[("title", "Tagged"), ("content", "Text"), ("tags", "Rust, RUST")])
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(refused.html.contains("id=\"post-tags-error\">Tags: the tags"), "{}", refused.html);
    assert!(
        refused.html.contains("value=\"Rust, RUST\""),
        "what was typed is kept: {}",
        refused.html
    );

    let written = alice
        .submit(
            "/write",
            &[("title", "Tagged"), ("content", "Text"), ("tags", " Rust, Cosmos DB ,")],
        )
        .await;
    assert_eq!(written.status, StatusCode::SEE_OTHER, "{}", written.html);
    let post = written.location().to_owned();
    let links = "<ul class=\"tags\" aria-label=\"Tags\"><li><a rel=\"tag\" href=\"/tags/rust\"><bdi>Rust</bdi></a></li>\
                 <li><a rel=\"tag\" href=\"/tags/cosmos%20db\"><bdi>Cosmos DB</bdi></a></li></ul>";
    let page = alice.get(&post).await;
    assert!(page.html.contains(links), "{}", page.html);
    alice.eventually("/", |html| html.contains(links)).await;
    let tag_page = alice.eventually("/tags/RUST", |html| html.contains("Tagged")).await;
    assert_eq!(tag_page.status, StatusCode::OK);
    assert!(tag_page.html.contains("<h1>Posts tagged <bdi>Rust</bdi></h1>"), "{}", tag_page.html);
    assert!(tag_page.html.contains(links), "{}", tag_page.html);
    let unused = alice.get("/tags/nobody").await;
    assert_eq!(unused.status, StatusCode::OK);
    assert!(unused.html.contains("No posts with this tag yet."), "{}", unused.html);

    let edit = alice.get(&format!("{post}/edit")).await;
    assert!(edit.html.contains("value=\"Rust, Cosmos DB\""), "{}", edit.html);
    let saved = alice
        .submit(&format!("{post}/edit"), &[("title", "Tagged"), ("content", "Text"), ("tags", "")])
        .await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.html);
    assert!(!alice.get(&post).await.html.contains("class=\"tags\""));
    alice.eventually("/tags/rust", |html| html.contains("No posts with this tag yet.")).await;
}
