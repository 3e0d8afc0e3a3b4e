//! The database file as it lies on disk. That is the schema a new file is made with, its
//! version and the upgrade of an older one in place, and a row as read back and the checksum it
//! must match. It is also [`Damage`], what makes a file unusable as this store's. What a file
//! holds is decided here alone, so that a change of format is one module's.

use std::path::Path;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use super::super::checksum;
use super::Database;
use crate::cosmos::{Container, OpenError, StoreError};

/// Marks the file as this store's (`PRAGMA application_id`), so that another SQLite file put
/// in its place is refused instead of written to.
const APPLICATION_ID: i32 = 0x424c_4f47;

/// The schema a new database is created with: each item once, with the [`checksum`] of its
/// row (`sum`), and the store's numbers (the last write's, the import's marker).
pub(super) const SCHEMA: &str = "
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
/// in the database only (`embedded::mod`). An index beside the schema, not part of it. It is
/// made at any start where it is missing (a file written before it, in a moment). A handler
/// that does not know it keeps it up to date as SQLite keeps any index.
pub(super) const EXPIRING: &str =
    "CREATE INDEX IF NOT EXISTS items_expiring ON items (expires) WHERE expires IS NOT NULL;";

/// The tallies' table, kept by every commit ([`Tally`]): one row per partition that holds items.
pub(super) const PARTITIONS: &str = "
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
/// before the container `words`, 4 since (upgraded in place at the first start, see
/// [`upgrade`]).
pub(super) const SCHEMA_VERSION: i64 = 4;
/// The meta key of an import that writes ([`crate::cosmos::error::ImportMark`], as JSON): recorded
/// before its first write, removed once it has made the copies; a start to serve refuses while it
/// is there, and only an import opens the store then.
pub(crate) const IMPORT_PENDING: &str = "import_pending";
/// The meta key of an unfinished repair ([`super::super::repair`]): recorded with the repair of the
/// rows, removed once the names and copies are made again; a start refuses while it is there.
pub(crate) const REPAIR_PENDING: &str = "repair_pending";

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
    pub(super) fn read(path: &Path, row: &rusqlite::Row) -> Result<Row, StoreError> {
        let failed = |source| unreadable_row(path, row, source);
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
    pub(super) fn checksum(&self) -> u32 {
        checksum::of_row(
            self.container,
            &self.partition_key,
            &self.id,
            &self.doc,
            self.seq,
            self.expires,
        )
    }

    /// The row, if it matches `sum`, the checksum stored with it; refused, naming it, if not.
    pub(super) fn verified(self, path: &Path, sum: u32) -> Result<Row, StoreError> {
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
    #[error("a row names an unknown container {name:?}")]
    UnknownContainer {
        /// The name it holds.
        name: String,
    },
    /// A row of `items` whose columns are not of the types the store writes (a text where a
    /// number belongs, a blob, a negative write number), named by its key as far as it reads.
    #[error("the row {key} of items is not what the store writes (a column of the wrong type)")]
    UnreadableRow {
        /// Its container, partition key and id, as far as they read.
        key: String,
        /// What SQLite could not convert (boxed: every result of a store call carries this
        /// enum's size).
        #[source]
        source: Box<rusqlite::Error>,
    },
    /// One of the store's own records (a `meta` value, a partition's tally) of the wrong type.
    #[error("{record} is not what the store writes (a value of the wrong type)")]
    UnreadableRecord {
        /// Which record.
        record: String,
        /// What SQLite could not convert (boxed: every result of a store call carries this
        /// enum's size).
        #[source]
        source: Box<rusqlite::Error>,
    },
    /// A damaged file of which not one item can be read: nothing to salvage.
    #[error("not one item in it can be read")]
    NothingReadable,
    /// A file that carries this store's id or schema version but holds no table. The store
    /// never leaves that: it makes both in one transaction. A recovery that recovered nothing
    /// leaves it (`sqlite3`'s `.recover` without the `sqlite_dbpage` table it needs).
    #[error(
        "it carries this store's marks (application id {application:#x}, schema version {version}) but holds no table"
    )]
    Emptied {
        /// Its application id.
        application: i32,
        /// Its schema version.
        version: i64,
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

impl Damage {
    /// Whether the file itself is sound and what is wrong is in what its rows and records hold.
    /// That is what `handler repair` puts right (removing the rows it cannot read, numbering
    /// the writes after the last row's). Otherwise the file is what is damaged.
    pub(crate) fn is_in_the_rows(&self) -> bool {
        matches!(
            self,
            Damage::UnknownContainer { .. }
                | Damage::WrittenAfterLast { .. }
                | Damage::UnreadableRow { .. }
                | Damage::UnreadableRecord { .. }
        )
    }

    /// Whether SQLite found the file damaged, which `handler repair` meets by copying what can
    /// still be read into a new file ([`super::super::salvage`]). Not a file that is another
    /// application's, or that SQLite cannot read as a database at all: nothing in it is this
    /// store's to copy.
    pub(crate) fn is_salvageable(&self) -> bool {
        match self {
            Damage::FailedCheck { .. } => true,
            Damage::Sqlite(error) => {
                error.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseCorrupt)
            }
            _ => false,
        }
    }
}

/// [`StoreError::Damaged`]: `path` cannot be used, for `damage`.
pub(super) fn damaged(path: &Path, damage: impl Into<Damage>) -> StoreError {
    StoreError::Damaged { path: path.to_owned(), damage: damage.into() }
}

/// Whether SQLite read a value but it is not of the type the store writes there: what a row or
/// record changed outside the handler holds, not a damaged file.
fn is_wrong_type(error: &rusqlite::Error) -> bool {
    matches!(
        error,
        rusqlite::Error::FromSqlConversionFailure(..)
            | rusqlite::Error::InvalidColumnType(..)
            | rusqlite::Error::IntegralValueOutOfRange(..)
    )
}

/// The refusal of `row` of `items`, which `source` could not read: a row of the wrong types,
/// named by its key, or a damaged file.
pub(super) fn unreadable_row(
    path: &Path,
    row: &rusqlite::Row,
    source: rusqlite::Error,
) -> StoreError {
    if !is_wrong_type(&source) {
        return damaged(path, source);
    }
    damaged(path, Damage::UnreadableRow { key: key_of(row), source: Box::new(source) })
}

/// The key of a row of `items` (its first three columns), as far as it reads as text:
/// `("posts", "p1", "c1")`.
pub(super) fn key_of(row: &rusqlite::Row) -> String {
    let key: Vec<String> = (0..3)
        .map(|column| match row.get_ref(column) {
            Ok(rusqlite::types::ValueRef::Text(text)) => {
                format!("{:?}", String::from_utf8_lossy(text))
            }
            Ok(value) => format!("({})", value.data_type()),
            Err(_) => "?".to_owned(),
        })
        .collect();
    format!("({})", key.join(", "))
}

/// Removes, in `transaction`, every row of `items` that does not read as an item (a column of
/// the wrong type, an unknown container): what a repair cannot keep, since nothing can tell
/// what it held. Answers their keys, as far as they read ([`key_of`]).
pub(crate) fn remove_unreadable(
    path: &Path,
    transaction: &Connection,
) -> Result<Vec<String>, StoreError> {
    use rusqlite::types::Value;
    let failed = |error| damaged(path, error);
    let mut unreadable: Vec<(String, [Value; 3])> = Vec::new();
    {
        let mut select = transaction
            .prepare("SELECT container, pk, id, doc, seq, expires, sum FROM items")
            .map_err(failed)?;
        let mut rows = select.query([]).map_err(failed)?;
        while let Some(row) = rows.next().map_err(failed)? {
            if Row::read(path, row).is_err() || row.get::<_, u32>(6).is_err() {
                let key = [
                    row.get(0).map_err(failed)?,
                    row.get(1).map_err(failed)?,
                    row.get(2).map_err(failed)?,
                ];
                unreadable.push((key_of(row), key));
            }
        }
    }
    let mut delete = transaction
        .prepare("DELETE FROM items WHERE container IS ?1 AND pk IS ?2 AND id IS ?3")
        .map_err(failed)?;
    for (_, key) in &unreadable {
        delete.execute(rusqlite::params_from_iter(key)).map_err(failed)?;
    }
    Ok(unreadable.into_iter().map(|(described, _)| described).collect())
}

/// How a failed read of the store's record `record` refuses the file: a record of the wrong
/// type, or a damaged file.
pub(super) fn unreadable_record(
    path: &Path,
    record: &str,
) -> impl Fn(rusqlite::Error) -> StoreError {
    move |source| {
        if is_wrong_type(&source) {
            damaged(
                path,
                Damage::UnreadableRecord { record: record.to_owned(), source: Box::new(source) },
            )
        } else {
            damaged(path, source)
        }
    }
}

/// Checks every page of the database (a damaged file is refused, not half loaded). What a row
/// holds is checked by its checksum, as it is read.
pub(super) fn check(path: &Path, connection: &Connection) -> Result<(), OpenError> {
    let verdict: String = connection
        .query_row("PRAGMA quick_check(1)", [], |row| row.get(0))
        .map_err(|error| damaged(path, error))?;
    if verdict != "ok" {
        return Err(damaged(path, Damage::FailedCheck { verdict }).into());
    }
    Ok(())
}

pub(super) fn container_named(path: &Path, name: &str) -> Result<Container, StoreError> {
    Container::ALL
        .into_iter()
        .find(|container| container.name() == name)
        .ok_or_else(|| damaged(path, Damage::UnknownContainer { name: name.to_owned() }))
}

/// The meta keys of a container's tally (`tally::Tally`): how many items, and their digest.
pub(super) fn items_key(container: Container) -> String {
    format!("items:{}", container.name())
}
pub(super) fn digest_key(container: Container) -> String {
    format!("digest:{}", container.name())
}

/// A meta value, `None` if its row is not there.
pub(super) fn meta(connection: &Connection, key: &str) -> rusqlite::Result<Option<i64>> {
    connection
        .query_row("SELECT value FROM meta WHERE key = ?1", [key], |row| row.get(0))
        .optional()
}

impl Database {
    pub(super) fn connect(path: &Path) -> Result<Connection, Damage> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection = Connection::open_with_flags(path, flags)?;
        let mode: String =
            connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Damage::NotWal { mode });
        }
        connection.execute_batch("PRAGMA synchronous = FULL")?;
        let application: i32 =
            connection.query_row("PRAGMA application_id", [], |row| row.get(0))?;
        let tables: i64 =
            connection.query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))?;
        if application != APPLICATION_ID && (application != 0 || tables != 0) {
            return Err(Damage::OtherApplication { application });
        }
        let version: i64 = connection.query_row("PRAGMA user_version", [], |row| row.get(0))?;
        if tables == 0 && (application != 0 || version != 0) {
            return Err(Damage::Emptied { application, version });
        }
        if tables == 0 {
            // A new file: its id, schema and version in one transaction, so that a crash leaves
            // a file that is new again, never one half made.
            // Its tallies too, all zero: a database without them was changed outside the handler.
            let tallies: String = Container::ALL
                .into_iter()
                .map(|container| {
                    format!(
                        "INSERT INTO meta VALUES ('{}', 0), ('{}', 0);",
                        items_key(container),
                        digest_key(container)
                    )
                })
                .collect();
            connection.execute_batch(&format!(
                "BEGIN IMMEDIATE; PRAGMA application_id = {APPLICATION_ID}; {SCHEMA} {PARTITIONS} \
                 INSERT INTO meta VALUES ('last_seq', 0); {tallies} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
            ))?;
        }
        Ok(connection)
    }
}
