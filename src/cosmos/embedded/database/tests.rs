//! The database's own tests: the tallies kept and checked, each refusal of a row or a file as
//! what it is, and what the tallies cost.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use rusqlite::{Connection, params};

use super::super::checksum;
use super::format::SCHEMA_VERSION;
use super::writer::{NoFaults, Writer};
use super::*;
use crate::cosmos::OpenError;

/// The start's check: every row read, then compared.
fn check_tallies(database: &Database, connection: &Connection) -> Result<(), OpenError> {
    let mut after: Option<Row> = None;
    loop {
        let page = database.page(connection, after.as_ref(), 2048)?;
        let Some(last) = page.last() else { break };
        after = Some(Row { doc: String::new(), ..last.clone() });
    }
    database.check_loaded(connection)
}

/// A writer on a new database in `dir`, reporting to nobody.
fn writer(dir: &Path) -> (Database, Writer) {
    let (database, connection) = Database::open(dir, Opening::Serve).unwrap();
    let writer = Writer {
        connection,
        faults: Arc::new(NoFaults),
        on_commit: Box::new(|_| {}),
        settled: Arc::new(AtomicU64::new(0)),
        written: Arc::new(tokio::sync::Notify::new()),
    };
    (database, writer)
}

/// A comment in `post`'s partition, with the post's count moved: what C3 commits.
fn comment(seq: u64, post: usize, comment: usize) -> Write {
    let doc = |kind: &str| {
        format!(r#"{{"type":"{kind}","postId":"p{post}","content":"{}"}}"#, "x".repeat(600))
    };
    Write {
        seq,
        container: Container::Posts,
        partition_key: format!("p{post}"),
        records: vec![
            Record { id: format!("c{comment}"), doc: Some(doc("comment")), expires: None },
            Record { id: format!("p{post}"), doc: Some(doc("post")), expires: None },
        ],
    }
}

/// The commit as it was before the tallies, to measure what they add.
fn commit_untallied(connection: &mut Connection, writes: &[Write]) -> rusqlite::Result<()> {
    let transaction =
        connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    {
        let mut upsert = transaction.prepare_cached(
            "INSERT INTO items (container, pk, id, doc, seq, expires, sum) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (container, pk, id) DO UPDATE SET doc = excluded.doc, seq = excluded.seq,
             expires = excluded.expires, sum = excluded.sum",
        )?;
        for write in writes {
            for record in &write.records {
                let doc = record.doc.as_deref().expect("upserts only");
                let sum = checksum::of_row(
                    write.container,
                    &write.partition_key,
                    &record.id,
                    doc,
                    write.seq,
                    None,
                );
                upsert.execute(params![
                    write.container.name(),
                    write.partition_key,
                    record.id,
                    doc,
                    write.seq,
                    None::<u64>,
                    sum
                ])?;
            }
        }
        let last = writes.last().map_or(0, |write| write.seq) as i64;
        transaction
            .prepare_cached(
                "INSERT INTO meta (key, value) VALUES ('last_seq', ?1) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            )?
            .execute([last])?;
    }
    transaction.commit()
}

#[test]
fn the_tallies_follow_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let (database, mut writer) = writer(dir.path());
    // The writes below are committed without being queued: the numbers they take.
    *database.last_seq.lock().unwrap() = 100;
    let mut seq = 0;
    let mut next = || {
        seq += 1;
        seq
    };
    writer.commit(&[comment(next(), 1, 1), comment(next(), 1, 2), comment(next(), 2, 3)]).unwrap();
    let delete = |seq, id: &str| Write {
        seq,
        container: Container::Posts,
        partition_key: "p1".into(),
        records: vec![Record { id: id.into(), doc: None, expires: None }],
    };
    writer.commit(&[delete(next(), "c1"), delete(next(), "c404")]).unwrap();
    writer.commit(&[comment(next(), 2, 3)]).unwrap();
    check_tallies(&database, &writer.connection).unwrap();
    let recorded: i64 = writer
        .connection
        .query_row("SELECT items FROM partitions WHERE pk = 'p1'", [], |row| row.get(0))
        .unwrap();
    assert_eq!(recorded, 2, "p1 holds its post and c2");
    writer.commit(&[delete(next(), "c2"), delete(next(), "p1")]).unwrap();
    let partitions: i64 = writer
        .connection
        .query_row("SELECT count(*) FROM partitions", [], |row| row.get(0))
        .unwrap();
    assert_eq!(partitions, 1, "a partition left empty has no tally");
    check_tallies(&database, &writer.connection).unwrap();
    writer.connection.execute("DELETE FROM items WHERE id = 'c3'", []).unwrap();
    let Err(OpenError::Incomplete(incomplete)) = check_tallies(&database, &writer.connection)
    else {
        panic!("a deleted row is seen")
    };
    assert_eq!((incomplete.discrepancies[0].recorded, incomplete.discrepancies[0].found), (2, 1));
}

/// Each refusal of a row is its own variant, with what it found: a write after the last one
/// recorded, changed bytes (both checksums), a container the store does not have.
#[test]
fn a_damaged_row_is_refused_as_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let (database, mut writer) = writer(dir.path());
    writer.commit(&[comment(1, 1, 1)]).unwrap();
    let first_page =
        |database: &Database, writer: &Writer| database.page(&writer.connection, None, 10).err();
    *database.last_seq.lock().unwrap() = 0;
    let Some(StoreError::Damaged {
        path,
        damage: Damage::WrittenAfterLast { container, id, seq, last_seq },
    }) = first_page(&database, &writer)
    else {
        panic!("a row after the last write is refused")
    };
    assert_eq!(
        (path, container, id.as_str(), seq, last_seq),
        (database.path().to_owned(), Container::Posts, "c1", 1, 0)
    );
    *database.last_seq.lock().unwrap() = 1;
    writer
        .connection
        .execute("UPDATE items SET doc = replace(doc, 'xxx', 'xxy') WHERE id = 'c1'", [])
        .unwrap();
    let Some(StoreError::ChecksumMismatch {
        container, partition_key, id, expected, found, ..
    }) = first_page(&database, &writer)
    else {
        panic!("a changed row is refused")
    };
    assert_eq!((container, partition_key.as_str(), id.as_str()), (Container::Posts, "p1", "c1"));
    assert_ne!(expected, found);
    writer.connection.execute("UPDATE items SET container = 'drafts' WHERE id = 'c1'", []).unwrap();
    let refused = first_page(&database, &writer);
    assert!(
        matches!(&refused, Some(StoreError::Damaged { damage: Damage::UnknownContainer { name }, .. }) if name == "drafts"),
        "{refused:?}"
    );
}

/// A row or a record of the wrong type is refused as what it is, naming it, with the advice of
/// a repair (which removes the row, or makes the record anew). So is a row numbered after the
/// last write, which a repair numbers past.
#[test]
fn a_row_or_record_of_the_wrong_type_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (database, mut writer) = writer(dir.path());
    writer.commit(&[comment(1, 1, 1)]).unwrap();
    *database.last_seq.lock().unwrap() = 1;
    writer.connection.execute("UPDATE items SET seq = 'x' WHERE id = 'c1'", []).unwrap();
    let refused = database.page(&writer.connection, None, 10).err().unwrap();
    let Some(StoreError::Damaged { damage: damage @ Damage::UnreadableRow { key, .. }, .. }) =
        Some(&refused)
    else {
        panic!("a row of the wrong type is refused as such: {refused:?}")
    };
    assert_eq!(key, r#"("posts", "p1", "c1")"#);
    assert!(damage.is_in_the_rows() && !damage.is_salvageable());
    assert!(refused.to_string().contains("handler repair"), "{refused}");
    let removed = remove_unreadable(database.path(), &writer.connection).unwrap();
    assert_eq!(removed, vec![r#"("posts", "p1", "c1")"#.to_owned()]);
    assert_eq!(database.page(&writer.connection, None, 10).unwrap().len(), 1, "the post is left");

    writer
        .connection
        .execute("UPDATE meta SET value = 'many' WHERE key = 'items:tags'", [])
        .unwrap();
    drop((database, writer));
    let refused = Database::open(dir.path(), Opening::Serve).err().unwrap();
    assert!(
        matches!(&refused, OpenError::Store(StoreError::Damaged { damage: Damage::UnreadableRecord { record, .. }, .. }) if record == "meta's items:tags"),
        "{refused:?}"
    );
    assert!(refused.to_string().contains("handler repair"), "{refused}");
    let (database, connection) = Database::open(dir.path(), Opening::Repair).unwrap();
    assert_eq!(database.last_seq(), 1);
    drop((database, connection));

    // (The tally as it was: the repair of the rows, not the opening, makes the tallies anew.)
    Connection::open(dir.path().join(FILE))
        .unwrap()
        .execute_batch("UPDATE meta SET value = 0 WHERE key = 'items:tags'; UPDATE meta SET value = -5 WHERE key = 'last_seq'")
        .unwrap();
    let refused = Database::open(dir.path(), Opening::Serve).err().unwrap();
    assert!(
        matches!(&refused, OpenError::Store(StoreError::Damaged { damage: Damage::UnreadableRecord { record, .. }, .. }) if record == "meta's last_seq"),
        "{refused:?}"
    );
    let (database, _) = Database::open(dir.path(), Opening::Repair).unwrap();
    assert_eq!(database.last_seq(), 1, "a repair numbers the writes after the last a row holds");
}

/// A file that carries this store's marks but holds no table (what `.recover` without
/// `sqlite_dbpage` makes) is refused, not taken for a new, empty blog.
#[test]
fn a_file_with_the_stores_marks_but_no_table_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let connection = Connection::open(dir.path().join(FILE)).unwrap();
    connection
        .execute_batch("PRAGMA application_id = 1112297287; PRAGMA user_version = 3;")
        .unwrap();
    drop(connection);
    let refused = Database::open(dir.path(), Opening::Repair).err().unwrap();
    assert!(
        matches!(
            &refused,
            OpenError::Store(StoreError::Damaged {
                damage: Damage::Emptied { version: 3, .. },
                ..
            })
        ),
        "{refused:?}"
    );
    assert!(!refused.to_string().contains("handler"), "no command puts it right: {refused}");
}

/// A damaged page: refused as salvageable; the salvage keeps the file as it was, copies every
/// row it can read that matches its checksum into a new file marked unfinished, and leaves the
/// rows of the damaged page behind. A file of which nothing can be read is refused.
#[test]
fn a_damaged_file_is_salvaged_keeping_what_can_be_read() {
    let dir = tempfile::tempdir().unwrap();
    let (database, mut writer) = writer(dir.path());
    for post in 1..=40 {
        writer.commit(&[comment(post as u64, post, post)]).unwrap();
    }
    drop((database, writer));
    let path = dir.path().join(FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    let page_size = u16::from_be_bytes([bytes[16], bytes[17]]) as usize;
    // A leaf of an index b-tree (type 10), which a table WITHOUT ROWID is, holding comments.
    let leaf = (1..bytes.len() / page_size)
        .find(|page| {
            bytes[page * page_size] == 10
                && bytes[page * page_size..(page + 1) * page_size]
                    .windows(8)
                    .any(|at| at == b"xxxxxxxx")
        })
        .expect("a leaf of items");
    bytes[leaf * page_size..leaf * page_size + 12].fill(0xA5);
    std::fs::write(&path, &bytes).unwrap();
    let refused = Database::open(dir.path(), Opening::Repair).err().unwrap();
    let OpenError::Store(StoreError::Damaged { damage, .. }) = &refused else {
        panic!("{refused:?}")
    };
    assert!(damage.is_salvageable(), "{damage:?}");
    assert!(refused.to_string().contains("handler repair"), "{refused}");

    let salvaged = salvage(dir.path()).unwrap();
    assert_eq!(std::fs::read(&salvaged.kept).unwrap(), bytes, "the damaged file is kept as it was");
    assert!(salvaged.copied > 0 && salvaged.copied < 80, "{salvaged:?}");
    let (database, connection) = Database::open(dir.path(), Opening::Repair).unwrap();
    let copied: i64 =
        connection.query_row("SELECT count(*) FROM items", [], |row| row.get(0)).unwrap();
    assert_eq!(copied as usize, salvaged.copied);
    assert_eq!(database.last_seq(), 40);
    assert!(
        format::meta(&connection, REPAIR_PENDING).unwrap().is_some(),
        "the repair is left to finish"
    );
    drop((database, connection));

    std::fs::write(&path, vec![0xA5; 8192]).unwrap();
    let files = std::fs::read_dir(dir.path()).unwrap().count();
    let nothing = salvage(dir.path()).err().unwrap();
    assert!(
        matches!(nothing, StoreError::Damaged { damage: Damage::NothingReadable, .. }),
        "{nothing:?}"
    );
    assert!(
        nothing.to_string().contains("backup") && !nothing.to_string().contains("handler"),
        "{nothing}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        files,
        "no copy is left of a file with nothing to salvage"
    );
}

/// Each refusal of the file at opening is its own variant, with what it found. The refusals
/// are: the lock another process holds, a newer schema, an unfinished repair, an unfinished
/// import (which an import opens), another application's file, a file that is no database.
#[test]
fn a_database_that_cannot_be_opened_is_refused_as_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE);
    let (database, writer) = writer(dir.path());
    let in_use = Database::open(dir.path(), Opening::Serve).err();
    assert!(
        matches!(&in_use, Some(OpenError::InUse { dir: held }) if held == dir.path()),
        "{in_use:?}"
    );
    drop((database, writer));
    let reopened = |sql: &str| {
        let connection = Connection::open(&path).unwrap();
        connection.execute_batch(sql).unwrap();
        drop(connection);
        Database::open(dir.path(), Opening::Serve).err()
    };
    let unfinished = reopened("INSERT INTO meta (key, value) VALUES ('repair_pending', 1)");
    assert!(
        matches!(&unfinished, Some(OpenError::RepairUnfinished { path: file, dir: held }) if *file == path && held == dir.path()),
        "{unfinished:?}"
    );
    let importing = reopened(
        "DELETE FROM meta WHERE key = 'repair_pending';
         INSERT INTO meta (key, value) VALUES ('import_pending', '{\"sha256\": \"ab\", \"file\": \"/x/blog.jsonl\"}')",
    );
    assert!(
        matches!(&importing, Some(OpenError::ImportUnfinished { dir: held, sha256, file: Some(file) })
            if held == dir.path() && sha256 == "ab" && file == "/x/blog.jsonl"),
        "{importing:?}"
    );
    let report = importing.unwrap().to_string();
    assert!(report.contains("handler import '/x/blog.jsonl'`"), "{report}");
    let (database, connection) = Database::open(dir.path(), Opening::Import).unwrap();
    drop((database, connection));
    let newer = reopened("DELETE FROM meta WHERE key = 'import_pending'; PRAGMA user_version = 7");
    assert!(
        matches!(newer, Some(OpenError::NewerSchema { version: 7, known: SCHEMA_VERSION, .. })),
        "{newer:?}"
    );
    let other = reopened("PRAGMA user_version = 2; PRAGMA application_id = 5");
    assert!(
        matches!(
            other,
            Some(OpenError::Store(StoreError::Damaged {
                damage: Damage::OtherApplication { application: 5 },
                ..
            }))
        ),
        "{other:?}"
    );
    for leftover in ["sqlite-wal", "sqlite-shm"] {
        std::fs::remove_file(path.with_extension(leftover)).ok();
    }
    std::fs::write(&path, vec![b'x'; 8192]).unwrap();
    let garbage = Database::open(dir.path(), Opening::Serve).err();
    let Some(OpenError::Store(StoreError::Damaged { path: named, damage: Damage::Sqlite(_) })) =
        &garbage
    else {
        panic!("a file that is no database is refused: {garbage:?}")
    };
    assert_eq!(*named, path);
    let report = crate::logging::with_causes(garbage.as_ref().unwrap());
    assert!(report.contains("is damaged") && report.contains("file is not a database"), "{report}");
}

/// What the tallies add to a commit, against the commit before them, alternating so that the
/// machine's load falls on both alike; and what the start's check costs against reading the
/// rows as the start does anyway. A measurement, not a test:
/// `cargo test --lib tallies_cost -- --ignored --nocapture` (add `--release` for figures
/// of the shipped build).
#[test]
#[ignore = "a measurement"]
fn the_tallies_cost() {
    let dir = tempfile::tempdir().unwrap();
    let (database, mut writer) = writer(dir.path());
    let (posts, rows) = (5_000, 100_000);
    let mut seq = 0;
    let mut comments = 0;
    while comments < rows / 2 {
        let group: Vec<Write> = (0..1024)
            .map(|_| {
                seq += 1;
                comments += 1;
                comment(seq, comments % posts, comments)
            })
            .collect();
        writer.commit(&group).unwrap();
    }
    measure_commits(&mut writer, &mut seq, &mut comments, posts);
    measure_start(&database, &mut writer, seq, rows, posts);
}

/// [`the_tallies_cost`]'s commits: groups of C3 writes, alternately with the tallies and without.
fn measure_commits(writer: &mut Writer, seq: &mut u64, comments: &mut usize, posts: usize) {
    for (group_size, rounds) in [(1, 400), (16, 200), (256, 40)] {
        let (mut with, mut without) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            let group: Vec<Write> = (0..group_size)
                .map(|_| {
                    *seq += 1;
                    *comments += 1;
                    comment(*seq, *comments % posts, *comments)
                })
                .collect();
            let started = std::time::Instant::now();
            if round % 2 == 0 {
                writer.commit(&group).unwrap();
                with.push(started.elapsed());
            } else {
                commit_untallied(&mut writer.connection, &group).unwrap();
                without.push(started.elapsed());
            }
        }
        with.sort();
        without.sort();
        eprintln!(
            "a group of {group_size} C3 writes ({} records): median commit {:?} with the tallies, {:?} without",
            group_size * 2,
            with[with.len() / 2],
            without[without.len() / 2]
        );
    }
}

/// [`the_tallies_cost`]'s start: the check, against reading every row as the load does.
fn measure_start(
    database: &Database,
    writer: &mut Writer,
    mut seq: u64,
    rows: usize,
    posts: usize,
) {
    writer
        .connection
        .execute_batch("BEGIN; DELETE FROM items; DELETE FROM partitions; COMMIT;")
        .unwrap();
    let transaction = writer.connection.transaction().unwrap();
    retally(database.path(), &transaction).unwrap();
    transaction.commit().unwrap();
    let mut filled = 0;
    while filled < rows * 2 {
        let group: Vec<Write> = (0..1024)
            .map(|index| {
                seq += 1;
                filled += 2;
                comment(seq, filled % posts, 1_000_000 + filled + index)
            })
            .collect();
        writer.commit(&group).unwrap();
    }
    let count: i64 =
        writer.connection.query_row("SELECT count(*) FROM items", [], |row| row.get(0)).unwrap();
    *database.last_seq.lock().unwrap() = seq;
    let started = std::time::Instant::now();
    let mut after: Option<Row> = None;
    loop {
        let page = database.page(&writer.connection, after.as_ref(), 2048).unwrap();
        let Some(last) = page.last() else { break };
        after = Some(Row { doc: String::new(), ..last.clone() });
    }
    let read = started.elapsed();
    let started = std::time::Instant::now();
    database.check_loaded(&writer.connection).unwrap();
    let compared = started.elapsed();
    let started = std::time::Instant::now();
    let hashed = (0..count).fold(0u64, |sum, index| {
        sum.wrapping_add(checksum::contribution(
            Container::Posts,
            "3c95c2ba-5e85-48c8-8358-a985301da8ed",
            &format!("{index}"),
            7,
        ))
    });
    let hashing = started.elapsed();
    eprintln!(
        "the start at {count} rows: reading every row as the load does, tallies counted, {read:?} (their \
         hashing alone {hashing:?}, {hashed:x}); comparing them with the recorded ones {compared:?}"
    );
}
