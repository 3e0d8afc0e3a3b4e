//! Pictures added on the write and edit pages, with no JavaScript: the form is sent as
//! `multipart/form-data` as a browser sends it (the HTML standard's multipart encoding).

use reqwest::StatusCode;

use super::common::TestApp;
use super::common::forms::{Browser, Got, form_key};
use super::{encoded, photo};
use image::ImageFormat;

/// The Markdown of the picture with `alt` in the form's text on `html`.
fn markdown_of(html: &str, alt: &str) -> String {
    let start = html
        .find(&format!("![{alt}]("))
        .unwrap_or_else(|| panic!("no picture {alt:?} in the text: {html}"));
    html[start..start + html[start..].find(')').unwrap() + 1].to_owned()
}

/// The painter, signed in on `app`'s pages (the user made through the API).
async fn painter(app: &TestApp) -> Browser {
    let created = app
        .send_as(
            Some("painter"),
            reqwest::Method::POST,
            "/api/users",
            Some(serde_json::json!({"username": "Painter"})),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    Browser::new(app).signed_in_as("painter")
}

/// The write page's fields with the picture's description `alt`, asking to add the picture
/// (the form's "Add picture" button), under the form's one-time `key`.
fn adding<'a>(alt: &'a str, key: &'a str) -> [(&'a str, &'a str); 5] {
    [
        ("title", "Kites"),
        ("content", "Before."),
        ("alt", alt),
        ("action", "add-picture"),
        ("idempotencyKey", key),
    ]
}

/// Adds a red kite on the write page under the form's `key`: the page answered, and the
/// picture's Markdown in its text.
async fn kite_added(painter: &Browser, key: &str) -> (Got, String) {
    let png = encoded(&photo(), ImageFormat::Png);
    let added = painter
        .submit_multipart(
            "/write",
            &adding("A red kite", key),
            Some(("kite.png", "image/png", &png)),
        )
        .await;
    let markdown = markdown_of(&added.html, "A red kite");
    (added, markdown)
}

/// Publishes the post with the kite's `markdown` under `key`, a blue sky chosen on the way:
/// the answer.
async fn published_with_a_sky(painter: &Browser, key: &str, markdown: &str) -> Got {
    let content = format!("Before.\n\n{markdown}");
    let publish = [
        ("title", "Kites"),
        ("content", content.as_str()),
        ("alt", "A blue sky"),
        ("idempotencyKey", key),
    ];
    let sky = encoded(
        &image::DynamicImage::ImageRgb8(image::RgbImage::from_pixel(
            30,
            10,
            image::Rgb([40, 90, 220]),
        )),
        ImageFormat::Jpeg,
    );
    painter.submit_multipart("/write", &publish, Some(("sky.jpg", "image/jpeg", &sky))).await
}

/// The write page's form says what may be added, and how many pictures the writer keeps.
#[tokio::test]
async fn the_write_page_says_how_many_pictures_the_writer_keeps() {
    let app = super::uploads::blog_with_data_directory().await;
    let painter = painter(&app).await;
    let Got { status, html: page, .. } = painter.get("/write").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("enctype=\"multipart/form-data\"") && page.contains("type=\"file\""),
        "{page}"
    );
    assert!(page.contains("You keep 0 of 4 pictures"), "{page}");
}

/// Refusals keep the text and store nothing: no picture chosen, no description, not a
/// picture, another site.
#[tokio::test]
async fn a_picture_refused_on_the_write_page_stores_nothing() {
    let app = super::uploads::blog_with_data_directory().await;
    let painter = painter(&app).await;
    let key = form_key(&painter.get("/write").await.html, "/write");
    let png = encoded(&photo(), ImageFormat::Png);
    let Got { status, html: page, .. } =
        painter.submit_multipart("/write", &adding("A kite", &key), None).await;
    assert!(
        status == StatusCode::BAD_REQUEST
            && page.contains("Choose a picture to add")
            && page.contains(">Before.</textarea>"),
        "{page}"
    );
    let Got { status, html: page, .. } = painter
        .submit_multipart("/write", &adding(" ", &key), Some(("kite.png", "image/png", &png)))
        .await;
    assert!(
        status == StatusCode::BAD_REQUEST
            && page.contains("Say what the picture shows")
            && page.contains("id=\"post-alt-error\""),
        "{page}"
    );
    let svg = br#"<svg xmlns="http://www.w3.org/2000/svg"/>"#;
    let Got { status, html: page, .. } = painter
        .submit_multipart(
            "/write",
            &adding("A kite", &key),
            Some(("kite.svg", "image/svg+xml", svg)),
        )
        .await;
    assert!(
        status == StatusCode::UNSUPPORTED_MEDIA_TYPE
            && page.contains("id=\"post-picture-error\"")
            && page.contains(">Before.</textarea>"),
        "{page}"
    );
    let Got { status, html: page, .. } = painter
        .submit_multipart_from(
            "/write",
            &adding("A kite", &key),
            Some(("kite.png", "image/png", &png)),
            "cross-site",
        )
        .await;
    assert!(status == StatusCode::FORBIDDEN && page.contains("sent from another site"), "{page}");
    let page = painter.get("/write").await.html;
    assert!(page.contains("You keep 0 of 4 pictures"), "nothing was stored: {page}");
}

/// Added on the write page: the form again, the picture's Markdown at the end of the text,
/// the same key (the same post, once published), nothing published yet.
#[tokio::test]
async fn a_picture_added_on_the_write_page_ends_the_text_under_the_same_key() {
    let app = super::uploads::blog_with_data_directory().await;
    let painter = painter(&app).await;
    let key = form_key(&painter.get("/write").await.html, "/write");
    let (Got { status, html: page, .. }, markdown) = kite_added(&painter, &key).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("The picture is added at the end of the text"), "{page}");
    assert_eq!(form_key(&page, "/write"), key, "the same post, once published");
    assert!(page.contains(&format!(">Before.\n\n{markdown}</textarea>")), "{page}");
}

/// Published with another picture chosen on the way: both are in the post, and both are
/// the post's.
#[tokio::test]
async fn a_post_published_with_a_picture_chosen_shows_it_beside_the_one_added() {
    let app = super::uploads::blog_with_data_directory().await;
    let painter = painter(&app).await;
    let key = form_key(&painter.get("/write").await.html, "/write");
    let (_, markdown) = kite_added(&painter, &key).await;
    let published = published_with_a_sky(&painter, &key, &markdown).await;
    assert_eq!(published.status, StatusCode::SEE_OTHER, "{}", published.html);
    let post_path = published.location();
    let post_id = post_path.trim_start_matches("/posts/");
    assert!(
        markdown.contains(&format!("(/pictures/painter/{post_id}/")),
        "the pictures are the post's: {markdown}"
    );
    let page = painter.get(post_path).await.html;
    assert_eq!(page.matches("<img src=\"/pictures/painter/").count(), 2, "{page}");
    assert!(page.contains("alt=\"A red kite\"") && page.contains("alt=\"A blue sky\""), "{page}");
}

/// The edit page counts the post's pictures and adds to them.
#[tokio::test]
async fn the_edit_page_adds_a_picture_to_the_posts_own() {
    let app = super::uploads::blog_with_data_directory().await;
    let painter = painter(&app).await;
    let key = form_key(&painter.get("/write").await.html, "/write");
    let (_, markdown) = kite_added(&painter, &key).await;
    let post_path = published_with_a_sky(&painter, &key, &markdown)
        .await
        .redirect()
        .expect("published")
        .to_owned();
    let post_id = post_path.trim_start_matches("/posts/");
    let Got { status, html: page, .. } = painter.get(&format!("{post_path}/edit")).await;
    assert!(status == StatusCode::OK && page.contains("You keep 2 of 4 pictures"), "{page}");
    let edit_key = form_key(&page, &format!("{post_path}/edit"));
    let gif = encoded(&photo(), ImageFormat::Gif);
    let save = [
        ("title", "Kites"),
        ("content", "Only this one now."),
        ("alt", "A kite, in GIF"),
        ("idempotencyKey", edit_key.as_str()),
    ];
    let saved = painter
        .submit_multipart(
            &format!("{post_path}/edit"),
            &save,
            Some(("kite.gif", "image/gif", &gif)),
        )
        .await;
    assert_eq!(
        (saved.status, saved.redirect()),
        (StatusCode::SEE_OTHER, Some(post_path.as_str())),
        "{}",
        saved.html
    );
    let post = app.get(&format!("/api/posts/{post_id}")).await.body;
    let text = post["content"].as_str().unwrap();
    assert!(
        text.starts_with("Only this one now.\n\n![A kite, in GIF](/pictures/painter/")
            && text.ends_with(".gif)"),
        "{text}"
    );
}

/// A picture added on the write page to a post never published is swept away once it is
/// old enough (here: at once), and stops counting against the quota; a published post's
/// pictures stay.
#[tokio::test]
async fn the_pictures_of_a_post_never_published_are_swept_away() {
    let app = super::uploads::blog_with_data_directory().await;
    app.send_as(
        Some("drafter"),
        reqwest::Method::POST,
        "/api/users",
        Some(serde_json::json!({"username": "Drafter"})),
    )
    .await;
    let drafter = Browser::new(&app).signed_in_as("drafter");
    let png = encoded(&photo(), ImageFormat::Png);
    // A draft with a picture, left.
    let key = form_key(&drafter.get("/write").await.html, "/write");
    let adding = [
        ("title", "Left"),
        ("content", "Never sent."),
        ("alt", "A kite"),
        ("action", "add-picture"),
        ("idempotencyKey", key.as_str()),
    ];
    let added =
        drafter.submit_multipart("/write", &adding, Some(("kite.png", "image/png", &png))).await;
    assert_eq!(added.status, StatusCode::OK, "{}", added.html);
    let abandoned = markdown_of(&added.html, "A kite");
    // A post published with a picture.
    let key = form_key(&drafter.get("/write").await.html, "/write");
    let sky = encoded(
        &image::DynamicImage::ImageRgb8(image::RgbImage::from_pixel(9, 9, image::Rgb([1, 2, 3]))),
        ImageFormat::Png,
    );
    let publish = [
        ("title", "Sent"),
        ("content", "Here."),
        ("alt", "A sky"),
        ("idempotencyKey", key.as_str()),
    ];
    let published =
        drafter.submit_multipart("/write", &publish, Some(("sky.png", "image/png", &sky))).await;
    assert_eq!(published.status, StatusCode::SEE_OTHER);
    assert!(drafter.get("/write").await.html.contains("You keep 2 of 4 pictures"));

    // Too recent to sweep (younger than an hour): nothing goes.
    let hour = std::time::Duration::from_secs(60 * 60);
    assert_eq!(blog::testing::app::sweep_abandoned_pictures(&app.state, hour).await.unwrap(), 0);
    assert_eq!(
        blog::testing::app::sweep_abandoned_pictures(&app.state, std::time::Duration::ZERO)
            .await
            .unwrap(),
        1
    );
    let url =
        |markdown: &str| markdown[markdown.find("](").unwrap() + 2..markdown.len() - 1].to_owned();
    assert_eq!(
        drafter.get(&url(&abandoned)).await.status,
        StatusCode::NOT_FOUND,
        "the draft's picture is gone"
    );
    let post_page = drafter.get(published.location()).await.html;
    let picture = post_page[post_page.find("<img src=\"").unwrap() + 10..]
        .split('"')
        .next()
        .unwrap()
        .to_owned();
    assert_eq!(
        drafter.get(&picture).await.status,
        StatusCode::OK,
        "the published post's picture stays"
    );
    assert!(drafter.get("/write").await.html.contains("You keep 1 of 4 pictures"));
}
