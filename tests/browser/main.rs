//! The blog in a real browser: headless Chromium (Debian's packages), driven over WebDriver,
//! against the handler on the embedded store.
//!
//! Ignored by `cargo test` (a fresh clone's tests run offline, with nothing installed); run them
//! with `tests/browser/run.sh`, which installs Chromium and runs `cargo test --test browser --
//! --ignored` (`.ci/run` does). Without Chromium they fail and say how to install it.
//! `BLOG_SCREENSHOTS=docs/screenshots` saves docs/pages.md's screenshots.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod accessibility;
#[path = "../common/mod.rs"]
mod common;
mod webdriver;

use std::path::PathBuf;

use accessibility::{AXE, axe_check, axe_script};
use common::TestApp;
use webdriver::{Browser, ENTER, TAB};

/// The post form's own submit button (Publish, Save), not the one that adds a picture.
const PUBLISH: &str = "#post > p > button[type=submit]";

/// Signs in with the development form and creates the user on the welcome page.
pub(crate) async fn sign_up(browser: &Browser, app: &TestApp, user: &str, username: &str) {
    browser.open(&format!("{}/signin", app.base)).await;
    browser.type_into("#signin-user", user).await;
    browser.follow("#signin button[type=submit]").await;
    assert!(browser.url().await.ends_with(&format!("/users/{user}")));
    browser.type_into("#profile-username", username).await;
    browser.follow("#profile button[type=submit]").await;
    assert_eq!(browser.text("h1").await, username);
}

#[tokio::test]
#[ignore = "needs Chromium: run tests/browser/run.sh"]
async fn a_person_uses_the_whole_blog_in_a_browser() {
    let app = TestApp::start().await;
    let browser = Browser::start().await;
    sign_up(&browser, &app, "alice", "Alice").await;

    // Post: the redirect lands on the post's own page.
    browser.follow("nav a[href='/write']").await;
    browser.type_into("#post-title", "Hello from Chromium").await;
    browser.type_into("#post-content", "Written in a real browser.").await;
    browser.follow(PUBLISH).await;
    let post_url = browser.url().await;
    assert!(post_url.contains("/posts/"), "{post_url}");
    assert_eq!(browser.text("h1").await, "Hello from Chromium");

    // On the front page (once the change feed copied it), and open it from there.
    browser
        .eventually(&format!("{}/", app.base), |html| html.contains("Hello from Chromium"))
        .await;
    browser.follow("ol.posts h2 a").await;
    assert_eq!(browser.url().await, post_url);

    // Comment and like.
    browser.type_into("#comment-content", "A first comment.").await;
    browser.follow("#comment button[type=submit]").await;
    assert!(browser.source().await.contains("A first comment."));
    browser.follow("form[action$='/likes'] button").await;
    assert_eq!(browser.text(".counts").await, "1 comment · 1 like");
    assert!(browser.source().await.contains("You like this post."));

    // Edit.
    browser.follow("a[href$='/edit']").await;
    browser.type_into("#post-title", "Hello, edited").await;
    browser.follow(PUBLISH).await;
    assert_eq!(browser.text("h1").await, "Hello, edited");

    // A refused form shows its error next to the field, and keeps what was typed.
    browser.follow("a[href$='/edit']").await;
    browser.type_into("#post-title", "   ").await;
    browser.type_into("#post-content", "Kept after the refusal.").await;
    browser.follow(PUBLISH).await;
    assert_eq!(browser.text("#post-title-error").await, "Title must not be empty.");
    assert!(browser.source().await.contains(">Kept after the refusal.</textarea>"));

    // Rename, and the new name reaches the post (through the change feed).
    browser.open(&format!("{}/users/alice", app.base)).await;
    browser.click("details summary").await;
    browser.type_into("#rename-username", "Alice Liddell").await;
    browser.follow("#rename button[type=submit]").await;
    assert_eq!(browser.text("h1").await, "Alice Liddell");
    browser.eventually(&post_url, |html| html.contains("><bdi>Alice Liddell</bdi></a>")).await;

    // Take back the like, delete the comment, then the post after its confirmation.
    browser.follow("form[action$='/unlike'] button").await;
    assert_eq!(browser.text(".counts").await, "1 comment · 0 likes");
    browser.follow("li a[href$='/delete']").await;
    assert_eq!(browser.text("h1").await, "Delete this comment?");
    browser.follow("form[action$='/delete'] button").await;
    assert_eq!(browser.text(".counts").await, "0 comments · 0 likes");
    browser.follow(".actions a[href$='/delete']").await;
    assert_eq!(browser.text("h1").await, "Delete “Hello, edited”?");
    browser.follow("form[action$='/delete'] button").await;
    assert!(browser.url().await.ends_with("/users/alice"));
    browser.open(&post_url).await;
    assert!(browser.source().await.contains("There is no post"), "{}", browser.source().await);
}

#[tokio::test]
#[ignore = "needs Chromium: run tests/browser/run.sh"]
async fn hostile_input_is_harmless_in_a_browser() {
    let app = TestApp::start().await;
    let browser = Browser::start().await;
    sign_up(&browser, &app, "mallory", "<script>document.title='owned'</script>").await;
    browser.follow("nav a[href='/write']").await;
    browser.type_into("#post-title", "<script>document.title='owned'</script>").await;
    browser.type_into("#post-content", "<b>not bold</b>").await;
    browser.follow(PUBLISH).await;
    let post_url = browser.url().await;
    assert_eq!(
        browser.text("h1").await,
        "<script>document.title='owned'</script>",
        "the title shows as text"
    );
    assert_eq!(browser.text(".content").await, "<b>not bold</b>");
    assert!(!browser.exists(".content b").await, "no element was made from the text");
    let title = browser.title().await;
    assert!(
        title.starts_with("<script>"),
        "no script ran (it would have set the title to 'owned'): {title}"
    );

    // Another origin on the same machine (same site, so the Lax cookie rides along) serves a
    // form aimed at the post's comments; the person submits it.
    let forger = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let forger_base = format!("http://{}", forger.local_addr().unwrap());
    let target = format!("{post_url}/comments");
    let page = format!(
        "<!doctype html><title>Win a prize</title><form method=post action=\"{target}\">\
         <input type=hidden name=content value=forged><button id=go>Claim</button></form>"
    );
    let router = axum::Router::new()
        .route("/", axum::routing::get(move || async move { axum::response::Html(page) }));
    tokio::spawn(async move { axum::serve(forger, router).await });
    browser.open(&format!("{forger_base}/")).await;
    browser.follow("#go").await;
    let refused = browser.source().await;
    assert!(
        refused.contains("sent from another site") && refused.contains("Sec-Fetch-Site: same-site"),
        "{refused}"
    );
    browser.open(&post_url).await;
    assert!(!browser.source().await.contains("forged"), "the forged comment was not written");
    assert_eq!(browser.text(".counts").await, "0 comments · 0 likes");
}

#[tokio::test]
#[ignore = "needs Chromium: run tests/browser/run.sh"]
async fn a_post_is_written_with_the_keyboard_alone() {
    let app = TestApp::start().await;
    let browser = Browser::start().await;
    sign_up(&browser, &app, "kim", "Kim").await;
    browser.open(&format!("{}/write", app.base)).await;
    // Tab through the page until the title field has the focus: the skip link, the blog's
    // name, the header's search box and its button, and the site links come first.
    let mut passed = Vec::new();
    loop {
        browser.press(TAB).await;
        let focused = browser.focused().await;
        let id = browser.attribute(&focused, "id").await;
        if id.as_deref() == Some("post-title") {
            break;
        }
        passed.push(id.unwrap_or_default());
        assert!(passed.len() < 20, "the title field is reachable with Tab: {passed:?}");
    }
    assert!(passed.iter().any(|id| id == "site-search"), "Tab passes the search box: {passed:?}");
    browser.press("Typed, not clicked").await;
    browser.press(TAB).await;
    browser.press("Every key pressed.").await;
    // The tags, typed as a writer types them: the next stop after the content.
    browser.press(TAB).await;
    let focused = browser.focused().await;
    assert_eq!(browser.attribute(&focused, "id").await.as_deref(), Some("post-tags"));
    browser.press("Keyboard, Access").await;
    // Past the time a scheduled post goes out (left empty: published now), then the picture's
    // part: the file, what it shows, the button that adds it.
    for stop in ["post-publishAt", "post-picture", "post-alt"] {
        browser.press(TAB).await;
        let focused = browser.focused().await;
        assert_eq!(browser.attribute(&focused, "id").await.as_deref(), Some(stop));
    }
    browser.press(TAB).await;
    let focused = browser.focused().await;
    assert_eq!(browser.attribute(&focused, "value").await.as_deref(), Some("add-picture"));
    browser.press(TAB).await;
    let focused = browser.focused().await;
    assert_eq!(
        browser.attribute(&focused, "type").await.as_deref(),
        Some("submit"),
        "Tab reaches Publish"
    );
    browser.press(ENTER).await;
    browser.until_gone(&focused).await;
    assert!(browser.url().await.contains("/posts/"));
    assert_eq!(browser.text("h1").await, "Typed, not clicked");
    assert_eq!(browser.text(".content").await, "Every key pressed.");
    assert!(
        browser.source().await.contains("href=\"/tags/keyboard\""),
        "the typed tags link to their pages"
    );
}

/// A reader searches from the box in a post's header, by the keyboard alone: the results show
/// the post with the word marked, and the box keeps what was typed.
#[tokio::test]
#[ignore = "needs Chromium: run tests/browser/run.sh"]
async fn a_reader_searches_from_the_header() {
    let app = TestApp::start().await;
    let browser = Browser::start().await;
    let author = app.user("writer").await;
    let body = serde_json::json!({"userId": author, "title": "Kites", "content": "Strings snapped in the gale."});
    let post = app.post("/api/posts", body).await.body["id"].as_str().unwrap().to_owned();
    app.eventually("/api/search?q=gale", |found| found["items"][0]["post"]["id"] == post.as_str())
        .await;
    browser.open(&format!("{}/posts/{post}", app.base)).await;
    // The skip link, the blog's name, then the box.
    for _ in 0..3 {
        browser.press(TAB).await;
    }
    let focused = browser.focused().await;
    assert_eq!(browser.attribute(&focused, "id").await.as_deref(), Some("site-search"));
    browser.press("gale").await;
    browser.press(ENTER).await;
    browser.until_gone(&focused).await;
    assert!(browser.url().await.ends_with("/search?q=gale"), "{}", browser.url().await);
    assert_eq!(browser.title().await, "Search: gale · Cosmos Blog");
    assert_eq!(browser.text("ol.posts h2").await, "Kites");
    assert_eq!(browser.text("ol.posts mark").await, "gale");
    let shown = browser.find("#site-search").await;
    assert_eq!(browser.attribute(&shown, "value").await.as_deref(), Some("gale"));
}

/// A writer adds a picture on the write page (a real file chosen in the file
/// input, no JavaScript), sees it added to the text, publishes, and the post shows it at its
/// size; axe finds no violation on the form with its picture part nor on the post.
#[tokio::test]
#[ignore = "needs Chromium: run tests/browser/run.sh"]
async fn a_picture_added_on_the_write_page_shows_in_the_post() {
    let axe = std::fs::read_to_string(AXE)
        .unwrap_or_else(|error| panic!("{AXE}: {error}: run tests/browser/install.sh"));
    let script = axe_script(&axe);
    let app = TestApp::start().await;
    let browser = Browser::start().await;
    sign_up(&browser, &app, "painter", "Painter").await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kite.png");
    let kite = image::RgbImage::from_fn(1600, 900, |x, y| {
        image::Rgb([200, (x % 200) as u8, (y % 200) as u8])
    });
    kite.save(&file).unwrap();

    browser.follow("nav a[href='/write']").await;
    axe_check(&browser, &script, "/write, with its picture part".into()).await;
    browser.type_into("#post-title", "A kite").await;
    browser.type_into("#post-content", "Look up.").await;
    browser.choose_file("#post-picture", &file).await;
    browser.type_into("#post-alt", "A red kite against the sky").await;
    browser.follow("button[value=add-picture]").await;
    assert!(
        browser.text(".notice").await.starts_with("The picture is added at the end of the text")
    );
    let text = browser.text("#post-content").await;
    assert!(
        text.starts_with("Look up.\n\n![A red kite against the sky](/pictures/painter/"),
        "{text}"
    );
    axe_check(&browser, &script, "/write, a picture added".into()).await;

    browser.follow(PUBLISH).await;
    assert_eq!(browser.text("h1").await, "A kite");
    let picture = browser.find(".content img").await;
    assert_eq!(
        browser.attribute(&picture, "alt").await.as_deref(),
        Some("A red kite against the sky")
    );
    assert_eq!(browser.attribute(&picture, "width").await.as_deref(), Some("1600"));
    let loaded = browser
        .execute_async(
            "const done = arguments[0]; const img = document.querySelector('.content img'); \
        img.loading = 'eager'; img.decode().then(() => done([img.naturalWidth, img.currentSrc]), e => done(String(e)));",
        )
        .await;
    let src = loaded[1].as_str().unwrap_or_default();
    assert!(src.contains("/pictures/painter/"), "the browser loaded the picture: {loaded}");
    axe_check(&browser, &script, "a post with a picture".into()).await;
}

/// docs/pages.md's screenshots: the front page and a post, on a desktop and a phone.
#[tokio::test]
#[ignore = "needs Chromium: run tests/browser/run.sh"]
async fn screenshots_of_the_front_page_and_a_post() {
    let app = TestApp::start().await;
    // A right-to-left name among them, isolated from the text around it wherever it shows.
    let writers = [
        ("ada", "Ada Lovelace"),
        ("grace", "Grace Hopper"),
        ("edsger", "Edsger Dijkstra"),
        ("fatima", "فاطمة الزهراء"),
    ];
    let mut users = Vec::new();
    for (principal, name) in writers {
        let answer = app
            .send_as(
                Some(principal),
                reqwest::Method::POST,
                "/api/users",
                Some(serde_json::json!({"username": name})),
            )
            .await;
        users.push(answer.body["id"].as_str().unwrap().to_owned());
    }
    let posts = [
        (
            0,
            "Notes on the analytical engine",
            "The engine weaves algebraic patterns just as the Jacquard loom weaves flowers and leaves. It might act upon other things besides number, were objects found whose mutual relations could be expressed by those of the abstract science of operations.",
        ),
        (
            1,
            "It's easier to ask forgiveness",
            "It is often easier to ask for forgiveness than to ask for permission. A ship in port is safe, but that is not what ships are built for.",
        ),
        (
            2,
            "On the cruelty of really teaching computing",
            "Programs should be written for people to read, and only incidentally for machines to execute: the competent programmer is fully aware of the strictly limited size of their own skull.",
        ),
        (
            1,
            "Nanoseconds",
            "A nanosecond is **eleven point eight inches**: the distance light travels in a billionth of a second.\n\n\
             ## Hand them out\n\n\
             - to everyone who asks why a satellite message takes so long;\n\
             - to anyone who writes `sleep(1)` in a loop.\n\n\
             From a [talk of Grace Hopper's](https://www.youtube.com/watch?v=9eyFDBPk4Yw).",
        ),
    ];
    let mut last = String::new();
    for (author, title, content) in posts {
        let body = serde_json::json!({"userId": users[author], "title": title, "content": content});
        last = app
            .send_as(Some(&users[author]), reqwest::Method::POST, "/api/posts", Some(body))
            .await
            .body["id"]
            .as_str()
            .unwrap()
            .to_owned();
        // The first post with a picture, which the lists show small beside its excerpt.
        if title.starts_with("On the cruelty") {
            let picture =
                upload_picture(&app, &users[author], &last, "Bands of red, green and blue").await;
            let content = format!("{content}\n\n{}", picture["markdown"].as_str().unwrap());
            let edit = serde_json::json!({"title": title, "content": content});
            app.send_as(
                Some(&users[author]),
                reqwest::Method::PUT,
                &format!("/api/posts/{last}"),
                Some(edit),
            )
            .await;
        }
    }
    let comments = [
        "Exactly the *right* length.",
        "I measured one this morning.",
        "Hand them out at conferences!",
        "سأوزعها في المؤتمر القادم.",
    ];
    for (commenter, comment) in users.iter().zip(comments) {
        let body = serde_json::json!({"userId": commenter, "content": comment});
        app.send_as(
            Some(commenter),
            reqwest::Method::POST,
            &format!("/api/posts/{last}/comments"),
            Some(body),
        )
        .await;
        let like = serde_json::json!({"userId": commenter});
        app.send_as(
            Some(commenter),
            reqwest::Method::POST,
            &format!("/api/posts/{last}/likes"),
            Some(like),
        )
        .await;
    }

    let mut browser = Browser::start().await;
    sign_up(&browser, &app, "reader", "Reader").await;
    let front = format!("{}/", app.base);
    browser
        .eventually(&front, |html| {
            html.contains("Nanoseconds")
                && html.contains("4 comments")
                && html.contains("class=\"thumb\"")
        })
        .await;
    let post = format!("{}/posts/{last}", app.base);
    let out = std::env::var_os("BLOG_SCREENSHOTS").map(PathBuf::from);
    for (device, width, height) in [("desktop", 1280, 900), ("phone", 390, 844)] {
        browser.resize(width, height).await;
        for (page, url) in [("front", &front), ("post", &post)] {
            browser.open(url).await;
            pictures_loaded(&browser).await;
            let png = browser.screenshot().await;
            assert_eq!(&png[1..4], b"PNG", "a PNG image");
            if let Some(dir) = &out {
                std::fs::create_dir_all(dir).unwrap();
                std::fs::write(dir.join(format!("{page}-{device}.png")), &png).unwrap();
            }
        }
    }

    // The same post as its author sees it: edit and delete it, delete any comment under it, and
    // take back the like.
    browser.open(&format!("{}/signin", app.base)).await;
    browser.type_into("#signin-user", "grace").await;
    browser.follow("#signin button[type=submit]").await;
    browser.resize(1280, 900).await;
    browser.open(&post).await;
    assert_eq!(browser.source().await.matches("Delete this comment").count(), 4);
    let png = browser.screenshot().await;
    if let Some(dir) = &out {
        std::fs::write(dir.join("post-author-desktop.png"), &png).unwrap();
    }

    // Dark mode, as a reader whose system prefers it sees the pages (`prefers-color-scheme`).
    browser.prefer_color_scheme("dark").await;
    for (device, width, height) in [("desktop", 1280, 900), ("phone", 390, 844)] {
        browser.resize(width, height).await;
        browser.open(&post).await;
        let png = browser.screenshot().await;
        if let Some(dir) = &out {
            std::fs::write(dir.join(format!("post-dark-{device}.png")), &png).unwrap();
        }
    }
}

/// Waits until every picture of the page open in `browser` is loaded and decoded (a lazy one
/// too), so that a screenshot shows them.
async fn pictures_loaded(browser: &Browser) {
    browser
        .execute_async(
            "const done = arguments[0]; Promise.all([...document.images].map(img => { img.loading = 'eager';              return img.decode().catch(() => {}); })).then(() => done(true));",
        )
        .await;
}

/// `alt` picture (a 1600×900 PNG) uploaded to `post` as its writer `user`: the upload's answer.
pub(crate) async fn upload_picture(
    app: &TestApp,
    user: &str,
    post: &str,
    alt: &str,
) -> serde_json::Value {
    let pixels = image::RgbImage::from_fn(1600, 900, |x, y| {
        image::Rgb([200, (x % 200) as u8, (y % 200) as u8])
    });
    let mut png = std::io::Cursor::new(Vec::new());
    pixels.write_to(&mut png, image::ImageFormat::Png).unwrap();
    let answer = app
        .client
        .post(format!("{}/api/posts/{post}/pictures?alt={}", app.base, alt.replace(' ', "%20")))
        .header("x-dev-user", user)
        .header("content-type", "image/png")
        .body(png.into_inner())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), reqwest::StatusCode::CREATED);
    answer.json().await.unwrap()
}
