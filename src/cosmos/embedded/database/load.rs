//! Opening the database and reading it at start. That is the directory's lock, the file's
//! checks and upgrade, and the rows a page at a time (each verified, and counted into the
//! tallies the start then compares). It is also the one-time import of an older data
//! directory's rows.

use std::fs::OpenOptions;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};

use super::format::{
    Damage, EXPIRING, IMPORT_PENDING, REPAIR_PENDING, Row, check, damaged, meta, unreadable_record,
    unreadable_row,
};
use super::incomplete::{check_meta, compare_tallies};
use super::tally::{Found, retally};
use super::upgrade::upgrade;
use super::{Database, FILE, LOCK, Opening};
use crate::cosmos::{OpenError, StoreError};

impl Database {
    /// Opens (or creates) the database in `dir`, refusing a damaged one. Takes the directory's
    /// lock: one process per data directory.
    pub(crate) fn open(dir: &Path, opening: Opening) -> Result<(Database, Connection), OpenError> {
        let lock = lock(dir)?;
        let path = dir.join(FILE);
        let mut connection = Self::connect(&path).map_err(|error| damaged(&path, error))?;
        check(&path, &connection)?;
        upgrade(&path, &mut connection)?;
        connection.execute_batch(EXPIRING).map_err(|error| damaged(&path, error))?;
        if matches!(opening, Opening::Serve | Opening::Import) {
            if meta(&connection, REPAIR_PENDING)
                .map_err(unreadable_record(&path, "meta's repair_pending"))?
                .is_some()
            {
                return Err(OpenError::RepairUnfinished { path, dir: dir.to_owned() });
            }
            check_meta(&path, &connection)?;
        }
        if opening == Opening::Serve {
            let mark: Option<String> = connection
                .query_row("SELECT value FROM meta WHERE key = ?1", [IMPORT_PENDING], |row| {
                    row.get(0)
                })
                .optional()
                .map_err(unreadable_record(&path, "meta's import_pending"))?;
            if let Some(mark) = mark {
                let mark: crate::cosmos::error::ImportMark =
                    serde_json::from_str(&mark).map_err(|error| {
                        let error = rusqlite::Error::FromSqlConversionFailure(
                            0,
                            rusqlite::types::Type::Text,
                            Box::new(error),
                        );
                        StoreError::database(
                            format!("cannot read the mark of an import in {}", path.display()),
                            error,
                        )
                    })?;
                return Err(OpenError::ImportUnfinished {
                    dir: dir.to_owned(),
                    sha256: mark.sha256,
                    file: mark.file,
                });
            }
        }
        if opening == Opening::Repair {
            // The write number deleted with the rest of `meta`, changed to what is not one, or
            // lowered below a row's. It is set to the last write any row holds, so that the
            // rows are not refused as written after it. A change-feed position beyond it is
            // still refused, with what to do. Rows whose number is not one are the repair's to
            // remove.
            connection
                .execute(
                    "INSERT INTO meta (key, value)
                     SELECT 'last_seq', coalesce(max(CASE WHEN typeof(seq) = 'integer' AND seq >= 0 THEN seq END), 0)
                     FROM items WHERE true
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value
                     WHERE typeof(meta.value) != 'integer' OR meta.value < excluded.value",
                    [],
                )
                .map_err(|error| damaged(&path, error))?;
        }
        let reader = Self::connect(&path).map_err(|error| damaged(&path, error))?;
        let last_seq: u64 = connection
            // Read as u64: rusqlite refuses a negative value (IntegralValueOutOfRange), which an
            // edited database could hold, instead of wrapping it into a huge write number.
            .query_row("SELECT value FROM meta WHERE key = 'last_seq'", [], |row| {
                row.get::<_, u64>(0)
            })
            .optional()
            .map_err(unreadable_record(&path, "meta's last_seq"))?
            .unwrap_or(0);
        let database = Database {
            path,
            messages: None,
            writer: None,
            last_seq: Mutex::new(last_seq),
            settled: Arc::new(AtomicU64::new(last_seq)),
            reader: Mutex::new(reader),
            opening,
            found: Mutex::new(Found::default()),
            _lock: lock,
        };
        Ok((database, connection))
    }

    /// Refuses, naming it, a row written after the last write the file records. That is what a
    /// `last_seq` lowered outside the handler leaves, and [`Database::page`] refuses it as it
    /// reads. The start asks about it first where a change-feed position is beyond it (the
    /// position is then not what is wrong).
    pub(crate) fn check_written_after_last(
        &self,
        connection: &Connection,
    ) -> Result<(), OpenError> {
        let last_seq = self.last_seq();
        let found: Option<(String, String, u64)> = connection
            .query_row(
                "SELECT CAST(container AS TEXT), CAST(id AS TEXT), seq FROM items
                 WHERE typeof(seq) = 'integer' AND seq > ?1 LIMIT 1",
                [last_seq as i64],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .optional()
            .map_err(|error| damaged(&self.path, error))?;
        match found {
            Some((name, id, seq)) => {
                let container = super::format::container_named(&self.path, &name)?;
                Err(damaged(&self.path, Damage::WrittenAfterLast { container, id, seq, last_seq })
                    .into())
            }
            None => Ok(()),
        }
    }

    /// At most `limit` live items after `after` (container, partition key, id) in key order:
    /// start-up reads the items a page at a time, while the pages before load.
    pub(crate) fn page(
        &self,
        connection: &Connection,
        after: Option<&Row>,
        limit: usize,
    ) -> Result<Vec<Row>, StoreError> {
        let failed = |error: rusqlite::Error| damaged(&self.path, error);
        let mut statement = connection
            .prepare_cached(
                "SELECT container, pk, id, doc, seq, expires, sum FROM items WHERE (container, pk, id) > (?1, ?2, ?3)
                 ORDER BY container, pk, id LIMIT ?4",
            )
            .map_err(failed)?;
        let last_seq = self.last_seq();
        let start = after.map_or(("", "", ""), |row| {
            (row.container.name(), row.partition_key.as_str(), row.id.as_str())
        });
        let mut rows =
            statement.query(params![start.0, start.1, start.2, limit as i64]).map_err(failed)?;
        let mut page = Vec::with_capacity(limit);
        while let Some(row) = rows.next().map_err(failed)? {
            let sum = row.get(6).map_err(|source| unreadable_row(&self.path, row, source))?;
            let row = Row::read(&self.path, row)?.verified(&self.path, sum)?;
            self.found.lock().expect("never poisoned").add(&row, sum);
            if row.seq > last_seq {
                let damage = Damage::WrittenAfterLast {
                    container: row.container,
                    id: row.id,
                    seq: row.seq,
                    last_seq,
                };
                return Err(damaged(&self.path, damage));
            }
            page.push(row);
        }
        Ok(page)
    }

    /// Compares the tallies of every row the start read ([`Database::page`], which must have read
    /// them all, as the load does) with those recorded: refused, naming what is missing, unless
    /// they agree. Not for a repair, whose rows it makes whole itself.
    pub(crate) fn check_loaded(&self, connection: &Connection) -> Result<(), OpenError> {
        if self.opening == Opening::Repair {
            return Ok(());
        }
        let found = {
            let mut found = self.found.lock().expect("never poisoned");
            found.flush();
            std::mem::take(&mut found.tallies)
        };
        compare_tallies(&self.path, connection, &found)
    }
}

/// Takes the lock of the data directory `dir` (made if missing): one process per data directory.
pub(crate) fn lock(dir: &Path) -> Result<std::fs::File, OpenError> {
    let io =
        |error| StoreError::io(format!("cannot open the data directory {}", dir.display()), error);
    std::fs::create_dir_all(dir).map_err(io)?;
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(LOCK))
        .map_err(io)?;
    lock.try_lock().map_err(|error| match error {
        std::fs::TryLockError::WouldBlock => OpenError::InUse { dir: dir.to_owned() },
        std::fs::TryLockError::Error(error) => {
            StoreError::io(format!("cannot lock the data directory {}", dir.display()), error)
                .into()
        }
    })?;
    Ok(lock)
}

/// Puts `rows` into the database in one transaction, numbering after `last_seq`, and records
/// `marker` in its meta table (the one-time import of an older data directory).
pub(crate) fn import(
    path: &Path,
    connection: &mut Connection,
    rows: &[Row],
    last_seq: u64,
    marker: &str,
) -> Result<(), StoreError> {
    let failed = |error| damaged(path, error);
    let transaction = connection
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(failed)?;
    {
        let mut insert = transaction
            .prepare(
                "INSERT OR REPLACE INTO items (container, pk, id, doc, seq, expires, sum) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .map_err(failed)?;
        for row in rows {
            insert
                .execute(params![
                    row.container.name(),
                    row.partition_key,
                    row.id,
                    row.doc,
                    row.seq,
                    row.expires,
                    row.checksum()
                ])
                .map_err(failed)?;
        }
        let mut meta = transaction
            .prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")
            .map_err(failed)?;
        meta.execute(params!["last_seq", last_seq]).map_err(failed)?;
        meta.execute(params![marker, 1]).map_err(failed)?;
    }
    retally(path, &transaction)?;
    transaction.commit().map_err(failed)
}

/// Whether `marker` was recorded by [`import`].
pub(crate) fn has_marker(connection: &Connection, marker: &str) -> rusqlite::Result<bool> {
    connection
        .query_row("SELECT count(*) FROM meta WHERE key = ?1", [marker], |row| row.get::<_, i64>(0))
        .map(|count| count > 0)
}

/// Whether the database holds any item or write.
pub(crate) fn is_empty(connection: &Connection) -> rusqlite::Result<bool> {
    let items: i64 =
        connection.query_row("SELECT count(*) FROM (SELECT 1 FROM items LIMIT 1)", [], |row| {
            row.get(0)
        })?;
    Ok(items == 0 && meta(connection, "last_seq")?.unwrap_or(0) == 0)
}
