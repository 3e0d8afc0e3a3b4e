//! Every kind of damage the embedded store refuses at start, in every container: the refusal
//! the real binary prints, the command it advises run as printed (`sh -c`, with `handler` on
//! the PATH, as an operator pasting it would), and then the blog starts, serves, and what it
//! serves is consistent: each post's counts equal its lists, in `posts` and in its copies, each
//! tag's page lists the posts that carry the tag, each author's list their posts, and no
//! comment, like or copy is left of a post that is gone.
//!
//! One blog is written per test and copied for each case, so that every case damages the same
//! blog: every item kind of every container (a user, a username's reservation, a post's copy,
//! a request record, a post, a comment, a like, a deleted post's tombstone, a dead letter).

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::TestApp;
use common::binary::Handler;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// The tags the blog's posts carry, in normal form.
const TAGS: [&str; 2] = ["kites", "модель"];

/// A stopped blog that holds an item of every kind in every container, settled (every copy
/// made); its users' ids.
struct Template {
    dir: tempfile::TempDir,
    users: Vec<String>,
}

async fn template() -> Template {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let tagged = |author: &str, title: &str, tags: Value| json!({"userId": author, "title": title, "content": "Some.", "tags": tags});
    let first = app.post("/api/posts", tagged(&alice, "Kites", json!(["Kites", "модель"]))).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    let first = first.body["id"].as_str().unwrap().to_owned();
    let second =
        app.post("/api/posts", tagged(&bob, "More kites", json!(["KITES"]))).await.body["id"]
            .as_str()
            .unwrap()
            .to_owned();
    for (author, post) in [(&alice, &first), (&bob, &first), (&alice, &second)] {
        let comment = app
            .post(
                &format!("/api/posts/{post}/comments"),
                json!({"userId": author, "content": "A comment."}),
            )
            .await;
        assert_eq!(comment.status, StatusCode::CREATED, "{}", comment.body);
    }
    let liked = app
        .send_as(
            Some(&bob),
            Method::POST,
            &format!("/api/posts/{first}/likes"),
            Some(json!({"userId": bob})),
        )
        .await;
    assert!(liked.status.is_success(), "{}", liked.body);
    // Request records, in `users` and in `posts`: writes sent with an Idempotency-Key.
    for (path, body) in [
        ("/api/users".to_owned(), json!({"username": "carol"})),
        (format!("/api/posts/{second}/comments"), json!({"userId": bob, "content": "Keyed."})),
    ] {
        let caller = if path == "/api/users" { "carol-principal" } else { bob.as_str() };
        let request = app
            .client
            .post(format!("{}{path}", app.base))
            .header("x-dev-user", caller)
            .header("idempotency-key", "k1");
        let answer = common::read(request.json(&body).send().await.unwrap()).await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    }
    // A deleted post: its tombstone stays in `posts` until its time to live.
    let gone = app.post("/api/posts", tagged(&alice, "Gone", json!(["Kites"]))).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let deleted =
        app.send_as(Some(&alice), Method::DELETE, &format!("/api/posts/{gone}"), None).await;
    assert!(deleted.status.is_success(), "{}", deleted.body);
    // A dead letter, in `leases`: what the API cannot write.
    blog::testing::changefeed::dead_letters::set_aside(
        &app.state.store,
        "PostsChangeFeed",
        "a post",
        "a test's",
        "{}",
    )
    .await
    .unwrap();
    app.eventually("/api/feed", |feed| {
        let items = feed["items"].as_array().unwrap();
        items.len() == 2
            && items.iter().any(|copy| copy["id"] == first.as_str() && copy["commentCount"] == 2)
    })
    .await;
    app.eventually("/api/tags/kites/posts", |page| page["items"].as_array().unwrap().len() == 2)
        .await;
    app.eventually(&format!("/api/posts/{second}"), |post| post["commentCount"] == 2).await;
    Template { dir: app.stop().await.unwrap(), users: vec![alice, bob] }
}

impl Template {
    /// A copy of the blog's data directory, to damage.
    fn copy(&self) -> tempfile::TempDir {
        let copy = tempfile::tempdir().unwrap();
        copy_dir(self.dir.path(), copy.path());
        copy
    }

    /// One item of each kind in each container (a kind: its `type`, or a request record), and
    /// each container: what the cases damage.
    fn items(&self) -> Vec<Item> {
        let mut kinds: BTreeMap<(String, String), Item> = BTreeMap::new();
        for item in rows(self.dir.path()) {
            let kind = if item.id.starts_with("request-") {
                "request record".to_owned()
            } else {
                let doc: Value = serde_json::from_str(&item.doc).unwrap();
                match doc["type"].as_str() {
                    _ if doc["scriptFence"] == true => "script fence".to_owned(),
                    Some("post") if doc["deleted"] == true => "tombstone".to_owned(),
                    Some(kind) => kind.to_owned(),
                    None => "untyped".to_owned(),
                }
            };
            kinds.entry((item.container.clone(), kind)).or_insert(item);
        }
        let containers: Vec<&str> = kinds.keys().map(|(container, _)| container.as_str()).collect();
        for container in ["users", "posts", "feed", "tags", "leases"] {
            assert!(
                containers.contains(&container),
                "the blog holds an item in {container}: {:?}",
                kinds.keys()
            );
        }
        for kind in ["user", "username", "post", "tombstone", "comment", "like", "request record"] {
            assert!(
                kinds.keys().any(|(_, held)| held == kind),
                "the blog holds a {kind}: {:?}",
                kinds.keys()
            );
        }
        kinds.into_values().collect()
    }
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A row of `items`.
#[derive(Clone, Debug)]
struct Item {
    container: String,
    partition_key: String,
    id: String,
    doc: String,
}

fn database(dir: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(dir.join("blog.sqlite")).unwrap()
}

fn rows(dir: &Path) -> Vec<Item> {
    let database = database(dir);
    let mut select = database
        .prepare("SELECT container, pk, id, doc FROM items ORDER BY container, pk, id")
        .unwrap();
    select
        .query_map([], |row| {
            Ok(Item {
                container: row.get(0)?,
                partition_key: row.get(1)?,
                id: row.get(2)?,
                doc: row.get(3)?,
            })
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Runs `statement` on the stopped blog's database, as the sqlite3 shell would; answers how
/// many rows it changed.
fn sql(dir: &Path, statement: &str, params: &[&str]) -> usize {
    database(dir).execute(statement, rusqlite::params_from_iter(params)).unwrap()
}

/// The key of `item` as SQL parameters.
fn key(item: &Item) -> [&str; 3] {
    [&item.container, &item.partition_key, &item.id]
}

const WHERE_KEY: &str = "container = ?1 AND pk = ?2 AND id = ?3";

/// Changes one byte of `item`'s JSON in the file itself, as a failing disk would: the row's
/// bytes in the file are its columns one after the other (SQLite's record format:
/// <https://www.sqlite.org/fileformat2.html#record_format>), found by them, and a letter of its
/// JSON is changed to another, so that the JSON stays valid and only the checksum can tell. A
/// table WITHOUT ROWID is an index b-tree, whose interior pages may hold a whole row as a key:
/// each place the row's bytes are is changed alike.
fn change_a_byte(dir: &Path, item: &Item) {
    // Everything in the file, no log beside it.
    database(dir).query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    let path = dir.join("blog.sqlite");
    let mut bytes = std::fs::read(&path).unwrap();
    // The row's start: a row larger than a page's share (the change log's, with many names)
    // goes on in overflow pages elsewhere in the file, so only its start is found whole. The
    // letter changed is the first field name's (`{"` opens every item), which is in that start.
    let mut end = item.doc.len().min(24);
    while !item.doc.is_char_boundary(end) {
        end -= 1;
    }
    let doc_start = &item.doc[..end];
    let record = format!("{}{}{}{}", item.container, item.partition_key, item.id, doc_start);
    let found: Vec<usize> = bytes
        .windows(record.len())
        .enumerate()
        .filter(|(_, at)| *at == record.as_bytes())
        .map(|(at, _)| at)
        .collect();
    assert!(!found.is_empty(), "the row's bytes are in the file: {item:?}");
    assert!(
        item.doc.starts_with("{\"") && item.doc.as_bytes()[2].is_ascii_alphabetic(),
        "a field name to change: {item:?}"
    );
    for at in found {
        bytes[at + record.len() - doc_start.len() + 2] ^= 0x01;
    }
    std::fs::write(&path, bytes).unwrap();
}

/// What `handler` (serving) printed, refusing to start on `dir`.
fn refusal(dir: &Path) -> String {
    let output = common::binary::run_to_end(&[], dir);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!output.status.success(), "the handler started on {}: {said}", dir.display());
    said
}

/// The command `refusal` advises (the one in backquotes that starts `BLOG_DATA_DIR=`), run as
/// printed by `sh -c`, in a directory of its own, with the directory of the `handler` binary
/// first on the PATH; answers the command, after checking that it succeeded and ran nothing else.
fn run_advised(refusal: &str) -> String {
    let command = common::binary::advised_command(refusal);
    let cwd = tempfile::tempdir().unwrap();
    common::binary::run_as_printed(command, cwd.path());
    assert_eq!(
        std::fs::read_dir(cwd.path()).unwrap().count(),
        0,
        "{command} left nothing where it ran"
    );
    command.to_owned()
}

/// One case: `damage` done to a copy of the blog, refused at start with a message holding
/// `said`, whose advised command is `advised` once the data directory is taken out; that
/// command run, the blog started and checked. Answers the data directory (stopped) for more
/// checks.
async fn case(
    template: &Template,
    what: &str,
    damage: impl FnOnce(&Path),
    said: &str,
    advised: &str,
) -> tempfile::TempDir {
    let dir = template.copy();
    damage(dir.path());
    let refused = refusal(dir.path());
    assert!(refused.contains(said), "{what}: the refusal says {said:?}: {refused}");
    let command = run_advised(&refused);
    let quoted_dir = format!("BLOG_DATA_DIR='{}' ", dir.path().display());
    assert_eq!(command.strip_prefix(&quoted_dir), Some(advised), "{what}: {command}");
    let blog = Handler::start(dir.path(), &[]);
    consistent(&blog.base, &template.users, what).await;
    assert!(blog.stop().success(), "{what}: the blog stops cleanly");
    no_orphans(dir.path(), what);
    dir
}

async fn get(base: &str, path: &str) -> (StatusCode, Value) {
    let answer = reqwest::get(format!("{base}{path}")).await.unwrap();
    let status = answer.status();
    (status, answer.json().await.unwrap_or(Value::Null))
}

async fn list(base: &str, path: &str) -> Vec<Value> {
    let (status, body) = get(base, path).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    body["items"].as_array().unwrap().clone()
}

/// What the blog at `base` serves is consistent (see the module's documentation).
async fn consistent(base: &str, users: &[String], what: &str) {
    let feed = list(base, "/api/feed").await;
    let mut live = Vec::new();
    for copy in &feed {
        let id = copy["id"].as_str().unwrap();
        let (status, post) = get(base, &format!("/api/posts/{id}")).await;
        assert_eq!(status, StatusCode::OK, "{what}: the feed's copy of {id} has its post: {post}");
        let comments = list(base, &format!("/api/posts/{id}/comments")).await.len() as u64;
        let likes = list(base, &format!("/api/posts/{id}/likes")).await.len() as u64;
        assert_eq!(
            (post["commentCount"].as_u64(), post["likeCount"].as_u64()),
            (Some(comments), Some(likes)),
            "{what}: {id}"
        );
        for field in ["commentCount", "likeCount", "title", "tags"] {
            assert_eq!(
                copy[field], post[field],
                "{what}: the feed's copy of {id} follows its {field}"
            );
        }
        live.push(post);
    }
    for tag in TAGS {
        let listed = list(base, &format!("/api/tags/{tag}/posts")).await;
        let mut listed_ids: Vec<&str> =
            listed.iter().map(|copy| copy["id"].as_str().unwrap()).collect();
        let mut carrying: Vec<&str> = live
            .iter()
            .filter(|post| {
                post["tags"].as_array().is_some_and(|tags| {
                    tags.iter().any(|t| t.as_str().unwrap().to_lowercase() == tag)
                })
            })
            .map(|post| post["id"].as_str().unwrap())
            .collect();
        listed_ids.sort_unstable();
        carrying.sort_unstable();
        assert_eq!(listed_ids, carrying, "{what}: the page of {tag} lists the posts that carry it");
        for copy in &listed {
            let post = live.iter().find(|post| post["id"] == copy["id"]).unwrap();
            assert_eq!(
                (&copy["commentCount"], &copy["likeCount"]),
                (&post["commentCount"], &post["likeCount"]),
                "{what}: {tag}"
            );
        }
    }
    for user in users {
        let (status, _) = get(base, &format!("/api/users/{user}")).await;
        let mut listed: Vec<String> = list(base, &format!("/api/users/{user}/posts"))
            .await
            .iter()
            .map(|copy| copy["id"].as_str().unwrap().to_owned())
            .collect();
        let mut theirs: Vec<String> = live
            .iter()
            .filter(|post| post["userId"] == user.as_str())
            .map(|post| post["id"].as_str().unwrap().to_owned())
            .collect();
        listed.sort_unstable();
        theirs.sort_unstable();
        if status == StatusCode::OK {
            assert_eq!(listed, theirs, "{what}: {user}'s posts are listed");
        }
    }
}

/// No comment or like is left of a post that is gone, and no copy of one (in the stopped
/// blog's database). (A script fence, `scriptFence`, is the server-side scripts' own item.)
fn no_orphans(dir: &Path, what: &str) {
    let orphans: i64 = database(dir)
        .query_row(
            "SELECT count(*) FROM items AS item WHERE (
                (item.container = 'posts' AND json_extract(item.doc, '$.type') IN ('comment', 'like')
                 AND NOT EXISTS (SELECT 1 FROM items AS post WHERE post.container = 'posts' AND post.pk = item.pk AND post.id = item.pk))
                OR (item.container IN ('users', 'feed', 'tags') AND json_extract(item.doc, '$.type') = 'post'
                 AND json_extract(item.doc, '$.scriptFence') IS NULL AND NOT EXISTS (SELECT 1 FROM items AS post WHERE post.container = 'posts'
                     AND post.id = json_extract(item.doc, '$.postId') AND post.pk = post.id)))",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(orphans, 0, "{what}: nothing is left of a post that is gone");
}

/// A byte changed on disk in any item of any container: refused naming the item, with the
/// `handler remove` that removes it; removed, with what depends on it.
#[tokio::test]
async fn a_changed_byte_in_any_item_is_removed_as_the_refusal_advises() {
    let template = template().await;
    for item in template.items() {
        let what = format!("a byte changed in {item:?}");
        let advised =
            format!("handler remove {} '{}' '{}'", item.container, item.partition_key, item.id);
        let dir = case(
            &template,
            &what,
            |dir| change_a_byte(dir, &item),
            "does not match its checksum",
            &advised,
        )
        .await;
        let doc: Option<String> = database(dir.path())
            .query_row(&format!("SELECT doc FROM items WHERE {WHERE_KEY}"), key(&item), |row| {
                row.get(0)
            })
            .ok();
        // What was written by someone (a user, a post, a comment, a like, a request's record,
        // a dead letter) is gone; what follows from what is left is made again (a live post's
        // copy, a live user's name reserved); the blog's own marks and logs are written again
        // as the blog goes on, or not.
        let kind: Value = serde_json::from_str(&item.doc).unwrap();
        let remade = (matches!(item.container.as_str(), "users" | "feed" | "tags")
            && kind["type"] == "post")
            || kind["type"] == "username";
        let written = item.id.starts_with("request-")
            || item.container == "posts"
            || item.container == "leases"
            || (item.container == "users" && kind["type"] == "user");
        if kind["scriptFence"] != true && (remade || written) {
            assert_eq!(doc.is_some(), remade, "{what}: {doc:?}");
        }
    }
}

/// Any item deleted from the file, in any container: refused naming where, with the `handler
/// repair` that accepts what is left as a consistent blog.
#[tokio::test]
async fn an_item_deleted_from_any_container_is_repaired_as_the_refusal_advises() {
    let template = template().await;
    for item in template.items() {
        let what = format!("{item:?} deleted");
        let delete = |dir: &Path| {
            assert_eq!(sql(dir, &format!("DELETE FROM items WHERE {WHERE_KEY}"), &key(&item)), 1)
        };
        case(&template, &what, delete, "does not hold what it recorded holding", "handler repair")
            .await;
    }
}

/// A row of any container whose columns are not what the store writes (a write number that is
/// text, a JSON that is a blob), or that names a container the store does not have: refused,
/// with the `handler repair` that removes it.
#[tokio::test]
async fn a_row_of_the_wrong_type_or_container_is_repaired_as_the_refusal_advises() {
    let template = template().await;
    let mut per_container: BTreeMap<String, Item> = BTreeMap::new();
    for item in template.items() {
        per_container.entry(item.container.clone()).or_insert(item);
    }
    let changes = [
        (
            "a write number that is text",
            "UPDATE items SET seq = 'x' WHERE container = ?1 AND pk = ?2 AND id = ?3",
        ),
        (
            "a JSON that is a blob",
            "UPDATE items SET doc = CAST(doc AS BLOB) WHERE container = ?1 AND pk = ?2 AND id = ?3",
        ),
        (
            "an unknown container",
            "UPDATE items SET container = 'drafts' WHERE container = ?1 AND pk = ?2 AND id = ?3",
        ),
    ];
    for item in per_container.values() {
        for (change, statement) in changes {
            let what = format!("{item:?}: {change}");
            let damage = |dir: &Path| assert_eq!(sql(dir, statement, &key(item)), 1);
            let dir = case(
                &template,
                &what,
                damage,
                "holds a row or a record that is not what this store writes",
                "handler repair",
            )
            .await;
            let left: i64 = database(dir.path())
                .query_row(
                    "SELECT count(*) FROM items WHERE container = 'drafts' OR typeof(seq) != 'integer' OR typeof(doc) != 'text'",
                    [],
                    |row| row.get(0),
                )
                .unwrap();
            assert_eq!(left, 0, "{what}: the row is removed");
        }
    }
}

/// The store's own records damaged: a container's tally (its count, its digest, a partition's),
/// the last write's number lowered or not a number, `meta` emptied, a repair's mark: each
/// refused, with the `handler repair` that makes them anew.
#[tokio::test]
async fn a_damaged_tally_or_meta_record_is_repaired_as_the_refusal_advises() {
    let template = template().await;
    let incomplete = "does not hold what it recorded holding";
    let not_written = "holds a row or a record that is not what this store writes";
    let mut cases: Vec<(String, String, &str)> = Vec::new();
    for container in ["users", "posts", "feed", "tags", "leases"] {
        cases.push((
            format!("{container}'s count"),
            format!("UPDATE meta SET value = value + 1 WHERE key = 'items:{container}'"),
            incomplete,
        ));
        cases.push((
            format!("{container}'s digest"),
            format!("UPDATE meta SET value = value + 1 WHERE key = 'digest:{container}'"),
            incomplete,
        ));
        cases.push((
            format!("a partition's tally in {container}"),
            format!(
                "UPDATE partitions SET items = items + 1 WHERE (container, pk) = (SELECT container, pk FROM partitions WHERE container = '{container}' LIMIT 1)"
            ),
            incomplete,
        ));
    }
    cases.extend([
        (
            "a count that is text".to_owned(),
            "UPDATE meta SET value = 'many' WHERE key = 'items:tags'".to_owned(),
            not_written,
        ),
        (
            "a partition's tally that is text".to_owned(),
            "UPDATE partitions SET digest = 'x' WHERE container = 'tags'".to_owned(),
            not_written,
        ),
        (
            "the last write's number lowered below a row's".to_owned(),
            "UPDATE meta SET value = (SELECT max(seq) FROM items) - 1 WHERE key = 'last_seq'"
                .to_owned(),
            not_written,
        ),
        (
            "the last write's number negative".to_owned(),
            "UPDATE meta SET value = -1 WHERE key = 'last_seq'".to_owned(),
            not_written,
        ),
        (
            "meta emptied".to_owned(),
            "DELETE FROM meta".to_owned(),
            "lost its records of what it holds",
        ),
        ("the tallies' table emptied".to_owned(), "DELETE FROM partitions".to_owned(), incomplete),
        (
            "a repair's mark".to_owned(),
            "INSERT INTO meta (key, value) VALUES ('repair_pending', 1)".to_owned(),
            "did not finish",
        ),
    ]);
    for (what, statement, said) in cases {
        let damage = |dir: &Path| assert!(sql(dir, &statement, &[]) > 0, "{what}: {statement}");
        case(&template, &what, damage, said, "handler repair").await;
    }
}

/// A page of the file damaged (SQLite's own check fails): refused, with the `handler repair`
/// that keeps the damaged file and copies what can still be read into a new one. What was on
/// the damaged page is gone, the rest is kept, and the blog is consistent.
#[tokio::test]
async fn a_damaged_page_is_salvaged_as_the_refusal_advises() {
    let template = template().await;
    let items = rows(template.dir.path()).len();
    let damage_a_page = |dir: &Path| {
        database(dir).query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
        let path = dir.join("blog.sqlite");
        let mut bytes = std::fs::read(&path).unwrap();
        let page_size = u16::from_be_bytes([bytes[16], bytes[17]]) as usize;
        // A leaf of the items' b-tree (page type 10: a leaf of an index b-tree, which a table
        // WITHOUT ROWID is) that holds a comment: its header (type, cells) made noise.
        let page = (1..bytes.len() / page_size)
            .find(|page| {
                let bytes = &bytes[page * page_size..(page + 1) * page_size];
                bytes[0] == 10 && bytes.windows(9).any(|at| at == b"A comment")
            })
            .expect("a leaf that holds a comment");
        for byte in &mut bytes[page * page_size..page * page_size + 12] {
            *byte = 0xA5;
        }
        std::fs::write(&path, bytes).unwrap();
    };
    let dir = case(
        &template,
        "a damaged page",
        damage_a_page,
        "SQLite cannot read all of it",
        "handler repair",
    )
    .await;
    let kept: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("blog.sqlite.damaged-"))
        .collect();
    assert_eq!(kept.len(), 1, "the damaged file is kept: {kept:?}");
    let left = rows(dir.path()).len();
    assert!(
        left > 0 && left < items,
        "what could be read is kept, what was on the page is gone: {left} of {items}"
    );
}

/// The checksum the store keeps with a row (`of_row` in src/cosmos/embedded/checksum.rs),
/// forged, as someone who knows the format can: each text framed by its length, the write
/// number, and a tagged expiry.
fn forged_sum(
    container: &str,
    partition_key: &str,
    id: &str,
    doc: &str,
    seq: u64,
    expires: Option<u64>,
) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    for text in [container, partition_key, id, doc] {
        hasher.update(&(text.len() as u64).to_le_bytes());
        hasher.update(text.as_bytes());
    }
    hasher.update(&seq.to_le_bytes());
    match expires {
        Some(expires) => {
            hasher.update(&[1]);
            hasher.update(&expires.to_le_bytes());
        }
        None => hasher.update(&[0]),
    }
    hasher.finalize()
}

/// An item of any container that is not JSON, its checksum forged to match: the checksum
/// passes, the emulator refuses to load it, and the refusal names the `handler remove` that
/// removes it.
#[tokio::test]
async fn an_item_that_cannot_be_loaded_is_removed_as_the_refusal_advises() {
    let template = template().await;
    let mut per_container: BTreeMap<String, Item> = BTreeMap::new();
    for item in template.items() {
        per_container.entry(item.container.clone()).or_insert(item);
    }
    for item in per_container.values() {
        let what = format!("{item:?} made not JSON");
        let forge = |dir: &Path| {
            let database = database(dir);
            let (seq, expires): (u64, Option<u64>) = database
                .query_row(
                    &format!("SELECT seq, expires FROM items WHERE {WHERE_KEY}"),
                    key(item),
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .unwrap();
            let doc = "not JSON";
            let sum = forged_sum(&item.container, &item.partition_key, &item.id, doc, seq, expires);
            let changed = database
                .execute(
                    &format!("UPDATE items SET doc = ?4, sum = ?5 WHERE {WHERE_KEY}"),
                    rusqlite::params![item.container, item.partition_key, item.id, doc, sum],
                )
                .unwrap();
            assert_eq!(changed, 1);
        };
        let advised =
            format!("handler remove {} '{}' '{}'", item.container, item.partition_key, item.id);
        case(&template, &what, forge, "cannot be loaded", &advised).await;
    }
}
