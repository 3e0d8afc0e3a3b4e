//! axe-core (Deque's accessibility engine, the one Lighthouse runs) on every page state, and
//! the helpers the other browser tests check a page's accessibility with.

use super::common::TestApp;
use super::webdriver::Browser;
use super::{sign_up, upload_picture};

/// axe-core, installed by tests/browser/install.sh (npm's `axe-core` package).
pub(super) const AXE: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/browser/node_modules/axe-core/axe.min.js");

/// axe-core (Deque's accessibility engine, the one Lighthouse runs) finds no violation on any
/// page state a reader or a writer meets: the front page and a post signed out and in, a user's
/// page, the forms, a confirmation, an error page, and dark mode, on a desktop and a phone.
#[tokio::test]
#[ignore = "needs Chromium: run tests/browser/run.sh"]
async fn axe_finds_no_accessibility_violation_on_any_page() {
    let axe = std::fs::read_to_string(AXE)
        .unwrap_or_else(|error| panic!("{AXE}: {error}: run tests/browser/install.sh"));
    let script = axe_script(&axe);
    let app = TestApp::start().await;
    let mut browser = Browser::start().await;
    let author = app.user("writer").await;
    let text = "A *post* with [a link](https://example.com).\n\n- one\n- two";
    let body = serde_json::json!({"userId": author, "title": "فاطمة writes **Markdown**", "content": text, "tags": ["Cosmos DB"]});
    let post = app.post("/api/posts", body).await.body["id"].as_str().unwrap().to_owned();
    // A picture in it, so that the lists show its thumbnail beside the excerpt.
    let picture = upload_picture(&app, &author, &post, "A red kite against the sky").await;
    let content = format!("{text}\n\n{}", picture["markdown"].as_str().unwrap());
    let edit = serde_json::json!({"title": "فاطمة writes **Markdown**", "content": content});
    assert_eq!(app.put(&format!("/api/posts/{post}"), edit).await.status, reqwest::StatusCode::OK);
    for text in ["First!", "سأوزعها في المؤتمر القادم."] {
        let comment = serde_json::json!({"userId": author, "content": text});
        app.send_as(
            Some(&author),
            reqwest::Method::POST,
            &format!("/api/posts/{post}/comments"),
            Some(comment),
        )
        .await;
    }
    app.eventually("/api/tags/cosmos%20db/posts", |list| list["items"][0].get("picture").is_some())
        .await;
    app.eventually("/api/feed", |feed| feed["items"][0].get("picture").is_some()).await;
    // A search that finds it, its word marked in the snippet.
    let search = "/search?q=link";
    app.eventually("/api/search?q=link", |found| found["items"][0]["post"]["id"] == post.as_str())
        .await;
    let comments = app.get(&format!("/api/posts/{post}/comments")).await.body;
    let comment = comments["items"][0]["id"].as_str().unwrap().to_owned();
    let tag = "/tags/cosmos%20db";

    let signed_out = [
        "/",
        &format!("/posts/{post}"),
        &format!("/users/{author}"),
        tag,
        search,
        "/search",
        "/search?q=%D0%B8+%D0%B2",
        "/signin",
        "/posts/nothing-here",
    ];
    for path in signed_out {
        browser.open(&format!("{}{path}", app.base)).await;
        axe_check(&browser, &script, format!("{path}, signed out")).await;
    }
    sign_up(&browser, &app, "reader", "A reader").await;
    // Their draft, with a preview link: its page, its edit form with the link, the preview,
    // their page listing it.
    let draft = serde_json::json!({"userId": "reader", "title": "Not yet", "content": text, "status": "draft"});
    let draft = app.send_as(Some("reader"), reqwest::Method::POST, "/api/posts", Some(draft)).await;
    let draft = draft.body["id"].as_str().unwrap().to_owned();
    let share = format!("/api/posts/{draft}/preview");
    let shared = app.send_as(Some("reader"), reqwest::Method::POST, &share, None).await;
    let preview = shared.body["path"].as_str().unwrap().to_owned();
    // And an earlier version of it, with what changed since.
    let edit = serde_json::json!({"title": "Not yet", "content": format!("{text}\n\nMore.")});
    let draft_path = format!("/api/posts/{draft}");
    let edited = app.send_as(Some("reader"), reqwest::Method::PUT, &draft_path, Some(edit)).await;
    assert_eq!(edited.status, reqwest::StatusCode::OK);
    let signed_in = [
        format!("/posts/{draft}/revisions/0"),
        format!("/posts/{draft}"),
        format!("/posts/{draft}/edit"),
        preview,
        "/".to_owned(),
        format!("/posts/{post}"),
        "/write".to_owned(),
        "/users/reader".to_owned(),
        format!("/users/{author}"),
        tag.to_owned(),
        search.to_owned(),
        format!("/posts/{post}/comments/{comment}/delete"),
    ];
    for path in &signed_in {
        browser.open(&format!("{}{path}", app.base)).await;
        axe_check(&browser, &script, format!("{path}, signed in")).await;
    }
    // The lists with their thumbnails, on a desktop (the browser's size) and on a phone, light
    // and dark; each thumbnail at the size its markup says, loaded.
    let lists = ["/".to_owned(), format!("/users/{author}"), tag.to_owned(), search.to_owned()];
    for path in &lists {
        browser.open(&format!("{}{path}", app.base)).await;
        assert_thumbnail_shown(&browser, path).await;
    }
    browser.resize(390, 844).await;
    for path in &lists {
        browser.open(&format!("{}{path}", app.base)).await;
        assert_thumbnail_shown(&browser, path).await;
        axe_check(&browser, &script, format!("{path}, on a phone")).await;
    }
    browser.prefer_color_scheme("dark").await;
    for path in ["/".to_owned(), format!("/posts/{post}"), tag.to_owned(), search.to_owned()] {
        browser.open(&format!("{}{path}", app.base)).await;
        axe_check(&browser, &script, format!("{path}, dark, on a phone")).await;
    }
}

/// The list open in `browser` (`path`) shows a post's thumbnail, loaded, in the box the
/// stylesheet gives it whatever the picture's own size, beside the excerpt (on its right, the
/// excerpt starting left of it).
async fn assert_thumbnail_shown(browser: &Browser, path: &str) {
    let shown = browser
        .execute_async(
            "const done = arguments[0]; const img = document.querySelector('ol.posts img.thumb');              img.loading = 'eager'; img.decode().then(() => {                const box = img.getBoundingClientRect();                const excerpt = img.closest('article').querySelector('.excerpt').getBoundingClientRect();                done([img.naturalWidth, box.width, box.height, box.left >= excerpt.left + excerpt.width / 2,                  box.top < excerpt.bottom, img.currentSrc, window.devicePixelRatio]); }, e => done(String(e)));",
        )
        .await;
    // The small copy for the screen's density: 1× where a CSS pixel is a device pixel, else 2×.
    let (natural, source) = if shown[6].as_f64().unwrap_or(1.0) > 1.0 {
        (256, "-256x192.jpg")
    } else {
        (128, "-128x96.jpg")
    };
    assert_eq!(shown[0], natural, "{path}: the small copy loaded: {shown}");
    assert!(shown[5].as_str().is_some_and(|url| url.ends_with(source)), "{path}: {shown}");
    let (width, height) = (shown[1].as_f64().unwrap(), shown[2].as_f64().unwrap());
    assert!(
        (64.0..=160.0).contains(&width) && (height - width * 0.75).abs() < 1.0,
        "{path}: small, 4:3: {shown}"
    );
    assert_eq!(
        (&shown[3], &shown[4]),
        (&serde_json::json!(true), &serde_json::json!(true)),
        "{path}: beside the excerpt: {shown}"
    );
}

/// The script that runs axe (its source, `axe`) and answers its violations.
pub(super) fn axe_script(axe: &str) -> String {
    format!(
        "{axe}\nconst done = arguments[arguments.length - 1];\n\
         axe.run(document).then(result => done(result.violations.map(v => \
           `${{v.id}}: ${{v.help}} (${{v.nodes.map(n => n.target.join(' ')).join(', ')}})`)));"
    )
}

/// Runs axe (`script`) on the page open in `browser`; no violation may be found.
pub(super) async fn axe_check(browser: &Browser, script: &str, what: String) {
    let violations = browser.execute_async(script).await;
    assert_eq!(violations, serde_json::json!([]), "axe on {what}");
}
