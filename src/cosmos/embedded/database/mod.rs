//! The embedded store's durable state: one SQLite database in the data directory.
//!
//! Why SQLite (through `rusqlite`, SQLite compiled in by its `bundled` feature) rather than
//! redb? Both are crash-safe embedded stores. But SQLite is the most tested storage engine in
//! use: its test suite covers every branch, with injected I/O errors, power cuts and full
//! disks. Its file format has been stable since 2004. Anyone can open and check a damaged or
//! puzzling file with the `sqlite3` shell (`PRAGMA integrity_check`), and copy out what can
//! still be read of a damaged one (`handler repair`, [`salvage`]). The younger redb changed its
//! file format at 2.0, and has no such tools. A full disk is SQLite's own error
//! (`SQLITE_FULL`), after which the transaction is rolled back whole and the database goes on.
//!
//! The database holds each live item once (its JSON as written, the number of its last write,
//! when it expires), and the number of the last write committed. A write is one row per item
//! it touched; concurrent writes are group-committed: a writer thread takes every write queued
//! while the previous commit ran and commits them in one transaction, one fsync for all.
//!
//! WAL mode with `synchronous=FULL`. In WAL mode, `NORMAL` syncs the log only at checkpoints.
//! So a committed transaction survives the process dying (`kill -9`) but may be rolled back by
//! a power cut or an OS crash. The `FULL` setting syncs the log at every commit, so an
//! acknowledged write survives those too
//! (<https://www.sqlite.org/pragma.html#pragma_synchronous>, "WAL mode with synchronous=NORMAL
//! ... loses durability"). Group commit is what keeps that affordable.
//!
//! Its parts, each a room of its own. The module [`format`] is the file as it lies on disk (the
//! schema, its versions and their upgrade, a row and the checks it must pass, [`Damage`]). The
//! module [`writer`] is the thread that numbers, groups and commits the writes. The module
//! [`tally`] keeps the count and digest of every partition in the commits. The module [`load`]
//! opens the file and reads it at start. The module [`incomplete`] is the refusal of a file
//! whose rows do not match their tallies. The module [`salvage`] copies what can be read of a
//! damaged file into a new one. This module holds the handle on all of it, and its point reads.

mod format;
mod incomplete;
mod load;
mod salvage;
mod tally;
#[cfg(test)]
mod tests;
mod upgrade;
mod writer;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use rusqlite::{Connection, OptionalExtension, params};

use crate::cosmos::{Container, StoreError};
use format::container_named;
pub(crate) use format::{Damage, IMPORT_PENDING, REPAIR_PENDING, Row, remove_unreadable};
pub(crate) use incomplete::Incomplete;
pub(crate) use load::{has_marker, import, is_empty, lock};
pub(crate) use salvage::{Salvaged, salvage};
use tally::Found;
pub(crate) use tally::retally;
use writer::Ack;
pub(crate) use writer::{Faults, NoFaults, Refused};

/// The database's file in the data directory (SQLite keeps `-wal` and `-shm` beside it).
pub(crate) const FILE: &str = "blog.sqlite";
const LOCK: &str = "lock";

/// Whether the store is opened to serve, to import into, or to be repaired. To serve, every
/// check runs. To import into, every check runs, but an unfinished import is the import's to
/// finish. To be repaired (`handler repair`, `handler remove`), the rows and tallies are the
/// repair's to put right, and an unfinished repair is finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Opening {
    Serve,
    Import,
    Repair,
}

/// The state one write left for one item: its id, its JSON (`None`: deleted), and when it
/// expires (Unix seconds).
pub(crate) struct Record {
    pub id: String,
    pub doc: Option<String>,
    pub expires: Option<u64>,
}

/// One write: its number, its partition, and the records of the items it touched.
pub(crate) struct Write {
    pub seq: u64,
    pub container: Container,
    pub partition_key: String,
    pub records: Vec<Record>,
}

/// The open database: a writer thread that group-commits, and a connection for reads.
pub(crate) struct Database {
    path: PathBuf,
    /// `None` once dropped, which ends the writer thread.
    messages: Option<mpsc::Sender<(Write, Ack)>>,
    /// Joined on drop, so the data directory is let go only once nothing writes to it.
    writer: Option<std::thread::JoinHandle<()>>,
    /// The last number given to a write; held while a write is queued, so that the queue's
    /// order is the numbers' order.
    last_seq: Mutex<u64>,
    /// Every write numbered up to it is committed, or was refused.
    settled: Arc<AtomicU64>,
    reader: Mutex<Connection>,
    /// What it was opened for: a repair's rows are the repair's to make whole.
    opening: Opening,
    /// The tallies of the rows read so far by [`Database::page`], for [`Database::check_loaded`].
    found: Mutex<Found>,
    _lock: File,
}

impl Database {
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The number of the last write committed (or queued).
    pub(crate) fn last_seq(&self) -> u64 {
        *self.last_seq.lock().expect("never poisoned")
    }

    /// Every write numbered up to it is committed, or was refused.
    pub(crate) fn settled(&self) -> u64 {
        self.settled.load(Ordering::SeqCst)
    }

    /// Removes the mark of an unfinished repair ([`REPAIR_PENDING`]), on the reader's connection:
    /// the writer has nothing queued when a repair ends.
    pub(crate) fn finish_repair(&self) -> rusqlite::Result<()> {
        let reader = self.reader.lock().expect("never poisoned");
        reader.busy_timeout(std::time::Duration::from_secs(10))?;
        reader.execute("DELETE FROM meta WHERE key = ?1", [REPAIR_PENDING]).map(drop)
    }

    /// The mark of an import that writes ([`IMPORT_PENDING`]), if there is one.
    pub(crate) fn import_mark(&self) -> rusqlite::Result<Option<String>> {
        let reader = self.reader.lock().expect("never poisoned");
        reader
            .query_row("SELECT value FROM meta WHERE key = ?1", [IMPORT_PENDING], |row| row.get(0))
            .optional()
    }

    /// Records (`Some`) or removes the mark of an import that writes, on the reader's
    /// connection, committed before it returns: the import writes nothing meanwhile.
    pub(crate) fn set_import_mark(&self, mark: Option<&str>) -> rusqlite::Result<()> {
        let reader = self.reader.lock().expect("never poisoned");
        reader.busy_timeout(std::time::Duration::from_secs(10))?;
        match mark {
            Some(mark) => reader
                .execute(
                    "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [IMPORT_PENDING, mark],
                )
                .map(drop),
            None => reader.execute("DELETE FROM meta WHERE key = ?1", [IMPORT_PENDING]).map(drop),
        }
    }

    /// The item as the database holds it (`None`: absent or deleted): what a refused write is
    /// undone to. Checked against its checksum, as at start-up.
    pub(crate) fn durable_item(
        &self,
        container: Container,
        partition_key: &str,
        id: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(self.durable_row(container, partition_key, id)?.map(|row| row.doc))
    }

    /// [`Database::durable_item`] with its write number and expiry.
    pub(crate) fn durable_row(
        &self,
        container: Container,
        partition_key: &str,
        id: &str,
    ) -> Result<Option<Row>, StoreError> {
        let read = self
            .reader
            .lock()
            .expect("never poisoned")
            .query_row(
                "SELECT doc, seq, expires, sum FROM items WHERE container = ?1 AND pk = ?2 AND id = ?3",
                params![container.name(), partition_key, id],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
            )
            .optional()
            .map_err(|error| StoreError::database(format!("cannot read {}", self.path.display()), error))?;
        let Some((doc, seq, expires, sum)) = read else { return Ok(None) };
        let row = Row {
            container,
            partition_key: partition_key.to_owned(),
            id: id.to_owned(),
            doc,
            seq,
            expires,
        };
        Ok(Some(row.verified(&self.path, sum)?))
    }

    /// At most `limit` items whose id starts with `prefix` and that expired by `now` (Unix
    /// seconds): their container, partition key and id. Found through [`EXPIRING`], so the
    /// items that never expire are not read.
    pub(crate) fn expired_with_prefix(
        &self,
        prefix: &str,
        now: u64,
        limit: usize,
    ) -> Result<Vec<(Container, String, String)>, StoreError> {
        let failed = |error: rusqlite::Error| {
            StoreError::database(format!("cannot read {}", self.path.display()), error)
        };
        let reader = self.reader.lock().expect("never poisoned");
        let mut statement = reader
            .prepare_cached(
                "SELECT container, pk, id FROM items WHERE expires IS NOT NULL AND expires <= ?1 AND substr(id, 1, ?2) = ?3
                 LIMIT ?4",
            )
            .map_err(failed)?;
        let rows = statement
            .query_map(params![now as i64, prefix.len() as i64, prefix, limit as i64], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?, row.get::<_, String>(2)?))
            })
            .map_err(failed)?;
        let mut expired = Vec::new();
        for row in rows {
            let (name, partition_key, id) = row.map_err(failed)?;
            expired.push((container_named(&self.path, &name)?, partition_key, id));
        }
        Ok(expired)
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        self.messages = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}
