//! The blogs, files and samples the tests export and import: a blog with something of each
//! kind, the export files, and the lines and pictures an import is given.

use super::*;

/// A small blog in `data` (the blog run with `extra` settings): three users, one renamed, four
/// posts with a comment and a like each, a deleted post, and a picture (with its phones'
/// variant) in a post's Markdown; and what it shows.
async fn a_blog(data: &Path, extra: &[(&str, &str)]) -> Shown {
    let client = reqwest::Client::new();
    let blog = Handler::start(data, extra);
    let base = blog.base.clone();
    let mut users = Vec::new();
    for name in ["ada", "grace", "edsger"] {
        send(&client, &base, name, reqwest::Method::POST, "/api/users", json!({"username": name}))
            .await;
        users.push(name.to_owned());
    }
    send(
        &client,
        &base,
        "grace",
        reqwest::Method::PUT,
        "/api/users/grace",
        json!({"username": "Grace Hopper"}),
    )
    .await;
    let mut posts = Vec::new();
    for (n, author) in ["ada", "grace", "ada", "edsger"].into_iter().enumerate() {
        let mut body = json!({"userId": author, "title": format!("Post {n}"), "content": format!("**Text** {n}.")});
        if n == 1 {
            body["tags"] = json!(["Rust", "Cosmos DB"]);
        }
        let post = send(&client, &base, author, reqwest::Method::POST, "/api/posts", body).await;
        posts.push(post["id"].as_str().unwrap().to_owned());
    }
    for (post, reader) in posts.iter().zip(["grace", "edsger", "grace", "ada"]) {
        let comment = json!({"userId": reader, "content": format!("{reader} was here")});
        send(
            &client,
            &base,
            reader,
            reqwest::Method::POST,
            &format!("/api/posts/{post}/comments"),
            comment,
        )
        .await;
        send(
            &client,
            &base,
            reader,
            reqwest::Method::POST,
            &format!("/api/posts/{post}/likes"),
            json!({"userId": reader}),
        )
        .await;
    }
    // A picture wide enough to have a phones' variant, shown in the first post.
    let added = client
        .post(format!("{base}/api/posts/{}/pictures?alt=Noise", posts[0]))
        .header("x-dev-user", "ada")
        .header("content-type", "image/png")
        .body(common::noise_png_of(1200, 300, 7))
        .send()
        .await
        .unwrap();
    assert_eq!(added.status(), 201);
    let added: Value = added.json().await.unwrap();
    let content = format!("**Text** 0.\n\n{}", added["markdown"].as_str().unwrap());
    let edit = json!({"title": "Post 0", "content": content});
    send(&client, &base, "ada", reqwest::Method::PUT, &format!("/api/posts/{}", posts[0]), edit)
        .await;
    let mut pictures = Vec::new();
    let picture_url = added["url"].as_str().unwrap();
    // Its small copies for the lists' thumbnails, 1× and 2×, named from it.
    let small = ["128x96", "256x192"]
        .map(|size| picture_url.replace("1200x300.png", &format!("{size}.jpg")));
    for url in [&added["url"], &added["phoneUrl"], &json!(small[0]), &json!(small[1])] {
        let url =
            url.as_str().expect("a picture, its phones' variant and its small copies").to_owned();
        let (status, bytes) = bytes_at(&base, &url).await;
        assert_eq!(status, 200, "{url}");
        pictures.push((url, bytes));
    }
    // A deleted post is not exported.
    let gone = send(
        &client,
        &base,
        "ada",
        reqwest::Method::POST,
        "/api/posts",
        json!({"userId": "ada", "title": "Gone", "content": "x"}),
    )
    .await;
    send(
        &client,
        &base,
        "ada",
        reqwest::Method::DELETE,
        &format!("/api/posts/{}", gone["id"].as_str().unwrap()),
        Value::Null,
    )
    .await;
    until_the_feed_has(&base, 4).await;
    until_the_tag_has(&base, "rust", 1).await;
    let shown = everything_shown(&base, &users, &posts).await;
    assert!(
        shown.iter().any(|(path, text)| path == "/tags/rust" && text.contains("Post 1")),
        "the tag's page lists its post"
    );
    assert!(shown.iter().any(|(_, text)| text.contains("Grace Hopper")));
    assert!(
        shown.iter().any(|(_, text)| text.contains(&pictures[0].0)),
        "the post shows its picture"
    );
    blog.stop();
    Shown { users, posts, answers: shown, pictures }
}

/// That the blog in `data` (run with `extra`) shows what `shown` says, and keeps the imported
/// names.
pub(crate) async fn shows_the_same(data: &Path, extra: &[(&str, &str)], shown: &Shown, run: &str) {
    let Shown { users, posts, answers: shown, pictures } = shown;
    let blog = Handler::start(data, extra);
    until_the_feed_has(&blog.base, 4).await;
    let after = everything_shown(&blog.base, users, posts).await;
    for ((path, was), (_, is)) in shown.iter().zip(&after) {
        assert_eq!(was, is, "{run}: {path} shows another thing after the import");
    }
    for (url, bytes) in pictures {
        let (status, found) = bytes_at(&blog.base, url).await;
        assert_eq!(status, 200, "{run}: {url}");
        assert!(found == *bytes, "{run}: {url} has other bytes after the import");
    }
    // The search index is not exported: the import made it again from the posts.
    let found: Value = reqwest::get(format!("{}/api/search?q=post&limit=25", blog.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut ids: Vec<&str> = found["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["post"]["id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    let mut expected: Vec<&str> = posts.iter().map(String::as_str).collect();
    expected.sort_unstable();
    assert_eq!(ids, expected, "{run}: every post is found by search after the import: {found}");
    // The names came with the users: a new user cannot take one.
    let taken = reqwest::Client::new()
        .post(format!("{}/api/users", blog.base))
        .header("x-dev-user", "newcomer")
        .json(&json!({"username": "grace hopper"}))
        .send()
        .await
        .unwrap();
    assert_eq!(taken.status(), 409, "{run}: the imported name is reserved");
    blog.stop();
}

pub(crate) const EXPORTED: &str = "3 users, 4 posts, 4 comments, 4 likes, 4 pictures, 1 revisions";

/// [`a_blog`] (its pictures kept as `settings` say), exported to `blog.jsonl` in a directory of
/// its own: the export said what it wrote, and the file holds no system property, no deleted
/// post, and the pictures.
pub(crate) struct Exported {
    pub(crate) from: tempfile::TempDir,
    pub(crate) files: tempfile::TempDir,
    settings: Vec<(String, String)>,
    pub(crate) blog: Shown,
    pub(crate) file: std::path::PathBuf,
    pub(crate) text: String,
}

impl Exported {
    pub(crate) async fn new(settings: &[(&str, &str)]) -> Exported {
        let (from, files) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let blog = a_blog(from.path(), settings).await;
        let file = files.path().join("blog.jsonl");
        let exported =
            handler_with(from.path(), &["export", "--output", file.to_str().unwrap()], settings);
        assert!(exported.status.success(), "{}", stderr(&exported));
        assert!(
            stderr(&exported).contains(&format!("export: {EXPORTED} written to")),
            "{}",
            stderr(&exported)
        );
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            !text.contains("\"_etag\"") && !text.contains("Gone"),
            "no system properties, no deleted post"
        );
        assert!(
            !text.contains("Version\""),
            "no versions of a post's lists: they say something in their own store only"
        );
        assert_eq!(
            text.lines().filter(|line| line.contains("\"type\":\"picture\"")).count(),
            4,
            "the pictures are in the file"
        );
        let settings = settings
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        Exported { from, files, settings, blog, file, text }
    }

    /// `handler <args>` on the exported blog, with its settings and `extra` ones.
    pub(crate) fn handler(&self, args: &[&str], extra: &[(&str, &str)]) -> Output {
        let settings: Vec<(&str, &str)> =
            self.settings.iter().map(|(name, value)| (name.as_str(), value.as_str())).collect();
        handler_with(self.from.path(), args, &[&settings[..], extra].concat())
    }

    /// The names of the files in the files' directory, sorted.
    pub(crate) fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.files.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

/// Settings as `handler_with` takes them.
pub(crate) fn borrowed(settings: &[(String, String)]) -> Vec<(&str, &str)> {
    settings.iter().map(|(name, value)| (name.as_str(), value.as_str())).collect()
}

/// A file as `handler export` writes it: the header, `items`, and the last line that says what
/// they are.
pub(crate) fn sealed(items: &[Value]) -> String {
    use sha2::Digest;
    let mut text = format!("{}\n", json!({"format": "cosmos-blog", "version": 2}));
    let mut end = json!({"users": 0, "posts": 0, "comments": 0, "likes": 0, "pictures": 0});
    for item in items {
        text.push_str(&format!("{item}\n"));
        let kind = format!("{}s", item["type"].as_str().unwrap_or_default());
        if let Some(count) = end[&kind].as_u64() {
            end[&kind] = json!(count + 1);
        }
    }
    let digest = sha2::Sha256::digest(text.as_bytes());
    end["sha256"] = json!(digest.iter().map(|byte| format!("{byte:02x}")).collect::<String>());
    text.push_str(&format!("{}\n", json!({"format": "cosmos-blog", "end": end})));
    text
}

/// A store in a directory of its own holding a user named "xana", with a directory for the
/// files to import, and the store as exported before any import.
pub(crate) struct Target {
    pub(crate) to: tempfile::TempDir,
    pub(crate) files: tempfile::TempDir,
    pub(crate) before: Output,
}

impl Target {
    pub(crate) async fn new() -> Target {
        let (to, files) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let blog = Handler::start(to.path(), &[]);
        send(
            &reqwest::Client::new(),
            &blog.base,
            "xana",
            reqwest::Method::POST,
            "/api/users",
            json!({"username": "xana"}),
        )
        .await;
        blog.stop();
        let before = handler(to.path(), &["export"]);
        assert!(before.status.success(), "{}", stderr(&before));
        Target { to, files, before }
    }

    /// `text` written to a file and imported into the store with `extra` settings.
    pub(crate) fn import(&self, text: &str, extra: &[(&str, &str)]) -> Output {
        let file = self.files.path().join("bad.jsonl");
        std::fs::write(&file, text).unwrap();
        handler_with(self.to.path(), &["import", file.to_str().unwrap()], extra)
    }

    /// That `imported` failed saying `said`, and the store is as it was before (`before`, an export).
    pub(crate) fn refused(&self, imported: &Output, said: &str, before: &Output) {
        assert_eq!(imported.status.code(), Some(1), "{said}: {}", stderr(imported));
        assert!(
            stderr(imported).contains(said) && stderr(imported).contains("nothing was imported"),
            "{said}: {}",
            stderr(imported)
        );
        assert_eq!(
            handler(self.to.path(), &["export"]).stdout,
            before.stdout,
            "{said}: nothing was imported"
        );
    }
}

/// A small file's items, as the API writes them: ada's post with bob's comment and like.
pub(crate) struct Sample {
    pub(crate) post: Value,
    pub(crate) comment: Value,
    pub(crate) like: Value,
    /// The users ada and bob, the post, the comment and the like, in the order of an export.
    pub(crate) whole: Vec<Value>,
}

pub(crate) fn a_user(id: &str, name: &str) -> Value {
    json!({"id": id, "type": "user", "userId": id, "username": name})
}

impl Sample {
    pub(crate) fn new() -> Sample {
        let date = "2026-01-01T00:00:00.000Z";
        let post = json!({"id": "p1", "type": "post", "postId": "p1", "userId": "ada", "userUsername": "ada", "title": "T",
            "content": "C", "commentCount": 1, "likeCount": 1, "creationDate": date});
        let comment = json!({"id": "c1", "type": "comment", "postId": "p1", "userId": "bob", "userUsername": "bob",
            "content": "Hi", "creationDate": date});
        let like = json!({"id": "like-bob", "type": "like", "postId": "p1", "userId": "bob", "userUsername": "bob",
            "creationDate": date});
        let whole = vec![
            a_user("ada", "ada"),
            a_user("bob", "bob"),
            post.clone(),
            comment.clone(),
            like.clone(),
        ];
        Sample { post, comment, like, whole }
    }

    /// The whole sample with `field` of the item at `at` set to `value`.
    pub(crate) fn with(&self, at: usize, field: &str, value: Value) -> Vec<Value> {
        let mut items = self.whole.clone();
        items[at][field] = value;
        items
    }
}

/// A picture of ada's post p1 with `bytes`, named by their hash as the blog names it.
pub(crate) fn picture_of(bytes: &[u8]) -> Value {
    use sha2::Digest;
    let hash =
        sha2::Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect::<String>();
    json!({"type": "picture", "postId": "p1", "userId": "ada", "name": format!("{hash}-4x4.png"), "bytes": base64_of(bytes)})
}

pub(crate) fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A picture line of ada's post p1 with `bytes`, named by their hash (as the blog names what it
/// stores) and `size` and `extension`.
pub(crate) fn named_picture(bytes: &[u8], (width, height): (u32, u32), extension: &str) -> Value {
    let name = format!("{}-{width}x{height}.{extension}", sha256_hex(bytes));
    json!({"type": "picture", "postId": "p1", "userId": "ada", "name": name, "bytes": base64_of(bytes)})
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A photo as a phone writes it: 40 × 20 as the sensor read it, with EXIF that says to show
/// it turned (20 × 40) and where it was taken (a GPS latitude of 48° 51' 29.58").
pub(crate) fn photo_with_gps() -> Vec<u8> {
    common::hostile::with_segment(
        &common::hostile::photo_jpeg(40, 20, 1),
        &common::hostile::exif_segment(),
    )
}

pub(crate) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}
