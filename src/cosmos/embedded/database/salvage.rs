//! What `handler repair` does with a database file SQLite finds damaged (`PRAGMA quick_check`
//! fails, or a read meets a damaged page). The file is kept as it is beside the new one. Every
//! item that can still be read and matches its checksum is copied into a new file. That file
//! takes its place and is then repaired as any file whose rows went missing.
//!
//! SQLite's own tool for this, the `sqlite3` shell's `.recover`, needs the `sqlite_dbpage`
//! table. The shell Debian 12 ships (3.40.1) is built without it: there it writes the pragmas,
//! no table, and "SQL logic error", so the file it makes holds nothing. The rows are read here
//! in key order until a damaged page stops the read, then from the other end back to it, as the
//! shell's `.dump` does. What is lost is what lay on the damaged pages, which the repair's
//! tallies, made from the rows copied, then no longer expect.
//!
//! A crash anywhere leaves the damaged file in place (the next `handler repair` salvages it
//! again), or the new file in its place, marked unfinished, which the next `handler repair`
//! finishes. The damaged file's log is checkpointed into it first, so that removing the log
//! before the new file lands loses nothing the file does not hold.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use super::format::{Damage, REPAIR_PENDING, Row, damaged};
use super::tally::retally;
use super::{Database, FILE};
use crate::cosmos::{StoreError, checkpoint};

/// What a salvage did.
#[derive(Clone, Debug)]
pub struct Salvaged {
    /// The damaged file, kept as it was (its log beside it, `-wal`, if it had one).
    pub kept: PathBuf,
    /// The items copied into the new file.
    pub copied: usize,
    /// The rows read but left behind: not readable as an item, or not matching their checksum.
    pub dropped: usize,
}

/// An item's key: container, partition key, id.
type Key = (String, String, String);

/// The rows read, by key, each with its checksum.
type Rows = BTreeMap<Key, (Row, u32)>;

/// Copies what can be read of the damaged database in `dir` into a new file that takes its
/// place, keeping the damaged one beside it; see the module's documentation. The directory's
/// lock is the caller's to hold.
pub(crate) fn salvage(dir: &Path) -> Result<Salvaged, StoreError> {
    let path = dir.join(FILE);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or(0);
    // A name no earlier salvage took: an earlier damaged file is never replaced.
    let kept = (0..)
        .map(|n| {
            dir.join(if n == 0 {
                format!("{FILE}.damaged-{now}")
            } else {
                format!("{FILE}.damaged-{now}-{n}")
            })
        })
        .find(|kept| !kept.exists() && !beside(kept, "-wal").exists())
        .expect("a free name");
    let (wal, shm) = (beside(&path, "-wal"), beside(&path, "-shm"));
    copy_synced(&path, &kept)?;
    if wal.exists() {
        copy_synced(&wal, &beside(&kept, "-wal"))?;
    }
    let (rows, dropped, last_seq) = read_what_can_be_read(&path)?;
    if rows.is_empty() {
        let _ = std::fs::remove_file(beside(&kept, "-wal"));
        let _ = std::fs::remove_file(&kept);
        return Err(damaged(&path, Damage::NothingReadable));
    }
    let fresh = dir.join(format!("{FILE}.salvaged"));
    for leftover in [fresh.clone(), beside(&fresh, "-wal"), beside(&fresh, "-shm")] {
        remove_if_there(&leftover)?;
    }
    let furthest =
        checkpoint::all(dir)?.into_iter().map(|(_, position)| position).max().unwrap_or(0);
    let last_seq =
        rows.values().map(|row| row.0.seq).chain([last_seq, furthest]).max().unwrap_or(0);
    write_new(&fresh, &rows, last_seq)?;
    // The damaged file's log and shared memory go before the new file lands: SQLite would
    // otherwise replay the old log's frames onto it. What the log held is checkpointed into the
    // damaged file (and kept in the copy).
    remove_if_there(&wal)?;
    remove_if_there(&shm)?;
    std::fs::rename(&fresh, &path).map_err(|error| {
        StoreError::io(format!("cannot put {} in place", fresh.display()), error)
    })?;
    std::fs::File::open(dir).and_then(|dir| dir.sync_all()).map_err(|error| {
        StoreError::io(format!("cannot sync the data directory {}", dir.display()), error)
    })?;
    tracing::warn!(kept = %kept.display(), copied = rows.len(), dropped, "the damaged database was salvaged into a new file");
    Ok(Salvaged { kept, copied: rows.len(), dropped })
}

/// Every row of the damaged file at `path` that reads as an item and matches its checksum, by
/// key; how many rows were read but left behind; and the last write number the file records,
/// where it reads (else 0).
fn read_what_can_be_read(path: &Path) -> Result<(Rows, usize, u64), StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let connection =
        Connection::open_with_flags(path, flags).map_err(|error| damaged(path, error))?;
    // Its log into the file, where that can be done; where not, what the log holds is read
    // anyway, and kept in the copy.
    let _ = connection.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
    // A damaged page may point anywhere, even back: no more rows are read than the file could
    // hold (a row takes more than 16 bytes).
    let most = std::fs::metadata(path).map(|metadata| metadata.len() / 16).unwrap_or(0);
    let mut rows = BTreeMap::new();
    let mut dropped = BTreeSet::new();
    for order in ["ASC", "DESC"] {
        read_in_order(&connection, path, order, most, &mut rows, &mut dropped);
    }
    let dropped = dropped.len();
    let last_seq = connection
        .query_row("SELECT value FROM meta WHERE key = 'last_seq'", [], |row| row.get::<_, u64>(0))
        .optional()
        .ok()
        .flatten()
        .unwrap_or(0);
    Ok((rows, dropped, last_seq))
}

/// Reads the rows in key order (`ASC` or `DESC`) into `rows` until the read fails, or meets a
/// row already read (the other direction got there).
fn read_in_order(
    connection: &Connection,
    path: &Path,
    order: &str,
    most: u64,
    rows: &mut Rows,
    dropped: &mut BTreeSet<String>,
) {
    let sql = format!(
        "SELECT container, pk, id, doc, seq, expires, sum FROM items ORDER BY container {order}, pk {order}, id {order}"
    );
    let Ok(mut select) = connection.prepare(&sql) else { return };
    let Ok(mut read) = select.query([]) else { return };
    let mut count = 0;
    while let Ok(Some(row)) = read.next() {
        count += 1;
        if count > most {
            return;
        }
        let item = Row::read(path, row).and_then(|item| {
            let sum: u32 = row.get(6).map_err(|error| damaged(path, error))?;
            Ok((item.verified(path, sum)?, sum))
        });
        let Ok((item, sum)) = item else {
            dropped.insert(super::format::key_of(row));
            continue;
        };
        let key = (item.container.name().to_owned(), item.partition_key.clone(), item.id.clone());
        if rows.contains_key(&key) {
            return;
        }
        rows.insert(key, (item, sum));
    }
}

/// Writes `rows` into a new database file at `fresh`, with `last_seq`, their tallies, and the
/// mark of an unfinished repair, in one transaction; closed when it returns, so that its log is
/// in the file.
fn write_new(fresh: &Path, rows: &Rows, last_seq: u64) -> Result<(), StoreError> {
    let failed = |error| damaged(fresh, error);
    let mut connection = Database::connect(fresh).map_err(|error| damaged(fresh, error))?;
    let transaction = connection
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(failed)?;
    {
        let mut insert = transaction
            .prepare("INSERT INTO items (container, pk, id, doc, seq, expires, sum) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
            .map_err(failed)?;
        for (row, sum) in rows.values() {
            insert
                .execute(params![
                    row.container.name(),
                    row.partition_key,
                    row.id,
                    row.doc,
                    row.seq,
                    row.expires,
                    sum
                ])
                .map_err(failed)?;
        }
        let mut meta = transaction
            .prepare("INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
            .map_err(failed)?;
        meta.execute(params!["last_seq", last_seq]).map_err(failed)?;
        meta.execute(params![REPAIR_PENDING, 1]).map_err(failed)?;
    }
    retally(fresh, &transaction)?;
    transaction.commit().map_err(failed)?;
    connection.close().map_err(|(_, error)| failed(error))
}

/// `path` with `suffix` after its name (`blog.sqlite-wal`).
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn copy_synced(from: &Path, to: &Path) -> Result<(), StoreError> {
    let failed = |error| {
        StoreError::io(format!("cannot keep {} as {}", from.display(), to.display()), error)
    };
    std::fs::copy(from, to).map_err(failed)?;
    std::fs::File::open(to).and_then(|file| file.sync_all()).map_err(failed)
}

fn remove_if_there(path: &Path) -> Result<(), StoreError> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(StoreError::io(format!("cannot remove {}", path.display()), error))
        }
        _ => Ok(()),
    }
}
