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

use std::collections::{BTreeMap, HashMap};
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

/// The tallies' table, kept by every commit ([`Tally`]): one row per partition that holds items.
const PARTITIONS: &str = "
    CREATE TABLE IF NOT EXISTS partitions (
        container TEXT NOT NULL,
        pk TEXT NOT NULL,
        items INTEGER NOT NULL,
        digest INTEGER NOT NULL,
        PRIMARY KEY (container, pk)
    ) WITHOUT ROWID;
";
/// The schema's version, in `PRAGMA user_version`: 0 before items carried their checksum, 1
/// before partitions and containers carried their [`Tally`], 2 before the container `tags`, 3
/// since (upgraded in place at the first start, see [`upgrade`]).
const SCHEMA_VERSION: i64 = 3;
/// The meta key of an unfinished repair ([`super::repair`]): recorded with the repair of the
/// rows, removed once the names and copies are made again; a start refuses while it is there.
pub(crate) const REPAIR_PENDING: &str = "repair_pending";

/// What a partition, or a container, holds by the tallies: how many rows, and the wrapping sum
/// of their [`checksum::contribution`]s. Kept in the commit that writes the rows (`partitions`
/// and the `meta` keys [`items_key`], [`digest_key`]), so a crash never leaves them apart, and
/// compared with the rows at every start: a row deleted, or one put in, outside the handler is
/// what a per-row checksum cannot see. A sum rather than a hash of the sorted rows so that a
/// commit adjusts it by the rows it touched, never reading the rest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub items: i64,
    pub digest: u64,
}

impl Tally {
    fn add(&mut self, contribution: u64) {
        self.items += 1;
        self.digest = self.digest.wrapping_add(contribution);
    }

    fn remove(&mut self, contribution: u64) {
        self.items -= 1;
        self.digest = self.digest.wrapping_sub(contribution);
    }

    fn plus(self, other: Tally) -> Tally {
        Tally { items: self.items + other.items, digest: self.digest.wrapping_add(other.digest) }
    }
}

/// The meta keys of a container's [`Tally`].
fn items_key(container: Container) -> String {
    format!("items:{}", container.name())
}
fn digest_key(container: Container) -> String {
    format!("digest:{}", container.name())
}

/// Whether the store is opened to serve (every check) or to be repaired (`handler repair`,
/// `handler remove`: the rows and tallies are the repair's to put right, and an unfinished
/// repair is finished).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Opening {
    Serve,
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
        Ok(Row {
            container: container_named(path, &name)?,
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
            let (path, found) = (path.to_owned(), self.checksum());
            Err(StoreError::ChecksumMismatch {
                path,
                container: self.container,
                partition_key: self.partition_key,
                id: self.id,
                expected: sum,
                found,
            })
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
    /// What it was opened for: a repair's rows are the repair's to make whole.
    opening: Opening,
    /// The tallies of the rows read so far by [`Database::page`], for [`Database::check_loaded`].
    found: Mutex<Found>,
    _lock: File,
}

/// What makes a database file unusable as this store's: the cause of [`StoreError::Damaged`].
#[derive(Debug, thiserror::Error)]
pub enum Damage {
    /// SQLite refused to open, read or write it.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// `PRAGMA quick_check` found damage.
    #[error("PRAGMA quick_check: {verdict}")]
    FailedCheck {
        /// Its first finding.
        verdict: String,
    },
    /// The file refused WAL mode, which the store's durability relies on.
    #[error("the database refused WAL mode (it is in {mode} mode)")]
    NotWal {
        /// The mode it stayed in.
        mode: String,
    },
    /// The file is another application's.
    #[error("its application id is {application:#x}, not this store's")]
    OtherApplication {
        /// The id it holds.
        application: i32,
    },
    /// A row names a container the store does not have.
    #[error("an item names an unknown container {name:?}")]
    UnknownContainer {
        /// The name it holds.
        name: String,
    },
    /// A row written by a write the file does not record having numbered.
    #[error(
        "the item {id:?} of {} was written by write {seq}, after the last write the file records ({last_seq})",
        container.name()
    )]
    WrittenAfterLast {
        /// The row's container.
        container: Container,
        /// Its id.
        id: String,
        /// The write that wrote it.
        seq: u64,
        /// The last write the file records.
        last_seq: u64,
    },
}

/// [`StoreError::Damaged`]: `path` cannot be used, for `damage`.
fn damaged(path: &Path, damage: impl Into<Damage>) -> StoreError {
    StoreError::Damaged { path: path.to_owned(), damage: damage.into() }
}

/// Checks every page of the database (a damaged file is refused, not half loaded). What a row
/// holds is checked by its checksum, as it is read.
fn check(path: &Path, connection: &Connection) -> Result<(), StoreError> {
    let verdict: String =
        connection.query_row("PRAGMA quick_check(1)", [], |row| row.get(0)).map_err(|error| damaged(path, error))?;
    if verdict != "ok" {
        return Err(damaged(path, Damage::FailedCheck { verdict }));
    }
    Ok(())
}

/// Brings a database written by an earlier handler to [`SCHEMA_VERSION`], in place, in one
/// transaction: a crash leaves it as it was, and the next start upgrades it again. Before
/// version 1 items carried no checksum: each is given the checksum of what it holds now (the
/// file passed `quick_check` just before; what a row held before this start cannot be known).
/// Before version 2 nothing recorded how many items there were: the tallies are made from the
/// rows there now, for the same reason.
fn upgrade(path: &Path, connection: &mut Connection) -> Result<(), StoreError> {
    let failed = |error| damaged(path, error);
    let version: i64 = connection.query_row("PRAGMA user_version", [], |row| row.get(0)).map_err(failed)?;
    match version {
        SCHEMA_VERSION => return Ok(()),
        2 => return add_tags_container(path, connection),
        0 | 1 => {}
        newer => return Err(StoreError::NewerSchema { path: path.to_owned(), version: newer, known: SCHEMA_VERSION }),
    }
    let started = std::time::Instant::now();
    let transaction = connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(failed)?;
    if version == 0 {
        add_checksums(path, &transaction)?;
    }
    transaction.execute_batch(PARTITIONS).map_err(failed)?;
    transaction
        .execute("INSERT INTO meta (key, value) VALUES ('last_seq', 0) ON CONFLICT (key) DO NOTHING", [])
        .map_err(failed)?;
    let items = retally(path, &transaction)?;
    transaction.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}")).map_err(failed)?;
    transaction.commit().map_err(failed)?;
    tracing::info!(
        path = %path.display(),
        from = version,
        items,
        seconds = started.elapsed().as_secs_f64(),
        "the database was upgraded: each item carries a checksum, and each partition a count and digest of its items"
    );
    Ok(())
}

/// Version 2 to 3: the container `tags`, empty, given its tallies (zero), in one transaction.
/// The other containers' tallies stay as their commits recorded them: made again from the rows,
/// they would take in whatever was changed outside the handler before this start.
fn add_tags_container(path: &Path, connection: &mut Connection) -> Result<(), StoreError> {
    let failed = |error| damaged(path, error);
    let transaction = connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(failed)?;
    set_container_tally(&transaction, Container::Tags, Tally::default()).map_err(failed)?;
    transaction.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}")).map_err(failed)?;
    transaction.commit().map_err(failed)?;
    tracing::info!(path = %path.display(), from = 2, "the database was upgraded: it has the container tags");
    Ok(())
}

/// Version 0 to 1: each item given the checksum of what it holds.
fn add_checksums(path: &Path, transaction: &rusqlite::Transaction) -> Result<(), StoreError> {
    let failed = |error| damaged(path, error);
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
    let mut update =
        transaction.prepare("UPDATE items SET sum = ?4 WHERE container = ?1 AND pk = ?2 AND id = ?3").map_err(failed)?;
    for (container, partition_key, id, sum) in &sums {
        update.execute(params![container.name(), partition_key, id, sum]).map_err(failed)?;
    }
    Ok(())
}

/// Every partition's [`Tally`] of the rows `connection` holds now, by container and partition
/// key: one pass over the keys and checksums, not the documents.
fn tally_rows(path: &Path, connection: &Connection) -> Result<BTreeMap<(Container, String), Tally>, StoreError> {
    let failed = |error| damaged(path, error);
    let mut select = connection.prepare("SELECT container, pk, id, sum FROM items").map_err(failed)?;
    let mut rows = select.query([]).map_err(failed)?;
    let mut tallies: BTreeMap<(Container, String), Tally> = BTreeMap::new();
    while let Some(row) = rows.next().map_err(failed)? {
        let name: String = row.get(0).map_err(failed)?;
        let container = container_named(path, &name)?;
        let (partition_key, id, sum): (String, String, u32) =
            (row.get(1).map_err(failed)?, row.get(2).map_err(failed)?, row.get(3).map_err(failed)?);
        let contribution = checksum::contribution(container, &partition_key, &id, sum);
        tallies.entry((container, partition_key)).or_default().add(contribution);
    }
    Ok(tallies)
}

fn container_named(path: &Path, name: &str) -> Result<Container, StoreError> {
    Container::ALL
        .into_iter()
        .find(|container| container.name() == name)
        .ok_or_else(|| damaged(path, Damage::UnknownContainer { name: name.to_owned() }))
}

/// Records the tallies of the rows there now, in `transaction`: what an upgrade, an import and
/// a repair leave, each in the transaction that made the rows. Returns how many rows there are.
pub(crate) fn retally(path: &Path, transaction: &rusqlite::Transaction) -> Result<i64, StoreError> {
    let failed = |error| damaged(path, error);
    let tallies = tally_rows(path, transaction)?;
    // Made again if it was dropped: a repair puts back what the start refused for its absence.
    transaction.execute_batch(PARTITIONS).map_err(failed)?;
    transaction.execute("DELETE FROM partitions", []).map_err(failed)?;
    let mut totals: BTreeMap<Container, Tally> =
        Container::ALL.into_iter().map(|container| (container, Tally::default())).collect();
    {
        let mut insert = transaction
            .prepare("INSERT INTO partitions (container, pk, items, digest) VALUES (?1, ?2, ?3, ?4)")
            .map_err(failed)?;
        for ((container, partition_key), tally) in &tallies {
            insert.execute(params![container.name(), partition_key, tally.items, tally.digest as i64]).map_err(failed)?;
            let total = totals.get_mut(container).expect("every container");
            *total = total.plus(*tally);
        }
    }
    for (container, total) in &totals {
        set_container_tally(transaction, *container, *total).map_err(failed)?;
    }
    Ok(totals.values().map(|total| total.items).sum())
}

fn set_container_tally(connection: &Connection, container: Container, tally: Tally) -> rusqlite::Result<()> {
    let mut set = connection
        .prepare_cached("INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value")?;
    set.execute(params![items_key(container), tally.items])?;
    set.execute(params![digest_key(container), tally.digest as i64])?;
    Ok(())
}

/// A meta value, `None` if its row is not there.
fn meta(connection: &Connection, key: &str) -> rusqlite::Result<Option<i64>> {
    connection.query_row("SELECT value FROM meta WHERE key = ?1", [key], |row| row.get(0)).optional()
}

/// The tallies of the rows as the start reads them ([`Database::page`]), in key order: one
/// partition's rows come together, so a partition costs one key, not one per row. Counting
/// them on the read the start does anyway, rather than in a pass of its own, is what keeps the
/// check cheap: a pass over the keys and checksums took 0.37 s at 124,000 rows in a release
/// build, two thirds of the read itself; a CRC of each key on the rows read, 20 ms.
#[derive(Default)]
struct Found {
    tallies: BTreeMap<(Container, String), Tally>,
    current: Option<((Container, String), Tally)>,
}

impl Found {
    fn add(&mut self, row: &Row, sum: u32) {
        let contribution = checksum::contribution(row.container, &row.partition_key, &row.id, sum);
        match &mut self.current {
            Some(((container, partition_key), tally)) if *container == row.container && *partition_key == row.partition_key => {
                tally.add(contribution)
            }
            _ => {
                self.flush();
                let mut tally = Tally::default();
                tally.add(contribution);
                self.current = Some(((row.container, row.partition_key.clone()), tally));
            }
        }
    }

    fn flush(&mut self) {
        if let Some((key, tally)) = self.current.take() {
            let total = self.tallies.entry(key).or_default();
            *total = total.plus(tally);
        }
    }
}

/// What the tallies recorded and what the rows hold apart, in one partition (`partition_key`
/// `None`: in partitions whose record is gone with their items, seen in the container's total).
#[derive(Debug)]
pub struct Discrepancy {
    /// The container.
    pub container: Container,
    /// The partition, `None` for partitions whose record is gone too.
    pub partition_key: Option<String>,
    /// How many items the tallies recorded.
    pub recorded: i64,
    /// How many items are there.
    pub found: i64,
    /// What the items still there say is missing (a post's counts against its comments and
    /// likes, a post or a user that is gone), where they say it.
    pub missing: Vec<String>,
}

/// Why a data directory whose rows do not match their tallies is refused, and what to do.
#[derive(Debug)]
pub struct Incomplete {
    /// The database file.
    pub path: PathBuf,
    /// The meta records that are gone (the tallies and write number themselves deleted).
    pub meta_gone: Vec<String>,
    /// The partitions whose rows differ from their tallies, the first [`DISCREPANCIES_SHOWN`].
    pub discrepancies: Vec<Discrepancy>,
    /// How many partitions differ in all.
    pub partitions: usize,
}

/// How many differing partitions a refusal names.
const DISCREPANCIES_SHOWN: usize = 10;

impl std::fmt::Display for Incomplete {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.path.display();
        if !self.meta_gone.is_empty() {
            write!(
                out,
                "{path} lost its records of what it holds (meta: {} gone), which every database this handler \
                 made has from its creation: the file was changed outside the handler, so what it holds cannot be \
                 trusted to be whole.",
                self.meta_gone.join(", ")
            )?;
        } else {
            write!(
                out,
                "{path} does not hold what it recorded holding: items were deleted from it (or put in) outside the \
                 handler, by the sqlite3 shell, another program, or a damaged or older copy of the file. Where:"
            )?;
            let mut places = Vec::new();
            for discrepancy in &self.discrepancies {
                let container = discrepancy.container.name();
                let place = match &discrepancy.partition_key {
                    Some(partition_key) => format!("{container}, partition {partition_key:?}"),
                    None => format!("{container}, in partitions whose record was deleted too"),
                };
                let (recorded, found) = (discrepancy.recorded, discrepancy.found);
                let said = if found < recorded {
                    format!("{} of {recorded} items missing", recorded - found)
                } else if found > recorded {
                    format!("{} items more than the {recorded} written", found - recorded)
                } else {
                    format!("{found} items, but not the ones written (an item replaced outside the handler)")
                };
                let missing =
                    if discrepancy.missing.is_empty() { String::new() } else { format!(" ({})", discrepancy.missing.join("; ")) };
                places.push(format!("{place}: {said}{missing}"));
            }
            if self.partitions > self.discrepancies.len() {
                places.push(format!("and {} more", self.partitions - self.discrepancies.len()));
            }
            write!(out, " {}.", places.join("; "))?;
        }
        let dir = checksum::shell_quoted(&self.path.parent().unwrap_or(Path::new(".")).display().to_string());
        write!(
            out,
            " Restore the data directory from a backup; or, to go on with what is there, stop the blog and run \
             `BLOG_DATA_DIR={dir} handler repair`, which recounts each post's comments and likes, removes the \
             comments, likes and copies of posts that are gone and the reservations of users that are gone, \
             reserves every user's name again, rebuilds the copies, and then records what is there as whole"
        )
    }
}

impl std::error::Error for Incomplete {}

/// The containers' recorded [`Tally`]s, refused if `meta` lost them or the write number: the
/// database's creation records them (all zero), so a `meta` emptied is seen, before anything
/// is loaded.
fn check_meta(path: &Path, connection: &Connection) -> Result<BTreeMap<Container, Tally>, StoreError> {
    let failed = |error| damaged(path, error);
    let mut meta_gone = Vec::new();
    let mut totals = BTreeMap::new();
    for container in Container::ALL {
        let items = meta(connection, &items_key(container)).map_err(failed)?;
        let digest = meta(connection, &digest_key(container)).map_err(failed)?;
        match (items, digest) {
            (Some(items), Some(digest)) => drop(totals.insert(container, Tally { items, digest: digest as u64 })),
            _ => meta_gone.extend([items_key(container), digest_key(container)]),
        }
    }
    if meta(connection, "last_seq").map_err(failed)?.is_none() {
        meta_gone.push("last_seq".into());
    }
    if !meta_gone.is_empty() {
        return Err(StoreError::Incomplete(Box::new(Incomplete {
            path: path.to_owned(),
            meta_gone,
            discrepancies: Vec::new(),
            partitions: 0,
        })));
    }
    Ok(totals)
}

/// Compares every partition's rows (`found`, their tallies as the start read them) with its
/// recorded [`Tally`], and each container's recorded partitions with its total: refused, naming
/// what differs, unless all agree. A table emptied whole, or the tallies deleted with it, is
/// seen too.
fn compare_tallies(path: &Path, connection: &Connection, found: &BTreeMap<(Container, String), Tally>) -> Result<(), StoreError> {
    let failed = |error| damaged(path, error);
    let totals = check_meta(path, connection)?;
    let mut recorded: BTreeMap<(Container, String), Tally> = BTreeMap::new();
    {
        let mut select = connection.prepare("SELECT container, pk, items, digest FROM partitions").map_err(failed)?;
        let mut rows = select.query([]).map_err(failed)?;
        while let Some(row) = rows.next().map_err(failed)? {
            let name: String = row.get(0).map_err(failed)?;
            let digest: i64 = row.get(3).map_err(failed)?;
            let tally = Tally { items: row.get(2).map_err(failed)?, digest: digest as u64 };
            recorded.insert((container_named(path, &name)?, row.get(1).map_err(failed)?), tally);
        }
    }
    let mut differing: Vec<(Container, Option<String>, Tally, Tally)> = Vec::new();
    for key in recorded.keys().chain(found.keys()).collect::<std::collections::BTreeSet<_>>() {
        let (was, is) = (recorded.get(key).copied().unwrap_or_default(), found.get(key).copied().unwrap_or_default());
        if was != is {
            differing.push((key.0, Some(key.1.clone()), was, is));
        }
    }
    for (container, total) in &totals {
        let of_partitions =
            recorded.iter().filter(|((of, _), _)| of == container).fold(Tally::default(), |sum, (_, tally)| sum.plus(*tally));
        if of_partitions != *total {
            differing.push((*container, None, *total, of_partitions));
        }
    }
    if differing.is_empty() {
        return Ok(());
    }
    let partitions = differing.len();
    let discrepancies = differing
        .into_iter()
        .take(DISCREPANCIES_SHOWN)
        .map(|(container, partition_key, recorded, found)| {
            let missing = match &partition_key {
                Some(partition_key) if found.items < recorded.items => {
                    what_is_missing(path, connection, container, partition_key)?
                }
                _ => Vec::new(),
            };
            Ok(Discrepancy { container, partition_key, recorded: recorded.items, found: found.items, missing })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    Err(StoreError::Incomplete(Box::new(Incomplete { path: path.to_owned(), meta_gone: Vec::new(), discrepancies, partitions })))
}

/// What the items left in a partition that lost some say about those lost: in `posts`, the post
/// itself, or comments and likes its counts still count; in `users`, the user, or a username's
/// reservation (its own partition).
fn what_is_missing(
    path: &Path,
    connection: &Connection,
    container: Container,
    partition_key: &str,
) -> Result<Vec<String>, StoreError> {
    let failed = |error| damaged(path, error);
    let mut select = connection.prepare("SELECT id, doc FROM items WHERE container = ?1 AND pk = ?2").map_err(failed)?;
    let mut rows = select.query(params![container.name(), partition_key]).map_err(failed)?;
    let mut items: Vec<(String, serde_json::Value)> = Vec::new();
    while let Some(row) = rows.next().map_err(failed)? {
        let doc: String = row.get(1).map_err(failed)?;
        items.push((row.get(0).map_err(failed)?, serde_json::from_str(&doc).unwrap_or_default()));
    }
    let of_type = |kind: &str| items.iter().filter(|(_, doc)| doc["type"] == kind).count() as u64;
    let mut missing = Vec::new();
    match container {
        Container::Posts => {
            let post = items.iter().find(|(id, doc)| id == partition_key && doc["type"] == "post");
            let (comments, likes) = (of_type("comment"), of_type("like"));
            match post {
                None => missing
                    .push(format!("the post {partition_key:?} itself, whose comments ({comments}) and likes ({likes}) are left")),
                Some((_, post)) => {
                    for (field, kind, listed) in [("commentCount", "comment", comments), ("likeCount", "like", likes)] {
                        if let Some(counted) = post[field].as_u64().filter(|counted| *counted > listed) {
                            missing.push(format!("{kind}s: its {field} is {counted}, and {listed} are listed"));
                        }
                    }
                }
            }
        }
        Container::Users if partition_key.starts_with(crate::model::usernames::RESERVATION_ID_PREFIX) => {
            missing.push("a username's reservation, so another user could take that name".into());
        }
        Container::Users => {
            if !items.iter().any(|(id, doc)| id == partition_key && doc["type"] == "user") {
                missing.push(format!("the user {partition_key:?} itself"));
            }
        }
        Container::Feed | Container::Tags | Container::Leases => {}
    }
    Ok(missing)
}

impl Database {
    /// Opens (or creates) the database in `dir`, refusing a damaged one. Takes the directory's
    /// lock: one process per data directory.
    pub(crate) fn open(dir: &Path, opening: Opening) -> Result<(Database, Connection), StoreError> {
        let io = |error| StoreError::io(format!("cannot open the data directory {}", dir.display()), error);
        std::fs::create_dir_all(dir).map_err(io)?;
        let lock = OpenOptions::new().create(true).truncate(false).write(true).open(dir.join(LOCK)).map_err(io)?;
        lock.try_lock().map_err(|error| match error {
            std::fs::TryLockError::WouldBlock => StoreError::InUse { dir: dir.to_owned() },
            std::fs::TryLockError::Error(error) => {
                StoreError::io(format!("cannot lock the data directory {}", dir.display()), error)
            }
        })?;
        let path = dir.join(FILE);
        let mut connection = Self::connect(&path).map_err(|error| damaged(&path, error))?;
        check(&path, &connection)?;
        upgrade(&path, &mut connection)?;
        connection.execute_batch(EXPIRING).map_err(|error| damaged(&path, error))?;
        if opening == Opening::Serve {
            if meta(&connection, REPAIR_PENDING).map_err(|error| damaged(&path, error))?.is_some() {
                return Err(StoreError::RepairUnfinished { path, dir: dir.to_owned() });
            }
            check_meta(&path, &connection)?;
        }
        if opening == Opening::Repair {
            // The write number deleted with the rest of `meta`: the last write any row holds, so
            // that the rows are not refused as written after it (a change-feed position beyond
            // it is still refused, with what to do).
            connection
                .execute(
                    "INSERT INTO meta (key, value) SELECT 'last_seq', coalesce(max(seq), 0) FROM items WHERE true
                     ON CONFLICT (key) DO NOTHING",
                    [],
                )
                .map_err(|error| damaged(&path, error))?;
        }
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
            opening,
            found: Mutex::new(Found::default()),
            _lock: lock,
        };
        Ok((database, connection))
    }

    fn connect(path: &Path) -> Result<Connection, Damage> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection = Connection::open_with_flags(path, flags)?;
        let mode: String = connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Damage::NotWal { mode });
        }
        connection.execute_batch("PRAGMA synchronous = FULL")?;
        let application: i32 = connection.query_row("PRAGMA application_id", [], |row| row.get(0))?;
        let tables: i64 = connection.query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))?;
        if application != APPLICATION_ID && (application != 0 || tables != 0) {
            return Err(Damage::OtherApplication { application });
        }
        if tables == 0 {
            // A new file: its id, schema and version in one transaction, so that a crash leaves
            // a file that is new again, never one half made.
            // Its tallies too, all zero: a database without them was changed outside the handler.
            let tallies: String = Container::ALL
                .into_iter()
                .map(|container| {
                    format!("INSERT INTO meta VALUES ('{}', 0), ('{}', 0);", items_key(container), digest_key(container))
                })
                .collect();
            connection.execute_batch(&format!(
                "BEGIN IMMEDIATE; PRAGMA application_id = {APPLICATION_ID}; {SCHEMA} {PARTITIONS} \
                 INSERT INTO meta VALUES ('last_seq', 0); {tallies} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
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
            self.found.lock().expect("never poisoned").add(&row, sum);
            if row.seq > last_seq {
                let damage = Damage::WrittenAfterLast { container: row.container, id: row.id, seq: row.seq, last_seq };
                return Err(damaged(&self.path, damage));
            }
            page.push(row);
        }
        Ok(page)
    }

    /// Compares the tallies of every row the start read ([`Database::page`], which must have read
    /// them all, as the load does) with those recorded: refused, naming what is missing, unless
    /// they agree. Not for a repair, whose rows it makes whole itself.
    pub(crate) fn check_loaded(&self, connection: &Connection) -> Result<(), StoreError> {
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

    /// Removes the mark of an unfinished repair ([`REPAIR_PENDING`]), on the reader's connection:
    /// the writer has nothing queued when a repair ends.
    pub(crate) fn finish_repair(&self) -> rusqlite::Result<()> {
        let reader = self.reader.lock().expect("never poisoned");
        reader.busy_timeout(std::time::Duration::from_secs(10))?;
        reader.execute("DELETE FROM meta WHERE key = ?1", [REPAIR_PENDING]).map(drop)
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

    /// Commits the group in one transaction; on failure nothing of it is left. The tallies of the
    /// partitions and containers it touched are moved in the same transaction: each row's old
    /// checksum is read before it is replaced or deleted (a point read of a page the write itself
    /// then changes), and each partition's tally is written once per group.
    fn commit(&mut self, writes: &[Write]) -> rusqlite::Result<()> {
        let transaction = self.connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        {
            let mut before = transaction.prepare_cached("SELECT sum FROM items WHERE container = ?1 AND pk = ?2 AND id = ?3")?;
            let mut upsert = transaction.prepare_cached(
                "INSERT INTO items (container, pk, id, doc, seq, expires, sum) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (container, pk, id) DO UPDATE SET doc = excluded.doc, seq = excluded.seq,
                 expires = excluded.expires, sum = excluded.sum",
            )?;
            let mut delete = transaction.prepare_cached("DELETE FROM items WHERE container = ?1 AND pk = ?2 AND id = ?3")?;
            let mut moved: HashMap<(Container, &str), Tally> = HashMap::new();
            for write in writes {
                for record in &write.records {
                    let key = (write.container, write.partition_key.as_str(), record.id.as_str());
                    let tally = moved.entry((key.0, key.1)).or_default();
                    let old: Option<u32> = before.query_row(params![key.0.name(), key.1, key.2], |row| row.get(0)).optional()?;
                    if let Some(old) = old {
                        tally.remove(checksum::contribution(key.0, key.1, key.2, old));
                    }
                    match &record.doc {
                        Some(doc) => {
                            let sum = checksum::of_row(key.0, key.1, key.2, doc, write.seq, record.expires);
                            upsert.execute(params![key.0.name(), key.1, key.2, doc, write.seq, record.expires, sum])?;
                            tally.add(checksum::contribution(key.0, key.1, key.2, sum));
                        }
                        None => drop(delete.execute(params![key.0.name(), key.1, key.2])?),
                    }
                }
            }
            move_tallies(&transaction, &moved)?;
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

/// Adds what a group `moved` to the tallies of its partitions and their containers. A partition
/// left with no item loses its row, so the table holds one row per partition in use.
fn move_tallies(connection: &Connection, moved: &HashMap<(Container, &str), Tally>) -> rusqlite::Result<()> {
    let mut read = connection.prepare_cached("SELECT items, digest FROM partitions WHERE container = ?1 AND pk = ?2")?;
    let mut write = connection.prepare_cached(
        "INSERT INTO partitions (container, pk, items, digest) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (container, pk) DO UPDATE SET items = excluded.items, digest = excluded.digest",
    )?;
    let mut clear = connection.prepare_cached("DELETE FROM partitions WHERE container = ?1 AND pk = ?2")?;
    let mut containers: HashMap<Container, Tally> = HashMap::new();
    for ((container, partition_key), change) in moved {
        if *change == Tally::default() {
            continue;
        }
        let was = read
            .query_row(params![container.name(), partition_key], |row| {
                Ok(Tally { items: row.get(0)?, digest: row.get::<_, i64>(1)? as u64 })
            })
            .optional()?
            .unwrap_or_default();
        let now = was.plus(*change);
        if now == Tally::default() {
            clear.execute(params![container.name(), partition_key])?;
        } else {
            write.execute(params![container.name(), partition_key, now.items, now.digest as i64])?;
        }
        let total = containers.entry(*container).or_default();
        *total = total.plus(*change);
    }
    for (container, change) in containers {
        let items = meta(connection, &items_key(container))?.unwrap_or(0);
        let digest = meta(connection, &digest_key(container))?.unwrap_or(0);
        set_container_tally(connection, container, Tally { items, digest: digest as u64 }.plus(change))?;
    }
    Ok(())
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
    let transaction = connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(failed)?;
    {
        let mut insert = transaction
            .prepare(
                "INSERT OR REPLACE INTO items (container, pk, id, doc, seq, expires, sum) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .map_err(failed)?;
        for row in rows {
            insert
                .execute(params![row.container.name(), row.partition_key, row.id, row.doc, row.seq, row.expires, row.checksum()])
                .map_err(failed)?;
        }
        let mut meta = transaction.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)").map_err(failed)?;
        meta.execute(params!["last_seq", last_seq]).map_err(failed)?;
        meta.execute(params![marker, 1]).map_err(failed)?;
    }
    retally(path, &transaction)?;
    transaction.commit().map_err(failed)
}

/// Whether `marker` was recorded by [`import`].
pub(crate) fn has_marker(connection: &Connection, marker: &str) -> rusqlite::Result<bool> {
    connection.query_row("SELECT count(*) FROM meta WHERE key = ?1", [marker], |row| row.get::<_, i64>(0)).map(|count| count > 0)
}

/// Whether the database holds any item or write.
pub(crate) fn is_empty(connection: &Connection) -> rusqlite::Result<bool> {
    let items: i64 = connection.query_row("SELECT count(*) FROM (SELECT 1 FROM items LIMIT 1)", [], |row| row.get(0))?;
    Ok(items == 0 && meta(connection, "last_seq")?.unwrap_or(0) == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The start's check: every row read, then compared.
    fn check_tallies(database: &Database, connection: &Connection) -> Result<(), StoreError> {
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
        let doc = |kind: &str| format!(r#"{{"type":"{kind}","postId":"p{post}","content":"{}"}}"#, "x".repeat(600));
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
        let transaction = connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        {
            let mut upsert = transaction.prepare_cached(
                "INSERT INTO items (container, pk, id, doc, seq, expires, sum) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (container, pk, id) DO UPDATE SET doc = excluded.doc, seq = excluded.seq,
                 expires = excluded.expires, sum = excluded.sum",
            )?;
            for write in writes {
                for record in &write.records {
                    let doc = record.doc.as_deref().expect("upserts only");
                    let sum = checksum::of_row(write.container, &write.partition_key, &record.id, doc, write.seq, None);
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
                .prepare_cached("INSERT INTO meta (key, value) VALUES ('last_seq', ?1) ON CONFLICT (key) DO UPDATE SET value = excluded.value")?
                .execute([last])?;
        }
        transaction.commit()
    }

    #[test]
    fn the_tallies_follow_every_write_and_the_start_checks_them() {
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
        let recorded: i64 =
            writer.connection.query_row("SELECT items FROM partitions WHERE pk = 'p1'", [], |row| row.get(0)).unwrap();
        assert_eq!(recorded, 2, "p1 holds its post and c2");
        writer.commit(&[delete(next(), "c2"), delete(next(), "p1")]).unwrap();
        let partitions: i64 = writer.connection.query_row("SELECT count(*) FROM partitions", [], |row| row.get(0)).unwrap();
        assert_eq!(partitions, 1, "a partition left empty has no tally");
        check_tallies(&database, &writer.connection).unwrap();
        writer.connection.execute("DELETE FROM items WHERE id = 'c3'", []).unwrap();
        let Err(StoreError::Incomplete(incomplete)) = check_tallies(&database, &writer.connection) else {
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
        let first_page = |database: &Database, writer: &Writer| database.page(&writer.connection, None, 10).err();
        *database.last_seq.lock().unwrap() = 0;
        let Some(StoreError::Damaged { path, damage: Damage::WrittenAfterLast { container, id, seq, last_seq } }) =
            first_page(&database, &writer)
        else {
            panic!("a row after the last write is refused")
        };
        assert_eq!((path, container, id.as_str(), seq, last_seq), (database.path().to_owned(), Container::Posts, "c1", 1, 0));
        *database.last_seq.lock().unwrap() = 1;
        writer.connection.execute("UPDATE items SET doc = replace(doc, 'xxx', 'xxy') WHERE id = 'c1'", []).unwrap();
        let Some(StoreError::ChecksumMismatch { container, partition_key, id, expected, found, .. }) =
            first_page(&database, &writer)
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

    /// Each refusal of the file at opening is its own variant, with what it found: the lock
    /// another process holds, a newer schema, an unfinished repair, another application's file,
    /// a file that is no database.
    #[test]
    fn a_database_that_cannot_be_opened_is_refused_as_what_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let (database, writer) = writer(dir.path());
        let in_use = Database::open(dir.path(), Opening::Serve).err();
        assert!(matches!(&in_use, Some(StoreError::InUse { dir: held }) if held == dir.path()), "{in_use:?}");
        drop((database, writer));
        let reopened = |sql: &str| {
            let connection = Connection::open(&path).unwrap();
            connection.execute_batch(sql).unwrap();
            drop(connection);
            Database::open(dir.path(), Opening::Serve).err()
        };
        let unfinished = reopened("INSERT INTO meta (key, value) VALUES ('repair_pending', 1)");
        assert!(
            matches!(&unfinished, Some(StoreError::RepairUnfinished { path: file, dir: held }) if *file == path && held == dir.path()),
            "{unfinished:?}"
        );
        let newer = reopened("DELETE FROM meta WHERE key = 'repair_pending'; PRAGMA user_version = 7");
        assert!(matches!(newer, Some(StoreError::NewerSchema { version: 7, known: SCHEMA_VERSION, .. })), "{newer:?}");
        let other = reopened("PRAGMA user_version = 2; PRAGMA application_id = 5");
        assert!(
            matches!(other, Some(StoreError::Damaged { damage: Damage::OtherApplication { application: 5 }, .. })),
            "{other:?}"
        );
        for leftover in ["sqlite-wal", "sqlite-shm"] {
            std::fs::remove_file(path.with_extension(leftover)).ok();
        }
        std::fs::write(&path, vec![b'x'; 8192]).unwrap();
        let garbage = Database::open(dir.path(), Opening::Serve).err();
        let Some(StoreError::Damaged { path: named, damage: Damage::Sqlite(_) }) = &garbage else {
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
        for (group_size, rounds) in [(1, 400), (16, 200), (256, 40)] {
            let (mut with, mut without) = (Vec::new(), Vec::new());
            for round in 0..rounds {
                let group: Vec<Write> = (0..group_size)
                    .map(|_| {
                        seq += 1;
                        comments += 1;
                        comment(seq, comments % posts, comments)
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
        // The start: the check, against reading every row (verified) as the load does.
        writer.connection.execute_batch("BEGIN; DELETE FROM items; DELETE FROM partitions; COMMIT;").unwrap();
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
        let count: i64 = writer.connection.query_row("SELECT count(*) FROM items", [], |row| row.get(0)).unwrap();
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
}
