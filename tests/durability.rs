//! The embedded store keeps every acknowledged write across a restart, also after `kill -9`;
//! refuses damaged files, naming them; and imports a directory of the earlier store once.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use common::TestApp;
use common::binary::Handler;
use serde_json::json;

#[tokio::test]
async fn everything_acknowledged_survives_a_restart() {
    let app = TestApp::start().await;
    let author = app.user("alice").await;
    let post = app.post_by(&author, "Hello").await;
    app.post(&format!("/api/posts/{post}/comments"), json!({"userId": author, "content": "first"}))
        .await;
    app.post(&format!("/api/posts/{post}/likes"), json!({"userId": author})).await;
    app.put(&format!("/api/users/{author}"), json!({"username": "alice2"})).await;
    // Let the rename reach the post through the change feed, so the state is settled.
    let before = app
        .eventually(&format!("/api/posts/{post}"), |post| post["userUsername"] == "alice2")
        .await
        .body;
    let temp = app.stop().await.unwrap();

    let app = TestApp::start_in(temp.path()).await;
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body, before);
    assert_eq!(app.get(&format!("/api/users/{author}")).await.body["username"], "alice2");
    assert_eq!(
        app.get(&format!("/api/posts/{post}/comments")).await.body["items"][0]["content"],
        "first"
    );
    assert_eq!(
        app.get(&format!("/api/posts/{post}/likes")).await.body["items"].as_array().unwrap().len(),
        1
    );
    // The restarted store goes on working: the like is still a like, the counters still move.
    app.post(&format!("/api/posts/{post}/likes"), json!({"userId": author})).await.problem(409);
    app.post(
        &format!("/api/posts/{post}/comments"),
        json!({"userId": author, "content": "second"}),
    )
    .await;
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body["commentCount"], 2);
    app.stop().await;
    drop(temp);
}

/// A write to the spawned handler as `caller` (development sign-in); its answer's body.
async fn post_as(
    client: &reqwest::Client,
    base: &str,
    caller: &str,
    path: &str,
    body: serde_json::Value,
) -> serde_json::Value {
    let response = client
        .post(format!("{base}{path}"))
        .header("x-dev-user", caller)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{path}: {}", response.status());
    response.json().await.unwrap()
}

#[tokio::test]
async fn acknowledged_writes_survive_kill_9() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let base = handler.base.clone();
    let client = reqwest::Client::new();
    let user =
        post_as(&client, &base, "alice-principal", "/api/users", json!({"username": "alice"}))
            .await;
    let user_id = user["id"].as_str().unwrap();
    let mut posts = Vec::new();
    for n in 0..20 {
        let body = json!({"userId": user_id, "title": format!("post {n}"), "content": "body"});
        posts.push(post_as(&client, &base, user_id, "/api/posts", body).await);
    }
    handler.kill_9();

    let handler = Handler::start(data.path(), &[]);
    let base = &handler.base;
    for post in &posts {
        let read: serde_json::Value = client
            .get(format!("{base}/api/posts/{}", post["id"].as_str().unwrap()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(&read, post);
    }
}

/// `kill -9` while 8 clients write at once (their commits grouped): every write acknowledged
/// before the kill is there after the restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_concurrent_writes_survive_kill_9() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let base = handler.base.clone();
    let client = reqwest::Client::new();
    let user =
        post_as(&client, &base, "alice-principal", "/api/users", json!({"username": "alice"}))
            .await;
    let user_id = user["id"].as_str().unwrap().to_owned();
    let acknowledged = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let writers: Vec<_> = (0..8)
        .map(|writer| {
            let (client, base, user_id, acknowledged) = (client.clone(), base.clone(), user_id.clone(), acknowledged.clone());
            tokio::spawn(async move {
                for n in 0.. {
                    let body = json!({"userId": user_id, "title": format!("post {writer}.{n}"), "content": "body"});
                    let Ok(response) =
                        client.post(format!("{base}/api/posts")).header("x-dev-user", &user_id).json(&body).send().await
                    else {
                        return;
                    };
                    if !response.status().is_success() {
                        return;
                    }
                    let Ok(post) = response.json::<serde_json::Value>().await else { return };
                    acknowledged.lock().unwrap().push(post);
                }
            })
        })
        .collect();
    // Bounded, so that writers that stop acknowledging fail the test instead of hanging it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while acknowledged.lock().unwrap().len() < 80 {
        assert!(std::time::Instant::now() < deadline, "80 writes were never acknowledged");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    handler.kill_9();
    for writer in writers {
        writer.await.unwrap();
    }

    let handler = Handler::start(data.path(), &[]);
    let posts = acknowledged.lock().unwrap().clone();
    for post in &posts {
        let response = client
            .get(format!("{}/api/posts/{}", handler.base, post["id"].as_str().unwrap()))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "an acknowledged post is lost: {post}");
        assert_eq!(&response.json::<serde_json::Value>().await.unwrap(), post);
    }
}

/// Why `Blog::open` refused `dir`; panics if it started.
async fn refused(dir: &std::path::Path) -> blog::StoreError {
    match blog::Blog::open(&TestApp::config(dir)).await {
        Ok(_) => panic!("the handler started on {}", dir.display()),
        Err(error) => error,
    }
}

/// [`refused`], as the handler reports it: the error and its causes.
async fn refusal(dir: &std::path::Path) -> String {
    blog::with_causes(&refused(dir).await)
}

/// A change-feed processor's position beyond the last write the store numbered cannot have
/// been reached: the file is damaged or from another copy, and a processor would wait for
/// writes up to it forever. Refused at start, naming the file and what to do.
#[tokio::test]
async fn a_checkpoint_beyond_the_last_write_refuses_to_start_and_says_what_to_do() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let first = app.post_by(&alice, "first").await;
    app.eventually("/api/feed", |feed| feed["items"][0]["id"] == first.as_str()).await;
    let temp = app.stop().await.unwrap();
    let path = temp.path().join("changefeed-PostsChangeFeed.json");
    let kept = std::fs::read(&path).unwrap();
    let saved: serde_json::Value = serde_json::from_slice(&kept).unwrap();
    for ahead in [saved["delivered_through"].as_u64().unwrap() + 20, u64::MAX] {
        std::fs::write(&path, json!({"delivered_through": ahead}).to_string()).unwrap();
        let error = refusal(temp.path()).await;
        assert!(
            error.contains(&path.display().to_string()) && error.contains("beyond the last write"),
            "{error}"
        );
        assert!(error.contains("delete it"), "says what to do: {error}");
    }
    std::fs::write(&path, kept).unwrap();
    let app = TestApp::start_in(temp.path()).await;
    let second = app.post_by(&alice, "second").await;
    app.eventually("/api/feed", |feed| feed["items"][0]["id"] == second.as_str()).await;
    app.stop().await;
}
/// The earlier store kept numbering after a processor's position past its journal (it gave
/// numbers it never journaled), so its import does too; a position with no room left after it
/// is refused, naming the file.
#[tokio::test]
async fn an_earlier_store_s_position_out_of_range_is_refused_at_import() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let first = app.post_by(&alice, "first").await;
    app.eventually("/api/feed", |feed| feed["items"][0]["id"] == first.as_str()).await;
    let temp = app.stop().await.unwrap();
    as_earlier_store(temp.path());
    let path = temp.path().join("changefeed-PostsChangeFeed.json");
    let kept = std::fs::read(&path).unwrap();
    std::fs::write(&path, json!({"delivered_through": u64::MAX}).to_string()).unwrap();
    let error = refusal(temp.path()).await;
    assert!(error.contains(&path.display().to_string()) && error.contains("delete it"), "{error}");
    assert!(temp.path().join("journal.jsonl").exists(), "nothing imported");

    let saved: serde_json::Value = serde_json::from_slice(&kept).unwrap();
    let ahead = saved["delivered_through"].as_u64().unwrap() + 20;
    std::fs::write(&path, json!({"delivered_through": ahead}).to_string()).unwrap();
    let app = TestApp::start_in(temp.path()).await;
    let second = app.post_by(&alice, "second").await;
    app.eventually("/api/feed", |feed| feed["items"][0]["id"] == second.as_str()).await;
    app.stop().await;
}

#[tokio::test]
async fn a_corrupt_checkpoint_refuses_to_start_and_says_what_to_do() {
    let data = tempfile::tempdir().unwrap();
    let path = data.path().join("changefeed-PostsChangeFeed.json");
    std::fs::write(&path, r#"{"delivered_thr"#).unwrap();
    let error = refusal(data.path()).await;
    assert!(
        error.contains(&path.display().to_string()) && error.to_lowercase().contains("delete it"),
        "{error}"
    );
}

/// A directory where a processor's checkpoint file belongs (made by hand, or by a tool) is
/// refused at start, naming it and saying what to do, as every other refusal does.
#[tokio::test]
async fn a_checkpoint_path_that_is_a_directory_refuses_to_start_and_says_what_to_do() {
    let data = tempfile::tempdir().unwrap();
    let path = data.path().join("changefeed-UsersChangeFeed.json");
    std::fs::create_dir(&path).unwrap();
    let error = refusal(data.path()).await;
    assert!(
        error.contains(&path.display().to_string()) && error.contains("is a directory"),
        "{error}"
    );
    assert!(error.contains("move it out of the data directory"), "says what to do: {error}");
}

/// A negative write number in an edited database is refused at start, naming the file, instead
/// of wrapping into a number no processor could ever reach.
#[tokio::test]
async fn a_negative_write_number_in_the_database_refuses_to_start() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    app.post_by(&alice, "first").await;
    let temp = app.stop().await.unwrap();
    let path = temp.path().join("blog.sqlite");
    let database = rusqlite::Connection::open(&path).unwrap();
    database.execute("UPDATE meta SET value = -5 WHERE key = 'last_seq'", []).unwrap();
    drop(database);
    let error = refusal(temp.path()).await;
    assert!(error.contains(&path.display().to_string()), "names the file: {error}");
}

/// Turns a data directory of this store into one of the earlier store (its `snapshot.jsonl`,
/// empty, and a `journal.jsonl` of every live item, one line per write), as a directory written
/// before the move to SQLite looks: each line `<crc32> <json>`, a header first.
fn as_earlier_store(dir: &std::path::Path) {
    let database = rusqlite::Connection::open(dir.join("blog.sqlite")).unwrap();
    let mut statement =
        database.prepare("SELECT container, pk, id, doc, seq FROM items ORDER BY seq").unwrap();
    let rows = statement
        .query_map([], |row| {
            let doc: String = row.get(3)?;
            let record = json!({"c": row.get::<_, String>(0)?, "pk": row.get::<_, String>(1)?, "id": row.get::<_, String>(2)?,
                "doc": serde_json::from_str::<serde_json::Value>(&doc).unwrap(), "seq": row.get::<_, i64>(4)?});
            Ok((row.get::<_, i64>(4)?, record))
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    drop(statement);
    drop(database);
    let line = |json: &serde_json::Value| {
        let json = json.to_string();
        format!("{:08x} {json}\n", crc32fast::hash(json.as_bytes()))
    };
    let header = line(&json!({"generation": 1, "through": 0}));
    let mut journal = header.clone();
    let mut writes: Vec<(i64, Vec<serde_json::Value>)> = Vec::new();
    for (seq, record) in rows {
        match writes.last_mut() {
            Some((last, records)) if *last == seq => records.push(record),
            _ => writes.push((seq, vec![record])),
        }
    }
    writes.iter().for_each(|(_, records)| journal.push_str(&line(&json!(records))));
    std::fs::write(dir.join("snapshot.jsonl"), header).unwrap();
    std::fs::write(dir.join("journal.jsonl"), journal).unwrap();
    for name in ["blog.sqlite", "blog.sqlite-wal", "blog.sqlite-shm"] {
        let _ = std::fs::remove_file(dir.join(name));
    }
}

#[tokio::test]
async fn a_damaged_journal_line_is_refused_with_its_file_and_line() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "first").await;
    app.post(
        &format!("/api/posts/{post}/comments"),
        json!({"userId": alice, "content": "a comment"}),
    )
    .await;
    app.eventually("/api/feed", |feed| feed["items"][0]["commentCount"] == 1).await;
    let temp = app.stop().await.unwrap();
    as_earlier_store(temp.path());
    let journal = temp.path().join("journal.jsonl");
    let original = std::fs::read_to_string(&journal).unwrap();
    let lines: Vec<&str> = original.lines().collect();
    let comment = lines.iter().position(|line| line.contains("a comment")).unwrap();
    assert!(comment + 1 < lines.len(), "the damaged line is not the last");
    let seq_at = lines[comment].find(r#""seq":"#).unwrap() + r#""seq":"#.len();
    let damaged = [
        lines[comment].replacen(r#""doc""#, r#""dox""#, 1),
        lines[comment].replacen("a comment", "a commenu", 1),
        format!("{}9{}", &lines[comment][..seq_at], &lines[comment][seq_at..]),
    ];
    for line in damaged {
        let mut text: Vec<&str> = lines.clone();
        text[comment] = &line;
        std::fs::write(&journal, text.join("\n") + "\n").unwrap();
        let error = refused(temp.path()).await;
        assert!(matches!(error, blog::StoreError::Import(_)), "{error:?}");
        let error = blog::with_causes(&error);
        assert!(
            error.contains(&journal.display().to_string())
                && error.contains(&format!("line {}", comment + 1)),
            "{error}"
        );
    }
    std::fs::write(&journal, &original).unwrap();
    let app = TestApp::start_in(temp.path()).await;
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body["commentCount"], 1);
    app.stop().await;
    // Imported once: the earlier files are kept beside, renamed, and a restart reads the database.
    assert!(!journal.exists());
    assert_eq!(
        std::fs::read_to_string(temp.path().join("journal.jsonl.imported")).unwrap(),
        original
    );
    assert!(temp.path().join("snapshot.jsonl.imported").exists());
    let app = TestApp::start_in(temp.path()).await;
    assert_eq!(
        app.get(&format!("/api/posts/{post}/comments")).await.body["items"][0]["content"],
        "a comment"
    );
    app.post(
        &format!("/api/posts/{post}/comments"),
        json!({"userId": alice, "content": "after the import"}),
    )
    .await;
    app.eventually("/api/feed", |feed| feed["items"][0]["commentCount"] == 2).await;
    app.stop().await;
}

/// A damaged database is refused, naming its file and what to do, not half loaded.
#[tokio::test]
async fn a_damaged_database_is_refused_with_its_file() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    for n in 0..40 {
        app.post_by(&alice, &format!("post {n}")).await;
    }
    let temp = app.stop().await.unwrap();
    let path = temp.path().join("blog.sqlite");
    // Checkpointed into the main file by the last connection's close.
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 3 * 4096, "{} bytes", bytes.len());
    for byte in &mut bytes[2 * 4096..2 * 4096 + 64] {
        *byte = !*byte;
    }
    std::fs::write(&path, &bytes).unwrap();
    let error = refusal(temp.path()).await;
    assert!(error.contains(&path.display().to_string()) && error.contains("damaged"), "{error}");
    assert!(error.contains("backup"), "says what to do: {error}");

    std::fs::write(&path, b"not a database at all, but long enough to look like one's header")
        .unwrap();
    let error = refusal(temp.path()).await;
    assert!(error.contains(&path.display().to_string()) && error.contains("backup"), "{error}");
}
#[tokio::test]
async fn a_line_torn_inside_a_character_is_a_torn_line() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Café crème").await;
    app.eventually("/api/feed", |feed| feed["items"][0]["id"] == post.as_str()).await;
    let temp = app.stop().await.unwrap();
    as_earlier_store(temp.path());
    let journal = temp.path().join("journal.jsonl");
    let mut bytes = std::fs::read(&journal).unwrap();
    // Cut before the last byte of the last non-ASCII character (in the last write that names the
    // post: its copy in `feed`), so the journal ends torn inside that character.
    let inside = bytes.iter().rposition(|byte| *byte >= 0x80).expect("a write names the post");
    bytes.truncate(inside);
    std::fs::write(&journal, bytes).unwrap();

    let app = TestApp::start_in(temp.path()).await;
    assert_eq!(app.get(&format!("/api/users/{alice}")).await.body["username"], "alice");
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body["title"], "Café crème");
    app.stop().await;
}

#[tokio::test]
async fn a_missing_snapshot_or_journal_is_detected() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let temp = app.stop().await.unwrap();
    let app = TestApp::start_in(temp.path()).await;
    app.post_by(&alice, "written after a restart").await;
    app.stop().await;
    as_earlier_store(temp.path());
    for name in ["journal.jsonl", "snapshot.jsonl"] {
        let path = temp.path().join(name);
        let kept = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let error = refusal(temp.path()).await;
        assert!(
            error.contains(&path.display().to_string()) && error.contains("missing"),
            "{error}"
        );
        std::fs::write(&path, kept).unwrap();
    }
    let app = TestApp::start_in(temp.path()).await;
    assert_eq!(app.get(&format!("/api/users/{alice}")).await.body["username"], "alice");
    app.stop().await;
}

/// A post with three comments, settled (its copies show the count), in a stopped store's
/// directory (checkpointed into `blog.sqlite` by the last connection's close): the post's id and
/// the directory.
async fn post_with_three_comments() -> (String, tempfile::TempDir) {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "counted").await;
    for text in ["a comment", "b comment", "c comment"] {
        app.post(&format!("/api/posts/{post}/comments"), json!({"userId": alice, "content": text}))
            .await;
    }
    app.eventually("/api/feed", |feed| feed["items"][0]["commentCount"] == 3).await;
    (post, app.stop().await.unwrap())
}

/// `bytes` with every `from` (found once at least) replaced by `to`, in place. Every place, so
/// that a stale copy in a page SQLite freed cannot be the only one changed.
fn edited(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len(), "an edit in place keeps the file's length");
    let places: Vec<usize> = bytes
        .windows(from.len())
        .enumerate()
        .filter(|(_, window)| *window == from)
        .map(|(at, _)| at)
        .collect();
    assert!(!places.is_empty(), "the bytes are in the file");
    let mut edited = bytes.to_vec();
    for at in places {
        edited[at..at + to.len()].copy_from_slice(to);
    }
    edited
}

/// A byte changed inside a stored item, keeping valid JSON (an edit of the
/// file) or flipping one bit (a failing disk), passes SQLite's `quick_check`; the item's own
/// checksum refuses it at start, naming the file, the item and what to do, and the statement
/// the refusal gives removes exactly that item.
#[tokio::test]
async fn a_changed_byte_inside_a_stored_item_is_refused_naming_the_item() {
    let (post, temp) = post_with_three_comments().await;
    let path = temp.path().join("blog.sqlite");
    let original = std::fs::read(&path).unwrap();
    let edits: [(&[u8], &[u8]); 2] = [
        (br#""commentCount":3"#, br#""commentCount":9"#),
        // 'b' is 0x62, 'c' 0x63: one bit.
        (b"b comment", b"c comment"),
    ];
    for (from, to) in edits {
        std::fs::write(&path, edited(&original, from, to)).unwrap();
        let check: String = rusqlite::Connection::open(&path)
            .unwrap()
            .query_row("PRAGMA quick_check", [], |row| row.get(0))
            .unwrap();
        assert_eq!(check, "ok", "SQLite alone sees nothing wrong");
        let error = refusal(temp.path()).await;
        assert!(
            error.contains(&path.display().to_string())
                && error.contains("does not match its checksum"),
            "{error}"
        );
        assert!(
            error.contains("backup") && error.contains("handler remove "),
            "says what to do: {error}"
        );
    }
    // The last refusal's command, run as an operator pasting it would: the changed comment goes,
    // its post's count follows, and the rest starts and is served.
    let error = refusal(temp.path()).await;
    let start = error.find("`BLOG_DATA_DIR=").expect("a command") + 1;
    let command =
        &error[start..start + error[start..].find("`, which").expect("the command's end")];
    let binaries = std::path::Path::new(env!("CARGO_BIN_EXE_handler")).parent().unwrap();
    let removed = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .env(
            "PATH",
            format!("{}:{}", binaries.display(), std::env::var("PATH").unwrap_or_default()),
        )
        .output()
        .unwrap();
    assert!(removed.status.success(), "{command}: {}", String::from_utf8_lossy(&removed.stderr));
    let app = TestApp::start_in(temp.path()).await;
    let comments = app.get(&format!("/api/posts/{post}/comments")).await.body;
    let mut texts: Vec<&str> = comments["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|comment| comment["content"].as_str().unwrap())
        .collect();
    texts.sort();
    assert_eq!(
        texts,
        ["a comment", "c comment"],
        "the changed comment is gone, the others are served"
    );
    assert_eq!(
        app.get(&format!("/api/posts/{post}")).await.body["commentCount"],
        2,
        "the count follows"
    );
    app.stop().await;
}

/// A row changed through SQLite itself (as with the `sqlite3` shell) keeps a valid file and an
/// old checksum: refused too.
#[tokio::test]
async fn an_item_changed_with_the_sqlite3_shell_is_refused() {
    let (_, temp) = post_with_three_comments().await;
    let path = temp.path().join("blog.sqlite");
    let database = rusqlite::Connection::open(&path).unwrap();
    let changed = database
        .execute(
            "UPDATE items SET doc = replace(doc, '\"a comment\"', '\"a different comment\"') WHERE doc LIKE '%\"a comment\"%'",
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(database);
    let error = refused(temp.path()).await;
    assert!(
        matches!(&error, blog::StoreError::ChecksumMismatch { container: blog::Container::Posts, id, expected, found, .. } if !id.is_empty() && expected != found),
        "{error:?}"
    );
    assert!(error.to_string().contains("does not match its checksum"), "{error}");
}

/// A database written before items carried checksums is upgraded in place, in
/// one transaction, at the first start: everything is served as before, and from then on a
/// changed item is refused. A database of a newer schema is refused, saying so.
#[tokio::test]
async fn a_database_of_an_earlier_handler_is_upgraded_in_place() {
    let (post, temp) = post_with_three_comments().await;
    let path = temp.path().join("blog.sqlite");
    let database = rusqlite::Connection::open(&path).unwrap();
    // As handlers before the checksums (and the tallies) made it.
    database
        .execute_batch(
            "ALTER TABLE items DROP COLUMN sum; DROP TABLE partitions; \
             DELETE FROM meta WHERE key LIKE 'items:%' OR key LIKE 'digest:%'; PRAGMA user_version = 0;",
        )
        .unwrap();
    drop(database);
    let app = TestApp::start_in(temp.path()).await;
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body["commentCount"], 3);
    assert_eq!(
        app.get(&format!("/api/posts/{post}/comments")).await.body["items"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    app.stop().await;
    let database = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = database.query_row("PRAGMA user_version", [], |row| row.get(0)).unwrap();
    assert_eq!(version, 3);
    let unsummed: i64 = database
        .query_row("SELECT count(*) FROM items WHERE sum = 0", [], |row| row.get(0))
        .unwrap();
    assert_eq!(unsummed, 0, "every item has its checksum");
    database.execute("UPDATE items SET doc = replace(doc, 'a comment', 'x comment')", []).unwrap();
    drop(database);
    assert!(refusal(temp.path()).await.contains("does not match its checksum"));

    let database = rusqlite::Connection::open(&path).unwrap();
    database.execute_batch("PRAGMA user_version = 4").unwrap();
    drop(database);
    let error = refusal(temp.path()).await;
    assert!(
        error.contains("newer handler") && error.contains(&path.display().to_string()),
        "{error}"
    );
}

/// A database written before the container `tags` (version 2: no tallies of it) is given the
/// container, empty, and serves as before; its posts can be tagged.
#[tokio::test]
async fn a_database_from_before_tags_is_upgraded_in_place() {
    let (post, temp) = post_with_three_comments().await;
    let path = temp.path().join("blog.sqlite");
    let database = rusqlite::Connection::open(&path).unwrap();
    database
        .execute_batch(
            "DELETE FROM meta WHERE key IN ('items:tags', 'digest:tags'); PRAGMA user_version = 2;",
        )
        .unwrap();
    drop(database);
    let app = TestApp::start_in(temp.path()).await;
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body["commentCount"], 3);
    app.stop().await;
    let database = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = database.query_row("PRAGMA user_version", [], |row| row.get(0)).unwrap();
    assert_eq!(version, 3);
    let tallies: i64 = database
        .query_row(
            "SELECT count(*) FROM meta WHERE key IN ('items:tags', 'digest:tags')",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(tallies, 2);
}

/// An item numbered after the last write the file records cannot have been written by this
/// store: the file was changed outside it. Refused, naming the item.
#[tokio::test]
async fn an_item_written_after_the_last_recorded_write_is_refused() {
    let (_, temp) = post_with_three_comments().await;
    for entry in std::fs::read_dir(temp.path()).unwrap().flatten() {
        if entry.file_name().to_string_lossy().starts_with("changefeed-") {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }
    let database = rusqlite::Connection::open(temp.path().join("blog.sqlite")).unwrap();
    database.execute("UPDATE meta SET value = 1 WHERE key = 'last_seq'", []).unwrap();
    drop(database);
    let error = refusal(temp.path()).await;
    assert!(error.contains("after the last write the file records (1)"), "{error}");
}

/// `kill -9` while pictures are being uploaded. Every picture answered 201 before the
/// kill is served whole after the restart; no name holds a half picture (every stored file's
/// bytes hash to its name); and what the cut-short uploads left is gone at the start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pictures_answered_before_kill_9_are_whole_and_no_half_picture_is_shown() {
    use sha2::{Digest, Sha256};
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let base = handler.base.clone();
    let client = reqwest::Client::new();
    post_as(&client, &base, "painter", "/api/users", json!({"username": "painter"})).await;
    let post = post_as(
        &client,
        &base,
        "painter",
        "/api/posts",
        json!({"userId": "painter", "title": "Many", "content": "x"}),
    )
    .await;
    let post_id = post["id"].as_str().unwrap().to_owned();
    // Pictures of about 1.5 MB each (noise does not compress), sent eight at a time.
    let answered = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut uploads = Vec::new();
    for n in 0..24_u32 {
        let (client, base, post_id, answered) =
            (client.clone(), base.clone(), post_id.clone(), answered.clone());
        uploads.push(tokio::spawn(async move {
            let png = common::noise_png(700, n);
            let sent = client
                .post(format!("{base}/api/posts/{post_id}/pictures"))
                .header("x-dev-user", "painter")
                .header("content-type", "image/png")
                .body(png)
                .send()
                .await;
            if let Ok(response) = sent
                && response.status() == reqwest::StatusCode::CREATED
                && let Ok(body) = response.json::<serde_json::Value>().await
            {
                answered.lock().unwrap().push(body["url"].as_str().unwrap().to_owned());
            }
        }));
    }
    // Killed once some are answered and others are still being written.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while answered.lock().unwrap().len() < 3 {
        assert!(std::time::Instant::now() < deadline, "no picture was answered");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    handler.kill_9();
    for upload in uploads {
        let _ = upload.await;
    }
    let answered = answered.lock().unwrap().clone();
    assert!(answered.len() < 24, "the kill came while uploads were under way");

    let handler = Handler::start(data.path(), &[]);
    for url in &answered {
        let response = client.get(format!("{}{url}", handler.base)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{url} was answered 201 before the kill");
        let bytes = response.bytes().await.unwrap();
        let hash = url.rsplit('/').next().unwrap().split('-').next().unwrap();
        assert_eq!(blog_hex(&Sha256::digest(&bytes)), hash, "{url} is whole");
    }
    let post_dir = data.path().join("pictures").join("painter").join(&post_id);
    for entry in std::fs::read_dir(&post_dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(
            !name.starts_with('.'),
            "{name}: what a cut-short upload left is removed at the start"
        );
        let bytes = std::fs::read(entry.path()).unwrap();
        // (A phones' variant is named by its picture's hash; these 700-pixel pictures have none.
        // Their small copies for the lists are too: each must decode whole, at its size.)
        if let Some(size) =
            ["128x96", "256x192"].into_iter().find(|size| name.ends_with(&format!("-{size}.png")))
        {
            let small =
                image::load_from_memory(&bytes).unwrap_or_else(|error| panic!("{name}: {error}"));
            assert_eq!(format!("{}x{}", small.width(), small.height()), size, "{name} is whole");
            continue;
        }
        assert_eq!(
            blog_hex(&Sha256::digest(&bytes)),
            &name[..64],
            "{name} holds the picture its name says, whole"
        );
    }
}

fn blog_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
