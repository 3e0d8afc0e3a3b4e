//! The embedded store's durable state: one SQLite database in the data directory.
//!
//! Why SQLite (through `rusqlite`, SQLite compiled in by its `bundled` feature) rather than
//! redb: both are crash-safe embedded stores, but SQLite is the most tested storage engine in
//! use (its test suite covers every branch, with injected I/O errors, power cuts and full
//! disks), its file format has been stable since 2004, and a damaged or puzzling file can be
//! opened, checked and recovered with the `sqlite3` shell (`PRAGMA integrity_check`,
//! `.recover`) by anyone; redb is younger, changed its file format at 2.0, and has no such
//! tools. A full disk is SQLite's own error (`SQLITE_FULL`), after which the transaction is
//! rolled back whole and the database goes on.
//!
//! The database holds each live item once (its JSON as written, the number of its last write,
//! when it expires), and the number of the last write committed. A write is one row per item
//! it touched; concurrent writes are group-committed: a writer thread takes every write queued
//! while the previous commit ran and commits them in one transaction, one fsync for all.
//!
//! WAL mode with `synchronous=FULL`: in WAL mode, `NORMAL` syncs the log only at checkpoints,
//! so a committed transaction survives the process dying (`kill -9`) but may be rolled back by
//! a power cut or an OS crash; `FULL` syncs the log at every commit, so an acknowledged write
//! survives those too (<https://www.sqlite.org/pragma.html#pragma_synchronous>, "WAL mode with
//! synchronous=NORMAL ... loses durability"). Group commit is what keeps that affordable.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, params};
use tokio::sync::oneshot;

use super::checksum;
use crate::cosmos::{Container, StoreError};

/// The database's file in the data directory (SQLite keeps `-wal` and `-shm` beside it).
pub(crate) const FILE: &str = "blog.sqlite";
const LOCK: &str = "lock";
/// Marks the file as this store's (`PRAGMA application_id`), so that another SQLite file put
/// in its place is refused instead of written to.
const APPLICATION_ID: i32 = 0x424c_4f47;
/// The most writes one transaction commits.
const MAX_GROUP: usize = 1024;

/// The schema a new database is created with: each item once, with the [`checksum`] of its
/// row (`sum`), and the store's numbers (the last write's, the import's marker).
const SCHEMA: &str = "
    CREATE TABLE items (
        container TEXT NOT NULL,
        pk TEXT NOT NULL,
        id TEXT NOT NULL,
        doc TEXT NOT NULL,
        seq INTEGER NOT NULL,
        expires INTEGER,
        sum INTEGER NOT NULL,
        PRIMARY KEY (container, pk, id)
    ) WITHOUT ROWID;
    CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
";
/// The items that expire, by when: what the sweep of expired request records reads, which are
/// in the database only (`embedded::mod`). An index beside the schema, not part of it: made at
/// any start where it is missing (a file written before it, in a moment), and a handler that
/// does not know it keeps it up to date as SQLite keeps any index.
const EXPIRING: &str = "CREATE INDEX IF NOT EXISTS items_expiring ON items (expires) WHERE expires IS NOT NULL;";

/// The schema's version, in `PRAGMA user_version`: 0 before items carried their checksum
/// (upgraded in place at the first start, see [`upgrade`]), 1 since.
const SCHEMA_VERSION: i64 = 1;

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

/// A live item as loaded at start-up.
#[derive(Clone)]
pub(crate) struct Row {
    pub container: Container,
    pub partition_key: String,
    pub id: String,
    pub doc: String,
    pub seq: u64,
    pub expires: Option<u64>,
}

impl Row {
    /// The row that `row`'s first six columns hold: container, partition key, id, document,
    /// write number, expiry.
    fn read(path: &Path, row: &rusqlite::Row) -> Result<Row, StoreError> {
        let failed = |error| damaged(path, error);
        let name: String = row.get(0).map_err(failed)?;
        let container = Container::ALL
            .into_iter()
            .find(|container| container.name() == name)
            .ok_or_else(|| damaged(path, format!("an item names an unknown container {name:?}")))?;
        Ok(Row {
            container,
            partition_key: row.get(1).map_err(failed)?,
            id: row.get(2).map_err(failed)?,
            doc: row.get(3).map_err(failed)?,
            seq: row.get(4).map_err(failed)?,
            expires: row.get(5).map_err(failed)?,
        })
    }

    /// The [`checksum`] of everything the row holds.
    fn checksum(&self) -> u32 {
        checksum::of_row(self.container, &self.partition_key, &self.id, &self.doc, self.seq, self.expires)
    }

    /// The row, if it matches `sum`, the checksum stored with it; refused, naming it, if not.
    fn verified(self, path: &Path, sum: u32) -> Result<Row, StoreError> {
        if self.checksum() == sum {
            Ok(self)
        } else {
            Err(StoreError::Unusable(checksum::mismatch(path, self.container, &self.partition_key, &self.id)))
        }
    }
}

/// Why a commit was refused.
#[derive(Clone, Debug)]
pub(crate) struct Refused {
    pub disk_full: bool,
    pub message: String,
}

impl Refused {
    fn of(error: &rusqlite::Error) -> Refused {
        let disk_full = matches!(error.sqlite_error_code(), Some(ErrorCode::DiskFull));
        Refused { disk_full, message: error.to_string() }
    }

    pub(crate) fn into_store_error(self) -> StoreError {
        if self.disk_full {
            StoreError::DiskFull
        } else {
            StoreError::Unfinished(format!("the write could not be committed, so it was undone: {}", self.message))
        }
    }
}

type Ack = oneshot::Sender<Result<(), Refused>>;

/// Where the writer thread reports each committed group, in commit order, before it
/// acknowledges the writes (the change index and the expiries are kept there).
pub(crate) type OnCommit = Box<dyn FnMut(&[Write]) + Send>;

/// Faults injected into the writer, for tests: called after a group's statements, before its
/// `COMMIT`.
pub(crate) trait Faults: Send + Sync + 'static {
    fn before_commit(&self) -> rusqlite::Result<()> {
        Ok(())
    }
}

/// No faults: the database as it is.
pub(crate) struct NoFaults;
impl Faults for NoFaults {}

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
    _lock: File,
}

/// Why a connection was not opened.
enum Refusal {
    Sqlite(rusqlite::Error),
    Other(String),
}

impl From<rusqlite::Error> for Refusal {
    fn from(error: rusqlite::Error) -> Refusal {
        Refusal::Sqlite(error)
    }
}

/// Why a database file cannot be used, and what to do.
fn damaged(path: &Path, error: impl std::fmt::Display) -> StoreError {
    StoreError::Unusable(format!(
        "{} is damaged or is not this store's database ({error}). Restore the data directory from a backup; or \
         recover what can be read with `sqlite3 {0} .recover | sqlite3 recovered.sqlite` and put recovered.sqlite \
         in its place (removing {0}-wal and {0}-shm); or move the data directory away to start empty",
        path.display()
    ))
}

/// Checks every page of the database (a damaged file is refused, not half loaded). What a row
/// holds is checked by its checksum, as it is read.
fn check(path: &Path, connection: &Connection) -> Result<(), StoreError> {
    let verdict: String =
        connection.query_row("PRAGMA quick_check(1)", [], |row| row.get(0)).map_err(|error| damaged(path, error))?;
    if verdict != "ok" {
        return Err(damaged(path, format!("PRAGMA quick_check: {verdict}")));
    }
    Ok(())
}

/// Brings a database written by an earlier handler to [`SCHEMA_VERSION`], in place, in one
/// transaction: a crash leaves it as it was, and the next start upgrades it again. Before
/// version 1 items carried no checksum: each is given the checksum of what it holds now (the
/// file passed `quick_check` just before; what a row held before this start cannot be known).
fn upgrade(path: &Path, connection: &mut Connection) -> Result<(), StoreError> {
    let failed = |error| damaged(path, error);
    let version: i64 = connection.query_row("PRAGMA user_version", [], |row| row.get(0)).map_err(failed)?;
    match version {
        SCHEMA_VERSION => return Ok(()),
        0 => {}
        newer => {
            return Err(StoreError::Unusable(format!(
                "{} was written by a newer handler (its schema is version {newer}; this handler knows version \
                 {SCHEMA_VERSION} and older): run that handler's version or a newer one on it, or restore the data \
                 directory from a backup made for this version",
                path.display()
            )));
        }
    }
    let started = std::time::Instant::now();
    let transaction = connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(failed)?;
    transaction.execute_batch("ALTER TABLE items ADD COLUMN sum INTEGER NOT NULL DEFAULT 0").map_err(failed)?;
    // The keys and checksums first, then the updates: a table is not changed under a cursor
    // that walks it.
    let sums = {
        let mut select = transaction.prepare("SELECT container, pk, id, doc, seq, expires FROM items").map_err(failed)?;
        let mut rows = select.query([]).map_err(failed)?;
        let mut sums = Vec::new();
        while let Some(row) = rows.next().map_err(failed)? {
            let row = Row::read(path, row)?;
            let sum = row.checksum();
            sums.push((row.container, row.partition_key, row.id, sum));
        }
        sums
    };
    {
        let mut update =
            transaction.prepare("UPDATE items SET sum = ?4 WHERE container = ?1 AND pk = ?2 AND id = ?3").map_err(failed)?;
        for (container, partition_key, id, sum) in &sums {
            update.execute(params![container.name(), partition_key, id, sum]).map_err(failed)?;
        }
    }
    transaction.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}")).map_err(failed)?;
    transaction.commit().map_err(failed)?;
    tracing::info!(
        path = %path.display(),
        items = sums.len(),
        seconds = started.elapsed().as_secs_f64(),
        "the database was upgraded: each item now carries a checksum of what it holds"
    );
    Ok(())
}

impl Database {
    /// Opens (or creates) the database in `dir`, refusing a damaged one. Takes the directory's
    /// lock: one process per data directory.
    pub(crate) fn open(dir: &Path) -> Result<(Database, Connection), StoreError> {
        let io = |error| StoreError::io(format!("cannot open the data directory {}", dir.display()), error);
        std::fs::create_dir_all(dir).map_err(io)?;
        let lock = OpenOptions::new().create(true).truncate(false).write(true).open(dir.join(LOCK)).map_err(io)?;
        lock.try_lock().map_err(|error| match error {
            std::fs::TryLockError::WouldBlock => {
                StoreError::Unusable(format!("{} is in use by another handler process", dir.display()))
            }
            std::fs::TryLockError::Error(error) => {
                StoreError::io(format!("cannot lock the data directory {}", dir.display()), error)
            }
        })?;
        let path = dir.join(FILE);
        let mut connection = Self::connect(&path).map_err(|error| damaged(&path, error))?;
        check(&path, &connection)?;
        upgrade(&path, &mut connection)?;
        connection.execute_batch(EXPIRING).map_err(|error| damaged(&path, error))?;
        let reader = Self::connect(&path).map_err(|error| damaged(&path, error))?;
        let last_seq: u64 = connection
            // Read as u64: rusqlite refuses a negative value (IntegralValueOutOfRange), which an
            // edited database could hold, instead of wrapping it into a huge write number.
            .query_row("SELECT value FROM meta WHERE key = 'last_seq'", [], |row| row.get::<_, u64>(0))
            .optional()
            .map_err(|error| damaged(&path, error))?
            .unwrap_or(0);
        let database = Database {
            path,
            messages: None,
            writer: None,
            last_seq: Mutex::new(last_seq),
            settled: Arc::new(AtomicU64::new(last_seq)),
            reader: Mutex::new(reader),
            _lock: lock,
        };
        Ok((database, connection))
    }

    fn connect(path: &Path) -> Result<Connection, String> {
        Self::try_connect(path).map_err(|error| match error {
            Refusal::Sqlite(error) => error.to_string(),
            Refusal::Other(why) => why,
        })
    }

    fn try_connect(path: &Path) -> Result<Connection, Refusal> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection = Connection::open_with_flags(path, flags)?;
        let mode: String = connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Refusal::Other(format!("the database refused WAL mode (it is in {mode} mode)")));
        }
        connection.execute_batch("PRAGMA synchronous = FULL")?;
        let application: i32 = connection.query_row("PRAGMA application_id", [], |row| row.get(0))?;
        let tables: i64 = connection.query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))?;
        if application != APPLICATION_ID && (application != 0 || tables != 0) {
            return Err(Refusal::Other(format!("its application id is {application:#x}, not this store's")));
        }
        if tables == 0 {
            // A new file: its id, schema and version in one transaction, so that a crash leaves
            // a file that is new again, never one half made.
            connection.execute_batch(&format!(
                "BEGIN IMMEDIATE; PRAGMA application_id = {APPLICATION_ID}; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
            ))?;
        }
        Ok(connection)
    }

    /// At most `limit` live items after `after` (container, partition key, id) in key order:
    /// start-up reads the items a page at a time, while the pages before load.
    pub(crate) fn page(&self, connection: &Connection, after: Option<&Row>, limit: usize) -> Result<Vec<Row>, StoreError> {
        let failed = |error: rusqlite::Error| damaged(&self.path, error);
        let mut statement = connection
            .prepare_cached(
                "SELECT container, pk, id, doc, seq, expires, sum FROM items WHERE (container, pk, id) > (?1, ?2, ?3)
                 ORDER BY container, pk, id LIMIT ?4",
            )
            .map_err(failed)?;
        let last_seq = self.last_seq();
        let start = after.map_or(("", "", ""), |row| (row.container.name(), row.partition_key.as_str(), row.id.as_str()));
        let mut rows = statement.query(params![start.0, start.1, start.2, limit as i64]).map_err(failed)?;
        let mut page = Vec::with_capacity(limit);
        while let Some(row) = rows.next().map_err(failed)? {
            let sum = row.get(6).map_err(failed)?;
            let row = Row::read(&self.path, row)?.verified(&self.path, sum)?;
            if row.seq > last_seq {
                return Err(damaged(
                    &self.path,
                    format!(
                        "the item {:?} of {} was written by write {}, after the last write the file records ({last_seq})",
                        row.id,
                        row.container.name(),
                        row.seq
                    ),
                ));
            }
            page.push(row);
        }
        Ok(page)
    }

    /// Starts the writer thread on `connection`: from here on, writes can be queued.
    pub(crate) fn start(
        &mut self,
        connection: Connection,
        faults: Arc<dyn Faults>,
        on_commit: OnCommit,
        written: Arc<tokio::sync::Notify>,
    ) -> Result<(), StoreError> {
        let (messages, receiver) = mpsc::channel();
        let writer = Writer { connection, faults, on_commit, settled: self.settled.clone(), written };
        let writer = std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || writer.run(receiver))
            .map_err(|error| StoreError::io("cannot start the database's writer", error))?;
        self.messages = Some(messages);
        self.writer = Some(writer);
        Ok(())
    }

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

    /// Numbers a write, queues it, and returns its number with what resolves once it is
    /// committed (or refused, with why).
    pub(crate) fn queue(
        &self,
        container: Container,
        partition_key: String,
        records: Vec<Record>,
    ) -> (u64, impl Future<Output = Result<(), Refused>> + use<>) {
        let (ack, done) = oneshot::channel();
        let mut last_seq = self.last_seq.lock().expect("never poisoned");
        *last_seq += 1;
        let seq = *last_seq;
        let stopped = || Refused { disk_full: false, message: "the database's writer has stopped".into() };
        let queued = match &self.messages {
            Some(messages) => messages.send((Write { seq, container, partition_key, records }, ack)).map_err(|_| stopped()),
            None => Err(stopped()),
        };
        drop(last_seq);
        (seq, async move {
            queued?;
            done.await.unwrap_or_else(|_| Err(stopped()))
        })
    }

    /// The item as the database holds it (`None`: absent or deleted): what a refused write is
    /// undone to. Checked against its checksum, as at start-up.
    pub(crate) fn durable_item(&self, container: Container, partition_key: &str, id: &str) -> Result<Option<String>, StoreError> {
        Ok(self.durable_row(container, partition_key, id)?.map(|row| row.doc))
    }

    /// [`Database::durable_item`] with its write number and expiry.
    pub(crate) fn durable_row(&self, container: Container, partition_key: &str, id: &str) -> Result<Option<Row>, StoreError> {
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
        let row = Row { container, partition_key: partition_key.to_owned(), id: id.to_owned(), doc, seq, expires };
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
        let failed = |error: rusqlite::Error| StoreError::database(format!("cannot read {}", self.path.display()), error);
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
            if let Some(container) = Container::ALL.into_iter().find(|container| container.name() == name) {
                expired.push((container, partition_key, id));
            }
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

/// The writer thread's state.
struct Writer {
    connection: Connection,
    faults: Arc<dyn Faults>,
    on_commit: OnCommit,
    settled: Arc<AtomicU64>,
    /// Woken after each group is acknowledged.
    written: Arc<tokio::sync::Notify>,
}

impl Writer {
    fn run(mut self, receiver: mpsc::Receiver<(Write, Ack)>) {
        while let Ok(first) = receiver.recv() {
            // Everything that queued up while the last commit ran shares the next one.
            let mut group = vec![first];
            while group.len() < MAX_GROUP
                && let Ok(next) = receiver.try_recv()
            {
                group.push(next);
            }
            let (writes, acks): (Vec<Write>, Vec<Ack>) = group.into_iter().unzip();
            match self.commit(&writes) {
                Ok(()) => {
                    (self.on_commit)(&writes);
                    let last = writes.last().expect("not empty").seq;
                    self.settled.fetch_max(last, Ordering::SeqCst);
                    acks.into_iter().for_each(|ack| drop(ack.send(Ok(()))));
                    self.written.notify_waiters();
                }
                Err(error) => {
                    tracing::error!(%error, writes = writes.len(), "the database refused a commit; its writes are undone");
                    let refused = Refused::of(&error);
                    acks.into_iter().for_each(|ack| drop(ack.send(Err(refused.clone()))));
                }
            }
        }
    }

    /// Commits the group in one transaction; on failure nothing of it is left.
    fn commit(&mut self, writes: &[Write]) -> rusqlite::Result<()> {
        let transaction = self.connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        {
            let mut upsert = transaction.prepare_cached(
                "INSERT INTO items (container, pk, id, doc, seq, expires, sum) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (container, pk, id) DO UPDATE SET doc = excluded.doc, seq = excluded.seq,
                 expires = excluded.expires, sum = excluded.sum",
            )?;
            let mut delete = transaction.prepare_cached("DELETE FROM items WHERE container = ?1 AND pk = ?2 AND id = ?3")?;
            for write in writes {
                for record in &write.records {
                    let key = (write.container, write.partition_key.as_str(), record.id.as_str());
                    match &record.doc {
                        Some(doc) => {
                            let sum = checksum::of_row(key.0, key.1, key.2, doc, write.seq, record.expires);
                            upsert.execute(params![key.0.name(), key.1, key.2, doc, write.seq, record.expires, sum])?
                        }
                        None => delete.execute(params![key.0.name(), key.1, key.2])?,
                    };
                }
            }
            let last = writes.last().map_or(0, |write| write.seq) as i64;
            transaction
                .prepare_cached("INSERT INTO meta (key, value) VALUES ('last_seq', ?1) ON CONFLICT (key) DO UPDATE SET value = excluded.value")?
                .execute([last])?;
        }
        self.faults.before_commit()?;
        // A transaction dropped unfinished rolls back.
        transaction.commit()
    }
}

/// Puts `rows` into the database in one transaction, numbering after `last_seq`, and records
/// `marker` in its meta table (the one-time import of an older data directory).
pub(crate) fn import(connection: &mut Connection, rows: &[Row], last_seq: u64, marker: &str) -> rusqlite::Result<()> {
    let transaction = connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    {
        let mut insert = transaction.prepare(
            "INSERT OR REPLACE INTO items (container, pk, id, doc, seq, expires, sum) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?;
        for row in rows {
            insert.execute(params![
                row.container.name(),
                row.partition_key,
                row.id,
                row.doc,
                row.seq,
                row.expires,
                row.checksum()
            ])?;
        }
        let mut meta = transaction.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")?;
        meta.execute(params!["last_seq", last_seq])?;
        meta.execute(params![marker, 1])?;
    }
    transaction.commit()
}

/// Whether `marker` was recorded by [`import`].
pub(crate) fn has_marker(connection: &Connection, marker: &str) -> rusqlite::Result<bool> {
    connection.query_row("SELECT count(*) FROM meta WHERE key = ?1", [marker], |row| row.get::<_, i64>(0)).map(|count| count > 0)
}

/// Whether the database holds any item or write.
pub(crate) fn is_empty(connection: &Connection) -> rusqlite::Result<bool> {
    let items: i64 = connection.query_row("SELECT count(*) FROM (SELECT 1 FROM items LIMIT 1)", [], |row| row.get(0))?;
    let writes: i64 = connection.query_row("SELECT count(*) FROM meta WHERE key = 'last_seq'", [], |row| row.get(0))?;
    Ok(items == 0 && writes == 0)
}
