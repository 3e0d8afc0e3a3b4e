//! Pictures stored before small copies were made at upload: the lists link to small copies
//! that are not there, and each is made on its first request, stored, and served.

use reqwest::StatusCode;

use super::common::binary::Handler;
use super::common::hostile::photo_jpeg;

/// The `<img class="thumb">` of `html`, its `src` and the addresses of its `srcset`.
fn thumbnail(html: &str) -> (String, Vec<String>) {
    let img = &html[html.find("<img class=\"thumb\"").expect("a thumbnail")..];
    let img = &img[..img.find('>').unwrap()];
    let attribute = |name: &str| {
        let at = img.find(&format!(" {name}=\"")).unwrap_or_else(|| panic!("{name} in {img}"))
            + name.len()
            + 3;
        img[at..at + img[at..].find('"').unwrap()].to_owned()
    };
    let srcset = attribute("srcset")
        .split(", ")
        .map(|entry| entry.split(' ').next().unwrap().to_owned())
        .collect();
    assert_eq!(
        (attribute("width"), attribute("height")),
        ("128".to_owned(), "96".to_owned()),
        "{img}"
    );
    (attribute("src"), srcset)
}

/// The real binary: a photo's post on the front page; its small copies' files removed while
/// the blog is stopped (as a picture stored before they were made has none); started again,
/// the front page links to them, and each link answers the copy (made then, stored, and a
/// JPEG of its size); a name of a copy of no picture there is still 404.
#[tokio::test]
async fn a_picture_stored_without_small_copies_is_shown_with_working_thumbnails() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let client = reqwest::Client::new();
    let post = handler.writers_post("w").await;
    let added = client
        .post(format!("{}/api/posts/{post}/pictures?alt=Kites", handler.base))
        .header("x-dev-user", "w")
        .header("content-type", "image/jpeg")
        .body(photo_jpeg(1600, 1200, 7))
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
        .header("x-dev-user", "w")
        .json(&serde_json::json!({"title": "Kites", "content": format!("Look.\n\n{markdown}")}))
        .send()
        .await
        .unwrap();
    assert_eq!(edited.status(), StatusCode::OK);
    let front_page = || async {
        client.get(format!("{}/", handler.base)).send().await.unwrap().text().await.unwrap()
    };
    for _ in 0..200 {
        if front_page().await.contains("class=\"thumb\"") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (src, srcset) = thumbnail(&front_page().await);
    handler.stop();

    let folder = data.path().join("pictures").join("w").join(&post);
    let mut removed = Vec::new();
    for entry in std::fs::read_dir(&folder).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with("-128x96.jpg") || name.ends_with("-256x192.jpg") {
            std::fs::remove_file(folder.join(&name)).unwrap();
            removed.push(name);
        }
    }
    assert_eq!(removed.len(), 2, "the upload stored both small copies");

    let handler = Handler::start(data.path(), &[]);
    let html = client.get(format!("{}/", handler.base)).send().await.unwrap().text().await.unwrap();
    let (again, again_srcset) = thumbnail(&html);
    assert_eq!(
        (&again, &again_srcset),
        (&src, &srcset),
        "the page names the copies it named before"
    );
    assert_eq!(srcset[0], src);
    // Each asked for by eight readers at once: each is answered the copy, made once.
    for (url, size) in [(&srcset[0], (128, 96)), (&srcset[1], (256, 192))] {
        let asked = (0..8).map(|_| client.get(format!("{}{url}", handler.base)).send());
        let mut answers = Vec::new();
        for served in futures::future::join_all(asked).await {
            let served = served.unwrap();
            assert_eq!(served.status(), StatusCode::OK, "{url}");
            assert_eq!(served.headers()["content-type"], "image/jpeg");
            assert_eq!(served.headers()["cache-control"], "public, max-age=31536000, immutable");
            answers.push(served.bytes().await.unwrap());
        }
        assert!(
            answers.iter().all(|answer| *answer == answers[0]),
            "{url}: the same bytes to each"
        );
        let small = image::load_from_memory(&answers[0]).unwrap();
        assert_eq!((small.width(), small.height()), size, "{url}");
        let name = url.rsplit('/').next().unwrap();
        assert!(folder.join(name).is_file(), "{name} is stored once made");
    }
    let none = src.replace(&src[src.rfind('/').unwrap() + 1..][..64], &"0".repeat(64));
    assert_eq!(
        client.get(format!("{}{none}", handler.base)).send().await.unwrap().status(),
        StatusCode::NOT_FOUND
    );
    let log = handler.log.clone();
    handler.stop();
    let made = log
        .lock()
        .unwrap()
        .iter()
        .filter(|line| line.contains("made a picture's small copy on its first request"))
        .count();
    assert_eq!(made, 2, "each made once, whoever asked at once");
}
