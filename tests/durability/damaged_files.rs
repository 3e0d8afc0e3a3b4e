//! A damaged, torn, missing or edited store file is refused, naming the file, the line or the
//! item.

use super::*;

#[tokio::test]
async fn a_damaged_journal_line_is_refused_naming_where_it_is() {
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
        assert!(matches!(error, blog::OpenError::Import(_)), "{error:?}");
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
        matches!(&error, blog::OpenError::Store(blog::StoreError::ChecksumMismatch { container: blog::Container::Posts, id, expected, found, .. }) if !id.is_empty() && expected != found),
        "{error:?}"
    );
    assert!(error.to_string().contains("does not match its checksum"), "{error}");
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
