//! Uploads through the blog, the same on every picture store.

use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::common::{Answer, TestApp, read};
use super::{animated, contains, encoded, exif_segment, photo, with_segment};
use image::{DynamicImage, ImageFormat, Rgb, RgbImage};

/// A blog on the embedded store whose pictures are kept as `pictures` says, with a quota
/// of four pictures a writer.
pub(crate) async fn blog_with(pictures: blog::PictureStorage) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let config =
        blog::Config { pictures, pictures_per_writer: Some(4), ..TestApp::config(dir.path()) };
    let mut app = TestApp::start_configured(config).await;
    app.keep(dir);
    app
}

/// A photo as a phone writes it: JPEG with its EXIF (orientation and GPS), 2000×1200 as
/// the sensor read it, 1200×2000 upright (the EXIF says the camera was turned).
fn phone_photo() -> Vec<u8> {
    let pixels = RgbImage::from_fn(2000, 1200, |x, y| Rgb([(x % 256) as u8, (y % 256) as u8, 90]));
    with_segment(&encoded(&DynamicImage::ImageRgb8(pixels), ImageFormat::Jpeg), &exif_segment())
}

/// `bytes` sent to `POST /api/posts/{post}/pictures` as `caller` with `content_type`.
async fn upload(
    app: &TestApp,
    caller: Option<&str>,
    post: &str,
    content_type: &str,
    bytes: Vec<u8>,
) -> Answer {
    let mut request = app
        .client
        .post(format!("{}/api/posts/{post}/pictures?alt=A%20red%20kite", app.base))
        .header("content-type", content_type)
        .body(bytes);
    if let Some(caller) = caller {
        request = request.header("x-dev-user", caller);
    }
    read(request.send().await.unwrap()).await
}

/// `GET path` with `headers`, its body as bytes.
pub(crate) async fn fetch(
    app: &TestApp,
    path: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, reqwest::header::HeaderMap, Vec<u8>) {
    let mut request = app.client.get(format!("{}{path}", app.base));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    (status, headers, response.bytes().await.unwrap().to_vec())
}

async fn pictures_kept(app: &TestApp, writer: &str) -> u64 {
    // What the writer keeps, as the next upload's answer says it: a picture already there.
    let answer = upload(
        app,
        Some(writer),
        &first_post(app, writer).await,
        "image/png",
        encoded(&photo(), ImageFormat::Png),
    )
    .await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    answer.body["picturesKept"].as_u64().unwrap()
}

async fn first_post(app: &TestApp, writer: &str) -> String {
    let posts = app.get(&format!("/api/users/{writer}/posts")).await;
    posts.body["items"]
        .as_array()
        .and_then(|items| items.last())
        .and_then(|post| post["id"].as_str())
        .map(str::to_owned)
        .expect("the writer has a post")
}

/// `user`'s post with a phone's photo uploaded to it, with its EXIF: the writer, the post,
/// and the upload's answer (201).
pub(crate) async fn a_photo_uploaded(app: &TestApp, user: &str) -> (String, String, Answer) {
    let writer = app.user(user).await;
    let post = app.post_by(&writer, "Kites").await;
    let added = upload(app, Some(&writer), &post, "image/jpeg", phone_photo()).await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.body);
    (writer, post, added)
}

/// An upload is answered with its address (also as `Location`), its size upright, the
/// addresses of its copies (phones', screens' where it is wider than them, the lists' small
/// ones), and the Markdown to paste.
pub(crate) async fn an_upload_is_answered_with_the_markdown_to_paste(app: &TestApp) {
    let (writer, post, added) = a_photo_uploaded(app, "kite-watcher").await;
    let url = added.body["url"].as_str().unwrap().to_owned();
    assert_eq!(added.header("location"), Some(url.as_str()));
    assert!(
        url.starts_with(&format!("/pictures/{writer}/{post}/")) && url.ends_with("-1200x2000.jpg"),
        "{url}"
    );
    assert_eq!(added.body["markdown"], format!("![A red kite]({url})"));
    assert_eq!(
        (added.body["width"].as_u64(), added.body["height"].as_u64()),
        (Some(1200), Some(2000))
    );
    let phone_url = added.body["phoneUrl"].as_str().expect("a phones' variant").to_owned();
    assert!(phone_url.ends_with("-960x1600.jpg"), "{phone_url}");
    assert!(
        added.body["screenUrl"].is_null(),
        "1,200 pixels wide needs no screens' copy: {}",
        added.body
    );
    let small = url.replace("1200x2000", "128x96");
    assert_eq!(
        added.body["smallCopies"][0],
        serde_json::json!({"url": small, "width": 128, "height": 96})
    );
    assert_eq!(added.body["smallCopies"][1]["url"], url.replace("1200x2000", "256x192"));
}

/// A picture is served without the database, as it was stored (no EXIF, no GPS), immutable,
/// answered 304 to its ETag; its phones' variant too.
pub(crate) async fn a_picture_is_served_as_stored_without_the_database(app: &TestApp) {
    let (_, _, added) = a_photo_uploaded(app, "kite-reader").await;
    let url = added.body["url"].as_str().unwrap().to_owned();
    let (status, headers, bytes) = fetch(app, &url, &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "image/jpeg");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["cache-control"], "public, max-age=31536000, immutable");
    let policy = headers["content-security-policy"].to_str().unwrap();
    assert!(policy.contains("sandbox"), "{policy}");
    let api = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/api.md")).unwrap();
    assert!(
        api.contains(&format!("a CSP of\n  its own (`{policy}`")),
        "docs/api.md names the policy served: {policy}"
    );
    assert_eq!(headers["x-cosmos-operations"], "0", "a picture reads nothing from Cosmos DB");
    assert!(
        !contains(&bytes, b"Exif") && !contains(&bytes, &2958_u32.to_le_bytes()),
        "no EXIF, no GPS latitude"
    );
    assert_eq!(image::load_from_memory(&bytes).unwrap().width(), 1200);
    let etag = headers["etag"].to_str().unwrap().to_owned();
    let (status, _, body) = fetch(app, &url, &[("if-none-match", &etag)]).await;
    assert_eq!((status, body.len()), (StatusCode::NOT_MODIFIED, 0));
    let (status, _, phone) = fetch(app, added.body["phoneUrl"].as_str().unwrap(), &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(image::load_from_memory(&phone).unwrap().width(), 960);
    // The lists' small copies, named from the picture's name; every file counts against the
    // writer's quota (this is their one picture).
    let mut kept = (bytes.len() + phone.len()) as u64;
    for (size, width, height) in [("128x96", 128, 96), ("256x192", 256, 192)] {
        let (status, headers, small) = fetch(app, &url.replace("1200x2000", size), &[]).await;
        assert_eq!(
            (status, headers["content-type"].to_str().unwrap()),
            (StatusCode::OK, "image/jpeg"),
            "{size}"
        );
        let decoded = image::load_from_memory(&small).unwrap();
        assert_eq!((decoded.width(), decoded.height()), (width, height));
        kept += small.len() as u64;
    }
    assert_eq!(
        added.body["bytesKept"].as_u64(),
        Some(kept),
        "the picture, its phones' copy and its two small copies"
    );
}

/// The same picture sent again (whatever type it is declared as): the same address, stored once.
pub(crate) async fn the_same_picture_sent_again_is_stored_once(app: &TestApp) {
    let (writer, post, added) = a_photo_uploaded(app, "kite-repeater").await;
    let again = upload(app, Some(&writer), &post, "application/octet-stream", phone_photo()).await;
    assert_eq!(
        (again.status, again.body["url"].as_str()),
        (StatusCode::CREATED, added.body["url"].as_str())
    );
    assert_eq!(again.body["picturesKept"], 1);
}

/// Pasted into the post, a picture is an `<img>` with its size and the phones' variant.
pub(crate) async fn a_picture_in_a_post_shows_with_its_size(app: &TestApp) {
    let (_, post, added) = a_photo_uploaded(app, "kite-poster").await;
    let (url, phone_url) =
        (added.body["url"].as_str().unwrap(), added.body["phoneUrl"].as_str().unwrap());
    let markdown = added.body["markdown"].as_str().unwrap();
    let edit = app
        .put(
            &format!("/api/posts/{post}"),
            serde_json::json!({"title": "Kites", "content": format!("Look:\n\n{markdown}")}),
        )
        .await;
    assert_eq!(edit.status, StatusCode::OK, "{}", edit.body);
    let page = app.get(&format!("/posts/{post}")).await;
    let html = page.body.as_str().unwrap();
    assert!(
        html.contains(&format!(
            "<img src=\"{url}\" alt=\"A red kite\" width=\"1200\" height=\"2000\""
        )),
        "{html}"
    );
    assert!(html.contains(&format!("{phone_url} 960w")), "{html}");
}

/// Every bad upload is refused with what to fix, and nothing is stored.
pub(crate) async fn a_bad_upload_leaves_nothing(app: &TestApp) {
    let (writer, post, _) = a_photo_uploaded(app, "kite-spoiler").await;
    // What the writer keeps is counted on their latest post, found in their list: the
    // post's copy there follows the write.
    app.eventually(&format!("/api/users/{writer}/posts"), |posts| {
        posts["items"][0]["id"] == post.as_str()
    })
    .await;
    bad_uploads_store_nothing(app, &writer, &post).await;
}

/// A picture is deleted with its post (C7), and so are its phones' variant and its small
/// copies (not made again when asked for).
pub(crate) async fn a_picture_is_deleted_with_its_post(app: &TestApp) {
    let (_, post, added) = a_photo_uploaded(app, "kite-deleter").await;
    let url = added.body["url"].as_str().unwrap();
    let small = [url.replace("1200x2000", "128x96"), url.replace("1200x2000", "256x192")];
    assert_eq!(fetch(app, &small[0], &[]).await.0, StatusCode::OK);
    assert_eq!(
        app.send(Method::DELETE, &format!("/api/posts/{post}"), None).await.status,
        StatusCode::NO_CONTENT
    );
    for gone in [url, added.body["phoneUrl"].as_str().unwrap(), &small[0], &small[1]] {
        let (status, _, _) = fetch(app, gone, &[]).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{gone}");
    }
}

/// Everything an upload must do, one after the other on `app`: for a picture store that is
/// costly to start once a test (Azurite).
pub(crate) async fn everything_an_upload_must_do(app: &TestApp) {
    an_upload_is_answered_with_the_markdown_to_paste(app).await;
    a_picture_is_served_as_stored_without_the_database(app).await;
    the_same_picture_sent_again_is_stored_once(app).await;
    a_picture_in_a_post_shows_with_its_size(app).await;
    a_bad_upload_leaves_nothing(app).await;
    the_quota_is_kept(app).await;
    a_picture_is_deleted_with_its_post(app).await;
}

/// What a bad upload is, who sends it to which post, declared as what, and its status.
type BadUpload<'a> = (&'a str, Option<&'a str>, &'a str, &'a str, Vec<u8>, u16);

/// Every bad upload is refused with what to fix, and nothing is stored.
async fn bad_uploads_store_nothing(app: &TestApp, writer: &str, post: &str) {
    let before = pictures_kept(app, writer).await;
    let jpeg = encoded(&photo(), ImageFormat::Jpeg);
    let bomb =
        encoded(&DynamicImage::ImageLuma8(image::GrayImage::new(7_000, 7_000)), ImageFormat::Png);
    let svg =
        br#"<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>"#.to_vec();
    let cases: Vec<BadUpload> = vec![
        ("empty", Some(writer), post, "image/png", Vec::new(), 400),
        ("SVG", Some(writer), post, "image/svg+xml", svg.clone(), 415),
        ("SVG declared PNG", Some(writer), post, "image/png", svg, 415),
        (
            "HTML",
            Some(writer),
            post,
            "text/html",
            b"<!doctype html><script>alert(1)</script>".to_vec(),
            415,
        ),
        (
            "a PNG declared JPEG",
            Some(writer),
            post,
            "image/jpeg",
            encoded(&photo(), ImageFormat::Png),
            415,
        ),
        ("a JPEG declared as text", Some(writer), post, "text/plain", jpeg.clone(), 415),
        ("truncated", Some(writer), post, "image/jpeg", jpeg[..jpeg.len() / 2].to_vec(), 422),
        ("a decompression bomb", Some(writer), post, "image/png", bomb, 422),
        ("10,000 frames", Some(writer), post, "image/gif", animated(10_000), 422),
        ("anonymous", None, post, "image/jpeg", jpeg.clone(), 401),
        ("another's post", Some("someone-else"), post, "image/jpeg", jpeg.clone(), 403),
        ("no such post", Some(writer), "no-such-post", "image/jpeg", jpeg.clone(), 404),
    ];
    for (what, caller, target, content_type, bytes, status) in cases {
        let answer = upload(app, caller, target, content_type, bytes).await;
        let detail = answer.problem(status);
        assert!(detail.len() > 20, "{what}: {detail}");
    }
    // Over the size limit: refused from its Content-Length, before it is read.
    let huge = upload(app, Some(writer), post, "image/jpeg", vec![0xFF; 11 * 1024 * 1024]).await;
    assert!(huge.problem(413).contains("10 MiB"), "{}", huge.body);
    // Refused as soon as its headers say so, with none of the body sent: a server that waited
    // for the body would answer 408 once the 10 s a body may take were over, never 413 (the
    // bound below only keeps a hung server from hanging the test).
    let address = app.base.trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "POST /api/posts/{post}/pictures HTTP/1.1\r\nHost: {address}\r\nx-dev-user: {writer}\r\n\
         Content-Type: image/jpeg\r\nContent-Length: {}\r\n\r\n",
        11 * 1024 * 1024
    );
    tokio::io::AsyncWriteExt::write_all(&mut stream, head.as_bytes()).await.unwrap();
    let mut answer = vec![0; 1024];
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::io::AsyncReadExt::read(&mut stream, &mut answer),
    );
    let read = read.await.expect("answered without the body").unwrap();
    assert!(
        String::from_utf8_lossy(&answer[..read]).starts_with("HTTP/1.1 413"),
        "{}",
        String::from_utf8_lossy(&answer[..read])
    );
    assert_eq!(pictures_kept(app, writer).await, before, "nothing stored");
}

/// A writer keeps at most four pictures here (the quota of [`blog_with`]); the fifth is
/// refused with what to do.
pub(crate) async fn the_quota_is_kept(app: &TestApp) {
    let writer = app.user("prolific").await;
    let post = app.post_by(&writer, "Many").await;
    for n in 0..4_u8 {
        let picture = DynamicImage::ImageRgb8(RgbImage::from_pixel(8, 8, Rgb([n, 0, 0])));
        let added =
            upload(app, Some(&writer), &post, "image/png", encoded(&picture, ImageFormat::Png))
                .await;
        assert_eq!(
            (added.status, added.body["picturesKept"].as_u64()),
            (StatusCode::CREATED, Some(u64::from(n) + 1))
        );
        assert_eq!(added.body["picturesAllowed"], 4);
    }
    let fifth = DynamicImage::ImageRgb8(RgbImage::from_pixel(8, 8, Rgb([9, 9, 9])));
    let refused =
        upload(app, Some(&writer), &post, "image/png", encoded(&fifth, ImageFormat::Png)).await;
    let detail = refused.problem(409);
    assert!(detail.contains("4 pictures") && detail.contains("delete a post"), "{detail}");
    // One of the four sent again (its first answer lost): the same address, whatever the quota.
    let first = DynamicImage::ImageRgb8(RgbImage::from_pixel(8, 8, Rgb([0, 0, 0])));
    let again =
        upload(app, Some(&writer), &post, "image/png", encoded(&first, ImageFormat::Png)).await;
    assert_eq!(
        (again.status, again.body["picturesKept"].as_u64()),
        (StatusCode::CREATED, Some(4)),
        "{}",
        again.body
    );

    // Eight at once from a writer with room for four: four are stored, four refused.
    let hurried = app.user("hurried").await;
    let post = app.post_by(&hurried, "At once").await;
    let sends = (0..8_u8).map(|n| {
        let picture = DynamicImage::ImageRgb8(RgbImage::from_pixel(8, 8, Rgb([0, n, 0])));
        upload(app, Some(&hurried), &post, "image/png", encoded(&picture, ImageFormat::Png))
    });
    let answers = futures::future::join_all(sends).await;
    let statuses: Vec<u16> = answers.iter().map(|answer| answer.status.as_u16()).collect();
    assert_eq!(statuses.iter().filter(|status| **status == 201).count(), 4, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|status| **status == 409).count(), 4, "{statuses:?}");
}

/// Each of [`everything_an_upload_must_do`], on the data directory, a test each.
mod on_the_data_directory {
    use super::blog_with_data_directory;

    #[tokio::test]
    async fn an_upload_is_answered_with_the_markdown_to_paste() {
        super::an_upload_is_answered_with_the_markdown_to_paste(&blog_with_data_directory().await)
            .await;
    }

    #[tokio::test]
    async fn a_picture_is_served_as_stored_without_the_database() {
        super::a_picture_is_served_as_stored_without_the_database(
            &blog_with_data_directory().await,
        )
        .await;
    }

    #[tokio::test]
    async fn the_same_picture_sent_again_is_stored_once() {
        super::the_same_picture_sent_again_is_stored_once(&blog_with_data_directory().await).await;
    }

    #[tokio::test]
    async fn a_picture_in_a_post_shows_with_its_size() {
        super::a_picture_in_a_post_shows_with_its_size(&blog_with_data_directory().await).await;
    }

    #[tokio::test]
    async fn a_bad_upload_leaves_nothing() {
        super::a_bad_upload_leaves_nothing(&blog_with_data_directory().await).await;
    }

    #[tokio::test]
    async fn the_quota_is_kept() {
        super::the_quota_is_kept(&blog_with_data_directory().await).await;
    }

    #[tokio::test]
    async fn a_picture_is_deleted_with_its_post() {
        super::a_picture_is_deleted_with_its_post(&blog_with_data_directory().await).await;
    }
}

pub(crate) async fn blog_with_data_directory() -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let config = blog::Config {
        pictures: blog::PictureStorage::DataDirectory(dir.path().to_owned()),
        pictures_per_writer: Some(4),
        ..TestApp::config(dir.path())
    };
    let mut app = TestApp::start_configured(config).await;
    app.keep(dir);
    app
}

/// A blog with no picture store (`BLOG_PICTURES=off`, or an account without one): an upload
/// is 501 saying which setting is missing, and the write page offers none.
#[tokio::test]
async fn without_a_picture_store_an_upload_is_501() {
    let app = blog_with(blog::PictureStorage::Off).await;
    let writer = app.user("plain").await;
    let post = app.post_by(&writer, "Words only").await;
    let refused =
        upload(&app, Some(&writer), &post, "image/png", encoded(&photo(), ImageFormat::Png)).await;
    assert!(refused.problem(501).contains("BLOG_PICTURES"), "{}", refused.body);
    let page = app
        .client
        .get(format!("{}/write", app.base))
        .header("cookie", format!("blog_dev_user={writer}"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("id=\"post-title\"") && !page.contains("type=\"file\""), "{page}");
}

/// A post deleted by the stored procedure alone (a C7 cut short after its tombstone): its
/// pictures go when `PostsChangeFeed` delivers the tombstone.
#[tokio::test]
async fn a_deletion_cut_short_has_its_pictures_removed_by_the_change_feed() {
    let app = blog_with_data_directory().await;
    let writer = app.user("quitter").await;
    let post = app.post_by(&writer, "Short-lived").await;
    let added =
        upload(&app, Some(&writer), &post, "image/png", encoded(&photo(), ImageFormat::Png)).await;
    let url = added.body["url"].as_str().unwrap().to_owned();
    let ttl = blog::testing::model::DELETED_POST_TTL_SECS;
    let no_request: Option<Value> = None;
    app.state
        .scripts
        .execute(
            blog::testing::scripts::StoredProcedure::DeletePost,
            &post,
            (&post, &writer, ttl, no_request),
        )
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while fetch(&app, &url, &[]).await.0 != StatusCode::NOT_FOUND {
        assert!(std::time::Instant::now() < deadline, "the change feed never removed {url}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
