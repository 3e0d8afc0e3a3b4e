//! `handler export` and `handler import`, on the real binary: a blog exported and imported into
//! an empty store shows the same API answers, pages and pictures (byte for byte); an import run
//! twice changes nothing, and one killed halfway is finished by running it again; an export
//! killed leaves no file cut short; a file cut short, put after another or changed is refused;
//! an item the API would never write, or a picture an upload would refuse, is refused naming its
//! line and field, and nothing is imported (the store exported before and after is the same);
//! a picture is stored as an upload's preparation makes it; an import killed at any step keeps
//! the blog from starting until the same import, run again, has finished it.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::binary::Handler;
use serde_json::{Value, json};

/// `handler <args>` on the embedded store in `data`.
fn handler(data: &Path, args: &[&str]) -> Output {
    handler_with(data, args, &[])
}

/// `handler <args>` on the embedded store in `data`, with `extra` settings.
fn handler_with(data: &Path, args: &[&str], extra: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_handler"));
    command
        .args(args)
        .env("BLOG_DATA_DIR", data)
        .env("RUST_LOG", "warn")
        .env("NO_COLOR", "1")
        .env_remove("CosmosDB")
        .env_remove("CosmosDB__accountEndpoint")
        .env_remove("FUNCTIONS_CUSTOMHANDLER_PORT")
        .env_remove("BLOG_TEST_KILL_AFTER");
    for (name, value) in extra {
        command.env(name, value);
    }
    command.output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

async fn send(
    client: &reqwest::Client,
    base: &str,
    caller: &str,
    method: reqwest::Method,
    path: &str,
    body: Value,
) -> Value {
    let response = client
        .request(method, format!("{base}{path}"))
        .header("x-dev-user", caller)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{path}: {}", response.status());
    response.json().await.unwrap_or(Value::Null)
}

/// The blog's answers that an export must carry over: for every user, Q1, Q3 and their page; for
/// every post, Q2, Q4, Q5 and its page; Q6 and the front page. Pages with the base address
/// taken out (each blog runs on a port of its own).
async fn everything_shown(base: &str, users: &[String], posts: &[String]) -> Vec<(String, String)> {
    let client = reqwest::Client::new();
    let mut paths = vec![
        "/api/feed?limit=100".to_owned(),
        "/".to_owned(),
        "/api/tags/rust/posts".to_owned(),
        "/tags/rust".to_owned(),
    ];
    for user in users {
        paths.extend([
            format!("/api/users/{user}"),
            format!("/api/users/{user}/posts"),
            format!("/users/{user}"),
        ]);
    }
    for post in posts {
        paths.extend([
            format!("/api/posts/{post}"),
            format!("/api/posts/{post}/comments"),
            format!("/api/posts/{post}/likes"),
            format!("/posts/{post}"),
        ]);
    }
    let mut shown = Vec::new();
    for path in paths {
        let response = client.get(format!("{base}{path}")).send().await.unwrap();
        let status = response.status();
        // The blog's address, as requests reach it and as its links name it (the listener's).
        let public = base.replace("127.0.0.1", "localhost");
        let text = response.text().await.unwrap().replace(base, "BASE").replace(&public, "BASE");
        shown.push((path, format!("{status} {text}")));
    }
    shown
}

/// Waits until the tag's list has `count` posts (the copies follow the writes).
async fn until_the_tag_has(base: &str, tag: &str, count: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let list: Value = reqwest::get(format!("{base}/api/tags/{tag}/posts"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if list["items"].as_array().is_some_and(|items| items.len() == count) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the tag {tag} never listed {count} posts: {list}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Waits until the feed lists `count` posts (the copies follow the writes).
async fn until_the_feed_has(base: &str, count: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let feed: Value =
            reqwest::get(format!("{base}/api/feed?limit=100")).await.unwrap().json().await.unwrap();
        if feed["items"].as_array().map_or(0, Vec::len) == count {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "the feed never had {count} posts: {feed}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The bytes at `path` of the blog at `base`, with the status.
async fn bytes_at(base: &str, path: &str) -> (u16, Vec<u8>) {
    let response = reqwest::get(format!("{base}{path}")).await.unwrap();
    (response.status().as_u16(), response.bytes().await.unwrap().to_vec())
}

/// What a blog shows: its users, its posts, the API's answers and pages about them, and its
/// pictures' paths with their bytes.
struct Shown {
    users: Vec<String>,
    posts: Vec<String>,
    answers: Vec<(String, String)>,
    pictures: Vec<(String, Vec<u8>)>,
}

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
async fn shows_the_same(data: &Path, extra: &[(&str, &str)], shown: &Shown, run: &str) {
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

const EXPORTED: &str = "3 users, 4 posts, 4 comments, 4 likes, 4 pictures";

/// [`a_blog`] (its pictures kept as `settings` say), exported to `blog.jsonl` in a directory of
/// its own: the export said what it wrote, and the file holds no system property, no deleted
/// post, and the pictures.
struct Exported {
    from: tempfile::TempDir,
    files: tempfile::TempDir,
    settings: Vec<(String, String)>,
    blog: Shown,
    file: std::path::PathBuf,
    text: String,
}

impl Exported {
    async fn new(settings: &[(&str, &str)]) -> Exported {
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
    fn handler(&self, args: &[&str], extra: &[(&str, &str)]) -> Output {
        let settings: Vec<(&str, &str)> =
            self.settings.iter().map(|(name, value)| (name.as_str(), value.as_str())).collect();
        handler_with(self.from.path(), args, &[&settings[..], extra].concat())
    }

    /// The names of the files in the files' directory, sorted.
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.files.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

/// Settings as `handler_with` takes them.
fn borrowed(settings: &[(String, String)]) -> Vec<(&str, &str)> {
    settings.iter().map(|(name, value)| (name.as_str(), value.as_str())).collect()
}

/// Exported to stdout, the blog is the same text as in the file.
fn an_export_to_stdout_is_the_file(exported: &Exported) {
    let to_stdout = exported.handler(&["export"], &[]);
    assert_eq!(String::from_utf8_lossy(&to_stdout.stdout), exported.text);
}

/// An export killed after a few items leaves the file that was there, and a temporary file
/// that the next export removes.
fn a_killed_export_leaves_the_previous_file_and_a_leftover_the_next_removes(exported: &Exported) {
    let path = exported.file.to_str().unwrap();
    let killed = exported.handler(&["export", "--output", path], &[("BLOG_TEST_KILL_AFTER", "5")]);
    assert!(!killed.status.success(), "killed: {}", stderr(&killed));
    assert_eq!(
        std::fs::read_to_string(&exported.file).unwrap(),
        exported.text,
        "the previous file, whole"
    );
    let other = exported.files.path().join("other.jsonl");
    let killed = exported
        .handler(&["export", "-o", other.to_str().unwrap()], &[("BLOG_TEST_KILL_AFTER", "5")]);
    assert!(!killed.status.success());
    let left = exported.names();
    assert!(!other.exists(), "no file cut short: {left:?}");
    assert_eq!(
        left.iter().filter(|name| name.starts_with(".other.jsonl.partial-")).count(),
        1,
        "{left:?}"
    );
    let again = exported.handler(&["export", "-o", other.to_str().unwrap()], &[]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(std::fs::read_to_string(&other).unwrap(), exported.text);
    let names = exported.names();
    assert!(
        !names.iter().any(|name| name.starts_with(".other.jsonl.partial-")),
        "the leftover is removed: {names:?}"
    );
}

/// Imported into an empty store (its pictures kept as `to` says), twice; in a second store
/// killed after five items and pictures, then run again: each shows what the blog showed, and
/// exported again is the file.
async fn imported_killed_or_sent_again_arrives_whole(
    exported: &Exported,
    to: &impl Fn(&str) -> Vec<(String, String)>,
) {
    let path = exported.file.to_str().unwrap();
    for run in 1..=2 {
        let to_settings = to(&format!("to-{run}"));
        let to_settings = borrowed(&to_settings);
        let to_settings = to_settings.as_slice();
        let to = tempfile::tempdir().unwrap();
        // Run 2: killed after five items and pictures written, then run again.
        if run == 2 {
            let killed = handler_with(
                to.path(),
                &["import", path],
                &[to_settings, &[("BLOG_TEST_KILL_AFTER", "5")]].concat(),
            );
            assert!(!killed.status.success(), "killed: {}", stderr(&killed));
            assert!(!stderr(&killed).contains("copies made"), "{}", stderr(&killed));
        }
        for again in 1..=2 {
            let imported = handler_with(to.path(), &["import", path], to_settings);
            assert!(imported.status.success(), "run {run}.{again}: {}", stderr(&imported));
            assert!(
                stderr(&imported).contains(&format!("import: {EXPORTED} written, copies made")),
                "{}",
                stderr(&imported)
            );
            shows_the_same(to.path(), to_settings, &exported.blog, &format!("run {run}.{again}"))
                .await;
        }
        // The store exported again is the file.
        let exported_again = handler_with(to.path(), &["export"], to_settings);
        assert_eq!(String::from_utf8_lossy(&exported_again.stdout), exported.text, "run {run}");
    }
}

/// A file cut short, one put after another, one changed, and one of version 1 are refused,
/// and nothing is imported.
fn a_file_cut_short_doubled_changed_or_of_version_1_imports_nothing(
    exported: &Exported,
    to: &impl Fn(&str) -> Vec<(String, String)>,
) {
    let to_settings = to("to-bad");
    let to_settings = borrowed(&to_settings);
    let to_settings = to_settings.as_slice();
    let to = tempfile::tempdir().unwrap();
    let text = &exported.text;
    let lines: Vec<&str> = text.lines().collect();
    let cut = lines[..5].iter().map(|line| format!("{line}\n")).collect::<String>();
    let changed = text.replacen("was here", "was there", 1);
    let version_1 = text.replacen("\"version\":2", "\"version\":1", 1);
    let last = lines.len();
    let cases = [
        (cut, "the file ends at line 5 without its last line, which says what an export holds: it is cut short".to_owned()),
        (format!("{text}{text}"), format!("line {}: more after the file's last line (line {last})", last + 1)),
        (changed, format!("line {last}: the file's SHA-256 is")),
        (version_1, "line 1: a version 1 export".to_owned()),
    ];
    let bad = exported.files.path().join("bad.jsonl");
    for (text, said) in cases {
        std::fs::write(&bad, &text).unwrap();
        let imported = handler_with(to.path(), &["import", bad.to_str().unwrap()], to_settings);
        assert_eq!(imported.status.code(), Some(1), "{}", stderr(&imported));
        assert!(
            stderr(&imported).contains(&said) && stderr(&imported).contains("nothing was imported"),
            "{said}: {}",
            stderr(&imported)
        );
    }
    let exported = handler_with(to.path(), &["export"], to_settings);
    assert_eq!(
        String::from_utf8_lossy(&exported.stdout).lines().count(),
        2,
        "only the header and the last line: nothing was imported"
    );
}

/// Export, then import into empty stores, all of the above on one exported blog: the same
/// blog, whatever stopped the import or the export on the way. `from_settings`: where the blog
/// keeps its pictures; `to`: where each store imported into keeps them (a store of its own for
/// each name given). For a picture store costly to start once a test (Azurite).
async fn moved_whole(from_settings: &[(&str, &str)], to: impl Fn(&str) -> Vec<(String, String)>) {
    let exported = Exported::new(from_settings).await;
    an_export_to_stdout_is_the_file(&exported);
    a_killed_export_leaves_the_previous_file_and_a_leftover_the_next_removes(&exported);
    imported_killed_or_sent_again_arrives_whole(&exported, &to).await;
    a_file_cut_short_doubled_changed_or_of_version_1_imports_nothing(&exported, &to);
}

/// The blog in a file: its items, not the store's own properties; the same on stdout.
#[tokio::test]
async fn an_export_holds_the_blog_and_is_the_same_on_stdout() {
    an_export_to_stdout_is_the_file(&Exported::new(&[]).await);
}

#[tokio::test]
async fn a_killed_export_leaves_no_file_cut_short() {
    a_killed_export_leaves_the_previous_file_and_a_leftover_the_next_removes(
        &Exported::new(&[]).await,
    );
}

#[tokio::test]
async fn a_blog_imported_killed_or_sent_again_arrives_whole() {
    imported_killed_or_sent_again_arrives_whole(&Exported::new(&[]).await, &|_: &str| Vec::new())
        .await;
}

#[tokio::test]
async fn a_file_cut_short_doubled_or_changed_is_refused_and_nothing_is_imported() {
    a_file_cut_short_doubled_changed_or_of_version_1_imports_nothing(
        &Exported::new(&[]).await,
        &|_: &str| Vec::new(),
    );
}

/// The same with the pictures in Blob Storage, as Azurite serves it: each blog in a container
/// of its own.
#[tokio::test]
#[ignore = "needs Azurite: run tests/azurite/run.sh"]
async fn a_blog_with_its_pictures_in_blob_storage_moves_whole() {
    let azurite = common::azurite::Azurite::start();
    let connection = azurite.connection_string();
    let from = [("BLOG_PICTURES", connection.as_str()), ("BLOG_PICTURES_CONTAINER", "from")];
    moved_whole(&from, |container| {
        vec![
            ("BLOG_PICTURES".to_owned(), connection.clone()),
            ("BLOG_PICTURES_CONTAINER".to_owned(), container.to_owned()),
        ]
    })
    .await;
}

/// A file as `handler export` writes it: the header, `items`, and the last line that says what
/// they are.
fn sealed(items: &[Value]) -> String {
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
struct Target {
    to: tempfile::TempDir,
    files: tempfile::TempDir,
    before: Output,
}

impl Target {
    async fn new() -> Target {
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
    fn import(&self, text: &str, extra: &[(&str, &str)]) -> Output {
        let file = self.files.path().join("bad.jsonl");
        std::fs::write(&file, text).unwrap();
        handler_with(self.to.path(), &["import", file.to_str().unwrap()], extra)
    }

    /// That `imported` failed saying `said`, and the store is as it was before (`before`, an export).
    fn refused(&self, imported: &Output, said: &str, before: &Output) {
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
struct Sample {
    post: Value,
    comment: Value,
    like: Value,
    /// The users ada and bob, the post, the comment and the like, in the order of an export.
    whole: Vec<Value>,
}

fn a_user(id: &str, name: &str) -> Value {
    json!({"id": id, "type": "user", "userId": id, "username": name})
}

impl Sample {
    fn new() -> Sample {
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
    fn with(&self, at: usize, field: &str, value: Value) -> Vec<Value> {
        let mut items = self.whole.clone();
        items[at][field] = value;
        items
    }
}

/// A picture of ada's post p1 with `bytes`, named by their hash as the blog names it.
fn picture_of(bytes: &[u8]) -> Value {
    use sha2::Digest;
    let hash =
        sha2::Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect::<String>();
    json!({"type": "picture", "postId": "p1", "userId": "ada", "name": format!("{hash}-4x4.png"), "bytes": base64_of(bytes)})
}

/// Every item the API would never write is refused naming its line and field, with nothing
/// imported: the store the same, exported before and after.
#[tokio::test]
async fn what_the_api_would_never_write_is_refused_by_line_and_field_and_nothing_is_imported() {
    let target = Target::new().await;
    let sample = Sample::new();
    let (whole, with) = (&sample.whole, |at, field, value| sample.with(at, field, value));
    let noise = common::noise_png_of(4, 4, 1);
    let picture = json!({"type": "picture", "postId": "p1", "userId": "ada",
        "name": format!("{}-4x4.png", "0".repeat(64)), "bytes": base64_of(&noise)});
    let cases: Vec<(Vec<Value>, &str)> = vec![
        (with(2, "postId", json!("other")), "line 4, `postId`: \"other\" is not the post's `id`"),
        (with(3, "content", json!("x".repeat(3_000_000))), "line 5, `content`: `content` must be at most 2000 characters long"),
        (
            with(3, "content", json!("x".repeat(5_000))),
            "line 5, `content`: `content` must be at most 2000 characters long; it has 5000",
        ),
        (with(3, "id", json!("../../x")), "line 5, `id`: The id must not contain '/'"),
        (with(3, "id", json!("a/b?c#d%")), "line 5, `id`: The id must not contain '/'"),
        (with(3, "id", json!("p1")), "line 5, `id`: \"p1\" is in post \"p1\"'s partition already"),
        (with(1, "userId", json!("someone")), "line 3, `userId`: \"someone\" is not the user's `id`"),
        (with(2, "commentCount", json!(999)), "line 4, `commentCount`: post \"p1\" says 999, but the file lists 1"),
        (with(2, "likeCount", json!(0)), "line 4, `likeCount`: post \"p1\" says 0, but the file lists 1"),
        (with(3, "userId", json!("nobody")), "line 5, `userId`: \"nobody\" is no user of the file or of this store"),
        (with(4, "id", json!("like-ada")), "line 6, `id`: \"like-ada\" is not \"like-bob\""),
        (with(1, "username", json!("XANA")), "line 3, `username`: \"XANA\" is held in this store by user \"xana\""),
        (with(1, "username", json!("ADA")), "line 3, `username`: \"ADA\" is the same name as \"ada\", line 2's"),
        (with(1, "username", json!("\u{200B}")), "line 3, `username`: `username` must contain a visible character"),
        (with(2, "title", json!("")), "line 4: `title` must not be empty"),
        (with(2, "tags", json!(["Rust", "RUST"])), "line 4, `tags`: the tags \"Rust\" and \"RUST\" are the same tag"),
        (with(2, "deleted", json!(true)), "line 4, `deleted`: a deleted post"),
        (with(3, "creationDate", json!("yesterday")), "line 5, `creationDate`: \"yesterday\" is not an RFC 3339 date"),
        ([whole.clone(), vec![picture]].concat(), "line 7, `bytes`: their SHA-256 is not the one the picture's name says"),
        (
            [whole.clone(), vec![json!({"type": "picture", "postId": "p1", "userId": "bob", "name": "x", "bytes": ""})]].concat(),
            "line 7, `userId`: \"bob\" is not the post's author",
        ),
        (
            vec![a_user("ada", "ada"), a_user("bob", "bob"), sample.comment.clone(), sample.post.clone()],
            "line 4, `postId`: a comment of post \"p1\", which no line before it holds",
        ),
        (vec![a_user("ada", "ada"), json!({"id": "p", "type": "post"})], "line 3: not a \"post\" as the blog stores one"),
        (vec![a_user("ada", "ada"), json!({"type": "reservation"})], "line 3: `type` is \"reservation\""),
    ];
    for (items, said) in cases {
        target.refused(&target.import(&sealed(&items), &[]), said, &target.before);
    }
}

/// Lines that are not JSON, not a header, or no file at all are refused, naming the line.
#[tokio::test]
async fn a_file_that_is_not_json_or_has_no_header_is_refused_by_line() {
    let target = Target::new().await;
    let header = json!({"format": "cosmos-blog", "version": 2});
    let cases = [
        (
            format!("{header}\n{}\n{{\"id\": \"p\", \"type\": \"post\"\n", a_user("ada", "ada")),
            "line 3: not JSON",
        ),
        (format!("{}\n", a_user("ada", "ada")), "line 1: not the header"),
        (String::new(), "line 1: the file is empty"),
    ];
    for (text, said) in cases {
        let imported = target.import(&text, &[]);
        assert_eq!(imported.status.code(), Some(1), "{}", stderr(&imported));
        assert!(
            stderr(&imported).contains(said) && stderr(&imported).contains("nothing was imported"),
            "{said}: {}",
            stderr(&imported)
        );
    }
}

/// The sample with two pictures of ada's post: the file's text and the pictures' bytes.
fn with_two_pictures(sample: &Sample) -> (String, [Vec<u8>; 2]) {
    let pictures = [common::noise_png_of(4, 4, 1), common::noise_png_of(4, 4, 2)];
    let items =
        [sample.whole.clone(), pictures.iter().map(|bytes| picture_of(bytes)).collect()].concat();
    (sealed(&items), pictures)
}

/// A picture, where the blog keeps none, is refused and nothing is imported.
#[tokio::test]
async fn a_picture_where_the_blog_keeps_none_is_refused_and_nothing_is_imported() {
    let target = Target::new().await;
    let (text, _) = with_two_pictures(&Sample::new());
    let imported = target.import(&text, &[("BLOG_PICTURES", "off")]);
    target.refused(&imported, "line 7: a picture, and this blog keeps no pictures", &target.before);
}

/// The whole file is taken once the names are its own; a writer over this blog's quota keeps
/// their pictures, byte for byte, and the operator is told.
#[tokio::test]
async fn a_writer_over_the_quota_keeps_the_imported_pictures_and_the_operator_is_told() {
    let target = Target::new().await;
    let (text, pictures) = with_two_pictures(&Sample::new());
    let imported = target.import(&text, &[("BLOG_PICTURES_PER_WRITER", "1")]);
    assert!(imported.status.success(), "{}", stderr(&imported));
    assert!(
        stderr(&imported).contains("a writer keeps more pictures than this blog's quota"),
        "{}",
        stderr(&imported)
    );
    let blog = Handler::start(target.to.path(), &[]);
    for bytes in pictures {
        let name = picture_of(&bytes)["name"].as_str().unwrap().to_owned();
        let found = bytes_at(&blog.base, &format!("/pictures/ada/p1/{name}")).await;
        assert_eq!(found, (200, bytes), "the picture, byte for byte");
    }
    blog.stop();
}

/// A post stored already, sent again with other counters, is another post: refused, as it
/// would leave the stored comment under a post that says it has none.
#[tokio::test]
async fn a_stored_post_sent_again_with_other_counters_is_refused() {
    let target = Target::new().await;
    let sample = Sample::new();
    let imported = target.import(&sealed(&sample.whole), &[]);
    assert!(imported.status.success(), "{}", stderr(&imported));
    let before = handler(target.to.path(), &["export"]);
    let mut other_post = sample.post.clone();
    other_post["commentCount"] = json!(0);
    let imported = target.import(
        &sealed(&[a_user("ada", "ada"), a_user("bob", "bob"), other_post, sample.like.clone()]),
        &[],
    );
    let said = "line 4: post \"p1\" is in this store already, by \"ada\" with 1 comments and 1 likes; the file's is by \"ada\" with 0 and 1";
    assert!(
        stderr(&imported).contains(said) && stderr(&imported).contains("nothing was imported"),
        "{}",
        stderr(&imported)
    );
    assert_eq!(
        handler(target.to.path(), &["export"]).stdout,
        before.stdout,
        "nothing was imported"
    );
}

/// An import stopped while it writes, other than by a kill (here the picture store cannot be
/// reached; on an account, a throttle past the SDK's retries does the same): it says where it
/// stopped and that the same import finishes it, and it does.
#[tokio::test]
async fn an_import_stopped_by_a_failing_store_says_so_and_running_it_again_finishes_it() {
    let (to, files) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let date = "2026-01-01T00:00:00.000Z";
    let noise = common::noise_png_of(4, 4, 3);
    let hash = {
        use sha2::Digest;
        sha2::Sha256::digest(&noise).iter().map(|byte| format!("{byte:02x}")).collect::<String>()
    };
    let items = [
        json!({"id": "ada", "type": "user", "userId": "ada", "username": "ada"}),
        json!({"id": "p1", "type": "post", "postId": "p1", "userId": "ada", "userUsername": "ada", "title": "T",
            "content": "C", "commentCount": 0, "likeCount": 0, "creationDate": date}),
        json!({"type": "picture", "postId": "p1", "userId": "ada", "name": format!("{hash}-4x4.png"), "bytes": base64_of(&noise)}),
    ];
    let file = files.path().join("blog.jsonl");
    std::fs::write(&file, sealed(&items)).unwrap();
    // Blob Storage on a port where nothing listens.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (account, key) = (common::azurite::ACCOUNT, common::azurite::KEY);
    let unreachable = format!(
        "DefaultEndpointsProtocol=http;AccountName={account};AccountKey={key};BlobEndpoint=http://127.0.0.1:{port}/{account};"
    );
    let stopped = handler_with(
        to.path(),
        &["import", file.to_str().unwrap()],
        &[("BLOG_PICTURES", &unreachable)],
    );
    assert_eq!(stopped.status.code(), Some(1), "{}", stderr(&stopped));
    let said = "the import stopped at line 4, after writing 2 of the file's 3 items and pictures: run the same import again to finish it";
    assert!(stderr(&stopped).contains(said), "{}", stderr(&stopped));
    assert!(!stderr(&stopped).contains("nothing was imported"), "{}", stderr(&stopped));

    let finished = handler(to.path(), &["import", file.to_str().unwrap()]);
    assert!(finished.status.success(), "{}", stderr(&finished));
    let blog = Handler::start(to.path(), &[]);
    until_the_feed_has(&blog.base, 1).await;
    assert_eq!(
        bytes_at(&blog.base, &format!("/pictures/ada/p1/{hash}-4x4.png")).await,
        (200, noise)
    );
    blog.stop();
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `handler lag` on the embedded store: with nothing delivering the change feed (the blog run
/// as under the Functions host, whose trigger is not there), the writes are counted as not yet
/// delivered, with the oldest one's age; once the local processors have run, nothing is.
#[tokio::test]
async fn lag_counts_the_changes_not_yet_delivered_and_is_zero_once_the_processors_ran() {
    let data = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    let fresh = handler(data.path(), &["lag"]);
    assert!(fresh.status.success(), "{}", stderr(&fresh));
    assert_eq!(
        String::from_utf8_lossy(&fresh.stdout),
        "PostsChangeFeed: up to date\nUsersChangeFeed: up to date\n"
    );

    let blog = Handler::start(data.path(), &[("BLOG_CHANGE_FEED", "host")]);
    send(
        &client,
        &blog.base,
        "ada",
        reqwest::Method::POST,
        "/api/users",
        json!({"username": "ada"}),
    )
    .await;
    for n in 0..3 {
        let body = json!({"userId": "ada", "title": format!("Post {n}"), "content": "x"});
        send(&client, &blog.base, "ada", reqwest::Method::POST, "/api/posts", body).await;
    }
    blog.stop();
    let behind = handler(data.path(), &["lag"]);
    assert!(behind.status.success(), "{}", stderr(&behind));
    let said = String::from_utf8_lossy(&behind.stdout).into_owned();
    assert!(
        said.starts_with("PostsChangeFeed: 3 changes not delivered yet, the oldest written "),
        "{said}"
    );
    // The user, and the name it reserved, in `users`.
    assert!(
        said.contains("\nUsersChangeFeed: ") && !said.contains("UsersChangeFeed: up to date"),
        "{said}"
    );

    let blog = Handler::start(data.path(), &[]);
    until_the_feed_has(&blog.base, 3).await;
    blog.stop();
    let caught_up = handler(data.path(), &["lag"]);
    assert_eq!(
        String::from_utf8_lossy(&caught_up.stdout),
        "PostsChangeFeed: up to date\nUsersChangeFeed: up to date\n"
    );
}

/// A picture line of ada's post p1 with `bytes`, named by their hash (as the blog names what it
/// stores) and `size` and `extension`.
fn named_picture(bytes: &[u8], (width, height): (u32, u32), extension: &str) -> Value {
    let name = format!("{}-{width}x{height}.{extension}", sha256_hex(bytes));
    json!({"type": "picture", "postId": "p1", "userId": "ada", "name": name, "bytes": base64_of(bytes)})
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A photo as a phone writes it: 40 × 20 as the sensor read it, with EXIF that says to show
/// it turned (20 × 40) and where it was taken (a GPS latitude of 48° 51' 29.58").
fn photo_with_gps() -> Vec<u8> {
    common::hostile::with_segment(
        &common::hostile::photo_jpeg(40, 20, 1),
        &common::hostile::exif_segment(),
    )
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}

/// Each picture an upload would refuse is refused by an import, naming its line and saying
/// why, and nothing is imported: the hostile files the upload tests send, a page of HTML named
/// as a JPEG by its own hash, a JPEG cut short with its end marker put back, a photo whose EXIF
/// turns it to another size than its name says, one that needs more than the pictures' memory,
/// and bytes named as the phones' copy of no picture of the post.
#[tokio::test]
async fn a_picture_an_upload_would_refuse_is_refused_by_line_and_nothing_is_imported() {
    use common::hostile;
    let target = Target::new().await;
    let sample = Sample::new();
    let html = b"<!doctype html><html><script>alert(document.cookie)</script></html>".to_vec();
    let half = hostile::photo_jpeg(1600, 900, 2);
    let half = half[..half.len() / 2].to_vec();
    let cut = [&hostile::photo_jpeg(160, 120, 4)[..1000], &[0xFF, 0xD9]].concat();
    let fake_phone = json!({"type": "picture", "postId": "p1", "userId": "ada",
        "name": format!("{}-960x540.jpg", "ab".repeat(32)), "bytes": base64_of(&html)});
    let fake_phone_said = format!(
        "line 7, `bytes`: \"{}-960x540.jpg\" has bytes other than its name says, and is a copy of no picture of post \"p1\"",
        "ab".repeat(32)
    );
    // A picture's line, what the refusal says, and the settings the import runs with.
    type Case<'a> = (Value, &'a str, &'a [(&'a str, &'a str)]);
    // 7,000 × 7,000 of one colour: 49 megapixels in a PNG of a few dozen kilobytes.
    let bomb = {
        let mut png = std::io::Cursor::new(Vec::new());
        image::GrayImage::new(7_000, 7_000).write_to(&mut png, image::ImageFormat::Png).unwrap();
        png.into_inner()
    };
    let mut damaged = common::noise_png_of(40, 20, 3);
    let middle = damaged.len() / 2;
    damaged[middle..middle + 8].copy_from_slice(b"damaged!");
    let cases: Vec<Case<'_>> = vec![
        (
            named_picture(&html, (10, 10), "jpg"),
            "line 7, `bytes`: this is not a JPEG, PNG, WebP or GIF picture",
            &[],
        ),
        (
            named_picture(&hostile::seed("not-a-picture.bmp"), (1, 1), "png"),
            "line 7, `bytes`: this is not a JPEG, PNG, WebP or GIF picture (it looks like Bmp)",
            &[],
        ),
        (
            named_picture(&hostile::seed("not-a-picture.svg"), (1, 1), "png"),
            "line 7, `bytes`: this is not a JPEG",
            &[],
        ),
        (
            named_picture(&bomb, (10, 10), "png"),
            "line 7, `bytes`: the picture is 7000×7000 pixels",
            &[],
        ),
        (
            named_picture(&damaged, (40, 20), "png"),
            "line 7, `bytes`: the picture cannot be read (truncated or damaged)",
            &[],
        ),
        (
            named_picture(&hostile::gif_canvas_with_tiny_frames(), (6000, 6000), "gif"),
            "line 7, `bytes`: the animation has more than",
            &[],
        ),
        (
            named_picture(&hostile::png_with_inflating_profile(), (1, 1), "png"),
            "line 7, `bytes`: the picture's colour profile is over",
            &[],
        ),
        (
            named_picture(&cut, (160, 120), "jpg"),
            "line 7, `bytes`: the picture cannot be read (truncated or damaged): the JPEG's coded data ends before its last row: it is cut off",
            &[],
        ),
        (
            named_picture(&half, (1600, 900), "jpg"),
            "line 7, `bytes`: the picture cannot be read (truncated or damaged): the JPEG ends before its end marker",
            &[],
        ),
        (
            named_picture(&photo_with_gps(), (40, 20), "jpg"),
            "line 7, `name`: the picture is a 20×40 JPG, not what its name",
            &[],
        ),
        (
            named_picture(&hostile::photo_jpeg(1600, 900, 5), (1600, 900), "jpg"),
            "or import with a larger BLOG_PICTURE_MEMORY_MB",
            &[("BLOG_PICTURE_MEMORY_MB", "16")],
        ),
        (fake_phone, &fake_phone_said, &[]),
    ];
    for (picture, said, settings) in cases {
        let items = [sample.whole.clone(), vec![picture]].concat();
        target.refused(&target.import(&sealed(&items), settings), said, &target.before);
    }
}

/// A phone's photo with its GPS position, named by its own hash as an export names a picture,
/// is taken as an upload takes it: encoded anew, upright, without its EXIF, under the name its
/// new bytes make, which its post's Markdown names instead; a wide JPEG likewise, with a phones'
/// copy made from it (the file's is not taken). No picture stored or served carries the
/// position.
#[tokio::test]
async fn an_imported_photo_is_stored_as_an_upload_stores_it_and_no_gps_is_served() {
    let target = Target::new().await;
    let sample = Sample::new();
    let (gps, wide) = (photo_with_gps(), common::hostile::photo_jpeg(1600, 900, 5));
    // A JPEG that is also an HTML page: its pixels only are kept.
    let page_too = [
        &common::hostile::photo_jpeg(40, 20, 2)[..],
        b"<html><script>alert(document.cookie)</script></html>",
    ]
    .concat();
    let (gps_line, wide_line) =
        (named_picture(&gps, (20, 40), "jpg"), named_picture(&wide, (1600, 900), "jpg"));
    let phone_line = json!({"type": "picture", "postId": "p1", "userId": "ada",
        "name": format!("{}-960x540.jpg", sha256_hex(&wide)), "bytes": base64_of(&common::hostile::photo_jpeg(960, 540, 6))});
    let (gps_name, wide_name) =
        (gps_line["name"].as_str().unwrap(), wide_line["name"].as_str().unwrap());
    let mut post = sample.post.clone();
    post["content"] = json!(format!(
        "![Here](/pictures/ada/p1/{gps_name})\n\n![Wide](/pictures/ada/p1/{wide_name})"
    ));
    let items = vec![
        a_user("ada", "ada"),
        a_user("bob", "bob"),
        post,
        sample.comment.clone(),
        sample.like.clone(),
        gps_line.clone(),
        wide_line.clone(),
        phone_line,
        named_picture(&page_too, (40, 20), "jpg"),
    ];
    let imported = target.import(&sealed(&items), &[]);
    assert!(imported.status.success(), "{}", stderr(&imported));
    assert!(stderr(&imported).contains("4 pictures"), "{}", stderr(&imported));
    // The import made the wide photo's small copies, as an upload makes them (the others are
    // smaller than the lists' box): stored before the blog serves a request.
    let small: Vec<String> = common::files_under(&target.to.path().join("pictures"))
        .iter()
        .map(|file| file.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|name| name.ends_with("-128x96.jpg") || name.ends_with("-256x192.jpg"))
        .collect();
    assert_eq!(small.len(), 2, "{small:?}");

    let blog = Handler::start(target.to.path(), &[]);
    let stored: Value =
        reqwest::get(format!("{}/api/posts/p1", blog.base)).await.unwrap().json().await.unwrap();
    let content = stored["content"].as_str().unwrap().to_owned();
    assert!(
        !content.contains(&sha256_hex(&gps)) && !content.contains(&sha256_hex(&wide)),
        "named anew: {content}"
    );
    let names: Vec<&str> =
        content.match_indices("/pictures/ada/p1/").map(|(at, _)| &content[at..]).collect();
    assert_eq!(names.len(), 2, "{content}");
    for (prefix, (width, height)) in names.iter().zip([(20, 40), (1600, 900)]) {
        let url = &prefix[..prefix.find(')').unwrap()];
        assert!(url.ends_with(&format!("-{width}x{height}.jpg")), "the same size and kind: {url}");
        let (status, bytes) = bytes_at(&blog.base, url).await;
        assert_eq!(status, 200, "{url}");
        assert_eq!(
            url[url.rfind('/').unwrap() + 1..][..64],
            sha256_hex(&bytes),
            "named by the bytes served"
        );
        let shown = image::load_from_memory(&bytes).unwrap();
        assert_eq!((shown.width(), shown.height()), (width, height), "{url}: upright, as named");
        assert!(
            !contains(&bytes, b"Exif") && !contains(&bytes, &2958_u32.to_le_bytes()),
            "{url}: no EXIF, no GPS"
        );
    }
    let wide_url = names[1][..names[1].find(')').unwrap()].to_owned();
    let phone_url = wide_url.replace("-1600x900.jpg", "-960x540.jpg");
    let (status, phone) = bytes_at(&blog.base, &phone_url).await;
    assert_eq!(status, 200, "the phones' copy is made from the picture: {phone_url}");
    let phone = image::load_from_memory(&phone).unwrap();
    assert_eq!((phone.width(), phone.height()), (960, 540));
    for name in [gps_name, wide_name] {
        assert_eq!(
            bytes_at(&blog.base, &format!("/pictures/ada/p1/{name}")).await.0,
            404,
            "{name}: the file's name is not stored"
        );
    }
    let page = reqwest::get(format!("{}/posts/p1", blog.base)).await.unwrap().text().await.unwrap();
    assert!(
        page.contains(&wide_url) && page.contains(&phone_url),
        "the page shows the pictures as stored"
    );
    blog.stop();
    for file in common::files_under(&target.to.path().join("pictures")) {
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !contains(&bytes, b"Exif") && !contains(&bytes, &2958_u32.to_le_bytes()),
            "{}: no EXIF stored",
            file.display()
        );
        assert!(!contains(&bytes, b"<script"), "{}: nothing but pixels", file.display());
    }
}

/// `handler` (serve) on the embedded store in `data`: how it ended, if it stopped by itself
/// within a minute (it is killed otherwise: a blog that serves never ends).
fn serve_once(data: &Path) -> Option<(i32, String)> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_handler"))
        .env("BLOG_DATA_DIR", data)
        .env("BLOG_LISTEN", "127.0.0.1:0")
        .env("BLOG_AUTH", "development")
        .env("RUST_LOG", "warn")
        .env("NO_COLOR", "1")
        .env_remove("CosmosDB")
        .env_remove("CosmosDB__accountEndpoint")
        .env_remove("FUNCTIONS_CUSTOMHANDLER_PORT")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
            return Some((status.code().unwrap_or(-1), stderr));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// That every post the blog at `base` lists says as many comments and likes as it lists.
async fn counters_are_what_is_listed(base: &str, posts: &[String]) {
    for post in posts {
        let said: Value =
            reqwest::get(format!("{base}/api/posts/{post}")).await.unwrap().json().await.unwrap();
        for (counter, list) in [("commentCount", "comments"), ("likeCount", "likes")] {
            let listed: Value = reqwest::get(format!("{base}/api/posts/{post}/{list}"))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(
                said[counter].as_u64(),
                Some(listed["items"].as_array().unwrap().len() as u64),
                "{post}: {counter}"
            );
        }
    }
}

/// An import killed at each step of its writing (after its first item, after a picture, after
/// its last item, after the names are reserved, after the copies are made): the blog refuses to
/// start on the store (as `export` does), saying to run the same import again, with the file
/// named; another file is not imported into it; after a `handler repair` (which counts what
/// the import had written so far) it is still refused; the same import run again finishes it,
/// and the blog starts and shows what the exported blog showed, each post's counters what it
/// lists.
#[tokio::test]
async fn an_import_killed_anywhere_keeps_the_blog_from_starting_until_run_again_which_finishes_it()
{
    let exported = Exported::new(&[]).await;
    let path = exported.file.to_str().unwrap();
    let canonical = exported.file.canonicalize().unwrap().display().to_string();
    let lines: Vec<&str> = exported.text.lines().collect();
    let total = lines.len() - 2;
    let a_picture = lines.iter().position(|line| line.contains("\"type\":\"picture\"")).unwrap();
    for at in [1, a_picture, total, total + 1, total + 2] {
        let run = format!("killed after {at} of {total}");
        let to = tempfile::tempdir().unwrap();
        let killed = handler_with(
            to.path(),
            &["import", path],
            &[("BLOG_TEST_KILL_AFTER", &at.to_string())],
        );
        assert!(!killed.status.success(), "{run}: {}", stderr(&killed));
        let said = "did not finish (the handler stopped during `handler import`), so the blog would show part of it: run the same import again";
        let (code, refused) =
            serve_once(to.path()).unwrap_or_else(|| panic!("{run}: the blog served"));
        assert_eq!(code, 1, "{run}: {refused}");
        assert!(
            refused.contains(said)
                && refused.contains("handler import ")
                && refused.contains(&canonical),
            "{run}: {refused}"
        );
        let export = handler(to.path(), &["export"]);
        assert!(
            !export.status.success() && stderr(&export).contains(said),
            "{run}: {}",
            stderr(&export)
        );
        if at == a_picture {
            let other = exported.files.path().join("other.jsonl");
            std::fs::write(&other, sealed(&Sample::new().whole)).unwrap();
            let refused = handler(to.path(), &["import", other.to_str().unwrap()]);
            assert!(
                stderr(&refused)
                    .contains("this store holds an import of another file that did not finish")
                    && stderr(&refused).contains(&canonical),
                "{run}: {}",
                stderr(&refused)
            );
            let repaired = handler(to.path(), &["repair"]);
            assert!(repaired.status.success(), "{run}: {}", stderr(&repaired));
            assert_eq!(
                serve_once(to.path()).map(|(code, _)| code),
                Some(1),
                "{run}: refused after a repair too"
            );
        }
        let finished = handler(to.path(), &["import", path]);
        assert!(finished.status.success(), "{run}: {}", stderr(&finished));
        assert!(
            stderr(&finished).contains(&format!("import: {EXPORTED} written, copies made")),
            "{run}: {}",
            stderr(&finished)
        );
        shows_the_same(to.path(), &[], &exported.blog, &run).await;
        let blog = Handler::start(to.path(), &[]);
        counters_are_what_is_listed(&blog.base, &exported.blog.posts).await;
        blog.stop();
    }
}
