//! The screens' copy, 1,440 pixels wide, of a photo on a post page: what a 2× screen's 44rem
//! column (1,408 device pixels) takes from `srcset` instead of the photo as uploaded.

use reqwest::StatusCode;

use super::common::binary::Handler;
use super::common::hostile::photo_jpeg;

/// A 4032 × 3024 photo uploaded to `writer`'s new post on `handler`, shown in it: the
/// post's id and the post page's `srcset` (address, width descriptor).
async fn a_photo_in_a_post(handler: &Handler, writer: &str) -> (String, Vec<(String, String)>) {
    let client = reqwest::Client::new();
    let post = handler.writers_post(writer).await;
    let added = client
        .post(format!("{}/api/posts/{post}/pictures?alt=Kites", handler.base))
        .header("x-dev-user", writer)
        .header("content-type", "image/jpeg")
        .body(photo_jpeg(4032, 3024, 11))
        .send()
        .await
        .unwrap();
    let status = added.status();
    let added = added.json::<serde_json::Value>().await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{added}");
    let screen = added["screenUrl"]
        .as_str()
        .unwrap_or_else(|| panic!("the upload names its screens' copy: {added}"));
    assert!(screen.ends_with("-1440x1080.jpg"), "{screen}");
    let markdown = added["markdown"].as_str().unwrap().to_owned();
    let edited = client
        .put(format!("{}/api/posts/{post}", handler.base))
        .header("x-dev-user", writer)
        .json(&serde_json::json!({"title": "Kites", "content": format!("Look.\n\n{markdown}")}))
        .send()
        .await
        .unwrap();
    assert_eq!(edited.status(), StatusCode::OK);
    let srcset = srcset_of(handler, &post).await;
    (post, srcset)
}

/// The `srcset` of the post page's picture: (address, width descriptor) each.
async fn srcset_of(handler: &Handler, post: &str) -> Vec<(String, String)> {
    let html =
        reqwest::get(format!("{}/posts/{post}", handler.base)).await.unwrap().text().await.unwrap();
    let img = &html[html.find("<img src=\"/pictures/").expect("the picture")..];
    let img = &img[..img.find('>').unwrap()];
    let at = img.find(" srcset=\"").unwrap_or_else(|| panic!("srcset in {img}")) + 9;
    img[at..at + img[at..].find('"').unwrap()]
        .split(", ")
        .map(|entry| {
            let (url, width) = entry.split_once(' ').unwrap();
            (url.to_owned(), width.to_owned())
        })
        .collect()
}

/// `url` on `handler`: 200, a JPEG, 1440 × 1080 pixels; its bytes.
async fn a_screens_copy(handler: &Handler, url: &str) -> bytes::Bytes {
    let served = reqwest::get(format!("{}{url}", handler.base)).await.unwrap();
    assert_eq!(served.status(), StatusCode::OK, "{url}");
    assert_eq!(served.headers()["content-type"], "image/jpeg");
    assert_eq!(served.headers()["cache-control"], "public, max-age=31536000, immutable");
    let bytes = served.bytes().await.unwrap();
    let decoded = image::load_from_memory_with_format(&bytes, image::ImageFormat::Jpeg).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (1440, 1080), "{url}");
    bytes
}

/// The real binary: an uploaded 4032 × 3024 photo's post page names the phones' copy, the
/// screens' copy and the photo in its `srcset`, each by its width, and the screens' copy is
/// stored at upload (served with no copy made on request) and goes with its post.
#[tokio::test]
async fn an_uploaded_photo_has_a_screens_copy_in_its_post_pages_srcset() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let (post, srcset) = a_photo_in_a_post(&handler, "w").await;
    let widths: Vec<&str> = srcset.iter().map(|(_, width)| width.as_str()).collect();
    assert_eq!(widths, ["960w", "1440w", "4032w"], "{srcset:?}");
    let (original, screen) = (&srcset[2].0, &srcset[1].0);
    assert_eq!(
        *screen,
        original.replace("-4032x3024.jpg", "-1440x1080.jpg"),
        "named from the photo's name"
    );
    let name = screen.rsplit('/').next().unwrap();
    assert!(
        data.path().join("pictures").join("w").join(&post).join(name).is_file(),
        "stored at upload"
    );
    a_screens_copy(&handler, screen).await;
    let client = reqwest::Client::new();
    let deleted = client
        .delete(format!("{}/api/posts/{post}", handler.base))
        .header("x-dev-user", "w")
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        reqwest::get(format!("{}{screen}", handler.base)).await.unwrap().status(),
        StatusCode::NOT_FOUND
    );
    let log = handler.log.clone();
    handler.stop();
    assert!(
        !log.lock().unwrap().iter().any(|line| line.contains("on its first request")),
        "made at upload, not on request"
    );
}

/// The real binary: a photo's screens' copy removed from the data directory while the blog
/// is stopped (as a picture stored before screens' copies were made has none); started
/// again, the post page still names it, and asked for by eight readers at once it is made
/// once from the photo, stored, and served to each.
#[tokio::test]
async fn a_photo_stored_without_a_screens_copy_gets_it_on_its_first_request() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let (post, srcset) = a_photo_in_a_post(&handler, "w").await;
    a_screens_copy(&handler, &srcset[1].0).await;
    handler.stop();
    let screen = &srcset[1].0;
    let file =
        data.path().join("pictures").join("w").join(&post).join(screen.rsplit('/').next().unwrap());
    std::fs::remove_file(&file).unwrap();

    let handler = Handler::start(data.path(), &[]);
    assert_eq!(srcset_of(&handler, &post).await, srcset, "the page names the copy it named before");
    let asked = (0..8).map(|_| a_screens_copy(&handler, screen));
    let answers = futures::future::join_all(asked).await;
    assert!(answers.iter().all(|answer| *answer == answers[0]), "the same bytes to each");
    assert!(file.is_file(), "stored once made");
    let log = handler.log.clone();
    handler.stop();
    let made = log
        .lock()
        .unwrap()
        .iter()
        .filter(|line| line.contains("made a picture's screens' copy on its first request"))
        .count();
    assert_eq!(made, 1, "made once, whoever asked at once");
}
