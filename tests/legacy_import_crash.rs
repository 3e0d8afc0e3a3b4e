//! The import of the earlier store's files (`snapshot.jsonl`, `journal.jsonl`) stopped at each
//! point a crash can stop it: before its database commit, after the commit, between its two
//! renames, after both. The next start finishes it, with every imported item there once, and a
//! start after that works too. Each crash's data directory is built as the crash leaves it: the
//! earlier store's files as that store wrote them, beside the database as the import left it.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

use std::path::Path;

use blog::test_support::embedded_config;
use blog::testing::cosmos::{Container, Store};
use serde_json::{Value, json};

const SNAPSHOT: &str = "snapshot.jsonl";
const JOURNAL: &str = "journal.jsonl";
/// The number of the earlier store's last write.
const LAST_WRITE: u64 = 6;

/// Where the import stopped.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Crash {
    /// The database was created, empty; nothing was committed.
    BeforeCommit,
    /// The items and the record of the import are committed; no file is renamed.
    AfterCommit,
    /// The snapshot is renamed, the journal is not.
    BetweenRenames,
    /// Both are renamed (the directory not yet synced).
    AfterRenames,
}

/// A line of the earlier store's files: `<crc32> <json>`.
fn line(json: &Value) -> String {
    let json = json.to_string();
    format!("{:08x} {json}\n", crc32fast::hash(json.as_bytes()))
}

/// A write of one item (`None`: its deletion), as the earlier store recorded it.
fn write(container: Container, id: &str, doc: Option<Value>, seq: u64) -> Value {
    json!([{"c": container.name(), "pk": id, "id": id, "doc": doc, "seq": seq}])
}

/// The earlier store's snapshot at its second compaction: two posts and a user.
fn snapshot() -> String {
    let mut text = line(&json!({"generation": 2, "through": 3}));
    text += &line(&write(
        Container::Posts,
        "a",
        Some(json!({"id": "a", "postId": "a", "title": "first"})),
        1,
    ));
    text += &line(&write(
        Container::Posts,
        "b",
        Some(json!({"id": "b", "postId": "b", "title": "deleted"})),
        2,
    ));
    text += &line(&write(
        Container::Users,
        "u",
        Some(json!({"id": "u", "userId": "u", "username": "alice"})),
        3,
    ));
    text
}

/// The writes since: a post edited, one deleted, one created.
fn journal() -> String {
    let mut text = line(&json!({"generation": 2, "through": 3}));
    text += &line(&write(
        Container::Posts,
        "a",
        Some(json!({"id": "a", "postId": "a", "title": "edited"})),
        4,
    ));
    text += &line(&write(Container::Posts, "b", None, 5));
    text += &line(&write(
        Container::Posts,
        "c",
        Some(json!({"id": "c", "postId": "c", "title": "new"})),
        LAST_WRITE,
    ));
    text
}

/// The items the import must leave, each once, as last written: (container, id, document).
fn imported() -> Vec<(String, String, Value)> {
    vec![
        ("posts".into(), "a".into(), json!({"id": "a", "postId": "a", "title": "edited"})),
        ("posts".into(), "c".into(), json!({"id": "c", "postId": "c", "title": "new"})),
        ("users".into(), "u".into(), json!({"id": "u", "userId": "u", "username": "alice"})),
    ]
}

async fn start(dir: &Path) -> Store {
    Store::connect(&embedded_config(dir))
        .await
        .unwrap_or_else(|error| panic!("the store did not start: {error}"))
}

/// The data directory a crash at `crash` leaves.
async fn crashed_at(crash: Crash) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write_files = || {
        std::fs::write(dir.path().join(SNAPSHOT), snapshot()).unwrap();
        std::fs::write(dir.path().join(JOURNAL), journal()).unwrap();
    };
    if crash == Crash::BeforeCommit {
        // The start had opened (created) the database, and written nothing to it.
        drop(start(dir.path()).await);
        write_files();
        return dir;
    }
    // A whole import, then the renames the crash kept from happening undone.
    write_files();
    drop(start(dir.path()).await);
    let undone: &[&str] = match crash {
        Crash::AfterCommit => &[SNAPSHOT, JOURNAL],
        Crash::BetweenRenames => &[JOURNAL],
        _ => &[],
    };
    for name in undone {
        std::fs::rename(dir.path().join(format!("{name}.imported")), dir.path().join(name))
            .unwrap();
    }
    dir
}

/// Every item of the database, in key order (the database itself: an item there twice, or one
/// too many, shows).
fn database_items(dir: &Path) -> Vec<(String, String, Value)> {
    let database = rusqlite::Connection::open(dir.join("blog.sqlite")).unwrap();
    let mut statement = database
        .prepare("SELECT container, id, doc FROM items ORDER BY container, pk, id")
        .unwrap();
    statement
        .query_map([], |row| {
            let doc: String = row.get(2)?;
            Ok((row.get(0)?, row.get(1)?, serde_json::from_str(&doc).unwrap()))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// What a finished import shows: its items served, numbering going on after the earlier
/// store's last write, and the earlier files kept, renamed, as they were.
async fn assert_imported(dir: &Path, store: &Store) {
    for (container, id, document) in imported() {
        let container = Container::ALL.into_iter().find(|known| known.name() == container).unwrap();
        let read = store
            .read::<Value>(container, &id, &id)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{id} is missing"));
        for (field, value) in document.as_object().unwrap() {
            assert_eq!(&read[field], value, "{id}.{field}");
        }
    }
    assert!(
        store.read::<Value>(Container::Posts, "b", "b").await.unwrap().is_none(),
        "a deletion is imported"
    );
    assert_eq!(store.embedded().unwrap().write_position(), LAST_WRITE);
    for (name, text) in [(SNAPSHOT, snapshot()), (JOURNAL, journal())] {
        assert!(!dir.join(name).exists(), "{name} is renamed away");
        assert_eq!(
            std::fs::read_to_string(dir.join(format!("{name}.imported"))).unwrap(),
            text,
            "{name} is kept"
        );
    }
}

/// Starts the store on the directory a crash at `crash` left: the start finishes the import,
/// and a start after it goes on from there.
async fn restart_after(crash: Crash) {
    let dir = crashed_at(crash).await;
    let store = start(dir.path()).await;
    assert_imported(dir.path(), &store).await;
    drop(store);
    assert_eq!(database_items(dir.path()), imported(), "every item once, after a crash {crash:?}");

    let store = start(dir.path()).await;
    assert_imported(dir.path(), &store).await;
    let post = json!({"id": "d", "postId": "d", "title": "after the import"});
    store.create(Container::Posts, "d", &post).await.unwrap();
    assert_eq!(
        store.embedded().unwrap().write_position(),
        LAST_WRITE + 1,
        "numbered after the imported writes"
    );
    drop(store);
    let mut items = imported();
    items.push(("posts".into(), "d".into(), post));
    items.sort_by(|left, right| (&left.0, &left.1).cmp(&(&right.0, &right.1)));
    assert_eq!(database_items(dir.path()), items);
}

#[tokio::test]
async fn an_import_stopped_before_its_commit_is_done_by_the_next_start() {
    restart_after(Crash::BeforeCommit).await;
}

#[tokio::test]
async fn an_import_stopped_after_its_commit_is_finished_by_the_next_start() {
    restart_after(Crash::AfterCommit).await;
}

#[tokio::test]
async fn an_import_stopped_between_its_renames_is_finished_by_the_next_start() {
    restart_after(Crash::BetweenRenames).await;
}

#[tokio::test]
async fn an_import_stopped_after_its_renames_needs_nothing_more() {
    restart_after(Crash::AfterRenames).await;
}
