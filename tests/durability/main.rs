//! The embedded store keeps every acknowledged write across a restart, also after `kill -9`;
//! refuses damaged files, naming them; and imports a directory of the earlier store once.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;

use common::TestApp;
use common::binary::Handler;
use serde_json::json;

mod checkpoints;
mod damaged_files;
mod restarts;
mod upgrades;

/// Why `Blog::open` refused `dir`; panics if it started.
async fn refused(dir: &std::path::Path) -> blog::OpenError {
    match blog::Blog::open(&TestApp::config(dir)).await {
        Ok(_) => panic!("the handler started on {}", dir.display()),
        Err(error) => error,
    }
}

/// [`refused`], as the handler reports it: the error and its causes.
async fn refusal(dir: &std::path::Path) -> String {
    blog::with_causes(&refused(dir).await)
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
