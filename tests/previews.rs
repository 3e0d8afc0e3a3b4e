//! Pictures where readers look: a post's first picture as its link preview (OpenGraph's
//! `og:image` on its page) and small beside its excerpt in the lists (the front page, the
//! writer's page, a tag's page), from the short copies `PostsChangeFeed` keeps.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use blog::testing::cosmos::{Container, WriteOp};
use common::forms::Browser;
use common::{Answer, TestApp, read};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// A `width`×`height` PNG uploaded to `post` as its writer `user`, described as `alt`: the
/// upload's answer (its `markdown`, its `url`, its `phoneUrl`).
async fn upload(
    app: &TestApp,
    user: &str,
    post: &str,
    width: u32,
    height: u32,
    alt: &str,
) -> Value {
    let answer = read(
        app.client
            .post(format!(
                "{}/api/posts/{post}/pictures?alt={}",
                app.base,
                alt.replace(' ', "%20").replace('"', "%22")
            ))
            .header("x-dev-user", user)
            .header("content-type", "image/png")
            .body(gradient_png(width, height))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    answer.body
}

/// A `width`×`height` PNG of a gradient: quick to make and to encode again.
fn gradient_png(width: u32, height: u32) -> Vec<u8> {
    let pixels = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 90])
    });
    let mut png = std::io::Cursor::new(Vec::new());
    pixels.write_to(&mut png, image::ImageFormat::Png).unwrap();
    png.into_inner()
}

/// A page's HTML, asked for anonymously with `headers`.
async fn page(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> String {
    let got = Browser::new(app).get_with(path, headers).await;
    assert_eq!(got.status, StatusCode::OK, "{path}");
    got.html
}

/// The `content` of the `<meta>` whose `property` (or `name`) is `property`, if the page has one.
fn meta<'a>(html: &'a str, property: &str) -> Option<&'a str> {
    let tag = ["property", "name"]
        .iter()
        .find_map(|kind| html.find(&format!("<meta {kind}=\"{property}\" content=\"")))?;
    let start = html[tag..].find("content=\"")? + tag + "content=\"".len();
    Some(&html[start..start + html[start..].find('"')?])
}

/// The list `path` (of the JSON API) once its item `post` satisfies `check`.
async fn listed(app: &TestApp, path: &str, post: &str, check: impl Fn(&Value) -> bool) -> Value {
    let find = |list: &Value| {
        list["items"].as_array().unwrap().iter().find(|item| item["id"] == post).cloned()
    };
    let answer = app.eventually(path, |list| find(list).is_some_and(|item| check(&item))).await;
    find(&answer.body).unwrap()
}

/// The post's short copies in `users`, `feed` and under `tag`, as stored.
async fn copies(app: &TestApp, user: &str, post: &str, tag: &str) -> Vec<Value> {
    let mut found = Vec::new();
    for (container, partition) in
        [(Container::Users, user), (Container::Feed, "post"), (Container::Tags, tag)]
    {
        found.push(
            app.state.store.read::<Value>(container, partition, post).await.unwrap().unwrap(),
        );
    }
    found
}

/// A post by a new writer, tagged `kites`, whose text shows a 1600×900 picture (after a link to
/// another site's image, which is not one of its pictures): the writer, the post, the upload.
async fn post_with_a_picture(app: &TestApp) -> (String, String, Value) {
    let user = app.user("ada").await;
    let created = app
        .post(
            "/api/posts",
            json!({"userId": user, "title": "Kites", "content": "Soon.", "tags": ["Kites"]}),
        )
        .await;
    let post = created.body["id"].as_str().unwrap().to_owned();
    let picture = upload(app, &user, &post, 1600, 900, "A red kite over the \"hill\"").await;
    let markdown = picture["markdown"].as_str().unwrap();
    let content = format!(
        "They fly at dawn. ![a remote one](https://elsewhere.example/kite.png)\n\n{markdown}"
    );
    let edited =
        app.put(&format!("/api/posts/{post}"), json!({"title": "Kites", "content": content})).await;
    assert_eq!(edited.status, StatusCode::OK, "{}", edited.body);
    (user, post, picture)
}

/// What the copies and the lists carry: the phones' copy of the first picture, its size and its
/// alt text.
fn first_picture(picture: &Value) -> Value {
    json!({"url": picture["phoneUrl"], "width": 960, "height": 540, "alt": "A red kite over the \"hill\""})
}

#[tokio::test]
async fn a_posts_page_offers_its_first_picture_to_link_previews() {
    let app = TestApp::start().await;
    let (user, post, picture) = post_with_a_picture(&app).await;
    let phone = picture["phoneUrl"].as_str().unwrap();
    assert!(
        phone.ends_with("-960x540.jpg"),
        "the phones' copy, the size that suits a preview: {phone}"
    );

    let html = page(&app, &format!("/posts/{post}"), &[]).await;
    let origin = app.public.as_str();
    assert_eq!(
        meta(&html, "og:image"),
        Some(format!("{origin}{phone}").as_str()),
        "absolute, on the blog's address"
    );
    assert_eq!(meta(&html, "og:image:width"), Some("960"));
    assert_eq!(meta(&html, "og:image:height"), Some("540"));
    assert_eq!(meta(&html, "og:image:alt"), Some("A red kite over the &quot;hill&quot;"));
    assert_eq!(meta(&html, "twitter:image:alt"), Some("A red kite over the &quot;hill&quot;"));
    assert_eq!(meta(&html, "twitter:card"), Some("summary_large_image"));
    assert_eq!(meta(&html, "og:type"), Some("article"));
    assert_eq!(meta(&html, "og:title"), Some("Kites"));
    assert_eq!(meta(&html, "og:url"), Some(format!("{origin}/posts/{post}").as_str()));
    // The picture named is one the blog serves.
    let served = app.client.get(meta(&html, "og:image").unwrap()).send().await.unwrap();
    assert_eq!(
        (served.status(), served.headers()["content-type"].to_str().unwrap()),
        (StatusCode::OK, "image/jpeg")
    );

    // On the blog's configured address, whatever host a request says it was sent to: a shared
    // cache hands this page to every reader.
    let proxied = page(
        &app,
        &format!("/posts/{post}"),
        &[("x-forwarded-host", "evil.example"), ("x-forwarded-proto", "https")],
    )
    .await;
    assert_eq!(meta(&proxied, "og:image"), Some(format!("{origin}{phone}").as_str()));

    // A post that shows no picture of its own (another site's image is a link): no preview picture.
    let plain = app
        .post("/api/posts", json!({"userId": user, "title": "Words", "content": "![x](https://elsewhere.example/x.png)"}))
        .await;
    let html = page(&app, &format!("/posts/{}", plain.body["id"].as_str().unwrap()), &[]).await;
    for absent in [
        "og:image",
        "og:image:width",
        "og:image:height",
        "og:image:alt",
        "twitter:card",
        "twitter:image:alt",
    ] {
        assert_eq!(meta(&html, absent), None, "{absent}");
    }
    assert_eq!(meta(&html, "og:title"), Some("Words"));
}

#[tokio::test]
async fn the_lists_show_the_first_picture_small_beside_the_excerpt_at_its_size() {
    let app = TestApp::start().await;
    let (user, post, picture) = post_with_a_picture(&app).await;
    let expected = first_picture(&picture);
    for list in [
        "/api/feed".to_owned(),
        format!("/api/users/{user}/posts"),
        "/api/tags/kites/posts".to_owned(),
    ] {
        let item = listed(&app, &list, &post, |item| item.get("picture").is_some()).await;
        assert_eq!(item["picture"], expected, "{list}");
    }
    for stored in copies(&app, &user, &post, "kites").await {
        assert_eq!(stored["picture"], expected, "the copy in {}", stored);
    }
    // The whole post keeps no copy of it: the page reads it from the text.
    assert!(app.get(&format!("/api/posts/{post}")).await.body.get("picture").is_none());

    // The small copies for the box, 1× and 2×, named from the phones' copy's name, at the
    // box's size; each served, a JPEG of that size.
    let phone = picture["phoneUrl"].as_str().unwrap();
    let [one, two] = ["128x96", "256x192"].map(|size| phone.replace("960x540", size));
    let thumbnail = format!(
        "<a href=\"/posts/{post}\"><img class=\"thumb\" src=\"{one}\" srcset=\"{one} 1x, {two} 2x\" alt=\"\" width=\"128\" \
         height=\"96\" loading=\"lazy\" decoding=\"async\"><bdi>Kites</bdi></a>"
    );
    for path in ["/".to_owned(), format!("/users/{user}"), "/tags/kites".to_owned()] {
        let html = page(&app, &path, &[]).await;
        assert!(html.contains(&thumbnail), "{path}: {html}");
        assert!(html.contains(">They fly at dawn."), "{path}: the excerpt");
    }
    for (url, size) in [(&one, (128, 96)), (&two, (256, 192))] {
        let served = app.client.get(format!("{}{url}", app.base)).send().await.unwrap();
        assert_eq!(
            (served.status(), served.headers()["content-type"].to_str().unwrap()),
            (StatusCode::OK, "image/jpeg")
        );
        let small = image::load_from_memory(&served.bytes().await.unwrap()).unwrap();
        assert_eq!((small.width(), small.height()), size, "{url}");
    }
}

#[tokio::test]
async fn an_edit_of_the_first_picture_changes_the_copies() {
    let app = TestApp::start().await;
    let (user, post, picture) = post_with_a_picture(&app).await;
    listed(&app, "/api/feed", &post, |item| item["picture"] == first_picture(&picture)).await;

    // Another picture, put first.
    let second = upload(&app, &user, &post, 640, 480, "A kite on the ground").await;
    let content = format!(
        "{}\n\n{}",
        second["markdown"].as_str().unwrap(),
        picture["markdown"].as_str().unwrap()
    );
    app.put(&format!("/api/posts/{post}"), json!({"title": "Kites", "content": content})).await;
    let changed =
        json!({"url": second["url"], "width": 640, "height": 480, "alt": "A kite on the ground"});
    assert!(
        second["phoneUrl"].is_null(),
        "a picture no wider than a phone's copy is its own: {second}"
    );
    for list in [
        "/api/feed".to_owned(),
        format!("/api/users/{user}/posts"),
        "/api/tags/kites/posts".to_owned(),
    ] {
        listed(&app, &list, &post, |item| item["picture"] == changed).await;
    }
    for stored in copies(&app, &user, &post, "kites").await {
        assert_eq!(stored["picture"], changed);
    }

    // A rename rewrites the post with the new name (and so its copies): the picture stays.
    let renamed = app.put(&format!("/api/users/{user}"), json!({"username": "Ada Lovelace"})).await;
    assert_eq!(renamed.status, StatusCode::OK, "{}", renamed.body);
    for list in [
        "/api/feed".to_owned(),
        format!("/api/users/{user}/posts"),
        "/api/tags/kites/posts".to_owned(),
    ] {
        let item = listed(&app, &list, &post, |item| item["userUsername"] == "Ada Lovelace").await;
        assert_eq!(item["picture"], changed, "{list}");
    }

    // The pictures taken out of the text: the copies show none, nor do the pages.
    app.put(&format!("/api/posts/{post}"), json!({"title": "Kites", "content": "Words alone."}))
        .await;
    for list in [
        "/api/feed".to_owned(),
        format!("/api/users/{user}/posts"),
        "/api/tags/kites/posts".to_owned(),
    ] {
        listed(&app, &list, &post, |item| item.get("picture").is_none()).await;
    }
    for stored in copies(&app, &user, &post, "kites").await {
        assert!(stored.get("picture").is_none(), "{stored}");
    }
    for path in ["/".to_owned(), format!("/users/{user}"), "/tags/kites".to_owned()] {
        assert!(!page(&app, &path, &[]).await.contains("class=\"thumb\""), "{path}");
    }
}

/// Copies written before they carried the first picture (as stored, and as an earlier build's
/// `handler import` made them) still read, and show no thumbnail; `handler rebuild-copies`
/// gives them the picture.
#[tokio::test]
async fn rebuild_copies_fills_in_the_first_picture() {
    let app = TestApp::start().await;
    let (user, post, picture) = post_with_a_picture(&app).await;
    // Waited for on the store itself: a list read now would keep its page, which a write made
    // beside the change feed (as this one) does not mark changed.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while copies_with_the_picture(&app, &user, &post).await < 3 {
        assert!(std::time::Instant::now() < deadline, "the copies never carried the picture");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    for (container, partition) in
        [(Container::Users, user.as_str()), (Container::Feed, "post"), (Container::Tags, "kites")]
    {
        let mut document =
            app.state.store.read::<Value>(container, partition, &post).await.unwrap().unwrap();
        let object = document.as_object_mut().unwrap();
        object.retain(|name, _| !name.starts_with('_'));
        assert!(object.remove("picture").is_some());
        let write = WriteOp::Replace { id: post.clone(), document, if_match: None };
        app.state.store.execute_write(container, partition, write).await.unwrap();
    }
    assert_eq!(copies_with_the_picture(&app, &user, &post).await, 0);

    for list in [
        "/api/feed".to_owned(),
        format!("/api/users/{user}/posts"),
        "/api/tags/kites/posts".to_owned(),
    ] {
        let answer: Answer = app.get(&list).await;
        assert_eq!(answer.status, StatusCode::OK, "{list}: {}", answer.body);
        let item = &answer.body["items"][0];
        assert_eq!(
            (item["id"].as_str(), item.get("picture")),
            (Some(post.as_str()), None),
            "{list}"
        );
    }
    for path in ["/".to_owned(), format!("/users/{user}"), "/tags/kites".to_owned()] {
        let html = page(&app, &path, &[]).await;
        assert!(
            html.contains("<bdi>Kites</bdi>") && !html.contains("class=\"thumb\""),
            "{path}: {html}"
        );
    }

    blog::testing::changefeed::processor::rebuild_copies(&app.state, &mut |_| {}).await.unwrap();
    assert_eq!(
        copies_with_the_picture(&app, &user, &post).await,
        3,
        "rebuild-copies made them again"
    );
    for list in [
        "/api/feed".to_owned(),
        format!("/api/users/{user}/posts"),
        "/api/tags/kites/posts".to_owned(),
    ] {
        listed(&app, &list, &post, |item| item["picture"] == first_picture(&picture)).await;
    }
    // Once made by the rules, a copy is kept as it is: a second rebuild writes nothing.
    let before = copies(&app, &user, &post, "kites").await;
    blog::testing::changefeed::processor::rebuild_copies(&app.state, &mut |_| {}).await.unwrap();
    assert_eq!(copies(&app, &user, &post, "kites").await, before, "not written again (same etags)");
}

/// How many of the post's three copies carry its first picture.
async fn copies_with_the_picture(app: &TestApp, user: &str, post: &str) -> usize {
    let mut found = 0;
    for (container, partition) in
        [(Container::Users, user), (Container::Feed, "post"), (Container::Tags, "kites")]
    {
        let copy = app.state.store.read::<Value>(container, partition, post).await.unwrap();
        found += usize::from(copy.is_some_and(|copy| copy.get("picture").is_some()));
    }
    found
}

/// An export holds the posts as `posts` does, without a first picture (derived, it is made
/// again); imported, the copies carry it again, and the lists show it.
#[tokio::test]
async fn an_import_makes_the_copies_with_the_first_picture() {
    let app = TestApp::start().await;
    let (_, post, picture) = post_with_a_picture(&app).await;
    listed(&app, "/api/feed", &post, |item| item["picture"] == first_picture(&picture)).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("blog.jsonl");
    blog::export(&app.state, &mut std::fs::File::create(&file).unwrap(), &mut |_, _| {})
        .await
        .unwrap();
    let lines = std::fs::read_to_string(&file).unwrap();
    let posts: Vec<Value> = lines
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|item| item["type"] == "post")
        .collect();
    assert_eq!(posts.len(), 1);
    assert!(posts[0].get("picture").is_none(), "{}", posts[0]);

    let other = TestApp::start().await;
    blog::import(&other.state, &file, None, &mut |_| {}).await.unwrap();
    listed(&other, "/api/feed", &post, |item| item["picture"] == first_picture(&picture)).await;
    // The small copy the list links to was made by the import's preparation (an export's file
    // carries it, and the import makes it again).
    let small = picture["phoneUrl"].as_str().unwrap().replace("960x540", "128x96");
    assert!(
        page(&other, "/tags/kites", &[])
            .await
            .contains(&format!("<img class=\"thumb\" src=\"{small}\""))
    );
    let stored = other.data_dir.join(small.trim_start_matches('/'));
    assert!(stored.is_file(), "{} was stored by the import", stored.display());
}
