//! Forms the blog refuses or receives twice: the API's reason shown next to the field with what
//! was typed kept, another site's forms refused, and a form sent late, past the limit or twice.

use super::*;

#[tokio::test]
async fn a_refused_form_shows_the_api_detail_next_to_its_field() {
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
async fn a_taken_username_is_an_error_on_every_name_form() {
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

#[tokio::test]
async fn every_form_refuses_another_sites_request() {
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

/// A form sent after its writer's sign-in ended (signed out in another tab, an expired
/// session) is not sent: the form comes back with what they typed, says why, and links to the
/// sign-in that returns to it; signed in again, the same text goes through.
#[tokio::test]
async fn a_form_sent_after_the_sign_in_ended_keeps_the_text() {
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

/// The per-user write limit on the pages: a comment past it is the post's page again,
/// 429 with `Retry-After`, saying when to send it, with what was typed kept, and nothing
/// written.
#[tokio::test]
async fn a_form_past_the_write_limit_keeps_what_was_typed() {
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
async fn a_form_sent_twice_writes_once() {
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
